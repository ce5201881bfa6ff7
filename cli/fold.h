/*
 * fold.h: folding the delta into the lake (SPEC §2 Delta, §5, §6, §8).
 *
 * The delta (tierdb.delta) is a sparse overlay of corrections to rows only
 * the lake holds; every reader merges it over lake@S. The fold writes it
 * into the lake as one snapshot of equality deletes on the primary-key
 * field ids plus data files for the upserts, and clears the folded rows
 * under a version guard in the transaction that advances S, so a row
 * corrected again while the fold ran keeps its newer correction.
 */
#ifndef TIERDB_FOLD_H
#define TIERDB_FOLD_H

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/error.h"

/*
 * Folds the table's delta rows behind T into one lake snapshot and
 * publishes it. Does nothing (and logs why) when the delta is empty or an
 * unexpired read pin still reads the current view; that pin's reader
 * would miss the corrections once their delta rows are gone.
 */
int tdb_fold(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
