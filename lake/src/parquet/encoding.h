/*
 * encoding.h: Parquet's value and level encodings.
 *
 * Decoders read a page's bytes and produce dense (non-null) values of the
 * column's physical type; the column reader spreads them over rows using
 * the definition levels. Every decoder validates against the bytes it has
 * and fails with TL_ERR_CORRUPT instead of reading past them. Byte-array
 * decoders produce tl_bytes views into the page (or into the decoder's own
 * buffer where values must be materialised, DELTA_BYTE_ARRAY), valid until
 * the page is released or the decoder is reset.
 *
 * Encoders append to a tl_buf.
 */
#ifndef TIERLAKE_PARQUET_ENCODING_H
#define TIERLAKE_PARQUET_ENCODING_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"

/* Bits needed to represent max_value (0 for 0). */
int pq_bit_width(uint64_t max_value);

/* ------------------------------------------------ shared building blocks */

/*
 * Reads a ULEB128 varint at *p without reading at or past end and advances
 * *p. Returns 0, or -1 when the bytes end first or the value overflows 64
 * bits. Inline because the RLE and delta decoders call it per run/block.
 */
static inline int pq_read_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t result = 0;
	const uint8_t *q = *p;
	for (int shift = 0; shift < 64 && q < end; shift += 7) {
		uint8_t byte = *q++;
		if (shift == 63 && byte > 1)
			return -1;
		result |= (uint64_t)(byte & 0x7f) << shift;
		if ((byte & 0x80) == 0) {
			*p = q;
			*v = result;
			return 0;
		}
	}
	return -1;
}

/*
 * LSB-first bit packing in groups of 8 values, as the RLE hybrid and
 * DELTA_BINARY_PACKED store them: a group of width w takes exactly w bytes.
 * The unpackers read ngroups * bit_width bytes from `in` and never past
 * in + avail (avail >= ngroups * bit_width); more slack lets them use wide
 * loads. The packer writes exactly ngroups * bit_width bytes and ignores
 * bits of the values above bit_width.
 */
void pq_bit_unpack32(const uint8_t *in, size_t avail, int bit_width, uint32_t *out, int64_t ngroups); /* 0..32 */
void pq_bit_unpack64(const uint8_t *in, size_t avail, int bit_width, uint64_t *out, int64_t ngroups); /* 0..64 */
void pq_bit_pack64(uint8_t *out, const uint64_t *in, int bit_width, int64_t ngroups);

/* --------------------------------------------- RLE / bit-packed hybrid */

typedef struct pq_rle_decoder {
	const uint8_t *p;
	const uint8_t *end;
	int bit_width;
	uint32_t repeat_left;     /* values left in the current RLE run */
	uint32_t repeat_value;
	uint32_t packed_left;     /* values left in the current bit-packed run */
	const uint8_t *packed;    /* the group of 8 holding the run's next value */
	uint32_t packed_bit;      /* bit offset of that value within the group */
} pq_rle_decoder;

/* bit_width 0..32. */
void pq_rle_decoder_init(pq_rle_decoder *d, const uint8_t *data, size_t len, int bit_width);
/*
 * Decodes up to n values. Returns the number decoded, which is less than n
 * only when the data ends (a final bit-packed run cut short yields the whole
 * groups present); -1 on corrupt input: a bit width outside 0..32, a
 * truncated run header or repeated value, a repeated value wider than the
 * bit width, or a run longer than the spec's 2^31 - 1 values.
 */
int64_t pq_rle_decode(pq_rle_decoder *d, uint32_t *out, int64_t n, tl_error *err);

typedef struct pq_rle_encoder {
	tl_buf *out;
	int bit_width;
	uint32_t buffered[8];     /* values waiting for a full group of 8 */
	int nbuffered;
	uint32_t run_value;
	int64_t run_length;
	size_t packed_header_pos; /* position of the open bit-packed run's header, or SIZE_MAX */
	int64_t packed_groups;
} pq_rle_encoder;

void pq_rle_encoder_init(pq_rle_encoder *e, tl_buf *out, int bit_width);
void pq_rle_encode(pq_rle_encoder *e, const uint32_t *values, int64_t n);
/* Flushes what is buffered; the encoder may be re-initialised afterwards. */
void pq_rle_encoder_finish(pq_rle_encoder *e);

/* ------------------------------------------------------------- PLAIN */

/*
 * PLAIN for fixed-width types: width 4 (INT32, FLOAT), 8 (INT64, DOUBLE),
 * 12 (INT96) or a FIXED_LEN_BYTE_ARRAY's length. `out` receives n values.
 * Returns the number of input bytes consumed, or -1.
 */
int64_t pq_plain_decode_fixed(const uint8_t *data, size_t len, int width, void *out, int64_t n, tl_error *err);
/*
 * BOOLEAN: bit-packed, least significant bit first, starting at bit
 * `bit_offset`; out receives 0 or 1 per value. Returns 0, or -1 when the
 * data holds fewer than bit_offset + n bits.
 */
int pq_plain_decode_bool(const uint8_t *data, size_t len, uint64_t bit_offset, uint8_t *out, int64_t n, tl_error *err);
/* BYTE_ARRAY: 4-byte little-endian length, then bytes. Returns bytes consumed or -1. */
int64_t pq_plain_decode_byte_array(const uint8_t *data, size_t len, tl_bytes *out, int64_t n, tl_error *err);
/* FIXED_LEN_BYTE_ARRAY as views of `width` bytes each. Returns bytes consumed or -1. */
int64_t pq_plain_decode_flba(const uint8_t *data, size_t len, int width, tl_bytes *out, int64_t n, tl_error *err);

void pq_plain_encode_fixed(tl_buf *out, const void *values, int width, int64_t n);
void pq_plain_encode_byte_array(tl_buf *out, const tl_bytes *values, int64_t n);
/* Booleans accumulate bits across calls; finish pads the last byte. */
typedef struct pq_bool_encoder {
	tl_buf *out;
	uint8_t current;
	int nbits;
} pq_bool_encoder;
void pq_bool_encoder_init(pq_bool_encoder *e, tl_buf *out);
void pq_bool_encode(pq_bool_encoder *e, const uint8_t *values, int64_t n);
void pq_bool_encoder_finish(pq_bool_encoder *e);

/* -------------------------------------------- DELTA_BINARY_PACKED */

typedef struct pq_delta_decoder {
	const uint8_t *p;
	const uint8_t *end;
	uint64_t block_size;
	uint64_t miniblocks_per_block;
	uint64_t values_per_miniblock;
	uint64_t total_values;
	uint64_t values_read;
	int64_t last_value;
	int64_t min_delta;
	uint32_t miniblock;        /* current miniblock index within the block */
	uint64_t miniblock_left;   /* values left in the current miniblock */
	const uint8_t *bit_widths; /* this block's miniblock bit widths */
	const uint8_t *miniblock_data;
	uint64_t miniblock_bit;
	bool first_pending;        /* the header's first value is not yet returned */
} pq_delta_decoder;

/*
 * Reads the header. Decode into int32 (arithmetic wraps modulo 2^32, as the
 * spec requires for INT32 columns) or int64 as the column's type demands.
 */
int pq_delta_decoder_init(pq_delta_decoder *d, const uint8_t *data, size_t len, tl_error *err);
int64_t pq_delta_decode_i32(pq_delta_decoder *d, int32_t *out, int64_t n, tl_error *err);
int64_t pq_delta_decode_i64(pq_delta_decoder *d, int64_t *out, int64_t n, tl_error *err);
/* Total values announced by the header. */
static inline uint64_t pq_delta_total(const pq_delta_decoder *d) { return d->total_values; }
/* Consumes every remaining value and returns a pointer just past the encoded data. */
const uint8_t *pq_delta_decoder_skip_to_end(pq_delta_decoder *d, tl_error *err);

/* Encodes n values in one go (block 128, 4 miniblocks). */
void pq_delta_encode_i64(tl_buf *out, const int64_t *values, int64_t n);
void pq_delta_encode_i32(tl_buf *out, const int32_t *values, int64_t n);

/* ------------------------------ DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY */

typedef struct pq_bytes_decoder {
	int encoding;            /* PQ_ENC_DELTA_LENGTH_BYTE_ARRAY or PQ_ENC_DELTA_BYTE_ARRAY */
	int64_t count;
	int64_t next;
	int32_t *lengths;        /* decoded suffix (or whole value) lengths */
	int32_t *prefixes;       /* DELTA_BYTE_ARRAY prefix lengths */
	const uint8_t *data;     /* concatenated bytes */
	const uint8_t *data_end;
	tl_buf materialised;     /* DELTA_BYTE_ARRAY values rebuilt from prefixes */
	tl_bytes previous;
} pq_bytes_decoder;

/*
 * Reads the length (and prefix) blocks of a page. `count` is an upper bound
 * on the values encoded (a v1 page's num_values, which includes nulls); a
 * header announcing more than `count` values is corrupt.
 */
int pq_bytes_decoder_init(pq_bytes_decoder *d, int encoding, const uint8_t *data, size_t len,
                          int64_t count, tl_error *err);
/*
 * Produces up to n views; fewer only when the page's values run out.
 * DELTA_LENGTH_BYTE_ARRAY views point into the page; DELTA_BYTE_ARRAY views
 * point into the decoder and stay valid only until the next call, so the
 * caller copies them out before calling again. Because prefixes let a small
 * page describe huge values, one DELTA_BYTE_ARRAY call refuses (TL_ERR_NOMEM)
 * to materialise more than PQ_BYTES_MATERIALISE_MAX bytes; ask for fewer.
 */
#define PQ_BYTES_MATERIALISE_MAX ((size_t)256 * 1024 * 1024)
int64_t pq_bytes_decode(pq_bytes_decoder *d, tl_bytes *out, int64_t n, tl_error *err);
void pq_bytes_decoder_free(pq_bytes_decoder *d);

void pq_delta_length_encode(tl_buf *out, const tl_bytes *values, int64_t n);
void pq_delta_byte_array_encode(tl_buf *out, const tl_bytes *values, int64_t n);

/* ------------------------------------------------ BYTE_STREAM_SPLIT */

/* `width` bytes per value; the page holds n values. Output is n values of that width. */
int pq_byte_stream_split_decode(const uint8_t *data, size_t len, int width, void *out,
                                int64_t start, int64_t n, int64_t total, tl_error *err);
void pq_byte_stream_split_encode(tl_buf *out, const void *values, int width, int64_t n);

/* ------------------------------------------------------ CRC32 */

/* The CRC-32 (IEEE, as zlib) Parquet page headers carry. */
uint32_t pq_crc32(const uint8_t *data, size_t len);

#endif
