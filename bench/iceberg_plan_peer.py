#!/usr/bin/env python3
"""Scan planning: the lake library against pyiceberg on the same table.

    .venv/bin/python bench/iceberg_plan_peer.py CACHE_DIR [--bin build/bench/iceberg_plan]
                                                [--repeat N] [--json OUT]

(run from the repository root after `make build/bench/iceberg_plan`).

The table (1,000 snapshots, each a fast append of 10 data files: 10,000 data
files in 1,000 manifests, partitioned by day(ts), with lower/upper bounds
on id and ts) is generated once into CACHE_DIR/table by
`iceberg_plan generate` and reused by later runs. The data files themselves
are not written: planning never opens them.

Two plans of the current snapshot are timed on both sides:
  all        no filter: every one of the 10,000 files
  1 percent  ts >= 2024-02-20T12:00:00 AND ts < 2024-02-21T12:00:00:
             100 files (manifest summaries keep the 20 manifests of those two
             days, file metrics then drop the half of each day outside)
Each timing covers reading the metadata JSON and planning:
  ours       iceberg_plan plan (tl_ice_metadata_parse + tl_ice_scan_plan)
  pyiceberg  StaticTable.from_metadata(...).scan(row_filter=...).plan_files()
             (with its default thread pool), materialised as a list
Best of N runs (default 3) on each side. File counts must match; the script
exits non-zero when they do not. The ratio printed is pyiceberg's time over
ours (how many times faster we are).
"""

import argparse
import json
import os
import subprocess
import sys
import time

LOW = "2024-02-20T12:00:00"
HIGH = "2024-02-21T12:00:00"
OUR_FILTER = f"ts >= '{LOW}' AND ts < '{HIGH}'"
EXPECTED_FILES = {"all": 10000, "1 percent": 100}


def ensure_table(cache_dir, binary):
    table = os.path.join(cache_dir, "table")
    metadata = os.path.join(table, "metadata", "v1.metadata.json")
    if not os.path.exists(metadata):
        os.makedirs(cache_dir, exist_ok=True)
        start = time.perf_counter()
        subprocess.run([binary, "generate", table], check=True, stdout=subprocess.DEVNULL)
        print(f"generated {table} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return metadata


def time_pyiceberg(metadata, row_filter, repeat):
    from pyiceberg.table import StaticTable

    best = None
    count = None
    for _ in range(repeat):
        start = time.perf_counter()
        table = StaticTable.from_metadata(metadata)
        scan = table.scan(row_filter=row_filter) if row_filter is not None else table.scan()
        tasks = list(scan.plan_files())
        elapsed = time.perf_counter() - start
        count = len(tasks)
        best = elapsed if best is None else min(best, elapsed)
    return count, best


def time_ours(binary, metadata, filter_text, repeat):
    cmd = [binary, "plan", metadata]
    if filter_text is not None:
        cmd.append(filter_text)
    cmd += ["--repeat", str(repeat)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    return result["files"], result["best_seconds"], result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cache_dir")
    parser.add_argument("--bin", default="build/bench/iceberg_plan")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

    metadata = ensure_table(args.cache_dir, args.bin)
    plans = [
        ("all", None, None),
        ("1 percent", And(GreaterThanOrEqual("ts", LOW), LessThan("ts", HIGH)), OUR_FILTER),
    ]
    results = []
    ok = True
    print(f"{'plan':<10} {'files':>7} {'ours (s)':>10} {'pyiceberg (s)':>14} {'speedup':>8}")
    for name, py_filter, our_filter in plans:
        our_files, our_s, detail = time_ours(args.bin, metadata, our_filter, max(args.repeat, 5))
        py_files, py_s = time_pyiceberg(metadata, py_filter, args.repeat)
        match = our_files == py_files == EXPECTED_FILES[name]
        ok = ok and match
        speedup = py_s / our_s if our_s > 0 else float("inf")
        files = str(our_files) if our_files == py_files else f"{our_files}!={py_files}"
        print(f"{name:<10} {files:>7} {our_s:>10.4f} {py_s:>14.4f} {speedup:>7.1f}x")
        results.append({"plan": name, "files": our_files, "pyiceberg_files": py_files, "ours_seconds": our_s,
                        "pyiceberg_seconds": py_s, "speedup": speedup, "ours": detail})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if not ok:
        print("file counts differ between the planners (or from the table's design)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
