/*-------------------------------------------------------------------------
 *
 * routing.c
 *		The privilege boundary of routed writes and the read protocol, and
 *		the row checks of routed writes.
 *
 * tierdb_upsert(), tierdb_delete() and the read protocol (sql/0.1/
 * 30-routing.sql) run as their caller, so the caller's privileges, row
 * security and triggers apply to every statement they run on the user's
 * table.  The catalog, though, belongs to the extension's owner: a role that
 * may write a table still may not write tierdb.delta directly, or it could
 * forge corrections (a payload that is no row of the table, a tombstone
 * with only UPDATE, a lake location that makes the fold delete in the
 * wrong place) or end other roles' pins.
 *
 * Three mechanisms close that gap:
 *
 *	1. Entry points.  Each documented function that writes the catalog is a
 *	   C function here (tierdb_routing_entry) that opens a "routing window"
 *	   on the table of its first argument and calls its body,
 *	   tierdb.<name>_body, a plpgsql function nobody may execute from SQL
 *	   (fmgr calls it directly, with no EXECUTE check, as the caller).
 *	2. Bridges.  The body reaches the catalog only through the bridge
 *	   functions tierdb.<op>(...) declared with the tierdb_bridge_* symbols.
 *	   A bridge that writes the catalog works only inside a window on its
 *	   table, so calling it directly does nothing
 *	   but fail; every bridge also checks that the role calling it
 *	   (GetUserId(): SET ROLE and enclosing SECURITY DEFINER functions
 *	   included) holds the privileges the symbol names on that table, and,
 *	   for a write, that no row-level security applies to the caller there
 *	   (a delta row is out of the policies' reach).  It then calls
 *	   tierdb.<op>_impl, a SECURITY DEFINER function nobody else may
 *	   execute, which touches only that table's catalog rows and runs no
 *	   user code.  Read-only bridges (the routing state, a pk's delta row,
 *	   a pinned scan's state) need SELECT and no window: they tell a role
 *	   nothing its SELECT does not let it read anyway.
 *	3. Row checks (tierdb_checked_row).  A routed row must obey every rule
 *	   a plain INSERT of it would, checked by Postgres' own executor code:
 *	   stored generated columns computed (ExecComputeStoredGenerated), NOT
 *	   NULL and CHECK constraints (ExecConstraints).  Domain constraints and
 *	   typmods are applied before, when jsonb_populate_record() builds the
 *	   row.  For a row bound for the lake it also refuses values the lake's
 *	   column types cannot hold (NaN in a decimal).
 *
 * Why C: inside a SECURITY DEFINER function the caller's identity is gone,
 * so no SQL function can both check the caller and write as the owner, and
 * only C can call a function its caller may not execute.
 *
 * Read pins carry their owner (tierdb.read_pins.owner_role, the caller of
 * tierdb_read_begin): only that role or a superuser may end one.  Their
 * lifetime is capped by tierdb.max_pin_ttl, so no role can hold folding
 * off for longer than a superuser allows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "routing.h"
#include "tierlake_pg.h"

PG_FUNCTION_INFO_V1(tierdb_routing_entry);
PG_FUNCTION_INFO_V1(tierdb_bridge_select);
PG_FUNCTION_INFO_V1(tierdb_bridge_routing_state);
PG_FUNCTION_INFO_V1(tierdb_bridge_insert_update);
PG_FUNCTION_INFO_V1(tierdb_bridge_update_delete);
PG_FUNCTION_INFO_V1(tierdb_bridge_pin_begin);
PG_FUNCTION_INFO_V1(tierdb_bridge_pin_end);
PG_FUNCTION_INFO_V1(tierdb_checked_row);

/* tierdb.max_pin_ttl, in seconds: the longest a read pin may live. */
static int	max_pin_ttl = 86400;

/*
 * The open routing windows of this backend, innermost first: the table
 * each entry point works on (InvalidOid for tierdb_read_end, which has
 * none).  Windows nest when a trigger of a routed write routes another row.
 */
static List *windows = NIL;

void
routing_init(void)
{
	DefineCustomIntVariable("tierdb.max_pin_ttl",
							"The longest lifetime tierdb_read_begin() grants a read pin.",
							"A pin holds off folding and snapshot expiry of its table until it ends or expires.",
							&max_pin_ttl,
							86400,
							1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
}

/* ------------------------------------------------------------ privileges */

/*
 * Checks that the current user holds the privileges of `mask` on the table
 * (all of them, or any one when `any`); errors as Postgres does otherwise.
 */
static void
check_table_privileges(Oid relid, AclMode mask, bool any)
{
	char	   *name = get_rel_name(relid);
	AclMode		held;

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	held = pg_class_aclmask(relid, GetUserId(), mask, any ? ACLMASK_ANY : ACLMASK_ALL);
	if (any ? held == 0 : held != mask)
		aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(get_rel_relkind(relid)), name);
}

/*
 * Refuses catalog writes for a table whose row-level security applies to
 * the caller: the heap side of a routed write is filtered by the policies,
 * but a delta row is not a row of the table that a policy could check.
 */
static void
check_no_row_security(Oid relid)
{
	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot route rows of table %s below its cut-line: row-level security applies to role %s",
						get_rel_name(relid), GetUserNameFromId(GetUserId(), false)),
				 errdetail("Rows below the cut-line go to the tierdb delta, where the table's policies cannot check them."),
				 errhint("Write them as a role that bypasses the table's row-level security, such as its owner.")));
}

/* ------------------------------------------------------------ windows */

/* Whether the innermost open routing window is on `relid` (routing.h). */
bool
routing_window_open(Oid relid)
{
	return windows != NIL && linitial_oid(windows) == relid;
}

/* Refuses a catalog bridge called anywhere but inside an entry point's window on `relid`. */
static void
require_window(FunctionCallInfo fcinfo, Oid relid)
{
	if (routing_window_open(relid))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("%s is internal to TierDB and cannot be called directly",
					format_procedure(fcinfo->flinfo->fn_oid)),
			 errhint("Use tierdb_upsert(), tierdb_delete(), tierdb_read_begin() or tierdb_read_end().")));
}

/*
 * The sibling of the function being called: <schema>.<name><suffix> (or
 * tierdb.<name><suffix> when `in_tierdb`), taking the caller's argument
 * types followed by `extra_types`; looked up once per call site.
 */
static FmgrInfo *
sibling_function(FunctionCallInfo fcinfo, const char *suffix, bool in_tierdb, int n_extra, const Oid *extra_types)
{
	FmgrInfo   *sibling = (FmgrInfo *) fcinfo->flinfo->fn_extra;
	HeapTuple	tuple;
	Form_pg_proc proc;
	Oid			types[FUNC_MAX_ARGS];
	List	   *name;
	Oid			oid;

	if (sibling != NULL)
		return sibling;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	memcpy(types, proc->proargtypes.values, proc->pronargs * sizeof(Oid));
	memcpy(types + proc->pronargs, extra_types, n_extra * sizeof(Oid));
	name = list_make2(makeString(in_tierdb ? "tierdb" : get_namespace_name(proc->pronamespace)),
					  makeString(psprintf("%s%s", NameStr(proc->proname), suffix)));
	oid = LookupFuncName(name, proc->pronargs + n_extra, types, false);
	ReleaseSysCache(tuple);

	sibling = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FmgrInfo));
	fmgr_info_cxt(oid, sibling, fcinfo->flinfo->fn_mcxt);
	fcinfo->flinfo->fn_extra = sibling;
	return sibling;
}

/* Calls `target` with the caller's arguments followed by `extra` (never null). */
static Datum
call_with(FunctionCallInfo fcinfo, FmgrInfo *target, int n_extra, const Datum *extra)
{
	LOCAL_FCINFO(call, FUNC_MAX_ARGS);
	Datum		result;

	InitFunctionCallInfoData(*call, target, PG_NARGS() + n_extra, fcinfo->fncollation, NULL, NULL);
	for (int i = 0; i < PG_NARGS(); i++)
		call->args[i] = fcinfo->args[i];
	for (int i = 0; i < n_extra; i++)
	{
		call->args[PG_NARGS() + i].value = extra[i];
		call->args[PG_NARGS() + i].isnull = false;
	}
	result = FunctionCallInvoke(call);
	fcinfo->isnull = call->isnull;
	return result;
}

/*
 * An entry point: opens a window on the table in argument 0 (if that is a
 * regclass; InvalidOid otherwise) and runs tierdb.<name>_body, as the
 * caller, inside it.
 */
Datum
tierdb_routing_entry(PG_FUNCTION_ARGS)
{
	FmgrInfo   *body = sibling_function(fcinfo, "_body", true, 0, NULL);
	Oid			relid = InvalidOid;
	MemoryContext old;
	Datum		result = (Datum) 0;
	Oid		   *argtypes;
	int			nargs;

	get_func_signature(fcinfo->flinfo->fn_oid, &argtypes, &nargs);
	if (nargs > 0 && argtypes[0] == REGCLASSOID && !PG_ARGISNULL(0))
		relid = PG_GETARG_OID(0);
	old = MemoryContextSwitchTo(TopMemoryContext);
	windows = lcons_oid(relid, windows);
	MemoryContextSwitchTo(old);
	PG_TRY();
	{
		result = call_with(fcinfo, body, 0, NULL);
	}
	PG_FINALLY();
	{
		windows = list_delete_first(windows);
	}
	PG_END_TRY();
	return result;
}

/*
 * Checks the caller's privileges on the table in argument 0 (and, for a
 * write, the window and that no row security applies), then runs the _impl.
 */
static Datum
call_checked(FunctionCallInfo fcinfo, AclMode mask, bool any, bool writes)
{
	Oid			relid;

	if (PG_NARGS() < 1 || PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the table argument of a tierdb catalog call must not be NULL")));
	relid = PG_GETARG_OID(0);
	if (writes)
		require_window(fcinfo, relid);
	check_table_privileges(relid, mask, any);
	if (writes)
		check_no_row_security(relid);
	return call_with(fcinfo, sibling_function(fcinfo, "_impl", false, 0, NULL), 0, NULL);
}

/* Reading the table's routing state or a pinned scan's: SELECT. */
Datum
tierdb_bridge_select(PG_FUNCTION_ARGS)
{
	return call_checked(fcinfo, ACL_SELECT, false, false);
}

/*
 * tierdb.routing_state(table, lock): SELECT; locking the cut-line row
 * holds off the daemon's publications until commit, which a routed write
 * does (and tierdb-spark's RoutedWrite, around a batch of them), so it
 * also takes a privilege that lets the role route a write: INSERT, UPDATE
 * or DELETE.
 */
Datum
tierdb_bridge_routing_state(PG_FUNCTION_ARGS)
{
	if (!PG_ARGISNULL(0) && !PG_ARGISNULL(1) && PG_GETARG_BOOL(1))
		check_table_privileges(PG_GETARG_OID(0), ACL_INSERT | ACL_UPDATE | ACL_DELETE, true);
	return call_checked(fcinfo, ACL_SELECT, false, false);
}

/* Writing an upsert into the delta: INSERT and UPDATE, as INSERT ... ON CONFLICT DO UPDATE needs. */
Datum
tierdb_bridge_insert_update(PG_FUNCTION_ARGS)
{
	return call_checked(fcinfo, ACL_INSERT | ACL_UPDATE, false, true);
}

/*
 * Writing a tombstone: DELETE, or UPDATE when an upsert moves the row out
 * of the lake (an update that changes where the row lives).
 */
Datum
tierdb_bridge_update_delete(PG_FUNCTION_ARGS)
{
	return call_checked(fcinfo, ACL_UPDATE | ACL_DELETE, true, true);
}

/* ------------------------------------------------------------ read pins */

/*
 * tierdb.pin_insert(table, ttl): SELECT, inside tierdb_read_begin's window
 * (whose body refuses a ttl that is not positive); refuses a ttl beyond
 * tierdb.max_pin_ttl, and records the caller as the pin's owner
 * (pin_insert_impl's third argument).
 */
Datum
tierdb_bridge_pin_begin(PG_FUNCTION_ARGS)
{
	Oid			extra_type = OIDOID;
	Datum		extra = ObjectIdGetDatum(GetUserId());
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Interval   *ttl;
	TimestampTz expiry;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a read pin needs a table and a ttl, not NULL")));
	require_window(fcinfo, PG_GETARG_OID(0));
	check_table_privileges(PG_GETARG_OID(0), ACL_SELECT, false);
	ttl = PG_GETARG_INTERVAL_P(1);
	expiry = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(now),
													 IntervalPGetDatum(ttl)));
	if (expiry - now > (TimestampTz) max_pin_ttl * USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a read pin's ttl of %s is longer than tierdb.max_pin_ttl (%d s)",
						DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(ttl))), max_pin_ttl),
				 errdetail("A live pin holds off folding and snapshot expiry of its table."),
				 errhint("Take a shorter pin and begin a new read when it runs out, or have a superuser raise tierdb.max_pin_ttl.")));
	return call_with(fcinfo, sibling_function(fcinfo, "_impl", false, 1, &extra_type), 1, &extra);
}

/*
 * tierdb.pin_delete(pin), inside tierdb_read_end's window: ends the pin if
 * the caller owns it or is a superuser (pin_delete_impl's extra arguments
 * say who calls); the _impl returns NULL when the pin is someone else's.
 */
Datum
tierdb_bridge_pin_end(PG_FUNCTION_ARGS)
{
	Oid			extra_types[2] = {OIDOID, BOOLOID};
	Datum		extra[2] = {ObjectIdGetDatum(GetUserId()), BoolGetDatum(superuser())};
	Datum		ended;

	require_window(fcinfo, InvalidOid);
	if (PG_ARGISNULL(0))
		PG_RETURN_BOOL(false);
	ended = call_with(fcinfo, sibling_function(fcinfo, "_impl", false, 2, extra_types), 2, extra);
	if (fcinfo->isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("read pin " INT64_FORMAT " belongs to another role", PG_GETARG_INT64(0)),
				 errdetail("Only the role that took a pin, or a superuser, may end it."),
				 errhint("It ends by itself when it expires.")));
	return ended;
}

/* ------------------------------------------------------------ row checks */

/*
 * Whether the lake stores column `attr` as an Iceberg decimal: numeric
 * (through domains) with a precision of 1..38 and a scale of 0..precision,
 * the rule of cli/pgtypes.c tdb_pg_map_type.
 */
static bool
lake_decimal(Form_pg_attribute attr, int *precision, int *scale)
{
	int32		typmod = attr->atttypmod;
	Oid			base = getBaseTypeAndTypmod(attr->atttypid, &typmod);

	if (base != NUMERICOID || typmod < (int32) VARHDRSZ)
		return false;
	*precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	*scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
	return *precision >= 1 && *precision <= TL_ICE_DECIMAL_MAX_PRECISION && *scale >= 0 && *scale <= *precision;
}

/* Refuses values of the row that the lake's column types cannot hold: NaN in a decimal. */
static void
check_lake_values(Relation rel, TupleTableSlot *slot)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);
		int			precision,
					scale;

		if (attr->attisdropped || slot->tts_isnull[i] || !lake_decimal(attr, &precision, &scale))
			continue;
		if (numeric_is_nan(DatumGetNumeric(slot->tts_values[i])))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("column \"%s\" of table %s cannot take NaN below the cut-line",
							NameStr(attr->attname), RelationGetRelationName(rel)),
					 errdetail("Rows below the cut-line live in the lake, whose decimal(%d, %d) cannot hold NaN.",
							   precision, scale),
					 errhint("Give the row a number, or NULL.")));
	}
}

/*
 * Computes the stored generated columns of the row as INSERT does.  A value
 * the row image gave for one is refused, as INSERT refuses it, unless it is
 * the very value the expression computes (so that to_jsonb() of a row of
 * the table is a valid image).
 */
static void
compute_generated(ResultRelInfo *rri, EState *estate, TupleTableSlot *slot)
{
	TupleDesc	desc = RelationGetDescr(rri->ri_RelationDesc);
	Datum	   *given = palloc0(desc->natts * sizeof(Datum));
	bool	   *given_null = palloc(desc->natts * sizeof(bool));

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);

		given_null[i] = slot->tts_isnull[i];
		if (attr->attgenerated && !given_null[i])
			given[i] = datumCopy(slot->tts_values[i], attr->attbyval, attr->attlen);
	}
	ExecComputeStoredGenerated(rri, estate, slot, CMD_INSERT);
	slot_getallattrs(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);

		if (!attr->attgenerated || given_null[i])
			continue;
		if (slot->tts_isnull[i] ||
			!datum_image_eq(given[i], slot->tts_values[i], attr->attbyval, attr->attlen))
			ereport(ERROR,
					(errcode(ERRCODE_GENERATED_ALWAYS),
					 errmsg("cannot insert a non-DEFAULT value into column \"%s\"", NameStr(attr->attname)),
					 errdetail("Column \"%s\" is a generated column, and the row image gives it another value than its expression computes.",
							   NameStr(attr->attname)),
					 errhint("Leave the column out of the row image (or give it null): it is computed.")));
	}
}

/*
 * tierdb.checked_row(row, for_lake): the row of a table (its composite
 * type, as jsonb_populate_record makes it) checked as a plain INSERT of it
 * would be, with its generated columns computed; for_lake also refuses
 * what the lake cannot hold.  Errors are Postgres' own.
 */
Datum
tierdb_checked_row(PG_FUNCTION_ARGS)
{
	HeapTupleHeader row = PG_GETARG_HEAPTUPLEHEADER(0);
	bool		for_lake = PG_GETARG_BOOL(1);
	Oid			relid = get_typ_typrelid(HeapTupleHeaderGetTypeId(row));
	HeapTupleData tuple;
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	Datum		result;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("tierdb.checked_row needs a row of a table, not a %s",
						format_type_be(HeapTupleHeaderGetTypeId(row)))));
	rel = table_open(relid, AccessShareLock);
	tuple.t_len = HeapTupleHeaderGetDatumLength(row);
	tuple.t_data = row;
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = relid;

	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	/* range table index 0: no range table, so errors show the columns the caller may SELECT */
	InitResultRelInfo(rri, rel, 0, NULL, 0);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
	ExecForceStoreHeapTuple(&tuple, slot, false);
	slot_getallattrs(slot);

	if (RelationGetDescr(rel)->constr != NULL)
	{
		if (RelationGetDescr(rel)->constr->has_generated_stored)
			compute_generated(rri, estate, slot);
		ExecConstraints(rri, slot, estate);
	}
	if (for_lake)
		check_lake_values(rel, slot);

	result = ExecFetchSlotHeapTupleDatum(slot);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	table_close(rel, AccessShareLock);
	PG_RETURN_DATUM(result);
}
