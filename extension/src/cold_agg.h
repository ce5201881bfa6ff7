/*-------------------------------------------------------------------------
 *
 * cold_agg.h
 *		Aggregates over a tiered table computed in two parts: Postgres'
 *		partial aggregate over the heap arm of the seam union, and the
 *		custom scan "TierDB Cold Aggregate" over the cold rows (lake@S ⊕
 *		delta), whose partial states a Finalize Aggregate combines, as
 *		Postgres combines the partial states of a parallel or
 *		partitionwise aggregate.
 *
 *		SELECT event, count(*), sum(value) FROM t GROUP BY event
 *
 *		Finalize HashAggregate
 *		  ->  Append
 *		        ->  Partial HashAggregate
 *		              ->  (the heap arm: t at or above T)
 *		        ->  Custom Scan (TierDB Cold Aggregate)
 *
 * The cold part makes no tuple of the rows it reads: it checks the query's
 * conditions and updates each group's states as it goes, with the states
 * Postgres' own transition functions would make: count, and sums and
 * averages of integers and floats, min and max of by-value types, written
 * out in loops over the lake's vectors; any other built-in aggregate of
 * one column that Postgres can aggregate partially (sum and avg of bigint
 * and numeric, min and max of text or numeric, variances, bool_and, ...)
 * by calling its transition function (agg_states.h). An aggregate's
 * FILTER is checked on each cold row (then the rows come one at a time,
 * not from the vectors). A user-defined aggregate, a DISTINCT or ORDER BY
 * inside one, a FILTER with a subquery or a volatile function, an
 * aggregate of an expression, grouping sets, or a group key that is not a
 * plain column leaves the query to the plain plan (Postgres cannot
 * aggregate count(DISTINCT x) partially: no partial state exists to hand
 * on).
 *
 * tierdb.enable_cold_aggregate (on) turns it off.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_COLD_AGG_H
#define TIERDB_COLD_AGG_H

#include "nodes/plannodes.h"

/* Whether a custom scan is the cold aggregate. */
extern bool is_cold_agg(CustomScan *cscan);

/* Its quals on the cold rows (Vars INDEX_VAR, attno the table's), as cold_scan_quals gives the cold scan's. */
extern List *cold_agg_quals(CustomScan *cscan);

/* Installs the planner hook and registers the custom scan; from _PG_init while preloading. */
extern void cold_agg_init(void);

#endif							/* TIERDB_COLD_AGG_H */
