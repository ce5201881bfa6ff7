/*
 * writer.c: splits rows by partition into Parquet data files (or
 * equality-delete files) under a table's data/ directory, and describes
 * each finished file as a manifest entry's data file.
 *
 * Every distinct partition tuple seen is a `partition`, found through a
 * hash table keyed by the tuple's serialized bytes; a partition has at
 * most one open file at a time. A batch whose rows all fall in one
 * partition (the usual case: the daemon writes rows grouped by time) goes
 * to that file as it is; a mixed batch is split by gathering each
 * partition's rows into a scratch batch. Files roll over at the target
 * size, and the least recently used file is finished when too many are
 * open. Finished files are reopened to read their footers, so the metrics
 * come from exactly what was written.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/iceberg_writer.h"
#include "tierlake/storage.h"

typedef struct open_file {
	char *file_path;        /* as the manifest names it: the location's form */
	tl_output *out;
	tl_pq_writer *pq;
	int64_t *nan_counts;    /* per column: NaNs written (Parquet statistics do not count them) */
} open_file;

typedef struct partition {
	tl_bytes key;           /* serialized tuple (in the writer's arena) */
	uint64_t hash;
	tl_ice_value *values;   /* the tuple, deep-copied into the arena */
	char *path;             /* "name=value/..." (in the arena) */
	open_file *file;        /* NULL while no file is open */
	uint64_t last_used;
	int64_t *rows;          /* rows of the current batch routed here */
	int64_t nrows;
	int64_t rows_cap;
} partition;

struct tl_ice_writer {
	const tl_ice_table *table;
	const tl_ice_schema *schema;
	const tl_ice_partition_spec *spec;
	tl_ice_type partition_type;     /* struct of the spec's result types */
	int *source_column;             /* per spec field: batch column of its source */
	const tl_ice_type **source_type;
	tl_pq_schema *pq_schema;
	tl_ice_writer_options opts;
	int32_t content;
	int32_t *equality_ids;          /* in the arena */
	int nequality_ids;

	partition *partitions;
	int npartitions, partitions_cap;
	int *slots;                     /* hash table of partition indexes, -1 empty */
	int nslots;
	int nopen;
	uint64_t clock;

	tl_pq_batch *scratch;           /* gathers one partition's rows of a mixed batch */
	tl_vector *slice_columns;       /* the columns of a slice of a batch (slice_batch) */
	int *touched;                   /* partitions that received rows of this batch */
	tl_buf key;                     /* the current row's serialized tuple */
	tl_ice_value *row_values;       /* the current row's tuple */

	tl_ice_data_file *files;
	int nfiles, files_cap;
	char **created;                 /* locations of every file created */
	int ncreated, created_cap;
	int64_t rows;
	bool closed;
	bool failed;
	tl_arena arena;
};

void tl_ice_writer_options_init(tl_ice_writer_options *opts)
{
	tl_pq_writer_options_init(&opts->parquet);
	opts->target_file_bytes = TL_ICE_WRITER_TARGET_FILE_BYTES;
	opts->file_prefix = NULL;
	opts->bloom_identifier_fields = false;
	opts->bloom_field_ids = NULL;
	opts->nbloom_field_ids = 0;
}

const tl_pq_schema *tl_ice_writer_schema(const tl_ice_writer *w)
{
	return w->pq_schema;
}

int tl_ice_writer_nfiles(const tl_ice_writer *w)
{
	return w->nfiles;
}

const tl_ice_data_file *tl_ice_writer_file(const tl_ice_writer *w, int i)
{
	return i >= 0 && i < w->nfiles ? &w->files[i] : NULL;
}

int64_t tl_ice_writer_rows(const tl_ice_writer *w)
{
	return w->rows;
}

/* ------------------------------------------------------------- opening */

/* NULL when out of memory. */
static char *arena_strdup(tl_arena *a, const char *s, size_t len)
{
	char *p = tl_arena_alloc(a, len + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* NULL with err set when out of memory. */
static tl_ice_writer *writer_new(const tl_ice_table *t, const tl_ice_writer_options *opts, int32_t content,
                                 tl_error *err)
{
	tl_ice_writer *w = tl_calloc(1, sizeof(*w));
	if (w == NULL) {
		tl_error_nomem(err, "for an Iceberg writer");
		return NULL;
	}
	w->table = t;
	w->schema = tl_ice_metadata_current_schema(t->metadata);
	w->spec = tl_ice_metadata_default_spec(t->metadata);
	w->content = content;
	if (opts != NULL)
		w->opts = *opts;
	else
		tl_ice_writer_options_init(&w->opts);
	if (w->opts.target_file_bytes <= 0)
		w->opts.target_file_bytes = TL_ICE_WRITER_TARGET_FILE_BYTES;
	/* A file's size only grows as row groups flush: a row group larger than
	 * the target would defeat the rollover. */
	if (w->opts.parquet.row_group_bytes <= 0 || w->opts.parquet.row_group_bytes > w->opts.target_file_bytes)
		w->opts.parquet.row_group_bytes = w->opts.target_file_bytes;
	tl_arena_init(&w->arena, 16384);
	tl_buf_init(&w->key);
	w->nslots = 64;
	w->slots = tl_malloc(sizeof(int) * (size_t)w->nslots);
	if (w->slots == NULL) {
		tl_ice_writer_free(w);
		tl_error_nomem(err, "for an Iceberg writer");
		return NULL;
	}
	for (int i = 0; i < w->nslots; i++)
		w->slots[i] = -1;
	return w;
}

/*
 * Resolves each partition field's source to a column of the batch shape:
 * `ids[i]` is the field id of batch column i.
 */
static int resolve_sources(tl_ice_writer *w, const int32_t *ids, int nids, tl_error *err)
{
	if (w->schema == NULL || w->spec == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "table metadata has no current schema or default spec");
	if (tl_ice_partition_type(w->spec, w->schema, &w->partition_type, err) < 0)
		return -1;
	w->slice_columns = tl_calloc((size_t)(w->pq_schema->ncolumns ? w->pq_schema->ncolumns : 1), sizeof(tl_vector));
	int n = w->spec->nfields;
	w->source_column = tl_calloc((size_t)(n ? n : 1), sizeof(int));
	w->source_type = tl_calloc((size_t)(n ? n : 1), sizeof(*w->source_type));
	w->row_values = tl_calloc((size_t)(n ? n : 1), sizeof(tl_ice_value));
	if (w->slice_columns == NULL || w->source_column == NULL || w->source_type == NULL || w->row_values == NULL)
		return tl_error_nomem(err, "for an Iceberg writer");
	for (int i = 0; i < n; i++) {
		const tl_ice_partition_field *pf = &w->spec->fields[i];
		int col = -1;
		for (int c = 0; c < nids && col < 0; c++)
			if (ids[c] == pf->source_id)
				col = c;
		const tl_ice_field *src = tl_ice_schema_find_id(w->schema, pf->source_id);
		if (col < 0 || src == NULL) {
			if (w->content == TL_ICE_CONTENT_EQUALITY_DELETES)
				return tl_error_set(err, TL_ERR_INVALID,
				                    "equality deletes must include partition source field \"%s\" (id %d) "
				                    "among their columns, since a delete is scoped to its partition",
				                    src ? src->name : "?", (int)pf->source_id);
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "partition field \"%s\": source field id %d is not a top-level column",
			                    pf->name, (int)pf->source_id);
		}
		w->source_column[i] = col;
		w->source_type[i] = &src->type;
	}
	return 0;
}

/* Adds data file column `column` to the bloom filter columns being built, once. */
static void add_bloom_column(int *columns, int *n, int column)
{
	for (int k = 0; k < *n; k++)
		if (columns[k] == column)
			return;
	columns[(*n)++] = column;
}

/*
 * Adds the columns of the schema's identifier fields (the table's key,
 * with bloom_identifier_fields) and of bloom_field_ids (the columns a
 * table's policy names) to the Parquet writer's bloom filter columns, each
 * once; data file column i is the schema's top-level field i.
 */
static int add_field_blooms(tl_ice_writer *w, tl_error *err)
{
	const tl_pq_writer_options *pq = &w->opts.parquet;
	int nkey = w->opts.bloom_identifier_fields ? w->schema->nidentifier_ids : 0;
	int nnamed = w->opts.nbloom_field_ids > 0 ? w->opts.nbloom_field_ids : 0;
	if (nkey == 0 && nnamed == 0)
		return 0;
	if (nnamed > 0 && w->opts.bloom_field_ids == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "bloom filter field count %d without field ids", nnamed);
	int n = 0;
	int *columns = tl_arena_alloc(&w->arena, sizeof(int) * (size_t)(pq->nbloom_columns + nkey + nnamed + 1));
	if (columns == NULL)
		return tl_error_nomem(err, "for an Iceberg writer");
	for (int k = 0; k < pq->nbloom_columns; k++)
		add_bloom_column(columns, &n, pq->bloom_columns[k]);
	for (int k = 0; k < nkey + nnamed; k++) {
		int32_t id = k < nkey ? w->schema->identifier_ids[k] : w->opts.bloom_field_ids[k - nkey];
		int column = -1;
		for (int i = 0; i < w->schema->nfields && column < 0; i++)
			if (w->schema->fields[i].id == id)
				column = i;
		if (column < 0 && k >= nkey)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "bloom filter field id %d is not a top-level field of the table's current schema",
			                    (int)id);
		if (column >= 0)
			add_bloom_column(columns, &n, column);
	}
	w->opts.parquet.bloom_columns = columns;
	w->opts.parquet.nbloom_columns = n;
	/* Copied: the caller's array need only live until open returns. */
	w->opts.bloom_field_ids = NULL;
	w->opts.nbloom_field_ids = 0;
	return 0;
}

tl_ice_writer *tl_ice_writer_open_data(const tl_ice_table *t, const tl_ice_writer_options *opts, tl_error *err)
{
	tl_ice_writer *w = writer_new(t, opts, TL_ICE_CONTENT_DATA, err);
	if (w == NULL)
		return NULL;
	if (w->schema == NULL)
		tl_error_set(err, TL_ERR_CORRUPT, "table metadata has no current schema");
	else
		w->pq_schema = tl_ice_schema_to_pq_schema(w->schema, err);
	if (w->pq_schema == NULL) {
		tl_ice_writer_free(w);
		return NULL;
	}
	int32_t *ids = tl_malloc(sizeof(int32_t) * (size_t)(w->schema->nfields ? w->schema->nfields : 1));
	if (ids == NULL) {
		tl_ice_writer_free(w);
		tl_error_nomem(err, "for an Iceberg writer");
		return NULL;
	}
	for (int i = 0; i < w->schema->nfields; i++)
		ids[i] = w->schema->fields[i].id;
	int rc = resolve_sources(w, ids, w->schema->nfields, err);
	tl_free(ids);
	if (rc == 0)
		rc = add_field_blooms(w, err);
	if (rc < 0) {
		tl_ice_writer_free(w);
		return NULL;
	}
	return w;
}

/*
 * The Parquet shape of an equality-delete file: the given columns, in
 * order. They must include every equality id: a delete matches on those
 * and may carry more columns (Iceberg allows it), such as a partition
 * source that scopes the delete without being part of the key.
 */
static int build_delete_schema(tl_ice_writer *w, const int32_t *columns, int ncolumns, const int32_t *ids, int nids,
                               tl_error *err)
{
	if (nids <= 0)
		return tl_error_set(err, TL_ERR_INVALID, "equality deletes need at least one equality field id");
	for (int i = 0; i < nids; i++) {
		bool found = false;
		for (int k = 0; k < ncolumns && !found; k++)
			found = columns[k] == ids[i];
		for (int k = 0; k < i; k++)
			if (ids[k] == ids[i])
				return tl_error_set(err, TL_ERR_INVALID, "equality field id %d is listed twice", (int)ids[i]);
		if (!found)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "equality field id %d is not among the delete file's columns", (int)ids[i]);
	}
	w->pq_schema = tl_pq_schema_new();
	if (w->pq_schema == NULL)
		return tl_error_nomem(err, "for a delete file's schema");
	for (int i = 0; i < ncolumns; i++) {
		const tl_ice_field *f = NULL;
		for (int k = 0; k < w->schema->nfields && f == NULL; k++)
			if (w->schema->fields[k].id == columns[i])
				f = &w->schema->fields[k];
		if (f == NULL)
			return tl_error_set(err, TL_ERR_INVALID,
			                    "delete column field id %d is not a top-level field of the table's schema",
			                    (int)columns[i]);
		for (int k = 0; k < i; k++)
			if (columns[k] == columns[i])
				return tl_error_set(err, TL_ERR_INVALID, "delete column field id %d is listed twice",
				                    (int)columns[i]);
		tl_pq_column col;
		if (tl_ice_field_to_pq_column(f, &col, err) < 0)
			return -1;
		if (tl_pq_schema_add(w->pq_schema, &col) < 0)
			return tl_error_nomem(err, "for a delete file's schema");
	}
	return tl_pq_schema_validate(w->pq_schema, err);
}

tl_ice_writer *tl_ice_writer_open_deletes(const tl_ice_table *t, const int32_t *columns, int ncolumns,
                                          const int32_t *equality_ids, int nequality_ids,
                                          const tl_ice_writer_options *opts, tl_error *err)
{
	tl_ice_writer *w = writer_new(t, opts, TL_ICE_CONTENT_EQUALITY_DELETES, err);
	if (w == NULL)
		return NULL;
	if (w->schema == NULL) {
		tl_error_set(err, TL_ERR_CORRUPT, "table metadata has no current schema");
		tl_ice_writer_free(w);
		return NULL;
	}
	/* Delete files are read whole by the key; bloom filters would only cost bytes. */
	w->opts.bloom_field_ids = NULL;
	w->opts.nbloom_field_ids = 0;
	if (build_delete_schema(w, columns, ncolumns, equality_ids, nequality_ids, err) < 0 ||
	    resolve_sources(w, columns, ncolumns, err) < 0) {
		tl_ice_writer_free(w);
		return NULL;
	}
	w->nequality_ids = nequality_ids;
	w->equality_ids = tl_arena_alloc(&w->arena, sizeof(int32_t) * (size_t)nequality_ids);
	if (w->equality_ids == NULL) {
		tl_ice_writer_free(w);
		tl_error_nomem(err, "for an Iceberg writer");
		return NULL;
	}
	memcpy(w->equality_ids, equality_ids, sizeof(int32_t) * (size_t)nequality_ids);
	return w;
}

tl_ice_writer *tl_ice_writer_open_equality_deletes(const tl_ice_table *t, const int32_t *equality_ids,
                                                   int nequality_ids, const tl_ice_writer_options *opts,
                                                   tl_error *err)
{
	return tl_ice_writer_open_deletes(t, equality_ids, nequality_ids, equality_ids, nequality_ids, opts, err);
}

/* ----------------------------------------------------------- partitions */

/* The source value of a partition field at `row`, as an Iceberg value. */
static void source_value(const tl_pq_column *col, const tl_ice_type *type, const tl_vector *vec, int64_t row,
                         tl_ice_value *out)
{
	memset(out, 0, sizeof(*out));
	if (tl_vector_is_null(vec, row)) {
		out->is_null = true;
		return;
	}
	switch (col->physical) {
	case TL_PQ_BOOLEAN:
		out->v.b = vec->v.b[row] != 0;
		break;
	case TL_PQ_INT32:
		if (type->id == TL_ICE_DECIMAL)
			out->v.dec = vec->v.i32[row];
		else
			out->v.i32 = vec->v.i32[row];
		break;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		if (type->id == TL_ICE_DECIMAL)
			out->v.dec = vec->v.i64[row];
		else
			out->v.i64 = vec->v.i64[row];
		break;
	case TL_PQ_FLOAT:
		out->v.f32 = vec->v.f32[row];
		break;
	case TL_PQ_DOUBLE:
		out->v.f64 = vec->v.f64[row];
		break;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY: {
		tl_bytes b = vec->v.bytes[row];
		if (type->id == TL_ICE_DECIMAL) {
			/* Big-endian two's complement; the schema bounds the width to 16. */
			__extension__ unsigned __int128 u = (b.len > 0 && (b.ptr[0] & 0x80)) ? ~(unsigned __int128)0 : 0;
			for (uint32_t i = 0; i < b.len; i++)
				u = (u << 8) | b.ptr[i];
			out->v.dec = (tl_int128)u;
		} else {
			out->ptr = b.ptr;
			out->len = b.len;
		}
		break;
	}
	}
}

/* Computes the row's partition tuple into w->row_values and its key into w->key. */
static int row_tuple(tl_ice_writer *w, const tl_pq_batch *batch, int64_t row, tl_error *err)
{
	if (tl_buf_failed(&w->key)) {
		/* An earlier row ran out of memory here; a failed buffer stays failed until freed. */
		tl_buf_free(&w->key);
		tl_buf_init(&w->key);
	}
	tl_buf_reset(&w->key);
	for (int i = 0; i < w->spec->nfields; i++) {
		int c = w->source_column[i];
		tl_ice_value src;
		source_value(&w->pq_schema->columns[c], w->source_type[i], &batch->columns[c], row, &src);
		tl_ice_value *v = &w->row_values[i];
		if (tl_ice_transform_apply(&w->spec->fields[i].transform, w->source_type[i], &src, v, err) < 0)
			return -1;
		tl_buf_append_byte(&w->key, v->is_null ? 0 : 1);
		if (v->is_null)
			continue;
		size_t at = w->key.len;
		if (tl_buf_extend(&w->key, 4) == NULL)
			return tl_error_nomem(err, "for a partition key");
		const tl_ice_type *rt = &w->partition_type.fields[i].type;
		if (tl_ice_value_serialize(rt, v, &w->key, err) < 0)
			return -1;
		uint32_t len = (uint32_t)(w->key.len - at - 4);
		memcpy(w->key.data + at, &len, 4);
	}
	return tl_buf_check(&w->key, err, "for a partition key");
}

static uint64_t hash_key(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static void slots_insert(tl_ice_writer *w, int index)
{
	size_t mask = (size_t)w->nslots - 1;
	size_t s = (size_t)w->partitions[index].hash & mask;
	while (w->slots[s] >= 0)
		s = (s + 1) & mask;
	w->slots[s] = index;
}

/* Doubles the hash table; out of memory it keeps the old one (which still has room). */
static int slots_grow(tl_ice_writer *w)
{
	int *slots = tl_malloc(sizeof(int) * 2 * (size_t)w->nslots);
	if (slots == NULL)
		return -1;
	tl_free(w->slots);
	w->slots = slots;
	w->nslots *= 2;
	for (int i = 0; i < w->nslots; i++)
		w->slots[i] = -1;
	for (int i = 0; i < w->npartitions; i++)
		slots_insert(w, i);
	return 0;
}

/* Deep-copies the row's tuple into a new partition; returns its index. */
static int add_partition(tl_ice_writer *w, uint64_t h, tl_error *err)
{
	/* The slot table stays at most half full, so a probe always ends at an empty slot. */
	if (2 * (w->npartitions + 1) > w->nslots && slots_grow(w) < 0)
		return tl_error_nomem(err, "for a partition");
	int n = w->spec->nfields;
	tl_ice_value *values = tl_arena_alloc(&w->arena, sizeof(tl_ice_value) * (size_t)(n ? n : 1));
	if (values == NULL)
		return tl_error_nomem(err, "for a partition");
	for (int i = 0; i < n; i++) {
		values[i] = w->row_values[i];
		if (values[i].ptr != NULL &&
		    (values[i].ptr = tl_arena_copy(&w->arena, values[i].ptr, (uint32_t)values[i].len).ptr) == NULL)
			return tl_error_nomem(err, "for a partition");
	}
	if (w->npartitions == w->partitions_cap) {
		int cap = w->partitions_cap ? 2 * w->partitions_cap : 8;
		partition *partitions = tl_realloc(w->partitions, sizeof(partition) * (size_t)cap);
		if (partitions == NULL)
			return tl_error_nomem(err, "for a partition");
		w->partitions = partitions;
		int *touched = tl_realloc(w->touched, sizeof(int) * (size_t)cap);
		if (touched == NULL)
			return tl_error_nomem(err, "for a partition");
		w->touched = touched;
		w->partitions_cap = cap;
	}
	tl_buf path;
	tl_buf_init(&path);
	if (tl_ice_partition_path(w->spec, w->schema, values, &path, err) < 0) {
		tl_buf_free(&path);
		return -1;
	}
	tl_bytes key = tl_arena_copy(&w->arena, w->key.data, (uint32_t)w->key.len);
	char *path_copy = arena_strdup(&w->arena, path.len ? (const char *)path.data : "", path.len);
	tl_buf_free(&path);
	if ((key.ptr == NULL && w->key.len > 0) || path_copy == NULL)
		return tl_error_nomem(err, "for a partition");
	partition *p = &w->partitions[w->npartitions];
	memset(p, 0, sizeof(*p));
	p->key = key;
	p->hash = h;
	p->values = values;
	p->path = path_copy;
	w->npartitions++;
	slots_insert(w, w->npartitions - 1);
	return w->npartitions - 1;
}

/* The partition of the tuple in w->key/w->row_values, created if new. */
static int find_partition(tl_ice_writer *w, tl_error *err)
{
	uint64_t h = hash_key(w->key.data, w->key.len);
	size_t mask = (size_t)w->nslots - 1;
	for (size_t s = (size_t)h & mask; w->slots[s] >= 0; s = (s + 1) & mask) {
		const partition *p = &w->partitions[w->slots[s]];
		if (p->hash == h && p->key.len == w->key.len &&
		    (w->key.len == 0 || memcmp(p->key.ptr, w->key.data, w->key.len) == 0))
			return w->slots[s];
	}
	return add_partition(w, h, err);
}

/* --------------------------------------------------------------- files */

/* Makes the directory above location exist (a no-op on object stores). */
static int make_parent_dirs(const char *location, tl_error *err)
{
	const char *slash = strrchr(location, '/');
	if (slash == NULL || slash == location)
		return 0;
	char *parent = tl_strdup(location);
	if (parent == NULL)
		return tl_error_nomem(err, "for a path");
	parent[slash - location] = '\0';
	int rc = tl_storage_make_dirs(parent, err);
	tl_free(parent);
	return rc;
}

static void open_file_free(open_file *f)
{
	if (f == NULL)
		return;
	tl_pq_writer_free(f->pq);
	tl_output_close(f->out);
	tl_free(f->file_path);
	tl_free(f->nan_counts);
	tl_free(f);
}

static open_file *create_file(tl_ice_writer *w, const partition *p, tl_error *err)
{
	open_file *f = tl_calloc(1, sizeof(*f));
	if (f != NULL)
		f->nan_counts = tl_calloc((size_t)(w->pq_schema->ncolumns ? w->pq_schema->ncolumns : 1), sizeof(int64_t));
	if (f == NULL || f->nan_counts == NULL) {
		tl_free(f);
		tl_error_nomem(err, "for a data file");
		return NULL;
	}
	tl_buf path;
	tl_buf_init(&path);
	if (tl_ice_table_new_data_path(w->table, p->path, w->opts.file_prefix, &path, err) < 0)
		goto fail;
	tl_buf_append_byte(&path, 0);
	if (tl_buf_failed(&path) || (f->file_path = tl_strdup((const char *)path.data)) == NULL) {
		tl_error_nomem(err, "for a data file's path");
		goto fail;
	}
	/* Room to remember the file before it exists: an untracked file would be an orphan on failure. */
	if (w->ncreated == w->created_cap) {
		int cap = w->created_cap ? 2 * w->created_cap : 8;
		char **created = tl_realloc(w->created, sizeof(char *) * (size_t)cap);
		if (created == NULL) {
			tl_error_nomem(err, "for a data file");
			goto fail;
		}
		w->created = created;
		w->created_cap = cap;
	}
	char *created_path = tl_strdup(f->file_path);
	if (created_path == NULL) {
		tl_error_nomem(err, "for a data file's path");
		goto fail;
	}
	if (make_parent_dirs(f->file_path, err) < 0 ||
	    (f->out = tl_storage_create(f->file_path, TL_STORAGE_CREATE_EXCLUSIVE, err)) == NULL) {
		tl_free(created_path);
		goto fail;
	}
	w->created[w->ncreated++] = created_path;
	f->pq = tl_pq_writer_open(f->out, w->pq_schema, &w->opts.parquet, err);
	if (f->pq == NULL)
		goto fail;
	tl_buf_free(&path);
	return f;
fail:
	tl_buf_free(&path);
	open_file_free(f);
	return NULL;
}

/* Adds the NaNs of the float and double columns of rows to the file's counts. */
static void count_nans(const tl_pq_schema *schema, const tl_pq_batch *rows, int64_t *nan_counts)
{
	for (int c = 0; c < schema->ncolumns; c++) {
		const tl_vector *vec = &rows->columns[c];
		tl_pq_physical physical = schema->columns[c].physical;
		int64_t nans = 0;
		if (physical == TL_PQ_FLOAT) {
			for (int64_t i = 0; i < rows->nrows; i++)
				nans += !tl_vector_is_null(vec, i) && isnan(vec->v.f32[i]);
		} else if (physical == TL_PQ_DOUBLE) {
			for (int64_t i = 0; i < rows->nrows; i++)
				nans += !tl_vector_is_null(vec, i) && isnan(vec->v.f64[i]);
		}
		nan_counts[c] += nans;
	}
}

/*
 * The file's nan_value_counts, one per float and double field: without
 * them a reader must assume any such column may hold a NaN, and NaN is
 * above every number, so `x > 5000` could prune no file.
 */
static int set_nan_counts(const tl_pq_schema *schema, const int64_t *nan_counts, tl_arena *arena,
                          tl_ice_data_file *df, tl_error *err)
{
	int n = 0;
	for (int c = 0; c < schema->ncolumns; c++)
		n += (schema->columns[c].physical == TL_PQ_FLOAT || schema->columns[c].physical == TL_PQ_DOUBLE) &&
		     schema->columns[c].field_id >= 0;
	if (n == 0)
		return 0;
	df->nan_value_counts.keys = tl_arena_alloc(arena, sizeof(int32_t) * (size_t)n);
	df->nan_value_counts.values = tl_arena_alloc(arena, sizeof(int64_t) * (size_t)n);
	if (df->nan_value_counts.keys == NULL || df->nan_value_counts.values == NULL)
		return tl_error_nomem(err, "for column metrics");
	df->nan_value_counts.n = 0;
	for (int c = 0; c < schema->ncolumns; c++) {
		const tl_pq_column *col = &schema->columns[c];
		if ((col->physical != TL_PQ_FLOAT && col->physical != TL_PQ_DOUBLE) || col->field_id < 0)
			continue;
		df->nan_value_counts.keys[df->nan_value_counts.n] = col->field_id;
		df->nan_value_counts.values[df->nan_value_counts.n++] = nan_counts[c];
	}
	return 0;
}

/* Reads the finished file's footer back and records it as a data file. */
static int describe_file(tl_ice_writer *w, const partition *p, const open_file *f, tl_error *err)
{
	tl_input *in = tl_storage_open_read(f->file_path, err);
	if (in == NULL)
		return -1;
	tl_pq_reader *r = tl_pq_reader_open(in, err);
	tl_ice_data_file df;
	memset(&df, 0, sizeof(df));
	int rc = r != NULL ? tl_ice_data_file_metrics(w->schema, r, &w->arena, &df, err) : -1;
	if (rc == 0)
		rc = set_nan_counts(w->pq_schema, f->nan_counts, &w->arena, &df, err);
	if (rc == 0 && w->nfiles == w->files_cap) {
		int cap = w->files_cap ? 2 * w->files_cap : 8;
		tl_ice_data_file *files = tl_realloc(w->files, sizeof(tl_ice_data_file) * (size_t)cap);
		if (files == NULL)
			rc = tl_error_nomem(err, "listing a written file");
		else
			w->files = files, w->files_cap = cap;
	}
	if (rc == 0 && (df.file_path = arena_strdup(&w->arena, f->file_path, strlen(f->file_path))) == NULL)
		rc = tl_error_nomem(err, "listing a written file");
	if (rc == 0) {
		df.content = w->content;
		df.file_format = "PARQUET";
		df.file_size_in_bytes = (int64_t)in->size;
		df.npartition = w->spec->nfields;
		df.partition = p->values;
		df.n_equality_ids = (uint32_t)w->nequality_ids;
		df.equality_ids = w->equality_ids;
		w->files[w->nfiles++] = df;
	}
	tl_pq_reader_free(r);
	tl_input_close(in);
	if (rc < 0)
		tl_error_prefix(err, "reading back %s", f->file_path);
	return rc;
}

/* Completes the partition's open file and lists it. */
static int finish_file(tl_ice_writer *w, partition *p, tl_error *err)
{
	open_file *f = p->file;
	p->file = NULL;
	w->nopen--;
	int rc = tl_pq_writer_close(f->pq, err);
	if (rc == 0)
		rc = f->out->finish(f->out, err);
	tl_pq_writer_free(f->pq);
	f->pq = NULL;
	tl_output_close(f->out);
	f->out = NULL;
	if (rc == 0)
		rc = describe_file(w, p, f, err);
	open_file_free(f);
	return rc;
}

/* Finishes the least recently used open file, to make room for another. */
static int evict_one(tl_ice_writer *w, tl_error *err)
{
	int victim = -1;
	for (int i = 0; i < w->npartitions; i++)
		if (w->partitions[i].file != NULL &&
		    (victim < 0 || w->partitions[i].last_used < w->partitions[victim].last_used))
			victim = i;
	return victim < 0 ? 0 : finish_file(w, &w->partitions[victim], err);
}

/* Opens a file for the partition if it has none, finishing another if too many are open. */
static int ensure_file(tl_ice_writer *w, int index, tl_error *err)
{
	if (w->partitions[index].file != NULL)
		return 0;
	if (w->nopen >= TL_ICE_WRITER_MAX_OPEN && evict_one(w, err) < 0)
		return -1;
	open_file *f = create_file(w, &w->partitions[index], err);
	if (f == NULL)
		return -1;
	w->partitions[index].file = f;
	w->nopen++;
	return 0;
}

/* A view of rows [from, from + n) of batch: the column pointers shifted, nothing copied. */
static void slice_batch(const tl_ice_writer *w, const tl_pq_batch *batch, int64_t from, int64_t n,
                        tl_pq_batch *view)
{
	memset(view, 0, sizeof(*view));
	view->ncolumns = batch->ncolumns;
	view->nrows = n;
	view->capacity = n;
	view->columns = w->slice_columns;
	for (int c = 0; c < batch->ncolumns; c++) {
		const tl_vector *src = &batch->columns[c];
		tl_vector *dst = &w->slice_columns[c];
		dst->valid = src->valid != NULL ? src->valid + from : NULL;
		switch (w->pq_schema->columns[c].physical) {
		case TL_PQ_BOOLEAN:
			dst->v.b = src->v.b + from;
			break;
		case TL_PQ_INT32:
			dst->v.i32 = src->v.i32 + from;
			break;
		case TL_PQ_INT64:
		case TL_PQ_INT96:
			dst->v.i64 = src->v.i64 + from;
			break;
		case TL_PQ_FLOAT:
			dst->v.f32 = src->v.f32 + from;
			break;
		case TL_PQ_DOUBLE:
			dst->v.f64 = src->v.f64 + from;
			break;
		case TL_PQ_BYTE_ARRAY:
		case TL_PQ_FIXED_LEN_BYTE_ARRAY:
			dst->v.bytes = src->v.bytes + from;
			break;
		}
	}
}

/*
 * Appends rows to the partition's file, opening and rolling files over as
 * needed. Rows go in slices of a row group's row count: a file grows only
 * as row groups flush, so that is how often its size can be checked.
 */
static int write_partition(tl_ice_writer *w, int index, const tl_pq_batch *rows, tl_error *err)
{
	int64_t step = w->opts.parquet.row_group_rows > 0 ? w->opts.parquet.row_group_rows : rows->nrows;
	for (int64_t from = 0; from < rows->nrows; from += step) {
		int64_t n = rows->nrows - from < step ? rows->nrows - from : step;
		tl_pq_batch view;
		if (n < rows->nrows)
			slice_batch(w, rows, from, n, &view);
		if (ensure_file(w, index, err) < 0)
			return -1;
		partition *p = &w->partitions[index];
		p->last_used = ++w->clock;
		if (tl_pq_writer_write(p->file->pq, n < rows->nrows ? &view : rows, err) < 0)
			return -1;
		count_nans(w->pq_schema, n < rows->nrows ? &view : rows, p->file->nan_counts);
		if ((int64_t)p->file->out->offset >= w->opts.target_file_bytes && finish_file(w, p, err) < 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- rows */

/* Refuses a batch of the wrong shape or with a null in a required column before anything is written. */
static int check_batch(const tl_ice_writer *w, const tl_pq_batch *batch, tl_error *err)
{
	if (batch->ncolumns != w->pq_schema->ncolumns)
		return tl_error_set(err, TL_ERR_INVALID, "batch has %d columns; the writer's schema has %d",
		                    batch->ncolumns, w->pq_schema->ncolumns);
	for (int c = 0; c < batch->ncolumns; c++) {
		const uint8_t *valid = batch->columns[c].valid;
		if (!w->pq_schema->columns[c].required || valid == NULL)
			continue;
		for (int64_t r = 0; r < batch->nrows; r++)
			if (!valid[r])
				return tl_error_set(err, TL_ERR_INVALID, "row %lld: required column \"%s\" is null",
				                    (long long)r, w->pq_schema->columns[c].name);
	}
	return 0;
}

static void copy_value(tl_pq_physical physical, const tl_vector *src, int64_t from, tl_vector *dst, int64_t to)
{
	switch (physical) {
	case TL_PQ_BOOLEAN:
		dst->v.b[to] = src->v.b[from];
		break;
	case TL_PQ_INT32:
		dst->v.i32[to] = src->v.i32[from];
		break;
	case TL_PQ_INT64:
	case TL_PQ_INT96:
		dst->v.i64[to] = src->v.i64[from];
		break;
	case TL_PQ_FLOAT:
		dst->v.f32[to] = src->v.f32[from];
		break;
	case TL_PQ_DOUBLE:
		dst->v.f64[to] = src->v.f64[from];
		break;
	case TL_PQ_BYTE_ARRAY:
	case TL_PQ_FIXED_LEN_BYTE_ARRAY:
		dst->v.bytes[to] = src->v.bytes[from];   /* a view: the source outlives the write */
		break;
	}
}

/* Copies the partition's selected rows of batch into the scratch batch; NULL when out of memory. */
static const tl_pq_batch *gather(tl_ice_writer *w, const tl_pq_batch *batch, const partition *p)
{
	if (w->scratch == NULL || w->scratch->capacity < p->nrows) {
		tl_pq_batch_free(w->scratch);
		w->scratch = tl_pq_batch_new(w->pq_schema, batch->nrows);
		if (w->scratch == NULL)
			return NULL;
	}
	tl_pq_batch *s = w->scratch;
	for (int c = 0; c < batch->ncolumns; c++) {
		const tl_vector *src = &batch->columns[c];
		tl_vector *dst = &s->columns[c];
		tl_pq_physical physical = w->pq_schema->columns[c].physical;
		for (int64_t k = 0; k < p->nrows; k++) {
			int64_t row = p->rows[k];
			if (dst->valid != NULL)
				dst->valid[k] = src->valid == NULL || src->valid[row];
			if (!tl_vector_is_null(src, row))
				copy_value(physical, src, row, dst, k);
		}
	}
	s->nrows = p->nrows;
	return s;
}

static int route_row(tl_ice_writer *w, int index, int64_t row, int *ntouched, tl_error *err)
{
	partition *p = &w->partitions[index];
	if (p->nrows == p->rows_cap) {
		int64_t cap = p->rows_cap ? 2 * p->rows_cap : 64;
		int64_t *rows = tl_realloc(p->rows, sizeof(int64_t) * (size_t)cap);
		if (rows == NULL)
			return tl_error_nomem(err, "routing rows to partitions");
		p->rows = rows, p->rows_cap = cap;
	}
	if (p->nrows == 0)
		w->touched[(*ntouched)++] = index;
	p->rows[p->nrows++] = row;
	return 0;
}

/*
 * Assigns every row to its partition. Consecutive rows with the same tuple
 * (the common case) skip the hash lookup.
 */
static int route_rows(tl_ice_writer *w, const tl_pq_batch *batch, int *ntouched, tl_error *err)
{
	tl_buf prev;
	tl_buf_init(&prev);
	int index = -1;
	int rc = 0;
	for (int64_t r = 0; r < batch->nrows && rc == 0; r++) {
		if (row_tuple(w, batch, r, err) < 0) {
			rc = -1;
			break;
		}
		if (index < 0 || prev.len != w->key.len || memcmp(prev.data, w->key.data, prev.len) != 0) {
			index = find_partition(w, err);
			if (index < 0) {
				rc = -1;
				break;
			}
			tl_buf_reset(&prev);
			tl_buf_append(&prev, w->key.data, w->key.len);
			if (tl_buf_failed(&prev)) {
				rc = tl_error_nomem(err, "routing rows to partitions");
				break;
			}
		}
		rc = route_row(w, index, r, ntouched, err);
	}
	tl_buf_free(&prev);
	return rc;
}

/* Routes and writes a batch; *wrote says whether any file was touched (so a failure may have left a partial write). */
static int write_routed(tl_ice_writer *w, const tl_pq_batch *batch, bool *wrote, tl_error *err)
{
	int ntouched = 0;
	int rc = route_rows(w, batch, &ntouched, err);
	*wrote = rc == 0;
	/* Partitions with an open file go first, so the ones that must open a
	 * file evict partitions this batch has already written. */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < ntouched && rc == 0; i++) {
			const partition *p = &w->partitions[w->touched[i]];
			if ((p->file != NULL) != (pass == 0) || p->nrows == 0)
				continue;
			const tl_pq_batch *rows = ntouched == 1 ? batch : gather(w, batch, p);
			rc = rows == NULL ? tl_error_nomem(err, "gathering a partition's rows")
			                  : write_partition(w, w->touched[i], rows, err);
			w->partitions[w->touched[i]].nrows = 0;   /* written */
		}
	}
	for (int i = 0; i < ntouched; i++)
		w->partitions[w->touched[i]].nrows = 0;
	return rc;
}

int tl_ice_writer_write(tl_ice_writer *w, const tl_pq_batch *batch, tl_error *err)
{
	if (w->closed || w->failed)
		return tl_error_set(err, TL_ERR_INVALID, "the Iceberg writer is %s",
		                    w->closed ? "closed" : "unusable after an earlier failed write");
	if (check_batch(w, batch, err) < 0)
		return -1;
	if (batch->nrows == 0)
		return 0;
	int rc;
	bool wrote = true;
	if (w->spec->nfields == 0) {
		/* Unpartitioned: one partition with the empty tuple. */
		tl_buf_reset(&w->key);
		int index = find_partition(w, err);
		rc = index < 0 ? -1 : write_partition(w, index, batch, err);
	} else {
		rc = write_routed(w, batch, &wrote, err);
	}
	if (rc < 0) {
		/* A batch refused while routing left the files as they were. */
		w->failed = wrote;
		return -1;
	}
	w->rows += batch->nrows;
	return 0;
}

int tl_ice_writer_finish_open_files(tl_ice_writer *w, tl_error *err)
{
	if (w->closed)
		return tl_error_set(err, TL_ERR_INVALID, "the Iceberg writer is closed");
	if (w->failed)
		return tl_error_set(err, TL_ERR_INVALID, "the Iceberg writer is unusable after an earlier failed write");
	for (int i = 0; i < w->npartitions; i++) {
		if (w->partitions[i].file != NULL && finish_file(w, &w->partitions[i], err) < 0) {
			w->failed = true;
			return -1;
		}
	}
	return 0;
}

int tl_ice_writer_close(tl_ice_writer *w, tl_error *err)
{
	if (w->closed)
		return 0;
	if (tl_ice_writer_finish_open_files(w, err) < 0)
		return -1;
	w->closed = true;
	return 0;
}

void tl_ice_writer_free(tl_ice_writer *w)
{
	if (w == NULL)
		return;
	for (int i = 0; i < w->npartitions; i++) {
		open_file_free(w->partitions[i].file);
		tl_free(w->partitions[i].rows);
	}
	for (int i = 0; i < w->ncreated; i++) {
		if (!w->closed)
			(void)tl_storage_remove(w->created[i], NULL); /* best effort: an orphan is harmless */
		tl_free(w->created[i]);
	}
	tl_free(w->created);
	tl_free(w->partitions);
	tl_free(w->touched);
	tl_free(w->slots);
	tl_free(w->files);
	tl_free(w->source_column);
	tl_free(w->source_type);
	tl_free(w->row_values);
	tl_pq_batch_free(w->scratch);
	tl_free(w->slice_columns);
	tl_pq_schema_free(w->pq_schema);
	tl_ice_type_free(&w->partition_type);
	tl_buf_free(&w->key);
	tl_arena_free(&w->arena);
	tl_free(w);
}
