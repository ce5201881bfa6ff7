#!/usr/bin/env python3
"""Times the read benchmark's scans again on a cluster seam_reads.py kept.

    .venv/bin/python bench/seam_reads.py --rows 10000000 --dir /tmp/rb --keep-cluster ...
    .venv/bin/python bench/seam_reads_again.py --port PORT [--threads 2] [--only aggregate]

Loading 10 million rows takes most of a seam_reads.py run; after a change
to the cold reader (reinstall the extension and restart the cluster:
`scripts/pg-cluster.sh stop DIR/reads/pg`, then start it with
`-c shared_preload_libraries=tierdb`), this re-times the same queries
against DuckDB's `iceberg_scan` of the same lake, best of --repeat, in one
mode: one process and DuckDB `threads = 1`, or --threads workers per
Gather against as many DuckDB threads. The answers are not compared here:
seam_reads.py does that.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import seam_reads  # noqa: E402  (the queries and the DuckDB connection)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="the kept cluster's port")
    parser.add_argument("--rows", type=int, default=10_000_000, help="as given to seam_reads.py")
    parser.add_argument("--days", type=int, default=10, help="as given to seam_reads.py")
    parser.add_argument("--threads", type=int, default=1, help="Gather workers, and DuckDB threads")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="only the queries whose name holds this")
    args = parser.parse_args()

    import psycopg

    conn = psycopg.connect(f"host=127.0.0.1 port={args.port} user=postgres", autocommit=True)
    conn.execute(f"SET max_parallel_workers_per_gather = {0 if args.threads == 1 else args.threads}")
    lake_ref = conn.execute("SELECT lake_table_ref FROM tierdb.tables WHERE table_name = 'events_tiered'").fetchone()[0]
    point = conn.execute("SELECT id, ts FROM events_heap WHERE id = %s", (args.rows // 2 + 1,)).fetchone()
    duck = seam_reads.duckdb_connection()
    duck.execute(f"SET threads = {args.threads}")
    run_duck = seam_reads.duckdb_runner(duck)

    def best(run):
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)

    print(f"{'query':28s} {'tiered':>10s} {'duckdb':>10s}  tiered/duckdb ({args.threads} thread(s))")
    for q in seam_reads.queries(args.rows, args.days, point):
        if args.only not in q.name:
            continue
        tiered_sql, duck_sql = q.sql("events_tiered"), q.sql(f"iceberg_scan('{lake_ref}')")
        tiered = best(lambda: conn.execute(tiered_sql).fetchall())
        duck_s = best(lambda: run_duck(duck_sql))
        print(f"{q.name:28s} {tiered * 1e3:8.1f} ms {duck_s * 1e3:8.1f} ms  {tiered / duck_s:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
