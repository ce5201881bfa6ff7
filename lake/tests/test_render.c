/*
 * test_render.c: the value rendering rules of tierlake/render.h, their edge
 * cases, and parse(render(x)) == x for every kind of column.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "test.h"
#include "tierlake/render.h"
#include "common/render_json.h"

/* ---------------------------------------------------------------- helpers */

static tl_pq_column column(tl_pq_physical physical, tl_pq_logical logical)
{
	tl_pq_column col = {.name = "c", .physical = physical, .logical = logical, .field_id = -1};
	return col;
}

static tl_pq_column int_column(tl_pq_physical physical, int bits, bool is_signed)
{
	tl_pq_column col = column(physical, TL_PQ_LOGICAL_INT);
	col.int_bit_width = bits;
	col.int_signed = is_signed;
	return col;
}

static tl_pq_column decimal_column(tl_pq_physical physical, int precision, int scale, int width)
{
	tl_pq_column col = column(physical, TL_PQ_LOGICAL_DECIMAL);
	col.precision = precision;
	col.scale = scale;
	col.type_length = width;
	return col;
}

static tl_pq_column time_column(tl_pq_physical physical, tl_pq_logical logical, tl_pq_time_unit unit, bool utc)
{
	tl_pq_column col = column(physical, logical);
	col.unit = unit;
	col.utc_adjusted = utc;
	return col;
}

/* Rendered text lives here until the next render_* call. */
static tl_buf text;

static const char *finish(void)
{
	tl_buf_append_byte(&text, '\0');
	return (const char *)text.data;
}

static const char *render_vec(const tl_pq_column *col, tl_vector vec)
{
	tl_buf_reset(&text);
	tl_render_value(col, &vec, 0, &text);
	return finish();
}

static const char *render_i32(const tl_pq_column *col, int32_t v)
{
	return render_vec(col, (tl_vector){.v.i32 = &v});
}

static const char *render_i64(const tl_pq_column *col, int64_t v)
{
	return render_vec(col, (tl_vector){.v.i64 = &v});
}

static const char *render_f64(double v)
{
	tl_pq_column col = column(TL_PQ_DOUBLE, TL_PQ_LOGICAL_NONE);
	return render_vec(&col, (tl_vector){.v.f64 = &v});
}

static const char *render_f32(float v)
{
	tl_pq_column col = column(TL_PQ_FLOAT, TL_PQ_LOGICAL_NONE);
	return render_vec(&col, (tl_vector){.v.f32 = &v});
}

static const char *render_bytes(const tl_pq_column *col, const void *bytes, uint32_t len)
{
	tl_bytes b = {bytes, len};
	return render_vec(col, (tl_vector){.v.bytes = &b});
}

static const char *render_string(const char *s)
{
	tl_pq_column col = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_STRING);
	return render_bytes(&col, s, (uint32_t)strlen(s));
}

/*
 * The slow, obviously correct form of the shortest round-trip rule: the
 * significant digits (trailing zeros dropped) of the first %.{p}g that
 * reads back.
 */
static void naive_digits(double d, bool single, char *buf, size_t size)
{
	char text[40];
	for (int p = 1; p <= (single ? 9 : 17); p++) {
		snprintf(text, sizeof(text), "%.*e", p - 1, d);
		if (single ? strtof(text, NULL) == (float)d : strtod(text, NULL) == d)
			break;
	}
	size_t n = 0;
	for (const char *c = text; *c && *c != 'e' && n + 1 < size; c++)
		if (*c >= '0' && *c <= '9')
			buf[n++] = *c;
	while (n > 1 && buf[n - 1] == '0')
		n--;
	buf[n] = '\0';
}

/* The significant digits of rendered text, in the same form. */
static void rendered_digits(const char *text, char *buf, size_t size)
{
	size_t n = 0;
	for (const char *c = text; *c && *c != 'e' && n + 1 < size; c++)
		if (*c >= '0' && *c <= '9' && (n > 0 || *c != '0'))
			buf[n++] = *c;
	while (n > 1 && buf[n - 1] == '0')
		n--;
	buf[n] = '\0';
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void)
{
	/* xorshift64*: deterministic, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Loads text with tl_render_load_json and parses it into a one-row vector. */
typedef struct parsed {
	int rc;
	uint8_t valid;
	uint8_t b;
	int32_t i32;
	int64_t i64;
	float f32;
	double f64;
	tl_bytes bytes;
	tl_error err;
} parsed;

static tl_arena parse_arena;

static parsed parse_text(const tl_pq_column *col, const char *json_text)
{
	parsed p;
	memset(&p, 0, sizeof(p));
	p.valid = 7;
	if (parse_arena.block_size == 0)
		tl_arena_init(&parse_arena, 4096);
	tl_error_clear(&p.err);
	json_t *json = tl_render_load_json(json_text, strlen(json_text), &p.err);
	if (json == NULL) {
		p.rc = -1;
		return p;
	}
	tl_vector vec = {.valid = col->required ? NULL : &p.valid};
	switch (col->physical) {
	case TL_PQ_BOOLEAN: vec.v.b = &p.b; break;
	case TL_PQ_INT32: vec.v.i32 = &p.i32; break;
	case TL_PQ_INT64:
	case TL_PQ_INT96: vec.v.i64 = &p.i64; break;
	case TL_PQ_FLOAT: vec.v.f32 = &p.f32; break;
	case TL_PQ_DOUBLE: vec.v.f64 = &p.f64; break;
	default: vec.v.bytes = &p.bytes; break;
	}
	p.rc = tl_render_parse_value(col, json, &vec, 0, &parse_arena, &p.err);
	json_decref(json);
	return p;
}

/* Renders the parsed value again, for round trips of byte-array kinds. */
static const char *render_parsed(const tl_pq_column *col, const parsed *p)
{
	switch (col->physical) {
	case TL_PQ_INT32: return render_i32(col, p->i32);
	case TL_PQ_INT64: return render_i64(col, p->i64);
	case TL_PQ_FLOAT: return render_f32(p->f32);
	case TL_PQ_DOUBLE: return render_f64(p->f64);
	default: return render_bytes(col, p->bytes.ptr, p->bytes.len);
	}
}

/* A parse failure whose message contains `needle`. */
#define CHECK_PARSE_FAILS(col, json_text, needle)                                    \
	do {                                                                             \
		parsed p_ = parse_text((col), (json_text));                                  \
		if (p_.rc == 0) {                                                            \
			tl_test_fail(__FILE__, __LINE__, "parsing %s succeeded", (json_text));   \
			return;                                                                  \
		}                                                                            \
		if (strstr(p_.err.message, (needle)) == NULL) {                              \
			tl_test_fail(__FILE__, __LINE__, "parsing %s: message \"%s\" lacks \"%s\"", \
			             (json_text), p_.err.message, (needle));                     \
			return;                                                                  \
		}                                                                            \
	} while (0)

/* ---------------------------------------------------------------- scalars */

TEST(render_null_and_boolean)
{
	tl_pq_column col = column(TL_PQ_BOOLEAN, TL_PQ_LOGICAL_NONE);
	uint8_t values[3] = {1, 0, 1}, valid[3] = {1, 1, 0};
	tl_vector vec = {.valid = valid, .v.b = values};
	tl_buf_reset(&text);
	for (int i = 0; i < 3; i++)
		tl_render_value(&col, &vec, i, &text);
	CHECK_STR(finish(), "truefalsenull");
}

TEST(render_integers)
{
	tl_pq_column i32 = column(TL_PQ_INT32, TL_PQ_LOGICAL_NONE);
	tl_pq_column i64 = column(TL_PQ_INT64, TL_PQ_LOGICAL_NONE);
	CHECK_STR(render_i32(&i32, 0), "0");
	CHECK_STR(render_i32(&i32, INT32_MIN), "-2147483648");
	CHECK_STR(render_i32(&i32, INT32_MAX), "2147483647");
	CHECK_STR(render_i64(&i64, INT64_MIN), "-9223372036854775808");
	CHECK_STR(render_i64(&i64, INT64_MAX), "9223372036854775807");
	CHECK_STR(render_i64(&i64, -1), "-1");

	tl_pq_column u8 = int_column(TL_PQ_INT32, 8, false);
	tl_pq_column u32 = int_column(TL_PQ_INT32, 32, false);
	tl_pq_column u64 = int_column(TL_PQ_INT64, 64, false);
	tl_pq_column s16 = int_column(TL_PQ_INT32, 16, true);
	CHECK_STR(render_i32(&u8, 255), "255");
	CHECK_STR(render_i32(&u32, -1), "4294967295");
	CHECK_STR(render_i64(&u64, -1), "18446744073709551615");
	CHECK_STR(render_i64(&u64, INT64_MIN), "9223372036854775808");
	CHECK_STR(render_i32(&s16, -32768), "-32768");
}

TEST(render_double_shortest)
{
	CHECK_STR(render_f64(0.1), "0.1");
	CHECK_STR(render_f64(1.0 / 3), "0.3333333333333333");
	CHECK_STR(render_f64(100), "100");
	CHECK_STR(render_f64(-2.5), "-2.5");
	CHECK_STR(render_f64(1e300), "1e+300");
	CHECK_STR(render_f64(5e-324), "5e-324");
	CHECK_STR(render_f64(2.2250738585072014e-308), "2.2250738585072014e-308");
	CHECK_STR(render_f64(DBL_MAX), "1.7976931348623157e+308");
	CHECK_STR(render_f64(0.1 + 0.2), "0.30000000000000004");
	CHECK_STR(render_f64(123456789012345678.0), "123456789012345680");
	CHECK_STR(render_f64(1e20), "100000000000000000000");
	CHECK_STR(render_f64(1e21), "1e+21");
	CHECK_STR(render_f64(-1.5e21), "-1.5e+21");
	CHECK_STR(render_f64(0.000001), "0.000001");
	CHECK_STR(render_f64(1.5e-7), "1.5e-7");
	CHECK_STR(render_f64(123.456), "123.456");
	CHECK_STR(render_f64(2.5), "2.5");
	CHECK_STR(render_f64(0.125), "0.125");
	CHECK_STR(render_f64(9.5), "9.5"); /* rounding 95 to one digit carries */
	CHECK_STR(render_f64(0.3), "0.3");
	CHECK_STR(render_f64(0.0), "0");
	CHECK_STR(render_f64(-0.0), "-0.0");
	CHECK_STR(render_f64(NAN), "\"NaN\"");
	CHECK_STR(render_f64(INFINITY), "\"Infinity\"");
	CHECK_STR(render_f64(-INFINITY), "\"-Infinity\"");
}

TEST(render_float_shortest)
{
	CHECK_STR(render_f32(0.1f), "0.1");
	CHECK_STR(render_f32(1.0f / 3), "0.33333334");
	CHECK_STR(render_f32(16777216.0f), "16777216");
	CHECK_STR(render_f32(1234.5625f), "1234.5625"); /* 9 digits end in an exact 50 */
	CHECK_STR(render_f32(3.4e38f), "3.4e+38");
	CHECK_STR(render_f32(FLT_MAX), "3.4028235e+38");
	CHECK_STR(render_f32(FLT_MIN), "1.1754944e-38");
	CHECK_STR(render_f32(1.4e-45f), "1e-45");          /* the smallest denormal */
	CHECK_STR(render_f32(1.17549421e-38f), "1.1754942e-38"); /* the largest denormal */
	CHECK_STR(render_f32(-0.0f), "-0.0");
	CHECK_STR(render_f32(NAN), "\"NaN\"");
	CHECK_STR(render_f32(-INFINITY), "\"-Infinity\"");
}

/*
 * At a power of two the values that read back reach only half as far below
 * as above, so the shortest digits can be the nearest decimal's upper
 * neighbour (expected digits as Python's repr and numpy print them).
 */
TEST(render_shortest_at_powers_of_two)
{
	CHECK_STR(render_f64(ldexp(1, -1017)), "7.120236347223045e-307");
	CHECK_STR(render_f64(ldexp(1, -1007)), "7.291122019556398e-304");
	CHECK_STR(render_f64(ldexp(1, 90)), "1.2379400392853803e+27");
	CHECK_STR(render_f32(ldexpf(1, -96)), "1.2621775e-29");
	CHECK_STR(render_f32(ldexpf(1, 87)), "1.5474251e+26");
	CHECK_STR(render_f32(ldexpf(1, 90)), "1.2379401e+27");
}

/* The fast path of the shortest-digits search must agree with the plain rule. */
TEST(render_shortest_matches_plain_search)
{
	char want[40], got[40];
	for (int i = 0; i < 200000; i++) {
		uint64_t bits = next_random();
		double d;
		float f;
		uint32_t fbits = (uint32_t)(bits >> 32);
		if (i % 4 == 0)
			bits &= 0x000FFFFFFFFFFFFFull; /* subnormal doubles */
		if (i % 4 == 1)
			fbits &= 0x007FFFFFu; /* subnormal floats */
		if (i % 4 == 2)
			bits = (uint64_t)(next_random() % 100000) * (i % 8 == 2 ? 1000 : 1); /* small integers */
		memcpy(&d, &bits, sizeof(d));
		memcpy(&f, &fbits, sizeof(f));
		if (i % 4 == 2) {
			d = (double)bits / 1000;
			f = (float)d;
		}
		if (isfinite(d) && d != 0) {
			naive_digits(d, false, want, sizeof(want));
			const char *text = render_f64(d);
			rendered_digits(text, got, sizeof(got));
			if (strcmp(got, want) != 0 || strtod(text, NULL) != d) {
				tl_test_fail(__FILE__, __LINE__, "double %a: rendered %s, expected digits %s", d, text, want);
				return;
			}
		}
		if (isfinite(f) && f != 0) {
			naive_digits((double)f, true, want, sizeof(want));
			const char *text = render_f32(f);
			rendered_digits(text, got, sizeof(got));
			if (strcmp(got, want) != 0 || strtof(text, NULL) != f) {
				tl_test_fail(__FILE__, __LINE__, "float %a: rendered %s, expected digits %s", (double)f, text,
				             want);
				return;
			}
		}
	}
}

/* ---------------------------------------------------------------- decimals */

TEST(render_decimal_integers)
{
	tl_pq_column d32 = decimal_column(TL_PQ_INT32, 9, 2, 0);
	CHECK_STR(render_i32(&d32, -5), "\"-0.05\"");
	CHECK_STR(render_i32(&d32, 5), "\"0.05\"");
	CHECK_STR(render_i32(&d32, 12345), "\"123.45\"");
	CHECK_STR(render_i32(&d32, -100), "\"-1.00\"");
	CHECK_STR(render_i32(&d32, 0), "\"0.00\"");
	CHECK_STR(render_i32(&d32, 999999999), "\"9999999.99\"");

	tl_pq_column d32s0 = decimal_column(TL_PQ_INT32, 9, 0, 0);
	CHECK_STR(render_i32(&d32s0, -42), "\"-42\"");
	CHECK_STR(render_i32(&d32s0, 0), "\"0\"");

	tl_pq_column d64 = decimal_column(TL_PQ_INT64, 18, 4, 0);
	CHECK_STR(render_i64(&d64, INT64_MIN), "\"-922337203685477.5808\"");
	CHECK_STR(render_i64(&d64, INT64_MAX), "\"922337203685477.5807\"");

	tl_pq_column d64s18 = decimal_column(TL_PQ_INT64, 18, 18, 0);
	CHECK_STR(render_i64(&d64s18, 1), "\"0.000000000000000001\"");
	CHECK_STR(render_i64(&d64s18, -999999999999999999), "\"-0.999999999999999999\"");
}

TEST(render_decimal_bytes)
{
	/* 10^38 - 1 = 0x4B3B4CA85A86C47A098A223FFFFFFFFF */
	static const uint8_t max38[16] = {0x4B, 0x3B, 0x4C, 0xA8, 0x5A, 0x86, 0xC4, 0x7A,
	                                  0x09, 0x8A, 0x22, 0x3F, 0xFF, 0xFF, 0xFF, 0xFF};
	uint8_t min38[16];
	for (int i = 0; i < 16; i++)
		min38[i] = (uint8_t)~max38[i];
	for (int i = 15; i >= 0; i--)
		if (++min38[i] != 0)
			break;

	tl_pq_column fixed = decimal_column(TL_PQ_FIXED_LEN_BYTE_ARRAY, 38, 0, 16);
	CHECK_STR(render_bytes(&fixed, max38, 16), "\"99999999999999999999999999999999999999\"");
	CHECK_STR(render_bytes(&fixed, min38, 16), "\"-99999999999999999999999999999999999999\"");
	fixed.scale = 10;
	CHECK_STR(render_bytes(&fixed, max38, 16), "\"9999999999999999999999999999.9999999999\"");
	CHECK_STR(render_bytes(&fixed, min38, 16), "\"-9999999999999999999999999999.9999999999\"");
	fixed.scale = 38;
	CHECK_STR(render_bytes(&fixed, min38, 16), "\"-0.99999999999999999999999999999999999999\"");

	/* 2^127 - 1 and -2^127, the extremes of 16 bytes */
	uint8_t big[16];
	memset(big, 0xFF, 16);
	big[0] = 0x7F;
	fixed.scale = 0;
	CHECK_STR(render_bytes(&fixed, big, 16), "\"170141183460469231731687303715884105727\"");
	memset(big, 0, 16);
	big[0] = 0x80;
	CHECK_STR(render_bytes(&fixed, big, 16), "\"-170141183460469231731687303715884105728\"");

	/* Lengths that are not a multiple of 4, wider than 38 digits, and empty. */
	tl_pq_column var = decimal_column(TL_PQ_BYTE_ARRAY, 80, 2, 0);
	static const uint8_t minus_one[1] = {0xFF}, minus_128[1] = {0x80}, v300[3] = {0x00, 0x01, 0x2C};
	CHECK_STR(render_bytes(&var, minus_one, 1), "\"-0.01\"");
	CHECK_STR(render_bytes(&var, minus_128, 1), "\"-1.28\"");
	CHECK_STR(render_bytes(&var, v300, 3), "\"3.00\"");
	CHECK_STR(render_bytes(&var, NULL, 0), "\"0.00\"");
	uint8_t p255[33] = {0};
	p255[1] = 0x80; /* 2^255 */
	var.scale = 0;
	CHECK_STR(render_bytes(&var, p255, 33),
	          "\"57896044618658097711785492504343953926634992332820282019728792003956564819968\"");
	CHECK_STR(render_bytes(&var, p255 + 1, 32),
	          "\"-57896044618658097711785492504343953926634992332820282019728792003956564819968\"");
}

/* ---------------------------------------------------------------- strings and bytes */

TEST(render_string_escapes)
{
	CHECK_STR(render_string("plain"), "\"plain\"");
	CHECK_STR(render_string(""), "\"\"");
	CHECK_STR(render_string("say \"hi\" \\ bye"), "\"say \\\"hi\\\" \\\\ bye\"");
	CHECK_STR(render_string("\b\f\n\r\t\x01\x1f\x7f"), "\"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"");
	CHECK_STR(render_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	tl_pq_column col = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_STRING);
	CHECK_STR(render_bytes(&col, "a\0b", 3), "\"a\\u0000b\"");
}

TEST(render_string_invalid_utf8)
{
#define FFFD "\xef\xbf\xbd"
	CHECK_STR(render_string("\xff"), "\"" FFFD "\"");
	CHECK_STR(render_string("a\x80z"), "\"a" FFFD "z\"");
	/* A truncated sequence is one replacement; the next byte starts fresh. */
	CHECK_STR(render_string("\xe2\x82 x"), "\"" FFFD " x\"");
	CHECK_STR(render_string("\xe2\x82"), "\"" FFFD "\"");
	CHECK_STR(render_string("\xf0\x9f\x98"), "\"" FFFD "\"");
	/* Overlongs, surrogates and code points past U+10FFFF, as Python's "replace" does. */
	CHECK_STR(render_string("\xc0\xaf"), "\"" FFFD FFFD "\"");
	CHECK_STR(render_string("\xe0\x80\xaf"), "\"" FFFD FFFD FFFD "\"");
	CHECK_STR(render_string("\xed\xa0\x80"), "\"" FFFD FFFD FFFD "\"");
	CHECK_STR(render_string("\xf4\x90\x80\x80"), "\"" FFFD FFFD FFFD FFFD "\"");
	CHECK_STR(render_string("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF is fine */
#undef FFFD
}

TEST(render_json_and_enum_as_strings)
{
	tl_pq_column json = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_JSON);
	tl_pq_column enm = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_ENUM);
	CHECK_STR(render_bytes(&json, "{\"a\":[1]}", 9), "\"{\\\"a\\\":[1]}\"");
	CHECK_STR(render_bytes(&enm, "RED", 3), "\"RED\"");
}

TEST(render_binary_base64)
{
	tl_pq_column bin = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_NONE);
	CHECK_STR(render_bytes(&bin, "", 0), "\"\"");
	CHECK_STR(render_bytes(&bin, "f", 1), "\"Zg==\"");
	CHECK_STR(render_bytes(&bin, "fo", 2), "\"Zm8=\"");
	CHECK_STR(render_bytes(&bin, "foo", 3), "\"Zm9v\"");
	CHECK_STR(render_bytes(&bin, "foobar", 6), "\"Zm9vYmFy\"");
	CHECK_STR(render_bytes(&bin, "\xff\xfe\x00", 3), "\"//4A\"");
	tl_pq_column fixed = column(TL_PQ_FIXED_LEN_BYTE_ARRAY, TL_PQ_LOGICAL_NONE);
	fixed.type_length = 4;
	CHECK_STR(render_bytes(&fixed, "\x00\x01\x02\x03", 4), "\"AAECAw==\"");
}

TEST(render_uuid)
{
	tl_pq_column col = column(TL_PQ_FIXED_LEN_BYTE_ARRAY, TL_PQ_LOGICAL_UUID);
	col.type_length = 16;
	static const uint8_t id[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
	                               0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF};
	CHECK_STR(render_bytes(&col, id, 16), "\"00112233-4455-6677-8899-aabbccddeeff\"");
}

/* ---------------------------------------------------------------- dates and times */

TEST(render_dates)
{
	tl_pq_column col = column(TL_PQ_INT32, TL_PQ_LOGICAL_DATE);
	CHECK_STR(render_i32(&col, 0), "\"1970-01-01\"");
	CHECK_STR(render_i32(&col, -1), "\"1969-12-31\"");
	CHECK_STR(render_i32(&col, 59), "\"1970-03-01\"");
	CHECK_STR(render_i32(&col, 11016), "\"2000-02-29\"");
	CHECK_STR(render_i32(&col, 19782), "\"2024-02-29\"");
	CHECK_STR(render_i32(&col, -719162), "\"0001-01-01\"");
	CHECK_STR(render_i32(&col, 2932896), "\"9999-12-31\"");
	CHECK_STR(render_i32(&col, 2932897), "\"+10000-01-01\"");
	CHECK_STR(render_i32(&col, -719163), "\"0000-12-31\"");
	CHECK_STR(render_i32(&col, -719528), "\"0000-01-01\"");
	CHECK_STR(render_i32(&col, -719529), "\"-0001-12-31\"");
	CHECK_STR(render_i32(&col, -735525), "\"-0044-03-15\"");
	/* The ends of the int32 range, as java.time.LocalDate.ofEpochDay gives them. */
	CHECK_STR(render_i32(&col, INT32_MIN), "\"-5877641-06-23\"");
	CHECK_STR(render_i32(&col, INT32_MAX), "\"+5881580-07-11\"");
}

TEST(render_timestamps)
{
	tl_pq_column us = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_MICROS, false);
	tl_pq_column us_utc = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_MICROS, true);
	tl_pq_column ms = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_MILLIS, true);
	tl_pq_column ns = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_NANOS, false);
	tl_pq_column int96 = time_column(TL_PQ_INT96, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_NANOS, false);

	CHECK_STR(render_i64(&us, 0), "\"1970-01-01T00:00:00.000000\"");
	CHECK_STR(render_i64(&us_utc, 0), "\"1970-01-01T00:00:00.000000Z\"");
	CHECK_STR(render_i64(&us, 1700000000123456), "\"2023-11-14T22:13:20.123456\"");
	/* Before 1970 the fraction still counts forward from the second (floor division). */
	CHECK_STR(render_i64(&us, -1), "\"1969-12-31T23:59:59.999999\"");
	CHECK_STR(render_i64(&us, -1000000), "\"1969-12-31T23:59:59.000000\"");
	CHECK_STR(render_i64(&us, -86400000001), "\"1969-12-30T23:59:59.999999\"");
	CHECK_STR(render_i64(&ms, -1500), "\"1969-12-31T23:59:58.500000Z\"");
	CHECK_STR(render_i64(&ms, 1), "\"1970-01-01T00:00:00.001000Z\"");
	CHECK_STR(render_i64(&ns, -1), "\"1969-12-31T23:59:59.999999999\"");
	CHECK_STR(render_i64(&int96, 1), "\"1970-01-01T00:00:00.000000001\"");
	/* The int64 extremes (Spark's and pandas' documented ranges). */
	CHECK_STR(render_i64(&us_utc, INT64_MIN), "\"-290308-12-21T19:59:05.224192Z\"");
	CHECK_STR(render_i64(&us_utc, INT64_MAX), "\"+294247-01-10T04:00:54.775807Z\"");
	CHECK_STR(render_i64(&ns, INT64_MIN), "\"1677-09-21T00:12:43.145224192\"");
	CHECK_STR(render_i64(&ns, INT64_MAX), "\"2262-04-11T23:47:16.854775807\"");
	CHECK_STR(render_i64(&us, -62135596800000000), "\"0001-01-01T00:00:00.000000\"");
}

TEST(render_times)
{
	tl_pq_column ms = time_column(TL_PQ_INT32, TL_PQ_LOGICAL_TIME, TL_PQ_MILLIS, false);
	tl_pq_column us = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIME, TL_PQ_MICROS, false);
	tl_pq_column ns = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIME, TL_PQ_NANOS, true);
	CHECK_STR(render_i32(&ms, 0), "\"00:00:00.000000\"");
	CHECK_STR(render_i32(&ms, 86399999), "\"23:59:59.999000\"");
	CHECK_STR(render_i64(&us, 3723000001), "\"01:02:03.000001\"");
	CHECK_STR(render_i64(&us, 86399999999), "\"23:59:59.999999\"");
	CHECK_STR(render_i64(&ns, 3723000000001), "\"01:02:03.000000001\"");
	/* Out of range values are invalid Parquet but still print as what they are. */
	CHECK_STR(render_i64(&us, -1), "\"-00:00:00.000001\"");
}

/* ---------------------------------------------------------------- rows and statistics */

TEST(render_row_in_batch_order)
{
	tl_pq_column cols[3] = {column(TL_PQ_INT64, TL_PQ_LOGICAL_NONE), column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_STRING),
	                        column(TL_PQ_DOUBLE, TL_PQ_LOGICAL_NONE)};
	cols[0].name = "id";
	cols[1].name = "na\"me";
	cols[2].name = "x";
	tl_pq_schema schema = {3, cols};

	int64_t ids[2] = {1, 2};
	tl_bytes names[2] = {{(const uint8_t *)"a", 1}, {(const uint8_t *)"b", 1}};
	uint8_t names_valid[2] = {1, 0};
	double xs[2] = {0.5, -1};
	tl_vector vecs[3] = {{.v.i64 = ids}, {.valid = names_valid, .v.bytes = names}, {.v.f64 = xs}};
	tl_pq_batch batch = {.ncolumns = 3, .nrows = 2, .capacity = 2, .columns = vecs};

	tl_buf_reset(&text);
	tl_render_row(&schema, NULL, &batch, 0, &text);
	tl_buf_append_byte(&text, '\n');
	tl_render_row(&schema, NULL, &batch, 1, &text);
	CHECK_STR(finish(), "{\"id\":1,\"na\\\"me\":\"a\",\"x\":0.5}\n{\"id\":2,\"na\\\"me\":null,\"x\":-1}");

	/* A projected batch: columns x then id. */
	int projection[2] = {2, 0};
	tl_vector projected[2] = {{.v.f64 = xs}, {.v.i64 = ids}};
	tl_pq_batch pbatch = {.ncolumns = 2, .nrows = 2, .capacity = 2, .columns = projected};
	tl_buf_reset(&text);
	tl_render_row(&schema, projection, &pbatch, 1, &text);
	CHECK_STR(finish(), "{\"x\":-1,\"id\":2}");
}

TEST(render_statistics_like_values)
{
	union tl_pq_stat_value v;
	tl_pq_column u64 = int_column(TL_PQ_INT64, 64, false);
	v.i64 = -1;
	tl_buf_reset(&text);
	tl_render_stat(&u64, &v, &text);
	CHECK_STR(finish(), "18446744073709551615");

	tl_pq_column d = decimal_column(TL_PQ_FIXED_LEN_BYTE_ARRAY, 4, 2, 2);
	v.bytes.ptr = (const uint8_t *)"\xff\x38"; /* -200 */
	v.bytes.len = 2;
	tl_buf_reset(&text);
	tl_render_stat(&d, &v, &text);
	CHECK_STR(finish(), "\"-2.00\"");

	tl_pq_column b = column(TL_PQ_BOOLEAN, TL_PQ_LOGICAL_NONE);
	v.b = true;
	tl_buf_reset(&text);
	tl_render_stat(&b, &v, &text);
	CHECK_STR(finish(), "true");

	tl_pq_column f = column(TL_PQ_FLOAT, TL_PQ_LOGICAL_NONE);
	v.f32 = 0.1f;
	tl_buf_reset(&text);
	tl_render_stat(&f, &v, &text);
	CHECK_STR(finish(), "0.1");
}

/* ---------------------------------------------------------------- loading JSON */

TEST(render_load_json_wide_integers)
{
	tl_error err;
	tl_error_clear(&err);
	const char *line = "{\"a\": 18446744073709551615, \"b\": -9223372036854775809, \"c\": 9223372036854775807, "
	                   "\"d\": \"123456789012345678901234567890\", \"e\": [1.5e300, -0]}";
	json_t *json = tl_render_load_json(line, strlen(line), &err);
	CHECK(json != NULL);
	CHECK(json_is_string(json_object_get(json, "a")));
	CHECK_STR(json_string_value(json_object_get(json, "a")), "18446744073709551615");
	CHECK_STR(json_string_value(json_object_get(json, "b")), "-9223372036854775809");
	CHECK(json_is_integer(json_object_get(json, "c")));
	CHECK(json_integer_value(json_object_get(json, "c")) == INT64_MAX);
	CHECK_STR(json_string_value(json_object_get(json, "d")), "123456789012345678901234567890");
	CHECK(json_is_real(json_array_get(json_object_get(json, "e"), 0)));
	json_decref(json);

	CHECK(tl_render_load_json("{\"a\": 1,}", 9, &err) == NULL);
	CHECK(err.code == TL_ERR_INVALID);
	CHECK(strstr(err.message, "invalid JSON") != NULL);
	tl_error_clear(&err);
	CHECK(tl_render_load_json("{\"a\": 1, \"a\": 2}", 16, &err) == NULL);
}

/* ---------------------------------------------------------------- round trips */

/* parse(render(x)) renders to the same text, and (for numbers) the same value. */
TEST(render_parse_round_trip_numbers)
{
	tl_pq_column u64 = int_column(TL_PQ_INT64, 64, false);
	tl_pq_column i64 = column(TL_PQ_INT64, TL_PQ_LOGICAL_NONE);
	tl_pq_column u32 = int_column(TL_PQ_INT32, 32, false);
	tl_pq_column i8 = int_column(TL_PQ_INT32, 8, true);
	static const int64_t wide[] = {0, 1, -1, INT64_MIN, INT64_MAX, 4294967296, -4294967297};
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++) {
		char json[32];
		snprintf(json, sizeof(json), "%s", render_i64(&i64, wide[i]));
		parsed p = parse_text(&i64, json);
		CHECK_OK(p.rc, &p.err);
		CHECK(p.i64 == wide[i]);
		CHECK(p.valid == 1);
		snprintf(json, sizeof(json), "%s", render_i64(&u64, wide[i]));
		p = parse_text(&u64, json);
		CHECK_OK(p.rc, &p.err);
		CHECK(p.i64 == wide[i]);
	}
	parsed p = parse_text(&u32, "4294967295");
	CHECK_OK(p.rc, &p.err);
	CHECK_INT(p.i32, -1);
	p = parse_text(&i8, "-128");
	CHECK_OK(p.rc, &p.err);
	CHECK_INT(p.i32, -128);

	tl_pq_column f64 = column(TL_PQ_DOUBLE, TL_PQ_LOGICAL_NONE);
	tl_pq_column f32 = column(TL_PQ_FLOAT, TL_PQ_LOGICAL_NONE);
	for (int i = 0; i < 20000; i++) {
		uint64_t bits = next_random();
		double d;
		float f;
		uint32_t fbits = (uint32_t)bits;
		memcpy(&d, &bits, sizeof(d));
		memcpy(&f, &fbits, sizeof(f));
		char json[48];
		snprintf(json, sizeof(json), "%s", render_f64(d));
		p = parse_text(&f64, json);
		CHECK_OK(p.rc, &p.err);
		if (isnan(d))
			CHECK(isnan(p.f64));
		else if (memcmp(&p.f64, &d, sizeof(d)) != 0) {
			tl_test_fail(__FILE__, __LINE__, "double %s read back as %a", json, p.f64);
			return;
		}
		snprintf(json, sizeof(json), "%s", render_f32(f));
		p = parse_text(&f32, json);
		CHECK_OK(p.rc, &p.err);
		if (isnan(f))
			CHECK(isnan(p.f32));
		else if (memcmp(&p.f32, &f, sizeof(f)) != 0) {
			tl_test_fail(__FILE__, __LINE__, "float %s read back as %a", json, (double)p.f32);
			return;
		}
	}
	p = parse_text(&f64, "-0.0");
	CHECK_OK(p.rc, &p.err);
	CHECK(p.f64 == 0 && signbit(p.f64));
	p = parse_text(&f32, "\"-Infinity\"");
	CHECK_OK(p.rc, &p.err);
	CHECK(isinf(p.f32) && p.f32 < 0);
	p = parse_text(&f64, "3");
	CHECK_OK(p.rc, &p.err);
	CHECK(p.f64 == 3.0);
}

TEST(render_parse_round_trip_text_kinds)
{
	static const char *const decimals[] = {"\"-0.05\"", "\"0.00\"", "\"9999999.99\"", "\"-12.30\""};
	tl_pq_column d32 = decimal_column(TL_PQ_INT32, 9, 2, 0);
	tl_pq_column d64 = decimal_column(TL_PQ_INT64, 18, 2, 0);
	tl_pq_column d16 = decimal_column(TL_PQ_FIXED_LEN_BYTE_ARRAY, 38, 2, 16);
	tl_pq_column dvar = decimal_column(TL_PQ_BYTE_ARRAY, 40, 2, 0);
	const tl_pq_column *dcols[] = {&d32, &d64, &d16, &dvar};
	for (size_t c = 0; c < 4; c++)
		for (size_t i = 0; i < 4; i++) {
			parsed p = parse_text(dcols[c], decimals[i]);
			CHECK_OK(p.rc, &p.err);
			CHECK_STR(render_parsed(dcols[c], &p), decimals[i]);
		}
	static const char *const wide[] = {"\"999999999999999999999999999999999999.99\"",
	                                   "\"-999999999999999999999999999999999999.99\"", "\"-0.01\"",
	                                   "\"1.28\"", "\"-1.28\"", "\"-1.29\""};
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++) {
		parsed p = parse_text(&d16, wide[i]);
		CHECK_OK(p.rc, &p.err);
		CHECK_INT(p.bytes.len, 16);
		CHECK_STR(render_parsed(&d16, &p), wide[i]);
		p = parse_text(&dvar, wide[i]);
		CHECK_OK(p.rc, &p.err);
		CHECK_STR(render_parsed(&dvar, &p), wide[i]);
	}
	/* BYTE_ARRAY decimals take the fewest bytes: -1.28 is -128, one byte. */
	parsed p = parse_text(&dvar, "\"-1.28\"");
	CHECK_INT(p.bytes.len, 1);
	p = parse_text(&dvar, "\"1.28\"");
	CHECK_INT(p.bytes.len, 2);

	static const char *const strings[] = {"\"\"", "\"h\\u00e9llo \\\" \\\\ \\n\"", "\"\\u0000x\""};
	tl_pq_column str = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_STRING);
	for (size_t i = 0; i < 3; i++) {
		p = parse_text(&str, strings[i]);
		CHECK_OK(p.rc, &p.err);
	}
	p = parse_text(&str, "\"a\\u0000b\"");
	CHECK_INT(p.bytes.len, 3);
	CHECK_STR(render_parsed(&str, &p), "\"a\\u0000b\"");

	tl_pq_column bin = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_NONE);
	static const char *const blobs[] = {"\"\"", "\"Zg==\"", "\"Zm8=\"", "\"Zm9vYmFy\"", "\"//4A\""};
	for (size_t i = 0; i < 5; i++) {
		p = parse_text(&bin, blobs[i]);
		CHECK_OK(p.rc, &p.err);
		CHECK_STR(render_parsed(&bin, &p), blobs[i]);
	}

	tl_pq_column uuid = column(TL_PQ_FIXED_LEN_BYTE_ARRAY, TL_PQ_LOGICAL_UUID);
	uuid.type_length = 16;
	p = parse_text(&uuid, "\"00112233-4455-6677-8899-AABBCCDDEEFF\"");
	CHECK_OK(p.rc, &p.err);
	CHECK_STR(render_parsed(&uuid, &p), "\"00112233-4455-6677-8899-aabbccddeeff\"");
}

TEST(render_parse_round_trip_dates_and_times)
{
	tl_pq_column date = column(TL_PQ_INT32, TL_PQ_LOGICAL_DATE);
	static const int32_t days[] = {0, -1, 59, 11016, -719162, 2932896, 2932897, -719163, -719529, INT32_MIN,
	                               INT32_MAX};
	for (size_t i = 0; i < sizeof(days) / sizeof(days[0]); i++) {
		char json[32];
		snprintf(json, sizeof(json), "%s", render_i32(&date, days[i]));
		parsed p = parse_text(&date, json);
		CHECK_OK(p.rc, &p.err);
		CHECK_INT(p.i32, days[i]);
	}
	for (int i = 0; i < 20000; i++) {
		int32_t d = (int32_t)(uint32_t)next_random();
		char json[32];
		snprintf(json, sizeof(json), "%s", render_i32(&date, d));
		parsed p = parse_text(&date, json);
		CHECK_OK(p.rc, &p.err);
		CHECK_INT(p.i32, d);
	}

	tl_pq_column cols[] = {time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_MICROS, false),
	                       time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_MICROS, true),
	                       time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_MILLIS, false),
	                       time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_NANOS, true)};
	static const int64_t stamps[] = {0, -1, 1, -1500, 1700000000123456, INT64_MIN, INT64_MAX, -86400000001};
	for (size_t c = 0; c < 4; c++)
		for (size_t i = 0; i < sizeof(stamps) / sizeof(stamps[0]); i++) {
			char json[48];
			snprintf(json, sizeof(json), "%s", render_i64(&cols[c], stamps[i]));
			parsed p = parse_text(&cols[c], json);
			CHECK_OK(p.rc, &p.err);
			if (p.i64 != stamps[i]) {
				tl_test_fail(__FILE__, __LINE__, "%s read back as %" PRId64 ", not %" PRId64, json, p.i64,
				             stamps[i]);
				return;
			}
		}
	for (int i = 0; i < 20000; i++) {
		int64_t v = (int64_t)next_random();
		char json[48];
		snprintf(json, sizeof(json), "%s", render_i64(&cols[i % 4], v));
		parsed p = parse_text(&cols[i % 4], json);
		CHECK_OK(p.rc, &p.err);
		CHECK(p.i64 == v);
	}
	parsed p = parse_text(&cols[0], "\"2023-11-14T22:13:20.5\"");
	CHECK_OK(p.rc, &p.err);
	CHECK(p.i64 == 1700000000500000);

	tl_pq_column tms = time_column(TL_PQ_INT32, TL_PQ_LOGICAL_TIME, TL_PQ_MILLIS, false);
	tl_pq_column tus = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIME, TL_PQ_MICROS, false);
	tl_pq_column tns = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIME, TL_PQ_NANOS, false);
	p = parse_text(&tms, "\"23:59:59.999000\"");
	CHECK_OK(p.rc, &p.err);
	CHECK_INT(p.i32, 86399999);
	p = parse_text(&tus, render_i64(&tus, 3723000001));
	CHECK_OK(p.rc, &p.err);
	CHECK(p.i64 == 3723000001);
	p = parse_text(&tns, "\"01:02:03.000000001\"");
	CHECK_OK(p.rc, &p.err);
	CHECK(p.i64 == 3723000000001);
}

TEST(render_parse_plain_numbers_as_decimals)
{
	tl_pq_column d = decimal_column(TL_PQ_INT64, 18, 2, 0);
	parsed p = parse_text(&d, "0.1");
	CHECK_OK(p.rc, &p.err);
	CHECK(p.i64 == 10);
	p = parse_text(&d, "-12");
	CHECK_OK(p.rc, &p.err);
	CHECK(p.i64 == -1200);
	p = parse_text(&d, "1e-2");
	CHECK_OK(p.rc, &p.err);
	CHECK(p.i64 == 1);
	p = parse_text(&d, "\"7.5\""); /* fewer digits than the scale are padded */
	CHECK_OK(p.rc, &p.err);
	CHECK(p.i64 == 750);
	tl_pq_column wide = decimal_column(TL_PQ_FIXED_LEN_BYTE_ARRAY, 38, 0, 16);
	p = parse_text(&wide, "99999999999999999999999999999999999999");
	CHECK_OK(p.rc, &p.err);
	CHECK_STR(render_parsed(&wide, &p), "\"99999999999999999999999999999999999999\"");
	p = parse_text(&wide, "1.5e+20");
	CHECK_OK(p.rc, &p.err);
	CHECK_STR(render_parsed(&wide, &p), "\"150000000000000000000\"");
}

/* ---------------------------------------------------------------- bad input */

TEST(render_parse_rejects_bad_values)
{
	tl_pq_column i8 = int_column(TL_PQ_INT32, 8, true);
	tl_pq_column u64 = int_column(TL_PQ_INT64, 64, false);
	tl_pq_column i32 = column(TL_PQ_INT32, TL_PQ_LOGICAL_NONE);
	CHECK_PARSE_FAILS(&i8, "128", "signed 8-bit");
	CHECK_PARSE_FAILS(&i8, "-129", "signed 8-bit");
	CHECK_PARSE_FAILS(&i32, "2147483648", "signed 32-bit");
	CHECK_PARSE_FAILS(&i32, "1.5", "an integer");
	CHECK_PARSE_FAILS(&i32, "\"12x\"", "an integer");
	CHECK_PARSE_FAILS(&i32, "true", "an integer");
	CHECK_PARSE_FAILS(&u64, "-1", "unsigned 64-bit");
	CHECK_PARSE_FAILS(&u64, "18446744073709551616", "unsigned 64-bit");

	tl_pq_column b = column(TL_PQ_BOOLEAN, TL_PQ_LOGICAL_NONE);
	CHECK_PARSE_FAILS(&b, "1", "true or false");

	tl_pq_column f = column(TL_PQ_FLOAT, TL_PQ_LOGICAL_NONE);
	CHECK_PARSE_FAILS(&f, "1e39", "range of FLOAT");
	CHECK_PARSE_FAILS(&f, "\"nan\"", "a number");
	CHECK_PARSE_FAILS(&f, "[1]", "a number");

	tl_pq_column d = decimal_column(TL_PQ_INT32, 5, 2, 0);
	CHECK_PARSE_FAILS(&d, "\"1.234\"", "at most 2 digits after the point");
	CHECK_PARSE_FAILS(&d, "\"1000.00\"", "precision 5");
	CHECK_PARSE_FAILS(&d, "\"1.2.3\"", "decimal");
	CHECK_PARSE_FAILS(&d, "\"1e2\"", "decimal");
	CHECK_PARSE_FAILS(&d, "\".5\"", "decimal");
	CHECK_PARSE_FAILS(&d, "0.001", "decimal");
	tl_pq_column fixed = decimal_column(TL_PQ_FIXED_LEN_BYTE_ARRAY, 10, 0, 4);
	CHECK_PARSE_FAILS(&fixed, "\"2147483648\"", "fixed width");

	tl_pq_column date = column(TL_PQ_INT32, TL_PQ_LOGICAL_DATE);
	CHECK_PARSE_FAILS(&date, "\"2023-02-29\"", "a date");
	CHECK_PARSE_FAILS(&date, "\"2023-13-01\"", "a date");
	CHECK_PARSE_FAILS(&date, "\"23-01-01\"", "a date");
	CHECK_PARSE_FAILS(&date, "\"2023-01-01 \"", "a date");
	CHECK_PARSE_FAILS(&date, "\"+9999999-01-01\"", "DATE range");
	CHECK_PARSE_FAILS(&date, "19000", "a date");

	tl_pq_column ts = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_MICROS, false);
	tl_pq_column tstz = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_MICROS, true);
	tl_pq_column tsns = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIMESTAMP, TL_PQ_NANOS, false);
	CHECK_PARSE_FAILS(&ts, "\"2023-01-01T00:00:00.000000Z\"", "no zone");
	CHECK_PARSE_FAILS(&tstz, "\"2023-01-01T00:00:00.000000\"", "Z\"");
	CHECK_PARSE_FAILS(&ts, "\"2023-01-01T00:00:00.0000001\"", "timestamp");
	CHECK_PARSE_FAILS(&ts, "\"2023-01-01T24:00:00\"", "timestamp");
	CHECK_PARSE_FAILS(&tsns, "\"2300-01-01T00:00:00.000000000\"", "range");

	tl_pq_column t = time_column(TL_PQ_INT64, TL_PQ_LOGICAL_TIME, TL_PQ_MICROS, false);
	CHECK_PARSE_FAILS(&t, "\"12:60:00\"", "a time");
	CHECK_PARSE_FAILS(&t, "\"1:00:00\"", "a time");

	tl_pq_column uuid = column(TL_PQ_FIXED_LEN_BYTE_ARRAY, TL_PQ_LOGICAL_UUID);
	uuid.type_length = 16;
	CHECK_PARSE_FAILS(&uuid, "\"00112233-4455-6677-8899-aabbccddeefg\"", "UUID");
	CHECK_PARSE_FAILS(&uuid, "\"00112233445566778899aabbccddeeff\"", "UUID");

	tl_pq_column bin = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_NONE);
	CHECK_PARSE_FAILS(&bin, "\"Zg=\"", "base64");
	CHECK_PARSE_FAILS(&bin, "\"Zh==\"", "base64"); /* non-zero padding bits */
	CHECK_PARSE_FAILS(&bin, "\"Z===\"", "base64");
	CHECK_PARSE_FAILS(&bin, "\"Zm9v!A==\"", "base64");
	tl_pq_column fixed4 = column(TL_PQ_FIXED_LEN_BYTE_ARRAY, TL_PQ_LOGICAL_NONE);
	fixed4.type_length = 4;
	CHECK_PARSE_FAILS(&fixed4, "\"Zm9v\"", "exactly 4 bytes");

	tl_pq_column str = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_STRING);
	CHECK_PARSE_FAILS(&str, "5", "a string");

	tl_pq_column req = column(TL_PQ_INT64, TL_PQ_LOGICAL_NONE);
	req.required = true;
	CHECK_PARSE_FAILS(&req, "null", "required");
}

TEST(render_parse_null)
{
	tl_pq_column col = column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_STRING);
	parsed p = parse_text(&col, "null");
	CHECK_OK(p.rc, &p.err);
	CHECK_INT(p.valid, 0);
	p = parse_text(&col, "\"x\"");
	CHECK_OK(p.rc, &p.err);
	CHECK_INT(p.valid, 1);
}

TEST(render_parse_rows)
{
	tl_pq_column cols[2] = {column(TL_PQ_INT64, TL_PQ_LOGICAL_NONE), column(TL_PQ_BYTE_ARRAY, TL_PQ_LOGICAL_STRING)};
	cols[0].name = "id";
	cols[0].required = true;
	cols[1].name = "name";
	tl_pq_schema schema = {2, cols};
	int64_t ids[2];
	tl_bytes names[2];
	uint8_t valid[2];
	tl_vector vecs[2] = {{.v.i64 = ids}, {.valid = valid, .v.bytes = names}};
	tl_pq_batch batch = {.ncolumns = 2, .capacity = 2, .columns = vecs};
	tl_arena_init(&batch.arena, 1024);
	tl_error err;
	tl_error_clear(&err);

	json_t *row = tl_render_load_json("{\"id\": 7}", 9, &err);
	CHECK(row != NULL);
	CHECK_OK(tl_render_parse_row(&schema, row, &batch, 0, &err), &err);
	json_decref(row);
	CHECK(ids[0] == 7);
	CHECK_INT(valid[0], 0);

	const char *line = "{\"name\": \"x\", \"id\": -3}";
	row = tl_render_load_json(line, strlen(line), &err);
	CHECK_OK(tl_render_parse_row(&schema, row, &batch, 1, &err), &err);
	json_decref(row);
	CHECK(ids[1] == -3);
	CHECK_INT(valid[1], 1);
	CHECK_INT(names[1].len, 1);

	batch.nrows = 2;
	tl_buf_reset(&text);
	tl_render_row(&schema, NULL, &batch, 0, &text);
	tl_render_row(&schema, NULL, &batch, 1, &text);
	CHECK_STR(finish(), "{\"id\":7,\"name\":null}{\"id\":-3,\"name\":\"x\"}");

	row = tl_render_load_json("{\"name\": \"x\"}", 13, &err);
	CHECK(tl_render_parse_row(&schema, row, &batch, 0, &err) < 0);
	json_decref(row);
	CHECK(strstr(err.message, "column \"id\"") != NULL);
	CHECK(strstr(err.message, "required") != NULL);

	tl_error_clear(&err);
	row = tl_render_load_json("{\"id\": 1, \"nmae\": \"x\"}", 22, &err);
	CHECK(tl_render_parse_row(&schema, row, &batch, 0, &err) < 0);
	json_decref(row);
	CHECK(strstr(err.message, "no column named \"nmae\"") != NULL);

	tl_error_clear(&err);
	row = tl_render_load_json("[1, 2]", 6, &err);
	CHECK(tl_render_parse_row(&schema, row, &batch, 0, &err) < 0);
	json_decref(row);
	CHECK(strstr(err.message, "JSON object") != NULL);
	tl_arena_free(&batch.arena);
}
