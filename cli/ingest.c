/*
 * ingest.c: bulk rows into the lake in one journaled commit (ingest.h).
 *
 * One ingest:
 *
 *   1. stage: every source's rows go, as COPY text in the columns' input
 *      syntax (pgtext.h), into the session temporary table
 *      pg_temp.tierdb_ingest, made LIKE the user's table with its CHECK and
 *      NOT NULL constraints: Postgres parses each value and checks each
 *      constraint, and a failure names the COPY line, which maps back to the
 *      source's row;
 *   2. under the table's lake lock (held to the end, so no fold, tiering or
 *      retention moves S, T or R meanwhile), check the rules no constraint
 *      can state: key columns not null, the tier key in [R, T), no key twice,
 *      no key living in the heap;
 *   3. find the keys the batch replaces: the lake rows at S
 *      (ingest_keys.h) and the delta rows of those keys (cleared when S is
 *      published); for Stream Load (allow_hot), mark the rows whose key
 *      lives in the other tier, which move there through tierdb_upsert;
 *   4. journal the operation, write the equality deletes (each carrying the
 *      old row's tier key, so it lands in that row's partition) and the data
 *      files (from the staging table, ordered by tier key), and copy or
 *      reference the Parquet files adopted as they are;
 *   5. commit everything as one row-delta snapshot stamped with the op id
 *      (tdb_lake_op_finish), then publish it: S advances, the replaced keys'
 *      delta rows leave, the rows at or above T upsert into the heap and the
 *      marked ones are routed (Stream Load), the caller's hook runs, and the
 *      journal says done, all in one transaction. With no row for the lake
 *      (or for tdb_ingest_route, whose cold rows are routed into the delta)
 *      that transaction is the whole of it.
 *
 * A failure before the commit deletes every file written; a failure to
 * publish a landed commit rolls the lake back to S when the connection
 * still works, else leaves the journal for tdb_recover_ingests.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon.h"
#include "digest.h"
#include "ingest.h"
#include "ingest_adopt.h"
#include "ingest_keys.h"
#include "jsonl.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "pg.h"
#include "pgtext.h"
#include "pgtypes.h"
#include "schema_evolution.h"
#include "tiering.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/storage.h"

#define STAGING "pg_temp.tierdb_ingest"
#define LAKE_KEYS "pg_temp.tierdb_ingest_lake"
/* Bytes of COPY text sent per message, and rows per decoded batch. */
#define COPY_CHUNK (1 << 20)
#define BATCH_ROWS 8192

typedef struct ingest_source {
	char *name;
	bool parquet;
	tdb_adopted_file adopted;  /* a Parquet file committed as it is (adopted.adopt) */
	int64_t *blank_lines;      /* JSONL: line numbers of skipped blank lines, ascending */
	int nblank, blank_cap;
} ingest_source;

/* Progress on the terminal: rows, bytes of the sources, rate, ETA. */
typedef struct ingest_progress {
	bool on;
	struct timespec start, last;
	int64_t rows, bytes, total_bytes;
	const char *phase;
} ingest_progress;

struct tdb_ingest {
	PGconn *c;
	tdb_catalog_table t;       /* reloaded under the lake lock at commit */
	tdb_ingest_options opts;
	char *label;
	tl_ice_table *lake;
	tdb_pg_column *cols;
	int ncols;
	int tk;                    /* the tier key's column index */
	int *pk;                   /* the pk columns' indexes */
	bool *generated;           /* per column: GENERATED ALWAYS AS (...) STORED, computed by the staging table */
	char *copy_columns;        /* the staging COPY's column list (every column but the generated ones) */
	ingest_source *sources;
	int nsources;
	/* the COPY into the staging table in progress */
	bool copying;
	int64_t copy_lines;        /* lines sent in this COPY */
	int64_t source_row;        /* the source's row (JSONL: line) number */
	tl_buf out;
	tdb_json_object doc;       /* the current JSON line */
	const tdb_json_member **fields; /* per column, its value in the line (NULL: absent) */
	int next_field;            /* where the next JSON key is looked for first */
	ingest_progress progress;
	/* the commit */
	bool locked;
	char t_literal[128], r_literal[128];
	char op_id[37];
	bool journaled;
	tdb_pg_column *key_cols;   /* the pk columns, then the tier key unless in the pk (shallow copies) */
	int32_t *key_ids;
	int nkey;
	tl_ice_writer *deletes, *data;
	bool closed[2];
	bool has_base;
	int64_t base_s;
	int64_t snapshot_id;
	bool committed;
	char *pks, *versions, *locations; /* the delta pairs the ingest clears, as array literals */
	int64_t delta_rows;
	bool route_cold;           /* tdb_ingest_route: cold rows go to the delta, not the lake */
	tdb_ingest_publish_hook hook;
	void *hook_arg;
	tdb_ingest_result res;
};

/* ------------------------------------------------------------ small helpers */

static const char *source_name(const tdb_ingest *in, int source)
{
	return source >= 0 && source < in->nsources ? in->sources[source].name : "?";
}

static double seconds_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void progress_print(ingest_progress *p, bool final)
{
	if (!p->on)
		return;
	double secs = seconds_since(&p->start);
	if (!final && seconds_since(&p->last) < 1.0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
	double rate = secs > 0 ? (double)p->rows / secs : 0;
	fprintf(stderr, "ingest: %s %" PRId64 " rows, %.1f MB", p->phase, p->rows, (double)p->bytes / 1e6);
	if (p->total_bytes > 0 && p->bytes <= p->total_bytes) {
		double done = (double)p->bytes / (double)p->total_bytes;
		fprintf(stderr, " of %.1f MB (%.0f%%)", (double)p->total_bytes / 1e6, done * 100);
		if (done > 0 && !final) {
			int eta = (int)(secs / done - secs);
			fprintf(stderr, ", ETA %d:%02d", eta / 60, eta % 60);
		}
	}
	fprintf(stderr, ", %.0f rows/s, %.1f s\n", rate, secs);
}

static void progress_add(ingest_progress *p, int64_t rows, int64_t bytes)
{
	p->rows += rows;
	p->bytes += bytes;
	progress_print(p, false);
}

/* Appends a column name quoted, with an optional alias. */
static void append_col(const char *alias, const char *name, tl_buf *sql)
{
	if (alias != NULL)
		tl_buf_printf(sql, "%s.", alias);
	tdb_pg_quote_ident(name, sql);
}

/* "a.x = b.x AND a.y = b.y" over the pk columns. */
static void append_pk_join(const tdb_ingest *in, const char *a, const char *b, tl_buf *sql)
{
	for (int i = 0; i < in->t.npk; i++) {
		if (i > 0)
			tl_buf_append_str(sql, " AND ");
		append_col(a, in->t.pk_cols[i], sql);
		tl_buf_append_str(sql, " = ");
		append_col(b, in->t.pk_cols[i], sql);
	}
}

/* "x, y" over the pk columns. */
static void append_pk_list(const tdb_ingest *in, const char *alias, tl_buf *sql)
{
	for (int i = 0; i < in->t.npk; i++) {
		if (i > 0)
			tl_buf_append_str(sql, ", ");
		append_col(alias, in->t.pk_cols[i], sql);
	}
}

/* The tier key of alias's rows is below T (cold). */
static void append_cold(const tdb_ingest *in, const char *alias, tl_buf *sql)
{
	append_col(alias, in->t.tier_key_col, sql);
	tl_buf_printf(sql, " < %s", in->t_literal);
}

/* The staged row (alias s or none) goes to the lake: below T and not routed row by row. */
static void append_lake_bound(const tdb_ingest *in, const char *alias, tl_buf *sql)
{
	append_cold(in, alias, sql);
	tl_buf_printf(sql, " AND NOT %s%stierdb_route", alias != NULL ? alias : "", alias != NULL ? "." : "");
}

/* Runs a query expected to return at most one row; *row is NULL when it returned none. */
static int query_first(tdb_ingest *in, const char *what, tl_buf *sql, PGresult **row, tl_error *err)
{
	*row = tdb_pg_query(in->c, what, tdb_buf_cstr(sql), 0, NULL, err);
	tl_buf_free(sql);
	if (*row == NULL)
		return -1;
	if (PQntuples(*row) == 0) {
		PQclear(*row);
		*row = NULL;
	}
	return 0;
}

/* An error naming the source and row of a staged row ("events.jsonl: row 7: ..."). */
static int row_error(tdb_ingest *in, const char *source, const char *row, tl_error *err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int row_error(tdb_ingest *in, const char *source, const char *row, tl_error *err, const char *fmt, ...)
{
	char rule[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	return tl_error_set(err, TL_ERR_INVALID, "%s: row %s: %s", source_name(in, atoi(source)), row, rule);
}

/* ------------------------------------------------------------ begin */

static int check_mode(const tdb_catalog_table *t, tl_error *err)
{
	if (strcmp(t->mode, "direct") == 0 || (strcmp(t->mode, "tiered") == 0 && !t->keep_heap))
		return 0;
	if (t->keep_heap)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s.%s keeps every row in the heap (--keep-heap): load history with INSERT or COPY, "
		                    "which the table mirrors into the lake",
		                    t->schema_name, t->table_name);
	return tl_error_set(err, TL_ERR_UNSUPPORTED,
	                    "%s.%s is mirrored: its heap holds every row and the lake follows it; load history with "
	                    "INSERT or COPY",
	                    t->schema_name, t->table_name);
}

/*
 * The session as the lake's streams need it (pgtypes.h), reading the
 * heap alone (the user's table name means the heap, not the union), and
 * waiting as long as it takes for the table's lake lock: another ingest,
 * load or daemon step holds it only while it commits.
 */
static int set_session(tdb_ingest *in, tl_error *err)
{
	return tdb_pg_exec(in->c, "preparing the ingest's session",
	                   "SELECT set_config('tierdb.transparent_reads', 'off', false),"
	                   " set_config('lock_timeout', '0', false),"
	                   " set_config('DateStyle', 'ISO', false), set_config('IntervalStyle', 'postgres', false),"
	                   " set_config('TimeZone', 'UTC', false), set_config('extra_float_digits', '3', false),"
	                   " set_config('bytea_output', 'hex', false)",
	                   0, NULL, err);
}

/*
 * The caller must be allowed to insert and update the table's rows, as an
 * INSERT ... ON CONFLICT DO UPDATE would need; row-level security cannot
 * be applied to rows that never enter the heap, so a caller it applies to
 * is refused rather than let past it.
 */
static int check_privileges(tdb_ingest *in, tl_error *err)
{
	char oid[24];
	tdb_int_text(in->t.table_id, oid);
	const char *params[] = {oid};
	PGresult *res = tdb_pg_query(in->c, "checking the caller's privileges",
	                             "SELECT has_table_privilege($1::oid, 'INSERT'), has_table_privilege($1::oid, 'UPDATE'),"
	                             " row_security_active($1::oid), current_user",
	                             1, params, err);
	if (res == NULL)
		return -1;
	int rc = 0;
	const char *user = PQgetvalue(res, 0, 3);
	if (strcmp(PQgetvalue(res, 0, 0), "t") != 0 || strcmp(PQgetvalue(res, 0, 1), "t") != 0)
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "permission denied: ingest into %s needs INSERT and UPDATE on it, and role \"%s\" lacks "
		                  "them (GRANT INSERT, UPDATE ON %s TO \"%s\")",
		                  in->label, user, in->label, user);
	else if (strcmp(PQgetvalue(res, 0, 2), "t") == 0)
		rc = tl_error_set(err, TL_ERR_INVALID,
		                  "row-level security applies to role \"%s\" on %s, and ingest cannot apply its policies "
		                  "to rows that go straight to the lake: ingest as the table's owner or a role with "
		                  "BYPASSRLS, or route the rows through tierdb_upsert",
		                  user, in->label);
	PQclear(res);
	return rc;
}

static int drop_if_exists(PGconn *c, const char *table, tl_error *err)
{
	const char *params[] = {table};
	PGresult *res = tdb_pg_query(c, "looking for the ingest's work tables", "SELECT to_regclass($1) IS NOT NULL", 1,
	                             params, err);
	if (res == NULL)
		return -1;
	bool exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (!exists)
		return 0;
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_printf(&sql, "DROP TABLE %s", table);
	int rc = tdb_pg_exec(c, "dropping the ingest's work table", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	return rc;
}

static int create_staging(tdb_ingest *in, tl_error *err)
{
	if (drop_if_exists(in->c, STAGING, err) < 0 || drop_if_exists(in->c, LAKE_KEYS, err) < 0)
		return -1;
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "CREATE TEMPORARY TABLE tierdb_ingest (LIKE ");
	tdb_pg_quote_qualified(in->t.schema_name, in->t.table_name, &sql);
	tl_buf_append_str(&sql, " INCLUDING CONSTRAINTS INCLUDING GENERATED,"
	                       " tierdb_source int, tierdb_row bigint, tierdb_route boolean NOT NULL DEFAULT false)");
	int rc = tdb_pg_exec(in->c, "creating the ingest's staging table", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	return rc;
}

/*
 * The generated columns: the staging table computes them as the table
 * would (LIKE ... INCLUDING GENERATED), so no source may give their values.
 */
static int find_generated(tdb_ingest *in, tl_error *err)
{
	char oid[24];
	tdb_int_text(in->t.table_id, oid);
	const char *params[] = {oid};
	PGresult *res = tdb_pg_query(in->c, "reading the generated columns",
	                             "SELECT attname FROM pg_attribute WHERE attrelid = $1::oid AND attnum > 0"
	                             " AND NOT attisdropped AND attgenerated <> ''",
	                             1, params, err);
	if (res == NULL)
		return -1;
	in->generated = tl_calloc((size_t)in->ncols + 1, sizeof(bool));
	for (int r = 0; r < PQntuples(res); r++)
		for (int i = 0; i < in->ncols; i++)
			if (strcmp(in->cols[i].name, PQgetvalue(res, r, 0)) == 0)
				in->generated[i] = true;
	PQclear(res);
	tl_buf list;
	tl_buf_init(&list);
	for (int i = 0; i < in->ncols; i++)
		if (!in->generated[i]) {
			append_col(NULL, in->cols[i].name, &list);
			tl_buf_append_str(&list, ", ");
		}
	tl_buf_append_str(&list, "tierdb_source, tierdb_row");
	in->copy_columns = tl_strdup(tdb_buf_cstr(&list));
	tl_buf_free(&list);
	return 0;
}

static int find_columns(tdb_ingest *in, tl_error *err)
{
	in->tk = -1;
	in->pk = tl_calloc((size_t)in->t.npk, sizeof(int));
	for (int i = 0; i < in->ncols; i++)
		if (strcmp(in->cols[i].name, in->t.tier_key_col) == 0)
			in->tk = i;
	for (int k = 0; k < in->t.npk; k++) {
		in->pk[k] = -1;
		for (int i = 0; i < in->ncols; i++)
			if (strcmp(in->cols[i].name, in->t.pk_cols[k]) == 0)
				in->pk[k] = i;
		if (in->pk[k] < 0)
			return tl_error_set(err, TL_ERR_INVALID, "%s has no column \"%s\" (its registered key)", in->label,
			                    in->t.pk_cols[k]);
	}
	if (in->tk < 0)
		return tl_error_set(err, TL_ERR_INVALID, "%s has no column \"%s\" (its tier key)", in->label,
		                    in->t.tier_key_col);
	in->fields = tl_calloc((size_t)in->ncols, sizeof(*in->fields));
	return find_generated(in, err);
}

static int copy_table(const tdb_catalog_table *src, tdb_catalog_table *dst, PGconn *c, tl_error *err)
{
	int found = tdb_catalog_load_table_by_id(c, src->table_id, dst, err);
	if (found == 0)
		return tl_error_set(err, TL_ERR_NOT_FOUND, "%s.%s is no longer registered", src->schema_name,
		                    src->table_name);
	return found < 0 ? -1 : 0;
}

tdb_ingest *tdb_ingest_begin(PGconn *c, const tdb_catalog_table *t, const tdb_ingest_options *opts, tl_error *err)
{
	if (check_mode(t, err) < 0)
		return NULL;
	tdb_ingest *in = tl_calloc(1, sizeof(*in));
	in->c = c;
	in->opts = *opts;
	in->opts.label = opts->label != NULL ? tl_strdup(opts->label) : NULL;
	tl_buf_init(&in->out);
	tdb_json_object_init(&in->doc);
	in->progress.on = opts->progress;
	in->progress.phase = "reading";
	clock_gettime(CLOCK_MONOTONIC, &in->progress.start);
	in->progress.last = in->progress.start;
	if (copy_table(t, &in->t, c, err) < 0) {
		tdb_ingest_free(in);
		return NULL;
	}
	in->label = tl_strdup(tdb_table_label(&in->t));
	if (set_session(in, err) < 0 || check_privileges(in, err) < 0 || tdb_recover_ingests(c, &in->t, err) < 0 ||
	    tdb_pg_table_columns(c, (uint32_t)in->t.table_id, &in->cols, &in->ncols, err) < 0 ||
	    find_columns(in, err) < 0 || (in->lake = tdb_lake_open(&in->t, err)) == NULL ||
	    tdb_lake_follow_columns(c, in->t.table_id, in->lake, in->cols, in->ncols, in->label, "the ingest", err) < 0 ||
	    create_staging(in, err) < 0) {
		tdb_ingest_free(in);
		return NULL;
	}
	return in;
}

/* ------------------------------------------------------------ staging by COPY */

static int new_source(tdb_ingest *in, const char *name, bool parquet)
{
	in->sources = tl_realloc(in->sources, (size_t)(in->nsources + 1) * sizeof(ingest_source));
	ingest_source *s = &in->sources[in->nsources];
	memset(s, 0, sizeof(*s));
	s->name = tl_strdup(name);
	s->parquet = parquet;
	return in->nsources++;
}

static int flush_copy(tdb_ingest *in, tl_error *err)
{
	if (in->out.len == 0)
		return 0;
	if (PQputCopyData(in->c, (const char *)in->out.data, (int)in->out.len) != 1)
		return tl_error_set(err, TL_ERR_IO, "staging rows: %s", PQerrorMessage(in->c));
	tl_buf_reset(&in->out);
	return 0;
}

static int start_copy(tdb_ingest *in, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_printf(&sql, "COPY " STAGING " (%s) FROM STDIN", in->copy_columns);
	PGresult *res = PQexec(in->c, tdb_buf_cstr(&sql));
	tl_buf_free(&sql);
	if (PQresultStatus(res) != PGRES_COPY_IN) {
		tl_error_set(err, TL_ERR_IO, "staging rows: %s", PQerrorMessage(in->c));
		PQclear(res);
		return -1;
	}
	PQclear(res);
	in->copying = true;
	in->copy_lines = 0;
	in->source_row = 0;
	return 0;
}

/* Stops a COPY that failed on our side; the rows sent are discarded. */
static void cancel_copy(tdb_ingest *in)
{
	if (!in->copying)
		return;
	in->copying = false;
	tl_buf_reset(&in->out);
	PQputCopyEnd(in->c, "the ingest stopped");
	PGresult *res;
	while ((res = PQgetResult(in->c)) != NULL)
		PQclear(res);
}

/* The source row of COPY line `line`: blank lines were never sent. */
static int64_t source_row_of(const ingest_source *s, int64_t line)
{
	int64_t row = line;
	for (int i = 0; i < s->nblank && s->blank_lines[i] <= row; i++)
		row++;
	return row;
}

/*
 * Postgres's error about a staged row, as the user's: the COPY line it
 * names ("COPY tierdb_ingest, line 7, column x: ...") mapped to the
 * source's row, and the staging table's name replaced by the table's.
 */
static int copy_failure(tdb_ingest *in, const PGresult *res, tl_error *err)
{
	const ingest_source *s = &in->sources[in->nsources - 1];
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	const char *context = PQresultErrorField(res, PG_DIAG_CONTEXT);
	const char *column = PQresultErrorField(res, PG_DIAG_COLUMN_NAME);
	/* The COPY's own line, not one a value's parser names first ("JSON data, line 1: ..."). */
	long long line = 0;
	const char *at = context != NULL ? strstr(context, "COPY tierdb_ingest, line ") : NULL;
	if (at != NULL)
		line = strtoll(at + strlen("COPY tierdb_ingest, line "), NULL, 10);
	tl_buf msg;
	tl_buf_init(&msg);
	const char *text = primary != NULL ? primary : PQresultErrorMessage(res);
	const char *rel = strstr(text, " of relation \"tierdb_ingest\"");
	const char *rel2 = strstr(text, "relation \"tierdb_ingest\"");
	if (rel != NULL) {
		tl_buf_append(&msg, text, (size_t)(rel - text));
		tl_buf_append_str(&msg, rel + strlen(" of relation \"tierdb_ingest\""));
	} else if (rel2 != NULL) {
		tl_buf_append(&msg, text, (size_t)(rel2 - text));
		tl_buf_printf(&msg, "%s", in->label);
		tl_buf_append_str(&msg, rel2 + strlen("relation \"tierdb_ingest\""));
	} else
		tl_buf_append_str(&msg, text);
	const char *col_at = at != NULL ? strstr(at, ", column ") : NULL;
	if (col_at != NULL && column == NULL) {
		const char *end = strchr(col_at + 9, ':');
		if (end != NULL)
			tl_buf_printf(&msg, " (column %.*s)", (int)(end - col_at - 9), col_at + 9);
	}
	if (detail != NULL && strncmp(detail, "Failing row contains", 20) != 0)
		tl_buf_printf(&msg, " (%s)", detail);
	if (line > 0)
		tl_error_set(err, TL_ERR_INVALID, "%s: row %" PRId64 ": %s", s->name, source_row_of(s, line),
		             tdb_buf_cstr(&msg));
	else
		tl_error_set(err, TL_ERR_INVALID, "%s: %s", s->name, tdb_buf_cstr(&msg));
	tl_buf_free(&msg);
	return -1;
}

static int end_copy(tdb_ingest *in, tl_error *err)
{
	if (flush_copy(in, err) < 0) {
		cancel_copy(in);
		return -1;
	}
	in->copying = false;
	if (PQputCopyEnd(in->c, NULL) != 1)
		return tl_error_set(err, TL_ERR_IO, "staging rows: %s", PQerrorMessage(in->c));
	int rc = 0;
	PGresult *res;
	while ((res = PQgetResult(in->c)) != NULL) {
		if (rc == 0 && PQresultStatus(res) != PGRES_COMMAND_OK)
			rc = copy_failure(in, res, err);
		PQclear(res);
	}
	return rc;
}

/* Ends the staged line (each column's field followed by a tab): the source and row columns, then the newline. */
static int end_line(tdb_ingest *in, tl_error *err)
{
	tl_buf_printf(&in->out, "%d\t%" PRId64 "\n", in->nsources - 1, in->source_row);
	in->copy_lines++;
	if (in->out.len >= COPY_CHUNK)
		return flush_copy(in, err);
	return 0;
}

/* ------------------------------------------------------------ JSONL */

static int find_field(tdb_ingest *in, const char *key)
{
	int n = in->ncols;
	for (int k = 0; k < n; k++) {
		int i = (in->next_field + k) % n;
		if (strcmp(in->cols[i].name, key) == 0) {
			in->next_field = (i + 1) % n;
			return i;
		}
	}
	return -1;
}

int tdb_ingest_begin_jsonl(tdb_ingest *in, const char *name, tl_error *err)
{
	new_source(in, name, false);
	return start_copy(in, err);
}

static bool blank(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '\n')
			return false;
	return true;
}

static int json_line_error(tdb_ingest *in, tl_error *err, const char *fmt, const char *a, const char *b)
{
	char rule[1024];
	snprintf(rule, sizeof(rule), fmt, a, b);
	tl_error_set(err, TL_ERR_INVALID, "%s: row %" PRId64 ": %s", in->sources[in->nsources - 1].name, in->source_row,
	             rule);
	cancel_copy(in);
	return -1;
}

int tdb_ingest_add_jsonl_line(tdb_ingest *in, const char *line, size_t len, tl_error *err)
{
	ingest_source *s = &in->sources[in->nsources - 1];
	in->source_row++;
	progress_add(&in->progress, 0, (int64_t)len + 1);
	if (blank(line, len)) {
		if (s->nblank == s->blank_cap) {
			s->blank_cap = s->blank_cap ? 2 * s->blank_cap : 16;
			s->blank_lines = tl_realloc(s->blank_lines, (size_t)s->blank_cap * sizeof(int64_t));
		}
		s->blank_lines[s->nblank++] = in->source_row;
		return 0;
	}
	char why[256];
	if (tdb_json_parse_object(line, len, &in->doc, why, sizeof(why)) < 0)
		return json_line_error(in, err, "not valid JSON: %s%s", why, "");
	memset(in->fields, 0, (size_t)in->ncols * sizeof(*in->fields));
	for (int m = 0; m < in->doc.nmembers; m++) {
		const tdb_json_member *member = &in->doc.members[m];
		int col = find_field(in, member->key);
		if (col < 0)
			return json_line_error(in, err, "\"%s\" is not a column of %s", member->key, in->label);
		if (in->generated[col])
			return json_line_error(in, err, "column \"%s\" is generated: %s computes its value", member->key,
			                       in->label);
		in->fields[col] = member;
	}
	for (int i = 0; i < in->ncols; i++) {
		if (in->generated[i])
			continue;
		tl_error bad;
		tl_error_clear(&bad);
		if (tdb_copy_text_from_json(in->fields[i], &in->cols[i], &in->out, &bad) < 0)
			return json_line_error(in, err, "column \"%s\": the value %s", in->cols[i].name, bad.message);
		tl_buf_append_byte(&in->out, '\t');
	}
	progress_add(&in->progress, 1, 0);
	if (end_line(in, err) < 0) {
		cancel_copy(in);
		return -1;
	}
	return 0;
}

int tdb_ingest_end_jsonl(tdb_ingest *in, tl_error *err)
{
	return end_copy(in, err);
}

int tdb_ingest_add_jsonl_file(tdb_ingest *in, const char *name, FILE *f, tl_error *err)
{
	if (tdb_ingest_begin_jsonl(in, name, err) < 0)
		return -1;
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
		in->progress.total_bytes += (int64_t)st.st_size; /* for the ETA */
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		size_t len = (size_t)n;
		if (len > 0 && line[len - 1] == '\n')
			len--;
		rc = tdb_ingest_add_jsonl_line(in, line, len, err);
	}
	free(line);
	if (rc == 0 && ferror(f)) {
		cancel_copy(in);
		return tl_error_set(err, TL_ERR_IO, "%s: reading: %s", name, strerror(errno));
	}
	return rc < 0 ? -1 : tdb_ingest_end_jsonl(in, err);
}

/* ------------------------------------------------------------ Parquet */

/*
 * Maps each column of the file to a table column: by Iceberg field id when
 * the file has them (the lake's current schema lists the table's columns
 * in order), else by name. map[file column] = table column.
 */
static int map_parquet_columns(tdb_ingest *in, const char *name, const tl_pq_schema *schema, int *map,
                               tl_error *err)
{
	const tl_ice_schema *lake = tl_ice_metadata_current_schema(in->lake->metadata);
	bool *taken = tl_calloc((size_t)in->ncols, sizeof(bool));
	int rc = 0;
	for (int i = 0; i < schema->ncolumns && rc == 0; i++) {
		const tl_pq_column *col = &schema->columns[i];
		map[i] = -1;
		if (col->field_id >= 0) {
			for (int k = 0; k < lake->nfields && k < in->ncols; k++)
				if (lake->fields[k].id == col->field_id)
					map[i] = k;
		} else {
			for (int k = 0; k < in->ncols; k++)
				if (strcmp(in->cols[k].name, col->name) == 0)
					map[i] = k;
		}
		if (map[i] < 0 && col->field_id >= 0)
			rc = tl_error_set(err, TL_ERR_INVALID, "%s: column \"%s\" (field id %d) is no field of %s's lake table",
			                  name, col->name, (int)col->field_id, in->label);
		else if (map[i] < 0)
			rc = tl_error_set(err, TL_ERR_INVALID, "%s: column \"%s\" is not a column of %s", name, col->name,
			                  in->label);
		else if (taken[map[i]])
			rc = tl_error_set(err, TL_ERR_INVALID, "%s: two columns of the file map to column \"%s\"", name,
			                  in->cols[map[i]].name);
		else
			taken[map[i]] = true;
	}
	free(taken);
	return rc;
}

/* Stages every row of the file's batches; the tier key's range goes to the adoption check. */
static int stage_parquet_rows(tdb_ingest *in, tl_pq_reader *r, const int *map, tdb_adopted_file *adopt,
                              tl_error *err)
{
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	int *from = tl_malloc((size_t)in->ncols * sizeof(int)); /* table column -> file column */
	for (int k = 0; k < in->ncols; k++)
		from[k] = -1;
	for (int i = 0; i < schema->ncolumns; i++)
		from[map[i]] = i;
	tl_pq_batch *batch = tl_pq_reader_batch_new(r, BATCH_ROWS);
	int rc = 0;
	int64_t n;
	while (rc == 0 && (n = tl_pq_reader_next(r, batch, err)) > 0) {
		for (int64_t row = 0; row < n && rc == 0; row++) {
			in->source_row++;
			for (int k = 0; k < in->ncols && rc == 0; k++) {
				if (in->generated[k])
					continue; /* computed by the staging table; the file's value is not taken */
				if (from[k] < 0)
					tl_buf_append_str(&in->out, TDB_COPY_TEXT_NULL);
				else
					rc = tdb_copy_text_from_parquet(&schema->columns[from[k]], &batch->columns[from[k]], row,
					                                &in->cols[k], &in->out, err);
				tl_buf_append_byte(&in->out, '\t');
			}
			if (rc == 0)
				rc = end_line(in, err);
		}
		if (rc == 0 && adopt->adopt && from[in->tk] >= 0)
			tdb_adopt_note_keys(adopt, &schema->columns[from[in->tk]], &batch->columns[from[in->tk]], n);
		progress_add(&in->progress, n, 0);
	}
	if (n < 0)
		rc = -1;
	tl_pq_batch_free(batch);
	free(from);
	return rc;
}

int tdb_ingest_add_parquet(tdb_ingest *in, const char *path, tl_error *err)
{
	int source = new_source(in, path, true);
	ingest_source *s = &in->sources[source];
	uint64_t size = 0;
	bool is_dir = false;
	tl_input *input = NULL;
	tl_pq_reader *r = NULL;
	int *map = NULL;
	int rc = -1;
	if (tl_storage_stat(path, &size, &is_dir, err) < 0 || (input = tl_storage_open_read(path, err)) == NULL ||
	    (r = tl_pq_reader_open(input, err)) == NULL)
		goto done; /* the message names the file */
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	map = tl_calloc((size_t)schema->ncolumns + 1, sizeof(int));
	if (map_parquet_columns(in, path, schema, map, err) < 0)
		goto done;
	tdb_adopt_consider(&s->adopted, in->lake, path, size, schema, map, in->tk);
	for (int i = 0; i < schema->ncolumns && s->adopted.adopt; i++)
		if (in->generated[map[i]]) {
			s->adopted.adopt = false;
			snprintf(s->adopted.why_not, sizeof(s->adopted.why_not),
			         "column \"%s\" is generated: the table computes its value", schema->columns[i].name);
		}
	in->progress.total_bytes += (int64_t)size;
	if (start_copy(in, err) < 0)
		goto done;
	if (stage_parquet_rows(in, r, map, &s->adopted, err) < 0) {
		tl_error_prefix(err, "%s", path);
		cancel_copy(in);
		goto done;
	}
	rc = end_copy(in, err);
	tdb_adopt_check_partition(&s->adopted, in->lake);
	if (rc == 0 && !s->adopted.adopt)
		tdb_log(in->label, "ingest: %s is rewritten, not adopted as it is: %s", path, s->adopted.why_not);
	progress_add(&in->progress, 0, (int64_t)size);
done:
	free(map);
	tl_pq_reader_free(r);
	if (input != NULL)
		tl_input_close(input);
	return rc;
}

/* ------------------------------------------------------------ the rules */

/* T and R as literals of the tier key's type. */
static int key_literals(tdb_ingest *in, tl_error *err)
{
	tl_buf lit;
	tl_buf_init(&lit);
	if (tdb_key_literal(in->c, in->t.tier_key_type, in->t.cutline_t, &lit, err) < 0) {
		tl_buf_free(&lit);
		return -1;
	}
	snprintf(in->t_literal, sizeof(in->t_literal), "%s", tdb_buf_cstr(&lit));
	tl_buf_reset(&lit);
	in->r_literal[0] = '\0';
	if (in->t.has_retention_line) {
		if (tdb_key_literal(in->c, in->t.tier_key_type, in->t.retention_line, &lit, err) < 0) {
			tl_buf_free(&lit);
			return -1;
		}
		snprintf(in->r_literal, sizeof(in->r_literal), "%s", tdb_buf_cstr(&lit));
	}
	tl_buf_free(&lit);
	return 0;
}

static int check_null_keys(tdb_ingest *in, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT tierdb_source, tierdb_row, CASE");
	for (int i = 0; i <= in->t.npk; i++) {
		const char *col = i < in->t.npk ? in->t.pk_cols[i] : in->t.tier_key_col;
		tl_buf_append_str(&sql, " WHEN ");
		append_col(NULL, col, &sql);
		tl_buf_append_str(&sql, " IS NULL THEN ");
		tdb_pg_quote_literal(col, &sql);
	}
	tl_buf_append_str(&sql, " END FROM " STAGING " WHERE false");
	for (int i = 0; i <= in->t.npk; i++) {
		tl_buf_append_str(&sql, " OR ");
		append_col(NULL, i < in->t.npk ? in->t.pk_cols[i] : in->t.tier_key_col, &sql);
		tl_buf_append_str(&sql, " IS NULL");
	}
	tl_buf_append_str(&sql, " ORDER BY 1, 2 LIMIT 1");
	PGresult *row;
	if (query_first(in, "checking the key columns", &sql, &row, err) < 0)
		return -1;
	if (row == NULL)
		return 0;
	row_error(in, PQgetvalue(row, 0, 0), PQgetvalue(row, 0, 1), err,
	          "column \"%s\" is null, but it is part of the table's key", PQgetvalue(row, 0, 2));
	PQclear(row);
	return -1;
}

/* The first staged row whose tier key meets `test` (SQL with %s for the column), or none. */
static int check_range(tdb_ingest *in, const char *test, const char *rule, tl_error *err)
{
	tl_buf col, sql;
	tl_buf_init(&col);
	tl_buf_init(&sql);
	append_col(NULL, in->t.tier_key_col, &col);
	tl_buf_printf(&sql, "SELECT tierdb_source, tierdb_row, %s::text FROM " STAGING " WHERE ", tdb_buf_cstr(&col));
	tl_buf_printf(&sql, test, tdb_buf_cstr(&col));
	tl_buf_append_str(&sql, " ORDER BY 1, 2 LIMIT 1");
	tl_buf_free(&col);
	PGresult *row;
	if (query_first(in, "checking the tier keys", &sql, &row, err) < 0)
		return -1;
	if (row == NULL)
		return 0;
	row_error(in, PQgetvalue(row, 0, 0), PQgetvalue(row, 0, 1), err, "tier key \"%s\" = %s %s",
	          in->t.tier_key_col, PQgetvalue(row, 0, 2), rule);
	PQclear(row);
	return -1;
}

static int check_ranges(tdb_ingest *in, tl_error *err)
{
	char test[200], rule[400];
	if (!in->opts.allow_hot) {
		snprintf(test, sizeof(test), "%%s >= %s", in->t_literal);
		snprintf(rule, sizeof(rule),
		         "is at or above the cut-line T = %s: rows there belong in the heap (INSERT them into %s); "
		         "ingest takes history below T",
		         in->t_literal, in->label);
		if (check_range(in, test, rule, err) < 0)
			return -1;
	}
	if (in->r_literal[0] != '\0') {
		snprintf(test, sizeof(test), "%%s < %s", in->r_literal);
		snprintf(rule, sizeof(rule), "is below the retention line R = %s: the lake expired that range on purpose",
		         in->r_literal);
		if (check_range(in, test, rule, err) < 0)
			return -1;
	}
	return 0;
}

static int check_duplicates(tdb_ingest *in, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT s[1], r[1], s[2], r[2], k FROM (SELECT array_agg(tierdb_source ORDER BY"
	                        " tierdb_source, tierdb_row) s, array_agg(tierdb_row ORDER BY tierdb_source, tierdb_row) r,"
	                        " row(");
	append_pk_list(in, NULL, &sql);
	tl_buf_append_str(&sql, ")::text k FROM " STAGING " GROUP BY ");
	append_pk_list(in, NULL, &sql);
	tl_buf_append_str(&sql, " HAVING count(*) > 1) d ORDER BY 1, 2 LIMIT 1");
	PGresult *row;
	if (query_first(in, "checking for repeated keys", &sql, &row, err) < 0)
		return -1;
	if (row == NULL)
		return 0;
	row_error(in, PQgetvalue(row, 0, 2), PQgetvalue(row, 0, 3), err,
	          "repeats the key %s of %s row %s: one ingest may hold each key once", PQgetvalue(row, 0, 4),
	          source_name(in, atoi(PQgetvalue(row, 0, 0))), PQgetvalue(row, 0, 1));
	PQclear(row);
	return -1;
}

/* A cold row whose key lives in the heap (at or above T) would make the key live twice. */
static int check_heap_keys(tdb_ingest *in, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT s.tierdb_source, s.tierdb_row, h.");
	tdb_pg_quote_ident(in->t.tier_key_col, &sql);
	tl_buf_append_str(&sql, "::text FROM " STAGING " s JOIN ");
	tdb_pg_quote_qualified(in->t.schema_name, in->t.table_name, &sql);
	tl_buf_append_str(&sql, " h ON ");
	append_pk_join(in, "s", "h", &sql);
	tl_buf_append_str(&sql, " WHERE ");
	append_cold(in, "s", &sql);
	tl_buf_append_str(&sql, " AND NOT (");
	append_cold(in, "h", &sql);
	tl_buf_append_str(&sql, ") ORDER BY 1, 2 LIMIT 1");
	PGresult *row;
	if (query_first(in, "checking the keys against the heap", &sql, &row, err) < 0)
		return -1;
	if (row == NULL)
		return 0;
	row_error(in, PQgetvalue(row, 0, 0), PQgetvalue(row, 0, 1), err,
	          "its key lives in the heap (tier key %s, at or above T); move that row with UPDATE or delete it first",
	          PQgetvalue(row, 0, 2));
	PQclear(row);
	return -1;
}

static int count_rows(tdb_ingest *in, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT count(*) FILTER (WHERE ");
	append_lake_bound(in, NULL, &sql);
	tl_buf_append_str(&sql, "), count(*) FILTER (WHERE NOT (");
	append_cold(in, NULL, &sql);
	tl_buf_append_str(&sql, ")) FROM " STAGING);
	PGresult *res = tdb_pg_query(in->c, "counting the staged rows", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	in->res.rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	in->res.hot_rows = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	PQclear(res);
	return 0;
}

static int check_rules(tdb_ingest *in, tl_error *err)
{
	/* Autovacuum never analyzes temporary tables: without statistics the joins below would be planned blind. */
	if (tdb_pg_exec(in->c, "analyzing the staged rows", "ANALYZE " STAGING, 0, NULL, err) < 0)
		return -1;
	if (key_literals(in, err) < 0 || check_null_keys(in, err) < 0 || check_ranges(in, err) < 0 ||
	    check_duplicates(in, err) < 0)
		return -1;
	/* Stream Load moves such keys between the tiers instead (mark_routed). */
	return in->opts.allow_hot ? 0 : check_heap_keys(in, err);
}

/* ------------------------------------------------------------ what the batch replaces */

/* SQL of the canonical pk text of alias's rows (tierdb.pk_expr, as the extension writes the delta's pk). */
static int pk_text_sql(tdb_ingest *in, const char *alias, tl_buf *out, tl_error *err)
{
	json_t *st = json_object(), *cols = json_array();
	for (int i = 0; i < in->t.npk; i++)
		json_array_append_new(cols, json_string(in->t.pk_cols[i]));
	json_object_set_new(st, "pk_cols", cols);
	char *state = json_dumps(st, JSON_COMPACT);
	json_decref(st);
	char oid[24];
	tdb_int_text(in->t.table_id, oid);
	const char *params[] = {oid, state, alias};
	PGresult *res = tdb_pg_query(in->c, "reading the key's canonical form",
	                             "SELECT tierdb.pk_expr_sql($1::oid::regclass, $2::jsonb, $3)", 3, params, err);
	free(state);
	if (res == NULL)
		return -1;
	tl_buf_append_str(out, PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

/*
 * The delta rows of the batch's keys: cleared when S is published (the
 * ingested row is newer than any of them). Their (pk, version) pairs and
 * the ingested row's tier key go to the journal, as the fold's do.
 */
static int capture_delta(tdb_ingest *in, tl_error *err)
{
	tl_buf sql, loc;
	tl_buf_init(&sql);
	tl_buf_init(&loc);
	tl_buf_append_str(&loc, "s.");
	tdb_pg_quote_ident(in->t.tier_key_col, &loc);
	tl_buf_append_str(&loc, "::text");
	tl_buf_append_str(&sql, "SELECT count(*), coalesce(array_agg(d.pk ORDER BY d.version), '{}')::text,"
	                        " coalesce(array_agg(d.version ORDER BY d.version), '{}')::text, coalesce(array_agg(");
	tdb_key_canonical_sql(in->t.tier_key_type, tdb_buf_cstr(&loc), &sql);
	tl_buf_append_str(&sql, " ORDER BY d.version), '{}')::text FROM tierdb.delta d JOIN " STAGING " s ON d.pk = ");
	int rc = pk_text_sql(in, "s", &sql, err);
	tl_buf_free(&loc);
	if (rc < 0) {
		tl_buf_free(&sql);
		return -1;
	}
	char id[24];
	tdb_int_text(in->t.table_id, id);
	tl_buf_printf(&sql, " WHERE d.table_id = %s AND ", id);
	append_lake_bound(in, "s", &sql);
	PGresult *res = tdb_pg_query(in->c, "reading the delta rows of the ingested keys", tdb_buf_cstr(&sql), 0, NULL,
	                             err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	in->delta_rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	in->pks = tl_strdup(PQgetvalue(res, 0, 1));
	in->versions = tl_strdup(PQgetvalue(res, 0, 2));
	in->locations = tl_strdup(PQgetvalue(res, 0, 3));
	PQclear(res);
	return 0;
}

/*
 * The replaced keys that lived only in the delta (rows a correction put
 * below T): `replaced` counts them beside the lake rows the equality
 * deletes replace.
 */
static int count_delta_only_keys(tdb_ingest *in, tl_error *err)
{
	if (in->delta_rows == 0)
		return 0;
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "SELECT count(DISTINCT p) FROM unnest($1::text[]) p WHERE NOT EXISTS (SELECT FROM " LAKE_KEYS
	                        " l WHERE ");
	if (pk_text_sql(in, "l", &sql, err) < 0) {
		tl_buf_free(&sql);
		return -1;
	}
	tl_buf_append_str(&sql, " = p)");
	const char *params[] = {in->pks};
	PGresult *res = tdb_pg_query(in->c, "counting the keys replaced in the delta", tdb_buf_cstr(&sql), 1, params, err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	in->res.replaced += strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}

/*
 * The lake rows at S whose keys the batch holds (every staged row for
 * Stream Load, whose hot rows may move a key out of the lake; the cold ones
 * otherwise), staged in LAKE_KEYS with their key columns and tier key.
 */
static int find_lake_keys(tdb_ingest *in, tl_error *err)
{
	tl_buf sql, from;
	tl_buf_init(&sql);
	tl_buf_init(&from);
	tl_buf_append_str(&sql, "CREATE TEMPORARY TABLE tierdb_ingest_lake AS SELECT ");
	for (int i = 0; i < in->nkey; i++) {
		if (i > 0)
			tl_buf_append_str(&sql, ", ");
		append_col(NULL, in->key_cols[i].name, &sql);
	}
	tl_buf_append_str(&sql, " FROM " STAGING " WHERE false");
	tl_buf_append_str(&from, STAGING " WHERE ");
	if (in->opts.allow_hot)
		tl_buf_append_str(&from, "true");
	else
		append_cold(in, NULL, &from);
	tdb_key_search search = {.c = in->c, .lake = in->lake, .has_base = in->has_base, .base_s = in->base_s,
	                         .key_cols = in->key_cols, .key_ids = in->key_ids, .nkey = in->nkey, .npk = in->t.npk,
	                         .keys_from = tdb_buf_cstr(&from), .into = LAKE_KEYS};
	int rc = tdb_pg_exec(in->c, "creating the ingest's lake key table", tdb_buf_cstr(&sql), 0, NULL, err);
	if (rc == 0)
		rc = tdb_find_lake_keys(&search, err);
	tl_buf_free(&sql);
	tl_buf_free(&from);
	return rc;
}

/* ------------------------------------------------------------ rows at or above T (Stream Load) */

/*
 * Marks the staged rows that are routed one by one with tierdb_upsert
 * rather than written as a set: those whose key lives in the other tier
 * (a hot row whose key is in the lake at S or in the delta, a cold row
 * whose key is in the heap) and, for tdb_ingest_route, every cold row.
 * tierdb_upsert moves a key between the tiers through the delta, which
 * every reader merges live, so a reader holding an older pin sees the key
 * once too (a new snapshot would hide the move from it).
 */
static int mark_routed(tdb_ingest *in, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	char id[24];
	tdb_int_text(in->t.table_id, id);
	tl_buf_append_str(&sql, "UPDATE " STAGING " s SET tierdb_route = true WHERE CASE WHEN ");
	append_cold(in, "s", &sql);
	if (in->route_cold)
		tl_buf_append_str(&sql, " THEN true");
	else {
		tl_buf_append_str(&sql, " THEN EXISTS (SELECT FROM ");
		tdb_pg_quote_qualified(in->t.schema_name, in->t.table_name, &sql);
		tl_buf_append_str(&sql, " h WHERE ");
		append_pk_join(in, "s", "h", &sql);
		tl_buf_append_str(&sql, " AND NOT (");
		append_cold(in, "h", &sql);
		tl_buf_append_str(&sql, "))");
	}
	tl_buf_append_str(&sql, " ELSE EXISTS (SELECT FROM " LAKE_KEYS " l WHERE ");
	append_pk_join(in, "s", "l", &sql);
	tl_buf_printf(&sql, ") OR EXISTS (SELECT FROM tierdb.delta d WHERE d.table_id = %s AND d.pk = ", id);
	if (pk_text_sql(in, "s", &sql, err) < 0) {
		tl_buf_free(&sql);
		return -1;
	}
	tl_buf_append_str(&sql, ") END");
	int rc = tdb_pg_exec(in->c, "finding the keys that move between the tiers", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	return rc;
}

/* Appends the columns a source gives (every one but the generated ones), with an optional alias. */
static void append_given_columns(const tdb_ingest *in, const char *alias, tl_buf *sql)
{
	bool first = true;
	for (int i = 0; i < in->ncols; i++) {
		if (in->generated[i])
			continue;
		if (!first)
			tl_buf_append_str(sql, ", ");
		append_col(alias, in->cols[i].name, sql);
		first = false;
	}
}

/*
 * The hot rows that stay in the heap's tier upsert into it as a set: the
 * heap rows of their keys go, and they are inserted with a plain INSERT
 * (the table's triggers, constraints and privileges apply as to any).
 */
static int upsert_heap(tdb_ingest *in, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "WITH d AS (DELETE FROM ");
	tdb_pg_quote_qualified(in->t.schema_name, in->t.table_name, &sql);
	tl_buf_append_str(&sql, " h USING " STAGING " s WHERE ");
	append_pk_join(in, "s", "h", &sql);
	tl_buf_append_str(&sql, " AND NOT (");
	append_cold(in, "h", &sql);
	tl_buf_append_str(&sql, ") AND NOT (");
	append_cold(in, "s", &sql);
	tl_buf_append_str(&sql, ") AND NOT s.tierdb_route RETURNING 1) SELECT count(*) FROM d");
	PGresult *res = tdb_pg_query(in->c, "replacing the heap rows of the loaded keys", tdb_buf_cstr(&sql), 0, NULL,
	                             err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	in->res.replaced += strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "WITH i AS (INSERT INTO ");
	tdb_pg_quote_qualified(in->t.schema_name, in->t.table_name, &sql);
	tl_buf_append_str(&sql, " (");
	append_given_columns(in, NULL, &sql);
	tl_buf_append_str(&sql, ") SELECT ");
	append_given_columns(in, NULL, &sql);
	tl_buf_append_str(&sql, " FROM " STAGING " WHERE NOT (");
	append_cold(in, NULL, &sql);
	tl_buf_append_str(&sql, ") AND NOT tierdb_route ORDER BY tierdb_source, tierdb_row RETURNING 1)"
	                        " SELECT count(*) FROM i");
	res = tdb_pg_query(in->c, "inserting the loaded rows into the heap", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	in->res.heap_rows += strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}

/*
 * The marked rows, one by one with tierdb_upsert in source order, inside
 * the caller's transaction: one PL/pgSQL block (one subtransaction, not
 * one per row) whose error names the failing row's source and row.
 * tierdb_upsert holds a lock per key until the transaction ends, so the
 * rows routed this way are few by design (a trickle, the keys that move).
 */
static int route_rows(tdb_ingest *in, tl_error *err)
{
	tl_buf sql, names;
	tl_buf_init(&sql);
	tl_buf_init(&names);
	tl_buf_append_str(&names, "ARRAY[");
	for (int i = 0; i < in->nsources; i++) {
		if (i > 0)
			tl_buf_append_str(&names, ", ");
		tdb_pg_quote_literal(in->sources[i].name, &names);
	}
	tl_buf_append_str(&names, "]::text[]");
	char oid[24];
	tdb_int_text(in->t.table_id, oid);
	tl_buf image;
	tl_buf_init(&image);
	tl_buf_append_str(&image, "to_jsonb(s) - 'tierdb_source' - 'tierdb_row' - 'tierdb_route'");
	for (int i = 0; i < in->ncols; i++)
		if (in->generated[i]) { /* computed again by the row's own INSERT */
			tl_buf_append_str(&image, " - ");
			tdb_pg_quote_literal(in->cols[i].name, &image);
		}
	tl_buf_printf(&sql,
	              "DO $tierdb_ingest$\n"
	              "DECLARE r record; src int; line bigint; heap bigint := 0; delta bigint := 0; d text; h text;\n"
	              "BEGIN\n"
	              "  FOR r IN SELECT s.tierdb_source, s.tierdb_row,"
	              " %s AS image"
	              " FROM " STAGING " s WHERE s.tierdb_route ORDER BY s.tierdb_source, s.tierdb_row LOOP\n"
	              "    src := r.tierdb_source; line := r.tierdb_row;\n"
	              "    IF pg_catalog.tierdb_upsert(%s::oid::regclass, r.image) = 'heap' THEN heap := heap + 1;"
	              " ELSE delta := delta + 1; END IF;\n"
	              "  END LOOP;\n"
	              "  PERFORM set_config('tierdb_ingest.routed', heap || ' ' || delta, true);\n"
	              "EXCEPTION WHEN OTHERS THEN\n"
	              "  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;\n"
	              "  RAISE EXCEPTION USING ERRCODE = SQLSTATE, DETAIL = coalesce(d, ''), HINT = coalesce(h, ''),"
	              " MESSAGE = CASE WHEN line IS NULL THEN SQLERRM"
	              " ELSE format('%%s: row %%s: %%s', (%s)[src + 1], line, SQLERRM) END;\n"
	              "END\n"
	              "$tierdb_ingest$",
	              tdb_buf_cstr(&image), oid, tdb_buf_cstr(&names));
	tl_buf_free(&names);
	tl_buf_free(&image);
	int rc = tdb_pg_exec(in->c, "routing rows with tierdb_upsert", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	if (rc < 0)
		return -1;
	PGresult *res = tdb_pg_query(in->c, "reading the routes", "SELECT current_setting('tierdb_ingest.routed', true)",
	                             0, NULL, err);
	if (res == NULL)
		return -1;
	int64_t heap = 0, delta = 0;
	if (sscanf(PQgetvalue(res, 0, 0), "%" SCNd64 " %" SCNd64, &heap, &delta) == 2) {
		in->res.heap_rows += heap;
		in->res.delta_rows += delta;
	}
	PQclear(res);
	return 0;
}

/* What the transaction that publishes (or, without a lake commit, applies) the rows does besides S. */
static int apply_in_transaction(tdb_ingest *in, tl_error *err)
{
	if (in->opts.allow_hot && (upsert_heap(in, err) < 0 || route_rows(in, err) < 0))
		return -1;
	return in->hook != NULL ? in->hook(in->hook_arg, in->c, &in->res, err) : 0;
}

/* ------------------------------------------------------------ files */

/* Streams a COPY of `cols` from `from_where` ordered by `order` into the writer, then closes it. */
static int copy_into(tdb_ingest *in, const char *what, const tdb_pg_column *cols, int ncols, const char *from_where,
                     const char *order, tl_ice_writer *w, bool *closed, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "COPY (SELECT ");
	tdb_pg_copy_select_list(cols, ncols, &sql);
	tl_buf_printf(&sql, " FROM (SELECT * FROM %s ORDER BY %s) AS r) TO STDOUT (FORMAT binary)", from_where, order);
	int rc = tdb_copy_into_closed_writer(in->c, tdb_buf_cstr(&sql), what, cols, ncols, w, BATCH_ROWS, closed, err);
	tl_buf_free(&sql);
	return rc;
}

/* The equality deletes: the lake rows whose key the batch holds, each at its own tier key. */
static int write_deletes(tdb_ingest *in, tl_error *err)
{
	tl_buf from;
	tl_buf_init(&from);
	tl_buf_append_str(&from, LAKE_KEYS " l WHERE EXISTS (SELECT FROM " STAGING " s WHERE ");
	append_pk_join(in, "s", "l", &from);
	tl_buf_append_str(&from, " AND ");
	append_lake_bound(in, "s", &from);
	tl_buf_append_str(&from, ")");
	tl_buf order;
	tl_buf_init(&order);
	append_col(NULL, in->t.tier_key_col, &order);
	int rc = copy_into(in, "writing the ingest's equality deletes", in->key_cols, in->nkey, tdb_buf_cstr(&from),
	                   tdb_buf_cstr(&order), in->deletes, &in->closed[0], err);
	tl_buf_free(&from);
	tl_buf_free(&order);
	if (rc == 0)
		in->res.replaced = tl_ice_writer_rows(in->deletes);
	return rc;
}

/* The cold staged rows of the sources not adopted, in tier-key order (rows of a partition together). */
static int write_data(tdb_ingest *in, tl_error *err)
{
	tl_buf from;
	tl_buf_init(&from);
	tl_buf_append_str(&from, STAGING " WHERE ");
	append_lake_bound(in, NULL, &from);
	for (int i = 0; i < in->nsources; i++)
		if (in->sources[i].adopted.adopt)
			tl_buf_printf(&from, " AND tierdb_source <> %d", i);
	tl_buf order;
	tl_buf_init(&order);
	append_col(NULL, in->t.tier_key_col, &order);
	int rc = copy_into(in, "writing the ingested rows", in->cols, in->ncols, tdb_buf_cstr(&from),
	                   tdb_buf_cstr(&order), in->data, &in->closed[1], err);
	tl_buf_free(&from);
	tl_buf_free(&order);
	return rc;
}

static int adopt_files(tdb_ingest *in, tl_error *err)
{
	for (int i = 0; i < in->nsources; i++) {
		tdb_adopted_file *a = &in->sources[i].adopted;
		if (a->adopt && tdb_adopt_place(a, in->lake, in->op_id, err) < 0) {
			tl_error_prefix(err, "%s", in->sources[i].name);
			return -1;
		}
		if (a->adopt)
			in->res.files_adopted++;
	}
	return 0;
}

static int write_files(tdb_ingest *in, tl_error *err)
{
	tl_ice_writer_options opts;
	if (tdb_lake_writer_options(in->c, &in->t, in->lake, in->op_id, &opts, err) < 0)
		return -1;
	in->deletes = tl_ice_writer_open_deletes(in->lake, in->key_ids, in->nkey, in->key_ids, in->t.npk, &opts, err);
	in->data = in->deletes != NULL ? tl_ice_writer_open_data(in->lake, &opts, err) : NULL;
	tdb_lake_writer_options_free(&opts);
	if (in->data == NULL)
		return -1;
	in->progress.phase = "writing";
	progress_print(&in->progress, true);
	if (write_deletes(in, err) < 0 || write_data(in, err) < 0 || adopt_files(in, err) < 0)
		return -1;
	in->res.files_written = tl_ice_writer_nfiles(in->data);
	for (int i = 0; i < tl_ice_writer_nfiles(in->data); i++)
		in->res.bytes += tl_ice_writer_file(in->data, i)->file_size_in_bytes;
	for (int i = 0; i < in->nsources; i++)
		if (in->sources[i].adopted.adopt)
			in->res.bytes += in->sources[i].adopted.file.file_size_in_bytes;
	return 0;
}

/* Removes what the ingest wrote (after a commit that did not land, or was rolled back). */
static void remove_files(tdb_ingest *in)
{
	if (in->closed[0])
		tdb_lake_remove_files(in->deletes, in->label, "ingest");
	if (in->closed[1])
		tdb_lake_remove_files(in->data, in->label, "ingest");
	for (int i = 0; i < in->nsources; i++)
		tdb_adopt_undo(&in->sources[i].adopted, in->label);
}

/* ------------------------------------------------------------ commit and publish */

static int commit_files(tdb_ingest *in, tl_error *err)
{
	int64_t published = in->has_base ? in->base_s : TL_ICE_NO_SNAPSHOT;
	if (tl_ice_table_refresh(in->lake, err) < 0 || tdb_lake_check_published(in->lake, published, "the ingest", err) < 0)
		return -1;
	tl_ice_commit *commit = tl_ice_commit_begin(in->lake, TL_ICE_OP_ROW_DELTA, err);
	if (commit == NULL)
		return -1;
	int rc = 0;
	const tl_ice_writer *writers[] = {in->deletes, in->data};
	for (int w = 0; w < 2 && rc == 0; w++)
		for (int i = 0; i < tl_ice_writer_nfiles(writers[w]) && rc == 0; i++)
			rc = tl_ice_commit_add_file(commit, tl_ice_writer_file(writers[w], i), err);
	for (int i = 0; i < in->nsources && rc == 0; i++)
		if (in->sources[i].adopted.adopt)
			rc = tl_ice_commit_add_file(commit, &in->sources[i].adopted.file, err);
	tl_ice_commit_set_summary(commit, "tierdb.op-id", in->op_id);
	if (rc == 0)
		rc = tl_ice_commit_finish(commit, &in->snapshot_id, err);
	tl_ice_commit_free(commit);
	if (rc == 0) {
		in->committed = true;
		return 0;
	}
	int landed = tdb_lake_commit_landed(in->lake, in->op_id, &in->snapshot_id);
	if (landed == 0)
		return -1;
	in->committed = true;
	return landed > 0 ? 0 : -1;
}

/* Clears the journaled delta pairs, repointing newer rows of those keys at the ingested row. */
static int clear_delta(PGconn *c, int64_t table_id, const char *pks, const char *versions, const char *locations,
                       tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id, pks, versions, locations};
	if (tdb_pg_exec(c, "repointing delta rows corrected during the ingest",
	                "UPDATE tierdb.delta d SET old_tier_key = f.loc"
	                " FROM unnest($2::text[], $3::bigint[], $4::bigint[]) f(pk, version, loc)"
	                " WHERE d.table_id = $1 AND d.pk = f.pk AND d.version > f.version",
	                4, params, err) < 0)
		return -1;
	return tdb_pg_exec(c, "clearing the delta rows the ingest replaces",
	                   "DELETE FROM tierdb.delta WHERE table_id = $1"
	                   " AND (pk, version) IN (SELECT * FROM unnest($2::text[], $3::bigint[]))",
	                   3, params, err);
}

static int publish(tdb_ingest *in, tl_error *err)
{
	in->res.committed = in->committed;
	in->res.snapshot_id = in->snapshot_id;
	if (tdb_publish_snapshot_begin(in->c, in->label, in->t.table_id, "the ingest", in->op_id, in->committed,
	                               in->has_base ? in->base_s : TL_ICE_NO_SNAPSHOT, in->snapshot_id, in->lake,
	                               err) < 0 ||
	    clear_delta(in->c, in->t.table_id, in->pks, in->versions, in->locations, err) < 0 ||
	    apply_in_transaction(in, err) < 0 || tdb_oplog_set_phase(in->c, in->op_id, "done", NULL, err) < 0 ||
	    tdb_pg_exec(in->c, "committing the ingest", "COMMIT", 0, NULL, err) < 0)
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

static char *journal_details(const tdb_ingest *in)
{
	json_t *d = json_pack("{s:s, s:I, s:I, s:s, s:s, s:s}", "kind", in->opts.op_kind, "rows", (json_int_t)in->res.rows,
	                      "delta_rows", (json_int_t)in->delta_rows, "pks", in->pks, "versions", in->versions,
	                      "locations", in->locations);
	json_object_set_new(d, "base_snapshot", in->has_base ? json_integer(in->base_s) : json_null());
	if (in->opts.label != NULL)
		json_object_set_new(d, "label", json_string(in->opts.label));
	json_t *sources = json_array();
	for (int i = 0; i < in->nsources; i++)
		json_array_append_new(sources, json_string(in->sources[i].name));
	json_object_set_new(d, "sources", sources);
	char *text = json_dumps(d, JSON_COMPACT);
	json_decref(d);
	return text;
}

static int journal_files(tdb_ingest *in, tl_error *err)
{
	json_t *adopted = json_array();
	for (int i = 0; i < in->nsources; i++)
		if (in->sources[i].adopted.adopt)
			json_array_append_new(adopted, json_string(in->sources[i].adopted.file.file_path));
	json_t *extra = json_object();
	json_object_set_new(extra, "adopted", adopted);
	int rc = tdb_oplog_record_files(in->c, in->op_id, (const tl_ice_writer *const[]){in->deletes, in->data}, 2,
	                                extra, err);
	json_decref(extra);
	return rc;
}

/* Undoes an ingest that did not publish: the lake back to S if the commit landed, the files gone, the journal 'aborted'. */
static void undo(tdb_ingest *in)
{
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_abort_transaction(in->c);
	if (in->committed) {
		if (tl_ice_table_refresh(in->lake, &ignored) < 0 ||
		    tdb_lake_current_snapshot(in->lake) != in->snapshot_id ||
		    tl_ice_table_rollback(in->lake, in->has_base ? in->base_s : TL_ICE_NO_SNAPSHOT, &ignored) < 0) {
			tdb_log(in->label,
			        "ingest: operation %s committed snapshot %" PRId64 " but could not publish it nor roll it back%s%s; "
			        "recovery settles it",
			        in->op_id, in->snapshot_id, ignored.message[0] ? ": " : "", ignored.message);
			return;
		}
		tdb_log(in->label, "ingest: operation %s rolled back: the lake is at its S again", in->op_id);
	}
	remove_files(in);
	if (in->journaled && tdb_oplog_set_phase(in->c, in->op_id, "aborted", NULL, &ignored) < 0)
		tdb_log(in->label, "ingest: could not mark operation %s aborted: %s", in->op_id, ignored.message);
}

/* No row for the lake: the rest in a transaction of its own. */
static int publish_without_lake(tdb_ingest *in, tl_error *err)
{
	if (in->hook == NULL && !in->opts.allow_hot)
		return 0;
	if (tdb_pg_exec(in->c, "starting the load", "BEGIN", 0, NULL, err) < 0 || apply_in_transaction(in, err) < 0 ||
	    tdb_pg_exec(in->c, "committing the load", "COMMIT", 0, NULL, err) < 0) {
		tdb_abort_transaction(in->c);
		return -1;
	}
	return 0;
}

static int run_commit(tdb_ingest *in, tl_error *err)
{
	tdb_catalog_table fresh;
	if (tdb_lake_lock(in->c, in->t.table_id, true, err) < 0)
		return -1;
	in->locked = true;
	/* Under the lock nothing moves T, S or R: check against the current ones. */
	if (copy_table(&in->t, &fresh, in->c, err) < 0)
		return -1;
	tdb_catalog_table_free(&in->t);
	in->t = fresh;
	in->has_base = in->t.has_snapshot;
	in->base_s = in->t.snapshot_id;
	if (check_rules(in, err) < 0 || tl_ice_table_refresh(in->lake, err) < 0 ||
	    tdb_lake_check_published(in->lake, in->has_base ? in->base_s : TL_ICE_NO_SNAPSHOT, "the ingest", err) < 0 ||
	    tdb_lake_key_columns(in->lake, &in->t, in->cols, in->ncols, in->label, &in->key_cols, &in->key_ids, &in->nkey,
	                         err) < 0 ||
	    find_lake_keys(in, err) < 0 || (in->opts.allow_hot && mark_routed(in, err) < 0) || count_rows(in, err) < 0)
		return -1;
	if (in->res.rows == 0)
		return publish_without_lake(in, err);
	if (capture_delta(in, err) < 0)
		return -1;
	char *details = journal_details(in);
	int rc = tdb_oplog_begin(in->c, in->t.table_id, in->opts.op_kind, "writing", details, in->op_id, err);
	free(details);
	if (rc < 0)
		return -1;
	in->journaled = true;
	snprintf(in->res.op_id, sizeof(in->res.op_id), "%s", in->op_id);
	if (write_files(in, err) < 0 || count_delta_only_keys(in, err) < 0 || journal_files(in, err) < 0)
		return -1;
	bool blocked;
	tdb_lake_op op = {.c = in->c, .table_id = in->t.table_id, .op_id = in->op_id, .step = "the ingest",
	                  .fault_prefix = in->opts.op_kind, .check_pins = in->delta_rows > 0, .need_commit = true,
	                  .commit = commit_step, .publish = publish_step, .arg = in, .committed = &in->committed,
	                  .snapshot_id = &in->snapshot_id};
	if (tdb_lake_op_finish(&op, &blocked, err) < 0) {
		if (blocked)
			tl_error_prefix(err, "%" PRId64 " of the ingested keys have corrections in the delta, which a pinned "
			                     "reader still merges; nothing was committed; run the ingest again once the pins "
			                     "are gone (tierdb status shows them)",
			                in->delta_rows);
		return -1;
	}
	return 0;
}

int tdb_ingest_route(tdb_ingest *in, tdb_ingest_publish_hook hook, void *hook_arg, tdb_ingest_result *res,
                     tl_error *err)
{
	in->route_cold = true;
	return tdb_ingest_commit(in, hook, hook_arg, res, err);
}

int tdb_ingest_commit(tdb_ingest *in, tdb_ingest_publish_hook hook, void *hook_arg, tdb_ingest_result *res,
                      tl_error *err)
{
	in->hook = hook;
	in->hook_arg = hook_arg;
	int rc = run_commit(in, err);
	if (rc < 0)
		snprintf(in->res.sqlstate, sizeof(in->res.sqlstate), "%s", tdb_pg_last_sqlstate());
	if (rc < 0 && PQstatus(in->c) == CONNECTION_OK)
		undo(in);
	if (in->locked) {
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_lake_lock(in->c, in->t.table_id, false, &ignored);
		in->locked = false;
	}
	in->progress.phase = rc == 0 ? "done:" : "failed after";
	progress_print(&in->progress, true);
	*res = in->res;
	return rc;
}

void tdb_ingest_free(tdb_ingest *in)
{
	if (in == NULL)
		return;
	cancel_copy(in);
	if (PQstatus(in->c) == CONNECTION_OK) {
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_abort_transaction(in->c);
		drop_if_exists(in->c, STAGING, &ignored);
		drop_if_exists(in->c, LAKE_KEYS, &ignored);
	}
	for (int i = 0; i < in->nsources; i++) {
		free(in->sources[i].name);
		free(in->sources[i].blank_lines);
		tdb_adopt_free(&in->sources[i].adopted);
	}
	free(in->sources);
	tl_ice_writer_free(in->deletes);
	tl_ice_writer_free(in->data);
	tl_ice_table_free(in->lake);
	tdb_pg_columns_free(in->cols, in->ncols);
	free(in->key_cols);
	free(in->key_ids);
	free(in->pk);
	free(in->generated);
	free(in->copy_columns);
	free(in->fields);
	tdb_json_object_free(&in->doc);
	free(in->pks);
	free(in->versions);
	free(in->locations);
	free(in->label);
	free((char *)in->opts.label);
	tl_buf_free(&in->out);
	if (in->t.schema_name != NULL)
		tdb_catalog_table_free(&in->t);
	free(in);
}

/* ------------------------------------------------------------ recovery */

/* A `load` whose label is still staged failed with its operation. */
static int fail_label(PGconn *c, int64_t table_id, const char *label, const char *op_id, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id, label, op_id};
	return tdb_pg_exec(c, "failing the interrupted load's label",
	                   "UPDATE tierdb.load_labels SET state = 'failed', updated_at = now(),"
	                   " result = jsonb_build_object('status', 'failed', 'label', $2::text, 'op_id', $3::text,"
	                   "  'error', 'the daemon stopped while the load committed; nothing of it was applied')"
	                   " WHERE table_id = $1 AND label = $2 AND state = 'staged'",
	                   3, params, err);
}

/*
 * Whether the operation is still unfinished. An ingest runs in another
 * process and holds the lake lock while it is journaled: one seen
 * unfinished before the lock was granted may have finished meanwhile.
 */
static int still_unfinished(PGconn *c, const char *op_id, tl_error *err)
{
	const char *params[] = {op_id};
	PGresult *res = tdb_pg_query(c, "rereading the operation's phase",
	                             "SELECT phase NOT IN ('published', 'done', 'aborted') FROM tierdb.op_log"
	                             " WHERE op_id = $1::uuid",
	                             1, params, err);
	if (res == NULL)
		return -1;
	int unfinished = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return unfinished;
}

static int settle_ingest(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase, json_t *details,
                         tl_error *err)
{
	int unfinished = still_unfinished(c, op_id, err);
	if (unfinished <= 0)
		return unfinished;
	const char *label = tdb_table_label(t);
	const char *kind = json_string_value(json_object_get(details, "kind"));
	const char *load_label = json_string_value(json_object_get(details, "label"));
	bool is_load = kind != NULL && strcmp(kind, "load") == 0;
	json_t *base = json_object_get(details, "base_snapshot");
	int64_t base_s = json_is_integer(base) ? json_integer_value(base) : TL_ICE_NO_SNAPSHOT;
	tl_ice_table *lake = tdb_lake_open(t, err);
	if (lake == NULL)
		return -1;
	const tl_ice_snapshot *snap = tdb_lake_snapshot_of_op(lake, op_id);
	int rc = 1;
	bool undo_files = snap == NULL;
	if (snap != NULL && tdb_lake_current_snapshot(lake) != snap->snapshot_id) {
		rc = tl_error_set(err, TL_ERR_CONFLICT,
		                  "%s %s committed snapshot %" PRId64 " but the lake table %s has moved on; an operator "
		                  "must check the table",
		                  is_load ? "load" : "ingest", op_id, snap->snapshot_id, lake->location);
	} else if (snap != NULL && is_load) {
		/* Its hot rows lived in the session that died: the cold ones must not land alone. */
		rc = tl_ice_table_rollback(lake, base_s, err) < 0 ? -1 : 1;
		undo_files = rc == 1;
	} else if (snap != NULL) {
		int64_t pins = 0;
		const char *pks = json_string_value(json_object_get(details, "pks"));
		const char *versions = json_string_value(json_object_get(details, "versions"));
		const char *locations = json_string_value(json_object_get(details, "locations"));
		int64_t delta_rows = json_integer_value(json_object_get(details, "delta_rows"));
		if (pks == NULL || versions == NULL || locations == NULL)
			rc = tl_error_set(err, TL_ERR_CORRUPT, "the journal of ingest %s lacks its delta pairs", op_id);
		else if (delta_rows > 0 && tdb_live_pins(c, t->table_id, &pins, err) < 0)
			rc = -1;
		else if (pins > 0) {
			tdb_log(label, "ingest: adopting interrupted operation %s waits for %" PRId64 " read pin%s", op_id, pins,
			        pins == 1 ? "" : "s");
			rc = 0;
		} else {
			int64_t s = snap->snapshot_id;
			if (tdb_oplog_set_phase(c, op_id, "committed", &s, err) < 0 ||
			    tdb_publish_snapshot_begin(c, label, t->table_id, "the ingest", op_id, true, base_s, s, lake, err) < 0 ||
			    clear_delta(c, t->table_id, pks, versions, locations, err) < 0 ||
			    tdb_oplog_set_phase(c, op_id, "done", NULL, err) < 0 ||
			    tdb_pg_exec(c, "adopting the ingest", "COMMIT", 0, NULL, err) < 0) {
				tdb_abort_transaction(c);
				rc = -1;
			} else
				tdb_log(label, "ingest: adopted interrupted operation %s (snapshot %" PRId64 ")", op_id, s);
		}
	}
	if (rc == 1 && undo_files) {
		if (snap == NULL && strcmp(phase, "committed") == 0) {
			rc = tl_error_set(err, TL_ERR_CONFLICT,
			                  "%s is journaled as committed but the lake table %s has no snapshot stamped with it; "
			                  "an operator must check the table",
			                  op_id, lake->location);
		} else {
			int deleted, missing;
			tdb_lake_remove_op_files(lake, json_object_get(details, "files"), label, op_id, &deleted, &missing);
			if (tdb_oplog_set_phase(c, op_id, "aborted", NULL, err) < 0 ||
			    (is_load && load_label != NULL && fail_label(c, t->table_id, load_label, op_id, err) < 0))
				rc = -1;
			else
				tdb_log(label, "%s: interrupted operation %s rolled back (%d files removed)",
				        is_load ? "load" : "ingest", op_id, deleted);
		}
	}
	tl_ice_table_free(lake);
	return rc;
}

int tdb_recover_ingests(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	int ingests = tdb_settle_interrupted(c, t, "ingest", NULL, settle_ingest, err);
	if (ingests < 0)
		return -1;
	int loads = tdb_settle_interrupted(c, t, "load", NULL, settle_ingest, err);
	return loads < 0 ? -1 : ingests + loads;
}
