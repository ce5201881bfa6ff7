/*
 * main.c: the `tierdb` command's entry point and its table of commands.
 *
 * Adding a command: write cli/cmd_NAME.c defining a cli_command, declare it
 * in cli.h and add it to `commands` below.
 */
#include <string.h>

#include "cli.h"

static const cli_command *const commands[] = {
	&cli_parquet_command,
	&cli_lake_command,
	&cli_register_command,
	&cli_unregister_command,
	&cli_status_command,
	&cli_run_command,
	&cli_verify_command,
	&cli_profile_command,
	&cli_policy_command,
	&cli_ingest_command,
	&cli_maintain_command,
};

static void describe_tierdb(FILE *out)
{
	fputs("TierDB keeps recent rows in Postgres and older rows in Apache Iceberg tables.\n"
	      "'tierdb --version' prints the version.\n",
	      out);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		if (argc > 2)
			return cli_usage_error("tierdb", "unexpected argument '%s' after --version", argv[2]);
		printf("tierdb %s\n", TIERDB_VERSION);
		return CLI_EXIT_OK;
	}
	return cli_dispatch("tierdb", describe_tierdb, commands, (int)(sizeof(commands) / sizeof(commands[0])), argc,
	                    argv);
}
