/*
 * iceberg_manifest.h: Iceberg manifests and manifest lists (Avro files).
 *
 * A manifest lists data or delete files with their partition tuple and
 * column statistics; a manifest list (one per snapshot) lists manifests with
 * counts and partition summaries that let scan planning skip whole
 * manifests. Readers take format v1 and v2 and look every field up by its
 * Iceberg field id, so files written by other engines, with extra or
 * renamed fields, read. Writers produce format v2.
 *
 * Read entries and everything they point at (strings, maps, bounds) stay
 * valid until the next call to the reader's next() or its free().
 */
#ifndef TIERLAKE_ICEBERG_MANIFEST_H
#define TIERLAKE_ICEBERG_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_schema.h"
#include "tierlake/iceberg_transform.h"
#include "tierlake/iceberg_value.h"
#include "tierlake/io.h"

enum { TL_ICE_STATUS_EXISTING = 0, TL_ICE_STATUS_ADDED = 1, TL_ICE_STATUS_DELETED = 2 };
enum { TL_ICE_CONTENT_DATA = 0, TL_ICE_CONTENT_POSITION_DELETES = 1, TL_ICE_CONTENT_EQUALITY_DELETES = 2 };
/* Manifest (and manifest list entry) content. */
enum { TL_ICE_MANIFEST_DATA = 0, TL_ICE_MANIFEST_DELETES = 1 };

/* Maps from column field id, as manifests store statistics. n == 0: absent. */
typedef struct tl_ice_long_map {
	uint32_t n;
	int32_t *keys;
	int64_t *values;
} tl_ice_long_map;

typedef struct tl_ice_bytes_map {
	uint32_t n;
	int32_t *keys;
	tl_bytes *values;          /* single-value binary form (iceberg_value.h) */
} tl_ice_bytes_map;

typedef struct tl_ice_data_file {
	int32_t content;           /* TL_ICE_CONTENT_* */
	const char *file_path;
	const char *file_format;   /* "PARQUET", "AVRO", "ORC" */
	int npartition;            /* the spec's partition type's field count */
	tl_ice_value *partition;   /* one per partition field, in spec order */
	int64_t record_count;
	int64_t file_size_in_bytes;
	tl_ice_long_map column_sizes;
	tl_ice_long_map value_counts;
	tl_ice_long_map null_value_counts;
	tl_ice_long_map nan_value_counts;
	tl_ice_bytes_map lower_bounds;
	tl_ice_bytes_map upper_bounds;
	uint32_t n_split_offsets;  /* 0: absent */
	int64_t *split_offsets;
	uint32_t n_equality_ids;   /* 0: absent */
	int32_t *equality_ids;
	bool has_sort_order_id;
	int32_t sort_order_id;
} tl_ice_data_file;

/* A manifest entry. Null ids and sequence numbers inherit (see below). */
typedef struct tl_ice_manifest_entry {
	int32_t status;            /* TL_ICE_STATUS_* */
	bool has_snapshot_id;
	int64_t snapshot_id;
	bool has_sequence_number;
	int64_t sequence_number;
	bool has_file_sequence_number;
	int64_t file_sequence_number;
	tl_ice_data_file data_file;
} tl_ice_manifest_entry;

/* A manifest list's summary of one partition field over a manifest. */
typedef struct tl_ice_field_summary {
	bool contains_null;
	bool has_contains_nan;     /* contains_nan is optional (unknown if absent) */
	bool contains_nan;
	bool has_lower_bound;
	tl_bytes lower_bound;      /* single-value binary form of the partition value */
	bool has_upper_bound;
	tl_bytes upper_bound;
} tl_ice_field_summary;

/*
 * A manifest list entry. v1 lists have no content or sequence numbers:
 * they read as 0 (data, sequence number 0), as the spec says.
 */
typedef struct tl_ice_manifest_file {
	const char *manifest_path;
	int64_t manifest_length;
	int32_t partition_spec_id;
	int32_t content;           /* TL_ICE_MANIFEST_* */
	int64_t sequence_number;
	int64_t min_sequence_number;
	int64_t added_snapshot_id;
	int32_t added_files_count;
	int32_t existing_files_count;
	int32_t deleted_files_count;
	int64_t added_rows_count;
	int64_t existing_rows_count;
	int64_t deleted_rows_count;
	uint32_t n_partitions;     /* one per partition field; 0: absent */
	tl_ice_field_summary *partitions;
} tl_ice_manifest_file;

/*
 * The spec's inheritance: a null snapshot id takes the manifest list
 * entry's added_snapshot_id; a null (file) sequence number of an ADDED
 * entry takes the manifest's sequence number. A v1 manifest (list sequence
 * number 0) gives every null sequence number 0. A null sequence number on
 * an EXISTING or DELETED entry of a v2 manifest is TL_ERR_CORRUPT.
 */
int tl_ice_manifest_entry_inherit(tl_ice_manifest_entry *entry, const tl_ice_manifest_file *manifest,
                                  tl_error *err);

/* ----------------------------------------------------------- reading */

/* Statistics maps, split offsets and equality ids with more entries are refused. */
#define TL_ICE_MAX_MANIFEST_MAP 1000000

typedef struct tl_ice_manifest_reader tl_ice_manifest_reader;

/*
 * Opens a manifest. The partition type comes from the header's "schema"
 * and "partition-spec" (every Iceberg writer puts them there); a manifest
 * without them reads only when unpartitioned. Does not close `in`.
 */
tl_ice_manifest_reader *tl_ice_manifest_reader_open(tl_input *in, tl_error *err);
void tl_ice_manifest_reader_free(tl_ice_manifest_reader *r);
/* 1 or 2 ("format-version"; absent means 1). */
int tl_ice_manifest_reader_format_version(const tl_ice_manifest_reader *r);
/* TL_ICE_MANIFEST_DATA or _DELETES ("content"; absent means data). */
int tl_ice_manifest_reader_content(const tl_ice_manifest_reader *r);
int32_t tl_ice_manifest_reader_spec_id(const tl_ice_manifest_reader *r);
const tl_ice_partition_spec *tl_ice_manifest_reader_spec(const tl_ice_manifest_reader *r);
const tl_ice_schema *tl_ice_manifest_reader_schema(const tl_ice_manifest_reader *r);
/* The partition tuple's struct type (nfields may be 0). */
const tl_ice_type *tl_ice_manifest_reader_partition_type(const tl_ice_manifest_reader *r);
/* 1 with *out set, 0 at the end, -1 on error. */
int tl_ice_manifest_reader_next(tl_ice_manifest_reader *r, const tl_ice_manifest_entry **out, tl_error *err);

typedef struct tl_ice_manifest_list_reader tl_ice_manifest_list_reader;

tl_ice_manifest_list_reader *tl_ice_manifest_list_reader_open(tl_input *in, tl_error *err);
void tl_ice_manifest_list_reader_free(tl_ice_manifest_list_reader *r);
int tl_ice_manifest_list_reader_format_version(const tl_ice_manifest_list_reader *r);
/* 1 with *out set, 0 at the end, -1 on error. */
int tl_ice_manifest_list_reader_next(tl_ice_manifest_list_reader *r, const tl_ice_manifest_file **out,
                                     tl_error *err);

/* ----------------------------------------------------------- writing */

typedef struct tl_ice_manifest_writer tl_ice_manifest_writer;

/*
 * Starts a v2 manifest of `content` (TL_ICE_MANIFEST_*) for files of
 * `spec` over `schema`. snapshot_id is the snapshot adding the manifest
 * (it becomes the list entry's added_snapshot_id). Does not close `out`.
 */
tl_ice_manifest_writer *tl_ice_manifest_writer_open(tl_output *out, const tl_ice_schema *schema,
                                                    const tl_ice_partition_spec *spec, int content,
                                                    int64_t snapshot_id, tl_error *err);
/* entry->data_file.npartition must match the spec's field count. */
int tl_ice_manifest_writer_add(tl_ice_manifest_writer *w, const tl_ice_manifest_entry *entry, tl_error *err);
/*
 * Writes the last block and fills what the manifest list entry needs:
 * manifest_length (the bytes written to `out`), spec id, content, added
 * snapshot id, file and row counts by status, partition summaries,
 * sequence_number -1 and min_sequence_number (the smallest non-null one
 * written, else -1); the list writer turns -1 into the snapshot's sequence
 * number, as a manifest new in this snapshot has it. The
 * manifest_path is the caller's. Summaries' bounds point into the writer:
 * valid until tl_ice_manifest_writer_free. Does not finish() `out`.
 */
int tl_ice_manifest_writer_close(tl_ice_manifest_writer *w, tl_ice_manifest_file *summary, tl_error *err);
void tl_ice_manifest_writer_free(tl_ice_manifest_writer *w);

typedef struct tl_ice_manifest_list_writer tl_ice_manifest_list_writer;

/*
 * parent_snapshot_id < 0: none ("null"). An entry's sequence_number or
 * min_sequence_number of -1 is written as this list's sequence_number.
 */
tl_ice_manifest_list_writer *tl_ice_manifest_list_writer_open(tl_output *out, int64_t snapshot_id,
                                                              int64_t parent_snapshot_id,
                                                              int64_t sequence_number, tl_error *err);
int tl_ice_manifest_list_writer_add(tl_ice_manifest_list_writer *w, const tl_ice_manifest_file *mf,
                                    tl_error *err);
int tl_ice_manifest_list_writer_close(tl_ice_manifest_list_writer *w, tl_error *err);
void tl_ice_manifest_list_writer_free(tl_ice_manifest_list_writer *w);

#endif
