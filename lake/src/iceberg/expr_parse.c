/*
 * expr_parse.c: reads the filter syntax of iceberg_expr.h, for tools and
 * tests that pass row filters as text:
 *
 *   filter     := or
 *   or         := and { OR and }
 *   and        := primary { AND primary }
 *   primary    := '(' or ')' | TRUE | FALSE | predicate
 *   predicate  := column op literal | literal op column
 *               | column [NOT] IN '(' literal { ',' literal } ')'
 *               | column IS [NOT] NULL
 *               | column [NOT] STARTS WITH literal
 *   op         := '=' | '<' | '<=' | '>' | '>=' | '<>' | '!='
 *
 * Columns are top-level names, bare (letters, digits, '_') or double-quoted
 * ("" for a quote). Literals are numbers, TRUE/FALSE or single-quoted text
 * ('' for a quote); each is converted by tl_ice_value_parse for the
 * column's type from its source text, so decimals keep their exact digits.
 * Keywords are case-insensitive; STARTS and WITH are keywords only where
 * an operator is expected, so columns may still have those names. STARTS
 * WITH takes string columns only. Errors name the 1-based character position.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tierlake/iceberg_expr.h"

/* Deeper nesting than any person writes; it bounds the recursion. */
#define MAX_DEPTH 200

#define SUPPORTED_OPERATORS                                                                                   \
	"the supported operators are =, <, <=, >, >=, <>, [NOT] IN, IS [NOT] NULL and [NOT] STARTS WITH, joined " \
	"with AND and OR"

typedef enum token_kind {
	TOK_END,
	TOK_WORD,       /* bare identifier or keyword */
	TOK_QUOTED_ID,  /* "column" */
	TOK_STRING,     /* 'text' */
	TOK_NUMBER,
	TOK_LPAREN,
	TOK_RPAREN,
	TOK_COMMA,
	TOK_OP,         /* one of the comparison operators */
	TOK_BAD_OP      /* an operator we do not support, such as == */
} token_kind;

typedef struct token {
	token_kind kind;
	size_t pos;          /* offset of the first character */
	size_t len;          /* of the source text */
	const char *text;    /* NUL-terminated: decoded quoted text, or a copy of the source */
	tl_ice_expr_op op;   /* TOK_OP */
} token;

typedef struct parser {
	const char *src;
	size_t at;                  /* next character to lex */
	token tok;                  /* current token */
	const tl_ice_schema *schema;
	tl_arena *arena;            /* the caller's: the tree and its values */
	tl_arena scratch;           /* token texts, freed when parsing ends */
	tl_ice_value *list;         /* IN literals being collected */
	int nlist, caplist;
	int depth;
	tl_error *err;
} parser;

static int fail(parser *p, size_t pos, const char *what)
{
	return tl_error_set(p->err, TL_ERR_INVALID, "filter: %s at position %zu", what, pos + 1);
}

static bool is_word_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const char *copy_text(parser *p, const char *s, size_t n)
{
	char *c = tl_arena_alloc(&p->scratch, n + 1);
	if (c == NULL)
		return NULL;
	memcpy(c, s, n);
	c[n] = '\0';
	return c;
}

/* A quoted run starting at p->at (the quote); a doubled quote stands for one. */
static int lex_quoted(parser *p, char quote, token *t)
{
	const char *s = p->src;
	size_t end = p->at + 1, n = 0;
	/* find the closing quote first, so the copy is sized by this token alone */
	for (;; end++, n++) {
		if (s[end] == '\0')
			return fail(p, p->at, quote == '\'' ? "unterminated string" : "unterminated quoted column name");
		if (s[end] == quote) {
			if (s[end + 1] != quote)
				break;
			end++;
		}
	}
	char *out = tl_arena_alloc(&p->scratch, n + 1);
	if (out == NULL)
		return tl_error_nomem(p->err, "parsing a filter");
	n = 0;
	for (size_t i = p->at + 1; i < end; i++) {
		if (s[i] == quote)
			i++;  /* the first of a doubled quote */
		out[n++] = s[i];
	}
	out[n] = '\0';
	t->text = out;
	t->len = end + 1 - p->at;
	return 0;
}

/* [+-] digits [. digits] [e [+-] digits], or the same starting at the point. */
static size_t number_length(const char *s)
{
	size_t i = 0;
	if (s[i] == '+' || s[i] == '-')
		i++;
	size_t digits = 0;
	while (is_digit(s[i]))
		i++, digits++;
	if (s[i] == '.') {
		i++;
		while (is_digit(s[i]))
			i++, digits++;
	}
	if (digits == 0)
		return 0;
	if (s[i] == 'e' || s[i] == 'E') {
		size_t j = i + 1;
		if (s[j] == '+' || s[j] == '-')
			j++;
		if (is_digit(s[j])) {
			while (is_digit(s[j]))
				j++;
			i = j;
		}
	}
	return i;
}

static int lex_operator(parser *p, token *t)
{
	const char *s = p->src + p->at;
	static const struct {
		const char *text;
		token_kind kind;
		tl_ice_expr_op op;
	} ops[] = {
		{"<=", TOK_OP, TL_ICE_EXPR_LE}, {">=", TOK_OP, TL_ICE_EXPR_GE}, {"<>", TOK_OP, TL_ICE_EXPR_NOT_EQ},
		{"!=", TOK_OP, TL_ICE_EXPR_NOT_EQ},          {"==", TOK_BAD_OP, 0},          {"=", TOK_OP, TL_ICE_EXPR_EQ},
		{"<", TOK_OP, TL_ICE_EXPR_LT},  {">", TOK_OP, TL_ICE_EXPR_GT},  {"!", TOK_BAD_OP, 0},
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i].text);
		if (strncmp(s, ops[i].text, n) == 0) {
			t->kind = ops[i].kind;
			t->op = ops[i].op;
			t->len = n;
			t->text = ops[i].text;
			return 0;
		}
	}
	char what[64];
	unsigned char c = (unsigned char)*s;
	if (c >= 0x20 && c < 0x7f)
		snprintf(what, sizeof(what), "unexpected character '%c'", c);
	else
		snprintf(what, sizeof(what), "unexpected byte 0x%02x", c);
	return fail(p, p->at, what);
}

/* Reads the next token into p->tok. */
static int next(parser *p)
{
	const char *s = p->src;
	while (s[p->at] == ' ' || s[p->at] == '\t' || s[p->at] == '\n' || s[p->at] == '\r')
		p->at++;
	token *t = &p->tok;
	memset(t, 0, sizeof(*t));
	t->pos = p->at;
	char c = s[p->at];
	size_t n;
	if (c == '\0') {
		t->kind = TOK_END;
		t->text = "end of filter";
	} else if (c == '(' || c == ')' || c == ',') {
		t->kind = c == '(' ? TOK_LPAREN : c == ')' ? TOK_RPAREN : TOK_COMMA;
		t->len = 1;
		t->text = c == '(' ? "(" : c == ')' ? ")" : ",";
	} else if (c == '\'' || c == '"') {
		t->kind = c == '\'' ? TOK_STRING : TOK_QUOTED_ID;
		if (lex_quoted(p, c, t) < 0)
			return -1;
	} else if ((n = number_length(s + p->at)) > 0) {
		t->kind = TOK_NUMBER;
		t->len = n;
		t->text = copy_text(p, s + p->at, n);
	} else if (is_word_start(c)) {
		n = 1;
		while (is_word_start(s[p->at + n]) || is_digit(s[p->at + n]))
			n++;
		t->kind = TOK_WORD;
		t->len = n;
		t->text = copy_text(p, s + p->at, n);
	} else if (lex_operator(p, t) < 0) {
		return -1;
	}
	if (t->text == NULL && (t->kind == TOK_NUMBER || t->kind == TOK_WORD))
		return tl_error_nomem(p->err, "parsing a filter");
	p->at += t->len;
	return 0;
}

static bool is_keyword(const token *t, const char *kw)
{
	return t->kind == TOK_WORD && strcasecmp(t->text, kw) == 0;
}

static bool is_any_keyword(const token *t)
{
	static const char *const kws[] = {"and", "or", "in", "is", "not", "null", "true", "false"};
	for (size_t i = 0; i < sizeof(kws) / sizeof(kws[0]); i++)
		if (is_keyword(t, kws[i]))
			return true;
	return false;
}

static bool is_column(const token *t)
{
	return t->kind == TOK_QUOTED_ID || (t->kind == TOK_WORD && !is_any_keyword(t));
}

static bool is_literal(const token *t)
{
	return t->kind == TOK_STRING || t->kind == TOK_NUMBER || is_keyword(t, "true") || is_keyword(t, "false");
}

static int unsupported_operator(parser *p)
{
	char what[TL_ERROR_MESSAGE_MAX / 2];
	snprintf(what, sizeof(what), "operator \"%.*s\" is not supported (%s)", (int)p->tok.len,
	         p->src + p->tok.pos, SUPPORTED_OPERATORS);
	return fail(p, p->tok.pos, what);
}

static int unexpected(parser *p, const char *expected)
{
	if (p->tok.kind == TOK_BAD_OP || is_keyword(&p->tok, "not"))
		return unsupported_operator(p);
	char what[TL_ERROR_MESSAGE_MAX / 2];
	if (p->tok.kind == TOK_END)
		snprintf(what, sizeof(what), "expected %s, found the end of the filter", expected);
	else
		snprintf(what, sizeof(what), "expected %s, found \"%.*s\"", expected, (int)p->tok.len,
		         p->src + p->tok.pos);
	return fail(p, p->tok.pos, what);
}

/* The current token names a column: resolves it and moves on. */
static const tl_ice_field *column(parser *p)
{
	const token *t = &p->tok;
	const tl_ice_field *f = NULL;
	for (int i = 0; i < p->schema->nfields; i++)
		if (strcmp(p->schema->fields[i].name, t->text) == 0)
			f = &p->schema->fields[i];
	char what[TL_ERROR_MESSAGE_MAX / 2];
	if (f == NULL) {
		snprintf(what, sizeof(what), "unknown column \"%s\"", t->text);
		fail(p, t->pos, what);
		return NULL;
	}
	if (!tl_ice_type_is_primitive(f->type.id)) {
		snprintf(what, sizeof(what), "column \"%s\" is not of a primitive type, so it cannot be compared", t->text);
		fail(p, t->pos, what);
		return NULL;
	}
	if (next(p) < 0)
		return NULL;
	return f;
}

/* Converts a literal token for the column; the token itself is not consumed. */
static int literal_value(parser *p, const token *t, const tl_ice_field *f, tl_ice_value *out)
{
	const char *text = t->text;
	if (is_keyword(t, "true"))
		text = "true";
	else if (is_keyword(t, "false"))
		text = "false";
	if (tl_ice_value_parse(&f->type, text, p->arena, out, p->err) < 0) {
		tl_error_prefix(p->err, "filter: literal at position %zu for column \"%s\"", t->pos + 1, f->name);
		return -1;
	}
	return 0;
}

static int expect_literal(parser *p, const tl_ice_field *f, tl_ice_value *out)
{
	if (is_keyword(&p->tok, "null"))
		return fail(p, p->tok.pos, "NULL is not a value to compare with; use IS NULL or IS NOT NULL");
	if (!is_literal(&p->tok))
		return unexpected(p, "a literal (a number, TRUE, FALSE or 'text')");
	if (literal_value(p, &p->tok, f, out) < 0)
		return -1;
	return next(p);
}

static int list_push(parser *p, const tl_ice_value *v)
{
	if (p->nlist == p->caplist) {
		int cap = p->caplist ? 2 * p->caplist : 8;
		tl_ice_value *list = tl_realloc(p->list, (size_t)cap * sizeof(*p->list));
		if (list == NULL)
			return tl_error_nomem(p->err, "parsing a filter");
		p->list = list, p->caplist = cap;
	}
	p->list[p->nlist++] = *v;
	return 0;
}

/* column [NOT] IN ( literal, ... ): the current token follows IN; op is IN or NOT_IN. */
static const tl_ice_expr *in_list(parser *p, const tl_ice_field *f, tl_ice_expr_op op)
{
	if (p->tok.kind != TOK_LPAREN) {
		unexpected(p, "\"(\" after IN");
		return NULL;
	}
	p->nlist = 0;
	do {
		tl_ice_value v;
		if (next(p) < 0 || expect_literal(p, f, &v) < 0 || list_push(p, &v) < 0)
			return NULL;
	} while (p->tok.kind == TOK_COMMA);
	if (p->tok.kind != TOK_RPAREN) {
		unexpected(p, "\",\" or \")\" in the IN list");
		return NULL;
	}
	if (next(p) < 0)
		return NULL;
	return tl_ice_expr_predicate(p->arena, op, f->id, p->list, p->nlist);
}

/* column [NOT] STARTS WITH 'prefix': the current token follows STARTS; op is STARTS_WITH or NOT_STARTS_WITH. */
static const tl_ice_expr *prefix_test(parser *p, const tl_ice_field *f, size_t starts_pos, tl_ice_expr_op op)
{
	if (!is_keyword(&p->tok, "with")) {
		unexpected(p, "WITH after STARTS");
		return NULL;
	}
	if (f->type.id != TL_ICE_STRING) {
		char what[TL_ERROR_MESSAGE_MAX / 2];
		snprintf(what, sizeof(what), "STARTS WITH takes a string column, and \"%s\" is not one", f->name);
		fail(p, starts_pos, what);
		return NULL;
	}
	tl_ice_value v;
	if (next(p) < 0 || expect_literal(p, f, &v) < 0)
		return NULL;
	return tl_ice_expr_predicate(p->arena, op, f->id, &v, 1);
}

/* column IS [NOT] NULL: the current token follows IS. */
static const tl_ice_expr *null_test(parser *p, const tl_ice_field *f)
{
	tl_ice_expr_op op = TL_ICE_EXPR_IS_NULL;
	if (is_keyword(&p->tok, "not")) {
		op = TL_ICE_EXPR_NOT_NULL;
		if (next(p) < 0)
			return NULL;
	}
	if (!is_keyword(&p->tok, "null")) {
		unexpected(p, op == TL_ICE_EXPR_IS_NULL ? "NULL or NOT NULL after IS" : "NULL after IS NOT");
		return NULL;
	}
	if (next(p) < 0)
		return NULL;
	return tl_ice_expr_predicate(p->arena, op, f->id, NULL, 0);
}

static tl_ice_expr_op flipped(tl_ice_expr_op op)
{
	switch (op) {
	case TL_ICE_EXPR_LT:
		return TL_ICE_EXPR_GT;
	case TL_ICE_EXPR_LE:
		return TL_ICE_EXPR_GE;
	case TL_ICE_EXPR_GT:
		return TL_ICE_EXPR_LT;
	case TL_ICE_EXPR_GE:
		return TL_ICE_EXPR_LE;
	default:
		return op;
	}
}

/* literal op column, read as column (flipped op) literal. */
static const tl_ice_expr *reversed_comparison(parser *p)
{
	token lit = p->tok;
	if (next(p) < 0)
		return NULL;
	if (p->tok.kind != TOK_OP) {
		unexpected(p, "a comparison operator after the literal");
		return NULL;
	}
	tl_ice_expr_op op = flipped(p->tok.op);
	if (next(p) < 0)
		return NULL;
	if (!is_column(&p->tok)) {
		unexpected(p, "a column name");
		return NULL;
	}
	const tl_ice_field *f = column(p);
	tl_ice_value v;
	if (f == NULL || literal_value(p, &lit, f, &v) < 0)
		return NULL;
	return tl_ice_expr_predicate(p->arena, op, f->id, &v, 1);
}

static const tl_ice_expr *predicate(parser *p)
{
	if (is_literal(&p->tok))
		return reversed_comparison(p);
	if (!is_column(&p->tok)) {
		unexpected(p, "a column name");
		return NULL;
	}
	const tl_ice_field *f = column(p);
	if (f == NULL)
		return NULL;
	bool negated = is_keyword(&p->tok, "not");
	if (negated && next(p) < 0)
		return NULL;
	if (is_keyword(&p->tok, "in")) {
		if (next(p) < 0)
			return NULL;
		return in_list(p, f, negated ? TL_ICE_EXPR_NOT_IN : TL_ICE_EXPR_IN);
	}
	if (is_keyword(&p->tok, "starts")) {
		size_t pos = p->tok.pos;
		if (next(p) < 0)
			return NULL;
		return prefix_test(p, f, pos, negated ? TL_ICE_EXPR_NOT_STARTS_WITH : TL_ICE_EXPR_STARTS_WITH);
	}
	if (negated) {
		unexpected(p, "IN or STARTS WITH after NOT");
		return NULL;
	}
	if (is_keyword(&p->tok, "is")) {
		if (next(p) < 0)
			return NULL;
		return null_test(p, f);
	}
	if (p->tok.kind != TOK_OP) {
		unexpected(p, "a comparison operator, [NOT] IN, IS or [NOT] STARTS WITH");
		return NULL;
	}
	tl_ice_expr_op op = p->tok.op;
	if (next(p) < 0)
		return NULL;
	if (is_column(&p->tok)) {
		fail(p, p->tok.pos, "comparing two columns is not supported");
		return NULL;
	}
	tl_ice_value v;
	if (expect_literal(p, f, &v) < 0)
		return NULL;
	return tl_ice_expr_predicate(p->arena, op, f->id, &v, 1);
}

static const tl_ice_expr *or_expr(parser *p);

static const tl_ice_expr *primary(parser *p)
{
	if (p->tok.kind == TOK_LPAREN) {
		if (++p->depth > MAX_DEPTH) {
			fail(p, p->tok.pos, "parentheses nest too deeply");
			return NULL;
		}
		if (next(p) < 0)
			return NULL;
		const tl_ice_expr *e = or_expr(p);
		if (e == NULL)
			return NULL;
		if (p->tok.kind != TOK_RPAREN) {
			unexpected(p, "\")\"");
			return NULL;
		}
		p->depth--;
		return next(p) < 0 ? NULL : e;
	}
	/* TRUE or FALSE alone is a constant; followed by an operator it is a literal */
	if (is_keyword(&p->tok, "true") || is_keyword(&p->tok, "false")) {
		size_t save = p->at;
		token kw = p->tok;
		if (next(p) < 0)
			return NULL;
		if (p->tok.kind != TOK_OP) {
			return tl_ice_expr_const(p->arena, is_keyword(&kw, "true"));
		}
		p->at = save;
		p->tok = kw;
	}
	return predicate(p);
}

static const tl_ice_expr *and_expr(parser *p)
{
	const tl_ice_expr *e = primary(p);
	while (e != NULL && is_keyword(&p->tok, "and")) {
		if (next(p) < 0)
			return NULL;
		const tl_ice_expr *right = primary(p);
		e = right ? tl_ice_expr_and(p->arena, e, right) : NULL;
	}
	return e;
}

static const tl_ice_expr *or_expr(parser *p)
{
	const tl_ice_expr *e = and_expr(p);
	while (e != NULL && is_keyword(&p->tok, "or")) {
		if (next(p) < 0)
			return NULL;
		const tl_ice_expr *right = and_expr(p);
		e = right ? tl_ice_expr_or(p->arena, e, right) : NULL;
	}
	return e;
}

int tl_ice_expr_parse(const tl_ice_schema *schema, const char *text, tl_arena *arena,
                      const tl_ice_expr **out, tl_error *err)
{
	parser p;
	memset(&p, 0, sizeof(p));
	p.src = text;
	p.schema = schema;
	p.arena = arena;
	p.err = err;
	tl_arena_init(&p.scratch, 1024);
	*out = NULL;
	const tl_ice_expr *e = NULL;
	if (next(&p) == 0) {
		if (p.tok.kind == TOK_END)
			fail(&p, 0, "the filter is empty");
		else
			e = or_expr(&p);
	}
	if (e != NULL && p.tok.kind != TOK_END) {
		unexpected(&p, "AND, OR or the end of the filter");
		e = NULL;
	}
	tl_arena_free(&p.scratch);
	tl_free(p.list);
	if (e == NULL) {
		/* Every refusal above sets err; a constructor out of memory does not. */
		if (err == NULL || err->code == TL_OK)
			tl_error_nomem(err, "parsing a filter");
		return -1;
	}
	*out = e;
	return 0;
}
