/*
 * mirror.h: mirrored tables (SPEC §3, docs/mirrored.md). The heap keeps
 * every row and takes plain DML; the lake keeps a full copy that trails it
 * by the changes the daemon has not yet read from Postgres' logical
 * replication stream.
 *
 *   registration  REPLICA IDENTITY FULL, a publication of the table and a
 *                 logical slot (pgoutput) whose consistent point C starts
 *                 the stream (mirror_setup.c); tierdb.copy_progress
 *                 records the initial copy still to make;
 *   initial copy  the rows in chunks in merge-key order, each chunk one
 *                 lake commit that also records the chunk's last key, so a
 *                 daemon killed midway resumes after the last chunk; done,
 *                 the copy sets F = C;
 *   the pump      reads the stream from F, batches whole transactions, and
 *                 commits each batch as one row-delta snapshot: an equality
 *                 delete for every (key, tier key) a change touched, the
 *                 newest row of every key still alive; it publishes S and
 *                 the batch's end as F in one transaction, and only then
 *                 confirms F to the slot.
 *
 * The copy reads each chunk at a later snapshot than C, so the stream
 * replays changes the copy already holds. Every change carries its whole
 * row (REPLICA IDENTITY FULL: the old row too), and every row written
 * deletes its key where it lands and where it was, so replaying a change
 * over a copy that holds it leaves one row: the result once the pump has
 * passed the copy's end is the table's, whatever the overlap.
 */
#ifndef TIERDB_MIRROR_H
#define TIERDB_MIRROR_H

#include <stdint.h>

#include <libpq-fe.h>

#include "catalog.h"
#include "tierlake/error.h"

/* Rows per chunk of the initial copy unless `register --chunk-rows` says otherwise. */
#define TDB_MIRROR_DEFAULT_CHUNK_ROWS 100000

/* ------------------------------------------------------------ setup (mirror_setup.c) */

/* What registration made for a mirrored table. */
typedef struct tdb_mirror_plumbing {
	char *publication;
	char *slot;
	int64_t consistent_point; /* C, the slot's first LSN, as a bigint */
} tdb_mirror_plumbing;

/*
 * Checks wal_level, sets REPLICA IDENTITY FULL on the table and its
 * partitions and creates the publication (one transaction), then the slot.
 * `qualified` is the table's quoted name. Leftovers of an earlier failed
 * registration are replaced. Runs outside any transaction; on failure
 * nothing it made stays.
 */
int tdb_mirror_plumbing_create(PGconn *c, uint32_t table_oid, const char *qualified, tdb_mirror_plumbing *m,
                               tl_error *err);

/* Drops the slot (ending a walsender that streams from it) and the publication, where they exist. */
int tdb_mirror_plumbing_drop(PGconn *c, const tdb_mirror_plumbing *m, tl_error *err);

void tdb_mirror_plumbing_free(tdb_mirror_plumbing *m);

/* REPLICA IDENTITY FULL on the table's leaf tables that lack it (partitions made after registration). */
int tdb_mirror_full_identity(PGconn *c, uint32_t table_oid, tl_error *err);

/* ------------------------------------------------------------ the daemon (mirror.c) */

typedef struct tdb_mirror_config {
	int64_t batch_rows;   /* TIERDB_MIRROR_BATCH: changes per lake commit (a transaction is never split) */
	int64_t flush_millis; /* TIERDB_MIRROR_FLUSH_MILLIS: how long the pump waits for more changes */
} tdb_mirror_config;

/* Copies the next chunks of the initial copy (until done, or the daemon stops). 0 also when nothing is left. */
int tdb_mirror_copy(PGconn *c, const tdb_catalog_table *t, tl_error *err);

/*
 * Streams the table's changes from F up to the WAL position when it
 * starts, one lake commit per batch. Does nothing until the copy is done.
 */
int tdb_mirror_pump(PGconn *c, const tdb_catalog_table *t, const tdb_mirror_config *cfg, tl_error *err);

/* Closes the replication streams the pumps keep open between runs (the daemon's session ended, or it stops). */
void tdb_mirror_close_streams(void);

/*
 * Logs a warning when the table's slot holds more than warn_bytes of WAL
 * (its restart point lags the server's WAL position by that much): the
 * pump is behind or failing, and the server keeps every segment since.
 */
int tdb_mirror_check_slot(PGconn *c, const tdb_catalog_table *t, int64_t warn_bytes, tl_error *err);

/*
 * Settles a copy chunk or a batch a crash interrupted: a lake snapshot
 * stamped with its op id is published (with its chunk's key or its F);
 * none means its files are deleted.
 */
int tdb_recover_mirror(PGconn *c, const tdb_catalog_table *t, tl_error *err);

#endif
