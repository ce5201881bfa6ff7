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

/*
 * How the table's columns differ from the lake's fields, in ways the lake
 * can follow, and the schema that follows them: one field per column, in
 * the columns' order (tdb_lake_change_free).
 */
typedef struct tdb_lake_change {
	int renamed;         /* fields whose name is not their column's (RENAME COLUMN) */
	int dropped;         /* fields tierdb.columns says are no column (DROP COLUMN) */
	int widened;         /* fields of a narrower type than their column's (ALTER COLUMN TYPE) */
	int added;           /* columns after the last kept field (ADD COLUMN) */
	tl_ice_field *fields; /* the schema to publish: kept fields (id > 0), then added ones (id 0) */
	char **defaults;      /* per added field, its column's default for the lake's rows (text form), or NULL */
	int nfields;
} tdb_lake_change;

/* Whether the lake has anything to follow. */
bool tdb_lake_change_pending(const tdb_lake_change *change);
void tdb_lake_change_free(tdb_lake_change *change);

/*
 * Whether the heap columns are the lake schema's fields once the lake
 * follows what tierdb.columns records: the fields that are still columns,
 * in order, are the first columns, each with the name tierdb.columns gives
 * its field (else the field's own) and the field's type or a widening of
 * it; the columns after them were added, and are nullable or have a
 * default for the lake's rows (tierdb.column_defaults). *change says what
 * the lake has to follow. Anything else is TL_ERR_UNSUPPORTED naming the
 * column; `step` names what cannot go on ("tiering").
 */
int tdb_lake_columns_check(PGconn *c, int64_t table_id, const tl_ice_table *lake, const tdb_pg_column *cols,
                           int ncols, const char *label, const char *step, tdb_lake_change *change, tl_error *err);

/*
 * tdb_lake_columns_check, then, when anything changed, evolves the lake's
 * schema under the table's lake lock, so the files about to be written and
 * every engine reading the lake see the table's columns.
 */
int tdb_lake_follow_columns(PGconn *c, int64_t table_id, tl_ice_table *lake, const tdb_pg_column *cols, int ncols,
                            const char *label, const char *step, tl_error *err);

/*
 * The daemon's step for a table: the lake follows the columns (as
 * tdb_lake_follow_columns) even when nothing is tiered or folded. Columns
 * that do not match otherwise are left to tiering and the fold to report.
 */
int tdb_follow_column_changes(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
