/*
 * compress.h: page compression codecs (parquet.thrift's CompressionCodec).
 */
#ifndef TIERLAKE_PARQUET_COMPRESS_H
#define TIERLAKE_PARQUET_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/parquet.h"

/*
 * Appends the compressed form of src to out. level 0 is the codec's default:
 * ZSTD 1 (Arrow's default; ZSTD_minCLevel()..ZSTD_maxCLevel() accepted),
 * GZIP 6 (1..9; gzip framing), LZ4_RAW's fast mode (1..12 select LZ4 HC);
 * SNAPPY ignores it. BROTLI and LZ4 (Hadoop) are read-only and LZO is not
 * supported: TL_ERR_UNSUPPORTED. A bad level is TL_ERR_INVALID.
 */
int pq_compress(tl_pq_codec codec, int level, const uint8_t *src, size_t len, tl_buf *out, tl_error *err);

/*
 * Decompresses src into exactly dst_len bytes (the page header's
 * uncompressed size). Output of any other length is TL_ERR_CORRUPT.
 * GZIP accepts gzip or zlib framing and concatenated gzip members; LZ4
 * takes Hadoop's framing and, as parquet-cpp does, falls back to reading the
 * input as one raw LZ4 block when that framing does not parse exactly.
 */
int pq_decompress(tl_pq_codec codec, const uint8_t *src, size_t len, uint8_t *dst, size_t dst_len, tl_error *err);

/* Whether this build can write with the codec. */
int pq_codec_can_write(tl_pq_codec codec);

#endif
