/*
 * digest.h: an order-independent fingerprint of a set of rows, so that
 * `tierdb verify` can tell whether the rows a heap partition holds (or held
 * when it was tiered) are exactly the rows the lake holds for its range.
 *
 * A digest is the row count plus the sum, modulo 2^64, of a 64-bit hash of
 * every row. Summing makes it independent of row order (the heap and the
 * lake return rows in different orders) while still counting duplicates,
 * which an XOR would cancel. Rows are hashed from their lake representation
 * (the column vectors of a tl_pq_batch, as pgcopy.c decodes them from the
 * heap and the Iceberg reader decodes them from Parquet), so both sides hash
 * identical bytes for identical values.
 *
 * The hash is part of what the daemon journals (op_log details "digests"),
 * so it must never change meaning: TDB_DIGEST_VERSION names it, and a
 * different version is not compared.
 */
#ifndef TIERDB_DIGEST_H
#define TIERDB_DIGEST_H

#include <stdint.h>

#include <jansson.h>

#include "tierlake/parquet.h"

#define TDB_DIGEST_VERSION 1

typedef struct tdb_digest {
	int64_t rows;
	uint64_t sum; /* of the row hashes, wrapping */
} tdb_digest;

/* The hash of row `row` of `batch` (columns shaped by `schema`). */
uint64_t tdb_digest_row_hash(const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t row);

/* Adds one row. */
void tdb_digest_add_row(tdb_digest *d, const tl_pq_schema *schema, const tl_pq_batch *batch, int64_t row);

/* Adds every row of the batch. */
void tdb_digest_add_batch(tdb_digest *d, const tl_pq_schema *schema, const tl_pq_batch *batch);

/* {"rows": N, "checksum": "<16 hex digits>", "version": TDB_DIGEST_VERSION} */
json_t *tdb_digest_to_json(const tdb_digest *d);

/* The reverse; 0, or -1 when `j` is not a digest of this version. */
int tdb_digest_from_json(const json_t *j, tdb_digest *out);

#endif
