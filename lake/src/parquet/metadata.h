/*
 * metadata.h: Parquet's Thrift structures (parquet.thrift) as C structs, and
 * their Thrift compact-protocol encoding and decoding.
 *
 * Only the fields TierDB reads or writes are kept; every other field is
 * skipped on read, so files from newer writers still parse. Decoding
 * trusts nothing: list lengths are checked against the bytes that remain,
 * nesting depth is bounded, and every string and binary is bounded by the
 * input. Decoded strings and binaries point into the caller's input buffer
 * (which must outlive the struct) or are copied into the struct's arena.
 */
#ifndef TIERLAKE_PARQUET_METADATA_H
#define TIERLAKE_PARQUET_METADATA_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"

/* parquet.thrift enums (values as on the wire). */
enum {
	PQ_REQUIRED = 0,
	PQ_OPTIONAL = 1,
	PQ_REPEATED = 2
};

enum { /* Encoding */
	PQ_ENC_PLAIN = 0,
	PQ_ENC_PLAIN_DICTIONARY = 2,
	PQ_ENC_RLE = 3,
	PQ_ENC_BIT_PACKED = 4,
	PQ_ENC_DELTA_BINARY_PACKED = 5,
	PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
	PQ_ENC_DELTA_BYTE_ARRAY = 7,
	PQ_ENC_RLE_DICTIONARY = 8,
	PQ_ENC_BYTE_STREAM_SPLIT = 9
};

enum { /* PageType */
	PQ_PAGE_DATA = 0,
	PQ_PAGE_INDEX = 1,
	PQ_PAGE_DICTIONARY = 2,
	PQ_PAGE_DATA_V2 = 3
};

enum { /* ConvertedType (legacy) */
	PQ_CT_NONE = -1,
	PQ_CT_UTF8 = 0,
	PQ_CT_MAP = 1,
	PQ_CT_MAP_KEY_VALUE = 2,
	PQ_CT_LIST = 3,
	PQ_CT_ENUM = 4,
	PQ_CT_DECIMAL = 5,
	PQ_CT_DATE = 6,
	PQ_CT_TIME_MILLIS = 7,
	PQ_CT_TIME_MICROS = 8,
	PQ_CT_TIMESTAMP_MILLIS = 9,
	PQ_CT_TIMESTAMP_MICROS = 10,
	PQ_CT_UINT_8 = 11,
	PQ_CT_UINT_16 = 12,
	PQ_CT_UINT_32 = 13,
	PQ_CT_UINT_64 = 14,
	PQ_CT_INT_8 = 15,
	PQ_CT_INT_16 = 16,
	PQ_CT_INT_32 = 17,
	PQ_CT_INT_64 = 18,
	PQ_CT_JSON = 19,
	PQ_CT_BSON = 20,
	PQ_CT_INTERVAL = 21
};

/* LogicalType is a Thrift union; `kind` is the field id of the member set. */
enum {
	PQ_LT_NONE = 0,
	PQ_LT_STRING = 1,
	PQ_LT_MAP = 2,
	PQ_LT_LIST = 3,
	PQ_LT_ENUM = 4,
	PQ_LT_DECIMAL = 5,
	PQ_LT_DATE = 6,
	PQ_LT_TIME = 7,
	PQ_LT_TIMESTAMP = 8,
	/* 9 is reserved */
	PQ_LT_INTEGER = 10,
	PQ_LT_UNKNOWN = 11,   /* NullType */
	PQ_LT_JSON = 12,
	PQ_LT_BSON = 13,
	PQ_LT_UUID = 14,
	PQ_LT_FLOAT16 = 15
};

typedef struct pq_logical_type {
	int kind;                 /* PQ_LT_*; PQ_LT_NONE when absent */
	int32_t decimal_scale;    /* DECIMAL */
	int32_t decimal_precision;
	bool utc_adjusted;        /* TIME, TIMESTAMP */
	int unit;                 /* TIME, TIMESTAMP: 0 millis, 1 micros, 2 nanos (TimeUnit member id - 1) */
	int8_t int_bit_width;     /* INTEGER */
	bool int_signed;
} pq_logical_type;

typedef struct pq_schema_element {
	bool has_type;
	int32_t type;             /* Type */
	int32_t type_length;      /* 0 when absent */
	bool has_repetition;
	int32_t repetition;
	tl_bytes name;
	int32_t num_children;     /* 0 when absent (a leaf) */
	int32_t converted_type;   /* PQ_CT_NONE when absent */
	int32_t scale;
	int32_t precision;
	bool has_field_id;
	int32_t field_id;
	pq_logical_type logical;
} pq_schema_element;

typedef struct pq_statistics {
	bool has_max, has_min, has_null_count, has_distinct_count;
	bool has_max_value, has_min_value;
	tl_bytes max;             /* deprecated field 1 (signed-order writers) */
	tl_bytes min;             /* deprecated field 2 */
	int64_t null_count;
	int64_t distinct_count;
	tl_bytes max_value;       /* field 5, the column order's max */
	tl_bytes min_value;       /* field 6 */
} pq_statistics;

typedef struct pq_key_value {
	tl_bytes key;
	bool has_value;
	tl_bytes value;
} pq_key_value;

typedef struct pq_column_meta {
	int32_t type;
	int32_t nencodings;
	int32_t *encodings;
	int32_t npath;
	tl_bytes *path_in_schema;
	int32_t codec;
	int64_t num_values;
	int64_t total_uncompressed_size;
	int64_t total_compressed_size;
	int64_t data_page_offset;
	bool has_dictionary_page_offset;
	int64_t dictionary_page_offset;
	bool has_statistics;
	pq_statistics statistics;
	bool has_bloom_filter;    /* bloom_filter_offset was given */
	int64_t bloom_filter_offset;
	bool has_bloom_filter_length;
	int32_t bloom_filter_length;  /* header and bitset; optional even when the offset is set */
} pq_column_meta;

typedef struct pq_column_chunk {
	bool has_file_path;
	tl_bytes file_path;       /* set only by writers that split chunks into other files */
	int64_t file_offset;
	bool has_meta_data;
	pq_column_meta meta_data;
	/* The page index (PageIndex.md): both offsets and lengths, or none. */
	bool has_offset_index;
	int64_t offset_index_offset;
	int32_t offset_index_length;
	bool has_column_index;
	int64_t column_index_offset;
	int32_t column_index_length;
} pq_column_chunk;

typedef struct pq_row_group {
	int32_t ncolumns;
	pq_column_chunk *columns;
	int64_t total_byte_size;
	int64_t num_rows;
	bool has_file_offset;
	int64_t file_offset;
	bool has_total_compressed_size;
	int64_t total_compressed_size;
	bool has_ordinal;
	int16_t ordinal;
} pq_row_group;

typedef struct pq_file_metadata {
	int32_t version;
	int32_t nschema;
	pq_schema_element *schema;
	int64_t num_rows;
	int32_t nrow_groups;
	pq_row_group *row_groups;
	int32_t nkey_value;
	pq_key_value *key_value;
	bool has_created_by;
	tl_bytes created_by;
	/* column_orders: written as TYPE_ORDER for every leaf; on read only presence matters */
	bool has_column_orders;
	tl_arena arena;           /* owns every array above */
} pq_file_metadata;

typedef struct pq_data_page_header {
	int32_t num_values;
	int32_t encoding;
	int32_t definition_level_encoding;
	int32_t repetition_level_encoding;
} pq_data_page_header;

typedef struct pq_dictionary_page_header {
	int32_t num_values;
	int32_t encoding;
	bool is_sorted;
} pq_dictionary_page_header;

typedef struct pq_data_page_header_v2 {
	int32_t num_values;
	int32_t num_nulls;
	int32_t num_rows;
	int32_t encoding;
	int32_t definition_levels_byte_length;
	int32_t repetition_levels_byte_length;
	bool is_compressed;       /* defaults to true when absent */
} pq_data_page_header_v2;

typedef struct pq_page_header {
	int32_t type;             /* PageType */
	int32_t uncompressed_page_size;
	int32_t compressed_page_size;
	bool has_crc;
	int32_t crc;
	bool has_data_page_header;
	pq_data_page_header data_page_header;
	bool has_dictionary_page_header;
	pq_dictionary_page_header dictionary_page_header;
	bool has_data_page_header_v2;
	pq_data_page_header_v2 data_page_header_v2;
} pq_page_header;

/* ------------------------------------------------------------ page index */

enum { /* BoundaryOrder */
	PQ_BOUNDARY_UNORDERED = 0,
	PQ_BOUNDARY_ASCENDING = 1,
	PQ_BOUNDARY_DESCENDING = 2
};

typedef struct pq_page_location {
	int64_t offset;               /* of the page header, in the file */
	int32_t compressed_page_size; /* header included */
	int64_t first_row_index;      /* within the row group */
} pq_page_location;

typedef struct pq_offset_index {
	int32_t npages;
	pq_page_location *pages;
} pq_offset_index;

/* Per data page: min and max in the column order (PLAIN bytes, as Statistics). */
typedef struct pq_column_index {
	int32_t npages;               /* the length of null_pages */
	bool *null_pages;
	int32_t nmin, nmax;           /* must equal npages; checked by the reader, not here */
	tl_bytes *min_values;
	tl_bytes *max_values;
	int32_t boundary_order;
	int32_t nnull_counts;         /* 0 when absent */
	int64_t *null_counts;
} pq_column_index;

/*
 * Decode an OffsetIndex or ColumnIndex from exactly `len` bytes; arrays go
 * in `arena`, binaries view `data`. 0, or -1 with err set.
 */
int pq_offset_index_decode(const uint8_t *data, size_t len, tl_arena *arena, pq_offset_index *out, tl_error *err);
int pq_column_index_decode(const uint8_t *data, size_t len, tl_arena *arena, pq_column_index *out, tl_error *err);
void pq_offset_index_encode(const pq_offset_index *oi, tl_buf *out);
void pq_column_index_encode(const pq_column_index *ci, tl_buf *out);

/* ------------------------------------------------------------ bloom filters */

/*
 * BloomFilterHeader: the bitset's size and the three unions, of which only
 * the split-block algorithm, xxHash and no compression exist.
 */
typedef struct pq_bloom_header {
	int32_t num_bytes;
	bool split_block;             /* algorithm BLOCK */
	bool xxhash;                  /* hash XXHASH */
	bool uncompressed;            /* compression UNCOMPRESSED */
} pq_bloom_header;

/* Decodes a header from the start of data; *consumed is its length. */
int pq_bloom_header_decode(const uint8_t *data, size_t len, pq_bloom_header *out, size_t *consumed, tl_error *err);
/* Appends the header of a split-block, xxHash, uncompressed filter of num_bytes. */
void pq_bloom_header_encode(int32_t num_bytes, tl_buf *out);

/*
 * Decodes a FileMetaData from exactly `len` bytes. Binary fields view `data`.
 * Returns 0, or -1 with err naming the field that was malformed.
 * pq_file_metadata_free releases it either way.
 */
int pq_file_metadata_decode(const uint8_t *data, size_t len, pq_file_metadata *out, tl_error *err);
void pq_file_metadata_free(pq_file_metadata *md);
/* Appends the compact encoding of md to out. */
void pq_file_metadata_encode(const pq_file_metadata *md, tl_buf *out);

/*
 * Decodes a PageHeader from the start of data (at most len bytes); on
 * success sets *consumed to the header's encoded length.
 */
int pq_page_header_decode(const uint8_t *data, size_t len, pq_page_header *out, size_t *consumed, tl_error *err);
void pq_page_header_encode(const pq_page_header *h, tl_buf *out);

/* Decodes a Statistics struct on its own (column index pages, tests). */
int pq_statistics_decode(const uint8_t *data, size_t len, pq_statistics *out, tl_error *err);

#endif
