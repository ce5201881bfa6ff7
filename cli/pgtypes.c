/*
 * pgtypes.c: reading a table's columns from the catalogs and mapping their
 * types into the lake (SPEC §6, by pgmap.c's mapping).
 *
 * Domains are looked through to their base type, because the
 * binary COPY form of a domain is its base type's; their NOT NULL carries
 * over since no row can hold a null there.
 *
 * This file uses libpq directly rather than cli/pg.c so that test tools
 * can compile it on its own (tests/tools/copycat.c, with pgmap.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgtypes.h"

/*
 * One row per user column in attnum order, each with its base type: the
 * recursive part walks domains (a domain may be over another domain)
 * until a non-domain type, keeping the outermost typmod that is set and
 * OR-ing the domains' NOT NULL into the column's.
 */
static const char columns_sql[] =
	"WITH RECURSIVE col AS ("
	"  SELECT a.attnum, a.attname, a.attnotnull AS not_null, a.atttypid AS type_oid, a.atttypmod AS typmod"
	"  FROM pg_catalog.pg_attribute a"
	"  WHERE a.attrelid = $1::pg_catalog.oid AND a.attnum > 0 AND NOT a.attisdropped"
	"  UNION ALL"
	"  SELECT col.attnum, col.attname, col.not_null OR t.typnotnull, t.typbasetype,"
	"         CASE WHEN col.typmod = -1 THEN t.typtypmod ELSE col.typmod END"
	"  FROM col JOIN pg_catalog.pg_type t ON t.oid = col.type_oid"
	"  WHERE t.typtype = 'd'"
	") "
	"SELECT col.attname, col.not_null, col.type_oid, col.typmod, t.typtype = 'e' AS is_enum "
	"FROM col JOIN pg_catalog.pg_type t ON t.oid = col.type_oid "
	"WHERE t.typtype <> 'd' "
	"ORDER BY col.attnum";

static int check_client_encoding(PGconn *c, tl_error *err)
{
	const char *encoding = pg_encoding_to_char(PQclientEncoding(c));
	if (strcmp(encoding, "UTF8") == 0)
		return 0;
	return tl_error_set(err, TL_ERR_INVALID,
	                    "the connection's client_encoding is %s, but the lake stores text as UTF-8; "
	                    "connect with client_encoding=UTF8",
	                    encoding);
}

static void fill_column(PGresult *res, int row, tdb_pg_column *col)
{
	col->name = tl_strdup(PQgetvalue(res, row, 0));
	col->not_null = PQgetvalue(res, row, 1)[0] == 't';
	col->type_oid = (uint32_t)strtoul(PQgetvalue(res, row, 2), NULL, 10);
	col->typmod = (int32_t)strtol(PQgetvalue(res, row, 3), NULL, 10);
	bool is_enum = PQgetvalue(res, row, 4)[0] == 't';
	tdb_pg_map_type(col->type_oid, col->typmod, is_enum, &col->ice_type, &col->copy_as_text);
}

int tdb_pg_table_columns(PGconn *c, uint32_t table_oid, tdb_pg_column **out, int *n, tl_error *err)
{
	*out = NULL;
	*n = 0;
	if (check_client_encoding(c, err) < 0)
		return -1;
	char oid_text[16];
	snprintf(oid_text, sizeof(oid_text), "%u", table_oid);
	const char *params[1] = {oid_text};
	PGresult *res = PQexecParams(c, columns_sql, 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		tl_error_set(err, TL_ERR_IO, "reading the columns of the table with oid %u: %s", table_oid,
		             PQresultErrorMessage(res));
		PQclear(res);
		return -1;
	}
	int rows = PQntuples(res);
	if (rows == 0) {
		PQclear(res);
		return tl_error_set(err, TL_ERR_NOT_FOUND, "the table with oid %u does not exist or has no columns",
		                    table_oid);
	}
	tdb_pg_column *cols = tl_calloc((size_t)rows, sizeof(*cols));
	for (int i = 0; i < rows; i++)
		fill_column(res, i, &cols[i]);
	PQclear(res);
	*out = cols;
	*n = rows;
	return 0;
}

void tdb_pg_columns_free(tdb_pg_column *cols, int n)
{
	if (cols == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(cols[i].name);
	free(cols);
}

/*
 * Appends "ident" with embedded quotes doubled. cli/pg.c's
 * tdb_pg_quote_ident does the same, but this file must stand alone (see the
 * header comment).
 */
static void append_quoted_ident(const char *ident, tl_buf *out)
{
	tl_buf_append_byte(out, '"');
	for (const char *p = ident; *p; p++) {
		if (*p == '"')
			tl_buf_append_byte(out, '"');
		tl_buf_append_byte(out, (uint8_t)*p);
	}
	tl_buf_append_byte(out, '"');
}

void tdb_pg_copy_select_list(const tdb_pg_column *cols, int n, tl_buf *out)
{
	for (int i = 0; i < n; i++) {
		if (i > 0)
			tl_buf_append_str(out, ", ");
		append_quoted_ident(cols[i].name, out);
		if (cols[i].copy_as_text)
			tl_buf_append_str(out, "::pg_catalog.text");
	}
}
