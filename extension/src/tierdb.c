/*-------------------------------------------------------------------------
 *
 * tierdb.c
 *		The tierdb shared library: its entry point, _PG_init.
 *
 * The library is meant to be loaded through shared_preload_libraries =
 * 'tierdb' (SPEC §7).  The catalog itself is plain SQL (sql/tierdb--*.sql)
 * and needs no library, so CREATE EXTENSION does not load this one.
 *
 * What the library does so far is the embedded worker (worker.c): with
 * tierdb.embedded_worker = on the server runs and supervises the TierDB
 * daemon itself.  The other SPEC §7 settings (transparent reads and writes,
 * mirrored reads, explain) belong to hooks that do not exist yet and are not
 * defined here, so setting them has no effect and is reported.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "worker.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	/*
	 * The settings are defined whenever the library is loaded (also by a
	 * plain LOAD), so SHOW and pg_settings describe them everywhere.
	 */
	tierdb_worker_define_gucs();

	/*
	 * Claim the prefix: a misspelt tierdb.* setting, or one this version
	 * does not implement yet, is then reported at startup rather than
	 * silently kept as a placeholder.
	 */
	MarkGUCPrefixReserved("tierdb");

	/*
	 * Background workers can only be registered from the postmaster while it
	 * loads shared_preload_libraries.
	 */
	if (process_shared_preload_libraries_in_progress)
		tierdb_worker_register();
}
