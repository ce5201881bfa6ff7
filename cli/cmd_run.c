/*
 * cmd_run.c: `tierdb run [--once] [--dsn DSN]`, the daemon.
 *
 * The loop around daemon.c's cycle: connect, win the leader lock, run a
 * cycle, sleep TIERDB_CYCLE_INTERVAL_SECONDS, repeat until SIGTERM or
 * SIGINT. A lost connection is retried next cycle (the leader lock went
 * with it, so leadership is contested again). `--once` runs one cycle and
 * exits: 0 when it succeeded or another daemon leads, 1 when a step failed.
 *
 * With TIERDB_METRICS_PORT set, /metrics (metrics.h) listens from the start;
 * this loop records each cycle and re-reads the catalog's view for it after
 * each cycle, or after each wait of a daemon that does not lead.
 *
 * With TIERDB_LOAD_TOKEN set, Stream Load (load.h) listens too, in its own
 * thread pool with a connection per request; it needs nothing of this loop.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "daemon.h"
#include "load.h"
#include "profiles.h"
#include "tiering.h"
#include "metrics.h"
#include "mirror.h"
#include "pg.h"

static void usage(FILE *out)
{
	fputs("Usage: tierdb run [--once] [--dsn DSN]\n"
	      "\n"
	      "Runs the TierDB daemon: each cycle, for every registered tiered table, keeps empty\n"
	      "partitions ahead of max(tier_key), moves whole partitions behind max(tier_key) - lag\n"
	      "into the lake, and drops them from the heap once no reader needs them.\n"
	      "Several daemons may run; one leads, the others wait.\n"
	      "\n"
	      "Options:\n"
	      "  --once       run one cycle and exit (0 ok or not the leader, 1 a step failed)\n"
	      "  --dsn DSN    connection string or URL (default TIERDB_PG_URL, else PG* variables)\n"
	      "\n"
	      "Environment:\n"
	      "  TIERDB_CYCLE_INTERVAL_SECONDS  seconds between cycles (10)\n"
	      "  TIERDB_MIRROR_BATCH            mirrored tables: changes per lake commit (100000)\n"
	      "  TIERDB_MIRROR_FLUSH_MILLIS     mirrored tables: how often the pump runs between cycles\n"
	      "                                 and how long a batch gathers changes (1000)\n"
	      "  TIERDB_SLOT_WARN_BYTES         mirrored tables: WAL a slot may hold before a warning (1 GiB)\n"
	      "  TIERDB_TIERING_LAG             how far behind max(tier_key) tiering stays (0): a number\n"
	      "                                 for integer keys, 90s/15m/12h/7d (or seconds) for\n"
	      "                                 timestamps, days for dates\n"
	      "  TIERDB_PREMAKE_PARTITIONS      empty partitions kept ahead of max(tier_key) (2)\n"
	      "  TIERDB_COMPACTION_BATCH        the most delta rows one fold snapshot takes (1000)\n"
	      "  TIERDB_LOCK_TIMEOUT_MS         the longest the daemon waits for one lock (5000); a table\n"
	      "                                 whose lock is held longer is retried next cycle, and the\n"
	      "                                 sessions holding it are logged\n"
	      "  TIERDB_METRICS_PORT            serve Prometheus metrics at http://ADDRESS:PORT/metrics\n"
	      "                                 (unset: no endpoint; docs/metrics.md)\n"
	      "  TIERDB_METRICS_ADDRESS         the address /metrics listens on (127.0.0.1)\n"
	      "  TIERDB_LOAD_TOKEN              serve Stream Load, POST http://ADDRESS:PORT/api/load/<schema>.<table>,\n"
	      "                                 to clients sending 'Authorization: Bearer <token>' (unset: no\n"
	      "                                 endpoint; at least 16 characters; docs/stream-load.md)\n"
	      "  TIERDB_LOAD_ADDRESS            the address Stream Load listens on (127.0.0.1)\n"
	      "  TIERDB_LOAD_PORT               its port (8040)\n"
	      "  TIERDB_LOAD_THREADS            loads served at once (4)\n"
	      "  TIERDB_LOAD_MAX_BYTES          the largest body of one load (1073741824); larger: 413\n"
	      "  TIERDB_LOAD_DELTA_ROWS         the most rows below T one load sends to the delta (1000);\n"
	      "                                 a load with more writes them to the lake in one snapshot\n"
	      "  TIERDB_WAREHOUSE               the lake's warehouse when the profile names none\n"
	      "  TIERDB_CREDENTIALS_<REF>       the S3 credentials a storage profile names by REF:\n"
	      "                                 access_key_id=...;secret_access_key=...[;session_token=...]\n"
	      "  TIERDB_CREDENTIALS_FILE        a file (mode 0600) of TIERDB_CREDENTIALS_<REF>=... lines,\n"
	      "                                 for references not in the environment (docs/profiles.md)\n",
	      out);
}

/* Connects (or keeps the connection) and leads. 1 ready, 0 not the leader, -1 no connection. */
static int prepare(PGconn **conn, bool *leader, const char *dsn, const tdb_daemon_config *cfg)
{
	tl_error err;
	tl_error_clear(&err);
	if (*conn == NULL) {
		*conn = tdb_pg_connect(dsn, &err);
		if (*conn != NULL && tdb_daemon_session_setup(*conn, cfg, &err) < 0) {
			PQfinish(*conn);
			*conn = NULL;
		}
		if (*conn == NULL) {
			tdb_log(NULL, "%s", err.message);
			return -1;
		}
		*leader = false;
	}
	if (*leader)
		return 1;
	int rc = tdb_daemon_try_lead(*conn, &err);
	if (rc < 0) {
		tdb_log(NULL, "%s", err.message);
		PQfinish(*conn);
		*conn = NULL;
		return -1;
	}
	if (rc == 0) {
		tdb_log(NULL, "another tierdb daemon leads; waiting");
		return 0;
	}
	*leader = true;
	tdb_log(NULL, "leading: this daemon moves data now");
	return 1;
}

/* After a cycle or a wait: who we are, and the catalog's view for /metrics (when it is served). */
static void update_metrics(PGconn *conn, bool leader, const tdb_daemon_config *cfg)
{
	tdb_metrics_set_role(conn != NULL, leader);
	if (cfg->metrics_port != 0 && conn != NULL && !tdb_daemon_stopping())
		tdb_metrics_refresh(conn);
}

static int run_loop(const char *dsn, bool once, const tdb_daemon_config *cfg)
{
	PGconn *conn = NULL;
	bool leader = false;
	int status = CLI_EXIT_OK;
	bool first = true;
	while (!tdb_daemon_stopping()) {
		int ready = prepare(&conn, &leader, dsn, cfg);
		/* At start, before the first cycle (which may take long): the catalog as it is. */
		if (first)
			update_metrics(conn, leader, cfg);
		first = false;
		if (ready > 0) {
			double started = tdb_metrics_clock();
			int rc = tdb_daemon_cycle(conn, cfg);
			tdb_metrics_cycle_done(rc, tdb_metrics_clock() - started);
			if (rc < 0) {
				/* Reconnect next cycle; the leader lock died with the session, and the mirrors' streams go. */
				tdb_mirror_close_streams();
				PQfinish(conn);
				conn = NULL;
				leader = false;
			}
			if (rc != 0)
				status = CLI_EXIT_FAILURE;
		} else if (ready < 0) {
			status = CLI_EXIT_FAILURE;
		} else {
			/* Not the leader: still serve the profiles' storages, which this daemon's Stream Loads use. */
			tl_error err;
			tl_error_clear(&err);
			if (tdb_profiles_serve(conn, NULL, &err) < 0)
				tdb_log(NULL, "%s", err.message);
			tdb_abort_transaction(conn);
		}
		update_metrics(conn, leader, cfg);
		if (once)
			break;
		status = CLI_EXIT_OK;
		/* until the next cycle, mirrored tables' pumps run on their own, every TIERDB_MIRROR_FLUSH_MILLIS */
		for (int64_t left = cfg->interval_seconds * 1000; left > 0 && !tdb_daemon_stopping();
		     left -= cfg->mirror_flush_millis) {
			tdb_daemon_sleep_ms(left < cfg->mirror_flush_millis ? left : cfg->mirror_flush_millis);
			if (conn != NULL && leader && !tdb_daemon_stopping() && tdb_daemon_pump_mirrors(conn, cfg) < 0) {
				tdb_mirror_close_streams();
				PQfinish(conn);
				conn = NULL;
				leader = false;
				tdb_metrics_set_role(false, false);
			}
		}
	}
	if (tdb_daemon_stopping())
		tdb_log(NULL, "stopping on request");
	tdb_mirror_close_streams();
	if (conn != NULL)
		PQfinish(conn);
	return status;
}

static int run_run(int argc, char **argv)
{
	enum { OPT_ONCE = 1, OPT_DSN };
	static const cli_option options[] = {{"once", false, OPT_ONCE}, {"dsn", true, OPT_DSN}, {NULL, false, 0}};
	cli_parser p;
	cli_parser_init(&p, "tierdb run", usage, options, argc, argv);
	bool once = false;
	const char *dsn = NULL;
	for (int opt; (opt = cli_next(&p)) != CLI_END;)
		switch (opt) {
		case CLI_HELP:
			return cli_help(&p);
		case CLI_ERROR:
			return CLI_EXIT_USAGE;
		case CLI_POSITIONAL:
			return cli_usage_error(p.command, "unexpected argument '%s'", p.value);
		case OPT_ONCE:
			once = true;
			break;
		case OPT_DSN:
			dsn = p.value;
			break;
		}
	tdb_daemon_config cfg;
	tl_error err;
	tl_error_clear(&err);
	if (tdb_daemon_config_from_env(&cfg, &err) < 0)
		return cli_fail("%s", err.message);
	tdb_daemon_install_signals();
	tdb_metrics_set_role(false, false);
	if (cfg.metrics_port != 0) {
		if (tdb_metrics_listen(cfg.metrics_address, cfg.metrics_port, &err) < 0)
			return cli_fail("%s", err.message);
		tdb_log(NULL, "serving metrics at http://%s:%lld/metrics", cfg.metrics_address, (long long)cfg.metrics_port);
	}
	tdb_load_config load;
	if (tdb_load_config_from_env(&load, &err) < 0) {
		tdb_metrics_stop();
		return cli_fail("%s", err.message);
	}
	if (load.token != NULL) {
		load.dsn = dsn;
		load.daemon = &cfg;
		if (tdb_load_listen(&load, &err) < 0) {
			tdb_metrics_stop();
			return cli_fail("%s", err.message);
		}
		tdb_log(NULL, "serving Stream Load at http://%s:%lld/api/load/<schema>.<table> (%lld threads)", load.address,
		        (long long)load.port, (long long)load.threads);
	}
	int status = run_loop(dsn, once, &cfg);
	tdb_load_stop();
	tdb_metrics_stop();
	return status;
}

const cli_command cli_run_command = {"run", "the daemon: premake and tier registered tables", run_run};
