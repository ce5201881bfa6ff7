/*
 * test_iceberg_expr.c: row filters. The ordering of values, the filter
 * parser and its rendering, and hand-made cases for the three inclusive
 * evaluators: what each transform, summary and metric must prune (so the
 * evaluators do prune) and what they must keep (nulls, NaN, signed zeros,
 * pre-1970 partitions Java wrote, truncated string bounds). The random
 * properties are in test_iceberg_expr_random.c.
 */
#include <math.h>
#include <stdlib.h>

#include "iceberg_expr_fixture.h"
#include "test.h"

/* ------------------------------------------------------------ ordering */

TEST(iceberg_expr_compare_orders_like_iceberg)
{
	tl_ice_type t_int = {.id = TL_ICE_INT}, t_long = {.id = TL_ICE_LONG}, t_dbl = {.id = TL_ICE_DOUBLE};
	tl_ice_type t_flt = {.id = TL_ICE_FLOAT}, t_str = {.id = TL_ICE_STRING}, t_bool = {.id = TL_ICE_BOOLEAN};
	tl_ice_type t_dec = {.id = TL_ICE_DECIMAL, .precision = 38, .scale = 2}, t_bin = {.id = TL_ICE_BINARY};
	tl_ice_type t_uuid = {.id = TL_ICE_UUID};
	tl_ice_value a, b;

	a = ex_i32(INT32_MIN), b = ex_i32(INT32_MAX);
	CHECK_INT(tl_ice_value_compare(&t_int, &a, &b), -1);
	CHECK_INT(tl_ice_value_compare(&t_int, &b, &a), 1);
	CHECK_INT(tl_ice_value_compare(&t_int, &a, &a), 0);
	a = ex_i64(INT64_MIN), b = ex_i64(INT64_MAX);
	CHECK_INT(tl_ice_value_compare(&t_long, &a, &b), -1);

	/* doubles: -inf < -1 < -0 < +0 < 1 < inf < NaN, and NaN equals NaN */
	double order[] = {-INFINITY, -1.0, -0.0, 0.0, 1e-300, 1.0, INFINITY, NAN};
	for (int x = 0; x < 8; x++) {
		for (int y = 0; y < 8; y++) {
			a = ex_f64(order[x]), b = ex_f64(order[y]);
			CHECK_INT(tl_ice_value_compare(&t_dbl, &a, &b), (x > y) - (x < y));
			tl_ice_value fa = ex_f32((float)order[x]), fb = ex_f32((float)order[y]);
			if (x != 4 && y != 4)  /* 1e-300 is 0 as a float */
				CHECK_INT(tl_ice_value_compare(&t_flt, &fa, &fb), (x > y) - (x < y));
		}
	}
	a = ex_f64(-NAN), b = ex_f64(NAN);
	CHECK_INT(tl_ice_value_compare(&t_dbl, &a, &b), 0);

	tl_ice_value da = {0}, db = {0};
	da.v.dec = -((tl_int128)1 << 100), db.v.dec = 5;
	CHECK_INT(tl_ice_value_compare(&t_dec, &da, &db), -1);
	CHECK_INT(tl_ice_value_compare(&t_dec, &db, &da), 1);

	/* bytewise unsigned; a proper prefix sorts first */
	const char *strs[] = {"", "a", "ab", "b", "z", "\x7f", "\xc3\xa9", "\xf0\x9f\x98\x80"};
	for (int x = 0; x < 8; x++) {
		for (int y = 0; y < 8; y++) {
			a = ex_str(strs[x]), b = ex_str(strs[y]);
			CHECK_INT(tl_ice_value_compare(&t_str, &a, &b), (x > y) - (x < y));
			CHECK_INT(tl_ice_value_compare(&t_bin, &a, &b), (x > y) - (x < y));
		}
	}
	uint8_t u1[16] = {0x7f}, u2[16] = {0x80};
	a = (tl_ice_value){.ptr = u1, .len = 16}, b = (tl_ice_value){.ptr = u2, .len = 16};
	CHECK_INT(tl_ice_value_compare(&t_uuid, &a, &b), -1);
	a.v.b = false, b.v.b = true;
	CHECK(tl_ice_value_compare(&t_bool, &a, &b) < 0);
	CHECK(tl_ice_value_compare(&t_bool, &b, &a) > 0);
	CHECK_INT(tl_ice_value_compare(&t_bool, &b, &b), 0);
}

/* ------------------------------------------------------------ parser */

/* Parses text and renders it back; "" on error (with the message in err). */
static const char *roundtrip(const tl_ice_schema *schema, const char *text, tl_arena *arena, tl_buf *out,
                             tl_error *err)
{
	const tl_ice_expr *e;
	tl_error_clear(err);
	tl_buf_reset(out);
	if (tl_ice_expr_parse(schema, text, arena, &e, err) < 0)
		return "";
	tl_ice_expr_text(e, schema, out);
	tl_buf_append_byte(out, 0);
	return (const char *)out->data;
}

TEST(iceberg_expr_parse_and_render)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema schema;
	CHECK_OK(ex_make_schema(&schema, &err), &err);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_buf out, again;
	tl_buf_init(&out);
	tl_buf_init(&again);
	static const char *const cases[][2] = {
		{"i >= 42 AND (s = 'it''s' OR d < '2024-01-01')", "i >= 42 AND (s = 'it''s' OR d < '2024-01-01')"},
		{"5 < i", "i > 5"},
		{"-5 >= l", "l <= -5"},
		{"'abc' = s", "s = 'abc'"},
		{"i in (1,2 , 3)", "i IN (1, 2, 3)"},
		{"s IS NULL", "s IS NULL"},
		{"s is not NULL", "s IS NOT NULL"},
		{"i = 1 and l = 2 Or s = 'x'", "i = 1 AND l = 2 OR s = 'x'"},
		{"i = 1 AND (l = 2 OR s = 'x')", "i = 1 AND (l = 2 OR s = 'x')"},
		{"(i = 1 OR l = 2) AND (s = 'x' OR s = 'y')", "(i = 1 OR l = 2) AND (s = 'x' OR s = 'y')"},
		{"((i = 1))", "i = 1"},
		{"\"weird col\" = 7 AND \"and\" < 3", "\"weird col\" = 7 AND \"and\" < 3"},
		{"\"i\" = 1", "i = 1"},
		{"dec = 1.5", "dec = 1.50"},
		{"dec > -0.05", "dec > -0.05"},
		{"f = 1e3", "f = 1000.0"},
		{"f < 'NaN'", "f < 'NaN'"},
		{"f > '-Infinity'", "f > '-Infinity'"},
		{"fl <= 2.5", "fl <= 2.5"},
		{"b = TRUE OR b = false", "b = true OR b = false"},
		{"TRUE", "TRUE"},
		{"false OR i = 1", "FALSE OR i = 1"},
		{"bin = '00ff'", "bin = '00ff'"},
		{"ts >= '2024-01-02 03:04:05.123456'", "ts >= '2024-01-02T03:04:05.123456'"},
		{"tz < '1969-12-31T23:59:59Z'", "tz < '1969-12-31T23:59:59Z'"},
		{"u = 'F79C3E09-677C-4BBD-A479-3F349CB785E7'", "u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'"},
		{"d IN ('1969-12-31', '1970-01-01')", "d IN ('1969-12-31', '1970-01-01')"},
		{"i = +7", "i = 7"},
		{"s = ''", "s = ''"},
		{"s = '42'", "s = '42'"},
		{"s = 42", "s = '42'"},
		{"  i\t=\n1  ", "i = 1"},
		{"i <> 3", "i <> 3"},
		{"i != 3", "i <> 3"},
		{"3 <> i", "i <> 3"},
		{"i not in (1, 2)", "i NOT IN (1, 2)"},
		{"s starts with 'ab''c'", "s STARTS WITH 'ab''c'"},
		{"s Not Starts With '' OR s IS NULL", "s NOT STARTS WITH '' OR s IS NULL"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const char *text = roundtrip(&schema, cases[k][0], &arena, &out, &err);
		if (err.code != TL_OK)
			tl_test_fail(__FILE__, __LINE__, "parsing %s: %s", cases[k][0], err.message);
		CHECK_STR(text, cases[k][1]);
		/* the rendering parses back to itself */
		CHECK_STR(roundtrip(&schema, text, &arena, &again, &err), text);
	}

	/* the parsed tree itself */
	const tl_ice_expr *e;
	CHECK_OK(tl_ice_expr_parse(&schema, "7 <= i", &arena, &e, &err), &err);
	CHECK_INT(e->op, TL_ICE_EXPR_GE);
	CHECK_INT(e->field_id, F_I);
	CHECK_INT(e->nvalues, 1);
	CHECK_INT(e->values[0].v.i32, 7);
	CHECK_OK(tl_ice_expr_parse(&schema, "dec IN (1, 2.25)", &arena, &e, &err), &err);
	CHECK_INT(e->op, TL_ICE_EXPR_IN);
	CHECK_INT(e->nvalues, 2);
	CHECK(e->values[0].v.dec == 100 && e->values[1].v.dec == 225);
	CHECK_OK(tl_ice_expr_parse(&schema, "i = 1 OR i = 2 AND i = 3", &arena, &e, &err), &err);
	CHECK_INT(e->op, TL_ICE_EXPR_OR);
	CHECK_INT(e->right->op, TL_ICE_EXPR_AND);

	tl_buf_free(&out);
	tl_buf_free(&again);
	tl_arena_free(&arena);
	tl_ice_schema_free(&schema);
}

TEST(iceberg_expr_parse_errors_name_the_position)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema schema;
	CHECK_OK(ex_make_schema(&schema, &err), &err);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	static const char *const cases[][2] = {
		{"x = 1", "filter: unknown column \"x\" at position 1"},
		{"i = 1 AND nope = 2", "filter: unknown column \"nope\" at position 11"},
		{"i = 'abc'", "filter: literal at position 5 for column \"i\": \"abc\" is not a valid int value"},
		{"i = 3000000000", "is not a valid int value"},
		{"dec = 1.234", "is not a valid decimal(9, 2) value"},
		{"d < 'yesterday'", "at position 5 for column \"d\""},
		{"i === 3", "filter: operator \"==\" is not supported (the supported operators are =, <, <=, >, >=, <>, [NOT] IN, IS [NOT] NULL and [NOT] STARTS WITH"},
		{"NOT i = 3", "operator \"NOT\" is not supported"},
		{"i NOT = 3", "expected IN or STARTS WITH after NOT, found \"=\" at position 7"},
		{"i NOT NOT IN (1)", "operator \"NOT\" is not supported"},
		{"s STARTS 'a'", "expected WITH after STARTS, found \"'a'\" at position 10"},
		{"i STARTS WITH 'a'", "STARTS WITH takes a string column, and \"i\" is not one at position 3"},
		{"s NOT STARTS WITH", "expected a literal"},
		{"i == 3", "operator \"==\" is not supported"},
		{"i = 3 AND", "filter: expected a column name, found the end of the filter at position 10"},
		{"s = 'abc", "filter: unterminated string at position 5"},
		{"\"s = 1", "unterminated quoted column name at position 1"},
		{"", "filter: the filter is empty at position 1"},
		{"   ", "the filter is empty"},
		{"i = 3 i", "expected AND, OR or the end of the filter, found \"i\" at position 7"},
		{"i = NULL", "NULL is not a value to compare with; use IS NULL or IS NOT NULL at position 5"},
		{"i IN 1", "expected \"(\" after IN, found \"1\" at position 6"},
		{"i IN (1 2)", "expected \",\" or \")\" in the IN list, found \"2\" at position 9"},
		{"i IN ()", "expected a literal"},
		{"i < l", "comparing two columns is not supported at position 5"},
		{"i = 3)", "found \")\" at position 6"},
		{"(i = 3", "expected \")\", found the end of the filter at position 7"},
		{"i IS 3", "expected NULL or NOT NULL after IS"},
		{"i IS NOT 3", "expected NULL after IS NOT"},
		{"i ~ 3", "unexpected character '~' at position 3"},
		{"1 = 2", "expected a column name, found \"2\" at position 5"},
		{"st = 1", "column \"st\" is not of a primitive type"},
		{"i", "expected a comparison operator, [NOT] IN, IS or [NOT] STARTS WITH, found the end of the filter at position 2"},
		{"AND i = 1", "expected a column name, found \"AND\" at position 1"},
		{"b = 1", "is not a valid boolean value"},
		{"i = 1.5", "is not a valid int value"},
		{"fl = 'x'", "is not a valid float value"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const tl_ice_expr *e = (const tl_ice_expr *)&err;  /* must be reset to NULL */
		tl_error_clear(&err);
		if (tl_ice_expr_parse(&schema, cases[k][0], &arena, &e, &err) == 0) {
			tl_test_fail(__FILE__, __LINE__, "\"%s\" parsed", cases[k][0]);
			return;
		}
		CHECK(e == NULL);
		CHECK_INT(err.code, TL_ERR_INVALID);
		if (strstr(err.message, cases[k][1]) == NULL) {
			tl_test_fail(__FILE__, __LINE__, "\"%s\": message \"%s\" lacks \"%s\"", cases[k][0], err.message,
			             cases[k][1]);
			return;
		}
	}
	/* nesting is bounded, and deep but allowed nesting works */
	tl_buf text;
	tl_buf_init(&text);
	for (int depth = 0; depth < 1000; depth++)
		tl_buf_append_byte(&text, '(');
	tl_buf_append_str(&text, "i = 1");
	tl_buf_append_byte(&text, 0);
	const tl_ice_expr *e;
	tl_error_clear(&err);
	CHECK(tl_ice_expr_parse(&schema, (const char *)text.data, &arena, &e, &err) < 0);
	CHECK(strstr(err.message, "parentheses nest too deeply") != NULL);
	tl_buf_reset(&text);
	for (int depth = 0; depth < 50; depth++)
		tl_buf_append_byte(&text, '(');
	tl_buf_append_str(&text, "i = 1");
	for (int depth = 0; depth < 50; depth++)
		tl_buf_append_byte(&text, ')');
	tl_buf_append_byte(&text, 0);
	tl_error_clear(&err);
	CHECK_OK(tl_ice_expr_parse(&schema, (const char *)text.data, &arena, &e, &err), &err);
	CHECK_INT(e->op, TL_ICE_EXPR_EQ);
	tl_buf_free(&text);
	tl_arena_free(&arena);
	tl_ice_schema_free(&schema);
}

TEST(iceberg_expr_constructors_copy_values)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema schema;
	CHECK_OK(ex_make_schema(&schema, &err), &err);
	tl_arena arena;
	tl_arena_init(&arena, 256);
	char text[] = "abc";
	tl_ice_value v = ex_str(text);
	const tl_ice_expr *p = tl_ice_expr_predicate(&arena, TL_ICE_EXPR_EQ, F_S, &v, 1);
	text[0] = 'x';  /* the tree owns a copy */
	const tl_ice_expr *e = tl_ice_expr_and(&arena, tl_ice_expr_const(&arena, true),
	                                       tl_ice_expr_or(&arena, p, tl_ice_expr_predicate(&arena, TL_ICE_EXPR_IS_NULL, F_I, NULL, 0)));
	tl_buf out;
	tl_buf_init(&out);
	tl_ice_expr_text(e, &schema, &out);
	tl_buf_append_byte(&out, 0);
	CHECK_STR((const char *)out.data, "TRUE AND (s = 'abc' OR i IS NULL)");
	tl_buf_reset(&out);
	tl_ice_expr_text(tl_ice_expr_predicate(&arena, TL_ICE_EXPR_EQ, 999, &v, 1), &schema, &out);
	tl_buf_append_byte(&out, 0);
	CHECK_STR((const char *)out.data, "#999 = ?");
	tl_buf_free(&out);
	tl_arena_free(&arena);
	tl_ice_schema_free(&schema);
}

/* The partition tuple of one row whose source columns hold the given texts. */
static bool row_may_match(ex_fixture *fx, const char *text, int32_t source, const char *value)
{
	tl_ice_value p[8];
	tl_ice_value x = ex_parsed(ex_type_of(&fx->schema, source), value, &fx->arena);
	for (int i = 0; i < fx->spec.nfields; i++) {
		const tl_ice_partition_field *pf = &fx->spec.fields[i];
		tl_ice_value in = pf->source_id == source ? x : tl_ice_null();
		if (tl_ice_transform_apply(&pf->transform, ex_type_of(&fx->schema, pf->source_id), &in, &p[i], NULL) < 0)
			abort();
	}
	return tl_ice_expr_may_match_partition(ex_filter(fx, text), &fx->schema, &fx->spec, p);
}

/* The same with a partition value given directly (for field 0 of the spec). */
static bool value_may_match(ex_fixture *fx, const char *text, tl_ice_value p0)
{
	tl_ice_value p[1] = {p0};
	return tl_ice_expr_may_match_partition(ex_filter(fx, text), &fx->schema, &fx->spec, p);
}

TEST(iceberg_expr_partition_identity_and_truncate)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	ex_add_field(&fx, F_I, "identity");
	CHECK(row_may_match(&fx, "i = 5", F_I, "5"));
	CHECK(!row_may_match(&fx, "i = 5", F_I, "6"));
	CHECK(!row_may_match(&fx, "i < 5", F_I, "5"));
	CHECK(row_may_match(&fx, "i <= 5", F_I, "5"));
	CHECK(!row_may_match(&fx, "i > 5", F_I, "5"));
	CHECK(row_may_match(&fx, "i >= 5", F_I, "5"));
	CHECK(row_may_match(&fx, "i IN (1, 5)", F_I, "5"));
	CHECK(!row_may_match(&fx, "i IN (1, 4)", F_I, "5"));
	CHECK(!row_may_match(&fx, "i IS NULL", F_I, "5"));
	CHECK(row_may_match(&fx, "i IS NOT NULL", F_I, "5"));
	CHECK(value_may_match(&fx, "i IS NULL", tl_ice_null()));
	CHECK(!value_may_match(&fx, "i IS NOT NULL", tl_ice_null()));
	CHECK(!value_may_match(&fx, "i < 5", tl_ice_null()));
	/* predicates on other columns, and constants */
	CHECK(row_may_match(&fx, "l = 5", F_I, "6"));
	CHECK(!row_may_match(&fx, "FALSE", F_I, "6"));
	CHECK(row_may_match(&fx, "TRUE", F_I, "6"));
	CHECK(row_may_match(&fx, "i = 5 OR l = 1", F_I, "6"));
	CHECK(!row_may_match(&fx, "i = 5 AND l = 1", F_I, "6"));
	CHECK(row_may_match(&fx, "i = 6 AND l = 1", F_I, "6"));
	CHECK(!row_may_match(&fx, "i = 5 OR i = 7", F_I, "6"));

	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_I, "truncate[10]");
	CHECK(!row_may_match(&fx, "i < 20", F_I, "25"));  /* x <= 19: partitions up to 10 */
	CHECK(row_may_match(&fx, "i < 21", F_I, "25"));   /* 20 is in partition 20 */
	CHECK(row_may_match(&fx, "i <= 20", F_I, "25"));
	CHECK(!row_may_match(&fx, "i > 19", F_I, "15"));  /* x >= 20: partitions from 20 */
	CHECK(row_may_match(&fx, "i > 18", F_I, "15"));   /* 19 is in partition 10 */
	CHECK(row_may_match(&fx, "i >= 19", F_I, "15"));
	CHECK(!row_may_match(&fx, "i > 29", F_I, "15"));

	CHECK(!row_may_match(&fx, "i = 30", F_I, "25"));
	CHECK(row_may_match(&fx, "i = 21", F_I, "25"));
	CHECK(row_may_match(&fx, "i = -1", F_I, "-10"));
	CHECK(!row_may_match(&fx, "i = -1", F_I, "-11"));
	/* Java's int truncation wraps the lowest values to the top partition */
	CHECK(row_may_match(&fx, "i < 0", F_I, "-2147483647"));
	CHECK(row_may_match(&fx, "i > -2147483647", F_I, "-2147483646"));
	CHECK(!row_may_match(&fx, "i > 100", F_I, "15"));

	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_S, "truncate[3]");
	CHECK(row_may_match(&fx, "s = 'abcdef'", F_S, "abcxyz"));
	CHECK(!row_may_match(&fx, "s = 'abdef'", F_S, "abcxyz"));
	CHECK(row_may_match(&fx, "s < 'abc'", F_S, "abcxyz"));   /* 'ab' < 'abc' sits in partition 'ab' but p <= 'abc' */
	CHECK(!row_may_match(&fx, "s < 'abb'", F_S, "abcxyz"));
	CHECK(!row_may_match(&fx, "s > 'abd'", F_S, "abcxyz"));
	CHECK(row_may_match(&fx, "s > 'abc'", F_S, "abcxyz"));
	CHECK(row_may_match(&fx, "s IN ('zz', 'abcq')", F_S, "abcxyz"));
	CHECK(!row_may_match(&fx, "s IN ('zz', 'abq')", F_S, "abcxyz"));
	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_DEC, "truncate[50]");
	CHECK(!row_may_match(&fx, "dec < 0.50", F_DEC, "0.50"));  /* x <= 0.49: partition 0.00 */
	CHECK(row_may_match(&fx, "dec < 0.51", F_DEC, "0.50"));
	CHECK(!row_may_match(&fx, "dec > 0.99", F_DEC, "0.50"));
	CHECK(row_may_match(&fx, "dec = 0.99", F_DEC, "0.50"));

	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_S, "truncate[3]");
	/* truncation counts code points, not bytes */
	CHECK(row_may_match(&fx, "s = '\xc3\xa9\xc3\xa9\xc3\xa9z'", F_S, "\xc3\xa9\xc3\xa9\xc3\xa9"));
	ex_fixture_free(&fx);
}

TEST(iceberg_expr_partition_bucket_void_and_several_fields)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	ex_add_field(&fx, F_I, "bucket[16]");
	tl_ice_type t_int = {.id = TL_ICE_INT};
	tl_ice_value v34 = ex_i32(34), other;
	tl_ice_transform bucket = {.kind = TL_ICE_BUCKET, .param = 16};
	tl_ice_value p34;
	CHECK_OK(tl_ice_transform_apply(&bucket, &t_int, &v34, &p34, &fx.err), &fx.err);
	other = ex_i32((p34.v.i32 + 1) % 16);
	CHECK(value_may_match(&fx, "i = 34", p34));
	CHECK(!value_may_match(&fx, "i = 34", other));
	CHECK(value_may_match(&fx, "i IN (34, 35)", p34));
	CHECK(value_may_match(&fx, "i < 0", other));     /* order does not survive hashing */
	CHECK(value_may_match(&fx, "i >= 100", other));
	CHECK(!value_may_match(&fx, "i IS NULL", other));
	CHECK(value_may_match(&fx, "i IS NULL", tl_ice_null()));
	CHECK(!value_may_match(&fx, "i IS NOT NULL", tl_ice_null()));

	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_I, "void");
	CHECK(value_may_match(&fx, "i = 34", tl_ice_null()));
	CHECK(value_may_match(&fx, "i IS NOT NULL", tl_ice_null()));

	/* two fields on one source: both projections must allow the row */
	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_I, "truncate[100]");
	ex_add_field(&fx, F_I, "bucket[16]");
	tl_ice_value p[2] = {ex_i32(0), p34};
	CHECK(tl_ice_expr_may_match_partition(ex_filter(&fx, "i = 34"), &fx.schema, &fx.spec, p));
	p[1] = other;
	CHECK(!tl_ice_expr_may_match_partition(ex_filter(&fx, "i = 34"), &fx.schema, &fx.spec, p));
	p[1] = p34;
	p[0] = ex_i32(100);
	CHECK(!tl_ice_expr_may_match_partition(ex_filter(&fx, "i = 34"), &fx.schema, &fx.spec, p));
	CHECK(tl_ice_expr_may_match_partition(ex_filter(&fx, "i > 134"), &fx.schema, &fx.spec, p));
	CHECK(!tl_ice_expr_may_match_partition(ex_filter(&fx, "i > 200"), &fx.schema, &fx.spec, p));
	ex_fixture_free(&fx);
}

TEST(iceberg_expr_partition_time_transforms)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	ex_add_field(&fx, F_TS, "day");
	CHECK(!row_may_match(&fx, "ts >= '2024-01-02T00:00:00'", F_TS, "2024-01-01T23:59:59.999999"));
	CHECK(row_may_match(&fx, "ts >= '2024-01-02T00:00:00'", F_TS, "2024-01-02T00:00:00"));
	CHECK(row_may_match(&fx, "ts > '2024-01-01T12:00:00'", F_TS, "2024-01-01T01:00:00"));
	CHECK(!row_may_match(&fx, "ts < '2024-01-01T00:00:00'", F_TS, "2024-01-01T01:00:00"));
	CHECK(row_may_match(&fx, "ts < '2024-01-01T00:00:01'", F_TS, "2024-01-01T01:00:00"));
	CHECK(row_may_match(&fx, "ts = '2024-01-01T13:00:00'", F_TS, "2024-01-01T01:00:00"));
	CHECK(!row_may_match(&fx, "ts = '2024-01-02T13:00:00'", F_TS, "2024-01-01T01:00:00"));
	/* before 1970 days floor; partitions Java wrote one too high are kept too */
	CHECK(row_may_match(&fx, "ts = '1969-12-31T23:59:59'", F_TS, "1969-12-31T00:00:00"));
	CHECK(value_may_match(&fx, "ts = '1969-12-31T23:59:59'", ex_i32(-1)));
	CHECK(value_may_match(&fx, "ts = '1969-12-31T23:59:59'", ex_i32(0)));
	CHECK(!value_may_match(&fx, "ts = '1969-12-31T23:59:59'", ex_i32(1)));
	CHECK(!value_may_match(&fx, "ts = '1969-12-31T23:59:59'", ex_i32(-2)));
	CHECK(value_may_match(&fx, "ts < '1969-12-30T05:00:00'", ex_i32(-1)));
	CHECK(!value_may_match(&fx, "ts < '1969-12-30T05:00:00'", ex_i32(0)));
	CHECK(!value_may_match(&fx, "ts > '1970-01-02T05:00:00'", ex_i32(0)));

	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_TS, "hour");
	CHECK(!row_may_match(&fx, "ts >= '2024-01-01T11:00:00'", F_TS, "2024-01-01T10:59:59"));
	CHECK(row_may_match(&fx, "ts > '2024-01-01T10:30:00'", F_TS, "2024-01-01T10:59:59"));
	CHECK(!row_may_match(&fx, "ts = '2024-01-01T10:30:00'", F_TS, "2024-01-01T11:00:00"));
	/* beyond the int range of hours Java keeps (year ~250,000), nothing projects */
	tl_ice_value far = ex_i64(7900000000000000000LL);
	const tl_ice_expr *before_far = tl_ice_expr_predicate(&fx.arena, TL_ICE_EXPR_LT, F_TS, &far, 1);
	tl_ice_value p5[1] = {ex_i32(5)};
	CHECK(tl_ice_expr_may_match_partition(before_far, &fx.schema, &fx.spec, p5));

	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_D, "month");
	ex_add_field(&fx, F_D, "year");
	tl_ice_value p[2] = {ex_i32(54 * 12 + 2), ex_i32(54)};  /* 2024-03 and 2024 */
	CHECK(tl_ice_expr_may_match_partition(ex_filter(&fx, "d = '2024-03-15'"), &fx.schema, &fx.spec, p));
	CHECK(!tl_ice_expr_may_match_partition(ex_filter(&fx, "d = '2024-04-15'"), &fx.schema, &fx.spec, p));
	CHECK(!tl_ice_expr_may_match_partition(ex_filter(&fx, "d < '2024-03-01'"), &fx.schema, &fx.spec, p));
	CHECK(tl_ice_expr_may_match_partition(ex_filter(&fx, "d <= '2024-03-01'"), &fx.schema, &fx.spec, p));
	CHECK(!tl_ice_expr_may_match_partition(ex_filter(&fx, "d >= '2025-01-01'"), &fx.schema, &fx.spec, p));
	CHECK(!tl_ice_expr_may_match_partition(ex_filter(&fx, "d IN ('2023-03-01', '2024-05-01')"), &fx.schema,
	                                       &fx.spec, p));
	ex_fixture_free(&fx);
}

/* ------------------------------------------------- statistics by hand */

static bool metrics_match(ex_fixture *fx, const char *text, tl_ice_data_file *file)
{
	return tl_ice_expr_may_match_metrics(ex_filter(fx, text), &fx->schema, file);
}

TEST(iceberg_expr_metrics_cases)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	tl_ice_type t_int = {.id = TL_ICE_INT}, t_dbl = {.id = TL_ICE_DOUBLE}, t_str = {.id = TL_ICE_STRING};
	tl_ice_value lo = ex_i32(10), hi = ex_i32(20);
	ex_column_metrics m = {.key = F_I, .values = 10, .nulls = 0};
	m.lower = ex_serialized(&t_int, &lo, &fx.arena);
	m.upper = ex_serialized(&t_int, &hi, &fx.arena);
	bool counts[3] = {true, true, false};
	tl_ice_data_file f;
	ex_attach_metrics(&f, &m, counts, true, true);
	CHECK(!metrics_match(&fx, "i = 5", &f));
	CHECK(metrics_match(&fx, "i = 10", &f));
	CHECK(metrics_match(&fx, "i = 20", &f));
	CHECK(!metrics_match(&fx, "i = 21", &f));
	CHECK(!metrics_match(&fx, "i < 10", &f));
	CHECK(metrics_match(&fx, "i <= 10", &f));
	CHECK(!metrics_match(&fx, "i > 20", &f));
	CHECK(metrics_match(&fx, "i >= 20", &f));
	CHECK(!metrics_match(&fx, "i IN (1, 30)", &f));
	CHECK(metrics_match(&fx, "i IN (1, 15)", &f));
	CHECK(!metrics_match(&fx, "i IS NULL", &f));       /* null count 0 */
	CHECK(metrics_match(&fx, "i IS NOT NULL", &f));
	CHECK(metrics_match(&fx, "l = 5", &f));             /* no statistics for l */
	CHECK(metrics_match(&fx, "i = 5 OR l = 5", &f));
	CHECK(!metrics_match(&fx, "i = 5 AND l = 5", &f));
	f.record_count = 0;
	CHECK(!metrics_match(&fx, "i = 15", &f));           /* an empty file holds nothing */
	f.record_count = 10;

	/* all null: comparisons, IN and NOT NULL cannot match */
	m.nulls = 10;
	ex_attach_metrics(&f, &m, counts, false, false);
	CHECK(!metrics_match(&fx, "i = 15", &f));
	CHECK(!metrics_match(&fx, "i < 100", &f));
	CHECK(!metrics_match(&fx, "i IN (15)", &f));
	CHECK(!metrics_match(&fx, "i IS NOT NULL", &f));
	CHECK(metrics_match(&fx, "i IS NULL", &f));
	/* unknown null count: IS NULL keeps */
	bool no_nulls_count[3] = {true, false, false};
	m.nulls = 0;
	ex_attach_metrics(&f, &m, no_nulls_count, true, true);
	CHECK(metrics_match(&fx, "i IS NULL", &f));
	/* a bound that does not decode keeps */
	m.lower.len = 3;
	ex_attach_metrics(&f, &m, counts, true, true);
	CHECK(metrics_match(&fx, "i < 5", &f));
	CHECK(!metrics_match(&fx, "i > 25", &f));

	/* doubles: bounds exclude NaN */
	tl_ice_value dlo = ex_f64(1.0), dhi = ex_f64(2.0);
	ex_column_metrics md = {.key = F_F, .values = 4, .nulls = 1, .nans = 1};
	md.lower = ex_serialized(&t_dbl, &dlo, &fx.arena);
	md.upper = ex_serialized(&t_dbl, &dhi, &fx.arena);
	bool all_counts[3] = {true, true, true};
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(!metrics_match(&fx, "f < 1.0", &f));
	CHECK(metrics_match(&fx, "f <= 1.0", &f));
	CHECK(!metrics_match(&fx, "f = 3.0", &f));
	CHECK(metrics_match(&fx, "f = 'NaN'", &f));   /* the NaN row equals NaN in Java's order */
	CHECK(metrics_match(&fx, "f > 3.0", &f));     /* NaN is above 3 in Java's order */
	md.nans = 0;
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(!metrics_match(&fx, "f > 3.0", &f));
	CHECK(!metrics_match(&fx, "f = 'NaN'", &f));
	/* a NaN bound is unreliable (writers that put NaN in bounds): ignored */
	tl_ice_value nan = ex_f64(NAN);
	md.lower = ex_serialized(&t_dbl, &nan, &fx.arena);
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(metrics_match(&fx, "f < 1.0", &f));
	CHECK(!metrics_match(&fx, "f > 3.0", &f));
	md.lower = ex_serialized(&t_dbl, &dlo, &fx.arena);
	md.upper = ex_serialized(&t_dbl, &nan, &fx.arena);
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(metrics_match(&fx, "f > 3.0", &f));
	CHECK(!metrics_match(&fx, "f < 0.5", &f));
	/* only NaN and null: no comparison below NaN matches */
	md.nans = 3;
	ex_attach_metrics(&f, &md, all_counts, false, false);
	CHECK(!metrics_match(&fx, "f < 3.0", &f));
	CHECK(!metrics_match(&fx, "f = 3.0", &f));
	CHECK(!metrics_match(&fx, "f IN (1.0, 2.0)", &f));
	CHECK(metrics_match(&fx, "f IS NOT NULL", &f));
	/* zeros: -0.0 and 0.0 are one number to SQL */
	tl_ice_value nz = ex_f64(-0.0), pz = ex_f64(0.0);
	md.nans = 0;
	md.lower = ex_serialized(&t_dbl, &pz, &fx.arena);
	md.upper = ex_serialized(&t_dbl, &pz, &fx.arena);
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(metrics_match(&fx, "f = -0.0", &f));
	CHECK(metrics_match(&fx, "f < 0.0", &f));     /* the zero may be -0.0, which Java orders below 0.0 */
	CHECK(!metrics_match(&fx, "f < -0.0", &f));
	CHECK(!metrics_match(&fx, "f > 0.0", &f));
	md.lower = md.upper = ex_serialized(&t_dbl, &nz, &fx.arena);
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(metrics_match(&fx, "f >= 0.0", &f));
	CHECK(!metrics_match(&fx, "f > 0.0", &f));
	CHECK(!metrics_match(&fx, "f < -0.5", &f));

	/* truncated string bounds: lower 'ab' (from 'abc...'), upper 'ad' (from 'acz...', incremented) */
	tl_ice_value slo = ex_str("ab"), shi = ex_str("ad");
	ex_column_metrics ms = {.key = F_S, .values = 5, .nulls = 0};
	ms.lower = ex_serialized(&t_str, &slo, &fx.arena);
	ms.upper = ex_serialized(&t_str, &shi, &fx.arena);
	ex_attach_metrics(&f, &ms, counts, true, true);
	CHECK(metrics_match(&fx, "s = 'abc'", &f));
	CHECK(metrics_match(&fx, "s = 'aczzz'", &f));
	CHECK(metrics_match(&fx, "s = 'ad'", &f));
	CHECK(!metrics_match(&fx, "s = 'ada'", &f));
	CHECK(!metrics_match(&fx, "s = 'aa'", &f));
	CHECK(!metrics_match(&fx, "s < 'ab'", &f));
	CHECK(metrics_match(&fx, "s < 'abc'", &f));
	CHECK(!metrics_match(&fx, "s > 'ad'", &f));
	CHECK(metrics_match(&fx, "s >= 'ad'", &f));
	ex_fixture_free(&fx);
}

/*
 * <>, NOT IN, STARTS WITH and NOT STARTS WITH: what the statistics can
 * prove (a file of one value, bounds outside a prefix's range) and what
 * they cannot; nulls satisfy none of them.
 */
TEST(iceberg_expr_negations_and_prefixes)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	tl_ice_type t_int = {.id = TL_ICE_INT}, t_dbl = {.id = TL_ICE_DOUBLE}, t_str = {.id = TL_ICE_STRING};
	bool counts[3] = {true, true, false};
	tl_ice_data_file f;

	/* one value in the file: <> and NOT IN of it prune, whatever the nulls */
	tl_ice_value seven = ex_i32(7), eight = ex_i32(8);
	ex_column_metrics m = {.key = F_I, .values = 10, .nulls = 3};
	m.lower = m.upper = ex_serialized(&t_int, &seven, &fx.arena);
	ex_attach_metrics(&f, &m, counts, true, true);
	CHECK(!metrics_match(&fx, "i <> 7", &f));
	CHECK(metrics_match(&fx, "i <> 8", &f));
	CHECK(!metrics_match(&fx, "i NOT IN (1, 7)", &f));
	CHECK(metrics_match(&fx, "i NOT IN (1, 8)", &f));
	CHECK(metrics_match(&fx, "i <> 7 OR i IS NULL", &f));
	/* a range of values: they cannot */
	m.upper = ex_serialized(&t_int, &eight, &fx.arena);
	ex_attach_metrics(&f, &m, counts, true, true);
	CHECK(metrics_match(&fx, "i <> 7", &f));
	CHECK(metrics_match(&fx, "i NOT IN (7, 8)", &f));
	/* one bound missing: they cannot */
	m.upper = m.lower;
	ex_attach_metrics(&f, &m, counts, true, false);
	CHECK(metrics_match(&fx, "i <> 7", &f));
	/* only nulls: nothing matches */
	m.nulls = 10;
	ex_attach_metrics(&f, &m, counts, false, false);
	CHECK(!metrics_match(&fx, "i <> 7", &f));
	CHECK(!metrics_match(&fx, "i NOT IN (7)", &f));

	/* doubles: a NaN row differs from every value, and a zero bound stands for both zeros */
	tl_ice_value one = ex_f64(1.0), zero = ex_f64(0.0);
	ex_column_metrics md = {.key = F_F, .values = 4, .nulls = 0, .nans = 0};
	md.lower = md.upper = ex_serialized(&t_dbl, &one, &fx.arena);
	bool all_counts[3] = {true, true, true};
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(!metrics_match(&fx, "f <> 1.0", &f));
	md.nans = 1;
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(metrics_match(&fx, "f <> 1.0", &f));
	CHECK(metrics_match(&fx, "f NOT IN (1.0, 'NaN')", &f));
	md.nans = 0;
	md.lower = md.upper = ex_serialized(&t_dbl, &zero, &fx.arena);
	ex_attach_metrics(&f, &md, all_counts, true, true);
	CHECK(metrics_match(&fx, "f <> 0.0", &f));

	/* strings between 'abc' and 'abd' */
	tl_ice_value slo = ex_str("abc"), shi = ex_str("abd");
	ex_column_metrics ms = {.key = F_S, .values = 5, .nulls = 1};
	ms.lower = ex_serialized(&t_str, &slo, &fx.arena);
	ms.upper = ex_serialized(&t_str, &shi, &fx.arena);
	ex_attach_metrics(&f, &ms, counts, true, true);
	CHECK(metrics_match(&fx, "s STARTS WITH 'ab'", &f));
	CHECK(metrics_match(&fx, "s STARTS WITH 'abc'", &f));
	CHECK(metrics_match(&fx, "s STARTS WITH 'abcz'", &f));
	CHECK(metrics_match(&fx, "s STARTS WITH 'abd'", &f));
	CHECK(metrics_match(&fx, "s STARTS WITH ''", &f));
	CHECK(!metrics_match(&fx, "s STARTS WITH 'abb'", &f));   /* below the lower bound's first bytes */
	CHECK(!metrics_match(&fx, "s STARTS WITH 'abda'", &f));  /* above the upper bound */
	CHECK(!metrics_match(&fx, "s STARTS WITH 'b'", &f));
	CHECK(!metrics_match(&fx, "s STARTS WITH 'aa'", &f));
	CHECK(metrics_match(&fx, "s NOT STARTS WITH 'abc'", &f));
	CHECK(!metrics_match(&fx, "s NOT STARTS WITH 'ab'", &f)); /* both bounds start with it; the null fails it */
	CHECK(!metrics_match(&fx, "s NOT STARTS WITH ''", &f));
	CHECK(!metrics_match(&fx, "s NOT STARTS WITH 'a'", &f));
	/* a truncated upper bound ('ab' incremented to 'ac') still bounds */
	tl_ice_value trunc_hi = ex_str("ac");
	ms.upper = ex_serialized(&t_str, &trunc_hi, &fx.arena);
	ex_attach_metrics(&f, &ms, counts, true, true);
	CHECK(metrics_match(&fx, "s NOT STARTS WITH 'ab'", &f));
	CHECK(!metrics_match(&fx, "s STARTS WITH 'ad'", &f));
	CHECK(metrics_match(&fx, "s STARTS WITH 'ac'", &f));
	/* no upper bound: only the lower one prunes */
	ex_attach_metrics(&f, &ms, counts, true, false);
	CHECK(metrics_match(&fx, "s STARTS WITH 'zz'", &f));
	CHECK(!metrics_match(&fx, "s STARTS WITH 'aa'", &f));

	/* partitions: identity decides exactly, a string truncate projects the prefixes */
	ex_add_field(&fx, F_S, "identity");
	CHECK(!row_may_match(&fx, "s <> 'abc'", F_S, "abc"));
	CHECK(row_may_match(&fx, "s <> 'abc'", F_S, "abd"));
	CHECK(!row_may_match(&fx, "s NOT IN ('x', 'abc')", F_S, "abc"));
	CHECK(row_may_match(&fx, "s STARTS WITH 'ab'", F_S, "abc"));
	CHECK(!row_may_match(&fx, "s STARTS WITH 'abcd'", F_S, "abc"));
	CHECK(!row_may_match(&fx, "s NOT STARTS WITH 'ab'", F_S, "abc"));
	CHECK(!value_may_match(&fx, "s <> 'abc'", tl_ice_null()));
	CHECK(!value_may_match(&fx, "s NOT STARTS WITH 'abc'", tl_ice_null()));
	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_S, "truncate[3]");
	CHECK(row_may_match(&fx, "s STARTS WITH 'ab'", F_S, "abx"));
	CHECK(!row_may_match(&fx, "s STARTS WITH 'ab'", F_S, "aax"));
	CHECK(row_may_match(&fx, "s STARTS WITH 'abcdef'", F_S, "abcxyz"));   /* partition 'abc' */
	CHECK(!row_may_match(&fx, "s STARTS WITH 'abddef'", F_S, "abcxyz"));
	CHECK(!row_may_match(&fx, "s NOT STARTS WITH 'ab'", F_S, "abcxyz"));
	CHECK(row_may_match(&fx, "s NOT STARTS WITH 'abcd'", F_S, "abcxyz")); /* longer than the width: no projection */
	CHECK(row_may_match(&fx, "s <> 'abc'", F_S, "abcxyz"));               /* 'abc' truncates many values */
	CHECK(row_may_match(&fx, "s NOT IN ('abc')", F_S, "abcxyz"));
	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_I, "truncate[10]");
	CHECK(row_may_match(&fx, "i <> 10", F_I, "10"));  /* partition 10 holds 11 too */
	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_I, "bucket[16]");
	CHECK(row_may_match(&fx, "i <> 10", F_I, "10"));
	ex_fixture_free(&fx);
}

TEST(iceberg_expr_summary_cases)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	ex_add_field(&fx, F_I, "identity");
	tl_ice_type t_int = {.id = TL_ICE_INT};
	tl_ice_value lo = ex_i32(10), hi = ex_i32(20);
	tl_ice_field_summary s = {.contains_null = false};
	s.has_lower_bound = s.has_upper_bound = true;
	s.lower_bound = ex_serialized(&t_int, &lo, &fx.arena);
	s.upper_bound = ex_serialized(&t_int, &hi, &fx.arena);
#define SUMMARY_MATCH(text) tl_ice_expr_may_match_summaries(ex_filter(&fx, text), &fx.schema, &fx.spec, &s, 1)
	CHECK(!SUMMARY_MATCH("i = 5"));
	CHECK(SUMMARY_MATCH("i = 15"));
	CHECK(!SUMMARY_MATCH("i < 10"));
	CHECK(SUMMARY_MATCH("i <= 10"));
	CHECK(!SUMMARY_MATCH("i > 20"));
	CHECK(SUMMARY_MATCH("i >= 20"));
	CHECK(!SUMMARY_MATCH("i IN (1, 30)"));
	CHECK(SUMMARY_MATCH("i IN (1, 11)"));
	CHECK(!SUMMARY_MATCH("i IS NULL"));
	CHECK(SUMMARY_MATCH("i IS NOT NULL"));
	CHECK(SUMMARY_MATCH("l = 1"));
	/* only nulls: no bounds */
	s.contains_null = true;
	s.has_lower_bound = s.has_upper_bound = false;
	CHECK(!SUMMARY_MATCH("i = 15"));
	CHECK(!SUMMARY_MATCH("i >= 0"));
	CHECK(!SUMMARY_MATCH("i IS NOT NULL"));
	CHECK(SUMMARY_MATCH("i IS NULL"));
	/* no bounds and nothing to explain it: unknown, keep */
	s.contains_null = false;
	CHECK(SUMMARY_MATCH("i = 15"));
	/* an undecodable bound keeps */
	s.has_lower_bound = s.has_upper_bound = true;
	s.lower_bound.len = 2;
	CHECK(SUMMARY_MATCH("i < 5"));
	CHECK(!SUMMARY_MATCH("i > 25"));
	/* floats: contains_nan unknown means NaN may be there */
	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_F, "identity");
	s = (tl_ice_field_summary){.contains_null = true};
	CHECK(SUMMARY_MATCH("f IS NOT NULL"));
	s.has_contains_nan = true;
	CHECK(!SUMMARY_MATCH("f IS NOT NULL"));
	s.contains_nan = true;
	CHECK(SUMMARY_MATCH("f IS NOT NULL"));
	CHECK(!SUMMARY_MATCH("f < 1.0"));
	CHECK(!SUMMARY_MATCH("f = 1.0"));
#undef SUMMARY_MATCH
	/* a time transform's summary */
	tl_ice_partition_spec_free(&fx.spec);
	ex_add_field(&fx, F_TS, "day");
	tl_ice_type t_date = {.id = TL_ICE_DATE};
	tl_ice_value dlo = ex_parsed(&t_date, "2024-01-01", &fx.arena), dhi = ex_parsed(&t_date, "2024-01-31", &fx.arena);
	s = (tl_ice_field_summary){.has_lower_bound = true, .has_upper_bound = true};
	s.lower_bound = ex_serialized(&t_date, &dlo, &fx.arena);
	s.upper_bound = ex_serialized(&t_date, &dhi, &fx.arena);
	CHECK(tl_ice_expr_may_match_summaries(ex_filter(&fx, "ts < '2024-01-01T00:00:01'"), &fx.schema, &fx.spec, &s, 1));
	CHECK(!tl_ice_expr_may_match_summaries(ex_filter(&fx, "ts < '2024-01-01T00:00:00'"), &fx.schema, &fx.spec, &s, 1));
	CHECK(!tl_ice_expr_may_match_summaries(ex_filter(&fx, "ts >= '2024-02-01T00:00:00'"), &fx.schema, &fx.spec, &s, 1));
	CHECK(tl_ice_expr_may_match_summaries(ex_filter(&fx, "ts > '2024-01-31T23:00:00'"), &fx.schema, &fx.spec, &s, 1));
	ex_fixture_free(&fx);
}
