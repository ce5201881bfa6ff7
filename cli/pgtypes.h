/*
 * pgtypes.h: how the columns of a Postgres table map into the lake.
 *
 * SPEC §6 fixes the mapping from Postgres types to Iceberg types. This
 * module reads a table's columns from the system catalogs (domains resolved
 * to their base type, enums recognised), gives each its Iceberg type, and
 * writes the select list that streams them out with binary COPY: types the
 * lake stores as their text form are cast to text on the server, so the
 * decoder (pgcopy.h) only ever sees binary forms it knows.
 *
 * Strings arrive in the connection's client encoding, and the lake holds
 * UTF-8, so the connection must use client_encoding UTF8;
 * tdb_pg_table_columns refuses any other. The text forms of the types kept
 * as text depend on session settings (DateStyle, IntervalStyle, TimeZone,
 * extra_float_digits, bytea_output), so a connection that streams rows to
 * the lake pins them to TDB_PG_SESSION_OPTIONS: the same value then always
 * gives the same text, which Postgres reads back exactly whatever the
 * reader's settings (money aside: its text follows lc_monetary).
 */
#ifndef TIERDB_PGTYPES_H
#define TIERDB_PGTYPES_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_schema.h"

#include "pgmap.h"

/*
 * libpq's "options" connection parameter for connections that stream rows to
 * the lake: "-c name=value" items separated by single spaces (the daemon
 * also applies them one by one with set_config).
 */
#define TDB_PG_SESSION_OPTIONS                                                                                         \
	"-c DateStyle=ISO -c IntervalStyle=postgres -c TimeZone=UTC -c extra_float_digits=3 -c bytea_output=hex"


/*
 * The user columns of a table (by oid), in attnum order, mapped: every
 * column that is not dropped, generated ones included (they are data).
 * *out is an array of *n columns for tdb_pg_columns_free. -1 with err set
 * when the query fails, the table has no columns (or does not exist), or
 * the connection's client_encoding is not UTF8.
 */
int tdb_pg_table_columns(PGconn *c, uint32_t table_oid, tdb_pg_column **out, int *n, tl_error *err);
void tdb_pg_columns_free(tdb_pg_column *cols, int n);

/* Appends the select list for COPY ( SELECT <list> FROM ... ) TO STDOUT (FORMAT binary). */
void tdb_pg_copy_select_list(const tdb_pg_column *cols, int n, tl_buf *out);

#endif
