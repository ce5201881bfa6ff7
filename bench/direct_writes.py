#!/usr/bin/env python3
"""The direct-write benchmark: writes below the cut-line of a direct table,
each transaction committed to the lake at its commit (docs/direct.md),
against the same on a tiered table (kept in the delta) and on a plain
partitioned table.

    direct_writes.py [--rows N] [--days D] [--singles K] [--batch B] [--repeat R] [--dir DIR] [--bin build/tierdb]

In one run: a private PostgreSQL 15 cluster with the read benchmark's
settings, the tiering benchmark's event rows loaded three times: `plain`
(untiered), `tiered` (registered in tiered mode) and `events` (registered
--mode direct), both tiered by `tierdb run --once` (every day but the hot
one in the lake). Per table, timed from the client:

  singles  K transactions of one plain UPDATE of one cold row each (what an
           application's correction costs: on the direct table, each is a
           lake commit at COMMIT);
  batch    one transaction updating B cold rows (one lake commit for all);
  copy     one transaction of COPY of B new cold rows.

Best of R rounds; the ratios compare with the plain table and the direct
table with the tiered one. Afterwards the three tables must hold the same
rows.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
the tables differ.
"""

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import s3_lake  # noqa: E402
import seam_reads  # noqa: E402
import tiering_peer  # noqa: E402
from cold_writes import DAY_US, copy_text, new_rows  # noqa: E402
from seam_reads import SETTINGS, rename_table, say  # noqa: E402
from tiering_peer import TOP, positive_int  # noqa: E402

DEFAULT_ROWS = 200_000
TABLES = ("plain", "tiered", "events")


def load(conn, args, work, dsn):
    conn.execute("SET TimeZone = 'UTC'")
    with conn.cursor() as cur:
        for name in ("plain", "tiered"):
            tiering_peer.create_and_fill(conn, args.rows, args.days)
            rename_table(cur, "events", name)
        tiering_peer.create_and_fill(conn, args.rows, args.days)
    lake = work / "lake"
    say(f"loaded; tiering `tiered` and `events` ({args.days} days to the lake)")
    s3_lake.tier(args, work, dsn, "tiered", str(lake))
    s3_lake.tier(args, work, dsn, "events", str(lake), ("--mode", "direct"))
    # the server writes a direct table's lake (docs/direct.md, "Permissions"); the daemon ran as this user
    for root, dirs, files in os.walk(lake):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o777 if name in dirs else 0o666)
    os.chmod(lake, 0o777)


def timed(conn, fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def singles(conn, table, ids):
    for i in ids:
        with conn.transaction():
            conn.execute(f"UPDATE {table} SET value = value + 1 WHERE id = %s", (i,))


def batch(conn, table, first, count):
    with conn.transaction():
        conn.execute(f"UPDATE {table} SET value = value + 1 WHERE id BETWEEN %s AND %s", (first, first + count - 1))


def copy(conn, table, rows):
    with conn.transaction():
        with conn.cursor() as cur:
            with cur.copy(f"COPY {table} (id, ts, device_id, value, event, \"user\") FROM STDIN") as c:
                c.write(copy_text(rows))


def measure(args, work, dsn):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        load(conn, args, work, dsn)
        best = {(kind, t): math.inf for kind in ("singles", "batch", "copy") for t in TABLES}
        next_id = 10 * (args.rows + tiering_peer.HOT_ROWS)
        step = max(1, args.rows // (args.repeat * (args.singles + args.batch) + 1))
        cursor = 1
        for r in range(args.repeat):
            ids = list(range(cursor, cursor + args.singles * step, step))
            cursor += args.singles * step
            rows = new_rows(next_id, args.batch, 0, args.days * DAY_US)
            next_id += args.batch
            for t in TABLES:
                best["singles", t] = min(best["singles", t], timed(conn, lambda: singles(conn, t, ids)))
                best["batch", t] = min(best["batch", t], timed(conn, lambda: batch(conn, t, cursor, args.batch)))
                best["copy", t] = min(best["copy", t], timed(conn, lambda: copy(conn, t, rows)))
            cursor += args.batch
            say(f"round {r + 1}: " + ", ".join(f"{k[0]} {k[1]} {v:.3f} s" for k, v in best.items()))
        digests = {t: conn.execute(f"SELECT count(*), sum(id), sum(value)::numeric(30,2) FROM {t}").fetchone()
                   for t in TABLES}
        delta = conn.execute("SELECT count(*) FROM tierdb.delta d JOIN tierdb.tables t USING (table_id)"
                             " WHERE t.mode = 'direct'").fetchone()[0]
    report(args, best)
    problems = [f"{t} holds {digests[t]}, plain {digests['plain']}" for t in TABLES if digests[t] != digests["plain"]]
    if delta:
        problems.append(f"the direct table kept {delta} delta rows")
    for p in problems:
        print(f"direct-writes-bench: MISMATCH: {p}", file=sys.stderr)
    return 1 if problems else 0


def report(args, best):
    print()
    print(f"Direct-write benchmark over {args.rows:,} rows in {args.days} days (best of {args.repeat})")
    print(f"  {'writes':<52}{'plain':>9}{'tiered':>9}{'direct':>9}{'direct/plain':>14}{'direct/tiered':>15}")
    for kind, label, n in (("singles", f"{args.singles} one-row cold UPDATE transactions", args.singles),
                           ("batch", f"one transaction updating {args.batch} cold rows", 1),
                           ("copy", f"one transaction of COPY of {args.batch} cold rows", 1)):
        p, t, d = (best[kind, x] for x in TABLES)
        print(f"  {label:<52}{p:>8.3f}s{t:>8.3f}s{d:>8.3f}s{d / p:>13.1f}x{d / t:>14.1f}x")
    per = best["singles", "events"] / args.singles * 1000
    print(f"  a one-row cold correction committed to the lake: {per:.1f} ms a transaction")


def benchmark(args):
    return tiering_peer.run_in_private_cluster(args, "direct-writes", SETTINGS,
                                               lambda work, dsn, port: measure(args, work, dsn), say=say)


def main():
    p = argparse.ArgumentParser(description="Direct-write benchmark: cold writes committed to the lake at "
                                            "commit, against a tiered table's delta and a plain table.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=seam_reads.DEFAULT_DAYS)
    p.add_argument("--singles", type=positive_int, default=50, help="one-row transactions per round")
    p.add_argument("--batch", type=positive_int, default=1000, help="rows of the batch UPDATE and the COPY")
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)))
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/direct-writes (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
