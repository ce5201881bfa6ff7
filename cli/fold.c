/*
 * fold.c: folding the delta into the lake as one snapshot of equality
 * deletes plus data files (SPEC §2, §5, §6 and §8; see fold.h).
 *
 * One fold of one table:
 *
 *   1. skip when the delta holds nothing behind T, or when an unexpired
 *      read pin still reads lake@S ⊕ delta: once its delta rows are gone
 *      that reader would see the old lake rows without their corrections;
 *   2. capture the rows to fold in one statement (one snapshot) into a
 *      session temporary table, with each row's typed key (the pk columns
 *      parsed from the canonical pk text, plus the tier key at the lake
 *      row's old location) as a JSON object;
 *   3. journal the operation (op_log 'compaction', phase 'writing') and
 *      stream the key rows and the upserted rows out with binary COPY into
 *      equality-delete and data files;
 *   4. under the table's lake advisory lock, recheck the pins and commit
 *      every file as one row-delta snapshot stamped with the op id
 *      (phase 'committed');
 *   5. in one transaction: advance S and lake_props, and delete exactly the
 *      folded (pk, version) pairs from the delta (phase 'done', in the
 *      same transaction). A pk corrected again meanwhile has a newer version, so its
 *      row stays for the next fold.
 *
 * Why equality deletes carry the tier key: a table is partitioned on it, and
 * a delete file applies only to data files of its own partition, so each
 * delete row holds the old row's tier key (old_tier_key, else tier_key) and
 * lands where that row lives, while matching on the pk field ids alone. The
 * replacement row of an upsert goes into a data file of the same snapshot,
 * which the deletes do not touch (Iceberg applies equality deletes only to
 * older data), so a correction that moves a row's tier key works too.
 *
 * Rows below the retention line R are never written (their delta rows are
 * cleared with the rest): the lake expired that range on purpose.
 *
 * A delta row the lake cannot hold (a NULL where the lake requires a value,
 * NaN or infinity in a decimal, an infinite timestamp, a payload that does
 * not fit the table's types: rows written by another engine or before
 * tierdb_upsert checked them) must not wedge the fold: the capture finds
 * such rows, leaves them in the delta (readers see them as before), records
 * each as an 'unfoldable_delta_row' warning in tierdb.lake_stats (shown by
 * `tierdb status`, failed by `tierdb verify`) and folds the others. Later
 * folds skip a recorded (pk, version) pair; a new correction of that pk has
 * a new version and is tried afresh.
 *
 * The journal's details hold what recovery needs: the S the fold builds on,
 * the (pk, version) pairs it clears and, before the commit, its files. A
 * fold a crash interrupted is settled at the start of the table's next fold
 * step, on the lake's word: a snapshot stamped with its op id is adopted
 * (published as above), none means its files are deleted and it is aborted.
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
#include "fold.h"
#include "lakestep.h"
#include "metrics.h"
#include "pg.h"
#include "pgcopy.h"
#include "pgtypes.h"
#include "schema_evolution.h"
#include "tiering.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/io.h"

/* Rows per decoded batch (corrections are few; this bounds memory, not speed). */
#define FOLD_BATCH_ROWS 8192

/* The session temporary table holding the rows of the fold in progress. */
#define FOLD_TABLE "pg_temp.tierdb_fold"

/* One fold of one table. */
typedef struct fold_run {
	PGconn *c;
	const tdb_catalog_table *t;
	const char *label;
	char op_id[37];
	tl_ice_table *lake;
	tdb_pg_column *cols; /* the table's columns, which are the lake schema's fields */
	int ncols;
	tdb_pg_column *key_cols; /* the delete files' columns: the pk columns, then the tier key (shallow copies) */
	int nkey;
	int32_t *key_ids;         /* their lake field ids; the first npk are the equality ids */
	int npk;
	tl_ice_writer *deletes;
	tl_ice_writer *data;
	bool closed[2];           /* per writer (deletes, data): closed, so its files stay until removed */
	/* what the capture found */
	int64_t rows;             /* delta rows folded (cleared on publish) */
	int64_t delete_rows;      /* equality-delete rows to write */
	int64_t data_rows;        /* upserted rows to write */
	int64_t max_version;
	int64_t unfoldable;       /* captured rows left in the delta because the lake cannot hold them */
	int64_t batch;            /* the most delta rows this fold takes (TIERDB_COMPACTION_BATCH) */
	char *pks;                /* the folded pairs as array literals, for the version guard */
	char *versions;
	char *locations;          /* where each folded pk's lake row lives after the fold (NULL: none) */
	bool has_base;            /* the S the fold started from (NULL before the first commit) */
	int64_t base_snapshot;
	int64_t snapshot_id;
	bool committed;           /* the lake commit landed */
	bool published;           /* S advanced and the folded rows cleared */
} fold_run;

/* ------------------------------------------------------------ preconditions */

/* Delta rows of the table behind T (the only ones a fold may take). */
static int delta_backlog(const fold_run *r, int64_t *count, tl_error *err)
{
	char id[24], t[24];
	tdb_int_text(r->t->table_id, id);
	tdb_int_text(r->t->cutline_t, t);
	const char *params[] = {id, t};
	PGresult *res = tdb_pg_query(r->c, "counting the delta rows to fold",
	                             "SELECT count(*) FROM tierdb.delta WHERE table_id = $1 AND tier_key < $2::bigint",
	                             2, params, err);
	if (res == NULL)
		return -1;
	*count = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}

/* Unexpired read pins of the table (tdb_live_pins says why any of them blocks the fold). */
static int live_pins(const fold_run *r, int64_t *count, tl_error *err)
{
	return tdb_live_pins(r->c, r->t->table_id, count, err);
}

/* The lake must be at the published S: anything newer awaits recovery. */
static int check_lake_at_s(const fold_run *r, tl_error *err)
{
	return tdb_lake_check_published(r->lake, r->has_base ? r->base_snapshot : TL_ICE_NO_SNAPSHOT, "the fold", err);
}

/* ------------------------------------------------------------ key columns */

/* The delete files' columns (tdb_lake_key_columns). */
static int resolve_key_columns(fold_run *r, tl_error *err)
{
	r->npk = r->t->npk;
	return tdb_lake_key_columns(r->lake, r->t, r->cols, r->ncols, r->label, &r->key_cols, &r->key_ids, &r->nkey,
	                            err);
}

/* ------------------------------------------------------------ capture */

/*
 * Appends an SQL expression giving the canonical pk text `pk` as a text[]
 * of its column values: one column's text is the value itself; composite
 * keys join the parts with chr(31), each part's backslashes and chr(31)
 * escaped with a backslash (SPEC §4). A part is a run of characters other
 * than backslash and chr(31), or escaped pairs, ended by chr(31) or the end.
 */
static void append_pk_parts(int npk, tl_buf *sql)
{
	if (npk == 1) {
		tl_buf_append_str(sql, "ARRAY[d.pk]");
		return;
	}
	tl_buf_printf(sql,
	              "(SELECT array_agg(regexp_replace(p.m[1], '\\\\(.)', '\\1', 'g') ORDER BY p.n)"
	              " FROM regexp_matches(d.pk, '((?:[^\\\\' || chr(31) || ']|\\\\.)*)(' || chr(31) || '|$)', 'g')"
	              " WITH ORDINALITY AS p(m, n) WHERE p.n <= %d)",
	              npk);
}

/* Appends the text form of the canonical tier key value `expr` in the key's type. */
static void append_key_text(tdb_key_type type, const char *expr, tl_buf *sql)
{
	/* Seconds and microseconds apart: interval * number goes through float8. */
	switch (type) {
	case TDB_KEY_BIGINT:
		tl_buf_printf(sql, "(%s)::text", expr);
		break;
	case TDB_KEY_TIMESTAMPTZ:
	case TDB_KEY_TIMESTAMP:
		tl_buf_printf(sql,
		              "(%s 'epoch' + ((%s) / 1000000) * interval '1 second'"
		              " + ((%s) %% 1000000) * interval '1 microsecond')::text",
		              type == TDB_KEY_TIMESTAMPTZ ? "timestamptz" : "timestamp", expr, expr);
		break;
	case TDB_KEY_DATE:
		tl_buf_printf(sql, "(date 'epoch' + (%s)::int)::text", expr);
		break;
	}
}

/* The pk column names as a JSON array (a parameter; the server makes the text[] of it). */
static char *pk_names_json(const fold_run *r)
{
	json_t *names = json_array();
	for (int i = 0; i < r->npk; i++)
		json_array_append_new(names, json_string(r->t->pk_cols[i]));
	char *text = json_dumps(names, JSON_COMPACT);
	json_decref(names);
	return text;
}

/*
 * Drops the session's work table if a fold left it. (A plain DROP TABLE IF
 * EXISTS would print a notice while the session has no temporary schema.)
 */
static int drop_capture(PGconn *c, tl_error *err)
{
	PGresult *res = tdb_pg_query(c, "looking for the fold's work table",
	                             "SELECT to_regclass('" FOLD_TABLE "') IS NOT NULL", 0, NULL, err);
	if (res == NULL)
		return -1;
	bool exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (!exists)
		return 0;
	return tdb_pg_exec(c, "dropping the fold's work table", "DROP TABLE " FOLD_TABLE, 0, NULL, err);
}

/* ------------------------------------------------------------ rows the lake cannot hold */

/* Appends one WHEN arm: rec's column `name` meets `test` (with %s for the column) on `rows`. */
static void append_problem(const char *rows, const char *rec, const char *name, const char *test, const char *why,
                           bool show_value, tl_buf *sql)
{
	tl_buf col;
	tl_buf_init(&col);
	tl_buf_printf(&col, "(%s).", rec);
	tdb_pg_quote_ident(name, &col);
	tl_buf_printf(sql, " WHEN f2.%s AND ", rows);
	tl_buf_printf(sql, test, tdb_buf_cstr(&col));
	tl_buf_append_str(sql, " THEN ");
	tl_buf append;
	tl_buf_init(&append);
	tl_buf_printf(&append, "column \"%s\" %s", name, why);
	tdb_pg_quote_literal(tdb_buf_cstr(&append), sql);
	if (show_value)
		tl_buf_printf(sql, " || ' (' || %s::text || ')'", tdb_buf_cstr(&col));
	tl_buf_free(&append);
	tl_buf_free(&col);
}

/*
 * The statement that names, per captured row (all, or only pk $1), why the
 * lake cannot hold it: a NULL in a field the lake requires, NaN or infinity
 * in a decimal, an infinite date or timestamp; the key of a delete likewise.
 * A payload that does not fit the table's types fails the statement itself.
 */
static void unfoldable_sql(const fold_run *r, tl_buf *sql)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(r->lake->metadata);
	tl_buf_append_str(sql, "UPDATE " FOLD_TABLE " f SET bad = v.reason FROM (SELECT f2.pk, CASE WHEN false THEN NULL");
	for (int i = 0; i < r->ncols; i++) {
		const tdb_pg_column *col = &r->cols[i];
		if (schema->fields[i].required)
			append_problem("put", "p.r", col->name, "%s IS NULL", "is NULL, but the lake table requires a value",
			               false, sql);
		if (col->ice_type.id == TL_ICE_DECIMAL)
			append_problem("put", "p.r", col->name, "%s::text IN ('NaN', 'Infinity', '-Infinity')",
			               "holds a value an Iceberg decimal cannot hold", true, sql);
		else if (col->ice_type.id == TL_ICE_DATE || col->ice_type.id == TL_ICE_TIMESTAMP ||
		         col->ice_type.id == TL_ICE_TIMESTAMPTZ)
			append_problem("put", "p.r", col->name, "NOT isfinite(%s)", "holds a value Iceberg cannot hold", true,
			               sql);
	}
	for (int i = 0; i < r->nkey; i++)
		append_problem("del", "k.r", r->key_cols[i].name, "%s IS NULL", "of the key is NULL", false, sql);
	/* Records as qualified columns (p.r), which no column of the user's table can shadow. */
	tl_buf_append_str(sql, " END AS reason FROM " FOLD_TABLE " f2, LATERAL (SELECT jsonb_populate_record(NULL::");
	tdb_pg_quote_qualified(r->t->schema_name, r->t->table_name, sql);
	tl_buf_append_str(sql, ", CASE WHEN f2.put THEN f2.payload END) AS r) p,"
	                       " LATERAL (SELECT jsonb_populate_record(NULL::");
	tdb_pg_quote_qualified(r->t->schema_name, r->t->table_name, sql);
	tl_buf_append_str(sql, ", CASE WHEN f2.del THEN f2.key END) AS r) k WHERE $1::text IS NULL OR f2.pk = $1) v"
	                       " WHERE v.pk = f.pk AND v.reason IS NOT NULL");
}

/* SQLSTATE classes of a value that does not fit (data exception, integrity, datatype mismatch). */
static bool value_error(const char *sqlstate)
{
	return strncmp(sqlstate, "22", 2) == 0 || strncmp(sqlstate, "23", 2) == 0 || strcmp(sqlstate, "42804") == 0;
}

/*
 * When a payload does not fit the table's types the set-wide check fails
 * as a whole; row by row, each failing row is marked with the error.
 */
static int mark_rows_one_by_one(fold_run *r, const char *check, tl_error *err)
{
	PGresult *res = tdb_pg_query(r->c, "listing the captured rows", "SELECT pk FROM " FOLD_TABLE, 0, NULL, err);
	if (res == NULL)
		return -1;
	int rc = 0;
	for (int i = 0; i < PQntuples(res) && rc == 0; i++) {
		const char *params[] = {PQgetvalue(res, i, 0), NULL};
		tl_error row_err;
		tl_error_clear(&row_err);
		if (tdb_pg_exec(r->c, "checking a delta row", check, 1, params, &row_err) == 0)
			continue;
		if (!value_error(tdb_pg_last_sqlstate())) {
			*err = row_err;
			rc = -1;
			break;
		}
		params[1] = row_err.message;
		rc = tdb_pg_exec(r->c, "marking a delta row the lake cannot hold",
		                 "UPDATE " FOLD_TABLE " SET bad = 'its payload does not fit the table: ' || $2 WHERE pk = $1",
		                 2, params, err);
	}
	PQclear(res);
	return rc;
}

/* Logs the marked rows and records them as warnings in tierdb.lake_stats (the rest see fold.c's header). */
static int record_unfoldable(fold_run *r, tl_error *err)
{
	PGresult *res = tdb_pg_query(r->c, "reading the delta rows the lake cannot hold",
	                             "SELECT pk, version, bad FROM " FOLD_TABLE " WHERE bad IS NOT NULL ORDER BY version",
	                             0, NULL, err);
	if (res == NULL)
		return -1;
	r->unfoldable = PQntuples(res);
	for (int i = 0; i < PQntuples(res); i++)
		tdb_log(r->label,
		        "fold: delta row pk %s (version %s) cannot be written to the lake: %s; it stays in the delta "
		        "(reads see it) and is skipped until it is corrected (tierdb_upsert or tierdb_delete)",
		        PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
	PQclear(res);
	if (r->unfoldable == 0)
		return 0;
	char id[24];
	tdb_int_text(r->t->table_id, id);
	const char *params[] = {id};
	/* Entries of the same pk are replaced; those whose delta row is gone are dropped. */
	return tdb_pg_exec(
		r->c, "recording the delta rows the lake cannot hold",
		"INSERT INTO tierdb.lake_stats AS s (table_id, warnings) SELECT $1::bigint,"
		" jsonb_agg(jsonb_build_object('kind', 'unfoldable_delta_row', 'pk', pk, 'version', version::text,"
		" 'reason', bad, 'found_at', now()) ORDER BY version) FROM " FOLD_TABLE " WHERE bad IS NOT NULL"
		" ON CONFLICT (table_id) DO UPDATE SET warnings = coalesce((SELECT jsonb_agg(w)"
		"  FROM jsonb_array_elements(s.warnings) w WHERE w->>'kind' IS DISTINCT FROM 'unfoldable_delta_row'"
		"  OR (NOT EXISTS (SELECT FROM " FOLD_TABLE " f WHERE f.bad IS NOT NULL AND f.pk = w->>'pk')"
		"      AND EXISTS (SELECT FROM tierdb.delta d WHERE d.table_id = s.table_id AND d.pk = w->>'pk'"
		"                  AND d.version::text = w->>'version'))), '[]') || excluded.warnings",
		1, params, err);
}

/* Finds the captured rows the lake cannot hold, records them and leaves them out of the fold. */
static int set_aside_unfoldable(fold_run *r, tl_error *err)
{
	tl_buf check;
	tl_buf_init(&check);
	unfoldable_sql(r, &check);
	const char *all[] = {NULL};
	tl_error set_err;
	tl_error_clear(&set_err);
	int rc = tdb_pg_exec(r->c, "checking the delta rows to fold", tdb_buf_cstr(&check), 1, all, &set_err);
	if (rc < 0 && value_error(tdb_pg_last_sqlstate()))
		rc = mark_rows_one_by_one(r, tdb_buf_cstr(&check), err);
	else if (rc < 0)
		*err = set_err;
	tl_buf_free(&check);
	if (rc < 0 || record_unfoldable(r, err) < 0)
		return -1;
	return tdb_pg_exec(r->c, "setting aside the delta rows the lake cannot hold",
	                   "DELETE FROM " FOLD_TABLE " WHERE bad IS NOT NULL", 0, NULL, err);
}

/*
 * Captures the rows to fold, in one statement and so one snapshot, into
 * the session's temporary table: every delta row behind T, its old lake
 * location, its typed key as JSON (pk columns plus the tier key at that
 * location), and whether a delete (location at or above R) and a data row
 * (an upsert at or above R) are written for it.
 */
static int capture_rows(fold_run *r, tl_error *err)
{
	if (drop_capture(r->c, err) < 0 ||
	    tdb_pg_exec(r->c, "creating the fold's work table",
	                "CREATE TEMPORARY TABLE tierdb_fold (pk text NOT NULL, version bigint NOT NULL, op smallint,"
	                " tier_key bigint, loc bigint, payload jsonb, key jsonb, del boolean, put boolean, bad text)",
	                0, NULL, err) < 0)
		return -1;
	bool tier_in_pk = r->nkey == r->npk;
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "INSERT INTO " FOLD_TABLE " SELECT d.pk, d.version, d.op, d.tier_key, l.loc, d.payload,"
	                        " jsonb_object(ARRAY(SELECT jsonb_array_elements_text($3::jsonb)), ");
	append_pk_parts(r->npk, &sql);
	tl_buf_append_str(&sql, ")");
	/* $4 is NULL when the tier key is part of the pk (and so already in the key). */
	tl_buf_append_str(&sql, " || CASE WHEN $4::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object($4::text, ");
	append_key_text(r->t->tier_key_type, "l.loc", &sql);
	tl_buf_append_str(&sql, ") END");
	tl_buf_append_str(&sql, ", ($5::bigint IS NULL OR l.loc >= $5::bigint),"
	                        " d.op = 0 AND ($5::bigint IS NULL OR d.tier_key >= $5::bigint)"
	                        " FROM tierdb.delta d, LATERAL (SELECT coalesce(d.old_tier_key, d.tier_key) AS loc) l"
	                        " WHERE d.table_id = $1 AND d.tier_key < $2::bigint AND NOT EXISTS ("
	                        "  SELECT FROM tierdb.lake_stats s, jsonb_array_elements(s.warnings) w"
	                        "  WHERE s.table_id = d.table_id AND w->>'kind' = 'unfoldable_delta_row'"
	                        "  AND w->>'pk' = d.pk AND w->>'version' = d.version::text)"
	                        " ORDER BY d.version LIMIT $6");
	char id[24], t[24], rline[24], batch[24];
	tdb_int_text(r->t->table_id, id);
	tdb_int_text(r->t->cutline_t, t);
	tdb_int_text(r->t->retention_line, rline);
	tdb_int_text(r->batch, batch);
	char *names = pk_names_json(r);
	const char *params[] = {id, t, names, tier_in_pk ? NULL : r->t->tier_key_col,
	                        r->t->has_retention_line ? rline : NULL, batch};
	int rc = tdb_pg_exec(r->c, "reading the delta rows to fold", tdb_buf_cstr(&sql), 6, params, err);
	free(names);
	tl_buf_free(&sql);
	if (rc < 0 || set_aside_unfoldable(r, err) < 0)
		return -1;

	PGresult *res = tdb_pg_query(r->c, "summarising the delta rows to fold",
	                             "SELECT count(*), coalesce(max(version), 0), count(*) FILTER (WHERE del),"
	                             " count(*) FILTER (WHERE put), coalesce(array_agg(pk), '{}')::text,"
	                             " coalesce(array_agg(version), '{}')::text,"
	                             " coalesce(array_agg(CASE WHEN put THEN tier_key END), '{}')::text FROM " FOLD_TABLE,
	                             0, NULL, err);
	if (res == NULL)
		return -1;
	r->rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	r->max_version = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	r->delete_rows = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
	r->data_rows = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
	r->pks = tl_strdup(PQgetvalue(res, 0, 4));
	r->versions = tl_strdup(PQgetvalue(res, 0, 5));
	r->locations = tl_strdup(PQgetvalue(res, 0, 6));
	PQclear(res);
	return 0;
}

/* ------------------------------------------------------------ streaming */

/*
 * Streams `cols` of the rows jsonb_populate_record makes of the JSON column
 * `json` of the captured rows where `filter` holds, ordered by `order` (so
 * that rows arrive grouped by partition), into the writer, then closes it.
 */
static int copy_into(fold_run *r, const char *what, const tdb_pg_column *cols, int ncols, const char *json,
                     const char *filter, const char *order, tl_ice_writer *w, bool *closed, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "COPY (SELECT ");
	tdb_pg_copy_select_list(cols, ncols, &sql);
	tl_buf_append_str(&sql, " FROM (SELECT k.* FROM " FOLD_TABLE " f, jsonb_populate_record(NULL::");
	tdb_pg_quote_qualified(r->t->schema_name, r->t->table_name, &sql);
	tl_buf_printf(&sql, ", f.%s) k WHERE f.%s ORDER BY f.%s) AS r) TO STDOUT (FORMAT binary)", json, filter, order);
	int rc = tdb_copy_into_closed_writer(r->c, tdb_buf_cstr(&sql), what, cols, ncols, w, FOLD_BATCH_ROWS, closed, err);
	tl_buf_free(&sql);
	return rc;
}

/* Writes the equality-delete files and the data files of the captured rows. */
static int write_files(fold_run *r, tl_error *err)
{
	tl_ice_writer_options opts;
	if (tdb_lake_writer_options(r->c, r->t, r->lake, r->op_id, &opts, err) < 0)
		return -1;
	r->deletes = tl_ice_writer_open_deletes(r->lake, r->key_ids, r->nkey, r->key_ids, r->npk, &opts, err);
	r->data = r->deletes != NULL ? tl_ice_writer_open_data(r->lake, &opts, err) : NULL;
	tdb_lake_writer_options_free(&opts);
	if (r->data == NULL)
		return -1;
	if (copy_into(r, "writing the fold's equality deletes", r->key_cols, r->nkey, "key", "del", "loc", r->deletes,
	              &r->closed[0], err) < 0)
		return -1;
	return copy_into(r, "writing the fold's upserted rows", r->cols, r->ncols, "payload", "put", "tier_key", r->data,
	                 &r->closed[1], err);
}

/*
 * Deletes the files of the closed writers (after a commit that did not
 * land); an unclosed writer deletes its own when freed.
 */
static void remove_files(const fold_run *r)
{
	if (r->closed[0])
		tdb_lake_remove_files(r->deletes, r->label, "fold");
	if (r->closed[1])
		tdb_lake_remove_files(r->data, r->label, "fold");
}

/* Commits every file as one row-delta snapshot stamped with the op id (tdb_lake_commit_writers). */
static int commit_files(fold_run *r, tl_error *err)
{
	const tl_ice_writer *writers[] = {r->deletes, r->data};
	return tdb_lake_commit_writers(r->lake, r->has_base ? r->base_snapshot : TL_ICE_NO_SNAPSHOT, "the fold",
	                               r->op_id, writers, 2, &r->snapshot_id, &r->committed, err);
}

/*
 * One transaction: S and lake_props advance (guarded on the old S) when
 * files were committed, and the folded (pk, version) pairs leave the
 * delta. The version guard keeps a row corrected again since the capture.
 */
static int publish(fold_run *r, tl_error *err)
{
	char id[24];
	tdb_int_text(r->t->table_id, id);
	if (tdb_publish_snapshot_begin(r->c, r->label, r->t->table_id, "the fold", r->op_id, r->committed,
	                               r->has_base ? r->base_snapshot : TL_ICE_NO_SNAPSHOT, r->snapshot_id, r->lake,
	                               err) < 0)
		return -1;
	/*
	 * A pk corrected again while the fold ran keeps its newer delta row,
	 * whose old_tier_key named where the lake row lived before the fold; the
	 * fold has moved that row (or removed it), so the newer row must point
	 * at the new place, or the next fold's delete misses it.
	 */
	const char *params[] = {id, r->pks, r->versions, r->locations};
	if (tdb_pg_exec(r->c, "repointing delta rows corrected during the fold",
	                "UPDATE tierdb.delta d SET old_tier_key = f.loc"
	                " FROM unnest($2::text[], $3::bigint[], $4::bigint[]) f(pk, version, loc)"
	                " WHERE d.table_id = $1 AND d.pk = f.pk AND d.version <> f.version",
	                4, params, err) < 0 ||
	    tdb_pg_exec(r->c, "clearing the folded delta rows",
	                "DELETE FROM tierdb.delta WHERE table_id = $1"
	                " AND (pk, version) IN (SELECT * FROM unnest($2::text[], $3::bigint[]))",
	                3, params, err) < 0 ||
	    /* done with the publishing itself: nothing follows that a crash could leave half made */
	    tdb_oplog_set_phase(r->c, r->op_id, "done", NULL, err) < 0 ||
	    tdb_pg_exec(r->c, "committing the fold", "COMMIT", 0, NULL, err) < 0)
		return -1;
	return 0;
}

static int commit_step(void *arg, tl_error *err)
{
	return commit_files(arg, err);
}

static int publish_step(void *arg, tl_error *err)
{
	return publish(arg, err);
}

/* Steps 4 and 5 under the lake lock (tdb_lake_op_finish); a fold that never reached the lake is undone. */
static int commit_and_publish(fold_run *r, bool *blocked, tl_error *err)
{
	tdb_lake_op op = {.c = r->c, .table_id = r->t->table_id, .op_id = r->op_id, .step = "the fold",
	                  .fault_prefix = "fold", .check_pins = true,
	                  .need_commit = tl_ice_writer_nfiles(r->deletes) + tl_ice_writer_nfiles(r->data) > 0,
	                  .commit = commit_step, .publish = publish_step, .arg = r, .committed = &r->committed,
	                  .snapshot_id = &r->snapshot_id};
	return tdb_lake_op_finish(&op, blocked, err);
}

/* ------------------------------------------------------------ recovery */

/*
 * Settles one fold a crash interrupted, under the lake lock. A snapshot
 * stamped with its op id means the commit landed: the fold is adopted
 * (published as it would have been, once no pin needs the old view).
 * None means nothing reached readers: its journaled files are deleted and
 * it is marked aborted, unless the journal says 'committed', where the
 * lake and the journal disagree and an operator must look.
 * 1 settled, 0 left for a later cycle, -1 error.
 */
static int recover_fold(fold_run *r, const char *phase, json_t *details, tl_error *err)
{
	json_t *base = json_object_get(details, "base_snapshot");
	const char *pks = json_string_value(json_object_get(details, "pks"));
	const char *versions = json_string_value(json_object_get(details, "versions"));
	const char *locations = json_string_value(json_object_get(details, "locations"));
	if (pks == NULL || versions == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "the journal of fold %s lacks its (pk, version) pairs", r->op_id);
	if (locations == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT,
		                    "the journal of fold %s lacks the lake locations of its rows (written by an older "
		                    "tierdb); settle it by hand",
		                    r->op_id);
	r->has_base = json_is_integer(base);
	r->base_snapshot = r->has_base ? json_integer_value(base) : 0;
	r->pks = tl_strdup(pks);
	r->versions = tl_strdup(versions);
	r->locations = tl_strdup(locations);
	r->lake = tdb_lake_open(r->t, err);
	if (r->lake == NULL)
		return -1;
	const tl_ice_snapshot *snap = tdb_lake_snapshot_of_op(r->lake, r->op_id);
	int64_t found = snap != NULL ? snap->snapshot_id : TL_ICE_NO_SNAPSHOT;
	if (snap == NULL) {
		if (strcmp(phase, "committed") == 0)
			return tl_error_set(err, TL_ERR_CONFLICT,
			                    "fold %s is journaled as committed but the lake table %s has no snapshot stamped "
			                    "with it; an operator must check the table",
			                    r->op_id, r->lake->location);
		int deleted, missing;
		tdb_lake_remove_op_files(r->lake, json_object_get(details, "files"), r->label, r->op_id, &deleted, &missing);
		if (tdb_oplog_set_phase(r->c, r->op_id, "aborted", NULL, err) < 0)
			return -1;
		tdb_log(r->label, "fold: interrupted operation %s never reached the lake; rolled back", r->op_id);
		return 1;
	}
	if (tdb_lake_current_snapshot(r->lake) != found)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "fold %s committed snapshot %" PRId64 " but the lake table %s has moved on to %" PRId64
		                    "; an operator must check the table",
		                    r->op_id, found, r->lake->location, tdb_lake_current_snapshot(r->lake));
	int64_t pins;
	if (live_pins(r, &pins, err) < 0)
		return -1;
	if (pins > 0) {
		tdb_log(r->label, "fold: adopting interrupted operation %s waits for %" PRId64 " unexpired read pin%s",
		        r->op_id, pins, pins == 1 ? "" : "s");
		return 0;
	}
	r->committed = true;
	r->snapshot_id = found;
	if (tdb_oplog_set_phase(r->c, r->op_id, "committed", &r->snapshot_id, err) < 0 || publish(r, err) < 0) {
		tdb_abort_transaction(r->c);
		return -1;
	}
	tdb_log(r->label, "fold: adopted interrupted operation %s (snapshot %" PRId64 ")", r->op_id, found);
	return 1;
}

/* tdb_settle_interrupted's callback: one interrupted fold, with its own state. */
static int settle_fold(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase, json_t *details,
                       tl_error *err)
{
	fold_run r;
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.t = t;
	r.label = tdb_table_label(t);
	snprintf(r.op_id, sizeof(r.op_id), "%s", op_id);
	int rc = recover_fold(&r, phase, details, err);
	tl_ice_table_free(r.lake);
	free(r.pks);
	free(r.versions);
	free(r.locations);
	return rc;
}

/* Settles the table's interrupted folds; returns how many, or -1. */
static int recover_folds(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	return tdb_settle_interrupted(c, t, "compaction", "fold", settle_fold, err);
}

/* ------------------------------------------------------------ a fold */

/*
 * The journal's details: what the fold takes, and what recovery needs to
 * adopt or undo it after a crash: the S it builds on, the (pk, version)
 * pairs it clears and where each pk's lake row lives afterwards (as
 * Postgres array literals, at most TIERDB_COMPACTION_BATCH long).
 */
static char *fold_details(const fold_run *r)
{
	json_t *details = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:s}", "kind", "fold", "rows", (json_int_t)r->rows,
	                            "max_version", (json_int_t)r->max_version, "deletes", (json_int_t)r->delete_rows,
	                            "upserts", (json_int_t)r->data_rows, "pks", r->pks, "versions", r->versions);
	json_object_set_new(details, "base_snapshot", r->has_base ? json_integer(r->base_snapshot) : json_null());
	json_object_set_new(details, "locations", json_string(r->locations));
	char *text = json_dumps(details, JSON_COMPACT);
	json_decref(details);
	return text;
}

/* Marks an operation that never reached the lake aborted, deleting what it wrote. */
static void abort_fold(fold_run *r)
{
	remove_files(r);
	tl_ice_writer_free(r->deletes); /* an unclosed writer deletes its files; a closed one keeps them */
	tl_ice_writer_free(r->data);
	r->deletes = r->data = NULL;
	r->closed[0] = r->closed[1] = false;
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_abort_transaction(r->c);
	if (tdb_oplog_set_phase(r->c, r->op_id, "aborted", NULL, &ignored) < 0)
		tdb_log(r->label, "fold: could not mark operation %s aborted: %s", r->op_id, ignored.message);
}

/* Bytes of the Parquet files the fold wrote (its delete and data files). */
static int64_t written_bytes(const fold_run *r)
{
	int64_t bytes = 0;
	const tl_ice_writer *const writers[] = {r->deletes, r->data};
	for (int k = 0; k < 2; k++)
		for (int i = 0; writers[k] != NULL && i < tl_ice_writer_nfiles(writers[k]); i++)
			bytes += tl_ice_writer_file(writers[k], i)->file_size_in_bytes;
	return bytes;
}

static int run_fold(fold_run *r, tl_error *err)
{
	double started = tdb_metrics_clock();
	r->lake = tdb_lake_open(r->t, err);
	/* The upserted rows are written with the heap's columns: the lake's fields must be those. */
	if (r->lake == NULL || tdb_pg_table_columns(r->c, (uint32_t)r->t->table_id, &r->cols, &r->ncols, err) < 0 ||
	    tdb_lake_follow_columns(r->c, r->t->table_id, r->lake, r->cols, r->ncols, r->label, "the fold", err) < 0 ||
	    check_lake_at_s(r, err) < 0 || resolve_key_columns(r, err) < 0 || capture_rows(r, err) < 0)
		return -1;
	if (r->rows == 0)
		return 0;
	char *details = fold_details(r);
	int rc = tdb_oplog_begin(r->c, r->t->table_id, "compaction", "writing", details, r->op_id, err);
	free(details);
	if (rc < 0)
		return -1;
	if (write_files(r, err) < 0 || tdb_oplog_record_files(r->c, r->op_id, (const tl_ice_writer *const[]){r->deletes, r->data}, 2, NULL, err) < 0) {
		abort_fold(r);
		return -1;
	}
	bool blocked;
	if (commit_and_publish(r, &blocked, err) < 0) {
		if (!r->committed)
			abort_fold(r);
		if (blocked) {
			tdb_log(r->label, "fold: operation %s aborted: %s; retrying next cycle", r->op_id, err->message);
			tl_error_clear(err);
			return 0;
		}
		return -1;
	}
	r->published = true;
	if (r->committed) {
		tdb_log(r->label,
		        "fold: operation %s folded %" PRId64 " delta row%s (%" PRId64 " equality deletes, %" PRId64
		        " upserted rows, up to version %" PRId64 ") as snapshot %" PRId64,
		        r->op_id, r->rows, r->rows == 1 ? "" : "s", r->delete_rows, r->data_rows, r->max_version,
		        r->snapshot_id);
		tdb_metrics_moved(r->label, TDB_METRICS_FOLD, r->rows, written_bytes(r), tdb_metrics_clock() - started);
	} else
		tdb_log(r->label, "fold: operation %s cleared %" PRId64 " delta row%s below the retention line", r->op_id,
		        r->rows, r->rows == 1 ? "" : "s");
	return 0;
}

int tdb_fold(PGconn *c, const tdb_catalog_table *t, int64_t batch, bool *more, tl_error *err)
{
	*more = false;
	fold_run r;
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.t = t;
	r.batch = batch;
	r.label = tdb_table_label(t);
	r.has_base = t->has_snapshot;
	r.base_snapshot = t->snapshot_id;

	int settled = recover_folds(c, t, err);
	if (settled != 0)
		return settled < 0 ? -1 : 0; /* the catalog row is stale now: fold next cycle */
	char *op_id = NULL, *phase = NULL;
	int unfinished = tdb_oplog_unfinished(c, t->table_id, &op_id, &phase, err);
	if (unfinished < 0)
		return -1;
	if (unfinished > 0) {
		tl_error_set(err, TL_ERR_CONFLICT, "operation %s stopped in phase '%s'; the fold waits until it is recovered",
		             op_id, phase);
		free(op_id);
		free(phase);
		return -1;
	}
	int64_t backlog, pins;
	if (delta_backlog(&r, &backlog, err) < 0)
		return -1;
	if (backlog == 0)
		return 0;
	if (live_pins(&r, &pins, err) < 0)
		return -1;
	if (pins > 0) {
		tdb_log(r.label, "fold: %" PRId64 " delta row%s wait for %" PRId64 " unexpired read pin%s; retrying next cycle",
		        backlog, backlog == 1 ? "" : "s", pins, pins == 1 ? "" : "s");
		return 0;
	}
	int rc = run_fold(&r, err);
	if (rc < 0 && r.op_id[0] != '\0')
		tl_error_prefix(err, "operation %s", r.op_id);
	*more = rc == 0 && r.published && backlog > r.rows;
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_abort_transaction(c);
	drop_capture(c, &ignored);
	tl_ice_writer_free(r.deletes);
	tl_ice_writer_free(r.data);
	tl_ice_table_free(r.lake);
	free(r.key_cols);
	free(r.key_ids);
	tdb_pg_columns_free(r.cols, r.ncols);
	free(r.pks);
	free(r.versions);
	free(r.locations);
	return rc;
}
