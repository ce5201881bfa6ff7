/*
 * pqindex: the interop suite's window into our reading of Parquet page
 * indexes and bloom filters, on files other writers produce.
 *
 *   pqindex pages FILE
 *   pqindex rows FILE COLUMN LO HI
 *   pqindex probe FILE COLUMN VALUE
 *
 * `pages` prints, per row group and column, how many pages the chunk's
 * page index lists ("rg 0 col id pages 12"; 0 when it has none usable)
 * and whether the chunk has a bloom filter.
 *
 * `rows` reads the file the way a filtered scan does: the pages of the
 * numeric column COLUMN whose page index bounds may hold a value in
 * [LO, HI] (and pages without bounds) are selected with
 * tl_pq_reader_select_rows, every column is read, and each row is printed
 * as a tab-separated line: its position in the file, then its values
 * (NULL for nulls; doubles with %.17g; byte arrays as they are). The last
 * line is "pages read R skipped S".
 *
 * `probe` asks each row group's bloom filter of COLUMN whether VALUE (text
 * parsed as the column's physical type) may be present and prints one
 * line per row group: "rg N excludes true|false", or "rg N none" without
 * a filter, as DuckDB's parquet_bloom_probe answers.
 *
 * Errors go to stderr with exit 1 (usage errors: exit 2).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/io.h"
#include "tierlake/parquet.h"

static int usage(void)
{
	fprintf(stderr, "usage: pqindex pages FILE | rows FILE COLUMN LO HI | probe FILE COLUMN VALUE\n");
	return 2;
}

static int fail(const char *what, const tl_error *err)
{
	fprintf(stderr, "pqindex: %s: %s\n", what, err->message);
	return 1;
}

static int pages(tl_pq_reader *r)
{
	const tl_pq_schema *s = tl_pq_reader_schema(r);
	tl_error err;
	tl_error_clear(&err);
	for (int g = 0; g < tl_pq_reader_num_row_groups(r); g++)
		for (int c = 0; c < s->ncolumns; c++) {
			const tl_pq_page_info *p;
			int n = tl_pq_reader_page_index(r, g, c, &p, &err);
			if (n < 0)
				return fail("reading a page index", &err);
			printf("rg %d col %s pages %d bloom %s\n", g, s->columns[c].name, n,
			       tl_pq_reader_has_bloom_filter(r, g, c) ? "yes" : "no");
		}
	return 0;
}

/* A statistic of a numeric column as a double (for the range test only). */
static double as_double(const tl_pq_column *col, const union tl_pq_stat_value *v)
{
	switch (col->physical) {
	case TL_PQ_INT32: return (double)v->i32;
	case TL_PQ_INT64: return (double)v->i64;
	case TL_PQ_FLOAT: return (double)v->f32;
	default: return v->f64;
	}
}

static void print_value(const tl_pq_column *col, const tl_vector *v, int64_t i)
{
	if (tl_vector_is_null(v, i)) {
		fputs("NULL", stdout);
		return;
	}
	switch (col->physical) {
	case TL_PQ_BOOLEAN: printf("%d", v->v.b[i]); break;
	case TL_PQ_INT32: printf("%d", v->v.i32[i]); break;
	case TL_PQ_INT64:
	case TL_PQ_INT96: printf("%lld", (long long)v->v.i64[i]); break;
	case TL_PQ_FLOAT: printf("%.9g", (double)v->v.f32[i]); break;
	case TL_PQ_DOUBLE: printf("%.17g", v->v.f64[i]); break;
	default: fwrite(v->v.bytes[i].ptr, 1, v->v.bytes[i].len, stdout); break;
	}
}

static int rows(tl_pq_reader *r, int column, double lo, double hi)
{
	const tl_pq_schema *s = tl_pq_reader_schema(r);
	const tl_pq_column *col = &s->columns[column];
	if (col->physical != TL_PQ_INT32 && col->physical != TL_PQ_INT64 && col->physical != TL_PQ_FLOAT &&
	    col->physical != TL_PQ_DOUBLE) {
		fprintf(stderr, "pqindex: column %s is not numeric\n", col->name);
		return 2;
	}
	tl_error err;
	tl_error_clear(&err);
	int ngroups = tl_pq_reader_num_row_groups(r);
	int64_t *start = calloc((size_t)ngroups + 1, sizeof(int64_t));
	for (int g = 0; g < ngroups; g++) {
		start[g + 1] = start[g] + tl_pq_reader_row_group_rows(r, g);
		const tl_pq_page_info *p;
		int n = tl_pq_reader_page_index(r, g, column, &p, &err);
		if (n < 0)
			return fail("reading a page index", &err);
		if (n == 0)
			continue;
		tl_pq_row_range *ranges = calloc((size_t)n, sizeof(*ranges));
		int nranges = 0;
		for (int k = 0; k < n; k++) {
			bool keep = !p[k].stats.has_min_max ||
			            !(as_double(col, &p[k].stats.max) < lo || as_double(col, &p[k].stats.min) > hi);
			if (p[k].stats.has_null_count && p[k].stats.null_count == p[k].rows)
				keep = false; /* only nulls: no value in range */
			if (keep)
				ranges[nranges++] = (tl_pq_row_range){p[k].first_row, p[k].first_row + p[k].rows};
		}
		if (tl_pq_reader_select_rows(r, g, ranges, nranges, &err) < 0)
			return fail("selecting rows", &err);
		free(ranges);
	}
	tl_pq_batch *b = tl_pq_reader_batch_new(r, 1000);
	int64_t n;
	while ((n = tl_pq_reader_next(r, b, &err)) > 0) {
		int g;
		int64_t first;
		tl_pq_reader_batch_position(r, &g, &first);
		for (int64_t i = 0; i < n; i++) {
			printf("%lld", (long long)(start[g] + first + i));
			for (int c = 0; c < s->ncolumns; c++) {
				putchar('\t');
				print_value(&s->columns[c], &b->columns[c], i);
			}
			putchar('\n');
		}
	}
	if (n < 0)
		return fail("reading", &err);
	int64_t read, skipped;
	tl_pq_reader_page_counts(r, &read, &skipped);
	printf("pages read %lld skipped %lld\n", (long long)read, (long long)skipped);
	tl_pq_batch_free(b);
	free(start);
	return 0;
}

static int probe(tl_pq_reader *r, int column, const char *text)
{
	const tl_pq_column *col = &tl_pq_reader_schema(r)->columns[column];
	uint8_t buf[8];
	tl_bytes v = {buf, 0};
	char *end = NULL;
	errno = 0;
	switch (col->physical) {
	case TL_PQ_INT32: {
		int32_t x = (int32_t)strtol(text, &end, 10);
		memcpy(buf, &x, 4);
		v.len = 4;
		break;
	}
	case TL_PQ_INT64: {
		int64_t x = strtoll(text, &end, 10);
		memcpy(buf, &x, 8);
		v.len = 8;
		break;
	}
	case TL_PQ_FLOAT: {
		float x = strtof(text, &end);
		memcpy(buf, &x, 4);
		v.len = 4;
		break;
	}
	case TL_PQ_DOUBLE: {
		double x = strtod(text, &end);
		memcpy(buf, &x, 8);
		v.len = 8;
		break;
	}
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		v = (tl_bytes){(const uint8_t *)text, (uint32_t)strlen(text)};
		end = "";
		break;
	default:
		fprintf(stderr, "pqindex: cannot probe a column of type %s\n", tl_pq_physical_name(col->physical));
		return 2;
	}
	if (errno != 0 || end == NULL || *end != '\0') {
		fprintf(stderr, "pqindex: %s is not a value of column %s\n", text, col->name);
		return 2;
	}
	tl_error err;
	tl_error_clear(&err);
	for (int g = 0; g < tl_pq_reader_num_row_groups(r); g++) {
		if (!tl_pq_reader_has_bloom_filter(r, g, column)) {
			printf("rg %d none\n", g);
			continue;
		}
		int may = tl_pq_reader_bloom_may_contain(r, g, column, &v, 1, &err);
		if (may < 0)
			return fail("probing a bloom filter", &err);
		printf("rg %d excludes %s\n", g, may ? "false" : "true");
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	const char *mode = argv[1];
	if (!((strcmp(mode, "pages") == 0 && argc == 3) || (strcmp(mode, "rows") == 0 && argc == 6) ||
	      (strcmp(mode, "probe") == 0 && argc == 5)))
		return usage();
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(argv[2], &err);
	if (in == NULL)
		return fail(argv[2], &err);
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	if (r == NULL) {
		tl_input_close(in);
		return fail(argv[2], &err);
	}
	int rc;
	if (strcmp(mode, "pages") == 0) {
		rc = pages(r);
	} else {
		int column = tl_pq_schema_find(tl_pq_reader_schema(r), argv[3]);
		if (column < 0) {
			fprintf(stderr, "pqindex: no column %s\n", argv[3]);
			rc = 2;
		} else if (strcmp(mode, "rows") == 0) {
			rc = rows(r, column, strtod(argv[4], NULL), strtod(argv[5], NULL));
		} else {
			rc = probe(r, column, argv[4]);
		}
	}
	tl_pq_reader_free(r);
	tl_input_close(in);
	return rc;
}
