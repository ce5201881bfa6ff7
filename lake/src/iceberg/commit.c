/*
 * commit.c: commits to path-based Iceberg tables: append, row delta,
 * delete and replace, with the semantics of Java Iceberg's SnapshotProducer
 * and MergingSnapshotProducer.
 *
 * A commit collects added files and removed paths, and at finish builds the
 * new snapshot on the table's current one (the base): new files go into one
 * new data manifest and one new delete manifest; each base manifest holding
 * a removed file is rewritten with that entry DELETED and the other live
 * entries EXISTING (sequence numbers kept, so deletes keep applying to the
 * right rows); the other base manifests are carried over unchanged, except
 * those left with no live files, which Java drops too. Then the manifest
 * list, then v<N+1>.metadata.json, published so that it never replaces
 * another writer's (table.c). Everything one attempt writes is named with
 * a fresh uuid and removed again if the attempt fails, so a caller that
 * loses the race can refresh the table and finish the same commit again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "tierlake/iceberg_table.h"
#include "tierlake/storage.h"
#include "iceberg/commit_internal.h"
#include "iceberg/rest_internal.h"
#include "iceberg/table_internal.h"

struct tl_ice_commit {
	tl_ice_table *table;
	tl_ice_operation op;
	int64_t begin_snapshot_id;   /* the base when the commit began, to tell a lost race from a bad path */
	tl_arena arena;              /* deep copies of the added files */
	tl_ice_data_file *added;
	int nadded, added_cap;
	char **removed;              /* sorted and deduplicated at finish */
	int nremoved, removed_cap;
	tl_ice_kv *summary;          /* the caller's summary entries */
	int nsummary;
	int64_t snapshot_id;         /* 0 until the first finish picks one; kept across retries */
	int attempts;
	bool committed;
};

/* ------------------------------------------------------ collecting */

static void *arena_dup(tl_arena *a, const void *src, size_t n)
{
	if (src == NULL || n == 0)
		return NULL;
	void *p = tl_arena_alloc(a, n);
	if (p != NULL)
		memcpy(p, src, n);
	return p;
}

static void copy_long_map(tl_arena *a, tl_ice_long_map *dst, const tl_ice_long_map *src)
{
	dst->n = src->n;
	dst->keys = arena_dup(a, src->keys, sizeof(int32_t) * src->n);
	dst->values = arena_dup(a, src->values, sizeof(int64_t) * src->n);
}

static void copy_bytes_map(tl_arena *a, tl_ice_bytes_map *dst, const tl_ice_bytes_map *src)
{
	dst->n = src->n;
	dst->keys = arena_dup(a, src->keys, sizeof(int32_t) * src->n);
	dst->values = src->n ? tl_arena_alloc(a, sizeof(tl_bytes) * src->n) : NULL;
	for (uint32_t i = 0; dst->values != NULL && i < src->n; i++)
		dst->values[i] = tl_arena_copy(a, src->values[i].ptr, src->values[i].len);
}

void tl_ice_commit_copy_data_file(tl_arena *a, tl_ice_data_file *dst, const tl_ice_data_file *src)
{
	*dst = *src;
	dst->file_path = arena_dup(a, src->file_path, strlen(src->file_path) + 1);
	dst->file_format = arena_dup(a, src->file_format, strlen(src->file_format) + 1);
	dst->partition = arena_dup(a, src->partition, sizeof(tl_ice_value) * (size_t)src->npartition);
	for (int i = 0; dst->partition != NULL && i < src->npartition; i++)
		if (src->partition[i].ptr != NULL)
			dst->partition[i].ptr = arena_dup(a, src->partition[i].ptr, src->partition[i].len);
	copy_long_map(a, &dst->column_sizes, &src->column_sizes);
	copy_long_map(a, &dst->value_counts, &src->value_counts);
	copy_long_map(a, &dst->null_value_counts, &src->null_value_counts);
	copy_long_map(a, &dst->nan_value_counts, &src->nan_value_counts);
	copy_bytes_map(a, &dst->lower_bounds, &src->lower_bounds);
	copy_bytes_map(a, &dst->upper_bounds, &src->upper_bounds);
	dst->split_offsets = arena_dup(a, src->split_offsets, sizeof(int64_t) * src->n_split_offsets);
	dst->equality_ids = arena_dup(a, src->equality_ids, sizeof(int32_t) * src->n_equality_ids);
}

static const char *operation_name(tl_ice_operation op)
{
	switch (op) {
	case TL_ICE_OP_APPEND: return "append";
	case TL_ICE_OP_ROW_DELTA: return "row delta";
	case TL_ICE_OP_DELETE: return "delete";
	case TL_ICE_OP_REPLACE: return "replace";
	case TL_ICE_OP_OVERWRITE: return "overwrite";
	}
	return "?";
}

tl_ice_commit *tl_ice_commit_begin(tl_ice_table *t, tl_ice_operation op, tl_error *err)
{
	if (op != TL_ICE_OP_APPEND && op != TL_ICE_OP_ROW_DELTA && op != TL_ICE_OP_DELETE && op != TL_ICE_OP_REPLACE &&
	    op != TL_ICE_OP_OVERWRITE) {
		tl_error_set(err, TL_ERR_INVALID, "commit to table %s: unknown operation %d", t->location, (int)op);
		return NULL;
	}
	if (tl_ice_table_commit_dir(t, err) == NULL)
		return NULL;
	tl_ice_commit *c = tl_calloc(1, sizeof(*c));
	if (c == NULL) {
		tl_error_nomem(err, "starting a commit to table %s", t->location);
		return NULL;
	}
	c->table = t;
	c->op = op;
	c->begin_snapshot_id = tl_ice_commit_base_snapshot_id(t->metadata);
	tl_arena_init(&c->arena, 16 * 1024);
	return c;
}

int tl_ice_commit_set_summary(tl_ice_commit *c, const char *key, const char *value)
{
	char *v = tl_strdup(value);
	if (v == NULL)
		return -1;
	for (int i = 0; i < c->nsummary; i++) {
		if (strcmp(c->summary[i].key, key) == 0) {
			tl_free(c->summary[i].value);
			c->summary[i].value = v;
			return 0;
		}
	}
	char *k = tl_strdup(key);
	tl_ice_kv *summary = k ? tl_realloc(c->summary, sizeof(tl_ice_kv) * (size_t)(c->nsummary + 1)) : NULL;
	if (summary == NULL) {
		tl_free(k);
		tl_free(v);
		return -1;
	}
	c->summary = summary;
	c->summary[c->nsummary].key = k;
	c->summary[c->nsummary].value = v;
	c->nsummary++;
	return 0;
}

static int check_added_file(const tl_ice_commit *c, const tl_ice_data_file *f, tl_error *err)
{
	const char *loc = c->table->location;
	const tl_ice_partition_spec *spec = tl_ice_metadata_default_spec(c->table->metadata);
	if (f->file_path == NULL || f->file_format == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: an added file has no path or format", loc);
	if (c->op == TL_ICE_OP_DELETE || (c->op == TL_ICE_OP_APPEND && f->content != TL_ICE_CONTENT_DATA))
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: a %s cannot add %s", loc,
		                    operation_name(c->op), f->file_path);
	if (f->content < TL_ICE_CONTENT_DATA || f->content > TL_ICE_CONTENT_EQUALITY_DELETES)
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: %s has unknown content %d", loc, f->file_path,
		                    (int)f->content);
	if (f->content == TL_ICE_CONTENT_EQUALITY_DELETES && f->n_equality_ids == 0)
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: equality delete file %s has no equality_ids",
		                    loc, f->file_path);
	if (f->npartition != spec->nfields || (f->npartition > 0 && f->partition == NULL))
		return tl_error_set(err, TL_ERR_INVALID,
		                    "commit to table %s: %s has %d partition values, the default spec has %d fields", loc,
		                    f->file_path, f->npartition, spec->nfields);
	if (f->record_count < 0 || f->file_size_in_bytes < 0)
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: %s has a negative record count or size", loc,
		                    f->file_path);
	return 0;
}

int tl_ice_commit_add_file(tl_ice_commit *c, const tl_ice_data_file *file, tl_error *err)
{
	if (check_added_file(c, file, err) < 0)
		return -1;
	if (c->nadded == c->added_cap) {
		int cap = c->added_cap ? 2 * c->added_cap : 16;
		tl_ice_data_file *added = tl_realloc(c->added, sizeof(tl_ice_data_file) * (size_t)cap);
		if (added == NULL)
			return tl_error_nomem(err, "adding %s to a commit", file->file_path);
		c->added = added;
		c->added_cap = cap;
	}
	unsigned long failures = tl_mem_failures();
	tl_ice_commit_copy_data_file(&c->arena, &c->added[c->nadded], file);
	if (tl_mem_failures() != failures)
		return tl_error_nomem(err, "adding %s to a commit", file->file_path); /* the arena keeps the bytes */
	c->nadded++;
	return 0;
}

int tl_ice_commit_remove_file(tl_ice_commit *c, const char *file_path, tl_error *err)
{
	if (c->op != TL_ICE_OP_DELETE && c->op != TL_ICE_OP_REPLACE && c->op != TL_ICE_OP_OVERWRITE)
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: a %s cannot remove files (%s)",
		                    c->table->location, operation_name(c->op), file_path ? file_path : "?");
	if (file_path == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: a removed file needs a path",
		                    c->table->location);
	if (c->nremoved == c->removed_cap) {
		int cap = c->removed_cap ? 2 * c->removed_cap : 16;
		char **removed = tl_realloc(c->removed, sizeof(char *) * (size_t)cap);
		if (removed == NULL)
			return tl_error_nomem(err, "removing %s in a commit", file_path);
		c->removed = removed;
		c->removed_cap = cap;
	}
	char *copy = tl_strdup(file_path);
	if (copy == NULL)
		return tl_error_nomem(err, "removing %s in a commit", file_path);
	c->removed[c->nremoved++] = copy;
	return 0;
}

void tl_ice_commit_free(tl_ice_commit *c)
{
	if (c == NULL)
		return;
	tl_arena_free(&c->arena);
	tl_free(c->added);
	for (int i = 0; i < c->nremoved; i++)
		tl_free(c->removed[i]);
	tl_free(c->removed);
	for (int i = 0; i < c->nsummary; i++) {
		tl_free(c->summary[i].key);
		tl_free(c->summary[i].value);
	}
	tl_free(c->summary);
	tl_free(c);
}

/* ------------------------------------------------------- finishing */

int64_t tl_ice_commit_base_snapshot_id(const tl_ice_table_metadata *md)
{
	for (int i = 0; i < md->nrefs; i++)
		if (md->refs[i].is_branch && strcmp(md->refs[i].name, "main") == 0)
			return md->refs[i].snapshot_id;
	return md->current_snapshot_id;
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sort_removed(tl_ice_commit *c)
{
	if (c->nremoved == 0)
		return;
	qsort(c->removed, (size_t)c->nremoved, sizeof(char *), compare_strings);
	int n = 0;
	for (int i = 0; i < c->nremoved; i++) {
		if (n > 0 && strcmp(c->removed[n - 1], c->removed[i]) == 0)
			tl_free(c->removed[i]);
		else
			c->removed[n++] = c->removed[i];
	}
	c->nremoved = n;
}

int tl_ice_commit_new_snapshot_id(const tl_ice_table_metadata *md, int64_t *id, tl_error *err)
{
	for (;;) {
		uint64_t v;
		if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
			return tl_error_set(err, TL_ERR_IO, "cannot get random bytes for a snapshot id");
		*id = (int64_t)(v & INT64_MAX);
		if (*id != 0 && tl_ice_metadata_snapshot(md, *id) == NULL)
			return 0;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tl_ice_commit_start_attempt(attempt *a, const tl_ice_table *t, int64_t snapshot_id, int attempt_number)
{
	const tl_ice_table_metadata *base = t->metadata;
	memset(a, 0, sizeof(*a));
	a->table = t;
	a->base = base;
	a->parent = tl_ice_metadata_snapshot(base, tl_ice_commit_base_snapshot_id(base));
	a->schema = tl_ice_metadata_current_schema(base);
	a->spec = tl_ice_metadata_default_spec(base);
	a->sequence_number = base->last_sequence_number + 1;
	a->snapshot_id = snapshot_id;
	a->attempt = attempt_number;
	int64_t now = now_ms();
	a->timestamp_ms = now > base->last_updated_ms ? now : base->last_updated_ms;
	tl_arena_init(&a->arena, 16 * 1024);
}

static void start_attempt(tl_ice_commit *c, attempt *a)
{
	tl_ice_commit_start_attempt(a, c->table, c->snapshot_id, c->attempts);
	a->added = c->added;
	a->nadded = c->nadded;
	a->removed = (const char *const *)c->removed;
	a->nremoved = c->nremoved;
	a->found = c->nremoved ? tl_calloc((size_t)c->nremoved, sizeof(bool)) : NULL;
}

void tl_ice_commit_end_attempt(attempt *a, int rc)
{
	/* A catalog commit whose answer was lost may have landed: its files must stay. */
	tl_rest_table_ref *catalog = tl_ice_table_catalog(a->table);
	bool landed_maybe = catalog != NULL && catalog->state_unknown;
	if (catalog != NULL)
		catalog->state_unknown = false;
	bool failed = rc < 0 && !landed_maybe;
	for (int i = 0; i < a->nwritten; i++) {
		if (failed)
			(void)tl_storage_remove(a->written[i], NULL);
		tl_free(a->written[i]);
	}
	tl_free(a->written);
	tl_free(a->manifests);
	tl_free(a->found);
	tl_free(a->manifest_list);
	tl_arena_free(&a->arena);
}

/*
 * Every removed path must be live in the base. One that is not was either
 * never there (the caller's mistake) or, when the base moved since the
 * commit began, removed by the writer that won the race.
 */
static int check_all_found(const tl_ice_commit *c, const attempt *a, tl_error *err)
{
	for (int i = 0; i < a->nremoved; i++) {
		if (a->found[i])
			continue;
		if (tl_ice_commit_base_snapshot_id(a->base) != c->begin_snapshot_id)
			return tl_error_set(err, TL_ERR_CONFLICT,
			                    "%s is no longer live: another commit removed it first", a->removed[i]);
		return tl_error_set(err, TL_ERR_NOT_FOUND, "%s is not a live file of the table", a->removed[i]);
	}
	return 0;
}

/* The metadata-log entry for the base: where Java records it, under the table location. */
char *tl_ice_commit_base_location(const tl_ice_table *t)
{
	const char *slash = strrchr(t->metadata_file, '/');
	tl_buf b;
	tl_buf_init(&b);
	tl_ice_table_append_location(t, &b);
	tl_buf_printf(&b, "/metadata/%s%c", slash ? slash + 1 : t->metadata_file, '\0');
	if (tl_buf_failed(&b)) {
		tl_buf_free(&b);
		return NULL;
	}
	return (char *)b.data;
}

tl_ice_table_metadata *tl_ice_commit_next_metadata(const tl_ice_table *t, tl_error *err)
{
	tl_ice_table_metadata *md = tl_ice_commit_copy_metadata(t->metadata, err);
	if (md == NULL)
		return NULL;
	unsigned long failures = tl_mem_failures();
	char *previous = tl_ice_commit_base_location(t);
	if (previous != NULL)
		tl_ice_commit_log_metadata(md, t->metadata->last_updated_ms, previous);
	tl_free(previous);
	if (previous == NULL || tl_mem_failures() != failures) {
		tl_ice_metadata_free(md);
		tl_error_nomem(err, "starting a new version of %s", t->location);
		return NULL;
	}
	return md;
}

int tl_ice_commit_publish(tl_ice_table *t, const char *metadata_dir, tl_ice_table_metadata *md, tl_error *err)
{
	/* A table kept in a REST catalog: the catalog checks the base and writes the metadata file. */
	if (tl_ice_table_catalog(t) != NULL)
		return tl_rest_table_commit(tl_ice_table_catalog(t), t, md, err);
	char *path = NULL;
	int64_t version = t->version + 1;
	if (tl_ice_table_publish_version(metadata_dir, version, md, &path, err) < 0) {
		tl_ice_metadata_free(md);
		return -1;
	}
	/* The version is committed; a hint left stale is found past by open (table.c). */
	tl_error ignored;
	tl_error_clear(&ignored);
	tl_ice_table_write_hint(metadata_dir, version, &ignored);
	if (tl_ice_table_install(t, md, version, path) < 0) {
		/* Not reached for a commit (install allocates only when the location moves). */
		tl_ice_metadata_free(md);
		tl_free(path);
		return tl_error_nomem(err, "installing version %lld of table %s", (long long)version, t->location);
	}
	return 0;
}

static int publish(tl_ice_commit *c, attempt *a, const char *metadata_dir, tl_error *err)
{
	char *previous = tl_ice_commit_base_location(c->table);
	if (previous == NULL)
		return tl_error_nomem(err, "committing to %s", c->table->location);
	tl_ice_table_metadata *md = tl_ice_commit_new_metadata(a, previous, c->summary, c->nsummary, c->op, err);
	tl_free(previous);
	if (md == NULL)
		return -1;
	return tl_ice_commit_publish(c->table, metadata_dir, md, err);
}

static int run_attempt(tl_ice_commit *c, attempt *a, const char *metadata_dir, tl_error *err)
{
	if (c->nremoved > 0 && a->found == NULL)
		return tl_error_nomem(err, "committing to %s", c->table->location);
	if (a->parent == NULL && tl_ice_commit_base_snapshot_id(a->base) != TL_ICE_NO_SNAPSHOT)
		return tl_error_set(err, TL_ERR_CORRUPT, "the main branch names a snapshot the metadata lacks");
	if (tl_ice_uuid_v4(a->uuid, err) < 0 || tl_ice_commit_load_base(a, err) < 0 ||
	    tl_ice_commit_apply_removals(a, err) < 0 || check_all_found(c, a, err) < 0 ||
	    tl_ice_commit_write_added(a, err) < 0 || tl_ice_commit_write_list(a, err) < 0)
		return -1;
	return publish(c, a, metadata_dir, err);
}

int tl_ice_commit_finish(tl_ice_commit *c, int64_t *snapshot_id, tl_error *err)
{
	tl_ice_table *t = c->table;
	if (c->committed)
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: this commit has already been finished",
		                    t->location);
	if (c->op == TL_ICE_OP_REPLACE && c->nremoved == 0)
		return tl_error_set(err, TL_ERR_INVALID, "commit to table %s: a replace must remove at least one file",
		                    t->location);
	const char *metadata_dir = tl_ice_table_commit_dir(t, err);
	if (metadata_dir == NULL)
		return -1;
	sort_removed(c);
	if (c->snapshot_id == 0 || tl_ice_metadata_snapshot(t->metadata, c->snapshot_id) != NULL)
		if (tl_ice_commit_new_snapshot_id(t->metadata, &c->snapshot_id, err) < 0)
			return -1;
	if (tl_check_interrupt(err) < 0)
		return -1;
	c->attempts++;
	attempt a;
	start_attempt(c, &a);
	int rc = run_attempt(c, &a, metadata_dir, err);
	tl_ice_commit_end_attempt(&a, rc);
	if (rc < 0) {
		tl_error_prefix(err, "commit to table %s (base %s)", t->location, t->metadata_file);
		return -1;
	}
	c->committed = true;
	if (snapshot_id != NULL)
		*snapshot_id = c->snapshot_id;
	return 0;
}
