/*-------------------------------------------------------------------------
 *
 * heap_only.h
 *		The guard of heap-only reads: the plan node "TierDB Heap-Only Guard"
 *		in a statement some of whose table references read the heap only.
 *
 * A reference whose own conditions keep the tier key at or above the T the
 * planner assumed (transparent.c) is planned as the plain partitioned
 * table.  That is right only while the statement still sees that T: once
 * the cut-line has advanced past a row the query wants, corrections to it
 * go to the delta, not the heap.  Plans made for a T are invalidated when
 * it advances (the trigger on tierdb.cutline), so only a statement planned
 * in the instant before an advance and started after it can find T moved;
 * the guard then stops it, when the executor starts and before any row is
 * read, with a serialization failure (40001), which the client retries.
 *
 * A reference whose lower bound on the tier key is known only when the
 * statement starts (a generic plan's parameter, now() - interval '1 hour')
 * is read heap-only too when the statement is the query of that one table
 * (transparent.c).  The guard then carries the bound and the statement as
 * it was before planning: when the executor starts, a bound at or above
 * the T the statement sees keeps the heap-only plan, and otherwise the
 * statement is planned again, with the seam union and the parameters'
 * values, and that plan runs instead.  No error either way: the T of
 * planning time does not matter.
 *
 * Why a node of its own rather than a one-time filter: a point lookup
 * spends most of its time planning and starting its plan, and a filter
 * qual costs planning work in every partition plus a projecting Result;
 * the guard node is added to the finished plan, where it describes no rows
 * (heap_only.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_HEAP_ONLY_H
#define TIERDB_HEAP_ONLY_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "nodes/plannodes.h"

/* The heap-only references of one statement: which tables, planned with which T. */
typedef struct HeapOnlyReads
{
	List	   *relids;			/* Oid per table */
	List	   *tier_key_his;	/* Const int8 per table: the canonical T planned with */

	/* The table checked when the statement starts, if any (InvalidOid if none): */
	Oid			checked_relid;
	int			checked_key_kind;	/* its SeamKeyKind */
	List	   *checked_bounds; /* Exprs: lower bounds on its tier key; one at or above T suffices */
	Query	   *unplanned;		/* the statement before planning, to plan again with the union */
	int			cursor_options; /* the planner's, for that */
} HeapOnlyReads;

/* Records that table relid is read heap-only, planned with T tier_key_hi. */
extern void heap_only_add(HeapOnlyReads *reads, Oid relid, int64 tier_key_hi);

/* Adds the guard of `reads` to the finished plan, which takes checked_bounds and unplanned as they are. */
extern void heap_only_guard(PlannedStmt *stmt, const HeapOnlyReads *reads);

/* The heap-only reads a plan guards, if it has the guard: for tierdb_explain. */
extern bool heap_only_guarded(PlannedStmt *stmt, HeapOnlyReads *reads);

/*
 * Registers the guard's plan node and the executor start hook that checks
 * the bounds known only then; from _PG_init while preloading.
 */
extern void heap_only_init(void);

#endif							/* TIERDB_HEAP_ONLY_H */
