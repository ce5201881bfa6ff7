/*
 * table_fixture.c: the workloads of table_fixture.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_storage.h"
#include "table_fixture.h"
#include "test.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_writer.h"

int fixture_write_all(const char *location, const char *text, int mode, tl_error *err)
{
	tl_output *out = tl_storage_create(location, mode, err);
	if (out == NULL)
		return -1;
	int rc = tl_output_write(out, text, strlen(text), err);
	if (rc == 0)
		rc = out->finish(out, err);
	tl_output_close(out);
	return rc;
}

char *fixture_read_all(const char *location, tl_error *err)
{
	tl_input *in = tl_storage_open_read(location, err);
	if (in == NULL)
		return NULL;
	char *text = calloc(1, (size_t)in->size + 1);
	if (tl_input_read(in, 0, text, (size_t)in->size, err) < 0) {
		free(text);
		text = NULL;
	}
	tl_input_close(in);
	return text;
}

const tl_storage_entry *fixture_find_entry(const tl_storage_list *l, const char *name)
{
	for (size_t i = 0; i < l->count; i++)
		if (strcmp(l->entries[i].name, name) == 0)
			return &l->entries[i];
	return NULL;
}

tl_ice_table *fixture_create_table(const char *location, tl_error *err)
{
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_ice_field fields[] = {{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}}};
	if (tl_ice_schema_init(&schema, 0, fields, 1, err) < 0)
		return NULL;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_table *t = tl_ice_table_create(location, &schema, &spec, NULL, 0, err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	return t;
}

tl_ice_commit *fixture_begin_append(tl_ice_table *t, int64_t first, int rows, tl_error *err)
{
	tl_ice_writer *w = tl_ice_writer_open_data(t, NULL, err);
	tl_pq_batch *b = w ? tl_pq_batch_new(tl_ice_writer_schema(w), rows) : NULL;
	int rc = b ? 0 : -1;
	if (w != NULL && b == NULL)
		tl_error_nomem(err, "for a batch");
	for (int i = 0; rc == 0 && i < rows; i++)
		b->columns[0].v.i64[i] = first + i;
	if (b)
		b->nrows = rows;
	if (rc == 0)
		rc = tl_ice_writer_write(w, b, err);
	if (rc == 0)
		rc = tl_ice_writer_close(w, err);
	tl_ice_commit *c = rc == 0 ? tl_ice_commit_begin(t, TL_ICE_OP_APPEND, err) : NULL;
	rc = c ? 0 : -1;
	for (int i = 0; rc == 0 && i < tl_ice_writer_nfiles(w); i++)
		rc = tl_ice_commit_add_file(c, tl_ice_writer_file(w, i), err);
	tl_pq_batch_free(b);
	tl_ice_writer_free(w);
	if (rc < 0) {
		tl_ice_commit_free(c);
		return NULL;
	}
	return c;
}

int fixture_append_rows(const char *location, int64_t first, int rows, tl_error *err)
{
	tl_ice_table *t = tl_ice_table_open(location, err);
	tl_ice_commit *c = t ? fixture_begin_append(t, first, rows, err) : NULL;
	int rc = c ? tl_ice_commit_finish(c, NULL, err) : -1;
	tl_ice_commit_free(c);
	tl_ice_table_free(t);
	return rc;
}

int fixture_read_ids(const tl_ice_table_metadata *md, int64_t *rows, int64_t *sum, tl_error *err)
{
	*rows = *sum = 0;
	tl_ice_scan *scan = tl_ice_scan_plan(md, TL_ICE_NO_SNAPSHOT, NULL, err);
	int32_t ids[1] = {1};
	tl_ice_reader *r = scan ? tl_ice_reader_open(scan, ids, 1, err) : NULL;
	tl_pq_batch *b = r ? tl_ice_reader_batch_new(r, 64) : NULL;
	int rc = b ? 0 : -1;
	if (r != NULL && b == NULL)
		tl_error_nomem(err, "for a batch");
	for (int64_t n; rc == 0 && (n = tl_ice_reader_next(r, b, err)) != 0;) {
		if (n < 0)
			rc = -1;
		for (int64_t i = 0; i < n; i++)
			*sum += b->columns[0].v.i64[i];
		*rows += n > 0 ? n : 0;
	}
	tl_pq_batch_free(b);
	tl_ice_reader_free(r);
	tl_ice_scan_free(scan);
	return rc;
}

int fixture_read_table(const char *location, int64_t *version, int64_t *rows, int64_t *sum, tl_error *err)
{
	tl_ice_table *t = tl_ice_table_open(location, err);
	if (t == NULL)
		return -1;
	*version = t->version;
	int rc = fixture_read_ids(t->metadata, rows, sum, err);
	tl_ice_table_free(t);
	return rc;
}

/* No metadata version past `version` and no temporary file is visible in the table's metadata/. */
static bool metadata_clean(const char *location, int64_t version)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/metadata", location);
	tl_storage_list l = {0};
	if (tl_storage_list_dir(p, 0, &l, NULL) < 0)
		return false;
	bool ok = true;
	for (size_t i = 0; ok && i < l.count; i++) {
		const char *name = l.entries[i].name;
		long long v;
		char rest[64];
		ok = name[0] != '.' && !(sscanf(name, "v%lld%63s", &v, rest) == 2 && strcmp(rest, ".metadata.json") == 0 &&
		                         v > version);
	}
	tl_storage_list_free(&l);
	return ok;
}

/*
 * Appends 5 rows under an I/O error at each storage call n = 1..calls, once
 * (a transient error) or from n on (the storage went away). After each
 * attempt, read without faults: a failed attempt left the version, rows and
 * sum as they were, a successful one added exactly its rows.
 */
void fixture_walk_storage_faults(const char *dir, const char *scheme, bool sticky)
{
	tl_error err;
	tl_error_clear(&err);
	fault_storage fs;
	tl_storage *inner = tl_storage_for(dir, &err);
	CHECK_OK(inner ? 0 : -1, &err);
	fault_storage_init(&fs, inner);
	/* A run without faults counts the calls the workload makes. */
	tl_storage_register(scheme, &fs.base);
	fault_storage_arm(&fs, 0, false);
	int rc = fixture_append_rows(dir, 0, 5, &err);
	long calls = fs.calls;
	tl_storage_register(scheme, NULL);
	CHECK_OK(rc, &err);
	CHECK(calls > 10);
	int64_t version = 2, rows = 5, sum = 10, next = 5;
	int failures = 0;
	/*
	 * Calls 1..calls of each attempt. (A successful attempt whose fault hit
	 * the ignored hint update leaves the hint stale, so later attempts make
	 * a call more to walk past it: the publish moves a call later, and the
	 * range reaches past it by a few calls.)
	 */
	bool published_failed = false;
	for (long n = 1; n <= calls + 4; n++) {
		tl_storage_register(scheme, &fs.base);
		fault_storage_arm(&fs, n, sticky);
		tl_error_clear(&err);
		rc = fixture_append_rows(dir, next, 5, &err);
		tl_storage_register(scheme, NULL);
		if (rc < 0) {
			failures++;
			published_failed = published_failed || strstr(err.message, "publishing") != NULL;
			if (fs.injected == 0 || strstr(err.message, "injected I/O error") == NULL)
				tl_test_fail(__FILE__, __LINE__, "call %ld: failed without an injected error: %s", n, err.message);
		} else {
			version++;
			rows += 5;
			sum += 5 * next + 10;
		}
		next += 5;
		int64_t got_version, got_rows, got_sum;
		tl_error rerr;
		tl_error_clear(&rerr);
		if (fixture_read_table(dir, &got_version, &got_rows, &got_sum, &rerr) < 0) {
			tl_test_fail(__FILE__, __LINE__, "fault at call %ld: table unreadable: %s", n, rerr.message);
			break;
		}
		if (got_version != version || got_rows != rows || got_sum != sum || !metadata_clean(dir, version)) {
			tl_test_fail(__FILE__, __LINE__,
			             "fault at call %ld (%s): version %" PRId64 " rows %" PRId64 " sum %" PRId64
			             ", want %" PRId64 " %" PRId64 " %" PRId64 " and no newer metadata",
			             n, rc < 0 ? err.message : "commit succeeded", got_version, got_rows, got_sum, version, rows,
			             sum);
			break;
		}
	}
	/* Without faults the table takes commits again. */
	tl_error_clear(&err);
	rc = fixture_append_rows(dir, next, 5, &err);
	int64_t got_version = 0, got_rows = 0, got_sum = 0;
	if (rc == 0)
		rc = fixture_read_table(dir, &got_version, &got_rows, &got_sum, &err);
	CHECK_OK(rc, &err);
	CHECK_INT(got_version, version + 1);
	CHECK_INT(got_rows, rows + 5);
	/* The walk reached the commit point, and most calls come before it. */
	CHECK(published_failed);
	CHECK(failures >= calls / 2);
}

