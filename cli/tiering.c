/*
 * tiering.c: moving whole heap partitions into the lake, and dropping them
 * once no reader needs them (SPEC §5, §8; ARCHITECTURE decisions 5 and 6).
 *
 * One run takes every partition that lies wholly behind max(tier_key) - lag,
 * contiguous from the cut-line T upward (T may only advance across
 * consecutive partitions, or rows in a gap would vanish from every read):
 *
 *   1. journal the run (op_log phase 'sealing');
 *   2. seal the partitions: a trigger refuses every write to them. Creating
 *      it takes a lock that waits out in-flight writers, so once the seal
 *      commits no transaction can still add a row the copy would miss
 *      (phase 'writing');
 *   3. stream the partitions out in one snapshot with binary COPY, decode
 *      into column batches and write Parquet data files;
 *   4. commit them as one lake snapshot stamped with the op id, under the
 *      table's lake advisory lock (phase 'committed');
 *   5. advance (T, S, lake_props) and mark the partitions tiered in one
 *      transaction (phase 'published').
 *
 * Until step 5 commits, readers see the rows in the heap only; from then on
 * in the lake only: each row is in exactly one place at every instant.
 * A run that fails before its lake commit is undone (files deleted, seal
 * removed, phase 'aborted'); one that fails after it is left for recovery,
 * which finds the commit by its op id.
 *
 * The drop comes later and separately: a tiered partition is dropped when
 * no unexpired read pin still reads the heap below its upper bound, after
 * in-database readers have been waited out on the table's reader key.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon.h"
#include "lake_catalog.h"
#include "fault.h"
#include "lakestep.h"
#include "metrics.h"
#include "mirror.h"
#include "pg.h"
#include "pgcopy.h"
#include "pgtypes.h"
#include "recovery.h"
#include "schema_evolution.h"
#include "tiering.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/io.h"

/* Rows per decoded batch: the writer's unit of work; memory is one batch plus one row group per file. */
#define TIERING_BATCH_ROWS 65536

/* One tiering run of one table. */
typedef struct tier_run {
	PGconn *c;
	const tdb_catalog_table *t;
	const char *label;
	const tdb_heap_partition *parts; /* the run: consecutive partitions from T */
	int nparts;
	int64_t new_t;              /* the upper bound of the last one */
	char op_id[37];
	tl_ice_table *lake;
	tdb_pg_column *cols;
	int ncols;
	tl_ice_writer *writer;
	int64_t rows;
	int64_t bytes;
	int64_t snapshot_id;
	bool has_base;              /* the S the run commits on: t's, or a newer one another writer published */
	int64_t base_s;
	json_t *digests; /* partition_id -> the digest of the rows copied (digest.h), for `tierdb verify` */
} tier_run;

/* ------------------------------------------------------------ choosing partitions */

/*
 * The run: consecutive plain partitions starting exactly at T, each ending
 * at or before the cutoff. Sets *first and returns how many.
 */
static int choose_run(const tdb_catalog_table *t, const tdb_heap_partition *parts, int n, int64_t cutoff, int *first)
{
	int count = 0;
	int64_t next = t->cutline_t;
	*first = 0;
	for (int i = 0; i < n; i++) {
		if (parts[i].hi <= t->cutline_t)
			continue; /* tiered already, waiting for its drop */
		if (count == 0)
			*first = i;
		if (parts[i].lo != next || parts[i].is_partitioned || parts[i].hi > cutoff)
			break;
		count++;
		next = parts[i].hi;
	}
	return count;
}

/*
 * The run over the table's partitions behind `cutoff` (choose_run) into r,
 * with the partitions read into *parts (free them after the run): 0 and
 * r->nparts = 0 when there is none.
 */
static int plan_run(PGconn *c, const tdb_catalog_table *t, int64_t cutoff, tier_run *r, tdb_heap_partition **parts,
                    int *n, tl_error *err)
{
	int first;
	memset(r, 0, sizeof(*r));
	if (tdb_range_partitions(c, t, parts, n, err) < 0)
		return -1;
	r->c = c;
	r->t = t;
	r->has_base = t->has_snapshot;
	r->base_s = t->snapshot_id;
	r->label = tdb_table_label(t);
	r->nparts = choose_run(t, *parts, *n, cutoff, &first);
	r->parts = &(*parts)[first];
	r->new_t = r->nparts > 0 ? (*parts)[first + r->nparts - 1].hi : t->cutline_t;
	return 0;
}

/*
 * The lake must still be at the published snapshot S: a newer snapshot
 * means an operation committed without publishing, and building on it
 * would publish that operation's rows unseen.
 */
static int check_lake_at_s(const tier_run *r, tl_error *err)
{
	return tdb_lake_check_published(r->lake, r->has_base ? r->base_s : TL_ICE_NO_SNAPSHOT, "tiering", err);
}

/* ------------------------------------------------------------ journal and seal */

static char *run_details(const tier_run *r)
{
	json_t *names = json_array();
	for (int i = 0; i < r->nparts; i++)
		json_array_append_new(names, json_string(r->parts[i].partition_id));
	json_t *details = json_pack("{s:o, s:I, s:I}", "partitions", names, "tier_key_lo",
	                            (json_int_t)r->parts[0].lo, "tier_key_hi", (json_int_t)r->new_t);
	char *text = json_dumps(details, JSON_COMPACT);
	json_decref(details);
	return text;
}

/* Appends a CREATE OR REPLACE TRIGGER for the guard on partition p. */
static void append_guard_trigger(const tdb_heap_partition *p, const char *name, const char *events, const char *level,
                                 tl_buf *sql)
{
	tl_buf_printf(sql, "CREATE OR REPLACE TRIGGER %s BEFORE %s ON ", name, events);
	tdb_pg_quote_qualified(p->schema, p->name, sql);
	tl_buf_printf(sql, " FOR EACH %s EXECUTE FUNCTION tierdb.sealed_partition_guard()", level);
}

/*
 * Seals one partition. The statement trigger catches statements naming the
 * partition (and TRUNCATE); the row trigger catches rows routed to it
 * through the parent, which fire only the parent's statement triggers.
 */
static int seal_partition(const tier_run *r, const tdb_heap_partition *p, tl_error *err)
{
	char id[24], lo[24], hi[24];
	tdb_int_text(r->t->table_id, id);
	tdb_int_text(p->lo, lo);
	tdb_int_text(p->hi, hi);
	const char *params[] = {id, p->partition_id, lo, hi};
	if (tdb_pg_exec(r->c, "recording a partition as sealing",
	                "INSERT INTO tierdb.partitions (table_id, partition_id, tier_key_lo, tier_key_hi, state)"
	                " VALUES ($1, $2, $3, $4, 'sealing')"
	                " ON CONFLICT (table_id, partition_id) DO UPDATE SET state = 'sealing',"
	                " tier_key_lo = EXCLUDED.tier_key_lo, tier_key_hi = EXCLUDED.tier_key_hi, updated_at = now()",
	                4, params, err) < 0)
		return -1;
	tl_buf sql;
	tl_buf_init(&sql);
	append_guard_trigger(p, "tierdb_sealed", "INSERT OR UPDATE OR DELETE OR TRUNCATE", "STATEMENT", &sql);
	int rc = tdb_pg_exec(r->c, "sealing a partition", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_reset(&sql);
	append_guard_trigger(p, "tierdb_sealed_rows", "INSERT OR UPDATE OR DELETE", "ROW", &sql);
	if (rc == 0)
		rc = tdb_pg_exec(r->c, "sealing a partition", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	return rc;
}

/* Seals every partition of the run and moves the journal to 'writing', in one transaction. */
static int seal_run(const tier_run *r, tl_error *err)
{
	if (tdb_pg_exec(r->c, "starting the seal", "BEGIN", 0, NULL, err) < 0)
		return -1;
	for (int i = 0; i < r->nparts; i++)
		if (seal_partition(r, &r->parts[i], err) < 0)
			return -1;
	if (tdb_oplog_set_phase(r->c, r->op_id, "writing", NULL, err) < 0 ||
	    tdb_pg_exec(r->c, "committing the seal", "COMMIT", 0, NULL, err) < 0)
		return -1;
	return 0;
}

/* Undoes the seal of a run that never reached the lake; the journal says 'aborted'. */
static int unseal_run(const tier_run *r, tl_error *err)
{
	tdb_abort_transaction(r->c);
	if (tdb_pg_exec(r->c, "starting to undo the seal", "BEGIN", 0, NULL, err) < 0)
		return -1;
	char id[24];
	tdb_int_text(r->t->table_id, id);
	for (int i = 0; i < r->nparts; i++) {
		const tdb_heap_partition *p = &r->parts[i];
		int rc = 0;
		for (int k = 0; k < 2 && rc == 0; k++) {
			tl_buf sql;
			tl_buf_init(&sql);
			tl_buf_printf(&sql, "DROP TRIGGER IF EXISTS %s ON ", k == 0 ? "tierdb_sealed" : "tierdb_sealed_rows");
			tdb_pg_quote_qualified(p->schema, p->name, &sql);
			rc = tdb_pg_exec(r->c, "removing a partition's seal", tdb_buf_cstr(&sql), 0, NULL, err);
			tl_buf_free(&sql);
		}
		const char *params[] = {id, p->partition_id};
		if (rc < 0 || tdb_pg_exec(r->c, "recording a partition as hot again",
		                          "UPDATE tierdb.partitions SET state = 'hot', updated_at = now()"
		                          " WHERE table_id = $1 AND partition_id = $2",
		                          2, params, err) < 0)
			return -1;
	}
	if (tdb_oplog_set_phase(r->c, r->op_id, "aborted", NULL, err) < 0 ||
	    tdb_pg_exec(r->c, "committing the undone seal", "COMMIT", 0, NULL, err) < 0)
		return -1;
	return 0;
}

/*
 * Gives up a run that never reached the lake: unseals it and says so. If
 * even that fails, the journal keeps the run's phase for recovery.
 */
static void abandon_run(const tier_run *r)
{
	tl_error undo;
	tl_error_clear(&undo);
	if (unseal_run(r, &undo) < 0)
		tdb_log(r->label, "tiering: undoing the seal of operation %s failed, recovery will: %s", r->op_id,
		        undo.message);
	else
		tdb_log(r->label, "tiering: operation %s aborted before its lake commit; seal removed, retrying next cycle",
		        r->op_id);
}

/* ------------------------------------------------------------ streaming */

/* The copy's fault point: after the writer took a batch. */
static void copy_flushed(void)
{
	tdb_fault("tiering-mid-copy");
}

/* Streams one partition with binary COPY (inside the run's snapshot). */
static int copy_partition(tier_run *r, const tdb_heap_partition *p, tl_pq_batch *batch, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "COPY (SELECT ");
	tdb_pg_copy_select_list(r->cols, r->ncols, &sql);
	tl_buf_append_str(&sql, " FROM ONLY ");
	tdb_pg_quote_qualified(p->schema, p->name, &sql);
	tl_buf_append_str(&sql, ") TO STDOUT (FORMAT binary)");
	char what[200];
	snprintf(what, sizeof(what), "tiering: copying %s", p->name);
	tdb_progress progress;
	tdb_progress_start(&progress, r->label, what);
	snprintf(what, sizeof(what), "copying %s.%s out", p->schema, p->name);
	tdb_digest digest = {0};
	int rc = tdb_copy_into_writer(r->c, tdb_buf_cstr(&sql), what, r->cols, r->ncols, r->writer, batch, &progress,
	                              &digest, copy_flushed, err);
	tl_buf_free(&sql);
	/* One heap partition feeds one or a few lake partitions: finishing their
	 * files here bounds the writer's memory by a row group. */
	if (rc == 0)
		rc = tl_ice_writer_finish_open_files(r->writer, err);
	if (rc == 0) {
		tdb_progress_done(&progress, "copied");
		json_object_set_new(r->digests, p->partition_id, tdb_digest_to_json(&digest));
		r->rows += progress.rows;
		r->bytes += progress.bytes;
	}
	return rc;
}

/* Writes every partition of the run into data files, all read in one snapshot. */
static int write_run(tier_run *r, tl_error *err)
{
	tl_ice_writer_options opts;
	if (tdb_lake_writer_options(r->c, r->t, r->lake, r->op_id, &opts, err) < 0)
		return -1;
	r->writer = tl_ice_writer_open_data(r->lake, &opts, err);
	tdb_lake_writer_options_free(&opts);
	if (r->writer == NULL)
		return -1;
	tl_pq_batch *batch = tl_pq_batch_new(tl_ice_writer_schema(r->writer), TIERING_BATCH_ROWS);
	int rc = tdb_pg_exec(r->c, "starting the copy snapshot", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0,
	                     NULL, err);
	for (int i = 0; rc == 0 && i < r->nparts; i++) {
		if (tdb_daemon_stopping())
			rc = tl_error_set(err, TL_ERR_INVALID, "stopped on request before %s was copied", r->parts[i].name);
		else
			rc = copy_partition(r, &r->parts[i], batch, err);
	}
	if (rc == 0)
		rc = tdb_pg_exec(r->c, "ending the copy snapshot", "COMMIT", 0, NULL, err);
	tl_pq_batch_free(batch);
	if (rc == 0)
		rc = tl_ice_writer_close(r->writer, err);
	return rc;
}

/*
 * Commits the written files as one snapshot stamped with the op id. After
 * a failure the table is reread: a commit that landed despite the error
 * (its metadata file was written) is found by its op id. Returns 0
 * committed, -1 with *landed false when nothing reached the lake.
 */
static int commit_run(tier_run *r, bool *landed, tl_error *err)
{
	*landed = false;
	if (tl_ice_table_refresh(r->lake, err) < 0 || check_lake_at_s(r, err) < 0)
		return -1;
	tl_ice_commit *commit = tl_ice_commit_begin(r->lake, TL_ICE_OP_APPEND, err);
	if (commit == NULL)
		return -1;
	int rc = 0;
	for (int i = 0; rc == 0 && i < tl_ice_writer_nfiles(r->writer); i++)
		rc = tl_ice_commit_add_file(commit, tl_ice_writer_file(r->writer, i), err);
	tl_ice_commit_set_summary(commit, "tierdb.op-id", r->op_id);
	if (rc == 0)
		rc = tl_ice_commit_finish(commit, &r->snapshot_id, err);
	tl_ice_commit_free(commit);
	if (rc == 0) {
		*landed = true;
		return 0;
	}
	tl_error reread;
	tl_error_clear(&reread);
	if (tl_ice_table_refresh(r->lake, &reread) < 0) {
		*landed = true; /* unknown: leave it to recovery rather than undo a commit that may exist */
		return -1;
	}
	const tl_ice_snapshot *found = tdb_lake_snapshot_of_op(r->lake, r->op_id);
	if (found != NULL) {
		r->snapshot_id = found->snapshot_id;
		*landed = true;
		return 0;
	}
	return -1;
}

/* Advances (T, S, lake_props), marks the partitions tiered and the journal published: one transaction. */
static int publish_run(tier_run *r, tl_error *err)
{
	char id[24];
	tdb_int_text(r->t->table_id, id);
	if (tdb_pg_exec(r->c, "starting to publish", "BEGIN", 0, NULL, err) < 0)
		return -1;
	/* The guard on the old (T, S) refuses to publish over anyone else's advance. */
	bool published;
	if (tdb_cutline_publish(r->c, r->t->table_id, true, r->t->cutline_t, r->new_t,
	                        r->has_base ? r->base_s : TL_ICE_NO_SNAPSHOT, r->snapshot_id, r->lake,
	                        &published, err) < 0)
		return -1;
	if (!published)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "the cut-line of %s moved while tiering (expected T %" PRId64 "); operation %s is "
		                    "committed to the lake as snapshot %" PRId64 " and awaits recovery",
		                    r->label, r->t->cutline_t, r->op_id, r->snapshot_id);
	for (int i = 0; i < r->nparts; i++) {
		const char *pparams[] = {id, r->parts[i].partition_id};
		if (tdb_pg_exec(r->c, "recording a partition as tiered",
		                "UPDATE tierdb.partitions SET state = 'tiered', updated_at = now()"
		                " WHERE table_id = $1 AND partition_id = $2",
		                2, pparams, err) < 0)
			return -1;
	}
	if (tdb_oplog_set_phase(r->c, r->op_id, "published", NULL, err) < 0 ||
	    tdb_pg_exec(r->c, "committing the new cut-line", "COMMIT", 0, NULL, err) < 0)
		return -1;
	return 0;
}

/*
 * Under the lake lock: the S the run commits on. An ingest, a Stream Load
 * or a direct-mode transaction may have published a newer S while the run
 * copied its partitions (they hold the lock only to commit); the run's
 * files then go on top of it. That is safe: their rows are all below T,
 * the run's at or above it, and the equality deletes they committed apply
 * only to older files than the run's. T itself moves only by tiering.
 */
static int rebase(tier_run *r, tl_error *err)
{
	tdb_catalog_table now;
	int found = tdb_catalog_load_table_by_id(r->c, r->t->table_id, &now, err);
	if (found <= 0)
		return found < 0 ? -1 : tl_error_set(err, TL_ERR_NOT_FOUND, "%s was unregistered", r->label);
	int rc = 0;
	if (now.cutline_t != r->t->cutline_t)
		rc = tl_error_set(err, TL_ERR_CONFLICT, "the cut-line of %s moved while tiering ran", r->label);
	else if (now.has_snapshot != r->has_base || now.snapshot_id != r->base_s) {
		tdb_log(r->label, "tiering: operation %s commits on snapshot %" PRId64 ", which another writer published "
		        "while it copied", r->op_id, now.snapshot_id);
		r->has_base = now.has_snapshot;
		r->base_s = now.snapshot_id;
	}
	tdb_catalog_table_free(&now);
	return rc;
}

/* Steps 4 and 5 under the lake lock. */
static int commit_and_publish(tier_run *r, tl_error *err)
{
	if (tdb_lake_lock(r->c, r->t->table_id, true, err) < 0)
		return -1;
	bool landed = false;
	int rc = rebase(r, err);
	if (rc == 0)
		rc = commit_run(r, &landed, err);
	if (rc < 0 && !landed) {
		tdb_lake_remove_files(r->writer, r->label, "tiering");
		abandon_run(r);
	}
	if (rc == 0)
		tdb_fault("tiering-after-commit");
	if (rc == 0)
		rc = tdb_oplog_set_phase(r->c, r->op_id, "committed", &r->snapshot_id, err);
	if (rc == 0)
		tdb_fault("tiering-after-commit-recorded");
	if (rc == 0)
		rc = publish_run(r, err);
	if (rc < 0)
		tdb_abort_transaction(r->c);
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_lake_lock(r->c, r->t->table_id, false, &ignored);
	return rc;
}

/* ------------------------------------------------------------ a run */

static int run_tiering(tier_run *r, tl_error *err)
{
	double started = tdb_metrics_clock();
	r->lake = tdb_lake_open(r->t, err);
	if (r->lake == NULL)
		return -1;
	if (tdb_pg_table_columns(r->c, (uint32_t)r->t->table_id, &r->cols, &r->ncols, err) < 0 ||
	    tdb_lake_follow_columns(r->c, r->t->table_id, r->lake, r->cols, r->ncols, r->label, "tiering", err) < 0 ||
	    check_lake_at_s(r, err) < 0)
		return -1;

	char *details = run_details(r);
	int rc = tdb_oplog_begin(r->c, r->t->table_id, "tiering", "sealing", details, r->op_id, err);
	free(details);
	if (rc < 0)
		return -1;
	tdb_fault("tiering-before-seal");
	if (seal_run(r, err) < 0) {
		tdb_abort_transaction(r->c);
		abandon_run(r);
		return -1;
	}
	tdb_log(r->label, "tiering: operation %s sealed %d partition%s [%" PRId64 ", %" PRId64 ")", r->op_id,
	        r->nparts, r->nparts == 1 ? "" : "s", r->parts[0].lo, r->new_t);
	tdb_fault("tiering-after-seal");

	if (write_run(r, err) < 0) {
		tdb_abort_transaction(r->c);
		tl_ice_writer_free(r->writer); /* deletes the files of an unclosed writer */
		r->writer = NULL;
		abandon_run(r);
		return -1;
	}
	/* Journaled before the commit, so a rollback after a crash knows which files to delete;
	 * the digests let `tierdb verify` check the lake against the rows once the heap is gone. */
	json_t *extra = json_pack("{s:O}", "digests", r->digests);
	int recorded = tdb_oplog_record_files(r->c, r->op_id, (const tl_ice_writer *const[]){r->writer}, 1, extra, err);
	json_decref(extra);
	if (recorded < 0) {
		tdb_lake_remove_files(r->writer, r->label, "tiering");
		abandon_run(r);
		return -1;
	}
	tdb_fault("tiering-before-commit");
	if (commit_and_publish(r, err) < 0)
		return -1;
	tdb_fault("tiering-after-publish");
	int nfiles = tl_ice_writer_nfiles(r->writer);
	int64_t lake_bytes = 0;
	for (int i = 0; i < nfiles; i++)
		lake_bytes += tl_ice_writer_file(r->writer, i)->file_size_in_bytes;
	tdb_log(r->label,
	        "tiering: operation %s moved %" PRId64 " rows (%.1f MB of COPY data) into %d Parquet file%s "
	        "(%.1f MB) as snapshot %" PRId64 "; T %" PRId64 " -> %" PRId64,
	        r->op_id, r->rows, (double)r->bytes / 1e6, nfiles, nfiles == 1 ? "" : "s", (double)lake_bytes / 1e6,
	        r->snapshot_id, r->t->cutline_t, r->new_t);
	tdb_metrics_moved(r->label, TDB_METRICS_TIERING, r->rows, lake_bytes, tdb_metrics_clock() - started);
	return 0;
}

/* The cutoff max(tier_key) - lag; false when nothing can lie behind it. */
static int tiering_cutoff(PGconn *c, const tdb_catalog_table *t, const char *lag_text, bool *any, int64_t *cutoff,
                          tl_error *err)
{
	int64_t lag, max_key;
	*any = false;
	if (tdb_key_parse_lag(t->tier_key_type, lag_text, "TIERDB_TIERING_LAG", &lag, err) < 0 ||
	    tdb_heap_max_key(c, t, any, &max_key, err) < 0)
		return -1;
	if (*any && __builtin_sub_overflow(max_key, lag, cutoff))
		*any = false;
	return 0;
}

int tdb_tier(PGconn *c, const tdb_catalog_table *t, const char *lag, tl_error *err)
{
	const char *label = tdb_table_label(t);
	/* An interrupted run holds sealed partitions; settle it first (recovery.h). */
	int recovered = tdb_recover_tiering(c, t, err);
	if (recovered != 0)
		return recovered < 0 ? -1 : 0; /* `t` predates the recovery: tier next cycle */
	bool any;
	int64_t cutoff;
	if (tiering_cutoff(c, t, lag, &any, &cutoff, err) < 0)
		return -1;
	if (!any) {
		tdb_log(label, "tiering: the heap is empty; nothing to move");
		return 0;
	}
	tdb_heap_partition *parts;
	int n;
	tier_run r;
	if (plan_run(c, t, cutoff, &r, &parts, &n, err) < 0)
		return -1;
	if (r.nparts == 0) {
		tdb_log(label, "tiering: no whole partition from T %" PRId64 " lies behind the cutoff %" PRId64,
		        t->cutline_t, cutoff);
		tdb_heap_partitions_free(parts, n);
		return 0;
	}
	r.digests = json_object();
	int rc = run_tiering(&r, err);
	if (rc < 0 && r.op_id[0] != '\0')
		tl_error_prefix(err, "operation %s", r.op_id);
	json_decref(r.digests);
	tl_ice_writer_free(r.writer);
	tl_ice_table_free(r.lake);
	tdb_pg_columns_free(r.cols, r.ncols);
	tdb_heap_partitions_free(parts, n);
	return rc;
}

/* ------------------------------------------------------------ a mirrored table's heap window */

/* Step 2: runs the pump until F passes the WAL position now (after the seal); *fresh is the table as it left it. */
static int mirror_past_seal(PGconn *c, const tdb_catalog_table *t, const tdb_mirror_config *mc,
                            tdb_catalog_table *fresh, tl_error *err)
{
	PGresult *res = tdb_pg_query(c, "reading the WAL position after the seal",
	                             "SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint", 0, NULL, err);
	if (res == NULL)
		return -1;
	int64_t sealed_at = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	/* the pump streams to the WAL position at its start, which is past the seal */
	if (tdb_mirror_pump(c, t, mc, err) < 0)
		return -1;
	int found = tdb_catalog_load_table_by_id(c, t->table_id, fresh, err);
	if (found <= 0)
		return found < 0 ? -1 : tl_error_set(err, TL_ERR_NOT_FOUND, "%s was unregistered", tdb_table_label(t));
	if (!fresh->has_replicated_lsn || fresh->replicated_lsn < sealed_at)
		return tl_error_set(err, TL_ERR_CONFLICT, "the mirror of %s did not reach the WAL position of the seal",
		                    tdb_table_label(t));
	return 0;
}

/* Step 3 under the lake lock: T over the run, S as the pump published it. */
static int publish_retired(tier_run *r, const tdb_catalog_table *fresh, tl_error *err)
{
	r->t = fresh;
	r->has_base = fresh->has_snapshot;
	r->base_s = fresh->snapshot_id;
	r->snapshot_id = fresh->snapshot_id;
	r->lake = tdb_lake_open(fresh, err);
	if (r->lake == NULL || tdb_lake_lock(r->c, fresh->table_id, true, err) < 0)
		return -1;
	int rc = publish_run(r, err);
	if (rc < 0)
		tdb_abort_transaction(r->c);
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_lake_lock(r->c, fresh->table_id, false, &ignored);
	return rc;
}

/*
 * Retires the partitions of a mirrored table with --heap-retention that lie
 * wholly behind max(tier_key) - N, contiguous from T: the mirror already
 * holds their rows, so nothing is copied. Journaled as a tiering run:
 *
 *   1. seal them (phase 'writing'): no write reaches them any more;
 *   2. run the pump until F passes the WAL position after the seal, so the
 *      lake holds every change the sealed partitions ever had;
 *   3. advance T over them with S as the pump left it, mark them tiered
 *      (phase 'published'); the drop step drops them once no reader needs
 *      them, as for a tiered table.
 *
 * A crash before 3 leaves a run without a lake commit, which recovery
 * undoes (the seal goes, the next cycle retries); after 3, only the drop
 * is left. Fault points heap-retention-after-seal, -after-publish.
 */
int tdb_retire_heap_window(PGconn *c, const tdb_catalog_table *t, const tdb_mirror_config *mc, tl_error *err)
{
	if (!t->has_heap_retention || t->copying || !t->has_replicated_lsn)
		return 0;
	const char *label = tdb_table_label(t);
	int recovered = tdb_recover_tiering(c, t, err);
	if (recovered != 0)
		return recovered < 0 ? -1 : 0;
	bool any;
	int64_t max_key, cutoff;
	if (tdb_heap_max_key(c, t, &any, &max_key, err) < 0)
		return -1;
	if (!any || __builtin_sub_overflow(max_key, t->heap_retention_lag, &cutoff))
		return 0;
	tdb_heap_partition *parts;
	int n;
	tier_run r;
	if (plan_run(c, t, cutoff, &r, &parts, &n, err) < 0)
		return -1;
	if (r.nparts == 0) {
		tdb_heap_partitions_free(parts, n);
		return 0;
	}
	tdb_catalog_table fresh;
	memset(&fresh, 0, sizeof(fresh));
	char *details = run_details(&r);
	int rc = tdb_oplog_begin(c, t->table_id, "tiering", "sealing", details, r.op_id, err);
	free(details);
	if (rc == 0)
		rc = seal_run(&r, err);
	if (rc == 0)
		tdb_fault("heap-retention-after-seal");
	if (rc == 0)
		rc = mirror_past_seal(c, t, mc, &fresh, err);
	if (rc == 0)
		rc = publish_retired(&r, &fresh, err);
	if (rc == 0) {
		tdb_fault("heap-retention-after-publish");
		tdb_log(label,
		        "heap retention: operation %s retired %d partition%s [%" PRId64 ", %" PRId64 ") the mirror holds; "
		        "T %" PRId64 " -> %" PRId64 "; they are dropped once no reader needs them",
		        r.op_id, r.nparts, r.nparts == 1 ? "" : "s", r.parts[0].lo, r.new_t, t->cutline_t, r.new_t);
	} else if (r.op_id[0] != '\0') {
		abandon_run(&r); /* nothing reached the lake: unsealed, retried next cycle */
		tl_error_prefix(err, "operation %s", r.op_id);
	}
	tl_ice_table_free(r.lake);
	tdb_catalog_table_free(&fresh);
	tdb_heap_partitions_free(parts, n);
	return rc;
}

/* ------------------------------------------------------------ dropping */

/* Unexpired read pins that still read the heap below `hi`. */
static int pins_below(PGconn *c, const tdb_catalog_table *t, int64_t hi, int64_t *count, tl_error *err)
{
	char id[24], bound[24];
	tdb_int_text(t->table_id, id);
	tdb_int_text(hi, bound);
	const char *params[] = {id, bound};
	PGresult *res = tdb_pg_query(c, "reading the table's read pins",
	                             "SELECT count(*) FROM tierdb.read_pins WHERE table_id = $1 AND expires_at > now()"
	                             " AND (pinned_tier_key_hi IS NULL OR pinned_tier_key_hi < $2::bigint)",
	                             2, params, err);
	if (res == NULL)
		return -1;
	*count = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}

static int drop_partition(PGconn *c, const tdb_catalog_table *t, const tdb_heap_partition *p, tl_error *err)
{
	char id[24];
	tdb_int_text(t->table_id, id);
	const char *params[] = {id, p->partition_id};
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "DROP TABLE ");
	tdb_pg_quote_qualified(p->schema, p->name, &sql);
	int rc = tdb_pg_exec(c, "starting a drop", "BEGIN", 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "dropping a tiered partition", tdb_buf_cstr(&sql), 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "recording a partition as dropped",
		                 "UPDATE tierdb.partitions SET state = 'dropped', updated_at = now()"
		                 " WHERE table_id = $1 AND partition_id = $2",
		                 2, params, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "committing a drop", "COMMIT", 0, NULL, err);
	if (rc < 0)
		tdb_abort_transaction(c);
	tl_buf_free(&sql);
	return rc;
}

/* The attached partitions the catalog records as tiered, below T. */
static int tiered_partitions(PGconn *c, const tdb_catalog_table *t, tdb_heap_partition **out, int *n, tl_error *err)
{
	tdb_heap_partition *parts;
	int nparts;
	if (tdb_range_partitions(c, t, &parts, &nparts, err) < 0)
		return -1;
	char id[24];
	tdb_int_text(t->table_id, id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the tiered partitions",
	                             "SELECT partition_id FROM tierdb.partitions WHERE table_id = $1 AND state = 'tiered'",
	                             1, params, err);
	if (res == NULL) {
		tdb_heap_partitions_free(parts, nparts);
		return -1;
	}
	int kept = 0;
	for (int i = 0; i < nparts; i++) {
		bool tiered = false;
		for (int j = 0; j < PQntuples(res) && !tiered; j++)
			tiered = strcmp(PQgetvalue(res, j, 0), parts[i].partition_id) == 0;
		/* Only rows below T may go: T covers every tiered partition once published. */
		if (tiered && parts[i].hi <= t->cutline_t) {
			parts[kept++] = parts[i];
		} else {
			tdb_heap_partition gone = parts[i];
			free(gone.partition_id);
			free(gone.schema);
			free(gone.name);
			free(gone.bound);
		}
	}
	PQclear(res);
	*out = parts;
	*n = kept;
	return 0;
}

/* Whether partition p still carries the seal of its tiering run. */
static int is_sealed(PGconn *c, const tdb_heap_partition *p, bool *sealed, tl_error *err)
{
	tl_buf name;
	tl_buf_init(&name);
	tdb_pg_quote_qualified(p->schema, p->name, &name);
	const char *params[] = {tdb_buf_cstr(&name)};
	PGresult *res = tdb_pg_query(c, "looking for a partition's seal",
	                             "SELECT EXISTS (SELECT FROM pg_catalog.pg_trigger"
	                             " WHERE tgrelid = pg_catalog.to_regclass($1) AND tgname = 'tierdb_sealed')",
	                             1, params, err);
	tl_buf_free(&name);
	if (res == NULL)
		return -1;
	*sealed = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return 0;
}

/*
 * --keep-heap: a tiered partition stays in the heap. Once T covers it, its
 * seal gives way to the trigger tierdb_mirror (sql/0.1/48-keep-heap.sql),
 * which carries plain DML on its rows into the delta, in one transaction:
 * no write reaches it between the two.
 */
static int keep_partition(PGconn *c, const tdb_heap_partition *p, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	int rc = tdb_pg_exec(c, "starting to keep a tiered partition", "BEGIN", 0, NULL, err);
	for (int k = 0; k < 3 && rc == 0; k++) {
		tl_buf_reset(&sql);
		if (k < 2)
			tl_buf_printf(&sql, "DROP TRIGGER IF EXISTS %s ON ", k == 0 ? "tierdb_sealed" : "tierdb_sealed_rows");
		else
			tl_buf_append_str(&sql, "CREATE OR REPLACE TRIGGER tierdb_mirror AFTER INSERT OR UPDATE OR DELETE ON ");
		tdb_pg_quote_qualified(p->schema, p->name, &sql);
		if (k == 2)
			tl_buf_append_str(&sql, " FOR EACH ROW EXECUTE FUNCTION tierdb.mirror_route()");
		rc = tdb_pg_exec(c, "keeping a tiered partition", tdb_buf_cstr(&sql), 0, NULL, err);
	}
	if (rc == 0)
		rc = tdb_pg_exec(c, "committing a kept partition", "COMMIT", 0, NULL, err);
	if (rc < 0)
		tdb_abort_transaction(c);
	tl_buf_free(&sql);
	return rc;
}

/* tdb_drop_tiered of a --keep-heap table: its tiered partitions are kept, unsealed and mirrored. */
static int keep_tiered(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	tdb_heap_partition *parts;
	int n;
	if (tiered_partitions(c, t, &parts, &n, err) < 0)
		return -1;
	int rc = 0;
	for (int i = 0; rc == 0 && i < n && !tdb_daemon_stopping(); i++) {
		bool sealed;
		rc = is_sealed(c, &parts[i], &sealed, err);
		if (rc == 0 && sealed) {
			rc = keep_partition(c, &parts[i], err);
			if (rc == 0)
				tdb_log(tdb_table_label(t),
				        "keep: tiered partition %s [%" PRId64 ", %" PRId64 ") stays in the heap; plain DML on it is "
				        "mirrored into the lake",
				        parts[i].name, parts[i].lo, parts[i].hi);
			if (rc == 0 && i + 1 < n)
				tdb_fault("tiering-mid-keep");
		}
	}
	if (rc == 0)
		rc = tdb_oplog_finish_drops(c, t->table_id, true, err);
	tdb_heap_partitions_free(parts, n);
	return rc;
}

int tdb_drop_tiered(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	const char *label = tdb_table_label(t);
	tdb_heap_partition *parts;
	int n;
	if (t->keep_heap)
		return keep_tiered(c, t, err);
	if (tiered_partitions(c, t, &parts, &n, err) < 0)
		return -1;
	int rc = 0;
	bool waited = false;
	for (int i = 0; rc == 0 && i < n && !tdb_daemon_stopping(); i++) {
		int64_t pins;
		rc = pins_below(c, t, parts[i].hi, &pins, err);
		if (rc < 0)
			break;
		if (pins > 0) {
			tdb_log(label,
			        "drop: keeping %s for %" PRId64 " unexpired read pin%s below %" PRId64 "; retrying next cycle",
			        parts[i].name, pins, pins == 1 ? "" : "s", parts[i].hi);
			continue;
		}
		if (!waited) {
			rc = tdb_wait_out_readers(c, t->table_id, err);
			waited = true;
		}
		if (rc == 0)
			rc = drop_partition(c, t, &parts[i], err);
		if (rc == 0)
			tdb_log(label, "drop: dropped tiered partition %s [%" PRId64 ", %" PRId64 ")", parts[i].name,
			        parts[i].lo, parts[i].hi);
		if (rc == 0 && i + 1 < n)
			tdb_fault("tiering-mid-drop");
	}
	if (rc == 0)
		rc = tdb_oplog_finish_drops(c, t->table_id, false, err);
	tdb_heap_partitions_free(parts, n);
	return rc;
}
