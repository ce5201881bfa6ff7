/*
 * iceberg_expr_fixture.h: what the row-filter tests share: a schema with a
 * column of every primitive type (field ids F_*), a partition spec built
 * field by field, filters parsed from text, and values made by hand.
 */
#ifndef TIERLAKE_ICEBERG_EXPR_FIXTURE_H
#define TIERLAKE_ICEBERG_EXPR_FIXTURE_H

#include "tierlake/iceberg_expr.h"

enum {
	F_I = 1, F_L, F_S, F_D, F_TS, F_DEC, F_F, F_BIN, F_FL, F_B, F_U, F_TZ, F_WEIRD, F_AND, F_NESTED
};

typedef struct ex_fixture {
	tl_ice_schema schema;
	tl_ice_partition_spec spec;
	tl_arena arena;
	tl_error err;
} ex_fixture;

/* The schema: i int, l long, s string, d date, ts timestamp, dec decimal(9,2), f double, ... */
int ex_make_schema(tl_ice_schema *schema, tl_error *err);
const tl_ice_type *ex_type_of(const tl_ice_schema *schema, int32_t id);

tl_ice_value ex_i32(int32_t x);
tl_ice_value ex_i64(int64_t x);
tl_ice_value ex_f64(double x);
tl_ice_value ex_f32(float x);
/* Points at s (not copied). */
tl_ice_value ex_str(const char *s);
/* A value parsed from text, bytes in the arena; aborts on bad test input. */
tl_ice_value ex_parsed(const tl_ice_type *type, const char *text, tl_arena *arena);
/* A value's single-value binary form, copied into the arena. */
tl_bytes ex_serialized(const tl_ice_type *type, const tl_ice_value *v, tl_arena *arena);

/* Schema, an empty spec, an arena. */
int ex_fixture_init(ex_fixture *fx);
void ex_fixture_free(ex_fixture *fx);
/* Appends a partition field ("day", "bucket[16]", ...) on the source column. */
void ex_add_field(ex_fixture *fx, int32_t source, const char *transform);
/* Parses a filter over the schema; aborts on bad test input. */
const tl_ice_expr *ex_filter(ex_fixture *fx, const char *text);

/* Statistics of one column of a data file, for tl_ice_data_file's maps. */
typedef struct ex_column_metrics {
	int32_t key;
	int64_t values, nulls, nans;
	tl_bytes lower, upper;
} ex_column_metrics;
/* Points the file's statistics maps at m; counts[] says which of value, null, NaN counts exist. */
void ex_attach_metrics(tl_ice_data_file *f, ex_column_metrics *m, bool counts[3], bool has_lower, bool has_upper);

#endif
