/*-------------------------------------------------------------------------
 *
 * agg_states.h
 *		The aggregates the cold aggregate computes (cold_agg.h), and the
 *		state each keeps per group: advanced by one value, or by a batch of
 *		the lake's column vectors, and handed on as the partial state a
 *		Partial Aggregate would make of the same rows.
 *
 * A state is exactly what the aggregate's transition function would make
 * of the same values in the same order (count int8inc, sum int4_sum and
 * float8pl, min and max the type's smaller and larger, which keep the
 * later of two equal values), so the Finalize Aggregate's combine
 * functions cannot tell it from Postgres' own. The common aggregates are
 * written out here, to run in tight loops over the vectors; the others
 * Postgres can aggregate partially (sums and averages of bigint and
 * numeric, min and max of every type, variances, bool_and, ...) call the
 * aggregate's own transition and serialization functions, as nodeAgg.c
 * calls them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_AGG_STATES_H
#define TIERDB_AGG_STATES_H

#include "postgres.h"

#include "fmgr.h"
#include "nodes/primnodes.h"

#include "lake_scan.h"

typedef enum ColdAggKind
{
	COLD_COUNT_STAR,			/* count(*): int8 */
	COLD_COUNT,					/* count(x): int8 */
	COLD_COUNT_NONE,			/* count(NULL): 0 */
	COLD_SUM_INT,				/* sum(int2|int4): int8, NULL before the first value */
	COLD_SUM_FLOAT4,			/* sum(float4): float4 */
	COLD_SUM_FLOAT8,			/* sum(float8): float8 */
	COLD_AVG_INT,				/* avg(int2|int4): int8[2] {count, sum} */
	COLD_MIN,					/* min(x) of a by-value type: x's type */
	COLD_MAX,
	COLD_TRANSITION				/* any other: its own transition function */
} ColdAggKind;

/* How an aggregate of kind COLD_TRANSITION is advanced and handed on. */
typedef struct TransitionCall
{
	FunctionCallInfo fcinfo;	/* the transition function's call: (state, value) */
	bool		strict;			/* transition function strict: nulls skipped, the first value the state */
	FmgrInfo	serialfn;		/* an internal state's serialization; fn_oid invalid for the others */
	bool		has_initval;
	Datum		initval;		/* the initial state (not of type internal), copied into each group */
	int16		translen;
	bool		transbyval;
	MemoryContext states;		/* where the groups' states live: the context transition functions ask for */
} TransitionCall;

/* One aggregate of a cold aggregate's output. */
typedef struct ColdAggregate
{
	ColdAggKind kind;
	AttrNumber	attno;			/* the argument's column (table numbering); 0 for count(*) */
	Oid			type;			/* the argument's type */
	int			output;			/* its column in the output */
	TransitionCall *call;		/* COLD_TRANSITION's */
} ColdAggregate;

/* One aggregate's state in one group. */
typedef struct PartialState
{
	bool		has_value;		/* a value was seen (sums, min and max); a transition state set up */
	bool		state_null;		/* a transition state that is NULL */
	bool		awaiting_first; /* a strict transition with no initial state: the first value becomes it */
	int64		count;
	int64		sum;
	Datum		value;			/* min, max, float sums: of a by-value type; a transition state */
} PartialState;

/*
 * The kind of an aggregate, if computed here; false otherwise: a built-in
 * one of at most one argument, not polymorphic, that Postgres can
 * aggregate partially (it has a combine function, and serializes an
 * internal state).
 */
extern bool cold_agg_kind(Oid aggfnoid, ColdAggKind *kind);

/*
 * Prepares a COLD_TRANSITION aggregate's calls, for agg (a partial
 * aggregate of the plan). The calls live in the current memory context.
 */
extern void agg_prepare_transition(ColdAggregate *a, Aggref *agg);

/*
 * The memory context of a COLD_TRANSITION aggregate's group states from
 * now on (the transition functions allocate there too); before the first
 * value, and again after the states were freed.
 */
extern void agg_states_context(ColdAggregate *a, MemoryContext states);

/*
 * Adds one value of a's argument (ignored by count(*)) to its state. In
 * a short-lived memory context: transition functions leave their garbage
 * there.
 */
extern void agg_advance_value(const ColdAggregate *a, PartialState *st, Datum value, bool isnull);

/*
 * Adds the rows of a lake batch to aggregate `which` of their groups:
 * groups[i] holds the states of the group of batch->rows[i], or groups is
 * NULL and every row belongs to the one group whose states are `single`. The values of the common types
 * are read from the vectors; the others are converted as lake_scan_next
 * converts them.
 */
extern void agg_advance_batch(const ColdAggregate *a, int which, LakeScan *lake, const LakeBatch *batch,
							  PartialState **groups, PartialState *single);

/* The partial state of a, as its Partial Aggregate would output it (in the current memory context). */
extern Datum agg_partial_state(const ColdAggregate *a, const PartialState *st, bool *isnull);

#endif							/* TIERDB_AGG_STATES_H */
