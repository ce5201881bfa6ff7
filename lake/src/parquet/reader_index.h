/*
 * reader_index.h: reading the structures other than pages that help a
 * reader skip data, for reader.c: a column chunk's page index and its
 * bloom filter. Both are optional and both are only hints, so anything
 * malformed about them (a length past the file, lists that disagree, rows
 * that do not ascend, an unknown algorithm) makes them count as absent,
 * never fails a read; only a failing input is an error.
 */
#ifndef TIERLAKE_PARQUET_READER_INDEX_H
#define TIERLAKE_PARQUET_READER_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "parquet/metadata.h"
#include "tierlake/buf.h"
#include "tierlake/io.h"
#include "tierlake/parquet.h"

/*
 * An input over a file's input that serves reads inside the file's page
 * index region from memory: the ColumnIndexes and OffsetIndexes of every
 * chunk, which writers put together between the last row group and the
 * footer, read in one go the first time any is read, when the region is
 * small (256 KiB, or the input's coalesce_gap if larger). Reads elsewhere,
 * and all reads when the indexes lie apart, go to the file.
 */
typedef struct pq_index_window {
	tl_input base;
	tl_input *file;
	const pq_file_metadata *md;
	bool tried;
	uint64_t start;
	uint64_t len;
	uint8_t *bytes;              /* the region, once read */
} pq_index_window;

/* Sets up the window over `file`, whose footer is md (both must outlive it). */
void pq_index_window_init(pq_index_window *w, tl_input *file, const pq_file_metadata *md);
void pq_index_window_free(pq_index_window *w);

/* A statistics value in PLAIN bytes as column c's physical type; false when it has the wrong size (reader.c). */
bool pq_decode_stat_value(const tl_pq_column *c, tl_bytes raw, union tl_pq_stat_value *v);

/*
 * Reads and checks the OffsetIndex of chunk cc (of a row group of `rows`
 * rows), allocating in arena: the data pages' places and first rows.
 * Returns the page count with *pages set, 0 when there is no usable index,
 * -1 when the input fails.
 */
int pq_offset_index_read(tl_input *in, const pq_column_chunk *cc, int64_t rows, tl_arena *arena,
                         const pq_page_location **pages, tl_error *err);

/*
 * Reads the ColumnIndex of chunk cc (column `col`) and checks it against
 * the chunk's OffsetIndex (`locations`, npages of them, from
 * pq_offset_index_read), allocating in arena. `typed_order` says the file
 * declares its column orders, without which the bounds of byte arrays and
 * unsigned integers may be in the legacy signed order and are left out.
 * Returns the page count, 0 when there is no usable index, -1 when the
 * input fails.
 */
int pq_page_index_read(tl_input *in, const pq_column_chunk *cc, const pq_page_location *locations, int npages,
                       int64_t rows, const tl_pq_column *col, bool typed_order, tl_arena *arena,
                       tl_pq_page_info **pages, tl_error *err);

/* Whether chunk meta m has a bloom filter. */
bool pq_has_bloom_filter(const pq_column_meta *m, uint64_t file_size);

/* 0 when m's bloom filter proves no value is present, 1 when one may be, -1 when the input fails. */
int pq_bloom_filter_probe(tl_input *in, const pq_column_meta *m, const tl_bytes *values, int nvalues, tl_error *err);

#endif
