/*
 * test_rest_nomem.c: allocation failure in the REST catalog client, against
 * the RESTCatalogServer `make test-rest` starts: connecting with OAuth2
 * client credentials (the token request) and loading a table, then
 * creating a table and committing an append through updateTable, each with
 * the Nth allocation failing and with every one from the Nth on failing,
 * for every N (fault_alloc.h). Every run must succeed or fail with
 * TL_ERR_NOMEM and free all it allocated, and every table must read with
 * whole commits only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "fault_alloc.h"
#include "table_fixture.h"
#include "test.h"
#include "tierlake/rest_catalog.h"

static char table_name[64];

/* An unpartitioned table (id long) called name in namespace tierdb_nomem. */
static tl_ice_table *create_table(tl_rest_catalog *c, const char *name, tl_error *err)
{
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_ice_field fields[] = {{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}}};
	if (tl_ice_schema_init(&schema, 0, fields, 1, err) < 0)
		return NULL;
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_table *t = tl_rest_catalog_create_table(c, "tierdb_nomem", name, NULL, &schema, &spec, NULL, 0, err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	return t;
}

static tl_rest_catalog *connect_with_credentials(tl_error *err)
{
	const char *uri = getenv("TIERDB_CATALOG_URI");
	if (uri == NULL) {
		tl_error_set(err, TL_ERR_INVALID, "TIERDB_CATALOG_URI is not set: run `make test-rest`");
		return NULL;
	}
	tl_rest_catalog_config cfg = {.uri = uri, .credential = "tierdb-client:tierdb-secret"};
	return tl_rest_catalog_connect(&cfg, err);
}

/* Connect (a token request) and load the table through the catalog. */
static int connect_and_load_workload(tl_error *err)
{
	tl_rest_catalog *c = connect_with_credentials(err);
	if (c == NULL)
		return -1;
	tl_ice_table *t = tl_rest_catalog_load_table(c, "tierdb_nomem", table_name, err);
	tl_rest_catalog_free(c); /* the table keeps the catalog */
	tl_ice_table_free(t);
	return t != NULL ? 0 : -1;
}

static int appended_tables;

/*
 * Creates a new table through the catalog (with a bearer token) and appends
 * 3 rows through its updateTable: a new table each run, so that every run
 * makes the same allocations whatever the runs before it committed.
 */
static int create_and_append_workload(tl_error *err)
{
	tl_rest_catalog_config cfg = {.uri = getenv("TIERDB_CATALOG_URI"), .token = "a-test-token"};
	tl_rest_catalog *c = tl_rest_catalog_connect(&cfg, err);
	if (c == NULL)
		return -1;
	char name[96];
	snprintf(name, sizeof(name), "%s_%d", table_name, appended_tables++);
	tl_ice_table *t = create_table(c, name, err);
	tl_rest_catalog_free(c);
	tl_ice_commit *commit = t ? fixture_begin_append(t, 1, 3, err) : NULL;
	int rc = commit ? tl_ice_commit_finish(commit, NULL, err) : -1;
	tl_ice_commit_free(commit);
	tl_ice_table_free(t);
	return rc;
}

TEST(rest_nomem_load_and_commit)
{
	tl_error err;
	tl_error_clear(&err);
	tl_rest_catalog *c = connect_with_credentials(&err);
	CHECK_OK(c ? 0 : -1, &err);
	if (c == NULL)
		return;
	CHECK_OK(tl_rest_catalog_create_namespace(c, "tierdb_nomem", &err), &err);
	uint32_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint32_t)rand();
	snprintf(table_name, sizeof(table_name), "faults_%08" PRIx32, r);
	tl_ice_table *t = create_table(c, table_name, &err);
	CHECK_OK(t ? 0 : -1, &err);
	tl_ice_table_free(t);

	CHECK(run_with_faults("rest connect and load", connect_and_load_workload, false) > 1);
	CHECK(run_with_faults("rest connect and load (sticky)", connect_and_load_workload, true) > 1);
	CHECK(run_with_faults("rest create and append", create_and_append_workload, false) > 1);
	CHECK(run_with_faults("rest create and append (sticky)", create_and_append_workload, true) > 1);
	/* Every table the runs created reads empty or with exactly the 3 rows: no commit half applied. */
	for (int i = 0; i < appended_tables; i++) {
		char name[96];
		snprintf(name, sizeof(name), "%s_%d", table_name, i);
		t = tl_rest_catalog_load_table(c, "tierdb_nomem", name, &err);
		if (t == NULL && err.code == TL_ERR_NOT_FOUND) {
			tl_error_clear(&err);
			continue; /* the run failed before the catalog created it */
		}
		CHECK_OK(t ? 0 : -1, &err);
		int64_t rows = 0, sum = 0;
		CHECK_OK(fixture_read_ids(t->metadata, &rows, &sum, &err), &err);
		CHECK(rows == 0 || (rows == 3 && sum == 6));
		tl_ice_table_free(t);
		CHECK_OK(tl_rest_catalog_drop_table(c, "tierdb_nomem", name, &err), &err);
	}
	CHECK_OK(tl_rest_catalog_drop_table(c, "tierdb_nomem", table_name, &err), &err);
	tl_rest_catalog_free(c);
}
