/*
 * delta.c: DELTA_BINARY_PACKED for INT32 and INT64, and the two byte-array
 * encodings layered on it: DELTA_LENGTH_BYTE_ARRAY (delta-packed lengths,
 * then the bytes) and DELTA_BYTE_ARRAY (delta-packed prefix lengths, then
 * the suffixes as DELTA_LENGTH_BYTE_ARRAY).
 *
 * All arithmetic on values and deltas is unsigned: the spec makes deltas
 * wrap in two's complement, and signed overflow would be undefined in C.
 * INT32 columns are decoded with the same 64-bit arithmetic and truncated,
 * which equals wrapping modulo 2^32.
 */
#include <stdlib.h>
#include <string.h>

#include "parquet/encoding.h"
#include "parquet/metadata.h"

/* What our encoder writes: parquet-cpp's and parquet-mr's defaults. */
#define DELTA_BLOCK_SIZE 128
#define DELTA_MINIBLOCKS 4
#define DELTA_MINIBLOCK_VALUES (DELTA_BLOCK_SIZE / DELTA_MINIBLOCKS)

static inline int64_t zigzag_decode(uint64_t v)
{
	return (int64_t)((v >> 1) ^ (0 - (v & 1)));
}

static inline uint64_t zigzag_encode(int64_t v)
{
	uint64_t u = (uint64_t)v;
	return (u << 1) ^ (0 - (u >> 63));
}

static int delta_corrupt(tl_error *err, const char *what)
{
	return tl_error_set(err, TL_ERR_CORRUPT, "DELTA_BINARY_PACKED: %s", what);
}

/* ------------------------------------------------------------ decoder */

int pq_delta_decoder_init(pq_delta_decoder *d, const uint8_t *data, size_t len, tl_error *err)
{
	uint64_t block_size, miniblocks, total, first;

	memset(d, 0, sizeof(*d));
	d->p = data;
	d->end = len ? data + len : data;
	if (pq_read_uvarint(&d->p, d->end, &block_size) < 0 || pq_read_uvarint(&d->p, d->end, &miniblocks) < 0 ||
	    pq_read_uvarint(&d->p, d->end, &total) < 0 || pq_read_uvarint(&d->p, d->end, &first) < 0)
		return delta_corrupt(err, "header is truncated or holds an overlong varint");
	if (block_size == 0 || block_size % 128 != 0)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "DELTA_BINARY_PACKED: block size %llu is not a positive multiple of 128",
		                    (unsigned long long)block_size);
	/* Java and C++ readers hold the block size in an int; so do we, which
	 * also keeps miniblock byte counts far from overflow. */
	if (block_size > INT32_MAX)
		return tl_error_set(err, TL_ERR_CORRUPT, "DELTA_BINARY_PACKED: block size %llu is too large",
		                    (unsigned long long)block_size);
	if (miniblocks == 0 || block_size % miniblocks != 0 || (block_size / miniblocks) % 32 != 0)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "DELTA_BINARY_PACKED: %llu miniblocks do not split a block of %llu values into "
		                    "multiples of 32",
		                    (unsigned long long)miniblocks, (unsigned long long)block_size);
	d->block_size = block_size;
	d->miniblocks_per_block = miniblocks;
	d->values_per_miniblock = block_size / miniblocks;
	d->total_values = total;
	d->last_value = zigzag_decode(first);
	d->first_pending = total > 0;
	return 0;
}

/*
 * Moves to the next miniblock, reading a block header when the current block
 * is used up. Only miniblocks that hold wanted values are ever opened, so the
 * last block's unneeded bit widths are never checked, as the spec asks.
 */
static int delta_next_miniblock(pq_delta_decoder *d, int max_width, tl_error *err)
{
	if (d->bit_widths == NULL || d->miniblock + 1 >= d->miniblocks_per_block) {
		uint64_t zz;
		if (pq_read_uvarint(&d->p, d->end, &zz) < 0)
			return delta_corrupt(err, "block's minimum delta is truncated or overlong");
		if ((uint64_t)(d->end - d->p) < d->miniblocks_per_block)
			return delta_corrupt(err, "block's miniblock bit widths are truncated");
		d->min_delta = zigzag_decode(zz);
		d->bit_widths = d->p;
		d->p += d->miniblocks_per_block;
		d->miniblock = 0;
	} else {
		d->miniblock++;
	}

	int bw = d->bit_widths[d->miniblock];
	if (bw > max_width)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "DELTA_BINARY_PACKED: miniblock bit width %d exceeds the %d bits of the column type", bw,
		                    max_width);
	/* The last miniblock is padded to full size by every writer (and the
	 * spec), so a whole miniblock must be present. */
	uint64_t bytes = d->values_per_miniblock / 8 * (uint64_t)bw;
	if (bytes > (uint64_t)(d->end - d->p))
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "DELTA_BINARY_PACKED: miniblock needs %llu bytes but only %zu remain",
		                    (unsigned long long)bytes, (size_t)(d->end - d->p));
	d->miniblock_data = d->p;
	d->p += bytes;
	d->miniblock_left = d->values_per_miniblock;
	d->miniblock_bit = 0;
	return 0;
}

/* Decodes into int64_t (wide) or int32_t values. */
static int64_t delta_decode(pq_delta_decoder *d, void *out, bool wide, int64_t n, tl_error *err)
{
	const int max_width = wide ? 64 : 32;
	int64_t *out64 = out;
	int32_t *out32 = out;
	int64_t produced = 0;

	if (n <= 0 || d->values_read >= d->total_values)
		return 0;
	if (d->first_pending) {
		if (wide)
			out64[0] = d->last_value;
		else
			out32[0] = (int32_t)(uint32_t)(uint64_t)d->last_value;
		d->first_pending = false;
		d->values_read = 1;
		produced = 1;
	}

	uint64_t last = (uint64_t)d->last_value;
	while (produced < n && d->values_read < d->total_values) {
		if (d->miniblock_left == 0 && delta_next_miniblock(d, max_width, err) < 0) {
			d->last_value = (int64_t)last;
			return -1;
		}
		/* Unpack at most 64 values (8 groups) at a time, starting at the
		 * group holding the next value. */
		uint64_t consumed = d->values_per_miniblock - d->miniblock_left;
		uint64_t skip = consumed % 8;
		uint64_t take = d->miniblock_left;
		if (take > (uint64_t)(n - produced))
			take = (uint64_t)(n - produced);
		if (take > d->total_values - d->values_read)
			take = d->total_values - d->values_read;
		if (take > 64 - skip)
			take = 64 - skip;

		int bw = d->bit_widths[d->miniblock];
		const uint8_t *group = d->miniblock_data + consumed / 8 * (uint64_t)bw;
		uint64_t rel[64];
		pq_bit_unpack64(group, (size_t)(d->end - group), bw, rel, (int64_t)((skip + take + 7) / 8));

		const uint64_t min_delta = (uint64_t)d->min_delta;
		const uint64_t *r = rel + skip;
		if (wide) {
			int64_t *o = out64 + produced;
			for (uint64_t i = 0; i < take; i++) {
				last += min_delta + r[i];
				o[i] = (int64_t)last;
			}
		} else {
			int32_t *o = out32 + produced;
			for (uint64_t i = 0; i < take; i++) {
				last += min_delta + r[i];
				o[i] = (int32_t)(uint32_t)last;
			}
		}
		produced += (int64_t)take;
		d->values_read += take;
		d->miniblock_left -= take;
		d->miniblock_bit += take * (uint64_t)bw;
	}
	d->last_value = (int64_t)last;
	return produced;
}

int64_t pq_delta_decode_i32(pq_delta_decoder *d, int32_t *out, int64_t n, tl_error *err)
{
	return delta_decode(d, out, false, n, err);
}

int64_t pq_delta_decode_i64(pq_delta_decoder *d, int64_t *out, int64_t n, tl_error *err)
{
	return delta_decode(d, out, true, n, err);
}

/*
 * Walks the remaining miniblocks without unpacking them. Every block
 * header takes at least one byte per miniblock, so even a header claiming
 * 2^64 values of width 0 runs out of input after O(len) steps.
 */
const uint8_t *pq_delta_decoder_skip_to_end(pq_delta_decoder *d, tl_error *err)
{
	if (d->first_pending) {
		d->first_pending = false;
		d->values_read = 1;
	}
	while (d->values_read < d->total_values) {
		if (d->miniblock_left == 0 && delta_next_miniblock(d, 64, err) < 0)
			return NULL;
		uint64_t take = d->miniblock_left;
		if (take > d->total_values - d->values_read)
			take = d->total_values - d->values_read;
		/* last_value is not tracked: nothing may be decoded after a skip. */
		d->values_read += take;
		d->miniblock_left -= take;
	}
	return d->p;
}

/* ------------------------------------------------------------ encoder */

/* Writes one block of 1..DELTA_BLOCK_SIZE deltas. */
static void delta_encode_block(tl_buf *out, const int64_t *deltas, int count)
{
	uint64_t rel[DELTA_BLOCK_SIZE];
	int64_t min = deltas[0];
	for (int i = 1; i < count; i++)
		if (deltas[i] < min)
			min = deltas[i];
	for (int i = 0; i < count; i++)
		rel[i] = (uint64_t)deltas[i] - (uint64_t)min;

	/* Miniblocks past the last value are neither written nor padded; the
	 * last used one is padded with zeros to full size. */
	int used = (count + DELTA_MINIBLOCK_VALUES - 1) / DELTA_MINIBLOCK_VALUES;
	for (int i = count; i < used * DELTA_MINIBLOCK_VALUES; i++)
		rel[i] = 0;
	uint8_t widths[DELTA_MINIBLOCKS] = { 0 };
	for (int m = 0; m < used; m++) {
		uint64_t any = 0;
		for (int i = 0; i < DELTA_MINIBLOCK_VALUES; i++)
			any |= rel[m * DELTA_MINIBLOCK_VALUES + i];
		widths[m] = (uint8_t)pq_bit_width(any);
	}

	tl_buf_append_uvarint(out, zigzag_encode(min));
	tl_buf_append(out, widths, sizeof(widths));
	for (int m = 0; m < used; m++) {
		size_t bytes = (size_t)DELTA_MINIBLOCK_VALUES / 8 * widths[m];
		uint8_t *packed = tl_buf_extend(out, bytes);
		if (packed == NULL)
			return; /* out is failed; the writer checks it (buf.h) */
		pq_bit_pack64(packed, rel + m * DELTA_MINIBLOCK_VALUES, widths[m], DELTA_MINIBLOCK_VALUES / 8);
	}
}

static void delta_encode_header(tl_buf *out, int64_t n, int64_t first)
{
	tl_buf_append_uvarint(out, DELTA_BLOCK_SIZE);
	tl_buf_append_uvarint(out, DELTA_MINIBLOCKS);
	tl_buf_append_uvarint(out, (uint64_t)n);
	tl_buf_append_uvarint(out, zigzag_encode(first));
}

void pq_delta_encode_i64(tl_buf *out, const int64_t *values, int64_t n)
{
	int64_t deltas[DELTA_BLOCK_SIZE];
	delta_encode_header(out, n, n > 0 ? values[0] : 0);
	for (int64_t i = 1; i < n;) {
		int count = n - i < DELTA_BLOCK_SIZE ? (int)(n - i) : DELTA_BLOCK_SIZE;
		for (int j = 0; j < count; j++)
			deltas[j] = (int64_t)((uint64_t)values[i + j] - (uint64_t)values[i + j - 1]);
		delta_encode_block(out, deltas, count);
		i += count;
	}
}

/* INT32 deltas wrap modulo 2^32, so no miniblock needs more than 32 bits. */
void pq_delta_encode_i32(tl_buf *out, const int32_t *values, int64_t n)
{
	int64_t deltas[DELTA_BLOCK_SIZE];
	delta_encode_header(out, n, n > 0 ? values[0] : 0);
	for (int64_t i = 1; i < n;) {
		int count = n - i < DELTA_BLOCK_SIZE ? (int)(n - i) : DELTA_BLOCK_SIZE;
		for (int j = 0; j < count; j++)
			deltas[j] = (int32_t)((uint32_t)values[i + j] - (uint32_t)values[i + j - 1]);
		delta_encode_block(out, deltas, count);
		i += count;
	}
}

/* ---------------------------------- DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY */

static const char *bytes_encoding_name(int encoding)
{
	return encoding == PQ_ENC_DELTA_BYTE_ARRAY ? "DELTA_BYTE_ARRAY" : "DELTA_LENGTH_BYTE_ARRAY";
}

/*
 * Decodes one delta-packed block of lengths that must announce at most
 * `limit` values, all non-negative; advances *p past the block.
 */
static int read_lengths(const uint8_t **p, const uint8_t *end, int64_t limit, const char *what, int32_t **lengths,
                        int64_t *count, tl_error *err)
{
	pq_delta_decoder dd;
	if (pq_delta_decoder_init(&dd, *p, (size_t)(end - *p), err) < 0)
		goto fail;
	uint64_t total = pq_delta_total(&dd);
	if (total > (uint64_t)limit) {
		tl_error_set(err, TL_ERR_CORRUPT, "announces %llu values but the page holds at most %lld",
		             (unsigned long long)total, (long long)limit);
		goto fail;
	}
	int32_t *values = tl_malloc((size_t)total * sizeof(*values));
	if (values == NULL) {
		tl_error_nomem(err, "decoding delta lengths");
		goto fail;
	}
	int64_t got = pq_delta_decode_i32(&dd, values, (int64_t)total, err);
	if (got >= 0 && (uint64_t)got != total)
		tl_error_set(err, TL_ERR_CORRUPT, "decoded %lld of %llu values", (long long)got, (unsigned long long)total);
	for (int64_t i = 0; got >= 0 && i < got; i++) {
		if (values[i] < 0) {
			tl_error_set(err, TL_ERR_CORRUPT, "value %lld has negative length %d", (long long)i, values[i]);
			got = -1;
		}
	}
	const uint8_t *after = got >= 0 && (uint64_t)got == total ? pq_delta_decoder_skip_to_end(&dd, err) : NULL;
	if (after == NULL) {
		tl_free(values);
		goto fail;
	}
	*p = after;
	*lengths = values;
	*count = (int64_t)total;
	return 0;
fail:
	tl_error_prefix(err, "%s", what);
	return -1;
}

int pq_bytes_decoder_init(pq_bytes_decoder *d, int encoding, const uint8_t *data, size_t len, int64_t count,
                          tl_error *err)
{
	const uint8_t *p = data, *end = len ? data + len : data;
	int64_t nprefixes = 0, nlengths = 0;

	memset(d, 0, sizeof(*d));
	tl_buf_init(&d->materialised);
	d->encoding = encoding;
	if (encoding != PQ_ENC_DELTA_LENGTH_BYTE_ARRAY && encoding != PQ_ENC_DELTA_BYTE_ARRAY)
		return tl_error_set(err, TL_ERR_INVALID, "byte-array decoder: encoding %d is not a delta encoding", encoding);
	if (count < 0)
		return tl_error_set(err, TL_ERR_INVALID, "byte-array decoder: negative value count %lld", (long long)count);

	if (encoding == PQ_ENC_DELTA_BYTE_ARRAY &&
	    read_lengths(&p, end, count, "DELTA_BYTE_ARRAY prefix lengths", &d->prefixes, &nprefixes, err) < 0)
		goto fail;
	if (read_lengths(&p, end, count,
	                 encoding == PQ_ENC_DELTA_BYTE_ARRAY ? "DELTA_BYTE_ARRAY suffix lengths"
	                                                     : "DELTA_LENGTH_BYTE_ARRAY lengths",
	                 &d->lengths, &nlengths, err) < 0)
		goto fail;
	if (encoding == PQ_ENC_DELTA_BYTE_ARRAY && nprefixes != nlengths) {
		tl_error_set(err, TL_ERR_CORRUPT, "DELTA_BYTE_ARRAY: %lld prefix lengths but %lld suffix lengths",
		             (long long)nprefixes, (long long)nlengths);
		goto fail;
	}
	/* Checked once here so decoding can slice without bounds checks. */
	uint64_t total_bytes = 0;
	for (int64_t i = 0; i < nlengths; i++)
		total_bytes += (uint64_t)d->lengths[i];
	if (total_bytes > (uint64_t)(end - p)) {
		tl_error_set(err, TL_ERR_CORRUPT, "%s: lengths add up to %llu bytes but only %zu remain in the page",
		             bytes_encoding_name(encoding), (unsigned long long)total_bytes, (size_t)(end - p));
		goto fail;
	}
	d->count = nlengths;
	d->data = p;
	d->data_end = end;
	return 0;
fail:
	pq_bytes_decoder_free(d);
	return -1;
}

/* DELTA_BYTE_ARRAY: each value is a prefix of the previous one plus a suffix. */
static int64_t decode_prefixed(pq_bytes_decoder *d, tl_bytes *out, int64_t k, tl_error *err)
{
	const int32_t *prefixes = d->prefixes + d->next, *suffixes = d->lengths + d->next;
	uint64_t need = 0;
	for (int64_t i = 0; i < k; i++)
		need += (uint64_t)prefixes[i] + (uint64_t)suffixes[i];
	if (need > PQ_BYTES_MATERIALISE_MAX)
		return tl_error_set(err, TL_ERR_NOMEM,
		                    "DELTA_BYTE_ARRAY: %lld values would expand to %llu bytes, over the %zu-byte limit "
		                    "per batch",
		                    (long long)k, (unsigned long long)need, PQ_BYTES_MATERIALISE_MAX);

	/* The previous value (the source of the next prefix) may live in the
	 * buffer we are about to reuse: move it to the front first, then reserve
	 * the whole batch so no view moves while we fill it. */
	tl_buf *buf = &d->materialised;
	if (d->previous.len > 0)
		memmove(buf->data, d->previous.ptr, d->previous.len);
	buf->len = d->previous.len;
	if (tl_buf_reserve(buf, (size_t)need + 1) < 0) /* + 1: never a NULL buffer */
		return tl_error_nomem(err, "decoding DELTA_BYTE_ARRAY values");
	d->previous.ptr = buf->data;
	tl_bytes previous = d->previous;

	const uint8_t *src = d->data;
	for (int64_t i = 0; i < k; i++) {
		uint32_t prefix = (uint32_t)prefixes[i], suffix = (uint32_t)suffixes[i];
		if (prefix > previous.len)
			return tl_error_set(err, TL_ERR_CORRUPT,
			                    "DELTA_BYTE_ARRAY: value %lld has prefix length %u but the previous value has %u bytes",
			                    (long long)(d->next + i), prefix, previous.len);
		uint8_t *dst = buf->data + buf->len;
		if (prefix)
			memcpy(dst, previous.ptr, prefix);
		if (suffix)
			memcpy(dst + prefix, src, suffix);
		src += suffix;
		buf->len += (size_t)prefix + suffix;
		out[i].ptr = dst;
		out[i].len = prefix + suffix;
		previous = out[i];
	}
	d->data = src;
	d->previous = previous;
	return k;
}

int64_t pq_bytes_decode(pq_bytes_decoder *d, tl_bytes *out, int64_t n, tl_error *err)
{
	int64_t k = d->count - d->next;
	if (n < k)
		k = n;
	if (k <= 0)
		return 0;
	if (d->encoding == PQ_ENC_DELTA_BYTE_ARRAY) {
		if (decode_prefixed(d, out, k, err) < 0)
			return -1;
	} else {
		const int32_t *lengths = d->lengths + d->next;
		const uint8_t *src = d->data;
		for (int64_t i = 0; i < k; i++) {
			out[i].ptr = src;
			out[i].len = (uint32_t)lengths[i];
			src += lengths[i];
		}
		d->data = src;
	}
	d->next += k;
	return k;
}

void pq_bytes_decoder_free(pq_bytes_decoder *d)
{
	tl_free(d->lengths);
	tl_free(d->prefixes);
	tl_buf_free(&d->materialised);
	d->lengths = NULL;
	d->prefixes = NULL;
	d->count = 0;
	d->next = 0;
	d->previous.ptr = NULL;
	d->previous.len = 0;
}

static void append_values(tl_buf *out, const tl_bytes *values, const int32_t *skip, int64_t n)
{
	size_t total = 0;
	for (int64_t i = 0; i < n; i++)
		total += values[i].len - (skip ? (uint32_t)skip[i] : 0);
	uint8_t *dst = tl_buf_extend(out, total);
	if (dst == NULL)
		return; /* out is failed; the writer checks it (buf.h) */
	for (int64_t i = 0; i < n; i++) {
		uint32_t from = skip ? (uint32_t)skip[i] : 0, len = values[i].len - from;
		if (len)
			memcpy(dst, values[i].ptr + from, len);
		dst += len;
	}
}

void pq_delta_length_encode(tl_buf *out, const tl_bytes *values, int64_t n)
{
	int32_t *lengths = tl_malloc((size_t)n * sizeof(*lengths));
	if (lengths == NULL) {
		tl_buf_set_failed(out);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		lengths[i] = (int32_t)values[i].len;
	pq_delta_encode_i32(out, lengths, n);
	tl_free(lengths);
	append_values(out, values, NULL, n);
}

void pq_delta_byte_array_encode(tl_buf *out, const tl_bytes *values, int64_t n)
{
	int32_t *prefixes = tl_malloc((size_t)n * sizeof(*prefixes));
	int32_t *suffixes = tl_malloc((size_t)n * sizeof(*suffixes));
	if (prefixes == NULL || suffixes == NULL) {
		tl_free(prefixes);
		tl_free(suffixes);
		tl_buf_set_failed(out);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		uint32_t common = 0;
		if (i > 0) {
			uint32_t limit = values[i].len < values[i - 1].len ? values[i].len : values[i - 1].len;
			while (common < limit && values[i].ptr[common] == values[i - 1].ptr[common])
				common++;
		}
		prefixes[i] = (int32_t)common;
		suffixes[i] = (int32_t)(values[i].len - common);
	}
	pq_delta_encode_i32(out, prefixes, n);
	pq_delta_encode_i32(out, suffixes, n);
	append_values(out, values, prefixes, n);
	tl_free(prefixes);
	tl_free(suffixes);
}
