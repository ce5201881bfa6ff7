/*-------------------------------------------------------------------------
 *
 * cutline_changes.c
 *		The shared counters of writes to tierdb.cutline (cutline_changes.h
 *		says what they are for) and the trigger that keeps them.
 *
 * seam.c caches the cut-line it last read per table; a statement that
 * reads the heap only checks that cache instead of opening the catalog,
 * which cost a hot point lookup more than 1% of its time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "cutline_changes.h"

typedef struct CutlineChanges
{
	pg_atomic_uint64 begun;		/* statements that started writing tierdb.cutline */
	pg_atomic_uint64 done;		/* of those, the ones whose transaction has ended */
} CutlineChanges;

static CutlineChanges *changes = NULL;
static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;

/* This backend's begun writes whose transaction has not ended yet. */
static uint64 begun_here = 0;
static bool xact_callback_registered = false;

bool
cutline_changes_quiet(uint64 *done)
{
	if (changes == NULL)
		return false;
	/*
	 * "done" first: it never exceeds "begun", so a "begun" read later that
	 * equals it was equal to "done" when "done" was read.
	 */
	*done = pg_atomic_read_u64(&changes->done);
	pg_memory_barrier();
	return pg_atomic_read_u64(&changes->begun) == *done;
}

bool
cutline_unchanged_since(uint64 done)
{
	uint64		now;

	return cutline_changes_quiet(&now) && now == done;
}

/* Counts this backend's writes done when their transaction ends, committed or not. */
static void
end_writes(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (begun_here > 0 && changes != NULL)
				pg_atomic_fetch_add_u64(&changes->done, begun_here);
			begun_here = 0;
			break;
		case XACT_EVENT_PRE_PREPARE:
			/* Its commit would come later, from any backend: nothing would count it done. */
			if (begun_here > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that has written tierdb.cutline")));
			break;
		default:
			break;
	}
}

PG_FUNCTION_INFO_V1(tierdb_cutline_writing);

/*
 * Statement trigger on tierdb.cutline, BEFORE INSERT, UPDATE, DELETE and
 * TRUNCATE, enabled ALWAYS (also under session_replication_role =
 * replica): counts the statement begun.
 */
Datum
tierdb_cutline_writing(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "tierdb_cutline_writing: not called as a trigger");
	if (changes == NULL)
		return PointerGetDatum(NULL);	/* not preloaded: no backend caches the cut-line */
	if (!xact_callback_registered)
	{
		RegisterXactCallback(end_writes, NULL);
		xact_callback_registered = true;
	}
	begun_here++;
	pg_atomic_fetch_add_u64(&changes->begun, 1);
	return PointerGetDatum(NULL);
}

static void
request_shmem(void)
{
	if (prev_shmem_request)
		prev_shmem_request();
	RequestAddinShmemSpace(MAXALIGN(sizeof(CutlineChanges)));
}

static void
attach_shmem(void)
{
	bool		found;

	if (prev_shmem_startup)
		prev_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	changes = ShmemInitStruct("tierdb cutline changes", sizeof(CutlineChanges), &found);
	if (!found)
	{
		pg_atomic_init_u64(&changes->begun, 0);
		pg_atomic_init_u64(&changes->done, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
cutline_changes_init(void)
{
	prev_shmem_request = shmem_request_hook;
	shmem_request_hook = request_shmem;
	prev_shmem_startup = shmem_startup_hook;
	shmem_startup_hook = attach_shmem;
}
