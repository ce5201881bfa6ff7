/*
 * maintenance.h: the daemon's lake maintenance of one table (SPEC §9,
 * docs/maintenance.md): health statistics every cycle, and, when the
 * policy's interval has passed or `tierdb maintain` asked, compaction,
 * manifest rewrite, snapshot expiry and the opt-in orphan sweep, each a
 * journaled lake operation.
 */
#ifndef TIERDB_MAINTENANCE_H
#define TIERDB_MAINTENANCE_H

#include <stdint.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/error.h"

/* What one maintenance run did, for the log, lake_stats and `tierdb maintain`. */
typedef struct tdb_maintenance_result {
	int64_t files_rewritten;        /* data files compaction replaced */
	int64_t files_written;          /* data files it wrote */
	int64_t delete_files_removed;   /* delete files it made unnecessary */
	int64_t bytes_rewritten;        /* bytes of the replaced data files */
	int64_t rows_written;
	int64_t manifests_rewritten;    /* manifests a manifest rewrite replaced */
	int64_t manifests_written;
	int64_t snapshots_expired;
	int64_t files_deleted;          /* files expiry deleted */
	int64_t bytes_deleted;
	int64_t orphans_deleted;
	int64_t orphan_bytes_deleted;
} tdb_maintenance_result;

/*
 * Settles table t's maintenance operations a crash interrupted
 * (compaction, manifest rewrite, expiry, orphan sweep), each on the
 * lake's word; how many, or -1. The recovery step runs it before the
 * other lake steps, which an open operation would stop.
 */
int tdb_recover_maintenance(PGconn *c, const tdb_catalog_table *t, tl_error *err);

/*
 * The daemon's maintenance step for table t: settles interrupted
 * maintenance operations, runs the passes that are due, records
 * tierdb.lake_stats and answers a maintenance request.
 */
int tdb_maintain(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
