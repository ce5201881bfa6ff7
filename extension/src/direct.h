/*-------------------------------------------------------------------------
 *
 * direct.h
 *		Cold writes of direct tables, committed to the lake when their
 *		transaction commits (direct.c; docs/direct.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_DIRECT_H
#define TIERDB_DIRECT_H

#include "fmgr.h"

/* Defines tierdb.test_fault and registers the pre-commit callback; called by _PG_init. */
extern void direct_init(void);

extern Datum tierdb_direct_note(PG_FUNCTION_ARGS);
extern Datum tierdb_direct_lake_begin(PG_FUNCTION_ARGS);
extern Datum tierdb_direct_lake_publish(PG_FUNCTION_ARGS);

#endif							/* TIERDB_DIRECT_H */
