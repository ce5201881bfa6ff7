/*-------------------------------------------------------------------------
 *
 * explain.c
 *		tierdb_explain(statement text) RETURNS SETOF text (SPEC §7): where a
 *		statement's rows come from or go to, one line per fact, without
 *		running the statement and without writing anything.
 *
 * The statement is parsed and analysed as the caller would run it (with the
 * caller's search_path: the function deliberately sets none), then:
 *
 *	1. its query tree is walked for every reference to a table.  A
 *	   registered tiered table is either read transparently or, for the
 *	   reasons transparent.c keeps heap semantics (DML target, FOR UPDATE,
 *	   ONLY, tierdb.transparent_reads off, library not preloaded), read as
 *	   a plain heap, which is said with the reason.  Calls of tierdb_upsert
 *	   and tierdb_delete with constant arguments are collected too.
 *	2. it is planned with pg_plan_query, so the planner hook rewrites it
 *	   exactly as a real execution would, and the executor is started in
 *	   EXPLAIN_ONLY mode, as EXPLAIN does.  Each "TierDB Cold Scan" then
 *	   reports its properties (T, the lake snapshot, files kept and pruned,
 *	   delta rows, or that the lake is not read) through its own EXPLAIN
 *	   callback, which is the one place that decides them; the heap
 *	   partitions the reference reads follow from its conditions, kept by
 *	   the cold scan, and T (see "the heap arm's partitions" below).
 *	3. each routed call is routed by tierdb.explain_upsert / explain_delete
 *	   (sql/0.1/50-explain.sql), which apply the routing rules of
 *	   30-routing.sql to the current cut-line without locking or writing.
 *
 * Nothing runs: the executor is only started and ended, so a statement
 * that would fail at run time still explains, and nothing is written, so
 * it works in read-only transactions.  The cold scans pin the cut-line as
 * a real read would (seam.h): in memory, holding the table's reader key
 * until the transaction ends, without writing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "parser/parse_node.h"
#include "parser/parsetree.h"
#include "catalog/partition.h"
#include "partitioning/partdesc.h"
#include "tcop/cmdtag.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/varlena.h"

#include "cold_agg.h"
#include "cold_scan.h"
#include "cold_dml.h"
#include "dml_guard.h"
#include "heap_only.h"
#include "seam.h"
#include "spill.h"

/* cold_scan.c's custom scan, recognised by name as EXPLAIN shows it. */
#define COLD_SCAN_NAME "TierDB Cold Scan"

/* What the walk of one statement found. */
typedef struct Explainer
{
	List	   *lines;			/* char *: the facts, in order */
	List	   *transparent;	/* Oid per reference the planner hook will rewrite */
	List	   *calls;			/* FuncExpr *: tierdb_upsert / tierdb_delete calls */
	bool		registered_seen;	/* some reference or call concerns a registered table */
	const char *heap_reason;	/* why no reference is read transparently, or NULL */
} Explainer;

/* Adds a line unless the same line is there already (a table read twice the same way). */
static void
add_line_once(Explainer *e, char *line)
{
	ListCell   *lc;

	foreach(lc, e->lines)
		if (strcmp(lfirst(lc), line) == 0)
			return;
	e->lines = lappend(e->lines, line);
}

/* ------------------------------------------------------------ the statement */

static Node *
refuse_parameter(ParseState *pstate, ParamRef *pref)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("tierdb_explain cannot explain a statement with parameters ($%d)", pref->number),
			 errdetail("Where the rows come from depends on the parameters' values."),
			 errhint("Write the values into the statement as constants."),
			 parser_errposition(pstate, pref->location)));
	return NULL;				/* not reached */
}

static void
setup_parser(ParseState *pstate, void *arg)
{
	pstate->p_paramref_hook = refuse_parameter;
}

/* The one statement of `sql`, which must be a query (not a utility statement). */
static RawStmt *
one_query(const char *sql)
{
	List	   *raw = pg_parse_query(sql);
	RawStmt    *stmt;

	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tierdb_explain explains exactly one statement, and it was given %d", list_length(raw)),
				 errhint("Call tierdb_explain once per statement.")));
	stmt = linitial_node(RawStmt, raw);
	switch (nodeTag(stmt->stmt))
	{
		case T_SelectStmt:
		case T_InsertStmt:
		case T_UpdateStmt:
		case T_DeleteStmt:
		case T_MergeStmt:
			return stmt;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("tierdb_explain explains SELECT, INSERT, UPDATE, DELETE and MERGE, not %s",
							GetCommandTagName(CreateCommandTag(stmt->stmt))),
					 errdetail("TierDB changes where only those statements read and write rows.")));
	}
	return NULL;				/* not reached */
}

/* ------------------------------------------------------------ the references */

/* Whether shared_preload_libraries names tierdb: transparent reads need it. */
static bool
library_preloaded(void)
{
	const char *libs = GetConfigOption("shared_preload_libraries", true, false);
	List	   *names;
	ListCell   *lc;

	if (libs == NULL || !SplitDirectoriesString(pstrdup(libs), ',', &names))
		return false;
	foreach(lc, names)
	{
		const char *name = lfirst(lc);
		const char *base = strrchr(name, '/');

		base = base != NULL ? base + 1 : name;
		if (strcmp(base, "tierdb") == 0 || strcmp(base, "tierdb.so") == 0)
			return true;
	}
	return false;
}

/* Why all references are read as a plain heap in this session, or NULL. */
static const char *
session_heap_reason(void)
{
	const char *setting = GetConfigOption("tierdb.transparent_reads", true, false);

	if (!library_preloaded())
		return "transparent reads need shared_preload_libraries = 'tierdb'";
	if (setting == NULL || strcmp(setting, "on") != 0)
		return "tierdb.transparent_reads is off";
	return NULL;
}

/* A route line of a direct table says where its delta rows go next (src/direct.c). */
static char *
direct_commit_note(Oid relid, char *line)
{
	if (!seam_lookup_table(relid)->direct)
		return line;
	return psprintf("%s; a direct table: the transaction's delta rows are committed to the lake as one snapshot "
					"when it commits", line);
}

/* The query level's FOR UPDATE/SHARE clause on range table entry rti, or NULL. */
static RowMarkClause *
locking_clause(Query *q, Index rti)
{
	ListCell   *lc;

	foreach(lc, q->rowMarks)
		if (((RowMarkClause *) lfirst(lc))->rti == rti)
			return lfirst(lc);
	return NULL;
}

/*
 * Why transparent.c leaves this reference to a registered table as a plain
 * heap read (the same tests in the same order), or NULL when it rewrites it.
 */
static char *
heap_only_reason(Explainer *e, Query *q, Index rti, RangeTblEntry *rte)
{
	RowMarkClause *mark;

	if (e->heap_reason != NULL)
		return pstrdup(e->heap_reason);
	if (rti == (Index) q->resultRelation && q->commandType == CMD_INSERT)
		return pstrdup("target of INSERT: rows go into the heap's partitions; tierdb_upsert routes rows below T "
					   "to the delta");
	if (rti == (Index) q->resultRelation)
		return psprintf("target of %s: rows in the lake are not changed; tierdb_upsert and tierdb_delete route "
						"changes to them", dml_command_name(q->commandType));
	if ((mark = locking_clause(q, rti)) != NULL)
	{
		if (seam_lookup_table(rte->relid)->keep_heap)
			return psprintf("%s locks the heap's rows, which are every row (--keep-heap)",
							lock_clause_name(mark->strength));
		return psprintf("%s locks the heap's rows; its conditions keep the tier key at or above T",
							lock_clause_name(mark->strength));
	}
	if (rte->relkind != RELKIND_PARTITIONED_TABLE)
		return pstrdup("not a partitioned table");
	if (!rte->inh)
		return pstrdup("ONLY reads the partitioned table's own rows, which are none");
	return NULL;
}

static void
explain_reference(Explainer *e, Query *q, Index rti, RangeTblEntry *rte)
{
	char	   *reason;
	RowMarkClause *lock;

	if (rte->rtekind != RTE_RELATION ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE) ||
		(q->onConflict != NULL && rti == (Index) q->onConflict->exclRelIndex))
		return;
	if (seam_lookup_table(rte->relid) == NULL)
	{
		add_line_once(e, psprintf("%s: not registered with TierDB in tiered mode: plain heap", seam_table_name(rte->relid)));
		return;
	}
	e->registered_seen = true;
	if (rti == (Index) q->resultRelation && spill_routes_insert(q, seam_lookup_table(rte->relid)))
	{
		add_line_once(e, direct_commit_note(rte->relid, spill_explain_insert(q, seam_lookup_table(rte->relid))));
		return;
	}
	if (e->heap_reason == NULL && rti == (Index) q->resultRelation && q->commandType != CMD_SELECT &&
		seam_lookup_table(rte->relid)->keep_heap)
	{
		add_line_once(e, psprintf("%s: %s runs on the heap, which keeps every row (--keep-heap); its changes to "
								  "rows below T are mirrored into the delta by the trigger tierdb_mirror",
								  seam_table_name(rte->relid), dml_command_name(q->commandType)));
		return;
	}
	if (e->heap_reason == NULL && rti == (Index) q->resultRelation && cold_dml_routes(q, rte->relid))
	{
		add_line_once(e, direct_commit_note(rte->relid, cold_dml_explain(q, rte->relid)));
		return;
	}
	if (e->heap_reason == NULL && (lock = locking_clause(q, rti)) != NULL &&
		!seam_lookup_table(rte->relid)->keep_heap && spill_routes_changes(rte->relid))
	{
		add_line_once(e, cold_dml_explain_lock(rte->relid, lock->strength));
		return;
	}
	reason = heap_only_reason(e, q, rti, rte);
	if (reason != NULL)
		add_line_once(e, psprintf("%s: heap only (%s)", seam_table_name(rte->relid), reason));
	else
		e->transparent = lappend_oid(e->transparent, rte->relid);
}

/* The routed-write function a call is to, or NULL. */
static const char *
routed_function(FuncExpr *call)
{
	char	   *name;

	if (get_func_namespace(call->funcid) != PG_CATALOG_NAMESPACE)
		return NULL;
	name = get_func_name(call->funcid);
	if (strcmp(name, "tierdb_upsert") == 0 || strcmp(name, "tierdb_delete") == 0)
		return name;
	return NULL;
}

static void explain_query_tree(Query *q, Explainer *e);

static bool
reference_walker(Node *node, Explainer *e)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		explain_query_tree((Query *) node, e);
		return false;
	}
	if (IsA(node, FuncExpr) && routed_function((FuncExpr *) node) != NULL)
		e->calls = lappend(e->calls, copyObject(node)); /* planning may change the tree */
	return expression_tree_walker(node, reference_walker, e);
}

/* Subqueries, CTEs and sublinks first, then the query's own range table. */
static void
explain_query_tree(Query *q, Explainer *e)
{
	ListCell   *lc;
	Index		rti = 0;

	query_tree_walker(q, reference_walker, e, 0);
	foreach(lc, q->rtable)
		explain_reference(e, q, ++rti, lfirst(lc));
}

/* ------------------------------------------------------------ the plan */

/* A cold scan, or a cold aggregate (cold_agg.c), which reads the cold rows as a cold scan does. */
static bool
is_cold_scan(PlanState *ps)
{
	return IsA(ps, CustomScanState) &&
		(strcmp(((CustomScanState *) ps)->methods->CustomName, COLD_SCAN_NAME) == 0 ||
		 is_cold_agg((CustomScan *) ps->plan));
}

/* Collects the cold scans of a started plan, subplans and initplans included. */
static bool
cold_scan_walker(PlanState *ps, List **found)
{
	if (ps == NULL)
		return false;
	if (is_cold_scan(ps))
		*found = lappend(*found, ps);
	return planstate_tree_walker(ps, cold_scan_walker, found);
}

/* The table a cold scan reads (cold_scan.c's custom_private: (relid), attributes). */
static Oid
cold_scan_table(CustomScanState *scan)
{
	CustomScan *plan = (CustomScan *) scan->ss.ps.plan;

	return linitial_oid((List *) linitial(plan->custom_private));
}

/* The cold scan's EXPLAIN properties, as its own callback gives them: "Key: value" lines. */
static List *
cold_scan_properties(CustomScanState *scan)
{
	ExplainState *es = NewExplainState();
	List	   *props = NIL;
	char	   *line;
	char	   *next;

	es->format = EXPLAIN_FORMAT_TEXT;
	scan->methods->ExplainCustomScan(scan, NIL, es);
	for (line = es->str->data; *line != '\0'; line = next)
	{
		next = strchr(line, '\n');
		if (next == NULL)
			next = line + strlen(line);
		else
			*next++ = '\0';
		props = lappend(props, line);
	}
	return props;
}

/* The value of property `key` in cold_scan_properties' lines, or NULL. */
static const char *
property(List *props, const char *key)
{
	ListCell   *lc;
	size_t		len = strlen(key);

	foreach(lc, props)
	{
		const char *line = lfirst(lc);

		while (*line == ' ')
			line++;
		if (strncmp(line, key, len) == 0 && strncmp(line + len, ": ", 2) == 0)
			return line + len + 2;
	}
	return NULL;
}

static int64
integer_property(List *props, const char *key)
{
	const char *value = property(props, key);

	return value != NULL ? strtoll(value, NULL, 10) : 0;
}

/* ------------------------------------------------------------ the heap arm's partitions */

/*
 * Which heap partitions the heap arm reads is not read off the plan: the
 * planner plans the arm as a subquery of its own, and a partition scan in
 * the flattened plan no longer says which reference it belongs to.  It is
 * derived the way the planner and the executor decide it instead: a leaf
 * partition is read unless its partition constraint is refuted by the
 * reference's conditions (plan-time pruning; the planner pushes the same
 * conditions into both arms, and the cold scan keeps its copy) or by
 * "tier key >= T" (run-time pruning on the heap arm's bound).
 */
typedef struct PartitionConditions
{
	Oid			table;
	Oid			partition;
	bool		unmapped;		/* a column the partition lacks: no proof */
} PartitionConditions;

/* The cold scan's Vars (INDEX_VAR, attno = the table's) as Vars of the partition (varno 1). */
static Node *
partition_vars_mutator(Node *node, PartitionConditions *c)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
	{
		Var		   *var = (Var *) copyObject(node);
		char	   *name = get_attname(c->table, var->varattno, true);

		var->varno = var->varnosyn = 1;
		var->varattno = var->varattnosyn = name != NULL ? get_attnum(c->partition, name) : InvalidAttrNumber;
		if (var->varattno == InvalidAttrNumber)
			c->unmapped = true;
		return (Node *) var;
	}
	return expression_tree_mutator(node, partition_vars_mutator, c);
}

/* "tier key >= T" on the partition, or NULL when the key's type has no btree >= for it. */
static Expr *
at_or_above_t(const SeamTable *t, Oid partition, int64 tier_key_hi)
{
	AttrNumber	attno = get_attnum(partition, get_attname(t->relid, t->tier_key_attno, false));
	Oid			typid;
	int32		typmod;
	Oid			collid;
	Oid			const_type;
	Oid			opfamily;
	Oid			opno;

	if (attno == InvalidAttrNumber)
		return NULL;
	get_atttypetypmodcoll(partition, attno, &typid, &typmod, &collid);
	/* seam_key_datum gives bigint-family values as int8; the integer family compares across widths */
	const_type = t->key_kind == SEAM_KEY_BIGINT ? INT8OID : typid;
	opfamily = get_opclass_family(GetDefaultOpClass(typid, BTREE_AM_OID));
	opno = OidIsValid(opfamily) ? get_opfamily_member(opfamily, typid, const_type, BTGreaterEqualStrategyNumber)
		: InvalidOid;
	if (!OidIsValid(opno))
		return NULL;
	return make_opclause(opno, BOOLOID, false,
						 (Expr *) makeVar(1, attno, typid, typmod, collid, 0),
						 (Expr *) makeConst(const_type, -1, InvalidOid, get_typlen(const_type),
											seam_key_datum(t->key_kind, tier_key_hi), false,
											get_typbyval(const_type)),
						 InvalidOid, collid);
}

/* Whether the heap arm reads this leaf partition (see above). */
static bool
partition_read(const SeamTable *t, Relation leaf, List *quals, int64 tier_key_hi)
{
	PartitionConditions c = {t->relid, RelationGetRelid(leaf), false};
	List	   *conditions = (List *) partition_vars_mutator((Node *) quals, &c);
	Expr	   *bound = at_or_above_t(t, c.partition, tier_key_hi);
	List	   *constraint = (List *) eval_const_expressions(NULL, (Node *) RelationGetPartitionQual(leaf));

	if (c.unmapped)
		conditions = NIL;
	if (bound != NULL)
		conditions = lappend(conditions, bound);
	return !predicate_refuted_by(constraint, conditions, false);
}

/*
 * Appends the names of the leaf partitions under relid that the heap arm
 * reads, in the order of their bounds.  A partition dropped meanwhile is
 * skipped: it held rows below T only (the pin keeps the others).
 */
static void
partitions_read(const SeamTable *t, Oid relid, List *quals, int64 tier_key_hi, List **names)
{
	Relation	rel = try_table_open(relid, AccessShareLock);
	PartitionDesc desc;
	Oid			spill;

	if (rel == NULL)
		return;
	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		if (partition_read(t, rel, quals, tier_key_hi))
			*names = lappend(*names, pstrdup(RelationGetRelationName(rel)));
		table_close(rel, NoLock);
		return;
	}
	desc = RelationGetPartitionDesc(rel, true);
	/* the spill partition of transparent writes is empty whenever a statement reads it (spill.h) */
	spill = spill_partition(relid);
	for (int i = 0; i < desc->nparts; i++)
		if (desc->oids[i] != spill)
			partitions_read(t, desc->oids[i], quals, tier_key_hi, names);
	table_close(rel, NoLock);
}

/* "partitions a .. c", "partition a" or "no partition". */
static char *
partitions_text(List *names)
{
	int			n = list_length(names);

	if (n == 0)
		return pstrdup("no partition");
	if (n == 1)
		return psprintf("partition %s", (char *) linitial(names));
	return psprintf("partitions %s .. %s", (char *) linitial(names), (char *) llast(names));
}

/* The heap partitions the heap arm beside the cold scan reads. */
static char *
heap_partitions(CustomScanState *scan, const SeamTable *t)
{
	List	   *names = NIL;
	CustomScan *plan = (CustomScan *) scan->ss.ps.plan;

	partitions_read(t, t->relid, is_cold_agg(plan) ? cold_agg_quals(plan) : cold_scan_quals(plan),
					seam_pin(t).tier_key_hi, &names);
	return partitions_text(names);
}

/* ------------------------------------------------------------ heap-only reads */

/*
 * A reference transparent.c left a plain table because its conditions keep
 * it at or above T reads the partitions of it the plan scans; the plan's
 * "TierDB Heap-Only Guard" names the table and its T. Those partitions are
 * exactly the ones read, so they are read off the plan.
 */
typedef struct ScannedPartitions
{
	Oid			table;
	List	   *rtable;
	List	   *names;			/* char * per partition of table scanned */
} ScannedPartitions;

static bool
scanned_partitions(PlanState *ps, ScannedPartitions *s)
{
	Plan	   *plan = ps->plan;

	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			{
				Oid			rel = rt_fetch(((Scan *) plan)->scanrelid, s->rtable)->relid;

				/* the spill partition of transparent writes is always empty when read (spill.h): not listed */
				if (get_rel_relispartition(rel) && list_member_oid(get_partition_ancestors(rel), s->table) &&
					rel != spill_partition(s->table))
					s->names = lappend(s->names, get_rel_name(rel));
				break;
			}
		default:
			break;
	}
	return planstate_tree_walker(ps, scanned_partitions, s);
}

/* The lines of the tables a plan reads heap-only; removes them from *expected. */
static void
heap_only_lines(PlannedStmt *stmt, PlanState *top, Explainer *e, List **expected)
{
	HeapOnlyReads reads;
	ListCell   *relid;

	if (!heap_only_guarded(stmt, &reads))
		return;
	if (OidIsValid(reads.checked_relid))
		reads.relids = lappend_oid(list_copy(reads.relids), reads.checked_relid);
	foreach(relid, reads.relids)
	{
		SeamTable  *table = seam_lookup_table(lfirst_oid(relid));
		ScannedPartitions scanned = {.table = lfirst_oid(relid), .rtable = stmt->rtable};
		bool		checked = lfirst_oid(relid) == reads.checked_relid;
		int64		tier_key_hi;

		if (table == NULL)
			continue;
		/* The checked table's T is the one its check just compared with (heap_only.c). */
		tier_key_hi = checked ? seam_statement_t(table->relid, GetActiveSnapshot())
			: DatumGetInt64(((Const *) list_nth(reads.tier_key_his, foreach_current_index(relid)))->constvalue);
		scanned_partitions(top, &scanned);
		e->lines = lappend(e->lines,
						   psprintf("%s: reads the heap at or above T %s (%s) and the lake is not read: "
									"the conditions keep the query at or above T%s", seam_table_name(table->relid),
									seam_key_text(table, tier_key_hi), partitions_text(scanned.names),
									checked ? " (checked when the statement starts)" : ""));
		*expected = list_delete_oid(*expected, table->relid);
	}
}

/* ------------------------------------------------------------ the lines of a read */

/* The lake half of a transparent read's line. */
static char *
lake_part(List *props)
{
	const char *lake = property(props, "Lake");
	const char *snapshot = property(props, "Lake Snapshot");
	int64		delta = integer_property(props, "Delta Rows");
	int64		kept = integer_property(props, "Lake Files");
	int64		pruned = integer_property(props, "Lake Files Pruned");
	int64		deletes = integer_property(props, "Lake Delete Files");
	char	   *files;

	if (lake != NULL)
		return psprintf("the lake is %s", lake);	/* "not read: <why>" */
	if (snapshot == NULL || strcmp(snapshot, "none") == 0)
		files = pstrdup("the lake, which has no snapshot yet,");
	else
		files = psprintf("the lake at snapshot %s (%lld of %lld data files after pruning%s)", snapshot,
						 (long long) kept, (long long) (kept + pruned),
						 deletes > 0 ? psprintf(", %lld delete files", (long long) deletes) : "");
	return psprintf("%s merged with %lld delta row%s", files, (long long) delta, delta == 1 ? "" : "s");
}

/*
 * The line of a cold scan: of a rewritten reference (both tiers), or of a
 * call of tierdb.cold_rows() written in the statement (the cold rows only).
 */
static char *
read_line(CustomScanState *scan, bool rewritten)
{
	SeamTable  *t = seam_lookup_table(cold_scan_table(scan));
	List	   *props;
	const char *cutline;

	if (t == NULL)
		elog(ERROR, "a TierDB Cold Scan reads a table that is not registered");
	props = cold_scan_properties(scan);
	cutline = property(props, "Cut-line T");
	if (cutline == NULL)
		cutline = "(unknown)";
	if (!rewritten)
		return psprintf("%s: tierdb.cold_rows reads the rows below T %s only: %s", seam_table_name(t->relid), cutline,
						lake_part(props));
	return psprintf("%s: reads the heap at or above T %s (%s) and %s", seam_table_name(t->relid), cutline,
					heap_partitions(scan, t), lake_part(props));
}

/* Plans the query as a real execution would, starts it without running it, and reads its cold scans. */
static void
explain_plan(Query *q, const char *sql, Explainer *e)
{
	PlannedStmt *plan;
	QueryDesc  *volatile desc;
	List	   *found = NIL;
	List	   *expected = e->transparent;
	ListCell   *lc;

	PushCopiedSnapshot(GetActiveSnapshot());
	UpdateActiveSnapshotCommandId();
	/* Plain DML the guard would refuse (dml_guard.h) is planned anyway, and the refusal said. */
	dml_guard_describe_refusals(&e->lines);
	PG_TRY();
	{
		plan = pg_plan_query(q, sql, CURSOR_OPT_PARALLEL_OK, NULL);
		desc = CreateQueryDesc(plan, sql, GetActiveSnapshot(), InvalidSnapshot, None_Receiver, NULL, NULL, 0);
		ExecutorStart(desc, EXEC_FLAG_EXPLAIN_ONLY);	/* which may choose another plan (heap_only.c) */
	}
	PG_FINALLY();
	{
		dml_guard_describe_refusals(NULL);
	}
	PG_END_TRY();
	cold_scan_walker(desc->planstate, &found);
	heap_only_lines(desc->plannedstmt, desc->planstate, e, &expected);
	foreach(lc, found)
	{
		CustomScanState *scan = lfirst(lc);
		Oid			table = cold_scan_table(scan);
		bool		rewritten = list_member_oid(expected, table);

		e->lines = lappend(e->lines, read_line(scan, rewritten));
		expected = list_delete_oid(expected, table);
		e->registered_seen = true;
	}
	/* A rewritten reference without a cold scan: the planner removed the read. */
	foreach(lc, expected)
		e->lines = lappend(e->lines,
						   psprintf("%s: read from neither tier: the planner removed the read (its conditions "
									"select no rows, or nothing uses its rows)", seam_table_name(lfirst_oid(lc))));
	ExecutorEnd(desc);
	FreeQueryDesc(desc);
	PopActiveSnapshot();
}

/* ------------------------------------------------------------ routed writes */

/* A helper of sql/0.1/50-explain.sql, tierdb.<name>(argtypes). */
static Oid
helper(const char *name, int nargs, Oid *argtypes)
{
	return LookupFuncName(list_make2(makeString("tierdb"), makeString(pstrdup(name))), nargs, argtypes, false);
}

/* The family name and canonical value of a tierdb_delete tier-key argument. */
static const char *
tier_key_family(Const *c, int64 *canonical)
{
	switch (c->consttype)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			*canonical = seam_key_canonical(SEAM_KEY_BIGINT, c->consttype, c->constvalue);
			return "bigint";
		case TIMESTAMPTZOID:
			*canonical = seam_key_canonical(SEAM_KEY_TIMESTAMPTZ, c->consttype, c->constvalue);
			return "timestamptz";
		case TIMESTAMPOID:
			*canonical = seam_key_canonical(SEAM_KEY_TIMESTAMP, c->consttype, c->constvalue);
			return "timestamp";
		case DATEOID:
			*canonical = seam_key_canonical(SEAM_KEY_DATE, c->consttype, c->constvalue);
			return "date";
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("tierdb_delete has no overload for a tier key of type %s", format_type_be(c->consttype))));
}

/* The route of one tierdb_upsert / tierdb_delete call, computed from the current cut-line. */
static char *
route_line(FuncExpr *call)
{
	const char *fn = routed_function(call);
	List	   *args = (List *) eval_const_expressions(NULL, (Node *) call->args);
	ListCell   *lc;
	Const	   *table;
	Const	   *key;
	Datum		route;

	foreach(lc, args)
		if (!IsA(lfirst(lc), Const))
			return psprintf("%s: its arguments are not constants, so its route is decided when it runs", fn);
	foreach(lc, args)
		if (((Const *) lfirst(lc))->constisnull)
			return psprintf("%s: a NULL argument: the call would fail and write nothing", fn);
	table = linitial(args);
	key = lsecond(args);
	if (strcmp(fn, "tierdb_upsert") == 0)
	{
		Oid			types[2] = {REGCLASSOID, JSONBOID};

		route = OidFunctionCall2(helper("explain_upsert", 2, types), table->constvalue, key->constvalue);
	}
	else
	{
		Oid			types[4] = {REGCLASSOID, JSONBOID, INT8OID, TEXTOID};
		int64		canonical;
		const char *family = tier_key_family(lthird(args), &canonical);

		route = OidFunctionCall4(helper("explain_delete", 4, types), table->constvalue, key->constvalue,
								 Int64GetDatum(canonical), CStringGetTextDatum(family));
	}
	return TextDatumGetCString(route);
}

/* ------------------------------------------------------------ SQL */

static void
explain_statement(const char *sql, Explainer *e)
{
	RawStmt    *raw = one_query(sql);
	List	   *queries = pg_analyze_and_rewrite_withcb(raw, sql, setup_parser, NULL, NULL);
	ListCell   *lc;

	e->heap_reason = session_heap_reason();
	foreach(lc, queries)
	{
		Query	   *q = lfirst_node(Query, lc);
		ListCell   *call;

		if (q->commandType == CMD_UTILITY && q->querySource == QSRC_ORIGINAL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("tierdb_explain cannot explain %s", GetCommandTagName(CreateCommandTag(q->utilityStmt))),
					 errhint("Explain the SELECT without INTO.")));
		if (q->commandType == CMD_UTILITY)
			continue;			/* a rule's NOTIFY: no rows */
		e->transparent = NIL;
		e->calls = NIL;
		explain_query_tree(q, e);
		explain_plan(q, sql, e);
		foreach(call, e->calls)
		{
			e->registered_seen = true;
			e->lines = lappend(e->lines, route_line(lfirst(call)));
		}
	}
	if (!e->registered_seen)
		e->lines = lappend(e->lines,
						   pstrdup("TierDB does not touch this statement: it reads and writes no table registered "
								   "with TierDB in tiered mode and routes no row"));
}

PG_FUNCTION_INFO_V1(tierdb_explain);

/*
 * tierdb_explain(statement text) RETURNS SETOF text: one line per fact,
 * see the file comment.
 */
Datum
tierdb_explain(PG_FUNCTION_ARGS)
{
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Explainer	e = {0};
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	explain_statement(sql, &e);
	foreach(lc, e.lines)
	{
		Datum		value = CStringGetTextDatum(lfirst(lc));
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	return (Datum) 0;
}
