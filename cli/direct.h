/*
 * direct.h: the daemon's side of direct tables (docs/direct.md).
 *
 * A direct table's writes below the cut-line are committed to the lake by
 * the writing backend when its transaction commits (extension/src/direct.c),
 * under the table's lake lock, and published (S) in that same transaction.
 * A transaction that then fails to commit (an error later in its commit, a
 * crash, a kill) leaves a lake snapshot that no committed S names and no
 * journal knows. The next backend to commit to the table rolls it back; so
 * does the daemon, first thing in each cycle, so that its own steps (which
 * refuse a lake past S) find the lake at S.
 */
#ifndef TIERDB_DIRECT_H
#define TIERDB_DIRECT_H

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/error.h"

/*
 * For a direct table: under the lake lock, rolls the lake back to the
 * published S when every snapshot past it was committed by a transaction
 * that did not commit (its op id is in no op_log row). Snapshots past S
 * that the journal knows are left to recovery. 0 (also for other modes, and
 * when there is nothing to do), -1 with err.
 */
int tdb_settle_direct_commits(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
