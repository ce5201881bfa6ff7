/*
 * iceberg_maintenance.h: keeping an Iceberg table small and fast: walking
 * what a snapshot references, expiring snapshots, rewriting manifests and
 * finding orphan files, with the semantics of Java Iceberg's
 * ExpireSnapshots, RewriteManifests and DeleteOrphanFiles.
 *
 * Nothing here decides *which* snapshots may go: the caller (TierDB's
 * daemon) knows about readers the table cannot see (read pins) and passes
 * the snapshots that must stay. Deleting files is split from the metadata
 * commit that makes them unreferenced, so a caller can journal the commit
 * and delete afterwards, or after a crash, by comparing two metadata
 * versions (tl_ice_unreferenced_files).
 */
#ifndef TIERLAKE_ICEBERG_MAINTENANCE_H
#define TIERLAKE_ICEBERG_MAINTENANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/error.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_table.h"

/* What kind of file a snapshot references. */
typedef enum tl_ice_file_kind {
	TL_ICE_FILE_MANIFEST_LIST,
	TL_ICE_FILE_MANIFEST,
	TL_ICE_FILE_DATA,
	TL_ICE_FILE_POSITION_DELETES,
	TL_ICE_FILE_EQUALITY_DELETES,
	TL_ICE_FILE_METADATA           /* a vN.metadata.json (tl_ice_unreferenced_files) */
} tl_ice_file_kind;

/*
 * One live file of a snapshot, as tl_ice_snapshot_files hands it over.
 * For manifest lists and manifests only kind, path and size are set (the
 * manifest's content is in manifest_content); for data and delete files,
 * `entry` is the manifest entry (sequence numbers inherited) and spec_id
 * the spec of its manifest. Valid only during the callback.
 */
typedef struct tl_ice_file_ref {
	tl_ice_file_kind kind;
	const char *path;
	int64_t size;
	int32_t manifest_content;            /* TL_ICE_MANIFEST_*, for manifests */
	int32_t spec_id;                     /* data and delete files */
	const tl_ice_manifest_entry *entry;  /* data and delete files */
} tl_ice_file_ref;

/* Returns 0 to go on, non-zero to stop the walk (returned as is) with err set when negative. */
typedef int (*tl_ice_file_fn)(void *arg, const tl_ice_file_ref *ref, tl_error *err);

/*
 * Calls fn for snapshot_id's manifest list, each of its manifests, and each
 * live (ADDED or EXISTING) data and delete file in them, in manifest-list
 * order: each manifest, then its files. A v1 snapshot without a list
 * reports no list, then the manifests the metadata names and their files
 * (a manifest's size is 0 there: no list records it). fn is called while
 * the list and the manifest are open: it must not delete them. An unknown
 * snapshot is TL_ERR_NOT_FOUND.
 */
int tl_ice_snapshot_files(const tl_ice_table_metadata *md, int64_t snapshot_id, tl_ice_file_fn fn, void *arg,
                          tl_error *err);

/* ------------------------------------------------------------- expiry */

typedef struct tl_ice_expire_options {
	int64_t older_than_ms;        /* expire snapshots whose timestamp_ms is below this */
	int retain_last;              /* but keep the newest retain_last ancestors of the current snapshot (>= 1) */
	const int64_t *keep_ids;      /* and these snapshots, whatever their age (pinned readers); may be NULL */
	int nkeep_ids;
} tl_ice_expire_options;

/*
 * Removes from the table's metadata every snapshot that is old enough
 * (older_than_ms), is not among the newest retain_last ancestors of the
 * current snapshot, is not in keep_ids, and is not the head of any
 * branch or tag, nor the current snapshot: a metadata-only commit
 * (v<N+1>.metadata.json written exclusively, losing the race is
 * TL_ERR_CONFLICT; through a REST catalog, a remove-snapshots update).
 * Branches' min-snapshots-to-keep ancestors stay too, as in Java. The
 * snapshot log keeps only entries of snapshots that remain, and none
 * before the last entry of a removed one (Java's rule: a gap would make
 * an earlier snapshot look current for longer than it was); the
 * metadata log is trimmed to write.metadata.previous-versions-max as every
 * commit does. *nexpired (may be NULL) is how many snapshots went; none
 * writes nothing. No file is deleted: see tl_ice_unreferenced_files.
 */
int tl_ice_table_expire_snapshots(tl_ice_table *t, const tl_ice_expire_options *opts, int *nexpired,
                                  tl_error *err);

/*
 * The files `before` references that `after` (a later version of the same
 * table) no longer does: every manifest list, manifest, data and delete
 * file reachable from a snapshot of `before` and from no snapshot of
 * `after`, plus the metadata files in before's metadata log (and before's
 * own file, `before_file`, may be NULL) that are neither after's current
 * file (`after_file`) nor in after's metadata log, and whose log timestamp
 * is below metadata_older_than_ms (kind TL_ICE_FILE_METADATA). Each goes
 * to fn once (entry NULL), after every manifest list and manifest has been
 * read, so fn may delete it. Deleting them is safe once no reader of
 * before's expired snapshots remains. They come data and delete files
 * first, then manifests, manifest lists and metadata files, and a manifest
 * list or manifest of `before` that is gone is passed over: a caller
 * interrupted while deleting them calls again with the same versions and
 * finishes the job.
 */
int tl_ice_unreferenced_files(const tl_ice_table_metadata *before, const char *before_file,
                              const tl_ice_table_metadata *after, const char *after_file,
                              int64_t metadata_older_than_ms, tl_ice_file_fn fn, void *arg, tl_error *err);

/* -------------------------------------------------- manifest rewrite */

/*
 * Rewrites the current snapshot's manifests into as few as target_bytes
 * allows, each holding one content (data or deletes) of one partition spec,
 * its entries sorted by partition tuple so that each manifest covers a
 * narrow partition range (its partition summaries then prune): a new
 * snapshot with operation "replace", whose entries are EXISTING with their
 * snapshot ids and sequence numbers kept, so every row and every delete
 * reads as before. `summary` (may be NULL, nsummary entries) goes into the
 * snapshot summary (the caller's op id). Does nothing (*snapshot_id =
 * TL_ICE_NO_SNAPSHOT) when the snapshot has at most one manifest per
 * content and spec. Losing the race for the next version is
 * TL_ERR_CONFLICT; a failed attempt removes what it wrote.
 */
int tl_ice_table_rewrite_manifests(tl_ice_table *t, int64_t target_bytes, const tl_ice_kv *summary, int nsummary,
                                   int64_t *snapshot_id, tl_error *err);

/* ------------------------------------------------------------- orphans */

/*
 * Calls fn (kind TL_ICE_FILE_DATA for any file; path the full location,
 * size its bytes) for every file under the table's location that no
 * snapshot of the current metadata references, that is neither the
 * current metadata file, one in its metadata log, nor version-hint.text,
 * and whose modification time is below older_than_ms (files being written
 * by a commit in progress are younger). The caller deletes them.
 */
int tl_ice_table_orphan_files(const tl_ice_table *t, int64_t older_than_ms, tl_ice_file_fn fn, void *arg,
                              tl_error *err);

#endif
