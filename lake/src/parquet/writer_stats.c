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

/*
 * The PLAIN bytes (no length prefix) of s's min or max: little-endian
 * numbers, raw bytes. A zero float extreme is written as -0.0 (min) or
 * +0.0 (max). `tmp` holds a number's bytes.
 */
static tl_bytes bound_bytes(const pq_chunk_stats *s, bool max, uint8_t tmp[8])
{
	tl_bytes b = {tmp, 0};
	switch (s->physical) {
	case TL_PQ_BOOLEAN:
		tmp[0] = max ? s->max.b : s->min.b;
		b.len = 1;
		break;
	case TL_PQ_INT32:
		memcpy(tmp, max ? &s->max.i32 : &s->min.i32, 4);
		b.len = 4;
		break;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		memcpy(tmp, max ? &s->max.i64 : &s->min.i64, 8);
		b.len = 8;
		break;
	case TL_PQ_FLOAT: {
		float v = max ? s->max.f32 : s->min.f32;
		if (v == 0.0f)
			v = max ? 0.0f : -0.0f;
		memcpy(tmp, &v, 4);
		b.len = 4;
		break;
	}
	case TL_PQ_DOUBLE: {
		double v = max ? s->max.f64 : s->min.f64;
		if (v == 0.0)
			v = max ? 0.0 : -0.0;
		memcpy(tmp, &v, 8);
		b.len = 8;
		break;
	}
	default: {
		const tl_buf *src = max ? &s->max_bytes : &s->min_bytes;
		b.ptr = src->data;
		b.len = (uint32_t)src->len;
		break;
	}
	}
	return b;
}

/* Whether s has extremes the footer and the column index keep (byte arrays: not over the length limit). */
static bool has_kept_bounds(const pq_chunk_stats *s)
{
	if (!s->has_min_max)
		return false;
	if (s->physical == TL_PQ_BYTE_ARRAY || s->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY)
		return s->min_bytes.len <= PQ_STATS_MAX_VALUE_BYTES && s->max_bytes.len <= PQ_STATS_MAX_VALUE_BYTES;
	return true;
}

int pq_stats_to_thrift(const pq_chunk_stats *s, pq_statistics *out, tl_arena *arena)
{
	memset(out, 0, sizeof(*out));
	out->has_null_count = true;
	out->null_count = s->null_count;
	if (tl_buf_failed(&s->min_bytes) || tl_buf_failed(&s->max_bytes))
		return -1;
	if (!has_kept_bounds(s))
		return 0;
	uint8_t lo[8], hi[8];
	tl_bytes min = bound_bytes(s, false, lo), max = bound_bytes(s, true, hi);
	min = tl_arena_copy(arena, min.ptr, min.len);
	max = tl_arena_copy(arena, max.ptr, max.len);
	if (min.ptr == NULL || max.ptr == NULL)
		return -1;
	out->has_min_value = out->has_max_value = true;
	out->min_value = min;
	out->max_value = max;
	return 0;
}

bool pq_stats_append_bounds(const pq_chunk_stats *s, tl_buf *out, uint32_t *min_len, uint32_t *max_len)
{
	if (!has_kept_bounds(s))
		return false;
	uint8_t lo[8], hi[8];
	tl_bytes min = bound_bytes(s, false, lo), max = bound_bytes(s, true, hi);
	tl_buf_append(out, min.ptr, min.len);
	tl_buf_append(out, max.ptr, max.len);
	*min_len = min.len;
	*max_len = max.len;
	return true;
}

void pq_stats_merge(pq_chunk_stats *s, const pq_chunk_stats *from)
{
	if (!from->has_min_max)
		return;
	switch (s->physical) {
	case TL_PQ_BOOLEAN: {
		uint8_t v[2] = {from->min.b, from->max.b};
		pq_stats_add(s, v, 2);
		break;
	}
	case TL_PQ_INT32: {
		int32_t v[2] = {from->min.i32, from->max.i32};
		pq_stats_add(s, v, 2);
		break;
	}
	case TL_PQ_INT64:
	case TL_PQ_INT96: {
		int64_t v[2] = {from->min.i64, from->max.i64};
		pq_stats_add(s, v, 2);
		break;
	}
	case TL_PQ_FLOAT: {
		float v[2] = {from->min.f32, from->max.f32};
		pq_stats_add(s, v, 2);
		break;
	}
	case TL_PQ_DOUBLE: {
		double v[2] = {from->min.f64, from->max.f64};
		pq_stats_add(s, v, 2);
		break;
	}
	default: {
		tl_bytes v[2] = {{from->min_bytes.data, (uint32_t)from->min_bytes.len},
		                 {from->max_bytes.data, (uint32_t)from->max_bytes.len}};
		pq_stats_add(s, v, 2);
		break;
	}
	}
}

#define CMP3(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

int pq_stats_compare_bounds(const pq_chunk_stats *s, tl_bytes a, tl_bytes b)
{
	switch (s->physical) {
	case TL_PQ_BOOLEAN:
		return CMP3(a.ptr[0], b.ptr[0]);
	case TL_PQ_INT32: {
		int32_t x, y;
		memcpy(&x, a.ptr, 4);
		memcpy(&y, b.ptr, 4);
		return s->unsigned_order ? CMP3((uint32_t)x, (uint32_t)y) : CMP3(x, y);
	}
	case TL_PQ_INT64:
	case TL_PQ_INT96: {
		int64_t x, y;
		memcpy(&x, a.ptr, 8);
		memcpy(&y, b.ptr, 8);
		return s->unsigned_order ? CMP3((uint64_t)x, (uint64_t)y) : CMP3(x, y);
	}
	case TL_PQ_FLOAT: {
		float x, y;
		memcpy(&x, a.ptr, 4);
		memcpy(&y, b.ptr, 4);
		return CMP3(x, y);
	}
	case TL_PQ_DOUBLE: {
		double x, y;
		memcpy(&x, a.ptr, 8);
		memcpy(&y, b.ptr, 8);
		return CMP3(x, y);
	}
	default:
		return s->decimal_order ? pq_compare_decimal_bytes(a.ptr, a.len, b.ptr, b.len)
		                        : pq_compare_unsigned_bytes(a.ptr, a.len, b.ptr, b.len);
	}
}
