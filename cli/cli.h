/*
 * cli.h: what every `tierdb` command shares.
 *
 * A command is a cli_command in a table: main.c holds the top-level table
 * (one line per cli/cmd_*.c file) and a command with subcommands, like
 * `parquet`, hands its own table to cli_dispatch. Options are parsed with
 * cli_parser, which gives every command the same conventions:
 *
 *   --name value and --name=value; "--" ends the options
 *   --help (or -h) prints the command's usage to stdout and exits 0
 *   a usage error prints "<command>: <message>" and "Try '<command> --help'."
 *     to stderr and exits 2
 *   a runtime failure prints "tierdb: <message>" to stderr and exits 1
 *
 * A command's run function looks like this:
 *
 *     enum { OPT_LIMIT = 1 };
 *     static const cli_option options[] = {{"limit", true, OPT_LIMIT}, {NULL, false, 0}};
 *     cli_parser p;
 *     cli_parser_init(&p, "tierdb parquet cat", usage, options, argc, argv);
 *     for (int opt; (opt = cli_next(&p)) != CLI_END;)
 *         switch (opt) {
 *         case CLI_HELP: return cli_help(&p);
 *         case CLI_ERROR: return CLI_EXIT_USAGE;
 *         case CLI_POSITIONAL: ... p.value ...
 *         case OPT_LIMIT: ... cli_parse_int(&p, 0, INT64_MAX, &limit) ...
 *         }
 */
#ifndef TIERDB_CLI_H
#define TIERDB_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct tl_buf;

#define TIERDB_VERSION "0.1.0"

enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAILURE = 1, /* the command ran and failed */
	CLI_EXIT_USAGE = 2    /* the command line was wrong */
};

typedef struct cli_command {
	const char *name;
	const char *summary; /* one line, for the parent's usage */
	/* argv[0] is the command's own name; returns an exit status. */
	int (*run)(int argc, char **argv);
} cli_command;

/* Top-level commands, one per cli/cmd_*.c. */
extern const cli_command cli_parquet_command;
extern const cli_command cli_lake_command;
extern const cli_command cli_register_command;
extern const cli_command cli_unregister_command;
extern const cli_command cli_status_command;
extern const cli_command cli_run_command;
extern const cli_command cli_verify_command;
extern const cli_command cli_maintain_command;
extern const cli_command cli_profile_command;
extern const cli_command cli_policy_command;
extern const cli_command cli_ingest_command;

/*
 * Runs the subcommand named by argv[1] from commands (n of them). `path`
 * is the command so far ("tierdb parquet") and `describe` prints what it is
 * for, above the list of subcommands in its usage. A missing or unknown
 * subcommand is a usage error; --help prints the usage to stdout.
 */
int cli_dispatch(const char *path, void (*describe)(FILE *out), const cli_command *const *commands, int n,
                 int argc, char **argv);

/* ------------------------------------------------------------ options */

typedef struct cli_option {
	const char *name; /* without the leading "--"; NULL ends the table */
	bool has_value;   /* takes --name VALUE or --name=VALUE */
	int id;           /* what cli_next returns for it; must be > 0 */
} cli_option;

/* What cli_next returns besides an option's id. */
enum {
	CLI_END = 0,         /* no arguments left */
	CLI_POSITIONAL = -1, /* p->value is a positional argument */
	CLI_HELP = -2,       /* --help or -h */
	CLI_ERROR = -3       /* a usage error, already printed */
};

typedef struct cli_parser {
	const char *command;           /* "tierdb parquet cat", for messages */
	void (*usage)(FILE *out);      /* the full usage text */
	const cli_option *options;
	int argc;
	char **argv;
	int next;                      /* index of the next argument */
	bool options_done;             /* after "--" */
	const char *option;            /* the option just returned, as "--name" */
	const char *value;             /* its value, or the positional argument */
} cli_parser;

/* argv[0] is the command's own name and is skipped. */
void cli_parser_init(cli_parser *p, const char *command, void (*usage)(FILE *out), const cli_option *options,
                     int argc, char **argv);
/* The next option id, CLI_POSITIONAL, CLI_HELP, CLI_ERROR or CLI_END. */
int cli_next(cli_parser *p);
/* Prints the usage to stdout; returns CLI_EXIT_OK. */
int cli_help(const cli_parser *p);

/* Parses p->value as an integer in [min, max]; on failure prints a usage error and returns -1. */
int cli_parse_int(const cli_parser *p, int64_t min, int64_t max, int64_t *out);

/* Prints "<command>: <message>" and the --help hint to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "tierdb: <message>" to stderr; returns CLI_EXIT_FAILURE. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------ output */

/* Rows per batch for commands that print rows: large enough to amortise
 * per-batch work, small enough that a batch of wide strings stays modest. */
#define CLI_CAT_BATCH_ROWS 4096

/* Writes buf to stdout and empties it; errors are checked once at the end. */
void cli_write_out(struct tl_buf *buf);
/* Flushes stdout; a failed write is reported (CLI_EXIT_FAILURE). */
int cli_finish_output(void);

/*
 * Prints up to `limit` rows as JSON Lines (tl_render_row: batch column i
 * is schema column columns[i], or column i when columns is NULL), pulling
 * batches from next(ctx, batch, err) until it returns 0. Stops early when
 * stdout fails (a closed pipe): cli_finish_output reports that. Returns
 * CLI_EXIT_OK or CLI_EXIT_FAILURE after printing next()'s error.
 */
struct tl_pq_schema;
struct tl_pq_batch;
struct tl_error;
typedef int64_t (*cli_next_batch_fn)(void *ctx, struct tl_pq_batch *batch, struct tl_error *err);
int cli_print_rows(const struct tl_pq_schema *schema, const int *columns, struct tl_pq_batch *batch,
                   cli_next_batch_fn next, void *ctx, int64_t limit);

/*
 * Prints the first ncols columns of a query result as a text table: a
 * header of column names, values padded to the widest, NULL as an empty
 * cell (`tierdb status`, `tierdb profile list`).
 */
struct pg_result;
void cli_print_aligned(const struct pg_result *res, int ncols);

/* The names of a --columns list, split at commas (they point into `text`). */
typedef struct cli_column_list {
	char *text;
	char **names;
	int count;
} cli_column_list;

/*
 * Splits "a,b" into names; an empty or repeated name is a usage error
 * (printed; returns -1), found before any file is opened.
 */
int cli_split_columns(const char *cmd, const char *arg, cli_column_list *list);
void cli_column_list_free(cli_column_list *list);

#endif
