/*
 * mirror_setup.c: the Postgres side of a mirrored table's change stream
 * (see mirror.h): REPLICA IDENTITY FULL, the publication and the logical
 * replication slot that registration makes and unregistration drops.
 *
 * Order matters. The publication and the replica identity come first, in
 * their own transaction: the walsender decodes each change with the
 * catalog as it was when the change was made, so a publication created
 * after the slot's consistent point would be missing for the changes in
 * between, and an UPDATE or DELETE logged before FULL was set would carry
 * only the key of its old row, not the tier key that says which lake
 * partition holds it. The slot comes next, outside any transaction that
 * wrote (Postgres refuses that), and its consistent point C is where the
 * stream the pump reads starts.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mirror.h"
#include "pg.h"
#include "tiering.h"

void tdb_mirror_plumbing_free(tdb_mirror_plumbing *m)
{
	free(m->publication);
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

static int require_logical_wal(PGconn *c, tl_error *err)
{
	PGresult *res = tdb_pg_query(c, "reading wal_level", "SELECT current_setting('wal_level')", 0, NULL, err);
	if (res == NULL)
		return -1;
	int rc = 0;
	if (strcmp(PQgetvalue(res, 0, 0), "logical") != 0)
		rc = tl_error_set(err, TL_ERR_UNSUPPORTED,
		                  "a mirrored table's changes are read from Postgres' logical replication stream, which "
		                  "needs wal_level = logical (it is %s): ALTER SYSTEM SET wal_level = logical, restart the "
		                  "server, and register again",
		                  PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}

/* The names: tierdb_<table oid> for the publication, tierdb_<database oid>_<table oid> for the cluster-wide slot. */
static int choose_names(PGconn *c, uint32_t table_oid, tdb_mirror_plumbing *m, tl_error *err)
{
	PGresult *res = tdb_pg_query(c, "reading the database's oid",
	                             "SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()", 0, NULL,
	                             err);
	if (res == NULL)
		return -1;
	char name[64];
	snprintf(name, sizeof(name), "tierdb_%u", table_oid);
	m->publication = tl_strdup(name);
	snprintf(name, sizeof(name), "tierdb_%s_%u", PQgetvalue(res, 0, 0), table_oid);
	m->slot = tl_strdup(name);
	PQclear(res);
	return 0;
}

int tdb_mirror_full_identity(PGconn *c, uint32_t table_oid, tl_error *err)
{
	/* every partition logs its own changes, so each needs FULL (those made later too: the pump checks) */
	char sql[512];
	snprintf(sql, sizeof(sql),
	         "DO $$ DECLARE r regclass; BEGIN"
	         " FOR r IN SELECT k.oid FROM pg_catalog.pg_class k WHERE k.relreplident <> 'f' AND k.relkind IN ('r', 'p')"
	         "  AND (k.oid = %u OR k.oid IN (SELECT t.relid FROM pg_catalog.pg_partition_tree(%u::oid::regclass) t))"
	         " LOOP EXECUTE format('ALTER TABLE %%s REPLICA IDENTITY FULL', r); END LOOP; END $$",
	         table_oid, table_oid);
	return tdb_pg_exec(c, "setting REPLICA IDENTITY FULL", sql, 0, NULL, err);
}

/*
 * Drops the slot if it exists. A daemon's pump keeps its stream open between
 * runs, so a slot in use is freed first: its walsender is ended (the pump
 * opens a new stream at its next run, or finds the table unregistered).
 */
static int drop_slot(PGconn *c, const char *slot, tl_error *err)
{
	const char *params[] = {slot};
	for (int attempt = 0; attempt < 100; attempt++) {
		PGresult *res = tdb_pg_query(c, "looking up the replication slot",
		                             "SELECT active_pid, pg_catalog.pg_terminate_backend(active_pid)"
		                             " FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
		                             1, params, err);
		if (res == NULL)
			return -1;
		bool gone = PQntuples(res) == 0, active = !gone && !PQgetisnull(res, 0, 0);
		PQclear(res);
		if (gone)
			return 0;
		if (!active)
			return tdb_pg_exec(c, "dropping the replication slot", "SELECT pg_catalog.pg_drop_replication_slot($1)",
			                   1, params, err);
		struct timespec pause = {0, 100 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	return tl_error_set(err, TL_ERR_CONFLICT, "replication slot %s stayed in use for 10 s after its walsender was "
	                    "asked to end; retry",
	                    slot);
}

int tdb_mirror_plumbing_create(PGconn *c, uint32_t table_oid, const char *qualified, tdb_mirror_plumbing *m,
                               tl_error *err)
{
	if (require_logical_wal(c, err) < 0 || choose_names(c, table_oid, m, err) < 0)
		return -1;
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "CREATE PUBLICATION ");
	tdb_pg_quote_ident(m->publication, &sql);
	/* a partitioned table's changes come as the table's own, whichever partition made them */
	tl_buf_printf(&sql, " FOR TABLE %s WITH (publish_via_partition_root = true)", qualified);
	tl_buf drop;
	tl_buf_init(&drop);
	tl_buf_append_str(&drop, "DROP PUBLICATION IF EXISTS ");
	tdb_pg_quote_ident(m->publication, &drop);
	/* a registration that failed half way may have left them: made afresh */
	int rc = drop_slot(c, m->slot, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "preparing the change stream", "BEGIN", 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "dropping a publication left by an earlier registration", tdb_buf_cstr(&drop), 0, NULL,
		                 err);
	if (rc == 0)
		rc = tdb_mirror_full_identity(c, table_oid, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "creating the publication", tdb_buf_cstr(&sql), 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "committing the publication", "COMMIT", 0, NULL, err);
	else
		tdb_pg_exec(c, "abandoning the publication", "ROLLBACK", 0, NULL, NULL);
	tl_buf_free(&sql);
	tl_buf_free(&drop);
	if (rc < 0)
		return -1;
	const char *params[] = {m->slot};
	PGresult *res = tdb_pg_query(c, "creating the replication slot",
	                             "SELECT (lsn - '0/0')::bigint FROM pg_catalog.pg_create_logical_replication_slot($1, "
	                             "'pgoutput')",
	                             1, params, err);
	if (res == NULL) {
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_mirror_plumbing_drop(c, m, &ignored);
		return -1;
	}
	m->consistent_point = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}

int tdb_mirror_plumbing_drop(PGconn *c, const tdb_mirror_plumbing *m, tl_error *err)
{
	if (m->slot != NULL && drop_slot(c, m->slot, err) < 0)
		return -1;
	if (m->publication == NULL)
		return 0;
	tl_buf drop;
	tl_buf_init(&drop);
	tl_buf_append_str(&drop, "DROP PUBLICATION IF EXISTS ");
	tdb_pg_quote_ident(m->publication, &drop);
	int rc = tdb_pg_exec(c, "dropping the publication", tdb_buf_cstr(&drop), 0, NULL, err);
	tl_buf_free(&drop);
	return rc;
}
