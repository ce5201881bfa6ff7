/*
 * pgtext.c: values as COPY text fields in Postgres input syntax (pgtext.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pgtext.h"
#include "tierlake/calendar.h"
#include "tierlake/iceberg_value.h"
#include "tierlake/render.h"

void tdb_copy_text_escape(const void *bytes, size_t len, tl_buf *out)
{
	const char *s = bytes;
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		const char *esc = NULL;
		switch (s[i]) {
		case '\\': esc = "\\\\"; break;
		case '\t': esc = "\\t"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		default: continue;
		}
		tl_buf_append(out, s + start, i - start);
		tl_buf_append_str(out, esc);
		start = i + 1;
	}
	tl_buf_append(out, s + start, len - start);
}

/* ------------------------------------------------------------ dates and times */

/* "YYYY-MM-DD" of a day count, with the year Postgres reads (BC years are 1 - year, marked at the end). */
static void append_date(int64_t days, tl_buf *out, bool *bc)
{
	int64_t year;
	int month, day;
	tl_civil_from_days(days, &year, &month, &day);
	*bc = year <= 0;
	tl_buf_printf(out, "%04" PRId64 "-%02d-%02d", *bc ? 1 - year : year, month, day);
}

/* "HH:MM:SS[.fraction]" of a time of day in units of 10^-digits seconds. */
static void append_time_of_day(int64_t value, int64_t per_second, int digits, tl_buf *out)
{
	int64_t seconds = value / per_second, fraction = value % per_second;
	tl_buf_printf(out, "%02" PRId64 ":%02" PRId64 ":%02" PRId64, seconds / 3600, seconds / 60 % 60, seconds % 60);
	if (fraction != 0)
		tl_buf_printf(out, ".%0*" PRId64, digits, fraction);
}

static int64_t units_per_second(tl_pq_time_unit unit, int *digits)
{
	switch (unit) {
	case TL_PQ_MILLIS: *digits = 3; return 1000;
	case TL_PQ_MICROS: *digits = 6; return 1000000;
	default: *digits = 9; return 1000000000;
	}
}

static void append_timestamp(int64_t value, tl_pq_time_unit unit, bool utc, tl_buf *out)
{
	int digits;
	int64_t per_second = units_per_second(unit, &digits);
	int64_t per_day = per_second * 86400, in_day;
	int64_t days = tl_floor_div(value, per_day, &in_day);
	bool bc;
	append_date(days, out, &bc);
	tl_buf_append_byte(out, ' ');
	append_time_of_day(in_day, per_second, digits, out);
	if (utc)
		tl_buf_append_str(out, "+00");
	if (bc)
		tl_buf_append_str(out, " BC");
}

/* ------------------------------------------------------------ decimals and bytes */

/* A big-endian two's complement integer of up to 16 bytes. */
static int decimal_from_bytes(const tl_bytes *b, __int128 *out, tl_error *err)
{
	if (b->len > 16)
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "a decimal of %u bytes is wider than 38 digits", b->len);
	__int128 v = (b->len > 0 && (b->ptr[0] & 0x80)) ? -1 : 0;
	for (uint32_t i = 0; i < b->len; i++)
		v = (__int128)(((unsigned __int128)v << 8) | b->ptr[i]);
	*out = v;
	return 0;
}

static void append_hex_bytea(const uint8_t *data, size_t len, tl_buf *out)
{
	static const char hex[] = "0123456789abcdef";
	tl_buf_append_str(out, "\\\\x"); /* COPY text unescapes \\x to the \x bytea input wants */
	for (size_t i = 0; i < len; i++) {
		tl_buf_append_byte(out, (uint8_t)hex[data[i] >> 4]);
		tl_buf_append_byte(out, (uint8_t)hex[data[i] & 15]);
	}
}

static void append_uuid(const uint8_t *b, tl_buf *out)
{
	tl_buf_printf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
	              b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void append_double(double v, tl_buf *out)
{
	if (isnan(v))
		tl_buf_append_str(out, "NaN");
	else if (isinf(v))
		tl_buf_append_str(out, v > 0 ? "Infinity" : "-Infinity");
	else
		tl_render_double(v, out);
}

/* ------------------------------------------------------------ Parquet values */

static int append_int64(const tl_pq_column *col, int64_t v, tl_buf *out)
{
	switch (col->logical) {
	case TL_PQ_LOGICAL_TIMESTAMP:
		append_timestamp(v, col->unit, col->utc_adjusted, out);
		return 0;
	case TL_PQ_LOGICAL_TIME: {
		int digits;
		int64_t per_second = units_per_second(col->unit, &digits);
		append_time_of_day(v, per_second, digits, out);
		return 0;
	}
	case TL_PQ_LOGICAL_DECIMAL:
		tl_ice_decimal_text(v, col->scale, out);
		return 0;
	case TL_PQ_LOGICAL_INT:
		if (!col->int_signed) {
			tl_buf_printf(out, "%" PRIu64, (uint64_t)v);
			return 0;
		}
		/* fall through */
	default:
		tl_buf_printf(out, "%" PRId64, v);
		return 0;
	}
}

static int append_int32(const tl_pq_column *col, int32_t v, tl_buf *out)
{
	bool bc;
	switch (col->logical) {
	case TL_PQ_LOGICAL_DATE:
		append_date(v, out, &bc);
		if (bc)
			tl_buf_append_str(out, " BC");
		return 0;
	case TL_PQ_LOGICAL_TIME:
		append_time_of_day(v, 1000, 3, out);
		return 0;
	case TL_PQ_LOGICAL_INT:
		if (!col->int_signed) {
			tl_buf_printf(out, "%" PRIu32, (uint32_t)v);
			return 0;
		}
		/* fall through */
	default:
		return append_int64(col, v, out);
	}
}

static int append_bytes(const tl_pq_column *col, const tl_bytes *b, const tdb_pg_column *target, tl_buf *out,
                        tl_error *err)
{
	if (col->logical == TL_PQ_LOGICAL_DECIMAL) {
		__int128 v = 0;
		if (decimal_from_bytes(b, &v, err) < 0)
			return -1;
		tl_ice_decimal_text(v, col->scale, out);
		return 0;
	}
	if (col->logical == TL_PQ_LOGICAL_UUID && b->len == 16) {
		append_uuid(b->ptr, out);
		return 0;
	}
	/* Bytes go to a bytea column as they are; any other column parses them as text (UTF-8, checked there). */
	if (target->type_oid == TDB_BYTEAOID)
		append_hex_bytea(b->ptr, b->len, out);
	else
		tdb_copy_text_escape(b->ptr, b->len, out);
	return 0;
}

int tdb_copy_text_from_parquet(const tl_pq_column *col, const tl_vector *vec, int64_t row,
                               const tdb_pg_column *target, tl_buf *out, tl_error *err)
{
	if (tl_vector_is_null(vec, row)) {
		tl_buf_append_str(out, TDB_COPY_TEXT_NULL);
		return 0;
	}
	switch (col->physical) {
	case TL_PQ_BOOLEAN:
		tl_buf_append_byte(out, vec->v.b[row] ? 't' : 'f');
		return 0;
	case TL_PQ_INT32:
		return append_int32(col, vec->v.i32[row], out);
	case TL_PQ_INT64:
		return append_int64(col, vec->v.i64[row], out);
	case TL_PQ_INT96: /* surfaced as UTC nanoseconds */
		append_timestamp(vec->v.i64[row], TL_PQ_NANOS, true, out);
		return 0;
	case TL_PQ_FLOAT:
		if (isfinite(vec->v.f32[row]))
			tl_render_float(vec->v.f32[row], out);
		else
			append_double(vec->v.f32[row], out);
		return 0;
	case TL_PQ_DOUBLE:
		append_double(vec->v.f64[row], out);
		return 0;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		return append_bytes(col, &vec->v.bytes[row], target, out, err);
	}
	return tl_error_set(err, TL_ERR_UNSUPPORTED, "Parquet physical type %d", (int)col->physical);
}

/* ------------------------------------------------------------ JSON values */

static int base64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Standard or URL-safe base64, padding optional, into bytea hex. */
static int append_base64_as_bytea(const char *s, size_t len, tl_buf *out, tl_error *err)
{
	tl_buf bytes;
	tl_buf_init(&bytes);
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '=')
			break;
		int v = base64_value((unsigned char)s[i]);
		if (v < 0) {
			tl_buf_free(&bytes);
			return tl_error_set(err, TL_ERR_INVALID,
			                    "is neither \\x hex nor base64 (character %zu); give bytea as \"\\\\x0102\" or base64",
			                    i + 1);
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			tl_buf_append_byte(&bytes, (uint8_t)(acc >> bits));
		}
	}
	append_hex_bytea(bytes.data, bytes.len, out);
	tl_buf_free(&bytes);
	return 0;
}

static bool is_json_type(const tdb_pg_column *c)
{
	return c->type_oid == TDB_JSONOID || c->type_oid == TDB_JSONBOID;
}

int tdb_copy_text_from_json(const tdb_json_member *value, const tdb_pg_column *target, tl_buf *out, tl_error *err)
{
	if (value == NULL || value->kind == TDB_JSON_NULL) {
		tl_buf_append_str(out, TDB_COPY_TEXT_NULL);
		return 0;
	}
	switch (value->kind) {
	case TDB_JSON_STRING:
		if (target->type_oid == TDB_BYTEAOID && !(value->len >= 2 && value->text[0] == '\\' && value->text[1] == 'x'))
			return append_base64_as_bytea(value->text, value->len, out, err);
		tdb_copy_text_escape(value->text, value->len, out);
		return 0;
	case TDB_JSON_TRUE:
	case TDB_JSON_FALSE:
		if (target->type_oid == TDB_BOOLOID)
			tl_buf_append_byte(out, value->kind == TDB_JSON_TRUE ? 't' : 'f');
		else
			tl_buf_append_str(out, value->kind == TDB_JSON_TRUE ? "true" : "false");
		return 0;
	case TDB_JSON_NUMBER:
		tdb_copy_text_escape(value->text, value->len, out); /* as written: Postgres keeps it or refuses it */
		return 0;
	default:
		if (!is_json_type(target))
			return tl_error_set(err, TL_ERR_INVALID, "is a JSON %s, which only a json or jsonb column takes",
			                    value->text[0] == '{' ? "object" : "array");
		tdb_copy_text_escape(value->text, value->len, out);
		return 0;
	}
}
