/*-------------------------------------------------------------------------
 *
 * lake_env.h
 *		The backend's side of the lake library's host boundary (memory and
 *		interrupts, lake/include/tierlake/env.h) and the one place a lake
 *		error code becomes a SQLSTATE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_LAKE_ENV_H
#define TIERDB_LAKE_ENV_H

#include "tierlake_pg.h"

/* Installs the interrupt check (and documents the allocator choice); from _PG_init. */
extern void tierdb_lake_env_init(void);

/* The SQLSTATE for a lake error code. */
extern int	tierdb_lake_errcode(tl_error_code code);

/*
 * Call first wherever a failed lake call becomes an ERROR. For
 * TL_ERR_INTERRUPTED it runs CHECK_FOR_INTERRUPTS(), so Postgres reports
 * the real cause (statement timeout, cancel, terminate) and does not
 * return; if nothing is pending any more it raises query_canceled itself.
 * For TL_ERR_NOMEM it raises out_of_memory with the library's message.
 * Any other code returns, for the caller's own ereport.
 */
extern void tierdb_lake_error_precheck(const tl_error *err);

#endif							/* TIERDB_LAKE_ENV_H */
