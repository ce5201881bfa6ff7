/*
 * writer_stats.c: column-chunk statistics (min, max, null count) in the
 * sort order the Parquet spec assigns to each column type.
 *
 * Readers prune row groups with these values, so a wrong order is a wrong
 * query answer, not a cosmetic slip: unsigned integers must not compare as
 * signed, strings compare as unsigned bytes (so "é" sorts after "z"),
 * decimals stored as bytes compare as two's-complement numbers, NaN takes
 * no part in float ordering, and a zero extreme is written as -0.0 (min)
 * or +0.0 (max) because readers cannot know which zero the data held.
 */
#include <math.h>
#include <string.h>

#include "parquet/writer_internal.h"

void pq_stats_init(pq_chunk_stats *s, const tl_pq_column *col)
{
	memset(s, 0, sizeof(*s));
	s->physical = col->physical;
	s->unsigned_order = col->logical == TL_PQ_LOGICAL_INT && !col->int_signed;
	s->decimal_order = col->logical == TL_PQ_LOGICAL_DECIMAL &&
	                   (col->physical == TL_PQ_BYTE_ARRAY || col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY);
	tl_buf_init(&s->min_bytes);
	tl_buf_init(&s->max_bytes);
}

void pq_stats_reset(pq_chunk_stats *s)
{
	s->null_count = 0;
	s->has_min_max = false;
	tl_buf_reset(&s->min_bytes);
	tl_buf_reset(&s->max_bytes);
}

void pq_stats_free(pq_chunk_stats *s)
{
	tl_buf_free(&s->min_bytes);
	tl_buf_free(&s->max_bytes);
}

int pq_compare_unsigned_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;
	if (c != 0)
		return c < 0 ? -1 : 1;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/*
 * Big-endian two's-complement integers of possibly different lengths.
 * Different signs decide at once; with equal signs the shorter value is
 * sign-extended (its missing leading bytes are 0x00 or 0xFF), after which
 * unsigned byte order is numeric order.
 */
int pq_compare_decimal_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	bool a_negative = alen > 0 && (a[0] & 0x80);
	bool b_negative = blen > 0 && (b[0] & 0x80);
	if (a_negative != b_negative)
		return a_negative ? -1 : 1;
	const uint8_t pad = a_negative ? 0xFF : 0x00;
	for (; alen > blen; a++, alen--)
		if (a[0] != pad)
			return a[0] < pad ? -1 : 1;
	for (; blen > alen; b++, blen--)
		if (b[0] != pad)
			return pad < b[0] ? -1 : 1;
	int c = alen ? memcmp(a, b, alen) : 0;
	return c < 0 ? -1 : c > 0 ? 1 : 0;
}

/* Min and max of a run of integers, in one pass the compiler vectorises. */
#define DEFINE_INT_RANGE(name, type)                                                                  \
	static void name(const type *v, int64_t n, type *lo_out, type *hi_out)                            \
	{                                                                                                 \
		type lo = v[0], hi = v[0];                                                                    \
		for (int64_t i = 1; i < n; i++) {                                                             \
			lo = v[i] < lo ? v[i] : lo;                                                               \
			hi = v[i] > hi ? v[i] : hi;                                                               \
		}                                                                                             \
		*lo_out = lo;                                                                                 \
		*hi_out = hi;                                                                                 \
	}

DEFINE_INT_RANGE(range_i32, int32_t)
DEFINE_INT_RANGE(range_u32, uint32_t)
DEFINE_INT_RANGE(range_i64, int64_t)
DEFINE_INT_RANGE(range_u64, uint64_t)

/* Merges a run's [lo, hi] into the chunk's, comparing with `less`. */
#define MERGE_RANGE(s, member, lo, hi, less)                                                           \
	do {                                                                                              \
		if (!(s)->has_min_max) {                                                                      \
			(s)->min.member = (lo);                                                                   \
			(s)->max.member = (hi);                                                                   \
			(s)->has_min_max = true;                                                                  \
		} else {                                                                                      \
			if (less((lo), (s)->min.member))                                                          \
				(s)->min.member = (lo);                                                               \
			if (less((s)->max.member, (hi)))                                                          \
				(s)->max.member = (hi);                                                               \
		}                                                                                             \
	} while (0)

#define LESS_SIGNED(a, b) ((a) < (b))
#define LESS_U32(a, b) ((uint32_t)(a) < (uint32_t)(b))
#define LESS_U64(a, b) ((uint64_t)(a) < (uint64_t)(b))

static void add_int32(pq_chunk_stats *s, const int32_t *v, int64_t n)
{
	if (s->unsigned_order) {
		uint32_t lo, hi;
		range_u32((const uint32_t *)v, n, &lo, &hi);
		MERGE_RANGE(s, i32, (int32_t)lo, (int32_t)hi, LESS_U32);
	} else {
		int32_t lo, hi;
		range_i32(v, n, &lo, &hi);
		MERGE_RANGE(s, i32, lo, hi, LESS_SIGNED);
	}
}

static void add_int64(pq_chunk_stats *s, const int64_t *v, int64_t n)
{
	if (s->unsigned_order) {
		uint64_t lo, hi;
		range_u64((const uint64_t *)v, n, &lo, &hi);
		MERGE_RANGE(s, i64, (int64_t)lo, (int64_t)hi, LESS_U64);
	} else {
		int64_t lo, hi;
		range_i64(v, n, &lo, &hi);
		MERGE_RANGE(s, i64, lo, hi, LESS_SIGNED);
	}
}

/* NaN compares false both ways, so it can neither become nor displace an
 * extreme; a run of only NaN leaves the statistics untouched. */
#define DEFINE_FLOAT_ADD(name, type, member)                                                          \
	static void name(pq_chunk_stats *s, const type *v, int64_t n)                                     \
	{                                                                                                 \
		type lo = (type)INFINITY, hi = (type)-INFINITY;                                               \
		bool seen = false;                                                                            \
		for (int64_t i = 0; i < n; i++) {                                                             \
			type x = v[i];                                                                            \
			if (isnan(x))                                                                             \
				continue;                                                                             \
			seen = true;                                                                              \
			lo = x < lo ? x : lo;                                                                     \
			hi = x > hi ? x : hi;                                                                     \
		}                                                                                             \
		if (seen)                                                                                     \
			MERGE_RANGE(s, member, lo, hi, LESS_SIGNED);                                              \
	}

DEFINE_FLOAT_ADD(add_float, float, f32)
DEFINE_FLOAT_ADD(add_double, double, f64)

static void add_bool(pq_chunk_stats *s, const uint8_t *v, int64_t n)
{
	uint8_t any_true = 0, all_true = 1;
	for (int64_t i = 0; i < n; i++) {
		any_true |= v[i];
		all_true &= v[i];
	}
	MERGE_RANGE(s, b, all_true, any_true, LESS_SIGNED);
}

static void set_bytes(tl_buf *dst, tl_bytes v)
{
	tl_buf_reset(dst);
	tl_buf_append(dst, v.ptr, v.len);
}

static void add_bytes(pq_chunk_stats *s, const tl_bytes *v, int64_t n)
{
	int (*compare)(const uint8_t *, size_t, const uint8_t *, size_t) =
		s->decimal_order ? pq_compare_decimal_bytes : pq_compare_unsigned_bytes;
	int64_t i = 0;
	if (!s->has_min_max) {
		set_bytes(&s->min_bytes, v[0]);
		set_bytes(&s->max_bytes, v[0]);
		s->has_min_max = true;
		i = 1;
	}
	for (; i < n; i++) {
		if (compare(v[i].ptr, v[i].len, s->min_bytes.data, s->min_bytes.len) < 0)
			set_bytes(&s->min_bytes, v[i]);
		else if (compare(v[i].ptr, v[i].len, s->max_bytes.data, s->max_bytes.len) > 0)
			set_bytes(&s->max_bytes, v[i]);
	}
}

void pq_stats_add(pq_chunk_stats *s, const void *values, int64_t n)
{
	if (n <= 0)
		return;
	switch (s->physical) {
	case TL_PQ_BOOLEAN:
		add_bool(s, values, n);
		break;
	case TL_PQ_INT32:
		add_int32(s, values, n);
		break;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		add_int64(s, values, n);
		break;
	case TL_PQ_FLOAT:
		add_float(s, values, n);
		break;
	case TL_PQ_DOUBLE:
		add_double(s, values, n);
		break;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		add_bytes(s, values, n);
		break;
	}
}

/* Statistics values are PLAIN without a length prefix: little-endian numbers, raw bytes. */
static tl_bytes copy_value(tl_arena *arena, const void *data, size_t len)
{
	return tl_arena_copy(arena, data, (uint32_t)len);
}

int pq_stats_to_thrift(const pq_chunk_stats *s, pq_statistics *out, tl_arena *arena)
{
	memset(out, 0, sizeof(*out));
	out->has_null_count = true;
	out->null_count = s->null_count;
	if (tl_buf_failed(&s->min_bytes) || tl_buf_failed(&s->max_bytes))
		return -1;
	if (!s->has_min_max)
		return 0;

	tl_bytes min, max;
	switch (s->physical) {
	case TL_PQ_BOOLEAN:
		min = copy_value(arena, &s->min.b, 1);
		max = copy_value(arena, &s->max.b, 1);
		break;
	case TL_PQ_INT32:
		min = copy_value(arena, &s->min.i32, 4);
		max = copy_value(arena, &s->max.i32, 4);
		break;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		min = copy_value(arena, &s->min.i64, 8);
		max = copy_value(arena, &s->max.i64, 8);
		break;
	case TL_PQ_FLOAT: {
		float lo = s->min.f32 == 0.0f ? -0.0f : s->min.f32;
		float hi = s->max.f32 == 0.0f ? 0.0f : s->max.f32;
		min = copy_value(arena, &lo, 4);
		max = copy_value(arena, &hi, 4);
		break;
	}
	case TL_PQ_DOUBLE: {
		double lo = s->min.f64 == 0.0 ? -0.0 : s->min.f64;
		double hi = s->max.f64 == 0.0 ? 0.0 : s->max.f64;
		min = copy_value(arena, &lo, 8);
		max = copy_value(arena, &hi, 8);
		break;
	}
	default:
		if (s->min_bytes.len > PQ_STATS_MAX_VALUE_BYTES || s->max_bytes.len > PQ_STATS_MAX_VALUE_BYTES)
			return 0;
		min = copy_value(arena, s->min_bytes.data, s->min_bytes.len);
		max = copy_value(arena, s->max_bytes.data, s->max_bytes.len);
		break;
	}
	if (min.ptr == NULL || max.ptr == NULL)
		return -1;
	out->has_min_value = out->has_max_value = true;
	out->min_value = min;
	out->max_value = max;
	return 0;
}
