/*
 * test_storage.c: the storage boundary (storage.h). The local storage's
 * every operation, on plain paths and file:// URIs; the choice by scheme
 * (s3:// refused until wired, a registered storage taking over); the
 * commit primitive create_if_absent raced by processes and by threads (exactly
 * one wins, and its whole content is what readers see); finding a table's
 * current metadata; and a table write and commit driven through an I/O
 * error at each storage call, after which the table reads at its previous
 * state (or, if the commit returned success, at the new one) with no
 * half-written metadata visible. Data files a failed commit wrote stay as
 * orphans, which Iceberg allows.
 */
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_storage.h"
#include "table_fixture.h"
#include "test.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_table.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/storage.h"

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
	snprintf(out, PATH_MAX, "/tmp/tl_storage_test_XXXXXX");
	if (mkdtemp(out) == NULL)
		abort();
}

/* "<dir>/<name>" in a static buffer (one at a time per call site). */
static const char *at(char buf[PATH_MAX], const char *dir, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", dir, name);
	return buf;
}

TEST(storage_local_every_operation)
{
	char dir[PATH_MAX], p[PATH_MAX], uri[PATH_MAX + 32];
	make_temp_dir(dir);
	tl_error err;
	tl_error_clear(&err);
	snprintf(uri, sizeof(uri), "file://%s/a/b", dir);
	int rc = tl_storage_make_dirs(uri, &err);
	if (rc == 0)
		rc = tl_storage_make_dirs(at(p, dir, "a/b"), &err); /* again: exists is fine */
	if (rc == 0)
		rc = fixture_write_all(at(p, dir, "a/b/one.txt"), "hello storage", TL_STORAGE_CREATE_EXCLUSIVE, &err);
	bool ok = rc == 0;
	/* Exclusive create of an existing name is a conflict; replace mode truncates. */
	tl_error e2;
	tl_error_clear(&e2);
	ok = ok && fixture_write_all(at(p, dir, "a/b/one.txt"), "x", TL_STORAGE_CREATE_EXCLUSIVE, &e2) < 0 &&
	     e2.code == TL_ERR_CONFLICT;
	ok = ok && fixture_write_all(at(p, dir, "a/two.txt"), "long text replaced", TL_STORAGE_CREATE_REPLACE, &err) == 0 &&
	     fixture_write_all(at(p, dir, "a/two.txt"), "short", TL_STORAGE_CREATE_REPLACE, &err) == 0;
	/* Ranged reads through a file:// URI. */
	snprintf(uri, sizeof(uri), "file://%s/a/b/one.txt", dir);
	tl_input *in = ok ? tl_storage_open_read(uri, &err) : NULL;
	char part[8] = {0};
	ok = in != NULL && in->size == 13 && tl_input_read(in, 6, part, 7, &err) == 0 && strcmp(part, "storage") == 0;
	tl_error_clear(&e2);
	ok = ok && tl_input_read(in, 10, part, 4, &e2) < 0 && e2.code == TL_ERR_CORRUPT;
	tl_input_close(in);
	char *two = ok ? fixture_read_all(at(p, dir, "a/two.txt"), &err) : NULL;
	ok = two != NULL && strcmp(two, "short") == 0;
	free(two);
	/* stat: object, directory, missing. */
	uint64_t size = 0;
	bool is_dir = true;
	ok = ok && tl_storage_stat(at(p, dir, "a/b/one.txt"), &size, &is_dir, &err) == 0 && size == 13 && !is_dir;
	ok = ok && tl_storage_stat(at(p, dir, "a"), NULL, &is_dir, &err) == 0 && is_dir;
	tl_error_clear(&e2);
	ok = ok && tl_storage_stat(at(p, dir, "nothing"), NULL, NULL, &e2) < 0 && e2.code == TL_ERR_NOT_FOUND;
	ok = ok && tl_storage_is_file(at(p, dir, "a/two.txt")) && !tl_storage_is_file(at(p, dir, "a"));
	/* Listing: one level with directories, or every file below. */
	tl_storage_list l = {0};
	ok = ok && tl_storage_list_dir(at(p, dir, "a"), 0, &l, &err) == 0 && l.count == 2 &&
	     fixture_find_entry(&l, "b") && fixture_find_entry(&l, "b")->is_dir && fixture_find_entry(&l, "two.txt") &&
	     fixture_find_entry(&l, "two.txt")->size == 5;
	tl_storage_list_free(&l);
	ok = ok && tl_storage_list_dir(dir, TL_STORAGE_LIST_RECURSIVE, &l, &err) == 0 && l.count == 2 &&
	     fixture_find_entry(&l, "a/b/one.txt") && fixture_find_entry(&l, "a/b/one.txt")->size == 13 &&
	     !fixture_find_entry(&l, "a/b/one.txt")->is_dir && fixture_find_entry(&l, "a/two.txt");
	tl_storage_list_free(&l);
	tl_error_clear(&e2);
	ok = ok && tl_storage_list_dir(at(p, dir, "missing"), 0, &l, &e2) < 0 && e2.code == TL_ERR_NOT_FOUND &&
	     l.count == 0;
	/* replace swaps content whole. */
	ok = ok && tl_storage_replace(at(p, dir, "a/hint"), "1", 1, &err) == 0 &&
	     tl_storage_replace(at(p, dir, "a/hint"), "22", 2, &err) == 0;
	char *hint = ok ? fixture_read_all(at(p, dir, "a/hint"), &err) : NULL;
	ok = hint != NULL && strcmp(hint, "22") == 0;
	free(hint);
	/* canonical resolves links and relative parts. */
	char link_path[PATH_MAX];
	at(link_path, dir, "link");
	ok = ok && symlink(at(p, dir, "a"), link_path) == 0;
	char *canon = ok ? tl_storage_canonical(at(p, dir, "link/b/../b"), &err) : NULL;
	char want[PATH_MAX], *real_dir = realpath(dir, NULL);
	snprintf(want, sizeof(want), "%s/a/b", real_dir);
	ok = canon != NULL && strcmp(canon, want) == 0;
	free(canon);
	free(real_dir);
	/* remove: once, then NOT_FOUND; remove_all of a tree, then of nothing. */
	ok = ok && tl_storage_remove(at(p, dir, "a/two.txt"), &err) == 0;
	tl_error_clear(&e2);
	ok = ok && tl_storage_remove(at(p, dir, "a/two.txt"), &e2) < 0 && e2.code == TL_ERR_NOT_FOUND;
	ok = ok && tl_storage_remove_all(at(p, dir, "a"), &err) == 0 &&
	     tl_storage_stat(at(p, dir, "a"), NULL, NULL, NULL) < 0 && tl_storage_remove_all(at(p, dir, "a"), &err) == 0;
	remove_tree(dir);
	CHECK_OK(ok ? 0 : -1, &err);
}

TEST(storage_choice_by_scheme)
{
	tl_error err;
	tl_error_clear(&err);
	CHECK(tl_storage_for("/tmp/x", &err) == tl_storage_local());
	CHECK(tl_storage_for("file:///tmp/x", &err) == tl_storage_local());
	CHECK(tl_storage_for("relative/a:b", &err) == tl_storage_local());
	/* s3:// and s3a:// are the built-in S3 storage (configured from the environment). */
	tl_storage *s3 = tl_storage_for("s3://bucket/table", &err);
	CHECK(s3 != NULL && strcmp(s3->name, "s3") == 0);
	CHECK(tl_storage_for("S3A://bucket/table", &err) == s3);
	CHECK(tl_storage_for("gs://bucket/t", &err) == NULL);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	CHECK(strstr(err.message, "gs://bucket/t") != NULL);
	/* A registered storage serves its scheme until unregistered. */
	fault_storage fs;
	fault_storage_init(&fs, tl_storage_local());
	CHECK(tl_storage_register("S3", &fs.base) == NULL);
	tl_error_clear(&err);
	bool served = tl_storage_for("s3://bucket/t", &err) == &fs.base;
	CHECK(tl_storage_register("s3", NULL) == &fs.base);
	CHECK(served);
	CHECK(tl_storage_for("s3://bucket/t", NULL) == s3);
}

TEST(storage_choice_by_prefix)
{
	fault_storage wh, deeper;
	fault_storage_init(&wh, tl_storage_local());
	fault_storage_init(&deeper, tl_storage_local());
	tl_storage *s3 = tl_storage_for("s3://bucket/x", NULL);
	CHECK(tl_storage_register_prefix("s3://bucket/wh/", &wh.base) == NULL);
	CHECK(tl_storage_register_prefix("s3://bucket/wh/s/deep", &deeper.base) == NULL);
	/* A prefix covers whole path components below it, the longest one wins, the rest falls to the scheme. */
	bool ok = tl_storage_for("s3://bucket/wh", NULL) == &wh.base &&
	          tl_storage_for("s3://bucket/wh/s/t/metadata/v1.metadata.json", NULL) == &wh.base &&
	          tl_storage_for("s3://bucket/wh/s/deep/data/f.parquet", NULL) == &deeper.base &&
	          tl_storage_for("s3://bucket/wh/s/deeper/f", NULL) == &wh.base &&
	          tl_storage_for("s3://bucket/wh2/t", NULL) == s3 && tl_storage_for("/tmp/x", NULL) == tl_storage_local();
	/* Registering the same prefix again replaces it; NULL unregisters. */
	bool replaced = tl_storage_register_prefix("s3://bucket/wh", &deeper.base) == &wh.base;
	bool removed = tl_storage_register_prefix("s3://bucket/wh", NULL) == &deeper.base &&
	               tl_storage_register_prefix("s3://bucket/wh/s/deep", NULL) == &deeper.base;
	CHECK(ok);
	CHECK(replaced);
	CHECK(removed);
	CHECK(tl_storage_for("s3://bucket/wh/s/deep/x", NULL) == s3);
}

/* Each of nproc processes publishes its own content at path at once; returns the winners' count. */
static int race_once(const char *path, int nproc, int *winner)
{
	int gate[2];
	if (pipe(gate) != 0)
		abort();
	pid_t pids[8];
	for (int k = 0; k < nproc; k++) {
		pids[k] = fork();
		if (pids[k] == 0) {
			char c;
			close(gate[1]);
			(void)!read(gate[0], &c, 1); /* returns when the parent closes the gate */
			static char body[64 * 1024];
			memset(body, 'a' + k, sizeof(body));
			tl_error err;
			tl_error_clear(&err);
			int rc = tl_storage_create_if_absent(path, body, sizeof(body), &err);
			_exit(rc == 0 ? 0 : err.code == TL_ERR_CONFLICT ? 1 : 2);
		}
	}
	close(gate[0]);
	close(gate[1]);
	int wins = 0;
	for (int k = 0; k < nproc; k++) {
		int status = 0;
		waitpid(pids[k], &status, 0);
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
		if (code == 0) {
			wins++;
			*winner = k;
		} else if (code != 1) {
			return -1;
		}
	}
	return wins;
}

TEST(storage_create_if_absent_one_winner_among_processes)
{
	char dir[PATH_MAX], p[PATH_MAX];
	make_temp_dir(dir);
	bool ok = true;
	for (int round = 0; ok && round < 20; round++) {
		char name[32];
		snprintf(name, sizeof(name), "v%d.metadata.json", round);
		int winner = -1;
		ok = race_once(at(p, dir, name), 4, &winner) == 1;
		tl_error err;
		tl_error_clear(&err);
		char *text = ok ? fixture_read_all(p, &err) : NULL;
		ok = text != NULL && strlen(text) == 64 * 1024 && text[0] == 'a' + winner &&
		     text[64 * 1024 - 1] == 'a' + winner;
		free(text);
	}
	/* No temporary file is left behind, winners' or losers'. */
	tl_storage_list l = {0};
	tl_error err;
	tl_error_clear(&err);
	ok = ok && tl_storage_list_dir(dir, 0, &l, &err) == 0 && l.count == 20;
	for (size_t i = 0; ok && i < l.count; i++)
		ok = l.entries[i].name[0] != '.';
	tl_storage_list_free(&l);
	/* A later attempt on a taken name is a conflict and changes nothing. */
	tl_error_clear(&err);
	ok = ok && tl_storage_create_if_absent(at(p, dir, "v0.metadata.json"), "x", 1, &err) < 0 &&
	     err.code == TL_ERR_CONFLICT && strstr(err.message, "v0.metadata.json") != NULL;
	char *text = ok ? fixture_read_all(p, &err) : NULL;
	ok = text != NULL && strlen(text) == 64 * 1024;
	free(text);
	remove_tree(dir);
	CHECK(ok);
}

/* One of the threads racing for a name: waits for the start, then publishes its own byte. */
typedef struct racer {
	const char *path;
	pthread_barrier_t *start;
	char byte;
	int rc;
	tl_error err;
} racer;

static void *race_thread(void *arg)
{
	racer *r = arg;
	char body[4096];
	memset(body, r->byte, sizeof(body));
	tl_error_clear(&r->err);
	pthread_barrier_wait(r->start);
	r->rc = tl_storage_create_if_absent(r->path, body, sizeof(body), &r->err);
	return NULL;
}

TEST(storage_create_if_absent_one_winner_among_threads)
{
	char dir[PATH_MAX], p[PATH_MAX];
	make_temp_dir(dir);
	bool ok = true;
	for (int round = 0; ok && round < 50; round++) {
		char name[32];
		snprintf(name, sizeof(name), "v%d.metadata.json", round);
		at(p, dir, name);
		pthread_barrier_t start;
		pthread_barrier_init(&start, NULL, 2);
		racer r[2] = {{.path = p, .start = &start, .byte = 'x'}, {.path = p, .start = &start, .byte = 'y'}};
		pthread_t t[2];
		for (int k = 0; k < 2; k++)
			pthread_create(&t[k], NULL, race_thread, &r[k]);
		for (int k = 0; k < 2; k++)
			pthread_join(t[k], NULL);
		pthread_barrier_destroy(&start);
		int winner = r[0].rc == 0 ? 0 : 1;
		ok = (r[0].rc == 0) != (r[1].rc == 0) && r[1 - winner].err.code == TL_ERR_CONFLICT;
		tl_error err;
		tl_error_clear(&err);
		char *text = ok ? fixture_read_all(p, &err) : NULL;
		ok = text != NULL && strlen(text) == 4096 && text[0] == r[winner].byte && text[4095] == r[winner].byte;
		free(text);
	}
	remove_tree(dir);
	CHECK(ok);
}

/* ------------------------------------------------ tables through faults */

/* An empty table in a new temporary directory (dir receives its path); removes the directory on failure. */
static int new_table_dir(char dir[PATH_MAX], tl_error *err)
{
	make_temp_dir(dir);
	tl_ice_table *t = fixture_create_table(dir, err);
	tl_ice_table_free(t);
	if (t == NULL)
		remove_tree(dir);
	return t == NULL ? -1 : 0;
}

static void walk_faults(bool sticky)
{
	char dir[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	CHECK_OK(new_table_dir(dir, &err), &err);
	fixture_walk_storage_faults(dir, "file", sticky);
	remove_tree(dir);
}

TEST(storage_fault_at_each_call_leaves_table_at_previous_state)
{
	walk_faults(false);
}

TEST(storage_fault_from_each_call_on_leaves_table_at_previous_state)
{
	walk_faults(true);
}

TEST(storage_current_metadata_follows_hint_and_listing)
{
	char dir[PATH_MAX], p[PATH_MAX];
	tl_error err;
	tl_error_clear(&err);
	CHECK_OK(new_table_dir(dir, &err), &err);
	int rc = fixture_append_rows(dir, 0, 3, &err);
	int64_t version = 0;
	char *file = rc == 0 ? tl_ice_table_current_metadata(dir, &version, &err) : NULL;
	bool ok = file != NULL && version == 2 && strcmp(file, at(p, dir, "metadata/v2.metadata.json")) == 0;
	free(file);
	/* A stale hint is walked past; a missing one falls back to listing. */
	ok = ok && tl_storage_replace(at(p, dir, "metadata/version-hint.text"), "1", 1, &err) == 0;
	char uri[PATH_MAX + 32];
	snprintf(uri, sizeof(uri), "file://%s/", dir);
	file = ok ? tl_ice_table_current_metadata(uri, &version, &err) : NULL;
	ok = file != NULL && version == 2 && strcmp(file, at(p, dir, "metadata/v2.metadata.json")) == 0;
	free(file);
	ok = ok && tl_storage_remove(at(p, dir, "metadata/version-hint.text"), &err) == 0;
	file = ok ? tl_ice_table_current_metadata(dir, &version, &err) : NULL;
	ok = file != NULL && version == 2;
	free(file);
	/* No table: NOT_FOUND. */
	tl_error e2;
	tl_error_clear(&e2);
	ok = ok && tl_ice_table_current_metadata(at(p, dir, "data"), NULL, &e2) == NULL &&
	     e2.code == TL_ERR_NOT_FOUND && strstr(e2.message, "is not an Iceberg table") != NULL;
	remove_tree(dir);
	CHECK_OK(ok ? 0 : -1, &err);
}
