/*-------------------------------------------------------------------------
 *
 * spill.c
 *		The triggers that carry plain DML on rows below the cut-line into
 *		tierdb.delta (SPEC §7), and the checks the planner hook and
 *		tierdb_explain ask of them:
 *
 *		- tierdb_spill (tierdb.spill_route), AFTER INSERT OR UPDATE OR
 *		  DELETE on a tiered table's spill partition: a row INSERT or COPY
 *		  routed there becomes a delta upsert; a cold row that cold_dml.c
 *		  brought in and the statement updated or deleted becomes its new
 *		  version or its tombstone;
 *		- tierdb_spill_keys (tierdb.spill_bring_in), BEFORE INSERT on the
 *		  spill partition: brings in the cold row an INSERT ... ON CONFLICT
 *		  may conflict with (cold_dml.h);
 *		- tierdb_mirror (tierdb.mirror_route) on the kept partitions of a
 *		  --keep-heap table: mirrors their changes into the delta.
 *
 * Why a partition and an AFTER trigger (INSERT and COPY).  A tiered table's partitions below
 * T are gone, so Postgres' own routing sends a row below T to the table's
 * DEFAULT partition, the spill partition (sql/0.1/47-transparent-writes.sql
 * creates it).  The row is really inserted there, so everything a plain
 * INSERT or COPY does to a row happens to it: the INSERT privilege on the
 * table, RLS WITH CHECK policies, NOT NULL, CHECK and foreign keys, the
 * table's row triggers, RETURNING and the command's row count.  A BEFORE
 * trigger returning NULL would keep the row out of RETURNING and the count;
 * instead this AFTER INSERT row trigger, which fires at the end of the
 * statement, writes the row into the delta as an upsert (op 0) and deletes
 * it from the spill partition, without firing delete triggers (the row was
 * not deleted, it moved).  The spill partition is empty whenever another
 * statement can look at it: the seam read's heap branch never shows its
 * rows, and the CREATE PARTITION of the daemon's premake, which scans a
 * DEFAULT partition, finds nothing.  The trigger is named tierdb_spill so
 * that it fires after the foreign-key checks ("RI_ConstraintTrigger_...")
 * that run on the row where it landed.
 *
 * The trigger works in two halves (see the SQL file): the row is
 * normalised and checked as the inserting role (tierdb.spill_prepare), and
 * the pk's existence is probed and the delta written by the catalog's owner
 * (tierdb.spill_put_impl), which nobody may execute from SQL: it is called
 * here directly, and only from a trigger firing on the spill partition of a
 * registered table, for a row the executor has just inserted there.  A pk
 * that already lives (heap at or above T, delta or lake) is a
 * unique_violation, raised here as the caller so its detail shows the key
 * only to a role that may read the table, as Postgres' own does.
 *
 * A row at or above T reaches the spill partition only when no heap
 * partition holds its range yet (the daemon premakes them): it is refused
 * as Postgres' routing refuses it without a DEFAULT partition.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/tupconvert.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "cold_dml.h"
#include "cold_scan.h"
#include "spill.h"

PG_FUNCTION_INFO_V1(tierdb_spill_route);
PG_FUNCTION_INFO_V1(tierdb_spill_create);

/* tierdb.transparent_writes */
static bool transparent_writes = true;

#define SPILL_TRIGGER_NAME "tierdb_spill"
#define SPILL_KEYS_TRIGGER_NAME "tierdb_spill_keys"

void
spill_init(void)
{
	DefineCustomBoolVariable("tierdb.transparent_writes",
							 "Makes plain INSERT and COPY write rows of registered tiered tables below the cut-line into the delta.",
							 "Takes effect on tables with transparent writes enabled (tierdb_enable_transparent_writes). "
							 "Off, such rows are refused and must be written with tierdb_upsert().",
							 &transparent_writes,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

bool
spill_transparent_writes_on(void)
{
	return transparent_writes;
}

/* ------------------------------------------------------------ the switch */

/*
 * The events (TRIGGER_TYPE_* bits) of the trigger `trigger_name` of the
 * extension's `function` on relation relid, or 0 when it has none.
 */
static int16
spill_trigger_type(Oid relid, const char *trigger_name, const char *function)
{
	Relation	triggers = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	int16		type = 0;

	ScanKeyInit(&keys[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum(trigger_name));
	scan = systable_beginscan(triggers, TriggerRelidNameIndexId, true, NULL, 2, keys);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		Form_pg_trigger trigger = (Form_pg_trigger) GETSTRUCT(tuple);
		char	   *name = get_func_name(trigger->tgfoid);

		if (name != NULL && strcmp(name, function) == 0 && get_func_namespace(trigger->tgfoid) == seam_namespace())
			type = trigger->tgtype;
	}
	systable_endscan(scan);
	table_close(triggers, AccessShareLock);
	return type;
}

/* The events of the spill partition's tierdb_spill trigger, 0 when parent has no spill partition; *spill it. */
static int16
spill_events(Oid parent, Oid *spill)
{
	*spill = get_default_partition_oid(parent);
	if (!OidIsValid(*spill) || !OidIsValid(seam_namespace()))
		return 0;
	return spill_trigger_type(*spill, SPILL_TRIGGER_NAME, "spill_route");
}

Oid
spill_partition(Oid parent)
{
	Oid			spill;

	return spill_events(parent, &spill) != 0 ? spill : InvalidOid;
}

bool
spill_routes_changes(Oid parent)
{
	Oid			spill;
	int16		events = spill_events(parent, &spill);

	/* a spill partition made before UPDATE and DELETE were routed has an INSERT trigger only */
	return TRIGGER_FOR_UPDATE(events) && TRIGGER_FOR_DELETE(events);
}

/*
 * Whether the table has a unique index on exactly its merge key (plain
 * columns, no predicate): only then is a cold row of a new row's key a
 * conflict Postgres' own arbiter can see once it is brought in.
 */
static bool
merge_key_is_unique(Oid parent)
{
	SeamTable  *t = seam_lookup_table(parent);
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	bool		unique = false;

	if (t == NULL)
		return false;
	rel = table_open(parent, AccessShareLock);
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;
		bool		same = true;

		if (!HeapTupleIsValid(tuple))
			continue;
		index = (Form_pg_index) GETSTRUCT(tuple);
		same = index->indisunique && index->indnkeyatts == t->npk &&
			heap_attisnull(tuple, Anum_pg_index_indexprs, NULL) && heap_attisnull(tuple, Anum_pg_index_indpred, NULL);
		for (int i = 0; same && i < t->npk; i++)
		{
			bool		listed = false;

			for (int k = 0; k < index->indnkeyatts; k++)
				listed = listed || index->indkey.values[k] == t->pk_attnos[i];
			same = listed;
		}
		ReleaseSysCache(tuple);
		if ((unique = same))
			break;
	}
	list_free(indexes);
	table_close(rel, AccessShareLock);
	return unique;
}

bool
spill_routes_conflicts(Oid parent)
{
	Oid			spill = get_default_partition_oid(parent);

	return spill_routes_changes(parent) &&
		spill_trigger_type(spill, SPILL_KEYS_TRIGGER_NAME, "spill_bring_in") != 0 && merge_key_is_unique(parent);
}

bool
spill_routes_insert(const Query *q, const SeamTable *t)
{
	if (q->commandType != CMD_INSERT)
		return false;
	return q->onConflict == NULL ? OidIsValid(spill_partition(t->relid)) : spill_routes_conflicts(t->relid);
}

/* ------------------------------------------------------------ creation */

/* Set while tierdb_spill_create runs its DDL. */
static bool creating = false;

bool
spill_creating(void)
{
	return creating;
}

static void
run_ddl(const char *sql)
{
	if (SPI_execute(sql, false, 0) < 0)
		elog(ERROR, "SPI_execute failed: %s", sql);
}

/*
 * tierdb.spill_create(table, spill): creates `spill` (a qualified, quoted
 * name) as the DEFAULT partition of the table with its tierdb_spill
 * trigger, as the caller (who must own the table).  The DDL guard refuses
 * DEFAULT partitions of registered tables but this one.
 */
Datum
tierdb_spill_create(PG_FUNCTION_ARGS)
{
	char	   *table = seam_table_name(PG_GETARG_OID(0));
	char	   *spill = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Relation	parent = table_open(PG_GETARG_OID(0), AccessShareLock);
	Oid			owner = parent->rd_rel->relowner;

	table_close(parent, NoLock);
	SPI_connect();
	creating = true;
	PG_TRY();
	{
		run_ddl(psprintf("CREATE TABLE %s PARTITION OF %s DEFAULT", spill, table));
	}
	PG_FINALLY();
	{
		creating = false;
	}
	PG_END_TRY();
	/* the table's owner owns its partitions, so whoever reads or changes the table's partitions may read this one */
	if (owner != GetUserId())
		run_ddl(psprintf("ALTER TABLE %s OWNER TO %s", spill, quote_identifier(GetUserNameFromId(owner, false))));
	run_ddl(psprintf("CREATE TRIGGER " SPILL_TRIGGER_NAME " AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW "
					 "EXECUTE FUNCTION tierdb.spill_route()", spill));
	run_ddl(psprintf("CREATE TRIGGER " SPILL_KEYS_TRIGGER_NAME " BEFORE INSERT ON %s FOR EACH ROW "
					 "EXECUTE FUNCTION tierdb.spill_bring_in()", spill));
	run_ddl(psprintf("COMMENT ON TABLE %s IS %s", spill,
					 quote_literal_cstr("TierDB transparent writes: rows below the cut-line pass through here "
										"into tierdb.delta; always empty")));
	SPI_finish();
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------ explain */

/* The constant tier key of one VALUES row or target entry, or false when it is not constant. */
static bool
constant_key(Expr *value, const SeamTable *t, int64 *key)
{
	Node	   *folded = eval_const_expressions(NULL, (Node *) copyObject(value));

	if (!IsA(folded, Const) || ((Const *) folded)->constisnull)
		return false;
	*key = seam_key_canonical(t->key_kind, getBaseType(exprType(folded)), ((Const *) folded)->constvalue);
	return true;
}

char *
spill_explain_insert(const Query *q, const SeamTable *t)
{
	const char *table = seam_table_name(t->relid);
	int64		tier_key_hi = seam_planning_t(t);
	const char *cut = seam_key_text(t, tier_key_hi);
	Expr	   *value = NULL;
	List	   *keys = NIL;
	int			hot = 0,
				cold = 0;
	ListCell   *lc;

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);

		if (!tle->resjunk && tle->resno == t->tier_key_attno)
			value = tle->expr;
	}
	/* a multi-row VALUES: the target entry is a Var of the VALUES list, whose column holds the keys */
	if (value != NULL && IsA(value, Var) && ((Var *) value)->varlevelsup == 0)
	{
		Var		   *var = (Var *) value;
		RangeTblEntry *rte = rt_fetch(var->varno, q->rtable);

		if (rte->rtekind == RTE_VALUES)
			foreach(lc, rte->values_lists)
				keys = lappend(keys, list_nth(lfirst(lc), var->varattno - 1));
	}
	else if (value != NULL && q->jointree->fromlist == NIL)
		keys = list_make1(value);
	foreach(lc, keys)
	{
		int64		key;

		if (!constant_key(lfirst(lc), t, &key))
		{
			hot = cold = -1;
			break;
		}
		if (key >= tier_key_hi)
			hot++;
		else
			cold++;
	}
	if (keys == NIL || hot < 0)
		return psprintf("%s: INSERT routes each row by its tier key: rows at or above T %s go into the heap's "
						"partitions, rows below it into the delta (transparent writes)", table, cut);
	if (cold == 0)
		return psprintf("%s: INSERT routes to the heap: its %d row(s) are at or above T %s", table, hot, cut);
	if (hot == 0)
		return psprintf("%s: INSERT routes to the delta (transparent writes): its %d row(s) are below T %s",
						table, cold, cut);
	return psprintf("%s: INSERT routes to the heap and the delta (transparent writes): %d row(s) at or above T %s "
					"go into the heap, %d below it into the delta", table, hot, cut, cold);
}

/* ------------------------------------------------------------ the trigger */

/* The SQL functions the trigger calls, looked up once per statement (the trigger's FmgrInfo lives that long). */
typedef struct SpillCalls
{
	FmgrInfo	state;			/* tierdb.routing_state_impl(regclass, boolean) */
	FmgrInfo	prepare;		/* tierdb.spill_prepare(regclass, jsonb, anyelement) */
	FmgrInfo	put;			/* tierdb.spill_put_impl(regclass, jsonb, text, bigint, jsonb, jsonb) */
	FmgrInfo	lock_pk;		/* tierdb.lock_pk(jsonb, text) */
	FmgrInfo	change;			/* tierdb.spill_change_impl(regclass, jsonb, text, bigint, text, bigint, jsonb, jsonb) */
	FmgrInfo	mirror;			/* tierdb.mirror_change_impl(regclass, jsonb, text, bigint, text, bigint, jsonb) */
	FmgrInfo	cold_row;		/* tierdb.cold_row_impl(regclass, jsonb, jsonb) */
} SpillCalls;

static void
lookup_call(const char *name, int nargs, const Oid *types, FmgrInfo *into, MemoryContext cxt)
{
	Oid			fn = LookupFuncName(list_make2(makeString("tierdb"), makeString(unconstify(char *, name))),
									nargs, types, false);

	fmgr_info_cxt(fn, into, cxt);
}

/* The calls, looked up into *cache (allocated in cxt) the first time. */
static SpillCalls *
spill_calls_in(void **cache, MemoryContext cxt)
{
	SpillCalls *calls = *cache;

	if (calls == NULL)
	{
		Oid			state_types[] = {REGCLASSOID, BOOLOID};
		Oid			prepare_types[] = {REGCLASSOID, JSONBOID, ANYELEMENTOID};
		Oid			put_types[] = {REGCLASSOID, JSONBOID, TEXTOID, INT8OID, JSONBOID, JSONBOID};
		Oid			lock_types[] = {JSONBOID, TEXTOID};
		Oid			change_types[] = {REGCLASSOID, JSONBOID, TEXTOID, INT8OID, TEXTOID, INT8OID, JSONBOID, JSONBOID};
		Oid			mirror_types[] = {REGCLASSOID, JSONBOID, TEXTOID, INT8OID, TEXTOID, INT8OID, JSONBOID};
		Oid			cold_row_types[] = {REGCLASSOID, JSONBOID, JSONBOID};

		calls = MemoryContextAllocZero(cxt, sizeof(SpillCalls));
		lookup_call("routing_state_impl", 2, state_types, &calls->state, cxt);
		lookup_call("spill_prepare", 3, prepare_types, &calls->prepare, cxt);
		lookup_call("spill_put_impl", 6, put_types, &calls->put, cxt);
		lookup_call("lock_pk", 2, lock_types, &calls->lock_pk, cxt);
		lookup_call("spill_change_impl", 8, change_types, &calls->change, cxt);
		lookup_call("mirror_change_impl", 7, mirror_types, &calls->mirror, cxt);
		lookup_call("cold_row_impl", 3, cold_row_types, &calls->cold_row, cxt);
		*cache = calls;
	}
	return calls;
}

/* A trigger's calls live as long as its FmgrInfo: the statement. */
static SpillCalls *
spill_calls(FunctionCallInfo fcinfo)
{
	return spill_calls_in(&fcinfo->flinfo->fn_extra, fcinfo->flinfo->fn_mcxt);
}

/* Calls fn with args (nulls: which are null, or NULL for none); *isnull says whether it returned NULL. */
static Datum
call_with_nulls(FmgrInfo *fn, int nargs, const Datum *args, const bool *nulls, bool *isnull)
{
	LOCAL_FCINFO(c, 8);
	Datum		result;

	InitFunctionCallInfoData(*c, fn, nargs, InvalidOid, NULL, NULL);
	for (int i = 0; i < nargs; i++)
	{
		c->args[i].value = args[i];
		c->args[i].isnull = nulls != NULL && nulls[i];
	}
	result = FunctionCallInvoke(c);
	*isnull = c->isnull;
	return result;
}

static Datum
call(FmgrInfo *fn, int nargs, const Datum *args, bool *isnull)
{
	return call_with_nulls(fn, nargs, args, NULL, isnull);
}

/* The trigger must be the AFTER INSERT, UPDATE or DELETE row trigger of the spill partition of a registered tiered table. */
static SeamTable *
check_trigger(FunctionCallInfo fcinfo, TriggerData **data)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Relation	rel;
	Oid			parent;
	SeamTable  *t;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tierdb.spill_route() can only be called as a trigger")));
	if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tierdb.spill_route() must run as an AFTER INSERT OR UPDATE OR DELETE ... FOR EACH ROW trigger")));
	rel = td->tg_relation;
	parent = rel->rd_rel->relispartition ? get_partition_parent(RelationGetRelid(rel), false) : InvalidOid;
	if (!OidIsValid(parent) || get_default_partition_oid(parent) != RelationGetRelid(rel))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tierdb.spill_route() runs only on the spill partition of a tiered table, not on %s",
						seam_table_name(RelationGetRelid(rel))),
				 errhint("Enable transparent writes with tierdb_enable_transparent_writes(<table>).")));
	t = seam_lookup_table(parent);
	if (t == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no partition of relation \"%s\" holds this row, and the table is not registered with "
						"TierDB in tiered mode", get_rel_name(parent)),
				 errdetail("The row reached %s, the spill partition of transparent writes.",
						   seam_table_name(RelationGetRelid(rel))),
				 errhint("Register the table, or drop the spill partition with "
						 "SELECT tierdb_disable_transparent_writes('%s').", seam_table_name(parent))));
	*data = td;
	return t;
}

/* The row as a value of the registered (parent) table's row type, whatever the partition's column order. */
static Datum
parent_row(Relation spill, Relation parent, HeapTuple tuple)
{
	TupleConversionMap *map = convert_tuples_by_name(RelationGetDescr(spill), RelationGetDescr(parent));

	if (map != NULL)
		tuple = execute_attr_map_tuple(tuple, map);
	return heap_copy_tuple_as_datum(tuple, RelationGetDescr(parent));
}

/* The key columns as "(a, b)" and the canonical pk text as "(1, x)", for a duplicate's detail. */
static void
key_description(const SeamTable *t, const char *pk, StringInfo out)
{
	appendStringInfoString(out, "Key (");
	for (int i = 0; i < t->npk; i++)
		appendStringInfo(out, "%s%s", i > 0 ? ", " : "",
						 quote_identifier(get_attname(t->relid, t->pk_attnos[i], false)));
	appendStringInfoString(out, ")=(");
	for (const char *p = pk; *p != '\0'; p++)
	{
		if (t->npk > 1 && *p == '\\' && p[1] != '\0')
			appendStringInfoChar(out, *++p);
		else if (t->npk > 1 && *p == 31)
			appendStringInfoString(out, ", ");
		else
			appendStringInfoChar(out, *p);
	}
	appendStringInfoChar(out, ')');
}

static void
refuse_duplicate(const SeamTable *t, const char *pk, const char *where)
{
	const char *table = seam_table_name(t->relid);
	const char *place = strcmp(where, "heap") == 0 ? "in the heap" : "below the cut-line (in the lake or tierdb.delta)";
	StringInfoData key;

	initStringInfo(&key);
	if (pg_class_aclcheck(t->relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
		key_description(t, pk, &key);
	else
		appendStringInfoString(&key, "A row of the same key");
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates the primary key of table %s", table),
			 errdetail("%s already exists %s.", key.data, place),
			 errhint("To replace the row, write it with SELECT tierdb_upsert('%s', <row as jsonb>).", table)));
}

/* A row that is not routed: at or above T with no partition for it, or tierdb.transparent_writes off. */
static void
refuse_unrouted(const SeamTable *t, Relation parent, const char *key_text, bool hot)
{
	const char *table = seam_table_name(t->relid);

	if (hot)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("no partition of relation \"%s\" found for row", RelationGetRelationName(parent)),
				 errdetail("The row's tier key %s is at or above the cut-line, and no heap partition holds it yet.",
						   key_text),
				 errhint("Rows past the newest partition need that partition first (the tierdb daemon creates "
						 "partitions ahead of the newest row).")));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot write a row of table \"%s\" below its cut-line with plain INSERT or COPY: "
					"tierdb.transparent_writes is off", table),
			 errdetail("The row's tier key %s is below the cut-line: rows there live in the lake.", key_text),
			 errhint("Write it with SELECT tierdb_upsert('%s', <row as jsonb>), or SET tierdb.transparent_writes = on.",
					 table)));
}

/* What tierdb.spill_prepare made of a row. */
typedef struct PreparedRow
{
	Datum		payload;		/* jsonb */
	Datum		pk;				/* text */
	Datum		tier_key;		/* bigint */
	Datum		key;			/* jsonb */
	bool		hot;
} PreparedRow;

/*
 * tierdb.spill_prepare takes the row as anyelement, so that PL/pgSQL
 * compiles it once per row type: with a `record` argument its cached plans
 * would keep the first table's row type and refuse the next table's rows
 * ("type of parameter 3 does not match").  Called through fmgr, it learns
 * the row's type from the call expression set here, once per SpillCalls
 * (which serve one table).
 */
static void
set_prepare_row_type(SpillCalls *calls, Relation parent)
{
	MemoryContext caller;
	FuncExpr   *expr;

	if (calls->prepare.fn_expr != NULL)
		return;
	caller = MemoryContextSwitchTo(calls->prepare.fn_mcxt);
	expr = makeFuncExpr(calls->prepare.fn_oid, RECORDOID,
						list_make3(makeNullConst(REGCLASSOID, -1, InvalidOid), makeNullConst(JSONBOID, -1, InvalidOid),
								   makeNullConst(RelationGetDescr(parent)->tdtypeid, -1, InvalidOid)),
						InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	fmgr_info_set_expr((Node *) expr, &calls->prepare);
	MemoryContextSwitchTo(caller);
}

static PreparedRow
prepare_row(SpillCalls *calls, const SeamTable *t, Datum st, Relation spill, Relation parent, HeapTuple tuple)
{
	Datum		args[3] = {ObjectIdGetDatum(t->relid), st, parent_row(spill, parent, tuple)};
	bool		isnull;
	HeapTupleHeader prepared;
	PreparedRow row;

	set_prepare_row_type(calls, parent);
	prepared = DatumGetHeapTupleHeader(call(&calls->prepare, 3, args, &isnull));

	row.payload = GetAttributeByNum(prepared, 1, &isnull);
	row.pk = GetAttributeByNum(prepared, 2, &isnull);
	row.tier_key = GetAttributeByNum(prepared, 3, &isnull);
	row.key = GetAttributeByNum(prepared, 4, &isnull);
	row.hot = DatumGetBool(GetAttributeByNum(prepared, 5, &isnull));
	return row;
}

/* The version of pk's delta row as `snapshot` sees it, 0 when it sees none; *xmin its writer. */
static int64
delta_version(const SeamTable *t, Datum pk, Snapshot snapshot, TransactionId *xmin)
{
	Oid			nsp = seam_namespace();
	Relation	rel = table_open(get_relname_relid("delta", nsp), AccessShareLock);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	int64		version = 0;

	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(t->table_id));
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_TEXTEQ, pk);
	keys[1].sk_collation = DEFAULT_COLLATION_OID;
	scan = systable_beginscan(rel, get_relname_relid("delta_pkey", nsp), true, snapshot, 2, keys);
	*xmin = InvalidTransactionId;
	if ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;

		version = DatumGetInt64(heap_getattr(tuple, attnameAttNum(rel, "version", false), RelationGetDescr(rel),
											 &isnull));
		*xmin = HeapTupleHeaderGetXmin(tuple->t_data);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * Refuses to go on with a cold row when another transaction wrote its pk's
 * delta row after the statement read it (whose version then was `read`):
 * called holding the pk's lock, so no one writes it after this check.
 */
static void
refuse_changed_since_read(const SeamTable *t, Datum pk, int64 read)
{
	TransactionId now_by;
	int64		now = delta_version(t, pk, GetLatestSnapshot(), &now_by);
	bool		changed = now != read && !TransactionIdIsCurrentTransactionId(now_by);

	/*
	 * A direct table's writers leave no delta row behind (direct.h): any
	 * lake commit since the statement read its rows may have changed this
	 * one, so any at all refuses.
	 */
	if (t->direct)
	{
		SeamPin		read_at = seam_pin(t);
		SeamPin		latest = seam_latest_cutline(t);

		changed = changed || read_at.has_snapshot != latest.has_snapshot ||
			read_at.snapshot_id != latest.snapshot_id;
	}
	if (changed)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update of a row of %s below its cut-line",
						seam_table_name(t->relid)),
				 errdetail("Another transaction changed the row after this statement read it."),
				 errhint("Retry the statement.")));
}

/*
 * Locks the pk of a cold row the statement changes, and refuses the change
 * when another transaction wrote the pk's delta row since the statement read
 * the row: applying it would lose that write.  (On a plain table a READ
 * COMMITTED update would wait for the row's lock and then re-evaluate the
 * newer version; here the statement is retried.)
 */
static void
lock_cold_row(SpillCalls *calls, const SeamTable *t, Datum st, Datum pk)
{
	Datum		args[2] = {st, pk};
	bool		isnull;
	TransactionId read_by;
	int64		read = delta_version(t, pk, GetActiveSnapshot(), &read_by);

	call(&calls->lock_pk, 2, args, &isnull);
	refuse_changed_since_read(t, pk, read);
}

/* A row INSERT (or an UPDATE moving a heap row below T) put into the spill partition: into the delta. */
static void
route_insert(SpillCalls *calls, const SeamTable *t, Datum st, TriggerData *td, Relation parent)
{
	PreparedRow row = prepare_row(calls, t, st, td->tg_relation, parent, td->tg_trigtuple);
	Datum		args[6];
	bool		isnull;
	char	   *route;

	if (row.hot || !transparent_writes)
		refuse_unrouted(t, parent, seam_key_text(t, DatumGetInt64(row.tier_key)), row.hot);
	args[0] = ObjectIdGetDatum(t->relid);
	args[1] = st;
	args[2] = row.pk;
	args[3] = row.tier_key;
	args[4] = row.key;
	args[5] = row.payload;
	route = TextDatumGetCString(call(&calls->put, 6, args, &isnull));
	if (strcmp(route, "delta") != 0)
		refuse_duplicate(t, TextDatumGetCString(row.pk), route);
	/* the command counter moves past the insert, so the row is visible to this delete */
	CommandCounterIncrement();
	simple_table_tuple_delete(td->tg_relation, &td->tg_trigtuple->t_self, GetActiveSnapshot());
}

/*
 * A cold row brought in by cold_dml.c that the statement updated (OLD and
 * NEW both here: the new version is routed, then removed) or deleted (also
 * when the update moved it into a heap partition): the pk's new delta row.
 */
static void
route_change(SpillCalls *calls, const SeamTable *t, Datum st, TriggerData *td, Relation parent)
{
	bool		update = TRIGGER_FIRED_BY_UPDATE(td->tg_event);
	PreparedRow old = prepare_row(calls, t, st, td->tg_relation, parent, td->tg_trigtuple);
	PreparedRow new = {0};
	Datum		args[8];
	bool		nulls[8] = {false};
	bool		isnull;
	char	   *route;

	lock_cold_row(calls, t, st, old.pk);
	if (update)
	{
		new = prepare_row(calls, t, st, td->tg_relation, parent, td->tg_newtuple);
		if (new.hot)
			refuse_unrouted(t, parent, seam_key_text(t, DatumGetInt64(new.tier_key)), true);
	}
	args[0] = ObjectIdGetDatum(t->relid);
	args[1] = st;
	args[2] = old.pk;
	args[3] = old.tier_key;
	args[4] = update ? new.pk : (Datum) 0;
	args[5] = update ? new.tier_key : (Datum) 0;
	args[6] = update ? new.key : (Datum) 0;
	args[7] = update ? new.payload : (Datum) 0;
	for (int i = 4; i < 8; i++)
		nulls[i] = !update;
	route = TextDatumGetCString(call_with_nulls(&calls->change, 8, args, nulls, &isnull));
	if (strcmp(route, "delta") != 0)
		refuse_duplicate(t, TextDatumGetCString(new.pk), route);
	if (update)
	{
		CommandCounterIncrement();
		simple_table_tuple_delete(td->tg_relation, &td->tg_newtuple->t_self, GetActiveSnapshot());
	}
}

/*
 * tierdb.spill_route(): the AFTER INSERT OR UPDATE OR DELETE row trigger
 * of the spill partition; see the file comment.
 */
Datum
tierdb_spill_route(PG_FUNCTION_ARGS)
{
	TriggerData *td;
	SeamTable  *t = check_trigger(fcinfo, &td);
	SpillCalls *calls = spill_calls(fcinfo);
	Relation	parent = table_open(t->relid, AccessShareLock);
	Datum		args[2];
	bool		isnull;
	Datum		st;

	/* the cut-line, locked until commit as routed writes lock it (30-routing.sql, "Concurrency") */
	args[0] = ObjectIdGetDatum(t->relid);
	args[1] = BoolGetDatum(true);
	st = call(&calls->state, 2, args, &isnull);
	if (isnull)
		elog(ERROR, "table %s has no TierDB routing state", seam_table_name(t->relid));

	if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		route_insert(calls, t, st, td, parent);
	else
		route_change(calls, t, st, td, parent);
	table_close(parent, AccessShareLock);
	return PointerGetDatum(NULL);
}

/* ------------------------------------------------------------ INSERT ... ON CONFLICT */

PG_FUNCTION_INFO_V1(tierdb_spill_bring_in);

/*
 * tierdb.spill_bring_in(): the BEFORE INSERT row trigger tierdb_spill_keys
 * of the spill partition.  In an INSERT ... ON CONFLICT (cold_dml.h) it
 * brings in the cold row of the new row's key, if there is one, so that
 * the arbiter index finds the conflict; any other INSERT passes through.
 * The row is looked up by the catalog's owner (tierdb.cold_row_impl): a
 * plain INSERT ... ON CONFLICT DO NOTHING needs no SELECT either.
 */
Datum
tierdb_spill_bring_in(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Relation	rel;
	Oid			parent;
	SeamTable  *t;
	SpillCalls *calls;
	Relation	parent_rel;
	Datum		args[3];
	bool		isnull;
	Datum		st;
	Datum		image;
	PreparedRow row;
	char	   *pk;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tierdb.spill_bring_in() must run as a BEFORE INSERT ... FOR EACH ROW trigger")));
	rel = td->tg_relation;
	/* every INSERT into the spill partition fires it: outside an ON CONFLICT statement it looks nothing up */
	if (!cold_dml_conflicts_statement(InvalidOid))
		return PointerGetDatum(td->tg_trigtuple);
	parent = rel->rd_rel->relispartition ? get_partition_parent(RelationGetRelid(rel), false) : InvalidOid;
	if (!OidIsValid(parent) || !cold_dml_conflicts_statement(parent))
		return PointerGetDatum(td->tg_trigtuple);
	t = seam_lookup_table(parent);
	calls = spill_calls(fcinfo);
	parent_rel = table_open(parent, AccessShareLock);
	args[0] = ObjectIdGetDatum(parent);
	args[1] = BoolGetDatum(true);
	st = call(&calls->state, 2, args, &isnull);
	if (isnull)
		elog(ERROR, "table %s has no TierDB routing state", seam_table_name(parent));
	row = prepare_row(calls, t, st, rel, parent_rel, td->tg_trigtuple);
	pk = TextDatumGetCString(row.pk);
	if (!row.hot && !cold_dml_brought_in(parent, pk))
	{
		args[1] = st;
		args[2] = row.key;
		image = call(&calls->cold_row, 3, args, &isnull);
		if (!isnull)
		{
			HeapTuple	cold = cold_scan_row_image(RelationGetDescr(parent_rel)->tdtypeid, image);
			TupleConversionMap *map = convert_tuples_by_name(RelationGetDescr(parent_rel), RelationGetDescr(rel));

			cold_dml_bring_in_conflict(rel, parent, map != NULL ? execute_attr_map_tuple(cold, map) : cold, pk);
		}
	}
	table_close(parent_rel, AccessShareLock);
	return PointerGetDatum(td->tg_trigtuple);
}

/* ------------------------------------------------------------ keep-heap */

PG_FUNCTION_INFO_V1(tierdb_mirror_route);

/*
 * tierdb.mirror_route(): the AFTER INSERT OR UPDATE OR DELETE row trigger
 * tierdb_mirror on the tiered partitions of a --keep-heap table (the
 * daemon puts it there when it unseals them, cli/tiering.c).  Their rows
 * live in the heap and in the lake, which serves reads below T: each change
 * plain DML makes to them is carried into the delta, as tierdb_upsert and
 * tierdb_delete would write it, and the fold takes it into the lake.  The
 * row is normalised as the writing role (tierdb.spill_prepare); the delta
 * is written by the catalog's owner (tierdb.mirror_change_impl), which
 * nobody may execute from SQL.
 */
Datum
tierdb_mirror_route(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Relation	rel;
	Oid			parent;
	SeamTable  *t;
	SpillCalls *calls;
	Relation	parent_rel;
	Datum		args[7];
	bool		nulls[7] = {false};
	bool		isnull;
	Datum		st;
	PreparedRow old = {0};
	PreparedRow new = {0};
	bool		has_old,
				has_new;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tierdb.mirror_route() must run as an AFTER INSERT OR UPDATE OR DELETE ... FOR EACH ROW trigger")));
	rel = td->tg_relation;
	parent = rel->rd_rel->relispartition ? get_partition_parent(RelationGetRelid(rel), false) : InvalidOid;
	t = OidIsValid(parent) ? seam_lookup_table(parent) : NULL;
	if (t == NULL || !t->keep_heap)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("tierdb.mirror_route() runs only on the partitions of a table registered with --keep-heap, "
						"not on %s", seam_table_name(RelationGetRelid(rel)))));
	calls = spill_calls(fcinfo);
	parent_rel = table_open(parent, AccessShareLock);
	args[0] = ObjectIdGetDatum(t->relid);
	args[1] = BoolGetDatum(true);
	st = call(&calls->state, 2, args, &isnull);
	if (isnull)
		elog(ERROR, "table %s has no TierDB routing state", seam_table_name(t->relid));

	has_old = !TRIGGER_FIRED_BY_INSERT(td->tg_event);
	has_new = !TRIGGER_FIRED_BY_DELETE(td->tg_event);
	if (has_old)
		old = prepare_row(calls, t, st, rel, parent_rel, td->tg_trigtuple);
	if (has_new)
		new = prepare_row(calls, t, st, rel, parent_rel, TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple
						  : td->tg_trigtuple);
	args[0] = ObjectIdGetDatum(t->relid);
	args[1] = st;
	args[2] = old.pk;
	args[3] = old.tier_key;
	args[4] = new.pk;
	args[5] = new.tier_key;
	args[6] = new.payload;
	nulls[2] = nulls[3] = !has_old;
	nulls[4] = nulls[5] = nulls[6] = !has_new;
	call_with_nulls(&calls->mirror, 7, args, nulls, &isnull);
	table_close(parent_rel, AccessShareLock);
	return PointerGetDatum(NULL);
}

/* ------------------------------------------------------------ SELECT ... FOR UPDATE */

struct SpillLocker
{
	void	   *calls;			/* SpillCalls */
	Datum		st;				/* the routing state, taken with the cut-line locked FOR SHARE */
	char	   *table_id;		/* st's table_id, as tierdb.lock_pk formats it */
};

/*
 * The advisory lock of pk that tierdb.lock_pk takes for every write of it,
 * in the mode a locking clause asks: exclusive for FOR [NO KEY] UPDATE,
 * shared for FOR [KEY] SHARE.  False when the wait policy does not wait
 * and another transaction holds it.
 */
static bool
lock_pk_for(const SpillLocker *locker, Datum pk, LockClauseStrength strength, LockWaitPolicy wait)
{
	char	   *name = psprintf("tierdb_pk_%s_%s", locker->table_id, TextDatumGetCString(pk));
	/* the collation tierdb.lock_pk's format() result has */
	Datum		key = DirectFunctionCall2Coll(hashtextextended, DEFAULT_COLLATION_OID, CStringGetTextDatum(name),
											  Int64GetDatum(0));
	bool		exclusive = strength == LCS_FORUPDATE || strength == LCS_FORNOKEYUPDATE;

	if (wait == LockWaitBlock)
	{
		DirectFunctionCall1(exclusive ? pg_advisory_xact_lock_int8 : pg_advisory_xact_lock_shared_int8, key);
		return true;
	}
	return DatumGetBool(DirectFunctionCall1(exclusive ? pg_try_advisory_xact_lock_int8
											: pg_try_advisory_xact_lock_shared_int8, key));
}

bool
spill_lock_cold_row(const SeamTable *t, Relation parent, HeapTuple row, LockClauseStrength strength,
					LockWaitPolicy wait, SpillLocker **locker)
{
	SpillLocker *l = *locker;
	SpillCalls *calls;
	PreparedRow prepared;
	TransactionId read_by;
	int64		read;

	if (l == NULL)
	{
		Datum		args[2] = {ObjectIdGetDatum(t->relid), BoolGetDatum(true)};
		bool		isnull;

		l = palloc0(sizeof(SpillLocker));
		calls = spill_calls_in(&l->calls, CurrentMemoryContext);
		l->st = call(&calls->state, 2, args, &isnull);
		if (isnull)
			elog(ERROR, "table %s has no TierDB routing state", seam_table_name(t->relid));
		l->table_id = TextDatumGetCString(DirectFunctionCall2(jsonb_object_field_text, l->st,
															  CStringGetTextDatum("table_id")));
		*locker = l;
	}
	calls = l->calls;
	prepared = prepare_row(calls, t, l->st, parent, parent, row);
	read = delta_version(t, prepared.pk, GetActiveSnapshot(), &read_by);
	if (!lock_pk_for(l, prepared.pk, strength, wait))
	{
		if (wait == LockWaitSkip)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not obtain lock on row in relation \"%s\"", RelationGetRelationName(parent)),
				 errdetail("Another transaction holds the lock of a row below the cut-line.")));
	}
	refuse_changed_since_read(t, prepared.pk, read);
	return true;
}
