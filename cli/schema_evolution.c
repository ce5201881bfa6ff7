/*
 * schema_evolution.c: carrying ALTER TABLE ... RENAME COLUMN and ADD COLUMN
 * (nullable, without a default) of a registered table into its lake
 * (SPEC §6, docs/schema-changes.md).
 *
 * Postgres changes the columns at once; the lake follows at the daemon's
 * next cycle, and before tiering or a fold writes files: in a
 * metadata-only commit the lake's fields are renamed to the table's column
 * names (tl_ice_table_rename_fields) and the added columns become new
 * optional fields (tl_ice_table_add_fields). Every field keeps its id, so
 * the files written before read on by id, and lack the added fields, which
 * read as null, as Postgres reads an added column without a default for
 * the rows that existed before. Which field a renamed column is,
 * tierdb.columns says (the rename wrote it, extension/src/columns.c); the
 * readers in Postgres match by it before and after the daemon followed,
 * other engines see the old schema until then.
 *
 * The evolution is not journaled like the steps that write files: it
 * leaves nothing to clean up and is idempotent; a daemon that dies around
 * it finds the lake either evolved already or not, and evolves it again.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "lakestep.h"
#include "pg.h"
#include "schema_evolution.h"
#include "tiering.h"
#include "tierlake/iceberg_metadata.h"

static bool same_type(const tl_ice_type *a, const tl_ice_type *b)
{
	return a->id == b->id && a->precision == b->precision && a->scale == b->scale;
}

/*
 * The names the lake's fields must have: a renamed field's Postgres name
 * from tierdb.columns (written by the rename, extension/src/columns.c),
 * else its own. Returns an array of nfields strings (free_names).
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

static int check_fields(const tl_ice_table *lake, char **expected, const tdb_pg_column *cols, const char *label,
                        const char *step, tdb_lake_change *change, tl_error *err)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	for (int i = 0; i < schema->nfields; i++) {
		const tl_ice_field *f = &schema->fields[i];
		if (strcmp(expected[i], cols[i].name) != 0 || !same_type(&f->type, &cols[i].ice_type))
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "column %d of %s (%s) does not match field %d (%s) of its lake table %s; "
			                    "changing a registered table's columns other than renaming them and adding "
			                    "nullable ones is not supported yet, so %s cannot go on",
			                    i + 1, label, cols[i].name, f->id, f->name, lake->location, step);
		if (strcmp(f->name, cols[i].name) != 0)
			change->renamed = true;
	}
	return 0;
}

/* The columns after the lake's fields: added since, each nullable. */
static int check_added(const tl_ice_table *lake, const tdb_pg_column *cols, int ncols, const char *label,
                       const char *step, tdb_lake_change *change, tl_error *err)
{
	int nfields = tl_ice_metadata_current_schema(lake->metadata)->nfields;
	if (ncols < nfields)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "%s has %d columns but its lake table %s has %d fields; dropping a registered "
		                    "table's columns is not supported yet, so %s cannot go on",
		                    label, ncols, lake->location, nfields, step);
	for (int i = nfields; i < ncols; i++)
		if (cols[i].not_null)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "column %s of %s is NOT NULL but its lake table %s lacks it, so the rows there "
			                    "would read NULL; %s cannot go on",
			                    cols[i].name, label, lake->location, step);
	change->added = ncols - nfields;
	return 0;
}

int tdb_lake_columns_check(PGconn *c, int64_t table_id, const tl_ice_table *lake, const tdb_pg_column *cols,
                           int ncols, const char *label, const char *step, tdb_lake_change *change, tl_error *err)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	memset(change, 0, sizeof(*change));
	if (check_added(lake, cols, ncols, label, step, change, err) < 0)
		return -1;
	char **expected = expected_names(c, table_id, schema, err);
	if (expected == NULL)
		return -1;
	int rc = check_fields(lake, expected, cols, label, step, change, err);
	free_names(expected, schema->nfields);
	return rc;
}

/* Renames the lake's fields to the columns' names and adds the columns it lacks. */
static int apply_change(tl_ice_table *lake, const tdb_pg_column *cols, int ncols, const tdb_lake_change *change,
                        const char *label, tl_error *err)
{
	int nfields = ncols - change->added;
	if (change->renamed) {
		const char **names = tl_calloc((size_t)nfields + 1, sizeof(char *));
		for (int i = 0; i < nfields; i++)
			names[i] = cols[i].name;
		int rc = tl_ice_table_rename_fields(lake, names, nfields, NULL, err);
		free(names);
		if (rc < 0)
			return -1;
		tdb_log(label, "renamed the lake's fields to follow the table's renamed columns (%s)", lake->metadata_file);
	}
	if (change->added > 0) {
		tl_ice_field *fields = tl_calloc((size_t)change->added, sizeof(tl_ice_field));
		for (int i = 0; i < change->added; i++) {
			fields[i].name = cols[nfields + i].name;
			fields[i].type = cols[nfields + i].ice_type;
		}
		int rc = tl_ice_table_add_fields(lake, fields, change->added, err);
		free(fields);
		if (rc < 0)
			return -1;
		tdb_log(label, "added %d field%s to the lake for the table's added columns (%s)", change->added,
		        change->added == 1 ? "" : "s", lake->metadata_file);
	}
	return 0;
}

/* Under the lake lock, on the lake as it is now: checks again and applies what changed. */
static int evolve(PGconn *c, int64_t table_id, tl_ice_table *lake, const tdb_pg_column *cols, int ncols,
                  const char *label, const char *step, tl_error *err)
{
	if (tdb_lake_lock(c, table_id, true, err) < 0)
		return -1;
	tdb_lake_change change;
	int rc = tl_ice_table_refresh(lake, err);
	if (rc == 0)
		rc = tdb_lake_columns_check(c, table_id, lake, cols, ncols, label, step, &change, err);
	if (rc == 0)
		rc = apply_change(lake, cols, ncols, &change, label, err);
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_lake_lock(c, table_id, false, &ignored);
	return rc;
}

static bool changed(const tdb_lake_change *change)
{
	return change->renamed || change->added > 0;
}

int tdb_lake_follow_columns(PGconn *c, int64_t table_id, tl_ice_table *lake, const tdb_pg_column *cols, int ncols,
                            const char *label, const char *step, tl_error *err)
{
	tdb_lake_change change;
	if (tdb_lake_columns_check(c, table_id, lake, cols, ncols, label, step, &change, err) < 0)
		return -1;
	return changed(&change) ? evolve(c, table_id, lake, cols, ncols, label, step, err) : 0;
}

int tdb_follow_column_changes(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	/* A lake that does not open, or columns that do not match, are left to the steps that write to report. */
	tl_error quiet;
	tl_error_clear(&quiet);
	tl_ice_table *lake = tl_ice_table_open(t->lake_table_ref, &quiet);
	if (lake == NULL)
		return 0;
	tdb_pg_column *cols = NULL;
	int ncols = 0;
	tdb_lake_change change = {0};
	int rc = tdb_pg_table_columns(c, (uint32_t)t->table_id, &cols, &ncols, err);
	if (rc == 0 &&
	    tdb_lake_columns_check(c, t->table_id, lake, cols, ncols, tdb_table_label(t), "evolving the lake", &change,
	                           &quiet) == 0 &&
	    changed(&change))
		rc = evolve(c, t->table_id, lake, cols, ncols, tdb_table_label(t), "evolving the lake", err);
	tdb_pg_columns_free(cols, ncols);
	tl_ice_table_free(lake);
	return rc;
}
