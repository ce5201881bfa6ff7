/*
 * mirror.c: the daemon's side of mirrored tables (see mirror.h): the
 * initial copy and the pump that follows the replication stream.
 *
 * Both write the lake the same way, as one journaled operation per chunk or
 * batch (op_log kind 'ingest', details.kind 'mirror-copy' or 'mirror'):
 *
 *   1. journal the operation (phase 'writing') with what publishing it
 *      needs (the chunk's last key, or the batch's end LSN);
 *   2. stream the rows out of Postgres with binary COPY into data files
 *      (and, for the pump, equality-delete files), recording the files;
 *   3. under the table's lake lock, commit them as one snapshot stamped with
 *      the op id (fault points mirror-before-commit, mirror-after-commit);
 *   4. in one transaction, advance S and record the progress: the copy's
 *      last key (or, for the last chunk, F = C and no copy_progress row),
 *      or the pump's F.
 *
 * A crash between 3 and 4 is settled by tdb_recover_mirror on the lake's
 * word, as the fold's are: the snapshot of the op id is adopted (published
 * with the journaled progress), none means the files go.
 *
 * The pump's changes are staged in a session temporary table shaped like
 * the user's table (LIKE, with its defaults and generated columns), so
 * Postgres itself turns the stream's text values into the table's types and
 * the lake's conversion is the tiering's own (tdb_pg_copy_select_list).
 * Every change adds rows to it: an INSERT its new row ('n'), an UPDATE its
 * old row ('o') and its new one, a DELETE its old row. The batch then is
 *
 *   deletes  every distinct (key, tier key) of the staged rows: a key's row
 *            goes wherever the batch saw it, and wherever it lands (which
 *            also removes a copy of it the initial copy made);
 *   rows     per key, the newest staged row if it is a new row.
 *
 * Iceberg applies equality deletes only to older data, so the rows written
 * with them stay.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "daemon.h"
#include "fault.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "mirror.h"
#include "pg.h"
#include "pgtypes.h"
#include "schema_evolution.h"
#include "tiering.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"

/* Rows per decoded batch on the way to the writers. */
#define MIRROR_BATCH_ROWS 8192

/* The session temporary table holding a batch's staged changes. */
#define STAGE_TABLE "pg_temp.tierdb_mirror"

/*
 * How long published batches stay in tierdb.mirror_batches and their keys
 * in tierdb.mirror_keys for hybrid reads (extension/src/hybrid.c): a
 * reader whose snapshot is older than a writing transaction that started
 * before the oldest kept batch reads the heap instead.
 */
#define MIRROR_HISTORY_SECONDS "120"

/* Microseconds between the Unix epoch and Postgres' (2000-01-01), for the replication protocol's clocks. */
#define PG_EPOCH_OFFSET_US INT64_C(946684800000000)

/* One lake operation of a mirrored table: a chunk of the initial copy or a batch of the pump. */
typedef struct mirror_op {
	PGconn *c;
	const tdb_catalog_table *t;
	const char *label;
	const char *kind; /* details.kind: "mirror-copy" or "mirror" */
	char op_id[37];
	tl_ice_table *lake;
	tdb_pg_column *cols;
	int ncols;
	tdb_pg_column *key_cols;
	int32_t *key_ids;
	int nkey;
	tl_ice_writer *deletes; /* the pump's only */
	tl_ice_writer *data;
	bool closed[2];
	bool has_base;
	int64_t base_snapshot;
	int64_t snapshot_id;
	bool committed;
	bool truncate;   /* the batch began with a TRUNCATE: its commit first removes every file of the lake */
	json_t *details; /* journaled: base_snapshot_id, and "after"/"last" (copy) or "from_lsn"/"end_lsn" (pump) */
} mirror_op;

static void op_free(mirror_op *m)
{
	tl_ice_writer_free(m->deletes); /* an unclosed writer deletes its files; a closed one keeps them */
	tl_ice_writer_free(m->data);
	tl_ice_table_free(m->lake);
	if (m->cols != NULL)
		tdb_pg_columns_free(m->cols, m->ncols);
	free(m->key_cols);
	free(m->key_ids);
	json_decref(m->details);
	memset(m, 0, sizeof(*m));
}

/* Opens the lake at S with the table's columns, the lake following them (ALTER TABLE ADD COLUMN and the like). */
static int op_open(mirror_op *m, PGconn *c, const tdb_catalog_table *t, const char *kind, tl_error *err)
{
	m->c = c;
	m->t = t;
	m->label = tdb_table_label(t);
	m->kind = kind;
	m->has_base = t->has_snapshot;
	m->base_snapshot = t->snapshot_id;
	m->details = json_object();
	json_object_set_new(m->details, "kind", json_string(kind));
	json_object_set_new(m->details, "base_snapshot_id", m->has_base ? json_integer(m->base_snapshot) : json_null());
	m->lake = tdb_lake_open(t, err);
	if (m->lake == NULL || tdb_pg_table_columns(c, (uint32_t)t->table_id, &m->cols, &m->ncols, err) < 0 ||
	    tdb_lake_follow_columns(c, t->table_id, m->lake, m->cols, m->ncols, m->label, "the mirror", err) < 0 ||
	    tdb_lake_check_published(m->lake, m->has_base ? m->base_snapshot : TL_ICE_NO_SNAPSHOT, "the mirror", err) < 0)
		return -1;
	return tdb_lake_key_columns(m->lake, t, m->cols, m->ncols, m->label, &m->key_cols, &m->key_ids, &m->nkey, err);
}

/* Journals the operation (phase 'writing'); its details are what publishing needs. */
static int op_begin(mirror_op *m, tl_error *err)
{
	char *details = json_dumps(m->details, JSON_COMPACT);
	int rc = tdb_oplog_begin(m->c, m->t->table_id, "ingest", "writing", details, m->op_id, err);
	free(details);
	return rc;
}

/* Streams `sql` (a COPY ... TO STDOUT binary of `cols`) into writer w and closes it. */
static int copy_into(mirror_op *m, const char *what, const char *sql, const tdb_pg_column *cols, int ncols,
                     tl_ice_writer *w, bool *closed, tl_error *err)
{
	tl_pq_batch *batch = tl_pq_batch_new(tl_ice_writer_schema(w), MIRROR_BATCH_ROWS);
	int rc = tdb_copy_into_writer(m->c, sql, what, cols, ncols, w, batch, NULL, NULL, NULL, err);
	tl_pq_batch_free(batch);
	if (rc == 0) {
		rc = tl_ice_writer_close(w, err);
		if (rc < 0)
			tl_error_prefix(err, "%s", what);
	}
	if (rc == 0)
		*closed = true;
	return rc;
}

/* ------------------------------------------------------------ publishing */

/*
 * The copy's row in tierdb.mirror_batches: the lake at its end is no
 * snapshot of the table at one instant (each chunk was read at its own),
 * so it is not exact; it becomes so once the pump has passed the WAL
 * position now, after every chunk's snapshot (docs/mirrored.md). Every
 * transaction a chunk saw has an id below the xmax of a snapshot taken now.
 */
static int record_copy_batch(mirror_op *m, const char *id, tl_error *err)
{
	char snapshot[24];
	tdb_int_text(m->snapshot_id, snapshot);
	const char *params[] = {id, m->op_id, snapshot, m->t->schema_name, m->t->table_name, m->t->tier_key_col};
	return tdb_pg_exec(m->c, "recording the end of the initial copy",
	                   "SELECT tierdb.mirror_record_copy($1::bigint, $2::uuid, $3::bigint, $4, $5, $6)", 6, params,
	                   err);
}

/* Step 4's statements for the copy: the chunk's last key, or the end of the copy. */
static int publish_copy(mirror_op *m, const char *id, tl_error *err)
{
	json_t *after = json_object_get(m->details, "after");
	char *after_text = json_is_null(after) || after == NULL ? NULL : json_dumps(after, JSON_COMPACT);
	const char *params[] = {id, after_text};
	int rc;
	if (json_is_true(json_object_get(m->details, "last")))
		rc = tdb_pg_exec(m->c, "finishing the initial copy",
		                 "WITH done AS (DELETE FROM tierdb.copy_progress WHERE table_id = $1::bigint"
		                 " RETURNING consistent_point)"
		                 " UPDATE tierdb.cutline c SET replicated_lsn = d.consistent_point, updated_at = now()"
		                 " FROM done d WHERE c.table_id = $1::bigint",
		                 1, params, err) < 0 ? -1 : record_copy_batch(m, id, err);
	else
		rc = tdb_pg_exec(m->c, "recording the copy's progress",
		                 "UPDATE tierdb.copy_progress SET last_pk = jsonb_set(last_pk, '{after}', $2::jsonb),"
		                 " chunks_done = chunks_done + 1, updated_at = now() WHERE table_id = $1::bigint",
		                 2, params, err);
	free(after_text);
	return rc;
}

/* A journaled number as text, or NULL when the details lack it. */
static char *details_number(const mirror_op *m, const char *name, char buf[24])
{
	json_t *v = json_object_get(m->details, name);
	if (!json_is_integer(v))
		return NULL;
	tdb_int_text(json_integer_value(v), buf);
	return buf;
}

/*
 * The batch's row in tierdb.mirror_batches, for hybrid reads, and the
 * pruning of rows and keys older than the history kept: in the
 * transaction that publishes the batch, so readers see both or neither.
 */
static int record_batch(mirror_op *m, const char *id, const char *lsn, tl_error *err)
{
	char snapshot[24], lo[24], hi[24], tk[24];
	/* a batch with nothing for the lake (a heap window's passing rows only) leaves S where it was */
	if (!m->committed && !m->has_base)
		return 0;
	tdb_int_text(m->committed ? m->snapshot_id : m->base_snapshot, snapshot);
	const char *params[] = {id,
	                        m->op_id,
	                        snapshot,
	                        lsn,
	                        details_number(m, "xid_lo", lo),
	                        details_number(m, "xid_hi", hi),
	                        details_number(m, "tier_key_max", tk),
	                        json_is_true(json_object_get(m->details, "truncate")) ? "true" : "false",
	                        MIRROR_HISTORY_SECONDS};
	return tdb_pg_exec(m->c, "recording the mirror's batch",
	                   "SELECT tierdb.mirror_record_batch($1::bigint, $2::uuid, $3::bigint, $4::bigint, $5::bigint,"
	                   " $6::bigint, $7::bigint, $8::boolean, $9::integer)",
	                   9, params, err);
}

/* Step 4's statement for the pump: F moves from the batch's start to its end (guarded). */
static int publish_frontier(mirror_op *m, const char *id, tl_error *err)
{
	char from[24], to[24];
	tdb_int_text(json_integer_value(json_object_get(m->details, "from_lsn")), from);
	tdb_int_text(json_integer_value(json_object_get(m->details, "end_lsn")), to);
	const char *params[] = {id, from, to};
	PGresult *res = tdb_pg_query(m->c, "advancing the mirror frontier",
	                             "UPDATE tierdb.cutline SET replicated_lsn = $3::bigint, updated_at = now()"
	                             " WHERE table_id = $1::bigint AND replicated_lsn = $2::bigint RETURNING 1",
	                             3, params, err);
	if (res == NULL)
		return -1;
	int rc = PQntuples(res) == 1 ? 0
	                             : tl_error_set(err, TL_ERR_CONFLICT,
	                                            "the mirror frontier of %s moved from %s while operation %s ran",
	                                            m->label, from, m->op_id);
	PQclear(res);
	return rc < 0 ? -1 : record_batch(m, id, to, err);
}

static int publish(mirror_op *m, tl_error *err)
{
	char id[24];
	tdb_int_text(m->t->table_id, id);
	bool copy = strcmp(m->kind, "mirror-copy") == 0;
	if (tdb_publish_snapshot_begin(m->c, m->label, m->t->table_id, "the mirror", m->op_id, m->committed,
	                               m->has_base ? m->base_snapshot : TL_ICE_NO_SNAPSHOT, m->snapshot_id, m->lake,
	                               err) < 0 ||
	    (copy ? publish_copy(m, id, err) : publish_frontier(m, id, err)) < 0 ||
	    /* done with the publishing itself: nothing follows that a crash could leave half made */
	    tdb_oplog_set_phase(m->c, m->op_id, "done", NULL, err) < 0 ||
	    tdb_pg_exec(m->c, "committing the mirror's progress", "COMMIT", 0, NULL, err) < 0)
		return -1;
	return 0;
}

/*
 * A batch that begins with a TRUNCATE: one overwrite snapshot that removes
 * every data file of S (and the delete files that apply to them) and adds
 * the batch's rows. Its equality deletes are left out: they could only
 * touch rows of this very snapshot, which Iceberg never applies them to.
 */
static int commit_truncate(mirror_op *m, tl_error *err)
{
	int64_t base = m->has_base ? m->base_snapshot : TL_ICE_NO_SNAPSHOT;
	if (tl_ice_table_refresh(m->lake, err) < 0 || tdb_lake_check_published(m->lake, base, "the mirror", err) < 0)
		return -1;
	tl_ice_commit *commit = tl_ice_commit_begin(m->lake, TL_ICE_OP_OVERWRITE, err);
	if (commit == NULL)
		return -1;
	int rc = 0;
	if (m->has_base) {
		tl_ice_scan *scan = tl_ice_scan_plan(m->lake->metadata, base, NULL, err);
		rc = scan != NULL ? 0 : -1;
		for (int i = 0; rc == 0 && i < tl_ice_scan_ntasks(scan); i++) {
			const tl_ice_scan_task *task = tl_ice_scan_task_at(scan, i);
			rc = tl_ice_commit_remove_file(commit, task->file.file_path, err);
			for (int d = 0; rc == 0 && d < task->ndeletes; d++)
				rc = tl_ice_commit_remove_file(commit, task->deletes[d]->file.file_path, err); /* deduplicated */
		}
		tl_ice_scan_free(scan);
	}
	for (int i = 0; rc == 0 && i < tl_ice_writer_nfiles(m->data); i++)
		rc = tl_ice_commit_add_file(commit, tl_ice_writer_file(m->data, i), err);
	tl_ice_commit_set_summary(commit, "tierdb.op-id", m->op_id);
	if (rc == 0)
		rc = tl_ice_commit_finish(commit, &m->snapshot_id, err);
	tl_ice_commit_free(commit);
	if (rc == 0) {
		m->committed = true;
		return 0;
	}
	int landed = tdb_lake_commit_landed(m->lake, m->op_id, &m->snapshot_id);
	if (landed != 0)
		m->committed = true; /* landed, or unknown: never delete files a landed commit may serve */
	return landed > 0 ? 0 : -1;
}

static int commit_step(void *arg, tl_error *err)
{
	mirror_op *m = arg;
	if (m->truncate)
		return commit_truncate(m, err);
	const tl_ice_writer *writers[2];
	int n = 0;
	if (m->deletes != NULL)
		writers[n++] = m->deletes;
	writers[n++] = m->data;
	return tdb_lake_commit_writers(m->lake, m->has_base ? m->base_snapshot : TL_ICE_NO_SNAPSHOT, "the mirror",
	                               m->op_id, writers, n, &m->snapshot_id, &m->committed, err);
}

static int publish_step(void *arg, tl_error *err)
{
	return publish(arg, err);
}

/* Steps 3 and 4; an operation whose files never reached the lake is undone and marked aborted. */
static int commit_and_publish(mirror_op *m, tl_error *err)
{
	int nfiles = tl_ice_writer_nfiles(m->data) + (m->deletes ? tl_ice_writer_nfiles(m->deletes) : 0);
	tdb_lake_op op = {.c = m->c, .table_id = m->t->table_id, .op_id = m->op_id, .step = "the mirror",
	                  .fault_prefix = "mirror", .check_pins = false,
	                  .need_commit = nfiles > 0 || (m->truncate && m->has_base),
	                  .commit = commit_step, .publish = publish_step, .arg = m, .committed = &m->committed,
	                  .snapshot_id = &m->snapshot_id};
	bool blocked = false;
	int rc = tdb_lake_op_finish(&op, &blocked, err);
	if (rc < 0 && !m->committed) {
		if (m->closed[0])
			tdb_lake_remove_files(m->deletes, m->label, "mirror");
		if (m->closed[1])
			tdb_lake_remove_files(m->data, m->label, "mirror");
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_abort_transaction(m->c);
		tdb_oplog_set_phase(m->c, m->op_id, "aborted", NULL, &ignored);
	}
	return rc;
}

/* ------------------------------------------------------------ the initial copy */

/* Appends "(k1, k2, ...)": the merge key's columns. */
static void append_key_tuple(const tdb_catalog_table *t, tl_buf *sql)
{
	tl_buf_append_byte(sql, '(');
	for (int i = 0; i < t->npk; i++) {
		if (i > 0)
			tl_buf_append_str(sql, ", ");
		tdb_pg_quote_ident(t->pk_cols[i], sql);
	}
	tl_buf_append_byte(sql, ')');
}

/*
 * Appends "<key> <op> <the key in the JSON object `json`>" (an SQL
 * expression of type jsonb), the key's values typed by the table's own row
 * type, so the comparison is the key's and its index serves it.
 */
static void append_key_compare(const tdb_catalog_table *t, const char *op, const char *json, tl_buf *sql)
{
	append_key_tuple(t, sql);
	tl_buf_printf(sql, " %s (SELECT ", op);
	for (int i = 0; i < t->npk; i++) {
		if (i > 0)
			tl_buf_append_str(sql, ", ");
		tl_buf_append_str(sql, "k.");
		tdb_pg_quote_ident(t->pk_cols[i], sql);
	}
	tl_buf_append_str(sql, " FROM jsonb_populate_record(NULL::");
	tdb_pg_quote_qualified(t->schema_name, t->table_name, sql);
	tl_buf_printf(sql, ", %s) k)", json);
}

/*
 * The key of the chunk's last row: the chunk_rows-th key after `after`
 * (NULL: from the first), as JSON text, or NULL when fewer rows are left.
 */
static int chunk_end(mirror_op *m, const char *after, int64_t chunk_rows, char **end, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT jsonb_build_object(");
	for (int i = 0; i < m->t->npk; i++) {
		if (i > 0)
			tl_buf_append_str(&sql, ", ");
		tdb_pg_quote_literal(m->t->pk_cols[i], &sql);
		tl_buf_append_str(&sql, ", ");
		tdb_pg_quote_ident(m->t->pk_cols[i], &sql);
	}
	tl_buf_append_str(&sql, ")::text FROM ");
	tdb_pg_quote_qualified(m->t->schema_name, m->t->table_name, &sql);
	tl_buf_append_str(&sql, " WHERE $1::jsonb IS NULL OR ");
	append_key_compare(m->t, ">", "$1::jsonb", &sql);
	tl_buf_append_str(&sql, " ORDER BY ");
	append_key_tuple(m->t, &sql);
	tl_buf_append_str(&sql, " OFFSET $2::bigint - 1 LIMIT 1");
	char n[24];
	tdb_int_text(chunk_rows, n);
	const char *params[] = {after, n};
	PGresult *res = tdb_pg_query(m->c, "finding the end of the copy's next chunk", tdb_buf_cstr(&sql), 2, params,
	                             err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	*end = PQntuples(res) > 0 ? tl_strdup(PQgetvalue(res, 0, 0)) : NULL;
	PQclear(res);
	return 0;
}

/* COPY of the rows whose keys lie in (after, end] (either NULL: unbounded), binary, for the writer. */
static void chunk_copy_sql(const mirror_op *m, const char *after, const char *end, tl_buf *sql)
{
	tl_buf_append_str(sql, "COPY (SELECT ");
	tdb_pg_copy_select_list(m->cols, m->ncols, sql);
	tl_buf_append_str(sql, " FROM ");
	tdb_pg_quote_qualified(m->t->schema_name, m->t->table_name, sql);
	tl_buf_append_str(sql, " WHERE true");
	/* COPY takes no parameters: the bounds go in as literals */
	const char *bounds[] = {after, end};
	const char *ops[] = {">", "<="};
	for (int i = 0; i < 2; i++) {
		if (bounds[i] == NULL)
			continue;
		tl_buf lit;
		tl_buf_init(&lit);
		tdb_pg_quote_literal(bounds[i], &lit);
		tl_buf_append_str(&lit, "::jsonb");
		tl_buf_append_str(sql, " AND ");
		append_key_compare(m->t, ops[i], tdb_buf_cstr(&lit), sql);
		tl_buf_free(&lit);
	}
	tl_buf_append_str(sql, ") TO STDOUT (FORMAT binary)");
}

/*
 * One chunk: the rows after the recorded key up to the chunk's end. The
 * end is found first and journaled, so the chunk a crash interrupted is
 * adopted with exactly the bounds it copied. 1 when the copy is done.
 */
static int copy_chunk(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	char id[24];
	tdb_int_text(t->table_id, id);
	const char *tparams[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the copy's progress",
	                             "SELECT last_pk -> 'after', (last_pk ->> 'chunk_rows')::bigint, chunks_done"
	                             " FROM tierdb.copy_progress WHERE table_id = $1::bigint",
	                             1, tparams, err);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return 1;
	}
	char *after = PQgetisnull(res, 0, 0) || strcmp(PQgetvalue(res, 0, 0), "null") == 0
	                  ? NULL
	                  : tl_strdup(PQgetvalue(res, 0, 0));
	int64_t chunk_rows = PQgetisnull(res, 0, 1) ? TDB_MIRROR_DEFAULT_CHUNK_ROWS
	                                            : strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	int64_t chunks_done = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
	PQclear(res);

	mirror_op m;
	memset(&m, 0, sizeof(m));
	char *end = NULL;
	tl_buf sql;
	tl_buf_init(&sql);
	tl_ice_writer_options opts;
	int rc = op_open(&m, c, t, "mirror-copy", err);
	if (rc == 0)
		rc = chunk_end(&m, after, chunk_rows, &end, err);
	if (rc == 0) {
		json_object_set_new(m.details, "after", end ? json_loads(end, 0, NULL) : json_null());
		json_object_set_new(m.details, "last", json_boolean(end == NULL));
		rc = op_begin(&m, err);
	}
	if (rc == 0) {
		rc = tdb_lake_writer_options(m.c, m.t, m.lake, m.op_id, &opts, err);
		m.data = rc == 0 ? tl_ice_writer_open_data(m.lake, &opts, err) : NULL;
		tdb_lake_writer_options_free(&opts);
		rc = m.data ? 0 : -1;
	}
	if (rc == 0) {
		chunk_copy_sql(&m, after, end, &sql);
		rc = copy_into(&m, "copying the table's rows", tdb_buf_cstr(&sql), m.cols, m.ncols, m.data, &m.closed[1],
		               err);
	}
	if (rc == 0 && tdb_oplog_record_files(c, m.op_id, (const tl_ice_writer *const[]){m.data}, 1, NULL, err) < 0)
		rc = -1;
	if (rc == 0) {
		rc = commit_and_publish(&m, err);
	} else if (m.op_id[0] != '\0') {
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_abort_transaction(c);
		tdb_oplog_set_phase(c, m.op_id, "aborted", NULL, &ignored);
	}
	if (rc == 0)
		tdb_log(m.label, "mirror: copied chunk %" PRId64 " of the initial copy%s", chunks_done + 1,
		        end == NULL ? "; the copy is done, the pump follows the table's changes from here" : "");
	bool last = rc == 0 && end == NULL;
	tl_buf_free(&sql);
	free(after);
	free(end);
	op_free(&m);
	return rc < 0 ? -1 : last ? 1 : 0;
}

int tdb_mirror_copy(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	if (strcmp(t->mode, "mirrored") != 0 || !t->copying)
		return 0;
	tdb_catalog_table fresh;
	int rc = 0;
	while (rc == 0 && !tdb_daemon_stopping()) {
		/* each chunk starts from the S the previous one published */
		int found = tdb_catalog_load_table_by_id(c, t->table_id, &fresh, err);
		if (found <= 0)
			return found;
		rc = copy_chunk(c, &fresh, err);
		tdb_catalog_table_free(&fresh);
	}
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------ the replication stream */

/* A connection like c's (same server, database, user and password) in logical replication mode. */
static PGconn *connect_replication(PGconn *c, tl_error *err)
{
	PQconninfoOption *info = PQconninfo(c);
	if (info == NULL) {
		tl_error_set(err, TL_ERR_NOMEM, "out of memory reading the daemon's connection settings");
		return NULL;
	}
	int n = 0;
	for (PQconninfoOption *o = info; o->keyword != NULL; o++)
		n++;
	const char **keys = tl_calloc((size_t)n + 4, sizeof(char *));
	const char **values = tl_calloc((size_t)n + 4, sizeof(char *));
	int k = 0;
	for (PQconninfoOption *o = info; o->keyword != NULL; o++) {
		if (o->val == NULL || strcmp(o->keyword, "replication") == 0 || strcmp(o->keyword, "options") == 0)
			continue;
		keys[k] = o->keyword;
		values[k++] = o->val;
	}
	keys[k] = "replication";
	values[k++] = "database";
	/* the stream's text values in the forms the staging table's input functions read back exactly */
	keys[k] = "options";
	values[k++] = TDB_PG_SESSION_OPTIONS;
	PGconn *r = PQconnectdbParams(keys, values, 0);
	free(keys);
	free(values);
	PQconninfoFree(info);
	if (PQstatus(r) != CONNECTION_OK) {
		tl_error_set(err, TL_ERR_IO, "opening a replication connection: %s (the daemon's role needs the REPLICATION "
		             "attribute, and pg_hba.conf must allow it)",
		             PQerrorMessage(r));
		PQfinish(r);
		return NULL;
	}
	return r;
}

static char *lsn_text(int64_t lsn, char out[24])
{
	snprintf(out, 24, "%X/%X", (unsigned)((uint64_t)lsn >> 32), (unsigned)((uint64_t)lsn & 0xffffffffu));
	return out;
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - PG_EPOCH_OFFSET_US;
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put64(uint8_t *p, int64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)(v & 0xff);
}

/* The stream's reader: a message at a time, bounds-checked. */
typedef struct reader {
	const uint8_t *p;
	const uint8_t *end;
	bool bad;
} reader;

static uint8_t get8(reader *r)
{
	if (r->p + 1 > r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

static int64_t getn(reader *r, int n)
{
	if (r->p + n > r->end) {
		r->bad = true;
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = (v << 8) | *r->p++;
	if (n == 4)
		return (int32_t)(uint32_t)v;
	if (n == 2)
		return (int16_t)(uint16_t)v;
	return (int64_t)v;
}

/* A NUL-terminated string in the message (points into it). */
static const char *getstr(reader *r)
{
	const uint8_t *s = r->p;
	while (r->p < r->end && *r->p != '\0')
		r->p++;
	if (r->p >= r->end) {
		r->bad = true;
		return "";
	}
	r->p++;
	return (const char *)s;
}

/* One column value of a tuple: kind 'n' (NULL), 'u' (unchanged TOASTed value) or 't' (text). */
typedef struct value {
	char kind;
	const char *text;
	int32_t len;
} value;

/* The pump of one table: the stream, the relation as last described, and the batch being staged. */
typedef struct pump {
	PGconn *c;
	PGconn *repl;
	const tdb_catalog_table *t;
	const tdb_mirror_config *cfg;
	const char *label;
	/* the relation message: the published columns, in the stream's order */
	uint32_t relid;
	int ncols;
	char **names;
	value *old_row;
	value *new_row;
	/* the batch */
	bool stage_created;   /* the stage table exists in c's session */
	bool truncated;       /* a TRUNCATE of the table came in the batch: what was staged before it is gone */
	bool staging;         /* a COPY into it is open on c */
	int64_t seq;          /* staged rows */
	int64_t changes;
	int64_t from_lsn;     /* F when the batch started */
	int64_t end_lsn;      /* the last commit's end in the batch */
	bool in_xact;
	bool has_xids;        /* the batch's transactions' ids lie in [xid_lo, xid_hi] (32-bit, modulo 2^32) */
	uint32_t xid_lo;
	uint32_t xid_hi;
	int64_t received;     /* the stream's position (for feedback) */
	int64_t target;       /* the WAL position when the pump started: caught up there */
	int64_t batch_started_ms;
	tl_buf line;
} pump;

static void forget_relation(pump *p)
{
	for (int i = 0; i < p->ncols; i++)
		free(p->names[i]);
	free(p->names);
	free(p->old_row);
	free(p->new_row);
	p->names = NULL;
	p->old_row = p->new_row = NULL;
	p->ncols = 0;
}

/* Standby status update: written and flushed up to F (what the lake holds); a reply requested when `ping`. */
static int send_feedback(pump *p, int64_t flushed, bool ping, tl_error *err)
{
	uint8_t msg[1 + 8 + 8 + 8 + 8 + 1];
	msg[0] = 'r';
	put64(msg + 1, p->received > flushed ? p->received : flushed);
	put64(msg + 9, flushed);
	put64(msg + 17, flushed);
	put64(msg + 25, now_us());
	msg[33] = ping ? 1 : 0;
	if (PQputCopyData(p->repl, (const char *)msg, sizeof(msg)) <= 0 || PQflush(p->repl) < 0)
		return tl_error_set(err, TL_ERR_IO, "sending the replication stream's status: %s", PQerrorMessage(p->repl));
	return 0;
}

/* Appends s escaped for COPY's text format. */
static void append_copy_text(tl_buf *b, const char *s, int32_t len)
{
	for (int32_t i = 0; i < len; i++) {
		char ch = s[i];
		switch (ch) {
		case '\\': tl_buf_append_str(b, "\\\\"); break;
		case '\t': tl_buf_append_str(b, "\\t"); break;
		case '\n': tl_buf_append_str(b, "\\n"); break;
		case '\r': tl_buf_append_str(b, "\\r"); break;
		default: tl_buf_append_byte(b, (uint8_t)ch); break;
		}
	}
}

/*
 * Opens the batch's stage table, shaped like the user's table as it is now
 * (columns the stream does not name take their defaults, generated ones are
 * computed), and a COPY into it of the relation's columns.
 */
static int stage_open(pump *p, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	int rc = 0;
	if (!p->stage_created) {
		tl_buf_append_str(&sql, "CREATE TEMPORARY TABLE " STAGE_TABLE " (LIKE ");
		tdb_pg_quote_qualified(p->t->schema_name, p->t->table_name, &sql);
		tl_buf_append_str(&sql, " INCLUDING DEFAULTS INCLUDING GENERATED, tierdb_seq bigint, tierdb_kind \"char\")");
		rc = tdb_pg_exec(p->c, "creating the mirror's stage table", tdb_buf_cstr(&sql), 0, NULL, err);
		p->stage_created = rc == 0;
		p->batch_started_ms = monotonic_ms();
		tl_buf_reset(&sql);
	}
	tl_buf_append_str(&sql, "COPY " STAGE_TABLE " (tierdb_seq, tierdb_kind");
	for (int i = 0; i < p->ncols; i++) {
		tl_buf_append_str(&sql, ", ");
		tdb_pg_quote_ident(p->names[i], &sql);
	}
	tl_buf_append_str(&sql, ") FROM STDIN");
	if (rc == 0) {
		PGresult *res = PQexec(p->c, tdb_buf_cstr(&sql));
		if (PQresultStatus(res) != PGRES_COPY_IN)
			rc = tl_error_set(err, TL_ERR_IO,
			                  "staging the changes of %s: %s (a column the stream still names was dropped or renamed "
			                  "meanwhile? the pump stops until the table and its stream agree)",
			                  p->label, PQerrorMessage(p->c));
		PQclear(res);
	}
	tl_buf_free(&sql);
	if (rc == 0)
		p->staging = true;
	return rc;
}

/* Ends the COPY into the stage table (its rows stay for the batch). */
static int stage_close(pump *p, tl_error *err)
{
	if (!p->staging)
		return 0;
	p->staging = false;
	int rc = 0;
	if (PQputCopyEnd(p->c, NULL) <= 0)
		rc = tl_error_set(err, TL_ERR_IO, "ending the staging of %s: %s", p->label, PQerrorMessage(p->c));
	PGresult *res;
	while ((res = PQgetResult(p->c)) != NULL) {
		if (rc == 0 && PQresultStatus(res) != PGRES_COMMAND_OK)
			rc = tl_error_set(err, TL_ERR_IO, "staging the changes of %s: %s", p->label, PQresultErrorMessage(res));
		PQclear(res);
	}
	return rc;
}

/* One staged row: kind 'o' (a row as it was) or 'n' (a row as it is now). */
static int stage_row(pump *p, char kind, const value *row, tl_error *err)
{
	if (!p->staging && stage_open(p, err) < 0)
		return -1;
	tl_buf_reset(&p->line);
	tl_buf_printf(&p->line, "%" PRId64 "\t%c", ++p->seq, kind);
	for (int i = 0; i < p->ncols; i++) {
		tl_buf_append_byte(&p->line, '\t');
		if (row[i].kind == 'n')
			tl_buf_append_str(&p->line, "\\N");
		else
			append_copy_text(&p->line, row[i].text, row[i].len);
	}
	tl_buf_append_byte(&p->line, '\n');
	if (PQputCopyData(p->c, (const char *)p->line.data, (int)p->line.len) <= 0)
		return tl_error_set(err, TL_ERR_IO, "staging a change of %s: %s", p->label, PQerrorMessage(p->c));
	return 0;
}

/* Reads a TupleData of the relation into row (values point into the message). */
static int read_tuple(pump *p, reader *r, value *row, tl_error *err)
{
	int n = (int)getn(r, 2);
	if (!r->bad && n != p->ncols)
		return tl_error_set(err, TL_ERR_CORRUPT, "a change of %s has %d columns, its relation %d", p->label, n,
		                    p->ncols);
	for (int i = 0; i < n && !r->bad; i++) {
		row[i].kind = (char)get8(r);
		row[i].text = NULL;
		row[i].len = 0;
		if (row[i].kind == 't' || row[i].kind == 'b') {
			row[i].len = (int32_t)getn(r, 4);
			if (row[i].len < 0 || r->p + row[i].len > r->end) {
				r->bad = true;
				break;
			}
			row[i].text = (const char *)r->p;
			r->p += row[i].len;
			if (row[i].kind == 'b')
				return tl_error_set(err, TL_ERR_CORRUPT, "the stream of %s sent a binary value", p->label);
		} else if (row[i].kind != 'n' && row[i].kind != 'u') {
			r->bad = true;
		}
	}
	return r->bad ? tl_error_set(err, TL_ERR_CORRUPT, "a truncated change of %s in the stream", p->label) : 0;
}

static int read_relation(pump *p, reader *r, tl_error *err)
{
	uint32_t relid = (uint32_t)getn(r, 4);
	getstr(r); /* namespace and name: the publication holds this one table */
	getstr(r);
	char identity = (char)get8(r);
	int n = (int)getn(r, 2);
	if (r->bad || n < 0)
		return tl_error_set(err, TL_ERR_CORRUPT, "a truncated relation message for %s", p->label);
	/* a partition's changes come as the table's, but its own description is sent too: not needed */
	if (relid != (uint32_t)p->t->table_id)
		return 0;
	if (identity != 'f')
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s is streamed with REPLICA IDENTITY '%c', not FULL: the pump needs every old row "
		                    "whole to find it in the lake (ALTER TABLE ... REPLICA IDENTITY FULL; registration sets "
		                    "it, and the pump sets it on partitions made since)",
		                    p->label, identity);
	/* a change of columns mid-batch: the staged rows keep theirs, the COPY goes on with the new ones */
	if (p->staging && stage_close(p, err) < 0)
		return -1;
	forget_relation(p);
	p->relid = relid;
	p->names = tl_calloc((size_t)n + 1, sizeof(char *));
	p->old_row = tl_calloc((size_t)n + 1, sizeof(value));
	p->new_row = tl_calloc((size_t)n + 1, sizeof(value));
	for (int i = 0; i < n; i++) {
		get8(r); /* flags: part of the key */
		p->names[i] = tl_strdup(getstr(r));
		p->ncols++;
		getn(r, 4); /* type oid and typmod: the stage table has the table's own */
		getn(r, 4);
	}
	return r->bad ? tl_error_set(err, TL_ERR_CORRUPT, "a truncated relation message for %s", p->label) : 0;
}

/* Insert ('I'), update ('U') or delete ('D'): its rows into the stage table. */
static int read_change(pump *p, char kind, reader *r, tl_error *err)
{
	uint32_t relid = (uint32_t)getn(r, 4);
	if (p->names == NULL || relid != p->relid)
		return tl_error_set(err, TL_ERR_CORRUPT, "a change of relation %u of %s's stream came before its relation "
		                    "message (the last one described relation %u)", relid, p->label, p->relid);
	char tag = (char)get8(r);
	bool has_old = false;
	if (kind != 'I' && (tag == 'K' || tag == 'O')) {
		if (tag == 'K')
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "a change of %s carries only the key of its old row: a partition lacks REPLICA "
			                    "IDENTITY FULL (ALTER TABLE ... REPLICA IDENTITY FULL on it, then re-register)",
			                    p->label);
		if (read_tuple(p, r, p->old_row, err) < 0)
			return -1;
		has_old = true;
		if (kind == 'U')
			tag = (char)get8(r);
	}
	if (kind != 'I' && !has_old)
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "a change of %s carries no old row (REPLICA IDENTITY FULL "
		                    "missing on a partition?)", p->label);
	if (has_old && stage_row(p, 'o', p->old_row, err) < 0)
		return -1;
	if (kind == 'D') {
		p->changes++;
		return 0;
	}
	if (tag != 'N')
		return tl_error_set(err, TL_ERR_CORRUPT, "a change of %s without its new row", p->label);
	if (read_tuple(p, r, p->new_row, err) < 0)
		return -1;
	/* an unchanged TOASTed value is not sent again: the old row has it */
	for (int i = 0; i < p->ncols; i++)
		if (p->new_row[i].kind == 'u') {
			if (!has_old || p->old_row[i].kind == 'u')
				return tl_error_set(err, TL_ERR_CORRUPT, "column \"%s\" of a change of %s is unchanged but its "
				                    "old value was not sent", p->names[i], p->label);
			p->new_row[i] = p->old_row[i];
		}
	p->changes++;
	return stage_row(p, 'n', p->new_row, err);
}

/*
 * A TRUNCATE naming the table: every row staged so far is gone, and the
 * batch's commit empties the lake first (commit_truncate). A partition
 * truncated alone is not published through the table (Postgres' rule with
 * publish_via_partition_root): docs/mirrored.md.
 */
static int read_truncate(pump *p, reader *r, tl_error *err)
{
	int n = (int)getn(r, 4);
	get8(r); /* CASCADE / RESTART IDENTITY */
	bool ours = false;
	for (int i = 0; i < n && !r->bad; i++)
		ours |= (uint32_t)getn(r, 4) == (uint32_t)p->t->table_id;
	if (r->bad)
		return tl_error_set(err, TL_ERR_CORRUPT, "a truncated TRUNCATE message for %s", p->label);
	if (!ours)
		return 0;
	/* the stage table must exist for the batch's statements, even if nothing follows */
	if (!p->stage_created && p->names != NULL && stage_open(p, err) < 0)
		return -1;
	if (stage_close(p, err) < 0)
		return -1;
	if (p->stage_created &&
	    tdb_pg_exec(p->c, "emptying the mirror's stage table", "TRUNCATE " STAGE_TABLE, 0, NULL, err) < 0)
		return -1;
	p->truncated = true;
	p->changes++;
	return 0;
}

/* ------------------------------------------------------------ one batch into the lake */

/* Appends the merge key's columns, then the tier key unless it is one of them: the key of a lake row. */
static void append_key_columns(const tdb_catalog_table *t, tl_buf *sql)
{
	bool tier_in_pk = false;
	for (int i = 0; i < t->npk; i++) {
		if (i > 0)
			tl_buf_append_str(sql, ", ");
		tdb_pg_quote_ident(t->pk_cols[i], sql);
		tier_in_pk |= strcmp(t->pk_cols[i], t->tier_key_col) == 0;
	}
	if (!tier_in_pk) {
		tl_buf_append_str(sql, ", ");
		tdb_pg_quote_ident(t->tier_key_col, sql);
	}
}

/*
 * A table keeping a heap window (--heap-retention) has no heap rows below
 * T: what the stream shows there are the rows transparent writes pass
 * through its spill partition on their way to the delta (inserted, then
 * deleted in the same statement), which the fold brings to the lake.
 * Appends the condition that leaves them out, after `keyword`.
 */
static void append_window_filter(const tdb_catalog_table *t, const char *keyword, tl_buf *sql)
{
	if (!t->has_heap_retention)
		return;
	tl_buf_printf(sql, " %s tierdb.canonical_tier_key(", keyword);
	tdb_pg_quote_ident(t->tier_key_col, sql);
	tl_buf_printf(sql, ") >= %" PRId64, t->cutline_t);
}

/* F moves to `to` without a lake commit: nothing of the table changed up to there. */
static int advance_frontier(pump *p, int64_t to, tl_error *err)
{
	char id[24], from[24], end[24];
	tdb_int_text(p->t->table_id, id);
	tdb_int_text(p->from_lsn, from);
	tdb_int_text(to, end);
	const char *params[] = {id, from, end};
	if (tdb_pg_exec(p->c, "advancing the mirror frontier",
	                "UPDATE tierdb.cutline SET replicated_lsn = $3::bigint WHERE table_id = $1::bigint"
	                " AND replicated_lsn = $2::bigint",
	                3, params, err) < 0)
		return -1;
	p->from_lsn = to;
	return send_feedback(p, to, false, err);
}

/* The highest tier key of the batch's new rows, canonical, into the details (for hybrid reads' split). */
static int note_tier_key_max(pump *p, const tdb_catalog_table *t, json_t *details, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT tierdb.canonical_tier_key(max(");
	tdb_pg_quote_ident(t->tier_key_col, &sql);
	tl_buf_append_str(&sql, "))::text FROM " STAGE_TABLE " WHERE tierdb_kind = 'n'");
	append_window_filter(t, "AND", &sql);
	PGresult *res = tdb_pg_query(p->c, "finding the batch's highest tier key", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	if (!PQgetisnull(res, 0, 0))
		json_object_set_new(details, "tier_key_max", json_integer(strtoll(PQgetvalue(res, 0, 0), NULL, 10)));
	PQclear(res);
	return 0;
}

/*
 * Every (key, tier key) the batch saw into tierdb.mirror_keys under its op
 * id, before its lake commit: a batch published later by recovery has
 * them too (hybrid.c reads them for batches its snapshot does not see).
 */
static int record_batch_keys(pump *p, const tdb_catalog_table *t, const char *op_id, tl_error *err)
{
	char id[24];
	tdb_int_text(t->table_id, id);
	const char *params[] = {id, op_id};
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "INSERT INTO tierdb.mirror_keys (table_id, op_id, key) SELECT $1::bigint, $2::uuid,"
	                        " to_jsonb(r) FROM (SELECT DISTINCT ");
	append_key_columns(t, &sql);
	tl_buf_append_str(&sql, " FROM " STAGE_TABLE);
	append_window_filter(t, "WHERE", &sql);
	tl_buf_append_str(&sql, ") AS r");
	int rc = tdb_pg_exec(p->c, "recording the batch's keys", tdb_buf_cstr(&sql), 2, params, err);
	tl_buf_free(&sql);
	return rc;
}

/* The staged batch as one lake commit, F = its last commit's end, then the slot is told. */
static int flush_batch(pump *p, tl_error *err)
{
	if (stage_close(p, err) < 0)
		return -1;
	if (p->seq == 0 && !p->truncated)
		return p->end_lsn > p->from_lsn ? advance_frontier(p, p->end_lsn, err) : 0;
	tdb_catalog_table fresh;
	int found = tdb_catalog_load_table_by_id(p->c, p->t->table_id, &fresh, err);
	if (found <= 0)
		return found < 0 ? -1 : tl_error_set(err, TL_ERR_NOT_FOUND, "%s was unregistered", p->label);
	mirror_op m;
	memset(&m, 0, sizeof(m));
	tl_buf keys, rows;
	tl_buf_init(&keys);
	tl_buf_init(&rows);
	tl_ice_writer_options opts;
	int rc = op_open(&m, p->c, &fresh, "mirror", err);
	m.truncate = p->truncated;
	if (rc == 0) {
		json_object_set_new(m.details, "truncate", json_boolean(p->truncated));
		json_object_set_new(m.details, "from_lsn", json_integer(p->from_lsn));
		json_object_set_new(m.details, "end_lsn", json_integer(p->end_lsn));
		if (p->has_xids) {
			json_object_set_new(m.details, "xid_lo", json_integer(p->xid_lo));
			json_object_set_new(m.details, "xid_hi", json_integer(p->xid_hi));
		}
		rc = note_tier_key_max(p, &fresh, m.details, err);
	}
	if (rc == 0)
		rc = op_begin(&m, err);
	if (rc == 0)
		rc = record_batch_keys(p, &fresh, m.op_id, err);
	if (rc == 0) {
		rc = tdb_lake_writer_options(m.c, m.t, m.lake, m.op_id, &opts, err);
		m.deletes = rc == 0 ? tl_ice_writer_open_deletes(m.lake, m.key_ids, m.nkey, m.key_ids, fresh.npk, &opts, err)
		                    : NULL;
		m.data = m.deletes ? tl_ice_writer_open_data(m.lake, &opts, err) : NULL;
		tdb_lake_writer_options_free(&opts);
		rc = m.data ? 0 : -1;
	}
	if (rc == 0) {
		/* every (key, tier key) the batch saw, old rows and new */
		tl_buf_append_str(&keys, "COPY (SELECT ");
		tdb_pg_copy_select_list(m.key_cols, m.nkey, &keys);
		tl_buf_append_str(&keys, " FROM (SELECT DISTINCT ");
		append_key_columns(&fresh, &keys);
		tl_buf_append_str(&keys, " FROM " STAGE_TABLE);
		append_window_filter(&fresh, "WHERE", &keys);
		tl_buf_append_str(&keys, ") AS r ORDER BY ");
		tdb_pg_quote_ident(fresh.tier_key_col, &keys);
		tl_buf_append_str(&keys, ") TO STDOUT (FORMAT binary)");
		rc = copy_into(&m, "writing the mirror's equality deletes", tdb_buf_cstr(&keys), m.key_cols, m.nkey,
		               m.deletes, &m.closed[0], err);
	}
	if (rc == 0) {
		/* per key, its newest staged row, if that is a row as it is now */
		tl_buf_append_str(&rows, "COPY (SELECT ");
		tdb_pg_copy_select_list(m.cols, m.ncols, &rows);
		tl_buf_append_str(&rows, " FROM (SELECT DISTINCT ON (");
		for (int i = 0; i < fresh.npk; i++) {
			if (i > 0)
				tl_buf_append_str(&rows, ", ");
			tdb_pg_quote_ident(fresh.pk_cols[i], &rows);
		}
		tl_buf_append_str(&rows, ") * FROM " STAGE_TABLE);
		append_window_filter(&fresh, "WHERE", &rows);
		tl_buf_append_str(&rows, " ORDER BY ");
		for (int i = 0; i < fresh.npk; i++) {
			tdb_pg_quote_ident(fresh.pk_cols[i], &rows);
			tl_buf_append_str(&rows, ", ");
		}
		tl_buf_append_str(&rows, "tierdb_seq DESC) AS r WHERE r.tierdb_kind = 'n' ORDER BY ");
		tdb_pg_quote_ident(fresh.tier_key_col, &rows);
		tl_buf_append_str(&rows, ") TO STDOUT (FORMAT binary)");
		rc = copy_into(&m, "writing the mirror's rows", tdb_buf_cstr(&rows), m.cols, m.ncols, m.data, &m.closed[1],
		               err);
	}
	if (rc == 0 &&
	    tdb_oplog_record_files(p->c, m.op_id, (const tl_ice_writer *const[]){m.deletes, m.data}, 2, NULL, err) < 0)
		rc = -1;
	if (rc == 0) {
		rc = commit_and_publish(&m, err);
	} else if (m.op_id[0] != '\0') {
		/* nothing reached the lake: the operation and its keys go */
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_abort_transaction(p->c);
		tdb_oplog_set_phase(p->c, m.op_id, "aborted", NULL, &ignored);
		char id[24];
		tdb_int_text(fresh.table_id, id);
		tdb_pg_exec(p->c, "forgetting the batch's keys",
		            "DELETE FROM tierdb.mirror_keys WHERE table_id = $1::bigint AND op_id = $2::uuid", 2,
		            (const char *[]){id, m.op_id}, &ignored);
	}
	if (rc == 0)
		tdb_fault("mirror-after-publish"); /* F published, the slot not yet told: the stream replays from F */
	if (rc == 0) {
		char lsn[24];
		tdb_log(p->label, "mirror: %" PRId64 " change%s up to WAL %s committed to the lake (snapshot %" PRId64 ")",
		        p->changes, p->changes == 1 ? "" : "s", lsn_text(p->end_lsn, lsn), m.snapshot_id);
		rc = tdb_pg_exec(p->c, "dropping the mirror's stage table", "DROP TABLE " STAGE_TABLE, 0, NULL, err);
		p->stage_created = false;
		p->from_lsn = p->end_lsn;
		p->seq = p->changes = 0;
		p->truncated = false;
		p->has_xids = false;
	}
	/* only now that F is published may the slot let go of the WAL behind it */
	if (rc == 0)
		rc = send_feedback(p, p->from_lsn, false, err);
	tl_buf_free(&keys);
	tl_buf_free(&rows);
	op_free(&m);
	tdb_catalog_table_free(&fresh);
	return rc;
}

/* ------------------------------------------------------------ the pump */

/* One pgoutput message. *caught_up is set at a commit at or past the target. */
static int handle_message(pump *p, reader *r, bool *caught_up, tl_error *err)
{
	char kind = (char)get8(r);
	switch (kind) {
	case 'B': {
		getn(r, 8); /* the final LSN and the commit time */
		getn(r, 8);
		uint32_t xid = (uint32_t)getn(r, 4);
		if (r->bad)
			return tl_error_set(err, TL_ERR_CORRUPT, "a truncated begin message for %s", p->label);
		p->in_xact = true;
		if (!p->has_xids || (int32_t)(xid - p->xid_lo) < 0)
			p->xid_lo = xid;
		if (!p->has_xids || (int32_t)(xid - p->xid_hi) > 0)
			p->xid_hi = xid;
		p->has_xids = true;
		return 0;
	}
	case 'C': {
		get8(r);      /* flags */
		getn(r, 8);   /* the commit record's LSN */
		int64_t end = getn(r, 8);
		if (r->bad)
			return tl_error_set(err, TL_ERR_CORRUPT, "a truncated commit message for %s", p->label);
		p->in_xact = false;
		p->end_lsn = end;
		if (end >= p->target)
			*caught_up = true;
		/* a batch ends at a transaction's end only, when it is full or has waited long enough */
		if (p->seq >= p->cfg->batch_rows || *caught_up ||
		    (p->stage_created && monotonic_ms() - p->batch_started_ms >= p->cfg->flush_millis))
			return flush_batch(p, err);
		return 0;
	}
	case 'R': return read_relation(p, r, err);
	case 'I':
	case 'U':
	case 'D': return read_change(p, kind, r, err);
	case 'T': return read_truncate(p, r, err);
	default: return 0; /* origin, type, logical message: nothing of the table's rows */
	}
}

/* Ends the stream and the staging after an error, so both connections are usable again. */
static void abandon(pump *p)
{
	if (p->staging) {
		PQputCopyEnd(p->c, "the mirror's batch was abandoned");
		PGresult *res;
		while ((res = PQgetResult(p->c)) != NULL)
			PQclear(res);
		p->staging = false;
	}
	tdb_abort_transaction(p->c);
	if (p->stage_created) {
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_pg_exec(p->c, "dropping the mirror's stage table", "DROP TABLE IF EXISTS " STAGE_TABLE, 0, NULL,
		            &ignored);
		p->stage_created = false;
	}
}

/* START_REPLICATION from F on the pump's new replication connection. */
static int start_stream(pump *p, tl_error *err)
{
	char from[24];
	tl_buf cmd;
	tl_buf_init(&cmd);
	tl_buf_append_str(&cmd, "START_REPLICATION SLOT ");
	tdb_pg_quote_ident(p->t->slot_name, &cmd);
	tl_buf_printf(&cmd, " LOGICAL %s (proto_version '1', publication_names ", lsn_text(p->from_lsn, from));
	tl_buf quoted;
	tl_buf_init(&quoted);
	tdb_pg_quote_ident(p->t->publication_name, &quoted);
	tdb_pg_quote_literal(tdb_buf_cstr(&quoted), &cmd);
	tl_buf_append_str(&cmd, ")");
	tl_buf_free(&quoted);
	PGresult *res = PQexec(p->repl, tdb_buf_cstr(&cmd));
	tl_buf_free(&cmd);
	if (PQresultStatus(res) != PGRES_COPY_BOTH) {
		int rc = tl_error_set(err, TL_ERR_IO, "starting the replication stream of %s from %s: %s", p->label, from,
		                      PQerrorMessage(p->repl));
		PQclear(res);
		return rc;
	}
	PQclear(res);
	return 0;
}

/* Reads the stream up to the target, batch by batch. *caught_up_out says it got there. */
static int follow(pump *p, bool *caught_up_out, tl_error *err)
{
	bool caught_up = false;
	int rc = send_feedback(p, p->from_lsn, true, err);
	int64_t last_ping = monotonic_ms();
	while (rc == 0 && !caught_up && !tdb_daemon_stopping()) {
		char *buf = NULL;
		int n = PQgetCopyData(p->repl, &buf, 1);
		if (n == 0) {
			struct pollfd fd = {.fd = PQsocket(p->repl), .events = POLLIN};
			int ready = poll(&fd, 1, 100);
			if (ready < 0 && errno != EINTR)
				rc = tl_error_set(err, TL_ERR_IO, "waiting for the replication stream: %s", strerror(errno));
			else if (ready > 0 && !PQconsumeInput(p->repl))
				rc = tl_error_set(err, TL_ERR_IO, "reading the replication stream: %s", PQerrorMessage(p->repl));
			else if (ready == 0 && monotonic_ms() - last_ping >= 100) {
				/* quiet: ask where the stream is, to learn when it has passed the target */
				rc = send_feedback(p, p->from_lsn, true, err);
				last_ping = monotonic_ms();
			}
			continue;
		}
		if (n < 0) {
			rc = tl_error_set(err, TL_ERR_IO, "the replication stream of %s ended: %s", p->label,
			                  PQerrorMessage(p->repl));
			break;
		}
		reader r = {(const uint8_t *)buf, (const uint8_t *)buf + n, false};
		char type = (char)get8(&r);
		if (type == 'w') {
			int64_t start = getn(&r, 8);
			getn(&r, 8); /* the server's end of WAL */
			getn(&r, 8); /* its clock */
			if (start > p->received)
				p->received = start;
			rc = r.bad ? tl_error_set(err, TL_ERR_CORRUPT, "a truncated replication message") :
			             handle_message(p, &r, &caught_up, err);
		} else if (type == 'k') {
			int64_t wal_end = getn(&r, 8);
			getn(&r, 8);
			bool reply = get8(&r) != 0;
			if (wal_end > p->received)
				p->received = wal_end;
			if (!p->in_xact && wal_end >= p->target) {
				/* everything up to the target has been sent: the batch (or F alone) goes to there */
				caught_up = true;
				if (p->end_lsn < wal_end && p->seq == 0)
					p->end_lsn = wal_end;
				rc = flush_batch(p, err);
			} else if (reply) {
				rc = send_feedback(p, p->from_lsn, false, err);
			}
		}
		PQfreemem(buf);
	}
	*caught_up_out = caught_up;
	return rc;
}

/*
 * The replication connections, one per mirrored table, kept open between
 * the pump's runs: a stream opened every second would log its start on the
 * server each time, and pgoutput describes a relation once per stream, so
 * the description is kept with it.
 */
typedef struct open_stream {
	int64_t table_id;
	PGconn *repl;
	uint32_t relid;
	int ncols;
	char **names;
	value *old_row;
	value *new_row;
	int64_t received;
} open_stream;

static open_stream *streams;
static int nstreams;

/* Takes table_id's open stream into p (its connection and relation), if there is one. */
static bool resume_stream(pump *p)
{
	for (int i = 0; i < nstreams; i++)
		if (streams[i].table_id == p->t->table_id) {
			p->repl = streams[i].repl;
			p->relid = streams[i].relid;
			p->ncols = streams[i].ncols;
			p->names = streams[i].names;
			p->old_row = streams[i].old_row;
			p->new_row = streams[i].new_row;
			p->received = streams[i].received;
			streams[i] = streams[--nstreams];
			return true;
		}
	return false;
}

/* Ends a stream cleanly (CopyDone both ways), so the server logs no broken connection. */
static void close_stream(PGconn *repl)
{
	if (repl == NULL)
		return;
	if (PQputCopyEnd(repl, NULL) > 0 && PQflush(repl) == 0) {
		char *buf;
		while (PQgetCopyData(repl, &buf, 0) > 0)
			PQfreemem(buf);
		PGresult *res;
		while ((res = PQgetResult(repl)) != NULL)
			PQclear(res);
	}
	PQfinish(repl);
}

/* Keeps p's stream open for the next run. */
static void keep_stream(pump *p)
{
	open_stream *grown = tl_realloc(streams, sizeof(open_stream) * (size_t)(nstreams + 1));
	if (grown == NULL) { /* no room to keep it: closed, and the next run opens one */
		close_stream(p->repl);
		forget_relation(p);
		return;
	}
	streams = grown;
	streams[nstreams++] = (open_stream){p->t->table_id, p->repl, p->relid, p->ncols, p->names, p->old_row,
	                                    p->new_row, p->received};
}

void tdb_mirror_close_streams(void)
{
	for (int i = 0; i < nstreams; i++) {
		close_stream(streams[i].repl);
		pump p = {.ncols = streams[i].ncols, .names = streams[i].names, .old_row = streams[i].old_row,
		          .new_row = streams[i].new_row};
		forget_relation(&p);
	}
	tl_free(streams);
	streams = NULL;
	nstreams = 0;
}

int tdb_mirror_pump(
PGconn *c, const tdb_catalog_table *t, const tdb_mirror_config *cfg, tl_error *err)
{
	if (strcmp(t->mode, "mirrored") != 0 || t->copying || !t->has_replicated_lsn)
		return 0;
	if (tdb_mirror_full_identity(c, (uint32_t)t->table_id, err) < 0)
		return -1;
	/* where WAL is inserted, which includes every commit so far (what is written or flushed may lag it) */
	PGresult *res = tdb_pg_query(c, "reading the WAL position", "SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint",
	                             0, NULL, err);
	if (res == NULL)
		return -1;
	pump p;
	memset(&p, 0, sizeof(p));
	p.c = c;
	p.t = t;
	p.cfg = cfg;
	p.label = tdb_table_label(t);
	p.target = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	p.from_lsn = p.end_lsn = t->replicated_lsn;
	if (p.target <= p.from_lsn)
		return 0; /* nothing was written since F */
	tl_buf_init(&p.line);
	int rc = 0;
	if (!resume_stream(&p)) {
		p.received = p.from_lsn;
		p.repl = connect_replication(c, err);
		rc = p.repl != NULL ? start_stream(&p, err) : -1;
	}
	bool caught_up = false;
	if (rc == 0)
		rc = follow(&p, &caught_up, err);
	if (rc == 0 && caught_up) {
		keep_stream(&p);
	} else {
		/* an error, or a stop mid-batch: what was staged is dropped, and the next run starts again from F */
		abandon(&p);
		close_stream(p.repl);
		forget_relation(&p);
	}
	tl_buf_free(&p.line);
	return rc;
}

int tdb_mirror_check_slot(PGconn *c, const tdb_catalog_table *t, int64_t warn_bytes, tl_error *err)
{
	if (t->slot_name == NULL)
		return 0;
	const char *params[] = {t->slot_name};
	PGresult *res = tdb_pg_query(c, "reading the WAL the mirror's slot holds",
	                             "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), restart_lsn)::bigint"
	                             " FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
	                             1, params, err);
	if (res == NULL)
		return -1;
	int rc = 0;
	if (PQntuples(res) == 0)
		rc = tl_error_set(err, TL_ERR_NOT_FOUND,
		                  "the replication slot %s of %s is gone: the mirror cannot follow the table any more; "
		                  "unregister it (with --drop-lake) and register it again",
		                  t->slot_name, tdb_table_label(t));
	else if (!PQgetisnull(res, 0, 0) && strtoll(PQgetvalue(res, 0, 0), NULL, 10) > warn_bytes)
		tdb_log(tdb_table_label(t),
		        "mirror: WARNING: replication slot %s holds %s bytes of WAL (more than TIERDB_SLOT_WARN_BYTES = %" PRId64
		        "): the server keeps every WAL segment since the mirror's frontier; check the pump's errors above",
		        t->slot_name, PQgetvalue(res, 0, 0), warn_bytes);
	PQclear(res);
	return rc;
}

/* ------------------------------------------------------------ recovery */

/* tdb_settle_interrupted's callback: adopts the operation's snapshot, or removes its files. */
static int settle_mirror(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase,
                         json_t *details, tl_error *err)
{
	mirror_op m;
	memset(&m, 0, sizeof(m));
	m.c = c;
	m.t = t;
	m.label = tdb_table_label(t);
	snprintf(m.op_id, sizeof(m.op_id), "%s", op_id);
	m.details = json_incref(details);
	const char *kind = json_string_value(json_object_get(details, "kind"));
	m.kind = kind != NULL && strcmp(kind, "mirror-copy") == 0 ? "mirror-copy" : "mirror";
	json_t *base = json_object_get(details, "base_snapshot_id");
	m.has_base = json_is_integer(base);
	m.base_snapshot = m.has_base ? json_integer_value(base) : 0;
	int rc = -1;
	m.lake = tdb_lake_open(t, err);
	if (m.lake != NULL) {
		const tl_ice_snapshot *snap = tdb_lake_snapshot_of_op(m.lake, op_id);
		if (snap == NULL) {
			int deleted = 0, missing = 0;
			tdb_lake_remove_op_files(m.lake, json_object_get(details, "files"), m.label, op_id, &deleted, &missing);
			rc = tdb_oplog_set_phase(c, op_id, "aborted", NULL, err);
			if (rc == 0)
				tdb_log(m.label, "mirror: interrupted operation %s (%s) never reached the lake; rolled back", op_id,
				        phase);
		} else if (tdb_lake_current_snapshot(m.lake) != snap->snapshot_id) {
			rc = tl_error_set(err, TL_ERR_CONFLICT,
			                  "interrupted operation %s committed snapshot %" PRId64 " to %s, but the lake has moved "
			                  "on to %" PRId64 "; run tierdb verify --table %s",
			                  op_id, snap->snapshot_id, m.lake->location, tdb_lake_current_snapshot(m.lake), m.label);
		} else {
			m.committed = true;
			m.snapshot_id = snap->snapshot_id;
			rc = publish(&m, err);
			if (rc < 0)
				tdb_abort_transaction(c);
			else
				tdb_log(m.label, "mirror: adopted interrupted operation %s (snapshot %" PRId64 ")", op_id,
				        m.snapshot_id);
		}
	}
	op_free(&m);
	return rc < 0 ? -1 : 1;
}

int tdb_recover_mirror(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	if (strcmp(t->mode, "mirrored") != 0)
		return 0;
	if (tdb_settle_interrupted(c, t, "ingest", "mirror-copy", settle_mirror, err) < 0)
		return -1;
	return tdb_settle_interrupted(c, t, "ingest", "mirror", settle_mirror, err) < 0 ? -1 : 0;
}
