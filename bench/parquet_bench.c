/*
 * parquet_bench.c: write and full-scan throughput of the lake Parquet codec
 * on an event-shaped table, for comparison with pyarrow (bench/parquet_peer.py
 * generates the very same rows; scripts/run-benchmarks.sh runs both).
 *
 *   parquet_bench write FILE [--rows N]   (default 10,000,000 rows)
 *   parquet_bench read FILE
 *
 * Each prints one JSON line: rows, seconds (wall clock), cpu_seconds,
 * rows_per_sec (by the wall clock), file_bytes, peak_rss_mb and a checksum of
 * the data that was written or read.
 *
 * The rows are a pure function of the row index (splitmix64 of index*8+k for
 * column k, all in wrapping uint64 arithmetic), so numpy can reproduce them
 * exactly:
 *   id        int64 (required)   i
 *   ts        int64 TIMESTAMP(MICROS, UTC) (required)  BASE + i*1000 + h1 % 1000
 *   device_id int32 (required)   h2 % 10000
 *   value     double (required)  (h3 % 1000000) / 100.0
 *   event     string (required)  EVENTS[h4 % 20]
 *   user      string (optional)  null when h5 % 100 < 30, else "user-" ((h5 >> 32) % 100000)
 *
 * What is timed: write times only the writer (open, every
 * tl_pq_writer_write, close, and the output's finish, which flushes and
 * fsyncs: the peer fsyncs its file too); each batch is generated before its
 * clock starts. Read times reader open, every tl_pq_reader_next and free; the
 * checksum over each batch runs with the clock stopped. Both sides of the
 * comparison are timed the same way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "tierlake/buf.h"
#include "tierlake/error.h"
#include "tierlake/io.h"
#include "tierlake/parquet.h"

#define DEFAULT_ROWS 10000000LL
#define BATCH_ROWS 65536
#define BASE_TIMESTAMP_MICROS 1704067200000000LL /* 2024-01-01T00:00:00Z */
#define NUM_DEVICES 10000
#define NUM_USERS 100000
#define NULL_USER_PERCENT 30

enum { COL_ID, COL_TS, COL_DEVICE, COL_VALUE, COL_EVENT, COL_USER, NUM_COLUMNS };

static const char *const EVENTS[] = {
	"login",    "logout", "click", "view", "scroll",  "search", "purchase", "add_to_cart", "remove_from_cart",
	"checkout", "share",  "like",  "comment", "signup", "error",  "open",     "close",       "download",
	"upload",   "refresh",
};
#define NUM_EVENTS ((int)(sizeof(EVENTS) / sizeof(EVENTS[0])))

/* The "user-<n>" strings, built once; batches hold views into this table. */
static char user_names[NUM_USERS][12];
static tl_bytes user_views[NUM_USERS];
static tl_bytes event_views[NUM_EVENTS];

static uint64_t splitmix64(uint64_t x)
{
	uint64_t z = x + 0x9E3779B97F4A7C15ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static inline uint64_t row_hash(uint64_t row, uint64_t column)
{
	return splitmix64(row * 8 + column);
}

static void build_string_tables(void)
{
	for (int u = 0; u < NUM_USERS; u++) {
		int n = snprintf(user_names[u], sizeof(user_names[u]), "user-%d", u);
		user_views[u] = (tl_bytes){(const uint8_t *)user_names[u], (uint32_t)n};
	}
	for (int e = 0; e < NUM_EVENTS; e++)
		event_views[e] = (tl_bytes){(const uint8_t *)EVENTS[e], (uint32_t)strlen(EVENTS[e])};
}

/* ------------------------------------------------------------ checksum */

/*
 * An order-independent checksum that numpy can compute too: per column the
 * wrapping sum of a per-value number, the column sums weighted by small odd
 * constants. Strings contribute their FNV-1a hash; a null contributes NULL_MARK.
 */
#define NULL_MARK 0x9E3779B97F4A7C15ULL

typedef struct checksum {
	uint64_t column[NUM_COLUMNS];
} checksum;

static uint64_t fnv1a(tl_bytes b)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (uint32_t i = 0; i < b.len; i++) {
		h ^= b.ptr[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void checksum_batch(checksum *sum, const tl_pq_batch *batch)
{
	const tl_vector *cols = batch->columns;
	for (int64_t r = 0; r < batch->nrows; r++) {
		uint64_t value_bits;
		memcpy(&value_bits, &cols[COL_VALUE].v.f64[r], sizeof(value_bits));
		sum->column[COL_ID] += (uint64_t)cols[COL_ID].v.i64[r];
		sum->column[COL_TS] += (uint64_t)cols[COL_TS].v.i64[r];
		sum->column[COL_DEVICE] += (uint64_t)(int64_t)cols[COL_DEVICE].v.i32[r];
		sum->column[COL_VALUE] += value_bits;
		sum->column[COL_EVENT] += fnv1a(cols[COL_EVENT].v.bytes[r]);
		sum->column[COL_USER] += tl_vector_is_null(&cols[COL_USER], r) ? NULL_MARK : fnv1a(cols[COL_USER].v.bytes[r]);
	}
}

static uint64_t checksum_total(const checksum *sum)
{
	static const uint64_t weight[NUM_COLUMNS] = {1, 3, 5, 7, 11, 13};
	uint64_t total = 0;
	for (int c = 0; c < NUM_COLUMNS; c++)
		total += weight[c] * sum->column[c];
	return total;
}

/* ------------------------------------------------------------ helpers */

/*
 * A stopwatch over wall-clock and process CPU time. On a shared machine the
 * CPU time is the steadier of the two: other processes stretch the wall
 * clock but not the cycles we spend.
 */
typedef struct stopwatch {
	double wall, cpu;           /* accumulated */
	double wall_start, cpu_start;
} stopwatch;

static double clock_seconds(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void stopwatch_start(stopwatch *sw)
{
	sw->wall_start = clock_seconds(CLOCK_MONOTONIC);
	sw->cpu_start = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

static void stopwatch_stop(stopwatch *sw)
{
	sw->wall += clock_seconds(CLOCK_MONOTONIC) - sw->wall_start;
	sw->cpu += clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - sw->cpu_start;
}

static double peak_rss_mb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0; /* Linux reports kilobytes */
}

static long long file_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void die(const char *what, const tl_error *err)
{
	fprintf(stderr, "parquet_bench: %s: %s\n", what, err->message);
	exit(1);
}

static void report(const char *phase, int64_t rows, const stopwatch *sw, const char *path, const checksum *sum)
{
	printf("{\"bench\": \"parquet\", \"impl\": \"tierdb\", \"phase\": \"%s\", \"rows\": %" PRId64
	       ", \"seconds\": %.4f, \"cpu_seconds\": %.4f, \"rows_per_sec\": %.0f, \"file_bytes\": %lld"
	       ", \"peak_rss_mb\": %.1f, \"checksum\": \"%016" PRIx64 "\"}\n",
	       phase, rows, sw->wall, sw->cpu, sw->wall > 0 ? (double)rows / sw->wall : 0.0, file_bytes(path),
	       peak_rss_mb(), checksum_total(sum));
	fflush(stdout);
}

/* ------------------------------------------------------------ write */

static tl_pq_schema *event_schema(void)
{
	tl_pq_schema *schema = tl_pq_schema_new();
	tl_pq_column col;

	memset(&col, 0, sizeof(col));
	col.required = true;
	col.name = "id";
	col.physical = TL_PQ_INT64;
	col.field_id = 1;
	tl_pq_schema_add(schema, &col);

	col.name = "ts";
	col.field_id = 2;
	col.logical = TL_PQ_LOGICAL_TIMESTAMP;
	col.unit = TL_PQ_MICROS;
	col.utc_adjusted = true;
	tl_pq_schema_add(schema, &col);

	memset(&col, 0, sizeof(col));
	col.required = true;
	col.name = "device_id";
	col.physical = TL_PQ_INT32;
	col.field_id = 3;
	tl_pq_schema_add(schema, &col);

	col.name = "value";
	col.physical = TL_PQ_DOUBLE;
	col.field_id = 4;
	tl_pq_schema_add(schema, &col);

	col.name = "event";
	col.physical = TL_PQ_BYTE_ARRAY;
	col.logical = TL_PQ_LOGICAL_STRING;
	col.field_id = 5;
	tl_pq_schema_add(schema, &col);

	col.name = "user";
	col.required = false;
	col.field_id = 6;
	tl_pq_schema_add(schema, &col);
	return schema;
}

static void generate_batch(tl_pq_batch *batch, int64_t first_row, int64_t nrows)
{
	tl_vector *cols = batch->columns;
	for (int64_t r = 0; r < nrows; r++) {
		uint64_t row = (uint64_t)(first_row + r);
		uint64_t h5 = row_hash(row, 5);
		cols[COL_ID].v.i64[r] = (int64_t)row;
		cols[COL_TS].v.i64[r] = BASE_TIMESTAMP_MICROS + (int64_t)(row * 1000 + row_hash(row, 1) % 1000);
		cols[COL_DEVICE].v.i32[r] = (int32_t)(row_hash(row, 2) % NUM_DEVICES);
		cols[COL_VALUE].v.f64[r] = (double)(row_hash(row, 3) % 1000000) / 100.0;
		cols[COL_EVENT].v.bytes[r] = event_views[row_hash(row, 4) % NUM_EVENTS];
		if (h5 % 100 < NULL_USER_PERCENT) {
			cols[COL_USER].valid[r] = 0;
			cols[COL_USER].v.bytes[r] = (tl_bytes){NULL, 0};
		} else {
			cols[COL_USER].valid[r] = 1;
			cols[COL_USER].v.bytes[r] = user_views[(h5 >> 32) % NUM_USERS];
		}
	}
	batch->nrows = nrows;
}

static int bench_write(const char *path, int64_t rows)
{
	tl_error err;
	tl_error_clear(&err);
	tl_pq_schema *schema = event_schema();
	if (tl_pq_schema_validate(schema, &err) != 0)
		die("schema", &err);
	tl_pq_batch *batch = tl_pq_batch_new(schema, BATCH_ROWS);
	checksum sum = {{0}};

	stopwatch sw = {0};
	stopwatch_start(&sw);
	tl_output *out = tl_output_create_file(path, 0, &err);
	if (out == NULL)
		die(path, &err);
	tl_pq_writer_options opts;
	tl_pq_writer_options_init(&opts); /* ZSTD and every other default */
	tl_pq_writer *w = tl_pq_writer_open(out, schema, &opts, &err);
	if (w == NULL)
		die("opening the writer", &err);
	stopwatch_stop(&sw);

	for (int64_t first = 0; first < rows; first += BATCH_ROWS) {
		int64_t n = rows - first < BATCH_ROWS ? rows - first : BATCH_ROWS;
		generate_batch(batch, first, n);
		checksum_batch(&sum, batch);

		stopwatch_start(&sw);
		if (tl_pq_writer_write(w, batch, &err) != 0)
			die("writing a batch", &err);
		stopwatch_stop(&sw);
	}

	stopwatch_start(&sw);
	if (tl_pq_writer_close(w, &err) != 0)
		die("closing the writer", &err);
	if (out->finish(out, &err) != 0) /* flushes and fsyncs; the peer fsyncs too */
		die(path, &err);
	tl_pq_writer_free(w);
	tl_output_close(out);
	stopwatch_stop(&sw);

	report("write", rows, &sw, path, &sum);
	tl_pq_batch_free(batch);
	tl_pq_schema_free(schema);
	return 0;
}

/* ------------------------------------------------------------ read */

/* The file must have the bench's columns in order; say so rather than misread. */
static void check_read_schema(const tl_pq_schema *schema)
{
	static const tl_pq_physical want[NUM_COLUMNS] = {TL_PQ_INT64,  TL_PQ_INT64,      TL_PQ_INT32,
	                                                 TL_PQ_DOUBLE, TL_PQ_BYTE_ARRAY, TL_PQ_BYTE_ARRAY};
	static const char *const names[NUM_COLUMNS] = {"id", "ts", "device_id", "value", "event", "user"};
	if (schema->ncolumns != NUM_COLUMNS) {
		fprintf(stderr, "parquet_bench: expected %d columns, the file has %d\n", NUM_COLUMNS, schema->ncolumns);
		exit(1);
	}
	for (int c = 0; c < NUM_COLUMNS; c++) {
		if (strcmp(schema->columns[c].name, names[c]) != 0 || schema->columns[c].physical != want[c]) {
			fprintf(stderr, "parquet_bench: column %d is %s %s, expected %s %s\n", c, schema->columns[c].name,
			        tl_pq_physical_name(schema->columns[c].physical), names[c], tl_pq_physical_name(want[c]));
			exit(1);
		}
	}
}

static int bench_read(const char *path)
{
	tl_error err;
	tl_error_clear(&err);
	checksum sum = {{0}};
	int64_t rows = 0;

	stopwatch sw = {0};
	stopwatch_start(&sw);
	tl_input *in = tl_input_open_file(path, &err);
	if (in == NULL)
		die(path, &err);
	tl_pq_reader *r = tl_pq_reader_open(in, &err);
	if (r == NULL)
		die("opening the reader", &err);
	tl_pq_batch *batch = tl_pq_reader_batch_new(r, BATCH_ROWS);
	stopwatch_stop(&sw);

	check_read_schema(tl_pq_reader_schema(r));
	for (;;) {
		stopwatch_start(&sw);
		int64_t n = tl_pq_reader_next(r, batch, &err);
		stopwatch_stop(&sw);
		if (n < 0)
			die("reading", &err);
		if (n == 0)
			break;
		rows += n;
		checksum_batch(&sum, batch);
	}

	stopwatch_start(&sw);
	tl_pq_batch_free(batch);
	tl_pq_reader_free(r);
	tl_input_close(in);
	stopwatch_stop(&sw);

	report("read", rows, &sw, path, &sum);
	return 0;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr, "usage: parquet_bench write FILE [--rows N]\n"
	                "       parquet_bench read FILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	const char *command = argv[1];
	const char *path = argv[2];
	int64_t rows = DEFAULT_ROWS;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
			char *end;
			rows = strtoll(argv[++i], &end, 10);
			if (*end != '\0' || rows <= 0)
				usage();
		} else {
			usage();
		}
	}

	if (strcmp(command, "write") == 0) {
		build_string_tables();
		return bench_write(path, rows);
	}
	if (strcmp(command, "read") == 0)
		return bench_read(path);
	usage();
	return 2;
}
