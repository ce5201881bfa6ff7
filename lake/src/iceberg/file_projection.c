/*
 * file_projection.c: reading an Iceberg field out of whatever Parquet
 * column a data or delete file stored it in.
 *
 * Files outlive schemas: a file written before a column was added lacks
 * it (read as the field's initial-default, else null), one written before
 * int became long stores INT32, and other engines choose their own
 * storage for timestamps (millis, nanos, legacy INT96) and decimals
 * (INT32, INT64, FIXED or BYTE_ARRAY of any width). Columns are matched
 * by Parquet field id, the only identity that survives renames; files
 * without any ids (written by tools that do not know Iceberg) are matched
 * by name instead. Every value is converted to the Parquet form
 * tl_ice_field_to_pq_column gives the table's type, so callers see one
 * representation per field.
 *
 * The same conversions turn a row group's column statistics into manifest
 * style metrics, so the scan filter's metrics evaluator can rule row
 * groups out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "iceberg/reader_internal.h"
#include "tierlake/iceberg_value.h"

/* ------------------------------------------------------------ matching */

static bool file_has_field_ids(const tl_pq_schema *s)
{
	for (int i = 0; i < s->ncolumns; i++)
		if (s->columns[i].field_id >= 0)
			return true;
	return false;
}

/* The file column holding field f: its index, -1 when absent, -2 on error. */
static int find_source(const tl_pq_schema *s, const tl_ice_field *f, bool by_name, tl_error *err)
{
	if (by_name)
		return tl_pq_schema_find(s, f->name);
	int found = -1;
	for (int i = 0; i < s->ncolumns; i++) {
		if (s->columns[i].field_id != f->id)
			continue;
		if (found >= 0) {
			tl_error_set(err, TL_ERR_CORRUPT, "columns \"%s\" and \"%s\" both carry field id %d",
			             s->columns[found].name, s->columns[i].name, f->id);
			return -2;
		}
		found = i;
	}
	return found;
}

/* ---------------------------------------------------- type compatibility */

static bool is_int32_source(const tl_pq_column *src)
{
	if (src->physical != TL_PQ_INT32)
		return false;
	if (src->logical == TL_PQ_LOGICAL_NONE)
		return true;
	return src->logical == TL_PQ_LOGICAL_INT && (src->int_signed || src->int_bit_width < 32);
}

static bool is_int64_source(const tl_pq_column *src)
{
	if (src->physical != TL_PQ_INT64)
		return false;
	if (src->logical == TL_PQ_LOGICAL_NONE)
		return true;
	return src->logical == TL_PQ_LOGICAL_INT && src->int_signed;
}

static bool is_uint32_source(const tl_pq_column *src)
{
	return src->physical == TL_PQ_INT32 && src->logical == TL_PQ_LOGICAL_INT && !src->int_signed &&
	       src->int_bit_width == 32;
}

/* Unit scaling to microseconds for a TIME or TIMESTAMP column. */
static void set_micros_scaling(ice_fp_column *c, const tl_pq_column *src)
{
	c->mul = 1;
	c->div = 1;
	if (src->logical == TL_PQ_LOGICAL_NONE)
		return; /* plain integers under a time type are taken as micros */
	if (src->unit == TL_PQ_MILLIS)
		c->mul = 1000;
	else if (src->unit == TL_PQ_NANOS)
		c->div = 1000;
}

static bool plan_time(ice_fp_column *c, const tl_pq_column *src)
{
	bool ok = (src->physical == TL_PQ_INT32 && src->logical == TL_PQ_LOGICAL_TIME && src->unit == TL_PQ_MILLIS) ||
	          (src->physical == TL_PQ_INT64 && src->logical == TL_PQ_LOGICAL_TIME && src->unit != TL_PQ_MILLIS) ||
	          is_int64_source(src);
	if (ok) {
		c->conv = ICE_CONV_INTEGER;
		set_micros_scaling(c, src);
	}
	return ok;
}

static bool plan_timestamp(ice_fp_column *c, const tl_pq_column *src)
{
	bool ok = ((src->physical == TL_PQ_INT64 || src->physical == TL_PQ_INT96) &&
	           src->logical == TL_PQ_LOGICAL_TIMESTAMP) ||
	          is_int64_source(src);
	if (ok) {
		c->conv = ICE_CONV_INTEGER;
		set_micros_scaling(c, src);
	}
	return ok;
}

static bool plan_decimal(ice_fp_column *c, const tl_pq_column *src)
{
	const tl_ice_type *t = &c->field->type;
	if (src->logical != TL_PQ_LOGICAL_DECIMAL || src->scale != t->scale || src->precision > t->precision)
		return false;
	switch (src->physical) {
	case TL_PQ_INT32:
	case TL_PQ_INT64:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
	case TL_PQ_BYTE_ARRAY:
		c->conv = ICE_CONV_DECIMAL;
		return true;
	default:
		return false;
	}
}

/* Chooses how src's values become the field's; false when they cannot. */
static bool plan_conversion(ice_fp_column *c, const tl_pq_column *src)
{
	const tl_ice_type *t = &c->field->type;
	c->mul = 1;
	c->div = 1;
	c->source_physical = src->physical;
	switch (t->id) {
	case TL_ICE_BOOLEAN:
		c->conv = ICE_CONV_BOOLEAN;
		return src->physical == TL_PQ_BOOLEAN;
	case TL_ICE_INT:
		c->conv = ICE_CONV_INTEGER;
		return is_int32_source(src);
	case TL_ICE_LONG:
		c->conv = is_uint32_source(src) ? ICE_CONV_UINT32 : ICE_CONV_INTEGER;
		return is_int32_source(src) || is_int64_source(src) || is_uint32_source(src);
	case TL_ICE_DATE:
		c->conv = ICE_CONV_INTEGER;
		return src->physical == TL_PQ_INT32 &&
		       (src->logical == TL_PQ_LOGICAL_DATE || src->logical == TL_PQ_LOGICAL_NONE);
	case TL_ICE_FLOAT:
		c->conv = ICE_CONV_FLOAT;
		return src->physical == TL_PQ_FLOAT;
	case TL_ICE_DOUBLE:
		c->conv = ICE_CONV_TO_DOUBLE;
		return src->physical == TL_PQ_FLOAT || src->physical == TL_PQ_DOUBLE;
	case TL_ICE_DECIMAL:
		return plan_decimal(c, src);
	case TL_ICE_TIME:
		return plan_time(c, src);
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		return plan_timestamp(c, src);
	case TL_ICE_STRING:
		c->conv = ICE_CONV_BYTES;
		return src->physical == TL_PQ_BYTE_ARRAY && src->logical != TL_PQ_LOGICAL_DECIMAL;
	case TL_ICE_BINARY:
		c->conv = ICE_CONV_BYTES;
		return (src->physical == TL_PQ_BYTE_ARRAY || src->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) &&
		       src->logical != TL_PQ_LOGICAL_DECIMAL;
	case TL_ICE_UUID:
		c->conv = ICE_CONV_BYTES;
		return src->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY && src->type_length == 16;
	case TL_ICE_FIXED:
		c->conv = ICE_CONV_BYTES;
		return src->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY && src->type_length == t->length;
	default:
		return false;
	}
}

/* Writes x as `width` (at most 16) big-endian two's complement bytes. */
static void int_to_be(tl_int128 x, uint8_t *dst, int width)
{
	unsigned __int128 u = (unsigned __int128)x;
	for (int k = width - 1; k >= 0; k--) {
		dst[k] = (uint8_t)(u & 0xFF);
		/* Arithmetic shift by hand: the sign keeps filling the high bytes. */
		u = (u >> 8) | (x < 0 ? (unsigned __int128)0xFF << 120 : 0);
	}
}

/* c's constant: bytes copied into storage c owns; false when out of memory. */
static bool set_constant_bytes(ice_fp_column *c, const uint8_t *bytes, size_t len)
{
	c->constant_bytes = tl_malloc(len + 1);
	if (c->constant_bytes == NULL)
		return false;
	if (len > 0)
		memcpy(c->constant_bytes, bytes, len);
	c->constant.bytes.ptr = c->constant_bytes;
	c->constant.bytes.len = (uint32_t)len;
	return true;
}

/* c's constant: v, a value of c's field, in the table's Parquet form (the inverse of to_ice_value). */
/* False when out of memory. */
static bool set_constant(ice_fp_column *c, const tl_ice_value *v)
{
	ice_value *k = &c->constant;
	memset(k, 0, sizeof(*k));
	switch (c->field->type.id) {
	case TL_ICE_BOOLEAN:
		k->i = v->v.b;
		break;
	case TL_ICE_INT:
	case TL_ICE_DATE:
		k->i = v->v.i32;
		break;
	case TL_ICE_FLOAT:
		k->f32 = v->v.f32;
		break;
	case TL_ICE_DOUBLE:
		k->f64 = v->v.f64;
		break;
	case TL_ICE_DECIMAL:
		if (c->out.physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) {
			uint8_t be[16];
			int_to_be(v->v.dec, be, c->out.type_length);
			return set_constant_bytes(c, be, (size_t)c->out.type_length);
		} else {
			k->i = (int64_t)v->v.dec; /* the precision keeps it within the storage */
		}
		break;
	case TL_ICE_STRING:
	case TL_ICE_BINARY:
	case TL_ICE_FIXED:
	case TL_ICE_UUID:
		return set_constant_bytes(c, v->ptr, v->len);
	default:
		k->i = v->v.i64; /* LONG, TIME, TIMESTAMP, TIMESTAMPTZ */
		break;
	}
	return true;
}

/*
 * Plans a field the file lacks that has an initial-default: every row
 * reads that value (Iceberg's rule for files written before the field was
 * added).
 */
static int plan_initial_default(ice_fp_column *c, tl_error *err)
{
	const tl_ice_field *f = c->field;
	tl_arena arena;
	tl_arena_init(&arena, 256);
	tl_ice_value v;
	int rc = tl_ice_value_from_json(&f->type, f->initial_default, &arena, &v, err);
	if (rc == 0) {
		c->conv = ICE_CONV_CONSTANT;
		if (!set_constant(c, &v))
			rc = tl_error_nomem(err, "for the initial-default of field \"%s\"", f->name);
	} else if (err != NULL) {
		if (err->code != TL_ERR_NOMEM)
			err->code = TL_ERR_CORRUPT; /* the table's metadata, not the caller, is wrong */
		tl_error_prefix(err, "the initial-default of field \"%s\" (id %d)", f->name, (int)f->id);
	}
	tl_arena_free(&arena);
	return rc;
}

static int mismatch(const ice_fp_column *c, const tl_pq_column *src, tl_error *err)
{
	tl_buf stored, wanted;
	tl_buf_init(&stored);
	tl_buf_init(&wanted);
	tl_pq_column_type_text(src, &stored);
	tl_buf_append_byte(&stored, 0);
	tl_ice_type_text(&c->field->type, &wanted);
	tl_buf_append_byte(&wanted, 0);
	tl_error_set(err, TL_ERR_UNSUPPORTED, "column \"%s\" is stored as %s, which does not read as field \"%s\" (id %d) of type %s",
	             src->name, (const char *)stored.data, c->field->name, c->field->id, (const char *)wanted.data);
	tl_buf_free(&stored);
	tl_buf_free(&wanted);
	return -1;
}

/* Fills c for field f against the file schema; *source is the file column or -1. */
static int plan_column(ice_fp_column *c, const tl_ice_field *f, const tl_pq_schema *file, bool by_name,
                       int *source, tl_error *err)
{
	memset(c, 0, sizeof(*c));
	c->field = f;
	c->source = -1;
	if (tl_ice_field_to_pq_column(f, &c->out, err) < 0)
		return -1;
	int s = find_source(file, f, by_name, err);
	if (s == -2)
		return -1;
	*source = s;
	if (s < 0) {
		if (f->initial_default != NULL)
			return plan_initial_default(c, err);
		if (f->required)
			return tl_error_set(err, TL_ERR_CORRUPT, "the file has no column for required field \"%s\" (id %d)",
			                    f->name, f->id);
		c->conv = ICE_CONV_MISSING;
		return 0;
	}
	if (!plan_conversion(c, &file->columns[s]))
		return mismatch(c, &file->columns[s], err);
	return 0;
}

int ice_fp_init(ice_file_projection *fp, tl_pq_reader *pq, const tl_ice_field *const *fields, int nfields,
                tl_error *err)
{
	const tl_pq_schema *file = tl_pq_reader_schema(pq);
	bool by_name = !file_has_field_ids(file);
	memset(fp, 0, sizeof(*fp));
	fp->ncolumns = nfields;
	fp->columns = tl_calloc((size_t)(nfields ? nfields : 1), sizeof(ice_fp_column));
	fp->projection = tl_malloc(sizeof(int) * (size_t)(nfields ? nfields : 1));
	if (fp->columns == NULL || fp->projection == NULL) {
		fp->ncolumns = 0;
		tl_error_nomem(err, "projecting a file's columns");
		goto fail;
	}
	for (int i = 0; i < nfields; i++) {
		int s = -1;
		if (plan_column(&fp->columns[i], fields[i], file, by_name, &s, err) < 0)
			goto fail;
		if (s < 0)
			continue;
		int slot = 0;
		while (slot < fp->nprojection && fp->projection[slot] != s)
			slot++;
		if (slot == fp->nprojection)
			fp->projection[fp->nprojection++] = s;
		fp->columns[i].source = slot;
	}
	if (ice_fp_project(fp, pq, err) < 0)
		goto fail;
	return 0;
fail:
	ice_fp_free(fp);
	return -1;
}

int ice_fp_project(const ice_file_projection *fp, tl_pq_reader *pq, tl_error *err)
{
	return tl_pq_reader_project(pq, fp->projection, fp->nprojection, err);
}

void ice_fp_free(ice_file_projection *fp)
{
	for (int i = 0; fp->columns != NULL && i < fp->ncolumns; i++)
		tl_free(fp->columns[i].constant_bytes);
	tl_free(fp->columns);
	tl_free(fp->projection);
	memset(fp, 0, sizeof(*fp));
}

/* ------------------------------------------------------------ converting */

static int out_of_range(const ice_fp_column *c, tl_error *err)
{
	return tl_error_set(err, TL_ERR_CORRUPT, "a value of field \"%s\" (id %d) is out of range for its type",
	                    c->field->name, c->field->id);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if (a % b != 0 && a < 0)
		q--;
	return q;
}

static int read_integer(const ice_fp_column *c, const tl_vector *v, int64_t row, ice_value *out, tl_error *err)
{
	int64_t raw = c->source_physical == TL_PQ_INT32 ? (int64_t)v->v.i32[row] : v->v.i64[row];
	if (c->mul != 1 && __builtin_mul_overflow(raw, c->mul, &raw))
		return out_of_range(c, err);
	if (c->div != 1)
		raw = floor_div(raw, c->div);
	out->i = raw;
	return 0;
}

/* Drops leading bytes that only repeat the sign of a big-endian two's complement number. */
static tl_bytes strip_sign_bytes(tl_bytes b)
{
	while (b.len > 1 && ((b.ptr[0] == 0x00 && !(b.ptr[1] & 0x80)) || (b.ptr[0] == 0xFF && (b.ptr[1] & 0x80)))) {
		b.ptr++;
		b.len--;
	}
	return b;
}

static int64_t be_to_int64(tl_bytes b)
{
	uint64_t u = (b.len > 0 && (b.ptr[0] & 0x80)) ? UINT64_MAX : 0;
	for (uint32_t k = 0; k < b.len; k++)
		u = (u << 8) | b.ptr[k];
	return (int64_t)u;
}

static int read_decimal(const ice_fp_column *c, const tl_vector *v, int64_t row, ice_value *out, tl_error *err)
{
	const tl_pq_column *o = &c->out;
	int64_t unscaled = 0;
	tl_bytes b = {0};
	bool from_bytes = c->source_physical == TL_PQ_BYTE_ARRAY || c->source_physical == TL_PQ_FIXED_LEN_BYTE_ARRAY;
	if (from_bytes) {
		b = v->v.bytes[row];
		if (b.len == 0)
			return tl_error_set(err, TL_ERR_CORRUPT, "field \"%s\" (id %d) has an empty decimal value",
			                    c->field->name, c->field->id);
		b = strip_sign_bytes(b);
	} else {
		unscaled = c->source_physical == TL_PQ_INT32 ? (int64_t)v->v.i32[row] : v->v.i64[row];
	}
	if (o->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) {
		int width = o->type_length;
		if (!from_bytes) {
			int_to_be(unscaled, out->scratch, width);
		} else {
			if (b.len > (uint32_t)width)
				return out_of_range(c, err);
			memset(out->scratch, (b.ptr[0] & 0x80) ? 0xFF : 0x00, (size_t)width - b.len);
			memcpy(out->scratch + width - b.len, b.ptr, b.len);
		}
		out->bytes.ptr = out->scratch;
		out->bytes.len = (uint32_t)width;
		return 0;
	}
	if (from_bytes) {
		if (b.len > 8)
			return out_of_range(c, err);
		unscaled = be_to_int64(b);
	}
	if (o->physical == TL_PQ_INT32 && (unscaled < INT32_MIN || unscaled > INT32_MAX))
		return out_of_range(c, err);
	out->i = unscaled;
	return 0;
}

int ice_fp_read(const ice_fp_column *c, const tl_pq_batch *src, int64_t row, ice_value *out, tl_error *err)
{
	out->null = false;
	if (c->conv == ICE_CONV_MISSING) {
		out->null = true;
		return 0;
	}
	if (c->conv == ICE_CONV_CONSTANT) {
		*out = c->constant;
		return 0;
	}
	const tl_vector *v = &src->columns[c->source];
	if (tl_vector_is_null(v, row)) {
		if (c->field->required)
			return tl_error_set(err, TL_ERR_CORRUPT, "required field \"%s\" (id %d) holds a null",
			                    c->field->name, c->field->id);
		out->null = true;
		return 0;
	}
	switch (c->conv) {
	case ICE_CONV_BOOLEAN:
		out->i = v->v.b[row] != 0;
		return 0;
	case ICE_CONV_INTEGER:
		return read_integer(c, v, row, out, err);
	case ICE_CONV_UINT32:
		out->i = (int64_t)(uint32_t)v->v.i32[row];
		return 0;
	case ICE_CONV_FLOAT:
		out->f32 = v->v.f32[row];
		return 0;
	case ICE_CONV_TO_DOUBLE:
		out->f64 = c->source_physical == TL_PQ_FLOAT ? (double)v->v.f32[row] : v->v.f64[row];
		return 0;
	case ICE_CONV_BYTES:
		out->bytes = v->v.bytes[row];
		return 0;
	case ICE_CONV_DECIMAL:
		return read_decimal(c, v, row, out, err);
	case ICE_CONV_MISSING:
	case ICE_CONV_CONSTANT:
		break;
	}
	return tl_error_set(err, TL_ERR_INVALID, "field \"%s\": no conversion chosen", c->field->name);
}

bool ice_value_store(const tl_pq_column *col, const ice_value *v, tl_vector *dst, int64_t row, tl_arena *arena)
{
	if (dst->valid != NULL)
		dst->valid[row] = v->null ? 0 : 1;
	bool null = v->null;
	switch (col->physical) {
	case TL_PQ_BOOLEAN:
		dst->v.b[row] = null ? 0 : (uint8_t)v->i;
		break;
	case TL_PQ_INT32:
		dst->v.i32[row] = null ? 0 : (int32_t)v->i;
		break;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		dst->v.i64[row] = null ? 0 : v->i;
		break;
	case TL_PQ_FLOAT:
		dst->v.f32[row] = null ? 0 : v->f32;
		break;
	case TL_PQ_DOUBLE:
		dst->v.f64[row] = null ? 0 : v->f64;
		break;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		if (null)
			dst->v.bytes[row] = (tl_bytes){NULL, 0};
		else if (v->bytes.ptr == v->scratch) {
			dst->v.bytes[row] = tl_arena_copy(arena, v->scratch, v->bytes.len);
			if (dst->v.bytes[row].ptr == NULL)
				return false;
		} else
			dst->v.bytes[row] = v->bytes;
		break;
	}
	return true;
}

static void append_le(tl_buf *key, uint64_t x, int nbytes)
{
	uint8_t *p = tl_buf_extend(key, (size_t)nbytes);
	if (p == NULL)
		return; /* key is failed; the caller checks it */
	for (int k = 0; k < nbytes; k++)
		p[k] = (uint8_t)(x >> (8 * k));
}

void ice_value_key(const tl_pq_column *col, const ice_value *v, tl_buf *key)
{
	tl_buf_append_byte(key, v->null ? 0 : 1);
	if (v->null)
		return;
	switch (col->physical) {
	case TL_PQ_BOOLEAN:
		tl_buf_append_byte(key, (uint8_t)v->i);
		break;
	case TL_PQ_INT32:
		append_le(key, (uint32_t)(int32_t)v->i, 4);
		break;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		append_le(key, (uint64_t)v->i, 8);
		break;
	case TL_PQ_FLOAT: {
		/* Bit patterns, as Java's Float.equals compares, with every NaN alike. */
		uint32_t bits;
		float f = isnan(v->f32) ? NAN : v->f32;
		memcpy(&bits, &f, sizeof(bits));
		append_le(key, bits, 4);
		break;
	}
	case TL_PQ_DOUBLE: {
		uint64_t bits;
		double d = isnan(v->f64) ? (double)NAN : v->f64;
		memcpy(&bits, &d, sizeof(bits));
		append_le(key, bits, 8);
		break;
	}
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		append_le(key, v->bytes.len, 4);
		if (v->bytes.len > 0)
			tl_buf_append(key, v->bytes.ptr, v->bytes.len);
		break;
	}
}

/* ----------------------------------------------- row-group statistics */

/* A filter column matched in the file, for reading its statistics. */
typedef struct stats_column {
	ice_fp_column col;    /* col.source is 0: the one column of a fake batch */
	int file_column;
} stats_column;

/* Adds the top-level primitive fields the filter names, each once. */
static void collect_filter_fields(const tl_ice_expr *e, const tl_ice_schema *schema, const tl_ice_field **out,
                                  int *n)
{
	if (e == NULL)
		return;
	if (e->op == TL_ICE_EXPR_AND || e->op == TL_ICE_EXPR_OR) {
		collect_filter_fields(e->left, schema, out, n);
		collect_filter_fields(e->right, schema, out, n);
		return;
	}
	if (e->op == TL_ICE_EXPR_TRUE || e->op == TL_ICE_EXPR_FALSE)
		return;
	for (int i = 0; i < schema->nfields; i++) {
		const tl_ice_field *f = &schema->fields[i];
		if (f->id != e->field_id || !tl_ice_type_is_primitive(f->type.id))
			continue;
		for (int k = 0; k < *n; k++)
			if (out[k] == f)
				return;
		out[(*n)++] = f;
		return;
	}
}

/* The filter's fields the file stores in a convertible form. */
static int map_stats_columns(const tl_pq_reader *pq, const tl_ice_schema *schema, const tl_ice_expr *filter,
                             stats_column *out)
{
	const tl_ice_field **fields = tl_malloc(sizeof(*fields) * (size_t)(schema->nfields ? schema->nfields : 1));
	if (fields == NULL)
		return 0; /* no statistics to prune by: every row group is read */
	int nfields = 0, n = 0;
	collect_filter_fields(filter, schema, fields, &nfields);
	const tl_pq_schema *file = tl_pq_reader_schema(pq);
	bool by_name = !file_has_field_ids(file);
	for (int i = 0; i < nfields; i++) {
		tl_error ignored;
		tl_error_clear(&ignored);
		int s = find_source(file, fields[i], by_name, &ignored);
		stats_column *sc = &out[n];
		memset(sc, 0, sizeof(*sc));
		sc->col.field = fields[i];
		if (s < 0 || tl_ice_field_to_pq_column(fields[i], &sc->col.out, &ignored) < 0 ||
		    !plan_conversion(&sc->col, &file->columns[s]) || sc->col.source_physical == TL_PQ_INT96)
			continue;
		sc->file_column = s;
		n++;
	}
	tl_free(fields);
	return n;
}

/* The table-typed value of v, read through column c's conversion. */
static tl_ice_value to_ice_value(const ice_fp_column *c, const ice_value *v)
{
	tl_ice_value out;
	memset(&out, 0, sizeof(out));
	switch (c->field->type.id) {
	case TL_ICE_BOOLEAN:
		out.v.b = v->i != 0;
		break;
	case TL_ICE_INT:
	case TL_ICE_DATE:
		out.v.i32 = (int32_t)v->i;
		break;
	case TL_ICE_FLOAT:
		out.v.f32 = v->f32;
		break;
	case TL_ICE_DOUBLE:
		out.v.f64 = v->f64;
		break;
	case TL_ICE_DECIMAL:
		if (c->out.physical != TL_PQ_FIXED_LEN_BYTE_ARRAY) {
			out.v.dec = v->i;
		} else {
			tl_int128 x = (v->bytes.len > 0 && (v->bytes.ptr[0] & 0x80)) ? -1 : 0;
			for (uint32_t k = 0; k < v->bytes.len; k++)
				x = (tl_int128)(((unsigned __int128)x << 8) | v->bytes.ptr[k]);
			out.v.dec = x;
		}
		break;
	case TL_ICE_STRING:
	case TL_ICE_BINARY:
	case TL_ICE_FIXED:
	case TL_ICE_UUID:
		out.ptr = v->bytes.ptr;
		out.len = v->bytes.len;
		break;
	default:
		out.v.i64 = v->i; /* LONG, TIME, TIMESTAMP, TIMESTAMPTZ */
		break;
	}
	return out;
}

/* A statistic as a single-value bound in the arena; false when it does not convert. */
static bool stat_to_bound(const stats_column *sc, union tl_pq_stat_value stat, tl_arena *arena, tl_bytes *bound)
{
	tl_vector vec;
	memset(&vec, 0, sizeof(vec));
	uint8_t b = 0;
	switch (sc->col.source_physical) {
	case TL_PQ_BOOLEAN:
		b = stat.b;
		vec.v.b = &b;
		break;
	case TL_PQ_INT32: vec.v.i32 = &stat.i32; break;
	case TL_PQ_INT64: vec.v.i64 = &stat.i64; break;
	case TL_PQ_FLOAT: vec.v.f32 = &stat.f32; break;
	case TL_PQ_DOUBLE: vec.v.f64 = &stat.f64; break;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY: vec.v.bytes = &stat.bytes; break;
	default: return false;
	}
	tl_pq_batch batch;
	memset(&batch, 0, sizeof(batch));
	batch.ncolumns = 1;
	batch.nrows = 1;
	batch.columns = &vec;
	ice_value v;
	tl_error err;
	tl_error_clear(&err);
	if (ice_fp_read(&sc->col, &batch, 0, &v, &err) < 0)
		return false;
	tl_ice_value iv = to_ice_value(&sc->col, &v);
	tl_buf out;
	tl_buf_init(&out);
	bool ok = tl_ice_value_serialize(&sc->col.field->type, &iv, &out, &err) == 0 && out.len <= UINT32_MAX;
	if (ok)
		*bound = tl_arena_copy(arena, out.data, (uint32_t)out.len);
	tl_buf_free(&out);
	return ok && bound->ptr != NULL;
}

/*
 * Whether the data file's metrics count no NaN in field `id`. Parquet's
 * statistics do not count NaNs, so a row group's or page's bounds alone
 * could never rule out `x > c` (a NaN is above every number in Postgres'
 * and Java's order); the file's count, zero, holds for each of its parts.
 */
static bool file_has_no_nans(const tl_ice_data_file *file, int32_t id)
{
	if (file == NULL)
		return false;
	for (uint32_t i = 0; i < file->nan_value_counts.n; i++)
		if (file->nan_value_counts.keys[i] == id)
			return file->nan_value_counts.values[i] == 0;
	return false;
}

/*
 * Row group g's statistics as a data file's metrics, allocated in arena.
 * False when out of memory: pruning is an optimisation, so the caller then
 * reads the row group.
 */
static bool row_group_metrics(const tl_pq_reader *pq, int g, const stats_column *cols, int n,
                              const tl_ice_data_file *file, tl_arena *arena, tl_ice_data_file *df)
{
	memset(df, 0, sizeof(*df));
	df->record_count = tl_pq_reader_row_group_rows(pq, g);
	size_t count = (size_t)(n ? n : 1);
	tl_ice_long_map *maps[3] = {&df->value_counts, &df->null_value_counts, &df->nan_value_counts};
	for (int m = 0; m < 3; m++) {
		maps[m]->keys = tl_arena_alloc(arena, count * sizeof(int32_t));
		maps[m]->values = tl_arena_alloc(arena, count * sizeof(int64_t));
	}
	tl_ice_bytes_map *bounds[2] = {&df->lower_bounds, &df->upper_bounds};
	for (int m = 0; m < 2; m++) {
		bounds[m]->keys = tl_arena_alloc(arena, count * sizeof(int32_t));
		bounds[m]->values = tl_arena_alloc(arena, count * sizeof(tl_bytes));
	}
	for (int m = 0; m < 2; m++)
		if (bounds[m]->keys == NULL || bounds[m]->values == NULL)
			return false;
	for (int m = 0; m < 3; m++)
		if (maps[m]->keys == NULL || maps[m]->values == NULL)
			return false;
	for (int i = 0; i < n; i++) {
		const tl_pq_chunk_info *chunk = tl_pq_reader_chunk(pq, g, cols[i].file_column);
		int32_t id = cols[i].col.field->id;
		if (chunk == NULL)
			continue;
		df->value_counts.keys[df->value_counts.n] = id;
		df->value_counts.values[df->value_counts.n++] = chunk->num_values;
		if (chunk->stats.has_null_count) {
			df->null_value_counts.keys[df->null_value_counts.n] = id;
			df->null_value_counts.values[df->null_value_counts.n++] = chunk->stats.null_count;
		}
		if (file_has_no_nans(file, id)) {
			df->nan_value_counts.keys[df->nan_value_counts.n] = id;
			df->nan_value_counts.values[df->nan_value_counts.n++] = 0;
		}
		tl_bytes lo, hi;
		if (chunk->stats.has_min_max && stat_to_bound(&cols[i], chunk->stats.min, arena, &lo) &&
		    stat_to_bound(&cols[i], chunk->stats.max, arena, &hi)) {
			df->lower_bounds.keys[df->lower_bounds.n] = id;
			df->lower_bounds.values[df->lower_bounds.n++] = lo;
			df->upper_bounds.keys[df->upper_bounds.n] = id;
			df->upper_bounds.values[df->upper_bounds.n++] = hi;
		}
	}
	return true;
}

int ice_row_groups_to_read(const tl_pq_reader *pq, const tl_ice_data_file *file, const tl_ice_schema *schema,
                           const tl_ice_expr *filter, bool *keep)
{
	int ngroups = tl_pq_reader_num_row_groups(pq);
	for (int g = 0; g < ngroups; g++)
		keep[g] = tl_pq_reader_row_group_rows(pq, g) > 0;
	if (filter == NULL)
		return 0;
	stats_column *cols = tl_malloc(sizeof(*cols) * (size_t)(schema->nfields ? schema->nfields : 1));
	if (cols == NULL)
		return 0; /* read every row group: pruning is an optimisation */
	int n = map_stats_columns(pq, schema, filter, cols);
	int skipped = 0;
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	for (int g = 0; g < ngroups; g++) {
		if (!keep[g])
			continue;
		tl_ice_data_file df;
		tl_arena_reset(&arena);
		if (!row_group_metrics(pq, g, cols, n, file, &arena, &df))
			continue;
		if (!tl_ice_expr_may_match_metrics(filter, schema, &df)) {
			keep[g] = false;
			skipped++;
		}
	}
	tl_arena_free(&arena);
	tl_free(cols);
	return skipped;
}

/* ------------------------------------------------------- error naming */

void ice_error_name_file(tl_error *err, const char *what, const char *path)
{
	if (err == NULL)
		return;
	/* Lower layers often start with the path already; say it once. */
	size_t n = strlen(path);
	if (strncmp(err->message, path, n) == 0 && strncmp(err->message + n, ": ", 2) == 0)
		memmove(err->message, err->message + n + 2, strlen(err->message + n + 2) + 1);
	tl_error_prefix(err, "reading %s %s", what, path);
}

/* ----------------------------------------------------------- opening */

int ice_fp_open_file(const char *path, const char *file_format, const tl_ice_field *const *fields, int nfields,
                     tl_input **in, tl_pq_reader **pq, ice_file_projection *fp, tl_error *err)
{
	*in = NULL;
	*pq = NULL;
	if (file_format == NULL || strcasecmp(file_format, "PARQUET") != 0)
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "file format %s is not supported; only PARQUET files are read",
		                    file_format ? file_format : "(none)");
	*in = tl_input_open_uri(path, err);
	if (*in == NULL)
		return -1;
	*pq = tl_pq_reader_open(*in, err);
	if (*pq == NULL || ice_fp_init(fp, *pq, fields, nfields, err) < 0) {
		tl_pq_reader_free(*pq);
		tl_input_close(*in);
		*pq = NULL;
		*in = NULL;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------- page ranges */

/* A set of row ranges of one row group, sorted and disjoint (malloc'd). */
typedef struct row_set {
	tl_pq_row_range *ranges;
	int n;
	bool failed;          /* out of memory: the caller reads every row */
} row_set;

static void row_set_add(row_set *s, int64_t start, int64_t end)
{
	if (s->failed || start >= end)
		return;
	if (s->n > 0 && s->ranges[s->n - 1].end >= start) {
		if (end > s->ranges[s->n - 1].end)
			s->ranges[s->n - 1].end = end;
		return;
	}
	/* Doubling at powers of two keeps appends amortised without a capacity field. */
	if ((s->n & (s->n - 1)) == 0) {
		tl_pq_row_range *grown = tl_realloc(s->ranges, sizeof(*grown) * (size_t)(s->n ? 2 * s->n : 1));
		if (grown == NULL) {
			s->failed = true;
			return;
		}
		s->ranges = grown;
	}
	s->ranges[s->n].start = start;
	s->ranges[s->n].end = end;
	s->n++;
}

static row_set row_set_all(int64_t rows)
{
	row_set s = {NULL, 0, false};
	row_set_add(&s, 0, rows);
	return s;
}

static row_set row_set_combine(row_set a, row_set b, bool intersect)
{
	row_set out = {NULL, 0, a.failed || b.failed};
	int i = 0, k = 0;
	if (intersect) {
		while (i < a.n && k < b.n) {
			int64_t start = a.ranges[i].start > b.ranges[k].start ? a.ranges[i].start : b.ranges[k].start;
			int64_t end = a.ranges[i].end < b.ranges[k].end ? a.ranges[i].end : b.ranges[k].end;
			row_set_add(&out, start, end);
			if (a.ranges[i].end < b.ranges[k].end)
				i++;
			else
				k++;
		}
	} else {
		while (i < a.n || k < b.n) {
			bool take_a = k >= b.n || (i < a.n && a.ranges[i].start <= b.ranges[k].start);
			const tl_pq_row_range *r = take_a ? &a.ranges[i++] : &b.ranges[k++];
			row_set_add(&out, r->start, r->end);
		}
	}
	tl_free(a.ranges);
	tl_free(b.ranges);
	return out;
}

/* What page_ranges needs about the file and row group. */
typedef struct page_ctx {
	tl_pq_reader *pq;
	const tl_ice_data_file *file;   /* its metrics (NaN counts), or NULL */
	int row_group;
	int64_t rows;
	const tl_ice_schema *schema;
	const stats_column *cols;
	int ncols;
	tl_arena arena;
} page_ctx;

/* One page's statistics as a one-column data file's metrics. */
static bool page_metrics(page_ctx *c, const stats_column *sc, const tl_pq_page_info *page, tl_ice_data_file *df)
{
	int32_t id = sc->col.field->id;
	memset(df, 0, sizeof(*df));
	df->record_count = page->rows;
	int32_t *ids = tl_arena_alloc(&c->arena, 3 * sizeof(int32_t));
	int64_t *counts = tl_arena_alloc(&c->arena, 3 * sizeof(int64_t));
	tl_bytes *bounds = tl_arena_alloc(&c->arena, 2 * sizeof(tl_bytes));
	if (ids == NULL || counts == NULL || bounds == NULL)
		return false;
	ids[0] = ids[1] = ids[2] = id;
	counts[0] = page->rows;
	if (file_has_no_nans(c->file, id)) {
		counts[2] = 0;
		df->nan_value_counts = (tl_ice_long_map){.n = 1, .keys = &ids[2], .values = &counts[2]};
	}
	df->value_counts = (tl_ice_long_map){.n = 1, .keys = &ids[0], .values = &counts[0]};
	if (page->stats.has_null_count) {
		counts[1] = page->stats.null_count;
		df->null_value_counts = (tl_ice_long_map){.n = 1, .keys = &ids[1], .values = &counts[1]};
	}
	if (page->stats.has_min_max && stat_to_bound(sc, page->stats.min, &c->arena, &bounds[0]) &&
	    stat_to_bound(sc, page->stats.max, &c->arena, &bounds[1])) {
		df->lower_bounds = (tl_ice_bytes_map){.n = 1, .keys = &ids[0], .values = &bounds[0]};
		df->upper_bounds = (tl_ice_bytes_map){.n = 1, .keys = &ids[1], .values = &bounds[1]};
	}
	return true;
}

/*
 * The rows of the row group a predicate may match: the pages of its
 * column whose statistics, judged as a file's metrics are, may hold a
 * match. Every row when the column has no page index.
 */
static row_set predicate_rows(page_ctx *c, const tl_ice_expr *pred)
{
	const stats_column *sc = NULL;
	for (int i = 0; i < c->ncols && sc == NULL; i++)
		if (c->cols[i].col.field->id == pred->field_id)
			sc = &c->cols[i];
	const tl_pq_page_info *pages = NULL;
	tl_error ignored;
	tl_error_clear(&ignored);
	int npages = sc ? tl_pq_reader_page_index(c->pq, c->row_group, sc->file_column, &pages, &ignored) : 0;
	if (npages <= 0)
		return row_set_all(c->rows);
	row_set s = {NULL, 0, false};
	for (int p = 0; p < npages && !s.failed; p++) {
		tl_ice_data_file df;
		tl_arena_reset(&c->arena);
		if (!page_metrics(c, sc, &pages[p], &df) || tl_ice_expr_may_match_metrics(pred, c->schema, &df))
			row_set_add(&s, pages[p].first_row, pages[p].first_row + pages[p].rows);
	}
	return s;
}

static row_set expr_rows(page_ctx *c, const tl_ice_expr *e)
{
	switch (e->op) {
	case TL_ICE_EXPR_TRUE:
		return row_set_all(c->rows);
	case TL_ICE_EXPR_FALSE:
		return (row_set){NULL, 0, false};
	case TL_ICE_EXPR_AND:
	case TL_ICE_EXPR_OR: {
		row_set left = expr_rows(c, e->left);
		/* An empty intersection stays empty, a full union full: no need to look right. */
		if (e->op == TL_ICE_EXPR_AND && left.n == 0 && !left.failed)
			return left;
		row_set right = expr_rows(c, e->right);
		return row_set_combine(left, right, e->op == TL_ICE_EXPR_AND);
	}
	default:
		return predicate_rows(c, e);
	}
}

int ice_page_ranges(tl_pq_reader *pq, const tl_ice_data_file *file, int row_group, const tl_ice_schema *schema,
                    const tl_ice_expr *filter, tl_pq_row_range **ranges, int *nranges)
{
	*ranges = NULL;
	*nranges = 0;
	if (filter == NULL)
		return 0;
	stats_column *cols = tl_malloc(sizeof(*cols) * (size_t)(schema->nfields ? schema->nfields : 1));
	if (cols == NULL)
		return 0;
	page_ctx c = {.pq = pq, .file = file, .row_group = row_group, .rows = tl_pq_reader_row_group_rows(pq, row_group),
	              .schema = schema, .cols = cols};
	c.ncols = map_stats_columns(pq, schema, filter, cols);
	tl_arena_init(&c.arena, 1024);
	row_set s = c.ncols > 0 ? expr_rows(&c, filter) : row_set_all(c.rows);
	tl_arena_free(&c.arena);
	tl_free(cols);
	bool everything = s.n == 1 && s.ranges[0].start == 0 && s.ranges[0].end == c.rows;
	if (s.failed || everything) {
		tl_free(s.ranges);
		return 0;
	}
	*ranges = s.ranges;
	*nranges = s.n;
	return 1;
}

/* ------------------------------------------------------- bloom filters */

/* Little-endian bytes of an integer of `width` bytes, when x fits. */
static bool int_plain(int64_t x, int width, uint8_t *out, tl_bytes *v)
{
	if (width == 4 && (x < INT32_MIN || x > INT32_MAX))
		return false;
	for (int k = 0; k < width; k++)
		out[k] = (uint8_t)((uint64_t)x >> (8 * k));
	*v = (tl_bytes){out, (uint32_t)width};
	return true;
}

/*
 * The PLAIN bytes a literal has in the file column (as the bloom filter
 * hashed them): into v[0], and for a float zero the other zero into v[1].
 * Returns how many, or 0 when the literal has no single stored form this
 * knows (a NaN, unit scaling, decimals as variable-length bytes): the row
 * group is then kept.
 */
static int literal_plain(const stats_column *sc, const tl_pq_column *src, const tl_ice_value *lit, uint8_t buf[2][16],
                         tl_bytes v[2])
{
	const ice_fp_column *col = &sc->col;
	tl_ice_type_id type = col->field->type.id;
	int width = src->physical == TL_PQ_INT32 || src->physical == TL_PQ_FLOAT ? 4 : 8;
	switch (col->conv) {
	case ICE_CONV_INTEGER: {
		if (col->mul != 1 || col->div != 1)
			return 0;
		int64_t x = type == TL_ICE_INT || type == TL_ICE_DATE ? lit->v.i32 : lit->v.i64;
		return int_plain(x, width, buf[0], &v[0]) ? 1 : 0;
	}
	case ICE_CONV_FLOAT:
	case ICE_CONV_TO_DOUBLE: {
		double x = type == TL_ICE_FLOAT ? (double)lit->v.f32 : lit->v.f64;
		if (isnan(x) || (width == 4 && (double)(float)x != x))
			return 0;
		for (int z = 0; z < 2; z++) {
			double y = z == 0 ? x : -x; /* the zero of the other sign; only used when x is zero */
			if (width == 4) {
				float f = (float)y;
				memcpy(buf[z], &f, 4);
			} else {
				memcpy(buf[z], &y, 8);
			}
			v[z] = (tl_bytes){buf[z], (uint32_t)width};
		}
		return x == 0 ? 2 : 1;
	}
	case ICE_CONV_BYTES:
		if (lit->len > UINT32_MAX)
			return 0;
		v[0] = (tl_bytes){lit->ptr, (uint32_t)lit->len};
		return 1;
	case ICE_CONV_DECIMAL:
		if (src->physical == TL_PQ_INT32 || src->physical == TL_PQ_INT64) {
			if (lit->v.dec < INT64_MIN || lit->v.dec > INT64_MAX)
				return 0;
			return int_plain((int64_t)lit->v.dec, width, buf[0], &v[0]) ? 1 : 0;
		}
		if (src->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY && src->type_length <= 16) {
			int n = src->type_length;
			/* It fits when the bytes dropped are all sign. */
			tl_int128 limit = n == 16 ? 0 : ((tl_int128)1 << (8 * n - 1));
			if (n < 16 && (lit->v.dec >= limit || lit->v.dec < -limit))
				return 0;
			int_to_be(lit->v.dec, buf[0], n);
			v[0] = (tl_bytes){buf[0], (uint32_t)n};
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}

/* 0 when the row group's bloom filter proves pred (= or IN) matches nothing there, else 1. */
static int predicate_in_bloom(tl_pq_reader *pq, int g, const stats_column *cols, int ncols, const tl_ice_expr *pred)
{
	if (pred->op != TL_ICE_EXPR_EQ && pred->op != TL_ICE_EXPR_IN)
		return 1;
	const stats_column *sc = NULL;
	for (int i = 0; i < ncols && sc == NULL; i++)
		if (cols[i].col.field->id == pred->field_id)
			sc = &cols[i];
	if (sc == NULL || pred->nvalues < 1 || !tl_pq_reader_has_bloom_filter(pq, g, sc->file_column))
		return 1;
	const tl_pq_column *src = &tl_pq_reader_schema(pq)->columns[sc->file_column];
	tl_bytes *values = tl_malloc(sizeof(tl_bytes) * 2 * (size_t)pred->nvalues);
	uint8_t(*bufs)[2][16] = tl_malloc(sizeof(*bufs) * (size_t)pred->nvalues);
	int n = 0, rc = 1;
	if (values != NULL && bufs != NULL) {
		bool all = true;
		for (int i = 0; i < pred->nvalues && all; i++) {
			int k = literal_plain(sc, src, &pred->values[i], bufs[i], &values[n]);
			all = k > 0;
			n += k;
		}
		tl_error ignored;
		tl_error_clear(&ignored);
		/* A failing read only costs the pruning; the row group's own read reports it. */
		if (all && tl_pq_reader_bloom_may_contain(pq, g, sc->file_column, values, n, &ignored) == 0)
			rc = 0;
	}
	tl_free(values);
	tl_free(bufs);
	return rc;
}

static bool bloom_may_match(tl_pq_reader *pq, int g, const stats_column *cols, int ncols, const tl_ice_expr *e)
{
	for (;;) {
		switch (e->op) {
		case TL_ICE_EXPR_TRUE:
			return true;
		case TL_ICE_EXPR_FALSE:
			return false;
		case TL_ICE_EXPR_AND:
			if (!bloom_may_match(pq, g, cols, ncols, e->right))
				return false;
			e = e->left;
			break;
		case TL_ICE_EXPR_OR:
			if (bloom_may_match(pq, g, cols, ncols, e->right))
				return true;
			e = e->left;
			break;
		default:
			return predicate_in_bloom(pq, g, cols, ncols, e) != 0;
		}
	}
}

int ice_row_groups_by_bloom(tl_pq_reader *pq, const tl_ice_schema *schema, const tl_ice_expr *filter, bool *keep)
{
	if (filter == NULL)
		return 0;
	stats_column *cols = tl_malloc(sizeof(*cols) * (size_t)(schema->nfields ? schema->nfields : 1));
	if (cols == NULL)
		return 0;
	int ncols = map_stats_columns(pq, schema, filter, cols);
	int skipped = 0;
	for (int g = 0; g < tl_pq_reader_num_row_groups(pq) && ncols > 0; g++) {
		if (keep[g] && !bloom_may_match(pq, g, cols, ncols, filter)) {
			keep[g] = false;
			skipped++;
		}
	}
	tl_free(cols);
	return skipped;
}
