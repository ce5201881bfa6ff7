/*
 * commit_internal.h: one attempt at finishing a commit, shared by commit.c
 * (the API and the attempt's life), commit_manifests.c (manifests and the
 * manifest list) and commit_metadata.c (the summary and the new metadata).
 */
#ifndef TIERLAKE_ICEBERG_COMMIT_INTERNAL_H
#define TIERLAKE_ICEBERG_COMMIT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/iceberg_table.h"

/* A manifest of the new snapshot's list. */
typedef struct listed_manifest {
	tl_ice_manifest_file mf;     /* path and partition summaries live in the attempt's arena */
	bool written_here;           /* written by this attempt (new files or a rewrite) */
} listed_manifest;

/* What the commit changes, in the units of the snapshot summary. */
typedef struct change_counts {
	int64_t added_data_files, added_records, added_files_size;
	int64_t added_delete_files, added_eq_delete_files, added_pos_delete_files;
	int64_t added_eq_deletes, added_pos_deletes;
	int64_t deleted_data_files, deleted_records, removed_files_size;
	int64_t removed_delete_files, removed_eq_delete_files, removed_pos_delete_files;
	int64_t removed_eq_deletes, removed_pos_deletes;
} change_counts;

typedef struct attempt {
	const tl_ice_table *table;
	const tl_ice_table_metadata *base;
	const tl_ice_snapshot *parent;       /* NULL for the table's first snapshot */
	const tl_ice_schema *schema;         /* current schema */
	const tl_ice_partition_spec *spec;   /* default spec, for added files */
	const tl_ice_data_file *added;
	int nadded;
	const char *const *removed;          /* sorted, unique */
	int nremoved;
	bool *found;                         /* per removed path: live in the base */
	int64_t snapshot_id, sequence_number, timestamp_ms;
	int attempt;                         /* 1 for the first finish, as in Java's list names */
	char uuid[37];                       /* names every file this attempt writes */
	int next_manifest;                   /* k of <uuid>-m<k>.avro */
	tl_arena arena;
	listed_manifest *manifests;          /* the new list: written ones, then carried ones */
	int nmanifests, manifests_cap;
	char **written;                      /* locations created, removed if the attempt fails */
	int nwritten, written_cap;
	char *manifest_list;                 /* location of the new list */
	change_counts change;
} attempt;

/*
 * Starts an attempt at a new snapshot on t's base (the main branch's
 * snapshot): its parent, sequence number and timestamp; nothing added or
 * removed yet.
 */
void tl_ice_commit_start_attempt(attempt *a, const tl_ice_table *t, int64_t snapshot_id, int attempt_number);
/*
 * Frees the attempt; rc < 0 also removes every file it wrote, unless a
 * REST catalog left the commit's fate unknown (it may have landed).
 */
void tl_ice_commit_end_attempt(attempt *a, int rc);
/* A random positive 63-bit id no snapshot of md has, as Java picks them. */
int tl_ice_commit_new_snapshot_id(const tl_ice_table_metadata *md, int64_t *id, tl_error *err);
/*
 * A deep copy of src whose every pointer is into the arena. Out of memory,
 * some pointers are NULL: the caller compares tl_mem_failures() around it.
 */
void tl_ice_commit_copy_data_file(tl_arena *arena, tl_ice_data_file *dst, const tl_ice_data_file *src);

/* A new zeroed entry at the end of the attempt's list; NULL when out of memory. */
listed_manifest *tl_ice_commit_add_listed(attempt *a);
/* Creates <uuid>-m<k>.avro for the attempt (removed if it fails); *uri is in the attempt's arena. */
tl_output *tl_ice_commit_new_manifest(attempt *a, const char **uri, tl_error *err);
/* Closes a manifest writer and its file and fills m, the list entry for it (written_here). */
int tl_ice_commit_finish_manifest(attempt *a, tl_ice_manifest_writer *w, tl_output *out, const char *uri,
                                  listed_manifest *m, tl_error *err);

/* Reads one manifest's entries with the spec's inheritance applied. */
typedef struct commit_cursor {
	const tl_ice_manifest_file *mf;
	tl_input *in;
	tl_ice_manifest_reader *r;
} commit_cursor;

int tl_ice_commit_cursor_open(commit_cursor *cur, const tl_ice_manifest_file *mf, tl_error *err);
/* 1 with *e a copy valid until the next call, 0 at the end, -1 on error. */
int tl_ice_commit_cursor_next(commit_cursor *cur, tl_ice_manifest_entry *e, tl_error *err);
void tl_ice_commit_cursor_close(commit_cursor *cur);

/* The snapshot the "main" branch names (else the current one), or TL_ICE_NO_SNAPSHOT. */
int64_t tl_ice_commit_base_snapshot_id(const tl_ice_table_metadata *md);

/* Reads the parent's manifest list into a->manifests (none for a first snapshot). */
int tl_ice_commit_load_base(attempt *a, tl_error *err);
/* Rewrites the manifests holding removed files, drops those left without live files. */
int tl_ice_commit_apply_removals(attempt *a, tl_error *err);
/* Writes the manifests of the added files (one for data, one for deletes). */
int tl_ice_commit_write_added(attempt *a, tl_error *err);
/* Writes the manifest list; sets a->manifest_list. */
int tl_ice_commit_write_list(attempt *a, tl_error *err);
/*
 * Live totals of the parent snapshot read from its manifests, for a parent
 * whose summary lacks them: records, files size, data files, delete files,
 * position deletes, equality deletes.
 */
int tl_ice_commit_count_parent(const attempt *a, int64_t totals[6], tl_error *err);

/*
 * The base metadata with the attempt's snapshot added as current and on
 * "main", and `previous_file` in the metadata log.
 */
tl_ice_table_metadata *tl_ice_commit_new_metadata(const attempt *a, const char *previous_file,
                                                  const tl_ice_kv *extra, int nextra, tl_ice_operation op,
                                                  tl_error *err);

/* A deep copy of md (NULL with err set for a v1 table without a table-uuid). */
tl_ice_table_metadata *tl_ice_commit_copy_metadata(const tl_ice_table_metadata *md, tl_error *err);

/*
 * Appends `previous_file` (last updated at base_updated_ms) to md's metadata
 * log, keeping the newest write.metadata.previous-versions-max entries.
 * Out of memory it leaves md as it was; callers compare tl_mem_failures().
 */
void tl_ice_commit_log_metadata(tl_ice_table_metadata *md, int64_t base_updated_ms, const char *previous_file);

/* The metadata-log entry for t's current file, under the table location (tl_free); NULL when out of memory. */
char *tl_ice_commit_base_location(const tl_ice_table *t);

/*
 * The start of a metadata-only commit (schema evolution, rollback): a copy
 * of t's metadata with t's current file appended to its metadata log, for
 * the caller to change and hand to tl_ice_commit_publish. NULL with err set.
 */
tl_ice_table_metadata *tl_ice_commit_next_metadata(const tl_ice_table *t, tl_error *err);

/*
 * Publishes md (taken over) as the version after t's current one, then
 * points the hint at it and makes it t's state.
 */
int tl_ice_commit_publish(tl_ice_table *t, const char *metadata_dir, tl_ice_table_metadata *md, tl_error *err);

#endif
