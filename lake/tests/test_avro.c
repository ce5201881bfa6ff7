/*
 * test_avro.c: Avro schemas and the binary encoding of single datums:
 * zigzag varints, every type round-tripped through tl_avro_encode and
 * tl_avro_decode, Iceberg's id attributes, schema errors by name, and
 * hostile datums (bad counts, indexes, budgets) refused with TL_ERR_CORRUPT.
 * Container files are tested in test_avro_file.c.
 */
#include <math.h>
#include <stdlib.h>

#include "avro/avro_internal.h"
#include "test.h"
#include "tierlake/avro.h"

#define S(json) tl_avro_schema_parse((json), strlen(json), &err)

TEST(avro_zigzag_varints)
{
	static const struct {
		int64_t v;
		uint8_t bytes[10];
		size_t len;
	} cases[] = {
		{0, {0x00}, 1},
		{-1, {0x01}, 1},
		{1, {0x02}, 1},
		{-64, {0x7f}, 1},
		{64, {0x80, 0x01}, 2},
		{INT64_MAX, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
		{INT64_MIN, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
	};
	tl_error err;
	tl_error_clear(&err);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tl_buf b;
		tl_buf_init(&b);
		avro_write_long(&b, cases[i].v);
		CHECK_INT(b.len, cases[i].len);
		CHECK(memcmp(b.data, cases[i].bytes, b.len) == 0);
		avro_cursor c = {b.data, b.data + b.len, false};
		int64_t back = 0;
		CHECK_OK(avro_read_long(&c, &back, "test", &err), &err);
		CHECK(back == cases[i].v);
		CHECK(c.p == c.end);
		/* Every proper prefix is truncated. */
		for (size_t cut = 0; cut < b.len; cut++) {
			avro_cursor t = {b.data, b.data + cut, false};
			tl_error e2;
			tl_error_clear(&e2);
			CHECK(avro_read_long(&t, &back, "test", &e2) == -1);
			CHECK_INT(e2.code, TL_ERR_CORRUPT);
			CHECK(t.truncated);
		}
		tl_buf_free(&b);
	}
	/* Eleven bytes, or a tenth byte with more than the top bit, do not fit a long. */
	static const uint8_t too_long[11] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	static const uint8_t overflow[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03};
	int64_t v;
	avro_cursor c = {too_long, too_long + 11, false};
	CHECK(avro_read_long(&c, &v, "test", &err) == -1);
	CHECK(strstr(err.message, "test") != NULL);
	tl_error_clear(&err);
	c = (avro_cursor){overflow, overflow + 10, false};
	CHECK(avro_read_long(&c, &v, "test", &err) == -1);
	CHECK(strstr(err.message, "overflows") != NULL);
}

static const char ICEBERG_LIKE[] =
	"{\"type\": \"record\", \"name\": \"manifest_entry\", \"namespace\": \"iceberg\", \"fields\": ["
	" {\"name\": \"status\", \"type\": \"int\", \"field-id\": 0},"
	" {\"name\": \"snapshot_id\", \"type\": [\"null\", \"long\"], \"default\": null, \"field-id\": 1},"
	" {\"name\": \"data_file\", \"field-id\": 2, \"type\": {\"type\": \"record\", \"name\": \"r2\", \"fields\": ["
	"   {\"name\": \"file_path\", \"type\": \"string\", \"field-id\": 100},"
	"   {\"name\": \"column_sizes\", \"field-id\": 108, \"type\": [\"null\", {\"type\": \"array\","
	"     \"logicalType\": \"map\", \"items\": {\"type\": \"record\", \"name\": \"k117_v118\", \"fields\": ["
	"       {\"name\": \"key\", \"type\": \"int\", \"field-id\": 117},"
	"       {\"name\": \"value\", \"type\": \"long\", \"field-id\": 118}]}, \"element-id\": 116}]},"
	"   {\"name\": \"props\", \"type\": {\"type\": \"map\", \"values\": \"string\", \"key-id\": 7, \"value-id\": 8}},"
	"   {\"name\": \"day\", \"type\": {\"type\": \"int\", \"logicalType\": \"date\"}},"
	"   {\"name\": \"amount\", \"type\": {\"type\": \"fixed\", \"name\": \"dec\", \"size\": 16,"
	"     \"logicalType\": \"decimal\", \"precision\": 38, \"scale\": 2}},"
	"   {\"name\": \"again\", \"type\": [\"null\", \"dec\"]}]}}]}";

TEST(avro_schema_iceberg_attributes)
{
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *s = S(ICEBERG_LIKE);
	CHECK_OK(s ? 0 : -1, &err);
	CHECK_INT(s->type, TL_AVRO_RECORD);
	CHECK_STR(s->name, "iceberg.manifest_entry");
	CHECK_INT(s->n_fields, 3);
	CHECK_INT(s->fields[0].field_id, 0);
	CHECK_STR(s->fields[1].default_json, "null");
	CHECK_INT(s->fields[1].type->type, TL_AVRO_UNION);
	const tl_avro_schema *df = s->fields[2].type;
	CHECK_STR(df->name, "iceberg.r2"); /* inherits the namespace */
	CHECK_INT(df->fields[0].field_id, 100);
	const tl_avro_schema *sizes = df->fields[1].type->branches[1];
	CHECK_INT(sizes->type, TL_AVRO_ARRAY);
	CHECK_INT(sizes->element_id, 116);
	CHECK_STR(sizes->logical_type, "map");
	CHECK_INT(sizes->items->fields[1].field_id, 118);
	CHECK_INT(df->fields[2].type->key_id, 7);
	CHECK_INT(df->fields[2].type->value_id, 8);
	CHECK_INT(df->fields[2].type->element_id, TL_AVRO_NO_ID);
	CHECK_STR(df->fields[3].type->logical_type, "date");
	CHECK_INT(df->fields[4].type->precision, 38);
	CHECK_INT(df->fields[4].type->scale, 2);
	/* "dec" resolves in the enclosing namespace to the very same node. */
	CHECK(df->fields[5].type->branches[1] == df->fields[4].type);
	CHECK_INT(tl_avro_schema_field_index(df, "props"), 2);
	CHECK_INT(tl_avro_schema_field_index(df, "nope"), -1);
	CHECK(strcmp(tl_avro_schema_json(s), ICEBERG_LIKE) == 0);
	tl_avro_schema_free(s);
}

TEST(avro_schema_errors_are_named)
{
	static const struct {
		const char *json;
		const char *message;
	} cases[] = {
		{"{\"type\": ", "invalid JSON"},
		{"\"integer\"", "unknown type \"integer\""},
		{"{\"type\": \"record\", \"name\": \"r\"}", "record r has no \"fields\""},
		{"{\"type\": \"record\", \"fields\": []}", "record type without a \"name\""},
		{"{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"a\", \"type\": \"int\"},"
		 " {\"name\": \"a\", \"type\": \"long\"}]}", "two fields named a"},
		{"{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"a\"}]}", "field a of record r has no type"},
		{"{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"a\", \"type\": \"nope\"}]}",
		 "field a: Avro schema: unknown type \"nope\""},
		{"{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"a\", \"type\": \"int\","
		 " \"field-id\": \"x\"}]}", "\"field-id\" of a is not a 32-bit integer"},
		{"{\"type\": \"enum\", \"name\": \"e\", \"symbols\": []}", "enum e needs a non-empty"},
		{"{\"type\": \"fixed\", \"name\": \"f\"}", "fixed f needs a \"size\""},
		{"[\"null\", [\"int\"]]", "a union may not contain a union"},
		{"[]", "a union needs 1 to 1000 branches"},
		{"{\"type\": \"array\"}", "array without \"items\""},
		{"{\"type\": \"map\", \"values\": \"int\", \"key-id\": 1.5}", "\"key-id\" of map"},
		{"[{\"type\": \"fixed\", \"name\": \"f\", \"size\": 1}, {\"type\": \"fixed\", \"name\": \"f\", \"size\": 2}]",
		 "type f is defined twice"},
		{"42", "must be a string, array or object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tl_error err;
		tl_error_clear(&err);
		tl_avro_schema *s = S(cases[i].json);
		if (s != NULL) {
			tl_avro_schema_free(s);
			tl_test_fail(__FILE__, __LINE__, "schema %s parsed", cases[i].json);
			return;
		}
		CHECK_INT(err.code, TL_ERR_INVALID);
		if (strstr(err.message, cases[i].message) == NULL) {
			tl_test_fail(__FILE__, __LINE__, "schema %s: message \"%s\" lacks \"%s\"", cases[i].json, err.message,
			             cases[i].message);
			return;
		}
	}
	/* Nesting is bounded. */
	tl_buf deep;
	tl_buf_init(&deep);
	for (int i = 0; i < 100; i++)
		tl_buf_append_str(&deep, "{\"type\": \"array\", \"items\": ");
	tl_buf_append_str(&deep, "\"int\"");
	for (int i = 0; i < 100; i++)
		tl_buf_append_str(&deep, "}");
	tl_error err;
	tl_error_clear(&err);
	CHECK(tl_avro_schema_parse((const char *)deep.data, deep.len, &err) == NULL);
	CHECK(strstr(err.message, "nested deeper") != NULL);
	tl_buf_free(&deep);
}

TEST(avro_schema_recursive_record)
{
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *s = S("{\"type\": \"record\", \"name\": \"node\", \"fields\": ["
	                      "{\"name\": \"v\", \"type\": \"int\"}, {\"name\": \"next\", \"type\": [\"null\", \"node\"]}]}");
	CHECK_OK(s ? 0 : -1, &err);
	CHECK(s->fields[1].type->branches[1] == s);
	/* A list 3 -> 2 -> 1 round trips. */
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_avro_value *head = NULL;
	for (int i = 1; i <= 3; i++) {
		tl_avro_value *n = tl_avro_record_new(&arena, s);
		tl_avro_record_field(n, "v", TL_AVRO_INT)->u.i32 = i;
		if (head != NULL) {
			tl_avro_value *slot = tl_avro_record_field(n, "next", TL_AVRO_RECORD);
			CHECK(slot != NULL);
			slot->u.record = head->u.record;
		}
		head = n;
	}
	tl_buf b;
	tl_buf_init(&b);
	CHECK_OK(tl_avro_encode(&b, s, head, &err), &err);
	tl_avro_value back;
	size_t used = 0;
	CHECK_OK(tl_avro_decode(b.data, b.len, &used, s, &arena, 100, &back, &err), &err);
	CHECK_INT(used, b.len);
	int expect = 3;
	for (const tl_avro_value *n = &back; !tl_avro_is_null(n); n = tl_avro_record_get(n, "next")) {
		int32_t v = 0;
		CHECK_OK(tl_avro_get_int(tl_avro_record_get(n, "v"), &v), &err);
		CHECK_INT(v, expect--);
	}
	CHECK_INT(expect, 0);
	tl_buf_free(&b);
	tl_arena_free(&arena);
	tl_avro_schema_free(s);
}

static const char ALL_TYPES[] =
	"{\"type\": \"record\", \"name\": \"all\", \"fields\": ["
	" {\"name\": \"n\", \"type\": \"null\", \"field-id\": 1},"
	" {\"name\": \"b\", \"type\": \"boolean\", \"field-id\": 2},"
	" {\"name\": \"i\", \"type\": \"int\", \"field-id\": 3},"
	" {\"name\": \"l\", \"type\": \"long\", \"field-id\": 4},"
	" {\"name\": \"f\", \"type\": \"float\", \"field-id\": 5},"
	" {\"name\": \"d\", \"type\": \"double\", \"field-id\": 6},"
	" {\"name\": \"by\", \"type\": \"bytes\", \"field-id\": 7},"
	" {\"name\": \"s\", \"type\": \"string\", \"field-id\": 8},"
	" {\"name\": \"fx\", \"type\": {\"type\": \"fixed\", \"name\": \"f3\", \"size\": 3}, \"field-id\": 9},"
	" {\"name\": \"e\", \"type\": {\"type\": \"enum\", \"name\": \"e\", \"symbols\": [\"A\", \"B\", \"C\"]}, \"field-id\": 10},"
	" {\"name\": \"a\", \"type\": {\"type\": \"array\", \"items\": [\"null\", \"long\"]}, \"field-id\": 11},"
	" {\"name\": \"m\", \"type\": {\"type\": \"map\", \"values\": \"string\"}, \"field-id\": 12},"
	" {\"name\": \"u\", \"type\": [\"null\", \"string\", \"double\"], \"field-id\": 13},"
	" {\"name\": \"r\", \"type\": {\"type\": \"record\", \"name\": \"inner\", \"fields\": ["
	"    {\"name\": \"x\", \"type\": [\"null\", \"int\"], \"field-id\": 15}]}, \"field-id\": 14}]}";

static tl_bytes str(const char *s)
{
	return (tl_bytes){(const uint8_t *)s, (uint32_t)strlen(s)};
}

/* Builds a record of ALL_TYPES whose values derive from seed. */
tl_avro_value *avro_test_all_types(tl_arena *arena, const tl_avro_schema *s, int seed);
tl_avro_value *avro_test_all_types(tl_arena *arena, const tl_avro_schema *s, int seed)
{
	tl_avro_value *r = tl_avro_record_new(arena, s);
	tl_avro_record_field(r, "b", TL_AVRO_BOOLEAN)->u.boolean = seed % 2 == 1;
	tl_avro_record_field(r, "i", TL_AVRO_INT)->u.i32 = seed % 3 == 0 ? INT32_MIN : -seed;
	tl_avro_record_field(r, "l", TL_AVRO_LONG)->u.i64 = seed % 3 == 0 ? INT64_MAX : (int64_t)seed * 1000000007;
	tl_avro_record_field(r, "f", TL_AVRO_FLOAT)->u.f32 = (float)seed / 8;
	tl_avro_record_field(r, "d", TL_AVRO_DOUBLE)->u.f64 = seed % 5 == 0 ? -0.0 : 1.0 / (seed + 1);
	char *text = tl_arena_alloc(arena, 32);
	snprintf(text, 32, "row %d \xc3\xa9", seed);
	tl_avro_record_field(r, "s", TL_AVRO_STRING)->u.bytes = str(text);
	uint8_t *raw = tl_arena_alloc(arena, 8);
	for (int i = 0; i < 8; i++)
		raw[i] = (uint8_t)(seed * 31 + i);
	tl_avro_record_field(r, "by", TL_AVRO_BYTES)->u.bytes = (tl_bytes){raw, (uint32_t)(seed % 9)};
	tl_avro_record_field(r, "fx", TL_AVRO_FIXED)->u.bytes = (tl_bytes){raw, 3};
	tl_avro_record_field(r, "e", TL_AVRO_ENUM)->u.symbol = (uint32_t)(seed % 3);
	tl_avro_value *a = tl_avro_record_field(r, "a", TL_AVRO_ARRAY);
	tl_avro_init_list(arena, a, (uint32_t)(seed % 4));
	for (uint32_t i = 0; i < a->u.list.n; i++) {
		if (i % 2 == 1)
			tl_avro_item(a, i, TL_AVRO_NULL);
		else
			tl_avro_item(a, i, TL_AVRO_LONG)->u.i64 = -(int64_t)i - seed;
	}
	tl_avro_value *m = tl_avro_record_field(r, "m", TL_AVRO_MAP);
	tl_avro_init_list(arena, m, (uint32_t)(seed % 3));
	for (uint32_t i = 0; i < m->u.list.n; i++) {
		m->u.list.keys[i] = i == 0 ? str("first") : str("second");
		tl_avro_item(m, i, TL_AVRO_STRING)->u.bytes = i == 0 ? str("") : str("two");
	}
	if (seed % 3 == 1)
		tl_avro_record_field(r, "u", TL_AVRO_STRING)->u.bytes = str("union string");
	else if (seed % 3 == 2)
		tl_avro_record_field(r, "u", TL_AVRO_DOUBLE)->u.f64 = 2.5;
	tl_avro_value *in = tl_avro_record_field(r, "r", TL_AVRO_RECORD);
	tl_avro_init_record(arena, in);
	if (seed % 2 == 0)
		tl_avro_record_field(in, "x", TL_AVRO_INT)->u.i32 = seed;
	return r;
}

/* Checks a decoded record against avro_test_all_types(seed); 0 if equal. */
int avro_test_check_all_types(const tl_avro_value *r, int seed, char *why, size_t why_len);
int avro_test_check_all_types(const tl_avro_value *r, int seed, char *why, size_t why_len)
{
#define EXPECT(cond)                                                                            \
	do {                                                                                        \
		if (!(cond)) {                                                                          \
			snprintf(why, why_len, "seed %d: %s", seed, #cond);                                 \
			return -1;                                                                          \
		}                                                                                       \
	} while (0)
	bool b;
	int32_t i32;
	int64_t i64;
	double d;
	tl_bytes bytes;
	EXPECT(tl_avro_is_null(tl_avro_record_get(r, "n")));
	EXPECT(tl_avro_get_bool(tl_avro_record_get(r, "b"), &b) == 0 && b == (seed % 2 == 1));
	EXPECT(tl_avro_get_int(tl_avro_record_get_by_id(r, 3), &i32) == 0 && i32 == (seed % 3 == 0 ? INT32_MIN : -seed));
	EXPECT(tl_avro_get_long(tl_avro_record_get(r, "i"), &i64) == 0 && i64 == i32); /* promotion */
	EXPECT(tl_avro_get_long(tl_avro_record_get_by_id(r, 4), &i64) == 0 &&
	       i64 == (seed % 3 == 0 ? INT64_MAX : (int64_t)seed * 1000000007));
	EXPECT(tl_avro_get_double(tl_avro_record_get(r, "f"), &d) == 0 && d == (float)seed / 8);
	EXPECT(tl_avro_get_double(tl_avro_record_get(r, "d"), &d) == 0 && d == (seed % 5 == 0 ? -0.0 : 1.0 / (seed + 1)));
	if (seed % 5 == 0)
		EXPECT(signbit(d));
	char text[32];
	snprintf(text, sizeof(text), "row %d \xc3\xa9", seed);
	EXPECT(tl_avro_get_string(tl_avro_record_get(r, "s"), &bytes) == 0 && bytes.len == strlen(text) &&
	       memcmp(bytes.ptr, text, bytes.len) == 0);
	EXPECT(tl_avro_get_bytes(tl_avro_record_get(r, "by"), &bytes) == 0 && bytes.len == (uint32_t)(seed % 9));
	for (uint32_t k = 0; k < bytes.len; k++)
		EXPECT(bytes.ptr[k] == (uint8_t)(seed * 31 + (int)k));
	EXPECT(tl_avro_get_bytes(tl_avro_record_get(r, "fx"), &bytes) == 0 && bytes.len == 3 &&
	       bytes.ptr[2] == (uint8_t)(seed * 31 + 2));
	EXPECT(tl_avro_get_string(tl_avro_record_get(r, "e"), &bytes) == 0 && bytes.len == 1 &&
	       bytes.ptr[0] == "ABC"[seed % 3]);
	const tl_avro_value *a = tl_avro_record_get_by_id(r, 11);
	EXPECT(a != NULL && tl_avro_value_type(a) == TL_AVRO_ARRAY && a->u.list.n == (uint32_t)(seed % 4));
	for (uint32_t k = 0; k < a->u.list.n; k++) {
		if (k % 2 == 1)
			EXPECT(tl_avro_is_null(&a->u.list.items[k]) && a->u.list.items[k].branch == 0);
		else
			EXPECT(tl_avro_get_long(&a->u.list.items[k], &i64) == 0 && i64 == -(int64_t)k - seed);
	}
	const tl_avro_value *m = tl_avro_record_get(r, "m");
	EXPECT(m != NULL && tl_avro_value_type(m) == TL_AVRO_MAP && m->u.list.n == (uint32_t)(seed % 3));
	for (uint32_t k = 0; k < m->u.list.n; k++) {
		const char *key = k == 0 ? "first" : "second", *val = k == 0 ? "" : "two";
		EXPECT(m->u.list.keys[k].len == strlen(key) && memcmp(m->u.list.keys[k].ptr, key, strlen(key)) == 0);
		EXPECT(tl_avro_get_string(&m->u.list.items[k], &bytes) == 0 && bytes.len == strlen(val));
	}
	const tl_avro_value *u = tl_avro_record_get(r, "u");
	if (seed % 3 == 0)
		EXPECT(tl_avro_is_null(u) && u->branch == 0);
	else if (seed % 3 == 1)
		EXPECT(tl_avro_get_string(u, &bytes) == 0 && bytes.len == 12 && u->branch == 1);
	else
		EXPECT(tl_avro_get_double(u, &d) == 0 && d == 2.5 && u->branch == 2);
	const tl_avro_value *x = tl_avro_record_get_by_id(tl_avro_record_get_by_id(r, 14), 15);
	if (seed % 2 == 0)
		EXPECT(tl_avro_get_int(x, &i32) == 0 && i32 == seed);
	else
		EXPECT(tl_avro_is_null(x));
	/* Wrong-type and missing lookups fail rather than reinterpret. */
	EXPECT(tl_avro_get_long(tl_avro_record_get(r, "s"), &i64) == -1);
	EXPECT(tl_avro_get_int(tl_avro_record_get(r, "l"), &i32) == -1);
	EXPECT(tl_avro_record_get(r, "missing") == NULL && tl_avro_record_get_by_id(r, 999) == NULL);
	return 0;
#undef EXPECT
}

const char *avro_test_all_types_schema(void);
const char *avro_test_all_types_schema(void)
{
	return ALL_TYPES;
}

TEST(avro_datum_round_trip_every_type)
{
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *s = S(ALL_TYPES);
	CHECK_OK(s ? 0 : -1, &err);
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	for (int seed = 0; seed < 30; seed++) {
		tl_avro_value *v = avro_test_all_types(&arena, s, seed);
		tl_buf b;
		tl_buf_init(&b);
		CHECK_OK(tl_avro_encode(&b, s, v, &err), &err);
		tl_avro_value back;
		size_t used = 0;
		CHECK_OK(tl_avro_decode(b.data, b.len, &used, s, &arena, 1000, &back, &err), &err);
		CHECK_INT(used, b.len);
		char why[200];
		if (avro_test_check_all_types(&back, seed, why, sizeof(why)) != 0) {
			tl_test_fail(__FILE__, __LINE__, "%s", why);
			return;
		}
		/* Every truncation is an error, never a read past the end. */
		for (size_t cut = 0; cut < b.len; cut++) {
			uint8_t *copy = malloc(cut ? cut : 1);
			memcpy(copy, b.data, cut);
			tl_error e2;
			tl_error_clear(&e2);
			int rc = tl_avro_decode(copy, cut, &used, s, &arena, 1000, &back, &e2);
			free(copy);
			CHECK(rc == -1);
			CHECK_INT(e2.code, TL_ERR_CORRUPT);
		}
		tl_buf_free(&b);
	}
	tl_arena_free(&arena);
	tl_avro_schema_free(s);
}

TEST(avro_encode_refuses_values_that_do_not_fit)
{
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *s = S(ALL_TYPES);
	CHECK_OK(s ? 0 : -1, &err);
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	tl_buf b;
	tl_buf_init(&b);
	/* A new record leaves non-nullable fields unset. */
	tl_avro_value *r = tl_avro_record_new(&arena, s);
	CHECK(tl_avro_encode(&b, s, r, &err) == -1);
	CHECK_INT(err.code, TL_ERR_INVALID);
	CHECK(strstr(err.message, "field b: ") != NULL);
	CHECK_INT(b.len, 0);
	/* A fixed of the wrong size, and an enum symbol out of range. */
	r = avro_test_all_types(&arena, s, 4);
	tl_avro_record_field(r, "fx", TL_AVRO_FIXED)->u.bytes.len = 2;
	tl_error_clear(&err);
	CHECK(tl_avro_encode(&b, s, r, &err) == -1);
	CHECK(strstr(err.message, "fixed f3 needs 3 bytes") != NULL);
	r = avro_test_all_types(&arena, s, 4);
	tl_avro_record_field(r, "e", TL_AVRO_ENUM)->u.symbol = 3;
	tl_error_clear(&err);
	CHECK(tl_avro_encode(&b, s, r, &err) == -1);
	CHECK(strstr(err.message, "no symbol 3") != NULL);
	/* Preparing a field for a type it does not allow. */
	CHECK(tl_avro_record_field(r, "u", TL_AVRO_LONG) == NULL);
	CHECK(tl_avro_record_field(r, "nope", TL_AVRO_LONG) == NULL);
	CHECK_INT(b.len, 0);
	tl_buf_free(&b);
	tl_arena_free(&arena);
	tl_avro_schema_free(s);
}

static int decode_bytes(const char *schema_json, const uint8_t *data, size_t len, uint64_t budget, tl_error *err)
{
	tl_error serr;
	tl_error_clear(&serr);
	tl_avro_schema *s = tl_avro_schema_parse(schema_json, strlen(schema_json), &serr);
	if (s == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "test schema: %s", serr.message);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_avro_value v;
	int rc = tl_avro_decode(data, len, NULL, s, &arena, budget, &v, err);
	tl_arena_free(&arena);
	tl_avro_schema_free(s);
	return rc;
}

TEST(avro_decode_hostile_datums)
{
	static const struct {
		const char *schema;
		uint8_t bytes[12];
		size_t len;
		const char *message;
	} cases[] = {
		{"\"boolean\"", {2}, 1, "boolean byte is 2"},
		{"\"int\"", {0x80, 0x80, 0x80, 0x80, 0x10}, 5, "int 2147483648 out of range"},
		{"{\"type\": \"enum\", \"name\": \"e\", \"symbols\": [\"A\"]}", {2}, 1, "enum index 1 out of range"},
		{"[\"null\", \"int\"]", {4}, 1, "union branch 2 out of range"},
		{"[\"null\", \"int\"]", {1}, 1, "union branch -1 out of range"},
		{"\"string\"", {0x0a, 'a'}, 2, "string 5 exceeds the 1 bytes left"},
		{"\"bytes\"", {0x01}, 1, "negative bytes"},
		{"{\"type\": \"array\", \"items\": \"long\"}", {0x7e, 0}, 2, "array block of 63 items exceeds"},
		{"{\"type\": \"map\", \"values\": \"null\"}", {0x02, 0x02, 'k'}, 3, "truncated map block count"},
		/* A million nulls from 4 bytes: the value budget stops it. */
		{"{\"type\": \"array\", \"items\": \"null\"}", {0x80, 0x89, 0x7a, 0}, 4, "more values than its size allows"},
		{"{\"type\": \"array\", \"items\": \"int\"}", {0x01, 0x02}, 2, "exceeds the 0 bytes left"},
		{"{\"type\": \"fixed\", \"name\": \"f\", \"size\": 4}", {1, 2, 3}, 3, "truncated fixed"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tl_error err;
		tl_error_clear(&err);
		int rc = decode_bytes(cases[i].schema, cases[i].bytes, cases[i].len, 1000, &err);
		if (rc != -1 || err.code != TL_ERR_CORRUPT || strstr(err.message, cases[i].message) == NULL) {
			tl_test_fail(__FILE__, __LINE__, "case %zu (%s): rc %d, \"%s\", wanted \"%s\"", i, cases[i].schema, rc,
			             err.message, cases[i].message);
			return;
		}
	}
	/* Blocks of an array with negative counts and byte sizes are combined. */
	static const uint8_t blocks[] = {0x03, 0x04, 0x02, 0x04, 0x01, 0x02, 0x06, 0x00};
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *s = S("{\"type\": \"array\", \"items\": \"int\"}");
	CHECK_OK(s ? 0 : -1, &err);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_avro_value v;
	CHECK_OK(tl_avro_decode(blocks, sizeof(blocks), NULL, s, &arena, 100, &v, &err), &err);
	CHECK_INT(v.u.list.n, 3);
	CHECK_INT(v.u.list.items[0].u.i32, 1);
	CHECK_INT(v.u.list.items[1].u.i32, 2);
	CHECK_INT(v.u.list.items[2].u.i32, 3);
	tl_arena_free(&arena);
	tl_avro_schema_free(s);
	/* Nesting deeper than the limit in data is refused, not recursed into. */
	s = S("{\"type\": \"record\", \"name\": \"n\", \"fields\": [{\"name\": \"c\", \"type\": [\"null\", \"n\"]}]}");
	CHECK_OK(s ? 0 : -1, &err);
	uint8_t chain[200];
	memset(chain, 0x02, sizeof(chain));
	tl_arena_init(&arena, 1024);
	CHECK(tl_avro_decode(chain, sizeof(chain), NULL, s, &arena, 100000, &v, &err) == -1);
	CHECK(strstr(err.message, "nested deeper") != NULL);
	tl_arena_free(&arena);
	tl_avro_schema_free(s);
}
