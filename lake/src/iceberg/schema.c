/*
 * schema.c: Iceberg types and schemas, their metadata-JSON form, lookups,
 * and the Parquet column the spec prescribes for each primitive type.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/json_fields.h"
#include "tierlake/iceberg_schema.h"
#include "iceberg/schema_json.h"
#include "common/json_load.h"

/* Nesting deeper than this in a schema is treated as hostile input. */
#define MAX_SCHEMA_DEPTH 64

static const char *const primitive_names[] = {
	[TL_ICE_BOOLEAN] = "boolean",
	[TL_ICE_INT] = "int",
	[TL_ICE_LONG] = "long",
	[TL_ICE_FLOAT] = "float",
	[TL_ICE_DOUBLE] = "double",
	[TL_ICE_DATE] = "date",
	[TL_ICE_TIME] = "time",
	[TL_ICE_TIMESTAMP] = "timestamp",
	[TL_ICE_TIMESTAMPTZ] = "timestamptz",
	[TL_ICE_STRING] = "string",
	[TL_ICE_UUID] = "uuid",
	[TL_ICE_BINARY] = "binary",
};

bool tl_ice_type_is_primitive(tl_ice_type_id id)
{
	return id != TL_ICE_STRUCT && id != TL_ICE_LIST && id != TL_ICE_MAP;
}

void tl_ice_type_text(const tl_ice_type *type, tl_buf *out)
{
	switch (type->id) {
	case TL_ICE_DECIMAL:
		tl_buf_printf(out, "decimal(%d, %d)", (int)type->precision, (int)type->scale);
		return;
	case TL_ICE_FIXED:
		tl_buf_printf(out, "fixed[%d]", (int)type->length);
		return;
	case TL_ICE_STRUCT:
		tl_buf_append_str(out, "struct");
		return;
	case TL_ICE_LIST:
		tl_buf_append_str(out, "list");
		return;
	case TL_ICE_MAP:
		tl_buf_append_str(out, "map");
		return;
	default:
		tl_buf_append_str(out, primitive_names[type->id]);
		return;
	}
}

/* Parses a decimal integer at *p (skipping spaces around it); -1 if none or too large. */
static int parse_small_int(const char **p)
{
	const char *s = *p;
	while (*s == ' ')
		s++;
	if (*s < '0' || *s > '9')
		return -1;
	long v = 0;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s - '0');
		if (v > 1000000000L)
			return -1;
		s++;
	}
	while (*s == ' ')
		s++;
	*p = s;
	return (int)v;
}

int tl_ice_type_parse_primitive(const char *text, tl_ice_type *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(primitive_names) / sizeof(primitive_names[0]); i++) {
		if (primitive_names[i] && strcmp(text, primitive_names[i]) == 0) {
			out->id = (tl_ice_type_id)i;
			return 0;
		}
	}
	if (strncmp(text, "decimal(", 8) == 0) {
		const char *p = text + 8;
		int precision = parse_small_int(&p);
		if (precision < 0 || *p != ',')
			goto bad;
		p++;
		int scale = parse_small_int(&p);
		if (scale < 0 || strcmp(p, ")") != 0)
			goto bad;
		if (precision < 1 || precision > TL_ICE_DECIMAL_MAX_PRECISION || scale > precision)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "type \"%s\": precision must be 1..38 and scale at most the precision", text);
		out->id = TL_ICE_DECIMAL;
		out->precision = precision;
		out->scale = scale;
		return 0;
	}
	if (strncmp(text, "fixed[", 6) == 0) {
		const char *p = text + 6;
		int length = parse_small_int(&p);
		if (length < 1 || strcmp(p, "]") != 0)
			goto bad;
		out->id = TL_ICE_FIXED;
		out->length = length;
		return 0;
	}
bad:
	return tl_error_set(err, TL_ERR_UNSUPPORTED, "unknown Iceberg type \"%s\"", text);
}

/* ---- freeing and copying ---- */

static void field_free(tl_ice_field *f);

void tl_ice_type_free(tl_ice_type *t)
{
	for (int i = 0; i < t->nfields; i++)
		field_free(&t->fields[i]);
	tl_free(t->fields);
	t->fields = NULL;
	t->nfields = 0;
}

static void field_free(tl_ice_field *f)
{
	tl_free(f->name);
	tl_free(f->doc);
	tl_free(f->initial_default);
	tl_ice_type_free(&f->type);
}

/* -1 when out of memory; dst is then complete enough for field_free. */
static int field_copy(const tl_ice_field *src, tl_ice_field *dst)
{
	*dst = *src;
	dst->name = tl_strdup(src->name);
	dst->doc = src->doc ? tl_strdup(src->doc) : NULL;
	dst->initial_default = src->initial_default ? tl_strdup(src->initial_default) : NULL;
	dst->type.fields = NULL;
	dst->type.nfields = 0;
	if (dst->name == NULL || (src->doc && dst->doc == NULL) || (src->initial_default && dst->initial_default == NULL))
		return -1;
	if (src->type.nfields > 0) {
		dst->type.fields = tl_calloc((size_t)src->type.nfields, sizeof(tl_ice_field));
		if (dst->type.fields == NULL)
			return -1;
		dst->type.nfields = src->type.nfields;
		for (int i = 0; i < src->type.nfields; i++)
			if (field_copy(&src->type.fields[i], &dst->type.fields[i]) < 0) {
				dst->type.nfields = i + 1;
				return -1;
			}
	}
	return 0;
}

void tl_ice_schema_free(tl_ice_schema *schema)
{
	if (schema == NULL)
		return;
	for (int i = 0; i < schema->nfields; i++)
		field_free(&schema->fields[i]);
	tl_free(schema->fields);
	tl_free(schema->identifier_ids);
	memset(schema, 0, sizeof(*schema));
}

int tl_ice_schema_copy(const tl_ice_schema *src, tl_ice_schema *dst)
{
	*dst = *src;
	dst->identifier_ids = NULL;
	dst->nfields = 0;
	dst->fields = src->nfields ? tl_calloc((size_t)src->nfields, sizeof(tl_ice_field)) : NULL;
	if (src->nfields && dst->fields == NULL)
		goto nomem;
	for (int i = 0; i < src->nfields; i++) {
		dst->nfields = i + 1;
		if (field_copy(&src->fields[i], &dst->fields[i]) < 0)
			goto nomem;
	}
	if (src->nidentifier_ids > 0) {
		dst->identifier_ids = tl_malloc((size_t)src->nidentifier_ids * sizeof(int32_t));
		if (dst->identifier_ids == NULL)
			goto nomem;
		memcpy(dst->identifier_ids, src->identifier_ids, (size_t)src->nidentifier_ids * sizeof(int32_t));
	}
	return 0;
nomem:
	tl_ice_schema_free(dst);
	return -1;
}

static bool field_equal(const tl_ice_field *a, const tl_ice_field *b)
{
	return a->id == b->id && a->required == b->required && strcmp(a->name, b->name) == 0 &&
	       tl_ice_type_equal(&a->type, &b->type);
}

bool tl_ice_type_equal(const tl_ice_type *a, const tl_ice_type *b)
{
	if (a->id != b->id || a->precision != b->precision || a->scale != b->scale ||
	    a->length != b->length || a->nfields != b->nfields)
		return false;
	for (int i = 0; i < a->nfields; i++)
		if (!field_equal(&a->fields[i], &b->fields[i]))
			return false;
	return true;
}

bool tl_ice_schema_equal(const tl_ice_schema *a, const tl_ice_schema *b)
{
	if (a->schema_id != b->schema_id || a->nfields != b->nfields ||
	    a->nidentifier_ids != b->nidentifier_ids)
		return false;
	for (int i = 0; i < a->nfields; i++)
		if (!field_equal(&a->fields[i], &b->fields[i]))
			return false;
	for (int i = 0; i < a->nidentifier_ids; i++)
		if (a->identifier_ids[i] != b->identifier_ids[i])
			return false;
	return true;
}

/* ---- lookups ---- */

static const tl_ice_field *find_id_in(const tl_ice_field *fields, int n, int32_t id)
{
	for (int i = 0; i < n; i++) {
		if (fields[i].id == id)
			return &fields[i];
		const tl_ice_field *f = find_id_in(fields[i].type.fields, fields[i].type.nfields, id);
		if (f)
			return f;
	}
	return NULL;
}

const tl_ice_field *tl_ice_schema_find_id(const tl_ice_schema *schema, int32_t id)
{
	return find_id_in(schema->fields, schema->nfields, id);
}

const tl_ice_field *tl_ice_schema_find_name(const tl_ice_schema *schema, const char *name)
{
	const tl_ice_field *fields = schema->fields;
	int n = schema->nfields;
	const char *part = name;
	for (;;) {
		const char *dot = strchr(part, '.');
		size_t len = dot ? (size_t)(dot - part) : strlen(part);
		const tl_ice_field *found = NULL;
		for (int i = 0; i < n; i++) {
			if (strlen(fields[i].name) == len && memcmp(fields[i].name, part, len) == 0) {
				found = &fields[i];
				break;
			}
		}
		/* A whole name with dots in it wins over a path. */
		if (dot && found == NULL && part == name) {
			for (int i = 0; i < n; i++)
				if (strcmp(fields[i].name, name) == 0)
					return &fields[i];
		}
		if (found == NULL || dot == NULL)
			return found;
		if (found->type.id != TL_ICE_STRUCT)
			return NULL;
		fields = found->type.fields;
		n = found->type.nfields;
		part = dot + 1;
	}
}

static int32_t max_id_in(const tl_ice_field *fields, int n)
{
	int32_t max = 0;
	for (int i = 0; i < n; i++) {
		if (fields[i].id > max)
			max = fields[i].id;
		int32_t sub = max_id_in(fields[i].type.fields, fields[i].type.nfields);
		if (sub > max)
			max = sub;
	}
	return max;
}

int32_t tl_ice_schema_max_id(const tl_ice_schema *schema)
{
	return max_id_in(schema->fields, schema->nfields);
}

/*
 * Every id in the tree is positive and appears once, and sibling names are
 * unique. Sorting keeps this O(n log n): a hostile file may hold many fields.
 */
typedef struct id_entry {
	int32_t id;
	const tl_ice_field *field;
} id_entry;

static int compare_id_entries(const void *a, const void *b)
{
	int32_t x = ((const id_entry *)a)->id, y = ((const id_entry *)b)->id;
	return (x > y) - (x < y);
}

static int compare_field_names(const void *a, const void *b)
{
	return strcmp((*(const tl_ice_field *const *)a)->name, (*(const tl_ice_field *const *)b)->name);
}

static size_t count_fields(const tl_ice_field *fields, int n)
{
	size_t total = (size_t)n;
	for (int i = 0; i < n; i++)
		total += count_fields(fields[i].type.fields, fields[i].type.nfields);
	return total;
}

/* Checks names and sibling-name uniqueness level by level and collects ids. */
static int collect_ids(const tl_ice_field *fields, int n, id_entry *ids, size_t *nids, tl_error *err)
{
	if (n == 0)
		return 0;
	const tl_ice_field **sorted = tl_malloc((size_t)n * sizeof(*sorted));
	if (sorted == NULL)
		return tl_error_nomem(err, "checking a schema");
	int rc = 0;
	for (int i = 0; i < n; i++) {
		if (fields[i].name == NULL || fields[i].name[0] == '\0') {
			rc = tl_error_set(err, TL_ERR_CORRUPT, "schema field %d has no name", (int)fields[i].id);
			goto done;
		}
		if (fields[i].id <= 0) {
			rc = tl_error_set(err, TL_ERR_CORRUPT, "schema field \"%s\" has id %d; ids must be positive",
			                  fields[i].name, (int)fields[i].id);
			goto done;
		}
		sorted[i] = &fields[i];
		ids[*nids].id = fields[i].id;
		ids[*nids].field = &fields[i];
		(*nids)++;
	}
	qsort(sorted, (size_t)n, sizeof(*sorted), compare_field_names);
	for (int i = 1; i < n; i++) {
		if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
			rc = tl_error_set(err, TL_ERR_CORRUPT, "schema has two fields named \"%s\"", sorted[i]->name);
			goto done;
		}
	}
	for (int i = 0; i < n && rc == 0; i++)
		rc = collect_ids(fields[i].type.fields, fields[i].type.nfields, ids, nids, err);
done:
	tl_free(sorted);
	return rc;
}

static int check_ids(const tl_ice_field *fields, int n, tl_error *err)
{
	size_t total = count_fields(fields, n), nids = 0;
	if (total == 0)
		return 0;
	id_entry *ids = tl_malloc(total * sizeof(*ids));
	if (ids == NULL)
		return tl_error_nomem(err, "checking a schema");
	int rc = collect_ids(fields, n, ids, &nids, err);
	if (rc == 0) {
		qsort(ids, nids, sizeof(*ids), compare_id_entries);
		for (size_t i = 1; i < nids; i++) {
			if (ids[i - 1].id == ids[i].id) {
				rc = tl_error_set(err, TL_ERR_CORRUPT, "schema field id %d is used by \"%s\" and \"%s\"",
				                  (int)ids[i].id, ids[i - 1].field->name, ids[i].field->name);
				break;
			}
		}
	}
	tl_free(ids);
	return rc;
}

static int check_identifiers(const tl_ice_schema *schema, tl_error *err)
{
	for (int i = 0; i < schema->nidentifier_ids; i++) {
		const tl_ice_field *f = tl_ice_schema_find_id(schema, schema->identifier_ids[i]);
		if (f == NULL)
			return tl_error_set(err, TL_ERR_CORRUPT, "schema identifier-field-ids names unknown field id %d",
			                    (int)schema->identifier_ids[i]);
	}
	return 0;
}

int tl_ice_schema_init(tl_ice_schema *schema, int32_t schema_id,
                       const tl_ice_field *fields, int nfields, tl_error *err)
{
	tl_ice_schema tmp = {.schema_id = schema_id, .nfields = nfields, .fields = (tl_ice_field *)fields};
	if (check_ids(fields, nfields, err) < 0) {
		if (err && err->code != TL_ERR_NOMEM)
			err->code = TL_ERR_INVALID;  /* the caller's fields, not a file */
		return -1;
	}
	if (tl_ice_schema_copy(&tmp, schema) < 0)
		return tl_error_nomem(err, "copying a schema");
	return 0;
}

/* ---- JSON ---- */

static int field_from_json(const json_t *json, const char *what, tl_ice_field *out, int depth, tl_error *err);

static int get_bool(const json_t *obj, const char *key, const char *what, bool *out, tl_error *err)
{
	const json_t *v = json_object_get(obj, key);
	if (v == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: missing required field \"%s\"", what, key);
	if (!json_is_boolean(v))
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: \"%s\" is not a boolean", what, key);
	*out = json_is_true(v);
	return 0;
}

static int fields_from_json(const json_t *arr, const char *what, tl_ice_type *out, int depth, tl_error *err)
{
	if (!json_is_array(arr))
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: \"fields\" is missing or not an array", what);
	size_t n = json_array_size(arr);
	if (n > 100000)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: %zu fields is more than this library accepts", what, n);
	out->nfields = 0;
	out->fields = n ? tl_calloc(n, sizeof(tl_ice_field)) : NULL;
	if (n && out->fields == NULL)
		return tl_error_nomem(err, "reading %s", what);
	for (size_t i = 0; i < n; i++) {
		out->nfields++;  /* counted first so a half-parsed field is freed too */
		if (field_from_json(json_array_get(arr, i), what, &out->fields[i], depth + 1, err) < 0)
			return -1;
	}
	return 0;
}

/* Parses a type: a string for primitives, an object for nested types. */
static int type_from_json(const json_t *json, const char *what, tl_ice_type *out, int depth, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	if (depth > MAX_SCHEMA_DEPTH)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: types nest more than %d deep", what, MAX_SCHEMA_DEPTH);
	if (json_is_string(json))
		return tl_ice_type_parse_primitive(json_string_value(json), out, err);
	if (!json_is_object(json))
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: \"type\" is neither a string nor an object", what);
	const char *kind = json_string_value(json_object_get(json, "type"));
	if (kind == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: nested type has no \"type\" string", what);
	if (strcmp(kind, "struct") == 0) {
		out->id = TL_ICE_STRUCT;
		return fields_from_json(json_object_get(json, "fields"), what, out, depth, err);
	}
	if (strcmp(kind, "list") == 0) {
		out->id = TL_ICE_LIST;
		out->fields = tl_calloc(1, sizeof(tl_ice_field));
		if (out->fields == NULL)
			return tl_error_nomem(err, "reading %s", what);
		out->nfields = 1;
		tl_ice_field *e = &out->fields[0];
		e->name = tl_strdup("element");
		if (e->name == NULL)
			return tl_error_nomem(err, "reading %s", what);
		if (ice_json_int32(json, "element-id", what, &e->id, err) < 0 ||
		    get_bool(json, "element-required", what, &e->required, err) < 0)
			return -1;
		const json_t *et = json_object_get(json, "element");
		if (et == NULL)
			return tl_error_set(err, TL_ERR_CORRUPT, "%s: list has no \"element\"", what);
		return type_from_json(et, what, &e->type, depth + 1, err);
	}
	if (strcmp(kind, "map") == 0) {
		out->id = TL_ICE_MAP;
		out->fields = tl_calloc(2, sizeof(tl_ice_field));
		if (out->fields == NULL)
			return tl_error_nomem(err, "reading %s", what);
		out->nfields = 2;
		tl_ice_field *k = &out->fields[0], *v = &out->fields[1];
		k->name = tl_strdup("key");
		v->name = tl_strdup("value");
		if (k->name == NULL || v->name == NULL)
			return tl_error_nomem(err, "reading %s", what);
		k->required = true;
		if (ice_json_int32(json, "key-id", what, &k->id, err) < 0 ||
		    ice_json_int32(json, "value-id", what, &v->id, err) < 0 ||
		    get_bool(json, "value-required", what, &v->required, err) < 0)
			return -1;
		const json_t *kt = json_object_get(json, "key"), *vt = json_object_get(json, "value");
		if (kt == NULL || vt == NULL)
			return tl_error_set(err, TL_ERR_CORRUPT, "%s: map lacks \"key\" or \"value\"", what);
		if (type_from_json(kt, what, &k->type, depth + 1, err) < 0)
			return -1;
		return type_from_json(vt, what, &v->type, depth + 1, err);
	}
	return tl_error_set(err, TL_ERR_UNSUPPORTED, "%s: unknown nested type \"%s\"", what, kind);
}

static int field_from_json(const json_t *json, const char *what, tl_ice_field *out, int depth, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!json_is_object(json))
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: a field is not an object", what);
	const char *name = json_string_value(json_object_get(json, "name"));
	if (name == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: a field lacks \"name\"", what);
	out->name = tl_strdup(name);
	const char *doc = json_string_value(json_object_get(json, "doc"));
	out->doc = doc ? tl_strdup(doc) : NULL;
	const json_t *initial = json_object_get(json, "initial-default");
	if (initial != NULL && !json_is_null(initial))
		out->initial_default = tl_json_dumps(initial, JSON_ENCODE_ANY | JSON_COMPACT);
	if (out->name == NULL || (doc && out->doc == NULL) ||
	    (initial != NULL && !json_is_null(initial) && out->initial_default == NULL))
		return tl_error_nomem(err, "reading %s", what);
	char fwhat[200];
	snprintf(fwhat, sizeof(fwhat), "%s field \"%.100s\"", what, name);
	if (ice_json_int32(json, "id", fwhat, &out->id, err) < 0 ||
	    get_bool(json, "required", fwhat, &out->required, err) < 0)
		return -1;
	const json_t *type = json_object_get(json, "type");
	if (type == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: missing required field \"type\"", fwhat);
	if (type_from_json(type, fwhat, &out->type, depth, err) < 0) {
		tl_error_prefix(err, "%s", fwhat);
		return -1;
	}
	return 0;
}

int tl_ice_schema_from_json(const json_t *json, tl_ice_schema *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!json_is_object(json))
		return tl_error_set(err, TL_ERR_CORRUPT, "schema is not a JSON object");
	const json_t *sid = json_object_get(json, "schema-id");
	if (sid) {
		if (ice_json_int32(json, "schema-id", "schema", &out->schema_id, err) < 0)
			return -1;
	}
	char what[64];
	snprintf(what, sizeof(what), "schema %d", (int)out->schema_id);
	const char *kind = json_string_value(json_object_get(json, "type"));
	if (kind && strcmp(kind, "struct") != 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: \"type\" is \"%s\", not \"struct\"", what, kind);
	tl_ice_type root = {.id = TL_ICE_STRUCT};
	int rc = fields_from_json(json_object_get(json, "fields"), what, &root, 0, err);
	out->fields = root.fields;
	out->nfields = root.nfields;
	if (rc < 0)
		goto fail;
	const json_t *ids = json_object_get(json, "identifier-field-ids");
	if (ids && !json_is_array(ids)) {
		tl_error_set(err, TL_ERR_CORRUPT, "%s: \"identifier-field-ids\" is not an array", what);
		goto fail;
	}
	size_t nids = json_array_size(ids);
	if (nids > (size_t)INT32_MAX / 2) {
		tl_error_set(err, TL_ERR_CORRUPT, "%s: too many identifier-field-ids", what);
		goto fail;
	}
	out->identifier_ids = nids ? tl_malloc(nids * sizeof(int32_t)) : NULL;
	if (nids && out->identifier_ids == NULL) {
		tl_error_nomem(err, "reading %s", what);
		goto fail;
	}
	for (size_t i = 0; i < nids; i++) {
		const json_t *v = json_array_get(ids, i);
		if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX) {
			tl_error_set(err, TL_ERR_CORRUPT, "%s: \"identifier-field-ids\" holds a non-integer", what);
			goto fail;
		}
		out->identifier_ids[out->nidentifier_ids++] = (int32_t)json_integer_value(v);
	}
	if (check_ids(out->fields, out->nfields, err) < 0 ||
	    check_identifiers(out, err) < 0) {
		tl_error_prefix(err, "%s", what);
		goto fail;
	}
	return 0;
fail:
	tl_ice_schema_free(out);
	return -1;
}

static json_t *field_to_json(const tl_ice_field *f);

static json_t *type_to_json(const tl_ice_type *t)
{
	if (tl_ice_type_is_primitive(t->id)) {
		tl_buf b;
		tl_buf_init(&b);
		tl_ice_type_text(t, &b);
		tl_buf_append_byte(&b, 0);
		json_t *s = json_string((const char *)b.data);
		tl_buf_free(&b);
		return s;
	}
	json_t *o = tl_json_object();
	if (t->id == TL_ICE_STRUCT) {
		json_object_set_new(o, "type", json_string("struct"));
		json_t *arr = json_array();
		for (int i = 0; i < t->nfields; i++)
			json_array_append_new(arr, field_to_json(&t->fields[i]));
		json_object_set_new(o, "fields", arr);
	} else if (t->id == TL_ICE_LIST) {
		json_object_set_new(o, "type", json_string("list"));
		json_object_set_new(o, "element-id", json_integer(t->fields[0].id));
		json_object_set_new(o, "element", type_to_json(&t->fields[0].type));
		json_object_set_new(o, "element-required", json_boolean(t->fields[0].required));
	} else {
		json_object_set_new(o, "type", json_string("map"));
		json_object_set_new(o, "key-id", json_integer(t->fields[0].id));
		json_object_set_new(o, "key", type_to_json(&t->fields[0].type));
		json_object_set_new(o, "value-id", json_integer(t->fields[1].id));
		json_object_set_new(o, "value", type_to_json(&t->fields[1].type));
		json_object_set_new(o, "value-required", json_boolean(t->fields[1].required));
	}
	return o;
}

static json_t *field_to_json(const tl_ice_field *f)
{
	json_t *o = tl_json_object();
	json_object_set_new(o, "id", json_integer(f->id));
	json_object_set_new(o, "name", json_string(f->name));
	json_object_set_new(o, "required", json_boolean(f->required));
	json_object_set_new(o, "type", type_to_json(&f->type));
	if (f->doc)
		json_object_set_new(o, "doc", json_string(f->doc));
	json_t *initial = f->initial_default ? tl_json_loadb(f->initial_default, strlen(f->initial_default), JSON_DECODE_ANY, NULL) : NULL;
	if (initial != NULL)
		json_object_set_new(o, "initial-default", initial);
	return o;
}

json_t *tl_ice_schema_to_json(const tl_ice_schema *schema)
{
	/* jansson's setters cannot report a failed allocation: one count says whether any failed. */
	unsigned long failures = tl_mem_failures();
	json_t *o = tl_json_object();
	json_object_set_new(o, "type", json_string("struct"));
	json_object_set_new(o, "schema-id", json_integer(schema->schema_id));
	if (schema->nidentifier_ids > 0) {
		json_t *ids = json_array();
		for (int i = 0; i < schema->nidentifier_ids; i++)
			json_array_append_new(ids, json_integer(schema->identifier_ids[i]));
		json_object_set_new(o, "identifier-field-ids", ids);
	}
	json_t *fields = json_array();
	for (int i = 0; i < schema->nfields; i++)
		json_array_append_new(fields, field_to_json(&schema->fields[i]));
	json_object_set_new(o, "fields", fields);
	if (tl_mem_failures() != failures) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- Parquet mapping ---- */

/* The fewest bytes whose two's complement holds every unscaled value of a precision. */
static int32_t decimal_bytes(int32_t precision)
{
	/* max_precision[n] is the largest precision n bytes hold: floor(log10(2^(8n-1) - 1)). */
	static const int max_precision[17] = {0, 2, 4, 6, 9, 11, 14, 16, 18, 21, 23, 26, 28, 31, 33, 35, 38};
	for (int32_t n = 1; n <= 16; n++)
		if (precision <= max_precision[n])
			return n;
	return 16;
}

int tl_ice_field_to_pq_column(const tl_ice_field *field, tl_pq_column *col, tl_error *err)
{
	memset(col, 0, sizeof(*col));
	col->name = field->name;
	col->required = field->required;
	col->field_id = field->id;
	const tl_ice_type *t = &field->type;
	switch (t->id) {
	case TL_ICE_BOOLEAN:
		col->physical = TL_PQ_BOOLEAN;
		break;
	case TL_ICE_INT:
		col->physical = TL_PQ_INT32;
		break;
	case TL_ICE_LONG:
		col->physical = TL_PQ_INT64;
		break;
	case TL_ICE_FLOAT:
		col->physical = TL_PQ_FLOAT;
		break;
	case TL_ICE_DOUBLE:
		col->physical = TL_PQ_DOUBLE;
		break;
	case TL_ICE_DECIMAL:
		/* The spec: int32 up to precision 9, int64 up to 18, else the fewest fixed bytes. */
		col->logical = TL_PQ_LOGICAL_DECIMAL;
		col->precision = t->precision;
		col->scale = t->scale;
		if (t->precision <= 9) {
			col->physical = TL_PQ_INT32;
		} else if (t->precision <= 18) {
			col->physical = TL_PQ_INT64;
		} else {
			col->physical = TL_PQ_FIXED_LEN_BYTE_ARRAY;
			col->type_length = decimal_bytes(t->precision);
		}
		break;
	case TL_ICE_DATE:
		col->physical = TL_PQ_INT32;
		col->logical = TL_PQ_LOGICAL_DATE;
		break;
	case TL_ICE_TIME:
		col->physical = TL_PQ_INT64;
		col->logical = TL_PQ_LOGICAL_TIME;
		col->unit = TL_PQ_MICROS;
		col->utc_adjusted = false;
		break;
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		col->physical = TL_PQ_INT64;
		col->logical = TL_PQ_LOGICAL_TIMESTAMP;
		col->unit = TL_PQ_MICROS;
		col->utc_adjusted = t->id == TL_ICE_TIMESTAMPTZ;
		break;
	case TL_ICE_STRING:
		col->physical = TL_PQ_BYTE_ARRAY;
		col->logical = TL_PQ_LOGICAL_STRING;
		break;
	case TL_ICE_UUID:
		col->physical = TL_PQ_FIXED_LEN_BYTE_ARRAY;
		col->type_length = 16;
		col->logical = TL_PQ_LOGICAL_UUID;
		break;
	case TL_ICE_FIXED:
		col->physical = TL_PQ_FIXED_LEN_BYTE_ARRAY;
		col->type_length = t->length;
		break;
	case TL_ICE_BINARY:
		col->physical = TL_PQ_BYTE_ARRAY;
		break;
	default:
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "field \"%s\" has a nested type; only primitive fields map to a Parquet column",
		                    field->name);
	}
	return 0;
}

tl_pq_schema *tl_ice_schema_to_pq_schema(const tl_ice_schema *schema, tl_error *err)
{
	tl_pq_schema *pq = tl_pq_schema_new();
	if (pq == NULL) {
		tl_error_nomem(err, "for a Parquet schema");
		return NULL;
	}
	for (int i = 0; i < schema->nfields; i++) {
		tl_pq_column col;
		if (tl_ice_field_to_pq_column(&schema->fields[i], &col, err) < 0) {
			tl_pq_schema_free(pq);
			return NULL;
		}
		if (tl_pq_schema_add(pq, &col) < 0) {
			tl_pq_schema_free(pq);
			tl_error_nomem(err, "for a Parquet schema");
			return NULL;
		}
	}
	if (tl_pq_schema_validate(pq, err) < 0) {
		tl_pq_schema_free(pq);
		return NULL;
	}
	return pq;
}
