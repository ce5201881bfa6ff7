/*
 * maintenance_internal.h: what the maintenance operations share (expiry,
 * unreferenced files, orphan files, iceberg_maintenance.h): a set of file
 * locations that compares them the way storage resolves them, and a walk
 * over a snapshot's files that can skip manifests already known.
 */
#ifndef TIERLAKE_ICEBERG_MAINTENANCE_INTERNAL_H
#define TIERLAKE_ICEBERG_MAINTENANCE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tierlake/iceberg_maintenance.h"

/*
 * A set of file locations. Two spellings of one file are one member:
 * a file: URI is its local path (as local storage opens it), s3a:// is
 * s3://, and repeated slashes and "./" segments after the scheme's "//"
 * are dropped. Treating more spellings as equal only ever keeps a file
 * that could have gone, never the reverse, which is the safe side for
 * callers that delete what a set does not hold.
 */
typedef struct tl_ice_file_slot {
	const char *key;      /* the normal form, in the set's arena; NULL: empty */
	uint64_t hash;
} tl_ice_file_slot;

typedef struct tl_ice_file_set {
	tl_ice_file_slot *slots;   /* open addressing */
	size_t cap, count;
	tl_arena arena;
} tl_ice_file_set;

void tl_ice_file_set_init(tl_ice_file_set *set);
void tl_ice_file_set_free(tl_ice_file_set *set);
/* 1 when location was new, 0 when a spelling of it was there, -1 when out of memory. */
int tl_ice_file_set_add(tl_ice_file_set *set, const char *location);
bool tl_ice_file_set_has(const tl_ice_file_set *set, const char *location);

/* Whether a manifest's entries must be read (false: its files are known already). */
typedef bool (*tl_ice_manifest_wanted_fn)(void *arg, const char *manifest_path);

/*
 * tl_ice_snapshot_files for one snapshot, except that a manifest for which
 * wanted (may be NULL: all) answers false is reported without its files.
 * wanted is asked before the manifest is reported. With skip_missing, a
 * manifest list or manifest that does not exist (TL_ERR_NOT_FOUND) is
 * passed over unreported instead of failing the walk.
 */
int tl_ice_walk_snapshot(const tl_ice_snapshot *snap, tl_ice_file_fn fn, tl_ice_manifest_wanted_fn wanted,
                         bool skip_missing, void *arg, tl_error *err);

/* Adds every file some snapshot of md references to set, reading each manifest once. */
int tl_ice_add_reachable(tl_ice_file_set *set, const tl_ice_table_metadata *md, tl_error *err);

#endif
