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

#include "nodes/parsenodes.h"

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

/* Registers the custom scan and installs its hooks; from _PG_init while preloading. */
extern void cold_dml_init(void);

#endif							/* TIERDB_COLD_DML_H */
