/*
 * test_iceberg_reader.c: reading Iceberg scan tasks into batches.
 *
 * Most tests write small Parquet data and delete files into a scratch
 * directory and hand-build the tasks planning would produce, so each
 * reader rule (projection, schema evolution, promotions, name mapping,
 * position and equality deletes, error naming) is checked on its own. One
 * test goes through a real table: commit, plan, read.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deferred_check.h"
#include "test.h"
#include "iceberg/reader_internal.h"
#include "tierlake/iceberg_table.h"

/* ------------------------------------------------------------ scratch */

static char scratch_dir[64];

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_scratch(void)
{
	if (scratch_dir[0])
		nftw(scratch_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A path in this run's scratch directory. */
static const char *scratch(const char *name)
{
	static char paths[32][160];
	static int next;
	if (scratch_dir[0] == '\0') {
		strcpy(scratch_dir, "/tmp/tierdb-icereader-XXXXXX");
		if (mkdtemp(scratch_dir) == NULL) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(remove_scratch);
	}
	char *p = paths[next++ % 32];
	snprintf(p, sizeof(paths[0]), "%s/%s", scratch_dir, name);
	return p;
}

/* ------------------------------------------------------------ building files */

static tl_pq_column pq_col(const char *name, tl_pq_physical physical, bool required, int32_t field_id)
{
	tl_pq_column c;
	memset(&c, 0, sizeof(c));
	c.name = (char *)name;
	c.physical = physical;
	c.required = required;
	c.field_id = field_id;
	return c;
}

static tl_pq_column pq_string(const char *name, bool required, int32_t field_id)
{
	tl_pq_column c = pq_col(name, TL_PQ_BYTE_ARRAY, required, field_id);
	c.logical = TL_PQ_LOGICAL_STRING;
	return c;
}

static tl_pq_schema *pq_schema(const tl_pq_column *cols, int n)
{
	tl_pq_schema *s = tl_pq_schema_new();
	for (int i = 0; i < n; i++)
		tl_pq_schema_add(s, &cols[i]);
	return s;
}

static tl_bytes str(const char *s)
{
	return (tl_bytes){(const uint8_t *)s, (uint32_t)strlen(s)};
}

/* Writes batch (shaped by schema) to path in row groups of rg_rows rows. */
static int write_parquet(const char *path, const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t rg_rows,
                         tl_error *err)
{
	tl_output *out = tl_output_create_file(path, 0, err);
	if (out == NULL)
		return -1;
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.row_group_rows = rg_rows;
	tl_pq_writer *w = tl_pq_writer_open(out, schema, &o, err);
	int rc = w != NULL && tl_pq_writer_write(w, batch, err) == 0 && tl_pq_writer_close(w, err) == 0 &&
	                 out->finish(out, err) == 0
	             ? 0
	             : -1;
	tl_pq_writer_free(w);
	tl_output_close(out);
	return rc;
}

/* Position delete rows: (path, pos) pairs, written as the spec's delete schema. */
static int write_position_deletes(const char *path, const char *const *paths, const int64_t *positions, int n,
                                  tl_error *err)
{
	tl_pq_column cols[2] = {pq_string("file_path", true, ICE_POS_DELETE_FILE_PATH_ID),
	                        pq_col("pos", TL_PQ_INT64, true, ICE_POS_DELETE_POS_ID)};
	tl_pq_schema *s = pq_schema(cols, 2);
	tl_pq_batch *b = tl_pq_batch_new(s, n);
	for (int i = 0; i < n; i++) {
		b->columns[0].v.bytes[i] = str(paths[i]);
		b->columns[1].v.i64[i] = positions[i];
	}
	b->nrows = n;
	int rc = write_parquet(path, s, b, 1000, err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

static tl_ice_field ice_field(int32_t id, const char *name, bool required, tl_ice_type_id type)
{
	tl_ice_field f;
	memset(&f, 0, sizeof(f));
	f.id = id;
	f.name = (char *)name;
	f.required = required;
	f.type.id = type;
	return f;
}

static void data_task(tl_ice_scan_task *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->file.content = TL_ICE_CONTENT_DATA;
	t->file.file_path = path;
	t->file.file_format = "PARQUET";
}

static void delete_file(tl_ice_delete_file *d, int content, const char *path, int32_t *eq_ids, uint32_t neq)
{
	memset(d, 0, sizeof(*d));
	d->file.content = content;
	d->file.file_path = path;
	d->file.file_format = "PARQUET";
	d->file.equality_ids = eq_ids;
	d->file.n_equality_ids = neq;
}

/* Reads every row of the reader; column `col` (INT64) values land in out[], nulls as -1. */
static int64_t read_longs(tl_ice_reader *r, int col, int64_t capacity, int64_t *out, int64_t max, tl_error *err)
{
	tl_pq_batch *b = tl_ice_reader_batch_new(r, capacity);
	int64_t total = 0;
	for (;;) {
		int64_t n = tl_ice_reader_next(r, b, err);
		if (n < 0) {
			total = -1;
			break;
		}
		if (n == 0)
			break;
		for (int64_t i = 0; i < n && total < max; i++)
			out[total++] = tl_vector_is_null(&b->columns[col], i) ? -1 : b->columns[col].v.i64[i];
	}
	tl_pq_batch_free(b);
	return total;
}

/* ------------------------------------------------------------ projection */

/* Two files of (id long, name string, score double). */
static int write_people(const char *path, int64_t first, int n, tl_error *err)
{
	tl_pq_column cols[3] = {pq_col("id", TL_PQ_INT64, true, 1), pq_string("name", false, 2),
	                        pq_col("score", TL_PQ_DOUBLE, false, 3)};
	tl_pq_schema *s = pq_schema(cols, 3);
	tl_pq_batch *b = tl_pq_batch_new(s, n);
	static const char *names[] = {"ann", "bob", "cy", "dee"};
	for (int i = 0; i < n; i++) {
		b->columns[0].v.i64[i] = first + i;
		b->columns[1].v.bytes[i] = str(names[i % 4]);
		b->columns[1].valid[i] = i % 3 != 2;
		b->columns[2].v.f64[i] = (double)(first + i) / 2;
		b->columns[2].valid[i] = 1;
	}
	b->nrows = n;
	int rc = write_parquet(path, s, b, 1000, err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

static int people_schema(tl_ice_schema *schema, tl_error *err)
{
	tl_ice_field f[3] = {ice_field(1, "id", true, TL_ICE_LONG), ice_field(2, "name", false, TL_ICE_STRING),
	                     ice_field(3, "score", false, TL_ICE_DOUBLE)};
	return tl_ice_schema_init(schema, 0, f, 3, err);
}

TEST(ice_reader_projects_columns_in_requested_order)
{
	tl_error err;
	tl_error_clear(&err);
	const char *p1 = scratch("people1.parquet"), *p2 = scratch("people2.parquet");
	CHECK_OK(write_people(p1, 0, 5, &err), &err);
	CHECK_OK(write_people(p2, 100, 3, &err), &err);
	tl_ice_schema schema;
	CHECK_OK(people_schema(&schema, &err), &err);
	tl_ice_scan_task t[2];
	data_task(&t[0], p1);
	data_task(&t[1], p2);
	const tl_ice_scan_task *tasks[2] = {&t[0], &t[1]};

	int32_t ids[2] = {3, 2};
	tl_ice_reader *r = ice_reader_new(&schema, NULL, tasks, 2, ids, 2, &err);
	CHECK(r != NULL);
	const tl_pq_schema *out = tl_ice_reader_schema(r);
	CHECK_INT(out->ncolumns, 2);
	CHECK_STR(out->columns[0].name, "score");
	CHECK_INT(out->columns[0].physical, TL_PQ_DOUBLE);
	CHECK_INT(out->columns[0].field_id, 3);
	CHECK_STR(out->columns[1].name, "name");
	CHECK_INT(out->columns[1].logical, TL_PQ_LOGICAL_STRING);

	tl_pq_batch *b = tl_ice_reader_batch_new(r, 100);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 5);
	CHECK(b->columns[0].v.f64[4] == 2.0);
	CHECK(b->columns[1].v.bytes[1].len == 3 && memcmp(b->columns[1].v.bytes[1].ptr, "bob", 3) == 0);
	CHECK(tl_vector_is_null(&b->columns[1], 2));
	CHECK_INT(tl_ice_reader_next(r, b, &err), 3);
	CHECK(b->columns[0].v.f64[0] == 50.0);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 0);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 0);
	CHECK_INT(tl_ice_reader_stats_get(r)->files_read, 2);
	CHECK_INT(tl_ice_reader_stats_get(r)->row_groups_read, 2);
	CHECK_INT(tl_ice_reader_stats_get(r)->rows_deleted, 0);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);

	/* NULL reads every field in schema order. */
	r = ice_reader_new(&schema, NULL, tasks, 2, NULL, 0, &err);
	CHECK(r != NULL);
	CHECK_INT(tl_ice_reader_schema(r)->ncolumns, 3);
	int64_t got[16];
	CHECK_INT(read_longs(r, 0, 3, got, 16, &err), 8);
	CHECK_INT(got[0], 0);
	CHECK_INT(got[4], 4);
	CHECK_INT(got[5], 100);
	CHECK_INT(got[7], 102);
	tl_ice_reader_free(r);

	/* Unknown and repeated ids are refused; a batch of the wrong shape too. */
	int32_t bad[1] = {9};
	CHECK(ice_reader_new(&schema, NULL, tasks, 2, bad, 1, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	tl_error_clear(&err);
	int32_t twice[2] = {1, 1};
	CHECK(ice_reader_new(&schema, NULL, tasks, 2, twice, 2, &err) == NULL);
	tl_error_clear(&err);
	r = ice_reader_new(&schema, NULL, tasks, 2, ids, 1, &err);
	CHECK(r != NULL);
	tl_pq_schema *two = tl_pq_schema_new();
	tl_pq_column c0 = pq_col("a", TL_PQ_INT64, true, -1);
	tl_pq_schema_add(two, &c0);
	tl_pq_schema_add(two, &c0);
	b = tl_pq_batch_new(two, 4);
	CHECK_INT(tl_ice_reader_next(r, b, &err), -1);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_pq_batch_free(b);
	tl_pq_schema_free(two);
	tl_ice_reader_free(r);
	tl_ice_schema_free(&schema);
}

TEST(ice_reader_refuses_nested_fields)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_field inner = ice_field(2, "x", false, TL_ICE_INT);
	tl_ice_field f[2] = {ice_field(1, "id", true, TL_ICE_LONG), ice_field(3, "point", false, TL_ICE_STRUCT)};
	f[1].type.nfields = 1;
	f[1].type.fields = &inner;
	tl_ice_schema schema;
	memset(&schema, 0, sizeof(schema));
	schema.nfields = 2;
	schema.fields = f;
	int32_t ids[1] = {3};
	CHECK(ice_reader_new(&schema, NULL, NULL, 0, ids, 1, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK(strstr(err.message, "point") != NULL);
	/* Only the flat field: fine. */
	tl_error_clear(&err);
	ids[0] = 1;
	tl_ice_reader *r = ice_reader_new(&schema, NULL, NULL, 0, ids, 1, &err);
	CHECK(r != NULL);
	tl_pq_batch *b = tl_ice_reader_batch_new(r, 8);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 0);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
}

/* ------------------------------------------------------- schema evolution */

TEST(ice_reader_reads_added_fields_as_null_and_promotes_types)
{
	tl_error err;
	tl_error_clear(&err);
	/* An old file: id as INT32, ratio as FLOAT, ts in millis, t as TIME(millis), amount decimal(5,2) as INT32. */
	tl_pq_column cols[5] = {pq_col("id", TL_PQ_INT32, true, 1), pq_col("ratio", TL_PQ_FLOAT, false, 2),
	                        pq_col("ts", TL_PQ_INT64, false, 3), pq_col("t", TL_PQ_INT32, false, 4),
	                        pq_col("amount", TL_PQ_INT32, false, 5)};
	cols[2].logical = TL_PQ_LOGICAL_TIMESTAMP;
	cols[2].unit = TL_PQ_MILLIS;
	cols[3].logical = TL_PQ_LOGICAL_TIME;
	cols[3].unit = TL_PQ_MILLIS;
	cols[4].logical = TL_PQ_LOGICAL_DECIMAL;
	cols[4].precision = 5;
	cols[4].scale = 2;
	tl_pq_schema *s = pq_schema(cols, 5);
	tl_pq_batch *b = tl_pq_batch_new(s, 3);
	int32_t ids[3] = {-5, 0, 2000000000};
	float ratios[3] = {0.5f, -1.25f, 3.0f};
	int64_t millis[3] = {-1, 0, 1700000000123LL};
	int32_t cents[3] = {-12345, 0, 99999};
	for (int i = 0; i < 3; i++) {
		b->columns[0].v.i32[i] = ids[i];
		b->columns[1].v.f32[i] = ratios[i];
		b->columns[1].valid[i] = 1;
		b->columns[2].v.i64[i] = millis[i];
		b->columns[2].valid[i] = 1;
		b->columns[3].v.i32[i] = 1000 * i + 7;
		b->columns[3].valid[i] = 1;
		b->columns[4].v.i32[i] = cents[i];
		b->columns[4].valid[i] = i != 1;
	}
	b->nrows = 3;
	const char *path = scratch("old.parquet");
	CHECK_OK(write_parquet(path, s, b, 2, &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);

	/* The table now: long, double, timestamp, time, decimal(20,2), and a new column. */
	tl_ice_field f[6] = {ice_field(1, "id", true, TL_ICE_LONG),       ice_field(2, "ratio", false, TL_ICE_DOUBLE),
	                     ice_field(3, "ts", false, TL_ICE_TIMESTAMP), ice_field(4, "t", false, TL_ICE_TIME),
	                     ice_field(5, "amount", false, TL_ICE_DECIMAL), ice_field(6, "added", false, TL_ICE_STRING)};
	f[4].type.precision = 20;
	f[4].type.scale = 2;
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 1, f, 6, &err), &err);
	tl_ice_scan_task t;
	data_task(&t, path);
	const tl_ice_scan_task *tasks[1] = {&t};
	tl_ice_reader *r = ice_reader_new(&schema, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	const tl_pq_schema *out = tl_ice_reader_schema(r);
	CHECK_INT(out->columns[4].physical, TL_PQ_FIXED_LEN_BYTE_ARRAY);
	CHECK_INT(out->columns[4].type_length, 9);
	b = tl_ice_reader_batch_new(r, 16);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 2); /* the first row group */
	CHECK_INT(b->columns[0].v.i64[0], -5);
	CHECK(b->columns[1].v.f64[1] == -1.25);
	CHECK_INT(b->columns[2].v.i64[0], -1000);
	CHECK_INT(b->columns[3].v.i64[1], 1007000);
	static const uint8_t minus_12345[9] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xCF, 0xC7};
	CHECK(b->columns[4].v.bytes[0].len == 9 && memcmp(b->columns[4].v.bytes[0].ptr, minus_12345, 9) == 0);
	CHECK(tl_vector_is_null(&b->columns[4], 1));
	CHECK(tl_vector_is_null(&b->columns[5], 0) && tl_vector_is_null(&b->columns[5], 1));
	CHECK_INT(tl_ice_reader_next(r, b, &err), 1);
	CHECK_INT(b->columns[0].v.i64[0], 2000000000);
	CHECK_INT(b->columns[2].v.i64[0], 1700000000123000LL);
	static const uint8_t plus_99999[9] = {0, 0, 0, 0, 0, 0, 0x01, 0x86, 0x9F};
	CHECK(memcmp(b->columns[4].v.bytes[0].ptr, plus_99999, 9) == 0);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 0);
	CHECK_INT(tl_ice_reader_stats_get(r)->row_groups_read, 2);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);

	/* A required field the file lacks is an error naming the file. */
	f[5].required = true;
	tl_ice_schema strict;
	CHECK_OK(tl_ice_schema_init(&strict, 2, f, 6, &err), &err);
	r = ice_reader_new(&strict, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	b = tl_ice_reader_batch_new(r, 16);
	CHECK_INT(tl_ice_reader_next(r, b, &err), -1);
	CHECK(strstr(err.message, "reading data file") != NULL && strstr(err.message, path) != NULL);
	CHECK(strstr(err.message, "added") != NULL);
	/* Failure sticks. */
	tl_error again;
	tl_error_clear(&again);
	CHECK_INT(tl_ice_reader_next(r, b, &again), -1);
	CHECK_STR(again.message, err.message);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_schema_free(&strict);

	/* A stored type that does not convert (timestamp read as int) names the column. */
	tl_error_clear(&err);
	f[5].required = false;
	f[2].type.id = TL_ICE_INT;
	tl_ice_schema wrong;
	CHECK_OK(tl_ice_schema_init(&wrong, 3, f, 6, &err), &err);
	r = ice_reader_new(&wrong, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	b = tl_ice_reader_batch_new(r, 16);
	CHECK_INT(tl_ice_reader_next(r, b, &err), -1);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK(strstr(err.message, "\"ts\"") != NULL && strstr(err.message, path) != NULL);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_schema_free(&wrong);
	tl_ice_schema_free(&schema);
}

TEST(ice_reader_converts_nanos_and_wide_decimals)
{
	tl_error err;
	tl_error_clear(&err);
	/* nanos timestamps floor to micros; decimal(30,3) stored as 16 fixed bytes reads as the table's 13. */
	tl_pq_column cols[2] = {pq_col("ts", TL_PQ_INT64, true, 1), pq_col("d", TL_PQ_FIXED_LEN_BYTE_ARRAY, true, 2)};
	cols[0].logical = TL_PQ_LOGICAL_TIMESTAMP;
	cols[0].unit = TL_PQ_NANOS;
	cols[0].utc_adjusted = true;
	cols[1].logical = TL_PQ_LOGICAL_DECIMAL;
	cols[1].precision = 30;
	cols[1].scale = 3;
	cols[1].type_length = 16;
	tl_pq_schema *s = pq_schema(cols, 2);
	tl_pq_batch *b = tl_pq_batch_new(s, 2);
	uint8_t neg[16], pos[16];
	memset(neg, 0xFF, 16);
	neg[15] = 0xFE; /* -2 */
	memset(pos, 0, 16);
	pos[3] = 0x01; /* 2^96 */
	b->columns[0].v.i64[0] = -1500;
	b->columns[0].v.i64[1] = 2999;
	b->columns[1].v.bytes[0] = (tl_bytes){neg, 16};
	b->columns[1].v.bytes[1] = (tl_bytes){pos, 16};
	b->nrows = 2;
	const char *path = scratch("nanos.parquet");
	CHECK_OK(write_parquet(path, s, b, 100, &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);

	tl_ice_field f[2] = {ice_field(1, "ts", true, TL_ICE_TIMESTAMPTZ), ice_field(2, "d", true, TL_ICE_DECIMAL)};
	f[1].type.precision = 30;
	f[1].type.scale = 3;
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, f, 2, &err), &err);
	tl_ice_scan_task t;
	data_task(&t, path);
	const tl_ice_scan_task *tasks[1] = {&t};
	tl_ice_reader *r = ice_reader_new(&schema, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	CHECK_INT(tl_ice_reader_schema(r)->columns[1].type_length, 13);
	b = tl_ice_reader_batch_new(r, 8);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 2);
	CHECK_INT(b->columns[0].v.i64[0], -2);
	CHECK_INT(b->columns[0].v.i64[1], 2);
	uint8_t want_neg[13], want_pos[13];
	memset(want_neg, 0xFF, 13);
	want_neg[12] = 0xFE;
	memset(want_pos, 0, 13);
	want_pos[0] = 0x01;
	CHECK(b->columns[1].v.bytes[0].len == 13 && memcmp(b->columns[1].v.bytes[0].ptr, want_neg, 13) == 0);
	CHECK(memcmp(b->columns[1].v.bytes[1].ptr, want_pos, 13) == 0);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_schema_free(&schema);
}

TEST(ice_reader_maps_files_without_field_ids_by_name)
{
	tl_error err;
	tl_error_clear(&err);
	/* Columns in another order, no ids, an extra column the table does not know. */
	tl_pq_column cols[3] = {pq_string("name", false, -1), pq_col("extra", TL_PQ_INT32, true, -1),
	                        pq_col("id", TL_PQ_INT64, true, -1)};
	tl_pq_schema *s = pq_schema(cols, 3);
	tl_pq_batch *b = tl_pq_batch_new(s, 2);
	b->columns[0].v.bytes[0] = str("zed");
	b->columns[0].valid[0] = 1;
	b->columns[0].valid[1] = 0;
	b->columns[1].v.i32[0] = 1;
	b->columns[1].v.i32[1] = 2;
	b->columns[2].v.i64[0] = 42;
	b->columns[2].v.i64[1] = 43;
	b->nrows = 2;
	const char *path = scratch("noids.parquet");
	CHECK_OK(write_parquet(path, s, b, 100, &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);

	tl_ice_schema schema;
	CHECK_OK(people_schema(&schema, &err), &err);
	tl_ice_scan_task t;
	data_task(&t, path);
	const tl_ice_scan_task *tasks[1] = {&t};
	tl_ice_reader *r = ice_reader_new(&schema, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	b = tl_ice_reader_batch_new(r, 8);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 2);
	CHECK_INT(b->columns[0].v.i64[0], 42);
	CHECK_INT(b->columns[0].v.i64[1], 43);
	CHECK(b->columns[1].v.bytes[0].len == 3 && memcmp(b->columns[1].v.bytes[0].ptr, "zed", 3) == 0);
	CHECK(tl_vector_is_null(&b->columns[1], 1));
	CHECK(tl_vector_is_null(&b->columns[2], 0) && tl_vector_is_null(&b->columns[2], 1));
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_schema_free(&schema);
}

/* ------------------------------------------------------ position deletes */

/* A data file of one long column 0..n-1 (field id 1) in row groups of rg rows. */
static int write_counter(const char *path, int n, int64_t rg, tl_error *err)
{
	tl_pq_column col = pq_col("id", TL_PQ_INT64, true, 1);
	tl_pq_schema *s = pq_schema(&col, 1);
	tl_pq_batch *b = tl_pq_batch_new(s, n);
	for (int i = 0; i < n; i++)
		b->columns[0].v.i64[i] = i;
	b->nrows = n;
	int rc = write_parquet(path, s, b, rg, err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

TEST(ice_reader_applies_position_deletes)
{
	tl_error err;
	tl_error_clear(&err);
	const char *data = scratch("counter.parquet");
	const char *other = scratch("other.parquet");
	CHECK_OK(write_counter(data, 10, 4, &err), &err);
	CHECK_OK(write_counter(other, 3, 4, &err), &err);
	/* Two delete files with a duplicate, positions in the 2nd and 3rd row groups, and rows for another file. */
	const char *pa[6] = {data, other, data, data, other, data};
	int64_t posa[6] = {9, 2, 5, 1, 0, 5};
	const char *da = scratch("pos-a.parquet");
	CHECK_OK(write_position_deletes(da, pa, posa, 6, &err), &err);
	const char *pb[3] = {data, data, data};
	int64_t posb[3] = {7, 5, 0};
	const char *db = scratch("pos-b.parquet");
	CHECK_OK(write_position_deletes(db, pb, posb, 3, &err), &err);

	tl_ice_field f = ice_field(1, "id", true, TL_ICE_LONG);
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, &f, 1, &err), &err);
	tl_ice_delete_file d[2];
	delete_file(&d[0], TL_ICE_CONTENT_POSITION_DELETES, da, NULL, 0);
	delete_file(&d[1], TL_ICE_CONTENT_POSITION_DELETES, db, NULL, 0);
	const tl_ice_delete_file *dels[2] = {&d[0], &d[1]};
	tl_ice_scan_task t[2];
	data_task(&t[0], data);
	t[0].ndeletes = 2;
	t[0].deletes = dels;
	data_task(&t[1], other); /* `other` read without deletes keeps all its rows */
	const tl_ice_scan_task *tasks[2] = {&t[0], &t[1]};

	/* Batches of 3 rows: smaller than the row groups, so positions cross batch boundaries. */
	tl_ice_reader *r = ice_reader_new(&schema, NULL, tasks, 2, NULL, 0, &err);
	CHECK(r != NULL);
	int64_t got[16];
	CHECK_INT(read_longs(r, 0, 3, got, 16, &err), 8);
	static const int64_t want[8] = {2, 3, 4, 6, 8, 0, 1, 2};
	for (int i = 0; i < 8; i++)
		CHECK_INT(got[i], want[i]);
	CHECK_INT(tl_ice_reader_stats_get(r)->rows_deleted, 5);
	CHECK_INT(tl_ice_reader_stats_get(r)->row_groups_read, 4);
	CHECK_INT(tl_ice_reader_stats_get(r)->files_read, 2);
	CHECK_INT(tl_ice_reader_stats_get(r)->row_groups_skipped, 0);
	tl_ice_reader_free(r);

	/* Reading no columns still counts the surviving rows. */
	r = ice_reader_new(&schema, NULL, tasks, 1, (const int32_t *)&f.id, 0, &err);
	CHECK(r != NULL);
	tl_pq_batch *b = tl_ice_reader_batch_new(r, 100);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 2); /* the first row group keeps 2 and 3 */
	CHECK_INT(b->ncolumns, 0);
	int64_t total = b->nrows;
	int64_t n;
	while ((n = tl_ice_reader_next(r, b, &err)) > 0)
		total += n;
	CHECK_INT(n, 0);
	CHECK_INT(total, 5);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_schema_free(&schema);
}

TEST(ice_reader_names_bad_files)
{
	tl_error err;
	tl_error_clear(&err);
	const char *data = scratch("victim.parquet");
	CHECK_OK(write_counter(data, 5, 100, &err), &err);
	const char *corrupt = scratch("corrupt-delete.parquet");
	FILE *fp = fopen(corrupt, "wb");
	CHECK(fp != NULL);
	fputs("PAR1 this is not a parquet file at all PAR1", fp);
	fclose(fp);
	tl_ice_field f = ice_field(1, "id", true, TL_ICE_LONG);
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, &f, 1, &err), &err);

	/* A corrupt position delete file. */
	tl_ice_delete_file d;
	delete_file(&d, TL_ICE_CONTENT_POSITION_DELETES, corrupt, NULL, 0);
	const tl_ice_delete_file *dels[1] = {&d};
	tl_ice_scan_task t;
	data_task(&t, data);
	t.ndeletes = 1;
	t.deletes = dels;
	const tl_ice_scan_task *tasks[1] = {&t};
	tl_ice_reader *r = ice_reader_new(&schema, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	int64_t got[8];
	CHECK_INT(read_longs(r, 0, 8, got, 8, &err), -1);
	CHECK(strstr(err.message, "delete file") != NULL && strstr(err.message, corrupt) != NULL);
	tl_ice_reader_free(r);

	/* A corrupt equality delete file. */
	tl_error_clear(&err);
	int32_t eq[1] = {1};
	delete_file(&d, TL_ICE_CONTENT_EQUALITY_DELETES, corrupt, eq, 1);
	r = ice_reader_new(&schema, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	CHECK_INT(read_longs(r, 0, 8, got, 8, &err), -1);
	CHECK(strstr(err.message, corrupt) != NULL);
	tl_ice_reader_free(r);

	/* An equality delete on a field the schema lacks. */
	tl_error_clear(&err);
	eq[0] = 77;
	r = ice_reader_new(&schema, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	CHECK_INT(read_longs(r, 0, 8, got, 8, &err), -1);
	CHECK(strstr(err.message, "77") != NULL && strstr(err.message, corrupt) != NULL);
	tl_ice_reader_free(r);

	/* A missing data file, after a good one. */
	tl_error_clear(&err);
	const char *missing = scratch("missing.parquet");
	tl_ice_scan_task t2[2];
	data_task(&t2[0], data);
	data_task(&t2[1], missing);
	const tl_ice_scan_task *tasks2[2] = {&t2[0], &t2[1]};
	r = ice_reader_new(&schema, NULL, tasks2, 2, NULL, 0, &err);
	CHECK(r != NULL);
	tl_pq_batch *b = tl_ice_reader_batch_new(r, 8);
	CHECK_INT(tl_ice_reader_next(r, b, &err), 5);
	CHECK_INT(tl_ice_reader_next(r, b, &err), -1);
	CHECK(strstr(err.message, "reading data file") != NULL && strstr(err.message, missing) != NULL);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);

	/* An ORC data file. */
	tl_error_clear(&err);
	t2[0].file.file_format = "ORC";
	r = ice_reader_new(&schema, NULL, tasks2, 1, NULL, 0, &err);
	CHECK(r != NULL);
	CHECK_INT(read_longs(r, 0, 8, got, 8, &err), -1);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK(strstr(err.message, "ORC") != NULL && strstr(err.message, data) != NULL);
	tl_ice_reader_free(r);
	tl_ice_schema_free(&schema);
}

/* ------------------------------------------------------ equality deletes */

TEST(ice_reader_applies_equality_deletes_on_composite_keys)
{
	tl_error err;
	tl_error_clear(&err);
	/* Table (id long, name string, seq long); the delete file stores id as INT32. */
	tl_pq_column cols[3] = {pq_col("id", TL_PQ_INT64, false, 1), pq_string("name", false, 2),
	                        pq_col("seq", TL_PQ_INT64, true, 3)};
	tl_pq_schema *s = pq_schema(cols, 3);
	struct {
		int64_t id;
		const char *name;
	} rows[8] = {{1, "a"}, {1, "b"}, {2, NULL}, {2, "x"}, {-1, "c"}, {-1, NULL}, {7, "q"}, {3, "a"}};
	tl_pq_batch *b = tl_pq_batch_new(s, 8);
	for (int i = 0; i < 8; i++) {
		b->columns[0].v.i64[i] = rows[i].id;
		b->columns[0].valid[i] = rows[i].id >= 0;
		b->columns[1].v.bytes[i] = rows[i].name ? str(rows[i].name) : (tl_bytes){NULL, 0};
		b->columns[1].valid[i] = rows[i].name != NULL;
		b->columns[2].v.i64[i] = i;
	}
	b->nrows = 8;
	const char *data1 = scratch("eq-data1.parquet"), *data2 = scratch("eq-data2.parquet");
	CHECK_OK(write_parquet(data1, s, b, 3, &err), &err);
	CHECK_OK(write_parquet(data2, s, b, 100, &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);

	/* Deletes on (name, id): (a, 1), (null, 2), (c, null); (zz, 1) matches nothing. */
	tl_pq_column dcols[2] = {pq_string("name", false, 2), pq_col("id", TL_PQ_INT32, false, 1)};
	s = pq_schema(dcols, 2);
	b = tl_pq_batch_new(s, 4);
	const char *dn[4] = {"a", NULL, "c", "zz"};
	int32_t di[4] = {1, 2, -1, 1};
	for (int i = 0; i < 4; i++) {
		b->columns[0].v.bytes[i] = dn[i] ? str(dn[i]) : (tl_bytes){NULL, 0};
		b->columns[0].valid[i] = dn[i] != NULL;
		b->columns[1].v.i32[i] = di[i];
		b->columns[1].valid[i] = di[i] >= 0;
	}
	b->nrows = 4;
	const char *eq_pair = scratch("eq-pair.parquet");
	CHECK_OK(write_parquet(eq_pair, s, b, 100, &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	/* A second file on id alone: 7. */
	tl_pq_column icol = pq_col("id", TL_PQ_INT64, true, 1);
	s = pq_schema(&icol, 1);
	b = tl_pq_batch_new(s, 1);
	b->columns[0].v.i64[0] = 7;
	b->nrows = 1;
	const char *eq_id = scratch("eq-id.parquet");
	CHECK_OK(write_parquet(eq_id, s, b, 100, &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);

	tl_ice_field f[3] = {ice_field(1, "id", false, TL_ICE_LONG), ice_field(2, "name", false, TL_ICE_STRING),
	                     ice_field(3, "seq", true, TL_ICE_LONG)};
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, f, 3, &err), &err);
	int32_t pair_ids[2] = {2, 1}, id_ids[1] = {1};
	tl_ice_delete_file d[2];
	delete_file(&d[0], TL_ICE_CONTENT_EQUALITY_DELETES, eq_pair, pair_ids, 2);
	delete_file(&d[1], TL_ICE_CONTENT_EQUALITY_DELETES, eq_id, id_ids, 1);
	const tl_ice_delete_file *dels[2] = {&d[0], &d[1]};
	/* Both data files share the deletes (a global delete): loaded once, applied twice. */
	tl_ice_scan_task t[2];
	data_task(&t[0], data1);
	data_task(&t[1], data2);
	t[0].ndeletes = t[1].ndeletes = 2;
	t[0].deletes = t[1].deletes = dels;
	const tl_ice_scan_task *tasks[2] = {&t[0], &t[1]};

	/* Project only seq: the key columns are read without being returned. */
	int32_t want_ids[1] = {3};
	tl_ice_reader *r = ice_reader_new(&schema, NULL, tasks, 2, want_ids, 1, &err);
	CHECK(r != NULL);
	int64_t got[16];
	CHECK_INT(read_longs(r, 0, 2, got, 16, &err), 8);
	static const int64_t want[4] = {1, 3, 5, 7};
	for (int i = 0; i < 8; i++)
		CHECK_INT(got[i], want[i % 4]);
	CHECK_INT(tl_ice_reader_stats_get(r)->rows_deleted, 8);
	tl_ice_reader_free(r);

	/* Projecting the key columns too returns the survivors' values. */
	r = ice_reader_new(&schema, NULL, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	b = tl_ice_reader_batch_new(r, 100);
	int64_t seen = 0, n;
	while ((n = tl_ice_reader_next(r, b, &err)) > 0) {
		for (int64_t i = 0; i < n; i++) {
			int64_t seq = b->columns[2].v.i64[i];
			CHECK(seq == 1 || seq == 3 || seq == 5 || seq == 7);
			if (seq == 5)
				CHECK(tl_vector_is_null(&b->columns[0], i) && tl_vector_is_null(&b->columns[1], i));
			if (seq == 7)
				CHECK(b->columns[0].v.i64[i] == 3 && b->columns[1].v.bytes[i].len == 1);
		}
		seen += n;
	}
	CHECK_INT(n, 0);
	CHECK_INT(seen, 4);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_schema_free(&schema);
}

/* ------------------------------------------------------ through a table */

TEST(ice_reader_reads_a_committed_table)
{
	tl_error err;
	tl_error_clear(&err);
	const char *location = scratch("table");
	tl_ice_schema schema;
	CHECK_OK(people_schema(&schema, &err), &err);
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_table *t = tl_ice_table_create(location, &schema, &spec, NULL, 0, &err);
	CHECK(t != NULL);
	char data_dir[256];
	snprintf(data_dir, sizeof(data_dir), "%s/data", location);
	mkdir(data_dir, 0755); /* the table may not have made it yet */

	tl_buf path;
	tl_buf_init(&path);
	CHECK_OK(tl_ice_table_new_data_path(t, NULL, NULL, &path, &err), &err);
	tl_buf_append_byte(&path, 0);
	const char *data = (const char *)path.data;
	CHECK_OK(write_people(data, 10, 6, &err), &err);
	tl_input *in = tl_input_open_file(data, &err);
	CHECK(in != NULL);
	tl_pq_reader *pq = tl_pq_reader_open(in, &err);
	CHECK(pq != NULL);
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	tl_ice_data_file df;
	memset(&df, 0, sizeof(df));
	CHECK_OK(tl_ice_data_file_metrics(&schema, pq, &arena, &df, &err), &err);
	df.content = TL_ICE_CONTENT_DATA;
	df.file_path = data;
	df.file_format = "PARQUET";
	df.file_size_in_bytes = (int64_t)in->size;
	tl_pq_reader_free(pq);
	tl_input_close(in);
	tl_ice_commit *c = tl_ice_commit_begin(t, TL_ICE_OP_APPEND, &err);
	CHECK(c != NULL);
	CHECK_OK(tl_ice_commit_add_file(c, &df, &err), &err);
	CHECK_OK(tl_ice_commit_finish(c, NULL, &err), &err);
	tl_ice_commit_free(c);

	/* Delete rows 11 and 14 by position. */
	char dpath[256];
	snprintf(dpath, sizeof(dpath), "%s/data/pos-deletes.parquet", location);
	const char *paths[2] = {data, data};
	int64_t positions[2] = {4, 1};
	CHECK_OK(write_position_deletes(dpath, paths, positions, 2, &err), &err);
	tl_ice_data_file del;
	memset(&del, 0, sizeof(del));
	del.content = TL_ICE_CONTENT_POSITION_DELETES;
	del.file_path = dpath;
	del.file_format = "PARQUET";
	del.record_count = 2;
	in = tl_input_open_file(dpath, &err);
	CHECK(in != NULL);
	del.file_size_in_bytes = (int64_t)in->size;
	tl_input_close(in);
	c = tl_ice_commit_begin(t, TL_ICE_OP_ROW_DELTA, &err);
	CHECK(c != NULL);
	CHECK_OK(tl_ice_commit_add_file(c, &del, &err), &err);
	CHECK_OK(tl_ice_commit_finish(c, NULL, &err), &err);
	tl_ice_commit_free(c);

	tl_ice_scan *scan = tl_ice_scan_plan(t->metadata, TL_ICE_NO_SNAPSHOT, NULL, &err);
	CHECK(scan != NULL);
	CHECK_INT(tl_ice_scan_ntasks(scan), 1);
	int32_t ids[1] = {1};
	tl_ice_reader *r = tl_ice_reader_open(scan, ids, 1, &err);
	CHECK(r != NULL);
	int64_t got[16];
	CHECK_INT(read_longs(r, 0, 4, got, 16, &err), 4);
	CHECK_INT(got[0], 10);
	CHECK_INT(got[1], 12);
	CHECK_INT(got[2], 13);
	CHECK_INT(got[3], 15);
	CHECK_INT(tl_ice_reader_stats_get(r)->rows_deleted, 2);
	tl_ice_reader_free(r);

	r = tl_ice_reader_open_task(scan, 0, NULL, 0, &err);
	CHECK(r != NULL);
	CHECK_INT(read_longs(r, 0, 100, got, 16, &err), 4);
	tl_ice_reader_free(r);
	CHECK(tl_ice_reader_open_task(scan, 1, NULL, 0, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_INVALID);

	tl_ice_scan_free(scan);
	tl_arena_free(&arena);
	tl_buf_free(&path);
	tl_ice_table_free(t);
	tl_ice_schema_free(&schema);
}

/* ------------------------------------------------------ row-group pruning */

/* Reads the `id` values (column 0) of data with the filter and position deletes at 5 and 9. */
static int64_t read_filtered(const tl_ice_schema *schema, const char *data, const char *deletes, const char *filter,
                             int64_t *got, tl_ice_reader_stats *stats, tl_error *err)
{
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	const tl_ice_expr *expr = NULL;
	if (tl_ice_expr_parse(schema, filter, &arena, &expr, err) < 0) {
		tl_arena_free(&arena);
		return -1;
	}
	tl_ice_delete_file d;
	delete_file(&d, TL_ICE_CONTENT_POSITION_DELETES, deletes, NULL, 0);
	const tl_ice_delete_file *dels[1] = {&d};
	tl_ice_scan_task t;
	data_task(&t, data);
	t.ndeletes = 1;
	t.deletes = dels;
	const tl_ice_scan_task *tasks[1] = {&t};
	int64_t n = -1;
	tl_ice_reader *r = ice_reader_new(schema, expr, tasks, 1, NULL, 0, err);
	if (r != NULL) {
		n = read_longs(r, 0, 3, got, 16, err);
		*stats = *tl_ice_reader_stats_get(r);
	}
	tl_ice_reader_free(r);
	tl_arena_free(&arena);
	return n;
}

TEST(ice_reader_skips_row_groups_by_statistics)
{
	tl_error err;
	tl_error_clear(&err);
	/* id stored as INT32 (the table has long) and a name, 10 rows in row groups of 4, 4 and 2. */
	tl_pq_column cols[2] = {pq_col("id", TL_PQ_INT32, true, 1), pq_string("name", true, 2)};
	tl_pq_schema *s = pq_schema(cols, 2);
	tl_pq_batch *b = tl_pq_batch_new(s, 10);
	static const char *names[10] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
	for (int i = 0; i < 10; i++) {
		b->columns[0].v.i32[i] = i;
		b->columns[1].v.bytes[i] = str(names[i]);
	}
	b->nrows = 10;
	const char *data = scratch("pruned.parquet");
	CHECK_OK(write_parquet(data, s, b, 4, &err), &err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	const char *paths[2] = {data, data};
	int64_t positions[2] = {9, 5};
	const char *dels = scratch("pruned-deletes.parquet");
	CHECK_OK(write_position_deletes(dels, paths, positions, 2, &err), &err);

	tl_ice_field f[2] = {ice_field(1, "id", true, TL_ICE_LONG), ice_field(2, "name", true, TL_ICE_STRING)};
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, f, 2, &err), &err);
	int64_t got[16];
	tl_ice_reader_stats st;

	/* Only the middle row group may match; the filter prunes, it does not filter rows. */
	CHECK_INT(read_filtered(&schema, data, dels, "id >= 5 AND id < 7", got, &st, &err), 3);
	CHECK_INT(got[0], 4);
	CHECK_INT(got[1], 6);
	CHECK_INT(got[2], 7);
	CHECK_INT(st.row_groups_read, 1);
	CHECK_INT(st.row_groups_skipped, 2);
	CHECK_INT(st.rows_deleted, 1);

	/* The middle one skipped: positions in the last row group still line up. */
	CHECK_INT(read_filtered(&schema, data, dels, "id < 2 OR name = 'i'", got, &st, &err), 5);
	static const int64_t want[5] = {0, 1, 2, 3, 8};
	for (int i = 0; i < 5; i++)
		CHECK_INT(got[i], want[i]);
	CHECK_INT(st.row_groups_read, 2);
	CHECK_INT(st.row_groups_skipped, 1);
	CHECK_INT(st.rows_deleted, 1);

	/* No statistics rule anything out: everything but the deleted rows. */
	CHECK_INT(read_filtered(&schema, data, dels, "id IS NOT NULL", got, &st, &err), 8);
	CHECK_INT(st.row_groups_skipped, 0);

	/* Everything ruled out: no rows, and the delete file is not even needed. */
	const char *gone = scratch("never-read.parquet");
	CHECK_INT(read_filtered(&schema, data, gone, "id > 100", got, &st, &err), 0);
	CHECK_INT(st.row_groups_skipped, 3);
	CHECK_INT(st.files_read, 1);
	CHECK_INT(read_filtered(&schema, data, gone, "id = 3", got, &st, &err), -1);
	CHECK(strstr(err.message, gone) != NULL);
	tl_ice_schema_free(&schema);
}

/* ------------------------------------------------------ late materialisation */

/*
 * Reads the tasks twice in batches of `capacity`: plainly, and with every
 * output column but the first deferred, loaded for every `every`-th batch.
 * Returns how many loaded rows equal the plain read's, or -1 (err set) at
 * the first difference.
 */
static int64_t check_deferred_reader(const tl_ice_schema *schema, const tl_ice_scan_task *const *tasks, int ntasks,
                                     int64_t capacity, int every, tl_error *err)
{
	tl_ice_reader *plain = ice_reader_new(schema, NULL, tasks, ntasks, NULL, 0, err);
	tl_ice_reader *lazy = ice_reader_new(schema, NULL, tasks, ntasks, NULL, 0, err);
	if (plain == NULL || lazy == NULL)
		return -1;
	const tl_pq_schema *out = tl_ice_reader_schema(plain);
	bool deferred[8] = {false, true, true, true, true, true, true, true};
	tl_pq_batch *a = tl_ice_reader_batch_new(plain, capacity), *b = tl_ice_reader_batch_new(lazy, capacity);
	int64_t checked = tl_ice_reader_defer(lazy, deferred, err) < 0 ? -1 : 0;
	for (int64_t index = 0; checked >= 0; index++) {
		int64_t n = tl_ice_reader_next(plain, a, err), m = tl_ice_reader_next(lazy, b, err);
		if (n < 0 || m < 0 || n != m) {
			checked = n == m ? -1 : tl_error_set(err, TL_ERR_CORRUPT, "batch %lld: %lld rows against %lld",
			                                     (long long)index, (long long)n, (long long)m);
			break;
		}
		if (n == 0)
			break;
		bool load = index % every == 0;
		if (load && tl_ice_reader_load(lazy, b, err) < 0) {
			checked = -1;
			break;
		}
		for (int c = 0; c < (load ? out->ncolumns : 1); c++)
			for (int64_t i = 0; i < n; i++)
				if (!same_value(&out->columns[c], &a->columns[c], &b->columns[c], i)) {
					checked = tl_error_set(err, TL_ERR_CORRUPT, "batch %lld, row %lld, column %s differs",
					                       (long long)index, (long long)i, out->columns[c].name);
					break;
				}
		if (checked >= 0 && load)
			checked += n;
	}
	tl_pq_batch_free(a);
	tl_pq_batch_free(b);
	tl_ice_reader_free(plain);
	tl_ice_reader_free(lazy);
	return checked;
}

TEST(ice_reader_deferred_columns_equal_a_plain_read_around_deletes)
{
	tl_error err;
	tl_error_clear(&err);
	const char *data = scratch("late-people.parquet");
	const char *clean = scratch("late-clean.parquet");
	CHECK_OK(write_people(data, 0, 2500, &err), &err);
	CHECK_OK(write_people(clean, 10000, 1200, &err), &err);
	/* Positions in the first and third row groups; batches of 300 then mix deleted and untouched batches. */
	const char *paths[4] = {data, data, data, data};
	int64_t positions[4] = {5, 299, 2100, 2499};
	const char *pos = scratch("late-pos.parquet");
	CHECK_OK(write_position_deletes(pos, paths, positions, 4, &err), &err);
	const char *eq = scratch("late-eq.parquet");
	{
		tl_pq_column col = pq_col("id", TL_PQ_INT64, true, 1);
		tl_pq_schema *s = pq_schema(&col, 1);
		tl_pq_batch *b = tl_pq_batch_new(s, 1);
		b->columns[0].v.i64[0] = 10007;
		b->nrows = 1;
		CHECK_OK(write_parquet(eq, s, b, 100, &err), &err);
		tl_pq_batch_free(b);
		tl_pq_schema_free(s);
	}
	tl_ice_schema schema;
	CHECK_OK(people_schema(&schema, &err), &err);
	int32_t eq_ids[1] = {1};
	tl_ice_delete_file d[2];
	delete_file(&d[0], TL_ICE_CONTENT_POSITION_DELETES, pos, NULL, 0);
	delete_file(&d[1], TL_ICE_CONTENT_EQUALITY_DELETES, eq, eq_ids, 1);
	const tl_ice_delete_file *pos_dels[1] = {&d[0]}, *eq_dels[1] = {&d[1]};
	tl_ice_scan_task t[3];
	data_task(&t[0], data);
	t[0].ndeletes = 1;
	t[0].deletes = pos_dels;
	data_task(&t[1], clean);
	data_task(&t[2], clean); /* again, with an equality delete on id: nothing deferred there */
	t[2].ndeletes = 1;
	t[2].deletes = eq_dels;
	const tl_ice_scan_task *tasks[3] = {&t[0], &t[1], &t[2]};

	static const int64_t capacities[] = {300, 1000, 7};
	for (size_t c = 0; c < sizeof(capacities) / sizeof(capacities[0]); c++)
		for (int every = 1; every <= 4; every += 3) {
			int64_t checked = check_deferred_reader(&schema, tasks, 3, capacities[c], every, &err);
			CHECK_OK(checked, &err);
			CHECK(checked > 0);
		}
	/* Every row, with every batch loaded: 2,500 - 4 + 1,200 + 1,199. */
	CHECK_INT(check_deferred_reader(&schema, tasks, 3, 300, 1, &err), 4895);
	tl_ice_schema_free(&schema);
}
