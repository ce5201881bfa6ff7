/*
 * expr_eval.c: the inclusive evaluators of iceberg_expr.h, which decide
 * from statistics alone whether a partition, a manifest or a data file may
 * hold rows matching a filter, so scan planning can skip the rest.
 *
 * All three reduce what they know about one column (or partition field) to
 * a value_range: may it hold nulls, NaNs, ordinary values, and bounds on
 * the ordinary ones. A predicate may match the range unless the range
 * proves otherwise; AND and OR combine the answers.
 *
 * Predicates reach partitions through projection, as Java Iceberg's
 * Projections.inclusive does: a predicate on a source column becomes a
 * predicate on each partition field over it that holds for every partition
 * value some matching row could have (x < v gives day(x) <= day(v)).
 *
 * Floats. Engines disagree on NaN and on the sign of zero: Java's row
 * evaluator orders values like Double.compare (NaN above everything,
 * -0 < +0), Python, SQL and Postgres compare IEEE numbers (NaN matches no
 * comparison, -0 = +0). A pruned file must not hold a row that either
 * would match. The evaluators use Java's order, which lets NaN match more
 * than IEEE does, and widen a zero bound to cover both zeros, which covers
 * IEEE's -0 = +0 (and writers that disagree on which zero they record).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tierlake/calendar.h"
#include "tierlake/iceberg_expr.h"

#define MICROS_PER_HOUR 3600000000LL

/* What statistics say about the values of one column or partition field. */
typedef struct value_range {
	bool may_null;
	bool may_nan;
	bool may_ordinary;    /* some value may be neither null nor NaN */
	bool has_lower, has_upper;
	tl_ice_value lower;   /* <= every ordinary value */
	tl_ice_value upper;   /* >= every ordinary value */
} value_range;

static bool is_float_type(const tl_ice_type *type)
{
	return type->id == TL_ICE_FLOAT || type->id == TL_ICE_DOUBLE;
}

static bool is_nan_value(const tl_ice_type *type, const tl_ice_value *v)
{
	if (type->id == TL_ICE_FLOAT)
		return isnan(v->v.f32);
	if (type->id == TL_ICE_DOUBLE)
		return isnan(v->v.f64);
	return false;
}

static bool is_zero_value(const tl_ice_type *type, const tl_ice_value *v)
{
	if (type->id == TL_ICE_FLOAT)
		return v->v.f32 == 0;
	if (type->id == TL_ICE_DOUBLE)
		return v->v.f64 == 0;
	return false;
}

static void set_zero(const tl_ice_type *type, tl_ice_value *v, bool negative)
{
	if (type->id == TL_ICE_FLOAT)
		v->v.f32 = negative ? -0.0f : 0.0f;
	else
		v->v.f64 = negative ? -0.0 : 0.0;
}

/*
 * Installs a bound. A NaN bound is unreliable (the spec keeps NaN out of
 * bounds) and is dropped; a zero bound is widened to cover both zeros,
 * since writers disagree on which zero a column of zeros has.
 */
static void set_bound(const tl_ice_type *type, const tl_ice_value *v, bool lower, value_range *r)
{
	if (v->is_null || is_nan_value(type, v))
		return;
	tl_ice_value b = *v;
	if (is_zero_value(type, &b))
		set_zero(type, &b, lower);
	if (lower) {
		r->lower = b;
		r->has_lower = true;
	} else {
		r->upper = b;
		r->has_upper = true;
	}
}

/* Whether a NaN satisfies `NaN op values` in Java's order. */
static bool nan_matches(const tl_ice_type *type, tl_ice_expr_op op, const tl_ice_value *values, int n)
{
	switch (op) {
	case TL_ICE_EXPR_GE:
		return true;
	case TL_ICE_EXPR_GT:
		return !is_nan_value(type, &values[0]);
	case TL_ICE_EXPR_EQ:
	case TL_ICE_EXPR_LE:
		return is_nan_value(type, &values[0]);
	case TL_ICE_EXPR_IN:
		for (int i = 0; i < n; i++)
			if (is_nan_value(type, &values[i]))
				return true;
		return false;
	default:
		return false;
	}
}

/* Whether a value within [lower, upper] may equal lit. */
static bool within_bounds(const tl_ice_type *type, const value_range *r, const tl_ice_value *lit)
{
	if (r->has_lower && tl_ice_value_compare(type, &r->lower, lit) > 0)
		return false;
	if (r->has_upper && tl_ice_value_compare(type, &r->upper, lit) < 0)
		return false;
	return true;
}

/* Whether an ordinary value of the range may satisfy `x op values`. */
static bool ordinary_matches(const tl_ice_type *type, tl_ice_expr_op op, const tl_ice_value *values, int n,
                             const value_range *r)
{
	if (!r->may_ordinary || n < 1)
		return false;
	if (op == TL_ICE_EXPR_IN) {
		for (int i = 0; i < n; i++)
			if (within_bounds(type, r, &values[i]))
				return true;
		return false;
	}
	const tl_ice_value *lit = &values[0];
	switch (op) {
	case TL_ICE_EXPR_EQ:
		return within_bounds(type, r, lit);
	case TL_ICE_EXPR_LT:
		return !r->has_lower || tl_ice_value_compare(type, &r->lower, lit) < 0;
	case TL_ICE_EXPR_LE:
		return !r->has_lower || tl_ice_value_compare(type, &r->lower, lit) <= 0;
	case TL_ICE_EXPR_GT:
		return !r->has_upper || tl_ice_value_compare(type, &r->upper, lit) > 0;
	case TL_ICE_EXPR_GE:
		return !r->has_upper || tl_ice_value_compare(type, &r->upper, lit) >= 0;
	default:
		return true;
	}
}

/* Whether the bounds prove every ordinary value equal to lit (both are lit; never so for a zero, widened). */
static bool only_value(const tl_ice_type *type, const value_range *r, const tl_ice_value *lit)
{
	return r->has_lower && r->has_upper && tl_ice_value_compare(type, &r->lower, lit) == 0 &&
	       tl_ice_value_compare(type, &r->upper, lit) == 0;
}

/* Whether the ordinary values of the range may differ from each of the n values (x <> v, x NOT IN). */
static bool ordinary_may_differ(const tl_ice_type *type, const value_range *r, const tl_ice_value *values, int n)
{
	if (!r->may_ordinary)
		return false;
	for (int i = 0; i < n; i++)
		if (only_value(type, r, &values[i]))
			return false;
	return true;
}

/* The first `n` bytes of bound b (all of it when shorter) against prefix p, bytewise: negative, 0, positive. */
static int compare_truncated(const tl_ice_value *b, const tl_ice_value *p)
{
	size_t n = b->len < p->len ? b->len : p->len;
	int c = n ? memcmp(b->ptr, p->ptr, n) : 0;
	if (c != 0)
		return c < 0 ? -1 : 1;
	return b->len < p->len ? -1 : 0;
}

/*
 * Whether a string of the range may start with p. A string starting with
 * p has its first len(p) bytes equal to p, so the lower bound's first
 * len(p) bytes are at most p and the upper bound's at least p (Java's
 * InclusiveMetricsEvaluator.startsWith; truncated bounds are still bounds).
 */
static bool may_start_with(const value_range *r, const tl_ice_value *p)
{
	if (!r->may_ordinary)
		return false;
	if (r->has_lower && compare_truncated(&r->lower, p) > 0)
		return false;
	if (r->has_upper && compare_truncated(&r->upper, p) < 0)
		return false;
	return true;
}

/*
 * Whether a string of the range may not start with p: the strings that
 * start with p are all those from p up to (not including) the next string
 * without that prefix, so two bounds both starting with p hold only such
 * strings. Nulls do not matter: they satisfy no NOT STARTS WITH.
 */
static bool may_not_start_with(const value_range *r, const tl_ice_value *p)
{
	if (!r->may_ordinary)
		return false;
	return !(r->has_lower && r->has_upper && compare_truncated(&r->lower, p) == 0 &&
	         compare_truncated(&r->upper, p) == 0);
}

/* Whether some value of the range may satisfy the predicate `x op values`. */
static bool range_may_match(const tl_ice_type *type, tl_ice_expr_op op, const tl_ice_value *values, int n,
                            const value_range *r)
{
	switch (op) {
	case TL_ICE_EXPR_IS_NULL:
		return r->may_null;
	case TL_ICE_EXPR_NOT_NULL:
		return r->may_ordinary || r->may_nan;
	case TL_ICE_EXPR_EQ:
	case TL_ICE_EXPR_LT:
	case TL_ICE_EXPR_LE:
	case TL_ICE_EXPR_GT:
	case TL_ICE_EXPR_GE:
	case TL_ICE_EXPR_IN:
		if (n < 1 || values == NULL)
			return true;  /* malformed predicate: nothing to prove with */
		return ordinary_matches(type, op, values, n, r) ||
		       (r->may_nan && nan_matches(type, op, values, n));
	case TL_ICE_EXPR_NOT_EQ:
	case TL_ICE_EXPR_NOT_IN:
		if (n < 1 || values == NULL)
			return true;
		/* A NaN differs from every other value (and from itself, in IEEE's eyes): it may match. */
		return r->may_nan || ordinary_may_differ(type, r, values, op == TL_ICE_EXPR_NOT_EQ ? 1 : n);
	case TL_ICE_EXPR_STARTS_WITH:
	case TL_ICE_EXPR_NOT_STARTS_WITH:
		if (n < 1 || values == NULL || type->id != TL_ICE_STRING)
			return true;
		return op == TL_ICE_EXPR_STARTS_WITH ? may_start_with(r, &values[0]) : may_not_start_with(r, &values[0]);
	default:
		return true;
	}
}

/* ---- projection through partition transforms ---- */

/*
 * A predicate on a partition field that every partition value of a
 * matching row satisfies: `p op values`, or else p = extra.
 */
typedef struct projection {
	tl_ice_type type;        /* the partition field's type */
	tl_ice_expr_op op;
	int nvalues;
	tl_ice_value *values;    /* malloc'd */
	bool has_extra;
	tl_ice_value extra;
} projection;

static bool is_temporal(tl_ice_transform_kind k)
{
	return k == TL_ICE_YEAR || k == TL_ICE_MONTH || k == TL_ICE_DAY || k == TL_ICE_HOUR;
}

/* The transform maps v above v: Java's int/long truncate wrapped around below the minimum. */
static bool truncate_wrapped(const tl_ice_type *source, const tl_ice_value *v, const tl_ice_value *t)
{
	if (source->id == TL_ICE_INT)
		return t->v.i32 > v->v.i32;
	if (source->id == TL_ICE_LONG)
		return t->v.i64 > v->v.i64;
	return false;
}

/*
 * Int and long truncation wraps (as Java's does) for the lowest values,
 * which all land in one partition far above the others. Its value, or
 * false when the type's minimum truncates without wrapping.
 */
static bool wrapped_partition(const tl_ice_transform *t, const tl_ice_type *source, tl_ice_value *out)
{
	if (source->id != TL_ICE_INT && source->id != TL_ICE_LONG)
		return false;
	tl_ice_value min = {0};
	if (source->id == TL_ICE_INT)
		min.v.i32 = INT32_MIN;
	else
		min.v.i64 = INT64_MIN;
	if (tl_ice_transform_apply(t, source, &min, out, NULL) < 0)
		return false;
	return truncate_wrapped(source, &min, out);
}

/* The hour of a timestamp overflows the int Java keeps it in beyond year ~245,000. */
static bool hour_fits(const tl_ice_value *v)
{
	int64_t h = tl_floor_div(v->v.i64, MICROS_PER_HOUR, NULL);
	return h >= INT32_MIN && h <= INT32_MAX;
}

/*
 * For integer-like sources a strict comparison is the inclusive one with
 * the neighbouring value (x < 20 is x <= 19), which projects tighter:
 * truncate[10] maps 19 to 10 but 20 to 20. Steps v by one toward the
 * matching side; false at the type's end (then v itself serves).
 */
static bool step_value(const tl_ice_type *source, tl_ice_value *v, int step)
{
	switch (source->id) {
	case TL_ICE_INT:
	case TL_ICE_DATE:
		if ((step < 0 && v->v.i32 == INT32_MIN) || (step > 0 && v->v.i32 == INT32_MAX))
			return false;
		v->v.i32 += step;
		return true;
	case TL_ICE_LONG:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		if ((step < 0 && v->v.i64 == INT64_MIN) || (step > 0 && v->v.i64 == INT64_MAX))
			return false;
		v->v.i64 += step;
		return true;
	case TL_ICE_DECIMAL:
		/* unscaled values stay far inside 128 bits (38 digits) */
		v->v.dec += step;
		return true;
	default:
		return false;
	}
}

/*
 * Projects comparisons and IN through an order-preserving transform
 * (truncate, year, month, day, hour). Returns false when it cannot.
 */
static bool project_monotonic(const tl_ice_partition_field *pf, const tl_ice_type *source,
                              const tl_ice_expr *pred, projection *out)
{
	tl_ice_transform_kind kind = pf->transform.kind;
	/* Java wrote pre-1970 time partitions one too high for years; allow for files it wrote. */
	bool fix_negative = is_temporal(kind);
	out->values = tl_malloc((size_t)pred->nvalues * 2 * sizeof(tl_ice_value));
	if (out->values == NULL)
		return false; /* out of memory: no projection, so nothing is pruned */
	out->nvalues = 0;
	for (int i = 0; i < pred->nvalues; i++) {
		tl_ice_value stepped = pred->values[i];
		if (pred->op == TL_ICE_EXPR_LT || pred->op == TL_ICE_EXPR_GT)
			step_value(source, &stepped, pred->op == TL_ICE_EXPR_LT ? -1 : 1);
		const tl_ice_value *v = &stepped;
		tl_ice_value t;
		if (kind == TL_ICE_HOUR && !hour_fits(v))
			return false;
		if (tl_ice_transform_apply(&pf->transform, source, v, &t, NULL) < 0 || t.is_null)
			return false;
		bool wrapped = kind == TL_ICE_TRUNCATE && truncate_wrapped(source, v, &t);
		if (wrapped && (pred->op == TL_ICE_EXPR_GT || pred->op == TL_ICE_EXPR_GE))
			return false;
		out->values[out->nvalues++] = t;
		if (fix_negative && t.v.i32 < 0 && pred->op != TL_ICE_EXPR_GT && pred->op != TL_ICE_EXPR_GE) {
			if (pred->op == TL_ICE_EXPR_LT || pred->op == TL_ICE_EXPR_LE) {
				out->values[out->nvalues - 1].v.i32 = t.v.i32 + 1;
			} else {
				t.v.i32 += 1;
				out->values[out->nvalues++] = t;
			}
		}
	}
	switch (pred->op) {
	case TL_ICE_EXPR_LT:
	case TL_ICE_EXPR_LE:
		out->op = TL_ICE_EXPR_LE;
		if (kind == TL_ICE_TRUNCATE)
			out->has_extra = wrapped_partition(&pf->transform, source, &out->extra);
		break;
	case TL_ICE_EXPR_GT:
	case TL_ICE_EXPR_GE:
		out->op = TL_ICE_EXPR_GE;
		break;
	default:
		/* EQ with a negative time partition gained a second value */
		out->op = out->nvalues > 1 ? TL_ICE_EXPR_IN : pred->op;
		break;
	}
	return true;
}

/*
 * Projects a prefix test through a string truncate (Java's
 * ProjectionUtil.truncateString): when p is no longer than the width,
 * truncate(x) starts with p exactly when x does, so the test carries
 * over; when p is longer, every x starting with p truncates to
 * truncate(p), and NOT STARTS WITH has no projection.
 */
static bool project_prefix(const tl_ice_partition_field *pf, const tl_ice_type *source, const tl_ice_expr *pred,
                           projection *out)
{
	tl_ice_value t;
	if (tl_ice_transform_apply(&pf->transform, source, &pred->values[0], &t, NULL) < 0 || t.is_null)
		return false;
	if (t.len != pred->values[0].len) {
		if (pred->op != TL_ICE_EXPR_STARTS_WITH)
			return false;
		out->op = TL_ICE_EXPR_EQ;
	}
	out->values = tl_malloc(sizeof(tl_ice_value));
	if (out->values == NULL)
		return false; /* out of memory: no projection, so nothing is pruned */
	out->values[0] = t;
	out->nvalues = 1;
	return true;
}

/* Projects pred (on pf's source column) onto pf. False: no projection, keep everything. */
static bool project(const tl_ice_partition_field *pf, const tl_ice_type *source, const tl_ice_expr *pred,
                    projection *out)
{
	memset(out, 0, sizeof(*out));
	tl_ice_transform_kind kind = pf->transform.kind;
	if (kind == TL_ICE_VOID || tl_ice_transform_result_type(&pf->transform, source, &out->type, NULL) < 0)
		return false;
	out->op = pred->op;
	if (pred->op == TL_ICE_EXPR_IS_NULL || pred->op == TL_ICE_EXPR_NOT_NULL)
		return true;  /* every transform but void maps null, and only null, to null */
	if (pred->nvalues < 1 || pred->values == NULL)
		return false;
	if (kind == TL_ICE_IDENTITY) {
		out->values = tl_malloc((size_t)pred->nvalues * sizeof(tl_ice_value));
		if (out->values == NULL)
			return false; /* out of memory: no projection, so nothing is pruned */
		memcpy(out->values, pred->values, (size_t)pred->nvalues * sizeof(tl_ice_value));
		out->nvalues = pred->nvalues;
		return true;
	}
	/* x <> v says nothing of a many-to-one transform's value; prefixes project through a string truncate. */
	if (pred->op == TL_ICE_EXPR_NOT_EQ || pred->op == TL_ICE_EXPR_NOT_IN)
		return false;
	if (pred->op == TL_ICE_EXPR_STARTS_WITH || pred->op == TL_ICE_EXPR_NOT_STARTS_WITH)
		return kind == TL_ICE_TRUNCATE && source->id == TL_ICE_STRING && project_prefix(pf, source, pred, out);
	if (kind == TL_ICE_BUCKET) {
		/* buckets do not keep order: only equality projects */
		if (pred->op != TL_ICE_EXPR_EQ && pred->op != TL_ICE_EXPR_IN)
			return false;
		out->values = tl_malloc((size_t)pred->nvalues * sizeof(tl_ice_value));
		if (out->values == NULL)
			return false; /* out of memory: no projection, so nothing is pruned */
		for (int i = 0; i < pred->nvalues; i++)
			if (tl_ice_transform_apply(&pf->transform, source, &pred->values[i], &out->values[i], NULL) < 0)
				return false;
		out->nvalues = pred->nvalues;
		return true;
	}
	return project_monotonic(pf, source, pred, out);
}

static bool projection_may_match(const projection *pr, const value_range *r)
{
	if (range_may_match(&pr->type, pr->op, pr->values, pr->nvalues, r))
		return true;
	return pr->has_extra && range_may_match(&pr->type, TL_ICE_EXPR_EQ, &pr->extra, 1, r);
}

/* ---- the three kinds of statistics ---- */

typedef enum stats_kind { STATS_PARTITION, STATS_SUMMARIES, STATS_METRICS } stats_kind;

typedef struct eval_ctx {
	stats_kind kind;
	const tl_ice_schema *schema;
	const tl_ice_partition_spec *spec;
	const tl_ice_value *partition;
	const tl_ice_field_summary *summaries;
	uint32_t nsummaries;
	const tl_ice_data_file *file;
} eval_ctx;

/* The range of one partition value: exactly that value. */
static void partition_range(const tl_ice_type *type, const tl_ice_value *p, value_range *r)
{
	memset(r, 0, sizeof(*r));
	if (p->is_null) {
		r->may_null = true;
	} else if (is_nan_value(type, p)) {
		r->may_nan = true;
	} else {
		r->may_ordinary = true;
		set_bound(type, p, true, r);
		set_bound(type, p, false, r);
	}
}

/* A bound in single-value binary form; one that does not decode is no bound. */
static void decode_bound(const tl_ice_type *type, const uint8_t *data, size_t len, bool lower, value_range *r)
{
	tl_ice_value v;
	if (tl_ice_value_deserialize(type, data, len, &v, NULL) == 0)
		set_bound(type, &v, lower, r);
}

/*
 * A manifest's summary of a partition field. Writers leave the bounds out
 * exactly when every value is null or NaN; bounds missing without such a
 * value proven are taken as unknown.
 */
static void summary_range(const tl_ice_type *type, const tl_ice_field_summary *s, value_range *r)
{
	memset(r, 0, sizeof(*r));
	r->may_null = s->contains_null;
	r->may_nan = is_float_type(type) && (!s->has_contains_nan || s->contains_nan);
	bool explained = s->contains_null || (s->has_contains_nan && s->contains_nan);
	r->may_ordinary = s->has_lower_bound || s->has_upper_bound || !explained;
	if (s->has_lower_bound)
		decode_bound(type, s->lower_bound.ptr, s->lower_bound.len, true, r);
	if (s->has_upper_bound)
		decode_bound(type, s->upper_bound.ptr, s->upper_bound.len, false, r);
}

/* A count from a statistics map; a negative one is corrupt and counts as absent. */
static bool find_count(const tl_ice_long_map *m, int32_t id, int64_t *out)
{
	for (uint32_t i = 0; i < m->n; i++) {
		if (m->keys[i] == id) {
			*out = m->values[i];
			return *out >= 0;
		}
	}
	return false;
}

static const tl_bytes *find_bytes(const tl_ice_bytes_map *m, int32_t id)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (m->keys[i] == id)
			return &m->values[i];
	return NULL;
}

/*
 * A data file's metrics for one column. Value counts include nulls and
 * NaNs; bounds cover the other values (string bounds may be truncated, the
 * lower one still below every value, the upper one above).
 */
static void metrics_range(const tl_ice_field *field, const tl_ice_data_file *f, value_range *r)
{
	const tl_ice_type *type = &field->type;
	int32_t id = field->id;
	int64_t values = 0, nulls = 0, nans = 0;
	bool has_values = find_count(&f->value_counts, id, &values);
	bool has_nulls = find_count(&f->null_value_counts, id, &nulls);
	bool has_nans = is_float_type(type) && find_count(&f->nan_value_counts, id, &nans);
	memset(r, 0, sizeof(*r));
	r->may_null = !has_nulls || nulls > 0;
	r->may_nan = is_float_type(type) && (!has_nans || nans > 0);
	r->may_ordinary = true;
	if (has_values && has_nulls && values <= nulls) {
		/* every value is null */
		r->may_nan = false;
		r->may_ordinary = false;
	} else if (has_values && has_nulls && has_nans && values - nulls <= nans) {
		r->may_ordinary = false;
	}
	const tl_bytes *lower = find_bytes(&f->lower_bounds, id);
	const tl_bytes *upper = find_bytes(&f->upper_bounds, id);
	if (lower)
		decode_bound(type, lower->ptr, lower->len, true, r);
	if (upper)
		decode_bound(type, upper->ptr, upper->len, false, r);
}

/* The partition fields of the spec over the predicate's column, AND-ed. */
static bool partition_predicate(const eval_ctx *c, const tl_ice_field *field, const tl_ice_expr *pred)
{
	for (int i = 0; i < c->spec->nfields; i++) {
		const tl_ice_partition_field *pf = &c->spec->fields[i];
		if (pf->source_id != field->id)
			continue;
		if (c->kind == STATS_SUMMARIES && (uint32_t)i >= c->nsummaries)
			continue;
		projection pr;
		bool projected = project(pf, &field->type, pred, &pr);
		bool keep = true;
		if (projected) {
			value_range r;
			if (c->kind == STATS_PARTITION)
				partition_range(&pr.type, &c->partition[i], &r);
			else
				summary_range(&pr.type, &c->summaries[i], &r);
			keep = projection_may_match(&pr, &r);
		}
		tl_free(pr.values);
		if (!keep)
			return false;
	}
	return true;
}

static bool predicate_may_match(const eval_ctx *c, const tl_ice_expr *pred)
{
	const tl_ice_field *field = tl_ice_schema_find_id(c->schema, pred->field_id);
	if (field == NULL || !tl_ice_type_is_primitive(field->type.id))
		return true;
	if (c->kind != STATS_METRICS)
		return partition_predicate(c, field, pred);
	value_range r;
	metrics_range(field, c->file, &r);
	return range_may_match(&field->type, pred->op, pred->values, pred->nvalues, &r);
}

static bool may_match(const eval_ctx *c, const tl_ice_expr *e)
{
	/* Parsed chains (a AND b AND c) nest to the left: walking down that side
	 * in a loop keeps long filters from recursing deeply. */
	for (;;) {
		switch (e->op) {
		case TL_ICE_EXPR_TRUE:
			return true;
		case TL_ICE_EXPR_FALSE:
			return false;
		case TL_ICE_EXPR_AND:
			if (!may_match(c, e->right))
				return false;
			e = e->left;
			break;
		case TL_ICE_EXPR_OR:
			if (may_match(c, e->right))
				return true;
			e = e->left;
			break;
		default:
			return predicate_may_match(c, e);
		}
	}
}

bool tl_ice_expr_may_match_partition(const tl_ice_expr *expr, const tl_ice_schema *schema,
                                     const tl_ice_partition_spec *spec, const tl_ice_value *partition)
{
	eval_ctx c = {.kind = STATS_PARTITION, .schema = schema, .spec = spec, .partition = partition};
	if (spec->nfields > 0 && partition == NULL)
		return true;
	return may_match(&c, expr);
}

bool tl_ice_expr_may_match_summaries(const tl_ice_expr *expr, const tl_ice_schema *schema,
                                     const tl_ice_partition_spec *spec,
                                     const tl_ice_field_summary *summaries, uint32_t nsummaries)
{
	eval_ctx c = {.kind = STATS_SUMMARIES, .schema = schema, .spec = spec, .summaries = summaries,
	              .nsummaries = summaries ? nsummaries : 0};
	return may_match(&c, expr);
}

bool tl_ice_expr_may_match_metrics(const tl_ice_expr *expr, const tl_ice_schema *schema,
                                   const tl_ice_data_file *file)
{
	/* a file without rows holds no matching row (Java prunes these too) */
	if (file->record_count == 0)
		return false;
	eval_ctx c = {.kind = STATS_METRICS, .schema = schema, .file = file};
	return may_match(&c, expr);
}
