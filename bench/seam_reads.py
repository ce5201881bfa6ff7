#!/usr/bin/env python3
"""The read benchmark: transparent reads of a tiered table against plain Postgres and DuckDB.

    seam_reads.py [--rows N] [--days D] [--repeat R] [--pgbench-seconds S] [--cold-lookups K]
                  [--dir DIR] [--keep-cluster] [--bin build/tierdb]

In one run, on one private PostgreSQL 15 cluster started with
shared_preload_libraries=tierdb:

- the same event rows as the tiering benchmark (tiering_peer.create_and_fill:
  N rows over D daily partitions plus tiering_peer.HOT_ROWS rows on the day
  after), with one more column, `reading double precision`, about id / 100,
  so it rises with ts (create_and_fill's reading=True), are loaded twice,
  into `events_heap`, a plain table partitioned by day with primary key
  (id, ts), and into `events_tiered`, the same, which is then registered and
  tiered with `tierdb run --once` (TIERDB_TIERING_LAG=1h): every day but the
  newest moves into the lake, the newest day stays in the heap;
- the queries of issue 21 run on both tables and on DuckDB's iceberg_scan of
  the lake table (the lake holds the cold rows only): count(*), a grouped
  aggregate over 3 of the 10 days, `reading > X` (about 1% of the rows, a
  filter on a non-key column that statistics can prune), `device_id = 42`
  (one that they cannot), one hour of ts, and a cold point lookup by the
  whole primary key; in two modes, set per session: single-process
  (max_parallel_workers_per_gather=0, DuckDB threads=1) and parallel (2
  workers, DuckDB threads=2). Every result is compared: the tiered table
  must return exactly the heap's rows, DuckDB exactly the heap's rows below
  the cut-line T. Timed by the client (psycopg, wall clock, planning
  included): one warm-up run, then the best of R; CPU time, the backend's
  (single-process) or the whole cluster's, parallel workers included
  (parallel). One more run under EXPLAIN ANALYZE per mode gives the cold
  scan's figures and the plans' Gather nodes. The cold point lookup is also
  timed as a prepared statement executed for K distinct cold keys (default
  200, fewer if a side takes over 20 s), the mean per execution, per mode;
- point lookups by primary key on hot rows: pgbench, one client, a custom
  script, -M prepared (with the default plan_cache_mode, and with the
  generic plan forced) and -M simple, on events_tiered (transparent reads on
  and, for reference, off) and on events_heap; mean latencies of R runs. The
  same lookups timed by the backend's CPU, the sides taking turns in short
  rounds (the median of the rounds' ratios), and, once the cluster is stopped,
  counted in instructions by callgrind on a single-user backend, which
  gives the same count every run where times on a shared machine do not.

The server runs with max_parallel_workers_per_gather=0 by default (the scans
set it per session; max_worker_processes=16, max_parallel_workers=8, the
parallel cost settings at Postgres' defaults), jit=off, shared_buffers 2GB
(both heaps are loaded into it with pg_prewarm before anything is timed),
autovacuum off; scripts/pg-cluster.sh adds fsync, synchronous_commit and
full_page_writes off. This is a measurement, not a test: nothing asserts a
timing. It exits 1 if any result differs between the sides.
"""

import argparse
import datetime as dt
import glob
import importlib
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiering_peer  # noqa: E402  (the cluster helpers and the event rows)
from tiering_peer import BASE_DAY, TOP, clean_env, create_and_fill, positive_int, tail  # noqa: E402

DEFAULT_ROWS = 10_000_000
DEFAULT_DAYS = 10
DAY_US = 86_400_000_000
SETTINGS = ["shared_preload_libraries=tierdb", "shared_buffers=2GB", "max_parallel_workers_per_gather=0",
            "max_worker_processes=16", "max_parallel_workers=8", "jit=off", "work_mem=64MB", "max_wal_size=32GB", "checkpoint_timeout=1h",
            "maintenance_work_mem=512MB", "autovacuum=off"]
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# The scans run in two modes, set per session: (name, max_parallel_workers_per_gather, DuckDB threads).
# The server's default stays 0 (the point lookups below run with it).
SCAN_MODES = [("single-process", 0, 1), ("parallel", 2, 2)]
COLD_LOOKUPS = 200          # executions of the prepared cold point lookup per side and mode (distinct keys)
COLD_LOOKUP_SECONDS = 20.0  # ... or fewer, once a side has spent this long
COLD_LOOKUP_TARGET_MS = 5.0
# pgbench runs of the point lookups: (label, protocol, server options). With the default
# plan_cache_mode a prepared statement may still be planned for each execution (a custom plan
# when it is estimated cheaper than the generic one); the second row forces the generic plan.
MODES = [("-M prepared", "prepared", ""),
         ("-M prepared, generic plan", "prepared", "-c plan_cache_mode=force_generic_plan"),
         ("-M simple", "simple", "")]


def fail(message):
    print(f"read-bench: {message}", file=sys.stderr)
    sys.exit(1)


def say(message):
    print(f"read-bench: {message}", flush=True)


def day(n):
    """The timestamptz literal of midnight UTC n days after BASE_DAY."""
    d = dt.date.fromisoformat(BASE_DAY) + dt.timedelta(days=n)
    return f"timestamptz '{d.isoformat()} 00:00:00+00'"


# ------------------------------------------------------------------ the queries


@dataclass
class Query:
    name: str
    select: str
    where: list
    tail: str = ""

    def sql(self, table, extra=()):
        conds = list(self.where) + list(extra)
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        return f"SELECT {self.select} FROM {table}{where}{self.tail}"


def reading_threshold(rows):
    """X in `reading > X`: reading is about id / 100 (tiering_peer.create_and_fill(reading=True)), so
    this keeps the last 1% of the cold rows, all in the newest cold day, and the hot rows."""
    return rows * 99 // 10000


def queries(rows, days, point):
    """The scans; point is (id, ts) of the cold row the point lookup finds."""
    first = max(0, days * 2 // 10)
    span = max(1, days * 3 // 10)
    hour = f"{day(first)} + interval '13 hours'"
    return [
        Query("count(*)", "count(*)", []),
        Query("min and max of ts", "min(ts), max(ts)", []),
        Query(f"aggregate, {span} of {days} days", "event, count(*), sum(value)",
              [f"ts >= {day(first)}", f"ts < {day(first + span)}"], " GROUP BY event ORDER BY event"),
        Query("reading > X (prunable)", "count(*), sum(value), max(ts)",
              [f"reading > CAST({reading_threshold(rows)} AS double precision)"]),
        Query("device_id = 42", "*", ["device_id = 42"], " ORDER BY id"),
        Query("one hour of ts", "count(*), sum(value), count(DISTINCT device_id)",
              [f"ts >= {hour}", f"ts < {hour} + interval '1 hour'"]),
        Query("cold point lookup", "*", [f"id = {point[0]}", f"ts = {ts_literal(point[1])}"]),
    ]


def ts_literal(ts):
    """A timestamptz literal both Postgres and DuckDB read, to the microsecond."""
    return f"CAST('{ts.astimezone(dt.timezone.utc).strftime('%Y-%m-%d %H:%M:%S.%f')}+00' AS timestamptz)"


# ------------------------------------------------------------------ comparing results


def normal(value):
    """Timestamps as microseconds since the epoch, as the DuckDB side fetches them."""
    if isinstance(value, dt.datetime):
        return (value - EPOCH) // dt.timedelta(microseconds=1)
    return value


def sort_key(row):
    # None first in its column; floats rounded so that summation order does not reorder rows.
    return tuple((v is not None, round(v, 6) if isinstance(v, float) else (v if v is not None else 0)) for v in row)


def same_rows(a, b):
    """Multiset equality; float values within 1e-9 relative (sums depend on the order of addition)."""
    if len(a) != len(b):
        return False, f"{len(a)} rows against {len(b)}"
    a = sorted((tuple(normal(v) for v in r) for r in a), key=sort_key)
    b = sorted((tuple(normal(v) for v in r) for r in b), key=sort_key)
    for ra, rb in zip(a, b):
        if len(ra) != len(rb):
            return False, f"row {ra} against {rb}"
        for va, vb in zip(ra, rb):
            if isinstance(va, float) and isinstance(vb, float):
                if not math.isclose(va, vb, rel_tol=1e-9, abs_tol=1e-9):
                    return False, f"row {ra} against {rb}"
            elif va != vb:
                return False, f"row {ra} against {rb}"
    return True, ""


# ------------------------------------------------------------------ the tables


def rename_table(cur, old, new):
    """Renames a partitioned table, its primary key and its partitions (old_* to new_*)."""
    cur.execute(f"ALTER TABLE {old} RENAME TO {new}")
    cur.execute(f"ALTER TABLE {new} RENAME CONSTRAINT {old}_pkey TO {new}_pkey")
    cur.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                " WHERE i.inhparent = %s::regclass ORDER BY 1", (new,))
    for (part,) in cur.fetchall():
        renamed = new + part[len(old):]
        cur.execute(f"ALTER TABLE {part} RENAME TO {renamed}")
        cur.execute(f"ALTER INDEX {part}_pkey RENAME TO {renamed}_pkey")


def load(conn, rows, days):
    """events_heap and events_tiered with the same rows (create_and_fill makes `events`)."""
    with conn.cursor() as cur:
        create_and_fill(conn, rows, days, reading=True)
        rename_table(cur, "events", "events_heap")
        create_and_fill(conn, rows, days, reading=True)
        rename_table(cur, "events", "events_tiered")


def tier(args, work, dsn, conn):
    """Registers events_tiered and runs `tierdb run --once`; returns (seconds, lake table directory)."""
    env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"), TIERDB_TIERING_LAG="1h")
    reg = subprocess.run([args.bin, "register", "--table", "public.events_tiered", "--pk", "id,ts",
                          "--tier-key", "ts"], env=env, capture_output=True, text=True)
    if reg.returncode != 0:
        fail(f"tierdb register failed ({reg.returncode}):\n{reg.stderr}")
    code, seconds, _ = tiering_peer.run_measured([args.bin, "run", "--once"], env, work / "tier.out",
                                                 work / "tier.err")
    if code != 0:
        fail(f"tierdb run --once failed ({code}); its log:\n{tail(work / 'tier.err')}")
    with conn.cursor() as cur:
        cur.execute("SELECT lake_table_ref FROM tierdb.tables WHERE table_name = 'events_tiered'")
        ref = cur.fetchone()[0]
    return seconds, ref


def split(conn, args, ref, env):
    """Where the rows of events_tiered are: cut-line T, lake rows, heap partitions and rows."""
    info = subprocess.run([args.bin, "lake", "info", ref, "--json"], env=env, capture_output=True, text=True)
    if info.returncode != 0:
        fail(f"tierdb lake info {ref} failed:\n{info.stderr}")
    files = json.loads(info.stdout)["files"] or {}
    with conn.cursor() as cur:
        cur.execute("SELECT to_timestamp(c.tier_key_hi / 1e6), c.lake_snapshot_id FROM tierdb.cutline c"
                    " JOIN tierdb.tables t USING (table_id) WHERE t.table_name = 'events_tiered'")
        cut, snapshot = cur.fetchone()
        cur.execute("SET tierdb.transparent_reads = off")
        cur.execute("SELECT count(*), min(ts) FROM events_tiered")
        hot_rows, hot_min = cur.fetchone()
        cur.execute("RESET tierdb.transparent_reads")
        cur.execute("SELECT count(*), count(*) FILTER (WHERE pg_relation_size(i.inhrelid) > 0)"
                    " FROM pg_inherits i WHERE i.inhparent = 'events_tiered'::regclass")
        parts, nonempty = cur.fetchone()
        cur.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = 'events_heap'::regclass")
        heap_parts = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM events_heap WHERE ts < %s", (cut,))
        heap_below = cur.fetchone()[0]
    return {"cut": cut, "snapshot": snapshot, "lake_rows": int(files.get("data_records", 0)),
            "lake_files": int(files.get("data_files", 0)), "hot_rows": hot_rows, "hot_min": hot_min,
            "tiered_partitions": parts, "tiered_nonempty": nonempty, "heap_partitions": heap_parts,
            "heap_below_cut": heap_below}


def prewarm(conn):
    """Loads every partition and index of both tables into shared_buffers."""
    with conn.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        cur.execute("SELECT sum(pg_prewarm(c.oid))::bigint, sum(pg_relation_size(c.oid))::bigint FROM pg_class c"
                    " WHERE c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent IN"
                    "   ('events_heap'::regclass, 'events_tiered'::regclass, 'events_heap_pkey'::regclass,"
                    "    'events_tiered_pkey'::regclass))")
        _, size = cur.fetchone()
        cur.execute("SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'")
        shared = cur.fetchone()[0]
    if size > shared:
        say(f"warning: the heaps and indexes ({size / 1e6:,.0f} MB) exceed shared_buffers ({shared / 1e6:,.0f} MB)")
    return size


# ------------------------------------------------------------------ timing the scans


def duckdb_connection():
    """DuckDB with one thread (run_scans sets it per mode) and its iceberg extension loaded from the
    PyPI packages (as scripts/demo.sh)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET TimeZone = 'UTC'")
    for package in ("duckdb_extension_avro", "duckdb_extension_iceberg"):
        where = Path(importlib.import_module(package).__path__[0]) / "extensions" / f"v{duckdb.__version__}"
        con.execute(f"LOAD '{glob.glob(str(where / '*.duckdb_extension'))[0]}'")
    return con


def duckdb_runner(con):
    """Fetches through Arrow with timestamps as microseconds since the epoch (Python datetimes with a
    time zone would need pytz)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def run(sql, params=None):
        table = con.execute(sql, params).arrow()
        if isinstance(table, pa.RecordBatchReader):
            table = table.read_all()
        columns = [pc.cast(c, pa.int64()) if pa.types.is_timestamp(c.type) else c for c in table.columns]
        return list(zip(*(c.to_pylist() for c in columns)))
    return run


def backend_cpu(conn):
    """A clock of the connection's backend's CPU time, in seconds (/proc/PID/schedstat, nanoseconds)."""
    path = Path(f"/proc/{conn.info.backend_pid}/schedstat")
    return lambda: int(path.read_text().split()[0]) / 1e9


def cluster_cpu(conn):
    """A clock of the CPU time of the whole cluster, in seconds: every process the postmaster runs
    (/proc/PID/schedstat, nanoseconds, the connection's backend included), plus the CPU time of
    the children the postmaster has reaped (its cutime and cstime, in clock ticks), where a parallel
    query's workers end up: the leader waits for them to exit before the query returns, so a
    reading after the query counts them. Background processes count too (autovacuum is off)."""
    stat = Path(f"/proc/{conn.info.backend_pid}/stat").read_text()
    postmaster = int(stat.rsplit(")", 1)[1].split()[1])
    children = Path(f"/proc/{postmaster}/task/{postmaster}/children")
    tick = os.sysconf("SC_CLK_TCK")

    def clock():
        total = 0
        for pid in [postmaster] + children.read_text().split():
            try:
                total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass  # exited meanwhile: its time is in the postmaster's cutime below
        fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
        return total / 1e9 + (int(fields[13]) + int(fields[14])) / tick  # fields 16, 17: cutime, cstime
    return clock


def timed(run, sql, cpu):
    """(wall seconds, CPU seconds) of one run."""
    start_cpu = cpu()
    start = time.perf_counter()
    run(sql)
    wall = time.perf_counter() - start
    return wall, cpu() - start_cpu


def pg_runner(conn):
    def run(sql):
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    return run


def cold_scan_explain(conn, sql):
    """The EXPLAIN ANALYZE of a query: the cold scan's figures (if it has one), the execution time,
    and the plan's parallelism: its Gather nodes (workers planned and launched) and whether the
    cold scan is parallel-aware."""
    with conn.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
        plan = cur.fetchone()[0][0]
    found, gathers = {}, []

    def walk(node):
        if node.get("Node Type") in ("Gather", "Gather Merge"):
            gathers.append({"node": node["Node Type"], "planned": node.get("Workers Planned"),
                            "launched": node.get("Workers Launched")})
        if node.get("Custom Plan Provider") in ("TierDB Cold Scan", "TierDB Cold Aggregate"):
            found.update({k: node.get(k) for k in (
                "Custom Plan Provider", "Actual Total Time", "Actual Rows", "Actual Loops", "Lake Files",
                "Lake Files Pruned", "Row Groups Read", "Row Groups Pruned", "Pages Read", "Pages Skipped",
                "Row Groups Pruned by Bloom Filters", "Conditions Pushed to the Lake", "Delta Rows", "Lake",
                "Parallel Aware", "Cold Rows Aggregated", "Cold Rows Counted From Lake Metadata") if k in node})
        for child in node.get("Plans", []):
            walk(child)

    walk(plan["Plan"])
    return {"execution_ms": plan["Execution Time"], "planning_ms": plan["Planning Time"], "cold_scan": found,
            "gathers": gathers}


def parallelism(explain):
    """The plan's parallelism in words."""
    if not explain["gathers"]:
        text = "no Gather (one process)"
    else:
        text = ", ".join(f"{g['node']} ({g['planned']} workers planned, {g['launched']} launched)"
                         for g in explain["gathers"])
    if "Parallel Aware" in explain["cold_scan"]:
        text += "; cold scan " + ("parallel-aware" if explain["cold_scan"]["Parallel Aware"] else "not parallel-aware")
    return text


def run_scans(conn, duck, lake_ref, qs, cut, repeat, mode):
    """Each query on the three sides in one mode (name, max_parallel_workers_per_gather, DuckDB
    threads): results compared, one warm-up, then the best of repeat. CPU: the backend's with no
    workers, the whole cluster's (the workers' included) in parallel mode; DuckDB's process."""
    name_, workers, threads = mode
    conn.execute(f"SET max_parallel_workers_per_gather = {workers}")
    duck.execute(f"SET threads = {threads}")
    run_pg, run_duck = pg_runner(conn), duckdb_runner(duck)
    pg_cpu = cluster_cpu(conn) if workers else backend_cpu(conn)
    iceberg = f"iceberg_scan('{lake_ref}')"
    cold = f"ts < timestamptz '{cut.isoformat()}'"
    results, problems = [], []
    for q in qs:
        sides = {"tiered": (run_pg, q.sql("events_tiered"), pg_cpu), "heap": (run_pg, q.sql("events_heap"), pg_cpu),
                 "duckdb": (run_duck, q.sql(iceberg), time.process_time)}
        answers = {name: run(sql) for name, (run, sql, _) in sides.items()}  # also the warm-up
        ok, why = same_rows(answers["tiered"], answers["heap"])
        if not ok:
            problems.append(f"{q.name} ({name_}): events_tiered and events_heap differ: {why}")
        ok, why = same_rows(answers["duckdb"], run_pg(q.sql("events_heap", [cold])))
        if not ok:
            problems.append(f"{q.name} ({name_}): DuckDB's lake rows and events_heap below T differ: {why}")
        wall = {name: math.inf for name in sides}
        cpu = {name: math.inf for name in sides}
        for _ in range(repeat):
            for name, side in sides.items():
                w, c = timed(*side)
                wall[name], cpu[name] = min(wall[name], w), min(cpu[name], c)
        explain = cold_scan_explain(conn, q.sql("events_tiered"))
        heap_explain = cold_scan_explain(conn, q.sql("events_heap"))
        results.append({"query": q.name, "sql": q.sql("t"), "rows": len(answers["heap"]), "seconds": wall,
                        "cpu_seconds": cpu, "explain": explain, "heap_explain": heap_explain})
        say(f"{name_}, {q.name}: tiered {wall['tiered']:.4f} s, heap {wall['heap']:.4f} s, "
            f"duckdb {wall['duckdb']:.4f} s; tiered plan: {parallelism(explain)}")
    return results, problems


def cold_keys(conn, rows, n):
    """n distinct cold rows' full keys (id, ts), drawn over the whole cold range, and each one's row
    in events_heap."""
    ids = random.Random(21).sample(range(1, rows + 1), min(n, rows))
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM events_heap WHERE id = ANY(%s)", (ids,))
        by_id = {r[0]: r for r in cur.fetchall()}
    return [(i, by_id[i][1], [by_id[i]]) for i in ids]


def cold_lookups(conn, duck, lake_ref, keys, mode):
    """Mean milliseconds per cold point lookup by the full key (id, ts), a prepared statement executed
    once per key (at most COLD_LOOKUPS, or as many as fit in COLD_LOOKUP_SECONDS), per side, in one
    mode; client wall clock, the transfer included. Returns (ms per side, executions, problems)."""
    name_, workers, threads = mode
    conn.execute(f"SET max_parallel_workers_per_gather = {workers}")
    duck.execute(f"SET threads = {threads}")
    run_duck = duckdb_runner(duck)
    tag = f"/* cold lookup, {name_} */"  # a statement of its own per mode: a plan cached in the other mode is not reused

    def pg_lookup(table):
        sql = f"SELECT * FROM {table} WHERE id = %(id)s::bigint AND ts = %(ts)s::timestamptz {tag}"
        return lambda i, ts: conn.execute(sql, {"id": i, "ts": ts}, prepare=True).fetchall()

    def duck_lookup(i, ts):
        return run_duck(f"SELECT * FROM iceberg_scan('{lake_ref}') WHERE id = $1 AND ts = CAST($2 AS timestamptz)",
                        [i, ts.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f+00")])

    sides = {"tiered": pg_lookup("events_tiered"), "heap": pg_lookup("events_heap"), "duckdb": duck_lookup}
    for lookup in sides.values():  # warm-up: the prepared statements, the plan choice
        for i, ts, _ in keys[:6]:
            lookup(i, ts)
    ms, done, problems = {}, {}, []
    for side, lookup in sides.items():
        got = []
        start = time.perf_counter()
        for i, ts, _ in keys:
            got.append(lookup(i, ts))
            if time.perf_counter() - start > COLD_LOOKUP_SECONDS:
                break
        ms[side] = (time.perf_counter() - start) / len(got) * 1e3
        done[side] = len(got)
        for (i, _, want), rows in zip(keys, got):
            ok, why = same_rows(rows, want)
            if not ok:
                problems.append(f"cold point lookup of id {i} ({name_}): {side} and events_heap differ: {why}")
                break
    say(f"{name_}, cold point lookups: tiered {ms['tiered']:.2f} ms, heap {ms['heap']:.2f} ms, "
        f"duckdb {ms['duckdb']:.2f} ms ({', '.join(f'{n} {s}' for s, n in done.items())} executions)")
    return ms, done, problems


# ------------------------------------------------------------------ point lookups


def hot_ts_sql(id_sql, rows, days):
    """The ts create_and_fill gave hot row id_sql: its arithmetic, so exactly its value.

    Written with immutable functions only (timestamp + interval, then timezone('UTC', ...)), so
    that with a constant id the planner folds it into a constant and prunes partitions at plan
    time, as for a literal key the client would send."""
    return (f"timezone('UTC', timestamp '{BASE_DAY} 00:00:00' + make_interval(secs => ({days * DAY_US}::bigint"
            f" + ({id_sql} - {rows + 1}) * {DAY_US - 1000}::bigint / {tiering_peer.HOT_ROWS}"
            f" + (hashint8extended({id_sql}, 1) & 9223372036854775807) % 1000) / 1e6))")


def lookup_sql(table, id_sql, rows, days):
    return f"SELECT * FROM {table} WHERE id = {id_sql} AND ts = {hot_ts_sql(id_sql, rows, days)}"


def check_lookups(conn, rows, days):
    """Every hot id's lookup finds its one row, the same on both tables."""
    lo, hi = rows + 1, rows + tiering_peer.HOT_ROWS
    with conn.cursor() as cur:
        for table in ("events_heap", "events_tiered"):
            cur.execute(f"SELECT count(*) FROM {table} t WHERE t.id BETWEEN {lo} AND {hi} AND t.ts = "
                        + hot_ts_sql("t.id", rows, days))
            found = cur.fetchone()[0]
            if found != tiering_peer.HOT_ROWS:
                fail(f"the lookup expression finds {found} of the {tiering_peer.HOT_ROWS} hot rows of {table}")
        for probe in (lo, (lo + hi) // 2, hi):
            got = [pg_runner(conn)(lookup_sql(t, str(probe), rows, days)) for t in ("events_tiered", "events_heap")]
            if len(got[0]) != 1 or got[0] != got[1]:
                fail(f"the point lookup of id {probe}: events_tiered gives {got[0]}, events_heap {got[1]}")
    return lo, hi


def pgbench(port, scripts, mode, seconds, options, log_dir):
    """Mean latency in microseconds of each script's transactions in one pgbench run of `scripts`
    together: one client picks one of them at random for each transaction (pgbench's
    per-transaction log, -l)."""
    for old in log_dir.glob("pgbench_log.*"):
        old.unlink()
    cmd = ["pgbench", "-n", "-M", mode, "-c", "1", "-j", "1", "-T", str(seconds), "-l"]
    cmd += [arg for script in scripts for arg in ("-f", str(script))]
    cmd += ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "postgres"]
    env = clean_env(PGOPTIONS=options) if options else clean_env()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=log_dir)
    failed = re.search(r"number of failed transactions: (\d+)", proc.stdout)
    if proc.returncode != 0 or (failed and int(failed.group(1)) != 0):
        fail(f"pgbench {' '.join(cmd[1:])} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    latencies = [[] for _ in scripts]
    for log in log_dir.glob("pgbench_log.*"):
        for line in log.read_text().splitlines():
            fields = line.split()  # client, transaction, latency (us), script, epoch s, us
            latencies[int(fields[3])].append(int(fields[2]))
    if not all(latencies):
        fail(f"pgbench ran no transactions of some script:\n{proc.stdout}")
    return [statistics.mean(one) for one in latencies]


# Point lookups under pgbench. The tables' scripts run together in one pgbench
# run, one client picking one of them at random for each transaction, and the
# ratio compares their mean latencies from pgbench's per-transaction log: both
# see the same moments of this machine. Run one after the other, tps moved
# 10% to 20% between runs of the same build. As with the CPU rounds below, a
# second run compares the tiered table with transparent_reads off with the
# plain one, and tiered/off is the ratio of the two runs' ratios.
def run_lookups(work, port, rows, days, repeat, seconds):
    lo, hi = rows + 1, rows + tiering_peer.HOT_ROWS
    scripts = {}
    for table in ("events_tiered", "events_heap"):
        path = work / f"lookup-{table}.sql"
        path.write_text(f"\\set id random({lo}, {hi})\n"
                        + lookup_sql(table, "CAST(:id AS bigint)", rows, days) + ";\n")
        scripts[table] = path
    pair = [scripts["events_tiered"], scripts["events_heap"]]
    log_dir = work / "pgbench"
    log_dir.mkdir(exist_ok=True)
    results = {}
    for mode, protocol, mode_options in MODES:
        runs = {"tiered": mode_options, "off": f"{mode_options} -c tierdb.transparent_reads=off".strip()}
        for options in runs.values():  # warm-up: caches, prepared statements, the plan choice
            pgbench(port, pair, protocol, 2, options, log_dir)
        latency = {"tiered": [], "heap": [], "off": [], "off heap": []}
        for _ in range(repeat):
            for name, options in runs.items():
                first, heap = pgbench(port, pair, protocol, seconds, options, log_dir)
                latency[name].append(first)
                latency["heap" if name == "tiered" else "off heap"].append(heap)
        ratios = [t / h for t, h in zip(latency["tiered"], latency["heap"])]
        off_ratios = [o / h for o, h in zip(latency["off"], latency["off heap"])]
        results[mode] = {"tiered": statistics.mean(latency["tiered"]), "heap": statistics.mean(latency["heap"]),
                         "off": statistics.mean(latency["off"]), "tiered/heap": statistics.median(ratios),
                         "off/heap": statistics.median(off_ratios),
                         "tiered/off": statistics.median(r / o for r, o in zip(ratios, off_ratios))}
        r = results[mode]
        say(f"pgbench {mode}: tiered {r['tiered']:.1f} us, heap {r['heap']:.1f} us, "
            f"tiered/heap {r['tiered/heap']:.3f}x, tiered/off {r['tiered/off']:.3f}x")
    return results, scripts


# The same lookups timed by the backend's CPU (/proc/PID/schedstat). This VM's
# speed drifts by tens of percent over seconds, so the sides take turns in short
# rounds (LOOKUP_CPU_ROUND lookups each, the order rotating), and the ratio
# reported is the median of the rounds' ratios: each round's sides ran within
# a few milliseconds of each other. Runs of 2,000 lookups per side, best of five,
# measured 1.09x and 1.34x for the same build minutes apart; rounds agree
# within 2%. The tables compared take turns in one session: two sessions
# reading the same plain table differed by 2% to 3%, one backend's process
# being slower than another's, which a ratio across sessions would count.
# So one session compares the tiered table with the plain one, and a second,
# with transparent_reads off, the tiered table's heap with the plain one;
# tiered/off, the extension's own cost, is the ratio of their ratios.
LOOKUP_CPU_ROUND = 50
LOOKUP_CPU_ROUNDS = 100  # per --repeat
LOOKUP_CPU_MODES = [("custom plans (prepared)", "force_custom_plan", True),
                    ("generic plan (prepared)", "force_generic_plan", True),
                    ("unprepared (planned each time)", "auto", False)]
LOOKUP_CPU_SESSIONS = [("tiered", "on"), ("off", "off")]  # each reads events_tiered, then events_heap


def lookup_in(conn, table, prepared, rows, days):
    """A function looking up one id in `table` on conn, prepared or sent as text."""
    if prepared:
        sql = lookup_sql(table, "$ID", rows, days).replace("%", "%%").replace("$ID", "%(id)s::bigint")
        return lambda i: conn.execute(sql, {"id": i}, prepare=True).fetchall()
    return lambda i: conn.execute(lookup_sql(table, str(i), rows, days)).fetchall()


def lookup_cpu(dsn, rows, days, repeat):
    """Backend CPU microseconds per point lookup, per mode: "tiered" and "heap" (one session),
    "off" (another, its plain table's lookups left out), and "tiered/heap", "off/heap" and
    "tiered/off": the medians of the rounds' ratios."""
    import psycopg

    lo, hi = rows + 1, rows + tiering_peer.HOT_ROWS
    rounds = LOOKUP_CPU_ROUNDS * max(repeat, 1)
    ids = random.Random(7).choices(range(lo, hi + 1), k=LOOKUP_CPU_ROUND * rounds)
    result = {}
    for mode, plan_cache_mode, prepared in LOOKUP_CPU_MODES:
        sessions = []
        for name, transparent_reads in LOOKUP_CPU_SESSIONS:
            conn = psycopg.connect(dsn, autocommit=True)
            conn.execute(f"SET plan_cache_mode = {plan_cache_mode}")
            conn.execute(f"SET tierdb.transparent_reads = {transparent_reads}")
            lookups = [(name, lookup_in(conn, "events_tiered", prepared, rows, days)),
                       ("heap", lookup_in(conn, "events_heap", prepared, rows, days))]
            for side, lookup in lookups:
                for i in ids[:200]:  # warm-up: caches, the prepared statement
                    if len(lookup(i)) != 1:
                        fail(f"the lookup of id {i} ({side}, {mode}) does not find its row")
            sessions.append((name, conn, backend_cpu(conn), lookups))
        total = {"tiered": 0.0, "heap": 0.0, "off": 0.0}
        ratios = {"tiered/heap": [], "off/heap": [], "tiered/off": []}
        for r in range(rounds):
            chunk = ids[r * LOOKUP_CPU_ROUND:(r + 1) * LOOKUP_CPU_ROUND]
            ratio = {}
            for name, _, cpu, lookups in sessions[r % 2:] + sessions[:r % 2]:
                spent = {}
                for side, lookup in lookups[r % 2:] + lookups[:r % 2]:
                    start = cpu()
                    for i in chunk:
                        lookup(i)
                    spent[side] = cpu() - start
                total[name] += spent[name]
                if name == "tiered":
                    total["heap"] += spent["heap"]
                ratio[name] = spent[name] / spent["heap"]
            ratios["tiered/heap"].append(ratio["tiered"])
            ratios["off/heap"].append(ratio["off"])
            ratios["tiered/off"].append(ratio["tiered"] / ratio["off"])
        for _, conn, _, _ in sessions:
            conn.close()
        result[mode] = {name: t / len(ids) * 1e6 for name, t in total.items()}
        result[mode].update({k: statistics.median(v) for k, v in ratios.items()})
        say(f"lookup CPU, {mode}: tiered {result[mode]['tiered']:.1f} us, heap {result[mode]['heap']:.1f} us, "
            f"tiered/heap {result[mode]['tiered/heap']:.3f}x, tiered/off {result[mode]['tiered/off']:.3f}x")
    return result


# The same lookups counted in instructions: callgrind runs a single-user backend on the
# stopped cluster, which executes the lookups one statement at a time, as a client's would
# be. The count is the same at every run, where times on a shared machine move by tens of
# percent, so it shows the overhead the times cannot. Per lookup: the instructions of a run
# of WARM + N lookups less those of WARM lookups, so start-up and the warm-up do not count.
INSTRUCTION_LOOKUPS = 1000
INSTRUCTION_WARM = 200
INSTRUCTION_MODES = [("custom plans (prepared)", "force_custom_plan"),
                     ("generic plan (prepared)", "force_generic_plan"),
                     ("unprepared (planned each time)", None)]
INSTRUCTION_SIDES = [("tiered", "events_tiered", "on"), ("heap", "events_heap", "on"),
                     ("tiered, transparent_reads off", "events_tiered", "off")]


def single_user_lookups(table, transparent_reads, plan_cache_mode, ids, rows, days):
    """The input of a single-user backend that looks up `ids`, one statement per line."""
    lines = [f"SET tierdb.transparent_reads = {transparent_reads};"]
    if plan_cache_mode is None:
        lines += [lookup_sql(table, f"{i}::bigint", rows, days) + ";" for i in ids]
    else:
        lines += [f"SET plan_cache_mode = {plan_cache_mode};",
                  f"PREPARE lookup(bigint) AS {lookup_sql(table, '$1', rows, days)};"]
        lines += [f"EXECUTE lookup({i});" for i in ids]
    return "\n".join(lines) + "\n"


def instructions(data_dir, script, lookups):
    """Instructions a single-user backend executes for `script`, which must find one row per lookup."""
    postgres = Path(os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin")) / "postgres"
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(postgres), "--single",
           "-D", str(data_dir), "-c", "shared_buffers=256MB", "-c", "shared_preload_libraries=tierdb",
           "-c", "jit=off", "-c", "max_parallel_workers_per_gather=0", "postgres"]
    if os.geteuid() == 0:  # the cluster belongs to the postgres user (scripts/pg-cluster.sh)
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    proc = subprocess.run(cmd, input=script, capture_output=True, text=True)
    counted = re.search(r"Collected : (\d+)", proc.stderr)
    found = len(re.findall(r"^\t 1: id = ", proc.stdout, re.M))
    if proc.returncode != 0 or not counted or "ERROR" in proc.stdout + proc.stderr or found != lookups:
        fail(f"the single-user lookups under callgrind failed (found {found} of {lookups} rows):\n"
             f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return int(counted.group(1))


def lookup_instructions(data_dir, rows, days):
    """Instructions per point lookup, per mode and side."""
    import shutil

    if shutil.which("valgrind") is None:
        fail("valgrind is not installed: run scripts/install-deps.sh")
    lo, hi = rows + 1, rows + tiering_peer.HOT_ROWS
    ids = random.Random(7).choices(range(lo, hi + 1), k=INSTRUCTION_WARM + INSTRUCTION_LOOKUPS)
    result = {}
    for mode, plan_cache_mode in INSTRUCTION_MODES:
        result[mode] = {}
        for side, table, transparent_reads in INSTRUCTION_SIDES:
            count = {n: instructions(data_dir, single_user_lookups(table, transparent_reads, plan_cache_mode,
                                                                   ids[:n], rows, days), n)
                     for n in (INSTRUCTION_WARM, INSTRUCTION_WARM + INSTRUCTION_LOOKUPS)}
            result[mode][side] = (count[INSTRUCTION_WARM + INSTRUCTION_LOOKUPS] - count[INSTRUCTION_WARM]) \
                / INSTRUCTION_LOOKUPS
        say(f"lookup instructions, {mode}: tiered {result[mode]['tiered']:,.0f}, heap {result[mode]['heap']:,.0f}")
    return result


# ------------------------------------------------------------------ the report


def scan_table(results, clock):
    print(f"  {'query':<24}{'rows':>7}{'tiered s':>10}{'heap s':>10}{'duckdb s':>10}"
          f"{'tiered/heap':>13}{'tiered/duckdb':>15}")
    for r in results:
        s = r[clock]
        rows = r["rows"] if clock == "seconds" else ""
        print(f"  {r['query']:<24}{rows:>7}{s['tiered']:>10.4f}{s['heap']:>10.4f}{s['duckdb']:>10.4f}"
              f"{s['tiered'] / s['heap']:>12.2f}x{s['tiered'] / s['duckdb']:>14.2f}x")


def cold_scan_line(explain):
    c = explain["cold_scan"]
    if not c:
        return "no cold scan in the plan"
    if "Lake" in c:
        return f"lake not read ({c['Lake']})"
    rows = (c.get("Actual Rows") or 0) * (c.get("Actual Loops") or 1)
    if "Cold Rows Counted From Lake Metadata" in c:
        return f"{c.get('Actual Total Time', 0):9.1f} ms, cold aggregate: count(*) from the lake's metadata"
    what = (f"cold aggregate over {c.get('Cold Rows Aggregated', 0):,} rows" if
            c.get("Custom Plan Provider") == "TierDB Cold Aggregate" else f"{rows:>10,.0f} rows")
    return (f"{c.get('Actual Total Time', 0):9.1f} ms, {what}; files {c.get('Lake Files')} read, "
            f"{c.get('Lake Files Pruned')} pruned; row groups {c.get('Row Groups Read')} read, "
            f"{c.get('Row Groups Pruned')} pruned; pages {c.get('Pages Read')} read, {c.get('Pages Skipped')} skipped; "
            f"{c.get('Conditions Pushed to the Lake')} conditions pushed")


def worst(results, pair, clock="seconds"):
    """(query, ratio) of the highest tiered/<pair> ratio."""
    r = max(results, key=lambda r: r[clock]["tiered"] / r[clock][pair])
    return r["query"], r[clock]["tiered"] / r[clock][pair]


def report(facts, scans, cold_lookups, problems, pgbench_us, cpu, instructions, args, scripts, load_seconds,
           tier_seconds, cached_bytes):
    cut = facts["cut"]
    print()
    print(f"read benchmark: {facts['heap_below_cut'] + facts['hot_rows']:,} event rows; best of {args.repeat}, "
          f"client wall clock (psycopg, planning included); two modes, set per session: single-process "
          f"(max_parallel_workers_per_gather=0, DuckDB threads=1) and parallel (2 workers, DuckDB threads=2)")
    print(f"  events_tiered: {facts['lake_rows']:,} rows in the lake ({facts['lake_files']} files, snapshot "
          f"{facts['snapshot']}) below T = {cut.isoformat()}, {facts['hot_rows']:,} rows in the heap "
          f"({facts['tiered_partitions']} partitions, {facts['tiered_nonempty']} of them not empty: the rest are "
          f"premade); tiered in {tier_seconds:.1f} s")
    print(f"  events_heap: the same rows in {facts['heap_partitions']} daily partitions, primary key (id, ts); "
          f"both heaps prewarmed ({cached_bytes / 1e6:,.0f} MB in shared_buffers); loaded in {load_seconds:.1f} s")
    print("  DuckDB reads the lake only: its results are checked against events_heap below T")
    first = next(iter(scans.values()))
    print(f"  reading > X: X = {reading_threshold(args.rows)} (about the last 1% of the cold rows, and the hot "
          f"rows); cold point lookup: {next(r['sql'] for r in first if r['query'] == 'cold point lookup')}")
    for (mode, workers, threads), results in zip(SCAN_MODES, scans.values()):
        print()
        print(f"  {mode}: max_parallel_workers_per_gather={workers}, DuckDB threads={threads}")
        print("  wall seconds (client):")
        scan_table(results, "seconds")
        if workers:
            print("  CPU seconds (the whole cluster's, parallel workers included, to about 10 ms; DuckDB's process, "
                  "every thread):")
        else:
            print("  CPU seconds (the backend's, /proc/PID/schedstat; DuckDB's process):")
        scan_table(results, "cpu_seconds")
        lk = cold_lookups[mode]
        ms, n = lk["ms"], lk["executions"]
        count = (str(n["tiered"]) if len(set(n.values())) == 1
                 else f"{n['tiered']}/{n['heap']}/{n['duckdb']} (tiered/heap/duckdb)")
        print(f"  cold point lookup by (id, ts), prepared, mean of {count} executions on distinct cold keys "
              f"(client wall clock):")
        print(f"  tiered {ms['tiered']:.3f} ms, heap {ms['heap']:.3f} ms, duckdb {ms['duckdb']:.3f} ms; "
              f"tiered/heap {ms['tiered'] / ms['heap']:.2f}x, tiered/duckdb {ms['tiered'] / ms['duckdb']:.2f}x")
    print("  (ratios are times: below 1.00x the tiered table is faster)")
    print()
    print("  the plans in EXPLAIN ANALYZE (one run per mode):")
    for (mode, workers, _), results in zip(SCAN_MODES, scans.values()):
        print(f"   {mode}:")
        for r in results:
            print(f"    {r['query']:<24} {cold_scan_line(r['explain'])}")
            if workers:
                print(f"    {'':<25}tiered: {parallelism(r['explain'])}")
                print(f"    {'':<25}heap: {parallelism(r['heap_explain'])}")
    print()
    print(f"  point lookups by primary key on the hot day, pgbench 1 client, both tables' scripts in each run "
          f"({args.repeat} runs of {args.pgbench_seconds} s; mean latency per lookup, from pgbench's "
          f"per-transaction log; ratios: the median of the runs'):")
    print(f"  {'':<32}{'tiered us':>10}{'heap us':>10}{'tiered/heap':>13}{'off us':>10}{'off/heap':>10}"
          f"{'tiered/off':>12}")
    for mode, us in pgbench_us.items():
        print(f"  {mode:<32}{us['tiered']:>10.1f}{us['heap']:>10.1f}{us['tiered/heap']:>12.3f}x"
              f"{us['off']:>10.1f}{us['off/heap']:>9.3f}x{us['tiered/off']:>11.3f}x")
    print(f"  script: {scripts['events_tiered'].read_text().strip()}".replace("\n", "\n          "))
    print()
    print(f"  the same lookups, backend CPU per lookup ({LOOKUP_CPU_ROUNDS * max(args.repeat, 1)} rounds of "
          f"{LOOKUP_CPU_ROUND} lookups per side, taking turns in one session; ratios: the median of the rounds'):")
    print(f"  {'':<32}{'tiered us':>10}{'heap us':>10}{'tiered/heap':>13}{'off us':>10}{'off/heap':>10}"
          f"{'tiered/off':>12}")
    for mode, us in cpu.items():
        print(f"  {mode:<32}{us['tiered']:>10.1f}{us['heap']:>10.1f}{us['tiered/heap']:>12.3f}x"
              f"{us['off']:>10.1f}{us['off/heap']:>9.3f}x{us['tiered/off']:>11.3f}x")
    print("  (off: the tiered table with transparent_reads off, in a second session taking turns with the plain")
    print("   table too; tiered/off, the extension's own cost, is the ratio of the two sessions' ratios)")
    print("  (latency and CPU ratios: below 1.000x the tiered table is faster)")
    print()
    if instructions:
        print(f"  the same lookups in instructions, per lookup (callgrind, a single-user backend, "
              f"{INSTRUCTION_LOOKUPS:,} lookups after {INSTRUCTION_WARM}; the same count every run):")
        print(f"  {'':<32}{'tiered':>10}{'heap':>10}{'tiered/heap':>13}{'transparent_reads off':>23}")
        for mode, n in instructions.items():
            print(f"  {mode:<32}{n['tiered']:>10,.0f}{n['heap']:>10,.0f}{n['tiered'] / n['heap']:>12.3f}x"
                  f"{n['tiered, transparent_reads off']:>23,.0f}")
        print()
    for (mode, workers, threads), results in zip(SCAN_MODES, scans.values()):
        query, ratio = worst(results, "duckdb")
        print(f"  target: tiered/DuckDB <= 1.0x on each ({mode}, wall): {'met' if ratio <= 1.0 else 'NOT met'} "
              f"(worst {query}: {ratio:.2f}x)")
    ms = {mode: cold_lookups[mode]["ms"]["tiered"] for mode in cold_lookups}
    print(f"  target: cold point lookup under {COLD_LOOKUP_TARGET_MS:g} ms: "
          f"{'met' if max(ms.values()) < COLD_LOOKUP_TARGET_MS else 'NOT met'} "
          f"({', '.join(f'{m} {v:.2f} ms' for m, v in ms.items())})")
    for (mode, workers, threads), results in zip(SCAN_MODES, scans.values()):
        scans_only = [r for r in results if r["query"] != "cold point lookup"]  # against an index lookup: its own target
        walls, cpus = worst(scans_only, "heap"), worst(scans_only, "heap", "cpu_seconds")
        print(f"  target: cold scans no slower than heap scans ({mode}): worst tiered/heap {walls[1]:.2f}x wall "
              f"({walls[0]}), {cpus[1]:.2f}x CPU ({cpus[0]}): {'met' if max(walls[1], cpus[1]) <= 1.0 else 'NOT met'}")
    lookup = {mode: us["tiered/heap"] for mode, us in pgbench_us.items()}
    for mode in lookup:
        print(f"  target: hot point lookups within 5% of plain Postgres (pgbench {mode}): {lookup[mode]:.3f}x "
              f"latency: {'met' if lookup[mode] <= 1.05 else 'NOT met'}")
    for mode, us in cpu.items():
        ratio = us["tiered/heap"]
        print(f"  target: hot point lookups within 5% of plain Postgres ({mode}): {ratio:.3f}x CPU: "
              f"{'met' if ratio <= 1.05 else 'NOT met'}")
    for mode, n in (instructions or {}).items():
        ratio = n["tiered"] / n["heap"]
        print(f"  target: hot point lookups within 5% of plain Postgres ({mode}): {ratio:.3f}x instructions: "
              f"{'met' if ratio <= 1.05 else 'NOT met'}")
    print(json.dumps({"benchmark": "seam_reads", "rows": facts["heap_below_cut"] + facts["hot_rows"],
                      "lake_rows": facts["lake_rows"], "hot_rows": facts["hot_rows"], "cut": cut.isoformat(),
                      "scans": scans, "cold_lookups": cold_lookups, "pgbench_latency_us": pgbench_us,
                      "lookup_cpu_us": cpu,
                      "lookup_instructions": instructions},
                     default=str))


# ------------------------------------------------------------------ the benchmark


def benchmark(args):
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = tiering_peer.work_directory(args.dir, "reads")
    try:
        keep = bool(args.keep_cluster and args.dir)
        with tiering_peer.private_cluster(work, SETTINGS, keep=keep, say=say) as (dsn, port):
            say(f"{args.rows:,} rows over {args.days} days, twice; cluster on port {port}, files in {work}")
            measured = measure(args, work, dsn, port)
        if keep:
            say("lookup instructions not counted: they need the cluster stopped (--keep-cluster)")
            measured["instructions"] = None
        else:
            say("point lookups in instructions (callgrind on single-user backends)")
            measured["instructions"] = lookup_instructions(work / "pg" / "data", args.rows, args.days)
        report(args=args, **measured)
        for p in measured["problems"]:
            print(f"read-bench: MISMATCH: {p}", file=sys.stderr)
        return 1 if measured["problems"] else 0
    finally:
        if cleanup:
            cleanup.cleanup()


def measure(args, work, dsn, port):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        t0 = time.perf_counter()
        load(conn, args.rows, args.days)
        load_seconds = time.perf_counter() - t0
        say(f"loaded in {load_seconds:.1f} s; tiering events_tiered")
        tier_seconds, ref = tier(args, work, dsn, conn)
        facts = split(conn, args, ref, clean_env())
        if facts["lake_rows"] != facts["heap_below_cut"] or facts["hot_min"] < facts["cut"]:
            fail(f"the split is wrong: {facts}")
        cached = prewarm(conn)
        say(f"T = {facts['cut']}, lake {facts['lake_rows']:,} rows, heap {facts['hot_rows']:,} rows; "
            f"timing the scans")
        conn.prepare_threshold = None  # the scans are sent as text every time, never prepared behind our back
        keys = cold_keys(conn, args.rows, args.cold_lookups)
        point = keys[0]
        duck = duckdb_connection()
        qs = queries(args.rows, args.days, point)
        scans, lookups, problems = {}, {}, []
        for mode in SCAN_MODES:
            scans[mode[0]], found = run_scans(conn, duck, ref, qs, facts["cut"], args.repeat, mode)
            problems += found
            ms, done, found = cold_lookups(conn, duck, ref, keys, mode)
            lookups[mode[0]] = {"ms": ms, "executions": done}
            problems += found
        conn.execute("RESET max_parallel_workers_per_gather")
        check_lookups(conn, args.rows, args.days)
    say("point lookups")
    pgbench_us, scripts = run_lookups(work, port, args.rows, args.days, args.repeat, args.pgbench_seconds)
    cpu = lookup_cpu(dsn, args.rows, args.days, args.repeat)
    return {"facts": facts, "scans": scans, "cold_lookups": lookups, "problems": problems,
            "pgbench_us": pgbench_us, "cpu": cpu,
            "scripts": scripts, "load_seconds": load_seconds, "tier_seconds": tier_seconds, "cached_bytes": cached}


def main():
    p = argparse.ArgumentParser(description="Read benchmark: a tiered table against plain Postgres and DuckDB.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=DEFAULT_DAYS, help="daily partitions the cold rows fill")
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)),
                   help="timed runs of each query (the best counts) and pgbench runs (the median ratio "
                        f"counts); the lookup CPU rounds are {LOOKUP_CPU_ROUNDS} times as many")
    p.add_argument("--pgbench-seconds", type=positive_int, default=10, help="duration of each pgbench run")
    p.add_argument("--cold-lookups", type=positive_int, default=COLD_LOOKUPS,
                   help="distinct cold keys the prepared cold point lookup is timed with, per side and mode "
                        f"(fewer if a side takes more than {COLD_LOOKUP_SECONDS:.0f} s)")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/reads (default: a temporary directory)")
    p.add_argument("--keep-cluster", action="store_true",
                   help="with --dir: leave the cluster running afterwards (to profile a query)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
