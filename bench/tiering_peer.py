#!/usr/bin/env python3
"""The tiering benchmark: `tierdb run --once` against the path a user would script.

    tiering_peer.py [--rows N] [--days D] [--dir DIR] [--bin build/tierdb]
        the whole benchmark: a private cluster, the rows, both sides, the report
    tiering_peer.py scripted --dsn DSN --warehouse DIR --cutoff ISO
        the scripted side alone (the benchmark runs it in its own process so its
        peak RSS is its own); prints one JSON line

The benchmark starts a private PostgreSQL 15 cluster (scripts/pg-cluster.sh)
with settings for bulk work (shared_buffers 1GB, a large max_wal_size,
autovacuum off; the script itself runs every cluster with fsync,
synchronous_commit and full_page_writes off, which both sides share alike),
creates `events` with the event schema of the Parquet benchmark (id bigint,
ts timestamptz, device_id int, value float8, event text, "user" text),
PARTITION BY RANGE (ts) in daily partitions, primary key (id, ts), and fills
it in SQL with generate_series: N rows spread evenly over D days (the rows to
tier) and 1,000 rows on the day after (the hot day that stays in the heap).
The columns follow parquet_bench.c's distribution (10,000 devices, values with
two decimals, 20 event names, 30% null users out of 100,000), drawn with
Postgres' hashint8extended rather than splitmix64: the same shape, not the
same values. The table is then vacuumed (freeze) and checkpointed, so neither
side pays for setting hint bits, and both read from the same warm cache.

Both sides move the same rows, those below the hot day (ts < cutoff), into
an Iceberg table partitioned by day(ts) with ZSTD Parquet:

- scripted, first (it leaves the heap as it was): psycopg 3 binary
  `COPY (SELECT ... WHERE ts >= day AND ts < day + 1) TO STDOUT` per day,
  `copy.rows()` collected into pyarrow arrays 262,144 rows at a time, and one
  pyiceberg `table.append` per day (a SqlCatalog on sqlite in the work
  directory; the table is created before the clock starts, as ours is by
  `register`). Without pyiceberg-core, pyiceberg refuses appends to a
  partitioned table; the scripted side then writes an unpartitioned table and
  the report says so. Timed from connecting to the last commit.
- ours: `tierdb register` (not timed), then `tierdb run --once` with
  TIERDB_TIERING_LAG=1h, which tiers every partition but the hot day's and
  drops them from the heap. Timed as the whole process, start to exit.

Each side's peak RSS is its process's ru_maxrss (os.wait4). Lake bytes are the
sizes of the Parquet data files under each table's data/; heap bytes are
pg_total_relation_size (heap, TOAST and the primary key index) of the tiered
partitions, measured before either side runs; the heap-only size
(pg_relation_size) is printed too. Rows are counted from the lake afterwards
(ours: `tierdb lake info --json`, files.data_records; scripted: the snapshot
summary's total-records) and must both equal the heap's count below the
cutoff.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if a
side fails or the row counts differ.
"""

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_ROWS = 10_000_000
DEFAULT_DAYS = 10
HOT_ROWS = 1000
BASE_DAY = "2024-01-01"
CHUNK_ROWS = 256 * 1024  # rows the scripted side turns into pyarrow arrays at once
TOP = Path(__file__).resolve().parent.parent
EVENTS = ["login", "logout", "click", "view", "scroll", "search", "purchase",
          "add_to_cart", "remove_from_cart", "checkout", "share", "like", "comment", "signup",
          "error", "open", "close", "download", "upload", "refresh"]

# ------------------------------------------------------------------ helpers


def positive_int(text):
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return value


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra):
    """The environment without any PG* or TIERDB_* setting of the caller, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "TIERDB_"))}
    env.update(extra)
    return env


def run_measured(args, env, out_path, err_path):
    """Runs args; returns (exit status, wall seconds, peak RSS in MB) of that process alone."""
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, seconds, usage.ru_maxrss / 1024.0  # Linux reports kilobytes


def data_bytes(table_dir):
    files = list(Path(table_dir, "data").rglob("*.parquet"))
    return sum(f.stat().st_size for f in files), len(files)


def fail(message):
    print(f"tiering-bench: {message}", file=sys.stderr)
    sys.exit(1)


def tail(path, lines=20):
    text = Path(path).read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


# ------------------------------------------------------------------ the rows


def create_and_fill(conn, rows, days, reading=False):
    """events, days+1 daily partitions, rows over the first days and HOT_ROWS on the last.

    With reading, a seventh column `reading double precision NOT NULL` that rises with id and so
    with ts: id / 100 plus a hashed fraction below 0.01 (the read benchmark's column whose
    statistics can prune)."""
    event_array = "ARRAY[" + ",".join(f"'{e}'" for e in EVENTS) + "]"
    day_us = 86_400_000_000
    span = days * day_us
    with conn.cursor() as cur:
        cur.execute("SET TimeZone = 'UTC'")
        try:
            cur.execute("CREATE EXTENSION IF NOT EXISTS tierdb")
        except Exception as e:  # psycopg.Error; psycopg is imported by the caller
            fail(f"CREATE EXTENSION tierdb failed: {str(e).strip()}; run `make install-extension` first")
        cur.execute(
            'CREATE TABLE events (id bigint NOT NULL, ts timestamptz NOT NULL, device_id int NOT NULL,'
            ' value float8 NOT NULL, event text NOT NULL, "user" text'
            + (", reading float8 NOT NULL" if reading else "") + ") PARTITION BY RANGE (ts)")
        for d in range(days + 1):
            cur.execute(
                "SELECT format('CREATE TABLE %%I PARTITION OF events FOR VALUES FROM (%%L) TO (%%L)',"
                " 'events_' || to_char(%s::date + %s::int, 'YYYYMMDD'),"
                " (%s::date + %s::int)::timestamptz, (%s::date + %s::int + 1)::timestamptz)",
                (BASE_DAY, d, BASE_DAY, d, BASE_DAY, d))
            cur.execute(cur.fetchone()[0])

        # h(k) = hashint8extended(id, k) made non-negative; the columns as parquet_bench.c draws them.
        def insert(first, count, start_us, span_us):
            cur.execute(
                "INSERT INTO events SELECT g, timestamptz '" + BASE_DAY + " 00:00:00+00'"
                " + make_interval(secs => (%s::bigint + (g - %s) * %s::bigint / %s"
                "   + (hashint8extended(g, 1) & 9223372036854775807) %% 1000) / 1e6),"
                " ((hashint8extended(g, 2) & 9223372036854775807) %% 10000)::int,"
                " ((hashint8extended(g, 3) & 9223372036854775807) %% 1000000) / 100.0,"
                " (" + event_array + ")[1 + (hashint8extended(g, 4) & 9223372036854775807) %% 20],"
                " CASE WHEN (hashint8extended(g, 5) & 9223372036854775807) %% 100 < 30 THEN NULL"
                "  ELSE 'user-' || ((hashint8extended(g, 5) >> 32) & 2147483647) %% 100000 END"
                + (", (g * 100 + (hashint8extended(g, 6) & 9223372036854775807) %% 100) / 10000.0::float8"
                   if reading else "") +
                " FROM generate_series(%s::bigint, %s::bigint) g",
                (start_us, first, span_us - 1000, count, first, first + count - 1))

        insert(1, rows, 0, span)
        insert(rows + 1, HOT_ROWS, span, day_us)
        cur.execute("ALTER TABLE events ADD PRIMARY KEY (id, ts)")
        cur.execute("VACUUM (FREEZE, ANALYZE) events")
        cur.execute("CHECKPOINT")
        cur.execute("SELECT (%s::date + %s::int)::timestamptz", (BASE_DAY, days))
        return cur.fetchone()[0]


def heap_facts(conn, cutoff):
    """(rows below cutoff, total bytes, heap-only bytes) of the partitions wholly below cutoff."""
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM events WHERE ts < %s", (cutoff,))
        count = cur.fetchone()[0]
        # The partitions this script made are named by day, so those below the cutoff sort below its day's name.
        cur.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint,"
            " coalesce(sum(pg_relation_size(c.oid)), 0)::bigint, count(*)"
            " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'events'::regclass AND c.relname < 'events_' || to_char(%s::timestamptz, 'YYYYMMDD')",
            (cutoff,))
        total, heap_only, nparts = cur.fetchone()
    return count, int(total), int(heap_only), nparts


# ------------------------------------------------------------------ the scripted side


def scripted(args):
    """What a user would script: COPY per day into pyarrow, a pyiceberg append per day."""
    import datetime as dt

    import psycopg
    import pyarrow as pa
    from psycopg import sql
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform
    from pyiceberg.types import (DoubleType, IntegerType, LongType, NestedField, StringType,
                                 TimestamptzType)

    try:
        import pyiceberg_core  # noqa: F401  (pyiceberg's day transform for partitioned writes)
        partitioned = True
    except ImportError:
        partitioned = False

    warehouse = Path(args.warehouse)
    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    catalog.create_namespace("bench")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestamptzType(), required=True),
        NestedField(3, "device_id", IntegerType(), required=True),
        NestedField(4, "value", DoubleType(), required=True),
        NestedField(5, "event", StringType(), required=True),
        NestedField(6, "user", StringType(), required=False),
        identifier_field_ids=[1, 2],
    )
    spec = (PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))
            if partitioned else PartitionSpec())
    table = catalog.create_table("bench.events", schema=schema, partition_spec=spec,
                                 properties={"write.parquet.compression-codec": "zstd"})
    arrow_schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("device_id", pa.int32(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
        pa.field("event", pa.string(), nullable=False),
        pa.field("user", pa.string(), nullable=True),
    ])
    cutoff = dt.datetime.fromisoformat(args.cutoff)
    query = sql.SQL('COPY (SELECT id, ts, device_id, value, event, "user" FROM events'
                    " WHERE ts >= {} AND ts < {}) TO STDOUT (FORMAT BINARY)")

    def batch(rows):
        columns = list(zip(*rows))
        return pa.RecordBatch.from_arrays(
            [pa.array(col, type=f.type) for col, f in zip(columns, arrow_schema)], schema=arrow_schema)

    start = time.perf_counter()
    moved = 0
    with psycopg.connect(args.dsn) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        first = conn.execute("SELECT date_trunc('day', min(ts)) FROM events").fetchone()[0]
        day = first
        while day < cutoff:
            end = min(day + dt.timedelta(days=1), cutoff)
            batches, rows = [], []
            with conn.cursor() as cur:
                with cur.copy(query.format(day, end)) as copy:
                    copy.set_types(["int8", "timestamptz", "int4", "float8", "text", "text"])
                    for row in copy.rows():
                        rows.append(row)
                        if len(rows) == CHUNK_ROWS:
                            batches.append(batch(rows))
                            rows = []
            if rows:
                batches.append(batch(rows))
            if batches:
                part = pa.Table.from_batches(batches, schema=arrow_schema)
                table.append(part)
                moved += part.num_rows
            day = end
    seconds = time.perf_counter() - start

    table = catalog.load_table("bench.events")
    snapshot = table.current_snapshot()
    lake_records = int(snapshot.summary["total-records"]) if snapshot else 0
    lake_bytes, files = data_bytes(Path(table.location().removeprefix("file://")))
    print(json.dumps({"rows": moved, "seconds": seconds, "lake_records": lake_records,
                      "lake_bytes": lake_bytes, "data_files": files, "partitioned": partitioned,
                      "snapshots": len(table.metadata.snapshots)}))


# ------------------------------------------------------------------ the benchmark


def ours(args, work, dsn, conn):
    env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"), TIERDB_TIERING_LAG="1h")
    reg = subprocess.run([args.bin, "register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts"],
                         env=env, capture_output=True, text=True)
    if reg.returncode != 0:
        fail(f"tierdb register failed ({reg.returncode}):\n{reg.stderr}")
    code, seconds, rss = run_measured([args.bin, "run", "--once"], env, work / "ours.out", work / "ours.err")
    if code != 0:
        fail(f"tierdb run --once failed ({code}); its log:\n{tail(work / 'ours.err')}")
    with conn.cursor() as cur:
        cur.execute("SELECT t.lake_table_ref FROM tierdb.tables t WHERE t.table_name = 'events'")
        ref = cur.fetchone()[0]
    info = subprocess.run([args.bin, "lake", "info", ref, "--json"], env=env, capture_output=True, text=True)
    if info.returncode != 0:
        fail(f"tierdb lake info {ref} failed:\n{info.stderr}")
    files = json.loads(info.stdout)["files"] or {}
    lake_bytes, nfiles = data_bytes(ref)
    return {"seconds": seconds, "peak_rss_mb": rss, "lake_records": int(files.get("data_records", 0)),
            "lake_bytes": lake_bytes, "data_files": nfiles, "log": str(work / "ours.err")}


def scripted_side(args, work, dsn, cutoff):
    cmd = [sys.executable, str(Path(__file__).resolve()), "scripted", "--dsn", dsn,
           "--warehouse", str(work / "pyiceberg"), "--cutoff", cutoff.isoformat()]
    code, seconds, rss = run_measured(cmd, clean_env(), work / "scripted.out", work / "scripted.err")
    if code != 0:
        fail(f"the scripted side failed ({code}):\n{tail(work / 'scripted.err')}")
    result = json.loads(Path(work / "scripted.out").read_text().strip().splitlines()[-1])
    result["process_seconds"] = seconds
    result["peak_rss_mb"] = rss
    return result


def report(rows_below, heap_total, heap_only, nparts, mine, theirs, load_seconds):
    def mb(n):
        return f"{n / 1e6:,.1f} MB"

    ours_rate = mine["lake_records"] / mine["seconds"]
    their_rate = theirs["lake_records"] / theirs["seconds"]
    print()
    print(f"tiering: {rows_below:,} rows in {nparts} daily partitions "
          f"(heap {mb(heap_total)} with the primary key index and TOAST, {mb(heap_only)} heap alone; "
          f"loaded in {load_seconds:.1f} s)")
    if not theirs["partitioned"]:
        print("note: pyiceberg-core is not installed, so the scripted side wrote an UNPARTITIONED table "
              "(pyiceberg refuses partitioned appends without it)")
    print()
    header = f"  {'':<30}{'tierdb run --once':>20}{'psycopg+pyiceberg':>20}"
    print(header)
    lines = [
        ("rows in the lake", f"{mine['lake_records']:,}", f"{theirs['lake_records']:,}"),
        ("seconds (wall)", f"{mine['seconds']:.2f}", f"{theirs['seconds']:.2f}"),
        ("rows/s", f"{ours_rate:,.0f}", f"{their_rate:,.0f}"),
        ("lake bytes (data files)", mb(mine["lake_bytes"]), mb(theirs["lake_bytes"])),
        ("data files", f"{mine['data_files']}", f"{theirs['data_files']}"),
        ("lake / heap bytes", f"{mine['lake_bytes'] / heap_total:.3f}", f"{theirs['lake_bytes'] / heap_total:.3f}"),
        ("lake / heap-alone bytes", f"{mine['lake_bytes'] / heap_only:.3f}", f"{theirs['lake_bytes'] / heap_only:.3f}"),
        ("peak RSS", f"{mine['peak_rss_mb']:.1f} MB", f"{theirs['peak_rss_mb']:.1f} MB"),
    ]
    for name, a, b in lines:
        print(f"  {name:<30}{a:>20}{b:>20}")
    print()
    print(f"  throughput ratio (ours / scripted): {ours_rate / their_rate:.2f}x   (target: at least 2x)")
    print(f"  lake bytes / heap bytes (ours):     {mine['lake_bytes'] / heap_total:.3f}   (target: at most 0.25)")
    print(f"  our peak RSS: {mine['peak_rss_mb']:.1f} MB; a Parquet row group here is at most 1,048,576 rows "
          f"or 128 MB encoded")
    print(f"  scripted timing: connect to last commit ({theirs['snapshots']} appends, one per day; "
          f"its process ran {theirs['process_seconds']:.1f} s with interpreter start and imports); "
          f"ours: the whole `tierdb run --once` process")
    print(json.dumps({"benchmark": "tiering", "rows": rows_below, "heap_bytes": heap_total,
                      "heap_only_bytes": heap_only,
                      "ours": {k: v for k, v in mine.items() if k != "log"}, "scripted": theirs,
                      "throughput_ratio": ours_rate / their_rate,
                      "lake_heap_ratio": mine["lake_bytes"] / heap_total}))


def work_directory(base_dir, name):
    """(work directory, cleanup or None): BASE_DIR/name, emptied, with --dir; else a temporary
    directory. The server runs as `postgres` and must enter it (and pass through BASE_DIR, say
    a mktemp -d of the runner)."""
    if base_dir:
        base = Path(base_dir).resolve()
        base.mkdir(parents=True, exist_ok=True)
        base.chmod(base.stat().st_mode | 0o001)
        work = base / name
        if work.exists():
            subprocess.run(["rm", "-rf", str(work)], check=True)
        work.mkdir(parents=True)
        cleanup = None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix=f"tierdb-{name}-bench.")
        work = Path(cleanup.name)
    work.chmod(0o755)
    return work, cleanup


def run_in_private_cluster(args, name, settings, measure, say=print):
    """The benchmark `name` (args.bin, args.dir): measure(work, dsn, port) in a private cluster with SETTINGS in
    a work directory, removed afterwards unless args.dir keeps it. Returns what measure returns."""
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = work_directory(args.dir, name)
    try:
        with private_cluster(work, settings, say=say) as (dsn, port):
            say(f"{args.rows:,} rows over {args.days} days, twice; cluster on port {port}, files in {work}")
            return measure(work, dsn, port)
    finally:
        if cleanup:
            cleanup.cleanup()


@contextlib.contextmanager
def private_cluster(work, settings, keep=False, say=print):
    """A private cluster in WORK/pg with SETTINGS: yields (dsn, port); stopped at the end
    unless KEEP (then it says how to connect and how to stop it)."""
    cluster = work / "pg"
    port = free_port()
    start = [str(TOP / "scripts/pg-cluster.sh"), "start", str(cluster), str(port)]
    for s in settings:
        start += ["-c", s]
    subprocess.run(start, check=True)
    try:
        yield f"postgres://postgres@127.0.0.1:{port}/postgres", port
    finally:
        if keep:
            say(f"the cluster still runs: psql -h 127.0.0.1 -p {port} -U postgres; "
                f"stop it with: scripts/pg-cluster.sh stop {cluster}")
        else:
            subprocess.run([str(TOP / "scripts/pg-cluster.sh"), "stop", str(cluster)])

def benchmark(args):
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = work_directory(args.dir, "tiering")
    settings = ["shared_buffers=1GB", "max_wal_size=32GB", "checkpoint_timeout=1h",
                "maintenance_work_mem=512MB", "autovacuum=off"]
    try:
        with private_cluster(work, settings) as (dsn, port):
            return measure(args, work, dsn, port)
    finally:
        if cleanup:
            cleanup.cleanup()


def measure(args, work, dsn, port):
    import psycopg

    print(f"tiering-bench: {args.rows:,} rows over {args.days} days; cluster on port {port}, files in {work}")
    t0 = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        cutoff = create_and_fill(conn, args.rows, args.days)
        load_seconds = time.perf_counter() - t0
        rows_below, heap_total, heap_only, nparts = heap_facts(conn, cutoff)
        print(f"tiering-bench: loaded in {load_seconds:.1f} s; running the scripted side", flush=True)
        theirs = scripted_side(args, work, dsn, cutoff)
        print("tiering-bench: running tierdb run --once", flush=True)
        mine = ours(args, work, dsn, conn)
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM events WHERE ts < %s", (cutoff,))
            left = cur.fetchone()[0]
    report(rows_below, heap_total, heap_only, nparts, mine, theirs, load_seconds)
    problems = []
    if mine["lake_records"] != rows_below:
        problems.append(f"tierdb's lake holds {mine['lake_records']} rows, the heap had {rows_below} below the cutoff")
    if theirs["lake_records"] != rows_below or theirs["rows"] != rows_below:
        problems.append(f"the scripted lake holds {theirs['lake_records']} rows, the heap had {rows_below}")
    if left != 0:
        problems.append(f"{left} rows below the cutoff are still in the heap after tiering")
    for p in problems:
        print(f"tiering-bench: {p}", file=sys.stderr)
    return 1 if problems else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "scripted":
        p = argparse.ArgumentParser(prog="tiering_peer.py scripted")
        p.add_argument("scripted")
        p.add_argument("--dsn", required=True)
        p.add_argument("--warehouse", required=True)
        p.add_argument("--cutoff", required=True, help="ISO timestamp: rows below it move")
        scripted(p.parse_args())
        return 0
    p = argparse.ArgumentParser(description="Tiering benchmark: tierdb run --once against psycopg COPY + pyiceberg.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=DEFAULT_DAYS, help="daily partitions the rows fill")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lakes and logs in DIR/tiering (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
