/*
 * writer_internal.h: the pieces of the Parquet writer that live in their
 * own files: the per-chunk dictionary (writer_dictionary.c), the per-chunk
 * statistics (writer_stats.c) and the footer (writer_footer.c). writer.c
 * drives them.
 */
#ifndef TIERLAKE_PARQUET_WRITER_INTERNAL_H
#define TIERLAKE_PARQUET_WRITER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parquet/metadata.h"
#include "tierlake/buf.h"
#include "tierlake/parquet.h"

/* Bytes per row of a tl_vector holding this physical type (schema.c). */
size_t pq_vector_width(tl_pq_physical physical);

static inline void pq_append_u32_le(tl_buf *b, uint32_t v)
{
	uint8_t bytes[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	tl_buf_append(b, bytes, sizeof(bytes));
}

/* ------------------------------------------------------------ dictionary */

typedef struct pq_dict_slot {
	uint64_t key;             /* numbers: the value's bits, zero-extended; byte arrays: the value's hash */
	uint32_t index1;          /* entry index + 1; 0 marks an empty slot */
} pq_dict_slot;

typedef struct pq_dict_entry {
	uint32_t offset;          /* where the value's bytes start in `plain` */
	uint32_t len;
} pq_dict_entry;

/*
 * The distinct values of one column chunk. The entries are kept already
 * PLAIN-encoded in `plain`, so the dictionary page's body is that buffer
 * as is. Lookups go through an open-addressing table with linear probing,
 * kept at most half full.
 */
typedef struct pq_dict {
	int width;                /* 4 or 8 for numbers, type_length for FLBA, 0 for BYTE_ARRAY */
	bool by_bytes;            /* BYTE_ARRAY and FLBA: entries compared as bytes */
	tl_buf plain;
	uint32_t count;
	pq_dict_entry *entries;   /* by_bytes only */
	size_t entries_cap;
	pq_dict_slot *slots;      /* NULL until the first value */
	size_t mask;              /* slots - 1 */
} pq_dict;

void pq_dict_init(pq_dict *d, tl_pq_physical physical, int type_length);
/* Forgets every entry but keeps the memory for the next column chunk. */
void pq_dict_reset(pq_dict *d);
void pq_dict_free(pq_dict *d);

/*
 * Looks up (inserting when new) each of n dense values and writes its entry
 * index to indices. An insert that would grow `plain` past budget bytes is
 * not made: encoding stops there and the number of values encoded is
 * returned, so the caller can fall back to PLAIN from that value on.
 * Numbers are 4- or 8-byte values; byte arrays and FLBA are tl_bytes.
 */
/* Returns how many values fit; an allocation failure stops early and marks d->plain failed. */
int64_t pq_dict_encode(pq_dict *d, const void *values, int64_t n, uint32_t *indices, size_t budget);

/* Bit width of the indices of a data page: at least 1, as parquet-cpp writes. */
int pq_dict_index_bit_width(const pq_dict *d);

/* The bytes of entry i (by_bytes dictionaries). */
static inline tl_bytes pq_dict_entry_bytes(const pq_dict *d, uint32_t i)
{
	tl_bytes b;
	b.ptr = d->plain.data + d->entries[i].offset;
	b.len = d->entries[i].len;
	return b;
}

/* The hash used by the dictionary, exposed for tests. */
uint64_t pq_hash_bytes(const uint8_t *p, size_t n);

/* ------------------------------------------------------------ statistics */

/*
 * Min, max and null count of one column chunk, compared in the order the
 * Parquet spec gives the column's type: signed or unsigned integers, IEEE
 * floats without NaN, false < true, unsigned bytes, or two's-complement
 * big-endian for DECIMAL stored as bytes.
 */
typedef struct pq_chunk_stats {
	tl_pq_physical physical;
	bool unsigned_order;      /* INT32/INT64 holding unsigned INT */
	bool decimal_order;       /* BYTE_ARRAY/FLBA holding DECIMAL */
	int64_t null_count;
	bool has_min_max;
	union {
		int32_t i32;
		int64_t i64;
		float f32;
		double f64;
		uint8_t b;
	} min, max;
	tl_buf min_bytes, max_bytes;
} pq_chunk_stats;

/* Byte-array extremes longer than this are left out of the footer, as
 * parquet-cpp does, rather than bloating it; null_count is still written. */
#define PQ_STATS_MAX_VALUE_BYTES 4096

void pq_stats_init(pq_chunk_stats *s, const tl_pq_column *col);
void pq_stats_reset(pq_chunk_stats *s);
void pq_stats_free(pq_chunk_stats *s);
/*
 * Folds n dense non-null values into the statistics: int32_t, int64_t,
 * float, double, uint8_t (0/1) or tl_bytes per the physical type.
 */
void pq_stats_add(pq_chunk_stats *s, const void *values, int64_t n);
/* Fills out (min_value, max_value, null_count); byte values are copied into arena. */
/* -1 when out of memory (the statistics' own buffers or the arena). */
int pq_stats_to_thrift(const pq_chunk_stats *s, pq_statistics *out, tl_arena *arena);

/* Folds another run's min and max (not its null count) into s. */
void pq_stats_merge(pq_chunk_stats *s, const pq_chunk_stats *from);
/*
 * Appends s's min then max to out as the footer writes them (PLAIN bytes,
 * zeros signed), setting their lengths; false, appending nothing, when s
 * has no extremes to give (no values, only NaN, byte arrays over the limit).
 */
bool pq_stats_append_bounds(const pq_chunk_stats *s, tl_buf *out, uint32_t *min_len, uint32_t *max_len);
/* Orders two bounds of s's column (as pq_stats_append_bounds wrote them) in the column's sort order. */
int pq_stats_compare_bounds(const pq_chunk_stats *s, tl_bytes a, tl_bytes b);

/* Comparisons the statistics use, exposed for tests. */
int pq_compare_unsigned_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);
int pq_compare_decimal_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* ------------------------------------------------------------ page index */

/* One closed data page of the chunk being written. */
typedef struct pq_page_entry {
	int64_t offset;           /* of its header, from the chunk's first data page */
	int32_t size;             /* header and stored body */
	int64_t first_row;        /* within the row group */
	int64_t null_count;
	bool null_page;           /* no values at all */
	bool has_bounds;
	uint32_t bounds_offset;   /* min, then max, in the builder's `bounds` */
	uint32_t min_len, max_len;
} pq_page_entry;

/* The ColumnIndex and OffsetIndex of one column chunk, page by page. */
typedef struct pq_page_index_builder {
	tl_buf entries;           /* pq_page_entry */
	tl_buf bounds;
	bool column_index_ok;     /* false once a page with values has no bounds to give */
} pq_page_index_builder;

void pq_page_index_init(pq_page_index_builder *b);
void pq_page_index_reset(pq_page_index_builder *b);
void pq_page_index_free(pq_page_index_builder *b);
/* Records a data page; page_stats holds its min and max. */
void pq_page_index_add(pq_page_index_builder *b, int64_t offset, int64_t size, int64_t first_row, int64_t rows,
                       int64_t null_count, const pq_chunk_stats *page_stats);
/*
 * Appends the chunk's ColumnIndex (unless some page had no bounds, as
 * parquet-cpp drops it then) to column_indexes and its OffsetIndex to
 * offset_indexes, page offsets counted from data_offset (the chunk's first
 * data page in the file). Sets chunk's index fields with offsets relative
 * to the start of each buffer; the footer writer adds where they land.
 * -1 when out of memory.
 */
int pq_page_index_encode(const pq_page_index_builder *b, const pq_chunk_stats *order, int64_t data_offset,
                         pq_column_chunk *chunk, tl_buf *column_indexes, tl_buf *offset_indexes, tl_arena *scratch);

/* ------------------------------------------------------------ bloom filters */

/* The xxHash64 of every value of a chunk, duplicates included, until the filter is built. */
typedef struct pq_bloom_builder {
	tl_buf hashes;            /* uint64_t */
} pq_bloom_builder;

void pq_bloom_builder_init(pq_bloom_builder *b);
void pq_bloom_builder_free(pq_bloom_builder *b);
/* Hashes n dense values: 4- or 8-byte numbers (width), or tl_bytes (width 0). */
void pq_bloom_builder_add(pq_bloom_builder *b, const void *values, int64_t n, int width);
/*
 * Appends a BloomFilterHeader and the bitset of the hashes gathered, sized
 * for their distinct count, then forgets them. Returns the bytes appended,
 * 0 when no value was added, -1 when out of memory.
 */
int64_t pq_bloom_builder_finish(pq_bloom_builder *b, double fpp, int64_t max_bytes, tl_buf *out);

/* ------------------------------------------------------------ footer */

/* The SchemaElement of a leaf column: physical, logical and legacy types, field id. */
void pq_schema_element_from_column(const tl_pq_column *col, pq_schema_element *se);

/*
 * Appends the file's tail to out: FileMetaData, its length, "PAR1". Arrays
 * the footer needs are taken from arena; strings are viewed, not copied.
 */
/* -1 when out of memory (arena or out). */
int pq_footer_encode(const tl_pq_schema *schema, int64_t num_rows, pq_row_group *row_groups, int32_t nrow_groups,
                      const tl_pq_kv *metadata, int nmetadata, const char *created_by, tl_arena *arena, tl_buf *out);

#endif
