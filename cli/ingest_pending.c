/*
 * ingest_pending.c: TEMPORARY, load-work branch only. Remove when main's
 * cli/ingest.c is merged.
 *
 * Stream Load (load.c) calls the ingest core of ingest.h, which the lead
 * is writing on main. Until it lands, these weak definitions let the
 * daemon link so the HTTP server, auth, labels and routing can be built
 * and tested. They do not pretend to work: every call fails with an error
 * that says the ingest core is missing, so a load answers 500 and applies
 * nothing. The strong definitions of ingest.c replace them at link time.
 */
#include <stdio.h>

#include "ingest.h"

#define MISSING "the ingest core (cli/ingest.c) is not built into this tierdb yet: Stream Load cannot stage rows"

__attribute__((weak)) tdb_ingest *tdb_ingest_begin(PGconn *c, const tdb_catalog_table *t,
                                                   const tdb_ingest_options *opts, tl_error *err)
{
	(void)c;
	(void)t;
	(void)opts;
	tl_error_set(err, TL_ERR_UNSUPPORTED, MISSING);
	return NULL;
}

__attribute__((weak)) int tdb_ingest_begin_jsonl(tdb_ingest *in, const char *name, tl_error *err)
{
	(void)in;
	(void)name;
	return tl_error_set(err, TL_ERR_UNSUPPORTED, MISSING);
}

__attribute__((weak)) int tdb_ingest_add_jsonl_line(tdb_ingest *in, const char *line, size_t len, tl_error *err)
{
	(void)in;
	(void)line;
	(void)len;
	return tl_error_set(err, TL_ERR_UNSUPPORTED, MISSING);
}

__attribute__((weak)) int tdb_ingest_end_jsonl(tdb_ingest *in, tl_error *err)
{
	(void)in;
	return tl_error_set(err, TL_ERR_UNSUPPORTED, MISSING);
}

__attribute__((weak)) int tdb_ingest_commit(tdb_ingest *in, tdb_ingest_publish_hook hook, void *hook_arg,
                                            tdb_ingest_result *res, tl_error *err)
{
	(void)in;
	(void)hook;
	(void)hook_arg;
	(void)res;
	return tl_error_set(err, TL_ERR_UNSUPPORTED, MISSING);
}

__attribute__((weak)) void tdb_ingest_free(tdb_ingest *in)
{
	(void)in;
}

__attribute__((weak)) int tdb_recover_ingests(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	(void)c;
	(void)t;
	(void)err;
	return 0; /* nothing can have been journaled by a core that is not here */
}
