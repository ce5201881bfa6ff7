/*
 * status.c: the rows of tierdb.status with what the daemon's metrics add
 * (status.h).
 *
 * The view (extension SQL) stays the one definition of each table's
 * status; this query only selects from it and joins the few catalog facts
 * the metrics need besides, so that `tierdb status` and /metrics can never
 * disagree about a backlog or a pin count.
 */
#include "status.h"
#include "pg.h"

PGresult *tdb_status_rows(PGconn *c, const char *schema, const char *table, tl_error *err)
{
	const char *params[] = {schema, table};
	return tdb_pg_query(
		c, "reading tierdb.status",
		"SELECT s.schema_name || '.' || s.table_name AS \"table\", s.mode, s.cutline_t, s.cutline_s,"
		" s.mirror_frontier, s.slot_wal_bytes, s.retention_line, s.delta_backlog, s.read_pins, s.staged_loads,"
		" s.copying, s.partition_states, s.cutline_updated_at,"
		" jsonb_array_length(s.unfoldable_rows) AS unfoldable,"
		" s.lake_warnings, s.unfoldable_rows,"
		" s.table_id, t.tier_key_type, t.heap_retention_lag IS NOT NULL AS has_heap_retention,"
		" extract(epoch FROM s.cutline_updated_at) AS cutline_updated_epoch,"
		" CASE WHEN s.mirror_frontier IS NOT NULL AND NOT pg_is_in_recovery()"
		"      THEN pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'::pg_lsn + s.mirror_frontier)::bigint"
		" END AS mirror_frontier_lag_bytes,"
		" ls.stats AS lake_stats, extract(epoch FROM ls.collected_at) AS lake_stats_epoch,"
		" (SELECT coalesce(jsonb_object_agg(l.state, l.n), '{}')"
		"    FROM (SELECT state, count(*) AS n FROM tierdb.load_labels"
		"           WHERE table_id = s.table_id GROUP BY state) l) AS load_labels"
		" FROM tierdb.status s JOIN tierdb.tables t USING (table_id)"
		" LEFT JOIN tierdb.lake_stats ls USING (table_id)"
		" WHERE ($1::text IS NULL OR (s.schema_name = $1 AND s.table_name = $2))"
		" ORDER BY s.schema_name, s.table_name",
		2, params, err);
}
