/*
 * test_s3_storage.c: the S3 storage (tl_storage over the S3 client, chosen
 * for s3:// locations) against the S3-compatible server `make test-s3`
 * starts: every storage operation with object-store semantics, the commit
 * primitive raced by processes, an Iceberg table created, committed and
 * read on S3 through the same calls as on local files, and a commit driven
 * through an I/O error at each storage call.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "table_fixture.h"
#include "test.h"
#include "tierlake/buf.h"
#include "tierlake/s3.h"
#include "tierlake/storage.h"

/* "s3://<test bucket>/storage/<test>/<name>" in buf, or NULL (and a failed test) without a server. */
static const char *location(char *buf, size_t cap, const char *test, const char *name)
{
	const char *bucket = getenv("TIERDB_S3_TEST_BUCKET");
	if (bucket == NULL || getenv("TIERDB_S3_ENDPOINT") == NULL) {
		tl_test_fail(__FILE__, __LINE__, "TIERDB_S3_ENDPOINT and TIERDB_S3_TEST_BUCKET are not set: run `make test-s3`");
		return NULL;
	}
	snprintf(buf, cap, "s3://%s/storage/%s%s%s", bucket, test, name[0] ? "/" : "", name);
	return buf;
}

#define LOC(slot, name) location(slot, sizeof(slot), test_name, name)

TEST(s3_storage_every_operation)
{
	const char *test_name = "ops";
	char a[512], b[512];
	tl_error err, e2;
	tl_error_clear(&err);
	if (LOC(a, "") == NULL)
		return;
	CHECK_OK(tl_storage_remove_all(a, &err), &err);
	CHECK(strcmp(tl_storage_for(a, &err)->name, "s3") == 0);
	/* Exclusive create, then a conflict; replace mode overwrites. */
	CHECK_OK(tl_storage_make_dirs(LOC(a, "x/y"), &err), &err);
	CHECK_OK(fixture_write_all(LOC(a, "a/b/one.txt"), "hello storage", TL_STORAGE_CREATE_EXCLUSIVE, &err), &err);
	tl_error_clear(&e2);
	CHECK(fixture_write_all(LOC(a, "a/b/one.txt"), "x", TL_STORAGE_CREATE_EXCLUSIVE, &e2) < 0);
	CHECK_INT(e2.code, TL_ERR_CONFLICT);
	CHECK_OK(fixture_write_all(LOC(a, "a/two.txt"), "long text replaced", TL_STORAGE_CREATE_REPLACE, &err), &err);
	CHECK_OK(fixture_write_all(LOC(a, "a/two.txt"), "short", TL_STORAGE_CREATE_REPLACE, &err), &err);
	/* Ranged reads; past the end is an error without a request. */
	tl_input *in = tl_storage_open_read(LOC(a, "a/b/one.txt"), &err);
	CHECK(in != NULL);
	if (in == NULL)
		return;
	char part[8] = {0};
	CHECK_INT(in->size, 13);
	CHECK_OK(tl_input_read(in, 6, part, 7, &err), &err);
	CHECK(strcmp(part, "storage") == 0);
	tl_error_clear(&e2);
	CHECK(tl_input_read(in, 10, part, 4, &e2) < 0 && e2.code == TL_ERR_CORRUPT);
	tl_input_close(in);
	char *two = fixture_read_all(LOC(a, "a/two.txt"), &err);
	CHECK(two != NULL && strcmp(two, "short") == 0);
	free(two);
	/* stat: an object, a prefix standing for a directory, nothing. */
	uint64_t size = 0;
	bool is_dir = true;
	CHECK_OK(tl_storage_stat(LOC(a, "a/b/one.txt"), &size, &is_dir, &err), &err);
	CHECK(size == 13 && !is_dir);
	CHECK_OK(tl_storage_stat(LOC(a, "a"), NULL, &is_dir, &err), &err);
	CHECK(is_dir);
	tl_error_clear(&e2);
	CHECK(tl_storage_stat(LOC(a, "nothing"), NULL, NULL, &e2) < 0 && e2.code == TL_ERR_NOT_FOUND);
	/* "a/b" is a prefix of "a/bb": stat and listing stop at the '/'. */
	CHECK_OK(fixture_write_all(LOC(a, "a/bb"), "bb", TL_STORAGE_CREATE_REPLACE, &err), &err);
	CHECK(tl_storage_is_file(LOC(a, "a/bb")) && !tl_storage_is_file(LOC(a, "a")));
	/* One level: files and the folded directory; recursive: every object. */
	tl_storage_list l = {0};
	CHECK_OK(tl_storage_list_dir(LOC(a, "a"), 0, &l, &err), &err);
	CHECK_INT(l.count, 3);
	CHECK(fixture_find_entry(&l, "b") && fixture_find_entry(&l, "b")->is_dir);
	CHECK(fixture_find_entry(&l, "two.txt") && fixture_find_entry(&l, "two.txt")->size == 5);
	CHECK(fixture_find_entry(&l, "bb") && !fixture_find_entry(&l, "bb")->is_dir);
	tl_storage_list_free(&l);
	CHECK_OK(tl_storage_list_dir(LOC(a, ""), TL_STORAGE_LIST_RECURSIVE, &l, &err), &err);
	CHECK_INT(l.count, 3);
	CHECK(fixture_find_entry(&l, "a/b/one.txt") && fixture_find_entry(&l, "a/b/one.txt")->size == 13);
	tl_storage_list_free(&l);
	/* An empty prefix lists as empty (object stores cannot tell it from a missing directory). */
	CHECK_OK(tl_storage_list_dir(LOC(a, "missing"), 0, &l, &err), &err);
	CHECK_INT(l.count, 0);
	/* The commit primitive and replace. */
	CHECK_OK(tl_storage_create_if_absent(LOC(a, "v1"), "first", 5, &err), &err);
	tl_error_clear(&e2);
	CHECK(tl_storage_create_if_absent(LOC(a, "v1"), "second", 6, &e2) < 0 && e2.code == TL_ERR_CONFLICT);
	char *v1 = fixture_read_all(LOC(a, "v1"), &err);
	CHECK(v1 != NULL && strcmp(v1, "first") == 0);
	free(v1);
	CHECK_OK(tl_storage_replace(LOC(a, "hint"), "1", 1, &err), &err);
	CHECK_OK(tl_storage_replace(LOC(a, "hint"), "22", 2, &err), &err);
	char *hint = fixture_read_all(LOC(a, "hint"), &err);
	CHECK(hint != NULL && strcmp(hint, "22") == 0);
	free(hint);
	/* canonical keeps the URI; remove is quiet about a missing object; remove_all empties the prefix. */
	char *canon = tl_storage_canonical(LOC(a, "a/b"), &err);
	CHECK(canon != NULL && strcmp(canon, LOC(b, "a/b")) == 0);
	free(canon);
	CHECK_OK(tl_storage_remove(LOC(a, "a/two.txt"), &err), &err);
	CHECK_OK(tl_storage_remove(LOC(a, "a/two.txt"), &err), &err);
	CHECK(!tl_storage_is_file(LOC(a, "a/two.txt")));
	CHECK_OK(tl_storage_remove_all(LOC(a, ""), &err), &err);
	CHECK_OK(tl_storage_list_dir(LOC(a, ""), TL_STORAGE_LIST_RECURSIVE, &l, &err), &err);
	CHECK_INT(l.count, 0);
	tl_storage_list_free(&l);
}

/* Each of nproc processes, with its own client, publishes its own content at once; returns the winners. */
TEST(s3_storage_create_if_absent_one_winner_among_processes)
{
	const char *test_name = "race";
	char at[512];
	tl_error err;
	tl_error_clear(&err);
	if (LOC(at, "v2.metadata.json") == NULL)
		return;
	CHECK_OK(tl_storage_remove(at, &err), &err);
	enum { NPROC = 6 };
	int gate[2];
	CHECK(pipe(gate) == 0);
	pid_t pids[NPROC];
	for (int i = 0; i < NPROC; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char c;
			close(gate[1]);
			(void)!read(gate[0], &c, 1);
			tl_s3_config cfg;
			tl_storage *s = tl_s3_config_from_env(&cfg, NULL) == 0 ? tl_storage_s3_new(&cfg, NULL) : NULL;
			char content[32];
			int n = snprintf(content, sizeof(content), "writer %d", i);
			tl_error e;
			tl_error_clear(&e);
			int rc = s ? s->create_if_absent(s, at, content, (size_t)n, &e) : -1;
			_exit(rc == 0 ? 0 : e.code == TL_ERR_CONFLICT ? 1 : 2);
		}
	}
	close(gate[0]);
	close(gate[1]); /* EOF releases them all at once */
	int winners = 0, winner = -1, errors = 0;
	for (int i = 0; i < NPROC; i++) {
		int status;
		waitpid(pids[i], &status, 0);
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
		if (code == 0) {
			winners++;
			winner = i;
		}
		errors += code > 1;
	}
	CHECK_INT(errors, 0);
	CHECK_INT(winners, 1);
	char want[32];
	snprintf(want, sizeof(want), "writer %d", winner);
	char *got = fixture_read_all(at, &err);
	CHECK(got != NULL && strcmp(got, want) == 0);
	free(got);
}

TEST(s3_storage_iceberg_table_create_commit_read)
{
	const char *test_name = "table";
	char t[512], p[512];
	tl_error err;
	tl_error_clear(&err);
	if (LOC(t, "") == NULL)
		return;
	CHECK_OK(tl_storage_remove_all(t, &err), &err);
	tl_ice_table *table = fixture_create_table(t, &err);
	CHECK_OK(table ? 0 : -1, &err);
	tl_ice_table_free(table);
	CHECK_OK(fixture_append_rows(t, 0, 3, &err), &err);
	CHECK_OK(fixture_append_rows(t, 3, 4, &err), &err);
	int64_t version, rows, sum;
	CHECK_OK(fixture_read_table(t, &version, &rows, &sum, &err), &err);
	CHECK_INT(version, 3);
	CHECK_INT(rows, 7);
	CHECK_INT(sum, 21);
	/* The layout other engines expect: the hint, and metadata files named by version. */
	char *hint = fixture_read_all(LOC(p, "metadata/version-hint.text"), &err);
	CHECK(hint != NULL && strncmp(hint, "3", 1) == 0);
	free(hint);
	int64_t current = 0;
	char *file = tl_ice_table_current_metadata(t, &current, &err);
	CHECK(file != NULL && current == 3 && strcmp(file, LOC(p, "metadata/v3.metadata.json")) == 0);
	tl_free(file);
	/* A second create on the same location is a conflict, and changes nothing. */
	tl_error e2;
	tl_error_clear(&e2);
	CHECK(fixture_create_table(t, &e2) == NULL && e2.code == TL_ERR_CONFLICT);
	CHECK_OK(fixture_read_table(t, &version, &rows, &sum, &err), &err);
	CHECK_INT(rows, 7);
	CHECK_OK(tl_storage_remove_all(t, &err), &err);
}

static void walk(const char *test_name, bool sticky)
{
	char t[512];
	tl_error err;
	tl_error_clear(&err);
	if (LOC(t, "") == NULL)
		return;
	CHECK_OK(tl_storage_remove_all(t, &err), &err);
	tl_ice_table *table = fixture_create_table(t, &err);
	CHECK_OK(table ? 0 : -1, &err);
	tl_ice_table_free(table);
	fixture_walk_storage_faults(t, "s3", sticky);
	CHECK_OK(tl_storage_remove_all(t, &err), &err);
}

TEST(s3_storage_fault_at_each_call_leaves_table_at_previous_state)
{
	walk("fault-once", false);
}

TEST(s3_storage_fault_from_each_call_on_leaves_table_at_previous_state)
{
	walk("fault-sticky", true);
}
