/*
 * test_iceberg_expr_random.c: brute-force properties of the inclusive
 * evaluators: for random rows and random predicates, a partition, manifest
 * or data file holding a row the predicate matches (in Java's order of
 * floats or in IEEE's) is never pruned. Values include extreme integers
 * (where Java's truncate wraps), pre-1970 dates and timestamps, NaN and
 * both zeros; bounds are sometimes missing, truncated or undecodable. Each
 * case must also prune sometimes, or the property would prove nothing.
 */
#include <math.h>
#include <stdlib.h>

#include "iceberg_expr_fixture.h"
#include "test.h"

/* ------------------------------------------------- random properties */

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t rnd_between(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

#define MICROS_PER_DAY 86400000000LL

static tl_ice_value random_value(const tl_ice_type *type, tl_arena *arena)
{
	static const char *const pieces[] = {"a", "b", "z", "\xc3\xa9", "\xf0\x9f\x98\x80", "\x7f"};
	static const uint8_t bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
	static const double doubles[] = {NAN, -INFINITY, -1.5, -0.0, 0.0, 0.5, 1.5, 2.0, INFINITY, 1e300};
	tl_ice_value v = {0};
	int pick = (int)(rnd() % 4);
	switch (type->id) {
	case TL_ICE_INT:
		v.v.i32 = pick == 0 ? (int32_t)rnd() : pick == 1 ? (int32_t)rnd_between(INT32_MIN, INT32_MIN + 30)
		        : (int32_t)rnd_between(-60, 60);
		return v;
	case TL_ICE_LONG:
		v.v.i64 = pick == 0 ? (int64_t)rnd() : pick == 1 ? rnd_between(INT64_MIN, INT64_MIN + 30) : rnd_between(-60, 60);
		return v;
	case TL_ICE_DATE:
		v.v.i32 = (int32_t)(pick == 0 ? rnd_between(-800000, 800000) : pick == 1 ? rnd_between(-400, 400)
		                                                                         : rnd_between(-3, 3));
		return v;
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		v.v.i64 = pick == 0 ? rnd_between(-4000 * 365 * MICROS_PER_DAY, 4000 * 365 * MICROS_PER_DAY)
		        : pick == 1 ? rnd_between(-800 * MICROS_PER_DAY, 800 * MICROS_PER_DAY)
		                    : rnd_between(-3 * 3600000000LL, 3 * 3600000000LL);
		return v;
	case TL_ICE_DECIMAL:
		v.v.dec = rnd_between(-99999, 99999);
		return v;
	case TL_ICE_DOUBLE:
		v.v.f64 = pick == 0 ? (double)rnd_between(-100, 100) / 8 : doubles[rnd() % 10];
		return v;
	case TL_ICE_FLOAT:
		v.v.f32 = pick == 0 ? (float)rnd_between(-100, 100) / 8 : (float)doubles[rnd() % 10];
		return v;
	case TL_ICE_STRING: {
		int n = (int)(rnd() % 6);
		tl_buf b;
		tl_buf_init(&b);
		for (int i = 0; i < n; i++)
			tl_buf_append_str(&b, pieces[rnd() % 6]);
		v.ptr = tl_arena_copy(arena, b.data ? (const void *)b.data : "", (uint32_t)b.len).ptr;
		v.len = b.len;
		tl_buf_free(&b);
		return v;
	}
	case TL_ICE_BINARY: {
		int n = (int)(rnd() % 6);
		uint8_t *p = tl_arena_alloc(arena, 8);
		for (int i = 0; i < n; i++)
			p[i] = bytes[rnd() % 5];
		v.ptr = p;
		v.len = (size_t)n;
		return v;
	}
	case TL_ICE_BOOLEAN:
		v.v.b = rnd() % 2;
		return v;
	default:
		abort();
	}
}

/* A literal: random, or next to a row value so boundaries get hit. */
static tl_ice_value random_literal(const tl_ice_type *type, const tl_ice_value *near, tl_arena *arena)
{
	if (near == NULL || near->is_null || rnd() % 2)
		return random_value(type, arena);
	tl_ice_value v = *near;
	int64_t d = rnd_between(-2, 2);
	switch (type->id) {
	case TL_ICE_INT:
	case TL_ICE_DATE:
		v.v.i32 = (int32_t)(uint32_t)((uint32_t)v.v.i32 + (uint32_t)d);
		break;
	case TL_ICE_LONG:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		v.v.i64 = (int64_t)((uint64_t)v.v.i64 + (uint64_t)(d * (rnd() % 2 ? 1 : 3600000000LL)));
		break;
	case TL_ICE_DECIMAL:
		v.v.dec += d;
		break;
	case TL_ICE_STRING:
	case TL_ICE_BINARY:
		/* a prefix of the value, or the value plus a byte */
		if (d < 0 && v.len > 0) {
			v.len = type->id == TL_ICE_BINARY ? v.len - 1 : 0;
		} else if (d > 0) {
			uint8_t *p = tl_arena_alloc(arena, v.len + 1);
			if (v.len)
				memcpy(p, v.ptr, v.len);
			p[v.len] = 'a';
			v.ptr = p;
			v.len++;
		}
		break;
	default:
		break;
	}
	return v;
}

static bool ieee_holds(const tl_ice_type *type, tl_ice_expr_op op, const tl_ice_value *x, const tl_ice_value *lit)
{
	double a = type->id == TL_ICE_FLOAT ? x->v.f32 : x->v.f64;
	double b = type->id == TL_ICE_FLOAT ? lit->v.f32 : lit->v.f64;
	switch (op) {
	case TL_ICE_EXPR_EQ:
	case TL_ICE_EXPR_IN:
		return a == b;
	case TL_ICE_EXPR_LT:
		return a < b;
	case TL_ICE_EXPR_LE:
		return a <= b;
	case TL_ICE_EXPR_GT:
		return a > b;
	default:
		return a >= b;
	}
}

/* Whether a row value satisfies a negated predicate (<>, NOT IN), under either float order. */
static bool row_differs(const tl_ice_type *type, const tl_ice_expr *pred, const tl_ice_value *x)
{
	bool is_float = type->id == TL_ICE_FLOAT || type->id == TL_ICE_DOUBLE;
	bool equal_java = false, equal_ieee = false;
	for (int i = 0; i < pred->nvalues; i++) {
		equal_java = equal_java || tl_ice_value_compare(type, x, &pred->values[i]) == 0;
		equal_ieee = equal_ieee || (is_float && ieee_holds(type, TL_ICE_EXPR_EQ, x, &pred->values[i]));
	}
	return !equal_java || (is_float && !equal_ieee);
}

/* Whether string x starts with the bytes of p. */
static bool starts_with(const tl_ice_value *x, const tl_ice_value *p)
{
	return x->len >= p->len && (p->len == 0 || memcmp(x->ptr, p->ptr, p->len) == 0);
}

/* Whether a row value satisfies the predicate, under either float order (a null only IS NULL). */
static bool row_holds(const tl_ice_type *type, const tl_ice_expr *pred, const tl_ice_value *x)
{
	if (pred->op == TL_ICE_EXPR_IS_NULL)
		return x->is_null;
	if (pred->op == TL_ICE_EXPR_NOT_NULL)
		return !x->is_null;
	if (x->is_null)
		return false;
	if (pred->op == TL_ICE_EXPR_NOT_EQ || pred->op == TL_ICE_EXPR_NOT_IN)
		return row_differs(type, pred, x);
	if (pred->op == TL_ICE_EXPR_STARTS_WITH)
		return starts_with(x, &pred->values[0]);
	if (pred->op == TL_ICE_EXPR_NOT_STARTS_WITH)
		return !starts_with(x, &pred->values[0]);
	for (int i = 0; i < pred->nvalues; i++) {
		int c = tl_ice_value_compare(type, x, &pred->values[i]);
		bool holds;
		switch (pred->op) {
		case TL_ICE_EXPR_EQ:
		case TL_ICE_EXPR_IN:
			holds = c == 0;
			break;
		case TL_ICE_EXPR_LT:
			holds = c < 0;
			break;
		case TL_ICE_EXPR_LE:
			holds = c <= 0;
			break;
		case TL_ICE_EXPR_GT:
			holds = c > 0;
			break;
		default:
			holds = c >= 0;
			break;
		}
		if ((type->id == TL_ICE_FLOAT || type->id == TL_ICE_DOUBLE) && ieee_holds(type, pred->op, x, &pred->values[i]))
			holds = true;
		if (holds)
			return true;
	}
	return false;
}

static const tl_ice_expr *random_predicate(tl_arena *arena, int32_t field_id, const tl_ice_type *type,
                                           const tl_ice_value *near)
{
	static const tl_ice_expr_op ops[] = {TL_ICE_EXPR_EQ,       TL_ICE_EXPR_LT,     TL_ICE_EXPR_LE,
	                                     TL_ICE_EXPR_GT,       TL_ICE_EXPR_GE,     TL_ICE_EXPR_IN,
	                                     TL_ICE_EXPR_IS_NULL,  TL_ICE_EXPR_NOT_NULL, TL_ICE_EXPR_NOT_EQ,
	                                     TL_ICE_EXPR_NOT_IN,   TL_ICE_EXPR_STARTS_WITH,
	                                     TL_ICE_EXPR_NOT_STARTS_WITH};
	tl_ice_expr_op op = ops[rnd() % 12];
	bool prefix = op == TL_ICE_EXPR_STARTS_WITH || op == TL_ICE_EXPR_NOT_STARTS_WITH;
	if (prefix && type->id != TL_ICE_STRING)
		op = TL_ICE_EXPR_NOT_EQ, prefix = false;
	tl_ice_value lits[3];
	int n = op == TL_ICE_EXPR_IN || op == TL_ICE_EXPR_NOT_IN ? 1 + (int)(rnd() % 3)
	      : op == TL_ICE_EXPR_IS_NULL || op == TL_ICE_EXPR_NOT_NULL ? 0 : 1;
	for (int i = 0; i < n; i++)
		lits[i] = random_literal(type, near, arena);
	if (prefix && near != NULL && !near->is_null && rnd() % 2) {
		/* a prefix of the row's value, cut at a character's start */
		lits[0] = *near;
		lits[0].len = (size_t)(rnd() % (near->len + 1));
		while (lits[0].len > 0 && lits[0].len < near->len && (near->ptr[lits[0].len] & 0xC0) == 0x80)
			lits[0].len--;
	}
	return tl_ice_expr_predicate(arena, op, field_id, lits, n);
}

typedef struct combo {
	int32_t source;
	const char *transforms[2];
} combo;

static const combo combos[] = {
	{F_I, {"identity"}},       {F_I, {"truncate[10]"}},   {F_I, {"bucket[16]"}},
	{F_I, {"truncate[7]", "bucket[4]"}}, {F_L, {"truncate[100]"}}, {F_L, {"identity"}},
	{F_S, {"truncate[2]"}},    {F_S, {"identity"}},       {F_S, {"bucket[8]"}},
	{F_BIN, {"truncate[2]"}},  {F_DEC, {"truncate[50]"}}, {F_DEC, {"identity"}},
	{F_D, {"day"}},            {F_D, {"month"}},          {F_D, {"year", "day"}},
	{F_TS, {"day"}},           {F_TS, {"hour"}},          {F_TS, {"month"}},
	{F_TS, {"year"}},          {F_TZ, {"day", "hour"}},   {F_F, {"identity"}},
	{F_FL, {"identity"}},      {F_B, {"identity"}},       {F_D, {"bucket[5]"}},
};

/* Partition values of x under the spec (all fields on x's column). */
static void partition_of(const ex_fixture *fx, const tl_ice_type *type, const tl_ice_value *x, tl_ice_value *p)
{
	for (int i = 0; i < fx->spec.nfields; i++)
		if (tl_ice_transform_apply(&fx->spec.fields[i].transform, type, x, &p[i], NULL) < 0)
			abort();
}

static void spec_of(ex_fixture *fx, const combo *c)
{
	tl_ice_partition_spec_free(&fx->spec);
	tl_ice_partition_spec_init(&fx->spec, 0);
	for (int k = 0; k < 2 && c->transforms[k]; k++)
		ex_add_field(fx, c->source, c->transforms[k]);
}

static const char *describe(ex_fixture *fx, const tl_ice_expr *e, tl_buf *b)
{
	tl_buf_reset(b);
	tl_ice_expr_text(e, &fx->schema, b);
	tl_buf_append_byte(b, 0);
	return (const char *)b->data;
}

TEST(iceberg_expr_partition_never_prunes_a_matching_row)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	rng = 0x9E3779B97F4A7C15ULL;  /* the same cases whichever tests run first */
	tl_buf b;
	tl_buf_init(&b);
	for (size_t c = 0; c < sizeof(combos) / sizeof(combos[0]); c++) {
		spec_of(&fx, &combos[c]);
		const tl_ice_type *type = ex_type_of(&fx.schema, combos[c].source);
		int pruned = 0;
		for (int iter = 0; iter < 4000; iter++) {
			tl_arena_reset(&fx.arena);
			tl_ice_value x = rnd() % 20 == 0 ? tl_ice_null() : random_value(type, &fx.arena);
			const tl_ice_expr *pred = random_predicate(&fx.arena, combos[c].source, type, &x);
			tl_ice_value p[2];
			partition_of(&fx, type, &x, p);
			bool may = tl_ice_expr_may_match_partition(pred, &fx.schema, &fx.spec, p);
			if (row_holds(type, pred, &x) && !may) {
				tl_buf human;
				tl_buf_init(&human);
				tl_ice_value_human(type, &x, &human);
				tl_buf_append_byte(&human, 0);
				tl_test_fail(__FILE__, __LINE__, "%s on %s: pruned a row with %s", describe(&fx, pred, &b),
				             combos[c].transforms[0], (const char *)human.data);
				tl_buf_free(&human);
				break;
			}
			pruned += !may;
			/* a tautology and a contradiction combine as they must */
			const tl_ice_expr *t = tl_ice_expr_or(&fx.arena, pred, tl_ice_expr_const(&fx.arena, true));
			const tl_ice_expr *f = tl_ice_expr_and(&fx.arena, pred, tl_ice_expr_const(&fx.arena, false));
			CHECK(tl_ice_expr_may_match_partition(t, &fx.schema, &fx.spec, p));
			CHECK(!tl_ice_expr_may_match_partition(f, &fx.schema, &fx.spec, p));
		}
		if (pruned == 0)
			tl_test_fail(__FILE__, __LINE__, "%s: never pruned", combos[c].transforms[0]);
	}
	tl_buf_free(&b);
	ex_fixture_free(&fx);
}

/* Bounds of ordinary (non-null, non-NaN) values, in single-value binary form in the arena. */
typedef struct bounds {
	bool any_null, any_nan, any_ordinary;
	tl_ice_value lower, upper;
} bounds;

static void bounds_add(bounds *bd, const tl_ice_type *type, const tl_ice_value *v)
{
	if (v->is_null) {
		bd->any_null = true;
	} else if ((type->id == TL_ICE_DOUBLE && isnan(v->v.f64)) || (type->id == TL_ICE_FLOAT && isnan(v->v.f32))) {
		bd->any_nan = true;
	} else {
		if (!bd->any_ordinary || tl_ice_value_compare(type, v, &bd->lower) < 0)
			bd->lower = *v;
		if (!bd->any_ordinary || tl_ice_value_compare(type, v, &bd->upper) > 0)
			bd->upper = *v;
		bd->any_ordinary = true;
	}
}

TEST(iceberg_expr_summaries_never_prune_a_matching_manifest)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	rng = 0x9E3779B97F4A7C15ULL;  /* the same cases whichever tests run first */
	tl_buf b;
	tl_buf_init(&b);
	for (size_t c = 0; c < sizeof(combos) / sizeof(combos[0]); c++) {
		spec_of(&fx, &combos[c]);
		const tl_ice_type *type = ex_type_of(&fx.schema, combos[c].source);
		tl_ice_type ptype[2];
		for (int i = 0; i < fx.spec.nfields; i++)
			tl_ice_transform_result_type(&fx.spec.fields[i].transform, type, &ptype[i], NULL);
		int pruned = 0;
		for (int iter = 0; iter < 2000; iter++) {
			tl_arena_reset(&fx.arena);
			int nrows = (int)(rnd() % 4);
			tl_ice_value rows[4];
			bounds bd[2];
			memset(bd, 0, sizeof(bd));
			for (int r = 0; r < nrows; r++) {
				rows[r] = rnd() % 6 == 0 ? tl_ice_null() : random_value(type, &fx.arena);
				tl_ice_value p[2];
				partition_of(&fx, type, &rows[r], p);
				for (int i = 0; i < fx.spec.nfields; i++)
					bounds_add(&bd[i], &ptype[i], &p[i]);
			}
			tl_ice_field_summary sum[2];
			memset(sum, 0, sizeof(sum));
			for (int i = 0; i < fx.spec.nfields; i++) {
				sum[i].contains_null = bd[i].any_null;
				sum[i].has_contains_nan = rnd() % 3 != 0;
				sum[i].contains_nan = bd[i].any_nan;
				if (bd[i].any_ordinary) {
					sum[i].has_lower_bound = sum[i].has_upper_bound = true;
					sum[i].lower_bound = ex_serialized(&ptype[i], &bd[i].lower, &fx.arena);
					sum[i].upper_bound = ex_serialized(&ptype[i], &bd[i].upper, &fx.arena);
				}
			}
			const tl_ice_value *near = nrows ? &rows[rnd() % (uint64_t)nrows] : NULL;
			const tl_ice_expr *pred = random_predicate(&fx.arena, combos[c].source, type, near);
			bool may = tl_ice_expr_may_match_summaries(pred, &fx.schema, &fx.spec, sum, (uint32_t)fx.spec.nfields);
			bool holds = false;
			for (int r = 0; r < nrows; r++)
				holds = holds || row_holds(type, pred, &rows[r]);
			if (holds && !may) {
				tl_test_fail(__FILE__, __LINE__, "%s on %s: pruned a manifest with a matching row",
				             describe(&fx, pred, &b), combos[c].transforms[0]);
				break;
			}
			pruned += !may;
			/* absent summaries keep every manifest */
			CHECK(tl_ice_expr_may_match_summaries(pred, &fx.schema, &fx.spec, NULL, 0));
		}
		if (pruned == 0)
			tl_test_fail(__FILE__, __LINE__, "%s: never pruned", combos[c].transforms[0]);
	}
	tl_buf_free(&b);
	ex_fixture_free(&fx);
}

/* A truncated upper bound as writers make it: a prefix with its last byte incremented. */
static bool truncated_upper(tl_bytes *b, uint32_t keep)
{
	while (keep > 0 && keep <= b->len) {
		if (b->ptr[keep - 1] < 0x7f) {
			uint8_t *p = (uint8_t *)b->ptr;  /* arena copy owned by the test */
			p[keep - 1]++;
			b->len = keep;
			return true;
		}
		keep--;
	}
	return false;
}

TEST(iceberg_expr_metrics_never_prune_a_matching_file)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	rng = 0x9E3779B97F4A7C15ULL;  /* the same cases whichever tests run first */
	tl_buf b;
	tl_buf_init(&b);
	static const int32_t columns[] = {F_I, F_L, F_S, F_BIN, F_D, F_TS, F_DEC, F_F, F_FL, F_B};
	for (size_t c = 0; c < sizeof(columns) / sizeof(columns[0]); c++) {
		const tl_ice_type *type = ex_type_of(&fx.schema, columns[c]);
		int pruned = 0;
		for (int iter = 0; iter < 4000; iter++) {
			tl_arena_reset(&fx.arena);
			int nrows = 1 + (int)(rnd() % 4);
			tl_ice_value rows[5];
			bounds bd;
			memset(&bd, 0, sizeof(bd));
			ex_column_metrics m = {.key = columns[c], .values = nrows};
			for (int r = 0; r < nrows; r++) {
				rows[r] = rnd() % 5 == 0 ? tl_ice_null() : random_value(type, &fx.arena);
				bounds_add(&bd, type, &rows[r]);
				m.nulls += rows[r].is_null;
				m.nans += !rows[r].is_null && ((type->id == TL_ICE_DOUBLE && isnan(rows[r].v.f64)) ||
				                               (type->id == TL_ICE_FLOAT && isnan(rows[r].v.f32)));
			}
			bool counts[3] = {rnd() % 8 != 0, rnd() % 8 != 0, rnd() % 8 != 0};
			bool has_lower = bd.any_ordinary && rnd() % 8 != 0, has_upper = bd.any_ordinary && rnd() % 8 != 0;
			if (bd.any_ordinary) {
				m.lower = ex_serialized(type, &bd.lower, &fx.arena);
				m.upper = ex_serialized(type, &bd.upper, &fx.arena);
				if ((type->id == TL_ICE_STRING || type->id == TL_ICE_BINARY) && rnd() % 2) {
					/* truncated bounds: a shorter lower prefix, an incremented upper prefix */
					m.lower.len = m.lower.len > 1 ? 1 : m.lower.len;
					has_upper = has_upper && truncated_upper(&m.upper, 1);
				}
				bool fixed_width = type->id != TL_ICE_STRING && type->id != TL_ICE_BINARY && type->id != TL_ICE_DECIMAL;
				if (fixed_width && rnd() % 30 == 0)
					m.lower.len = 3;  /* a bound that does not decode */
				if ((type->id == TL_ICE_DOUBLE) && bd.lower.v.f64 == 0 && rnd() % 2) {
					tl_ice_value flipped = ex_f64(-bd.lower.v.f64);  /* the other writer's zero */
					m.lower = ex_serialized(type, &flipped, &fx.arena);
				}
			}
			tl_ice_data_file file;
			ex_attach_metrics(&file, &m, counts, has_lower, has_upper);
			const tl_ice_expr *pred = random_predicate(&fx.arena, columns[c], type, &rows[rnd() % (uint64_t)nrows]);
			bool may = tl_ice_expr_may_match_metrics(pred, &fx.schema, &file);
			bool holds = false;
			for (int r = 0; r < nrows; r++)
				holds = holds || row_holds(type, pred, &rows[r]);
			if (holds && !may) {
				tl_test_fail(__FILE__, __LINE__, "%s: pruned a file with a matching row", describe(&fx, pred, &b));
				break;
			}
			pruned += !may;
		}
		if (pruned == 0)
			tl_test_fail(__FILE__, __LINE__, "column %d: never pruned", (int)columns[c]);
	}
	tl_buf_free(&b);
	ex_fixture_free(&fx);
}


/* ------------------------------------------------- parser on random text */

static const char *pick(const char *const *list, size_t n)
{
	return list[rnd() % n];
}

#define PICK(list) pick(list, sizeof(list) / sizeof(list[0]))

/* A random filter from the grammar (sometimes with a wrong literal or column). */
static void random_filter(tl_buf *out, int depth)
{
	static const char *const columns[] = {"i", "l", "s", "d", "ts", "dec", "f", "fl", "b", "bin", "\"weird col\"",
	                                      "\"and\"", "nope"};
	static const char *const ops[] = {" = ", " < ", " <= ", " > ", " >= ", "=", "<", " <> ", "!=",
	                                  " STARTS WITH ", " not starts with "};
	static const char *const literals[] = {"1", "-2", "+3", "1.5", "1e3", "-0.0", "'x'", "'it''s'", "'2024-01-01'",
	                                       "'2024-01-01T10:00:00'", "'NaN'", "TRUE", "false", "'00ff'", "''",
	                                       "9999999999999999999", "0.05"};
	int kind = depth > 3 ? 0 : (int)(rnd() % 6);
	if (kind == 1 || kind == 2) {
		random_filter(out, depth + 1);
		tl_buf_append_str(out, kind == 1 ? " AND " : " or ");
		random_filter(out, depth + 1);
	} else if (kind == 3) {
		tl_buf_append_byte(out, '(');
		random_filter(out, depth + 1);
		tl_buf_append_byte(out, ')');
	} else if (kind == 4) {
		tl_buf_append_str(out, PICK(columns));
		int n = 1 + (int)(rnd() % 3);
		tl_buf_append_str(out, rnd() % 3 ? " IN (" : " NOT IN (");
		for (int i = 0; i < n; i++) {
			tl_buf_append_str(out, i ? ", " : "");
			tl_buf_append_str(out, PICK(literals));
		}
		tl_buf_append_byte(out, ')');
	} else if (kind == 5) {
		tl_buf_append_str(out, PICK(columns));
		tl_buf_append_str(out, rnd() % 2 ? " IS NULL" : " is not null");
	} else if (rnd() % 4 == 0) {
		tl_buf_append_str(out, PICK(literals));
		tl_buf_append_str(out, PICK(ops));
		tl_buf_append_str(out, PICK(columns));
	} else {
		tl_buf_append_str(out, PICK(columns));
		tl_buf_append_str(out, PICK(ops));
		tl_buf_append_str(out, PICK(literals));
	}
}

/* A random filter, in half the cases damaged by a deleted, repeated or changed byte. */
static void random_filter_text(tl_buf *out)
{
	static const char junk[] = "()'\",=<>!~ \t-.e0aZ";
	random_filter(out, 0);
	if (rnd() % 2 && out->len > 0) {
		size_t at = (size_t)(rnd() % out->len);
		int how = (int)(rnd() % 3);
		if (how == 0)
			memmove(out->data + at, out->data + at + 1, out->len - at - 1), out->len--;
		else if (how == 1)
			tl_buf_append_byte(out, out->data[at]);
		else
			out->data[at] = (uint8_t)junk[rnd() % (sizeof(junk) - 1)];
	}
	tl_buf_append_byte(out, 0);
}

TEST(iceberg_expr_parse_random_text_fails_cleanly_or_round_trips)
{
	ex_fixture fx;
	CHECK_OK(ex_fixture_init(&fx), &fx.err);
	tl_buf text, first, second;
	tl_buf_init(&text);
	tl_buf_init(&first);
	tl_buf_init(&second);
	int parsed = 0;
	rng = 0x2545F4914F6CDD1DULL;
	for (int iter = 0; iter < 20000; iter++) {
		tl_arena_reset(&fx.arena);
		tl_buf_reset(&text);
		random_filter_text(&text);
		const tl_ice_expr *e;
		tl_error_clear(&fx.err);
		if (tl_ice_expr_parse(&fx.schema, (const char *)text.data, &fx.arena, &e, &fx.err) < 0) {
			CHECK_INT(fx.err.code, TL_ERR_INVALID);
			CHECK(strncmp(fx.err.message, "filter: ", 8) == 0);
			CHECK(strstr(fx.err.message, "at position ") != NULL);
			continue;
		}
		parsed++;
		tl_buf_reset(&first);
		tl_ice_expr_text(e, &fx.schema, &first);
		tl_buf_append_byte(&first, 0);
		const tl_ice_expr *again;
		if (tl_ice_expr_parse(&fx.schema, (const char *)first.data, &fx.arena, &again, &fx.err) < 0) {
			tl_test_fail(__FILE__, __LINE__, "\"%s\" rendered as \"%s\", which does not parse: %s",
			             (const char *)text.data, (const char *)first.data, fx.err.message);
			break;
		}
		tl_buf_reset(&second);
		tl_ice_expr_text(again, &fx.schema, &second);
		tl_buf_append_byte(&second, 0);
		CHECK_STR((const char *)second.data, (const char *)first.data);
	}
	CHECK(parsed > 2000);  /* most random filters are valid ones */
	tl_buf_free(&text);
	tl_buf_free(&first);
	tl_buf_free(&second);
	ex_fixture_free(&fx);
}
