/*-------------------------------------------------------------------------
 *
 * pk_expr.c
 *		tierdb.pk_expr(table, state, alias), the SQL text of a row's
 *		canonical pk (sql/0.1/30-routing.sql, tierdb.pk_expr_sql), cached
 *		per backend.
 *
 * Every routed row (tierdb_upsert, tierdb_delete, each row a plain INSERT,
 * UPDATE or DELETE routes through the spill partition) is normalised by
 * tierdb.normalize_row, which builds its statement from this text.  Made
 * by SQL over pg_attribute it cost 0.3 ms a row, a third of a routed
 * UPDATE's time.  The text depends on the table's pk columns (named in the
 * state) and their types: the cache entry keeps the columns it was made for,
 * and any relcache invalidation of the table (ALTER TABLE) drops it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(tierdb_pk_expr);

typedef struct PkExprKey
{
	Oid			relid;
	char		alias[NAMEDATALEN];
} PkExprKey;

typedef struct PkExprEntry
{
	PkExprKey	key;
	char	   *pk_cols;		/* the state's pk_cols it was made for, as text */
	char	   *expr;
} PkExprEntry;

static HTAB *cache = NULL;

static void
forget(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS seq;
	PkExprEntry *e;

	hash_seq_init(&seq, cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (OidIsValid(relid) && e->key.relid != relid)
			continue;
		pfree(e->pk_cols);
		pfree(e->expr);
		hash_search(cache, &e->key, HASH_REMOVE, NULL);
	}
}

/* tierdb.pk_expr_sql(regclass, jsonb, text), looked up once per call site. */
static FmgrInfo *
uncached(FunctionCallInfo fcinfo)
{
	FmgrInfo   *fn = fcinfo->flinfo->fn_extra;

	if (fn == NULL)
	{
		Oid			types[] = {REGCLASSOID, JSONBOID, TEXTOID};
		Oid			oid = LookupFuncName(list_make2(makeString("tierdb"), makeString("pk_expr_sql")), 3, types, false);

		fn = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(FmgrInfo));
		fmgr_info_cxt(oid, fn, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = fn;
	}
	return fn;
}

Datum
tierdb_pk_expr(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *alias = text_to_cstring(PG_GETARG_TEXT_PP(2));
	text	   *cols = DatumGetTextPP(DirectFunctionCall2(jsonb_object_field_text, PG_GETARG_DATUM(1),
														  CStringGetTextDatum("pk_cols")));
	char	   *pk_cols = text_to_cstring(cols);
	PkExprKey	key;
	PkExprEntry *e;
	bool		found;
	Datum		expr;

	if (strlen(alias) >= NAMEDATALEN)
		PG_RETURN_DATUM(FunctionCall3(uncached(fcinfo), PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2)));
	if (cache == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(PkExprKey), .entrysize = sizeof(PkExprEntry)};

		cache = hash_create("tierdb pk expressions", 16, &ctl, HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(forget, (Datum) 0);
	}
	memset(&key, 0, sizeof(key));
	key.relid = relid;
	strlcpy(key.alias, alias, NAMEDATALEN);
	e = hash_search(cache, &key, HASH_FIND, NULL);
	if (e != NULL && strcmp(e->pk_cols, pk_cols) == 0)
		PG_RETURN_TEXT_P(cstring_to_text(e->expr));
	expr = FunctionCall3(uncached(fcinfo), PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2));
	e = hash_search(cache, &key, HASH_ENTER, &found);
	if (found)
	{
		pfree(e->pk_cols);
		pfree(e->expr);
	}
	e->pk_cols = MemoryContextStrdup(TopMemoryContext, pk_cols);
	e->expr = MemoryContextStrdup(TopMemoryContext, TextDatumGetCString(expr));
	PG_RETURN_DATUM(expr);
}
