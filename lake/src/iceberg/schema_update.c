/*
 * schema_update.c: schema evolution of path-based Iceberg tables, a
 * metadata-only commit (no snapshot), as Java's UpdateSchema does it.
 *
 * It renames top-level fields and adds optional ones, the changes TierDB
 * carries for ALTER TABLE ... RENAME COLUMN and ADD COLUMN
 * (docs/schema-changes.md): the new schema keeps every existing field id,
 * type and the identifier fields, a new field takes the next id after
 * last-column-id, so files written under any earlier schema keep reading
 * by Parquet field id (file_projection.c; a field a file lacks reads as
 * null), and snapshots keep naming the schema they were written with.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tierlake/iceberg_table.h"
#include "iceberg/commit_internal.h"
#include "iceberg/table_internal.h"

/* The next schema id: one past the largest in the metadata. */
static int32_t next_schema_id(const tl_ice_table_metadata *md)
{
	int32_t max = -1;
	for (int i = 0; i < md->nschemas; i++)
		if (md->schemas[i].schema_id > max)
			max = md->schemas[i].schema_id;
	return max + 1;
}

static bool names_equal(const tl_ice_schema *s, const char *const *names)
{
	for (int i = 0; i < s->nfields; i++)
		if (strcmp(s->fields[i].name, names[i]) != 0)
			return false;
	return true;
}

/* A schema of `fields` (checked: ids and names unique) with current's identifier fields, into *out. */
static int new_schema(const tl_ice_schema *current, int32_t schema_id, const tl_ice_field *fields, int nfields,
                      tl_ice_schema *out, tl_error *err)
{
	if (tl_ice_schema_init(out, schema_id, fields, nfields, err) < 0)
		return -1;
	out->nidentifier_ids = current->nidentifier_ids;
	out->identifier_ids = tl_calloc((size_t)current->nidentifier_ids + 1, sizeof(int32_t));
	for (int i = 0; i < current->nidentifier_ids; i++)
		out->identifier_ids[i] = current->identifier_ids[i];
	return 0;
}

/* md with `schema` (taken over) added and made current. */
static void add_current_schema(tl_ice_table_metadata *md, tl_ice_schema *schema)
{
	md->schemas = tl_realloc(md->schemas, sizeof(tl_ice_schema) * (size_t)(md->nschemas + 1));
	md->schemas[md->nschemas++] = *schema;
	md->current_schema_id = schema->schema_id;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Publishes `fields` (with the current schema's identifier fields) as a new
 * schema, made current, in the version after t's current one.
 */
static int publish_schema(tl_ice_table *t, const tl_ice_field *fields, int nfields, tl_error *err)
{
	const tl_ice_table_metadata *base = t->metadata;
	const tl_ice_schema *current = tl_ice_metadata_current_schema(base);
	const char *metadata_dir = tl_ice_table_commit_dir(t, err);
	if (metadata_dir == NULL)
		return -1;
	tl_ice_schema schema;
	if (new_schema(current, next_schema_id(base), fields, nfields, &schema, err) < 0)
		return -1;
	tl_ice_table_metadata *md = tl_ice_commit_copy_metadata(base, err);
	if (md == NULL) {
		tl_ice_schema_free(&schema);
		return -1;
	}
	char *previous = tl_ice_commit_base_location(t);
	tl_ice_commit_log_metadata(md, base->last_updated_ms, previous);
	free(previous);
	int32_t max_id = tl_ice_schema_max_id(&schema);
	add_current_schema(md, &schema);
	if (max_id > md->last_column_id)
		md->last_column_id = max_id;
	md->format_version = 2;
	md->last_updated_ms = now_ms();
	return tl_ice_commit_publish(t, metadata_dir, md, err);
}

int tl_ice_table_rename_fields(tl_ice_table *t, const char *const *names, int nnames, bool *changed,
                               tl_error *err)
{
	const tl_ice_schema *current = tl_ice_metadata_current_schema(t->metadata);
	if (changed != NULL)
		*changed = false;
	if (current == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "table %s has no current schema", t->location);
	if (nnames != current->nfields)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "renaming the fields of table %s: %d names for a schema of %d fields", t->location,
		                    nnames, current->nfields);
	if (names_equal(current, names))
		return 0;
	tl_ice_field *fields = tl_calloc((size_t)current->nfields + 1, sizeof(tl_ice_field));
	for (int i = 0; i < current->nfields; i++) {
		fields[i] = current->fields[i];  /* shallow: the new schema copies */
		fields[i].name = (char *)names[i];
	}
	int rc = publish_schema(t, fields, current->nfields, err);
	free(fields);
	if (rc < 0) {
		tl_error_prefix(err, "renaming the fields of table %s", t->location);
		return -1;
	}
	if (changed != NULL)
		*changed = true;
	return 0;
}

int tl_ice_table_add_fields(tl_ice_table *t, const tl_ice_field *added, int nadded, tl_error *err)
{
	const tl_ice_schema *current = tl_ice_metadata_current_schema(t->metadata);
	if (current == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "table %s has no current schema", t->location);
	int n = current->nfields + nadded;
	tl_ice_field *fields = tl_calloc((size_t)n + 1, sizeof(tl_ice_field));
	int32_t next_id = t->metadata->last_column_id;
	for (int i = 0; i < current->nfields; i++)
		fields[i] = current->fields[i];  /* shallow: the new schema copies */
	for (int i = 0; i < nadded; i++) {
		if (!tl_ice_type_is_primitive(added[i].type.id)) {
			free(fields);
			return tl_error_set(err, TL_ERR_UNSUPPORTED, "adding field %s to table %s: only primitive fields",
			                    added[i].name, t->location);
		}
		fields[current->nfields + i] = added[i];
		fields[current->nfields + i].id = ++next_id;
		fields[current->nfields + i].required = false;
	}
	int rc = publish_schema(t, fields, n, err);
	free(fields);
	if (rc < 0)
		tl_error_prefix(err, "adding fields to table %s", t->location);
	return rc;
}
