/*-------------------------------------------------------------------------
 *
 * agg_states.c
 *		The cold aggregate's per-group states: see agg_states.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/execnodes.h"
#include "parser/parse_agg.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "agg_states.h"
#include "lake_values.h"

/*
 * Whether an aggregate's own functions may compute it here: built in (its
 * transition functions ask the AggState for nothing but its memory
 * context, AggCheckCallContext), of at most one argument that is not
 * polymorphic, and partial aggregation possible (a combine function, and
 * an internal state serialized), so that the Finalize Aggregate above
 * combines what the cold aggregate hands it.
 */
static bool
transition_computable(Oid aggfnoid)
{
	HeapTuple	tuple;
	Form_pg_aggregate agg;
	Oid		   *argtypes;
	int			nargs;
	bool		computable;

	if (aggfnoid >= FirstGenbkiObjectId)
		return false;
	get_func_signature(aggfnoid, &argtypes, &nargs);
	if (nargs > 1 || (nargs == 1 && IsPolymorphicType(argtypes[0])))
		return false;
	tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tuple))
		return false;
	agg = (Form_pg_aggregate) GETSTRUCT(tuple);
	computable = agg->aggkind == AGGKIND_NORMAL && OidIsValid(agg->aggcombinefn) &&
		(agg->aggtranstype != INTERNALOID || (OidIsValid(agg->aggserialfn) && OidIsValid(agg->aggdeserialfn)));
	ReleaseSysCache(tuple);
	return computable;
}

bool
cold_agg_kind(Oid aggfnoid, ColdAggKind *kind)
{
	switch (aggfnoid)
	{
		case F_COUNT_:
			*kind = COLD_COUNT_STAR;
			return true;
		case F_COUNT_ANY:
			*kind = COLD_COUNT;
			return true;
		case F_SUM_INT2:
		case F_SUM_INT4:
			*kind = COLD_SUM_INT;
			return true;
		case F_SUM_FLOAT4:
			*kind = COLD_SUM_FLOAT4;
			return true;
		case F_SUM_FLOAT8:
			*kind = COLD_SUM_FLOAT8;
			return true;
		case F_AVG_INT2:
		case F_AVG_INT4:
			*kind = COLD_AVG_INT;
			return true;
		case F_MIN_INT2:
		case F_MIN_INT4:
		case F_MIN_INT8:
		case F_MIN_FLOAT4:
		case F_MIN_FLOAT8:
		case F_MIN_DATE:
		case F_MIN_TIME:
		case F_MIN_TIMESTAMP:
		case F_MIN_TIMESTAMPTZ:
			*kind = COLD_MIN;
			return true;
		case F_MAX_INT2:
		case F_MAX_INT4:
		case F_MAX_INT8:
		case F_MAX_FLOAT4:
		case F_MAX_FLOAT8:
		case F_MAX_DATE:
		case F_MAX_TIME:
		case F_MAX_TIMESTAMP:
		case F_MAX_TIMESTAMPTZ:
			*kind = COLD_MAX;
			return true;
		default:
			*kind = COLD_TRANSITION;
			return transition_computable(aggfnoid);
	}
}

/*
 * The calls nodeAgg.c would make: the transition function with its
 * expression (for functions that look at their argument types) and the
 * aggregate's input collation, in the context of an AggState whose
 * aggregate memory context is where the groups' states live.
 */
void
agg_prepare_transition(ColdAggregate *a, Aggref *agg)
{
	TransitionCall *t = palloc0(sizeof(TransitionCall));
	HeapTuple	tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(agg->aggfnoid));
	Form_pg_aggregate form;
	AggState   *context = makeNode(AggState);
	FmgrInfo   *transfn = palloc0(sizeof(FmgrInfo));
	Expr	   *transfn_expr;
	Oid			argtype = a->attno > 0 ? a->type : InvalidOid;
	Datum		initval;
	bool		initval_null;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for aggregate %u", agg->aggfnoid);
	form = (Form_pg_aggregate) GETSTRUCT(tuple);
	context->curaggcontext = palloc0(sizeof(ExprContext));
	context->curaggcontext->type = T_ExprContext;

	build_aggregate_transfn_expr(&argtype, a->attno > 0 ? 1 : 0, 0, false, form->aggtranstype, agg->inputcollid,
								 form->aggtransfn, InvalidOid, &transfn_expr, NULL);
	fmgr_info(form->aggtransfn, transfn);
	fmgr_info_set_expr((Node *) transfn_expr, transfn);
	t->strict = transfn->fn_strict;
	t->fcinfo = palloc0(SizeForFunctionCallInfo(2));
	InitFunctionCallInfoData(*t->fcinfo, transfn, a->attno > 0 ? 2 : 1, agg->inputcollid, (Node *) context, NULL);

	if (OidIsValid(form->aggserialfn) && form->aggtranstype == INTERNALOID)
	{
		Expr	   *serialfn_expr;

		build_aggregate_serialfn_expr(form->aggserialfn, &serialfn_expr);
		fmgr_info(form->aggserialfn, &t->serialfn);
		fmgr_info_set_expr((Node *) serialfn_expr, &t->serialfn);
	}
	get_typlenbyval(form->aggtranstype, &t->translen, &t->transbyval);
	initval = SysCacheGetAttr(AGGFNOID, tuple, Anum_pg_aggregate_agginitval, &initval_null);
	if (!initval_null)
	{
		Oid			input,
					ioparam;

		getTypeInputInfo(form->aggtranstype, &input, &ioparam);
		t->initval = OidInputFunctionCall(input, TextDatumGetCString(initval), ioparam, -1);
		t->has_initval = true;
	}
	ReleaseSysCache(tuple);
	a->call = t;
}

void
agg_states_context(ColdAggregate *a, MemoryContext states)
{
	if (a->call == NULL)
		return;
	a->call->states = states;
	((AggState *) a->call->fcinfo->context)->curaggcontext->ecxt_per_tuple_memory = states;
}

/* A group's transition state before its first value: the initial state, or none. */
static void
start_transition(const TransitionCall *t, PartialState *st)
{
	st->has_value = true;
	if (t->has_initval)
	{
		MemoryContext old = MemoryContextSwitchTo(t->states);

		st->value = datumCopy(t->initval, t->transbyval, t->translen);
		MemoryContextSwitchTo(old);
		st->state_null = false;
	}
	else
	{
		st->state_null = true;
		st->awaiting_first = t->strict;
	}
}

/*
 * One transition, as nodeAgg.c's advance_transition_function makes it: a
 * strict function skips nulls and takes the first value as the state; a
 * new state of a by-reference type is copied into the states' context and
 * the old one freed (an internal state lives there already).
 */
static void
advance_transition(const TransitionCall *t, PartialState *st, Datum v, bool isnull)
{
	FunctionCallInfo fcinfo = t->fcinfo;
	Datum		state;

	if (!st->has_value)
		start_transition(t, st);
	if (t->strict)
	{
		if (isnull && fcinfo->nargs > 1)
			return;
		if (st->awaiting_first)
		{
			MemoryContext old = MemoryContextSwitchTo(t->states);

			st->value = datumCopy(v, t->transbyval, t->translen);
			MemoryContextSwitchTo(old);
			st->state_null = st->awaiting_first = false;
			return;
		}
		if (st->state_null)
			return;
	}
	fcinfo->args[0].value = st->value;
	fcinfo->args[0].isnull = st->state_null;
	fcinfo->args[1].value = v;
	fcinfo->args[1].isnull = isnull;
	fcinfo->isnull = false;
	state = FunctionCallInvoke(fcinfo);
	if (!t->transbyval && DatumGetPointer(state) != DatumGetPointer(st->value))
	{
		if (!fcinfo->isnull)
		{
			MemoryContext old = MemoryContextSwitchTo(t->states);

			state = datumCopy(state, t->transbyval, t->translen);
			MemoryContextSwitchTo(old);
		}
		if (!st->state_null)
			pfree(DatumGetPointer(st->value));
	}
	st->value = state;
	st->state_null = fcinfo->isnull;
}

/* Postgres' order of a by-value type's values: the comparison min() and max() make. */
static inline int
compare_values(Oid type, Datum a, Datum b)
{
	switch (type)
	{
		case FLOAT4OID:
			return float4_cmp_internal(DatumGetFloat4(a), DatumGetFloat4(b));
		case FLOAT8OID:
			return float8_cmp_internal(DatumGetFloat8(a), DatumGetFloat8(b));
		case INT2OID:
			return (DatumGetInt16(a) > DatumGetInt16(b)) - (DatumGetInt16(a) < DatumGetInt16(b));
		case INT4OID:
		case DATEOID:
			return (DatumGetInt32(a) > DatumGetInt32(b)) - (DatumGetInt32(a) < DatumGetInt32(b));
		default:				/* int8, time, timestamp, timestamptz */
			return (DatumGetInt64(a) > DatumGetInt64(b)) - (DatumGetInt64(a) < DatumGetInt64(b));
	}
}

static inline int64
integer_value(Oid type, Datum d)
{
	return type == INT2OID ? DatumGetInt16(d) : DatumGetInt32(d);
}

/*
 * As the transition functions would: count(*) int8inc, count(x)
 * int8inc_any, sum int2_sum/int4_sum, float4pl/float8pl (overflow raised
 * as they raise it), avg int2/int4_avg_accum, min/max the type's
 * smaller/larger, which keep the later of two equal values (-0 and +0).
 */
static inline void
advance(const ColdAggregate *a, PartialState *st, Datum v, bool isnull)
{
	if (a->kind == COLD_COUNT_STAR)
	{
		st->count++;
		return;
	}
	if (a->kind == COLD_TRANSITION)
	{
		advance_transition(a->call, st, v, isnull);
		return;
	}
	if (isnull)
		return;					/* every other aggregate here is strict */
	switch (a->kind)
	{
		case COLD_COUNT:
			st->count++;
			break;
		case COLD_SUM_INT:
			st->sum += integer_value(a->type, v);
			st->has_value = true;
			break;
		case COLD_AVG_INT:
			st->count++;
			st->sum += integer_value(a->type, v);
			break;
		case COLD_SUM_FLOAT4:
			st->value = st->has_value ? Float4GetDatum(float4_pl(DatumGetFloat4(st->value), DatumGetFloat4(v))) : v;
			st->has_value = true;
			break;
		case COLD_SUM_FLOAT8:
			st->value = st->has_value ? Float8GetDatum(float8_pl(DatumGetFloat8(st->value), DatumGetFloat8(v))) : v;
			st->has_value = true;
			break;
		case COLD_MIN:
			if (!st->has_value || compare_values(a->type, st->value, v) >= 0)
				st->value = v;
			st->has_value = true;
			break;
		case COLD_MAX:
			if (!st->has_value || compare_values(a->type, st->value, v) <= 0)
				st->value = v;
			st->has_value = true;
			break;
		case COLD_COUNT_STAR:
		case COLD_COUNT_NONE:
		case COLD_TRANSITION:
			break;
	}
}

void
agg_advance_value(const ColdAggregate *a, PartialState *st, Datum value, bool isnull)
{
	if (a->kind != COLD_COUNT_NONE)
		advance(a, st, value, isnull);
}

/*
 * Whether a vector's values are the Datums of the column as stored, with
 * no conversion that could fail or change them: those are read straight
 * from the vector.
 */
static bool
reads_directly(const LakeValueConverter *conv)
{
	switch (conv->kind)
	{
		case LAKE_VALUE_INT4:
			return conv->physical == TL_PQ_INT32;
		case LAKE_VALUE_INT8:
			return conv->physical == TL_PQ_INT64;
		case LAKE_VALUE_FLOAT4:
			return conv->physical == TL_PQ_FLOAT;
		case LAKE_VALUE_FLOAT8:
			return conv->physical == TL_PQ_DOUBLE;
		default:
			return false;
	}
}

/*
 * The loop of agg_advance_batch over a vector reads_directly accepts:
 * UPDATE runs for each non-null value v of the batch's rows, with st its
 * group's state.
 */
#define DIRECT_LOOP(GET, UPDATE) \
	for (int64 i = 0; i < batch->nrows; i++) \
	{ \
		int32		row = batch->rows[i]; \
		\
		if (vec->valid == NULL || vec->valid[row] != 0) \
		{ \
			PartialState *st = groups != NULL ? &groups[i][which] : &single[which]; \
			Datum		v = GET(vec->v, row); \
			\
			UPDATE; \
		} \
	}
#define GET_INT4(v, row) Int32GetDatum((v).i32[row])
#define GET_INT8(v, row) Int64GetDatum((v).i64[row])
#define GET_FLOAT4(v, row) Float4GetDatum((v).f32[row])
#define GET_FLOAT8(v, row) Float8GetDatum((v).f64[row])

/*
 * The direct loops, the common aggregates' updates written out so that
 * each is a tight loop of its own (count and sum of integers, sum of
 * doubles); the others go through advance().
 */
#define DIRECT(GET) \
	switch (a->kind) \
	{ \
		case COLD_COUNT: \
			DIRECT_LOOP(GET, (void) v; st->count++); \
			break; \
		case COLD_SUM_INT: \
			DIRECT_LOOP(GET, st->sum += DatumGetInt32(v); st->has_value = true); \
			break; \
		case COLD_AVG_INT: \
			DIRECT_LOOP(GET, st->sum += DatumGetInt32(v); st->count++); \
			break; \
		case COLD_SUM_FLOAT8: \
			DIRECT_LOOP(GET, st->value = st->has_value ? Float8GetDatum(float8_pl(DatumGetFloat8(st->value), \
																				DatumGetFloat8(v))) : v; \
						st->has_value = true); \
			break; \
		default: \
			DIRECT_LOOP(GET, advance(a, st, v, false)); \
			break; \
	}

void
agg_advance_batch(const ColdAggregate *a, int which, LakeScan *lake, const LakeBatch *batch,
				  PartialState **groups, PartialState *single)
{
	const tl_vector *vec;
	const LakeValueConverter *conv;

	if (a->kind == COLD_COUNT_NONE)
		return;
	if (a->kind == COLD_COUNT_STAR)
	{
		if (groups == NULL)
			single[which].count += batch->nrows;
		else
			for (int64 i = 0; i < batch->nrows; i++)
				groups[i][which].count++;
		return;
	}
	vec = lake_scan_batch_vector(lake, a->attno, &conv);
	if (vec != NULL && reads_directly(conv))
	{
		/* (sum and avg of integers read int4 columns only here: int2's values are range-checked) */
		switch (conv->kind)
		{
			case LAKE_VALUE_INT4:
				DIRECT(GET_INT4);
				return;
			case LAKE_VALUE_INT8:
				DIRECT(GET_INT8);
				return;
			case LAKE_VALUE_FLOAT4:
				DIRECT(GET_FLOAT4);
				return;
			default:
				DIRECT(GET_FLOAT8);
				return;
		}
	}
	for (int64 i = 0; i < batch->nrows; i++)
	{
		bool		isnull;
		Datum		value = lake_scan_batch_value(lake, a->attno, batch->rows[i], &isnull);

		advance(a, groups != NULL ? &groups[i][which] : &single[which], value, isnull);
	}
}

/*
 * The state as a Partial Aggregate outputs it (nodeAgg.c's
 * finalize_partialaggregate): an internal one serialized, NULL staying
 * NULL; a group with no value yet (the one group of no rows) has its
 * initial state.
 */
static Datum
transition_partial_state(const TransitionCall *t, const PartialState *st, bool *isnull)
{
	PartialState start = {0};

	if (!st->has_value)
	{
		start_transition(t, &start);
		st = &start;
	}
	*isnull = st->state_null;
	if (st->state_null || !OidIsValid(t->serialfn.fn_oid))
		return st->value;
	{
		LOCAL_FCINFO(fcinfo, 1);
		Datum		serialized;

		InitFunctionCallInfoData(*fcinfo, (FmgrInfo *) &t->serialfn, 1, InvalidOid, t->fcinfo->context, NULL);
		fcinfo->args[0].value = st->value;
		fcinfo->args[0].isnull = false;
		serialized = FunctionCallInvoke(fcinfo);
		*isnull = fcinfo->isnull;
		return serialized;
	}
}

Datum
agg_partial_state(const ColdAggregate *a, const PartialState *st, bool *isnull)
{
	*isnull = false;
	switch (a->kind)
	{
		case COLD_COUNT_STAR:
		case COLD_COUNT:
		case COLD_COUNT_NONE:
			return Int64GetDatum(st->count);
		case COLD_SUM_INT:
			*isnull = !st->has_value;
			return Int64GetDatum(st->sum);
		case COLD_AVG_INT:
			{
				Datum		pair[2] = {Int64GetDatum(st->count), Int64GetDatum(st->sum)};

				return PointerGetDatum(construct_array(pair, 2, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
			}
		case COLD_TRANSITION:
			return transition_partial_state(a->call, st, isnull);
		default:
			*isnull = !st->has_value;
			return st->value;
	}
}
