/*-------------------------------------------------------------------------
 *
 * delta_keys.h
 *		The keys tierdb.delta holds for a table, matched against lake rows
 *		by value.
 *
 * The delta names a row by the canonical text of its primary key (SPEC
 * §4): one part's text, or the parts joined by chr(31) with '\' and chr(31)
 * escaped by '\'.  Comparing texts would make the merge depend on the
 * reader's session: a timestamptz key prints differently under another
 * TimeZone or DateStyle.  So each text is parsed back into typed values,
 * the way the daemon parses it (DateStyle ISO, TimeZone UTC), and lake rows
 * are matched with the key types' own hash and equality functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_DELTA_KEYS_H
#define TIERDB_DELTA_KEYS_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "nodes/pg_list.h"

typedef struct DeltaKeys DeltaKeys;

/*
 * An empty set for keys made of the attributes pk_attnos of tupdesc, in
 * the current memory context.  ERROR if a key type has no hash or
 * equality function (such a key cannot be matched).
 */
extern DeltaKeys *delta_keys_create(TupleDesc tupdesc, int npk, const AttrNumber *pk_attnos);

/* Adds the canonical texts (a List of char *); ERROR naming a text that does not parse. */
extern void delta_keys_add_texts(DeltaKeys *keys, List *texts);

/* Adds the key of a row (values and isnull indexed by attno - 1; no part NULL), copying its values. */
extern void delta_keys_add_row(DeltaKeys *keys, const Datum *values, const bool *isnull);

/* Whether the row (values and isnull indexed by attno - 1) has one of the keys. */
extern bool delta_keys_contains(DeltaKeys *keys, const Datum *values, const bool *isnull);

#endif							/* TIERDB_DELTA_KEYS_H */
