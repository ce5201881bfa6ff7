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
} HeapOnlyReads;

/* Records that table relid is read heap-only, planned with T tier_key_hi. */
extern void heap_only_add(HeapOnlyReads *reads, Oid relid, int64 tier_key_hi);

/* Adds the guard of `reads` to the finished plan. */
extern void heap_only_guard(PlannedStmt *stmt, const HeapOnlyReads *reads);

/* The heap-only reads a plan guards, if it has the guard: for tierdb_explain. */
extern bool heap_only_guarded(PlannedStmt *stmt, HeapOnlyReads *reads);

/* Registers the guard's plan node; from _PG_init while preloading. */
extern void heap_only_init(void);

#endif							/* TIERDB_HEAP_ONLY_H */
