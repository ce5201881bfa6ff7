/*
 * jsonl.c: a JSONL line as a flat object whose values stay text (jsonl.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"

/* Nested values deeper than this are refused (the recursion is bounded). */
#define MAX_DEPTH 512

typedef struct parser {
	const char *s;
	size_t len, pos;
	char *why;
	size_t whylen;
	int failed;
} parser;

static int fail(parser *p, const char *what)
{
	if (!p->failed)
		snprintf(p->why, p->whylen, "%s at character %zu", what, p->pos + 1);
	p->failed = 1;
	return -1;
}

static void skip_space(parser *p)
{
	while (p->pos < p->len &&
	       (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static int hex4(parser *p, uint32_t *out)
{
	if (p->len - p->pos < 4)
		return fail(p, "a \\u escape needs four hex digits");
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p->s[p->pos++];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return fail(p, "a \\u escape needs four hex digits");
	}
	*out = v;
	return 0;
}

/* A string at p->pos ('"'), decoded into out (NULL: only checked). */
static int string(parser *p, tl_buf *out)
{
	p->pos++; /* the opening quote */
	while (p->pos < p->len) {
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c == '"') {
			p->pos++;
			return 0;
		}
		if (c < 0x20)
			return fail(p, "a control character must be escaped in a string");
		if (c != '\\') {
			if (out != NULL)
				tl_buf_append_byte(out, c);
			p->pos++;
			continue;
		}
		if (++p->pos >= p->len)
			break;
		char e = p->s[p->pos++];
		uint32_t cp;
		switch (e) {
		case '"': cp = '"'; break;
		case '\\': cp = '\\'; break;
		case '/': cp = '/'; break;
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			if (hex4(p, &cp) < 0)
				return -1;
			if (cp >= 0xD800 && cp < 0xDC00) {
				uint32_t low;
				if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
					return fail(p, "a high surrogate must be followed by a low one");
				p->pos += 2;
				if (hex4(p, &low) < 0)
					return -1;
				if (low < 0xDC00 || low >= 0xE000)
					return fail(p, "a high surrogate must be followed by a low one");
				cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
			} else if (cp >= 0xDC00 && cp < 0xE000) {
				return fail(p, "a low surrogate without a high one");
			}
			break;
		default: p->pos--; return fail(p, "an unknown escape in a string");
		}
		if (out != NULL)
			tl_buf_append_utf8(out, cp);
	}
	return fail(p, "a string is not closed");
}

static bool digit(parser *p)
{
	return p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9';
}

/* A number at p->pos, checked against RFC 8259's grammar. */
static int number(parser *p)
{
	if (p->pos < p->len && p->s[p->pos] == '-')
		p->pos++;
	if (!digit(p))
		return fail(p, "a number needs a digit");
	if (p->s[p->pos] == '0')
		p->pos++;
	else
		while (digit(p))
			p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		if (!digit(p))
			return fail(p, "a number needs a digit after its point");
		while (digit(p))
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (!digit(p))
			return fail(p, "a number needs a digit in its exponent");
		while (digit(p))
			p->pos++;
	}
	return 0;
}

static int literal(parser *p, const char *word)
{
	size_t n = strlen(word);
	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return fail(p, "not a JSON value");
	p->pos += n;
	return 0;
}

static int value(parser *p, int depth);

/* An object or array at p->pos, checked (its text is taken by the caller). */
static int nested(parser *p, int depth)
{
	if (depth > MAX_DEPTH)
		return fail(p, "values are nested too deeply");
	char close = p->s[p->pos] == '{' ? '}' : ']';
	bool object = close == '}';
	p->pos++;
	skip_space(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		skip_space(p);
		if (object) {
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return fail(p, "an object's key must be a string");
			if (string(p, NULL) < 0)
				return -1;
			skip_space(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return fail(p, "a key must be followed by ':'");
			p->pos++;
			skip_space(p);
		}
		if (value(p, depth + 1) < 0)
			return -1;
		skip_space(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			return 0;
		}
		return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int value(parser *p, int depth)
{
	if (p->pos >= p->len)
		return fail(p, "a value is missing");
	switch (p->s[p->pos]) {
	case '"': return string(p, NULL);
	case '{':
	case '[': return nested(p, depth);
	case 't': return literal(p, "true");
	case 'f': return literal(p, "false");
	case 'n': return literal(p, "null");
	default: return number(p);
	}
}

void tdb_json_object_init(tdb_json_object *o)
{
	memset(o, 0, sizeof(*o));
	tl_buf_init(&o->decoded);
}

void tdb_json_object_free(tdb_json_object *o)
{
	free(o->members);
	tl_buf_free(&o->decoded);
}

/* Offsets into `decoded` while parsing (it may move as it grows). */
typedef struct pending {
	size_t key, text;
} pending;

int tdb_json_parse_object(const char *line, size_t len, tdb_json_object *o, char *why, size_t whylen)
{
	parser p = {line, len, 0, why, whylen, 0};
	o->nmembers = 0;
	tl_buf_reset(&o->decoded);
	pending *offsets = NULL;
	int rc = 0;
	skip_space(&p);
	if (p.pos >= p.len || line[p.pos] != '{') {
		fail(&p, "each line must be one JSON object (keys are column names)");
		return -1;
	}
	p.pos++;
	skip_space(&p);
	bool empty = p.pos < p.len && line[p.pos] == '}';
	if (empty)
		p.pos++;
	while (!empty && rc == 0) {
		skip_space(&p);
		if (p.pos >= p.len || line[p.pos] != '"') {
			rc = fail(&p, "an object's key must be a string");
			break;
		}
		if (o->nmembers == o->cap) {
			int cap = o->cap ? 2 * o->cap : 16;
			tdb_json_member *members = realloc(o->members, (size_t)cap * sizeof(*members));
			if (members == NULL) {
				rc = fail(&p, "out of memory");
				break;
			}
			o->members = members;
			o->cap = cap;
		}
		pending *grown = realloc(offsets, (size_t)o->cap * sizeof(*offsets));
		if (grown == NULL) {
			rc = fail(&p, "out of memory");
			break;
		}
		offsets = grown;
		tdb_json_member *m = &o->members[o->nmembers];
		pending *at = &offsets[o->nmembers];
		at->key = o->decoded.len;
		if (string(&p, &o->decoded) < 0) {
			rc = -1;
			break;
		}
		tl_buf_append_byte(&o->decoded, 0);
		skip_space(&p);
		if (p.pos >= p.len || line[p.pos] != ':') {
			rc = fail(&p, "a key must be followed by ':'");
			break;
		}
		p.pos++;
		skip_space(&p);
		size_t start = p.pos;
		char c = p.pos < p.len ? line[p.pos] : '\0';
		at->text = (size_t)-1;
		if (c == '"') {
			m->kind = TDB_JSON_STRING;
			at->text = o->decoded.len;
			rc = string(&p, &o->decoded);
			m->len = o->decoded.len - at->text;
		} else {
			rc = value(&p, 1);
			m->kind = c == 'n' ? TDB_JSON_NULL : c == 't' ? TDB_JSON_TRUE : c == 'f' ? TDB_JSON_FALSE
			        : (c == '{' || c == '[') ? TDB_JSON_NESTED : TDB_JSON_NUMBER;
			m->text = line + start;
			m->len = p.pos - start;
		}
		o->nmembers++;
		skip_space(&p);
		if (rc == 0 && p.pos < p.len && line[p.pos] == ',') {
			p.pos++;
			continue;
		}
		if (rc == 0 && p.pos < p.len && line[p.pos] == '}') {
			p.pos++;
			break;
		}
		if (rc == 0)
			rc = fail(&p, "expected ',' or '}'");
	}
	skip_space(&p);
	if (rc == 0 && p.pos < p.len)
		rc = fail(&p, "text follows the object");
	if (rc == 0 && tl_buf_failed(&o->decoded))
		rc = fail(&p, "out of memory");
	if (rc == 0) {
		const char *base = (const char *)o->decoded.data;
		for (int i = 0; i < o->nmembers; i++) {
			o->members[i].key = base + offsets[i].key;
			if (offsets[i].text != (size_t)-1)
				o->members[i].text = base + offsets[i].text;
		}
		for (int i = 0; i < o->nmembers && rc == 0; i++)
			for (int k = 0; k < i && rc == 0; k++)
				if (strcmp(o->members[i].key, o->members[k].key) == 0) {
					snprintf(why, whylen, "the key \"%s\" is given twice", o->members[i].key);
					rc = -1;
				}
	}
	free(offsets);
	return rc;
}
