/*-------------------------------------------------------------------------
 *
 * group_keys.h
 *		The groups of a batch of lake rows, found from the bytes of their
 *		key values as the batch's vectors hold them: no tuple is made and no
 *		Postgres hash function called per row (the cold aggregate,
 *		cold_agg.c).
 *
 * Rows whose key values have equal bytes are in one group: a column's
 * conversion to a Datum is a function of the stored value. The converse
 * need not hold (-0 and +0, two strings a collation equates), so the
 * groups themselves stay where Postgres' equality decides them (the
 * caller's tuple hash table): the first row of each distinct key bytes is
 * looked up there, through the caller's callback, and several key bytes
 * may lead to one group.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_GROUP_KEYS_H
#define TIERDB_GROUP_KEYS_H

#include "postgres.h"

#include "agg_states.h"
#include "lake_scan.h"

typedef struct GroupKeys GroupKeys;

/* The states of the group of row `row` of the lake's current batch, its key values converted. */
typedef PartialState *(*GroupLookup) (void *arg, LakeScan *lake, int32 row);

/* Keys over the attributes attnos (kept, not copied), allocated in cxt. */
extern GroupKeys *group_keys_create(MemoryContext cxt, int nkeys, const AttrNumber *attnos,
									GroupLookup lookup, void *arg);

/* The states of each row's group: groups[i] for batch->rows[i]. */
extern void group_keys_find(GroupKeys *keys, LakeScan *lake, const LakeBatch *batch, PartialState **groups);

#endif							/* TIERDB_GROUP_KEYS_H */
