/*
 * retention.c: expiring lake rows below the retention line R by metadata
 * (SPEC §2, §8; see retention.h for the rule and the alignment).
 *
 * One retention run of one table, the lake-operation sequence tiering and
 * the fold use (lock -> commit -> fault point -> phase -> publish -> unlock):
 *
 *   1. R' = align_down(min(max(tier_key) - N, T)); nothing to do unless R'
 *      lies above the published R; an unexpired read pin postpones the run;
 *   2. plan the lake at the published S and choose every live data file
 *      whose tier-key upper bound is below R', first moving R' down to the
 *      lower bound of any file that straddles it (choose_files), so that no
 *      row below R' stays readable; files without that statistic stay;
 *   3. journal the run (op_log 'retention', phase 'committing', details:
 *      the S it builds on, the old and new R, the files it removes);
 *   4. under the table's lake lock, recheck the pins and commit one DELETE
 *      snapshot removing those files, stamped with the op id (phase
 *      'committed'); no data file is written or rewritten;
 *   5. one transaction: S and lake_props advance (guarded on the old S),
 *      retention_line becomes R' (guarded on the old R, so it only moves
 *      up), the delta rows below R' leave, phase 'done'.
 *
 * Delta rows and R': an upsert below R' whose lake row lived at or above
 * R' (a correction that moved the row's tier key down) becomes a tombstone
 * at the old location: its new image is expired with the range, but the
 * old row must stay deleted. Every other delta row below R' goes.
 *
 * Delete files are left in place: an equality delete of an unpartitioned
 * spec applies to every partition, and keeping them is never wrong (they
 * match nothing once their data files are gone); lake maintenance may
 * rewrite them later. Removed files stay on storage for the snapshots that
 * reference them until snapshot expiry (maintenance) removes them: a reader
 * pinned at an older S keeps reading its view.
 *
 * A run a crash interrupted is settled on the lake's word by
 * tdb_recover_retention: a snapshot stamped with its op id is adopted
 * (published as in step 5), none means nothing reached readers and the run
 * is marked aborted (it wrote no data file; the manifests of a commit that
 * never landed are orphans for maintenance).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "daemon.h"
#include "fault.h"
#include "lake_catalog.h"
#include "lakestep.h"
#include "pg.h"
#include "retention.h"
#include "tiering.h"
#include "tierlake/calendar.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"

#define USEC_PER_HOUR INT64_C(3600000000)
#define USEC_PER_DAY INT64_C(86400000000)

/* One retention run of one table. */
typedef struct retention_run {
	PGconn *c;
	const tdb_catalog_table *t;
	const char *label;
	char op_id[37];
	tl_ice_table *lake;
	bool has_base;          /* the S the run builds on (NULL before the first commit) */
	int64_t base_snapshot;
	bool has_old_line;      /* the R it replaces */
	int64_t old_line;
	int64_t new_line;
	json_t *files;          /* the data files it removes (paths) */
	int64_t rows;           /* their record counts, for the log */
	int64_t snapshot_id;
	bool committed;
} retention_run;

/* ------------------------------------------------------------ the line */

int64_t tdb_retention_align(tdb_key_type type, const char *transform, int64_t v)
{
	if (transform == NULL)
		return v;
	if (strncmp(transform, "truncate[", 9) == 0) {
		int64_t width = strtoll(transform + 9, NULL, 10);
		return width > 0 ? tl_floor_div(v, width, NULL) * width : v;
	}
	bool date = type == TDB_KEY_DATE;
	bool temporal = date || tdb_key_type_is_timestamp(type);
	if (!temporal)
		return v;
	if (strcmp(transform, "hour") == 0)
		return date ? v : tl_floor_div(v, USEC_PER_HOUR, NULL) * USEC_PER_HOUR;
	int64_t days = date ? v : tl_floor_div(v, USEC_PER_DAY, NULL);
	if (strcmp(transform, "month") == 0 || strcmp(transform, "year") == 0) {
		int64_t year;
		int month, day;
		tl_civil_from_days(days, &year, &month, &day);
		days = tl_days_from_civil(year, strcmp(transform, "year") == 0 ? 1 : month, 1);
	} else if (strcmp(transform, "day") != 0) {
		return v; /* identity or void: any value is a boundary */
	}
	return date ? days : days * USEC_PER_DAY;
}

/* partition_scheme's "lake_transform", malloc'd, or NULL. */
static char *lake_transform(const tdb_catalog_table *t)
{
	json_t *scheme = json_loads(t->partition_scheme ? t->partition_scheme : "{}", 0, NULL);
	const char *s = json_string_value(json_object_get(scheme, "lake_transform"));
	char *out = s != NULL ? tl_strdup(s) : NULL;
	json_decref(scheme);
	return out;
}

/*
 * The line the table's lag asks for now; *any is false when there is none
 * (no lag, an empty heap, or a line that would not rise above R).
 */
static int wanted_line(PGconn *c, const tdb_catalog_table *t, bool *any, int64_t *line, tl_error *err)
{
	*any = false;
	if (!t->has_lake_retention)
		return 0;
	bool has;
	int64_t max_key;
	if (tdb_heap_max_key(c, t, &has, &max_key, err) < 0)
		return -1;
	if (!has || __builtin_sub_overflow(max_key, t->lake_retention_lag, line))
		return 0;
	/* The lake holds only rows below T: the line never passes it. */
	if (*line > t->cutline_t)
		*line = t->cutline_t;
	char *transform = lake_transform(t);
	*line = tdb_retention_align(t->tier_key_type, transform, *line);
	free(transform);
	*any = !t->has_retention_line || *line > t->retention_line;
	return 0;
}

/* ------------------------------------------------------------ choosing files */

/* A single-value binary int or long (iceberg_value.h) as int64; false for other widths. */
static bool bound_value(tl_bytes b, int64_t *out)
{
	if (b.len == 4) {
		uint32_t u = (uint32_t)b.ptr[0] | (uint32_t)b.ptr[1] << 8 | (uint32_t)b.ptr[2] << 16 |
		             (uint32_t)b.ptr[3] << 24;
		*out = (int32_t)u;
		return true;
	}
	if (b.len == 8) {
		uint64_t u = 0;
		for (int i = 7; i >= 0; i--)
			u = u << 8 | b.ptr[i];
		*out = (int64_t)u;
		return true;
	}
	return false;
}

/* The file's bound of field `id` in `bounds`; false when it has none. */
static bool file_bound(const tl_ice_bytes_map *bounds, int32_t id, int64_t *out)
{
	for (uint32_t i = 0; i < bounds->n; i++)
		if (bounds->keys[i] == id)
			return bound_value(bounds->values[i], out);
	return false;
}

/* A live data file's tier-key range, from its column statistics. */
typedef struct file_range {
	const char *path;
	int64_t lo, hi, rows;
} file_range;

/*
 * Chooses the live data files at S to remove and settles the line: a file
 * that straddles the line (its rows on both sides: an unpartitioned lake,
 * or files another engine wrote across partitions) would keep rows below R
 * readable, so the line moves down to that file's lower bound, until no
 * file straddles it; every file wholly below the line goes. With the line
 * aligned to the lake's partitions and TierDB's one file per partition per
 * commit, nothing straddles and the line stays where the lag put it. A file
 * without tier-key statistics stays and does not move the line (written by
 * another engine; docs/retention.md).
 */
static int choose_files(retention_run *r, tl_error *err)
{
	r->files = json_array();
	if (!r->has_base)
		return 0;
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(r->lake->metadata);
	const tl_ice_field *key = tl_ice_schema_find_name(schema, r->t->tier_key_col);
	if (key == NULL)
		return tl_error_set(err, TL_ERR_INVALID, "the lake table %s has no field \"%s\" (the tier key of %s)",
		                    r->lake->location, r->t->tier_key_col, r->label);
	tl_ice_scan *scan = tl_ice_scan_plan(r->lake->metadata, r->base_snapshot, NULL, err);
	if (scan == NULL)
		return -1;
	int n = tl_ice_scan_ntasks(scan);
	file_range *ranges = tl_calloc((size_t)n + 1, sizeof(file_range));
	int nranges = 0;
	for (int i = 0; i < n; i++) {
		const tl_ice_data_file *f = &tl_ice_scan_task_at(scan, i)->file;
		file_range *fr = &ranges[nranges];
		if (file_bound(&f->lower_bounds, key->id, &fr->lo) && file_bound(&f->upper_bounds, key->id, &fr->hi)) {
			fr->path = f->file_path;
			fr->rows = f->record_count;
			nranges++;
		}
	}
	for (bool moved = true; moved;) {
		moved = false;
		for (int i = 0; i < nranges; i++)
			if (ranges[i].lo < r->new_line && ranges[i].hi >= r->new_line) {
				r->new_line = ranges[i].lo;
				moved = true;
			}
	}
	for (int i = 0; i < nranges; i++)
		if (ranges[i].hi < r->new_line) {
			json_array_append_new(r->files, json_string(ranges[i].path));
			r->rows += ranges[i].rows;
		}
	free(ranges);
	tl_ice_scan_free(scan);
	return 0;
}

/* ------------------------------------------------------------ commit and publish */

/*
 * Commits the removal as one DELETE snapshot stamped with the op id. A
 * failed commit that landed anyway is found by its op id after a reread.
 */
static int commit_removal(retention_run *r, tl_error *err)
{
	if (tl_ice_table_refresh(r->lake, err) < 0 ||
	    tdb_lake_check_published(r->lake, r->has_base ? r->base_snapshot : TL_ICE_NO_SNAPSHOT, "retention", err) < 0)
		return -1;
	tl_ice_commit *commit = tl_ice_commit_begin(r->lake, TL_ICE_OP_DELETE, err);
	if (commit == NULL)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < json_array_size(r->files) && rc == 0; i++)
		rc = tl_ice_commit_remove_file(commit, json_string_value(json_array_get(r->files, i)), err);
	tl_ice_commit_set_summary(commit, "tierdb.op-id", r->op_id);
	if (rc == 0)
		rc = tl_ice_commit_finish(commit, &r->snapshot_id, err);
	tl_ice_commit_free(commit);
	if (rc == 0) {
		r->committed = true;
		return 0;
	}
	int landed = tdb_lake_commit_landed(r->lake, r->op_id, &r->snapshot_id);
	if (landed == 0)
		return -1;
	/* Landed, or unknown: the run is not marked aborted; recovery decides on the lake's word. */
	r->committed = true;
	return landed > 0 ? 0 : -1;
}

/*
 * One transaction: S (when a snapshot was committed), R and the delta
 * rows below R. Guarded on the old S and the old R: a run that lost a race
 * publishes nothing.
 */
static int publish(retention_run *r, tl_error *err)
{
	char id[24], line[24], old_line[24];
	tdb_int_text(r->t->table_id, id);
	tdb_int_text(r->new_line, line);
	tdb_int_text(r->old_line, old_line);
	if (tdb_publish_snapshot_begin(r->c, r->label, r->t->table_id, "retention", r->op_id, r->committed,
	                               r->has_base ? r->base_snapshot : TL_ICE_NO_SNAPSHOT, r->snapshot_id, r->lake,
	                               err) < 0)
		return -1;
	const char *params[] = {id, line, r->has_old_line ? old_line : NULL};
	PGresult *res = tdb_pg_query(r->c, "advancing the retention line",
	                             "UPDATE tierdb.cutline SET retention_line = $2::bigint, updated_at = now()"
	                             " WHERE table_id = $1 AND retention_line IS NOT DISTINCT FROM $3::bigint"
	                             " AND ($3::bigint IS NULL OR $3::bigint < $2::bigint) RETURNING table_id",
	                             3, params, err);
	if (res == NULL)
		return -1;
	bool moved = PQntuples(res) == 1;
	PQclear(res);
	if (!moved)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "the retention line of %s moved during operation %s; it awaits recovery", r->label,
		                    r->op_id);
	if (tdb_pg_exec(r->c, "turning corrections moved below the retention line into tombstones",
	                "UPDATE tierdb.delta SET op = 1, tier_key = old_tier_key, old_tier_key = NULL, payload = NULL,"
	                " version = nextval('tierdb.delta_version'), updated_at = now()"
	                " WHERE table_id = $1 AND tier_key < $2::bigint AND old_tier_key >= $2::bigint",
	                2, params, err) < 0 ||
	    tdb_pg_exec(r->c, "clearing the delta rows below the retention line",
	                "DELETE FROM tierdb.delta WHERE table_id = $1 AND tier_key < $2::bigint", 2, params, err) < 0 ||
	    tdb_oplog_set_phase(r->c, r->op_id, "done", r->committed ? &r->snapshot_id : NULL, err) < 0)
		return -1;
	tdb_fault("retention-before-publish-commit");
	return tdb_pg_exec(r->c, "committing the retention line", "COMMIT", 0, NULL, err);
}

static int commit_step(void *arg, tl_error *err)
{
	return commit_removal(arg, err);
}

static int publish_step(void *arg, tl_error *err)
{
	return publish(arg, err);
}

/* Steps 4 and 5 under the lake lock (tdb_lake_op_finish). */
static int commit_and_publish(retention_run *r, bool *blocked, tl_error *err)
{
	tdb_lake_op op = {.c = r->c, .table_id = r->t->table_id, .op_id = r->op_id, .step = "retention",
	                  .fault_prefix = "retention", .check_pins = true, .need_commit = json_array_size(r->files) > 0,
	                  .commit = commit_step, .publish = publish_step, .arg = r, .committed = &r->committed,
	                  .snapshot_id = &r->snapshot_id};
	return tdb_lake_op_finish(&op, blocked, err);
}

static char *run_details(const retention_run *r)
{
	json_t *d = json_pack("{s:s, s:I, s:O, s:I}", "kind", "retention", "retention_line", (json_int_t)r->new_line,
	                      "files", r->files, "rows", (json_int_t)r->rows);
	json_object_set_new(d, "old_retention_line", r->has_old_line ? json_integer(r->old_line) : json_null());
	json_object_set_new(d, "base_snapshot", r->has_base ? json_integer(r->base_snapshot) : json_null());
	char *text = json_dumps(d, JSON_COMPACT);
	json_decref(d);
	return text;
}

static void mark_aborted(retention_run *r)
{
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_abort_transaction(r->c);
	if (tdb_oplog_set_phase(r->c, r->op_id, "aborted", NULL, &ignored) < 0)
		tdb_log(r->label, "retention: could not mark operation %s aborted: %s", r->op_id, ignored.message);
}

/* ------------------------------------------------------------ recovery */

/* Settles one interrupted run under the lake lock: 1 settled, 0 waits for pins, -1 error. */
static int recover_run(retention_run *r, const char *phase, json_t *details, tl_error *err)
{
	json_t *base = json_object_get(details, "base_snapshot");
	json_t *line = json_object_get(details, "retention_line");
	json_t *old_line = json_object_get(details, "old_retention_line");
	if (!json_is_integer(line))
		return tl_error_set(err, TL_ERR_CORRUPT, "the journal of retention run %s lacks its retention line",
		                    r->op_id);
	r->has_base = json_is_integer(base);
	r->base_snapshot = r->has_base ? json_integer_value(base) : 0;
	r->new_line = json_integer_value(line);
	r->has_old_line = json_is_integer(old_line);
	r->old_line = r->has_old_line ? json_integer_value(old_line) : 0;
	r->lake = tdb_lake_open(r->t, err);
	if (r->lake == NULL)
		return -1;
	const tl_ice_snapshot *snap = tdb_lake_snapshot_of_op(r->lake, r->op_id);
	if (snap == NULL) {
		if (strcmp(phase, "committed") == 0)
			return tl_error_set(err, TL_ERR_CONFLICT,
			                    "retention run %s is journaled as committed but the lake table %s has no "
			                    "snapshot stamped with it; an operator must check the table",
			                    r->op_id, r->lake->location);
		if (tdb_oplog_set_phase(r->c, r->op_id, "aborted", NULL, err) < 0)
			return -1;
		tdb_log(r->label, "retention: interrupted operation %s never reached the lake; rolled back", r->op_id);
		return 1;
	}
	if (tdb_lake_current_snapshot(r->lake) != snap->snapshot_id)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "retention run %s committed snapshot %" PRId64 " but the lake table %s has moved on "
		                    "to %" PRId64 "; an operator must check the table",
		                    r->op_id, snap->snapshot_id, r->lake->location, tdb_lake_current_snapshot(r->lake));
	int64_t pins;
	if (tdb_live_pins(r->c, r->t->table_id, &pins, err) < 0)
		return -1;
	if (pins > 0) {
		tdb_log(r->label, "retention: adopting interrupted operation %s waits for %" PRId64 " unexpired read pin%s",
		        r->op_id, pins, pins == 1 ? "" : "s");
		return 0;
	}
	r->committed = true;
	r->snapshot_id = snap->snapshot_id;
	if (publish(r, err) < 0) {
		tdb_abort_transaction(r->c);
		return -1;
	}
	tdb_log(r->label, "retention: adopted interrupted operation %s (snapshot %" PRId64 ")", r->op_id,
	        r->snapshot_id);
	return 1;
}

/* tdb_settle_interrupted's callback: one interrupted run, with its own state. */
static int settle_run(PGconn *c, const tdb_catalog_table *t, const char *op_id, const char *phase, json_t *details,
                      tl_error *err)
{
	retention_run r;
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.t = t;
	r.label = tdb_table_label(t);
	snprintf(r.op_id, sizeof(r.op_id), "%s", op_id);
	int rc = recover_run(&r, phase, details, err);
	tl_ice_table_free(r.lake);
	return rc;
}

int tdb_recover_retention(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	return tdb_settle_interrupted(c, t, "retention", NULL, settle_run, err);
}

/* ------------------------------------------------------------ a run */

static int run_retention(retention_run *r, tl_error *err)
{
	r->lake = tdb_lake_open(r->t, err);
	if (r->lake == NULL ||
	    tdb_lake_check_published(r->lake, r->has_base ? r->base_snapshot : TL_ICE_NO_SNAPSHOT, "retention", err) < 0 ||
	    choose_files(r, err) < 0)
		return -1;
	if (r->has_old_line && r->new_line <= r->old_line) {
		tdb_log(r->label, "retention: a lake file straddles every line above the retention line; nothing expires "
		                  "until one of them lies wholly below the line the lag asks for");
		return 0;
	}
	char *details = run_details(r);
	int rc = tdb_oplog_begin(r->c, r->t->table_id, "retention", "committing", details, r->op_id, err);
	free(details);
	if (rc < 0)
		return -1;
	bool blocked;
	if (commit_and_publish(r, &blocked, err) < 0) {
		if (!r->committed)
			mark_aborted(r);
		if (blocked) {
			tdb_log(r->label, "retention: operation %s aborted: %s; retrying next cycle", r->op_id, err->message);
			tl_error_clear(err);
			return 0;
		}
		return -1;
	}
	tl_buf line;
	tl_buf_init(&line);
	if (tdb_key_literal(r->c, r->t->tier_key_type, r->new_line, &line, err) < 0) {
		tl_buf_free(&line);
		return -1;
	}
	size_t nfiles = json_array_size(r->files);
	if (r->committed)
		tdb_log(r->label,
		        "retention: operation %s expired %zu data file%s (%" PRId64 " rows) below the retention line %s as "
		        "snapshot %" PRId64,
		        r->op_id, nfiles, nfiles == 1 ? "" : "s", r->rows, tdb_buf_cstr(&line), r->snapshot_id);
	else
		tdb_log(r->label, "retention: operation %s moved the retention line to %s (no whole lake file below it)",
		        r->op_id, tdb_buf_cstr(&line));
	tl_buf_free(&line);
	return 0;
}

int tdb_retention(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	int settled = tdb_recover_retention(c, t, err);
	if (settled != 0)
		return settled < 0 ? -1 : 0; /* the catalog row is stale now: next cycle */
	bool any;
	int64_t line;
	if (wanted_line(c, t, &any, &line, err) < 0)
		return -1;
	if (!any)
		return 0;
	char *op_id = NULL, *phase = NULL;
	int unfinished = tdb_oplog_unfinished(c, t->table_id, &op_id, &phase, err);
	if (unfinished < 0)
		return -1;
	if (unfinished > 0) {
		tl_error_set(err, TL_ERR_CONFLICT, "operation %s stopped in phase '%s'; retention waits until it is recovered",
		             op_id, phase);
		free(op_id);
		free(phase);
		return -1;
	}
	retention_run r;
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.t = t;
	r.label = tdb_table_label(t);
	r.has_base = t->has_snapshot;
	r.base_snapshot = t->snapshot_id;
	r.has_old_line = t->has_retention_line;
	r.old_line = t->retention_line;
	r.new_line = line;
	int64_t pins;
	if (tdb_live_pins(c, t->table_id, &pins, err) < 0)
		return -1;
	if (pins > 0) {
		tdb_log(r.label, "retention: advancing the retention line waits for %" PRId64 " unexpired read pin%s; "
		                 "retrying next cycle",
		        pins, pins == 1 ? "" : "s");
		return 0;
	}
	int rc = run_retention(&r, err);
	if (rc < 0 && r.op_id[0] != '\0')
		tl_error_prefix(err, "operation %s", r.op_id);
	tdb_abort_transaction(c);
	json_decref(r.files);
	tl_ice_table_free(r.lake);
	return rc;
}
