/*
 * expire.c: removing old snapshots from a table's metadata, a
 * metadata-only commit as Java's ExpireSnapshots makes it (see
 * tl_ice_table_expire_snapshots in iceberg_maintenance.h).
 *
 * Only the metadata changes here. The files the expired snapshots alone
 * referenced stay until the caller deletes them, found by comparing the
 * versions before and after (tl_ice_unreferenced_files): the caller can
 * then journal the commit first and delete after, or again after a crash.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tierlake/iceberg_maintenance.h"
#include "iceberg/commit_internal.h"
#include "iceberg/table_internal.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int snapshot_index(const tl_ice_table_metadata *md, int64_t id)
{
	for (int i = 0; i < md->nsnapshots; i++)
		if (md->snapshots[i].snapshot_id == id)
			return i;
	return -1;
}

/* Keeps `head` and its parents, `count` snapshots in all (a chain longer than the snapshot list is a cycle). */
static void keep_ancestors(const tl_ice_table_metadata *md, int64_t head, int count, bool *keep)
{
	int64_t id = head;
	for (int n = 0; n < count && n <= md->nsnapshots && id != TL_ICE_NO_SNAPSHOT; n++) {
		int i = snapshot_index(md, id);
		if (i < 0)
			return;
		keep[i] = true;
		id = md->snapshots[i].parent_id;
	}
}

static bool is_listed(const int64_t *ids, int n, int64_t id)
{
	for (int i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

static bool is_ref_head(const tl_ice_table_metadata *md, int64_t id)
{
	for (int i = 0; i < md->nrefs; i++)
		if (md->refs[i].snapshot_id == id)
			return true;
	return false;
}

/*
 * Which snapshots stay: the young ones, the caller's, every ref head and
 * the current snapshot, the newest retain_last ancestors of the current
 * one, and the ancestors a branch asks to keep (its min-snapshots-to-keep,
 * as Java honours it).
 */
static void mark_kept(const tl_ice_table_metadata *md, const tl_ice_expire_options *o, bool *keep)
{
	for (int i = 0; i < md->nsnapshots; i++) {
		const tl_ice_snapshot *s = &md->snapshots[i];
		keep[i] = s->timestamp_ms >= o->older_than_ms || is_listed(o->keep_ids, o->nkeep_ids, s->snapshot_id) ||
		          is_ref_head(md, s->snapshot_id) || s->snapshot_id == md->current_snapshot_id;
	}
	keep_ancestors(md, md->current_snapshot_id, o->retain_last, keep);
	for (int i = 0; i < md->nrefs; i++)
		if (md->refs[i].is_branch && md->refs[i].min_snapshots_to_keep > 0)
			keep_ancestors(md, md->refs[i].snapshot_id, md->refs[i].min_snapshots_to_keep, keep);
}

/* Removes from md the snapshots not kept in base (by id: md is a copy of base). */
static int remove_snapshots(tl_ice_table_metadata *md, const tl_ice_table_metadata *base, const bool *keep)
{
	int n = 0, removed = 0;
	for (int i = 0; i < md->nsnapshots; i++) {
		int b = snapshot_index(base, md->snapshots[i].snapshot_id);
		if (b >= 0 && !keep[b]) {
			tl_ice_snapshot_clear(&md->snapshots[i]);
			removed++;
		} else {
			md->snapshots[n++] = md->snapshots[i];
		}
	}
	md->nsnapshots = n;
	return removed;
}

/*
 * Keeps the snapshot log entries of remaining snapshots, after the last
 * entry of a removed one, as Java does: a log with a gap would say the
 * snapshot before the gap was current for longer than it was, and a
 * reader asking for the table as of that time would get the wrong one.
 */
static void filter_snapshot_log(tl_ice_table_metadata *md)
{
	int n = 0;
	for (int i = 0; i < md->nsnapshot_log; i++) {
		if (tl_ice_metadata_snapshot(md, md->snapshot_log[i].snapshot_id) != NULL)
			md->snapshot_log[n++] = md->snapshot_log[i];
		else
			n = 0;
	}
	md->nsnapshot_log = n;
}

static int check_options(const tl_ice_table *t, const tl_ice_expire_options *o, tl_error *err)
{
	if (o->retain_last < 1)
		return tl_error_set(err, TL_ERR_INVALID, "expiring snapshots of table %s: retain_last must be at least 1, not %d",
		                    t->location, o->retain_last);
	if (o->nkeep_ids < 0 || (o->nkeep_ids > 0 && o->keep_ids == NULL))
		return tl_error_set(err, TL_ERR_INVALID, "expiring snapshots of table %s: %d snapshot ids to keep but no array",
		                    t->location, o->nkeep_ids);
	return 0;
}

int tl_ice_table_expire_snapshots(tl_ice_table *t, const tl_ice_expire_options *opts, int *nexpired, tl_error *err)
{
	if (nexpired != NULL)
		*nexpired = 0;
	if (check_options(t, opts, err) < 0)
		return -1;
	const tl_ice_table_metadata *base = t->metadata;
	if (base->nsnapshots == 0)
		return 0;
	bool *keep = tl_calloc((size_t)base->nsnapshots, sizeof(bool));
	if (keep == NULL)
		return tl_error_nomem(err, "expiring snapshots of %s", t->location);
	mark_kept(base, opts, keep);
	int expiring = 0;
	for (int i = 0; i < base->nsnapshots; i++)
		expiring += !keep[i];
	if (expiring == 0) {
		tl_free(keep);
		return 0;
	}
	const char *metadata_dir = tl_ice_table_commit_dir(t, err);
	tl_ice_table_metadata *md = metadata_dir != NULL ? tl_ice_commit_next_metadata(t, err) : NULL;
	if (md == NULL) {
		tl_free(keep);
		return -1;
	}
	int removed = remove_snapshots(md, base, keep);
	tl_free(keep);
	filter_snapshot_log(md);
	int64_t now = now_ms();
	md->last_updated_ms = now > base->last_updated_ms ? now : base->last_updated_ms;
	if (tl_ice_commit_publish(t, metadata_dir, md, err) < 0) {
		tl_error_prefix(err, "expiring snapshots of table %s", t->location);
		return -1;
	}
	if (nexpired != NULL)
		*nexpired = removed;
	return 0;
}
