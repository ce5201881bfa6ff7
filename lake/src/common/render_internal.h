/*
 * render_internal.h: what render.c (values to JSON) and render_parse.c
 * (JSON to values) share: how a column's values look, and small helpers.
 */
#ifndef TIERLAKE_RENDER_INTERNAL_H
#define TIERLAKE_RENDER_INTERNAL_H

#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/parquet.h"

/* How a column's values look, derived once from physical + logical type. */
typedef enum value_kind {
	KIND_BOOLEAN,
	KIND_INT32,
	KIND_UINT32,
	KIND_INT64,
	KIND_UINT64,
	KIND_FLOAT,
	KIND_DOUBLE,
	KIND_DECIMAL32,
	KIND_DECIMAL64,
	KIND_DECIMAL_BYTES,
	KIND_STRING,
	KIND_BINARY,
	KIND_DATE,
	KIND_TIMESTAMP,
	KIND_TIME32,
	KIND_TIME64,
	KIND_UUID
} value_kind;

value_kind tl_value_kind_of(const tl_pq_column *col);

/* tl_buf_append_byte without a call when there is room: rendering appends
 * many single bytes (quotes, commas, separators). */
static inline void put_byte(tl_buf *out, uint8_t c)
{
	if (out->len < out->cap)
		out->data[out->len++] = c;
	else
		tl_buf_append_byte(out, c);
}

static inline uint64_t magnitude(int64_t v)
{
	return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

static inline int64_t units_per_second(tl_pq_time_unit unit)
{
	return unit == TL_PQ_MILLIS ? 1000 : unit == TL_PQ_MICROS ? 1000000 : 1000000000;
}

#endif
