/*
 * schema_update.c: schema evolution of path-based Iceberg tables, a
 * metadata-only commit (no snapshot), as Java's UpdateSchema does it.
 *
 * tl_ice_table_evolve_schema publishes the list of top-level fields the
 * caller wants, in its order, and checks it against the current schema the
 * way the Iceberg spec's evolution rules do: a listed field keeps its id
 * (so files written under any earlier schema keep reading by Parquet field
 * id, file_projection.c) and may be renamed, promoted (int to long, float
 * to double, a decimal to more precision at the same scale: every stored
 * value reads as the wider type) or relaxed to optional; a new field takes
 * the next id after last-column-id, which never goes back, so a dropped
 * field's id is never reused and files that still hold the dropped column
 * cannot leak it into a later field; a field left out is dropped, unless
 * an identifier field, the default partition spec or the sort order still
 * needs it. These are the changes TierDB carries for ALTER TABLE (RENAME,
 * ADD, DROP COLUMN and type widening, docs/schema-changes.md).
 * Snapshots keep naming the schema they were written with, so reading an
 * older snapshot sees that schema.
 *
 * Promoting a field that any partition spec uses as a source is refused:
 * manifests store partition values in the type their spec had when they
 * were written, and scan planning pairs delete files with data files by
 * those values' bytes, so an int and a long of the same value would no
 * longer be the same partition.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_value.h"
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

/* A schema of `fields` (checked: ids positive and unique, names unique) with current's identifier fields. */
static int new_schema(const tl_ice_schema *current, int32_t schema_id, const tl_ice_field *fields, int nfields,
                      tl_ice_schema *out, tl_error *err)
{
	if (tl_ice_schema_init(out, schema_id, fields, nfields, err) < 0)
		return -1;
	out->nidentifier_ids = current->nidentifier_ids;
	out->identifier_ids = tl_calloc((size_t)current->nidentifier_ids + 1, sizeof(int32_t));
	if (out->identifier_ids == NULL) {
		out->nidentifier_ids = 0;
		tl_ice_schema_free(out);
		return tl_error_nomem(err, "for a new schema");
	}
	for (int i = 0; i < current->nidentifier_ids; i++)
		out->identifier_ids[i] = current->identifier_ids[i];
	return 0;
}

/* md with `schema` (taken over) added and made current; -1 when out of memory (schema not taken). */
static int add_current_schema(tl_ice_table_metadata *md, tl_ice_schema *schema)
{
	tl_ice_schema *schemas = tl_realloc(md->schemas, sizeof(tl_ice_schema) * (size_t)(md->nschemas + 1));
	if (schemas == NULL)
		return -1;
	md->schemas = schemas;
	md->schemas[md->nschemas++] = *schema;
	md->current_schema_id = schema->schema_id;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Publishes `schema` (taken over), given the next schema id, as the current
 * one in the version after t's current one.
 */
static int publish_schema(tl_ice_table *t, tl_ice_schema *schema, tl_error *err)
{
	const tl_ice_table_metadata *base = t->metadata;
	const char *metadata_dir = tl_ice_table_commit_dir(t, err);
	tl_ice_table_metadata *md = metadata_dir != NULL ? tl_ice_commit_next_metadata(t, err) : NULL;
	if (md == NULL) {
		tl_ice_schema_free(schema);
		return -1;
	}
	int32_t max_id = tl_ice_schema_max_id(schema);
	schema->schema_id = next_schema_id(base);
	if (add_current_schema(md, schema) < 0) {
		tl_ice_schema_free(schema);
		tl_ice_metadata_free(md);
		return tl_error_nomem(err, "publishing a new schema of %s", t->location);
	}
	if (max_id > md->last_column_id)
		md->last_column_id = max_id;
	md->format_version = 2;
	md->last_updated_ms = now_ms();
	return tl_ice_commit_publish(t, metadata_dir, md, err);
}

/* ------------------------------------------------- checking the request */

static const tl_ice_schema *current_schema(const tl_ice_table *t, tl_error *err)
{
	const tl_ice_schema *current = tl_ice_metadata_current_schema(t->metadata);
	if (current == NULL)
		tl_error_set(err, TL_ERR_CORRUPT, "table %s has no current schema", t->location);
	return current;
}

/* The top-level field of `schema` with this id, or NULL. */
static const tl_ice_field *top_level_field(const tl_ice_schema *schema, int32_t id)
{
	for (int i = 0; i < schema->nfields; i++)
		if (schema->fields[i].id == id)
			return &schema->fields[i];
	return NULL;
}

static bool is_identifier(const tl_ice_schema *schema, int32_t id)
{
	for (int i = 0; i < schema->nidentifier_ids; i++)
		if (schema->identifier_ids[i] == id)
			return true;
	return false;
}

/* Whether any partition spec of the table, current or older, takes values from field `id`. */
static bool is_partition_source(const tl_ice_table_metadata *md, int32_t id)
{
	for (int i = 0; i < md->nspecs; i++)
		for (int j = 0; j < md->specs[i].nfields; j++)
			if (md->specs[i].fields[j].source_id == id)
				return true;
	return false;
}

/*
 * Whether the Iceberg spec lets values of type `from` be read as `to`:
 * int to long, float to double, decimal(P, S) to decimal(P', S), P' > P.
 */
static bool is_promotion(const tl_ice_type *from, const tl_ice_type *to)
{
	switch (from->id) {
	case TL_ICE_INT:
		return to->id == TL_ICE_LONG;
	case TL_ICE_FLOAT:
		return to->id == TL_ICE_DOUBLE;
	case TL_ICE_DECIMAL:
		return to->id == TL_ICE_DECIMAL && to->scale == from->scale && to->precision > from->precision &&
		       to->precision <= TL_ICE_DECIMAL_MAX_PRECISION;
	default:
		return false;
	}
}

static int refuse_type_change(const tl_ice_table *t, const tl_ice_field *current, const tl_ice_type *to,
                              const char *why, tl_error *err)
{
	tl_buf from_text, to_text;
	tl_buf_init(&from_text);
	tl_buf_init(&to_text);
	tl_ice_type_text(&current->type, &from_text);
	tl_buf_append_byte(&from_text, 0);
	tl_ice_type_text(to, &to_text);
	tl_buf_append_byte(&to_text, 0);
	tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot change field \"%s\" (id %d) of table %s from %s to %s: %s",
	             current->name, (int)current->id, t->location, (const char *)from_text.data,
	             (const char *)to_text.data, why);
	tl_buf_free(&from_text);
	tl_buf_free(&to_text);
	return -1;
}

/* Checks that `wanted` may follow `current`, the field with its id: its type and its required flag. */
static int check_kept_field(const tl_ice_table *t, const tl_ice_schema *schema, const tl_ice_field *current,
                            const tl_ice_field *wanted, tl_error *err)
{
	if (!tl_ice_type_equal(&current->type, &wanted->type)) {
		if (!is_promotion(&current->type, &wanted->type))
			return refuse_type_change(t, current, &wanted->type,
			                          "Iceberg promotes only int to long, float to double and decimal(P, S) to "
			                          "decimal(P', S) with P' > P",
			                          err);
		if (is_partition_source(t->metadata, current->id))
			return refuse_type_change(t, current, &wanted->type,
			                          "a partition spec takes values from it, and its manifests keep them in the "
			                          "old type",
			                          err);
	}
	if (wanted->required && !current->required)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "field \"%s\" (id %d) of table %s is optional and cannot become required: files "
		                    "written before may hold nulls in it",
		                    current->name, (int)current->id, t->location);
	if (!wanted->required && current->required && is_identifier(schema, current->id))
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "field \"%s\" (id %d) of table %s is an identifier field, which must stay required",
		                    current->name, (int)current->id, t->location);
	return 0;
}

/* Checks a field to add: primitive, with a type Iceberg can hold. */
static int check_new_field(const tl_ice_table *t, const tl_ice_field *f, tl_error *err)
{
	const tl_ice_type *type = &f->type;
	if (!tl_ice_type_is_primitive(type->id))
		return tl_error_set(err, TL_ERR_UNSUPPORTED, "adding field \"%s\" to table %s: only primitive fields",
		                    f->name ? f->name : "", t->location);
	if (type->id == TL_ICE_DECIMAL && (type->precision < 1 || type->precision > TL_ICE_DECIMAL_MAX_PRECISION ||
	                                   type->scale < 0 || type->scale > type->precision))
		return tl_error_set(err, TL_ERR_INVALID,
		                    "adding field \"%s\" to table %s: decimal(%d, %d) is no decimal Iceberg can hold",
		                    f->name ? f->name : "", t->location, (int)type->precision, (int)type->scale);
	if (type->id == TL_ICE_FIXED && type->length < 1)
		return tl_error_set(err, TL_ERR_INVALID, "adding field \"%s\" to table %s: fixed[%d] has no bytes",
		                    f->name ? f->name : "", t->location, (int)type->length);
	if (f->initial_default == NULL)
		return 0;
	/* Checked as readers will parse it, so no table is published that cannot be read. */
	tl_arena arena;
	tl_arena_init(&arena, 256);
	tl_ice_value value;
	int rc = tl_ice_value_from_json(type, f->initial_default, &arena, &value, err);
	tl_arena_free(&arena);
	if (rc < 0)
		tl_error_prefix(err, "adding field \"%s\" to table %s: its initial-default", f->name ? f->name : "",
		                t->location);
	return rc;
}

/* The largest field id the table ever used: last-column-id, or more if a writer let it fall behind. */
static int32_t last_used_id(const tl_ice_table_metadata *md)
{
	int32_t last = md->last_column_id;
	for (int i = 0; i < md->nschemas; i++) {
		int32_t max = tl_ice_schema_max_id(&md->schemas[i]);
		if (max > last)
			last = max;
	}
	return last;
}

/*
 * The evolved schema's fields: `fields` checked against the current schema,
 * new ones given their ids and made optional, a kept field without a doc
 * keeping its current one. Shallow copies (the schema built from them
 * copies); NULL with err set.
 */
static tl_ice_field *resolve_fields(const tl_ice_table *t, const tl_ice_schema *current, const tl_ice_field *fields,
                                    int nfields, tl_error *err)
{
	tl_ice_field *out = tl_calloc((size_t)nfields + 1, sizeof(tl_ice_field));
	if (out == NULL) {
		tl_error_nomem(err, "evolving the schema of %s", t->location);
		return NULL;
	}
	int32_t next_id = last_used_id(t->metadata);
	for (int i = 0; i < nfields; i++) {
		out[i] = fields[i];
		if (fields[i].id <= 0) {
			if (check_new_field(t, &fields[i], err) < 0)
				goto fail;
			out[i].id = ++next_id;
			out[i].required = false;
			continue;
		}
		const tl_ice_field *kept = top_level_field(current, fields[i].id);
		if (kept == NULL) {
			tl_error_set(err, TL_ERR_INVALID,
			             "field id %d (\"%s\") is not a top-level field of the current schema of table %s; a new "
			             "field is given id 0",
			             (int)fields[i].id, fields[i].name ? fields[i].name : "", t->location);
			goto fail;
		}
		if (check_kept_field(t, current, kept, &fields[i], err) < 0)
			goto fail;
		if (out[i].doc == NULL)
			out[i].doc = kept->doc;
		/* What the rows written before the field read never changes (spec: initial-default). */
		out[i].initial_default = kept->initial_default;
	}
	return out;
fail:
	tl_free(out);
	return NULL;
}

/* The default sort order, or NULL (the unsorted order may be absent from old metadata). */
static const tl_ice_sort_order *default_sort_order(const tl_ice_table_metadata *md)
{
	for (int i = 0; i < md->nsort_orders; i++)
		if (md->sort_orders[i].order_id == md->default_sort_order_id)
			return &md->sort_orders[i];
	return NULL;
}

static int refuse_drop(const tl_ice_table *t, const tl_ice_schema *current, int32_t id, const char *why,
                       tl_error *err)
{
	const tl_ice_field *f = tl_ice_schema_find_id(current, id);
	return tl_error_set(err, TL_ERR_UNSUPPORTED, "cannot drop field \"%s\" (id %d) of table %s: %s",
	                    f ? f->name : "?", (int)id, t->location, why);
}

/*
 * Refuses dropping a field (or a struct holding it) that the table still
 * needs: an identifier field, or a source of the default partition spec
 * or of the default sort order, which new files are written by.
 */
static int check_dropped(const tl_ice_table *t, const tl_ice_schema *current, const tl_ice_schema *evolved,
                         tl_error *err)
{
	for (int i = 0; i < current->nidentifier_ids; i++)
		if (tl_ice_schema_find_id(evolved, current->identifier_ids[i]) == NULL)
			return refuse_drop(t, current, current->identifier_ids[i],
			                   "it is an identifier field (identifier-field-ids)", err);
	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(t->metadata);
	for (int i = 0; spec != NULL && i < spec->nfields; i++)
		if (tl_ice_schema_find_id(evolved, spec->fields[i].source_id) == NULL)
			return refuse_drop(t, current, spec->fields[i].source_id, "the table is partitioned by it", err);
	const tl_ice_sort_order *order = default_sort_order(t->metadata);
	for (int i = 0; order != NULL && i < order->nfields; i++)
		if (tl_ice_schema_find_id(evolved, order->fields[i].source_id) == NULL)
			return refuse_drop(t, current, order->fields[i].source_id, "the table's sort order uses it", err);
	return 0;
}

/* ------------------------------------------------------------- evolving */

int tl_ice_table_evolve_schema(tl_ice_table *t, const tl_ice_field *fields, int nfields, bool *changed,
                               tl_error *err)
{
	if (changed != NULL)
		*changed = false;
	const tl_ice_schema *current = current_schema(t, err);
	if (current == NULL)
		return -1;
	if (nfields <= 0 || fields == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "evolving the schema of table %s: a schema needs a field",
		                    t->location);
	tl_ice_field *resolved = resolve_fields(t, current, fields, nfields, err);
	if (resolved == NULL)
		return -1;
	tl_ice_schema evolved;
	int rc = new_schema(current, current->schema_id, resolved, nfields, &evolved, err);
	tl_free(resolved);
	if (rc < 0) {
		tl_error_prefix(err, "evolving the schema of table %s", t->location);
		return -1;
	}
	if (check_dropped(t, current, &evolved, err) < 0) {
		tl_ice_schema_free(&evolved);
		return -1;
	}
	if (tl_ice_schema_equal(current, &evolved)) {
		tl_ice_schema_free(&evolved);
		return 0;
	}
	if (publish_schema(t, &evolved, err) < 0) {
		tl_error_prefix(err, "evolving the schema of table %s", t->location);
		return -1;
	}
	if (changed != NULL)
		*changed = true;
	return 0;
}

/* The current schema's fields, shallow, with room for `extra` more after them; NULL when out of memory. */
static tl_ice_field *current_fields(const tl_ice_schema *current, int extra)
{
	tl_ice_field *fields = tl_calloc((size_t)current->nfields + (size_t)extra + 1, sizeof(tl_ice_field));
	if (fields == NULL)
		return NULL;
	for (int i = 0; i < current->nfields; i++)
		fields[i] = current->fields[i];
	return fields;
}

int tl_ice_table_rename_fields(tl_ice_table *t, const char *const *names, int nnames, bool *changed,
                               tl_error *err)
{
	if (changed != NULL)
		*changed = false;
	const tl_ice_schema *current = current_schema(t, err);
	if (current == NULL)
		return -1;
	if (nnames != current->nfields)
		return tl_error_set(err, TL_ERR_INVALID,
		                    "renaming the fields of table %s: %d names for a schema of %d fields", t->location,
		                    nnames, current->nfields);
	tl_ice_field *fields = current_fields(current, 0);
	if (fields == NULL)
		return tl_error_nomem(err, "renaming fields of %s", t->location);
	for (int i = 0; i < nnames; i++)
		fields[i].name = (char *)names[i];
	int rc = tl_ice_table_evolve_schema(t, fields, nnames, changed, err);
	tl_free(fields);
	return rc;
}

int tl_ice_table_add_fields(tl_ice_table *t, const tl_ice_field *added, int nadded, tl_error *err)
{
	const tl_ice_schema *current = current_schema(t, err);
	if (current == NULL)
		return -1;
	if (nadded < 0)
		return tl_error_set(err, TL_ERR_INVALID, "adding %d fields to table %s", nadded, t->location);
	tl_ice_field *fields = current_fields(current, nadded);
	if (fields == NULL)
		return tl_error_nomem(err, "adding fields to %s", t->location);
	for (int i = 0; i < nadded; i++) {
		fields[current->nfields + i] = added[i];
		fields[current->nfields + i].id = 0;  /* new: the next ids */
	}
	int rc = tl_ice_table_evolve_schema(t, fields, current->nfields + nadded, NULL, err);
	tl_free(fields);
	return rc;
}
