/*
 * test_iceberg_maintenance.c: iceberg_maintenance.h: walking a snapshot's
 * files, expiring snapshots, the files an expiry leaves unreferenced,
 * rewriting manifests and finding orphan files.
 *
 * Every test builds the same history on a fresh table: three appends, a
 * replace of the first append's file, a row delta with equality deletes,
 * position deletes, and a last append. Rows are checked through scan
 * planning and the reader at every snapshot that must survive, before and
 * after each operation, so a lost file, a lost delete or a delete applied
 * to the wrong rows (sequence numbers) shows as a different digest.
 */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "table_fixture.h"
#include "test.h"
#include "tierlake/iceberg_maintenance.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/storage.h"
#include "iceberg/maintenance_internal.h"

enum { NSNAPS = 7 };

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void fresh_dir(char dir[PATH_MAX])
{
	snprintf(dir, PATH_MAX, "/tmp/tl_maint_XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
}

static void remove_dir(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------ files */

/* A list of paths a walk reported (malloc'd copies). */
typedef struct paths {
	char **items;
	int n;
	int kinds[TL_ICE_FILE_METADATA + 1];
} paths;

static int collect(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	paths *p = arg;
	p->items = realloc(p->items, sizeof(char *) * (size_t)(p->n + 1));
	p->items[p->n++] = strdup(ref->path);
	p->kinds[ref->kind]++;
	return 0;
}

static void paths_free(paths *p)
{
	for (int i = 0; i < p->n; i++)
		free(p->items[i]);
	free(p->items);
	memset(p, 0, sizeof(*p));
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts and removes duplicates. */
static void paths_unique(paths *p)
{
	qsort(p->items, (size_t)p->n, sizeof(char *), compare_strings);
	int n = 0;
	for (int i = 0; i < p->n; i++) {
		if (n > 0 && strcmp(p->items[n - 1], p->items[i]) == 0)
			free(p->items[i]);
		else
			p->items[n++] = p->items[i];
	}
	p->n = n;
}

static bool paths_has(const paths *p, const char *path)
{
	for (int i = 0; i < p->n; i++)
		if (strcmp(p->items[i], path) == 0)
			return true;
	return false;
}

/* Every file of every snapshot of md, sorted and unique: the naive reachable set. */
static int all_files(const tl_ice_table_metadata *md, paths *out, tl_error *err)
{
	for (int i = 0; i < md->nsnapshots; i++)
		if (tl_ice_snapshot_files(md, md->snapshots[i].snapshot_id, collect, out, err) < 0)
			return -1;
	paths_unique(out);
	return 0;
}

/* ------------------------------------------------------------- rows */

typedef struct digest {
	int64_t rows, sum, squares;
} digest;

static int read_snapshot(const tl_ice_table_metadata *md, int64_t snapshot_id, digest *d, tl_error *err)
{
	memset(d, 0, sizeof(*d));
	tl_ice_scan *scan = tl_ice_scan_plan(md, snapshot_id, NULL, err);
	int32_t ids[1] = {1};
	tl_ice_reader *r = scan ? tl_ice_reader_open(scan, ids, 1, err) : NULL;
	tl_pq_batch *b = r ? tl_ice_reader_batch_new(r, 64) : NULL;
	int rc = b ? 0 : -1;
	for (int64_t n; rc == 0 && (n = tl_ice_reader_next(r, b, err)) != 0;) {
		if (n < 0)
			rc = -1;
		for (int64_t i = 0; i < n; i++) {
			int64_t v = b->columns[0].v.i64[i];
			d->rows++;
			d->sum += v;
			d->squares += v * v;
		}
	}
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_scan_free(scan);
	return rc;
}

/* The digests of ids [first, first + n) less `minus`. */
static digest ids_digest(const int64_t (*ranges)[2], int nranges, const int64_t *minus, int nminus)
{
	digest d = {0, 0, 0};
	for (int r = 0; r < nranges; r++)
		for (int64_t v = ranges[r][0]; v < ranges[r][0] + ranges[r][1]; v++) {
			bool gone = false;
			for (int m = 0; m < nminus; m++)
				gone = gone || minus[m] == v;
			if (!gone) {
				d.rows++;
				d.sum += v;
				d.squares += v * v;
			}
		}
	return d;
}

static bool digest_equal(digest a, digest b)
{
	return a.rows == b.rows && a.sum == b.sum && a.squares == b.squares;
}

/* ----------------------------------------------------------- history */

/* Writes ids [first, first + n) into new data files of t through an Iceberg writer. */
static tl_ice_writer *write_ids(tl_ice_table *t, int64_t first, int n, tl_error *err)
{
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, err);
	tl_pq_batch *b = w ? tl_pq_batch_new(tl_ice_writer_schema(w), n) : NULL;
	int rc = b ? 0 : -1;
	for (int i = 0; rc == 0 && i < n; i++)
		b->columns[0].v.i64[i] = first + i;
	if (b)
		b->nrows = n;
	if (rc == 0)
		rc = tl_ice_writer_write(w, b, err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, err);
	tl_pq_batch_free(b);
	if (rc < 0) {
		tl_ice_writer_free(w);
		return NULL;
	}
	return w;
}

static int add_files(tl_ice_commit *c, const tl_ice_writer *w, tl_error *err)
{
	for (int i = 0; i < tl_ice_writer_nfiles(w); i++)
		if (tl_ice_commit_add_file(c, tl_ice_writer_file(w, i), err) < 0)
			return -1;
	return 0;
}

/* The data file a snapshot added (its only one). */
typedef struct added_file {
	int64_t snapshot_id;
	char *path;
} added_file;

static int find_added(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	added_file *a = arg;
	if (ref->kind == TL_ICE_FILE_DATA && ref->entry->snapshot_id == a->snapshot_id)
		a->path = strdup(ref->path);
	return 0;
}

/* Replaces the file the first snapshot added with a rewrite holding the same ids 1..10. */
static int replace_first_file(const char *location, int64_t first_snapshot, tl_error *err)
{
	tl_ice_table *t = tl_ice_table_open(location, err);
	added_file a = {first_snapshot, NULL};
	int rc = t ? tl_ice_snapshot_files(t->metadata, first_snapshot, find_added, &a, err) : -1;
	char *old = a.path;
	tl_ice_writer *w = rc == 0 ? write_ids(t, 1, 10, err) : NULL;
	tl_ice_commit *c = w ? tl_ice_commit_begin(t, TL_ICE_OP_REPLACE, err) : NULL;
	rc = c && old && add_files(c, w, err) == 0 && tl_ice_commit_remove_file(c, old, err) == 0 &&
	             tl_ice_commit_finish(c, NULL, err) == 0
	         ? 0
	         : -1;
	tl_ice_commit_free(c);
	tl_ice_writer_free(w);
	tl_ice_table_free(t);
	free(old);
	return rc;
}

/* Equality deletes of ids 5 and 15 and new rows 100..104, one row delta. */
static int equality_row_delta(const char *location, tl_error *err)
{
	static const int32_t key[1] = {1};
	tl_ice_table *t = tl_ice_table_open(location, err);
	tl_ice_writer *data = t ? write_ids(t, 100, 5, err) : NULL;
	tl_ice_writer *deletes = data ? tl_ice_writer_open_equality_deletes(t, key, 1, NULL, err) : NULL;
	tl_pq_batch *b = deletes ? tl_pq_batch_new(tl_ice_writer_schema(deletes), 2) : NULL;
	int rc = b ? 0 : -1;
	if (rc == 0) {
		b->columns[0].v.i64[0] = 5;
		b->columns[0].v.i64[1] = 15;
		b->nrows = 2;
		rc = tl_ice_writer_write(deletes, b, err) == 0 && tl_ice_writer_close(deletes, err) == 0 ? 0 : -1;
	}
	tl_ice_commit *c = rc == 0 ? tl_ice_commit_begin(t, TL_ICE_OP_ROW_DELTA, err) : NULL;
	rc = c && add_files(c, data, err) == 0 && add_files(c, deletes, err) == 0 && tl_ice_commit_finish(c, NULL, err) == 0
	         ? 0
	         : -1;
	tl_ice_commit_free(c);
	tl_pq_batch_free(b);
	tl_ice_writer_free(deletes);
	tl_ice_writer_free(data);
	tl_ice_table_free(t);
	return rc;
}

/* Writes position deletes of rows 0 and 1 of data_file (file_path, pos) as Spark writes them. */
static int write_position_deletes(const char *path, const char *data_file, tl_error *err)
{
	tl_pq_column cols[2];
	memset(cols, 0, sizeof(cols));
	cols[0].name = "file_path", cols[0].physical = TL_PQ_BYTE_ARRAY, cols[0].logical = TL_PQ_LOGICAL_STRING;
	cols[0].required = true, cols[0].field_id = 2147483546;
	cols[1].name = "pos", cols[1].physical = TL_PQ_INT64, cols[1].required = true, cols[1].field_id = 2147483545;
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_schema_add(s, &cols[0]);
	tl_pq_schema_add(s, &cols[1]);
	tl_pq_batch *b = tl_pq_batch_new(s, 2);
	for (int i = 0; i < 2; i++) {
		b->columns[0].v.bytes[i] = (tl_bytes){(const uint8_t *)data_file, (uint32_t)strlen(data_file)};
		b->columns[1].v.i64[i] = i;
	}
	b->nrows = 2;
	tl_output *out = tl_storage_create(path, TL_STORAGE_CREATE_EXCLUSIVE, err);
	tl_pq_writer *w = out ? tl_pq_writer_open(out, s, NULL, err) : NULL;
	int rc = w && tl_pq_writer_write(w, b, err) == 0 && tl_pq_writer_close(w, err) == 0 && out->finish(out, err) == 0
	             ? 0
	             : -1;
	tl_pq_writer_free(w);
	tl_output_close(out);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

/* Position deletes of the first two rows (ids 21, 22) of the file the given snapshot added. */
static int position_row_delta(const char *location, int64_t snapshot, tl_error *err)
{
	tl_ice_table *t = tl_ice_table_open(location, err);
	added_file a = {snapshot, NULL};
	int rc = t ? tl_ice_snapshot_files(t->metadata, snapshot, find_added, &a, err) : -1;
	char *target = a.path;
	/* Recorded under the other spelling of the location (file:// URI or path), as another engine may. */
	char path[PATH_MAX + 64];
	bool is_uri = strncmp(location, "file://", 7) == 0;
	snprintf(path, sizeof(path), "%s%s/data/pos-deletes-%lld.parquet", is_uri ? "" : "file://",
	         is_uri ? location + 7 : location, (long long)snapshot);
	if (rc == 0 && target != NULL)
		rc = write_position_deletes(path, target, err);
	tl_input *in = rc == 0 ? tl_storage_open_read(path, err) : NULL;
	tl_ice_commit *c = in ? tl_ice_commit_begin(t, TL_ICE_OP_ROW_DELTA, err) : NULL;
	rc = -1;
	if (c != NULL) {
		tl_ice_data_file df;
		memset(&df, 0, sizeof(df));
		df.content = TL_ICE_CONTENT_POSITION_DELETES;
		df.file_path = path;
		df.file_format = "PARQUET";
		df.record_count = 2;
		df.file_size_in_bytes = (int64_t)in->size;
		rc = tl_ice_commit_add_file(c, &df, err) == 0 && tl_ice_commit_finish(c, NULL, err) == 0 ? 0 : -1;
	}
	tl_ice_commit_free(c);
	tl_input_close(in);
	tl_ice_table_free(t);
	free(target);
	return rc;
}

static int64_t current_snapshot(const char *location)
{
	tl_ice_table *t = tl_ice_table_open(location, NULL);
	int64_t id = t ? t->metadata->current_snapshot_id : TL_ICE_NO_SNAPSHOT;
	tl_ice_table_free(t);
	return id;
}

/* Snapshots tell apart by timestamp: the age tests cut between them. */
static void next_millisecond(void)
{
	struct timespec ts = {0, 3 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

/*
 * The history every test starts from, snaps[0..6]: appends of ids 1..10,
 * 11..20, 21..30; a replace of the first file (ids 1..10 again); a row
 * delta deleting ids 5 and 15 by equality and adding 100..104; position
 * deletes of ids 21 and 22; an append of 200..204.
 */
static int build_history(const char *location, const tl_ice_kv *props, int nprops, int64_t snaps[NSNAPS],
                         tl_error *err)
{
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_ice_field fields[] = {{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}}};
	if (tl_ice_schema_init(&schema, 0, fields, 1, err) < 0)
		return -1;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_table *t = tl_ice_table_create(location, &schema, &spec, props, nprops, err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	if (t == NULL)
		return -1;
	tl_ice_table_free(t);
	static const int64_t appends[3][2] = {{1, 10}, {11, 10}, {21, 10}};
	for (int i = 0; i < 3; i++) {
		next_millisecond();
		if (fixture_append_rows(location, appends[i][0], (int)appends[i][1], err) < 0)
			return -1;
		snaps[i] = current_snapshot(location);
	}
	next_millisecond();
	if (replace_first_file(location, snaps[0], err) < 0)
		return -1;
	snaps[3] = current_snapshot(location);
	next_millisecond();
	if (equality_row_delta(location, err) < 0)
		return -1;
	snaps[4] = current_snapshot(location);
	next_millisecond();
	if (position_row_delta(location, snaps[2], err) < 0)
		return -1;
	snaps[5] = current_snapshot(location);
	next_millisecond();
	if (fixture_append_rows(location, 200, 5, err) < 0)
		return -1;
	snaps[6] = current_snapshot(location);
	return 0;
}

/* A fresh directory `dir` holding the history, its table opened; NULL with err set when it cannot be built. */
static tl_ice_table *history_table(char dir[PATH_MAX], const tl_ice_kv *props, int nprops, int64_t snaps[NSNAPS],
                                   tl_error *err)
{
	fresh_dir(dir);
	tl_error_clear(err);
	if (build_history(dir, props, nprops, snaps, err) < 0)
		return NULL;
	return tl_ice_table_open(dir, err);
}

/* What each snapshot of the history reads. */
static digest expected_rows(int snapshot)
{
	static const int64_t ranges[][2] = {{1, 10}, {11, 10}, {21, 10}, {100, 5}, {200, 5}};
	static const int64_t eq[] = {5, 15}, eq_pos[] = {5, 15, 21, 22};
	switch (snapshot) {
	case 0: return ids_digest(ranges, 1, NULL, 0);
	case 1: return ids_digest(ranges, 2, NULL, 0);
	case 2:
	case 3: return ids_digest(ranges, 3, NULL, 0);
	case 4: return ids_digest(ranges, 4, eq, 2);
	case 5: return ids_digest(ranges, 4, eq_pos, 4);
	default: return ids_digest(ranges, 5, eq_pos, 4);
	}
}

/* Every snapshot of snaps[] that md still has reads what it read when written. */
static bool snapshots_read_as_written(const tl_ice_table_metadata *md, const int64_t snaps[NSNAPS], tl_error *err)
{
	for (int i = 0; i < NSNAPS; i++) {
		if (tl_ice_metadata_snapshot(md, snaps[i]) == NULL)
			continue;
		digest d;
		if (read_snapshot(md, snaps[i], &d, err) < 0 || !digest_equal(d, expected_rows(i))) {
			fprintf(stderr, "snapshot %d reads %lld rows, sum %lld: %s\n", i, (long long)d.rows, (long long)d.sum,
			        err->message);
			return false;
		}
	}
	return true;
}

static int delete_file(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	tl_error ignored;
	tl_error_clear(&ignored);
	if (tl_storage_remove(ref->path, &ignored) < 0)
		fprintf(stderr, "cannot delete %s: %s\n", ref->path, ignored.message);
	return collect(arg, ref, err);
}

static int count_missing(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	if (!tl_storage_is_file(ref->path))
		(*(int *)arg)++;
	return 0;
}

/* ---------------------------------------------------------- the tests */

TEST(snapshot_files_walks_the_list_manifests_and_live_files)
{
	char dir[PATH_MAX];
	tl_error err;
	int64_t snaps[NSNAPS];
	tl_ice_table *t = history_table(dir, NULL, 0, snaps, &err);
	CHECK_OK(t ? 0 : -1, &err);
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));

	paths p = {0};
	CHECK_OK(tl_ice_snapshot_files(t->metadata, snaps[6], collect, &p, &err), &err);
	CHECK_INT(p.kinds[TL_ICE_FILE_MANIFEST_LIST], 1);
	CHECK_INT(p.kinds[TL_ICE_FILE_DATA], 5);     /* the rewrite of ids 1..10, 11..20, 21..30, 100.., 200.. */
	CHECK_INT(p.kinds[TL_ICE_FILE_EQUALITY_DELETES], 1);
	CHECK_INT(p.kinds[TL_ICE_FILE_POSITION_DELETES], 1);
	CHECK(p.kinds[TL_ICE_FILE_MANIFEST] >= 4);
	CHECK_STR(p.items[0], tl_ice_metadata_snapshot(t->metadata, snaps[6])->manifest_list);
	paths_free(&p);

	/* the first snapshot: its list, one manifest, one file */
	CHECK_OK(tl_ice_snapshot_files(t->metadata, snaps[0], collect, &p, &err), &err);
	CHECK_INT(p.n, 3);
	CHECK_INT(p.kinds[TL_ICE_FILE_MANIFEST], 1);
	paths_free(&p);

	CHECK(tl_ice_snapshot_files(t->metadata, 12345, collect, &p, &err) < 0);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	paths_free(&p);
	tl_ice_table_free(t);
	remove_dir(dir);
}

/* Inherited sequence numbers come with each entry; the callback's answer stops the walk. */
static int check_entry(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	int *n = arg;
	if (ref->kind == TL_ICE_FILE_MANIFEST_LIST || ref->kind == TL_ICE_FILE_MANIFEST)
		return 0;
	if (!ref->entry->has_sequence_number || !ref->entry->has_file_sequence_number || !ref->entry->has_snapshot_id ||
	    ref->entry->sequence_number < 1)
		return tl_error_set(err, TL_ERR_CORRUPT, "%s: sequence numbers not inherited", ref->path);
	return ++*n == 3 ? 7 : 0;
}

TEST(snapshot_files_inherits_and_stops_when_asked)
{
	char dir[PATH_MAX];
	tl_error err;
	int64_t snaps[NSNAPS];
	tl_ice_table *t = history_table(dir, NULL, 0, snaps, &err);
	CHECK_OK(t ? 0 : -1, &err);
	int n = 0;
	CHECK_INT(tl_ice_snapshot_files(t->metadata, snaps[6], check_entry, &n, &err), 7);
	CHECK_INT(n, 3);
	tl_ice_table_free(t);
	remove_dir(dir);
}

static tl_ice_expire_options expire_options(int64_t older_than_ms, int retain_last, const int64_t *keep, int nkeep)
{
	tl_ice_expire_options o = {.older_than_ms = older_than_ms, .retain_last = retain_last, .keep_ids = keep,
	                           .nkeep_ids = nkeep};
	return o;
}

TEST(expire_keeps_the_current_snapshot_pins_and_retained_ancestors)
{
	char dir[PATH_MAX];
	tl_error err;
	int64_t snaps[NSNAPS];
	tl_ice_table *before = history_table(dir, NULL, 0, snaps, &err);
	CHECK_OK(before ? 0 : -1, &err);
	tl_ice_table *t = tl_ice_table_open(dir, &err);
	int64_t version = t->version;

	/* everything is old; one ancestor retained, snapshot 1 pinned */
	tl_ice_expire_options o = expire_options(INT64_MAX, 1, &snaps[1], 1);
	int nexpired = -1;
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, &nexpired, &err), &err);
	CHECK_INT(nexpired, 5);
	CHECK_INT(t->version, version + 1);
	tl_ice_table_free(t);

	t = tl_ice_table_open(dir, &err);   /* as written to disk */
	CHECK_INT(t->version, version + 1);
	CHECK_INT(t->metadata->nsnapshots, 2);
	CHECK_INT(t->metadata->current_snapshot_id, snaps[6]);
	CHECK(tl_ice_metadata_snapshot(t->metadata, snaps[1]) != NULL);
	/* the log keeps no entry before a removed snapshot's */
	CHECK_INT(t->metadata->nsnapshot_log, 1);
	CHECK_INT(t->metadata->snapshot_log[0].snapshot_id, snaps[6]);
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));

	/* The unreferenced files: exactly the naive difference of the two reachable sets. */
	paths old_files = {0}, new_files = {0}, gone = {0};
	CHECK_OK(all_files(before->metadata, &old_files, &err), &err);
	CHECK_OK(all_files(t->metadata, &new_files, &err), &err);
	CHECK_OK(tl_ice_unreferenced_files(before->metadata, before->metadata_file, t->metadata, t->metadata_file, 0,
	                                   delete_file, &gone, &err),
	         &err);
	int want = 0;
	for (int i = 0; i < old_files.n; i++) {
		if (paths_has(&new_files, old_files.items[i]))
			continue;
		want++;
		CHECK(paths_has(&gone, old_files.items[i]));
	}
	CHECK_INT(gone.n, want);
	CHECK_INT(gone.kinds[TL_ICE_FILE_MANIFEST_LIST], 5);
	/* snapshot 1 holds the first append's file, which the replace removed; no data file went */
	CHECK_INT(gone.kinds[TL_ICE_FILE_DATA] + gone.kinds[TL_ICE_FILE_EQUALITY_DELETES] +
	              gone.kinds[TL_ICE_FILE_POSITION_DELETES],
	          0);
	CHECK_INT(gone.kinds[TL_ICE_FILE_METADATA], 0); /* the floor was 0 */
	int missing = 0;
	for (int i = 0; i < t->metadata->nsnapshots; i++)
		CHECK_OK(tl_ice_snapshot_files(t->metadata, t->metadata->snapshots[i].snapshot_id, count_missing, &missing,
		                               &err),
		         &err);
	CHECK_INT(missing, 0);
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));
	paths_free(&gone);
	paths_free(&old_files);
	paths_free(&new_files);
	tl_ice_table_free(before);

	/* Now the pin goes: snapshot 1 expires and with it the first append's file, replaced long ago. */
	before = tl_ice_table_open(dir, &err);
	o = expire_options(INT64_MAX, 1, NULL, 0);
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, &nexpired, &err), &err);
	CHECK_INT(nexpired, 1);
	CHECK_INT(t->metadata->nsnapshots, 1);
	CHECK_OK(tl_ice_unreferenced_files(before->metadata, before->metadata_file, t->metadata, t->metadata_file, 0,
	                                   delete_file, &gone, &err),
	         &err);
	CHECK_INT(gone.kinds[TL_ICE_FILE_DATA], 1);
	CHECK_INT(gone.kinds[TL_ICE_FILE_MANIFEST_LIST], 1);
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));
	paths_free(&gone);

	/* nothing left to expire: no new version */
	version = t->version;
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, &nexpired, &err), &err);
	CHECK_INT(nexpired, 0);
	CHECK_INT(t->version, version);
	tl_ice_table_free(before);
	tl_ice_table_free(t);
	remove_dir(dir);
}

TEST(expire_by_age_and_retain_last)
{
	char dir[PATH_MAX];
	tl_error err;
	int64_t snaps[NSNAPS];
	tl_ice_table *t = history_table(dir, NULL, 0, snaps, &err);
	CHECK_OK(t ? 0 : -1, &err);

	tl_ice_expire_options o = expire_options(INT64_MAX, 0, NULL, 0);
	CHECK(tl_ice_table_expire_snapshots(t, &o, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);

	/* older than the replace: the three appends, but retain_last keeps the newest six ancestors */
	int64_t cut = tl_ice_metadata_snapshot(t->metadata, snaps[3])->timestamp_ms;
	o = expire_options(cut, 6, NULL, 0);
	int nexpired = -1;
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, &nexpired, &err), &err);
	CHECK_INT(nexpired, 1);
	CHECK(tl_ice_metadata_snapshot(t->metadata, snaps[0]) == NULL);
	CHECK(tl_ice_metadata_snapshot(t->metadata, snaps[1]) != NULL);
	o = expire_options(cut, 1, NULL, 0);
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, &nexpired, &err), &err);
	CHECK_INT(nexpired, 2);
	CHECK_INT(t->metadata->nsnapshots, 4);
	CHECK(tl_ice_metadata_snapshot(t->metadata, snaps[3]) != NULL);
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));

	/* the current snapshot never goes, however old */
	o = expire_options(INT64_MAX, 1, NULL, 0);
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, &nexpired, &err), &err);
	CHECK_INT(nexpired, 3);
	CHECK_INT(t->metadata->nsnapshots, 1);
	CHECK_INT(t->metadata->current_snapshot_id, snaps[6]);
	tl_ice_table_free(t);
	t = tl_ice_table_open(dir, &err);
	CHECK_INT(t->metadata->nsnapshots, 1);
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));
	tl_ice_table_free(t);
	remove_dir(dir);
}

TEST(expire_removes_the_snapshots_a_rollback_left_behind)
{
	char dir[PATH_MAX];
	tl_error err;
	int64_t snaps[NSNAPS];
	tl_ice_table *t = history_table(dir, NULL, 0, snaps, &err);
	CHECK_OK(t ? 0 : -1, &err);
	/* Rolled back to snapshot 4: 5 and 6 are no ref's head and not ancestors; they go. */
	CHECK_OK(tl_ice_table_rollback(t, snaps[4], &err), &err);
	tl_ice_table *before = tl_ice_table_open(dir, &err);
	tl_ice_expire_options o = expire_options(INT64_MAX, 5, NULL, 0);
	int nexpired = -1;
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, &nexpired, &err), &err);
	CHECK_INT(nexpired, 2);
	CHECK_INT(t->metadata->nsnapshots, 5);
	paths gone = {0};
	CHECK_OK(tl_ice_unreferenced_files(before->metadata, NULL, t->metadata, NULL, 0, delete_file, &gone, &err), &err);
	/* the position deletes and the last append's file were theirs alone */
	CHECK_INT(gone.kinds[TL_ICE_FILE_DATA], 1);
	CHECK_INT(gone.kinds[TL_ICE_FILE_POSITION_DELETES], 1);
	CHECK_INT(gone.kinds[TL_ICE_FILE_EQUALITY_DELETES], 0);
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));
	paths_free(&gone);
	tl_ice_table_free(before);
	tl_ice_table_free(t);
	remove_dir(dir);
}

TEST(unreferenced_files_include_metadata_dropped_from_the_log)
{
	char dir[PATH_MAX];
	tl_error err;
	int64_t snaps[NSNAPS];
	tl_ice_kv props[] = {{"write.metadata.previous-versions-max", "3"}};
	tl_ice_table *before = history_table(dir, props, 1, snaps, &err);
	CHECK_OK(before ? 0 : -1, &err);
	CHECK_INT(before->metadata->nmetadata_log, 3);
	tl_ice_table *t = tl_ice_table_open(dir, &err);
	tl_ice_expire_options o = expire_options(INT64_MAX, NSNAPS, NULL, 0);
	int nexpired = -1;
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, &nexpired, &err), &err);
	CHECK_INT(nexpired, 0);
	/* a rollback is a new version too: the oldest log entry of `before` drops out */
	CHECK_OK(tl_ice_table_rollback(t, snaps[5], &err), &err);

	paths gone = {0};
	/* below the floor of the oldest entry, none */
	CHECK_OK(tl_ice_unreferenced_files(before->metadata, before->metadata_file, t->metadata, t->metadata_file,
	                                   before->metadata->metadata_log[0].timestamp_ms, collect, &gone, &err),
	         &err);
	CHECK_INT(gone.n, 0);
	CHECK_OK(tl_ice_unreferenced_files(before->metadata, before->metadata_file, t->metadata, t->metadata_file,
	                                   INT64_MAX, collect, &gone, &err),
	         &err);
	CHECK_INT(gone.n, 1);
	CHECK_INT(gone.kinds[TL_ICE_FILE_METADATA], 1);
	CHECK_STR(gone.items[0], before->metadata->metadata_log[0].metadata_file);
	paths_free(&gone);
	tl_ice_table_free(before);
	tl_ice_table_free(t);
	remove_dir(dir);
}

/* ---------------------------------------------------- manifest rewrite */

static int count_manifests(const tl_ice_table_metadata *md, int64_t snapshot_id, int *n, tl_error *err)
{
	paths p = {0};
	int rc = tl_ice_snapshot_files(md, snapshot_id, collect, &p, err);
	*n = p.kinds[TL_ICE_FILE_MANIFEST];
	paths_free(&p);
	return rc;
}

static int64_t summary_count(const tl_ice_snapshot *s, const char *key)
{
	const char *v = tl_ice_snapshot_summary(s, key);
	return v != NULL ? strtoll(v, NULL, 10) : -1;
}

TEST(rewrite_manifests_keeps_rows_deletes_and_sequence_numbers)
{
	char dir[PATH_MAX];
	tl_error err;
	int64_t snaps[NSNAPS];
	tl_ice_table *t = history_table(dir, NULL, 0, snaps, &err);
	CHECK_OK(t ? 0 : -1, &err);
	tl_ice_table_free(t);
	/* id 15 again, after the equality delete of 15: it must stay visible through the rewrite */
	CHECK_OK(fixture_append_rows(dir, 15, 1, &err), &err);
	t = tl_ice_table_open(dir, &err);
	const tl_ice_snapshot *parent = tl_ice_metadata_current_snapshot(t->metadata);
	int64_t parent_id = parent->snapshot_id, last_sequence = t->metadata->last_sequence_number;
	int64_t total_records = summary_count(parent, "total-records");
	digest want = expected_rows(6);
	want.rows++, want.sum += 15, want.squares += 225;
	digest got;
	CHECK_OK(read_snapshot(t->metadata, parent_id, &got, &err), &err);
	CHECK(digest_equal(got, want));
	int before_count;
	CHECK_OK(count_manifests(t->metadata, parent_id, &before_count, &err), &err);
	CHECK(before_count >= 5);

	tl_ice_kv op = {"tierdb.op-id", "rewrite-1"};
	int64_t id = 0;
	CHECK_OK(tl_ice_table_rewrite_manifests(t, 8 << 20, &op, 1, &id, &err), &err);
	CHECK(id != TL_ICE_NO_SNAPSHOT);
	tl_ice_table_free(t);

	t = tl_ice_table_open(dir, &err);
	const tl_ice_snapshot *s = tl_ice_metadata_current_snapshot(t->metadata);
	CHECK_INT(s->snapshot_id, id);
	CHECK_INT(s->parent_id, parent_id);
	CHECK_INT(s->sequence_number, last_sequence + 1);
	CHECK_STR(s->operation, "replace");
	CHECK_STR(tl_ice_snapshot_summary(s, "tierdb.op-id"), "rewrite-1");
	CHECK_INT(summary_count(s, "manifests-created"), 2);   /* one data, one delete manifest */
	CHECK_INT(summary_count(s, "manifests-replaced"), before_count);
	CHECK_INT(summary_count(s, "manifests-kept"), 0);
	CHECK_INT(summary_count(s, "entries-processed"), 8);  /* 6 data files, 2 delete files */
	CHECK_INT(summary_count(s, "total-records"), total_records);
	int after_count;
	CHECK_OK(count_manifests(t->metadata, id, &after_count, &err), &err);
	CHECK_INT(after_count, 2);
	CHECK_OK(read_snapshot(t->metadata, id, &got, &err), &err);
	CHECK(digest_equal(got, want));
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));

	/* nothing more to gain: no new snapshot, no new version */
	int64_t version = t->version;
	CHECK_OK(tl_ice_table_rewrite_manifests(t, 8 << 20, NULL, 0, &id, &err), &err);
	CHECK_INT(id, TL_ICE_NO_SNAPSHOT);
	CHECK_INT(t->version, version);

	/* the next commit builds on the rewrite; expiring everything else leaves it whole */
	tl_ice_table_free(t);
	CHECK_OK(fixture_append_rows(dir, 300, 2, &err), &err);
	t = tl_ice_table_open(dir, &err);
	tl_ice_table *before = tl_ice_table_open(dir, &err);
	tl_ice_expire_options o = expire_options(INT64_MAX, 1, NULL, 0);
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, NULL, &err), &err);
	paths gone = {0};
	CHECK_OK(tl_ice_unreferenced_files(before->metadata, NULL, t->metadata, NULL, 0, delete_file, &gone, &err), &err);
	CHECK(gone.kinds[TL_ICE_FILE_MANIFEST] >= before_count);
	paths_free(&gone);
	want.rows += 2, want.sum += 601, want.squares += 300 * 300 + 301 * 301;
	CHECK_OK(read_snapshot(t->metadata, t->metadata->current_snapshot_id, &got, &err), &err);
	CHECK(digest_equal(got, want));
	tl_ice_table_free(before);
	tl_ice_table_free(t);
	remove_dir(dir);
}

/* The smallest and largest partition value (an identity of id) of each manifest, in list order. */
typedef struct ranges {
	int64_t lo[64], hi[64];
	int n;
	int64_t bytes;   /* of the manifests */
} ranges;

static int manifest_ranges(void *arg, const tl_ice_file_ref *ref, tl_error *err)
{
	ranges *r = arg;
	if (ref->kind == TL_ICE_FILE_MANIFEST && r->n < 64) {
		r->bytes += ref->size;
		r->lo[r->n] = INT64_MAX;
		r->hi[r->n++] = INT64_MIN;
	} else if (ref->kind == TL_ICE_FILE_DATA && r->n > 0) {
		int64_t v = ref->entry->data_file.partition[0].v.i64;
		r->lo[r->n - 1] = v < r->lo[r->n - 1] ? v : r->lo[r->n - 1];
		r->hi[r->n - 1] = v > r->hi[r->n - 1] ? v : r->hi[r->n - 1];
	}
	return 0;
}

/* A table partitioned by identity(id): every id its own partition and file. */
static int create_partitioned(const char *dir, tl_error *err)
{
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_ice_field fields[] = {{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}}};
	if (tl_ice_schema_init(&schema, 0, fields, 1, err) < 0)
		return -1;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_transform identity = {.kind = TL_ICE_IDENTITY};
	tl_ice_partition_spec_add(&spec, 1, 1000, "id_part", identity);
	tl_ice_table *t = tl_ice_table_create(dir, &schema, &spec, NULL, 0, err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	tl_ice_table_free(t);
	return t ? 0 : -1;
}

/* Appends ids first, first + step, ... (n of them) in one commit. */
static int append_strided(const char *dir, int64_t first, int64_t step, int n, tl_error *err)
{
	tl_ice_table *t = tl_ice_table_open(dir, err);
	tl_ice_writer *w = t ? tl_ice_writer_open_data(t, NULL, err) : NULL;
	tl_pq_batch *b = w ? tl_pq_batch_new(tl_ice_writer_schema(w), n) : NULL;
	int rc = b ? 0 : -1;
	for (int i = 0; rc == 0 && i < n; i++)
		b->columns[0].v.i64[i] = first + i * step;
	if (b)
		b->nrows = n;
	tl_ice_commit *c = NULL;
	if (rc == 0 && tl_ice_writer_write(w, b, err) == 0 && tl_ice_writer_close(w, err) == 0 &&
	    (c = tl_ice_commit_begin(t, TL_ICE_OP_APPEND, err)) != NULL && add_files(c, w, err) == 0)
		rc = tl_ice_commit_finish(c, NULL, err);
	else
		rc = -1;
	tl_ice_commit_free(c);
	tl_pq_batch_free(b);
	tl_ice_writer_free(w);
	tl_ice_table_free(t);
	return rc;
}

TEST(rewrite_manifests_sorts_by_partition_and_splits_at_the_target)
{
	char dir[PATH_MAX];
	fresh_dir(dir);
	tl_error err;
	tl_error_clear(&err);
	CHECK_OK(create_partitioned(dir, &err), &err);
	/* three commits whose partitions interleave: each manifest spans nearly every id */
	for (int k = 0; k < 3; k++)
		CHECK_OK(append_strided(dir, 1 + k, 3, 12, &err), &err);
	tl_ice_table *t = tl_ice_table_open(dir, &err);
	int64_t parent = t->metadata->current_snapshot_id;
	digest want, got;
	CHECK_OK(read_snapshot(t->metadata, parent, &want, &err), &err);
	CHECK_INT(want.rows, 36);
	ranges before = {.n = 0};
	CHECK_OK(tl_ice_snapshot_files(t->metadata, parent, manifest_ranges, &before, &err), &err);
	CHECK_INT(before.n, 3);

	/* a third of what the three manifests hold, per manifest: a few manifests, ranges apart and in order */
	int64_t id;
	CHECK_OK(tl_ice_table_rewrite_manifests(t, before.bytes / 3, NULL, 0, &id, &err), &err);
	CHECK(id != TL_ICE_NO_SNAPSHOT);
	ranges mid = {.n = 0};
	CHECK_OK(tl_ice_snapshot_files(t->metadata, id, manifest_ranges, &mid, &err), &err);
	CHECK(mid.n >= 2 && mid.n <= 5);
	CHECK_INT(mid.lo[0], 1);
	CHECK_INT(mid.hi[mid.n - 1], 36);
	for (int i = 0; i + 1 < mid.n; i++)
		CHECK(mid.hi[i] < mid.lo[i + 1]);
	CHECK_OK(read_snapshot(t->metadata, id, &got, &err), &err);
	CHECK(digest_equal(got, want));

	CHECK_OK(tl_ice_table_rewrite_manifests(t, 1, NULL, 0, &id, &err), &err);
	CHECK(id != TL_ICE_NO_SNAPSHOT);
	ranges after = {.n = 0};
	CHECK_OK(tl_ice_snapshot_files(t->metadata, id, manifest_ranges, &after, &err), &err);
	/* one entry a manifest at the smallest target, in partition order */
	CHECK_INT(after.n, 36);
	for (int i = 0; i < after.n; i++) {
		CHECK_INT(after.lo[i], i + 1);
		CHECK_INT(after.hi[i], i + 1);
	}
	CHECK_OK(read_snapshot(t->metadata, id, &got, &err), &err);
	CHECK(digest_equal(got, want));
	tl_ice_table_free(t);
	remove_dir(dir);
}

static int count_dir(const char *dir)
{
	tl_storage_list l = {0};
	if (tl_storage_list_dir(dir, TL_STORAGE_LIST_RECURSIVE, &l, NULL) < 0)
		return -1;
	int n = (int)l.count;
	tl_storage_list_free(&l);
	return n;
}

TEST(rewrite_manifests_that_loses_the_race_leaves_no_file)
{
	char dir[PATH_MAX];
	tl_error err;
	int64_t snaps[NSNAPS];
	tl_ice_table *stale = history_table(dir, NULL, 0, snaps, &err);
	CHECK_OK(stale ? 0 : -1, &err);
	CHECK_OK(fixture_append_rows(dir, 400, 1, &err), &err);
	int files = count_dir(dir);
	int64_t id = 0;
	CHECK(tl_ice_table_rewrite_manifests(stale, 8 << 20, NULL, 0, &id, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	CHECK_INT(id, TL_ICE_NO_SNAPSHOT);
	CHECK_INT(count_dir(dir), files);
	tl_ice_table_free(stale);
	remove_dir(dir);
}

/* --------------------------------------------------------- orphan files */

TEST(file_set_takes_every_spelling_of_a_location_as_one)
{
	tl_ice_file_set set;
	tl_ice_file_set_init(&set);
	CHECK_INT(tl_ice_file_set_add(&set, "file:///x/data//a.parquet"), 1);
	CHECK_INT(tl_ice_file_set_add(&set, "/x/data/a.parquet"), 0);
	CHECK(tl_ice_file_set_has(&set, "file:/x/data/a.parquet"));
	CHECK(tl_ice_file_set_has(&set, "/x/./data/a.parquet"));
	CHECK(!tl_ice_file_set_has(&set, "/x/data/b.parquet"));
	CHECK(!tl_ice_file_set_has(&set, "/x/data/a.parquet.crc"));
	CHECK_INT(tl_ice_file_set_add(&set, "s3a://bucket/t/m.avro"), 1);
	CHECK(tl_ice_file_set_has(&set, "s3://bucket//t/m.avro"));
	CHECK(!tl_ice_file_set_has(&set, "s3://other/t/m.avro"));
	/* grows past its first table without losing a member */
	char name[64];
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "/x/data/f-%d.parquet", i);
		CHECK_INT(tl_ice_file_set_add(&set, name), 1);
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "file:///x/data/f-%d.parquet", i);
		CHECK(tl_ice_file_set_has(&set, name));
	}
	CHECK(tl_ice_file_set_has(&set, "/x/data/a.parquet"));
	tl_ice_file_set_free(&set);
}

/* Writes a stray file at dir/rel, last modified `age_s` seconds ago. */
static int stray(const char *dir, const char *rel, int age_s, tl_error *err)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (fixture_write_all(path, "stray bytes", TL_STORAGE_CREATE_EXCLUSIVE, err) < 0)
		return -1;
	struct timespec times[2];
	clock_gettime(CLOCK_REALTIME, &times[0]);
	times[0].tv_sec -= age_s;
	times[1] = times[0];
	return utimensat(AT_FDCWD, path, times, 0) == 0 ? 0 : tl_error_set(err, TL_ERR_IO, "utimensat %s", path);
}

static bool has_suffix(const paths *p, const char *suffix)
{
	for (int i = 0; i < p->n; i++) {
		size_t n = strlen(p->items[i]), k = strlen(suffix);
		if (n >= k && strcmp(p->items[i] + n - k, suffix) == 0)
			return true;
	}
	return false;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Orphans of the history table at `location` (a path or file:// URI of dir). */
static void check_orphans(const char *location, const char *dir)
{
	tl_error err;
	tl_error_clear(&err);
	int64_t snaps[NSNAPS];
	CHECK_OK(build_history(location, NULL, 0, snaps, &err), &err);
	tl_ice_table *t = tl_ice_table_open(location, &err);
	CHECK_OK(t ? 0 : -1, &err);

	/* nothing is an orphan yet, however old everything is */
	paths found = {0};
	CHECK_OK(tl_ice_table_orphan_files(t, INT64_MAX, collect, &found, &err), &err);
	for (int i = 0; i < found.n; i++)
		fprintf(stderr, "false orphan: %s\n", found.items[i]);
	CHECK_INT(found.n, 0);

	/* a failed writer's file, an interrupted commit's manifest, and a file being written now */
	CHECK_OK(stray(dir, "data/stray-00000.parquet", 7200, &err), &err);
	CHECK_OK(stray(dir, "metadata/0c8e7f3a-1d2b-4c5d-8e9f-0a1b2c3d4e5f-m0.avro", 7200, &err), &err);
	CHECK_OK(stray(dir, "data/young-00000.parquet", 0, &err), &err);
	int64_t hour_ago = wall_ms() - 3600 * 1000;
	CHECK_OK(tl_ice_table_orphan_files(t, hour_ago, collect, &found, &err), &err);
	CHECK_INT(found.n, 2);
	CHECK(has_suffix(&found, "/data/stray-00000.parquet"));
	CHECK(has_suffix(&found, "/metadata/0c8e7f3a-1d2b-4c5d-8e9f-0a1b2c3d4e5f-m0.avro"));
	paths_free(&found);

	/* expired snapshots' files are orphans too: exactly the unreferenced ones */
	tl_ice_table *before = tl_ice_table_open(location, &err);
	tl_ice_expire_options o = expire_options(INT64_MAX, 1, NULL, 0);
	CHECK_OK(tl_ice_table_expire_snapshots(t, &o, NULL, &err), &err);
	paths gone = {0};
	CHECK_OK(tl_ice_unreferenced_files(before->metadata, NULL, t->metadata, NULL, 0, collect, &gone, &err), &err);
	CHECK(gone.n > 0);
	CHECK_OK(tl_ice_table_orphan_files(t, wall_ms() + 1000, collect, &found, &err), &err);
	CHECK_INT(found.n, gone.n + 3);
	for (int i = 0; i < gone.n; i++) {
		const char *p = gone.items[i];
		const char *plain = strncmp(p, "file://", 7) == 0 ? p + 7 : p;
		CHECK(has_suffix(&found, plain + strlen(dir)));
	}
	/* deleting every orphan leaves the table whole */
	paths deleted = {0};
	CHECK_OK(tl_ice_table_orphan_files(t, wall_ms() + 1000, delete_file, &deleted, &err), &err);
	CHECK_INT(deleted.n, found.n);
	tl_ice_table_free(t);
	t = tl_ice_table_open(location, &err);
	CHECK_OK(t ? 0 : -1, &err);
	CHECK(snapshots_read_as_written(t->metadata, snaps, &err));
	int missing = 0;
	CHECK_OK(tl_ice_snapshot_files(t->metadata, snaps[6], count_missing, &missing, &err), &err);
	CHECK_INT(missing, 0);
	paths_free(&deleted);
	paths_free(&found);
	paths_free(&gone);
	tl_ice_table_free(before);
	tl_ice_table_free(t);
}

TEST(orphan_files_finds_strays_never_referenced_files_of_a_path_table)
{
	char dir[PATH_MAX];
	fresh_dir(dir);
	check_orphans(dir, dir);
	remove_dir(dir);
}

TEST(orphan_files_finds_strays_never_referenced_files_of_a_file_uri_table)
{
	char dir[PATH_MAX], uri[PATH_MAX + 16];
	fresh_dir(dir);
	snprintf(uri, sizeof(uri), "file://%s", dir);
	check_orphans(uri, dir);
	remove_dir(dir);
}
