/*-------------------------------------------------------------------------
 *
 * tierdb.c
 *		The tierdb shared library: its entry point, _PG_init.
 *
 * CREATE EXTENSION loads the library for the SQL functions written in C
 * (the lake scan, the cold rows, the routing bridges); loading it through
 * shared_preload_libraries = 'tierdb' (SPEC §7) also installs the hooks and
 * can start the worker:
 *
 *	- transparent reads (transparent.c, cold_scan.c, seam.c): SELECTs on
 *	  registered tiered tables read the heap at or above T and the lake
 *	  below it; tierdb.transparent_reads;
 *	- the embedded worker (worker.c): with tierdb.embedded_worker = on the
 *	  server runs and supervises the TierDB daemon itself;
 *	- tierdb.explain, which makes tierdb_upsert() and tierdb_delete()
 *	  narrate their routing (routing.c, sql/0.1/30-routing.sql).
 *	- tierdb.max_pin_ttl, the longest read pin tierdb_read_begin() grants
 *	  (routing.c).
 *	- hybrid reads of mirrored tables (hybrid.c): tierdb.mirrored_reads,
 *	  tierdb.mirror_wait_ms, tierdb.hybrid_lag.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "direct.h"
#include "lake_env.h"
#include "routing.h"
#include "spill.h"
#include "storage_profiles.h"
#include "transparent.h"
#include "worker.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * tierdb.explain: read by the routing functions in SQL (current_setting),
 * so the variable is only the GUC's storage.
 */
static bool explain_routing = false;

void
_PG_init(void)
{
	/*
	 * The settings are defined whenever the library is loaded (also by a
	 * plain LOAD), so SHOW and pg_settings describe them everywhere.
	 */
	tierdb_worker_define_gucs();
	transparent_reads_init(process_shared_preload_libraries_in_progress);
	routing_init();
	spill_init();
	direct_init();
	storage_profiles_init();
	DefineCustomBoolVariable("tierdb.explain",
							 "Makes tierdb_upsert() and tierdb_delete() report each route they take, and why, as a NOTICE.",
							 NULL,
							 &explain_routing,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

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

	tierdb_lake_env_init();
}
