/*
 * maintenance_files.c: what a snapshot references (tl_ice_snapshot_files)
 * and what one version of a table references that a later one no longer
 * does (tl_ice_unreferenced_files), as Java's ExpireSnapshots finds the
 * files to delete: by reachability, never by guessing from names.
 *
 * A manifest is immutable and carried from snapshot to snapshot by path,
 * so walking many snapshots reads each manifest once: a manifest already
 * walked contributes nothing new (tl_ice_manifest_wanted_fn).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/storage.h"
#include "iceberg/maintenance_internal.h"

/* ------------------------------------------------------- one snapshot */

typedef struct walker {
	const tl_ice_snapshot *snap;
	tl_ice_file_fn fn;
	tl_ice_manifest_wanted_fn wanted;
	void *arg;
	bool skip_missing;   /* a manifest list or manifest that is gone is passed over */
} walker;

static tl_ice_file_kind entry_kind(int32_t content)
{
	switch (content) {
	case TL_ICE_CONTENT_POSITION_DELETES: return TL_ICE_FILE_POSITION_DELETES;
	case TL_ICE_CONTENT_EQUALITY_DELETES: return TL_ICE_FILE_EQUALITY_DELETES;
	default: return TL_ICE_FILE_DATA;
	}
}

/* Names the file in err unless the message already does. */
static int fail_in(tl_error *err, const char *what, const char *path)
{
	if (err != NULL && strstr(err->message, path) == NULL)
		tl_error_prefix(err, "%s %s", what, path);
	return -1;
}

/* Reports the live entries of an open manifest, their sequence numbers inherited from mf. */
static int walk_entries(walker *w, tl_ice_manifest_reader *r, const tl_ice_manifest_file *mf, int32_t spec_id,
                        tl_error *err)
{
	for (;;) {
		const tl_ice_manifest_entry *entry;
		int more = tl_ice_manifest_reader_next(r, &entry, err);
		if (more <= 0)
			return more;
		if (entry->status == TL_ICE_STATUS_DELETED)
			continue;
		tl_ice_manifest_entry e = *entry;
		if (tl_ice_manifest_entry_inherit(&e, mf, err) < 0)
			return -1;
		tl_ice_file_ref ref = {.kind = entry_kind(e.data_file.content), .path = e.data_file.file_path,
		                       .size = e.data_file.file_size_in_bytes, .spec_id = spec_id, .entry = &e};
		int rc = w->fn(w->arg, &ref, err);
		if (rc != 0)
			return rc;
	}
}

/*
 * Reports a manifest, then its live files unless w->wanted declines. A v1
 * snapshot's manifest (no list entry: from_list false) takes its spec id
 * from its header.
 */
static int walk_manifest(walker *w, const tl_ice_manifest_file *mf, bool from_list, tl_error *err)
{
	if (tl_check_interrupt(err) < 0)
		return -1;
	bool wanted = w->wanted == NULL || w->wanted(w->arg, mf->manifest_path);
	tl_ice_file_ref ref = {.kind = TL_ICE_FILE_MANIFEST, .path = mf->manifest_path, .size = mf->manifest_length,
	                       .manifest_content = mf->content, .spec_id = mf->partition_spec_id};
	int rc = w->fn(w->arg, &ref, err);
	if (rc != 0 || !wanted)
		return rc;
	tl_input *in = tl_input_open_uri(mf->manifest_path, err);
	if (in == NULL && w->skip_missing && err->code == TL_ERR_NOT_FOUND) {
		tl_error_clear(err);
		return 0;
	}
	tl_ice_manifest_reader *r = in ? tl_ice_manifest_reader_open(in, err) : NULL;
	rc = r != NULL ? walk_entries(w, r, mf, from_list ? mf->partition_spec_id : tl_ice_manifest_reader_spec_id(r),
	                              err)
	               : -1;
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	return rc < 0 ? fail_in(err, "manifest", mf->manifest_path) : rc;
}

static int walk_list(walker *w, tl_error *err)
{
	const char *path = w->snap->manifest_list;
	tl_input *in = tl_input_open_uri(path, err);
	if (in == NULL && w->skip_missing && err->code == TL_ERR_NOT_FOUND) {
		tl_error_clear(err);
		return 0;
	}
	if (in == NULL)
		return fail_in(err, "manifest list", path);
	tl_ice_file_ref ref = {.kind = TL_ICE_FILE_MANIFEST_LIST, .path = path, .size = (int64_t)in->size};
	int rc = w->fn(w->arg, &ref, err);
	tl_ice_manifest_list_reader *r = rc == 0 ? tl_ice_manifest_list_reader_open(in, err) : NULL;
	if (rc == 0 && r == NULL)
		rc = -1;
	while (rc == 0) {
		const tl_ice_manifest_file *mf;
		int more = tl_ice_manifest_list_reader_next(r, &mf, err);
		if (more <= 0) {
			rc = more;
			break;
		}
		/* mf stays valid while its manifest is read: the list reader is not called meanwhile. */
		rc = walk_manifest(w, mf, true, err);
	}
	tl_ice_manifest_list_reader_free(r);
	tl_input_close(in);
	return rc < 0 ? fail_in(err, "manifest list", path) : rc;
}

/* An early v1 snapshot names its manifests in the metadata: data only, sequence number 0. */
static int walk_v1_manifests(walker *w, tl_error *err)
{
	for (int i = 0; i < w->snap->nmanifests; i++) {
		tl_ice_manifest_file mf;
		memset(&mf, 0, sizeof(mf));
		mf.manifest_path = w->snap->manifests[i];
		mf.content = TL_ICE_MANIFEST_DATA;
		mf.added_snapshot_id = w->snap->snapshot_id;
		int rc = walk_manifest(w, &mf, false, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int tl_ice_walk_snapshot(const tl_ice_snapshot *snap, tl_ice_file_fn fn, tl_ice_manifest_wanted_fn wanted,
                         bool skip_missing, void *arg, tl_error *err)
{
	walker w = {.snap = snap, .fn = fn, .wanted = wanted, .arg = arg, .skip_missing = skip_missing};
	return snap->manifest_list != NULL ? walk_list(&w, err) : walk_v1_manifests(&w, err);
}

int tl_ice_snapshot_files(const tl_ice_table_metadata *md, int64_t snapshot_id, tl_ice_file_fn fn, void *arg,
                          tl_error *err)
{
	const tl_ice_snapshot *snap = tl_ice_metadata_snapshot(md, snapshot_id);
	if (snap == NULL)
		return tl_error_set(err, TL_ERR_NOT_FOUND, "table %s has no snapshot %" PRId64, md->location, snapshot_id);
	return tl_ice_walk_snapshot(snap, fn, NULL, false, arg, err);
}

/* ------------------------------------------------- every snapshot of md */

static bool not_in_set(void *arg, const char *manifest_path)
{
	return !tl_ice_file_set_has(arg, manifest_path);
}

static int add_to_set(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	if (tl_ice_file_set_add(arg, ref->path) < 0)
		return tl_error_nomem(err, "collecting the files of a table");
	return 0;
}

int tl_ice_add_reachable(tl_ice_file_set *set, const tl_ice_table_metadata *md, tl_error *err)
{
	for (int i = 0; i < md->nsnapshots; i++)
		if (tl_ice_walk_snapshot(&md->snapshots[i], add_to_set, not_in_set, false, set, err) < 0)
			return -1;
	return 0;
}

/* ------------------------------------------------- unreferenced files */

typedef struct unreferenced {
	tl_ice_file_set after;   /* every file the later version references */
	tl_ice_file_set seen;    /* every file of the earlier version met so far */
	tl_ice_file_ref *found;  /* the unreferenced ones, paths in `seen`'s arena */
	size_t nfound, found_cap;
} unreferenced;

/* A manifest the later version keeps, or one walked already, holds nothing new. */
static bool unseen_manifest(void *arg, const char *manifest_path)
{
	const unreferenced *u = arg;
	return !tl_ice_file_set_has(&u->after, manifest_path) && !tl_ice_file_set_has(&u->seen, manifest_path);
}

/* Keeps a copy of ref (without its entry); -1 when out of memory. */
static int keep_found(unreferenced *u, const tl_ice_file_ref *ref)
{
	if (u->nfound == u->found_cap) {
		size_t cap = u->found_cap ? 2 * u->found_cap : 64;
		tl_ice_file_ref *found = tl_realloc(u->found, sizeof(tl_ice_file_ref) * cap);
		if (found == NULL)
			return -1;
		u->found = found;
		u->found_cap = cap;
	}
	size_t n = strlen(ref->path) + 1;
	char *path = tl_arena_alloc(&u->seen.arena, n);
	if (path == NULL)
		return -1;
	memcpy(path, ref->path, n);
	tl_ice_file_ref *f = &u->found[u->nfound++];
	*f = *ref;
	f->path = path;
	f->entry = NULL;
	return 0;
}

/* Keeps each file the later version lacks, the first time it is met. */
static int collect_unreferenced(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	unreferenced *u = arg;
	if (tl_ice_file_set_has(&u->after, ref->path))
		return 0;
	int added = tl_ice_file_set_add(&u->seen, ref->path);
	if (added < 0 || (added && keep_found(u, ref) < 0))
		return tl_error_nomem(err, "collecting unreferenced files");
	return 0;
}

/* Adds after's own file and its metadata log to u->after. */
static int add_metadata_files(unreferenced *u, const tl_ice_table_metadata *after, const char *after_file,
                              tl_error *err)
{
	for (int i = 0; i < after->nmetadata_log; i++)
		if (tl_ice_file_set_add(&u->after, after->metadata_log[i].metadata_file) < 0)
			return tl_error_nomem(err, "collecting metadata files");
	if (after_file != NULL && tl_ice_file_set_add(&u->after, after_file) < 0)
		return tl_error_nomem(err, "collecting metadata files");
	return 0;
}

static int collect_metadata_file(unreferenced *u, const char *file, int64_t timestamp_ms, int64_t older_than_ms,
                                tl_error *err)
{
	if (timestamp_ms >= older_than_ms)
		return 0;
	tl_ice_file_ref ref = {.kind = TL_ICE_FILE_METADATA, .path = file};
	return collect_unreferenced(u, &ref, err);
}

static int collect_metadata_files(unreferenced *u, const tl_ice_table_metadata *before, const char *before_file,
                                 int64_t older_than_ms, tl_error *err)
{
	for (int i = 0; i < before->nmetadata_log; i++) {
		const tl_ice_metadata_log_entry *e = &before->metadata_log[i];
		if (collect_metadata_file(u, e->metadata_file, e->timestamp_ms, older_than_ms, err) < 0)
			return -1;
	}
	if (before_file == NULL)
		return 0;
	return collect_metadata_file(u, before_file, before->last_updated_ms, older_than_ms, err);
}

/* Data and delete files, then manifests, then manifest lists, then metadata files. */
static int deletion_rank(tl_ice_file_kind kind)
{
	switch (kind) {
	case TL_ICE_FILE_MANIFEST: return 1;
	case TL_ICE_FILE_MANIFEST_LIST: return 2;
	case TL_ICE_FILE_METADATA: return 3;
	default: return 0;
	}
}

static int by_deletion_order(const void *a, const void *b)
{
	return deletion_rank(((const tl_ice_file_ref *)a)->kind) - deletion_rank(((const tl_ice_file_ref *)b)->kind);
}

/*
 * Every metadata file is read before fn sees the first file, so fn may
 * delete what it is given: a manifest list or manifest still to be read
 * could otherwise be gone. The files come in an order that lets a caller
 * interrupted while deleting them call again: every file a manifest or a
 * manifest list references comes before it, so one that is already gone
 * (skipped when walking `before`) had nothing left below it to find.
 */
int tl_ice_unreferenced_files(const tl_ice_table_metadata *before, const char *before_file,
                              const tl_ice_table_metadata *after, const char *after_file,
                              int64_t metadata_older_than_ms, tl_ice_file_fn fn, void *arg, tl_error *err)
{
	unreferenced u;
	memset(&u, 0, sizeof(u));
	tl_ice_file_set_init(&u.after);
	tl_ice_file_set_init(&u.seen);
	int rc = tl_ice_add_reachable(&u.after, after, err);
	if (rc == 0)
		rc = add_metadata_files(&u, after, after_file, err);
	for (int i = 0; rc == 0 && i < before->nsnapshots; i++) {
		const tl_ice_snapshot *snap = &before->snapshots[i];
		/* A snapshot both versions hold (its list kept) has nothing to give. */
		if (snap->manifest_list != NULL && tl_ice_file_set_has(&u.after, snap->manifest_list))
			continue;
		rc = tl_ice_walk_snapshot(snap, collect_unreferenced, unseen_manifest, true, &u, err);
	}
	if (rc == 0)
		rc = collect_metadata_files(&u, before, before_file, metadata_older_than_ms, err);
	if (rc == 0 && u.nfound > 1)
		qsort(u.found, u.nfound, sizeof(tl_ice_file_ref), by_deletion_order);
	for (size_t i = 0; rc == 0 && i < u.nfound; i++)
		rc = fn(arg, &u.found[i], err);
	tl_free(u.found);
	tl_ice_file_set_free(&u.after);
	tl_ice_file_set_free(&u.seen);
	return rc;
}
