/*
 * rollback.c: making an earlier snapshot current again, a metadata-only
 * commit as Java's ManageSnapshots.rollbackTo makes it (see
 * tl_ice_table_rollback in iceberg_table.h).
 *
 * TierDB's direct tables need it: a lake commit made by a transaction that
 * then rolled back names no committed cut-line, and the next writer undoes
 * it before building on the lake (docs/direct.md).  The snapshots rolled
 * back stay in the metadata (readers asking for them by id still find
 * them) and their files stay until snapshot expiry removes them, as in
 * Java; the snapshot log records the change of current snapshot.
 */
#include <string.h>
#include <time.h>

#include "tierlake/iceberg_table.h"
#include "iceberg/commit_internal.h"
#include "iceberg/table_internal.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether `ancestor` is the current snapshot or one of its parents. */
static bool is_current_ancestor(const tl_ice_table_metadata *md, int64_t ancestor)
{
	int64_t id = md->current_snapshot_id;
	/* a parent chain longer than the snapshot list is a cycle: stop */
	for (int steps = 0; id != TL_ICE_NO_SNAPSHOT && steps <= md->nsnapshots; steps++) {
		if (id == ancestor)
			return true;
		const tl_ice_snapshot *s = tl_ice_metadata_snapshot(md, id);
		if (s == NULL)
			return false;
		id = s->parent_id;
	}
	return false;
}

/* Points "main" at snapshot_id, or removes it for TL_ICE_NO_SNAPSHOT; -1 when out of memory. */
static int point_main(tl_ice_table_metadata *md, int64_t snapshot_id)
{
	for (int i = 0; i < md->nrefs; i++) {
		if (strcmp(md->refs[i].name, "main") != 0)
			continue;
		if (snapshot_id != TL_ICE_NO_SNAPSHOT) {
			md->refs[i].snapshot_id = snapshot_id;
			return 0;
		}
		tl_free(md->refs[i].name);
		memmove(&md->refs[i], &md->refs[i + 1], sizeof(tl_ice_ref) * (size_t)(md->nrefs - i - 1));
		md->nrefs--;
		return 0;
	}
	return 0; /* no main: the current snapshot id alone says it (v1 tables) */
}

static int log_snapshot(tl_ice_table_metadata *md, int64_t snapshot_id, int64_t at_ms)
{
	if (snapshot_id == TL_ICE_NO_SNAPSHOT)
		return 0;
	tl_ice_snapshot_log_entry *log =
		tl_realloc(md->snapshot_log, sizeof(tl_ice_snapshot_log_entry) * (size_t)(md->nsnapshot_log + 1));
	if (log == NULL)
		return -1;
	md->snapshot_log = log;
	md->snapshot_log[md->nsnapshot_log].timestamp_ms = at_ms;
	md->snapshot_log[md->nsnapshot_log].snapshot_id = snapshot_id;
	md->nsnapshot_log++;
	return 0;
}

int tl_ice_table_rollback(tl_ice_table *t, int64_t snapshot_id, tl_error *err)
{
	const tl_ice_table_metadata *base = t->metadata;
	if (base->current_snapshot_id == snapshot_id)
		return 0;
	if (snapshot_id != TL_ICE_NO_SNAPSHOT && !is_current_ancestor(base, snapshot_id))
		return tl_error_set(err, TL_ERR_INVALID,
		                    "cannot roll table %s back to snapshot %lld: it is not an ancestor of the current "
		                    "snapshot %lld",
		                    t->location, (long long)snapshot_id, (long long)base->current_snapshot_id);
	if (snapshot_id == TL_ICE_NO_SNAPSHOT && tl_ice_table_catalog(t) != NULL)
		return tl_error_set(err, TL_ERR_UNSUPPORTED,
		                    "cannot roll table %s back to no snapshot through its REST catalog (that removes the "
		                    "main branch, which this client does not send)",
		                    t->location);
	const char *metadata_dir = tl_ice_table_commit_dir(t, err);
	tl_ice_table_metadata *md = metadata_dir != NULL ? tl_ice_commit_next_metadata(t, err) : NULL;
	if (md == NULL)
		return -1;
	int64_t at = now_ms();
	if (point_main(md, snapshot_id) < 0 || log_snapshot(md, snapshot_id, at) < 0) {
		tl_ice_metadata_free(md);
		return tl_error_nomem(err, "rolling table %s back", t->location);
	}
	md->current_snapshot_id = snapshot_id;
	md->last_updated_ms = at;
	return tl_ice_commit_publish(t, metadata_dir, md, err);
}
