/*
 * test_iceberg_metadata.c: table metadata JSON. Files pyiceberg wrote
 * (format v1 and v2, see data/iceberg/make-fixtures.py), a hand-written
 * Java-style v1 file without the v2 fields, write-then-read round trips,
 * creation, and rejection of broken files with errors naming the field.
 */
#include <stdlib.h>
#include <jansson.h>

#include "test.h"
#include "tierlake/iceberg_metadata.h"

#define FIXTURES "lake/tests/data/iceberg/"

static char *read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	tl_buf b;
	tl_buf_init(&b);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		tl_buf_append(&b, chunk, n);
	fclose(f);
	*len = b.len;
	tl_buf_append_byte(&b, 0);
	return (char *)b.data;
}

static tl_ice_table_metadata *load(const char *name, tl_error *err)
{
	char path[256];
	snprintf(path, sizeof(path), FIXTURES "%s", name);
	size_t len;
	char *text = read_text(path, &len);
	if (text == NULL) {
		tl_error_set(err, TL_ERR_IO, "cannot read %s", path);
		return NULL;
	}
	tl_ice_table_metadata *md = tl_ice_metadata_parse(text, len, err);
	free(text);
	return md;
}

/* Writes md as v2 and parses the result again. */
static tl_ice_table_metadata *rewrite(const tl_ice_table_metadata *md, tl_error *err)
{
	tl_buf b;
	tl_buf_init(&b);
	tl_ice_table_metadata *back = NULL;
	if (tl_ice_metadata_write(md, &b, err) == 0)
		back = tl_ice_metadata_parse((const char *)b.data, b.len, err);
	tl_buf_free(&b);
	return back;
}

/* Everything the library reads, compared field by field. */
static bool metadata_equal(const tl_ice_table_metadata *a, const tl_ice_table_metadata *b)
{
	if (strcmp(a->table_uuid, b->table_uuid) || strcmp(a->location, b->location) ||
	    a->last_sequence_number != b->last_sequence_number || a->last_updated_ms != b->last_updated_ms ||
	    a->last_column_id != b->last_column_id || a->nschemas != b->nschemas ||
	    a->current_schema_id != b->current_schema_id || a->nspecs != b->nspecs ||
	    a->default_spec_id != b->default_spec_id || a->last_partition_id != b->last_partition_id ||
	    a->nsort_orders != b->nsort_orders || a->default_sort_order_id != b->default_sort_order_id ||
	    a->nproperties != b->nproperties || a->current_snapshot_id != b->current_snapshot_id ||
	    a->nsnapshots != b->nsnapshots || a->nsnapshot_log != b->nsnapshot_log ||
	    a->nmetadata_log != b->nmetadata_log || a->nrefs != b->nrefs)
		return false;
	for (int i = 0; i < a->nschemas; i++)
		if (!tl_ice_schema_equal(&a->schemas[i], &b->schemas[i]))
			return false;
	for (int i = 0; i < a->nspecs; i++)
		if (!tl_ice_partition_spec_equal(&a->specs[i], &b->specs[i]))
			return false;
	for (int i = 0; i < a->nproperties; i++)
		if (strcmp(a->properties[i].key, b->properties[i].key) || strcmp(a->properties[i].value, b->properties[i].value))
			return false;
	for (int i = 0; i < a->nsnapshots; i++) {
		const tl_ice_snapshot *x = &a->snapshots[i], *y = &b->snapshots[i];
		if (x->snapshot_id != y->snapshot_id || x->parent_id != y->parent_id ||
		    x->sequence_number != y->sequence_number || x->timestamp_ms != y->timestamp_ms ||
		    x->schema_id != y->schema_id || strcmp(x->operation, y->operation) || x->nsummary != y->nsummary ||
		    (x->manifest_list == NULL) != (y->manifest_list == NULL) ||
		    (x->manifest_list && strcmp(x->manifest_list, y->manifest_list)) || x->nmanifests != y->nmanifests)
			return false;
		for (int j = 0; j < x->nsummary; j++)
			if (strcmp(x->summary[j].key, y->summary[j].key) || strcmp(x->summary[j].value, y->summary[j].value))
				return false;
	}
	for (int i = 0; i < a->nsnapshot_log; i++)
		if (a->snapshot_log[i].snapshot_id != b->snapshot_log[i].snapshot_id ||
		    a->snapshot_log[i].timestamp_ms != b->snapshot_log[i].timestamp_ms)
			return false;
	for (int i = 0; i < a->nmetadata_log; i++)
		if (strcmp(a->metadata_log[i].metadata_file, b->metadata_log[i].metadata_file))
			return false;
	for (int i = 0; i < a->nrefs; i++)
		if (strcmp(a->refs[i].name, b->refs[i].name) || a->refs[i].snapshot_id != b->refs[i].snapshot_id ||
		    a->refs[i].is_branch != b->refs[i].is_branch)
			return false;
	return true;
}

static void check_pyiceberg_table(const char *name, int version)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_table_metadata *md = load(name, &err);
	CHECK(md != NULL);
	CHECK_INT(md->format_version, version);
	CHECK_INT(md->nschemas, 2);
	CHECK_INT(md->current_schema_id, 1);
	CHECK_INT(tl_ice_metadata_current_schema(md)->nfields, 4);
	CHECK_STR(tl_ice_schema_find_id(tl_ice_metadata_current_schema(md), 4)->name, "score");
	CHECK_INT(md->last_column_id, 4);
	CHECK_INT(md->nspecs, 2);
	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(md);
	CHECK_INT(spec->spec_id, 1);
	CHECK_INT(md->last_partition_id, 1002);
	CHECK_INT(tl_ice_metadata_spec(md, 0)->fields[0].transform.kind, TL_ICE_IDENTITY);
	int day = -1, trunc = -1;
	for (int i = 0; i < spec->nfields; i++) {
		if (strcmp(spec->fields[i].name, "ts_day") == 0)
			day = i;
		if (strcmp(spec->fields[i].name, "id_trunc") == 0)
			trunc = i;
	}
	CHECK(day >= 0 && trunc >= 0);
	CHECK_INT(spec->fields[day].transform.kind, TL_ICE_DAY);
	CHECK_INT(spec->fields[day].source_id, 2);
	CHECK_INT(spec->fields[trunc].transform.kind, TL_ICE_TRUNCATE);
	CHECK_INT(spec->fields[trunc].transform.param, 1000);
	CHECK_STR(tl_ice_metadata_property(md, "tierdb.test"), "yes");
	CHECK_INT(md->nsnapshots, 2);
	const tl_ice_snapshot *cur = tl_ice_metadata_current_snapshot(md);
	CHECK(cur != NULL);
	CHECK(cur->parent_id == md->snapshots[0].snapshot_id);
	CHECK(tl_ice_metadata_snapshot(md, cur->parent_id) == &md->snapshots[0]);
	CHECK(md->snapshots[0].parent_id == TL_ICE_NO_SNAPSHOT);
	CHECK_STR(cur->operation, "append");
	CHECK_STR(tl_ice_snapshot_summary(cur, "total-records"), "6");
	CHECK_STR(tl_ice_snapshot_summary(cur, "operation"), "append");
	CHECK(tl_ice_snapshot_summary(cur, "nope") == NULL);
	CHECK(cur->manifest_list != NULL && strstr(cur->manifest_list, "snap-") != NULL);
	if (version == 2) {
		CHECK_INT(cur->sequence_number, 2);
		CHECK_INT(md->last_sequence_number, 2);
	} else {
		CHECK_INT(cur->sequence_number, 0);
	}
	CHECK_INT(md->nrefs, 1);
	CHECK_STR(md->refs[0].name, "main");
	CHECK(md->refs[0].snapshot_id == md->current_snapshot_id);
	CHECK_INT(md->nsnapshot_log, 2);
	CHECK_INT(md->nmetadata_log, 4);

	tl_ice_table_metadata *back = rewrite(md, &err);
	CHECK(back != NULL);
	CHECK_INT(back->format_version, 2);
	CHECK(metadata_equal(md, back));
	tl_ice_metadata_free(back);
	tl_ice_metadata_free(md);
}

TEST(iceberg_metadata_reads_pyiceberg_v2)
{
	check_pyiceberg_table("v2.metadata.json", 2);
}

TEST(iceberg_metadata_reads_pyiceberg_v1)
{
	check_pyiceberg_table("v1.metadata.json", 1);
}

TEST(iceberg_metadata_upgrades_java_v1)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_table_metadata *md = load("java_v1.metadata.json", &err);
	CHECK_OK(md ? 0 : -1, &err);
	CHECK_INT(md->format_version, 1);
	CHECK_INT(md->nschemas, 1);
	CHECK_INT(md->current_schema_id, 0);
	const tl_ice_schema *s = tl_ice_metadata_current_schema(md);
	CHECK_INT(s->nfields, 6);
	CHECK_INT(tl_ice_schema_find_id(s, 12)->type.id, TL_ICE_FIXED);
	CHECK_INT(tl_ice_schema_find_name(s, "amount")->type.precision, 38);
	CHECK_INT(tl_ice_schema_find_name(s, "location.long")->id, 8);
	/* v1 partition fields without ids get 1000 + index. */
	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(md);
	CHECK_INT(spec->nfields, 2);
	CHECK_INT(spec->fields[0].field_id, 1000);
	CHECK_INT(spec->fields[1].field_id, 1001);
	CHECK_INT(spec->fields[1].transform.kind, TL_ICE_BUCKET);
	CHECK_INT(spec->fields[1].transform.param, 8);
	CHECK_INT(md->last_partition_id, 1001);
	CHECK_INT(md->nsort_orders, 1);
	CHECK_INT(md->sort_orders[0].order_id, 0);
	CHECK_INT(md->last_sequence_number, 0);
	/* The first snapshot lists manifests and has no summary. */
	CHECK_INT(md->snapshots[0].nmanifests, 2);
	CHECK(md->snapshots[0].manifest_list == NULL);
	CHECK_STR(md->snapshots[0].operation, "append");
	CHECK_STR(tl_ice_metadata_current_snapshot(md)->operation, "overwrite");
	CHECK_STR(tl_ice_snapshot_summary(tl_ice_metadata_current_snapshot(md), "spark.app.id"), "local-1");
	/* No refs in the file: main is the current snapshot. */
	CHECK_INT(md->nrefs, 1);
	CHECK_STR(md->refs[0].name, "main");
	CHECK(md->refs[0].is_branch);
	CHECK(md->refs[0].snapshot_id == 3055729675574597004LL);

	tl_ice_table_metadata *back = rewrite(md, &err);
	CHECK_OK(back ? 0 : -1, &err);
	CHECK(metadata_equal(md, back));
	CHECK_INT(back->format_version, 2);
	CHECK_INT(back->snapshots[0].nmanifests, 2);
	tl_ice_metadata_free(back);
	tl_ice_metadata_free(md);
}

TEST(iceberg_metadata_create_and_round_trip)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "at", .type = {.id = TL_ICE_TIMESTAMPTZ}},
		{.id = 3, .name = "amount", .type = {.id = TL_ICE_DECIMAL, .precision = 12, .scale = 2}},
	};
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, fields, 3, &err), &err);
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_partition_spec_add(&spec, 2, 1000, "at_day", (tl_ice_transform){TL_ICE_DAY, 0});
	tl_ice_kv props[] = {{"tierdb.table", "public.events"}, {"write.format.default", "parquet"}};
	tl_ice_table_metadata *md = tl_ice_metadata_create("/tmp/wh/public/events", &schema, &spec, props, 2, &err);
	CHECK_OK(md ? 0 : -1, &err);
	CHECK_INT(strlen(md->table_uuid), 36);
	CHECK(md->table_uuid[14] == '4');
	CHECK(strchr("89ab", md->table_uuid[19]) != NULL);
	CHECK_INT(md->last_column_id, 3);
	CHECK_INT(md->last_partition_id, 1000);
	CHECK(md->last_updated_ms > 1600000000000LL);
	CHECK(tl_ice_metadata_current_snapshot(md) == NULL);
	tl_ice_table_metadata *back = rewrite(md, &err);
	CHECK_OK(back ? 0 : -1, &err);
	CHECK(metadata_equal(md, back));
	CHECK_INT(back->current_snapshot_id, TL_ICE_NO_SNAPSHOT);
	CHECK_STR(tl_ice_metadata_property(back, "tierdb.table"), "public.events");
	tl_ice_metadata_free(back);

	/* Two tables never share a uuid. */
	tl_ice_table_metadata *other = tl_ice_metadata_create("/tmp/x", &schema, &spec, NULL, 0, &err);
	CHECK_OK(other ? 0 : -1, &err);
	CHECK(strcmp(other->table_uuid, md->table_uuid) != 0);
	tl_ice_metadata_free(other);
	tl_ice_metadata_free(md);

	/* A spec that does not fit the schema is refused. */
	tl_ice_partition_spec bad;
	tl_ice_partition_spec_init(&bad, 0);
	tl_ice_partition_spec_add(&bad, 1, 1000, "id_day", (tl_ice_transform){TL_ICE_DAY, 0});
	CHECK(tl_ice_metadata_create("/tmp/x", &schema, &bad, NULL, 0, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	tl_ice_partition_spec_free(&bad);
	tl_ice_partition_spec_free(&spec);
	tl_ice_schema_free(&schema);
}

/* Replaces the first `from` in text by `to` and parses the result. */
static int parse_edited(const char *text, const char *from, const char *to, tl_error *err)
{
	const char *at = strstr(text, from);
	if (at == NULL) {
		tl_test_fail(__FILE__, __LINE__, "fixture lacks \"%s\"", from);
		return 0;
	}
	tl_buf b;
	tl_buf_init(&b);
	tl_buf_append(&b, text, (size_t)(at - text));
	tl_buf_append_str(&b, to);
	tl_buf_append_str(&b, at + strlen(from));
	tl_error_clear(err);
	tl_ice_table_metadata *md = tl_ice_metadata_parse((const char *)b.data, b.len, err);
	tl_buf_free(&b);
	tl_ice_metadata_free(md);
	return md ? 0 : -1;
}

TEST(iceberg_metadata_errors_name_the_field)
{
	size_t len;
	char *text = read_text(FIXTURES "v2.metadata.json", &len);
	CHECK(text != NULL);
	static const struct { const char *from, *to, *expect; tl_error_code code; } cases[] = {
		{"\"location\":", "\"locationx\":", "\"location\"", TL_ERR_CORRUPT},
		{"\"current-schema-id\":1", "\"current-schema-id\":7", "current-schema-id 7", TL_ERR_CORRUPT},
		{"\"default-spec-id\":1", "\"default-spec-id\":5", "default-spec-id 5", TL_ERR_CORRUPT},
		{"\"format-version\":2", "\"format-version\":4", "format-version 4", TL_ERR_UNSUPPORTED},
		{"\"transform\":\"day\"", "\"transform\":\"zorder\"", "zorder", TL_ERR_UNSUPPORTED},
		{"\"current-snapshot-id\":", "\"current-snapshot-id\":12,\"x\":", "current-snapshot-id 12", TL_ERR_CORRUPT},
		{"\"last-column-id\":4", "\"last-column-id\":\"4\"", "\"last-column-id\"", TL_ERR_CORRUPT},
		{"\"sequence-number\":1", "\"sequence-numbr\":1", "\"sequence-number\"", TL_ERR_CORRUPT},
		{"\"source-id\":2", "\"source-id\":99", "source-id 99", TL_ERR_CORRUPT},
		{"\"manifest-list\":", "\"manifest-lists\":", "manifest-list", TL_ERR_CORRUPT},
		{"\"type\":\"branch\"", "\"type\":\"twig\"", "ref \"main\"", TL_ERR_CORRUPT},
		{"{", "[", "not valid JSON", TL_ERR_CORRUPT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tl_error err;
		if (parse_edited(text, cases[i].from, cases[i].to, &err) == 0) {
			tl_test_fail(__FILE__, __LINE__, "case %zu (%s) accepted", i, cases[i].to);
			break;
		}
		if (err.code != cases[i].code || strstr(err.message, cases[i].expect) == NULL) {
			tl_test_fail(__FILE__, __LINE__, "case %zu: %s: %s", i, tl_error_code_name(err.code), err.message);
			break;
		}
	}
	/* Every truncation of a valid file fails cleanly. */
	for (size_t cut = 0; cut < len; cut += 7) {
		tl_error err;
		tl_error_clear(&err);
		tl_ice_table_metadata *md = tl_ice_metadata_parse(text, cut, &err);
		if (md != NULL) {
			tl_ice_metadata_free(md);
			tl_test_fail(__FILE__, __LINE__, "a prefix of %zu bytes parsed", cut);
			break;
		}
	}
	free(text);
}

/* Parses the v2 fixture after `edit` changed its JSON tree. */
static int parse_modified(void (*edit)(json_t *root), tl_error *err)
{
	json_error_t jerr;
	json_t *root = json_load_file(FIXTURES "v2.metadata.json", 0, &jerr);
	if (root == NULL)
		return tl_error_set(err, TL_ERR_IO, "fixture: %s", jerr.text);
	edit(root);
	char *text = json_dumps(root, 0);
	json_decref(root);
	tl_error_clear(err);
	tl_ice_table_metadata *md = tl_ice_metadata_parse(text, strlen(text), err);
	free(text);
	tl_ice_metadata_free(md);
	return md ? 0 : -1;
}

static void duplicate_snapshot_id(json_t *root)
{
	json_t *snaps = json_object_get(root, "snapshots");
	json_object_set(json_array_get(snaps, 1), "snapshot-id",
	                json_object_get(json_array_get(snaps, 0), "snapshot-id"));
}

static void duplicate_schema_id(json_t *root)
{
	json_object_set_new(json_array_get(json_object_get(root, "schemas"), 0), "schema-id", json_integer(1));
}

static void ref_to_nowhere(json_t *root)
{
	json_object_set_new(json_object_get(json_object_get(root, "refs"), "main"), "snapshot-id", json_integer(42));
}

static void no_refs_no_current(json_t *root)
{
	json_object_del(root, "refs");
	json_object_set_new(root, "current-snapshot-id", json_integer(-1));
}

TEST(iceberg_metadata_rejects_duplicate_and_dangling_ids)
{
	tl_error err;
	CHECK(parse_modified(duplicate_snapshot_id, &err) < 0);
	CHECK(strstr(err.message, "snapshot-id") && strstr(err.message, "appears twice"));
	CHECK(parse_modified(duplicate_schema_id, &err) < 0);
	CHECK(strstr(err.message, "schema-id 1 appears twice") != NULL);
	CHECK(parse_modified(ref_to_nowhere, &err) < 0);
	CHECK(strstr(err.message, "unknown snapshot 42") != NULL);
	/* -1 means no current snapshot; without refs there is then no main branch. */
	CHECK_OK(parse_modified(no_refs_no_current, &err), &err);
}
