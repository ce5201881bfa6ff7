/*
 * test_rest_nomem.c: allocation failure in the REST catalog client, against
 * the RESTCatalogServer `make test-rest` starts: connecting with OAuth2
 * client credentials (the token request), loading a table through the
 * catalog and committing an append through updateTable, with the Nth
 * allocation failing and with every one from the Nth on failing
 * (fault_alloc.h). Every run must succeed or fail with TL_ERR_NOMEM, free
 * all it allocated, and leave the table readable with whole commits only.
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

/* Connect, load, append 3 rows through the catalog. */
static int load_and_append_workload(tl_error *err)
{
	tl_rest_catalog *c = connect_with_credentials(err);
	if (c == NULL)
		return -1;
	tl_ice_table *t = tl_rest_catalog_load_table(c, "tierdb_nomem", table_name, err);
	tl_rest_catalog_free(c); /* the table keeps the catalog */
	if (t == NULL)
		return -1;
	tl_ice_commit *commit = fixture_begin_append(t, 1, 3, err);
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
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_ice_field fields[] = {{.id = 1, .name = "id", .required = true, .type = {.id = TL_ICE_LONG}}};
	CHECK_OK(tl_ice_schema_init(&schema, 0, fields, 1, &err), &err);
	tl_ice_partition_spec_init(&spec, 0);
	tl_ice_table *t = tl_rest_catalog_create_table(c, "tierdb_nomem", table_name, NULL, &schema, &spec, NULL, 0, &err);
	tl_ice_schema_free(&schema);
	tl_ice_partition_spec_free(&spec);
	CHECK_OK(t ? 0 : -1, &err);
	tl_ice_table_free(t);

	CHECK(run_with_faults("rest load and append", load_and_append_workload, false) > 1);
	CHECK(run_with_faults("rest load and append (sticky)", load_and_append_workload, true) > 1);

	/* Whatever the runs committed, the table reads whole appends of 3 rows, ids 1..3 each. */
	t = tl_rest_catalog_load_table(c, "tierdb_nomem", table_name, &err);
	CHECK_OK(t ? 0 : -1, &err);
	if (t != NULL) {
		int64_t rows = 0, sum = 0;
		CHECK_OK(fixture_read_ids(t->metadata, &rows, &sum, &err), &err);
		CHECK(rows >= 6 && rows % 3 == 0); /* at least the two runs that completed */
		CHECK_INT(sum, rows / 3 * 6);
		tl_ice_table_free(t);
	}
	CHECK_OK(tl_rest_catalog_drop_table(c, "tierdb_nomem", table_name, &err), &err);
	tl_rest_catalog_free(c);
}
