/*
 * render.c: column values as JSON text and back (the rules are listed in
 * tierlake/render.h).
 *
 * Rendering is on the hot path of `tierdb parquet cat` and of every later
 * command that prints rows, so it appends straight into a tl_buf with
 * hand-written integer formatting and a bulk copy of plain string runs.
 * Parsing is the strict inverse: it accepts the rendered text (and plain
 * numbers where render.h says so) and names what is wrong with anything
 * else, because its callers (test generators, `ingest --jsonl`) feed it data
 * people typed.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/render_internal.h"
#include "tierlake/calendar.h"
#include "tierlake/render.h"

value_kind tl_value_kind_of(const tl_pq_column *col)
{
	switch (col->physical) {
	case TL_PQ_BOOLEAN:
		return KIND_BOOLEAN;
	case TL_PQ_INT32:
		switch (col->logical) {
		case TL_PQ_LOGICAL_DATE:
			return KIND_DATE;
		case TL_PQ_LOGICAL_TIME:
			return KIND_TIME32;
		case TL_PQ_LOGICAL_DECIMAL:
			return KIND_DECIMAL32;
		case TL_PQ_LOGICAL_INT:
			return col->int_signed ? KIND_INT32 : KIND_UINT32;
		default:
			return KIND_INT32;
		}
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		switch (col->logical) {
		case TL_PQ_LOGICAL_TIMESTAMP:
			return KIND_TIMESTAMP;
		case TL_PQ_LOGICAL_TIME:
			return KIND_TIME64;
		case TL_PQ_LOGICAL_DECIMAL:
			return KIND_DECIMAL64;
		case TL_PQ_LOGICAL_INT:
			return col->int_signed ? KIND_INT64 : KIND_UINT64;
		default:
			return KIND_INT64;
		}
	case TL_PQ_FLOAT:
		return KIND_FLOAT;
	case TL_PQ_DOUBLE:
		return KIND_DOUBLE;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		switch (col->logical) {
		case TL_PQ_LOGICAL_STRING:
		case TL_PQ_LOGICAL_JSON:
		case TL_PQ_LOGICAL_ENUM:
			return KIND_STRING;
		case TL_PQ_LOGICAL_DECIMAL:
			return KIND_DECIMAL_BYTES;
		case TL_PQ_LOGICAL_UUID:
			if (col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY && col->type_length == 16)
				return KIND_UUID;
			return KIND_BINARY;
		default:
			return KIND_BINARY;
		}
	}
	return KIND_BINARY;
}

/* ------------------------------------------------------------ integers */

static void append_u64(tl_buf *out, uint64_t v)
{
	char tmp[20];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	uint8_t *p = tl_buf_extend(out, (size_t)n);
	if (p == NULL)
		return; /* out is failed; its owner checks it (buf.h) */
	while (n)
		*p++ = (uint8_t)tmp[--n];
}

/* The magnitude of v as unsigned, correct for INT64_MIN too. */
static void append_i64(tl_buf *out, int64_t v)
{
	if (v < 0)
		put_byte(out, '-');
	append_u64(out, magnitude(v));
}

/* Exactly `width` decimal digits of v (which must fit). */
static void append_fixed(tl_buf *out, uint64_t v, int width)
{
	uint8_t *p = tl_buf_extend(out, (size_t)width);
	if (p == NULL)
		return; /* out is failed; its owner checks it (buf.h) */
	for (int i = width - 1; i >= 0; i--) {
		p[i] = (uint8_t)('0' + v % 10);
		v /= 10;
	}
}

/* ---------------------------------------------------------- floats */

/*
 * The digits are the fewest that read back to the same value: the first
 * precision p of 1..17 (1..9 for float) whose %.{p}e text strtod (strtof)
 * reads back exactly. Two shortcuts keep that affordable:
 *
 * - For a normal double any decimal within half an ulp of it is within
 *   1.2e-16 relative, far inside half a step of the 15-digit grid (at least
 *   5e-16 relative), so when the shortest form has at most 15 digits,
 *   rounding to 15 digits and dropping trailing zeros yields it; the search
 *   starts at 15 (6 for floats, by the same argument). Subnormals, whose
 *   ulps are wider, search from 1.
 * - One snprintf of all 17 (9) digits serves every shorter precision: the
 *   digits are rounded by hand, which matches rounding the value itself
 *   unless the digits dropped read exactly 5000..., where the shown digits
 *   cannot tell which way the value lies; that precision asks snprintf.
 *
 * The digits are then laid out as JavaScript's Number::toString does (what
 * JSON.stringify prints): plain notation for 1e-7 <= |x| < 1e21, exponent
 * notation otherwise, so 100.0 prints as 100 rather than 1e+02.
 */
typedef struct shortest {
	char digits[20]; /* significant digits */
	int ndigits;
	int exponent; /* value = 0.d1d2d3... * 10^exponent */
	bool negative;
} shortest;

/* Splits %.*e output ("-d.ddde+XX") into sign, digits and exponent. */
static void split_scientific(const char *text, shortest *out)
{
	const char *p = text;
	out->negative = *p == '-';
	if (out->negative)
		p++;
	out->ndigits = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.' && out->ndigits < (int)sizeof(out->digits))
			out->digits[out->ndigits++] = *p;
	out->exponent = atoi(p + 1) + 1;
}

/* Rounds full's digits to p (half up); false when the dropped digits are exactly 5000... */
static bool round_digits(const shortest *full, int p, shortest *out)
{
	if (full->digits[p] == '5') {
		int i = p + 1;
		while (i < full->ndigits && full->digits[i] == '0')
			i++;
		if (i == full->ndigits)
			return false;
	}
	*out = *full;
	out->ndigits = p;
	if (full->digits[p] >= '5') {
		int i = p - 1;
		while (i >= 0 && out->digits[i] == '9')
			out->digits[i--] = '0';
		if (i >= 0)
			out->digits[i]++;
		else { /* 999 -> 1000: one digit, one more power of ten */
			out->digits[0] = '1';
			out->exponent++;
		}
	}
	return true;
}

static bool reads_back(const shortest *s, double value, bool single)
{
	char text[48];
	int n = 0;
	if (s->negative)
		text[n++] = '-';
	text[n++] = '.';
	memcpy(text + n, s->digits, (size_t)s->ndigits);
	n += s->ndigits;
	snprintf(text + n, sizeof(text) - (size_t)n, "e%d", s->exponent);
	return single ? strtof(text, NULL) == (float)value : strtod(text, NULL) == value;
}

/* The next decimal up at the same digit count: 1.23 -> 1.24, 9.99 -> 10.0. */
static void step_up(shortest *s)
{
	int i = s->ndigits - 1;
	while (i >= 0 && s->digits[i] == '9')
		s->digits[i--] = '0';
	if (i >= 0)
		s->digits[i]++;
	else {
		s->digits[0] = '1';
		s->exponent++;
	}
}

/*
 * Whether value is a power of two. There the values that read back as it
 * reach half as far below as above, so the nearest decimal of a length can
 * fall just outside while the next one up is inside.
 */
static bool power_of_two(double value, bool single)
{
	int exponent;
	return single ? frexpf(fabsf((float)value), &exponent) == 0.5f : frexp(fabs(value), &exponent) == 0.5;
}

static void shortest_digits(double value, bool single, shortest *out)
{
	int max = single ? 9 : 17;
	bool normal = single ? fabsf((float)value) >= FLT_MIN : fabs(value) >= DBL_MIN;
	int first = !normal ? 1 : single ? 6 : 15;
	char text[48];
	shortest full;
	snprintf(text, sizeof(text), "%.*e", max - 1, value);
	split_scientific(text, &full);
	*out = full; /* max digits always read back */
	bool boundary = power_of_two(value, single);
	for (int p = first; p < max; p++) {
		shortest candidate;
		if (!round_digits(&full, p, &candidate)) {
			snprintf(text, sizeof(text), "%.*e", p - 1, value);
			split_scientific(text, &candidate);
		}
		if (reads_back(&candidate, value, single)) {
			*out = candidate;
			break;
		}
		if (boundary) {
			step_up(&candidate);
			if (reads_back(&candidate, value, single)) {
				*out = candidate;
				break;
			}
		}
	}
	while (out->ndigits > 1 && out->digits[out->ndigits - 1] == '0')
		out->ndigits--;
}

static void append_shortest(tl_buf *out, const shortest *s)
{
	int k = s->ndigits, n = s->exponent;
	if (s->negative)
		put_byte(out, '-');
	if (k <= n && n <= 21) { /* an integer: digits then zeros */
		tl_buf_append(out, s->digits, (size_t)k);
		for (int i = k; i < n; i++)
			put_byte(out, '0');
	} else if (0 < n && n <= 21) { /* the point falls inside the digits */
		tl_buf_append(out, s->digits, (size_t)n);
		put_byte(out, '.');
		tl_buf_append(out, s->digits + n, (size_t)(k - n));
	} else if (-6 < n && n <= 0) { /* 0.000ddd */
		tl_buf_append(out, "0.", 2);
		for (int i = n; i < 0; i++)
			put_byte(out, '0');
		tl_buf_append(out, s->digits, (size_t)k);
	} else {
		put_byte(out, (uint8_t)s->digits[0]);
		if (k > 1) {
			put_byte(out, '.');
			tl_buf_append(out, s->digits + 1, (size_t)(k - 1));
		}
		tl_buf_printf(out, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
	}
}

/* NaN, the infinities and zero, which every float width renders alike. */
static bool append_special(tl_buf *out, double d)
{
	if (isnan(d))
		tl_buf_append_str(out, "\"NaN\"");
	else if (isinf(d))
		tl_buf_append_str(out, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else if (d == 0)
		tl_buf_append_str(out, signbit(d) ? "-0.0" : "0");
	else
		return false;
	return true;
}

void tl_render_double(double value, tl_buf *out)
{
	if (append_special(out, value))
		return;
	shortest s;
	shortest_digits(value, false, &s);
	append_shortest(out, &s);
}

void tl_render_float(float value, tl_buf *out)
{
	if (append_special(out, (double)value))
		return;
	shortest s;
	shortest_digits((double)value, true, &s);
	append_shortest(out, &s);
}

/* ---------------------------------------------------------- strings */

/*
 * Length of the well-formed UTF-8 sequence at s (Unicode table 3-7), or, if
 * there is none, minus the length of its maximal ill-formed prefix, which
 * becomes one U+FFFD (the W3C/WHATWG practice Python also follows).
 */
static int utf8_sequence(const uint8_t *s, size_t avail)
{
	uint8_t c = s[0];
	int need;
	uint8_t lo = 0x80, hi = 0xBF;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		need = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F; /* no surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F; /* nothing above U+10FFFF */
	} else
		return -1;
	for (int i = 1; i < need; i++) {
		if ((size_t)i >= avail || s[i] < lo || s[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xBF;
	}
	return need;
}

/* Bytes that can be copied into a JSON string as they are. */
static bool plain_ascii(uint8_t c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

void tl_render_json_string(const void *bytes, size_t len, tl_buf *out)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *s = bytes;
	size_t i = 0;

	/* Appends are sticky on failure (buf.h): the caller checks out once. */
	if (tl_buf_reserve(out, len + 2) < 0)
		return;
	put_byte(out, '"');
	while (i < len) {
		size_t run = i;
		while (run < len && plain_ascii(s[run]))
			run++;
		tl_buf_append(out, s + i, run - i);
		i = run;
		if (i == len)
			break;
		uint8_t c = s[i];
		if (c < 0x80) {
			char esc[7] = {'\\', 0};
			size_t n = 2;
			switch (c) {
			case '"': esc[1] = '"'; break;
			case '\\': esc[1] = '\\'; break;
			case '\b': esc[1] = 'b'; break;
			case '\f': esc[1] = 'f'; break;
			case '\n': esc[1] = 'n'; break;
			case '\r': esc[1] = 'r'; break;
			case '\t': esc[1] = 't'; break;
			default:
				memcpy(esc + 1, "u00", 3);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				n = 6;
			}
			tl_buf_append(out, esc, n);
			i++;
			continue;
		}
		int seq = utf8_sequence(s + i, len - i);
		if (seq > 0) {
			tl_buf_append(out, s + i, (size_t)seq);
			i += (size_t)seq;
		} else {
			tl_buf_append(out, "\xEF\xBF\xBD", 3);
			i += (size_t)-seq;
		}
	}
	put_byte(out, '"');
}

/* ---------------------------------------------------------- base64 */

static const char base64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void append_base64(tl_buf *out, const uint8_t *s, size_t len)
{
	uint8_t *p = tl_buf_extend(out, (len + 2) / 3 * 4 + 2);
	if (p == NULL)
		return; /* out is failed; its owner checks it (buf.h) */
	*p++ = '"';
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		*p++ = (uint8_t)base64_alphabet[v >> 18];
		*p++ = (uint8_t)base64_alphabet[(v >> 12) & 63];
		*p++ = (uint8_t)base64_alphabet[(v >> 6) & 63];
		*p++ = (uint8_t)base64_alphabet[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0);
		*p++ = (uint8_t)base64_alphabet[v >> 18];
		*p++ = (uint8_t)base64_alphabet[(v >> 12) & 63];
		*p++ = i + 1 < len ? (uint8_t)base64_alphabet[(v >> 6) & 63] : '=';
		*p++ = '=';
	}
	*p = '"';
}

/* ---------------------------------------------------------- decimals */

/* Writes digits with a sign and the point placed `scale` digits from the right. */
static void append_scaled(tl_buf *out, const char *digits, size_t ndigits, bool negative, int32_t scale)
{
	bool zero = ndigits == 1 && digits[0] == '0';
	if (negative && !zero)
		put_byte(out, '-');
	if (scale <= 0) {
		tl_buf_append(out, digits, ndigits);
		/* A negative scale (not allowed by Parquet) still prints the value. */
		if (!zero)
			for (int32_t i = 0; i < -(int64_t)scale; i++)
				put_byte(out, '0');
		return;
	}
	size_t s = (size_t)scale;
	if (ndigits <= s) {
		tl_buf_append_str(out, "0.");
		for (size_t i = ndigits; i < s; i++)
			put_byte(out, '0');
		tl_buf_append(out, digits, ndigits);
	} else {
		tl_buf_append(out, digits, ndigits - s);
		put_byte(out, '.');
		tl_buf_append(out, digits + ndigits - s, s);
	}
}

static void append_decimal_int(tl_buf *out, int64_t unscaled, int32_t scale)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, magnitude(unscaled));
	put_byte(out, '"');
	append_scaled(out, digits, (size_t)n, unscaled < 0, scale);
	put_byte(out, '"');
}

/*
 * An unscaled big-endian two's-complement integer of any length. The
 * magnitude goes into 32-bit limbs, which are divided by 10^9 until zero;
 * each remainder is nine more digits, least significant first.
 */
static void append_decimal_bytes(tl_buf *out, const uint8_t *be, size_t len, int32_t scale)
{
	bool negative = len > 0 && (be[0] & 0x80);
	size_t nlimbs = (len + 3) / 4;
	uint32_t stack_limbs[16];
	uint32_t *limbs = nlimbs <= 16 ? stack_limbs : tl_malloc(nlimbs * sizeof(uint32_t));
	if (limbs == NULL) {
		tl_buf_set_failed(out);
		return;
	}

	/* limbs[0] is most significant; the first limb takes the odd bytes. */
	for (size_t i = 0; i < nlimbs; i++)
		limbs[i] = 0;
	for (size_t i = 0; i < len; i++) {
		size_t pos = len - 1 - i; /* byte position from the least significant */
		uint8_t byte = negative ? (uint8_t)~be[i] : be[i];
		limbs[nlimbs - 1 - pos / 4] |= (uint32_t)byte << (8 * (pos % 4));
	}
	if (negative) { /* ~x + 1 = -x: finish the two's-complement negation */
		for (size_t i = nlimbs; i-- > 0;)
			if (++limbs[i] != 0)
				break;
	}

	/* Nine digits per step; at most ceil(len * 8 * log10(2)) + 9 digits. */
	size_t cap = len * 3 + 10;
	char stack_digits[128];
	char *digits = cap <= sizeof(stack_digits) ? stack_digits : tl_malloc(cap);
	if (digits == NULL) {
		if (limbs != stack_limbs)
			tl_free(limbs);
		tl_buf_set_failed(out);
		return;
	}
	size_t pos = cap; /* digits fill from the right */
	size_t first = 0;
	while (first < nlimbs && limbs[first] == 0)
		first++;
	while (first < nlimbs) {
		uint64_t rem = 0;
		for (size_t i = first; i < nlimbs; i++) {
			uint64_t cur = rem << 32 | limbs[i];
			limbs[i] = (uint32_t)(cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		while (first < nlimbs && limbs[first] == 0)
			first++;
		for (int k = 0; k < 9; k++) {
			digits[--pos] = (char)('0' + rem % 10);
			rem /= 10;
		}
	}
	while (pos < cap && digits[pos] == '0')
		pos++;
	if (pos == cap)
		digits[--pos] = '0';

	put_byte(out, '"');
	append_scaled(out, digits + pos, cap - pos, negative, scale);
	put_byte(out, '"');
	if (digits != stack_digits)
		tl_free(digits);
	if (limbs != stack_limbs)
		tl_free(limbs);
}

/* ---------------------------------------------------------- dates and times */

static void append_date(tl_buf *out, int64_t days)
{
	int64_t year;
	int month, day;
	tl_civil_from_days(days, &year, &month, &day);
	if (year < 0) {
		put_byte(out, '-');
		if (year > -10000)
			append_fixed(out, magnitude(year), 4);
		else
			append_u64(out, magnitude(year));
	} else if (year > 9999) {
		put_byte(out, '+');
		append_u64(out, (uint64_t)year);
	} else
		append_fixed(out, (uint64_t)year, 4);
	put_byte(out, '-');
	append_fixed(out, (uint64_t)month, 2);
	put_byte(out, '-');
	append_fixed(out, (uint64_t)day, 2);
}

/* HH:MM:SS.ffffff of a time of day (hours may pass 23 for out-of-range values). */
static void append_clock(tl_buf *out, uint64_t seconds, uint64_t frac, tl_pq_time_unit unit)
{
	uint64_t hours = seconds / 3600;
	if (hours < 100)
		append_fixed(out, hours, 2);
	else
		append_u64(out, hours);
	put_byte(out, ':');
	append_fixed(out, seconds / 60 % 60, 2);
	put_byte(out, ':');
	append_fixed(out, seconds % 60, 2);
	put_byte(out, '.');
	if (unit == TL_PQ_NANOS)
		append_fixed(out, frac, 9);
	else if (unit == TL_PQ_MILLIS)
		append_fixed(out, frac * 1000, 6);
	else
		append_fixed(out, frac, 6);
}

static void append_timestamp(tl_buf *out, int64_t value, tl_pq_time_unit unit, bool utc)
{
	int64_t frac, second_of_day;
	int64_t seconds = tl_floor_div(value, units_per_second(unit), &frac);
	int64_t days = tl_floor_div(seconds, 86400, &second_of_day);
	put_byte(out, '"');
	append_date(out, days);
	put_byte(out, 'T');
	append_clock(out, (uint64_t)second_of_day, (uint64_t)frac, unit);
	if (utc)
		put_byte(out, 'Z');
	put_byte(out, '"');
}

static void append_time(tl_buf *out, int64_t value, tl_pq_time_unit unit)
{
	/* A time outside [0, 24h) is not valid Parquet, but it still prints
	 * as what it is: a signed duration. */
	uint64_t per_second = (uint64_t)units_per_second(unit);
	uint64_t mag = magnitude(value);
	put_byte(out, '"');
	if (value < 0)
		put_byte(out, '-');
	append_clock(out, mag / per_second, mag % per_second, unit);
	put_byte(out, '"');
}

static void append_uuid(tl_buf *out, const uint8_t *b)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t *p = tl_buf_extend(out, 38);
	if (p == NULL)
		return; /* out is failed; its owner checks it (buf.h) */
	*p++ = '"';
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = (uint8_t)hex[b[i] >> 4];
		*p++ = (uint8_t)hex[b[i] & 15];
	}
	*p = '"';
}

/* ---------------------------------------------------------- rendering */

void tl_render_value(const tl_pq_column *col, const tl_vector *vec, int64_t row, tl_buf *out)
{
	if (tl_vector_is_null(vec, row)) {
		tl_buf_append(out, "null", 4);
		return;
	}
	switch (tl_value_kind_of(col)) {
	case KIND_BOOLEAN:
		if (vec->v.b[row])
			tl_buf_append(out, "true", 4);
		else
			tl_buf_append(out, "false", 5);
		return;
	case KIND_INT32:
		append_i64(out, vec->v.i32[row]);
		return;
	case KIND_UINT32:
		append_u64(out, (uint32_t)vec->v.i32[row]);
		return;
	case KIND_INT64:
		append_i64(out, vec->v.i64[row]);
		return;
	case KIND_UINT64:
		append_u64(out, (uint64_t)vec->v.i64[row]);
		return;
	case KIND_FLOAT:
		tl_render_float(vec->v.f32[row], out);
		return;
	case KIND_DOUBLE:
		tl_render_double(vec->v.f64[row], out);
		return;
	case KIND_DECIMAL32:
		append_decimal_int(out, vec->v.i32[row], col->scale);
		return;
	case KIND_DECIMAL64:
		append_decimal_int(out, vec->v.i64[row], col->scale);
		return;
	case KIND_DECIMAL_BYTES:
		append_decimal_bytes(out, vec->v.bytes[row].ptr, vec->v.bytes[row].len, col->scale);
		return;
	case KIND_STRING:
		tl_render_json_string(vec->v.bytes[row].ptr, vec->v.bytes[row].len, out);
		return;
	case KIND_BINARY:
		append_base64(out, vec->v.bytes[row].ptr, vec->v.bytes[row].len);
		return;
	case KIND_DATE:
		put_byte(out, '"');
		append_date(out, vec->v.i32[row]);
		put_byte(out, '"');
		return;
	case KIND_TIMESTAMP:
		append_timestamp(out, vec->v.i64[row], col->unit, col->utc_adjusted);
		return;
	case KIND_TIME32:
		append_time(out, vec->v.i32[row], col->unit);
		return;
	case KIND_TIME64:
		append_time(out, vec->v.i64[row], col->unit);
		return;
	case KIND_UUID:
		if (vec->v.bytes[row].len == 16)
			append_uuid(out, vec->v.bytes[row].ptr);
		else
			append_base64(out, vec->v.bytes[row].ptr, vec->v.bytes[row].len);
		return;
	}
}

void tl_render_row(const tl_pq_schema *schema, const int *columns, const tl_pq_batch *batch, int64_t row,
                   tl_buf *out)
{
	put_byte(out, '{');
	for (int i = 0; i < batch->ncolumns; i++) {
		const tl_pq_column *col = &schema->columns[columns ? columns[i] : i];
		if (i > 0)
			put_byte(out, ',');
		tl_render_json_string(col->name, strlen(col->name), out);
		put_byte(out, ':');
		tl_render_value(col, &batch->columns[i], row, out);
	}
	put_byte(out, '}');
}

void tl_render_stat(const tl_pq_column *col, const union tl_pq_stat_value *value, tl_buf *out)
{
	/* A one-row vector over the statistic, so statistics and rows can
	 * never render differently. */
	tl_vector vec = {.valid = NULL};
	union tl_pq_stat_value copy = *value;
	uint8_t flag = 0;
	switch (col->physical) {
	case TL_PQ_BOOLEAN:
		flag = copy.b ? 1 : 0;
		vec.v.b = &flag;
		break;
	case TL_PQ_INT32:
		vec.v.i32 = &copy.i32;
		break;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		vec.v.i64 = &copy.i64;
		break;
	case TL_PQ_FLOAT:
		vec.v.f32 = &copy.f32;
		break;
	case TL_PQ_DOUBLE:
		vec.v.f64 = &copy.f64;
		break;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		vec.v.bytes = &copy.bytes;
		break;
	}
	tl_render_value(col, &vec, 0, out);
}

