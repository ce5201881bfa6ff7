/*
 * expiry.c: expiring a table's old lake snapshots and deleting the files
 * only they referenced, honouring every reader (SPEC §5, §9;
 * docs/maintenance.md).
 *
 * What stays: the current snapshot (the published S), the newest
 * min_snapshots, every snapshot younger than snapshot_max_age, and every
 * snapshot at or above the oldest live pin's, by sequence number (a
 * committed read_pins row holds (T, S); snapshot ids are random, so "at
 * or above" is the sequence the table committed them in). In-backend
 * readers hold their S in memory without a row: they are waited out on
 * the table's reader key after the expiry is published and before any
 * file goes, and every reader that starts later reads the published S.
 *
 * One run, journaled as op_log 'maintenance' with details kind 'expiry':
 *
 *   1. journal the metadata file the run starts from (phase 'committing');
 *   2. under the table's lake lock, a metadata-only commit drops the
 *      expired snapshots (fault points expiry-before-commit,
 *      expiry-after-commit), then one transaction publishes the new
 *      metadata location with S unchanged and phase 'committed';
 *   3. wait out in-backend readers; delete every file the starting
 *      metadata referenced and the new one does not (data, delete,
 *      manifest, manifest list, and metadata files that left the
 *      metadata log before the oldest pinned snapshot was written);
 *      phase 'done'.
 *
 * Recovery compares the journaled starting metadata with the lake's
 * current one: if a snapshot of the first is missing from the second, the
 * commit landed and steps 2 (the publish) and 3 are finished; if not,
 * nothing happened and the run is marked aborted. Deleting is idempotent:
 * a file already gone counts as missing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "daemon.h"
#include "expiry.h"
#include "fault.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "pg.h"
#include "tiering.h"
#include "tierlake/iceberg_maintenance.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/storage.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The snapshots live pins hold, in *ids (free()), and the oldest pinned snapshot's timestamp (INT64_MAX: none). */
typedef struct pinned {
	int64_t *ids;
	int n;
	int64_t oldest_ms;
} pinned;

/*
 * How far back a hybrid read of a mirrored table may reach from the moment
 * it pinned: it reads the newest batch snapshot its transaction sees, and
 * the batches kept for that are at most the mirror's history old (cli/
 * mirror.c, 120 s), with room for a slow capture.
 */
#define HYBRID_REACH_MS INT64_C(300000)

/*
 * Every snapshot the readers keep:
 *   - each snapshot a live read_pins row names, and each with a sequence
 *     number at or above the oldest of them;
 *   - a mirrored table's: each batch snapshot in tierdb.mirror_batches
 *     (hybrid reads choose among them), and each snapshot committed less
 *     than HYBRID_REACH_MS before the oldest live pin started (a Spark
 *     hybrid read's pin names the newest S, its rows come from a batch
 *     snapshot before it).
 * A pin whose snapshot the metadata lacks (a pin on a snapshot this table
 * never had) keeps everything: expiry cannot tell what it needs.
 */
static int pinned_snapshots(PGconn *c, const tdb_catalog_table *t, const tl_ice_table_metadata *md, pinned *out,
                            tl_error *err)
{
	memset(out, 0, sizeof(*out));
	out->oldest_ms = INT64_MAX;
	char id[24];
	tdb_int_text(t->table_id, id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(
		c, "reading the table's read pins",
		"SELECT p.pinned_lake_snapshot_id, 'pin', (extract(epoch FROM p.started_at) * 1000)::bigint"
		" FROM tierdb.read_pins p WHERE p.table_id = $1 AND p.expires_at > now()"
		"   AND p.pinned_lake_snapshot_id IS NOT NULL"
		" UNION ALL SELECT b.lake_snapshot_id, 'batch', NULL FROM tierdb.mirror_batches b WHERE b.table_id = $1",
		1, params, err);
	if (res == NULL)
		return -1;
	bool mirrored = strcmp(t->mode, "mirrored") == 0;
	int64_t min_seq = INT64_MAX, min_started_ms = INT64_MAX;
	out->ids = calloc((size_t)md->nsnapshots + (size_t)PQntuples(res) + 1, sizeof(int64_t));
	for (int i = 0; i < PQntuples(res); i++) {
		int64_t sid = strtoll(PQgetvalue(res, i, 0), NULL, 10);
		const tl_ice_snapshot *s = tl_ice_metadata_snapshot(md, sid);
		if (strcmp(PQgetvalue(res, i, 1), "batch") == 0) {
			if (s != NULL)
				out->ids[out->n++] = sid;
			continue;
		}
		if (s == NULL) {
			min_seq = INT64_MIN;
			out->oldest_ms = INT64_MIN;
			break;
		}
		int64_t started = strtoll(PQgetvalue(res, i, 2), NULL, 10);
		min_seq = s->sequence_number < min_seq ? s->sequence_number : min_seq;
		min_started_ms = started < min_started_ms ? started : min_started_ms;
		out->oldest_ms = s->timestamp_ms < out->oldest_ms ? s->timestamp_ms : out->oldest_ms;
	}
	PQclear(res);
	if (min_seq == INT64_MAX)
		return 0;
	int64_t reach_ms = mirrored && min_started_ms != INT64_MAX ? min_started_ms - HYBRID_REACH_MS : INT64_MAX;
	for (int i = 0; i < md->nsnapshots; i++)
		if (md->snapshots[i].sequence_number >= min_seq || md->snapshots[i].timestamp_ms >= reach_ms)
			out->ids[out->n++] = md->snapshots[i].snapshot_id;
	if (reach_ms < out->oldest_ms)
		out->oldest_ms = reach_ms;
	return 0;
}

/* Whether the options would expire anything: the rule of tl_ice_table_expire_snapshots, counted. */
static bool anything_to_expire(const tl_ice_table_metadata *md, const tl_ice_expire_options *o)
{
	/* the newest retain_last ancestors of the current snapshot stay */
	int64_t *kept = calloc((size_t)o->retain_last + 1, sizeof(int64_t));
	int nkept = 0;
	for (int64_t id = md->current_snapshot_id; id != TL_ICE_NO_SNAPSHOT && nkept < o->retain_last;) {
		const tl_ice_snapshot *s = tl_ice_metadata_snapshot(md, id);
		if (s == NULL)
			break;
		kept[nkept++] = id;
		id = s->parent_id;
	}
	bool any = false;
	for (int i = 0; i < md->nsnapshots && !any; i++) {
		const tl_ice_snapshot *s = &md->snapshots[i];
		bool keep = s->snapshot_id == md->current_snapshot_id || s->timestamp_ms >= o->older_than_ms;
		for (int k = 0; k < nkept && !keep; k++)
			keep = kept[k] == s->snapshot_id;
		for (int k = 0; k < o->nkeep_ids && !keep; k++)
			keep = o->keep_ids[k] == s->snapshot_id;
		for (int k = 0; k < md->nrefs && !keep; k++)
			keep = md->refs[k].snapshot_id == s->snapshot_id;
		any = !keep;
	}
	free(kept);
	return any;
}

/* ------------------------------------------------------------ deleting */

typedef struct deleting {
	const char *label;
	int64_t files, bytes, missing;
} deleting;

static int delete_one(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	deleting *d = arg;
	tl_error e;
	tl_error_clear(&e);
	if (tl_storage_remove(ref->path, &e) < 0) {
		if (e.code != TL_ERR_NOT_FOUND)
			return tl_error_set(err, e.code, "deleting %s: %s", ref->path, e.message);
		d->missing++;
		return 0;
	}
	d->files++;
	d->bytes += ref->size > 0 ? ref->size : 0;
	if (d->files == 1)
		tdb_fault("expiry-during-delete");
	return 0;
}

/* Whether t's lake lives in a REST catalog, which owns its metadata files. */
static bool in_rest_catalog(const tdb_catalog_table *t)
{
	return t->lake_props != NULL && strstr(t->lake_props, "\"rest_catalog\"") != NULL;
}

/*
 * Step 3: waits out in-backend readers, then deletes what `before` (the
 * metadata file the run started from) referenced that the lake's current
 * metadata does not. Metadata files go only when they left the log before
 * the oldest pinned snapshot was written (a pin's metadata location is
 * never older than its snapshot).
 */
static int delete_unreferenced(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *before_file,
                               tdb_maintenance_result *result, tl_error *err)
{
	const char *label = tdb_table_label(t);
	if (tdb_wait_out_readers(c, t->table_id, err) < 0)
		return -1;
	tl_ice_table *before = tl_ice_table_open(before_file, err);
	tl_ice_table *lake = before != NULL ? tdb_lake_open(t, err) : NULL;
	int rc = lake != NULL ? 0 : -1;
	pinned pins;
	memset(&pins, 0, sizeof(pins));
	if (rc == 0)
		rc = pinned_snapshots(c, t, lake->metadata, &pins, err);
	deleting d = {.label = label};
	if (rc == 0) {
		int64_t floor = in_rest_catalog(t) ? INT64_MIN : pins.oldest_ms < now_ms() ? pins.oldest_ms : now_ms();
		char *after_file = tdb_lake_metadata_location(lake);
		rc = tl_ice_unreferenced_files(before->metadata, before->metadata_file, lake->metadata, after_file, floor,
		                               delete_one, &d, err);
		free(after_file);
	}
	if (rc == 0) {
		json_t *counts = json_pack("{s:I, s:I, s:I}", "files_deleted", (json_int_t)d.files, "bytes_deleted",
		                           (json_int_t)d.bytes, "already_gone", (json_int_t)d.missing);
		char *text = json_dumps(counts, JSON_COMPACT);
		const char *params[] = {op_id, text};
		rc = tdb_pg_exec(c, "finishing the expiry",
		                 "UPDATE tierdb.op_log SET phase = 'done', details = details || $2::jsonb, updated_at = now()"
		                 " WHERE op_id = $1::uuid",
		                 2, params, err);
		free(text);
		json_decref(counts);
		result->files_deleted += d.files;
		result->bytes_deleted += d.bytes;
		tdb_log(label, "expiry: operation %s deleted %" PRId64 " file%s (%" PRId64 " bytes) no snapshot needs",
		        op_id, d.files, d.files == 1 ? "" : "s", d.bytes);
	}
	free(pins.ids);
	tl_ice_table_free(lake);
	tl_ice_table_free(before);
	return rc;
}

/* ------------------------------------------------------------ publishing */

/* Publishes the lake's current metadata location with S unchanged, and phase 'committed'. */
static int publish_metadata(PGconn *c, const tdb_catalog_table *t, const char *op_id, const tl_ice_table *lake,
                            tl_error *err)
{
	int64_t s = tdb_lake_current_snapshot(lake);
	if (tdb_publish_snapshot_begin(c, tdb_table_label(t), t->table_id, "snapshot expiry", op_id, true, s, s, lake,
	                               err) < 0 ||
	    tdb_oplog_set_phase(c, op_id, "committed", NULL, err) < 0 ||
	    tdb_pg_exec(c, "publishing the expiry", "COMMIT", 0, NULL, err) < 0) {
		tdb_abort_transaction(c);
		return -1;
	}
	return 0;
}

/* Step 2 under the lake lock; *expired says how many snapshots went. */
static int commit_expiry(PGconn *c, const tdb_catalog_table *t, const char *op_id, tl_ice_table *lake,
                         const tl_ice_expire_options *opts, int *expired, tl_error *err)
{
	if (tdb_lake_lock(c, t->table_id, true, err) < 0)
		return -1;
	int rc = tl_ice_table_refresh(lake, err);
	if (rc == 0)
		rc = tdb_lake_check_published(lake, t->snapshot_id, "snapshot expiry", err);
	if (rc == 0) {
		tdb_fault("expiry-before-commit");
		rc = tl_ice_table_expire_snapshots(lake, opts, expired, err);
	}
	if (rc == 0 && *expired > 0) {
		tdb_fault("expiry-after-commit");
		rc = publish_metadata(c, t, op_id, lake, err);
	}
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_lake_lock(c, t->table_id, false, &ignored);
	return rc;
}

int tdb_expire_snapshots(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *policy,
                         tdb_maintenance_result *result, tl_error *err)
{
	const char *label = tdb_table_label(t);
	if (!t->has_snapshot)
		return 0;
	tl_ice_table *lake = tdb_lake_open(t, err);
	if (lake == NULL)
		return -1;
	pinned pins;
	int rc = tdb_lake_check_published(lake, t->snapshot_id, "snapshot expiry", err);
	if (rc == 0)
		rc = pinned_snapshots(c, t, lake->metadata, &pins, err);
	if (rc < 0) {
		tl_ice_table_free(lake);
		return -1;
	}
	tl_ice_expire_options opts = {.older_than_ms = now_ms() - policy->snapshot_max_age_ms,
	                              .retain_last = (int)(policy->min_snapshots < 1 ? 1 : policy->min_snapshots),
	                              .keep_ids = pins.ids,
	                              .nkeep_ids = pins.n};
	/* A pin on a snapshot the table lacks: nothing can be proven unneeded. */
	bool blind = pins.oldest_ms == INT64_MIN;
	if (blind)
		tdb_log(label, "expiry: a read pin names a snapshot the lake table lacks; no snapshot expires while it lives");
	if (blind || !anything_to_expire(lake->metadata, &opts)) {
		free(pins.ids);
		tl_ice_table_free(lake);
		return 0;
	}
	char *before = strdup(lake->metadata_file);
	json_t *d = json_pack("{s:s, s:s, s:I}", "kind", "expiry", "before_metadata", before, "snapshots_before",
	                      (json_int_t)lake->metadata->nsnapshots);
	char *details = json_dumps(d, JSON_COMPACT);
	json_decref(d);
	char op_id[37] = "";
	int expired = 0;
	rc = tdb_oplog_begin(c, t->table_id, "maintenance", "committing", details, op_id, err);
	if (rc == 0)
		rc = commit_expiry(c, t, op_id, lake, &opts, &expired, err);
	if (rc == 0 && expired == 0) {
		rc = tdb_oplog_set_phase(c, op_id, "aborted", NULL, err); /* the lake moved: nothing was old enough */
	} else if (rc == 0) {
		result->snapshots_expired += expired;
		tdb_log(label, "expiry: operation %s expired %d snapshot%s (%d remain)", op_id, expired,
		        expired == 1 ? "" : "s", lake->metadata->nsnapshots);
		tdb_fault("expiry-before-delete");
		rc = delete_unreferenced(c, t, op_id, before, result, err);
	} else if (op_id[0] != '\0') {
		/* Whether the commit landed is settled on the lake's word next cycle (tdb_recover_expiry). */
		tl_error_prefix(err, "snapshot expiry %s", op_id);
	}
	free(details);
	free(before);
	free(pins.ids);
	tl_ice_table_free(lake);
	return rc;
}

/* ------------------------------------------------------------ recovery */

static bool lost_a_snapshot(const tl_ice_table_metadata *before, const tl_ice_table_metadata *now)
{
	for (int i = 0; i < before->nsnapshots; i++)
		if (tl_ice_metadata_snapshot(now, before->snapshots[i].snapshot_id) == NULL)
			return true;
	return false;
}

static int settle_run(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase, json_t *details,
                      tl_error *err)
{
	const char *label = tdb_table_label(t);
	const char *before_file = json_string_value(json_object_get(details, "before_metadata"));
	if (before_file == NULL)
		return tl_error_set(err, TL_ERR_CORRUPT, "the journal of expiry %s lacks its starting metadata", op_id);
	tl_ice_table *before = tl_ice_table_open(before_file, err);
	if (before == NULL)
		return -1;
	tl_ice_table *lake = tdb_lake_open(t, err);
	int rc = lake != NULL ? 1 : -1;
	if (rc > 0 && !lost_a_snapshot(before->metadata, lake->metadata)) {
		rc = tdb_oplog_set_phase(c, op_id, "aborted", NULL, err) < 0 ? -1 : 1;
		if (rc > 0)
			tdb_log(label, "expiry: interrupted operation %s never reached the lake; nothing to undo", op_id);
	} else if (rc > 0) {
		tdb_maintenance_result ignored;
		memset(&ignored, 0, sizeof(ignored));
		if (strcmp(phase, "committing") == 0 && publish_metadata(c, t, op_id, lake, err) < 0)
			rc = -1;
		else if (delete_unreferenced(c, t, op_id, before_file, &ignored, err) < 0)
			rc = -1;
		else
			tdb_log(label, "expiry: finished interrupted operation %s", op_id);
	}
	tl_ice_table_free(lake);
	tl_ice_table_free(before);
	return rc;
}

int tdb_recover_expiry(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	return tdb_settle_interrupted(c, t, "maintenance", "expiry", settle_run, err);
}
