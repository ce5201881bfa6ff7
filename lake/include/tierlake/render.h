/*
 * render.h: column values as JSON text, and JSON back into column values.
 *
 * This is the one place that decides how a Parquet (and later, lake table)
 * value looks to a person or a script: `tierdb parquet cat`, the schema
 * statistics, and every later command that prints rows use it, and the
 * parsers accept the same text back so test data and `ingest --jsonl`
 * round-trip exactly. The rules:
 *
 *   null                      null
 *   BOOLEAN                   true / false
 *   INT32, INT64 (and INT)    JSON integers; unsigned INT types as unsigned
 *   FLOAT, DOUBLE             the shortest digits that read back to the same
 *                             value, laid out as JSON.stringify does (1e+21,
 *                             100, 0.000001, 1e-7); "NaN", "Infinity",
 *                             "-Infinity" as strings; negative zero as -0.0
 *   DECIMAL                   a string with exactly `scale` digits after the
 *                             point ("-0.05"); no point when scale is 0
 *   STRING, JSON, ENUM        a string (invalid UTF-8 becomes U+FFFD)
 *   other byte arrays         standard base64 with padding
 *   DATE                      "YYYY-MM-DD" (years outside 0000..9999 signed,
 *                             ISO 8601 expanded: "-0044-03-15", "+10000-01-01")
 *   TIMESTAMP                 "YYYY-MM-DDTHH:MM:SS.ffffff", 9 digits for
 *                             nanoseconds, a trailing Z when UTC-adjusted
 *   TIME                      "HH:MM:SS.ffffff", 9 digits for nanoseconds
 *   UUID                      lowercase 8-4-4-4-12 hex
 */
#ifndef TIERLAKE_RENDER_H
#define TIERLAKE_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/parquet.h"

/* Appends the JSON text of vec's value at `row`, a value of column col. */
void tl_render_value(const tl_pq_column *col, const tl_vector *vec, int64_t row, tl_buf *out);

/*
 * Appends one row of batch as a compact JSON object. Batch column i is
 * schema column columns[i] (its name is the key), or schema column i when
 * columns is NULL; keys therefore follow the batch's column order.
 */
void tl_render_row(const tl_pq_schema *schema, const int *columns, const tl_pq_batch *batch, int64_t row,
                   tl_buf *out);

/* Appends a column-chunk statistic (min or max) of column col, rendered like a value. */
void tl_render_stat(const tl_pq_column *col, const union tl_pq_stat_value *value, tl_buf *out);

/* Appends bytes as a quoted JSON string (RFC 8259 escapes; invalid UTF-8 -> U+FFFD). */
void tl_render_json_string(const void *bytes, size_t len, tl_buf *out);

/* The shortest text that strtod/strtof reads back as the same finite value. */
void tl_render_double(double value, tl_buf *out);
void tl_render_float(float value, tl_buf *out);

#endif
