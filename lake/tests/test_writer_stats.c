/*
 * test_writer_stats.c: the column-chunk statistics the writer puts in the
 * footer, in each type's sort order, with and without a dictionary.
 */
#include <math.h>
#include <stdlib.h>

#include "parquet/metadata.h"
#include "parquet/writer_internal.h"
#include "test.h"
#include "tierlake/parquet.h"
#include "writer_test_files.h"

/* ------------------------------------------------------------ statistics */

static tl_pq_batch *int32_batch(const tl_pq_schema *schema, const int32_t *values, const uint8_t *valid, int n)
{
	tl_pq_batch *b = tl_pq_batch_new(schema, n);
	b->nrows = n;
	for (int i = 0; i < n; i++) {
		b->columns[0].v.i32[i] = values[i];
		if (b->columns[0].valid && valid)
			b->columns[0].valid[i] = valid[i];
	}
	return b;
}

TEST(writer_statistics_order_integers_signed_or_unsigned)
{
	tl_error err;
	tl_error_clear(&err);
	for (int dictionary = 0; dictionary < 2; dictionary++) {
		tl_pq_writer_options o = wt_uncompressed_options();
		o.dictionary = dictionary;
		written f;

		/* Signed INT32 with a DATE on top: negatives are smaller. */
		tl_pq_column c = wt_column("d", TL_PQ_INT32, false);
		c.logical = TL_PQ_LOGICAL_DATE;
		tl_pq_schema *s = wt_one_column_schema(c);
		int32_t v32[] = {5, -3, 0, INT32_MIN, 77, 999, -1};
		uint8_t valid[] = {1, 1, 1, 1, 1, 0, 1};   /* the null 999 must not count */
		tl_pq_batch *b = int32_batch(s, v32, valid, 7);
		CHECK_OK(wt_write_one("stats_i32", s, &o, b, &f, &err), &err);
		const pq_statistics *st = wt_chunk_stats(&f, 0, 0);
		CHECK(st->has_min_value && st->has_max_value);
		CHECK_INT(wt_stat_i32(st->min_value), INT32_MIN);
		CHECK_INT(wt_stat_i32(st->max_value), 77);
		CHECK_INT(st->null_count, 1);
		CHECK(!st->has_min && !st->has_max);
		wt_written_free(&f);
		tl_pq_batch_free(b);
		tl_pq_schema_free(s);

		/* Unsigned INT(32): 0xFFFFFFFF is the largest, not -1. */
		c = wt_column("u", TL_PQ_INT32, true);
		c.logical = TL_PQ_LOGICAL_INT;
		c.int_bit_width = 32;
		s = wt_one_column_schema(c);
		int32_t u32[] = {7, -1, 3, INT32_MIN, 100};
		b = int32_batch(s, u32, NULL, 5);
		CHECK_OK(wt_write_one("stats_u32", s, &o, b, &f, &err), &err);
		st = wt_chunk_stats(&f, 0, 0);
		CHECK_INT(wt_stat_i32(st->min_value), 3);
		CHECK_INT(wt_stat_i32(st->max_value), -1);
		wt_written_free(&f);
		tl_pq_batch_free(b);
		tl_pq_schema_free(s);

		/* INT64: signed timestamps and unsigned INT(64). */
		c = wt_column("ts", TL_PQ_INT64, true);
		c.logical = TL_PQ_LOGICAL_TIMESTAMP;
		c.unit = TL_PQ_MICROS;
		tl_pq_schema *ts = wt_one_column_schema(c);
		c = wt_column("u64", TL_PQ_INT64, true);
		c.logical = TL_PQ_LOGICAL_INT;
		c.int_bit_width = 64;
		tl_pq_schema_add(ts, &c);
		int64_t v64[] = {-5, INT64_MAX, 0, -86400000000LL, 12};
		b = tl_pq_batch_new(ts, 5);
		b->nrows = 5;
		for (int i = 0; i < 5; i++)
			b->columns[0].v.i64[i] = b->columns[1].v.i64[i] = v64[i];
		CHECK_OK(wt_write_one("stats_i64", ts, &o, b, &f, &err), &err);
		CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, 0, 0)->min_value), -86400000000LL);
		CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, 0, 0)->max_value), INT64_MAX);
		CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, 0, 1)->min_value), 0);
		CHECK_INT(wt_stat_i64(wt_chunk_stats(&f, 0, 1)->max_value), -5);   /* 2^64 - 5 */
		CHECK_INT(wt_chunk_stats(&f, 0, 1)->null_count, 0);
		wt_written_free(&f);
		tl_pq_batch_free(b);
		tl_pq_schema_free(ts);
	}
}

TEST(writer_statistics_floats_ignore_nan_and_write_signed_zeros)
{
	tl_error err;
	tl_error_clear(&err);
	for (int dictionary = 0; dictionary < 2; dictionary++) {
		tl_pq_writer_options o = wt_uncompressed_options();
		o.dictionary = dictionary;
		tl_pq_schema *s = tl_pq_schema_new();
		const char *names[] = {"mixed", "zero_min", "zero_max", "all_nan", "infinite"};
		for (int i = 0; i < 5; i++) {
			tl_pq_column c = wt_column(names[i], TL_PQ_FLOAT, false);
			tl_pq_schema_add(s, &c);
			c = wt_column(names[i], TL_PQ_DOUBLE, false);
			char dname[32];
			snprintf(dname, sizeof(dname), "%s_d", names[i]);
			c.name = dname;
			tl_pq_schema_add(s, &c);
		}
		const double rows[5][4] = {
			{NAN, 1.5, -2.5, NAN},
			{0.0, 3.0, 0.0, 2.0},           /* min is a zero: written as -0.0 */
			{-0.0, -3.0, -0.0, -1.0},       /* max is a zero: written as +0.0 */
			{NAN, NAN, NAN, NAN},
			{INFINITY, -INFINITY, NAN, 1.0},
		};
		tl_pq_batch *b = tl_pq_batch_new(s, 4);
		b->nrows = 4;
		for (int i = 0; i < 5; i++)
			for (int r = 0; r < 4; r++) {
				b->columns[2 * i].v.f32[r] = (float)rows[i][r];
				b->columns[2 * i + 1].v.f64[r] = rows[i][r];
			}
		b->columns[6].valid[1] = 0;   /* a null among the NaNs */
		written f;
		CHECK_OK(wt_write_one("stats_floats", s, &o, b, &f, &err), &err);

		const pq_statistics *st = wt_chunk_stats(&f, 0, 0);
		CHECK(wt_stat_f32(st->min_value) == -2.5f && wt_stat_f32(st->max_value) == 1.5f);
		st = wt_chunk_stats(&f, 0, 1);
		CHECK(wt_stat_f64(st->min_value) == -2.5 && wt_stat_f64(st->max_value) == 1.5);

		st = wt_chunk_stats(&f, 0, 2);
		CHECK(wt_stat_f32(st->min_value) == 0.0f && signbit(wt_stat_f32(st->min_value)));
		CHECK(wt_stat_f32(st->max_value) == 3.0f);
		st = wt_chunk_stats(&f, 0, 3);
		CHECK(wt_stat_f64(st->min_value) == 0.0 && signbit(wt_stat_f64(st->min_value)));

		st = wt_chunk_stats(&f, 0, 4);
		CHECK(wt_stat_f32(st->min_value) == -3.0f);
		CHECK(wt_stat_f32(st->max_value) == 0.0f && !signbit(wt_stat_f32(st->max_value)));
		st = wt_chunk_stats(&f, 0, 5);
		CHECK(wt_stat_f64(st->max_value) == 0.0 && !signbit(wt_stat_f64(st->max_value)));

		/* Only NaN: no min or max at all, but the null count stands. */
		st = wt_chunk_stats(&f, 0, 6);
		CHECK(!st->has_min_value && !st->has_max_value);
		CHECK(st->has_null_count);
		CHECK_INT(st->null_count, 1);
		st = wt_chunk_stats(&f, 0, 7);
		CHECK(!st->has_min_value && !st->has_max_value);
		CHECK_INT(st->null_count, 0);

		st = wt_chunk_stats(&f, 0, 8);
		CHECK(wt_stat_f32(st->min_value) == -INFINITY && wt_stat_f32(st->max_value) == INFINITY);
		st = wt_chunk_stats(&f, 0, 9);
		CHECK(wt_stat_f64(st->min_value) == -INFINITY && wt_stat_f64(st->max_value) == INFINITY);
		wt_written_free(&f);
		tl_pq_batch_free(b);
		tl_pq_schema_free(s);
	}
}

TEST(writer_statistics_compare_bytes_unsigned_and_decimals_signed)
{
	tl_error err;
	tl_error_clear(&err);
	for (int dictionary = 0; dictionary < 2; dictionary++) {
		tl_pq_writer_options o = wt_uncompressed_options();
		o.dictionary = dictionary;
		tl_pq_schema *s = tl_pq_schema_new();
		tl_pq_column c = wt_column("s", TL_PQ_BYTE_ARRAY, false);
		c.logical = TL_PQ_LOGICAL_STRING;
		tl_pq_schema_add(s, &c);
		c = wt_column("uuid", TL_PQ_FIXED_LEN_BYTE_ARRAY, true);
		c.type_length = 16;
		c.logical = TL_PQ_LOGICAL_UUID;
		tl_pq_schema_add(s, &c);
		c = wt_column("dec_flba", TL_PQ_FIXED_LEN_BYTE_ARRAY, true);
		c.type_length = 4;
		c.logical = TL_PQ_LOGICAL_DECIMAL;
		c.precision = 9;
		c.scale = 0;
		tl_pq_schema_add(s, &c);
		c = wt_column("dec_bytes", TL_PQ_BYTE_ARRAY, true);
		c.logical = TL_PQ_LOGICAL_DECIMAL;
		c.precision = 20;
		tl_pq_schema_add(s, &c);

		/* "é" (0xC3 0xA9) sorts after "z" as unsigned bytes. */
		const char *strings[] = {"b", "\xc3\xa9", "z", "a", "", "ab"};
		uint8_t uuids[6][16];
		for (int i = 0; i < 6; i++)
			memset(uuids[i], 0x10 * (i + 1), 16);   /* 0x10.. up to 0x60.. */
		uuids[2][0] = 0x80;                          /* high bit: largest, unsigned */
		uuids[4][0] = 0x00;
		uuids[4][15] = 0x00;
		const uint8_t flba[6][4] = {
			{0xFF, 0xFF, 0xFF, 0xFF},   /* -1 */
			{0x00, 0x00, 0x00, 0x05},   /* 5 */
			{0xFF, 0xFF, 0xFE, 0xD4},   /* -300: the min */
			{0x00, 0x00, 0x00, 0x64},   /* 100: the max */
			{0x00, 0x00, 0x00, 0x00},
			{0x80, 0x00, 0x00, 0x01},   /* beyond the precision, but ordered: the true min */
		};
		/* Big-endian minimal two's complement of varying length. */
		const uint8_t *dec[6] = {(const uint8_t *)"\x00\x80", (const uint8_t *)"\x80", (const uint8_t *)"\x01",
		                         (const uint8_t *)"\xFF\x7F", (const uint8_t *)"", (const uint8_t *)"\x7F"};
		const uint32_t dec_len[6] = {2, 1, 1, 2, 0, 1};   /* 128, -128, 1, -129, 0, 127 */

		tl_pq_batch *b = tl_pq_batch_new(s, 6);
		b->nrows = 6;
		for (int i = 0; i < 6; i++) {
			b->columns[0].v.bytes[i] = wt_text(strings[i]);
			b->columns[1].v.bytes[i] = (tl_bytes){uuids[i], 16};
			b->columns[2].v.bytes[i] = (tl_bytes){flba[i], 4};
			b->columns[3].v.bytes[i] = (tl_bytes){dec[i], dec_len[i]};
		}
		b->columns[0].valid[5] = 0;
		written f;
		CHECK_OK(wt_write_one("stats_bytes", s, &o, b, &f, &err), &err);

		const pq_statistics *st = wt_chunk_stats(&f, 0, 0);
		CHECK(wt_bytes_equal(st->min_value, "", 0));
		CHECK(wt_bytes_equal(st->max_value, "\xc3\xa9", 2));
		CHECK_INT(st->null_count, 1);
		st = wt_chunk_stats(&f, 0, 1);
		CHECK(wt_bytes_equal(st->min_value, uuids[4], 16));
		CHECK(wt_bytes_equal(st->max_value, uuids[2], 16));
		st = wt_chunk_stats(&f, 0, 2);
		CHECK(wt_bytes_equal(st->min_value, flba[5], 4));
		CHECK(wt_bytes_equal(st->max_value, flba[3], 4));
		st = wt_chunk_stats(&f, 0, 3);
		CHECK(wt_bytes_equal(st->min_value, "\xFF\x7F", 2));
		CHECK(wt_bytes_equal(st->max_value, "\x00\x80", 2));
		wt_written_free(&f);
		tl_pq_batch_free(b);
		tl_pq_schema_free(s);
	}
}

TEST(writer_statistics_decimal_comparison_sign_extends)
{
	CHECK(pq_compare_decimal_bytes((const uint8_t *)"\xFF", 1, (const uint8_t *)"\x00", 1) < 0);
	CHECK(pq_compare_decimal_bytes((const uint8_t *)"\xFF\xFF", 2, (const uint8_t *)"\xFF", 1) == 0);
	CHECK(pq_compare_decimal_bytes((const uint8_t *)"\x00\x01", 2, (const uint8_t *)"\x01", 1) == 0);
	CHECK(pq_compare_decimal_bytes((const uint8_t *)"\xFE\xFF", 2, (const uint8_t *)"\xFF", 1) < 0);
	CHECK(pq_compare_decimal_bytes((const uint8_t *)"\xFF", 1, (const uint8_t *)"\xFE\xFF", 2) > 0);
	CHECK(pq_compare_decimal_bytes((const uint8_t *)"\x01\x00", 2, (const uint8_t *)"\x7F", 1) > 0);
	CHECK(pq_compare_decimal_bytes((const uint8_t *)"", 0, (const uint8_t *)"\x80", 1) > 0);
	CHECK(pq_compare_decimal_bytes((const uint8_t *)"", 0, (const uint8_t *)"\x00\x00", 2) == 0);
	CHECK(pq_compare_unsigned_bytes((const uint8_t *)"a", 1, (const uint8_t *)"ab", 2) < 0);
	CHECK(pq_compare_unsigned_bytes((const uint8_t *)"\x80", 1, (const uint8_t *)"\x7F\xFF", 2) > 0);
	CHECK(pq_compare_unsigned_bytes((const uint8_t *)"", 0, (const uint8_t *)"", 0) == 0);
}

TEST(writer_statistics_booleans_nulls_and_huge_values)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_writer_options o = wt_uncompressed_options();
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_column c = wt_column("all_true", TL_PQ_BOOLEAN, true);
	tl_pq_schema_add(s, &c);
	c = wt_column("mixed", TL_PQ_BOOLEAN, false);
	tl_pq_schema_add(s, &c);
	c = wt_column("all_null", TL_PQ_INT64, false);
	tl_pq_schema_add(s, &c);
	c = wt_column("huge", TL_PQ_BYTE_ARRAY, false);
	tl_pq_schema_add(s, &c);
	c = wt_column("limit", TL_PQ_BYTE_ARRAY, false);
	tl_pq_schema_add(s, &c);

	uint8_t *big = tl_malloc(PQ_STATS_MAX_VALUE_BYTES + 1);
	memset(big, 'x', PQ_STATS_MAX_VALUE_BYTES + 1);
	tl_pq_batch *b = tl_pq_batch_new(s, 3);
	b->nrows = 3;
	for (int i = 0; i < 3; i++) {
		b->columns[0].v.b[i] = 7;   /* any non-zero byte is true */
		b->columns[1].v.b[i] = i == 2;
		b->columns[2].valid[i] = 0;
		b->columns[3].v.bytes[i] = i == 1 ? (tl_bytes){big, PQ_STATS_MAX_VALUE_BYTES + 1} : wt_text("a");
		b->columns[4].v.bytes[i] = i == 1 ? (tl_bytes){big, PQ_STATS_MAX_VALUE_BYTES} : wt_text("a");
	}
	b->columns[1].valid[1] = 0;
	written f;
	CHECK_OK(wt_write_one("stats_bool", s, &o, b, &f, &err), &err);
	const pq_statistics *st = wt_chunk_stats(&f, 0, 0);
	CHECK(wt_bytes_equal(st->min_value, "\x01", 1) && wt_bytes_equal(st->max_value, "\x01", 1));
	st = wt_chunk_stats(&f, 0, 1);
	CHECK(wt_bytes_equal(st->min_value, "\x00", 1) && wt_bytes_equal(st->max_value, "\x01", 1));
	CHECK_INT(st->null_count, 1);
	st = wt_chunk_stats(&f, 0, 2);
	CHECK(!st->has_min_value && !st->has_max_value);
	CHECK(st->has_null_count);
	CHECK_INT(st->null_count, 3);
	st = wt_chunk_stats(&f, 0, 3);
	CHECK(!st->has_min_value && !st->has_max_value);
	CHECK(st->has_null_count);
	CHECK_INT(st->null_count, 0);
	st = wt_chunk_stats(&f, 0, 4);
	CHECK(wt_bytes_equal(st->min_value, "a", 1));
	CHECK(wt_bytes_equal(st->max_value, big, PQ_STATS_MAX_VALUE_BYTES));
	wt_written_free(&f);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	free(big);
}
