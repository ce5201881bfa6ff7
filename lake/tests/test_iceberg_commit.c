/*
 * test_iceberg_commit.c: commits to path-based tables. Appends, row deltas
 * with equality deletes, deletes and replaces are committed, then the new
 * metadata, manifest list and manifests are read back with the library's
 * own readers: snapshot ids, parents, sequence numbers (inherited and
 * explicit), entry statuses, summaries with totals, and what happens when
 * two writers race for the same version. Data files are described by hand;
 * they need not exist for a commit.
 */
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "tierlake/iceberg_table.h"

/* ------------------------------------------------------------ fixtures */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_tree(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void make_temp_dir(char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "/tmp/tl_commit_test_XXXXXX");
	if (mkdtemp(out) == NULL)
		abort();
}

/* id long, name string; partitioned by truncate[10](id) when asked. */
static tl_ice_table *create_table(const char *dir, bool partitioned)
{
	tl_error err;
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "name", .type = {.id = TL_ICE_STRING}},
	};
	if (tl_ice_schema_init(&schema, 0, fields, 2, &err) < 0)
		abort();
	tl_ice_partition_spec_init(&spec, 0);
	if (partitioned)
		tl_ice_partition_spec_add(&spec, 1, 1000, "id_trunc", (tl_ice_transform){TL_ICE_TRUNCATE, 10});
	tl_ice_table *t = tl_ice_table_create(dir, &schema, &spec, NULL, 0, &err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	if (t == NULL) {
		fprintf(stderr, "create_table: %s\n", err.message);
		abort();
	}
	return t;
}

static int32_t column_ids[2] = {1, 2};
static int64_t column_sizes[2] = {40, 60};
static int32_t equality_ids[1] = {1};

static tl_ice_data_file data_file(const char *path, int64_t records, int64_t size)
{
	return (tl_ice_data_file){.content = TL_ICE_CONTENT_DATA, .file_path = path, .file_format = "PARQUET",
	                          .record_count = records, .file_size_in_bytes = size,
	                          .column_sizes = {2, column_ids, column_sizes}};
}

static tl_ice_data_file equality_deletes(const char *path, int64_t records, int64_t size)
{
	tl_ice_data_file f = data_file(path, records, size);
	f.content = TL_ICE_CONTENT_EQUALITY_DELETES;
	f.n_equality_ids = 1;
	f.equality_ids = equality_ids;
	return f;
}

/* What a snapshot's manifest list and manifests say, copied out of the readers. */
typedef struct seen_entry {
	char path[128];
	int status, content, manifest;
	bool raw_has_seq;            /* the sequence number was written, not inherited */
	int64_t snapshot_id, seq, file_seq;
	int npartition;
	int64_t partition0;
	uint32_t n_equality_ids;
} seen_entry;

typedef struct seen {
	int nmanifests;
	char manifest_path[16][PATH_MAX];
	tl_ice_manifest_file mf[16];   /* counts and numbers only */
	int nentries;
	seen_entry e[64];
} seen;

static int load_manifest(seen *s, int k, tl_error *err)
{
	tl_input *in = tl_input_open_uri(s->manifest_path[k], err);
	if (in == NULL)
		return -1;
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, err);
	int rc = r ? 0 : -1;
	const tl_ice_manifest_entry *entry;
	while (rc == 0 && (rc = tl_ice_manifest_reader_next(r, &entry, err)) == 1) {
		rc = 0;
		if (s->nentries == 64)
			abort();
		tl_ice_manifest_entry e = *entry;
		seen_entry *x = &s->e[s->nentries++];
		x->raw_has_seq = e.has_sequence_number;
		if ((rc = tl_ice_manifest_entry_inherit(&e, &s->mf[k], err)) < 0)
			break;
		snprintf(x->path, sizeof(x->path), "%s", e.data_file.file_path);
		x->status = e.status;
		x->content = e.data_file.content;
		x->manifest = k;
		x->snapshot_id = e.snapshot_id;
		x->seq = e.sequence_number;
		x->file_seq = e.file_sequence_number;
		x->npartition = e.data_file.npartition;
		x->partition0 = e.data_file.npartition ? e.data_file.partition[0].v.i64 : 0;
		x->n_equality_ids = e.data_file.n_equality_ids;
	}
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	return rc;
}

static int load_snapshot(const tl_ice_table *t, int64_t snapshot_id, seen *s, tl_error *err)
{
	memset(s, 0, sizeof(*s));
	const tl_ice_snapshot *snap = tl_ice_metadata_snapshot(t->metadata, snapshot_id);
	if (snap == NULL)
		return tl_error_set(err, TL_ERR_NOT_FOUND, "no snapshot %lld", (long long)snapshot_id);
	tl_input *in = tl_input_open_uri(snap->manifest_list, err);
	if (in == NULL)
		return -1;
	tl_ice_manifest_list_reader *r = tl_ice_manifest_list_reader_open(in, err);
	int rc = r ? 0 : -1;
	const tl_ice_manifest_file *mf;
	while (rc == 0 && (rc = tl_ice_manifest_list_reader_next(r, &mf, err)) == 1) {
		rc = 0;
		int k = s->nmanifests++;
		snprintf(s->manifest_path[k], PATH_MAX, "%s", mf->manifest_path);
		s->mf[k] = *mf;
		s->mf[k].manifest_path = s->manifest_path[k];
		s->mf[k].partitions = NULL;
	}
	tl_ice_manifest_list_reader_free(r);
	tl_input_close(in);
	for (int k = 0; rc == 0 && k < s->nmanifests; k++)
		rc = load_manifest(s, k, err);
	return rc;
}

static const seen_entry *find_entry(const seen *s, const char *path)
{
	for (int i = 0; i < s->nentries; i++)
		if (strcmp(s->e[i].path, path) == 0)
			return &s->e[i];
	return NULL;
}

static int count_live(const seen *s)
{
	int n = 0;
	for (int i = 0; i < s->nentries; i++)
		n += s->e[i].status != TL_ICE_STATUS_DELETED;
	return n;
}

static const char *summary(const tl_ice_table *t, int64_t snapshot_id, const char *key)
{
	const tl_ice_snapshot *snap = tl_ice_metadata_snapshot(t->metadata, snapshot_id);
	return snap ? tl_ice_snapshot_summary(snap, key) : NULL;
}

/* Commits files (data or delete by content) with op; removed paths for DELETE and REPLACE. */
static int commit(tl_ice_table *t, tl_ice_operation op, const tl_ice_data_file *add, int nadd,
                  const char *const *remove, int nremove, int64_t *id, tl_error *err)
{
	tl_ice_commit *c = tl_ice_commit_begin(t, op, err);
	if (c == NULL)
		return -1;
	tl_ice_commit_set_summary(c, "tierdb.op-id", "op-test");
	int rc = 0;
	for (int i = 0; rc == 0 && i < nadd; i++)
		rc = tl_ice_commit_add_file(c, &add[i], err);
	for (int i = 0; rc == 0 && i < nremove; i++)
		rc = tl_ice_commit_remove_file(c, remove[i], err);
	if (rc == 0)
		rc = tl_ice_commit_finish(c, id, err);
	tl_ice_commit_free(c);
	return rc;
}

static int count_files(const char *dir)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	DIR *d = opendir(path);
	if (d == NULL)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* ------------------------------------------------------------- appends */

TEST(iceberg_commit_append_two_snapshots)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_data_file first[2] = {data_file("/d/a.parquet", 10, 100), data_file("/d/b.parquet", 5, 50)};
	int64_t id1 = 0, id2 = 0;
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, first, 2, NULL, 0, &id1, &err), &err);
	CHECK(id1 > 0);
	CHECK_INT(t->version, 2);
	CHECK(ends_with(t->metadata_file, "/metadata/v2.metadata.json"));
	CHECK_INT(t->metadata->current_snapshot_id, id1);
	CHECK_INT(t->metadata->last_sequence_number, 1);
	const tl_ice_snapshot *s1 = tl_ice_metadata_snapshot(t->metadata, id1);
	CHECK(s1 != NULL);
	CHECK_INT(s1->parent_id, TL_ICE_NO_SNAPSHOT);
	CHECK_INT(s1->sequence_number, 1);
	CHECK(s1->timestamp_ms >= t->metadata->metadata_log[0].timestamp_ms);
	CHECK_INT(t->metadata->last_updated_ms, s1->timestamp_ms);
	CHECK_STR(s1->operation, "append");
	CHECK_STR(summary(t, id1, "added-data-files"), "2");
	CHECK_STR(summary(t, id1, "added-records"), "15");
	CHECK_STR(summary(t, id1, "added-files-size"), "150");
	CHECK(summary(t, id1, "added-delete-files") == NULL);   /* zero counts are left out */
	CHECK(summary(t, id1, "deleted-data-files") == NULL);
	CHECK_STR(summary(t, id1, "total-records"), "15");
	CHECK_STR(summary(t, id1, "total-data-files"), "2");
	CHECK_STR(summary(t, id1, "total-delete-files"), "0");
	CHECK_STR(summary(t, id1, "total-files-size"), "150");
	CHECK_STR(summary(t, id1, "total-position-deletes"), "0");
	CHECK_STR(summary(t, id1, "total-equality-deletes"), "0");
	CHECK_STR(summary(t, id1, "tierdb.op-id"), "op-test");
	snprintf(path, sizeof(path), "%s/metadata/snap-%lld-1-", dir, (long long)id1);
	CHECK(strncmp(s1->manifest_list, path, strlen(path)) == 0);

	tl_ice_data_file second = data_file("/d/c.parquet", 7, 70);
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, &second, 1, NULL, 0, &id2, &err), &err);
	CHECK(id2 != id1);
	CHECK_INT(t->version, 3);
	const tl_ice_snapshot *s2 = tl_ice_metadata_snapshot(t->metadata, id2);
	CHECK_INT(s2->parent_id, id1);
	CHECK_INT(s2->sequence_number, 2);
	CHECK_INT(t->metadata->last_sequence_number, 2);
	CHECK_STR(summary(t, id2, "added-records"), "7");
	CHECK_STR(summary(t, id2, "total-records"), "22");
	CHECK_STR(summary(t, id2, "total-data-files"), "3");
	CHECK_STR(summary(t, id2, "total-files-size"), "220");

	/* Metadata: both snapshots, logs, main. */
	CHECK_INT(t->metadata->nsnapshots, 2);
	CHECK_INT(t->metadata->nsnapshot_log, 2);
	CHECK_INT(t->metadata->snapshot_log[1].snapshot_id, id2);
	CHECK_INT(t->metadata->nmetadata_log, 2);
	CHECK(ends_with(t->metadata->metadata_log[0].metadata_file, "/metadata/v1.metadata.json"));
	CHECK(ends_with(t->metadata->metadata_log[1].metadata_file, "/metadata/v2.metadata.json"));
	CHECK_INT(t->metadata->nrefs, 1);
	CHECK_STR(t->metadata->refs[0].name, "main");
	CHECK_INT(t->metadata->refs[0].snapshot_id, id2);

	/* The list: the new manifest first, then the carried one as it was. */
	seen s;
	CHECK_OK(load_snapshot(t, id2, &s, &err), &err);
	CHECK_INT(s.nmanifests, 2);
	CHECK_INT(s.mf[0].added_snapshot_id, id2);
	CHECK_INT(s.mf[0].sequence_number, 2);
	CHECK_INT(s.mf[0].min_sequence_number, 2);
	CHECK_INT(s.mf[0].added_files_count, 1);
	CHECK_INT(s.mf[0].added_rows_count, 7);
	CHECK_INT(s.mf[1].added_snapshot_id, id1);
	CHECK_INT(s.mf[1].sequence_number, 1);
	CHECK_INT(s.mf[1].added_files_count, 2);
	CHECK(ends_with(s.manifest_path[0], "-m0.avro"));
	snprintf(path, sizeof(path), "%s/metadata/", dir);
	CHECK(strncmp(s.manifest_path[0], path, strlen(path)) == 0);
	seen s_first;
	CHECK_OK(load_snapshot(t, id1, &s_first, &err), &err);
	CHECK_STR(s.manifest_path[1], s_first.manifest_path[0]);
	CHECK_INT(s.mf[1].manifest_length, s_first.mf[0].manifest_length);

	/* Entries: ADDED, sequence numbers left null and inherited. */
	CHECK_INT(s.nentries, 3);
	const seen_entry *c = find_entry(&s, "/d/c.parquet");
	const seen_entry *a = find_entry(&s, "/d/a.parquet");
	CHECK(c != NULL && a != NULL);
	CHECK_INT(c->status, TL_ICE_STATUS_ADDED);
	CHECK(!c->raw_has_seq);
	CHECK_INT(c->snapshot_id, id2);
	CHECK_INT(c->seq, 2);
	CHECK_INT(c->file_seq, 2);
	CHECK_INT(a->status, TL_ICE_STATUS_ADDED);
	CHECK_INT(a->snapshot_id, id1);
	CHECK_INT(a->seq, 1);
	CHECK_INT(a->file_seq, 1);

	/* The published file parses on its own; the hint names it; reopening finds it. */
	tl_buf text;
	tl_buf_init(&text);
	snprintf(path, sizeof(path), "%s/metadata/v3.metadata.json", dir);
	CHECK_OK(tl_test_load(path, &text, &err), &err);
	tl_ice_table_metadata *md = tl_ice_metadata_parse((const char *)text.data, text.len, &err);
	CHECK(md != NULL);
	CHECK_INT(md->current_snapshot_id, id2);
	CHECK_INT(md->nsnapshots, 2);
	tl_ice_metadata_free(md);
	snprintf(path, sizeof(path), "%s/metadata/version-hint.text", dir);
	CHECK_OK(tl_test_load(path, &text, &err), &err);
	CHECK(text.len == 1 && text.data[0] == '3');
	tl_buf_free(&text);
	tl_ice_table *again = tl_ice_table_open(dir, &err);
	CHECK(again != NULL);
	CHECK_INT(again->version, 3);
	CHECK_INT(again->metadata->current_snapshot_id, id2);
	tl_ice_table_free(again);

	/* A finished commit cannot be finished again. */
	tl_ice_commit *done = tl_ice_commit_begin(t, TL_ICE_OP_APPEND, &err);
	CHECK(done != NULL);
	CHECK_OK(tl_ice_commit_finish(done, NULL, &err), &err);
	CHECK(tl_ice_commit_finish(done, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_ice_commit_free(done);
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(iceberg_commit_rejects_wrong_files)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_commit *c = tl_ice_commit_begin(t, TL_ICE_OP_APPEND, &err);
	CHECK(c != NULL);
	tl_ice_data_file del = equality_deletes("/d/e.parquet", 1, 10);
	CHECK(tl_ice_commit_add_file(c, &del, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	CHECK(strstr(err.message, "/d/e.parquet") != NULL);
	tl_error_clear(&err);
	CHECK(tl_ice_commit_remove_file(c, "/d/a.parquet", &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_ice_commit_free(c);

	c = tl_ice_commit_begin(t, TL_ICE_OP_ROW_DELTA, &err);
	CHECK(c != NULL);
	del.n_equality_ids = 0;
	tl_error_clear(&err);
	CHECK(tl_ice_commit_add_file(c, &del, &err) < 0);
	CHECK(strstr(err.message, "equality_ids") != NULL);
	tl_ice_data_file wrong_arity = data_file("/d/p.parquet", 1, 1);
	tl_ice_value v = {.v.i64 = 1};
	wrong_arity.npartition = 1;
	wrong_arity.partition = &v;
	tl_error_clear(&err);
	CHECK(tl_ice_commit_add_file(c, &wrong_arity, &err) < 0);
	CHECK(strstr(err.message, "partition values") != NULL);
	tl_ice_commit_free(c);

	c = tl_ice_commit_begin(t, TL_ICE_OP_REPLACE, &err);
	CHECK(c != NULL);
	tl_error_clear(&err);
	CHECK(tl_ice_commit_finish(c, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_ice_commit_free(c);
	CHECK_INT(t->version, 1);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* ---------------------------------------------------------- row deltas */

TEST(iceberg_commit_row_delta_with_equality_deletes)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_data_file a = data_file("/d/a.parquet", 10, 100);
	int64_t id1, id2, id3;
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, &a, 1, NULL, 0, &id1, &err), &err);
	tl_ice_data_file delta[2] = {equality_deletes("/d/eq.parquet", 2, 20), data_file("/d/new.parquet", 3, 30)};
	CHECK_OK(commit(t, TL_ICE_OP_ROW_DELTA, delta, 2, NULL, 0, &id2, &err), &err);
	CHECK_STR(tl_ice_metadata_snapshot(t->metadata, id2)->operation, "overwrite");
	CHECK_STR(summary(t, id2, "added-data-files"), "1");
	CHECK_STR(summary(t, id2, "added-records"), "3");
	CHECK_STR(summary(t, id2, "added-delete-files"), "1");
	CHECK_STR(summary(t, id2, "added-equality-delete-files"), "1");
	CHECK_STR(summary(t, id2, "added-equality-deletes"), "2");
	CHECK_STR(summary(t, id2, "added-files-size"), "50");
	CHECK(summary(t, id2, "added-position-delete-files") == NULL);
	CHECK_STR(summary(t, id2, "total-records"), "13");
	CHECK_STR(summary(t, id2, "total-data-files"), "2");
	CHECK_STR(summary(t, id2, "total-delete-files"), "1");
	CHECK_STR(summary(t, id2, "total-equality-deletes"), "2");
	CHECK_STR(summary(t, id2, "total-files-size"), "150");

	/* Data manifests first (new, carried), then the delete manifest. */
	seen s;
	CHECK_OK(load_snapshot(t, id2, &s, &err), &err);
	CHECK_INT(s.nmanifests, 3);
	CHECK_INT(s.mf[0].content, TL_ICE_MANIFEST_DATA);
	CHECK_INT(s.mf[0].added_snapshot_id, id2);
	CHECK_INT(s.mf[1].content, TL_ICE_MANIFEST_DATA);
	CHECK_INT(s.mf[1].added_snapshot_id, id1);
	CHECK_INT(s.mf[2].content, TL_ICE_MANIFEST_DELETES);
	CHECK_INT(s.mf[2].sequence_number, 2);
	CHECK_INT(s.mf[2].added_files_count, 1);
	const seen_entry *eq = find_entry(&s, "/d/eq.parquet");
	CHECK(eq != NULL);
	CHECK_INT(eq->manifest, 2);
	CHECK_INT(eq->content, TL_ICE_CONTENT_EQUALITY_DELETES);
	CHECK_INT(eq->n_equality_ids, 1);
	CHECK_INT(eq->seq, 2);
	CHECK_INT(eq->snapshot_id, id2);
	CHECK_INT(find_entry(&s, "/d/a.parquet")->seq, 1);

	/* Deletes only: a "delete" operation; position deletes counted apart. */
	tl_ice_data_file pos = data_file("/d/pos.parquet", 4, 40);
	pos.content = TL_ICE_CONTENT_POSITION_DELETES;
	CHECK_OK(commit(t, TL_ICE_OP_ROW_DELTA, &pos, 1, NULL, 0, &id3, &err), &err);
	CHECK_STR(tl_ice_metadata_snapshot(t->metadata, id3)->operation, "delete");
	CHECK_STR(summary(t, id3, "added-position-delete-files"), "1");
	CHECK_STR(summary(t, id3, "added-position-deletes"), "4");
	CHECK_STR(summary(t, id3, "total-delete-files"), "2");
	CHECK_STR(summary(t, id3, "total-position-deletes"), "4");
	CHECK_STR(summary(t, id3, "total-equality-deletes"), "2");
	CHECK_OK(load_snapshot(t, id3, &s, &err), &err);
	CHECK_INT(s.nmanifests, 4);
	CHECK_INT(s.mf[2].content, TL_ICE_MANIFEST_DELETES);
	CHECK_INT(s.mf[2].added_snapshot_id, id3);
	CHECK_INT(s.mf[3].added_snapshot_id, id2);
	CHECK_INT(count_live(&s), 4);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* ------------------------------------------------------------- deletes */

TEST(iceberg_commit_delete_files)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_data_file ab[2] = {data_file("/d/a.parquet", 10, 100), data_file("/d/b.parquet", 5, 50)};
	tl_ice_data_file c = data_file("/d/c.parquet", 7, 70);
	int64_t id1, id2, id3, id4, id5;
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, ab, 2, NULL, 0, &id1, &err), &err);
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, &c, 1, NULL, 0, &id2, &err), &err);
	seen before;
	CHECK_OK(load_snapshot(t, id2, &before, &err), &err);

	const char *remove_a[] = {"/d/a.parquet", "/d/a.parquet"};  /* twice: removed once */
	CHECK_OK(commit(t, TL_ICE_OP_DELETE, NULL, 0, remove_a, 2, &id3, &err), &err);
	CHECK_STR(tl_ice_metadata_snapshot(t->metadata, id3)->operation, "delete");
	CHECK_INT(tl_ice_metadata_snapshot(t->metadata, id3)->sequence_number, 3);
	CHECK_STR(summary(t, id3, "deleted-data-files"), "1");
	CHECK_STR(summary(t, id3, "deleted-records"), "10");
	CHECK_STR(summary(t, id3, "removed-files-size"), "100");
	CHECK(summary(t, id3, "added-data-files") == NULL);
	CHECK_STR(summary(t, id3, "total-records"), "12");
	CHECK_STR(summary(t, id3, "total-data-files"), "2");
	CHECK_STR(summary(t, id3, "total-files-size"), "120");

	seen s;
	CHECK_OK(load_snapshot(t, id3, &s, &err), &err);
	CHECK_INT(s.nmanifests, 2);
	/* c's manifest is carried unchanged; a and b's is rewritten by this snapshot. */
	int carried = strcmp(s.manifest_path[0], before.manifest_path[0]) == 0 ? 0 : 1;
	int rewritten = 1 - carried;
	CHECK_STR(s.manifest_path[carried], before.manifest_path[0]);
	CHECK_INT(s.mf[carried].manifest_length, before.mf[0].manifest_length);
	CHECK_INT(s.mf[carried].sequence_number, 2);
	CHECK_INT(s.mf[rewritten].added_snapshot_id, id3);
	CHECK_INT(s.mf[rewritten].sequence_number, 3);
	CHECK_INT(s.mf[rewritten].min_sequence_number, 1);
	CHECK_INT(s.mf[rewritten].deleted_files_count, 1);
	CHECK_INT(s.mf[rewritten].existing_files_count, 1);
	CHECK_INT(s.mf[rewritten].added_files_count, 0);
	const seen_entry *a = find_entry(&s, "/d/a.parquet");
	const seen_entry *b = find_entry(&s, "/d/b.parquet");
	CHECK(a != NULL && b != NULL);
	CHECK_INT(a->status, TL_ICE_STATUS_DELETED);
	CHECK_INT(a->snapshot_id, id3);
	CHECK(a->raw_has_seq);
	CHECK_INT(a->seq, 1);
	CHECK_INT(a->file_seq, 1);
	CHECK_INT(b->status, TL_ICE_STATUS_EXISTING);
	CHECK_INT(b->snapshot_id, id1);
	CHECK(b->raw_has_seq);
	CHECK_INT(b->seq, 1);
	CHECK_INT(count_live(&s), 2);

	/* Removing what is not live names it; the attempt leaves no files behind. */
	int files = count_files(dir);
	tl_error_clear(&err);
	CHECK(commit(t, TL_ICE_OP_DELETE, NULL, 0, remove_a, 1, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	CHECK(strstr(err.message, "/d/a.parquet") != NULL);
	CHECK(strstr(err.message, dir) != NULL);
	CHECK_INT(count_files(dir), files);
	CHECK_INT(t->version, 4);
	tl_error_clear(&err);

	/* Deleting b: the earlier DELETED entry for a is dropped from the rewrite. */
	const char *remove_b[] = {"/d/b.parquet"};
	CHECK_OK(commit(t, TL_ICE_OP_DELETE, NULL, 0, remove_b, 1, &id4, &err), &err);
	CHECK_OK(load_snapshot(t, id4, &s, &err), &err);
	CHECK_INT(s.nmanifests, 2);
	CHECK(find_entry(&s, "/d/a.parquet") == NULL);
	CHECK_INT(find_entry(&s, "/d/b.parquet")->status, TL_ICE_STATUS_DELETED);
	CHECK_INT(count_live(&s), 1);
	CHECK_STR(summary(t, id4, "total-data-files"), "1");

	/* The next commit drops the manifest left without live files. */
	tl_ice_data_file d = data_file("/d/d.parquet", 1, 10);
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, &d, 1, NULL, 0, &id5, &err), &err);
	CHECK_OK(load_snapshot(t, id5, &s, &err), &err);
	CHECK_INT(s.nmanifests, 2);
	CHECK_INT(s.nentries, 2);
	CHECK(find_entry(&s, "/d/c.parquet") != NULL && find_entry(&s, "/d/d.parquet") != NULL);
	CHECK_STR(summary(t, id5, "total-records"), "8");
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(iceberg_commit_delete_in_partitioned_table)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, true);
	tl_ice_value p0 = {.v.i64 = 0}, p10 = {.v.i64 = 10};
	tl_ice_data_file files[2] = {data_file("/d/p0.parquet", 3, 30), data_file("/d/p10.parquet", 4, 40)};
	files[0].npartition = files[1].npartition = 1;
	files[0].partition = &p0;
	files[1].partition = &p10;
	int64_t id1, id2;
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, files, 2, NULL, 0, &id1, &err), &err);
	const char *remove[] = {"/d/p0.parquet"};
	CHECK_OK(commit(t, TL_ICE_OP_DELETE, NULL, 0, remove, 1, &id2, &err), &err);
	seen s;
	CHECK_OK(load_snapshot(t, id2, &s, &err), &err);
	CHECK_INT(s.nmanifests, 1);
	CHECK_INT(s.mf[0].n_partitions, 1);
	const seen_entry *e0 = find_entry(&s, "/d/p0.parquet"), *e10 = find_entry(&s, "/d/p10.parquet");
	CHECK(e0 != NULL && e10 != NULL);
	CHECK_INT(e0->status, TL_ICE_STATUS_DELETED);
	CHECK_INT(e0->npartition, 1);
	CHECK_INT(e0->partition0, 0);
	CHECK_INT(e10->status, TL_ICE_STATUS_EXISTING);
	CHECK_INT(e10->partition0, 10);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* ------------------------------------------------------------ replaces */

TEST(iceberg_commit_replace_files)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_data_file ab[2] = {data_file("/d/a.parquet", 10, 100), data_file("/d/b.parquet", 5, 50)};
	int64_t id1, id2;
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, ab, 2, NULL, 0, &id1, &err), &err);
	tl_ice_data_file merged = data_file("/d/ab.parquet", 15, 120);
	const char *remove[] = {"/d/b.parquet", "/d/a.parquet"};
	CHECK_OK(commit(t, TL_ICE_OP_REPLACE, &merged, 1, remove, 2, &id2, &err), &err);
	CHECK_STR(tl_ice_metadata_snapshot(t->metadata, id2)->operation, "replace");
	CHECK_STR(summary(t, id2, "added-data-files"), "1");
	CHECK_STR(summary(t, id2, "deleted-data-files"), "2");
	CHECK_STR(summary(t, id2, "added-records"), "15");
	CHECK_STR(summary(t, id2, "deleted-records"), "15");
	CHECK_STR(summary(t, id2, "total-records"), "15");
	CHECK_STR(summary(t, id2, "total-data-files"), "1");
	CHECK_STR(summary(t, id2, "total-files-size"), "120");
	seen s;
	CHECK_OK(load_snapshot(t, id2, &s, &err), &err);
	CHECK_INT(count_live(&s), 1);
	const seen_entry *m = find_entry(&s, "/d/ab.parquet");
	CHECK(m != NULL);
	CHECK_INT(m->status, TL_ICE_STATUS_ADDED);
	CHECK_INT(m->seq, 2);
	CHECK_INT(find_entry(&s, "/d/a.parquet")->status, TL_ICE_STATUS_DELETED);
	CHECK_INT(find_entry(&s, "/d/b.parquet")->status, TL_ICE_STATUS_DELETED);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* An overwrite removes files and adds new data and delete files: the rows change (a mirror's TRUNCATE). */
TEST(iceberg_commit_overwrite_files)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_data_file ab[2] = {data_file("/d/a.parquet", 10, 100), equality_deletes("/d/e.parquet", 2, 20)};
	int64_t id1, id2;
	CHECK_OK(commit(t, TL_ICE_OP_ROW_DELTA, ab, 2, NULL, 0, &id1, &err), &err);
	tl_ice_data_file added[2] = {data_file("/d/c.parquet", 3, 30), equality_deletes("/d/f.parquet", 1, 10)};
	const char *remove[] = {"/d/a.parquet", "/d/e.parquet"};
	CHECK_OK(commit(t, TL_ICE_OP_OVERWRITE, added, 2, remove, 2, &id2, &err), &err);
	CHECK_STR(tl_ice_metadata_snapshot(t->metadata, id2)->operation, "overwrite");
	CHECK_STR(summary(t, id2, "added-data-files"), "1");
	CHECK_STR(summary(t, id2, "deleted-data-files"), "1");
	CHECK_STR(summary(t, id2, "total-records"), "3");
	seen s;
	CHECK_OK(load_snapshot(t, id2, &s, &err), &err);
	CHECK_INT(count_live(&s), 2);
	CHECK_INT(find_entry(&s, "/d/a.parquet")->status, TL_ICE_STATUS_DELETED);
	CHECK_INT(find_entry(&s, "/d/e.parquet")->status, TL_ICE_STATUS_DELETED);
	CHECK_INT(find_entry(&s, "/d/c.parquet")->status, TL_ICE_STATUS_ADDED);
	CHECK_INT(find_entry(&s, "/d/f.parquet")->status, TL_ICE_STATUS_ADDED);
	tl_ice_table_free(t);
	remove_tree(dir);
}

/* ----------------------------------------------------------- conflicts */

TEST(iceberg_commit_conflict_then_retry)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_table_free(t);
	tl_ice_table *t1 = tl_ice_table_open(dir, &err), *t2 = tl_ice_table_open(dir, &err);
	CHECK(t1 != NULL && t2 != NULL);

	tl_ice_commit *c2 = tl_ice_commit_begin(t2, TL_ICE_OP_APPEND, &err);
	CHECK(c2 != NULL);
	tl_ice_data_file b = data_file("/d/b.parquet", 5, 50);
	CHECK_OK(tl_ice_commit_add_file(c2, &b, &err), &err);
	tl_ice_commit_set_summary(c2, "tierdb.op-id", "op-2");

	tl_ice_data_file a = data_file("/d/a.parquet", 10, 100);
	int64_t id1, id2;
	CHECK_OK(commit(t1, TL_ICE_OP_APPEND, &a, 1, NULL, 0, &id1, &err), &err);
	int files = count_files(dir);

	CHECK(tl_ice_commit_finish(c2, &id2, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	CHECK(strstr(err.message, "v2.metadata.json") != NULL);
	CHECK(strstr(err.message, dir) != NULL);
	CHECK_INT(count_files(dir), files);
	CHECK_INT(t2->version, 1);

	tl_error_clear(&err);
	CHECK_OK(tl_ice_table_refresh(t2, &err), &err);
	CHECK_INT(t2->version, 2);
	CHECK_OK(tl_ice_commit_finish(c2, &id2, &err), &err);
	tl_ice_commit_free(c2);
	CHECK_INT(t2->version, 3);
	const tl_ice_snapshot *s2 = tl_ice_metadata_snapshot(t2->metadata, id2);
	CHECK_INT(s2->parent_id, id1);
	CHECK_INT(s2->sequence_number, 2);
	CHECK_STR(summary(t2, id2, "total-data-files"), "2");
	CHECK_STR(summary(t2, id2, "tierdb.op-id"), "op-2");
	seen s;
	CHECK_OK(load_snapshot(t2, id2, &s, &err), &err);
	CHECK_INT(count_live(&s), 2);

	/* Two deletes of the same file: the loser, retried on the new base, is told the file went. */
	CHECK_OK(tl_ice_table_refresh(t1, &err), &err);
	tl_ice_commit *d2 = tl_ice_commit_begin(t2, TL_ICE_OP_DELETE, &err);
	CHECK(d2 != NULL);
	CHECK_OK(tl_ice_commit_remove_file(d2, "/d/a.parquet", &err), &err);
	const char *remove_a[] = {"/d/a.parquet"};
	CHECK_OK(commit(t1, TL_ICE_OP_DELETE, NULL, 0, remove_a, 1, NULL, &err), &err);
	CHECK(tl_ice_commit_finish(d2, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	tl_error_clear(&err);
	CHECK_OK(tl_ice_table_refresh(t2, &err), &err);
	CHECK(tl_ice_commit_finish(d2, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	CHECK(strstr(err.message, "no longer live") != NULL);
	tl_ice_commit_free(d2);
	tl_ice_table_free(t1);
	tl_ice_table_free(t2);
	remove_tree(dir);
}

/* ---------------------------------------------------- totals recounted */

TEST(iceberg_commit_totals_from_manifests_when_parent_lacks_them)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_data_file files[2] = {data_file("/d/a.parquet", 10, 100), equality_deletes("/d/e.parquet", 3, 30)};
	int64_t id1, id2;
	CHECK_OK(commit(t, TL_ICE_OP_ROW_DELTA, files, 2, NULL, 0, &id1, &err), &err);

	/* Publish v3: the same metadata with the snapshot's summary stripped to its operation. */
	tl_ice_snapshot *snap = (tl_ice_snapshot *)tl_ice_metadata_snapshot(t->metadata, id1);
	for (int i = 0; i < snap->nsummary; i++) {
		free(snap->summary[i].key);
		free(snap->summary[i].value);
	}
	snap->nsummary = 0;
	tl_buf json;
	tl_buf_init(&json);
	CHECK_OK(tl_ice_metadata_write(t->metadata, &json, &err), &err);
	snprintf(path, sizeof(path), "%s/metadata/v3.metadata.json", dir);
	tl_output *out = tl_output_create_file(path, 1, &err);
	CHECK(out != NULL);
	CHECK_OK(tl_output_write(out, json.data, json.len, &err), &err);
	CHECK_OK(out->finish(out, &err), &err);
	tl_output_close(out);
	tl_buf_free(&json);
	CHECK_OK(tl_ice_table_refresh(t, &err), &err);
	CHECK_INT(t->version, 3);
	CHECK(summary(t, id1, "total-records") == NULL);

	tl_ice_data_file b = data_file("/d/b.parquet", 5, 50);
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, &b, 1, NULL, 0, &id2, &err), &err);
	CHECK_INT(t->version, 4);
	CHECK_STR(summary(t, id2, "total-records"), "15");
	CHECK_STR(summary(t, id2, "total-data-files"), "2");
	CHECK_STR(summary(t, id2, "total-delete-files"), "1");
	CHECK_STR(summary(t, id2, "total-equality-deletes"), "3");
	CHECK_STR(summary(t, id2, "total-files-size"), "180");
	tl_ice_table_free(t);
	remove_tree(dir);
}

TEST(iceberg_commit_remove_delete_file)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	make_temp_dir(dir);
	tl_ice_table *t = create_table(dir, false);
	tl_ice_data_file a = data_file("/d/a.parquet", 10, 100);
	tl_ice_data_file e = equality_deletes("/d/e.parquet", 3, 30);
	int64_t id1, id2, id3, id4;
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, &a, 1, NULL, 0, &id1, &err), &err);
	CHECK_OK(commit(t, TL_ICE_OP_ROW_DELTA, &e, 1, NULL, 0, &id2, &err), &err);
	const char *remove[] = {"/d/e.parquet"};
	CHECK_OK(commit(t, TL_ICE_OP_DELETE, NULL, 0, remove, 1, &id3, &err), &err);
	CHECK_STR(summary(t, id3, "removed-delete-files"), "1");
	CHECK_STR(summary(t, id3, "removed-equality-delete-files"), "1");
	CHECK_STR(summary(t, id3, "removed-equality-deletes"), "3");
	CHECK_STR(summary(t, id3, "removed-files-size"), "30");
	CHECK(summary(t, id3, "deleted-data-files") == NULL);
	CHECK_STR(summary(t, id3, "total-delete-files"), "0");
	CHECK_STR(summary(t, id3, "total-equality-deletes"), "0");
	CHECK_STR(summary(t, id3, "total-records"), "10");
	seen s;
	CHECK_OK(load_snapshot(t, id3, &s, &err), &err);
	CHECK_INT(s.nmanifests, 2);
	CHECK_INT(s.mf[1].content, TL_ICE_MANIFEST_DELETES);
	CHECK_INT(s.mf[1].added_snapshot_id, id3);
	const seen_entry *x = find_entry(&s, "/d/e.parquet");
	CHECK(x != NULL);
	CHECK_INT(x->status, TL_ICE_STATUS_DELETED);
	CHECK_INT(x->content, TL_ICE_CONTENT_EQUALITY_DELETES);
	CHECK_INT(x->n_equality_ids, 1);
	CHECK_INT(x->seq, 2);
	CHECK_OK(commit(t, TL_ICE_OP_APPEND, NULL, 0, NULL, 0, &id4, &err), &err);
	CHECK_OK(load_snapshot(t, id4, &s, &err), &err);
	CHECK_INT(s.nmanifests, 1);
	CHECK_INT(s.mf[0].content, TL_ICE_MANIFEST_DATA);
	CHECK_STR(tl_ice_metadata_snapshot(t->metadata, id4)->operation, "append");
	CHECK_STR(summary(t, id4, "total-records"), "10");
	tl_ice_table_free(t);
	remove_tree(dir);
}
