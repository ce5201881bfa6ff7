/*
 * iceberg_value.h: one Iceberg primitive value, and its single-value binary
 * form (the Iceberg spec's appendix "Binary single-value serialization"),
 * which manifests use for lower and upper bounds.
 *
 * A value does not own its bytes: strings, binaries, fixed, uuids point at
 * the caller's memory (for example the manifest being read).
 */
#ifndef TIERLAKE_ICEBERG_VALUE_H
#define TIERLAKE_ICEBERG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_schema.h"

/* Decimal unscaled values need up to 127 bits (precision 38). */
__extension__ typedef __int128 tl_int128;

typedef struct tl_ice_value {
	bool is_null;
	union {
		bool b;           /* BOOLEAN */
		int32_t i32;      /* INT, DATE */
		int64_t i64;      /* LONG, TIME, TIMESTAMP, TIMESTAMPTZ */
		float f32;        /* FLOAT */
		double f64;       /* DOUBLE */
		tl_int128 dec;    /* DECIMAL: unscaled; the scale is the type's */
	} v;
	const uint8_t *ptr;   /* STRING (UTF-8), BINARY, FIXED, UUID (16 bytes, big-endian) */
	size_t len;
} tl_ice_value;

static inline tl_ice_value tl_ice_null(void)
{
	tl_ice_value v = {0};
	v.is_null = true;
	return v;
}

/* Appends an unscaled decimal as text with `scale` digits after the point ("-0.05"; no point when scale is 0). */
void tl_ice_decimal_text(tl_int128 unscaled, int scale, tl_buf *out);

/* Appends the single-value binary form of a non-null value of `type` to out. */
int tl_ice_value_serialize(const tl_ice_type *type, const tl_ice_value *value,
                           tl_buf *out, tl_error *err);

/*
 * Reads a single-value binary form. Lengths are checked against the type
 * (TL_ERR_CORRUPT); as Java Iceberg does, a long or double bound written
 * before a type promotion (4 bytes) is widened. Bytes-like values point
 * into `data`.
 */
int tl_ice_value_deserialize(const tl_ice_type *type, const uint8_t *data, size_t len,
                             tl_ice_value *out, tl_error *err);

/* Equal values of the same type (NaN equals NaN bit-for-bit). */
bool tl_ice_value_equal(const tl_ice_type *type, const tl_ice_value *a, const tl_ice_value *b);

/*
 * Java Iceberg's human string of a value, used in partition paths:
 * "null", "true", "42", "14.20", "2017-11-16", "22:31:08",
 * "2017-11-16T22:31:08" (timestamptz ends in "Z"; LocalDateTime rules:
 * zero seconds are dropped, fractions print as 3, 6 digits), uuids in
 * lowercase 8-4-4-4-12, binary and fixed as base64.
 */
void tl_ice_value_human(const tl_ice_type *type, const tl_ice_value *value, tl_buf *out);

/*
 * Parses the textual form of a value (the inverse of tl_ice_value_human,
 * plus binary and fixed as hex, and timestamps with 0..6 fraction digits,
 * with or without a trailing "Z" or "+00:00"). Bytes-like values are copied
 * into `arena`. For tools and tests; "null" is not special here.
 */
int tl_ice_value_parse(const tl_ice_type *type, const char *text, tl_arena *arena,
                       tl_ice_value *out, tl_error *err);

/*
 * Parses the spec's JSON single-value form (as "initial-default" holds
 * it): a JSON boolean, an integer for int and long, a number for float and
 * double, and a string for the other types (decimals "1.25", dates,
 * times, timestamps with "+00:00" for timestamptz, uuids, binary and
 * fixed as hex). Anything else is TL_ERR_INVALID. Bytes go to `arena`.
 */
int tl_ice_value_from_json(const tl_ice_type *type, const char *json, tl_arena *arena, tl_ice_value *out,
                           tl_error *err);

#endif
