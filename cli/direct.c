/*
 * direct.c: rolling back the lake commits of direct-table transactions that
 * did not commit (see direct.h).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "direct.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "pg.h"
#include "tiering.h"
#include "tierlake/iceberg_table.h"

/* The published S, read after the lake lock is held (the row `t` came from may predate it). */
static int published_s(PGconn *c, int64_t table_id, int64_t *s, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the published lake snapshot",
	                             "SELECT lake_snapshot_id FROM tierdb.cutline WHERE table_id = $1", 1, params, err);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return tl_error_set(err, TL_ERR_NOT_FOUND, "the table has no cut-line");
	}
	*s = PQgetisnull(res, 0, 0) ? TL_ICE_NO_SNAPSHOT : strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}

/* 1 when op_log knows the op id, 0 when not, -1 on error. */
static int known_op(PGconn *c, const char *op_id, tl_error *err)
{
	const char *params[] = {op_id};
	PGresult *res = tdb_pg_query(c, "looking the operation up in the journal",
	                             "SELECT FROM tierdb.op_log WHERE op_id::text = $1", 1, params, err);
	if (res == NULL)
		return -1;
	int known = PQntuples(res) > 0;
	PQclear(res);
	return known;
}

/*
 * Whether every snapshot from the lake's current one back to s (exclusive)
 * is unknown to the journal: 1 (roll back), 0 (leave it: recovery's, or the
 * lake does not descend from s), -1 on error.
 */
static int orphans_only(PGconn *c, const char *label, const tl_ice_table *lake, int64_t s, tl_error *err)
{
	int64_t id = lake->metadata->current_snapshot_id;
	for (int steps = 0; id != s; steps++) {
		const tl_ice_snapshot *snap = id != TL_ICE_NO_SNAPSHOT ? tl_ice_metadata_snapshot(lake->metadata, id) : NULL;
		if (snap == NULL || steps > lake->metadata->nsnapshots) {
			tdb_log(label, "direct commits: the lake's current snapshot %lld does not descend from the published "
			               "snapshot %lld; run tierdb verify",
			        (long long)lake->metadata->current_snapshot_id, (long long)s);
			return 0;
		}
		const char *op = tl_ice_snapshot_summary(snap, "tierdb.op-id");
		int known = op != NULL ? known_op(c, op, err) : 0;
		if (known != 0)
			return known < 0 ? -1 : 0;
		id = snap->parent_id;
	}
	return 1;
}

static int settle_locked(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	int64_t s = TL_ICE_NO_SNAPSHOT;
	if (published_s(c, t->table_id, &s, err) < 0)
		return -1;
	tl_ice_table *lake = tdb_lake_open(t, err);
	if (lake == NULL)
		return -1;
	int rc = 0;
	if (lake->metadata->current_snapshot_id != s) {
		rc = orphans_only(c, tdb_table_label(t), lake, s, err);
		if (rc > 0) {
			int64_t from = lake->metadata->current_snapshot_id;
			rc = tl_ice_table_rollback(lake, s, err);
			if (rc == 0)
				tdb_log(tdb_table_label(t),
				        "direct commits: rolled the lake back from snapshot %lld to the published snapshot %lld "
				        "(committed by transactions that did not commit)",
				        (long long)from, (long long)s);
		}
	}
	tl_ice_table_free(lake);
	return rc < 0 ? -1 : 0;
}

int tdb_settle_direct_commits(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	if (strcmp(t->mode, "direct") != 0)
		return 0;
	if (tdb_lake_lock(c, t->table_id, true, err) < 0)
		return -1;
	int rc = settle_locked(c, t, err);
	tl_error ignored;
	tl_error_clear(&ignored);
	if (tdb_lake_lock(c, t->table_id, false, rc < 0 ? &ignored : err) < 0 && rc == 0)
		rc = -1;
	return rc;
}
