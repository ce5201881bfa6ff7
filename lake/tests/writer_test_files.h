/*
 * writer_test_files.h: helpers the writer tests share: scratch files that
 * are removed at exit, writing batches to a file and decoding its footer,
 * walking a column chunk's pages, and reading statistics values.
 */
#ifndef TIERLAKE_WRITER_TEST_FILES_H
#define TIERLAKE_WRITER_TEST_FILES_H

#include <stdbool.h>
#include <stdint.h>

#include "parquet/metadata.h"
#include "tierlake/parquet.h"

/* A written file: its bytes and its decoded footer. */
typedef struct written {
	char path[256];
	tl_buf bytes;
	pq_file_metadata md;
	size_t footer_start;
	size_t data_end;     /* where the row groups end: the page index's start, else footer_start */
} written;

/* One page of a column chunk, as stored. */
typedef struct page_view {
	pq_page_header h;
	int64_t offset;
	const uint8_t *body;
	size_t body_len;
} page_view;

#define MAX_PAGES 4096

/* A path in a scratch directory created on first use and removed at exit. */
void wt_scratch_path(const char *name, char *out, size_t len);

tl_pq_column wt_column(const char *name, tl_pq_physical physical, bool required);
tl_pq_schema *wt_one_column_schema(tl_pq_column c);
tl_pq_writer_options wt_uncompressed_options(void);

/* Reads f->path into f->bytes, checks both magics and decodes the footer. */
int wt_load_file(written *f, tl_error *err);
/* Writes the batches to a scratch file named `name` and loads it. */
int wt_write_file(const char *name, const tl_pq_schema *schema, const tl_pq_writer_options *opts,
                  tl_pq_batch *const *batches, int nbatches, written *f, tl_error *err);
/* Fills batch with rows [first_row, first_row + n) and sets its nrows. */
typedef void (*wt_fill)(tl_pq_batch *batch, int64_t first_row, int64_t n, const void *arg);
/* Writes `rows` generated rows through one batch of batch_rows, refilled
 * between writes, and loads the file. */
int wt_write_generated(const char *name, const tl_pq_schema *schema, const tl_pq_writer_options *opts, int64_t rows,
                       int64_t batch_rows, wt_fill fill, const void *arg, written *f, tl_error *err);
int wt_write_one(const char *name, const tl_pq_schema *schema, const tl_pq_writer_options *opts, tl_pq_batch *batch,
                 written *f, tl_error *err);
void wt_written_free(written *f);

/*
 * Decodes every page header of a chunk, checking that the pages tile the
 * chunk exactly and that the chunk's totals count headers and bodies as the
 * spec says.
 */
int wt_chunk_pages(const written *f, const pq_column_meta *m, page_view *pages, int *npages, tl_error *err);
/* Room for MAX_PAGES pages; free() it. */
page_view *wt_page_buffer(void);
bool wt_has_encoding(const pq_column_meta *m, int encoding);
const pq_statistics *wt_chunk_stats(const written *f, int row_group, int column);
const pq_column_meta *wt_chunk_meta(const written *f, int row_group, int column);

/* Statistics values are PLAIN: little-endian numbers. */
int32_t wt_stat_i32(tl_bytes b);
int64_t wt_stat_i64(tl_bytes b);
float wt_stat_f32(tl_bytes b);
double wt_stat_f64(tl_bytes b);
bool wt_bytes_equal(tl_bytes b, const void *data, size_t len);
tl_bytes wt_text(const char *s);
uint64_t wt_mix64(uint64_t x);

/* Checks one row read back: `slot` of the batch holds file row `row`. */
typedef int (*wt_row_check)(const tl_pq_batch *batch, int64_t slot, int64_t row, const void *arg, tl_error *err);
/* Reads the whole file through tl_pq_reader, calls check on every row and
 * expects exactly `rows` rows. */
int wt_read_back(const char *path, int64_t rows, int64_t batch_rows, wt_row_check check, const void *arg,
                 tl_error *err);
/* Reads a one-column int64 file back through the reader and checks value(row)
 * for every row (present(row) false means null; NULL means never null). */
int wt_read_back_int64(const char *path, int64_t rows, int64_t (*value)(int64_t), bool (*present)(int64_t),
                       tl_error *err);

#endif
