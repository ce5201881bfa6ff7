/*-------------------------------------------------------------------------
 *
 * heap_only.c
 *		The guard of heap-only reads (heap_only.h says what it is for).
 *
 * The planner hook (transparent.c) decides which references read the heap
 * only before the query is planned, and adds the guard to the plan
 * standard_planner returns, under its top node:
 *
 *	 Index Scan using events_20240109_pkey on events_20240109 events
 *	   Index Cond: ((id = 2400) AND (ts = '2024-01-09 08:00:00+00'::timestamp with time zone))
 *	   InitPlan 1 (checked when the statement starts)
 *		 ->  Custom Scan (TierDB Heap-Only Guard)
 *			   Heap Only: public.events at or above T 2024-01-08 00:00:00+00
 *
 * When the executor starts, it compares each table's planned T with the
 * cut-line the statement's snapshot sees (seam_statement_t: no pin, no
 * lock). Added to the finished plan, it guards every heap-only reference
 * wherever the planner put it (a subquery pulled up, a CTE), and it runs
 * before any of them reads a row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "heap_only.h"
#include "seam.h"

#define GUARD_NAME "TierDB Heap-Only Guard"

/* custom_private: list_make2(relids, tier_key_his) of HeapOnlyReads. */
enum
{
	GUARD_PRIVATE_RELIDS,
	GUARD_PRIVATE_TIER_KEY_HIS
};

static Node *create_guard_state(CustomScan *cscan);
static void begin_guard(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_guard(CustomScanState *node);
static void end_guard(CustomScanState *node);
static void rescan_guard(CustomScanState *node);
static void explain_guard(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomScanMethods guard_scan_methods = {
	.CustomName = GUARD_NAME,
	.CreateCustomScanState = create_guard_state,
};

static const CustomExecMethods guard_exec_methods = {
	.CustomName = GUARD_NAME,
	.BeginCustomScan = begin_guard,
	.ExecCustomScan = exec_guard,
	.EndCustomScan = end_guard,
	.ReScanCustomScan = rescan_guard,
	.ExplainCustomScan = explain_guard,
};

void
heap_only_add(HeapOnlyReads *reads, Oid relid, int64 tier_key_hi)
{
	if (list_member_oid(reads->relids, relid))
		return;					/* one T per table: planning assumes one */
	reads->relids = lappend_oid(reads->relids, relid);
	reads->tier_key_his = lappend(reads->tier_key_his,
								  makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(tier_key_hi),
											false, FLOAT8PASSBYVAL));
}

/* ------------------------------------------------------------ planning */

/*
 * The highest plan_node_id in the plan. The guard takes the next one: ids
 * identify nodes to parallel workers and their instrumentation, and the
 * guard, never in a worker, only has to differ from the rest.
 */
static int
highest_plan_node_id(Plan *plan)
{
	List	   *children = NIL;
	ListCell   *lc;
	int			highest;

	if (plan == NULL)
		return -1;
	highest = plan->plan_node_id;
	switch (nodeTag(plan))
	{
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_BitmapAnd:
			children = ((BitmapAnd *) plan)->bitmapplans;
			break;
		case T_BitmapOr:
			children = ((BitmapOr *) plan)->bitmapplans;
			break;
		case T_CustomScan:
			children = ((CustomScan *) plan)->custom_plans;
			break;
		case T_SubqueryScan:
			children = list_make1(((SubqueryScan *) plan)->subplan);
			break;
		default:
			break;
	}
	children = list_concat(list_make2(plan->lefttree, plan->righttree), children);
	foreach(lc, children)
		highest = Max(highest, highest_plan_node_id(lfirst(lc)));
	return highest;
}

/*
 * Adds the guard as an initplan of the plan's top node that sets no
 * parameter: the executor starts every subplan before the plan's own nodes,
 * which runs the guard's check; nothing ever asks it for a value, so it is
 * never run. It describes no rows (no target list), so it costs the plan
 * cache's copy and the executor's start almost nothing: a node on top of
 * the plan, passing its rows through, cost a point lookup's custom plan
 * 14,000 instructions more (4% of the lookup), most of them in the target
 * lists it had to describe them with. EXPLAIN shows it under the top node
 * (and EXPLAIN ANALYZE as never executed, which as a row source it is):
 *
 *	 InitPlan 1 (checked when the statement starts)
 *	   ->  Custom Scan (TierDB Heap-Only Guard)
 *			 Heap Only: public.events at or above T 2024-01-08 00:00:00+00
 */
void
heap_only_guard(PlannedStmt *stmt, const HeapOnlyReads *reads)
{
	CustomScan *guard = makeNode(CustomScan);
	SubPlan    *initplan = makeNode(SubPlan);
	int			highest = highest_plan_node_id(stmt->planTree);
	ListCell   *lc;

	foreach(lc, stmt->subplans)
		highest = Max(highest, highest_plan_node_id(lfirst(lc)));
	guard->scan.plan.plan_node_id = highest + 1;
	guard->scan.plan.parallel_safe = false;
	guard->scan.scanrelid = 0;
	guard->custom_private = list_make2(list_copy(reads->relids), copyObject(reads->tier_key_his));
	guard->methods = &guard_scan_methods;
	stmt->subplans = lappend(stmt->subplans, guard);

	initplan->subLinkType = EXPR_SUBLINK;
	initplan->plan_id = list_length(stmt->subplans);
	initplan->plan_name = psprintf("InitPlan %d (checked when the statement starts)", initplan->plan_id);
	initplan->firstColType = VOIDOID;
	initplan->firstColTypmod = -1;
	stmt->planTree->initPlan = lappend(stmt->planTree->initPlan, initplan);
}

/* The reads the guard checks. */
static void
guarded_reads(CustomScan *guard, HeapOnlyReads *reads)
{
	reads->relids = list_nth(guard->custom_private, GUARD_PRIVATE_RELIDS);
	reads->tier_key_his = list_nth(guard->custom_private, GUARD_PRIVATE_TIER_KEY_HIS);
}

bool
heap_only_guarded(PlannedStmt *stmt, HeapOnlyReads *reads)
{
	ListCell   *lc;

	foreach(lc, stmt->subplans)
	{
		CustomScan *guard = lfirst(lc);

		if (guard != NULL && IsA(guard, CustomScan) && guard->methods == &guard_scan_methods)
		{
			guarded_reads(guard, reads);
			return true;
		}
	}
	return false;
}

/* ------------------------------------------------------------ execution */

static Node *
create_guard_state(CustomScan *cscan)
{
	CustomScanState *state = palloc0(sizeof(CustomScanState));

	NodeSetTag(state, T_CustomScanState);
	state->methods = &guard_exec_methods;
	return (Node *) state;
}

/* Stops the statement if the snapshot it reads with no longer sees the T table relid was planned with. */
static void
check_cutline(Oid relid, int64 planned, Snapshot snapshot)
{
	if (!seam_is_tiered(relid))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("table \"%s\" is no longer registered with TierDB in tiered mode", get_rel_name(relid)),
				 errhint("Run the statement again.")));
	if (seam_statement_t(relid, snapshot) != planned)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the cut-line of table \"%s\" advanced between planning and running this statement",
						get_rel_name(relid)),
				 errdetail("The statement was planned to read the heap only, at or above the cut-line of then."),
				 errhint("Run the statement again: it will be planned with the new cut-line.")));
}

static void
begin_guard(CustomScanState *node, EState *estate, int eflags)
{
	HeapOnlyReads reads;
	ListCell   *relid;
	ListCell   *t;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	guarded_reads((CustomScan *) node->ss.ps.plan, &reads);
	forboth(relid, reads.relids, t, reads.tier_key_his)
		check_cutline(lfirst_oid(relid), DatumGetInt64(((Const *) lfirst(t))->constvalue), estate->es_snapshot);
}

/* Never asked for a row (heap_only_guard says why), and it has none. */
static TupleTableSlot *
exec_guard(CustomScanState *node)
{
	return NULL;
}

static void
end_guard(CustomScanState *node)
{
}

static void
rescan_guard(CustomScanState *node)
{
}

static void
explain_guard(CustomScanState *node, List *ancestors, ExplainState *es)
{
	HeapOnlyReads reads;
	ListCell   *relid;
	ListCell   *t;
	List	   *lines = NIL;

	guarded_reads((CustomScan *) node->ss.ps.plan, &reads);
	forboth(relid, reads.relids, t, reads.tier_key_his)
	{
		Oid			table = lfirst_oid(relid);
		SeamTable  *registered = seam_lookup_table(table);
		int64		tier_key_hi = DatumGetInt64(((Const *) lfirst(t))->constvalue);

		lines = lappend(lines, psprintf("%s at or above T %s",
										quote_qualified_identifier(get_namespace_name(get_rel_namespace(table)),
																   get_rel_name(table)),
										registered ? seam_key_text(registered, tier_key_hi)
										: psprintf(INT64_FORMAT, tier_key_hi)));
	}
	ExplainPropertyList("Heap Only", lines, es);
}

void
heap_only_init(void)
{
	RegisterCustomScanMethods(&guard_scan_methods);
}
