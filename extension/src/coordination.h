/*
 * coordination.h: the locks readers and the daemon meet on, which no SQL
 * session can take by itself (issue 16 item 12).
 *
 * Both are heavyweight locks with an advisory lock tag whose fourth field is
 * one the SQL advisory functions never use (they use 1 and 2), so
 * pg_advisory_lock() on any key cannot collide with them. Readers take the
 * reader lock in C; the daemon takes both through tierdb.wait_for_readers()
 * and tierdb.try_become_leader(), which only the owner and members of
 * tierdb_worker may execute. pg_locks shows them as advisory locks with
 * objsubid 3 (readers; objid = the table oid) and 4 (the leader).
 */
#ifndef TIERDB_COORDINATION_H
#define TIERDB_COORDINATION_H

#include "postgres.h"

#include "storage/lockdefs.h"

/*
 * Takes table_id's reader lock in `mode` until the transaction ends:
 * ShareLock for a reader of the cut-line, ExclusiveLock for the daemon
 * waiting out readers before it drops partitions. Waits obey lock_timeout.
 */
extern void coordination_lock_readers(int64 table_id, LOCKMODE mode);

#endif
