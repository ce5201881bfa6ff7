/*-------------------------------------------------------------------------
 *
 * transparent.h
 *		Transparent reads (SPEC §7): plain SQL on a registered tiered table
 *		reads heap >= T unioned with lake@S ⊕ delta.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_TRANSPARENT_H
#define TIERDB_TRANSPARENT_H

/*
 * Defines tierdb.transparent_reads (whenever the library loads, so the
 * setting is known everywhere) and, while the library is preloaded,
 * installs the planner hooks: transparent reads need
 * shared_preload_libraries, so that every session of the server reads
 * the same way from its first statement.
 */
extern void transparent_reads_init(bool preloading);

#endif							/* TIERDB_TRANSPARENT_H */
