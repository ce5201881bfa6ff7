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
 * A table checked against bounds known only when the statement starts is
 * checked earlier, by the executor start hook, which can still give the
 * executor another plan (start_statement):
 *
 *	 Index Scan using events_20240109_pkey on events_20240109 events
 *	   Index Cond: ((id = $1) AND (ts = $2))
 *	   InitPlan 1 (checked when the statement starts)
 *		 ->  Custom Scan (TierDB Heap-Only Guard)
 *			   Heap Only: public.events if $2 is at or above T when the statement starts
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "heap_only.h"
#include "seam.h"
#include "transparent.h"

#define GUARD_NAME "TierDB Heap-Only Guard"

/*
 * custom_private: list_make3(relids, tier_key_his, checked) of
 * HeapOnlyReads; checked is NIL, or the table checked when the statement
 * starts: list_make4(list_make2_int(relid, key kind), checked_bounds,
 * unplanned, list_make1_int(cursor_options)).
 */
enum
{
	GUARD_PRIVATE_RELIDS,
	GUARD_PRIVATE_TIER_KEY_HIS,
	GUARD_PRIVATE_CHECKED
};

enum
{
	CHECKED_TABLE,
	CHECKED_BOUNDS,
	CHECKED_UNPLANNED,
	CHECKED_CURSOR_OPTIONS
};

static ExecutorStart_hook_type prev_executor_start = NULL;

/* The guard whose bounds the executor start hook checked last: begin_guard need not again. */
static const CustomScan *checked_guard = NULL;

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
 * "InitPlan <id> (checked when the statement starts)", EXPLAIN's name of the
 * guard's initplan, without psprintf's format parsing: 0.2% of a point
 * lookup's custom plan.
 */
static char *
initplan_name(int plan_id)
{
	static const char prefix[] = "InitPlan ";
	static const char suffix[] = " (checked when the statement starts)";
	char		digits[MAXINT8LEN + 1];
	int			ndigits = pg_ltoa(plan_id, digits);
	char	   *name = palloc(sizeof(prefix) - 1 + ndigits + sizeof(suffix));

	memcpy(name, prefix, sizeof(prefix) - 1);
	memcpy(name + sizeof(prefix) - 1, digits, ndigits);
	memcpy(name + sizeof(prefix) - 1 + ndigits, suffix, sizeof(suffix));
	return name;
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
	guard->custom_private = list_make3(list_copy(reads->relids), copyObject(reads->tier_key_his), NIL);
	if (OidIsValid(reads->checked_relid))
		lthird(guard->custom_private) =
			list_make4(list_make2_int(reads->checked_relid, reads->checked_key_kind),
					   reads->checked_bounds, reads->unplanned, list_make1_int(reads->cursor_options));
	guard->methods = &guard_scan_methods;
	stmt->subplans = lappend(stmt->subplans, guard);

	initplan->subLinkType = EXPR_SUBLINK;
	initplan->plan_id = list_length(stmt->subplans);
	initplan->plan_name = initplan_name(initplan->plan_id);
	initplan->firstColType = VOIDOID;
	initplan->firstColTypmod = -1;
	stmt->planTree->initPlan = lappend(stmt->planTree->initPlan, initplan);
}

/* The reads the guard checks. */
static void
guarded_reads(const CustomScan *guard, HeapOnlyReads *reads)
{
	List	   *checked = list_nth(guard->custom_private, GUARD_PRIVATE_CHECKED);

	memset(reads, 0, sizeof(*reads));
	reads->relids = list_nth(guard->custom_private, GUARD_PRIVATE_RELIDS);
	reads->tier_key_his = list_nth(guard->custom_private, GUARD_PRIVATE_TIER_KEY_HIS);
	if (checked == NIL)
		return;
	reads->checked_relid = linitial_int(list_nth(checked, CHECKED_TABLE));
	reads->checked_key_kind = lsecond_int(list_nth(checked, CHECKED_TABLE));
	reads->checked_bounds = list_nth(checked, CHECKED_BOUNDS);
	reads->unplanned = list_nth(checked, CHECKED_UNPLANNED);
	reads->cursor_options = linitial_int(list_nth(checked, CHECKED_CURSOR_OPTIONS));
}

/* The plan's guard, or NULL: heap_only_guard adds it last, after planning. */
static CustomScan *
guard_of(PlannedStmt *stmt)
{
	CustomScan *guard;

	if (stmt->subplans == NIL)
		return NULL;
	guard = llast(stmt->subplans);
	return guard != NULL && IsA(guard, CustomScan) && guard->methods == &guard_scan_methods ? guard : NULL;
}

bool
heap_only_guarded(PlannedStmt *stmt, HeapOnlyReads *reads)
{
	CustomScan *guard = guard_of(stmt);

	if (guard != NULL)
		guarded_reads(guard, reads);
	return guard != NULL;
}

/* ------------------------------------------------------------ bounds known when the statement starts */

/*
 * The compiled bounds of the guards of live plans: a generic plan runs many
 * times, and compiling its bound at each start cost a point lookup 6%. The
 * states live in the plan's own memory, and the entry goes with it (a
 * reset callback on that context).
 */
typedef struct CompiledBounds
{
	const CustomScan *guard;	/* hash key */
	List	   *states;			/* ExprState per bound */
	bool		in_use;			/* being computed: a bound's function started the same plan again */
} CompiledBounds;

static HTAB *compiled_bounds = NULL;

static void
forget_compiled_bounds(void *guard)
{
	hash_search(compiled_bounds, &guard, HASH_REMOVE, NULL);
}

static CompiledBounds *
compiled_bounds_of(const CustomScan *guard, List *bounds)
{
	MemoryContext plan_memory = GetMemoryChunkContext((void *) guard);
	MemoryContext caller;
	MemoryContextCallback *forget;
	CompiledBounds *entry;
	List	   *states = NIL;
	ListCell   *lc;
	bool		found;

	if (compiled_bounds == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(CustomScan *), .entrysize = sizeof(CompiledBounds)};

		compiled_bounds = hash_create("TierDB compiled bounds", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(compiled_bounds, &guard, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;
	caller = MemoryContextSwitchTo(plan_memory);
	foreach(lc, bounds)
		states = lappend(states, ExecInitExpr(lfirst(lc), NULL));
	forget = palloc(sizeof(MemoryContextCallback));
	forget->func = forget_compiled_bounds;
	forget->arg = (void *) guard;
	MemoryContextSwitchTo(caller);
	entry = hash_search(compiled_bounds, &guard, HASH_ENTER, &found);
	entry->states = states;
	entry->in_use = false;
	MemoryContextRegisterResetCallback(plan_memory, forget);
	return entry;
}

/*
 * A bound's value, computed with the statement's parameters in econtext,
 * canonical; false when it is null, so that no row meets the condition. A
 * bare parameter, a generic plan's point lookup, is read directly.
 */
static bool
bound_value(Expr *bound, ExprState *compiled, SeamKeyKind kind, ExprContext *econtext, int64 *canonical)
{
	ParamListInfo params = econtext->ecxt_param_list_info;
	Oid			typid = exprType((Node *) bound);
	MemoryContext caller;
	Datum		value;
	bool		isnull;

	if (IsA(bound, Param) && params != NULL)
	{
		Param	   *param = (Param *) bound;
		ParamExternData workspace;
		ParamExternData *prm = NULL;

		if (param->paramid > 0 && param->paramid <= params->numParams)
			prm = params->paramFetch != NULL ? params->paramFetch(params, param->paramid, false, &workspace)
				: &params->params[param->paramid - 1];
		if (prm != NULL && prm->ptype == param->paramtype)
		{
			if (!prm->isnull)
				*canonical = seam_key_canonical(kind, typid, prm->value);
			return !prm->isnull;
		}
	}
	caller = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	if (compiled == NULL)
		compiled = ExecInitExprWithParams(bound, params);
	value = ExecEvalExpr(compiled, econtext, &isnull);
	if (!isnull)
		*canonical = seam_key_canonical(kind, typid, value);
	MemoryContextSwitchTo(caller);
	ResetExprContext(econtext);
	return !isnull;
}

/*
 * Whether the heap alone holds every row the checked table's conditions
 * let through: one of its lower bounds is at or above the T the
 * statement's snapshot sees, or null (no row qualifies). The bounds are
 * compiled once per plan, unless the parameters compile into them
 * (PL/pgSQL's do) or the compiled ones are being computed already; they
 * are computed in an expression context kept for the purpose, but in a
 * fresh one when a bound's function runs a statement that checks its own.
 */
static bool
bounds_hold(const CustomScan *guard, const HeapOnlyReads *reads, ParamListInfo params, Snapshot snapshot)
{
	static ExprContext *kept = NULL;
	static bool kept_in_use = false;
	ExprContext *volatile econtext;
	CompiledBounds *volatile compiled = NULL;
	int64		tier_key_hi;
	volatile bool hold = false;
	ListCell   *lc;

	if (!seam_is_tiered(reads->checked_relid))
		return true;			/* unregistered since: the heap is the table, as the planner would now read it */
	tier_key_hi = seam_statement_t(reads->checked_relid, snapshot);
	if (params == NULL || params->paramCompile == NULL)
	{
		compiled = compiled_bounds_of(guard, reads->checked_bounds);
		if (compiled->in_use)
			compiled = NULL;
	}
	if (kept == NULL)
	{
		MemoryContext caller = MemoryContextSwitchTo(TopMemoryContext);

		kept = CreateStandaloneExprContext();
		MemoryContextSwitchTo(caller);
	}
	econtext = kept_in_use ? CreateStandaloneExprContext() : kept;
	econtext->ecxt_param_list_info = params;
	if (compiled != NULL)
		compiled->in_use = true;
	if (econtext == kept)
		kept_in_use = true;
	PG_TRY();
	{
		foreach(lc, reads->checked_bounds)
		{
			ExprState  *state = compiled != NULL ? list_nth(compiled->states, foreach_current_index(lc)) : NULL;
			int64		bound = 0;

			if (!bound_value(lfirst(lc), state, reads->checked_key_kind, econtext, &bound) || bound >= tier_key_hi)
			{
				hold = true;
				break;
			}
		}
	}
	PG_FINALLY();
	{
		if (compiled != NULL)
			compiled->in_use = false;
		if (econtext == kept)
		{
			ResetExprContext(kept);
			kept->ecxt_param_list_info = NULL;
			kept_in_use = false;
		}
		else
			FreeExprContext(econtext, false);
	}
	PG_END_TRY();
	return hold;
}

/*
 * The executor start hook: a statement whose guard checks bounds known
 * only now runs its heap-only plan when they hold, and otherwise the plan
 * of the same statement with the seam union, made now with the
 * parameters' values, as a custom plan would have been. The planner's
 * output for the statement does not change, so the portal, the cursor or
 * EXPLAIN that started it reads the replacement as it would the original;
 * a cursor the portal lets scroll backwards because the original plan can
 * has the replacement planned to scroll too. Parallel workers run what
 * their leader chose.
 */
static void
start_statement(QueryDesc *query, int eflags)
{
	CustomScan *guard;
	HeapOnlyReads reads;
	bool		hold;

	checked_guard = NULL;
	if (!IsParallelWorker() && (guard = guard_of(query->plannedstmt)) != NULL &&
		list_nth(guard->custom_private, GUARD_PRIVATE_CHECKED) != NIL)
	{
		guarded_reads(guard, &reads);
		hold = bounds_hold(guard, &reads, query->params, query->snapshot);
		checked_guard = hold ? guard : NULL;	/* after the bounds, which may have started statements */
		if (!hold)
		{
			if (eflags & EXEC_FLAG_BACKWARD)
				reads.cursor_options |= CURSOR_OPT_SCROLL;
			query->plannedstmt = transparent_plan_with_unions(copyObject(reads.unplanned), query->sourceText,
															  reads.cursor_options, query->params);
		}
	}
	if (prev_executor_start)
		prev_executor_start(query, eflags);
	else
		standard_ExecutorStart(query, eflags);
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
				 errmsg("table %s is no longer registered with TierDB in tiered mode", seam_table_name(relid)),
				 errhint("Run the statement again.")));
	if (seam_statement_t(relid, snapshot) != planned)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the cut-line of table %s advanced between planning and running this statement",
						seam_table_name(relid)),
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
	/* Checked by start_statement, unless another extension's hook started the executor without ours. */
	if (OidIsValid(reads.checked_relid) && node->ss.ps.plan != (Plan *) checked_guard &&
		!bounds_hold((CustomScan *) node->ss.ps.plan, &reads, estate->es_param_list_info, estate->es_snapshot))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this statement's plan reads table %s heap-only, which its parameters do not allow",
						seam_table_name(reads.checked_relid)),
				 errdetail("The plan was started without TierDB's executor start hook, which would have planned "
						   "it again with the lake."),
				 errhint("Load tierdb after the other libraries in shared_preload_libraries.")));
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

/* The bounds as SQL, "$2" or "one of $2, now() - '01:00:00'::interval". */
static char *
bounds_text(CustomScanState *node, List *bounds, List *ancestors, ExplainState *es)
{
	StringInfoData text;
	List	   *context;
	ListCell   *lc;

	if (es->deparse_cxt == NIL)
		return pstrdup("the tier key's lower bound");	/* a caller that deparses nothing (explain.c) */
	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	initStringInfo(&text);
	if (list_length(bounds) > 1)
		appendStringInfoString(&text, "one of ");
	foreach(lc, bounds)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&text, ", ");
		appendStringInfoString(&text, deparse_expression(lfirst(lc), context, false, false));
	}
	return text.data;
}

static void
explain_guard(CustomScanState *node, List *ancestors, ExplainState *es)
{
	HeapOnlyReads reads;
	ListCell   *relid;
	ListCell   *t;
	List	   *lines = NIL;

	guarded_reads((CustomScan *) node->ss.ps.plan, &reads);
	if (OidIsValid(reads.checked_relid))
		lines = lappend(lines, psprintf("%s if %s is at or above T when the statement starts",
										seam_table_name(reads.checked_relid),
										bounds_text(node, reads.checked_bounds, ancestors, es)));
	forboth(relid, reads.relids, t, reads.tier_key_his)
	{
		Oid			table = lfirst_oid(relid);
		SeamTable  *registered = seam_lookup_table(table);
		int64		tier_key_hi = DatumGetInt64(((Const *) lfirst(t))->constvalue);

		lines = lappend(lines, psprintf("%s at or above T %s", seam_table_name(table),
										registered ? seam_key_text(registered, tier_key_hi)
										: psprintf(INT64_FORMAT, tier_key_hi)));
	}
	ExplainPropertyList("Heap Only", lines, es);
}

void
heap_only_init(void)
{
	RegisterCustomScanMethods(&guard_scan_methods);
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = start_statement;
}
