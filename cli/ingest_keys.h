/*
 * ingest_keys.h: finding the lake rows whose keys a batch of rows holds,
 * so that an ingest replaces them (equality deletes) and a Stream Load
 * knows which keys move between the tiers (ingest.c, step 3).
 */
#ifndef TIERDB_INGEST_KEYS_H
#define TIERDB_INGEST_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "pgmap.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_table.h"

typedef struct tdb_key_search {
	PGconn *c;
	const tl_ice_table *lake;
	bool has_base;                 /* the snapshot searched, S (none: the lake holds no row) */
	int64_t base_s;
	const tdb_pg_column *key_cols; /* the pk columns, then the tier key unless it is in the pk (tdb_lake_key_columns) */
	const int32_t *key_ids;        /* their lake field ids */
	int nkey;
	int npk;
	const char *keys_from;         /* "<table> WHERE <condition>": the batch's rows, with the pk columns by name */
	const char *into;              /* a table of the key columns, in order, that receives the lake rows found */
} tdb_key_search;

/*
 * Copies into s->into the key columns of every lake row at S whose key
 * hash is among the batch's keys: a superset of the rows with those keys
 * (hash collisions), which the caller matches exactly in SQL.
 */
int tdb_find_lake_keys(const tdb_key_search *s, tl_error *err);

#endif
