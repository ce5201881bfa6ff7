/*-------------------------------------------------------------------------
 *
 * agg_states.c
 *		The cold aggregate's per-group states: see agg_states.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/float.h"
#include "utils/fmgroids.h"

#include "agg_states.h"
#include "lake_values.h"

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
			return false;
	}
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
		default:
			*isnull = !st->has_value;
			return st->value;
	}
}
