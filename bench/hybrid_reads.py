#!/usr/bin/env python3
"""The hybrid-read benchmark: scans of a mirrored table read from its heap,
read hybrid (tierdb.mirrored_reads = 'hybrid': the mirror below the split,
docs/mirrored.md), and DuckDB's iceberg_scan of the same mirror.

    hybrid_reads.py [--rows N] [--days D] [--repeat R] [--flush-millis MS] [--dir DIR] [--bin build/tierdb]

In one run, on a private PostgreSQL 15 cluster with the read benchmark's
settings (seam_reads.SETTINGS: shared_preload_libraries=tierdb, one process
per query, shared_buffers 2GB with the heap prewarmed; scripts/pg-cluster.sh
adds wal_level=logical):

- the read benchmark's event rows (tiering_peer.create_and_fill: N rows over
  D daily partitions and a few on the day after, primary key (id, ts)) are
  registered --mode mirrored and copied into the lake by `tierdb run --once`
  (timed); then `tierdb run` keeps pumping (TIERDB_MIRROR_FLUSH_MILLIS=MS)
  while the queries run, as in production, with no writes;
- the read benchmark's scans run three ways: from the heap, hybrid with
  tierdb.hybrid_lag 0 (every row below the newest tier key from the lake),
  and on DuckDB (threads=1) over the lake. Every result must equal the
  heap's. Timed by the client (wall clock, planning and the hybrid
  capture's wait for the mirror included): one warm-up, then the best of R;
- the capture's wait alone: the wall time of a hybrid read that the
  conditions keep off the lake (its capture still waits for the frontier).

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
any result differs from the heap's.
"""

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiering_peer  # noqa: E402  (the cluster helpers and the event rows)
from seam_reads import (SETTINGS, backend_cpu, duckdb_connection, duckdb_runner, pg_runner,  # noqa: E402
                        queries, same_rows, timed)
from tiering_peer import TOP, clean_env, create_and_fill, positive_int, tail  # noqa: E402

DEFAULT_ROWS = 5_000_000
DEFAULT_DAYS = 10


def fail(message):
    print(f"hybrid-bench: {message}", file=sys.stderr)
    sys.exit(1)


def say(message):
    print(f"hybrid-bench: {message}", file=sys.stderr, flush=True)


def mirror(args, work, dsn, conn):
    """Registers events mirrored and copies it; returns (copy seconds, lake table directory, daemon env)."""
    env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"),
                    TIERDB_MIRROR_FLUSH_MILLIS=str(args.flush_millis), TIERDB_CYCLE_INTERVAL_SECONDS="60")
    reg = subprocess.run([args.bin, "register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts",
                          "--mode", "mirrored", "--lake-partition", "day", "--chunk-rows", "1000000"],
                         env=env, capture_output=True, text=True)
    if reg.returncode != 0:
        fail(f"tierdb register failed ({reg.returncode}):\n{reg.stderr}")
    code, seconds, _ = tiering_peer.run_measured([args.bin, "run", "--once"], env, work / "copy.out",
                                                 work / "copy.err")
    if code != 0:
        fail(f"tierdb run --once failed ({code}); its log:\n{tail(work / 'copy.err')}")
    ref = conn.execute("SELECT lake_table_ref FROM tierdb.tables WHERE table_name = 'events'").fetchone()[0]
    return seconds, ref, env


def run_scans(conn, duck, ref, days, repeat):
    run_pg, pg_cpu = pg_runner(conn), backend_cpu(conn)

    def pg_side(mode):
        def run(sql):
            conn.execute(f"SET tierdb.mirrored_reads = '{mode}'")
            return run_pg(sql)
        return run

    results, problems = [], []
    for q in queries(days):
        sides = {"heap": (pg_side("heap"), q.sql("events"), pg_cpu),
                 "hybrid": (pg_side("hybrid"), q.sql("events"), pg_cpu),
                 "duckdb": (duckdb_runner(duck), q.sql(f"iceberg_scan('{ref}')"), time.process_time)}
        answers = {name: run(sql) for name, (run, sql, _) in sides.items()}  # also the warm-up
        for name in ("hybrid", "duckdb"):
            ok, why = same_rows(answers[name], answers["heap"])
            if not ok:
                problems.append(f"{q.name}: {name} and the heap differ: {why}")
        wall = {name: math.inf for name in sides}
        for _ in range(repeat):
            for name, side in sides.items():
                wall[name] = min(wall[name], timed(*side)[0])
        results.append({"query": q.name, "rows": len(answers["heap"]), "seconds": wall})
        say(f"{q.name}: heap {wall['heap']:.4f} s, hybrid {wall['hybrid']:.4f} s, duckdb {wall['duckdb']:.4f} s")
    conn.execute("SET tierdb.mirrored_reads = 'hybrid'")
    waits = []
    for _ in range(max(repeat, 5)):
        start = time.perf_counter()
        conn.execute("SELECT count(*) FROM events WHERE ts >= '9999-01-01'").fetchall()
        waits.append(time.perf_counter() - start)
    conn.execute("RESET tierdb.mirrored_reads")
    return results, problems, sorted(waits)


def report(args, results, waits, copy_seconds):
    print(f"\nHybrid reads of a mirrored table: {args.rows:,} rows over {args.days} days, "
          f"TIERDB_MIRROR_FLUSH_MILLIS={args.flush_millis}, best of {args.repeat} (wall clock, seconds)")
    print(f"initial copy (tierdb run --once): {copy_seconds:.1f} s")
    print(f"{'query':<28} {'rows':>8} {'heap':>9} {'hybrid':>9} {'duckdb':>9} {'hybrid/heap':>12} {'hybrid/duckdb':>14}")
    for r in results:
        s = r["seconds"]
        print(f"{r['query']:<28} {r['rows']:>8} {s['heap']:>9.4f} {s['hybrid']:>9.4f} {s['duckdb']:>9.4f} "
              f"{s['hybrid'] / s['heap']:>11.2f}x {s['hybrid'] / s['duckdb']:>13.2f}x")
    print(f"the capture's wait for the mirror (a hybrid read the conditions keep off the lake): "
          f"median {waits[len(waits) // 2] * 1000:.0f} ms, max {waits[-1] * 1000:.0f} ms")


def benchmark(args):
    import psycopg

    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = tiering_peer.work_directory(args.dir, "hybrid")
    daemon = None
    try:
        with tiering_peer.private_cluster(work, SETTINGS, say=say) as (dsn, port):
            say(f"{args.rows:,} rows over {args.days} days; cluster on port {port}, files in {work}")
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("SET TimeZone = 'UTC'")
                create_and_fill(conn, args.rows, args.days)
                copy_seconds, ref, env = mirror(args, work, dsn, conn)
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
                conn.execute("SELECT sum(pg_prewarm(inhrelid)) FROM pg_inherits"
                             " WHERE inhparent = 'events'::regclass").fetchall()
                with open(work / "daemon.err", "w") as log:
                    daemon = subprocess.Popen([args.bin, "run"], env=env, stdout=subprocess.DEVNULL, stderr=log)
                say(f"copied in {copy_seconds:.1f} s; timing the scans with the daemon pumping")
                results, problems, waits = run_scans(conn, duckdb_connection(), ref, args.days, args.repeat)
            daemon.terminate()
            if daemon.wait(timeout=60) != 0:
                problems.append(f"the daemon failed; its log:\n{tail(work / 'daemon.err')}")
            daemon = None
        report(args, results, waits, copy_seconds)
        for p in problems:
            print(f"hybrid-bench: MISMATCH: {p}", file=sys.stderr)
        return 1 if problems else 0
    finally:
        if daemon is not None:
            daemon.kill()
        if cleanup:
            cleanup.cleanup()


def main():
    p = argparse.ArgumentParser(description="Hybrid reads of a mirrored table against its heap and DuckDB.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=DEFAULT_DAYS)
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)))
    p.add_argument("--flush-millis", type=positive_int, default=100,
                   help="TIERDB_MIRROR_FLUSH_MILLIS: how often the pump runs, and so a hybrid read's wait")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/hybrid (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
