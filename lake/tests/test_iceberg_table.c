/*
 * test_iceberg_table.c: creating path-based Iceberg tables and finding
 * their current metadata: by directory (with or without a trailing slash,
 * or as a file:// URI), by metadata file, through a good, stale, missing,
 * garbage or dangling version hint, and in directories other catalogs
 * wrote (<N>-<uuid>.metadata.json). Each test works in its own temporary
 * directory.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "tierlake/iceberg_table.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_tree(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory under /tmp; the caller removes it with remove_tree. */
static void make_temp_dir(char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "/tmp/tl_table_test_XXXXXX");
	if (mkdtemp(out) == NULL)
		abort();
}

static void make_schema(tl_ice_schema *schema, tl_ice_partition_spec *spec)
{
	tl_error err;
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "name", .type = {.id = TL_ICE_STRING}},
	};
	if (tl_ice_schema_init(schema, 0, fields, 2, &err) < 0)
		abort();
	tl_ice_partition_spec_init(spec, 0);
}

static tl_ice_table *create_table(const char *location, tl_error *err)
{
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	make_schema(&schema, &spec);
	tl_ice_kv props[] = {{"owner", "tierdb"}};
	tl_ice_table *t = tl_ice_table_create(location, &schema, &spec, props, 1, err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	return t;
}

static char *join(const char *a, const char *b)
{
	char *s = malloc(strlen(a) + strlen(b) + 2);
	sprintf(s, "%s/%s", a, b);
	return s;
}

static bool exists(const char *dir, const char *name)
{
	char *p = join(dir, name);
	struct stat st;
	bool ok = stat(p, &st) == 0;
	free(p);
	return ok;
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char *p = join(dir, name);
	FILE *f = fopen(p, "w");
	if (f == NULL)
		abort();
	fputs(text, f);
	fclose(f);
	free(p);
}

static void copy_file(const char *dir, const char *from, const char *to)
{
	tl_buf b;
	tl_error err;
	tl_buf_init(&b);
	char *src = join(dir, from);
	if (tl_test_load(src, &b, &err) < 0)
		abort();
	tl_buf_append_byte(&b, '\0');
	write_text(dir, to, (const char *)b.data);
	free(src);
	tl_buf_free(&b);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

TEST(iceberg_table_create_writes_layout_and_opens_every_way)
{
	char dir[PATH_MAX], loc[PATH_MAX + 8], uri[PATH_MAX + 32];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	snprintf(loc, sizeof(loc), "%s/t", dir);
	tl_ice_table *t = create_table(loc, &err);
	CHECK(t != NULL);
	CHECK_STR(t->location, loc);
	CHECK_INT(t->version, 1);
	CHECK(ends_with(t->metadata_file, "/t/metadata/v1.metadata.json"));
	CHECK_INT(t->metadata->current_snapshot_id, TL_ICE_NO_SNAPSHOT);
	CHECK_STR(tl_ice_metadata_property(t->metadata, "owner"), "tierdb");
	tl_ice_table_free(t);

	char *meta = join(loc, "metadata");
	CHECK(exists(meta, "v1.metadata.json"));
	CHECK(exists(loc, "data"));
	tl_buf hint;
	tl_buf_init(&hint);
	char *hint_path = join(meta, "version-hint.text");
	CHECK_OK(tl_test_load(hint_path, &hint, &err), &err);
	CHECK(hint.len == 1 && hint.data[0] == '1');
	tl_buf_free(&hint);
	free(hint_path);

	/* By directory, with a trailing slash, as a file:// URI, and by metadata file. */
	snprintf(uri, sizeof(uri), "file://%s/", loc);
	char *v1 = join(meta, "v1.metadata.json");
	char slashed[PATH_MAX + 16];
	snprintf(slashed, sizeof(slashed), "%s//", loc);
	const char *ways[] = {loc, slashed, uri, v1};
	for (int i = 0; i < 4; i++) {
		t = tl_ice_table_open(ways[i], &err);
		CHECK(t != NULL);
		CHECK_STR(t->location, loc);
		CHECK_INT(t->version, 1);
		CHECK(ends_with(t->metadata_file, "metadata/v1.metadata.json"));
		CHECK_INT(t->metadata->nschemas, 1);
		tl_ice_table_free(t);
	}
	free(v1);
	free(meta);
	remove_tree(dir);
}

TEST(iceberg_table_create_normalises_location)
{
	char dir[PATH_MAX], uri[PATH_MAX + 32], want[PATH_MAX + 32], cwd[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);

	/* A file:// URI stays one, without its trailing slash. */
	snprintf(uri, sizeof(uri), "file://%s/u/", dir);
	tl_ice_table *t = create_table(uri, &err);
	CHECK(t != NULL);
	snprintf(want, sizeof(want), "file://%s/u", dir);
	CHECK_STR(t->location, want);
	CHECK_STR(t->metadata->location, want);
	tl_ice_table_free(t);
	t = tl_ice_table_open(want, &err);
	CHECK(t != NULL);
	tl_ice_table_free(t);

	/* A relative path becomes absolute. */
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK(chdir(dir) == 0);
	t = create_table("nested/rel/", &err);
	int back = chdir(cwd);
	CHECK(back == 0);
	CHECK(t != NULL);
	char *real = realpath(dir, NULL);
	snprintf(want, sizeof(want), "%s/nested/rel", real);
	free(real);
	CHECK_STR(t->location, want);
	CHECK(exists(want, "metadata/v1.metadata.json"));
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(iceberg_table_create_on_existing_table_conflicts)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, &err);
	CHECK(t != NULL);
	tl_ice_table_free(t);
	t = create_table(dir, &err);
	CHECK(t == NULL);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	CHECK(strstr(err.message, "table already exists at") != NULL);
	CHECK(strstr(err.message, dir) != NULL);
	/* The first table is untouched. */
	tl_error_clear(&err);
	t = tl_ice_table_open(dir, &err);
	CHECK(t != NULL);
	CHECK_INT(t->version, 1);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* A table whose metadata/ holds v1 and a copy as v2, with the given hint (NULL: none). */
static void two_versions(const char *dir, const char *hint)
{
	tl_error err;
	tl_ice_table *t = create_table(dir, &err);
	if (t == NULL)
		abort();
	tl_ice_table_free(t);
	char *meta = join(dir, "metadata");
	copy_file(meta, "v1.metadata.json", "v2.metadata.json");
	char *hint_path = join(meta, "version-hint.text");
	remove(hint_path);
	if (hint != NULL)
		write_text(meta, "version-hint.text", hint);
	free(hint_path);
	free(meta);
}

TEST(iceberg_table_open_follows_hint_and_listing)
{
	/* hint text -> version opened */
	static const struct {
		const char *hint;
		int64_t version;
	} cases[] = {
		{"2", 2},        /* good */
		{"2\n", 2},      /* with a newline, as some writers leave */
		{"1", 2},        /* stale: v2 was published after it */
		{NULL, 2},       /* missing */
		{"v2 oops", 2},  /* garbage */
		{"", 2},         /* empty */
		{"7", 2},        /* names no file */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char dir[PATH_MAX];
		tl_error err;
		tl_error_clear(&err);
		make_temp_dir(dir);
		two_versions(dir, cases[i].hint);
		tl_ice_table *t = tl_ice_table_open(dir, &err);
		CHECK(t != NULL);
		CHECK_INT(t->version, cases[i].version);
		CHECK(ends_with(t->metadata_file, "/metadata/v2.metadata.json"));
		tl_ice_table_free(t);
		remove_tree(dir);
	}
}

TEST(iceberg_table_open_other_catalog_naming)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, &err);
	CHECK(t != NULL);
	tl_ice_table_free(t);
	char *meta = join(dir, "metadata");
	/* Another catalog's names; Java's in-flight temporary (a bare uuid with a numeric first group) is no version. */
	char *from = join(meta, "v1.metadata.json");
	char *to = join(meta, "00003-0b3c2a1e-7d4f-4a55-9c1e-2f6a8b9d0e11.metadata.json");
	int renamed = rename(from, to);
	free(from);
	free(to);
	CHECK(renamed == 0);
	copy_file(meta, "00003-0b3c2a1e-7d4f-4a55-9c1e-2f6a8b9d0e11.metadata.json",
	          "12345678-7d4f-4a55-9c1e-2f6a8b9d0e11.metadata.json");
	write_text(meta, "version-hint.text", "1");
	t = tl_ice_table_open(dir, &err);
	CHECK(t != NULL);
	CHECK_INT(t->version, 3);
	CHECK(ends_with(t->metadata_file, "00003-0b3c2a1e-7d4f-4a55-9c1e-2f6a8b9d0e11.metadata.json"));
	/* We do not extend another catalog's naming. */
	tl_ice_commit *c = tl_ice_commit_begin(t, TL_ICE_OP_APPEND, &err);
	CHECK(c == NULL);
	CHECK_INT(err.code, TL_ERR_INVALID);
	CHECK(strstr(err.message, "v<N>.metadata.json") != NULL);
	tl_ice_table_free(t);
	free(meta);
	remove_tree(dir);
}

TEST(iceberg_table_open_errors)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);

	/* An empty directory is no table. */
	CHECK(tl_ice_table_open(dir, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	CHECK(strstr(err.message, "is not an Iceberg table") != NULL);

	/* Nor is a metadata directory without metadata files. */
	tl_error_clear(&err);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	CHECK(mkdir(path, 0755) == 0);
	write_text(path, "version-hint.text", "1");
	CHECK(tl_ice_table_open(dir, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);

	/* A missing path. */
	tl_error_clear(&err);
	snprintf(path, sizeof(path), "%s/missing", dir);
	CHECK(tl_ice_table_open(path, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	CHECK(strstr(err.message, "missing") != NULL);

	/* A metadata file that is not JSON names the file. */
	tl_error_clear(&err);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	write_text(path, "v1.metadata.json", "{not json");
	CHECK(tl_ice_table_open(dir, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "v1.metadata.json") != NULL);

	/* A scheme no storage serves. */
	tl_error_clear(&err);
	CHECK(tl_ice_table_open("gs://bucket/table", &err) == NULL);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	remove_tree(dir);
}

TEST(iceberg_table_refresh_and_file_opened_tables)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, &err);
	CHECK(t != NULL);
	char *meta = join(dir, "metadata");
	copy_file(meta, "v1.metadata.json", "v2.metadata.json");
	CHECK_OK(tl_ice_table_refresh(t, &err), &err);
	CHECK_INT(t->version, 2);
	CHECK(ends_with(t->metadata_file, "/v2.metadata.json"));
	tl_ice_table_free(t);

	/* Opened by file: the version its name carries, but no refresh and no commits. */
	char *v2 = join(meta, "v2.metadata.json");
	t = tl_ice_table_open(v2, &err);
	CHECK(t != NULL);
	CHECK_INT(t->version, 2);
	CHECK(tl_ice_table_refresh(t, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);
	CHECK(tl_ice_commit_begin(t, TL_ICE_OP_APPEND, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_INVALID);
	CHECK(strstr(err.message, "opened by its metadata file") != NULL);
	tl_ice_table_free(t);
	free(v2);
	free(meta);
	remove_tree(dir);
}

TEST(iceberg_table_new_data_path)
{
	char dir[PATH_MAX], prefix[PATH_MAX + 32];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, &err);
	CHECK(t != NULL);
	tl_buf a, b;
	tl_buf_init(&a);
	tl_buf_init(&b);
	CHECK_OK(tl_ice_table_new_data_path(t, NULL, NULL, &a, &err), &err);
	CHECK_OK(tl_ice_table_new_data_path(t, "", "", &b, &err), &err);
	tl_buf_append_byte(&a, '\0');
	tl_buf_append_byte(&b, '\0');
	snprintf(prefix, sizeof(prefix), "%s/data/", dir);
	const char *pa = (const char *)a.data;
	CHECK(strncmp(pa, prefix, strlen(prefix)) == 0);
	CHECK_INT(strlen(pa), strlen(prefix) + 36 + 8);
	CHECK(ends_with(pa, ".parquet"));
	CHECK(strcmp(pa, (const char *)b.data) != 0);

	tl_buf_reset(&a);
	CHECK_OK(tl_ice_table_new_data_path(t, "id_trunc=10", "op-7", &a, &err), &err);
	tl_buf_append_byte(&a, '\0');
	snprintf(prefix, sizeof(prefix), "%s/data/id_trunc=10/op-7-", dir);
	CHECK(strncmp((const char *)a.data, prefix, strlen(prefix)) == 0);
	CHECK_INT(strlen((const char *)a.data), strlen(prefix) + 36 + 8);
	CHECK(ends_with((const char *)a.data, ".parquet"));
	tl_buf_free(&a);
	tl_buf_free(&b);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* A new table in a fresh temporary directory (err cleared first). */
static tl_ice_table *fresh_table(char dir[PATH_MAX], tl_error *err)
{
	tl_error_clear(err);
	make_temp_dir(dir);
	return create_table(dir, err);
}

/* The fields' names of the current schema, "a,b". */
static void field_names(const tl_ice_table *t, char *out, size_t cap)
{
	const tl_ice_schema *s = tl_ice_metadata_current_schema(t->metadata);
	out[0] = '\0';
	for (int i = 0; i < s->nfields; i++)
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i > 0 ? "," : "", s->fields[i].name);
}

TEST(iceberg_table_rename_fields_adds_a_schema_keeping_ids)
{
	char dir[PATH_MAX], names[64];
	tl_error err;
	tl_ice_table *t = fresh_table(dir, &err);
	CHECK(t != NULL);
	bool changed = true;
	const char *same[] = {"id", "name"};
	CHECK_OK(tl_ice_table_rename_fields(t, same, 2, &changed, &err), &err);
	CHECK(!changed);
	CHECK_INT(t->version, 1);

	const char *renamed[] = {"id", "label"};
	CHECK_OK(tl_ice_table_rename_fields(t, renamed, 2, &changed, &err), &err);
	CHECK(changed);
	CHECK_INT(t->version, 2);
	tl_ice_table_free(t);

	/* Read back from disk: schema 1 current, schema 0 kept, ids and types unchanged. */
	t = tl_ice_table_open(dir, &err);
	CHECK(t != NULL);
	CHECK_INT(t->version, 2);
	CHECK_INT(t->metadata->nschemas, 2);
	CHECK_INT(t->metadata->current_schema_id, 1);
	CHECK_INT(t->metadata->last_column_id, 2);
	field_names(t, names, sizeof names);
	CHECK_STR(names, "id,label");
	const tl_ice_schema *s = tl_ice_metadata_current_schema(t->metadata);
	CHECK_INT(s->fields[0].id, 1);
	CHECK_INT(s->fields[1].id, 2);
	CHECK(s->fields[0].required);
	CHECK_INT(s->fields[1].type.id, TL_ICE_STRING);
	CHECK_STR(tl_ice_metadata_schema(t->metadata, 0)->fields[1].name, "name");
	CHECK_INT(t->metadata->nmetadata_log, 1);
	CHECK(strstr(t->metadata->metadata_log[0].metadata_file, "v1.metadata.json") != NULL);
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(iceberg_table_rename_fields_errors_change_nothing)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_ice_table *t = fresh_table(dir, &err);
	CHECK(t != NULL);
	const char *one[] = {"id"};
	CHECK(tl_ice_table_rename_fields(t, one, 1, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);
	const char *dup[] = {"id", "id"};
	CHECK(tl_ice_table_rename_fields(t, dup, 2, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	CHECK_INT(t->version, 1);
	CHECK(!exists(dir, "metadata/v2.metadata.json"));

	/* A writer that lost the race for v2: TL_ERR_CONFLICT, the winner's version stays. */
	tl_error_clear(&err);
	tl_ice_table *other = tl_ice_table_open(dir, &err);
	CHECK(other != NULL);
	const char *a[] = {"id", "a"}, *b[] = {"id", "b"};
	CHECK_OK(tl_ice_table_rename_fields(other, a, 2, NULL, &err), &err);
	CHECK(tl_ice_table_rename_fields(t, b, 2, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	tl_ice_table_free(t);
	tl_ice_table_free(other);
	tl_error_clear(&err);
	t = tl_ice_table_open(dir, &err);
	CHECK(t != NULL);
	CHECK_STR(tl_ice_metadata_current_schema(t->metadata)->fields[1].name, "a");
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(iceberg_table_add_fields_takes_the_next_ids)
{
	char dir[PATH_MAX], names[64];
	tl_error err;
	tl_ice_table *t = fresh_table(dir, &err);
	CHECK(t != NULL);
	tl_ice_field added[] = {
		{.id = 99, .name = "extra", .required = true, .type = {.id = TL_ICE_INT}},
		{.id = 1, .name = "price", .type = {.id = TL_ICE_DECIMAL, .precision = 12, .scale = 2}},
	};
	CHECK_OK(tl_ice_table_add_fields(t, added, 2, &err), &err);
	tl_ice_table_free(t);
	t = tl_ice_table_open(dir, &err);
	CHECK(t != NULL);
	CHECK_INT(t->version, 2);
	CHECK_INT(t->metadata->last_column_id, 4);
	field_names(t, names, sizeof names);
	CHECK_STR(names, "id,name,extra,price");
	const tl_ice_schema *s = tl_ice_metadata_current_schema(t->metadata);
	CHECK_INT(s->fields[2].id, 3);
	CHECK(!s->fields[2].required);
	CHECK_INT(s->fields[3].id, 4);
	CHECK_INT(s->fields[3].type.precision, 12);
	CHECK_INT(s->schema_id, 1);

	/* A name that is taken, or a nested type: refused, nothing written. */
	tl_ice_field taken[] = {{.name = "name", .type = {.id = TL_ICE_STRING}}};
	CHECK(tl_ice_table_add_fields(t, taken, 1, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);
	tl_ice_field nested[] = {{.name = "s", .type = {.id = TL_ICE_STRUCT}}};
	CHECK(tl_ice_table_add_fields(t, nested, 1, &err) < 0);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK_INT(t->version, 2);
	tl_ice_table_free(t);
	remove_tree(dir);
}
