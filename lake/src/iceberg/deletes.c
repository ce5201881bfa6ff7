/*
 * deletes.c: loading Iceberg delete files into what the row reader tests
 * rows against.
 *
 * A position delete file lists (file_path, pos) pairs, possibly for many
 * data files; for one data file we keep only its positions, sorted and
 * deduplicated, so the reader can walk them alongside the rows it reads.
 *
 * An equality delete file lists values of its equality_ids columns; a row
 * whose values on those fields equal any listed tuple is deleted (a null
 * matches a null). Tuples are kept as canonical key bytes (see
 * ice_value_key) in a hash set: values are converted to the table's type
 * first, so a delete written with INT32 matches rows of a file that stores
 * the same long as INT64.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/iceberg_transform.h"
#include "iceberg/reader_internal.h"

const tl_ice_field *ice_top_level_field(const tl_ice_schema *schema, int32_t id)
{
	for (int i = 0; i < schema->nfields; i++)
		if (schema->fields[i].id == id)
			return &schema->fields[i];
	return NULL;
}

/* ------------------------------------------------- reading a delete file */

typedef int (*delete_batch_fn)(void *ctx, const ice_file_projection *fp, const tl_pq_batch *batch, tl_error *err);

/* Reads every row of delete file df's `fields`, handing each batch to fn; errors name the file. */
static int scan_delete_file(const tl_ice_delete_file *df, const tl_ice_field *const *fields, int nfields,
                            delete_batch_fn fn, void *ctx, tl_error *err)
{
	const char *path = df->file.file_path;
	tl_input *in;
	tl_pq_reader *pq;
	ice_file_projection fp;
	int rc = -1;
	if (ice_fp_open_file(path, df->file.file_format, fields, nfields, &in, &pq, &fp, err) < 0) {
		ice_error_name_file(err, "delete file", path);
		return -1;
	}
	tl_pq_batch *batch = tl_pq_reader_batch_new(pq, ICE_DELETE_BATCH_ROWS);
	if (batch == NULL)
		tl_error_nomem(err, "reading a delete file");
	for (; batch != NULL;) {
		int64_t n = tl_pq_reader_next(pq, batch, err);
		if (n < 0)
			break;
		if (n == 0) {
			rc = 0;
			break;
		}
		if (fn(ctx, &fp, batch, err) < 0)
			break;
	}
	if (rc < 0)
		ice_error_name_file(err, "delete file", path);
	tl_pq_batch_free(batch);
	ice_fp_free(&fp);
	tl_pq_reader_free(pq);
	tl_input_close(in);
	return rc;
}

/* ------------------------------------------------------ position deletes */

static char pos_path_name[] = "file_path";
static char pos_pos_name[] = "pos";
static const tl_ice_field pos_delete_fields[2] = {
	{.id = ICE_POS_DELETE_FILE_PATH_ID, .name = pos_path_name, .required = true, .type = {.id = TL_ICE_STRING}},
	{.id = ICE_POS_DELETE_POS_ID, .name = pos_pos_name, .required = true, .type = {.id = TL_ICE_LONG}},
};

typedef struct position_list {
	const char *data_path;
	size_t data_path_len;
	int64_t *items;
	size_t n;
	size_t cap;
} position_list;

static int collect_positions(void *ctx, const ice_file_projection *fp, const tl_pq_batch *batch, tl_error *err)
{
	position_list *list = ctx;
	for (int64_t row = 0; row < batch->nrows; row++) {
		ice_value path, pos;
		if (ice_fp_read(&fp->columns[0], batch, row, &path, err) < 0)
			return -1;
		if (path.bytes.len != list->data_path_len || memcmp(path.bytes.ptr, list->data_path, path.bytes.len) != 0)
			continue;
		if (ice_fp_read(&fp->columns[1], batch, row, &pos, err) < 0)
			return -1;
		if (pos.i < 0)
			return tl_error_set(err, TL_ERR_CORRUPT, "row %" PRId64 " has the negative position %" PRId64, row,
			                    pos.i);
		if (list->n == list->cap) {
			size_t cap = list->cap ? list->cap * 2 : 256;
			int64_t *items = tl_realloc(list->items, cap * sizeof(int64_t));
			if (items == NULL)
				return tl_error_nomem(err, "loading position deletes");
			list->items = items, list->cap = cap;
		}
		list->items[list->n++] = pos.i;
	}
	return 0;
}

static int compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int ice_positions_load(const char *data_path, const tl_ice_delete_file *const *deletes, int ndeletes,
                       int64_t **positions, size_t *npositions, tl_error *err)
{
	position_list list = {.data_path = data_path, .data_path_len = strlen(data_path)};
	const tl_ice_field *fields[2] = {&pos_delete_fields[0], &pos_delete_fields[1]};
	for (int i = 0; i < ndeletes; i++) {
		if (deletes[i]->file.content != TL_ICE_CONTENT_POSITION_DELETES)
			continue;
		if (scan_delete_file(deletes[i], fields, 2, collect_positions, &list, err) < 0) {
			tl_free(list.items);
			return -1;
		}
	}
	if (list.n > 1) {
		qsort(list.items, list.n, sizeof(int64_t), compare_int64);
		size_t kept = 1;
		for (size_t k = 1; k < list.n; k++)
			if (list.items[k] != list.items[kept - 1])
				list.items[kept++] = list.items[k];
		list.n = kept;
	}
	*positions = list.items;
	*npositions = list.n;
	return 0;
}

/* ------------------------------------------------------ equality deletes */

typedef struct eq_entry {
	size_t offset;      /* of the key in `keys` */
	uint32_t len;
	uint32_t hash;
} eq_entry;

struct ice_eq_set {
	char *path;
	int nids;
	int32_t *ids;
	tl_buf keys;        /* every distinct key, back to back */
	eq_entry *entries;
	size_t nentries;
	size_t cap_entries;
	uint32_t *slots;    /* open addressing: entry index + 1, 0 = empty */
	size_t nslots;      /* a power of two, at least twice nentries */
};

static uint32_t key_hash(const uint8_t *key, size_t len)
{
	return (uint32_t)tl_murmur3_32(key, len);
}

/* The slot holding key, or the empty slot where it belongs. */
static size_t find_slot(const ice_eq_set *set, const uint8_t *key, size_t len, uint32_t hash)
{
	size_t mask = set->nslots - 1;
	for (size_t s = hash & mask;; s = (s + 1) & mask) {
		uint32_t e = set->slots[s];
		if (e == 0)
			return s;
		const eq_entry *entry = &set->entries[e - 1];
		if (entry->hash == hash && entry->len == len && memcmp(set->keys.data + entry->offset, key, len) == 0)
			return s;
	}
}

/* -1 when out of memory (the set unchanged). */
static int grow_slots(ice_eq_set *set)
{
	size_t nslots = set->nslots ? set->nslots * 2 : 64;
	uint32_t *slots = tl_calloc(nslots, sizeof(uint32_t));
	if (slots == NULL)
		return -1;
	tl_free(set->slots);
	set->slots = slots;
	set->nslots = nslots;
	size_t mask = set->nslots - 1;
	for (size_t i = 0; i < set->nentries; i++) {
		size_t s = set->entries[i].hash & mask;
		while (set->slots[s] != 0)
			s = (s + 1) & mask;
		set->slots[s] = (uint32_t)(i + 1);
	}
	return 0;
}

static int eq_set_insert(ice_eq_set *set, const uint8_t *key, size_t len, tl_error *err)
{
	if (set->nentries >= UINT32_MAX / 2)
		return tl_error_set(err, TL_ERR_NOMEM, "too many equality delete keys");
	if ((set->nentries + 1) * 2 > set->nslots && grow_slots(set) < 0)
		return tl_error_nomem(err, "loading equality deletes");
	uint32_t hash = key_hash(key, len);
	size_t s = find_slot(set, key, len, hash);
	if (set->slots[s] != 0)
		return 0;
	if (set->nentries == set->cap_entries) {
		size_t cap = set->cap_entries ? set->cap_entries * 2 : 64;
		eq_entry *entries = tl_realloc(set->entries, cap * sizeof(eq_entry));
		if (entries == NULL)
			return tl_error_nomem(err, "loading equality deletes");
		set->entries = entries, set->cap_entries = cap;
	}
	set->entries[set->nentries] = (eq_entry){.offset = set->keys.len, .len = (uint32_t)len, .hash = hash};
	tl_buf_append(&set->keys, key, len);
	if (tl_buf_check(&set->keys, err, "loading equality deletes") < 0)
		return -1;
	set->slots[s] = (uint32_t)(++set->nentries);
	return 0;
}

bool ice_eq_set_contains(const ice_eq_set *set, const uint8_t *key, size_t len)
{
	if (set->nentries == 0)
		return false;
	size_t s = find_slot(set, key, len, key_hash(key, len));
	return set->slots[s] != 0;
}

typedef struct eq_load {
	ice_eq_set *set;
	tl_buf key;
} eq_load;

static int collect_keys(void *ctx, const ice_file_projection *fp, const tl_pq_batch *batch, tl_error *err)
{
	eq_load *load = ctx;
	for (int64_t row = 0; row < batch->nrows; row++) {
		tl_buf_reset(&load->key);
		for (int c = 0; c < fp->ncolumns; c++) {
			ice_value v;
			if (ice_fp_read(&fp->columns[c], batch, row, &v, err) < 0)
				return -1;
			ice_value_key(&fp->columns[c].out, &v, &load->key);
		}
		if (tl_buf_check(&load->key, err, "loading equality deletes") < 0)
			return -1;
		if (eq_set_insert(load->set, load->key.data, load->key.len, err) < 0)
			return -1;
	}
	return 0;
}

/* The fields the delete's equality_ids name; errors name the delete file. */
static int equality_fields(const tl_ice_schema *schema, const tl_ice_delete_file *df, const tl_ice_field **fields,
                           tl_error *err)
{
	const tl_ice_data_file *f = &df->file;
	for (uint32_t i = 0; i < f->n_equality_ids; i++) {
		const tl_ice_field *field = ice_top_level_field(schema, f->equality_ids[i]);
		if (field == NULL)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "reading delete file %s: equality field id %d is not a top-level field of the "
			                    "scanned schema",
			                    f->file_path, f->equality_ids[i]);
		if (!tl_ice_type_is_primitive(field->type.id))
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "reading delete file %s: equality field \"%s\" (id %d) has a nested type",
			                    f->file_path, field->name, field->id);
		fields[i] = field;
	}
	return 0;
}

ice_eq_set *ice_eq_set_load(const tl_ice_schema *schema, const tl_ice_delete_file *df, tl_error *err)
{
	const tl_ice_data_file *f = &df->file;
	if (f->n_equality_ids == 0 || f->n_equality_ids > (uint32_t)schema->nfields) {
		tl_error_set(err, TL_ERR_CORRUPT, "reading delete file %s: an equality delete needs 1 to %d equality_ids, not %u",
		             f->file_path, schema->nfields, f->n_equality_ids);
		return NULL;
	}
	const tl_ice_field **fields = tl_malloc(sizeof(*fields) * f->n_equality_ids);
	if (fields == NULL) {
		tl_error_nomem(err, "loading equality deletes");
		return NULL;
	}
	if (equality_fields(schema, df, fields, err) < 0) {
		tl_free(fields);
		return NULL;
	}
	ice_eq_set *set = tl_calloc(1, sizeof(*set));
	if (set == NULL || (set->path = tl_strdup(f->file_path)) == NULL ||
	    (set->ids = tl_malloc(sizeof(int32_t) * f->n_equality_ids)) == NULL) {
		ice_eq_set_free(set);
		tl_free(fields);
		tl_error_nomem(err, "loading equality deletes");
		return NULL;
	}
	set->nids = (int)f->n_equality_ids;
	memcpy(set->ids, f->equality_ids, sizeof(int32_t) * f->n_equality_ids);
	tl_buf_init(&set->keys);
	eq_load load = {.set = set};
	tl_buf_init(&load.key);
	int rc = scan_delete_file(df, fields, set->nids, collect_keys, &load, err);
	tl_buf_free(&load.key);
	tl_free(fields);
	if (rc < 0) {
		ice_eq_set_free(set);
		return NULL;
	}
	return set;
}

const char *ice_eq_set_path(const ice_eq_set *set) { return set->path; }
int ice_eq_set_nids(const ice_eq_set *set) { return set->nids; }
const int32_t *ice_eq_set_ids(const ice_eq_set *set) { return set->ids; }
int64_t ice_eq_set_count(const ice_eq_set *set) { return (int64_t)set->nentries; }

void ice_eq_set_free(ice_eq_set *set)
{
	if (set == NULL)
		return;
	tl_free(set->path);
	tl_free(set->ids);
	tl_buf_free(&set->keys);
	tl_free(set->entries);
	tl_free(set->slots);
	tl_free(set);
}
