/*-------------------------------------------------------------------------
 *
 * group_keys.c
 *		Finding a batch's groups by the bytes of their keys: see
 *		group_keys.h.
 *
 * A row's key is encoded as, per key column, a null flag and then the
 * stored value: its fixed-width bytes, or a string's length and bytes.
 * The encodings map to the groups' states in a simplehash table. With a
 * single string key, a dictionary-encoded column's rows share the views
 * of its dictionary's values, so a small cache by view, emptied with each
 * batch, spares most rows even the encoding and the hash.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/stringinfo.h"

#include "group_keys.h"
#include "lake_values.h"

typedef struct KeyBytes
{
	const char *data;
	uint32		len;
} KeyBytes;

typedef struct KeyEntry
{
	KeyBytes	key;
	uint32		hash;
	char		status;			/* simplehash's */
	PartialState *states;
} KeyEntry;

static inline uint32
key_hash(KeyBytes key)
{
	return hash_bytes((const unsigned char *) key.data, (int) key.len);
}

#define SH_PREFIX keytab
#define SH_ELEMENT_TYPE KeyEntry
#define SH_KEY_TYPE KeyBytes
#define SH_KEY key
#define SH_HASH_KEY(tb, k) key_hash(k)
#define SH_EQUAL(tb, a, b) ((a).len == (b).len && memcmp((a).data, (b).data, (a).len) == 0)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) (a)->hash
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * The views cache: open addressing over a few times the distinct values a
 * dictionary page usually holds, so that colliding views do not evict each
 * other; a full neighbourhood just means the row takes the encoded path.
 */
#define VIEW_SLOTS 256
#define VIEW_PROBES 8

typedef struct ViewSlot
{
	const uint8_t *ptr;
	uint32		len;
	uint32		batch;			/* the batch it was filled in: older slots are empty */
	PartialState *states;
} ViewSlot;

struct GroupKeys
{
	MemoryContext cxt;
	keytab_hash *table;
	int			nkeys;
	const AttrNumber *attnos;
	GroupLookup lookup;
	void	   *lookup_arg;
	StringInfoData encoded;		/* the current row's key */
	const tl_vector **vectors;	/* per key, in the current batch */
	tl_pq_physical *physical;
	ViewSlot	views[VIEW_SLOTS];
	uint32		batch;			/* batches seen, from 1 */
};

GroupKeys *
group_keys_create(MemoryContext cxt, int nkeys, const AttrNumber *attnos, GroupLookup lookup, void *arg)
{
	GroupKeys  *g = MemoryContextAllocZero(cxt, sizeof(GroupKeys));
	MemoryContext old = MemoryContextSwitchTo(cxt);

	g->cxt = cxt;
	g->table = keytab_create(cxt, 256, NULL);
	g->nkeys = nkeys;
	g->attnos = attnos;
	g->lookup = lookup;
	g->lookup_arg = arg;
	initStringInfo(&g->encoded);
	g->vectors = palloc0(sizeof(tl_vector *) * nkeys);
	g->physical = palloc0(sizeof(tl_pq_physical) * nkeys);
	MemoryContextSwitchTo(old);
	return g;
}

/* Row `row`'s key into g->encoded. */
static void
encode_key(GroupKeys *g, int32 row)
{
	resetStringInfo(&g->encoded);
	for (int k = 0; k < g->nkeys; k++)
	{
		const tl_vector *vec = g->vectors[k];

		if (tl_vector_is_null(vec, row))
		{
			appendStringInfoChar(&g->encoded, 0);
			continue;
		}
		appendStringInfoChar(&g->encoded, 1);
		switch (g->physical[k])
		{
			case TL_PQ_BOOLEAN:
				appendStringInfoChar(&g->encoded, vec->v.b[row] != 0);
				break;
			case TL_PQ_INT32:
				appendBinaryStringInfo(&g->encoded, (const char *) &vec->v.i32[row], sizeof(int32_t));
				break;
			case TL_PQ_FLOAT:
				appendBinaryStringInfo(&g->encoded, (const char *) &vec->v.f32[row], sizeof(float));
				break;
			case TL_PQ_INT64:
			case TL_PQ_INT96:	/* read as int64 */
				appendBinaryStringInfo(&g->encoded, (const char *) &vec->v.i64[row], sizeof(int64_t));
				break;
			case TL_PQ_DOUBLE:
				appendBinaryStringInfo(&g->encoded, (const char *) &vec->v.f64[row], sizeof(double));
				break;
			case TL_PQ_BYTE_ARRAY:
			case TL_PQ_FIXED_LEN_BYTE_ARRAY:
				{
					uint32		len = (uint32) vec->v.bytes[row].len;

					appendBinaryStringInfo(&g->encoded, (const char *) &len, sizeof(len));
					appendBinaryStringInfo(&g->encoded, (const char *) vec->v.bytes[row].ptr, (int) len);
					break;
				}
		}
	}
}

/* The states of the group of key g->encoded, of row `row`: found, or looked up and remembered. */
static PartialState *
group_of_encoded(GroupKeys *g, LakeScan *lake, int32 row)
{
	KeyBytes	key = {g->encoded.data, (uint32) g->encoded.len};
	bool		found;
	KeyEntry   *entry = keytab_insert(g->table, key, &found);

	if (!found)
	{
		char	   *copy = MemoryContextAlloc(g->cxt, key.len + 1);

		memcpy(copy, key.data, key.len);
		entry->key.data = copy;
		entry->states = NULL;
		/* no other entry is added before the lookup returns, so entry stays where it is */
		entry->states = g->lookup(g->lookup_arg, lake, row);
	}
	return entry->states;
}

/*
 * The slot of a view in this batch: the one holding it, else an empty one
 * to fill; NULL when its neighbourhood is full. Fibonacci hashing spreads
 * the views of one dictionary, which sit side by side.
 */
static inline ViewSlot *
view_slot(GroupKeys *g, const tl_bytes *view)
{
	uint32		home = (uint32) (((uint64) (uintptr_t) view->ptr * UINT64CONST(0x9E3779B97F4A7C15)) >> 56);

	for (int probe = 0; probe < VIEW_PROBES; probe++)
	{
		ViewSlot   *slot = &g->views[(home + probe) % VIEW_SLOTS];

		if (slot->batch != g->batch || (slot->ptr == view->ptr && slot->len == (uint32) view->len))
			return slot;
	}
	return NULL;
}

void
group_keys_find(GroupKeys *g, LakeScan *lake, const LakeBatch *batch, PartialState **groups)
{
	bool		by_view;

	StaticAssertStmt(VIEW_SLOTS == 256, "view_slot keeps the top 8 bits");
	for (int k = 0; k < g->nkeys; k++)
	{
		const LakeValueConverter *conv;

		g->vectors[k] = lake_scan_batch_vector(lake, g->attnos[k], &conv);
		if (g->vectors[k] == NULL)
		{
			/* the column reads its default in this batch: look every row up */
			for (int64 i = 0; i < batch->nrows; i++)
				groups[i] = g->lookup(g->lookup_arg, lake, batch->rows[i]);
			return;
		}
		g->physical[k] = conv->physical;
	}
	by_view = g->nkeys == 1 && (g->physical[0] == TL_PQ_BYTE_ARRAY || g->physical[0] == TL_PQ_FIXED_LEN_BYTE_ARRAY);
	g->batch++;					/* the views die with the batch: its slots are empty now */
	for (int64 i = 0; i < batch->nrows; i++)
	{
		int32		row = batch->rows[i];
		ViewSlot   *slot = NULL;

		if (by_view && !tl_vector_is_null(g->vectors[0], row))
		{
			const tl_bytes *view = &g->vectors[0]->v.bytes[row];

			slot = view_slot(g, view);
			if (slot != NULL && slot->batch == g->batch)
			{
				groups[i] = slot->states;
				continue;
			}
		}
		encode_key(g, row);
		groups[i] = group_of_encoded(g, lake, row);
		if (slot != NULL)
		{
			slot->ptr = g->vectors[0]->v.bytes[row].ptr;
			slot->len = (uint32) g->vectors[0]->v.bytes[row].len;
			slot->batch = g->batch;
			slot->states = groups[i];
		}
	}
}
