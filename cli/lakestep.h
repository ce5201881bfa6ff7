/*
 * lakestep.h: what the daemon's lake-writing steps (tiering, fold,
 * recovery) share: the table's lake lock, finding a commit by its op id,
 * the metadata location the cut-line publishes, and cleaning up files a
 * commit never took.
 */
#ifndef TIERDB_LAKESTEP_H
#define TIERDB_LAKESTEP_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "catalog.h"
#include "daemon.h"
#include "digest.h"
#include "pgtypes.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"

/* Receives each full batch of a COPY; returns 0, or -1 with err set. */
typedef int (*tdb_batch_sink)(void *arg, tl_pq_batch *batch, tl_error *err);

/*
 * Runs `copy_sql`, a COPY ... TO STDOUT (FORMAT binary) of `cols`, decoding
 * its rows into `batch` (shaped like tl_ice_field_to_pq_column of each
 * column) and handing each full batch and the last one to `sink`, which
 * must be done with the rows when it returns: the batch is then emptied.
 * `progress` (may be NULL) counts rows and bytes. On failure the COPY is
 * cancelled and drained, and the error starts with `what`.
 */
int tdb_copy_batches(PGconn *c, const char *copy_sql, const char *what, const tdb_pg_column *cols, int ncols,
                     tl_pq_batch *batch, tdb_progress *progress, tdb_batch_sink sink, void *arg, tl_error *err);

/*
 * tdb_copy_batches into the writer `w` (`batch` shaped like its schema).
 * `digest` (may be NULL) adds every row written (digest.h); `after_flush`
 * (may be NULL) runs after each batch the writer took (fault points hang
 * there).
 */
int tdb_copy_into_writer(PGconn *c, const char *copy_sql, const char *what, const tdb_pg_column *cols, int ncols,
                         tl_ice_writer *w, tl_pq_batch *batch, tdb_progress *progress, tdb_digest *digest,
                         void (*after_flush)(void), tl_error *err);

/*
 * tdb_copy_into_writer of `copy_sql` in batches of batch_rows, then closes
 * the writer; *closed says whether it closed (its files then stay until
 * they are committed or removed). An error starts with `what`.
 */
int tdb_copy_into_closed_writer(PGconn *c, const char *copy_sql, const char *what, const tdb_pg_column *cols,
                                int ncols, tl_ice_writer *w, int64_t batch_rows, bool *closed, tl_error *err);

/* An integer as text, for query parameters. */
void tdb_int_text(int64_t v, char out[24]);

/*
 * Takes (lock = true) or releases the session advisory lock every lake
 * commit of the table holds (SPEC §5:
 * hashtextextended('tierdb_lake_' || table_id, 0)).
 */
int tdb_lake_lock(PGconn *c, int64_t table_id, bool lock, tl_error *err);

/* The snapshot whose summary carries tierdb.op-id = op_id, or NULL. */
const tl_ice_snapshot *tdb_lake_snapshot_of_op(const tl_ice_table *lake, const char *op_id);

/* The current snapshot's id, or TL_ICE_NO_SNAPSHOT. */
int64_t tdb_lake_current_snapshot(const tl_ice_table *lake);

/*
 * TL_ERR_CONFLICT unless the lake's current snapshot is the one the
 * cut-line publishes (TL_ICE_NO_SNAPSHOT for none): a newer snapshot means
 * an operation committed without publishing, and building on it would
 * publish that operation's rows unseen. `step` names what waits
 * ("tiering", "the fold").
 */
int tdb_lake_check_published(const tl_ice_table *lake, int64_t published, const char *step, tl_error *err);

/* The metadata file as the cut-line names it: <location>/metadata/<file> (free() it). */
char *tdb_lake_metadata_location(const tl_ice_table *lake);

/*
 * Publishes a lake snapshot in the cut-line: lake_snapshot_id = new_s and
 * lake_props' metadata_location and snapshot_id, and, when move_t, T from
 * old_t to new_t. Guarded on the old state (T = old_t when move_t, S =
 * old_s, TL_ICE_NO_SNAPSHOT for none) so nobody's advance is published
 * over; *published says whether the guard held. Runs in the caller's
 * transaction.
 */
int tdb_cutline_publish(PGconn *c, int64_t table_id, bool move_t, int64_t old_t, int64_t new_t, int64_t old_s,
                        int64_t new_s, const tl_ice_table *lake, bool *published, tl_error *err);

/*
 * Unexpired read pins of the table (tierdb.read_pins). Any of them
 * postpones the steps that change what a pinned reader merges (the fold,
 * retention): a pin holds the current S or an older one (snapshot ids are
 * random, not ordered), and either way its reader merges the delta.
 */
int tdb_live_pins(PGconn *c, int64_t table_id, int64_t *count, tl_error *err);

/*
 * After tl_ice_commit_finish failed: rereads the lake and looks for the
 * snapshot stamped with op_id (a commit can land and still report an
 * error). 1 with *snapshot_id when it landed, 0 when it did not, -1 when
 * the lake cannot be reread (unknown: never delete what it may serve).
 */
int tdb_lake_commit_landed(tl_ice_table *lake, const char *op_id, int64_t *snapshot_id);

/*
 * Settles table t's interrupted operations of op_kind (and, when
 * details_kind is not NULL, details->>'kind' = details_kind) whose phase is
 * not published, done or aborted, oldest first: for each, under the
 * table's lake lock, settle(c, t, op_id, phase, details, err) returns 1
 * (settled), 0 (left for a later cycle) or -1. Returns how many were
 * settled, or -1 with err naming the operation.
 */
typedef int (*tdb_settle_fn)(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase,
                             json_t *details, tl_error *err);
int tdb_settle_interrupted(PGconn *c, const tdb_catalog_table *t, const char *op_kind, const char *details_kind,
                           tdb_settle_fn settle, tl_error *err);

/*
 * Opens the publishing transaction of a step that moves S but not T (the
 * fold, retention): BEGIN, then, when the step committed a lake snapshot
 * (committed), tdb_cutline_publish from base_s (TL_ICE_NO_SNAPSHOT for
 * none) to new_s. A guard that no longer holds is TL_ERR_CONFLICT naming
 * `step` ("the fold") and the operation, which then awaits recovery. The
 * caller adds its own statements and commits, or aborts on error.
 */
int tdb_publish_snapshot_begin(PGconn *c, const char *label, int64_t table_id, const char *step, const char *op_id,
                               bool committed, int64_t base_s, int64_t new_s, const tl_ice_table *lake,
                               tl_error *err);

/*
 * The tail of a lake operation that moves S but not T, written once: take
 * the table's lake lock; when check_pins, an unexpired read pin stops it
 * (*blocked, TL_ERR_CONFLICT); when need_commit, fault point
 * "<fault_prefix>-before-commit", commit(arg) (which sets *committed and
 * *snapshot_id when the lake holds its snapshot), then, once committed,
 * "<fault_prefix>-after-commit", phase 'committed' in the journal,
 * "<fault_prefix>-after-commit-recorded"; then publish(arg) (its own
 * transaction, tdb_publish_snapshot_begin); abort the transaction on
 * error; release the lock.
 */
typedef struct tdb_lake_op {
	PGconn *c;
	int64_t table_id;
	const char *op_id;
	const char *step;           /* for messages: "the fold", "retention" */
	const char *fault_prefix;   /* "fold", "retention" */
	bool check_pins;
	bool need_commit;
	int (*commit)(void *arg, tl_error *err);
	int (*publish)(void *arg, tl_error *err);
	void *arg;
	const bool *committed;
	const int64_t *snapshot_id;
} tdb_lake_op;

int tdb_lake_op_finish(const tdb_lake_op *op, bool *blocked, tl_error *err);

/*
 * Waits out in-database readers of the table: they hold its reader lock
 * shared for their transaction while they read with a cut-line they
 * pinned; taking it exclusively (briefly, then releasing it) waits until
 * every such reader has finished. The session's lock_timeout bounds the
 * wait. Run after publishing a change and before deleting what the old
 * view needed.
 */
int tdb_wait_out_readers(PGconn *c, int64_t table_id, tl_error *err);

/* Deletes the files of a closed writer whose commit never landed, logging any that would not go. */
void tdb_lake_remove_files(const tl_ice_writer *w, const char *label, const char *step);

/*
 * Journals the files of closed writers in the operation's op_log details
 * ("files"), before the commit, so recovery can delete exactly them if the
 * commit never lands. The members of `extra` (a JSON object, may be NULL)
 * are merged into the details in the same statement.
 */
int tdb_oplog_record_files(PGconn *c, const char *op_id, const tl_ice_writer *const *writers, int nwriters,
                           const json_t *extra, tl_error *err);

/*
 * Rows per row group of the files the daemon writes. A partition's rows
 * arrive roughly in tier-key order, so row groups smaller than a
 * partition let readers prune inside its file by the tier key's
 * statistics; smaller ones compress less (bench/README.md, the tiering
 * benchmark: 0.126 of the heap's bytes with whole-day row groups, 0.156
 * with these, 0.192 with 122,880). The daemon holds about one row group
 * per open file in memory.
 */
#define TDB_LAKE_ROW_GROUP_ROWS 262144

/*
 * Rows per data page: the extension's cold scan batch (lake_scan.c), so a
 * batch whose rows all fail a filter is one page of each other column,
 * stepped over without being decompressed (late materialisation). With
 * parquet-cpp's 20,000 a filter passing one row in ten thousand still
 * decompressed every page, the most of such a scan's time.
 */
#define TDB_LAKE_PAGE_ROWS 4096

/*
 * Writer options for an operation's files of table t, which every step
 * that writes its data files takes (tiering, fold, compaction, mirroring):
 * the defaults but for the row group and page sizes above; names starting
 * "<op_id>-" so that undoing the operation finds every file it wrote,
 * including those a crash left before they were journaled; bloom filters
 * on the primary key and on the columns the table's policy names
 * (bloom_columns, read now from tierdb.tables, mapped to the lake's
 * current schema by name), at the policy's bloom_fpp. A named column the
 * lake schema no longer has is left out with a logged warning, so that a
 * dropped column never stops tiering. Free with tdb_lake_writer_options_free
 * once the writers are open (they copy what they need). -1 with err set
 * when the policy cannot be read or is malformed.
 */
int tdb_lake_writer_options(PGconn *c, const tdb_catalog_table *t, const tl_ice_table *lake, const char *op_id,
                            tl_ice_writer_options *opts, tl_error *err);
void tdb_lake_writer_options_free(tl_ice_writer_options *opts);

/*
 * Deletes the files of an interrupted operation that never reached the
 * lake: those it recorded (`files`, a JSON array of paths, may be NULL;
 * missing ones count in *missing, an earlier pass deleted them) and any
 * other file under the table's data/ directory named for its op id (written
 * before a crash let it record them). Files that cannot be deleted are
 * logged and left: no snapshot references them, so they are orphans, never
 * wrong rows.
 */
void tdb_lake_remove_op_files(const tl_ice_table *lake, const json_t *files, const char *label, const char *op_id,
                              int *deleted, int *missing);

/*
 * Commits the files of closed writers as one row-delta snapshot stamped
 * with the op id, on a lake that must be at `published` (S; anything newer
 * awaits recovery, see tdb_lake_check_published). A failed commit that
 * landed anyway is found by its op id after a reread: *committed says
 * whether the lake holds the snapshot, or may (when the reread fails too,
 * the files are left for recovery).
 */
int tdb_lake_commit_writers(tl_ice_table *lake, int64_t published, const char *step, const char *op_id,
                            const tl_ice_writer *const *writers, int nwriters, int64_t *snapshot_id, bool *committed,
                            tl_error *err);

/*
 * The columns of a table's equality-delete files: the pk columns (their
 * field ids are the equality ids), then the tier key unless it is part of
 * the pk, which places each delete in the partition of the row it deletes.
 * Each must be a field of the lake's current schema of its column's type.
 * *key_cols are shallow copies of `cols` entries; free() both arrays.
 */
int tdb_lake_key_columns(const tl_ice_table *lake, const tdb_catalog_table *t, const tdb_pg_column *cols, int ncols,
                         const char *label, tdb_pg_column **key_cols, int32_t **key_ids, int *nkey, tl_error *err);

#endif
