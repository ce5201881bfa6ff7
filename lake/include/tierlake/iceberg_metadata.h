/*
 * iceberg_metadata.h: Iceberg table metadata (the vN.metadata.json file).
 *
 * Reads format v1 and v2 as any engine writes them, filling what v1 lacks
 * with the values the spec prescribes for an upgrade (sequence numbers 0,
 * a "main" ref for the current snapshot, the unsorted order), and writes
 * format v2. Fields this library does not use are tolerated and dropped.
 */
#ifndef TIERLAKE_ICEBERG_METADATA_H
#define TIERLAKE_ICEBERG_METADATA_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_schema.h"
#include "tierlake/iceberg_transform.h"

/* "No snapshot" for current-snapshot-id and parent ids. */
#define TL_ICE_NO_SNAPSHOT (-1)

typedef struct tl_ice_kv {
	char *key;
	char *value;
} tl_ice_kv;

typedef struct tl_ice_snapshot {
	int64_t snapshot_id;
	int64_t parent_id;          /* TL_ICE_NO_SNAPSHOT when absent */
	int64_t sequence_number;    /* 0 for v1 snapshots */
	int64_t timestamp_ms;
	char *manifest_list;        /* NULL for an old v1 snapshot that lists manifests */
	int nmanifests;             /* v1 "manifests" */
	char **manifests;
	char *operation;            /* summary "operation" ("append" if v1 omits it) */
	int nsummary;               /* the rest of the summary, in file order */
	tl_ice_kv *summary;
	int32_t schema_id;          /* -1 when absent */
} tl_ice_snapshot;

typedef struct tl_ice_sort_field {
	int32_t source_id;
	tl_ice_transform transform;
	bool descending;
	bool nulls_first;
} tl_ice_sort_field;

typedef struct tl_ice_sort_order {
	int32_t order_id;           /* 0 is the unsorted order */
	int nfields;
	tl_ice_sort_field *fields;
} tl_ice_sort_order;

typedef struct tl_ice_snapshot_log_entry {
	int64_t timestamp_ms;
	int64_t snapshot_id;
} tl_ice_snapshot_log_entry;

typedef struct tl_ice_metadata_log_entry {
	int64_t timestamp_ms;
	char *metadata_file;
} tl_ice_metadata_log_entry;

typedef struct tl_ice_ref {
	char *name;
	int64_t snapshot_id;
	bool is_branch;             /* false: a tag */
	/* Retention settings; -1 when absent. */
	int64_t max_ref_age_ms;
	int64_t max_snapshot_age_ms;
	int32_t min_snapshots_to_keep;
} tl_ice_ref;

typedef struct tl_ice_table_metadata {
	int format_version;         /* as read: 1 or 2; written as 2 */
	char *table_uuid;
	char *location;
	int64_t last_sequence_number;
	int64_t last_updated_ms;
	int32_t last_column_id;
	int nschemas;
	tl_ice_schema *schemas;
	int32_t current_schema_id;
	int nspecs;
	tl_ice_partition_spec *specs;
	int32_t default_spec_id;
	int32_t last_partition_id;
	int nsort_orders;
	tl_ice_sort_order *sort_orders;
	int32_t default_sort_order_id;
	int nproperties;
	tl_ice_kv *properties;
	int64_t current_snapshot_id;   /* TL_ICE_NO_SNAPSHOT when none */
	int nsnapshots;
	tl_ice_snapshot *snapshots;
	int nsnapshot_log;
	tl_ice_snapshot_log_entry *snapshot_log;
	int nmetadata_log;
	tl_ice_metadata_log_entry *metadata_log;
	int nrefs;
	tl_ice_ref *refs;
} tl_ice_table_metadata;

/*
 * Parses metadata JSON text. Missing required fields, wrong types and ids
 * that refer to nothing (current-schema-id, default-spec-id, a partition
 * source id, current-snapshot-id) are TL_ERR_CORRUPT naming the field;
 * unknown transforms and format versions other than 1 and 2 are
 * TL_ERR_UNSUPPORTED. Returns NULL on failure.
 */
tl_ice_table_metadata *tl_ice_metadata_parse(const char *json, size_t len, tl_error *err);

/* Appends the format-v2 JSON of md to out (0, or -1 if md is inconsistent). */
int tl_ice_metadata_write(const tl_ice_table_metadata *md, tl_buf *out, tl_error *err);

/*
 * New metadata for an empty table: format v2, a fresh random table-uuid,
 * schema id 0, spec id 0, the unsorted order, the given properties
 * (copied; may be NULL when nproperties is 0), last-updated-ms now.
 * Schema and spec are copied and checked; their ids are reset to 0.
 */
tl_ice_table_metadata *tl_ice_metadata_create(const char *location, const tl_ice_schema *schema,
                                              const tl_ice_partition_spec *spec,
                                              const tl_ice_kv *properties, int nproperties,
                                              tl_error *err);

void tl_ice_metadata_free(tl_ice_table_metadata *md);
/* Frees what s holds (not s itself), for code that removes a snapshot from metadata it owns. */
void tl_ice_snapshot_clear(tl_ice_snapshot *s);

/* Lookups; NULL when absent. */
const tl_ice_snapshot *tl_ice_metadata_snapshot(const tl_ice_table_metadata *md, int64_t snapshot_id);
const tl_ice_snapshot *tl_ice_metadata_current_snapshot(const tl_ice_table_metadata *md);
const tl_ice_schema *tl_ice_metadata_schema(const tl_ice_table_metadata *md, int32_t schema_id);
const tl_ice_schema *tl_ice_metadata_current_schema(const tl_ice_table_metadata *md);
const tl_ice_partition_spec *tl_ice_metadata_spec(const tl_ice_table_metadata *md, int32_t spec_id);
const tl_ice_partition_spec *tl_ice_metadata_default_spec(const tl_ice_table_metadata *md);
const char *tl_ice_metadata_property(const tl_ice_table_metadata *md, const char *key);
/* A snapshot's summary value (the operation under "operation"), or NULL. */
const char *tl_ice_snapshot_summary(const tl_ice_snapshot *snap, const char *key);

/* A random RFC 4122 version-4 UUID from /dev/urandom, as 36 characters plus NUL. */
int tl_ice_uuid_v4(char out[37], tl_error *err);

#endif
