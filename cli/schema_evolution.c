/*
 * schema_evolution.c: carrying ALTER TABLE of a registered table into its
 * lake (SPEC §6, docs/schema-changes.md): RENAME COLUMN, DROP COLUMN, ADD
 * COLUMN and the type widenings the DDL guard lets through.
 *
 * Postgres changes the columns at once; the DDL guard records in the same
 * transaction what the lake cannot tell by itself (extension/src/columns.c):
 * which field a renamed column is and which fields are no column any more
 * (tierdb.columns), and the value an added column has in the rows already
 * in the lake (tierdb.column_defaults). The lake follows at the daemon's
 * next cycle, and before tiering or a fold writes files: in one
 * metadata-only commit (tl_ice_table_evolve_schema) its dropped fields go,
 * the others take their column's name and type (int to long, float to
 * double, decimal precision up: Iceberg's promotions), and the added
 * columns become new optional fields, with their default as the field's
 * initial-default, which every engine gives the rows of the files written
 * before. Every field keeps its id, so those files read on by id. Readers
 * in Postgres and tierdb-spark take the default from the catalog instead
 * (also before the lake has the field): the rows of files with a data
 * sequence number up to the lake's last-sequence-number when the field was
 * added, which is recorded first.
 *
 * The evolution is not journaled like the steps that write files: it
 * leaves nothing to clean up and is idempotent; a daemon that dies around
 * it finds the lake either evolved already or not, and evolves it again.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "pg.h"
#include "schema_evolution.h"
#include "tiering.h"
#include "tierlake/iceberg_metadata.h"

bool tdb_lake_change_pending(const tdb_lake_change *change)
{
	return change->renamed > 0 || change->dropped > 0 || change->widened > 0 || change->added > 0;
}

void tdb_lake_change_free(tdb_lake_change *change)
{
	for (int i = change->nfields - change->added; change->defaults != NULL && i < change->nfields; i++) {
		free(change->defaults[i]);
		free(change->fields[i].initial_default);
	}
	free(change->defaults);
	free(change->fields);
	memset(change, 0, sizeof(*change));
}

static bool same_type(const tl_ice_type *a, const tl_ice_type *b)
{
	return a->id == b->id && a->precision == b->precision && a->scale == b->scale;
}

/* Iceberg's type promotions, which files written before read through (file_projection.c). */
static bool widens(const tl_ice_type *from, const tl_ice_type *to)
{
	if (from->id == TL_ICE_INT)
		return to->id == TL_ICE_LONG;
	if (from->id == TL_ICE_FLOAT)
		return to->id == TL_ICE_DOUBLE;
	return from->id == TL_ICE_DECIMAL && to->id == TL_ICE_DECIMAL && to->scale == from->scale &&
	       to->precision > from->precision;
}

/* What tierdb.columns and tierdb.column_defaults say of the table (columns.c writes them). */
typedef struct column_records {
	PGresult *fields;   /* field_id, column_name (NULL: dropped) */
	PGresult *defaults; /* column_name, default_value */
} column_records;

static int read_records(PGconn *c, int64_t table_id, column_records *out, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id};
	out->fields = tdb_pg_query(c, "reading the changed columns",
	                           "SELECT field_id, column_name FROM tierdb.columns WHERE table_id = $1", 1, params, err);
	out->defaults = out->fields == NULL ? NULL
	                                    : tdb_pg_query(c, "reading the added columns' defaults",
	                                                   "SELECT column_name, default_value FROM tierdb.column_defaults"
	                                                   " WHERE table_id = $1",
	                                                   1, params, err);
	return out->defaults != NULL ? 0 : -1;
}

static void free_records(column_records *r)
{
	PQclear(r->fields);
	PQclear(r->defaults);
}

/* The row of tierdb.columns for a field, or -1. */
static int field_record(const column_records *r, int32_t field_id)
{
	for (int i = 0; i < PQntuples(r->fields); i++)
		if (strtol(PQgetvalue(r->fields, i, 0), NULL, 10) == field_id)
			return i;
	return -1;
}

/* The default the lake's rows read for an added column (its type's text form), or NULL. */
static const char *column_default(const column_records *r, const char *column)
{
	for (int i = 0; i < PQntuples(r->defaults); i++)
		if (strcmp(PQgetvalue(r->defaults, i, 0), column) == 0)
			return PQgetvalue(r->defaults, i, 1);
	return NULL;
}

/* ISO 8601's plain form: years 1 to 9999 (no BC, no five digits), not infinity. */
#define FOUR_DIGIT_YEAR(v) "isfinite(" v ") AND extract(year FROM " v ") BETWEEN 1 AND 9999"

/*
 * A default as Iceberg's single-value JSON for the field's type (decimals,
 * dates, times, timestamps, uuids as strings; binary as hex), computed by
 * the server from the column's own type; NULL (no initial-default, those
 * rows read null in other engines) for a value JSON cannot hold: NaN,
 * infinities, dates outside years 1 to 9999. The daemon's session may have any TimeZone: timestamptz is
 * rendered in UTC.
 */
static int initial_default_json(PGconn *c, int64_t table_id, const tdb_pg_column *col, const char *value,
                                char **out, tl_error *err)
{
	static const struct {
		tl_ice_type_id type;
		const char *expr;
	} forms[] = {
		{TL_ICE_FLOAT, "CASE WHEN v::text IN ('NaN', 'Infinity', '-Infinity') THEN NULL ELSE to_json(v) END"},
		{TL_ICE_DOUBLE, "CASE WHEN v::text IN ('NaN', 'Infinity', '-Infinity') THEN NULL ELSE to_json(v) END"},
		{TL_ICE_DECIMAL, "CASE WHEN v::text IN ('NaN', 'Infinity', '-Infinity') THEN NULL ELSE to_json(v::text) END"},
		{TL_ICE_DATE, "CASE WHEN " FOUR_DIGIT_YEAR("v") " THEN to_json(to_char(v, 'YYYY-MM-DD')) END"},
		{TL_ICE_TIME, "to_json(v::text)"},
		{TL_ICE_TIMESTAMP, "CASE WHEN " FOUR_DIGIT_YEAR("v") " THEN to_json(to_char(v, 'YYYY-MM-DD\"T\"HH24:MI:SS.US')) END"},
		{TL_ICE_TIMESTAMPTZ, "CASE WHEN " FOUR_DIGIT_YEAR("v AT TIME ZONE 'UTC'") " THEN to_json(to_char(v AT TIME ZONE 'UTC',"
		                     " 'YYYY-MM-DD\"T\"HH24:MI:SS.US') || '+00:00') END"},
		{TL_ICE_STRING, "to_json(v::text)"},
		{TL_ICE_UUID, "to_json(v::text)"},
		{TL_ICE_BINARY, "to_json(encode(v::bytea, 'hex'))"},
	};
	const char *expr = "to_json(v)"; /* boolean, int, long */
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (forms[i].type == col->ice_type.id)
			expr = forms[i].expr;
	char id[24];
	tdb_int_text(table_id, id);
	const char *name_params[] = {id};
	PGresult *named = tdb_pg_query(c, "naming the table", "SELECT $1::bigint::oid::regclass::text", 1, name_params, err);
	if (named == NULL)
		return -1;
	/* The value is read by the column's own input function, as the readers in Postgres read it. */
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_printf(&sql, "SELECT (%s)::text FROM (SELECT (jsonb_populate_record(NULL::%s, jsonb_build_object($1::text, $2::text))).",
	              expr, PQgetvalue(named, 0, 0));
	tdb_pg_quote_ident(col->name, &sql);
	tl_buf_append_str(&sql, " AS v) s");
	PQclear(named);
	const char *params[] = {col->name, value};
	PGresult *res = tdb_pg_query(c, "rendering an added column's default for the lake", tdb_buf_cstr(&sql), 2, params,
	                             err);
	tl_buf_free(&sql);
	if (res == NULL)
		return -1;
	*out = PQgetisnull(res, 0, 0) ? NULL : tl_strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

static int mismatch(tl_error *err, const tl_ice_table *lake, const char *label, const char *step, const char *column,
                    int position, const tl_ice_field *f)
{
	return tl_error_set(err, TL_ERR_UNSUPPORTED,
	                    "column %d of %s (%s) does not match field %d (%s) of its lake table %s, and "
	                    "tierdb.columns records no change that explains it (was the DDL guard disabled?); "
	                    "%s cannot go on",
	                    position, label, column, f->id, f->name, lake->location, step);
}

/* Pairs the kept fields with the first columns; the rest were added. */
static int plan_change(const tl_ice_table *lake, const column_records *r, const tdb_pg_column *cols, int ncols,
                       const char *label, const char *step, tdb_lake_change *change, tl_error *err)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	change->fields = tl_calloc((size_t)ncols + 1, sizeof(tl_ice_field));
	change->defaults = tl_calloc((size_t)ncols + 1, sizeof(char *));
	int kept = 0;
	for (int i = 0; i < schema->nfields; i++) {
		const tl_ice_field *f = &schema->fields[i];
		int rec = field_record(r, f->id);
		if (rec >= 0 && PQgetisnull(r->fields, rec, 1)) {
			change->dropped++;
			continue;
		}
		const char *name = rec >= 0 ? PQgetvalue(r->fields, rec, 1) : f->name;
		if (kept == ncols)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "field %d (%s) of the lake table %s is no column of %s, and tierdb.columns does "
			                    "not record it dropped (was the DDL guard disabled?); %s cannot go on",
			                    f->id, f->name, lake->location, label, step);
		const tdb_pg_column *col = &cols[kept];
		bool widened = widens(&f->type, &col->ice_type);
		if (strcmp(name, col->name) != 0 || (!same_type(&f->type, &col->ice_type) && !widened))
			return mismatch(err, lake, label, step, col->name, kept + 1, f);
		change->renamed += strcmp(f->name, col->name) != 0;
		change->widened += widened;
		change->fields[kept] = *f; /* shallow: the new schema copies */
		change->fields[kept].name = col->name;
		change->fields[kept].type = col->ice_type;
		kept++;
	}
	change->added = ncols - kept;
	change->nfields = ncols;
	for (int i = kept; i < ncols; i++) {
		const char *value = column_default(r, cols[i].name);
		if (cols[i].not_null && value == NULL)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "column %s of %s is NOT NULL without a default for the rows already in its "
			                    "lake table %s, which lacks it, so they would read NULL; %s cannot go on",
			                    cols[i].name, label, lake->location, step);
		change->fields[i].name = cols[i].name;
		change->fields[i].type = cols[i].ice_type;
		change->defaults[i] = value != NULL ? tl_strdup(value) : NULL;
	}
	return 0;
}

int tdb_lake_columns_check(PGconn *c, int64_t table_id, const tl_ice_table *lake, const tdb_pg_column *cols,
                           int ncols, const char *label, const char *step, tdb_lake_change *change, tl_error *err)
{
	memset(change, 0, sizeof(*change));
	column_records r;
	if (read_records(c, table_id, &r, err) < 0)
		return -1;
	int rc = plan_change(lake, &r, cols, ncols, label, step, change, err);
	free_records(&r);
	if (rc < 0)
		tdb_lake_change_free(change);
	return rc;
}

/*
 * Records, for the added columns with a default, the lake's
 * last-sequence-number before their fields exist: every file written
 * until then predates them and reads their default (columns.h).
 */
static int record_added_since(PGconn *c, int64_t table_id, const tl_ice_table *lake, const tdb_lake_change *change,
                              tl_error *err)
{
	char id[24], sequence[24];
	tdb_int_text(table_id, id);
	tdb_int_text(lake->metadata->last_sequence_number, sequence);
	for (int i = change->nfields - change->added; i < change->nfields; i++) {
		if (change->defaults[i] == NULL)
			continue;
		const char *params[] = {id, sequence, change->fields[i].name};
		if (tdb_pg_exec(c, "recording since when the lake has an added column",
		                "UPDATE tierdb.column_defaults SET lake_sequence_number = $2"
		                " WHERE table_id = $1 AND column_name = $3",
		                3, params, err) < 0)
			return -1;
	}
	return 0;
}

static void log_change(const char *label, const tdb_lake_change *change, const tl_ice_table *lake)
{
	tdb_log(label,
	        "the lake follows the table's columns: %d renamed, %d dropped, %d widened, %d added (%s)",
	        change->renamed, change->dropped, change->widened, change->added, lake->metadata_file);
}

/* Under the lake lock, on the lake as it is now: checks again and publishes the evolved schema. */
static int evolve(PGconn *c, int64_t table_id, tl_ice_table *lake, const tdb_pg_column *cols, int ncols,
                  const char *label, const char *step, tl_error *err)
{
	if (tdb_lake_lock(c, table_id, true, err) < 0)
		return -1;
	tdb_lake_change change = {0};
	int rc = tl_ice_table_refresh(lake, err);
	if (rc == 0)
		rc = tdb_lake_columns_check(c, table_id, lake, cols, ncols, label, step, &change, err);
	if (rc == 0 && tdb_lake_change_pending(&change)) {
		for (int i = change.nfields - change.added; rc == 0 && i < change.nfields; i++)
			if (change.defaults[i] != NULL)
				rc = initial_default_json(c, table_id, &cols[i], change.defaults[i], &change.fields[i].initial_default,
				                          err);
		if (rc == 0)
			rc = record_added_since(c, table_id, lake, &change, err);
		if (rc == 0)
			rc = tl_ice_table_evolve_schema(lake, change.fields, change.nfields, NULL, err);
		if (rc == 0)
			log_change(label, &change, lake);
	}
	tdb_lake_change_free(&change);
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_lake_lock(c, table_id, false, &ignored);
	return rc;
}

int tdb_lake_follow_columns(PGconn *c, int64_t table_id, tl_ice_table *lake, const tdb_pg_column *cols, int ncols,
                            const char *label, const char *step, tl_error *err)
{
	tdb_lake_change change;
	if (tdb_lake_columns_check(c, table_id, lake, cols, ncols, label, step, &change, err) < 0)
		return -1;
	bool pending = tdb_lake_change_pending(&change);
	tdb_lake_change_free(&change);
	return pending ? evolve(c, table_id, lake, cols, ncols, label, step, err) : 0;
}

int tdb_follow_column_changes(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	/* A lake that does not open, or columns that do not match, are left to the steps that write to report. */
	tl_error quiet;
	tl_error_clear(&quiet);
	tl_ice_table *lake = tdb_lake_open(t, &quiet);
	if (lake == NULL)
		return 0;
	tdb_pg_column *cols = NULL;
	int ncols = 0;
	tdb_lake_change change = {0};
	int rc = tdb_pg_table_columns(c, (uint32_t)t->table_id, &cols, &ncols, err);
	if (rc == 0 &&
	    tdb_lake_columns_check(c, t->table_id, lake, cols, ncols, tdb_table_label(t), "evolving the lake", &change,
	                           &quiet) == 0 &&
	    tdb_lake_change_pending(&change))
		rc = evolve(c, t->table_id, lake, cols, ncols, tdb_table_label(t), "evolving the lake", err);
	tdb_lake_change_free(&change);
	tdb_pg_columns_free(cols, ncols);
	tl_ice_table_free(lake);
	return rc;
}
