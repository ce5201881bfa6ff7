/*
 * metrics.c: the column metrics a manifest keeps for a Parquet data file,
 * computed from the file's footer.
 *
 * Scan planning prunes files with these numbers, so they must never claim
 * less than the file holds: a bound is omitted whenever it cannot be
 * derived with certainty (a row group without statistics, a NaN extreme,
 * statistics in a representation we cannot convert). The rules follow
 * Java Iceberg's ParquetUtil.footerMetrics and pyiceberg's
 * data_file_statistics_from_parquet_metadata under the default metrics
 * mode "truncate(16)": strings keep 16 code points and binaries 16 bytes,
 * the upper bound rounded up so it still bounds the truncated values.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_table.h"

#define TRUNCATE_LENGTH 16

/* What the footer says about one schema field, summed over row groups. */
typedef struct field_metrics {
	const tl_ice_field *field;
	int64_t column_size;
	int64_t value_count;
	int64_t null_count;
	bool nulls_known;      /* every row group had a null count */
	bool bounds_valid;     /* no row group made the bounds unknowable */
	bool has_bounds;       /* lo and hi hold at least one row group's extremes */
	tl_ice_value lo, hi;   /* byte values view the reader's footer */
} field_metrics;

/* ---------------------------------------------------------- conversion */

static bool unsigned_int_column(const tl_pq_column *col)
{
	return col->logical == TL_PQ_LOGICAL_INT && !col->int_signed;
}

/* A 32-bit statistic as an Iceberg long, honouring unsigned logical types. */
static int64_t widen_int32(const tl_pq_column *col, int32_t v)
{
	return unsigned_int_column(col) ? (int64_t)(uint32_t)v : (int64_t)v;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/*
 * A time or timestamp statistic in microseconds. Nanoseconds round
 * outward (down for a lower bound, up for an upper) so the bound still
 * contains every value. False when the unit overflows microseconds.
 */
static bool to_micros(const tl_pq_column *col, int64_t v, bool upper, int64_t *out)
{
	switch (col->unit) {
	case TL_PQ_MILLIS:
		return !__builtin_mul_overflow(v, (int64_t)1000, out);
	case TL_PQ_MICROS:
		*out = v;
		return true;
	case TL_PQ_NANOS:
		*out = floor_div(v, 1000);
		if (upper && *out * 1000 != v)
			(*out)++;
		return true;
	}
	return false;
}

static bool decimal_from_bytes(tl_bytes b, tl_int128 *out)
{
	if (b.len == 0 || b.len > 16)
		return false;
	__extension__ unsigned __int128 u = (b.ptr[0] & 0x80) ? ~(unsigned __int128)0 : 0;
	for (uint32_t i = 0; i < b.len; i++)
		u = (u << 8) | b.ptr[i];
	*out = (tl_int128)u;
	return true;
}

/*
 * Converts one statistic of column col to the Iceberg value of `field`.
 * False when this combination of types has no trustworthy conversion; the
 * caller then drops the field's bounds.
 */
static bool stat_to_value(const tl_ice_field *field, const tl_pq_column *col,
                          const union tl_pq_stat_value *s, bool upper, tl_ice_value *out)
{
	memset(out, 0, sizeof(*out));
	const tl_ice_type *t = &field->type;
	tl_pq_physical p = col->physical;
	switch (t->id) {
	case TL_ICE_BOOLEAN:
		if (p != TL_PQ_BOOLEAN)
			return false;
		out->v.b = s->b;
		return true;
	case TL_ICE_INT:
		if (p != TL_PQ_INT32 || (unsigned_int_column(col) && col->int_bit_width >= 32))
			return false;
		out->v.i32 = s->i32;
		return true;
	case TL_ICE_LONG:
		if (p == TL_PQ_INT32) {
			out->v.i64 = widen_int32(col, s->i32);
			return true;
		}
		if (p != TL_PQ_INT64 || unsigned_int_column(col))
			return false;
		out->v.i64 = s->i64;
		return true;
	case TL_ICE_FLOAT:
		if (p != TL_PQ_FLOAT || isnan(s->f32))
			return false;
		/* Parquet: a zero extreme may stand for either zero, so widen it to cover both. */
		out->v.f32 = s->f32 == 0.0f ? (upper ? 0.0f : -0.0f) : s->f32;
		return true;
	case TL_ICE_DOUBLE:
		if (p == TL_PQ_FLOAT)
			out->v.f64 = (double)s->f32;
		else if (p == TL_PQ_DOUBLE)
			out->v.f64 = s->f64;
		else
			return false;
		if (out->v.f64 == 0.0)
			out->v.f64 = upper ? 0.0 : -0.0;
		return !isnan(out->v.f64);
	case TL_ICE_DATE:
		if (p != TL_PQ_INT32)
			return false;
		out->v.i32 = s->i32;
		return true;
	case TL_ICE_TIME:
		if (p == TL_PQ_INT32 && col->logical == TL_PQ_LOGICAL_TIME)
			return to_micros(col, s->i32, upper, &out->v.i64);
		if (p == TL_PQ_INT64 && col->logical == TL_PQ_LOGICAL_TIME)
			return to_micros(col, s->i64, upper, &out->v.i64);
		return false;
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		/* INT96 statistics have no defined order: never a bound. */
		if (p != TL_PQ_INT64 || col->logical != TL_PQ_LOGICAL_TIMESTAMP)
			return false;
		return to_micros(col, s->i64, upper, &out->v.i64);
	case TL_ICE_DECIMAL:
		if (col->logical != TL_PQ_LOGICAL_DECIMAL || col->scale != t->scale)
			return false;
		if (p == TL_PQ_INT32)
			out->v.dec = s->i32;
		else if (p == TL_PQ_INT64)
			out->v.dec = s->i64;
		else if (p == TL_PQ_FIXED_LEN_BYTE_ARRAY || p == TL_PQ_BYTE_ARRAY)
			return decimal_from_bytes(s->bytes, &out->v.dec);
		else
			return false;
		return true;
	case TL_ICE_STRING:
	case TL_ICE_BINARY:
		if (p != TL_PQ_BYTE_ARRAY && p != TL_PQ_FIXED_LEN_BYTE_ARRAY)
			return false;
		out->ptr = s->bytes.ptr;
		out->len = s->bytes.len;
		return true;
	case TL_ICE_UUID:
	case TL_ICE_FIXED:
		if (p != TL_PQ_FIXED_LEN_BYTE_ARRAY)
			return false;
		if (s->bytes.len != (t->id == TL_ICE_UUID ? 16u : (uint32_t)t->length))
			return false;
		out->ptr = s->bytes.ptr;
		out->len = s->bytes.len;
		return true;
	default:
		return false;
	}
}

/* ------------------------------------------------------------ truncation */

/* Decodes one UTF-8 code point at s[0..n); its length, or 0 if malformed. */
static int utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	if (n == 0)
		return 0;
	uint8_t c = s[0];
	int len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xE0) == 0xC0) {
		len = 2, v = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		len = 3, v = c & 0x0F, min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if ((size_t)len > n)
		return 0;
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return len;
}

/*
 * Truncates a string bound to TRUNCATE_LENGTH code points into out. A
 * lower bound is the prefix. An upper bound longer than that becomes the
 * prefix with its last code point incremented (skipping the surrogate
 * range); a code point that cannot grow (U+10FFFF) is dropped and the
 * one before it incremented instead. Returns 1 with a bound, 0 when no
 * bound exists (all U+10FFFF, or malformed UTF-8), -1 never.
 */
static int truncate_string(const tl_ice_value *v, bool upper, tl_buf *out)
{
	uint32_t cps[TRUNCATE_LENGTH];
	size_t pos = 0;
	int n = 0;
	while (pos < v->len && n < TRUNCATE_LENGTH) {
		int len = utf8_decode(v->ptr + pos, v->len - pos, &cps[n]);
		if (len == 0)
			return 0;
		pos += (size_t)len;
		n++;
	}
	if (pos == v->len || !upper) {
		tl_buf_append(out, v->ptr, pos);
		return 1;
	}
	for (int last = n - 1; last >= 0; last--) {
		uint32_t next = cps[last] + 1;
		if (next == 0xD800)
			next = 0xE000;
		if (next > 0x10FFFF)
			continue;
		for (int i = 0; i < last; i++)
			tl_buf_append_utf8(out, cps[i]);
		tl_buf_append_utf8(out, next);
		return 1;
	}
	return 0;
}

/* The same on bytes: the last byte below 0xFF is incremented, the rest dropped. */
static int truncate_binary(const tl_ice_value *v, bool upper, tl_buf *out)
{
	if (v->len <= TRUNCATE_LENGTH || !upper) {
		tl_buf_append(out, v->ptr, v->len < TRUNCATE_LENGTH ? v->len : TRUNCATE_LENGTH);
		return 1;
	}
	for (int last = TRUNCATE_LENGTH - 1; last >= 0; last--) {
		if (v->ptr[last] == 0xFF)
			continue;
		tl_buf_append(out, v->ptr, (size_t)last);
		tl_buf_append_byte(out, (uint8_t)(v->ptr[last] + 1));
		return 1;
	}
	return 0;
}

/*
 * The single-value form of a bound, truncated as the metrics mode says,
 * copied into the arena. Returns 1 with *out set, 0 when the bound must be
 * omitted, -1 on error.
 */
static int serialize_bound(const tl_ice_type *t, const tl_ice_value *v, bool upper, tl_arena *arena,
                           tl_bytes *out, tl_error *err)
{
	tl_buf buf;
	tl_buf_init(&buf);
	int rc = 1;
	if (t->id == TL_ICE_STRING)
		rc = truncate_string(v, upper, &buf);
	else if (t->id == TL_ICE_BINARY)
		rc = truncate_binary(v, upper, &buf);
	else if (tl_ice_value_serialize(t, v, &buf, err) < 0)
		rc = -1;
	if (rc == 1 && tl_buf_failed(&buf))
		rc = tl_error_nomem(err, "for a column bound");
	if (rc == 1) {
		*out = tl_arena_copy(arena, buf.data, (uint32_t)buf.len);
		if (out->ptr == NULL)
			rc = tl_error_nomem(err, "for a column bound");
	}
	tl_buf_free(&buf);
	return rc;
}

/* ------------------------------------------------------------ footer scan */

/* The schema field of a Parquet column: by field id, or by name when the file has no ids. */
static const tl_ice_field *column_field(const tl_ice_schema *schema, const tl_pq_column *col, bool by_name)
{
	const tl_ice_field *f = NULL;
	if (by_name) {
		f = tl_ice_schema_find_name(schema, col->name);
	} else if (col->field_id >= 0) {
		for (int i = 0; i < schema->nfields && f == NULL; i++)
			if (schema->fields[i].id == col->field_id)
				f = &schema->fields[i];
	}
	return f != NULL && tl_ice_type_is_primitive(f->type.id) ? f : NULL;
}

/* Folds one row group's statistics of a column into the field's bounds. */
static void add_chunk_bounds(field_metrics *m, const tl_pq_column *col, const tl_pq_chunk_info *chunk)
{
	const tl_pq_stats *st = &chunk->stats;
	if (!m->bounds_valid)
		return;
	if (!st->has_min_max) {
		/* A chunk of nulls only has no extremes; any other chunk without them hides its values. */
		if (!(st->has_null_count && st->null_count == chunk->num_values))
			m->bounds_valid = false;
		return;
	}
	tl_ice_value lo, hi;
	if (!stat_to_value(m->field, col, &st->min, false, &lo) ||
	    !stat_to_value(m->field, col, &st->max, true, &hi)) {
		m->bounds_valid = false;
		return;
	}
	const tl_ice_type *t = &m->field->type;
	if (!m->has_bounds || tl_ice_value_compare(t, &lo, &m->lo) < 0)
		m->lo = lo;
	if (!m->has_bounds || tl_ice_value_compare(t, &hi, &m->hi) > 0)
		m->hi = hi;
	m->has_bounds = true;
}

static void add_chunk(field_metrics *m, const tl_pq_column *col, const tl_pq_chunk_info *chunk)
{
	m->column_size += chunk->compressed_size;
	m->value_count += chunk->num_values;
	if (chunk->stats.has_null_count)
		m->null_count += chunk->stats.null_count;
	else
		m->nulls_known = false;
	add_chunk_bounds(m, col, chunk);
}

static bool long_map_alloc(tl_ice_long_map *map, int n, tl_arena *arena)
{
	map->n = 0;
	map->keys = tl_arena_alloc(arena, sizeof(int32_t) * (size_t)(n ? n : 1));
	map->values = tl_arena_alloc(arena, sizeof(int64_t) * (size_t)(n ? n : 1));
	return map->keys != NULL && map->values != NULL;
}

static bool bytes_map_alloc(tl_ice_bytes_map *map, int n, tl_arena *arena)
{
	map->n = 0;
	map->keys = tl_arena_alloc(arena, sizeof(int32_t) * (size_t)(n ? n : 1));
	map->values = tl_arena_alloc(arena, sizeof(tl_bytes) * (size_t)(n ? n : 1));
	return map->keys != NULL && map->values != NULL;
}

static void long_map_put(tl_ice_long_map *map, int32_t key, int64_t value)
{
	map->keys[map->n] = key;
	map->values[map->n] = value;
	map->n++;
}

static void bytes_map_put(tl_ice_bytes_map *map, int32_t key, tl_bytes value)
{
	map->keys[map->n] = key;
	map->values[map->n] = value;
	map->n++;
}

/* Writes the accumulated metrics of every mapped field into the file's maps. */
static int emit_metrics(const field_metrics *ms, int n, tl_arena *arena, tl_ice_data_file *file, tl_error *err)
{
	/* Every map is allocated (no short circuit), so a failed one is never half-set. */
	bool ok = long_map_alloc(&file->column_sizes, n, arena);
	ok &= long_map_alloc(&file->value_counts, n, arena);
	ok &= long_map_alloc(&file->null_value_counts, n, arena);
	ok &= bytes_map_alloc(&file->lower_bounds, n, arena);
	ok &= bytes_map_alloc(&file->upper_bounds, n, arena);
	memset(&file->nan_value_counts, 0, sizeof(file->nan_value_counts));
	if (!ok)
		return tl_error_nomem(err, "for column metrics");
	for (int i = 0; i < n; i++) {
		const field_metrics *m = &ms[i];
		int32_t id = m->field->id;
		long_map_put(&file->column_sizes, id, m->column_size);
		long_map_put(&file->value_counts, id, m->value_count);
		if (m->nulls_known)
			long_map_put(&file->null_value_counts, id, m->null_count);
		if (!m->bounds_valid || !m->has_bounds)
			continue;
		tl_bytes b;
		int rc = serialize_bound(&m->field->type, &m->lo, false, arena, &b, err);
		if (rc < 0)
			return -1;
		if (rc == 1)
			bytes_map_put(&file->lower_bounds, id, b);
		rc = serialize_bound(&m->field->type, &m->hi, true, arena, &b, err);
		if (rc < 0)
			return -1;
		if (rc == 1)
			bytes_map_put(&file->upper_bounds, id, b);
	}
	return 0;
}

int tl_ice_data_file_metrics(const tl_ice_schema *schema, const tl_pq_reader *r, tl_arena *arena,
                             tl_ice_data_file *file, tl_error *err)
{
	const tl_pq_schema *pq = tl_pq_reader_schema(r);
	bool by_name = true;
	for (int c = 0; c < pq->ncolumns; c++)
		if (pq->columns[c].field_id >= 0)
			by_name = false;

	/* One entry per mapped column; a field two columns claim keeps the first. */
	field_metrics *ms = tl_calloc((size_t)(pq->ncolumns ? pq->ncolumns : 1), sizeof(*ms));
	int *column_of = tl_calloc((size_t)(pq->ncolumns ? pq->ncolumns : 1), sizeof(int));
	if (ms == NULL || column_of == NULL) {
		tl_free(ms);
		tl_free(column_of);
		return tl_error_nomem(err, "for column metrics");
	}
	int n = 0;
	for (int c = 0; c < pq->ncolumns; c++) {
		const tl_ice_field *f = column_field(schema, &pq->columns[c], by_name);
		bool taken = false;
		for (int i = 0; i < n && f != NULL; i++)
			taken |= ms[i].field == f;
		if (f == NULL || taken)
			continue;
		ms[n].field = f;
		ms[n].nulls_known = true;
		ms[n].bounds_valid = true;
		column_of[n++] = c;
	}

	int ngroups = tl_pq_reader_num_row_groups(r);
	for (int g = 0; g < ngroups; g++)
		for (int i = 0; i < n; i++)
			add_chunk(&ms[i], &pq->columns[column_of[i]], tl_pq_reader_chunk(r, g, column_of[i]));

	file->record_count = tl_pq_reader_num_rows(r);
	int rc = emit_metrics(ms, n, arena, file, err);
	tl_free(ms);
	tl_free(column_of);
	return rc;
}
