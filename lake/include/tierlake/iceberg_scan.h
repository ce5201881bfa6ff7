/*
 * iceberg_scan.h: planning a scan of an Iceberg table at a snapshot, and
 * reading its rows with every delete applied.
 *
 * Planning reads the snapshot's manifest list, skips manifests whose
 * partition summaries rule the filter out, reads the remaining manifests,
 * skips data files by partition tuple and column metrics, and pairs each
 * live data file with the delete files that apply to it:
 *   - position deletes with data sequence number >= the data file's, in
 *     the same partition (same spec id and tuple) or from an
 *     unpartitioned spec, whose file_path bounds admit the data file;
 *   - equality deletes with data sequence number > the data file's, in the
 *     same partition or from an unpartitioned spec (global deletes).
 *
 * The reader then yields the rows of each task in column batches, reading
 * Parquet data files by field id (by name for files without ids), with
 * type promotions (int->long, float->double, wider decimals) and columns
 * added after a file was written read as their initial-default, else as
 * null. The filter only prunes: rows
 * in kept files are returned whether or not they match it.
 */
#ifndef TIERLAKE_ICEBERG_SCAN_H
#define TIERLAKE_ICEBERG_SCAN_H

#include <stdint.h>

#include "tierlake/error.h"
#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/parquet.h"

/* A delete file the plan found live at the snapshot. */
typedef struct tl_ice_delete_file {
	tl_ice_data_file file;        /* deep copy owned by the scan */
	int32_t spec_id;
	int64_t sequence_number;      /* data sequence number */
} tl_ice_delete_file;

/* One data file to read, with the delete files that apply to it. */
typedef struct tl_ice_scan_task {
	tl_ice_data_file file;        /* deep copy owned by the scan */
	int32_t spec_id;
	int64_t sequence_number;      /* data sequence number */
	int ndeletes;
	const tl_ice_delete_file **deletes;
} tl_ice_scan_task;

typedef struct tl_ice_scan_stats {
	int64_t manifests;            /* data and delete manifests in the list */
	int64_t manifests_skipped;    /* by partition summaries */
	int64_t data_files;           /* live data files seen in the manifests read */
	int64_t data_files_skipped;   /* by partition tuple or column metrics */
	int64_t delete_files;         /* live delete files kept for the tasks */
	int64_t records;              /* record_count summed over the tasks */
} tl_ice_scan_stats;

typedef struct tl_ice_scan tl_ice_scan;

/*
 * Plans a scan of `md` at snapshot_id (TL_ICE_NO_SNAPSHOT: the current
 * snapshot; a table without snapshots plans no tasks). `filter` may be
 * NULL; it is copied. An unknown snapshot id is TL_ERR_NOT_FOUND. Paths
 * in the metadata are read as local files (file:// URIs or plain paths).
 */
tl_ice_scan *tl_ice_scan_plan(const tl_ice_table_metadata *md, int64_t snapshot_id,
                              const tl_ice_expr *filter, tl_error *err);
void tl_ice_scan_free(tl_ice_scan *scan);

/* The snapshot scanned (0 for an empty table) and its schema (the current one when it names none). */
int64_t tl_ice_scan_snapshot_id(const tl_ice_scan *scan);
const tl_ice_schema *tl_ice_scan_schema(const tl_ice_scan *scan);
const tl_ice_partition_spec *tl_ice_scan_spec(const tl_ice_scan *scan, int32_t spec_id);
int tl_ice_scan_ntasks(const tl_ice_scan *scan);
const tl_ice_scan_task *tl_ice_scan_task_at(const tl_ice_scan *scan, int i);
const tl_ice_scan_stats *tl_ice_scan_stats_get(const tl_ice_scan *scan);
/* The scan's copy of the filter (for row-group pruning), or NULL when it has none. */
const tl_ice_expr *tl_ice_scan_filter(const tl_ice_scan *scan);

/* ------------------------------------------------------------- reading */

typedef struct tl_ice_reader tl_ice_reader;

typedef struct tl_ice_reader_stats {
	int64_t files_read;
	int64_t row_groups_read;
	int64_t row_groups_skipped;    /* by the filter against row-group statistics */
	int64_t row_groups_skipped_by_bloom; /* by = and IN against bloom filters (not in row_groups_skipped) */
	int64_t pages_read;            /* data pages decoded, over every column chunk read */
	int64_t pages_skipped;         /* data pages passed over undecoded (page index pruning, deferred columns) */
	int64_t rows_deleted;          /* by position and equality deletes */
	int64_t bytes_read;            /* of data files: footers, page indexes, bloom filter blocks, pages */
} tl_ice_reader_stats;

/*
 * Reads the tasks of `scan` in order. field_ids chooses the output columns
 * (top-level fields of the scan schema, in this order); NULL reads all.
 * Output columns have the Parquet type tl_ice_field_to_pq_column gives
 * their field. The scan must outlive the reader.
 */
tl_ice_reader *tl_ice_reader_open(const tl_ice_scan *scan, const int32_t *field_ids, int nfields,
                                  tl_error *err);
/* The same for one task only (parallel readers, per-file work). */
tl_ice_reader *tl_ice_reader_open_task(const tl_ice_scan *scan, int task, const int32_t *field_ids,
                                       int nfields, tl_error *err);
/* The shape of the batches handed out. */
const tl_pq_schema *tl_ice_reader_schema(const tl_ice_reader *r);
tl_pq_batch *tl_ice_reader_batch_new(const tl_ice_reader *r, int64_t capacity);
/*
 * Fills batch with up to its capacity of surviving rows. Returns the row
 * count (0 at the end) or -1 with err naming the file. Views stay valid
 * until the next call.
 */
int64_t tl_ice_reader_next(tl_ice_reader *r, tl_pq_batch *batch, tl_error *err);
/*
 * Late materialisation. tl_ice_reader_defer (before the first
 * tl_ice_reader_next; deferred[i] for output column i, NULL for none) makes
 * batches arrive without those columns' values; tl_ice_reader_load then
 * fills them in for the batch just returned. A caller that filters rows
 * defers the columns its filter does not read and loads a batch only when
 * some of its rows pass: the others are then skipped undecoded. Either
 * returns 0, or -1 with err set.
 */
int tl_ice_reader_defer(tl_ice_reader *r, const bool *deferred, tl_error *err);
int tl_ice_reader_load(tl_ice_reader *r, tl_pq_batch *batch, tl_error *err);
const tl_ice_reader_stats *tl_ice_reader_stats_get(const tl_ice_reader *r);
/*
 * The data file the last batch came from (NULL before the first and at the
 * end), for messages. A batch never holds rows of two files.
 */
const char *tl_ice_reader_current_file(const tl_ice_reader *r);
/*
 * The data sequence number of that file (its manifest entry's, inherited
 * from the manifest when null, as the spec says; 0 for files of format v1
 * snapshots), or -1 when there is no current file. A reader that fills a
 * column added with a default gives it to the rows of files whose data
 * sequence number is at most the table's last-sequence-number when the
 * field was added: those files were written without it. A file that
 * rewrites older rows (a REPLACE commit, a fold) gets its own, newer
 * sequence number, so whoever rewrites rows after a field was added must
 * write that field's default into them.
 */
int64_t tl_ice_reader_current_file_sequence(const tl_ice_reader *r);
void tl_ice_reader_free(tl_ice_reader *r);

#endif
