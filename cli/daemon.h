/*
 * daemon.h: the `tierdb run` daemon: its settings, leader election, the
 * cycle over registered tables, stopping, and its log.
 *
 * Several daemons may run against one database; a session advisory lock
 * elects the one that works (SPEC §8), the others wait and retry each cycle.
 * A cycle runs the per-table steps of tiering.h for every registered tiered
 * table, then sweeps expired read pins; a failing step is logged and the
 * rest still run. SIGTERM and
 * SIGINT stop the daemon between steps, never inside one.
 *
 * The log is one line per step on stderr: a UTC timestamp, the table and
 * what happened (rows, bytes, rate for data moved).
 */
#ifndef TIERDB_DAEMON_H
#define TIERDB_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <libpq-fe.h>

#include "tierlake/error.h"

typedef struct tdb_daemon_config {
	int64_t interval_seconds;   /* TIERDB_CYCLE_INTERVAL_SECONDS (10) */
	int64_t premake_partitions; /* TIERDB_PREMAKE_PARTITIONS (2) */
	const char *tiering_lag;    /* TIERDB_TIERING_LAG as given ("0"): units depend on each table's key */
	int64_t compaction_batch;   /* TIERDB_COMPACTION_BATCH (1000): the most delta rows one fold takes */
	int64_t lock_timeout_ms;    /* TIERDB_LOCK_TIMEOUT_MS (5000): the longest one lock wait may last */
	int64_t mirror_batch;       /* TIERDB_MIRROR_BATCH (100000): changes per lake commit of a mirror */
	int64_t mirror_flush_millis; /* TIERDB_MIRROR_FLUSH_MILLIS (1000): the longest a mirror's batch gathers */
	int64_t slot_warn_bytes;    /* TIERDB_SLOT_WARN_BYTES (1 GiB): WAL a mirror's slot may hold before a warning */
	int64_t metrics_port;       /* TIERDB_METRICS_PORT (unset: 0, no /metrics endpoint) */
	const char *metrics_address; /* TIERDB_METRICS_ADDRESS ("127.0.0.1"): where /metrics listens */
} tdb_daemon_config;

/* Reads the settings from the environment; a malformed one is an error naming it. */
int tdb_daemon_config_from_env(tdb_daemon_config *cfg, tl_error *err);

/*
 * Pins the session settings that text forms depend on
 * (TDB_PG_SESSION_OPTIONS of pgtypes.h) on a new daemon connection, so
 * rows stream to the lake in one rendering whatever the server's defaults.
 */
int tdb_daemon_session_setup(PGconn *c, const tdb_daemon_config *cfg, tl_error *err);

/*
 * Tries to become the leader on this session (tierdb.try_become_leader(),
 * a lock no other role can take). 1 leader, 0 another daemon leads, -1 on
 * error. The lock lives as long as the connection.
 */
int tdb_daemon_try_lead(PGconn *c, tl_error *err);

/*
 * One cycle over every registered tiered table, then the expired-pin
 * sweep. 0 when every step succeeded, 1 when some step failed (logged;
 * the cycle went on), -1 when the connection or the catalog failed
 * (logged): reconnect.
 */
int tdb_daemon_cycle(PGconn *c, const tdb_daemon_config *cfg);

/*
 * Between cycles: the pumps of the mirrored tables alone (cli/mirror.c),
 * which cmd_run calls every TIERDB_MIRROR_FLUSH_MILLIS so that a mirror
 * trails its table by about that, not by a whole cycle. Returns as
 * tdb_daemon_cycle does.
 */
int tdb_daemon_pump_mirrors(PGconn *c, const tdb_daemon_config *cfg);

/* Sleeps up to `millis`, waking early when a stop is requested. */
void tdb_daemon_sleep_ms(int64_t millis);

/* Makes SIGTERM and SIGINT request a stop instead of killing the process, and stop the lake library's long loops. */
void tdb_daemon_install_signals(void);
/* True once a stop was requested. */
bool tdb_daemon_stopping(void);

/* Writes "<UTC time> <table>: <message>" to stderr (table may be NULL). */
/* An integer setting from the environment in [min, max], or its default when unset or empty; -1 with err naming it. */
int tdb_env_int(const char *name, int64_t dflt, int64_t min, int64_t max, int64_t *out, tl_error *err);

void tdb_log(const char *table, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The program name tdb_log's lines start with ("tierdb run" unless a command sets its own; a string constant). */
void tdb_log_set_program(const char *program);

/* Progress of a long data movement, logged every few seconds and at the end. */
typedef struct tdb_progress {
	const char *table;
	const char *what;          /* "copying events_20240101" */
	struct timespec start;
	struct timespec last_log;
	int64_t rows;
	int64_t bytes;
} tdb_progress;

void tdb_progress_start(tdb_progress *p, const char *table, const char *what);
/* Adds rows and bytes; logs when a few seconds passed since the last line. */
void tdb_progress_add(tdb_progress *p, int64_t rows, int64_t bytes);
/* Logs the totals and the rate, with `done` describing the outcome. */
void tdb_progress_done(tdb_progress *p, const char *done);

#endif
