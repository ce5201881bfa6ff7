/*
 * scan.c: planning a scan of an Iceberg table at one snapshot.
 *
 * The planner reads the snapshot's manifest list, drops manifests whose
 * partition summaries rule the filter out, then reads each remaining
 * manifest and keeps the live files the partition tuple and column metrics
 * cannot rule out. Kept entries are copied into the scan's arena because
 * the manifest reader reuses its memory; skipped ones are never copied.
 * Pairing data files with delete files is in scan_deletes.c.
 *
 * Planning speed is dominated by opening and decoding manifests, so small
 * files are read with one read_at into a reused buffer and decoded from
 * memory, and nothing is allocated per file but the arena copies.
 */
#include <stdlib.h>
#include <string.h>

#include "tierlake/iceberg_scan.h"
#include "iceberg/scan_internal.h"

/* Manifests and manifest lists up to this size (Java targets 8 MiB manifests) are read whole. */
#define WHOLE_FILE_MAX (16u << 20)

/* A manifest to read: what the list said about it, path copied. */
typedef struct planned_manifest {
	tl_ice_manifest_file mf;    /* partitions not kept */
	bool spec_from_header;      /* listed by an old v1 snapshot: no spec id */
} planned_manifest;

typedef struct planner {
	tl_ice_scan *scan;
	tl_buf file;                /* the bytes of the file being decoded */
	tl_buf key;                 /* a partition key being built */
	tl_arena paths;             /* manifest paths, freed when planning ends */
	planned_manifest *manifests;
	int nmanifests, cap_manifests;
	/* Partition-scoped deletes may exist: data files need partition keys. */
	bool need_keys;
} planner;

/* ------------------------------------------------------------ copies */

/*
 * The copies below go into the scan's arena without a check at every
 * pointer: out of memory they leave NULLs, and the planner compares
 * tl_mem_failures() once per manifest entry it keeps (keep_entry) and for
 * the filter, so no half-copied file reaches a task.
 */

static const char *arena_strdup(tl_arena *a, const char *s)
{
	if (s == NULL)
		return NULL;
	size_t n = strlen(s);
	char *d = tl_arena_alloc(a, n + 1);
	if (d != NULL)
		memcpy(d, s, n + 1);
	return d;
}

static void *arena_dup(tl_arena *a, const void *src, size_t n)
{
	if (n == 0 || src == NULL)
		return NULL;
	void *d = tl_arena_alloc(a, n);
	if (d != NULL)
		memcpy(d, src, n);
	return d;
}

/* A value's bytes (strings, binaries, decimals as fixed) live in the arena afterwards. */
static void copy_value(tl_arena *a, const tl_ice_value *src, tl_ice_value *dst)
{
	*dst = *src;
	if (src->ptr != NULL)
		dst->ptr = src->len ? arena_dup(a, src->ptr, src->len) : (const uint8_t *)"";
}

static void copy_long_map(tl_arena *a, const tl_ice_long_map *src, tl_ice_long_map *dst)
{
	dst->n = src->n;
	dst->keys = arena_dup(a, src->keys, sizeof(int32_t) * src->n);
	dst->values = arena_dup(a, src->values, sizeof(int64_t) * src->n);
}

static void copy_bytes_map(tl_arena *a, const tl_ice_bytes_map *src, tl_ice_bytes_map *dst)
{
	dst->n = src->n;
	dst->keys = arena_dup(a, src->keys, sizeof(int32_t) * src->n);
	dst->values = src->n ? tl_arena_alloc(a, sizeof(tl_bytes) * src->n) : NULL;
	for (uint32_t i = 0; dst->values != NULL && i < src->n; i++)
		dst->values[i] = tl_arena_copy(a, src->values[i].ptr, src->values[i].len);
}

static void copy_data_file(tl_arena *a, const tl_ice_data_file *src, tl_ice_data_file *dst)
{
	*dst = *src;
	dst->file_path = arena_strdup(a, src->file_path);
	dst->file_format = arena_strdup(a, src->file_format);
	dst->partition = src->npartition ? tl_arena_alloc(a, sizeof(tl_ice_value) * (size_t)src->npartition) : NULL;
	for (int i = 0; dst->partition != NULL && i < src->npartition; i++)
		copy_value(a, &src->partition[i], &dst->partition[i]);
	copy_long_map(a, &src->column_sizes, &dst->column_sizes);
	copy_long_map(a, &src->value_counts, &dst->value_counts);
	copy_long_map(a, &src->null_value_counts, &dst->null_value_counts);
	copy_long_map(a, &src->nan_value_counts, &dst->nan_value_counts);
	copy_bytes_map(a, &src->lower_bounds, &dst->lower_bounds);
	copy_bytes_map(a, &src->upper_bounds, &dst->upper_bounds);
	dst->split_offsets = arena_dup(a, src->split_offsets, sizeof(int64_t) * src->n_split_offsets);
	dst->equality_ids = arena_dup(a, src->equality_ids, sizeof(int32_t) * src->n_equality_ids);
}

static const tl_ice_expr *copy_expr(tl_arena *a, const tl_ice_expr *src)
{
	tl_ice_expr *e = tl_arena_alloc(a, sizeof(*e));
	if (e == NULL)
		return NULL;
	*e = *src;
	if (src->left)
		e->left = copy_expr(a, src->left);
	if (src->right)
		e->right = copy_expr(a, src->right);
	if (src->nvalues > 0 && src->values != NULL) {
		tl_ice_value *v = tl_arena_alloc(a, sizeof(tl_ice_value) * (size_t)src->nvalues);
		for (int i = 0; v != NULL && i < src->nvalues; i++)
			copy_value(a, &src->values[i], &v[i]);
		e->values = v;
	}
	return e;
}

/* ------------------------------------------------------------- files */

/*
 * Opens a metadata file for decoding: a small one is read with a single
 * read_at into `whole` and decoded from memory (one system call instead of
 * one per Avro block); a large one is decoded from the file.
 */
static tl_input *open_metadata_file(const char *uri, tl_buf *whole, tl_error *err)
{
	tl_input *in = tl_input_open_uri(uri, err);
	if (in == NULL || in->size > WHOLE_FILE_MAX)
		return in;
	tl_buf_reset(whole);
	if (tl_buf_reserve(whole, (size_t)in->size + 1) < 0) {
		tl_input_close(in);
		tl_error_nomem(err, "reading a metadata file");
		return NULL;
	}
	if (tl_input_read(in, 0, whole->data, (size_t)in->size, err) < 0) {
		tl_input_close(in);
		return NULL;
	}
	whole->len = (size_t)in->size;
	tl_input *mem = tl_input_from_memory(whole->data, whole->len, in->name);
	if (mem == NULL)
		tl_error_nomem(err, "reading %s", in->name);
	tl_input_close(in);
	return mem;
}

/* Names the file in err unless the message already does. */
static int fail_in(tl_error *err, const char *what, const char *path)
{
	if (err != NULL && strstr(err->message, path) == NULL)
		tl_error_prefix(err, "%s %s", what, path);
	return -1;
}

/* ------------------------------------------------------------- specs */

bool tl_ice_scan_spec_unpartitioned(const tl_ice_partition_spec *spec)
{
	for (int i = 0; i < spec->nfields; i++)
		if (spec->fields[i].transform.kind != TL_ICE_VOID)
			return false;
	return true;
}

const tl_ice_partition_spec *tl_ice_scan_spec(const tl_ice_scan *scan, int32_t spec_id)
{
	for (int i = 0; i < scan->nspecs; i++)
		if (scan->specs[i].spec_id == spec_id)
			return &scan->specs[i];
	return NULL;
}

static const tl_ice_partition_spec *require_spec(const tl_ice_scan *scan, int32_t spec_id, const char *path,
                                                 tl_error *err)
{
	const tl_ice_partition_spec *spec = tl_ice_scan_spec(scan, spec_id);
	if (spec == NULL)
		tl_error_set(err, TL_ERR_CORRUPT, "manifest %s has partition spec id %d, which the table metadata lacks",
		             path, spec_id);
	return spec;
}

/* ---------------------------------------------------- manifest list */

/* -1 when out of memory. */
static int add_manifest(planner *p, const tl_ice_manifest_file *mf, bool spec_from_header, tl_error *err)
{
	if (p->nmanifests == p->cap_manifests) {
		int cap = p->cap_manifests ? 2 * p->cap_manifests : 64;
		planned_manifest *manifests = tl_realloc(p->manifests, sizeof(planned_manifest) * (size_t)cap);
		if (manifests == NULL)
			return tl_error_nomem(err, "planning a scan");
		p->manifests = manifests;
		p->cap_manifests = cap;
	}
	const char *path = arena_strdup(&p->paths, mf->manifest_path);
	if (path == NULL)
		return tl_error_nomem(err, "planning a scan");
	planned_manifest *pm = &p->manifests[p->nmanifests++];
	pm->mf = *mf;
	pm->mf.manifest_path = path;
	pm->mf.n_partitions = 0;
	pm->mf.partitions = NULL;
	pm->spec_from_header = spec_from_header;
	return 0;
}

/* Counts a listed manifest and keeps it unless its summaries rule the filter out. */
static int consider_manifest(planner *p, const tl_ice_manifest_file *mf, tl_error *err)
{
	tl_ice_scan *scan = p->scan;
	scan->stats.manifests++;
	const tl_ice_partition_spec *spec = require_spec(scan, mf->partition_spec_id, mf->manifest_path, err);
	if (spec == NULL)
		return -1;
	if (mf->content != TL_ICE_MANIFEST_DATA && mf->content != TL_ICE_MANIFEST_DELETES)
		return tl_error_set(err, TL_ERR_CORRUPT, "manifest %s has content %d", mf->manifest_path, mf->content);
	if (scan->filter != NULL &&
	    !tl_ice_expr_may_match_summaries(scan->filter, &scan->schema, spec, mf->partitions, mf->n_partitions)) {
		scan->stats.manifests_skipped++;
		return 0;
	}
	if (mf->content == TL_ICE_MANIFEST_DELETES && !tl_ice_scan_spec_unpartitioned(spec))
		p->need_keys = true;
	return add_manifest(p, mf, false, err);
}

static int read_manifest_list(planner *p, const char *path, tl_error *err)
{
	tl_input *in = open_metadata_file(path, &p->file, err);
	if (in == NULL)
		return fail_in(err, "manifest list", path);
	tl_ice_manifest_list_reader *r = tl_ice_manifest_list_reader_open(in, err);
	int rc = r == NULL ? -1 : 0;
	const tl_ice_manifest_file *mf;
	while (rc == 0) {
		int got = tl_ice_manifest_list_reader_next(r, &mf, err);
		if (got <= 0) {
			rc = got;
			break;
		}
		rc = consider_manifest(p, mf, err);
	}
	tl_ice_manifest_list_reader_free(r);
	tl_input_close(in);
	return rc < 0 ? fail_in(err, "manifest list", path) : 0;
}

/*
 * Old v1 snapshots name their manifests directly. They hold data files
 * only, with sequence number 0; their spec id is in each manifest's header.
 */
static int list_v1_manifests(planner *p, const tl_ice_snapshot *snap, tl_error *err)
{
	for (int i = 0; i < snap->nmanifests; i++) {
		tl_ice_manifest_file mf;
		memset(&mf, 0, sizeof(mf));
		mf.manifest_path = snap->manifests[i];
		mf.content = TL_ICE_MANIFEST_DATA;
		mf.added_snapshot_id = snap->snapshot_id;
		p->scan->stats.manifests++;
		if (add_manifest(p, &mf, true, err) < 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------- manifests */

/* The canonical byte form of a partition tuple (scan_internal.h). */
static int partition_key(planner *p, const tl_ice_type *ptype, const tl_ice_data_file *f, tl_bytes *out,
                         tl_error *err)
{
	tl_buf *k = &p->key;
	tl_buf_reset(k);
	for (int i = 0; i < f->npartition; i++) {
		if (f->partition[i].is_null) {
			tl_buf_append_byte(k, 0);
			continue;
		}
		tl_buf_append_byte(k, 1);
		size_t at = k->len;
		if (tl_buf_extend(k, 4) == NULL)
			return tl_error_nomem(err, "for a partition key");
		if (tl_ice_value_serialize(&ptype->fields[i].type, &f->partition[i], k, err) < 0)
			return -1;
		uint32_t n = (uint32_t)(k->len - at - 4);
		memcpy(k->data + at, &n, 4);
	}
	if (tl_buf_check(k, err, "for a partition key") < 0)
		return -1;
	*out = tl_arena_copy(&p->scan->arena, k->data, (uint32_t)k->len);
	if (out->ptr == NULL)
		return tl_error_nomem(err, "for a partition key");
	return 0;
}

/* Room for one more task or delete file (and its key), growing geometrically; false when out of memory. */
static bool reserve_task(tl_ice_scan *scan)
{
	if (scan->ntasks < scan->cap_tasks)
		return true;
	int cap = scan->cap_tasks ? 2 * scan->cap_tasks : 256;
	tl_ice_scan_task *tasks = tl_realloc(scan->tasks, sizeof(tl_ice_scan_task) * (size_t)cap);
	if (tasks == NULL)
		return false;
	scan->tasks = tasks;
	tl_bytes *keys = tl_realloc(scan->task_keys, sizeof(tl_bytes) * (size_t)cap);
	if (keys == NULL)
		return false;
	scan->task_keys = keys;
	scan->cap_tasks = cap;
	return true;
}

static bool reserve_delete(tl_ice_scan *scan)
{
	if (scan->ndeletes < scan->cap_deletes)
		return true;
	int cap = scan->cap_deletes ? 2 * scan->cap_deletes : 64;
	tl_ice_delete_file *deletes = tl_realloc(scan->deletes, sizeof(tl_ice_delete_file) * (size_t)cap);
	if (deletes == NULL)
		return false;
	scan->deletes = deletes;
	tl_bytes *keys = tl_realloc(scan->delete_keys, sizeof(tl_bytes) * (size_t)cap);
	if (keys == NULL)
		return false;
	scan->delete_keys = keys;
	scan->cap_deletes = cap;
	return true;
}

static int keep_entry(planner *p, const tl_ice_manifest_entry *e, int32_t spec_id, bool keyed,
                      const tl_ice_type *ptype, tl_error *err)
{
	tl_ice_scan *scan = p->scan;
	tl_bytes key = {(const uint8_t *)"", 0};
	if (keyed && partition_key(p, ptype, &e->data_file, &key, err) < 0)
		return -1;
	unsigned long failures = tl_mem_failures();
	if (e->data_file.content == TL_ICE_CONTENT_DATA) {
		if (!reserve_task(scan))
			return tl_error_nomem(err, "planning a scan");
		tl_ice_scan_task *t = &scan->tasks[scan->ntasks];
		memset(t, 0, sizeof(*t));
		copy_data_file(&scan->arena, &e->data_file, &t->file);
		if (tl_mem_failures() != failures)
			return tl_error_nomem(err, "planning a scan");
		t->spec_id = spec_id;
		t->sequence_number = e->sequence_number;
		scan->task_keys[scan->ntasks++] = key;
		scan->stats.records += e->data_file.record_count;
	} else {
		if (!reserve_delete(scan))
			return tl_error_nomem(err, "planning a scan");
		tl_ice_delete_file *d = &scan->deletes[scan->ndeletes];
		copy_data_file(&scan->arena, &e->data_file, &d->file);
		if (tl_mem_failures() != failures)
			return tl_error_nomem(err, "planning a scan");
		d->spec_id = spec_id;
		d->sequence_number = e->sequence_number;
		scan->delete_keys[scan->ndeletes++] = key;
	}
	return 0;
}

/*
 * Decides one manifest entry. Data files may be ruled out by partition
 * tuple and metrics. Delete files only by partition tuple: a delete in a
 * partition the filter rules out applies to no kept data file, but a delete
 * whose own metrics miss the filter may still delete rows of a kept file
 * (the reader returns kept files' rows whether or not they match).
 */
static int take_entry(planner *p, const planned_manifest *pm, const tl_ice_partition_spec *spec,
                      const tl_ice_type *ptype, const tl_ice_manifest_entry *read, tl_error *err)
{
	tl_ice_scan *scan = p->scan;
	tl_ice_manifest_entry e = *read;
	if (tl_ice_manifest_entry_inherit(&e, &pm->mf, err) < 0)
		return -1;
	if (e.status == TL_ICE_STATUS_DELETED)
		return 0;
	const tl_ice_data_file *f = &e.data_file;
	if (f->npartition != spec->nfields)
		return tl_error_set(err, TL_ERR_CORRUPT, "file %s has %d partition values but spec %d has %d fields",
		                    f->file_path, f->npartition, spec->spec_id, spec->nfields);
	bool is_data = f->content == TL_ICE_CONTENT_DATA;
	if (is_data)
		scan->stats.data_files++;
	if (scan->filter != NULL &&
	    (!tl_ice_expr_may_match_partition(scan->filter, &scan->schema, spec, f->partition) ||
	     (is_data && !tl_ice_expr_may_match_metrics(scan->filter, &scan->schema, f)))) {
		if (is_data)
			scan->stats.data_files_skipped++;
		return 0;
	}
	bool keyed = p->need_keys && !tl_ice_scan_spec_unpartitioned(spec);
	return keep_entry(p, &e, spec->spec_id, keyed, ptype, err);
}

static int read_manifest(planner *p, const planned_manifest *pm, tl_error *err)
{
	const char *path = pm->mf.manifest_path;
	tl_input *in = open_metadata_file(path, &p->file, err);
	if (in == NULL)
		return fail_in(err, "manifest", path);
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, err);
	int rc = r == NULL ? -1 : 0;
	const tl_ice_partition_spec *spec = NULL;
	if (rc == 0) {
		int32_t spec_id = pm->spec_from_header ? tl_ice_manifest_reader_spec_id(r) : pm->mf.partition_spec_id;
		spec = require_spec(p->scan, spec_id, path, err);
		if (spec == NULL)
			rc = -1;
	}
	if (rc == 0 && tl_ice_manifest_reader_content(r) != pm->mf.content)
		rc = tl_error_set(err, TL_ERR_CORRUPT, "the manifest list calls it a %s manifest, its header does not",
		                  pm->mf.content == TL_ICE_MANIFEST_DATA ? "data" : "delete");
	const tl_ice_type *ptype = r ? tl_ice_manifest_reader_partition_type(r) : NULL;
	const tl_ice_manifest_entry *e;
	while (rc == 0) {
		int got = tl_ice_manifest_reader_next(r, &e, err);
		if (got <= 0) {
			rc = got;
			break;
		}
		rc = take_entry(p, pm, spec, ptype, e, err);
	}
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	return rc < 0 ? fail_in(err, "manifest", path) : 0;
}

/* -------------------------------------------------------------- plan */

static int copy_table_parts(tl_ice_scan *scan, const tl_ice_table_metadata *md, const tl_ice_snapshot *snap,
                            tl_error *err)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(md);
	if (snap != NULL && snap->schema_id >= 0) {
		schema = tl_ice_metadata_schema(md, snap->schema_id);
		if (schema == NULL)
			return tl_error_set(err, TL_ERR_CORRUPT, "snapshot %lld names schema %d, which the table metadata lacks",
			                    (long long)snap->snapshot_id, snap->schema_id);
	}
	if (schema == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "table metadata has no current schema");
	if (tl_ice_schema_copy(schema, &scan->schema) < 0)
		return tl_error_set(err, TL_ERR_NOMEM, "copying the scan schema");
	scan->have_schema = true;
	scan->specs = md->nspecs ? tl_calloc((size_t)md->nspecs, sizeof(tl_ice_partition_spec)) : NULL;
	if (md->nspecs && scan->specs == NULL)
		return tl_error_nomem(err, "copying the partition specs");
	for (int i = 0; i < md->nspecs; i++) {
		if (tl_ice_partition_spec_copy(&md->specs[i], &scan->specs[i]) < 0)
			return tl_error_set(err, TL_ERR_NOMEM, "copying partition spec %d", md->specs[i].spec_id);
		scan->nspecs++;
	}
	return 0;
}

static int plan_snapshot(tl_ice_scan *scan, const tl_ice_snapshot *snap, tl_error *err)
{
	planner p;
	memset(&p, 0, sizeof(p));
	p.scan = scan;
	tl_buf_init(&p.file);
	tl_buf_init(&p.key);
	tl_arena_init(&p.paths, 16384);
	int rc = 0;
	if (snap->manifest_list != NULL)
		rc = read_manifest_list(&p, snap->manifest_list, err);
	else
		rc = list_v1_manifests(&p, snap, err);
	for (int i = 0; rc == 0 && i < p.nmanifests; i++) {
		rc = tl_check_interrupt(err);
		if (rc == 0)
			rc = read_manifest(&p, &p.manifests[i], err);
	}
	if (rc == 0)
		rc = tl_ice_scan_associate_deletes(scan, err);
	tl_free(p.manifests);
	tl_arena_free(&p.paths);
	tl_buf_free(&p.file);
	tl_buf_free(&p.key);
	if (rc < 0)
		tl_error_prefix(err, "planning snapshot %lld", (long long)snap->snapshot_id);
	return rc;
}

tl_ice_scan *tl_ice_scan_plan(const tl_ice_table_metadata *md, int64_t snapshot_id, const tl_ice_expr *filter,
                              tl_error *err)
{
	const tl_ice_snapshot *snap;
	if (snapshot_id == TL_ICE_NO_SNAPSHOT) {
		snap = tl_ice_metadata_current_snapshot(md);
	} else {
		snap = tl_ice_metadata_snapshot(md, snapshot_id);
		if (snap == NULL) {
			tl_error_set(err, TL_ERR_NOT_FOUND, "snapshot %lld does not exist in table %s", (long long)snapshot_id,
			             md->location ? md->location : "(no location)");
			return NULL;
		}
	}
	tl_ice_scan *scan = tl_calloc(1, sizeof(*scan));
	if (scan == NULL) {
		tl_error_nomem(err, "planning a scan");
		return NULL;
	}
	tl_arena_init(&scan->arena, 256 * 1024);
	scan->snapshot_id = snap ? snap->snapshot_id : 0;
	unsigned long failures = tl_mem_failures();
	if (filter != NULL && filter->op != TL_ICE_EXPR_TRUE)
		scan->filter = copy_expr(&scan->arena, filter);
	if (tl_mem_failures() != failures) {
		tl_ice_scan_free(scan);
		tl_error_nomem(err, "copying the scan filter");
		return NULL;
	}
	if (copy_table_parts(scan, md, snap, err) < 0 || (snap != NULL && plan_snapshot(scan, snap, err) < 0)) {
		tl_ice_scan_free(scan);
		return NULL;
	}
	return scan;
}

void tl_ice_scan_free(tl_ice_scan *scan)
{
	if (scan == NULL)
		return;
	if (scan->have_schema)
		tl_ice_schema_free(&scan->schema);
	for (int i = 0; i < scan->nspecs; i++)
		tl_ice_partition_spec_free(&scan->specs[i]);
	tl_free(scan->specs);
	tl_free(scan->tasks);
	tl_free(scan->task_keys);
	tl_free(scan->deletes);
	tl_free(scan->delete_keys);
	tl_arena_free(&scan->arena);
	tl_free(scan);
}

/* --------------------------------------------------------- accessors */

int64_t tl_ice_scan_snapshot_id(const tl_ice_scan *scan) { return scan->snapshot_id; }
const tl_ice_schema *tl_ice_scan_schema(const tl_ice_scan *scan) { return &scan->schema; }
int tl_ice_scan_ntasks(const tl_ice_scan *scan) { return scan->ntasks; }
const tl_ice_scan_stats *tl_ice_scan_stats_get(const tl_ice_scan *scan) { return &scan->stats; }
const tl_ice_expr *tl_ice_scan_filter(const tl_ice_scan *scan) { return scan->filter; }

const tl_ice_scan_task *tl_ice_scan_task_at(const tl_ice_scan *scan, int i)
{
	if (i < 0 || i >= scan->ntasks)
		return NULL;
	return &scan->tasks[i];
}
