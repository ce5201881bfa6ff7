/*
 * ingest_keys.c: the lake rows whose keys a batch holds (ingest_keys.h).
 *
 * The batch's keys are read from Postgres as the lake's reader decodes its
 * own values and hashed; one scan of the lake's key columns at S, filtered
 * by the keys (or their range) so that bounds and bloom filters skip what
 * cannot hold one, keeps the rows whose key hash is among them and copies
 * their key columns into the caller's table. The exact match happens there,
 * in SQL, so a hash collision never deletes a row.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "ingest_keys.h"
#include "lakestep.h"
#include "pgtext.h"
#include "pgtypes.h"
#include "tiering.h"
#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_scan.h"

/* Rows per decoded batch. */
#define BATCH_ROWS 8192

/* The lake field of key column i. */
static const tl_ice_field *key_field(const tdb_key_search *s, int i)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(s->lake->metadata);
	for (int k = 0; k < schema->nfields; k++)
		if (schema->fields[k].id == s->key_ids[i])
			return &schema->fields[k];
	return &schema->fields[0]; /* unreachable: tdb_lake_key_columns checked every key id */
}

/* A set of 64-bit key hashes (open addressing; 0 marks a free slot, so hash 0 is stored as 1). */
typedef struct hash_set {
	uint64_t *slots;
	size_t mask;
	size_t count;
} hash_set;

static void hash_set_add(hash_set *s, uint64_t h);

static void hash_set_grow(hash_set *s)
{
	hash_set bigger = {tl_calloc((s->mask + 1) * 2, sizeof(uint64_t)), (s->mask + 1) * 2 - 1, 0};
	for (size_t i = 0; i <= s->mask; i++)
		if (s->slots[i] != 0)
			hash_set_add(&bigger, s->slots[i]);
	free(s->slots);
	*s = bigger;
}

static void hash_set_add(hash_set *s, uint64_t h)
{
	if (h == 0)
		h = 1;
	if ((s->count + 1) * 2 > s->mask + 1)
		hash_set_grow(s);
	size_t i = (size_t)h & s->mask;
	while (s->slots[i] != 0 && s->slots[i] != h)
		i = (i + 1) & s->mask;
	if (s->slots[i] == 0) {
		s->slots[i] = h;
		s->count++;
	}
}

static bool hash_set_has(const hash_set *s, uint64_t h)
{
	if (h == 0)
		h = 1;
	size_t i = (size_t)h & s->mask;
	while (s->slots[i] != 0) {
		if (s->slots[i] == h)
			return true;
		i = (i + 1) & s->mask;
	}
	return false;
}

/* The pk columns of a key batch (pk columns first, then perhaps the tier key), for hashing. */
typedef struct pk_view {
	tl_pq_schema schema;
	tl_pq_batch batch;
} pk_view;

static uint64_t pk_hash(const tl_pq_schema *schema, const tl_pq_batch *batch, int npk, int64_t row)
{
	pk_view v = {{npk, schema->columns}, *batch};
	v.batch.ncolumns = npk;
	return tdb_digest_row_hash(&v.schema, &v.batch, row);
}

/*
 * The batch's keys: their hashes and, for a one-column key, what lets the
 * lake scan skip files, row groups and pages that cannot hold one of them:
 * up to IN_LIST_KEYS of the values themselves (an IN filter, which bounds
 * and the key's bloom filters prune: a Stream Load of new keys then reads
 * next to nothing, whatever the key's type) and, for an integer or
 * temporal key, its least and greatest value (a range, for batches too
 * large for a list).
 */
#define IN_LIST_KEYS 20000

typedef struct key_sink {
	hash_set *set;
	const tl_pq_schema *schema;
	int npk;
	tl_ice_type_id type;  /* the one key column's lake type */
	bool ranged;          /* the key is one INT32/INT64 column */
	bool seen;
	int64_t lo, hi;
	bool listed;          /* values holds every key (false once there are too many, or the type has no list) */
	tl_ice_value *values;
	int64_t nvalues, cap;
	tl_arena arena;       /* the listed strings' bytes */
} key_sink;

/* Adds the row's key to the IN list, or gives the list up when it grows too long. */
static void list_key(key_sink *k, const tl_vector *vec, int64_t row)
{
	if (k->nvalues == IN_LIST_KEYS) {
		k->listed = false;
		return;
	}
	if (k->nvalues == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 256;
		k->values = tl_realloc(k->values, (size_t)k->cap * sizeof(tl_ice_value));
	}
	tl_ice_value *v = &k->values[k->nvalues++];
	memset(v, 0, sizeof(*v));
	switch (k->type) {
	case TL_ICE_INT:
	case TL_ICE_DATE: v->v.i32 = vec->v.i32[row]; break;
	case TL_ICE_LONG:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ: v->v.i64 = vec->v.i64[row]; break;
	default: { /* string, uuid */
		tl_bytes b = tl_arena_copy(&k->arena, vec->v.bytes[row].ptr, vec->v.bytes[row].len);
		v->ptr = b.ptr;
		v->len = b.len;
		if (b.ptr == NULL && b.len > 0)
			k->listed = false;
	}
	}
}

static int add_key_hashes(void *arg, tl_pq_batch *batch, tl_error *err)
{
	key_sink *k = arg;
	for (int64_t row = 0; row < batch->nrows; row++) {
		hash_set_add(k->set, pk_hash(k->schema, batch, k->npk, row));
		if (tl_vector_is_null(&batch->columns[0], row))
			continue;
		if (k->listed)
			list_key(k, &batch->columns[0], row);
		if (!k->ranged)
			continue;
		int64_t v = k->schema->columns[0].physical == TL_PQ_INT32 ? batch->columns[0].v.i32[row]
		                                                          : batch->columns[0].v.i64[row];
		if (!k->seen || v < k->lo)
			k->lo = v;
		if (!k->seen || v > k->hi)
			k->hi = v;
		k->seen = true;
	}
	return 0;
}

/* The hashes of the cold staged rows' keys, decoded as the lake's reader decodes its own. */
static int staged_key_hashes(const tdb_key_search *s, key_sink *sink, tl_error *err)
{
	tl_pq_schema *schema = tl_pq_schema_new();
	int rc = 0;
	for (int i = 0; i < s->npk && rc == 0; i++) {
		tl_pq_column col;
		rc = tl_ice_field_to_pq_column(key_field(s, i), &col, err);
		if (rc == 0) {
			col.required = false;
			tl_pq_schema_add(schema, &col);
		}
	}
	if (rc < 0) {
		tl_pq_schema_free(schema);
		return -1;
	}
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "COPY (SELECT ");
	tdb_pg_copy_select_list(s->key_cols, s->npk, &sql);
	tl_buf_printf(&sql, " FROM %s) TO STDOUT (FORMAT binary)", s->keys_from);
	tl_pq_batch *batch = tl_pq_batch_new(schema, BATCH_ROWS);
	sink->schema = schema;
	sink->npk = s->npk;
	tl_ice_type_id type = key_field(s, 0)->type.id;
	sink->type = type;
	sink->ranged = s->npk == 1 && (type == TL_ICE_INT || type == TL_ICE_LONG || type == TL_ICE_DATE ||
	                                  type == TL_ICE_TIMESTAMP || type == TL_ICE_TIMESTAMPTZ);
	sink->listed = s->npk == 1 && (sink->ranged || type == TL_ICE_STRING || type == TL_ICE_UUID);
	rc = tdb_copy_batches(s->c, tdb_buf_cstr(&sql), "reading the ingested keys", s->key_cols, s->npk, batch,
	                      NULL, add_key_hashes, sink, err);
	sink->schema = NULL;
	tl_pq_batch_free(batch);
	tl_buf_free(&sql);
	tl_pq_schema_free(schema);
	return rc;
}

/*
 * The lake rows at S whose key hash is among the batch's: their key
 * columns (and tier key) are staged in LAKE_KEYS, and the exact match
 * happens in SQL, so a hash collision never deletes a row.
 */
/* pk IN (...), else pk >= lo AND pk <= hi, for the lake scan; NULL (no filter) when neither applies. */
static const tl_ice_expr *key_range(const tdb_key_search *s, const key_sink *keys, tl_arena *arena)
{
	const tl_ice_field *field = key_field(s, 0);
	if (keys->listed && keys->nvalues > 0)
		return tl_ice_expr_predicate(arena, TL_ICE_EXPR_IN, field->id, keys->values, (int)keys->nvalues);
	if (!keys->ranged || !keys->seen)
		return NULL;
	tl_ice_value lo = {0}, hi = {0};
	if (field->type.id == TL_ICE_INT || field->type.id == TL_ICE_DATE) {
		lo.v.i32 = (int32_t)keys->lo;
		hi.v.i32 = (int32_t)keys->hi;
	} else {
		lo.v.i64 = keys->lo;
		hi.v.i64 = keys->hi;
	}
	return tl_ice_expr_and(arena, tl_ice_expr_predicate(arena, TL_ICE_EXPR_GE, field->id, &lo, 1),
	                       tl_ice_expr_predicate(arena, TL_ICE_EXPR_LE, field->id, &hi, 1));
}

static int stage_lake_candidates(const tdb_key_search *s, const key_sink *keys, tl_error *err)
{
	const hash_set *set = keys->set;
	if (!s->has_base)
		return 0; /* no snapshot yet: no lake row */
	int rc;
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_ice_scan *scan = tl_ice_scan_plan(s->lake->metadata, s->base_s, key_range(s, keys, &arena), err);
	tl_arena_free(&arena); /* the plan keeps its own copy of the filter */
	tl_ice_reader *r = scan != NULL ? tl_ice_reader_open(scan, s->key_ids, s->nkey, err) : NULL;
	if (r == NULL) {
		tl_ice_scan_free(scan);
		return -1;
	}
	tl_buf copy;
	tl_buf_init(&copy);
	tl_buf_printf(&copy, "COPY %s FROM STDIN", s->into);
	PGresult *res = PQexec(s->c, tdb_buf_cstr(&copy));
	tl_buf_free(&copy);
	bool copying = PQresultStatus(res) == PGRES_COPY_IN;
	PQclear(res);
	if (!copying) {
		tl_ice_reader_free(r);
		tl_ice_scan_free(scan);
		return tl_error_set(err, TL_ERR_IO, "staging the lake's keys: %s", PQerrorMessage(s->c));
	}
	const tl_pq_schema *schema = tl_ice_reader_schema(r);
	tl_pq_batch *batch = tl_ice_reader_batch_new(r, BATCH_ROWS);
	tl_buf out;
	tl_buf_init(&out);
	int64_t n;
	rc = 0;
	while (rc == 0 && (n = tl_ice_reader_next(r, batch, err)) > 0) {
		for (int64_t row = 0; row < n && rc == 0; row++) {
			if (!hash_set_has(set, pk_hash(schema, batch, s->npk, row)))
				continue;
			for (int k = 0; k < s->nkey && rc == 0; k++) {
				if (k > 0)
					tl_buf_append_byte(&out, '\t');
				rc = tdb_copy_text_from_parquet(&schema->columns[k], &batch->columns[k], row, &s->key_cols[k], &out,
				                                err);
			}
			tl_buf_append_byte(&out, '\n');
		}
		if (rc == 0 && out.len > 0 && PQputCopyData(s->c, (const char *)out.data, (int)out.len) != 1)
			rc = tl_error_set(err, TL_ERR_IO, "staging the lake's keys: %s", PQerrorMessage(s->c));
		tl_buf_reset(&out);
	}
	if (n < 0)
		rc = -1;
	tl_buf_free(&out);
	tl_pq_batch_free(batch);
	tl_ice_reader_free(r);
	tl_ice_scan_free(scan);
	PQputCopyEnd(s->c, rc == 0 ? NULL : "the ingest stopped");
	while ((res = PQgetResult(s->c)) != NULL) {
		if (rc == 0 && PQresultStatus(res) != PGRES_COMMAND_OK)
			rc = tl_error_set(err, TL_ERR_IO, "staging the lake's keys: %s", PQresultErrorMessage(res));
		PQclear(res);
	}
	return rc;
}

int tdb_find_lake_keys(const tdb_key_search *s, tl_error *err)
{
	hash_set set = {tl_calloc(1024, sizeof(uint64_t)), 1023, 0};
	key_sink keys = {.set = &set};
	tl_arena_init(&keys.arena, 64 * 1024);
	int rc = staged_key_hashes(s, &keys, err);
	if (rc == 0)
		rc = stage_lake_candidates(s, &keys, err);
	free(set.slots);
	free(keys.values);
	tl_arena_free(&keys.arena);
	return rc;
}
