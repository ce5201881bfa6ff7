/*
 * tiering.h: the daemon's per-table steps and what they share.
 *
 * A cycle (daemon.c) runs these for each registered tiered table, in order:
 *
 *   premake      keep empty heap partitions ahead of max(tier_key) (premake.c)
 *   recovery     adopt or roll back operations a killed daemon left (recovery.c)
 *   tiering      seal whole partitions behind max(tier_key) - lag, stream them
 *                into one lake snapshot, advance (T, S, lake_props) in one
 *                transaction (tiering.c)
 *   heap window  mirrored tables with --heap-retention: seal the partitions
 *                behind max(tier_key) - N, bring the mirror past the seal and
 *                advance T over them, copying nothing (tiering.c)
 *   fold         fold delta corrections into one row-delta snapshot (fold.c)
 *   drop         drop tiered heap partitions once no reader needs them (tiering.c)
 *
 * The heap's partitions are read from the system catalogs every time
 * (tdb_heap_partitions), never from tierdb.partitions alone: users add and drop
 * partitions by hand, and the daemon must see what Postgres routes rows to.
 * tierdb.partitions records the states the daemon moves partitions through
 * (hot -> sealing -> tiered -> dropped); its partition_id is
 * tdb_heap_partition.partition_id (the quoted, qualified name).
 *
 * A sealed partition carries two triggers running
 * tierdb.sealed_partition_guard(): tierdb_sealed (FOR EACH STATEMENT, also
 * catching TRUNCATE) and tierdb_sealed_rows (FOR EACH ROW), because rows
 * routed through the parent fire only the partition's row-level triggers.
 *
 * Every lake-writing step is journaled in tierdb.op_log (oplog.c) phase by
 * phase: sealing -> writing -> committed (with the lake snapshot) ->
 * published (T, S advanced) -> done (heap partitions dropped), or aborted
 * when a run failed before its lake commit and was undone. Crash recovery
 * reads these phases and the tierdb.op-id stamped in the snapshot summary.
 */
#ifndef TIERDB_TIERING_H
#define TIERDB_TIERING_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/buf.h"
#include "tierlake/error.h"

/* ------------------------------------------------------------ heap partitions */

/*
 * The table's bounded and unbounded range partitions (tdb_heap_partitions
 * without the DEFAULT partition), sorted by lower bound, with MINVALUE and
 * MAXVALUE bounds as INT64_MIN and INT64_MAX so that ranges compare plainly.
 */
int tdb_range_partitions(PGconn *c, const tdb_catalog_table *t, tdb_heap_partition **out, int *n, tl_error *err);

/* max(tier_key) of the heap as a canonical bigint; *has is false for an empty table. */
int tdb_heap_max_key(PGconn *c, const tdb_catalog_table *t, bool *has, int64_t *out, tl_error *err);

/*
 * Appends the canonical value v as a quoted SQL literal of the tier key's
 * type (for FOR VALUES clauses, which take no parameters); the server
 * renders and quotes it.
 */
int tdb_key_literal(PGconn *c, tdb_key_type type, int64_t v, tl_buf *out, tl_error *err);

/* "schema.table" for messages; static storage of the calling thread, valid until its next call. */
const char *tdb_table_label(const tdb_catalog_table *t);

/* Makes b's contents a NUL-terminated string (the NUL is not counted in len). */
const char *tdb_buf_cstr(tl_buf *b);

/* Ends the connection's open transaction, if any, with ROLLBACK (after a failed step). */
void tdb_abort_transaction(PGconn *c);

/* ------------------------------------------------------------ steps */

struct tdb_mirror_config;

/*
 * --heap-retention of a mirrored table: seals the partitions wholly behind
 * max(tier_key) - N, contiguous from T, brings the mirror past the seal,
 * and advances T over them (tiering.c says how); the drop step drops them.
 */
int tdb_retire_heap_window(PGconn *c, const tdb_catalog_table *t, const struct tdb_mirror_config *mc, tl_error *err);

/* Creates partitions until `keep` empty ones lie ahead of max(tier_key). */
int tdb_premake(PGconn *c, const tdb_catalog_table *t, int64_t keep, tl_error *err);

/*
 * Moves the partitions wholly behind max(tier_key) - lag (lag as text in
 * natural units, TIERDB_TIERING_LAG) into the lake, contiguous from T. The
 * catalog row `t` is reloaded by the caller afterwards.
 */
int tdb_tier(PGconn *c, const tdb_catalog_table *t, const char *lag, tl_error *err);

/*
 * Drops the table's tiered heap partitions that no reader still needs:
 * unexpired read_pins below a partition's upper bound keep it (until a
 * later cycle); in-database readers are waited out on the reader key.
 */
int tdb_drop_tiered(PGconn *c, const tdb_catalog_table *t, tl_error *err);

/* ------------------------------------------------------------ op_log */

/*
 * Starts an operation: a new op_log row (op_id from gen_random_uuid()) with
 * the kind, first phase and details (JSON text). op_id receives the uuid.
 */
int tdb_oplog_begin(PGconn *c, int64_t table_id, const char *kind, const char *phase, const char *details,
                    char op_id[37], tl_error *err);

/* Moves an operation to `phase`, recording the lake snapshot when snapshot_id is not NULL. */
int tdb_oplog_set_phase(PGconn *c, const char *op_id, const char *phase, const int64_t *snapshot_id,
                        tl_error *err);

/*
 * An unfinished lake-writing operation of the table that crash recovery
 * must settle before new work starts: phase sealing, writing or committed.
 * 1 with op_id and phase (malloc'd) filled, 0 if none, -1 on error.
 */
int tdb_oplog_unfinished(PGconn *c, int64_t table_id, char **op_id, char **phase, tl_error *err);

/* Marks the table's published tiering operations done once none of their partitions await a drop (kept: a
 * keep-heap table's, which stay 'tiered'). */
int tdb_oplog_finish_drops(PGconn *c, int64_t table_id, bool kept, tl_error *err);

#endif
