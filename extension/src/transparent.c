/*-------------------------------------------------------------------------
 *
 * transparent.c
 *		Transparent reads: before planning, every reference a query makes
 *		to a registered tiered table is replaced by the seam union
 *
 *			SELECT <columns> FROM table
 *			 WHERE tier_key >= (SELECT tierdb.seam_t_<type>(table))
 *			UNION ALL
 *			SELECT <columns> FROM tierdb.cold_rows(NULL::table)
 *
 * The planner then treats it as any UNION ALL subquery: the query's
 * conditions are pushed into both arms, the heap arm's partitions below T
 * are pruned at run time (the bound is an initplan parameter) and the cold
 * arm becomes the custom scan of cold_scan.c.  Both arms read with the
 * statement's pin (seam.c), so together they hold every row exactly once.
 *
 * Kept as they are, with plain heap semantics:
 *	- the target of INSERT, UPDATE, DELETE and MERGE, and a table locked by
 *	  SELECT ... FOR UPDATE/SHARE: the scan of its spill partition brings
 *	  in the cold rows they change or lock (cold_dml.h); without one, they
 *	  are guarded instead (guard_result_relation, guard_locked_reference,
 *	  dml_guard.h): a statement that could reach rows below T is refused,
 *	  not applied to the heap's;
 *	- ONLY references (a partitioned table's own rows are none);
 *	- everything when tierdb.transparent_reads is off.
 *
 * Permissions: the heap arm's table reference takes over the original
 * reference's required privileges and checked columns, so the executor
 * checks the user's table exactly as before (also when the heap arm is
 * pruned); the cold arm carries them too, and the cold scan checks the
 * same (cold_scan_read_for).  Row-level
 * security quals stay on the replaced reference and so filter both arms.
 *
 * Heap-only references.  When a query's own conditions put the tier key
 * at or above the T of its pin while it is planned (tier_key = / >= / > a
 * constant, after constant folding, with a custom plan's parameters
 * folded in), the reference is left a plain partitioned table: planning
 * the union costs more than a point lookup itself.  The plan's "TierDB
 * Heap-Only Guard" checks when the statement starts that it still sees
 * that T (heap_only.h says what happens if not); plans cached with a T are
 * invalidated when the cut-line advances.  A bound known only when the
 * statement starts (a generic plan's parameter, now()) is checked then,
 * for a SELECT of the table alone: the guard keeps the statement as it is
 * before planning, to plan it again with the union when the bound turns
 * out below T (check_at_start, heap_only.c).
 *
 * A query reading the table's system columns (ctid, tableoid, ...) is
 * refused: lake rows have none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"

#include "cold_dml.h"
#include "cold_agg.h"
#include "cold_scan.h"
#include "dml_guard.h"
#include "heap_only.h"
#include "hybrid.h"
#include "routing.h"
#include "seam.h"
#include "spill.h"
#include "transparent.h"

static bool transparent_reads = true;
static planner_hook_type prev_planner_hook = NULL;

/* ------------------------------------------------------------ what to replace */

/* Whether the query locks range table entry rti (FOR UPDATE/SHARE). */
static bool
locked_for_update(Query *q, Index rti)
{
	ListCell   *lc;

	foreach(lc, q->rowMarks)
		if (((RowMarkClause *) lfirst(lc))->rti == rti)
			return true;
	return false;
}

/*
 * Whether the query reads a system column of the table: the parser records
 * every column a query (its sublinks included) reads from a range table
 * entry in selectedCols, offset by FirstLowInvalidHeapAttributeNumber, so
 * the smallest member tells.
 */
static bool
reads_system_column(const RangeTblEntry *rte)
{
	int			first = bms_next_member(rte->selectedCols, -1);

	return first >= 0 && first + FirstLowInvalidHeapAttributeNumber < 0;
}

/* ------------------------------------------------------------ the seam union */

static const char *
bound_function(SeamKeyKind kind)
{
	switch (kind)
	{
		case SEAM_KEY_BIGINT:
			return "seam_t_bigint";
		case SEAM_KEY_TIMESTAMPTZ:
			return "seam_t_timestamptz";
		case SEAM_KEY_TIMESTAMP:
			return "seam_t_timestamp";
		case SEAM_KEY_DATE:
			return "seam_t_date";
	}
	return NULL;
}

/*
 * The select list of one arm: every attribute in order, so the union's
 * column n is the table's attribute n and the query's Vars stay valid; a
 * dropped attribute is a null (as in a row constructor of the row type).
 */
static void
append_columns(StringInfo sql, TupleDesc desc, const char *alias)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (i > 0)
			appendStringInfoString(sql, ", ");
		if (att->attisdropped)
			appendStringInfoString(sql, "NULL::pg_catalog.int4");
		else
			appendStringInfo(sql, "%s.%s", alias, quote_identifier(NameStr(att->attname)));
	}
}

/* The seam union for the table, parsed and analysed. */
static Query *
seam_union(const SeamTable *t, RangeTblEntry *rte)
{
	Relation	rel = table_open(rte->relid, NoLock); /* locked by the parser already */
	TupleDesc	desc = RelationGetDescr(rel);
	char	   *table = seam_table_name(rte->relid);
	StringInfoData sql;
	RawStmt    *raw;
	Query	   *query;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	append_columns(&sql, desc, "h");
	appendStringInfo(&sql, " FROM %s h WHERE h.%s >= (SELECT tierdb.%s(%u::pg_catalog.oid))", table,
					 quote_identifier(NameStr(TupleDescAttr(desc, t->tier_key_attno - 1)->attname)),
					 bound_function(t->key_kind), rte->relid);
	appendStringInfoString(&sql, " UNION ALL SELECT ");
	append_columns(&sql, desc, "c");
	appendStringInfo(&sql, " FROM tierdb.cold_rows(NULL::%s) c", table);
	table_close(rel, NoLock);

	raw = linitial_node(RawStmt, pg_parse_query(sql.data));
	query = parse_analyze_fixedparams(raw, sql.data, NULL, 0, NULL);
	return query;
}

/*
 * Analysed seam unions, per table, so that planning a query does not parse
 * and analyse the same SQL again. Any change to the table (its columns,
 * its registration: the trigger on tierdb.tables) invalidates its relcache
 * entry and so its union here; a new tierdb schema (the extension created
 * again, with new function oids) empties the cache.
 */
typedef struct CachedUnion
{
	Oid			relid;			/* hash key */
	MemoryContext cxt;			/* holds query; a child of CacheMemoryContext */
	Query	   *query;
} CachedUnion;

static HTAB *unions = NULL;
static Oid	unions_namespace = InvalidOid;

static void
forget_unions(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	CachedUnion *e;

	if (unions == NULL)
		return;
	hash_seq_init(&seq, unions);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (OidIsValid(relid) && e->relid != relid)
			continue;
		MemoryContextDelete(e->cxt);
		hash_search(unions, &e->relid, HASH_REMOVE, NULL);
	}
}

/* A copy, in the current memory context, of the table's analysed seam union. */
static Query *
cached_seam_union(const SeamTable *t, RangeTblEntry *rte)
{
	Oid			nsp = seam_namespace();
	CachedUnion *e;
	bool		found;
	Query	   *query,
			   *copy;
	MemoryContext cxt,
				old;

	if (unions == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(Oid), .entrysize = sizeof(CachedUnion)};

		unions = hash_create("tierdb seam unions", 64, &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(forget_unions, (Datum) 0);
	}
	if (nsp != unions_namespace)
	{
		forget_unions((Datum) 0, InvalidOid);
		unions_namespace = nsp;
	}
	e = hash_search(unions, &rte->relid, HASH_FIND, NULL);
	if (e != NULL)
		return copyObject(e->query);
	query = seam_union(t, rte);
	/* Copy first, then enter: an error while copying leaves no half-made entry. */
	cxt = AllocSetContextCreate(CacheMemoryContext, "tierdb seam union", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	copy = copyObject(query);
	MemoryContextSwitchTo(old);
	e = hash_search(unions, &rte->relid, HASH_ENTER, &found);
	e->cxt = cxt;
	e->query = copy;
	return query;
}

/*
 * The heap arm's reference to the table takes over the original
 * reference's lock mode, privileges and checked columns.
 */
static void
inherit_permissions(Query *seam, const RangeTblEntry *original)
{
	RangeTblEntry *heap_arm = rt_fetch(1, seam->rtable);
	RangeTblEntry *heap_rel;

	Assert(heap_arm->rtekind == RTE_SUBQUERY);
	heap_rel = rt_fetch(1, heap_arm->subquery->rtable);
	Assert(heap_rel->rtekind == RTE_RELATION && heap_rel->relid == original->relid);
	heap_rel->rellockmode = original->rellockmode;
	heap_rel->requiredPerms = original->requiredPerms;
	heap_rel->checkAsUser = original->checkAsUser;
	heap_rel->selectedCols = bms_copy(original->selectedCols);
	/* The cold arm's function reference checks the same (cold_scan.h). */
	cold_scan_read_for(rt_fetch(1, rt_fetch(2, seam->rtable)->subquery->rtable), original);
}

/* Turns the relation reference into the seam union subquery, in place. */
static void
replace_reference(RangeTblEntry *rte, const SeamTable *t)
{
	Query	   *seam = cached_seam_union(t, rte);

	inherit_permissions(seam, rte);
	rte->rtekind = RTE_SUBQUERY;
	rte->subquery = seam;
	rte->security_barrier = rte->securityQuals != NIL;
	rte->relid = InvalidOid;
	rte->relkind = 0;
	rte->rellockmode = NoLock;
	rte->tablesample = NULL;
	rte->inh = false;
	rte->requiredPerms = 0;
	rte->checkAsUser = InvalidOid;
	rte->selectedCols = NULL;
	rte->insertedCols = NULL;
	rte->updatedCols = NULL;
	rte->extraUpdatedCols = NULL;
}

/* ------------------------------------------------------------ heap-only references */

/* Whether values of type typid are integers (int2, int4, int8). */
static bool
is_integer_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID;
}

/*
 * The cell of a conjunct "tk op value" (or "value op tk") holding the value,
 * when the conjunct puts a lower bound on the tier key of range table entry
 * rti, or NULL: op is =, >= or > of the key type's btree family, and the
 * value is of the key's own type (or, for an integer key, any integer type).
 */
static ListCell *
conjunct_lower_bound(Node *clause, Index rti, const SeamTable *t)
{
	OpExpr	   *op;
	Node	   *left;
	Node	   *right;
	Var		   *var;
	Node	   *value;
	bool		var_left;
	int			strategy;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return NULL;
	op = (OpExpr *) clause;
	left = strip_implicit_coercions(linitial(op->args));
	right = strip_implicit_coercions(lsecond(op->args));
	var_left = IsA(left, Var);
	var = (Var *) (var_left ? left : right);
	value = var_left ? right : left;
	if (!IsA(var, Var) || var->varno != (int) rti || var->varlevelsup != 0 || var->varattno != t->tier_key_attno)
		return NULL;
	strategy = InvalidStrategy;
	if (exprType(value) == var->vartype)
	{
		for (int i = 0; i < BTMaxStrategyNumber; i++)
			if (t->tier_key_ops[i] == op->opno)
				strategy = i + 1;
	}
	else if (t->key_kind == SEAM_KEY_BIGINT && is_integer_type(exprType(value)))
	{
		/*
		 * An integer key compared with another integer type, as in
		 * "seq >= 300" on a bigint key (int84ge): the family's cross-type
		 * operators order the values as the key's own do, and the value's
		 * canonical form is the value itself.  Other cross-type comparisons
		 * (a timestamptz key with a date) depend on the session's settings
		 * and are left alone.
		 */
		strategy = get_op_opfamily_strategy(op->opno, t->tier_key_opfamily);
	}
	if (strategy != BTEqualStrategyNumber &&
		strategy != (var_left ? BTGreaterEqualStrategyNumber : BTLessEqualStrategyNumber) &&
		strategy != (var_left ? BTGreaterStrategyNumber : BTLessStrategyNumber))
		return NULL;
	return var_left ? list_nth_cell(op->args, 1) : list_head(op->args);
}

/* True for what makes an expression's value depend on more than the statement's parameters and snapshot. */
static bool
reads_rows_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) || IsA(node, SubLink) || IsA(node, Aggref) || IsA(node, WindowFunc) ||
		IsA(node, GroupingFunc) || IsA(node, PlaceHolderVar) || IsA(node, CurrentOfExpr) ||
		(IsA(node, Param) && ((Param *) node)->paramkind != PARAM_EXTERN))
		return true;
	return expression_tree_walker(node, reads_rows_walker, context);
}

/* Whether an expression can be computed when the statement starts: from parameters, constants, stable functions. */
static bool
known_at_start(Expr *value)
{
	return !reads_rows_walker((Node *) value, NULL) && !contain_volatile_functions((Node *) value);
}

/* Adds a (folded) lower bound on the tier key to those tier_key_bounds found. */
static void
add_lower_bound(Expr *value, const SeamTable *t, bool *found, int64 *lower, List **at_start)
{
	if (IsA(value, Const))
	{
		int64		bound;

		if (((Const *) value)->constisnull)
			return;
		bound = seam_key_canonical(t->key_kind, ((Const *) value)->consttype, ((Const *) value)->constvalue);
		if (!*found || bound > *lower)
			*lower = bound;
		*found = true;
	}
	else if (known_at_start(value))
		*at_start = lappend(*at_start, value);
}

/*
 * The lower bounds the query's conditions put on the tier key of its only
 * relation, range table entry rti: true, with the highest in *lower, when
 * some are constants; in *at_start, those computed only when the statement
 * starts (parameters of a generic plan, stable functions). Only a query
 * level reading that one relation qualifies: its WHERE conditions are then
 * the relation's own (in a join they might apply to a nullable side, or
 * not to the relation at all).
 *
 * Bounds are compared folded, as the planner will fold them: constants
 * computed, a custom plan's parameters substituted.
 *
 * The result relation of an UPDATE, DELETE or MERGE (result_relation)
 * qualifies whatever else the level joins: every row it changes meets all
 * the level's WHERE (MERGE: ON) conditions.
 */
static bool
tier_key_bounds(Query *q, Index rti, bool result_relation, const SeamTable *t, ParamListInfo params,
				int64 *lower, List **at_start)
{
	PlannerGlobal glob = {.type = T_PlannerGlobal, .boundParams = params};
	PlannerInfo root = {.type = T_PlannerInfo, .glob = &glob};
	RangeTblRef *only;
	Node	   *quals;
	ListCell   *lc;
	bool		found = false;

	*at_start = NIL;
	if (q->jointree == NULL || q->jointree->quals == NULL)
		return false;
	if (!result_relation)
	{
		if (list_length(q->jointree->fromlist) != 1)
			return false;
		only = linitial(q->jointree->fromlist);
		if (!IsA(only, RangeTblRef) || only->rtindex != (int) rti)
			return false;
	}

	/*
	 * First the conditions as written, folding only the values compared
	 * with the tier key. Each takes its folded form in place, so the
	 * planner finds it folded and the work is not done twice; unless a
	 * function was inlined, whose plan dependency only the planner
	 * records. (Folding all the conditions here, to fold them again in the
	 * planner, cost a point lookup's custom plan 0.7%.)
	 */
	foreach(lc, make_ands_implicit((Expr *) q->jointree->quals))
	{
		ListCell   *value = conjunct_lower_bound(lfirst(lc), rti, t);
		Node	   *folded;

		if (value == NULL)
			continue;
		folded = eval_const_expressions(&root, lfirst(value));
		if (glob.invalItems == NIL)
			lfirst(value) = folded;
		add_lower_bound((Expr *) strip_implicit_coercions(folded), t, &found, lower, at_start);
	}
	if (found || *at_start != NIL)
		return found;

	/*
	 * Then all of them folded, which can turn up bounds the conditions as
	 * written do not show (NOT (tk < value), a CASE folded away). The
	 * query takes the folded form, as above.
	 */
	quals = eval_const_expressions(&root, q->jointree->quals);
	if (glob.invalItems == NIL)
		q->jointree->quals = quals;
	foreach(lc, make_ands_implicit((Expr *) quals))
	{
		ListCell   *value = conjunct_lower_bound(lfirst(lc), rti, t);

		if (value != NULL)
			add_lower_bound((Expr *) strip_implicit_coercions(lfirst(value)), t, &found, lower, at_start);
	}
	return found;
}

/* ------------------------------------------------------------ rewriting */

/* What rewriting one statement needs and finds. */
typedef struct Rewrite
{
	ParamListInfo params;		/* a custom plan's parameter values, or NULL */
	Query	   *statement;		/* the statement's top query level */
	bool		with_unions;	/* no reference may be checked at start (it failed its check) */
	bool		replaced;		/* some reference was replaced by the seam union */
	RangeTblEntry *checked;		/* the reference left to check when the statement starts, if any */
	const SeamTable *checked_table;
	Query	   *dml_checked;	/* the level whose result relation is checked when the statement starts, if any */
	const SeamTable *dml_checked_table;
	List	   *dml_checked_bounds;
	HeapOnlyReads heap_only;	/* the references it reads heap-only */
} Rewrite;

/* Set by transparent_plan_with_unions for the planner call it makes. */
static bool planning_with_unions = false;

static void rewrite_query(Query *q, Rewrite *rw);

static bool
rewrite_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		rewrite_query((Query *) node, (Rewrite *) context);
		return false;
	}
	return expression_tree_walker(node, rewrite_walker, context);
}

bool
transparent_dml_keeps_to_heap(Query *q, const SeamTable *t)
{
	int64		lower;
	List	   *at_start;

	return tier_key_bounds(q, q->resultRelation, true, t, NULL, &lower, &at_start) && lower >= seam_planning_t(t);
}

/*
 * The reference rti to table t must keep the tier key at or above T by its
 * conditions: a constant bound at or above T at planning (read heap-only,
 * with T checked again when the statement starts, heap_only.h), or a bound
 * known when it starts, checked then (by planning the statement again with
 * the parameters' values, which comes back here).  Anything else is
 * refused (dml_guard_refuse).
 */
static void
require_heap_bounds(Query *q, Index rti, bool result_relation, const SeamTable *t, Rewrite *rw)
{
	int64		lower;
	int64		tier_key_hi = seam_planning_t(t);
	List	   *at_start;

	if (tier_key_bounds(q, rti, result_relation, t, rw->params, &lower, &at_start) && lower >= tier_key_hi)
		heap_only_add(&rw->heap_only, t->relid, tier_key_hi);
	else if (at_start != NIL && !rw->with_unions && rw->dml_checked == NULL)
	{
		rw->dml_checked = q;
		rw->dml_checked_table = t;
		rw->dml_checked_bounds = at_start;
	}
	else
		dml_guard_refuse(q, t, tier_key_hi);
}

/*
 * The result relation of a query level that writes to a tiered table
 * (dml_guard.h): its new tier keys are checked per row, and an UPDATE,
 * DELETE or MERGE whose cold rows are not brought in (no spill partition)
 * must keep the tier key at or above T by its conditions
 * (require_heap_bounds).
 */
static void
guard_result_relation(Query *q, Rewrite *rw)
{
	RangeTblEntry *rte = rt_fetch(q->resultRelation, q->rtable);
	SeamTable  *t;
	bool		routed;

	/* An INSERT's target has no inh (it has no ONLY); UPDATE ONLY, DELETE ONLY of a partitioned table reach nothing. */
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_PARTITIONED_TABLE ||
		(!rte->inh && q->commandType != CMD_INSERT))
		return;
	/*
	 * A routed write's own heap statements (30-routing.sql) already keep to
	 * the heap's rows, under a cut-line they hold still (routing.h).
	 */
	if (routing_window_open(rte->relid))
		return;
	t = seam_lookup_table(rte->relid);
	/* A --keep-heap table's heap holds every row: plain DML on it is complete, and mirrored (spill.h). */
	if (t == NULL || t->keep_heap)
		return;
	routed = cold_dml_routes(q, t->relid);
	dml_guard_check_new_rows(q, t, routed);
	if (!dml_guard_needs_bound(q) || routed)
		return;					/* an UPDATE, DELETE or MERGE reaching cold rows brings them in (cold_dml.h) */
	require_heap_bounds(q, q->resultRelation, true, t, rw);
}

/*
 * A table that SELECT ... FOR UPDATE/SHARE locks stays a plain reference:
 * Postgres locks its heap rows, and the scan of its spill partition brings
 * in and locks the cold rows the statement selects (cold_dml.h).  A table
 * without a spill partition that carries changes (transparent writes
 * disabled) cannot have its cold rows locked: the statement must keep the
 * tier key at or above T (require_heap_bounds).
 */
static void
guard_locked_reference(Query *q, Index rti, RangeTblEntry *rte, Rewrite *rw)
{
	SeamTable  *t = seam_lookup_table(rte->relid);

	/* A --keep-heap table's heap holds every row: locking it locks them all. */
	if (t == NULL || t->keep_heap || routing_window_open(t->relid) || spill_routes_changes(t->relid))
		return;
	require_heap_bounds(q, rti, false, t, rw);
}

/*
 * A reference to a mirrored table under tierdb.mirrored_reads = 'hybrid'
 * becomes the seam union too, with a hybrid pin (hybrid.h).  Not a table
 * locked FOR UPDATE/SHARE, nor one whose system columns are read: those
 * read the heap, which is always exact.
 */
static void
read_hybrid(Query *q, Index rti, RangeTblEntry *rte, Rewrite *rw)
{
	SeamTable  *t;

	if (!hybrid_reads_on() || locked_for_update(q, rti) || reads_system_column(rte))
		return;
	t = seam_lookup_mirrored(rte->relid);
	if (t == NULL)
		return;
	replace_reference(rte, t);
	rw->replaced = true;
}

/*
 * Replaces the query's references to tiered tables, after those of its
 * subqueries, CTEs and sublinks, so the unions it adds are not visited.
 */
static void
rewrite_query(Query *q, Rewrite *rw)
{
	Index		rti = 0;
	ListCell   *lc;

	if (q->hasSubLinks)
		query_tree_walker(q, rewrite_walker, rw, 0);
	else
	{
		/* Without sublinks, queries hide only in CTEs and FROM: walking every expression cost a point lookup 1%. */
		foreach(lc, q->cteList)
			rewrite_query(castNode(Query, ((CommonTableExpr *) lfirst(lc))->ctequery), rw);
		foreach(lc, q->rtable)
			if (((RangeTblEntry *) lfirst(lc))->rtekind == RTE_SUBQUERY)
				rewrite_query(((RangeTblEntry *) lfirst(lc))->subquery, rw);
	}
	if (q->resultRelation > 0)
		guard_result_relation(q, rw);
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		SeamTable  *t;
		int64		lower;
		int64		tier_key_hi;
		List	   *at_start;

		rti++;
		if (rte->rtekind != RTE_RELATION || !rte->inh || rti == (Index) q->resultRelation)
			continue;
		if (rte->relkind != RELKIND_PARTITIONED_TABLE)
		{
			if (rte->relkind == RELKIND_RELATION)
				read_hybrid(q, rti, rte, rw);
			continue;
		}
		if (locked_for_update(q, rti))
		{
			guard_locked_reference(q, rti, rte, rw);
			continue;
		}
		t = seam_lookup_table(rte->relid);
		if (t == NULL)
		{
			read_hybrid(q, rti, rte, rw);
			continue;
		}
		if (reads_system_column(rte))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot read system columns of \"%s\": its older rows are in the lake",
							get_rel_name(rte->relid)),
					 errhint("SET tierdb.transparent_reads = off to read the heap's rows only.")));
		if (tier_key_bounds(q, rti, false, t, rw->params, &lower, &at_start) &&
			lower >= (tier_key_hi = seam_planning_t(t)))
			heap_only_add(&rw->heap_only, t->relid, tier_key_hi);
		else if (at_start != NIL && q == rw->statement && q->commandType == CMD_SELECT && !q->hasModifyingCTE &&
				 q->rowMarks == NIL && !rw->with_unions)
		{
			/* The query of this one table: tierdb_planner decides once the rest is rewritten. */
			rw->checked = rte;
			rw->checked_table = t;
			rw->heap_only.checked_bounds = at_start;
		}
		else
		{
			replace_reference(rte, t);
			rw->replaced = true;
		}
	}
}

/*
 * The reference whose bounds are known only when the statement starts is
 * read heap-only, with the statement kept as it is now to plan again with
 * the union if they do not hold then (heap_only.h); unless another
 * reference was replaced already, which planning that copy again would
 * replace a second time.
 */
static void
check_when_starting(Query *parse, Rewrite *rw, const SeamTable *t, List *bounds, int cursor_options)
{
	rw->heap_only.checked_relid = t->relid;
	rw->heap_only.checked_key_kind = t->key_kind;
	/* Copied before the planner, which may scribble on the query. */
	rw->heap_only.checked_bounds = copyObject(bounds);
	rw->heap_only.unplanned = copyObject(parse);
	rw->heap_only.cursor_options = cursor_options;
}

static void
check_at_start(Query *parse, Rewrite *rw, int cursor_options)
{
	if (rw->replaced)
	{
		replace_reference(rw->checked, rw->checked_table);
		return;
	}
	check_when_starting(parse, rw, rw->checked_table, rw->heap_only.checked_bounds, cursor_options);
}

/*
 * The same for a result relation (guard_result_relation): planned again
 * when its bounds fail, the statement is refused. A statement that reads
 * another tiered table with the union cannot be planned again (the union
 * would be added twice), nor one checking a read at start too: refused now.
 */
static void
check_dml_at_start(Query *parse, Rewrite *rw, int cursor_options)
{
	if (rw->replaced || rw->checked != NULL)
	{
		dml_guard_refuse(rw->dml_checked, rw->dml_checked_table, seam_planning_t(rw->dml_checked_table));
		return;					/* tierdb_explain's planning: described, not raised */
	}
	check_when_starting(parse, rw, rw->dml_checked_table, rw->dml_checked_bounds, cursor_options);
}

/* Rewrites, plans, and guards the references left heap-only (heap_only.c). */
static PlannedStmt *
tierdb_planner(Query *parse, const char *query_string, int cursorOptions, ParamListInfo boundParams)
{
	Rewrite		rw = {.params = boundParams, .statement = parse, .with_unions = planning_with_unions};
	PlannedStmt *stmt;

	planning_with_unions = false;	/* for this statement only, not those planned while planning it */
	if (transparent_reads && OidIsValid(seam_namespace()))
	{
		rewrite_query(parse, &rw);
		if (rw.dml_checked != NULL)
			check_dml_at_start(parse, &rw, cursorOptions);
		else if (rw.checked != NULL)
			check_at_start(parse, &rw, cursorOptions);
	}
	if (prev_planner_hook)
		stmt = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	else
		stmt = standard_planner(parse, query_string, cursorOptions, boundParams);
	if (rw.heap_only.relids != NIL || OidIsValid(rw.heap_only.checked_relid))
		heap_only_guard(stmt, &rw.heap_only);
	return stmt;
}

bool
transparent_reads_on(void)
{
	return transparent_reads;
}

PlannedStmt *
transparent_plan_with_unions(Query *query, const char *query_string, int cursor_options, ParamListInfo params)
{
	planning_with_unions = true;
	return planner(query, query_string, cursor_options, params);
}

/*
 * A plan cached with one setting would go on reading (or not reading) the
 * lake after the other is set: turning it on or off makes the session's
 * cached plans be planned again, as DISCARD PLANS does.
 */
static void
replan_on_change(bool newval, void *extra)
{
	if (newval != transparent_reads)
		ResetPlanCache();
}

void
transparent_reads_init(bool preloading)
{
	DefineCustomBoolVariable("tierdb.transparent_reads",
							 "Makes queries on registered tiered tables read their lake rows too.",
							 "Off: queries read the heap partitions only, as on a plain partitioned table.",
							 &transparent_reads,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, replan_on_change, NULL);
	hybrid_init();
	if (!preloading)
		return;
	prev_planner_hook = planner_hook;
	planner_hook = tierdb_planner;
	cold_scan_init();
	cold_agg_init();
	cold_dml_init();
	heap_only_init();
	dml_guard_init();
	seam_init();
}
