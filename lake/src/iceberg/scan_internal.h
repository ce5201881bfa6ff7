/*
 * scan_internal.h: the plan a scan builds, shared by the planner (scan.c)
 * and the pairing of data files with delete files (scan_deletes.c).
 */
#ifndef TIERLAKE_ICEBERG_SCAN_INTERNAL_H
#define TIERLAKE_ICEBERG_SCAN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_scan.h"

struct tl_ice_scan {
	int64_t snapshot_id;
	tl_ice_schema schema;          /* copy of the snapshot's schema */
	bool have_schema;
	int nspecs;
	tl_ice_partition_spec *specs;  /* copies of every spec of the table */
	const tl_ice_expr *filter;     /* copy in `arena`, or NULL */
	/*
	 * Everything kept for the tasks: copies of the manifest entries,
	 * partition keys, delete lists. One arena, so planning 10,000 files
	 * costs a handful of mallocs and freeing the scan costs a few more.
	 */
	tl_arena arena;

	tl_ice_scan_task *tasks;
	tl_bytes *task_keys;           /* partition key per task (see below) */
	int ntasks, cap_tasks;

	tl_ice_delete_file *deletes;
	tl_bytes *delete_keys;
	int ndeletes, cap_deletes;

	tl_ice_scan_stats stats;
};

/*
 * A partition key is the tuple in a canonical byte form (per field a null
 * flag, then the length and single-value form), so tuples compare and hash
 * as bytes whatever their types. Files of unpartitioned specs, and every
 * file when the plan has no partition-scoped deletes, have an empty key.
 */

/* True when a spec has no fields or only void ones: its deletes are global. */
bool tl_ice_scan_spec_unpartitioned(const tl_ice_partition_spec *spec);

/*
 * Pairs every task with the delete files that apply to it (the rules in
 * iceberg_scan.h), fills task->deletes in the arena and counts the delete
 * files used in stats.delete_files.
 */
int tl_ice_scan_associate_deletes(tl_ice_scan *scan, tl_error *err);

#endif
