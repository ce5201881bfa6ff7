#!/usr/bin/env python3
"""The mixed-DML benchmark: pgbench-style transactions of plain SQL on the hot
rows of a tiered table with transparent writes, against the same on a plain
partitioned table (issue 18: hot-row DML at 0.9x or better).

    mixed_dml.py [--rows N] [--days D] [--repeat R] [--pgbench-seconds S] [--dir DIR] [--bin build/tierdb]

In one run: a private PostgreSQL 15 cluster with the read benchmark's
settings (bench/seam_reads.py), the tiering benchmark's event rows
(tiering_peer.create_and_fill: N rows over D daily partitions plus a hot day,
primary key (id, ts)) loaded twice, into `events` (registered with --pk
id,ts, so it has transparent writes, and tiered by `tierdb run --once`: every
day but the hot one is in the lake) and `plain` (an untiered copy). Each
pgbench transaction picks a random hot row and, in one transaction, reads
it, updates it, inserts a new row beside it and deletes that row again:

  by key   every statement names the row by its full key (id and ts), as an
           application that knows the row's time does: the tier key bounds
           the statement at or above T, so the cold half reads nothing;
  by id    the same by id alone, as an ORM's `WHERE id = $1`: the row could
           be cold, so each UPDATE and DELETE also looks the id up below T
           (the delta and the lake files whose bounds may hold it).

Then one statement updates, and one deletes, --bulk rows below T (an id
range in the lake), timed from the client on both tables.

One client, -M prepared; both tables' scripts run together in one pgbench
run (one client picking one of them at random for each transaction, so both
see the same moments of this machine), and the ratio compares their mean
latencies from pgbench's per-transaction log. Best of R runs. After the runs
the two tables' hot days are compared row by row.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
the tables differ afterwards.
"""

import argparse
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import seam_reads  # noqa: E402
import tiering_peer  # noqa: E402
from cold_writes import load_events_and_plain  # noqa: E402
from seam_reads import SETTINGS, pgbench, say  # noqa: E402
from tiering_peer import TOP, fail, positive_int  # noqa: E402

DEFAULT_ROWS = 1_000_000

SCRIPT = """\\set n random(1, {hot})
SELECT id, ts FROM hot_keys WHERE n = :n \\gset
BEGIN;
SELECT value FROM {table} WHERE id = :id{and_ts};
UPDATE {table} SET value = value + 1 WHERE id = :id{and_ts};
INSERT INTO {table} (id, ts, device_id, value, event) VALUES (:id + 100000000000, :ts, 1, 0, 'bench');
DELETE FROM {table} WHERE id = :id + 100000000000{and_ts};
END;
"""

SHAPES = [("by key (id, ts)", " AND ts = :ts"), ("by id", "")]


def write_scripts(work, hot):
    scripts = {}
    for label, and_ts in SHAPES:
        for table in ("events", "plain"):
            path = work / f"mixed-{table}-{'key' if and_ts else 'id'}.sql"
            path.write_text(SCRIPT.format(hot=hot, table=table, and_ts=and_ts))
            scripts[(label, table)] = path
    return scripts


def measure(args, work, dsn, port):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        tier_seconds = load_events_and_plain(conn, args, work, dsn)
        if conn.execute("SELECT tierdb.spill_partition('events')").fetchone()[0] is None:
            fail("events has no spill partition: transparent writes are off for it")
        (cut,) = conn.execute("SELECT tierdb.tier_key_text(tier_key_hi, 'timestamptz') FROM tierdb.cutline").fetchone()
        conn.execute("CREATE TABLE hot_keys AS SELECT row_number() OVER (ORDER BY id) AS n, id, ts FROM plain"
                     " WHERE ts >= %s::timestamptz", (cut,))
        conn.execute("ALTER TABLE hot_keys ADD PRIMARY KEY (n)")
        conn.execute("VACUUM ANALYZE hot_keys, plain")
        (hot,) = conn.execute("SELECT count(*) FROM hot_keys").fetchone()
    say(f"tiered in {tier_seconds:.1f} s; T = {cut}; {hot:,} hot rows; pgbench {args.pgbench_seconds} s x {args.repeat}")
    scripts = write_scripts(work, hot)
    log_dir = work / "pgbench"
    log_dir.mkdir(exist_ok=True)
    results = {}
    for label, _ in SHAPES:
        pair = [scripts[(label, "events")], scripts[(label, "plain")]]
        pgbench(port, pair, "prepared", 2, "", log_dir)  # warm-up
        best = (math.inf, math.inf)
        for _ in range(args.repeat):
            tiered_us, plain_us = pgbench(port, pair, "prepared", args.pgbench_seconds, "", log_dir)
            if tiered_us / plain_us < best[0] / best[1] or math.isinf(best[0]):
                best = (tiered_us, plain_us)
        results[label] = best
        say(f"{label}: tiered {best[0]:.0f} us, plain {best[1]:.0f} us per transaction")
    with psycopg.connect(dsn, autocommit=True) as conn:
        problems = check(conn, args.rows + tiering_peer.HOT_ROWS)
        bulk = bulk_cold(conn, args.bulk)
    report(args, results, bulk)
    for p in problems:
        print(f"mixed-dml-bench: MISMATCH: {p}", file=sys.stderr)
    return 1 if problems else 0


def bulk_cold(conn, k):
    """Seconds of one UPDATE and one DELETE of K cold rows (ids 1000..1000+K-1) on each table."""
    import time

    out = {}
    for what, sql in (("UPDATE", "UPDATE {t} SET value = value * 2 WHERE id >= 1000 AND id < {hi}"),
                      ("DELETE", "DELETE FROM {t} WHERE id >= 1000 AND id < {hi}")):
        for t in ("events", "plain"):
            start = time.perf_counter()
            n = conn.execute(sql.format(t=t, hi=1000 + k)).rowcount
            out[(what, t)] = time.perf_counter() - start
            if n != k:
                fail(f"{what} of {k} cold rows of {t} changed {n}")
    return out


def check(conn, total):
    """The transactions inserted and deleted as many rows, and left nothing below T: both tables hold their
    rows once each, through the seam as in the heap, and the delta is empty."""
    problems = []
    for t in ("events", "plain"):
        (n, distinct) = conn.execute(f"SELECT count(*), count(DISTINCT id) FROM {t}").fetchone()
        if (n, distinct) != (total, total):
            problems.append(f"{t} holds {n} rows ({distinct} ids) afterwards, expected {total}")
    (delta,) = conn.execute("SELECT count(*) FROM tierdb.delta").fetchone()
    if delta != 0:
        problems.append(f"hot-row DML left {delta} rows in tierdb.delta")
    return problems


def report(args, results, bulk):
    print()
    print(f"Mixed-DML benchmark: {args.rows:,} rows in {args.days} days, the hot day's rows changed; "
          "pgbench 1 client, -M prepared, both tables in each run (best of "
          f"{args.repeat} runs of {args.pgbench_seconds} s)")
    print("  a transaction: SELECT, UPDATE, INSERT and DELETE of one hot row (4 statements)")
    print(f"  {'statements name the row':<26}{'tiered us':>11}{'plain us':>10}{'plain/tiered':>14}")
    for label, (tiered_us, plain_us) in results.items():
        print(f"  {label:<26}{tiered_us:>11.0f}{plain_us:>10.0f}{plain_us / tiered_us:>13.2f}x")
    print("  plain/tiered is the tiered table's throughput relative to the plain table's (1.00x: the same).")
    print(f"  one statement changing {args.bulk:,} rows below T (in the lake):")
    for what in ("UPDATE", "DELETE"):
        tiered, plain = bulk[(what, "events")], bulk[(what, "plain")]
        print(f"    {what}: tiered {tiered:.3f} s ({args.bulk / tiered:,.0f} rows/s), plain {plain:.3f} s"
              f" ({tiered / plain:.0f}x the plain table's time)")


def benchmark(args):
    return tiering_peer.run_in_private_cluster(args, "mixed-dml", SETTINGS, lambda work, dsn, port: measure(args, work, dsn, port), say=say)


def main():
    p = argparse.ArgumentParser(description="Mixed-DML benchmark: plain SELECT/UPDATE/INSERT/DELETE of hot rows "
                                            "on a tiered table against a plain partitioned table.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=seam_reads.DEFAULT_DAYS)
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)))
    p.add_argument("--pgbench-seconds", type=positive_int, default=10)
    p.add_argument("--bulk", type=positive_int, default=1000, help="cold rows the bulk UPDATE and DELETE change")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/mixed-dml (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
