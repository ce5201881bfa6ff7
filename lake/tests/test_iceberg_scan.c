/*
 * test_iceberg_scan.c: scan planning (iceberg_scan.h) over tables built in
 * a temporary directory with the manifest, manifest list and metadata
 * writers: snapshots and time travel, pruning by partition summaries,
 * partition tuples and metrics, and the pairing of data files with
 * equality and position deletes by sequence number and partition.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/io.h"
#include "iceberg/scan_internal.h"

#define MAX_LIVE 32

/*
 * A table under construction: metadata in memory, manifests written as
 * files, the manifests of the next snapshot's list in `live` (summaries
 * copied into `arena`, as the writer's own die with it).
 */
typedef struct fixture {
	char dir[64];
	tl_ice_table_metadata *md;
	tl_arena arena;
	tl_ice_manifest_file live[MAX_LIVE];
	int nlive;
	int nwritten;
} fixture;

/* Columns: id long (1), ts timestamp (2), name string (3), cat int (4). */
static void make_schema(tl_ice_schema *schema, int32_t schema_id, bool extra)
{
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "ts", .type = {.id = TL_ICE_TIMESTAMP}},
		{.id = 3, .name = "name", .type = {.id = TL_ICE_STRING}},
		{.id = 4, .name = "cat", .type = {.id = TL_ICE_INT}},
		{.id = 5, .name = "note", .type = {.id = TL_ICE_STRING}},
	};
	if (tl_ice_schema_init(schema, schema_id, fields, extra ? 5 : 4, NULL) < 0)
		abort();
}

/* Spec 0: identity(cat), day(ts), truncate[2](name). Spec 1: unpartitioned. */
static int fixture_init(fixture *f, tl_error *err)
{
	memset(f, 0, sizeof(*f));
	strcpy(f->dir, "/tmp/tl_scan_XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return tl_error_set(err, TL_ERR_IO, "mkdtemp failed");
	tl_arena_init(&f->arena, 4096);
	tl_ice_schema schema;
	make_schema(&schema, 0, false);
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_partition_spec_add(&spec, 4, 1000, "cat", (tl_ice_transform){TL_ICE_IDENTITY, 0});
	tl_ice_partition_spec_add(&spec, 2, 1001, "ts_day", (tl_ice_transform){TL_ICE_DAY, 0});
	tl_ice_partition_spec_add(&spec, 3, 1002, "name_trunc", (tl_ice_transform){TL_ICE_TRUNCATE, 2});
	f->md = tl_ice_metadata_create(f->dir, &schema, &spec, NULL, 0, err);
	tl_ice_partition_spec_free(&spec);
	tl_ice_schema_free(&schema);
	if (f->md == NULL)
		return -1;
	f->md->specs = tl_realloc(f->md->specs, 2 * sizeof(tl_ice_partition_spec));
	tl_ice_partition_spec_init(&f->md->specs[1], 1);
	f->md->nspecs = 2;
	return 0;
}

static void fixture_free(fixture *f)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->dir);
	tl_ice_metadata_free(f->md);
	tl_arena_free(&f->arena);
}

static int64_t next_snapshot_id(const fixture *f) { return 1000 + f->md->nsnapshots + 1; }

static tl_bytes long_bound(fixture *f, int64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)v >> (8 * i));
	return tl_arena_copy(&f->arena, b, 8);
}

/* Describes one file for add_manifest. */
typedef struct file_spec {
	const char *path;
	int content;                 /* TL_ICE_CONTENT_* */
	int32_t cat;                 /* partition (spec 0) */
	int64_t day;
	const char *name;
	int64_t id_lo, id_hi;        /* bounds on id; lo > hi: none */
	const char *path_lo, *path_hi; /* position deletes: file_path bounds */
	int status;                  /* TL_ICE_STATUS_*; ADDED by default (0 means EXISTING, so set it) */
	int64_t seq;                 /* for EXISTING and DELETED */
} file_spec;

static void fill_entry(fixture *f, const file_spec *fs, int32_t spec_id, tl_ice_manifest_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->status = fs->status;
	if (fs->status != TL_ICE_STATUS_ADDED) {
		e->has_sequence_number = e->has_file_sequence_number = true;
		e->sequence_number = e->file_sequence_number = fs->seq;
		e->has_snapshot_id = true;
		e->snapshot_id = 1000 + fs->seq;
	}
	tl_ice_data_file *d = &e->data_file;
	d->content = fs->content;
	d->file_path = fs->path;
	d->file_format = "PARQUET";
	d->record_count = 10;
	d->file_size_in_bytes = 1000;
	if (spec_id == 0) {
		d->npartition = 3;
		d->partition = tl_arena_alloc(&f->arena, 3 * sizeof(tl_ice_value));
		memset(d->partition, 0, 3 * sizeof(tl_ice_value));
		d->partition[0].v.i32 = fs->cat;
		d->partition[1].v.i32 = (int32_t)fs->day;
		d->partition[2].ptr = (const uint8_t *)fs->name;
		d->partition[2].len = strnlen(fs->name, 2);
	}
	int32_t *keys = tl_arena_alloc(&f->arena, sizeof(int32_t));
	tl_bytes *lo = tl_arena_alloc(&f->arena, sizeof(tl_bytes)), *hi = tl_arena_alloc(&f->arena, sizeof(tl_bytes));
	if (fs->id_lo <= fs->id_hi) {
		keys[0] = 1;
		*lo = long_bound(f, fs->id_lo);
		*hi = long_bound(f, fs->id_hi);
	} else if (fs->path_lo) {
		keys[0] = 2147483546;
		*lo = tl_arena_copy(&f->arena, fs->path_lo, (uint32_t)strlen(fs->path_lo));
		*hi = tl_arena_copy(&f->arena, fs->path_hi, (uint32_t)strlen(fs->path_hi));
	} else {
		return;
	}
	d->lower_bounds = (tl_ice_bytes_map){1, keys, lo};
	d->upper_bounds = (tl_ice_bytes_map){1, keys, hi};
	if (fs->content == TL_ICE_CONTENT_EQUALITY_DELETES) {
		d->n_equality_ids = 1;
		d->equality_ids = keys;
	}
}

static void copy_summary(fixture *f, const tl_ice_manifest_file *src, const char *path, tl_ice_manifest_file *dst)
{
	*dst = *src;
	dst->manifest_path = (const char *)tl_arena_copy(&f->arena, path, (uint32_t)strlen(path) + 1).ptr;
	dst->partitions = src->n_partitions ? tl_arena_alloc(&f->arena, sizeof(tl_ice_field_summary) * src->n_partitions)
	                                    : NULL;
	for (uint32_t i = 0; i < src->n_partitions; i++) {
		dst->partitions[i] = src->partitions[i];
		dst->partitions[i].lower_bound = tl_arena_copy(&f->arena, src->partitions[i].lower_bound.ptr,
		                                               src->partitions[i].lower_bound.len);
		dst->partitions[i].upper_bound = tl_arena_copy(&f->arena, src->partitions[i].upper_bound.ptr,
		                                               src->partitions[i].upper_bound.len);
	}
}

/* Writes a manifest of the files for the next snapshot and adds it to the live list. */
static int add_manifest(fixture *f, int32_t spec_id, int content, const file_spec *files, int n, tl_error *err)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/m%d.avro", f->dir, f->nwritten++);
	tl_output *out = tl_output_create_file(path, 1, err);
	if (out == NULL)
		return -1;
	const tl_ice_partition_spec *spec = tl_ice_metadata_spec(f->md, spec_id);
	tl_ice_manifest_writer *w = tl_ice_manifest_writer_open(out, tl_ice_metadata_current_schema(f->md), spec,
	                                                        content, next_snapshot_id(f), err);
	int rc = w ? 0 : -1;
	for (int i = 0; rc == 0 && i < n; i++) {
		tl_ice_manifest_entry e;
		fill_entry(f, &files[i], spec_id, &e);
		rc = tl_ice_manifest_writer_add(w, &e, err);
	}
	tl_ice_manifest_file summary;
	if (rc == 0)
		rc = tl_ice_manifest_writer_close(w, &summary, err);
	if (rc == 0)
		rc = out->finish(out, err);
	if (rc == 0 && f->nlive < MAX_LIVE)
		copy_summary(f, &summary, path, &f->live[f->nlive++]);
	tl_ice_manifest_writer_free(w);
	tl_output_close(out);
	return rc;
}

static void drop_live(fixture *f, int i)
{
	memmove(&f->live[i], &f->live[i + 1], sizeof(f->live[0]) * (size_t)(f->nlive - i - 1));
	f->nlive--;
}

/* Writes the manifest list of `live` and makes it the new current snapshot. */
static int64_t commit(fixture *f, tl_error *err)
{
	tl_ice_table_metadata *md = f->md;
	int64_t id = next_snapshot_id(f), seq = md->last_sequence_number + 1;
	char path[128];
	snprintf(path, sizeof(path), "%s/snap-%lld.avro", f->dir, (long long)id);
	tl_output *out = tl_output_create_file(path, 1, err);
	if (out == NULL)
		return -1;
	tl_ice_manifest_list_writer *w = tl_ice_manifest_list_writer_open(out, id, md->current_snapshot_id, seq, err);
	int rc = w ? 0 : -1;
	for (int i = 0; rc == 0 && i < f->nlive; i++)
		rc = tl_ice_manifest_list_writer_add(w, &f->live[i], err);
	if (rc == 0)
		rc = tl_ice_manifest_list_writer_close(w, err);
	if (rc == 0)
		rc = out->finish(out, err);
	tl_ice_manifest_list_writer_free(w);
	tl_output_close(out);
	if (rc < 0)
		return -1;
	for (int i = 0; i < f->nlive; i++) {
		if (f->live[i].sequence_number == -1)
			f->live[i].sequence_number = seq;
		if (f->live[i].min_sequence_number == -1)
			f->live[i].min_sequence_number = seq;
	}
	md->snapshots = tl_realloc(md->snapshots, sizeof(tl_ice_snapshot) * (size_t)(md->nsnapshots + 1));
	tl_ice_snapshot *s = &md->snapshots[md->nsnapshots++];
	memset(s, 0, sizeof(*s));
	s->snapshot_id = id;
	s->parent_id = md->current_snapshot_id;
	s->sequence_number = seq;
	s->manifest_list = tl_strdup(path);
	s->operation = tl_strdup("append");
	s->schema_id = md->current_schema_id;
	md->current_snapshot_id = id;
	md->last_sequence_number = seq;
	return id;
}

/* Round-trips the metadata through JSON, as a reader of the table would see it. */
static tl_ice_table_metadata *reread(const fixture *f, tl_error *err)
{
	tl_buf json;
	tl_buf_init(&json);
	tl_ice_table_metadata *md = NULL;
	if (tl_ice_metadata_write(f->md, &json, err) == 0)
		md = tl_ice_metadata_parse((const char *)json.data, json.len, err);
	tl_buf_free(&json);
	return md;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The task's file name and delete names, "d1:e2,p3", for compact checks. */
static void describe(const tl_ice_scan *scan, tl_buf *out)
{
	tl_buf_reset(out);
	for (int i = 0; i < tl_ice_scan_ntasks(scan); i++) {
		const tl_ice_scan_task *t = tl_ice_scan_task_at(scan, i);
		const char *slash = strrchr(t->file.file_path, '/');
		tl_buf_printf(out, "%s%s", i ? " " : "", slash ? slash + 1 : t->file.file_path);
		for (int j = 0; j < t->ndeletes; j++) {
			const char *p = t->deletes[j]->file.file_path;
			const char *s = strrchr(p, '/');
			tl_buf_printf(out, "%c%s", j ? ',' : ':', s ? s + 1 : p);
		}
	}
	tl_buf_append_byte(out, 0);
	out->len--;
}

static int parse(const fixture *f, const char *text, tl_arena *arena, const tl_ice_expr **out, tl_error *err)
{
	return tl_ice_expr_parse(tl_ice_metadata_current_schema(f->md), text, arena, out, err);
}

#define DATA(p, c, d, n, lo, hi) {.path = p, .content = TL_ICE_CONTENT_DATA, .cat = c, .day = d, .name = n, \
                                  .id_lo = lo, .id_hi = hi, .status = TL_ICE_STATUS_ADDED}

/* ------------------------------------------------------------- tests */

TEST(iceberg_scan_snapshots)
{
	tl_error err;
	tl_error_clear(&err);
	fixture f;
	CHECK_OK(fixture_init(&f, &err), &err);

	/* A table without snapshots plans nothing. */
	tl_ice_scan *scan = tl_ice_scan_plan(f.md, TL_ICE_NO_SNAPSHOT, NULL, &err);
	CHECK(scan != NULL);
	CHECK_INT(tl_ice_scan_ntasks(scan), 0);
	CHECK_INT(tl_ice_scan_snapshot_id(scan), 0);
	CHECK_INT(tl_ice_scan_schema(scan)->nfields, 4);
	tl_ice_scan_free(scan);

	file_spec a[] = {DATA("/d/a1", 1, 19000, "ab", 1, 10), DATA("/d/a2", 2, 19000, "cd", 11, 20)};
	file_spec b[] = {DATA("/d/b1", 1, 19001, "ab", 21, 30)};
	file_spec c[] = {DATA("/d/c1", 3, 19002, "xy", 31, 40), DATA("/d/c2", 3, 19002, "xy", 41, 50),
	                 DATA("/d/c3", 4, 19003, "zz", 51, 60)};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, a, 2, &err), &err);
	int64_t s1 = commit(&f, &err);
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, b, 1, &err), &err);
	int64_t s2 = commit(&f, &err);
	/* A later schema with one more column, used from the third snapshot on. */
	f.md->schemas = tl_realloc(f.md->schemas, 2 * sizeof(tl_ice_schema));
	make_schema(&f.md->schemas[1], 1, true);
	f.md->nschemas = 2;
	f.md->current_schema_id = 1;
	f.md->last_column_id = 5;
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, c, 3, &err), &err);
	int64_t s3 = commit(&f, &err);
	CHECK(s1 > 0 && s2 > 0 && s3 > 0);
	f.md->snapshots[0].schema_id = -1;  /* names none: the current schema applies */

	tl_ice_table_metadata *md = reread(&f, &err);
	CHECK_OK(md ? 0 : -1, &err);
	tl_buf text;
	tl_buf_init(&text);

	scan = tl_ice_scan_plan(md, TL_ICE_NO_SNAPSHOT, NULL, &err);
	CHECK_OK(scan ? 0 : -1, &err);
	CHECK_INT(tl_ice_scan_snapshot_id(scan), s3);
	CHECK_INT(tl_ice_scan_schema(scan)->schema_id, 1);
	describe(scan, &text);
	CHECK_STR((char *)text.data, "a1 a2 b1 c1 c2 c3");
	const tl_ice_scan_stats *st = tl_ice_scan_stats_get(scan);
	CHECK_INT(st->manifests, 3);
	CHECK_INT(st->manifests_skipped, 0);
	CHECK_INT(st->data_files, 6);
	CHECK_INT(st->data_files_skipped, 0);
	CHECK_INT(st->records, 60);
	const tl_ice_scan_task *t = tl_ice_scan_task_at(scan, 2);
	CHECK_INT(t->sequence_number, 2);
	CHECK_INT(t->spec_id, 0);
	CHECK_INT(t->file.npartition, 3);
	CHECK_INT(t->file.partition[0].v.i32, 1);
	CHECK_INT(t->file.partition[1].v.i32, 19001);
	CHECK_INT(t->file.partition[2].len, 2);
	CHECK(memcmp(t->file.partition[2].ptr, "ab", 2) == 0);
	CHECK_INT(t->file.lower_bounds.n, 1);
	CHECK_STR(t->file.file_format, "PARQUET");
	CHECK(tl_ice_scan_spec(scan, 0) != NULL && tl_ice_scan_spec(scan, 0)->nfields == 3);
	CHECK(tl_ice_scan_spec(scan, 1) != NULL && tl_ice_scan_spec(scan, 7) == NULL);
	CHECK(tl_ice_scan_task_at(scan, 6) == NULL);
	tl_ice_scan_free(scan);

	/* Time travel: the second snapshot, with its own schema. */
	scan = tl_ice_scan_plan(md, s2, NULL, &err);
	CHECK_OK(scan ? 0 : -1, &err);
	CHECK_INT(tl_ice_scan_snapshot_id(scan), s2);
	CHECK_INT(tl_ice_scan_schema(scan)->schema_id, 0);
	describe(scan, &text);
	CHECK_STR((char *)text.data, "a1 a2 b1");
	CHECK_INT(tl_ice_scan_stats_get(scan)->manifests, 2);
	tl_ice_scan_free(scan);

	/* The first names no schema: the current one. */
	scan = tl_ice_scan_plan(md, s1, NULL, &err);
	CHECK_OK(scan ? 0 : -1, &err);
	CHECK_INT(tl_ice_scan_schema(scan)->schema_id, 1);
	CHECK_INT(tl_ice_scan_ntasks(scan), 2);
	tl_ice_scan_free(scan);

	tl_error_clear(&err);
	CHECK(tl_ice_scan_plan(md, 424242, NULL, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	CHECK(strstr(err.message, "424242") != NULL);

	tl_buf_free(&text);
	tl_ice_metadata_free(md);
	fixture_free(&f);
}

TEST(iceberg_scan_partition_pruning)
{
	tl_error err;
	tl_error_clear(&err);
	fixture f;
	CHECK_OK(fixture_init(&f, &err), &err);
	/* Manifest 1: cat 1 only, days 19000-19001. Manifest 2: cat 2-3, day 19005. Manifest 3: cat 1 and 5. */
	file_spec m1[] = {DATA("/d/p1", 1, 19000, "apple", 0, 9), DATA("/d/p2", 1, 19001, "banana", 10, 19)};
	file_spec m2[] = {DATA("/d/p3", 2, 19005, "apricot", 20, 29), DATA("/d/p4", 3, 19005, "cherry", 30, 39)};
	file_spec m3[] = {DATA("/d/p5", 1, 19010, "abc", 40, 49), DATA("/d/p6", 5, 19010, "berry", 50, 59),
	                  DATA("/d/p7", 5, 19011, "apex", 60, 69)};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, m1, 2, &err), &err);
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, m2, 2, &err), &err);
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, m3, 3, &err), &err);
	CHECK(commit(&f, &err) > 0);

	struct {
		const char *filter, *want;
		int manifests_skipped, files_skipped;
	} cases[] = {
		{NULL, "p1 p2 p3 p4 p5 p6 p7", 0, 0},
		/* identity: manifest 2 ruled out by its summaries, p6 and p7 by their tuples */
		{"cat = 1", "p1 p2 p5", 1, 2},
		{"cat IN (2, 3)", "p3 p4", 1, 3},
		{"cat = 9", "", 3, 0},
		/* day: day 19005 is 2022-01-13 */
		{"ts >= '2022-01-13T00:00:00'", "p3 p4 p5 p6 p7", 1, 0},
		{"ts < '2022-01-09T12:00:00'", "p1 p2", 2, 0},
		{"ts = '2022-01-18T05:00:00'", "p5 p6", 2, 1},
		/* truncate[2]: only the first two characters are known */
		{"name = 'apricot'", "p1 p3 p7", 0, 4},
		{"name >= 'c'", "p4", 2, 1},
		{"cat = 1 AND name = 'banana'", "p2", 1, 4},
		{"cat = 2 OR name = 'abc'", "p3 p5", 1, 3},
		/* metrics: bounds on id */
		{"id >= 45 AND id < 62", "p5 p6 p7", 0, 4},
		{"id IN (5, 55)", "p1 p6", 0, 5},
		{"id < 0", "", 0, 7},
		{"cat = 1 AND id > 15", "p2 p5", 1, 3},
	};
	tl_buf text;
	tl_buf_init(&text);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const tl_ice_expr *filter = NULL;
		if (cases[i].filter != NULL)
			CHECK_OK(parse(&f, cases[i].filter, &arena, &filter, &err), &err);
		tl_ice_scan *scan = tl_ice_scan_plan(f.md, TL_ICE_NO_SNAPSHOT, filter, &err);
		CHECK_OK(scan ? 0 : -1, &err);
		describe(scan, &text);
		const tl_ice_scan_stats *st = tl_ice_scan_stats_get(scan);
		if (strcmp((char *)text.data, cases[i].want) != 0 || st->manifests_skipped != cases[i].manifests_skipped ||
		    st->data_files_skipped != cases[i].files_skipped)
			fprintf(stderr, "    with filter %s\n", cases[i].filter ? cases[i].filter : "(none)");
		CHECK_STR((char *)text.data, cases[i].want);
		CHECK_INT(st->manifests, 3);
		CHECK_INT(st->manifests_skipped, cases[i].manifests_skipped);
		CHECK_INT(st->data_files_skipped, cases[i].files_skipped);
		CHECK_INT(st->data_files - st->data_files_skipped, tl_ice_scan_ntasks(scan));
		CHECK_INT(st->records, 10 * tl_ice_scan_ntasks(scan));
		CHECK((tl_ice_scan_filter(scan) != NULL) == (filter != NULL));
		tl_ice_scan_free(scan);
	}
	tl_arena_free(&arena);
	tl_buf_free(&text);
	fixture_free(&f);
}

#define EQDEL(p, c, d, n) {.path = p, .content = TL_ICE_CONTENT_EQUALITY_DELETES, .cat = c, .day = d, .name = n, \
                           .id_lo = 1, .id_hi = 0, .status = TL_ICE_STATUS_ADDED}
#define POSDEL(p, c, d, n, lo, hi) {.path = p, .content = TL_ICE_CONTENT_POSITION_DELETES, .cat = c, .day = d, \
                                    .name = n, .id_lo = 1, .id_hi = 0, .path_lo = lo, .path_hi = hi,        \
                                    .status = TL_ICE_STATUS_ADDED}

static int plan_text(const tl_ice_table_metadata *md, int64_t snapshot, const tl_ice_expr *filter, tl_buf *text,
                     tl_ice_scan_stats *stats, tl_error *err)
{
	tl_ice_scan *scan = tl_ice_scan_plan(md, snapshot, filter, err);
	if (scan == NULL)
		return -1;
	describe(scan, text);
	*stats = *tl_ice_scan_stats_get(scan);
	tl_ice_scan_free(scan);
	return 0;
}

TEST(iceberg_scan_equality_deletes)
{
	tl_error err;
	tl_error_clear(&err);
	fixture f;
	CHECK_OK(fixture_init(&f, &err), &err);
	tl_buf text;
	tl_buf_init(&text);
	tl_ice_scan_stats st;

	/* seq 1: d1 in cat 1; d9 in cat 2 */
	file_spec s1[] = {DATA("/d/d1", 1, 19000, "ab", 0, 9), DATA("/d/d9", 2, 19000, "ab", 0, 9)};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s1, 2, &err), &err);
	CHECK(commit(&f, &err) > 0);
	/* seq 2, a row delta: d2 and e2 in cat 1. e2 applies to d1, not to d2 of its own commit. */
	file_spec s2d[] = {DATA("/d/d2", 1, 19000, "ab", 10, 19)};
	file_spec s2e[] = {EQDEL("/d/e2", 1, 19000, "ab")};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s2d, 1, &err), &err);
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DELETES, s2e, 1, &err), &err);
	int64_t snap2 = commit(&f, &err);
	CHECK(snap2 > 0);
	CHECK_OK(plan_text(f.md, TL_ICE_NO_SNAPSHOT, NULL, &text, &st, &err), &err);
	CHECK_STR((char *)text.data, "d1:e2 d9 d2");
	CHECK_INT(st.delete_files, 1);
	CHECK_INT(st.manifests, 3);

	/* seq 3: e3 in the same cat but another day: another partition, applies to nothing. */
	file_spec s3[] = {EQDEL("/d/e3", 1, 19001, "ab")};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DELETES, s3, 1, &err), &err);
	CHECK(commit(&f, &err) > 0);
	CHECK_OK(plan_text(f.md, TL_ICE_NO_SNAPSHOT, NULL, &text, &st, &err), &err);
	CHECK_STR((char *)text.data, "d1:e2 d9 d2");
	CHECK_INT(st.delete_files, 1);

	/* seq 4: g4 from the unpartitioned spec is global; e4 in cat 1 is newer than both. */
	file_spec s4g[] = {EQDEL("/d/g4", 0, 0, "")};
	file_spec s4e[] = {EQDEL("/d/e4", 1, 19000, "ab")};
	CHECK_OK(add_manifest(&f, 1, TL_ICE_MANIFEST_DELETES, s4g, 1, &err), &err);
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DELETES, s4e, 1, &err), &err);
	CHECK(commit(&f, &err) > 0);
	/* seq 5: d5 is newer than every delete. */
	file_spec s5[] = {DATA("/d/d5", 1, 19000, "ab", 20, 29)};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s5, 1, &err), &err);
	CHECK(commit(&f, &err) > 0);

	tl_ice_table_metadata *md = reread(&f, &err);
	CHECK_OK(md ? 0 : -1, &err);
	CHECK_OK(plan_text(md, TL_ICE_NO_SNAPSHOT, NULL, &text, &st, &err), &err);
	CHECK_STR((char *)text.data, "d1:e2,e4,g4 d9:g4 d2:e4,g4 d5");
	CHECK_INT(st.delete_files, 3);
	CHECK_INT(st.manifests, 7);
	CHECK_INT(st.data_files, 4);

	/* At the older snapshot only e2 exists. */
	CHECK_OK(plan_text(md, snap2, NULL, &text, &st, &err), &err);
	CHECK_STR((char *)text.data, "d1:e2 d9 d2");

	/* A filter ruling out cat 1 keeps the global delete for what remains. */
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	const tl_ice_expr *filter;
	CHECK_OK(parse(&f, "cat = 2", &arena, &filter, &err), &err);
	CHECK_OK(plan_text(md, TL_ICE_NO_SNAPSHOT, filter, &text, &st, &err), &err);
	CHECK_STR((char *)text.data, "d9:g4");
	CHECK_INT(st.delete_files, 1);
	/* Delete manifests are pruned by their summaries too: e2, e3 and e4's are all cat 1, d5's data manifest too. */
	CHECK_INT(st.manifests_skipped, 5);
	tl_arena_free(&arena);

	tl_ice_metadata_free(md);
	tl_buf_free(&text);
	fixture_free(&f);
}

TEST(iceberg_scan_position_deletes)
{
	tl_error err;
	tl_error_clear(&err);
	fixture f;
	CHECK_OK(fixture_init(&f, &err), &err);
	tl_buf text;
	tl_buf_init(&text);
	tl_ice_scan_stats st;

	file_spec s1[] = {DATA("/d/d1", 1, 19000, "ab", 0, 9), DATA("/d/d3", 2, 19000, "ab", 0, 9)};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s1, 2, &err), &err);
	CHECK(commit(&f, &err) > 0);
	/*
	 * seq 2: d2 in d1's partition, with position deletes of the same commit:
	 * p2 names d1 alone by its file_path bounds; q2 has no bounds, so it
	 * applies to both (a position delete applies at an equal sequence number).
	 * r2's bounds are /d/d0 and /d/d15: d1 sorts inside, d2 after them.
	 */
	file_spec s2d[] = {DATA("/d/d2", 1, 19000, "ab", 10, 19)};
	file_spec s2p[] = {POSDEL("/d/p2", 1, 19000, "ab", "/d/d1", "/d/d1"), POSDEL("/d/q2", 1, 19000, "ab", NULL, NULL),
	                   POSDEL("/d/r2", 1, 19000, "ab", "/d/d0", "/d/d15")};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s2d, 1, &err), &err);
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DELETES, s2p, 3, &err), &err);
	CHECK(commit(&f, &err) > 0);
	/* seq 3: an unpartitioned position delete naming d3 applies across partitions. */
	file_spec s3[] = {POSDEL("/d/u3", 0, 0, "", "/d/d3", "/d/d3")};
	CHECK_OK(add_manifest(&f, 1, TL_ICE_MANIFEST_DELETES, s3, 1, &err), &err);
	CHECK(commit(&f, &err) > 0);

	CHECK_OK(plan_text(f.md, TL_ICE_NO_SNAPSHOT, NULL, &text, &st, &err), &err);
	CHECK_STR((char *)text.data, "d1:p2,q2,r2 d3:u3 d2:q2");
	CHECK_INT(st.delete_files, 4);
	tl_buf_free(&text);
	fixture_free(&f);
}

TEST(iceberg_scan_deleted_entries)
{
	tl_error err;
	tl_error_clear(&err);
	fixture f;
	CHECK_OK(fixture_init(&f, &err), &err);
	file_spec s1[] = {DATA("/d/k1", 1, 19000, "ab", 0, 9), DATA("/d/k2", 1, 19000, "ab", 10, 19),
	                  DATA("/d/k3", 1, 19000, "ab", 20, 29)};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s1, 3, &err), &err);
	int64_t snap1 = commit(&f, &err);
	CHECK(snap1 > 0);
	/* A delete of k2: the manifest is rewritten with k2 DELETED and the others EXISTING. */
	file_spec s2[] = {DATA("/d/k1", 1, 19000, "ab", 0, 9), DATA("/d/k2", 1, 19000, "ab", 10, 19),
	                  DATA("/d/k3", 1, 19000, "ab", 20, 29)};
	s2[0].status = s2[2].status = TL_ICE_STATUS_EXISTING;
	s2[1].status = TL_ICE_STATUS_DELETED;
	s2[0].seq = s2[1].seq = s2[2].seq = 1;
	drop_live(&f, 0);
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s2, 3, &err), &err);
	CHECK(commit(&f, &err) > 0);

	tl_buf text;
	tl_buf_init(&text);
	tl_ice_scan_stats st;
	CHECK_OK(plan_text(f.md, TL_ICE_NO_SNAPSHOT, NULL, &text, &st, &err), &err);
	CHECK_STR((char *)text.data, "k1 k3");
	CHECK_INT(st.data_files, 2);
	CHECK_INT(st.records, 20);
	CHECK_OK(plan_text(f.md, snap1, NULL, &text, &st, &err), &err);
	CHECK_STR((char *)text.data, "k1 k2 k3");
	tl_buf_free(&text);
	fixture_free(&f);
}

/* An old v1 snapshot lists its manifests itself; they read as sequence number 0. */
TEST(iceberg_scan_v1_manifests)
{
	tl_error err;
	tl_error_clear(&err);
	fixture f;
	CHECK_OK(fixture_init(&f, &err), &err);
	file_spec s1[] = {DATA("/d/v1", 1, 19000, "ab", 0, 9), DATA("/d/v2", 2, 19000, "ab", 10, 19)};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s1, 2, &err), &err);
	CHECK(commit(&f, &err) > 0);
	tl_ice_snapshot *s = &f.md->snapshots[0];
	free(s->manifest_list);
	s->manifest_list = NULL;
	s->nmanifests = 1;
	s->manifests = tl_malloc(sizeof(char *));
	s->manifests[0] = tl_strdup(f.live[0].manifest_path);
	s->sequence_number = 0;

	tl_arena arena;
	tl_arena_init(&arena, 1024);
	const tl_ice_expr *filter;
	CHECK_OK(parse(&f, "cat = 2", &arena, &filter, &err), &err);
	tl_ice_scan *scan = tl_ice_scan_plan(f.md, TL_ICE_NO_SNAPSHOT, filter, &err);
	CHECK_OK(scan ? 0 : -1, &err);
	CHECK_INT(tl_ice_scan_ntasks(scan), 1);
	CHECK(ends_with(tl_ice_scan_task_at(scan, 0)->file.file_path, "/v2"));
	CHECK_INT(tl_ice_scan_task_at(scan, 0)->sequence_number, 0);
	CHECK_INT(tl_ice_scan_stats_get(scan)->manifests, 1);
	CHECK_INT(tl_ice_scan_stats_get(scan)->data_files_skipped, 1);
	tl_ice_scan_free(scan);
	tl_arena_free(&arena);
	fixture_free(&f);
}

TEST(iceberg_scan_errors)
{
	tl_error err;
	tl_error_clear(&err);
	fixture f;
	CHECK_OK(fixture_init(&f, &err), &err);
	file_spec s1[] = {DATA("/d/x1", 1, 19000, "ab", 0, 9)};
	CHECK_OK(add_manifest(&f, 0, TL_ICE_MANIFEST_DATA, s1, 1, &err), &err);
	CHECK(commit(&f, &err) > 0);
	tl_ice_snapshot *s = &f.md->snapshots[0];
	char *good = s->manifest_list;

	/* A missing manifest list. */
	char path[128];
	snprintf(path, sizeof(path), "%s/no-such-list.avro", f.dir);
	s->manifest_list = path;
	tl_error_clear(&err);
	CHECK(tl_ice_scan_plan(f.md, TL_ICE_NO_SNAPSHOT, NULL, &err) == NULL);
	CHECK(strstr(err.message, "no-such-list.avro") != NULL);

	/* A manifest list that is not Avro. */
	snprintf(path, sizeof(path), "%s/garbage.avro", f.dir);
	FILE *fp = fopen(path, "w");
	CHECK(fp != NULL);
	fputs("this is not an avro file at all", fp);
	fclose(fp);
	tl_error_clear(&err);
	CHECK(tl_ice_scan_plan(f.md, TL_ICE_NO_SNAPSHOT, NULL, &err) == NULL);
	CHECK(err.code == TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "garbage.avro") != NULL);

	/* A manifest that is not Avro, named by a good list. */
	s->manifest_list = good;
	fp = fopen(f.live[0].manifest_path, "w");
	CHECK(fp != NULL);
	fputs("Obj\001 truncated", fp);
	fclose(fp);
	tl_error_clear(&err);
	CHECK(tl_ice_scan_plan(f.md, TL_ICE_NO_SNAPSHOT, NULL, &err) == NULL);
	CHECK(strstr(err.message, f.live[0].manifest_path) != NULL);

	/* A manifest of a spec the metadata lacks. */
	f.live[0].partition_spec_id = 7;
	CHECK(commit(&f, &err) > 0);
	tl_error_clear(&err);
	CHECK(tl_ice_scan_plan(f.md, TL_ICE_NO_SNAPSHOT, NULL, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "spec id 7") != NULL);
	fixture_free(&f);
}

/* ------------------------------------------ delete pairing, randomised */

static uint64_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

/* The rules of iceberg_scan.h, checked pair by pair. */
static bool applies(const tl_ice_scan *scan, const tl_ice_scan_task *t, int ti, int di)
{
	const tl_ice_delete_file *d = &scan->deletes[di];
	bool global = tl_ice_scan_spec_unpartitioned(tl_ice_scan_spec(scan, d->spec_id));
	bool same_partition = d->spec_id == t->spec_id && scan->delete_keys[di].len == scan->task_keys[ti].len &&
	                      memcmp(scan->delete_keys[di].ptr, scan->task_keys[ti].ptr, scan->task_keys[ti].len) == 0;
	if (!global && !same_partition)
		return false;
	if (d->file.content == TL_ICE_CONTENT_EQUALITY_DELETES)
		return d->sequence_number > t->sequence_number;
	if (d->sequence_number < t->sequence_number)
		return false;
	if (d->file.lower_bounds.n == 1 && strcmp((const char *)d->file.lower_bounds.values[0].ptr, t->file.file_path) > 0)
		return false;
	if (d->file.upper_bounds.n == 1 && strcmp((const char *)d->file.upper_bounds.values[0].ptr, t->file.file_path) < 0)
		return false;
	return true;
}

static const char *random_path(tl_arena *a, uint64_t *rng)
{
	char path[32];
	snprintf(path, sizeof(path), "/d/f%03d", (int)(next_random(rng) % 400));
	return (const char *)tl_arena_copy(a, path, (uint32_t)strlen(path) + 1).ptr;
}

TEST(iceberg_scan_delete_pairing_random)
{
	static int32_t path_key = 2147483546;
	tl_error err;
	tl_error_clear(&err);
	uint64_t rng = 42;
	for (int round = 0; round < 20; round++) {
		tl_ice_scan *scan = tl_calloc(1, sizeof(*scan));
		tl_arena_init(&scan->arena, 4096);
		/* Specs 0 and 2 partitioned, 1 unpartitioned, 3 all void (unpartitioned too). */
		scan->nspecs = 4;
		scan->specs = tl_calloc(4, sizeof(tl_ice_partition_spec));
		for (int i = 0; i < 4; i++)
			tl_ice_partition_spec_init(&scan->specs[i], i);
		tl_ice_partition_spec_add(&scan->specs[0], 1, 1000, "a", (tl_ice_transform){TL_ICE_IDENTITY, 0});
		tl_ice_partition_spec_add(&scan->specs[2], 2, 1000, "b", (tl_ice_transform){TL_ICE_DAY, 0});
		tl_ice_partition_spec_add(&scan->specs[3], 2, 1000, "v", (tl_ice_transform){TL_ICE_VOID, 0});
		int ntasks = 1 + (int)(next_random(&rng) % 300), ndeletes = (int)(next_random(&rng) % 200);
		scan->tasks = tl_calloc((size_t)ntasks, sizeof(tl_ice_scan_task));
		scan->task_keys = tl_calloc((size_t)ntasks, sizeof(tl_bytes));
		scan->deletes = tl_calloc((size_t)ndeletes + 1, sizeof(tl_ice_delete_file));
		scan->delete_keys = tl_calloc((size_t)ndeletes + 1, sizeof(tl_bytes));
		scan->ntasks = scan->cap_tasks = ntasks;
		scan->ndeletes = scan->cap_deletes = ndeletes;
		static const char *keys[] = {"k0", "k1", "k2"};
		for (int i = 0; i < ntasks; i++) {
			tl_ice_scan_task *t = &scan->tasks[i];
			t->spec_id = (int32_t)(next_random(&rng) % 4);
			t->sequence_number = 1 + (int64_t)(next_random(&rng) % 12);
			t->file.file_path = random_path(&scan->arena, &rng);
			bool partitioned = t->spec_id == 0 || t->spec_id == 2;
			const char *k = keys[next_random(&rng) % 3];
			scan->task_keys[i] = partitioned ? tl_arena_copy(&scan->arena, k, 2) : (tl_bytes){(const uint8_t *)"", 0};
		}
		for (int i = 0; i < ndeletes; i++) {
			tl_ice_delete_file *d = &scan->deletes[i];
			d->spec_id = (int32_t)(next_random(&rng) % 4);
			d->sequence_number = 1 + (int64_t)(next_random(&rng) % 12);
			d->file.content = next_random(&rng) % 2 ? TL_ICE_CONTENT_POSITION_DELETES : TL_ICE_CONTENT_EQUALITY_DELETES;
			d->file.file_path = random_path(&scan->arena, &rng);
			bool partitioned = d->spec_id == 0 || d->spec_id == 2;
			const char *k = keys[next_random(&rng) % 3];
			scan->delete_keys[i] = partitioned ? tl_arena_copy(&scan->arena, k, 2) : (tl_bytes){(const uint8_t *)"", 0};
			if (d->file.content == TL_ICE_CONTENT_POSITION_DELETES && next_random(&rng) % 3 != 0) {
				const char *lo = random_path(&scan->arena, &rng), *hi = random_path(&scan->arena, &rng);
				if (strcmp(lo, hi) > 0) {
					const char *x = lo;
					lo = hi;
					hi = x;
				}
				tl_bytes *b = tl_arena_alloc(&scan->arena, 2 * sizeof(tl_bytes));
				b[0] = (tl_bytes){(const uint8_t *)lo, (uint32_t)strlen(lo)};
				b[1] = (tl_bytes){(const uint8_t *)hi, (uint32_t)strlen(hi)};
				d->file.lower_bounds = (tl_ice_bytes_map){1, &path_key, &b[0]};
				d->file.upper_bounds = (tl_ice_bytes_map){1, &path_key, &b[1]};
			}
		}
		CHECK_OK(tl_ice_scan_associate_deletes(scan, &err), &err);
		bool *used = tl_calloc((size_t)ndeletes + 1, sizeof(bool));
		int64_t nused = 0;
		for (int ti = 0; ti < ntasks; ti++) {
			const tl_ice_scan_task *t = &scan->tasks[ti];
			int want = 0;
			for (int di = 0; di < ndeletes; di++) {
				if (!applies(scan, t, ti, di))
					continue;
				want++;
				nused += !used[di];
				used[di] = true;
				bool found = false;
				for (int j = 0; j < t->ndeletes; j++)
					found = found || t->deletes[j] == &scan->deletes[di];
				if (!found)
					fprintf(stderr, "    round %d task %d misses delete %d\n", round, ti, di);
				CHECK(found);
			}
			CHECK_INT(t->ndeletes, want);
		}
		CHECK_INT(scan->stats.delete_files, nused);
		free(used);
		tl_ice_scan_free(scan);
	}
}
