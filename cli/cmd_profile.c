/*
 * cmd_profile.c: `tierdb profile list | create | drop | set-default`, the
 * storage profiles of SPEC §4 and §8. The statements and the rules are in
 * profiles.c; this file parses options and prints.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cli.h"
#include "pg.h"
#include "profiles.h"

/* Connects and checks the catalog; NULL after printing the error. */
static PGconn *connect_checked(const char *dsn)
{
	tl_error err;
	tl_error_clear(&err);
	PGconn *c = tdb_pg_connect(dsn, &err);
	if (c != NULL && tdb_catalog_check(c, &err) < 0) {
		PQfinish(c);
		c = NULL;
	}
	if (c == NULL)
		cli_fail("%s", err.message);
	return c;
}

/* ------------------------------------------------------------ list */

static void list_usage(FILE *out)
{
	fputs("Usage: tierdb profile list [--json] [--dsn DSN]\n"
	      "\n"
	      "Shows each storage profile: whether it is the default, its warehouse, its\n"
	      "settings (endpoint, region, addressing), the name of its credentials reference\n"
	      "(never a secret: the daemon reads TIERDB_CREDENTIALS_<REF> from its environment)\n"
	      "and how many registered tables use it. --json prints a JSON array of objects.\n",
	      out);
}

static int cmd_list(int argc, char **argv)
{
	enum { OPT_JSON = 1, OPT_DSN };
	static const cli_option options[] = {{"json", false, OPT_JSON}, {"dsn", true, OPT_DSN}, {NULL, false, 0}};
	const char *dsn = NULL;
	bool json = false;
	cli_parser p;
	cli_parser_init(&p, "tierdb profile list", list_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;)
		switch (opt) {
		case CLI_HELP: return cli_help(&p);
		case CLI_ERROR: return CLI_EXIT_USAGE;
		case CLI_POSITIONAL: return cli_usage_error(p.command, "unexpected argument '%s'", p.value);
		case OPT_JSON: json = true; break;
		case OPT_DSN: dsn = p.value; break;
		}
	PGconn *c = connect_checked(dsn);
	if (c == NULL)
		return CLI_EXIT_FAILURE;
	tl_error err;
	tl_error_clear(&err);
	PGresult *res = tdb_profile_list(c, json, &err);
	int rc;
	if (res == NULL)
		rc = cli_fail("%s", err.message);
	else {
		if (json)
			printf("%s\n", PQgetvalue(res, 0, 0));
		else
			cli_print_aligned(res, PQnfields(res));
		rc = cli_finish_output();
	}
	PQclear(res);
	PQfinish(c);
	return rc;
}

/* ------------------------------------------------------------ create */

static void create_usage(FILE *out)
{
	fputs("Usage: tierdb profile create --name N --warehouse W [--config k=v;...]\n"
	      "                             [--credentials REF] [--default] [--dsn DSN]\n"
	      "\n"
	      "Creates a storage profile: where the lakes of the tables registered with\n"
	      "'tierdb register --profile N' live (<warehouse>/<schema>/<table>).\n"
	      "\n"
	      "  --warehouse W       a local directory (absolute, or relative to here), file:///dir,\n"
	      "                      or s3://bucket[/prefix]\n"
	      "  --config k=v;...    S3 settings: endpoint=http(s)://host:port, region=R,\n"
	      "                      addressing=path|virtual (unset ones come from TIERDB_S3_*)\n"
	      "  --credentials REF   the name of the S3 credentials ([A-Za-z0-9_]+), never the secret:\n"
	      "                      the daemon and this command read TIERDB_CREDENTIALS_<REF> from\n"
	      "                      their environment, the server its tierdb.credentials_file, as\n"
	      "                      access_key_id=...;secret_access_key=...[;session_token=...]\n"
	      "                      (without it, the environment's S3 credentials are used)\n"
	      "  --default           make it the default profile (the previous default stops being one)\n"
	      "\n"
	      "See docs/profiles.md.\n",
	      out);
}

static int cmd_create(int argc, char **argv)
{
	static const char *cmd = "tierdb profile create";
	enum { OPT_NAME = 1, OPT_WAREHOUSE, OPT_CONFIG, OPT_CREDENTIALS, OPT_DEFAULT, OPT_DSN };
	static const cli_option options[] = {{"name", true, OPT_NAME},
	                                     {"warehouse", true, OPT_WAREHOUSE},
	                                     {"config", true, OPT_CONFIG},
	                                     {"credentials", true, OPT_CREDENTIALS},
	                                     {"default", false, OPT_DEFAULT},
	                                     {"dsn", true, OPT_DSN},
	                                     {NULL, false, 0}};
	tdb_profile_spec spec;
	memset(&spec, 0, sizeof(spec));
	const char *dsn = NULL;
	cli_parser p;
	cli_parser_init(&p, cmd, create_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;)
		switch (opt) {
		case CLI_HELP: return cli_help(&p);
		case CLI_ERROR: return CLI_EXIT_USAGE;
		case CLI_POSITIONAL: return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
		case OPT_NAME: spec.name = p.value; break;
		case OPT_WAREHOUSE: spec.warehouse = p.value; break;
		case OPT_CONFIG: spec.config = p.value; break;
		case OPT_CREDENTIALS: spec.credential_ref = p.value; break;
		case OPT_DEFAULT: spec.make_default = true; break;
		case OPT_DSN: dsn = p.value; break;
		}
	if (spec.name == NULL)
		return cli_usage_error(cmd, "--name is required");
	if (spec.warehouse == NULL)
		return cli_usage_error(cmd, "--warehouse is required");
	PGconn *c = connect_checked(dsn);
	if (c == NULL)
		return CLI_EXIT_FAILURE;
	tl_error err;
	tl_error_clear(&err);
	int rc;
	if (tdb_profile_create(c, &spec, &err) < 0)
		rc = cli_fail("cannot create storage profile '%s': %s", spec.name, err.message);
	else {
		printf("created storage profile '%s'%s\n", spec.name, spec.make_default ? " (the default)" : "");
		rc = cli_finish_output();
	}
	PQfinish(c);
	return rc;
}

/* ------------------------------------------------------------ drop, set-default */

static void drop_usage(FILE *out)
{
	fputs("Usage: tierdb profile drop --name N [--dsn DSN]\n"
	      "\n"
	      "Deletes a storage profile. Refused while a registered table uses it (unregister\n"
	      "those first) and for the default profile (make another one the default first).\n"
	      "The warehouse's files are not touched.\n",
	      out);
}

static void set_default_usage(FILE *out)
{
	fputs("Usage: tierdb profile set-default --name N [--dsn DSN]\n"
	      "\n"
	      "Makes N the default profile: the one 'tierdb register' uses without --profile.\n"
	      "Tables registered before keep the profile they were registered with.\n",
	      out);
}

/* drop and set-default: --name N, one change. */
static int name_command(int argc, char **argv, const char *cmd, void (*usage)(FILE *out),
                        int (*change)(PGconn *c, const char *name, tl_error *err), const char *done,
                        const char *failed)
{
	enum { OPT_NAME = 1, OPT_DSN };
	static const cli_option options[] = {{"name", true, OPT_NAME}, {"dsn", true, OPT_DSN}, {NULL, false, 0}};
	const char *name = NULL, *dsn = NULL;
	cli_parser p;
	cli_parser_init(&p, cmd, usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;)
		switch (opt) {
		case CLI_HELP: return cli_help(&p);
		case CLI_ERROR: return CLI_EXIT_USAGE;
		case CLI_POSITIONAL: return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
		case OPT_NAME: name = p.value; break;
		case OPT_DSN: dsn = p.value; break;
		}
	if (name == NULL)
		return cli_usage_error(cmd, "--name is required");
	PGconn *c = connect_checked(dsn);
	if (c == NULL)
		return CLI_EXIT_FAILURE;
	tl_error err;
	tl_error_clear(&err);
	int rc;
	if (change(c, name, &err) < 0)
		rc = cli_fail("%s '%s': %s", failed, name, err.message);
	else {
		printf(done, name);
		rc = cli_finish_output();
	}
	PQfinish(c);
	return rc;
}

static int cmd_drop(int argc, char **argv)
{
	return name_command(argc, argv, "tierdb profile drop", drop_usage, tdb_profile_drop,
	                    "dropped storage profile '%s'\n", "cannot drop storage profile");
}

static int cmd_set_default(int argc, char **argv)
{
	return name_command(argc, argv, "tierdb profile set-default", set_default_usage, tdb_profile_set_default,
	                    "storage profile '%s' is the default now\n", "cannot make the default storage profile");
}

/* ------------------------------------------------------------ dispatch */

static void describe_profile(FILE *out)
{
	fputs("Manages storage profiles: where registered tables keep their lakes, and with which\n"
	      "S3 settings and credentials reference.\n",
	      out);
}

static const cli_command list_command = {"list", "show the storage profiles", cmd_list};
static const cli_command create_command = {"create", "create a storage profile", cmd_create};
static const cli_command drop_command = {"drop", "delete a storage profile no table uses", cmd_drop};
static const cli_command set_default_command = {"set-default", "make a profile the default", cmd_set_default};
static const cli_command *const profile_commands[] = {&list_command, &create_command, &drop_command,
                                                      &set_default_command};

static int run_profile(int argc, char **argv)
{
	return cli_dispatch("tierdb profile", describe_profile, profile_commands, 4, argc, argv);
}

const cli_command cli_profile_command = {"profile", "manage storage profiles (list, create, drop, set-default)",
                                         run_profile};
