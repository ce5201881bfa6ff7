/*
 * reader_internal.h: the pieces the Iceberg row reader (reader.c) is built
 * from, shared with deletes.c and the unit tests.
 *
 * file_projection.c maps the fields a reader wants onto the columns of one
 * Parquet file (by field id, or by name for files written without ids) and
 * converts each stored value to the form the table's type prescribes
 * (tl_ice_field_to_pq_column), so data and delete files written under older
 * schemas or by other engines compare and print alike.
 *
 * deletes.c loads position and equality delete files into structures that
 * answer "is this row deleted?" cheaply.
 */
#ifndef TIERLAKE_ICEBERG_READER_INTERNAL_H
#define TIERLAKE_ICEBERG_READER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_schema.h"
#include "tierlake/io.h"
#include "tierlake/parquet.h"

/* Reserved field ids of the position delete file columns (Iceberg spec). */
#define ICE_POS_DELETE_FILE_PATH_ID 2147483546
#define ICE_POS_DELETE_POS_ID 2147483545

/* Rows per batch when reading delete files. */
#define ICE_DELETE_BATCH_ROWS 4096

/* ------------------------------------------------------ file projection */

/* How a stored value becomes the table type's value. */
typedef enum ice_conversion {
	ICE_CONV_MISSING,     /* the file lacks the field: every row is null */
	ICE_CONV_CONSTANT,    /* the file lacks the field: every row reads its initial-default */
	ICE_CONV_BOOLEAN,
	ICE_CONV_INTEGER,     /* INT32/INT64 (and INT96 nanos) to INT32/INT64, times mul or floored by div */
	ICE_CONV_UINT32,      /* unsigned INT(32) widened to long */
	ICE_CONV_FLOAT,       /* FLOAT to FLOAT */
	ICE_CONV_TO_DOUBLE,   /* FLOAT or DOUBLE to DOUBLE */
	ICE_CONV_BYTES,       /* BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY passed through as a view */
	ICE_CONV_DECIMAL      /* any decimal storage to the table's decimal storage */
} ice_conversion;

/* One value in the table type's Parquet form (ice_fp_column.out). */
typedef struct ice_value {
	bool null;
	int64_t i;           /* BOOLEAN (0/1), INT32, INT64 */
	float f32;
	double f64;
	tl_bytes bytes;      /* BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY; may point at `scratch` */
	uint8_t scratch[16]; /* a decimal re-encoded to the table's fixed width */
} ice_value;

typedef struct ice_fp_column {
	const tl_ice_field *field;
	tl_pq_column out;              /* the table's Parquet form (name points at field->name) */
	ice_conversion conv;
	int source;                    /* column of the projected file batch; -1 when missing */
	tl_pq_physical source_physical;
	int64_t mul;                   /* ICE_CONV_INTEGER: unit scaling (1 when none) */
	int64_t div;
	ice_value constant;            /* ICE_CONV_CONSTANT: the value every row reads */
	uint8_t *constant_bytes;       /* owned: the bytes constant.bytes points at */
} ice_fp_column;

typedef struct ice_file_projection {
	int ncolumns;
	ice_fp_column *columns;
	int nprojection;
	int *projection;               /* the file columns read, each once */
} ice_file_projection;

/*
 * Maps each field (primitive, of the table's schema) to a column of the
 * file `pq` reads, checks the stored type converts to the field's type,
 * and projects `pq` onto the columns needed (each once). A field the file
 * lacks reads as its initial-default (files written before the field was
 * added), else as null; a required one without an initial-default is an
 * error, and so is an initial-default that is no value of the field's
 * type. Messages do not name the file: callers prefix.
 */
int ice_fp_init(ice_file_projection *fp, tl_pq_reader *pq, const tl_ice_field *const *fields, int nfields,
                tl_error *err);
/* Projects another reader of the same file the same way (one reader per row group). */
int ice_fp_project(const ice_file_projection *fp, tl_pq_reader *pq, tl_error *err);
void ice_fp_free(ice_file_projection *fp);

/*
 * Which row groups of the file `pq` reads may hold rows matching `filter`
 * (fields of `schema`), judged by tl_ice_expr_may_match_metrics on each
 * row group's column statistics converted to the table's types. keep[g]
 * is set for every row group (false for empty ones); returns how many
 * non-empty row groups the filter rules out. Statistics that do not
 * convert are ignored (the row group is kept). `file` (the data file's
 * metrics, or NULL) lends its NaN counts: zero in the file, zero in each
 * row group and page, which lets bounds rule out `x > c` on floats.
 */
int ice_row_groups_to_read(const tl_pq_reader *pq, const tl_ice_data_file *file, const tl_ice_schema *schema,
                           const tl_ice_expr *filter, bool *keep);

/*
 * The rows of row group g the filter may match, judged page by page from
 * the page indexes of the columns it names (the same inclusive evaluation
 * as for row groups, on each page's statistics; AND intersects the pages'
 * rows, OR unites them). Returns 1 with *ranges (malloc'd, sorted,
 * disjoint; possibly none) when that rules some rows out, 0 when every row
 * may match or nothing can be judged (no page index, out of memory).
 */
int ice_page_ranges(tl_pq_reader *pq, const tl_ice_data_file *file, int row_group, const tl_ice_schema *schema,
                    const tl_ice_expr *filter, tl_pq_row_range **ranges, int *nranges);

/*
 * Clears keep[g] for each kept row group whose bloom filters prove that
 * the filter's = and IN predicates (as AND and OR combine them) match no
 * row; returns how many. Literals are hashed in the file column's stored
 * form; those without one exact form (NaN, unit-scaled timestamps,
 * variable-length decimals) never prune.
 */
int ice_row_groups_by_bloom(tl_pq_reader *pq, const tl_ice_schema *schema, const tl_ice_expr *filter, bool *keep);

/*
 * Reads row `row` of the projected file batch `src` as column c's table
 * value. A null in a required field, or a value the table type cannot
 * hold, is an error.
 */
int ice_fp_read(const ice_fp_column *c, const tl_pq_batch *src, int64_t row, ice_value *out, tl_error *err);

/* Stores v at `row` of dst (a vector of column `col`); scratch bytes are copied into arena (false: out of memory). */
bool ice_value_store(const tl_pq_column *col, const ice_value *v, tl_vector *dst, int64_t row, tl_arena *arena);

/*
 * Appends v's canonical bytes to key: a null marker, then the value in a
 * fixed form, so equal table values give equal bytes however they were
 * stored, and a tuple's keys concatenate without ambiguity.
 */
void ice_value_key(const tl_pq_column *col, const ice_value *v, tl_buf *key);

/*
 * Opens a Parquet data or delete file named by a metadata path and maps
 * `fields` onto it. *in, *pq are set on success (free with
 * tl_pq_reader_free then tl_input_close, and ice_fp_free). Refuses a
 * file_format other than Parquet.
 */
int ice_fp_open_file(const char *path, const char *file_format, const tl_ice_field *const *fields, int nfields,
                     tl_input **in, tl_pq_reader **pq, ice_file_projection *fp, tl_error *err);

/*
 * Prefixes err with "reading <what> <path>" (what: "data file", "delete
 * file"), dropping the path where the message already starts with it.
 */
void ice_error_name_file(tl_error *err, const char *what, const char *path);

/* --------------------------------------------------------------- deletes */

/*
 * The row positions of data file `data_path` deleted by the position
 * delete files among `deletes` (others are skipped): sorted, without
 * duplicates. *positions is malloc'd (NULL when none); errors name the
 * delete file.
 */
int ice_positions_load(const char *data_path, const tl_ice_delete_file *const *deletes, int ndeletes,
                       int64_t **positions, size_t *npositions, tl_error *err);

/* The key tuples of one equality delete file. */
typedef struct ice_eq_set ice_eq_set;

/*
 * Loads equality delete file `df`; its equality_ids must name primitive
 * top-level fields of `schema`. Errors name the delete file.
 */
ice_eq_set *ice_eq_set_load(const tl_ice_schema *schema, const tl_ice_delete_file *df, tl_error *err);
const char *ice_eq_set_path(const ice_eq_set *set);
int ice_eq_set_nids(const ice_eq_set *set);
const int32_t *ice_eq_set_ids(const ice_eq_set *set);
int64_t ice_eq_set_count(const ice_eq_set *set);
bool ice_eq_set_contains(const ice_eq_set *set, const uint8_t *key, size_t len);
void ice_eq_set_free(ice_eq_set *set);

/* The top-level field with this id, or NULL. */
const tl_ice_field *ice_top_level_field(const tl_ice_schema *schema, int32_t id);

/* ---------------------------------------------------------------- reader */

/*
 * A reader over caller-owned tasks read with `schema` (what the public
 * constructors use; tests call it with hand-built tasks). `filter` (may be
 * NULL) prunes row groups. The tasks, schema and filter must outlive the
 * reader; the array of task pointers is copied.
 */
tl_ice_reader *ice_reader_new(const tl_ice_schema *schema, const tl_ice_expr *filter,
                              const tl_ice_scan_task *const *tasks, int ntasks, const int32_t *field_ids,
                              int nfields, tl_error *err);

#endif
