/*
 * transform.c: Iceberg partition transforms (identity, bucket, truncate,
 * year, month, day, hour, void), their human strings and partition paths,
 * and partition specs with their metadata-JSON form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/json_fields.h"
#include "tierlake/calendar.h"
#include "tierlake/iceberg_transform.h"
#include "iceberg/schema_json.h"
#include "common/json_load.h"

#define MICROS_PER_HOUR 3600000000LL
#define MICROS_PER_DAY (24 * MICROS_PER_HOUR)

static int64_t floor_mod(int64_t a, int64_t b)
{
	int64_t rem;
	tl_floor_div(a, b, &rem);
	return rem;
}

/* ---- names ---- */

static const char *const simple_names[] = {
	[TL_ICE_IDENTITY] = "identity",
	[TL_ICE_YEAR] = "year",
	[TL_ICE_MONTH] = "month",
	[TL_ICE_DAY] = "day",
	[TL_ICE_HOUR] = "hour",
	[TL_ICE_VOID] = "void",
};

int tl_ice_transform_parse(const char *text, tl_ice_transform *out, tl_error *err)
{
	out->param = 0;
	for (size_t i = 0; i < sizeof(simple_names) / sizeof(simple_names[0]); i++) {
		if (simple_names[i] && strcmp(text, simple_names[i]) == 0) {
			out->kind = (tl_ice_transform_kind)i;
			return 0;
		}
	}
	const char *open = NULL;
	if (strncmp(text, "bucket[", 7) == 0) {
		out->kind = TL_ICE_BUCKET;
		open = text + 7;
	} else if (strncmp(text, "truncate[", 9) == 0) {
		out->kind = TL_ICE_TRUNCATE;
		open = text + 9;
	}
	if (open) {
		long v = 0;
		const char *p = open;
		while (*p >= '0' && *p <= '9' && v <= INT32_MAX)
			v = v * 10 + (*p++ - '0');
		if (p == open || strcmp(p, "]") != 0 || v < 1 || v > INT32_MAX)
			return tl_error_set(err, TL_ERR_CORRUPT, "transform \"%s\": the parameter must be an integer from 1 to %d",
			                    text, INT32_MAX);
		out->param = (int32_t)v;
		return 0;
	}
	return tl_error_set(err, TL_ERR_UNSUPPORTED, "unknown partition transform \"%s\"", text);
}

void tl_ice_transform_text(const tl_ice_transform *t, tl_buf *out)
{
	if (t->kind == TL_ICE_BUCKET)
		tl_buf_printf(out, "bucket[%d]", (int)t->param);
	else if (t->kind == TL_ICE_TRUNCATE)
		tl_buf_printf(out, "truncate[%d]", (int)t->param);
	else
		tl_buf_append_str(out, simple_names[t->kind]);
}

static int does_not_apply(const tl_ice_transform *t, const tl_ice_type *source, tl_error *err)
{
	tl_buf b;
	tl_buf_init(&b);
	tl_ice_transform_text(t, &b);
	tl_buf_append_str(&b, " to ");
	tl_ice_type_text(source, &b);
	tl_buf_append_byte(&b, 0);
	tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot apply transform %s", (const char *)b.data);
	tl_buf_free(&b);
	return -1;
}

int tl_ice_transform_result_type(const tl_ice_transform *t, const tl_ice_type *source,
                                 tl_ice_type *result, tl_error *err)
{
	memset(result, 0, sizeof(*result));
	tl_ice_type_id s = source->id;
	if (!tl_ice_type_is_primitive(s))
		return does_not_apply(t, source, err);
	bool temporal = s == TL_ICE_DATE || s == TL_ICE_TIMESTAMP || s == TL_ICE_TIMESTAMPTZ;
	switch (t->kind) {
	case TL_ICE_IDENTITY:
	case TL_ICE_VOID:
		*result = *source;
		return 0;
	case TL_ICE_BUCKET:
		if (s == TL_ICE_BOOLEAN || s == TL_ICE_FLOAT || s == TL_ICE_DOUBLE)
			return does_not_apply(t, source, err);
		result->id = TL_ICE_INT;
		return 0;
	case TL_ICE_TRUNCATE:
		if (s != TL_ICE_INT && s != TL_ICE_LONG && s != TL_ICE_DECIMAL && s != TL_ICE_STRING && s != TL_ICE_BINARY)
			return does_not_apply(t, source, err);
		*result = *source;
		return 0;
	case TL_ICE_YEAR:
	case TL_ICE_MONTH:
	case TL_ICE_DAY:
		if (!temporal)
			return does_not_apply(t, source, err);
		result->id = t->kind == TL_ICE_DAY ? TL_ICE_DATE : TL_ICE_INT;
		return 0;
	case TL_ICE_HOUR:
		if (s != TL_ICE_TIMESTAMP && s != TL_ICE_TIMESTAMPTZ)
			return does_not_apply(t, source, err);
		result->id = TL_ICE_INT;
		return 0;
	}
	return does_not_apply(t, source, err);
}

/* ---- applying ---- */

static void le64(uint8_t out[8], uint64_t v)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

int tl_ice_bucket_hash(const tl_ice_type *source, const tl_ice_value *value, int32_t *hash, tl_error *err)
{
	uint8_t bytes[16];
	double d;
	uint64_t bits;
	switch (source->id) {
	case TL_ICE_INT:
	case TL_ICE_DATE:
		/* ints and dates hash as the long of the same value */
		le64(bytes, (uint64_t)(int64_t)value->v.i32);
		*hash = tl_murmur3_32(bytes, 8);
		return 0;
	case TL_ICE_LONG:
	case TL_ICE_TIME:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		le64(bytes, (uint64_t)value->v.i64);
		*hash = tl_murmur3_32(bytes, 8);
		return 0;
	case TL_ICE_FLOAT:
	case TL_ICE_DOUBLE:
		/* floats hash as the double of the same value */
		d = source->id == TL_ICE_FLOAT ? (double)value->v.f32 : value->v.f64;
		memcpy(&bits, &d, 8);
		le64(bytes, bits);
		*hash = tl_murmur3_32(bytes, 8);
		return 0;
	case TL_ICE_DECIMAL: {
		tl_buf b;
		tl_buf_init(&b);
		if (tl_ice_value_serialize(source, value, &b, err) < 0) {
			tl_buf_free(&b);
			return -1;
		}
		*hash = tl_murmur3_32(b.data, b.len);
		tl_buf_free(&b);
		return 0;
	}
	case TL_ICE_STRING:
	case TL_ICE_UUID:
	case TL_ICE_FIXED:
	case TL_ICE_BINARY:
		*hash = tl_murmur3_32(value->ptr, value->len);
		return 0;
	default:
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "the bucket hash is not defined for this type");
	}
}

/* The byte length of the first `width` code points of UTF-8 text; -1 if it is not UTF-8. */
static int64_t utf8_prefix(const uint8_t *p, size_t len, int32_t width)
{
	size_t i = 0;
	for (int32_t n = 0; n < width && i < len; n++) {
		uint8_t c = p[i];
		size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
		if (k == 0 || i + k > len)
			return -1;
		for (size_t j = 1; j < k; j++)
			if ((p[i + j] & 0xC0) != 0x80)
				return -1;
		i += k;
	}
	return (int64_t)i;
}

/* Days since 1970 of a date or timestamp value. */
static int64_t days_of(const tl_ice_type *source, const tl_ice_value *in)
{
	return source->id == TL_ICE_DATE ? in->v.i32 : tl_floor_div(in->v.i64, MICROS_PER_DAY, NULL);
}

int tl_ice_transform_apply(const tl_ice_transform *t, const tl_ice_type *source,
                           const tl_ice_value *in, tl_ice_value *out, tl_error *err)
{
	tl_ice_type result;
	if (tl_ice_transform_result_type(t, source, &result, err) < 0)
		return -1;
	memset(out, 0, sizeof(*out));
	if (in->is_null || t->kind == TL_ICE_VOID) {
		out->is_null = true;
		return 0;
	}
	int64_t year;
	int month, day;
	switch (t->kind) {
	case TL_ICE_IDENTITY:
		*out = *in;
		return 0;
	case TL_ICE_BUCKET: {
		int32_t hash;
		if (tl_ice_bucket_hash(source, in, &hash, err) < 0)
			return -1;
		out->v.i32 = (int32_t)((hash & INT32_MAX) % t->param);
		return 0;
	}
	case TL_ICE_TRUNCATE: {
		int64_t w = t->param;
		switch (source->id) {
		case TL_ICE_INT:
			/* Java's int arithmetic wraps below INT32_MIN; so do we. */
			out->v.i32 = (int32_t)(uint32_t)(uint64_t)(in->v.i32 - (((in->v.i32 % w) + w) % w));
			return 0;
		case TL_ICE_LONG:
			out->v.i64 = (int64_t)((uint64_t)in->v.i64 - (uint64_t)(((in->v.i64 % w) + w) % w));
			return 0;
		case TL_ICE_DECIMAL:
			out->v.dec = in->v.dec - (((in->v.dec % w) + w) % w);
			return 0;
		case TL_ICE_STRING: {
			int64_t n = utf8_prefix(in->ptr, in->len, t->param);
			if (n < 0)
				return tl_error_set(err, TL_ERR_CORRUPT, "truncate of a string that is not valid UTF-8");
			out->ptr = in->ptr;
			out->len = (size_t)n;
			return 0;
		}
		default: /* binary */
			out->ptr = in->ptr;
			out->len = in->len < (size_t)w ? in->len : (size_t)w;
			return 0;
		}
	}
	case TL_ICE_YEAR:
	case TL_ICE_MONTH:
		tl_civil_from_days(days_of(source, in), &year, &month, &day);
		out->v.i32 = (int32_t)(t->kind == TL_ICE_YEAR ? year - 1970 : (year - 1970) * 12 + month - 1);
		return 0;
	case TL_ICE_DAY:
		out->v.i32 = (int32_t)days_of(source, in);
		return 0;
	case TL_ICE_HOUR:
		out->v.i32 = (int32_t)tl_floor_div(in->v.i64, MICROS_PER_HOUR, NULL);
		return 0;
	case TL_ICE_VOID:
		break;
	}
	out->is_null = true;
	return 0;
}

void tl_ice_transform_human(const tl_ice_transform *t, const tl_ice_type *source,
                            const tl_ice_value *result, tl_buf *out)
{
	if (result->is_null || t->kind == TL_ICE_VOID) {
		tl_buf_append_str(out, "null");
		return;
	}
	int64_t year;
	int month, day;
	switch (t->kind) {
	case TL_ICE_IDENTITY:
	case TL_ICE_TRUNCATE:
		tl_ice_value_human(source, result, out);
		return;
	case TL_ICE_BUCKET:
		tl_buf_printf(out, "%d", (int)result->v.i32);
		return;
	case TL_ICE_YEAR:
		tl_buf_printf(out, "%04lld", 1970LL + result->v.i32);
		return;
	case TL_ICE_MONTH:
		tl_buf_printf(out, "%04lld-%02d", (long long)(1970 + tl_floor_div(result->v.i32, 12, NULL)),
		              (int)(1 + floor_mod(result->v.i32, 12)));
		return;
	case TL_ICE_DAY: {
		tl_ice_type date = {.id = TL_ICE_DATE};
		tl_ice_value_human(&date, result, out);
		return;
	}
	case TL_ICE_HOUR:
		tl_civil_from_days(tl_floor_div(result->v.i32, 24, NULL), &year, &month, &day);
		tl_buf_printf(out, "%04lld-%02d-%02d-%02d", (long long)year, month, day,
		              (int)floor_mod(result->v.i32, 24));
		return;
	case TL_ICE_VOID:
		break;
	}
}

/* ---- partition specs ---- */

void tl_ice_partition_spec_init(tl_ice_partition_spec *spec, int32_t spec_id)
{
	memset(spec, 0, sizeof(*spec));
	spec->spec_id = spec_id;
}

int tl_ice_partition_spec_add(tl_ice_partition_spec *spec, int32_t source_id, int32_t field_id,
                              const char *name, tl_ice_transform transform)
{
	char *copy = tl_strdup(name);
	tl_ice_partition_field *fields =
		copy ? tl_realloc(spec->fields, (size_t)(spec->nfields + 1) * sizeof(tl_ice_partition_field)) : NULL;
	if (fields == NULL) {
		tl_free(copy);
		return -1;
	}
	spec->fields = fields;
	tl_ice_partition_field *f = &spec->fields[spec->nfields++];
	f->source_id = source_id;
	f->field_id = field_id;
	f->name = copy;
	f->transform = transform;
	return 0;
}

int tl_ice_partition_spec_copy(const tl_ice_partition_spec *src, tl_ice_partition_spec *dst)
{
	tl_ice_partition_spec_init(dst, src->spec_id);
	for (int i = 0; i < src->nfields; i++)
		if (tl_ice_partition_spec_add(dst, src->fields[i].source_id, src->fields[i].field_id, src->fields[i].name,
		                              src->fields[i].transform) < 0) {
			tl_ice_partition_spec_free(dst);
			return -1;
		}
	return 0;
}

void tl_ice_partition_spec_free(tl_ice_partition_spec *spec)
{
	if (spec == NULL)
		return;
	for (int i = 0; i < spec->nfields; i++)
		tl_free(spec->fields[i].name);
	tl_free(spec->fields);
	memset(spec, 0, sizeof(*spec));
}

bool tl_ice_partition_spec_equal(const tl_ice_partition_spec *a, const tl_ice_partition_spec *b)
{
	if (a->spec_id != b->spec_id || a->nfields != b->nfields)
		return false;
	for (int i = 0; i < a->nfields; i++) {
		const tl_ice_partition_field *x = &a->fields[i], *y = &b->fields[i];
		if (x->source_id != y->source_id || x->field_id != y->field_id || strcmp(x->name, y->name) != 0 ||
		    x->transform.kind != y->transform.kind || x->transform.param != y->transform.param)
			return false;
	}
	return true;
}

int tl_ice_partition_spec_check(const tl_ice_partition_spec *spec, const tl_ice_schema *schema, tl_error *err)
{
	for (int i = 0; i < spec->nfields; i++) {
		const tl_ice_partition_field *f = &spec->fields[i];
		const tl_ice_field *src = tl_ice_schema_find_id(schema, f->source_id);
		if (src == NULL)
			return tl_error_set(err, TL_ERR_CORRUPT,
			                    "partition spec %d field \"%s\": source-id %d is not in schema %d",
			                    (int)spec->spec_id, f->name, (int)f->source_id, (int)schema->schema_id);
		tl_ice_type result;
		if (tl_ice_transform_result_type(&f->transform, &src->type, &result, err) < 0) {
			tl_error_prefix(err, "partition spec %d field \"%s\"", (int)spec->spec_id, f->name);
			return -1;
		}
		for (int j = 0; j < i; j++) {
			if (spec->fields[j].field_id == f->field_id)
				return tl_error_set(err, TL_ERR_CORRUPT, "partition spec %d: field-id %d is used twice",
				                    (int)spec->spec_id, (int)f->field_id);
			if (strcmp(spec->fields[j].name, f->name) == 0)
				return tl_error_set(err, TL_ERR_CORRUPT, "partition spec %d: two fields are named \"%s\"",
				                    (int)spec->spec_id, f->name);
		}
	}
	return 0;
}

int tl_ice_partition_type(const tl_ice_partition_spec *spec, const tl_ice_schema *schema,
                          tl_ice_type *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	out->id = TL_ICE_STRUCT;
	if (tl_ice_partition_spec_check(spec, schema, err) < 0)
		return -1;
	out->fields = spec->nfields ? tl_calloc((size_t)spec->nfields, sizeof(tl_ice_field)) : NULL;
	if (spec->nfields && out->fields == NULL)
		return tl_error_nomem(err, "for a partition type");
	for (int i = 0; i < spec->nfields; i++) {
		const tl_ice_partition_field *f = &spec->fields[i];
		tl_ice_field *pf = &out->fields[i];
		pf->id = f->field_id;
		pf->name = tl_strdup(f->name);
		if (pf->name == NULL) {
			tl_ice_type_free(out);
			return tl_error_nomem(err, "for a partition type");
		}
		pf->required = false;
		/* Checked above: the source exists and the transform applies. */
		tl_ice_transform_result_type(&f->transform, &tl_ice_schema_find_id(schema, f->source_id)->type,
		                             &pf->type, err);
		out->nfields++;
	}
	return 0;
}

int tl_ice_partition_spec_from_json(const json_t *json, int32_t spec_id, tl_ice_partition_spec *out,
                                    tl_error *err)
{
	tl_ice_partition_spec_init(out, spec_id < 0 ? 0 : spec_id);
	const json_t *fields = json;
	if (spec_id < 0) {
		if (!json_is_object(json))
			return tl_error_set(err, TL_ERR_CORRUPT, "partition spec is not a JSON object");
		if (ice_json_int32(json, "spec-id", "partition spec", &out->spec_id, err) < 0)
			return -1;
		fields = json_object_get(json, "fields");
	}
	char what[64];
	snprintf(what, sizeof(what), "partition spec %d", (int)out->spec_id);
	if (!json_is_array(fields))
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: \"fields\" is missing or not an array", what);
	/* Checks compare fields pairwise; no real table comes near this. */
	if (json_array_size(fields) > TL_ICE_MAX_PARTITION_FIELDS)
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: %zu fields; at most %d are supported", what,
		                    json_array_size(fields), TL_ICE_MAX_PARTITION_FIELDS);
	for (size_t i = 0; i < json_array_size(fields); i++) {
		const json_t *f = json_array_get(fields, i);
		const char *name = json_string_value(json_object_get(f, "name"));
		const char *transform = json_string_value(json_object_get(f, "transform"));
		if (name == NULL || transform == NULL) {
			tl_error_set(err, TL_ERR_CORRUPT, "%s: field %zu lacks a \"name\" or \"transform\" string", what, i);
			goto fail;
		}
		int32_t source_id = 0, field_id = (int32_t)(1000 + i);
		tl_ice_transform t;
		if (ice_json_int32(f, "source-id", what, &source_id, err) < 0 ||
		    (json_object_get(f, "field-id") && ice_json_int32(f, "field-id", what, &field_id, err) < 0) ||
		    tl_ice_transform_parse(transform, &t, err) < 0) {
			tl_error_prefix(err, "%s field \"%s\"", what, name);
			goto fail;
		}
		if (tl_ice_partition_spec_add(out, source_id, field_id, name, t) < 0) {
			tl_error_nomem(err, "reading %s", what);
			goto fail;
		}
	}
	return 0;
fail:
	tl_ice_partition_spec_free(out);
	return -1;
}

json_t *tl_ice_partition_spec_to_json(const tl_ice_partition_spec *spec)
{
	/* jansson's setters cannot report a failed allocation: one count says whether any failed. */
	unsigned long failures = tl_mem_failures();
	json_t *o = tl_json_object();
	json_object_set_new(o, "spec-id", json_integer(spec->spec_id));
	json_t *arr = json_array();
	tl_buf b;
	tl_buf_init(&b);
	for (int i = 0; i < spec->nfields; i++) {
		const tl_ice_partition_field *f = &spec->fields[i];
		json_t *jf = tl_json_object();
		json_object_set_new(jf, "name", json_string(f->name));
		tl_buf_reset(&b);
		tl_ice_transform_text(&f->transform, &b);
		tl_buf_append_byte(&b, 0);
		json_object_set_new(jf, "transform", json_string((const char *)b.data));
		json_object_set_new(jf, "source-id", json_integer(f->source_id));
		json_object_set_new(jf, "field-id", json_integer(f->field_id));
		json_array_append_new(arr, jf);
	}
	tl_buf_free(&b);
	json_object_set_new(o, "fields", arr);
	if (tl_mem_failures() != failures) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* java.net.URLEncoder.encode(s, UTF-8): letters, digits and ".-*_" stay, space is '+'. */
static void url_encode(tl_buf *out, const uint8_t *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '.' || c == '-' || c == '*' || c == '_') {
			tl_buf_append_byte(out, c);
		} else if (c == ' ') {
			tl_buf_append_byte(out, '+');
		} else {
			tl_buf_append_byte(out, '%');
			tl_buf_append_byte(out, (uint8_t)hex[c >> 4]);
			tl_buf_append_byte(out, (uint8_t)hex[c & 15]);
		}
	}
}

int tl_ice_partition_path(const tl_ice_partition_spec *spec, const tl_ice_schema *schema,
                          const tl_ice_value *values, tl_buf *out, tl_error *err)
{
	tl_buf human;
	tl_buf_init(&human);
	for (int i = 0; i < spec->nfields; i++) {
		const tl_ice_partition_field *f = &spec->fields[i];
		const tl_ice_field *src = tl_ice_schema_find_id(schema, f->source_id);
		if (src == NULL) {
			tl_buf_free(&human);
			return tl_error_set(err, TL_ERR_INVALID, "partition field \"%s\": source-id %d is not in the schema",
			                    f->name, (int)f->source_id);
		}
		if (i > 0)
			tl_buf_append_byte(out, '/');
		url_encode(out, (const uint8_t *)f->name, strlen(f->name));
		tl_buf_append_byte(out, '=');
		tl_buf_reset(&human);
		tl_ice_transform_human(&f->transform, &src->type, &values[i], &human);
		url_encode(out, human.data, human.len);
	}
	tl_buf_free(&human);
	return 0;
}
