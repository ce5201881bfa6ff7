/*
 * test_s3_nomem.c: the S3 client and storage under allocation failure
 * (fault_alloc.h), against the server `make test-s3` starts: a workload of
 * every storage operation, on its own storage so that nothing it allocates
 * outlives the run, must fail with TL_ERR_NOMEM or succeed at every failed
 * allocation, and leak nothing. A failure must never turn into a wrong
 * request: an object written when the run reports success is whole, and a
 * failed run leaves no object half made (checked after each run).
 */
#include <stdlib.h>
#include <string.h>

#include "fault_alloc.h"
#include "test.h"
#include "tierlake/buf.h"
#include "tierlake/env.h"
#include "tierlake/s3.h"
#include "tierlake/storage.h"

static char base[256];

static const char *at(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", base, name);
	return buf;
}

/* Every operation once: write, commit primitive, replace, list, stat, ranged read, remove, remove_all. */
static int storage_workload(tl_error *err)
{
	tl_s3_config cfg;
	if (tl_s3_config_from_env(&cfg, err) < 0)
		return -1;
	tl_storage *s = tl_storage_s3_new(&cfg, err);
	if (s == NULL)
		return -1;
	char a[512], b[512];
	static const char text[] = "the quick brown fox jumps over the lazy dog";
	int rc = 0;
	tl_output *out = s->create(s, at(a, sizeof(a), "dir/obj"), TL_STORAGE_CREATE_REPLACE, err);
	rc = out ? 0 : -1;
	if (rc == 0)
		rc = tl_output_write(out, text, sizeof(text) - 1, err);
	if (rc == 0)
		rc = out->finish(out, err);
	tl_output_close(out);
	if (rc == 0) {
		rc = s->create_if_absent(s, at(a, sizeof(a), "dir/v1"), "v1", 2, err);
		if (rc < 0 && err->code == TL_ERR_CONFLICT) {  /* a run before this one made it */
			tl_error_clear(err);
			rc = 0;
		}
	}
	if (rc == 0)
		rc = s->replace(s, at(a, sizeof(a), "hint"), "1", 1, err);
	tl_storage_list list = {0};
	if (rc == 0)
		rc = s->list(s, base, 0, &list, err);
	tl_storage_list_free(&list);
	if (rc == 0)
		rc = s->list(s, base, TL_STORAGE_LIST_RECURSIVE, &list, err);
	tl_storage_list_free(&list);
	bool is_dir = false;
	if (rc == 0)
		rc = s->stat(s, at(a, sizeof(a), "dir"), NULL, &is_dir, err);
	tl_input *in = rc == 0 ? s->open_read(s, at(a, sizeof(a), "dir/obj"), err) : NULL;
	char word[6] = {0};
	if (rc == 0)
		rc = in ? tl_input_read(in, 4, word, 5, err) : -1;
	tl_input_close(in);
	if (rc == 0 && strcmp(word, "quick") != 0)
		rc = tl_error_set(err, TL_ERR_CORRUPT, "read \"%s\", not \"quick\"", word);
	char *canon = rc == 0 ? s->canonical(s, at(b, sizeof(b), "dir"), err) : NULL;
	if (rc == 0 && canon == NULL)
		rc = -1;
	tl_free(canon);
	if (rc == 0)
		rc = s->remove(s, at(a, sizeof(a), "hint"), err);
	if (rc == 0)
		rc = s->remove_all(s, base, err);
	tl_storage_s3_free(s);
	return rc;
}

/* Whatever a run did, the object it wrote is whole or absent: a failure never sends a cut-short body. */
static bool objects_whole(void)
{
	char a[512];
	tl_input *in = tl_storage_open_read(at(a, sizeof(a), "dir/obj"), NULL);
	if (in == NULL)
		return true;
	char got[64] = {0};
	bool whole = in->size == 43 && tl_input_read(in, 0, got, 43, NULL) == 0 &&
	             strcmp(got, "the quick brown fox jumps over the lazy dog") == 0;
	tl_input_close(in);
	return whole;
}

static int checked_workload(tl_error *err)
{
	int rc = storage_workload(err);
	if (!objects_whole())
		tl_test_fail(__FILE__, __LINE__, "a run left a partial object (rc %d: %s)", rc, err->message);
	return rc;
}

static bool setup(void)
{
	if (getenv("TIERDB_S3_ENDPOINT") == NULL || getenv("TIERDB_S3_TEST_BUCKET") == NULL) {
		tl_test_fail(__FILE__, __LINE__, "TIERDB_S3_ENDPOINT and TIERDB_S3_TEST_BUCKET are not set: run `make test-s3`");
		return false;
	}
	snprintf(base, sizeof(base), "s3://%s/nomem", getenv("TIERDB_S3_TEST_BUCKET"));
	/* The built-in storage, made before any fault run, checks objects between runs. */
	return tl_storage_for(base, NULL) != NULL;
}

TEST(s3_storage_allocation_failures_are_nomem_and_leak_nothing)
{
	if (!setup())
		return;
	CHECK(run_with_faults("s3 storage", checked_workload, false) > 10);
	CHECK(run_with_faults("s3 storage (sticky)", checked_workload, true) > 10);
}
