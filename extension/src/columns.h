/*-------------------------------------------------------------------------
 *
 * columns.h
 *		How a registered table's columns map to its lake's fields after
 *		ALTER TABLE (tierdb.columns and tierdb.column_defaults,
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

/* One row of tierdb.columns: lake field field_id is column `name`, or no column (NULL: dropped). */
typedef struct RenamedField
{
	int32		field_id;
	char	   *name;
} RenamedField;

/*
 * One row of tierdb.column_defaults: the rows already in the lake when
 * column `name` was added read `value` (its type's text form): those of
 * data files with a data sequence number at most `sequence`, or all of
 * them while the lake has no field for it (has_sequence false).
 */
typedef struct ColumnDefault
{
	char	   *name;
	char	   *value;
	bool		has_sequence;
	int64		sequence;
} ColumnDefault;

/* What the catalog says of one table's columns. */
typedef struct ColumnMap
{
	List	   *fields;			/* RenamedField * */
	List	   *defaults;		/* ColumnDefault * */
} ColumnMap;

/* The map of registered table relid, read directly (a reader needs no privilege on the catalog). */
extern ColumnMap column_map(Oid relid);

/*
 * The top-level field of `schema` that column `name` reads: the field the
 * map names so, else the field of that name the map does not list; NULL
 * if none.
 */
extern const tl_ice_field *column_field(const tl_ice_schema *schema, const ColumnMap *map, const char *name);

/* The default the lake's older rows read for column `name`, or NULL. */
extern const ColumnDefault *column_default(const ColumnMap *map, const char *name);

/*
 * The changes of a registered table's columns (relid, lake at `location`)
 * recorded in the ALTER's own transaction, with the pending delta rows'
 * payloads rewritten to match:
 *	- renamed: its field now bears new_name; the payloads' key renamed;
 *	- dropped: its field is no column any more; the payloads' key removed;
 *	- retyped (a widening the lake follows): the payloads' values converted;
 *	- added with a non-NULL default `value` (its text form): the lake's
 *	  older rows read it; the payloads, which predate the column, take it.
 */
extern void record_column_rename(Oid relid, const char *location, const char *old_name, const char *new_name);
extern void record_column_drop(Oid relid, const char *location, const char *name);
extern void record_column_retype(Oid relid, const char *name, Oid old_type, int32 old_typmod,
								 Oid new_type, int32 new_typmod);
extern void record_column_default(Oid relid, const char *name, Oid type, int32 typmod, const char *value);

#endif
