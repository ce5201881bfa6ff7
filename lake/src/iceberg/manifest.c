/*
 * manifest.c: reading and writing Iceberg manifests (v1 and v2 read, v2
 * written) and the spec's inheritance of snapshot ids and sequence numbers.
 *
 * Fields are found by Iceberg field id, never by position or name, so a
 * manifest from Java, pyiceberg or a later format version reads as long as
 * the ids we know keep their meaning. Partition tuples convert between Avro
 * and tl_ice_value by the partition type derived from the header's schema
 * and spec, which is also what the writer puts in the header.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tierlake/avro.h"
#include "tierlake/iceberg_manifest.h"
#include "iceberg/manifest_internal.h"
#include "iceberg/schema_json.h"
#include "common/json_load.h"

/* ------------------------------------------------------------- shared */


int tl_ice_manifest_get_long(const tl_avro_value *rec, int32_t id, const char *name, bool required,
                             int64_t *out, bool *present, tl_error *err)
{
	const tl_avro_value *v = tl_avro_record_get_by_id(rec, id);
	if (present)
		*present = false;
	if (v == NULL || tl_avro_is_null(v)) {
		if (required)
			return tl_error_set(err, TL_ERR_CORRUPT, "required field %s (id %d) is missing or null", name, id);
		return 0;
	}
	if (tl_avro_get_long(v, out) < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "field %s (id %d) is a %s, not a long", name, id,
		                    tl_avro_type_name(tl_avro_value_type(v)));
	if (present)
		*present = true;
	return 0;
}

int tl_ice_manifest_get_int(const tl_avro_value *rec, int32_t id, const char *name, bool required,
                            int32_t *out, bool *present, tl_error *err)
{
	int64_t v = 0;
	bool have = false;
	if (tl_ice_manifest_get_long(rec, id, name, required, &v, &have, err) < 0)
		return -1;
	if (have && (v < INT32_MIN || v > INT32_MAX))
		return tl_error_set(err, TL_ERR_CORRUPT, "field %s (id %d) is out of int range", name, id);
	if (have)
		*out = (int32_t)v;
	if (present)
		*present = have;
	return 0;
}

const char *tl_ice_manifest_get_string(const tl_avro_value *rec, int32_t id, const char *name,
                                       tl_arena *arena, tl_error *err)
{
	tl_bytes b;
	const tl_avro_value *v = tl_avro_record_get_by_id(rec, id);
	if (v == NULL || tl_avro_is_null(v) || tl_avro_get_string(v, &b) < 0) {
		tl_error_set(err, TL_ERR_CORRUPT, "required string %s (id %d) is missing or not a string", name, id);
		return NULL;
	}
	if (memchr(b.ptr, 0, b.len) != NULL) {
		tl_error_set(err, TL_ERR_CORRUPT, "string %s (id %d) contains a NUL byte", name, id);
		return NULL;
	}
	char *s = tl_arena_alloc(arena, (size_t)b.len + 1);
	if (s == NULL) {
		tl_error_nomem(err, "reading string %s", name);
		return NULL;
	}
	memcpy(s, b.ptr, b.len);
	s[b.len] = '\0';
	return s;
}

/* Writes a JSON string literal (quoted, escaped). */
void tl_ice_manifest_json_string(tl_buf *out, const char *s)
{
	json_t *j = json_string(s);
	char *text = j ? tl_json_dumps(j, JSON_ENCODE_ANY) : NULL;
	if (text == NULL)
		tl_buf_set_failed(out); /* out of memory: the caller checks out */
	tl_buf_append_str(out, text ? text : "\"\"");
	tl_free(text);
	json_decref(j);
}

/* ------------------------------------------------------ inheritance */

int tl_ice_manifest_entry_inherit(tl_ice_manifest_entry *e, const tl_ice_manifest_file *mf, tl_error *err)
{
	if (!e->has_snapshot_id) {
		e->snapshot_id = mf->added_snapshot_id;
		e->has_snapshot_id = true;
	}
	bool v1 = mf->sequence_number == 0;
	if (!e->has_sequence_number) {
		if (!v1 && e->status != TL_ICE_STATUS_ADDED)
			return tl_error_set(err, TL_ERR_CORRUPT, "%s entry for %s has a null sequence number",
			                    e->status == TL_ICE_STATUS_EXISTING ? "existing" : "deleted",
			                    e->data_file.file_path ? e->data_file.file_path : "?");
		e->sequence_number = mf->sequence_number;
		e->has_sequence_number = true;
	}
	if (!e->has_file_sequence_number) {
		if (!v1 && e->status != TL_ICE_STATUS_ADDED)
			return tl_error_set(err, TL_ERR_CORRUPT, "%s entry for %s has a null file sequence number",
			                    e->status == TL_ICE_STATUS_EXISTING ? "existing" : "deleted",
			                    e->data_file.file_path ? e->data_file.file_path : "?");
		e->file_sequence_number = mf->sequence_number;
		e->has_file_sequence_number = true;
	}
	return 0;
}

/* ------------------------------------------------- partition values */

/* The fixed size Iceberg gives decimals of a precision: the fewest bytes that hold 10^p - 1. */
static int decimal_size(int32_t precision)
{
	__extension__ typedef unsigned __int128 u128;
	u128 limit = 1;
	for (int32_t i = 0; i < precision; i++)
		limit *= 10;
	for (int n = 1; n < 16; n++)
		if (((u128)1 << (8 * n - 1)) >= limit)
			return n;
	return 16;
}

/* The Avro type a partition value of `t` is written as (JSON), for field `id`. */
static int avro_type_json(const tl_ice_type *t, int32_t id, tl_buf *out, tl_error *err)
{
	switch (t->id) {
	case TL_ICE_BOOLEAN: tl_buf_append_str(out, "\"boolean\""); return 0;
	case TL_ICE_INT: tl_buf_append_str(out, "\"int\""); return 0;
	case TL_ICE_LONG: tl_buf_append_str(out, "\"long\""); return 0;
	case TL_ICE_FLOAT: tl_buf_append_str(out, "\"float\""); return 0;
	case TL_ICE_DOUBLE: tl_buf_append_str(out, "\"double\""); return 0;
	case TL_ICE_DATE: tl_buf_append_str(out, "{\"type\":\"int\",\"logicalType\":\"date\"}"); return 0;
	case TL_ICE_TIME: tl_buf_append_str(out, "{\"type\":\"long\",\"logicalType\":\"time-micros\"}"); return 0;
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		tl_buf_printf(out, "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\",\"adjust-to-utc\":%s}",
		              t->id == TL_ICE_TIMESTAMPTZ ? "true" : "false");
		return 0;
	case TL_ICE_STRING: tl_buf_append_str(out, "\"string\""); return 0;
	case TL_ICE_BINARY: tl_buf_append_str(out, "\"bytes\""); return 0;
	case TL_ICE_UUID:
		tl_buf_printf(out, "{\"type\":\"fixed\",\"name\":\"uuid_fixed_%d\",\"size\":16,\"logicalType\":\"uuid\"}", id);
		return 0;
	case TL_ICE_FIXED:
		tl_buf_printf(out, "{\"type\":\"fixed\",\"name\":\"fixed_%d\",\"size\":%d}", id, t->length);
		return 0;
	case TL_ICE_DECIMAL:
		tl_buf_printf(out,
		              "{\"type\":\"fixed\",\"name\":\"decimal_%d\",\"size\":%d,\"logicalType\":\"decimal\","
		              "\"precision\":%d,\"scale\":%d}",
		              id, decimal_size(t->precision), t->precision, t->scale);
		return 0;
	default:
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "partition values of this type are not supported in manifests");
	}
}

static int avro_to_ice(const tl_ice_type *t, const tl_avro_value *v, tl_ice_value *out, const char *name,
                       tl_error *err)
{
	memset(out, 0, sizeof(*out));
	if (tl_avro_is_null(v)) {
		out->is_null = true;
		return 0;
	}
	int rc = -1;
	int64_t l;
	double d;
	tl_bytes b;
	switch (t->id) {
	case TL_ICE_BOOLEAN: rc = tl_avro_get_bool(v, &out->v.b); break;
	case TL_ICE_INT:
	case TL_ICE_DATE:
		rc = tl_avro_get_long(v, &l);
		if (rc == 0 && (l < INT32_MIN || l > INT32_MAX))
			rc = -1;
		out->v.i32 = (int32_t)l;
		break;
	case TL_ICE_LONG:
	case TL_ICE_TIME:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ: rc = tl_avro_get_long(v, &out->v.i64); break;
	case TL_ICE_FLOAT:
		rc = tl_avro_get_double(v, &d);
		out->v.f32 = (float)d;
		break;
	case TL_ICE_DOUBLE: rc = tl_avro_get_double(v, &out->v.f64); break;
	case TL_ICE_STRING:
	case TL_ICE_BINARY:
	case TL_ICE_UUID:
	case TL_ICE_FIXED:
		rc = tl_avro_get_bytes(v, &b);
		if (rc == 0 && t->id == TL_ICE_UUID && b.len != 16)
			rc = -1;
		if (rc == 0 && t->id == TL_ICE_FIXED && b.len != (uint32_t)t->length)
			rc = -1;
		out->ptr = b.ptr;
		out->len = b.len;
		break;
	case TL_ICE_DECIMAL:
		/* Big-endian two's complement, fixed or bytes, at most 16 bytes. */
		rc = tl_avro_get_bytes(v, &b);
		if (rc == 0 && (b.len == 0 || b.len > 16))
			rc = -1;
		if (rc == 0) {
			__extension__ unsigned __int128 u = (b.ptr[0] & 0x80) ? ~(unsigned __int128)0 : 0;
			for (uint32_t i = 0; i < b.len; i++)
				u = (u << 8) | b.ptr[i];
			out->v.dec = (tl_int128)u;
		}
		break;
	default:
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "partition field %s: type not supported in manifests", name);
	}
	if (rc < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "partition field %s holds a %s that does not fit its type",
		                    name, tl_avro_type_name(tl_avro_value_type(v)));
	return 0;
}

static int ice_to_avro(tl_arena *arena, const tl_ice_type *t, const tl_ice_value *in, tl_avro_value *slot,
                       const tl_avro_schema *declared, const char *name, tl_error *err)
{
	tl_avro_type at;
	if (in->is_null) {
		if (tl_avro_prepare(slot, declared, TL_AVRO_NULL) == NULL)
			return tl_error_set(err, TL_ERR_INVALID, "partition field %s cannot be null", name);
		return 0;
	}
	switch (t->id) {
	case TL_ICE_BOOLEAN: at = TL_AVRO_BOOLEAN; break;
	case TL_ICE_INT:
	case TL_ICE_DATE: at = TL_AVRO_INT; break;
	case TL_ICE_LONG:
	case TL_ICE_TIME:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ: at = TL_AVRO_LONG; break;
	case TL_ICE_FLOAT: at = TL_AVRO_FLOAT; break;
	case TL_ICE_DOUBLE: at = TL_AVRO_DOUBLE; break;
	case TL_ICE_STRING: at = TL_AVRO_STRING; break;
	case TL_ICE_BINARY: at = TL_AVRO_BYTES; break;
	case TL_ICE_UUID:
	case TL_ICE_FIXED:
	case TL_ICE_DECIMAL: at = TL_AVRO_FIXED; break;
	default:
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "partition field %s: type not supported in manifests", name);
	}
	tl_avro_value *v = tl_avro_prepare(slot, declared, at);
	if (v == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "partition field %s: value does not fit the schema", name);
	switch (at) {
	case TL_AVRO_BOOLEAN: v->u.boolean = in->v.b; break;
	case TL_AVRO_INT: v->u.i32 = in->v.i32; break;
	case TL_AVRO_LONG: v->u.i64 = in->v.i64; break;
	case TL_AVRO_FLOAT: v->u.f32 = in->v.f32; break;
	case TL_AVRO_DOUBLE: v->u.f64 = in->v.f64; break;
	default:
		if (t->id == TL_ICE_DECIMAL) {
			__extension__ unsigned __int128 mag = in->v.dec < 0 ? -(unsigned __int128)in->v.dec
			                                                    : (unsigned __int128)in->v.dec;
			__extension__ unsigned __int128 limit = 1;
			for (int32_t i = 0; i < t->precision && i < 38; i++)
				limit *= 10;
			if (mag >= limit)
				return tl_error_set(err, TL_ERR_INVALID, "partition field %s: decimal exceeds precision %d",
				                    name, t->precision);
			int n = decimal_size(t->precision);
			uint8_t *p = tl_arena_alloc(arena, (size_t)n);
			if (p == NULL)
				return tl_error_nomem(err, "reading partition field %s", name);
			__extension__ unsigned __int128 u = (unsigned __int128)in->v.dec;
			for (int i = n - 1; i >= 0; i--, u >>= 8)
				p[i] = (uint8_t)u;
			/* What is left must be the sign extension, or the value does not fit. */
			__extension__ unsigned __int128 sign = in->v.dec < 0 ? ~(unsigned __int128)0 : 0;
			if (n < 16 && (u != (sign >> (8 * n)) || ((p[0] & 0x80) != 0) != (in->v.dec < 0)))
				return tl_error_set(err, TL_ERR_INVALID, "partition field %s: decimal exceeds precision %d",
				                    name, t->precision);
			v->u.bytes.ptr = p;
			v->u.bytes.len = (uint32_t)n;
			break;
		}
		if (in->len > UINT32_MAX)
			return tl_error_set(err, TL_ERR_INVALID, "partition field %s: value too long", name);
		v->u.bytes.ptr = in->ptr;
		v->u.bytes.len = (uint32_t)in->len;
		break;
	}
	return 0;
}

/* Orders two non-null values of a primitive type (floats: NaN never reaches here). */
static int ice_compare(const tl_ice_type *t, const tl_ice_value *a, const tl_ice_value *b)
{
	switch (t->id) {
	case TL_ICE_BOOLEAN: return (int)a->v.b - (int)b->v.b;
	case TL_ICE_INT:
	case TL_ICE_DATE: return (a->v.i32 > b->v.i32) - (a->v.i32 < b->v.i32);
	case TL_ICE_LONG:
	case TL_ICE_TIME:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ: return (a->v.i64 > b->v.i64) - (a->v.i64 < b->v.i64);
	case TL_ICE_FLOAT: return (a->v.f32 > b->v.f32) - (a->v.f32 < b->v.f32);
	case TL_ICE_DOUBLE: return (a->v.f64 > b->v.f64) - (a->v.f64 < b->v.f64);
	case TL_ICE_DECIMAL: return (a->v.dec > b->v.dec) - (a->v.dec < b->v.dec);
	default: {
		/* Unsigned bytes: UTF-8 byte order is code point order. */
		size_t n = a->len < b->len ? a->len : b->len;
		int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
		if (c != 0)
			return c;
		return (a->len > b->len) - (a->len < b->len);
	}
	}
}

/* ------------------------------------------------------------ reader */

struct tl_ice_manifest_reader {
	tl_avro_reader *avro;
	tl_arena arena;
	int format_version;
	int content;
	tl_ice_schema schema;
	bool have_schema;
	tl_ice_partition_spec spec;
	tl_ice_type ptype;
	tl_ice_manifest_entry entry;
};

static int meta_int(tl_avro_reader *avro, const char *key, int64_t dflt, int64_t *out, tl_error *err)
{
	const tl_bytes *b = tl_avro_reader_meta(avro, key);
	*out = dflt;
	if (b == NULL)
		return 0;
	char buf[32];
	if (b->len == 0 || b->len >= sizeof(buf))
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest metadata %s is not a number", key);
	memcpy(buf, b->ptr, b->len);
	buf[b->len] = '\0';
	char *end;
	long long v = strtoll(buf, &end, 10);
	if (*end != '\0')
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest metadata %s is not a number: \"%s\"", key, buf);
	*out = v;
	return 0;
}

static json_t *meta_json(tl_avro_reader *avro, const char *key, tl_error *err)
{
	const tl_bytes *b = tl_avro_reader_meta(avro, key);
	if (b == NULL)
		return NULL;
	json_error_t jerr;
	json_t *j = tl_json_loadb((const char *)b->ptr, b->len, JSON_REJECT_DUPLICATES, &jerr);
	if (j == NULL)
		tl_error_set(err, TL_ERR_CORRUPT, "manifest metadata %s is not JSON: %s", key, jerr.text);
	return j;
}

static int read_header(tl_ice_manifest_reader *r, tl_error *err)
{
	int64_t v;
	if (meta_int(r->avro, "format-version", 1, &v, err) < 0)
		return -1;
	if (v != 1 && v != 2)
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "manifest format-version %lld", (long long)v);
	r->format_version = (int)v;
	const tl_bytes *c = tl_avro_reader_meta(r->avro, "content");
	r->content = TL_ICE_MANIFEST_DATA;
	if (c != NULL && c->len == 7 && memcmp(c->ptr, "deletes", 7) == 0)
		r->content = TL_ICE_MANIFEST_DELETES;
	else if (c != NULL && !(c->len == 4 && memcmp(c->ptr, "data", 4) == 0))
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest content is neither \"data\" nor \"deletes\"");
	if (meta_int(r->avro, "partition-spec-id", 0, &v, err) < 0)
		return -1;
	if (v < 0 || v > INT32_MAX)
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest partition-spec-id %lld is out of range", (long long)v);
	int32_t spec_id = (int32_t)v;

	tl_ice_partition_spec_init(&r->spec, spec_id);
	json_t *js = meta_json(r->avro, "schema", err);
	if (js == NULL && tl_avro_reader_meta(r->avro, "schema") != NULL)
		return -1;
	if (js != NULL) {
		int rc = tl_ice_schema_from_json(js, &r->schema, err);
		json_decref(js);
		if (rc < 0) {
			tl_error_prefix(err, "manifest schema");
			return -1;
		}
		r->have_schema = true;
	}
	json_t *jp = meta_json(r->avro, "partition-spec", err);
	if (jp == NULL && tl_avro_reader_meta(r->avro, "partition-spec") != NULL)
		return -1;
	if (jp != NULL) {
		tl_ice_partition_spec_free(&r->spec);
		int rc = tl_ice_partition_spec_from_json(jp, spec_id, &r->spec, err);
		json_decref(jp);
		if (rc < 0) {
			tl_error_prefix(err, "manifest partition-spec");
			return -1;
		}
	}
	if (r->spec.nfields > 0 && !r->have_schema)
		return tl_error_set(err, TL_ERR_CORRUPT, "partitioned manifest has no \"schema\" metadata");
	if (r->spec.nfields > 0) {
		if (tl_ice_partition_type(&r->spec, &r->schema, &r->ptype, err) < 0) {
			tl_error_prefix(err, "manifest partition type");
			return -1;
		}
	} else {
		r->ptype.id = TL_ICE_STRUCT;
	}
	return 0;
}

tl_ice_manifest_reader *tl_ice_manifest_reader_open(tl_input *in, tl_error *err)
{
	tl_ice_manifest_reader *r = tl_calloc(1, sizeof(*r));
	if (r == NULL) {
		tl_error_nomem(err, "opening manifest %s", in->name);
		return NULL;
	}
	tl_arena_init(&r->arena, 4096);
	r->avro = tl_avro_reader_open(in, err);
	if (r->avro == NULL || read_header(r, err) < 0) {
		tl_ice_manifest_reader_free(r);
		return NULL;
	}
	return r;
}

void tl_ice_manifest_reader_free(tl_ice_manifest_reader *r)
{
	if (r == NULL)
		return;
	tl_avro_reader_free(r->avro);
	tl_arena_free(&r->arena);
	if (r->have_schema)
		tl_ice_schema_free(&r->schema);
	tl_ice_partition_spec_free(&r->spec);
	tl_ice_type_free(&r->ptype);
	tl_free(r);
}

int tl_ice_manifest_reader_format_version(const tl_ice_manifest_reader *r) { return r->format_version; }
int tl_ice_manifest_reader_content(const tl_ice_manifest_reader *r) { return r->content; }
int32_t tl_ice_manifest_reader_spec_id(const tl_ice_manifest_reader *r) { return r->spec.spec_id; }
const tl_ice_partition_spec *tl_ice_manifest_reader_spec(const tl_ice_manifest_reader *r) { return &r->spec; }
const tl_ice_schema *tl_ice_manifest_reader_schema(const tl_ice_manifest_reader *r)
{
	return r->have_schema ? &r->schema : NULL;
}
const tl_ice_type *tl_ice_manifest_reader_partition_type(const tl_ice_manifest_reader *r) { return &r->ptype; }

/* Items of an optional array field; *items NULL and *n 0 when absent or null. */
static int get_array(const tl_avro_value *rec, int32_t id, const char *name, const tl_avro_value **items,
                     uint32_t *n, tl_error *err)
{
	const tl_avro_value *v = tl_avro_record_get_by_id(rec, id);
	*items = NULL;
	*n = 0;
	if (v == NULL || tl_avro_is_null(v))
		return 0;
	if (tl_avro_value_type(v) != TL_AVRO_ARRAY)
		return tl_error_set(err, TL_ERR_CORRUPT, "field %s (id %d) is not an array", name, id);
	if (v->u.list.n > TL_ICE_MAX_MANIFEST_MAP)
		return tl_error_set(err, TL_ERR_CORRUPT, "field %s (id %d) has %u entries", name, id, v->u.list.n);
	*items = v->u.list.items;
	*n = v->u.list.n;
	return 0;
}

/*
 * Iceberg stores int-keyed maps as arrays of {key, value} records
 * (logicalType "map"); kind 'l' reads long values, 'b' bytes.
 */
static int read_map(tl_arena *arena, const tl_avro_value *rec, int32_t id, const char *name, char kind,
                    tl_ice_long_map *lm, tl_ice_bytes_map *bm, tl_error *err)
{
	const tl_avro_value *items;
	uint32_t n;
	if (get_array(rec, id, name, &items, &n, err) < 0)
		return -1;
	if (n == 0)
		return 0;
	int32_t *keys = tl_arena_alloc(arena, sizeof(int32_t) * n);
	int64_t *lv = kind == 'l' ? tl_arena_alloc(arena, sizeof(int64_t) * n) : NULL;
	tl_bytes *bv = kind == 'b' ? tl_arena_alloc(arena, sizeof(tl_bytes) * n) : NULL;
	if (keys == NULL || (kind == 'l' && lv == NULL) || (kind == 'b' && bv == NULL))
		return tl_error_nomem(err, "reading map %s", name);
	for (uint32_t i = 0; i < n; i++) {
		const tl_avro_value *k = tl_avro_record_get(&items[i], "key");
		const tl_avro_value *val = tl_avro_record_get(&items[i], "value");
		int64_t key;
		if (tl_avro_get_long(k, &key) < 0 || key < INT32_MIN || key > INT32_MAX)
			return tl_error_set(err, TL_ERR_CORRUPT, "map %s (id %d) entry %u has no int key", name, id, i);
		keys[i] = (int32_t)key;
		if (kind == 'l' ? tl_avro_get_long(val, &lv[i]) < 0 : tl_avro_get_bytes(val, &bv[i]) < 0)
			return tl_error_set(err, TL_ERR_CORRUPT, "map %s (id %d) entry %u has a bad value", name, id, i);
	}
	if (kind == 'l') {
		lm->n = n;
		lm->keys = keys;
		lm->values = lv;
	} else {
		bm->n = n;
		bm->keys = keys;
		bm->values = bv;
	}
	return 0;
}

static int read_data_file(tl_ice_manifest_reader *r, const tl_avro_value *df, tl_ice_data_file *f, tl_error *err)
{
	tl_arena *a = &r->arena;
	f->content = TL_ICE_CONTENT_DATA;
	if (tl_ice_manifest_get_int(df, 134, "content", false, &f->content, NULL, err) < 0)
		return -1;
	if (f->content < 0 || f->content > 2)
		return tl_error_set(err, TL_ERR_CORRUPT, "data file content %d is not 0, 1 or 2", f->content);
	if ((f->file_path = tl_ice_manifest_get_string(df, 100, "file_path", a, err)) == NULL ||
	    (f->file_format = tl_ice_manifest_get_string(df, 101, "file_format", a, err)) == NULL)
		return -1;
	if (tl_ice_manifest_get_long(df, 103, "record_count", true, &f->record_count, NULL, err) < 0 ||
	    tl_ice_manifest_get_long(df, 104, "file_size_in_bytes", true, &f->file_size_in_bytes, NULL, err) < 0)
		return -1;
	if (f->record_count < 0 || f->file_size_in_bytes < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "data file %s has a negative record count or size", f->file_path);

	const tl_avro_value *part = tl_avro_record_get_by_id(df, 102);
	if (part == NULL || tl_avro_value_type(part) != TL_AVRO_RECORD)
		return tl_error_set(err, TL_ERR_CORRUPT, "data file %s has no partition record", f->file_path);
	f->npartition = r->ptype.nfields;
	f->partition = f->npartition ? tl_arena_alloc(a, sizeof(tl_ice_value) * (size_t)f->npartition) : NULL;
	if (f->npartition && f->partition == NULL)
		return tl_error_nomem(err, "reading data file %s", f->file_path);
	for (int i = 0; i < f->npartition; i++) {
		const tl_ice_field *pf = &r->ptype.fields[i];
		const tl_avro_value *pv = tl_avro_record_get_by_id(part, pf->id);
		if (pv == NULL)
			pv = tl_avro_record_get(part, pf->name); /* old writers left out partition field ids */
		if (avro_to_ice(&pf->type, pv, &f->partition[i], pf->name, err) < 0)
			return -1;
	}

	if (read_map(a, df, 108, "column_sizes", 'l', &f->column_sizes, NULL, err) < 0 ||
	    read_map(a, df, 109, "value_counts", 'l', &f->value_counts, NULL, err) < 0 ||
	    read_map(a, df, 110, "null_value_counts", 'l', &f->null_value_counts, NULL, err) < 0 ||
	    read_map(a, df, 137, "nan_value_counts", 'l', &f->nan_value_counts, NULL, err) < 0 ||
	    read_map(a, df, 125, "lower_bounds", 'b', NULL, &f->lower_bounds, err) < 0 ||
	    read_map(a, df, 128, "upper_bounds", 'b', NULL, &f->upper_bounds, err) < 0)
		return -1;

	const tl_avro_value *items;
	uint32_t n;
	if (get_array(df, 132, "split_offsets", &items, &n, err) < 0)
		return -1;
	if (n > 0) {
		f->split_offsets = tl_arena_alloc(a, sizeof(int64_t) * n);
		if (f->split_offsets == NULL)
			return tl_error_nomem(err, "reading data file %s", f->file_path);
		for (uint32_t i = 0; i < n; i++)
			if (tl_avro_get_long(&items[i], &f->split_offsets[i]) < 0)
				return tl_error_set(err, TL_ERR_CORRUPT, "split_offsets item %u is not a long", i);
		f->n_split_offsets = n;
	}
	if (get_array(df, 135, "equality_ids", &items, &n, err) < 0)
		return -1;
	if (n > 0) {
		f->equality_ids = tl_arena_alloc(a, sizeof(int32_t) * n);
		if (f->equality_ids == NULL)
			return tl_error_nomem(err, "reading data file %s", f->file_path);
		for (uint32_t i = 0; i < n; i++)
			if (tl_avro_get_int(&items[i], &f->equality_ids[i]) < 0)
				return tl_error_set(err, TL_ERR_CORRUPT, "equality_ids item %u is not an int", i);
		f->n_equality_ids = n;
	}
	if (tl_ice_manifest_get_int(df, 140, "sort_order_id", false, &f->sort_order_id, &f->has_sort_order_id, err) < 0)
		return -1;
	return 0;
}

int tl_ice_manifest_reader_next(tl_ice_manifest_reader *r, const tl_ice_manifest_entry **out, tl_error *err)
{
	const tl_avro_value *rec;
	int rc = tl_avro_reader_next(r->avro, &rec, err);
	if (rc <= 0)
		return rc;
	tl_arena_reset(&r->arena);
	tl_ice_manifest_entry *e = &r->entry;
	memset(e, 0, sizeof(*e));
	if (tl_ice_manifest_get_int(rec, 0, "status", true, &e->status, NULL, err) < 0)
		return -1;
	if (e->status < 0 || e->status > 2)
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest entry status %d is not 0, 1 or 2", e->status);
	if (tl_ice_manifest_get_long(rec, 1, "snapshot_id", r->format_version == 1, &e->snapshot_id,
	                             &e->has_snapshot_id, err) < 0 ||
	    tl_ice_manifest_get_long(rec, 3, "sequence_number", false, &e->sequence_number,
	                             &e->has_sequence_number, err) < 0 ||
	    tl_ice_manifest_get_long(rec, 4, "file_sequence_number", false, &e->file_sequence_number,
	                             &e->has_file_sequence_number, err) < 0)
		return -1;
	const tl_avro_value *df = tl_avro_record_get_by_id(rec, 2);
	if (df == NULL || tl_avro_value_type(df) != TL_AVRO_RECORD)
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest entry has no data_file record (id 2)");
	if (read_data_file(r, df, &e->data_file, err) < 0)
		return -1;
	if ((r->content == TL_ICE_MANIFEST_DATA) != (e->data_file.content == TL_ICE_CONTENT_DATA))
		return tl_error_set(err, TL_ERR_CORRUPT, "%s manifest lists %s file %s",
		                    r->content == TL_ICE_MANIFEST_DATA ? "data" : "delete",
		                    e->data_file.content == TL_ICE_CONTENT_DATA ? "data" : "delete", e->data_file.file_path);
	*out = e;
	return 1;
}

/* ------------------------------------------------------------ writer */

struct tl_ice_manifest_writer {
	tl_output *out;
	uint64_t start;
	tl_avro_schema *avro_schema;
	tl_avro_writer *avro;
	tl_arena arena;            /* one entry's values */
	tl_arena keep;             /* summary bounds */
	int content;
	int64_t snapshot_id;
	int32_t spec_id;
	tl_ice_type ptype;
	tl_ice_manifest_file summary;
	bool have_min_seq;
	tl_ice_value *lower, *upper;  /* per partition field; is_null until a value is seen */
	tl_ice_field_summary *parts;
};

static void map_schema(tl_buf *s, const char *name, int32_t id, int32_t kid, int32_t vid, const char *vtype)
{
	tl_buf_printf(s,
	              ",{\"name\":\"%s\",\"field-id\":%d,\"default\":null,\"type\":[\"null\",{\"type\":\"array\","
	              "\"logicalType\":\"map\",\"items\":{\"type\":\"record\",\"name\":\"k%d_v%d\",\"fields\":["
	              "{\"name\":\"key\",\"type\":\"int\",\"field-id\":%d},"
	              "{\"name\":\"value\",\"type\":\"%s\",\"field-id\":%d}]}}]}",
	              name, id, kid, vid, kid, vtype, vid);
}

/* The spec's v2 manifest_entry schema with the partition struct of `ptype`. */
static int entry_schema_json(const tl_ice_type *ptype, tl_buf *s, tl_error *err)
{
	tl_buf_append_str(s,
	                  "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
	                  "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
	                  "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1},"
	                  "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":3},"
	                  "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":4},"
	                  "{\"name\":\"data_file\",\"field-id\":2,\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
	                  "{\"name\":\"content\",\"type\":\"int\",\"field-id\":134},"
	                  "{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
	                  "{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"
	                  "{\"name\":\"partition\",\"field-id\":102,\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":[");
	for (int i = 0; i < ptype->nfields; i++) {
		const tl_ice_field *f = &ptype->fields[i];
		tl_buf_append_str(s, i ? ",{\"name\":" : "{\"name\":");
		tl_ice_manifest_json_string(s, f->name);
		tl_buf_printf(s, ",\"field-id\":%d,\"default\":null,\"type\":[\"null\",", f->id);
		if (avro_type_json(&f->type, f->id, s, err) < 0) {
			tl_error_prefix(err, "partition field %s", f->name);
			return -1;
		}
		tl_buf_append_str(s, "]}");
	}
	tl_buf_append_str(s, "]}},"
	                     "{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
	                     "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104}");
	map_schema(s, "column_sizes", 108, 117, 118, "long");
	map_schema(s, "value_counts", 109, 119, 120, "long");
	map_schema(s, "null_value_counts", 110, 121, 122, "long");
	map_schema(s, "nan_value_counts", 137, 138, 139, "long");
	map_schema(s, "lower_bounds", 125, 126, 127, "bytes");
	map_schema(s, "upper_bounds", 128, 129, 130, "bytes");
	tl_buf_append_str(s,
	                  ",{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":131},"
	                  "{\"name\":\"split_offsets\",\"default\":null,\"field-id\":132,\"type\":[\"null\","
	                  "{\"type\":\"array\",\"items\":\"long\",\"element-id\":133}]},"
	                  "{\"name\":\"equality_ids\",\"default\":null,\"field-id\":135,\"type\":[\"null\","
	                  "{\"type\":\"array\",\"items\":\"int\",\"element-id\":136}]},"
	                  "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"default\":null,\"field-id\":140}"
	                  "]}}]}");
	return 0;
}

void tl_ice_manifest_writer_free(tl_ice_manifest_writer *w)
{
	if (w == NULL)
		return;
	tl_avro_writer_free(w->avro);
	tl_avro_schema_free(w->avro_schema);
	tl_arena_free(&w->arena);
	tl_arena_free(&w->keep);
	tl_ice_type_free(&w->ptype);
	tl_free(w->lower);
	tl_free(w->upper);
	tl_free(w->parts);
	tl_free(w);
}

static char *json_text(json_t *j)
{
	char *s = j ? tl_json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(j);
	return s;
}

tl_ice_manifest_writer *tl_ice_manifest_writer_open(tl_output *out, const tl_ice_schema *schema,
                                                    const tl_ice_partition_spec *spec, int content,
                                                    int64_t snapshot_id, tl_error *err)
{
	if (content != TL_ICE_MANIFEST_DATA && content != TL_ICE_MANIFEST_DELETES) {
		tl_error_set(err, TL_ERR_INVALID, "manifest content %d is not data (0) or deletes (1)", content);
		return NULL;
	}
	tl_ice_manifest_writer *w = tl_calloc(1, sizeof(*w));
	if (w == NULL) {
		tl_error_nomem(err, "opening a manifest writer");
		return NULL;
	}
	w->out = out;
	w->start = out->offset;
	w->content = content;
	w->snapshot_id = snapshot_id;
	w->spec_id = spec->spec_id;
	tl_arena_init(&w->arena, 4096);
	tl_arena_init(&w->keep, 1024);
	if (spec->nfields > 0) {
		if (tl_ice_partition_type(spec, schema, &w->ptype, err) < 0)
			goto fail;
	} else {
		w->ptype.id = TL_ICE_STRUCT;
	}
	int np = w->ptype.nfields;
	w->lower = tl_calloc((size_t)np + 1, sizeof(tl_ice_value));
	w->upper = tl_calloc((size_t)np + 1, sizeof(tl_ice_value));
	w->parts = tl_calloc((size_t)np + 1, sizeof(tl_ice_field_summary));
	if (w->lower == NULL || w->upper == NULL || w->parts == NULL) {
		tl_error_nomem(err, "opening a manifest writer");
		goto fail;
	}
	for (int i = 0; i < np; i++)
		w->lower[i].is_null = w->upper[i].is_null = true;

	tl_buf s;
	tl_buf_init(&s);
	int rc = entry_schema_json(&w->ptype, &s, err);
	if (rc == 0)
		rc = tl_buf_check(&s, err, "writing a manifest's schema");
	if (rc == 0)
		w->avro_schema = tl_avro_schema_parse((const char *)s.data, s.len, err);
	tl_buf_free(&s);
	if (w->avro_schema == NULL)
		goto fail;

	char *schema_json = json_text(tl_ice_schema_to_json(schema));
	json_t *spec_obj = tl_ice_partition_spec_to_json(spec);
	char *spec_json = json_text(json_incref(json_object_get(spec_obj, "fields")));
	json_decref(spec_obj);
	char schema_id[16], spec_id[16];
	snprintf(schema_id, sizeof(schema_id), "%d", schema->schema_id);
	snprintf(spec_id, sizeof(spec_id), "%d", spec->spec_id);
	const char *content_name = content == TL_ICE_MANIFEST_DATA ? "data" : "deletes";
	tl_avro_meta meta[6] = {
		{"schema", {(const uint8_t *)schema_json, schema_json ? (uint32_t)strlen(schema_json) : 0}},
		{"schema-id", {(const uint8_t *)schema_id, (uint32_t)strlen(schema_id)}},
		{"partition-spec", {(const uint8_t *)spec_json, spec_json ? (uint32_t)strlen(spec_json) : 0}},
		{"partition-spec-id", {(const uint8_t *)spec_id, (uint32_t)strlen(spec_id)}},
		{"format-version", {(const uint8_t *)"2", 1}},
		{"content", {(const uint8_t *)content_name, (uint32_t)strlen(content_name)}},
	};
	if (schema_json == NULL || spec_json == NULL) {
		tl_error_set(err, TL_ERR_NOMEM, "cannot render the manifest's schema or spec JSON");
	} else {
		w->avro = tl_avro_writer_open(out, w->avro_schema, TL_AVRO_CODEC_DEFLATE, meta, 6, err);
	}
	tl_free(schema_json);
	tl_free(spec_json);
	if (w->avro == NULL)
		goto fail;
	return w;
fail:
	tl_ice_manifest_writer_free(w);
	return NULL;
}

static tl_avro_value *opt_field(tl_avro_value *rec, const char *name, tl_avro_type type)
{
	return tl_avro_record_field(rec, name, type);
}

static void put_long_map(tl_arena *a, tl_avro_value *rec, const char *name, const tl_ice_long_map *m)
{
	if (m->n == 0)
		return; /* left null */
	tl_avro_value *arr = opt_field(rec, name, TL_AVRO_ARRAY);
	tl_avro_init_list(a, arr, m->n);
	for (uint32_t i = 0; i < m->n; i++) {
		tl_avro_value *kv = tl_avro_item(arr, i, TL_AVRO_RECORD);
		tl_avro_init_record(a, kv);
		tl_avro_record_field(kv, "key", TL_AVRO_INT)->u.i32 = m->keys[i];
		tl_avro_record_field(kv, "value", TL_AVRO_LONG)->u.i64 = m->values[i];
	}
}

static void put_bytes_map(tl_arena *a, tl_avro_value *rec, const char *name, const tl_ice_bytes_map *m)
{
	if (m->n == 0)
		return;
	tl_avro_value *arr = opt_field(rec, name, TL_AVRO_ARRAY);
	tl_avro_init_list(a, arr, m->n);
	for (uint32_t i = 0; i < m->n; i++) {
		tl_avro_value *kv = tl_avro_item(arr, i, TL_AVRO_RECORD);
		tl_avro_init_record(a, kv);
		tl_avro_record_field(kv, "key", TL_AVRO_INT)->u.i32 = m->keys[i];
		tl_avro_record_field(kv, "value", TL_AVRO_BYTES)->u.bytes = m->values[i];
	}
}

/* False when out of memory (dst unchanged). */
static bool copy_value(tl_arena *keep, tl_ice_value *dst, const tl_ice_value *src)
{
	tl_ice_value copy = *src;
	if (src->ptr != NULL && src->len > 0 && src->len <= UINT32_MAX) {
		tl_bytes b = tl_arena_copy(keep, src->ptr, (uint32_t)src->len);
		if (b.ptr == NULL)
			return false;
		copy.ptr = b.ptr;
	}
	*dst = copy;
	return true;
}

/* -1 when out of memory (the bounds may then miss this file: the manifest is not finished). */
static int summarize(tl_ice_manifest_writer *w, const tl_ice_data_file *f, tl_error *err)
{
	for (int i = 0; i < w->ptype.nfields; i++) {
		const tl_ice_type *t = &w->ptype.fields[i].type;
		const tl_ice_value *v = &f->partition[i];
		if (v->is_null) {
			w->parts[i].contains_null = true;
			continue;
		}
		if ((t->id == TL_ICE_FLOAT && v->v.f32 != v->v.f32) || (t->id == TL_ICE_DOUBLE && v->v.f64 != v->v.f64)) {
			w->parts[i].contains_nan = true;
			continue;
		}
		if ((w->lower[i].is_null || ice_compare(t, v, &w->lower[i]) < 0) && !copy_value(&w->keep, &w->lower[i], v))
			return tl_error_nomem(err, "summarizing partition values");
		if ((w->upper[i].is_null || ice_compare(t, v, &w->upper[i]) > 0) && !copy_value(&w->keep, &w->upper[i], v))
			return tl_error_nomem(err, "summarizing partition values");
	}
	return 0;
}

int tl_ice_manifest_writer_add(tl_ice_manifest_writer *w, const tl_ice_manifest_entry *e, tl_error *err)
{
	const tl_ice_data_file *f = &e->data_file;
	if (e->status < 0 || e->status > 2)
		return tl_error_set(err, TL_ERR_INVALID, "manifest entry status %d is not 0, 1 or 2", e->status);
	if (f->npartition != w->ptype.nfields)
		return tl_error_set(err, TL_ERR_INVALID, "data file %s has %d partition values, the spec has %d fields",
		                    f->file_path ? f->file_path : "?", f->npartition, w->ptype.nfields);
	if (f->file_path == NULL || f->file_format == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "data file has no path or format");
	if ((w->content == TL_ICE_MANIFEST_DATA) != (f->content == TL_ICE_CONTENT_DATA) || f->content < 0 ||
	    f->content > 2)
		return tl_error_set(err, TL_ERR_INVALID, "data file %s: content %d does not belong in this manifest",
		                    f->file_path, f->content);

	if (tl_check_interrupt(err) < 0)
		return -1;
	/* Building the record cannot fail part-way (value.c's sink); one count says whether it did. */
	unsigned long failures = tl_mem_failures();
	tl_arena *a = &w->arena;
	tl_arena_reset(a);
	tl_avro_value *rec = tl_avro_record_new(a, w->avro_schema);
	tl_avro_record_field(rec, "status", TL_AVRO_INT)->u.i32 = e->status;
	if (e->has_snapshot_id)
		tl_avro_record_field(rec, "snapshot_id", TL_AVRO_LONG)->u.i64 = e->snapshot_id;
	if (e->has_sequence_number)
		tl_avro_record_field(rec, "sequence_number", TL_AVRO_LONG)->u.i64 = e->sequence_number;
	if (e->has_file_sequence_number)
		tl_avro_record_field(rec, "file_sequence_number", TL_AVRO_LONG)->u.i64 = e->file_sequence_number;

	tl_avro_value *df = tl_avro_record_field(rec, "data_file", TL_AVRO_RECORD);
	tl_avro_init_record(a, df);
	tl_avro_record_field(df, "content", TL_AVRO_INT)->u.i32 = f->content;
	tl_avro_value *v = tl_avro_record_field(df, "file_path", TL_AVRO_STRING);
	v->u.bytes.ptr = (const uint8_t *)f->file_path;
	v->u.bytes.len = (uint32_t)strlen(f->file_path);
	v = tl_avro_record_field(df, "file_format", TL_AVRO_STRING);
	v->u.bytes.ptr = (const uint8_t *)f->file_format;
	v->u.bytes.len = (uint32_t)strlen(f->file_format);

	tl_avro_value *part = tl_avro_record_field(df, "partition", TL_AVRO_RECORD);
	tl_avro_init_record(a, part);
	const tl_avro_schema *pschema = part->schema;
	for (int i = 0; i < w->ptype.nfields; i++) {
		const tl_ice_field *pf = &w->ptype.fields[i];
		if (ice_to_avro(a, &pf->type, &f->partition[i], &part->u.record.fields[i], pschema->fields[i].type,
		                pf->name, err) < 0)
			return -1;
	}
	tl_avro_record_field(df, "record_count", TL_AVRO_LONG)->u.i64 = f->record_count;
	tl_avro_record_field(df, "file_size_in_bytes", TL_AVRO_LONG)->u.i64 = f->file_size_in_bytes;
	put_long_map(a, df, "column_sizes", &f->column_sizes);
	put_long_map(a, df, "value_counts", &f->value_counts);
	put_long_map(a, df, "null_value_counts", &f->null_value_counts);
	put_long_map(a, df, "nan_value_counts", &f->nan_value_counts);
	put_bytes_map(a, df, "lower_bounds", &f->lower_bounds);
	put_bytes_map(a, df, "upper_bounds", &f->upper_bounds);
	if (f->n_split_offsets > 0) {
		tl_avro_value *arr = opt_field(df, "split_offsets", TL_AVRO_ARRAY);
		tl_avro_init_list(a, arr, f->n_split_offsets);
		for (uint32_t i = 0; i < f->n_split_offsets; i++)
			tl_avro_item(arr, i, TL_AVRO_LONG)->u.i64 = f->split_offsets[i];
	}
	if (f->n_equality_ids > 0) {
		tl_avro_value *arr = opt_field(df, "equality_ids", TL_AVRO_ARRAY);
		tl_avro_init_list(a, arr, f->n_equality_ids);
		for (uint32_t i = 0; i < f->n_equality_ids; i++)
			tl_avro_item(arr, i, TL_AVRO_INT)->u.i32 = f->equality_ids[i];
	}
	if (f->has_sort_order_id)
		tl_avro_record_field(df, "sort_order_id", TL_AVRO_INT)->u.i32 = f->sort_order_id;

	if (tl_mem_failures() != failures)
		return tl_error_nomem(err, "writing the manifest entry of %s", f->file_path);
	if (tl_avro_writer_append(w->avro, rec, err) < 0)
		return -1;

	tl_ice_manifest_file *s = &w->summary;
	switch (e->status) {
	case TL_ICE_STATUS_ADDED:
		s->added_files_count++;
		s->added_rows_count += f->record_count;
		break;
	case TL_ICE_STATUS_EXISTING:
		s->existing_files_count++;
		s->existing_rows_count += f->record_count;
		break;
	default:
		s->deleted_files_count++;
		s->deleted_rows_count += f->record_count;
		break;
	}
	if (e->has_sequence_number && (!w->have_min_seq || e->sequence_number < s->min_sequence_number)) {
		s->min_sequence_number = e->sequence_number;
		w->have_min_seq = true;
	}
	return summarize(w, f, err);
}

int tl_ice_manifest_writer_close(tl_ice_manifest_writer *w, tl_ice_manifest_file *out, tl_error *err)
{
	if (tl_avro_writer_close(w->avro, err) < 0)
		return -1;
	tl_ice_manifest_file *s = &w->summary;
	s->manifest_path = NULL;
	s->manifest_length = (int64_t)(w->out->offset - w->start);
	s->partition_spec_id = w->spec_id;
	s->content = w->content;
	s->added_snapshot_id = w->snapshot_id;
	s->sequence_number = -1;
	if (!w->have_min_seq)
		s->min_sequence_number = -1;
	s->n_partitions = (uint32_t)w->ptype.nfields;
	s->partitions = s->n_partitions ? w->parts : NULL;
	tl_buf b;
	tl_buf_init(&b);
	for (int i = 0; i < w->ptype.nfields; i++) {
		const tl_ice_type *t = &w->ptype.fields[i].type;
		tl_ice_field_summary *p = &w->parts[i];
		p->has_contains_nan = true;
		for (int k = 0; k < 2; k++) {
			const tl_ice_value *v = k ? &w->upper[i] : &w->lower[i];
			if (v->is_null)
				continue;
			tl_buf_reset(&b);
			if (tl_ice_value_serialize(t, v, &b, err) < 0) {
				tl_buf_free(&b);
				return -1;
			}
			tl_bytes copy = {(const uint8_t *)"", 0};
			if (b.len > 0 && (copy = tl_arena_copy(&w->keep, b.data, (uint32_t)b.len)).ptr == NULL) {
				tl_buf_free(&b);
				return tl_error_nomem(err, "summarizing partition values");
			}
			if (k) {
				p->has_upper_bound = true;
				p->upper_bound = copy;
			} else {
				p->has_lower_bound = true;
				p->lower_bound = copy;
			}
		}
	}
	tl_buf_free(&b);
	*out = *s;
	return 0;
}
