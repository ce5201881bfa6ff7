/*-------------------------------------------------------------------------
 *
 * dml_guard.c
 *		Plain DML that could reach a tiered table's lake rows is refused
 *		rather than applied to its heap half alone (dml_guard.h says what
 *		is checked where and why).
 *
 * The planner hook (transparent.c) calls in here for every query level
 * whose result relation is a registered tiered table: it finds the lower
 * bounds the level's conditions put on the tier key, and refuses with
 * dml_guard_refuse what they do not keep at or above T; the new rows'
 * tier keys are checked per row by tierdb.tier_key_check, which the
 * planner hook wraps around every value written to the tier key:
 *
 *	 INSERT INTO events (id, ts) VALUES (1, tierdb.tier_key_check('events', '2024-01-02'))
 *
 * The check runs in the plan below ModifyTable, so a row below T is
 * refused with an error that names tierdb_upsert before partition routing
 * looks for a partition (dropped once its rows moved to the lake) and
 * reports "no partition of relation ... found for row".
 *
 * COPY FROM is no planned statement: routing is the first to see its rows,
 * so a ProcessUtility hook adds the routed alternatives to routing's error.
 * The same hook refuses TRUNCATE of a registered table, which would empty
 * the heap alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/copy.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "dml_guard.h"
#include "spill.h"
#include "transparent.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/* ------------------------------------------------------------ messages */

const char *
dml_command_name(CmdType command)
{
	switch (command)
	{
		case CMD_INSERT:
			return "INSERT";
		case CMD_UPDATE:
			return "UPDATE";
		case CMD_DELETE:
			return "DELETE";
		case CMD_MERGE:
			return "MERGE";
		default:
			return "the statement";
	}
}

const char *
lock_clause_name(LockClauseStrength strength)
{
	switch (strength)
	{
		case LCS_FORKEYSHARE:
			return "FOR KEY SHARE";
		case LCS_FORSHARE:
			return "FOR SHARE";
		case LCS_FORNOKEYUPDATE:
			return "FOR NO KEY UPDATE";
		default:
			return "FOR UPDATE";
	}
}

/* The tier key column's name, quoted as in SQL. */
static const char *
tier_key_name(const SeamTable *t)
{
	return quote_identifier(get_attname(t->relid, t->tier_key_attno, false));
}

bool
dml_guard_needs_bound(const Query *q)
{
	ListCell   *lc;

	if (q->commandType == CMD_UPDATE || q->commandType == CMD_DELETE)
		return true;
	if (q->commandType != CMD_MERGE)
		return false;
	foreach(lc, q->mergeActionList)
		if (((MergeAction *) lfirst(lc))->matched)
			return true;
	return false;				/* MERGE that only inserts: its rows are checked like INSERT's */
}

/*
 * T as text for messages, or NULL when the user may not read the table:
 * the cut-line is catalog data about its rows (planning, where refusals
 * are raised, comes before the executor checks the statement's privileges).
 */
static const char *
cut_line_text(const SeamTable *t, int64 tier_key_hi)
{
	if (pg_class_aclcheck(t->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return NULL;
	return seam_key_text(t, tier_key_hi);
}

/* Where dml_guard_refuse records refusals instead of raising them, or NULL (dml_guard_describe_refusals). */
static List **described_refusals = NULL;

void
dml_guard_describe_refusals(List **into)
{
	described_refusals = into;
}

/* The same refusal for a SELECT that locks the table (transparent.c, guard_locked_reference). */
static void
refuse_lock(const Query *q, const SeamTable *t, const char *cut)
{
	const char *table = seam_table_name(t->relid);
	const char *key = tier_key_name(t);
	const char *clause = "SELECT ... FOR UPDATE/SHARE";
	char	   *message;
	char	   *hint;
	ListCell   *lc;

	foreach(lc, q->rowMarks)
		if (rt_fetch(((RowMarkClause *) lfirst(lc))->rti, q->rtable)->relid == t->relid)
			clause = psprintf("SELECT ... %s", lock_clause_name(((RowMarkClause *) lfirst(lc))->strength));
	message = psprintf("%s of table \"%s\" may reach rows below its cut-line", clause, table);
	hint = psprintf("Enable transparent writes with SELECT tierdb_enable_transparent_writes('%s'), which also "
					"locks rows below the cut-line, or add \"AND %s >= %s\" to lock only the heap's rows.",
					table, key, cut != NULL ? quote_literal_cstr(cut) : "<T>");
	if (described_refusals != NULL)
	{
		*described_refusals = lappend(*described_refusals, psprintf("%s: refused: %s. %s", table, message, hint));
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s", message),
			 errdetail("Rows with %s below the cut-line T%s%s live in the lake, and the table has no spill partition "
					   "to lock them in; this statement's conditions do not keep %s at or above T.",
					   key, cut != NULL ? " " : "", cut != NULL ? cut : "", key),
			 errhint("%s", hint)));
}

void
dml_guard_refuse(const Query *q, const SeamTable *t, int64 tier_key_hi)
{
	const char *command = dml_command_name(q->commandType);
	const char *table = seam_table_name(t->relid);
	const char *key = tier_key_name(t);
	const char *cut = cut_line_text(t, tier_key_hi);
	char	   *message;
	char	   *hint;

	if (q->commandType == CMD_SELECT)
	{
		refuse_lock(q, t, cut);
		return;
	}
	message = psprintf("%s of table \"%s\" may reach rows below its cut-line", command, table);
	hint = psprintf("Add \"AND %s >= %s\" to change only the heap's rows; change older rows with "
					"tierdb_upsert('%s', <row as jsonb>) or tierdb_delete('%s', <key>, <tier key>), "
					"one row per call.", key, cut != NULL ? quote_literal_cstr(cut) : "<T>", table, table);
	if (described_refusals != NULL)
	{
		*described_refusals = lappend(*described_refusals, psprintf("%s: refused: %s. %s", table, message, hint));
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s", message),
			 errdetail("Rows with %s below the cut-line T%s%s live in the lake, which plain %s does not change; "
					   "this statement's conditions do not keep %s at or above T.",
					   key, cut != NULL ? " " : "", cut != NULL ? cut : "", command, key),
			 errhint("%s", hint)));
}

/* ------------------------------------------------------------ new rows */

/* tierdb.tier_key_check(regclass, anyelement), or InvalidOid before the extension has it. */
static Oid
check_function(void)
{
	static Oid	namespace = InvalidOid;
	static Oid	function = InvalidOid;
	Oid			nsp = seam_namespace();
	Oid			argtypes[2] = {REGCLASSOID, ANYELEMENTOID};

	if (nsp != namespace || !OidIsValid(function))
	{
		function = LookupFuncName(list_make2(makeString("tierdb"), makeString("tier_key_check")), 2, argtypes, true);
		namespace = nsp;
	}
	return function;
}

/* Wraps the tier key's entry of a target list (if it has one) in the check, once. */
static void
wrap_tier_key(List *targets, const SeamTable *t, Oid check)
{
	ListCell   *lc;

	foreach(lc, targets)
	{
		TargetEntry *tle = lfirst(lc);
		Expr	   *value = tle->expr;

		if (tle->resjunk || tle->resno != t->tier_key_attno ||
			(IsA(value, FuncExpr) && ((FuncExpr *) value)->funcid == check))
			continue;
		tle->expr = (Expr *) makeFuncExpr(check, exprType((Node *) value),
										  list_make2(makeConst(REGCLASSOID, -1, InvalidOid, sizeof(Oid),
															   ObjectIdGetDatum(t->relid), false, true),
													 value),
										  exprCollation((Node *) value), exprCollation((Node *) value),
										  COERCE_EXPLICIT_CALL);
	}
}

void
dml_guard_check_new_rows(Query *q, const SeamTable *t, bool changes_routed)
{
	Oid			check = check_function();
	ListCell   *lc;

	if (!OidIsValid(check))
		return;					/* an extension script older than this library: no per-row check */
	/* a plain INSERT into a table with transparent writes sends rows below T to its spill partition (spill.h) */
	if ((q->commandType == CMD_UPDATE && !changes_routed) ||
		(q->commandType == CMD_INSERT && !spill_routes_insert(q, t)))
		wrap_tier_key(q->targetList, t, check);
	/* a routed ON CONFLICT DO UPDATE changes a cold row in the spill partition, where Postgres keeps it */
	if (q->onConflict != NULL && q->onConflict->action == ONCONFLICT_UPDATE && !spill_routes_insert(q, t))
		wrap_tier_key(q->onConflict->onConflictSet, t, check);
	/* a routed MERGE's rows go where their tier key says, as a routed UPDATE's and INSERT's do */
	if (!changes_routed)
		foreach(lc, q->mergeActionList)
			wrap_tier_key(((MergeAction *) lfirst(lc))->targetList, t, check);
}

/* What tier_key_check keeps for one statement's run: the table and the T it runs with. */
typedef struct KeyCheck
{
	SeamTable  *table;			/* NULL: not (or no longer) tiered, nothing to check */
	Oid			typid;			/* the checked value's base type */
	int64		tier_key_hi;
	bool		retention_known;	/* R read (once, at the first row below T) */
	bool		has_retention_line;
	int64		retention_line;
} KeyCheck;

/*
 * A row below the retention line R: the lake expired that range on
 * purpose, so no write path takes it (SPEC §2), whichever tier it would go to.
 */
static void
refuse_below_retention(const KeyCheck *c, Datum value)
{
	const char *table = seam_table_name(c->table->relid);
	const char *line = cut_line_text(c->table, c->retention_line);
	Oid			out;
	bool		varlena;

	getTypeOutputInfo(c->typid, &out, &varlena);
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 line != NULL ? errmsg("tier key %s of %s is below the retention line %s",
								   OidOutputFunctionCall(out, value), table, line)
			 : errmsg("a row of %s is below the retention line", table),
			 errdetail("The lake expired rows below the retention line on purpose; nothing was written."),
			 errhint("Only rows at or above the retention line can be written.")));
}

static void
refuse_row(const KeyCheck *c, Datum value)
{
	const char *table = seam_table_name(c->table->relid);
	const char *cut = cut_line_text(c->table, c->tier_key_hi);
	Oid			out;
	bool		varlena;

	getTypeOutputInfo(c->typid, &out, &varlena);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot write a row of table \"%s\" below its cut-line with plain INSERT, UPDATE or MERGE",
					table),
			 cut != NULL ? errdetail("The row's %s %s is below the cut-line T %s: rows there live in the lake.",
									 tier_key_name(c->table), OidOutputFunctionCall(out, value), cut)
			 : errdetail("The row's %s is below the cut-line: rows there live in the lake.", tier_key_name(c->table)),
			 errhint("Write it with SELECT tierdb_upsert('%s', <row as jsonb>).", table)));
}

PG_FUNCTION_INFO_V1(tierdb_tier_key_check);

/*
 * tierdb.tier_key_check(table, tier key): the tier key, if it is at or
 * above the T the statement runs with (its snapshot's, read once per run:
 * fn_extra lives as long as the plan's run); an error otherwise.
 */
Datum
tierdb_tier_key_check(PG_FUNCTION_ARGS)
{
	KeyCheck   *c = fcinfo->flinfo->fn_extra;
	Datum		value = PG_GETARG_DATUM(1);

	if (c == NULL)
	{
		MemoryContext caller = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		c = palloc0(sizeof(KeyCheck));
		c->table = seam_lookup_table(PG_GETARG_OID(0));
		c->typid = getBaseType(get_fn_expr_argtype(fcinfo->flinfo, 1));
		if (c->table != NULL)
			c->tier_key_hi = seam_statement_t(c->table->relid, GetActiveSnapshot());
		MemoryContextSwitchTo(caller);
		fcinfo->flinfo->fn_extra = c;
	}
	if (c->table != NULL && seam_key_canonical(c->table->key_kind, c->typid, value) < c->tier_key_hi)
	{
		/* R <= T: only a cold row can lie below it, so R is read only then. */
		if (!c->retention_known)
		{
			SeamPin		latest = seam_latest_cutline(c->table);

			c->has_retention_line = latest.has_retention_line;
			c->retention_line = latest.retention_line;
			c->retention_known = true;
		}
		if (c->has_retention_line &&
			seam_key_canonical(c->table->key_kind, c->typid, value) < c->retention_line)
			refuse_below_retention(c, value);
		refuse_row(c, value);
	}
	PG_RETURN_DATUM(value);
}

/* ------------------------------------------------------------ COPY FROM */

/* The hint for a COPY into relid, or NULL when relid is not a tiered table. */
static char *
copy_hint(Oid relid)
{
	SeamTable  *t = OidIsValid(relid) ? seam_lookup_table(relid) : NULL;
	const char *table;
	const char *cut;
	SeamPin		latest;
	const char *line;

	if (t == NULL)
		return NULL;
	table = seam_table_name(relid);
	latest = seam_latest_cutline(t);
	cut = cut_line_text(t, latest.tier_key_hi);
	/* Rows below R are refused by every path; the hint says so rather than offer tierdb_upsert for them. */
	line = latest.has_retention_line ? cut_line_text(t, latest.retention_line) : NULL;
	return psprintf("Rows of \"%s\" with %s below its cut-line T%s%s live in the lake: write them with "
					"tierdb_upsert('%s', <row as jsonb>)%s%s%s. "
					"Rows past the newest partition need that partition first.",
					table, tier_key_name(t), cut != NULL ? " " : "", cut != NULL ? cut : "", table,
					line != NULL ? ", except rows below the retention line " : "", line != NULL ? line : "",
					line != NULL ? ", which the lake expired on purpose and no path writes" : "");
}

/* ------------------------------------------------------------ TRUNCATE */

/*
 * TRUNCATE of a registered tiered table would empty its heap alone and
 * report success while every row below T stays readable from the lake:
 * refused, as plain DELETE that may reach those rows is.  (A partition is
 * heap only: truncating one empties what it holds.)  A partition of a
 * mirrored table is refused whatever the session's settings: its TRUNCATE
 * would never reach the lake copy (seam_mirrored_root).
 */
static void
refuse_truncate(const TruncateStmt *stmt, bool tiered_too)
{
	ListCell   *lc;

	foreach(lc, stmt->relations)
	{
		Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc), NoLock, true);
		SeamTable  *t = OidIsValid(relid) ? seam_lookup_table(relid) : NULL;
		Oid			mirrored = seam_mirrored_root(relid);
		const char *table;

		if (OidIsValid(mirrored))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("TRUNCATE of partition \"%s\" of mirrored table \"%s\" would not reach its lake copy",
							get_rel_name(relid), seam_table_name(mirrored)),
					 errdetail("Postgres publishes a partition's TRUNCATE through the partition alone, not through "
							   "the table the mirror follows."),
					 errhint("DELETE FROM the partition instead, or TRUNCATE the whole table.")));
		if (t == NULL || !tiered_too)
			continue;
		table = seam_table_name(relid);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("TRUNCATE of table \"%s\" would empty its heap only", table),
				 errdetail("The table is registered with TierDB: its rows with %s below the cut-line live in "
						   "the lake, which TRUNCATE does not change.", tier_key_name(t)),
				 errhint("Truncate its partitions at or above the cut-line to empty the heap; delete older rows "
						 "with tierdb_delete('%s', <key>, <tier key>); to drop the whole history, run "
						 "tierdb unregister --table %s --drop-lake first.", table, table)));
	}
}

/*
 * COPY FROM a registered tiered table: routing's "no partition of relation
 * ... found for row" (ExecFindPartition's check violation) gets a hint
 * naming the routed writes. The hint is made before the COPY runs: after
 * the error no catalog may be read.
 */
static void
tierdb_process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree,
					   ProcessUtilityContext context, ParamListInfo params, QueryEnvironment *query_env,
					   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	char	   *volatile hint = NULL;
	MemoryContext caller = CurrentMemoryContext;

	if (IsA(stmt, CopyStmt) && ((CopyStmt *) stmt)->is_from && ((CopyStmt *) stmt)->relation != NULL &&
		transparent_reads_on() && OidIsValid(seam_namespace()))
		hint = copy_hint(RangeVarGetRelid(((CopyStmt *) stmt)->relation, NoLock, true));
	if (IsA(stmt, TruncateStmt) && OidIsValid(seam_namespace()))
		refuse_truncate((TruncateStmt *) stmt, transparent_reads_on());
	PG_TRY();
	{
		if (prev_process_utility)
			prev_process_utility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
		else
			standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
	}
	PG_CATCH();
	{
		ErrorData  *error;

		if (hint == NULL)
			PG_RE_THROW();
		MemoryContextSwitchTo(caller);
		error = CopyErrorData();
		if (error->sqlerrcode != ERRCODE_CHECK_VIOLATION || error->funcname == NULL ||
			strcmp(error->funcname, "ExecFindPartition") != 0 || error->hint != NULL)
			PG_RE_THROW();
		FlushErrorState();
		error->hint = hint;
		ReThrowError(error);
	}
	PG_END_TRY();
}

void
dml_guard_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = tierdb_process_utility;
}
