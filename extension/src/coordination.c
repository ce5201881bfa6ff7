/*
 * coordination.c: the reader lock and the daemon's leader lock
 * (coordination.h), and the two SQL functions through which the daemon
 * takes them.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"

#include "coordination.h"

/* The advisory tag's fourth field: the SQL functions use 1 (int8 key) and 2 (two int4 keys). */
#define TAG_READERS 3
#define TAG_LEADER 4

static void
readers_tag(LOCKTAG *tag, int64 table_id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) ((uint64) table_id >> 32), (uint32) table_id,
						 TAG_READERS);
}

void
coordination_lock_readers(int64 table_id, LOCKMODE mode)
{
	LOCKTAG		tag;

	readers_tag(&tag, table_id);
	(void) LockAcquire(&tag, mode, false, false);
}

PG_FUNCTION_INFO_V1(tierdb_wait_for_readers);

/*
 * tierdb.wait_for_readers(table_id bigint): waits until no transaction
 * reads the table with the cut-line it pinned, and keeps new readers
 * waiting until the caller's transaction ends. lock_timeout bounds it.
 */
Datum
tierdb_wait_for_readers(PG_FUNCTION_ARGS)
{
	coordination_lock_readers(PG_GETARG_INT64(0), ExclusiveLock);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(tierdb_try_become_leader);

/*
 * tierdb.try_become_leader(): true if this session now leads the daemons of
 * this database (it keeps the lock until it disconnects), false if another
 * session leads. Never waits.
 */
Datum
tierdb_try_become_leader(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, TAG_LEADER);
	PG_RETURN_BOOL(LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL);
}
