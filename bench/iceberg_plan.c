/*
 * iceberg_plan.c: scan-planning speed of the lake library on a table with
 * 1,000 snapshots and 10,000 data files, for comparison with pyiceberg
 * (bench/iceberg_plan_peer.py runs both and prints the ratio).
 *
 *   iceberg_plan generate DIR         writes the table into DIR (must not exist)
 *   iceberg_plan plan METADATA_JSON [FILTER] [--repeat N]
 *
 * The table: columns id long, ts timestamp, payload string; partitioned by
 * day(ts). Snapshot k (0..999) is a fast append of one manifest with 10
 * files, all in day k/10 from 2024-01-01, so each of the 100 days holds 100
 * files; file j (0..99) of a day covers ts in [day + j*864 s, day + (j+1)*864 s)
 * and global file g covers id in [g*1000, g*1000+999]. The files are not
 * written: planning never opens them. Manifests and manifest lists are
 * written with the library's writers, the metadata as v1.metadata.json.
 *
 * plan reads and parses the metadata file and plans the current snapshot
 * with the filter (the syntax of tl_ice_expr_parse), N times (default 5),
 * and prints one JSON line: files planned, manifests and skipped counts,
 * and the best and median wall-clock seconds of one metadata read + plan.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_expr.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_metadata.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/io.h"

#define SNAPSHOTS 1000
#define FILES_PER_SNAPSHOT 10
#define SNAPSHOTS_PER_DAY 10
#define FILES_PER_DAY (FILES_PER_SNAPSHOT * SNAPSHOTS_PER_DAY)
#define FIRST_DAY 19723                    /* 2024-01-01 */
#define DAY_MICROS 86400000000LL
#define SLICE_MICROS (DAY_MICROS / FILES_PER_DAY)
#define ROWS_PER_FILE 1000
#define FIRST_SNAPSHOT_ID 3000000000LL
#define FIRST_TIMESTAMP_MS 1704067200000LL

static void die(const char *what, const tl_error *err)
{
	fprintf(stderr, "iceberg_plan: %s: %s\n", what, err ? err->message : strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ generate */

typedef struct generator {
	const char *dir;
	tl_ice_table_metadata *md;
	tl_arena arena;                       /* summaries and paths that outlive their writers */
	tl_ice_manifest_file manifests[SNAPSHOTS];
	int nmanifests;
} generator;

static tl_bytes le64(tl_arena *a, int64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)v >> (8 * i));
	return tl_arena_copy(a, b, 8);
}

static tl_ice_manifest_file keep_summary(generator *g, const tl_ice_manifest_file *s, const char *path)
{
	tl_ice_manifest_file m = *s;
	m.manifest_path = (const char *)tl_arena_copy(&g->arena, path, (uint32_t)strlen(path) + 1).ptr;
	m.partitions = tl_arena_alloc(&g->arena, sizeof(tl_ice_field_summary) * s->n_partitions);
	for (uint32_t i = 0; i < s->n_partitions; i++) {
		m.partitions[i] = s->partitions[i];
		m.partitions[i].lower_bound = tl_arena_copy(&g->arena, s->partitions[i].lower_bound.ptr,
		                                            s->partitions[i].lower_bound.len);
		m.partitions[i].upper_bound = tl_arena_copy(&g->arena, s->partitions[i].upper_bound.ptr,
		                                            s->partitions[i].upper_bound.len);
	}
	return m;
}

/* One data file's manifest entry; its arrays live in `a` (reset per file). */
static void data_entry(int k, int i, const char *dir, tl_arena *a, tl_ice_manifest_entry *e)
{
	static int32_t keys[] = {1, 2, 3};
	int day = FIRST_DAY + k / SNAPSHOTS_PER_DAY;
	int j = (k % SNAPSHOTS_PER_DAY) * FILES_PER_SNAPSHOT + i;
	int64_t g = (int64_t)k * FILES_PER_SNAPSHOT + i;
	int64_t ts_lo = (int64_t)day * DAY_MICROS + j * SLICE_MICROS;

	memset(e, 0, sizeof(*e));
	e->status = TL_ICE_STATUS_ADDED;
	tl_ice_data_file *f = &e->data_file;
	f->content = TL_ICE_CONTENT_DATA;
	char path[512];
	time_t secs = (time_t)day * 86400;
	struct tm tm;
	gmtime_r(&secs, &tm);
	snprintf(path, sizeof(path), "%s/data/ts_day=%04d-%02d-%02d/00000-%d-%08" PRId64 ".parquet", dir,
	         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, k, g);
	f->file_path = (const char *)tl_arena_copy(a, path, (uint32_t)strlen(path) + 1).ptr;
	f->file_format = "PARQUET";
	f->npartition = 1;
	f->partition = tl_arena_alloc(a, sizeof(tl_ice_value));
	memset(f->partition, 0, sizeof(tl_ice_value));
	f->partition[0].v.i32 = day;
	f->record_count = ROWS_PER_FILE;
	f->file_size_in_bytes = 40000 + g % 1000;

	int64_t *sizes = tl_arena_alloc(a, 3 * sizeof(int64_t)), *counts = tl_arena_alloc(a, 3 * sizeof(int64_t));
	int64_t *nulls = tl_arena_alloc(a, 3 * sizeof(int64_t));
	for (int c = 0; c < 3; c++) {
		sizes[c] = 8000 + c;
		counts[c] = ROWS_PER_FILE;
		nulls[c] = 0;
	}
	tl_bytes *lo = tl_arena_alloc(a, 3 * sizeof(tl_bytes)), *hi = tl_arena_alloc(a, 3 * sizeof(tl_bytes));
	lo[0] = le64(a, g * ROWS_PER_FILE);
	hi[0] = le64(a, g * ROWS_PER_FILE + ROWS_PER_FILE - 1);
	lo[1] = le64(a, ts_lo);
	hi[1] = le64(a, ts_lo + SLICE_MICROS - 1);
	lo[2] = tl_arena_copy(a, "aaa", 3);
	hi[2] = tl_arena_copy(a, "zzz", 3);
	f->column_sizes = (tl_ice_long_map){3, keys, sizes};
	f->value_counts = (tl_ice_long_map){3, keys, counts};
	f->null_value_counts = (tl_ice_long_map){3, keys, nulls};
	f->lower_bounds = (tl_ice_bytes_map){3, keys, lo};
	f->upper_bounds = (tl_ice_bytes_map){3, keys, hi};
}

static void write_manifest(generator *g, int k, int64_t snapshot_id)
{
	tl_error err;
	tl_error_clear(&err);
	char path[512];
	snprintf(path, sizeof(path), "%s/metadata/manifest-%04d.avro", g->dir, k);
	tl_output *out = tl_output_create_file(path, 1, &err);
	if (out == NULL)
		die(path, &err);
	tl_ice_manifest_writer *w =
		tl_ice_manifest_writer_open(out, tl_ice_metadata_current_schema(g->md), tl_ice_metadata_default_spec(g->md),
		                            TL_ICE_MANIFEST_DATA, snapshot_id, &err);
	if (w == NULL)
		die(path, &err);
	tl_arena entry_arena;
	tl_arena_init(&entry_arena, 4096);
	for (int i = 0; i < FILES_PER_SNAPSHOT; i++) {
		tl_ice_manifest_entry e;
		data_entry(k, i, g->dir, &entry_arena, &e);
		if (tl_ice_manifest_writer_add(w, &e, &err) < 0)
			die(path, &err);
		tl_arena_reset(&entry_arena);
	}
	tl_arena_free(&entry_arena);
	tl_ice_manifest_file summary;
	if (tl_ice_manifest_writer_close(w, &summary, &err) < 0 || out->finish(out, &err) < 0)
		die(path, &err);
	g->manifests[g->nmanifests++] = keep_summary(g, &summary, path);
	tl_ice_manifest_writer_free(w);
	tl_output_close(out);
}

/* The list of snapshot k: its new manifest first, then the older ones (as Java's fast append). */
static void write_list(generator *g, int k, int64_t snapshot_id, int64_t parent, int64_t seq, char *path,
                       size_t pathlen)
{
	tl_error err;
	tl_error_clear(&err);
	snprintf(path, pathlen, "%s/metadata/snap-%" PRId64 ".avro", g->dir, snapshot_id);
	tl_output *out = tl_output_create_file(path, 1, &err);
	if (out == NULL)
		die(path, &err);
	tl_ice_manifest_list_writer *w = tl_ice_manifest_list_writer_open(out, snapshot_id, parent, seq, &err);
	if (w == NULL)
		die(path, &err);
	for (int m = g->nmanifests - 1; m >= 0; m--)
		if (tl_ice_manifest_list_writer_add(w, &g->manifests[m], &err) < 0)
			die(path, &err);
	if (tl_ice_manifest_list_writer_close(w, &err) < 0 || out->finish(out, &err) < 0)
		die(path, &err);
	tl_ice_manifest_list_writer_free(w);
	tl_output_close(out);
	/* From now on the new manifest has this snapshot's sequence number. */
	g->manifests[g->nmanifests - 1].sequence_number = seq;
	g->manifests[g->nmanifests - 1].min_sequence_number = seq;
}

static tl_ice_kv kv(const char *key, int64_t value)
{
	char text[32];
	snprintf(text, sizeof(text), "%" PRId64, value);
	return (tl_ice_kv){tl_strdup(key), tl_strdup(text)};
}

static void add_snapshot(tl_ice_table_metadata *md, int k, int64_t id, int64_t parent, const char *list)
{
	tl_ice_snapshot *s = &md->snapshots[md->nsnapshots++];
	memset(s, 0, sizeof(*s));
	s->snapshot_id = id;
	s->parent_id = parent;
	s->sequence_number = k + 1;
	s->timestamp_ms = FIRST_TIMESTAMP_MS + (int64_t)k * 60000;
	s->manifest_list = tl_strdup(list);
	s->operation = tl_strdup("append");
	s->schema_id = 0;
	s->nsummary = 6;
	s->summary = tl_calloc(6, sizeof(tl_ice_kv));
	s->summary[0] = kv("added-data-files", FILES_PER_SNAPSHOT);
	s->summary[1] = kv("added-records", FILES_PER_SNAPSHOT * ROWS_PER_FILE);
	s->summary[2] = kv("total-data-files", (int64_t)(k + 1) * FILES_PER_SNAPSHOT);
	s->summary[3] = kv("total-records", (int64_t)(k + 1) * FILES_PER_SNAPSHOT * ROWS_PER_FILE);
	s->summary[4] = kv("total-delete-files", 0);
	s->summary[5] = kv("total-equality-deletes", 0);
	md->snapshot_log[md->nsnapshot_log++] = (tl_ice_snapshot_log_entry){s->timestamp_ms, id};
	md->current_snapshot_id = id;
	md->last_sequence_number = s->sequence_number;
	md->last_updated_ms = s->timestamp_ms;
}

static void write_text(const char *path, const void *data, size_t len)
{
	tl_error err;
	tl_error_clear(&err);
	tl_output *out = tl_output_create_file(path, 1, &err);
	if (out == NULL || tl_output_write(out, data, len, &err) < 0 || out->finish(out, &err) < 0)
		die(path, &err);
	tl_output_close(out);
}

static tl_ice_table_metadata *new_metadata(const char *dir)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "ts", .required = true, .type = {.id = TL_ICE_TIMESTAMP}},
		{.id = 3, .name = "payload", .type = {.id = TL_ICE_STRING}},
	};
	tl_ice_schema schema;
	if (tl_ice_schema_init(&schema, 0, fields, 3, &err) < 0)
		die("schema", &err);
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_partition_spec_add(&spec, 2, 1000, "ts_day", (tl_ice_transform){TL_ICE_DAY, 0});
	tl_ice_table_metadata *md = tl_ice_metadata_create(dir, &schema, &spec, NULL, 0, &err);
	if (md == NULL)
		die("metadata", &err);
	tl_ice_partition_spec_free(&spec);
	tl_ice_schema_free(&schema);
	md->snapshots = tl_calloc(SNAPSHOTS, sizeof(tl_ice_snapshot));
	md->snapshot_log = tl_calloc(SNAPSHOTS, sizeof(tl_ice_snapshot_log_entry));
	return md;
}

static int generate(const char *dir)
{
	char path[600];
	if (mkdir(dir, 0777) != 0)
		die(dir, NULL);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	if (mkdir(path, 0777) != 0)
		die(path, NULL);
	generator *g = tl_calloc(1, sizeof(*g));
	g->dir = dir;
	g->md = new_metadata(dir);
	tl_arena_init(&g->arena, 1 << 16);
	int64_t parent = TL_ICE_NO_SNAPSHOT;
	for (int k = 0; k < SNAPSHOTS; k++) {
		int64_t id = FIRST_SNAPSHOT_ID + k;
		write_manifest(g, k, id);
		write_list(g, k, id, parent, k + 1, path, sizeof(path));
		add_snapshot(g->md, k, id, parent, path);
		parent = id;
	}
	tl_ice_table_metadata *md = g->md;
	md->refs = tl_calloc(1, sizeof(tl_ice_ref));
	md->refs[0] = (tl_ice_ref){tl_strdup("main"), md->current_snapshot_id, true, -1, -1, -1};
	md->nrefs = 1;

	tl_error err;
	tl_error_clear(&err);
	tl_buf json;
	tl_buf_init(&json);
	if (tl_ice_metadata_write(md, &json, &err) < 0)
		die("metadata", &err);
	snprintf(path, sizeof(path), "%s/metadata/v1.metadata.json", dir);
	write_text(path, json.data, json.len);
	snprintf(path, sizeof(path), "%s/metadata/version-hint.text", dir);
	write_text(path, "1", 1);
	printf("{\"snapshots\": %d, \"data_files\": %d, \"metadata\": \"%s/metadata/v1.metadata.json\"}\n", SNAPSHOTS,
	       SNAPSHOTS * FILES_PER_SNAPSHOT, dir);
	tl_buf_free(&json);
	tl_ice_metadata_free(md);
	tl_arena_free(&g->arena);
	free(g);
	return 0;
}

/* ---------------------------------------------------------------- plan */

static tl_ice_table_metadata *load_metadata(const char *path, tl_buf *text, tl_error *err)
{
	tl_input *in = tl_input_open_file(path, err);
	if (in == NULL)
		return NULL;
	tl_buf_reset(text);
	int rc = tl_input_read(in, 0, tl_buf_extend(text, (size_t)in->size), (size_t)in->size, err);
	tl_input_close(in);
	return rc < 0 ? NULL : tl_ice_metadata_parse((const char *)text->data, text->len, err);
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int plan(const char *metadata, const char *filter_text, int repeat)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf text;
	tl_buf_init(&text);
	double *times = tl_calloc((size_t)repeat, sizeof(double));
	tl_ice_scan_stats stats = {0};
	int files = 0;
	for (int r = 0; r < repeat; r++) {
		double start = now();
		tl_ice_table_metadata *md = load_metadata(metadata, &text, &err);
		if (md == NULL)
			die(metadata, &err);
		tl_arena arena;
		tl_arena_init(&arena, 4096);
		const tl_ice_expr *filter = NULL;
		if (filter_text != NULL &&
		    tl_ice_expr_parse(tl_ice_metadata_current_schema(md), filter_text, &arena, &filter, &err) < 0)
			die(filter_text, &err);
		tl_ice_scan *scan = tl_ice_scan_plan(md, TL_ICE_NO_SNAPSHOT, filter, &err);
		if (scan == NULL)
			die("planning", &err);
		times[r] = now() - start;
		files = tl_ice_scan_ntasks(scan);
		stats = *tl_ice_scan_stats_get(scan);
		tl_ice_scan_free(scan);
		tl_arena_free(&arena);
		tl_ice_metadata_free(md);
	}
	qsort(times, (size_t)repeat, sizeof(double), compare_doubles);
	printf("{\"files\": %d, \"manifests\": %" PRId64 ", \"manifests_skipped\": %" PRId64
	       ", \"data_files_skipped\": %" PRId64 ", \"records\": %" PRId64
	       ", \"best_seconds\": %.6f, \"median_seconds\": %.6f, \"repeat\": %d}\n",
	       files, stats.manifests, stats.manifests_skipped, stats.data_files_skipped, stats.records, times[0],
	       times[repeat / 2], repeat);
	free(times);
	tl_buf_free(&text);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: iceberg_plan generate DIR\n"
	                "       iceberg_plan plan METADATA_JSON [FILTER] [--repeat N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "generate") == 0)
		return generate(argv[2]);
	if (argc < 3 || strcmp(argv[1], "plan") != 0)
		return usage();
	const char *filter = NULL;
	int repeat = 5;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
			repeat = atoi(argv[++i]);
		else if (filter == NULL)
			filter = argv[i];
		else
			return usage();
	}
	if (repeat < 1)
		return usage();
	return plan(argv[2], filter, repeat);
}
