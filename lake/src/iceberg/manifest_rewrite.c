/*
 * manifest_rewrite.c: rewriting a snapshot's manifests into fewer, each
 * covering a narrow partition range, as Java's RewriteManifests does (see
 * tl_ice_table_rewrite_manifests in iceberg_maintenance.h).
 *
 * Every commit adds a manifest per content, so a table that takes many
 * small commits plans scans by opening many small manifests. The rewrite
 * reads the live entries of each (content, spec) group that has more than
 * one manifest, sorts them by partition tuple and writes them out again
 * about target_bytes at a time. The entries become EXISTING with their
 * snapshot ids and both sequence numbers written out: a delete applies to
 * the rows its data sequence number says, and a rewrite that let them
 * inherit the new snapshot's number would make old equality deletes miss
 * rows they delete and spare rows they must not. The new snapshot is a
 * "replace" with the parent's rows; the commit is an attempt as in
 * commit.c, whose files go again if it fails.
 *
 * The entries of one group are held in memory while it is sorted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_maintenance.h"
#include "iceberg/commit_internal.h"
#include "iceberg/table_internal.h"

/* An entry to rewrite, with the partition type its tuple compares by (qsort has no context). */
typedef struct held_entry {
	tl_ice_manifest_entry e;
	const tl_ice_type *partition_type;
} held_entry;

typedef struct rewrite {
	tl_ice_table *table;
	attempt a;
	int64_t target_bytes;
	listed_manifest *base;   /* the base snapshot's list (the attempt's list is rebuilt) */
	int nbase;
	/* the group being rewritten */
	tl_arena entries_arena;
	held_entry *entries;
	size_t nentries, entries_cap;
	tl_ice_schema schema;            /* of the group's first manifest, as its header has it */
	tl_ice_partition_spec spec;
	tl_ice_type partition_type;
	bool have_group;
	/* summary counts, as Java's RewriteManifests writes them */
	int64_t created, replaced, kept, processed;
} rewrite;

/* ------------------------------------------------------------ groups */

static bool same_group(const tl_ice_manifest_file *a, const tl_ice_manifest_file *b)
{
	return a->content == b->content && a->partition_spec_id == b->partition_spec_id;
}

static int group_size(const rewrite *r, int first)
{
	int n = 0;
	for (int i = 0; i < r->nbase; i++)
		n += same_group(&r->base[i].mf, &r->base[first].mf);
	return n;
}

/* Whether base[i] opens its group (no earlier manifest shares its content and spec). */
static bool opens_group(const rewrite *r, int i)
{
	for (int j = 0; j < i; j++)
		if (same_group(&r->base[j].mf, &r->base[i].mf))
			return false;
	return true;
}

static bool anything_to_rewrite(const rewrite *r)
{
	for (int i = 0; i < r->nbase; i++)
		if (opens_group(r, i) && group_size(r, i) > 1)
			return true;
	return false;
}

static void clear_group(rewrite *r)
{
	if (r->have_group) {
		tl_ice_schema_free(&r->schema);
		tl_ice_partition_spec_free(&r->spec);
		tl_ice_type_free(&r->partition_type);
	}
	r->have_group = false;
	r->nentries = 0;
	tl_arena_reset(&r->entries_arena);
}

/*
 * The schema, spec and partition type of the group, from its first
 * manifest's header (the table's schema for a header without one: the
 * spec's sources are among its fields, or no reader could use the spec).
 */
static int take_group_types(rewrite *r, const tl_ice_manifest_reader *reader, tl_error *err)
{
	const tl_ice_schema *schema = tl_ice_manifest_reader_schema(reader);
	if (tl_ice_schema_copy(schema != NULL ? schema : r->a.schema, &r->schema) < 0)
		return tl_error_nomem(err, "rewriting manifests");
	if (tl_ice_partition_spec_copy(tl_ice_manifest_reader_spec(reader), &r->spec) < 0) {
		tl_ice_schema_free(&r->schema);
		return tl_error_nomem(err, "rewriting manifests");
	}
	if (tl_ice_partition_type(&r->spec, &r->schema, &r->partition_type, err) < 0) {
		tl_ice_schema_free(&r->schema);
		tl_ice_partition_spec_free(&r->spec);
		return -1;
	}
	r->have_group = true;
	return 0;
}

/* ---------------------------------------------------------- reading */

/* Keeps a deep copy of e, made EXISTING with everything it inherited written out. */
static int hold_entry(rewrite *r, const tl_ice_manifest_entry *e, tl_error *err)
{
	if (r->nentries == r->entries_cap) {
		size_t cap = r->entries_cap ? 2 * r->entries_cap : 256;
		held_entry *entries = tl_realloc(r->entries, sizeof(held_entry) * cap);
		if (entries == NULL)
			return tl_error_nomem(err, "rewriting manifests");
		r->entries = entries;
		r->entries_cap = cap;
	}
	held_entry *h = &r->entries[r->nentries];
	h->e = *e;
	h->e.status = TL_ICE_STATUS_EXISTING;
	h->partition_type = &r->partition_type;
	unsigned long failures = tl_mem_failures();
	tl_ice_commit_copy_data_file(&r->entries_arena, &h->e.data_file, &e->data_file);
	if (tl_mem_failures() != failures)
		return tl_error_nomem(err, "rewriting manifests");
	r->nentries++;
	r->processed++;
	return 0;
}

static int read_manifest(rewrite *r, const tl_ice_manifest_file *mf, tl_error *err)
{
	commit_cursor cur;
	int rc = tl_ice_commit_cursor_open(&cur, mf, err);
	if (rc == 0 && !r->have_group)
		rc = take_group_types(r, cur.r, err);
	tl_ice_manifest_entry e;
	while (rc == 0 && (rc = tl_ice_commit_cursor_next(&cur, &e, err)) == 1)
		rc = e.status == TL_ICE_STATUS_DELETED ? 0 : hold_entry(r, &e, err);
	tl_ice_commit_cursor_close(&cur);
	return rc;
}

/* ---------------------------------------------------------- sorting */

static int compare_partitions(const tl_ice_type *type, const tl_ice_data_file *a, const tl_ice_data_file *b)
{
	for (int i = 0; i < a->npartition && i < b->npartition && i < type->nfields; i++) {
		const tl_ice_value *x = &a->partition[i], *y = &b->partition[i];
		if (x->is_null || y->is_null) {
			if (x->is_null != y->is_null)
				return x->is_null ? -1 : 1;   /* nulls first */
			continue;
		}
		int c = tl_ice_value_compare(&type->fields[i].type, x, y);
		if (c != 0)
			return c;
	}
	return 0;
}

/* By partition tuple, then by path, so that a rewrite of the same entries writes the same manifests. */
static int compare_held(const void *pa, const void *pb)
{
	const held_entry *a = pa, *b = pb;
	int c = compare_partitions(a->partition_type, &a->e.data_file, &b->e.data_file);
	return c != 0 ? c : strcmp(a->e.data_file.file_path, b->e.data_file.file_path);
}

/* ---------------------------------------------------------- writing */

/*
 * How many entries make about target_bytes, from what the group's
 * manifests spent per entry (Java rolls over by bytes written; the Avro
 * writer here buffers a block, so the bytes are known only at the end).
 */
static size_t entries_per_manifest(const rewrite *r, int first)
{
	int64_t bytes = 0, entries = 0;
	for (int i = 0; i < r->nbase; i++) {
		const tl_ice_manifest_file *mf = &r->base[i].mf;
		if (!same_group(mf, &r->base[first].mf))
			continue;
		bytes += mf->manifest_length;
		entries += (int64_t)mf->added_files_count + mf->existing_files_count + mf->deleted_files_count;
	}
	int64_t per_entry = entries > 0 && bytes > entries ? bytes / entries : 1;
	int64_t n = r->target_bytes / per_entry;
	return n < 1 ? 1 : (size_t)n;
}

static int write_manifest(rewrite *r, int content, size_t from, size_t to, tl_error *err)
{
	attempt *a = &r->a;
	const char *uri = NULL;
	tl_output *out = tl_ice_commit_new_manifest(a, &uri, err);
	tl_ice_manifest_writer *w =
		out ? tl_ice_manifest_writer_open(out, &r->schema, &r->spec, content, a->snapshot_id, err) : NULL;
	int rc = w != NULL ? 0 : -1;
	for (size_t i = from; rc == 0 && i < to; i++)
		rc = tl_ice_manifest_writer_add(w, &r->entries[i].e, err);
	if (rc == 0) {
		listed_manifest *m = tl_ice_commit_add_listed(a);
		rc = m == NULL ? tl_error_nomem(err, "listing a rewritten manifest")
		               : tl_ice_commit_finish_manifest(a, w, out, uri, m, err);
		if (rc < 0 && m != NULL)
			a->nmanifests--;
	}
	tl_ice_manifest_writer_free(w);
	tl_output_close(out);
	if (rc == 0)
		r->created++;
	return rc;
}

/* Rewrites the group base[first] opens into the attempt's list. */
static int rewrite_group(rewrite *r, int first, tl_error *err)
{
	clear_group(r);
	int rc = 0;
	for (int i = first; rc == 0 && i < r->nbase; i++) {
		if (!same_group(&r->base[i].mf, &r->base[first].mf))
			continue;
		rc = tl_check_interrupt(err);
		if (rc == 0)
			rc = read_manifest(r, &r->base[i].mf, err);
		r->replaced++;
	}
	if (rc < 0)
		return -1;
	qsort(r->entries, r->nentries, sizeof(held_entry), compare_held);
	size_t per = entries_per_manifest(r, first);
	for (size_t from = 0; rc == 0 && from < r->nentries; from += per) {
		size_t to = r->nentries - from > per ? from + per : r->nentries;
		rc = write_manifest(r, r->base[first].mf.content, from, to, err);
	}
	return rc;
}

/* Carries the base manifests of groups with one manifest as they are. */
static int carry_single_groups(rewrite *r, tl_error *err)
{
	for (int i = 0; i < r->nbase; i++) {
		int first = i;
		while (!opens_group(r, first))
			first--;
		if (group_size(r, first) > 1)
			continue;
		listed_manifest *m = tl_ice_commit_add_listed(&r->a);
		if (m == NULL)
			return tl_error_nomem(err, "listing manifest %s", r->base[i].mf.manifest_path);
		*m = r->base[i];
		r->kept++;
	}
	return 0;
}

/* ---------------------------------------------------------- commit */

static int publish(rewrite *r, const char *metadata_dir, const tl_ice_kv *summary, int nsummary, tl_error *err)
{
	char counts[4][24];
	snprintf(counts[0], sizeof(counts[0]), "%" PRId64, r->created);
	snprintf(counts[1], sizeof(counts[1]), "%" PRId64, r->kept);
	snprintf(counts[2], sizeof(counts[2]), "%" PRId64, r->replaced);
	snprintf(counts[3], sizeof(counts[3]), "%" PRId64, r->processed);
	tl_ice_kv *extra = tl_calloc((size_t)nsummary + 4, sizeof(tl_ice_kv));
	char *previous = tl_ice_commit_base_location(r->a.table);
	if (extra == NULL || previous == NULL) {
		tl_free(extra);
		tl_free(previous);
		return tl_error_nomem(err, "committing rewritten manifests");
	}
	extra[0] = (tl_ice_kv){"manifests-created", counts[0]};
	extra[1] = (tl_ice_kv){"manifests-kept", counts[1]};
	extra[2] = (tl_ice_kv){"manifests-replaced", counts[2]};
	extra[3] = (tl_ice_kv){"entries-processed", counts[3]};
	if (nsummary > 0)
		memcpy(extra + 4, summary, sizeof(tl_ice_kv) * (size_t)nsummary);
	tl_ice_table_metadata *md =
		tl_ice_commit_new_metadata(&r->a, previous, extra, nsummary + 4, TL_ICE_OP_REPLACE, err);
	tl_free(previous);
	tl_free(extra);
	if (md == NULL)
		return -1;
	return tl_ice_commit_publish(r->table, metadata_dir, md, err);
}

/*
 * Builds the new list: the rewritten groups' manifests first, then the
 * manifests carried as they are. *done is false when there was nothing
 * to rewrite (nothing written, no commit).
 */
static int run(rewrite *r, const char *metadata_dir, const tl_ice_kv *summary, int nsummary, bool *done,
               tl_error *err)
{
	attempt *a = &r->a;
	*done = false;
	if (tl_ice_commit_load_base(a, err) < 0)
		return -1;
	r->base = a->manifests;
	r->nbase = a->nmanifests;
	a->manifests = NULL;
	a->nmanifests = a->manifests_cap = 0;
	if (!anything_to_rewrite(r))
		return 0;
	if (tl_ice_uuid_v4(a->uuid, err) < 0)
		return -1;
	for (int i = 0; i < r->nbase; i++)
		if (opens_group(r, i) && group_size(r, i) > 1 && rewrite_group(r, i, err) < 0)
			return -1;
	clear_group(r);
	if (carry_single_groups(r, err) < 0 || tl_ice_commit_write_list(a, err) < 0 ||
	    publish(r, metadata_dir, summary, nsummary, err) < 0)
		return -1;
	*done = true;
	return 0;
}

int tl_ice_table_rewrite_manifests(tl_ice_table *t, int64_t target_bytes, const tl_ice_kv *summary, int nsummary,
                                   int64_t *snapshot_id, tl_error *err)
{
	*snapshot_id = TL_ICE_NO_SNAPSHOT;
	if (target_bytes < 1)
		return tl_error_set(err, TL_ERR_INVALID, "rewriting the manifests of table %s: target_bytes must be positive",
		                    t->location);
	const char *metadata_dir = tl_ice_table_commit_dir(t, err);
	if (metadata_dir == NULL)
		return -1;
	if (tl_ice_commit_base_snapshot_id(t->metadata) == TL_ICE_NO_SNAPSHOT)
		return 0;
	int64_t id;
	if (tl_ice_commit_new_snapshot_id(t->metadata, &id, err) < 0 || tl_check_interrupt(err) < 0)
		return -1;
	rewrite r;
	memset(&r, 0, sizeof(r));
	r.table = t;
	r.target_bytes = target_bytes;
	tl_arena_init(&r.entries_arena, 64 * 1024);
	tl_ice_commit_start_attempt(&r.a, t, id, 1);
	bool done = false;
	int rc = r.a.parent != NULL ? run(&r, metadata_dir, summary, nsummary, &done, err)
	                            : tl_error_set(err, TL_ERR_CORRUPT, "the main branch names a snapshot the metadata lacks");
	clear_group(&r);
	tl_free(r.entries);
	tl_free(r.base);
	tl_arena_free(&r.entries_arena);
	tl_ice_commit_end_attempt(&r.a, rc);
	if (rc < 0) {
		tl_error_prefix(err, "rewriting the manifests of table %s (base %s)", t->location, t->metadata_file);
		return -1;
	}
	if (done)
		*snapshot_id = id;
	return 0;
}
