/*
 * copycat: the type tests' window into the daemon's COPY decoding.
 *
 *   copycat --dsn DSN --table SCHEMA.TABLE [--batch-rows N] [--stream FILE] [--client-encoding E]
 *
 * Maps the table's columns (tdb_pg_table_columns), streams them with
 *   COPY (SELECT <select list> FROM "schema"."table") TO STDOUT (FORMAT binary)
 * decodes the stream with the daemon's decoder and prints each row as one
 * JSON line with tl_render_row: exactly the values the lake will hold, in
 * the form `tierdb lake cat` prints them. Before the rows it prints one line
 * {"columns": [{"name", "type", "required"}...]} with each column's Iceberg
 * type, so tests check the mapping too. Errors go to stderr with exit 1
 * (usage errors: exit 2).
 *
 * --stream FILE decodes FILE (a binary COPY file, say from psql's \copy)
 * instead of running COPY, handed to the decoder as one message, so tests
 * can feed it truncated or damaged streams; --batch-rows must then cover
 * every row. --client-encoding (default UTF8) exists to test that any
 * other is refused.
 *
 * The Makefile builds each tool from its one .c file, linked with liblake
 * and libpq only, so the two cli/ modules under test are compiled in here
 * by including their .c files. The tool talks to libpq directly (no
 * cli/pg.c), which also keeps it independent of the daemon's connection
 * code.
 */
#include "../../cli/pgcopy.c"
#include "../../cli/pgmap.c"
#include "../../cli/pgtypes.c"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tierlake/render.h"

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("copycat: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int usage(void)
{
	fputs("usage: copycat --dsn DSN --table SCHEMA.TABLE [--batch-rows N] [--stream FILE] [--client-encoding E]\n",
	      stderr);
	return 2;
}

/* The table's oid, looked up by name with parameters (never SQL text). */
static int table_oid(PGconn *conn, const char *qualified, uint32_t *oid)
{
	const char *dot = strchr(qualified, '.');
	if (dot == NULL)
		return fail("--table must be SCHEMA.TABLE, not \"%s\"", qualified);
	char *schema = strndup(qualified, (size_t)(dot - qualified));
	const char *params[2] = {schema, dot + 1};
	PGresult *res = PQexecParams(conn,
	                             "SELECT c.oid FROM pg_catalog.pg_class c"
	                             " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
	                             " WHERE n.nspname = $1 AND c.relname = $2",
	                             2, NULL, params, NULL, NULL, 0);
	free(schema);
	int status = 0;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		status = fail("looking up %s: %s", qualified, PQresultErrorMessage(res));
	else if (PQntuples(res) != 1)
		status = fail("no table %s", qualified);
	else
		*oid = (uint32_t)strtoul(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return status;
}

/* The Parquet schema the lake writes for these columns (field ids 1..n). */
static tl_pq_schema *lake_schema(const tdb_pg_column *cols, int n, tl_error *err)
{
	tl_pq_schema *schema = tl_pq_schema_new();
	for (int i = 0; i < n; i++) {
		tl_ice_field field = {.id = i + 1, .name = cols[i].name, .required = cols[i].not_null,
		                      .type = cols[i].ice_type};
		tl_pq_column col;
		if (tl_ice_field_to_pq_column(&field, &col, err) < 0) {
			tl_pq_schema_free(schema);
			return NULL;
		}
		tl_pq_schema_add(schema, &col);
	}
	return schema;
}

static void print_columns(const tdb_pg_column *cols, int n)
{
	json_t *list = json_array();
	tl_buf type;
	tl_buf_init(&type);
	for (int i = 0; i < n; i++) {
		tl_buf_reset(&type);
		tl_ice_type_text(&cols[i].ice_type, &type);
		json_array_append_new(list, json_pack("{s:s, s:s%, s:b}", "name", cols[i].name, "type",
		                                      (const char *)type.data, type.len, "required", cols[i].not_null));
	}
	tl_buf_free(&type);
	json_t *doc = json_pack("{s:o}", "columns", list);
	char *text = json_dumps(doc, JSON_COMPACT);
	puts(text);
	free(text);
	json_decref(doc);
}

static void print_batch(const tl_pq_schema *schema, tl_pq_batch *batch, tl_buf *out)
{
	for (int64_t row = 0; row < batch->nrows; row++) {
		tl_buf_reset(out);
		tl_render_row(schema, NULL, batch, row, out);
		tl_buf_append_byte(out, '\n');
		fwrite(out->data, 1, out->len, stdout);
	}
	batch->nrows = 0;
	tl_arena_reset(&batch->arena);
}

/* Decodes the whole file as one CopyData message; 0 or 1. */
static int feed_file(const char *path, tdb_copy_decoder *d, tl_pq_batch *batch, tl_error *err)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return fail("%s: %s", path, strerror(errno));
	tl_buf data;
	tl_buf_init(&data);
	char chunk[65536];
	for (size_t got; (got = fread(chunk, 1, sizeof(chunk), f)) > 0;)
		tl_buf_append(&data, chunk, got);
	int status = ferror(f) ? fail("%s: read error", path) : 0;
	fclose(f);
	if (status == 0 && tdb_copy_decoder_feed(d, (const char *)data.data, data.len, batch, err) < 0)
		status = fail("%s", err->message);
	tl_buf_free(&data);
	return status;
}

/* Runs the COPY, feeding the decoder message by message and printing full batches; 0 or 1. */
static int feed_copy(PGconn *conn, const char *copy_sql, const tl_pq_schema *schema, tdb_copy_decoder *d,
                     tl_pq_batch *batch, tl_buf *out, tl_error *err)
{
	int status = 0;
	PGresult *res = PQexec(conn, copy_sql);
	if (PQresultStatus(res) != PGRES_COPY_OUT)
		status = fail("%s: %s", copy_sql, PQresultErrorMessage(res));
	PQclear(res);
	for (char *msg; status == 0;) {
		int len = PQgetCopyData(conn, &msg, 0);
		if (len == -1)
			break;
		if (len < 0) {
			status = fail("reading the COPY stream: %s", PQerrorMessage(conn));
			break;
		}
		if (batch->nrows == batch->capacity)
			print_batch(schema, batch, out);
		if (tdb_copy_decoder_feed(d, msg, (size_t)len, batch, err) < 0)
			status = fail("%s", err->message);
		PQfreemem(msg);
	}
	if (status == 0) {
		res = PQgetResult(conn);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			status = fail("COPY failed: %s", PQresultErrorMessage(res));
		PQclear(res);
	}
	return status;
}

/* Runs the COPY (or reads the stream file) and prints its rows; 0 or 1. */
static int copy_rows(PGconn *conn, const char *copy_sql, const char *stream_file, const tdb_pg_column *cols, int n,
                     int64_t batch_rows)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *schema = lake_schema(cols, n, &err);
	if (schema == NULL)
		return fail("%s", err.message);
	tdb_copy_decoder *d = tdb_copy_decoder_new(cols, n, &err);
	if (d == NULL) {
		tl_pq_schema_free(schema);
		return fail("%s", err.message);
	}
	tl_pq_batch *batch = tl_pq_batch_new(schema, batch_rows);
	tl_buf out;
	tl_buf_init(&out);
	int status = stream_file ? feed_file(stream_file, d, batch, &err)
	                         : feed_copy(conn, copy_sql, schema, d, batch, &out, &err);
	if (status == 0 && tdb_copy_decoder_finish(d, &err) < 0)
		status = fail("%s", err.message);
	if (status == 0)
		print_batch(schema, batch, &out);
	tl_buf_free(&out);
	tl_pq_batch_free(batch);
	tdb_copy_decoder_free(d);
	tl_pq_schema_free(schema);
	return status;
}

static int run(PGconn *conn, const char *table, const char *stream_file, int64_t batch_rows)
{
	uint32_t oid = 0;
	if (table_oid(conn, table, &oid) != 0)
		return 1;
	tl_error err;
	tl_error_clear(&err);
	tdb_pg_column *cols;
	int n;
	if (tdb_pg_table_columns(conn, oid, &cols, &n, &err) < 0)
		return fail("%s", err.message);
	print_columns(cols, n);

	tl_buf sql;
	tl_buf_init(&sql);
	const char *dot = strchr(table, '.');
	tl_buf_append_str(&sql, "COPY (SELECT ");
	tdb_pg_copy_select_list(cols, n, &sql);
	tl_buf_append_str(&sql, " FROM ");
	char *schema = strndup(table, (size_t)(dot - table));
	append_quoted_ident(schema, &sql); /* pgtypes.c's, compiled in above */
	free(schema);
	tl_buf_append_byte(&sql, '.');
	append_quoted_ident(dot + 1, &sql);
	tl_buf_append_str(&sql, ") TO STDOUT (FORMAT binary)");
	tl_buf_append_byte(&sql, '\0');

	int status = copy_rows(conn, (const char *)sql.data, stream_file, cols, n, batch_rows);
	tl_buf_free(&sql);
	tdb_pg_columns_free(cols, n);
	return status;
}

int main(int argc, char **argv)
{
	const char *dsn = NULL, *table = NULL, *stream_file = NULL, *encoding = "UTF8";
	int64_t batch_rows = 1024;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dsn") == 0 && i + 1 < argc) {
			dsn = argv[++i];
		} else if (strcmp(argv[i], "--table") == 0 && i + 1 < argc) {
			table = argv[++i];
		} else if (strcmp(argv[i], "--client-encoding") == 0 && i + 1 < argc) {
			encoding = argv[++i];
		} else if (strcmp(argv[i], "--stream") == 0 && i + 1 < argc) {
			stream_file = argv[++i];
		} else if (strcmp(argv[i], "--batch-rows") == 0 && i + 1 < argc) {
			char *end;
			errno = 0;
			batch_rows = strtoll(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' || batch_rows < 1)
				return usage();
		} else {
			return usage();
		}
	}
	if (dsn == NULL || table == NULL)
		return usage();

	/* The DSN first, so the settings after it win over anything it says;
	 * the session settings are the daemon's (pgtypes.h). */
	const char *keys[] = {"dbname", "client_encoding", "options", "application_name", NULL};
	const char *values[] = {dsn, encoding, TDB_PG_SESSION_OPTIONS, "copycat", NULL};
	PGconn *conn = PQconnectdbParams(keys, values, 1);
	if (PQstatus(conn) != CONNECTION_OK) {
		int status = fail("connecting: %s", PQerrorMessage(conn));
		PQfinish(conn);
		return status;
	}
	int status = run(conn, table, stream_file, batch_rows);
	PQfinish(conn);
	if (fflush(stdout) != 0)
		status = fail("writing the output: %s", strerror(errno));
	return status;
}
