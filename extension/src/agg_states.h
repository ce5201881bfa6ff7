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
 * functions cannot tell it from Postgres' own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_AGG_STATES_H
#define TIERDB_AGG_STATES_H

#include "postgres.h"

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
	COLD_MIN,					/* min(x): x's type */
	COLD_MAX
} ColdAggKind;

/* One aggregate of a cold aggregate's output. */
typedef struct ColdAggregate
{
	ColdAggKind kind;
	AttrNumber	attno;			/* the argument's column (table numbering); 0 for count(*) */
	Oid			type;			/* the argument's type */
	int			output;			/* its column in the output */
} ColdAggregate;

/* One aggregate's state in one group. */
typedef struct PartialState
{
	bool		has_value;		/* a value was seen (for sums, min and max) */
	int64		count;
	int64		sum;
	Datum		value;			/* min, max, float sums: of a by-value type */
} PartialState;

/* The aggregate a function computes, if computed here; false otherwise. */
extern bool cold_agg_kind(Oid aggfnoid, ColdAggKind *kind);

/* Adds one value of a's argument (ignored by count(*)) to its state. */
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
