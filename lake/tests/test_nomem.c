/*
 * test_nomem.c: allocation failure and interrupts, in the manner of SQLite's
 * malloc fault tests (test/malloc*.test): small workloads run under an
 * allocator that fails the Nth allocation, for N = 1, 2, 3, ... until a run
 * completes without reaching N. At every N the workload must fail cleanly
 * with TL_ERR_NOMEM (or succeed, where the failed allocation was on a path
 * allowed to do without it), never crash, and free everything it
 * allocated: the fault allocator counts live allocations, so a leak names
 * the N that caused it (and LeakSanitizer would catch it at exit anyway).
 * The "sticky" variant fails every allocation from N on, which is what a
 * real out-of-memory looks like; error paths that allocate are caught there.
 * The same loop drives the interrupt check (env.h): it answers true on its
 * Nth call, and the workload must stop with TL_ERR_INTERRUPTED.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault_alloc.h"
#include "table_fixture.h"
#include "test.h"
#include "common/render_json.h"
#include "tierlake/env.h"
#include "tierlake/iceberg_maintenance.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/io.h"
#include "tierlake/parquet.h"
#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/render.h"

/* Both fault modes and the interrupt loop; the workload must also have allocated at all. */
#define CHECK_FAULTS(w)                                                                                    \
	do {                                                                                                   \
		long runs_ = run_with_faults(#w, w, false);                                                        \
		CHECK(runs_ > 1);                                                                                  \
		/* the count may differ: file names (and so allocations) differ from run to run */ \
		CHECK(run_with_faults(#w " (sticky)", w, true) > 1);                                          \
	} while (0)

/* ------------------------------------------------------------ scratch */

static char scratch_dir[64];

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void remove_scratch(void)
{
	if (scratch_dir[0])
		nftw(scratch_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *scratch(const char *name)
{
	static char paths[8][160];
	static int next;
	if (scratch_dir[0] == '\0') {
		strcpy(scratch_dir, "/tmp/tierdb-nomem-XXXXXX");
		if (mkdtemp(scratch_dir) == NULL) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(remove_scratch);
	}
	char *p = paths[next++ % 8];
	snprintf(p, sizeof(paths[0]), "%s/%s", scratch_dir, name);
	return p;
}

/* ------------------------------------------------------------ workloads */

/* (id long required, name string, score double) with field ids 1..3. */
static tl_pq_schema *people_pq_schema(tl_error *err)
{
	tl_pq_column cols[3];
	memset(cols, 0, sizeof(cols));
	cols[0].name = "id", cols[0].physical = TL_PQ_INT64, cols[0].required = true, cols[0].field_id = 1;
	cols[1].name = "name", cols[1].physical = TL_PQ_BYTE_ARRAY, cols[1].logical = TL_PQ_LOGICAL_STRING;
	cols[1].field_id = 2;
	cols[2].name = "score", cols[2].physical = TL_PQ_DOUBLE, cols[2].field_id = 3;
	tl_pq_schema *s = tl_pq_schema_new();
	if (s == NULL) {
		tl_error_nomem(err, "for a schema");
		return NULL;
	}
	for (int i = 0; i < 3; i++)
		if (tl_pq_schema_add(s, &cols[i]) < 0) {
			tl_pq_schema_free(s);
			tl_error_nomem(err, "for a schema");
			return NULL;
		}
	return s;
}

static const char *names[] = {"ann", "bob", "cy", "dee"};

static int write_people(const char *path, int n, tl_error *err)
{
	tl_pq_schema *s = people_pq_schema(err);
	if (s == NULL)
		return -1;
	tl_pq_batch *b = tl_pq_batch_new(s, n);
	if (b == NULL) {
		tl_pq_schema_free(s);
		return tl_error_nomem(err, "for a batch");
	}
	for (int i = 0; i < n; i++) {
		b->columns[0].v.i64[i] = 100 + i;
		b->columns[1].v.bytes[i] = (tl_bytes){(const uint8_t *)names[i % 4], (uint32_t)strlen(names[i % 4])};
		b->columns[1].valid[i] = i % 3 != 2;
		b->columns[2].v.f64[i] = i / 2.0;
		b->columns[2].valid[i] = 1;
	}
	b->nrows = n;
	int rc = -1;
	tl_output *out = tl_output_create_file(path, 0, err);
	if (out != NULL) {
		tl_pq_writer_options o;
		tl_pq_writer_options_init(&o);
		o.row_group_rows = 40;
		o.codec = TL_PQ_ZSTD;
		tl_pq_writer *w = tl_pq_writer_open(out, s, &o, err);
		if (w != NULL && tl_pq_writer_write(w, b, err) == 0 && tl_pq_writer_close(w, err) == 0 &&
		    out->finish(out, err) == 0)
			rc = 0;
		tl_pq_writer_free(w);
		tl_output_close(out);
	}
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

static int write_parquet_workload(tl_error *err)
{
	return write_people(scratch("written.parquet"), 100, err);
}

static char people_file[160];

static int read_parquet_workload(tl_error *err)
{
	tl_input *in = tl_input_open_file(people_file, err);
	if (in == NULL)
		return -1;
	int rc = -1;
	tl_pq_batch *b = NULL;
	tl_buf text;
	tl_buf_init(&text);
	tl_pq_reader *r = tl_pq_reader_open(in, err);
	if (r == NULL)
		goto done;
	b = tl_pq_reader_batch_new(r, 32);
	if (b == NULL) {
		tl_error_nomem(err, "for a batch");
		goto done;
	}
	int64_t rows = 0, n;
	while ((n = tl_pq_reader_next(r, b, err)) > 0) {
		for (int64_t i = 0; i < n; i++)
			tl_render_row(tl_pq_reader_schema(r), NULL, b, i, &text);
		rows += n;
	}
	if (n < 0 || tl_buf_check(&text, err, "rendering rows") < 0)
		goto done;
	if (rows != 100) {
		tl_error_set(err, TL_ERR_CORRUPT, "read %lld rows, wrote 100", (long long)rows);
		goto done;
	}
	rc = 0;
done:
	tl_buf_free(&text);
	tl_pq_batch_free(b);
	tl_pq_reader_free(r);
	tl_input_close(in);
	return rc;
}

/* Parses rows of JSON into a batch and renders them back. */
static int render_parse_workload(tl_error *err)
{
	static const char *lines[] = {"{\"id\": 1, \"name\": \"ann\", \"score\": 1.5}",
	                              "{\"id\": 2, \"name\": null, \"score\": -0.25}",
	                              "{\"id\": 3, \"name\": \"a \\\"quoted\\\" \\u00e9\", \"score\": 1e300}"};
	tl_pq_schema *s = people_pq_schema(err);
	if (s == NULL)
		return -1;
	int rc = -1;
	tl_buf text;
	tl_buf_init(&text);
	tl_pq_batch *b = tl_pq_batch_new(s, 3);
	if (b == NULL) {
		tl_error_nomem(err, "for a batch");
		goto done;
	}
	for (int i = 0; i < 3; i++) {
		json_t *j = tl_render_load_json(lines[i], strlen(lines[i]), err);
		if (j == NULL)
			goto done;
		int prc = tl_render_parse_row(s, j, b, i, err);
		json_decref(j);
		if (prc < 0)
			goto done;
	}
	b->nrows = 3;
	for (int i = 0; i < 3; i++)
		tl_render_row(s, NULL, b, i, &text);
	if (tl_buf_check(&text, err, "rendering rows") < 0)
		goto done;
	rc = 0;
done:
	tl_buf_free(&text);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

static int people_ice_schema(tl_ice_schema *schema, tl_error *err)
{
	tl_ice_field f[3];
	memset(f, 0, sizeof(f));
	f[0] = (tl_ice_field){.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}};
	f[1] = (tl_ice_field){.id = 2, .name = "name", .type = {.id = TL_ICE_STRING}};
	f[2] = (tl_ice_field){.id = 3, .name = "score", .type = {.id = TL_ICE_DOUBLE}};
	return tl_ice_schema_init(schema, 0, f, 3, err);
}

static int table_serial;

/* Describes the Parquet file at path as a data file of schema (metrics in arena). */
static int describe_file(const tl_ice_schema *schema, const char *path, tl_arena *arena, tl_ice_data_file *df,
                         tl_error *err)
{
	tl_input *in = tl_input_open_file(path, err);
	if (in == NULL)
		return -1;
	tl_pq_reader *pq = tl_pq_reader_open(in, err);
	int rc = -1;
	memset(df, 0, sizeof(*df));
	if (pq != NULL && tl_ice_data_file_metrics(schema, pq, arena, df, err) == 0) {
		df->content = TL_ICE_CONTENT_DATA;
		df->file_path = path;
		df->file_format = "PARQUET";
		df->file_size_in_bytes = (int64_t)in->size;
		rc = 0;
	}
	tl_pq_reader_free(pq);
	tl_input_close(in);
	return rc;
}

/* Creates a table at location and commits the people file to it. */
static int create_and_append(const char *location, tl_error *err)
{
	tl_ice_schema schema;
	if (people_ice_schema(&schema, err) < 0)
		return -1;
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	int rc = -1;
	tl_ice_commit *c = NULL;
	tl_ice_table *t = tl_ice_table_create(location, &schema, &spec, NULL, 0, err);
	if (t == NULL)
		goto done;
	tl_ice_data_file df;
	if (describe_file(&schema, people_file, &arena, &df, err) < 0)
		goto done;
	c = tl_ice_commit_begin(t, TL_ICE_OP_APPEND, err);
	if (c == NULL || tl_ice_commit_add_file(c, &df, err) < 0 || tl_ice_commit_finish(c, NULL, err) < 0)
		goto done;
	rc = 0;
done:
	tl_ice_commit_free(c);
	tl_ice_table_free(t);
	tl_arena_free(&arena);
	tl_ice_partition_spec_free(&spec);
	tl_ice_schema_free(&schema);
	return rc;
}

/* A new table directory each run. */
static int create_and_append_workload(tl_error *err)
{
	char name[32];
	snprintf(name, sizeof(name), "table-%d", table_serial++);
	return create_and_append(scratch(name), err);
}

static char committed_table[160];

/* Opens the committed table, plans a filtered scan (manifest list, manifests) and reads it. */
static int plan_and_read_workload(tl_error *err)
{
	tl_ice_table *t = tl_ice_table_open(committed_table, err);
	if (t == NULL)
		return -1;
	int rc = -1;
	tl_ice_scan *scan = tl_ice_scan_plan(t->metadata, TL_ICE_NO_SNAPSHOT, NULL, err);
	tl_ice_reader *r = NULL;
	tl_pq_batch *b = NULL;
	if (scan == NULL)
		goto done;
	int32_t ids[2] = {1, 2};
	r = tl_ice_reader_open(scan, ids, 2, err);
	if (r == NULL)
		goto done;
	b = tl_ice_reader_batch_new(r, 16);
	if (b == NULL) {
		tl_error_nomem(err, "for a batch");
		goto done;
	}
	int64_t rows = 0, n;
	while ((n = tl_ice_reader_next(r, b, err)) > 0)
		rows += n;
	if (n < 0)
		goto done;
	if (rows != 200) {
		tl_error_set(err, TL_ERR_CORRUPT, "read %lld rows, committed 200", (long long)rows);
		goto done;
	}
	rc = 0;
done:
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_scan_free(scan);
	tl_ice_table_free(t);
	return rc;
}

/* Writes ids [first, first + n) through w: a writer whose batches hold the one long column "id". */
static int write_ids(tl_ice_writer *w, int64_t first, int n, tl_error *err)
{
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), n);
	if (b == NULL)
		return tl_error_nomem(err, "for a batch");
	for (int i = 0; i < n; i++)
		b->columns[0].v.i64[i] = first + i;
	b->nrows = n;
	int rc = tl_ice_writer_write(w, b, err);
	tl_pq_batch_free(b);
	return rc;
}

/* Writes full people rows with ids [first, first + n) through a data writer. */
static int write_people_rows(tl_ice_writer *w, int64_t first, int n, tl_error *err)
{
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), n);
	if (b == NULL)
		return tl_error_nomem(err, "for a batch");
	for (int i = 0; i < n; i++) {
		b->columns[0].v.i64[i] = first + i;
		b->columns[1].v.bytes[i] = (tl_bytes){(const uint8_t *)names[i % 4], (uint32_t)strlen(names[i % 4])};
		b->columns[1].valid[i] = 1;
		b->columns[2].v.f64[i] = i;
		b->columns[2].valid[i] = i % 2;
	}
	b->nrows = n;
	int rc = tl_ice_writer_write(w, b, err);
	tl_pq_batch_free(b);
	return rc;
}

/* Adds every file w wrote to c. */
static int add_written_files(tl_ice_commit *c, const tl_ice_writer *w, tl_error *err)
{
	for (int i = 0; i < tl_ice_writer_nfiles(w); i++)
		if (tl_ice_commit_add_file(c, tl_ice_writer_file(w, i), err) < 0)
			return -1;
	return 0;
}

/*
 * A fold's lake step on the table at location: equality deletes of ids
 * 100..109 and five new rows, committed as one row delta.
 */
static int commit_row_delta(const char *location, tl_error *err)
{
	static const int32_t key[1] = {1};
	int rc = -1;
	tl_ice_writer *data = NULL, *deletes = NULL;
	tl_ice_commit *c = NULL;
	tl_ice_table *t = tl_ice_table_open(location, err);
	if (t == NULL)
		return -1;
	if ((data = tl_ice_writer_open_data(t, NULL, err)) == NULL || write_people_rows(data, 500, 5, err) < 0 ||
	    tl_ice_writer_close(data, err) < 0)
		goto done;
	if ((deletes = tl_ice_writer_open_equality_deletes(t, key, 1, NULL, err)) == NULL ||
	    write_ids(deletes, 100, 10, err) < 0 || tl_ice_writer_close(deletes, err) < 0)
		goto done;
	if ((c = tl_ice_commit_begin(t, TL_ICE_OP_ROW_DELTA, err)) == NULL ||
	    tl_ice_commit_set_summary(c, "tierdb.op-id", "nomem") < 0 || add_written_files(c, data, err) < 0 ||
	    add_written_files(c, deletes, err) < 0 || tl_ice_commit_finish(c, NULL, err) < 0)
		goto done;
	rc = 0;
done:
	if (rc < 0 && c != NULL && err->code == TL_OK)
		tl_error_nomem(err, "for a commit summary");
	tl_ice_commit_free(c);
	tl_ice_writer_free(deletes);
	tl_ice_writer_free(data);
	tl_ice_table_free(t);
	return rc;
}

/* A new table each run, appended to, then folded into. */
static int row_delta_workload(tl_error *err)
{
	char name[32];
	snprintf(name, sizeof(name), "delta-%d", table_serial++);
	const char *location = scratch(name);
	if (create_and_append(location, err) < 0)
		return -1;
	return commit_row_delta(location, err);
}

/*
 * Position deletes of rows 0..4 of people_file, as Spark's merge-on-read
 * DELETE writes them (file_path, pos), committed as a row delta. The lake
 * library writes no position deletes itself, so this is setup, not a
 * workload.
 */
static int commit_position_deletes(const char *location, tl_error *err)
{
	tl_pq_column cols[2];
	memset(cols, 0, sizeof(cols));
	cols[0].name = "file_path", cols[0].physical = TL_PQ_BYTE_ARRAY, cols[0].logical = TL_PQ_LOGICAL_STRING;
	cols[0].required = true, cols[0].field_id = 2147483546;
	cols[1].name = "pos", cols[1].physical = TL_PQ_INT64, cols[1].required = true, cols[1].field_id = 2147483545;
	tl_pq_schema *s = tl_pq_schema_new();
	if (s == NULL || tl_pq_schema_add(s, &cols[0]) < 0 || tl_pq_schema_add(s, &cols[1]) < 0) {
		tl_pq_schema_free(s);
		return tl_error_nomem(err, "for a schema");
	}
	const char *path = scratch("position-deletes.parquet");
	tl_pq_batch *b = tl_pq_batch_new(s, 5);
	int rc = -1;
	if (b == NULL) {
		tl_error_nomem(err, "for a batch");
		goto done;
	}
	for (int i = 0; i < 5; i++) {
		b->columns[0].v.bytes[i] = (tl_bytes){(const uint8_t *)people_file, (uint32_t)strlen(people_file)};
		b->columns[1].v.i64[i] = i;
	}
	b->nrows = 5;
	tl_output *out = tl_output_create_file(path, 0, err);
	if (out == NULL)
		goto done;
	tl_pq_writer *w = tl_pq_writer_open(out, s, NULL, err);
	int wrc = w != NULL && tl_pq_writer_write(w, b, err) == 0 && tl_pq_writer_close(w, err) == 0 &&
	                  out->finish(out, err) == 0
	              ? 0
	              : -1;
	tl_pq_writer_free(w);
	tl_output_close(out);
	if (wrc < 0)
		goto done;
	tl_ice_table *t = tl_ice_table_open(location, err);
	if (t == NULL)
		goto done;
	tl_input *in = tl_input_open_file(path, err);
	tl_ice_commit *c = in ? tl_ice_commit_begin(t, TL_ICE_OP_ROW_DELTA, err) : NULL;
	if (c != NULL) {
		tl_ice_data_file df;
		memset(&df, 0, sizeof(df));
		df.content = TL_ICE_CONTENT_POSITION_DELETES;
		df.file_path = path;
		df.file_format = "PARQUET";
		df.record_count = 5;
		df.file_size_in_bytes = (int64_t)in->size;
		if (tl_ice_commit_add_file(c, &df, err) == 0 && tl_ice_commit_finish(c, NULL, err) == 0)
			rc = 0;
	}
	tl_ice_commit_free(c);
	tl_input_close(in);
	tl_ice_table_free(t);
done:
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

static char deleted_table[160];
static int64_t deleted_table_rows = -1;   /* what a run without faults reads */

/*
 * Plans a filtered scan of a table with equality and position deletes
 * (manifest pruning, delete matching) and reads every column, renders the
 * rows and the filter.
 */
static int read_with_deletes_workload(tl_error *err)
{
	tl_ice_table *t = tl_ice_table_open(deleted_table, err);
	if (t == NULL)
		return -1;
	int rc = -1;
	tl_arena arena;
	tl_arena_init(&arena, 512);
	tl_buf text;
	tl_buf_init(&text);
	tl_ice_scan *scan = NULL;
	tl_ice_reader *r = NULL;
	tl_pq_batch *b = NULL;
	const tl_ice_expr *filter;
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(t->metadata);
	if (tl_ice_expr_parse(schema, "id >= 103 AND (name IS NOT NULL OR score < 30) OR id IN (501, 503)", &arena,
	                      &filter, err) < 0)
		goto done;
	tl_ice_expr_text(filter, schema, &text);
	if ((scan = tl_ice_scan_plan(t->metadata, TL_ICE_NO_SNAPSHOT, filter, err)) == NULL ||
	    (r = tl_ice_reader_open(scan, NULL, 0, err)) == NULL)
		goto done;
	if ((b = tl_ice_reader_batch_new(r, 16)) == NULL) {
		tl_error_nomem(err, "for a batch");
		goto done;
	}
	int64_t rows = 0, n;
	while ((n = tl_ice_reader_next(r, b, err)) > 0) {
		for (int64_t i = 0; i < n; i++)
			tl_render_row(tl_ice_reader_schema(r), NULL, b, i, &text);
		rows += n;
	}
	if (n < 0 || tl_buf_check(&text, err, "rendering") < 0)
		goto done;
	if (deleted_table_rows >= 0 && rows != deleted_table_rows) {
		tl_error_set(err, TL_ERR_CORRUPT, "read %lld rows, a clean run reads %lld", (long long)rows,
		             (long long)deleted_table_rows);
		goto done;
	}
	deleted_table_rows = rows;
	rc = 0;
done:
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_scan_free(scan);
	tl_buf_free(&text);
	tl_arena_free(&arena);
	tl_ice_table_free(t);
	return rc;
}

/*
 * A new table each run, then the schema changes the daemon follows:
 * a rename, a dropped field, an added field with an initial default and a
 * promotion (none here: people has no int), read back through the reader.
 */
static int evolve_schema_workload(tl_error *err)
{
	char name[32];
	snprintf(name, sizeof(name), "evolve-%d", table_serial++);
	const char *location = scratch(name);
	if (create_and_append(location, err) < 0)
		return -1;
	tl_ice_table *t = tl_ice_table_open(location, err);
	if (t == NULL)
		return -1;
	tl_ice_field f[3];
	memset(f, 0, sizeof(f));
	f[0] = (tl_ice_field){.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}};
	f[1] = (tl_ice_field){.id = 3, .name = "points", .type = {.id = TL_ICE_DOUBLE}};
	f[2] = (tl_ice_field){.id = 0, .name = "note", .type = {.id = TL_ICE_STRING}, .initial_default = "\"n/a\""};
	bool changed = false;
	int rc = tl_ice_table_evolve_schema(t, f, 3, &changed, err);
	int64_t rows = 0, sum = 0;
	if (rc == 0)
		rc = tl_ice_table_refresh(t, err);
	if (rc == 0)
		rc = fixture_read_ids(t->metadata, &rows, &sum, err);
	if (rc == 0 && (!changed || rows != 100)) {
		tl_error_set(err, TL_ERR_CORRUPT, "evolved table: changed %d, %lld rows", changed, (long long)rows);
		rc = -1;
	}
	tl_ice_table_free(t);
	return rc;
}

/*
 * A table with two data manifests (an append and a fold), made once without
 * faults; each later call puts it back as it was made: a manifest rewrite
 * and an expiry only add metadata versions (and new manifests, which no
 * version then names), so dropping the versions after the first state and
 * restoring the hint is a fresh table again, without building one (and
 * fsyncing its files) for every failing allocation.
 */
static const char *maintained_table(tl_error *err)
{
	static char location[160];
	static int64_t version = -1;
	fault_pause(true);
	int rc = 0;
	if (version < 0) {
		snprintf(location, sizeof(location), "%s", scratch("maintain"));
		rc = create_and_append(location, err) == 0 && commit_row_delta(location, err) == 0 ? 0 : -1;
		tl_ice_table *t = rc == 0 ? tl_ice_table_open(location, err) : NULL;
		version = t != NULL ? t->version : -1;
		tl_ice_table_free(t);
		rc = version > 0 ? 0 : -1;
	} else {
		char path[256];
		for (int64_t v = version + 1;; v++) {
			snprintf(path, sizeof(path), "%s/metadata/v%lld.metadata.json", location, (long long)v);
			if (remove(path) != 0)
				break;
		}
		snprintf(path, sizeof(path), "%s/metadata/version-hint.text", location);
		FILE *hint = fopen(path, "w");
		rc = hint != NULL && fprintf(hint, "%lld", (long long)version) > 0 ? 0 : -1;
		if (hint != NULL && fclose(hint) != 0)
			rc = -1;
		if (rc < 0)
			tl_error_set(err, TL_ERR_IO, "cannot restore %s", path);
	}
	fault_pause(false);
	return rc == 0 ? location : NULL;
}

/* The daemon's metadata maintenance: a manifest rewrite, then an expiry of all but the current snapshot. */
static int rewrite_and_expire_workload(tl_error *err)
{
	const char *location = maintained_table(err);
	tl_ice_table *t = location ? tl_ice_table_open(location, err) : NULL;
	if (t == NULL)
		return -1;
	int64_t rewritten = TL_ICE_NO_SNAPSHOT;
	int expired = 0;
	tl_ice_expire_options o = {.older_than_ms = INT64_MAX, .retain_last = 1};
	int rc = tl_ice_table_rewrite_manifests(t, 8 << 20, NULL, 0, &rewritten, err);
	if (rc == 0)
		rc = tl_ice_table_expire_snapshots(t, &o, &expired, err);
	if (rc == 0 && (rewritten == TL_ICE_NO_SNAPSHOT || expired != 2))
		rc = tl_error_set(err, TL_ERR_CORRUPT, "maintenance: rewrote %lld, expired %d", (long long)rewritten,
		                  expired);
	tl_ice_table_free(t);
	return rc;
}

static int count_file(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	(void)ref, (void)err;
	(*(int *)arg)++;
	return 0;
}

static char expired_table[160];
static char expired_before[320];   /* the metadata file before its expiry */

/* Once, without faults: a maintained table whose older snapshots expired. Read-only from then on. */
static int make_expired_table(tl_error *err)
{
	if (expired_table[0] != '\0')
		return 0;
	const char *location = scratch("expired");
	fault_pause(true);
	int made = create_and_append(location, err) == 0 && commit_row_delta(location, err) == 0 ? 0 : -1;
	tl_ice_table *t = made == 0 ? tl_ice_table_open(location, err) : NULL;
	tl_ice_expire_options o = {.older_than_ms = INT64_MAX, .retain_last = 1};
	int rc = t ? 0 : -1;
	if (rc == 0) {
		snprintf(expired_before, sizeof(expired_before), "%s", t->metadata_file);
		rc = tl_ice_table_expire_snapshots(t, &o, NULL, err);
	}
	tl_ice_table_free(t);
	fault_pause(false);
	if (rc == 0)
		snprintf(expired_table, sizeof(expired_table), "%s", location);
	return rc;
}

/* The daemon's file maintenance after an expiry: the files it left unreferenced, and orphans. */
static int unreferenced_and_orphans_workload(tl_error *err)
{
	if (make_expired_table(err) < 0)
		return -1;
	tl_ice_table *before = tl_ice_table_open(expired_before, err);
	tl_ice_table *t = before ? tl_ice_table_open(expired_table, err) : NULL;
	int unreferenced = 0, orphans = 0;
	int rc = t != NULL ? 0 : -1;
	if (rc == 0)
		rc = tl_ice_unreferenced_files(before->metadata, before->metadata_file, t->metadata, t->metadata_file,
		                               INT64_MAX, count_file, &unreferenced, err);
	if (rc == 0)
		rc = tl_ice_table_orphan_files(t, INT64_MAX, count_file, &orphans, err);
	if (rc == 0 && (unreferenced == 0 || orphans != unreferenced))
		rc = tl_error_set(err, TL_ERR_CORRUPT, "maintenance: %d unreferenced, %d orphans", unreferenced, orphans);
	tl_ice_table_free(t);
	tl_ice_table_free(before);
	return rc;
}

/* ------------------------------------------------------------ tests */

static int setup(void)
{
	static bool done;
	if (done)
		return 0;
	tl_error err;
	tl_error_clear(&err);
	snprintf(people_file, sizeof(people_file), "%s", scratch("people.parquet"));
	if (write_people(people_file, 100, &err) < 0)
		return -1;
	/* A table with two appends of the same file: two manifests to read. */
	snprintf(committed_table, sizeof(committed_table), "%s", scratch("committed"));
	if (create_and_append(committed_table, &err) < 0) {
		fprintf(stderr, "nomem setup: %s\n", err.message);
		return -1;
	}
	tl_ice_table *t = tl_ice_table_open(committed_table, &err);
	if (t == NULL)
		return -1;
	tl_ice_schema schema;
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_ice_data_file df;
	int rc = -1;
	if (people_ice_schema(&schema, &err) == 0) {
		tl_ice_commit *c = NULL;
		if (describe_file(&schema, people_file, &arena, &df, &err) == 0 &&
		    (c = tl_ice_commit_begin(t, TL_ICE_OP_APPEND, &err)) != NULL && tl_ice_commit_add_file(c, &df, &err) == 0 &&
		    tl_ice_commit_finish(c, NULL, &err) == 0)
			rc = 0;
		tl_ice_commit_free(c);
		tl_ice_schema_free(&schema);
	}
	tl_arena_free(&arena);
	tl_ice_table_free(t);
	/* A table with a row delta (equality deletes) and Spark-style position deletes. */
	snprintf(deleted_table, sizeof(deleted_table), "%s", scratch("deleted"));
	if (rc == 0 && (create_and_append(deleted_table, &err) < 0 || commit_row_delta(deleted_table, &err) < 0 ||
	                commit_position_deletes(deleted_table, &err) < 0 || read_with_deletes_workload(&err) < 0))
		rc = -1;
	if (rc == 0)
		done = true;
	else
		fprintf(stderr, "nomem setup: %s\n", err.message);
	return rc;
}

TEST(nomem_render_and_parse_values)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(render_parse_workload);
}

TEST(nomem_write_parquet)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(write_parquet_workload);
}

TEST(nomem_read_parquet)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(read_parquet_workload);
}

TEST(nomem_create_table_and_append)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(create_and_append_workload);
}

TEST(nomem_plan_and_read_a_table)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(plan_and_read_workload);
}

TEST(nomem_fold_a_row_delta)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(row_delta_workload);
}

TEST(nomem_read_with_a_filter_and_deletes)
{
	CHECK(setup() == 0);
	/* The clean run in setup read some rows, and fewer than all: the deletes and the filter worked. */
	CHECK(deleted_table_rows > 0 && deleted_table_rows < 205);
	CHECK_FAULTS(read_with_deletes_workload);
}

TEST(nomem_evolve_the_schema)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(evolve_schema_workload);
}

TEST(nomem_rewrite_manifests_and_expire)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(rewrite_and_expire_workload);
}

TEST(nomem_unreferenced_and_orphan_files)
{
	CHECK(setup() == 0);
	CHECK_FAULTS(unreferenced_and_orphans_workload);
}

TEST(interrupt_stops_long_loops)
{
	CHECK(setup() == 0);
	/* Each workload must consult the check at least once; interrupted at any
	 * call, it stops with TL_ERR_INTERRUPTED and frees what it held. */
	CHECK(run_with_interrupts("write_parquet", write_parquet_workload) > 1);
	CHECK(run_with_interrupts("read_parquet", read_parquet_workload) > 1);
	CHECK(run_with_interrupts("create_and_append", create_and_append_workload) > 1);
	CHECK(run_with_interrupts("plan_and_read", plan_and_read_workload) > 1);
	CHECK(run_with_interrupts("row_delta", row_delta_workload) > 1);
	CHECK(run_with_interrupts("read_with_deletes", read_with_deletes_workload) > 1);
	CHECK(run_with_interrupts("rewrite_and_expire", rewrite_and_expire_workload) > 1);
	CHECK(run_with_interrupts("unreferenced_and_orphans", unreferenced_and_orphans_workload) > 1);
}
