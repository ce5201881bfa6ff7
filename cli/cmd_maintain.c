/*
 * cmd_maintain.c: `tierdb maintain --table s.t [--no-wait]`: asks the
 * daemon to maintain a table's lake now (SPEC §9, docs/maintenance.md).
 *
 * The request is a tierdb.maintenance_requests row: the catalog is the
 * only channel between the command and the daemon (ARCHITECTURE.md). The
 * daemon's next cycle runs every pass with the request's lower thresholds
 * and deletes the row once it has recorded what it did in
 * tierdb.lake_stats; the command waits for that (unless --no-wait) and
 * prints it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "cli.h"
#include "pg.h"
#include "tiering.h"

static void maintain_usage(FILE *out)
{
	fputs("usage: tierdb maintain --table S.T [--no-wait] [--dsn DSN]\n"
	      "\n"
	      "Asks the daemon (tierdb run) to maintain a table's lake now: compact small files and\n"
	      "files with deletes, rewrite manifests, expire old snapshots (never one a reader has pinned)\n"
	      "and, when the policy enables it, sweep orphan files. Waits for the run and prints what it\n"
	      "did.\n"
	      "\n"
	      "Options:\n"
	      "  --table S.T   the table (schema public when unqualified; also accepted as the only\n"
	      "                positional argument)\n"
	      "  --no-wait     return once the request is recorded\n"
	      "  --dsn DSN     the database (else TIERDB_PG_URL, else PG* variables)\n",
	      out);
}

/* Records the request; its requested_at (free()) identifies it. */
static char *request(PGconn *c, int64_t table_id, tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%" PRId64, table_id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "requesting maintenance",
	                             "INSERT INTO tierdb.maintenance_requests (table_id) VALUES ($1)"
	                             " ON CONFLICT (table_id) DO UPDATE SET requested_at = now(), requested_by = current_user"
	                             " RETURNING requested_at::text",
	                             1, params, err);
	if (res == NULL)
		return NULL;
	char *at = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return at;
}

/* 1 when the request is answered (its row is gone), 0 while it waits. */
static int answered(PGconn *c, int64_t table_id, const char *requested_at, tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%" PRId64, table_id);
	const char *params[] = {id, requested_at};
	PGresult *res = tdb_pg_query(c, "waiting for the daemon",
	                             "SELECT EXISTS (SELECT FROM tierdb.maintenance_requests"
	                             " WHERE table_id = $1 AND requested_at <= $2::timestamptz)",
	                             2, params, err);
	if (res == NULL)
		return -1;
	int done = strcmp(PQgetvalue(res, 0, 0), "f") == 0;
	PQclear(res);
	return done;
}

static int64_t get(const json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

/* Prints the run the daemon recorded; a failed pass is the command's failure. */
static int print_result(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%" PRId64, t->table_id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the maintenance result",
	                             "SELECT stats::text FROM tierdb.lake_stats WHERE table_id = $1", 1, params, err);
	if (res == NULL)
		return -1;
	json_t *stats = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
	PQclear(res);
	json_t *last = json_object_get(stats, "last_maintenance");
	int rc = 0;
	if (last == NULL) {
		rc = tl_error_set(err, TL_ERR_NOT_FOUND, "the daemon recorded no maintenance run for %s", tdb_table_label(t));
	} else {
		printf("maintained %s:\n", tdb_table_label(t));
		printf("  compaction: %" PRId64 " data files (%" PRId64 " bytes) rewritten into %" PRId64 " (%" PRId64
		       " rows); %" PRId64 " delete files removed\n",
		       get(last, "files_rewritten"), get(last, "bytes_rewritten"), get(last, "files_written"),
		       get(last, "rows_written"), get(last, "delete_files_removed"));
		printf("  manifests: %" PRId64 " rewritten into %" PRId64 "\n", get(last, "manifests_rewritten"),
		       get(last, "manifests_written"));
		printf("  expiry: %" PRId64 " snapshots expired; %" PRId64 " files (%" PRId64 " bytes) deleted\n",
		       get(last, "snapshots_expired"), get(last, "files_deleted"), get(last, "bytes_deleted"));
		printf("  orphans: %" PRId64 " files (%" PRId64 " bytes) deleted\n", get(last, "orphans_deleted"),
		       get(last, "orphan_bytes_deleted"));
		printf("  now: %" PRId64 " snapshots, %" PRId64 " data files (%" PRId64 " small), %" PRId64
		       " delete files, %" PRId64 " manifests\n",
		       get(stats, "snapshots"), get(stats, "data_files"), get(stats, "small_files"),
		       get(stats, "position_delete_files") + get(stats, "equality_delete_files"), get(stats, "manifests"));
		const char *error = json_string_value(json_object_get(last, "error"));
		if (error != NULL)
			rc = tl_error_set(err, TL_ERR_IO, "maintenance of %s failed: %s; the daemon's log has the details",
			                  tdb_table_label(t), error);
	}
	json_decref(stats);
	return rc;
}

static int run_maintain(int argc, char **argv)
{
	static const char *cmd = "tierdb maintain";
	enum { OPT_TABLE = 1, OPT_NO_WAIT, OPT_DSN };
	static const cli_option options[] = {
		{"table", true, OPT_TABLE}, {"no-wait", false, OPT_NO_WAIT}, {"dsn", true, OPT_DSN}, {NULL, false, 0}};
	const char *table = NULL, *dsn = NULL;
	bool no_wait = false;
	cli_parser p;
	cli_parser_init(&p, cmd, maintain_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP: return cli_help(&p);
		case CLI_ERROR: return CLI_EXIT_USAGE;
		case CLI_POSITIONAL:
		case OPT_TABLE:
			if (table != NULL)
				return cli_usage_error(cmd, "the table is given twice");
			table = p.value;
			break;
		case OPT_NO_WAIT: no_wait = true; break;
		case OPT_DSN: dsn = p.value; break;
		}
	}
	if (table == NULL)
		return cli_usage_error(cmd, "--table is required");
	tl_error err;
	tl_error_clear(&err);
	tdb_table_name name;
	if (tdb_table_name_parse(table, &name, &err) < 0)
		return cli_usage_error(cmd, "--table: %s", err.message);
	PGconn *c = tdb_pg_connect(dsn, &err);
	tdb_catalog_table t;
	memset(&t, 0, sizeof(t));
	int found = -1;
	if (c != NULL && tdb_catalog_check(c, &err) == 0)
		found = tdb_catalog_load_table(c, name.schema, name.table, &t, &err);
	int rc = CLI_EXIT_FAILURE;
	char *at = NULL;
	if (found == 0)
		cli_fail("%s.%s is not registered; 'tierdb status' lists the registered tables", name.schema, name.table);
	else if (found < 0)
		cli_fail("%s", err.message);
	else if ((at = request(c, t.table_id, &err)) == NULL)
		cli_fail("%s", err.message);
	else if (no_wait) {
		printf("requested maintenance of %s at %s; the daemon runs it in its next cycle\n", tdb_table_label(&t), at);
		rc = cli_finish_output();
	} else {
		fprintf(stderr, "tierdb maintain: waiting for the daemon (tierdb run) to maintain %s\n", tdb_table_label(&t));
		int done;
		while ((done = answered(c, t.table_id, at, &err)) == 0)
			usleep(200 * 1000);
		if (done < 0 || print_result(c, &t, &err) < 0)
			cli_fail("%s", err.message);
		else
			rc = cli_finish_output();
	}
	free(at);
	if (found > 0)
		tdb_catalog_table_free(&t);
	PQfinish(c);
	tdb_table_name_free(&name);
	return rc;
}

const cli_command cli_maintain_command = {"maintain", "ask the daemon to maintain a table's lake now",
                                          run_maintain};
