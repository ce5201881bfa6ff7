/*
 * fetch.h: what the Parquet reader reads of a file besides its footer, for
 * reader.c and reader_index.c: byte ranges merged into as few reads as the
 * input likes, and the column chunks of a row group, whole or, when a row
 * selection leaves most of a chunk unread, only the pages it needs.
 */
#ifndef TIERLAKE_PARQUET_FETCH_H
#define TIERLAKE_PARQUET_FETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "parquet/column_reader.h"
#include "parquet/metadata.h"
#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/io.h"
#include "tierlake/parquet.h"

/* A byte range of the file to read, and where its bytes went. */
typedef struct pq_range {
	uint64_t offset;
	uint64_t len;
	const uint8_t *bytes;          /* set by pq_fetch_ranges */
} pq_range;

/*
 * Reads every range (in any order, overlapping or not) into memory
 * allocated in `arena`, with one read per run of ranges that overlap,
 * touch, or lie within the input's coalesce_gap of each other. A range
 * past the end of the file is the input's error.
 */
int pq_fetch_ranges(tl_input *in, pq_range *ranges, int nranges, tl_arena *arena, tl_error *err);

/* One column chunk of a row group to fetch, and what was fetched of it. */
typedef struct pq_chunk_fetch {
	/* Filled by the caller. */
	int64_t start;                 /* the chunk's first byte (its dictionary page, if any) */
	int64_t size;                  /* its bytes as stored */
	const pq_page_location *pages; /* its OffsetIndex, checked (pq_offset_index_read); NULL when none */
	int npages;
	int64_t rows;                  /* the row group's */

	/* Set by pq_fetch_chunks: the chunk whole, or else its pages with the needed ones fetched. */
	const uint8_t *chunk;
	pq_page_slot *slots;           /* npages of them */
	const uint8_t *dictionary;     /* the dictionary page, when a fetched page needs it */
	size_t dictionary_len;

	int state;                     /* private to fetch.c */
} pq_chunk_fetch;

/*
 * Fetches the chunks for reading the rows of `ranges` (sorted, disjoint,
 * within the row group) at or after row `from`; ranges NULL: every row, so
 * each chunk is read whole. A chunk whose OffsetIndex lets it (present,
 * and leaving some page unneeded) gets only the pages holding those rows,
 * and its dictionary page when one of them is dictionary-encoded; all
 * chunks' reads are merged by pq_fetch_ranges. A chunk whose fetched pages
 * or dictionary disagree with its OffsetIndex is read whole instead. Bytes
 * and slots are allocated in `arena`.
 */
int pq_fetch_chunks(tl_input *in, pq_chunk_fetch *chunks, int nchunks, const tl_pq_row_range *ranges, int nranges,
                    int64_t from, tl_arena *arena, tl_error *err);

#endif
