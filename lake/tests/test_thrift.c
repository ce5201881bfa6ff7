/*
 * test_thrift.c: the Thrift compact protocol codec (parquet/thrift.c).
 *
 * Byte vectors are written out by hand from the protocol's description, so
 * the writer is checked against the specification and not only against the
 * reader; then the reader is fed truncated, oversized and overly deep input.
 */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>

#include "parquet/thrift.h"
#include "test.h"

/* Fails the test (and returns) unless buf holds exactly the n bytes given. */
#define CHECK_BYTES(buf, ...)                                                   \
	do {                                                                        \
		static const uint8_t expect_[] = {__VA_ARGS__};                         \
		if (!same_bytes((buf)->data, (buf)->len, expect_, sizeof(expect_))) {   \
			tl_test_fail(__FILE__, __LINE__, "bytes differ: got %s",            \
			             hex((buf)->data, (buf)->len));                          \
			return;                                                             \
		}                                                                       \
	} while (0)

static int same_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static const char *hex(const uint8_t *p, size_t n)
{
	static char text[512];
	size_t used = 0;

	text[0] = '\0';
	for (size_t i = 0; i < n && used + 4 < sizeof(text); i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "%02x ", p[i]);
	return text;
}

/* Decodes `bytes` as one i32 (or i64), expecting failure when ok is 0. */
static int read_one_i64(const uint8_t *bytes, size_t n, int64_t *v, tl_error *err)
{
	th_reader r;

	tl_error_clear(err);
	th_reader_init(&r, bytes, n, err);
	return th_read_i64(&r, v);
}

TEST(thrift_zigzag_varint_i32)
{
	static const struct {
		int32_t value;
		uint8_t bytes[5];
		size_t n;
	} cases[] = {
		{0, {0x00}, 1},
		{-1, {0x01}, 1},
		{1, {0x02}, 1},
		{-2, {0x03}, 1},
		{63, {0x7e}, 1},
		{-64, {0x7f}, 1},
		{64, {0x80, 0x01}, 2},
		{-25200, {0xdf, 0x89, 0x03}, 3},   /* the spec's 50399 example, zigzagged */
		{INT32_MAX, {0xfe, 0xff, 0xff, 0xff, 0x0f}, 5},
		{INT32_MIN, {0xff, 0xff, 0xff, 0xff, 0x0f}, 5},
	};
	tl_error err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tl_buf buf;
		th_writer w;
		th_reader r;
		int32_t back;

		tl_buf_init(&buf);
		th_writer_init(&w, &buf);
		th_write_i32(&w, cases[i].value);
		int same = same_bytes(buf.data, buf.len, cases[i].bytes, cases[i].n);
		tl_buf_free(&buf);
		CHECK(same);

		tl_error_clear(&err);
		th_reader_init(&r, cases[i].bytes, cases[i].n, &err);
		CHECK_OK(th_read_i32(&r, &back), &err);
		CHECK_INT(back, cases[i].value);
		CHECK_INT(th_reader_offset(&r, cases[i].bytes), cases[i].n);
	}
}

TEST(thrift_zigzag_varint_i64_i16_i8)
{
	tl_buf buf;
	th_writer w;
	th_reader r;
	tl_error err;
	int64_t v64;
	int16_t v16;
	int8_t v8;

	tl_buf_init(&buf);
	th_writer_init(&w, &buf);
	th_write_i64(&w, INT64_MAX);
	th_write_i64(&w, INT64_MIN);
	th_write_i64(&w, -3);
	th_write_i16(&w, INT16_MAX);
	th_write_i16(&w, INT16_MIN);
	th_write_i8(&w, -2);
	CHECK_BYTES(&buf,
	            0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
	            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
	            0x05,
	            0xfe, 0xff, 0x03,
	            0xff, 0xff, 0x03,
	            0xfe);

	tl_error_clear(&err);
	th_reader_init(&r, buf.data, buf.len, &err);
	CHECK_OK(th_read_i64(&r, &v64), &err);
	CHECK(v64 == INT64_MAX);
	CHECK_OK(th_read_i64(&r, &v64), &err);
	CHECK(v64 == INT64_MIN);
	CHECK_OK(th_read_i64(&r, &v64), &err);
	CHECK_INT(v64, -3);
	CHECK_OK(th_read_i16(&r, &v16), &err);
	CHECK_INT(v16, INT16_MAX);
	CHECK_OK(th_read_i16(&r, &v16), &err);
	CHECK_INT(v16, INT16_MIN);
	CHECK_OK(th_read_i8(&r, &v8), &err);
	CHECK_INT(v8, -2);
	CHECK_INT(th_reader_offset(&r, buf.data), buf.len);
	tl_buf_free(&buf);
}

TEST(thrift_varint_limits)
{
	static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	static const uint8_t overflow[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02};
	static const uint8_t padded_zero[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	static const uint8_t beyond_i32[] = {0x80, 0x80, 0x80, 0x80, 0x10};   /* 2^32 */
	static const uint8_t beyond_i16[] = {0x80, 0x80, 0x04};               /* 2^16 */
	static const uint8_t truncated[] = {0xff, 0xff};
	tl_error err;
	th_reader r;
	int64_t v;
	int32_t v32;
	int16_t v16;

	CHECK_INT(read_one_i64(eleven, sizeof(eleven), &v, &err), -1);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "varint longer than 10 bytes (at byte 0)") != NULL);

	CHECK_INT(read_one_i64(overflow, sizeof(overflow), &v, &err), -1);
	CHECK(strstr(err.message, "overflows 64 bits") != NULL);

	/* Ten bytes are allowed, even when the value did not need them. */
	CHECK_OK(read_one_i64(padded_zero, sizeof(padded_zero), &v, &err), &err);
	CHECK_INT(v, 0);

	CHECK_INT(read_one_i64(truncated, sizeof(truncated), &v, &err), -1);
	CHECK(strstr(err.message, "input ends inside a varint") != NULL);

	tl_error_clear(&err);
	th_reader_init(&r, beyond_i32, sizeof(beyond_i32), &err);
	CHECK_INT(th_read_i32(&r, &v32), -1);
	CHECK(strstr(err.message, "does not fit an i32") != NULL);

	tl_error_clear(&err);
	th_reader_init(&r, beyond_i16, sizeof(beyond_i16), &err);
	CHECK_INT(th_read_i16(&r, &v16), -1);
	CHECK(strstr(err.message, "does not fit an i16") != NULL);
}

TEST(thrift_field_header_deltas)
{
	tl_buf buf;
	th_writer w;

	tl_buf_init(&buf);
	th_writer_init(&w, &buf);
	th_write_struct_begin(&w);
	th_write_field(&w, 1, TH_I32);           /* delta 1 */
	th_write_i32(&w, 7);
	th_write_bool_field(&w, 2, true);        /* the value is the type nibble */
	th_write_bool_field(&w, 3, false);
	th_write_field(&w, 18, TH_I64);          /* delta 15, the largest short form */
	th_write_i64(&w, 1);
	th_write_field(&w, 40, TH_BINARY);       /* delta 22: long form */
	th_write_binary(&w, "ab", 2);
	th_write_field(&w, 41, TH_STRUCT);       /* a nested struct restarts at 0 */
	th_write_struct_begin(&w);
	th_write_field(&w, 1, TH_I32);
	th_write_i32(&w, -1);
	th_write_struct_end(&w);
	th_write_field(&w, 42, TH_I32);          /* delta from 41, not from the inner 1 */
	th_write_i32(&w, 0);
	th_write_field(&w, 5, TH_I32);           /* going back: long form */
	th_write_i32(&w, 1);
	th_write_field(&w, -3, TH_I32);          /* negative ids exist in Thrift */
	th_write_i32(&w, 2);
	th_write_struct_end(&w);
	CHECK_BYTES(&buf,
	            0x15, 0x0e,
	            0x11,
	            0x12,
	            0xf6, 0x02,
	            0x08, 0x50, 0x02, 'a', 'b',
	            0x1c, 0x15, 0x01, 0x00,
	            0x15, 0x00,
	            0x05, 0x0a, 0x02,
	            0x05, 0x05, 0x04,
	            0x00);

	/* And back. */
	static const struct {
		int16_t id;
		int type;
	} expect[] = {
		{1, TH_I32}, {2, TH_BOOL_TRUE}, {3, TH_BOOL_FALSE}, {18, TH_I64}, {40, TH_BINARY},
		{41, TH_STRUCT}, {42, TH_I32}, {5, TH_I32}, {-3, TH_I32}, {0, TH_STOP},
	};
	th_reader r;
	tl_error err;
	tl_error_clear(&err);
	th_reader_init(&r, buf.data, buf.len, &err);
	CHECK_OK(th_read_struct_begin(&r), &err);
	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		int16_t id;
		int type;
		bool b;
		int32_t v;

		CHECK_OK(th_read_field(&r, &id, &type), &err);
		CHECK_INT(id, expect[i].id);
		CHECK_INT(type, expect[i].type);
		if (id == 2 || id == 3) {
			size_t before = th_reader_offset(&r, buf.data);
			CHECK_OK(th_read_bool(&r, type, &b), &err);
			CHECK_INT(b, id == 2);
			CHECK_INT(th_reader_offset(&r, buf.data), before);   /* no bytes */
		} else if (id == 41) {
			int16_t inner;
			int itype;
			CHECK_OK(th_read_struct_begin(&r), &err);
			CHECK_OK(th_read_field(&r, &inner, &itype), &err);
			CHECK_INT(inner, 1);
			CHECK_OK(th_read_i32(&r, &v), &err);
			CHECK_INT(v, -1);
			CHECK_OK(th_read_field(&r, &inner, &itype), &err);
			CHECK_INT(itype, TH_STOP);
			CHECK_OK(th_read_struct_end(&r), &err);
		} else if (type != TH_STOP) {
			CHECK_OK(th_skip(&r, type), &err);
		}
	}
	CHECK_OK(th_read_struct_end(&r), &err);
	CHECK_INT(th_reader_offset(&r, buf.data), buf.len);
	tl_buf_free(&buf);
}

TEST(thrift_long_form_field_ids)
{
	/* A long-form id is the base for the next delta. */
	static const uint8_t bytes[] = {0x05, 0x02, 0x02, 0x15, 0x04, 0x06, 0xfe, 0xff, 0x03, 0x00, 0x00};
	static const uint8_t past_max[] = {0x05, 0xfe, 0xff, 0x03, 0x00, 0x15, 0x00, 0x00};
	static const uint8_t id_too_big[] = {0x05, 0x80, 0x80, 0x04, 0x00};
	th_reader r;
	tl_error err;
	int16_t id;
	int type;
	int32_t v;
	int64_t v64;

	tl_error_clear(&err);
	th_reader_init(&r, bytes, sizeof(bytes), &err);
	CHECK_OK(th_read_struct_begin(&r), &err);
	CHECK_OK(th_read_field(&r, &id, &type), &err);
	CHECK_INT(id, 1);
	CHECK_INT(type, TH_I32);
	CHECK_OK(th_read_i32(&r, &v), &err);
	CHECK_INT(v, 1);
	CHECK_OK(th_read_field(&r, &id, &type), &err);
	CHECK_INT(id, 2);
	CHECK_OK(th_read_i32(&r, &v), &err);
	CHECK_INT(v, 2);
	CHECK_OK(th_read_field(&r, &id, &type), &err);
	CHECK_INT(id, INT16_MAX);
	CHECK_INT(type, TH_I64);
	CHECK_OK(th_read_i64(&r, &v64), &err);
	CHECK_OK(th_read_field(&r, &id, &type), &err);
	CHECK_INT(type, TH_STOP);

	/* A delta past 32767 is not an i16 field id. */
	tl_error_clear(&err);
	th_reader_init(&r, past_max, sizeof(past_max), &err);
	CHECK_OK(th_read_struct_begin(&r), &err);
	CHECK_OK(th_read_field(&r, &id, &type), &err);
	CHECK_OK(th_read_i32(&r, &v), &err);
	CHECK_INT(th_read_field(&r, &id, &type), -1);
	CHECK(strstr(err.message, "field id 32768 is out of range (at byte 5)") != NULL);

	tl_error_clear(&err);
	th_reader_init(&r, id_too_big, sizeof(id_too_big), &err);
	CHECK_OK(th_read_struct_begin(&r), &err);
	CHECK_INT(th_read_field(&r, &id, &type), -1);
	CHECK(strstr(err.message, "does not fit an i16") != NULL);
}

TEST(thrift_list_headers)
{
	tl_buf buf;
	th_writer w;

	tl_buf_init(&buf);
	th_writer_init(&w, &buf);
	th_write_list_begin(&w, TH_I32, 0);
	th_write_list_begin(&w, TH_I32, 3);
	th_write_list_begin(&w, TH_STRUCT, 14);
	th_write_list_begin(&w, TH_BINARY, 15);
	th_write_list_begin(&w, TH_I64, 300);
	th_write_list_begin(&w, TH_BOOL_TRUE, 2);
	th_write_bool(&w, true);
	th_write_bool(&w, false);
	CHECK_BYTES(&buf, 0x05, 0x35, 0xec, 0xf8, 0x0f, 0xf6, 0xac, 0x02, 0x21, 0x01, 0x02);
	tl_buf_free(&buf);

	/* Reading: short form, long form, and long form for a small size. */
	static const uint8_t lists[] = {
		0x35, 0x02, 0x04, 0x06,          /* [1, 2, 3] */
		0xf5, 0x02, 0x0a, 0x0c,          /* [5, 6] with the size as a varint */
		0x42, 0x01, 0x02, 0x00, 0x01,    /* bools, element type 2: T F F T */
	};
	th_reader r;
	tl_error err;
	int elem;
	int32_t count, v;
	bool b;

	tl_error_clear(&err);
	th_reader_init(&r, lists, sizeof(lists), &err);
	CHECK_OK(th_read_list_begin(&r, &elem, &count), &err);
	CHECK_INT(elem, TH_I32);
	CHECK_INT(count, 3);
	for (int i = 1; i <= 3; i++) {
		CHECK_OK(th_read_i32(&r, &v), &err);
		CHECK_INT(v, i);
	}
	CHECK_OK(th_read_list_begin(&r, &elem, &count), &err);
	CHECK_INT(count, 2);
	CHECK_OK(th_read_i32(&r, &v), &err);
	CHECK_INT(v, 5);
	CHECK_OK(th_read_i32(&r, &v), &err);
	CHECK_OK(th_read_list_begin(&r, &elem, &count), &err);
	CHECK_INT(elem, TH_BOOL_TRUE);
	CHECK_INT(count, 4);
	static const bool bools[] = {true, false, false, true};
	for (int i = 0; i < 4; i++) {
		CHECK_OK(th_read_bool(&r, elem, &b), &err);
		CHECK_INT(b, bools[i]);
	}
	CHECK_INT(th_reader_offset(&r, lists), sizeof(lists));

	/* A bool element is 0, 1 or 2. */
	static const uint8_t bad_bool[] = {0x11, 0x03};
	tl_error_clear(&err);
	th_reader_init(&r, bad_bool, sizeof(bad_bool), &err);
	CHECK_OK(th_read_list_begin(&r, &elem, &count), &err);
	CHECK_INT(th_read_bool(&r, elem, &b), -1);
	CHECK(strstr(err.message, "bool element has value 3 (at byte 1)") != NULL);
}

TEST(thrift_double_and_binary)
{
	tl_buf buf;
	th_writer w;
	th_reader r;
	tl_error err;
	double d;
	tl_bytes bin;

	tl_buf_init(&buf);
	th_writer_init(&w, &buf);
	th_write_double(&w, 1.5);
	th_write_double(&w, -DBL_MAX);
	th_write_binary(&w, "abc", 3);
	th_write_binary(&w, "", 0);
	CHECK_BYTES(&buf,
	            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f,
	            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xef, 0xff,
	            0x03, 'a', 'b', 'c',
	            0x00);
	tl_error_clear(&err);
	th_reader_init(&r, buf.data, buf.len, &err);
	CHECK_OK(th_read_double(&r, &d), &err);
	CHECK(d == 1.5);
	CHECK_OK(th_read_double(&r, &d), &err);
	CHECK(d == -DBL_MAX);
	CHECK_OK(th_read_binary(&r, &bin), &err);
	CHECK_INT(bin.len, 3);
	CHECK(memcmp(bin.ptr, "abc", 3) == 0);
	CHECK(bin.ptr == buf.data + 17);         /* a view, not a copy */
	CHECK_OK(th_read_binary(&r, &bin), &err);
	CHECK_INT(bin.len, 0);
	tl_buf_free(&buf);

	static const uint8_t short_binary[] = {0x05, 'a', 'b'};
	tl_error_clear(&err);
	th_reader_init(&r, short_binary, sizeof(short_binary), &err);
	CHECK_INT(th_read_binary(&r, &bin), -1);
	CHECK_STR(err.message, "binary of 5 bytes, but only 2 bytes remain (at byte 0)");

	static const uint8_t short_double[] = {0x00, 0x00, 0x00};
	tl_error_clear(&err);
	th_reader_init(&r, short_double, sizeof(short_double), &err);
	CHECK_INT(th_read_double(&r, &d), -1);
	CHECK_STR(err.message, "input ends inside a double: 8 bytes needed, 3 remain (at byte 0)");
}

/* A map header, which the writer does not need (Parquet has no maps). */
static void write_map_begin(tl_buf *buf, int key_type, int value_type, uint32_t count)
{
	tl_buf_append_uvarint(buf, count);
	if (count > 0)
		tl_buf_append_byte(buf, (uint8_t)(key_type << 4 | value_type));
}

/*
 * A struct holding a field of every type, containers nested in containers,
 * then field 100 = 42, which is what a reader that skips correctly finds.
 */
static void write_every_type(tl_buf *buf)
{
	th_writer w;

	th_writer_init(&w, buf);
	th_write_struct_begin(&w);
	th_write_bool_field(&w, 1, true);
	th_write_bool_field(&w, 2, false);
	th_write_field(&w, 3, TH_I8);
	th_write_i8(&w, -1);
	th_write_field(&w, 4, TH_I16);
	th_write_i16(&w, -300);
	th_write_field(&w, 5, TH_I32);
	th_write_i32(&w, 1 << 30);
	th_write_field(&w, 6, TH_I64);
	th_write_i64(&w, INT64_MIN);
	th_write_field(&w, 7, TH_DOUBLE);
	th_write_double(&w, 2.5);
	th_write_field(&w, 8, TH_BINARY);
	th_write_binary(&w, "skip me", 7);
	th_write_field(&w, 9, TH_LIST);          /* list<i32>, long form */
	th_write_list_begin(&w, TH_I32, 20);
	for (int i = 0; i < 20; i++)
		th_write_i32(&w, i * 1000);
	th_write_field(&w, 10, TH_SET);          /* set<binary> */
	th_write_list_begin(&w, TH_BINARY, 2);
	th_write_binary(&w, "x", 1);
	th_write_binary(&w, "yz", 2);
	th_write_field(&w, 11, TH_MAP);          /* map<binary, struct{list<map<i32, bool>>}> */
	write_map_begin(buf, TH_BINARY, TH_STRUCT, 2);
	for (int i = 0; i < 2; i++) {
		th_write_binary(&w, "key", 3);
		th_write_struct_begin(&w);
		th_write_field(&w, 1, TH_LIST);
		th_write_list_begin(&w, TH_MAP, 1);
		write_map_begin(buf, TH_I32, TH_BOOL_TRUE, 2);
		th_write_i32(&w, 1);
		th_write_bool(&w, true);
		th_write_i32(&w, 2);
		th_write_bool(&w, false);
		th_write_bool_field(&w, 2, true);
		th_write_struct_end(&w);
	}
	th_write_field(&w, 12, TH_STRUCT);       /* struct{list<list<struct>>, empty map} */
	th_write_struct_begin(&w);
	th_write_field(&w, 1, TH_LIST);
	th_write_list_begin(&w, TH_LIST, 1);
	th_write_list_begin(&w, TH_STRUCT, 1);
	th_write_struct_begin(&w);
	th_write_field(&w, 7, TH_DOUBLE);
	th_write_double(&w, -1.0);
	th_write_struct_end(&w);
	th_write_field(&w, 2, TH_MAP);
	write_map_begin(buf, 0, 0, 0);
	th_write_struct_end(&w);
	th_write_field(&w, 13, TH_UUID);
	tl_buf_append(buf, "0123456789abcdef", 16);
	th_write_field(&w, 14, TH_LIST);         /* list<bool> */
	th_write_list_begin(&w, TH_BOOL_TRUE, 3);
	th_write_bool(&w, true);
	th_write_bool(&w, false);
	th_write_bool(&w, true);
	th_write_field(&w, 15, TH_LIST);         /* list<double> */
	th_write_list_begin(&w, TH_DOUBLE, 2);
	th_write_double(&w, 0.5);
	th_write_double(&w, 0.25);
	th_write_field(&w, 16, TH_LIST);         /* an empty list, element type 0 */
	tl_buf_append_byte(buf, 0x00);
	th_write_field(&w, 100, TH_I32);
	th_write_i32(&w, 42);
	th_write_struct_end(&w);
}

TEST(thrift_skip_every_type)
{
	tl_buf buf;
	th_reader r;
	tl_error err;
	int16_t id;
	int type, skipped = 0;
	int32_t answer = 0;

	tl_buf_init(&buf);
	write_every_type(&buf);
	tl_error_clear(&err);
	th_reader_init(&r, buf.data, buf.len, &err);
	CHECK_OK(th_read_struct_begin(&r), &err);
	for (;;) {
		CHECK_OK(th_read_field(&r, &id, &type), &err);
		if (type == TH_STOP)
			break;
		if (id == 100) {
			CHECK_OK(th_read_i32(&r, &answer), &err);
		} else {
			CHECK_OK(th_skip(&r, type), &err);
			skipped++;
		}
	}
	CHECK_OK(th_read_struct_end(&r), &err);
	CHECK_INT(skipped, 16);
	CHECK_INT(answer, 42);
	CHECK_INT(th_reader_offset(&r, buf.data), buf.len);

	/* Skipping the whole struct as one value lands on the same end. */
	th_reader_init(&r, buf.data, buf.len, &err);
	CHECK_OK(th_skip(&r, TH_STRUCT), &err);
	CHECK_INT(th_reader_offset(&r, buf.data), buf.len);
	tl_buf_free(&buf);
}

TEST(thrift_skip_truncated_at_every_offset)
{
	tl_buf buf;

	tl_buf_init(&buf);
	write_every_type(&buf);
	for (size_t len = 0; len < buf.len; len++) {
		/* A copy of exactly len bytes, so ASan sees any read past them. */
		uint8_t *copy = tl_malloc(len);
		memcpy(copy, buf.data, len);
		th_reader r;
		tl_error err;
		tl_error_clear(&err);
		th_reader_init(&r, copy, len, &err);
		int rc = th_skip(&r, TH_STRUCT);
		free(copy);
		if (rc != -1 || err.code != TL_ERR_CORRUPT || err.message[0] == '\0') {
			tl_test_fail(__FILE__, __LINE__, "truncation at %zu: rc %d, \"%s\"", len, rc,
			             err.message);
			break;
		}
	}
	tl_buf_free(&buf);
}

/* Skips `n` structs nested as field 1 of each other. */
static int skip_nested_structs(int n, tl_error *err)
{
	tl_buf buf;
	th_reader r;

	tl_buf_init(&buf);
	for (int i = 1; i < n; i++)
		tl_buf_append_byte(&buf, 0x1c);
	for (int i = 0; i < n; i++)
		tl_buf_append_byte(&buf, 0x00);
	tl_error_clear(err);
	th_reader_init(&r, buf.data, buf.len, err);
	int rc = th_skip(&r, TH_STRUCT);
	tl_buf_free(&buf);
	return rc;
}

/* Skips `n` lists nested as each other's only element. */
static int skip_nested_lists(int n, tl_error *err)
{
	tl_buf buf;
	th_reader r;

	tl_buf_init(&buf);
	for (int i = 1; i < n; i++)
		tl_buf_append_byte(&buf, 0x19);
	tl_buf_append_byte(&buf, 0x05);
	tl_error_clear(err);
	th_reader_init(&r, buf.data, buf.len, err);
	int rc = th_skip(&r, TH_LIST);
	tl_buf_free(&buf);
	return rc;
}

TEST(thrift_nesting_limit)
{
	tl_error err;

	CHECK_OK(skip_nested_structs(TH_MAX_DEPTH, &err), &err);
	CHECK_INT(skip_nested_structs(TH_MAX_DEPTH + 1, &err), -1);
	CHECK(strstr(err.message, "nested deeper than 32 levels") != NULL);
	CHECK_INT(skip_nested_structs(100000, &err), -1);

	CHECK_OK(skip_nested_lists(TH_MAX_DEPTH, &err), &err);
	CHECK_INT(skip_nested_lists(TH_MAX_DEPTH + 1, &err), -1);
	CHECK(strstr(err.message, "nested deeper than 32 levels") != NULL);
	CHECK_INT(skip_nested_lists(100000, &err), -1);
}

TEST(thrift_hostile_sizes_and_types)
{
	static const struct {
		const char *what;
		uint8_t bytes[12];
		size_t n;
		int type;           /* what to skip */
		const char *message;
	} cases[] = {
		{"list count near INT32_MAX", {0xf5, 0xff, 0xff, 0xff, 0xff, 0x07, 0x02}, 7, TH_LIST,
		 "list of 2147483647 elements cannot fit in the 1 bytes that remain (at byte 0)"},
		{"list count beyond i32", {0xf5, 0x80, 0x80, 0x80, 0x80, 0x08}, 6, TH_LIST,
		 "list of 2147483648 elements is larger than Thrift allows (at byte 0)"},
		{"doubles that cannot fit", {0x27, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10, TH_LIST,
		 "list of 2 elements cannot fit in the 9 bytes that remain (at byte 0)"},
		{"map count", {0xff, 0xff, 0xff, 0xff, 0x07, 0x55, 0x00}, 7, TH_MAP,
		 "map of 2147483647 elements cannot fit in the 1 bytes that remain (at byte 0)"},
		{"map entry types", {0x01, 0xe5, 0x00, 0x00}, 4, TH_MAP,
		 "map of unknown key or value type (14, 5) (at byte 0)"},
		{"list element type", {0x1e, 0x00}, 2, TH_LIST, "list of unknown element type 14 (at byte 0)"},
		{"field type", {0x1f, 0x00}, 2, TH_STRUCT, "unknown field type 15 (at byte 0)"},
		{"set count", {0xfa, 0x0f, 0x55}, 3, TH_SET,
		 "list of 15 elements cannot fit in the 1 bytes that remain (at byte 0)"},
		{"value type", {0x00}, 1, 14, "cannot skip a value of unknown type 14 (at byte 0)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		th_reader r;
		tl_error err;

		tl_error_clear(&err);
		th_reader_init(&r, cases[i].bytes, cases[i].n, &err);
		if (th_skip(&r, cases[i].type) != -1 || strcmp(err.message, cases[i].message) != 0) {
			tl_test_fail(__FILE__, __LINE__, "%s: got \"%s\"", cases[i].what, err.message);
			return;
		}
		CHECK_INT(err.code, TL_ERR_CORRUPT);
	}
}

TEST(thrift_failure_is_sticky)
{
	static const uint8_t bytes[] = {0x80, 0x02, 0x02};
	th_reader r;
	tl_error err;
	int32_t v;
	int8_t v8;

	tl_error_clear(&err);
	th_reader_init(&r, bytes, 1, &err);      /* the varint is cut short */
	CHECK_INT(th_read_i32(&r, &v), -1);
	/* The reader does not resume on bytes that would parse in isolation. */
	r.end = bytes + sizeof(bytes);
	CHECK_INT(th_read_i32(&r, &v), -1);
	CHECK_INT(th_read_i8(&r, &v8), -1);
	CHECK_INT(th_skip(&r, TH_I32), -1);
	CHECK_INT(th_skip(&r, TH_DOUBLE), -1);
	CHECK(strstr(err.message, "input ends inside a varint") != NULL);
}
