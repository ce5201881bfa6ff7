/*
 * fuzz_parquet_reader.c: libFuzzer target for the whole Parquet read path.
 *
 * Each input is treated as a complete Parquet file held in memory. When the
 * footer is accepted, the target walks everything a caller can reach: the
 * schema, every row group's chunk statistics, pruning with predicates built
 * from the input, a full scan of every column, and a scan of a reordered
 * subset of columns, and a scan deferring columns and loading them for
 * some batches only, and a scan of the pages a page index lists (with bloom
 * filter probes). Values are touched one by one so AddressSanitizer sees
 * any view that points outside the memory the reader owns.
 *
 * Besides crashes, leaks and undefined behaviour, the target aborts on broken
 * promises of the API: a failure that leaves no error set, a batch larger
 * than its capacity, a validity byte other than 0 or 1, a file row count
 * that differs from the sum of its row groups, or a successful scan that
 * returns a different number of rows than the row groups declare.
 *
 * Build and run through the Makefile: `make test-fuzz` (see
 * scripts/run-fuzzers.sh); the seed corpus is lake/tests/corpus/fuzz_parquet_reader.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/io.h"
#include "tierlake/parquet.h"

/* Small batches so that one input exercises batch boundaries inside pages. */
#define FUZZ_BATCH_ROWS 100

/* Reports a broken API promise; libFuzzer records the input that caused it. */
#define FUZZ_REQUIRE(cond)                                                                   \
	do {                                                                                     \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "fuzz_parquet_reader: %s:%d: broken promise: %s\n", __FILE__,   \
			        __LINE__, #cond);                                                        \
			abort();                                                                         \
		}                                                                                    \
	} while (0)

/* Accumulates what the target reads, so the reads cannot be optimised away. */
static volatile uint64_t fuzz_sink;

static uint64_t touch_bytes(tl_bytes b)
{
	uint64_t h = b.len;
	for (uint32_t i = 0; i < b.len; i++)
		h = h * 31 + b.ptr[i];
	return h;
}

static void require_failure_reported(const tl_error *err)
{
	FUZZ_REQUIRE(err->code != TL_OK);
	FUZZ_REQUIRE(err->message[0] != '\0');
	FUZZ_REQUIRE(memchr(err->message, '\0', sizeof(err->message)) != NULL);
}

static void touch_schema(const tl_pq_schema *schema)
{
	tl_buf text;
	tl_buf_init(&text);
	for (int c = 0; c < schema->ncolumns; c++) {
		const tl_pq_column *col = &schema->columns[c];
		FUZZ_REQUIRE(col->name != NULL);
		fuzz_sink += strlen(col->name);
		tl_buf_reset(&text);
		tl_pq_column_type_text(col, &text);
		fuzz_sink += text.len;
		FUZZ_REQUIRE(tl_pq_schema_find(schema, col->name) >= 0);
	}
	tl_buf_free(&text);
}

static void touch_stats(const tl_pq_column *col, const tl_pq_stats *stats)
{
	if (stats->has_null_count)
		fuzz_sink += (uint64_t)stats->null_count;
	if (!stats->has_min_max)
		return;
	if (col->physical == TL_PQ_BYTE_ARRAY || col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY)
		fuzz_sink += touch_bytes(stats->min.bytes) + touch_bytes(stats->max.bytes);
	else
		fuzz_sink += (uint64_t)stats->min.i64 ^ (uint64_t)stats->max.i64;
}

/* Returns the rows of all row groups together (saturated), what a full scan must return. */
static int64_t touch_footer(tl_pq_reader *r)
{
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	FUZZ_REQUIRE(schema != NULL);
	touch_schema(schema);

	const char *created_by = tl_pq_reader_created_by(r);
	if (created_by)
		fuzz_sink += strlen(created_by);
	for (int i = 0; i < tl_pq_reader_num_metadata(r); i++) {
		const tl_pq_kv *kv = tl_pq_reader_metadata(r, i);
		FUZZ_REQUIRE(kv != NULL && kv->key != NULL);
		fuzz_sink += strlen(kv->key) + (kv->value ? strlen(kv->value) : 0);
	}

	int64_t rows = 0;
	int ngroups = tl_pq_reader_num_row_groups(r);
	FUZZ_REQUIRE(ngroups >= 0);
	for (int g = 0; g < ngroups; g++) {
		int64_t group_rows = tl_pq_reader_row_group_rows(r, g);
		FUZZ_REQUIRE(group_rows >= 0);
		if (__builtin_add_overflow(rows, group_rows, &rows))
			rows = INT64_MAX;
		for (int c = 0; c < schema->ncolumns; c++) {
			const tl_pq_chunk_info *chunk = tl_pq_reader_chunk(r, g, c);
			FUZZ_REQUIRE(chunk != NULL);
			fuzz_sink += (uint64_t)chunk->codec + (uint64_t)chunk->num_values + chunk->encodings_mask;
			touch_stats(&schema->columns[c], &chunk->stats);
		}
	}
	return rows;
}

/* Touches the batch's first `ncolumns` columns (the decoded ones). */
static void touch_batch(const tl_pq_reader *r, const tl_pq_batch *batch, const int *columns, int ncolumns)
{
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	for (int k = 0; k < ncolumns; k++) {
		const tl_pq_column *col = &schema->columns[columns ? columns[k] : k];
		const tl_vector *vec = &batch->columns[k];
		for (int64_t row = 0; row < batch->nrows; row++) {
			if (vec->valid) {
				FUZZ_REQUIRE(vec->valid[row] <= 1);
				if (!vec->valid[row])
					continue;
			}
			switch (col->physical) {
			case TL_PQ_BOOLEAN:
				FUZZ_REQUIRE(vec->v.b[row] <= 1);
				fuzz_sink += vec->v.b[row];
				break;
			case TL_PQ_INT32:
				fuzz_sink += (uint32_t)vec->v.i32[row];
				break;
			case TL_PQ_INT64:
			case TL_PQ_INT96:
				fuzz_sink += (uint64_t)vec->v.i64[row];
				break;
			case TL_PQ_FLOAT: {
				uint32_t bits;
				memcpy(&bits, &vec->v.f32[row], sizeof(bits));
				fuzz_sink += bits;
				break;
			}
			case TL_PQ_DOUBLE: {
				uint64_t bits;
				memcpy(&bits, &vec->v.f64[row], sizeof(bits));
				fuzz_sink += bits;
				break;
			}
			case TL_PQ_FIXED_LEN_BYTE_ARRAY:
				FUZZ_REQUIRE(vec->v.bytes[row].len == (uint32_t)col->type_length);
				fuzz_sink += touch_bytes(vec->v.bytes[row]);
				break;
			case TL_PQ_BYTE_ARRAY:
				fuzz_sink += touch_bytes(vec->v.bytes[row]);
				break;
			}
		}
	}
}

/*
 * Reads batches until the end or an error. Returns the rows read, or -1 when
 * the reader reported an error (which is fine for hostile input).
 */
static int64_t scan(tl_pq_reader *r, const int *columns, int ncolumns, int64_t rows_allowed)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_batch *batch = tl_pq_reader_batch_new(r, FUZZ_BATCH_ROWS);
	FUZZ_REQUIRE(batch != NULL);
	FUZZ_REQUIRE(batch->ncolumns == ncolumns);
	FUZZ_REQUIRE(batch->capacity == FUZZ_BATCH_ROWS);

	int64_t total = 0;
	for (;;) {
		int64_t n = tl_pq_reader_next(r, batch, &err);
		if (n < 0) {
			FUZZ_REQUIRE(n == -1);
			require_failure_reported(&err);
			total = -1;
			break;
		}
		if (n == 0)
			break;
		FUZZ_REQUIRE(n <= FUZZ_BATCH_ROWS && n == batch->nrows);
		total += n;
		/* More rows than the footer declares means the reader is inventing them. */
		FUZZ_REQUIRE(total <= rows_allowed);
		touch_batch(r, batch, columns, batch->ncolumns);
	}
	tl_pq_batch_free(batch);
	return total;
}

/*
 * Pass 4's scan: every column but the first deferred, and loaded for every
 * third batch only, so the skipping of rows (whole pages, parts of pages,
 * whole chunks) meets the input's pages too. Only decoded columns are
 * touched.
 */
static void scan_deferred(tl_pq_reader *r, int ncolumns, int64_t rows_allowed)
{
	tl_error err;
	tl_error_clear(&err);
	bool *deferred = tl_calloc((size_t)ncolumns + 1, sizeof(bool));
	for (int c = 1; c < ncolumns; c++)
		deferred[c] = true;
	FUZZ_REQUIRE(tl_pq_reader_defer(r, deferred, &err) == 0);
	free(deferred);
	tl_pq_batch *batch = tl_pq_reader_batch_new(r, FUZZ_BATCH_ROWS);
	int64_t total = 0;
	for (int64_t index = 0;; index++) {
		int64_t n = tl_pq_reader_next(r, batch, &err);
		if (n < 0) {
			require_failure_reported(&err);
			break;
		}
		if (n == 0)
			break;
		total += n;
		FUZZ_REQUIRE(total <= rows_allowed);
		bool load = index % 3 == 2;
		int c = 1;
		for (; load && c < ncolumns; c++)
			if (tl_pq_reader_load_column(r, batch, c, &err) < 0)
				break;
		if (load && c < ncolumns) {
			require_failure_reported(&err);
			break;
		}
		touch_batch(r, batch, NULL, load ? ncolumns : (ncolumns > 0 ? 1 : 0));
	}
	tl_pq_batch_free(batch);
}

/*
 * Predicates whose columns, operators and constants come from the input, so
 * pruning sees every type with both plausible and arbitrary constants.
 */
static int build_predicates(tl_pq_reader *r, const uint8_t *data, size_t size, tl_pq_predicate *preds,
                            int max_preds)
{
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	if (schema->ncolumns == 0 || size < 16)
		return 0;
	int npreds = 0;
	for (int i = 0; i < max_preds; i++) {
		const uint8_t *seed = data + size - 16 + (size_t)i * 8; /* the input's last 16 bytes */
		tl_pq_predicate *p = &preds[npreds++];
		memset(p, 0, sizeof(*p));
		p->column = seed[0] % schema->ncolumns;
		p->op = (tl_pq_op)(seed[1] % (TL_PQ_NOT_NULL + 1));
		const tl_pq_column *col = &schema->columns[p->column];
		const tl_pq_chunk_info *first =
			tl_pq_reader_num_row_groups(r) > 0 ? tl_pq_reader_chunk(r, 0, p->column) : NULL;
		bool from_stats = (seed[2] & 1) && first != NULL && first->stats.has_min_max;
		if (from_stats) {
			p->value = (seed[2] & 2) ? first->stats.max : first->stats.min;
		} else if (col->physical == TL_PQ_BYTE_ARRAY || col->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY) {
			p->value.bytes.ptr = seed + 3;
			p->value.bytes.len = seed[3] % 6;
		} else {
			int64_t v = 0;
			memcpy(&v, seed, sizeof(v));
			switch (col->physical) {
			case TL_PQ_BOOLEAN:
				p->value.b = v & 1;
				break;
			case TL_PQ_INT32:
				p->value.i32 = (int32_t)v;
				break;
			case TL_PQ_FLOAT:
				p->value.f32 = (float)(int32_t)v;
				break;
			case TL_PQ_DOUBLE:
				p->value.f64 = (double)(int32_t)v;
				break;
			default:
				p->value.i64 = v;
				break;
			}
		}
	}
	return npreds;
}

/*
 * Pass 5's checks: every chunk's page index is absent, or pages that start
 * at row 0 and tile the row group; the scan then reads every other page of
 * the first column's index (never more rows than the file has), so chunks
 * with an OffsetIndex are fetched page by page, and for inputs of odd size
 * defers the other columns as pass 4 does.
 * Each chunk's bloom filter is probed with bytes of the input.
 */
static void scan_pages(tl_pq_reader *r, const uint8_t *data, size_t size)
{
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	tl_error err;
	bool selecting = schema->ncolumns > 0;
	for (int g = 0; g < tl_pq_reader_num_row_groups(r); g++) {
		int64_t rows = tl_pq_reader_row_group_rows(r, g);
		for (int c = 0; c < schema->ncolumns; c++) {
			const tl_pq_page_info *pages;
			tl_error_clear(&err);
			int n = tl_pq_reader_page_index(r, g, c, &pages, &err);
			if (n < 0) {
				require_failure_reported(&err);
				selecting = false;
				continue;
			}
			int64_t next = 0;
			for (int p = 0; p < n; p++) {
				FUZZ_REQUIRE(pages[p].first_row == next);
				FUZZ_REQUIRE(pages[p].rows > 0 && pages[p].first_row + pages[p].rows <= rows);
				next = pages[p].first_row + pages[p].rows;
				touch_stats(&schema->columns[c], &pages[p].stats);
			}
			FUZZ_REQUIRE(n == 0 || next == rows);
			tl_bytes probe = {data, (uint32_t)(size < 16 ? size : 16)};
			tl_error_clear(&err);
			int may = tl_pq_reader_bloom_may_contain(r, g, c, &probe, 1, &err);
			FUZZ_REQUIRE(may == 0 || may == 1 || may == -1);
			if (may < 0)
				require_failure_reported(&err);
			if (c != 0 || !selecting || n == 0)
				continue;
			tl_pq_row_range *ranges = tl_calloc((size_t)n, sizeof(*ranges));
			int nranges = 0;
			for (int p = 0; ranges != NULL && p < n; p += 2)
				ranges[nranges++] = (tl_pq_row_range){pages[p].first_row, pages[p].first_row + pages[p].rows};
			tl_error_clear(&err);
			if (ranges == NULL || tl_pq_reader_select_rows(r, g, ranges, nranges, &err) < 0)
				selecting = false;
			tl_free(ranges);
		}
	}
	if (selecting && (size & 1)) {
		/* Deferred columns open mid-row-group, so they fetch pages from there on. */
		scan_deferred(r, schema->ncolumns, tl_pq_reader_num_rows(r));
	} else if (selecting) {
		int64_t got = scan(r, NULL, schema->ncolumns, tl_pq_reader_num_rows(r));
		fuzz_sink += (uint64_t)got;
	}
}

static tl_pq_reader *open_reader(tl_input *in)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	if (r == NULL)
		require_failure_reported(&err);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tl_input *in = tl_input_from_memory(data, size, "fuzz-input.parquet");
	tl_error err;

	/* Pass 1: the footer, then every column of every row group. */
	tl_pq_reader *r = open_reader(in);
	if (r == NULL) {
		tl_input_close(in);
		return 0;
	}
	int64_t group_rows = touch_footer(r);
	/* The file's row count is what callers plan with; it must be what a scan yields. */
	FUZZ_REQUIRE(tl_pq_reader_num_rows(r) == group_rows);
	const tl_pq_schema *schema = tl_pq_reader_schema(r);
	int ncolumns = schema->ncolumns;
	int64_t rows = scan(r, NULL, ncolumns, group_rows);
	FUZZ_REQUIRE(rows == -1 || rows == group_rows);
	tl_pq_reader_free(r);

	/* Pass 2: every other column in reverse order, after pruning. */
	r = open_reader(in);
	FUZZ_REQUIRE(r != NULL); /* the same bytes opened a moment ago */
	int *subset = tl_calloc((size_t)ncolumns + 1, sizeof(int));
	int nsubset = 0;
	for (int c = ncolumns - 1; c >= 0; c -= 2)
		subset[nsubset++] = c;
	tl_pq_predicate preds[2];
	int npreds = build_predicates(r, data, size, preds, 2);
	int skipped = tl_pq_reader_prune(r, preds, npreds);
	FUZZ_REQUIRE(skipped >= 0 && skipped <= tl_pq_reader_num_row_groups(r));
	tl_error_clear(&err);
	if (tl_pq_reader_project(r, subset, nsubset, &err) == 0)
		scan(r, subset, nsubset, group_rows);
	else
		require_failure_reported(&err);
	tl_pq_reader_free(r);

	/* Pass 3: only the last row group, when there are several. */
	r = open_reader(in);
	FUZZ_REQUIRE(r != NULL);
	int ngroups = tl_pq_reader_num_row_groups(r);
	if (ngroups > 1) {
		tl_error_clear(&err);
		if (tl_pq_reader_select_row_group(r, ngroups - 1, &err) == 0) {
			int64_t last_rows = tl_pq_reader_row_group_rows(r, ngroups - 1);
			rows = scan(r, NULL, ncolumns, last_rows);
			FUZZ_REQUIRE(rows == -1 || rows == last_rows);
		} else {
			require_failure_reported(&err);
		}
	}
	tl_pq_reader_free(r);

	/* Pass 4: late materialisation. */
	r = open_reader(in);
	FUZZ_REQUIRE(r != NULL);
	scan_deferred(r, ncolumns, group_rows);
	tl_pq_reader_free(r);

	/* Pass 5: page indexes, row selection by them, and bloom filters. */
	r = open_reader(in);
	FUZZ_REQUIRE(r != NULL);
	scan_pages(r, data, size);
	tl_pq_reader_free(r);

	free(subset);
	tl_input_close(in);
	return 0;
}
