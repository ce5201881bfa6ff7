/*
 * load.h: Stream Load (SPEC §9, docs/stream-load.md): one HTTP request's
 * rows applied to a registered table exactly once per (table, label).
 *
 * The HTTP side (load_http.c) only parses requests and moves bytes; this
 * module owns everything a load means:
 *
 *   - the table named in the URL, resolved in the catalog (404 when it is
 *     not registered, 400 when its mode takes no Stream Load: mirrored and
 *     --keep-heap tables);
 *   - the label's life in tierdb.load_labels: a session advisory lock on
 *     (table, label) held for the whole request, then the row inserted
 *     'staged'; a label already 'committed' answers its first result again,
 *     one 'failed' its first failure, one 'staged' under someone else's lock
 *     is a concurrent duplicate (409), one 'staged' with the lock free is
 *     the orphan of a crashed daemon, settled here before answering;
 *   - the rows: the body's JSONL lines fed to the ingest core (ingest.h) as
 *     they arrive, then routed: hot rows upsert into the heap, a cold
 *     trickle (at most TIERDB_LOAD_DELTA_ROWS rows below T) goes to the
 *     delta in one transaction, more cold rows than that are committed to
 *     the lake in one snapshot by tdb_ingest_commit, the hot rows and the
 *     label's 'committed' riding in the transaction that publishes it.
 *
 * Exactly once: the label becomes 'committed' only inside the transaction
 * that applies the rows, and 'failed' only while it is still 'staged' and
 * its lock is ours; a crash at any instant leaves either the committed
 * transaction or nothing (plus, for a lake load, a journal that
 * tdb_recover_ingests rolls back and fails the label with).
 *
 * Each load runs on its own libpq connection, made per request with the
 * daemon's connection settings: the daemon's own connection belongs to its
 * thread. Every function here may run on any thread; one load is used by
 * one thread at a time.
 */
#ifndef TIERDB_LOAD_H
#define TIERDB_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "tierlake/error.h"

typedef struct tdb_load_config {
	const char *token;   /* TIERDB_LOAD_TOKEN; NULL or empty: no Stream Load endpoint */
	const char *address; /* TIERDB_LOAD_ADDRESS ("127.0.0.1") */
	int64_t port;        /* TIERDB_LOAD_PORT (8040) */
	int64_t threads;     /* TIERDB_LOAD_THREADS (4): libmicrohttpd's thread pool, i.e. loads at once */
	int64_t max_bytes;   /* TIERDB_LOAD_MAX_BYTES (1 GiB): the largest body; larger ones get 413 */
	int64_t delta_rows;  /* TIERDB_LOAD_DELTA_ROWS (1000): the most cold rows that go to the delta */
	const char *dsn;     /* the daemon's --dsn (NULL: TIERDB_PG_URL, else PG*) */
	const tdb_daemon_config *daemon; /* the session settings each load's connection gets */
} tdb_load_config;

#define TDB_LOAD_DEFAULT_PORT 8040

/* Reads the TIERDB_LOAD_* settings; a malformed one is an error naming it. dsn and daemon are left to the caller. */
int tdb_load_config_from_env(tdb_load_config *cfg, tl_error *err);

/* What to answer: an HTTP status and a JSON body (always an object). */
typedef struct tdb_load_response {
	unsigned status;
	char *body;     /* JSON text, malloc'd */
	char *label;    /* the label, for the X-TierDB-Label header (NULL when none was reached) */
	char *table;    /* "schema.table" once the table resolved (metrics), else NULL */
	bool replayed;  /* the label had been applied (or had failed) before: its first answer */
} tdb_load_response;

void tdb_load_response_clear(tdb_load_response *r);

/* A JSON error body {"status": "failed", "error": message} with `status`; for the HTTP layer's own refusals. */
void tdb_load_respond_error(tdb_load_response *r, unsigned status, const char *message);

typedef struct tdb_load tdb_load;

/*
 * Starts a load of table `table_text` ("schema.table" as in the URL) under
 * `label` (NULL: a new UUID). Returns a load that takes the body, or NULL
 * when the answer is already known (unknown table, a label applied before,
 * a concurrent duplicate, an orphan settled, no database): *resp is then
 * filled.
 */
tdb_load *tdb_load_start(const tdb_load_config *cfg, const char *table_text, const char *label,
                         tdb_load_response *resp);

/* Feeds body bytes as they arrive; whole lines go to staging, a partial line waits. After an error, discards. */
void tdb_load_feed(tdb_load *l, const char *data, size_t len);

/* Bytes fed so far. */
int64_t tdb_load_bytes(const tdb_load *l);

/*
 * Fails the load with `status` and `message` (the body was too large):
 * nothing is applied and the label becomes 'failed'. Later feeds discard;
 * tdb_load_finish answers with this failure.
 */
void tdb_load_reject(tdb_load *l, unsigned status, const char *message);

/* The body ended: applies the rows (or records the failure) and fills *resp. */
void tdb_load_finish(tdb_load *l, tdb_load_response *resp);

/*
 * Frees the load and closes its connection (releasing the label's lock).
 * A load that did not finish (the client went away mid-body) is failed
 * first, `why` saying so.
 */
void tdb_load_free(tdb_load *l, const char *why);

/* ------------------------------------------------------------ the endpoint (load_http.c) */

/*
 * Listens on TIERDB_LOAD_ADDRESS:TIERDB_LOAD_PORT with a pool of
 * TIERDB_LOAD_THREADS libmicrohttpd threads serving POST
 * /api/load/{schema}.{table}. cfg must outlive tdb_load_stop. -1 with err
 * naming the variable when the address does not resolve or cannot be bound.
 */
int tdb_load_listen(const tdb_load_config *cfg, tl_error *err);

/* Stops the endpoint; loads in progress end first (a body cut short fails its load). */
void tdb_load_stop(void);

#endif
