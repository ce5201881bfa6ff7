/*
 * commit_metadata.c: the snapshot summary and the new table metadata of a
 * commit attempt.
 *
 * The summary follows Java's SnapshotSummary: the operation, the counts of
 * what changed (only the non-zero ones, as Java writes them), the running
 * totals (the parent's totals plus this change; read from the parent's
 * manifests when its summary lacks them, as tables from some writers do),
 * then the caller's entries such as "tierdb.op-id".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/commit_internal.h"

/* Java's default for write.metadata.previous-versions-max. */
#define DEFAULT_PREVIOUS_VERSIONS_MAX 100

enum { TOTAL_RECORDS, TOTAL_FILES_SIZE, TOTAL_DATA_FILES, TOTAL_DELETE_FILES, TOTAL_POS_DELETES, TOTAL_EQ_DELETES };
static const char *const total_keys[6] = {"total-records",      "total-files-size",       "total-data-files",
                                          "total-delete-files", "total-position-deletes", "total-equality-deletes"};

typedef struct kv_list {
	tl_ice_kv *items;
	int n;
} kv_list;

/*
 * Out of memory, the list is left as it was: the builders here go on and
 * tl_ice_commit_new_metadata, which compares tl_mem_failures() around the
 * whole build, discards what they made.
 */
static void kv_set(kv_list *l, const char *key, const char *value)
{
	char *v = tl_strdup(value);
	if (v == NULL)
		return;
	for (int i = 0; i < l->n; i++) {
		if (strcmp(l->items[i].key, key) == 0) {
			tl_free(l->items[i].value);
			l->items[i].value = v;
			return;
		}
	}
	char *k = tl_strdup(key);
	tl_ice_kv *items = k ? tl_realloc(l->items, sizeof(tl_ice_kv) * (size_t)(l->n + 1)) : NULL;
	if (items == NULL) {
		tl_free(k);
		tl_free(v);
		return;
	}
	l->items = items;
	l->items[l->n].key = k;
	l->items[l->n].value = v;
	l->n++;
}

static void kv_set_count(kv_list *l, const char *key, int64_t v)
{
	char text[24];
	snprintf(text, sizeof(text), "%" PRId64, v);
	kv_set(l, key, text);
}

static void kv_set_nonzero(kv_list *l, const char *key, int64_t v)
{
	if (v != 0)
		kv_set_count(l, key, v);
}

static void kv_free(kv_list *l)
{
	for (int i = 0; i < l->n; i++) {
		tl_free(l->items[i].key);
		tl_free(l->items[i].value);
	}
	tl_free(l->items);
}

static void add_change_counts(kv_list *l, const change_counts *c)
{
	kv_set_nonzero(l, "added-data-files", c->added_data_files);
	kv_set_nonzero(l, "added-records", c->added_records);
	kv_set_nonzero(l, "added-files-size", c->added_files_size);
	kv_set_nonzero(l, "added-delete-files", c->added_delete_files);
	kv_set_nonzero(l, "added-equality-delete-files", c->added_eq_delete_files);
	kv_set_nonzero(l, "added-position-delete-files", c->added_pos_delete_files);
	kv_set_nonzero(l, "added-equality-deletes", c->added_eq_deletes);
	kv_set_nonzero(l, "added-position-deletes", c->added_pos_deletes);
	kv_set_nonzero(l, "deleted-data-files", c->deleted_data_files);
	kv_set_nonzero(l, "deleted-records", c->deleted_records);
	kv_set_nonzero(l, "removed-files-size", c->removed_files_size);
	kv_set_nonzero(l, "removed-delete-files", c->removed_delete_files);
	kv_set_nonzero(l, "removed-equality-delete-files", c->removed_eq_delete_files);
	kv_set_nonzero(l, "removed-position-delete-files", c->removed_pos_delete_files);
	kv_set_nonzero(l, "removed-equality-deletes", c->removed_eq_deletes);
	kv_set_nonzero(l, "removed-position-deletes", c->removed_pos_deletes);
}

static bool parse_count(const char *s, int64_t *out)
{
	if (s == NULL || *s == '\0')
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0)
		return false;
	*out = v;
	return true;
}

/* The parent's totals from its summary, else counted from its manifests. */
static int parent_totals(const attempt *a, int64_t totals[6], tl_error *err)
{
	memset(totals, 0, sizeof(int64_t) * 6);
	if (a->parent == NULL)
		return 0;
	for (int i = 0; i < 6; i++)
		if (!parse_count(tl_ice_snapshot_summary(a->parent, total_keys[i]), &totals[i]))
			return tl_ice_commit_count_parent(a, totals, err);
	return 0;
}

static int add_totals(const attempt *a, kv_list *l, tl_error *err)
{
	int64_t t[6];
	if (parent_totals(a, t, err) < 0)
		return -1;
	const change_counts *c = &a->change;
	t[TOTAL_RECORDS] += c->added_records - c->deleted_records;
	t[TOTAL_FILES_SIZE] += c->added_files_size - c->removed_files_size;
	t[TOTAL_DATA_FILES] += c->added_data_files - c->deleted_data_files;
	t[TOTAL_DELETE_FILES] += c->added_delete_files - c->removed_delete_files;
	t[TOTAL_POS_DELETES] += c->added_pos_deletes - c->removed_pos_deletes;
	t[TOTAL_EQ_DELETES] += c->added_eq_deletes - c->removed_eq_deletes;
	for (int i = 0; i < 6; i++)
		kv_set_count(l, total_keys[i], t[i]);
	return 0;
}

/* Java's operation names: a row delta that only adds deletes is a "delete". */
static const char *summary_operation(tl_ice_operation op, const change_counts *c)
{
	switch (op) {
	case TL_ICE_OP_APPEND: return "append";
	case TL_ICE_OP_ROW_DELTA: return c->added_delete_files > 0 && c->added_data_files == 0 ? "delete" : "overwrite";
	case TL_ICE_OP_DELETE: return "delete";
	case TL_ICE_OP_REPLACE: return "replace";
	case TL_ICE_OP_OVERWRITE: return "overwrite";
	}
	return "overwrite";
}

/* ------------------------------------------------------------ metadata */

/* A deep copy through the JSON form, the one shape every field already round-trips through. */
tl_ice_table_metadata *tl_ice_commit_copy_metadata(const tl_ice_table_metadata *md, tl_error *err)
{
	if (md->table_uuid == NULL) {
		tl_error_set(err, TL_ERR_UNSUPPORTED, "the table metadata has no table-uuid (an old v1 table)");
		return NULL;
	}
	tl_buf json;
	tl_buf_init(&json);
	tl_ice_table_metadata *copy = NULL;
	if (tl_ice_metadata_write(md, &json, err) == 0)
		copy = tl_ice_metadata_parse((const char *)json.data, json.len, err);
	tl_buf_free(&json);
	return copy;
}

static void add_snapshot(tl_ice_table_metadata *md, const attempt *a, const char *operation, kv_list *summary)
{
	tl_ice_snapshot *snapshots = tl_realloc(md->snapshots, sizeof(tl_ice_snapshot) * (size_t)(md->nsnapshots + 1));
	if (snapshots == NULL)
		return; /* the caller sees the failure count */
	md->snapshots = snapshots;
	tl_ice_snapshot *s = &md->snapshots[md->nsnapshots++];
	memset(s, 0, sizeof(*s));
	s->snapshot_id = a->snapshot_id;
	s->parent_id = a->parent ? a->parent->snapshot_id : TL_ICE_NO_SNAPSHOT;
	s->sequence_number = a->sequence_number;
	s->timestamp_ms = a->timestamp_ms;
	s->manifest_list = tl_strdup(a->manifest_list);
	s->operation = tl_strdup(operation);
	s->summary = summary->items;
	s->nsummary = summary->n;
	s->schema_id = md->current_schema_id;
	summary->items = NULL;
	summary->n = 0;
}

static void add_logs(tl_ice_table_metadata *md, const attempt *a, const char *previous_file)
{
	tl_ice_snapshot_log_entry *log =
		tl_realloc(md->snapshot_log, sizeof(tl_ice_snapshot_log_entry) * (size_t)(md->nsnapshot_log + 1));
	if (log == NULL)
		return; /* the caller sees the failure count */
	md->snapshot_log = log;
	md->snapshot_log[md->nsnapshot_log].timestamp_ms = a->timestamp_ms;
	md->snapshot_log[md->nsnapshot_log].snapshot_id = a->snapshot_id;
	md->nsnapshot_log++;
	tl_ice_commit_log_metadata(md, a->base->last_updated_ms, previous_file);
}

void tl_ice_commit_log_metadata(tl_ice_table_metadata *md, int64_t base_updated_ms, const char *previous_file)
{
	char *file = tl_strdup(previous_file);
	tl_ice_metadata_log_entry *log =
		file ? tl_realloc(md->metadata_log, sizeof(tl_ice_metadata_log_entry) * (size_t)(md->nmetadata_log + 1))
		     : NULL;
	if (log == NULL) {
		tl_free(file); /* the caller sees the failure count */
		return;
	}
	md->metadata_log = log;
	md->metadata_log[md->nmetadata_log].timestamp_ms = base_updated_ms;
	md->metadata_log[md->nmetadata_log].metadata_file = file;
	md->nmetadata_log++;

	/* Java keeps only the newest write.metadata.previous-versions-max entries. */
	int64_t keep = DEFAULT_PREVIOUS_VERSIONS_MAX;
	const char *prop = tl_ice_metadata_property(md, "write.metadata.previous-versions-max");
	if (prop != NULL && (!parse_count(prop, &keep) || keep < 1))
		keep = DEFAULT_PREVIOUS_VERSIONS_MAX;
	if (md->nmetadata_log > keep) {
		int drop = md->nmetadata_log - (int)keep;
		for (int i = 0; i < drop; i++)
			tl_free(md->metadata_log[i].metadata_file);
		memmove(md->metadata_log, md->metadata_log + drop, sizeof(tl_ice_metadata_log_entry) * (size_t)keep);
		md->nmetadata_log = (int)keep;
	}
}

static void point_main_at(tl_ice_table_metadata *md, int64_t snapshot_id)
{
	for (int i = 0; i < md->nrefs; i++) {
		if (strcmp(md->refs[i].name, "main") == 0) {
			md->refs[i].snapshot_id = snapshot_id;
			md->refs[i].is_branch = true;
			return;
		}
	}
	char *name = tl_strdup("main");
	tl_ice_ref *refs = name ? tl_realloc(md->refs, sizeof(tl_ice_ref) * (size_t)(md->nrefs + 1)) : NULL;
	if (refs == NULL) {
		tl_free(name); /* the caller sees the failure count */
		return;
	}
	md->refs = refs;
	tl_ice_ref *r = &md->refs[md->nrefs++];
	r->name = name;
	r->snapshot_id = snapshot_id;
	r->is_branch = true;
	r->max_ref_age_ms = -1;
	r->max_snapshot_age_ms = -1;
	r->min_snapshots_to_keep = -1;
}

tl_ice_table_metadata *tl_ice_commit_new_metadata(const attempt *a, const char *previous_file,
                                                  const tl_ice_kv *extra, int nextra, tl_ice_operation op,
                                                  tl_error *err)
{
	/* The helpers below cannot each report failure; one count around them does. */
	unsigned long failures = tl_mem_failures();
	kv_list summary = {NULL, 0};
	add_change_counts(&summary, &a->change);
	if (add_totals(a, &summary, err) < 0) {
		kv_free(&summary);
		return NULL;
	}
	for (int i = 0; i < nextra; i++)
		if (strcmp(extra[i].key, "operation") != 0)  /* computed: it must say what the commit did */
			kv_set(&summary, extra[i].key, extra[i].value);
	tl_ice_table_metadata *md = tl_ice_commit_copy_metadata(a->base, err);
	if (md == NULL) {
		kv_free(&summary);
		return NULL;
	}
	add_snapshot(md, a, summary_operation(op, &a->change), &summary);
	add_logs(md, a, previous_file);
	point_main_at(md, a->snapshot_id);
	md->format_version = 2;
	md->current_snapshot_id = a->snapshot_id;
	md->last_sequence_number = a->sequence_number;
	md->last_updated_ms = a->timestamp_ms;
	kv_free(&summary); /* left over only when add_snapshot could not take it */
	if (tl_mem_failures() != failures) {
		tl_ice_metadata_free(md);
		tl_error_nomem(err, "building the new table metadata");
		return NULL;
	}
	return md;
}
