/*-------------------------------------------------------------------------
 *
 * dml_guard.h
 *		Plain DML on a registered tiered table stays on the heap's side of
 *		the cut-line, or is refused (issue 16 item 7; SPEC §7 transparent
 *		writes will route it later).
 *
 * A table's rows below T live in the lake, where plain INSERT, UPDATE,
 * DELETE, MERGE and COPY cannot reach them: an UPDATE of a cold row would
 * report UPDATE 0 while SELECT still shows it.  So, with transparent
 * reads on (the setting that makes SELECT show the lake rows):
 *
 *	- UPDATE, DELETE and MERGE (with a WHEN MATCHED action) must prove
 *	  from their own conditions that the tier key is at or above T
 *	  (transparent.c finds the bounds, with the mechanism heap-only reads
 *	  use: a constant is checked against T when planning and the T is
 *	  checked again when the statement starts; a parameter or now() is
 *	  checked when the statement starts); otherwise dml_guard_refuse;
 *	  so must SELECT ... FOR UPDATE/SHARE of a table whose cold rows
 *	  cannot be locked (no spill partition: transparent.c,
 *	  guard_locked_reference);
 *	- every new tier-key value an INSERT, an UPDATE's SET, ON CONFLICT DO
 *	  UPDATE or a MERGE action writes is checked per row when the statement
 *	  runs (dml_guard_check_new_rows), before partition routing would
 *	  report "no partition found";
 *	- COPY FROM, which no planner sees, gets a hint naming the routed
 *	  alternative on its "no partition" error.
 *
 * With tierdb.transparent_reads off the table is its heap, for reads and
 * writes alike, and nothing is checked: the escape hatch the daemon and
 * the routing functions' own heap statements use.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_DML_GUARD_H
#define TIERDB_DML_GUARD_H

#include "postgres.h"

#include "nodes/parsenodes.h"

#include "seam.h"

/* "INSERT", "UPDATE", "DELETE", "MERGE" or "the statement", for messages. */
extern const char *dml_command_name(CmdType command);

/* "FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE" or "FOR KEY SHARE", for messages. */
extern const char *lock_clause_name(LockClauseStrength strength);

/* Whether the query level's result relation needs its tier key bounded: UPDATE, DELETE, MERGE ... WHEN MATCHED. */
extern bool dml_guard_needs_bound(const Query *q);

/*
 * Refuses the query level, whose conditions do not keep table t's tier key
 * at or above T tier_key_hi: an error naming tierdb_upsert/tierdb_delete
 * (for a SELECT that locks t without a spill partition: naming
 * tierdb_enable_transparent_writes); or, while refusals are described, a
 * line for tierdb_explain, and returns.
 */
extern void dml_guard_refuse(const Query *q, const SeamTable *t, int64 tier_key_hi);

/*
 * From now on dml_guard_refuse appends its refusal to *into instead of
 * raising it (tierdb_explain plans statements it does not run); NULL stops.
 */
extern void dml_guard_describe_refusals(List **into);

/*
 * Wraps every new tier-key value the query level writes into its result
 * relation (table t) in the per-row check tierdb.tier_key_check; but those
 * of an UPDATE or MERGE whose cold rows are routed (`changes_routed`,
 * cold_dml_routes) or of a routed INSERT, which go where their tier key says.
 */
extern void dml_guard_check_new_rows(Query *q, const SeamTable *t, bool changes_routed);

/* Installs the COPY FROM hint (ProcessUtility hook); while preloading. */
extern void dml_guard_init(void);

#endif							/* TIERDB_DML_GUARD_H */
