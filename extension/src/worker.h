/*-------------------------------------------------------------------------
 *
 * worker.h
 *		The embedded worker (SPEC §3, §7): a background worker that runs the
 *		TierDB daemon, `tierdb run`, as a child process of the server.
 *
 * tierdb.c's _PG_init calls these; worker.c implements them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TIERDB_WORKER_H
#define TIERDB_WORKER_H

/* Defines tierdb.embedded_worker, worker_command, worker_database, worker_env. */
extern void tierdb_worker_define_gucs(void);

/*
 * Registers the background worker when tierdb.embedded_worker is on.  Only
 * meaningful while shared_preload_libraries is being processed.
 */
extern void tierdb_worker_register(void);

/* The background worker's entry point (named in its registration). */
extern PGDLLEXPORT void tierdb_embedded_worker_main(Datum main_arg);

#endif							/* TIERDB_WORKER_H */
