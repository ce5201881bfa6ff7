/*
 * codec.c: compression of Avro container file blocks.
 *
 * Avro's codecs differ from Parquet's framing, so they are done here against
 * the libraries rather than through parquet/compress.c: "deflate" is raw
 * deflate (no zlib or gzip header); "snappy" is one raw snappy block followed
 * by the big-endian CRC32 of the uncompressed bytes, which we verify;
 * "zstandard" is a zstd frame. A block does not announce its uncompressed
 * size, so decompression grows its output as it goes and stops with
 * TL_ERR_CORRUPT past AVRO_MAX_BLOCK_BYTES.
 */
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "avro/avro_internal.h"

#define AVRO_ZSTD_LEVEL 3 /* the zstd and Java Avro default */

static const char *const codec_names[] = {"null", "deflate", "snappy", "zstandard"};

const char *tl_avro_codec_name(tl_avro_codec codec)
{
	if ((unsigned)codec < sizeof(codec_names) / sizeof(codec_names[0]))
		return codec_names[codec];
	return "unknown";
}

int avro_codec_parse(const uint8_t *name, size_t len, tl_avro_codec *out, tl_error *err)
{
	for (int c = TL_AVRO_CODEC_NULL; c <= TL_AVRO_CODEC_ZSTD; c++)
		if (strlen(codec_names[c]) == len && memcmp(codec_names[c], name, len) == 0) {
			*out = (tl_avro_codec)c;
			return 0;
		}
	return tl_error_set(err, TL_ERR_UNSUPPORTED, "Avro: unsupported codec \"%.*s\"", (int)(len > 64 ? 64 : len),
	                    (const char *)name);
}

static int deflate_block(const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return tl_error_set(err, TL_ERR_NOMEM, "Avro: cannot start deflate");
	size_t bound = deflateBound(&zs, (uLong)len);
	if (tl_buf_reserve(out, bound) < 0) {
		deflateEnd(&zs);
		return tl_error_nomem(err, "for an Avro deflate block");
	}
	zs.next_in = (Bytef *)src;
	zs.avail_in = (uInt)len;
	zs.next_out = out->data + out->len;
	zs.avail_out = (uInt)bound;
	int rc = deflate(&zs, Z_FINISH);
	out->len += bound - zs.avail_out;
	deflateEnd(&zs);
	if (rc != Z_STREAM_END)
		return tl_error_set(err, TL_ERR_IO, "Avro: deflate failed (%d)", rc);
	return 0;
}

/* Grows out so at least `want` more bytes fit, or fails past the block limit. */
static int grow(tl_buf *out, size_t *avail, tl_error *err)
{
	if (out->len >= AVRO_MAX_BLOCK_BYTES)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: block decompresses to more than %zu bytes",
		                    AVRO_MAX_BLOCK_BYTES);
	size_t want = out->cap - out->len < 65536 ? (out->len < 65536 ? 65536 : out->len) : 0;
	if (want > 0 && tl_buf_reserve(out, want) < 0)
		return tl_error_nomem(err, "for an inflated Avro block");
	*avail = out->cap - out->len;
	if (*avail > AVRO_MAX_BLOCK_BYTES - out->len)
		*avail = AVRO_MAX_BLOCK_BYTES - out->len;
	return 0;
}

static int inflate_block(const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, -15) != Z_OK)
		return tl_error_set(err, TL_ERR_NOMEM, "Avro: cannot start inflate");
	zs.next_in = (Bytef *)src;
	zs.avail_in = (uInt)len;
	int rc = Z_OK;
	while (rc != Z_STREAM_END) {
		size_t avail = 0;
		if (grow(out, &avail, err) != 0) {
			inflateEnd(&zs);
			return -1;
		}
		zs.next_out = out->data + out->len;
		zs.avail_out = (uInt)avail;
		rc = inflate(&zs, Z_NO_FLUSH);
		out->len += avail - zs.avail_out;
		if (rc == Z_BUF_ERROR && zs.avail_out != 0)
			break; /* needs input we do not have */
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
			break;
	}
	inflateEnd(&zs);
	if (rc != Z_STREAM_END)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: deflate block is invalid or truncated%s%s",
		                    zs.msg ? ": " : "", zs.msg ? zs.msg : "");
	return 0;
}

static int zstd_decompress_block(const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	if (ds == NULL)
		return tl_error_set(err, TL_ERR_NOMEM, "Avro: cannot start zstd");
	ZSTD_inBuffer in = {src, len, 0};
	size_t rc = 1;
	while (in.pos < in.size || rc != 0) {
		size_t avail = 0;
		if (grow(out, &avail, err) != 0) {
			ZSTD_freeDStream(ds);
			return -1;
		}
		ZSTD_outBuffer ob = {out->data + out->len, avail, 0};
		size_t before = in.pos;
		rc = ZSTD_decompressStream(ds, &ob, &in);
		out->len += ob.pos;
		if (ZSTD_isError(rc)) {
			ZSTD_freeDStream(ds);
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: zstd block is invalid: %s", ZSTD_getErrorName(rc));
		}
		if (in.pos == before && ob.pos == 0 && in.pos == in.size)
			break; /* no progress and no input left: the frame is cut short */
	}
	ZSTD_freeDStream(ds);
	if (rc != 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "Avro: zstd block is truncated");
	return 0;
}

static uint32_t crc32_of(const uint8_t *p, size_t len)
{
	uLong crc = crc32(0L, Z_NULL, 0);
	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)crc;
}

int avro_compress(tl_avro_codec codec, const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	switch (codec) {
	case TL_AVRO_CODEC_NULL:
		tl_buf_append(out, src, len);
		return tl_buf_check(out, err, "for an Avro block");
	case TL_AVRO_CODEC_DEFLATE:
		return deflate_block(src, len, out, err);
	case TL_AVRO_CODEC_SNAPPY: {
		size_t n = snappy_max_compressed_length(len);
		if (tl_buf_reserve(out, n + 4) < 0)
			return tl_error_nomem(err, "for an Avro snappy block");
		if (snappy_compress((const char *)src, len, (char *)out->data + out->len, &n) != SNAPPY_OK)
			return tl_error_set(err, TL_ERR_IO, "Avro: snappy compression failed");
		out->len += n;
		uint32_t crc = crc32_of(src, len);
		uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
		tl_buf_append(out, be, 4);
		return tl_buf_check(out, err, "for an Avro snappy block");
	}
	case TL_AVRO_CODEC_ZSTD: {
		size_t bound = ZSTD_compressBound(len);
		if (tl_buf_reserve(out, bound) < 0)
			return tl_error_nomem(err, "for an Avro zstd block");
		size_t n = ZSTD_compress(out->data + out->len, bound, src, len, AVRO_ZSTD_LEVEL);
		if (ZSTD_isError(n))
			return tl_error_set(err, TL_ERR_IO, "Avro: zstd compression failed: %s", ZSTD_getErrorName(n));
		out->len += n;
		return 0;
	}
	}
	return tl_error_set(err, TL_ERR_INVALID, "Avro: unknown codec %d", (int)codec);
}

int avro_decompress(tl_avro_codec codec, const uint8_t *src, size_t len, tl_buf *out, tl_error *err)
{
	tl_buf_reset(out);
	/* so out->data is never NULL, even for an empty block */
	if (tl_buf_reserve(out, 1) < 0)
		return tl_error_nomem(err, "for a decompressed Avro block");
	switch (codec) {
	case TL_AVRO_CODEC_NULL:
		tl_buf_append(out, src, len);
		return tl_buf_check(out, err, "for an Avro block");
	case TL_AVRO_CODEC_DEFLATE:
		return inflate_block(src, len, out, err);
	case TL_AVRO_CODEC_SNAPPY: {
		size_t n;
		if (len < 4)
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: snappy block of %zu bytes has no CRC", len);
		if (snappy_uncompressed_length((const char *)src, len - 4, &n) != SNAPPY_OK)
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: snappy block has an invalid header");
		if (n > AVRO_MAX_BLOCK_BYTES)
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: snappy block claims %zu bytes, over the %zu limit", n,
			                    AVRO_MAX_BLOCK_BYTES);
		if (tl_buf_reserve(out, n ? n : 1) < 0)
			return tl_error_nomem(err, "for a decompressed Avro snappy block");
		size_t got = n;
		if (snappy_uncompress((const char *)src, len - 4, (char *)out->data, &got) != SNAPPY_OK || got != n)
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: snappy block is invalid");
		out->len = n;
		const uint8_t *t = src + len - 4;
		uint32_t want = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
		uint32_t crc = crc32_of(out->data, n);
		if (crc != want)
			return tl_error_set(err, TL_ERR_CORRUPT, "Avro: snappy block CRC32 mismatch (stored %08x, computed %08x)",
			                    want, crc);
		return 0;
	}
	case TL_AVRO_CODEC_ZSTD:
		return zstd_decompress_block(src, len, out, err);
	}
	return tl_error_set(err, TL_ERR_INVALID, "Avro: unknown codec %d", (int)codec);
}
