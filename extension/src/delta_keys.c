/*-------------------------------------------------------------------------
 *
 * delta_keys.c
 *		Delta keys parsed from their canonical text and matched by value;
 *		see delta_keys.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "delta_keys.h"

/* The separator of a composite key's parts (SPEC §4). */
#define PK_SEPARATOR '\x1f'

typedef struct KeyColumn
{
	AttrNumber	attno;
	Oid			typid;
	Oid			collation;
	FmgrInfo	input;
	Oid			ioparam;
	int32		typmod;
	FmgrInfo   *hash;			/* the type cache's */
	FmgrInfo   *eq;
} KeyColumn;

/* All keys with one hash value (collisions share the entry). */
typedef struct KeyBucket
{
	uint32		hash;
	List	   *keys;			/* Datum[npk] each */
} KeyBucket;

struct DeltaKeys
{
	int			npk;
	KeyColumn  *cols;
	HTAB	   *buckets;
};

DeltaKeys *
delta_keys_create(TupleDesc tupdesc, int npk, const AttrNumber *pk_attnos)
{
	DeltaKeys  *keys = palloc0(sizeof(DeltaKeys));
	HASHCTL		ctl = {.keysize = sizeof(uint32), .entrysize = sizeof(KeyBucket), .hcxt = CurrentMemoryContext};

	if (npk > INDEX_MAX_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_COLUMNS),
				 errmsg("a key of %d columns is more than the %d TierDB can match", npk, INDEX_MAX_KEYS)));
	keys->npk = npk;
	keys->cols = palloc0(sizeof(KeyColumn) * npk);
	for (int i = 0; i < npk; i++)
	{
		KeyColumn  *c = &keys->cols[i];
		Form_pg_attribute att = TupleDescAttr(tupdesc, pk_attnos[i] - 1);
		TypeCacheEntry *tce = lookup_type_cache(att->atttypid, TYPECACHE_HASH_PROC_FINFO | TYPECACHE_EQ_OPR_FINFO);
		Oid			input;

		if (!OidIsValid(tce->hash_proc_finfo.fn_oid) || !OidIsValid(tce->eq_opr_finfo.fn_oid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column \"%s\" has type %s, which has no hash or equality function",
							NameStr(att->attname), format_type_be(att->atttypid)),
					 errdetail("Corrections in tierdb.delta are matched to lake rows by their key.")));
		c->attno = pk_attnos[i];
		c->typid = att->atttypid;
		c->collation = att->attcollation;
		c->typmod = att->atttypmod;
		getTypeInputInfo(att->atttypid, &input, &c->ioparam);
		fmgr_info(input, &c->input);
		c->hash = &tce->hash_proc_finfo;
		c->eq = &tce->eq_opr_finfo;
	}
	keys->buckets = hash_create("tierdb delta keys", 256, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return keys;
}

static uint32
key_hash(const DeltaKeys *keys, const Datum *values)
{
	uint32		h = 0;

	for (int i = 0; i < keys->npk; i++)
		h = hash_combine(h, DatumGetUInt32(FunctionCall1Coll(keys->cols[i].hash, keys->cols[i].collation,
															  values[i])));
	return h;
}

/* Splits a canonical text into its npk parts, undoing the escapes; false if the count is wrong. */
static bool
split_parts(const char *text, int npk, char **parts)
{
	StringInfoData part;
	int			n = 0;

	if (npk == 1)
	{
		parts[0] = pstrdup(text);
		return true;
	}
	initStringInfo(&part);
	for (const char *p = text;; p++)
	{
		if (*p == '\\' && p[1] != '\0')
			appendStringInfoChar(&part, *++p);
		else if (*p == PK_SEPARATOR || *p == '\0')
		{
			if (n == npk)
				return false;
			parts[n++] = pstrdup(part.data);
			resetStringInfo(&part);
			if (*p == '\0')
				break;
		}
		else
			appendStringInfoChar(&part, *p);
	}
	return n == npk;
}

/* Enters a key (npk Datums, kept) into the set. */
static void
add_key(DeltaKeys *keys, Datum *values)
{
	uint32		h = key_hash(keys, values);
	bool		found;
	KeyBucket  *bucket = hash_search(keys->buckets, &h, HASH_ENTER, &found);

	if (!found)
		bucket->keys = NIL;
	bucket->keys = lappend(bucket->keys, values);
}

void
delta_keys_add_texts(DeltaKeys *keys, List *texts)
{
	int			nest = NewGUCNestLevel();
	char	  **parts = palloc(sizeof(char *) * keys->npk);
	ListCell   *lc;

	/* Parse as the daemon does, whatever the reader's session says. */
	(void) set_config_option("DateStyle", "ISO", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("TimeZone", "UTC", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("IntervalStyle", "postgres", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
							 false);
	foreach(lc, texts)
	{
		const char *text = lfirst(lc);
		Datum	   *values = palloc(sizeof(Datum) * keys->npk);

		if (!split_parts(text, keys->npk, parts))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("tierdb.delta holds the key \"%s\", which does not have %d parts", text, keys->npk),
					 errhint("A composite key's parts are joined with chr(31), escaping \\ and chr(31) with \\.")));
		for (int i = 0; i < keys->npk; i++)
			values[i] = InputFunctionCall(&keys->cols[i].input, parts[i], keys->cols[i].ioparam,
										  keys->cols[i].typmod);
		add_key(keys, values);
	}
	AtEOXact_GUC(true, nest);
}

void
delta_keys_add_row(DeltaKeys *keys, const Datum *values, const bool *isnull)
{
	Datum	   *key = palloc(sizeof(Datum) * keys->npk);

	for (int i = 0; i < keys->npk; i++)
	{
		const KeyColumn *c = &keys->cols[i];
		int16		len;
		bool		byval;

		if (isnull[c->attno - 1])
			elog(ERROR, "a key to match has a NULL part");
		get_typlenbyval(c->typid, &len, &byval);
		key[i] = datumCopy(values[c->attno - 1], byval, len);
	}
	add_key(keys, key);
}

bool
delta_keys_contains(DeltaKeys *keys, const Datum *values, const bool *isnull)
{
	Datum		key[INDEX_MAX_KEYS];
	KeyBucket  *bucket;
	uint32		h;
	ListCell   *lc;

	for (int i = 0; i < keys->npk; i++)
	{
		if (isnull[keys->cols[i].attno - 1])
			return false;
		key[i] = values[keys->cols[i].attno - 1];
	}
	h = key_hash(keys, key);
	bucket = hash_search(keys->buckets, &h, HASH_FIND, NULL);
	if (bucket == NULL)
		return false;
	foreach(lc, bucket->keys)
	{
		Datum	   *candidate = lfirst(lc);
		bool		equal = true;

		for (int i = 0; i < keys->npk && equal; i++)
			equal = DatumGetBool(FunctionCall2Coll(keys->cols[i].eq, keys->cols[i].collation, candidate[i], key[i]));
		if (equal)
			return true;
	}
	return false;
}
