#!/usr/bin/env python3
"""Cold point lookups on a non-key column with and without a bloom filter
named by the table's policy (`bloom_columns`, docs/maintenance.md).

    bloom_lookup.py [--rows N] [--days D] [--lookups L] [--dir DIR] [--bin build/tierdb]

In one run, on a private PostgreSQL 15 cluster (shared_preload_libraries=tierdb,
jit off, no parallel workers): two tables of the same N rows over D daily
partitions, `bloomed` and `unbloomed`, primary key id, a `customer` integer
spread over every row group (so min/max statistics prune nothing) and
indexed in the heap, and an untiered copy `plain`. `bloomed` gets `bloom_columns=customer`; one
`tierdb run --once` tiers all but the newest two days of both. Then
`SELECT ... WHERE customer = v` runs for L present and L absent values on
each table: EXPLAIN ANALYZE's cold scan figures (row groups read, pruned by
bloom filter, rows skipped) of one, and the wall time of every lookup
(median). Every result must equal plain's.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
any result differs from plain's.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiering_peer  # noqa: E402
from tiering_peer import TOP, clean_env, positive_int, tail  # noqa: E402

SETTINGS = ["shared_preload_libraries=tierdb", "max_parallel_workers_per_gather=0", "jit=off", "autovacuum=off"]
CUSTOMERS = 1_000_003


def say(message):
    print(f"bloom-bench: {message}", file=sys.stderr, flush=True)


def make(conn, name, rows, days):
    conn.execute(f"CREATE TABLE {name} (id bigint NOT NULL, ts timestamptz NOT NULL, customer int NOT NULL,"
                 f" note text) PARTITION BY RANGE (ts)")
    for d in range(days):
        conn.execute(f"CREATE TABLE {name}_{d} PARTITION OF {name} FOR VALUES FROM"
                     f" (timestamptz '2024-01-01+00' + {d} * interval '1 day')"
                     f" TO (timestamptz '2024-01-01+00' + {d + 1} * interval '1 day')")
    conn.execute(f"INSERT INTO {name} SELECT g, timestamptz '2024-01-01+00'"
                 f" + (g - 1) * ({days} * interval '1 day' / {rows}), (g::bigint * 7919) % {CUSTOMERS},"
                 f" 'note ' || g FROM generate_series(1, {rows}) g")
    # The hot days answer by index, as a table looked up by customer would: the cold side is what differs.
    conn.execute(f"CREATE INDEX ON {name} (customer)")


def cold_figures(conn, sql):
    (plan,) = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql).fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    nodes, out = [plan[0]["Plan"]], None
    while nodes:
        n = nodes.pop()
        if n.get("Custom Plan Provider") == "TierDB Cold Scan":
            out = n
        nodes += n.get("Plans", [])
    keys = ["Lake Files", "Row Groups Read", "Row Groups Pruned", "Row Groups Pruned by Bloom Filters",
            "Pages Read", "Rows Skipped Before Conversion"]
    return {k: out.get(k) for k in keys}


def benchmark(args):
    import psycopg

    work, cleanup = tiering_peer.work_directory(args.dir, "bloom")
    problems = []
    try:
        with tiering_peer.private_cluster(work, SETTINGS, say=say) as (dsn, port):
            say(f"{args.rows:,} rows over {args.days} days in each table; cluster on port {port}, files in {work}")
            env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"), TIERDB_TIERING_LAG="2d")
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS tierdb")
                for name in ("bloomed", "unbloomed"):
                    make(conn, name, args.rows, args.days)
                    subprocess.run([args.bin, "register", "--table", f"public.{name}", "--pk", "id",
                                    "--tier-key", "ts"], env=env, check=True, stdout=subprocess.DEVNULL)
                make(conn, "plain", args.rows, args.days)
                subprocess.run([args.bin, "policy", "--table", "public.bloomed", "--set", "bloom_columns=customer"],
                               env=env, check=True, stdout=subprocess.DEVNULL)
                with open(work / "daemon.err", "w") as log:
                    if subprocess.run([args.bin, "run", "--once"], env=env, stdout=subprocess.DEVNULL,
                                      stderr=log).returncode != 0:
                        raise SystemExit(f"bloom-bench: tiering failed:\n{tail(work / 'daemon.err')}")
                conn.execute("VACUUM ANALYZE")
                rng = random.Random(21)
                present = [int(r[0]) for r in conn.execute(
                    f"SELECT customer FROM plain WHERE ts < timestamptz '2024-01-01+00' + {args.days - 2}"
                    f" * interval '1 day' ORDER BY id LIMIT {args.lookups} OFFSET {args.rows // 7}").fetchall()]
                taken = {int(r[0]) for r in conn.execute("SELECT DISTINCT customer FROM plain").fetchall()}
                absent = [v for v in (rng.randrange(CUSTOMERS) for _ in range(10 * args.lookups)) if v not in taken]
                absent = absent[:args.lookups]
                results = {}
                for kind, values in (("present", present), ("absent", absent)):
                    for name in ("unbloomed", "bloomed"):
                        sql = f"SELECT id, ts, customer, note FROM {name} WHERE customer = {{}} ORDER BY id"
                        figures = cold_figures(conn, sql.format(values[0]))
                        conn.execute(sql.format(values[0])).fetchall()  # warm-up
                        times = []
                        for v in values:
                            start = time.perf_counter()
                            got = conn.execute(sql.format(v)).fetchall()
                            times.append(time.perf_counter() - start)
                            want = conn.execute(
                                f"SELECT id, ts, customer, note FROM plain WHERE customer = {v} ORDER BY id").fetchall()
                            if got != want:
                                problems.append(f"{name} customer = {v}: {len(got)} rows, plain {len(want)}")
                        results[(kind, name)] = (figures, statistics.median(times))
        print(f"cold point lookups `customer = v` on {args.rows:,} rows over {args.days} days"
              f" ({args.lookups} values each, median wall time):")
        for (kind, name), (figures, median) in results.items():
            print(f"  {kind:7} {name:9} {median * 1000:7.2f} ms  {figures}")
        for p in problems:
            print(f"bloom-bench: MISMATCH: {p}", file=sys.stderr)
        return 1 if problems else 0
    finally:
        if cleanup:
            cleanup.cleanup()


def main():
    p = argparse.ArgumentParser(description="Cold point lookups on a non-key column with and without a bloom filter.")
    p.add_argument("--rows", type=positive_int, default=600_000)
    p.add_argument("--days", type=positive_int, default=8)
    p.add_argument("--lookups", type=positive_int, default=50)
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None)
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
