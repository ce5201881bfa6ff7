/*
 * test_schema.c: building and validating flat Parquet schemas, batches,
 * writer defaults, and the printable names of types, codecs and encodings.
 */
#include <stdlib.h>

#include "test.h"
#include "tierlake/parquet.h"

static tl_pq_column column(const char *name, tl_pq_physical physical)
{
	tl_pq_column c;
	memset(&c, 0, sizeof(c));
	c.name = (char *)name;
	c.physical = physical;
	c.field_id = -1;
	return c;
}

/* Validates a one-column schema; returns the error message ("" when valid). */
static const char *validate_one(const tl_pq_column *col, tl_error *err)
{
	tl_pq_schema *schema = tl_pq_schema_new();
	tl_pq_schema_add(schema, col);
	tl_error_clear(err);
	int rc = tl_pq_schema_validate(schema, err);
	tl_pq_schema_free(schema);
	return rc == 0 ? "" : err->message;
}

TEST(schema_add_copies_names_and_find_locates_them)
{
	char name[8] = "alpha";
	tl_pq_schema *schema = tl_pq_schema_new();
	tl_pq_column c = column(name, TL_PQ_INT64);
	CHECK_INT(tl_pq_schema_add(schema, &c), 0);
	strcpy(name, "zzz");   /* the schema must hold its own copy */
	for (int i = 1; i < 40; i++) {
		char other[16];
		snprintf(other, sizeof(other), "col%d", i);
		c = column(other, TL_PQ_INT32);
		c.field_id = i;
		CHECK_INT(tl_pq_schema_add(schema, &c), i);
	}
	CHECK_INT(schema->ncolumns, 40);
	CHECK_STR(schema->columns[0].name, "alpha");
	CHECK_INT(tl_pq_schema_find(schema, "alpha"), 0);
	CHECK_INT(tl_pq_schema_find(schema, "col39"), 39);
	CHECK_INT(schema->columns[39].field_id, 39);
	CHECK_INT(tl_pq_schema_find(schema, "zzz"), -1);
	CHECK_INT(tl_pq_schema_find(schema, "col4"), 4);
	tl_error err;
	tl_error_clear(&err);
	CHECK_OK(tl_pq_schema_validate(schema, &err), &err);
	tl_pq_schema_free(schema);
}

TEST(schema_validate_accepts_every_supported_combination)
{
	tl_error err;
	tl_pq_column c;
	const tl_pq_physical plain_types[] = {TL_PQ_BOOLEAN, TL_PQ_INT32, TL_PQ_INT64, TL_PQ_FLOAT, TL_PQ_DOUBLE,
	                                      TL_PQ_BYTE_ARRAY};
	for (size_t i = 0; i < sizeof(plain_types) / sizeof(plain_types[0]); i++) {
		c = column("x", plain_types[i]);
		CHECK_STR(validate_one(&c, &err), "");
	}
	c = column("x", TL_PQ_FIXED_LEN_BYTE_ARRAY);
	c.type_length = 3;
	CHECK_STR(validate_one(&c, &err), "");

	c = column("s", TL_PQ_BYTE_ARRAY);
	c.logical = TL_PQ_LOGICAL_STRING;
	CHECK_STR(validate_one(&c, &err), "");
	c.logical = TL_PQ_LOGICAL_JSON;
	CHECK_STR(validate_one(&c, &err), "");
	c.logical = TL_PQ_LOGICAL_ENUM;
	CHECK_STR(validate_one(&c, &err), "");

	c = column("d", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_DATE;
	CHECK_STR(validate_one(&c, &err), "");

	c = column("ts", TL_PQ_INT64);
	c.logical = TL_PQ_LOGICAL_TIMESTAMP;
	for (int unit = TL_PQ_MILLIS; unit <= TL_PQ_NANOS; unit++) {
		c.unit = (tl_pq_time_unit)unit;
		c.utc_adjusted = unit == TL_PQ_MICROS;
		CHECK_STR(validate_one(&c, &err), "");
	}

	c = column("t", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_TIME;
	c.unit = TL_PQ_MILLIS;
	CHECK_STR(validate_one(&c, &err), "");
	c.physical = TL_PQ_INT64;
	c.unit = TL_PQ_MICROS;
	CHECK_STR(validate_one(&c, &err), "");
	c.unit = TL_PQ_NANOS;
	CHECK_STR(validate_one(&c, &err), "");

	c = column("dec", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_DECIMAL;
	c.precision = 9;
	c.scale = 9;
	CHECK_STR(validate_one(&c, &err), "");
	c.physical = TL_PQ_INT64;
	c.precision = 18;
	c.scale = 0;
	CHECK_STR(validate_one(&c, &err), "");
	c.physical = TL_PQ_FIXED_LEN_BYTE_ARRAY;
	c.type_length = 16;
	c.precision = 38;
	CHECK_STR(validate_one(&c, &err), "");
	c.type_length = 5;   /* 2^39 - 1 has 12 digits: 11 always fit */
	c.precision = 11;
	CHECK_STR(validate_one(&c, &err), "");
	c.physical = TL_PQ_BYTE_ARRAY;
	c.precision = 60;
	CHECK_STR(validate_one(&c, &err), "");

	c = column("u", TL_PQ_FIXED_LEN_BYTE_ARRAY);
	c.type_length = 16;
	c.logical = TL_PQ_LOGICAL_UUID;
	CHECK_STR(validate_one(&c, &err), "");

	c = column("i", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_INT;
	const int widths[] = {8, 16, 32};
	for (int i = 0; i < 3; i++) {
		c.int_bit_width = widths[i];
		c.int_signed = i != 1;
		CHECK_STR(validate_one(&c, &err), "");
	}
	c.physical = TL_PQ_INT64;
	c.int_bit_width = 64;
	CHECK_STR(validate_one(&c, &err), "");
}

#define CHECK_REJECTED(col, fragment)                                                                 \
	do {                                                                                              \
		const char *msg_ = validate_one(&(col), &err);                                                \
		if (strstr(msg_, (fragment)) == NULL) {                                                       \
			tl_test_fail(__FILE__, __LINE__, "expected an error containing \"%s\", got \"%s\"", (fragment), msg_); \
			return;                                                                                   \
		}                                                                                             \
	} while (0)

TEST(schema_validate_rejects_bad_combinations_with_clear_messages)
{
	tl_error err;
	tl_pq_column c;

	c = column("u", TL_PQ_FIXED_LEN_BYTE_ARRAY);
	c.type_length = 15;
	c.logical = TL_PQ_LOGICAL_UUID;
	CHECK_REJECTED(c, "column \"u\": UUID must be stored as FIXED_LEN_BYTE_ARRAY(16)");
	c.physical = TL_PQ_BYTE_ARRAY;
	CHECK_REJECTED(c, "UUID must be stored as FIXED_LEN_BYTE_ARRAY(16), not BYTE_ARRAY");

	c = column("f", TL_PQ_FIXED_LEN_BYTE_ARRAY);
	CHECK_REJECTED(c, "column \"f\": FIXED_LEN_BYTE_ARRAY needs a positive type_length, not 0");
	c.type_length = -4;
	CHECK_REJECTED(c, "positive type_length, not -4");

	c = column("old", TL_PQ_INT96);
	CHECK_REJECTED(c, "INT96 is deprecated and read-only");
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);

	c = column("dec", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_DECIMAL;
	c.precision = 10;
	c.scale = 2;
	CHECK_REJECTED(c, "column \"dec\": DECIMAL(10, 2) does not fit in INT32, which holds at most 9 digits");
	c.physical = TL_PQ_INT64;
	c.precision = 19;
	CHECK_REJECTED(c, "DECIMAL(19, 2) does not fit in INT64, which holds at most 18 digits");
	c.physical = TL_PQ_FIXED_LEN_BYTE_ARRAY;
	c.type_length = 4;
	c.precision = 10;
	CHECK_REJECTED(c, "DECIMAL(10, 2) does not fit in FIXED_LEN_BYTE_ARRAY(4), which holds at most 9 digits");
	c.type_length = 16;
	c.precision = 39;
	CHECK_REJECTED(c, "which holds at most 38 digits");
	c.precision = 5;
	c.scale = 6;
	CHECK_REJECTED(c, "DECIMAL scale 6 must be between 0 and the precision 5");
	c.scale = -1;
	CHECK_REJECTED(c, "DECIMAL scale -1");
	c.precision = 0;
	c.scale = 0;
	CHECK_REJECTED(c, "DECIMAL precision must be at least 1");
	c.physical = TL_PQ_DOUBLE;
	c.precision = 5;
	CHECK_REJECTED(c, "DECIMAL must be stored as INT32, INT64, FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY, not DOUBLE");

	c = column("t", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_TIME;
	c.unit = TL_PQ_MICROS;
	CHECK_REJECTED(c, "column \"t\": TIME(MICROS) must be stored as INT64, not INT32");
	c.physical = TL_PQ_INT64;
	c.unit = TL_PQ_MILLIS;
	CHECK_REJECTED(c, "TIME(MILLIS) must be stored as INT32, not INT64");
	c.unit = (tl_pq_time_unit)7;
	CHECK_REJECTED(c, "TIME has an unknown time unit 7");

	c = column("ts", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_TIMESTAMP;
	c.unit = TL_PQ_MICROS;
	CHECK_REJECTED(c, "TIMESTAMP must be stored as INT64, not INT32");

	c = column("d", TL_PQ_INT64);
	c.logical = TL_PQ_LOGICAL_DATE;
	CHECK_REJECTED(c, "DATE must be stored as INT32, not INT64");

	c = column("s", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_STRING;
	CHECK_REJECTED(c, "STRING must be stored as BYTE_ARRAY, not INT32");
	c.logical = TL_PQ_LOGICAL_JSON;
	CHECK_REJECTED(c, "JSON must be stored as BYTE_ARRAY");
	c.logical = TL_PQ_LOGICAL_ENUM;
	CHECK_REJECTED(c, "ENUM must be stored as BYTE_ARRAY");

	c = column("i", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_INT;
	c.int_bit_width = 12;
	CHECK_REJECTED(c, "INT bit width must be 8, 16, 32 or 64, not 12");
	c.int_bit_width = 64;
	CHECK_REJECTED(c, "INT(64) must be stored as INT64, not INT32");
	c.physical = TL_PQ_INT64;
	c.int_bit_width = 16;
	CHECK_REJECTED(c, "INT(8|16|32) must be stored as INT32, not INT64");

	c = column("x", (tl_pq_physical)42);
	CHECK_REJECTED(c, "unknown physical type 42");
	c = column("x", TL_PQ_INT32);
	c.logical = (tl_pq_logical)99;
	CHECK_REJECTED(c, "unknown logical type 99");
	c = column("", TL_PQ_INT32);
	CHECK_REJECTED(c, "column 0 has an empty name");

	tl_pq_schema *schema = tl_pq_schema_new();
	tl_error_clear(&err);
	CHECK(tl_pq_schema_validate(schema, &err) < 0);
	CHECK(strstr(err.message, "at least one column") != NULL);
	c = column("a", TL_PQ_INT32);
	tl_pq_schema_add(schema, &c);
	c = column("b", TL_PQ_INT32);
	tl_pq_schema_add(schema, &c);
	c = column("a", TL_PQ_INT64);
	tl_pq_schema_add(schema, &c);
	tl_error_clear(&err);
	CHECK(tl_pq_schema_validate(schema, &err) < 0);
	CHECK(strstr(err.message, "column name \"a\" appears twice (columns 0 and 2)") != NULL);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_pq_schema_free(schema);
}

static void type_text(const tl_pq_column *c, char *out, size_t len)
{
	tl_buf b;
	tl_buf_init(&b);
	tl_pq_column_type_text(c, &b);
	snprintf(out, len, "%.*s", (int)b.len, (const char *)b.data);
	tl_buf_free(&b);
}

TEST(schema_type_text_names_physical_and_logical_types)
{
	char text[128];
	tl_pq_column c = column("ts", TL_PQ_INT64);
	c.logical = TL_PQ_LOGICAL_TIMESTAMP;
	c.unit = TL_PQ_MICROS;
	c.utc_adjusted = true;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "INT64 TIMESTAMP(MICROS, UTC)");
	c.unit = TL_PQ_NANOS;
	c.utc_adjusted = false;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "INT64 TIMESTAMP(NANOS)");

	c = column("u", TL_PQ_FIXED_LEN_BYTE_ARRAY);
	c.type_length = 16;
	c.logical = TL_PQ_LOGICAL_UUID;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "FIXED_LEN_BYTE_ARRAY(16) UUID");

	c = column("d", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_DECIMAL;
	c.precision = 9;
	c.scale = 2;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "INT32 DECIMAL(9, 2)");

	c = column("t", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_TIME;
	c.unit = TL_PQ_MILLIS;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "INT32 TIME(MILLIS)");

	c = column("i", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_INT;
	c.int_bit_width = 16;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "INT32 INT(16, UNSIGNED)");

	c = column("s", TL_PQ_BYTE_ARRAY);
	c.logical = TL_PQ_LOGICAL_STRING;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "BYTE_ARRAY STRING");
	c.logical = TL_PQ_LOGICAL_JSON;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "BYTE_ARRAY JSON");
	c.logical = TL_PQ_LOGICAL_ENUM;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "BYTE_ARRAY ENUM");

	c = column("b", TL_PQ_BOOLEAN);
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "BOOLEAN");
	c = column("date", TL_PQ_INT32);
	c.logical = TL_PQ_LOGICAL_DATE;
	type_text(&c, text, sizeof(text));
	CHECK_STR(text, "INT32 DATE");
}

TEST(schema_names_of_types_codecs_and_encodings)
{
	CHECK_STR(tl_pq_physical_name(TL_PQ_BOOLEAN), "BOOLEAN");
	CHECK_STR(tl_pq_physical_name(TL_PQ_INT96), "INT96");
	CHECK_STR(tl_pq_physical_name(TL_PQ_FIXED_LEN_BYTE_ARRAY), "FIXED_LEN_BYTE_ARRAY");
	CHECK_STR(tl_pq_physical_name((tl_pq_physical)99), "UNKNOWN");

	CHECK_STR(tl_pq_codec_name(TL_PQ_UNCOMPRESSED), "UNCOMPRESSED");
	CHECK_STR(tl_pq_codec_name(TL_PQ_ZSTD), "ZSTD");
	CHECK_STR(tl_pq_codec_name(TL_PQ_LZ4_RAW), "LZ4_RAW");
	CHECK_STR(tl_pq_codec_name(TL_PQ_LZ4), "LZ4");
	CHECK_STR(tl_pq_codec_name((tl_pq_codec)-1), "UNKNOWN");

	CHECK_STR(tl_pq_encoding_name(0), "PLAIN");
	CHECK_STR(tl_pq_encoding_name(2), "PLAIN_DICTIONARY");
	CHECK_STR(tl_pq_encoding_name(3), "RLE");
	CHECK_STR(tl_pq_encoding_name(8), "RLE_DICTIONARY");
	CHECK_STR(tl_pq_encoding_name(9), "BYTE_STREAM_SPLIT");
	CHECK_STR(tl_pq_encoding_name(10), "UNKNOWN");
	CHECK_STR(tl_pq_encoding_name(-1), "UNKNOWN");

	CHECK_INT(tl_pq_codec_from_name("zstd"), TL_PQ_ZSTD);
	CHECK_INT(tl_pq_codec_from_name("ZSTD"), TL_PQ_ZSTD);
	CHECK_INT(tl_pq_codec_from_name("snappy"), TL_PQ_SNAPPY);
	CHECK_INT(tl_pq_codec_from_name("gzip"), TL_PQ_GZIP);
	CHECK_INT(tl_pq_codec_from_name("lz4_raw"), TL_PQ_LZ4_RAW);
	CHECK_INT(tl_pq_codec_from_name("none"), TL_PQ_UNCOMPRESSED);
	CHECK_INT(tl_pq_codec_from_name("uncompressed"), TL_PQ_UNCOMPRESSED);
	CHECK_INT(tl_pq_codec_from_name("lzo"), -1);
	CHECK_INT(tl_pq_codec_from_name(""), -1);
	CHECK_INT(tl_pq_codec_from_name(NULL), -1);
}

TEST(schema_writer_options_defaults)
{
	tl_pq_writer_options o;
	memset(&o, 0x5a, sizeof(o));
	tl_pq_writer_options_init(&o);
	CHECK_INT(o.codec, TL_PQ_ZSTD);
	CHECK_INT(o.compression_level, 0);
	CHECK_INT(o.page_bytes, 1024 * 1024);
	CHECK_INT(o.row_group_bytes, 128 * 1024 * 1024);
	CHECK_INT(o.row_group_rows, 1024 * 1024);
	CHECK(o.page_rows > 0);
	CHECK(o.dictionary);
	CHECK(o.dictionary_bytes > 0);
	CHECK(o.write_page_crc);
	CHECK(o.metadata == NULL);
	CHECK_INT(o.nmetadata, 0);
	CHECK(o.created_by == NULL);
}

TEST(schema_batch_new_sizes_vectors_and_marks_rows_valid)
{
	tl_pq_schema *schema = tl_pq_schema_new();
	const tl_pq_physical types[] = {TL_PQ_BOOLEAN, TL_PQ_INT32,     TL_PQ_INT64,
	                                TL_PQ_FLOAT,   TL_PQ_DOUBLE,    TL_PQ_BYTE_ARRAY,
	                                TL_PQ_FIXED_LEN_BYTE_ARRAY};
	for (int i = 0; i < 7; i++) {
		char name[16];
		snprintf(name, sizeof(name), "c%d", i);
		tl_pq_column c = column(name, types[i]);
		c.type_length = 4;
		c.required = i % 2 == 0;
		tl_pq_schema_add(schema, &c);
	}
	tl_pq_batch *batch = tl_pq_batch_new(schema, 100);
	CHECK_INT(batch->ncolumns, 7);
	CHECK_INT(batch->capacity, 100);
	CHECK_INT(batch->nrows, 0);
	for (int i = 0; i < 7; i++) {
		const tl_vector *vec = &batch->columns[i];
		CHECK(vec->v.b != NULL);
		if (i % 2 == 0) {
			CHECK(vec->valid == NULL);
		} else {
			CHECK(vec->valid != NULL);
			for (int r = 0; r < 100; r++)
				CHECK_INT(vec->valid[r], 1);
			CHECK(!tl_vector_is_null(vec, 99));
		}
	}
	/* Every slot is writable at its type's width (ASan checks the bounds). */
	batch->columns[0].v.b[99] = 1;
	batch->columns[1].v.i32[99] = -1;
	batch->columns[2].v.i64[99] = -1;
	batch->columns[3].v.f32[99] = 1.5f;
	batch->columns[4].v.f64[99] = 2.5;
	batch->columns[5].v.bytes[99] = tl_arena_copy(&batch->arena, "hello", 5);
	batch->columns[6].v.bytes[99] = tl_arena_copy(&batch->arena, "abcd", 4);
	CHECK(memcmp(batch->columns[5].v.bytes[99].ptr, "hello", 5) == 0);
	CHECK_INT(batch->columns[1].v.i32[0], 0);
	batch->columns[1].valid[5] = 0;
	CHECK(tl_vector_is_null(&batch->columns[1], 5));
	tl_pq_batch_free(batch);

	tl_pq_batch *empty = tl_pq_batch_new(schema, 0);
	CHECK_INT(empty->capacity, 0);
	tl_pq_batch_free(empty);
	tl_pq_batch_free(NULL);
	tl_pq_schema_free(schema);
}
