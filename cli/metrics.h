/*
 * metrics.h: the daemon's Prometheus metrics (docs/metrics.md), served at
 * GET /metrics when TIERDB_METRICS_PORT is set.
 *
 * Two kinds of numbers, kept apart because only one thread may use the
 * daemon's Postgres connection:
 *
 *   - the catalog's view of each table (cut-line lag, delta backlog, pins,
 *     partitions by state, mirror lag, lake statistics, ...): the daemon's
 *     thread renders it into a text snapshot with tdb_metrics_refresh after
 *     each cycle (and once at start), on its own connection; a scrape
 *     serves the latest snapshot, so it is at most one cycle old;
 *   - what this process did (cycles, steps by outcome, rows and bytes
 *     moved, the last advance and fold): recorded by the daemon as it goes
 *     (tdb_metrics_cycle_done, _step_done, _moved), rendered at each
 *     scrape. Counters start at zero with the process, as Prometheus
 *     expects of counters.
 *
 * Every function here may be called from any thread; one mutex guards the
 * state, held only to copy numbers or swap the snapshot. The HTTP endpoint
 * itself is libmicrohttpd's (metrics_http.c).
 */
#ifndef TIERDB_METRICS_H
#define TIERDB_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "tierlake/error.h"

/* ------------------------------------------------------------ recording */

/* Whether this daemon holds the leader lock, and whether it has a connection. */
void tdb_metrics_set_role(bool connected, bool leader);

/* What a cycle came to: tdb_daemon_cycle's status (0 ok, 1 a step failed, -1 connection lost). */
void tdb_metrics_cycle_done(int status, double seconds);

/* One step of one table (`step` a string that lives as long as the process). */
void tdb_metrics_step_done(const char *table, const char *step, bool ok, double seconds);

/* The data-moving operations whose rows and bytes are counted. */
typedef enum tdb_metrics_op {
	TDB_METRICS_TIERING = 0, /* partitions copied into the lake; T advanced */
	TDB_METRICS_FOLD,        /* delta rows folded into the lake; S advanced */
	TDB_METRICS_NOPS
} tdb_metrics_op;

/* A published operation of table `table`: rows it moved, lake bytes it wrote, how long it took. */
void tdb_metrics_moved(const char *table, tdb_metrics_op op, int64_t rows, int64_t bytes, double seconds);

/*
 * A Stream Load request answered with HTTP `status`; `table` is the
 * registered table it named ("schema.table"), or NULL when it named none
 * (bad path, method or token, unknown table), counted under table="".
 */
void tdb_metrics_load_request(const char *table, unsigned status);

/* Seconds on a monotonic clock, for the durations above. */
double tdb_metrics_clock(void);

/* ------------------------------------------------------------ the snapshot */

/*
 * Reads the catalog on c (the daemon's connection, from the daemon's
 * thread) and replaces the served snapshot of every registered table. On
 * failure the previous snapshot stays, the failure is counted and logged,
 * and any transaction the failure left open is rolled back.
 */
void tdb_metrics_refresh(PGconn *c);

/* The whole exposition (process metrics, then the snapshot); release with tl_free. *len its length; NULL out of memory. */
char *tdb_metrics_render(size_t *len);

/* ------------------------------------------------------------ the endpoint */

/*
 * Listens on address:port (TIERDB_METRICS_ADDRESS, TIERDB_METRICS_PORT) in
 * a libmicrohttpd thread of its own: GET /metrics answers 200 with the
 * exposition, any other path 404, any other method on /metrics 405 with
 * "Allow: GET, HEAD". -1 with err naming the variable when the address
 * does not resolve or cannot be bound.
 */
int tdb_metrics_listen(const char *address, int64_t port, tl_error *err);

/* Stops the endpoint (waits for a scrape in progress). */
void tdb_metrics_stop(void);

#endif
