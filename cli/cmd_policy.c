/*
 * cmd_policy.c: `tierdb policy --table s.t [--lake-retention N|off]
 * [--set k=v ...] [--unset k ...] [--reset]`, the per-table settings that
 * may change after registration (SPEC §8, §9).
 *
 * The lake retention lag (tables.lake_retention_lag, in the tier key's
 * natural units like register's --lake-retention; retention.h says what
 * the daemon does with it): changing it never moves the retention line R
 * back: rows already expired stay expired, and writes below R stay
 * refused; a smaller lag moves R up at the daemon's next cycle.
 *
 * The maintenance policy (tables.maintenance_policy, maintenance_policy.h):
 * --set stores a key's value after checking it, --unset returns a key to
 * its default, --reset returns them all; one UPDATE applies every change,
 * so a bad key changes nothing. Without an option the command prints both.
 * bloom_columns is checked against the table as well: each name must be a
 * column of it whose bloom filter a read would consult (pgmap.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "catalog.h"
#include "maintenance_policy.h"
#include "cli.h"
#include "pg.h"
#include "pgtypes.h"
#include "profiles.h"
#include "tiering.h"

static void policy_usage(FILE *out)
{
	fputs("usage: tierdb policy --table S.T [--lake-retention N|off] [--set K=V ...] [--unset K ...] [--reset]\n"
	      "                     [--dsn DSN]\n"
	      "\n"
	      "Shows or changes a registered table's policy. Without an option it prints the\n"
	      "policy; with one it changes it and prints the result.\n"
	      "\n"
	      "Options:\n"
	      "  --table S.T            the table (schema public when unqualified; also accepted as\n"
	      "                         the only positional argument)\n"
	      "  --lake-retention N     expire lake rows older than N behind max(tier key) (integers:\n"
	      "                         a number; timestamps: 90s, 15m, 12h, 7d; dates: days), or\n"
	      "                         'off' to keep history from now on. The retention line never\n"
	      "                         moves back: expired rows do not return.\n"
	      "  --set K=V              set maintenance policy key K (repeatable), e.g.\n"
	      "                         snapshot_max_age=1d, target_file_bytes=256MB, orphan_sweep=on,\n"
	      "                         bloom_columns=customer_id,region (Parquet bloom filters for = and\n"
	      "                         IN on those columns, in files written from then on);\n"
	      "                         docs/maintenance.md lists the keys and defaults\n"
	      "  --unset K              return key K to its default (repeatable)\n"
	      "  --reset                return every maintenance key to its default\n"
	      "  --dsn DSN              the database (else TIERDB_PG_URL, else PG* variables)\n",
	      out);
}

/* Refuses tables whose mode or options leave no room for lake retention. */
static int check_allowed(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	if (strcmp(t->mode, "tiered") != 0 && strcmp(t->mode, "direct") != 0)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s is registered in %s mode; lake retention applies to tiered and direct tables",
		                    tdb_table_label(t), t->mode);
	char id[24];
	snprintf(id, sizeof(id), "%" PRId64, t->table_id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the table's options",
	                             "SELECT keep_heap FROM tierdb.tables WHERE table_id = $1", 1, params, err);
	if (res == NULL)
		return -1;
	bool keep_heap = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (keep_heap)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s is registered with --keep-heap, which keeps every row in the heap; lake "
		                    "retention cannot apply to it",
		                    tdb_table_label(t));
	return 0;
}

/*
 * Checks a bloom_columns value against the table: every name is a column
 * of it (names are matched exactly, as Postgres stores them) whose bloom
 * filter a read would consult. The error names the column and why.
 */
static int check_bloom_columns(PGconn *c, const tdb_catalog_table *t, const char *value, tl_error *err)
{
	json_t *policy = json_pack("{s:s}", "bloom_columns", value);
	char **names = NULL;
	int nnames = 0;
	int rc = tdb_maintenance_policy_bloom_columns(policy, &names, &nnames, err);
	json_decref(policy);
	tdb_pg_column *cols = NULL;
	int ncols = 0;
	if (rc == 0 && nnames > 0)
		rc = tdb_pg_table_columns(c, (uint32_t)t->table_id, &cols, &ncols, err);
	PGresult *res = NULL;
	if (rc == 0 && nnames > 0) {
		char id[24];
		snprintf(id, sizeof(id), "%" PRId64, t->table_id);
		const char *params[] = {id};
		res = tdb_pg_query(c, "reading the table's column types",
		                   "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod),"
		                   " pg_catalog.current_setting('server_encoding') FROM pg_catalog.pg_attribute a"
		                   " WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped",
		                   1, params, err);
		rc = res != NULL ? 0 : -1;
	}
	for (int i = 0; rc == 0 && i < nnames; i++) {
		const tdb_pg_column *col = NULL;
		for (int k = 0; k < ncols && col == NULL; k++)
			if (strcmp(cols[k].name, names[i]) == 0)
				col = &cols[k];
		const char *type = "?";
		for (int k = 0; k < PQntuples(res); k++)
			if (strcmp(PQgetvalue(res, k, 0), names[i]) == 0)
				type = PQgetvalue(res, k, 1);
		const char *why = col != NULL ? tdb_pg_bloom_refusal(col) : NULL;
		if (col == NULL)
			rc = tl_error_set(err, TL_ERR_INVALID,
			                  "bloom_columns: \"%s\" is not a column of %s (names are matched exactly, as "
			                  "Postgres stores them: lower case unless created quoted)",
			                  names[i], tdb_table_label(t));
		else if (why != NULL)
			rc = tl_error_set(err, TL_ERR_INVALID, "bloom_columns: column \"%s\" (%s) cannot use a bloom filter: %s",
			                  names[i], type, why);
		else if (col->ice_type.id == TL_ICE_STRING && strcmp(PQgetvalue(res, 0, 2), "UTF8") != 0)
			rc = tl_error_set(err, TL_ERR_INVALID,
			                  "bloom_columns: column \"%s\" (%s) cannot use a bloom filter: the database's encoding "
			                  "is %s, and the lake's strings (UTF-8) are compared in the lake only in a UTF8 "
			                  "database",
			                  names[i], type, PQgetvalue(res, 0, 2));
	}
	PQclear(res);
	tdb_pg_columns_free(cols, ncols);
	tdb_maintenance_policy_names_free(names, nnames);
	return rc;
}

/* Sets (has_lag) or clears the lag. */
static int set_lag(PGconn *c, const tdb_catalog_table *t, bool has_lag, int64_t lag, tl_error *err)
{
	char id[24], lag_text[24];
	snprintf(id, sizeof(id), "%" PRId64, t->table_id);
	snprintf(lag_text, sizeof(lag_text), "%" PRId64, lag);
	const char *params[] = {id, has_lag ? lag_text : NULL};
	return tdb_pg_exec(c, "changing the lake retention lag",
	                   "UPDATE tierdb.tables SET lake_retention_lag = $2::bigint WHERE table_id = $1", 2, params,
	                   err);
}

/* Prints the policy as stored: the lag in canonical units and the tier key's, and R. */
static int print_policy(PGconn *c, int64_t table_id, tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%" PRId64, table_id);
	const char *params[] = {id};
	/* Natural units (SPEC §2): microseconds as an interval for timestamps, days for dates. */
	PGresult *res = tdb_pg_query(
		c, "reading the table's policy",
		"SELECT format('%I.%I', t.schema_name, t.table_name), t.lake_retention_lag,"
		" CASE WHEN t.lake_retention_lag IS NULL THEN 'off'"
		"      WHEN t.tier_key_type IN ('timestamptz', 'timestamp')"
		"      THEN justify_hours(make_interval(secs => t.lake_retention_lag / 1e6))::text"
		"      WHEN t.tier_key_type = 'date' THEN t.lake_retention_lag || ' days'"
		"      ELSE t.lake_retention_lag::text END,"
		" CASE WHEN c.retention_line IS NULL THEN 'none'"
		"      WHEN t.tier_key_type = 'timestamptz' THEN (timestamptz 'epoch' + c.retention_line * interval '1 microsecond')::text"
		"      WHEN t.tier_key_type = 'timestamp' THEN (timestamp 'epoch' + c.retention_line * interval '1 microsecond')::text"
		"      WHEN t.tier_key_type = 'date' THEN (date 'epoch' + c.retention_line::int)::text"
		"      ELSE c.retention_line::text END"
		" FROM tierdb.tables t LEFT JOIN tierdb.cutline c USING (table_id) WHERE t.table_id = $1",
		1, params, err);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 1) {
		printf("policy %s: lake retention %s", PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 2));
		if (!PQgetisnull(res, 0, 1))
			printf(" (canonical %s)", PQgetvalue(res, 0, 1));
		printf("; retention line %s\n", PQgetvalue(res, 0, 3));
	}
	PQclear(res);
	return 0;
}

/* Prints the maintenance policy: every key, its value and where it comes from ("table" or "default"). */
static int print_maintenance(PGconn *c, int64_t table_id, tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%" PRId64, table_id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the maintenance policy",
	                             "SELECT maintenance_policy::text FROM tierdb.tables WHERE table_id = $1", 1, params,
	                             err);
	if (res == NULL)
		return -1;
	json_t *stored = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
	PQclear(res);
	json_t *described = tdb_maintenance_policy_describe(stored, false);
	printf("maintenance policy:\n");
	const char *key;
	json_t *v;
	json_object_foreach(described, key, v)
	{
		const char *source = json_string_value(json_object_get(v, "source"));
		printf("  %-22s %s%s\n", key, json_string_value(json_object_get(v, "value")),
		       strcmp(source, "table") == 0 ? "" : " (default)");
	}
	json_decref(described);
	json_decref(stored);
	return 0;
}

/*
 * Applies --reset, then --unset and --set, in one UPDATE: the stored
 * object without the unset keys (or empty), merged with the set ones.
 */
static int change_maintenance(PGconn *c, int64_t table_id, bool reset, json_t *set, json_t *unset, tl_error *err)
{
	char id[24];
	snprintf(id, sizeof(id), "%" PRId64, table_id);
	char *set_text = json_dumps(set, JSON_COMPACT);
	char *unset_text = json_dumps(unset, JSON_COMPACT);
	const char *params[] = {id, reset ? "t" : "f", set_text, unset_text};
	int rc = tdb_pg_exec(c, "changing the maintenance policy",
	                     "UPDATE tierdb.tables SET maintenance_policy ="
	                     " (CASE WHEN $2::boolean THEN '{}'::jsonb ELSE maintenance_policy END"
	                     "  - ARRAY(SELECT jsonb_array_elements_text($4::jsonb))) || $3::jsonb"
	                     " WHERE table_id = $1",
	                     4, params, err);
	free(set_text);
	free(unset_text);
	return rc;
}

/* Collects --set and --unset into JSON, checking each key and value; a usage error names the bad one. */
static int add_setting(const char *cmd, json_t *set, json_t *unset, bool is_set, const char *arg)
{
	tl_error err;
	tl_error_clear(&err);
	if (!is_set) {
		if (!tdb_maintenance_policy_is_key(arg))
			return cli_usage_error(cmd, "--unset: '%s' is not a maintenance policy key (see --help)", arg);
		json_array_append_new(unset, json_string(arg));
		return 0;
	}
	char *key, *value;
	if (tdb_maintenance_policy_parse_assignment(arg, &key, &value, &err) < 0)
		return cli_usage_error(cmd, "--set: %s", err.message);
	json_object_set_new(set, key, json_string(value));
	free(key);
	free(value);
	return 0;
}

static int run_policy(int argc, char **argv)
{
	static const char *cmd = "tierdb policy";
	enum { OPT_TABLE = 1, OPT_LAKE_RETENTION, OPT_SET, OPT_UNSET, OPT_RESET, OPT_DSN };
	static const cli_option options[] = {{"table", true, OPT_TABLE},
	                                     {"lake-retention", true, OPT_LAKE_RETENTION},
	                                     {"set", true, OPT_SET},
	                                     {"unset", true, OPT_UNSET},
	                                     {"reset", false, OPT_RESET},
	                                     {"dsn", true, OPT_DSN},
	                                     {NULL, false, 0}};
	const char *table = NULL, *retention = NULL, *dsn = NULL;
	bool reset = false;
	json_t *set = json_object(), *unset = json_array();
	int usage = 0;
	cli_parser p;
	cli_parser_init(&p, cmd, policy_usage, options, argc, argv);
	for (int opt; usage == 0 && (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP: usage = cli_help(&p); break;
		case CLI_ERROR: usage = CLI_EXIT_USAGE; break;
		case CLI_POSITIONAL:
			if (table != NULL)
				usage = cli_usage_error(cmd, "unexpected argument '%s'", p.value);
			table = p.value;
			break;
		case OPT_TABLE:
			if (table != NULL)
				usage = cli_usage_error(cmd, "the table is given twice");
			table = p.value;
			break;
		case OPT_LAKE_RETENTION: retention = p.value; break;
		case OPT_SET:
		case OPT_UNSET: usage = add_setting(cmd, set, unset, opt == OPT_SET, p.value); break;
		case OPT_RESET: reset = true; break;
		case OPT_DSN: dsn = p.value; break;
		}
	}
	if (usage == 0 && table == NULL)
		usage = cli_usage_error(cmd, "--table is required");
	if (usage != 0) {
		json_decref(set);
		json_decref(unset);
		return usage;
	}
	bool maintenance = reset || json_object_size(set) > 0 || json_array_size(unset) > 0;
	tl_error err;
	tl_error_clear(&err);
	tdb_table_name name;
	if (tdb_table_name_parse(table, &name, &err) < 0) {
		json_decref(set);
		json_decref(unset);
		return cli_usage_error(cmd, "--table: %s", err.message);
	}
	PGconn *c = tdb_pg_connect(dsn, &err);
	tdb_catalog_table t;
	memset(&t, 0, sizeof(t));
	int found = -1;
	if (c != NULL && tdb_catalog_check(c, &err) == 0)
		found = tdb_catalog_load_table(c, name.schema, name.table, &t, &err);
	int rc = CLI_EXIT_FAILURE;
	bool off = retention != NULL && strcmp(retention, "off") == 0;
	int64_t lag = 0;
	if (found == 0)
		cli_fail("%s.%s is not registered; 'tierdb status' lists the registered tables", name.schema, name.table);
	else if (found < 0)
		cli_fail("%s", err.message);
	else if (retention != NULL && !off && tdb_key_parse_lag(t.tier_key_type, retention, "--lake-retention", &lag, &err) < 0)
		rc = cli_usage_error(cmd, "%s", err.message);
	else if (retention != NULL && !off && lag <= 0)
		rc = cli_usage_error(cmd, "--lake-retention must be positive; use 'off' to keep history");
	else if (retention != NULL && (check_allowed(c, &t, &err) < 0 || set_lag(c, &t, !off, lag, &err) < 0))
		cli_fail("%s", err.message);
	else if (json_object_get(set, "bloom_columns") != NULL &&
	         check_bloom_columns(c, &t, json_string_value(json_object_get(set, "bloom_columns")), &err) < 0)
		cli_fail("%s", err.message);
	else if (maintenance && change_maintenance(c, t.table_id, reset, set, unset, &err) < 0)
		cli_fail("%s", err.message);
	else if (print_policy(c, t.table_id, &err) < 0 || print_maintenance(c, t.table_id, &err) < 0)
		cli_fail("%s", err.message);
	else
		rc = cli_finish_output();
	if (found > 0)
		tdb_catalog_table_free(&t);
	PQfinish(c);
	tdb_table_name_free(&name);
	json_decref(set);
	json_decref(unset);
	return rc;
}

const cli_command cli_policy_command = {"policy", "show or change a registered table's lake retention and maintenance policy", run_policy};
