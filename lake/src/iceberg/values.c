/*
 * values.c: Iceberg primitive values: the spec's single-value binary form
 * (manifest bounds), Java Iceberg's human strings (partition paths), and
 * parsing of textual values for tools and tests.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tierlake/calendar.h"
#include "tierlake/iceberg_value.h"
#include "common/json_load.h"

#define MICROS_PER_SECOND 1000000LL
#define MICROS_PER_DAY (86400LL * MICROS_PER_SECOND)

/* ---- binary form ---- */

static void put_le(tl_buf *out, uint64_t v, int n)
{
	uint8_t *p = tl_buf_extend(out, (size_t)n);
	if (p == NULL)
		return; /* out is failed; tl_ice_value_serialize checks it */
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The minimal big-endian two's complement bytes of v (Java's BigInteger.toByteArray). */
static int int128_to_be(tl_int128 v, uint8_t out[16])
{
	uint8_t full[16];
	__extension__ unsigned __int128 u = (unsigned __int128)v;
	for (int i = 15; i >= 0; i--) {
		full[i] = (uint8_t)u;
		u >>= 8;
	}
	int start = 0;
	/* Drop leading bytes that only repeat the sign of the next one. */
	while (start < 15 && ((full[start] == 0x00 && !(full[start + 1] & 0x80)) ||
	                      (full[start] == 0xFF && (full[start + 1] & 0x80))))
		start++;
	int n = 16 - start;
	memcpy(out, full + start, (size_t)n);
	return n;
}

static tl_int128 int128_from_be(const uint8_t *p, size_t n)
{
	__extension__ unsigned __int128 u = (p[0] & 0x80) ? ~(unsigned __int128)0 : 0;
	for (size_t i = 0; i < n; i++)
		u = (u << 8) | p[i];
	return (tl_int128)u;
}

static int serialize_into(const tl_ice_type *type, const tl_ice_value *value, tl_buf *out, tl_error *err);

int tl_ice_value_serialize(const tl_ice_type *type, const tl_ice_value *value, tl_buf *out, tl_error *err)
{
	if (serialize_into(type, value, out, err) < 0)
		return -1;
	return tl_buf_check(out, err, "serializing a value");
}

static int serialize_into(const tl_ice_type *type, const tl_ice_value *value, tl_buf *out, tl_error *err)
{
	if (value->is_null)
		return tl_error_set(err, TL_ERR_INVALID, "a null value has no single-value binary form");
	uint32_t u32;
	uint64_t u64;
	switch (type->id) {
	case TL_ICE_BOOLEAN:
		tl_buf_append_byte(out, value->v.b ? 1 : 0);
		return 0;
	case TL_ICE_INT:
	case TL_ICE_DATE:
		put_le(out, (uint32_t)value->v.i32, 4);
		return 0;
	case TL_ICE_LONG:
	case TL_ICE_TIME:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		put_le(out, (uint64_t)value->v.i64, 8);
		return 0;
	case TL_ICE_FLOAT:
		memcpy(&u32, &value->v.f32, 4);
		put_le(out, u32, 4);
		return 0;
	case TL_ICE_DOUBLE:
		memcpy(&u64, &value->v.f64, 8);
		put_le(out, u64, 8);
		return 0;
	case TL_ICE_DECIMAL: {
		uint8_t be[16];
		int n = int128_to_be(value->v.dec, be);
		tl_buf_append(out, be, (size_t)n);
		return 0;
	}
	case TL_ICE_UUID:
		if (value->len != 16)
			return tl_error_set(err, TL_ERR_INVALID, "uuid value has %zu bytes, not 16", value->len);
		tl_buf_append(out, value->ptr, 16);
		return 0;
	case TL_ICE_FIXED:
		if (value->len != (size_t)type->length)
			return tl_error_set(err, TL_ERR_INVALID, "fixed[%d] value has %zu bytes", (int)type->length, value->len);
		/* fall through */
	case TL_ICE_STRING:
	case TL_ICE_BINARY:
		if (value->len)
			tl_buf_append(out, value->ptr, value->len);
		return 0;
	default:
		return tl_error_set(err, TL_ERR_INVALID, "nested types have no single-value binary form");
	}
}

static int bad_length(const tl_ice_type *type, size_t len, const char *expected, tl_error *err)
{
	tl_buf t;
	tl_buf_init(&t);
	tl_ice_type_text(type, &t);
	tl_buf_append_byte(&t, 0);
	tl_error_set(err, TL_ERR_CORRUPT, "single-value %s has %zu bytes; expected %s", (const char *)t.data, len, expected);
	tl_buf_free(&t);
	return -1;
}

int tl_ice_value_deserialize(const tl_ice_type *type, const uint8_t *data, size_t len,
                             tl_ice_value *out, tl_error *err)
{
	memset(out, 0, sizeof(*out));
	switch (type->id) {
	case TL_ICE_BOOLEAN:
		if (len != 1)
			return bad_length(type, len, "1", err);
		if (data[0] > 1)
			return tl_error_set(err, TL_ERR_CORRUPT, "single-value boolean is %u, not 0 or 1", data[0]);
		out->v.b = data[0] == 1;
		return 0;
	case TL_ICE_INT:
	case TL_ICE_DATE:
		if (len != 4)
			return bad_length(type, len, "4", err);
		out->v.i32 = (int32_t)(uint32_t)get_le(data, 4);
		return 0;
	case TL_ICE_LONG:
		/* An int bound written before the column was promoted to long. */
		if (len == 4) {
			out->v.i64 = (int32_t)(uint32_t)get_le(data, 4);
			return 0;
		}
		/* fall through */
	case TL_ICE_TIME:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		if (len != 8)
			return bad_length(type, len, type->id == TL_ICE_LONG ? "8 (or 4)" : "8", err);
		out->v.i64 = (int64_t)get_le(data, 8);
		return 0;
	case TL_ICE_FLOAT: {
		if (len != 4)
			return bad_length(type, len, "4", err);
		uint32_t u = (uint32_t)get_le(data, 4);
		memcpy(&out->v.f32, &u, 4);
		return 0;
	}
	case TL_ICE_DOUBLE: {
		if (len == 4) {  /* a float bound from before a promotion to double */
			uint32_t u = (uint32_t)get_le(data, 4);
			float f;
			memcpy(&f, &u, 4);
			out->v.f64 = f;
			return 0;
		}
		if (len != 8)
			return bad_length(type, len, "8 (or 4)", err);
		uint64_t u = get_le(data, 8);
		memcpy(&out->v.f64, &u, 8);
		return 0;
	}
	case TL_ICE_DECIMAL:
		if (len < 1 || len > 16)
			return bad_length(type, len, "1 to 16", err);
		out->v.dec = int128_from_be(data, len);
		return 0;
	case TL_ICE_UUID:
		if (len != 16)
			return bad_length(type, len, "16", err);
		break;
	case TL_ICE_FIXED:
		if (len != (size_t)type->length) {
			char expected[16];
			snprintf(expected, sizeof(expected), "%d", (int)type->length);
			return bad_length(type, len, expected, err);
		}
		break;
	case TL_ICE_STRING:
	case TL_ICE_BINARY:
		break;
	default:
		return tl_error_set(err, TL_ERR_CORRUPT, "nested types have no single-value binary form");
	}
	out->ptr = data;
	out->len = len;
	return 0;
}

bool tl_ice_value_equal(const tl_ice_type *type, const tl_ice_value *a, const tl_ice_value *b)
{
	if (a->is_null || b->is_null)
		return a->is_null == b->is_null;
	switch (type->id) {
	case TL_ICE_BOOLEAN:
		return a->v.b == b->v.b;
	case TL_ICE_INT:
	case TL_ICE_DATE:
		return a->v.i32 == b->v.i32;
	case TL_ICE_LONG:
	case TL_ICE_TIME:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		return a->v.i64 == b->v.i64;
	case TL_ICE_FLOAT:
		return memcmp(&a->v.f32, &b->v.f32, 4) == 0;
	case TL_ICE_DOUBLE:
		return memcmp(&a->v.f64, &b->v.f64, 8) == 0;
	case TL_ICE_DECIMAL:
		return a->v.dec == b->v.dec;
	default:
		return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
	}
}

/* ---- human strings ---- */

static void append_year(tl_buf *out, int64_t y)
{
	/* java.time: four digits, a sign when outside 0000..9999. */
	if (y > 9999)
		tl_buf_printf(out, "+%lld", (long long)y);
	else if (y < 0)
		tl_buf_printf(out, "-%04lld", (long long)-y);
	else
		tl_buf_printf(out, "%04lld", (long long)y);
}

static void append_date(tl_buf *out, int64_t days)
{
	int64_t y;
	int m, d;
	tl_civil_from_days(days, &y, &m, &d);
	append_year(out, y);
	tl_buf_printf(out, "-%02d-%02d", m, d);
}

/* java.time.LocalTime.toString: seconds only when nonzero, fractions in groups of 3. */
static void append_time(tl_buf *out, int64_t micros_of_day)
{
	int64_t secs = micros_of_day / MICROS_PER_SECOND;
	int64_t frac = micros_of_day % MICROS_PER_SECOND;
	tl_buf_printf(out, "%02d:%02d", (int)(secs / 3600), (int)(secs / 60 % 60));
	if (secs % 60 == 0 && frac == 0)
		return;
	tl_buf_printf(out, ":%02d", (int)(secs % 60));
	if (frac == 0)
		return;
	if (frac % 1000 == 0)
		tl_buf_printf(out, ".%03d", (int)(frac / 1000));
	else
		tl_buf_printf(out, ".%06d", (int)frac);
}

static void append_timestamp(tl_buf *out, int64_t micros)
{
	int64_t days = tl_floor_div(micros, MICROS_PER_DAY, NULL);
	append_date(out, days);
	tl_buf_append_byte(out, 'T');
	append_time(out, micros - days * MICROS_PER_DAY);
}

void tl_ice_decimal_text(tl_int128 unscaled, int scale, tl_buf *out)
{
	char digits[48];
	int n = 0;
	bool negative = unscaled < 0;
	__extension__ unsigned __int128 u = negative ? -(unsigned __int128)unscaled : (unsigned __int128)unscaled;
	do {
		digits[n++] = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u != 0);
	while (n <= scale)
		digits[n++] = '0';
	if (negative)
		tl_buf_append_byte(out, '-');
	for (int i = n - 1; i >= 0; i--) {
		tl_buf_append_byte(out, (uint8_t)digits[i]);
		if (i == scale && scale > 0)
			tl_buf_append_byte(out, '.');
	}
}

/* Java's Double.toString / Float.toString on the shortest round-trip digits. */
static void append_java_float(tl_buf *out, double v, bool is_float)
{
	if (isnan(v)) {
		tl_buf_append_str(out, "NaN");
		return;
	}
	if (isinf(v)) {
		tl_buf_append_str(out, v < 0 ? "-Infinity" : "Infinity");
		return;
	}
	if (v == 0) {
		tl_buf_append_str(out, signbit(v) ? "-0.0" : "0.0");
		return;
	}
	char buf[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
		if (is_float ? (float)strtod(buf, NULL) == (float)v : strtod(buf, NULL) == v)
			break;
	}
	/* buf is "-d.ddde+XX": split into sign, digits and exponent. */
	char *p = buf;
	bool negative = *p == '-';
	if (negative)
		p++;
	char digits[20];
	int nd = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	int exp = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (negative)
		tl_buf_append_byte(out, '-');
	if (exp >= -3 && exp < 7) {
		if (exp < 0) {
			tl_buf_append_str(out, "0.");
			for (int i = 0; i < -exp - 1; i++)
				tl_buf_append_byte(out, '0');
			tl_buf_append(out, digits, (size_t)nd);
		} else {
			for (int i = 0; i <= exp; i++)
				tl_buf_append_byte(out, (uint8_t)(i < nd ? digits[i] : '0'));
			tl_buf_append_byte(out, '.');
			if (nd > exp + 1)
				tl_buf_append(out, digits + exp + 1, (size_t)(nd - exp - 1));
			else
				tl_buf_append_byte(out, '0');
		}
		return;
	}
	tl_buf_append_byte(out, (uint8_t)digits[0]);
	tl_buf_append_byte(out, '.');
	if (nd > 1)
		tl_buf_append(out, digits + 1, (size_t)(nd - 1));
	else
		tl_buf_append_byte(out, '0');
	tl_buf_printf(out, "E%d", exp);
}

static void append_base64(tl_buf *out, const uint8_t *p, size_t n)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t chunk = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			chunk |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			chunk |= p[i + 2];
		tl_buf_append_byte(out, (uint8_t)alphabet[chunk >> 18]);
		tl_buf_append_byte(out, (uint8_t)alphabet[(chunk >> 12) & 63]);
		tl_buf_append_byte(out, i + 1 < n ? (uint8_t)alphabet[(chunk >> 6) & 63] : '=');
		tl_buf_append_byte(out, i + 2 < n ? (uint8_t)alphabet[chunk & 63] : '=');
	}
}

void tl_ice_value_human(const tl_ice_type *type, const tl_ice_value *value, tl_buf *out)
{
	if (value->is_null) {
		tl_buf_append_str(out, "null");
		return;
	}
	switch (type->id) {
	case TL_ICE_BOOLEAN:
		tl_buf_append_str(out, value->v.b ? "true" : "false");
		return;
	case TL_ICE_INT:
		tl_buf_printf(out, "%d", (int)value->v.i32);
		return;
	case TL_ICE_LONG:
		tl_buf_printf(out, "%lld", (long long)value->v.i64);
		return;
	case TL_ICE_FLOAT:
		append_java_float(out, value->v.f32, true);
		return;
	case TL_ICE_DOUBLE:
		append_java_float(out, value->v.f64, false);
		return;
	case TL_ICE_DECIMAL:
		tl_ice_decimal_text(value->v.dec, type->scale, out);
		return;
	case TL_ICE_DATE:
		append_date(out, value->v.i32);
		return;
	case TL_ICE_TIME:
		if (value->v.i64 < 0 || value->v.i64 >= MICROS_PER_DAY)
			tl_buf_printf(out, "%lld", (long long)value->v.i64);  /* out of range: show the number */
		else
			append_time(out, value->v.i64);
		return;
	case TL_ICE_TIMESTAMP:
		append_timestamp(out, value->v.i64);
		return;
	case TL_ICE_TIMESTAMPTZ:
		append_timestamp(out, value->v.i64);
		tl_buf_append_byte(out, 'Z');
		return;
	case TL_ICE_STRING:
		if (value->len)
			tl_buf_append(out, value->ptr, value->len);
		return;
	case TL_ICE_UUID: {
		static const char hex[] = "0123456789abcdef";
		for (size_t i = 0; i < value->len && i < 16; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10)
				tl_buf_append_byte(out, '-');
			tl_buf_append_byte(out, (uint8_t)hex[value->ptr[i] >> 4]);
			tl_buf_append_byte(out, (uint8_t)hex[value->ptr[i] & 15]);
		}
		return;
	}
	case TL_ICE_FIXED:
	case TL_ICE_BINARY:
		append_base64(out, value->ptr, value->len);
		return;
	default:
		tl_buf_append_str(out, "?");
		return;
	}
}

/* ---- parsing text ---- */

static int parse_digits(const char **p, int min, int max, int64_t *out)
{
	int n = 0;
	int64_t v = 0;
	while (**p >= '0' && **p <= '9' && n < max) {
		v = v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	*out = v;
	return n >= min ? 0 : -1;
}

static int parse_date_part(const char **p, int64_t *days)
{
	int64_t sign = 1, y, m, d;
	if (**p == '-' || **p == '+') {
		sign = **p == '-' ? -1 : 1;
		(*p)++;
	}
	if (parse_digits(p, 4, 9, &y) < 0 || *(*p)++ != '-' || parse_digits(p, 2, 2, &m) < 0 ||
	    *(*p)++ != '-' || parse_digits(p, 2, 2, &d) < 0 || m < 1 || m > 12 || d < 1 || d > 31)
		return -1;
	*days = tl_days_from_civil(sign * y, (int)m, (int)d);
	return 0;
}

static int parse_time_part(const char **p, int64_t *micros)
{
	int64_t h, mi, s = 0, frac = 0;
	if (parse_digits(p, 2, 2, &h) < 0 || *(*p)++ != ':' || parse_digits(p, 2, 2, &mi) < 0 || h > 23 || mi > 59)
		return -1;
	if (**p == ':') {
		(*p)++;
		if (parse_digits(p, 2, 2, &s) < 0 || s > 59)
			return -1;
		if (**p == '.') {
			(*p)++;
			const char *start = *p;
			if (parse_digits(p, 1, 6, &frac) < 0)
				return -1;
			for (long n = (long)(*p - start); n < 6; n++)
				frac *= 10;
		}
	}
	*micros = ((h * 60 + mi) * 60 + s) * MICROS_PER_SECOND + frac;
	return 0;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex digits (dashes skipped, for uuids) into arena bytes. */
static int parse_hex(const char *text, tl_arena *arena, tl_ice_value *out)
{
	size_t n = 0, len = strlen(text);
	uint8_t *bytes = tl_arena_alloc(arena, len / 2 + 1);
	if (bytes == NULL)
		return -1; /* tl_ice_value_parse tells this from bad hex by the failure count */
	for (const char *p = text; *p;) {
		if (*p == '-') {
			p++;
			continue;
		}
		int hi = hex_value(p[0]), lo = hi < 0 ? -1 : hex_value(p[1]);
		if (lo < 0)
			return -1;
		bytes[n++] = (uint8_t)(hi << 4 | lo);
		p += 2;
	}
	out->ptr = bytes;
	out->len = n;
	return 0;
}

static int parse_decimal(const char *text, int precision, int scale, tl_int128 *out)
{
	const char *p = text;
	bool negative = *p == '-';
	if (*p == '-' || *p == '+')
		p++;
	tl_int128 v = 0;
	int ndigits = 0, fraction = -1;
	for (; *p; p++) {
		if (*p == '.' && fraction < 0) {
			fraction = 0;
			continue;
		}
		if (*p < '0' || *p > '9' || ndigits >= 38)
			return -1;
		v = v * 10 + (*p - '0');
		ndigits++;
		if (fraction >= 0)
			fraction++;
	}
	if (ndigits == 0)
		return -1;
	if (fraction < 0)
		fraction = 0;
	if (fraction > scale || ndigits - fraction + scale > precision)
		return -1;
	for (; fraction < scale; fraction++)
		v *= 10;
	*out = negative ? -v : v;
	return 0;
}

int tl_ice_value_parse(const tl_ice_type *type, const char *text, tl_arena *arena,
                       tl_ice_value *out, tl_error *err)
{
	unsigned long failures = tl_mem_failures();
	memset(out, 0, sizeof(*out));
	const char *p = text;
	char *end = NULL;
	errno = 0;
	switch (type->id) {
	case TL_ICE_BOOLEAN:
		if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0)
			goto bad;
		out->v.b = text[0] == 't';
		return 0;
	case TL_ICE_INT: {
		long long v = strtoll(text, &end, 10);
		if (end == text || *end || errno || v < INT32_MIN || v > INT32_MAX)
			goto bad;
		out->v.i32 = (int32_t)v;
		return 0;
	}
	case TL_ICE_LONG:
		out->v.i64 = strtoll(text, &end, 10);
		if (end == text || *end || errno)
			goto bad;
		return 0;
	case TL_ICE_FLOAT:
		out->v.f32 = strtof(text, &end);
		if (end == text || *end)
			goto bad;
		return 0;
	case TL_ICE_DOUBLE:
		out->v.f64 = strtod(text, &end);
		if (end == text || *end)
			goto bad;
		return 0;
	case TL_ICE_DECIMAL:
		if (parse_decimal(text, type->precision, type->scale, &out->v.dec) < 0)
			goto bad;
		return 0;
	case TL_ICE_DATE: {
		int64_t days;
		if (parse_date_part(&p, &days) < 0 || *p || days < INT32_MIN || days > INT32_MAX)
			goto bad;
		out->v.i32 = (int32_t)days;
		return 0;
	}
	case TL_ICE_TIME:
		if (parse_time_part(&p, &out->v.i64) < 0 || *p)
			goto bad;
		return 0;
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ: {
		int64_t days, micros;
		if (parse_date_part(&p, &days) < 0 || (*p != 'T' && *p != ' '))
			goto bad;
		p++;
		if (parse_time_part(&p, &micros) < 0)
			goto bad;
		if (strcmp(p, "Z") == 0 || strcmp(p, "+00:00") == 0)
			p += strlen(p);
		if (*p)
			goto bad;
		out->v.i64 = days * MICROS_PER_DAY + micros;
		return 0;
	}
	case TL_ICE_STRING: {
		size_t n = strlen(text);
		if (n > UINT32_MAX)
			goto bad;
		out->ptr = tl_arena_copy(arena, text, (uint32_t)n).ptr;
		out->len = n;
		if (out->ptr == NULL)
			return tl_error_nomem(err, "parsing a string value");
		return 0;
	}
	case TL_ICE_UUID:
		if (strlen(text) != 36 || parse_hex(text, arena, out) < 0 || out->len != 16)
			goto bad;
		return 0;
	case TL_ICE_FIXED:
	case TL_ICE_BINARY:
		if (strchr(text, '-') || parse_hex(text, arena, out) < 0)
			goto bad;
		if (type->id == TL_ICE_FIXED && out->len != (size_t)type->length)
			goto bad;
		return 0;
	default:
		break;
	}
bad:;
	if (tl_mem_failures() != failures)
		return tl_error_nomem(err, "parsing a value");
	tl_buf t;
	tl_buf_init(&t);
	tl_ice_type_text(type, &t);
	tl_buf_append_byte(&t, 0);
	tl_error_set(err, TL_ERR_INVALID, "\"%s\" is not a valid %s value", text,
	             tl_buf_failed(&t) ? "(type)" : (const char *)t.data);
	tl_buf_free(&t);
	return -1;
}

/* Whether a JSON value has the kind the single-value form gives `type`. */
static bool json_kind_fits(const tl_ice_type *type, const json_t *json)
{
	switch (type->id) {
	case TL_ICE_BOOLEAN:
		return json_is_boolean(json);
	case TL_ICE_INT:
	case TL_ICE_LONG:
		return json_is_integer(json);
	case TL_ICE_FLOAT:
	case TL_ICE_DOUBLE:
		return json_is_number(json);
	default:
		return json_is_string(json);
	}
}

int tl_ice_value_from_json(const tl_ice_type *type, const char *json, tl_arena *arena, tl_ice_value *out,
                           tl_error *err)
{
	unsigned long failures = tl_mem_failures();
	json_t *value = json != NULL ? tl_json_loadb(json, strlen(json), JSON_DECODE_ANY, NULL) : NULL;
	char *text = NULL;
	if (value != NULL && json_kind_fits(type, value))
		text = json_is_string(value) ? tl_strdup(json_string_value(value)) : tl_json_dumps(value, JSON_ENCODE_ANY);
	json_decref(value);
	int rc = text != NULL ? tl_ice_value_parse(type, text, arena, out, err) : -1;
	tl_free(text);
	if (rc < 0 && tl_mem_failures() != failures)
		return tl_error_nomem(err, "reading a JSON value");
	if (rc < 0) {
		tl_buf t;
		tl_buf_init(&t);
		tl_ice_type_text(type, &t);
		tl_buf_append_byte(&t, 0);
		tl_error_set(err, TL_ERR_INVALID, "%s is not the JSON single-value form of a %s value",
		             json != NULL ? json : "(null)", (const char *)t.data);
		tl_buf_free(&t);
	}
	return rc;
}
