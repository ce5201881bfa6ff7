/*
 * ingest_adopt.c: Parquet files committed to the lake as they are (ingest_adopt.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "ingest_adopt.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_schema.h"
#include "tierlake/iceberg_transform.h"
#include "tierlake/storage.h"

/*
 * Whether a file's column holds exactly what the lake writes for the
 * field: the same physical and logical type (a plain INT32/INT64 and the
 * signed INT annotation of its width are the same thing).
 */
static bool same_column_type(const tl_pq_column *file, const tl_pq_column *lake)
{
	if (file->physical != lake->physical)
		return false;
	if (file->physical == TL_PQ_FIXED_LEN_BYTE_ARRAY && file->type_length != lake->type_length)
		return false;
	tl_pq_logical a = file->logical, b = lake->logical;
	int width = file->physical == TL_PQ_INT32 ? 32 : 64;
	if (a == TL_PQ_LOGICAL_INT && file->int_signed && file->int_bit_width == width)
		a = TL_PQ_LOGICAL_NONE;
	if (b == TL_PQ_LOGICAL_INT && lake->int_signed && lake->int_bit_width == width)
		b = TL_PQ_LOGICAL_NONE;
	if (a != b)
		return false;
	switch (a) {
	case TL_PQ_LOGICAL_DECIMAL:
		return file->precision == lake->precision && file->scale == lake->scale;
	case TL_PQ_LOGICAL_TIMESTAMP:
	case TL_PQ_LOGICAL_TIME:
		return file->unit == lake->unit && file->utc_adjusted == lake->utc_adjusted;
	default:
		return true;
	}
}

static void set_why(tdb_adopted_file *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_why(tdb_adopted_file *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->why_not, sizeof(a->why_not), fmt, ap);
	va_end(ap);
}

void tdb_adopt_consider(tdb_adopted_file *a, const tl_ice_table *lake, const char *path, uint64_t size,
                        const tl_pq_schema *schema, const int *map, int tk)
{
	memset(a, 0, sizeof(*a));
	tl_arena_init(&a->arena, 4096);
	a->source = tl_strdup(path);
	a->size = size;
	const tl_ice_schema *fields = tl_ice_metadata_current_schema(lake->metadata);
	a->tk_field = fields->fields[tk].id;
	bool *present = tl_calloc((size_t)fields->nfields + 1, sizeof(bool));
	for (int i = 0; i < schema->ncolumns && a->why_not[0] == '\0'; i++) {
		const tl_pq_column *col = &schema->columns[i];
		const tl_ice_field *field = &fields->fields[map[i]];
		tl_pq_column want;
		tl_error ignored;
		tl_error_clear(&ignored);
		if (col->field_id < 0)
			set_why(a, "its columns carry no Iceberg field ids (they were matched by name)");
		else if (tl_ice_field_to_pq_column(field, &want, &ignored) < 0 || !same_column_type(col, &want)) {
			tl_buf have, lake;
			tl_buf_init(&have);
			tl_buf_init(&lake);
			tl_pq_column_type_text(col, &have);
			tl_pq_column_type_text(&want, &lake);
			tl_buf_append_byte(&have, 0);
			tl_buf_append_byte(&lake, 0);
			set_why(a, "column \"%s\" is %s in the file, where the lake writes %s", col->name,
			        (const char *)have.data, (const char *)lake.data);
			tl_buf_free(&have);
			tl_buf_free(&lake);
		} else if (field->required && !col->required)
			set_why(a, "column \"%s\" is optional in the file, and the lake requires it", col->name);
		present[map[i]] = true;
	}
	for (int k = 0; k < fields->nfields && a->why_not[0] == '\0'; k++)
		if (fields->fields[k].required && !present[k])
			set_why(a, "a column the lake requires is missing from the file");
	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(lake->metadata);
	for (int k = 0; k < spec->nfields && a->why_not[0] == '\0'; k++)
		if (spec->fields[k].source_id != a->tk_field)
			set_why(a, "the lake table is partitioned on a column other than the tier key");
	free(present);
	a->adopt = a->why_not[0] == '\0';
}

void tdb_adopt_note_keys(tdb_adopted_file *a, const tl_pq_column *col, const tl_vector *vec, int64_t n)
{
	for (int64_t row = 0; row < n; row++) {
		if (tl_vector_is_null(vec, row))
			continue; /* a null key fails the ingest's rules */
		int64_t v = col->physical == TL_PQ_INT32 ? vec->v.i32[row] : vec->v.i64[row];
		if (!a->seen_key || v < a->min_key)
			a->min_key = v;
		if (!a->seen_key || v > a->max_key)
			a->max_key = v;
		a->seen_key = true;
	}
}

/* A tier key value as the lake's value of its field's type. */
static tl_ice_value key_value(const tl_ice_type *type, int64_t v)
{
	tl_ice_value value = {0};
	if (type->id == TL_ICE_INT || type->id == TL_ICE_DATE)
		value.v.i32 = (int32_t)v;
	else
		value.v.i64 = v;
	return value;
}

static bool same_result(const tl_ice_value *x, const tl_ice_value *y)
{
	if (x->is_null || y->is_null)
		return x->is_null == y->is_null;
	/* every transform of a tier key gives an int, long or date, in zeroed values (see the caller) */
	return x->v.i64 == y->v.i64;
}

void tdb_adopt_check_partition(tdb_adopted_file *a, const tl_ice_table *lake)
{
	if (!a->adopt)
		return;
	if (!a->seen_key) {
		a->adopt = false;
		set_why(a, "it holds no rows");
		return;
	}
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(lake->metadata);
	const tl_ice_field *field = NULL;
	for (int k = 0; k < schema->nfields; k++)
		if (schema->fields[k].id == a->tk_field)
			field = &schema->fields[k];
	a->npartition = spec->nfields;
	a->partition = tl_arena_alloc(&a->arena, sizeof(tl_ice_value) * (size_t)(spec->nfields + 1));
	tl_ice_value lo = key_value(&field->type, a->min_key), hi = key_value(&field->type, a->max_key);
	for (int k = 0; k < spec->nfields; k++) {
		tl_ice_value at_hi;
		tl_error err;
		tl_error_clear(&err);
		memset(&a->partition[k], 0, sizeof(tl_ice_value));
		memset(&at_hi, 0, sizeof(at_hi));
		if (tl_ice_transform_apply(&spec->fields[k].transform, &field->type, &lo, &a->partition[k], &err) < 0 ||
		    tl_ice_transform_apply(&spec->fields[k].transform, &field->type, &hi, &at_hi, &err) < 0 ||
		    !same_result(&a->partition[k], &at_hi)) {
			a->adopt = false;
			set_why(a, "its rows span several partitions of the lake table");
			return;
		}
	}
	tl_buf path;
	tl_buf_init(&path);
	tl_error err;
	tl_error_clear(&err);
	if (tl_ice_partition_path(spec, schema, a->partition, &path, &err) < 0) {
		a->adopt = false;
		set_why(a, "its partition has no path");
	} else {
		tl_buf_append_byte(&path, 0);
		a->partition_path = tl_strdup((const char *)path.data);
	}
	tl_buf_free(&path);
}

/* Whether the file lies under the table's location (then the lake may reference it in place). */
static char *in_place_path(const tdb_adopted_file *a, const tl_ice_table *lake)
{
	tl_error ignored;
	tl_error_clear(&ignored);
	char *file = tl_storage_canonical(a->source, &ignored);
	char *root = tl_storage_canonical(lake->location, &ignored);
	bool under = file != NULL && root != NULL && strncmp(file, root, strlen(root)) == 0 && file[strlen(root)] == '/';
	free(root);
	if (!under) {
		free(file);
		return NULL;
	}
	return file;
}

/* Copies the file byte for byte to `dest` (created exclusively). */
static int copy_file(const char *src, const char *dest, tl_error *err)
{
	tl_input *in = tl_storage_open_read(src, err);
	if (in == NULL)
		return -1;
	char *dir = tl_strdup(dest);
	char *slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	tl_output *out = tl_storage_make_dirs(dir, err) == 0 ? tl_storage_create(dest, TL_STORAGE_CREATE_EXCLUSIVE, err)
	                                                     : NULL;
	free(dir);
	int rc = out != NULL ? 0 : -1;
	enum { CHUNK = 1 << 20 };
	char *buf = tl_malloc(CHUNK);
	for (uint64_t off = 0; rc == 0 && off < in->size; off += CHUNK) {
		size_t len = in->size - off < CHUNK ? (size_t)(in->size - off) : CHUNK;
		rc = tl_input_read(in, off, buf, len, err);
		if (rc == 0)
			rc = tl_output_write(out, buf, len, err);
	}
	if (rc == 0)
		rc = out->finish(out, err);
	free(buf);
	tl_input_close(in);
	tl_output_close(out);
	if (rc < 0 && out != NULL) {
		tl_error ignored;
		tl_error_clear(&ignored);
		tl_storage_remove(dest, &ignored);
	}
	return rc;
}

int tdb_adopt_place(tdb_adopted_file *a, tl_ice_table *lake, const char *op_id, tl_error *err)
{
	char *path = in_place_path(a, lake);
	if (path == NULL) {
		tl_buf dest;
		tl_buf_init(&dest);
		if (tl_ice_table_new_data_path(lake, a->partition_path, op_id, &dest, err) < 0) {
			tl_buf_free(&dest);
			return -1;
		}
		tl_buf_append_byte(&dest, 0);
		path = tl_strdup((const char *)dest.data);
		tl_buf_free(&dest);
		if (copy_file(a->source, path, err) < 0) {
			free(path);
			return -1;
		}
		a->copied = true;
	}
	/* The entry's metrics come from the footer, as Iceberg's add_files takes them. */
	tl_input *in = tl_storage_open_read(path, err);
	tl_pq_reader *r = in != NULL ? tl_pq_reader_open(in, err) : NULL;
	int rc = r != NULL ? 0 : -1;
	memset(&a->file, 0, sizeof(a->file));
	if (rc == 0)
		rc = tl_ice_data_file_metrics(tl_ice_metadata_current_schema(lake->metadata), r, &a->arena, &a->file, err);
	if (rc == 0) {
		size_t len = strlen(path) + 1;
		char *stored = tl_arena_alloc(&a->arena, len);
		memcpy(stored, path, len);
		a->file.content = TL_ICE_CONTENT_DATA;
		a->file.file_path = stored;
		a->file.file_format = "PARQUET";
		a->file.file_size_in_bytes = (int64_t)a->size;
		a->file.npartition = a->npartition;
		a->file.partition = a->partition;
	}
	tl_pq_reader_free(r);
	tl_input_close(in);
	if (rc < 0 && a->copied) {
		tl_error ignored;
		tl_error_clear(&ignored);
		tl_storage_remove(path, &ignored);
		a->copied = false;
	}
	free(path);
	return rc;
}

void tdb_adopt_undo(tdb_adopted_file *a, const char *label)
{
	if (!a->copied)
		return;
	tl_error err;
	tl_error_clear(&err);
	if (tl_storage_remove(a->file.file_path, &err) < 0)
		tdb_log(label, "ingest: could not delete %s (an orphan now, no snapshot references it): %s",
		        a->file.file_path, err.message);
	a->copied = false;
}

void tdb_adopt_free(tdb_adopted_file *a)
{
	free(a->source);
	free(a->partition_path);
	tl_arena_free(&a->arena);
}
