/*-------------------------------------------------------------------------
 *
 * cutline_changes.h
 *		Writes to tierdb.cutline, counted in shared memory, so that a
 *		statement can trust a cut-line it read before instead of reading the
 *		catalog again.
 *
 * Every statement that writes tierdb.cutline counts itself "begun" before
 * it changes a row (a statement trigger that fires in every replication
 * role), and its transaction counts it "done" when it ends, after its
 * commit is visible.  A cut-line read with a snapshot taken after the
 * counters were equal ("quiet") is still the one any later snapshot sees
 * while both counters stay at that value: a change visible to the later
 * snapshot had to begin before it was taken, so either it was done before
 * the read (and the read saw it) or "begun" has moved.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_CUTLINE_CHANGES_H
#define TIERDB_CUTLINE_CHANGES_H

#include "postgres.h"

/*
 * Whether no write to tierdb.cutline is in progress; if so, *done is the
 * count of those done, to compare later. False without the shared
 * counters (the library not preloaded).
 */
extern bool cutline_changes_quiet(uint64 *done);

/* Whether tierdb.cutline is quiet and unchanged since cutline_changes_quiet gave `done`. */
extern bool cutline_unchanged_since(uint64 done);

/* Reserves and attaches the shared counters; from _PG_init while preloading. */
extern void cutline_changes_init(void);

#endif							/* TIERDB_CUTLINE_CHANGES_H */
