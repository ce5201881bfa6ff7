/*-------------------------------------------------------------------------
 *
 * cold_agg.c
 *		Aggregates over a tiered table, split between the heap arm and the
 *		cold rows: see cold_agg.h.
 *
 * Planning (create_upper_paths_hook, UPPERREL_GROUP_AGG): when the input
 * of the grouping is a seam union (an append relation of the heap arm and
 * the cold rows, transparent.c) and every aggregate is one this file
 * computes, a path is added beside the planner's own, as Postgres adds a
 * partitionwise aggregate: a Finalize Aggregate over an Append of a
 * Partial Aggregate of the heap arm and the cold aggregate, both making
 * the partial target (group columns and partial aggregates) in their own
 * relation's terms. The costs choose between them.
 *
 * Execution: the cold aggregate reads the cold rows through a
 * ColdRowsReader (cold_scan.h: lake@S pruned by the query's conditions,
 * the delta merged, at the statement's pin), checks the cold arm's quals
 * on each row (security quals first), finds the row's group in a tuple
 * hash table (Postgres' own hashing and equality of the key types), and
 * updates the group's states. Each state is exactly what the aggregate's
 * transition function would make of the same rows in the same order
 * (float8_pl, float8_cmp_internal and the rest come from Postgres' own
 * headers), so the Finalize Aggregate's combine functions see what a
 * Partial Aggregate would have handed them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "rewrite/rewriteManip.h"
#include "parser/parse_oper.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "access/table.h"

#include "cold_agg.h"
#include "cold_scan.h"
#include "lake_scan.h"
#include "seam.h"

#define COLD_AGG_NAME "TierDB Cold Aggregate"

static bool enable_cold_aggregate = true;

/* ------------------------------------------------------------ the aggregates computed here */

typedef enum ColdAggKind
{
	COLD_COUNT_STAR,			/* count(*): int8 */
	COLD_COUNT,					/* count(x): int8 */
	COLD_COUNT_NONE,			/* count(NULL): 0 */
	COLD_SUM_INT,				/* sum(int2|int4): int8, NULL before the first value */
	COLD_SUM_FLOAT4,			/* sum(float4): float4 */
	COLD_SUM_FLOAT8,			/* sum(float8): float8 */
	COLD_AVG_INT,				/* avg(int2|int4): int8[2] {count, sum} */
	COLD_MIN,					/* min(x): x's type */
	COLD_MAX
} ColdAggKind;

/* The aggregate an Aggref calls, if computed here; false otherwise. */
static bool
cold_agg_kind(Oid aggfnoid, ColdAggKind *kind)
{
	switch (aggfnoid)
	{
		case F_COUNT_:
			*kind = COLD_COUNT_STAR;
			return true;
		case F_COUNT_ANY:
			*kind = COLD_COUNT;
			return true;
		case F_SUM_INT2:
		case F_SUM_INT4:
			*kind = COLD_SUM_INT;
			return true;
		case F_SUM_FLOAT4:
			*kind = COLD_SUM_FLOAT4;
			return true;
		case F_SUM_FLOAT8:
			*kind = COLD_SUM_FLOAT8;
			return true;
		case F_AVG_INT2:
		case F_AVG_INT4:
			*kind = COLD_AVG_INT;
			return true;
		case F_MIN_INT2:
		case F_MIN_INT4:
		case F_MIN_INT8:
		case F_MIN_FLOAT4:
		case F_MIN_FLOAT8:
		case F_MIN_DATE:
		case F_MIN_TIME:
		case F_MIN_TIMESTAMP:
		case F_MIN_TIMESTAMPTZ:
			*kind = COLD_MIN;
			return true;
		case F_MAX_INT2:
		case F_MAX_INT4:
		case F_MAX_INT8:
		case F_MAX_FLOAT4:
		case F_MAX_FLOAT8:
		case F_MAX_DATE:
		case F_MAX_TIME:
		case F_MAX_TIMESTAMP:
		case F_MAX_TIMESTAMPTZ:
			*kind = COLD_MAX;
			return true;
		default:
			return false;
	}
}

/* Whether an Aggref is computed here: a listed aggregate of one column of the cold rows (or of nothing). */
static bool
computable_aggref(Aggref *agg)
{
	ColdAggKind kind;

	if (agg->aggdistinct != NIL || agg->aggorder != NIL || agg->aggfilter != NULL || agg->agglevelsup != 0 ||
		agg->aggkind != AGGKIND_NORMAL || agg->aggvariadic || !cold_agg_kind(agg->aggfnoid, &kind))
		return false;
	if (kind == COLD_COUNT_STAR)
		return agg->args == NIL;
	if (list_length(agg->args) != 1)
		return false;
	/* count(1) counts every row */
	return IsA(((TargetEntry *) linitial(agg->args))->expr, Var) ||
		(kind == COLD_COUNT && IsA(((TargetEntry *) linitial(agg->args))->expr, Const));
}

/* ------------------------------------------------------------ planning */

static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;

static Plan *plan_cold_agg(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
						   List *clauses, List *custom_plans);
static Node *create_cold_agg_state(CustomScan *cscan);

static const CustomPathMethods cold_agg_path_methods = {
	.CustomName = COLD_AGG_NAME,
	.PlanCustomPath = plan_cold_agg,
};

static const CustomScanMethods cold_agg_scan_methods = {
	.CustomName = COLD_AGG_NAME,
	.CreateCustomScanState = create_cold_agg_state,
};

/*
 * The partial grouping target of the query, in the input relation's terms
 * (as planner.c's make_partial_grouping_target makes it): the group
 * columns, then the aggregates in partial mode; NULL when some part of it
 * is not a group column or an aggregate computed here.
 */
static PathTarget *
partial_target(PlannerInfo *root, PathTarget *grouping_target, Node *having)
{
	Query	   *parse = root->parse;
	PathTarget *target = create_empty_pathtarget();
	List	   *others = NIL;
	List	   *exprs;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, grouping_target->exprs)
	{
		Expr	   *expr = lfirst(lc);
		Index		sgref = get_pathtarget_sortgroupref(grouping_target, i++);

		if (sgref != 0 && get_sortgroupref_clause_noerr(sgref, parse->groupClause) != NULL)
		{
			Oid			collation = exprCollation((Node *) expr);

			/* a plain column, grouped by equality of bytes-exact values */
			if (!IsA(expr, Var) ||
				(OidIsValid(collation) && !get_collation_isdeterministic(collation)))
				return NULL;
			add_column_to_pathtarget(target, copyObject(expr), sgref);
		}
		else
			others = lappend(others, expr);
	}
	if (having != NULL)
		others = lappend(others, having);
	exprs = pull_var_clause((Node *) others, PVC_INCLUDE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
							PVC_INCLUDE_PLACEHOLDERS);
	foreach(lc, exprs)
	{
		Node	   *expr = lfirst(lc);

		/* a column outside the aggregates and the group keys (functionally dependent): not here */
		if (!IsA(expr, Aggref) || !computable_aggref((Aggref *) expr))
			return NULL;
		expr = copyObject(expr);
		mark_partial_aggref((Aggref *) expr, AGGSPLIT_INITIAL_SERIAL);
		if (!list_member(target->exprs, expr))
			add_column_to_pathtarget(target, (Expr *) expr, 0);
	}
	set_pathtarget_cost_width(root, target);
	return target;
}

/* The same target in an append member's terms. */
static PathTarget *
member_target(PlannerInfo *root, PathTarget *target, AppendRelInfo *appinfo)
{
	PathTarget *member = copy_pathtarget(target);

	member->exprs = (List *) adjust_appendrel_attrs(root, (Node *) target->exprs, 1, &appinfo);
	return member;
}

/*
 * The heap arm's path with its group columns labelled for the partial
 * aggregate above it, which finds them by their sort/group references (the
 * planner labels the input of its own aggregates the same way).
 */
static Path *
labelled_input(PlannerInfo *root, RelOptInfo *rel, Path *subpath, PathTarget *partial)
{
	PathTarget *target = copy_pathtarget(subpath->pathtarget);
	ListCell   *lc;
	int			i = 0;

	if (target->sortgrouprefs == NULL)
		target->sortgrouprefs = palloc0(sizeof(Index) * Max(list_length(target->exprs), 1));
	foreach(lc, partial->exprs)
	{
		Index		sgref = get_pathtarget_sortgroupref(partial, i++);
		ListCell   *lc2;
		bool		found = false;

		if (sgref == 0)
			continue;
		foreach(lc2, target->exprs)
		{
			if (equal(lfirst(lc2), lfirst(lc)))
			{
				target->sortgrouprefs[foreach_current_index(lc2)] = sgref;
				found = true;
				break;
			}
		}
		if (!found)
			add_column_to_pathtarget(target, lfirst(lc), sgref);
	}
	return (Path *) create_projection_path(root, rel, subpath, target);
}

/* A relation of its own for a path of partial aggregates over `relids` (none of the planner's). */
static RelOptInfo *
partial_rel(RelOptInfo *like, PathTarget *target, double rows)
{
	RelOptInfo *rel = makeNode(RelOptInfo);

	rel->reloptkind = RELOPT_UPPER_REL;
	rel->relids = bms_copy(like->relids);
	rel->reltarget = target;
	rel->rows = rows;
	rel->consider_parallel = false;
	return rel;
}

/* The quals of a relation, security quals first (as createplan.c orders them), as plain clauses. */
static List *
ordered_quals(RelOptInfo *rel)
{
	List	   *quals = NIL;
	Index		level = 0;
	bool		more = true;

	while (more)
	{
		ListCell   *lc;

		more = false;
		foreach(lc, rel->baserestrictinfo)
		{
			RestrictInfo *rinfo = lfirst(lc);

			if (rinfo->security_level == level)
				quals = lappend(quals, rinfo->clause);
			else if (rinfo->security_level > level)
				more = true;
		}
		level++;
	}
	return quals;
}

/*
 * The cold aggregate's path. custom_private: the table, the privileges to
 * check (the seam union's reference: cold_scan_read_for) and the cold
 * arm's quals (cold_agg_quals). The quals stay out of custom_exprs, which
 * setrefs would match against the scan's output (the partial target):
 * their Vars are INDEX_VAR, the cold row, as the cold scan's become, and
 * they are evaluated on the cold rows as they are read.
 */
static CustomPath *
cold_agg_path(PlannerInfo *root, RelOptInfo *cold, RangeTblEntry *rte, Oid relid, PathTarget *target,
			  double groups)
{
	CustomPath *path = makeNode(CustomPath);
	RelOptInfo *rel = partial_rel(cold, target, groups);
	List	   *quals = copyObject(ordered_quals(cold));	/* the planner's stay as they are */
	List	   *cols = NIL;
	int			i = -1;

	while ((i = bms_next_member(rte->selectedCols, i)) >= 0)
		cols = lappend_int(cols, i);
	fix_opfuncids((Node *) quals);
	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = target;
	path->path.rows = groups;
	/* the cold scan's reading, then a light pass over the rows: no tuple is handed up */
	path->path.startup_cost = 10 * seq_page_cost + cold_scan_read_cost(root, cold) + cold->rows * cpu_operator_cost;
	path->path.total_cost = path->path.startup_cost + groups * cpu_tuple_cost;
	ChangeVarNodes((Node *) quals, cold->relid, INDEX_VAR, 0);
	path->custom_private = list_make4(list_make1_oid(relid),
									  (rte->requiredPerms & ACL_SELECT) ? list_make1_oid(rte->checkAsUser) : NIL,
									  cols, quals);
	path->methods = &cold_agg_path_methods;
	return path;
}

/*
 * Adds the split aggregate when the input is a seam union: the append
 * relation of a heap arm and a cold arm that the cold scan reads.
 */
static void
add_split_aggregate(PlannerInfo *root, RelOptInfo *input, RelOptInfo *grouped, GroupPathExtraData *extra)
{
	Query	   *parse = root->parse;
	RangeTblEntry *rte = planner_rt_fetch(input->relid, root);
	AppendRelInfo *heap_info = NULL,
			   *cold_info = NULL;
	RelOptInfo *heap,
			   *cold;
	RangeTblEntry *cold_rte = NULL;
	Oid			relid = InvalidOid;
	PathTarget *target,
			   *heap_target,
			   *cold_target;
	AggClauseCosts partial_costs,
				final_costs;
	double		groups;
	Path	   *heap_agg,
			   *append;
	ListCell   *lc;
	List	   *group_exprs;
	AggStrategy strategy = parse->groupClause != NIL ? AGG_HASHED : AGG_PLAIN;

	if (input->reloptkind != RELOPT_BASEREL || rte->rtekind != RTE_SUBQUERY || !rte->inh ||
		parse->groupingSets != NIL || parse->hasTargetSRFs ||
		(parse->groupClause != NIL && !grouping_is_hashable(parse->groupClause)))
		return;
	foreach(lc, root->append_rel_list)
	{
		AppendRelInfo *appinfo = lfirst(lc);
		RangeTblEntry *child;

		if (appinfo->parent_relid != input->relid)
			continue;
		child = planner_rt_fetch(appinfo->child_relid, root);
		if (OidIsValid(cold_scan_target(child)) && cold_info == NULL)
		{
			cold_info = appinfo;
			cold_rte = child;
			relid = cold_scan_target(child);
		}
		else if (heap_info == NULL)
			heap_info = appinfo;
		else
			return;				/* not a seam union */
	}
	if (heap_info == NULL || cold_info == NULL)
		return;
	heap = find_base_rel(root, heap_info->child_relid);
	cold = find_base_rel(root, cold_info->child_relid);
	if (IS_DUMMY_REL(heap) || IS_DUMMY_REL(cold) || !cold_scan_planned(cold) || !bms_is_empty(cold->lateral_relids) ||
		heap->cheapest_total_path == NULL || contain_subplans((Node *) ordered_quals(cold)))
		return;
	target = partial_target(root, grouped->reltarget, extra->havingQual);
	if (target == NULL)
		return;
	heap_target = member_target(root, target, heap_info);
	cold_target = member_target(root, target, cold_info);
	/* the cold arm's aggregates read its own columns only */
	foreach(lc, cold_target->exprs)
	{
		Node	   *expr = lfirst(lc);

		if (IsA(expr, Var) ? ((Var *) expr)->varno != cold_info->child_relid
			: !bms_is_subset(pull_varnos(root, expr), bms_make_singleton(cold_info->child_relid)))
			return;
	}

	group_exprs = get_sortgrouplist_exprs(parse->groupClause, parse->targetList);
	groups = group_exprs == NIL ? 1 : estimate_num_groups(root, group_exprs, input->rows, NULL, NULL);
	MemSet(&partial_costs, 0, sizeof(partial_costs));
	MemSet(&final_costs, 0, sizeof(final_costs));
	get_agg_clause_costs(root, AGGSPLIT_INITIAL_SERIAL, &partial_costs);
	get_agg_clause_costs(root, AGGSPLIT_FINAL_DESERIAL, &final_costs);

	heap_agg = (Path *) create_agg_path(root, partial_rel(heap, heap_target, groups),
										labelled_input(root, heap, heap->cheapest_total_path, heap_target),
										heap_target, strategy, AGGSPLIT_INITIAL_SERIAL, parse->groupClause, NIL,
										&partial_costs, groups);
	append = (Path *) create_append_path(root, partial_rel(input, target, 2 * groups),
										 list_make2(heap_agg, cold_agg_path(root, cold, cold_rte, relid, cold_target,
																			groups)),
										 NIL, NIL, NULL, 0, false, -1);
	add_path(grouped, (Path *) create_agg_path(root, grouped, append, grouped->reltarget, strategy,
											   AGGSPLIT_FINAL_DESERIAL, parse->groupClause,
											   (List *) extra->havingQual, &final_costs, groups));
}

static void
cold_agg_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input, RelOptInfo *output,
					 void *extra)
{
	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input, output, extra);
	if (stage == UPPERREL_GROUP_AGG && enable_cold_aggregate && extra != NULL)
		add_split_aggregate(root, input, output, (GroupPathExtraData *) extra);
}

/* Collects the PARAM_EXEC Params of an expression (an outer query's values, initplans' results). */
static bool
exec_params_walker(Node *node, List **params)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		*params = lappend(*params, copyObject(node));
	return expression_tree_walker(node, exec_params_walker, params);
}

/*
 * The scan produces the partial target: custom_scan_tlist lists it, so
 * setrefs turns the plan's target list (the same expressions) into
 * references to it, aggregates included.
 */
static Plan *
plan_cold_agg(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist, List *clauses,
			  List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *scan_tlist = NIL;
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst(lc);

		scan_tlist = lappend(scan_tlist, makeTargetEntry(copyObject(tle->expr), list_length(scan_tlist) + 1,
														 NULL, false));
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.scanrelid = 0;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_private = best_path->custom_private;
	/* Only for the executor's bookkeeping of which parameters the scan depends on (a rescan when they change). */
	exec_params_walker((Node *) lfourth(best_path->custom_private), &cscan->custom_exprs);
	cscan->methods = &cold_agg_scan_methods;
	return &cscan->scan.plan;
}

/* ------------------------------------------------------------ execution */

/* One aggregate's state in one group. */
typedef struct AggState1
{
	bool		has_value;		/* a value was seen (for sums, min and max) */
	int64		count;
	int64		sum;
	Datum		value;			/* min, max, float sums: of a by-value type */
} AggState1;

typedef struct ColdAggregate
{
	ColdAggKind kind;
	AttrNumber	attno;			/* the argument's column (table numbering); 0 for count(*) */
	Oid			type;			/* the argument's type */
	int			output;			/* its column in the output */
} ColdAggregate;

typedef struct ColdAggScanState
{
	CustomScanState css;
	SeamTable  *table;
	int			naggs;
	ColdAggregate *aggs;
	int			nkeys;
	AttrNumber *key_attnos;		/* group columns (table numbering) */
	int		   *key_outputs;	/* their columns in the output */
	TupleHashTable groups;		/* NULL without GROUP BY */
	AggState1  *single;			/* the one group without GROUP BY */
	MemoryContext group_cxt;
	TupleHashIterator iter;
	bool		done_reading;
	bool		single_returned;
	TupleTableSlot *row;		/* a cold row: the table's row type */
	TupleTableSlot *key_slot;	/* a group's first row, for its key values */
	int64		rows_read;
	int64		ngroups;
	ColdRowsReader *reader;		/* once the rows are aggregated */
	bool		answered_from_metadata;	/* count(*) from the lake's record counts */
	int64		rows_from_metadata;
} ColdAggScanState;

static void begin_cold_agg(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_cold_agg(CustomScanState *node);
static void end_cold_agg(CustomScanState *node);
static void rescan_cold_agg(CustomScanState *node);
static void explain_cold_agg(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods cold_agg_exec_methods = {
	.CustomName = COLD_AGG_NAME,
	.BeginCustomScan = begin_cold_agg,
	.ExecCustomScan = exec_cold_agg,
	.EndCustomScan = end_cold_agg,
	.ReScanCustomScan = rescan_cold_agg,
	.ExplainCustomScan = explain_cold_agg,
};

static Node *
create_cold_agg_state(CustomScan *cscan)
{
	ColdAggScanState *state = palloc0(sizeof(ColdAggScanState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &cold_agg_exec_methods;
	return (Node *) state;
}

#define agg_private(cscan, which) ((List *) list_nth((cscan)->custom_private, (which)))

/* The privileges of the seam union's reference, as the cold scan checks them; the aggregates and keys. */
static void
begin_cold_agg(CustomScanState *node, EState *estate, int eflags)
{
	ColdAggScanState *s = (ColdAggScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Oid			relid = linitial_oid(agg_private(cscan, 0));
	List	   *check_as = agg_private(cscan, 1);
	Bitmapset  *cols = NULL;
	ListCell   *lc;

	foreach(lc, agg_private(cscan, 2))
		cols = bms_add_member(cols, lfirst_int(lc));
	if (check_as != NIL)
		lake_check_select(relid, linitial_oid(check_as), cols);
	else
		lake_check_direct_read(relid, "tierdb.cold_rows");

	s->aggs = palloc0(sizeof(ColdAggregate) * list_length(cscan->custom_scan_tlist));
	s->key_attnos = palloc0(sizeof(AttrNumber) * list_length(cscan->custom_scan_tlist));
	s->key_outputs = palloc0(sizeof(int) * list_length(cscan->custom_scan_tlist));
	foreach(lc, cscan->custom_scan_tlist)
	{
		Expr	   *expr = ((TargetEntry *) lfirst(lc))->expr;

		if (IsA(expr, Var))
		{
			s->key_attnos[s->nkeys] = ((Var *) expr)->varattno;
			s->key_outputs[s->nkeys++] = foreach_current_index(lc);
		}
		else
		{
			Aggref	   *agg = castNode(Aggref, expr);
			ColdAggregate *a = &s->aggs[s->naggs++];

			if (!cold_agg_kind(agg->aggfnoid, &a->kind))
				elog(ERROR, "aggregate %u is not computed by the cold aggregate", agg->aggfnoid);
			if (agg->args != NIL && IsA(((TargetEntry *) linitial(agg->args))->expr, Const))
			{
				/* count(constant): every row, or none for a null */
				a->kind = castNode(Const, ((TargetEntry *) linitial(agg->args))->expr)->constisnull
					? COLD_COUNT_NONE : COLD_COUNT_STAR;
			}
			else if (agg->args != NIL)
			{
				Var		   *arg = castNode(Var, ((TargetEntry *) linitial(agg->args))->expr);

				a->attno = arg->varattno;
				a->type = arg->vartype;
			}
			a->output = foreach_current_index(lc);
		}
	}
}

/* Postgres' order of a by-value type's values: the comparison min() and max() make. */
static int
compare_values(Oid type, Datum a, Datum b)
{
	switch (type)
	{
		case FLOAT4OID:
			return float4_cmp_internal(DatumGetFloat4(a), DatumGetFloat4(b));
		case FLOAT8OID:
			return float8_cmp_internal(DatumGetFloat8(a), DatumGetFloat8(b));
		case INT2OID:
			return (DatumGetInt16(a) > DatumGetInt16(b)) - (DatumGetInt16(a) < DatumGetInt16(b));
		case INT4OID:
		case DATEOID:
			return (DatumGetInt32(a) > DatumGetInt32(b)) - (DatumGetInt32(a) < DatumGetInt32(b));
		default:				/* int8, time, timestamp, timestamptz */
			return (DatumGetInt64(a) > DatumGetInt64(b)) - (DatumGetInt64(a) < DatumGetInt64(b));
	}
}

static int64
integer_value(Oid type, Datum d)
{
	return type == INT2OID ? DatumGetInt16(d) : DatumGetInt32(d);
}

/*
 * Adds one row to a group's states, as the transition functions would:
 * count(*) int8inc, count(x) int8inc_any, sum int2_sum/int4_sum,
 * float4pl/float8pl (overflow raised as they raise it), avg
 * int2/int4_avg_accum, min/max the type's smaller/larger, which keep the
 * later of two equal values (-0 and +0).
 */
static void
advance(ColdAggScanState *s, AggState1 *states, TupleTableSlot *row)
{
	for (int i = 0; i < s->naggs; i++)
	{
		const ColdAggregate *a = &s->aggs[i];
		AggState1  *st = &states[i];
		Datum		v;

		if (a->kind == COLD_COUNT_STAR)
		{
			st->count++;
			continue;
		}
		if (a->kind == COLD_COUNT_NONE)
			continue;
		if (row->tts_isnull[a->attno - 1])
			continue;			/* every aggregate here is strict */
		v = row->tts_values[a->attno - 1];
		switch (a->kind)
		{
			case COLD_COUNT:
				st->count++;
				break;
			case COLD_SUM_INT:
				st->sum += integer_value(a->type, v);
				st->has_value = true;
				break;
			case COLD_AVG_INT:
				st->count++;
				st->sum += integer_value(a->type, v);
				break;
			case COLD_SUM_FLOAT4:
				st->value = st->has_value ? Float4GetDatum(float4_pl(DatumGetFloat4(st->value), DatumGetFloat4(v))) : v;
				st->has_value = true;
				break;
			case COLD_SUM_FLOAT8:
				st->value = st->has_value ? Float8GetDatum(float8_pl(DatumGetFloat8(st->value), DatumGetFloat8(v))) : v;
				st->has_value = true;
				break;
			case COLD_MIN:
				if (!st->has_value || compare_values(a->type, st->value, v) >= 0)
					st->value = v;
				st->has_value = true;
				break;
			case COLD_MAX:
				if (!st->has_value || compare_values(a->type, st->value, v) <= 0)
					st->value = v;
				st->has_value = true;
				break;
			case COLD_COUNT_STAR:
			case COLD_COUNT_NONE:
				break;
		}
	}
}

/* The partial state of aggregate a, as its Partial Aggregate would output it. */
static Datum
partial_state(const ColdAggregate *a, const AggState1 *st, bool *isnull)
{
	*isnull = false;
	switch (a->kind)
	{
		case COLD_COUNT_STAR:
		case COLD_COUNT:
		case COLD_COUNT_NONE:
			return Int64GetDatum(st->count);
		case COLD_SUM_INT:
			*isnull = !st->has_value;
			return Int64GetDatum(st->sum);
		case COLD_AVG_INT:
			{
				Datum		pair[2] = {Int64GetDatum(st->count), Int64GetDatum(st->sum)};

				return PointerGetDatum(construct_array(pair, 2, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
			}
		default:
			*isnull = !st->has_value;
			return st->value;
	}
}

/* The group hash table over the cold rows' group columns, hashed and compared as Postgres groups them. */
static void
build_groups(ColdAggScanState *s, TupleDesc rowdesc)
{
	Oid		   *eqops = palloc(sizeof(Oid) * s->nkeys);
	Oid		   *collations = palloc(sizeof(Oid) * s->nkeys);
	Oid		   *eqfuncs;
	FmgrInfo   *hashfuncs;

	for (int i = 0; i < s->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(rowdesc, s->key_attnos[i] - 1);
		bool		hashable;

		get_sort_group_operators(att->atttypid, false, true, true, NULL, &eqops[i], NULL, &hashable);
		if (!hashable)
			elog(ERROR, "column \"%s\" cannot be hashed for grouping", NameStr(att->attname));
		collations[i] = att->attcollation;
	}
	execTuplesHashPrepare(s->nkeys, eqops, &eqfuncs, &hashfuncs);
	s->groups = BuildTupleHashTableExt(&s->css.ss.ps, rowdesc, s->nkeys, s->key_attnos, eqfuncs, hashfuncs,
									   collations, 256, sizeof(AggState1) * Max(s->naggs, 1), s->group_cxt,
									   s->group_cxt, s->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory, false);
}

/*
 * The conditions of the cold arm's quals the lake can prune with
 * (cold_scan_match_condition), their values computed now.
 */
static ColdRowsCondition *
pruning_conditions(ColdAggScanState *s, List *quals, int *n)
{
	ColdRowsCondition *conditions = palloc0(sizeof(ColdRowsCondition) * Max(list_length(quals), 1));
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	ListCell   *lc;

	*n = 0;
	foreach(lc, quals)
	{
		AttrNumber	attno;
		Oid			typid;
		int			op;
		Expr	   *value;
		ExprState  *state;

		if (!cold_scan_match_condition(lfirst(lc), INDEX_VAR, &attno, &typid, &op, &value))
			continue;
		state = ExecInitExpr(value, NULL);
		conditions[*n].attno = attno;
		conditions[*n].typid = typid;
		conditions[*n].op = op;
		conditions[*n].value = ExecEvalExprSwitchContext(state, econtext, &conditions[*n].isnull);
		(*n)++;
	}
	return conditions;
}

/* The attributes the aggregates, the group keys and the quals read; all of them for a whole-row Var. */
static Bitmapset *
read_attrs(ColdAggScanState *s, List *quals)
{
	Bitmapset  *pulled = NULL;
	Bitmapset  *attnos = NULL;
	int			i = -1;

	pull_varattnos((Node *) quals, INDEX_VAR, &pulled);
	while ((i = bms_next_member(pulled, i)) >= 0)
	{
		AttrNumber	attno = i + FirstLowInvalidHeapAttributeNumber;

		if (attno == 0)
			for (int a = 1; a <= s->row->tts_tupleDescriptor->natts; a++)
				attnos = bms_add_member(attnos, a);
		else if (attno > 0)
			attnos = bms_add_member(attnos, attno);
	}
	for (int k = 0; k < s->nkeys; k++)
		attnos = bms_add_member(attnos, s->key_attnos[k]);
	for (int a = 0; a < s->naggs; a++)
		if (s->aggs[a].attno > 0)
			attnos = bms_add_member(attnos, s->aggs[a].attno);
	return attnos;
}

/*
 * Prepares the cold rows' reader (nothing read yet): the table's row type,
 * the conditions the lake prunes with, the attributes read. It stays open
 * until the scan ends or starts over, so EXPLAIN can show what it read.
 */
static void
open_cold_reader(ColdAggScanState *s)
{
	CustomScan *cscan = (CustomScan *) s->css.ss.ps.plan;
	Oid			relid = linitial_oid(agg_private(cscan, 0));
	List	   *quals = agg_private(cscan, 3);
	Relation	rel;
	TupleDesc	desc;
	ColdRowsCondition *conditions;
	int			nconditions;

	s->table = seam_lookup_read_table(relid);
	if (s->table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is no longer registered with TierDB", seam_table_name(relid)),
				 errhint("Run the statement again.")));
	rel = table_open(relid, AccessShareLock);
	desc = CreateTupleDescCopy(RelationGetDescr(rel));
	table_close(rel, NoLock);
	s->row = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	conditions = pruning_conditions(s, quals, &nconditions);
	s->reader = cold_rows_reader_open(s->table, desc, conditions, nconditions);
	cold_rows_reader_read_only(s->reader, read_attrs(s, quals));
}

static bool only_counts_rows(ColdAggScanState *s, List *quals);
static void read_cold_rows(ColdAggScanState *s, ColdRowsReader *reader, ExprState *qual);

/* Reads every cold row into the groups' states, or counts them from the lake's metadata. */
static void
aggregate_cold_rows(ColdAggScanState *s)
{
	List	   *quals = agg_private((CustomScan *) s->css.ss.ps.plan, 3);

	if (s->reader == NULL)
		open_cold_reader(s);
	s->group_cxt = AllocSetContextCreate(CurrentMemoryContext, "tierdb cold aggregate groups", ALLOCSET_DEFAULT_SIZES);
	if (s->nkeys > 0)
	{
		build_groups(s, s->row->tts_tupleDescriptor);
		s->key_slot = MakeSingleTupleTableSlot(s->row->tts_tupleDescriptor, &TTSOpsMinimalTuple);
	}
	else
		s->single = MemoryContextAllocZero(s->group_cxt, sizeof(AggState1) * Max(s->naggs, 1));
	if (only_counts_rows(s, quals) && cold_rows_reader_count(s->reader, &s->rows_from_metadata))
	{
		for (int i = 0; i < s->naggs; i++)
			s->single[i].count = s->rows_from_metadata;
		s->answered_from_metadata = true;
	}
	else
		read_cold_rows(s, s->reader, ExecInitQual(quals, NULL));
	if (s->groups != NULL)
		InitTupleHashIterator(s->groups, &s->iter);
	s->done_reading = true;
}

/* Whether the scan is count(*) of every cold row, which the lake's metadata may answer. */
static bool
only_counts_rows(ColdAggScanState *s, List *quals)
{
	if (s->nkeys > 0 || quals != NIL)
		return false;
	for (int i = 0; i < s->naggs; i++)
		if (s->aggs[i].kind != COLD_COUNT_STAR)
			return false;
	return true;
}

/* Adds every cold row passing the quals to its group's states. */
static void
read_cold_rows(ColdAggScanState *s, ColdRowsReader *reader, ExprState *qual)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;

	while (cold_rows_reader_next(reader, s->row))
	{
		AggState1  *states = s->single;

		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = s->row;
		if (qual != NULL && !ExecQual(qual, econtext))
			continue;
		s->rows_read++;
		if (s->groups != NULL)
		{
			bool		isnew;
			TupleHashEntry entry = LookupTupleHashEntry(s->groups, s->row, &isnew, NULL);

			if (isnew)
			{
				entry->additional = MemoryContextAllocZero(s->group_cxt, sizeof(AggState1) * Max(s->naggs, 1));
				s->ngroups++;
			}
			states = entry->additional;
		}
		advance(s, states, s->row);
	}
}

/* The output row of one group: its keys (from its first row) and its aggregates' partial states. */
static TupleTableSlot *
group_row(ColdAggScanState *s, TupleTableSlot *keys, AggState1 *states)
{
	TupleTableSlot *out = s->css.ss.ss_ScanTupleSlot;
	MemoryContext old;

	ExecClearTuple(out);
	if (keys != NULL)
		slot_getallattrs(keys);
	for (int i = 0; i < s->nkeys; i++)
	{
		out->tts_values[s->key_outputs[i]] = keys->tts_values[s->key_attnos[i] - 1];
		out->tts_isnull[s->key_outputs[i]] = keys->tts_isnull[s->key_attnos[i] - 1];
	}
	/* avg's arrays live as long as the row: ExecScan resets this context at its next call */
	old = MemoryContextSwitchTo(s->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory);
	for (int i = 0; i < s->naggs; i++)
		out->tts_values[s->aggs[i].output] = partial_state(&s->aggs[i], &states[i],
														   &out->tts_isnull[s->aggs[i].output]);
	MemoryContextSwitchTo(old);
	return ExecStoreVirtualTuple(out);
}

static TupleTableSlot *
cold_agg_next(ScanState *ss)
{
	ColdAggScanState *s = (ColdAggScanState *) ss;

	if (!s->done_reading)
		aggregate_cold_rows(s);
	if (s->groups == NULL)
	{
		/* without GROUP BY there is one row, even over no rows, as a plain aggregate makes */
		if (s->single_returned)
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		s->single_returned = true;
		return group_row(s, NULL, s->single);
	}
	{
		TupleHashEntry entry = ScanTupleHashTable(s->groups, &s->iter);

		if (entry == NULL)
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		ExecStoreMinimalTuple(entry->firstTuple, s->key_slot, false);
		return group_row(s, s->key_slot, entry->additional);
	}
}

static bool
cold_agg_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_cold_agg(CustomScanState *node)
{
	return ExecScan(&node->ss, cold_agg_next, cold_agg_recheck);
}

static void
release_groups(ColdAggScanState *s)
{
	if (s->reader != NULL)
		cold_rows_reader_close(s->reader);
	s->reader = NULL;
	if (s->row != NULL)
		ExecDropSingleTupleTableSlot(s->row);
	if (s->key_slot != NULL)
		ExecDropSingleTupleTableSlot(s->key_slot);
	if (s->group_cxt != NULL)
		MemoryContextDelete(s->group_cxt);
	s->row = s->key_slot = NULL;
	s->group_cxt = NULL;
	s->groups = NULL;
	s->single = NULL;
}

static void
end_cold_agg(CustomScanState *node)
{
	release_groups((ColdAggScanState *) node);
}

/* Starts over: the quals may hold parameters that changed, so the rows are read again. */
static void
rescan_cold_agg(CustomScanState *node)
{
	ColdAggScanState *s = (ColdAggScanState *) node;

	release_groups(s);
	s->done_reading = false;
	s->single_returned = false;
	s->rows_read = 0;
	s->ngroups = 0;
	s->answered_from_metadata = false;
}

static void
explain_cold_agg(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ColdAggScanState *s = (ColdAggScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	if (s->reader == NULL)
		open_cold_reader(s);	/* EXPLAIN without ANALYZE: the pin and the lake's pruning */
	cold_rows_reader_explain(s->reader, es);
	ExplainPropertyInteger("Aggregates", NULL, s->naggs, es);
	ExplainPropertyInteger("Group Columns", NULL, s->nkeys, es);
	ExplainPropertyInteger("Conditions", NULL, list_length(agg_private(cscan, 3)), es);
	if (es->analyze)
	{
		if (s->answered_from_metadata)
			ExplainPropertyInteger("Cold Rows Counted From Lake Metadata", NULL, s->rows_from_metadata, es);
		ExplainPropertyInteger("Cold Rows Aggregated", NULL, s->rows_read, es);
		ExplainPropertyInteger("Groups", NULL, s->groups != NULL ? s->ngroups : 1, es);
	}
}

List *
cold_agg_quals(CustomScan *cscan)
{
	return agg_private(cscan, 3);
}

bool
is_cold_agg(CustomScan *cscan)
{
	return cscan->methods == &cold_agg_scan_methods;
}

/* ------------------------------------------------------------ registration */

void
cold_agg_init(void)
{
	DefineCustomBoolVariable("tierdb.enable_cold_aggregate",
							 "Computes aggregates over a tiered table's cold rows in the cold scan.",
							 "The heap's rows are aggregated by a partial aggregate and the two combined, as a "
							 "partitionwise aggregate is. Off: the cold rows go up to the query's aggregate one by one.",
							 &enable_cold_aggregate, true, PGC_USERSET, 0, NULL, NULL, NULL);
	RegisterCustomScanMethods(&cold_agg_scan_methods);
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = cold_agg_upper_paths;
}
