#!/usr/bin/env python3
"""The cold-write benchmark: rows below the cut-line written with plain COPY
(transparent writes, docs/writes.md) and with tierdb_upsert one row at a
time, against the same COPY into a plain partitioned table; and hot rows
with COPY into both, to show the spill partition costs hot rows nothing.

    cold_writes.py [--rows N] [--days D] [--batch K] [--repeat R] [--dir DIR] [--bin build/tierdb]

In one run: a private PostgreSQL 15 cluster with the read benchmark's
settings (bench/seam_reads.py), the tiering benchmark's event rows
(tiering_peer.create_and_fill: N rows over D daily partitions plus a hot
day) loaded twice, into `events` (registered and tiered by `tierdb run
--once`, so every day but the hot one is in the lake) and `plain` (an
untiered copy). Each round writes K new rows per side, cold ones spread over
the tiered days and hot ones in the hot day, each side in its own
transaction, timed from the client. After the rounds every side's rows are
read back (the tiered table's through the seam) and compared with what was
written (count and sums). Best of R rounds.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
any side reads back other than what it wrote.
"""

import argparse
import datetime as dt
import io
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import s3_lake  # noqa: E402  (its tier(): register and `tierdb run --once`, timed)
import seam_reads  # noqa: E402
import tiering_peer  # noqa: E402
from seam_reads import SETTINGS, rename_table, say  # noqa: E402
from tiering_peer import BASE_DAY, TOP, fail, positive_int  # noqa: E402

DEFAULT_ROWS = 200_000
DAY_US = 86_400_000_000


def new_rows(first_id, count, start_us, span_us):
    """COUNT rows with ids from FIRST_ID, their timestamps (ISO, UTC) spread over [start, start + span) after
    BASE_DAY."""
    base = dt.datetime.fromisoformat(BASE_DAY).replace(tzinfo=dt.timezone.utc)
    rows = []
    for i in range(count):
        ts = (base + dt.timedelta(microseconds=start_us + (i * span_us) // count)).isoformat(sep=" ")
        rows.append((first_id + i, ts, i % 10000, (i % 100000) / 100.0, "click", None if i % 3 else f"user-{i}"))
    return rows


def copy_text(rows):
    out = io.StringIO()
    for id_, ts, device, value, event, user in rows:
        out.write(f"{id_}\t{ts}\t{device}\t{value}\t{event}\t{user if user is not None else chr(92) + 'N'}\n")
    return out.getvalue()


def load_events_and_plain(conn, args, work, dsn):
    """The event rows twice: `plain`, untiered, and `events`, registered and tiered by `tierdb run --once`
    (every day but the hot one to the lake). Returns the tiering's seconds."""
    conn.execute("SET TimeZone = 'UTC'")
    with conn.cursor() as cur:
        tiering_peer.create_and_fill(conn, args.rows, args.days)
        rename_table(cur, "events", "plain")
        tiering_peer.create_and_fill(conn, args.rows, args.days)
    say(f"loaded; tiering events ({args.days} days to the lake)")
    tier_seconds, _ = s3_lake.tier(args, work, dsn, "events", str(work / "lake"))
    return tier_seconds


def timed_copy(conn, table, rows):
    """One transaction: COPY of ROWS into TABLE."""
    start = time.perf_counter()
    with conn.transaction():
        with conn.cursor() as cur:
            with cur.copy(f"COPY {table} (id, ts, device_id, value, event, \"user\") FROM STDIN") as copy:
                copy.write(copy_text(rows))
            if cur.rowcount != len(rows):
                fail(f"COPY into {table} counted {cur.rowcount} rows, wrote {len(rows)}")
    return time.perf_counter() - start


def timed_upserts(conn, rows):
    """One transaction: tierdb_upsert of each row, one statement a row (how an application routes today)."""
    import json

    start = time.perf_counter()
    with conn.transaction():
        with conn.cursor() as cur:
            for id_, ts, device, value, event, user in rows:
                image = {"id": id_, "ts": ts, "device_id": device, "value": value, "event": event, "user": user}
                cur.execute("SELECT tierdb_upsert('events', %s::jsonb)", (json.dumps(image),))
    return time.perf_counter() - start


def measure(args, work, dsn):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        tier_seconds = load_events_and_plain(conn, args, work, dsn)
        say(f"tiered in {tier_seconds:.1f} s; writing {args.batch} rows per side, best of {args.repeat}")
        cold_span = args.days * DAY_US
        next_id = 10 * (args.rows + tiering_peer.HOT_ROWS)
        best = {k: math.inf for k in ("cold_copy", "cold_copy_plain", "cold_upsert", "hot_copy", "hot_copy_plain")}
        written = []
        for _ in range(args.repeat):
            for side in best:
                rows = new_rows(next_id, args.batch, 0 if side.startswith("cold") else cold_span,
                                cold_span if side.startswith("cold") else DAY_US)
                next_id += args.batch
                if side == "cold_upsert":
                    seconds = timed_upserts(conn, rows)
                else:
                    table = "plain" if side.endswith("plain") else "events"
                    seconds = timed_copy(conn, table, rows)
                written.append((side, rows))
                best[side] = min(best[side], seconds)
            say("round: " + ", ".join(f"{k} {v:.3f} s" for k, v in best.items()))
        # Every side's rows read back (the tiered ones through the seam: lake, delta and heap) as written.
        problems = []
        for side, rows in written:
            table = "plain" if side.endswith("plain") else "events"
            got = conn.execute(f"SELECT count(*), sum(id), sum(device_id), count(\"user\") FROM {table}"
                               " WHERE id BETWEEN %s AND %s", (rows[0][0], rows[-1][0])).fetchone()
            want = (len(rows), sum(r[0] for r in rows), sum(r[2] for r in rows), sum(r[5] is not None for r in rows))
            if tuple(got) != want:
                problems.append(f"{side}: {table} reads {tuple(got)} for the rows written, expected {want}")
    report(args, best)
    for p in problems:
        print(f"cold-writes-bench: MISMATCH: {p}", file=sys.stderr)
    return 1 if problems else 0


def report(args, best):
    k = args.batch
    print()
    print(f"Cold-write benchmark: {k:,} rows per side over {args.rows:,} rows in {args.days} days")
    print(f"  {'writes':<46}{'seconds':>10}{'rows/s':>12}{'vs plain COPY':>15}")
    rows = [("cold rows, COPY into the tiered table", "cold_copy", "cold_copy_plain"),
            ("cold rows, tierdb_upsert one row at a time", "cold_upsert", "cold_copy_plain"),
            ("cold rows, COPY into the plain table (peer)", "cold_copy_plain", "cold_copy_plain"),
            ("hot rows, COPY into the tiered table", "hot_copy", "hot_copy_plain"),
            ("hot rows, COPY into the plain table (peer)", "hot_copy_plain", "hot_copy_plain")]
    for label, side, peer in rows:
        s = best[side]
        print(f"  {label:<46}{s:>10.3f}{k / s:>12,.0f}{s / best[peer]:>14.1f}x")
    print(f"  COPY / tierdb_upsert for cold rows: {best['cold_copy'] / best['cold_upsert']:.2f}x")


def benchmark(args):
    return tiering_peer.run_in_private_cluster(args, "cold-writes", SETTINGS, lambda work, dsn, port: measure(args, work, dsn), say=say)


def main():
    p = argparse.ArgumentParser(description="Cold-write benchmark: COPY of rows below the cut-line and "
                                            "tierdb_upsert against COPY into a plain partitioned table.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=seam_reads.DEFAULT_DAYS)
    p.add_argument("--batch", type=positive_int, default=1000, help="rows each side writes per round")
    p.add_argument("--repeat", type=positive_int, default=int(os.environ.get("BENCH_REPEAT", 3)))
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/cold-writes (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
