/*-------------------------------------------------------------------------
 *
 * heap_only.c
 *		The guard of heap-only reads (heap_only.h says what it is for).
 *
 * The planner hook (transparent.c) decides which references read the heap
 * only before the query is planned, and puts this node on top of the plan
 * standard_planner returns:
 *
 *	 Custom Scan (TierDB Heap-Only Guard)
 *	   Heap Only: public.events at or above T 2024-01-08 00:00:00+00
 *	   ->  Index Scan using events_20240109_pkey on events_20240109 events
 *
 * When the executor starts, it compares each table's planned T with the
 * cut-line the statement's snapshot sees (seam_statement_t: no pin, no
 * lock), then passes the rows of its child through unchanged: it does not
 * project, so it costs a point lookup one plan node and one catalog read.
 * Added after planning, on top, it guards every heap-only reference
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
#include "nodes/nodeFuncs.h"
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
 * guard, on top and never in a worker, only has to differ from the rest.
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
 * The guard's output is its child's, column for column: its targetlist
 * points into custom_scan_tlist (INDEX_VAR), which describes the child's
 * output (OUTER_VAR), so the executor sees nothing to project. The entries
 * keep the child's names, junk flags and column origins, which the client
 * is told. The child is the node's outer plan, as a Result's would be, not
 * one of custom_plans: EXPLAIN VERBOSE resolves OUTER_VAR there, and a
 * child in both places would be copied twice with every plan the plan
 * cache keeps.
 */
/*
 * Sets the guard's two target lists (see above). The nodes are made in two
 * arrays rather than one by one: a point lookup's custom plan is made, and
 * copied into the plan cache, at every execution.
 */
static void
pass_through(CustomScan *guard, List *columns)
{
	int			n = list_length(columns);
	TargetEntry *entries = palloc(sizeof(TargetEntry) * 2 * n);
	Var		   *vars = palloc(sizeof(Var) * 2 * n);
	ListCell   *lc;

	foreach(lc, columns)
	{
		TargetEntry *column = lfirst(lc);
		int			i = foreach_current_index(lc);
		Var		   *in = &vars[2 * i];
		Var		   *out = &vars[2 * i + 1];

		*in = (Var) {
			.xpr.type = T_Var,
			.varno = OUTER_VAR,
			.varattno = column->resno,
			.vartype = exprType((Node *) column->expr),
			.vartypmod = exprTypmod((Node *) column->expr),
			.varcollid = exprCollation((Node *) column->expr),
			.varnosyn = OUTER_VAR,
			.varattnosyn = column->resno,
			.location = -1,
		};
		*out = *in;
		out->varno = INDEX_VAR;
		out->varnosyn = INDEX_VAR;
		entries[2 * i] = *column;
		entries[2 * i].expr = (Expr *) in;
		entries[2 * i + 1] = *column;
		entries[2 * i + 1].expr = (Expr *) out;
		guard->custom_scan_tlist = lappend(guard->custom_scan_tlist, &entries[2 * i]);
		guard->scan.plan.targetlist = lappend(guard->scan.plan.targetlist, &entries[2 * i + 1]);
	}
}

void
heap_only_guard(PlannedStmt *stmt, const HeapOnlyReads *reads)
{
	Plan	   *child = stmt->planTree;
	CustomScan *guard = makeNode(CustomScan);
	int			next_id = highest_plan_node_id(child);
	ListCell   *lc;

	foreach(lc, stmt->subplans)
		next_id = Max(next_id, highest_plan_node_id(lfirst(lc)));
	pass_through(guard, child->targetlist);
	guard->scan.plan.startup_cost = child->startup_cost;
	guard->scan.plan.total_cost = child->total_cost;
	guard->scan.plan.plan_rows = child->plan_rows;
	guard->scan.plan.plan_width = child->plan_width;
	guard->scan.plan.parallel_safe = false;
	guard->scan.plan.plan_node_id = next_id + 1;
	guard->scan.plan.lefttree = child;
	guard->scan.plan.extParam = bms_copy(child->extParam);
	guard->scan.plan.allParam = bms_copy(child->allParam);
	guard->scan.scanrelid = 0;
	guard->flags = ExecSupportsBackwardScan(child) ? CUSTOMPATH_SUPPORT_BACKWARD_SCAN : 0;
	guard->custom_private = list_make2(list_copy(reads->relids), copyObject(reads->tier_key_his));
	guard->methods = &guard_scan_methods;
	stmt->planTree = (Plan *) guard;
}

bool
heap_only_guarded(Plan *plan, HeapOnlyReads *reads)
{
	CustomScan *guard = (CustomScan *) plan;

	if (!IsA(plan, CustomScan) || guard->methods != &guard_scan_methods)
		return false;
	reads->relids = list_nth(guard->custom_private, GUARD_PRIVATE_RELIDS);
	reads->tier_key_his = list_nth(guard->custom_private, GUARD_PRIVATE_TIER_KEY_HIS);
	return true;
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
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	HeapOnlyReads reads;
	ListCell   *relid;
	ListCell   *t;

	heap_only_guarded((Plan *) cscan, &reads);
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		forboth(relid, reads.relids, t, reads.tier_key_his)
			check_cutline(lfirst_oid(relid), DatumGetInt64(((Const *) lfirst(t))->constvalue), estate->es_snapshot);
	outerPlanState(node) = ExecInitNode(outerPlan(cscan), estate, eflags);
}

static TupleTableSlot *
exec_guard(CustomScanState *node)
{
	return ExecProcNode(outerPlanState(node));
}

static void
end_guard(CustomScanState *node)
{
	ExecEndNode(outerPlanState(node));
}

static void
rescan_guard(CustomScanState *node)
{
	/* ExecReScan has passed the changed parameters on to the outer plan. */
	if (outerPlanState(node)->chgParam == NULL)
		ExecReScan(outerPlanState(node));
}

static void
explain_guard(CustomScanState *node, List *ancestors, ExplainState *es)
{
	HeapOnlyReads reads;
	ListCell   *relid;
	ListCell   *t;
	List	   *lines = NIL;

	heap_only_guarded(node->ss.ps.plan, &reads);
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
