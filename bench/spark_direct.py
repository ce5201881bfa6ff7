#!/usr/bin/env python3
"""The Spark direct-write benchmark: TierDBSpark.write of a direct table against Spark's own Iceberg append.

    spark_direct.py [--rows N] [--batches B] [--days D] [--initial-rows M] [--warmup-rows W]
                    [--parallelism P] [--peer-codec C] [--dir DIR] [--keep-cluster] [--no-build]
                    [--bin build/tierdb]

In one run, on one private PostgreSQL 15 cluster started like the read
benchmark's (seam_reads.SETTINGS: shared_preload_libraries=tierdb, ...):

- `events_direct (id bigint, ts timestamptz, device_id int, value float8,
  note text, PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts)`, daily
  partitions over D days plus a newest day, M rows spread over the D days
  and tiering_peer.HOT_ROWS over the newest; registered with `tierdb register
  --pk id,ts --tier-key ts --mode direct` and tiered with `tierdb run --once`
  (TIERDB_TIERING_LAG=1h): the D days move into the lake, the newest day
  stays in the heap. The split is checked, and that the extension lets
  Spark write the table's lake files (tierdb.direct_files_refusal is NULL);
- connectors/spark is installed into the local Maven repository and
  connectors/spark-bench packaged (`mvn -q`; --no-build skips both);
- DirectWriteBench runs in one JVM with a local Spark session of P cores
  (default 2) and a hadoop Iceberg catalog `bench` (warehouse DIR/peer): an
  untimed warm-up of W rows (default 100,000) to both sides, then B batches
  of N new rows, all below T (ts over the D cold days), each cached before
  the clock starts and written once by TierDBSpark.write (the executors write Iceberg
  data and equality-delete files, the driver commits them as one snapshot
  under the lake lock and publishes it in Postgres) and once by
  `batch.writeTo("bench.db.events_peer").append()` into a plain Iceberg
  table of the same columns PARTITIONED BY (days(ts)), the side that goes
  first alternating. After each TierDB write the table must have grown by N
  rows and op_log must hold one more direct commit; it prints the best and
  median wall seconds of each side, rows/s, CPU (the JVM's plus the
  cluster's), the files each commit added, the Spark jobs each write ran
  and the ratio tierdb/peer. The peer's Parquet codec is the lake table's
  unless --peer-codec names another.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
a check fails or a step fails.
"""

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import seam_reads  # noqa: E402  (the cluster settings)
import spark_seam  # noqa: E402  (the build, the classpath and Java's flags)
from tiering_peer import (BASE_DAY, HOT_ROWS, TOP, clean_env, positive_int, private_cluster, run_measured,  # noqa: E402
                          tail, work_directory)

MAIN = "io.tierdb.spark.bench.DirectWriteBench"
TABLE = "public.events_direct"
DAY_US = 86_400_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# The line DirectWrite logs (INFO) when a write of a direct table takes the routed path instead.
FALLBACK = "through Postgres, not as lake files"


def fail(message):
    print(f"spark-direct: {message}", file=sys.stderr)
    sys.exit(1)


def say(message):
    print(f"spark-direct: {message}", flush=True)


def micros(day_offset):
    """Microseconds since the epoch of midnight UTC day_offset days after BASE_DAY."""
    d = dt.datetime.fromisoformat(BASE_DAY).replace(tzinfo=dt.timezone.utc) + dt.timedelta(days=day_offset)
    return (d - EPOCH) // dt.timedelta(microseconds=1)


def create_and_fill(conn, rows, days):
    """events_direct: days + 1 daily partitions, rows over the first days, HOT_ROWS over the last."""
    with conn.cursor() as cur:
        cur.execute("SET TimeZone = 'UTC'")
        try:
            cur.execute("CREATE EXTENSION IF NOT EXISTS tierdb")
        except Exception as e:  # psycopg.Error
            fail(f"CREATE EXTENSION tierdb failed: {str(e).strip()}; install the extension first "
                 "(make install-extension, with PG_CONFIG for a private Postgres)")
        cur.execute("CREATE TABLE events_direct (id bigint, ts timestamptz, device_id int, value float8, note text,"
                    " PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts)")
        for d in range(days + 1):
            cur.execute(
                "SELECT format('CREATE TABLE %%I PARTITION OF events_direct FOR VALUES FROM (%%L) TO (%%L)',"
                " 'events_direct_' || to_char(%s::date + %s::int, 'YYYYMMDD'),"
                " (%s::date + %s::int)::timestamptz, (%s::date + %s::int + 1)::timestamptz)",
                (BASE_DAY, d, BASE_DAY, d, BASE_DAY, d))
            cur.execute(cur.fetchone()[0])

        # ts rises with id over [start, start + span), under 1 ms of jitter; the rest from hashes of the id
        def insert(first, count, start_us, span_us):
            cur.execute(
                "INSERT INTO events_direct SELECT g, timestamptz '" + BASE_DAY + " 00:00:00+00'"
                " + make_interval(secs => (%s::bigint + (g - %s) * %s::bigint / %s"
                "   + (hashint8extended(g, 1) & 9223372036854775807) %% 1000) / 1e6),"
                " ((hashint8extended(g, 2) & 9223372036854775807) %% 10000)::int,"
                " ((hashint8extended(g, 3) & 9223372036854775807) %% 1000000) / 100.0,"
                " 'note ' || g"
                " FROM generate_series(%s::bigint, %s::bigint) g",
                (start_us, first, span_us - 1000, count, first, first + count - 1))

        insert(1, rows, 0, days * DAY_US)
        insert(rows + 1, HOT_ROWS, days * DAY_US, DAY_US)
        cur.execute("VACUUM (FREEZE, ANALYZE) events_direct")
        cur.execute("CHECKPOINT")


def tier(args, work, dsn, conn):
    """Registers events_direct in direct mode and runs `tierdb run --once`; returns (seconds, lake directory)."""
    env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"), TIERDB_TIERING_LAG="1h")
    reg = subprocess.run([args.bin, "register", "--table", TABLE, "--pk", "id,ts", "--tier-key", "ts",
                          "--mode", "direct"], env=env, capture_output=True, text=True)
    if reg.returncode != 0:
        fail(f"tierdb register failed ({reg.returncode}):\n{reg.stderr}")
    code, seconds, _ = run_measured([args.bin, "run", "--once"], env, work / "tier.out", work / "tier.err")
    if code != 0:
        fail(f"tierdb run --once failed ({code}); its log:\n{tail(work / 'tier.err')}")
    with conn.cursor() as cur:
        cur.execute("SELECT lake_table_ref, mode FROM tierdb.tables WHERE table_id = %s::regclass::oid::bigint",
                    (TABLE,))
        ref, mode = cur.fetchone()
    if mode != "direct":
        fail(f"{TABLE} is registered in mode {mode}, not direct")
    return seconds, ref


def split(conn, args, ref):
    """Where the rows are after tiering: T, S, lake rows and files, heap rows; and the direct path's refusal."""
    info = subprocess.run([args.bin, "lake", "info", ref, "--json"], env=clean_env(), capture_output=True, text=True)
    if info.returncode != 0:
        fail(f"tierdb lake info {ref} failed:\n{info.stderr}")
    files = json.loads(info.stdout)["files"] or {}
    with conn.cursor() as cur:
        cur.execute("SELECT tier_key_hi, lake_snapshot_id FROM tierdb.cutline"
                    " WHERE table_id = %s::regclass::oid::bigint", (TABLE,))
        cut, snapshot = cur.fetchone()
        cur.execute("SET tierdb.transparent_reads = off")
        cur.execute("SELECT count(*) FROM events_direct")
        hot_rows = cur.fetchone()[0]
        cur.execute("RESET tierdb.transparent_reads")
        cur.execute("SELECT count(*) FROM events_direct")
        total = cur.fetchone()[0]
        cur.execute("SELECT tierdb.direct_files_refusal(%s::regclass)", (TABLE,))
        refusal = cur.fetchone()[0]
    return {"cut": cut, "snapshot": snapshot, "lake_rows": int(files.get("data_records", 0)),
            "lake_files": int(files.get("data_files", 0)), "hot_rows": hot_rows, "total": total,
            "refusal": refusal}


def setup(args, work, dsn):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        t0 = time.perf_counter()
        create_and_fill(conn, args.initial_rows, args.days)
        load_seconds = time.perf_counter() - t0
        say(f"loaded {args.initial_rows + HOT_ROWS:,} rows in {load_seconds:.1f} s; tiering {TABLE}")
        tier_seconds, ref = tier(args, work, dsn, conn)
        facts = split(conn, args, ref)
    want_cut = micros(args.days)
    if (facts["cut"] != want_cut or facts["lake_rows"] != args.initial_rows or facts["hot_rows"] != HOT_ROWS
            or facts["total"] != args.initial_rows + HOT_ROWS):
        fail(f"the split is wrong (T should be {want_cut}, {args.initial_rows} rows in the lake, {HOT_ROWS} in the "
             f"heap): {facts}")
    if facts["refusal"] is not None:
        fail(f"the extension refuses lake files for {TABLE}: {facts['refusal']}")
    cut = EPOCH + dt.timedelta(microseconds=facts["cut"])
    say(f"T = {cut.isoformat()}: {facts['lake_rows']:,} rows in the lake ({facts['lake_files']} files, snapshot "
        f"{facts['snapshot']}), {facts['hot_rows']:,} in the heap; tiered in {tier_seconds:.1f} s")
    return facts, ref


def run_bench(args, cp, port, work, facts, ref):
    cmd = ["java"] + spark_seam.JAVA_OPTIONS + [
        "-cp", cp, MAIN,
        "--jdbc-url", f"jdbc:postgresql://127.0.0.1:{port}/postgres?user=postgres",
        "--table", TABLE, "--lake", ref, "--lake-warehouse", str(work / "lake"), "--warehouse", str(work / "peer"),
        "--cold-from", str(micros(0)), "--cold-to", str(facts["cut"]),
        "--rows", str(args.rows), "--batches", str(args.batches), "--parallelism", str(args.parallelism),
        "--warmup-rows", str(args.warmup_rows),
        "--pg-pid", spark_seam.postmaster_pid(work / "pg"), "--clock-ticks", str(os.sysconf("SC_CLK_TCK"))]
    if args.peer_codec:
        cmd += ["--peer-codec", args.peer_codec]
    log_path = work / "spark.log"
    say(f"running DirectWriteBench (Spark's log: {log_path}):\n  "
        + " ".join(c if c != cp else "CLASSPATH" for c in cmd))
    with open(log_path, "wb") as log:
        code = subprocess.run(cmd, stderr=log, env=clean_env()).returncode
    lines = log_path.read_text(errors="replace").splitlines()
    mismatches = [line for line in lines if "MISMATCH" in line]
    for line in mismatches:
        print(line, file=sys.stderr)
    for line in lines:
        if FALLBACK in line:
            say(f"a write took the routed path: {line}")
    if code != 0 and not mismatches:
        fail(f"DirectWriteBench failed ({code}); the end of its log:\n{tail(log_path, 40)}")
    return code


def benchmark(args):
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = work_directory(args.dir, "spark-direct")
    try:
        if args.no_build:
            cp = spark_seam.classpath()
        else:
            say("building connectors/spark and connectors/spark-bench")
            cp = spark_seam.build(work)
        keep = bool(args.keep_cluster and args.dir)
        with private_cluster(work, seam_reads.SETTINGS, keep=keep, say=say) as (dsn, port):
            say(f"{args.batches} batches of {args.rows:,} rows; cluster on port {port}, files in {work}")
            facts, ref = setup(args, work, dsn)
            return run_bench(args, cp, port, work, facts, ref)
    finally:
        if cleanup:
            cleanup.cleanup()


def main():
    p = argparse.ArgumentParser(description="Spark benchmark: TierDBSpark.write of a direct table against Spark's "
                                            "own Iceberg append.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", 1_000_000)),
                   help="rows per batch (default 1,000,000)")
    p.add_argument("--batches", type=positive_int, default=3,
                   help="timed batches per side; best and median are shown")
    p.add_argument("--days", type=positive_int, default=seam_reads.DEFAULT_DAYS,
                   help="cold daily partitions, which the rows of every batch fill")
    p.add_argument("--initial-rows", type=positive_int, default=200_000,
                   help="rows loaded over the cold days and tiered before anything is written")
    p.add_argument("--warmup-rows", type=int, default=100_000,
                   help="rows of the untimed first write to each side, so the JIT has compiled both writers' "
                        "per-row code before the clock starts (0: none)")
    p.add_argument("--parallelism", type=positive_int, default=2,
                   help="Spark cores (local[P]) and partitions of each batch")
    p.add_argument("--peer-codec", help="the peer table's Parquet codec (default: the lake table's "
                                        "write.parquet.compression-codec)")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lakes and logs in DIR/spark-direct (default: a temporary directory)")
    p.add_argument("--keep-cluster", action="store_true", help="with --dir: leave the cluster running afterwards")
    p.add_argument("--no-build", action="store_true", help="use the already packaged connectors/spark-bench")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
