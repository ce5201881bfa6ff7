/*
 * byte_stream_split.c: BYTE_STREAM_SPLIT, which stores byte k of every value
 * in stream k (data[k * N + i] for value i of N) so that a general-purpose
 * compressor sees the slowly varying bytes of floats side by side.
 *
 * The common widths (4 and 8) get loops with a compile-time width, which the
 * compiler unrolls; other widths (FIXED_LEN_BYTE_ARRAY, 2-byte floats) take
 * the generic loop.
 */
#include <string.h>

#include "parquet/encoding.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

/*
 * Values move in blocks small enough to stay in L1, one stream at a time,
 * so each stream is read (or written) in sequential runs rather than one
 * byte of each of `width` streams per value.
 */
#define SPLIT_BLOCK 256

static ALWAYS_INLINE void gather(const uint8_t *streams, size_t stride, uint8_t *out, int64_t n, const int width)
{
	for (int64_t base = 0; base < n; base += SPLIT_BLOCK) {
		int64_t count = n - base < SPLIT_BLOCK ? n - base : SPLIT_BLOCK;
		uint8_t *dst = out + base * width;
		for (int k = 0; k < width; k++) {
			const uint8_t *src = streams + (size_t)k * stride + (size_t)base;
			for (int64_t i = 0; i < count; i++)
				dst[i * width + k] = src[i];
		}
	}
}

static ALWAYS_INLINE void scatter(const uint8_t *values, uint8_t *streams, int64_t n, const int width)
{
	for (int64_t base = 0; base < n; base += SPLIT_BLOCK) {
		int64_t count = n - base < SPLIT_BLOCK ? n - base : SPLIT_BLOCK;
		const uint8_t *src = values + base * width;
		for (int k = 0; k < width; k++) {
			uint8_t *dst = streams + (size_t)k * (size_t)n + (size_t)base;
			for (int64_t i = 0; i < count; i++)
				dst[i] = src[i * width + k];
		}
	}
}

int pq_byte_stream_split_decode(const uint8_t *data, size_t len, int width, void *out, int64_t start, int64_t n,
                                int64_t total, tl_error *err)
{
	if (width <= 0 || start < 0 || n < 0 || total < 0)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "BYTE_STREAM_SPLIT: invalid width %d or range %lld+%lld of %lld values", width,
		                    (long long)start, (long long)n, (long long)total);
	if (start > total || n > total - start)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "BYTE_STREAM_SPLIT: values %lld..%lld requested from a page of %lld values",
		                    (long long)start, (long long)(start + n), (long long)total);
	if ((uint64_t)total > len / (size_t)width)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "BYTE_STREAM_SPLIT: %lld values of %d bytes do not fit in the %zu bytes the page holds",
		                    (long long)total, width, len);
	if (n == 0)
		return 0;

	const uint8_t *streams = data + start;
	size_t stride = (size_t)total;
	switch (width) {
	case 4:
		gather(streams, stride, out, n, 4);
		break;
	case 8:
		gather(streams, stride, out, n, 8);
		break;
	default:
		gather(streams, stride, out, n, width);
		break;
	}
	return 0;
}

void pq_byte_stream_split_encode(tl_buf *out, const void *values, int width, int64_t n)
{
	if (n <= 0 || width <= 0)
		return;
	uint8_t *streams = tl_buf_extend(out, (size_t)n * (size_t)width);
	if (streams == NULL)
		return; /* out is failed; the writer checks it (buf.h) */
	switch (width) {
	case 4:
		scatter(values, streams, n, 4);
		break;
	case 8:
		scatter(values, streams, n, 8);
		break;
	default:
		scatter(values, streams, n, width);
		break;
	}
}
