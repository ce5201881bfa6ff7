/*-------------------------------------------------------------------------
 *
 * columns.c
 *		The Postgres names of renamed lake fields (tierdb.columns,
 *		sql/0.1/61-columns.sql; SPEC §6, docs/schema-changes.md).
 *
 * ALTER TABLE t RENAME COLUMN a TO b of a registered table changes the
 * column's name in Postgres at once; the lake field that holds it keeps
 * its id, and its old name until the daemon renames it
 * (cli/schema_evolution.c).  tierdb.columns says which field each renamed
 * column is, so readers match the column by field id, whatever the lake's
 * schema at the pinned snapshot calls it.  The delta's payloads are keyed
 * by column name: the rename rewrites the pending ones in the same
 * transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"


#include "columns.h"

static Oid
columns_catalog(void)
{
	Oid			nsp = get_namespace_oid("tierdb", true);

	return OidIsValid(nsp) ? get_relname_relid("columns", nsp) : InvalidOid;
}

/*
 * Read directly, as the readers read tierdb.tables: a reader of the table
 * needs no privilege on the catalog.
 */
List *
renamed_fields(Oid relid)
{
	Oid			catalog = columns_catalog();
	Relation	rel;
	TableScanDesc scan;
	ScanKeyData key;
	HeapTuple	tuple;
	List	   *out = NIL;

	if (!OidIsValid(catalog))
		return NIL;
	rel = table_open(catalog, AccessShareLock);
	ScanKeyInit(&key, attnameAttNum(rel, "table_id", false), BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum((int64) relid));
	scan = table_beginscan(rel, GetActiveSnapshot(), 1, &key);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		RenamedField *r = palloc(sizeof(RenamedField));
		bool		isnull;

		r->field_id = DatumGetInt32(heap_getattr(tuple, attnameAttNum(rel, "field_id", false),
												 RelationGetDescr(rel), &isnull));
		r->name = TextDatumGetCString(heap_getattr(tuple, attnameAttNum(rel, "column_name", false),
												   RelationGetDescr(rel), &isnull));
		out = lappend(out, r);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return out;
}

static bool
renamed_away(List *renamed, int32 field_id)
{
	ListCell   *lc;

	foreach(lc, renamed)
		if (((RenamedField *) lfirst(lc))->field_id == field_id)
			return true;
	return false;
}

const tl_ice_field *
column_field(const tl_ice_schema *schema, List *renamed, const char *name)
{
	ListCell   *lc;

	foreach(lc, renamed)
	{
		RenamedField *r = lfirst(lc);

		if (strcmp(r->name, name) == 0)
		{
			for (int i = 0; i < schema->nfields; i++)
				if (schema->fields[i].id == r->field_id)
					return &schema->fields[i];
			return NULL;
		}
	}
	for (int i = 0; i < schema->nfields; i++)
		if (strcmp(schema->fields[i].name, name) == 0 && !renamed_away(renamed, schema->fields[i].id))
			return &schema->fields[i];
	return NULL;
}

/* The field id of column `name` in the lake's current schema. */
static int32
current_field_id(Oid relid, const char *location, const char *name)
{
	tl_error	err;
	tl_ice_table *lake;
	const tl_ice_field *field;
	int32		id;

	tl_error_clear(&err);
	lake = tl_ice_table_open(location, &err);
	if (lake == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("cannot rename column \"%s\" of table %s: its lake table at %s cannot be read: %s",
						name, get_rel_name(relid), location, err.message)));
	field = column_field(tl_ice_metadata_current_schema(lake->metadata), renamed_fields(relid), name);
	id = field != NULL ? field->id : -1;
	tl_ice_table_free(lake);
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot rename column \"%s\" of table %s: its lake table at %s has no field for it",
						name, get_rel_name(relid), location),
				 errhint("See docs/schema-changes.md.")));
	return id;
}

static Oid
catalog_owner(Oid catalog)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(catalog));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", catalog);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

static void
execute(const char *sql, int nargs, Oid *types, Datum *values)
{
	if (SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0) < 0)
		elog(ERROR, "SPI_execute_with_args failed: %s", sql);
}

/*
 * The statements run as the catalog's owner: the table's owner may rename
 * its columns without any privilege on TierDB's catalog, and the rename
 * itself is checked by Postgres after this, in the same transaction.
 */
void
record_column_rename(Oid relid, const char *location, const char *old_name, const char *new_name)
{
	int32		field_id = current_field_id(relid, location, old_name);
	Oid			save_userid;
	int			save_sec;
	Oid			types[3] = {INT8OID, INT4OID, TEXTOID};
	Datum		values[3] = {Int64GetDatum((int64) relid), Int32GetDatum(field_id),
		CStringGetTextDatum(new_name)};
	Oid			delta_types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		delta_values[3] = {Int64GetDatum((int64) relid), CStringGetTextDatum(old_name),
		CStringGetTextDatum(new_name)};

	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(catalog_owner(columns_catalog()),
						   save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* Operators qualified: the caller's search_path must not choose them. */
	execute("INSERT INTO tierdb.columns (table_id, field_id, column_name) VALUES ($1, $2, $3)"
			" ON CONFLICT (table_id, field_id) DO UPDATE SET column_name = EXCLUDED.column_name",
			3, types, values);
	execute("UPDATE tierdb.delta SET payload = (payload OPERATOR(pg_catalog.-) $2)"
			" OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object($3, payload OPERATOR(pg_catalog.->) $2)"
			" WHERE table_id OPERATOR(pg_catalog.=) $1 AND payload OPERATOR(pg_catalog.?) $2",
			3, delta_types, delta_values);
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec);
}
