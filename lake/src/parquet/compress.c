/*
 * compress.c: Parquet page compression through the system libraries:
 * snappy, zlib (GZIP), libbrotlidec (BROTLI, read only), liblz4 (LZ4_RAW,
 * and the deprecated Hadoop-framed LZ4, read only) and libzstd.
 *
 * Decompression always targets the exact size the page header announces:
 * output that would be longer or shorter is TL_ERR_CORRUPT, so a hostile
 * page cannot make us allocate or write more than its header (which the
 * caller has bounded) says.
 */
#include <brotli/decode.h>
#include <limits.h>
#include <lz4.h>
#include <lz4hc.h>
#include <snappy-c.h>
#include <stdbool.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "parquet/compress.h"

#define GZIP_DEFAULT_LEVEL 6
#define ZSTD_DEFAULT_LEVEL 1 /* Arrow's default: most of the ratio at a fraction of the cost */
/* Parquet stores page sizes in an int32; nothing larger is a real page. */
#define PAGE_LIMIT ((size_t)INT32_MAX)

static const char *codec_label(tl_pq_codec codec)
{
	switch (codec) {
	case TL_PQ_UNCOMPRESSED: return "UNCOMPRESSED";
	case TL_PQ_SNAPPY: return "SNAPPY";
	case TL_PQ_GZIP: return "GZIP";
	case TL_PQ_LZO: return "LZO";
	case TL_PQ_BROTLI: return "BROTLI";
	case TL_PQ_LZ4: return "LZ4";
	case TL_PQ_ZSTD: return "ZSTD";
	case TL_PQ_LZ4_RAW: return "LZ4_RAW";
	}
	return "unknown";
}

int pq_codec_can_write(tl_pq_codec codec)
{
	switch (codec) {
	case TL_PQ_UNCOMPRESSED:
	case TL_PQ_SNAPPY:
	case TL_PQ_GZIP:
	case TL_PQ_ZSTD:
	case TL_PQ_LZ4_RAW:
		return 1;
	default:
		return 0;
	}
}

/*
 * One (de)compression context per thread, kept for the thread's life:
 * creating a zstd context costs more than compressing a small page.
 */
static _Thread_local ZSTD_CCtx *zstd_cctx;
static _Thread_local ZSTD_DCtx *zstd_dctx;

/* ---------------------------------------------------------- compression */

static int gzip_compress(int level, const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: gzip framing, which parquet-mr and Arrow write. */
	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return tl_error_set(err, TL_ERR_NOMEM, "GZIP: cannot initialise the compressor");
	size_t cap = deflateBound(&zs, (uLong)len);
	if (tl_buf_reserve(out, cap) < 0) {
		deflateEnd(&zs);
		return tl_error_nomem(err, "for a GZIP page");
	}
	zs.next_in = (Bytef *)(uintptr_t)src;
	zs.avail_in = (uInt)len;
	zs.next_out = out->data + out->len;
	zs.avail_out = (uInt)cap;
	int rc = deflate(&zs, Z_FINISH);
	size_t produced = cap - zs.avail_out;
	deflateEnd(&zs);
	if (rc != Z_STREAM_END)
		return tl_error_set(err, TL_ERR_INVALID, "GZIP: compression failed (zlib status %d)", rc);
	out->len += produced;
	return 0;
}

static int zstd_compress(int level, const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	if (zstd_cctx == NULL && (zstd_cctx = ZSTD_createCCtx()) == NULL)
		return tl_error_set(err, TL_ERR_NOMEM, "ZSTD: cannot create a compression context");
	size_t cap = ZSTD_compressBound(len);
	if (tl_buf_reserve(out, cap) < 0)
		return tl_error_nomem(err, "for a ZSTD page");
	size_t n = ZSTD_compressCCtx(zstd_cctx, out->data + out->len, cap, src, len, level);
	if (ZSTD_isError(n))
		return tl_error_set(err, TL_ERR_INVALID, "ZSTD: compression failed: %s", ZSTD_getErrorName(n));
	out->len += n;
	return 0;
}

static int lz4_raw_compress(int level, const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	int cap = LZ4_compressBound((int)len);
	if (tl_buf_reserve(out, (size_t)cap) < 0)
		return tl_error_nomem(err, "for an LZ4_RAW page");
	char *dst = (char *)out->data + out->len;
	int n = level > 0 ? LZ4_compress_HC((const char *)src, dst, (int)len, cap, level)
	                  : LZ4_compress_default((const char *)src, dst, (int)len, cap);
	if (n <= 0)
		return tl_error_set(err, TL_ERR_INVALID, "LZ4_RAW: compression failed");
	out->len += (size_t)n;
	return 0;
}

int pq_compress(tl_pq_codec codec, int level, const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	static const uint8_t empty[1];
	if (src == NULL)
		src = empty; /* the libraries may not take NULL, even for 0 bytes */
	if (len > PAGE_LIMIT || (codec == TL_PQ_LZ4_RAW && len > LZ4_MAX_INPUT_SIZE))
		return tl_error_set(err, TL_ERR_INVALID, "%s: a page of %zu bytes exceeds Parquet's 2 GiB page limit",
		                    codec_label(codec), len);

	switch (codec) {
	case TL_PQ_UNCOMPRESSED:
		tl_buf_append(out, src, len);
		return tl_buf_check(out, err, "for a page");
	case TL_PQ_SNAPPY: {
		size_t cap = snappy_max_compressed_length(len);
		if (tl_buf_reserve(out, cap) < 0)
			return tl_error_nomem(err, "for a SNAPPY page");
		size_t n = cap;
		if (snappy_compress((const char *)src, len, (char *)out->data + out->len, &n) != SNAPPY_OK)
			return tl_error_set(err, TL_ERR_INVALID, "SNAPPY: compression failed");
		out->len += n;
		return 0;
	}
	case TL_PQ_GZIP:
		if (level == 0)
			level = GZIP_DEFAULT_LEVEL;
		if (level < 1 || level > 9)
			return tl_error_set(err, TL_ERR_INVALID, "GZIP: compression level %d is outside 1..9", level);
		return gzip_compress(level, src, len, out, err);
	case TL_PQ_ZSTD:
		if (level == 0)
			level = ZSTD_DEFAULT_LEVEL;
		if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
			return tl_error_set(err, TL_ERR_INVALID, "ZSTD: compression level %d is outside %d..%d", level,
			                    ZSTD_minCLevel(), ZSTD_maxCLevel());
		return zstd_compress(level, src, len, out, err);
	case TL_PQ_LZ4_RAW:
		if (level < 0 || level > LZ4HC_CLEVEL_MAX)
			return tl_error_set(err, TL_ERR_INVALID, "LZ4_RAW: compression level %d is outside 0..%d", level,
			                    LZ4HC_CLEVEL_MAX);
		return lz4_raw_compress(level, src, len, out, err);
	case TL_PQ_LZO:
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "LZO compression is not supported (no reader or writer "
		                                             "implements it interoperably); use ZSTD");
	case TL_PQ_BROTLI:
	case TL_PQ_LZ4:
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s can be read but not written; use ZSTD or LZ4_RAW",
		                    codec_label(codec));
	}
	return tl_error_set(err, TL_ERR_INVALID, "unknown compression codec %d", (int)codec);
}

/* -------------------------------------------------------- decompression */

static int size_mismatch(tl_error *err, tl_pq_codec codec, size_t got, size_t expected)
{
	return tl_error_set(err, TL_ERR_CORRUPT,
	                    "%s: page decompresses to %zu bytes but its header says %zu", codec_label(codec), got,
	                    expected);
}

/* Accepts gzip or zlib framing, and concatenated gzip members. */
static int gzip_decompress(const uint8_t *src, size_t len, uint8_t *dst, size_t dst_len, tl_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 32: detect gzip or zlib headers. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return tl_error_set(err, TL_ERR_NOMEM, "GZIP: cannot initialise the decompressor");
	zs.next_in = (Bytef *)(uintptr_t)src;
	zs.avail_in = (uInt)len;
	zs.next_out = dst;
	zs.avail_out = (uInt)dst_len;
	int result = 0;
	for (;;) {
		int rc = inflate(&zs, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			if (zs.avail_in == 0)
				break;
			/* Another member follows; anything else fails its header check. */
			if (inflateReset(&zs) != Z_OK) {
				result = tl_error_set(err, TL_ERR_CORRUPT, "GZIP: cannot continue after a gzip member");
				break;
			}
		} else if (rc == Z_OK) {
			continue;
		} else if (rc == Z_BUF_ERROR) {
			result = zs.avail_out == 0
			             ? tl_error_set(err, TL_ERR_CORRUPT,
			                            "GZIP: page decompresses to more than the %zu bytes its header says",
			                            dst_len)
			             : tl_error_set(err, TL_ERR_CORRUPT, "GZIP: compressed data is truncated");
			break;
		} else {
			result = tl_error_set(err, TL_ERR_CORRUPT, "GZIP: invalid compressed data: %s",
			                      zs.msg ? zs.msg : "zlib error");
			break;
		}
	}
	size_t produced = dst_len - zs.avail_out;
	inflateEnd(&zs);
	if (result == 0 && produced != dst_len)
		return size_mismatch(err, TL_PQ_GZIP, produced, dst_len);
	return result;
}

static uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/*
 * Hadoop's framing: repeated [u32 BE uncompressed size][u32 BE compressed
 * size][raw LZ4 block]. Returns true only if the whole input parses that
 * way and fills dst exactly.
 */
static bool lz4_hadoop_decompress(const uint8_t *src, size_t len, uint8_t *dst, size_t dst_len)
{
	size_t produced = 0;
	while (len >= 8) {
		uint32_t raw = load_be32(src), packed = load_be32(src + 4);
		src += 8;
		len -= 8;
		if (packed > len || raw > dst_len - produced || packed > INT_MAX || raw > INT_MAX)
			return false;
		int n = LZ4_decompress_safe((const char *)src, (char *)dst + produced, (int)packed, (int)raw);
		if (n < 0 || (uint32_t)n != raw)
			return false;
		src += packed;
		len -= packed;
		produced += raw;
	}
	return len == 0 && produced == dst_len;
}

static int lz4_raw_decompress(tl_pq_codec codec, const uint8_t *src, size_t len, uint8_t *dst, size_t dst_len,
                              tl_error *err)
{
	int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)len, (int)dst_len);
	if (n < 0)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    codec == TL_PQ_LZ4 ? "LZ4: data is neither Hadoop-framed LZ4 nor a valid LZ4 block "
		                                         "of the %zu bytes the page header says"
		                                       : "LZ4_RAW: invalid LZ4 block, or it does not decompress to the "
		                                         "%zu bytes the page header says",
		                    dst_len);
	if ((size_t)n != dst_len)
		return size_mismatch(err, codec, (size_t)n, dst_len);
	return 0;
}

int pq_decompress(tl_pq_codec codec, const uint8_t *src, size_t len, uint8_t *dst, size_t dst_len, tl_error *err)
{
	static const uint8_t empty_src[1];
	uint8_t empty_dst[1];
	if (src == NULL)
		src = empty_src;
	if (dst == NULL)
		dst = empty_dst;
	if (len > PAGE_LIMIT || dst_len > PAGE_LIMIT)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "%s: page sizes %zu (compressed) and %zu (uncompressed) exceed Parquet's 2 GiB limit",
		                    codec_label(codec), len, dst_len);

	switch (codec) {
	case TL_PQ_UNCOMPRESSED:
		if (len != dst_len)
			return size_mismatch(err, codec, len, dst_len);
		memcpy(dst, src, len);
		return 0;
	case TL_PQ_SNAPPY: {
		size_t announced;
		if (snappy_uncompressed_length((const char *)src, len, &announced) != SNAPPY_OK)
			return tl_error_set(err, TL_ERR_CORRUPT, "SNAPPY: invalid compressed data (bad length preamble)");
		if (announced != dst_len)
			return size_mismatch(err, codec, announced, dst_len);
		size_t produced = dst_len;
		if (snappy_uncompress((const char *)src, len, (char *)dst, &produced) != SNAPPY_OK)
			return tl_error_set(err, TL_ERR_CORRUPT, "SNAPPY: invalid or truncated compressed data");
		if (produced != dst_len)
			return size_mismatch(err, codec, produced, dst_len);
		return 0;
	}
	case TL_PQ_GZIP:
		return gzip_decompress(src, len, dst, dst_len, err);
	case TL_PQ_BROTLI: {
		size_t produced = dst_len;
		if (BrotliDecoderDecompress(len, src, &produced, dst) != BROTLI_DECODER_RESULT_SUCCESS)
			return tl_error_set(err, TL_ERR_CORRUPT,
			                    "BROTLI: invalid or truncated data, or more than the %zu bytes the page header says",
			                    dst_len);
		if (produced != dst_len)
			return size_mismatch(err, codec, produced, dst_len);
		return 0;
	}
	case TL_PQ_LZ4:
		/* Older parquet-cpp wrote bare LZ4 blocks under this codec; like
		 * parquet-cpp, fall back to that when the Hadoop framing does not fit. */
		if (lz4_hadoop_decompress(src, len, dst, dst_len))
			return 0;
		return lz4_raw_decompress(codec, src, len, dst, dst_len, err);
	case TL_PQ_LZ4_RAW:
		return lz4_raw_decompress(codec, src, len, dst, dst_len, err);
	case TL_PQ_ZSTD: {
		if (zstd_dctx == NULL && (zstd_dctx = ZSTD_createDCtx()) == NULL)
			return tl_error_set(err, TL_ERR_NOMEM, "ZSTD: cannot create a decompression context");
		size_t produced = ZSTD_decompressDCtx(zstd_dctx, dst, dst_len, src, len);
		if (ZSTD_isError(produced))
			return tl_error_set(err, TL_ERR_CORRUPT, "ZSTD: %s (the page header says %zu bytes)",
			                    ZSTD_getErrorName(produced), dst_len);
		if (produced != dst_len)
			return size_mismatch(err, codec, produced, dst_len);
		return 0;
	}
	case TL_PQ_LZO:
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "LZO-compressed pages are not supported; rewrite the file with another codec");
	}
	return tl_error_set(err, TL_ERR_INVALID, "unknown compression codec %d", (int)codec);
}
