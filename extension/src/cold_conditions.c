/*-------------------------------------------------------------------------
 *
 * cold_conditions.c
 *		Matching a query's quals on a tiered table to what the lake can
 *		check, computing their values, and making them the lake's filter
 *		and row checks; see cold_conditions.h.
 *
 * The tree of a pushable condition mirrors the lake filter it becomes
 * (tl_ice_expr): predicates on one column, AND and OR. The filter of an
 * AND inside an OR may leave out a conjunct the lake cannot take (the
 * filter then holds for more rows, which only prunes less), but the row
 * check of anything is made only from every part of it: a row check is
 * exact or absent.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <locale.h>
#include <math.h>

#include "access/nbtree.h"
#include "access/stratnum.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/pg_locale.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/uuid.h"

#include "cold_conditions.h"
#include "seam.h"

/* The integer types, which one btree family compares across their widths. */
static bool
is_integer_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID;
}

/* ------------------------------------------------------------ matching */

/*
 * Whether a column of type `column` compared with a value of type `value`
 * may be pushed: the same type, integers of any width (the integer
 * operator family compares across them), or text and varchar (one family,
 * one representation).
 */
static bool
comparable_types(Oid column, Oid value)
{
	if (column == value)
		return true;
	if (is_integer_type(column) && is_integer_type(value))
		return true;
	return (column == TEXTOID || column == VARCHAROID) && (value == TEXTOID || value == VARCHAROID);
}

/*
 * Whether a collation is the C library's "C.UTF-8" locale, which sorts by
 * code point (glibc documents it so), that is by UTF-8 bytes, though
 * Postgres treats it as any libc locale. It is the database's default
 * collation in many installations (the e2e clusters' too).
 */
static bool
is_libc_c_utf8(Oid collation)
{
	const char *name = NULL;
	char	   *copy = NULL;
	bool		result;

	if (collation == DEFAULT_COLLATION_OID)
	{
		if (pg_newlocale_from_collation(collation) != 0)
			return false;		/* an ICU default */
		name = setlocale(LC_COLLATE, NULL);	/* the database's, set as the backend started */
	}
	else
	{
		HeapTuple	tp = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
		bool		isnull = true;
		Datum		d = (Datum) 0;

		if (!HeapTupleIsValid(tp))
			return false;
		if (((Form_pg_collation) GETSTRUCT(tp))->collprovider == COLLPROVIDER_LIBC)
			d = SysCacheGetAttr(COLLOID, tp, Anum_pg_collation_collcollate, &isnull);
		if (!isnull)
			name = copy = TextDatumGetCString(d);
		ReleaseSysCache(tp);
	}
	result = name != NULL && (strcmp(name, "C.UTF-8") == 0 || strcmp(name, "C.utf8") == 0);
	if (copy != NULL)
		pfree(copy);
	return result;
}

/*
 * Whether a comparison under collation `collation` (the operator's input
 * collation; InvalidOid for types without one) gives the answer the lake
 * gives comparing the UTF-8 bytes its statistics and rows hold: equality
 * under any deterministic collation (equal text is equal bytes), ordering
 * only under "C"/"POSIX", which orders by bytes.  Under another collation
 * a file whose bounds are 'a'..'a' holds rows below 'B'.
 */
static bool
compares_as_bytes(Oid collation, tl_ice_expr_op op)
{
	if (!OidIsValid(collation))
		return true;
	if (op == TL_ICE_EXPR_EQ || op == TL_ICE_EXPR_NOT_EQ)
		return get_collation_isdeterministic(collation);
	return lc_collate_is_c(collation) || is_libc_c_utf8(collation);
}

/* The comparison an operator makes in its type's default btree family, as a lake operator. */
static bool
btree_lake_op_of(Oid opno, Oid typid, bool commuted, tl_ice_expr_op *out)
{
	/* The type cache keeps the default btree family: no catalog lookup per execution. */
	Oid			opfamily = lookup_type_cache(typid, TYPECACHE_BTREE_OPFAMILY)->btree_opf;
	int			strategy;

	if (!OidIsValid(opfamily) || !op_in_opfamily(opno, opfamily))
		return false;
	strategy = get_op_opfamily_strategy(opno, opfamily);
	if (commuted)
		strategy = BTCommuteStrategyNumber(strategy);
	switch (strategy)
	{
		case BTLessStrategyNumber:
			*out = TL_ICE_EXPR_LT;
			return true;
		case BTLessEqualStrategyNumber:
			*out = TL_ICE_EXPR_LE;
			return true;
		case BTEqualStrategyNumber:
			*out = TL_ICE_EXPR_EQ;
			return true;
		case BTGreaterEqualStrategyNumber:
			*out = TL_ICE_EXPR_GE;
			return true;
		case BTGreaterStrategyNumber:
			*out = TL_ICE_EXPR_GT;
			return true;
		default:
			return false;
	}
}

/*
 * The lake operator of operator opno, or of its negation (negate: NOT
 * (x op v)): a comparison of the type's default btree family, or the
 * negator of its equality (<>, which no btree family holds). The negation
 * of a comparison is its negator's (NOT (x < 5) is x >= 5): a btree family
 * orders its type totally (Postgres' floats too, NaN above every number),
 * so for a non-null x exactly one of the two holds, and a WHERE keeps a
 * null x for neither.
 */
static bool
lake_op_of(Oid opno, Oid typid, bool commuted, bool negate, tl_ice_expr_op *out)
{
	Oid			negator;

	if (negate && !OidIsValid(opno = get_negator(opno)))
		return false;
	if (btree_lake_op_of(opno, typid, commuted, out))
		return true;
	negator = get_negator(opno);
	if (OidIsValid(negator) && btree_lake_op_of(negator, typid, commuted, out) && *out == TL_ICE_EXPR_EQ)
	{
		*out = TL_ICE_EXPR_NOT_EQ;
		return true;
	}
	return false;
}

/* Whether node has a Var of this query level of range table entry *varno (0: of any). */
static bool
contains_var_of(Node *node, Index *varno)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup == 0 && (*varno == 0 || ((Var *) node)->varno == *varno);
	return expression_tree_walker(node, contains_var_of, varno);
}

/* The user column node is (under a RelabelType): of relation self with outer_vars, else of any; or NULL. */
static Var *
column_of(Node *node, Index self, bool outer_vars)
{
	Var		   *var;

	if (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL || !IsA(node, Var))
		return NULL;
	var = (Var *) node;
	if (var->varlevelsup != 0 || var->varattno <= 0 || (outer_vars && var->varno != self))
		return NULL;
	return var;
}

/*
 * Whether an expression can be computed when the executor starts: no
 * volatile function or subplan, and no Var but of other relations (with
 * outer_vars: they become a parameterized scan's parameters).
 */
static bool
computable_value(Node *value, Index self, bool outer_vars)
{
	Index		vars_of = outer_vars ? self : 0;

	if (IsA(value, RelabelType))
		value = (Node *) ((RelabelType *) value)->arg;
	return !contains_var_of(value, &vars_of) && !contain_volatile_functions(value) && !contain_subplans(value);
}

static PushedCondition *
new_predicate(tl_ice_expr_op op, const Var *column, Oid typid, Expr *value)
{
	PushedCondition *c = palloc0(sizeof(PushedCondition));

	c->op = op;
	c->attno = column->varattno;
	c->typid = typid;
	c->value = value;
	return c;
}

static PushedCondition *match_clause(Expr *clause, Index self, bool outer_vars, bool negate);

/*
 * "column LIKE pattern" and "column NOT LIKE pattern" (negate: NOT of
 * them) on a text or varchar column, as STARTS_WITH and NOT_STARTS_WITH
 * of the pattern, which evaluating makes a prefix or a string to equal
 * where it can (set_like_pattern). LIKE compares bytes under any
 * deterministic collation (and refuses the others).
 */
static PushedCondition *
match_like(OpExpr *op, Index self, bool outer_vars, bool negate)
{
	Oid			func = get_opcode(op->opno);
	Var		   *column;
	Node	   *pattern;
	bool		positive;

	if ((func != F_TEXTLIKE && func != F_TEXTNLIKE) || list_length(op->args) != 2)
		return NULL;
	column = column_of(linitial(op->args), self, outer_vars);
	pattern = lsecond(op->args);
	if (column == NULL || (column->vartype != TEXTOID && column->vartype != VARCHAROID) ||
		!computable_value(pattern, self, outer_vars) || exprType(pattern) != TEXTOID ||
		!OidIsValid(op->inputcollid) || !get_collation_isdeterministic(op->inputcollid))
		return NULL;
	positive = (func == F_TEXTLIKE) != negate;
	return new_predicate(positive ? TL_ICE_EXPR_STARTS_WITH : TL_ICE_EXPR_NOT_STARTS_WITH, column, TEXTOID,
						 (Expr *) pattern);
}

/* "column op value" or "value op column": a comparison of the column's btree family, or its negation. */
static PushedCondition *
match_comparison(OpExpr *op, Index self, bool outer_vars, bool negate)
{
	Node	   *left,
			   *right;
	Var		   *column;
	Node	   *value;
	bool		commuted = false;
	tl_ice_expr_op lake_op;

	if (list_length(op->args) != 2)
		return NULL;
	left = linitial(op->args);
	right = lsecond(op->args);
	if ((column = column_of(left, self, outer_vars)) != NULL && computable_value(right, self, outer_vars))
		value = right;
	else if ((column = column_of(right, self, outer_vars)) != NULL && computable_value(left, self, outer_vars))
	{
		value = left;
		commuted = true;
	}
	else
		return NULL;
	if (IsA(value, RelabelType))
		value = (Node *) ((RelabelType *) value)->arg;
	if (!comparable_types(column->vartype, exprType(value)))
		return NULL;
	/* The operator's family is its input type's: text's for a varchar column read as text. */
	if (!lake_op_of(op->opno, exprType(commuted ? right : left), commuted, negate, &lake_op) ||
		!compares_as_bytes(op->inputcollid, lake_op))
		return NULL;
	return new_predicate(lake_op, column, exprType(value), (Expr *) value);
}

/*
 * "column = ANY (array)", which is what "column IN (...)" becomes: any
 * array expression the executor can compute at its start (a constant, a
 * parameter, ARRAY[$1, $2]), with the column's btree equality; and
 * "column <> ALL (array)", NOT IN's form, with its negator. Negated, one
 * is the other: NOT (x = ANY (a)) is true exactly where x <> ALL (a) is.
 */
static PushedCondition *
match_in_list(ScalarArrayOpExpr *saop, Index self, bool outer_vars, bool negate)
{
	Var		   *column;
	Node	   *array;
	Oid			element;
	tl_ice_expr_op lake_op;

	if (list_length(saop->args) != 2)
		return NULL;
	column = column_of(linitial(saop->args), self, outer_vars);
	array = lsecond(saop->args);
	if (column == NULL || !computable_value(array, self, outer_vars))
		return NULL;
	element = get_element_type(exprType(array));
	if (!OidIsValid(element) || !comparable_types(column->vartype, element))
		return NULL;
	/* ANY with equality is IN, ALL with <> (equality's negator) NOT IN */
	if (!lake_op_of(saop->opno, exprType(linitial(saop->args)), false, false, &lake_op) ||
		lake_op != (saop->useOr ? TL_ICE_EXPR_EQ : TL_ICE_EXPR_NOT_EQ) ||
		!compares_as_bytes(saop->inputcollid, TL_ICE_EXPR_EQ))
		return NULL;
	return new_predicate(saop->useOr != negate ? TL_ICE_EXPR_IN : TL_ICE_EXPR_NOT_IN, column, exprType(array),
						 (Expr *) array);
}

/* "column IS NULL", "column IS NOT NULL" (not a row's: that tests each of its fields), or their negation. */
static PushedCondition *
match_null_test(NullTest *test, Index self, bool outer_vars, bool negate)
{
	Var		   *column = column_of((Node *) test->arg, self, outer_vars);

	if (column == NULL || test->argisrow || type_is_rowtype(column->vartype))
		return NULL;
	return new_predicate((test->nulltesttype == IS_NULL) != negate ? TL_ICE_EXPR_IS_NULL : TL_ICE_EXPR_NOT_NULL,
						 column, InvalidOid, NULL);
}

/* "column = value" for a boolean column. */
static PushedCondition *
boolean_predicate(const Var *column, bool value)
{
	return new_predicate(TL_ICE_EXPR_EQ, column, BOOLOID, (Expr *) makeBoolConst(value, false));
}

static PushedCondition *
new_or(PushedCondition *left, PushedCondition *right)
{
	PushedCondition *c = palloc0(sizeof(PushedCondition));

	c->op = TL_ICE_EXPR_OR;
	c->args = list_make2(left, right);
	return c;
}

/*
 * A boolean column standing as a condition: "b" holds where b = true,
 * and negated ("NOT b") where b = false. Neither holds for a null b.
 */
static PushedCondition *
match_boolean_column(Var *var, Index self, bool outer_vars, bool negate)
{
	Var		   *column = column_of((Node *) var, self, outer_vars);

	if (column == NULL || column->vartype != BOOLOID)
		return NULL;
	return boolean_predicate(column, !negate);
}

/*
 * "x IS [NOT] TRUE / FALSE / UNKNOWN", which is never null, so its
 * negation is the opposite test. On a boolean column each is its lake
 * condition (b IS NOT FALSE: b = true OR b IS NULL); on another pushable
 * condition c, IS TRUE is c itself and IS FALSE is NOT c (true exactly
 * where c is false); the rest would need c's nullness, which no lake
 * condition says.
 */
static PushedCondition *
match_boolean_test(BooleanTest *test, Index self, bool outer_vars, bool negate)
{
	BoolTestType type = test->booltesttype;
	Var		   *column = column_of((Node *) test->arg, self, outer_vars);

	if (negate)
	{
		static const BoolTestType opposite[] = {
			[IS_TRUE] = IS_NOT_TRUE, [IS_NOT_TRUE] = IS_TRUE, [IS_FALSE] = IS_NOT_FALSE,
			[IS_NOT_FALSE] = IS_FALSE, [IS_UNKNOWN] = IS_NOT_UNKNOWN, [IS_NOT_UNKNOWN] = IS_UNKNOWN,
		};

		type = opposite[type];
	}
	if (column != NULL && column->vartype == BOOLOID)
	{
		switch (type)
		{
			case IS_TRUE:
				return boolean_predicate(column, true);
			case IS_FALSE:
				return boolean_predicate(column, false);
			case IS_NOT_TRUE:
				return new_or(boolean_predicate(column, false),
							  new_predicate(TL_ICE_EXPR_IS_NULL, column, InvalidOid, NULL));
			case IS_NOT_FALSE:
				return new_or(boolean_predicate(column, true),
							  new_predicate(TL_ICE_EXPR_IS_NULL, column, InvalidOid, NULL));
			case IS_UNKNOWN:
				return new_predicate(TL_ICE_EXPR_IS_NULL, column, InvalidOid, NULL);
			case IS_NOT_UNKNOWN:
				return new_predicate(TL_ICE_EXPR_NOT_NULL, column, InvalidOid, NULL);
		}
	}
	if (type == IS_TRUE || type == IS_FALSE)
		return match_clause(test->arg, self, outer_vars, type == IS_FALSE);
	return NULL;
}

/*
 * AND and OR of pushable conditions, every one of them pushable; negated,
 * by De Morgan (NOT (a AND b) is NOT a OR NOT b, exactly, in SQL's three
 * values too). NOT itself negates its argument.
 */
static PushedCondition *
match_bool_expr(BoolExpr *expr, Index self, bool outer_vars, bool negate)
{
	PushedCondition *c;
	ListCell   *lc;

	if (expr->boolop == NOT_EXPR)
		return list_length(expr->args) == 1 ? match_clause(linitial(expr->args), self, outer_vars, !negate) : NULL;
	c = palloc0(sizeof(PushedCondition));
	c->op = (expr->boolop == AND_EXPR) != negate ? TL_ICE_EXPR_AND : TL_ICE_EXPR_OR;
	foreach(lc, expr->args)
	{
		PushedCondition *arg = match_clause(lfirst(lc), self, outer_vars, negate);

		if (arg == NULL)
			return NULL;
		c->args = lappend(c->args, arg);
	}
	return c->args != NIL ? c : NULL;
}

/*
 * The pushable condition that holds exactly where clause is true, or
 * with negate where it is false (where NOT clause is true), or NULL.
 */
static PushedCondition *
match_clause(Expr *clause, Index self, bool outer_vars, bool negate)
{
	PushedCondition *c;

	check_stack_depth();
	switch (nodeTag(clause))
	{
		case T_OpExpr:
			if ((c = match_like((OpExpr *) clause, self, outer_vars, negate)) != NULL)
				return c;
			return match_comparison((OpExpr *) clause, self, outer_vars, negate);
		case T_ScalarArrayOpExpr:
			return match_in_list((ScalarArrayOpExpr *) clause, self, outer_vars, negate);
		case T_NullTest:
			return match_null_test((NullTest *) clause, self, outer_vars, negate);
		case T_BooleanTest:
			return match_boolean_test((BooleanTest *) clause, self, outer_vars, negate);
		case T_Var:
			return match_boolean_column((Var *) clause, self, outer_vars, negate);
		case T_BoolExpr:
			return match_bool_expr((BoolExpr *) clause, self, outer_vars, negate);
		default:
			return NULL;
	}
}

PushedCondition *
cold_condition_match(Expr *clause, Index self, bool outer_vars)
{
	return match_clause(clause, self, outer_vars, false);
}

/* ------------------------------------------------------------ evaluating */

/* The IN list of an array: its elements but the nulls, which equal nothing. FALSE when none is left. */
static void
set_in_list(EvaluatedCondition *e, Datum value)
{
	ArrayType  *array = DatumGetArrayTypePCopy(value);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elements;
	bool	   *nulls;
	int			n;

	e->typid = ARR_ELEMTYPE(array);
	get_typlenbyvalalign(e->typid, &typlen, &typbyval, &typalign);
	deconstruct_array(array, e->typid, typlen, typbyval, typalign, &elements, &nulls, &n);
	e->values = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			e->values[e->nvalues++] = elements[i];
	if (e->nvalues == 0)
		e->op = TL_ICE_EXPR_FALSE;
}

/*
 * The NOT IN list of an array: FALSE when it holds a null (x <> null is
 * never true, so neither is x <> ALL of it); no values, which no lake
 * condition takes, when it is empty (x <> ALL of nothing is true, even
 * for a null x).
 */
static void
set_not_in_list(EvaluatedCondition *e, Datum value)
{
	ArrayType  *array = DatumGetArrayTypeP(value);

	if (array_contains_nulls(array))
	{
		e->op = TL_ICE_EXPR_FALSE;
		return;
	}
	set_in_list(e, value);
	if (e->op == TL_ICE_EXPR_FALSE)
		e->op = TL_ICE_EXPR_NOT_IN; /* empty: nvalues 0 keeps it out of the lake */
}

/*
 * A LIKE pattern (in the backslash-escaped form LIKE's ESCAPE clause
 * rewrites any other escape to) as a lake condition where it is one: a
 * pattern without wildcards is equality with its unescaped text (LIKE
 * compares bytes, as equality under a deterministic collation does), one
 * whose wildcards are only '%' at its end a prefix. Other patterns ('_',
 * an inner '%', a trailing escape, which is an error when Postgres reaches
 * it) keep no values: the executor checks them. Negated (NOT LIKE): not
 * equal, and no such prefix. Patterns are scanned by bytes: in UTF-8 no
 * byte of a multibyte character is '\\', '%' or '_'.
 */
static void
set_like_pattern(EvaluatedCondition *e, Datum pattern)
{
	text	   *t = DatumGetTextPP(pattern);
	const char *p = VARDATA_ANY(t);
	int			len = VARSIZE_ANY_EXHDR(t);
	char	   *literal = palloc(len + 1);
	int			n = 0;
	bool		prefix = false;

	for (int i = 0; i < len && !prefix; i++)
	{
		if (p[i] == '\\')
		{
			if (++i == len)
				return;			/* a trailing escape */
			literal[n++] = p[i];
		}
		else if (p[i] == '_')
			return;
		else if (p[i] == '%')
		{
			for (int j = i; j < len; j++)
				if (p[j] != '%')
					return;
			prefix = true;		/* only '%' to the end */
		}
		else
			literal[n++] = p[i];
	}
	if (!prefix)
		e->op = e->op == TL_ICE_EXPR_STARTS_WITH ? TL_ICE_EXPR_EQ : TL_ICE_EXPR_NOT_EQ;
	e->nvalues = 1;
	e->values = palloc(sizeof(Datum));
	e->values[0] = PointerGetDatum(cstring_to_text_with_len(literal, n));
}

EvaluatedCondition *
cold_condition_of_value(tl_ice_expr_op op, AttrNumber attno, Oid typid, Datum value, bool isnull)
{
	EvaluatedCondition *e = palloc0(sizeof(EvaluatedCondition));

	e->op = op;
	e->attno = attno;
	e->typid = typid;
	e->qual_index = -1;
	if (op == TL_ICE_EXPR_IS_NULL || op == TL_ICE_EXPR_NOT_NULL)
		return e;
	if (isnull)
		e->op = TL_ICE_EXPR_FALSE; /* a comparison with null holds for no row, nor [NOT] IN or LIKE null */
	else if (op == TL_ICE_EXPR_IN)
		set_in_list(e, value);
	else if (op == TL_ICE_EXPR_NOT_IN)
		set_not_in_list(e, value);
	else if (op == TL_ICE_EXPR_STARTS_WITH || op == TL_ICE_EXPR_NOT_STARTS_WITH)
		set_like_pattern(e, value);
	else
	{
		e->nvalues = 1;
		e->values = palloc(sizeof(Datum));
		e->values[0] = datumCopy(value, get_typbyval(typid), get_typlen(typid));
	}
	return e;
}

/*
 * AND and OR of evaluated conditions, folded: an AND with a FALSE
 * argument is FALSE, an OR leaves its FALSE arguments out and is FALSE
 * without any other, and one argument left stands for the whole.
 */
static EvaluatedCondition *
evaluate_and_or(PushedCondition *c, PlanState *parent, ExprContext *econtext)
{
	EvaluatedCondition *e = palloc0(sizeof(EvaluatedCondition));
	ListCell   *lc;

	e->op = c->op;
	e->qual_index = -1;
	foreach(lc, c->args)
	{
		EvaluatedCondition *arg = cold_condition_evaluate(lfirst(lc), parent, econtext);

		if (arg->op != TL_ICE_EXPR_FALSE)
			e->args = lappend(e->args, arg);
		else if (c->op == TL_ICE_EXPR_AND)
		{
			e->args = NIL;
			break;
		}
	}
	if (e->args == NIL)
		e->op = TL_ICE_EXPR_FALSE;
	else if (list_length(e->args) == 1)
		return linitial(e->args);
	return e;
}

EvaluatedCondition *
cold_condition_evaluate(PushedCondition *c, PlanState *parent, ExprContext *econtext)
{
	bool		isnull = false;
	Datum		value = (Datum) 0;

	check_stack_depth();
	if (c->op == TL_ICE_EXPR_AND || c->op == TL_ICE_EXPR_OR)
		return evaluate_and_or(c, parent, econtext);
	if (c->value != NULL)
	{
		if (c->state == NULL)
			c->state = ExecInitExpr(c->value, parent);
		value = ExecEvalExprSwitchContext(c->state, econtext, &isnull);
	}
	return cold_condition_of_value(c->op, c->attno, c->typid, value, isnull);
}

void
cold_condition_attnos(const EvaluatedCondition *c, Bitmapset **attnos)
{
	ListCell   *lc;

	foreach(lc, c->args)
		cold_condition_attnos(lfirst(lc), attnos);
	if (c->attno > 0)
		*attnos = bms_add_member(*attnos, c->attno);
}

/* ------------------------------------------------------------ the lake's form */

static void
pg_attribute_noreturn()
out_of_memory(void)
{
	ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory building a lake filter")));
}

/*
 * A date as the lake's days since 1970, exactly; false for the values an
 * Iceberg date cannot hold ('infinity' and '-infinity', which the daemon
 * never writes): no lake value equals them, and the condition stays with
 * the executor, which compares them as Postgres does. (Finite dates fit:
 * the latest, 5874897-12-31, is 2^31 - 2,451,699 days after 2000-01-01.)
 */
static bool
lake_date_of(DateADT date, int32 *out)
{
	if (DATE_NOT_FINITE(date))
		return false;
	return !pg_add_s32_overflow(date, (int32) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE), out);
}

/*
 * A timestamp as the lake's microseconds since 1970, exactly; false for
 * the infinities and for the instants after 294247-01-10
 * 04:00:54.775807, which an Iceberg timestamp cannot hold (the epoch shift
 * would overflow): as for dates, the executor checks those conditions.
 */
static bool
lake_timestamp_of(Timestamp ts, int64 *out)
{
	if (TIMESTAMP_NOT_FINITE(ts))
		return false;
	return !pg_add_s64_overflow(ts, (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY, out);
}

/*
 * A numeric as the unscaled value of a decimal of `scale` digits after the
 * point, exactly; false when it has no such value: NaN and the infinities
 * (which no lake decimal holds: the daemon keeps such rows in the heap),
 * a nonzero digit beyond the scale (1.005 against numeric(12,2): pushing
 * a rounded value would compare wrongly), or more than 38 digits.  Read
 * from the numeric's text, which spells its exact value.
 */
static bool
lake_decimal_of(Numeric num, int scale, tl_int128 *out)
{
	const char *text;
	const char *p;
	tl_int128	unscaled = 0;
	int			digits = 0;
	int			fraction = -1;	/* digits read after the point, -1 before it */
	bool		negative;

	if (numeric_is_nan(num) || numeric_is_inf(num))
		return false;
	text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(num)));
	negative = text[0] == '-';
	for (p = text + negative; *p != '\0'; p++)
	{
		if (*p == '.')
		{
			fraction = 0;
			continue;
		}
		if (fraction >= 0 && fraction == scale)
		{
			if (*p != '0')
				return false;	/* not exactly a value at this scale */
			continue;
		}
		if (unscaled != 0 || *p != '0')
			digits++;
		if (digits > 38)
			return false;
		unscaled = unscaled * 10 + (*p - '0');
		if (fraction >= 0)
			fraction++;
	}
	for (int i = Max(fraction, 0); i < scale; i++)
	{
		if (unscaled != 0)
			digits++;
		if (digits > 38)
			return false;
		unscaled *= 10;
	}
	*out = negative ? -unscaled : unscaled;
	return true;
}

/*
 * A Datum of a column's Postgres type as a lake value of its field's
 * type, exactly; false where it has no such value, or the types are not
 * compared in the lake.
 */
static bool
lake_value_of(const tl_ice_field *field, Oid typid, Datum d, tl_arena *arena, tl_ice_value *out)
{
	memset(out, 0, sizeof(*out));
	switch (field->type.id)
	{
		case TL_ICE_INT:
		case TL_ICE_LONG:
			{
				int64		v;

				if (!is_integer_type(typid))
					return false;
				v = seam_key_canonical(SEAM_KEY_BIGINT, typid, d);
				if (field->type.id == TL_ICE_LONG)
					out->v.i64 = v;
				else if (v >= PG_INT32_MIN && v <= PG_INT32_MAX)
					out->v.i32 = (int32) v;
				else
					return false;	/* beyond the column's range: no pruning */
			}
			return true;
		case TL_ICE_DATE:
			if (typid != DATEOID)
				return false;
			return lake_date_of(DatumGetDateADT(d), &out->v.i32);
		case TL_ICE_TIMESTAMP:
		case TL_ICE_TIMESTAMPTZ:
			if (typid != TIMESTAMPOID && typid != TIMESTAMPTZOID)
				return false;
			if ((typid == TIMESTAMPTZOID) != (field->type.id == TL_ICE_TIMESTAMPTZ))
				return false;
			return lake_timestamp_of(DatumGetTimestamp(d), &out->v.i64);
		case TL_ICE_STRING:
			/* The lake's strings are UTF-8: bytes compare like text only in a UTF-8 database. */
			if ((typid != TEXTOID && typid != VARCHAROID) || GetDatabaseEncoding() != PG_UTF8)
				return false;
			{
				text	   *t = DatumGetTextPP(d);
				tl_bytes	copy = tl_arena_copy(arena, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));

				if (copy.ptr == NULL && VARSIZE_ANY_EXHDR(t) > 0)
					out_of_memory();
				out->ptr = copy.ptr;
				out->len = copy.len;
			}
			return true;
		case TL_ICE_BOOLEAN:
			if (typid != BOOLOID)
				return false;
			out->v.b = DatumGetBool(d);
			return true;
		case TL_ICE_FLOAT:
			/* A float8 column over a real field (ALTER ... TYPE double precision): only values a real holds. */
			if (typid == FLOAT4OID)
				out->v.f32 = DatumGetFloat4(d);
			else if (typid == FLOAT8OID && (isnan(DatumGetFloat8(d)) ||
											(double) (float) DatumGetFloat8(d) == DatumGetFloat8(d)))
				out->v.f32 = (float) DatumGetFloat8(d);
			else
				return false;
			return true;
		case TL_ICE_DOUBLE:
			if (typid != FLOAT8OID)
				return false;
			out->v.f64 = DatumGetFloat8(d);
			return true;
		case TL_ICE_DECIMAL:
			return typid == NUMERICOID && lake_decimal_of(DatumGetNumeric(d), field->type.scale, &out->v.dec);
		case TL_ICE_UUID:
			if (typid != UUIDOID)
				return false;
			out->ptr = tl_arena_copy(arena, DatumGetUUIDP(d)->data, UUID_LEN).ptr;
			if (out->ptr == NULL)
				out_of_memory();
			out->len = UUID_LEN;
			return true;
		case TL_ICE_BINARY:
			if (typid != BYTEAOID)
				return false;
			{
				bytea	   *b = DatumGetByteaPP(d);

				out->ptr = tl_arena_copy(arena, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b)).ptr;
				out->len = VARSIZE_ANY_EXHDR(b);
				if (out->ptr == NULL && out->len > 0)
					out_of_memory();
			}
			return true;
		case TL_ICE_TIME:
			if (typid != TIMEOID)
				return false;
			out->v.i64 = DatumGetTimeADT(d);
			return true;
		default:
			return false;
	}
}

/* A lake value as a row check holds it: only the member the field's type reads is set. */
static LakeRowValue
row_value_of(const tl_ice_field *field, const tl_ice_value *value)
{
	LakeRowValue v = {.bytes = value->ptr, .len = value->len};

	switch (field->type.id)
	{
		case TL_ICE_INT:
		case TL_ICE_DATE:
			v.integer = value->v.i32;
			break;
		case TL_ICE_LONG:
		case TL_ICE_TIME:
		case TL_ICE_TIMESTAMP:
		case TL_ICE_TIMESTAMPTZ:
			v.integer = value->v.i64;
			break;
		case TL_ICE_BOOLEAN:
			v.boolean = value->v.b;
			break;
		case TL_ICE_FLOAT:
			v.real = value->v.f32;
			break;
		case TL_ICE_DOUBLE:
			v.real = value->v.f64;
			break;
		default:
			break;
	}
	return v;
}

/* A predicate: pushed only when every value is one of the lake field's. */
static void
predicate_for_lake(const EvaluatedCondition *c, LakeScan *lake, tl_arena *arena, const tl_ice_expr **filter,
				   LakeRowCondition **check)
{
	const tl_ice_field *field = lake_scan_attr_field(lake, c->attno);
	tl_ice_value *values;
	LakeRowCondition *rc;

	if (field == NULL || !tl_ice_type_is_primitive(field->type.id))
		return;					/* no statistics to prune by, nor values to check */
	if (c->nvalues == 0 && c->op != TL_ICE_EXPR_IS_NULL && c->op != TL_ICE_EXPR_NOT_NULL)
		return;					/* a LIKE pattern or NOT IN list the lake cannot decide */
	values = tl_arena_alloc(arena, sizeof(tl_ice_value) * Max(c->nvalues, 1));
	if (values == NULL)
		out_of_memory();
	for (int i = 0; i < c->nvalues; i++)
		if (!lake_value_of(field, c->typid, c->values[i], arena, &values[i]))
			return;
	if ((*filter = tl_ice_expr_predicate(arena, c->op, field->id, values, c->nvalues)) == NULL)
		out_of_memory();
	rc = palloc0(sizeof(LakeRowCondition));
	rc->op = c->op;
	rc->attno = c->attno;
	rc->nvalues = c->nvalues;
	rc->values = palloc(sizeof(LakeRowValue) * Max(c->nvalues, 1));
	for (int i = 0; i < c->nvalues; i++)
		rc->values[i] = row_value_of(field, &values[i]);
	*check = rc;
}

static LakeRowCondition *
new_row_check(tl_ice_expr_op op, List *args)
{
	LakeRowCondition *rc = palloc0(sizeof(LakeRowCondition));

	rc->op = op;
	rc->args = args;
	return rc;
}

/*
 * AND and OR (inside an OR: the quals' own AND is the caller's list). The
 * filter combines the arguments' filters: an AND leaves out those without
 * one (it then holds for more rows, which only prunes less), an OR has
 * none unless every argument has one (one that cannot prune keeps every
 * file). The check is made only from every argument's.
 */
static void
and_or_for_lake(const EvaluatedCondition *c, LakeScan *lake, tl_arena *arena, const tl_ice_expr **filter,
				LakeRowCondition **check)
{
	bool		is_and = c->op == TL_ICE_EXPR_AND;
	List	   *checks = NIL;
	bool		exact = true;
	ListCell   *lc;

	foreach(lc, c->args)
	{
		const tl_ice_expr *f;
		LakeRowCondition *rc;

		cold_condition_for_lake(lfirst(lc), lake, arena, &f, &rc);
		if (f == NULL && !is_and)
		{
			*filter = NULL;
			return;
		}
		if (f != NULL && *filter == NULL)
			*filter = f;
		else if (f != NULL &&
				 (*filter = is_and ? tl_ice_expr_and(arena, *filter, f) : tl_ice_expr_or(arena, *filter, f)) == NULL)
			out_of_memory();
		exact &= rc != NULL;
		checks = lappend(checks, rc);
	}
	*check = exact ? new_row_check(c->op, checks) : NULL;
}

void
cold_condition_for_lake(const EvaluatedCondition *c, LakeScan *lake, tl_arena *arena, const tl_ice_expr **filter,
						LakeRowCondition **check)
{
	*filter = NULL;
	*check = NULL;
	check_stack_depth();
	switch (c->op)
	{
		case TL_ICE_EXPR_FALSE:
			if ((*filter = tl_ice_expr_const(arena, false)) == NULL)
				out_of_memory();
			*check = new_row_check(TL_ICE_EXPR_FALSE, NIL);
			break;
		case TL_ICE_EXPR_AND:
		case TL_ICE_EXPR_OR:
			and_or_for_lake(c, lake, arena, filter, check);
			break;
		default:
			predicate_for_lake(c, lake, arena, filter, check);
			break;
	}
}
