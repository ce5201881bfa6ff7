/*
 * cmd_verify.c: `tierdb verify --table s.t`, an audit of a tiered table's
 * two halves against each other and against the invariants of SPEC §5.
 *
 * Checks, each printed as one line (ok, FAIL, or note when it cannot be
 * decided), in this order:
 *
 *   lake      the lake's current snapshot is the published S (a newer one
 *             is fine only while a journaled operation awaits recovery);
 *   partition for every tiered partition: the rows the lake holds for its
 *             range at the snapshot that tiered it equal, by count and by
 *             an order-independent checksum (digest.h), the heap partition
 *             if it is still attached and the digest the daemon journaled
 *             when it copied the partition out;
 *   lake@S    every row of the lake at S lies below T, and no key appears
 *             twice (each row is in exactly one place);
 *   retention (tables with a retention line R) no row of the lake at S
 *             lies below R: retention expired that range;
 *   heap      no row below T outside the tiered partitions awaiting drop;
 *   delta     every delta row targets a cold row (tier key below T).
 *
 * Why the snapshot that tiered a partition and not S: folds legitimately
 * change cold rows after tiering, so the lake at S no longer matches the
 * heap's rows; at the tiering snapshot nothing but that operation had
 * written rows in the partition's range (T lay below it until then).
 *
 * A mirrored table is audited as a whole instead (verify_mirrored): with
 * writes held off until the mirror has caught up, the heap and the lake at
 * S hold the same rows.
 *
 * Exit status: 0 when every check passed, 1 on any FAIL or error (SPEC §8).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "catalog.h"
#include "cli.h"
#include "digest.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "pg.h"
#include "pgtypes.h"
#include "profiles.h"
#include "schema_evolution.h"
#include "tiering.h"
#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"

/* Rows per batch when reading either side. */
#define VERIFY_BATCH_ROWS 65536

typedef struct verify_run {
	PGconn *c;
	tdb_catalog_table t;
	const char *label;
	tl_ice_table *lake;
	tdb_pg_column *cols;
	int ncols;
	bool columns_changed;     /* the lake has yet to follow an ALTER TABLE: the heap cannot be compared */
	tl_pq_schema *pq_schema;  /* the heap rows' batch shape: the lake schema's Parquet columns */
	const tl_ice_field *key_field; /* the tier key's, in the lake's current schema */
	int passed, failed, undecided;
} verify_run;

static void verify_usage(FILE *out)
{
	fputs("Usage: tierdb verify --table SCHEMA.TABLE [--dsn DSN]\n"
	      "\n"
	      "Audits a tiered table. For every tiered partition, the rows the lake received for\n"
	      "its range are compared (count and checksum) with the heap partition while it is\n"
	      "still attached, and with the digest the daemon journaled when it copied the\n"
	      "partition out. Then: the lake at the published snapshot S holds only rows below\n"
	      "the cut-line T, each key once; the heap holds no rows below T outside tiered\n"
	      "partitions awaiting their drop; every delta row lies below T; the lake is at S.\n"
	      "\n"
	      "A mirrored table: writes to it are held off (LOCK ... IN SHARE MODE) until the\n"
	      "daemon's pump has brought the mirror frontier F past the table's WAL position\n"
	      "(at most 60 s), then the heap and the lake at S are compared by count and checksum.\n"
	      "\n"
	      "Prints one line per check and exits 1 if any check fails.\n",
	      out);
}

/* ------------------------------------------------------------ reporting */

typedef enum { CHECK_OK, CHECK_FAIL, CHECK_NOTE } check_result;

static void report(verify_run *v, check_result result, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void report(verify_run *v, check_result result, const char *fmt, ...)
{
	static const char *const tags[] = {"ok  ", "FAIL", "note"};
	printf("  %s  ", tags[result]);
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (result == CHECK_OK)
		v->passed++;
	else if (result == CHECK_FAIL)
		v->failed++;
	else
		v->undecided++;
}

/* The canonical tier-key value v in the key's own type, as the server renders it. */
static const char *key_text(verify_run *v, int64_t value, tl_buf *out)
{
	tl_error ignored;
	tl_error_clear(&ignored);
	tl_buf_reset(out);
	if (tdb_key_literal(v->c, v->t.tier_key_type, value, out, &ignored) < 0) {
		tl_buf_reset(out);
		tl_buf_printf(out, "%" PRId64, value);
	}
	return tdb_buf_cstr(out);
}

/* ------------------------------------------------------------ reading the lake */

/* Whether the tier key's lake values are 32-bit (int, date); the tier key's type never changes. */
static bool key_is_int32(const verify_run *v)
{
	return v->key_field->type.id == TL_ICE_INT || v->key_field->type.id == TL_ICE_DATE;
}

/*
 * The tier key's value in row `row` of a batch, as a canonical bigint;
 * `index` is the key's column in that batch (projections place it anywhere).
 */
static int64_t batch_key(const verify_run *v, const tl_pq_batch *batch, int index, int64_t row)
{
	const tl_vector *vec = &batch->columns[index];
	if (key_is_int32(v))
		return vec->v.i32[row];
	return vec->v.i64[row];
}

/* A literal of the tier key's Iceberg type; false when it does not fit (an int column). */
static bool key_value(const verify_run *v, int64_t canonical, tl_ice_value *out)
{
	memset(out, 0, sizeof(*out));
	if (!key_is_int32(v)) {
		out->v.i64 = canonical;
		return true;
	}
	if (canonical < INT32_MIN || canonical > INT32_MAX)
		return false;
	out->v.i32 = (int32_t)canonical;
	return true;
}

/*
 * lo <= key < hi, for pruning files and row groups (rows are still checked
 * one by one). NULL when out of memory: a scan without the filter reads
 * more, with the same rows checked.
 */
static const tl_ice_expr *range_filter(const verify_run *v, int64_t lo, int64_t hi, tl_arena *arena)
{
	int32_t field_id = v->key_field->id;
	const tl_ice_expr *filter = tl_ice_expr_const(arena, true);
	tl_ice_value *bound = tl_arena_alloc(arena, 2 * sizeof(tl_ice_value));
	if (bound == NULL)
		return NULL;
	if (key_value(v, lo, &bound[0]))
		filter = tl_ice_expr_and(arena, filter, tl_ice_expr_predicate(arena, TL_ICE_EXPR_GE, field_id, &bound[0], 1));
	if (key_value(v, hi, &bound[1]))
		filter = tl_ice_expr_and(arena, filter, tl_ice_expr_predicate(arena, TL_ICE_EXPR_LT, field_id, &bound[1], 1));
	return filter;
}

/* Called for each row a lake scan yields. */
typedef void (*lake_row_fn)(void *arg, const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t row);

/*
 * Reads the lake at `snapshot` (all columns, or those of `field_ids`)
 * with Iceberg deletes applied, passing each row to `fn`. `filter` only
 * prunes; callers check rows themselves.
 */
static int scan_lake(verify_run *v, int64_t snapshot, const tl_ice_expr *filter, const int32_t *field_ids, int nfields,
                     lake_row_fn fn, void *arg, tl_error *err)
{
	tl_ice_scan *scan = tl_ice_scan_plan(v->lake->metadata, snapshot, filter, err);
	if (scan == NULL)
		return -1;
	tl_ice_reader *reader = tl_ice_reader_open(scan, field_ids, nfields, err);
	int rc = reader != NULL ? 0 : -1;
	tl_pq_batch *batch = reader != NULL ? tl_ice_reader_batch_new(reader, VERIFY_BATCH_ROWS) : NULL;
	while (rc == 0) {
		int64_t n = tl_ice_reader_next(reader, batch, err);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		for (int64_t row = 0; row < batch->nrows; row++)
			fn(arg, tl_ice_reader_schema(reader), batch, row);
	}
	tl_pq_batch_free(batch);
	tl_ice_reader_free(reader);
	tl_ice_scan_free(scan);
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------ the lake is at S */

static int check_snapshot(verify_run *v, tl_error *err)
{
	int64_t current = tdb_lake_current_snapshot(v->lake);
	int64_t published = v->t.has_snapshot ? v->t.snapshot_id : TL_ICE_NO_SNAPSHOT;
	if (current == published) {
		if (v->t.has_snapshot)
			report(v, CHECK_OK, "lake: the current snapshot is the published S %" PRId64, published);
		else
			report(v, CHECK_OK, "lake: no snapshot yet, and none published");
		return 0;
	}
	char *op_id, *phase;
	int pending = tdb_oplog_unfinished(v->c, v->t.table_id, &op_id, &phase, err);
	if (pending < 0)
		return -1;
	if (pending == 1) {
		report(v, CHECK_NOTE,
		       "lake: the current snapshot %" PRId64 " is ahead of S while operation %s (phase %s) awaits "
		       "recovery; the daemon's next cycle settles it",
		       current, op_id, phase);
		free(op_id);
		free(phase);
	} else {
		report(v, CHECK_FAIL,
		       "lake: the current snapshot %" PRId64 " is not the published S %" PRId64
		       " and no journaled operation explains it; something outside TierDB committed to %s",
		       current, published, v->lake->location);
	}
	return 0;
}

/* ------------------------------------------------------------ tiered partitions */

/* The column of a batch of `schema` that holds field_id. */
static int pq_column_of_field(const tl_pq_schema *schema, int32_t field_id)
{
	for (int i = 0; i < schema->ncolumns; i++)
		if (schema->columns[i].field_id == field_id)
			return i;
	return -1;
}

typedef struct range_digest {
	const verify_run *v;
	int key_index;
	int64_t lo, hi;
	tdb_digest digest;
} range_digest;

static void add_if_in_range(void *arg, const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t row)
{
	range_digest *d = arg;
	/* Read with the tiering snapshot's schema, where columns dropped since still are. */
	if (d->key_index < 0)
		d->key_index = pq_column_of_field(schema, d->v->key_field->id);
	int64_t key = batch_key(d->v, batch, d->key_index, row);
	if (key >= d->lo && key < d->hi)
		tdb_digest_add_row(&d->digest, schema, batch, row);
}

/* The digest of the lake's rows in [lo, hi) at `snapshot`. */
static int lake_range_digest(verify_run *v, int64_t snapshot, int64_t lo, int64_t hi, tdb_digest *out, tl_error *err)
{
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	range_digest d = {v, -1, lo, hi, {0, 0}};
	int rc = scan_lake(v, snapshot, range_filter(v, lo, hi, &arena), NULL, 0, add_if_in_range, &d, err);
	tl_arena_free(&arena);
	*out = d.digest;
	return rc;
}

/* The heap side's batch sink: the rows go into a digest. */
typedef struct heap_digest {
	const tl_pq_schema *schema;
	tdb_digest *digest;
} heap_digest;

static int add_heap_batch(void *arg, tl_pq_batch *batch, tl_error *err)
{
	heap_digest *h = arg;
	tdb_digest_add_batch(h->digest, h->schema, batch);
	return 0;
}

/* The digest of the rows `from` (SQL after FROM) yields, read as the daemon reads them (binary COPY). */
static int rows_digest(verify_run *v, const char *from, const char *what, tdb_digest *out, tl_error *err)
{
	tl_buf sql;
	tl_buf_init(&sql);
	tl_buf_append_str(&sql, "COPY (SELECT ");
	tdb_pg_copy_select_list(v->cols, v->ncols, &sql);
	tl_buf_printf(&sql, " FROM %s) TO STDOUT (FORMAT binary)", from);
	tl_pq_batch *batch = tl_pq_batch_new(v->pq_schema, VERIFY_BATCH_ROWS);
	memset(out, 0, sizeof(*out));
	heap_digest sink = {v->pq_schema, out};
	int rc = tdb_copy_batches(v->c, tdb_buf_cstr(&sql), what, v->cols, v->ncols, batch, NULL, add_heap_batch, &sink,
	                          err);
	tl_pq_batch_free(batch);
	tl_buf_free(&sql);
	return rc;
}

/* The digest of an attached heap partition's rows. */
static int heap_partition_digest(verify_run *v, const char *partition_id, tdb_digest *out, tl_error *err)
{
	char what[300];
	snprintf(what, sizeof(what), "reading heap partition %s", partition_id);
	tl_buf from;
	tl_buf_init(&from);
	tl_buf_printf(&from, "ONLY %s", partition_id);
	int rc = rows_digest(v, tdb_buf_cstr(&from), what, out, err);
	tl_buf_free(&from);
	return rc;
}

/* The digest of the cold rows (the lake at S merged with the delta, tierdb.cold_rows) in [lo, hi). */
static int cold_range_digest(verify_run *v, const char *lo, const char *hi, tdb_digest *out, tl_error *err)
{
	tl_buf from;
	tl_buf_init(&from);
	char *col = PQescapeIdentifier(v->c, v->t.tier_key_col, strlen(v->t.tier_key_col));
	tl_buf_append_str(&from, "tierdb.cold_rows(NULL::");
	tdb_pg_quote_qualified(v->t.schema_name, v->t.table_name, &from);
	tl_buf_printf(&from, ") r WHERE r.%s >= %s AND r.%s < %s", col, lo, col, hi);
	PQfreemem(col);
	int rc = rows_digest(v, tdb_buf_cstr(&from), "reading the lake's and the delta's rows", out, err);
	tl_buf_free(&from);
	return rc;
}

static bool digests_equal(const tdb_digest *a, const tdb_digest *b)
{
	return a->rows == b->rows && a->sum == b->sum;
}

/*
 * Whether a heap partition tiered at `snapshot` reads as that snapshot's
 * files were written: the table's columns are the snapshot's fields.
 */
static bool heap_comparable(const verify_run *v, int64_t snapshot)
{
	const tl_ice_snapshot *snap = tl_ice_metadata_snapshot(v->lake->metadata, snapshot);
	return !v->columns_changed && snap != NULL && snap->schema_id == v->lake->metadata->current_schema_id;
}

/*
 * One tiered partition of a --keep-heap table: the heap keeps it, and every
 * change to it since was mirrored into the delta, so its rows must equal
 * the cold rows of its range now (the lake at S merged with the delta).
 */
static int check_kept_partition(verify_run *v, const char *partition_id, int64_t lo, int64_t hi, bool attached,
                                tl_error *err)
{
	tl_buf lo_text, hi_text;
	tl_buf_init(&lo_text);
	tl_buf_init(&hi_text);
	key_text(v, lo, &lo_text);
	key_text(v, hi, &hi_text);
	int rc = 0;
	tdb_digest heap, cold;
	if (!attached)
		report(v, CHECK_FAIL, "%s [%s, %s): the table keeps its heap (--keep-heap), but the partition is gone",
		       partition_id, tdb_buf_cstr(&lo_text), tdb_buf_cstr(&hi_text));
	else if ((rc = heap_partition_digest(v, partition_id, &heap, err)) == 0 &&
	         (rc = cold_range_digest(v, tdb_buf_cstr(&lo_text), tdb_buf_cstr(&hi_text), &cold, err)) == 0)
		report(v, digests_equal(&heap, &cold) ? CHECK_OK : CHECK_FAIL,
		       "%s [%s, %s): heap %" PRId64 " rows, checksum %016" PRIx64 "; lake and delta %" PRId64
		       " rows, checksum %016" PRIx64 "%s",
		       partition_id, tdb_buf_cstr(&lo_text), tdb_buf_cstr(&hi_text), heap.rows, heap.sum, cold.rows,
		       cold.sum, digests_equal(&heap, &cold) ? "" : " (a change to the heap was not mirrored: was its "
		       "trigger tierdb_mirror disabled, e.g. by session_replication_role = replica?)");
	tl_buf_free(&lo_text);
	tl_buf_free(&hi_text);
	return rc;
}

/* One tiered partition: the lake at its tiering snapshot against the heap and the journal. */
static int check_partition(verify_run *v, PGresult *res, int i, tl_error *err)
{
	const char *partition_id = PQgetvalue(res, i, 0);
	int64_t lo = strtoll(PQgetvalue(res, i, 1), NULL, 10), hi = strtoll(PQgetvalue(res, i, 2), NULL, 10);
	bool attached = strcmp(PQgetvalue(res, i, 3), "t") == 0;
	if (v->t.keep_heap)
		return check_kept_partition(v, partition_id, lo, hi, attached, err);
	tl_buf lo_text, hi_text;
	tl_buf_init(&lo_text);
	tl_buf_init(&hi_text);
	char range[256];
	snprintf(range, sizeof(range), "%s [%s, %s)", partition_id, key_text(v, lo, &lo_text), key_text(v, hi, &hi_text));
	tl_buf_free(&lo_text);
	tl_buf_free(&hi_text);

	if (PQgetisnull(res, i, 4) || PQgetisnull(res, i, 5)) {
		report(v, CHECK_NOTE, "%s: no published tiering operation in tierdb.op_log names it; not checked", range);
		return 0;
	}
	const char *op_id = PQgetvalue(res, i, 4);
	int64_t snapshot = strtoll(PQgetvalue(res, i, 5), NULL, 10);
	if (tl_ice_metadata_snapshot(v->lake->metadata, snapshot) == NULL) {
		report(v, CHECK_NOTE, "%s: snapshot %" PRId64 " that tiered it (operation %s) has expired; not checked",
		       range, snapshot, op_id);
		return 0;
	}
	tdb_digest lake;
	if (lake_range_digest(v, snapshot, lo, hi, &lake, err) < 0)
		return -1;

	tdb_digest journaled;
	bool has_journal = false;
	if (!PQgetisnull(res, i, 6)) {
		json_t *j = json_loads(PQgetvalue(res, i, 6), 0, NULL);
		has_journal = j != NULL && tdb_digest_from_json(j, &journaled) == 0;
		json_decref(j);
	}
	/* Not after an ALTER TABLE: the heap's rows no longer read as the files were written. */
	attached = attached && heap_comparable(v, snapshot);
	tdb_digest heap;
	if (attached && heap_partition_digest(v, partition_id, &heap, err) < 0)
		return -1;

	char against[200] = "";
	bool equal = true;
	if (attached) {
		equal = digests_equal(&lake, &heap);
		snprintf(against, sizeof(against), "heap %" PRId64 " rows, checksum %016" PRIx64, heap.rows, heap.sum);
	}
	if (has_journal) {
		equal = equal && digests_equal(&lake, &journaled);
		size_t used = strlen(against);
		snprintf(against + used, sizeof(against) - used, "%sjournaled %" PRId64 " rows, checksum %016" PRIx64,
		         used > 0 ? "; " : "", journaled.rows, journaled.sum);
	}
	if (!attached && !has_journal) {
		report(v, CHECK_NOTE,
		       "%s: lake %" PRId64 " rows at snapshot %" PRId64 "; the heap partition is dropped and its "
		       "operation %s journaled no digest, so there is nothing to compare with",
		       range, lake.rows, snapshot, op_id);
		return 0;
	}
	report(v, equal ? CHECK_OK : CHECK_FAIL,
	       "%s: lake %" PRId64 " rows, checksum %016" PRIx64 " at snapshot %" PRId64 " (operation %s); %s", range,
	       lake.rows, lake.sum, snapshot, op_id, against);
	return 0;
}

static int check_partitions(verify_run *v, tl_error *err)
{
	char id[24];
	tdb_int_text(v->t.table_id, id);
	const char *params[] = {id};
	/* For each tiered partition: whether it is still attached, and the tiering operation that moved it. */
	PGresult *res = tdb_pg_query(
		v->c, "reading the tiered partitions",
		"SELECT p.partition_id, p.tier_key_lo, p.tier_key_hi,"
		" EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhparent = $1::bigint::oid"
		"         AND i.inhrelid = to_regclass(p.partition_id)),"
		" o.op_id, o.lake_snapshot_id, o.details -> 'digests' -> p.partition_id"
		" FROM tierdb.partitions p"
		" LEFT JOIN LATERAL (SELECT op_id, lake_snapshot_id, details FROM tierdb.op_log o"
		"   WHERE o.table_id = p.table_id AND o.op_kind = 'tiering' AND o.phase IN ('published', 'done')"
		"   AND o.details -> 'partitions' ? p.partition_id ORDER BY o.updated_at DESC LIMIT 1) o ON true"
		" WHERE p.table_id = $1 AND p.state IN ('tiered', 'dropped') ORDER BY p.tier_key_lo",
		1, params, err);
	if (res == NULL)
		return -1;
	int rc = 0;
	if (PQntuples(res) == 0)
		report(v, CHECK_OK, "partitions: none tiered yet");
	for (int i = 0; rc == 0 && i < PQntuples(res); i++)
		rc = check_partition(v, res, i, err);
	PQclear(res);
	return rc;
}

/* ------------------------------------------------------------ the lake at S */

typedef struct key_census {
	const verify_run *v;
	int key_index;       /* of the tier key among the columns read */
	int npk;
	int64_t rows, above_t, below_r; /* below_r: rows below the retention line R, which retention expired */
	uint64_t *hashes;    /* one per row: the hash of its key columns */
	size_t nhashes, cap;
	tl_pq_schema pk_schema; /* the key columns' shape, to hash them alone */
} key_census;

static void census_row(void *arg, const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t row)
{
	key_census *k = arg;
	k->rows++;
	int64_t key = batch_key(k->v, batch, k->key_index, row);
	if (key >= k->v->t.cutline_t)
		k->above_t++;
	if (k->v->t.has_retention_line && key < k->v->t.retention_line)
		k->below_r++;
	if (k->nhashes == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 65536;
		k->hashes = tl_realloc(k->hashes, k->cap * sizeof(uint64_t));
	}
	/* The key columns come first in the projection, so the batch's first npk columns hash alone. */
	k->hashes[k->nhashes++] = tdb_digest_row_hash(&k->pk_schema, batch, row);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Reads the key columns and the tier key of the lake at S: every row must
 * lie below T, and no key may appear twice. Keys are compared by a 64-bit
 * hash: two different keys colliding is far less likely than a bug.
 */
static int check_lake_at_s(verify_run *v, tl_error *err)
{
	if (!v->t.has_snapshot) {
		report(v, CHECK_OK, "lake@S: empty (no snapshot published yet)");
		return 0;
	}
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(v->lake->metadata);
	int32_t *ids = calloc((size_t)v->t.npk + 1, sizeof(int32_t));
	int nids = 0, key_index = -1;
	for (int i = 0; i < v->t.npk; i++) {
		const tl_ice_field *f = tl_ice_schema_find_name(schema, v->t.pk_cols[i]);
		if (f == NULL) {
			free(ids);
			return tl_error_set(err, TL_ERR_NOT_FOUND, "key column %s is not a field of the lake table %s",
			                    v->t.pk_cols[i], v->lake->location);
		}
		ids[nids++] = f->id;
		if (strcmp(v->t.pk_cols[i], v->t.tier_key_col) == 0)
			key_index = i;
	}
	if (key_index < 0) {
		key_index = nids;
		ids[nids++] = v->key_field->id;
	}
	key_census k = {.v = v, .key_index = key_index, .npk = v->t.npk};
	k.pk_schema.ncolumns = v->t.npk;
	k.pk_schema.columns = calloc((size_t)v->t.npk, sizeof(tl_pq_column));
	int rc = 0;
	for (int i = 0; rc == 0 && i < v->t.npk; i++)
		rc = tl_ice_field_to_pq_column(tl_ice_schema_find_id(schema, ids[i]), &k.pk_schema.columns[i], err);
	if (rc == 0)
		rc = scan_lake(v, v->t.snapshot_id, NULL, ids, nids, census_row, &k, err);
	if (rc == 0) {
		if (k.nhashes > 0)
			qsort(k.hashes, k.nhashes, sizeof(uint64_t), compare_u64);
		int64_t repeated = 0;
		for (size_t i = 1; i < k.nhashes; i++)
			repeated += k.hashes[i] == k.hashes[i - 1];
		tl_buf t_text;
		tl_buf_init(&t_text);
		key_text(v, v->t.cutline_t, &t_text);
		bool ok = k.above_t == 0 && repeated == 0;
		report(v, ok ? CHECK_OK : CHECK_FAIL,
		       "lake@S: %" PRId64 " rows at snapshot %" PRId64 "; %" PRId64 " at or above T %s; %" PRId64
		       " key%s appearing more than once",
		       k.rows, v->t.snapshot_id, k.above_t, tdb_buf_cstr(&t_text), repeated, repeated == 1 ? "" : "s");
		tl_buf_free(&t_text);
		if (v->t.has_retention_line) {
			/* Retention removes whole files below R (docs/retention.md): none of their rows may stay readable. */
			tl_buf r_text;
			tl_buf_init(&r_text);
			key_text(v, v->t.retention_line, &r_text);
			report(v, k.below_r == 0 ? CHECK_OK : CHECK_FAIL, "retention: %" PRId64 " rows of lake@S below R %s",
			       k.below_r, tdb_buf_cstr(&r_text));
			tl_buf_free(&r_text);
		}
	}
	free(k.hashes);
	free(k.pk_schema.columns);
	free(ids);
	return rc;
}

/* ------------------------------------------------------------ heap and delta */

static int check_heap_below_t(verify_run *v, tl_error *err)
{
	tl_buf t_text, sql;
	tl_buf_init(&t_text);
	tl_buf_init(&sql);
	key_text(v, v->t.cutline_t, &t_text);
	/* Tiered partitions awaiting their drop are sealed copies of lake rows; anything else below T is lost to reads. */
	char *col = PQescapeIdentifier(v->c, v->t.tier_key_col, strlen(v->t.tier_key_col));
	tl_buf_append_str(&sql, "SELECT count(*) FROM ");
	tdb_pg_quote_qualified(v->t.schema_name, v->t.table_name, &sql);
	tl_buf_printf(&sql,
	              " WHERE %s < %s AND tableoid NOT IN (SELECT to_regclass(partition_id) FROM tierdb.partitions"
	              " WHERE table_id = %" PRId64 " AND state = 'tiered' AND to_regclass(partition_id) IS NOT NULL)",
	              col, tdb_buf_cstr(&t_text), v->t.table_id);
	PQfreemem(col);
	PGresult *res = tdb_pg_query(v->c, "counting heap rows below T", tdb_buf_cstr(&sql), 0, NULL, err);
	tl_buf_free(&sql);
	if (res == NULL) {
		tl_buf_free(&t_text);
		return -1;
	}
	int64_t below = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	report(v, below == 0 ? CHECK_OK : CHECK_FAIL,
	       "heap: %" PRId64 " rows below T %s outside tiered partitions%s", below, tdb_buf_cstr(&t_text),
	       below == 0 ? "" : "; reads do not see them (they belong in the lake)");
	tl_buf_free(&t_text);
	return 0;
}

/*
 * The delta: no row at or above T, and none the fold left because the lake
 * cannot hold it (cli/fold.c), each of those a failure of its own.
 */
static int check_delta(verify_run *v, tl_error *err)
{
	char id[24], t[24];
	tdb_int_text(v->t.table_id, id);
	tdb_int_text(v->t.cutline_t, t);
	const char *params[] = {id, t};
	PGresult *res = tdb_pg_query(v->c, "reading the delta",
	                             "SELECT count(*), count(*) FILTER (WHERE tier_key >= $2::bigint"
	                             " OR coalesce(old_tier_key, tier_key) >= $2::bigint)"
	                             " FROM tierdb.delta WHERE table_id = $1",
	                             2, params, err);
	if (res == NULL)
		return -1;
	int64_t rows = strtoll(PQgetvalue(res, 0, 0), NULL, 10), hot = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	PQclear(res);
	report(v, hot == 0 ? CHECK_OK : CHECK_FAIL, "delta: %" PRId64 " row%s, %" PRId64 " at or above T", rows,
	       rows == 1 ? "" : "s", hot);
	res = tdb_pg_query(v->c, "reading the delta rows the fold cannot write",
	                   "SELECT w->>'pk', w->>'version', w->>'reason'"
	                   " FROM tierdb.status s, jsonb_array_elements(s.unfoldable_rows) w WHERE s.table_id = $1::bigint",
	                   1, params, err);
	if (res == NULL)
		return -1;
	for (int i = 0; i < PQntuples(res); i++)
		report(v, CHECK_FAIL,
		       "delta: row pk %s (version %s) cannot fold into the lake: %s; correct it with tierdb_upsert or "
		       "tierdb_delete",
		       PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
	PQclear(res);
	return 0;
}

/* ------------------------------------------------------------ the command */

static int prepare(verify_run *v, tl_error *err)
{
	v->lake = tdb_lake_open(&v->t, err);
	if (v->lake == NULL)
		return -1;
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(v->lake->metadata);
	if (tdb_pg_table_columns(v->c, (uint32_t)v->t.table_id, &v->cols, &v->ncols, err) < 0)
		return -1;
	/*
	 * Field i is column i unless an ALTER TABLE has changed the columns
	 * since the lake last followed (tierdb.columns says how): then the heap
	 * partitions still attached are not compared, the lake is.
	 */
	tdb_lake_change change;
	if (tdb_lake_columns_check(v->c, v->t.table_id, v->lake, v->cols, v->ncols, v->label, "verify", &change,
	                           err) < 0)
		return -1;
	v->columns_changed = tdb_lake_change_pending(&change);
	tdb_lake_change_free(&change);
	/* The tier key is never renamed, dropped or retyped (the DDL guard refuses it). */
	v->key_field = tl_ice_schema_find_name(schema, v->t.tier_key_col);
	if (v->key_field == NULL)
		return tl_error_set(err, TL_ERR_NOT_FOUND, "the tier key %s is not a field of the lake table %s",
		                    v->t.tier_key_col, v->lake->location);
	v->pq_schema = tl_ice_schema_to_pq_schema(schema, err);
	return v->pq_schema != NULL ? 0 : -1;
}

/* ------------------------------------------------------------ mirrored tables */

/* The add function of a whole-lake digest. */
static void add_lake_row(void *arg, const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t row)
{
	tdb_digest_add_row(arg, schema, batch, row);
}

/* Polls F until it reaches `lsn` (the daemon's pump moves it), for at most wait_ms. 1 reached, 0 not. */
static int wait_for_frontier(verify_run *v, int64_t lsn, int64_t wait_ms, tl_error *err)
{
	char id[24];
	tdb_int_text(v->t.table_id, id);
	const char *params[] = {id};
	for (int64_t waited = 0;; waited += 200) {
		PGresult *res = tdb_pg_query(v->c, "reading the mirror frontier",
		                             "SELECT replicated_lsn, lake_snapshot_id, tier_key_hi FROM tierdb.cutline"
		                             " WHERE table_id = $1::bigint",
		                             1, params, err);
		if (res == NULL)
			return -1;
		bool reached = !PQgetisnull(res, 0, 0) && strtoll(PQgetvalue(res, 0, 0), NULL, 10) >= lsn;
		if (reached) {
			v->t.has_snapshot = !PQgetisnull(res, 0, 1);
			v->t.snapshot_id = v->t.has_snapshot ? strtoll(PQgetvalue(res, 0, 1), NULL, 10) : 0;
			if (!PQgetisnull(res, 0, 2))
				v->t.cutline_t = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
		}
		PQclear(res);
		if (reached)
			return 1;
		if (waited >= wait_ms)
			return 0;
		struct timespec pause = {0, 200 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
}

/*
 * A mirrored table: the heap and the lake at S must hold the same rows once
 * the mirror has caught up. Writes are held off (LOCK ... IN SHARE MODE, in
 * this transaction) while the daemon's pump brings F past the WAL position
 * the lock was taken at; then both sides are read and compared by count and
 * order-independent checksum (digest.h).
 */
static int verify_mirrored(verify_run *v, tl_error *err)
{
	tl_buf lock;
	tl_buf_init(&lock);
	tl_buf_append_str(&lock, "LOCK TABLE ");
	tdb_pg_quote_qualified(v->t.schema_name, v->t.table_name, &lock);
	tl_buf_append_str(&lock, " IN SHARE MODE");
	int rc = tdb_pg_exec(v->c, "starting the audit", "BEGIN", 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(v->c, "bounding the lock wait", "SET LOCAL lock_timeout = '10s'", 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(v->c, "holding off writes to the table", tdb_buf_cstr(&lock), 0, NULL, err);
	tl_buf_free(&lock);
	PGresult *res = rc == 0 ? tdb_pg_query(v->c, "reading the WAL position",
	                                       "SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint", 0, NULL, err)
	                        : NULL;
	if (res == NULL)
		return -1;
	int64_t lsn = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	printf("verify %s: mirrored; writes held off until the mirror frontier passes %" PRId64 "\n", v->label, lsn);
	fflush(stdout);
	int reached = wait_for_frontier(v, lsn, 60000, err);
	if (reached < 0)
		return -1;
	if (reached == 0) {
		report(v, CHECK_FAIL, "mirror: the frontier F did not reach the table's WAL position within 60 s: is the "
		       "daemon running ('tierdb status' shows F)?");
		return 0;
	}
	report(v, CHECK_OK, "mirror: the frontier F passed the table's WAL position");
	tl_ice_table_free(v->lake);
	v->lake = tdb_lake_open(&v->t, err);
	if (v->lake == NULL || check_snapshot(v, err) < 0)
		return -1;
	tdb_digest heap, lake;
	memset(&lake, 0, sizeof(lake));
	tl_buf from;
	tl_buf_init(&from);
	tdb_pg_quote_qualified(v->t.schema_name, v->t.table_name, &from);
	rc = rows_digest(v, tdb_buf_cstr(&from), "reading the heap", &heap, err);
	tl_buf_free(&from);
	/* a heap window holds the rows at or above T; below it the lake (and the delta) are the table's only copy */
	if (rc == 0 && v->t.has_snapshot)
		rc = v->t.has_heap_retention ? lake_range_digest(v, v->t.snapshot_id, v->t.cutline_t, INT64_MAX, &lake, err)
		                             : scan_lake(v, v->t.snapshot_id, NULL, NULL, 0, add_lake_row, &lake, err);
	if (rc < 0)
		return -1;
	if (v->columns_changed)
		report(v, CHECK_NOTE, "mirror: the lake has yet to follow an ALTER TABLE; rows not compared");
	else if (heap.rows == lake.rows && heap.sum == lake.sum)
		report(v, CHECK_OK, "mirror: the lake at S holds the heap's %" PRId64 " rows%s (checksums match)", heap.rows,
		       v->t.has_heap_retention ? " at or above T" : "");
	else
		report(v, CHECK_FAIL, "mirror: the heap holds %" PRId64 " rows, the lake at S %" PRId64 "%s", heap.rows,
		       lake.rows, heap.rows == lake.rows ? " with other values (checksums differ)" : "");
	return tdb_pg_exec(v->c, "ending the audit", "COMMIT", 0, NULL, err);
}

static int verify_table(verify_run *v, tl_error *err)
{
	if (prepare(v, err) < 0)
		return -1;
	if (strcmp(v->t.mode, "mirrored") == 0)
		return verify_mirrored(v, err);
	tl_buf t_text;
	tl_buf_init(&t_text);
	char s_text[24] = "none";
	if (v->t.has_snapshot)
		tdb_int_text(v->t.snapshot_id, s_text);
	printf("verify %s: T %s, S %s, lake %s\n", v->label, key_text(v, v->t.cutline_t, &t_text), s_text,
	       v->lake->location);
	tl_buf_free(&t_text);
	if (check_snapshot(v, err) < 0 || check_partitions(v, err) < 0 || check_lake_at_s(v, err) < 0 ||
	    check_heap_below_t(v, err) < 0 || check_delta(v, err) < 0)
		return -1;
	return 0;
}

static int run_verify(int argc, char **argv)
{
	static const char *cmd = "tierdb verify";
	enum { OPT_TABLE = 1, OPT_DSN };
	static const cli_option options[] = {{"table", true, OPT_TABLE}, {"dsn", true, OPT_DSN}, {NULL, false, 0}};
	const char *table = NULL, *dsn = NULL;
	cli_parser p;
	cli_parser_init(&p, cmd, verify_usage, options, argc, argv);
	for (int opt; (opt = cli_next(&p)) != CLI_END;) {
		switch (opt) {
		case CLI_HELP: return cli_help(&p);
		case CLI_ERROR: return CLI_EXIT_USAGE;
		case CLI_POSITIONAL: return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
		case OPT_TABLE: table = p.value; break;
		case OPT_DSN: dsn = p.value; break;
		}
	}
	if (table == NULL)
		return cli_usage_error(cmd, "--table is required");
	tl_error err;
	tl_error_clear(&err);
	tdb_table_name name;
	if (tdb_table_name_parse(table, &name, &err) < 0)
		return cli_usage_error(cmd, "--table: %s", err.message);
	verify_run v;
	memset(&v, 0, sizeof(v));
	v.c = tdb_pg_connect(dsn, &err);
	int rc = CLI_EXIT_FAILURE;
	int found = -1;
	if (v.c != NULL && tdb_catalog_check(v.c, &err) == 0 && tdb_profiles_serve(v.c, NULL, &err) == 0)
		found = tdb_catalog_load_table(v.c, name.schema, name.table, &v.t, &err);
	if (found == 0)
		cli_fail("%s.%s is not registered; 'tierdb status' lists the registered tables", name.schema, name.table);
	else if (found < 0)
		cli_fail("%s", err.message);
	else {
		v.label = tdb_table_label(&v.t);
		if (verify_table(&v, &err) < 0)
			cli_fail("%s", err.message);
		else if (v.failed > 0)
			printf("verify %s: %d check%s FAILED, %d passed, %d undecided\n", v.label, v.failed,
			       v.failed == 1 ? "" : "s", v.passed, v.undecided);
		else {
			printf("verify %s: ok, %d checks passed, %d undecided\n", v.label, v.passed, v.undecided);
			rc = cli_finish_output();
		}
		tdb_catalog_table_free(&v.t);
	}
	tl_pq_schema_free(v.pq_schema);
	tdb_pg_columns_free(v.cols, v.ncols);
	tl_ice_table_free(v.lake);
	PQfinish(v.c);
	tdb_table_name_free(&name);
	return rc;
}

const cli_command cli_verify_command = {"verify", "audit a tiered table's heap against its lake", run_verify};
