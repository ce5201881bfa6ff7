/*-------------------------------------------------------------------------
 *
 * cold_conditions.h
 *		The conditions of a query on a tiered table that its cold read
 *		pushes into the lake: which ones, their values, and the lake filter
 *		and row checks they become.
 *
 * Three steps, at three times:
 *
 *	1. matching (when the cold scan is planned, and as it starts): a qual
 *	   is pushable where the lake can give Postgres' answer to it:
 *	   "column op value" with op a btree comparison of the column's type
 *	   or <> (its equality's negator), "column = ANY (array)" (which IN
 *	   lists become) and "column <> ALL (array)" (NOT IN's), "column IS
 *	   [NOT] NULL", "column [NOT] LIKE pattern" on text and varchar under
 *	   a deterministic collation, a boolean column alone ("b": b = true)
 *	   or tested (b IS [NOT] TRUE/FALSE/UNKNOWN), and AND, OR and NOT of
 *	   pushable conditions, NOT pushed down to the predicates (De Morgan;
 *	   a comparison's negator: NOT (x < 5) is x >= 5, exact in a WHERE,
 *	   which keeps neither for a null x); each value an expression free of
 *	   volatile functions, subplans and the table's own columns (a
 *	   constant, a parameter, now() - interval '1 day');
 *	2. evaluating (at executor start, and again at each rescan): the
 *	   values computed; a condition that holds for no row (a comparison
 *	   with null, = ANY of an empty array or of nulls only, <> ALL of an
 *	   array holding a null) becomes FALSE; a LIKE pattern becomes
 *	   equality (no wildcard), a prefix (wildcards only '%' at its end) or
 *	   stays without values (any other), and so does <> ALL of an empty
 *	   array (true even for null): the lake takes no condition without
 *	   values, and the executor checks those;
 *	3. translating (once the lake table is open): the lake filter, which
 *	   prunes files, row groups and pages by their statistics, and the row
 *	   check that decides the condition exactly on the lake's values
 *	   before a row is converted (lake_scan_add_row_condition), where the
 *	   lake can.
 *
 * Exactness is the rule throughout. Text is compared as bytes only where
 * the collation compares so: equality under a deterministic collation,
 * order under "C", "POSIX" and C.UTF-8. A value the column's lake type
 * cannot hold exactly (numeric digits beyond the column's scale, a date
 * infinity, an integer beyond the field's range) keeps its whole
 * condition out of the lake: the executor checks it on the converted rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_COLD_CONDITIONS_H
#define TIERDB_COLD_CONDITIONS_H

#include "postgres.h"

#include "nodes/bitmapset.h"
#include "nodes/execnodes.h"
#include "nodes/primnodes.h"

#include "lake_scan.h"
#include "tierlake_pg.h"

/* A pushable qual as matched: its values still expressions. */
typedef struct PushedCondition
{
	tl_ice_expr_op op;			/* EQ, LT, LE, GT, GE, IN, IS_NULL, NOT_NULL, NOT_EQ, NOT_IN; STARTS_WITH,
								 * NOT_STARTS_WITH: [NOT] LIKE value; AND, OR */
	AttrNumber	attno;			/* predicates: the column */
	Oid			typid;			/* the value's type (IN: an array type) */
	Expr	   *value;			/* a comparison's value, IN's array; NULL for null tests */
	ExprState  *state;			/* value's, once evaluated */
	List	   *args;			/* AND, OR: PushedCondition * */
	int			qual_index;		/* the scan's qual it is (set by the caller) */
} PushedCondition;

/* A pushable condition with its values computed. */
typedef struct EvaluatedCondition
{
	tl_ice_expr_op op;			/* as PushedCondition's, or FALSE: holds for no row */
	AttrNumber	attno;			/* predicates: the column */
	Oid			typid;			/* the values' type (IN: the array's element type) */
	int			nvalues;		/* 1 for a comparison or a prefix; [NOT] IN: the array's elements but
								 * its nulls; 0 for a null test, and for a [NOT] LIKE or NOT IN the
								 * lake cannot decide */
	Datum	   *values;
	List	   *args;			/* AND, OR: EvaluatedCondition * */
	int			qual_index;		/* the qual it is; -1: none (a hybrid read's split) */
} EvaluatedCondition;

/*
 * The pushable condition clause is, or NULL. With outer_vars, the column
 * is a Var of relation self and the values may hold Vars of other
 * relations (the parameters of a parameterized scan); otherwise the
 * column is any Var and the values hold none.
 */
extern PushedCondition *cold_condition_match(Expr *clause, Index self, bool outer_vars);

/*
 * Computes c's values (initialising their expressions in `parent` the
 * first time) in econtext's per-tuple memory, and returns them copied into
 * the current memory context.
 */
extern EvaluatedCondition *cold_condition_evaluate(PushedCondition *c, PlanState *parent, ExprContext *econtext);

/*
 * A predicate whose value a caller computed: a comparison's value of
 * type typid, IN's array (typid an array type), nothing for a null test
 * (value and isnull ignored). FALSE when the value is null, or IN's array
 * holds no element but nulls. The value is copied.
 */
extern EvaluatedCondition *cold_condition_of_value(tl_ice_expr_op op, AttrNumber attno, Oid typid, Datum value,
												   bool isnull);

/* Adds the columns condition c reads to *attnos. */
extern void cold_condition_attnos(const EvaluatedCondition *c, Bitmapset **attnos);

/*
 * Condition c as the lake scan takes it: *filter, which prunes by
 * statistics (field ids of the scan's schema), or NULL when it cannot;
 * and *check, the row check deciding c exactly (to give to
 * lake_scan_add_row_condition, which may still refuse it), or NULL when
 * the lake's values cannot decide it: a filter without a check prunes
 * only. Both are allocated in arena (the check in the current memory
 * context, its bytes in arena), which must outlive the scan.
 */
extern void cold_condition_for_lake(const EvaluatedCondition *c, LakeScan *lake, tl_arena *arena,
									const tl_ice_expr **filter, LakeRowCondition **check);

#endif							/* TIERDB_COLD_CONDITIONS_H */
