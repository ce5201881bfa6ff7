/*
 * retention.h: lake retention (SPEC §2 "Retention line R", §8; issue 18 §4).
 *
 * A tiered table registered with --lake-retention N (tables.lake_retention_lag,
 * canonical units) keeps only the lake rows with tier_key >= R, where
 *
 *   R = align_down(min(max(tier_key) - N, T))
 *
 * aligned down to a boundary of the lake's partition transform (day, hour,
 * month, year, truncate[W]; none for an unpartitioned lake). The daemon
 * expires by metadata only: one Iceberg DELETE snapshot removes every live
 * data file whose tier-key upper bound lies below R (with R aligned, those
 * are the whole partitions below R); no file is rewritten, so when a file
 * straddles the line (an unpartitioned lake, or files written by another
 * engine) the line moves down to that file's lower bound, and no row below
 * R stays readable (docs/retention.md). R advances in
 * tierdb.cutline.retention_line in the transaction that publishes the new
 * S, and never moves back; delta rows below R leave in that transaction.
 * An unexpired read pin of the table postpones the step (its reader may
 * still need the view it pinned).
 */
#ifndef TIERDB_RETENTION_H
#define TIERDB_RETENTION_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/error.h"

/*
 * One retention step for the table: settles interrupted retention runs
 * first, then advances R when the table has a lake retention lag and the
 * new line lies above the old one. 0 (done, or nothing to do, or waiting
 * for pins: logged), -1 with err.
 */
int tdb_retention(PGconn *c, const tdb_catalog_table *t, tl_error *err);

/*
 * Adopts (the lake holds the DELETE snapshot stamped with its op id) or
 * rolls back (it does not) every retention run of the table that a crash
 * interrupted. Returns how many it settled, 0 when it must wait for read
 * pins, or -1 with err.
 */
int tdb_recover_retention(PGconn *c, const tdb_catalog_table *t, tl_error *err);

/*
 * `v` aligned down to a boundary of the lake partition transform `transform`
 * (partition_scheme's "lake_transform": "hour", "day", "month", "year",
 * "truncate[W]", "void"/"identity"/NULL for none) of a key of `type`.
 * Exposed for tests and `tierdb status`.
 */
int64_t tdb_retention_align(tdb_key_type type, const char *transform, int64_t v);

#endif
