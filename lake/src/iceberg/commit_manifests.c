/*
 * commit_manifests.c: the manifests and manifest list of a commit attempt.
 *
 * The base snapshot's list is read into the attempt; manifests that hold a
 * removed file are rewritten as Java's ManifestFilterManager does (the
 * removed entry DELETED by the new snapshot, other live entries EXISTING
 * with their sequence numbers written out, entries deleted earlier
 * dropped); the added files go into new manifests whose entries inherit
 * their sequence numbers from the list; and the list is written with the
 * new manifests first, data manifests before delete manifests.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/storage.h"
#include "iceberg/commit_internal.h"
#include "iceberg/table_internal.h"

/* ------------------------------------------------------------ helpers */

static const char *arena_str(tl_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = tl_arena_alloc(a, n);
	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

/* A copy of a list entry whose path and partition summaries live in the arena; -1 when out of memory. */
static int copy_manifest_file(tl_arena *a, tl_ice_manifest_file *dst, const tl_ice_manifest_file *src,
                              const char *path, tl_error *err)
{
	*dst = *src;
	dst->manifest_path = arena_str(a, path);
	dst->partitions = NULL;
	if (dst->manifest_path == NULL)
		return tl_error_nomem(err, "listing manifest %s", path);
	if (src->n_partitions == 0)
		return 0;
	dst->partitions = tl_arena_alloc(a, sizeof(tl_ice_field_summary) * src->n_partitions);
	if (dst->partitions == NULL)
		return tl_error_nomem(err, "listing manifest %s", path);
	for (uint32_t i = 0; i < src->n_partitions; i++) {
		tl_ice_field_summary *p = &dst->partitions[i];
		*p = src->partitions[i];
		if (p->has_lower_bound)
			p->lower_bound = tl_arena_copy(a, p->lower_bound.ptr, p->lower_bound.len);
		if (p->has_upper_bound)
			p->upper_bound = tl_arena_copy(a, p->upper_bound.ptr, p->upper_bound.len);
		if ((p->has_lower_bound && p->lower_bound.ptr == NULL) || (p->has_upper_bound && p->upper_bound.ptr == NULL))
			return tl_error_nomem(err, "listing manifest %s", path);
	}
	return 0;
}

listed_manifest *tl_ice_commit_add_listed(attempt *a)
{
	if (a->nmanifests == a->manifests_cap) {
		int cap = a->manifests_cap ? 2 * a->manifests_cap : 16;
		listed_manifest *manifests = tl_realloc(a->manifests, sizeof(listed_manifest) * (size_t)cap);
		if (manifests == NULL)
			return NULL;
		a->manifests = manifests;
		a->manifests_cap = cap;
	}
	listed_manifest *m = &a->manifests[a->nmanifests++];
	memset(m, 0, sizeof(*m));
	return m;
}

static int removed_index(const attempt *a, const char *path)
{
	int lo = 0, hi = a->nremoved - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		int cmp = strcmp(path, a->removed[mid]);
		if (cmp == 0)
			return mid;
		if (cmp < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

/* Creates a new file for this attempt at <location>/metadata/<name>; *uri is in the arena. */
static tl_output *create_metadata_output(attempt *a, const char *name, const char **uri, tl_error *err)
{
	tl_buf b;
	tl_buf_init(&b);
	tl_ice_table_append_location(a->table, &b);
	tl_buf_printf(&b, "/metadata/%s%c", name, '\0');
	*uri = tl_buf_failed(&b) ? NULL : arena_str(&a->arena, (const char *)b.data);
	tl_buf_free(&b);
	/* Recorded before the file exists, so a failed attempt removes it; no room, no file. */
	char *copy = *uri != NULL ? tl_strdup(*uri) : NULL;
	if (copy != NULL && a->nwritten == a->written_cap) {
		int cap = a->written_cap ? 2 * a->written_cap : 8;
		char **written = tl_realloc(a->written, sizeof(char *) * (size_t)cap);
		if (written == NULL) {
			tl_free(copy);
			copy = NULL;
		} else {
			a->written = written;
			a->written_cap = cap;
		}
	}
	if (copy == NULL) {
		tl_error_nomem(err, "naming %s", name);
		return NULL;
	}
	tl_output *out = tl_storage_create(*uri, TL_STORAGE_CREATE_EXCLUSIVE, err);
	if (out == NULL) {
		tl_free(copy);
		return NULL;
	}
	a->written[a->nwritten++] = copy;
	return out;
}

tl_output *tl_ice_commit_new_manifest(attempt *a, const char **uri, tl_error *err)
{
	char name[64];
	snprintf(name, sizeof(name), "%s-m%d.avro", a->uuid, a->next_manifest++);
	return create_metadata_output(a, name, uri, err);
}

int tl_ice_commit_finish_manifest(attempt *a, tl_ice_manifest_writer *w, tl_output *out, const char *uri,
                                  listed_manifest *m, tl_error *err)
{
	tl_ice_manifest_file summary;
	if (tl_ice_manifest_writer_close(w, &summary, err) < 0 || out->finish(out, err) < 0)
		return -1;
	if (copy_manifest_file(&a->arena, &m->mf, &summary, uri, err) < 0)
		return -1;
	m->written_here = true;
	return 0;
}

/* -------------------------------------------------- reading manifests */

int tl_ice_commit_cursor_open(commit_cursor *cur, const tl_ice_manifest_file *mf, tl_error *err)
{
	cur->mf = mf;
	cur->r = NULL;
	cur->in = tl_input_open_uri(mf->manifest_path, err);
	if (cur->in != NULL)
		cur->r = tl_ice_manifest_reader_open(cur->in, err);
	return cur->r != NULL ? 0 : -1;
}

int tl_ice_commit_cursor_next(commit_cursor *cur, tl_ice_manifest_entry *e, tl_error *err)
{
	const tl_ice_manifest_entry *entry;
	int more = tl_ice_manifest_reader_next(cur->r, &entry, err);
	if (more <= 0)
		return more;
	*e = *entry;
	if (tl_ice_manifest_entry_inherit(e, cur->mf, err) < 0)
		return -1;
	return 1;
}

void tl_ice_commit_cursor_close(commit_cursor *cur)
{
	tl_ice_manifest_reader_free(cur->r);
	tl_input_close(cur->in);
}

typedef int (*list_fn)(void *ctx, const tl_ice_manifest_file *mf, int format_version, tl_error *err);

static int read_list(const char *location, list_fn fn, void *ctx, tl_error *err)
{
	tl_input *in = tl_input_open_uri(location, err);
	if (in == NULL)
		return -1;
	tl_ice_manifest_list_reader *r = tl_ice_manifest_list_reader_open(in, err);
	int rc = r != NULL ? 0 : -1;
	while (rc == 0) {
		const tl_ice_manifest_file *mf;
		int more = tl_ice_manifest_list_reader_next(r, &mf, err);
		if (more <= 0) {
			rc = more;
			break;
		}
		rc = fn(ctx, mf, tl_ice_manifest_list_reader_format_version(r), err);
	}
	tl_ice_manifest_list_reader_free(r);
	tl_input_close(in);
	return rc;
}

/* ------------------------------------------------------- the base */

/* A v1 list may omit the file counts; they are needed to tell which manifests still hold live files. */
static int recount(listed_manifest *m, tl_error *err)
{
	tl_ice_manifest_file *mf = &m->mf;
	mf->added_files_count = mf->existing_files_count = mf->deleted_files_count = 0;
	mf->added_rows_count = mf->existing_rows_count = mf->deleted_rows_count = 0;
	commit_cursor cur;
	int rc = tl_ice_commit_cursor_open(&cur, mf, err);
	tl_ice_manifest_entry e;
	while (rc == 0 && (rc = tl_ice_commit_cursor_next(&cur, &e, err)) == 1) {
		rc = 0;
		int64_t rows = e.data_file.record_count;
		if (e.status == TL_ICE_STATUS_ADDED) {
			mf->added_files_count++;
			mf->added_rows_count += rows;
		} else if (e.status == TL_ICE_STATUS_EXISTING) {
			mf->existing_files_count++;
			mf->existing_rows_count += rows;
		} else {
			mf->deleted_files_count++;
			mf->deleted_rows_count += rows;
		}
	}
	tl_ice_commit_cursor_close(&cur);
	return rc;
}

static int add_carried(void *ctx, const tl_ice_manifest_file *mf, int format_version, tl_error *err)
{
	attempt *a = ctx;
	listed_manifest *m = tl_ice_commit_add_listed(a);
	if (m == NULL)
		return tl_error_nomem(err, "listing manifest %s", mf->manifest_path);
	if (copy_manifest_file(&a->arena, &m->mf, mf, mf->manifest_path, err) < 0) {
		a->nmanifests--;
		return -1;
	}
	return format_version < 2 ? recount(m, err) : 0;
}

int tl_ice_commit_load_base(attempt *a, tl_error *err)
{
	if (a->parent == NULL)
		return 0;
	if (a->parent->manifest_list == NULL)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "snapshot %" PRId64 " lists its manifests in the metadata (an early v1 table); "
		                    "committing on top of it is not supported",
		                    a->parent->snapshot_id);
	return read_list(a->parent->manifest_list, add_carried, a, err);
}

/* ---------------------------------------------------------- removals */

static void count_removed(attempt *a, const tl_ice_data_file *f)
{
	change_counts *c = &a->change;
	c->removed_files_size += f->file_size_in_bytes;
	switch (f->content) {
	case TL_ICE_CONTENT_DATA:
		c->deleted_data_files++;
		c->deleted_records += f->record_count;
		break;
	case TL_ICE_CONTENT_POSITION_DELETES:
		c->removed_delete_files++;
		c->removed_pos_delete_files++;
		c->removed_pos_deletes += f->record_count;
		break;
	default:
		c->removed_delete_files++;
		c->removed_eq_delete_files++;
		c->removed_eq_deletes += f->record_count;
		break;
	}
}

/* Whether a manifest has a live entry for a removed path (marking those found). */
static int holds_removed(attempt *a, const tl_ice_manifest_file *mf, bool *holds, tl_error *err)
{
	*holds = false;
	commit_cursor cur;
	int rc = tl_ice_commit_cursor_open(&cur, mf, err);
	tl_ice_manifest_entry e;
	while (rc == 0 && (rc = tl_ice_commit_cursor_next(&cur, &e, err)) == 1) {
		rc = 0;
		if (e.status == TL_ICE_STATUS_DELETED)
			continue;
		int i = removed_index(a, e.data_file.file_path);
		if (i >= 0) {
			a->found[i] = true;
			*holds = true;
		}
	}
	tl_ice_commit_cursor_close(&cur);
	return rc;
}

/* Copies the live entries of m's manifest into w, marking removed ones DELETED. */
static int copy_filtered(attempt *a, commit_cursor *cur, tl_ice_manifest_writer *w, tl_error *err)
{
	tl_ice_manifest_entry e;
	int rc;
	while ((rc = tl_ice_commit_cursor_next(cur, &e, err)) == 1) {
		if (e.status == TL_ICE_STATUS_DELETED)
			continue;  /* deleted by an earlier snapshot: history the new one need not carry */
		if (removed_index(a, e.data_file.file_path) >= 0) {
			e.status = TL_ICE_STATUS_DELETED;
			e.snapshot_id = a->snapshot_id;
			count_removed(a, &e.data_file);
		} else {
			e.status = TL_ICE_STATUS_EXISTING;
		}
		/* Inheritance made both sequence numbers explicit, as a rewritten entry needs. */
		if (tl_ice_manifest_writer_add(w, &e, err) < 0)
			return -1;
	}
	return rc;
}

static int rewrite_manifest(attempt *a, listed_manifest *m, tl_error *err)
{
	commit_cursor cur;
	tl_ice_manifest_writer *w = NULL;
	tl_output *out = NULL;
	const char *uri = NULL;
	int rc = tl_ice_commit_cursor_open(&cur, &m->mf, err);
	if (rc == 0) {
		out = tl_ice_commit_new_manifest(a, &uri, err);
		w = out ? tl_ice_manifest_writer_open(out, tl_ice_manifest_reader_schema(cur.r),
		                                      tl_ice_manifest_reader_spec(cur.r), m->mf.content, a->snapshot_id, err)
		        : NULL;
		rc = w != NULL ? copy_filtered(a, &cur, w, err) : -1;
	}
	if (rc == 0)
		rc = tl_ice_commit_finish_manifest(a, w, out, uri, m, err);
	tl_ice_manifest_writer_free(w);
	tl_output_close(out);
	tl_ice_commit_cursor_close(&cur);
	return rc;
}

/* Java keeps only manifests with live files, and those this commit wrote. */
static void drop_dead_manifests(attempt *a)
{
	int n = 0;
	for (int i = 0; i < a->nmanifests; i++) {
		const listed_manifest *m = &a->manifests[i];
		if (m->written_here || m->mf.added_files_count > 0 || m->mf.existing_files_count > 0)
			a->manifests[n++] = *m;
	}
	a->nmanifests = n;
}

int tl_ice_commit_apply_removals(attempt *a, tl_error *err)
{
	for (int i = 0; a->nremoved > 0 && i < a->nmanifests; i++) {
		listed_manifest *m = &a->manifests[i];
		if (m->mf.added_files_count == 0 && m->mf.existing_files_count == 0)
			continue;
		bool holds;
		if (holds_removed(a, &m->mf, &holds, err) < 0 || (holds && rewrite_manifest(a, m, err) < 0))
			return -1;
	}
	drop_dead_manifests(a);
	return 0;
}

/* -------------------------------------------------------- additions */

static void count_added(attempt *a, const tl_ice_data_file *f)
{
	change_counts *c = &a->change;
	c->added_files_size += f->file_size_in_bytes;
	switch (f->content) {
	case TL_ICE_CONTENT_DATA:
		c->added_data_files++;
		c->added_records += f->record_count;
		break;
	case TL_ICE_CONTENT_POSITION_DELETES:
		c->added_delete_files++;
		c->added_pos_delete_files++;
		c->added_pos_deletes += f->record_count;
		break;
	default:
		c->added_delete_files++;
		c->added_eq_delete_files++;
		c->added_eq_deletes += f->record_count;
		break;
	}
}

static bool in_manifest(const tl_ice_data_file *f, int content)
{
	return (f->content == TL_ICE_CONTENT_DATA) == (content == TL_ICE_MANIFEST_DATA);
}

/* Puts the manifest just appended at position `at` of the list. */
static void move_last_to(attempt *a, int at)
{
	listed_manifest last = a->manifests[a->nmanifests - 1];
	memmove(&a->manifests[at + 1], &a->manifests[at], sizeof(listed_manifest) * (size_t)(a->nmanifests - 1 - at));
	a->manifests[at] = last;
}

/*
 * The manifest of the added files of one content. Entries name the new
 * snapshot (as Java writes them) and leave their sequence numbers null to
 * inherit the list's, which is the new snapshot's.
 */
static int write_added_manifest(attempt *a, int content, int at, tl_error *err)
{
	const char *uri = NULL;
	tl_output *out = tl_ice_commit_new_manifest(a, &uri, err);
	tl_ice_manifest_writer *w =
		out ? tl_ice_manifest_writer_open(out, a->schema, a->spec, content, a->snapshot_id, err) : NULL;
	int rc = w != NULL ? 0 : -1;
	for (int i = 0; rc == 0 && i < a->nadded; i++) {
		if (!in_manifest(&a->added[i], content))
			continue;
		tl_ice_manifest_entry e = {.status = TL_ICE_STATUS_ADDED, .has_snapshot_id = true,
		                           .snapshot_id = a->snapshot_id, .data_file = a->added[i]};
		rc = tl_ice_manifest_writer_add(w, &e, err);
		count_added(a, &a->added[i]);
	}
	if (rc == 0) {
		listed_manifest *m = tl_ice_commit_add_listed(a);
		rc = m == NULL ? tl_error_nomem(err, "listing a new manifest")
		               : tl_ice_commit_finish_manifest(a, w, out, uri, m, err);
		if (rc == 0)
			move_last_to(a, at);
		else if (m != NULL)
			a->nmanifests--;
	}
	tl_ice_manifest_writer_free(w);
	tl_output_close(out);
	return rc;
}

int tl_ice_commit_write_added(attempt *a, tl_error *err)
{
	static const int contents[2] = {TL_ICE_MANIFEST_DATA, TL_ICE_MANIFEST_DELETES};
	for (int k = 0; k < 2; k++) {
		bool any = false;
		for (int i = 0; i < a->nadded && !any; i++)
			any = in_manifest(&a->added[i], contents[k]);
		/* The new manifest goes before the carried ones of its content. */
		int at = 0;
		while (at < a->nmanifests && a->manifests[at].mf.content < contents[k])
			at++;
		if (any && write_added_manifest(a, contents[k], at, err) < 0)
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------- list */

static int add_list_entries(attempt *a, tl_ice_manifest_list_writer *w, tl_error *err)
{
	static const int contents[2] = {TL_ICE_MANIFEST_DATA, TL_ICE_MANIFEST_DELETES};
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < a->nmanifests; i++)
			if (a->manifests[i].mf.content == contents[k] &&
			    tl_ice_manifest_list_writer_add(w, &a->manifests[i].mf, err) < 0)
				return -1;
	return 0;
}

int tl_ice_commit_write_list(attempt *a, tl_error *err)
{
	char name[128];
	snprintf(name, sizeof(name), "snap-%" PRId64 "-%d-%s.avro", a->snapshot_id, a->attempt, a->uuid);
	const char *uri = NULL;
	tl_output *out = create_metadata_output(a, name, &uri, err);
	if (out == NULL)
		return -1;
	int64_t parent = a->parent ? a->parent->snapshot_id : -1;
	tl_ice_manifest_list_writer *w =
		tl_ice_manifest_list_writer_open(out, a->snapshot_id, parent, a->sequence_number, err);
	int rc = w != NULL ? add_list_entries(a, w, err) : -1;
	if (rc == 0)
		rc = tl_ice_manifest_list_writer_close(w, err);
	if (rc == 0)
		rc = out->finish(out, err);
	tl_ice_manifest_list_writer_free(w);
	tl_output_close(out);
	if (rc == 0 && (a->manifest_list = tl_strdup(uri)) == NULL)
		rc = tl_error_nomem(err, "naming the manifest list");
	return rc;
}

/* ------------------------------------------------------------ totals */

static void count_live(const tl_ice_data_file *f, int64_t totals[6])
{
	totals[0] += f->content == TL_ICE_CONTENT_DATA ? f->record_count : 0;
	totals[1] += f->file_size_in_bytes;
	totals[2] += f->content == TL_ICE_CONTENT_DATA;
	totals[3] += f->content != TL_ICE_CONTENT_DATA;
	totals[4] += f->content == TL_ICE_CONTENT_POSITION_DELETES ? f->record_count : 0;
	totals[5] += f->content == TL_ICE_CONTENT_EQUALITY_DELETES ? f->record_count : 0;
}

static int count_manifest(void *ctx, const tl_ice_manifest_file *mf, int format_version, tl_error *err)
{
	int64_t *totals = ctx;
	commit_cursor cur;
	int rc = tl_ice_commit_cursor_open(&cur, mf, err);
	tl_ice_manifest_entry e;
	while (rc == 0 && (rc = tl_ice_commit_cursor_next(&cur, &e, err)) == 1) {
		rc = 0;
		if (e.status != TL_ICE_STATUS_DELETED)
			count_live(&e.data_file, totals);
	}
	tl_ice_commit_cursor_close(&cur);
	return rc;
}

int tl_ice_commit_count_parent(const attempt *a, int64_t totals[6], tl_error *err)
{
	memset(totals, 0, sizeof(int64_t) * 6);
	if (a->parent == NULL)
		return 0;
	return read_list(a->parent->manifest_list, count_manifest, totals, err);
}
