/*-------------------------------------------------------------------------
 *
 * columns.c
 *		How a registered table's columns map to its lake's fields after
 *		ALTER TABLE (tierdb.columns, tierdb.column_defaults,
 *		sql/0.1/61-columns.sql; SPEC §6, docs/schema-changes.md).
 *
 * Postgres changes a column at once; the lake's field keeps its id, and
 * its old name, type or presence until the daemon makes the lake follow
 * (cli/schema_evolution.c).  The DDL guard (ddl.c) records here, in the
 * ALTER's own transaction, what readers need meanwhile and after: which
 * field a renamed column is, which fields are no column any more, and the
 * value an added column has in the rows already in the lake.  The delta's
 * payloads are keyed by column name and hold every column: the same
 * transaction rewrites the pending ones to the new columns.
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
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "columns.h"
#include "lake_env.h"
#include "storage_profiles.h"

/* ------------------------------------------------------------ reading */

static Oid
catalog_oid(const char *name)
{
	Oid			nsp = get_namespace_oid("tierdb", true);

	return OidIsValid(nsp) ? get_relname_relid(name, nsp) : InvalidOid;
}

static Datum
attr(Relation rel, HeapTuple tuple, const char *name, bool *isnull)
{
	return heap_getattr(tuple, attnameAttNum(rel, name, false), RelationGetDescr(rel), isnull);
}

static char *
text_attr(Relation rel, HeapTuple tuple, const char *name)
{
	bool		isnull;
	Datum		d = attr(rel, tuple, name, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/* The rows of catalog `name` for table relid, as fn makes them; NIL when the catalog is missing. */
static List *
table_rows(const char *name, Oid relid, void *(*fn) (Relation rel, HeapTuple tuple))
{
	Oid			catalog = catalog_oid(name);
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
		out = lappend(out, fn(rel, tuple));
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return out;
}

static void *
renamed_field_of(Relation rel, HeapTuple tuple)
{
	RenamedField *r = palloc(sizeof(RenamedField));
	bool		isnull;

	r->field_id = DatumGetInt32(attr(rel, tuple, "field_id", &isnull));
	r->name = text_attr(rel, tuple, "column_name");
	return r;
}

static void *
column_default_of(Relation rel, HeapTuple tuple)
{
	ColumnDefault *d = palloc(sizeof(ColumnDefault));
	bool		isnull;
	Datum		sequence = attr(rel, tuple, "lake_sequence_number", &isnull);

	d->name = text_attr(rel, tuple, "column_name");
	d->value = text_attr(rel, tuple, "default_value");
	d->has_sequence = !isnull;
	d->sequence = isnull ? 0 : DatumGetInt64(sequence);
	return d;
}

ColumnMap
column_map(Oid relid)
{
	ColumnMap	map;

	map.fields = table_rows("columns", relid, renamed_field_of);
	map.defaults = table_rows("column_defaults", relid, column_default_of);
	return map;
}

static bool
listed(const ColumnMap *map, int32 field_id)
{
	ListCell   *lc;

	foreach(lc, map->fields)
		if (((RenamedField *) lfirst(lc))->field_id == field_id)
			return true;
	return false;
}

const tl_ice_field *
column_field(const tl_ice_schema *schema, const ColumnMap *map, const char *name)
{
	ListCell   *lc;

	foreach(lc, map->fields)
	{
		RenamedField *r = lfirst(lc);

		if (r->name != NULL && strcmp(r->name, name) == 0)
			return tl_ice_schema_find_id(schema, r->field_id);
	}
	for (int i = 0; i < schema->nfields; i++)
		if (strcmp(schema->fields[i].name, name) == 0 && !listed(map, schema->fields[i].id))
			return &schema->fields[i];
	return NULL;
}

const ColumnDefault *
column_default(const ColumnMap *map, const char *name)
{
	ListCell   *lc;

	foreach(lc, map->defaults)
		if (strcmp(((ColumnDefault *) lfirst(lc))->name, name) == 0)
			return lfirst(lc);
	return NULL;
}

/* ------------------------------------------------------------ recording */

/* The id of column `name`'s field in the lake's current schema, or -1 when the lake has none yet. */
static int32
current_field_id(Oid relid, const char *location, const char *name, const char *change)
{
	tl_error	err;
	tl_ice_table *lake;
	const tl_ice_field *field;
	ColumnMap	map = column_map(relid);
	int32		id;

	tl_error_clear(&err);
	storage_profiles_prepare();
	lake = tl_ice_table_open(location, &err);
	if (lake == NULL)
		tierdb_lake_error_precheck(&err);
	if (lake == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("cannot %s column \"%s\" of table %s: its lake table at %s cannot be read: %s",
						change, name, get_rel_name(relid), location, err.message)));
	field = column_field(tl_ice_metadata_current_schema(lake->metadata), &map, name);
	id = field != NULL ? field->id : -1;
	tl_ice_table_free(lake);
	return id;
}

static Oid
catalog_owner(void)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(catalog_oid("columns")));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for the TierDB catalog tierdb.columns");
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * Runs a statement on the catalog as its owner: the table's owner may
 * alter its columns without any privilege on TierDB's catalog, and the
 * change itself is checked by Postgres in the same transaction.  Floats
 * are written exactly (the payloads are read back as the column's type),
 * whatever the session says.  Operators in the statements are qualified:
 * the caller's search_path must not choose them.
 */
static void
catalog_execute(const char *sql, int nargs, Oid *types, Datum *values)
{
	Oid			save_userid;
	int			save_sec;
	int			nest = NewGUCNestLevel();

	(void) set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
							 false);
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(catalog_owner(), save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0) < 0)
		elog(ERROR, "SPI_execute_with_args failed: %s", sql);
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec);
	AtEOXact_GUC(true, nest);
}

#define DELTA_ROWS_WITH(key) \
	" WHERE table_id OPERATOR(pg_catalog.=) $1 AND payload OPERATOR(pg_catalog.?) " key

void
record_column_rename(Oid relid, const char *location, const char *old_name, const char *new_name)
{
	int32		field_id = current_field_id(relid, location, old_name, "rename");
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		names[3] = {Int64GetDatum((int64) relid), CStringGetTextDatum(old_name),
		CStringGetTextDatum(new_name)};

	/* A column whose field the lake has not added yet gets it under its new name. */
	if (field_id >= 0)
		catalog_execute("INSERT INTO tierdb.columns (table_id, field_id, column_name) VALUES ($1, $2, $3)"
						" ON CONFLICT (table_id, field_id) DO UPDATE SET column_name = EXCLUDED.column_name",
						3, (Oid[]) {INT8OID, INT4OID, TEXTOID},
						(Datum[]) {names[0], Int32GetDatum(field_id), names[2]});
	catalog_execute("UPDATE tierdb.column_defaults SET column_name = $3"
					" WHERE table_id OPERATOR(pg_catalog.=) $1 AND column_name OPERATOR(pg_catalog.=) $2",
					3, types, names);
	catalog_execute("UPDATE tierdb.delta SET payload = (payload OPERATOR(pg_catalog.-) $2)"
					" OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object($3, payload OPERATOR(pg_catalog.->) $2)"
					DELTA_ROWS_WITH("$2"), 3, types, names);
}

void
record_column_drop(Oid relid, const char *location, const char *name)
{
	int32		field_id = current_field_id(relid, location, name, "drop");
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum((int64) relid), CStringGetTextDatum(name)};

	if (field_id >= 0)
		catalog_execute("INSERT INTO tierdb.columns (table_id, field_id, column_name) VALUES ($1, $2, NULL)"
						" ON CONFLICT (table_id, field_id) DO UPDATE SET column_name = NULL",
						2, (Oid[]) {INT8OID, INT4OID}, (Datum[]) {values[0], Int32GetDatum(field_id)});
	catalog_execute("DELETE FROM tierdb.column_defaults"
					" WHERE table_id OPERATOR(pg_catalog.=) $1 AND column_name OPERATOR(pg_catalog.=) $2",
					2, types, values);
	catalog_execute("UPDATE tierdb.delta SET payload = payload OPERATOR(pg_catalog.-) $2" DELTA_ROWS_WITH("$2"),
					2, types, values);
}

/* The type's name, schema-qualified, with its modifier: for a cast the search_path cannot redirect. */
static char *
qualified_type(Oid type, int32 typmod)
{
	return format_type_extended(type, typmod, FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

void
record_column_retype(Oid relid, const char *name, Oid old_type, int32 old_typmod, Oid new_type, int32 new_typmod)
{
	/* A real's shortest text is not its double's: convert through the old type. */
	char	   *sql = psprintf("UPDATE tierdb.delta SET payload = pg_catalog.jsonb_set(payload, ARRAY[$2],"
							   " pg_catalog.to_jsonb(CAST(CAST(payload OPERATOR(pg_catalog.->>) $2 AS %s) AS %s)))"
							   DELTA_ROWS_WITH("$2") " AND pg_catalog.jsonb_typeof(payload OPERATOR(pg_catalog.->) $2)"
							   " OPERATOR(pg_catalog.<>) 'null'",
							   qualified_type(old_type, old_typmod), qualified_type(new_type, new_typmod));

	catalog_execute(sql, 2, (Oid[]) {INT8OID, TEXTOID},
					(Datum[]) {Int64GetDatum((int64) relid), CStringGetTextDatum(name)});
}

void
record_column_default(Oid relid, const char *name, Oid type, int32 typmod, const char *value)
{
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3] = {Int64GetDatum((int64) relid), CStringGetTextDatum(name), CStringGetTextDatum(value)};

	catalog_execute("INSERT INTO tierdb.column_defaults (table_id, column_name, default_value) VALUES ($1, $2, $3)"
					" ON CONFLICT (table_id, column_name) DO UPDATE"
					" SET default_value = EXCLUDED.default_value, lake_sequence_number = NULL",
					3, types, values);
	/* The pending payloads predate the column, as the rows already in the lake do. */
	catalog_execute(psprintf("UPDATE tierdb.delta SET payload = payload OPERATOR(pg_catalog.||)"
							 " pg_catalog.jsonb_build_object($2, pg_catalog.to_jsonb(CAST($3 AS %s)))"
							 " WHERE table_id OPERATOR(pg_catalog.=) $1 AND payload IS NOT NULL"
							 " AND NOT payload OPERATOR(pg_catalog.?) $2", qualified_type(type, typmod)),
					3, types, values);
}
