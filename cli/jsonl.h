/*
 * jsonl.h: one line of JSONL as the flat object ingest takes (ingest.h).
 *
 * A general JSON library turns numbers into doubles or 64-bit integers,
 * so 1234567890123456789.5 and -0 would reach a numeric or float column
 * changed; ingest hands Postgres every number exactly as written instead
 * (its input functions then keep it or refuse it). So this parser keeps
 * each member's value as text: a number's own characters, a string's
 * decoded bytes, a nested object's or array's raw JSON. The grammar is
 * RFC 8259's, checked in full (nested values too); a key given twice is
 * an error.
 */
#ifndef TIERDB_JSONL_H
#define TIERDB_JSONL_H

#include <stddef.h>

#include "tierlake/buf.h"

typedef enum tdb_json_kind {
	TDB_JSON_NULL = 0,
	TDB_JSON_TRUE,
	TDB_JSON_FALSE,
	TDB_JSON_NUMBER, /* text: the number as written */
	TDB_JSON_STRING, /* text: the decoded UTF-8 bytes (may hold NUL) */
	TDB_JSON_NESTED  /* text: an object's or array's JSON text as written */
} tdb_json_kind;

typedef struct tdb_json_member {
	const char *key; /* decoded, NUL-terminated */
	tdb_json_kind kind;
	const char *text;
	size_t len;
} tdb_json_member;

typedef struct tdb_json_object {
	tdb_json_member *members;
	int nmembers, cap;
	tl_buf decoded;  /* the decoded keys and strings (members point into it once parsing ends) */
} tdb_json_object;

void tdb_json_object_init(tdb_json_object *o);
void tdb_json_object_free(tdb_json_object *o);

/*
 * Parses `line` (len bytes) as one JSON object into o (its previous
 * contents replaced). 0, or -1 with `why` (at most whylen bytes) saying
 * what is wrong and at which character (1-based).
 */
int tdb_json_parse_object(const char *line, size_t len, tdb_json_object *o, char *why, size_t whylen);

#endif
