/*
 * deferred_check.c: see deferred_check.h.
 */
#include "deferred_check.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/io.h"

typedef struct read_side {
	tl_input *in;
	tl_pq_reader *reader;
	tl_pq_batch *batch;
} read_side;

static int open_side(read_side *s, const char *path, int64_t batch_rows, tl_error *err)
{
	s->in = tl_input_open_file(path, err);
	if (s->in == NULL)
		return -1;
	s->reader = tl_pq_reader_open(s->in, err);
	if (s->reader == NULL)
		return -1;
	s->batch = tl_pq_reader_batch_new(s->reader, batch_rows);
	return 0;
}

static void close_side(read_side *s)
{
	tl_pq_batch_free(s->batch);
	tl_pq_reader_free(s->reader);
	tl_input_close(s->in);
}

bool same_value(const tl_pq_column *col, const tl_vector *a, const tl_vector *b, int64_t row)
{
	if (tl_vector_is_null(a, row) || tl_vector_is_null(b, row))
		return tl_vector_is_null(a, row) == tl_vector_is_null(b, row);
	switch (col->physical) {
	case TL_PQ_BOOLEAN:
		return a->v.b[row] == b->v.b[row];
	case TL_PQ_INT32:
	case TL_PQ_FLOAT:
		return a->v.i32[row] == b->v.i32[row]; /* the bits: NaN equals itself */
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		return a->v.bytes[row].len == b->v.bytes[row].len &&
		       (a->v.bytes[row].len == 0 || memcmp(a->v.bytes[row].ptr, b->v.bytes[row].ptr, a->v.bytes[row].len) == 0);
	default:
		return a->v.i64[row] == b->v.i64[row];
	}
}

/* Compares column c of the two batches; the number of values, or -1 with err set. */
static int64_t compare_column(const tl_pq_schema *schema, const read_side *plain, const read_side *deferred, int c,
                              int64_t first_row, tl_error *err)
{
	const tl_pq_column *col = &schema->columns[c];
	for (int64_t i = 0; i < plain->batch->nrows; i++)
		if (!same_value(col, &plain->batch->columns[c], &deferred->batch->columns[c], i))
			return tl_error_set(err, TL_ERR_CORRUPT, "%s: column \"%s\", row %lld: the deferred read differs",
			                    plain->in->name, col->name, (long long)(first_row + i));
	return plain->batch->nrows;
}

int64_t deferred_check(const char *path, int64_t batch_rows, int eager_column, int load_every, tl_error *err)
{
	read_side plain = {0}, deferred = {0};
	const tl_pq_schema *schema;
	bool *defer;
	int64_t compared = -1, values = 0, row = 0, n;
	int rc;

	if (open_side(&plain, path, batch_rows, err) < 0 || open_side(&deferred, path, batch_rows, err) < 0)
		goto done;
	schema = tl_pq_reader_schema(plain.reader);
	defer = calloc((size_t)schema->ncolumns + 1, sizeof(bool));
	for (int c = 0; c < schema->ncolumns; c++)
		defer[c] = c != eager_column;
	rc = tl_pq_reader_defer(deferred.reader, defer, err);
	free(defer);
	if (rc < 0)
		goto done;
	for (int64_t index = 0;; index++) {
		n = tl_pq_reader_next(plain.reader, plain.batch, err);
		int64_t m = tl_pq_reader_next(deferred.reader, deferred.batch, err);
		if (n < 0 || m < 0)
			goto done;
		if (n != m) {
			tl_error_set(err, TL_ERR_CORRUPT, "%s: batch %lld has %lld rows read whole and %lld deferred", path,
			             (long long)index, (long long)n, (long long)m);
			goto done;
		}
		if (n == 0)
			break;
		bool load = index % load_every == load_every - 1;
		for (int c = 0; c < schema->ncolumns; c++) {
			if (c != eager_column && !load)
				continue;
			/* Loading twice must change nothing: the second call is a no-op. */
			for (int twice = 0; c != eager_column && twice < 2; twice++)
				if (tl_pq_reader_load_column(deferred.reader, deferred.batch, c, err) < 0)
					goto done;
			int64_t k = compare_column(schema, &plain, &deferred, c, row, err);
			if (k < 0)
				goto done;
			values += k;
		}
		row += n;
	}
	compared = values;
done:
	close_side(&plain);
	close_side(&deferred);
	return compared;
}
