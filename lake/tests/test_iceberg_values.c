/*
 * test_iceberg_values.c: Iceberg schemas (type spellings, JSON round trips,
 * lookups, the Parquet mapping) and single-value binary serialization of
 * every primitive type (round trips, the spec's byte layouts, length checks).
 */
#include <stdlib.h>

#include "test.h"
#include "tierlake/calendar.h"
#include "tierlake/iceberg_value.h"
#include "iceberg/schema_json.h"

static int roundtrip(const tl_ice_type *type, const char *text, const char *expect_hex)
{
	tl_error err;
	tl_error_clear(&err);
	tl_arena arena;
	tl_arena_init(&arena, 256);
	tl_buf b, hex;
	tl_buf_init(&b);
	tl_buf_init(&hex);
	tl_ice_value v, back;
	int ok = tl_ice_value_parse(type, text, &arena, &v, &err) == 0 &&
	         tl_ice_value_serialize(type, &v, &b, &err) == 0;
	for (size_t i = 0; ok && i < b.len; i++)
		tl_buf_printf(&hex, "%02x", b.data[i]);
	tl_buf_append_byte(&hex, 0);
	ok = ok && strcmp((const char *)hex.data, expect_hex) == 0 &&
	     tl_ice_value_deserialize(type, b.data, b.len, &back, &err) == 0 &&
	     tl_ice_value_equal(type, &v, &back);
	if (!ok)
		fprintf(stderr, "  %s: got %s, want %s (%s)\n", text, hex.data ? (const char *)hex.data : "", expect_hex,
		        err.message);
	tl_buf_free(&b);
	tl_buf_free(&hex);
	tl_arena_free(&arena);
	return ok ? 0 : -1;
}

TEST(iceberg_single_value_layouts_and_round_trips)
{
	tl_ice_type t = {.id = TL_ICE_BOOLEAN};
	CHECK(roundtrip(&t, "true", "01") == 0);
	CHECK(roundtrip(&t, "false", "00") == 0);
	t.id = TL_ICE_INT;
	CHECK(roundtrip(&t, "-2", "feffffff") == 0);
	t.id = TL_ICE_LONG;
	CHECK(roundtrip(&t, "34", "2200000000000000") == 0);
	t.id = TL_ICE_FLOAT;
	CHECK(roundtrip(&t, "1", "0000803f") == 0);
	t.id = TL_ICE_DOUBLE;
	CHECK(roundtrip(&t, "-2.5", "00000000000004c0") == 0);
	t.id = TL_ICE_DATE;
	CHECK(roundtrip(&t, "2017-11-16", "4e440000") == 0);
	CHECK(roundtrip(&t, "1969-12-31", "ffffffff") == 0);
	t.id = TL_ICE_TIME;
	CHECK(roundtrip(&t, "00:00:01", "40420f0000000000") == 0);
	t.id = TL_ICE_TIMESTAMP;
	CHECK(roundtrip(&t, "1970-01-01T00:00:00.000001", "0100000000000000") == 0);
	t.id = TL_ICE_TIMESTAMPTZ;
	CHECK(roundtrip(&t, "1969-12-31T23:59:59.999999Z", "ffffffffffffffff") == 0);
	t.id = TL_ICE_STRING;
	CHECK(roundtrip(&t, "iceberg", "69636562657267") == 0);
	CHECK(roundtrip(&t, "", "") == 0);
	t.id = TL_ICE_UUID;
	CHECK(roundtrip(&t, "f79c3e09-677c-4bbd-a479-3f349cb785e7", "f79c3e09677c4bbda4793f349cb785e7") == 0);
	t.id = TL_ICE_BINARY;
	CHECK(roundtrip(&t, "00010203", "00010203") == 0);
	t.id = TL_ICE_FIXED;
	t.length = 2;
	CHECK(roundtrip(&t, "ff00", "ff00") == 0);
	/* Decimals: minimal big-endian two's complement of the unscaled value. */
	tl_ice_type d = {.id = TL_ICE_DECIMAL, .precision = 38, .scale = 2};
	CHECK(roundtrip(&d, "14.20", "058c") == 0);
	CHECK(roundtrip(&d, "0", "00") == 0);
	CHECK(roundtrip(&d, "-0.01", "ff") == 0);
	CHECK(roundtrip(&d, "1.28", "0080") == 0);
	CHECK(roundtrip(&d, "-1.28", "80") == 0);
	CHECK(roundtrip(&d, "-1.29", "ff7f") == 0);
	CHECK(roundtrip(&d, "999999999999999999999999999999999999.99", "4b3b4ca85a86c47a098a223fffffffff") == 0);
	CHECK(roundtrip(&d, "-999999999999999999999999999999999999.99", "b4c4b357a5793b85f675ddc000000001") == 0);
}

TEST(iceberg_single_value_checks_lengths)
{
	tl_error err;
	tl_ice_value v;
	static const uint8_t bytes[17] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
	struct { tl_ice_type type; size_t len; } bad[] = {
		{{.id = TL_ICE_BOOLEAN}, 2}, {{.id = TL_ICE_BOOLEAN}, 0}, {{.id = TL_ICE_INT}, 8},
		{{.id = TL_ICE_INT}, 3}, {{.id = TL_ICE_LONG}, 7}, {{.id = TL_ICE_DATE}, 8},
		{{.id = TL_ICE_TIME}, 4}, {{.id = TL_ICE_TIMESTAMP}, 4}, {{.id = TL_ICE_FLOAT}, 8},
		{{.id = TL_ICE_DOUBLE}, 5}, {{.id = TL_ICE_UUID}, 15}, {{.id = TL_ICE_FIXED, .length = 4}, 5},
		{{.id = TL_ICE_DECIMAL, .precision = 10}, 0}, {{.id = TL_ICE_DECIMAL, .precision = 38}, 17},
		{{.id = TL_ICE_BOOLEAN}, 1}, /* the byte 1 is fine, checked next */
	};
	for (size_t i = 0; i + 1 < sizeof(bad) / sizeof(bad[0]); i++) {
		tl_error_clear(&err);
		if (tl_ice_value_deserialize(&bad[i].type, bytes, bad[i].len, &v, &err) == 0) {
			tl_test_fail(__FILE__, __LINE__, "case %zu: %zu bytes accepted", i, bad[i].len);
			return;
		}
		CHECK_INT(err.code, TL_ERR_CORRUPT);
		CHECK(strstr(err.message, "bytes") != NULL);
	}
	tl_ice_type b = {.id = TL_ICE_BOOLEAN};
	tl_error_clear(&err);
	CHECK(tl_ice_value_deserialize(&b, bytes + 1, 1, &v, &err) < 0);  /* the byte 2 */
	/* Widening as Java does: an int bound read as long, a float bound as double. */
	tl_ice_type l = {.id = TL_ICE_LONG}, dbl = {.id = TL_ICE_DOUBLE};
	static const uint8_t minus_two[4] = {0xfe, 0xff, 0xff, 0xff}, one_f[4] = {0, 0, 0x80, 0x3f};
	CHECK_OK(tl_ice_value_deserialize(&l, minus_two, 4, &v, &err), &err);
	CHECK_INT(v.v.i64, -2);
	CHECK_OK(tl_ice_value_deserialize(&dbl, one_f, 4, &v, &err), &err);
	CHECK(v.v.f64 == 1.0);
	/* Serializing a null is the caller's mistake. */
	tl_buf out;
	tl_buf_init(&out);
	tl_ice_value null = tl_ice_null();
	tl_error_clear(&err);
	CHECK(tl_ice_value_serialize(&l, &null, &out, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_buf_free(&out);
}

TEST(iceberg_value_parse_rejects_bad_text)
{
	tl_error err;
	tl_arena arena;
	tl_arena_init(&arena, 128);
	tl_ice_value v;
	tl_ice_type d = {.id = TL_ICE_DECIMAL, .precision = 4, .scale = 2};
	tl_ice_type i = {.id = TL_ICE_INT}, date = {.id = TL_ICE_DATE};
	const struct { const tl_ice_type *t; const char *text; } bad[] = {
		{&d, "100.00"}, {&d, "1.234"}, {&d, "x"}, {&i, "2147483648"}, {&i, "1x"}, {&date, "2020-13-01"},
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		tl_error_clear(&err);
		if (tl_ice_value_parse(bad[k].t, bad[k].text, &arena, &v, &err) == 0) {
			tl_test_fail(__FILE__, __LINE__, "\"%s\" accepted", bad[k].text);
			break;
		}
	}
	tl_arena_free(&arena);
}

TEST(iceberg_civil_dates)
{
	int64_t y;
	int m, d;
	CHECK_INT(tl_days_from_civil(1970, 1, 1), 0);
	CHECK_INT(tl_days_from_civil(2017, 11, 16), 17486);
	CHECK_INT(tl_days_from_civil(1969, 12, 31), -1);
	CHECK_INT(tl_days_from_civil(2000, 3, 1), 11017);
	for (int64_t days = -800000; days <= 800000; days += 997) {
		tl_civil_from_days(days, &y, &m, &d);
		CHECK_INT(tl_days_from_civil(y, m, d), days);
	}
	tl_civil_from_days(-719528, &y, &m, &d);  /* 0000-01-01 */
	CHECK_INT(y, 0);
	CHECK_INT(m, 1);
	CHECK_INT(d, 1);
}

/* ---- schemas ---- */

static const char NESTED_SCHEMA[] =
	"{\"type\":\"struct\",\"schema-id\":3,\"identifier-field-ids\":[1],\"fields\":["
	"{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
	"{\"id\":2,\"name\":\"price\",\"required\":false,\"type\":\"decimal(20, 4)\",\"doc\":\"in euros\"},"
	"{\"id\":3,\"name\":\"loc\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
	"  {\"id\":6,\"name\":\"lat\",\"required\":true,\"type\":\"double\"}]}},"
	"{\"id\":4,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\",\"element-id\":7,"
	"  \"element\":\"string\",\"element-required\":false}},"
	"{\"id\":5,\"name\":\"m\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":8,\"key\":\"string\","
	"  \"value-id\":9,\"value\":\"fixed[16]\",\"value-required\":true}}]}";

static int schema_from_text(const char *text, tl_ice_schema *schema, tl_error *err)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	if (j == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "test JSON: %s", jerr.text);
	int rc = tl_ice_schema_from_json(j, schema, err);
	json_decref(j);
	return rc;
}

TEST(iceberg_schema_json_round_trip_and_lookups)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema s, back;
	CHECK_OK(schema_from_text(NESTED_SCHEMA, &s, &err), &err);
	CHECK_INT(s.schema_id, 3);
	CHECK_INT(s.nfields, 5);
	CHECK_INT(tl_ice_schema_max_id(&s), 9);
	CHECK_STR(tl_ice_schema_find_id(&s, 6)->name, "lat");
	CHECK_STR(tl_ice_schema_find_id(&s, 9)->name, "value");
	CHECK(tl_ice_schema_find_id(&s, 9)->required);
	CHECK_INT(tl_ice_schema_find_id(&s, 9)->type.length, 16);
	CHECK_INT(tl_ice_schema_find_name(&s, "loc.lat")->id, 6);
	CHECK_INT(tl_ice_schema_find_name(&s, "price")->type.precision, 20);
	CHECK_STR(tl_ice_schema_find_name(&s, "price")->doc, "in euros");
	CHECK(tl_ice_schema_find_name(&s, "loc.nope") == NULL);
	CHECK(tl_ice_schema_find_name(&s, "tags.element") == NULL);
	CHECK(tl_ice_schema_find_id(&s, 10) == NULL);
	json_t *j = tl_ice_schema_to_json(&s);
	CHECK_OK(tl_ice_schema_from_json(j, &back, &err), &err);
	json_decref(j);
	CHECK(tl_ice_schema_equal(&s, &back));
	tl_ice_schema_free(&back);
	/* A copy equals; a changed copy does not. */
	tl_ice_schema_copy(&s, &back);
	CHECK(tl_ice_schema_equal(&s, &back));
	back.fields[3].type.fields[0].required = true;
	CHECK(!tl_ice_schema_equal(&s, &back));
	tl_ice_schema_free(&back);
	tl_ice_schema_free(&s);
}

TEST(iceberg_schema_rejects_bad_json)
{
	static const char *const bad[] = {
		"[]",
		"{\"type\":\"struct\"}",
		"{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true}]}",
		"{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"varchar\"}]}",
		"{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":1,\"type\":\"int\"}]}",
		"{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"int\"},"
		"{\"id\":1,\"name\":\"b\",\"required\":true,\"type\":\"int\"}]}",
		"{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"decimal(39,0)\"}]}",
		"{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":"
		"{\"type\":\"list\",\"element-id\":1,\"element\":\"int\",\"element-required\":true}}]}",
		"{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"s\",\"required\":true,\"type\":"
		"{\"type\":\"struct\",\"fields\":[{\"id\":2,\"name\":\"a\",\"required\":true,\"type\":\"int\"},"
		"{\"id\":3,\"name\":\"a\",\"required\":true,\"type\":\"int\"}]}}]}",
		"{\"type\":\"struct\",\"fields\":[{\"id\":0,\"name\":\"a\",\"required\":true,\"type\":\"int\"}]}",
		"{\"type\":\"struct\",\"identifier-field-ids\":[5],\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"int\"}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tl_error err;
		tl_error_clear(&err);
		tl_ice_schema s;
		if (schema_from_text(bad[i], &s, &err) == 0) {
			tl_ice_schema_free(&s);
			tl_test_fail(__FILE__, __LINE__, "schema %zu accepted", i);
			return;
		}
		CHECK(err.code == TL_ERR_CORRUPT || err.code == TL_ERR_UNSUPPORTED);
	}
}

static const char *pq_type(tl_ice_type type)
{
	static char text[128];
	tl_error err;
	tl_error_clear(&err);
	tl_ice_field f = {.id = 7, .name = "c", .required = true, .type = type};
	tl_pq_column col;
	if (tl_ice_field_to_pq_column(&f, &col, &err) < 0)
		return "error";
	if (col.field_id != 7 || !col.required)
		return "lost id or required";
	tl_buf b;
	tl_buf_init(&b);
	tl_pq_column_type_text(&col, &b);
	snprintf(text, sizeof(text), "%.*s", (int)b.len, (const char *)b.data);
	tl_buf_free(&b);
	return text;
}

TEST(iceberg_types_map_to_parquet_columns)
{
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_TIMESTAMP}), "INT64 TIMESTAMP(MICROS)");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_TIMESTAMPTZ}), "INT64 TIMESTAMP(MICROS, UTC)");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_TIME}), "INT64 TIME(MICROS)");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_DATE}), "INT32 DATE");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_UUID}), "FIXED_LEN_BYTE_ARRAY(16) UUID");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_STRING}), "BYTE_ARRAY STRING");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_BINARY}), "BYTE_ARRAY");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_FIXED, .length = 5}), "FIXED_LEN_BYTE_ARRAY(5)");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_DECIMAL, .precision = 9, .scale = 2}), "INT32 DECIMAL(9, 2)");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_DECIMAL, .precision = 18, .scale = 0}), "INT64 DECIMAL(18, 0)");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_DECIMAL, .precision = 19, .scale = 0}),
	          "FIXED_LEN_BYTE_ARRAY(9) DECIMAL(19, 0)");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_DECIMAL, .precision = 38, .scale = 10}),
	          "FIXED_LEN_BYTE_ARRAY(16) DECIMAL(38, 10)");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_LONG}), "INT64");
	CHECK_STR(pq_type((tl_ice_type){.id = TL_ICE_STRUCT}), "error");
}

TEST(iceberg_flat_schema_maps_to_parquet_schema)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema s;
	tl_ice_field fields[] = {
		{.id = 3, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 1, .name = "at", .type = {.id = TL_ICE_TIMESTAMPTZ}},
		{.id = 2, .name = "amount", .type = {.id = TL_ICE_DECIMAL, .precision = 30, .scale = 5}},
	};
	CHECK_OK(tl_ice_schema_init(&s, 0, fields, 3, &err), &err);
	tl_pq_schema *pq = tl_ice_schema_to_pq_schema(&s, &err);
	CHECK_OK(pq ? 0 : -1, &err);
	CHECK_INT(pq->ncolumns, 3);
	CHECK_STR(pq->columns[1].name, "at");
	CHECK_INT(pq->columns[0].field_id, 3);
	CHECK_INT(pq->columns[2].field_id, 2);
	CHECK_INT(pq->columns[2].type_length, 13);
	CHECK(pq->columns[0].required && !pq->columns[1].required);
	tl_pq_schema_free(pq);
	tl_ice_schema_free(&s);

	/* Nested fields have no single column; duplicate ids are the caller's error. */
	CHECK_OK(schema_from_text(NESTED_SCHEMA, &s, &err), &err);
	CHECK(tl_ice_schema_to_pq_schema(&s, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK(strstr(err.message, "loc") != NULL);
	tl_ice_schema_free(&s);
	tl_error_clear(&err);
	fields[1].id = 3;
	CHECK(tl_ice_schema_init(&s, 0, fields, 3, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
}
