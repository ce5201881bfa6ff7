/*-------------------------------------------------------------------------
 *
 * lake_env.c
 *		The backend's side of the lake library's host boundary: memory and
 *		interrupts (lake/include/tierlake/env.h).
 *
 * Interrupts.  The library calls our check in its long loops (manifest
 * reading, scan planning, the readers' batch loops, the writers, S3
 * transfers).  The check only reads the flags the signal handlers set; it
 * never ereports and never calls CHECK_FOR_INTERRUPTS(), because a longjmp
 * through the library would skip its cleanup and leak or corrupt its state.
 * It answers true only for what ends the statement (a cancel, which is also
 * how statement_timeout arrives, or a terminate) and only when Postgres
 * would act on it now: other interrupts (barriers, notifications) are
 * serviced at the next CHECK_FOR_INTERRUPTS() as usual.  When a lake call
 * comes back with TL_ERR_INTERRUPTED, tierdb_lake_error_precheck() runs
 * CHECK_FOR_INTERRUPTS() so the error the user sees is Postgres' own
 * ("canceling statement due to statement timeout", SQLSTATE 57014).
 *
 * Memory.  The library keeps the C library's allocator in a backend.  It
 * no longer aborts when an allocation fails: the call returns
 * TL_ERR_NOMEM and tierdb_lake_error_precheck() turns that into
 * ERRCODE_OUT_OF_MEMORY at the call boundary.  We considered palloc in a
 * long-lived "TierDB lake library" context (so the memory would show in
 * pg_backend_memory_contexts) and did not take it:
 *	- the library needs a realloc that reports failure instead of throwing,
 *	  and PostgreSQL 15 has none (repalloc_extended arrived in 16);
 *	  emulating it needs the old chunk's size, which palloc does not expose
 *	  exactly;
 *	- lake objects are released by memory-context reset callbacks of
 *	  shorter-lived contexts; a chunk of ours must never be pfree'd after its
 *	  context was reset, so the context would have to live for the backend,
 *	  and then it gives no lifetime safety that malloc does not;
 *	- AllocSet hands chunks above 8 kB (every column chunk and page buffer of
 *	  the reader) to malloc one by one anyway, so glibc's behaviour, and the
 *	  mallopt tuning in lake_scan.c, would stay what they are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "lake_env.h"
#include "tierlake/env.h"

/* True when a cancel or terminate is pending and Postgres would act on it now. */
static bool
lake_interrupt_check(void *arg)
{
	(void) arg;
	if (!InterruptPending)
		return false;
	if (!INTERRUPTS_CAN_BE_PROCESSED())
		return false;
	return ProcDiePending || QueryCancelPending;
}

void
tierdb_lake_env_init(void)
{
	tl_set_interrupt_check(lake_interrupt_check, NULL);
}

int
tierdb_lake_errcode(tl_error_code code)
{
	switch (code)
	{
		case TL_ERR_CORRUPT:
			return ERRCODE_DATA_CORRUPTED;
		case TL_ERR_NOT_FOUND:
			return ERRCODE_UNDEFINED_FILE;
		case TL_ERR_IO:
			return ERRCODE_IO_ERROR;
		case TL_ERR_UNSUPPORTED:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case TL_ERR_NOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		case TL_ERR_INTERRUPTED:
			return ERRCODE_QUERY_CANCELED;
		default:
			return ERRCODE_INTERNAL_ERROR;
	}
}

void
tierdb_lake_error_precheck(const tl_error *err)
{
	if (err->code == TL_ERR_INTERRUPTED)
	{
		/* Reports the statement timeout or cancel itself and does not return. */
		CHECK_FOR_INTERRUPTS();
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("canceling statement: the lake read was interrupted")));
	}
	if (err->code == TL_ERR_NOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("%s", err->message),
				 errdetail("The TierDB lake library could not allocate memory.")));
}
