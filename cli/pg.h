/*
 * pg.h: how the `tierdb` command talks to Postgres.
 *
 * Every command that connects goes through tdb_pg_connect, so the choice of
 * connection source (SPEC §8) and the wording of connection errors are the
 * same everywhere. Statements go through tdb_pg_exec and tdb_pg_query,
 * which turn a failed statement into a tl_error prefixed with the step that
 * ran it ("reading the cut-line of public.events: ERROR: ..."), so callers
 * propagate errors like any lake-library failure.
 *
 * SQL is never built from values: values travel as text parameters, and
 * identifiers are appended with tdb_pg_quote_ident (always quoted).
 */
#ifndef TIERDB_PG_H
#define TIERDB_PG_H

#include <libpq-fe.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"

/*
 * Connects per SPEC §8: `dsn` (the --dsn option, NULL when absent), else
 * TIERDB_PG_URL (postgres:// or jdbc:postgresql://host:port/db?user=..&password=..
 * URLs; either source may be any libpq conninfo or a JDBC URL), else libpq's
 * PG* environment; TIERDB_PG_USER / TIERDB_PG_PASSWORD give the user and
 * password unless the source names them; application_name "tierdb" and
 * client_encoding UTF8 (the lake holds UTF-8). NULL with err set; the
 * message names the source used and libpq's reason.
 */
PGconn *tdb_pg_connect(const char *dsn, tl_error *err);

/*
 * A libpq connection URI for a JDBC URL (jdbc:postgresql://host:port/db?...).
 * Query parameters libpq knows are kept, JDBC's ssl=true becomes
 * sslmode=require (unless sslmode is given) and the rest, which only the
 * JDBC driver understands (ApplicationName, loggerLevel, ...), are dropped.
 * NULL with err set if `url` is not a jdbc:postgresql: URL. Free with free().
 */
char *tdb_pg_jdbc_to_uri(const char *url, tl_error *err);

/*
 * A statement without rows (0) / with rows (the result, PQclear it); `what`
 * names the step in the error. params are text and may be NULL (SQL NULL).
 */
int tdb_pg_exec(PGconn *c, const char *what, const char *sql, int nparams, const char *const *params,
                tl_error *err);
PGresult *tdb_pg_query(PGconn *c, const char *what, const char *sql, int nparams, const char *const *params,
                       tl_error *err);

/*
 * The SQLSTATE of the statement that last failed in tdb_pg_exec or
 * tdb_pg_query ("" if the server sent none): "55P03" is a lock wait that
 * ran past lock_timeout.
 */
const char *tdb_pg_last_sqlstate(void);

/* Appends "ident" quoted as an SQL identifier (always quoted). */
void tdb_pg_quote_ident(const char *ident, tl_buf *out);
/*
 * Appends 'text' quoted as an SQL string literal (standard_conforming_strings,
 * the default), for the few statements that take no parameters (COPY).
 */
void tdb_pg_quote_literal(const char *text, tl_buf *out);
/* Appends "schema"."table". */
void tdb_pg_quote_qualified(const char *schema, const char *table, tl_buf *out);

#endif
