/*
 * plain.c: the PLAIN encoding, which every Parquet reader and writer must
 * support: little-endian fixed-width values, LSB-first bit-packed booleans,
 * length-prefixed byte arrays and bare fixed-length byte arrays.
 *
 * The host is little-endian (checked below), so fixed-width values move
 * with memcpy and need no per-value conversion.
 */
#include <string.h>

#include "parquet/encoding.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "PLAIN decoding here assumes a little-endian host"
#endif

int64_t pq_plain_decode_fixed(const uint8_t *data, size_t len, int width, void *out, int64_t n, tl_error *err)
{
	if (width <= 0 || n < 0)
		return tl_error_set(err, TL_ERR_INVALID, "PLAIN: invalid value width %d or count %lld", width,
		                    (long long)n);
	if ((uint64_t)n > len / (size_t)width)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "PLAIN: %lld values of %d bytes do not fit in the %zu bytes the page holds",
		                    (long long)n, width, len);
	size_t bytes = (size_t)n * (size_t)width;
	if (bytes)
		memcpy(out, data, bytes);
	return (int64_t)bytes;
}

/* Spreads the 8 bits of b into 8 bytes of 0 or 1, bit i into byte i. */
static inline uint64_t spread_bits(uint8_t b)
{
	uint64_t x = b;
	x = (x | (x << 28)) & 0x0000000F0000000FULL;
	x = (x | (x << 14)) & 0x0003000300030003ULL;
	x = (x | (x << 7)) & 0x0101010101010101ULL;
	return x;
}

int pq_plain_decode_bool(const uint8_t *data, size_t len, uint64_t bit_offset, uint8_t *out, int64_t n,
                         tl_error *err)
{
	if (n < 0)
		return tl_error_set(err, TL_ERR_INVALID, "PLAIN BOOLEAN: invalid count %lld", (long long)n);
	uint64_t bits = (uint64_t)len * 8;
	if (bit_offset > bits || (uint64_t)n > bits - bit_offset)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "PLAIN BOOLEAN: %lld values from bit %llu do not fit in the %zu bytes the page holds",
		                    (long long)n, (unsigned long long)bit_offset, len);

	uint64_t bit = bit_offset;
	int64_t i = 0;
	for (; i < n && (bit & 7) != 0; i++, bit++)
		out[i] = (data[bit >> 3] >> (bit & 7)) & 1;
	/* Byte-aligned now: eight values per byte without a per-bit loop. */
	for (; n - i >= 8; i += 8, bit += 8) {
		uint64_t spread = spread_bits(data[bit >> 3]);
		memcpy(out + i, &spread, 8);
	}
	for (; i < n; i++, bit++)
		out[i] = (data[bit >> 3] >> (bit & 7)) & 1;
	return 0;
}

int64_t pq_plain_decode_byte_array(const uint8_t *data, size_t len, tl_bytes *out, int64_t n, tl_error *err)
{
	size_t pos = 0;
	for (int64_t i = 0; i < n; i++) {
		if (len - pos < 4)
			return tl_error_set(err, TL_ERR_CORRUPT,
			                    "PLAIN BYTE_ARRAY: length of value %lld is cut off at byte %zu of %zu",
			                    (long long)i, pos, len);
		uint32_t value_len = (uint32_t)data[pos] | (uint32_t)data[pos + 1] << 8 |
		                     (uint32_t)data[pos + 2] << 16 | (uint32_t)data[pos + 3] << 24;
		pos += 4;
		if (value_len > len - pos)
			return tl_error_set(err, TL_ERR_CORRUPT,
			                    "PLAIN BYTE_ARRAY: value %lld claims %u bytes but only %zu remain in the page",
			                    (long long)i, value_len, len - pos);
		out[i].ptr = data + pos;
		out[i].len = value_len;
		pos += value_len;
	}
	return (int64_t)pos;
}

int64_t pq_plain_decode_flba(const uint8_t *data, size_t len, int width, tl_bytes *out, int64_t n, tl_error *err)
{
	if (width <= 0 || n < 0)
		return tl_error_set(err, TL_ERR_INVALID, "PLAIN FIXED_LEN_BYTE_ARRAY: invalid width %d or count %lld",
		                    width, (long long)n);
	if ((uint64_t)n > len / (size_t)width)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "PLAIN FIXED_LEN_BYTE_ARRAY: %lld values of %d bytes do not fit in the %zu bytes the page holds",
		                    (long long)n, width, len);
	for (int64_t i = 0; i < n; i++) {
		out[i].ptr = data + (size_t)i * (size_t)width;
		out[i].len = (uint32_t)width;
	}
	return n * width;
}

void pq_plain_encode_fixed(tl_buf *out, const void *values, int width, int64_t n)
{
	tl_buf_append(out, values, (size_t)n * (size_t)width);
}

void pq_plain_encode_byte_array(tl_buf *out, const tl_bytes *values, int64_t n)
{
	size_t total = 0;
	for (int64_t i = 0; i < n; i++)
		total += 4 + (size_t)values[i].len;
	uint8_t *p = tl_buf_extend(out, total);
	if (p == NULL)
		return; /* out is failed; the writer checks it (buf.h) */
	for (int64_t i = 0; i < n; i++) {
		uint32_t value_len = values[i].len;
		p[0] = (uint8_t)value_len;
		p[1] = (uint8_t)(value_len >> 8);
		p[2] = (uint8_t)(value_len >> 16);
		p[3] = (uint8_t)(value_len >> 24);
		if (value_len)
			memcpy(p + 4, values[i].ptr, value_len);
		p += 4 + (size_t)value_len;
	}
}

void pq_bool_encoder_init(pq_bool_encoder *e, tl_buf *out)
{
	e->out = out;
	e->current = 0;
	e->nbits = 0;
}

static inline void bool_push(pq_bool_encoder *e, uint8_t value)
{
	e->current |= (uint8_t)((value != 0) << e->nbits);
	if (++e->nbits == 8) {
		tl_buf_append_byte(e->out, e->current);
		e->current = 0;
		e->nbits = 0;
	}
}

void pq_bool_encode(pq_bool_encoder *e, const uint8_t *values, int64_t n)
{
	int64_t i = 0;
	for (; i < n && e->nbits != 0; i++)
		bool_push(e, values[i]);
	/* Byte-aligned: whole output bytes at a time. */
	int64_t whole = (n - i) / 8;
	if (whole > 0) {
		uint8_t *dst = tl_buf_extend(e->out, (size_t)whole);
		if (dst == NULL)
			return; /* out is failed; the writer checks it (buf.h) */
		for (int64_t b = 0; b < whole; b++, i += 8) {
			uint8_t byte = 0;
			for (int j = 0; j < 8; j++)
				byte |= (uint8_t)((values[i + j] != 0) << j);
			dst[b] = byte;
		}
	}
	for (; i < n; i++)
		bool_push(e, values[i]);
}

void pq_bool_encoder_finish(pq_bool_encoder *e)
{
	if (e->nbits > 0)
		tl_buf_append_byte(e->out, e->current);
	e->current = 0;
	e->nbits = 0;
}
