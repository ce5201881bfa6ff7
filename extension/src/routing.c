/*-------------------------------------------------------------------------
 *
 * routing.c
 *		The privilege bridge between routed writes and the tierdb catalog.
 *
 * tierdb_upsert(), tierdb_delete() and the read protocol (sql/0.1/
 * 30-routing.sql) run as their caller, so the caller's privileges, row
 * security and triggers apply to every statement they run on the user's
 * table.  The catalog, though, belongs to the extension's owner: a role that
 * may write a table still may not write tierdb.delta directly, or it could
 * forge corrections for tables it cannot touch.
 *
 * The bridge functions declared with these symbols close that gap.  Each is
 * named tierdb.<op>(regclass, ...) and does one narrow catalog operation on
 * the table given as its first argument:
 *
 *	1. it checks that the role calling it (GetUserId(): the caller as
 *	   Postgres itself would check it, SET ROLE and enclosing SECURITY
 *	   DEFINER functions included) holds the privileges the symbol names on
 *	   that table, failing like Postgres' own "permission denied for table";
 *	   and, for a write, that no row-level security applies to the caller
 *	   there (a delta row is out of the policies' reach);
 *	2. it calls tierdb.<op>_impl with the same arguments, a SECURITY
 *	   DEFINER function nobody else may execute, which touches only the
 *	   catalog rows of that table and runs no user code.
 *
 * Why C: inside a SECURITY DEFINER function the caller's identity is gone,
 * so no SQL function can both check the caller and write as the owner.
 * fmgr calls the _impl function directly, which is how a privilege check of
 * the real caller can guard it while the _impl stays unexecutable by SQL.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "routing.h"

PG_FUNCTION_INFO_V1(tierdb_bridge_any);
PG_FUNCTION_INFO_V1(tierdb_bridge_select);
PG_FUNCTION_INFO_V1(tierdb_bridge_insert_update);
PG_FUNCTION_INFO_V1(tierdb_bridge_update_delete);

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

/*
 * The _impl function of the bridge being called: tierdb.<own name>_impl
 * with the bridge's own argument types, looked up once per call site.
 */
static FmgrInfo *
impl_function(FunctionCallInfo fcinfo)
{
	FmgrInfo   *impl = (FmgrInfo *) fcinfo->flinfo->fn_extra;
	HeapTuple	tuple;
	Form_pg_proc proc;
	List	   *name;
	Oid			impl_oid;

	if (impl != NULL)
		return impl;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	name = list_make2(makeString(get_namespace_name(proc->pronamespace)),
					  makeString(psprintf("%s_impl", NameStr(proc->proname))));
	impl_oid = LookupFuncName(name, proc->pronargs, proc->proargtypes.values, false);
	ReleaseSysCache(tuple);

	impl = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FmgrInfo));
	fmgr_info_cxt(impl_oid, impl, fcinfo->flinfo->fn_mcxt);
	fcinfo->flinfo->fn_extra = impl;
	return impl;
}

/*
 * Checks the caller's privileges on the table in argument 0 (and, for a
 * write, that no row security applies), then runs the _impl.
 */
static Datum
call_checked(FunctionCallInfo fcinfo, AclMode mask, bool any, bool writes)
{
	FmgrInfo   *impl;
	LOCAL_FCINFO(call, FUNC_MAX_ARGS);
	Datum		result;

	if (PG_NARGS() < 1 || PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the table argument of a tierdb catalog call must not be NULL")));
	check_table_privileges(PG_GETARG_OID(0), mask, any);
	if (writes)
		check_no_row_security(PG_GETARG_OID(0));

	impl = impl_function(fcinfo);
	InitFunctionCallInfoData(*call, impl, PG_NARGS(), fcinfo->fncollation, NULL, NULL);
	for (int i = 0; i < PG_NARGS(); i++)
		call->args[i] = fcinfo->args[i];
	result = FunctionCallInvoke(call);
	fcinfo->isnull = call->isnull;
	return result;
}

/* Reading the table's routing state: any privilege on the table will do. */
Datum
tierdb_bridge_any(PG_FUNCTION_ARGS)
{
	return call_checked(fcinfo, ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE, true, false);
}

/* Read pins and the read protocol's state: SELECT. */
Datum
tierdb_bridge_select(PG_FUNCTION_ARGS)
{
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
