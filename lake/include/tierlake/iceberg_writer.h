/*
 * iceberg_writer.h: writing a table's rows into Parquet data files, or
 * equality-delete files, split by partition, ready to commit.
 *
 * Each row goes to the file of its partition tuple (the default spec's
 * transforms applied to the row's source values); a file rolls over at a
 * target size. Files are written under the table's data/ directory with
 * Iceberg field ids on every column, and come back as manifest entries
 * with full metrics (tl_ice_data_file_metrics) for tl_ice_commit_add_file.
 *
 * Memory: every open partition holds one Parquet row group, so feed rows
 * grouped or sorted by partition when there are many partitions; at most
 * TL_ICE_WRITER_MAX_OPEN files are open at once (the least recently used
 * is closed when another is needed).
 */
#ifndef TIERLAKE_ICEBERG_WRITER_H
#define TIERLAKE_ICEBERG_WRITER_H

#include <stdint.h>

#include "tierlake/error.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/parquet.h"

#define TL_ICE_WRITER_MAX_OPEN 32
/* Default rollover size of one data file. */
#define TL_ICE_WRITER_TARGET_FILE_BYTES (512LL * 1024 * 1024)

typedef struct tl_ice_writer_options {
	tl_pq_writer_options parquet;   /* codec, row group and page sizes */
	int64_t target_file_bytes;      /* roll over at about this size */
	const char *file_prefix;        /* file names start "<file_prefix>-" (tl_ice_table_new_data_path);
	                                   NULL for none; must outlive the writer */
	bool bloom_identifier_fields;   /* data files get bloom filters on the schema's identifier fields
	                                   (besides parquet.bloom_columns), for = and IN lookups by key */
	const int32_t *bloom_field_ids; /* and on these top-level fields (a table policy's bloom_columns);
	                                   copied at open; each must be a field of the current schema */
	int nbloom_field_ids;
} tl_ice_writer_options;

/* Defaults: tl_pq_writer_options_init's (ZSTD), TL_ICE_WRITER_TARGET_FILE_BYTES, no bloom filters. */
void tl_ice_writer_options_init(tl_ice_writer_options *opts);

typedef struct tl_ice_writer tl_ice_writer;

/*
 * A writer of data files. Batches have the Parquet schema of the table's
 * current schema (tl_ice_schema_to_pq_schema), every column in order.
 * opts may be NULL for the defaults. The table must outlive the writer.
 * A bloom_field_ids entry that is not a top-level field of the current
 * schema is TL_ERR_INVALID; a boolean field gets none (the Parquet writer
 * gives booleans none). Delete files get no bloom filters.
 */
tl_ice_writer *tl_ice_writer_open_data(const tl_ice_table *t, const tl_ice_writer_options *opts,
                                       tl_error *err);

/*
 * A writer of equality-delete files on these field ids. Batches hold
 * exactly those columns in that order (their Parquet columns per
 * tl_ice_field_to_pq_column). Every partition source field must be among
 * them, since a delete is scoped to the partition of the rows it deletes.
 */
tl_ice_writer *tl_ice_writer_open_equality_deletes(const tl_ice_table *t, const int32_t *equality_ids,
                                                   int nequality_ids, const tl_ice_writer_options *opts,
                                                   tl_error *err);

/*
 * A writer of equality-delete files whose rows hold the fields `columns`,
 * in that order, and match on `equality_ids`, which must be among them.
 * The other columns only travel with the delete (Iceberg allows that);
 * the usual one is a partition source field that is not part of the key:
 * a delete on a primary key (id) of a table partitioned by day(ts) carries
 * ts with the old row's value, so that the delete lands in that row's
 * partition while it still matches on id alone. Every partition source
 * field must be among `columns`.
 * tl_ice_writer_open_equality_deletes is this with columns = equality_ids.
 */
tl_ice_writer *tl_ice_writer_open_deletes(const tl_ice_table *t, const int32_t *columns, int ncolumns,
                                          const int32_t *equality_ids, int nequality_ids,
                                          const tl_ice_writer_options *opts, tl_error *err);

/* The shape batches must have. */
const tl_pq_schema *tl_ice_writer_schema(const tl_ice_writer *w);

/* Routes and writes the batch's rows. A null in a required column is an error. */
int tl_ice_writer_write(tl_ice_writer *w, const tl_pq_batch *batch, tl_error *err);

/*
 * Finishes every open file now (they are listed below); later rows open
 * new files. A caller that feeds rows partition by partition (the daemon
 * copies one heap partition at a time) calls it between partitions, so
 * memory stays at one open row group instead of one per partition seen.
 */
int tl_ice_writer_finish_open_files(tl_ice_writer *w, tl_error *err);

/* Closes every open file; then the files are complete and listed below. */
int tl_ice_writer_close(tl_ice_writer *w, tl_error *err);

/* The files written (after close), in the order they were finished. */
int tl_ice_writer_nfiles(const tl_ice_writer *w);
const tl_ice_data_file *tl_ice_writer_file(const tl_ice_writer *w, int i);
int64_t tl_ice_writer_rows(const tl_ice_writer *w);

/*
 * Frees the writer. A writer freed before a successful close deletes the
 * files it created, so a failed write leaves nothing behind; files of a
 * closed writer stay (they belong to the commit now, or are orphans to
 * clean up if it fails).
 */
void tl_ice_writer_free(tl_ice_writer *w);

#endif
