/*
 * compaction.c: rewriting a tiered table's lake data files: bin-packing
 * small files and paying off delete debt (SPEC §9, docs/maintenance.md).
 *
 * One run of one table, the lake-operation sequence of the fold and
 * retention (lock -> commit -> fault point -> phase -> publish -> unlock):
 *
 *   1. plan the lake at the published S and group its data files by
 *      partition (spec and tuple); a group is rewritten when it has
 *      min_input_files small files, or when the delete files applying to
 *      it hold delete_ratio of its rows (on request: two small files, or
 *      any delete); in a chosen group the small files and the files with
 *      deletes are the inputs;
 *   2. journal the run (op_log 'compaction', phase 'writing');
 *   3. read each input with its deletes applied and write the rows into
 *      new files of about target_file_bytes, named for the op id; journal
 *      them (phase 'committing');
 *   4. under the table's lake lock, one REPLACE snapshot removes the
 *      inputs and the delete files that apply to no remaining data file,
 *      and adds the new files, stamped with the op id (phase 'committed');
 *   5. one transaction: S and lake_props advance (guarded on the old S),
 *      phase 'done'.
 *
 * The rows readers see do not change: the new files hold exactly the
 * input rows that survived their deletes. The new files take the commit's
 * sequence number, so equality deletes already in the lake (older) no
 * longer apply to them, and the fold's later deletes (newer) do. So no
 * pin holds a run back: a reader pinned at the old S reads the old files,
 * which stay until snapshot expiry, which honours pins. The fold stays
 * the only writer of new equality deletes.
 *
 * Its journal entry is op_log kind 'compaction' with details kind
 * 'compaction' (the fold's are kind 'compaction' too, with details kind
 * 'fold': each recovery settles only its own). A run a crash interrupted
 * is settled on the lake's word by tdb_recover_compaction: a snapshot stamped with its op id is adopted
 * (published as in step 5); none means nothing reached readers: its files
 * are deleted (the journaled ones and any named for its op id) and it is
 * marked aborted.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "compaction.h"
#include "daemon.h"
#include "fault.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "pg.h"
#include "tiering.h"
#include "tierlake/iceberg_maintenance.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_writer.h"

/* One data file of the plan, with what grouping needs. */
typedef struct planned_file {
	int task;               /* index into the scan */
	tl_bytes key;           /* spec id and partition tuple, serialized */
	bool small, has_deletes;
} planned_file;

typedef struct compaction_run {
	PGconn *c;
	const tdb_catalog_table *t;
	const tdb_maintenance_policy *policy;
	bool requested;
	/*
	 * An unpartitioned lake under lake retention: files are never merged,
	 * since retention removes whole files below R and a merged file would
	 * straddle R for as long as its newest row lives (retention.c).
	 */
	bool keep_ranges;
	const char *label;
	char op_id[37];
	tl_ice_table *lake;
	tl_ice_scan *scan;
	bool has_base;
	int64_t base_snapshot;
	tl_arena arena;               /* partition keys */
	bool *chosen;                 /* per scan task: an input */
	int *order;                   /* the inputs' task indexes, partition by partition */
	bool *starts_partition;       /* per entry of order: the first input of its partition */
	int ninputs;
	int64_t input_bytes, input_rows;
	json_t *inputs;               /* paths of the data files rewritten */
	json_t *dead_deletes;         /* paths of the delete files removed */
	tl_ice_writer *writer;
	int64_t snapshot_id;
	bool committed;
} compaction_run;

/* ------------------------------------------------------------ choosing */

/* The task's spec id and partition tuple as bytes that compare equal exactly when the partitions are one. */
static int partition_key(compaction_run *r, const tl_ice_scan_task *task, tl_bytes *out, tl_error *err)
{
	const tl_ice_partition_spec *spec = tl_ice_scan_spec(r->scan, task->spec_id);
	tl_ice_type ptype;
	memset(&ptype, 0, sizeof(ptype));
	if (spec == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s names partition spec %d, which the table lacks",
		                    task->file.file_path, (int)task->spec_id);
	if (tl_ice_partition_type(spec, tl_ice_scan_schema(r->scan), &ptype, err) < 0)
		return -1;
	tl_buf k;
	tl_buf_init(&k);
	tl_buf_append(&k, &task->spec_id, sizeof(task->spec_id));
	int rc = 0;
	for (int i = 0; i < task->file.npartition && rc == 0; i++) {
		const tl_ice_value *v = &task->file.partition[i];
		tl_buf_append_byte(&k, v->is_null ? 0 : 1);
		if (v->is_null)
			continue;
		tl_buf part;
		tl_buf_init(&part);
		rc = tl_ice_value_serialize(&ptype.fields[i].type, v, &part, err);
		uint32_t n = (uint32_t)part.len;
		tl_buf_append(&k, &n, sizeof(n));
		tl_buf_append(&k, part.data, part.len);
		tl_buf_free(&part);
	}
	tl_ice_type_free(&ptype);
	if (rc == 0 && tl_buf_check(&k, err, "for a partition key") < 0)
		rc = -1;
	if (rc == 0)
		*out = tl_arena_copy(&r->arena, k.data, (uint32_t)k.len);
	tl_buf_free(&k);
	return rc;
}

static int by_key(const void *a, const void *b)
{
	const planned_file *x = a, *y = b;
	uint32_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
	int c = memcmp(x->key.ptr, y->key.ptr, n);
	if (c != 0)
		return c;
	if (x->key.len != y->key.len)
		return x->key.len < y->key.len ? -1 : 1;
	return x->task - y->task;
}

static bool same_partition(const planned_file *a, const planned_file *b)
{
	return a->key.len == b->key.len && memcmp(a->key.ptr, b->key.ptr, a->key.len) == 0;
}

/*
 * A set of the scan's delete files: the scan shares one tl_ice_delete_file
 * among every task it applies to, so pointers identify them. Built by
 * appending, then sorted and deduplicated (delete_set_seal).
 */
typedef struct delete_set {
	const tl_ice_delete_file **items;
	size_t n, cap;
	bool failed;            /* out of memory: the set holds fewer than it should */
} delete_set;

static void delete_set_add_task(delete_set *s, const tl_ice_scan_task *task)
{
	for (int d = 0; d < task->ndeletes && !s->failed; d++) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 64;
			const tl_ice_delete_file **items = tl_realloc(s->items, sizeof(*items) * cap);
			if (items == NULL) {
				s->failed = true;
				return;
			}
			s->items = items;
			s->cap = cap;
		}
		s->items[s->n++] = task->deletes[d];
	}
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (const tl_ice_delete_file *const *)a, y = (uintptr_t) * (const tl_ice_delete_file *const *)b;
	return x < y ? -1 : x > y;
}

static void delete_set_seal(delete_set *s)
{
	if (s->n == 0)
		return;
	qsort(s->items, s->n, sizeof(*s->items), by_address);
	size_t n = 1;
	for (size_t i = 1; i < s->n; i++)
		if (s->items[i] != s->items[n - 1])
			s->items[n++] = s->items[i];
	s->n = n;
}

static bool delete_set_has(const delete_set *s, const tl_ice_delete_file *d)
{
	return s->n > 0 && bsearch(&d, s->items, s->n, sizeof(*s->items), by_address) != NULL;
}

static void delete_set_free(delete_set *s)
{
	tl_free(s->items);
}

/*
 * Decides on one partition's files, files[0..n): whether to rewrite it and
 * which files are inputs (the policy's rule in the file header).
 */
static void choose_group(compaction_run *r, const planned_file *files, int n)
{
	int nsmall = 0;
	int64_t rows = 0, deleted_rows = 0;
	delete_set deletes = {0};
	for (int i = 0; i < n; i++) {
		const tl_ice_scan_task *task = tl_ice_scan_task_at(r->scan, files[i].task);
		nsmall += files[i].small;
		rows += task->file.record_count;
		delete_set_add_task(&deletes, task);
	}
	delete_set_seal(&deletes);
	for (size_t i = 0; i < deletes.n; i++)
		deleted_rows += deletes.items[i]->file.record_count;
	delete_set_free(&deletes); /* out of memory, the estimate counts fewer deletes */
	const tdb_maintenance_policy *p = r->policy;
	bool bin_pack = nsmall >= (r->requested ? 2 : p->min_input_files) && !r->keep_ranges;
	bool debt = deleted_rows > 0 && (r->requested || (double)deleted_rows >= p->delete_ratio * (double)rows);
	if (!bin_pack && !debt)
		return;
	int inputs = 0;
	for (int i = 0; i < n; i++)
		inputs += (bin_pack && files[i].small) || (debt && files[i].has_deletes);
	if (inputs < 2 && !debt)
		return; /* one small file rewritten alone would be the same file */
	bool first = true;
	for (int i = 0; i < n; i++) {
		if (!((bin_pack && files[i].small) || (debt && files[i].has_deletes)))
			continue;
		const tl_ice_scan_task *task = tl_ice_scan_task_at(r->scan, files[i].task);
		r->chosen[files[i].task] = true;
		r->starts_partition[r->ninputs] = first || r->keep_ranges; /* keep_ranges: one output file per input */
		r->order[r->ninputs++] = files[i].task;
		first = false;
		r->input_bytes += task->file.file_size_in_bytes;
		r->input_rows += task->file.record_count;
		json_array_append_new(r->inputs, json_string(task->file.file_path));
	}
}

/*
 * The delete files the commit removes: those that applied to an input and
 * apply to no data file that stays. (Delete files that apply to no data
 * file at all are left: they cost a read of their own, nothing per row,
 * and snapshot expiry keeps the history that needs them.)
 */
static int choose_dead_deletes(compaction_run *r, tl_error *err)
{
	delete_set kept = {0}, inputs = {0};
	for (int i = 0; i < tl_ice_scan_ntasks(r->scan); i++)
		delete_set_add_task(r->chosen[i] ? &inputs : &kept, tl_ice_scan_task_at(r->scan, i));
	int rc = 0;
	if (kept.failed || inputs.failed) {
		rc = tl_error_nomem(err, "planning a compaction of %s", r->label);
	} else {
		delete_set_seal(&kept);
		delete_set_seal(&inputs);
		for (size_t i = 0; i < inputs.n; i++)
			if (!delete_set_has(&kept, inputs.items[i]))
				json_array_append_new(r->dead_deletes, json_string(inputs.items[i]->file.file_path));
	}
	delete_set_free(&kept);
	delete_set_free(&inputs);
	return rc;
}

static int choose_inputs(compaction_run *r, tl_error *err)
{
	r->inputs = json_array();
	r->dead_deletes = json_array();
	if (!r->has_base)
		return 0;
	r->scan = tl_ice_scan_plan(r->lake->metadata, r->base_snapshot, NULL, err);
	if (r->scan == NULL)
		return -1;
	int n = tl_ice_scan_ntasks(r->scan);
	r->keep_ranges = r->t->has_lake_retention && tl_ice_metadata_default_spec(r->lake->metadata)->nfields == 0;
	r->chosen = tl_calloc((size_t)n + 1, sizeof(bool));
	r->order = tl_calloc((size_t)n + 1, sizeof(int));
	r->starts_partition = tl_calloc((size_t)n + 1, sizeof(bool));
	planned_file *files = tl_calloc((size_t)n + 1, sizeof(planned_file));
	if (r->chosen == NULL || r->order == NULL || r->starts_partition == NULL || files == NULL) {
		tl_free(files);
		return tl_error_nomem(err, "planning a compaction of %s", r->label);
	}
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		const tl_ice_scan_task *task = tl_ice_scan_task_at(r->scan, i);
		files[i].task = i;
		files[i].small = task->file.file_size_in_bytes < r->policy->small_file_bytes;
		files[i].has_deletes = task->ndeletes > 0;
		rc = partition_key(r, task, &files[i].key, err);
	}
	if (rc == 0) {
		qsort(files, (size_t)n, sizeof(planned_file), by_key);
		for (int lo = 0, hi; lo < n; lo = hi) {
			for (hi = lo + 1; hi < n && same_partition(&files[lo], &files[hi]); hi++)
				;
			choose_group(r, files + lo, hi - lo);
		}
		rc = choose_dead_deletes(r, err);
	}
	tl_free(files);
	return rc;
}

/* ------------------------------------------------------------ rewriting */

static void after_batch(void)
{
	tdb_fault("compaction-after-write");
}

/* Reads every input with its deletes applied into the writer. */
static int rewrite(compaction_run *r, tl_error *err)
{
	tl_ice_writer_options opts;
	if (tdb_lake_writer_options(r->c, r->t, r->lake, r->op_id, &opts, err) < 0)
		return -1;
	opts.target_file_bytes = r->policy->target_file_bytes;
	r->writer = tl_ice_writer_open_data(r->lake, &opts, err);
	tdb_lake_writer_options_free(&opts);
	if (r->writer == NULL)
		return -1;
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(r->lake->metadata);
	int32_t *ids = tl_calloc((size_t)schema->nfields + 1, sizeof(int32_t));
	if (ids == NULL)
		return tl_error_nomem(err, "rewriting %s", r->label);
	for (int i = 0; i < schema->nfields; i++)
		ids[i] = schema->fields[i].id;
	tdb_progress progress;
	tdb_progress_start(&progress, r->label, "compaction: rewriting");
	int rc = 0;
	for (int k = 0; k < r->ninputs && rc == 0; k++) {
		/* A partition's row group is finished before the next partition's inputs open another. */
		if (k > 0 && r->starts_partition[k])
			rc = tl_ice_writer_finish_open_files(r->writer, err);
		tl_ice_reader *reader = rc == 0 ? tl_ice_reader_open_task(r->scan, r->order[k], ids, schema->nfields, err) : NULL;
		tl_pq_batch *batch = reader != NULL ? tl_ice_reader_batch_new(reader, 4096) : NULL;
		if (reader != NULL && batch == NULL)
			rc = tl_error_nomem(err, "rewriting %s", r->label);
		else if (reader == NULL)
			rc = -1;
		for (int64_t got; rc == 0 && (got = tl_ice_reader_next(reader, batch, err)) != 0;) {
			if (got < 0 || tl_ice_writer_write(r->writer, batch, err) < 0) {
				rc = -1;
				break;
			}
			tdb_progress_add(&progress, got, 0);
			after_batch();
		}
		tl_pq_batch_free(batch);
		tl_ice_reader_free(reader);
		tdb_progress_add(&progress, 0, tl_ice_scan_task_at(r->scan, r->order[k])->file.file_size_in_bytes);
	}
	tl_free(ids);
	if (rc == 0)
		rc = tl_ice_writer_close(r->writer, err);
	tdb_progress_done(&progress, rc == 0 ? "written" : "failed");
	return rc;
}

/* ------------------------------------------------------------ commit and publish */

/* tdb_lake_op's commit: one REPLACE snapshot stamped with the op id (a failed commit that landed is found by it). */
static int commit_rewrite(void *arg, tl_error *err)
{
	compaction_run *r = arg;
	if (tl_ice_table_refresh(r->lake, err) < 0 ||
	    tdb_lake_check_published(r->lake, r->base_snapshot, "compaction", err) < 0)
		return -1;
	tl_ice_commit *commit = tl_ice_commit_begin(r->lake, TL_ICE_OP_REPLACE, err);
	if (commit == NULL)
		return -1;
	int rc = 0;
	json_t *lists[] = {r->inputs, r->dead_deletes};
	for (int l = 0; l < 2 && rc == 0; l++)
		for (size_t i = 0; i < json_array_size(lists[l]) && rc == 0; i++)
			rc = tl_ice_commit_remove_file(commit, json_string_value(json_array_get(lists[l], i)), err);
	for (int i = 0; i < tl_ice_writer_nfiles(r->writer) && rc == 0; i++)
		rc = tl_ice_commit_add_file(commit, tl_ice_writer_file(r->writer, i), err);
	tl_ice_commit_set_summary(commit, "tierdb.op-id", r->op_id);
	if (rc == 0)
		rc = tl_ice_commit_finish(commit, &r->snapshot_id, err);
	tl_ice_commit_free(commit);
	if (rc == 0) {
		r->committed = true;
		return 0;
	}
	int landed = tdb_lake_commit_landed(r->lake, r->op_id, &r->snapshot_id);
	if (landed == 0)
		return -1;
	r->committed = true; /* landed, or unknown: recovery decides on the lake's word */
	return landed > 0 ? 0 : -1;
}

/* tdb_lake_op's publish: S moves to the new snapshot (guarded on the old one), phase 'done'. */
static int publish(void *arg, tl_error *err)
{
	compaction_run *r = arg;
	if (tdb_publish_snapshot_begin(r->c, r->label, r->t->table_id, "compaction", r->op_id, r->committed,
	                               r->base_snapshot, r->snapshot_id, r->lake, err) < 0 ||
	    tdb_oplog_set_phase(r->c, r->op_id, "done", r->committed ? &r->snapshot_id : NULL, err) < 0)
		return -1;
	tdb_fault("compaction-before-publish-commit");
	return tdb_pg_exec(r->c, "publishing the compaction", "COMMIT", 0, NULL, err);
}

static char *run_details(const compaction_run *r)
{
	json_t *d = json_pack("{s:s, s:I, s:O, s:O, s:I, s:I}", "kind", "compaction", "base_snapshot",
	                      (json_int_t)r->base_snapshot, "inputs", r->inputs, "removed_deletes", r->dead_deletes,
	                      "input_bytes", (json_int_t)r->input_bytes, "input_rows", (json_int_t)r->input_rows);
	char *text = json_dumps(d, JSON_COMPACT);
	json_decref(d);
	return text;
}

/* Undoes a run that never committed: its files go, the journal says aborted. */
static void abandon(compaction_run *r)
{
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_abort_transaction(r->c);
	if (r->writer != NULL)
		tdb_lake_remove_files(r->writer, r->label, "compaction");
	if (tdb_oplog_set_phase(r->c, r->op_id, "aborted", NULL, &ignored) < 0)
		tdb_log(r->label, "compaction: could not mark operation %s aborted: %s", r->op_id, ignored.message);
}

static int run_compaction(compaction_run *r, tdb_maintenance_result *result, tl_error *err)
{
	r->lake = tdb_lake_open(r->t, err);
	if (r->lake == NULL ||
	    tdb_lake_check_published(r->lake, r->has_base ? r->base_snapshot : TL_ICE_NO_SNAPSHOT, "compaction", err) < 0 ||
	    choose_inputs(r, err) < 0)
		return -1;
	if (r->ninputs == 0)
		return 0;
	char *details = run_details(r);
	int rc = tdb_oplog_begin(r->c, r->t->table_id, "compaction", "writing", details, r->op_id, err);
	free(details);
	if (rc < 0)
		return -1;
	tdb_log(r->label, "compaction: operation %s rewrites %d data file%s (%" PRId64 " bytes, %" PRId64
	                  " rows before deletes) and removes %zu delete file%s",
	        r->op_id, r->ninputs, r->ninputs == 1 ? "" : "s", r->input_bytes, r->input_rows,
	        json_array_size(r->dead_deletes), json_array_size(r->dead_deletes) == 1 ? "" : "s");
	if (rewrite(r, err) < 0 ||
	    tdb_oplog_record_files(r->c, r->op_id, (const tl_ice_writer *const[]){r->writer}, 1, NULL, err) < 0 ||
	    tdb_oplog_set_phase(r->c, r->op_id, "committing", NULL, err) < 0) {
		abandon(r);
		return -1;
	}
	tdb_fault("compaction-before-lock");
	tdb_lake_op op = {.c = r->c, .table_id = r->t->table_id, .op_id = r->op_id, .step = "compaction",
	                  .fault_prefix = "compaction", .check_pins = false, .need_commit = true,
	                  .commit = commit_rewrite, .publish = publish, .arg = r, .committed = &r->committed,
	                  .snapshot_id = &r->snapshot_id};
	bool blocked;
	if (tdb_lake_op_finish(&op, &blocked, err) < 0) {
		if (!r->committed)
			abandon(r);
		return -1;
	}
	int64_t out_bytes = 0;
	for (int i = 0; i < tl_ice_writer_nfiles(r->writer); i++)
		out_bytes += tl_ice_writer_file(r->writer, i)->file_size_in_bytes;
	result->files_rewritten += r->ninputs;
	result->files_written += tl_ice_writer_nfiles(r->writer);
	result->delete_files_removed += (int64_t)json_array_size(r->dead_deletes);
	result->bytes_rewritten += r->input_bytes;
	result->rows_written += tl_ice_writer_rows(r->writer);
	tdb_log(r->label, "compaction: operation %s replaced %d data file%s and %zu delete file%s with %d file%s (%" PRId64
	                  " rows, %" PRId64 " bytes) as snapshot %" PRId64,
	        r->op_id, r->ninputs, r->ninputs == 1 ? "" : "s", json_array_size(r->dead_deletes),
	        json_array_size(r->dead_deletes) == 1 ? "" : "s", tl_ice_writer_nfiles(r->writer),
	        tl_ice_writer_nfiles(r->writer) == 1 ? "" : "s", tl_ice_writer_rows(r->writer), out_bytes,
	        r->snapshot_id);
	return 0;
}

int tdb_compact(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *policy, bool requested,
                tdb_maintenance_result *result, tl_error *err)
{
	compaction_run r;
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.t = t;
	r.policy = policy;
	r.requested = requested;
	r.label = tdb_table_label(t);
	r.has_base = t->has_snapshot;
	r.base_snapshot = t->has_snapshot ? t->snapshot_id : TL_ICE_NO_SNAPSHOT;
	tl_arena_init(&r.arena, 16 * 1024);
	int rc = run_compaction(&r, result, err);
	if (rc < 0 && r.op_id[0] != '\0')
		tl_error_prefix(err, "compaction %s", r.op_id);
	tdb_abort_transaction(c);
	tl_ice_writer_free(r.writer);
	json_decref(r.inputs);
	json_decref(r.dead_deletes);
	tl_free(r.chosen);
	tl_free(r.order);
	tl_free(r.starts_partition);
	tl_ice_scan_free(r.scan);
	tl_arena_free(&r.arena);
	tl_ice_table_free(r.lake);
	return rc;
}

/* ------------------------------------------------------------ recovery */

static int settle_run(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase, json_t *details,
                      tl_error *err)
{
	const char *label = tdb_table_label(t);
	json_t *base = json_object_get(details, "base_snapshot");
	if (!json_is_integer(base))
		return tl_error_set(err, TL_ERR_CORRUPT, "the journal of compaction %s lacks its base snapshot", op_id);
	tl_ice_table *lake = tdb_lake_open(t, err);
	if (lake == NULL)
		return -1;
	int rc = 1;
	const tl_ice_snapshot *snap = tdb_lake_snapshot_of_op(lake, op_id);
	if (snap == NULL && strcmp(phase, "committed") == 0) {
		rc = tl_error_set(err, TL_ERR_CONFLICT,
		                  "compaction %s is journaled as committed but the lake table %s has no snapshot stamped "
		                  "with it; an operator must check the table",
		                  op_id, lake->location);
	} else if (snap == NULL) {
		int deleted = 0, missing = 0;
		tdb_lake_remove_op_files(lake, json_object_get(details, "files"), label, op_id, &deleted, &missing);
		if (tdb_oplog_set_phase(c, op_id, "aborted", NULL, err) < 0)
			rc = -1;
		else
			tdb_log(label, "compaction: interrupted operation %s never reached the lake; removed its %d file%s",
			        op_id, deleted, deleted == 1 ? "" : "s");
	} else if (tdb_lake_current_snapshot(lake) != snap->snapshot_id) {
		rc = tl_error_set(err, TL_ERR_CONFLICT,
		                  "compaction %s committed snapshot %" PRId64 " but the lake table %s has moved on to %" PRId64
		                  "; an operator must check the table",
		                  op_id, snap->snapshot_id, lake->location, tdb_lake_current_snapshot(lake));
	} else {
		compaction_run r;
		memset(&r, 0, sizeof(r));
		r.c = c;
		r.t = t;
		r.label = label;
		snprintf(r.op_id, sizeof(r.op_id), "%s", op_id);
		r.lake = lake;
		r.base_snapshot = json_integer_value(base);
		r.committed = true;
		r.snapshot_id = snap->snapshot_id;
		if (publish(&r, err) < 0) {
			tdb_abort_transaction(c);
			rc = -1;
		} else {
			tdb_log(label, "compaction: adopted interrupted operation %s (snapshot %" PRId64 ")", op_id,
			        r.snapshot_id);
		}
	}
	tl_ice_table_free(lake);
	return rc;
}

int tdb_recover_compaction(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	return tdb_settle_interrupted(c, t, "compaction", "compaction", settle_run, err);
}
