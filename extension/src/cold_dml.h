/*-------------------------------------------------------------------------
 *
 * cold_dml.h
 *		Plain UPDATE and DELETE of a tiered table's rows below the cut-line
 *		(SPEC §7, transparent writes): the cold rows a statement may change
 *		are brought into the table's spill partition for the statement, so
 *		Postgres' own executor updates and deletes them (cold_dml.c says how
 *		and why), and the spill partition's trigger (spill.c) turns what it
 *		did into delta rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_COLD_DML_H
#define TIERDB_COLD_DML_H

#include "access/htup.h"
#include "nodes/parsenodes.h"
#include "utils/relcache.h"

/*
 * Whether a query level's UPDATE or DELETE of registered tiered table
 * relid reaches its cold rows through the spill partition: the table has
 * one, and the statement is not WHERE CURRENT OF (a cursor's row is a heap
 * row).  The planner hook then lets the statement through (dml_guard.h)
 * and the spill partition's scan becomes "TierDB Cold Rows".
 */
extern bool cold_dml_routes(const Query *q, Oid relid);

/* tierdb_explain's line for such a statement. */
extern char *cold_dml_explain(const Query *q, Oid relid);

/*
 * SELECT ... FOR UPDATE/SHARE of a tiered table with a spill partition
 * that carries changes (spill_routes_changes): the same scan brings in the
 * cold rows the statement selects, and locks each by its pk as writers of
 * it lock it (spill_lock_cold_row), before the executor locks its copy.
 * tierdb_explain's line for it:
 */
extern char *cold_dml_explain_lock(Oid relid, LockClauseStrength strength);

/*
 * INSERT ... ON CONFLICT into a tiered table with transparent writes.  The
 * arbiter index can only see a conflicting row below T once it is in the
 * spill partition: the spill partition's BEFORE INSERT trigger (spill.c)
 * brings the cold row of a new row's key in, with the command id before
 * the statement's (as TierDB Cold Rows does), and the executor then finds
 * the conflict and does nothing or updates it (which the AFTER trigger
 * routes).  The rows brought in that the statement left as they were are
 * removed when it finishes.
 *
 * cold_dml_conflicts_statement: whether the running statement is such an
 * INSERT into tiered table `parent` (InvalidOid: into any); cold_dml_brought_in: whether it has
 * brought pk in already; cold_dml_bring_in_conflict: inserts `tuple` (the
 * spill partition's row layout) into `spill` for it.
 */
extern bool cold_dml_conflicts_statement(Oid parent);
extern bool cold_dml_brought_in(Oid parent, const char *pk);
extern void cold_dml_bring_in_conflict(Relation spill, Oid parent, HeapTuple tuple, const char *pk);

/* Registers the custom scan and installs its hooks; from _PG_init while preloading. */
extern void cold_dml_init(void);

#endif							/* TIERDB_COLD_DML_H */
