/*
 * table_fixture.h: small storage and Iceberg workloads that the storage
 * tests run on every storage (local files in test_storage.c, S3 in
 * s3/test_s3_storage.c), so each implementation is held to the same
 * contract by the same code.
 */
#ifndef TIERLAKE_TEST_TABLE_FIXTURE_H
#define TIERLAKE_TEST_TABLE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/iceberg_table.h"
#include "tierlake/storage.h"

/* Writes text as the object at location (create mode as tl_storage_create), finishing it. */
int fixture_write_all(const char *location, const char *text, int mode, tl_error *err);
/* The whole object as a string (malloc'd), or NULL. */
char *fixture_read_all(const char *location, tl_error *err);
/* The listed entry called name, or NULL. */
const tl_storage_entry *fixture_find_entry(const tl_storage_list *l, const char *name);

/* An empty unpartitioned table with one required long column "id" (field 1) at location. */
tl_ice_table *fixture_create_table(const char *location, tl_error *err);
/* Writes `rows` ids from `first` into one new data file of t and begins an append holding it (NULL on error). */
tl_ice_commit *fixture_begin_append(tl_ice_table *t, int64_t first, int rows, tl_error *err);
/* Writes `rows` ids from `first` into one new data file and commits it as an append. */
int fixture_append_rows(const char *location, int64_t first, int rows, tl_error *err);
/* The row count and the sum of the ids of md's current snapshot, read through scan planning and our reader. */
int fixture_read_ids(const tl_ice_table_metadata *md, int64_t *rows, int64_t *sum, tl_error *err);
/* The current metadata version, the row count and the sum of the ids, read through scan and reader. */
int fixture_read_table(const char *location, int64_t *version, int64_t *rows, int64_t *sum, tl_error *err);

/*
 * Appends 5 rows to the table at `location` (made by fixture_create_table,
 * holding nothing yet) under an I/O error at each storage call, once or
 * from that call on (sticky), with the storage serving `scheme` wrapped in
 * a fault storage; after each attempt the table must read at its previous
 * state, or with exactly the new rows when the commit said it succeeded.
 * Reports failures through the test framework.
 */
void fixture_walk_storage_faults(const char *location, const char *scheme, bool sticky);

#endif
