/*
 * compaction.h: rewriting a tiered table's lake data files (compaction.c
 * says how): bin-packing small files and applying delete debt.
 */
#ifndef TIERDB_COMPACTION_H
#define TIERDB_COMPACTION_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "maintenance.h"
#include "maintenance_policy.h"

/*
 * One compaction run of table t at its published S under `policy`
 * (requested: `tierdb maintain` asked, so any small-file pair or delete
 * debt is worth a rewrite). Adds what it did to *result. Expects no
 * unsettled operation of the table (tdb_recover_compaction first).
 */
int tdb_compact(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *policy, bool requested,
                tdb_maintenance_result *result, tl_error *err);

/* Settles interrupted compaction runs (adopt or undo, on the lake's word); how many, or -1. */
int tdb_recover_compaction(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
