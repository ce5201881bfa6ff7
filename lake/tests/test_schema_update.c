/*
 * test_schema_update.c: schema evolution of path-based tables
 * (tl_ice_table_evolve_schema and its rename/add wrappers), and reading
 * the files written before and after it.
 *
 * Each kind of change is published and read back from disk; each refusal
 * leaves the table at its version; ids never come back after a drop; rows
 * of files written before a promotion read in the promoted type with their
 * values intact, a dropped field is gone from the current schema but not
 * from older snapshots; and the reader reports each file's data sequence
 * number. Tables live in fresh temporary directories.
 */
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/render.h"
#include "iceberg/schema_json.h"
#include "common/render_json.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_tree(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * The table the tests evolve: id (identifier) long, n int, f float,
 * price decimal(5, 2), note string, gone string; partitioned by identity
 * of `partition_source` (0: unpartitioned).
 */
static tl_ice_table *evolving_table(char dir[PATH_MAX], int32_t partition_source, tl_error *err)
{
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "n", .type = {.id = TL_ICE_INT}},
		{.id = 3, .name = "f", .type = {.id = TL_ICE_FLOAT}},
		{.id = 4, .name = "price", .type = {.id = TL_ICE_DECIMAL, .precision = 5, .scale = 2}},
		{.id = 5, .name = "note", .type = {.id = TL_ICE_STRING}},
		{.id = 6, .name = "gone", .type = {.id = TL_ICE_STRING}},
	};
	tl_error_clear(err);
	snprintf(dir, PATH_MAX, "/tmp/tl_schema_update_XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
	tl_ice_schema schema;
	if (tl_ice_schema_init(&schema, 0, fields, 6, err) < 0)
		abort();
	schema.identifier_ids = malloc(sizeof(int32_t));
	schema.identifier_ids[0] = 1;
	schema.nidentifier_ids = 1;
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	if (partition_source > 0)
		tl_ice_partition_spec_add(&spec, partition_source, 1000, "part", (tl_ice_transform){.kind = TL_ICE_IDENTITY});
	tl_ice_table *t = tl_ice_table_create(dir, &schema, &spec, NULL, 0, err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	return t;
}

static const tl_ice_schema *current(const tl_ice_table *t)
{
	return tl_ice_metadata_current_schema(t->metadata);
}

/* The current schema's fields, to edit into a request (shallow: valid until the table changes). */
static int current_fields(const tl_ice_table *t, tl_ice_field *out, int cap)
{
	const tl_ice_schema *s = current(t);
	for (int i = 0; i < s->nfields && i < cap; i++)
		out[i] = s->fields[i];
	return s->nfields;
}

/* Index of the field named `name` in fields, or -1. */
static int index_of(const tl_ice_field *fields, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(fields[i].name, name) == 0)
			return i;
	return -1;
}

/* Removes fields[at], keeping the order. */
static int remove_at(tl_ice_field *fields, int n, int at)
{
	memmove(&fields[at], &fields[at + 1], sizeof(tl_ice_field) * (size_t)(n - at - 1));
	return n - 1;
}

/* Changes the type of the current field `name` and publishes it; *changed as evolve sets it. */
static int change_type(tl_ice_table *t, const char *name, tl_ice_type to, bool *changed, tl_error *err)
{
	tl_ice_field f[16];
	int n = current_fields(t, f, 16);
	f[index_of(f, n, name)].type = to;
	return tl_ice_table_evolve_schema(t, f, n, changed, err);
}

/* "name:type[!]" for each current field, with "!" when required, "," between. */
static void describe(const tl_ice_table *t, char *out, size_t cap)
{
	const tl_ice_schema *s = current(t);
	tl_buf b;
	tl_buf_init(&b);
	for (int i = 0; i < s->nfields; i++) {
		tl_buf_printf(&b, "%s%d %s:", i > 0 ? "," : "", (int)s->fields[i].id, s->fields[i].name);
		tl_ice_type_text(&s->fields[i].type, &b);
		if (s->fields[i].required)
			tl_buf_append_byte(&b, '!');
	}
	tl_buf_append_byte(&b, 0);
	snprintf(out, cap, "%s", (const char *)b.data);
	tl_buf_free(&b);
}

/* ------------------------------------------------------ writing and reading */

/* Feeds JSON rows (render.h's form) to the writer and closes it. */
static int write_rows(tl_ice_writer *w, const char *const *rows, int n, tl_error *err)
{
	const tl_pq_schema *schema = tl_ice_writer_schema(w);
	tl_pq_batch *batch = tl_pq_batch_new(schema, n);
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		json_t *row = tl_render_load_json(rows[i], strlen(rows[i]), err);
		rc = row != NULL ? tl_render_parse_row(schema, row, batch, i, err) : -1;
		json_decref(row);
	}
	batch->nrows = n;
	if (rc == 0)
		rc = tl_ice_writer_write(w, batch, err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, err);
	tl_pq_batch_free(batch);
	return rc;
}

/* Commits the files of a closed writer (then frees it); the new snapshot's id. */
static int commit_files(tl_ice_table *t, tl_ice_operation op, tl_ice_writer *w, int64_t *snapshot_id, tl_error *err)
{
	tl_ice_commit *c = tl_ice_commit_begin(t, op, err);
	int rc = c != NULL ? 0 : -1;
	for (int i = 0; rc == 0 && i < tl_ice_writer_nfiles(w); i++)
		rc = tl_ice_commit_add_file(c, tl_ice_writer_file(w, i), err);
	if (rc == 0)
		rc = tl_ice_commit_finish(c, snapshot_id, err);
	tl_ice_commit_free(c);
	tl_ice_writer_free(w);
	return rc;
}

/* Appends JSON rows through a writer of the current schema; the new snapshot's id. */
static int append_rows(tl_ice_table *t, const char *const *rows, int n, int64_t *snapshot_id, tl_error *err)
{
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, err);
	if (w == NULL)
		return -1;
	if (write_rows(w, rows, n, err) < 0) {
		tl_ice_writer_free(w);
		return -1;
	}
	return commit_files(t, TL_ICE_OP_APPEND, w, snapshot_id, err);
}

static int compare_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Every row of the table at a snapshot (TL_ICE_NO_SNAPSHOT: current),
 * rendered as JSON, sorted, one a line, into out; also the Parquet schema
 * the reader hands out (its physical types) when `physical` is not NULL.
 */
static int read_table(const tl_ice_table *t, int64_t snapshot_id, tl_buf *out, tl_pq_physical *physical,
                      tl_error *err)
{
	tl_ice_scan *scan = tl_ice_scan_plan(t->metadata, snapshot_id, NULL, err);
	tl_ice_reader *r = scan != NULL ? tl_ice_reader_open(scan, NULL, 0, err) : NULL;
	if (r == NULL) {
		tl_ice_scan_free(scan);
		return -1;
	}
	const tl_pq_schema *schema = tl_ice_reader_schema(r);
	for (int i = 0; physical != NULL && i < schema->ncolumns; i++)
		physical[i] = schema->columns[i].physical;
	tl_pq_batch *batch = tl_ice_reader_batch_new(r, 64);
	char **lines = NULL;
	int nlines = 0;
	int64_t got;
	tl_buf line;
	tl_buf_init(&line);
	while ((got = tl_ice_reader_next(r, batch, err)) > 0) {
		for (int64_t row = 0; row < got; row++) {
			tl_buf_reset(&line);
			tl_render_row(schema, NULL, batch, row, &line);
			tl_buf_append_byte(&line, 0);
			lines = realloc(lines, sizeof(char *) * (size_t)(nlines + 1));
			lines[nlines++] = strdup((const char *)line.data);
		}
	}
	if (nlines > 0)
		qsort(lines, (size_t)nlines, sizeof(char *), compare_lines);
	tl_buf_reset(out);
	for (int i = 0; i < nlines; i++) {
		tl_buf_printf(out, "%s\n", lines[i]);
		free(lines[i]);
	}
	tl_buf_append_byte(out, 0);
	free(lines);
	tl_buf_free(&line);
	tl_pq_batch_free(batch);
	tl_ice_reader_free(r);
	tl_ice_scan_free(scan);
	return got < 0 ? -1 : 0;
}

/* The lower bound of a data file's id (field 1), or 0 without one. */
static int64_t first_id(const tl_ice_data_file *f)
{
	for (uint32_t k = 0; k < f->lower_bounds.n; k++) {
		tl_ice_value v;
		tl_ice_type id_type = {.id = TL_ICE_LONG};
		const tl_bytes *b = &f->lower_bounds.values[k];
		if (f->lower_bounds.keys[k] == 1 && tl_ice_value_deserialize(&id_type, b->ptr, b->len, &v, NULL) == 0)
			return v.v.i64;
	}
	return 0;
}

/* The files a scan of the current snapshot with `filter` plans: bit i set for the file holding id first_ids[i]. */
static int planned_files(const tl_ice_table *t, const char *filter, const int64_t *first_ids, int nfiles,
                         tl_error *err)
{
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	const tl_ice_expr *expr = NULL;
	tl_ice_scan *scan = NULL;
	int mask = -1;
	if (tl_ice_expr_parse(current(t), filter, &arena, &expr, err) == 0 &&
	    (scan = tl_ice_scan_plan(t->metadata, TL_ICE_NO_SNAPSHOT, expr, err)) != NULL) {
		mask = 0;
		for (int i = 0; i < tl_ice_scan_ntasks(scan); i++)
			for (int j = 0; j < nfiles; j++)
				if (first_ids[j] == first_id(&tl_ice_scan_task_at(scan, i)->file))
					mask |= 1 << j;
	}
	tl_ice_scan_free(scan);
	tl_arena_free(&arena);
	return mask;
}

/* ------------------------------------------------------------- evolving */

TEST(schema_evolve_each_kind_of_change)
{
	char dir[PATH_MAX], text[512];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	tl_ice_field f[16];
	bool changed = false;

	/* Rename. */
	int n = current_fields(t, f, 16);
	f[index_of(f, n, "note")].name = "memo";
	CHECK_OK(tl_ice_table_evolve_schema(t, f, n, &changed, &err), &err);
	CHECK(changed);
	describe(t, text, sizeof text);
	CHECK_STR(text, "1 id:long!,2 n:int,3 f:float,4 price:decimal(5, 2),5 memo:string,6 gone:string");

	/* Drop. */
	n = current_fields(t, f, 16);
	n = remove_at(f, n, index_of(f, n, "gone"));
	CHECK_OK(tl_ice_table_evolve_schema(t, f, n, &changed, &err), &err);
	CHECK(changed);
	CHECK_INT(t->metadata->last_column_id, 6);

	/* Each promotion, one version each. */
	struct {
		const char *name;
		tl_ice_type to;
	} promotions[] = {
		{"n", {.id = TL_ICE_LONG}},
		{"f", {.id = TL_ICE_DOUBLE}},
		{"price", {.id = TL_ICE_DECIMAL, .precision = 12, .scale = 2}},
		{"price", {.id = TL_ICE_DECIMAL, .precision = 20, .scale = 2}},
	};
	for (size_t i = 0; i < sizeof(promotions) / sizeof(promotions[0]); i++) {
		CHECK_OK(change_type(t, promotions[i].name, promotions[i].to, &changed, &err), &err);
		CHECK(changed);
	}

	/* Relaxing required, and adding (required asked, optional given; the given id ignored). */
	tl_ice_table *other = tl_ice_table_open(dir, &err);
	CHECK(other != NULL);
	n = current_fields(other, f, 16);
	f[n++] = (tl_ice_field){.id = 0, .name = "extra", .required = true, .type = {.id = TL_ICE_INT}};
	f[n++] = (tl_ice_field){.id = -5, .name = "when", .type = {.id = TL_ICE_DATE}};
	CHECK_OK(tl_ice_table_evolve_schema(other, f, n, &changed, &err), &err);
	CHECK(changed);
	tl_ice_table_free(other);
	tl_ice_table_free(t);

	/* Read back from disk: one schema per change, the last current, ids kept, identifier kept. */
	t = tl_ice_table_open(dir, &err);
	CHECK(t != NULL);
	CHECK_INT(t->version, 8);
	CHECK_INT(t->metadata->nschemas, 8);
	CHECK_INT(t->metadata->current_schema_id, 7);
	CHECK_INT(t->metadata->last_column_id, 8);
	describe(t, text, sizeof text);
	CHECK_STR(text, "1 id:long!,2 n:long,3 f:double,4 price:decimal(20, 2),5 memo:string,7 extra:int,8 when:date");
	CHECK_INT(current(t)->nidentifier_ids, 1);
	CHECK_INT(current(t)->identifier_ids[0], 1);
	CHECK_STR(tl_ice_metadata_schema(t->metadata, 0)->fields[5].name, "gone");
	CHECK_INT(t->metadata->current_snapshot_id, TL_ICE_NO_SNAPSHOT);
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(schema_evolve_relaxes_required)
{
	char dir[PATH_MAX], text[512];
	tl_error err;
	tl_error_clear(&err);
	snprintf(dir, sizeof dir, "/tmp/tl_schema_update_XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "n", .required = true, .type = {.id = TL_ICE_INT}},
	};
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, fields, 2, &err), &err);
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_table *t = tl_ice_table_create(dir, &schema, &spec, NULL, 0, &err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	CHECK(t != NULL);
	/* Relaxed and promoted at once; id stays required. */
	fields[1].required = false;
	fields[1].type.id = TL_ICE_LONG;
	bool changed = false;
	CHECK_OK(tl_ice_table_evolve_schema(t, fields, 2, &changed, &err), &err);
	CHECK(changed);
	describe(t, text, sizeof text);
	CHECK_STR(text, "1 id:long!,2 n:long");
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(schema_evolve_same_fields_write_nothing)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	tl_ice_field f[16];
	int n = current_fields(t, f, 16);
	bool changed = true;
	CHECK_OK(tl_ice_table_evolve_schema(t, f, n, &changed, &err), &err);
	CHECK(!changed);
	CHECK_OK(tl_ice_table_evolve_schema(t, f, n, NULL, &err), &err);
	/* A NULL doc keeps the current one: no change either. */
	f[2].doc = NULL;
	CHECK_OK(tl_ice_table_evolve_schema(t, f, n, &changed, &err), &err);
	CHECK(!changed);
	CHECK_OK(tl_ice_table_add_fields(t, NULL, 0, &err), &err);
	CHECK_INT(t->version, 1);
	struct stat st;
	char v2[PATH_MAX + 32];
	snprintf(v2, sizeof v2, "%s/metadata/v2.metadata.json", dir);
	CHECK(stat(v2, &st) != 0);

	/* The same fields in another order are a change (the order is the schema's). */
	tl_ice_field swapped = f[1];
	f[1] = f[2];
	f[2] = swapped;
	CHECK_OK(tl_ice_table_evolve_schema(t, f, n, &changed, &err), &err);
	CHECK(changed);
	CHECK_INT(t->version, 2);
	CHECK_STR(current(t)->fields[1].name, "f");
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* One refused request: what to change, and what the error must say. */
typedef struct refusal {
	const char *what;
	int32_t partition_source;   /* of the table it runs on; 0: unpartitioned */
	const char *field;          /* the field to change or drop ... */
	bool drop;
	tl_ice_type to;             /* ... its new type (id 0, boolean: keep) */
	int required;               /* 1: make required, 0: make optional, -1: keep */
	tl_ice_field add;           /* a field to add (name NULL: none) */
	int32_t set_id;             /* give the field this id instead (0: keep) */
	const char *rename;         /* give the field this name */
	tl_error_code code;
	const char *message[4];     /* substrings of the message */
} refusal;

static const refusal refusals[] = {
	{"int to string", 0, "n", .to = {.id = TL_ICE_STRING}, .required = -1, .code = TL_ERR_UNSUPPORTED,
	 .message = {"\"n\" (id 2)", "from int to string", "promotes only"}},
	{"long to int", 0, "id", .to = {.id = TL_ICE_INT}, .required = -1, .code = TL_ERR_UNSUPPORTED,
	 .message = {"\"id\" (id 1)", "from long to int"}},
	{"float to long", 0, "f", .to = {.id = TL_ICE_LONG}, .required = -1, .code = TL_ERR_UNSUPPORTED,
	 .message = {"from float to long"}},
	{"decimal scale", 0, "price", .to = {.id = TL_ICE_DECIMAL, .precision = 12, .scale = 3}, .required = -1,
	 .code = TL_ERR_UNSUPPORTED, .message = {"from decimal(5, 2) to decimal(12, 3)"}},
	{"decimal narrowing", 0, "price", .to = {.id = TL_ICE_DECIMAL, .precision = 4, .scale = 2}, .required = -1,
	 .code = TL_ERR_UNSUPPORTED, .message = {"from decimal(5, 2) to decimal(4, 2)"}},
	{"decimal beyond 38", 0, "price", .to = {.id = TL_ICE_DECIMAL, .precision = 39, .scale = 2}, .required = -1,
	 .code = TL_ERR_UNSUPPORTED, .message = {"to decimal(39, 2)"}},
	{"optional to required", 0, "note", .required = 1, .code = TL_ERR_UNSUPPORTED,
	 .message = {"\"note\" (id 5)", "cannot become required"}},
	{"identifier to optional", 0, "id", .required = 0, .code = TL_ERR_UNSUPPORTED,
	 .message = {"\"id\" (id 1)", "identifier field", "must stay required"}},
	{"drop identifier", 0, "id", .drop = true, .required = -1, .code = TL_ERR_UNSUPPORTED,
	 .message = {"cannot drop field \"id\" (id 1)", "identifier"}},
	{"drop partition source", 5, "note", .drop = true, .required = -1, .code = TL_ERR_UNSUPPORTED,
	 .message = {"cannot drop field \"note\" (id 5)", "partitioned by it"}},
	{"promote partition source", 2, "n", .to = {.id = TL_ICE_LONG}, .required = -1, .code = TL_ERR_UNSUPPORTED,
	 .message = {"from int to long", "partition spec"}},
	{"unknown id", 0, "note", .set_id = 42, .required = -1, .code = TL_ERR_INVALID,
	 .message = {"field id 42", "not a top-level field"}},
	{"name taken", 0, "note", .rename = "gone", .required = -1, .code = TL_ERR_INVALID,
	 .message = {"two fields named \"gone\""}},
	{"nested field added", 0, NULL, .required = -1, .add = {.name = "s", .type = {.id = TL_ICE_STRUCT}},
	 .code = TL_ERR_UNSUPPORTED, .message = {"\"s\"", "only primitive"}},
	{"bad decimal added", 0, NULL, .required = -1,
	 .add = {.name = "d", .type = {.id = TL_ICE_DECIMAL, .precision = 40, .scale = 2}}, .code = TL_ERR_INVALID,
	 .message = {"decimal(40, 2)"}},
	{"every field dropped", 0, NULL, .drop = true, .required = -1, .code = TL_ERR_INVALID,
	 .message = {"a schema needs a field"}},
	{"name of an added field taken", 0, NULL, .required = -1, .add = {.name = "n", .type = {.id = TL_ICE_INT}},
	 .code = TL_ERR_INVALID, .message = {"two fields named \"n\""}},
};

TEST(schema_evolve_refusals_change_nothing)
{
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		const refusal *c = &refusals[i];
		char dir[PATH_MAX];
		tl_error err;
		tl_ice_table *t = evolving_table(dir, c->partition_source, &err);
		CHECK(t != NULL);
		tl_ice_field f[16];
		int n = current_fields(t, f, 16);
		int at = c->field ? index_of(f, n, c->field) : -1;
		if (c->drop)
			n = at >= 0 ? remove_at(f, n, at) : 0;
		else if (at >= 0) {
			if (c->to.id != TL_ICE_BOOLEAN)
				f[at].type = c->to;
			if (c->required >= 0)
				f[at].required = c->required == 1;
			if (c->set_id != 0)
				f[at].id = c->set_id;
			if (c->rename != NULL)
				f[at].name = (char *)c->rename;
		}
		if (c->add.name != NULL)
			f[n++] = c->add;
		bool changed = true;
		int rc = tl_ice_table_evolve_schema(t, f, n, &changed, &err);
		if (rc == 0 || err.code != c->code || changed)
			tl_test_fail(__FILE__, __LINE__, "%s: rc %d, code %d (want %d), changed %d: %s", c->what, rc,
			             (int)err.code, (int)c->code, (int)changed, err.message);
		for (int k = 0; k < 4 && c->message[k] != NULL; k++)
			if (strstr(err.message, c->message[k]) == NULL)
				tl_test_fail(__FILE__, __LINE__, "%s: \"%s\" is not in: %s", c->what, c->message[k], err.message);
		if (c->code == TL_ERR_UNSUPPORTED && strstr(err.message, dir) == NULL)
			tl_test_fail(__FILE__, __LINE__, "%s: the message does not name the table: %s", c->what, err.message);
		CHECK_INT(t->version, 1);
		tl_ice_table_free(t);
		t = tl_ice_table_open(dir, &err);
		CHECK(t != NULL);
		CHECK_INT(t->version, 1);
		tl_ice_table_free(t);
		remove_tree(dir);
	}
}

/* Rewrites v<version>.metadata.json as the next version (as another engine might write it), changed by `edit`. */
static int rewrite_metadata(const char *dir, int version, void (*edit)(json_t *md), tl_error *err)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/metadata/v%d.metadata.json", dir, version);
	json_error_t jerr;
	json_t *md = json_load_file(path, 0, &jerr);
	if (md == NULL)
		return tl_error_set(err, TL_ERR_IO, "%s: %s", path, jerr.text);
	edit(md);
	snprintf(path, sizeof path, "%s/metadata/v%d.metadata.json", dir, version + 1);
	int rc = json_dump_file(md, path, 0);
	json_decref(md);
	return rc == 0 ? 0 : tl_error_set(err, TL_ERR_IO, "cannot write %s", path);
}

/* A sort order on field 5 (note), made the default. */
static void add_sort_order(json_t *md)
{
	json_t *orders = json_loads("[{\"order-id\":0,\"fields\":[]},{\"order-id\":1,\"fields\":[{\"transform\":"
	                            "\"identity\",\"source-id\":5,\"direction\":\"asc\",\"null-order\":"
	                            "\"nulls-first\"}]}]",
	                            0, NULL);
	json_object_set_new(md, "sort-orders", orders);
	json_object_set_new(md, "default-sort-order-id", json_integer(1));
}

TEST(schema_evolve_keeps_the_sort_order_source)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	tl_ice_table_free(t);
	CHECK_OK(rewrite_metadata(dir, 1, add_sort_order, &err), &err);
	t = tl_ice_table_open(dir, &err);
	CHECK(t != NULL);
	CHECK_INT(t->version, 2);
	tl_ice_field f[16];
	int n = current_fields(t, f, 16);
	int rc = tl_ice_table_evolve_schema(t, f, remove_at(f, n, index_of(f, n, "note")), NULL, &err);
	CHECK(rc < 0);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK(strstr(err.message, "cannot drop field \"note\" (id 5)") != NULL);
	CHECK(strstr(err.message, "sort order") != NULL);
	/* Another field may go. */
	n = current_fields(t, f, 16);
	CHECK_OK(tl_ice_table_evolve_schema(t, f, remove_at(f, n, index_of(f, n, "gone")), NULL, &err), &err);
	CHECK_INT(t->version, 3);
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(schema_evolve_never_reuses_ids_of_dropped_fields)
{
	char dir[PATH_MAX], text[512];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	const char *before[] = {
		"{\"id\":1,\"n\":10,\"gone\":\"old value\"}",
		"{\"id\":2,\"n\":20,\"gone\":\"another\"}",
	};
	CHECK_OK(append_rows(t, before, 2, NULL, &err), &err);

	/* Drop gone: last-column-id stays 6. */
	tl_ice_field f[16];
	int n = current_fields(t, f, 16);
	CHECK_OK(tl_ice_table_evolve_schema(t, f, remove_at(f, n, index_of(f, n, "gone")), NULL, &err), &err);
	CHECK_INT(t->metadata->last_column_id, 6);
	/* Add it back by the same name: a new field, id 7, which the old file lacks. */
	tl_ice_field again = {.name = "gone", .type = {.id = TL_ICE_STRING}};
	CHECK_OK(tl_ice_table_add_fields(t, &again, 1, &err), &err);
	CHECK_INT(t->metadata->last_column_id, 7);
	describe(t, text, sizeof text);
	CHECK_STR(text, "1 id:long!,2 n:int,3 f:float,4 price:decimal(5, 2),5 note:string,7 gone:string");
	const char *after[] = {"{\"id\":3,\"n\":30,\"gone\":\"new\"}"};
	CHECK_OK(append_rows(t, after, 1, NULL, &err), &err);
	tl_buf rows;
	tl_buf_init(&rows);
	CHECK_OK(read_table(t, TL_ICE_NO_SNAPSHOT, &rows, NULL, &err), &err);
	CHECK_STR((const char *)rows.data,
	          "{\"id\":1,\"n\":10,\"f\":null,\"price\":null,\"note\":null,\"gone\":null}\n"
	          "{\"id\":2,\"n\":20,\"f\":null,\"price\":null,\"note\":null,\"gone\":null}\n"
	          "{\"id\":3,\"n\":30,\"f\":null,\"price\":null,\"note\":null,\"gone\":\"new\"}\n");

	/* Drop it again and add one more: id 8. */
	n = current_fields(t, f, 16);
	n = remove_at(f, n, index_of(f, n, "gone"));
	f[n++] = (tl_ice_field){.name = "later", .type = {.id = TL_ICE_LONG}};
	CHECK_OK(tl_ice_table_evolve_schema(t, f, n, NULL, &err), &err);
	CHECK_INT(t->metadata->last_column_id, 8);
	CHECK_INT(current(t)->fields[n - 1].id, 8);
	tl_buf_free(&rows);
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(schema_evolve_files_read_in_the_promoted_types)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	/* Stored as INT32, FLOAT, decimal(5, 2) in INT32, and the field about to be dropped. */
	const char *before[] = {
		"{\"id\":1,\"n\":-2147483648,\"f\":1.5,\"price\":\"-999.99\",\"note\":\"a\",\"gone\":\"x\"}",
		"{\"id\":2,\"n\":2147483647,\"f\":0.1,\"price\":\"123.45\",\"note\":\"b\",\"gone\":\"y\"}",
		"{\"id\":3,\"n\":null,\"f\":null,\"price\":null,\"note\":null,\"gone\":null}",
	};
	int64_t first = 0, second = 0;
	CHECK_OK(append_rows(t, before, 3, &first, &err), &err);

	tl_ice_field f[16];
	int n = current_fields(t, f, 16);
	n = remove_at(f, n, index_of(f, n, "gone"));
	f[index_of(f, n, "note")].name = "memo";
	f[index_of(f, n, "n")].type = (tl_ice_type){.id = TL_ICE_LONG};
	f[index_of(f, n, "f")].type = (tl_ice_type){.id = TL_ICE_DOUBLE};
	f[index_of(f, n, "price")].type = (tl_ice_type){.id = TL_ICE_DECIMAL, .precision = 12, .scale = 2};
	f[n++] = (tl_ice_field){.name = "extra", .type = {.id = TL_ICE_INT}};
	CHECK_OK(tl_ice_table_evolve_schema(t, f, n, NULL, &err), &err);
	const char *after[] = {
		"{\"id\":4,\"n\":9000000000,\"f\":0.1,\"price\":\"9999999999.99\",\"memo\":\"c\",\"extra\":7}",
	};
	CHECK_OK(append_rows(t, after, 1, &second, &err), &err);

	/* The current snapshot: every file in the new types; 0.1f widens to its float value, not 0.1. */
	tl_buf rows;
	tl_buf_init(&rows);
	tl_pq_physical phys[8];
	CHECK_OK(read_table(t, TL_ICE_NO_SNAPSHOT, &rows, phys, &err), &err);
	CHECK_STR((const char *)rows.data,
	          "{\"id\":1,\"n\":-2147483648,\"f\":1.5,\"price\":\"-999.99\",\"memo\":\"a\",\"extra\":null}\n"
	          "{\"id\":2,\"n\":2147483647,\"f\":0.10000000149011612,\"price\":\"123.45\",\"memo\":\"b\","
	          "\"extra\":null}\n"
	          "{\"id\":3,\"n\":null,\"f\":null,\"price\":null,\"memo\":null,\"extra\":null}\n"
	          "{\"id\":4,\"n\":9000000000,\"f\":0.1,\"price\":\"9999999999.99\",\"memo\":\"c\",\"extra\":7}\n");
	CHECK_INT(phys[1], TL_PQ_INT64);
	CHECK_INT(phys[2], TL_PQ_DOUBLE);
	CHECK_INT(phys[3], TL_PQ_INT64);

	/* The first snapshot: its own schema, the dropped field and the old types. */
	CHECK_OK(read_table(t, first, &rows, phys, &err), &err);
	CHECK_STR((const char *)rows.data,
	          "{\"id\":1,\"n\":-2147483648,\"f\":1.5,\"price\":\"-999.99\",\"note\":\"a\",\"gone\":\"x\"}\n"
	          "{\"id\":2,\"n\":2147483647,\"f\":0.1,\"price\":\"123.45\",\"note\":\"b\",\"gone\":\"y\"}\n"
	          "{\"id\":3,\"n\":null,\"f\":null,\"price\":null,\"note\":null,\"gone\":null}\n");
	CHECK_INT(phys[1], TL_PQ_INT32);
	CHECK_INT(phys[2], TL_PQ_FLOAT);
	CHECK_INT(phys[3], TL_PQ_INT32);

	/*
	 * Pruning by the metrics of the file written before: its bounds are an
	 * int, a float and a decimal(5, 2) the filters on the wider types must
	 * still read (file 0 holds ids 1..3, file 1 id 4).
	 */
	static const struct {
		const char *filter;
		int files;
	} prunes[] = {
		{"n = -2147483648", 1},
		{"n > 2147483647", 2},
		{"n >= 2147483647", 3},
		{"f = 1.5", 1},
		{"f <= 0.1", 2}, /* file 0's lower bound is 0.1f, a little above 0.1 */
		{"price > '123.45'", 2},
		{"price <= '123.45'", 1},
	};
	const int64_t first_ids[] = {1, 4};
	for (size_t i = 0; i < sizeof(prunes) / sizeof(prunes[0]); i++) {
		int files = planned_files(t, prunes[i].filter, first_ids, 2, &err);
		if (files != prunes[i].files)
			tl_test_fail(__FILE__, __LINE__, "%s: files %d planned, want %d (%s)", prunes[i].filter, files,
			             prunes[i].files, files < 0 ? err.message : "");
	}

	/* The dropped field is not in the current schema: the reader refuses it by id. */
	tl_ice_scan *scan = tl_ice_scan_plan(t->metadata, second, NULL, &err);
	CHECK(scan != NULL);
	int32_t dropped = 6;
	CHECK(tl_ice_reader_open(scan, &dropped, 1, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	tl_ice_scan_free(scan);

	/* Wider still: decimal(20, 2) is stored in 9 bytes; the INT32 and INT64 files widen to it. */
	CHECK_OK(change_type(t, "price", (tl_ice_type){.id = TL_ICE_DECIMAL, .precision = 20, .scale = 2}, NULL, &err),
	         &err);
	const char *widest[] = {"{\"id\":5,\"price\":\"-123456789012345678.90\"}"};
	CHECK_OK(append_rows(t, widest, 1, NULL, &err), &err);
	CHECK_OK(read_table(t, TL_ICE_NO_SNAPSHOT, &rows, phys, &err), &err);
	CHECK_INT(phys[3], TL_PQ_FIXED_LEN_BYTE_ARRAY);
	CHECK(strstr((const char *)rows.data, "{\"id\":1,\"n\":-2147483648,\"f\":1.5,\"price\":\"-999.99\",") != NULL);
	CHECK(strstr((const char *)rows.data, "\"price\":\"9999999999.99\"") != NULL);
	CHECK(strstr((const char *)rows.data, "\"price\":\"-123456789012345678.90\"") != NULL);
	tl_buf_free(&rows);
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(schema_evolve_equality_deletes_match_across_promotions)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	/* n stored as INT32, price as a decimal(5, 2) in INT32. */
	const char *before[] = {
		"{\"id\":1,\"n\":1,\"price\":\"1.50\"}",
		"{\"id\":2,\"n\":2,\"price\":\"1.50\"}",
		"{\"id\":3,\"n\":2,\"price\":\"2.50\"}",
	};
	CHECK_OK(append_rows(t, before, 3, NULL, &err), &err);
	CHECK_OK(change_type(t, "n", (tl_ice_type){.id = TL_ICE_LONG}, NULL, &err), &err);
	CHECK_OK(change_type(t, "price", (tl_ice_type){.id = TL_ICE_DECIMAL, .precision = 12, .scale = 2}, NULL, &err),
	         &err);

	/* Deletes written in the new types (INT64 both) must still match the old file's keys. */
	int32_t eq_ids[] = {2, 4};
	tl_ice_writer *w = tl_ice_writer_open_equality_deletes(t, eq_ids, 2, NULL, &err);
	CHECK(w != NULL);
	const char *keys[] = {"{\"n\":2,\"price\":\"1.50\"}"};
	CHECK_OK(write_rows(w, keys, 1, &err), &err);
	CHECK_OK(commit_files(t, TL_ICE_OP_ROW_DELTA, w, NULL, &err), &err);
	tl_buf rows;
	tl_buf_init(&rows);
	CHECK_OK(read_table(t, TL_ICE_NO_SNAPSHOT, &rows, NULL, &err), &err);
	CHECK_STR((const char *)rows.data,
	          "{\"id\":1,\"n\":1,\"f\":null,\"price\":\"1.50\",\"note\":null,\"gone\":null}\n"
	          "{\"id\":3,\"n\":2,\"f\":null,\"price\":\"2.50\",\"note\":null,\"gone\":null}\n");
	tl_buf_free(&rows);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* ---------------------------------------------------- initial defaults */

TEST(schema_reader_gives_older_files_the_initial_default)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	const char *before[] = {"{\"id\":1}", "{\"id\":2,\"n\":5}"};
	CHECK_OK(append_rows(t, before, 2, NULL, &err), &err);
	/* One of each storage: BOOLEAN, INT32, INT64, DOUBLE, decimals in INT32 and 9 fixed bytes, strings, bytes. */
	tl_ice_field added[] = {
		{.name = "i", .type = {.id = TL_ICE_INT}, .initial_default = "42"},
		{.name = "b", .type = {.id = TL_ICE_BOOLEAN}, .initial_default = "true"},
		{.name = "d", .type = {.id = TL_ICE_DOUBLE}, .initial_default = "1.5"},
		{.name = "dec9", .type = {.id = TL_ICE_DECIMAL, .precision = 9, .scale = 2}, .initial_default = "\"3.10\""},
		{.name = "dec20", .type = {.id = TL_ICE_DECIMAL, .precision = 20, .scale = 2},
		 .initial_default = "\"-123456789012345678.25\""},
		{.name = "day", .type = {.id = TL_ICE_DATE}, .initial_default = "\"2024-01-04\""},
		{.name = "at", .type = {.id = TL_ICE_TIMESTAMPTZ}, .initial_default = "\"2024-01-04T10:00:00.000001+00:00\""},
		{.name = "s", .type = {.id = TL_ICE_STRING}, .initial_default = "\"x y\""},
		{.name = "bin", .type = {.id = TL_ICE_BINARY}, .initial_default = "\"00ff\""},
		{.name = "u", .type = {.id = TL_ICE_UUID}, .initial_default = "\"f79c3e09-677c-4bbd-a479-3f349cb785e7\""},
		{.name = "none", .type = {.id = TL_ICE_LONG}},
	};
	int nadded = (int)(sizeof(added) / sizeof(added[0]));
	CHECK_OK(tl_ice_table_add_fields(t, added, nadded, &err), &err);
	/* Files written after hold each row's own value, null included. */
	const char *after[] = {"{\"id\":3,\"i\":7,\"s\":null}"};
	CHECK_OK(append_rows(t, after, 1, NULL, &err), &err);
	tl_buf rows;
	tl_buf_init(&rows);
	CHECK_OK(read_table(t, TL_ICE_NO_SNAPSHOT, &rows, NULL, &err), &err);
	const char *defaults = "\"i\":42,\"b\":true,\"d\":1.5,\"dec9\":\"3.10\",\"dec20\":\"-123456789012345678.25\","
	                       "\"day\":\"2024-01-04\",\"at\":\"2024-01-04T10:00:00.000001Z\",\"s\":\"x y\","
	                       "\"bin\":\"AP8=\",\"u\":\"f79c3e09-677c-4bbd-a479-3f349cb785e7\",\"none\":null}";
	char want[2048];
	snprintf(want, sizeof want,
	         "{\"id\":1,\"n\":null,\"f\":null,\"price\":null,\"note\":null,\"gone\":null,%s\n"
	         "{\"id\":2,\"n\":5,\"f\":null,\"price\":null,\"note\":null,\"gone\":null,%s\n"
	         "{\"id\":3,\"n\":null,\"f\":null,\"price\":null,\"note\":null,\"gone\":null,\"i\":7,\"b\":null,"
	         "\"d\":null,\"dec9\":null,\"dec20\":null,\"day\":null,\"at\":null,\"s\":null,\"bin\":null,\"u\":null,"
	         "\"none\":null}\n",
	         defaults, defaults);
	CHECK_STR((const char *)rows.data, want);

	/* Read back from disk: the defaults survive a metadata round trip, and the read. */
	tl_ice_table *again = tl_ice_table_open(dir, &err);
	CHECK(again != NULL);
	CHECK_STR(tl_ice_schema_find_name(current(again), "dec20")->initial_default, "\"-123456789012345678.25\"");
	CHECK_OK(read_table(again, TL_ICE_NO_SNAPSHOT, &rows, NULL, &err), &err);
	CHECK_STR((const char *)rows.data, want);
	tl_ice_table_free(again);
	tl_buf_free(&rows);
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(schema_evolve_refuses_initial_defaults_readers_cannot_parse)
{
	static const struct {
		tl_ice_type type;
		const char *initial_default;
	} bad[] = {
		{{.id = TL_ICE_INT}, "\"42\""},                                  /* a string for an int */
		{{.id = TL_ICE_INT}, "4294967296"},                              /* beyond int */
		{{.id = TL_ICE_LONG}, "1.5"},
		{{.id = TL_ICE_DECIMAL, .precision = 5, .scale = 2}, "1.25"},    /* decimals are strings */
		{{.id = TL_ICE_DECIMAL, .precision = 5, .scale = 2}, "\"1.255\""}, /* beyond the scale */
		{{.id = TL_ICE_DATE}, "\"2024-13-01\""},
		{{.id = TL_ICE_BOOLEAN}, "1"},
		{{.id = TL_ICE_STRING}, "[\"a\"]"},
		{{.id = TL_ICE_BINARY}, "\"0g\""},
		{{.id = TL_ICE_STRING}, "not json"},
	};
	char dir[PATH_MAX];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tl_ice_field f = {.name = "c", .type = bad[i].type, .initial_default = (char *)bad[i].initial_default};
		tl_error_clear(&err);
		if (tl_ice_table_add_fields(t, &f, 1, &err) == 0 || err.code != TL_ERR_INVALID ||
		    strstr(err.message, "its initial-default") == NULL || strstr(err.message, bad[i].initial_default) == NULL)
			tl_test_fail(__FILE__, __LINE__, "%s accepted or badly refused: %s", bad[i].initial_default,
			             err.message);
	}
	CHECK_INT(t->version, 1);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* Field 6 (gone) renumbered 9, so that no file holds it, with an initial-default no string is. */
static void bad_initial_default(json_t *md)
{
	json_t *field = json_array_get(json_object_get(json_array_get(json_object_get(md, "schemas"), 0), "fields"), 5);
	json_object_set_new(field, "initial-default", json_integer(7));
	json_object_set_new(field, "id", json_integer(9));
	json_object_set_new(md, "last-column-id", json_integer(9));
}

TEST(schema_reader_refuses_an_initial_default_of_the_wrong_type)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_ice_table *t = evolving_table(dir, 0, &err);
	CHECK(t != NULL);
	const char *rows[] = {"{\"id\":1,\"gone\":\"x\"}"};
	CHECK_OK(append_rows(t, rows, 1, NULL, &err), &err);
	tl_ice_table_free(t);
	/* Another writer's metadata: field 9 (which no file holds) defaults to the number 7, though a string field. */
	CHECK_OK(rewrite_metadata(dir, 2, bad_initial_default, &err), &err);
	t = tl_ice_table_open(dir, &err);
	CHECK(t != NULL);
	tl_buf out;
	tl_buf_init(&out);
	CHECK(read_table(t, TL_ICE_NO_SNAPSHOT, &out, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "initial-default of field \"gone\" (id 9)") != NULL);
	CHECK(strstr(err.message, "7 is not the JSON single-value form of a string value") != NULL);
	tl_buf_free(&out);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* ------------------------------------------------ data sequence numbers */

/* The data file of the current snapshot whose rows start at this id (its id lower bound), or NULL. */
static const char *file_starting_at(const tl_ice_scan *scan, int64_t id)
{
	for (int i = 0; i < tl_ice_scan_ntasks(scan); i++)
		if (first_id(&tl_ice_scan_task_at(scan, i)->file) == id)
			return tl_ice_scan_task_at(scan, i)->file.file_path;
	return NULL;
}

/* Reads column id (field 1) of the current snapshot: the data sequence number the reader gives each row's file. */
static int sequence_of_ids(const tl_ice_table *t, int64_t *seq_of_id, int max_id, int64_t *total, tl_error *err)
{
	tl_ice_scan *scan = tl_ice_scan_plan(t->metadata, TL_ICE_NO_SNAPSHOT, NULL, err);
	int32_t ids[1] = {1};
	tl_ice_reader *r = scan != NULL ? tl_ice_reader_open(scan, ids, 1, err) : NULL;
	if (r == NULL) {
		tl_ice_scan_free(scan);
		return -1;
	}
	int64_t got = 0;
	if (tl_ice_reader_current_file_sequence(r) != -1)
		got = tl_error_set(err, TL_ERR_INVALID, "a sequence number before the first batch");
	tl_pq_batch *batch = tl_ice_reader_batch_new(r, 16);
	*total = 0;
	while (got == 0 && (got = tl_ice_reader_next(r, batch, err)) > 0) {
		for (int64_t row = 0; row < got; row++) {
			int64_t id = batch->columns[0].v.i64[row];
			if (id >= 0 && id <= max_id)
				seq_of_id[id] = tl_ice_reader_current_file_sequence(r);
		}
		*total += got;
		got = 0;
	}
	if (got == 0 && tl_ice_reader_current_file_sequence(r) != -1)
		got = tl_error_set(err, TL_ERR_INVALID, "a sequence number after the last batch");
	tl_pq_batch_free(batch);
	tl_ice_reader_free(r);
	tl_ice_scan_free(scan);
	return got < 0 ? -1 : 0;
}

TEST(schema_reader_reports_each_files_data_sequence_number)
{
	char dir[PATH_MAX];
	tl_error err;
	/* Partitioned by n: one append writes a file per value of n. */
	tl_ice_table *t = evolving_table(dir, 2, &err);
	CHECK(t != NULL);
	const char *one[] = {"{\"id\":1,\"n\":1}", "{\"id\":2,\"n\":2}"};
	const char *two[] = {"{\"id\":3,\"n\":1}"};
	CHECK_OK(append_rows(t, one, 2, NULL, &err), &err);
	/* A metadata-only change between: it takes no sequence number. */
	tl_ice_field extra = {.name = "extra", .type = {.id = TL_ICE_INT}};
	CHECK_OK(tl_ice_table_add_fields(t, &extra, 1, &err), &err);
	CHECK_INT(t->metadata->last_sequence_number, 1);
	CHECK_OK(append_rows(t, two, 1, NULL, &err), &err);
	CHECK_INT(t->metadata->last_sequence_number, 2);

	/*
	 * The second snapshot carries the first manifest over: its entries'
	 * sequence numbers are null, inherited from that manifest (1), not
	 * from the snapshot that lists it (2).
	 */
	int64_t seq_of_id[4] = {0}, total = 0;
	CHECK_OK(sequence_of_ids(t, seq_of_id, 3, &total, &err), &err);
	CHECK_INT(total, 3);
	CHECK_INT(seq_of_id[1], 1);
	CHECK_INT(seq_of_id[2], 1);
	CHECK_INT(seq_of_id[3], 2);

	/*
	 * Removing id 2's file rewrites the first manifest: id 1's file stays
	 * in it as an EXISTING entry that states its sequence number (1),
	 * while the snapshot is the third.
	 */
	tl_ice_scan *scan = tl_ice_scan_plan(t->metadata, TL_ICE_NO_SNAPSHOT, NULL, &err);
	CHECK(scan != NULL);
	const char *victim = file_starting_at(scan, 2);
	CHECK(victim != NULL);
	tl_ice_commit *c = tl_ice_commit_begin(t, TL_ICE_OP_DELETE, &err);
	CHECK(c != NULL);
	CHECK_OK(tl_ice_commit_remove_file(c, victim, &err), &err);
	CHECK_OK(tl_ice_commit_finish(c, NULL, &err), &err);
	tl_ice_commit_free(c);
	tl_ice_scan_free(scan);
	CHECK_INT(t->metadata->last_sequence_number, 3);
	memset(seq_of_id, 0, sizeof seq_of_id);
	CHECK_OK(sequence_of_ids(t, seq_of_id, 3, &total, &err), &err);
	CHECK_INT(total, 2);
	CHECK_INT(seq_of_id[1], 1);
	CHECK_INT(seq_of_id[2], 0);
	CHECK_INT(seq_of_id[3], 2);
	tl_ice_table_free(t);
	remove_tree(dir);
}
