/*
 * test_rest_catalog.c: the REST catalog client against Apache Iceberg's own
 * REST catalog server (RESTCatalogServer, JDBC catalog in SQLite, warehouse
 * on local files), which `make test-rest` starts (scripts/rest-catalog.sh):
 * connecting with a token and with OAuth2 client credentials, namespaces,
 * creating and loading tables, appends committed through updateTable and
 * read back by our reader, a racing commit refused by the catalog with the
 * table unchanged, schema evolution through the catalog, and errors that
 * name the catalog and the table but never the token, and a commit the
 * catalog fails with a 5xx reported as in an unknown state.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include "table_fixture.h"
#include "test.h"
#include "tierlake/iceberg_scan.h"
#include "tierlake/iceberg_writer.h"
#include "tierlake/rest_catalog.h"
#include "tierlake/storage.h"

/* The catalog `make test-rest` started, or NULL (and a failed test) without one. */
static tl_rest_catalog *connect(const char *token, const char *credential, tl_error *err)
{
	const char *uri = getenv("TIERDB_CATALOG_URI");
	if (uri == NULL) {
		tl_test_fail(__FILE__, __LINE__, "TIERDB_CATALOG_URI is not set: run `make test-rest`");
		return NULL;
	}
	tl_rest_catalog_config cfg = {.uri = uri, .token = token, .credential = credential};
	return tl_rest_catalog_connect(&cfg, err);
}

/* A table name no earlier run used (the catalog's database lives as long as the server). */
static void unique_name(char *buf, size_t cap, const char *stem)
{
	uint32_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint32_t)rand();
	snprintf(buf, cap, "%s_%08" PRIx32, stem, r);
}

static tl_ice_table *create_table(tl_rest_catalog *c, const char *ns, const char *name, tl_error *err)
{
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_ice_field fields[] = {{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}}};
	if (tl_ice_schema_init(&schema, 0, fields, 1, err) < 0)
		return NULL;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_kv props[] = {{"tierdb.test", "yes"}};
	tl_ice_table *t = tl_rest_catalog_create_table(c, ns, name, NULL, &schema, &spec, props, 1, err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	return t;
}

/* fixture_begin_append, stamped with an op id as the daemon's commits are. */
static tl_ice_commit *begin_append(tl_ice_table *t, int64_t first, int rows, tl_error *err)
{
	tl_ice_commit *c = fixture_begin_append(t, first, rows, err);
	if (c != NULL)
		tl_ice_commit_set_summary(c, "tierdb.op-id", "test-op");
	return c;
}

static int append(tl_ice_table *t, int64_t first, int rows, int64_t *snapshot, tl_error *err)
{
	tl_ice_commit *c = begin_append(t, first, rows, err);
	int rc = c ? tl_ice_commit_finish(c, snapshot, err) : -1;
	tl_ice_commit_free(c);
	return rc;
}

static int64_t main_snapshot(const tl_ice_table_metadata *md)
{
	for (int i = 0; i < md->nrefs; i++)
		if (strcmp(md->refs[i].name, "main") == 0)
			return md->refs[i].snapshot_id;
	return TL_ICE_NO_SNAPSHOT;
}

/* How many files named v<N>.metadata.json (ours) are in the table's metadata directory. */
static int our_metadata_files(const tl_ice_table *t)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/metadata", t->location);
	tl_storage_list l = {0};
	if (tl_storage_list_dir(dir, 0, &l, NULL) < 0)
		return -1;
	int n = 0;
	for (size_t i = 0; i < l.count; i++)
		if (l.entries[i].name[0] == 'v' && strstr(l.entries[i].name, ".metadata.json") != NULL)
			n++;
	tl_storage_list_free(&l);
	return n;
}

/* How many manifest lists (snap-*.avro) the table's metadata directory holds; -1 if it cannot be listed. */
static int manifest_lists(const tl_ice_table *t)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/metadata", t->location);
	tl_storage_list l = {0};
	if (tl_storage_list_dir(dir, 0, &l, NULL) < 0)
		return -1;
	int n = 0;
	for (size_t i = 0; i < l.count; i++)
		if (strncmp(l.entries[i].name, "snap-", 5) == 0)
			n++;
	tl_storage_list_free(&l);
	return n;
}

TEST(rest_connect_and_namespaces)
{
	tl_error err;
	tl_error_clear(&err);
	tl_rest_catalog *c = connect(NULL, NULL, &err);
	CHECK_OK(c ? 0 : -1, &err);
	CHECK_STR(tl_rest_catalog_uri(c), getenv("TIERDB_CATALOG_URI"));
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_ns", &err), &err);
	/* An existing namespace is not an error. */
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_ns", &err), &err);
	CHECK(tl_rest_catalog_create_namespace(c, "bad..ns", &err) < 0);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_rest_catalog_free(c);

	/* OAuth2 client credentials: the server's token endpoint hands out a token. */
	tl_error_clear(&err);
	c = connect(NULL, "tierdb-client:tierdb-secret", &err);
	CHECK_OK(c ? 0 : -1, &err);
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_ns", &err), &err);
	tl_rest_catalog_free(c);

	/* A URI that is not http(s), and a port nobody listens on. */
	tl_error_clear(&err);
	tl_rest_catalog_config bad = {.uri = "ftp://127.0.0.1/"};
	CHECK(tl_rest_catalog_connect(&bad, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_INVALID);
	tl_error_clear(&err);
	bad.uri = "http://127.0.0.1:1";
	CHECK(tl_rest_catalog_connect(&bad, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_IO);
	CHECK(strstr(err.message, "http://127.0.0.1:1") != NULL);
}

TEST(rest_create_load_and_append)
{
	tl_error err;
	tl_error_clear(&err);
	tl_rest_catalog *c = connect("a-test-token", NULL, &err);
	CHECK_OK(c ? 0 : -1, &err);
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_ns", &err), &err);
	char name[64];
	unique_name(name, sizeof(name), "appends");
	tl_ice_table *t = create_table(c, "tierdb_ns", name, &err);
	CHECK_OK(t ? 0 : -1, &err);
	CHECK(t->metadata->table_uuid != NULL);
	CHECK_INT(t->metadata->current_snapshot_id, TL_ICE_NO_SNAPSHOT);
	CHECK_STR(tl_ice_metadata_property(t->metadata, "tierdb.test"), "yes");
	CHECK_INT(t->metadata->format_version, 2);
	/* Created again: the catalog says it exists. */
	tl_error e2;
	tl_error_clear(&e2);
	CHECK(create_table(c, "tierdb_ns", name, &e2) == NULL);
	CHECK_INT(e2.code, TL_ERR_CONFLICT);

	int64_t s1 = 0, s2 = 0;
	CHECK_OK(append(t, 1, 10, &s1, &err), &err);
	CHECK_INT(main_snapshot(t->metadata), s1);
	CHECK_OK(append(t, 100, 5, &s2, &err), &err);
	CHECK_INT(main_snapshot(t->metadata), s2);
	CHECK_INT(tl_ice_metadata_snapshot(t->metadata, s2)->parent_id, s1);
	/* The catalog wrote the metadata files; we wrote none of ours. */
	CHECK_INT(our_metadata_files(t), 0);
	CHECK(tl_storage_is_file(t->metadata_file));

	/* Another client loading the table sees both commits and reads every row. */
	tl_rest_catalog *c2 = connect(NULL, NULL, &err);
	CHECK_OK(c2 ? 0 : -1, &err);
	tl_ice_table *loaded = tl_rest_catalog_load_table(c2, "tierdb_ns", name, &err);
	tl_rest_catalog_free(c2);   /* the table keeps the catalog */
	CHECK_OK(loaded ? 0 : -1, &err);
	CHECK_STR(loaded->metadata_file, t->metadata_file);
	CHECK_INT(main_snapshot(loaded->metadata), s2);
	CHECK_INT(loaded->metadata->nsnapshots, 2);
	const tl_ice_snapshot *snap = tl_ice_metadata_snapshot(loaded->metadata, s2);
	CHECK_STR(tl_ice_snapshot_summary(snap, "tierdb.op-id"), "test-op");
	CHECK_STR(tl_ice_snapshot_summary(snap, "total-records"), "15");
	int64_t rows, sum;
	CHECK_OK(fixture_read_ids(loaded->metadata, &rows, &sum, &err), &err);
	CHECK_INT(rows, 15);
	CHECK_INT(sum, 55 + 510);
	/* A commit through the loaded table continues from the same state. */
	int64_t s3 = 0;
	CHECK_OK(append(loaded, 1000, 1, &s3, &err), &err);
	CHECK_OK(tl_ice_table_refresh(t, &err), &err);
	CHECK_INT(main_snapshot(t->metadata), s3);
	CHECK_OK(fixture_read_ids(t->metadata, &rows, &sum, &err), &err);
	CHECK_INT(rows, 16);
	tl_ice_table_free(loaded);
	tl_ice_table_free(t);

	/* A table that does not exist. */
	tl_error_clear(&err);
	CHECK(tl_rest_catalog_load_table(c, "tierdb_ns", "no_such_table", &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	CHECK(strstr(err.message, "tierdb_ns.no_such_table") != NULL);
	CHECK(strstr(err.message, getenv("TIERDB_CATALOG_URI")) != NULL);
	CHECK(strstr(err.message, "a-test-token") == NULL);
	CHECK_OK(tl_rest_catalog_drop_table(c, "tierdb_ns", name, &err), &err);
	tl_error_clear(&err);
	CHECK(tl_rest_catalog_load_table(c, "tierdb_ns", name, &err) == NULL);
	CHECK_INT(err.code, TL_ERR_NOT_FOUND);
	tl_rest_catalog_free(c);
}

/* A rollback through the catalog: main moves back to an ancestor, and every client sees it. */
TEST(rest_rollback)
{
	tl_error err;
	tl_error_clear(&err);
	tl_rest_catalog *c = connect(NULL, NULL, &err);
	CHECK_OK(c ? 0 : -1, &err);
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_ns", &err), &err);
	char name[64];
	unique_name(name, sizeof(name), "rollback");
	tl_ice_table *t = create_table(c, "tierdb_ns", name, &err);
	CHECK_OK(t ? 0 : -1, &err);
	int64_t s1 = 0, s2 = 0;
	CHECK_OK(append(t, 1, 10, &s1, &err), &err);
	CHECK_OK(append(t, 100, 5, &s2, &err), &err);
	CHECK_OK(tl_ice_table_rollback(t, s1, &err), &err);
	CHECK_INT(main_snapshot(t->metadata), s1);
	tl_ice_table *loaded = tl_rest_catalog_load_table(c, "tierdb_ns", name, &err);
	CHECK_OK(loaded ? 0 : -1, &err);
	CHECK_INT(main_snapshot(loaded->metadata), s1);
	CHECK(tl_ice_metadata_snapshot(loaded->metadata, s2) != NULL);
	int64_t rows, sum;
	CHECK_OK(fixture_read_ids(loaded->metadata, &rows, &sum, &err), &err);
	CHECK_INT(rows, 10);
	/* to no snapshot is not sent through a catalog */
	CHECK(tl_ice_table_rollback(loaded, TL_ICE_NO_SNAPSHOT, &err) < 0);
	CHECK_INT(err.code, TL_ERR_UNSUPPORTED);
	tl_ice_table_free(loaded);
	tl_ice_table_free(t);
	tl_error_clear(&err);
	CHECK_OK(tl_rest_catalog_drop_table(c, "tierdb_ns", name, &err), &err);
	tl_rest_catalog_free(c);
}

TEST(rest_racing_commit_loses)
{
	tl_error err;
	tl_error_clear(&err);
	tl_rest_catalog *c = connect(NULL, NULL, &err);
	CHECK_OK(c ? 0 : -1, &err);
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_ns", &err), &err);
	char name[64];
	unique_name(name, sizeof(name), "race");
	tl_ice_table *t1 = create_table(c, "tierdb_ns", name, &err);
	CHECK_OK(t1 ? 0 : -1, &err);
	tl_ice_table *t2 = tl_rest_catalog_load_table(c, "tierdb_ns", name, &err);
	CHECK_OK(t2 ? 0 : -1, &err);

	/* Both writers start from the empty table (main absent); the first wins. */
	tl_ice_commit *loser = begin_append(t2, 500, 3, &err);
	CHECK_OK(loser ? 0 : -1, &err);
	int64_t won = 0;
	CHECK_OK(append(t1, 1, 4, &won, &err), &err);
	char *winner_file = strdup(t1->metadata_file);
	tl_error_clear(&err);
	CHECK(tl_ice_commit_finish(loser, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	CHECK(strstr(err.message, "another writer committed first") != NULL);
	CHECK(strstr(err.message, name) != NULL);

	/* The table is as the winner left it. */
	tl_ice_table *now = tl_rest_catalog_load_table(c, "tierdb_ns", name, &err);
	CHECK_OK(now ? 0 : -1, &err);
	CHECK_STR(now->metadata_file, winner_file);
	CHECK_INT(now->metadata->nsnapshots, 1);
	CHECK_INT(main_snapshot(now->metadata), won);
	int64_t rows, sum;
	CHECK_OK(fixture_read_ids(now->metadata, &rows, &sum, &err), &err);
	CHECK_INT(rows, 4);
	CHECK_INT(sum, 10);

	/* Second race, on a non-empty main: a stale base is refused too. */
	tl_ice_commit *stale = begin_append(now, 700, 1, &err);
	CHECK_OK(stale ? 0 : -1, &err);
	int64_t won2 = 0;
	CHECK_OK(append(t1, 10, 1, &won2, &err), &err);
	tl_error_clear(&err);
	CHECK(tl_ice_commit_finish(stale, NULL, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CONFLICT);

	/* The loser refreshes from the catalog and finishes the same commit on the new base. */
	tl_error_clear(&err);
	CHECK_OK(tl_ice_table_refresh(t2, &err), &err);
	CHECK_INT(main_snapshot(t2->metadata), won2);
	int64_t retried = 0;
	CHECK_OK(tl_ice_commit_finish(loser, &retried, &err), &err);
	CHECK_INT(tl_ice_metadata_snapshot(t2->metadata, retried)->parent_id, won2);
	CHECK_OK(fixture_read_ids(t2->metadata, &rows, &sum, &err), &err);
	CHECK_INT(rows, 4 + 1 + 3);
	CHECK_INT(sum, 10 + 10 + 500 + 501 + 502);
	/* The refused attempts removed their files: one manifest list per snapshot. */
	CHECK_INT(manifest_lists(t2), 3);

	tl_ice_commit_free(stale);
	tl_ice_commit_free(loser);
	free(winner_file);
	tl_ice_table_free(now);
	tl_ice_table_free(t2);
	tl_ice_table_free(t1);
	tl_rest_catalog_free(c);
}

TEST(rest_schema_evolution)
{
	tl_error err;
	tl_error_clear(&err);
	tl_rest_catalog *c = connect(NULL, NULL, &err);
	CHECK_OK(c ? 0 : -1, &err);
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_ns", &err), &err);
	char name[64];
	unique_name(name, sizeof(name), "schema");
	tl_ice_table *t = create_table(c, "tierdb_ns", name, &err);
	CHECK_OK(t ? 0 : -1, &err);
	CHECK_OK(append(t, 1, 2, NULL, &err), &err);
	tl_ice_field added[] = {{.id = 0, .name = "note", .type = {.id = TL_ICE_STRING}}};
	CHECK_OK(tl_ice_table_add_fields(t, added, 1, &err), &err);
	const tl_ice_schema *s = tl_ice_metadata_current_schema(t->metadata);
	CHECK_INT(s->nfields, 2);
	CHECK_STR(s->fields[1].name, "note");
	CHECK_INT(s->fields[1].id, 2);
	CHECK_INT(t->metadata->last_column_id, 2);

	/* Loaded fresh: the catalog holds the new schema as current and the data is still there. */
	tl_ice_table *loaded = tl_rest_catalog_load_table(c, "tierdb_ns", name, &err);
	CHECK_OK(loaded ? 0 : -1, &err);
	s = tl_ice_metadata_current_schema(loaded->metadata);
	CHECK_INT(s->nfields, 2);
	CHECK_STR(s->fields[1].name, "note");
	CHECK_INT(loaded->metadata->nschemas, 2);
	int64_t rows, sum;
	CHECK_OK(fixture_read_ids(loaded->metadata, &rows, &sum, &err), &err);
	CHECK_INT(rows, 2);

	/* A schema change on a stale base is refused by the catalog. */
	tl_ice_field more[] = {{.id = 0, .name = "more", .type = {.id = TL_ICE_INT}}};
	CHECK_OK(append(t, 10, 1, NULL, &err), &err);
	tl_error_clear(&err);
	CHECK(tl_ice_table_add_fields(loaded, more, 1, &err) < 0);
	CHECK_INT(err.code, TL_ERR_CONFLICT);
	tl_ice_table_free(loaded);
	tl_ice_table_free(t);
	tl_rest_catalog_free(c);
}

/*
 * Holds SQLite's RESERVED lock byte of the catalog server's database
 * (TIERDB_CATALOG_TEST_DB), so that its JDBC catalog can read but not begin
 * a write: SQLite locks by fcntl() on fixed bytes of the file (the lock-byte
 * page at 1 GiB, os_unix.c), and another process's lock on RESERVED_BYTE
 * makes every write transaction fail with SQLITE_BUSY. Returns the fd that
 * holds it (close it to release), or -1.
 */
static int block_catalog_writes(void)
{
	const char *db = getenv("TIERDB_CATALOG_TEST_DB");
	int fd = db ? open(db, O_RDWR) : -1;
	if (fd < 0)
		return -1;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0x40000000 + 1, .l_len = 1};
	for (int i = 0; i < 1000; i++) {   /* the server may hold it for an instant */
		if (fcntl(fd, F_SETLK, &fl) == 0)
			return fd;
		usleep(10000);
	}
	close(fd);
	return -1;
}

/*
 * A commit the catalog fails with a 5xx is in an unknown state: the error
 * says so and the attempt's manifest list stays (a commit that landed would
 * name it). The server fails for real: it writes the new metadata file, then
 * cannot record it in its database (held locked by this test), and answers
 * 500 (UncheckedSQLException).
 */
TEST(rest_commit_state_unknown_keeps_files)
{
	tl_error err;
	tl_error_clear(&err);
	tl_rest_catalog *c = connect(NULL, NULL, &err);
	CHECK_OK(c ? 0 : -1, &err);
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_ns", &err), &err);
	char name[64];
	unique_name(name, sizeof(name), "unknown");
	tl_ice_table *t = create_table(c, "tierdb_ns", name, &err);
	CHECK_OK(t ? 0 : -1, &err);
	int64_t first = 0;
	CHECK_OK(append(t, 1, 3, &first, &err), &err);
	char *before = strdup(t->metadata_file);

	tl_ice_commit *commit = begin_append(t, 100, 2, &err);
	CHECK_OK(commit ? 0 : -1, &err);
	int lock = block_catalog_writes();
	CHECK(lock >= 0);
	tl_error_clear(&err);
	int rc = tl_ice_commit_finish(commit, NULL, &err);
	close(lock);
	tl_ice_commit_free(commit);
	CHECK(rc < 0);
	CHECK_INT(err.code, TL_ERR_IO);
	CHECK(strstr(err.message, "unknown state") != NULL);
	CHECK(strstr(err.message, name) != NULL);
	CHECK(strstr(err.message, "HTTP 500") != NULL);

	/* Nothing landed, and the attempt's manifest list is still there for whoever settles the commit. */
	CHECK_OK(tl_ice_table_refresh(t, &err), &err);
	CHECK_STR(t->metadata_file, before);
	CHECK_INT(main_snapshot(t->metadata), first);
	CHECK_INT(manifest_lists(t), 2);   /* the first append's and the unknown commit's */
	/* The table takes commits again once the catalog does. */
	CHECK_OK(append(t, 10, 1, NULL, &err), &err);
	free(before);
	tl_ice_table_free(t);
	tl_rest_catalog_free(c);
}

/*
 * A table on S3 kept in the REST catalog: `make test-rest` runs the catalog
 * with S3Proxy's variables (scripts/s3-server.sh), so the catalog writes
 * the metadata to s3:// with S3FileIO while we write the data files,
 * manifests and lists there through our S3 storage; a second client loads
 * and reads it back.
 */
TEST(rest_table_on_s3)
{
	const char *bucket = getenv("TIERDB_S3_TEST_BUCKET");
	if (bucket == NULL || getenv("TIERDB_S3_ENDPOINT") == NULL) {
		tl_test_fail(__FILE__, __LINE__, "TIERDB_S3_ENDPOINT and TIERDB_S3_TEST_BUCKET are not set: run `make test-rest`");
		return;
	}
	tl_error err;
	tl_error_clear(&err);
	tl_rest_catalog *c = connect(NULL, NULL, &err);
	CHECK_OK(c ? 0 : -1, &err);
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_s3", &err), &err);
	char name[64], location[256];
	unique_name(name, sizeof(name), "on_s3");
	snprintf(location, sizeof(location), "s3://%s/rest/%s", bucket, name);

	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_ice_field fields[] = {{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}}};
	CHECK_OK(tl_ice_schema_init(&schema, 0, fields, 1, &err), &err);
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_table *t = tl_rest_catalog_create_table(c, "tierdb_s3", name, location, &schema, &spec, NULL, 0, &err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	CHECK_OK(t ? 0 : -1, &err);
	CHECK_STR(t->location, location);
	CHECK(strncmp(t->metadata_file, location, strlen(location)) == 0);
	CHECK(tl_storage_is_file(t->metadata_file));
	int64_t s1 = 0, s2 = 0;
	CHECK_OK(append(t, 1, 20, &s1, &err), &err);
	CHECK_OK(append(t, 21, 5, &s2, &err), &err);
	CHECK(tl_storage_is_file(t->metadata_file));
	CHECK(strncmp(t->metadata_file, location, strlen(location)) == 0);

	tl_ice_table *loaded = tl_rest_catalog_load_table(c, "tierdb_s3", name, &err);
	CHECK_OK(loaded ? 0 : -1, &err);
	CHECK_INT(main_snapshot(loaded->metadata), s2);
	int64_t rows, sum;
	CHECK_OK(fixture_read_ids(loaded->metadata, &rows, &sum, &err), &err);
	CHECK_INT(rows, 25);
	CHECK_INT(sum, 25 * 26 / 2);
	tl_ice_table_free(loaded);
	tl_ice_table_free(t);
	tl_rest_catalog_free(c);
}
