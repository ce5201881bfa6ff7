/*-------------------------------------------------------------------------
 *
 * spill.h
 *		Transparent INSERT and COPY of rows below the cut-line through a
 *		tiered table's spill partition (spill.c; the SQL side is
 *		sql/0.1/47-transparent-writes.sql).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_SPILL_H
#define TIERDB_SPILL_H

#include "fmgr.h"
#include "nodes/lockoptions.h"
#include "nodes/parsenodes.h"
#include "utils/relcache.h"

#include "seam.h"

/* Defines tierdb.transparent_writes; called by _PG_init. */
extern void spill_init(void);

/* tierdb.transparent_writes, which the routes check per row (cached plans follow it). */
extern bool spill_transparent_writes_on(void);

/*
 * The spill partition of `parent` (its DEFAULT partition carrying the
 * tierdb_spill trigger), or InvalidOid: whether the table has transparent
 * writes (the setting tierdb.transparent_writes is checked per row, by the
 * trigger, so that cached plans need no invalidation when it changes).
 */
extern Oid	spill_partition(Oid parent);

/*
 * Whether the spill partition of `parent` also carries UPDATE and DELETE
 * (cold_dml.h): one made before they were routed has an INSERT trigger
 * only, and tierdb_disable_transparent_writes and
 * tierdb_enable_transparent_writes make it again.
 */
extern bool spill_routes_changes(Oid parent);

/*
 * Whether INSERT ... ON CONFLICT into `parent` is routed: its spill
 * partition also carries the BEFORE INSERT trigger tierdb_spill_keys that
 * brings conflicting cold rows in (cold_dml.h), and the table has a unique
 * index on exactly its merge key, which sees them.  Otherwise such an
 * INSERT reaching rows below T is refused (dml_guard.c).
 */
extern bool spill_routes_conflicts(Oid parent);

/*
 * Whether an INSERT query level into registered table t sends its rows
 * below T to the spill partition rather than having them refused while
 * planning (dml_guard.c): an INSERT into a table with a spill partition
 * (with ON CONFLICT, one that routes conflicts: spill_routes_conflicts).
 */
extern bool spill_routes_insert(const Query *q, const SeamTable *t);

/*
 * tierdb_explain's line for an INSERT into t that spill_routes_insert
 * accepts: where its rows go (heap, delta, or both), judged from constant
 * VALUES when it has them.
 */
extern char *spill_explain_insert(const Query *q, const SeamTable *t);

/*
 * Whether tierdb.spill_create is creating a spill partition in this
 * backend: the DDL guard (ddl.c) then lets a registered table take that
 * DEFAULT partition.
 */
extern bool spill_creating(void);

/*
 * Locks a cold row for SELECT ... FOR UPDATE/SHARE (cold_dml.c): takes the
 * lock on its pk that every write of it takes (tierdb.lock_pk), exclusive
 * for FOR [NO KEY] UPDATE and shared for FOR [KEY] SHARE, waiting as
 * `wait` says (NOWAIT raises 55P03); false when SKIP LOCKED skips the row.
 * Like a routed change (40001) it refuses a row another transaction wrote
 * since the statement read it.  `row` is a row of parent, t's table;
 * *locker starts NULL and keeps what the statement's later rows reuse (the
 * first call locks the cut-line FOR SHARE until commit, as routed writes do).
 */
typedef struct SpillLocker SpillLocker;
extern bool spill_lock_cold_row(const SeamTable *t, Relation parent, HeapTuple row, LockClauseStrength strength,
								LockWaitPolicy wait, SpillLocker **locker);

extern Datum tierdb_spill_route(PG_FUNCTION_ARGS);
extern Datum tierdb_spill_create(PG_FUNCTION_ARGS);
extern Datum tierdb_mirror_route(PG_FUNCTION_ARGS);
extern Datum tierdb_spill_bring_in(PG_FUNCTION_ARGS);

#endif							/* TIERDB_SPILL_H */
