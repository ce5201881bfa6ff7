/*
 * test_avro_file.c: Avro object container files: writer -> reader round
 * trips with every codec and several blocks, header metadata, files written
 * by fastavro and pyiceberg (lake/tests/data/avro, made by generate.py
 * there), and hostile files: every truncation, random mutations, a wrong
 * sync marker, a bad snappy CRC and an unknown codec.
 */
#include <stdlib.h>

#include "test.h"
#include "tierlake/avro.h"

#define FIXTURES "lake/tests/data/avro/"

/* From test_avro.c. */
tl_avro_value *avro_test_all_types(tl_arena *arena, const tl_avro_schema *s, int seed);
int avro_test_check_all_types(const tl_avro_value *r, int seed, char *why, size_t why_len);
const char *avro_test_all_types_schema(void);

static const tl_avro_codec ALL_CODECS[] = {TL_AVRO_CODEC_NULL, TL_AVRO_CODEC_DEFLATE, TL_AVRO_CODEC_SNAPPY,
                                           TL_AVRO_CODEC_ZSTD};

/* Writes `records` rows of the all-types schema into out; blocks of at most block_bytes. */
static int write_sample(tl_buf *out, tl_avro_codec codec, int records, size_t block_bytes, tl_error *err)
{
	const char *json = avro_test_all_types_schema();
	tl_avro_schema *s = tl_avro_schema_parse(json, strlen(json), err);
	if (s == NULL)
		return -1;
	static const uint8_t binary[] = {0, 1, 2, 0xff};
	tl_avro_meta meta[] = {
		{"format-version", {(const uint8_t *)"2", 1}},
		{"binary", {binary, sizeof(binary)}},
		{"empty", {NULL, 0}},
	};
	tl_output *o = tl_output_to_buffer(out, "sample.avro");
	tl_avro_writer *w = tl_avro_writer_open(o, s, codec, meta, 3, err);
	int rc = w ? 0 : -1;
	if (w != NULL)
		tl_avro_writer_set_block_limits(w, block_bytes, 1000);
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	for (int i = 0; rc == 0 && i < records; i++) {
		rc = tl_avro_writer_append(w, avro_test_all_types(&arena, s, i), err);
		tl_arena_reset(&arena);
	}
	if (rc == 0)
		rc = tl_avro_writer_close(w, err);
	if (rc == 0 && tl_avro_writer_records(w) != records)
		rc = tl_error_set(err, TL_ERR_INVALID, "writer counted %lld records", (long long)tl_avro_writer_records(w));
	tl_arena_free(&arena);
	tl_avro_writer_free(w);
	tl_output_close(o);
	tl_avro_schema_free(s);
	return rc;
}

/* Reads every record of data; returns the count, or -1 with err set. */
static long read_all(const uint8_t *data, size_t len, int check_values, tl_error *err)
{
	tl_input *in = tl_input_from_memory(data, len, "test.avro");
	tl_avro_reader *r = tl_avro_reader_open(in, err);
	long n = r ? 0 : -1;
	while (r != NULL) {
		const tl_avro_value *v;
		int rc = tl_avro_reader_next(r, &v, err);
		if (rc <= 0) {
			if (rc < 0)
				n = -1;
			break;
		}
		char why[200];
		if (check_values && avro_test_check_all_types(v, (int)n, why, sizeof(why)) != 0) {
			tl_error_set(err, TL_ERR_CORRUPT, "record %ld: %s", n, why);
			n = -1;
			break;
		}
		n++;
	}
	tl_avro_reader_free(r);
	tl_input_close(in);
	return n;
}

TEST(avro_file_round_trip_every_codec)
{
	for (size_t c = 0; c < sizeof(ALL_CODECS) / sizeof(ALL_CODECS[0]); c++) {
		tl_error err;
		tl_error_clear(&err);
		tl_buf file;
		tl_buf_init(&file);
		CHECK_OK(write_sample(&file, ALL_CODECS[c], 700, 2000, &err), &err);
		CHECK(memcmp(file.data, "Obj\x01", 4) == 0);
		/* 2,000-byte blocks: the sync marker (the file's last 16 bytes) ends many of them. */
		int syncs = 0;
		for (size_t i = 0; i + 16 <= file.len; i++)
			syncs += memcmp(file.data + i, file.data + file.len - 16, 16) == 0;
		CHECK(syncs > 10);
		long n = read_all(file.data, file.len, 1, &err);
		if (n != 700) {
			tl_test_fail(__FILE__, __LINE__, "codec %s: read %ld records: %s", tl_avro_codec_name(ALL_CODECS[c]), n,
			             err.message);
			return;
		}
		/* Header metadata comes back byte for byte, with the reserved keys. */
		tl_input *in = tl_input_from_memory(file.data, file.len, "sample.avro");
		tl_avro_reader *r = tl_avro_reader_open(in, &err);
		CHECK_OK(r ? 0 : -1, &err);
		CHECK_INT(tl_avro_reader_codec(r), ALL_CODECS[c]);
		const tl_bytes *v = tl_avro_reader_meta(r, "binary");
		CHECK(v != NULL && v->len == 4 && v->ptr[3] == 0xff && v->ptr[0] == 0);
		v = tl_avro_reader_meta(r, "format-version");
		CHECK(v != NULL && v->len == 1 && v->ptr[0] == '2');
		v = tl_avro_reader_meta(r, "empty");
		CHECK(v != NULL && v->len == 0);
		v = tl_avro_reader_meta(r, "avro.codec");
		CHECK(v != NULL && v->len == strlen(tl_avro_codec_name(ALL_CODECS[c])));
		CHECK(tl_avro_reader_meta(r, "absent") == NULL);
		CHECK_INT(tl_avro_reader_meta_count(r), 5);
		CHECK_STR(tl_avro_reader_meta_at(r, 0)->key, "avro.schema");
		CHECK(tl_avro_reader_meta_at(r, 5) == NULL);
		CHECK_STR(tl_avro_reader_schema(r)->name, "all");
		tl_avro_reader_free(r);
		tl_input_close(in);
		tl_buf_free(&file);
	}
}

TEST(avro_file_empty_and_single_block)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf file;
	tl_buf_init(&file);
	CHECK_OK(write_sample(&file, TL_AVRO_CODEC_ZSTD, 0, 1 << 20, &err), &err);
	CHECK_INT(read_all(file.data, file.len, 1, &err), 0);
	tl_buf_reset(&file);
	CHECK_OK(write_sample(&file, TL_AVRO_CODEC_DEFLATE, 40, 1 << 20, &err), &err);
	CHECK_INT(read_all(file.data, file.len, 1, &err), 40);
	tl_buf_free(&file);
}

TEST(avro_file_writer_refuses_bad_input)
{
	tl_error err;
	tl_error_clear(&err);
	const char *json = avro_test_all_types_schema();
	tl_avro_schema *s = tl_avro_schema_parse(json, strlen(json), &err);
	CHECK_OK(s ? 0 : -1, &err);
	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "x.avro");
	tl_avro_meta reserved = {"avro.codec", {(const uint8_t *)"x", 1}};
	CHECK(tl_avro_writer_open(o, s, TL_AVRO_CODEC_NULL, &reserved, 1, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_INVALID);
	CHECK(strstr(err.message, "\"avro.codec\" is reserved") != NULL);
	tl_avro_meta twice[] = {{"k", {NULL, 0}}, {"k", {NULL, 0}}};
	tl_error_clear(&err);
	CHECK(tl_avro_writer_open(o, s, TL_AVRO_CODEC_NULL, twice, 2, &err) == NULL);
	CHECK(strstr(err.message, "given twice") != NULL);
	CHECK_INT(file.len, 0);
	/* A record that does not fit is refused and the file stays readable. */
	tl_error_clear(&err);
	tl_avro_writer *w = tl_avro_writer_open(o, s, TL_AVRO_CODEC_SNAPPY, NULL, 0, &err);
	CHECK_OK(w ? 0 : -1, &err);
	tl_arena arena;
	tl_arena_init(&arena, 4096);
	CHECK_OK(tl_avro_writer_append(w, avro_test_all_types(&arena, s, 0), &err), &err);
	CHECK(tl_avro_writer_append(w, tl_avro_record_new(&arena, s), &err) == -1);
	CHECK(strstr(err.message, "record 1: field b") != NULL);
	tl_error_clear(&err);
	CHECK_OK(tl_avro_writer_append(w, avro_test_all_types(&arena, s, 1), &err), &err);
	CHECK_OK(tl_avro_writer_close(w, &err), &err);
	CHECK(tl_avro_writer_append(w, avro_test_all_types(&arena, s, 2), &err) == -1);
	CHECK(strstr(err.message, "already closed") != NULL);
	tl_avro_writer_free(w);
	tl_error_clear(&err);
	CHECK_INT(read_all(file.data, file.len, 1, &err), 2);
	tl_arena_free(&arena);
	tl_output_close(o);
	tl_buf_free(&file);
	tl_avro_schema_free(s);
}

TEST(avro_file_every_truncation_is_an_error)
{
	for (size_t c = 0; c < sizeof(ALL_CODECS) / sizeof(ALL_CODECS[0]); c++) {
		tl_error err;
		tl_error_clear(&err);
		tl_buf file;
		tl_buf_init(&file);
		CHECK_OK(write_sample(&file, ALL_CODECS[c], 30, 600, &err), &err);
		long full = read_all(file.data, file.len, 1, &err);
		CHECK_INT(full, 30);
		for (size_t cut = 0; cut < file.len; cut++) {
			uint8_t *copy = malloc(cut ? cut : 1);
			memcpy(copy, file.data, cut);
			tl_error_clear(&err);
			long n = read_all(copy, cut, 1, &err);
			free(copy);
			/* A cut at a block boundary is a shorter valid file; any other cut is an error. */
			if (n >= 0) {
				CHECK(n < full);
				continue;
			}
			CHECK(err.code == TL_ERR_CORRUPT || err.code == TL_ERR_IO);
			CHECK(err.message[0] != '\0');
		}
		tl_buf_free(&file);
	}
}

TEST(avro_file_random_mutations_do_not_crash)
{
	uint64_t state = 0x9e3779b97f4a7c15u;
	for (size_t c = 0; c < sizeof(ALL_CODECS) / sizeof(ALL_CODECS[0]); c++) {
		tl_error err;
		tl_error_clear(&err);
		tl_buf file;
		tl_buf_init(&file);
		CHECK_OK(write_sample(&file, ALL_CODECS[c], 20, 700, &err), &err);
		uint8_t *copy = malloc(file.len);
		int errors = 0;
		for (int round = 0; round < 600; round++) {
			memcpy(copy, file.data, file.len);
			for (int k = 0; k < 1 + round % 4; k++) {
				state = state * 6364136223846793005u + 1442695040888963407u;
				copy[(state >> 33) % file.len] ^= (uint8_t)(1u << ((state >> 20) % 8));
			}
			tl_error_clear(&err);
			if (read_all(copy, file.len, 0, &err) < 0) {
				CHECK(err.code != TL_OK && err.message[0] != '\0');
				errors++;
			}
		}
		/* Compressed or checksummed blocks make most flips errors; plain ones at least some. */
		CHECK(errors > 0);
		free(copy);
		tl_buf_free(&file);
	}
}

/* The offset just past the header: the first block starts there. */
static size_t first_block_offset(const tl_buf *file, const uint8_t *sync)
{
	for (size_t i = 4; i + 16 <= file->len; i++)
		if (memcmp(file->data + i, sync, 16) == 0)
			return i + 16;
	return 0;
}

TEST(avro_file_sync_crc_and_codec_errors)
{
	tl_error err;
	tl_error_clear(&err);
	tl_buf file;
	tl_buf_init(&file);
	CHECK_OK(write_sample(&file, TL_AVRO_CODEC_SNAPPY, 5, 1 << 20, &err), &err);
	/* The file ends with the sync marker; the same 16 bytes end the header. */
	const uint8_t *sync = file.data + file.len - 16;
	size_t block = first_block_offset(&file, sync);
	CHECK(block > 0 && block < file.len - 16);

	/* A wrong sync marker after the block. */
	file.data[file.len - 1] ^= 1;
	CHECK(read_all(file.data, file.len, 1, &err) == -1);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "sync marker") != NULL);
	file.data[file.len - 1] ^= 1;

	/* The snappy CRC is the 4 bytes before the sync marker. */
	file.data[file.len - 17] ^= 0x10;
	tl_error_clear(&err);
	CHECK(read_all(file.data, file.len, 1, &err) == -1);
	CHECK(strstr(err.message, "CRC32 mismatch") != NULL);
	file.data[file.len - 17] ^= 0x10;
	tl_error_clear(&err);
	CHECK_INT(read_all(file.data, file.len, 1, &err), 5);

	/* Garbage after the last block. */
	tl_buf_append(&file, "\x02\x02x", 3);
	CHECK(read_all(file.data, file.len, 1, &err) == -1);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	tl_buf_free(&file);

	/* A header naming an unknown codec. */
	tl_buf h;
	tl_buf_init(&h);
	tl_buf_append(&h, "Obj\x01\x04", 5);
	tl_buf_append(&h, "\x16" "avro.schema" "\x0c\"long\"", 19);
	tl_buf_append(&h, "\x14" "avro.codec" "\x04xz", 14);
	tl_buf_append(&h, "\x00" "0123456789abcdef", 17);
	tl_error_clear(&err);
	CHECK(read_all(h.data, h.len, 0, &err) == -1);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK(strstr(err.message, "unsupported codec \"xz\"") != NULL);
	/* With a known codec the same header is a valid empty file. */
	tl_buf_reset(&h);
	tl_buf_append(&h, "Obj\x01\x04", 5);
	tl_buf_append(&h, "\x16" "avro.schema" "\x0c\"long\"", 19);
	tl_buf_append(&h, "\x14" "avro.codec" "\x08null", 16);
	tl_buf_append(&h, "\x00" "0123456789abcdef", 17);
	tl_error_clear(&err);
	CHECK_INT(read_all(h.data, h.len, 0, &err), 0);
	/* Without a schema, or with a broken one, or with bad magic. */
	tl_buf_reset(&h);
	tl_buf_append(&h, "Obj\x01\x02", 5);
	tl_buf_append(&h, "\x14" "avro.codec" "\x08null", 16);
	tl_buf_append(&h, "\x00" "0123456789abcdef", 17);
	tl_error_clear(&err);
	CHECK(read_all(h.data, h.len, 0, &err) == -1);
	CHECK(strstr(err.message, "no avro.schema") != NULL);
	h.data[0] = 'X';
	tl_error_clear(&err);
	CHECK(read_all(h.data, h.len, 0, &err) == -1);
	CHECK(strstr(err.message, "bad magic") != NULL);
	tl_buf_reset(&h);
	tl_buf_append(&h, "Obj\x01\x02", 5);
	tl_buf_append(&h, "\x16" "avro.schema" "\x0c\"lung\"", 19);
	tl_buf_append(&h, "\x00" "0123456789abcdef", 17);
	tl_error_clear(&err);
	CHECK(read_all(h.data, h.len, 0, &err) == -1);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	CHECK(strstr(err.message, "unknown type \"lung\"") != NULL);
	/* A block claiming more bytes than the file holds. */
	tl_buf_reset(&h);
	tl_buf_append(&h, "Obj\x01\x02", 5);
	tl_buf_append(&h, "\x16" "avro.schema" "\x0c\"null\"", 19);
	tl_buf_append(&h, "\x00" "0123456789abcdef", 17);
	tl_buf_append(&h, "\x02\xfe\xff\xff\xff\x0f", 6);
	tl_buf_append(&h, "0123456789abcdef", 16);
	tl_error_clear(&err);
	CHECK(read_all(h.data, h.len, 0, &err) == -1);
	CHECK(strstr(err.message, "past the end of the file") != NULL);
	/* A billion records of null in an empty block: bounded by the block's size. */
	tl_buf_reset(&h);
	tl_buf_append(&h, "Obj\x01\x02", 5);
	tl_buf_append(&h, "\x16" "avro.schema" "\x0c\"null\"", 19);
	tl_buf_append(&h, "\x00" "0123456789abcdef", 17);
	tl_buf_append(&h, "\x80\xa8\xd6\xb9\x07\x00", 6);
	tl_buf_append(&h, "0123456789abcdef", 16);
	tl_error_clear(&err);
	CHECK(read_all(h.data, h.len, 0, &err) == -1);
	CHECK(strstr(err.message, "claims 1000000000 records in 0 bytes") != NULL);
	tl_buf_free(&h);
}

/* Reads a fixture written by fastavro (generate.py's sample_records). */
static void check_fastavro_fixture(const char *path, tl_avro_codec codec)
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(path, &err);
	CHECK_OK(in ? 0 : -1, &err);
	tl_avro_reader *r = tl_avro_reader_open(in, &err);
	CHECK_OK(r ? 0 : -1, &err);
	CHECK_INT(tl_avro_reader_codec(r), codec);
	const tl_bytes *m = tl_avro_reader_meta(r, "tierdb.test");
	CHECK(m != NULL && m->len == 3 && memcmp(m->ptr, "yes", 3) == 0);
	const tl_avro_value *v;
	int64_t i = 0;
	int rc;
	while ((rc = tl_avro_reader_next(r, &v, &err)) == 1) {
		int64_t id = 0;
		double score = 0, ratio = 0;
		int32_t small = 0;
		bool flag = false;
		tl_bytes b;
		CHECK_OK(tl_avro_get_long(tl_avro_record_get_by_id(v, 1), &id), &err);
		CHECK(id == i * 1000003 - 7);
		const tl_avro_value *name = tl_avro_record_get(v, "name");
		if (i % 3 == 0) {
			CHECK(tl_avro_is_null(name));
		} else {
			char want[32];
			snprintf(want, sizeof(want), "name-%lld", (long long)i);
			CHECK(tl_avro_get_string(name, &b) == 0 && b.len == strlen(want) && memcmp(b.ptr, want, b.len) == 0);
		}
		CHECK_OK(tl_avro_get_double(tl_avro_record_get(v, "score"), &score), &err);
		CHECK(score == (double)i / 4.0);
		const tl_avro_value *tags = tl_avro_record_get_by_id(v, 4);
		CHECK_INT(tags->u.list.n, i % 4);
		const tl_avro_value *counts = tl_avro_record_get(v, "counts");
		CHECK_INT(counts->u.list.n, i % 3);
		for (uint32_t k = 0; k < counts->u.list.n; k++) {
			int32_t c = -1;
			CHECK(counts->u.list.keys[k].len == 2 && counts->u.list.keys[k].ptr[1] == '0' + k);
			CHECK_OK(tl_avro_get_int(&counts->u.list.items[k], &c), &err);
			CHECK_INT(c, (int64_t)k * i);
		}
		CHECK(tl_avro_get_bytes(tl_avro_record_get(v, "digest"), &b) == 0 && b.len == 4 && b.ptr[3] == i + 3);
		CHECK(tl_avro_get_string(tl_avro_record_get(v, "color"), &b) == 0);
		CHECK(memcmp(b.ptr, i % 2 == 0 ? "RED" : "GREEN", b.len) == 0);
		CHECK_OK(tl_avro_get_bool(tl_avro_record_get(v, "flag"), &flag), &err);
		CHECK(flag == (i % 5 == 0));
		CHECK_OK(tl_avro_get_double(tl_avro_record_get(v, "ratio"), &ratio), &err);
		CHECK(ratio == 0.5 * (double)i);
		CHECK(tl_avro_get_bytes(tl_avro_record_get(v, "blob"), &b) == 0 && b.len == i % 7);
		CHECK_OK(tl_avro_get_int(tl_avro_record_get(v, "small"), &small), &err);
		CHECK_INT(small, -i);
		i++;
	}
	CHECK_OK(rc, &err);
	CHECK_INT(i, 50);
	tl_avro_reader_free(r);
	tl_input_close(in);
}

TEST(avro_file_reads_fastavro_fixtures)
{
	check_fastavro_fixture(FIXTURES "fastavro_null.avro", TL_AVRO_CODEC_NULL);
	check_fastavro_fixture(FIXTURES "fastavro_deflate.avro", TL_AVRO_CODEC_DEFLATE);
	check_fastavro_fixture(FIXTURES "fastavro_snappy.avro", TL_AVRO_CODEC_SNAPPY);
	check_fastavro_fixture(FIXTURES "fastavro_zstandard.avro", TL_AVRO_CODEC_ZSTD);
}

static int bytes_eq(tl_bytes b, const char *s)
{
	return b.len == strlen(s) && memcmp(b.ptr, s, b.len) == 0;
}

TEST(avro_file_reads_pyiceberg_manifests)
{
	tl_error err;
	tl_error_clear(&err);
	tl_input *in = tl_input_open_file(FIXTURES "iceberg_manifest.avro", &err);
	CHECK_OK(in ? 0 : -1, &err);
	tl_avro_reader *r = tl_avro_reader_open(in, &err);
	CHECK_OK(r ? 0 : -1, &err);
	const tl_bytes *m = tl_avro_reader_meta(r, "format-version");
	CHECK(m != NULL && m->len == 1 && m->ptr[0] == '2');
	CHECK(tl_avro_reader_meta(r, "partition-spec") != NULL && tl_avro_reader_meta(r, "schema") != NULL);
	const tl_avro_value *entry;
	CHECK_INT(tl_avro_reader_next(r, &entry, &err), 1);
	int32_t status = -1;
	CHECK_OK(tl_avro_get_int(tl_avro_record_get_by_id(entry, 0), &status), &err);
	CHECK_INT(status, 1); /* ADDED */
	const tl_avro_value *df = tl_avro_record_get(entry, "data_file");
	CHECK(df == tl_avro_record_get_by_id(entry, 2));
	tl_bytes path;
	CHECK_OK(tl_avro_get_string(tl_avro_record_get_by_id(df, 100), &path), &err);
	CHECK(path.len > 8 && memcmp(path.ptr + path.len - 8, ".parquet", 8) == 0);
	CHECK(tl_avro_get_string(tl_avro_record_get(df, "file_format"), &path) == 0 && bytes_eq(path, "PARQUET"));
	int64_t count = 0;
	CHECK_OK(tl_avro_get_long(tl_avro_record_get_by_id(df, 103), &count), &err);
	CHECK_INT(count, 3);
	CHECK_OK(tl_avro_get_long(tl_avro_record_get(df, "record_count"), &count), &err);
	CHECK_INT(count, 3);
	/* null_value_counts (110): an array of key/value records, id 2 has one null. */
	const tl_avro_value *nulls = tl_avro_record_get_by_id(df, 110);
	CHECK(nulls != NULL && tl_avro_value_type(nulls) == TL_AVRO_ARRAY && nulls->u.list.n == 2);
	int64_t key = 0, value = 0;
	CHECK_OK(tl_avro_get_long(tl_avro_record_get_by_id(&nulls->u.list.items[1], 121), &key), &err);
	CHECK_OK(tl_avro_get_long(tl_avro_record_get_by_id(&nulls->u.list.items[1], 122), &value), &err);
	CHECK_INT(key, 2);
	CHECK_INT(value, 1);
	/* upper_bounds (128) of column 2 is the string "Oslo". */
	const tl_avro_value *upper = tl_avro_record_get_by_id(df, 128);
	CHECK(upper != NULL && upper->u.list.n == 2);
	tl_bytes bound;
	CHECK_OK(tl_avro_get_bytes(tl_avro_record_get(&upper->u.list.items[1], "value"), &bound), &err);
	CHECK(bytes_eq(bound, "Oslo"));
	CHECK_INT(tl_avro_reader_next(r, &entry, &err), 0);
	tl_avro_reader_free(r);
	tl_input_close(in);

	in = tl_input_open_file(FIXTURES "iceberg_manifest_list.avro", &err);
	CHECK_OK(in ? 0 : -1, &err);
	r = tl_avro_reader_open(in, &err);
	CHECK_OK(r ? 0 : -1, &err);
	CHECK(tl_avro_reader_meta(r, "snapshot-id") != NULL);
	const tl_avro_value *manifest;
	CHECK_INT(tl_avro_reader_next(r, &manifest, &err), 1);
	CHECK_OK(tl_avro_get_string(tl_avro_record_get_by_id(manifest, 500), &path), &err);
	CHECK(path.len > 5 && memcmp(path.ptr + path.len - 5, ".avro", 5) == 0);
	CHECK(tl_avro_get_string(tl_avro_record_get(manifest, "manifest_path"), &bound) == 0 && bound.ptr == path.ptr);
	int64_t length = 0, added_rows = 0;
	CHECK_OK(tl_avro_get_long(tl_avro_record_get_by_id(manifest, 501), &length), &err);
	tl_input *manifest_file = tl_input_open_file(FIXTURES "iceberg_manifest.avro", &err);
	CHECK_OK(manifest_file ? 0 : -1, &err);
	CHECK_INT(length, manifest_file->size); /* generate.py copies the very manifest listed */
	tl_input_close(manifest_file);
	CHECK_OK(tl_avro_get_long(tl_avro_record_get(manifest, "added_rows_count"), &added_rows), &err);
	CHECK_INT(added_rows, 3);
	CHECK_INT(tl_avro_reader_next(r, &manifest, &err), 0);
	tl_avro_reader_free(r);
	tl_input_close(in);
}

/*
 * A file from a later writer, with fields we do not know between the ones we
 * do: the known ones are found by name and by Iceberg id; the others are
 * simply there.
 */
TEST(avro_file_extra_fields_from_newer_writers)
{
	static const char newer[] =
		"{\"type\": \"record\", \"name\": \"manifest_file\", \"fields\": ["
		" {\"name\": \"manifest_path\", \"type\": \"string\", \"field-id\": 500},"
		" {\"name\": \"future_stats\", \"type\": {\"type\": \"map\", \"values\": [\"null\", \"bytes\"]},"
		"  \"field-id\": 900},"
		" {\"name\": \"manifest_length\", \"type\": \"int\", \"field-id\": 501},"
		" {\"name\": \"future_flag\", \"type\": [\"null\", \"boolean\"], \"field-id\": 901}]}";
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *s = tl_avro_schema_parse(newer, strlen(newer), &err);
	CHECK_OK(s ? 0 : -1, &err);
	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "newer.avro");
	tl_avro_writer *w = tl_avro_writer_open(o, s, TL_AVRO_CODEC_DEFLATE, NULL, 0, &err);
	CHECK_OK(w ? 0 : -1, &err);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_avro_value *r = tl_avro_record_new(&arena, s);
	tl_avro_record_field(r, "manifest_path", TL_AVRO_STRING)->u.bytes = (tl_bytes){(const uint8_t *)"m0.avro", 7};
	tl_avro_value *stats = tl_avro_record_field(r, "future_stats", TL_AVRO_MAP);
	tl_avro_init_list(&arena, stats, 1);
	stats->u.list.keys[0] = (tl_bytes){(const uint8_t *)"k", 1};
	tl_avro_item(stats, 0, TL_AVRO_BYTES)->u.bytes = (tl_bytes){(const uint8_t *)"\x01\x02", 2};
	tl_avro_record_field(r, "manifest_length", TL_AVRO_INT)->u.i32 = 4096;
	CHECK_OK(tl_avro_writer_append(w, r, &err), &err);
	CHECK_OK(tl_avro_writer_close(w, &err), &err);
	tl_avro_writer_free(w);
	tl_output_close(o);
	tl_avro_schema_free(s);
	tl_arena_free(&arena);

	tl_input *in = tl_input_from_memory(file.data, file.len, "newer.avro");
	tl_avro_reader *rd = tl_avro_reader_open(in, &err);
	CHECK_OK(rd ? 0 : -1, &err);
	const tl_avro_value *v;
	CHECK_INT(tl_avro_reader_next(rd, &v, &err), 1);
	tl_bytes path;
	int64_t length = 0; /* the reader wants a long: int promotes */
	CHECK_OK(tl_avro_get_string(tl_avro_record_get_by_id(v, 500), &path), &err);
	CHECK(path.len == 7 && memcmp(path.ptr, "m0.avro", 7) == 0);
	CHECK_OK(tl_avro_get_long(tl_avro_record_get(v, "manifest_length"), &length), &err);
	CHECK_INT(length, 4096);
	CHECK(tl_avro_is_null(tl_avro_record_get_by_id(v, 901)));
	CHECK(tl_avro_record_get_by_id(v, 502) == NULL); /* a field this file does not have */
	CHECK_INT(tl_avro_reader_next(rd, &v, &err), 0);
	tl_avro_reader_free(rd);
	tl_input_close(in);
	tl_buf_free(&file);
}

/* Blocks stay under the reader's limit: big records split blocks, a too-big one is refused. */
TEST(avro_file_writer_keeps_blocks_readable)
{
	static const char json[] = "{\"type\": \"record\", \"name\": \"big\", \"fields\": [{\"name\": \"s\", \"type\": \"bytes\"}]}";
	tl_error err;
	tl_error_clear(&err);
	tl_avro_schema *s = tl_avro_schema_parse(json, strlen(json), &err);
	CHECK_OK(s ? 0 : -1, &err);
	size_t big = (size_t)20 << 20;
	uint8_t *payload = calloc(1, (size_t)40 << 20);
	tl_buf file;
	tl_buf_init(&file);
	tl_output *o = tl_output_to_buffer(&file, "big.avro");
	tl_avro_writer *w = tl_avro_writer_open(o, s, TL_AVRO_CODEC_NULL, NULL, 0, &err);
	CHECK_OK(w ? 0 : -1, &err);
	tl_avro_writer_set_block_limits(w, (size_t)1 << 30, 1000);
	tl_arena arena;
	tl_arena_init(&arena, 1024);
	tl_avro_value *r = tl_avro_record_new(&arena, s);
	tl_avro_value *slot = tl_avro_record_field(r, "s", TL_AVRO_BYTES);
	slot->u.bytes = (tl_bytes){payload, (uint32_t)big};
	CHECK_OK(tl_avro_writer_append(w, r, &err), &err);
	payload[big - 1] = 7;
	CHECK_OK(tl_avro_writer_append(w, r, &err), &err); /* 40 MiB together: a second block */
	slot->u.bytes.len = (uint32_t)((size_t)40 << 20);
	CHECK(tl_avro_writer_append(w, r, &err) == -1);
	CHECK(strstr(err.message, "over the") != NULL);
	tl_error_clear(&err);
	CHECK_OK(tl_avro_writer_close(w, &err), &err);
	tl_avro_writer_free(w);
	tl_output_close(o);
	free(payload);
	tl_input *in = tl_input_from_memory(file.data, file.len, "big.avro");
	tl_avro_reader *rd = tl_avro_reader_open(in, &err);
	CHECK_OK(rd ? 0 : -1, &err);
	const tl_avro_value *v;
	tl_bytes b;
	CHECK_INT(tl_avro_reader_next(rd, &v, &err), 1);
	CHECK(tl_avro_get_bytes(tl_avro_record_get(v, "s"), &b) == 0 && b.len == big && b.ptr[big - 1] == 0);
	CHECK_INT(tl_avro_reader_next(rd, &v, &err), 1);
	CHECK(tl_avro_get_bytes(tl_avro_record_get(v, "s"), &b) == 0 && b.len == big && b.ptr[big - 1] == 7);
	CHECK_INT(tl_avro_reader_next(rd, &v, &err), 0);
	tl_avro_reader_free(rd);
	tl_input_close(in);
	tl_arena_free(&arena);
	tl_buf_free(&file);
	tl_avro_schema_free(s);
}
