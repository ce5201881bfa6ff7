/*-------------------------------------------------------------------------
 *
 * hybrid.h
 *		Hybrid reads of mirrored tables (SPEC §5, docs/mirrored.md): with
 *		tierdb.mirrored_reads = 'hybrid', a read of a mirrored table takes
 *		its rows below a split from the mirror in the lake, the rest from
 *		the heap, and gets exactly the rows a heap read would.
 *
 * The read is the seam union of transparent.c (heap arm: tier_key >= T,
 * cold arm: the cold scan), with a pin of its own made by hybrid_capture
 * when the statement starts:
 *
 *	1. wait (tierdb.mirror_wait_ms) until the mirror frontier F passes the
 *	   WAL insert position, taken after the statement's snapshot: every
 *	   transaction the snapshot sees committed before that position, so the
 *	   lake holds them all;
 *	2. but the lake at F may also hold transactions the snapshot does not
 *	   see (committed since).  tierdb.mirror_batches says which transaction
 *	   ids each published batch holds: S is the newest batch snapshot such
 *	   that it and every batch before it hold only transactions the
 *	   snapshot sees, so the lake at S is the table as the snapshot sees it,
 *	   except for the keys the later batches changed (tierdb.mirror_keys);
 *	3. T, the split, is the highest tier key the mirror has written minus
 *	   tierdb.hybrid_lag.
 *
 * The cold scan then reads the lake at S below T, minus those keys, plus
 * the heap's rows of those keys below T (hybrid_corrections), read with the
 * statement's snapshot.  When any step cannot be taken (the wait times
 * out, the copy is still running, the batches kept do not reach back far
 * enough, a TRUNCATE among the later batches, the transaction has written,
 * the table forces row-level security on its owner), the pin puts T at the
 * very bottom and the statement reads the heap alone: always exact.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_HYBRID_H
#define TIERDB_HYBRID_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "utils/snapshot.h"

#include "delta_keys.h"
#include "seam.h"

/* Defines the GUCs tierdb.mirrored_reads, tierdb.mirror_wait_ms and tierdb.hybrid_lag. */
extern void hybrid_init(void);

/*
 * Whether reads of mirrored tables are hybrid now: the setting is 'hybrid'
 * and this is not the heap read of hybrid_corrections itself.
 */
extern bool hybrid_reads_on(void);

/* The pin of a hybrid read of mirrored table `table` by a statement reading with `snapshot` (see above). */
extern SeamPin hybrid_capture(const SeamTable *table, Snapshot snapshot);

/*
 * For the cold scan of a hybrid pin with corrections: the keys the lake
 * must not answer for (*keys) and the heap's rows of those keys below T,
 * read with the statement's snapshot (a List of HeapTuple of the table's
 * row type, tupdesc).
 */
extern void hybrid_corrections(const SeamTable *table, const SeamPin *pin, TupleDesc tupdesc,
							   DeltaKeys **keys, List **rows);

#endif							/* TIERDB_HYBRID_H */
