/*
 * cmd_ingest.c: `tierdb ingest`, bulk history into a table's lake in one
 * atomic commit (SPEC §9; ingest.h does the work, docs/ingest.md tells the
 * user how).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "catalog.h"
#include "daemon.h"
#include "cli.h"
#include "ingest.h"
#include "pg.h"
#include "tiering.h"

static void ingest_usage(FILE *out)
{
	fputs("usage: tierdb ingest --table S.T [--file F.parquet ...] [--jsonl F ...] [--json] [--progress]\n"
	      "                     [--dsn DSN]\n"
	      "\n"
	      "Loads history into the lake of a tiered or direct table as ONE atomic lake commit.\n"
	      "Every row must have its tier key in [R, T) (below the cut-line, not below the\n"
	      "retention line), may hold each key once, and must pass the table's column types,\n"
	      "NOT NULL and CHECK constraints; a key already in the lake or the delta is replaced\n"
	      "(upsert). If any row fails, nothing is committed and the error names the source,\n"
	      "the row and the rule.\n"
	      "\n"
	      "  --table S.T       the registered table\n"
	      "  --file F          a Parquet file; adopted as it is when its columns carry the lake\n"
	      "                    table's field ids with its types and its rows lie in one\n"
	      "                    partition, else rewritten (may be repeated)\n"
	      "  --jsonl F         a file of JSON objects, one per line, keys naming columns;\n"
	      "                    '-' reads standard input (may be repeated)\n"
	      "  --json            print the result as one JSON object\n"
	      "  --progress        print progress (rows/s, bytes, ETA) to stderr; the default on a terminal\n"
	      "  --dsn DSN         the connection (else TIERDB_PG_URL, else the PG* environment)\n",
	      out);
}

typedef struct ingest_input {
	const char *path;
	bool parquet;
} ingest_input;

static int add_input(tdb_ingest *in, const ingest_input *input, tl_error *err)
{
	if (input->parquet)
		return tdb_ingest_add_parquet(in, input->path, err);
	if (strcmp(input->path, "-") == 0)
		return tdb_ingest_add_jsonl_file(in, "standard input", stdin, err);
	FILE *f = fopen(input->path, "r");
	if (f == NULL)
		return tl_error_set(err, TL_ERR_IO, "%s: cannot open: %m", input->path);
	int rc = tdb_ingest_add_jsonl_file(in, input->path, f, err);
	fclose(f);
	return rc;
}

static void print_result(const tdb_catalog_table *t, const tdb_ingest_result *r, bool as_json)
{
	if (as_json) {
		json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:b}", "op_id", r->op_id, "rows", (json_int_t)r->rows,
		                      "replaced", (json_int_t)r->replaced, "files_adopted", (json_int_t)r->files_adopted,
		                      "files_written", (json_int_t)r->files_written, "bytes", (json_int_t)r->bytes,
		                      "committed", r->committed);
		json_object_set_new(o, "snapshot_id", r->committed ? json_integer(r->snapshot_id) : json_null());
		char *text = json_dumps(o, JSON_COMPACT);
		printf("%s\n", text);
		free(text);
		json_decref(o);
		return;
	}
	if (!r->committed) {
		printf("ingested nothing into %s: the sources hold no rows\n", tdb_table_label(t));
		return;
	}
	printf("ingested %" PRId64 " row%s into %s as lake snapshot %" PRId64 " (operation %s): %" PRId64
	       " file%s adopted, %" PRId64 " written, %" PRId64 " existing key%s replaced\n",
	       r->rows, r->rows == 1 ? "" : "s", tdb_table_label(t), r->snapshot_id, r->op_id, r->files_adopted,
	       r->files_adopted == 1 ? "" : "s", r->files_written, r->replaced, r->replaced == 1 ? "" : "s");
}

static int run_ingest(int argc, char **argv)
{
	static const char *cmd = "tierdb ingest";
	enum { OPT_TABLE = 1, OPT_FILE, OPT_JSONL, OPT_JSON, OPT_PROGRESS, OPT_DSN };
	static const cli_option options[] = {{"table", true, OPT_TABLE},   {"file", true, OPT_FILE},
	                                     {"jsonl", true, OPT_JSONL},   {"json", false, OPT_JSON},
	                                     {"progress", false, OPT_PROGRESS}, {"dsn", true, OPT_DSN},
	                                     {NULL, false, 0}};
	const char *table = NULL, *dsn = NULL;
	bool as_json = false, progress = isatty(STDERR_FILENO);
	ingest_input *inputs = tl_calloc((size_t)argc + 1, sizeof(ingest_input));
	int ninputs = 0;
	cli_parser p;
	cli_parser_init(&p, cmd, ingest_usage, options, argc, argv);
	int status = -1;
	for (int opt; status < 0 && (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP: status = cli_help(&p); break;
		case CLI_ERROR: status = CLI_EXIT_USAGE; break;
		case CLI_POSITIONAL: status = cli_usage_error(cmd, "unexpected argument '%s'", p.value); break;
		case OPT_TABLE: table = p.value; break;
		case OPT_FILE: inputs[ninputs++] = (ingest_input){p.value, true}; break;
		case OPT_JSONL: inputs[ninputs++] = (ingest_input){p.value, false}; break;
		case OPT_JSON: as_json = true; break;
		case OPT_PROGRESS: progress = true; break;
		case OPT_DSN: dsn = p.value; break;
		}
	}
	if (status < 0 && table == NULL)
		status = cli_usage_error(cmd, "--table is required");
	if (status < 0 && ninputs == 0)
		status = cli_usage_error(cmd, "nothing to ingest: give --file or --jsonl");
	tl_error err;
	tl_error_clear(&err);
	tdb_table_name name = {0};
	if (status < 0 && tdb_table_name_parse(table, &name, &err) < 0)
		status = cli_usage_error(cmd, "--table: %s", err.message);
	if (status >= 0) {
		free(inputs);
		tdb_table_name_free(&name);
		return status;
	}
	tdb_log_set_program("tierdb ingest");
	PGconn *c = tdb_pg_connect(dsn, &err);
	tdb_catalog_table t;
	memset(&t, 0, sizeof(t));
	int found = -1;
	if (c != NULL && tdb_catalog_check(c, &err) == 0)
		found = tdb_catalog_load_table(c, name.schema, name.table, &t, &err);
	int rc = CLI_EXIT_FAILURE;
	tdb_ingest *in = NULL;
	tdb_ingest_result result;
	memset(&result, 0, sizeof(result));
	if (found == 0)
		cli_fail("%s.%s is not registered; 'tierdb status' lists the registered tables", name.schema, name.table);
	else if (found < 0)
		cli_fail("%s", err.message);
	else if ((in = tdb_ingest_begin(c, &t, &(tdb_ingest_options){.op_kind = "ingest", .progress = progress},
	                                &err)) == NULL)
		cli_fail("%s", err.message);
	else {
		int ok = 0;
		for (int i = 0; i < ninputs && ok == 0; i++)
			ok = add_input(in, &inputs[i], &err);
		if (ok == 0)
			ok = tdb_ingest_commit(in, NULL, NULL, &result, &err);
		if (ok < 0)
			cli_fail("%s; nothing was committed", err.message);
		else {
			print_result(&t, &result, as_json);
			rc = cli_finish_output();
		}
	}
	tdb_ingest_free(in);
	if (found > 0)
		tdb_catalog_table_free(&t);
	PQfinish(c);
	tdb_table_name_free(&name);
	free(inputs);
	return rc;
}

const cli_command cli_ingest_command = {"ingest", "load history (Parquet, JSONL) into a table's lake in one commit",
                                        run_ingest};
