/*
 * daemon.c: the daemon's cycle over registered tables, leader election,
 * settings, stopping and logging (see daemon.h).
 *
 * The cycle is deliberately plain: read the registered tables, then for
 * each tiered table premake, recover interrupted work, tier, expire
 * (lake retention), fold and drop, in that order (steps[] below). Each step is
 * its own unit of work that leaves the catalog consistent when it ends, so
 * a stop request is honoured between steps and an error in one table's
 * step costs that table one cycle of lag, never another table's progress.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"
#include "profiles.h"
#include "daemon.h"
#include "direct.h"
#include "fault.h"
#include "maintenance.h"
#include "metrics.h"
#include "fold.h"
#include "pg.h"
#include "pgtypes.h"
#include "recovery.h"
#include "ingest.h"
#include "retention.h"
#include "mirror.h"
#include "schema_evolution.h"
#include "tiering.h"
#include "tierlake/env.h"

/* ------------------------------------------------------------ settings */

int tdb_env_int(const char *name, int64_t dflt, int64_t min, int64_t max, int64_t *out, tl_error *err)
{
	const char *text = getenv(name);
	if (text == NULL || *text == '\0') {
		*out = dflt;
		return 0;
	}
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < min || v > max)
		return tl_error_set(err, TL_ERR_INVALID, "%s='%s' is not a whole number from %lld to %lld", name, text,
		                    (long long)min, (long long)max);
	*out = v;
	return 0;
}

int tdb_daemon_config_from_env(tdb_daemon_config *cfg, tl_error *err)
{
	if (tdb_env_int("TIERDB_CYCLE_INTERVAL_SECONDS", 10, 1, 86400, &cfg->interval_seconds, err) < 0 ||
	    tdb_env_int("TIERDB_PREMAKE_PARTITIONS", 2, 0, 1000, &cfg->premake_partitions, err) < 0 ||
	    tdb_env_int("TIERDB_COMPACTION_BATCH", 1000, 1, 100000000, &cfg->compaction_batch, err) < 0 ||
	    tdb_env_int("TIERDB_LOCK_TIMEOUT_MS", 5000, 1, 3600000, &cfg->lock_timeout_ms, err) < 0 ||
	    tdb_env_int("TIERDB_MIRROR_BATCH", 100000, 1, 100000000, &cfg->mirror_batch, err) < 0 ||
	    tdb_env_int("TIERDB_MIRROR_FLUSH_MILLIS", 1000, 1, 3600000, &cfg->mirror_flush_millis, err) < 0 ||
	    tdb_env_int("TIERDB_SLOT_WARN_BYTES", INT64_C(1) << 30, 1, INT64_MAX, &cfg->slot_warn_bytes, err) < 0 ||
	    tdb_env_int("TIERDB_METRICS_PORT", 0, 1, 65535, &cfg->metrics_port, err) < 0 ||
	    tdb_fault_check_env(err) < 0)
		return -1;
	const char *address = getenv("TIERDB_METRICS_ADDRESS");
	cfg->metrics_address = (address != NULL && *address != '\0') ? address : "127.0.0.1";
	const char *lag = getenv("TIERDB_TIERING_LAG");
	cfg->tiering_lag = (lag != NULL && *lag != '\0') ? lag : "0";
	/*
	 * The lag's unit depends on each table's key type, so it is converted per
	 * table; checking it against both families now reports a typo at start
	 * rather than once per table per cycle.
	 */
	int64_t ignored;
	tl_error as_int, as_duration;
	tl_error_clear(&as_int);
	tl_error_clear(&as_duration);
	if (tdb_key_parse_lag(TDB_KEY_BIGINT, cfg->tiering_lag, "TIERDB_TIERING_LAG", &ignored, &as_int) < 0 &&
	    tdb_key_parse_lag(TDB_KEY_TIMESTAMPTZ, cfg->tiering_lag, "TIERDB_TIERING_LAG", &ignored, &as_duration) < 0) {
		*err = as_duration;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ session */

/*
 * Every wait of the daemon is bounded: a session that holds a lock the
 * daemon needs (an idle transaction after tierdb_upsert, a long query on a
 * partition to drop) makes that step fail with lock_not_available, which
 * cycle_table reports with the blocker, instead of stalling every table.
 */
static int bound_lock_waits(PGconn *c, const tdb_daemon_config *cfg, tl_error *err)
{
	char ms[32];
	snprintf(ms, sizeof(ms), "%lldms", (long long)cfg->lock_timeout_ms);
	const char *params[] = {ms};
	return tdb_pg_exec(c, "bounding lock waits", "SELECT set_config('lock_timeout', $1, false)", 1, params, err);
}

int tdb_daemon_session_setup(PGconn *c, const tdb_daemon_config *cfg, tl_error *err)
{
	if (bound_lock_waits(c, cfg, err) < 0)
		return -1;
	/* The settings are libpq "options" text ("-c name=value ..."); apply each with set_config. */
	char *options = tl_strdup(TDB_PG_SESSION_OPTIONS);
	int rc = 0;
	char *save = NULL;
	for (char *tok = strtok_r(options, " ", &save); tok != NULL && rc == 0; tok = strtok_r(NULL, " ", &save)) {
		if (strcmp(tok, "-c") == 0)
			continue;
		char *eq = strchr(tok, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		const char *params[] = {tok, eq + 1};
		rc = tdb_pg_exec(c, "pinning the session settings", "SELECT set_config($1, $2, false)", 2, params, err);
	}
	free(options);
	return rc;
}

/* ------------------------------------------------------------ leader */

int tdb_daemon_try_lead(PGconn *c, tl_error *err)
{
	/* The leader lock is the extension's: a database without it says so first. */
	if (tdb_catalog_check(c, err) < 0)
		return -1;
	PGresult *res = tdb_pg_query(c, "taking the tierdb leader lock",
	                             "SELECT tierdb.try_become_leader()", 0, NULL, err);
	if (res == NULL)
		return -1;
	int leader = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return leader;
}

/* ------------------------------------------------------------ stopping */

static volatile sig_atomic_t stop_requested;

static void request_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/*
 * The lake library's interrupt check (tierlake/env.h): once a stop was
 * requested, a long tiering write or fold returns TL_ERR_INTERRUPTED at its
 * next check instead of running to the end. The operation is then left as a
 * crash would leave it (its journal entry open), and recovery finishes or
 * undoes it on the next start.
 */
static bool lake_should_stop(void *arg)
{
	(void)arg;
	return stop_requested != 0;
}

void tdb_daemon_install_signals(void)
{
	tl_set_interrupt_check(lake_should_stop, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = request_stop;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a sleeping daemon wakes at once (libpq retries its own EINTRs). */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

bool tdb_daemon_stopping(void)
{
	return stop_requested != 0;
}

void tdb_daemon_sleep_ms(int64_t millis)
{
	/* A tenth of a second at a time, so a signal landing between checks costs at most that. */
	for (int64_t left = millis; left > 0 && !stop_requested; left -= 100) {
		struct timespec step = {0, (left < 100 ? left : 100) * 1000 * 1000};
		nanosleep(&step, NULL);
	}
}

/* ------------------------------------------------------------ log */

/* Who logs: the daemon, or a command that shares its steps (`tierdb ingest`). */
static const char *log_program = "tierdb run";

void tdb_log_set_program(const char *program)
{
	log_program = program;
}

static void vlog(const char *table, const char *fmt, va_list ap)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tm tm;
	gmtime_r(&now.tv_sec, &tm);
	char stamp[32];
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	/* One fprintf per line keeps lines whole when several processes share stderr. */
	char message[2048];
	vsnprintf(message, sizeof(message), fmt, ap);
	if (table != NULL)
		fprintf(stderr, "%s.%03ldZ %s: %s: %s\n", stamp, now.tv_nsec / 1000000, log_program, table, message);
	else
		fprintf(stderr, "%s.%03ldZ %s: %s\n", stamp, now.tv_nsec / 1000000, log_program, message);
}

void tdb_log(const char *table, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(table, fmt, ap);
	va_end(ap);
}

/* Seconds between progress lines of one long operation. */
#define PROGRESS_INTERVAL_SECONDS 5.0

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

void tdb_progress_start(tdb_progress *p, const char *table, const char *what)
{
	memset(p, 0, sizeof(*p));
	p->table = table;
	p->what = what;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last_log = p->start;
}

static void log_progress(const tdb_progress *p, const char *state, const struct timespec *now)
{
	double elapsed = seconds_between(&p->start, now);
	double rate_rows = elapsed > 0 ? (double)p->rows / elapsed : 0;
	double rate_mb = elapsed > 0 ? (double)p->bytes / elapsed / 1e6 : 0;
	tdb_log(p->table, "%s: %s %lld rows, %.1f MB in %.1fs (%.0f rows/s, %.1f MB/s)", p->what, state,
	        (long long)p->rows, (double)p->bytes / 1e6, elapsed, rate_rows, rate_mb);
}

void tdb_progress_add(tdb_progress *p, int64_t rows, int64_t bytes)
{
	p->rows += rows;
	p->bytes += bytes;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (seconds_between(&p->last_log, &now) >= PROGRESS_INTERVAL_SECONDS) {
		log_progress(p, "so far", &now);
		p->last_log = now;
	}
}

void tdb_progress_done(tdb_progress *p, const char *done)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	log_progress(p, done, &now);
}

/* ------------------------------------------------------------ the cycle */

/* The table still exists under the oid it was registered with. 1 yes, 0 no, -1 error. */
static int table_exists(PGconn *c, const tdb_catalog_table *t, tl_error *err)
{
	char oid[24];
	snprintf(oid, sizeof(oid), "%lld", (long long)t->table_id);
	const char *params[] = {oid, t->schema_name, t->table_name};
	PGresult *res = tdb_pg_query(c, "checking that a registered table exists",
	                             "SELECT 1 FROM pg_catalog.pg_class r JOIN pg_catalog.pg_namespace n"
	                             " ON n.oid = r.relnamespace WHERE r.oid = $1::oid AND n.nspname = $2"
	                             " AND r.relname = $3",
	                             3, params, err);
	if (res == NULL)
		return -1;
	int found = PQntuples(res) == 1;
	PQclear(res);
	return found;
}

/*
 * After a lock wait timed out on table t: the other sessions holding locks
 * on the table, its partitions, the tierdb catalog, its reader lock or its
 * lake lock, so the log says whom to ask (or to end). Without
 * pg_read_all_stats the daemon sees only the pid, user and application of
 * other users' sessions.
 */
static void log_blockers(PGconn *c, const tdb_catalog_table *t)
{
	tl_error err;
	tl_error_clear(&err);
	char id[24];
	snprintf(id, sizeof(id), "%lld", (long long)t->table_id);
	const char *params[] = {id};
	PGresult *res = tdb_pg_query(
		c, "looking for the sessions that block the daemon",
		"SELECT a.pid, coalesce(a.usename, '?'), coalesce(a.application_name, ''), coalesce(a.state, '?'),"
		" coalesce(a.xact_start::text, '?'), coalesce(left(a.query, 200), '')"
		" FROM pg_catalog.pg_stat_activity a WHERE a.pid <> pg_catalog.pg_backend_pid() AND a.pid IN ("
		"  SELECT l.pid FROM pg_catalog.pg_locks l WHERE l.granted AND l.database IN (0, ("
		"   SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())) AND ("
		"   l.relation IN (SELECT $1::oid UNION ALL SELECT inhrelid FROM pg_catalog.pg_inherits"
		"                  WHERE inhparent = $1::oid UNION ALL SELECT c.oid FROM pg_catalog.pg_class c"
		"                  WHERE c.relnamespace = 'tierdb'::regnamespace)"
		"   OR (l.locktype = 'advisory' AND l.objsubid = 3 AND l.objid = $1::oid)"
		"   OR (l.locktype = 'advisory' AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint)"
		"       = pg_catalog.hashtextextended('tierdb_lake_' || $1, 0))))"
		" ORDER BY a.xact_start NULLS LAST",
		1, params, &err);
	if (res == NULL) {
		tdb_abort_transaction(c);
		tdb_log(tdb_table_label(t), "%s", err.message);
		return;
	}
	if (PQntuples(res) == 0)
		tdb_log(tdb_table_label(t), "the session that held the lock has let it go; retrying next cycle");
	for (int i = 0; i < PQntuples(res); i++)
		tdb_log(tdb_table_label(t),
		        "blocked by pid %s (user %s, application '%s', %s, transaction started %s): %s; end that "
		        "transaction (or SELECT pg_terminate_backend(%s)); retrying this table next cycle",
		        PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
		        PQgetvalue(res, i, 4), PQgetvalue(res, i, 5), PQgetvalue(res, i, 0));
	PQclear(res);
}

typedef int (*table_step)(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err);

static int step_premake(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_premake(c, t, cfg->premake_partitions, err);
}

static int step_recover(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	if (tdb_recover_tiering(c, t, err) < 0)
		return -1;
	/* Retention and maintenance runs left open block every other lake step (tdb_oplog_unfinished): settle them here too. */
	if (tdb_recover_retention(c, t, err) < 0)
		return -1;
	/* An ingest or Stream Load a crash interrupted holds back every later lake step too. */
	if (tdb_recover_ingests(c, t, err) < 0)
		return -1;
	return tdb_recover_maintenance(c, t, err) < 0 ? -1 : 0;
}

static int step_direct(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_settle_direct_commits(c, t, err);
}

static int step_columns(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_follow_column_changes(c, t, err);
}

static int step_tier(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_tier(c, t, cfg->tiering_lag, err);
}

static int step_drop(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_drop_tiered(c, t, err);
}

/*
 * Folds in batches of at most TIERDB_COMPACTION_BATCH delta rows until
 * the backlog behind T is drained (or a fold cannot run): each batch is one
 * snapshot, published before the next starts from the new S.
 */
static int step_fold(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	bool more;
	int rc = tdb_fold(c, t, cfg->compaction_batch, &more, err);
	while (rc == 0 && more && !tdb_daemon_stopping()) {
		tdb_catalog_table fresh;
		int found = tdb_catalog_load_table_by_id(c, t->table_id, &fresh, err);
		if (found <= 0)
			return found;
		rc = tdb_fold(c, &fresh, cfg->compaction_batch, &more, err);
		tdb_catalog_table_free(&fresh);
	}
	return rc;
}

static int step_retention(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_retention(c, t, err);
}

static int step_maintain(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_maintain(c, t, err);
}

static int step_mirror_recover(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	if (tdb_recover_maintenance(c, t, err) < 0)
		return -1;
	return tdb_recover_mirror(c, t, err);
}

static int step_mirror_copy(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_mirror_copy(c, t, err);
}

static int step_mirror_pump(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	tdb_mirror_config mc = {cfg->mirror_batch, cfg->mirror_flush_millis};
	return tdb_mirror_pump(c, t, &mc, err);
}

static int step_heap_window(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	tdb_mirror_config mc = {cfg->mirror_batch, cfg->mirror_flush_millis};
	return tdb_retire_heap_window(c, t, &mc, err);
}

/* Once a cycle: a mirror's slot holding more WAL than TIERDB_SLOT_WARN_BYTES is logged (the disk fills). */
static int step_mirror_slot(PGconn *c, const tdb_catalog_table *t, const tdb_daemon_config *cfg, tl_error *err)
{
	return tdb_mirror_check_slot(c, t, cfg->slot_warn_bytes, err);
}

/*
 * Which tables a step is for: tiered and direct, mirrored, and mirrored
 * with --heap-retention (FOR_MIRRORED | FOR_WINDOW), whose heap below T is
 * gone as a tiered table's is: reads and writes there go through the lake
 * and the delta, which the fold folds.
 */
enum { FOR_TIERED = 1, FOR_MIRRORED = 2, FOR_WINDOW = 4 };

static const struct {
	const char *name;
	table_step run;
	int tables;
} steps[] = {
	{"premake", step_premake, FOR_TIERED | FOR_WINDOW},
	/* A direct table's lake commits whose transaction did not commit are undone before any step builds on the lake. */
	{"direct commits", step_direct, FOR_TIERED},
	{"recovery", step_recover, FOR_TIERED | FOR_WINDOW},
	{"mirror recovery", step_mirror_recover, FOR_MIRRORED},
	{"schema evolution", step_columns, FOR_TIERED | FOR_MIRRORED},
	{"mirror copy", step_mirror_copy, FOR_MIRRORED},
	{"mirror pump", step_mirror_pump, FOR_MIRRORED},
	{"tiering", step_tier, FOR_TIERED},
	{"heap retention", step_heap_window, FOR_WINDOW},
	/* Before the fold: the delta rows below R leave with it instead of being folded for nothing. */
	{"retention", step_retention, FOR_TIERED},
	{"fold", step_fold, FOR_TIERED | FOR_WINDOW},
	{"drop", step_drop, FOR_TIERED | FOR_WINDOW},
	/* Last: it works on the S the steps above left, and its expiry removes what they replaced. */
	{"maintenance", step_maintain, FOR_TIERED | FOR_MIRRORED},
	{"mirror slot", step_mirror_slot, FOR_MIRRORED},
};

/* Whether the table's S differs now from what `t` (loaded before a step) says. */
static bool published_meanwhile(PGconn *c, const tdb_catalog_table *t)
{
	tl_error err;
	tl_error_clear(&err);
	tdb_abort_transaction(c);
	tdb_catalog_table now;
	if (tdb_catalog_load_table_by_id(c, t->table_id, &now, &err) <= 0)
		return false;
	bool moved = now.has_snapshot != t->has_snapshot || now.snapshot_id != t->snapshot_id;
	tdb_catalog_table_free(&now);
	return moved;
}

/*
 * Runs the steps for one table, reloading its catalog row before each (a
 * step advances the cut-line the next one starts from). 0 ok, 1 a step
 * failed (logged), -1 the connection is gone.
 */
static int cycle_table(PGconn *c, int64_t table_id, const tdb_daemon_config *cfg)
{
	int status = 0;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && !tdb_daemon_stopping(); i++) {
		tl_error err;
		tl_error_clear(&err);
		tdb_catalog_table t;
		memset(&t, 0, sizeof(t));
		int rc = tdb_catalog_load_table_by_id(c, table_id, &t, &err);
		if (rc == 0)
			return status; /* unregistered meanwhile */
		if (rc > 0) {
			rc = table_exists(c, &t, &err);
			if (rc == 0) {
				tdb_log(tdb_table_label(&t),
				        "the table registered with oid %lld no longer exists; run 'tierdb unregister --table %s'",
				        (long long)t.table_id, tdb_table_label(&t));
				tdb_catalog_table_free(&t);
				return 1;
			}
			int kind = strcmp(t.mode, "mirrored") != 0 ? FOR_TIERED
			           : t.has_heap_retention     ? FOR_MIRRORED | FOR_WINDOW
			                                      : FOR_MIRRORED;
			if (rc > 0 && (steps[i].tables & kind) != 0) {
				double started = tdb_metrics_clock();
				rc = steps[i].run(c, &t, cfg, &err);
				tdb_metrics_step_done(tdb_table_label(&t), steps[i].name, rc >= 0, tdb_metrics_clock() - started);
			}
		}
		if (rc < 0 && err.code == TL_ERR_CONFLICT && t.schema_name != NULL && published_meanwhile(c, &t)) {
			/*
			 * An ingest, a Stream Load or a direct-mode transaction published a
			 * new S while the step prepared its commit (they take the lake lock
			 * only to commit). The step gave its work up cleanly; it is no
			 * failure, and the next cycle starts from the new S.
			 */
			tdb_abort_transaction(c);
			tdb_log(tdb_table_label(&t), "%s: another writer published a new lake snapshot meanwhile; retrying next "
			        "cycle (%s)", steps[i].name, err.message);
			rc = 0;
		}
		if (rc < 0) {
			bool lock_timeout = strcmp(tdb_pg_last_sqlstate(), "55P03") == 0;
			tdb_abort_transaction(c);
			tdb_log(t.schema_name ? tdb_table_label(&t) : NULL, "%s failed: %s", steps[i].name, err.message);
			status = 1;
			/* The other steps would wait for the same holder: the table waits for the next cycle. */
			if (lock_timeout && t.schema_name != NULL) {
				log_blockers(c, &t);
				i = sizeof(steps) / sizeof(steps[0]);
			}
		}
		tdb_catalog_table_free(&t);
		/*
		 * A failed step does not stop the next: each reads the state it
		 * works from afresh, so a premake that cannot name a partition
		 * must not keep old partitions from moving.
		 */
		if (PQstatus(c) != CONNECTION_OK)
			return -1;
	}
	return status;
}

int tdb_daemon_pump_mirrors(PGconn *c, const tdb_daemon_config *cfg)
{
	tl_error err;
	tl_error_clear(&err);
	tdb_catalog_table *tables = NULL;
	int n = 0;
	if (tdb_catalog_list_tables(c, &tables, &n, &err) < 0) {
		tdb_abort_transaction(c);
		tdb_log(NULL, "%s", err.message);
		return PQstatus(c) == CONNECTION_OK ? 1 : -1;
	}
	int status = 0;
	for (int i = 0; i < n && !tdb_daemon_stopping(); i++) {
		if (strcmp(tables[i].mode, "mirrored") != 0 || tables[i].copying)
			continue;
		tl_error_clear(&err);
		if (step_mirror_pump(c, &tables[i], cfg, &err) < 0) {
			tdb_abort_transaction(c);
			tdb_log(tdb_table_label(&tables[i]), "mirror pump failed: %s", err.message);
			status = PQstatus(c) == CONNECTION_OK ? 1 : -1;
			if (status < 0)
				break;
			/* a batch whose publishing failed is settled now, not at the next full cycle (the next run reloads) */
			tl_error_clear(&err);
			if (tdb_recover_mirror(c, &tables[i], &err) < 0) {
				tdb_abort_transaction(c);
				tdb_log(tdb_table_label(&tables[i]), "mirror recovery failed: %s", err.message);
			}
		}
	}
	tdb_catalog_tables_free(tables, n);
	return status;
}

/*
 * Deletes expired read pins: every check already ignores them (a reader
 * past its expiry has no claim), so this only keeps the table small.
 */
static int sweep_pins(PGconn *c, tl_error *err)
{
	PGresult *res = tdb_pg_query(c, "sweeping expired read pins",
	                             "WITH swept AS (DELETE FROM tierdb.read_pins WHERE expires_at <= now() RETURNING 1)"
	                             " SELECT count(*) FROM swept",
	                             0, NULL, err);
	if (res == NULL)
		return -1;
	long long swept = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	if (swept > 0)
		tdb_log(NULL, "pins: swept %lld expired read pin%s", swept, swept == 1 ? "" : "s");
	return 0;
}

/* A profile that cannot be served, said once when it appears; its tables fail with the same reason. */
static void log_profile_problem(const char *message)
{
	tdb_log(NULL, "%s", message);
}

int tdb_daemon_cycle(PGconn *c, const tdb_daemon_config *cfg)
{
	tl_error err;
	tl_error_clear(&err);
	tdb_catalog_table *tables = NULL;
	int n = 0;
	/* Profiles are re-read every cycle: one created or changed meanwhile is served from now on. */
	if (tdb_catalog_check(c, &err) < 0 || tdb_profiles_serve(c, log_profile_problem, &err) < 0 ||
	    tdb_catalog_list_tables(c, &tables, &n, &err) < 0) {
		tdb_abort_transaction(c);
		tdb_log(NULL, "%s", err.message);
		return -1;
	}
	/* Copy the ids: each table's row is reloaded per step, and the list may be stale by then. */
	int64_t *ids = tl_calloc((size_t)n + 1, sizeof(int64_t));
	int nids = 0;
	for (int i = 0; i < n; i++)
		ids[nids++] = tables[i].table_id; /* tiered, direct and mirrored */
	tdb_catalog_tables_free(tables, n);

	int status = 0;
	for (int i = 0; i < nids && !tdb_daemon_stopping(); i++) {
		int rc = cycle_table(c, ids[i], cfg);
		if (rc < 0) {
			status = -1;
			break;
		}
		if (rc > 0)
			status = 1;
	}
	free(ids);
	if (status >= 0 && !tdb_daemon_stopping() && sweep_pins(c, &err) < 0) {
		tdb_log(NULL, "%s", err.message);
		status = PQstatus(c) == CONNECTION_OK ? 1 : -1;
	}
	return status;
}
