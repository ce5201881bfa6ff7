/*
 * deferred_check.h: checks late materialisation in the Parquet reader
 * (tl_pq_reader_defer) against a plain read of the same file.
 *
 * Shared by the unit tests (fixture files, under AddressSanitizer) and
 * tests/tools/pqskip (files pyarrow writes with every encoding, in the
 * interop suite), so both check the same thing the same way.
 */
#ifndef TIERLAKE_TESTS_DEFERRED_CHECK_H
#define TIERLAKE_TESTS_DEFERRED_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/error.h"
#include "tierlake/parquet.h"

/* Whether row `row` of two vectors of column col holds the same value, or both a null (floats: the same bits). */
bool same_value(const tl_pq_column *col, const tl_vector *a, const tl_vector *b, int64_t row);

/*
 * Reads the file at `path` twice in batches of `batch_rows`: whole, and with
 * every column deferred but `eager_column` (-1: none), loading the deferred
 * ones only for every `load_every`-th batch (the last of each run of
 * load_every, so the first batches are skipped; 1 loads all). Every value of
 * the eager column and of each loaded batch must equal the plain read's.
 * Returns the number of values compared, or -1 with err naming the first
 * difference (or the reader's own error).
 */
int64_t deferred_check(const char *path, int64_t batch_rows, int eager_column, int load_every, tl_error *err);

#endif
