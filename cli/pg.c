/*
 * pg.c: connecting to Postgres and running statements for the `tierdb`
 * command (see pg.h).
 *
 * The connection source follows SPEC §8: --dsn, else TIERDB_PG_URL, else
 * the PG* environment libpq reads by itself. TIERDB_PG_URL may be a JDBC
 * URL because the same variable configures the Spark side; libpq cannot
 * parse those, so they are rewritten into libpq URIs here.
 * TIERDB_PG_USER and TIERDB_PG_PASSWORD give the user and password beside
 * any source (the Spark side passes them as JDBC properties).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

#define JDBC_PREFIX "jdbc:postgresql:"

/* ------------------------------------------------------------ JDBC URLs */

/* True if libpq accepts `name` (length len) as a connection keyword. */
static bool libpq_knows(const char *name, size_t len)
{
	PQconninfoOption *defaults = PQconndefaults();
	bool known = false;
	for (PQconninfoOption *o = defaults; o != NULL && o->keyword != NULL; o++)
		if (strlen(o->keyword) == len && strncmp(o->keyword, name, len) == 0) {
			known = true;
			break;
		}
	PQconninfoFree(defaults);
	return known;
}

static bool param_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncmp(name, want, len) == 0;
}

/* Appends one JDBC query parameter "name=value" to out in libpq's terms. */
static void append_jdbc_param(const char *param, size_t len, bool has_sslmode, tl_buf *out)
{
	const char *eq = memchr(param, '=', len);
	size_t name_len = eq ? (size_t)(eq - param) : len;
	const char *value = eq ? eq + 1 : "";
	size_t value_len = eq ? len - name_len - 1 : 0;
	const char *keyword = NULL;
	if (param_is(param, name_len, "ssl")) {
		/* JDBC's ssl=true means "encrypt"; libpq says it with sslmode. */
		if (has_sslmode || !(value_len == 4 && strncmp(value, "true", 4) == 0))
			return;
		tl_buf_append_str(out, out->len > 0 ? "&" : "?");
		tl_buf_append_str(out, "sslmode=require");
		return;
	}
	if (param_is(param, name_len, "connectTimeout"))
		keyword = "connect_timeout";
	else if (libpq_knows(param, name_len) && !param_is(param, name_len, "application_name"))
		keyword = "";
	if (keyword == NULL)
		return; /* only the JDBC driver knows it (ApplicationName, loggerLevel, ...) */
	tl_buf_append_str(out, out->len > 0 ? "&" : "?");
	if (keyword[0] != '\0')
		tl_buf_append_str(out, keyword);
	else
		tl_buf_append(out, param, name_len);
	tl_buf_append_byte(out, '=');
	tl_buf_append(out, value, value_len);
}

char *tdb_pg_jdbc_to_uri(const char *url, tl_error *err)
{
	if (strncmp(url, JDBC_PREFIX, strlen(JDBC_PREFIX)) != 0) {
		tl_error_set(err, TL_ERR_INVALID, "'%s' is not a jdbc:postgresql: URL", url);
		return NULL;
	}
	const char *rest = url + strlen(JDBC_PREFIX);
	const char *query = strchr(rest, '?');
	size_t base_len = query ? (size_t)(query - rest) : strlen(rest);

	tl_buf out;
	tl_buf_init(&out);
	/* jdbc:postgresql://host/db keeps its authority; jdbc:postgresql:db means the local default host. */
	tl_buf_append_str(&out, "postgresql:");
	if (strncmp(rest, "//", 2) != 0)
		tl_buf_append_str(&out, rest[0] == '/' ? "//" : "///");
	tl_buf_append(&out, rest, base_len);

	tl_buf params;
	tl_buf_init(&params);
	if (query != NULL) {
		bool has_sslmode = strstr(query, "?sslmode=") != NULL || strstr(query, "&sslmode=") != NULL;
		for (const char *p = query + 1; *p != '\0';) {
			size_t len = strcspn(p, "&");
			if (len > 0)
				append_jdbc_param(p, len, has_sslmode, &params);
			p += len;
			if (*p == '&')
				p++;
		}
	}
	tl_buf_append(&out, params.data, params.len);
	tl_buf_free(&params);
	tl_buf_append_byte(&out, '\0');
	return (char *)out.data;
}

/* ------------------------------------------------------------ connecting */

/* libpq's message without its trailing newline. */
static void set_pq_error(tl_error *err, const char *prefix, const char *message)
{
	size_t len = strlen(message);
	while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == ' '))
		len--;
	tl_error_set(err, TL_ERR_IO, "%s%.*s", prefix, (int)len, message);
}

PGconn *tdb_pg_connect(const char *dsn, tl_error *err)
{
	const char *source;
	const char *conninfo = NULL;
	char *converted = NULL;
	const char *url = getenv("TIERDB_PG_URL");
	if (dsn != NULL || (url != NULL && url[0] != '\0')) {
		source = dsn != NULL ? "--dsn" : "TIERDB_PG_URL";
		conninfo = dsn != NULL ? dsn : url;
		/* The JDBC form is accepted wherever a URL is, since Spark users have one at hand. */
		if (strncmp(conninfo, "jdbc:", 5) == 0) {
			converted = tdb_pg_jdbc_to_uri(conninfo, err);
			if (converted == NULL) {
				tl_error_prefix(err, "%s: ", source);
				return NULL;
			}
			conninfo = converted;
		}
	} else {
		source = "the PG* environment (PGHOST, PGPORT, PGDATABASE, PGUSER, ...)";
	}

	/*
	 * TIERDB_PG_USER and TIERDB_PG_PASSWORD precede dbname, so a user= or
	 * password= inside the URL wins, as the JDBC driver lets URL parameters
	 * win over its properties (libpq: the last non-empty value counts).
	 * The others follow dbname so that they override the same settings
	 * inside a URL: the lake holds UTF-8, so text must arrive as UTF-8
	 * (pgtypes.h).
	 */
	const char *user = getenv("TIERDB_PG_USER"), *password = getenv("TIERDB_PG_PASSWORD");
	const char *keywords[] = {"user", "password", "dbname", "application_name", "client_encoding", NULL};
	const char *values[] = {user ? user : "", password ? password : "", conninfo ? conninfo : "", "tierdb", "UTF8",
	                        NULL};
	PGconn *c = PQconnectdbParams(keywords, values, 1);
	free(converted);
	if (c == NULL) {
		tl_error_set(err, TL_ERR_NOMEM, "cannot connect to Postgres using %s: out of memory", source);
		return NULL;
	}
	if (PQstatus(c) != CONNECTION_OK) {
		char prefix[512];
		const char *host = PQhost(c), *port = PQport(c), *db = PQdb(c);
		snprintf(prefix, sizeof(prefix), "cannot connect to Postgres using %s (host %s, port %s, database %s): ",
		         source, host && host[0] ? host : "default", port && port[0] ? port : "default",
		         db && db[0] ? db : "default");
		set_pq_error(err, prefix, PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	/*
	 * The command works on the heap as it is: with transparent reads (the
	 * extension preloaded) a query on a tiered table would read the lake too.
	 */
	PGresult *res = PQexec(c, "SELECT pg_catalog.set_config('tierdb.transparent_reads', 'off', false)");
	bool ok = PQresultStatus(res) == PGRES_TUPLES_OK;
	if (!ok)
		set_pq_error(err, "cannot turn off transparent reads for the tierdb command's session: ",
		             PQresultErrorMessage(res));
	PQclear(res);
	if (!ok) {
		PQfinish(c);
		return NULL;
	}
	return c;
}

/* ------------------------------------------------------------ statements */

/* The SQLSTATE of the last failed statement (tdb_pg_last_sqlstate). */
static _Thread_local char last_sqlstate[6]; /* per thread: Stream Load runs statements on its own threads */

const char *tdb_pg_last_sqlstate(void)
{
	return last_sqlstate;
}

static PGresult *run(PGconn *c, const char *what, const char *sql, int nparams, const char *const *params,
                     ExecStatusType want, tl_error *err)
{
	last_sqlstate[0] = '\0';
	PGresult *res = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (status == want || (want == PGRES_COMMAND_OK && status == PGRES_TUPLES_OK))
		return res;
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	snprintf(last_sqlstate, sizeof(last_sqlstate), "%s", state ? state : "");
	char prefix[256];
	snprintf(prefix, sizeof(prefix), "%s: ", what);
	if (res != NULL && PQresultErrorMessage(res)[0] != '\0')
		set_pq_error(err, prefix, PQresultErrorMessage(res));
	else if (res != NULL)
		tl_error_set(err, TL_ERR_IO, "%sunexpected result %s", prefix, PQresStatus(status));
	else
		set_pq_error(err, prefix, PQerrorMessage(c));
	PQclear(res);
	return NULL;
}

int tdb_pg_exec(PGconn *c, const char *what, const char *sql, int nparams, const char *const *params,
                tl_error *err)
{
	PGresult *res = run(c, what, sql, nparams, params, PGRES_COMMAND_OK, err);
	if (res == NULL)
		return -1;
	PQclear(res);
	return 0;
}

PGresult *tdb_pg_query(PGconn *c, const char *what, const char *sql, int nparams, const char *const *params,
                       tl_error *err)
{
	return run(c, what, sql, nparams, params, PGRES_TUPLES_OK, err);
}

/* ------------------------------------------------------------ identifiers */

void tdb_pg_quote_ident(const char *ident, tl_buf *out)
{
	tl_buf_append_byte(out, '"');
	for (const char *p = ident; *p != '\0'; p++) {
		if (*p == '"')
			tl_buf_append_byte(out, '"');
		tl_buf_append_byte(out, (uint8_t)*p);
	}
	tl_buf_append_byte(out, '"');
}

void tdb_pg_quote_literal(const char *text, tl_buf *out)
{
	tl_buf_append_byte(out, '\'');
	for (const char *p = text; *p != '\0'; p++) {
		if (*p == '\'')
			tl_buf_append_byte(out, '\'');
		tl_buf_append_byte(out, (uint8_t)*p);
	}
	tl_buf_append_byte(out, '\'');
}

void tdb_pg_quote_qualified(const char *schema, const char *table, tl_buf *out)
{
	tdb_pg_quote_ident(schema, out);
	tl_buf_append_byte(out, '.');
	tdb_pg_quote_ident(table, out);
}
