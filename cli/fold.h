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

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/error.h"

/*
 * Folds up to `batch` of the table's delta rows behind T (oldest versions
 * first) into one lake snapshot and publishes it; *more is set when a full
 * batch was folded and more rows may wait (the caller reloads `t`, whose S
 * is then stale, and folds again). Does nothing (and logs why) when the
 * delta is empty or an unexpired read pin still reads the current view;
 * that pin's reader would miss the corrections once their delta rows are
 * gone. The batch bounds a fold's work and its journal entry, which lists
 * every folded (pk, version) pair.
 */
int tdb_fold(PGconn *c, const tdb_catalog_table *t, int64_t batch, bool *more, tl_error *err);

#endif
