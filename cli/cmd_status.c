/*
 * cmd_status.c: `tierdb status`, what the tierdb.status view says about
 * registered tables, as an aligned text table or as JSON.
 *
 * The view (extension SQL) is the one definition of status, shared with
 * anyone who queries it directly; this command only selects from it
 * (status.h, the query the daemon's /metrics reads too) and formats. JSON is produced by the server (json_agg of the view's rows), so
 * numbers stay numbers and partition_states stays an object.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "catalog.h"
#include "cli.h"
#include "pg.h"
#include "status.h"

static void status_usage(FILE *out)
{
	fputs("Usage: tierdb status [--table SCHEMA.TABLE] [--json] [--dsn DSN]\n"
	      "\n"
	      "Shows each registered table's mode, cut-line T and lake snapshot S, mirror frontier,\n"
	      "retention line, delta backlog, live read pins, staged loads, whether an initial\n"
	      "copy is running, and how many partitions are in each state: the rows of the\n"
	      "tierdb.status view. --json prints them as a JSON array of objects.\n",
	      out);
}

/*
 * After the table: one line per delta row the fold cannot write (the
 * column unfoldable_rows is JSON and not part of the table).
 */
static void print_unfoldable(const PGresult *res)
{
	int col = PQfnumber(res, "unfoldable_rows");
	for (int i = 0; col >= 0 && i < PQntuples(res); i++) {
		json_t *rows = json_loads(PQgetvalue(res, i, col), 0, NULL);
		size_t k;
		json_t *w;
		json_array_foreach(rows, k, w)
			printf("%s: delta row pk %s (version %s) cannot fold into the lake: %s\n", PQgetvalue(res, i, 0),
			       json_string_value(json_object_get(w, "pk")), json_string_value(json_object_get(w, "version")),
			       json_string_value(json_object_get(w, "reason")));
		json_decref(rows);
	}
}

/* The lake debt the daemon found past the maintenance policy's thresholds (tierdb.lake_stats). */
static void print_lake_warnings(const PGresult *res)
{
	int col = PQfnumber(res, "lake_warnings");
	for (int i = 0; col >= 0 && i < PQntuples(res); i++) {
		json_t *warnings = json_loads(PQgetvalue(res, i, col), 0, NULL);
		size_t k;
		json_t *w;
		json_array_foreach(warnings, k, w)
		{
			const char *kind = json_string_value(json_object_get(w, "kind"));
			json_t *count = json_object_get(w, "count");
			char amount[64];
			if (json_is_integer(count))
				snprintf(amount, sizeof(amount), "%lld (threshold %lld)", (long long)json_integer_value(count),
				         (long long)json_integer_value(json_object_get(w, "threshold")));
			else
				snprintf(amount, sizeof(amount), "%.3f of the rows (threshold %.3f)",
				         json_number_value(json_object_get(w, "ratio")),
				         json_number_value(json_object_get(w, "threshold")));
			printf("%s: WARNING: lake %s %s: %s\n", PQgetvalue(res, i, 0),
			       kind != NULL && strcmp(kind, "small_files") == 0 ? "small data files"
			       : kind != NULL && strcmp(kind, "delete_debt") == 0 ? "delete debt"
			                                                          : "snapshots",
			       amount, json_string_value(json_object_get(w, "advice")));
		}
		json_decref(warnings);
	}
}

/* Mirrored tables whose slot holds more WAL than TIERDB_SLOT_WARN_BYTES (the daemon's threshold, 1 GiB). */
static void print_slot_warnings(const PGresult *res)
{
	const char *env = getenv("TIERDB_SLOT_WARN_BYTES");
	long long warn = env != NULL && *env != '\0' ? strtoll(env, NULL, 10) : 1LL << 30;
	int col = PQfnumber(res, "slot_wal_bytes");
	for (int i = 0; col >= 0 && i < PQntuples(res); i++)
		if (!PQgetisnull(res, i, col) && strtoll(PQgetvalue(res, i, col), NULL, 10) > warn)
			printf("%s: WARNING: its replication slot holds %s bytes of WAL (more than TIERDB_SLOT_WARN_BYTES = %lld):"
			       " the daemon's pump is failing or far behind, and the server keeps that WAL on disk; see the"
			       " daemon's log\n",
			       PQgetvalue(res, i, 0), PQgetvalue(res, i, col), warn);
}

static int show_status(PGconn *c, const tdb_table_name *name, bool json)
{
	tl_error err;
	tl_error_clear(&err);
	if (name != NULL) {
		tdb_catalog_table t;
		int found = tdb_catalog_load_table(c, name->schema, name->table, &t, &err);
		if (found < 0)
			return cli_fail("%s", err.message);
		if (found == 0)
			return cli_fail("%s.%s is not registered; 'tierdb status' lists the registered tables", name->schema,
			                name->table);
		tdb_catalog_table_free(&t);
	}
	const char *schema = name ? name->schema : NULL, *table = name ? name->table : NULL;
	PGresult *res;
	if (json) {
		const char *params[] = {schema, table};
		res = tdb_pg_query(c, "reading tierdb.status",
		                   "SELECT coalesce(json_agg(s ORDER BY s.schema_name, s.table_name), '[]')::text"
		                   " FROM tierdb.status s WHERE ($1::text IS NULL OR (s.schema_name = $1 AND s.table_name = $2))",
		                   2, params, &err);
	} else {
		res = tdb_status_rows(c, schema, table, &err);
	}
	if (res == NULL)
		return cli_fail("%s", err.message);
	if (json)
		printf("%s\n", PQgetvalue(res, 0, 0));
	else if (PQntuples(res) == 0)
		printf("no tables are registered; register one with 'tierdb register'\n");
	else {
		/* The shown columns; print_lake_warnings and print_unfoldable say the rest in sentences. */
		cli_print_aligned(res, TDB_STATUS_SHOWN_COLUMNS);
		print_lake_warnings(res);
		print_unfoldable(res);
		print_slot_warnings(res);
	}
	PQclear(res);
	return cli_finish_output();
}

static int run_status(int argc, char **argv)
{
	static const char *cmd = "tierdb status";
	enum { OPT_TABLE = 1, OPT_JSON, OPT_DSN };
	static const cli_option options[] = {
		{"table", true, OPT_TABLE}, {"json", false, OPT_JSON}, {"dsn", true, OPT_DSN}, {NULL, false, 0}};
	const char *table = NULL, *dsn = NULL;
	bool json = false;
	cli_parser p;
	cli_parser_init(&p, cmd, status_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP: return cli_help(&p);
		case CLI_ERROR: return CLI_EXIT_USAGE;
		case CLI_POSITIONAL: return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
		case OPT_TABLE: table = p.value; break;
		case OPT_JSON: json = true; break;
		case OPT_DSN: dsn = p.value; break;
		}
	}
	tl_error err;
	tl_error_clear(&err);
	tdb_table_name name;
	if (table != NULL && tdb_table_name_parse(table, &name, &err) < 0)
		return cli_usage_error(cmd, "--table: %s", err.message);
	PGconn *c = tdb_pg_connect(dsn, &err);
	int rc;
	if (c == NULL || tdb_catalog_check(c, &err) < 0)
		rc = cli_fail("%s", err.message);
	else
		rc = show_status(c, table ? &name : NULL, json);
	PQfinish(c);
	if (table != NULL)
		tdb_table_name_free(&name);
	return rc;
}

const cli_command cli_status_command = {"status", "show registered tables and their cut-lines", run_status};
