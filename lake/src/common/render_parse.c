/*
 * render_parse.c: JSON back into column values, the strict inverse of
 * render.c (the rules are listed in tierlake/render.h).
 *
 * It accepts the rendered text (and plain numbers where render.h says so)
 * and names what is wrong with anything else, because its callers (test
 * generators, `ingest --jsonl`) feed it data people typed.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/render_internal.h"
#include "tierlake/calendar.h"
#include "tierlake/render.h"
#include "common/render_json.h"
#include "common/json_load.h"

static int base64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes padded standard base64 into out (room for len / 4 * 3 bytes); -1 if malformed. */
static int64_t decode_base64(const char *s, size_t len, uint8_t *out)
{
	if (len % 4 != 0)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int pad = 0;
		if (last && s[i + 3] == '=')
			pad = s[i + 2] == '=' ? 2 : 1;
		uint32_t v = 0;
		for (int k = 0; k < 4; k++) {
			int d = k >= 4 - pad ? 0 : base64_value(s[i + (size_t)k]);
			if (d < 0)
				return -1;
			v = v << 6 | (uint32_t)d;
		}
		/* Bits the padding drops must be zero, so each text has one meaning. */
		if ((pad == 1 && (v & 0xFF)) || (pad == 2 && (v & 0xFFFF)))
			return -1;
		out[n++] = (uint8_t)(v >> 16);
		if (pad < 2)
			out[n++] = (uint8_t)(v >> 8);
		if (pad < 1)
			out[n++] = (uint8_t)v;
	}
	return (int64_t)n;
}

/* ---------------------------------------------------------- loading JSON */

/* Whether text[0..len) is a JSON integer token outside the int64 range. */
static bool is_wide_integer(const char *text, size_t len)
{
	size_t i = text[0] == '-' ? 1 : 0;
	if (i == len || (text[i] == '0' && len - i > 1))
		return false;
	for (size_t k = i; k < len; k++)
		if (text[k] < '0' || text[k] > '9')
			return false;
	const char *limit = i ? "9223372036854775808" : "9223372036854775807";
	size_t ndigits = len - i;
	if (ndigits != 19)
		return ndigits > 19;
	return memcmp(text + i, limit, 19) > 0;
}

json_t *tl_render_load_json(const char *text, size_t len, tl_error *err)
{
	/* Quote every integer jansson would refuse ("too big integer"); the
	 * text is copied only when there is one. */
	tl_buf quoted;
	tl_buf_init(&quoted);
	size_t copied = 0;
	bool in_string = false;
	for (size_t i = 0; i < len;) {
		char c = text[i];
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
			i++;
			continue;
		}
		if (c == '"') {
			in_string = true;
			i++;
			continue;
		}
		if (c != '-' && (c < '0' || c > '9')) {
			i++;
			continue;
		}
		size_t end = i;
		while (end < len && strchr("0123456789+-.eE", text[end]) && text[end] != '\0')
			end++;
		if (is_wide_integer(text + i, end - i)) {
			tl_buf_append(&quoted, text + copied, i - copied);
			put_byte(&quoted, '"');
			tl_buf_append(&quoted, text + i, end - i);
			put_byte(&quoted, '"');
			copied = end;
		}
		i = end;
	}
	const char *src = text;
	size_t srclen = len;
	if (quoted.data != NULL) {
		tl_buf_append(&quoted, text + copied, len - copied);
		src = (const char *)quoted.data;
		srclen = quoted.len;
	}

	json_error_t jerr;
	json_t *json = tl_json_loadb(src, srclen, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	tl_buf_free(&quoted);
	if (json == NULL)
		tl_error_set(err, TL_ERR_INVALID, "invalid JSON at column %d: %s", jerr.column, jerr.text);
	return json;
}

/* ---------------------------------------------------------- parsing values */

/* A short description of a JSON value for error messages. */
static void describe(const json_t *json, char *buf, size_t size)
{
	char *text = tl_json_dumps(json, JSON_ENCODE_ANY | JSON_COMPACT);
	if (text == NULL) {
		snprintf(buf, size, "(unprintable)");
		return;
	}
	if (strlen(text) > 60)
		snprintf(buf, size, "%.57s...", text);
	else
		snprintf(buf, size, "%s", text);
	tl_free(text);
}

static int bad_value(tl_error *err, const json_t *json, const char *expected)
{
	char got[80];
	describe(json, got, sizeof(got));
	return tl_error_set(err, TL_ERR_INVALID, "expected %s, got %s", expected, got);
}

/* A cursor over text being parsed. */
typedef struct scan {
	const char *p;
	const char *end;
} scan;

static bool scan_char(scan *s, char c)
{
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return true;
	}
	return false;
}

/* Between min and max decimal digits; false if fewer than min. */
static bool scan_digits(scan *s, int min, int max, int64_t *value, int *count)
{
	int64_t v = 0;
	int n = 0;
	while (n < max && s->p < s->end && *s->p >= '0' && *s->p <= '9') {
		v = v * 10 + (*s->p - '0');
		s->p++;
		n++;
	}
	*value = v;
	if (count)
		*count = n;
	return n >= min;
}

/*
 * A JSON-style integer string: -?(0|[1-9][0-9]*), at most 20 digits.
 * Sets *negative and the magnitude; false if it is not one or too big.
 */
static bool parse_integer_text(const char *text, size_t len, bool *negative, uint64_t *mag)
{
	size_t i = 0;
	*negative = len > 0 && text[0] == '-';
	i = *negative ? 1 : 0;
	if (i == len || (text[i] == '0' && len - i > 1))
		return false;
	uint64_t v = 0;
	for (; i < len; i++) {
		if (text[i] < '0' || text[i] > '9')
			return false;
		unsigned d = (unsigned)(text[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*mag = v;
	return true;
}

/*
 * An integer column value: a JSON integer, or a string of digits (how
 * tl_render_load_json passes integers beyond int64). Checks the range of
 * the column's type: [min, max] for signed, [0, umax] for unsigned.
 */
static int parse_integer(const json_t *json, bool is_signed, int bits, int64_t *out, tl_error *err)
{
	char expected[64];
	snprintf(expected, sizeof(expected), "an integer (%s %d-bit)", is_signed ? "signed" : "unsigned", bits);
	bool negative;
	uint64_t mag;
	if (json_is_integer(json)) {
		json_int_t v = json_integer_value(json);
		negative = v < 0;
		mag = magnitude(v);
	} else if (json_is_string(json)) {
		if (!parse_integer_text(json_string_value(json), json_string_length(json), &negative, &mag))
			return bad_value(err, json, expected);
	} else
		return bad_value(err, json, expected);

	if (is_signed) {
		uint64_t limit = (uint64_t)1 << (bits - 1); /* |min|; max is limit - 1 */
		if (negative ? mag > limit : mag >= limit)
			return bad_value(err, json, expected);
		*out = negative ? (int64_t)(0 - mag) : (int64_t)mag;
	} else {
		uint64_t max = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
		if ((negative && mag != 0) || mag > max)
			return bad_value(err, json, expected);
		*out = (int64_t)mag; /* two's complement wrap for UINT64 above INT64_MAX */
	}
	return 0;
}

/* Strict JSON number syntax, so "0x10" or " 1" are not numbers. */
static bool is_json_number(const char *s, size_t len)
{
	size_t i = 0;
	if (i < len && s[i] == '-')
		i++;
	if (i == len)
		return false;
	if (s[i] == '0')
		i++;
	else if (s[i] >= '1' && s[i] <= '9')
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return false;
	if (i < len && s[i] == '.') {
		size_t start = ++i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == start)
			return false;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		size_t start = i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == start)
			return false;
	}
	return i == len;
}

/* FLOAT and DOUBLE: a JSON number, "NaN", "Infinity", "-Infinity", or a number in a string. */
static int parse_floating(const json_t *json, bool single, double *dout, float *fout, tl_error *err)
{
	const char *expected = "a number or \"NaN\", \"Infinity\", \"-Infinity\"";
	if (json_is_integer(json)) {
		json_int_t v = json_integer_value(json);
		*dout = (double)v;
		*fout = (float)v;
		return 0;
	}
	if (json_is_real(json)) {
		double d = json_real_value(json);
		*dout = d;
		*fout = (float)d;
		if (single && isinf(*fout) && !isinf(d))
			return bad_value(err, json, "a number within the range of FLOAT");
		return 0;
	}
	if (!json_is_string(json))
		return bad_value(err, json, expected);
	const char *s = json_string_value(json);
	size_t len = json_string_length(json);
	if (strcmp(s, "NaN") == 0) {
		*dout = NAN;
		*fout = NAN;
	} else if (strcmp(s, "Infinity") == 0) {
		*dout = INFINITY;
		*fout = INFINITY;
	} else if (strcmp(s, "-Infinity") == 0) {
		*dout = -INFINITY;
		*fout = -INFINITY;
	} else if (is_json_number(s, len)) {
		*dout = strtod(s, NULL);
		*fout = strtof(s, NULL);
		if (single ? isinf(*fout) : isinf(*dout))
			return bad_value(err, json, single ? "a number within the range of FLOAT"
			                                   : "a number within the range of DOUBLE");
	} else
		return bad_value(err, json, expected);
	return 0;
}

/*
 * A decimal's unscaled value as decimal digits: a rendered decimal string
 * ("-12.50"), a JSON integer, or a JSON real (taken at its shortest
 * round-trip text, so 0.1 means 0.1). Fewer fraction digits than the scale
 * are padded; more are an error rather than a silent rounding. Fills
 * digits (no leading zeros, "0" for zero) and *negative.
 */
static int decimal_digits(const tl_pq_column *col, const json_t *json, tl_buf *digits, bool *negative,
                          tl_error *err)
{
	char expected[96];
	snprintf(expected, sizeof(expected), "a decimal string with at most %d digits after the point",
	         col->scale);
	tl_buf text;
	tl_buf_init(&text);
	bool allow_exponent = false;
	if (json_is_string(json)) {
		tl_buf_append(&text, json_string_value(json), json_string_length(json));
	} else if (json_is_integer(json)) {
		tl_buf_printf(&text, "%" JSON_INTEGER_FORMAT, json_integer_value(json));
	} else if (json_is_real(json)) {
		tl_render_double(json_real_value(json), &text);
		allow_exponent = true;
	} else
		return bad_value(err, json, expected);

	scan s = {(const char *)text.data, (const char *)text.data + text.len};
	bool ok = false, too_wide = false;
	*negative = scan_char(&s, '-');
	const char *int_start = s.p;
	while (s.p < s.end && *s.p >= '0' && *s.p <= '9')
		s.p++;
	const char *int_end = s.p;
	const char *frac_start = NULL, *frac_end = NULL;
	if (scan_char(&s, '.')) {
		frac_start = s.p;
		while (s.p < s.end && *s.p >= '0' && *s.p <= '9')
			s.p++;
		frac_end = s.p;
	}
	int64_t exponent = 0;
	if (allow_exponent && (scan_char(&s, 'e') || scan_char(&s, 'E'))) {
		bool exp_negative = scan_char(&s, '-');
		if (!exp_negative)
			scan_char(&s, '+');
		if (!scan_digits(&s, 1, 4, &exponent, NULL))
			goto done;
		if (exp_negative)
			exponent = -exponent;
	}
	if (s.p != s.end || int_end == int_start || (frac_start && frac_end == frac_start))
		goto done;

	/* value = all digits * 10^(exponent - nfrac); unscaled = value * 10^scale */
	size_t nfrac = frac_start ? (size_t)(frac_end - frac_start) : 0;
	int64_t shift = exponent - (int64_t)nfrac + col->scale;
	tl_buf_reset(digits);
	tl_buf_append(digits, int_start, (size_t)(int_end - int_start));
	tl_buf_append(digits, frac_start, nfrac);
	if (shift < 0) {
		/* The digits dropped must be zeros: a decimal is never rounded here. */
		size_t drop = (uint64_t)-shift > digits->len ? digits->len : (size_t)-shift;
		for (size_t i = digits->len - drop; i < digits->len; i++)
			if (digits->data[i] != '0')
				goto done;
		digits->len -= drop;
		shift = 0;
	}
	size_t lead = 0;
	while (lead < digits->len && digits->data[lead] == '0')
		lead++;
	memmove(digits->data, digits->data + lead, digits->len - lead);
	digits->len -= lead;
	if (digits->len == 0) {
		put_byte(digits, '0');
		*negative = false;
	} else {
		if ((int64_t)digits->len + shift > col->precision) {
			too_wide = true;
			goto done;
		}
		for (int64_t i = 0; i < shift; i++)
			put_byte(digits, '0');
	}
	ok = true;
done:
	if (too_wide)
		tl_error_set(err, TL_ERR_INVALID, "decimal %.*s has more digits than the column's precision %d",
		             (int)text.len, (const char *)text.data, col->precision);
	else if (!ok)
		bad_value(err, json, expected);
	tl_buf_free(&text);
	return ok ? 0 : -1;
}

/* Digits (already checked against the precision) as a two's-complement int64. */
static int64_t decimal_to_int64(const tl_buf *digits, bool negative)
{
	uint64_t v = 0;
	for (size_t i = 0; i < digits->len; i++)
		v = v * 10 + (uint64_t)(digits->data[i] - '0');
	return negative ? (int64_t)(0 - v) : (int64_t)v;
}

/*
 * Digits as a big-endian two's-complement integer of `width` bytes (an
 * FLBA's type_length), or of the fewest bytes that hold it when width is 0
 * (BYTE_ARRAY). Returns the byte count, or -1 if it does not fit.
 */
static int64_t decimal_to_bytes(const tl_buf *digits, bool negative, int32_t width, tl_arena *arena,
                                tl_bytes *out)
{
	/* Room for the magnitude plus a sign byte: 10^n < 2^(3.33n). */
	size_t room = digits->len / 2 + 2;
	if (width > 0 && (size_t)width + 1 > room)
		room = (size_t)width + 1;
	uint8_t *mag = tl_calloc(room, 1);
	if (mag == NULL)
		return -1; /* tl_render_parse_value tells this apart by the failure count */
	for (size_t i = 0; i < digits->len; i++) {
		unsigned carry = (unsigned)(digits->data[i] - '0');
		for (size_t k = room; k-- > 0;) {
			unsigned cur = mag[k] * 10u + carry;
			mag[k] = (uint8_t)cur;
			carry = cur >> 8;
		}
	}
	if (negative) {
		for (size_t k = 0; k < room; k++)
			mag[k] = (uint8_t)~mag[k];
		for (size_t k = room; k-- > 0;)
			if (++mag[k] != 0)
				break;
	}
	/* Drop leading bytes that only repeat the sign. */
	uint8_t sign_byte = negative ? 0xFF : 0x00;
	size_t start = 0;
	while (start + 1 < room && mag[start] == sign_byte && ((mag[start + 1] & 0x80) != 0) == negative)
		start++;
	size_t need = room - start;
	if (width > 0) {
		if (need > (size_t)width) {
			tl_free(mag);
			return -1;
		}
		start = room - (size_t)width;
		need = (size_t)width;
	}
	*out = tl_arena_copy(arena, mag + start, (uint32_t)need);
	tl_free(mag);
	return (int64_t)need;
}

static int parse_decimal(const tl_pq_column *col, value_kind kind, const json_t *json, tl_vector *vec,
                         int64_t row, tl_arena *arena, tl_error *err)
{
	tl_buf digits;
	tl_buf_init(&digits);
	bool negative = false;
	int rc = decimal_digits(col, json, &digits, &negative, err);
	if (rc == 0) {
		int max_digits = kind == KIND_DECIMAL32 ? 9 : kind == KIND_DECIMAL64 ? 18 : INT32_MAX;
		if (digits.len > (size_t)max_digits)
			rc = bad_value(err, json, "a decimal that fits the column's physical type");
		else if (kind == KIND_DECIMAL32)
			vec->v.i32[row] = (int32_t)decimal_to_int64(&digits, negative);
		else if (kind == KIND_DECIMAL64)
			vec->v.i64[row] = decimal_to_int64(&digits, negative);
		else {
			int32_t width = col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY ? col->type_length : 0;
			if (decimal_to_bytes(&digits, negative, width, arena, &vec->v.bytes[row]) < 0)
				rc = bad_value(err, json, "a decimal that fits the column's fixed width");
		}
	}
	tl_buf_free(&digits);
	return rc;
}

static bool days_in_range(int64_t year, int month, int day)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (month < 1 || month > 12 || day < 1)
		return false;
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
	return day <= days[month - 1] + (month == 2 && leap);
}

/* [+-]YYYY-MM-DD; a sign allows more than four year digits. */
static bool scan_date(scan *s, int64_t *days)
{
	bool negative = false, sign = false;
	if (scan_char(s, '-'))
		negative = sign = true;
	else if (scan_char(s, '+'))
		sign = true;
	int64_t year, month, day;
	int nyear;
	if (!scan_digits(s, 4, sign ? 12 : 4, &year, &nyear))
		return false;
	if (!scan_char(s, '-') || !scan_digits(s, 2, 2, &month, NULL) || !scan_char(s, '-') ||
	    !scan_digits(s, 2, 2, &day, NULL))
		return false;
	if (negative)
		year = -year;
	if (!days_in_range(year, (int)month, (int)day))
		return false;
	*days = tl_days_from_civil(year, (int)month, (int)day);
	return true;
}

/* HH:MM:SS[.fraction] in `unit`s since midnight; extra fraction digits must be zero. */
static bool scan_clock(scan *s, tl_pq_time_unit unit, int64_t *value)
{
	int64_t h, m, sec;
	if (!scan_digits(s, 2, 2, &h, NULL) || !scan_char(s, ':') || !scan_digits(s, 2, 2, &m, NULL) ||
	    !scan_char(s, ':') || !scan_digits(s, 2, 2, &sec, NULL))
		return false;
	if (h > 23 || m > 59 || sec > 59)
		return false;
	int64_t frac_nanos = 0;
	if (scan_char(s, '.')) {
		int n;
		if (!scan_digits(s, 1, 9, &frac_nanos, &n))
			return false;
		for (; n < 9; n++)
			frac_nanos *= 10;
	}
	int64_t per_unit = 1000000000 / units_per_second(unit); /* nanos per unit */
	if (frac_nanos % per_unit != 0)
		return false;
	*value = (h * 3600 + m * 60 + sec) * units_per_second(unit) + frac_nanos / per_unit;
	return true;
}

static int parse_timestamp(const tl_pq_column *col, const json_t *json, int64_t *out, tl_error *err)
{
	const char *expected = col->utc_adjusted ? "a timestamp \"YYYY-MM-DDTHH:MM:SS.ffffffZ\""
	                                         : "a timestamp \"YYYY-MM-DDTHH:MM:SS.ffffff\" (no zone)";
	if (!json_is_string(json))
		return bad_value(err, json, expected);
	const char *text = json_string_value(json);
	scan s = {text, text + json_string_length(json)};
	int64_t days, clock;
	if (!scan_date(&s, &days) || !scan_char(&s, 'T') || !scan_clock(&s, col->unit, &clock))
		return bad_value(err, json, expected);
	if (scan_char(&s, 'Z') != col->utc_adjusted || s.p != s.end)
		return bad_value(err, json, expected);
	/* Before 1970 count whole days from the day after, so the earliest
	 * timestamps do not overflow on the way to being in range. */
	int64_t per_day = 86400 * units_per_second(col->unit), v;
	if (days < 0) {
		days++;
		clock -= per_day;
	}
	if (__builtin_mul_overflow(days, per_day, &v) || __builtin_add_overflow(v, clock, &v))
		return bad_value(err, json, "a timestamp within the range of the column's unit");
	*out = v;
	return 0;
}

static int parse_uuid(const json_t *json, tl_arena *arena, tl_bytes *out, tl_error *err)
{
	const char *expected = "a UUID \"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\"";
	if (!json_is_string(json) || json_string_length(json) != 36)
		return bad_value(err, json, expected);
	const char *s = json_string_value(json);
	uint8_t bytes[16];
	int n = 0;
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return bad_value(err, json, expected);
			continue;
		}
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return bad_value(err, json, expected);
		if (n % 2 == 0)
			bytes[n / 2] = (uint8_t)(d << 4);
		else
			bytes[n / 2] |= (uint8_t)d;
		n++;
	}
	*out = tl_arena_copy(arena, bytes, 16);
	return 0;
}

static int parse_binary(const tl_pq_column *col, const json_t *json, tl_arena *arena, tl_bytes *out,
                        tl_error *err)
{
	if (!json_is_string(json))
		return bad_value(err, json, "a base64 string");
	size_t len = json_string_length(json);
	if (len / 4 * 3 > UINT32_MAX)
		return bad_value(err, json, "a base64 string under 4 GiB");
	uint8_t *bytes = tl_malloc(len / 4 * 3 + 1);
	if (bytes == NULL)
		return tl_error_nomem(err, "decoding base64");
	int64_t n = decode_base64(json_string_value(json), len, bytes);
	int rc = 0;
	if (n < 0)
		rc = bad_value(err, json, "a padded standard base64 string");
	else if (col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY && n != col->type_length) {
		char expected[64];
		snprintf(expected, sizeof(expected), "base64 of exactly %d bytes", col->type_length);
		rc = bad_value(err, json, expected);
	} else
		*out = tl_arena_copy(arena, bytes, (uint32_t)n);
	tl_free(bytes);
	return rc;
}

static int parse_string(const tl_pq_column *col, const json_t *json, tl_arena *arena, tl_bytes *out,
                        tl_error *err)
{
	if (!json_is_string(json))
		return bad_value(err, json, "a string");
	size_t len = json_string_length(json);
	if (len > UINT32_MAX)
		return bad_value(err, json, "a string under 4 GiB");
	if (col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY && len != (size_t)col->type_length) {
		char expected[64];
		snprintf(expected, sizeof(expected), "a string of exactly %d bytes", col->type_length);
		return bad_value(err, json, expected);
	}
	*out = tl_arena_copy(arena, json_string_value(json), (uint32_t)len);
	return 0;
}

static int parse_value_into(const tl_pq_column *col, const json_t *json, tl_vector *vec, int64_t row,
                            tl_arena *arena, tl_error *err);

/*
 * The value parsers copy into the arena and a few scratch buffers without a
 * check at each; one count of failed allocations around them says whether
 * the value is whole, and the error is then out-of-memory whatever else the
 * parser concluded.
 */
int tl_render_parse_value(const tl_pq_column *col, const json_t *json, tl_vector *vec, int64_t row,
                          tl_arena *arena, tl_error *err)
{
	unsigned long failures = tl_mem_failures();
	int rc = parse_value_into(col, json, vec, row, arena, err);
	if (tl_mem_failures() != failures) {
		tl_error_clear(err);
		return tl_error_nomem(err, "parsing a value of column \"%s\"", col->name);
	}
	return rc;
}

static int parse_value_into(const tl_pq_column *col, const json_t *json, tl_vector *vec, int64_t row,
                            tl_arena *arena, tl_error *err)
{
	if (json_is_null(json)) {
		if (col->required || vec->valid == NULL)
			return tl_error_set(err, TL_ERR_INVALID, "null in a required column");
		vec->valid[row] = 0;
		/* Numbers left in a null slot are harmless; a view into memory the
		 * caller has since reset is not. */
		if (col->physical == TL_PQ_BYTE_ARRAY || col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY)
			vec->v.bytes[row] = (tl_bytes){NULL, 0};
		return 0;
	}

	value_kind kind = tl_value_kind_of(col);
	int64_t i64 = 0;
	int rc = 0;
	switch (kind) {
	case KIND_BOOLEAN:
		if (!json_is_boolean(json))
			return bad_value(err, json, "true or false");
		vec->v.b[row] = json_is_true(json) ? 1 : 0;
		break;
	case KIND_INT32:
	case KIND_UINT32:
	case KIND_INT64:
	case KIND_UINT64: {
		bool wide = kind == KIND_INT64 || kind == KIND_UINT64;
		int bits = col->logical == TL_PQ_LOGICAL_INT && col->int_bit_width > 0 &&
		                   col->int_bit_width <= (wide ? 64 : 32)
		               ? col->int_bit_width
		               : (wide ? 64 : 32);
		rc = parse_integer(json, kind == KIND_INT32 || kind == KIND_INT64, bits, &i64, err);
		if (rc == 0 && wide)
			vec->v.i64[row] = i64;
		else if (rc == 0)
			vec->v.i32[row] = (int32_t)(uint32_t)(uint64_t)i64;
		break;
	}
	case KIND_FLOAT:
	case KIND_DOUBLE: {
		double d = 0;
		float f = 0;
		rc = parse_floating(json, kind == KIND_FLOAT, &d, &f, err);
		if (rc == 0 && kind == KIND_FLOAT)
			vec->v.f32[row] = f;
		else if (rc == 0)
			vec->v.f64[row] = d;
		break;
	}
	case KIND_DECIMAL32:
	case KIND_DECIMAL64:
	case KIND_DECIMAL_BYTES:
		rc = parse_decimal(col, kind, json, vec, row, arena, err);
		break;
	case KIND_STRING:
		rc = parse_string(col, json, arena, &vec->v.bytes[row], err);
		break;
	case KIND_BINARY:
		rc = parse_binary(col, json, arena, &vec->v.bytes[row], err);
		break;
	case KIND_DATE: {
		const char *expected = "a date \"YYYY-MM-DD\"";
		if (!json_is_string(json))
			return bad_value(err, json, expected);
		scan s = {json_string_value(json), json_string_value(json) + json_string_length(json)};
		if (!scan_date(&s, &i64) || s.p != s.end)
			return bad_value(err, json, expected);
		if (i64 < INT32_MIN || i64 > INT32_MAX)
			return bad_value(err, json, "a date within the DATE range");
		vec->v.i32[row] = (int32_t)i64;
		break;
	}
	case KIND_TIMESTAMP:
		rc = parse_timestamp(col, json, &i64, err);
		if (rc == 0)
			vec->v.i64[row] = i64;
		break;
	case KIND_TIME32:
	case KIND_TIME64: {
		const char *expected = col->unit == TL_PQ_NANOS ? "a time \"HH:MM:SS.fffffffff\"" : "a time \"HH:MM:SS.ffffff\"";
		if (!json_is_string(json))
			return bad_value(err, json, expected);
		scan s = {json_string_value(json), json_string_value(json) + json_string_length(json)};
		if (!scan_clock(&s, col->unit, &i64) || s.p != s.end)
			return bad_value(err, json, expected);
		if (kind == KIND_TIME32) {
			if (i64 > INT32_MAX)
				return bad_value(err, json, "a time that fits INT32");
			vec->v.i32[row] = (int32_t)i64;
		} else
			vec->v.i64[row] = i64;
		break;
	}
	case KIND_UUID:
		rc = parse_uuid(json, arena, &vec->v.bytes[row], err);
		break;
	}
	if (rc == 0 && vec->valid != NULL)
		vec->valid[row] = 1;
	return rc;
}

int tl_render_parse_row(const tl_pq_schema *schema, const json_t *object, tl_pq_batch *batch, int64_t row,
                        tl_error *err)
{
	if (!json_is_object(object))
		return bad_value(err, object, "a JSON object keyed by column name");
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)object, key, value) {
		(void)value;
		if (tl_pq_schema_find(schema, key) < 0)
			return tl_error_set(err, TL_ERR_INVALID, "no column named \"%s\" in the schema", key);
	}
	for (int i = 0; i < schema->ncolumns; i++) {
		const tl_pq_column *col = &schema->columns[i];
		json_t *json = json_object_get(object, col->name);
		if (tl_render_parse_value(col, json ? json : json_null(), &batch->columns[i], row, &batch->arena,
		                          err) < 0) {
			tl_error_prefix(err, "column \"%s\"", col->name);
			return -1;
		}
	}
	return 0;
}
