/*-------------------------------------------------------------------------
 *
 * cold_dml.c
 *		Plain UPDATE and DELETE that reach a tiered table's rows below the
 *		cut-line (SPEC §7): the custom scan "TierDB Cold Rows", which
 *		brings the cold rows a statement may change into the table's spill
 *		partition for the length of the statement.
 *
 * Why bring the rows in.  Everything a plain UPDATE or DELETE does to a
 * row (its privileges, row-level security USING and WITH CHECK policies,
 * constraints, the table's row triggers with OLD and NEW, RETURNING, the
 * row count, UPDATE ... FROM joins, moving a row to another partition when
 * its tier key changes) is done by Postgres' executor to rows of a table.
 * So the cold rows are given to it as rows of a table: the planner hook
 * lets the statement through (cold_dml_routes), and the scan of the spill
 * partition (the table's DEFAULT partition, where Postgres routes every tier
 * key below T because those partitions were dropped) becomes this scan.  It
 * reads the cold rows (lake@S merged with the delta, cold_scan.h), pruned
 * by the statement's conditions, checks the statement's conditions on each
 * (RLS USING policies first, as a plain scan orders them), inserts each
 * survivor into the spill partition and returns it with its ctid.  The
 * executor then updates or deletes it like any row of the partition.
 *
 * What the executor did is carried into the delta by the spill
 * partition's trigger (spill.c), at the end of the statement: an updated
 * row becomes the pk's upsert, a deleted one its tombstone; a row whose
 * new tier key is at or above T was moved into a heap partition by the
 * executor (its old copy is tombstoned), and a heap row whose new tier key
 * is below T was moved into the spill partition and is routed like an
 * INSERT.  The rows brought in that the statement did not change are
 * removed when the scan ends, without firing anything.  Like an INSERT's,
 * every row brought in has left the spill partition before anyone else
 * can see it.
 *
 * Command ids.  A row must have been inserted by an earlier command than
 * the one that updates it (heap_update refuses a tuple its own command
 * inserted).  So the executor start hook advances the command counter
 * before a plan with this scan starts: the rows are inserted with the
 * command id before the statement's.  The statement's snapshot was taken
 * before that, so its own scans do not see them.
 *
 * Joins.  Besides the plain scan, the planner is offered the scan
 * parameterized by each join clause on a merge-key or tier-key column (as
 * an index offers parameterized index scans): in a nested loop each outer
 * row's key is then pushed to the lake, and only its rows are brought in.
 * A row must never be brought in twice (two copies would both be changed):
 * a rescan with the same parameters returns the rows of the first pass
 * again by their ctids; one with new parameters reads again, and returns a
 * row some earlier pass brought in by that row's ctid (the executor finds
 * it already changed and skips it, as it skips a row joined twice).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "tierlake_pg.h"

#include "cold_dml.h"
#include "cold_scan.h"
#include "dml_guard.h"
#include "routing.h"
#include "seam.h"
#include "spill.h"
#include "transparent.h"

#define COLD_DML_NAME "TierDB Cold Rows"

/* ------------------------------------------------------------ which statements */

static bool
contains_current_of(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, CurrentOfExpr))
		return true;
	return expression_tree_walker(node, contains_current_of, context);
}

/* UPDATE, DELETE and MERGE change existing rows (a MERGE that only inserts is an INSERT: dml_guard.h). */
static bool
changes_rows(CmdType command)
{
	return command == CMD_UPDATE || command == CMD_DELETE || command == CMD_MERGE;
}

bool
cold_dml_routes(const Query *q, Oid relid)
{
	if (!changes_rows(q->commandType))
		return false;
	if (q->jointree != NULL && contains_current_of(q->jointree->quals, NULL))
		return false;
	return spill_routes_changes(relid);
}

char *
cold_dml_explain(const Query *q, Oid relid)
{
	SeamTable  *t = seam_lookup_table(relid);
	const char *table = seam_table_name(relid);
	const char *cut = seam_key_text(t, seam_planning_t(t));

	if (transparent_dml_keeps_to_heap((Query *) q, t))
		return psprintf("%s: heap only (its conditions keep the tier key at or above T %s)", table, cut);
	if (q->commandType == CMD_MERGE)
		return psprintf("%s: MERGE routes to the heap and the delta (transparent writes): rows at or above T %s are "
						"matched in the heap's partitions; rows below it that the ON conditions may match are "
						"brought in from the lake and the delta, their updates and deletes written to the delta, "
						"and inserted rows go where their tier key says", table, cut);
	return psprintf("%s: %s routes to the heap and the delta (transparent writes): rows at or above T %s are %s "
					"in the heap's partitions; rows below it that the statement selects are brought in from the "
					"lake and the delta, and %s",
					table, q->commandType == CMD_UPDATE ? "UPDATE" : "DELETE", cut,
					q->commandType == CMD_UPDATE ? "updated" : "deleted",
					q->commandType == CMD_UPDATE
					? "their new versions written to the delta (or into the heap when their new tier key is at or "
					"above T)"
					: "tombstones written to the delta");
}

char *
cold_dml_explain_lock(Oid relid, LockClauseStrength strength)
{
	SeamTable  *t = seam_lookup_table(relid);

	return psprintf("%s: SELECT ... %s locks rows in the heap and below the cut-line: rows at or above T %s are "
					"locked in the heap's partitions; rows below it that the statement selects are brought in from "
					"the lake and the delta and locked by key, as their writers lock them",
					seam_table_name(relid), lock_clause_name(strength), seam_key_text(t, seam_planning_t(t)));
}

/* ------------------------------------------------------------ planning */

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorFinish_hook_type prev_executor_finish = NULL;

static Plan *plan_cold_dml(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
						   List *clauses, List *custom_plans);
static Node *create_cold_dml_state(CustomScan *cscan);
static void begin_cold_dml(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_cold_dml(CustomScanState *node);
static void end_cold_dml(CustomScanState *node);
static void rescan_cold_dml(CustomScanState *node);
static void explain_cold_dml(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods cold_dml_path_methods = {
	.CustomName = COLD_DML_NAME,
	.PlanCustomPath = plan_cold_dml,
};

static const CustomScanMethods cold_dml_scan_methods = {
	.CustomName = COLD_DML_NAME,
	.CreateCustomScanState = create_cold_dml_state,
};

static const CustomExecMethods cold_dml_exec_methods = {
	.CustomName = COLD_DML_NAME,
	.BeginCustomScan = begin_cold_dml,
	.ExecCustomScan = exec_cold_dml,
	.EndCustomScan = end_cold_dml,
	.ReScanCustomScan = rescan_cold_dml,
	.ExplainCustomScan = explain_cold_dml,
};

/* The query level's FOR UPDATE/SHARE clause on the table whose partition rel is, or NULL. */
static RowMarkClause *
locking_clause(Query *q, RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, q->rowMarks)
	{
		RowMarkClause *mark = lfirst(lc);

		if (bms_is_member(mark->rti, rel->top_parent_relids))
			return mark;
	}
	return NULL;
}

/*
 * The tiered table whose spill partition rel is, when rel is scanned as a
 * target of the query level's UPDATE, DELETE or MERGE that cold_dml_routes,
 * or as a table its SELECT locks (*lock is then the locking clause, else
 * NULL); else InvalidOid.
 */
static Oid
routed_parent(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte, RowMarkClause **lock)
{
	Query	   *q = root->parse;
	Index		target;
	Oid			parent;

	*lock = NULL;
	if (rel->reloptkind != RELOPT_OTHER_MEMBER_REL || rte->rtekind != RTE_RELATION ||
		rte->relkind != RELKIND_RELATION || !transparent_reads_on() || !OidIsValid(seam_namespace()))
		return InvalidOid;
	if (q->resultRelation > 0 && changes_rows(q->commandType) &&
		bms_is_member(q->resultRelation, rel->top_parent_relids))
		target = q->resultRelation;
	else if ((*lock = locking_clause(q, rel)) != NULL)
		target = (*lock)->rti;
	else
		return InvalidOid;
	parent = rt_fetch(target, q->rtable)->relid;
	if (get_default_partition_oid(parent) != rte->relid || routing_window_open(parent) ||
		!seam_is_tiered(parent) || (*lock == NULL ? !cold_dml_routes(q, parent) : !spill_routes_changes(parent)))
		return InvalidOid;
	return parent;
}

/*
 * A join clause "rel.column = <outer relations' expression>" that a
 * parameterized scan can take as "column = parameter" (a nested loop then
 * brings in only the cold rows of each outer row's key, as an index scan
 * would read only those rows).
 */
static bool
parameterizing_clause(RelOptInfo *rel, RestrictInfo *rinfo)
{
	AttrNumber	attno;
	Oid			typid;
	int			op;
	Expr	   *value;

	return rinfo->mergeopfamilies != NIL && !rinfo->pseudoconstant &&
		bms_is_member(rel->relid, rinfo->clause_relids) && bms_num_members(rinfo->clause_relids) > 1 &&
		cold_scan_match_condition(rinfo->clause, rel->relid, &attno, &typid, &op, &value) &&
		op == TL_ICE_EXPR_EQ;
}

/* generate_implied_equalities_for_column's test: whether an equivalence member is the column in arg. */
static bool
is_column(PlannerInfo *root, RelOptInfo *rel, EquivalenceClass *ec, EquivalenceMember *em, void *arg)
{
	Expr	   *e = em->em_expr;
	Var		   *column = arg;

	while (IsA(e, RelabelType))
		e = ((RelabelType *) e)->arg;
	return IsA(e, Var) && ((Var *) e)->varno == column->varno && ((Var *) e)->varattno == column->varattno &&
		((Var *) e)->varlevelsup == 0;
}

/*
 * The join clauses on the spill partition's merge key and tier key columns:
 * those of its joininfo, and those its equivalence classes imply (a join
 * "t.id = f.id" lives there, as for an index's parameterized scans).
 */
static List *
join_clauses(PlannerInfo *root, RelOptInfo *rel, Oid parent)
{
	SeamTable  *t = seam_lookup_table(parent);
	Oid			spill = planner_rt_fetch(rel->relid, root)->relid;
	List	   *clauses = list_copy(rel->joininfo);

	for (int i = 0; i <= t->npk; i++)
	{
		const char *name = get_attname(parent, i < t->npk ? t->pk_attnos[i] : t->tier_key_attno, false);
		AttrNumber	attno = get_attnum(spill, name);
		Oid			type;
		int32		typmod;
		Oid			collation;
		Var		   *column;

		if (attno == InvalidAttrNumber)
			continue;
		get_atttypetypmodcoll(spill, attno, &type, &typmod, &collation);
		column = makeVar(rel->relid, attno, type, typmod, collation, 0);
		clauses = list_concat(clauses, generate_implied_equalities_for_column(root, rel, is_column, column,
																				rel->lateral_referencers));
	}
	return clauses;
}

static void
add_cold_dml_path(RelOptInfo *rel, Oid parent, const RowMarkClause *lock, ParamPathInfo *param_info, double rows)
{
	CustomPath *path = makeNode(CustomPath);

	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = rel->reltarget;
	path->path.param_info = param_info;
	path->path.parallel_aware = false;
	path->path.parallel_safe = false;
	path->path.rows = rows;
	/* opening the lake and reading the delta, then each row read, checked and brought in */
	path->path.startup_cost = 50 * seq_page_cost;
	path->path.total_cost = path->path.startup_cost + rows * (cpu_tuple_cost * 10 + cpu_operator_cost);
	path->flags = 0;
	path->custom_private = list_make2(list_make1_oid(parent),
									  lock != NULL ? list_make2_int(lock->strength, lock->waitPolicy) : NIL);
	path->methods = &cold_dml_path_methods;
	add_path(rel, &path->path);
}

/*
 * The spill partition's scan in a routed statement: the cold rows its
 * conditions select, estimated from the lake's record count; and, for each
 * join clause on one of its columns with other relations, the same scan
 * parameterized by it.  In a SELECT that locks the table, the same scan
 * locks the rows it brings in (the executor's LockRows then locks their
 * copies, which no one else sees).
 */
static void
cold_dml_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	Oid			parent;
	RowMarkClause *lock;
	double		records;
	ListCell   *lc;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);
	if (IS_DUMMY_REL(rel) || !OidIsValid(parent = routed_parent(root, rel, rte, &lock)))
		return;
	records = cold_scan_lake_records(seam_lookup_table(parent));
	if (records < 0)
		records = 1000;			/* no snapshot yet: the delta alone */
	rel->rows = clamp_row_est(records * clauselist_selectivity(root, rel->baserestrictinfo, 0, JOIN_INNER, NULL));
	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	add_cold_dml_path(rel, parent, lock, NULL, rel->rows);
	foreach(lc, join_clauses(root, rel, parent))
	{
		RestrictInfo *rinfo = lfirst(lc);
		ParamPathInfo *param_info;

		if (!parameterizing_clause(rel, rinfo))
			continue;
		param_info = get_baserel_parampathinfo(root, rel, bms_difference(rinfo->clause_relids, rel->relids));
		add_cold_dml_path(rel, parent, lock, param_info,
						  clamp_row_est(records * clauselist_selectivity(root, list_concat(list_copy(rel->baserestrictinfo),
																						 param_info->ppi_clauses),
																		  0, JOIN_INNER, NULL)));
	}
}

/*
 * The plan's custom_private: the tiered table; the locking clause's
 * strength and wait policy, or NIL; and the columns (in the table's
 * numbering), value types and operators of the conditions that prune the
 * lake; custom_exprs holds their values, then the quals.
 */
enum
{
	DML_PRIVATE_PARENT,
	DML_PRIVATE_LOCK,
	DML_PRIVATE_ATTNOS,
	DML_PRIVATE_TYPES,
	DML_PRIVATE_OPS
};

#define dml_private(cscan, which) ((List *) list_nth((cscan)->custom_private, (which)))

static Plan *
plan_cold_dml(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist, List *clauses,
			  List *custom_plans)
{
	Oid			parent = linitial_oid(linitial(best_path->custom_private));
	List	   *lock = lsecond(best_path->custom_private);
	Oid			spill = planner_rt_fetch(rel->relid, root)->relid;
	CustomScan *cscan = makeNode(CustomScan);
	List	   *quals = extract_actual_clauses(clauses, false);
	List	   *attnos = NIL,
			   *types = NIL,
			   *ops = NIL,
			   *values = NIL;
	ListCell   *lc;

	foreach(lc, quals)
	{
		AttrNumber	attno;
		Oid			typid;
		int			op;
		Expr	   *value;

		if (!cold_scan_match_condition(lfirst(lc), rel->relid, &attno, &typid, &op, &value))
			continue;
		/* the partition's columns may be numbered apart from the table's (dropped columns): by name */
		attno = get_attnum(parent, get_attname(spill, attno, false));
		if (attno == InvalidAttrNumber)
			continue;
		attnos = lappend_int(attnos, attno);
		types = lappend_oid(types, typid);
		ops = lappend_int(ops, op);
		values = lappend(values, copyObject(value));
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;	/* checked before a row is brought in: exec_cold_dml */
	cscan->scan.scanrelid = rel->relid;
	cscan->custom_scan_tlist = NIL;
	cscan->custom_exprs = list_concat(values, quals);
	cscan->custom_private = list_make5(list_make1_oid(parent), lock, attnos, types, ops);
	cscan->methods = &cold_dml_scan_methods;
	return &cscan->scan.plan;
}

/* ------------------------------------------------------------ execution */

/* A parameterized scan's row brought in, by its key (cold_row_key). */
typedef struct BroughtInKey
{
	char		key[NAMEDATALEN * 4];
	ItemPointerData tid;
} BroughtInKey;

typedef struct ColdDmlState
{
	CustomScanState css;
	SeamTable  *table;
	CommandId	bring_in_cid;	/* the command id before the statement's */
	ExprState  *quals;
	List	   *condition_states;	/* ExprState * of the pruning conditions' values */
	ColdRowsReader *reader;		/* NULL until the first row */
	bool		read_all;		/* the reader is done */
	TupleTableSlot *cold_slot;	/* a cold row, the table's row type */
	AttrMap    *to_spill;		/* the table's columns by the partition's, NULL when the same */
	ResultRelInfo *spill;		/* the spill partition, with its indexes open */
	ItemPointerData *brought_in;	/* the rows brought in */
	int64		nbrought_in;
	int64		capacity;
	int64		replay;			/* after a rescan: the next row of brought_in to return again; -1 */
	TupleTableSlot *fetch_slot; /* the partition's own, to fetch rows by ctid */
	HTAB	   *keys;			/* parameterized: each row brought in by its key's text, to its ctid */
	bool		locks;			/* a SELECT ... FOR UPDATE/SHARE: each row is locked first */
	LockClauseStrength lock_strength;
	LockWaitPolicy lock_wait;
	SpillLocker *locker;
	int64		nskipped;		/* rows SKIP LOCKED skipped */
} ColdDmlState;

/* The es_output_cid of the statement the executor start hook made room for (see the file comment). */
static CommandId room_made_for = InvalidCommandId;

static Node *
create_cold_dml_state(CustomScan *cscan)
{
	ColdDmlState *state = palloc0(sizeof(ColdDmlState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &cold_dml_exec_methods;
	state->replay = -1;
	return (Node *) state;
}

static void
begin_cold_dml(CustomScanState *node, EState *estate, int eflags)
{
	ColdDmlState *s = (ColdDmlState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Oid			parent = linitial_oid(dml_private(cscan, DML_PRIVATE_PARENT));
	List	   *lock = dml_private(cscan, DML_PRIVATE_LOCK);
	int			nconditions = list_length(dml_private(cscan, DML_PRIVATE_ATTNOS));
	ListCell   *lc;

	s->table = seam_lookup_table(parent);
	if (s->table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s is no longer registered with TierDB", seam_table_name(parent)),
				 errhint("Run the statement again.")));
	s->locks = lock != NIL;
	if (s->locks)
	{
		s->lock_strength = linitial_int(lock);
		s->lock_wait = lsecond_int(lock);
	}
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	if (estate->es_output_cid != room_made_for)
		elog(ERROR, "%s started without a command id to bring rows in with", COLD_DML_NAME);
	s->bring_in_cid = estate->es_output_cid - 1;
	s->quals = ExecInitQual(list_copy_tail(cscan->custom_exprs, nconditions), &node->ss.ps);
	foreach(lc, list_truncate(list_copy(cscan->custom_exprs), nconditions))
		s->condition_states = lappend(s->condition_states, ExecInitExpr(lfirst(lc), &node->ss.ps));
	s->spill = makeNode(ResultRelInfo);
	InitResultRelInfo(s->spill, node->ss.ss_currentRelation, 0, NULL, 0);
	ExecOpenIndices(s->spill, false);
	if (!bms_is_empty(cscan->scan.plan.extParam))
	{
		HASHCTL		ctl = {.keysize = sizeof(((BroughtInKey *) NULL)->key), .entrysize = sizeof(BroughtInKey),
		.hcxt = estate->es_query_cxt};

		s->keys = hash_create("tierdb cold rows brought in", 256, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
}

/* Opens the reader at the first row: the conditions' values are known then. */
static void
open_reader(ColdDmlState *s)
{
	CustomScan *cscan = (CustomScan *) s->css.ss.ps.plan;
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	Relation	parent = table_open(s->table->relid, AccessShareLock);
	TupleDesc	desc = CreateTupleDescCopy(RelationGetDescr(parent));
	int			n = list_length(s->condition_states);
	ColdRowsCondition *conditions = palloc0(sizeof(ColdRowsCondition) * Max(n, 1));
	ListCell   *attno,
			   *type,
			   *op,
			   *state;
	int			i = 0;

	table_close(parent, NoLock);
	forfour(attno, dml_private(cscan, DML_PRIVATE_ATTNOS), type, dml_private(cscan, DML_PRIVATE_TYPES),
			op, dml_private(cscan, DML_PRIVATE_OPS), state, s->condition_states)
	{
		conditions[i].attno = lfirst_int(attno);
		conditions[i].typid = lfirst_oid(type);
		conditions[i].op = lfirst_int(op);
		conditions[i].value = ExecEvalExprSwitchContext(lfirst(state), econtext, &conditions[i].isnull);
		i++;
	}
	s->cold_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	s->to_spill = build_attrmap_by_name_if_req(desc, RelationGetDescr(s->css.ss.ss_currentRelation));
	s->reader = cold_rows_reader_open(s->table, desc, conditions, n, NULL);
}

/* The cold row in the partition's column order, as a virtual tuple of slot. */
static void
as_spill_row(ColdDmlState *s, TupleTableSlot *slot)
{
	TupleTableSlot *cold = s->cold_slot;

	ExecClearTuple(slot);
	slot_getallattrs(cold);
	for (int i = 0; i < slot->tts_tupleDescriptor->natts; i++)
	{
		AttrNumber	from = s->to_spill != NULL ? s->to_spill->attnums[i] : i + 1;

		slot->tts_values[i] = from > 0 ? cold->tts_values[from - 1] : (Datum) 0;
		slot->tts_isnull[i] = from > 0 ? cold->tts_isnull[from - 1] : true;
	}
	ExecStoreVirtualTuple(slot);
}

static void
refuse_transparent_writes_off(ColdDmlState *s)
{
	const char *table = seam_table_name(s->table->relid);

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot change rows of table \"%s\" below its cut-line with plain UPDATE, DELETE or MERGE: "
					"tierdb.transparent_writes is off", table),
			 errdetail("The statement selects rows below the cut-line: rows there live in the lake."),
			 errhint("Change them with tierdb_upsert('%s', <row as jsonb>) or tierdb_delete('%s', <key>, <tier key>), "
					 "or SET tierdb.transparent_writes = on.", table, table)));
}

/* Inserts a row brought in into the spill partition and its indexes, as of command `cid`. */
static void
insert_brought_in(ResultRelInfo *spill, TupleTableSlot *slot, CommandId cid, EState *estate)
{
	table_tuple_insert(spill->ri_RelationDesc, slot, cid, 0, NULL);
	if (spill->ri_NumIndices > 0)
		ExecInsertIndexTuples(spill, slot, estate, false, false, NULL, NIL);
}

/*
 * Removes a row brought in if the statement left it as it was: still
 * visible as this transaction inserted it, not since updated or deleted by
 * it (the spill partition's trigger removed the new versions already).
 */
static void
remove_if_untouched(Relation spill, ItemPointer tid, TupleTableSlot *probe)
{
	/* (the snapshot would only cross-check serializable deletes: none needed for our own row) */
	if (table_tuple_fetch_row_version(spill, tid, SnapshotSelf, probe))
		simple_table_tuple_delete(spill, tid, InvalidSnapshot);
}

/*
 * A locking SELECT's row (in cold_slot): its pk locked as the clause asks
 * (spill.h); false when SKIP LOCKED skips it.  The lock is taken as the
 * row passes the scan's conditions, before any join above: a row a join
 * then drops stays locked, more than Postgres locks on a plain table.
 */
static bool
lock_row(ColdDmlState *s)
{
	Relation	parent = table_open(s->table->relid, NoLock);
	TupleTableSlot *cold = s->cold_slot;
	HeapTuple	row;
	bool		locked;

	slot_getallattrs(cold);
	row = heap_form_tuple(cold->tts_tupleDescriptor, cold->tts_values, cold->tts_isnull);
	locked = spill_lock_cold_row(s->table, parent, row, s->lock_strength, s->lock_wait, &s->locker);
	table_close(parent, NoLock);
	heap_freetuple(row);
	return locked;
}

/*
 * Inserts the row into the spill partition with the command id before the
 * statement's, and records it.  Locking a cold row changes nothing, so a
 * locking SELECT brings rows in whatever tierdb.transparent_writes says.
 */
static void
bring_in(ColdDmlState *s, TupleTableSlot *slot)
{
	EState	   *estate = s->css.ss.ps.state;

	if (!s->locks && !spill_transparent_writes_on())
		refuse_transparent_writes_off(s);
	insert_brought_in(s->spill, slot, s->bring_in_cid, estate);
	if (s->nbrought_in == s->capacity)
	{
		s->capacity = Max(64, s->capacity * 2);
		s->brought_in = s->brought_in == NULL
			? MemoryContextAlloc(estate->es_query_cxt, sizeof(ItemPointerData) * s->capacity)
			: repalloc_huge(s->brought_in, sizeof(ItemPointerData) * s->capacity);
	}
	s->brought_in[s->nbrought_in++] = slot->tts_tid;
}

/*
 * The key (merge key columns) of the cold row in cold_slot as text, for a
 * parameterized scan: one rescan may select a row an earlier one brought
 * in already, which is then returned again instead of brought in twice.
 */
static char *
cold_row_key(ColdDmlState *s)
{
	TupleTableSlot *cold = s->cold_slot;
	StringInfoData key;

	initStringInfo(&key);
	for (int i = 0; i < s->table->npk; i++)
	{
		AttrNumber	attno = s->table->pk_attnos[i];
		Oid			out;
		bool		varlena;

		appendStringInfoChar(&key, cold->tts_isnull[attno - 1] ? 'n' : 'v');
		if (cold->tts_isnull[attno - 1])
			continue;
		getTypeOutputInfo(TupleDescAttr(cold->tts_tupleDescriptor, attno - 1)->atttypid, &out, &varlena);
		appendStringInfoString(&key, OidOutputFunctionCall(out, cold->tts_values[attno - 1]));
		appendStringInfoChar(&key, '\x1f');
	}
	return key.data;
}

/*
 * A parameterized scan's row: the row brought in for its key by an earlier
 * rescan (into slot, as it was then), or false after recording that this
 * one is about to be brought in.  Keys too long for the table are brought
 * in every time (an UPDATE ... FROM joining one such key twice then changes
 * it twice, the later winning).
 */
static bool
seen_before(ColdDmlState *s, TupleTableSlot *slot, bool *record)
{
	char	   *key = cold_row_key(s);
	BroughtInKey *entry;
	bool		found;

	*record = false;
	if (strlen(key) >= sizeof(entry->key))
		return false;
	entry = hash_search(s->keys, key, HASH_ENTER, &found);
	if (!found)
	{
		*record = true;
		return false;
	}
	if (s->fetch_slot == NULL)
		s->fetch_slot = table_slot_create(s->css.ss.ss_currentRelation, NULL);
	if (!table_tuple_fetch_row_version(s->css.ss.ss_currentRelation, &entry->tid, SnapshotAny, s->fetch_slot))
		return false;
	ExecCopySlot(slot, s->fetch_slot);
	slot->tts_tid = entry->tid;
	slot->tts_tableOid = RelationGetRelid(s->css.ss.ss_currentRelation);
	return true;
}

static void
record_key(ColdDmlState *s, const ItemPointerData *tid)
{
	BroughtInKey *entry = hash_search(s->keys, cold_row_key(s), HASH_FIND, NULL);

	if (entry != NULL)
		entry->tid = *tid;
}

/*
 * After a rescan: the rows brought in, again, as they were (an update since
 * does not show: the executor finds it updated and skips it, as it skips a
 * row a join returns twice).  The scan slot is virtual: the ctid and table
 * are set on it as the insert set them.
 */
static TupleTableSlot *
replay_next(ColdDmlState *s, TupleTableSlot *slot)
{
	Relation	spill = s->css.ss.ss_currentRelation;

	if (s->fetch_slot == NULL)
		s->fetch_slot = table_slot_create(spill, NULL);
	while (s->replay < s->nbrought_in)
	{
		ItemPointerData tid = s->brought_in[s->replay++];

		if (!table_tuple_fetch_row_version(spill, &tid, SnapshotAny, s->fetch_slot))
			continue;
		ExecCopySlot(slot, s->fetch_slot);
		slot->tts_tid = tid;
		slot->tts_tableOid = RelationGetRelid(spill);
		return slot;
	}
	return ExecClearTuple(slot);
}

static TupleTableSlot *
cold_dml_next(ScanState *ss)
{
	ColdDmlState *s = (ColdDmlState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	ExprContext *econtext = ss->ps.ps_ExprContext;

	if (s->replay >= 0)
		return replay_next(s, slot);
	if (s->reader == NULL && !s->read_all)
		open_reader(s);
	while (!s->read_all)
	{
		CHECK_FOR_INTERRUPTS();
		if (!cold_rows_reader_next(s->reader, s->cold_slot))
		{
			s->read_all = true;
			break;
		}
		as_spill_row(s, slot);
		econtext->ecxt_scantuple = slot;
		if (!ExecQual(s->quals, econtext))
		{
			InstrCountFiltered1(ss, 1);
			ResetExprContext(econtext);
			continue;
		}
		if (s->locks && !lock_row(s))
		{
			s->nskipped++;
			continue;
		}
		if (s->keys != NULL)
		{
			bool		record;

			if (seen_before(s, slot, &record))
				return slot;
			bring_in(s, slot);
			if (record)
				record_key(s, &slot->tts_tid);
			return slot;
		}
		bring_in(s, slot);
		return slot;
	}
	return ExecClearTuple(slot);
}

/* An EvalPlanQual recheck never asks for this scan's rows: no other transaction can change them. */
static bool
cold_dml_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_cold_dml(CustomScanState *node)
{
	return ExecScan(&node->ss, cold_dml_next, cold_dml_recheck);
}

/*
 * A parameterized scan whose parameters changed reads again with their new
 * values (bringing in only rows no earlier pass brought in).  Otherwise the
 * rows are the same: what is left is read first, so that a rescan returns
 * every row the first pass would have, and then they are returned again.
 */
static void
rescan_cold_dml(CustomScanState *node)
{
	ColdDmlState *s = (ColdDmlState *) node;

	if (node->ss.ps.chgParam != NULL && s->keys != NULL)
	{
		if (s->reader != NULL)
			cold_rows_reader_close(s->reader);
		s->reader = NULL;
		s->read_all = false;
		s->replay = -1;
		return;
	}
	if (s->replay < 0)
		while (!TupIsNull(cold_dml_next(&node->ss)))
			;
	s->replay = 0;
}

/*
 * Removes the rows brought in that the statement left as they were: those
 * still visible as inserted by this transaction and not since updated or
 * deleted by it.  The spill partition's trigger has removed the others'
 * new versions already (the after-row triggers fire before the plan ends).
 */
static void
end_cold_dml(CustomScanState *node)
{
	ColdDmlState *s = (ColdDmlState *) node;
	Relation	spill = node->ss.ss_currentRelation;
	TupleTableSlot *probe;

	if (s->reader != NULL)
		cold_rows_reader_close(s->reader);
	if (s->spill == NULL)
		return;					/* EXPLAIN without ANALYZE */
	probe = s->fetch_slot != NULL ? s->fetch_slot : table_slot_create(spill, NULL);
	for (int64 i = 0; i < s->nbrought_in; i++)
		remove_if_untouched(spill, &s->brought_in[i], probe);
	ExecDropSingleTupleTableSlot(probe);
	ExecCloseIndices(s->spill);
	if (s->cold_slot != NULL)
		ExecDropSingleTupleTableSlot(s->cold_slot);
}

static void
explain_cold_dml(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ColdDmlState *s = (ColdDmlState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *quals = list_copy_tail(cscan->custom_exprs, list_length(dml_private(cscan, DML_PRIVATE_ATTNOS)));

	if (quals != NIL && es->deparse_cxt != NIL)
	{
		List	   *context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);

		ExplainPropertyText("Filter", deparse_expression((Node *) make_ands_explicit(quals), context, es->verbose,
														 false), es);
	}
	ExplainPropertyText("Cold Rows Of", seam_table_name(s->table->relid), es);
	ExplainPropertyText("Cut-line T", seam_key_text(s->table, seam_pin(s->table).tier_key_hi), es);
	ExplainPropertyInteger("Conditions Pushed to the Lake", NULL, list_length(dml_private(cscan, DML_PRIVATE_ATTNOS)),
						   es);
	if (s->locks)
		ExplainPropertyText("Locks Rows", lock_clause_name(s->lock_strength), es);
	if (es->analyze)
		ExplainPropertyInteger("Rows Brought In", NULL, s->nbrought_in, es);
	if (es->analyze && s->locks && s->lock_wait == LockWaitSkip)
		ExplainPropertyInteger("Rows Skipped Locked", NULL, s->nskipped, es);
}

/* ------------------------------------------------------------ the command id */

static bool
plan_brings_rows_in(Plan *plan)
{
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return false;
	switch (nodeTag(plan))
	{
		case T_CustomScan:
			if (((CustomScan *) plan)->methods == &cold_dml_scan_methods)
				return true;
			children = ((CustomScan *) plan)->custom_plans;
			break;
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_SubqueryScan:
			children = list_make1(((SubqueryScan *) plan)->subplan);
			break;
		default:
			break;
	}
	foreach(lc, children)
		if (plan_brings_rows_in(lfirst(lc)))
			return true;
	return plan_brings_rows_in(plan->lefttree) || plan_brings_rows_in(plan->righttree);
}

/* ------------------------------------------------------------ INSERT ... ON CONFLICT */

/* An INSERT ... ON CONFLICT into tiered tables that is running (cold_dml.h). */
typedef struct ConflictStatement
{
	struct ConflictStatement *outer;	/* the statement it runs inside, if any */
	QueryDesc  *query;
	CommandId	bring_in_cid;
	List	   *parents;		/* the tiered tables it inserts into (Oids) */
	List	   *pks;			/* "<parent oid>:<pk>" of the rows brought in */
	List	   *spills;			/* per row brought in: the spill partition's Oid ... */
	List	   *tids;			/* ... and its ctid (ItemPointer) */
	MemoryContextCallback unlink;
} ConflictStatement;

static ConflictStatement *conflict_statement = NULL;

/* The tiered tables with transparent writes that the plan's INSERT ... ON CONFLICT writes. */
static List *
conflict_targets(PlannedStmt *stmt)
{
	List	   *parents = NIL;
	List	   *plans = lcons(stmt->planTree, list_copy(stmt->subplans));
	ListCell   *lc;

	foreach(lc, plans)
	{
		ModifyTable *mt = lfirst(lc);
		ListCell   *rel;

		if (mt == NULL || !IsA(mt, ModifyTable) || mt->onConflictAction == ONCONFLICT_NONE)
			continue;
		foreach(rel, mt->resultRelations)
		{
			Oid			relid = rt_fetch(lfirst_int(rel), stmt->rtable)->relid;

			if (seam_is_tiered(relid) && spill_routes_conflicts(relid))
				parents = list_append_unique_oid(parents, relid);
		}
	}
	return parents;
}

static void
unlink_conflict_statement(void *arg)
{
	ConflictStatement **at = &conflict_statement;

	while (*at != NULL && *at != arg)
		at = &(*at)->outer;
	if (*at != NULL)
		*at = ((ConflictStatement *) arg)->outer;
}

bool
cold_dml_conflicts_statement(Oid parent)
{
	return conflict_statement != NULL &&
		(!OidIsValid(parent) || list_member_oid(conflict_statement->parents, parent));
}

static char *
brought_in_key(Oid parent, const char *pk)
{
	return psprintf("%u:%s", parent, pk);
}

bool
cold_dml_brought_in(Oid parent, const char *pk)
{
	char	   *key = brought_in_key(parent, pk);
	ListCell   *lc;

	foreach(lc, conflict_statement->pks)
		if (strcmp(lfirst(lc), key) == 0)
			return true;
	return false;
}

void
cold_dml_bring_in_conflict(Relation spill, Oid parent, HeapTuple tuple, const char *pk)
{
	ConflictStatement *c = conflict_statement;
	MemoryContext caller = MemoryContextSwitchTo(c->query->estate->es_query_cxt);
	EState	   *estate = CreateExecutorState();
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(spill), &TTSOpsHeapTuple);
	ItemPointer tid = palloc(sizeof(ItemPointerData));

	ExecStoreHeapTuple(heap_copytuple(tuple), slot, true);
	InitResultRelInfo(rri, spill, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	insert_brought_in(rri, slot, c->bring_in_cid, estate);
	ExecCloseIndices(rri);
	*tid = slot->tts_tid;
	c->pks = lappend(c->pks, brought_in_key(parent, pk));
	c->spills = lappend_oid(c->spills, RelationGetRelid(spill));
	c->tids = lappend(c->tids, tid);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	MemoryContextSwitchTo(caller);
}

/* Removes the rows an ON CONFLICT statement brought in and left as they were. */
static void
remove_untouched_conflicts(ConflictStatement *c)
{
	ListCell   *spill_lc,
			   *tid_lc;

	forboth(spill_lc, c->spills, tid_lc, c->tids)
	{
		Relation	spill = table_open(lfirst_oid(spill_lc), RowExclusiveLock);
		TupleTableSlot *probe = table_slot_create(spill, NULL);

		remove_if_untouched(spill, lfirst(tid_lc), probe);
		ExecDropSingleTupleTableSlot(probe);
		table_close(spill, RowExclusiveLock);
	}
}

/* ------------------------------------------------------------ the executor hooks */

/* Makes room for the command id the rows are brought in with (see the file comment). */
static void
start_statement(QueryDesc *query, int eflags)
{
	PlannedStmt *stmt = query->plannedstmt;
	List	   *conflicts = NIL;
	bool		brings_in = false;

	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) &&
		(changes_rows(stmt->commandType) || stmt->hasModifyingCTE || stmt->rowMarks != NIL))
	{
		ListCell   *lc;

		brings_in = plan_brings_rows_in(stmt->planTree);
		foreach(lc, stmt->subplans)
			brings_in = brings_in || plan_brings_rows_in(lfirst(lc));
	}
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && (stmt->commandType == CMD_INSERT || stmt->hasModifyingCTE) &&
		OidIsValid(seam_namespace()))
		conflicts = conflict_targets(stmt);
	if (brings_in || conflicts != NIL)
	{
		(void) GetCurrentCommandId(true);
		CommandCounterIncrement();
		room_made_for = GetCurrentCommandId(false);
	}
	if (prev_executor_start)
		prev_executor_start(query, eflags);
	else
		standard_ExecutorStart(query, eflags);
	if (conflicts != NIL)
	{
		MemoryContext cxt = query->estate->es_query_cxt;
		ConflictStatement *c = MemoryContextAllocZero(cxt, sizeof(ConflictStatement));

		c->query = query;
		c->bring_in_cid = room_made_for - 1;
		c->parents = list_copy(conflicts);
		c->outer = conflict_statement;
		/* an error unwinds the statement: it leaves the stack with its memory */
		c->unlink.func = unlink_conflict_statement;
		c->unlink.arg = c;
		MemoryContextRegisterResetCallback(cxt, &c->unlink);
		conflict_statement = c;
	}
}

/* After the statement's AFTER triggers: an ON CONFLICT statement's untouched rows go. */
static void
finish_statement(QueryDesc *query)
{
	if (prev_executor_finish)
		prev_executor_finish(query);
	else
		standard_ExecutorFinish(query);
	if (conflict_statement != NULL && conflict_statement->query == query)
	{
		remove_untouched_conflicts(conflict_statement);
		conflict_statement = conflict_statement->outer;
	}
}

void
cold_dml_init(void)
{
	RegisterCustomScanMethods(&cold_dml_scan_methods);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = cold_dml_set_rel_pathlist;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = start_statement;
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = finish_statement;
}
