/*
 * test_iceberg_writer.c: data-file metrics from Parquet footers, and the
 * partitioning writer of data and equality-delete files.
 *
 * Metrics run on files tl_pq_writer writes in memory: every Iceberg
 * primitive type with nulls, float zeros and NaNs, decimals of each
 * physical width, other time units and type promotions, and the
 * truncate(16) rules for strings and binaries. The writer tests create
 * tables in a temporary directory and check the files it leaves (or does
 * not leave) there.
 */
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"
#include "iceberg/reader_internal.h"
#include "iceberg/schema_json.h"

/* ------------------------------------------------------------- helpers */

static int schema_from_text(const char *text, tl_ice_schema *out, tl_error *err)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "test schema JSON: %s", je.text);
	int rc = tl_ice_schema_from_json(j, out, err);
	json_decref(j);
	return rc;
}

static int spec_from_text(const char *text, tl_ice_partition_spec *out, tl_error *err)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "test spec JSON: %s", je.text);
	int rc = tl_ice_partition_spec_from_json(j, -1, out, err);
	json_decref(j);
	return rc;
}

static const tl_bytes *find_bound(const tl_ice_bytes_map *m, int32_t id)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (m->keys[i] == id)
			return &m->values[i];
	return NULL;
}

static int64_t find_long(const tl_ice_long_map *m, int32_t id)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (m->keys[i] == id)
			return m->values[i];
	return -999;
}

static bool bound_bytes_are(const tl_ice_bytes_map *m, int32_t id, const void *data, size_t len)
{
	const tl_bytes *b = find_bound(m, id);
	return b != NULL && b->len == len && (len == 0 || memcmp(b->ptr, data, len) == 0);
}

/* The bound of field `id` equals the single-value form of v. */
static bool bound_is(const tl_ice_bytes_map *m, const tl_ice_schema *s, int32_t id, tl_ice_value v)
{
	const tl_ice_field *f = tl_ice_schema_find_id(s, id);
	tl_buf buf;
	tl_buf_init(&buf);
	bool ok = f != NULL && tl_ice_value_serialize(&f->type, &v, &buf, NULL) == 0 &&
	          bound_bytes_are(m, id, buf.data, buf.len);
	tl_buf_free(&buf);
	return ok;
}

static tl_ice_value ival(int64_t x)
{
	tl_ice_value v = {0};
	v.v.i64 = x;
	return v;
}

static tl_ice_value i32val(int32_t x)
{
	tl_ice_value v = {0};
	v.v.i32 = x;
	return v;
}

static tl_ice_value decval(tl_int128 x)
{
	tl_ice_value v = {0};
	v.v.dec = x;
	return v;
}

static tl_bytes bytes_of(const void *p, size_t n)
{
	tl_bytes b = {p, (uint32_t)n};
	return b;
}

static tl_bytes str(const char *s)
{
	return bytes_of(s, strlen(s));
}

/*
 * Writes the batch (row groups of `rg_rows` rows) into memory, opens a
 * reader on it and computes the metrics against `schema`.
 */
typedef struct metrics_run {
	tl_buf file;
	tl_input *in;
	tl_pq_reader *reader;
	tl_arena arena;
	tl_ice_data_file df;
} metrics_run;

static int run_metrics(metrics_run *m, const tl_ice_schema *schema, const tl_pq_schema *pq,
                       const tl_pq_batch *batch, int64_t rg_rows, tl_error *err)
{
	memset(m, 0, sizeof(*m));
	tl_buf_init(&m->file);
	tl_arena_init(&m->arena, 4096);
	tl_output *out = tl_output_to_buffer(&m->file, "mem.parquet");
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.row_group_rows = rg_rows;
	tl_pq_writer *w = tl_pq_writer_open(out, pq, &o, err);
	int rc = w != NULL && tl_pq_writer_write(w, batch, err) == 0 && tl_pq_writer_close(w, err) == 0 ? 0 : -1;
	tl_pq_writer_free(w);
	tl_output_close(out);
	if (rc < 0)
		return -1;
	m->in = tl_input_from_memory(m->file.data, m->file.len, "mem.parquet");
	m->reader = tl_pq_reader_open(m->in, err);
	if (m->reader == NULL)
		return -1;
	return tl_ice_data_file_metrics(schema, m->reader, &m->arena, &m->df, err);
}

static void metrics_run_free(metrics_run *m)
{
	tl_pq_reader_free(m->reader);
	tl_input_close(m->in);
	tl_arena_free(&m->arena);
	tl_buf_free(&m->file);
}

/* ------------------------------------------------------------- metrics */

static const char *ALL_TYPES_SCHEMA =
	"{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	"{\"id\":1,\"name\":\"b\",\"required\":false,\"type\":\"boolean\"},"
	"{\"id\":2,\"name\":\"i\",\"required\":false,\"type\":\"int\"},"
	"{\"id\":3,\"name\":\"l\",\"required\":true,\"type\":\"long\"},"
	"{\"id\":4,\"name\":\"f\",\"required\":false,\"type\":\"float\"},"
	"{\"id\":5,\"name\":\"d\",\"required\":false,\"type\":\"double\"},"
	"{\"id\":6,\"name\":\"dec9\",\"required\":false,\"type\":\"decimal(9, 2)\"},"
	"{\"id\":7,\"name\":\"dec18\",\"required\":false,\"type\":\"decimal(18, 4)\"},"
	"{\"id\":8,\"name\":\"dec38\",\"required\":false,\"type\":\"decimal(38, 10)\"},"
	"{\"id\":9,\"name\":\"dt\",\"required\":false,\"type\":\"date\"},"
	"{\"id\":10,\"name\":\"tm\",\"required\":false,\"type\":\"time\"},"
	"{\"id\":11,\"name\":\"ts\",\"required\":false,\"type\":\"timestamp\"},"
	"{\"id\":12,\"name\":\"tstz\",\"required\":false,\"type\":\"timestamptz\"},"
	"{\"id\":13,\"name\":\"s\",\"required\":false,\"type\":\"string\"},"
	"{\"id\":14,\"name\":\"u\",\"required\":false,\"type\":\"uuid\"},"
	"{\"id\":15,\"name\":\"fx\",\"required\":false,\"type\":\"fixed[3]\"},"
	"{\"id\":16,\"name\":\"bin\",\"required\":false,\"type\":\"binary\"},"
	"{\"id\":17,\"name\":\"allnull\",\"required\":false,\"type\":\"int\"},"
	"{\"id\":18,\"name\":\"nan\",\"required\":false,\"type\":\"double\"}]}";

/* Big-endian 16-byte two's complement of a small value, as a decimal(38) column stores it. */
static void be16(int64_t v, uint8_t out[16])
{
	for (int i = 15; i >= 0; i--) {
		out[i] = (uint8_t)v;
		v >>= 8;   /* arithmetic shift keeps the sign bytes */
	}
}

static void set_null(tl_pq_batch *b, int col, int64_t row)
{
	b->columns[col].valid[row] = 0;
}

TEST(iceberg_metrics_every_primitive_type)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema s;
	CHECK_OK(schema_from_text(ALL_TYPES_SCHEMA, &s, &err), &err);
	tl_pq_schema *pq = tl_ice_schema_to_pq_schema(&s, &err);
	CHECK(pq != NULL);
	enum { N = 6 };
	tl_pq_batch *b = tl_pq_batch_new(pq, N);
	b->nrows = N;
	static const uint8_t uuids[3][16] = {{0x10}, {0x01, 0xFF}, {0xF0, 0x00, 0x01}};
	static uint8_t dec38[N][16];
	static const int64_t dec38_v[N] = {5, -12345678901234LL, 0, 99, -1, 7};
	for (int r = 0; r < N; r++) {
		tl_vector *c = b->columns;
		c[0].v.b[r] = r % 2 == 0;
		c[1].v.i32[r] = (int32_t[]){5, -3, 0, 7, 100, -50}[r];
		c[2].v.i64[r] = (int64_t[]){10, 20, -30, 40, INT64_MAX, 0}[r];
		c[3].v.f32[r] = (float[]){1.5f, NAN, -0.0f, 2.0f, 0, 0.0f}[r];
		c[4].v.f64[r] = (double[]){-INFINITY, 3.25, 0, 1e300, 0, -1}[r];
		c[5].v.i32[r] = (int32_t[]){12345, -99999, 0, 1, 2, 3}[r];
		c[6].v.i64[r] = (int64_t[]){123456789012LL, -5, 0, 1, 2, 3}[r];
		be16(dec38_v[r], dec38[r]);
		c[7].v.bytes[r] = bytes_of(dec38[r], 16);
		c[8].v.i32[r] = (int32_t[]){19000, -1, 20000, 0, 5, 6}[r];
		c[9].v.i64[r] = (int64_t[]){0, 86399999999LL, 1000, 5, 6, 7}[r];
		c[10].v.i64[r] = (int64_t[]){-1000000, 1700000000000000LL, 0, 1, 2, 3}[r];
		c[11].v.i64[r] = (int64_t[]){5, 6, 7, 8, 9, 10}[r];
		c[12].v.bytes[r] = str((const char *[]){"pear", "apple", "zebra", "é", "", "m"}[r]);
		c[13].v.bytes[r] = bytes_of(uuids[r % 3], 16);
		c[14].v.bytes[r] = bytes_of((const char *[]){"abc", "abd", "\xff\x00\x01", "aaa", "zzz", "b\x00c"}[r], 3);
		c[15].v.bytes[r] = str((const char *[]){"\x01", "\x02\x03", "", "\x7f", "\x80", "x"}[r]);
		c[16].v.i32[r] = 0;
		c[17].v.f64[r] = NAN;
	}
	set_null(b, 0, 1);
	set_null(b, 1, 2);
	set_null(b, 3, 4);
	set_null(b, 4, 4);
	set_null(b, 12, 5);
	for (int r = 0; r < N; r++)
		set_null(b, 16, r);

	metrics_run m;
	int rc = run_metrics(&m, &s, pq, b, 3, &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(pq);
	if (rc < 0) {
		metrics_run_free(&m);
		tl_ice_schema_free(&s);
		CHECK_OK(rc, &err);
	}
	const tl_ice_data_file *f = &m.df;
	bool ok = f->record_count == N && f->column_sizes.n == 18 && f->value_counts.n == 18 &&
	          f->nan_value_counts.n == 0;
	/* Flat columns count nulls among their values. */
	ok = ok && find_long(&f->value_counts, 1) == N && find_long(&f->value_counts, 17) == N;
	ok = ok && find_long(&f->null_value_counts, 1) == 1 && find_long(&f->null_value_counts, 3) == 0 &&
	     find_long(&f->null_value_counts, 17) == N && find_long(&f->null_value_counts, 13) == 1;
	ok = ok && find_long(&f->column_sizes, 3) > 0;
	uint8_t zero = 0, one = 1;
	ok = ok && bound_bytes_are(&f->lower_bounds, 1, &zero, 1) && bound_bytes_are(&f->upper_bounds, 1, &one, 1);
	ok = ok && bound_is(&f->lower_bounds, &s, 2, i32val(-50)) && bound_is(&f->upper_bounds, &s, 2, i32val(100));
	ok = ok && bound_is(&f->lower_bounds, &s, 3, ival(-30)) && bound_is(&f->upper_bounds, &s, 3, ival(INT64_MAX));
	tl_ice_value fv = {0};
	fv.v.f32 = -0.0f;   /* the NaN takes no part; the zero extreme is -0.0 */
	ok = ok && bound_is(&f->lower_bounds, &s, 4, fv);
	fv.v.f32 = 2.0f;
	ok = ok && bound_is(&f->upper_bounds, &s, 4, fv);
	tl_ice_value dv = {0};
	dv.v.f64 = -INFINITY;
	ok = ok && bound_is(&f->lower_bounds, &s, 5, dv);
	dv.v.f64 = 1e300;
	ok = ok && bound_is(&f->upper_bounds, &s, 5, dv);
	ok = ok && bound_is(&f->lower_bounds, &s, 6, decval(-99999)) && bound_is(&f->upper_bounds, &s, 6, decval(12345));
	ok = ok && bound_is(&f->lower_bounds, &s, 7, decval(-5)) &&
	     bound_is(&f->upper_bounds, &s, 7, decval(123456789012LL));
	ok = ok && bound_is(&f->lower_bounds, &s, 8, decval(-12345678901234LL)) &&
	     bound_is(&f->upper_bounds, &s, 8, decval(99));
	ok = ok && bound_is(&f->lower_bounds, &s, 9, i32val(-1)) && bound_is(&f->upper_bounds, &s, 9, i32val(20000));
	ok = ok && bound_is(&f->lower_bounds, &s, 10, ival(0)) && bound_is(&f->upper_bounds, &s, 10, ival(86399999999LL));
	ok = ok && bound_is(&f->lower_bounds, &s, 11, ival(-1000000)) &&
	     bound_is(&f->upper_bounds, &s, 11, ival(1700000000000000LL));
	ok = ok && bound_is(&f->lower_bounds, &s, 12, ival(5)) && bound_is(&f->upper_bounds, &s, 12, ival(10));
	ok = ok && bound_bytes_are(&f->lower_bounds, 13, "", 0) && bound_bytes_are(&f->upper_bounds, 13, "\xc3\xa9", 2);
	ok = ok && bound_bytes_are(&f->lower_bounds, 14, uuids[1], 16) && bound_bytes_are(&f->upper_bounds, 14, uuids[2], 16);
	ok = ok && bound_bytes_are(&f->lower_bounds, 15, "aaa", 3) && bound_bytes_are(&f->upper_bounds, 15, "\xff\x00\x01", 3);
	ok = ok && bound_bytes_are(&f->lower_bounds, 16, "", 0) && bound_bytes_are(&f->upper_bounds, 16, "\x80", 1);
	/* No values: no bounds. Only NaNs: Parquet keeps no extremes, so neither do we. */
	ok = ok && find_bound(&f->lower_bounds, 17) == NULL && find_bound(&f->upper_bounds, 17) == NULL;
	ok = ok && find_bound(&f->lower_bounds, 18) == NULL && find_bound(&f->upper_bounds, 18) == NULL;
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK(ok);
}

/* A one-column file of field 1 (type `type`) holding these byte values. */
static int bytes_metrics(const char *type, const tl_bytes *values, int n, metrics_run *m, tl_ice_schema *s,
                         tl_error *err)
{
	char text[256];
	snprintf(text, sizeof(text),
	         "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"v\",\"required\":true,"
	         "\"type\":\"%s\"}]}", type);
	if (schema_from_text(text, s, err) < 0)
		return -1;
	tl_pq_schema *pq = tl_ice_schema_to_pq_schema(s, err);
	if (pq == NULL)
		return -1;
	tl_pq_batch *b = tl_pq_batch_new(pq, n);
	for (int i = 0; i < n; i++)
		b->columns[0].v.bytes[i] = values[i];
	b->nrows = n;
	int rc = run_metrics(m, s, pq, b, 1, err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(pq);
	return rc;
}

TEST(iceberg_metrics_truncates_strings_by_code_point)
{
	tl_error err;
	tl_error_clear(&err);
	/* 17 times U+00E9; the lower bound keeps 16, the upper ends in U+00EA. */
	char e17[64] = "", e16[64] = "", upper[64] = "";
	for (int i = 0; i < 17; i++)
		strcat(e17, "\xc3\xa9");
	for (int i = 0; i < 16; i++)
		strcat(e16, "\xc3\xa9");
	for (int i = 0; i < 15; i++)
		strcat(upper, "\xc3\xa9");
	strcat(upper, "\xc3\xaa");
	tl_bytes values[] = {str(e17), str("abcdefghijklmnopqrstuvwxyz")};
	tl_ice_schema s;
	metrics_run m;
	int rc = bytes_metrics("string", values, 2, &m, &s, &err);
	bool ok = rc == 0 && bound_bytes_are(&m.df.lower_bounds, 1, "abcdefghijklmnop", 16) &&
	          bound_bytes_are(&m.df.upper_bounds, 1, upper, strlen(upper));
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);

	/* An upper bound whose last code points are U+10FFFF carries into the one before. */
	char carry[128] = "a";
	for (int i = 0; i < 15; i++)
		strcat(carry, "\xf4\x8f\xbf\xbf");
	strcat(carry, "z");
	tl_bytes v2[] = {str(carry), str("0")};
	rc = bytes_metrics("string", v2, 2, &m, &s, &err);
	ok = rc == 0 && bound_bytes_are(&m.df.upper_bounds, 1, "b", 1) && bound_bytes_are(&m.df.lower_bounds, 1, "0", 1);
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);

	/* Only U+10FFFF: no upper bound exists, the lower bound does. A short string stays whole. */
	char max17[128] = "";
	for (int i = 0; i < 17; i++)
		strcat(max17, "\xf4\x8f\xbf\xbf");
	tl_bytes v3[] = {str(max17), str("short")};
	rc = bytes_metrics("string", v3, 2, &m, &s, &err);
	ok = rc == 0 && find_bound(&m.df.upper_bounds, 1) == NULL &&
	     bound_bytes_are(&m.df.lower_bounds, 1, "short", 5);
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);

	/* A surrogate is never produced: U+D7FF increments to U+E000. */
	char sur[128] = "";
	for (int i = 0; i < 17; i++)
		strcat(sur, "\xed\x9f\xbf");
	tl_bytes v4[] = {str(sur)};
	rc = bytes_metrics("string", v4, 1, &m, &s, &err);
	char sur_upper[128] = "";
	for (int i = 0; i < 15; i++)
		strcat(sur_upper, "\xed\x9f\xbf");
	strcat(sur_upper, "\xee\x80\x80");
	ok = rc == 0 && bound_bytes_are(&m.df.upper_bounds, 1, sur_upper, strlen(sur_upper));
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_metrics_truncates_binary_and_keeps_fixed)
{
	tl_error err;
	tl_error_clear(&err);
	uint8_t long_bin[20], all_ff[17];
	for (int i = 0; i < 20; i++)
		long_bin[i] = (uint8_t)(0xF0 + (i < 14 ? 0 : 0x0F));   /* bytes 14.. are 0xFF */
	memset(all_ff, 0xFF, sizeof(all_ff));
	tl_bytes values[] = {bytes_of(long_bin, 20), bytes_of("\x00", 1)};
	tl_ice_schema s;
	metrics_run m;
	int rc = bytes_metrics("binary", values, 2, &m, &s, &err);
	uint8_t want[14];
	memcpy(want, long_bin, 14);   /* byte 15 and 16 are 0xFF: carry into byte 14 (index 13) */
	want[13]++;
	bool ok = rc == 0 && bound_bytes_are(&m.df.upper_bounds, 1, want, 14) &&
	          bound_bytes_are(&m.df.lower_bounds, 1, "\x00", 1);
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);

	tl_bytes v2[] = {bytes_of(all_ff, 17)};
	rc = bytes_metrics("binary", v2, 1, &m, &s, &err);
	ok = rc == 0 && find_bound(&m.df.upper_bounds, 1) == NULL && bound_bytes_are(&m.df.lower_bounds, 1, all_ff, 16);
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);

	/* Fixed values are never truncated. */
	uint8_t fx[20];
	memset(fx, 0xAB, sizeof(fx));
	tl_bytes v3[] = {bytes_of(fx, 20)};
	rc = bytes_metrics("fixed[20]", v3, 1, &m, &s, &err);
	ok = rc == 0 && bound_bytes_are(&m.df.upper_bounds, 1, fx, 20) && bound_bytes_are(&m.df.lower_bounds, 1, fx, 20);
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_metrics_converts_units_and_promotions)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema s;
	CHECK_OK(schema_from_text("{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	                          "{\"id\":1,\"name\":\"ms\",\"required\":true,\"type\":\"timestamp\"},"
	                          "{\"id\":2,\"name\":\"ns\",\"required\":true,\"type\":\"timestamptz\"},"
	                          "{\"id\":3,\"name\":\"l\",\"required\":true,\"type\":\"long\"},"
	                          "{\"id\":4,\"name\":\"d\",\"required\":true,\"type\":\"double\"},"
	                          "{\"id\":5,\"name\":\"t\",\"required\":true,\"type\":\"time\"}]}",
	                          &s, &err),
	         &err);
	/* A file another writer made: millis and nanos, an int column for a long, a float for a double. */
	tl_pq_schema *pq = tl_pq_schema_new();
	tl_pq_column c = {0};
	c.required = true;
	c.name = "ms", c.physical = TL_PQ_INT64, c.logical = TL_PQ_LOGICAL_TIMESTAMP, c.unit = TL_PQ_MILLIS,
	c.field_id = 1;
	tl_pq_schema_add(pq, &c);
	c.name = "ns", c.unit = TL_PQ_NANOS, c.utc_adjusted = true, c.field_id = 2;
	tl_pq_schema_add(pq, &c);
	memset(&c, 0, sizeof(c));
	c.required = true;
	c.name = "l", c.physical = TL_PQ_INT32, c.field_id = 3;
	tl_pq_schema_add(pq, &c);
	c.name = "d", c.physical = TL_PQ_FLOAT, c.field_id = 4;
	tl_pq_schema_add(pq, &c);
	c.name = "t", c.physical = TL_PQ_INT32, c.logical = TL_PQ_LOGICAL_TIME, c.unit = TL_PQ_MILLIS, c.field_id = 5;
	tl_pq_schema_add(pq, &c);
	tl_pq_batch *b = tl_pq_batch_new(pq, 2);
	b->nrows = 2;
	b->columns[0].v.i64[0] = -1500, b->columns[0].v.i64[1] = 1700000000123LL;
	b->columns[1].v.i64[0] = -1500, b->columns[1].v.i64[1] = 2001;
	b->columns[2].v.i32[0] = -7, b->columns[2].v.i32[1] = 2000000000;
	b->columns[3].v.f32[0] = 0.5f, b->columns[3].v.f32[1] = -2.25f;
	b->columns[4].v.i32[0] = 1, b->columns[4].v.i32[1] = 86399999;
	metrics_run m;
	int rc = run_metrics(&m, &s, pq, b, 10, &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(pq);
	const tl_ice_data_file *f = &m.df;
	tl_ice_value dlo = {0}, dhi = {0};
	dlo.v.f64 = -2.25, dhi.v.f64 = 0.5;
	/* Nanoseconds round outward: -1500ns -> -2us below, 2001ns -> 3us above. */
	bool ok = rc == 0 && bound_is(&f->lower_bounds, &s, 1, ival(-1500000)) &&
	          bound_is(&f->upper_bounds, &s, 1, ival(1700000000123000LL)) &&
	          bound_is(&f->lower_bounds, &s, 2, ival(-2)) && bound_is(&f->upper_bounds, &s, 2, ival(3)) &&
	          bound_is(&f->lower_bounds, &s, 3, ival(-7)) && bound_is(&f->upper_bounds, &s, 3, ival(2000000000)) &&
	          bound_is(&f->lower_bounds, &s, 4, dlo) && bound_is(&f->upper_bounds, &s, 4, dhi) &&
	          bound_is(&f->lower_bounds, &s, 5, ival(1000)) && bound_is(&f->upper_bounds, &s, 5, ival(86399999000LL));
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_metrics_maps_by_name_without_field_ids)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema s;
	CHECK_OK(schema_from_text("{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	                          "{\"id\":7,\"name\":\"a\",\"required\":true,\"type\":\"int\"},"
	                          "{\"id\":9,\"name\":\"b\",\"required\":true,\"type\":\"int\"}]}",
	                          &s, &err),
	         &err);
	tl_pq_schema *pq = tl_pq_schema_new();
	tl_pq_column c = {0};
	c.required = true, c.physical = TL_PQ_INT32, c.field_id = -1;
	c.name = "b";
	tl_pq_schema_add(pq, &c);
	c.name = "unknown";
	tl_pq_schema_add(pq, &c);
	tl_pq_batch *b = tl_pq_batch_new(pq, 1);
	b->nrows = 1;
	b->columns[0].v.i32[0] = 42;
	b->columns[1].v.i32[0] = 1;
	metrics_run m;
	int rc = run_metrics(&m, &s, pq, b, 10, &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(pq);
	bool ok = rc == 0 && m.df.value_counts.n == 1 && m.df.value_counts.keys[0] == 9 &&
	          bound_is(&m.df.lower_bounds, &s, 9, i32val(42));
	metrics_run_free(&m);
	tl_ice_schema_free(&s);
	CHECK_OK(rc, &err);
	CHECK(ok);
}


/* -------------------------------------------------------------- writer */

#define DAY0 19723   /* 2024-01-01 */
#define MICROS_PER_DAY 86400000000LL

static const char *TABLE_SCHEMA =
	"{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	"{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
	"{\"id\":2,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
	"{\"id\":3,\"name\":\"name\",\"required\":false,\"type\":\"string\"}]}";
static const char *DAY_SPEC =
	"{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,\"name\":\"ts_day\",\"transform\":\"day\"}]}";

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static int parquet_count;
static int count_parquet(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)ftw;
	size_t n = strlen(path);
	if (flag == FTW_F && n > 8 && strcmp(path + n - 8, ".parquet") == 0)
		parquet_count++;
	return 0;
}

static int parquet_files_under(const char *dir)
{
	parquet_count = 0;
	nftw(dir, count_parquet, 16, FTW_PHYS);
	return parquet_count;
}

/* A fresh table of a schema in a new temporary directory (dir receives its path). */
static tl_ice_table *new_table_of(const char *schema_json, const char *spec_json, char dir[64], tl_error *err)
{
	strcpy(dir, "/tmp/tl_ice_writer_XXXXXX");
	if (mkdtemp(dir) == NULL) {
		tl_error_set(err, TL_ERR_IO, "mkdtemp failed");
		return NULL;
	}
	tl_ice_schema s;
	tl_ice_partition_spec spec;
	if (schema_from_text(schema_json, &s, err) < 0) {
		rmdir(dir);
		return NULL;
	}
	if (spec_from_text(spec_json, &spec, err) < 0) {
		tl_ice_schema_free(&s);
		rmdir(dir);
		return NULL;
	}
	tl_ice_table *t = tl_ice_table_create(dir, &s, &spec, NULL, 0, err);
	tl_ice_schema_free(&s);
	tl_ice_partition_spec_free(&spec);
	if (t == NULL)
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return t;
}

/* The same with the writer tests' table schema: id, ts, name. */
static tl_ice_table *new_table(const char *spec_json, char dir[64], tl_error *err)
{
	return new_table_of(TABLE_SCHEMA, spec_json, dir, err);
}

static void drop_table(tl_ice_table *t, const char *dir)
{
	tl_ice_table_free(t);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *NAMES[] = {"apple", "banana", "cherry", "avocado", "blueberry", "cranberry", "date"};

/* Fills row r of a table-schema batch: id, a timestamp on day `day`, a name (NULL: null). */
static void put_row(tl_pq_batch *b, int64_t r, int64_t id, int day, const char *name)
{
	b->columns[0].v.i64[r] = id;
	b->columns[1].v.i64[r] = (int64_t)(DAY0 + day) * MICROS_PER_DAY + id * 1000;
	b->columns[1].valid[r] = 1;
	b->columns[2].valid[r] = name != NULL;
	if (name != NULL)
		b->columns[2].v.bytes[r] = str(name);
	if (r + 1 > b->nrows)
		b->nrows = r + 1;
}

/* Reads column `col` (INT64) of a data file; returns the row count or -1. */
static int64_t read_longs(const char *file_path, int col, int64_t *out, int64_t max, tl_error *err)
{
	tl_input *in = tl_input_open_uri(file_path, err);
	if (in == NULL)
		return -1;
	tl_pq_reader *r = tl_pq_reader_open(in, err);
	int64_t total = r != NULL ? 0 : -1;
	tl_pq_batch *b = r != NULL ? tl_pq_reader_batch_new(r, 64) : NULL;
	while (b != NULL) {
		int64_t n = tl_pq_reader_next(r, b, err);
		if (n <= 0) {
			total = n < 0 ? -1 : total;
			break;
		}
		for (int64_t i = 0; i < n && total < max; i++)
			out[total++] = b->columns[col].v.i64[i];
	}
	tl_pq_batch_free(b);
	tl_pq_reader_free(r);
	tl_input_close(in);
	return total;
}

TEST(iceberg_writer_splits_rows_by_day)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table(DAY_SPEC, dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 16);
	for (int r = 0; r < 9; r++)   /* interleaved: days 0,1,2,0,1,2,... */
		put_row(b, r, r, r % 3, NAMES[r % 7]);
	int rc = tl_ice_writer_write(w, b, &err);
	b->nrows = 0;
	for (int r = 0; r < 4; r++)   /* all on day 1: the one-partition path */
		put_row(b, r, 100 + r, 1, NULL);
	if (rc == 0)
		rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	tl_pq_batch_free(b);
	bool ok = rc == 0 && tl_ice_writer_nfiles(w) == 3 && tl_ice_writer_rows(w) == 13 &&
	          parquet_files_under(dir) == 3;
	static const int64_t want_rows[3] = {3, 7, 3}, want_lo[3] = {0, 1, 2}, want_hi[3] = {6, 103, 8};
	for (int i = 0; ok && i < 3; i++) {
		const tl_ice_data_file *f = tl_ice_writer_file(w, i);
		char part[48];
		snprintf(part, sizeof(part), "/data/ts_day=2024-01-0%d/", i + 1);
		ok = f->content == TL_ICE_CONTENT_DATA && strcmp(f->file_format, "PARQUET") == 0 &&
		     strncmp(f->file_path, dir, strlen(dir)) == 0 && strstr(f->file_path, part) != NULL &&
		     f->npartition == 1 && !f->partition[0].is_null && f->partition[0].v.i32 == DAY0 + i &&
		     f->record_count == want_rows[i] && f->file_size_in_bytes > 0 && f->n_equality_ids == 0 &&
		     bound_is(&f->lower_bounds, tl_ice_metadata_current_schema(t->metadata), 1, ival(want_lo[i])) &&
		     bound_is(&f->upper_bounds, tl_ice_metadata_current_schema(t->metadata), 1, ival(want_hi[i])) &&
		     find_long(&f->null_value_counts, 3) == (i == 1 ? 4 : 0);
		int64_t ts[16];
		int64_t n = ok ? read_longs(f->file_path, 1, ts, 16, &err) : -1;
		ok = ok && n == want_rows[i];
		for (int64_t k = 0; ok && k < n; k++)
			ok = ts[k] / MICROS_PER_DAY == DAY0 + i;
	}
	tl_ice_writer_free(w);
	/* Files of a closed writer stay. */
	ok = ok && parquet_files_under(dir) == 3;
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

/*
 * The writer counts NaNs per float and double field (Parquet statistics do
 * not, and without a count a reader must assume NaNs, which are above
 * every number: `x > c` could prune no file).
 */
TEST(iceberg_writer_counts_nans)
{
	static const char *schema =
	    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
	    "{\"id\":2,\"name\":\"x\",\"required\":false,\"type\":\"double\"},"
	    "{\"id\":3,\"name\":\"y\",\"required\":false,\"type\":\"float\"},"
	    "{\"id\":4,\"name\":\"z\",\"required\":true,\"type\":\"double\"}]}";
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table_of(schema, "{\"spec-id\":0,\"fields\":[]}", dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 8);
	int rc = 0;
	for (int batch = 0; batch < 2 && rc == 0; batch++) {
		b->nrows = 4;
		for (int r = 0; r < 4; r++) {
			b->columns[0].v.i64[r] = batch * 4 + r;
			b->columns[1].v.f64[r] = r == 1 ? NAN : r * 1.5;   /* a NaN per batch, and a null */
			b->columns[1].valid[r] = r != 3;
			b->columns[2].v.f32[r] = batch == 1 && r == 0 ? NAN : -0.0f;
			b->columns[2].valid[r] = 1;
			b->columns[3].v.f64[r] = 7;
		}
		b->columns[1].v.f64[3] = NAN;   /* under the null: not a NaN value */
		rc = tl_ice_writer_write(w, b, &err);
	}
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	tl_pq_batch_free(b);
	const tl_ice_data_file *f = rc == 0 && tl_ice_writer_nfiles(w) == 1 ? tl_ice_writer_file(w, 0) : NULL;
	bool ok = f != NULL && f->nan_value_counts.n == 3 && find_long(&f->nan_value_counts, 2) == 2 &&
	          find_long(&f->nan_value_counts, 3) == 1 && find_long(&f->nan_value_counts, 4) == 0 &&
	          find_long(&f->nan_value_counts, 1) == -999;
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

/* How many distinct tuples the spec gives the rows of batch b. */
static int distinct_tuples(const tl_ice_table *t, const tl_pq_batch *b, tl_error *err)
{
	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(t->metadata);
	const tl_ice_schema *s = tl_ice_metadata_current_schema(t->metadata);
	char seen[64][64];
	int nseen = 0;
	for (int64_t r = 0; r < b->nrows; r++) {
		tl_buf key;
		tl_buf_init(&key);
		for (int i = 0; i < spec->nfields; i++) {
			const tl_ice_partition_field *pf = &spec->fields[i];
			const tl_ice_field *src = tl_ice_schema_find_id(s, pf->source_id);
			tl_ice_value in = {0}, out;
			if (pf->source_id == 1)
				in.v.i64 = b->columns[0].v.i64[r];
			else if (b->columns[2].valid[r])
				in.ptr = b->columns[2].v.bytes[r].ptr, in.len = b->columns[2].v.bytes[r].len;
			else
				in.is_null = true;
			if (tl_ice_transform_apply(&pf->transform, &src->type, &in, &out, err) < 0)
				return -1;
			tl_ice_transform_human(&pf->transform, &src->type, &out, &key);
			tl_buf_append_byte(&key, '|');
		}
		tl_buf_append_byte(&key, 0);
		bool found = false;
		for (int k = 0; k < nseen && !found; k++)
			found = strcmp(seen[k], (const char *)key.data) == 0;
		if (!found)
			snprintf(seen[nseen++], 64, "%s", (const char *)key.data);
		tl_buf_free(&key);
	}
	return nseen;
}

TEST(iceberg_writer_truncate_and_bucket_partitions)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table("{\"spec-id\":0,\"fields\":["
	                            "{\"source-id\":3,\"field-id\":1000,\"name\":\"name_trunc\",\"transform\":\"truncate[1]\"},"
	                            "{\"source-id\":1,\"field-id\":1001,\"name\":\"id_bucket\",\"transform\":\"bucket[4]\"}]}",
	                            dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 32);
	for (int r = 0; r < 30; r++)
		put_row(b, r, r * 7, 0, r % 10 == 9 ? NULL : NAMES[r % 7]);
	int expected = distinct_tuples(t, b, &err);
	int rc = expected < 0 ? -1 : tl_ice_writer_write(w, b, &err);
	/* A row the spec cannot partition (invalid UTF-8 to truncate) refuses its batch, nothing else. */
	tl_bytes good = b->columns[2].v.bytes[0];
	b->columns[2].v.bytes[0] = str("\xff\xfe");
	int64_t n = b->nrows;
	b->nrows = 1;
	tl_error bad;
	tl_error_clear(&bad);
	bool refused = tl_ice_writer_write(w, b, &bad) < 0 && bad.code == TL_ERR_CORRUPT;
	b->columns[2].v.bytes[0] = good;
	b->nrows = n;
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	bool ok = rc == 0 && refused && expected > 4 && tl_ice_writer_nfiles(w) == expected;
	int64_t total = 0;
	const tl_ice_schema *s = tl_ice_metadata_current_schema(t->metadata);
	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(t->metadata);
	for (int i = 0; ok && i < tl_ice_writer_nfiles(w); i++) {
		const tl_ice_data_file *f = tl_ice_writer_file(w, i);
		total += f->record_count;
		/* Every row of the file has the file's bucket. */
		int64_t ids[32];
		int64_t n = read_longs(f->file_path, 0, ids, 32, &err);
		ok = n == f->record_count && f->npartition == 2;
		for (int64_t k = 0; ok && k < n; k++) {
			tl_ice_value in = {0}, out;
			in.v.i64 = ids[k];
			ok = tl_ice_transform_apply(&spec->fields[1].transform, &s->fields[0].type, &in, &out, &err) == 0 &&
			     out.v.i32 == f->partition[1].v.i32;
		}
		/* The truncated name is a one-character prefix or null, and the path says so. */
		const tl_ice_value *nv = &f->partition[0];
		ok = ok && (nv->is_null ? strstr(f->file_path, "name_trunc=null/") != NULL
		                        : nv->len == 1 && strchr("abcd", nv->ptr[0]) != NULL);
	}
	ok = ok && total == 30;
	tl_pq_batch_free(b);
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_writer_identity_partition)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table("{\"spec-id\":0,\"fields\":["
	                            "{\"source-id\":3,\"field-id\":1000,\"name\":\"name\",\"transform\":\"identity\"}]}",
	                            dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 8);
	put_row(b, 0, 1, 0, "a b/c");
	put_row(b, 1, 2, 0, NULL);
	put_row(b, 2, 3, 0, "a b/c");
	int rc = tl_ice_writer_write(w, b, &err);
	tl_pq_batch_free(b);   /* the writer keeps its own copies of partition values */
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	bool ok = rc == 0 && tl_ice_writer_nfiles(w) == 2;
	if (ok) {
		const tl_ice_data_file *f0 = tl_ice_writer_file(w, 0), *f1 = tl_ice_writer_file(w, 1);
		ok = f0->record_count == 2 && f0->partition[0].len == 5 && memcmp(f0->partition[0].ptr, "a b/c", 5) == 0 &&
		     strstr(f0->file_path, "/data/name=a+b%2Fc/") != NULL && f1->record_count == 1 &&
		     f1->partition[0].is_null && strstr(f1->file_path, "/data/name=null/") != NULL;
	}
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_writer_rolls_over_at_target_size)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table("{\"spec-id\":0,\"fields\":[]}", dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer_options o;
	tl_ice_writer_options_init(&o);
	o.target_file_bytes = 1;
	tl_ice_writer *w = tl_ice_writer_open_data(t, &o, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 10);
	int rc = 0;
	for (int k = 0; k < 5 && rc == 0; k++) {
		b->nrows = 0;
		for (int r = 0; r < 10; r++)
			put_row(b, r, k * 10 + r, k, "x");
		rc = tl_ice_writer_write(w, b, &err);
	}
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	tl_pq_batch_free(b);
	bool ok = rc == 0 && tl_ice_writer_nfiles(w) == 5 && tl_ice_writer_rows(w) == 50 &&
	          parquet_files_under(dir) == 5;
	for (int i = 0; ok && i < 5; i++) {
		const tl_ice_data_file *f = tl_ice_writer_file(w, i);
		ok = f->record_count == 10 && f->npartition == 0 && strstr(f->file_path, "/data/") != NULL &&
		     bound_is(&f->lower_bounds, tl_ice_metadata_current_schema(t->metadata), 1, ival(i * 10));
	}
	tl_ice_writer_free(w);

	/* One large batch rolls over too, at row-group boundaries. */
	o.parquet.row_group_rows = 10;
	w = tl_ice_writer_open_data(t, &o, &err);
	if (w == NULL)
		drop_table(t, dir);
	CHECK_OK(w == NULL ? -1 : 0, &err);
	b = tl_pq_batch_new(tl_ice_writer_schema(w), 50);
	for (int r = 0; r < 50; r++)
		put_row(b, r, r, 0, "y");
	if (rc == 0)
		rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	tl_pq_batch_free(b);
	ok = ok && rc == 0 && tl_ice_writer_nfiles(w) == 5 && parquet_files_under(dir) == 10;
	for (int i = 0; ok && i < 5; i++)
		ok = tl_ice_writer_file(w, i)->record_count == 10 &&
		     bound_is(&tl_ice_writer_file(w, i)->upper_bounds, tl_ice_metadata_current_schema(t->metadata), 1,
		              ival(i * 10 + 9));
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_writer_required_null_leaves_no_files)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table(DAY_SPEC, dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 4);
	put_row(b, 0, 1, 0, "a");
	put_row(b, 1, 2, 1, "b");
	b->columns[0].valid = tl_calloc(4, 1);   /* a validity array on the required id column */
	b->columns[0].valid[0] = 1;
	int rc = tl_ice_writer_write(w, b, &err);
	bool ok = rc < 0 && err.code == TL_ERR_INVALID && strstr(err.message, "\"id\"") != NULL &&
	          parquet_files_under(dir) == 0;
	/* The writer is still usable: a good batch writes, then freeing without close removes it. */
	b->columns[0].valid[1] = 1;
	tl_error_clear(&err);
	ok = ok && tl_ice_writer_write(w, b, &err) == 0 && parquet_files_under(dir) == 2;
	free(b->columns[0].valid);
	b->columns[0].valid = NULL;
	tl_pq_batch_free(b);
	tl_ice_writer_free(w);
	ok = ok && parquet_files_under(dir) == 0;
	drop_table(t, dir);
	CHECK(ok);
}

TEST(iceberg_writer_free_before_close_deletes_files)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table(DAY_SPEC, dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer_options o;
	tl_ice_writer_options_init(&o);
	o.target_file_bytes = 1;   /* some files finish before the free */
	tl_ice_writer *w = tl_ice_writer_open_data(t, &o, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 8);
	for (int r = 0; r < 6; r++)
		put_row(b, r, r, r % 3, "z");
	int rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_write(w, b, &err);
	tl_pq_batch_free(b);
	bool ok = rc == 0 && parquet_files_under(dir) == 6;
	tl_ice_writer_free(w);
	ok = ok && parquet_files_under(dir) == 0;
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_writer_closes_least_recently_used)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table("{\"spec-id\":0,\"fields\":["
	                            "{\"source-id\":1,\"field-id\":1000,\"name\":\"b\",\"transform\":\"bucket[40]\"}]}",
	                            dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 400);
	for (int r = 0; r < 400; r++)
		put_row(b, r, r, 0, NULL);
	int rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	tl_pq_batch_free(b);
	int64_t total = 0;
	int distinct = 0;
	int32_t seen[64];
	for (int i = 0; rc == 0 && i < tl_ice_writer_nfiles(w); i++) {
		const tl_ice_data_file *f = tl_ice_writer_file(w, i);
		total += f->record_count;
		bool found = false;
		for (int k = 0; k < distinct && !found; k++)
			found = seen[k] == f->partition[0].v.i32;
		if (!found && distinct < 64)
			seen[distinct++] = f->partition[0].v.i32;
	}
	/* More than 32 buckets: the second batch reopens files the first had to finish. */
	bool ok = rc == 0 && total == 800 && distinct > TL_ICE_WRITER_MAX_OPEN &&
	          tl_ice_writer_nfiles(w) > distinct && parquet_files_under(dir) == tl_ice_writer_nfiles(w);
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_writer_equality_deletes)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table(DAY_SPEC, dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	static const int32_t id_only[] = {1}, unknown[] = {1, 99}, twice[] = {2, 2}, good[] = {2, 1};
	tl_ice_writer *w = tl_ice_writer_open_equality_deletes(t, id_only, 1, NULL, &err);
	bool ok = w == NULL && err.code == TL_ERR_INVALID && strstr(err.message, "\"ts\"") != NULL;
	tl_error_clear(&err);
	ok = ok && tl_ice_writer_open_equality_deletes(t, unknown, 2, NULL, &err) == NULL && err.code == TL_ERR_INVALID;
	tl_error_clear(&err);
	ok = ok && tl_ice_writer_open_equality_deletes(t, twice, 2, NULL, &err) == NULL && err.code == TL_ERR_INVALID;
	tl_error_clear(&err);
	ok = ok && tl_ice_writer_open_equality_deletes(t, good, 0, NULL, &err) == NULL && err.code == TL_ERR_INVALID;
	tl_error_clear(&err);
	w = tl_ice_writer_open_equality_deletes(t, good, 2, NULL, &err);
	if (w == NULL)
		drop_table(t, dir);
	CHECK_OK(w == NULL ? -1 : 0, &err);
	const tl_pq_schema *ps = tl_ice_writer_schema(w);
	ok = ok && ps->ncolumns == 2 && strcmp(ps->columns[0].name, "ts") == 0 && ps->columns[0].field_id == 2 &&
	     ps->columns[1].field_id == 1 && ps->columns[1].required;
	tl_pq_batch *b = tl_pq_batch_new(ps, 4);
	b->nrows = 3;
	for (int r = 0; r < 3; r++) {
		b->columns[0].v.i64[r] = (int64_t)(DAY0 + 2) * MICROS_PER_DAY + r;
		b->columns[0].valid[r] = 1;
		b->columns[1].v.i64[r] = 50 + r;
	}
	int rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	tl_pq_batch_free(b);
	const tl_ice_data_file *f = rc == 0 && tl_ice_writer_nfiles(w) == 1 ? tl_ice_writer_file(w, 0) : NULL;
	ok = ok && f != NULL && f->content == TL_ICE_CONTENT_EQUALITY_DELETES && f->n_equality_ids == 2 &&
	     f->equality_ids[0] == 2 && f->equality_ids[1] == 1 && f->record_count == 3 &&
	     f->partition[0].v.i32 == DAY0 + 2 && strstr(f->file_path, "ts_day=2024-01-03/") != NULL &&
	     f->value_counts.n == 2 && find_bound(&f->lower_bounds, 3) == NULL &&
	     bound_is(&f->upper_bounds, tl_ice_metadata_current_schema(t->metadata), 1, ival(52));
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_writer_deletes_with_extra_columns)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table(DAY_SPEC, dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	static const int32_t id_ts[] = {1, 2}, ts_only[] = {2}, id_only[] = {1}, unknown[] = {1, 99}, id_twice[] = {1, 1};
	/* The key must be among the columns; the partition source must be too; columns are fields, once each. */
	tl_ice_writer *w = tl_ice_writer_open_deletes(t, ts_only, 1, id_only, 1, NULL, &err);
	bool ok = w == NULL && err.code == TL_ERR_INVALID && strstr(err.message, "id 1 ") != NULL;
	tl_error_clear(&err);
	ok = ok && tl_ice_writer_open_deletes(t, id_only, 1, id_only, 1, NULL, &err) == NULL &&
	     err.code == TL_ERR_INVALID && strstr(err.message, "\"ts\"") != NULL;
	tl_error_clear(&err);
	ok = ok && tl_ice_writer_open_deletes(t, unknown, 2, id_only, 1, NULL, &err) == NULL && err.code == TL_ERR_INVALID;
	tl_error_clear(&err);
	ok = ok && tl_ice_writer_open_deletes(t, id_twice, 2, id_only, 1, NULL, &err) == NULL &&
	     err.code == TL_ERR_INVALID;
	tl_error_clear(&err);
	w = tl_ice_writer_open_deletes(t, id_ts, 2, id_only, 1, NULL, &err);
	if (w == NULL)
		drop_table(t, dir);
	CHECK_OK(w == NULL ? -1 : 0, &err);
	const tl_pq_schema *ps = tl_ice_writer_schema(w);
	ok = ok && ps->ncolumns == 2 && ps->columns[0].field_id == 1 && ps->columns[0].required &&
	     strcmp(ps->columns[1].name, "ts") == 0 && ps->columns[1].field_id == 2;
	/* Two rows on day 2, one on day 4: one delete file per partition of the old rows. */
	tl_pq_batch *b = tl_pq_batch_new(ps, 4);
	b->nrows = 3;
	static const int days[] = {2, 4, 2};
	for (int r = 0; r < 3; r++) {
		b->columns[0].v.i64[r] = 70 + r;
		b->columns[1].v.i64[r] = (int64_t)(DAY0 + days[r]) * MICROS_PER_DAY + r;
		b->columns[1].valid[r] = 1;
	}
	int rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	tl_pq_batch_free(b);
	ok = ok && rc == 0 && tl_ice_writer_nfiles(w) == 2 && tl_ice_writer_rows(w) == 3;
	int64_t on_day2 = 0, on_day4 = 0;
	for (int i = 0; ok && i < tl_ice_writer_nfiles(w); i++) {
		const tl_ice_data_file *f = tl_ice_writer_file(w, i);
		ok = f->content == TL_ICE_CONTENT_EQUALITY_DELETES && f->n_equality_ids == 1 && f->equality_ids[0] == 1 &&
		     f->value_counts.n == 2;
		if (f->partition[0].v.i32 == DAY0 + 2 && strstr(f->file_path, "ts_day=2024-01-03/") != NULL)
			on_day2 += f->record_count;
		else if (f->partition[0].v.i32 == DAY0 + 4)
			on_day4 += f->record_count;
	}
	ok = ok && on_day2 == 2 && on_day4 == 1;
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

TEST(iceberg_writer_finish_open_files_starts_new_files)
{
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table(DAY_SPEC, dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 16);
	for (int r = 0; r < 4; r++)   /* days 0 and 1 */
		put_row(b, r, r, r % 2, NAMES[r]);
	int rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_finish_open_files(w, &err);
	/* Both files are finished and listed before close. */
	bool ok = rc == 0 && tl_ice_writer_nfiles(w) == 2 && parquet_files_under(dir) == 2;
	b->nrows = 0;
	put_row(b, 0, 10, 1, NULL);   /* day 1 again: a new file, the finished one stays as it is */
	if (rc == 0)
		rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	tl_pq_batch_free(b);
	ok = ok && rc == 0 && tl_ice_writer_nfiles(w) == 3 && tl_ice_writer_rows(w) == 5 &&
	     tl_ice_writer_file(w, 0)->record_count + tl_ice_writer_file(w, 1)->record_count == 4 &&
	     tl_ice_writer_file(w, 2)->record_count == 1 && tl_ice_writer_file(w, 2)->partition[0].v.i32 == DAY0 + 1;
	/* A closed writer refuses it. */
	tl_error late;
	tl_error_clear(&late);
	ok = ok && tl_ice_writer_finish_open_files(w, &late) < 0 && late.code == TL_ERR_INVALID;
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}

/*
 * bloom_field_ids: the named fields get bloom filters besides the key, the
 * others none, and the reader skips the row groups they rule out for = and
 * IN on a value inside every row group's min and max (where statistics
 * cannot help). An id that is not a field is refused.
 */
TEST(iceberg_writer_bloom_filters_on_named_fields)
{
	static const char *schema_json =
		"{\"type\":\"struct\",\"schema-id\":0,\"identifier-field-ids\":[1],\"fields\":["
		"{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
		"{\"id\":2,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
		"{\"id\":3,\"name\":\"name\",\"required\":false,\"type\":\"string\"},"
		"{\"id\":4,\"name\":\"code\",\"required\":false,\"type\":\"int\"},"
		"{\"id\":5,\"name\":\"flag\",\"required\":false,\"type\":\"boolean\"}]}";
	enum { ROWS = 400, GROUP_ROWS = 100, GROUPS = ROWS / GROUP_ROWS };
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table_of(schema_json, DAY_SPEC, dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer_options opts;
	tl_ice_writer_options_init(&opts);
	opts.bloom_identifier_fields = true;
	opts.parquet.row_group_rows = GROUP_ROWS;
	int32_t unknown = 99;
	opts.bloom_field_ids = &unknown;
	opts.nbloom_field_ids = 1;
	CHECK(tl_ice_writer_open_data(t, &opts, &err) == NULL && err.code == TL_ERR_INVALID);
	CHECK(strstr(err.message, "99") != NULL);
	tl_error_clear(&err);
	/* name and flag named, name twice and with the key: each column once, the boolean none. */
	int32_t *named = malloc(sizeof(int32_t) * 4);
	named[0] = 3, named[1] = 5, named[2] = 3, named[3] = 4;
	opts.bloom_field_ids = named;
	opts.nbloom_field_ids = 4;
	tl_ice_writer *w = tl_ice_writer_open_data(t, &opts, &err);
	free(named); /* copied at open */
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), ROWS);
	char names[ROWS][16];
	for (int r = 0; r < ROWS; r++) {
		/* Every row group spans "a" to "z" and codes 0 to 1,000,000: min/max rule nothing out. */
		int at = r % GROUP_ROWS;
		snprintf(names[r], sizeof(names[r]), "%s%d", at == 0 ? "a" : at == 1 ? "z" : "k", r);
		put_row(b, r, r, 0, names[r]);
		b->columns[3].v.i32[r] = at == 0 ? 0 : at == 1 ? 1000000 : 1000 + r;
		b->columns[3].valid[r] = 1;
		b->columns[4].v.b[r] = r % 3 == 0;
		b->columns[4].valid[r] = 1;
	}
	int rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	CHECK_OK(rc, &err);
	CHECK_INT(tl_ice_writer_nfiles(w), 1);
	const char *path = tl_ice_writer_file(w, 0)->file_path;
	tl_input *in = tl_input_open_uri(path, &err);
	tl_pq_reader *r = in ? tl_pq_reader_open(in, &err) : NULL;
	CHECK_OK(r == NULL ? -1 : 0, &err);
	CHECK_INT(tl_pq_reader_num_row_groups(r), GROUPS);
	for (int g = 0; g < GROUPS; g++) {
		static const bool want[5] = {true, false, true, true, false};
		for (int c = 0; c < 5; c++)
			if (tl_pq_reader_has_bloom_filter(r, g, c) != want[c])
				tl_test_fail(__FILE__, __LINE__, "row group %d column %d: bloom filter %s", g, c,
				             want[c] ? "missing" : "unexpected");
	}
	tl_pq_reader_free(r);
	tl_input_close(in);

	const tl_ice_schema *schema = tl_ice_metadata_current_schema(t->metadata);
	tl_ice_scan_task task;
	memset(&task, 0, sizeof(task));
	task.file.content = TL_ICE_CONTENT_DATA;
	task.file.file_path = (char *)path;
	task.file.file_format = "PARQUET";
	const tl_ice_scan_task *tasks[1] = {&task};
	tl_arena arena;
	tl_arena_init(&arena, 0);
	struct {
		tl_ice_expr_op op;
		int32_t id;
		tl_ice_value v[2];
		int nvalues;
		int64_t want_rows;
		int64_t want_bloom_skips;
	} cases[] = {
		{TL_ICE_EXPR_EQ, 3, {{.ptr = (const uint8_t *)"m", .len = 1}}, 1, 0, GROUPS},
		{TL_ICE_EXPR_EQ, 3, {{.ptr = (const uint8_t *)"k120", .len = 4}}, 1, 1, GROUPS - 1},
		{TL_ICE_EXPR_IN, 3, {{.ptr = (const uint8_t *)"k5", .len = 2}, {.ptr = (const uint8_t *)"k399", .len = 4}},
		 2, 2, GROUPS - 2},
		{TL_ICE_EXPR_EQ, 4, {{.v.i32 = 500000}}, 1, 0, GROUPS},
		{TL_ICE_EXPR_EQ, 4, {{.v.i32 = 1000 + 202}}, 1, 1, GROUPS - 1},
		/* ts has no bloom filter: nothing skipped by one */
		{TL_ICE_EXPR_EQ, 2, {{.v.i64 = (int64_t)DAY0 * MICROS_PER_DAY + 7}}, 1, 0, 0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const tl_ice_expr *filter = tl_ice_expr_predicate(&arena, cases[k].op, cases[k].id, cases[k].v, cases[k].nvalues);
		tl_ice_reader *ir = ice_reader_new(schema, filter, tasks, 1, NULL, 0, &err);
		CHECK_OK(ir == NULL ? -1 : 0, &err);
		tl_pq_batch *out = tl_ice_reader_batch_new(ir, 1000);
		int64_t got, rows = 0;
		while ((got = tl_ice_reader_next(ir, out, &err)) > 0)
			for (int64_t i = 0; i < got; i++) /* the reader keeps whole row groups: filter the rows */
				rows += cases[k].id == 3 ? (out->columns[2].v.bytes[i].len == cases[k].v[0].len &&
				                             memcmp(out->columns[2].v.bytes[i].ptr, cases[k].v[0].ptr, cases[k].v[0].len) == 0) ||
				                                (cases[k].nvalues > 1 && out->columns[2].v.bytes[i].len == cases[k].v[1].len &&
				                                 memcmp(out->columns[2].v.bytes[i].ptr, cases[k].v[1].ptr, cases[k].v[1].len) == 0)
				        : cases[k].id == 4 ? out->columns[3].v.i32[i] == cases[k].v[0].v.i32
				                           : out->columns[1].v.i64[i] == cases[k].v[0].v.i64;
		CHECK_OK(got < 0 ? -1 : 0, &err);
		const tl_ice_reader_stats *st = tl_ice_reader_stats_get(ir);
		if (rows != cases[k].want_rows || st->row_groups_skipped_by_bloom != cases[k].want_bloom_skips)
			tl_test_fail(__FILE__, __LINE__, "case %zu: %lld rows, %lld row groups skipped by bloom filters", k,
			             (long long)rows, (long long)st->row_groups_skipped_by_bloom);
		tl_pq_batch_free(out);
		tl_ice_reader_free(ir);
	}
	tl_arena_free(&arena);
	tl_pq_batch_free(b);
	tl_ice_writer_free(w);
	drop_table(t, dir);
}

/* bloom_identifier_fields: the key columns (identifier-field-ids) get bloom filters, the others none. */
TEST(iceberg_writer_bloom_filters_on_identifier_fields)
{
	static const char *keyed =
		"{\"type\":\"struct\",\"schema-id\":0,\"identifier-field-ids\":[1],\"fields\":["
		"{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
		"{\"id\":2,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
		"{\"id\":3,\"name\":\"name\",\"required\":false,\"type\":\"string\"}]}";
	tl_error err;
	tl_error_clear(&err);
	char dir[64];
	tl_ice_table *t = new_table_of(keyed, DAY_SPEC, dir, &err);
	CHECK_OK(t == NULL ? -1 : 0, &err);
	tl_ice_writer_options opts;
	tl_ice_writer_options_init(&opts);
	CHECK(!opts.bloom_identifier_fields);
	opts.bloom_identifier_fields = true;
	tl_ice_writer *w = tl_ice_writer_open_data(t, &opts, &err);
	CHECK(w != NULL);
	tl_pq_batch *b = tl_pq_batch_new(tl_ice_writer_schema(w), 16);
	for (int r = 0; r < 10; r++)
		put_row(b, r, 1000 + r, 0, NAMES[r % 7]);
	int rc = tl_ice_writer_write(w, b, &err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, &err);
	bool ok = rc == 0 && tl_ice_writer_nfiles(w) == 1;
	tl_input *in = ok ? tl_input_open_uri(tl_ice_writer_file(w, 0)->file_path, &err) : NULL;
	tl_pq_reader *r = in ? tl_pq_reader_open(in, &err) : NULL;
	if (r != NULL) {
		int64_t present = 1004, absent = 2004;
		tl_bytes p = {(const uint8_t *)&present, 8}, a = {(const uint8_t *)&absent, 8};
		ok = tl_pq_reader_has_bloom_filter(r, 0, 0) && !tl_pq_reader_has_bloom_filter(r, 0, 1) &&
		     !tl_pq_reader_has_bloom_filter(r, 0, 2) && tl_pq_reader_bloom_may_contain(r, 0, 0, &p, 1, &err) == 1 &&
		     tl_pq_reader_bloom_may_contain(r, 0, 0, &a, 1, &err) == 0;
	} else {
		ok = false;
	}
	tl_pq_reader_free(r);
	tl_input_close(in);
	tl_pq_batch_free(b);
	tl_ice_writer_free(w);
	drop_table(t, dir);
	CHECK_OK(rc, &err);
	CHECK(ok);
}
