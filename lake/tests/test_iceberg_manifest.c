/*
 * test_iceberg_manifest.c: manifests and manifest lists. Reads what
 * pyiceberg wrote (lake/tests/data/avro), round-trips partitioned manifests
 * and lists through our writer and reader field by field, and checks that
 * truncated and inconsistent files fail cleanly.
 */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tierlake/avro.h"
#include "tierlake/iceberg_manifest.h"

#define FIXTURES "lake/tests/data/avro/"
#define PY_SNAPSHOT 4472644148593620389LL

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool bytes_eq(tl_bytes b, const void *data, size_t len)
{
	return b.len == len && (len == 0 || memcmp(b.ptr, data, len) == 0);
}

TEST(iceberg_manifest_reads_pyiceberg_manifest)
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(FIXTURES "iceberg_manifest.avro", &err);
	CHECK(in != NULL);
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, &err);
	CHECK(r != NULL);
	CHECK_INT(tl_ice_manifest_reader_format_version(r), 2);
	CHECK_INT(tl_ice_manifest_reader_content(r), TL_ICE_MANIFEST_DATA);
	CHECK_INT(tl_ice_manifest_reader_spec_id(r), 0);
	CHECK_INT(tl_ice_manifest_reader_spec(r)->nfields, 0);
	CHECK(tl_ice_manifest_reader_schema(r) != NULL);
	CHECK_INT(tl_ice_manifest_reader_schema(r)->nfields, 2);

	const tl_ice_manifest_entry *e;
	CHECK_INT(tl_ice_manifest_reader_next(r, &e, &err), 1);
	CHECK_INT(e->status, TL_ICE_STATUS_ADDED);
	CHECK(e->has_snapshot_id);
	CHECK_INT(e->snapshot_id, PY_SNAPSHOT);
	CHECK(!e->has_sequence_number);
	CHECK(!e->has_file_sequence_number);
	const tl_ice_data_file *f = &e->data_file;
	CHECK_INT(f->content, TL_ICE_CONTENT_DATA);
	CHECK(strncmp(f->file_path, "file:///", 8) == 0 && ends_with(f->file_path, ".parquet"));
	CHECK_STR(f->file_format, "PARQUET");
	CHECK_INT(f->npartition, 0);
	CHECK_INT(f->record_count, 3);
	CHECK_INT(f->file_size_in_bytes, 944);
	CHECK_INT(f->column_sizes.n, 2);
	CHECK_INT(f->column_sizes.keys[0], 1);
	CHECK_INT(f->column_sizes.values[0], 125);
	CHECK_INT(f->column_sizes.keys[1], 2);
	CHECK_INT(f->column_sizes.values[1], 92);
	CHECK_INT(f->value_counts.n, 2);
	CHECK_INT(f->value_counts.values[1], 3);
	CHECK_INT(f->null_value_counts.n, 2);
	CHECK_INT(f->null_value_counts.values[0], 0);
	CHECK_INT(f->null_value_counts.values[1], 1);
	CHECK_INT(f->nan_value_counts.n, 0);
	CHECK_INT(f->lower_bounds.n, 2);
	CHECK_INT(f->lower_bounds.keys[1], 2);
	CHECK(bytes_eq(f->lower_bounds.values[1], "Lima", 4));
	CHECK(bytes_eq(f->upper_bounds.values[1], "Oslo", 4));

	/* The id bounds decode through the single-value form as longs 1 and 3. */
	tl_ice_type long_type = {.id = TL_ICE_LONG};
	tl_ice_value lo, hi;
	CHECK_OK(tl_ice_value_deserialize(&long_type, f->lower_bounds.values[0].ptr, f->lower_bounds.values[0].len,
	                                  &lo, &err), &err);
	CHECK_OK(tl_ice_value_deserialize(&long_type, f->upper_bounds.values[0].ptr, f->upper_bounds.values[0].len,
	                                  &hi, &err), &err);
	CHECK_INT(lo.v.i64, 1);
	CHECK_INT(hi.v.i64, 3);
	CHECK_INT(f->n_split_offsets, 1);
	CHECK_INT(f->split_offsets[0], 4);
	CHECK_INT(f->n_equality_ids, 0);
	CHECK(!f->has_sort_order_id);

	/* Inheritance from the list entry: sequence number 1 fills both. */
	tl_ice_manifest_entry copy = *e;
	tl_ice_manifest_file mf = {.added_snapshot_id = 99, .sequence_number = 1};
	CHECK_OK(tl_ice_manifest_entry_inherit(&copy, &mf, &err), &err);
	CHECK_INT(copy.snapshot_id, PY_SNAPSHOT);
	CHECK_INT(copy.sequence_number, 1);
	CHECK_INT(copy.file_sequence_number, 1);

	CHECK_INT(tl_ice_manifest_reader_next(r, &e, &err), 0);
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
}

TEST(iceberg_manifest_reads_pyiceberg_manifest_list)
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(FIXTURES "iceberg_manifest_list.avro", &err);
	CHECK(in != NULL);
	tl_ice_manifest_list_reader *r = tl_ice_manifest_list_reader_open(in, &err);
	CHECK(r != NULL);
	CHECK_INT(tl_ice_manifest_list_reader_format_version(r), 2);
	const tl_ice_manifest_file *m;
	CHECK_INT(tl_ice_manifest_list_reader_next(r, &m, &err), 1);
	CHECK(ends_with(m->manifest_path, "-m0.avro"));
	CHECK_INT(m->manifest_length, 4274);
	CHECK_INT(m->partition_spec_id, 0);
	CHECK_INT(m->content, TL_ICE_MANIFEST_DATA);
	CHECK_INT(m->sequence_number, 1);
	CHECK_INT(m->min_sequence_number, 1);
	CHECK_INT(m->added_snapshot_id, PY_SNAPSHOT);
	CHECK_INT(m->added_files_count, 1);
	CHECK_INT(m->existing_files_count, 0);
	CHECK_INT(m->deleted_files_count, 0);
	CHECK_INT(m->added_rows_count, 3);
	CHECK_INT(m->existing_rows_count, 0);
	CHECK_INT(m->deleted_rows_count, 0);
	CHECK_INT(m->n_partitions, 0);
	CHECK_INT(tl_ice_manifest_list_reader_next(r, &m, &err), 0);
	tl_ice_manifest_list_reader_free(r);
	tl_input_close(in);
}

TEST(iceberg_manifest_inherit_rules)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_manifest_file v2 = {.added_snapshot_id = 7, .sequence_number = 5};
	tl_ice_manifest_entry e = {.status = TL_ICE_STATUS_EXISTING, .has_snapshot_id = true, .snapshot_id = 3,
	                           .has_sequence_number = true, .sequence_number = 2};
	/* An existing entry must carry its own file sequence number in v2. */
	CHECK(tl_ice_manifest_entry_inherit(&e, &v2, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	/* ...but in a v1 table (sequence number 0) everything is 0. */
	tl_ice_manifest_file v1 = {.added_snapshot_id = 7, .sequence_number = 0};
	tl_ice_manifest_entry e1 = {.status = TL_ICE_STATUS_EXISTING};
	CHECK_OK(tl_ice_manifest_entry_inherit(&e1, &v1, &err), &err);
	CHECK_INT(e1.snapshot_id, 7);
	CHECK_INT(e1.sequence_number, 0);
	CHECK_INT(e1.file_sequence_number, 0);
	tl_ice_manifest_entry added = {.status = TL_ICE_STATUS_ADDED};
	CHECK_OK(tl_ice_manifest_entry_inherit(&added, &v2, &err), &err);
	CHECK_INT(added.snapshot_id, 7);
	CHECK_INT(added.sequence_number, 5);
	CHECK_INT(added.file_sequence_number, 5);
}

/* ------------------------------------------------- round trips */

static void make_table(tl_ice_schema *schema, tl_ice_partition_spec *spec)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_field fields[] = {
		{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}},
		{.id = 2, .name = "ts", .type = {.id = TL_ICE_TIMESTAMPTZ}},
		{.id = 3, .name = "name", .type = {.id = TL_ICE_STRING}},
		{.id = 4, .name = "price", .type = {.id = TL_ICE_DOUBLE}},
	};
	if (tl_ice_schema_init(schema, 3, fields, 4, &err) < 0)
		abort();
	tl_ice_partition_spec_init(spec, 2);
	tl_ice_partition_spec_add(spec, 2, 1000, "ts_day", (tl_ice_transform){TL_ICE_DAY, 0});
	tl_ice_partition_spec_add(spec, 3, 1001, "name \"trunc\"", (tl_ice_transform){TL_ICE_TRUNCATE, 2});
	tl_ice_partition_spec_add(spec, 1, 1002, "id_bucket", (tl_ice_transform){TL_ICE_BUCKET, 8});
}

#define N_FILES 3

/* Three files: added (inheriting), existing (explicit numbers), deleted. */
static void make_entries(tl_ice_manifest_entry *e, tl_ice_value parts[N_FILES][3])
{
	static int32_t keys[] = {1, 2, 3};
	static int64_t sizes[] = {100, 200, 300}, counts[] = {10, 10, 10}, nulls[] = {0, 1, 2};
	static tl_bytes lows[] = {{(const uint8_t *)"\x01\0\0\0\0\0\0\0", 8}, {(const uint8_t *)"Ab", 2}};
	static tl_bytes highs[] = {{(const uint8_t *)"\x09\0\0\0\0\0\0\0", 8}, {(const uint8_t *)"Zz", 2}};
	static int32_t low_keys[] = {1, 3};
	static int64_t offsets[] = {4, 1000, 5000};
	static const char *names[] = {"zz", "ab", "mm"};
	memset(e, 0, sizeof(tl_ice_manifest_entry) * N_FILES);
	for (int i = 0; i < N_FILES; i++) {
		tl_ice_data_file *f = &e[i].data_file;
		e[i].status = i == 0 ? TL_ICE_STATUS_ADDED : i == 1 ? TL_ICE_STATUS_EXISTING : TL_ICE_STATUS_DELETED;
		if (i > 0) {
			e[i].has_snapshot_id = true;
			e[i].snapshot_id = 1000 + i;
			e[i].has_sequence_number = e[i].has_file_sequence_number = true;
			e[i].sequence_number = 10 + i;
			e[i].file_sequence_number = 5 + i;
		}
		f->content = TL_ICE_CONTENT_DATA;
		f->file_path = i == 0 ? "s3://b/t/data/a.parquet" : i == 1 ? "s3://b/t/data/b.parquet" : "s3://b/t/c.parquet";
		f->file_format = "PARQUET";
		parts[i][0] = (tl_ice_value){.v.i32 = 19000 + i * 7};
		parts[i][1] = (tl_ice_value){.ptr = (const uint8_t *)names[i], .len = 2};
		parts[i][2] = (tl_ice_value){.v.i32 = i + 3};
		if (i == 2)
			parts[i][1] = tl_ice_null();
		f->npartition = 3;
		f->partition = parts[i];
		f->record_count = 10 * (i + 1);
		f->file_size_in_bytes = 4096 + i;
		f->column_sizes = (tl_ice_long_map){3, keys, sizes};
		f->value_counts = (tl_ice_long_map){3, keys, counts};
		f->null_value_counts = (tl_ice_long_map){3, keys, nulls};
		if (i == 1)
			f->nan_value_counts = (tl_ice_long_map){1, &keys[2], &nulls[1]};
		f->lower_bounds = (tl_ice_bytes_map){2, low_keys, lows};
		f->upper_bounds = (tl_ice_bytes_map){2, low_keys, highs};
		f->n_split_offsets = (uint32_t)i + 1;
		f->split_offsets = offsets;
		if (i == 2) {
			f->has_sort_order_id = true;
			f->sort_order_id = 4;
		}
	}
}

static bool long_maps_equal(const tl_ice_long_map *a, const tl_ice_long_map *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->keys[i] != b->keys[i] || a->values[i] != b->values[i])
			return false;
	return true;
}

static bool bytes_maps_equal(const tl_ice_bytes_map *a, const tl_ice_bytes_map *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->keys[i] != b->keys[i] || !bytes_eq(a->values[i], b->values[i].ptr, b->values[i].len))
			return false;
	return true;
}

static int write_manifest(tl_buf *out, tl_ice_manifest_file *summary, tl_error *err)
{
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	make_table(&schema, &spec);
	tl_ice_manifest_entry e[N_FILES];
	tl_ice_value parts[N_FILES][3];
	make_entries(e, parts);
	tl_output *o = tl_output_to_buffer(out, "m.avro");
	int rc = -1;
	tl_ice_manifest_writer *w = tl_ice_manifest_writer_open(o, &schema, &spec, TL_ICE_MANIFEST_DATA, 1000, err);
	if (w != NULL) {
		rc = 0;
		for (int i = 0; i < N_FILES && rc == 0; i++)
			rc = tl_ice_manifest_writer_add(w, &e[i], err);
		tl_ice_manifest_file s;
		if (rc == 0)
			rc = tl_ice_manifest_writer_close(w, &s, err);
		/* Summaries point into the writer: keep only the scalar parts. */
		if (rc == 0 && summary != NULL) {
			*summary = s;
			summary->n_partitions = 0;
			summary->partitions = NULL;
		}
		tl_ice_manifest_writer_free(w);
	}
	tl_output_close(o);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	return rc;
}

TEST(iceberg_manifest_round_trip)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	make_table(&schema, &spec);
	tl_ice_manifest_entry want[N_FILES];
	tl_ice_value parts[N_FILES][3];
	make_entries(want, parts);

	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "m.avro");
	tl_ice_manifest_writer *w = tl_ice_manifest_writer_open(o, &schema, &spec, TL_ICE_MANIFEST_DATA, 1000, &err);
	CHECK(w != NULL);
	for (int i = 0; i < N_FILES; i++)
		CHECK_OK(tl_ice_manifest_writer_add(w, &want[i], &err), &err);
	tl_ice_manifest_file s;
	CHECK_OK(tl_ice_manifest_writer_close(w, &s, &err), &err);
	tl_output_close(o);
	CHECK_INT(s.manifest_length, file.len);
	CHECK_INT(s.partition_spec_id, 2);
	CHECK_INT(s.content, TL_ICE_MANIFEST_DATA);
	CHECK_INT(s.added_snapshot_id, 1000);
	CHECK_INT(s.added_files_count, 1);
	CHECK_INT(s.existing_files_count, 1);
	CHECK_INT(s.deleted_files_count, 1);
	CHECK_INT(s.added_rows_count, 10);
	CHECK_INT(s.existing_rows_count, 20);
	CHECK_INT(s.deleted_rows_count, 30);
	CHECK_INT(s.sequence_number, -1);
	CHECK_INT(s.min_sequence_number, 11);
	CHECK_INT(s.n_partitions, 3);
	/* Day: dates 19000..19014 as 4-byte little-endian ints. */
	CHECK(!s.partitions[0].contains_null);
	CHECK(s.partitions[0].has_contains_nan && !s.partitions[0].contains_nan);
	CHECK(bytes_eq(s.partitions[0].lower_bound, "\x38\x4a\0\0", 4));
	CHECK(bytes_eq(s.partitions[0].upper_bound, "\x46\x4a\0\0", 4));
	/* Truncated names: "ab".."zz", and one file had none. */
	CHECK(s.partitions[1].contains_null);
	CHECK(bytes_eq(s.partitions[1].lower_bound, "ab", 2));
	CHECK(bytes_eq(s.partitions[1].upper_bound, "zz", 2));
	CHECK(bytes_eq(s.partitions[2].lower_bound, "\x03\0\0\0", 4));
	CHECK(bytes_eq(s.partitions[2].upper_bound, "\x05\0\0\0", 4));
	tl_ice_manifest_writer_free(w);

	tl_input *in = tl_input_from_memory(file.data, file.len, "m.avro");
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, &err);
	CHECK(r != NULL);
	CHECK_INT(tl_ice_manifest_reader_format_version(r), 2);
	CHECK_INT(tl_ice_manifest_reader_spec_id(r), 2);
	CHECK(tl_ice_partition_spec_equal(tl_ice_manifest_reader_spec(r), &spec));
	CHECK(tl_ice_schema_equal(tl_ice_manifest_reader_schema(r), &schema));
	const tl_ice_type *ptype = tl_ice_manifest_reader_partition_type(r);
	CHECK_INT(ptype->nfields, 3);
	CHECK_INT(ptype->fields[0].id, 1000);
	CHECK_INT(ptype->fields[0].type.id, TL_ICE_DATE);
	for (int i = 0; i < N_FILES; i++) {
		const tl_ice_manifest_entry *g;
		CHECK_INT(tl_ice_manifest_reader_next(r, &g, &err), 1);
		const tl_ice_manifest_entry *x = &want[i];
		CHECK_INT(g->status, x->status);
		CHECK_INT(g->has_snapshot_id, x->has_snapshot_id);
		CHECK_INT(g->snapshot_id, x->snapshot_id);
		CHECK_INT(g->has_sequence_number, x->has_sequence_number);
		CHECK_INT(g->sequence_number, x->sequence_number);
		CHECK_INT(g->has_file_sequence_number, x->has_file_sequence_number);
		CHECK_INT(g->file_sequence_number, x->file_sequence_number);
		const tl_ice_data_file *gf = &g->data_file, *xf = &x->data_file;
		CHECK_INT(gf->content, xf->content);
		CHECK_STR(gf->file_path, xf->file_path);
		CHECK_STR(gf->file_format, xf->file_format);
		CHECK_INT(gf->npartition, 3);
		for (int k = 0; k < 3; k++)
			CHECK(tl_ice_value_equal(&ptype->fields[k].type, &gf->partition[k], &xf->partition[k]));
		CHECK_INT(gf->partition[1].is_null, i == 2);
		CHECK_INT(gf->record_count, xf->record_count);
		CHECK_INT(gf->file_size_in_bytes, xf->file_size_in_bytes);
		CHECK(long_maps_equal(&gf->column_sizes, &xf->column_sizes));
		CHECK(long_maps_equal(&gf->value_counts, &xf->value_counts));
		CHECK(long_maps_equal(&gf->null_value_counts, &xf->null_value_counts));
		CHECK(long_maps_equal(&gf->nan_value_counts, &xf->nan_value_counts));
		CHECK(bytes_maps_equal(&gf->lower_bounds, &xf->lower_bounds));
		CHECK(bytes_maps_equal(&gf->upper_bounds, &xf->upper_bounds));
		CHECK_INT(gf->n_split_offsets, xf->n_split_offsets);
		for (uint32_t k = 0; k < gf->n_split_offsets; k++)
			CHECK_INT(gf->split_offsets[k], xf->split_offsets[k]);
		CHECK_INT(gf->n_equality_ids, 0);
		CHECK_INT(gf->has_sort_order_id, xf->has_sort_order_id);
		CHECK_INT(gf->sort_order_id, xf->sort_order_id);
	}
	const tl_ice_manifest_entry *g;
	CHECK_INT(tl_ice_manifest_reader_next(r, &g, &err), 0);
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	tl_buf_free(&file);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
}

TEST(iceberg_manifest_delete_manifest_round_trip)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema schema;
	tl_ice_partition_spec spec, unpartitioned;
	make_table(&schema, &spec);
	tl_ice_partition_spec_init(&unpartitioned, 0);
	int32_t eq_ids[] = {1, 3};
	tl_ice_manifest_entry e = {.status = TL_ICE_STATUS_ADDED};
	e.data_file = (tl_ice_data_file){.content = TL_ICE_CONTENT_EQUALITY_DELETES, .file_path = "d.parquet",
	                                 .file_format = "PARQUET", .record_count = 2, .file_size_in_bytes = 9,
	                                 .n_equality_ids = 2, .equality_ids = eq_ids};
	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "d.avro");
	tl_ice_manifest_writer *w = tl_ice_manifest_writer_open(o, &schema, &unpartitioned, TL_ICE_MANIFEST_DELETES,
	                                                        5, &err);
	CHECK(w != NULL);
	CHECK_OK(tl_ice_manifest_writer_add(w, &e, &err), &err);
	/* A data file does not belong in a delete manifest. */
	tl_ice_manifest_entry bad = e;
	bad.data_file.content = TL_ICE_CONTENT_DATA;
	CHECK(tl_ice_manifest_writer_add(w, &bad, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);
	tl_ice_manifest_file s;
	CHECK_OK(tl_ice_manifest_writer_close(w, &s, &err), &err);
	CHECK_INT(s.content, TL_ICE_MANIFEST_DELETES);
	CHECK_INT(s.n_partitions, 0);
	tl_ice_manifest_writer_free(w);
	tl_output_close(o);

	tl_input *in = tl_input_from_memory(file.data, file.len, "d.avro");
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, &err);
	CHECK(r != NULL);
	CHECK_INT(tl_ice_manifest_reader_content(r), TL_ICE_MANIFEST_DELETES);
	const tl_ice_manifest_entry *g;
	CHECK_INT(tl_ice_manifest_reader_next(r, &g, &err), 1);
	CHECK_INT(g->data_file.content, TL_ICE_CONTENT_EQUALITY_DELETES);
	CHECK_INT(g->data_file.n_equality_ids, 2);
	CHECK_INT(g->data_file.equality_ids[1], 3);
	CHECK_INT(g->data_file.column_sizes.n, 0);
	CHECK(!g->has_snapshot_id);
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	tl_buf_free(&file);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	tl_ice_partition_spec_free(&unpartitioned);
}

TEST(iceberg_manifest_list_round_trip)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf manifest;
	tl_buf_init(&manifest);
	tl_ice_manifest_file first;
	CHECK_OK(write_manifest(&manifest, &first, &err), &err);
	first.manifest_path = "s3://b/t/metadata/m1.avro";
	tl_ice_field_summary sums[2] = {
		{.contains_null = true, .has_lower_bound = true, .lower_bound = {(const uint8_t *)"\x01\0\0\0", 4},
		 .has_upper_bound = true, .upper_bound = {(const uint8_t *)"\x09\0\0\0", 4}},
		{.contains_null = false, .has_contains_nan = true, .contains_nan = true},
	};
	first.n_partitions = 2;
	first.partitions = sums;
	tl_ice_manifest_file second = {.manifest_path = "s3://b/t/metadata/m0.avro", .manifest_length = 777,
	                               .partition_spec_id = 1, .content = TL_ICE_MANIFEST_DELETES,
	                               .sequence_number = 3, .min_sequence_number = 2, .added_snapshot_id = 42,
	                               .added_files_count = 4, .existing_files_count = 5, .deleted_files_count = 6,
	                               .added_rows_count = 7, .existing_rows_count = 8, .deleted_rows_count = 9};

	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "snap.avro");
	tl_ice_manifest_list_writer *w = tl_ice_manifest_list_writer_open(o, 1000, 42, 12, &err);
	CHECK(w != NULL);
	CHECK_OK(tl_ice_manifest_list_writer_add(w, &first, &err), &err);
	CHECK_OK(tl_ice_manifest_list_writer_add(w, &second, &err), &err);
	CHECK_OK(tl_ice_manifest_list_writer_close(w, &err), &err);
	tl_ice_manifest_list_writer_free(w);
	tl_output_close(o);

	tl_input *in = tl_input_from_memory(file.data, file.len, "snap.avro");
	tl_ice_manifest_list_reader *r = tl_ice_manifest_list_reader_open(in, &err);
	CHECK(r != NULL);
	CHECK_INT(tl_ice_manifest_list_reader_format_version(r), 2);
	const tl_ice_manifest_file *m;
	CHECK_INT(tl_ice_manifest_list_reader_next(r, &m, &err), 1);
	CHECK_STR(m->manifest_path, first.manifest_path);
	CHECK_INT(m->manifest_length, (int64_t)manifest.len);
	CHECK_INT(m->partition_spec_id, 2);
	CHECK_INT(m->content, TL_ICE_MANIFEST_DATA);
	CHECK_INT(m->sequence_number, 12);   /* -1 became the list's */
	CHECK_INT(m->min_sequence_number, 11);
	CHECK_INT(m->added_snapshot_id, 1000);
	CHECK_INT(m->added_files_count, 1);
	CHECK_INT(m->existing_files_count, 1);
	CHECK_INT(m->deleted_files_count, 1);
	CHECK_INT(m->added_rows_count, 10);
	CHECK_INT(m->existing_rows_count, 20);
	CHECK_INT(m->deleted_rows_count, 30);
	CHECK_INT(m->n_partitions, 2);
	CHECK(m->partitions[0].contains_null && !m->partitions[0].has_contains_nan);
	CHECK(m->partitions[0].has_lower_bound && bytes_eq(m->partitions[0].lower_bound, "\x01\0\0\0", 4));
	CHECK(m->partitions[0].has_upper_bound && bytes_eq(m->partitions[0].upper_bound, "\x09\0\0\0", 4));
	CHECK(!m->partitions[1].contains_null && m->partitions[1].has_contains_nan && m->partitions[1].contains_nan);
	CHECK(!m->partitions[1].has_lower_bound && !m->partitions[1].has_upper_bound);

	CHECK_INT(tl_ice_manifest_list_reader_next(r, &m, &err), 1);
	CHECK_STR(m->manifest_path, second.manifest_path);
	CHECK_INT(m->manifest_length, 777);
	CHECK_INT(m->partition_spec_id, 1);
	CHECK_INT(m->content, TL_ICE_MANIFEST_DELETES);
	CHECK_INT(m->sequence_number, 3);
	CHECK_INT(m->min_sequence_number, 2);
	CHECK_INT(m->added_snapshot_id, 42);
	CHECK_INT(m->added_files_count, 4);
	CHECK_INT(m->existing_files_count, 5);
	CHECK_INT(m->deleted_files_count, 6);
	CHECK_INT(m->added_rows_count, 7);
	CHECK_INT(m->existing_rows_count, 8);
	CHECK_INT(m->deleted_rows_count, 9);
	CHECK_INT(m->n_partitions, 0);
	CHECK_INT(tl_ice_manifest_list_reader_next(r, &m, &err), 0);
	tl_ice_manifest_list_reader_free(r);
	tl_input_close(in);
	tl_buf_free(&file);
	tl_buf_free(&manifest);
}

/* Reads a whole manifest; the entry count, or -1 on error. */
static int read_all(const uint8_t *data, size_t len, tl_error *err)
{
	tl_input *in = tl_input_from_memory(data, len, "t.avro");
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, err);
	int n = -1;
	if (r != NULL) {
		const tl_ice_manifest_entry *e;
		int rc;
		n = 0;
		while ((rc = tl_ice_manifest_reader_next(r, &e, err)) == 1)
			n++;
		if (rc < 0)
			n = -1;
	}
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	return n;
}

TEST(iceberg_manifest_truncations_fail_cleanly)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf file;
	tl_buf_init(&file);
	CHECK_OK(write_manifest(&file, NULL, &err), &err);
	CHECK_INT(read_all(file.data, file.len, &err), N_FILES);
	int failures = 0;
	for (size_t len = 0; len < file.len; len++) {
		/* A copy of exactly len bytes, so ASan sees any read past the end. */
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, file.data, len);
		tl_error_clear(&err);
		int n = read_all(copy, len, &err);
		free(copy);
		/* Avro files have no footer: a cut after the header reads as empty. */
		CHECK(n < N_FILES);
		if (n < 0) {
			CHECK(err.code == TL_ERR_CORRUPT || err.code == TL_ERR_IO);
			CHECK(err.message[0] != '\0');
			failures++;
		}
	}
	CHECK(failures > (int)file.len / 2);
	tl_buf_free(&file);
}

TEST(iceberg_manifest_rejects_bad_entries)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	make_table(&schema, &spec);
	tl_ice_manifest_entry e[N_FILES];
	tl_ice_value parts[N_FILES][3];
	make_entries(e, parts);
	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "m.avro");
	tl_ice_manifest_writer *w = tl_ice_manifest_writer_open(o, &schema, &spec, TL_ICE_MANIFEST_DATA, 1, &err);
	CHECK(w != NULL);
	e[0].data_file.npartition = 2;
	CHECK(tl_ice_manifest_writer_add(w, &e[0], &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);
	e[1].status = 3;
	CHECK(tl_ice_manifest_writer_add(w, &e[1], &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_ice_manifest_writer_free(w);
	tl_output_close(o);
	tl_buf_free(&file);
	tl_error_clear(&err);

	/* A manifest's "format-version" must be 1 or 2; an Avro file that is not a manifest fails by field. */
	tl_input *in = tl_input_open_file(FIXTURES "fastavro_null.avro", &err);
	CHECK(in != NULL);
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, &err);
	CHECK(r != NULL);
	const tl_ice_manifest_entry *g;
	CHECK(tl_ice_manifest_reader_next(r, &g, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "status") != NULL);
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
}

/*
 * A v1 manifest as Java Iceberg 0.x wrote it: no content or sequence
 * numbers, a required snapshot_id, block_size_in_bytes and other fields we
 * do not read, partition fields by name, field order unlike v2's.
 */
static const char v1_schema[] =
	"{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
	"{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
	"{\"name\":\"snapshot_id\",\"type\":\"long\",\"field-id\":1},"
	"{\"name\":\"data_file\",\"field-id\":2,\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
	"{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
	"{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"
	"{\"name\":\"partition\",\"field-id\":102,\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":["
	"{\"name\":\"id_trunc\",\"type\":[\"null\",\"long\"],\"field-id\":1000}]}},"
	"{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
	"{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104},"
	"{\"name\":\"block_size_in_bytes\",\"type\":\"long\",\"field-id\":105},"
	"{\"name\":\"upper_bounds\",\"field-id\":128,\"type\":[\"null\",{\"type\":\"array\",\"logicalType\":\"map\","
	"\"items\":{\"type\":\"record\",\"name\":\"k129_v130\",\"fields\":[{\"name\":\"key\",\"type\":\"int\",\"field-id\":129},"
	"{\"name\":\"value\",\"type\":\"bytes\",\"field-id\":130}]}}]}"
	"]}}]}";

TEST(iceberg_manifest_reads_v1)
{
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *as = tl_avro_schema_parse(v1_schema, sizeof(v1_schema) - 1, &err);
	CHECK(as != NULL);
	const char *schema_json = "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"}]}";
	const char *spec_json = "[{\"name\":\"id_trunc\",\"transform\":\"truncate[10]\",\"source-id\":1,\"field-id\":1000}]";
	tl_avro_meta meta[] = {
		{"schema", {(const uint8_t *)schema_json, (uint32_t)strlen(schema_json)}},
		{"partition-spec", {(const uint8_t *)spec_json, (uint32_t)strlen(spec_json)}},
		{"partition-spec-id", {(const uint8_t *)"0", 1}},
		{"format-version", {(const uint8_t *)"1", 1}},
	};
	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "v1.avro");
	tl_avro_writer *w = tl_avro_writer_open(o, as, TL_AVRO_CODEC_NULL, meta, 4, &err);
	CHECK(w != NULL);
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	tl_avro_value *rec = tl_avro_record_new(&arena, as);
	tl_avro_record_field(rec, "status", TL_AVRO_INT)->u.i32 = TL_ICE_STATUS_EXISTING;
	tl_avro_record_field(rec, "snapshot_id", TL_AVRO_LONG)->u.i64 = 31;
	tl_avro_value *df = tl_avro_record_field(rec, "data_file", TL_AVRO_RECORD);
	tl_avro_init_record(&arena, df);
	tl_avro_value *v = tl_avro_record_field(df, "file_path", TL_AVRO_STRING);
	v->u.bytes = (tl_bytes){(const uint8_t *)"/t/v1.parquet", 13};
	v = tl_avro_record_field(df, "file_format", TL_AVRO_STRING);
	v->u.bytes = (tl_bytes){(const uint8_t *)"PARQUET", 7};
	tl_avro_value *part = tl_avro_record_field(df, "partition", TL_AVRO_RECORD);
	tl_avro_init_record(&arena, part);
	tl_avro_record_field(part, "id_trunc", TL_AVRO_LONG)->u.i64 = -20;
	tl_avro_record_field(df, "record_count", TL_AVRO_LONG)->u.i64 = 12;
	tl_avro_record_field(df, "file_size_in_bytes", TL_AVRO_LONG)->u.i64 = 345;
	tl_avro_record_field(df, "block_size_in_bytes", TL_AVRO_LONG)->u.i64 = 67108864;
	tl_avro_value *ub = tl_avro_record_field(df, "upper_bounds", TL_AVRO_ARRAY);
	tl_avro_init_list(&arena, ub, 1);
	tl_avro_value *kv = tl_avro_item(ub, 0, TL_AVRO_RECORD);
	tl_avro_init_record(&arena, kv);
	tl_avro_record_field(kv, "key", TL_AVRO_INT)->u.i32 = 1;
	tl_avro_record_field(kv, "value", TL_AVRO_BYTES)->u.bytes = (tl_bytes){(const uint8_t *)"\x07\0\0\0", 4};
	CHECK_OK(tl_avro_writer_append(w, rec, &err), &err);
	CHECK_OK(tl_avro_writer_close(w, &err), &err);
	tl_avro_writer_free(w);
	tl_output_close(o);
	tl_arena_free(&arena);

	tl_input *in = tl_input_from_memory(file.data, file.len, "v1.avro");
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, &err);
	CHECK(r != NULL);
	CHECK_INT(tl_ice_manifest_reader_format_version(r), 1);
	CHECK_INT(tl_ice_manifest_reader_content(r), TL_ICE_MANIFEST_DATA);
	const tl_ice_manifest_entry *e;
	CHECK_INT(tl_ice_manifest_reader_next(r, &e, &err), 1);
	CHECK_INT(e->status, TL_ICE_STATUS_EXISTING);
	CHECK(e->has_snapshot_id && e->snapshot_id == 31);
	CHECK(!e->has_sequence_number);
	CHECK_INT(e->data_file.content, TL_ICE_CONTENT_DATA);
	CHECK_STR(e->data_file.file_path, "/t/v1.parquet");
	CHECK_INT(e->data_file.npartition, 1);
	CHECK(!e->data_file.partition[0].is_null);
	CHECK_INT(e->data_file.partition[0].v.i64, -20);
	CHECK_INT(e->data_file.record_count, 12);
	CHECK_INT(e->data_file.file_size_in_bytes, 345);
	CHECK_INT(e->data_file.column_sizes.n, 0);
	CHECK_INT(e->data_file.upper_bounds.n, 1);
	/* A 4-byte bound of a long column (written before a promotion) widens. */
	tl_ice_type long_type = {.id = TL_ICE_LONG};
	tl_ice_value hi;
	CHECK_OK(tl_ice_value_deserialize(&long_type, e->data_file.upper_bounds.values[0].ptr,
	                                  e->data_file.upper_bounds.values[0].len, &hi, &err), &err);
	CHECK_INT(hi.v.i64, 7);
	/* v1 tables have sequence number 0 everywhere. */
	tl_ice_manifest_entry copy = *e;
	tl_ice_manifest_file mf = {.added_snapshot_id = 31, .sequence_number = 0};
	CHECK_OK(tl_ice_manifest_entry_inherit(&copy, &mf, &err), &err);
	CHECK_INT(copy.sequence_number, 0);
	CHECK_INT(copy.file_sequence_number, 0);
	CHECK_INT(tl_ice_manifest_reader_next(r, &e, &err), 0);
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	tl_buf_free(&file);
	tl_avro_schema_free(as);
}

TEST(iceberg_manifest_decimal_partition_round_trip)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_field fields[] = {{.id = 1, .name = "amount", .type = {.id = TL_ICE_DECIMAL, .precision = 9, .scale = 2}}};
	tl_ice_schema schema;
	CHECK_OK(tl_ice_schema_init(&schema, 0, fields, 1, &err), &err);
	tl_ice_partition_spec spec;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_partition_spec_add(&spec, 1, 1000, "amount", (tl_ice_transform){TL_ICE_IDENTITY, 0});
	tl_ice_value parts[3] = {{.v.dec = -12345}, {.v.dec = 999999999}, {.v.dec = 1000000000}};
	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "dec.avro");
	tl_ice_manifest_writer *w = tl_ice_manifest_writer_open(o, &schema, &spec, TL_ICE_MANIFEST_DATA, 1, &err);
	CHECK(w != NULL);
	for (int i = 0; i < 3; i++) {
		tl_ice_manifest_entry e = {.status = TL_ICE_STATUS_ADDED};
		e.data_file = (tl_ice_data_file){.file_path = "f.parquet", .file_format = "PARQUET", .npartition = 1,
		                                 .partition = &parts[i], .record_count = 1, .file_size_in_bytes = 1};
		tl_error_clear(&err);
		int rc = tl_ice_manifest_writer_add(w, &e, &err);
		/* 10^9 has ten digits: it does not fit decimal(9, 2)'s 4 bytes. */
		CHECK_INT(rc, i == 2 ? -1 : 0);
	}
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);
	tl_ice_manifest_file s;
	CHECK_OK(tl_ice_manifest_writer_close(w, &s, &err), &err);
	CHECK_INT(s.n_partitions, 1);
	CHECK(bytes_eq(s.partitions[0].lower_bound, "\xcf\xc7", 2)); /* -12345, minimal bytes */
	tl_ice_manifest_writer_free(w);
	tl_output_close(o);

	tl_input *in = tl_input_from_memory(file.data, file.len, "dec.avro");
	tl_ice_manifest_reader *r = tl_ice_manifest_reader_open(in, &err);
	CHECK(r != NULL);
	for (int i = 0; i < 2; i++) {
		const tl_ice_manifest_entry *e;
		CHECK_INT(tl_ice_manifest_reader_next(r, &e, &err), 1);
		CHECK(e->data_file.partition[0].v.dec == parts[i].v.dec);
	}
	tl_ice_manifest_reader_free(r);
	tl_input_close(in);
	tl_buf_free(&file);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
}

/* Reads a whole manifest list; the entry count, or -1 on error. */
static int read_all_list(const uint8_t *data, size_t len, tl_error *err)
{
	tl_input *in = tl_input_from_memory(data, len, "l.avro");
	tl_ice_manifest_list_reader *r = tl_ice_manifest_list_reader_open(in, err);
	int n = -1;
	if (r != NULL) {
		const tl_ice_manifest_file *m;
		int rc;
		n = 0;
		while ((rc = tl_ice_manifest_list_reader_next(r, &m, err)) == 1)
			n++;
		if (rc < 0)
			n = -1;
	}
	tl_ice_manifest_list_reader_free(r);
	tl_input_close(in);
	return n;
}

TEST(iceberg_manifest_list_hostile)
{
	tl_error err;
	tl_error_clear(&err);
	tl_ice_manifest_file m = {.manifest_path = "m.avro", .manifest_length = 10, .sequence_number = 2,
	                          .min_sequence_number = 1, .added_snapshot_id = 5, .added_files_count = 1};
	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "l.avro");
	tl_ice_manifest_list_writer *w = tl_ice_manifest_list_writer_open(o, 5, -1, 2, &err);
	CHECK(w != NULL);
	for (int i = 0; i < 4; i++)
		CHECK_OK(tl_ice_manifest_list_writer_add(w, &m, &err), &err);
	tl_ice_manifest_file bad = m;
	bad.added_files_count = -3;
	CHECK(tl_ice_manifest_list_writer_add(w, &bad, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);
	CHECK_OK(tl_ice_manifest_list_writer_close(w, &err), &err);
	tl_ice_manifest_list_writer_free(w);
	tl_output_close(o);
	CHECK_INT(read_all_list(file.data, file.len, &err), 4);
	int failures = 0;
	for (size_t len = 0; len < file.len; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, file.data, len);
		tl_error_clear(&err);
		int n = read_all_list(copy, len, &err);
		free(copy);
		CHECK(n < 4);
		failures += n < 0;
	}
	CHECK(failures > (int)file.len / 2);
	tl_buf_free(&file);

	/* A negative count written by someone else is corrupt input. */
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(FIXTURES "iceberg_manifest_list.avro", &err);
	CHECK(in != NULL);
	tl_avro_reader *ar = tl_avro_reader_open(in, &err);
	CHECK(ar != NULL);
	const tl_avro_schema *as = tl_avro_reader_schema(ar);
	tl_buf evil;
	tl_buf_init(&evil);
	o = tl_output_to_buffer(&evil, "evil.avro");
	tl_avro_writer *aw = tl_avro_writer_open(o, as, TL_AVRO_CODEC_NULL, NULL, 0, &err);
	CHECK(aw != NULL);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_avro_value *rec = tl_avro_record_new(&arena, as);
	tl_avro_value *v = tl_avro_record_field(rec, "manifest_path", TL_AVRO_STRING);
	v->u.bytes = (tl_bytes){(const uint8_t *)"m", 1};
	static const char *longs[] = {"manifest_length", "sequence_number", "min_sequence_number", "added_snapshot_id",
	                              "added_rows_count", "existing_rows_count", "deleted_rows_count"};
	static const char *ints[] = {"partition_spec_id", "content", "added_files_count", "existing_files_count",
	                             "deleted_files_count"};
	for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++)
		tl_avro_record_field(rec, longs[i], TL_AVRO_LONG)->u.i64 = 1;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		tl_avro_record_field(rec, ints[i], TL_AVRO_INT)->u.i32 = 0;
	tl_avro_record_field(rec, "existing_files_count", TL_AVRO_INT)->u.i32 = -1;
	CHECK_OK(tl_avro_writer_append(aw, rec, &err), &err);
	CHECK_OK(tl_avro_writer_close(aw, &err), &err);
	tl_avro_writer_free(aw);
	tl_output_close(o);
	tl_arena_free(&arena);
	tl_avro_reader_free(ar);
	tl_input_close(in);
	CHECK_INT(read_all_list(evil.data, evil.len, &err), -1);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "negative") != NULL);
	tl_buf_free(&evil);
}
