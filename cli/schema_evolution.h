/*
 * schema_evolution.h: keeping a registered table's lake schema the table's
 * columns (SPEC §6, docs/schema-changes.md).
 */
#ifndef TIERDB_SCHEMA_EVOLUTION_H
#define TIERDB_SCHEMA_EVOLUTION_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "pgtypes.h"
#include "tierlake/iceberg_table.h"

/* How the table's columns differ from the lake's fields, in ways the lake can follow. */
typedef struct tdb_lake_change {
	bool renamed; /* a field's name is not its column's (RENAME COLUMN) */
	int added;    /* columns after the last field (ADD COLUMN), each nullable */
} tdb_lake_change;

/*
 * Whether the heap columns are the lake schema's fields: column i is field
 * i (registration makes the lake so; the DDL guard refuses dropping and
 * retyping columns), with the same type and the same name, or, after
 * ALTER TABLE ... RENAME COLUMN, the name tierdb.columns gives the field;
 * columns after the last field were added and must be nullable. *change
 * says what the lake has to follow. Anything else is TL_ERR_UNSUPPORTED
 * naming the column; `step` names what cannot go on ("tiering").
 */
int tdb_lake_columns_check(PGconn *c, int64_t table_id, const tl_ice_table *lake, const tdb_pg_column *cols,
                           int ncols, const char *label, const char *step, tdb_lake_change *change, tl_error *err);

/*
 * tdb_lake_columns_check, then, when the columns were renamed or added,
 * renames and adds the lake's fields under the table's lake lock, so the
 * files about to be written and every engine reading the lake see the
 * table's columns.
 */
int tdb_lake_follow_columns(PGconn *c, int64_t table_id, tl_ice_table *lake, const tdb_pg_column *cols, int ncols,
                            const char *label, const char *step, tl_error *err);

/*
 * The daemon's step for a table: the lake follows renamed and added
 * columns (as tdb_lake_follow_columns) even when nothing is tiered or
 * folded. Columns that do not match otherwise are left to tiering and the
 * fold to report.
 */
int tdb_follow_column_changes(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
