/*-------------------------------------------------------------------------
 *
 * columns.h
 *		The Postgres names of renamed lake fields (tierdb.columns,
 *		sql/0.1/61-columns.sql): columns are matched to the lake by field
 *		id, never by a name that may have changed (SPEC §6).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_COLUMNS_H
#define TIERDB_COLUMNS_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "tierlake_pg.h"

/* One row of tierdb.columns: lake field field_id is column `name`. */
typedef struct RenamedField
{
	int32		field_id;
	char	   *name;
} RenamedField;

/* The renamed fields of registered table relid (RenamedField *), NIL for none. */
extern List *renamed_fields(Oid relid);

/*
 * The top-level field of `schema` that column `name` of a table with these
 * renamed fields reads: the renamed field named so, else the field of that
 * name that was not renamed away; NULL if none.
 */
extern const tl_ice_field *column_field(const tl_ice_schema *schema, List *renamed, const char *name);

/*
 * Records that the lake field of column old_name of registered table relid
 * (at lake `location`) is now column new_name, and renames the key in the
 * pending delta rows' payloads, in the current transaction.
 */
extern void record_column_rename(Oid relid, const char *location, const char *old_name, const char *new_name);

#endif
