/*
 * test_reader.c: the Parquet reader on files written by pyarrow (see
 * data/reader/make-fixtures.py): values, projection, row-group selection,
 * statistics pruning, and every truncation of a valid file.
 */
#include <math.h>
#include <stdlib.h>

#include "deferred_check.h"
#include "parquet/column_reader.h"
#include "parquet/metadata.h"
#include "test.h"
#include "tierlake/parquet.h"

#define ROW_GROUPS_FILE "lake/tests/data/reader/row_groups.parquet"
#define REQUIRED_V2_FILE "lake/tests/data/reader/required_v2.parquet"

typedef struct opened {
	tl_input *in;
	tl_pq_reader *reader;
} opened;

static int open_fixture(const char *path, opened *o, tl_error *err)
{
	o->reader = NULL;
	o->in = tl_input_open_file(path, err);
	if (o->in == NULL)
		return -1;
	o->reader = tl_pq_reader_open(o->in, err);
	return o->reader ? 0 : -1;
}

static void close_fixture(opened *o)
{
	tl_pq_reader_free(o->reader);
	tl_input_close(o->in);
}

static tl_pq_predicate int64_predicate(int column, tl_pq_op op, int64_t v)
{
	tl_pq_predicate p;
	memset(&p, 0, sizeof(p));
	p.column = column;
	p.op = op;
	p.value.i64 = v;
	return p;
}

/* Reads row_groups.parquet to the end through r, checking every value. */
static void check_every_row_groups_value(tl_pq_reader *r)
{
	tl_error err;
	tl_error_clear(&err);
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	CHECK_INT(schema->ncolumns, 4);
	CHECK_STR(schema->columns[0].name, "id");
	CHECK_INT(schema->columns[0].physical, TL_PQ_INT64);
	CHECK_INT(schema->columns[1].logical, TL_PQ_LOGICAL_STRING);
	CHECK_INT(tl_pq_reader_num_rows(r), 10000);
	CHECK_INT(tl_pq_reader_num_row_groups(r), 10);

	tl_pq_batch *batch = tl_pq_reader_batch_new(r, 700);
	int64_t row = 0, n;
	char expected[32];
	while ((n = tl_pq_reader_next(r, batch, &err)) > 0) {
		CHECK(n <= 700);
		for (int64_t i = 0; i < n; i++, row++) {
			CHECK_INT(batch->columns[0].v.i64[i], row);
			snprintf(expected, sizeof(expected), "name-%05lld", (long long)row);
			tl_bytes name = batch->columns[1].v.bytes[i];
			CHECK_INT(name.len, strlen(expected));
			CHECK(memcmp(name.ptr, expected, name.len) == 0);
			bool sparse_present = row >= 3000 && row < 4000;
			CHECK_INT(!tl_vector_is_null(&batch->columns[2], i), sparse_present);
			if (sparse_present)
				CHECK_INT(batch->columns[2].v.i32[i], row);
			double score = batch->columns[3].v.f64[i];
			if (row == 5)
				CHECK(isnan(score));
			else
				CHECK(score == (double)row / 10);
		}
	}
	CHECK_OK(n, &err);
	CHECK_INT(row, 10000);
	tl_pq_batch_free(batch);
}

TEST(reader_reads_every_value_of_a_pyarrow_file)
{
	tl_error err;
	tl_error_clear(&err);
	opened o;
	CHECK_OK(open_fixture(ROW_GROUPS_FILE, &o, &err), &err);
	check_every_row_groups_value(o.reader);
	close_fixture(&o);
}

/* An input over another that counts reads, with the coalesce_gap a test chooses. */
typedef struct counting_input {
	tl_input base;
	tl_input *inner;
	int reads;
} counting_input;

static int counting_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	counting_input *c = (counting_input *)in;
	c->reads++;
	return tl_input_read(c->inner, offset, buf, len, err);
}

/* Reads columns 0 and 3 of row_groups.parquet through c; the reader counts the reads c does. */
static void read_first_and_last_columns(tl_pq_reader *r, const counting_input *c)
{
	tl_error err;
	tl_error_clear(&err);
	static const int ends[] = {0, 3};
	CHECK_OK(tl_pq_reader_project(r, ends, 2, &err), &err);
	tl_pq_batch *batch = tl_pq_reader_batch_new(r, 1000);
	int64_t row = 0, n;
	while ((n = tl_pq_reader_next(r, batch, &err)) > 0)
		for (int64_t i = 0; i < n; i++, row++)
			CHECK_INT(batch->columns[0].v.i64[i], row);
	tl_pq_batch_free(batch);
	CHECK_INT(n, 0);
	CHECK_INT(row, 10000);
	int64_t counted, bytes;
	tl_pq_reader_io_counts(r, &counted, &bytes);
	CHECK_INT(counted, c->reads);
	/* Unless the input asks for the chunks between to be read too, they are not. */
	CHECK(bytes > 0 && (c->base.coalesce_gap > 0 || (uint64_t)bytes < c->base.size));
}

/*
 * The reads a whole read of row_groups.parquet takes with coalesce_gap gap:
 * of every column (its values checked), or of columns 0 and 3 only, whose
 * chunks the other two separate.
 */
static int reads_with_gap(uint64_t gap, bool every_column)
{
	tl_error err;
	tl_error_clear(&err);
	counting_input c = {.base = {.read_at = counting_read_at, .name = ROW_GROUPS_FILE, .coalesce_gap = gap}};
	c.inner = tl_input_open_file(ROW_GROUPS_FILE, &err);
	if (c.inner == NULL) {
		tl_test_fail(__FILE__, __LINE__, "%s", err.message);
		return -1;
	}
	c.base.size = c.inner->size;
	tl_pq_reader *r = tl_pq_reader_open(&c.base, &err);
	if (r == NULL) {
		tl_test_fail(__FILE__, __LINE__, "%s", err.message);
	} else if (every_column) {
		check_every_row_groups_value(r);
	} else {
		read_first_and_last_columns(r, &c);
	}
	tl_pq_reader_free(r);
	tl_input_close(c.inner);
	return c.reads;
}

/*
 * Chunks that touch are one read; where reads are round trips (object
 * storage), so are a row group's chunks that are merely close.
 */
TEST(reader_coalesces_close_chunks_when_the_input_asks)
{
	/* Opening reads the tail, the magic and the footer; then one read per run of chunks read together. */
	CHECK_INT(reads_with_gap(0, true), 3 + 10);
	CHECK_INT(reads_with_gap(1 << 20, true), 3 + 10);
	CHECK_INT(reads_with_gap(0, false), 3 + 10 * 2);
	CHECK_INT(reads_with_gap(1 << 20, false), 3 + 10);
}

TEST(reader_batches_never_span_row_groups)
{
	tl_error err;
	tl_error_clear(&err);
	opened o;
	CHECK_OK(open_fixture(ROW_GROUPS_FILE, &o, &err), &err);
	tl_pq_batch *batch = tl_pq_reader_batch_new(o.reader, 600);
	/* 1,000-row groups read in 600-row batches: 600, 400, 600, 400, ... */
	for (int g = 0; g < 10; g++) {
		CHECK_INT(tl_pq_reader_next(o.reader, batch, &err), 600);
		CHECK_INT(tl_pq_reader_next(o.reader, batch, &err), 400);
	}
	CHECK_INT(tl_pq_reader_next(o.reader, batch, &err), 0);
	tl_pq_batch_free(batch);
	close_fixture(&o);
}

TEST(reader_projection_reorders_and_limits_columns)
{
	tl_error err;
	tl_error_clear(&err);
	opened o;
	CHECK_OK(open_fixture(ROW_GROUPS_FILE, &o, &err), &err);
	int columns[] = {3, 0};
	CHECK_OK(tl_pq_reader_project(o.reader, columns, 2, &err), &err);
	int bad[] = {4};
	CHECK(tl_pq_reader_project(o.reader, bad, 1, &err) < 0);
	CHECK(strstr(err.message, "out of range") != NULL);
	tl_error_clear(&err);

	tl_pq_batch *batch = tl_pq_reader_batch_new(o.reader, 1000);
	CHECK_INT(batch->ncolumns, 2);
	CHECK_INT(tl_pq_reader_next(o.reader, batch, &err), 1000);
	CHECK(batch->columns[0].v.f64[10] == 1.0);
	CHECK_INT(batch->columns[1].v.i64[10], 10);
	/* Reading has started: the projection can no longer change. */
	CHECK(tl_pq_reader_project(o.reader, columns, 2, &err) < 0);
	tl_pq_batch_free(batch);
	close_fixture(&o);
}

TEST(reader_reads_no_columns_as_row_counts)
{
	tl_error err;
	tl_error_clear(&err);
	opened o;
	CHECK_OK(open_fixture(ROW_GROUPS_FILE, &o, &err), &err);
	CHECK_OK(tl_pq_reader_project(o.reader, NULL, 0, &err), &err);
	tl_pq_batch *batch = tl_pq_reader_batch_new(o.reader, 4096);
	int64_t total = 0, n;
	while ((n = tl_pq_reader_next(o.reader, batch, &err)) > 0)
		total += n;
	CHECK_OK(n, &err);
	CHECK_INT(total, 10000);
	tl_pq_batch_free(batch);
	close_fixture(&o);
}

/* Rows left after pruning with the given predicates. */
static int64_t rows_after_prune(const tl_pq_predicate *preds, int npreds, int *skipped, tl_error *err)
{
	opened o;
	if (open_fixture(ROW_GROUPS_FILE, &o, err) < 0)
		return -1;
	*skipped = tl_pq_reader_prune(o.reader, preds, npreds);
	tl_pq_batch *batch = tl_pq_reader_batch_new(o.reader, 4096);
	int64_t total = 0, n;
	while ((n = tl_pq_reader_next(o.reader, batch, err)) > 0)
		total += n;
	tl_pq_batch_free(batch);
	close_fixture(&o);
	return n < 0 ? -1 : total;
}

TEST(reader_prunes_row_groups_by_integer_statistics)
{
	tl_error err;
	tl_error_clear(&err);
	int skipped;
	tl_pq_predicate eq = int64_predicate(0, TL_PQ_EQ, 5500);
	CHECK_INT(rows_after_prune(&eq, 1, &skipped, &err), 1000);
	CHECK_INT(skipped, 9);
	tl_pq_predicate lt = int64_predicate(0, TL_PQ_LT, 1000);
	CHECK_INT(rows_after_prune(&lt, 1, &skipped, &err), 1000);
	tl_pq_predicate le = int64_predicate(0, TL_PQ_LE, 1000);
	CHECK_INT(rows_after_prune(&le, 1, &skipped, &err), 2000);
	tl_pq_predicate gt = int64_predicate(0, TL_PQ_GT, 8999);
	CHECK_INT(rows_after_prune(&gt, 1, &skipped, &err), 1000);
	tl_pq_predicate ge = int64_predicate(0, TL_PQ_GE, 8999);
	CHECK_INT(rows_after_prune(&ge, 1, &skipped, &err), 2000);
	tl_pq_predicate outside = int64_predicate(0, TL_PQ_EQ, 123456);
	CHECK_INT(rows_after_prune(&outside, 1, &skipped, &err), 0);
	CHECK_INT(skipped, 10);
	/* A conjunction keeps only row groups every predicate allows. */
	tl_pq_predicate range[] = {int64_predicate(0, TL_PQ_GE, 2500), int64_predicate(0, TL_PQ_LT, 4500)};
	CHECK_INT(rows_after_prune(range, 2, &skipped, &err), 3000);
}

TEST(reader_prunes_by_null_counts_and_string_bounds)
{
	tl_error err;
	tl_error_clear(&err);
	int skipped;
	/* `sparse` is only non-null in row group 3. */
	tl_pq_predicate not_null = {.column = 2, .op = TL_PQ_NOT_NULL};
	CHECK_INT(rows_after_prune(&not_null, 1, &skipped, &err), 1000);
	tl_pq_predicate sparse_eq = {.column = 2, .op = TL_PQ_EQ, .value.i32 = 3500};
	CHECK_INT(rows_after_prune(&sparse_eq, 1, &skipped, &err), 1000);
	/* `id` has no nulls, so IS NULL matches nothing. */
	tl_pq_predicate id_null = {.column = 0, .op = TL_PQ_IS_NULL};
	CHECK_INT(rows_after_prune(&id_null, 1, &skipped, &err), 0);
	/* Strings compare byte-wise: "name-07" sorts inside row group 7 only. */
	tl_pq_predicate name_ge = {.column = 1, .op = TL_PQ_GE};
	name_ge.value.bytes.ptr = (const uint8_t *)"name-07";
	name_ge.value.bytes.len = 7;
	CHECK_INT(rows_after_prune(&name_ge, 1, &skipped, &err), 3000);
}

TEST(reader_never_prunes_on_nan)
{
	tl_error err;
	tl_error_clear(&err);
	int skipped;
	tl_pq_predicate nan_eq = {.column = 3, .op = TL_PQ_EQ, .value.f64 = NAN};
	CHECK_INT(rows_after_prune(&nan_eq, 1, &skipped, &err), 10000);
	tl_pq_predicate big = {.column = 3, .op = TL_PQ_GT, .value.f64 = 950.0};
	/* Row group 9 holds scores 900.0..999.9; row group 0 has a NaN and pyarrow
	 * still records finite bounds for it, which we may use. */
	int64_t rows = rows_after_prune(&big, 1, &skipped, &err);
	CHECK(rows == 1000 || rows == 2000);
}

TEST(reader_selects_one_row_group)
{
	tl_error err;
	tl_error_clear(&err);
	opened o;
	CHECK_OK(open_fixture(ROW_GROUPS_FILE, &o, &err), &err);
	CHECK_OK(tl_pq_reader_select_row_group(o.reader, 7, &err), &err);
	CHECK(tl_pq_reader_select_row_group(o.reader, 10, &err) < 0);
	tl_error_clear(&err);
	tl_pq_batch *batch = tl_pq_reader_batch_new(o.reader, 5000);
	CHECK_INT(tl_pq_reader_next(o.reader, batch, &err), 1000);
	CHECK_INT(batch->columns[0].v.i64[0], 7000);
	CHECK_INT(tl_pq_reader_next(o.reader, batch, &err), 0);
	tl_pq_batch_free(batch);
	close_fixture(&o);
}

TEST(reader_reads_required_columns_in_v2_pages_with_crcs)
{
	tl_error err;
	tl_error_clear(&err);
	opened o;
	CHECK_OK(open_fixture(REQUIRED_V2_FILE, &o, &err), &err);
	const tl_pq_schema *schema = tl_pq_reader_schema(o.reader);
	CHECK(schema->columns[0].required);
	CHECK(schema->columns[1].required);
	tl_pq_batch *batch = tl_pq_reader_batch_new(o.reader, 1024);
	CHECK(batch->columns[0].valid == NULL);
	int64_t row = 0, n;
	while ((n = tl_pq_reader_next(o.reader, batch, &err)) > 0)
		for (int64_t i = 0; i < n; i++, row++) {
			CHECK_INT(batch->columns[0].v.i32[i], row);
			tl_bytes v = batch->columns[1].v.bytes[i];
			CHECK_INT(v.len, 2);
			CHECK_INT(v.ptr[1] - '0', row % 7);
		}
	CHECK_OK(n, &err);
	CHECK_INT(row, 3000);
	tl_pq_batch_free(batch);
	close_fixture(&o);
}

/* Opens and fully reads bytes; returns rows read or -1 with err set. */
static int64_t read_all(const uint8_t *data, size_t len, tl_error *err)
{
	tl_input *in = tl_input_from_memory(data, len, "mutated.parquet");
	tl_pq_reader *r = tl_pq_reader_open(in, err);
	int64_t total = -1;
	if (r) {
		tl_pq_batch *batch = tl_pq_reader_batch_new(r, 512);
		int64_t n;
		total = 0;
		while ((n = tl_pq_reader_next(r, batch, err)) > 0)
			total += n;
		if (n < 0)
			total = -1;
		tl_pq_batch_free(batch);
		tl_pq_reader_free(r);
	}
	tl_input_close(in);
	return total;
}

/* Checks that bytes fail to read, with a message. */
static bool rejected(const uint8_t *data, size_t len, const char *what, size_t at)
{
	tl_error err;
	tl_error_clear(&err);
	int64_t rows = read_all(data, len, &err);
	if (rows >= 0 || err.message[0] == '\0') {
		tl_test_fail(__FILE__, __LINE__, "%s at %zu: read %lld rows, error \"%s\"", what, at, (long long)rows,
		             err.message);
		return false;
	}
	return true;
}

TEST(reader_rejects_every_truncation_with_a_message)
{
	tl_buf file;
	tl_buf_init(&file);
	tl_error load_err;
	tl_error_clear(&load_err);
	CHECK_OK(tl_test_load(REQUIRED_V2_FILE, &file, &load_err), &load_err);
	uint8_t *data = file.data;
	size_t len = file.len;
	uint32_t footer_len;
	memcpy(&footer_len, data + len - 8, 4);
	size_t footer_start = len - 8 - footer_len;
	uint8_t *copy = malloc(len);

	/* The file cut anywhere loses its closing magic. */
	for (size_t cut = 0; cut < len; cut += cut < 64 ? 1 : 61)
		if (!rejected(data, cut, "file cut", cut))
			break;

	/* The data cut short under an intact footer: chunks point past the end. */
	for (size_t cut = 4; cut < footer_start; cut += 7) {
		memcpy(copy, data, cut);
		memcpy(copy + cut, data + footer_start, footer_len + 8);
		if (!rejected(copy, cut + footer_len + 8, "data cut", cut))
			break;
	}

	/* The footer itself cut at every byte, with its length updated to match. */
	for (uint32_t cut = 0; cut < footer_len; cut++) {
		memcpy(copy, data, footer_start + cut);
		memcpy(copy + footer_start + cut, &cut, 4);
		memcpy(copy + footer_start + cut + 4, "PAR1", 4);
		if (!rejected(copy, footer_start + cut + 8, "footer cut", cut))
			break;
	}
	free(copy);
	tl_buf_free(&file);
}

TEST(reader_survives_corrupted_bytes)
{
	tl_buf file;
	tl_buf_init(&file);
	tl_error load_err;
	tl_error_clear(&load_err);
	CHECK_OK(tl_test_load(ROW_GROUPS_FILE, &file, &load_err), &load_err);
	uint8_t *data = file.data;
	size_t len = file.len;
	uint8_t *copy = malloc(len);
	uint64_t state = 42;
	int failures = 0;
	for (int round = 0; round < 400; round++) {
		memcpy(copy, data, len);
		for (int k = 0; k < 4; k++) {
			state = state * 6364136223846793005ULL + 1442695040888963407ULL;
			copy[(state >> 33) % len] ^= (uint8_t)(1u << ((state >> 20) & 7));
		}
		tl_error err;
		tl_error_clear(&err);
		if (read_all(copy, len, &err) < 0) {
			failures++;
			CHECK(err.message[0] != '\0');
		}
	}
	/* Most flips land in compressed pages, which zstd's checksums or our
	 * checks catch; the point is that none of them crashed. */
	CHECK(failures > 0);
	free(copy);
	tl_buf_free(&file);
}

TEST(reader_names_what_is_wrong_with_non_parquet_input)
{
	tl_error err;
	tl_error_clear(&err);
	const char *text = "this is not a parquet file at all, just some text";
	CHECK(read_all((const uint8_t *)text, strlen(text), &err) < 0);
	CHECK(strstr(err.message, "not a Parquet file") != NULL);
	tl_error_clear(&err);
	CHECK(read_all((const uint8_t *)"PAR1", 4, &err) < 0);
	CHECK(strstr(err.message, "not a Parquet file") != NULL);
	tl_error_clear(&err);
	CHECK(tl_input_open_file("lake/tests/data/reader/missing.parquet", &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
}

TEST(reader_converts_int96_to_nanoseconds)
{
	/* 2000-01-01 00:00:01.5 is Julian day 2451545 and 1.5e9 ns into the day. */
	uint8_t raw[12];
	uint64_t nanos_of_day = 1500000000ULL;
	uint32_t julian_day = 2451545;
	memcpy(raw, &nanos_of_day, 8);
	memcpy(raw + 8, &julian_day, 4);
	CHECK_INT(pq_int96_to_nanos(raw), 946684801500000000LL);
}

/*
 * Old writers annotate columns with ConvertedType only. Take a file of ours,
 * drop every LogicalType from its footer (keeping the ConvertedType our
 * writer also writes) and check the reader maps the legacy annotations.
 */
TEST(reader_maps_legacy_converted_types)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *schema = tl_pq_schema_new();
	tl_pq_column cols[] = {
		{.name = "ts", .physical = TL_PQ_INT64, .logical = TL_PQ_LOGICAL_TIMESTAMP, .unit = TL_PQ_MILLIS,
		 .utc_adjusted = true, .field_id = -1},
		{.name = "small", .physical = TL_PQ_INT32, .logical = TL_PQ_LOGICAL_INT, .int_bit_width = 8,
		 .int_signed = true, .field_id = -1},
		{.name = "big", .physical = TL_PQ_INT64, .logical = TL_PQ_LOGICAL_INT, .int_bit_width = 64,
		 .int_signed = false, .field_id = -1},
		{.name = "amount", .physical = TL_PQ_INT64, .logical = TL_PQ_LOGICAL_DECIMAL, .precision = 12, .scale = 3,
		 .field_id = -1},
		{.name = "label", .physical = TL_PQ_BYTE_ARRAY, .logical = TL_PQ_LOGICAL_STRING, .field_id = -1},
	};
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		tl_pq_schema_add(schema, &cols[i]);

	tl_buf file;
	tl_buf_init(&file);
	tl_output *out = tl_output_to_buffer(&file, "legacy.parquet");
	tl_pq_writer *w = tl_pq_writer_open(out, schema, NULL, &err);
	CHECK(w != NULL);
	tl_pq_batch *batch = tl_pq_batch_new(schema, 2);
	for (int64_t i = 0; i < 2; i++) {
		batch->columns[0].v.i64[i] = 1700000000000 + i;
		batch->columns[1].v.i32[i] = -5 + (int32_t)i;
		batch->columns[2].v.i64[i] = -1; /* UINT_64 max */
		batch->columns[3].v.i64[i] = 123456;
		batch->columns[4].v.bytes[i] = (tl_bytes){(const uint8_t *)"old", 3};
	}
	batch->nrows = 2;
	CHECK_OK(tl_pq_writer_write(w, batch, &err), &err);
	CHECK_OK(tl_pq_writer_close(w, &err), &err);
	tl_pq_writer_free(w);
	tl_output_close(out);
	tl_pq_batch_free(batch);
	tl_pq_schema_free(schema);

	/* Re-encode the footer without LogicalType annotations. */
	uint32_t footer_len;
	memcpy(&footer_len, file.data + file.len - 8, 4);
	size_t footer_start = file.len - 8 - footer_len;
	pq_file_metadata md;
	CHECK_OK(pq_file_metadata_decode(file.data + footer_start, footer_len, &md, &err), &err);
	for (int i = 0; i < md.nschema; i++)
		md.schema[i].logical.kind = PQ_LT_NONE;
	tl_buf legacy;
	tl_buf_init(&legacy);
	tl_buf_append(&legacy, file.data, footer_start);
	size_t before = legacy.len;
	pq_file_metadata_encode(&md, &legacy);
	uint32_t new_len = (uint32_t)(legacy.len - before);
	tl_buf_append(&legacy, &new_len, 4);
	tl_buf_append(&legacy, "PAR1", 4);
	pq_file_metadata_free(&md);

	tl_input *in = tl_input_from_memory(legacy.data, legacy.len, "legacy.parquet");
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	CHECK(r != NULL);
	const tl_pq_schema *read = tl_pq_reader_schema(r);
	/* Legacy TIMESTAMP_MILLIS is defined as adjusted to UTC. */
	CHECK_INT(read->columns[0].logical, TL_PQ_LOGICAL_TIMESTAMP);
	CHECK_INT(read->columns[0].unit, TL_PQ_MILLIS);
	CHECK(read->columns[0].utc_adjusted);
	CHECK_INT(read->columns[1].logical, TL_PQ_LOGICAL_INT);
	CHECK_INT(read->columns[1].int_bit_width, 8);
	CHECK(read->columns[1].int_signed);
	CHECK_INT(read->columns[2].logical, TL_PQ_LOGICAL_INT);
	CHECK(!read->columns[2].int_signed);
	CHECK_INT(read->columns[3].logical, TL_PQ_LOGICAL_DECIMAL);
	CHECK_INT(read->columns[3].precision, 12);
	CHECK_INT(read->columns[3].scale, 3);
	CHECK_INT(read->columns[4].logical, TL_PQ_LOGICAL_STRING);
	tl_pq_batch *got = tl_pq_reader_batch_new(r, 16);
	CHECK_INT(tl_pq_reader_next(r, got, &err), 2);
	CHECK_INT(got->columns[0].v.i64[1], 1700000000001);
	CHECK_INT(got->columns[1].v.i32[0], -5);
	CHECK(got->columns[2].v.i64[0] == -1);
	tl_pq_batch_free(got);
	tl_pq_reader_free(r);
	tl_input_close(in);
	tl_buf_free(&legacy);
	tl_buf_free(&file);
}

/* Late materialisation: deferred columns loaded for some batches equal a plain read (deferred_check.h). */
TEST(reader_deferred_columns_equal_a_plain_read)
{
	static const char *const files[] = {ROW_GROUPS_FILE, REQUIRED_V2_FILE};
	/* Batch sizes below, across and above the fixtures' pages and row groups. */
	static const int64_t batch_rows[] = {1, 37, 600, 5000};
	static const int load_every[] = {1, 2, 5, 1000000}; /* the last: none loaded, skipped to the end */
	tl_error err;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++)
		for (size_t b = 0; b < sizeof(batch_rows) / sizeof(batch_rows[0]); b++)
			for (size_t l = 0; l < sizeof(load_every) / sizeof(load_every[0]); l++)
				for (int eager = -1; eager < 2; eager++) {
					tl_error_clear(&err);
					CHECK_OK(deferred_check(files[f], batch_rows[b], eager, load_every[l], &err), &err);
				}
}

TEST(reader_load_column_refuses_what_is_not_deferred)
{
	tl_error err;
	tl_error_clear(&err);
	opened o;
	CHECK_OK(open_fixture(ROW_GROUPS_FILE, &o, &err), &err);
	bool deferred[4] = {false, true, true, true};
	CHECK_OK(tl_pq_reader_defer(o.reader, deferred, &err), &err);
	tl_pq_batch *batch = tl_pq_reader_batch_new(o.reader, 100);
	CHECK_INT(tl_pq_reader_load_column(o.reader, batch, 1, &err), -1);
	CHECK(strstr(err.message, "no batch") != NULL);
	CHECK_INT(tl_pq_reader_next(o.reader, batch, &err), 100);
	tl_error_clear(&err);
	CHECK_INT(tl_pq_reader_load_column(o.reader, batch, 0, &err), -1);
	CHECK(strstr(err.message, "not a deferred column") != NULL);
	tl_error_clear(&err);
	CHECK_INT(tl_pq_reader_load_column(o.reader, batch, 4, &err), -1);
	tl_error_clear(&err);
	CHECK_OK(tl_pq_reader_load_column(o.reader, batch, 1, &err), &err);
	CHECK(memcmp(batch->columns[1].v.bytes[99].ptr, "name-00099", 10) == 0);
	/* Too late to change the deferral once reading started. */
	CHECK_INT(tl_pq_reader_defer(o.reader, NULL, &err), -1);
	tl_pq_batch_free(batch);
	close_fixture(&o);
}
