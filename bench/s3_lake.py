#!/usr/bin/env python3
"""The S3 lake benchmark: the same tiering and cold scans with the lake on S3
and on local files, and DuckDB reading the same S3 table.

    s3_lake.py [--rows N] [--days D] [--repeat R] [--dir DIR] [--bin build/tierdb]

In one run: a private S3-compatible server (S3Proxy, scripts/s3-server.sh) and
a private PostgreSQL 15 cluster started with its TIERDB_S3_* variables (so the
backends' cold scans reach it), with the settings of the read benchmark
(bench/seam_reads.py). The event rows of the tiering benchmark
(tiering_peer.create_and_fill: N rows over D daily partitions plus a hot day)
are loaded twice, into `events_local` and `events_s3`; each is registered with
its own warehouse (a local directory; s3://<bucket>/bench) and tiered with its
own `tierdb run --once` (TIERDB_TIERING_LAG=1h), timed as a whole process.
Then the read benchmark's scan queries run on both tables, and on DuckDB's
iceberg_scan of the S3 table (httpfs, threads=1); every answer is compared
(the two tables with each other, DuckDB with the local table below the
cut-line). Best of R runs after a warm-up.

The server is on this machine, so the S3 figures measure our request
pattern (how many requests, how large, how many round trips before the first
row), not a network. Ratios printed: S3 over local for tiering and for each
scan, and ours over DuckDB on the same S3 table.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if a
side fails or any answers differ.
"""

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import seam_reads  # noqa: E402
import tiering_peer  # noqa: E402
from seam_reads import (SETTINGS, backend_cpu, duckdb_connection, duckdb_runner, pg_runner, queries,  # noqa: E402
                        rename_table, same_rows, say, timed)
from tiering_peer import TOP, clean_env, fail, positive_int, tail  # noqa: E402

DEFAULT_ROWS = 2_000_000


def s3_server(work):
    """Starts S3Proxy in WORK/s3 and puts its variables into this process's environment (the cluster and
    every tierdb process started afterwards inherit them); returns the stop function."""
    directory = work / "s3"
    script = TOP / "scripts" / "s3-server.sh"
    subprocess.run([str(script), "start", str(directory)], check=True, stdout=subprocess.DEVNULL)
    for line in (directory / "env").read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        os.environ[name] = value
    return lambda: subprocess.run([str(script), "stop", str(directory)], check=False)


def tier(args, work, dsn, table, warehouse, register_args=()):
    """Registers TABLE with WAREHOUSE (and REGISTER_ARGS) and times its `tierdb run --once`; returns (seconds,
    lake location)."""
    s3 = {k: v for k, v in os.environ.items() if k.startswith("TIERDB_S3_")}  # clean_env drops TIERDB_*
    env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=warehouse, TIERDB_TIERING_LAG="1h", **s3)
    reg = subprocess.run([args.bin, "register", "--table", f"public.{table}", "--pk", "id,ts", "--tier-key", "ts",
                          *register_args], env=env, capture_output=True, text=True)
    if reg.returncode != 0:
        fail(f"tierdb register {table} failed ({reg.returncode}):\n{reg.stderr}")
    code, seconds, _ = tiering_peer.run_measured([args.bin, "run", "--once"], env, work / f"{table}.out",
                                                 work / f"{table}.err")
    if code != 0:
        fail(f"tierdb run --once for {table} failed ({code}); its log:\n{tail(work / f'{table}.err')}")
    return seconds, ref_of(dsn, table)


def ref_of(dsn, table):
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT lake_table_ref FROM tierdb.tables WHERE table_name = %s", (table,)).fetchone()[0]


def cut_of(conn, table):
    return conn.execute("SELECT to_timestamp(c.tier_key_hi / 1e6) FROM tierdb.cutline c JOIN tierdb.tables t"
                        " USING (table_id) WHERE t.table_name = %s", (table,)).fetchone()[0]


def duckdb_on_s3():
    """seam_reads' DuckDB (one thread, iceberg) with httpfs and the server's credentials."""
    import glob
    import importlib

    import duckdb

    con = duckdb_connection()
    root = Path(importlib.import_module("duckdb_extension_httpfs").__path__[0]) / "extensions"
    found = glob.glob(str(root / f"v{duckdb.__version__}" / "*.duckdb_extension")) or glob.glob(
        str(root / "*.duckdb_extension"))
    con.execute(f"LOAD '{found[0]}'")
    con.execute("CREATE SECRET lake (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', "
                "USE_SSL false)", [os.environ["TIERDB_S3_ACCESS_KEY"], os.environ["TIERDB_S3_SECRET_KEY"],
                                   os.environ["TIERDB_S3_REGION"], os.environ["TIERDB_S3_ENDPOINT"].split("://", 1)[1]])
    return con


def run_scans(conn, duck, s3_ref, cut, qs, repeat):
    run_pg, pg_cpu = pg_runner(conn), backend_cpu(conn)
    below = f"ts < timestamptz '{cut.isoformat()}'"
    results, problems = [], []
    for q in qs:
        sides = {"local": (run_pg, q.sql("events_local"), pg_cpu), "s3": (run_pg, q.sql("events_s3"), pg_cpu),
                 "duckdb_s3": (duckdb_runner(duck), q.sql(f"iceberg_scan('{s3_ref}')"), time.process_time)}
        answers = {name: run(sql) for name, (run, sql, _) in sides.items()}  # also the warm-up
        ok, why = same_rows(answers["s3"], answers["local"])
        if not ok:
            problems.append(f"{q.name}: events_s3 and events_local differ: {why}")
        ok, why = same_rows(answers["duckdb_s3"], run_pg(q.sql("events_local", [below])))
        if not ok:
            problems.append(f"{q.name}: DuckDB's S3 lake rows and events_local below T differ: {why}")
        wall = {name: math.inf for name in sides}
        for _ in range(repeat):
            for name, side in sides.items():
                wall[name] = min(wall[name], timed(*side)[0])
        results.append({"query": q.name, "seconds": wall})
        say(f"{q.name}: local {wall['local']:.4f} s, s3 {wall['s3']:.4f} s, duckdb on s3 {wall['duckdb_s3']:.4f} s")
    return results, problems


def report(args, tiering, results):
    print()
    print(f"S3 lake benchmark: {args.rows:,} rows over {args.days} days (S3Proxy on 127.0.0.1)")
    (local_s, _), (s3_s, _) = tiering["local"], tiering["s3"]
    print(f"  tiering (tierdb run --once):  local {local_s:8.2f} s   S3 {s3_s:8.2f} s   S3/local {s3_s / local_s:5.2f}x")
    print(f"  {'query':<34}{'local':>10}{'S3':>10}{'S3/local':>10}{'DuckDB S3':>12}{'ours/DuckDB':>13}")
    for r in results:
        s = r["seconds"]
        print(f"  {r['query']:<34}{s['local']:>10.4f}{s['s3']:>10.4f}{s['s3'] / s['local']:>9.2f}x"
              f"{s['duckdb_s3']:>12.4f}{s['s3'] / s['duckdb_s3']:>12.2f}x")


def measure(args, work, dsn):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        with conn.cursor() as cur:
            for name in ("events_local", "events_s3"):
                tiering_peer.create_and_fill(conn, args.rows, args.days)
                rename_table(cur, "events", name)
        say("loaded; tiering events_local, then events_s3")
        tiering = {"local": tier(args, work, dsn, "events_local", str(work / "lake")),
                   "s3": tier(args, work, dsn, "events_s3", f"s3://{os.environ['TIERDB_S3_TEST_BUCKET']}/bench")}
        cut = cut_of(conn, "events_s3")
        if cut != cut_of(conn, "events_local"):
            fail("the two tables were tiered to different cut-lines")
        say("timing the scans")
        results, problems = run_scans(conn, duckdb_on_s3(), tiering["s3"][1], cut, queries(args.days), args.repeat)
    report(args, tiering, results)
    for p in problems:
        print(f"s3-bench: MISMATCH: {p}", file=sys.stderr)
    return 1 if problems else 0


def benchmark(args):
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = tiering_peer.work_directory(args.dir, "s3")
    stop_s3 = s3_server(work)
    try:
        with tiering_peer.private_cluster(work, SETTINGS, say=say) as (dsn, port):
            say(f"{args.rows:,} rows over {args.days} days, twice; cluster on port {port}, files in {work}")
            return measure(args, work, dsn)
    finally:
        stop_s3()
        if cleanup:
            cleanup.cleanup()


def main():
    p = argparse.ArgumentParser(description="S3 lake benchmark: tiering and cold scans on S3 against local "
                                            "files, and against DuckDB on the same S3 table.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=seam_reads.DEFAULT_DAYS)
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)))
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lakes and logs in DIR/s3 (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
