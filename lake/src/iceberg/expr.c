/*
 * expr.c: row-filter expression trees (iceberg_expr.h): their constructors,
 * the ordering of Iceberg values that predicates compare with, and the
 * readable rendering that tl_ice_expr_parse reads back.
 *
 * The parser lives in expr_parse.c, the evaluators that prune partitions,
 * manifests and data files in expr_eval.c.
 */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "tierlake/iceberg_expr.h"

/* ---- constructors ---- */

static tl_ice_expr *new_node(tl_arena *arena, tl_ice_expr_op op)
{
	tl_ice_expr *e = tl_arena_alloc(arena, sizeof(*e));
	if (e == NULL)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->op = op;
	return e;
}

const tl_ice_expr *tl_ice_expr_const(tl_arena *arena, bool value)
{
	return new_node(arena, value ? TL_ICE_EXPR_TRUE : TL_ICE_EXPR_FALSE);
}

const tl_ice_expr *tl_ice_expr_and(tl_arena *arena, const tl_ice_expr *left, const tl_ice_expr *right)
{
	if (left == NULL || right == NULL)
		return NULL;
	tl_ice_expr *e = new_node(arena, TL_ICE_EXPR_AND);
	if (e == NULL)
		return NULL;
	e->left = left;
	e->right = right;
	return e;
}

const tl_ice_expr *tl_ice_expr_or(tl_arena *arena, const tl_ice_expr *left, const tl_ice_expr *right)
{
	if (left == NULL || right == NULL)
		return NULL;
	tl_ice_expr *e = new_node(arena, TL_ICE_EXPR_OR);
	if (e == NULL)
		return NULL;
	e->left = left;
	e->right = right;
	return e;
}

const tl_ice_expr *tl_ice_expr_predicate(tl_arena *arena, tl_ice_expr_op op, int32_t field_id,
                                         const tl_ice_value *values, int nvalues)
{
	tl_ice_expr *e = new_node(arena, op);
	if (e == NULL)
		return NULL;
	e->field_id = field_id;
	if (nvalues <= 0 || values == NULL)
		return e;
	tl_ice_value *copies = tl_arena_alloc(arena, (size_t)nvalues * sizeof(*copies));
	if (copies == NULL)
		return NULL;
	for (int i = 0; i < nvalues; i++) {
		copies[i] = values[i];
		/* Bytes-like values point at the caller's memory: the tree must own them. */
		if (values[i].ptr != NULL && values[i].len > 0 && values[i].len <= UINT32_MAX &&
		    (copies[i].ptr = tl_arena_copy(arena, values[i].ptr, (uint32_t)values[i].len).ptr) == NULL)
			return NULL;
	}
	e->nvalues = nvalues;
	e->values = copies;
	return e;
}

/* ---- ordering ---- */

static int sign_of(int64_t d)
{
	return (d > 0) - (d < 0);
}

/* java.lang.Double.compare: -0 < +0, NaN above everything and equal to itself. */
static int compare_double(double a, double b)
{
	bool an = isnan(a), bn = isnan(b);
	if (an || bn)
		return an - bn;
	if (a < b)
		return -1;
	if (a > b)
		return 1;
	/* equal numbers: only the zeros can still differ, by sign */
	return (int)(signbit(b) != 0) - (int)(signbit(a) != 0);
}

/* Bytewise unsigned, a proper prefix first. */
static int compare_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;
	if (c != 0)
		return c < 0 ? -1 : 1;
	return (alen > blen) - (alen < blen);
}

int tl_ice_value_compare(const tl_ice_type *type, const tl_ice_value *a, const tl_ice_value *b)
{
	switch (type->id) {
	case TL_ICE_BOOLEAN:
		return (int)a->v.b - (int)b->v.b;
	case TL_ICE_INT:
	case TL_ICE_DATE:
		return sign_of((int64_t)a->v.i32 - (int64_t)b->v.i32);
	case TL_ICE_LONG:
	case TL_ICE_TIME:
	case TL_ICE_TIMESTAMP:
	case TL_ICE_TIMESTAMPTZ:
		return (a->v.i64 > b->v.i64) - (a->v.i64 < b->v.i64);
	case TL_ICE_FLOAT:
		return compare_double(a->v.f32, b->v.f32);
	case TL_ICE_DOUBLE:
		return compare_double(a->v.f64, b->v.f64);
	case TL_ICE_DECIMAL:
		return (a->v.dec > b->v.dec) - (a->v.dec < b->v.dec);
	default:
		return compare_bytes(a->ptr, a->len, b->ptr, b->len);
	}
}

/* ---- rendering ---- */

static bool is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

static const char *const keywords[] = {"and", "or", "in", "is", "not", "null", "true", "false"};

/* A column name the parser reads unquoted: an identifier that is not a keyword. */
static bool needs_quotes(const char *name)
{
	if (!is_ident_start(name[0]))
		return true;
	for (const char *p = name; *p; p++)
		if (!is_ident_char(*p))
			return true;
	for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (strcasecmp(name, keywords[i]) == 0)
			return true;
	return false;
}

static void append_quoted(tl_buf *out, const uint8_t *p, size_t n, char quote)
{
	tl_buf_append_byte(out, (uint8_t)quote);
	for (size_t i = 0; i < n; i++) {
		if (p[i] == (uint8_t)quote)
			tl_buf_append_byte(out, (uint8_t)quote);
		tl_buf_append_byte(out, p[i]);
	}
	tl_buf_append_byte(out, (uint8_t)quote);
}

static void append_column(tl_buf *out, const tl_ice_schema *schema, int32_t field_id)
{
	const tl_ice_field *f = schema ? tl_ice_schema_find_id(schema, field_id) : NULL;
	if (f == NULL) {
		/* not in the schema: say which id, though it cannot parse back */
		tl_buf_printf(out, "#%d", (int)field_id);
		return;
	}
	if (needs_quotes(f->name))
		append_quoted(out, (const uint8_t *)f->name, strlen(f->name), '"');
	else
		tl_buf_append_str(out, f->name);
}

/* A literal as the parser takes it back: bare numbers and booleans, everything else quoted. */
static void append_literal(tl_buf *out, const tl_ice_type *type, const tl_ice_value *v)
{
	static const char hex[] = "0123456789abcdef";
	switch (type ? type->id : TL_ICE_STRUCT) {
	case TL_ICE_BOOLEAN:
	case TL_ICE_INT:
	case TL_ICE_LONG:
	case TL_ICE_DECIMAL:
		tl_ice_value_human(type, v, out);
		return;
	case TL_ICE_FLOAT:
	case TL_ICE_DOUBLE: {
		double d = type->id == TL_ICE_FLOAT ? v->v.f32 : v->v.f64;
		if (isfinite(d)) {
			tl_ice_value_human(type, v, out);
			return;
		}
		break;
	}
	case TL_ICE_FIXED:
	case TL_ICE_BINARY:
		/* the human form is base64, but the parser reads hex */
		tl_buf_append_byte(out, '\'');
		for (size_t i = 0; i < v->len; i++) {
			tl_buf_append_byte(out, (uint8_t)hex[v->ptr[i] >> 4]);
			tl_buf_append_byte(out, (uint8_t)hex[v->ptr[i] & 15]);
		}
		tl_buf_append_byte(out, '\'');
		return;
	case TL_ICE_STRUCT:
	case TL_ICE_LIST:
	case TL_ICE_MAP:
		tl_buf_append_str(out, "?");
		return;
	default:
		break;
	}
	tl_buf human;
	tl_buf_init(&human);
	tl_ice_value_human(type, v, &human);
	append_quoted(out, human.data, human.len, '\'');
	tl_buf_free(&human);
}

static const char *comparison_text(tl_ice_expr_op op)
{
	switch (op) {
	case TL_ICE_EXPR_EQ:
		return "=";
	case TL_ICE_EXPR_LT:
		return "<";
	case TL_ICE_EXPR_LE:
		return "<=";
	case TL_ICE_EXPR_GT:
		return ">";
	case TL_ICE_EXPR_GE:
		return ">=";
	case TL_ICE_EXPR_NOT_EQ:
		return "<>";
	case TL_ICE_EXPR_STARTS_WITH:
		return "STARTS WITH";
	case TL_ICE_EXPR_NOT_STARTS_WITH:
		return "NOT STARTS WITH";
	default:
		return "?";
	}
}

static void append_predicate(const tl_ice_expr *e, const tl_ice_schema *schema, tl_buf *out)
{
	const tl_ice_field *f = schema ? tl_ice_schema_find_id(schema, e->field_id) : NULL;
	const tl_ice_type *type = f ? &f->type : NULL;
	append_column(out, schema, e->field_id);
	switch (e->op) {
	case TL_ICE_EXPR_IS_NULL:
		tl_buf_append_str(out, " IS NULL");
		return;
	case TL_ICE_EXPR_NOT_NULL:
		tl_buf_append_str(out, " IS NOT NULL");
		return;
	case TL_ICE_EXPR_IN:
	case TL_ICE_EXPR_NOT_IN:
		tl_buf_append_str(out, e->op == TL_ICE_EXPR_IN ? " IN (" : " NOT IN (");
		for (int i = 0; i < e->nvalues; i++) {
			if (i > 0)
				tl_buf_append_str(out, ", ");
			append_literal(out, type, &e->values[i]);
		}
		tl_buf_append_byte(out, ')');
		return;
	default:
		tl_buf_printf(out, " %s ", comparison_text(e->op));
		if (e->nvalues >= 1)
			append_literal(out, type, &e->values[0]);
		else
			tl_buf_append_str(out, "?");
		return;
	}
}

void tl_ice_expr_text(const tl_ice_expr *expr, const tl_ice_schema *schema, tl_buf *out)
{
	switch (expr->op) {
	case TL_ICE_EXPR_TRUE:
		tl_buf_append_str(out, "TRUE");
		return;
	case TL_ICE_EXPR_FALSE:
		tl_buf_append_str(out, "FALSE");
		return;
	case TL_ICE_EXPR_OR:
		/* AND binds tighter and OR associates: no child needs parentheses */
		tl_ice_expr_text(expr->left, schema, out);
		tl_buf_append_str(out, " OR ");
		tl_ice_expr_text(expr->right, schema, out);
		return;
	case TL_ICE_EXPR_AND:
		for (int side = 0; side < 2; side++) {
			const tl_ice_expr *child = side == 0 ? expr->left : expr->right;
			if (side == 1)
				tl_buf_append_str(out, " AND ");
			if (child->op == TL_ICE_EXPR_OR)
				tl_buf_append_byte(out, '(');
			tl_ice_expr_text(child, schema, out);
			if (child->op == TL_ICE_EXPR_OR)
				tl_buf_append_byte(out, ')');
		}
		return;
	default:
		append_predicate(expr, schema, out);
		return;
	}
}
