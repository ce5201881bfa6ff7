/*
 * parquet.h: reading and writing Apache Parquet files.
 *
 * The schema is flat (one leaf column per top-level field, optional or
 * required). Data moves in column batches: a tl_pq_batch holds up to
 * `capacity` rows as one tl_vector per column, values stored densely at
 * their row position (the slot of a null row is unspecified).
 *
 * Writer: tl_pq_writer_open, then tl_pq_writer_write any number of batches,
 * then tl_pq_writer_close. Memory stays bounded by one row group. Files get
 * a page index (ColumnIndex and OffsetIndex per column chunk) and, for the
 * columns asked for, split block bloom filters.
 *
 * Reader: tl_pq_reader_open parses and validates the footer; choose columns
 * with tl_pq_reader_project and drop row groups with tl_pq_reader_prune
 * (or pages, by rows, with tl_pq_reader_select_rows after consulting
 * tl_pq_reader_page_index), then call tl_pq_reader_next until it returns 0. Nothing in the file is
 * trusted: every size is checked against the file before it is used, and a
 * page whose header carries a CRC is checked against it before it is
 * decoded (TL_ERR_CORRUPT naming the file, row group, column and page).
 */
#ifndef TIERLAKE_PARQUET_H
#define TIERLAKE_PARQUET_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/io.h"

/* Physical types; the values are those of parquet.thrift's Type. */
typedef enum tl_pq_physical {
	TL_PQ_BOOLEAN = 0,
	TL_PQ_INT32 = 1,
	TL_PQ_INT64 = 2,
	TL_PQ_INT96 = 3,   /* read only: surfaced as a TIMESTAMP(nanos) int64 */
	TL_PQ_FLOAT = 4,
	TL_PQ_DOUBLE = 5,
	TL_PQ_BYTE_ARRAY = 6,
	TL_PQ_FIXED_LEN_BYTE_ARRAY = 7
} tl_pq_physical;

/* What the bytes mean. Written as LogicalType (and the legacy ConvertedType). */
typedef enum tl_pq_logical {
	TL_PQ_LOGICAL_NONE = 0,
	TL_PQ_LOGICAL_STRING,     /* BYTE_ARRAY, UTF-8 (also ENUM and JSON on read) */
	TL_PQ_LOGICAL_DATE,       /* INT32 days since 1970-01-01 */
	TL_PQ_LOGICAL_TIMESTAMP,  /* INT64 in `unit` since the epoch */
	TL_PQ_LOGICAL_TIME,       /* INT32 (millis) or INT64 (micros, nanos) since midnight */
	TL_PQ_LOGICAL_DECIMAL,    /* INT32, INT64, FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY, unscaled two's complement */
	TL_PQ_LOGICAL_UUID,       /* FIXED_LEN_BYTE_ARRAY(16) */
	TL_PQ_LOGICAL_INT,        /* INT32/INT64 with `int_bit_width` and `int_signed` */
	TL_PQ_LOGICAL_JSON,       /* BYTE_ARRAY holding JSON text */
	TL_PQ_LOGICAL_ENUM        /* BYTE_ARRAY holding a symbol */
} tl_pq_logical;

typedef enum tl_pq_time_unit {
	TL_PQ_MILLIS = 0,
	TL_PQ_MICROS = 1,
	TL_PQ_NANOS = 2
} tl_pq_time_unit;

/* Compression codecs; the values are parquet.thrift's CompressionCodec. */
typedef enum tl_pq_codec {
	TL_PQ_UNCOMPRESSED = 0,
	TL_PQ_SNAPPY = 1,
	TL_PQ_GZIP = 2,
	TL_PQ_LZO = 3,      /* not supported */
	TL_PQ_BROTLI = 4,   /* read only */
	TL_PQ_LZ4 = 5,      /* the deprecated Hadoop-framed LZ4; read only */
	TL_PQ_ZSTD = 6,
	TL_PQ_LZ4_RAW = 7
} tl_pq_codec;

typedef struct tl_pq_column {
	char *name;
	tl_pq_physical physical;
	int32_t type_length;     /* FIXED_LEN_BYTE_ARRAY width in bytes */
	bool required;
	int32_t field_id;        /* Iceberg field id; -1 when absent */
	tl_pq_logical logical;
	int32_t precision;       /* DECIMAL */
	int32_t scale;           /* DECIMAL */
	tl_pq_time_unit unit;    /* TIMESTAMP, TIME */
	bool utc_adjusted;       /* TIMESTAMP, TIME */
	int32_t int_bit_width;   /* INT: 8, 16, 32 or 64 */
	bool int_signed;         /* INT */
} tl_pq_column;

typedef struct tl_pq_schema {
	int ncolumns;
	tl_pq_column *columns;
} tl_pq_schema;

/* A schema built column by column; tl_pq_schema_free releases names too. NULL when out of memory. */
tl_pq_schema *tl_pq_schema_new(void);
/* Appends a copy of col (its name is copied) and returns its index, or -1 when out of memory (schema unchanged). */
int tl_pq_schema_add(tl_pq_schema *schema, const tl_pq_column *col);
void tl_pq_schema_free(tl_pq_schema *schema);
/* Index of the column named `name`, or -1. */
int tl_pq_schema_find(const tl_pq_schema *schema, const char *name);
/* Checks types, widths and decimal precision; 0 or -1 with err set. */
int tl_pq_schema_validate(const tl_pq_schema *schema, tl_error *err);
/* Human-readable type, such as "INT64 TIMESTAMP(MICROS, UTC)" or "FIXED_LEN_BYTE_ARRAY(16) UUID". */
void tl_pq_column_type_text(const tl_pq_column *col, tl_buf *out);

/* One column of a batch. Which member of `v` is live follows the physical type:
 * BOOLEAN -> b (0/1 per row); INT32 -> i32; INT64 and INT96 -> i64;
 * FLOAT -> f32; DOUBLE -> f64; BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY -> bytes. */
typedef struct tl_vector {
	uint8_t *valid;       /* 1 = value present, 0 = null; NULL means all present */
	union {
		uint8_t *b;
		int32_t *i32;
		int64_t *i64;
		float *f32;
		double *f64;
		tl_bytes *bytes;
	} v;
} tl_vector;

typedef struct tl_pq_batch {
	int ncolumns;
	int64_t nrows;
	int64_t capacity;
	tl_vector *columns;
	tl_arena arena;       /* owns the bytes that reader-filled views point at */
} tl_pq_batch;

/*
 * A batch with room for `capacity` rows of every column of the schema, with
 * validity arrays for the optional columns. Writers fill it and set nrows.
 */
tl_pq_batch *tl_pq_batch_new(const tl_pq_schema *schema, int64_t capacity);
void tl_pq_batch_free(tl_pq_batch *batch);

static inline bool tl_vector_is_null(const tl_vector *vec, int64_t row)
{
	return vec->valid != NULL && vec->valid[row] == 0;
}

/* ---------------------------------------------------------------- writer */

typedef struct tl_pq_kv {
	const char *key;
	const char *value;
} tl_pq_kv;

typedef struct tl_pq_writer_options {
	tl_pq_codec codec;            /* default ZSTD */
	int compression_level;        /* 0 = the codec's default */
	int64_t row_group_rows;       /* a row group closes at this many rows */
	int64_t row_group_bytes;      /* ...or once its encoded size reaches this */
	int64_t page_bytes;           /* a data page closes near this many bytes */
	int64_t page_rows;            /* ...or at this many rows */
	bool dictionary;              /* try dictionary encoding first */
	int64_t dictionary_bytes;     /* dictionary budget per column chunk before falling back to PLAIN */
	/* Judge the dictionary when a chunk's first page fills: if its values
	 * (nearly all distinct) say the dictionary would outgrow its budget
	 * before the row group ends, that page and the rest are PLAIN (default on). */
	bool dictionary_early_fallback;
	bool write_page_crc;          /* CRC32 in every page header (default on) */
	bool write_page_index;        /* a ColumnIndex and OffsetIndex per column chunk (default on) */
	/* Split block bloom filters (xxHash64) for these schema columns, one per
	 * column chunk, sized for the chunk's distinct values at bloom_fpp and
	 * at most bloom_max_bytes. Boolean columns get none. The array is copied. */
	const int *bloom_columns;
	int nbloom_columns;
	double bloom_fpp;             /* false positive probability target, default 0.01 */
	int64_t bloom_max_bytes;      /* bitset cap per chunk, default 1 MiB */
	const tl_pq_kv *metadata;     /* key-value metadata for the footer */
	int nmetadata;
	const char *created_by;       /* default "tierdb version ..." */
} tl_pq_writer_options;

/*
 * Fills opts with the defaults: ZSTD, 1 MiB / 20,000-row pages, 128 MiB /
 * 1M-row row groups, dictionary on (judged on the first page), page CRCs
 * on, page index on, no bloom filters.
 */
void tl_pq_writer_options_init(tl_pq_writer_options *opts);

typedef struct tl_pq_writer tl_pq_writer;

/* The writer copies the schema and options; `out` must outlive the writer. */
tl_pq_writer *tl_pq_writer_open(tl_output *out, const tl_pq_schema *schema,
                                const tl_pq_writer_options *opts, tl_error *err);
/* Appends the batch's rows. A null in a required column is an error. */
int tl_pq_writer_write(tl_pq_writer *w, const tl_pq_batch *batch, tl_error *err);
/* Flushes the last row group and writes the footer. */
int tl_pq_writer_close(tl_pq_writer *w, tl_error *err);
void tl_pq_writer_free(tl_pq_writer *w);
int64_t tl_pq_writer_rows_written(const tl_pq_writer *w);

/* ---------------------------------------------------------------- reader */

/* A column chunk's statistics as stored, decoded to the column's physical type. */
typedef struct tl_pq_stats {
	bool has_min_max;
	bool has_null_count;
	int64_t null_count;
	/* For fixed-width types the values are in min.i64 / min.f64 etc.; for
	 * byte arrays min.bytes and max.bytes view the footer's memory. */
	union tl_pq_stat_value {
		bool b;
		int32_t i32;
		int64_t i64;
		float f32;
		double f64;
		tl_bytes bytes;
	} min, max;
} tl_pq_stats;

typedef struct tl_pq_chunk_info {
	tl_pq_codec codec;
	int64_t num_values;
	int64_t compressed_size;
	int64_t uncompressed_size;
	uint32_t encodings_mask;  /* bit (1 << encoding) for each encoding listed */
	tl_pq_stats stats;
} tl_pq_chunk_info;

typedef struct tl_pq_reader tl_pq_reader;

/* Reads and validates the footer. The reader does not take ownership of `in`. */
tl_pq_reader *tl_pq_reader_open(tl_input *in, tl_error *err);
void tl_pq_reader_free(tl_pq_reader *r);

const tl_pq_schema *tl_pq_reader_schema(const tl_pq_reader *r);
int64_t tl_pq_reader_num_rows(const tl_pq_reader *r);
int tl_pq_reader_num_row_groups(const tl_pq_reader *r);
int64_t tl_pq_reader_row_group_rows(const tl_pq_reader *r, int row_group);
const tl_pq_chunk_info *tl_pq_reader_chunk(const tl_pq_reader *r, int row_group, int column);
const char *tl_pq_reader_created_by(const tl_pq_reader *r);
int tl_pq_reader_num_metadata(const tl_pq_reader *r);
const tl_pq_kv *tl_pq_reader_metadata(const tl_pq_reader *r, int i);

/*
 * Reads only these schema column indexes, in this order (batches then have
 * ncolumns columns in this order). Unread columns cost no IO. Call before the
 * first tl_pq_reader_next; by default every column is read.
 */
int tl_pq_reader_project(tl_pq_reader *r, const int *columns, int ncolumns, tl_error *err);

/* A comparison against a constant; the constant has the column's physical type. */
typedef enum tl_pq_op {
	TL_PQ_EQ,
	TL_PQ_LT,
	TL_PQ_LE,
	TL_PQ_GT,
	TL_PQ_GE,
	TL_PQ_IS_NULL,
	TL_PQ_NOT_NULL
} tl_pq_op;

typedef struct tl_pq_predicate {
	int column;                      /* schema index */
	tl_pq_op op;
	union tl_pq_stat_value value;
} tl_pq_predicate;

/*
 * Skips every row group whose statistics prove that the conjunction of the
 * predicates matches none of its rows. Returns the number of row groups
 * skipped. Rows in kept row groups are not filtered: the caller still
 * evaluates the predicates.
 */
int tl_pq_reader_prune(tl_pq_reader *r, const tl_pq_predicate *preds, int npreds);
/* Reads only this row group (tests and parallel readers); -1 restores all. */
int tl_pq_reader_select_row_group(tl_pq_reader *r, int row_group, tl_error *err);

/*
 * Defers the decoding of projected columns (deferred[i] for the projection's
 * column i; NULL defers none): tl_pq_reader_next leaves them out of its
 * batches, and tl_pq_reader_load_column decodes one for the batch just
 * returned. The rows of batches a column is not loaded for are skipped:
 * whole pages without decompressing them, and a row group none of whose
 * batches load the column never reads its chunk. For late materialisation:
 * decode the columns a filter needs, then the others only for batches with
 * rows that pass. Call before the first tl_pq_reader_next.
 */
int tl_pq_reader_defer(tl_pq_reader *r, const bool *deferred, tl_error *err);
/*
 * Decodes deferred column `column` of the batch the last tl_pq_reader_next
 * returned into that batch (a second call for the same batch does nothing).
 * Returns 0, or -1 with err set.
 */
int tl_pq_reader_load_column(tl_pq_reader *r, tl_pq_batch *batch, int column, tl_error *err);

/* ------------------------------------------------- page index, bloom filters */

/* One data page of a column chunk, as the chunk's page index describes it. */
typedef struct tl_pq_page_info {
	int64_t first_row;        /* within the row group */
	int64_t rows;
	tl_pq_stats stats;        /* min/max in the column order; has_min_max false for a null page */
} tl_pq_page_info;

/*
 * The data pages of a column chunk from its page index (ColumnIndex and
 * OffsetIndex, PageIndex.md), read on the first request and kept for the
 * reader's life. Returns the page count with *pages set, 0 when the chunk
 * has no page index or a malformed one (nothing to skip pages by), or -1
 * with err set when reading the file fails.
 */
int tl_pq_reader_page_index(tl_pq_reader *r, int row_group, int column, const tl_pq_page_info **pages,
                            tl_error *err);

/* Rows [start, end) of a row group. */
typedef struct tl_pq_row_range {
	int64_t start;
	int64_t end;
} tl_pq_row_range;

/*
 * Reads only these rows of row group `row_group` (ranges sorted, not
 * overlapping, within the row group; copied; none: the row group is not
 * read). tl_pq_reader_next then returns batches of consecutive rows within
 * the ranges, and every column passes over the rows between them: whole
 * pages unread (not even decompressed), the rest of a page by advancing
 * its decoders. tl_pq_reader_batch_position tells where each batch
 * starts. Call before the first tl_pq_reader_next. Where a chunk's
 * OffsetIndex tells where its pages are, only the pages holding the
 * selected rows are fetched (and its dictionary page when one of them
 * needs it); a chunk without one, or whose pages disagree with it, is
 * fetched whole.
 */
int tl_pq_reader_select_rows(tl_pq_reader *r, int row_group, const tl_pq_row_range *ranges, int nranges,
                             tl_error *err);

/* Where the batch the last tl_pq_reader_next returned starts: its row group and first row in it. */
void tl_pq_reader_batch_position(const tl_pq_reader *r, int *row_group, int64_t *first_row);

/* Data pages decoded, and passed over without decompressing them, in the column chunks read so far. */
void tl_pq_reader_page_counts(const tl_pq_reader *r, int64_t *pages_read, int64_t *pages_skipped);

/*
 * The reads made of the input so far, and their bytes: footer, page
 * indexes, bloom filter blocks and column chunks (or the pages of them a
 * row selection needs) together.
 */
void tl_pq_reader_io_counts(const tl_pq_reader *r, int64_t *reads, int64_t *bytes);

/* Whether the column chunk has a bloom filter (BloomFilter.md). */
bool tl_pq_reader_has_bloom_filter(const tl_pq_reader *r, int row_group, int column);
/*
 * Probes the column chunk's bloom filter for values given as their PLAIN
 * bytes (little-endian numbers; a byte array's bytes without the length
 * prefix; a fixed-length array's bytes). Returns 0 when the filter proves
 * none of them is in the chunk, 1 when one may be (also when the chunk has
 * no filter, or one this reader cannot use), -1 with err set when reading
 * the file fails.
 */
int tl_pq_reader_bloom_may_contain(tl_pq_reader *r, int row_group, int column, const tl_bytes *values,
                                   int nvalues, tl_error *err);

/*
 * A batch shaped for the projected columns, sized for `capacity` rows; free
 * it with tl_pq_batch_free.
 */
tl_pq_batch *tl_pq_reader_batch_new(const tl_pq_reader *r, int64_t capacity);

/*
 * Decodes up to batch->capacity rows into batch. Returns the number of rows
 * (0 at the end of the file) or -1 with err set. Views in the batch stay
 * valid until the next call.
 */
int64_t tl_pq_reader_next(tl_pq_reader *r, tl_pq_batch *batch, tl_error *err);

/* Names for printing. */
const char *tl_pq_physical_name(tl_pq_physical t);
const char *tl_pq_codec_name(tl_pq_codec c);
const char *tl_pq_encoding_name(int encoding);
/* Parses "zstd", "snappy", "gzip", "lz4_raw", "none"/"uncompressed"; -1 if unknown. */
int tl_pq_codec_from_name(const char *name);

#endif
