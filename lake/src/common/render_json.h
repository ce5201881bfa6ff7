/*
 * render_json.h: parsing JSON values into Parquet column vectors, the
 * inverse of render.h's rendering, on jansson values. Internal to the lake
 * library (and its tests and tools): jansson types stay out of the public
 * headers.
 */
#ifndef TIERLAKE_RENDER_JSON_H
#define TIERLAKE_RENDER_JSON_H

#include <jansson.h>

#include "tierlake/render.h"

/*
 * Parses one JSON document (such as a line of a JSON Lines file) with
 * jansson. jansson cannot hold integers outside the int64 range, so any
 * such integer (a UINT64 above INT64_MAX, a wide decimal given as a
 * number) arrives as a string of its digits instead; the value parsers
 * below accept digit strings for integer and decimal columns for that
 * reason. Strings may contain \u0000. Returns NULL with err set on
 * malformed JSON.
 */
json_t *tl_render_load_json(const char *text, size_t len, tl_error *err);

/*
 * Stores the JSON value json into vec at `row` as a value of column col:
 * exactly the text tl_render_value produces, plus plain JSON numbers for
 * FLOAT, DOUBLE and DECIMAL columns. Byte values are copied into arena. A
 * JSON null clears the row's validity (an error for a required column).
 * Returns 0, or -1 with err set (TL_ERR_INVALID) saying what is wrong with
 * the value; the caller adds where it came from.
 */
int tl_render_parse_value(const tl_pq_column *col, const json_t *json, tl_vector *vec, int64_t row,
                          tl_arena *arena, tl_error *err);

/*
 * Stores a JSON object keyed by column name into row `row` of batch, whose
 * columns are the schema's in order; byte values go to batch->arena. A
 * missing key is a null; a key naming no column is an error. Errors name
 * the column.
 */
int tl_render_parse_row(const tl_pq_schema *schema, const json_t *object, tl_pq_batch *batch, int64_t row,
                        tl_error *err);

#endif
