/*
 * schema_evolution.c: carrying ALTER TABLE ... RENAME COLUMN of a
 * registered table into its lake (SPEC §6, docs/schema-changes.md).
 *
 * Postgres renames a column at once; the lake follows at the daemon's next
 * step that writes it (tiering, the fold): before writing files, the
 * lake's fields are renamed to the table's column names in a metadata-only
 * commit (tl_ice_table_rename_fields), keeping every field id, so the
 * files written before read on by id. Which field a renamed column is,
 * tierdb.columns says (the rename wrote it, extension/src/columns.c); the
 * readers in Postgres match by it until then and after, other engines see
 * the old names until then.
 *
 * The rename is not journaled like the steps that write files: it leaves
 * nothing to clean up and is idempotent; a daemon that dies around it
 * finds the lake either renamed already or not, and renames again.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "lakestep.h"
#include "pg.h"
#include "tiering.h"
#include "schema_evolution.h"
#include "tierlake/iceberg_metadata.h"

static bool same_type(const tl_ice_type *a, const tl_ice_type *b)
{
	return a->id == b->id && a->precision == b->precision && a->scale == b->scale;
}

/*
 * The names the lake's fields must have: a renamed field's Postgres name
 * from tierdb.columns (written by the rename, extension/src/columns.c),
 * else its own. Returns an array of nfields strings (free each and it).
 */
static char **expected_names(PGconn *c, int64_t table_id, const tl_ice_schema *schema, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the renamed columns",
	                             "SELECT field_id, column_name FROM tierdb.columns WHERE table_id = $1", 1, params,
	                             err);
	if (res == NULL)
		return NULL;
	char **names = tl_calloc((size_t)schema->nfields + 1, sizeof(char *));
	for (int i = 0; i < schema->nfields; i++) {
		const char *name = schema->fields[i].name;
		for (int r = 0; r < PQntuples(res); r++)
			if (strtol(PQgetvalue(res, r, 0), NULL, 10) == schema->fields[i].id)
				name = PQgetvalue(res, r, 1);
		names[i] = tl_strdup(name);
	}
	PQclear(res);
	return names;
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int check_fields(const tl_ice_table *lake, char **expected, const tdb_pg_column *cols, int ncols,
                        const char *label, const char *step, bool *renamed, tl_error *err)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	for (int i = 0; i < ncols; i++) {
		const tl_ice_field *f = &schema->fields[i];
		if (strcmp(expected[i], cols[i].name) != 0 || !same_type(&f->type, &cols[i].ice_type))
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "column %d of %s (%s) does not match field %d (%s) of its lake table %s; "
			                    "changing a registered table's columns other than renaming them is not "
			                    "supported yet, so %s cannot go on",
			                    i + 1, label, cols[i].name, f->id, f->name, lake->location, step);
		if (renamed != NULL && strcmp(f->name, cols[i].name) != 0)
			*renamed = true;
	}
	return 0;
}

int tdb_lake_columns_check(PGconn *c, int64_t table_id, const tl_ice_table *lake, const tdb_pg_column *cols,
                           int ncols, const char *label, const char *step, bool *renamed, tl_error *err)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	if (renamed != NULL)
		*renamed = false;
	if (schema->nfields != ncols)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s has %d columns but its lake table %s has %d fields; adding or dropping a "
		                    "registered table's columns is not supported yet, so %s cannot go on",
		                    label, ncols, lake->location, schema->nfields, step);
	char **expected = expected_names(c, table_id, schema, err);
	if (expected == NULL)
		return -1;
	int rc = check_fields(lake, expected, cols, ncols, label, step, renamed, err);
	free_names(expected, ncols);
	return rc;
}

static int rename_fields(PGconn *c, int64_t table_id, tl_ice_table *lake, const tdb_pg_column *cols, int ncols,
                         const char *label, tl_error *err)
{
	if (tdb_lake_lock(c, table_id, true, err) < 0)
		return -1;
	const char **names = tl_calloc((size_t)ncols + 1, sizeof(char *));
	for (int i = 0; i < ncols; i++)
		names[i] = cols[i].name;
	bool changed = false;
	int rc = tl_ice_table_refresh(lake, err);
	if (rc == 0)
		rc = tl_ice_table_rename_fields(lake, names, ncols, &changed, err);
	free(names);
	if (changed)
		tdb_log(label, "renamed the lake's fields to follow the table's renamed columns (%s)",
		        lake->metadata_file);
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_lake_lock(c, table_id, false, &ignored);
	return rc;
}

int tdb_lake_follow_columns(PGconn *c, int64_t table_id, tl_ice_table *lake, const tdb_pg_column *cols, int ncols,
                            const char *label, const char *step, tl_error *err)
{
	bool renamed;
	if (tdb_lake_columns_check(c, table_id, lake, cols, ncols, label, step, &renamed, err) < 0)
		return -1;
	if (!renamed)
		return 0;
	if (rename_fields(c, table_id, lake, cols, ncols, label, err) < 0)
		return -1;
	/* Checked again on the refreshed lake: a writer may have changed it meanwhile. */
	return tdb_lake_columns_check(c, table_id, lake, cols, ncols, label, step, NULL, err);
}

int tdb_follow_renamed_columns(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	/* A lake that does not open is left to the steps that write to report, as a mismatch is. */
	tl_error unreadable;
	tl_error_clear(&unreadable);
	tl_ice_table *lake = tl_ice_table_open(t->lake_table_ref, &unreadable);
	if (lake == NULL)
		return 0;
	tdb_pg_column *cols = NULL;
	int ncols = 0;
	bool renamed = false;
	int rc = tdb_pg_table_columns(c, (uint32_t)t->table_id, &cols, &ncols, err);
	if (rc == 0) {
		tl_error mismatch;
		tl_error_clear(&mismatch);
		if (tdb_lake_columns_check(c, t->table_id, lake, cols, ncols, tdb_table_label(t), "renaming", &renamed,
		                           &mismatch) < 0)
			renamed = false;
		if (renamed)
			rc = rename_fields(c, t->table_id, lake, cols, ncols, tdb_table_label(t), err);
	}
	tdb_pg_columns_free(cols, ncols);
	tl_ice_table_free(lake);
	return rc;
}
