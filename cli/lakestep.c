/*
 * lakestep.c: helpers shared by the daemon steps that write the lake; see
 * lakestep.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "fault.h"
#include "lakestep.h"
#include "maintenance_policy.h"
#include "pg.h"
#include "pgcopy.h"
#include "tiering.h"
#include "tierlake/storage.h"

/* Stops a COPY that failed on our side: cancel it on the server and read to its end. */
static void abandon_copy(PGconn *c)
{
	PGcancel *cancel = PQgetCancel(c);
	if (cancel != NULL) {
		char ignored[256];
		PQcancel(cancel, ignored, sizeof(ignored));
		PQfreeCancel(cancel);
	}
	char *buf;
	while (PQgetCopyData(c, &buf, 0) > 0)
		PQfreemem(buf);
	PGresult *res;
	while ((res = PQgetResult(c)) != NULL)
		PQclear(res);
}

/* Hands a full batch to the sink and empties it. */
static int flush_batch(tl_pq_batch *batch, tdb_batch_sink sink, void *arg, tl_error *err)
{
	if (batch->nrows == 0)
		return 0;
	if (sink(arg, batch, err) < 0)
		return -1;
	batch->nrows = 0;
	tl_arena_reset(&batch->arena);
	return 0;
}

/* Reads every CopyData message through the decoder into the sink. */
static int stream_messages(PGconn *c, tdb_copy_decoder *d, tl_pq_batch *batch, tdb_progress *progress,
                           tdb_batch_sink sink, void *arg, tl_error *err)
{
	for (;;) {
		char *buf;
		int len = PQgetCopyData(c, &buf, 0);
		if (len == -1)
			return 0;
		if (len < 0)
			return tl_error_set(err, TL_ERR_IO, "%s", PQerrorMessage(c));
		int rows = tdb_copy_decoder_feed(d, buf, (size_t)len, batch, err);
		PQfreemem(buf);
		if (rows < 0)
			return -1;
		if (progress != NULL)
			tdb_progress_add(progress, rows, len);
		if (batch->nrows >= batch->capacity && flush_batch(batch, sink, arg, err) < 0)
			return -1;
	}
}

/* The COPY's final result must be success. */
static int finish_copy(PGconn *c, tl_error *err)
{
	int rc = 0;
	PGresult *res;
	while ((res = PQgetResult(c)) != NULL) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
			rc = tl_error_set(err, TL_ERR_IO, "%s", PQresultErrorMessage(res));
		PQclear(res);
	}
	return rc;
}

int tdb_copy_batches(PGconn *c, const char *copy_sql, const char *what, const tdb_pg_column *cols, int ncols,
                     tl_pq_batch *batch, tdb_progress *progress, tdb_batch_sink sink, void *arg, tl_error *err)
{
	PGresult *res = PQexec(c, copy_sql);
	if (PQresultStatus(res) != PGRES_COPY_OUT) {
		tl_error_set(err, TL_ERR_IO, "%s: %s", what, PQresultErrorMessage(res));
		PQclear(res);
		return -1;
	}
	PQclear(res);
	tdb_copy_decoder *d = tdb_copy_decoder_new(cols, ncols, err);
	int rc = d != NULL ? stream_messages(c, d, batch, progress, sink, arg, err) : -1;
	if (rc < 0)
		abandon_copy(c);
	else
		rc = finish_copy(c, err);
	if (rc == 0)
		rc = tdb_copy_decoder_finish(d, err);
	if (rc == 0)
		rc = flush_batch(batch, sink, arg, err);
	tdb_copy_decoder_free(d);
	if (rc < 0)
		tl_error_prefix(err, "%s", what);
	return rc;
}

/* tdb_copy_into_writer's sink: the writer takes the batch, the digest counts it. */
typedef struct writer_sink {
	tl_ice_writer *w;
	tdb_digest *digest;
	void (*after_flush)(void);
} writer_sink;

static int write_batch(void *arg, tl_pq_batch *batch, tl_error *err)
{
	writer_sink *s = arg;
	if (s->digest != NULL)
		tdb_digest_add_batch(s->digest, tl_ice_writer_schema(s->w), batch);
	if (tl_ice_writer_write(s->w, batch, err) < 0)
		return -1;
	if (s->after_flush != NULL)
		s->after_flush();
	return 0;
}

int tdb_copy_into_writer(PGconn *c, const char *copy_sql, const char *what, const tdb_pg_column *cols, int ncols,
                         tl_ice_writer *w, tl_pq_batch *batch, tdb_progress *progress, tdb_digest *digest,
                         void (*after_flush)(void), tl_error *err)
{
	writer_sink sink = {w, digest, after_flush};
	return tdb_copy_batches(c, copy_sql, what, cols, ncols, batch, progress, write_batch, &sink, err);
}

void tdb_int_text(int64_t v, char out[24])
{
	snprintf(out, 24, "%" PRId64, v);
}

int tdb_lake_lock(PGconn *c, int64_t table_id, bool lock, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id};
	const char *sql = lock ? "SELECT pg_advisory_lock(hashtextextended('tierdb_lake_' || $1::text, 0))"
	                       : "SELECT pg_advisory_unlock(hashtextextended('tierdb_lake_' || $1::text, 0))";
	PGresult *res = tdb_pg_query(c, lock ? "taking the table's lake lock" : "releasing the table's lake lock", sql,
	                             1, params, err);
	if (res == NULL)
		return -1;
	PQclear(res);
	return 0;
}

const tl_ice_snapshot *tdb_lake_snapshot_of_op(const tl_ice_table *lake, const char *op_id)
{
	for (int i = 0; i < lake->metadata->nsnapshots; i++) {
		const char *stamped = tl_ice_snapshot_summary(&lake->metadata->snapshots[i], "tierdb.op-id");
		if (stamped != NULL && strcmp(stamped, op_id) == 0)
			return &lake->metadata->snapshots[i];
	}
	return NULL;
}

int64_t tdb_lake_current_snapshot(const tl_ice_table *lake)
{
	const tl_ice_snapshot *s = tl_ice_metadata_current_snapshot(lake->metadata);
	return s ? s->snapshot_id : TL_ICE_NO_SNAPSHOT;
}

int tdb_lake_check_published(const tl_ice_table *lake, int64_t published, const char *step, tl_error *err)
{
	int64_t current = tdb_lake_current_snapshot(lake);
	if (current == published)
		return 0;
	return tl_error_set(err, TL_ERR_CONFLICT,
	                    "the lake table %s is at snapshot %" PRId64 " but the cut-line publishes %" PRId64
	                    "; an interrupted operation must be recovered before %s continues",
	                    lake->location, current, published, step);
}

char *tdb_lake_metadata_location(const tl_ice_table *lake)
{
	const char *slash = strrchr(lake->metadata_file, '/');
	tl_buf b;
	tl_buf_init(&b);
	tl_buf_printf(&b, "%s/metadata/%s%c", lake->location, slash ? slash + 1 : lake->metadata_file, '\0');
	return (char *)b.data;
}

int tdb_cutline_publish(PGconn *c, int64_t table_id, bool move_t, int64_t old_t, int64_t new_t, int64_t old_s,
                        int64_t new_s, const tl_ice_table *lake, bool *published, tl_error *err)
{
	char id[24], old_t_text[24], new_t_text[24], old_s_text[24], new_s_text[24];
	tdb_int_text(table_id, id);
	tdb_int_text(old_t, old_t_text);
	tdb_int_text(new_t, new_t_text);
	tdb_int_text(old_s, old_s_text);
	tdb_int_text(new_s, new_s_text);
	char *location = tdb_lake_metadata_location(lake);
	const char *params[] = {id,
	                        move_t ? new_t_text : NULL,
	                        new_s_text,
	                        location,
	                        move_t ? old_t_text : NULL,
	                        old_s == TL_ICE_NO_SNAPSHOT ? NULL : old_s_text};
	PGresult *res = tdb_pg_query(c, "advancing the cut-line",
	                             "UPDATE tierdb.cutline SET tier_key_hi = coalesce($2::bigint, tier_key_hi),"
	                             " lake_snapshot_id = $3,"
	                             " lake_props = lake_props || jsonb_build_object('metadata_location', $4::text,"
	                             " 'snapshot_id', $3::bigint), updated_at = now()"
	                             " WHERE table_id = $1 AND ($5::bigint IS NULL OR tier_key_hi = $5::bigint)"
	                             " AND lake_snapshot_id IS NOT DISTINCT FROM $6::bigint RETURNING table_id",
	                             6, params, err);
	free(location);
	if (res == NULL)
		return -1;
	*published = PQntuples(res) == 1;
	PQclear(res);
	return 0;
}

void tdb_lake_remove_files(const tl_ice_writer *w, const char *label, const char *step)
{
	for (int i = 0; i < tl_ice_writer_nfiles(w); i++) {
		tl_error ignored;
		tl_error_clear(&ignored);
		const char *path = tl_ice_writer_file(w, i)->file_path;
		if (tl_storage_remove(path, &ignored) < 0 && ignored.code != TL_ERR_NOT_FOUND)
			tdb_log(label, "%s: could not remove the unused file %s: %s", step, path, ignored.message);
	}
}

int tdb_oplog_record_files(PGconn *c, const char *op_id, const tl_ice_writer *const *writers, int nwriters,
                           const json_t *extra, tl_error *err)
{
	json_t *patch = extra != NULL ? json_deep_copy(extra) : json_object();
	json_t *files = json_array();
	for (int k = 0; k < nwriters; k++)
		for (int i = 0; i < tl_ice_writer_nfiles(writers[k]); i++)
			json_array_append_new(files, json_string(tl_ice_writer_file(writers[k], i)->file_path));
	json_object_set_new(patch, "files", files);
	char *text = json_dumps(patch, JSON_COMPACT);
	json_decref(patch);
	const char *params[] = {op_id, text};
	PGresult *res = tdb_pg_query(c, "journaling the operation's files",
	                             "UPDATE tierdb.op_log SET details = details || $2::jsonb,"
	                             " updated_at = now() WHERE op_id = $1::uuid RETURNING op_id",
	                             2, params, err);
	free(text);
	if (res == NULL)
		return -1;
	int found = PQntuples(res);
	PQclear(res);
	if (found != 1)
		return tl_error_set(err, TL_ERR_NOT_FOUND, "operation %s is missing from tierdb.op_log", op_id);
	return 0;
}

/* The table's stored maintenance policy (an empty object when none); NULL with err set. */
static json_t *load_policy(PGconn *c, int64_t table_id, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the table's policy",
	                             "SELECT maintenance_policy::text FROM tierdb.tables WHERE table_id = $1", 1, params,
	                             err);
	if (res == NULL)
		return NULL;
	json_t *stored = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) ? json_loads(PQgetvalue(res, 0, 0), 0, NULL)
	                                                                  : json_object();
	PQclear(res);
	if (stored == NULL)
		tl_error_set(err, TL_ERR_CORRUPT, "tierdb.tables.maintenance_policy of table %" PRId64 " is not JSON", table_id);
	return stored;
}

/* The lake field ids of the policy's bloom_columns (malloc'd into opts); names the lake lacks are logged and left out. */
static int bloom_field_ids(const tdb_catalog_table *t, const tl_ice_table *lake, const json_t *stored,
                           tl_ice_writer_options *opts, tl_error *err)
{
	char **names;
	int n;
	if (tdb_maintenance_policy_bloom_columns(stored, &names, &n, err) < 0) {
		tl_error_prefix(err, "%s", tdb_table_label(t));
		return -1;
	}
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	int32_t *ids = n > 0 ? malloc(sizeof(int32_t) * (size_t)n) : NULL;
	if (n > 0 && ids == NULL) {
		tdb_maintenance_policy_names_free(names, n);
		return tl_error_nomem(err, "for the bloom filter columns of %s", tdb_table_label(t));
	}
	int nids = 0;
	for (int i = 0; i < n; i++) {
		const tl_ice_field *f = NULL;
		for (int k = 0; schema != NULL && k < schema->nfields && f == NULL; k++)
			if (strcmp(schema->fields[k].name, names[i]) == 0)
				f = &schema->fields[k];
		if (f != NULL)
			ids[nids++] = f->id;
		else
			tdb_log(tdb_table_label(t),
			        "warning: bloom_columns names \"%s\", which the lake's schema does not have (dropped or "
			        "renamed?); its files get no bloom filter on it. Fix the policy with 'tierdb policy --set "
			        "bloom_columns=...'",
			        names[i]);
	}
	tdb_maintenance_policy_names_free(names, n);
	opts->bloom_field_ids = ids;
	opts->nbloom_field_ids = nids;
	return 0;
}

int tdb_lake_writer_options(PGconn *c, const tdb_catalog_table *t, const tl_ice_table *lake, const char *op_id,
                            tl_ice_writer_options *opts, tl_error *err)
{
	tl_ice_writer_options_init(opts);
	opts->file_prefix = op_id;
	opts->parquet.row_group_rows = TDB_LAKE_ROW_GROUP_ROWS;
	opts->parquet.page_rows = TDB_LAKE_PAGE_ROWS;
	/* Bloom filters on the table's primary key (the lake schema's
	 * identifier fields, set at registration): a cold point lookup by key
	 * then skips the row groups whose filter rules the key out, which
	 * min/max cannot do for keys spread over every row group. */
	opts->bloom_identifier_fields = true;
	json_t *stored = load_policy(c, t->table_id, err);
	if (stored == NULL)
		return -1;
	tdb_maintenance_policy policy;
	int rc = tdb_maintenance_policy_resolve(stored, true, &policy, err);
	if (rc < 0)
		tl_error_prefix(err, "%s", tdb_table_label(t));
	else
		rc = bloom_field_ids(t, lake, stored, opts, err);
	if (rc == 0)
		opts->parquet.bloom_fpp = policy.bloom_fpp;
	json_decref(stored);
	return rc;
}

void tdb_lake_writer_options_free(tl_ice_writer_options *opts)
{
	free((void *)opts->bloom_field_ids);
	opts->bloom_field_ids = NULL;
	opts->nbloom_field_ids = 0;
}

/* "<a><sep><b>", malloc'd. */
static char *join(const char *a, const char *sep, const char *b)
{
	size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
	char *out = malloc(n);
	if (out == NULL) {
		fprintf(stderr, "tierdb: out of memory\n");
		abort();
	}
	snprintf(out, n, "%s%s%s", a, sep, b);
	return out;
}

/* Deletes one file, counting it; logs what cannot be deleted. */
static void remove_file(const char *path, const char *label, const char *op_id, int *deleted, int *missing)
{
	tl_error why;
	tl_error_clear(&why);
	if (tl_storage_remove(path, &why) == 0)
		(*deleted)++;
	else if (why.code == TL_ERR_NOT_FOUND)
		(*missing)++;
	else
		tdb_log(label, "recovery: cannot remove %s of operation %s: %s", path, op_id, why.message);
}

/* Deletes the files under `dir` (recursively) whose names start with `prefix`. */
static void remove_prefixed(const char *dir, const char *prefix, const char *label, const char *op_id, int *deleted)
{
	tl_storage_list list;
	if (tl_storage_list_dir(dir, TL_STORAGE_LIST_RECURSIVE, &list, NULL) < 0)
		return; /* no data directory yet: nothing was written */
	int ignored = 0;
	for (size_t i = 0; i < list.count; i++) {
		const char *slash = strrchr(list.entries[i].name, '/');
		const char *base = slash ? slash + 1 : list.entries[i].name;
		if (strncmp(base, prefix, strlen(prefix)) != 0)
			continue;
		char *path = join(dir, "/", list.entries[i].name);
		remove_file(path, label, op_id, deleted, &ignored);
		free(path);
	}
	tl_storage_list_free(&list);
}

void tdb_lake_remove_op_files(const tl_ice_table *lake, const json_t *files, const char *label, const char *op_id,
                              int *deleted, int *missing)
{
	*deleted = *missing = 0;
	size_t i;
	json_t *file;
	json_array_foreach(files, i, file)
	{
		if (!json_is_string(file))
			continue;
		remove_file(json_string_value(file), label, op_id, deleted, missing);
	}
	char *data = join(lake->location, "/", "data");
	char *prefix = join(op_id, "-", "");
	remove_prefixed(data, prefix, label, op_id, deleted);
	free(prefix);
	free(data);
}

int tdb_live_pins(PGconn *c, int64_t table_id, int64_t *count, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(c, "reading the table's read pins",
	                             "SELECT count(*) FROM tierdb.read_pins WHERE table_id = $1 AND expires_at > now()", 1,
	                             params, err);
	if (res == NULL)
		return -1;
	*count = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}

int tdb_lake_commit_landed(tl_ice_table *lake, const char *op_id, int64_t *snapshot_id)
{
	tl_error reread;
	tl_error_clear(&reread);
	if (tl_ice_table_refresh(lake, &reread) < 0)
		return -1;
	const tl_ice_snapshot *found = tdb_lake_snapshot_of_op(lake, op_id);
	if (found == NULL)
		return 0;
	*snapshot_id = found->snapshot_id;
	return 1;
}

int tdb_settle_interrupted(PGconn *c, const tdb_catalog_table *t, const char *op_kind, const char *details_kind,
                           tdb_settle_fn settle, tl_error *err)
{
	int64_t table_id = t->table_id;
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id, op_kind, details_kind};
	PGresult *res = tdb_pg_query(c, "reading interrupted operations",
	                             "SELECT op_id, phase, details::text FROM tierdb.op_log WHERE table_id = $1"
	                             " AND op_kind = $2 AND ($3::text IS NULL OR details->>'kind' = $3)"
	                             " AND phase NOT IN ('published', 'done', 'aborted') ORDER BY updated_at, op_id",
	                             3, params, err);
	if (res == NULL)
		return -1;
	int settled = 0;
	for (int i = 0; i < PQntuples(res) && settled >= 0; i++) {
		const char *op_id = PQgetvalue(res, i, 0);
		json_t *details = json_loads(PQgetvalue(res, i, 2), 0, NULL);
		int rc = -1;
		if (details == NULL)
			tl_error_set(err, TL_ERR_CORRUPT, "its journal entry is not JSON");
		else if (tdb_lake_lock(c, table_id, true, err) == 0) {
			rc = settle(c, t, op_id, PQgetvalue(res, i, 1), details, err);
			tl_error ignored;
			tl_error_clear(&ignored);
			tdb_lake_lock(c, table_id, false, &ignored);
		}
		json_decref(details);
		if (rc < 0) {
			tl_error_prefix(err, "recovering operation %s", op_id);
			settled = -1;
		} else {
			settled += rc;
		}
	}
	PQclear(res);
	return settled;
}

int tdb_publish_snapshot_begin(PGconn *c, const char *label, int64_t table_id, const char *step, const char *op_id,
                               bool committed, int64_t base_s, int64_t new_s, const tl_ice_table *lake,
                               tl_error *err)
{
	if (tdb_pg_exec(c, "starting to publish", "BEGIN", 0, NULL, err) < 0)
		return -1;
	if (!committed)
		return 0;
	bool published;
	if (tdb_cutline_publish(c, table_id, false, 0, 0, base_s, new_s, lake, &published, err) < 0)
		return -1;
	if (!published)
		return tl_error_set(err, TL_ERR_CONFLICT,
		                    "the pinned snapshot of %s moved during %s; operation %s is committed to the lake as "
		                    "snapshot %" PRId64 " and awaits recovery",
		                    label, step, op_id, new_s);
	return 0;
}

/* Fires the fault point "<prefix>-<what>". */
static void op_fault(const char *prefix, const char *what)
{
	char point[64];
	snprintf(point, sizeof(point), "%s-%s", prefix, what);
	tdb_fault(point);
}

int tdb_lake_op_finish(const tdb_lake_op *op, bool *blocked, tl_error *err)
{
	*blocked = false;
	if (tdb_lake_lock(op->c, op->table_id, true, err) < 0)
		return -1;
	int rc = 0;
	if (op->check_pins) {
		int64_t pins = 0;
		rc = tdb_live_pins(op->c, op->table_id, &pins, err);
		if (rc == 0 && pins > 0) {
			/* A reader pinned the view while the step prepared its commit. */
			*blocked = true;
			rc = tl_error_set(err, TL_ERR_CONFLICT, "%" PRId64 " read pin%s arrived during %s", pins,
			                  pins == 1 ? "" : "s", op->step);
		}
	}
	if (rc == 0 && op->need_commit) {
		op_fault(op->fault_prefix, "before-commit");
		rc = op->commit(op->arg, err);
	}
	if (rc == 0 && *op->committed) {
		op_fault(op->fault_prefix, "after-commit");
		rc = tdb_oplog_set_phase(op->c, op->op_id, "committed", op->snapshot_id, err);
		op_fault(op->fault_prefix, "after-commit-recorded");
	}
	if (rc == 0)
		rc = op->publish(op->arg, err);
	if (rc < 0)
		tdb_abort_transaction(op->c);
	tl_error ignored;
	tl_error_clear(&ignored);
	tdb_lake_lock(op->c, op->table_id, false, &ignored);
	return rc;
}

int tdb_lake_key_columns(const tl_ice_table *lake, const tdb_catalog_table *t, const tdb_pg_column *cols, int ncols,
                         const char *label, tdb_pg_column **key_cols, int32_t **key_ids, int *nkey, tl_error *err)
{
	const tl_ice_schema *schema = tl_ice_metadata_current_schema(lake->metadata);
	*key_cols = tl_calloc((size_t)t->npk + 1, sizeof(tdb_pg_column));
	*key_ids = tl_calloc((size_t)t->npk + 1, sizeof(int32_t));
	*nkey = 0;
	bool tier_in_pk = false;
	for (int i = 0; i <= t->npk; i++) {
		const char *name = i < t->npk ? t->pk_cols[i] : t->tier_key_col;
		if (i == t->npk && tier_in_pk)
			break;
		int col = -1;
		for (int k = 0; k < ncols && col < 0; k++)
			if (strcmp(cols[k].name, name) == 0)
				col = k;
		if (col < 0)
			return tl_error_set(err, TL_ERR_INVALID, "%s has no column \"%s\" (a registered key column)", label,
			                    name);
		if (i < t->npk && strcmp(name, t->tier_key_col) == 0)
			tier_in_pk = true;
		const tl_ice_field *f = NULL;
		for (int k = 0; k < schema->nfields && f == NULL; k++)
			if (strcmp(schema->fields[k].name, name) == 0)
				f = &schema->fields[k];
		if (f == NULL || f->type.id != cols[col].ice_type.id)
			return tl_error_set(err, TL_ERR_UNSUPPORTED,
			                    "column \"%s\" of %s does not match a field of its lake table %s; changing a "
			                    "registered table's key columns is not supported",
			                    name, label, lake->location);
		(*key_cols)[*nkey] = cols[col];
		(*key_ids)[*nkey] = f->id;
		(*nkey)++;
	}
	return 0;
}

int tdb_lake_commit_writers(tl_ice_table *lake, int64_t published, const char *step, const char *op_id,
                            const tl_ice_writer *const *writers, int nwriters, int64_t *snapshot_id, bool *committed,
                            tl_error *err)
{
	if (tl_ice_table_refresh(lake, err) < 0 || tdb_lake_check_published(lake, published, step, err) < 0)
		return -1;
	tl_ice_commit *commit = tl_ice_commit_begin(lake, TL_ICE_OP_ROW_DELTA, err);
	if (commit == NULL)
		return -1;
	int rc = 0;
	for (int w = 0; w < nwriters && rc == 0; w++)
		for (int i = 0; i < tl_ice_writer_nfiles(writers[w]) && rc == 0; i++)
			rc = tl_ice_commit_add_file(commit, tl_ice_writer_file(writers[w], i), err);
	tl_ice_commit_set_summary(commit, "tierdb.op-id", op_id);
	if (rc == 0)
		rc = tl_ice_commit_finish(commit, snapshot_id, err);
	tl_ice_commit_free(commit);
	if (rc == 0) {
		*committed = true;
		return 0;
	}
	int landed = tdb_lake_commit_landed(lake, op_id, snapshot_id);
	if (landed == 0)
		return -1;
	*committed = true; /* landed, or unknown: never delete files a landed commit may serve */
	return landed > 0 ? 0 : -1;
}

int tdb_wait_out_readers(PGconn *c, int64_t table_id, tl_error *err)
{
	char id[24];
	tdb_int_text(table_id, id);
	const char *params[] = {id};
	int rc = tdb_pg_exec(c, "waiting out readers", "BEGIN", 0, NULL, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "waiting out in-database readers", "SELECT tierdb.wait_for_readers($1::bigint)", 1,
		                 params, err);
	if (rc == 0)
		rc = tdb_pg_exec(c, "waiting out readers", "COMMIT", 0, NULL, err);
	if (rc < 0)
		tdb_abort_transaction(c);
	return rc;
}

int tdb_copy_into_closed_writer(PGconn *c, const char *copy_sql, const char *what, const tdb_pg_column *cols,
                                int ncols, tl_ice_writer *w, int64_t batch_rows, bool *closed, tl_error *err)
{
	tl_pq_batch *batch = tl_pq_batch_new(tl_ice_writer_schema(w), batch_rows);
	int rc = tdb_copy_into_writer(c, copy_sql, what, cols, ncols, w, batch, NULL, NULL, NULL, err);
	tl_pq_batch_free(batch);
	if (rc == 0) {
		rc = tl_ice_writer_close(w, err);
		if (rc < 0)
			tl_error_prefix(err, "%s", what);
	}
	*closed = rc == 0;
	return rc;
}
