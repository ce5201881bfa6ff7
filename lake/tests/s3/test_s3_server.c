/*
 * test_s3_server.c: the S3 client against a real S3-compatible server
 * (S3Proxy, started by `make test-s3` through scripts/s3-server.sh, which
 * sets TIERDB_S3_* and TIERDB_S3_TEST_BUCKET). Each test works under its
 * own prefix, so they do not see each other's objects.
 */
#include <stdlib.h>

#include "io/s3_internal.h"
#include "test.h"
#include "tierlake/parquet.h"

/* The server's configuration, or a failed test when the environment lacks it. */
static bool server_config(tl_s3_config *cfg)
{
	tl_error err;
	tl_error_clear(&err);
	if (getenv("TIERDB_S3_ENDPOINT") == NULL || getenv("TIERDB_S3_TEST_BUCKET") == NULL) {
		tl_test_fail(__FILE__, __LINE__, "TIERDB_S3_ENDPOINT and TIERDB_S3_TEST_BUCKET are not set: run `make test-s3`");
		return false;
	}
	if (tl_s3_config_from_env(cfg, &err) < 0) {
		tl_test_fail(__FILE__, __LINE__, "%s", err.message);
		return false;
	}
	cfg->part_size = 5 << 20;
	return true;
}

/* "s3://<test bucket>/<test>/<name>" in a static buffer per slot. */
static const char *uri(int slot, const char *test, const char *name)
{
	static char buf[4][512];
	snprintf(buf[slot], sizeof(buf[slot]), "s3://%s/%s/%s", getenv("TIERDB_S3_TEST_BUCKET"), test, name);
	return buf[slot];
}

static uint8_t *pattern(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len ? len : 1);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
	return p;
}

#define SETUP()                                                                 \
	tl_s3_config cfg;                                                           \
	if (!server_config(&cfg))                                                   \
		return;                                                                 \
	tl_error err;                                                               \
	tl_error_clear(&err);                                                       \
	tl_s3_client *c = tl_s3_client_new(&cfg, &err);                             \
	CHECK(c != NULL)

/* Reads [offset, offset+len) and compares it with want + offset. */
static bool range_is(tl_s3_client *c, const char *u, const uint8_t *want, uint64_t offset, size_t len)
{
	tl_error err;
	tl_error_clear(&err);
	uint8_t *got = malloc(len ? len : 1);
	bool ok = tl_s3_get_range(c, u, offset, got, len, &err) == 0 && memcmp(got, want + offset, len) == 0;
	if (!ok)
		printf("    range %llu+%zu of %s: %s\n", (unsigned long long)offset, len, u, err.message);
	free(got);
	return ok;
}

TEST(s3_put_then_ranged_reads_at_the_edges)
{
	SETUP();
	const char *u = uri(0, "ranges", "obj.bin");
	uint8_t *data = pattern(1000, 1);
	CHECK_OK(tl_s3_put(c, u, data, 1000, false, &err), &err);
	uint64_t size = 0;
	CHECK_OK(tl_s3_size(c, u, &size, &err), &err);
	CHECK_INT(size, 1000);
	CHECK(range_is(c, u, data, 0, 1));
	CHECK(range_is(c, u, data, 999, 1));
	CHECK(range_is(c, u, data, 0, 1000));
	CHECK(range_is(c, u, data, 123, 456));
	CHECK_OK(tl_s3_get_range(c, u, 1000, NULL, 0, &err), &err);
	/* Past the end: a clear error, never a silent short buffer. */
	uint8_t buf[20];
	CHECK_INT(tl_s3_get_range(c, u, 990, buf, 20, &err), -1);
	CHECK(strstr(err.message, "short read: 10 of 20 bytes") != NULL);
	CHECK(strstr(err.message, u) != NULL);
	tl_error_clear(&err);
	CHECK_INT(tl_s3_get_range(c, u, 1000, buf, 1, &err), -1);
	CHECK(strstr(err.message, "HTTP 416") != NULL);
	/* Overwriting replaces. */
	CHECK_OK(tl_s3_put(c, u, "xyz", 3, false, &err), &err);
	CHECK_OK(tl_s3_size(c, u, &size, &err), &err);
	CHECK_INT(size, 3);
	free(data);
	tl_s3_client_free(c);
}

TEST(s3_empty_object_and_odd_keys)
{
	SETUP();
	const char *u = uri(0, "odd", "empty");
	CHECK_OK(tl_s3_put(c, u, "", 0, false, &err), &err);
	uint64_t size = 99;
	CHECK_OK(tl_s3_size(c, u, &size, &err), &err);
	CHECK_INT(size, 0);
	const char *odd = uri(1, "odd", "dir with space/a+b=c&d%e,f;g\xc3\xa9~!.parquet");
	CHECK_OK(tl_s3_put(c, odd, "odd", 3, false, &err), &err);
	char got[3];
	CHECK_OK(tl_s3_get_range(c, odd, 0, got, 3, &err), &err);
	CHECK(memcmp(got, "odd", 3) == 0);
	tl_s3_listing l;
	CHECK_OK(tl_s3_list(c, uri(2, "odd", "dir with"), &l, &err), &err);
	CHECK_INT(l.count, 1);
	CHECK_STR(l.objects[0].key, "odd/dir with space/a+b=c&d%e,f;g\xc3\xa9~!.parquet");
	CHECK_INT(l.objects[0].size, 3);
	tl_s3_listing_free(&l);
	tl_s3_client_free(c);
}

TEST(s3_put_if_absent_conflicts_and_keeps_the_first)
{
	SETUP();
	const char *u = uri(0, "ifabsent", "v1.metadata.json");
	tl_s3_delete(c, u, &err);
	CHECK_OK(tl_s3_put(c, u, "first", 5, true, &err), &err);
	CHECK_INT(tl_s3_put(c, u, "second!", 7, true, &err), -1);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	CHECK(strstr(err.message, "PUT (if absent)") != NULL);
	CHECK(strstr(err.message, "HTTP 412 PreconditionFailed") != NULL);
	CHECK(strstr(err.message, u) != NULL);
	uint64_t size;
	tl_error_clear(&err);
	CHECK_OK(tl_s3_size(c, u, &size, &err), &err);
	CHECK_INT(size, 5);
	tl_s3_client_free(c);
}

TEST(s3_delete_and_missing_objects)
{
	SETUP();
	const char *u = uri(0, "delete", "gone");
	CHECK_OK(tl_s3_put(c, u, "x", 1, false, &err), &err);
	CHECK_OK(tl_s3_delete(c, u, &err), &err);
	CHECK_OK(tl_s3_delete(c, u, &err), &err);   /* S3 says 204 for a missing key too */
	uint64_t size;
	CHECK_INT(tl_s3_size(c, u, &size, &err), -1);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	/* HEAD has no body; the client asks again to learn the code. */
	char head_message[600];
	snprintf(head_message, sizeof(head_message), "S3 HEAD %s: HTTP 404 NoSuchKey", u);
	CHECK(strstr(err.message, head_message) != NULL);
	char b;
	tl_error_clear(&err);
	CHECK_INT(tl_s3_get_range(c, u, 0, &b, 1, &err), -1);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	CHECK(strstr(err.message, "NoSuchKey") != NULL);
	tl_error_clear(&err);
	CHECK(tl_s3_input_open(&cfg, u, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	tl_error_clear(&err);
	CHECK_INT(tl_s3_get_range(c, "s3://tierdb-no-such-bucket/k", 0, &b, 1, &err), -1);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	CHECK(strstr(err.message, "s3://tierdb-no-such-bucket/k: HTTP 404 NoSuchBucket") != NULL);
	tl_error_clear(&err);
	tl_s3_listing l;
	CHECK_INT(tl_s3_list(c, "s3://tierdb-no-such-bucket/p/", &l, &err), -1);
	CHECK(strstr(err.message, "NoSuchBucket") != NULL);
	CHECK(l.count == 0 && l.objects == NULL);
	tl_s3_client_free(c);
}

TEST(s3_wrong_secret_names_the_object_not_the_secret)
{
	SETUP();
	const char *u = uri(0, "auth", "obj");
	CHECK_OK(tl_s3_put(c, u, "abc", 3, false, &err), &err);
	tl_s3_client_free(c);
	cfg.secret_key = "wrong-secret-4711";
	c = tl_s3_client_new(&cfg, &err);
	CHECK(c != NULL);
	char buf[3];
	CHECK_INT(tl_s3_get_range(c, u, 0, buf, 3, &err), -1);
	CHECK(strstr(err.message, u) != NULL);
	CHECK(strstr(err.message, "HTTP 403 SignatureDoesNotMatch") != NULL);
	CHECK(strstr(err.message, "wrong-secret-4711") == NULL);
	CHECK(strstr(err.message, getenv("TIERDB_S3_SECRET_KEY")) == NULL);
	uint64_t size;
	tl_error_clear(&err);
	CHECK_INT(tl_s3_size(c, u, &size, &err), -1);
	CHECK(strstr(err.message, "S3 HEAD") != NULL);
	CHECK(strstr(err.message, "HTTP 403 SignatureDoesNotMatch") != NULL);
	tl_error_clear(&err);
	CHECK_INT(tl_s3_put(c, u, "no", 2, false, &err), -1);
	CHECK(strstr(err.message, "S3 PUT") != NULL && strstr(err.message, "403") != NULL);
	tl_s3_client_free(c);
}

#define MIB (1u << 20)

TEST(s3_multipart_upload_of_12_mib)
{
	SETUP();
	const char *u = uri(0, "multipart", "big.bin");
	size_t total = 12 * MIB;
	uint8_t *data = pattern(total, 2);
	tl_s3_upload *up = tl_s3_upload_begin(c, u, &err);
	CHECK(up != NULL);
	CHECK_OK(tl_s3_upload_part(up, data, 5 * MIB, &err), &err);
	CHECK_OK(tl_s3_upload_part(up, data + 5 * MIB, 5 * MIB, &err), &err);
	CHECK_OK(tl_s3_upload_part(up, data + 10 * MIB, 2 * MIB, &err), &err);
	CHECK_INT(tl_s3_upload_parts(up), 3);
	CHECK_OK(tl_s3_upload_complete(up, false, &err), &err);
	tl_s3_upload_free(up);
	uint64_t size;
	CHECK_OK(tl_s3_size(c, u, &size, &err), &err);
	CHECK_INT(size, total);
	/* Across the part boundaries, and the whole object. */
	CHECK(range_is(c, u, data, 5 * MIB - 7, 14));
	CHECK(range_is(c, u, data, 10 * MIB - 1, 2));
	CHECK(range_is(c, u, data, total - 1, 1));
	CHECK(range_is(c, u, data, 0, total));
	free(data);
	tl_s3_client_free(c);
}

/* Writes len bytes of data through out in uneven pieces. */
static int write_uneven(tl_output *out, const uint8_t *data, size_t len, tl_error *err)
{
	for (size_t at = 0, step = 1; at < len; step = step * 7 + 13) {
		size_t n = step % (3 * MIB) + 1;
		if (n > len - at)
			n = len - at;
		if (tl_output_write(out, data + at, n, err) < 0)
			return -1;
		at += n;
	}
	return 0;
}

static bool object_absent(tl_s3_client *c, const char *u)
{
	tl_error err;
	tl_error_clear(&err);
	uint64_t size;
	return tl_s3_size(c, u, &size, &err) < 0 && err.code == TL_ERR_NOT_FOUND;
}

TEST(s3_output_streams_a_multipart_object_and_input_reads_it)
{
	SETUP();
	const char *u = uri(0, "output", "stream.bin");
	size_t total = 12 * MIB + 12345;
	uint8_t *data = pattern(total, 3);
	tl_output *out = tl_s3_output_create(&cfg, u, false, &err);
	CHECK(out != NULL);
	CHECK_OK(write_uneven(out, data, total, &err), &err);
	CHECK_INT(out->offset, total);
	CHECK_OK(out->finish(out, &err), &err);
	tl_output_close(out);
	tl_input *in = tl_s3_input_open(&cfg, u, &err);
	CHECK(in != NULL);
	CHECK_INT(in->size, total);
	uint8_t *got = malloc(total);
	CHECK_OK(tl_input_read(in, 0, got, total, &err), &err);
	CHECK(memcmp(got, data, total) == 0);
	CHECK_INT(tl_input_read(in, total - 1, got, 2, &err), -1);
	CHECK_INT(err.code, TL_ERR_CORRUPT);
	tl_input_close(in);
	free(got);
	free(data);
	tl_s3_client_free(c);
}

TEST(s3_output_if_absent_conflicts_small_and_multipart)
{
	SETUP();
	const char *u = uri(0, "output-if-absent", "taken");
	CHECK_OK(tl_s3_put(c, u, "first", 5, false, &err), &err);
	size_t sizes[2] = {100, 6 * MIB};
	for (int i = 0; i < 2; i++) {
		uint8_t *data = pattern(sizes[i], 4);
		tl_output *out = tl_s3_output_create(&cfg, u, true, &err);
		CHECK(out != NULL);
		CHECK_OK(tl_output_write(out, data, sizes[i], &err), &err);
		int rc = out->finish(out, &err);
		tl_output_close(out);
		free(data);
		CHECK_INT(rc, -1);
		CHECK_INT(err.code, TL_ERR_CONFLICT);
		tl_error_clear(&err);
		uint64_t size;
		CHECK_OK(tl_s3_size(c, u, &size, &err), &err);
		CHECK_INT(size, 5);
	}
	/* Absent: it is made. */
	const char *fresh = uri(1, "output-if-absent", "fresh");
	tl_s3_delete(c, fresh, &err);
	tl_output *out = tl_s3_output_create(&cfg, fresh, true, &err);
	CHECK(out != NULL);
	CHECK_OK(tl_output_write(out, "new", 3, &err), &err);
	CHECK_OK(out->finish(out, &err), &err);
	tl_output_close(out);
	uint64_t size;
	CHECK_OK(tl_s3_size(c, fresh, &size, &err), &err);
	CHECK_INT(size, 3);
	tl_s3_client_free(c);
}

TEST(s3_output_closed_without_finish_leaves_nothing)
{
	SETUP();
	size_t sizes[2] = {10, 7 * MIB};   /* buffered only; one part already sent */
	for (int i = 0; i < 2; i++) {
		const char *u = uri(0, "abandon", i == 0 ? "small" : "large");
		uint8_t *data = pattern(sizes[i], 5);
		tl_output *out = tl_s3_output_create(&cfg, u, false, &err);
		CHECK(out != NULL);
		CHECK_OK(tl_output_write(out, data, sizes[i], &err), &err);
		tl_output_close(out);
		free(data);
		CHECK(object_absent(c, u));
	}
	tl_s3_listing l;
	CHECK_OK(tl_s3_list(c, uri(0, "abandon", ""), &l, &err), &err);
	CHECK_INT(l.count, 0);
	tl_s3_listing_free(&l);
	tl_s3_client_free(c);
}

TEST(s3_list_follows_continuation_past_1000_keys)
{
	SETUP();
	enum { N = 1100 };
	char name[64];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "k%05d", i);
		CHECK_OK(tl_s3_put(c, uri(0, "list/many", name), name, (size_t)(i % 7), false, &err), &err);
	}
	CHECK_OK(tl_s3_put(c, uri(0, "list/other", "x"), "x", 1, false, &err), &err);
	tl_s3_listing l;
	CHECK_OK(tl_s3_list(c, uri(0, "list/many", ""), &l, &err), &err);
	CHECK_INT(l.count, N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "list/many/k%05d", i);
		CHECK_STR(l.objects[i].key, name);
		CHECK_INT(l.objects[i].size, i % 7);
	}
	tl_s3_listing_free(&l);
	/* A prefix that is not a directory, and one that matches nothing. */
	CHECK_OK(tl_s3_list(c, uri(0, "list/many", "k0100"), &l, &err), &err);
	CHECK_INT(l.count, 10);
	CHECK_STR(l.objects[0].key, "list/many/k01000");
	tl_s3_listing_free(&l);
	CHECK_OK(tl_s3_list(c, uri(0, "list/none", ""), &l, &err), &err);
	CHECK_INT(l.count, 0);
	tl_s3_listing_free(&l);
	tl_s3_client_free(c);
}

/* A two-column schema: id INT64 required, label STRING optional. */
static tl_pq_schema *sample_schema(void)
{
	tl_pq_schema *s = tl_pq_schema_new();
	tl_pq_schema_add(s, &(tl_pq_column){.name = "id", .physical = TL_PQ_INT64, .required = true, .field_id = 1});
	tl_pq_schema_add(s, &(tl_pq_column){.name = "label", .physical = TL_PQ_BYTE_ARRAY, .field_id = 2,
	                                    .logical = TL_PQ_LOGICAL_STRING});
	return s;
}

#define PQ_ROWS 200000

static int write_sample(tl_output *out, tl_error *err)
{
	tl_pq_schema *s = sample_schema();
	tl_pq_writer_options opts;
	tl_pq_writer_options_init(&opts);
	opts.row_group_rows = 50000;
	opts.dictionary = false;
	tl_pq_writer *w = tl_pq_writer_open(out, s, &opts, err);
	tl_pq_batch *b = tl_pq_batch_new(s, 10000);
	int rc = w ? 0 : -1;
	char text[32];
	for (int64_t base = 0; rc == 0 && base < PQ_ROWS; base += 10000) {
		tl_arena_reset(&b->arena);
		for (int64_t i = 0; i < 10000; i++) {
			int64_t id = base + i;
			b->columns[0].v.i64[i] = id;
			b->columns[1].valid[i] = id % 11 != 0;
			int n = snprintf(text, sizeof(text), "row-%lld", (long long)id * 7919);
			b->columns[1].v.bytes[i] = tl_arena_copy(&b->arena, text, (uint32_t)n);
		}
		b->nrows = 10000;
		rc = tl_pq_writer_write(w, b, err);
	}
	if (rc == 0)
		rc = tl_pq_writer_close(w, err);
	tl_pq_writer_free(w);
	tl_pq_batch_free(b);
	tl_pq_schema_free(s);
	return rc;
}

/* Reads every row back and checks each value; the row count or -1. */
static int64_t check_sample(tl_input *in, tl_error *err)
{
	tl_pq_reader *r = tl_pq_reader_open(in, err);
	if (r == NULL)
		return -1;
	tl_pq_batch *b = tl_pq_reader_batch_new(r, 4096);
	int64_t seen = 0, n;
	char text[32];
	while ((n = tl_pq_reader_next(r, b, err)) > 0) {
		for (int64_t i = 0; i < n; i++, seen++) {
			int len = snprintf(text, sizeof(text), "row-%lld", (long long)seen * 7919);
			bool null = tl_vector_is_null(&b->columns[1], i);
			const tl_bytes *v = &b->columns[1].v.bytes[i];
			if (b->columns[0].v.i64[i] != seen || null != (seen % 11 == 0) ||
			    (!null && (v->len != (uint32_t)len || memcmp(v->ptr, text, (size_t)len) != 0))) {
				tl_error_set(err, TL_ERR_CORRUPT, "row %lld differs", (long long)seen);
				n = -1;
				break;
			}
		}
		if (n < 0)
			break;
	}
	tl_pq_batch_free(b);
	tl_pq_reader_free(r);
	return n < 0 ? -1 : seen;
}

TEST(s3_parquet_written_and_read_through_s3)
{
	SETUP();
	const char *u = uri(0, "parquet", "data/00000-sample.parquet");
	tl_output *out = tl_s3_output_create(&cfg, u, true, &err);
	CHECK(out != NULL);
	int rc = write_sample(out, &err);
	if (rc == 0)
		rc = out->finish(out, &err);
	tl_output_close(out);
	CHECK_OK(rc, &err);
	tl_input *in = tl_s3_input_open(&cfg, u, &err);
	CHECK(in != NULL);
	int64_t rows = check_sample(in, &err);
	tl_input_close(in);
	CHECK_OK(rows < 0 ? -1 : 0, &err);
	CHECK_INT(rows, PQ_ROWS);
	tl_s3_client_free(c);
}
