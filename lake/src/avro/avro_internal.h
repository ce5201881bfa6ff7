/*
 * avro_internal.h: pieces shared by the Avro schema, datum and container
 * file code: varint decoding over a bounded byte range and block
 * (de)compression.
 */
#ifndef TIERLAKE_AVRO_INTERNAL_H
#define TIERLAKE_AVRO_INTERNAL_H

#include <stdint.h>

#include "tierlake/avro.h"

/* The longest block, compressed or not, we read or write (bytes). */
#define AVRO_MAX_BLOCK_BYTES ((size_t)64 << 20)

/* A bounded read position over untrusted bytes. */
typedef struct avro_cursor {
	const uint8_t *p, *end;
	/* Set when a read ran past end, so a caller holding a prefix can fetch more. */
	bool truncated;
} avro_cursor;

/* Zigzag varint long; -1 with err set if truncated or longer than 10 bytes. */
int avro_read_long(avro_cursor *c, int64_t *out, const char *what, tl_error *err);
/* A length that must fit in the bytes left after it (a string, a map key, a block of items). */
int avro_read_size(avro_cursor *c, uint64_t *out, const char *what, tl_error *err);
void avro_write_long(tl_buf *b, int64_t v);
/* Decodes one datum at cur, spending from a budget of values shared by the calls (a block's records). */
int avro_decode_budgeted(avro_cursor *cur, const tl_avro_schema *schema, tl_arena *arena, uint64_t *budget,
                         tl_avro_value *out, tl_error *err);

/* Appends the compressed block (snappy includes its CRC32 trailer). */
int avro_compress(tl_avro_codec codec, const uint8_t *src, size_t len, tl_buf *out, tl_error *err);
/* Replaces out's contents with the decompressed block; at most AVRO_MAX_BLOCK_BYTES. */
int avro_decompress(tl_avro_codec codec, const uint8_t *src, size_t len, tl_buf *out, tl_error *err);
/* Maps an avro.codec value to a codec; TL_ERR_UNSUPPORTED names an unknown one. */
int avro_codec_parse(const uint8_t *name, size_t len, tl_avro_codec *out, tl_error *err);

#endif
