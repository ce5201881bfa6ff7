/*
 * test_page_index.c: the page index and bloom filters, written and read.
 *
 * The writer's side is checked against the data itself: each page's
 * first row, null count and min/max as the page index states them must be
 * what the rows of that page hold. The reader's side is checked the way
 * that matters for queries: an Iceberg read with a filter, which skips the
 * pages the page indexes rule out, must yield exactly the matching rows a
 * read without a filter yields, with deletes (by position, so positions
 * must survive the gaps) and deferred columns, over many random filters
 * and data shapes; such a read fetches only the pages it decodes (and a
 * chunk's dictionary only when one of them needs it), so the same
 * comparison pins down that fetching too. A malformed index must change
 * nothing but speed.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "iceberg/reader_internal.h"
#include "parquet/bloom.h"
#include "parquet/metadata.h"
#include "tierlake/iceberg_expr.h"

/* ------------------------------------------------------------ scratch */

static char scratch_dir[64];

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void remove_scratch(void)
{
	if (scratch_dir[0])
		nftw(scratch_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *scratch(const char *name)
{
	static char paths[32][160];
	static int next;
	if (scratch_dir[0] == '\0') {
		strcpy(scratch_dir, "/tmp/tierdb-pageindex-XXXXXX");
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

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int64_t rnd_below(int64_t n)
{
	return (int64_t)(rnd() % (uint64_t)n);
}

/* ------------------------------------------------------------ the data */

/*
 * The table: id long (= the row's position in its file, so a row read at
 * the wrong position shows), k int, f double (nulls, NaN, both zeros), s
 * string (dictionary-encoded), p string (unique, long: PLAIN pages).
 */
enum { F_ID = 1, F_K, F_F, F_S, F_P, NFIELDS = 5 };

typedef struct shape {
	int64_t rows;
	int64_t page_rows;
	int64_t row_group_rows;
	bool sorted;              /* k, f and s cluster by position (as sorted or appended data does) */
	tl_pq_codec codec;        /* of every page, dictionaries included */
} shape;

typedef struct dataset {
	int64_t rows;
	int64_t *id;
	int32_t *k;
	double *f;
	uint8_t *f_valid, *k_valid, *s_valid;
	char (*s)[16];
	char (*p)[40];
} dataset;

static void dataset_free(dataset *d)
{
	free(d->id);
	free(d->k);
	free(d->f);
	free(d->f_valid);
	free(d->k_valid);
	free(d->s_valid);
	free(d->s);
	free(d->p);
}

static void dataset_make(dataset *d, const shape *sh)
{
	int64_t n = sh->rows;
	d->rows = n;
	d->id = malloc(sizeof(int64_t) * (size_t)n);
	d->k = malloc(sizeof(int32_t) * (size_t)n);
	d->f = malloc(sizeof(double) * (size_t)n);
	d->f_valid = malloc((size_t)n);
	d->k_valid = malloc((size_t)n);
	d->s_valid = malloc((size_t)n);
	d->s = malloc(sizeof(*d->s) * (size_t)n);
	d->p = malloc(sizeof(*d->p) * (size_t)n);
	for (int64_t i = 0; i < n; i++) {
		d->id[i] = i;
		d->k[i] = sh->sorted ? (int32_t)(i / 37) : (int32_t)rnd_below(50);
		d->k_valid[i] = rnd_below(20) != 0;
		int64_t dice = rnd_below(20);
		d->f_valid[i] = dice != 0;
		if (dice == 1)
			d->f[i] = NAN;
		else if (dice == 2)
			d->f[i] = 0.0;
		else if (dice == 3)
			d->f[i] = -0.0;
		else
			d->f[i] = sh->sorted ? (double)i / 10.0 - 20.0 : (double)rnd_below(400) / 4.0 - 50.0;
		d->s_valid[i] = rnd_below(10) != 0;
		snprintf(d->s[i], sizeof(d->s[i]), "v%03d", sh->sorted ? (int)(i / 23) : (int)rnd_below(120));
		snprintf(d->p[i], sizeof(d->p[i]), "row-%08lld-%06d", (long long)i, (int)rnd_below(1000000));
	}
	/* A run of nulls long enough to fill whole pages. */
	for (int64_t i = n / 3; i < n / 3 + 3 * sh->page_rows && i < n; i++)
		d->f_valid[i] = 0;
}

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

static tl_pq_schema *data_pq_schema(void)
{
	tl_pq_column cols[NFIELDS] = {pq_col("id", TL_PQ_INT64, true, F_ID), pq_col("k", TL_PQ_INT32, false, F_K),
	                              pq_col("f", TL_PQ_DOUBLE, false, F_F), pq_col("s", TL_PQ_BYTE_ARRAY, false, F_S),
	                              pq_col("p", TL_PQ_BYTE_ARRAY, true, F_P)};
	cols[3].logical = cols[4].logical = TL_PQ_LOGICAL_STRING;
	tl_pq_schema *s = tl_pq_schema_new();
	for (int i = 0; i < NFIELDS; i++)
		tl_pq_schema_add(s, &cols[i]);
	return s;
}

static int data_ice_schema(tl_ice_schema *schema, tl_error *err)
{
	static const tl_ice_type_id types[NFIELDS] = {TL_ICE_LONG, TL_ICE_INT, TL_ICE_DOUBLE, TL_ICE_STRING,
	                                              TL_ICE_STRING};
	static const char *names[NFIELDS] = {"id", "k", "f", "s", "p"};
	tl_ice_field f[NFIELDS];
	for (int i = 0; i < NFIELDS; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		f[i].id = i + 1;
		f[i].name = (char *)names[i];
		f[i].required = i == 0 || i == 4;
		f[i].type.id = types[i];
	}
	return tl_ice_schema_init(schema, 0, f, NFIELDS, err);
}

static int write_batch(const char *path, const tl_pq_schema *schema, const tl_pq_batch *b,
                       const tl_pq_writer_options *o, tl_error *err)
{
	tl_output *out = tl_output_create_file(path, 0, err);
	if (out == NULL)
		return -1;
	tl_pq_writer *w = tl_pq_writer_open(out, schema, o, err);
	int rc = w != NULL && tl_pq_writer_write(w, b, err) == 0 && tl_pq_writer_close(w, err) == 0 &&
	                 out->finish(out, err) == 0
	             ? 0
	             : -1;
	tl_pq_writer_free(w);
	tl_output_close(out);
	return rc;
}

static int write_dataset(const char *path, const dataset *d, const shape *sh, const int *bloom, int nbloom,
                         tl_error *err)
{
	tl_pq_schema *s = data_pq_schema();
	tl_pq_batch *b = tl_pq_batch_new(s, d->rows);
	for (int64_t i = 0; i < d->rows; i++) {
		b->columns[0].v.i64[i] = d->id[i];
		b->columns[1].v.i32[i] = d->k[i];
		b->columns[1].valid[i] = d->k_valid[i];
		b->columns[2].v.f64[i] = d->f[i];
		b->columns[2].valid[i] = d->f_valid[i];
		b->columns[3].v.bytes[i] = (tl_bytes){(const uint8_t *)d->s[i], (uint32_t)strlen(d->s[i])};
		b->columns[3].valid[i] = d->s_valid[i];
		b->columns[4].v.bytes[i] = (tl_bytes){(const uint8_t *)d->p[i], (uint32_t)strlen(d->p[i])};
	}
	b->nrows = d->rows;
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.codec = sh->codec;
	o.page_rows = sh->page_rows;
	o.row_group_rows = sh->row_group_rows;
	o.dictionary_bytes = 4096; /* p overflows it: PLAIN pages after the first */
	o.bloom_columns = bloom;
	o.nbloom_columns = nbloom;
	int rc = write_batch(path, s, b, &o, err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

/* ------------------------------------------------------------ page index round trip */

static int cmp_double(double a, double b)
{
	return a < b ? -1 : a > b;
}

TEST(page_index_states_each_pages_rows_nulls_and_bounds)
{
	tl_error err;
	tl_error_clear(&err);
	shape sh = {.rows = 1500, .page_rows = 64, .row_group_rows = 700, .sorted = true};
	dataset d;
	dataset_make(&d, &sh);
	const char *path = scratch("roundtrip.parquet");
	CHECK_OK(write_dataset(path, &d, &sh, NULL, 0, &err), &err);

	tl_input *in = tl_input_open_file(path, &err);
	CHECK(in != NULL);
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	CHECK(r != NULL);
	int64_t base = 0, pages_seen = 0;
	for (int g = 0; g < tl_pq_reader_num_row_groups(r); g++) {
		int64_t rows = tl_pq_reader_row_group_rows(r, g);
		for (int c = 0; c < NFIELDS; c++) {
			const tl_pq_page_info *pages;
			int n = tl_pq_reader_page_index(r, g, c, &pages, &err);
			CHECK(n > 0);
			int64_t next = 0;
			for (int p = 0; p < n; p++) {
				const tl_pq_page_info *pg = &pages[p];
				CHECK_INT(pg->first_row, next);
				CHECK(pg->rows > 0 && pg->rows <= sh.page_rows);
				next += pg->rows;
				pages_seen++;
				/* Recompute the page's statistics from the rows. */
				int64_t nulls = 0, values = 0;
				double lo = INFINITY, hi = -INFINITY;
				int64_t ilo = INT64_MAX, ihi = INT64_MIN;
				const char *slo = NULL, *shi = NULL;
				for (int64_t i = base + pg->first_row; i < base + pg->first_row + pg->rows; i++) {
					bool valid = c == 1 ? d.k_valid[i] : c == 2 ? d.f_valid[i] : c == 3 ? d.s_valid[i] : true;
					if (!valid) {
						nulls++;
						continue;
					}
					values++;
					if (c == 0 || c == 1) {
						int64_t v = c == 0 ? d.id[i] : d.k[i];
						ilo = v < ilo ? v : ilo;
						ihi = v > ihi ? v : ihi;
					} else if (c == 2) {
						if (!isnan(d.f[i])) {
							lo = fmin(lo, d.f[i]);
							hi = fmax(hi, d.f[i]);
						}
					} else {
						const char *v = c == 3 ? d.s[i] : d.p[i];
						if (slo == NULL || strcmp(v, slo) < 0)
							slo = v;
						if (shi == NULL || strcmp(v, shi) > 0)
							shi = v;
					}
				}
				CHECK(pg->stats.has_null_count);
				CHECK_INT(pg->stats.null_count, nulls);
				if (values == 0) {
					CHECK(!pg->stats.has_min_max);
					continue;
				}
				if (c == 2 && lo > hi)
					continue; /* only NaN: the writer drops this column's index (below) */
				CHECK(pg->stats.has_min_max);
				if (c == 0) {
					CHECK_INT(pg->stats.min.i64, ilo);
					CHECK_INT(pg->stats.max.i64, ihi);
				} else if (c == 1) {
					CHECK_INT(pg->stats.min.i32, ilo);
					CHECK_INT(pg->stats.max.i32, ihi);
				} else if (c == 2) {
					CHECK(cmp_double(pg->stats.min.f64, lo) == 0 && cmp_double(pg->stats.max.f64, hi) == 0);
					/* A zero extreme is stored signed so both zeros are covered. */
					if (lo == 0)
						CHECK(signbit(pg->stats.min.f64));
					if (hi == 0)
						CHECK(!signbit(pg->stats.max.f64));
				} else {
					CHECK(pg->stats.min.bytes.len == strlen(slo) && memcmp(pg->stats.min.bytes.ptr, slo, strlen(slo)) == 0);
					CHECK(pg->stats.max.bytes.len == strlen(shi) && memcmp(pg->stats.max.bytes.ptr, shi, strlen(shi)) == 0);
				}
			}
			CHECK_INT(next, rows);
		}
		base += rows;
	}
	CHECK(pages_seen > 5 * 2 * 10);
	tl_pq_reader_free(r);
	tl_input_close(in);

	/* The boundary order: id ascends everywhere, p too; unsorted k does not. */
	tl_buf file;
	tl_buf_init(&file);
	in = tl_input_open_file(path, &err);
	CHECK(in != NULL);
	uint8_t *bytes = tl_buf_extend(&file, (size_t)in->size);
	CHECK_OK(tl_input_read(in, 0, bytes, (size_t)in->size, &err), &err);
	tl_input_close(in);
	uint32_t footer_len;
	memcpy(&footer_len, bytes + file.len - 8, 4);
	pq_file_metadata md;
	CHECK_OK(pq_file_metadata_decode(bytes + file.len - 8 - footer_len, footer_len, &md, &err), &err);
	tl_arena arena;
	tl_arena_init(&arena, 0);
	const pq_column_chunk *id_chunk = &md.row_groups[0].columns[0];
	CHECK(id_chunk->has_column_index && id_chunk->has_offset_index);
	pq_column_index ci;
	CHECK_OK(pq_column_index_decode(bytes + id_chunk->column_index_offset, (size_t)id_chunk->column_index_length,
	                                &arena, &ci, &err),
	         &err);
	CHECK_INT(ci.boundary_order, PQ_BOUNDARY_ASCENDING);
	pq_offset_index oi;
	CHECK_OK(pq_offset_index_decode(bytes + id_chunk->offset_index_offset, (size_t)id_chunk->offset_index_length,
	                                &arena, &oi, &err),
	         &err);
	CHECK_INT(oi.npages, ci.npages);
	CHECK_INT(oi.pages[0].offset, id_chunk->meta_data.data_page_offset);
	for (int p = 0; p < oi.npages; p++) {
		size_t consumed;
		pq_page_header h;
		/* Each location is a data page header whose stored size is the location's. */
		CHECK_OK(pq_page_header_decode(bytes + oi.pages[p].offset, file.len - (size_t)oi.pages[p].offset, &h,
		                               &consumed, &err),
		         &err);
		CHECK_INT(h.type, PQ_PAGE_DATA);
		CHECK_INT((int64_t)consumed + h.compressed_page_size, oi.pages[p].compressed_page_size);
	}
	pq_file_metadata_free(&md);
	tl_arena_free(&arena);
	tl_buf_free(&file);
	dataset_free(&d);
}

TEST(page_index_can_be_turned_off_and_pages_of_only_nan_drop_the_column_index)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_column c = pq_col("x", TL_PQ_DOUBLE, false, 1);
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_schema_add(s, &c);
	tl_pq_batch *b = tl_pq_batch_new(s, 100);
	for (int i = 0; i < 100; i++) {
		b->columns[0].v.f64[i] = i < 10 ? NAN : i;
		b->columns[0].valid[i] = 1;
	}
	b->nrows = 100;
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.page_rows = 10;
	const char *with = scratch("nan.parquet"), *without = scratch("off.parquet");
	CHECK_OK(write_batch(with, s, b, &o, &err), &err);
	o.write_page_index = false;
	CHECK_OK(write_batch(without, s, b, &o, &err), &err);
	const char *paths[2] = {with, without};
	for (int k = 0; k < 2; k++) {
		tl_input *in = tl_input_open_file(paths[k], &err);
		tl_pq_reader *r = tl_pq_reader_open(in, &err);
		CHECK(r != NULL);
		const tl_pq_page_info *pages;
		/* A page of only NaN has no bounds to give: like parquet-cpp, no ColumnIndex (and so no index) at all. */
		CHECK_INT(tl_pq_reader_page_index(r, 0, 0, &pages, &err), 0);
		tl_pq_reader_free(r);
		tl_input_close(in);
	}
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

/* ------------------------------------------------------------ rows a filter keeps */

/* Whether x op lit holds as Java orders values, or as IEEE compares numbers. */
static bool compare_holds(const tl_ice_type *type, tl_ice_expr_op op, const tl_ice_value *x, const tl_ice_value *lit)
{
	int java = tl_ice_value_compare(type, x, lit);
	bool by_java = (op == TL_ICE_EXPR_EQ && java == 0) || (op == TL_ICE_EXPR_LT && java < 0) ||
	               (op == TL_ICE_EXPR_LE && java <= 0) || (op == TL_ICE_EXPR_GT && java > 0) ||
	               (op == TL_ICE_EXPR_GE && java >= 0);
	if (type->id != TL_ICE_DOUBLE)
		return by_java;
	double a = x->v.f64, b = lit->v.f64;
	bool by_ieee = (op == TL_ICE_EXPR_EQ && a == b) || (op == TL_ICE_EXPR_LT && a < b) ||
	               (op == TL_ICE_EXPR_LE && a <= b) || (op == TL_ICE_EXPR_GT && a > b) ||
	               (op == TL_ICE_EXPR_GE && a >= b);
	return by_java || by_ieee;
}

/* The value of field id at row of a batch in the table's form (columns in field order). */
static bool batch_value(const tl_pq_batch *b, int64_t row, int32_t id, tl_ice_value *v)
{
	const tl_vector *vec = &b->columns[id - 1];
	memset(v, 0, sizeof(*v));
	if (tl_vector_is_null(vec, row))
		return false;
	switch (id) {
	case F_ID: v->v.i64 = vec->v.i64[row]; break;
	case F_K: v->v.i32 = vec->v.i32[row]; break;
	case F_F: v->v.f64 = vec->v.f64[row]; break;
	default:
		v->ptr = vec->v.bytes[row].ptr;
		v->len = vec->v.bytes[row].len;
		break;
	}
	return true;
}

static bool row_matches(const tl_ice_schema *schema, const tl_ice_expr *e, const tl_pq_batch *b, int64_t row)
{
	switch (e->op) {
	case TL_ICE_EXPR_TRUE: return true;
	case TL_ICE_EXPR_FALSE: return false;
	case TL_ICE_EXPR_AND: return row_matches(schema, e->left, b, row) && row_matches(schema, e->right, b, row);
	case TL_ICE_EXPR_OR: return row_matches(schema, e->left, b, row) || row_matches(schema, e->right, b, row);
	default: break;
	}
	tl_ice_value x;
	bool present = batch_value(b, row, e->field_id, &x);
	if (e->op == TL_ICE_EXPR_IS_NULL)
		return !present;
	if (e->op == TL_ICE_EXPR_NOT_NULL)
		return present;
	if (!present)
		return false;
	const tl_ice_type *type = &tl_ice_schema_find_id(schema, e->field_id)->type;
	if (e->op == TL_ICE_EXPR_IN) {
		for (int i = 0; i < e->nvalues; i++)
			if (compare_holds(type, TL_ICE_EXPR_EQ, &x, &e->values[i]))
				return true;
		return false;
	}
	return compare_holds(type, e->op, &x, &e->values[0]);
}

/* Whether the filter reads field id. */
static bool filter_reads(const tl_ice_expr *e, int32_t id)
{
	if (e->op == TL_ICE_EXPR_AND || e->op == TL_ICE_EXPR_OR)
		return filter_reads(e->left, id) || filter_reads(e->right, id);
	if (e->op == TL_ICE_EXPR_TRUE || e->op == TL_ICE_EXPR_FALSE)
		return false;
	return e->field_id == id;
}

static tl_ice_value random_literal(int32_t id, const dataset *d, tl_arena *arena)
{
	tl_ice_value v;
	memset(&v, 0, sizeof(v));
	int64_t row = rnd_below(d->rows);
	bool from_data = rnd_below(3) != 0;
	char text[32];
	switch (id) {
	case F_ID: v.v.i64 = from_data ? d->id[row] : rnd_below(d->rows + 20) - 10; break;
	case F_K: v.v.i32 = from_data ? d->k[row] : (int32_t)rnd_below(70) - 5; break;
	case F_F: {
		static const double special[] = {0.0, -0.0, NAN, INFINITY, -INFINITY};
		int64_t dice = rnd_below(6);
		v.v.f64 = dice < 5 && !from_data ? special[dice] : from_data ? d->f[row] : (double)rnd_below(200) - 60.0;
		break;
	}
	case F_S:
	case F_P:
		if (id == F_S)
			snprintf(text, sizeof(text), "%s", from_data ? d->s[row] : "v0");
		else
			snprintf(text, sizeof(text), "%s", from_data ? d->p[row] : "row-0000");
		if (!from_data && rnd_below(2) == 0)
			snprintf(text, sizeof(text), id == F_S ? "v%03d" : "row-%08d", (int)rnd_below(d->rows / 10 + 2));
		v.len = strlen(text);
		v.ptr = tl_arena_copy(arena, text, (uint32_t)v.len).ptr;
		break;
	}
	return v;
}

static const tl_ice_expr *random_filter(tl_arena *arena, const dataset *d, int depth)
{
	if (depth > 0 && rnd_below(3) != 0) {
		const tl_ice_expr *l = random_filter(arena, d, depth - 1), *r = random_filter(arena, d, depth - 1);
		return rnd_below(2) ? tl_ice_expr_and(arena, l, r) : tl_ice_expr_or(arena, l, r);
	}
	/* Mostly the id and f columns, whose pages the sorted shapes can rule out. */
	static const int32_t ids[] = {F_ID, F_ID, F_ID, F_K, F_F, F_F, F_S, F_P};
	int32_t id = ids[rnd_below(8)];
	static const tl_ice_expr_op ops[] = {TL_ICE_EXPR_EQ, TL_ICE_EXPR_EQ, TL_ICE_EXPR_LT, TL_ICE_EXPR_LE,
	                                     TL_ICE_EXPR_GT, TL_ICE_EXPR_GE, TL_ICE_EXPR_IN, TL_ICE_EXPR_IS_NULL,
	                                     TL_ICE_EXPR_NOT_NULL};
	tl_ice_expr_op op = ops[rnd_below(9)];
	if (op == TL_ICE_EXPR_IS_NULL || op == TL_ICE_EXPR_NOT_NULL)
		return tl_ice_expr_predicate(arena, op, id, NULL, 0);
	tl_ice_value values[4];
	int n = op == TL_ICE_EXPR_IN ? 1 + (int)rnd_below(4) : 1;
	for (int i = 0; i < n; i++)
		values[i] = random_literal(id, d, arena);
	return tl_ice_expr_predicate(arena, op, id, values, n);
}

/* The rows of a read that match the filter, every column, appended to `rows` as text. */
static void append_row(tl_buf *out, const tl_pq_batch *b, int64_t row)
{
	tl_ice_value v;
	tl_buf_printf(out, "%lld|", batch_value(b, row, F_ID, &v) ? (long long)v.v.i64 : -1LL);
	if (batch_value(b, row, F_K, &v))
		tl_buf_printf(out, "%d|", v.v.i32);
	else
		tl_buf_append_str(out, "null|");
	if (batch_value(b, row, F_F, &v)) {
		uint64_t bits;
		memcpy(&bits, &v.v.f64, 8);
		tl_buf_printf(out, "%016llx|", (unsigned long long)bits);
	} else {
		tl_buf_append_str(out, "null|");
	}
	for (int32_t id = F_S; id <= F_P; id++) {
		if (batch_value(b, row, id, &v)) {
			tl_buf_append(out, v.ptr, v.len);
			tl_buf_append_str(out, "|");
		} else {
			tl_buf_append_str(out, "null|");
		}
	}
	tl_buf_append_str(out, "\n");
}

/*
 * Reads the tasks with `filter` (pruning) or without, deferring the
 * columns the filter does not read when `defer`, and appends the rows that
 * match the filter. Deferred columns are loaded only for batches with a
 * matching row, as a filtering caller does.
 */
static int read_matching(const tl_ice_schema *schema, const tl_ice_scan_task *const *tasks, int ntasks,
                         const tl_ice_expr *filter, bool prune, bool defer, int64_t capacity, tl_buf *out,
                         tl_ice_reader_stats *stats, tl_error *err)
{
	tl_ice_reader *r = ice_reader_new(schema, prune ? filter : NULL, tasks, ntasks, NULL, 0, err);
	if (r == NULL)
		return -1;
	bool deferred[NFIELDS];
	for (int c = 0; c < NFIELDS; c++)
		deferred[c] = defer && !filter_reads(filter, c + 1) && rnd_below(3) != 0;
	int rc = tl_ice_reader_defer(r, deferred, err);
	tl_pq_batch *b = tl_ice_reader_batch_new(r, capacity);
	bool *match = malloc(sizeof(bool) * (size_t)capacity);
	int64_t n = 0;
	while (rc == 0 && (n = tl_ice_reader_next(r, b, err)) > 0) {
		bool any = false;
		for (int64_t i = 0; i < n; i++)
			any |= match[i] = row_matches(schema, filter, b, i);
		if (any && tl_ice_reader_load(r, b, err) < 0) {
			rc = -1;
			break;
		}
		for (int64_t i = 0; i < n; i++)
			if (match[i])
				append_row(out, b, i);
	}
	if (n < 0)
		rc = -1;
	*stats = *tl_ice_reader_stats_get(r);
	free(match);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	return rc;
}

/* A data file's deletes: ~4% of positions, and the rows whose k is one value. */
static int write_deletes(const char *data_path, const dataset *d, const char *pos_path, const char *eq_path,
                         int32_t eq_k, tl_error *err)
{
	tl_pq_column pcols[2] = {pq_col("file_path", TL_PQ_BYTE_ARRAY, true, ICE_POS_DELETE_FILE_PATH_ID),
	                         pq_col("pos", TL_PQ_INT64, true, ICE_POS_DELETE_POS_ID)};
	pcols[0].logical = TL_PQ_LOGICAL_STRING;
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_schema_add(s, &pcols[0]);
	tl_pq_schema_add(s, &pcols[1]);
	tl_pq_batch *b = tl_pq_batch_new(s, d->rows);
	int64_t n = 0;
	for (int64_t i = 0; i < d->rows; i++) {
		if (rnd_below(25) != 0)
			continue;
		b->columns[0].v.bytes[n] = (tl_bytes){(const uint8_t *)data_path, (uint32_t)strlen(data_path)};
		b->columns[1].v.i64[n++] = i;
	}
	b->nrows = n;
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	int rc = write_batch(pos_path, s, b, &o, err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	if (rc < 0)
		return -1;

	tl_pq_column kcol = pq_col("k", TL_PQ_INT32, false, F_K);
	s = tl_pq_schema_new();
	tl_pq_schema_add(s, &kcol);
	b = tl_pq_batch_new(s, 1);
	b->columns[0].v.i32[0] = eq_k;
	b->columns[0].valid[0] = 1;
	b->nrows = 1;
	rc = write_batch(eq_path, s, b, &o, err);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

static void set_task(tl_ice_scan_task *t, const char *path, const tl_ice_delete_file **deletes, int ndeletes)
{
	memset(t, 0, sizeof(*t));
	t->file.content = TL_ICE_CONTENT_DATA;
	t->file.file_path = (char *)path;
	t->file.file_format = "PARQUET";
	t->deletes = deletes;
	t->ndeletes = ndeletes;
}

static void set_delete(tl_ice_delete_file *d, int content, const char *path, int32_t *eq_ids, uint32_t neq)
{
	memset(d, 0, sizeof(*d));
	d->file.content = content;
	d->file.file_path = (char *)path;
	d->file.file_format = "PARQUET";
	d->file.equality_ids = eq_ids;
	d->file.n_equality_ids = neq;
}

/*
 * Runs `nfilters` random filters over the tasks, checking each filtered
 * read against the unfiltered one, and adds up what they read in *totals.
 */
/* What the reads of check_random_filters came to. */
typedef struct filter_totals {
	int64_t pages_skipped;
	int64_t bloom_skipped;         /* row groups */
	int64_t bytes_plain;           /* read without pruning */
	int64_t bytes_pruned;          /* with */
} filter_totals;

static void check_random_filters(const tl_ice_schema *schema, const tl_ice_scan_task *const *tasks, int ntasks,
                                 const dataset *d, int nfilters, filter_totals *totals)
{
	tl_error err;
	tl_error_clear(&err);
	tl_arena arena;
	tl_arena_init(&arena, 0);
	tl_buf want, got, text;
	tl_buf_init(&want);
	tl_buf_init(&got);
	tl_buf_init(&text);
	for (int i = 0; i < nfilters; i++) {
		tl_arena_reset(&arena);
		const tl_ice_expr *filter = random_filter(&arena, d, 2);
		CHECK(filter != NULL);
		tl_buf_reset(&want);
		tl_buf_reset(&got);
		tl_ice_reader_stats plain, pruned;
		int64_t capacity = rnd_below(2) ? 64 : 1000;
		CHECK_OK(read_matching(schema, tasks, ntasks, filter, false, false, capacity, &want, &plain, &err), &err);
		CHECK_OK(read_matching(schema, tasks, ntasks, filter, true, rnd_below(2) != 0, capacity, &got, &pruned, &err),
		         &err);
		if (want.len != got.len || (want.len > 0 && memcmp(want.data, got.data, want.len) != 0)) {
			tl_buf_reset(&text);
			tl_ice_expr_text(filter, schema, &text);
			tl_buf_append_byte(&text, 0);
			tl_test_fail(__FILE__, __LINE__, "filter %s: %zu bytes of matching rows without pruning, %zu with",
			             (const char *)text.data, want.len, got.len);
			break;
		}
		CHECK(pruned.pages_read <= plain.pages_read);
		totals->pages_skipped += pruned.pages_skipped;
		totals->bloom_skipped += pruned.row_groups_skipped_by_bloom;
		totals->bytes_plain += plain.bytes_read;
		totals->bytes_pruned += pruned.bytes_read;
	}
	tl_buf_free(&want);
	tl_buf_free(&got);
	tl_buf_free(&text);
	tl_arena_free(&arena);
}

TEST(page_skipping_returns_every_matching_row_at_its_position)
{
	static const shape shapes[] = {
		{.rows = 3000, .page_rows = 50, .row_group_rows = 1000, .sorted = true},
		{.rows = 2500, .page_rows = 7, .row_group_rows = 2500, .sorted = true, .codec = TL_PQ_ZSTD},
		{.rows = 2000, .page_rows = 100, .row_group_rows = 600, .sorted = false},
		{.rows = 1200, .page_rows = 300, .row_group_rows = 5000, .sorted = true, .codec = TL_PQ_SNAPPY},
		{.rows = 4000, .page_rows = 64, .row_group_rows = 4000, .sorted = true, .codec = TL_PQ_ZSTD},
	};
	tl_error err;
	tl_error_clear(&err);
	rng_state = 0x2545F4914F6CDD1DULL; /* the same data and filters whichever tests ran before */
	tl_ice_schema schema;
	CHECK_OK(data_ice_schema(&schema, &err), &err);
	filter_totals totals = {0};
	static const int bloom[] = {0, 3, 4};
	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		dataset d;
		dataset_make(&d, &shapes[k]);
		char name[64];
		snprintf(name, sizeof(name), "data%zu.parquet", k);
		const char *path = scratch(name);
		CHECK_OK(write_dataset(path, &d, &shapes[k], bloom, k % 2 ? 3 : 0, &err), &err);
		snprintf(name, sizeof(name), "pos%zu.parquet", k);
		const char *pos = scratch(name);
		snprintf(name, sizeof(name), "eq%zu.parquet", k);
		const char *eq = scratch(name);
		CHECK_OK(write_deletes(path, &d, pos, eq, d.k[d.rows / 2], &err), &err);

		int32_t eq_ids[1] = {F_K};
		tl_ice_delete_file dels[2];
		set_delete(&dels[0], TL_ICE_CONTENT_POSITION_DELETES, pos, NULL, 0);
		set_delete(&dels[1], TL_ICE_CONTENT_EQUALITY_DELETES, eq, eq_ids, 1);
		const tl_ice_delete_file *with_pos[1] = {&dels[0]}, *with_both[2] = {&dels[0], &dels[1]};
		tl_ice_scan_task t[3];
		set_task(&t[0], path, NULL, 0);
		set_task(&t[1], path, with_pos, 1);
		set_task(&t[2], path, with_both, 2);
		for (int variant = 0; variant < 3; variant++) {
			const tl_ice_scan_task *tasks[1] = {&t[variant]};
			check_random_filters(&schema, tasks, 1, &d, 25, &totals);
			if (tl_test_failed())
				break;
		}
		dataset_free(&d);
		if (tl_test_failed())
			break;
	}
	/* Pruning happened, so the equality above was tested with gaps between batches... */
	CHECK(totals.pages_skipped > 1000);
	CHECK(totals.bloom_skipped > 0);
	/* ...and fetching only the pages decoded (many random filters prune little), which the same rows came out of. */
	if (totals.bytes_pruned * 4 > totals.bytes_plain * 3)
		tl_test_fail(__FILE__, __LINE__, "%lld bytes read with pruning, %lld without",
		             (long long)totals.bytes_pruned, (long long)totals.bytes_plain);
	tl_ice_schema_free(&schema);
}

TEST(page_skipping_reads_one_page_of_a_sorted_column_for_a_point_lookup)
{
	tl_error err;
	tl_error_clear(&err);
	shape sh = {.rows = 5000, .page_rows = 100, .row_group_rows = 5000, .sorted = true};
	dataset d;
	dataset_make(&d, &sh);
	const char *path = scratch("lookup.parquet");
	CHECK_OK(write_dataset(path, &d, &sh, NULL, 0, &err), &err);
	tl_ice_schema schema;
	CHECK_OK(data_ice_schema(&schema, &err), &err);
	tl_arena arena;
	tl_arena_init(&arena, 0);
	tl_ice_value v = {.v.i64 = 4321};
	const tl_ice_expr *filter = tl_ice_expr_predicate(&arena, TL_ICE_EXPR_EQ, F_ID, &v, 1);
	tl_ice_scan_task t;
	set_task(&t, path, NULL, 0);
	const tl_ice_scan_task *tasks[1] = {&t};
	tl_ice_reader *r = ice_reader_new(&schema, filter, tasks, 1, NULL, 0, &err);
	CHECK(r != NULL);
	tl_pq_batch *b = tl_ice_reader_batch_new(r, 1024);
	int64_t n, rows = 0;
	bool found = false;
	while ((n = tl_ice_reader_next(r, b, &err)) > 0) {
		for (int64_t i = 0; i < n; i++)
			found |= b->columns[0].v.i64[i] == 4321 && memcmp(b->columns[4].v.bytes[i].ptr, d.p[4321], 13) == 0;
		rows += n;
	}
	CHECK_INT(n, 0);
	CHECK(found);
	/* The one page of id that may hold 4321 (pages of 100 rows, some shorter where a dictionary filled). */
	CHECK(rows > 0 && rows <= 100);
	const tl_ice_reader_stats *st = tl_ice_reader_stats_get(r);
	/* Each column decodes the one or two pages holding those rows, of some 50. */
	if (st->pages_read < NFIELDS || st->pages_read > 2 * NFIELDS || st->pages_skipped < NFIELDS * 47)
		tl_test_fail(__FILE__, __LINE__, "%lld pages read, %lld skipped", (long long)st->pages_read,
		             (long long)st->pages_skipped);
	CHECK_INT(st->row_groups_read, 1);
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_arena_free(&arena);
	tl_ice_schema_free(&schema);
	dataset_free(&d);
}

/*
 * The bytes a point lookup of id `id` in the file at `path` reads, every
 * column but id deferred and loaded for the batch holding the row, as the
 * cold scan does; checks that the row comes back whole. -1 on failure.
 */
static int64_t lookup_bytes(const tl_ice_schema *schema, const char *path, const dataset *d, int64_t id)
{
	tl_error err;
	tl_error_clear(&err);
	tl_arena arena;
	tl_arena_init(&arena, 0);
	tl_ice_value v = {.v.i64 = id};
	const tl_ice_expr *filter = tl_ice_expr_predicate(&arena, TL_ICE_EXPR_EQ, F_ID, &v, 1);
	tl_ice_scan_task t;
	set_task(&t, path, NULL, 0);
	const tl_ice_scan_task *tasks[1] = {&t};
	tl_ice_reader *r = ice_reader_new(schema, filter, tasks, 1, NULL, 0, &err);
	static const bool deferred[NFIELDS] = {false, true, true, true, true};
	tl_pq_batch *b = NULL;
	int64_t n = -1, found = 0, bytes = -1;
	if (r != NULL && tl_ice_reader_defer(r, deferred, &err) == 0) {
		b = tl_ice_reader_batch_new(r, 1024);
		while ((n = tl_ice_reader_next(r, b, &err)) > 0) {
			for (int64_t i = 0; i < n; i++) {
				if (b->columns[0].v.i64[i] != id)
					continue;
				if (tl_ice_reader_load(r, b, &err) < 0) {
					n = -1;
					break;
				}
				tl_bytes p = b->columns[4].v.bytes[i];
				found += p.len == strlen(d->p[id]) && memcmp(p.ptr, d->p[id], p.len) == 0;
			}
			if (n < 0)
				break;
		}
	}
	if (n != 0 || found != 1)
		tl_test_fail(__FILE__, __LINE__, "looking up id %lld in %s: %lld found (%s)", (long long)id, path,
		             (long long)found, err.message);
	else
		bytes = tl_ice_reader_stats_get(r)->bytes_read;
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_arena_free(&arena);
	return bytes;
}

/* A point lookup reads its pages, the page indexes and the footer: under a tenth of the file here. */
TEST(page_fetch_reads_the_pages_a_point_lookup_decodes_and_dictionaries_only_when_needed)
{
	tl_error err;
	tl_error_clear(&err);
	/* Uncompressed, so sizes are plain: every column's dictionary (4 KiB at most) fills early but k's. */
	shape sh = {.rows = 20000, .page_rows = 100, .row_group_rows = 20000, .sorted = true};
	rng_state = 0x9E3779B97F4A7C15ULL;
	dataset d;
	dataset_make(&d, &sh);
	const char *path = scratch("fetch.parquet");
	CHECK_OK(write_dataset(path, &d, &sh, NULL, 0, &err), &err);
	tl_ice_schema schema;
	CHECK_OK(data_ice_schema(&schema, &err), &err);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	/*
	 * Early rows are in dictionary-encoded pages of every column, late ones
	 * in PLAIN pages of all but k: the three or four full dictionaries are
	 * fetched for the first only, though its pages are the smaller.
	 */
	int64_t early = lookup_bytes(&schema, path, &d, 150), late = lookup_bytes(&schema, path, &d, 17321);
	if (early <= 0 || late <= 0 || early * 10 > st.st_size || late * 10 > st.st_size || late + 2 * 4096 > early)
		tl_test_fail(__FILE__, __LINE__, "a %lld-byte file: %lld bytes read for an early row, %lld for a late one",
		             (long long)st.st_size, (long long)early, (long long)late);
	tl_ice_schema_free(&schema);
	dataset_free(&d);
}

/* Writers put every chunk's page index before the footer: the first index asked for brings them all. */
TEST(page_indexes_of_every_chunk_come_in_one_read)
{
	tl_error err;
	tl_error_clear(&err);
	shape sh = {.rows = 3000, .page_rows = 50, .row_group_rows = 1000, .sorted = true};
	dataset d;
	dataset_make(&d, &sh);
	const char *path = scratch("indexes.parquet");
	CHECK_OK(write_dataset(path, &d, &sh, NULL, 0, &err), &err);
	tl_input *in = tl_input_open_file(path, &err);
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	CHECK(r != NULL);
	int64_t reads_open, reads, bytes;
	tl_pq_reader_io_counts(r, &reads_open, &bytes);
	for (int g = 0; g < 3; g++) {
		for (int c = 0; c < NFIELDS; c++) {
			const tl_pq_page_info *pages;
			int n = tl_pq_reader_page_index(r, g, c, &pages, &err);
			/* 50-row pages, and one cut short where a dictionary filled */
			CHECK(n >= 20 && n <= 21);
			CHECK_INT(pages[n - 1].first_row + pages[n - 1].rows, 1000);
		}
	}
	tl_pq_reader_io_counts(r, &reads, &bytes);
	CHECK_INT(reads - reads_open, 1);
	tl_pq_reader_free(r);
	tl_input_close(in);
	dataset_free(&d);
}

/* An input over a file that counts its reads and asks for reads this close together to be merged. */
typedef struct remote_input {
	tl_input base;
	tl_input *file;
	int reads;
} remote_input;

static int remote_read_at(tl_input *in, uint64_t offset, void *buf, size_t len, tl_error *err)
{
	remote_input *r = (remote_input *)in;
	r->reads++;
	return tl_input_read(r->file, offset, buf, len, err);
}

/*
 * The reads a point lookup of row `row` takes after the footer: the page
 * holding it, of every column, read through an input with coalesce_gap
 * `gap`. The row's values are checked.
 */
static int lookup_reads(const char *path, const dataset *d, int64_t row, uint64_t gap)
{
	tl_error err;
	tl_error_clear(&err);
	remote_input in = {.base = {.read_at = remote_read_at, .coalesce_gap = gap}};
	in.file = tl_input_open_file(path, &err);
	if (in.file == NULL)
		return -1;
	in.base.size = in.file->size;
	in.base.name = in.file->name;
	tl_pq_reader *r = tl_pq_reader_open(&in.base, &err);
	int opened = in.reads, reads = -1;
	const tl_pq_page_info *pages;
	int n = r != NULL ? tl_pq_reader_page_index(r, 0, 0, &pages, &err) : 0;
	int p = 0;
	while (p < n && pages[p].first_row + pages[p].rows <= row)
		p++;
	tl_pq_row_range want = {p < n ? pages[p].first_row : 0, p < n ? pages[p].first_row + pages[p].rows : 0};
	tl_pq_batch *b = NULL;
	if (p < n && tl_pq_reader_select_rows(r, 0, &want, 1, &err) == 0) {
		b = tl_pq_reader_batch_new(r, want.end - want.start);
		bool found = false;
		int64_t got;
		while ((got = tl_pq_reader_next(r, b, &err)) > 0)
			for (int64_t i = 0; i < got; i++)
				if (b->columns[0].v.i64[i] == row)
					found = b->columns[4].v.bytes[i].len == strlen(d->p[row]) &&
					        memcmp(b->columns[4].v.bytes[i].ptr, d->p[row], strlen(d->p[row])) == 0 &&
					        b->columns[1].v.i32[i] == d->k[row];
		if (got == 0 && found)
			reads = in.reads - opened;
	}
	if (reads < 0)
		tl_test_fail(__FILE__, __LINE__, "looking up row %lld of %s: %s", (long long)row, path, err.message);
	tl_pq_batch_free(b);
	tl_pq_reader_free(r);
	tl_input_close(in.file);
	return reads;
}

/*
 * Over object storage each read is a round trip: a point lookup's reads
 * are the page index region, the pages (one merged read when they lie
 * within the input's coalesce_gap), and the dictionaries they need.
 */
TEST(page_fetch_merges_a_point_lookups_reads_where_the_input_asks)
{
	tl_error err;
	tl_error_clear(&err);
	shape sh = {.rows = 20000, .page_rows = 100, .row_group_rows = 20000, .sorted = true, .codec = TL_PQ_ZSTD};
	rng_state = 0x9E3779B97F4A7C15ULL;
	dataset d;
	dataset_make(&d, &sh);
	const char *path = scratch("remote.parquet");
	CHECK_OK(write_dataset(path, &d, &sh, NULL, 0, &err), &err);
	/* Row 17321: PLAIN pages but k's, whose dictionary comes in a second round. */
	int apart = lookup_reads(path, &d, 17321, 0), merged = lookup_reads(path, &d, 17321, 1 << 20);
	/* The index region, then five pages apart and one dictionary, or two merged reads. */
	CHECK_INT(apart, 1 + 5 + 1);
	CHECK_INT(merged, 1 + 1 + 1);
	dataset_free(&d);
}

/* ------------------------------------------------------------ malformed indexes */

/*
 * Rewrites the file at `src` into `dst` with the page index of every
 * chunk of column `column` broken in way `how`; the data stays as it was.
 */
static int break_index(const char *src, const char *dst, int column, int how, tl_error *err)
{
	tl_input *in = tl_input_open_file(src, err);
	if (in == NULL)
		return -1;
	tl_buf file, out;
	tl_buf_init(&file);
	tl_buf_init(&out);
	uint8_t *bytes = tl_buf_extend(&file, (size_t)in->size);
	int rc = tl_input_read(in, 0, bytes, (size_t)in->size, err);
	tl_input_close(in);
	uint32_t footer_len;
	memcpy(&footer_len, bytes + file.len - 8, 4);
	size_t footer_start = file.len - 8 - footer_len;
	pq_file_metadata md;
	if (rc == 0)
		rc = pq_file_metadata_decode(bytes + footer_start, footer_len, &md, err);
	if (rc < 0) {
		tl_buf_free(&file);
		return -1;
	}
	tl_arena arena;
	tl_arena_init(&arena, 0);
	tl_buf_append(&out, bytes, footer_start);
	for (int g = 0; g < md.nrow_groups; g++) {
		pq_column_chunk *cc = &md.row_groups[g].columns[column];
		pq_offset_index oi;
		pq_column_index ci;
		tl_error ignored;
		if (pq_offset_index_decode(bytes + cc->offset_index_offset, (size_t)cc->offset_index_length, &arena, &oi,
		                           &ignored) < 0 ||
		    pq_column_index_decode(bytes + cc->column_index_offset, (size_t)cc->column_index_length, &arena, &ci,
		                           &ignored) < 0)
			continue;
		switch (how) {
		case 0: /* cut short by a byte */
			cc->column_index_length -= 1;
			break;
		case 1: /* past the end of the file */
			cc->offset_index_offset = (int64_t)file.len + 100;
			break;
		case 2: /* rows that do not ascend */
			if (oi.npages > 2) {
				int64_t t = oi.pages[1].first_row_index;
				oi.pages[1].first_row_index = oi.pages[2].first_row_index;
				oi.pages[2].first_row_index = t;
			} else {
				oi.pages[0].first_row_index = 1;
			}
			cc->offset_index_offset = (int64_t)out.len;
			pq_offset_index_encode(&oi, &out);
			cc->offset_index_length = (int32_t)((int64_t)out.len - cc->offset_index_offset);
			break;
		case 5: /* every page a byte shorter than it is */
		case 6: /* every page a byte later and shorter: in its header */
		case 7: /* the first page starts a byte early: in the dictionary page */
			for (int32_t p = 0; p < oi.npages; p++) {
				if (how == 7 && p > 0)
					break;
				oi.pages[p].offset += how == 5 ? 0 : how == 6 ? 1 : -1;
				oi.pages[p].compressed_page_size += how == 7 ? 1 : -1;
			}
			cc->offset_index_offset = (int64_t)out.len;
			pq_offset_index_encode(&oi, &out);
			cc->offset_index_length = (int32_t)((int64_t)out.len - cc->offset_index_offset);
			break;
		case 3: /* a page short in the ColumnIndex */
			ci.npages--;
			ci.nmin--;
			ci.nmax--;
			if (ci.nnull_counts > 0)
				ci.nnull_counts--;
			cc->column_index_offset = (int64_t)out.len;
			pq_column_index_encode(&ci, &out);
			cc->column_index_length = (int32_t)((int64_t)out.len - cc->column_index_offset);
			break;
		default: /* garbage in place of the ColumnIndex */
			memset(out.data + cc->column_index_offset, 0xFF, (size_t)cc->column_index_length);
			break;
		}
	}
	size_t start = out.len;
	pq_file_metadata_encode(&md, &out);
	uint32_t len = (uint32_t)(out.len - start);
	tl_buf_append(&out, &len, 4);
	tl_buf_append(&out, "PAR1", 4);
	tl_output *o = tl_output_create_file(dst, 0, err);
	rc = o == NULL ? -1 : tl_output_write(o, out.data, out.len, err);
	if (o != NULL && rc == 0)
		rc = o->finish(o, err);
	tl_output_close(o);
	pq_file_metadata_free(&md);
	tl_arena_free(&arena);
	tl_buf_free(&file);
	tl_buf_free(&out);
	return rc;
}

/*
 * An index that breaks the format's rules counts as absent; one that only
 * misplaces pages (which the footer cannot tell) is found out by the pages
 * fetched for it, and their chunk is read whole.
 */
TEST(page_skipping_treats_a_malformed_index_as_none)
{
	tl_error err;
	tl_error_clear(&err);
	shape sh = {.rows = 2000, .page_rows = 40, .row_group_rows = 800, .sorted = true};
	dataset d;
	dataset_make(&d, &sh);
	const char *good = scratch("good.parquet");
	CHECK_OK(write_dataset(good, &d, &sh, NULL, 0, &err), &err);
	tl_ice_schema schema;
	CHECK_OK(data_ice_schema(&schema, &err), &err);
	/* Row 200 is in a dictionary-encoded page of id, not its first. */
	int64_t good_bytes = lookup_bytes(&schema, good, &d, 200);
	for (int how = 0; how < 8; how++) {
		const char *bad = scratch("bad.parquet");
		CHECK_OK(break_index(good, bad, 0, how, &err), &err);
		tl_input *in = tl_input_open_file(bad, &err);
		tl_pq_reader *r = tl_pq_reader_open(in, &err);
		CHECK(r != NULL);
		const tl_pq_page_info *pages;
		bool misplaced = how >= 5;
		CHECK_INT(tl_pq_reader_page_index(r, 0, 0, &pages, &err) > 0, misplaced);
		CHECK(tl_pq_reader_page_index(r, 0, 2, &pages, &err) > 0); /* other columns keep theirs */
		tl_pq_reader_free(r);
		tl_input_close(in);
		if (misplaced) {
			/* The pages still prune, but id's chunk is fetched whole. */
			int64_t bad_bytes = lookup_bytes(&schema, bad, &d, 200);
			if (bad_bytes < good_bytes + 800 * 8 / 2)
				tl_test_fail(__FILE__, __LINE__, "index broken in way %d: %lld bytes read, %lld with a good one", how,
				             (long long)bad_bytes, (long long)good_bytes);
		}

		tl_ice_scan_task t;
		set_task(&t, bad, NULL, 0);
		const tl_ice_scan_task *tasks[1] = {&t};
		filter_totals totals = {0};
		check_random_filters(&schema, tasks, 1, &d, 10, &totals);
		if (tl_test_failed())
			break;
	}
	tl_ice_schema_free(&schema);
	dataset_free(&d);
}

/* ------------------------------------------------------------ bloom filters */

TEST(bloom_xxhash64_matches_the_reference_vectors)
{
	/* From xxHash's reference implementation (XXH64, seed 0). */
	CHECK(pq_xxhash64("", 0, 0) == UINT64_C(0xEF46DB3751D8E999));
	CHECK(pq_xxhash64("a", 1, 0) == UINT64_C(0xD24EC4F1A98C6E5B));
	CHECK(pq_xxhash64("abc", 3, 0) == UINT64_C(0x44BC2CF5AD770999));
	const char *long_text = "Nobody inspects the spammish repetition";
	CHECK(pq_xxhash64(long_text, strlen(long_text), 0) == UINT64_C(0xFBCEA83C8A378BF1));
}

TEST(bloom_filter_sizes_follow_the_spec)
{
	CHECK_INT(pq_bloom_optimal_bytes(1, 0.01, 1 << 20), PQ_BLOOM_MIN_BYTES);
	/* 1M distinct values at 1%: ~1.2 MB ideal, capped at 1 MiB. */
	CHECK_INT(pq_bloom_optimal_bytes(1000000, 0.01, 1 << 20), 1 << 20);
	int64_t bytes = pq_bloom_optimal_bytes(10000, 0.01, 1 << 20);
	CHECK(bytes >= 8192 && bytes <= 32768 && (bytes & (bytes - 1)) == 0);
}

TEST(bloom_filter_has_no_false_negatives_and_prunes_absent_values)
{
	tl_error err;
	tl_error_clear(&err);
	/* Columns of every hashable kind: long, int, double, string, uuid. */
	tl_pq_column cols[5] = {pq_col("l", TL_PQ_INT64, true, 1), pq_col("i", TL_PQ_INT32, false, 2),
	                        pq_col("d", TL_PQ_DOUBLE, true, 3), pq_col("s", TL_PQ_BYTE_ARRAY, true, 4),
	                        pq_col("u", TL_PQ_FIXED_LEN_BYTE_ARRAY, true, 5)};
	cols[3].logical = TL_PQ_LOGICAL_STRING;
	cols[4].type_length = 16;
	cols[4].logical = TL_PQ_LOGICAL_UUID;
	tl_pq_schema *s = tl_pq_schema_new();
	for (int c = 0; c < 5; c++)
		tl_pq_schema_add(s, &cols[c]);
	const int64_t n = 4000;
	tl_pq_batch *b = tl_pq_batch_new(s, n);
	char (*text)[16] = malloc(16 * (size_t)n);
	uint8_t (*uuid)[16] = malloc(16 * (size_t)n);
	for (int64_t i = 0; i < n; i++) {
		b->columns[0].v.i64[i] = (int64_t)(rnd() >> 1);
		b->columns[1].v.i32[i] = (int32_t)rnd();
		b->columns[1].valid[i] = i % 7 != 0;
		b->columns[2].v.f64[i] = i % 100 == 0 ? 0.0 : (double)(rnd() % 100000) / 7.0;
		snprintf(text[i], 16, "k%llu", (unsigned long long)(rnd() % 1000000000));
		b->columns[3].v.bytes[i] = (tl_bytes){(const uint8_t *)text[i], (uint32_t)strlen(text[i])};
		for (int k = 0; k < 16; k++)
			uuid[i][k] = (uint8_t)rnd();
		b->columns[4].v.bytes[i] = (tl_bytes){uuid[i], 16};
	}
	b->nrows = n;
	tl_pq_writer_options o;
	tl_pq_writer_options_init(&o);
	o.row_group_rows = 1000;
	int bloom[5] = {0, 1, 2, 3, 4};
	o.bloom_columns = bloom;
	o.nbloom_columns = 5;
	const char *path = scratch("bloom.parquet");
	CHECK_OK(write_batch(path, s, b, &o, &err), &err);

	tl_input *in = tl_input_open_file(path, &err);
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	CHECK(r != NULL);
	int64_t absent = 0, absent_found = 0;
	for (int g = 0; g < 4; g++) {
		for (int c = 0; c < 5; c++) {
			CHECK(tl_pq_reader_has_bloom_filter(r, g, c));
			for (int64_t i = g * 1000; i < (g + 1) * 1000; i++) {
				if (c == 1 && !b->columns[1].valid[i])
					continue;
				const tl_vector *v = &b->columns[c];
				tl_bytes plain = c == 0   ? (tl_bytes){(const uint8_t *)&v->v.i64[i], 8}
				                 : c == 1 ? (tl_bytes){(const uint8_t *)&v->v.i32[i], 4}
				                 : c == 2 ? (tl_bytes){(const uint8_t *)&v->v.f64[i], 8}
				                          : v->v.bytes[i];
				CHECK_INT(tl_pq_reader_bloom_may_contain(r, g, c, &plain, 1, &err), 1);
			}
		}
		/* Values of another row group are (mostly) not in this one's filter. */
		for (int64_t i = ((g + 1) % 4) * 1000; i < ((g + 1) % 4) * 1000 + 200; i++) {
			tl_bytes plain = {(const uint8_t *)&b->columns[0].v.i64[i], 8};
			absent++;
			absent_found += tl_pq_reader_bloom_may_contain(r, g, 0, &plain, 1, &err);
		}
	}
	CHECK(absent_found * 20 < absent); /* the target is 1% false positives */
	tl_pq_reader_free(r);
	tl_input_close(in);

	/* Through the Iceberg reader: = and IN on absent values skip row groups. */
	tl_ice_field f[5];
	static const tl_ice_type_id types[5] = {TL_ICE_LONG, TL_ICE_INT, TL_ICE_DOUBLE, TL_ICE_STRING, TL_ICE_UUID};
	static const char *names[5] = {"l", "i", "d", "s", "u"};
	for (int c = 0; c < 5; c++) {
		memset(&f[c], 0, sizeof(f[c]));
		f[c].id = c + 1;
		f[c].name = (char *)names[c];
		f[c].required = c != 1;
		f[c].type.id = types[c];
	}
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, f, 5, &err), &err);
	tl_ice_scan_task t;
	set_task(&t, path, NULL, 0);
	const tl_ice_scan_task *tasks[1] = {&t};
	tl_arena arena;
	tl_arena_init(&arena, 0);
	struct {
		int32_t id;
		tl_ice_value v;
		int64_t want_rows_at_least;
		int64_t want_bloom_skips_at_least;
	} cases[] = {
		{1, {.v.i64 = b->columns[0].v.i64[2500]}, 1, 3},
		{1, {.v.i64 = INT64_C(1) << 62}, 0, 4},      /* inside every row group's min and max */
		{2, {.v.i32 = b->columns[1].v.i32[1002]}, 1, 3},
		{3, {.v.f64 = -0.0}, 1, 0},   /* a zero matches the other zero: stored +0.0 rows */
		{3, {.v.f64 = 0.5}, 0, 4},
		{4, {.ptr = (const uint8_t *)text[10], .len = strlen(text[10])}, 1, 3},
		{4, {.ptr = (const uint8_t *)"k5x", .len = 3}, 0, 4},
		{5, {.ptr = uuid[3999], .len = 16}, 1, 3},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const tl_ice_expr *filter = tl_ice_expr_predicate(&arena, TL_ICE_EXPR_EQ, cases[k].id, &cases[k].v, 1);
		tl_ice_reader *ir = ice_reader_new(&schema, filter, tasks, 1, NULL, 0, &err);
		CHECK(ir != NULL);
		tl_pq_batch *out = tl_ice_reader_batch_new(ir, 1000);
		int64_t got, rows = 0;
		while ((got = tl_ice_reader_next(ir, out, &err)) > 0)
			rows += got;
		CHECK_INT(got, 0);
		const tl_ice_reader_stats *st = tl_ice_reader_stats_get(ir);
		if (rows < cases[k].want_rows_at_least || st->row_groups_skipped_by_bloom < cases[k].want_bloom_skips_at_least)
			tl_test_fail(__FILE__, __LINE__, "case %zu: %lld rows, %lld row groups skipped by bloom filters", k,
			             (long long)rows, (long long)st->row_groups_skipped_by_bloom);
		tl_pq_batch_free(out);
		tl_ice_reader_free(ir);
	}
	/* IN with one present value keeps its row group only. */
	tl_ice_value in_values[3] = {{.v.i64 = 1}, {.v.i64 = b->columns[0].v.i64[10]}, {.v.i64 = 3}};
	const tl_ice_expr *filter = tl_ice_expr_predicate(&arena, TL_ICE_EXPR_IN, 1, in_values, 3);
	tl_ice_reader *ir = ice_reader_new(&schema, filter, tasks, 1, NULL, 0, &err);
	CHECK(ir != NULL);
	tl_pq_batch *out = tl_ice_reader_batch_new(ir, 1000);
	CHECK_INT(tl_ice_reader_next(ir, out, &err), 1000);
	CHECK_INT(out->columns[0].v.i64[10], in_values[1].v.i64);
	CHECK_INT(tl_ice_reader_next(ir, out, &err), 0);
	CHECK(tl_ice_reader_stats_get(ir)->row_groups_skipped_by_bloom >= 2);
	tl_pq_batch_free(out);
	tl_ice_reader_free(ir);

	tl_arena_free(&arena);
	tl_ice_schema_free(&schema);
	free(text);
	free(uuid);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
}

/*
 * Parquet's statistics count no NaNs, so on their own a row group's or a
 * page's bounds cannot rule out `f > c` (a NaN is above every number). A
 * file whose metrics count no NaN in f lends that to each of its row
 * groups and pages: they prune, and the same rows come out.
 */
TEST(a_files_zero_nan_count_lets_its_row_groups_and_pages_prune_floats)
{
	tl_error err;
	tl_error_clear(&err);
	rng_state = 0x9E3779B97F4A7C15ULL;
	shape sh = {.rows = 3000, .page_rows = 50, .row_group_rows = 1000, .sorted = true};
	dataset d;
	dataset_make(&d, &sh);
	for (int64_t i = 0; i < d.rows; i++)
		if (isnan(d.f[i]))
			d.f[i] = 1.5;
	const char *path = scratch("no_nans.parquet");
	CHECK_OK(write_dataset(path, &d, &sh, NULL, 0, &err), &err);
	tl_ice_schema schema;
	CHECK_OK(data_ice_schema(&schema, &err), &err);
	int32_t ids[1] = {F_F};
	int64_t none[1] = {0};
	tl_ice_scan_task counted, uncounted;
	set_task(&counted, path, NULL, 0);
	counted.file.nan_value_counts = (tl_ice_long_map){.n = 1, .keys = ids, .values = none};
	set_task(&uncounted, path, NULL, 0);

	/* f is i / 10 - 20 but for nulls and zeros: f > 250 holds in the last pages of the last row group only */
	tl_arena arena;
	tl_arena_init(&arena, 0);
	tl_ice_value v = {.v.f64 = 250.0};
	const tl_ice_expr *filter = tl_ice_expr_predicate(&arena, TL_ICE_EXPR_GT, F_F, &v, 1);
	const tl_ice_scan_task *with[1] = {&counted}, *without[1] = {&uncounted};
	tl_buf got, want;
	tl_buf_init(&got);
	tl_buf_init(&want);
	tl_ice_reader_stats pruned, plain;
	CHECK_OK(read_matching(&schema, with, 1, filter, true, false, 1000, &got, &pruned, &err), &err);
	CHECK_OK(read_matching(&schema, without, 1, filter, true, false, 1000, &want, &plain, &err), &err);
	CHECK(got.len == want.len && got.len > 0 && memcmp(got.data, want.data, got.len) == 0);
	CHECK(pruned.row_groups_skipped == 2 && plain.row_groups_skipped == 0);
	CHECK(pruned.pages_read < plain.pages_read / 4);
	tl_buf_free(&got);
	tl_buf_free(&want);

	/* random filters (NaN literals among them) over the counted file match the unpruned read */
	filter_totals totals = {0};
	check_random_filters(&schema, with, 1, &d, 60, &totals);
	CHECK(totals.pages_skipped > 0);
	tl_arena_free(&arena);
	tl_ice_schema_free(&schema);
	dataset_free(&d);
}
