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
 * the delta merged, at the statement's pin). Where the lake checks every
 * qual on its rows, it takes them a batch at a time: each row's group
 * found by the bytes of its keys (group_keys.h), the states advanced from
 * the column vectors (agg_states.h). Otherwise, and for the delta's row
 * images, it checks the quals the lake did not on each row (security
 * quals first), finds the row's group in a tuple hash table (Postgres'
 * own hashing and equality of the key types), and updates its states.
 * The groups are the same table's either way, and each state is exactly
 * what the aggregate's transition function would make of the same rows in
 * the same order, so the Finalize Aggregate's combine functions see what a
 * Partial Aggregate would have handed them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/parallel.h"
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

#include "agg_states.h"
#include "cold_agg.h"
#include "cold_scan.h"
#include "group_keys.h"
#include "lake_scan.h"
#include "seam.h"

#define COLD_AGG_NAME "TierDB Cold Aggregate"

static bool enable_cold_aggregate = true;

/* ------------------------------------------------------------ the aggregates computed here */

/* Whether an Aggref is computed here: a listed aggregate of one column of the cold rows (or of nothing). */
static bool
computable_aggref(Aggref *agg)
{
	ColdAggKind kind;

	if (agg->aggdistinct != NIL || agg->aggorder != NIL || agg->agglevelsup != 0 ||
		agg->aggkind != AGGKIND_NORMAL || agg->aggvariadic || !cold_agg_kind(agg->aggfnoid, &kind))
		return false;
	/* FILTER: checked on each cold row, as the partial aggregate over the heap checks it */
	if (agg->aggfilter != NULL &&
		(contain_subplans((Node *) agg->aggfilter) || contain_volatile_functions((Node *) agg->aggfilter)))
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
 * Whether the lake's metadata may answer the partial target: every
 * aggregate count(*), or every one min or max of a column (which read
 * only where the files' bounds point), none with a FILTER, no group.
 */
static bool
metadata_may_answer(PathTarget *target)
{
	bool		counts = false;
	bool		extremes = false;
	ListCell   *lc;

	foreach(lc, target->exprs)
	{
		Aggref	   *agg = lfirst(lc);
		ColdAggKind kind;

		if (!IsA(agg, Aggref) || agg->aggfilter != NULL || !cold_agg_kind(agg->aggfnoid, &kind))
			return false;
		if (agg->aggfnoid == F_COUNT_)
			counts = true;
		else if ((kind == COLD_MIN || kind == COLD_MAX) && IsA(((TargetEntry *) linitial(agg->args))->expr, Var))
			extremes = true;
		else
			return false;
	}
	return counts != extremes;
}

/*
 * The cold aggregate run by the processes of a parallel plan under a
 * Gather, each over the lake files it claims (one of them over the delta's
 * row images): the Finalize Aggregate combines every process's partial
 * states as it combines the two arms'. Offered where the cold scan got a
 * parallel path (cold_scan.c decides: enough lake rows, not a mirror, the
 * setting on) and the quals may run in a worker; not for a count(*), min
 * or max with no condition, which the lake's metadata answers (or points
 * to the few row groups to read) in one process.
 */
static Path *
gathered_cold_agg(PlannerInfo *root, RelOptInfo *cold, const CustomPath *serial, PathTarget *target,
				  double groups)
{
	List	   *quals = llast(serial->custom_private);
	CustomPath *path;
	int			workers;
	double		divisor;
	Cost		fixed = 10 * seq_page_cost;

	if (cold->partial_pathlist == NIL || !is_parallel_safe(root, (Node *) quals) ||
		!is_parallel_safe(root, (Node *) target->exprs) ||
		(quals == NIL && metadata_may_answer(target)))
		return NULL;
	workers = ((Path *) linitial(cold->partial_pathlist))->parallel_workers;
	divisor = cold_scan_parallel_divisor(workers);
	path = makeNode(CustomPath);
	*path = *serial;
	path->path.parallel_aware = true;
	path->path.parallel_safe = true;
	path->path.parallel_workers = workers;
	path->path.startup_cost = fixed + (serial->path.startup_cost - fixed) / divisor;
	path->path.total_cost = path->path.startup_cost + (serial->path.total_cost - serial->path.startup_cost);
	return (Path *) create_gather_path(root, partial_rel(cold, target, groups * (workers + 1)), &path->path,
									   target, NULL, NULL);
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
	double		groups,
				cold_groups,
				heap_groups = 0;
	CustomPath *serial;
	Path	   *gathered,
			   *heap_agg = NULL;
	List	   *cold_paths;
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
	if (IS_DUMMY_REL(cold) || !cold_scan_planned(cold) || !bms_is_empty(cold->lateral_relids) ||
		(!IS_DUMMY_REL(heap) && heap->cheapest_total_path == NULL) || contain_subplans((Node *) ordered_quals(cold)))
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

	/* each arm makes at most one group per row it reads */
	cold_groups = Min(groups, clamp_row_est(cold->rows));
	serial = cold_agg_path(root, cold, cold_rte, relid, cold_target, cold_groups);
	cold_paths = list_make1(serial);
	gathered = gathered_cold_agg(root, cold, serial, cold_target, cold_groups);
	if (gathered != NULL)
		cold_paths = lappend(cold_paths, gathered);
	/* conditions that keep the query below T leave the heap arm out (the cold rows are all there is) */
	if (!IS_DUMMY_REL(heap))
	{
		heap_groups = Min(groups, clamp_row_est(heap->rows));
		heap_agg = (Path *) create_agg_path(root, partial_rel(heap, heap_target, heap_groups),
											labelled_input(root, heap, heap->cheapest_total_path, heap_target),
											heap_target, strategy, AGGSPLIT_INITIAL_SERIAL, parse->groupClause,
											NIL, &partial_costs, heap_groups);
	}
	/* one Finalize Aggregate over the serial cold aggregate, one over the gathered: the costs choose */
	foreach(lc, cold_paths)
	{
		Path	   *cold_agg = lfirst(lc);
		List	   *members = heap_agg != NULL ? list_make2(heap_agg, cold_agg) : list_make1(cold_agg);
		Path	   *append = (Path *) create_append_path(root, partial_rel(input, target, heap_groups + cold_agg->rows),
														 members, NIL, NIL, NULL, 0, false, -1);

		add_path(grouped, (Path *) create_agg_path(root, grouped, append, grouped->reltarget, strategy,
												   AGGSPLIT_FINAL_DESERIAL, parse->groupClause,
												   (List *) extra->havingQual, &final_costs, groups));
	}
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
	/*
	 * Only for the executor's bookkeeping of which parameters the scan
	 * depends on (a rescan when they change): the quals' and the FILTERs'.
	 */
	exec_params_walker((Node *) lfourth(best_path->custom_private), &cscan->custom_exprs);
	exec_params_walker((Node *) scan_tlist, &cscan->custom_exprs);
	cscan->methods = &cold_agg_scan_methods;
	return &cscan->scan.plan;
}

/* ------------------------------------------------------------ execution */

typedef struct ColdAggScanState
{
	CustomScanState css;
	SeamTable  *table;
	int			naggs;
	ColdAggregate *aggs;
	ExprState **filters;		/* per aggregate, its FILTER, or NULL */
	List	   *filter_exprs;	/* the FILTER expressions; NIL when no aggregate has one */
	int			nkeys;
	AttrNumber *key_attnos;		/* group columns (table numbering) */
	int		   *key_outputs;	/* their columns in the output */
	TupleHashTable groups;		/* NULL without GROUP BY */
	PartialState  *single;			/* the one group without GROUP BY */
	MemoryContext group_cxt;
	TupleHashIterator iter;
	bool		done_reading;
	bool		single_returned;
	TupleTableSlot *row;		/* a cold row: the table's row type */
	TupleTableSlot *key_slot;	/* a group's first row, for its key values */
	TupleTableSlot *key_input;	/* a batch row's group columns, to look its group up */
	GroupKeys  *group_keys;		/* a batch's groups by their keys' bytes */
	PartialState **batch_groups;	/* per row of a batch, its group's states */
	int64		rows_read;
	int64		rows_from_vectors;	/* of rows_read, those aggregated from the lake's vectors */
	int64		ngroups;
	ColdRowsReader *reader;		/* once the rows are aggregated */
	ColdRowsShared *shared;		/* a parallel plan's, once its DSM is set up */
	ColdReadFigures workers;	/* the leader's: what its workers read and aggregated */
	bool		answered_from_metadata;	/* count(*) from the lake's record counts */
	int64		rows_from_metadata;
} ColdAggScanState;

static void begin_cold_agg(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_cold_agg(CustomScanState *node);
static void end_cold_agg(CustomScanState *node);
static void rescan_cold_agg(CustomScanState *node);
static void explain_cold_agg(CustomScanState *node, List *ancestors, ExplainState *es);
static Size estimate_cold_agg_dsm(CustomScanState *node, ParallelContext *pcxt);
static void initialize_cold_agg_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void reinitialize_cold_agg_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void initialize_cold_agg_worker(CustomScanState *node, shm_toc *toc, void *coordinate);
static void shutdown_cold_agg(CustomScanState *node);

static const CustomExecMethods cold_agg_exec_methods = {
	.CustomName = COLD_AGG_NAME,
	.BeginCustomScan = begin_cold_agg,
	.ExecCustomScan = exec_cold_agg,
	.EndCustomScan = end_cold_agg,
	.ReScanCustomScan = rescan_cold_agg,
	.EstimateDSMCustomScan = estimate_cold_agg_dsm,
	.InitializeDSMCustomScan = initialize_cold_agg_dsm,
	.ReInitializeDSMCustomScan = reinitialize_cold_agg_dsm,
	.InitializeWorkerCustomScan = initialize_cold_agg_worker,
	.ShutdownCustomScan = shutdown_cold_agg,
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

/*
 * An aggregate's FILTER, evaluated on each cold row as the quals are (its
 * Vars, of the cold arm's relation, read the scan tuple: the cold row).
 */
static void
prepare_filter(ColdAggScanState *s, int i, Expr *filter)
{
	s->filters[i] = ExecInitQual(list_make1(filter), NULL);
	s->filter_exprs = lappend(s->filter_exprs, filter);
}

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
	s->filters = palloc0(sizeof(ExprState *) * list_length(cscan->custom_scan_tlist));
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
			if (a->kind == COLD_TRANSITION)
				agg_prepare_transition(a, agg);
			if (agg->aggfilter != NULL)
				prepare_filter(s, s->naggs - 1, agg->aggfilter);
			a->output = foreach_current_index(lc);
		}
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
									   collations, 256, sizeof(PartialState) * Max(s->naggs, 1), s->group_cxt,
									   s->group_cxt, s->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory, false);
}

/* Adds the attribute a Var reads to attnos; all of them for a whole-row Var. */
static Bitmapset *
add_var_attno(ColdAggScanState *s, Bitmapset *attnos, AttrNumber attno)
{
	if (attno == 0)
		for (int a = 1; a <= s->row->tts_tupleDescriptor->natts; a++)
			attnos = bms_add_member(attnos, a);
	else if (attno > 0)
		attnos = bms_add_member(attnos, attno);
	return attnos;
}

/* The attributes the aggregates, their filters, the group keys and the quals read. */
static Bitmapset *
read_attrs(ColdAggScanState *s, List *quals)
{
	Bitmapset  *pulled = NULL;
	Bitmapset  *attnos = NULL;
	ListCell   *lc;
	int			i = -1;

	pull_varattnos((Node *) quals, INDEX_VAR, &pulled);
	while ((i = bms_next_member(pulled, i)) >= 0)
		attnos = add_var_attno(s, attnos, i + FirstLowInvalidHeapAttributeNumber);
	foreach(lc, pull_var_clause((Node *) s->filter_exprs, 0))
		attnos = add_var_attno(s, attnos, ((Var *) lfirst(lc))->varattno);
	for (int k = 0; k < s->nkeys; k++)
		attnos = bms_add_member(attnos, s->key_attnos[k]);
	for (int a = 0; a < s->naggs; a++)
		if (s->aggs[a].attno > 0)
			attnos = bms_add_member(attnos, s->aggs[a].attno);
	return attnos;
}

/* The tiered table the scan reads, looked up once. */
static void
look_up_table(ColdAggScanState *s)
{
	Oid			relid = linitial_oid(agg_private((CustomScan *) s->css.ss.ps.plan, 0));

	if (s->table != NULL)
		return;
	s->table = seam_lookup_read_table(relid);
	if (s->table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is no longer registered with TierDB", seam_table_name(relid)),
				 errhint("Run the statement again.")));
}

/*
 * Lets the reader skip what cannot hold the answer when every aggregate is
 * min or max of a column over every cold row: the lake's bounds say where
 * the extremes may lie.
 */
static void
seek_extremes(ColdAggScanState *s, List *quals)
{
	LakeExtreme *extremes = palloc(sizeof(LakeExtreme) * Max(s->naggs, 1));

	if (s->nkeys > 0 || quals != NIL || s->naggs == 0)
		return;
	for (int i = 0; i < s->naggs; i++)
	{
		if ((s->aggs[i].kind != COLD_MIN && s->aggs[i].kind != COLD_MAX) || s->aggs[i].attno <= 0 ||
			s->filters[i] != NULL)
			return;
		extremes[i].attno = s->aggs[i].attno;
		extremes[i].max = s->aggs[i].kind == COLD_MAX;
	}
	cold_rows_reader_seek_extremes(s->reader, extremes, s->naggs);
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

	look_up_table(s);
	rel = table_open(relid, AccessShareLock);
	desc = CreateTupleDescCopy(RelationGetDescr(rel));
	table_close(rel, NoLock);
	s->row = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	s->reader = cold_rows_reader_open_quals(s->table, desc, quals, &s->css.ss.ps, s->shared);
	cold_rows_reader_read_only(s->reader, read_attrs(s, quals));
	seek_extremes(s, quals);
}

static bool only_counts_rows(ColdAggScanState *s, List *quals);
static void read_cold_rows(ColdAggScanState *s, List *quals);

/* Reads every cold row into the groups' states, or counts them from the lake's metadata. */
static void
aggregate_cold_rows(ColdAggScanState *s)
{
	List	   *quals = agg_private((CustomScan *) s->css.ss.ps.plan, 3);

	if (s->reader == NULL)
		open_cold_reader(s);
	s->group_cxt = AllocSetContextCreate(CurrentMemoryContext, "tierdb cold aggregate groups", ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < s->naggs; i++)
		agg_states_context(&s->aggs[i], s->group_cxt);
	if (s->nkeys > 0)
	{
		build_groups(s, s->row->tts_tupleDescriptor);
		s->key_slot = MakeSingleTupleTableSlot(s->row->tts_tupleDescriptor, &TTSOpsMinimalTuple);
	}
	else
		s->single = MemoryContextAllocZero(s->group_cxt, sizeof(PartialState) * Max(s->naggs, 1));
	if (only_counts_rows(s, quals) && cold_rows_reader_count(s->reader, &s->rows_from_metadata))
	{
		for (int i = 0; i < s->naggs; i++)
			s->single[i].count = s->rows_from_metadata;
		s->answered_from_metadata = true;
	}
	else
		read_cold_rows(s, quals);
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
		if (s->aggs[i].kind != COLD_COUNT_STAR || s->filters[i] != NULL)
			return false;
	return true;
}

/* The states of the group of the key values in slot `keys`, made on its first row. */
static PartialState *
find_group(ColdAggScanState *s, TupleTableSlot *keys)
{
	bool		isnew;
	TupleHashEntry entry = LookupTupleHashEntry(s->groups, keys, &isnew, NULL);

	if (isnew)
	{
		entry->additional = MemoryContextAllocZero(s->group_cxt, sizeof(PartialState) * Max(s->naggs, 1));
		s->ngroups++;
	}
	return entry->additional;
}

/* find_group for row `row` of the lake's current batch (group_keys.h's GroupLookup). */
static PartialState *
find_batch_row_group(void *arg, LakeScan *lake, int32 row)
{
	ColdAggScanState *s = (ColdAggScanState *) arg;
	TupleTableSlot *keys = s->key_input;

	ExecClearTuple(keys);
	for (int k = 0; k < s->nkeys; k++)
	{
		AttrNumber	attno = s->key_attnos[k];

		keys->tts_values[attno - 1] = lake_scan_batch_value(lake, attno, row, &keys->tts_isnull[attno - 1]);
	}
	ExecStoreVirtualTuple(keys);
	return find_group(s, keys);
}

/*
 * Aggregates the lake's rows a batch at a time, from the column vectors:
 * for when the lake checks every qual on its rows, so that no row needs a
 * tuple. The groups come from the bytes of the rows' keys (group_keys.h),
 * the states from the vectors (agg_advance_batch), one aggregate at a
 * time over the batch's rows in order, so each group's values are added
 * in the order the row-at-a-time path adds them.
 */
static void
aggregate_batches(ColdAggScanState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	LakeScan   *lake;
	LakeBatch	batch;
	int64		room = 0;
	MemoryContext old;

	if (s->nkeys > 0)
	{
		s->key_input = MakeSingleTupleTableSlot(s->row->tts_tupleDescriptor, &TTSOpsVirtual);
		memset(s->key_input->tts_isnull, true, sizeof(bool) * s->key_input->tts_tupleDescriptor->natts);
		s->group_keys = group_keys_create(s->group_cxt, s->nkeys, s->key_attnos, find_batch_row_group, s);
	}
	while (cold_rows_reader_next_batch(s->reader, &lake, &batch))
	{
		ResetExprContext(econtext);		/* the group lookups' hashing */
		if (s->nkeys > 0)
		{
			if (batch.nrows > room)
			{
				room = Max(batch.nrows, 2 * room);
				s->batch_groups = MemoryContextAlloc(s->group_cxt, sizeof(PartialState *) * room);
			}
			group_keys_find(s->group_keys, lake, &batch, s->batch_groups);
		}
		old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		for (int i = 0; i < s->naggs; i++)
			agg_advance_batch(&s->aggs[i], i, lake, &batch, s->nkeys > 0 ? s->batch_groups : NULL, s->single);
		MemoryContextSwitchTo(old);
		s->rows_read += batch.nrows;
		s->rows_from_vectors += batch.nrows;
	}
}

/*
 * Adds every cold row passing the quals to its group's states (each
 * aggregate's, if it passes its FILTER): the lake's rows a batch at a time
 * while the lake checks every qual and no aggregate has a FILTER, else row by
 * row, leaving out the quals the lake checks; the delta's row images, which
 * the lake never saw, are checked against all of them.
 */
static void
read_cold_rows(ColdAggScanState *s, List *quals)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	const Bitmapset *checked = cold_rows_reader_lake_checked(s->reader);
	List	   *unchecked = NIL;
	ExprState  *all_quals = ExecInitQual(quals, NULL);
	ExprState  *lake_quals;
	ListCell   *lc;

	foreach(lc, quals)
		if (!bms_is_member(foreach_current_index(lc), checked))
			unchecked = lappend(unchecked, lfirst(lc));
	lake_quals = ExecInitQual(unchecked, NULL);
	if (unchecked == NIL && s->filter_exprs == NIL)
		aggregate_batches(s);
	while (cold_rows_reader_next(s->reader, s->row))
	{
		ExprState  *qual = cold_rows_reader_from_lake(s->reader) ? lake_quals : all_quals;
		PartialState *states = s->single;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = s->row;
		if (qual != NULL && !ExecQual(qual, econtext))
			continue;
		s->rows_read++;
		if (s->groups != NULL)
			states = find_group(s, s->row);
		old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		for (int i = 0; i < s->naggs; i++)
		{
			const ColdAggregate *a = &s->aggs[i];

			if (s->filters[i] != NULL && !ExecQual(s->filters[i], econtext))
				continue;
			if (a->attno > 0)
				agg_advance_value(a, &states[i], s->row->tts_values[a->attno - 1], s->row->tts_isnull[a->attno - 1]);
			else
				agg_advance_value(a, &states[i], (Datum) 0, false);
		}
		MemoryContextSwitchTo(old);
	}
}

/* The output row of one group: its keys (from its first row) and its aggregates' partial states. */
static TupleTableSlot *
group_row(ColdAggScanState *s, TupleTableSlot *keys, PartialState *states)
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
		out->tts_values[s->aggs[i].output] = agg_partial_state(&s->aggs[i], &states[i],
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
	if (s->key_input != NULL)
		ExecDropSingleTupleTableSlot(s->key_input);
	if (s->group_cxt != NULL)
		MemoryContextDelete(s->group_cxt);	/* with the group keys and the batch's groups */
	s->row = s->key_slot = s->key_input = NULL;
	s->group_keys = NULL;
	s->batch_groups = NULL;
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
	s->rows_from_vectors = 0;
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
	cold_rows_reader_explain(s->reader, &s->workers, es);
	if (cold_rows_reader_narrowed(s->reader))
		ExplainPropertyBool("Lake Narrowed to Extremes by Bounds", true, es);
	ExplainPropertyInteger("Aggregates", NULL, s->naggs, es);
	ExplainPropertyInteger("Group Columns", NULL, s->nkeys, es);
	ExplainPropertyInteger("Conditions", NULL, list_length(agg_private(cscan, 3)), es);
	if (es->analyze)
	{
		if (s->answered_from_metadata)
			ExplainPropertyInteger("Cold Rows Counted From Lake Metadata", NULL, s->rows_from_metadata, es);
		ExplainPropertyInteger("Cold Rows Aggregated", NULL, s->rows_read + s->workers.rows, es);
		ExplainPropertyInteger("Cold Rows Aggregated From Column Vectors", NULL,
							   s->rows_from_vectors + s->workers.rows_from_vectors, es);
		ExplainPropertyInteger("Groups", NULL, s->groups != NULL ? s->ngroups : 1, es);
	}
}

/*
 * A parallel plan's processes each aggregate the lake files they claim
 * (ColdRowsShared), at the leader's pin, and each hands up the partial
 * states of its own groups: the Finalize Aggregate above the Gather
 * combines them.
 */
static Size
estimate_cold_agg_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	ColdAggScanState *s = (ColdAggScanState *) node;
	SeamPin		pin;

	look_up_table(s);
	pin = seam_pin(s->table);
	return cold_rows_shared_size(&pin);
}

static void
initialize_cold_agg_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ColdAggScanState *s = (ColdAggScanState *) node;
	SeamPin		pin = seam_pin(s->table);

	cold_rows_shared_init(coordinate, &pin);
	s->shared = coordinate;
}

static void
reinitialize_cold_agg_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	cold_rows_shared_reset(coordinate, &((ColdAggScanState *) node)->workers);
}

/* A worker adds what it read and aggregated to the shared figures; the leader takes them for EXPLAIN. */
static void
shutdown_cold_agg(CustomScanState *node)
{
	ColdAggScanState *s = (ColdAggScanState *) node;
	ColdReadFigures mine;

	if (s->shared == NULL)
		return;
	if (!IsParallelWorker())
		cold_rows_shared_collect(s->shared, &s->workers);
	else if (s->reader != NULL)
	{
		cold_rows_reader_figures(s->reader, &mine);
		mine.rows = s->rows_read;
		mine.rows_from_vectors = s->rows_from_vectors;
		cold_rows_shared_add(s->shared, &mine);
	}
}

static void
initialize_cold_agg_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	((ColdAggScanState *) node)->shared = coordinate;
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
