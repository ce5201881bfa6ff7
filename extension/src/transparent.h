/*-------------------------------------------------------------------------
 *
 * transparent.h
 *		Transparent reads (SPEC §7): plain SQL on a registered tiered table
 *		reads heap >= T unioned with lake@S ⊕ delta.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_TRANSPARENT_H
#define TIERDB_TRANSPARENT_H

#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"

#include "seam.h"

/*
 * Defines tierdb.transparent_reads (whenever the library loads, so the
 * setting is known everywhere) and, while the library is preloaded,
 * installs the planner hooks: transparent reads need
 * shared_preload_libraries, so that every session of the server reads
 * the same way from its first statement.
 */
extern void transparent_reads_init(bool preloading);

/* Whether tierdb.transparent_reads is on: plain DML is guarded then too (dml_guard.h). */
extern bool transparent_reads_on(void);

/*
 * Whether the conditions of an UPDATE or DELETE of tiered table t keep its
 * tier key at or above the T it would be planned with (tierdb_explain).
 */
extern bool transparent_dml_keeps_to_heap(Query *q, const SeamTable *t);

/*
 * Plans a statement whose heap-only plan was checked when it started and
 * found wrong (heap_only.c): every reference to a tiered table it has is
 * read with the seam union, but those its conditions keep at or above T
 * once the parameters' values are folded in.
 */
extern PlannedStmt *transparent_plan_with_unions(Query *query, const char *query_string, int cursor_options,
												 ParamListInfo params);

#endif							/* TIERDB_TRANSPARENT_H */
