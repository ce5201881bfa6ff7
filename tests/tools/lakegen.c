/*
 * lakegen.c: writes Iceberg tables with the lake library, so the interop
 * tests can check that Spark, pyiceberg and DuckDB read what we write.
 *
 *   lakegen create DIR --schema SCHEMA --partition SPEC [--property k=v]...
 *       A new, empty table at DIR. SCHEMA is a schema object as table
 *       metadata holds it; SPEC a "partition-specs" entry
 *       ({"spec-id":0,"fields":[...]}), or a bare field array ("[]" for
 *       unpartitioned). Each is JSON text, or @FILE to read it from a file.
 *       Prints nothing.
 *   lakegen append DIR ROWS.jsonl [--op-id ID] [--target-file-bytes N]
 *                  [--row-group-rows N]
 *       Writes the rows (one JSON object per line, as render.h renders
 *       rows; a missing key is null) into data files split by the table's
 *       partition spec and commits them as an append.
 *   lakegen delta DIR [--data ROWS.jsonl] --deletes KEYS.jsonl
 *                 --equality-ids ID,ID... [--op-id ID] [...]
 *       A row delta: the data files of ROWS and equality-delete files of
 *       KEYS (objects holding only the equality columns) in one snapshot.
 *   lakegen delete DIR PATH...
 *       Removes live data or delete files, by their path in the manifests.
 *   lakegen replace DIR [--op-id ID] [--target-file-bytes N] [--row-group-rows N]
 *       Compaction: reads the current snapshot's rows with every delete
 *       applied, writes them into new data files and commits a replace
 *       that removes the data files read and the delete files applied.
 *   lakegen evolve DIR FIELDS
 *       Schema evolution (tl_ice_table_evolve_schema): FIELDS is a JSON
 *       array of {"id", "name", "required", "type"} objects (text or
 *       @FILE), the new schema's top-level fields in order; an existing
 *       field by its id (renamed, promoted, relaxed), a new one with id 0,
 *       a primitive type and maybe an "initial-default" (a JSON single
 *       value); fields left out are dropped. A nested type
 *       may be given as null to keep the current one. Prints "changed" or
 *       "unchanged".
 *
 * append, delta, delete and replace print the new snapshot's id. Exit status 0 on
 * success, 1 with "lakegen: message" on stderr otherwise; files written
 * for a commit that failed are deleted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/render.h"
#include "common/render_json.h"
#include "iceberg/schema_json.h"

#define BATCH_ROWS 4096

static int fail(const tl_error *err)
{
	fprintf(stderr, "lakegen: %s\n", err->message);
	return 1;
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: lakegen create DIR --schema SCHEMA --partition SPEC [--property k=v]...\n"
	        "       lakegen append DIR ROWS.jsonl [--op-id ID] [--target-file-bytes N] [--row-group-rows N]\n"
	        "       lakegen delta DIR [--data ROWS.jsonl] --deletes KEYS.jsonl --equality-ids ID,... [--op-id ID]\n"
	        "       lakegen delete DIR PATH...\n"
	        "       lakegen replace DIR [--op-id ID] [--target-file-bytes N] [--row-group-rows N]\n"
	        "       lakegen evolve DIR FIELDS\n");
	return 2;
}

static int read_file(const char *path, tl_buf *out, tl_error *err)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return tl_error_set(err, TL_ERR_IO, "cannot open %s: %s", path, strerror(errno));
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		tl_buf_append(out, chunk, n);
	int bad = ferror(f);
	fclose(f);
	if (bad)
		return tl_error_set(err, TL_ERR_IO, "cannot read %s", path);
	return 0;
}

/* JSON given inline, or as @FILE. */
static json_t *load_json_arg(const char *arg, const char *what, tl_error *err)
{
	tl_buf text;
	tl_buf_init(&text);
	if (arg[0] == '@') {
		if (read_file(arg + 1, &text, err) < 0) {
			tl_buf_free(&text);
			return NULL;
		}
	} else {
		tl_buf_append_str(&text, arg);
	}
	json_t *j = tl_render_load_json((const char *)text.data, text.len, err);
	tl_buf_free(&text);
	if (j == NULL)
		tl_error_prefix(err, "%s", what);
	return j;
}

/* ------------------------------------------------------------- create */

static int parse_property(const char *arg, tl_ice_kv *kv, tl_error *err)
{
	const char *eq = strchr(arg, '=');
	if (eq == NULL || eq == arg)
		return tl_error_set(err, TL_ERR_INVALID, "--property wants KEY=VALUE, not \"%s\"", arg);
	kv->key = strndup(arg, (size_t)(eq - arg));
	kv->value = tl_strdup(eq + 1);
	return 0;
}

static int cmd_create(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	const char *dir = argv[0], *schema_arg = NULL, *spec_arg = NULL;
	tl_ice_kv *props = tl_calloc((size_t)argc, sizeof(tl_ice_kv));
	int nprops = 0, rc = 0;
	for (int i = 1; i < argc && rc == 0; i++) {
		if (i + 1 >= argc)
			rc = tl_error_set(&err, TL_ERR_INVALID, "%s needs a value", argv[i]);
		else if (strcmp(argv[i], "--schema") == 0)
			schema_arg = argv[++i];
		else if (strcmp(argv[i], "--partition") == 0)
			spec_arg = argv[++i];
		else if (strcmp(argv[i], "--property") == 0)
			rc = parse_property(argv[++i], &props[nprops++], &err);
		else
			rc = tl_error_set(&err, TL_ERR_INVALID, "unknown option %s", argv[i]);
	}
	if (rc == 0 && schema_arg == NULL)
		rc = tl_error_set(&err, TL_ERR_INVALID, "create needs --schema");
	json_t *sj = rc == 0 ? load_json_arg(schema_arg, "--schema", &err) : NULL;
	json_t *pj = sj != NULL ? load_json_arg(spec_arg ? spec_arg : "[]", "--partition", &err) : NULL;
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	bool have_schema = false, have_spec = false;
	tl_ice_table *t = NULL;
	if (pj != NULL) {
		have_schema = tl_ice_schema_from_json(sj, &schema, &err) == 0;
		have_spec = have_schema && tl_ice_partition_spec_from_json(pj, json_is_array(pj) ? 0 : -1, &spec, &err) == 0;
		if (have_spec)
			t = tl_ice_table_create(dir, &schema, &spec, props, nprops, &err);
	}
	rc = t != NULL ? 0 : fail(&err);
	tl_ice_table_free(t);
	if (have_spec)
		tl_ice_partition_spec_free(&spec);
	if (have_schema)
		tl_ice_schema_free(&schema);
	json_decref(sj);
	json_decref(pj);
	for (int i = 0; i < nprops; i++) {
		free(props[i].key);
		free(props[i].value);
	}
	free(props);
	return rc;
}

/* -------------------------------------------------------- writing rows */

/*
 * Feeds the JSON Lines file's rows to the writer in batches of its schema.
 * Errors name the file and line.
 */
static int write_jsonl(tl_ice_writer *w, const char *path, tl_error *err)
{
	tl_buf text;
	tl_buf_init(&text);
	if (read_file(path, &text, err) < 0) {
		tl_buf_free(&text);
		return -1;
	}
	const tl_pq_schema *schema = tl_ice_writer_schema(w);
	tl_pq_batch *batch = tl_pq_batch_new(schema, BATCH_ROWS);
	const char *p = (const char *)text.data, *end = p + text.len;
	int rc = 0;
	for (int64_t line = 1; p < end && rc == 0; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		size_t len = (size_t)(eol - p);
		bool blank = strspn(p, " \t\r") >= len;
		if (!blank) {
			json_t *row = tl_render_load_json(p, len, err);
			if (row == NULL || tl_render_parse_row(schema, row, batch, batch->nrows, err) < 0) {
				tl_error_prefix(err, "%s line %lld", path, (long long)line);
				rc = -1;
			} else if (++batch->nrows == batch->capacity) {
				rc = tl_ice_writer_write(w, batch, err);
				batch->nrows = 0;
				tl_arena_reset(&batch->arena);
			}
			json_decref(row);
		}
		p = eol + (nl ? 1 : 0);
	}
	if (rc == 0 && batch->nrows > 0)
		rc = tl_ice_writer_write(w, batch, err);
	tl_pq_batch_free(batch);
	tl_buf_free(&text);
	return rc;
}

static int parse_i64(const char *text, const char *what, int64_t *out, tl_error *err)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v <= 0)
		return tl_error_set(err, TL_ERR_INVALID, "%s wants a positive integer, not \"%s\"", what, text);
	*out = v;
	return 0;
}

static int parse_ids(const char *text, int32_t **ids, int *n, tl_error *err)
{
	*ids = tl_calloc(strlen(text) + 1, sizeof(int32_t));
	*n = 0;
	for (const char *p = text; *p;) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno != 0 || end == p || v <= 0 || v > INT32_MAX || (*end != ',' && *end != '\0'))
			return tl_error_set(err, TL_ERR_INVALID, "--equality-ids wants field ids like 1,2, not \"%s\"", text);
		(*ids)[(*n)++] = (int32_t)v;
		p = *end == ',' ? end + 1 : end;
	}
	if (*n == 0)
		return tl_error_set(err, TL_ERR_INVALID, "--equality-ids is empty");
	return 0;
}

typedef struct write_args {
	const char *data;
	const char *deletes;
	const char *op_id;
	int32_t *equality_ids;
	int nequality_ids;
	tl_ice_writer_options opts;
} write_args;

static int parse_write_args(int argc, char **argv, write_args *a, tl_error *err)
{
	memset(a, 0, sizeof(*a));
	tl_ice_writer_options_init(&a->opts);
	for (int i = 0; i < argc; i++) {
		const char *opt = argv[i];
		if (opt[0] != '-') {
			if (a->data != NULL)
				return tl_error_set(err, TL_ERR_INVALID, "unexpected argument %s", opt);
			a->data = opt;
			continue;
		}
		if (i + 1 >= argc)
			return tl_error_set(err, TL_ERR_INVALID, "%s needs a value", opt);
		const char *val = argv[++i];
		if (strcmp(opt, "--data") == 0)
			a->data = val;
		else if (strcmp(opt, "--deletes") == 0)
			a->deletes = val;
		else if (strcmp(opt, "--op-id") == 0)
			a->op_id = val;
		else if (strcmp(opt, "--equality-ids") == 0) {
			free(a->equality_ids);
			if (parse_ids(val, &a->equality_ids, &a->nequality_ids, err) < 0)
				return -1;
		} else if (strcmp(opt, "--target-file-bytes") == 0) {
			if (parse_i64(val, opt, &a->opts.target_file_bytes, err) < 0)
				return -1;
		} else if (strcmp(opt, "--row-group-rows") == 0) {
			if (parse_i64(val, opt, &a->opts.parquet.row_group_rows, err) < 0)
				return -1;
		} else {
			return tl_error_set(err, TL_ERR_INVALID, "unknown option %s", opt);
		}
	}
	return 0;
}

/* Writes one JSON Lines file through a writer and closes it; NULL on failure. */
static tl_ice_writer *write_file_set(tl_ice_table *t, const write_args *a, bool deletes, tl_error *err)
{
	tl_ice_writer *w = deletes ? tl_ice_writer_open_equality_deletes(t, a->equality_ids, a->nequality_ids, &a->opts, err)
	                           : tl_ice_writer_open_data(t, &a->opts, err);
	if (w == NULL)
		return NULL;
	if (write_jsonl(w, deletes ? a->deletes : a->data, err) < 0 || tl_ice_writer_close(w, err) < 0) {
		tl_ice_writer_free(w);   /* before close: removes its files */
		return NULL;
	}
	return w;
}

static void remove_files(const tl_ice_writer *w)
{
	for (int i = 0; w != NULL && i < tl_ice_writer_nfiles(w); i++) {
		char *local = tl_local_path(tl_ice_writer_file(w, i)->file_path, NULL);
		if (local != NULL)
			unlink(local);
		free(local);
	}
}

static int add_files(tl_ice_commit *c, const tl_ice_writer *w, tl_error *err)
{
	for (int i = 0; w != NULL && i < tl_ice_writer_nfiles(w); i++)
		if (tl_ice_commit_add_file(c, tl_ice_writer_file(w, i), err) < 0)
			return -1;
	return 0;
}

/* Writes the data and delete files the arguments name and commits them. */
static int write_and_commit(const char *dir, const write_args *a, tl_ice_operation op)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_writer *data = NULL, *dels = NULL;
	tl_ice_commit *c = NULL;
	int64_t snapshot_id = -1;
	int rc = -1;
	tl_ice_table *t = tl_ice_table_open(dir, &err);
	if (t == NULL)
		goto done;
	if (a->data != NULL && (data = write_file_set(t, a, false, &err)) == NULL)
		goto done;
	if (a->deletes != NULL && (dels = write_file_set(t, a, true, &err)) == NULL)
		goto done;
	c = tl_ice_commit_begin(t, op, &err);
	if (c == NULL)
		goto done;
	if (a->op_id != NULL)
		tl_ice_commit_set_summary(c, "tierdb.op-id", a->op_id);
	if (add_files(c, data, &err) < 0 || add_files(c, dels, &err) < 0)
		goto done;
	rc = tl_ice_commit_finish(c, &snapshot_id, &err);
done:
	if (rc < 0) {
		remove_files(data);
		remove_files(dels);
	}
	tl_ice_commit_free(c);
	tl_ice_writer_free(data);
	tl_ice_writer_free(dels);
	tl_ice_table_free(t);
	if (rc < 0)
		return fail(&err);
	printf("%" PRId64 "\n", snapshot_id);
	return 0;
}

static int cmd_append(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	write_args a;
	int rc = parse_write_args(argc - 1, argv + 1, &a, &err);
	if (rc == 0 && a.data == NULL)
		rc = tl_error_set(&err, TL_ERR_INVALID, "append needs ROWS.jsonl");
	if (rc == 0 && (a.deletes != NULL || a.equality_ids != NULL))
		rc = tl_error_set(&err, TL_ERR_INVALID, "append takes no deletes; use delta");
	rc = rc == 0 ? write_and_commit(argv[0], &a, TL_ICE_OP_APPEND) : fail(&err);
	free(a.equality_ids);
	return rc;
}

static int cmd_delta(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	write_args a;
	int rc = parse_write_args(argc - 1, argv + 1, &a, &err);
	if (rc == 0 && (a.deletes == NULL || a.equality_ids == NULL))
		rc = tl_error_set(&err, TL_ERR_INVALID, "delta needs --deletes KEYS.jsonl and --equality-ids");
	rc = rc == 0 ? write_and_commit(argv[0], &a, TL_ICE_OP_ROW_DELTA) : fail(&err);
	free(a.equality_ids);
	return rc;
}

static int cmd_delete(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	int64_t snapshot_id = -1;
	tl_ice_commit *c = NULL;
	int rc = -1;
	tl_ice_table *t = tl_ice_table_open(argv[0], &err);
	if (t != NULL)
		c = tl_ice_commit_begin(t, TL_ICE_OP_DELETE, &err);
	if (c != NULL) {
		rc = 0;
		for (int i = 1; i < argc && rc == 0; i++)
			rc = tl_ice_commit_remove_file(c, argv[i], &err);
		if (rc == 0)
			rc = tl_ice_commit_finish(c, &snapshot_id, &err);
	}
	tl_ice_commit_free(c);
	tl_ice_table_free(t);
	if (rc < 0)
		return fail(&err);
	printf("%" PRId64 "\n", snapshot_id);
	return 0;
}

/* ------------------------------------------------------------- replace */

typedef struct task_key {
	int task;
	char *key;      /* spec id and partition path: equal for equal tuples */
} task_key;

static int compare_task_keys(const void *a, const void *b)
{
	const task_key *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c != 0 ? c : x->task - y->task;
}

/*
 * The scan's tasks grouped by partition, so the rewrite fills one
 * partition's files at a time instead of cycling through more partitions
 * than the writer keeps open.
 */
static task_key *tasks_by_partition(const tl_ice_scan *scan, tl_error *err)
{
	int n = tl_ice_scan_ntasks(scan);
	task_key *keys = tl_calloc((size_t)(n ? n : 1), sizeof(task_key));
	tl_buf key;
	tl_buf_init(&key);
	for (int i = 0; i < n; i++) {
		const tl_ice_scan_task *task = tl_ice_scan_task_at(scan, i);
		const tl_ice_partition_spec *spec = tl_ice_scan_spec(scan, task->spec_id);
		tl_buf_reset(&key);
		tl_buf_printf(&key, "%d/", (int)task->spec_id);
		if (spec != NULL && spec->nfields == task->file.npartition &&
		    tl_ice_partition_path(spec, tl_ice_scan_schema(scan), task->file.partition, &key, err) < 0)
			tl_error_clear(err);   /* a tuple we cannot render still groups by spec */
		tl_buf_append_byte(&key, 0);
		keys[i].task = i;
		keys[i].key = tl_strdup((const char *)key.data);
	}
	tl_buf_free(&key);
	qsort(keys, (size_t)n, sizeof(task_key), compare_task_keys);
	return keys;
}

/* Copies one task's surviving rows into the writer, in the writer's column order. */
static int rewrite_task(const tl_ice_scan *scan, int task, const int32_t *ids, int nids, tl_ice_writer *w,
                        tl_error *err)
{
	tl_ice_reader *r = tl_ice_reader_open_task(scan, task, ids, nids, err);
	if (r == NULL)
		return -1;
	tl_pq_batch *batch = tl_ice_reader_batch_new(r, BATCH_ROWS);
	int64_t n;
	int rc = 0;
	while (rc == 0 && (n = tl_ice_reader_next(r, batch, err)) != 0)
		rc = n < 0 ? -1 : tl_ice_writer_write(w, batch, err);
	tl_pq_batch_free(batch);
	tl_ice_reader_free(r);
	return rc;
}

static int rewrite_rows(const tl_ice_scan *scan, const tl_ice_schema *schema, tl_ice_writer *w, tl_error *err)
{
	int32_t *ids = tl_calloc((size_t)(schema->nfields ? schema->nfields : 1), sizeof(int32_t));
	for (int i = 0; i < schema->nfields; i++)
		ids[i] = schema->fields[i].id;
	int n = tl_ice_scan_ntasks(scan), rc = 0;
	task_key *order = tasks_by_partition(scan, err);
	for (int i = 0; i < n && rc == 0; i++)
		rc = rewrite_task(scan, order[i].task, ids, schema->nfields, w, err);
	for (int i = 0; i < n; i++)
		free(order[i].key);
	free(order);
	free(ids);
	return rc;
}

/* Removes each task's data file and every delete file applied (once each). */
static int remove_scanned(tl_ice_commit *c, const tl_ice_scan *scan, tl_error *err)
{
	int ntasks = tl_ice_scan_ntasks(scan);
	const tl_ice_delete_file **seen = NULL;
	int nseen = 0, cap = 0, rc = 0;
	for (int i = 0; i < ntasks && rc == 0; i++) {
		const tl_ice_scan_task *task = tl_ice_scan_task_at(scan, i);
		rc = tl_ice_commit_remove_file(c, task->file.file_path, err);
		for (int d = 0; d < task->ndeletes && rc == 0; d++) {
			bool dup = false;
			for (int k = 0; k < nseen && !dup; k++)
				dup = seen[k] == task->deletes[d];
			if (dup)
				continue;
			if (nseen == cap) {
				cap = cap ? 2 * cap : 16;
				seen = tl_realloc(seen, sizeof(*seen) * (size_t)cap);
			}
			seen[nseen++] = task->deletes[d];
			rc = tl_ice_commit_remove_file(c, task->deletes[d]->file.file_path, err);
		}
	}
	free(seen);
	return rc;
}

static int cmd_replace(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	write_args a;
	tl_ice_table *t = NULL;
	tl_ice_scan *scan = NULL;
	tl_ice_writer *w = NULL;
	tl_ice_commit *c = NULL;
	int64_t snapshot_id = -1;
	int rc = parse_write_args(argc - 1, argv + 1, &a, &err);
	if (rc == 0 && (a.data != NULL || a.deletes != NULL || a.equality_ids != NULL))
		rc = tl_error_set(&err, TL_ERR_INVALID, "replace takes no rows; it rewrites the table's own");
	if (rc == 0 && (t = tl_ice_table_open(argv[0], &err)) == NULL)
		rc = -1;
	if (rc == 0 && t->metadata->current_snapshot_id == TL_ICE_NO_SNAPSHOT)
		rc = tl_error_set(&err, TL_ERR_INVALID, "table %s has no snapshot to rewrite", argv[0]);
	if (rc == 0 && (scan = tl_ice_scan_plan(t->metadata, TL_ICE_NO_SNAPSHOT, NULL, &err)) == NULL)
		rc = -1;
	if (rc == 0 && (w = tl_ice_writer_open_data(t, &a.opts, &err)) == NULL)
		rc = -1;
	if (rc == 0)
		rc = rewrite_rows(scan, tl_ice_metadata_current_schema(t->metadata), w, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	if (rc == 0 && (c = tl_ice_commit_begin(t, TL_ICE_OP_REPLACE, &err)) == NULL)
		rc = -1;
	if (rc == 0) {
		if (a.op_id != NULL)
			tl_ice_commit_set_summary(c, "tierdb.op-id", a.op_id);
		rc = remove_scanned(c, scan, &err);
	}
	if (rc == 0)
		rc = add_files(c, w, &err);
	if (rc == 0)
		rc = tl_ice_commit_finish(c, &snapshot_id, &err);
	if (rc < 0 && w != NULL && tl_ice_writer_nfiles(w) > 0)
		remove_files(w);
	tl_ice_commit_free(c);
	tl_ice_writer_free(w);
	tl_ice_scan_free(scan);
	tl_ice_table_free(t);
	free(a.equality_ids);
	if (rc < 0)
		return fail(&err);
	printf("%" PRId64 "\n", snapshot_id);
	return 0;
}

/* ------------------------------------------------------------- evolve */

/*
 * One field of evolve's list: names and types point into the JSON or the
 * current schema; the initial-default is the caller's to free.
 */
static int parse_evolved_field(const json_t *j, const tl_ice_schema *current, tl_ice_field *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	const json_t *id = json_object_get(j, "id"), *type = json_object_get(j, "type");
	out->name = (char *)json_string_value(json_object_get(j, "name"));
	out->required = json_is_true(json_object_get(j, "required"));
	if (!json_is_object(j) || out->name == NULL || (id != NULL && !json_is_integer(id)))
		return tl_error_set(err, TL_ERR_INVALID, "each field wants a \"name\" and an integer \"id\"");
	out->id = id != NULL ? (int32_t)json_integer_value(id) : 0;
	const json_t *initial = json_object_get(j, "initial-default");
	if (initial != NULL)
		out->initial_default = json_dumps(initial, JSON_ENCODE_ANY | JSON_COMPACT);
	if (json_is_string(type))
		return tl_ice_type_parse_primitive(json_string_value(type), &out->type, err);
	const tl_ice_field *kept = out->id > 0 ? tl_ice_schema_find_id(current, out->id) : NULL;
	if (!json_is_null(type) || kept == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "field \"%s\": \"type\" is a type name, or null for a kept field",
		                    out->name);
	out->type = kept->type;
	return 0;
}

static int cmd_evolve(int argc, char **argv)
{
	tl_error err;
	tl_error_clear(&err);
	if (argc != 2)
		return usage();
	json_t *list = load_json_arg(argv[1], "FIELDS", &err);
	tl_ice_table *t = list != NULL ? tl_ice_table_open(argv[0], &err) : NULL;
	int rc = t != NULL ? 0 : -1;
	if (rc == 0 && !json_is_array(list))
		rc = tl_error_set(&err, TL_ERR_INVALID, "FIELDS is not a JSON array");
	size_t n = rc == 0 ? json_array_size(list) : 0;
	tl_ice_field *fields = tl_calloc(n + 1, sizeof(tl_ice_field));
	const tl_ice_schema *current = t != NULL ? tl_ice_metadata_current_schema(t->metadata) : NULL;
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = parse_evolved_field(json_array_get(list, i), current, &fields[i], &err);
	bool changed = false;
	if (rc == 0)
		rc = tl_ice_table_evolve_schema(t, fields, (int)n, &changed, &err);
	for (size_t i = 0; i < n; i++)
		free(fields[i].initial_default);
	free(fields);
	tl_ice_table_free(t);
	json_decref(list);
	if (rc < 0)
		return fail(&err);
	printf("%s\n", changed ? "changed" : "unchanged");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	const char *cmd = argv[1];
	if (strcmp(cmd, "create") == 0)
		return cmd_create(argc - 2, argv + 2);
	if (strcmp(cmd, "append") == 0)
		return cmd_append(argc - 2, argv + 2);
	if (strcmp(cmd, "delta") == 0)
		return cmd_delta(argc - 2, argv + 2);
	if (strcmp(cmd, "delete") == 0 && argc >= 4)
		return cmd_delete(argc - 2, argv + 2);
	if (strcmp(cmd, "replace") == 0)
		return cmd_replace(argc - 2, argv + 2);
	if (strcmp(cmd, "evolve") == 0)
		return cmd_evolve(argc - 2, argv + 2);
	return usage();
}
