/*
 * table_metadata.c: reading Iceberg table metadata JSON (format v1 and v2)
 * and writing it (format v2), plus creating the metadata of a new table.
 *
 * Reading fills what v1 lacks the way the spec's v1-to-v2 upgrade does, so
 * the rest of the library sees one shape. Every id one part of the file uses
 * to name another (current schema, default spec, partition sources, current
 * snapshot, refs) is checked here, so later code can look them up without
 * handling absence as corruption again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tierlake/iceberg_metadata.h"
#include "iceberg/schema_json.h"
#include "common/json_load.h"

/* A sanity bound on array lengths in a metadata file (snapshots, log entries...). */
#define MAX_METADATA_ITEMS 10000000

typedef struct parser {
	const json_t *root;
	int version;
	tl_error *err;
	int64_t *snapshot_ids;    /* sorted, for checking refs without a quadratic search */
	size_t nsnapshot_ids;
} parser;

static int compare_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Sorts ids and reports one that appears twice. */
static bool find_duplicate(int64_t *ids, size_t n, int64_t *dup)
{
	qsort(ids, n, sizeof(int64_t), compare_i64);
	for (size_t i = 1; i < n; i++) {
		if (ids[i - 1] == ids[i]) {
			*dup = ids[i];
			return true;
		}
	}
	return false;
}

static bool has_snapshot(const parser *p, int64_t id)
{
	return p->nsnapshot_ids > 0 &&
	       bsearch(&id, p->snapshot_ids, p->nsnapshot_ids, sizeof(int64_t), compare_i64) != NULL;
}

/* ---- JSON field helpers; each names the field in its error ---- */

static int nomem(parser *p, const char *what)
{
	return tl_error_nomem(p->err, "reading table metadata: %s", what);
}

static int missing(parser *p, const char *what, const char *key)
{
	return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: %s: missing required field \"%s\"", what, key);
}

static int wrong_type(parser *p, const char *what, const char *key, const char *type)
{
	return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: %s: \"%s\" is not %s", what, key, type);
}

/* An int64 member: 1 if present, 0 if absent (or JSON null), -1 if wrongly typed. */
static int get_i64(parser *p, const json_t *obj, const char *what, const char *key, int64_t *out)
{
	const json_t *v = json_object_get(obj, key);
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return wrong_type(p, what, key, "an integer");
	*out = json_integer_value(v);
	return 1;
}

static int req_i64(parser *p, const json_t *obj, const char *what, const char *key, int64_t *out)
{
	int rc = get_i64(p, obj, what, key, out);
	return rc == 0 ? missing(p, what, key) : rc;
}

static int get_i32(parser *p, const json_t *obj, const char *what, const char *key, int32_t *out)
{
	int64_t v = 0;
	int rc = get_i64(p, obj, what, key, &v);
	if (rc <= 0)
		return rc;
	if (v < INT32_MIN || v > INT32_MAX)
		return wrong_type(p, what, key, "a 32-bit integer");
	*out = (int32_t)v;
	return 1;
}

static int req_i32(parser *p, const json_t *obj, const char *what, const char *key, int32_t *out)
{
	int rc = get_i32(p, obj, what, key, out);
	return rc == 0 ? missing(p, what, key) : rc;
}

/* A string member copied with tl_strdup, or NULL if absent; -1 if not a string. */
static int get_str(parser *p, const json_t *obj, const char *what, const char *key, char **out)
{
	const json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return wrong_type(p, what, key, "a string");
	*out = tl_strdup(json_string_value(v));
	if (*out == NULL)
		return nomem(p, key);
	return 1;
}

static int req_str(parser *p, const json_t *obj, const char *what, const char *key, char **out)
{
	int rc = get_str(p, obj, what, key, out);
	return rc == 0 ? missing(p, what, key) : rc;
}

/* An array member (NULL when absent); its length is bounded. */
static int get_array(parser *p, const json_t *obj, const char *what, const char *key, const json_t **out)
{
	const json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return wrong_type(p, what, key, "an array");
	if (json_array_size(v) > MAX_METADATA_ITEMS)
		return wrong_type(p, what, key, "an array of a sane length");
	*out = v;
	return 1;
}

/* A JSON object of strings into a key-value array (file order). */
static int parse_string_map(parser *p, const json_t *obj, const char *what, const char *key,
                            tl_ice_kv **out, int *n, const char *skip)
{
	const json_t *m = json_object_get(obj, key);
	*out = NULL;
	*n = 0;
	if (m == NULL || json_is_null(m))
		return 0;
	if (!json_is_object(m))
		return wrong_type(p, what, key, "an object");
	size_t size = json_object_size(m);
	*out = size ? tl_calloc(size, sizeof(tl_ice_kv)) : NULL;
	if (size && *out == NULL)
		return nomem(p, key);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)m, k, v) {
		if (skip && strcmp(k, skip) == 0)
			continue;
		if (!json_is_string(v))
			return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: %s: \"%s\" value of \"%s\" is not a string",
			                    what, key, k);
		(*out)[*n].key = tl_strdup(k);
		(*out)[*n].value = tl_strdup(json_string_value(v));
		(*n)++;
		if ((*out)[*n - 1].key == NULL || (*out)[*n - 1].value == NULL)
			return nomem(p, key);
	}
	return 1;
}

/* ---- parts ---- */

static int parse_schemas(parser *p, tl_ice_table_metadata *md)
{
	const json_t *arr;
	if (get_array(p, p->root, "table", "schemas", &arr) < 0)
		return -1;
	if (arr == NULL) {
		/* v1: one "schema"; its id (if any) becomes the current one. */
		const json_t *single = json_object_get(p->root, "schema");
		if (p->version >= 2 || single == NULL)
			return missing(p, "table", p->version >= 2 ? "schemas" : "schema");
		md->schemas = tl_calloc(1, sizeof(tl_ice_schema));
		if (md->schemas == NULL)
			return nomem(p, "schema");
		if (tl_ice_schema_from_json(single, &md->schemas[0], p->err) < 0)
			return -1;
		md->nschemas = 1;
		md->current_schema_id = md->schemas[0].schema_id;
		return 0;
	}
	size_t n = json_array_size(arr);
	md->schemas = n ? tl_calloc(n, sizeof(tl_ice_schema)) : NULL;
	if (n && md->schemas == NULL)
		return nomem(p, "schemas");
	for (size_t i = 0; i < n; i++) {
		if (tl_ice_schema_from_json(json_array_get(arr, i), &md->schemas[i], p->err) < 0)
			return -1;
		md->nschemas++;
	}
	int64_t *ids = tl_malloc((n ? n : 1) * sizeof(int64_t));
	if (ids == NULL)
		return nomem(p, "schemas");
	for (size_t i = 0; i < n; i++)
		ids[i] = md->schemas[i].schema_id;
	int64_t dup;
	bool has_dup = find_duplicate(ids, n, &dup);
	tl_free(ids);
	if (has_dup)
		return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: schema-id %lld appears twice in \"schemas\"",
		                    (long long)dup);
	if (req_i32(p, p->root, "table", "current-schema-id", &md->current_schema_id) < 0)
		return -1;
	if (tl_ice_metadata_schema(md, md->current_schema_id) == NULL)
		return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: current-schema-id %d names no schema",
		                    (int)md->current_schema_id);
	return 0;
}

static int parse_specs(parser *p, tl_ice_table_metadata *md)
{
	const json_t *arr;
	if (get_array(p, p->root, "table", "partition-specs", &arr) < 0)
		return -1;
	if (arr == NULL) {
		const json_t *single = json_object_get(p->root, "partition-spec");
		if (p->version >= 2 || single == NULL)
			return missing(p, "table", p->version >= 2 ? "partition-specs" : "partition-spec");
		md->specs = tl_calloc(1, sizeof(tl_ice_partition_spec));
		if (md->specs == NULL)
			return nomem(p, "partition-spec");
		if (tl_ice_partition_spec_from_json(single, 0, &md->specs[0], p->err) < 0)
			return -1;
		md->nspecs = 1;
		md->default_spec_id = 0;
	} else {
		size_t n = json_array_size(arr);
		md->specs = n ? tl_calloc(n, sizeof(tl_ice_partition_spec)) : NULL;
		if (n && md->specs == NULL)
			return nomem(p, "partition-specs");
		for (size_t i = 0; i < n; i++) {
			if (tl_ice_partition_spec_from_json(json_array_get(arr, i), -1, &md->specs[i], p->err) < 0)
				return -1;
			md->nspecs++;
		}
		if (req_i32(p, p->root, "table", "default-spec-id", &md->default_spec_id) < 0)
			return -1;
	}
	const tl_ice_partition_spec *def = tl_ice_metadata_spec(md, md->default_spec_id);
	if (def == NULL)
		return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: default-spec-id %d names no partition spec",
		                    (int)md->default_spec_id);
	if (tl_ice_partition_spec_check(def, tl_ice_metadata_current_schema(md), p->err) < 0) {
		tl_error_prefix(p->err, "table metadata: ");
		return -1;
	}
	int32_t max_field_id = 999;  /* partition field ids start at 1000 */
	for (int i = 0; i < md->nspecs; i++)
		for (int j = 0; j < md->specs[i].nfields; j++)
			if (md->specs[i].fields[j].field_id > max_field_id)
				max_field_id = md->specs[i].fields[j].field_id;
	int rc = (p->version >= 2 ? req_i32 : get_i32)(p, p->root, "table", "last-partition-id", &md->last_partition_id);
	if (rc < 0)
		return -1;
	if (rc == 0)
		md->last_partition_id = max_field_id;
	return 0;
}

static int parse_sort_orders(parser *p, tl_ice_table_metadata *md)
{
	const json_t *arr;
	if (get_array(p, p->root, "table", "sort-orders", &arr) < 0)
		return -1;
	if (arr == NULL) {
		if (p->version >= 2)
			return missing(p, "table", "sort-orders");
		md->sort_orders = tl_calloc(1, sizeof(tl_ice_sort_order));  /* the unsorted order 0 */
		if (md->sort_orders == NULL)
			return nomem(p, "sort-orders");
		md->nsort_orders = 1;
		md->default_sort_order_id = 0;
		return 0;
	}
	size_t n = json_array_size(arr);
	md->sort_orders = n ? tl_calloc(n, sizeof(tl_ice_sort_order)) : NULL;
	if (n && md->sort_orders == NULL)
		return nomem(p, "sort-orders");
	for (size_t i = 0; i < n; i++) {
		const json_t *o = json_array_get(arr, i);
		tl_ice_sort_order *so = &md->sort_orders[i];
		const json_t *fields;
		md->nsort_orders++;
		if (req_i32(p, o, "sort order", "order-id", &so->order_id) < 0 ||
		    get_array(p, o, "sort order", "fields", &fields) < 0)
			return -1;
		size_t nf = json_array_size(fields);
		so->fields = nf ? tl_calloc(nf, sizeof(tl_ice_sort_field)) : NULL;
		if (nf && so->fields == NULL)
			return nomem(p, "sort-orders");
		for (size_t j = 0; j < nf; j++) {
			const json_t *f = json_array_get(fields, j);
			tl_ice_sort_field *sf = &so->fields[j];
			const char *transform = json_string_value(json_object_get(f, "transform"));
			const char *direction = json_string_value(json_object_get(f, "direction"));
			const char *nulls = json_string_value(json_object_get(f, "null-order"));
			if (req_i32(p, f, "sort field", "source-id", &sf->source_id) < 0)
				return -1;
			if (transform == NULL || direction == NULL || nulls == NULL)
				return tl_error_set(p->err, TL_ERR_CORRUPT,
				                    "table metadata: sort order %d: a field lacks \"transform\", \"direction\" or \"null-order\"",
				                    (int)so->order_id);
			if (tl_ice_transform_parse(transform, &sf->transform, p->err) < 0)
				return -1;
			sf->descending = strcmp(direction, "desc") == 0;
			sf->nulls_first = strcmp(nulls, "nulls-first") == 0;
			so->nfields++;
		}
	}
	if (req_i32(p, p->root, "table", "default-sort-order-id", &md->default_sort_order_id) < 0)
		return -1;
	for (int i = 0; i < md->nsort_orders; i++)
		if (md->sort_orders[i].order_id == md->default_sort_order_id)
			return 0;
	return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: default-sort-order-id %d names no sort order",
	                    (int)md->default_sort_order_id);
}

static int parse_snapshot(parser *p, const json_t *o, tl_ice_snapshot *s)
{
	const char *what = "snapshot";
	s->parent_id = TL_ICE_NO_SNAPSHOT;
	s->schema_id = -1;
	if (!json_is_object(o))
		return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: a snapshot is not an object");
	if (req_i64(p, o, what, "snapshot-id", &s->snapshot_id) < 0 ||
	    get_i64(p, o, what, "parent-snapshot-id", &s->parent_id) < 0 ||
	    req_i64(p, o, what, "timestamp-ms", &s->timestamp_ms) < 0 ||
	    get_i32(p, o, what, "schema-id", &s->schema_id) < 0)
		return -1;
	if ((p->version >= 2 ? req_i64 : get_i64)(p, o, what, "sequence-number", &s->sequence_number) < 0)
		return -1;
	if (get_str(p, o, what, "manifest-list", &s->manifest_list) < 0)
		return -1;
	if (s->manifest_list == NULL) {
		const json_t *manifests;
		if (get_array(p, o, what, "manifests", &manifests) < 0)
			return -1;
		if (manifests == NULL)
			return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: snapshot %lld: missing required field \"manifest-list\"",
			                    (long long)s->snapshot_id);
		size_t n = json_array_size(manifests);
		s->manifests = n ? tl_calloc(n, sizeof(char *)) : NULL;
		if (n && s->manifests == NULL)
			return nomem(p, "manifests");
		for (size_t i = 0; i < n; i++) {
			const char *m = json_string_value(json_array_get(manifests, i));
			if (m == NULL)
				return wrong_type(p, what, "manifests", "an array of strings");
			s->manifests[s->nmanifests++] = tl_strdup(m);
			if (s->manifests[s->nmanifests - 1] == NULL)
				return nomem(p, "manifests");
		}
	}
	const json_t *summary = json_object_get(o, "summary");
	if (summary == NULL && p->version >= 2)
		return missing(p, what, "summary");
	if (parse_string_map(p, o, what, "summary", &s->summary, &s->nsummary, "operation") < 0)
		return -1;
	const char *op = json_string_value(json_object_get(summary, "operation"));
	if (op == NULL && summary != NULL)
		return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: snapshot %lld: summary lacks \"operation\"",
		                    (long long)s->snapshot_id);
	s->operation = tl_strdup(op ? op : "append");
	if (s->operation == NULL)
		return nomem(p, "snapshot");
	return 0;
}

static int parse_snapshots(parser *p, tl_ice_table_metadata *md)
{
	const json_t *arr;
	if (get_array(p, p->root, "table", "snapshots", &arr) < 0)
		return -1;
	size_t n = json_array_size(arr);
	md->snapshots = n ? tl_calloc(n, sizeof(tl_ice_snapshot)) : NULL;
	if (n && md->snapshots == NULL)
		return nomem(p, "snapshots");
	for (size_t i = 0; i < n; i++) {
		md->nsnapshots++;
		if (parse_snapshot(p, json_array_get(arr, i), &md->snapshots[i]) < 0)
			return -1;
	}
	p->snapshot_ids = tl_malloc((n ? n : 1) * sizeof(int64_t));
	if (p->snapshot_ids == NULL)
		return nomem(p, "snapshots");
	for (size_t i = 0; i < n; i++)
		p->snapshot_ids[i] = md->snapshots[i].snapshot_id;
	p->nsnapshot_ids = n;
	int64_t dup;
	if (find_duplicate(p->snapshot_ids, n, &dup))
		return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: snapshot-id %lld appears twice", (long long)dup);
	md->current_snapshot_id = TL_ICE_NO_SNAPSHOT;
	if (get_i64(p, p->root, "table", "current-snapshot-id", &md->current_snapshot_id) < 0)
		return -1;
	if (md->current_snapshot_id != TL_ICE_NO_SNAPSHOT && !has_snapshot(p, md->current_snapshot_id))
		return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: current-snapshot-id %lld names no snapshot",
		                    (long long)md->current_snapshot_id);
	return 0;
}

static int parse_logs(parser *p, tl_ice_table_metadata *md)
{
	const json_t *arr;
	if (get_array(p, p->root, "table", "snapshot-log", &arr) < 0)
		return -1;
	size_t n = json_array_size(arr);
	md->snapshot_log = n ? tl_calloc(n, sizeof(tl_ice_snapshot_log_entry)) : NULL;
	if (n && md->snapshot_log == NULL)
		return nomem(p, "snapshot-log");
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(arr, i);
		if (req_i64(p, e, "snapshot-log entry", "timestamp-ms", &md->snapshot_log[i].timestamp_ms) < 0 ||
		    req_i64(p, e, "snapshot-log entry", "snapshot-id", &md->snapshot_log[i].snapshot_id) < 0)
			return -1;
		md->nsnapshot_log++;
	}
	if (get_array(p, p->root, "table", "metadata-log", &arr) < 0)
		return -1;
	n = json_array_size(arr);
	md->metadata_log = n ? tl_calloc(n, sizeof(tl_ice_metadata_log_entry)) : NULL;
	if (n && md->metadata_log == NULL)
		return nomem(p, "metadata-log");
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(arr, i);
		md->nmetadata_log++;
		if (req_i64(p, e, "metadata-log entry", "timestamp-ms", &md->metadata_log[i].timestamp_ms) < 0 ||
		    req_str(p, e, "metadata-log entry", "metadata-file", &md->metadata_log[i].metadata_file) < 0)
			return -1;
	}
	return 0;
}

/* -1 when out of memory (md unchanged). */
static int add_ref(tl_ice_table_metadata *md, const char *name, int64_t snapshot_id, bool is_branch)
{
	char *copy = tl_strdup(name);
	tl_ice_ref *refs = copy ? tl_realloc(md->refs, (size_t)(md->nrefs + 1) * sizeof(tl_ice_ref)) : NULL;
	if (refs == NULL) {
		tl_free(copy);
		return -1;
	}
	md->refs = refs;
	tl_ice_ref *r = &md->refs[md->nrefs++];
	r->name = copy;
	r->snapshot_id = snapshot_id;
	r->is_branch = is_branch;
	r->max_ref_age_ms = -1;
	r->max_snapshot_age_ms = -1;
	r->min_snapshots_to_keep = -1;
	return 0;
}

static int parse_refs(parser *p, tl_ice_table_metadata *md)
{
	const json_t *refs = json_object_get(p->root, "refs");
	if (refs != NULL && !json_is_object(refs))
		return wrong_type(p, "table", "refs", "an object");
	const char *name;
	json_t *r;
	json_object_foreach((json_t *)refs, name, r) {
		int64_t id;
		const char *type = json_string_value(json_object_get(r, "type"));
		if (req_i64(p, r, "ref", "snapshot-id", &id) < 0)
			return -1;
		if (type == NULL || (strcmp(type, "branch") != 0 && strcmp(type, "tag") != 0))
			return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: ref \"%s\": \"type\" must be \"branch\" or \"tag\"", name);
		if (!has_snapshot(p, id))
			return tl_error_set(p->err, TL_ERR_CORRUPT, "table metadata: ref \"%s\" names unknown snapshot %lld",
			                    name, (long long)id);
		if (add_ref(md, name, id, strcmp(type, "branch") == 0) < 0)
			return nomem(p, "refs");
		tl_ice_ref *ref = &md->refs[md->nrefs - 1];
		if (get_i64(p, r, "ref", "max-ref-age-ms", &ref->max_ref_age_ms) < 0 ||
		    get_i64(p, r, "ref", "max-snapshot-age-ms", &ref->max_snapshot_age_ms) < 0 ||
		    get_i32(p, r, "ref", "min-snapshots-to-keep", &ref->min_snapshots_to_keep) < 0)
			return -1;
	}
	/* Without refs (v1, or early v2 writers) the current snapshot is the main branch. */
	if (refs == NULL && md->current_snapshot_id != TL_ICE_NO_SNAPSHOT &&
	    add_ref(md, "main", md->current_snapshot_id, true) < 0)
		return nomem(p, "refs");
	return 0;
}

static int parse_root(parser *p, tl_ice_table_metadata *md)
{
	int32_t version;
	if (req_i32(p, p->root, "table", "format-version", &version) < 0)
		return -1;
	if (version != 1 && version != 2)
		return tl_error_set(p->err, TL_ERR_UNSUPPORTED, "table metadata: format-version %d is not supported (1 and 2 are)",
		                    (int)version);
	p->version = md->format_version = version;
	if ((version >= 2 ? req_str : get_str)(p, p->root, "table", "table-uuid", &md->table_uuid) < 0 ||
	    req_str(p, p->root, "table", "location", &md->location) < 0 ||
	    (version >= 2 ? req_i64 : get_i64)(p, p->root, "table", "last-sequence-number", &md->last_sequence_number) < 0 ||
	    req_i64(p, p->root, "table", "last-updated-ms", &md->last_updated_ms) < 0 ||
	    req_i32(p, p->root, "table", "last-column-id", &md->last_column_id) < 0)
		return -1;
	if (parse_schemas(p, md) < 0 || parse_specs(p, md) < 0 || parse_sort_orders(p, md) < 0 ||
	    parse_string_map(p, p->root, "table", "properties", &md->properties, &md->nproperties, NULL) < 0 ||
	    parse_snapshots(p, md) < 0 || parse_logs(p, md) < 0 || parse_refs(p, md) < 0)
		return -1;
	return 0;
}

tl_ice_table_metadata *tl_ice_metadata_parse(const char *text, size_t len, tl_error *err)
{
	json_error_t jerr;
	unsigned long failures = tl_mem_failures();
	json_t *root = tl_json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL && tl_mem_failures() != failures) {
		tl_error_nomem(err, "parsing table metadata");
		return NULL;
	}
	if (root == NULL) {
		tl_error_set(err, TL_ERR_CORRUPT, "table metadata is not valid JSON: %s (line %d, column %d)",
		             jerr.text, jerr.line, jerr.column);
		return NULL;
	}
	tl_ice_table_metadata *md = tl_calloc(1, sizeof(*md));
	if (md == NULL) {
		json_decref(root);
		tl_error_nomem(err, "for table metadata");
		return NULL;
	}
	md->current_snapshot_id = TL_ICE_NO_SNAPSHOT;
	parser p = {.root = root, .err = err};
	int rc = json_is_object(root) ? parse_root(&p, md)
	                              : tl_error_set(err, TL_ERR_CORRUPT, "table metadata is not a JSON object");
	json_decref(root);
	tl_free(p.snapshot_ids);
	if (rc < 0) {
		tl_ice_metadata_free(md);
		return NULL;
	}
	return md;
}

/* ---- writing ---- */

static json_t *string_map_json(const tl_ice_kv *kv, int n)
{
	json_t *o = tl_json_object();
	for (int i = 0; i < n; i++)
		json_object_set_new(o, kv[i].key, json_string(kv[i].value));
	return o;
}

static json_t *snapshot_json(const tl_ice_snapshot *s)
{
	json_t *o = tl_json_object();
	json_object_set_new(o, "snapshot-id", json_integer(s->snapshot_id));
	if (s->parent_id != TL_ICE_NO_SNAPSHOT)
		json_object_set_new(o, "parent-snapshot-id", json_integer(s->parent_id));
	json_object_set_new(o, "sequence-number", json_integer(s->sequence_number));
	json_object_set_new(o, "timestamp-ms", json_integer(s->timestamp_ms));
	if (s->manifest_list) {
		json_object_set_new(o, "manifest-list", json_string(s->manifest_list));
	} else {
		json_t *m = json_array();
		for (int i = 0; i < s->nmanifests; i++)
			json_array_append_new(m, json_string(s->manifests[i]));
		json_object_set_new(o, "manifests", m);
	}
	json_t *summary = tl_json_object();
	json_object_set_new(summary, "operation", json_string(s->operation ? s->operation : "append"));
	for (int i = 0; i < s->nsummary; i++)
		json_object_set_new(summary, s->summary[i].key, json_string(s->summary[i].value));
	json_object_set_new(o, "summary", summary);
	if (s->schema_id >= 0)
		json_object_set_new(o, "schema-id", json_integer(s->schema_id));
	return o;
}

static json_t *sort_order_json(const tl_ice_sort_order *so)
{
	json_t *o = tl_json_object();
	json_object_set_new(o, "order-id", json_integer(so->order_id));
	json_t *fields = json_array();
	tl_buf b;
	tl_buf_init(&b);
	for (int i = 0; i < so->nfields; i++) {
		const tl_ice_sort_field *f = &so->fields[i];
		json_t *jf = tl_json_object();
		tl_buf_reset(&b);
		tl_ice_transform_text(&f->transform, &b);
		tl_buf_append_byte(&b, 0);
		json_object_set_new(jf, "transform", json_string((const char *)b.data));
		json_object_set_new(jf, "source-id", json_integer(f->source_id));
		json_object_set_new(jf, "direction", json_string(f->descending ? "desc" : "asc"));
		json_object_set_new(jf, "null-order", json_string(f->nulls_first ? "nulls-first" : "nulls-last"));
		json_array_append_new(fields, jf);
	}
	tl_buf_free(&b);
	json_object_set_new(o, "fields", fields);
	return o;
}

static json_t *refs_json(const tl_ice_table_metadata *md)
{
	json_t *o = tl_json_object();
	for (int i = 0; i < md->nrefs; i++) {
		const tl_ice_ref *r = &md->refs[i];
		json_t *jr = tl_json_object();
		json_object_set_new(jr, "snapshot-id", json_integer(r->snapshot_id));
		json_object_set_new(jr, "type", json_string(r->is_branch ? "branch" : "tag"));
		if (r->max_ref_age_ms >= 0)
			json_object_set_new(jr, "max-ref-age-ms", json_integer(r->max_ref_age_ms));
		if (r->max_snapshot_age_ms >= 0)
			json_object_set_new(jr, "max-snapshot-age-ms", json_integer(r->max_snapshot_age_ms));
		if (r->min_snapshots_to_keep >= 0)
			json_object_set_new(jr, "min-snapshots-to-keep", json_integer(r->min_snapshots_to_keep));
		json_object_set_new(o, r->name, jr);
	}
	return o;
}

int tl_ice_metadata_write(const tl_ice_table_metadata *md, tl_buf *out, tl_error *err)
{
	if (md->table_uuid == NULL || md->location == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "table metadata to write lacks a table-uuid or location");
	if (tl_ice_metadata_current_schema(md) == NULL || tl_ice_metadata_default_spec(md) == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "table metadata to write: current schema or default spec is missing");
	if (md->current_snapshot_id != TL_ICE_NO_SNAPSHOT && tl_ice_metadata_current_snapshot(md) == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "table metadata to write: current-snapshot-id %lld names no snapshot",
		                    (long long)md->current_snapshot_id);
	/* jansson's setters take NULL quietly, so one count of failed allocations
	 * (env.h) around the whole build says whether a member went missing. */
	unsigned long failures = tl_mem_failures();
	json_t *o = tl_json_object();
	json_object_set_new(o, "format-version", json_integer(2));
	json_object_set_new(o, "table-uuid", json_string(md->table_uuid));
	json_object_set_new(o, "location", json_string(md->location));
	json_object_set_new(o, "last-sequence-number", json_integer(md->last_sequence_number));
	json_object_set_new(o, "last-updated-ms", json_integer(md->last_updated_ms));
	json_object_set_new(o, "last-column-id", json_integer(md->last_column_id));
	json_object_set_new(o, "current-schema-id", json_integer(md->current_schema_id));
	json_t *arr = json_array();
	for (int i = 0; i < md->nschemas; i++)
		json_array_append_new(arr, tl_ice_schema_to_json(&md->schemas[i]));
	json_object_set_new(o, "schemas", arr);
	json_object_set_new(o, "default-spec-id", json_integer(md->default_spec_id));
	arr = json_array();
	for (int i = 0; i < md->nspecs; i++)
		json_array_append_new(arr, tl_ice_partition_spec_to_json(&md->specs[i]));
	json_object_set_new(o, "partition-specs", arr);
	json_object_set_new(o, "last-partition-id", json_integer(md->last_partition_id));
	json_object_set_new(o, "default-sort-order-id", json_integer(md->default_sort_order_id));
	arr = json_array();
	for (int i = 0; i < md->nsort_orders; i++)
		json_array_append_new(arr, sort_order_json(&md->sort_orders[i]));
	json_object_set_new(o, "sort-orders", arr);
	json_object_set_new(o, "properties", string_map_json(md->properties, md->nproperties));
	json_object_set_new(o, "current-snapshot-id", json_integer(md->current_snapshot_id));
	json_object_set_new(o, "refs", refs_json(md));
	arr = json_array();
	for (int i = 0; i < md->nsnapshots; i++)
		json_array_append_new(arr, snapshot_json(&md->snapshots[i]));
	json_object_set_new(o, "snapshots", arr);
	arr = json_array();
	for (int i = 0; i < md->nsnapshot_log; i++) {
		json_t *e = tl_json_object();
		json_object_set_new(e, "timestamp-ms", json_integer(md->snapshot_log[i].timestamp_ms));
		json_object_set_new(e, "snapshot-id", json_integer(md->snapshot_log[i].snapshot_id));
		json_array_append_new(arr, e);
	}
	json_object_set_new(o, "snapshot-log", arr);
	arr = json_array();
	for (int i = 0; i < md->nmetadata_log; i++) {
		json_t *e = tl_json_object();
		json_object_set_new(e, "timestamp-ms", json_integer(md->metadata_log[i].timestamp_ms));
		json_object_set_new(e, "metadata-file", json_string(md->metadata_log[i].metadata_file));
		json_array_append_new(arr, e);
	}
	json_object_set_new(o, "metadata-log", arr);
	char *text = tl_json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (text == NULL || tl_mem_failures() != failures) {
		tl_free(text);
		return tl_error_nomem(err, "rendering table metadata JSON");
	}
	tl_buf_append_str(out, text);
	tl_buf_append_byte(out, '\n');
	tl_free(text);
	return tl_buf_check(out, err, "rendering table metadata JSON");
}

/* ---- creating ---- */

int tl_ice_uuid_v4(char out[37], tl_error *err)
{
	uint8_t b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tl_error_set(err, TL_ERR_IO, "opening /dev/urandom: %s", strerror(errno));
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = read(fd, b + got, sizeof(b) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return tl_error_set(err, TL_ERR_IO, "reading /dev/urandom: %s", n < 0 ? strerror(errno) : "end of file");
		}
		got += (size_t)n;
	}
	close(fd);
	b[6] = (uint8_t)((b[6] & 0x0F) | 0x40);  /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3F) | 0x80);  /* RFC 4122 variant */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

tl_ice_table_metadata *tl_ice_metadata_create(const char *location, const tl_ice_schema *schema,
                                              const tl_ice_partition_spec *spec,
                                              const tl_ice_kv *properties, int nproperties, tl_error *err)
{
	char uuid[37];
	if (location == NULL || location[0] == '\0') {
		tl_error_set(err, TL_ERR_INVALID, "a new table needs a location");
		return NULL;
	}
	if (tl_ice_partition_spec_check(spec, schema, err) < 0 || tl_ice_uuid_v4(uuid, err) < 0)
		return NULL;
	tl_ice_table_metadata *md = tl_calloc(1, sizeof(*md));
	if (md == NULL)
		goto nomem;
	md->format_version = 2;
	md->table_uuid = tl_strdup(uuid);
	md->location = tl_strdup(location);
	if (md->table_uuid == NULL || md->location == NULL)
		goto nomem;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	md->last_updated_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	md->last_column_id = tl_ice_schema_max_id(schema);
	md->schemas = tl_calloc(1, sizeof(tl_ice_schema));
	if (md->schemas == NULL || tl_ice_schema_copy(schema, &md->schemas[0]) < 0)
		goto nomem;
	md->schemas[0].schema_id = 0;
	md->nschemas = 1;
	md->specs = tl_calloc(1, sizeof(tl_ice_partition_spec));
	if (md->specs == NULL || tl_ice_partition_spec_copy(spec, &md->specs[0]) < 0)
		goto nomem;
	md->specs[0].spec_id = 0;
	md->nspecs = 1;
	md->last_partition_id = 999;
	for (int i = 0; i < spec->nfields; i++)
		if (spec->fields[i].field_id > md->last_partition_id)
			md->last_partition_id = spec->fields[i].field_id;
	md->sort_orders = tl_calloc(1, sizeof(tl_ice_sort_order));
	if (md->sort_orders == NULL)
		goto nomem;
	md->nsort_orders = 1;
	md->current_snapshot_id = TL_ICE_NO_SNAPSHOT;
	md->properties = nproperties ? tl_calloc((size_t)nproperties, sizeof(tl_ice_kv)) : NULL;
	if (nproperties && md->properties == NULL)
		goto nomem;
	for (int i = 0; i < nproperties; i++) {
		md->properties[i].key = tl_strdup(properties[i].key);
		md->properties[i].value = tl_strdup(properties[i].value);
		md->nproperties = i + 1;
		if (md->properties[i].key == NULL || md->properties[i].value == NULL)
			goto nomem;
	}
	return md;
nomem:
	tl_ice_metadata_free(md);
	tl_error_nomem(err, "creating table metadata");
	return NULL;
}

static void free_kvs(tl_ice_kv *kv, int n)
{
	for (int i = 0; i < n; i++) {
		tl_free(kv[i].key);
		tl_free(kv[i].value);
	}
	tl_free(kv);
}

void tl_ice_snapshot_clear(tl_ice_snapshot *s)
{
	tl_free(s->manifest_list);
	for (int j = 0; j < s->nmanifests; j++)
		tl_free(s->manifests[j]);
	tl_free(s->manifests);
	tl_free(s->operation);
	free_kvs(s->summary, s->nsummary);
	memset(s, 0, sizeof(*s));
}

void tl_ice_metadata_free(tl_ice_table_metadata *md)
{
	if (md == NULL)
		return;
	tl_free(md->table_uuid);
	tl_free(md->location);
	for (int i = 0; i < md->nschemas; i++)
		tl_ice_schema_free(&md->schemas[i]);
	tl_free(md->schemas);
	for (int i = 0; i < md->nspecs; i++)
		tl_ice_partition_spec_free(&md->specs[i]);
	tl_free(md->specs);
	for (int i = 0; i < md->nsort_orders; i++)
		tl_free(md->sort_orders[i].fields);
	tl_free(md->sort_orders);
	free_kvs(md->properties, md->nproperties);
	for (int i = 0; i < md->nsnapshots; i++)
		tl_ice_snapshot_clear(&md->snapshots[i]);
	tl_free(md->snapshots);
	tl_free(md->snapshot_log);
	for (int i = 0; i < md->nmetadata_log; i++)
		tl_free(md->metadata_log[i].metadata_file);
	tl_free(md->metadata_log);
	for (int i = 0; i < md->nrefs; i++)
		tl_free(md->refs[i].name);
	tl_free(md->refs);
	tl_free(md);
}

/* ---- lookups ---- */

const tl_ice_snapshot *tl_ice_metadata_snapshot(const tl_ice_table_metadata *md, int64_t snapshot_id)
{
	for (int i = 0; i < md->nsnapshots; i++)
		if (md->snapshots[i].snapshot_id == snapshot_id)
			return &md->snapshots[i];
	return NULL;
}

const tl_ice_snapshot *tl_ice_metadata_current_snapshot(const tl_ice_table_metadata *md)
{
	if (md->current_snapshot_id == TL_ICE_NO_SNAPSHOT)
		return NULL;
	return tl_ice_metadata_snapshot(md, md->current_snapshot_id);
}

const tl_ice_schema *tl_ice_metadata_schema(const tl_ice_table_metadata *md, int32_t schema_id)
{
	for (int i = 0; i < md->nschemas; i++)
		if (md->schemas[i].schema_id == schema_id)
			return &md->schemas[i];
	return NULL;
}

const tl_ice_schema *tl_ice_metadata_current_schema(const tl_ice_table_metadata *md)
{
	return tl_ice_metadata_schema(md, md->current_schema_id);
}

const tl_ice_partition_spec *tl_ice_metadata_spec(const tl_ice_table_metadata *md, int32_t spec_id)
{
	for (int i = 0; i < md->nspecs; i++)
		if (md->specs[i].spec_id == spec_id)
			return &md->specs[i];
	return NULL;
}

const tl_ice_partition_spec *tl_ice_metadata_default_spec(const tl_ice_table_metadata *md)
{
	return tl_ice_metadata_spec(md, md->default_spec_id);
}

const char *tl_ice_metadata_property(const tl_ice_table_metadata *md, const char *key)
{
	for (int i = 0; i < md->nproperties; i++)
		if (strcmp(md->properties[i].key, key) == 0)
			return md->properties[i].value;
	return NULL;
}

const char *tl_ice_snapshot_summary(const tl_ice_snapshot *snap, const char *key)
{
	if (strcmp(key, "operation") == 0)
		return snap->operation;
	for (int i = 0; i < snap->nsummary; i++)
		if (strcmp(snap->summary[i].key, key) == 0)
			return snap->summary[i].value;
	return NULL;
}
