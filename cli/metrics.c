/*
 * metrics.c: the daemon's metrics, recorded and rendered (metrics.h;
 * docs/metrics.md lists every family).
 *
 * The process's own counters live in plain structs under `lock`; the
 * catalog's view is a finished text snapshot that tdb_metrics_refresh
 * swaps in under the same lock. A scrape therefore never waits for
 * Postgres and never touches the daemon's connection: it copies numbers
 * and one string while holding the lock.
 *
 * The catalog's numbers come from tdb_status_rows (status.h), the query
 * `tierdb status` prints, plus the newest tier key in the heap for the
 * cut-line lag (tdb_heap_max_key, what tiering reads) and the lake
 * statistics the maintenance step records in tierdb.lake_stats. Those are
 * collected from the lake's metadata by the daemon itself (maintenance.c:
 * after every change of a tiered table's S, at most once a minute for
 * mirrored and direct tables), so /metrics never reads lake metadata.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "catalog.h"
#include "cli.h"
#include "daemon.h"
#include "metrics.h"
#include "promtext.h"
#include "status.h"
#include "tiering.h"

/* ------------------------------------------------------------ state */

static const char *const op_names[TDB_METRICS_NOPS] = {"tiering", "fold"};

/* Upper bounds of the cycle duration histogram's buckets, in seconds (+Inf is implied). */
static const double cycle_buckets[] = {0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};
#define NBUCKETS (sizeof(cycle_buckets) / sizeof(cycle_buckets[0]))

/* The outcomes of a cycle, indexed by 1 - tdb_daemon_cycle's status. */
static const char *const cycle_outcomes[] = {"ok", "step_failed", "connection_lost"};

typedef struct step_record {
	const char *step; /* the daemon's static name */
	int64_t ok, failed;
	double seconds;
} step_record;

/* The statuses Stream Load answers with (load_http.c, load.c); any other is counted as the last. */
static const unsigned load_statuses[] = {200, 400, 401, 404, 405, 409, 413, 500, 503, 0};
#define NLOAD_STATUSES (sizeof(load_statuses) / sizeof(load_statuses[0]))

typedef struct table_record {
	char *table; /* schema.name */
	step_record *steps;
	int nsteps;
	int64_t operations[TDB_METRICS_NOPS];
	int64_t rows[TDB_METRICS_NOPS];
	int64_t bytes[TDB_METRICS_NOPS];
	double last_at[TDB_METRICS_NOPS]; /* seconds since 1970; meaningful when operations > 0 */
	double last_seconds[TDB_METRICS_NOPS];
	int64_t load_requests[NLOAD_STATUSES];
} table_record;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
	double started_at;
	bool connected, leader;
	int64_t cycles[3];
	int64_t cycle_buckets[NBUCKETS]; /* not cumulative here; summed when rendered */
	int64_t cycle_count;
	double cycle_seconds;
	double last_cycle_at;
	table_record *tables;
	int ntables;
	char *snapshot; /* the catalog's families, rendered by the daemon's thread */
	size_t snapshot_len;
	double snapshot_at;
	int64_t snapshot_failures;
	int64_t load_unresolved[NLOAD_STATUSES]; /* Stream Load requests that named no registered table */
} state;

static double wall_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double tdb_metrics_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The table's record, made on first use; NULL when memory ran out (that table's counters are then not kept). */
static table_record *table_record_of(const char *table)
{
	for (int i = 0; i < state.ntables; i++)
		if (strcmp(state.tables[i].table, table) == 0)
			return &state.tables[i];
	table_record *grown = realloc(state.tables, (size_t)(state.ntables + 1) * sizeof(table_record));
	if (grown == NULL)
		return NULL;
	state.tables = grown;
	table_record *r = &state.tables[state.ntables];
	memset(r, 0, sizeof(*r));
	r->table = strdup(table);
	if (r->table == NULL)
		return NULL;
	state.ntables++;
	return r;
}

static step_record *step_record_of(table_record *t, const char *step)
{
	for (int i = 0; i < t->nsteps; i++)
		if (strcmp(t->steps[i].step, step) == 0)
			return &t->steps[i];
	step_record *grown = realloc(t->steps, (size_t)(t->nsteps + 1) * sizeof(step_record));
	if (grown == NULL)
		return NULL;
	t->steps = grown;
	step_record *s = &t->steps[t->nsteps++];
	memset(s, 0, sizeof(*s));
	s->step = step;
	return s;
}

/* ------------------------------------------------------------ recording */

void tdb_metrics_set_role(bool connected, bool leader)
{
	pthread_mutex_lock(&lock);
	if (state.started_at == 0)
		state.started_at = wall_clock();
	state.connected = connected;
	state.leader = connected && leader;
	pthread_mutex_unlock(&lock);
}

void tdb_metrics_cycle_done(int status, double seconds)
{
	int outcome = status == 0 ? 0 : status > 0 ? 1 : 2;
	pthread_mutex_lock(&lock);
	state.cycles[outcome]++;
	size_t b = 0;
	while (b < NBUCKETS && seconds > cycle_buckets[b])
		b++;
	if (b < NBUCKETS)
		state.cycle_buckets[b]++;
	state.cycle_count++;
	state.cycle_seconds += seconds;
	state.last_cycle_at = wall_clock();
	pthread_mutex_unlock(&lock);
}

void tdb_metrics_step_done(const char *table, const char *step, bool ok, double seconds)
{
	pthread_mutex_lock(&lock);
	table_record *t = table_record_of(table);
	step_record *s = t != NULL ? step_record_of(t, step) : NULL;
	if (s != NULL) {
		if (ok)
			s->ok++;
		else
			s->failed++;
		s->seconds += seconds;
	}
	pthread_mutex_unlock(&lock);
}

void tdb_metrics_moved(const char *table, tdb_metrics_op op, int64_t rows, int64_t bytes, double seconds)
{
	pthread_mutex_lock(&lock);
	table_record *t = table_record_of(table);
	if (t != NULL) {
		t->operations[op]++;
		t->rows[op] += rows;
		t->bytes[op] += bytes;
		t->last_at[op] = wall_clock();
		t->last_seconds[op] = seconds;
	}
	pthread_mutex_unlock(&lock);
}

static size_t load_status_index(unsigned status)
{
	size_t i = 0;
	while (load_statuses[i] != 0 && load_statuses[i] != status)
		i++;
	return i;
}

void tdb_metrics_load_request(const char *table, unsigned status)
{
	size_t i = load_status_index(status);
	pthread_mutex_lock(&lock);
	table_record *t = table != NULL ? table_record_of(table) : NULL;
	if (t != NULL)
		t->load_requests[i]++;
	else
		state.load_unresolved[i]++;
	pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------ the process's families */

/* One sample of tierdb_load_requests_total, when the count is not 0. Called with the lock held. */
static void load_sample(tl_buf *out, const char *table, size_t i, int64_t count)
{
	if (count == 0)
		return;
	char status[16];
	snprintf(status, sizeof(status), "%u", load_statuses[i]);
	tdb_prom_int(out, "tierdb_load_requests_total",
	             (const char *const[]){"table", table, "status", load_statuses[i] != 0 ? status : "other", NULL},
	             count);
}

/* Called with the lock held. */
static void render_process(tl_buf *out)
{
	tdb_prom_family(out, "tierdb_build_info", "gauge", "Always 1; the version of the tierdb daemon.");
	tdb_prom_int(out, "tierdb_build_info", (const char *const[]){"version", TIERDB_VERSION, NULL}, 1);
	tdb_prom_family(out, "tierdb_daemon_start_time_seconds", "gauge",
	                "When this daemon process started, in seconds since 1970.");
	tdb_prom_double(out, "tierdb_daemon_start_time_seconds", NULL, state.started_at);
	tdb_prom_family(out, "tierdb_daemon_connected", "gauge", "1 while the daemon has a connection to Postgres.");
	tdb_prom_int(out, "tierdb_daemon_connected", NULL, state.connected);
	tdb_prom_family(out, "tierdb_daemon_leader", "gauge",
	                "1 while this daemon holds the leader lock and runs the cycles; 0 while another daemon leads "
	                "(this one waits, and still serves the catalog's metrics).");
	tdb_prom_int(out, "tierdb_daemon_leader", NULL, state.leader);

	tdb_prom_family(out, "tierdb_daemon_cycles_total", "counter",
	                "Cycles this daemon ran as the leader, by outcome: ok, step_failed (a step of some table failed "
	                "and was logged; the others ran), connection_lost (the cycle stopped; the daemon reconnects).");
	for (int i = 0; i < 3; i++)
		tdb_prom_int(out, "tierdb_daemon_cycles_total", (const char *const[]){"outcome", cycle_outcomes[i], NULL},
		             state.cycles[i]);
	tdb_prom_family(out, "tierdb_daemon_cycle_duration_seconds", "histogram",
	                "How long the daemon's cycles over every registered table took.");
	int64_t cumulative = 0;
	for (size_t b = 0; b < NBUCKETS; b++) {
		char le[32];
		snprintf(le, sizeof(le), "%g", cycle_buckets[b]);
		cumulative += state.cycle_buckets[b];
		tdb_prom_int(out, "tierdb_daemon_cycle_duration_seconds_bucket", (const char *const[]){"le", le, NULL},
		             cumulative);
	}
	tdb_prom_int(out, "tierdb_daemon_cycle_duration_seconds_bucket", (const char *const[]){"le", "+Inf", NULL},
	             state.cycle_count);
	tdb_prom_double(out, "tierdb_daemon_cycle_duration_seconds_sum", NULL, state.cycle_seconds);
	tdb_prom_int(out, "tierdb_daemon_cycle_duration_seconds_count", NULL, state.cycle_count);
	tdb_prom_family(out, "tierdb_daemon_last_cycle_timestamp_seconds", "gauge",
	                "When this daemon's last cycle ended, in seconds since 1970 (absent before its first).");
	if (state.cycle_count > 0)
		tdb_prom_double(out, "tierdb_daemon_last_cycle_timestamp_seconds", NULL, state.last_cycle_at);

	tdb_prom_family(out, "tierdb_daemon_steps_total", "counter",
	                "Steps of the daemon's cycle run for each table (premake, tiering, fold, maintenance, mirror "
	                "pump, ...), by outcome ok or failed.");
	for (int i = 0; i < state.ntables; i++)
		for (int k = 0; k < state.tables[i].nsteps; k++) {
			const step_record *s = &state.tables[i].steps[k];
			tdb_prom_int(out, "tierdb_daemon_steps_total",
			             (const char *const[]){"table", state.tables[i].table, "step", s->step, "outcome", "ok", NULL},
			             s->ok);
			tdb_prom_int(out, "tierdb_daemon_steps_total",
			             (const char *const[]){"table", state.tables[i].table, "step", s->step, "outcome", "failed",
			                                   NULL},
			             s->failed);
		}
	tdb_prom_family(out, "tierdb_daemon_step_seconds_total", "counter",
	                "Seconds the daemon spent in each step of each table.");
	for (int i = 0; i < state.ntables; i++)
		for (int k = 0; k < state.tables[i].nsteps; k++)
			tdb_prom_double(out, "tierdb_daemon_step_seconds_total",
			                (const char *const[]){"table", state.tables[i].table, "step",
			                                      state.tables[i].steps[k].step, NULL},
			                state.tables[i].steps[k].seconds);

	static const struct {
		const char *name, *type, *help;
	} moved[] = {
		{"tierdb_operations_total", "counter",
		 "Published data-moving operations of this daemon: tiering runs (each advances the cut-line T) and folds "
		 "(each advances the lake snapshot S)."},
		{"tierdb_moved_rows_total", "counter",
		 "Rows those operations moved: heap rows copied into the lake (tiering), delta rows folded (fold)."},
		{"tierdb_moved_bytes_total", "counter", "Bytes of Parquet files those operations wrote into the lake."},
		{"tierdb_last_operation_timestamp_seconds", "gauge",
		 "When this daemon last published such an operation (tiering: the last advance of T), in seconds since "
		 "1970; absent until it has."},
		{"tierdb_last_operation_duration_seconds", "gauge",
		 "How long that last operation took, from its start to its publication."},
	};
	for (size_t f = 0; f < sizeof(moved) / sizeof(moved[0]); f++) {
		tdb_prom_family(out, moved[f].name, moved[f].type, moved[f].help);
		for (int i = 0; i < state.ntables; i++)
			for (int op = 0; op < TDB_METRICS_NOPS; op++) {
				const table_record *t = &state.tables[i];
				const char *const labels[] = {"table", t->table, "operation", op_names[op], NULL};
				if (f == 0)
					tdb_prom_int(out, moved[f].name, labels, t->operations[op]);
				else if (f == 1)
					tdb_prom_int(out, moved[f].name, labels, t->rows[op]);
				else if (f == 2)
					tdb_prom_int(out, moved[f].name, labels, t->bytes[op]);
				else if (t->operations[op] > 0)
					tdb_prom_double(out, moved[f].name, labels, f == 3 ? t->last_at[op] : t->last_seconds[op]);
			}
	}

	tdb_prom_family(out, "tierdb_load_requests_total", "counter",
	                "Stream Load requests this daemon answered, by table and HTTP status (200 committed or replayed, "
	                "400 bad body, 401 bad token, 404 unknown table, 405 not POST, 409 concurrent duplicate label, "
	                "413 body too large, 500/503 the daemon's side); table=\"\" for requests that named no "
	                "registered table. A status appears at its first request.");
	for (size_t k = 0; k < NLOAD_STATUSES; k++)
		load_sample(out, "", k, state.load_unresolved[k]);
	for (int i = 0; i < state.ntables; i++)
		for (size_t k = 0; k < NLOAD_STATUSES; k++)
			load_sample(out, state.tables[i].table, k, state.tables[i].load_requests[k]);

	tdb_prom_family(out, "tierdb_metrics_snapshot_timestamp_seconds", "gauge",
	                "When the daemon last read the catalog for the per-table metrics below (after each cycle, or each "
	                "wait of a daemon that does not lead): they are at most one cycle old. Absent before the first "
	                "read.");
	if (state.snapshot != NULL)
		tdb_prom_double(out, "tierdb_metrics_snapshot_timestamp_seconds", NULL, state.snapshot_at);
	tdb_prom_family(out, "tierdb_metrics_snapshot_failures_total", "counter",
	                "Reads of the catalog for the metrics that failed (logged; the previous snapshot is served).");
	tdb_prom_int(out, "tierdb_metrics_snapshot_failures_total", NULL, state.snapshot_failures);
}

char *tdb_metrics_render(size_t *len)
{
	tl_buf out;
	tl_buf_init(&out);
	pthread_mutex_lock(&lock);
	render_process(&out);
	if (state.snapshot != NULL)
		tl_buf_append(&out, state.snapshot, state.snapshot_len);
	pthread_mutex_unlock(&lock);
	if (tl_buf_failed(&out)) {
		tl_buf_free(&out);
		return NULL;
	}
	tl_buf_append_byte(&out, '\0');
	*len = out.len - 1;
	return (char *)out.data;
}

/* ------------------------------------------------------------ the catalog's families */

/* One registered table as the snapshot needs it. */
typedef struct table_view {
	const char *table;
	int row;         /* in the status result */
	bool time_key;   /* timestamp, timestamptz or date: lags in seconds */
	bool has_t;      /* a cut-line T (not a mirrored table without a heap window) */
	double t_value;  /* T in seconds since 1970 (time keys) or as the key */
	bool has_lag;
	double lag;      /* newest heap tier key - T, never below 0 */
	json_t *partition_states, *load_labels, *lake_stats;
} table_view;

/* A canonical key value in seconds since 1970 (time keys) or as itself. */
static double key_value(tdb_key_type type, int64_t v)
{
	switch (type) {
	case TDB_KEY_TIMESTAMPTZ:
	case TDB_KEY_TIMESTAMP: return (double)v / 1e6;
	case TDB_KEY_DATE: return (double)v * 86400.0;
	default: return (double)v;
	}
}

static const char *value_or_null(const PGresult *res, int row, const char *column)
{
	int col = PQfnumber(res, column);
	return col < 0 || PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* A family of one integer column of the status rows, a sample per table where it is not NULL. */
static void column_family(tl_buf *out, const PGresult *res, const table_view *v, int n, const char *name,
                          const char *help, const char *column)
{
	tdb_prom_family(out, name, "gauge", help);
	for (int i = 0; i < n; i++) {
		const char *text = value_or_null(res, v[i].row, column);
		if (text != NULL)
			tdb_prom_double(out, name, (const char *const[]){"table", v[i].table, NULL}, strtod(text, NULL));
	}
}

/* A family with one sample per table and per listed state: the count in `counts` (a JSON object), 0 when absent. */
static void state_family(tl_buf *out, const table_view *v, int n, size_t counts_offset, const char *name,
                         const char *help, const char *label, const char *const *states)
{
	tdb_prom_family(out, name, "gauge", help);
	for (int i = 0; i < n; i++) {
		const json_t *counts = *(json_t *const *)((const char *)&v[i] + counts_offset);
		for (int k = 0; states[k] != NULL; k++)
			tdb_prom_int(out, name, (const char *const[]){"table", v[i].table, label, states[k], NULL},
			             json_integer_value(json_object_get(counts, states[k])));
	}
}

/* A family of one integer of the recorded lake statistics, for the tables that have them. */
static void lake_family(tl_buf *out, const table_view *v, int n, const char *name, const char *help,
                        const char *key)
{
	tdb_prom_family(out, name, "gauge", help);
	for (int i = 0; i < n; i++) {
		json_t *value = json_object_get(v[i].lake_stats, key);
		if (json_is_integer(value))
			tdb_prom_int(out, name, (const char *const[]){"table", v[i].table, NULL}, json_integer_value(value));
	}
}

static void render_tables(tl_buf *out, const PGresult *res, const table_view *v, int n)
{
	tdb_prom_family(out, "tierdb_table_info", "gauge",
	                "Always 1, one per registered table: its mode (tiered, mirrored, direct) and tier key type.");
	for (int i = 0; i < n; i++)
		tdb_prom_int(out, "tierdb_table_info",
		             (const char *const[]){"table", v[i].table, "mode", value_or_null(res, v[i].row, "mode"),
		                                   "tier_key_type", value_or_null(res, v[i].row, "tier_key_type"), NULL},
		             1);

	static const struct {
		const char *name, *help;
		bool time_key, lag;
	} cutline[] = {
		{"tierdb_cutline_timestamp_seconds", "The cut-line T of a table with a time tier key, in seconds since 1970.",
		 true, false},
		{"tierdb_cutline_key", "The cut-line T of a table with an integer tier key.", false, false},
		{"tierdb_cutline_lag_seconds",
		 "How far T trails the newest tier key in the heap, in seconds (time tier keys): the heap's span not yet "
		 "tiered. It settles near TIERDB_TIERING_LAG plus a partition width and grows when tiering stalls.",
		 true, true},
		{"tierdb_cutline_lag_keys", "How far T trails the newest tier key in the heap, in key units (integer keys).",
		 false, true},
	};
	for (size_t f = 0; f < sizeof(cutline) / sizeof(cutline[0]); f++) {
		tdb_prom_family(out, cutline[f].name, "gauge", cutline[f].help);
		for (int i = 0; i < n; i++)
			if (v[i].has_t && v[i].time_key == cutline[f].time_key && (!cutline[f].lag || v[i].has_lag))
				tdb_prom_double(out, cutline[f].name, (const char *const[]){"table", v[i].table, NULL},
				                cutline[f].lag ? v[i].lag : v[i].t_value);
	}
	/* The integer columns of the status rows, one family each. */
	static const struct {
		const char *name, *column, *help;
	} columns[] = {
		{"tierdb_cutline_updated_timestamp_seconds", "cutline_updated_epoch",
		 "When the table's cut-line row last changed (an advance of T, a new lake snapshot S, the retention line), "
		 "in seconds since 1970."},
		{"tierdb_delta_backlog_rows", "delta_backlog",
		 "Rows in the delta (corrections of cold rows) not yet folded into the lake."},
		{"tierdb_unfoldable_delta_rows", "unfoldable",
		 "Delta rows the fold cannot write into the lake (tierdb status says why)."},
		{"tierdb_read_pins", "read_pins", "Unexpired read pins (external readers holding (T, S))."},
		{"tierdb_mirror_frontier_lag_bytes", "mirror_frontier_lag_bytes",
		 "Mirrored tables: WAL written since the mirror's frontier F, in bytes (how far the lake trails the heap)."},
		{"tierdb_mirror_slot_retained_wal_bytes", "slot_wal_bytes",
		 "Mirrored tables: WAL the replication slot keeps on the server's disk, in bytes."},
		{"tierdb_lake_stats_timestamp_seconds", "lake_stats_epoch",
		 "When the lake statistics (tierdb_lake_*) were collected from the lake's metadata (by the daemon's "
		 "maintenance step: after each new snapshot of a tiered table, at most once a minute for mirrored and "
		 "direct tables), in seconds since 1970."},
	};
	for (size_t f = 0; f < sizeof(columns) / sizeof(columns[0]); f++)
		column_family(out, res, v, n, columns[f].name, columns[f].help, columns[f].column);
	static const char *const partition_states[] = {"hot", "sealing", "tiering", "tiered", "dropped", NULL};
	state_family(out, v, n, offsetof(table_view, partition_states), "tierdb_partitions",
	             "Heap range partitions the catalog tracks, by state.", "state", partition_states);
	tdb_prom_family(out, "tierdb_mirror_copying", "gauge",
	                "Mirrored tables: 1 while the initial copy into the lake is running.");
	for (int i = 0; i < n; i++)
		if (strcmp(value_or_null(res, v[i].row, "mode"), "mirrored") == 0)
			tdb_prom_int(out, "tierdb_mirror_copying", (const char *const[]){"table", v[i].table, NULL},
			             strcmp(value_or_null(res, v[i].row, "copying"), "t") == 0);
	static const char *const label_states[] = {"staged", "committed", "failed", NULL};
	state_family(out, v, n, offsetof(table_view, load_labels), "tierdb_load_labels",
	             "Stream Load labels in tierdb.load_labels, by state (staged: a load in progress, or one a crash "
	             "interrupted that is settled when its label is sent again).",
	             "state", label_states);

	/* The integers of the recorded lake statistics (maintenance.c's health_json), one family each. */
	static const struct {
		const char *name, *key, *help;
	} lake[] = {
		{"tierdb_lake_snapshots", "snapshots", "Snapshots in the lake table's metadata."},
		{"tierdb_lake_manifests", "manifests", "Manifests of the lake's current snapshot."},
		{"tierdb_lake_data_files", "data_files", "Data files of the lake's current snapshot."},
		{"tierdb_lake_small_data_files", "small_files",
		 "Data files smaller than the table's maintenance policy small_file_bytes."},
		{"tierdb_lake_data_bytes", "data_bytes", "Bytes of the current snapshot's data files."},
		{"tierdb_lake_records", "records", "Rows in the current snapshot's data files (before deletes)."},
		{"tierdb_lake_delete_records", "delete_records", "Rows in the current snapshot's delete files."},
	};
	for (size_t f = 0; f < sizeof(lake) / sizeof(lake[0]); f++)
		lake_family(out, v, n, lake[f].name, lake[f].help, lake[f].key);
	tdb_prom_family(out, "tierdb_lake_delete_files", "gauge",
	                "Delete files of the lake's current snapshot, by kind (position, equality).");
	for (int i = 0; i < n; i++) {
		json_t *pos = json_object_get(v[i].lake_stats, "position_delete_files");
		json_t *eq = json_object_get(v[i].lake_stats, "equality_delete_files");
		if (json_is_integer(pos) && json_is_integer(eq)) {
			tdb_prom_int(out, "tierdb_lake_delete_files",
			             (const char *const[]){"table", v[i].table, "kind", "position", NULL}, json_integer_value(pos));
			tdb_prom_int(out, "tierdb_lake_delete_files",
			             (const char *const[]){"table", v[i].table, "kind", "equality", NULL}, json_integer_value(eq));
		}
	}
}

/*
 * The lag of each table with a cut-line: the newest tier key in the heap
 * minus T (tdb_heap_max_key, as tiering reads it). -1 when the connection
 * failed; a failure of one table is logged and leaves its lag out.
 */
static int read_lags(PGconn *c, table_view *v, int n)
{
	tl_error err;
	tl_error_clear(&err);
	tdb_catalog_table *tables = NULL;
	int ntables = 0;
	if (tdb_catalog_list_tables(c, &tables, &ntables, &err) < 0) {
		tdb_abort_transaction(c);
		tdb_log(NULL, "metrics: %s", err.message);
		return -1;
	}
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++)
		for (int k = 0; k < ntables && v[i].has_t; k++) {
			const tdb_catalog_table *t = &tables[k];
			if (strcmp(tdb_table_label(t), v[i].table) != 0)
				continue;
			bool any = false;
			int64_t max_key = 0;
			tl_error_clear(&err);
			if (tdb_heap_max_key(c, t, &any, &max_key, &err) < 0) {
				tdb_abort_transaction(c);
				tdb_log(v[i].table, "metrics: the cut-line lag is left out: %s", err.message);
				rc = PQstatus(c) == CONNECTION_OK ? 0 : -1;
			} else if (any) {
				double lag = key_value(t->tier_key_type, max_key) - key_value(t->tier_key_type, t->cutline_t);
				v[i].has_lag = true;
				v[i].lag = lag > 0 ? lag : 0;
			}
			break;
		}
	tdb_catalog_tables_free(tables, ntables);
	return rc;
}

/*
 * Drops the counters of tables no longer registered (called with the lock
 * held), so that /metrics does not keep describing a table unregistered
 * long ago; one registered again starts from zero, as after a restart.
 */
static void forget_unregistered(const table_view *v, int n)
{
	int kept = 0;
	for (int i = 0; i < state.ntables; i++) {
		bool registered = false;
		for (int k = 0; k < n && !registered; k++)
			registered = strcmp(v[k].table, state.tables[i].table) == 0;
		if (registered) {
			state.tables[kept++] = state.tables[i];
		} else {
			free(state.tables[i].table);
			free(state.tables[i].steps);
		}
	}
	state.ntables = kept;
}

void tdb_metrics_refresh(PGconn *c)
{
	tl_error err;
	tl_error_clear(&err);
	PGresult *res = tdb_status_rows(c, NULL, NULL, &err);
	if (res == NULL) {
		tdb_abort_transaction(c);
		tdb_log(NULL, "metrics: %s", err.message);
		pthread_mutex_lock(&lock);
		state.snapshot_failures++;
		pthread_mutex_unlock(&lock);
		return;
	}
	int n = PQntuples(res);
	table_view *v = calloc((size_t)n + 1, sizeof(table_view));
	for (int i = 0; v != NULL && i < n; i++) {
		v[i].table = PQgetvalue(res, i, 0);
		v[i].row = i;
		tdb_key_type type = TDB_KEY_BIGINT;
		tl_error ignored;
		tl_error_clear(&ignored);
		tdb_key_type_parse(value_or_null(res, i, "tier_key_type"), &type, &ignored);
		v[i].time_key = type != TDB_KEY_BIGINT;
		const char *t = value_or_null(res, i, "cutline_t");
		v[i].has_t = t != NULL && (strcmp(value_or_null(res, i, "mode"), "mirrored") != 0 ||
		                           strcmp(value_or_null(res, i, "has_heap_retention"), "t") == 0);
		v[i].t_value = t != NULL ? key_value(type, strtoll(t, NULL, 10)) : 0;
		const char *text;
		v[i].partition_states = (text = value_or_null(res, i, "partition_states")) ? json_loads(text, 0, NULL) : NULL;
		v[i].load_labels = (text = value_or_null(res, i, "load_labels")) ? json_loads(text, 0, NULL) : NULL;
		v[i].lake_stats = (text = value_or_null(res, i, "lake_stats")) ? json_loads(text, 0, NULL) : NULL;
	}
	int rc = v == NULL ? -1 : read_lags(c, v, n);
	tl_buf out;
	tl_buf_init(&out);
	if (rc == 0)
		render_tables(&out, res, v, n);
	pthread_mutex_lock(&lock);
	if (rc < 0 || tl_buf_failed(&out)) {
		state.snapshot_failures++;
		tl_buf_free(&out);
	} else {
		tl_free(state.snapshot);
		state.snapshot = (char *)out.data;
		state.snapshot_len = out.len;
		state.snapshot_at = wall_clock();
		forget_unregistered(v, n);
	}
	pthread_mutex_unlock(&lock);
	for (int i = 0; v != NULL && i < n; i++) {
		json_decref(v[i].partition_states);
		json_decref(v[i].load_labels);
		json_decref(v[i].lake_stats);
	}
	free(v);
	PQclear(res);
}
