/*
 * maintenance.c: the daemon's maintenance step for one table
 * (maintenance.h; docs/maintenance.md).
 *
 * Every cycle: settle interrupted maintenance operations, then collect
 * the lake's health (tierdb.lake_stats: files, bytes, small files, delete
 * files and their rows, manifests, snapshots, the oldest pin) with
 * warnings when debt passes the policy's thresholds. When a `tierdb
 * maintain` request waits, or the policy's interval has passed since the
 * last run, the passes run in this order, each its own journaled lake
 * operation on the S the previous one published:
 *
 *   compaction (compaction.c), manifest rewrite (here), snapshot expiry
 *   (expiry.c, last of the lake-changing passes so it also drops what the
 *   others replaced), and the opt-in orphan sweep (here).
 *
 * Tiered tables get every pass. Mirrored and direct tables get snapshot
 * expiry (every pump batch, every direct write is a snapshot) and the
 * orphan sweep, not yet the passes that move S: the pump's batches and
 * the hybrid reads' batch snapshots assume the pump alone moves a mirror's
 * S, and a direct table's S moves inside its writers' transactions
 * (docs/maintenance.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "compaction.h"
#include "daemon.h"
#include "expiry.h"
#include "fault.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "maintenance.h"
#include "maintenance_policy.h"
#include "pg.h"
#include "tiering.h"
#include "tierlake/iceberg_maintenance.h"
#include "tierlake/storage.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ statistics */

typedef struct lake_health {
	int64_t snapshots;
	int64_t manifests;
	int64_t data_files, data_bytes, records, small_files;
	int64_t position_delete_files, equality_delete_files, delete_records, delete_bytes;
	int64_t small_file_bytes;
} lake_health;

static int count_file(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	lake_health *h = arg;
	switch (ref->kind) {
	case TL_ICE_FILE_MANIFEST: h->manifests++; break;
	case TL_ICE_FILE_DATA:
		h->data_files++;
		h->data_bytes += ref->entry->data_file.file_size_in_bytes;
		h->records += ref->entry->data_file.record_count;
		h->small_files += ref->entry->data_file.file_size_in_bytes < h->small_file_bytes;
		break;
	case TL_ICE_FILE_POSITION_DELETES:
	case TL_ICE_FILE_EQUALITY_DELETES:
		if (ref->kind == TL_ICE_FILE_POSITION_DELETES)
			h->position_delete_files++;
		else
			h->equality_delete_files++;
		h->delete_records += ref->entry->data_file.record_count;
		h->delete_bytes += ref->entry->data_file.file_size_in_bytes;
		break;
	default: break;
	}
	return 0;
}

static int collect_health(const tl_ice_table *lake, int64_t snapshot_id, const tdb_maintenance_policy *p,
                          lake_health *h, tl_error *err)
{
	memset(h, 0, sizeof(*h));
	h->small_file_bytes = p->small_file_bytes;
	h->snapshots = lake->metadata->nsnapshots;
	if (snapshot_id == TL_ICE_NO_SNAPSHOT)
		return 0;
	return tl_ice_snapshot_files(lake->metadata, snapshot_id, count_file, h, err);
}

static double delete_ratio(const lake_health *h)
{
	return h->records > 0 ? (double)h->delete_records / (double)h->records : 0.0;
}

/* The debt warnings the policy's thresholds call for. */
static json_t *health_warnings(const lake_health *h, const tdb_maintenance_policy *p)
{
	json_t *w = json_array();
	if (h->small_files >= p->warn_small_files)
		json_array_append_new(w, json_pack("{s:s, s:I, s:I, s:s}", "kind", "small_files", "count",
		                                   (json_int_t)h->small_files, "threshold", (json_int_t)p->warn_small_files,
		                                   "advice", "run 'tierdb maintain' or lower the policy's min_input_files"));
	if (h->delete_records > 0 && delete_ratio(h) >= p->warn_delete_ratio)
		json_array_append_new(w, json_pack("{s:s, s:f, s:f, s:s}", "kind", "delete_debt", "ratio", delete_ratio(h),
		                                   "threshold", p->warn_delete_ratio, "advice",
		                                   "reads pay for every delete row; run 'tierdb maintain'"));
	if (h->snapshots >= p->warn_snapshots)
		json_array_append_new(w, json_pack("{s:s, s:I, s:I, s:s}", "kind", "snapshots", "count",
		                                   (json_int_t)h->snapshots, "threshold", (json_int_t)p->warn_snapshots,
		                                   "advice", "check the policy's expiry settings and long-lived read pins"));
	return w;
}

static json_t *health_json(const lake_health *h, int64_t snapshot_id)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "snapshot_id",
	                 (json_int_t)snapshot_id, "snapshots", (json_int_t)h->snapshots, "manifests",
	                 (json_int_t)h->manifests, "data_files", (json_int_t)h->data_files, "data_bytes",
	                 (json_int_t)h->data_bytes, "records", (json_int_t)h->records, "small_files",
	                 (json_int_t)h->small_files, "position_delete_files", (json_int_t)h->position_delete_files,
	                 "equality_delete_files", (json_int_t)h->equality_delete_files, "delete_records",
	                 (json_int_t)h->delete_records, "delete_bytes", (json_int_t)h->delete_bytes);
}

/*
 * Writes tierdb.lake_stats: the health, the oldest live pin, the last run
 * (`last`, may be NULL: the previous one stays), the warnings (the fold's
 * own unfoldable_delta_row warnings kept) and the effective policy.
 */
static int record_stats(PGconn *c, const tdb_catalog_table *t, json_t *stats, json_t *last, json_t *warnings,
                        json_t *policy, tl_error *err)
{
	char id[24];
	tdb_int_text(t->table_id, id);
	if (last != NULL)
		json_object_set(stats, "last_maintenance", last);
	char *stats_text = json_dumps(stats, JSON_COMPACT);
	char *warnings_text = json_dumps(warnings, JSON_COMPACT);
	char *policy_text = json_dumps(policy, JSON_COMPACT);
	const char *params[] = {id, stats_text, warnings_text, policy_text};
	int rc = tdb_pg_exec(
		c, "recording the lake's statistics",
		"WITH pins AS (SELECT min(started_at) AS oldest, count(*) AS n FROM tierdb.read_pins"
		"              WHERE table_id = $1 AND expires_at > now())"
		" INSERT INTO tierdb.lake_stats AS s (table_id, stats, warnings, policy, collected_at)"
		" SELECT $1, $2::jsonb || jsonb_build_object('read_pins', pins.n, 'oldest_pin_started_at', pins.oldest),"
		"        $3::jsonb, $4::jsonb, now() FROM pins"
		" ON CONFLICT (table_id) DO UPDATE SET"
		"   stats = CASE WHEN excluded.stats ? 'last_maintenance' THEN excluded.stats"
		"                ELSE excluded.stats || jsonb_strip_nulls(jsonb_build_object("
		"                       'last_maintenance', s.stats->'last_maintenance')) END,"
		"   warnings = (SELECT coalesce(jsonb_agg(w), '[]') FROM jsonb_array_elements(s.warnings) w"
		"               WHERE w->>'kind' = 'unfoldable_delta_row') || excluded.warnings,"
		"   policy = excluded.policy, collected_at = now()",
		4, params, err);
	free(stats_text);
	free(warnings_text);
	free(policy_text);
	return rc;
}

/* ------------------------------------------------------------ manifest rewrite */

typedef struct manifest_run {
	PGconn *c;
	const tdb_catalog_table *t;
	const tdb_maintenance_policy *policy;
	char op_id[37];
	tl_ice_table *lake;
	int64_t snapshot_id;
	bool committed;
} manifest_run;

static int commit_manifests(void *arg, tl_error *err)
{
	manifest_run *r = arg;
	if (tl_ice_table_refresh(r->lake, err) < 0 ||
	    tdb_lake_check_published(r->lake, r->t->snapshot_id, "the manifest rewrite", err) < 0)
		return -1;
	tl_ice_kv summary = {.key = "tierdb.op-id", .value = r->op_id};
	int rc = tl_ice_table_rewrite_manifests(r->lake, r->policy->manifest_target_bytes, &summary, 1, &r->snapshot_id,
	                                        err);
	if (rc == 0) {
		r->committed = r->snapshot_id != TL_ICE_NO_SNAPSHOT;
		return 0;
	}
	int landed = tdb_lake_commit_landed(r->lake, r->op_id, &r->snapshot_id);
	if (landed == 0)
		return -1;
	r->committed = true;
	return landed > 0 ? 0 : -1;
}

static int publish_manifests(void *arg, tl_error *err)
{
	manifest_run *r = arg;
	if (tdb_publish_snapshot_begin(r->c, tdb_table_label(r->t), r->t->table_id, "the manifest rewrite", r->op_id,
	                               r->committed, r->t->snapshot_id, r->snapshot_id, r->lake, err) < 0 ||
	    tdb_oplog_set_phase(r->c, r->op_id, r->committed ? "done" : "aborted",
	                        r->committed ? &r->snapshot_id : NULL, err) < 0)
		return -1;
	return tdb_pg_exec(r->c, "publishing the manifest rewrite", "COMMIT", 0, NULL, err);
}

static int rewrite_manifests(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *policy,
                             int64_t manifests_before, tdb_maintenance_result *result, tl_error *err)
{
	manifest_run r = {.c = c, .t = t, .policy = policy, .snapshot_id = TL_ICE_NO_SNAPSHOT};
	r.lake = tdb_lake_open(t, err);
	if (r.lake == NULL)
		return -1;
	int rc = tdb_oplog_begin(c, t->table_id, "maintenance", "committing", "{\"kind\": \"manifests\"}", r.op_id, err);
	tdb_lake_op op = {.c = c, .table_id = t->table_id, .op_id = r.op_id, .step = "the manifest rewrite",
	                  .fault_prefix = "manifests", .check_pins = false, .need_commit = true,
	                  .commit = commit_manifests, .publish = publish_manifests, .arg = &r,
	                  .committed = &r.committed, .snapshot_id = &r.snapshot_id};
	bool blocked;
	if (rc == 0)
		rc = tdb_lake_op_finish(&op, &blocked, err);
	if (rc == 0 && r.committed) {
		lake_health after;
		if (collect_health(r.lake, r.snapshot_id, policy, &after, err) < 0)
			rc = -1;
		else {
			result->manifests_rewritten += manifests_before;
			result->manifests_written += after.manifests;
			tdb_log(tdb_table_label(t), "manifests: operation %s rewrote %" PRId64 " manifests into %" PRId64
			                            " as snapshot %" PRId64,
			        r.op_id, manifests_before, after.manifests, r.snapshot_id);
		}
	} else if (rc < 0 && r.op_id[0] != '\0') {
		tl_error_prefix(err, "manifest rewrite %s", r.op_id);
	}
	tl_ice_table_free(r.lake);
	return rc;
}

/* An interrupted manifest rewrite: adopted when its snapshot landed, else aborted (a failed attempt cleans up). */
static int settle_manifests(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase,
                            json_t *details, tl_error *err)
{
	manifest_run r = {.c = c, .t = t, .snapshot_id = TL_ICE_NO_SNAPSHOT};
	snprintf(r.op_id, sizeof(r.op_id), "%s", op_id);
	r.lake = tdb_lake_open(t, err);
	if (r.lake == NULL)
		return -1;
	const tl_ice_snapshot *snap = tdb_lake_snapshot_of_op(r.lake, op_id);
	int rc = 1;
	if (snap != NULL && tdb_lake_current_snapshot(r.lake) != snap->snapshot_id) {
		rc = tl_error_set(err, TL_ERR_CONFLICT,
		                  "manifest rewrite %s committed snapshot %" PRId64 " but the lake table %s has moved on; "
		                  "an operator must check the table",
		                  op_id, snap->snapshot_id, r.lake->location);
	} else {
		r.committed = snap != NULL;
		r.snapshot_id = snap != NULL ? snap->snapshot_id : TL_ICE_NO_SNAPSHOT;
		if (publish_manifests(&r, err) < 0) {
			tdb_abort_transaction(c);
			rc = -1;
		} else {
			tdb_log(tdb_table_label(t), "manifests: %s interrupted operation %s", r.committed ? "adopted" : "aborted",
			        op_id);
		}
	}
	tl_ice_table_free(r.lake);
	return rc;
}

/* ------------------------------------------------------------ orphan sweep */

typedef struct sweeping {
	int64_t files, bytes;
} sweeping;

static int delete_orphan(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	sweeping *s = arg;
	tl_error e;
	tl_error_clear(&e);
	if (tl_storage_remove(ref->path, &e) < 0 && e.code != TL_ERR_NOT_FOUND)
		return tl_error_set(err, e.code, "deleting the orphan file %s: %s", ref->path, e.message);
	s->files++;
	s->bytes += ref->size;
	if (s->files == 1)
		tdb_fault("orphans-during-delete");
	return 0;
}

/*
 * Deletes files under the table's location that no live metadata
 * references and that are older than orphan_min_age: those of commits a
 * crash interrupted, or of other engines' failed writes. Runs under the
 * lake lock, after settling every interrupted operation, so no operation
 * of ours is writing files it has yet to journal.
 */
static int sweep_orphans(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *policy,
                         tdb_maintenance_result *result, tl_error *err)
{
	tl_ice_table *lake = tdb_lake_open(t, err);
	if (lake == NULL)
		return -1;
	char op_id[37] = "";
	sweeping s = {0};
	int rc = tdb_oplog_begin(c, t->table_id, "maintenance", "deleting", "{\"kind\": \"orphans\"}", op_id, err);
	if (rc == 0)
		rc = tdb_lake_lock(c, t->table_id, true, err);
	if (rc == 0) {
		rc = tl_ice_table_refresh(lake, err);
		if (rc == 0)
			rc = tl_ice_table_orphan_files(lake, now_ms() - policy->orphan_min_age_ms, delete_orphan, &s, err);
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_lake_lock(c, t->table_id, false, &ignored);
	}
	if (op_id[0] != '\0') {
		char counts[96];
		snprintf(counts, sizeof(counts), "{\"files_deleted\": %" PRId64 ", \"bytes_deleted\": %" PRId64 "}", s.files,
		         s.bytes);
		const char *params[] = {op_id, rc == 0 ? "done" : "aborted", counts};
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_pg_exec(c, "journaling the orphan sweep",
		            "UPDATE tierdb.op_log SET phase = $2, details = details || $3::jsonb, updated_at = now()"
		            " WHERE op_id = $1::uuid",
		            3, params, rc == 0 ? err : &ignored);
	}
	result->orphans_deleted += s.files;
	result->orphan_bytes_deleted += s.bytes;
	if (s.files > 0)
		tdb_log(tdb_table_label(t), "orphans: operation %s deleted %" PRId64 " orphan file%s (%" PRId64 " bytes)",
		        op_id, s.files, s.files == 1 ? "" : "s", s.bytes);
	tl_ice_table_free(lake);
	return rc;
}

/* A sweep a crash interrupted deleted only unreferenced files: it is over, the next one finishes the job. */
static int settle_orphans(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase,
                          json_t *details, tl_error *err)
{
	return tdb_oplog_set_phase(c, op_id, "aborted", NULL, err) < 0 ? -1 : 1;
}

/* ------------------------------------------------------------ the step */

/*
 * How often the health is collected when no run happened: walking a
 * snapshot's manifests costs a read of each (a mirror's pump adds some at
 * every batch), too much for every cycle.
 */
#define STATS_EVERY_SECONDS "60"

/*
 * The table's stored policy (JSON), when a `tierdb maintain` request waits
 * its requested_at text, the stats last recorded, and whether they are
 * younger than STATS_EVERY_SECONDS.
 */
static int load_policy_and_request(PGconn *c, int64_t table_id, json_t **stored, char **requested_at,
                                   json_t **last_stats, bool *stats_fresh, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the maintenance policy",
	                             "SELECT t.maintenance_policy::text, r.requested_at::text, s.stats::text,"
	                             " s.collected_at > now() - make_interval(secs => " STATS_EVERY_SECONDS ")"
	                             " FROM tierdb.tables t"
	                             " LEFT JOIN tierdb.maintenance_requests r USING (table_id)"
	                             " LEFT JOIN tierdb.lake_stats s USING (table_id) WHERE t.table_id = $1",
	                             1, params, err);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return tl_error_set(err, TL_ERR_NOT_FOUND, "table %s is no longer registered", id);
	}
	*stored = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
	*requested_at = PQgetisnull(res, 0, 1) ? NULL : strdup(PQgetvalue(res, 0, 1));
	*last_stats = PQgetisnull(res, 0, 2) ? NULL : json_loads(PQgetvalue(res, 0, 2), 0, NULL);
	*stats_fresh = strcmp(PQgetvalue(res, 0, 3), "t") == 0;
	PQclear(res);
	return 0;
}

/*
 * Whether the recorded stats are of an older S than the published one: a
 * tiered table's S moves a few times a cycle at most, so its health follows
 * each fold; a mirror's moves at every batch, so it waits for
 * STATS_EVERY_SECONDS.
 */
static bool stats_stale(const json_t *last_stats, const tdb_catalog_table *t)
{
	json_t *s = json_object_get(last_stats, "snapshot_id");
	return strcmp(t->mode, "tiered") == 0 && t->has_snapshot &&
	       (!json_is_integer(s) || json_integer_value(s) != t->snapshot_id);
}

/* Whether the interval has passed since the last run (stats' last_maintenance.at, epoch milliseconds). */
static bool interval_passed(const json_t *last_stats, const tdb_maintenance_policy *p)
{
	json_t *at = json_object_get(json_object_get(last_stats, "last_maintenance"), "at_ms");
	return !json_is_integer(at) || now_ms() - json_integer_value(at) >= p->interval_ms;
}

int tdb_recover_maintenance(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	int a = tdb_recover_compaction(c, t, err);
	int b = a < 0 ? -1 : tdb_recover_expiry(c, t, err);
	int m = b < 0 ? -1 : tdb_settle_interrupted(c, t, "maintenance", "manifests", settle_manifests, err);
	int o = m < 0 ? -1 : tdb_settle_interrupted(c, t, "maintenance", "orphans", settle_orphans, err);
	return o < 0 ? -1 : a + b + m + o;
}

/* Runs one pass on the table's current catalog row (each pass may move S). */
typedef int (*pass_fn)(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *p, bool requested,
                       const lake_health *h, tdb_maintenance_result *result, tl_error *err);

static int pass_compaction(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *p, bool requested,
                           const lake_health *h, tdb_maintenance_result *result, tl_error *err)
{
	return p->compaction && strcmp(t->mode, "tiered") == 0 ? tdb_compact(c, t, p, requested, result, err) : 0;
}

static int pass_manifests(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *p, bool requested,
                          const lake_health *h, tdb_maintenance_result *result, tl_error *err)
{
	bool due = strcmp(t->mode, "tiered") == 0 && (h->manifests > p->max_manifests || (requested && h->manifests > 2));
	return p->manifest_rewrite && due && t->has_snapshot ? rewrite_manifests(c, t, p, h->manifests, result, err) : 0;
}

static int pass_expiry(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *p, bool requested,
                       const lake_health *h, tdb_maintenance_result *result, tl_error *err)
{
	return p->expiry ? tdb_expire_snapshots(c, t, p, result, err) : 0;
}

static int pass_orphans(PGconn *c, const tdb_catalog_table *t, const tdb_maintenance_policy *p, bool requested,
                        const lake_health *h, tdb_maintenance_result *result, tl_error *err)
{
	return p->orphan_sweep ? sweep_orphans(c, t, p, result, err) : 0;
}

static const struct {
	const char *name;
	pass_fn run;
} passes[] = {
	{"compaction", pass_compaction},
	{"manifest rewrite", pass_manifests},
	{"snapshot expiry", pass_expiry},
	{"orphan sweep", pass_orphans},
};

static json_t *result_json(const tdb_maintenance_result *r, bool requested, const char *error)
{
	json_t *j = json_pack("{s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "at_ms",
	                      (json_int_t)now_ms(), "requested", requested, "files_rewritten",
	                      (json_int_t)r->files_rewritten, "files_written", (json_int_t)r->files_written,
	                      "delete_files_removed", (json_int_t)r->delete_files_removed, "bytes_rewritten",
	                      (json_int_t)r->bytes_rewritten, "rows_written", (json_int_t)r->rows_written,
	                      "manifests_rewritten", (json_int_t)r->manifests_rewritten, "manifests_written",
	                      (json_int_t)r->manifests_written, "snapshots_expired", (json_int_t)r->snapshots_expired,
	                      "files_deleted", (json_int_t)r->files_deleted, "bytes_deleted", (json_int_t)r->bytes_deleted,
	                      "orphans_deleted", (json_int_t)r->orphans_deleted, "orphan_bytes_deleted",
	                      (json_int_t)r->orphan_bytes_deleted);
	json_object_set_new(j, "error", error != NULL ? json_string(error) : json_null());
	return j;
}

/* Runs the passes; 0 even when one failed (its error is in *error, the later passes still run). */
static void run_passes(PGconn *c, int64_t table_id, const tdb_maintenance_policy *p, bool requested,
                       tdb_maintenance_result *result, char **error)
{
	for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]) && !tdb_daemon_stopping(); i++) {
		tl_error err;
		tl_error_clear(&err);
		tdb_catalog_table t;
		memset(&t, 0, sizeof(t));
		int found = tdb_catalog_load_table_by_id(c, table_id, &t, &err);
		lake_health h;
		memset(&h, 0, sizeof(h));
		int rc = found;
		if (found > 0) {
			tl_ice_table *lake = tdb_lake_open(&t, &err);
			rc = lake == NULL ? -1
			                  : collect_health(lake, t.has_snapshot ? t.snapshot_id : TL_ICE_NO_SNAPSHOT, p, &h, &err);
			tl_ice_table_free(lake);
			if (rc == 0)
				rc = passes[i].run(c, &t, p, requested, &h, result, &err);
		}
		if (rc < 0) {
			tdb_abort_transaction(c);
			tdb_log(t.schema_name ? tdb_table_label(&t) : NULL, "maintenance: %s failed: %s", passes[i].name,
			        err.message);
			if (*error == NULL) {
				size_t n = strlen(passes[i].name) + strlen(err.message) + 3;
				*error = malloc(n);
				snprintf(*error, n, "%s: %s", passes[i].name, err.message);
			}
		}
		if (found > 0)
			tdb_catalog_table_free(&t);
		if (found <= 0)
			return;
	}
}

int tdb_maintain(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	if (strcmp(t->mode, "mirrored") == 0 && t->copying)
		return 0;
	int settled = tdb_recover_maintenance(c, t, err);
	if (settled != 0)
		return settled < 0 ? -1 : 0; /* the catalog row is stale now: next cycle */
	json_t *stored = NULL, *last_stats = NULL;
	char *requested_at = NULL;
	bool stats_fresh = false;
	if (load_policy_and_request(c, t->table_id, &stored, &requested_at, &last_stats, &stats_fresh, err) < 0)
		return -1;
	tdb_maintenance_policy policy;
	int rc = tdb_maintenance_policy_resolve(stored, true, &policy, err);
	bool requested = requested_at != NULL;
	json_t *last = NULL;
	if (rc == 0 && (requested || interval_passed(last_stats, &policy))) {
		char *op_id = NULL, *phase = NULL;
		int unfinished = tdb_oplog_unfinished(c, t->table_id, &op_id, &phase, err);
		if (unfinished < 0) {
			rc = -1;
		} else if (unfinished > 0) {
			tdb_log(tdb_table_label(t), "maintenance waits: operation %s stopped in phase '%s'", op_id, phase);
		} else {
			tdb_maintenance_result result;
			memset(&result, 0, sizeof(result));
			char *error = NULL;
			run_passes(c, t->table_id, &policy, requested, &result, &error);
			last = result_json(&result, requested, error);
			free(error);
		}
		free(op_id);
		free(phase);
	}
	/* The health after the passes, from the S they left. */
	tdb_catalog_table fresh;
	memset(&fresh, 0, sizeof(fresh));
	int found = rc < 0                                                  ? -1
	            : last == NULL && stats_fresh && !stats_stale(last_stats, t) ? 0
	                                                                   : tdb_catalog_load_table_by_id(c, t->table_id, &fresh, err);
	if (found > 0) {
		tl_ice_table *lake = tdb_lake_open(&fresh, err);
		lake_health h;
		rc = lake == NULL ? -1
		                  : collect_health(lake, fresh.has_snapshot ? fresh.snapshot_id : TL_ICE_NO_SNAPSHOT, &policy,
		                                   &h, err);
		if (rc == 0) {
			json_t *stats = health_json(&h, fresh.has_snapshot ? fresh.snapshot_id : TL_ICE_NO_SNAPSHOT);
			json_t *warnings = health_warnings(&h, &policy);
			json_t *described = tdb_maintenance_policy_describe(stored, true);
			rc = record_stats(c, &fresh, stats, last, warnings, described, err);
			for (size_t i = 0; rc == 0 && last != NULL && i < json_array_size(warnings); i++)
				tdb_log(tdb_table_label(t), "lake health: %s (%s)",
				        json_string_value(json_object_get(json_array_get(warnings, i), "kind")),
				        json_string_value(json_object_get(json_array_get(warnings, i), "advice")));
			json_decref(stats);
			json_decref(warnings);
			json_decref(described);
		}
		tl_ice_table_free(lake);
		tdb_catalog_table_free(&fresh);
	} else if (found == 0) {
		rc = 0;
	}
	/* A request is answered once its run is recorded (a newer request made meanwhile stays). */
	if (rc == 0 && requested && last != NULL) {
		char id[24];
		tdb_int_text(t->table_id, id);
		const char *params[] = {id, requested_at};
		rc = tdb_pg_exec(c, "answering the maintenance request",
		                 "DELETE FROM tierdb.maintenance_requests WHERE table_id = $1 AND requested_at = $2::timestamptz",
		                 2, params, err);
	}
	json_decref(last);
	json_decref(stored);
	json_decref(last_stats);
	free(requested_at);
	return rc;
}
