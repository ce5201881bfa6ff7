/*
 * test_iceberg_rollback.c: tl_ice_table_rollback.
 *
 * A table with three appends is rolled back to its first snapshot and to
 * none: each rollback is a new metadata version, read back from disk, whose
 * current snapshot and main branch are the target and whose rows are the
 * target's; the newer snapshots stay in the metadata; a later append
 * builds on the target; a snapshot that is not an ancestor is refused and
 * changes nothing.
 */
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "table_fixture.h"
#include "test.h"
#include "tierlake/iceberg_table.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void fresh_dir(char dir[PATH_MAX])
{
	snprintf(dir, PATH_MAX, "/tmp/tl_rollback_XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
}

static int64_t main_branch(const tl_ice_table_metadata *md)
{
	for (int i = 0; i < md->nrefs; i++)
		if (strcmp(md->refs[i].name, "main") == 0)
			return md->refs[i].snapshot_id;
	return TL_ICE_NO_SNAPSHOT;
}

TEST(rollback_makes_an_ancestor_current_again)
{
	char dir[PATH_MAX];
	fresh_dir(dir);
	tl_error err;
	tl_error_clear(&err);
	tl_ice_table *t = fixture_create_table(dir, &err);
	CHECK(t != NULL);
	tl_ice_table_free(t);
	CHECK_OK(fixture_append_rows(dir, 1, 10, &err), &err);
	t = tl_ice_table_open(dir, &err);
	int64_t first = t->metadata->current_snapshot_id;
	tl_ice_table_free(t);
	CHECK_OK(fixture_append_rows(dir, 11, 5, &err), &err);
	CHECK_OK(fixture_append_rows(dir, 16, 5, &err), &err);

	t = tl_ice_table_open(dir, &err);
	int64_t newest = t->metadata->current_snapshot_id, version = t->version;
	int nsnapshots = t->metadata->nsnapshots;
	CHECK_OK(tl_ice_table_rollback(t, first, &err), &err);
	CHECK_INT(t->version, version + 1);
	tl_ice_table_free(t);

	int64_t read_version, rows, sum;
	CHECK_OK(fixture_read_table(dir, &read_version, &rows, &sum, &err), &err);
	CHECK_INT(read_version, version + 1);
	CHECK_INT(rows, 10);
	CHECK_INT(sum, 55);
	t = tl_ice_table_open(dir, &err);
	CHECK_INT(t->metadata->current_snapshot_id, first);
	CHECK_INT(main_branch(t->metadata), first);
	CHECK_INT(t->metadata->nsnapshots, nsnapshots); /* the rolled-back snapshots stay */
	CHECK(tl_ice_metadata_snapshot(t->metadata, newest) != NULL);
	CHECK_INT(t->metadata->snapshot_log[t->metadata->nsnapshot_log - 1].snapshot_id, first);
	/* the same target again writes nothing */
	CHECK_OK(tl_ice_table_rollback(t, first, &err), &err);
	CHECK_INT(t->version, version + 1);
	/* a snapshot that is no longer an ancestor of the current one is refused, and nothing changes */
	CHECK(tl_ice_table_rollback(t, newest, &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	CHECK(strstr(err.message, "not an ancestor") != NULL);
	tl_error_clear(&err);
	tl_ice_table_free(t);

	/* the next commit builds on the snapshot rolled back to */
	CHECK_OK(fixture_append_rows(dir, 100, 1, &err), &err);
	CHECK_OK(fixture_read_table(dir, &read_version, &rows, &sum, &err), &err);
	CHECK_INT(rows, 11);
	CHECK_INT(sum, 155);
	t = tl_ice_table_open(dir, &err);
	const tl_ice_snapshot *s = tl_ice_metadata_snapshot(t->metadata, t->metadata->current_snapshot_id);
	CHECK(s != NULL && s->parent_id == first);

	/* and back to no snapshot: the table reads empty */
	CHECK_OK(tl_ice_table_rollback(t, TL_ICE_NO_SNAPSHOT, &err), &err);
	tl_ice_table_free(t);
	CHECK_OK(fixture_read_table(dir, &read_version, &rows, &sum, &err), &err);
	CHECK_INT(rows, 0);
	t = tl_ice_table_open(dir, &err);
	CHECK_INT(t->metadata->current_snapshot_id, TL_ICE_NO_SNAPSHOT);
	CHECK_INT(main_branch(t->metadata), TL_ICE_NO_SNAPSHOT);
	tl_ice_table_free(t);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
