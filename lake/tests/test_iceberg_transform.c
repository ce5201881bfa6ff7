/*
 * test_iceberg_transform.c: partition transforms against the Iceberg spec's
 * worked examples (the bucket hash vectors of appendix B, the truncate
 * examples), floor semantics of temporal transforms before 1970, human
 * strings and partition paths, and partition-spec JSON.
 */
#include <stdlib.h>

#include "test.h"
#include "tierlake/iceberg_transform.h"
#include "iceberg/schema_json.h"

static tl_ice_type prim(tl_ice_type_id id)
{
	tl_ice_type t = {.id = id};
	return t;
}

/* Hash of a value parsed from text. */
static int hash_of(tl_ice_type type, const char *text, int32_t *hash)
{
	tl_error err;
	tl_error_clear(&err);
	tl_arena arena;
	tl_arena_init(&arena, 256);
	tl_ice_value v;
	int rc = tl_ice_value_parse(&type, text, &arena, &v, &err);
	if (rc == 0)
		rc = tl_ice_bucket_hash(&type, &v, hash, &err);
	tl_arena_free(&arena);
	return rc;
}

TEST(iceberg_murmur3_matches_spec_vectors)
{
	int32_t h;
	tl_ice_type dec = {.id = TL_ICE_DECIMAL, .precision = 9, .scale = 2};
	tl_ice_type fixed = {.id = TL_ICE_FIXED, .length = 4};
	CHECK(hash_of(prim(TL_ICE_INT), "34", &h) == 0);
	CHECK_INT(h, 2017239379);
	CHECK(hash_of(prim(TL_ICE_LONG), "34", &h) == 0);
	CHECK_INT(h, 2017239379);
	CHECK(hash_of(dec, "14.20", &h) == 0);
	CHECK_INT(h, -500754589);
	CHECK(hash_of(prim(TL_ICE_DATE), "2017-11-16", &h) == 0);
	CHECK_INT(h, -653330422);
	CHECK(hash_of(prim(TL_ICE_TIME), "22:31:08", &h) == 0);
	CHECK_INT(h, -662762989);
	CHECK(hash_of(prim(TL_ICE_TIMESTAMP), "2017-11-16T22:31:08", &h) == 0);
	CHECK_INT(h, -2047944441);
	CHECK(hash_of(prim(TL_ICE_TIMESTAMPTZ), "2017-11-16T14:31:08-08:00", &h) < 0);  /* offsets other than UTC are refused */
	CHECK(hash_of(prim(TL_ICE_TIMESTAMPTZ), "2017-11-16T22:31:08Z", &h) == 0);
	CHECK_INT(h, -2047944441);
	CHECK(hash_of(prim(TL_ICE_STRING), "iceberg", &h) == 0);
	CHECK_INT(h, 1210000089);
	CHECK(hash_of(prim(TL_ICE_UUID), "f79c3e09-677c-4bbd-a479-3f349cb785e7", &h) == 0);
	CHECK_INT(h, 1488055340);
	CHECK(hash_of(fixed, "00010203", &h) == 0);
	CHECK_INT(h, -188683207);
	CHECK(hash_of(prim(TL_ICE_BINARY), "00010203", &h) == 0);
	CHECK_INT(h, -188683207);
	/* float and double hash as the double: 1.0 -> -142385009 (appendix B). */
	CHECK(hash_of(prim(TL_ICE_FLOAT), "1", &h) == 0);
	CHECK_INT(h, -142385009);
	CHECK(hash_of(prim(TL_ICE_DOUBLE), "1", &h) == 0);
	CHECK_INT(h, -142385009);
	/* The raw hash: empty input and a 3-byte tail. */
	CHECK_INT(tl_murmur3_32("", 0), 0);
	CHECK_INT(tl_murmur3_32("abc", 3), (int32_t)0xB3DD93FA);
}

/* Applies `spec` to `text` of `type` and returns the human string in a static buffer. */
static const char *apply(const char *spec, tl_ice_type type, const char *text)
{
	static char result[256];
	tl_error err;
	tl_error_clear(&err);
	tl_arena arena;
	tl_arena_init(&arena, 256);
	tl_ice_transform t;
	tl_ice_value in, out;
	snprintf(result, sizeof(result), "error");
	if (tl_ice_transform_parse(spec, &t, &err) == 0 &&
	    (text == NULL ? (in = tl_ice_null(), 0) : tl_ice_value_parse(&type, text, &arena, &in, &err)) == 0 &&
	    tl_ice_transform_apply(&t, &type, &in, &out, &err) == 0) {
		tl_buf b;
		tl_buf_init(&b);
		tl_ice_transform_human(&t, &type, &out, &b);
		snprintf(result, sizeof(result), "%.*s", (int)b.len, (const char *)b.data);
		tl_buf_free(&b);
	}
	tl_arena_free(&arena);
	return result;
}

TEST(iceberg_truncate_matches_spec_examples)
{
	tl_ice_type dec = {.id = TL_ICE_DECIMAL, .precision = 9, .scale = 2};
	CHECK_STR(apply("truncate[10]", prim(TL_ICE_INT), "1"), "0");
	CHECK_STR(apply("truncate[10]", prim(TL_ICE_INT), "-1"), "-10");
	CHECK_STR(apply("truncate[10]", prim(TL_ICE_INT), "-10"), "-10");
	CHECK_STR(apply("truncate[10]", prim(TL_ICE_LONG), "1"), "0");
	CHECK_STR(apply("truncate[10]", prim(TL_ICE_LONG), "-1"), "-10");
	CHECK_STR(apply("truncate[1000]", prim(TL_ICE_LONG), "123456"), "123000");
	CHECK_STR(apply("truncate[50]", dec, "10.65"), "10.50");
	CHECK_STR(apply("truncate[50]", dec, "-0.05"), "-0.50");
	CHECK_STR(apply("truncate[3]", prim(TL_ICE_STRING), "iceberg"), "ice");
	/* Code points, not bytes: three characters of two- and four-byte UTF-8. */
	CHECK_STR(apply("truncate[3]", prim(TL_ICE_STRING), "\xc3\xa9t\xf0\x9f\x98\x80z"), "\xc3\xa9t\xf0\x9f\x98\x80");
	CHECK_STR(apply("truncate[10]", prim(TL_ICE_STRING), "ab"), "ab");
	CHECK_STR(apply("truncate[2]", prim(TL_ICE_BINARY), "010203"), "AQI=");
	CHECK_STR(apply("truncate[10]", prim(TL_ICE_INT), NULL), "null");
	/* truncate does not apply to dates; bucket not to doubles. */
	CHECK_STR(apply("truncate[10]", prim(TL_ICE_DATE), "2020-01-01"), "error");
	CHECK_STR(apply("bucket[4]", prim(TL_ICE_DOUBLE), "1"), "error");
}

TEST(iceberg_truncate_rejects_invalid_utf8)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_type s = prim(TL_ICE_STRING);
	tl_ice_transform t = {.kind = TL_ICE_TRUNCATE, .param = 2};
	tl_ice_value in = {.ptr = (const uint8_t *)"a\xff", .len = 2}, out;
	CHECK(tl_ice_transform_apply(&t, &s, &in, &out, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
}

TEST(iceberg_bucket_results)
{
	/* (hash & INT_MAX) % N: 2017239379 % 16 = 3; hash of "iceberg" 1210000089 % 100 = 89. */
	CHECK_STR(apply("bucket[16]", prim(TL_ICE_INT), "34"), "3");
	CHECK_STR(apply("bucket[100]", prim(TL_ICE_STRING), "iceberg"), "89");
	/* A negative hash: -653330422 & INT_MAX = 1494153226; % 10 = 6. */
	CHECK_STR(apply("bucket[10]", prim(TL_ICE_DATE), "2017-11-16"), "6");
	CHECK_STR(apply("bucket[10]", prim(TL_ICE_DATE), NULL), "null");
}

TEST(iceberg_temporal_transforms_floor_before_1970)
{
	tl_ice_type date = prim(TL_ICE_DATE), ts = prim(TL_ICE_TIMESTAMP), tz = prim(TL_ICE_TIMESTAMPTZ);
	CHECK_STR(apply("day", date, "2024-01-02"), "2024-01-02");
	CHECK_STR(apply("day", ts, "2024-01-02T10:11:12.5"), "2024-01-02");
	CHECK_STR(apply("day", ts, "1969-12-31T23:59:59.999999"), "1969-12-31");
	CHECK_STR(apply("month", date, "1969-12-31"), "1969-12");
	CHECK_STR(apply("month", ts, "1969-01-01T00:00:00"), "1969-01");
	CHECK_STR(apply("year", date, "1969-12-31"), "1969");
	CHECK_STR(apply("year", ts, "1900-06-01T00:00:01"), "1900");
	CHECK_STR(apply("hour", ts, "1969-12-31T23:30:00"), "1969-12-31-23");
	CHECK_STR(apply("hour", tz, "2017-11-16T22:31:08Z"), "2017-11-16-22");
	CHECK_STR(apply("hour", date, "2017-11-16"), "error");
	CHECK_STR(apply("void", ts, "2017-11-16T22:31:08"), "null");

	/* The integer results themselves. */
	tl_error err;
	tl_error_clear(&err);
	tl_ice_transform day = {.kind = TL_ICE_DAY}, month = {.kind = TL_ICE_MONTH},
	                 year = {.kind = TL_ICE_YEAR}, hour = {.kind = TL_ICE_HOUR};
	tl_ice_value in = {.v.i64 = -1}, out;  /* one microsecond before the epoch */
	CHECK_OK(tl_ice_transform_apply(&day, &ts, &in, &out, &err), &err);
	CHECK_INT(out.v.i32, -1);
	CHECK_OK(tl_ice_transform_apply(&hour, &ts, &in, &out, &err), &err);
	CHECK_INT(out.v.i32, -1);
	CHECK_OK(tl_ice_transform_apply(&month, &ts, &in, &out, &err), &err);
	CHECK_INT(out.v.i32, -1);
	CHECK_OK(tl_ice_transform_apply(&year, &ts, &in, &out, &err), &err);
	CHECK_INT(out.v.i32, -1);
	tl_ice_value d = {.v.i32 = 17486};  /* 2017-11-16 */
	CHECK_OK(tl_ice_transform_apply(&month, &date, &d, &out, &err), &err);
	CHECK_INT(out.v.i32, 47 * 12 + 10);
	CHECK_OK(tl_ice_transform_apply(&year, &date, &d, &out, &err), &err);
	CHECK_INT(out.v.i32, 47);
	tl_ice_type result;
	CHECK_OK(tl_ice_transform_result_type(&day, &ts, &result, &err), &err);
	CHECK_INT(result.id, TL_ICE_DATE);
	CHECK_OK(tl_ice_transform_result_type(&hour, &ts, &result, &err), &err);
	CHECK_INT(result.id, TL_ICE_INT);
}

TEST(iceberg_identity_human_strings)
{
	tl_ice_type dec = {.id = TL_ICE_DECIMAL, .precision = 9, .scale = 2};
	CHECK_STR(apply("identity", prim(TL_ICE_TIMESTAMP), "2017-11-16T22:31:00"), "2017-11-16T22:31");
	CHECK_STR(apply("identity", prim(TL_ICE_TIMESTAMP), "2017-11-16T22:31:08.1"), "2017-11-16T22:31:08.100");
	CHECK_STR(apply("identity", prim(TL_ICE_TIMESTAMP), "2017-11-16T22:31:08.000001"), "2017-11-16T22:31:08.000001");
	CHECK_STR(apply("identity", prim(TL_ICE_TIMESTAMPTZ), "2017-11-16T22:31:08"), "2017-11-16T22:31:08Z");
	CHECK_STR(apply("identity", prim(TL_ICE_TIME), "22:31:08"), "22:31:08");
	CHECK_STR(apply("identity", dec, "-0.5"), "-0.50");
	CHECK_STR(apply("identity", prim(TL_ICE_BOOLEAN), "true"), "true");
	CHECK_STR(apply("identity", prim(TL_ICE_DOUBLE), "1"), "1.0");
	CHECK_STR(apply("identity", prim(TL_ICE_DOUBLE), "1e10"), "1.0E10");
	CHECK_STR(apply("identity", prim(TL_ICE_DOUBLE), "0.001"), "0.001");
	CHECK_STR(apply("identity", prim(TL_ICE_DOUBLE), "0.0001"), "1.0E-4");
	CHECK_STR(apply("identity", prim(TL_ICE_FLOAT), "0.1"), "0.1");
	CHECK_STR(apply("identity", prim(TL_ICE_UUID), "F79C3E09-677C-4BBD-A479-3F349CB785E7"),
	          "f79c3e09-677c-4bbd-a479-3f349cb785e7");
	CHECK_STR(apply("identity", prim(TL_ICE_DATE), "0001-01-01"), "0001-01-01");
}

TEST(iceberg_transform_names_parse_and_print)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_transform t;
	CHECK_OK(tl_ice_transform_parse("bucket[16]", &t, &err), &err);
	CHECK_INT(t.kind, TL_ICE_BUCKET);
	CHECK_INT(t.param, 16);
	tl_buf b;
	tl_buf_init(&b);
	tl_ice_transform_text(&t, &b);
	tl_buf_append_byte(&b, 0);
	CHECK_STR((const char *)b.data, "bucket[16]");
	tl_buf_free(&b);
	CHECK(tl_ice_transform_parse("bucket[0]", &t, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	tl_error_clear(&err);
	CHECK(tl_ice_transform_parse("bucket[99999999999]", &t, &err) < 0);
	tl_error_clear(&err);
	CHECK(tl_ice_transform_parse("zorder", &t, &err) < 0);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK(strstr(err.message, "zorder") != NULL);
}

static void make_schema(tl_ice_schema *schema)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "ts", .type = {.id = TL_ICE_TIMESTAMP}},
		{.id = 3, .name = "name", .type = {.id = TL_ICE_STRING}},
	};
	if (tl_ice_schema_init(schema, 0, fields, 3, &err) < 0)
		abort();
}

TEST(iceberg_partition_path_as_java_renders_it)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema schema;
	make_schema(&schema);
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_partition_spec_add(&spec, 2, 1000, "ts_day", (tl_ice_transform){TL_ICE_DAY, 0});
	tl_ice_partition_spec_add(&spec, 1, 1001, "id_trunc", (tl_ice_transform){TL_ICE_TRUNCATE, 1000});
	tl_ice_partition_spec_add(&spec, 1, 1002, "bucket", (tl_ice_transform){TL_ICE_BUCKET, 16});
	tl_ice_partition_spec_add(&spec, 3, 1003, "name", (tl_ice_transform){TL_ICE_IDENTITY, 0});
	tl_ice_partition_spec_add(&spec, 2, 1004, "ts_hour", (tl_ice_transform){TL_ICE_HOUR, 0});
	CHECK_OK(tl_ice_partition_spec_check(&spec, &schema, &err), &err);
	tl_ice_value values[5] = {
		{.v.i32 = 19724}, {.v.i64 = 1000}, {.v.i32 = 3},
		{.ptr = (const uint8_t *)"a b/c:\xc3\xa9", .len = 8}, tl_ice_null(),
	};
	tl_buf b;
	tl_buf_init(&b);
	CHECK_OK(tl_ice_partition_path(&spec, &schema, values, &b, &err), &err);
	tl_buf_append_byte(&b, 0);
	CHECK_STR((const char *)b.data, "ts_day=2024-01-02/id_trunc=1000/bucket=3/name=a+b%2Fc%3A%C3%A9/ts_hour=null");
	tl_buf_free(&b);

	/* The partition tuple type of manifests. */
	tl_ice_type ptype;
	CHECK_OK(tl_ice_partition_type(&spec, &schema, &ptype, &err), &err);
	CHECK_INT(ptype.id, TL_ICE_STRUCT);
	CHECK_INT(ptype.nfields, 5);
	CHECK_INT(ptype.fields[0].id, 1000);
	CHECK_STR(ptype.fields[0].name, "ts_day");
	CHECK_INT(ptype.fields[0].type.id, TL_ICE_DATE);
	CHECK_INT(ptype.fields[1].type.id, TL_ICE_LONG);
	CHECK_INT(ptype.fields[2].type.id, TL_ICE_INT);
	CHECK_INT(ptype.fields[3].type.id, TL_ICE_STRING);
	CHECK_INT(ptype.fields[4].type.id, TL_ICE_INT);
	CHECK(!ptype.fields[2].required);
	tl_ice_type_free(&ptype);

	/* A transform that does not fit its source, and an unknown source id. */
	tl_ice_partition_spec bad;
	tl_ice_partition_spec_init(&bad, 1);
	tl_ice_partition_spec_add(&bad, 3, 1000, "name_day", (tl_ice_transform){TL_ICE_DAY, 0});
	CHECK(tl_ice_partition_spec_check(&bad, &schema, &err) < 0);
	CHECK(strstr(err.message, "name_day") != NULL);
	tl_ice_partition_spec_free(&bad);
	tl_error_clear(&err);
	tl_ice_partition_spec_init(&bad, 1);
	tl_ice_partition_spec_add(&bad, 9, 1000, "x", (tl_ice_transform){TL_ICE_IDENTITY, 0});
	CHECK(tl_ice_partition_spec_check(&bad, &schema, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "source-id 9") != NULL);
	tl_ice_partition_spec_free(&bad);

	/* JSON round trip. */
	json_t *j = tl_ice_partition_spec_to_json(&spec);
	tl_ice_partition_spec back;
	CHECK_OK(tl_ice_partition_spec_from_json(j, -1, &back, &err), &err);
	json_decref(j);
	CHECK(tl_ice_partition_spec_equal(&spec, &back));
	tl_ice_partition_spec_free(&back);
	tl_ice_partition_spec_free(&spec);
	tl_ice_schema_free(&schema);
}
