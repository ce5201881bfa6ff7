/*
 * iceberg_expr.h: row filters for scan planning, and the evaluators that
 * decide whether a manifest, a data file or a partition may hold matching
 * rows.
 *
 * A filter is a tree of AND/OR over predicates on a field (by Iceberg field
 * id): =, <, <=, >, >=, IN, IS NULL, IS NOT NULL, <>, NOT IN, STARTS WITH
 * and NOT STARTS WITH. Every predicate but IS NULL fails a null, as SQL's
 * WHERE does (unlike Java Iceberg's notEq, notIn and notStartsWith, which
 * hold for nulls): x <> 5 is false for a null x. STARTS WITH compares the
 * bytes of strings (a string starts with itself and with ''). The evaluators are
 * "inclusive": they answer false only when the statistics prove that no
 * row matches, so a file they keep may still hold non-matching rows (the
 * caller filters rows). Predicates on fields the partition spec does not
 * cover, or that statistics lack, keep everything.
 */
#ifndef TIERLAKE_ICEBERG_EXPR_H
#define TIERLAKE_ICEBERG_EXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/iceberg_manifest.h"
#include "tierlake/iceberg_schema.h"
#include "tierlake/iceberg_transform.h"
#include "tierlake/iceberg_value.h"

typedef enum tl_ice_expr_op {
	TL_ICE_EXPR_TRUE,
	TL_ICE_EXPR_FALSE,
	TL_ICE_EXPR_AND,
	TL_ICE_EXPR_OR,
	TL_ICE_EXPR_EQ,
	TL_ICE_EXPR_LT,
	TL_ICE_EXPR_LE,
	TL_ICE_EXPR_GT,
	TL_ICE_EXPR_GE,
	TL_ICE_EXPR_IN,
	TL_ICE_EXPR_IS_NULL,
	TL_ICE_EXPR_NOT_NULL,
	/* appended, so that the values above keep their numbers */
	TL_ICE_EXPR_NOT_EQ,
	TL_ICE_EXPR_NOT_IN,
	TL_ICE_EXPR_STARTS_WITH,
	TL_ICE_EXPR_NOT_STARTS_WITH
} tl_ice_expr_op;

typedef struct tl_ice_expr tl_ice_expr;
struct tl_ice_expr {
	tl_ice_expr_op op;
	const tl_ice_expr *left;    /* AND, OR */
	const tl_ice_expr *right;
	int32_t field_id;           /* predicates */
	int nvalues;                /* 1 for comparisons and prefixes, >= 1 for [NOT] IN, 0 for null tests */
	const tl_ice_value *values; /* non-null, of the field's type */
};

/*
 * Constructors. Nodes and copies of the values (bytes-like ones too) are
 * allocated in `arena`, which owns the whole tree. NULL when out of
 * memory; AND and OR of a NULL operand are NULL too, so a tree built in
 * one expression needs one check at the end.
 */
const tl_ice_expr *tl_ice_expr_const(tl_arena *arena, bool value);
const tl_ice_expr *tl_ice_expr_and(tl_arena *arena, const tl_ice_expr *left, const tl_ice_expr *right);
const tl_ice_expr *tl_ice_expr_or(tl_arena *arena, const tl_ice_expr *left, const tl_ice_expr *right);
const tl_ice_expr *tl_ice_expr_predicate(tl_arena *arena, tl_ice_expr_op op, int32_t field_id,
                                         const tl_ice_value *values, int nvalues);

/*
 * Parses a filter over the schema's top-level columns, for tools and
 * tests: `col = 'text'`, `n >= 42`, `ts < '2024-01-01T00:00:00'`,
 * `k IN (1, 2, 3)`, `x IS NULL`, `x IS NOT NULL`, `n <> 42` (or `n != 42`),
 * `k NOT IN (1, 2)`, `s STARTS WITH 'ab'`, `s NOT STARTS WITH 'ab'`
 * (string columns only), joined with AND and OR
 * and grouped with parentheses (AND binds tighter). Literals are numbers
 * or single-quoted text in the form tl_ice_value_parse takes. Unknown
 * columns, literals that do not fit the type and syntax errors are
 * TL_ERR_INVALID naming the position.
 */
int tl_ice_expr_parse(const tl_ice_schema *schema, const char *text, tl_arena *arena,
                      const tl_ice_expr **out, tl_error *err);

/* Appends a readable rendering (the syntax above) for EXPLAIN and logs. */
void tl_ice_expr_text(const tl_ice_expr *expr, const tl_ice_schema *schema, tl_buf *out);

/*
 * True unless the partition tuple proves no row matches: predicates are
 * projected through each partition field's transform (identity, truncate,
 * year/month/day/hour exactly; bucket for = and IN; void never prunes;
 * <>, NOT IN and the prefixes through identity, and the prefixes through
 * a string truncate).
 */
bool tl_ice_expr_may_match_partition(const tl_ice_expr *expr, const tl_ice_schema *schema,
                                     const tl_ice_partition_spec *spec, const tl_ice_value *partition);

/*
 * True unless a manifest's partition summaries (manifest list
 * "partitions": per partition field, bounds and contains_null) prove no
 * row matches. Summaries that are absent or do not decode keep the manifest.
 */
bool tl_ice_expr_may_match_summaries(const tl_ice_expr *expr, const tl_ice_schema *schema,
                                     const tl_ice_partition_spec *spec,
                                     const tl_ice_field_summary *summaries, uint32_t nsummaries);

/*
 * True unless a data file's column metrics (lower/upper bounds,
 * value/null/NaN counts) prove no row matches.
 */
bool tl_ice_expr_may_match_metrics(const tl_ice_expr *expr, const tl_ice_schema *schema,
                                   const tl_ice_data_file *file);

/*
 * Three-way ordering of two non-null values of one primitive type, as
 * Iceberg sorts them (strings and binaries bytewise unsigned, uuids as
 * 16 bytes, floats with -0 < +0 and NaN largest).
 */
int tl_ice_value_compare(const tl_ice_type *type, const tl_ice_value *a, const tl_ice_value *b);

#endif
