/*
 * ingest.h: bulk history into the lake in one atomic, journaled commit
 * (SPEC §9 `tierdb ingest`; Stream Load's cold volume uses it too).
 *
 * An ingest takes rows from any number of sources (JSONL lines, Parquet
 * files), checks every one of them the way a plain INSERT into the user's
 * table would (its column types, NOT NULL and CHECK constraints) plus the
 * rules of the lake's range (the tier key in [R, T), no key twice in one
 * batch, no key that lives in the heap), and commits them as one lake
 * snapshot with upsert semantics: a key already in the lake is replaced by
 * an equality delete (carrying the old row's tier key, so it lands in that
 * row's partition) in the same snapshot, and the key's delta rows are
 * cleared in the transaction that publishes S. Nothing commits when any
 * row fails; the error names the source, the row and the rule.
 *
 * How: every source's rows are copied, as Postgres text, into a session
 * temporary table shaped like the user's table (CREATE TEMPORARY TABLE ...
 * (LIKE t INCLUDING CONSTRAINTS)), so Postgres itself parses each value and
 * checks the constraints; the rules above are then set-wide SQL. Rows are
 * written to the lake from that table with binary COPY (as tiering writes
 * them), except Parquet files the lake can serve as they are: every column
 * maps to a lake field by field id with exactly the type the lake writes,
 * and every row lies in one lake partition. Such a file is adopted without
 * being re-encoded: referenced in place when it already lies under the
 * table's location, else copied byte for byte into its data/ directory.
 *
 * The journal (op_log kind `ingest`, or `load` for Stream Load) holds the
 * base snapshot, the delta (pk, version) pairs to clear and, before the
 * commit, every file; an interrupted ingest is settled on the lake's word
 * (tdb_recover_ingests): kind `ingest` is adopted when its snapshot landed,
 * kind `load` is rolled back (its hot rows lived in the session that died).
 */
#ifndef TIERDB_INGEST_H
#define TIERDB_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/error.h"

typedef struct tdb_ingest tdb_ingest;

typedef struct tdb_ingest_options {
	const char *op_kind;   /* "ingest" (tierdb ingest) or "load" (Stream Load) */
	/*
	 * Stream Load: rows at or above T are accepted and upsert into the heap
	 * as a set (their keys' heap rows deleted, the rows INSERTed) in the
	 * transaction that publishes the lake rows; a row whose key lives in
	 * the other tier moves there through tierdb_upsert (see ingest.c
	 * mark_routed). Without it, rows at or above T and cold rows whose key
	 * lives in the heap are errors. Rows below R are always errors.
	 */
	bool allow_hot;
	/* Prints progress (rows/s, bytes, ETA) to stderr while sources are read and files written. */
	bool progress;
	/*
	 * Stream Load's label (op_kind "load"): journaled with the operation, so
	 * that recovery of a load a crash interrupted marks the label's
	 * tierdb.load_labels row failed when it rolls the load back.
	 */
	const char *label;
} tdb_ingest_options;

/*
 * Starts an ingest into table t on connection c (which it uses alone until
 * tdb_ingest_free; it sets tierdb.transparent_reads off in the session).
 * Checks the mode (tiered without --keep-heap, or direct), the caller's
 * INSERT and UPDATE privileges on the table and that no row-level security
 * policy applies to the caller, settles interrupted ingests of the table,
 * and creates the staging table pg_temp.tierdb_ingest: the table's columns
 * (same names and types, its NOT NULL and CHECK constraints) plus
 * "tierdb_source" int and "tierdb_row" bigint.
 */
tdb_ingest *tdb_ingest_begin(PGconn *c, const tdb_catalog_table *t, const tdb_ingest_options *opts, tl_error *err);

/*
 * Adds the rows of a JSONL stream: one JSON object per line, keys naming
 * columns (an unknown key is an error; a missing one is NULL), values in
 * Postgres input syntax where JSON has none (timestamps, uuids, numerics as
 * strings or numbers, numbers kept exactly as written; bytea as "\\x..."
 * hex or base64; json/jsonb columns take any JSON value, a JSON string
 * being read as JSON text). Blank lines are skipped. `name` names the
 * source in errors ("events.jsonl", "request body").
 */
int tdb_ingest_add_jsonl_file(tdb_ingest *in, const char *name, FILE *f, tl_error *err);

/* The same one line at a time (Stream Load feeds a request body as it arrives); then tdb_ingest_end_jsonl. */
int tdb_ingest_begin_jsonl(tdb_ingest *in, const char *name, tl_error *err);
int tdb_ingest_add_jsonl_line(tdb_ingest *in, const char *line, size_t len, tl_error *err);
int tdb_ingest_end_jsonl(tdb_ingest *in, tl_error *err);

/* Adds a Parquet file (a local path), to be adopted or rewritten as the header says. */
int tdb_ingest_add_parquet(tdb_ingest *in, const char *path, tl_error *err);

typedef struct tdb_ingest_result {
	char op_id[37];
	int64_t rows;             /* rows committed (cold; hot rows stay in staging, see allow_hot) */
	int64_t hot_rows;         /* staged rows at or above T (allow_hot only) */
	int64_t heap_rows;        /* rows that went to the heap (allow_hot only) */
	int64_t delta_rows;       /* rows routed into the delta (tdb_ingest_route, or keys that moved cold) */
	int64_t replaced;         /* keys already in the lake or the delta (allow_hot: hot rows' in the heap too) */
	int64_t files_adopted;    /* Parquet sources committed as they are */
	int64_t files_written;    /* data files written from the staging table */
	int64_t bytes;            /* bytes of the committed data files */
	bool committed;           /* a lake snapshot was committed (false when no cold row came) */
	char sqlstate[6];         /* on failure, the SQLSTATE of the statement that failed ("" for none) */
	int64_t snapshot_id;
} tdb_ingest_result;

/*
 * Runs inside the transaction that publishes S, before it commits (and,
 * when no row goes to the lake, in a transaction of its own), after the
 * rows at or above T were applied: Stream Load marks its label committed
 * here. An error aborts the publishing; the lake snapshot is then rolled
 * back.
 */
typedef int (*tdb_ingest_publish_hook)(void *arg, PGconn *c, const tdb_ingest_result *res, tl_error *err);

/*
 * Validates every staged row, writes and adopts the files, commits them as
 * one snapshot under the table's lake lock and publishes it. On any error
 * nothing is committed (files written are deleted) and err names the
 * source, the row and the rule. hook may be NULL.
 */
int tdb_ingest_commit(tdb_ingest *in, tdb_ingest_publish_hook hook, void *hook_arg, tdb_ingest_result *res,
                      tl_error *err);

/*
 * Stream Load's trickle: tdb_ingest_commit with every cold row routed into
 * the delta by tierdb_upsert instead of written to the lake; no lake
 * commit, one transaction (hot rows as there, then the hook).
 */
int tdb_ingest_route(tdb_ingest *in, tdb_ingest_publish_hook hook, void *hook_arg, tdb_ingest_result *res,
                     tl_error *err);

/* Drops the staging table (when the connection is still usable) and frees the ingest. */
void tdb_ingest_free(tdb_ingest *in);

/*
 * Settles the table's interrupted ingests and loads, under the table's lake
 * lock (see the header): an `ingest` whose snapshot landed is published,
 * a `load` whose snapshot landed is rolled back (the lake's current
 * snapshot set back to S) and its label, if still 'staged', marked
 * 'failed'; either kind whose snapshot did not land has its files deleted
 * and is aborted. The daemon's recovery step and tdb_ingest_begin call it.
 * Returns how many were settled, or -1.
 */
int tdb_recover_ingests(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
