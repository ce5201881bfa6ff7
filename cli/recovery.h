/*
 * recovery.h: settling tiering operations that a crash interrupted
 * (SPEC §8 "resumes or is adopted after a crash at any instant";
 * ARCHITECTURE decision 5).
 *
 * A tiering run (tiering.c) journals its phases in tierdb.op_log and stamps
 * its lake snapshot with tierdb.op-id = op_id. Whatever instant the daemon
 * died at, the lake and the catalog say which of two things happened:
 *
 *   the lake holds a snapshot stamped with the op id: the rows are in the
 *     lake, so the operation is adopted: published as tiering.c would have
 *     published it (T, S, lake_props; partitions 'tiered'; phase
 *     'published'), after which the ordinary drop step removes the heap
 *     partitions and marks it 'done';
 *   it does not: nothing reached readers, so the operation is rolled back:
 *     the data files it recorded are deleted, both seal triggers removed,
 *     its partitions 'hot' again and its phase 'aborted'; the next tiering
 *     run moves the same rows afresh.
 *
 * Operations already 'published' need nothing here: the drop step finishes
 * them (tdb_drop_tiered, tdb_oplog_finish_drops).
 */
#ifndef TIERDB_RECOVERY_H
#define TIERDB_RECOVERY_H

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_writer.h"


/*
 * Adopts or rolls back every tiering operation of the table whose phase is
 * 'sealing', 'writing' or 'committed', under the table's lake lock, and
 * logs what it did and why. Returns how many it settled (the catalog row
 * `t` is stale when that is not 0), or -1 with err; an operation it cannot
 * settle safely (its journal and the lake disagree) is an error that names
 * it and stays for an operator.
 */
int tdb_recover_tiering(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
