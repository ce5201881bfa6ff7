/*
 * oplog.c: the journal of lake-writing operations (tierdb.op_log).
 *
 * Each operation gets a row when it starts and moves it through phases as
 * it goes (tiering.h lists them). A phase change is an ordinary statement,
 * so a caller puts it in the same transaction as the step it records: the
 * journal then never claims a step that did not commit. Recovery after a
 * crash starts from the rows whose phase is not final.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "tiering.h"

/* Phases after which an operation needs no recovery: the lake and the catalog agree. */
#define SETTLED_PHASES "('published', 'done', 'aborted')"

int tdb_oplog_begin(PGconn *c, int64_t table_id, const char *kind, const char *phase, const char *details,
                    char op_id[37], tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%lld", (long long)table_id);
	const char *params[] = {id, kind, phase, details};
	PGresult *res = tdb_pg_query(c, "journaling a new operation",
	                             "INSERT INTO tierdb.op_log (op_id, table_id, op_kind, phase, details)"
	                             " VALUES (gen_random_uuid(), $1, $2, $3, coalesce($4::jsonb, '{}'))"
	                             " RETURNING op_id",
	                             4, params, err);
	if (res == NULL)
		return -1;
	snprintf(op_id, 37, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int tdb_oplog_set_phase(PGconn *c, const char *op_id, const char *phase, const int64_t *snapshot_id, tl_error *err)
{
	char snap[24];
	if (snapshot_id != NULL)
		snprintf(snap, sizeof(snap), "%lld", (long long)*snapshot_id);
	const char *params[] = {op_id, phase, snapshot_id ? snap : NULL};
	PGresult *res = tdb_pg_query(c, "journaling an operation's phase",
	                             "UPDATE tierdb.op_log SET phase = $2,"
	                             " lake_snapshot_id = coalesce($3::bigint, lake_snapshot_id), updated_at = now()"
	                             " WHERE op_id = $1::uuid RETURNING op_id",
	                             3, params, err);
	if (res == NULL)
		return -1;
	int found = PQntuples(res);
	PQclear(res);
	if (found != 1)
		return tl_error_set(err, TL_ERR_NOT_FOUND, "operation %s is missing from tierdb.op_log", op_id);
	return 0;
}

int tdb_oplog_unfinished(PGconn *c, int64_t table_id, char **op_id, char **phase, tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%lld", (long long)table_id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading unfinished operations",
	                             "SELECT op_id, phase FROM tierdb.op_log WHERE table_id = $1"
	                             " AND phase NOT IN " SETTLED_PHASES " ORDER BY updated_at LIMIT 1",
	                             1, params, err);
	if (res == NULL)
		return -1;
	int found = PQntuples(res) > 0;
	if (found) {
		*op_id = tl_strdup(PQgetvalue(res, 0, 0));
		*phase = tl_strdup(PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	return found;
}

int tdb_oplog_finish_drops(PGconn *c, int64_t table_id, bool kept, tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%lld", (long long)table_id);
	/* a keep-heap table's partitions stay 'tiered': kept once the caller has unsealed them all */
	const char *params[] = {id, kept ? "tiered" : "dropped"};
	return tdb_pg_exec(c, "journaling finished drops",
	                   "UPDATE tierdb.op_log o SET phase = 'done', updated_at = now()"
	                   " WHERE o.table_id = $1 AND o.op_kind = 'tiering' AND o.phase = 'published'"
	                   " AND NOT EXISTS (SELECT FROM tierdb.partitions p WHERE p.table_id = o.table_id"
	                   " AND p.state <> $2"
	                   " AND p.partition_id IN (SELECT jsonb_array_elements_text(o.details -> 'partitions')))",
	                   2, params, err);
}
