/*
 * column_reader.h: decodes one column chunk of a Parquet row group into
 * tl_vector rows, page by page.
 *
 * The reader (reader.c) hands it either the chunk's bytes, read in one
 * range request, or, when a row selection leaves most pages unread, the
 * chunk's data pages as its OffsetIndex lists them with only the needed
 * ones fetched (pq_column_reader_use_pages); then it asks for rows in
 * batch-sized steps. Pages are decompressed and their definition levels
 * and values decoded only as far as the batch needs, so a page that claims
 * a huge value count cannot force a huge allocation. The dictionary page
 * is decompressed and decoded only when a dictionary-encoded data page is
 * decoded: a chunk that fell back to PLAIN before the rows read never pays
 * for it. Byte-array values are views into the chunk, the dictionary or a
 * decompressed page buffer, all of which outlive the batch that holds them.
 */
#ifndef TIERLAKE_PARQUET_COLUMN_READER_H
#define TIERLAKE_PARQUET_COLUMN_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "parquet/encoding.h"
#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/parquet.h"

/* Limits that keep a hostile file from sizing our allocations. */
#define PQ_MAX_PAGE_BYTES (256 * 1024 * 1024)
#define PQ_MAX_PAGE_VALUES (1 << 26)

typedef struct pq_page_buffer pq_page_buffer;

/*
 * One data page of a chunk where its OffsetIndex places it, for reading
 * some pages only. Pages without bytes are only ever passed over.
 */
typedef struct pq_page_slot {
	int64_t offset;              /* the page header's first byte in the file */
	int32_t size;                /* header and body as stored */
	int64_t first_row;           /* within the row group */
	const uint8_t *bytes;        /* the page as fetched, or NULL when it was not */
} pq_page_slot;

typedef struct pq_column_reader {
	const tl_pq_column *column;
	const char *file_name;
	int row_group;               /* where the chunk is, for error messages */
	int64_t chunk_offset;        /* the chunk's first byte in the file */
	int pages_seen;              /* pages of the chunk met so far, dictionary included */
	tl_pq_codec codec;
	int max_definition;          /* 0 for required columns, 1 for optional */
	int value_width;             /* bytes per value in the vector (INT96 -> 8) */

	/* The column chunk: every page, as stored (NULL when reading by slots). */
	const uint8_t *chunk;
	size_t chunk_len;
	size_t chunk_pos;

	/* Or its data pages as the OffsetIndex lists them, only some fetched. */
	const pq_page_slot *slots;
	int nslots;
	int next_slot;
	int64_t rows_expected;       /* the row group's row count */
	int64_t rows_read;
	int64_t pages_read;          /* data pages decoded */
	int64_t pages_skipped;       /* data pages passed over without decompressing them */

	/* The dictionary page met (or fetched), not yet decoded: its header's bytes. */
	const uint8_t *pending_dictionary;
	size_t pending_dictionary_room;  /* bytes from there that the page may take */
	int64_t pending_dictionary_offset; /* in the file, for messages */
	int pending_dictionary_number;   /* its place among the chunk's pages, for messages */

	/* Dictionary: values decoded once per chunk. */
	bool has_dictionary;
	int64_t dictionary_count;
	void *dictionary_values;     /* fixed-width values, value_width each */
	tl_bytes *dictionary_bytes;  /* byte-array and FLBA values */
	pq_page_buffer *dictionary_page;

	/* The data page being decoded. */
	int page_type;
	int64_t page_values_left;    /* rows left in the page, nulls included */
	int encoding;
	const uint8_t *levels;       /* definition levels, without v1's length prefix */
	size_t levels_len;
	pq_rle_decoder definition_decoder;
	const uint8_t *values;       /* the encoded values section */
	size_t values_len;
	size_t values_pos;           /* PLAIN: bytes consumed */
	uint64_t bool_bit;           /* PLAIN booleans: bits consumed */
	pq_rle_decoder index_decoder;  /* RLE_DICTIONARY indexes, RLE booleans */
	pq_delta_decoder delta_decoder;
	pq_bytes_decoder bytes_decoder;
	bool bytes_decoder_active;
	int64_t split_position;      /* BYTE_STREAM_SPLIT: values consumed */
	int64_t split_total;

	/* Page buffers: the current one, and those retired during this batch
	 * whose bytes the batch may still view (freed at the next batch). */
	pq_page_buffer *page;
	pq_page_buffer *retired;
	pq_page_buffer *spare;

	/* Scratch sized to the batch. */
	uint32_t *scratch_u32;
	uint8_t *scratch_bytes;
	int64_t scratch_capacity;
	size_t scratch_bytes_capacity;
} pq_column_reader;

/*
 * Sets up a reader for one chunk: `chunk` holds the bytes of row group
 * `row_group`'s chunk that starts at `chunk_offset` in the file (both only
 * name where a corrupt page is), and must outlive the reader. NULL with
 * pq_column_reader_use_pages to follow.
 */
void pq_column_reader_init(pq_column_reader *cr, const tl_pq_column *column, const char *file_name,
                           int row_group, int64_t chunk_offset, tl_pq_codec codec, const uint8_t *chunk,
                           size_t chunk_len, int64_t rows);
/*
 * Reads the chunk by its data pages instead (a reader initialised without
 * bytes): `slots` lists every data page in order (first rows ascending
 * from 0); only pages with bytes may be decoded, the others are passed
 * over by their row counts. `dictionary` is the chunk's dictionary page
 * (header and body, `dictionary_len` bytes at file offset
 * `dictionary_offset`), or NULL when no page to be decoded needs one.
 * Everything must outlive the reader.
 */
void pq_column_reader_use_pages(pq_column_reader *cr, const pq_page_slot *slots, int nslots,
                                const uint8_t *dictionary, size_t dictionary_len, int64_t dictionary_offset);
/* Releases everything but the chunk's bytes, which the caller owns. */
void pq_column_reader_free(pq_column_reader *cr);
/* Called at the start of every batch: frees page buffers retired by the previous one. */
void pq_column_reader_begin_batch(pq_column_reader *cr);
/*
 * Decodes `n` rows into vec starting at row `offset`. Byte-array values that
 * must be materialised are copied into `arena`.
 */
int pq_column_reader_read(pq_column_reader *cr, tl_vector *vec, int64_t offset, int64_t n,
                          tl_arena *arena, tl_error *err);

/*
 * Passes over the next n rows without producing them: whole pages are
 * skipped unread (not even decompressed), the rest of a page by advancing
 * its decoders.
 */
int pq_column_reader_skip(pq_column_reader *cr, int64_t n, tl_error *err);

/* INT96 (nanoseconds of the day, then the Julian day) as nanoseconds since the epoch. */
int64_t pq_int96_to_nanos(const uint8_t bytes[12]);

#endif
