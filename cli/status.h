/*
 * status.h: what the tierdb.status view says about registered tables, read
 * once for `tierdb status` (cmd_status.c) and for the daemon's /metrics
 * (metrics.c), so both show the same numbers from the same query.
 */
#ifndef TIERDB_STATUS_H
#define TIERDB_STATUS_H

#include <libpq-fe.h>

#include "tierlake/error.h"

/*
 * The leading columns `tierdb status` prints as its table, in this order:
 * table (schema.name), mode, cutline_t, cutline_s, mirror_frontier,
 * slot_wal_bytes, retention_line, delta_backlog, read_pins, staged_loads,
 * copying, partition_states (a JSON object state -> count),
 * cutline_updated_at, unfoldable (a count).
 */
#define TDB_STATUS_SHOWN_COLUMNS 14

/*
 * One row per registered table (schema and table both NULL) or for
 * schema.table alone, ordered by schema and name: the shown columns, then
 * by name
 *   lake_warnings, unfoldable_rows    JSON arrays (tierdb.status)
 *   table_id, tier_key_type, has_heap_retention ('t'/'f')
 *   cutline_updated_epoch             cutline_updated_at in seconds since 1970
 *   mirror_frontier_lag_bytes         WAL written since F (NULL without F or on a standby)
 *   lake_stats                        tierdb.lake_stats.stats (JSON; NULL before the first collection)
 *   lake_stats_epoch                  when they were collected, in seconds since 1970
 *   load_labels                       a JSON object state -> count of tierdb.load_labels
 * NULL with err on failure.
 */
PGresult *tdb_status_rows(PGconn *c, const char *schema, const char *table, tl_error *err);

#endif
