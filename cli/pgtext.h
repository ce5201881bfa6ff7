/*
 * pgtext.h: values as fields of Postgres COPY text format, in the input
 * syntax of the column they go to (ingest stages rows this way, so that
 * Postgres itself parses every value and checks every constraint).
 *
 * Two sources: a Parquet column vector (any file a writer made: pyarrow's,
 * Spark's, ours) and a JSON value from a JSONL line. The connection that
 * reads the text must run with TDB_PG_SESSION_OPTIONS (DateStyle ISO,
 * TimeZone UTC): timestamps that are not UTC-adjusted are written without a
 * zone and mean UTC wall-clock time, as the lake means them.
 */
#ifndef TIERDB_PGTEXT_H
#define TIERDB_PGTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "jsonl.h"
#include "pgmap.h"
#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/parquet.h"

/* Appends bytes escaped for COPY text format (backslash, tab, newline, carriage return). */
void tdb_copy_text_escape(const void *bytes, size_t len, tl_buf *out);

/* COPY text's NULL. */
#define TDB_COPY_TEXT_NULL "\\N"

/*
 * Appends the value of Parquet column `col` at `row` of `vec` as a COPY
 * text field for a Postgres column `target` (a null as \N). Byte arrays
 * without a string logical type become bytea hex when the target is bytea,
 * text otherwise. -1 with err when the value cannot be written in Postgres
 * syntax (a decimal wider than 16 bytes).
 */
int tdb_copy_text_from_parquet(const tl_pq_column *col, const tl_vector *vec, int64_t row,
                               const tdb_pg_column *target, tl_buf *out, tl_error *err);

/*
 * Appends a JSON member's value (NULL: the key was absent) as a COPY text
 * field for column `target`: null as \N; strings as their text (for bytea,
 * "\x..." hex is taken as is and anything else is decoded as base64; for
 * json and jsonb, a string is the JSON text); numbers exactly as written
 * and booleans (t/f for boolean columns) as their JSON text; objects and
 * arrays only for json and jsonb columns. -1 with err saying why the value
 * does not fit the column.
 */
int tdb_copy_text_from_json(const tdb_json_member *value, const tdb_pg_column *target, tl_buf *out, tl_error *err);

#endif
