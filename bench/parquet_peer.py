#!/usr/bin/env python3
"""pyarrow's side of the Parquet benchmark, and the report of both sides.

    parquet_peer.py write FILE [--rows N]   pyarrow writes the benchmark rows
    parquet_peer.py read FILE               pyarrow reads a whole file
    parquet_peer.py verify OURS THEIRS [--rows N]
                                            both files hold the benchmark rows
    parquet_peer.py report DIR              the comparison table of DIR/*-N.json

write and read print one JSON line each, with the same keys as
bench/parquet_bench.c (wall-clock seconds, process CPU seconds, rows_per_sec,
file_bytes, peak_rss_mb, checksum), so scripts/run-benchmarks.sh can put them
side by side.
Run each phase in its own process: peak RSS (ru_maxrss) is per process.

The rows are those of parquet_bench.c, computed with numpy in wrapping uint64
arithmetic (splitmix64 of index*8+k for column k). pyarrow runs single
threaded with ZSTD and its default options otherwise. As on our side, data
generation is outside the timed region: each row group's rows are generated,
then the clock runs while pyarrow writes them (one write_table per row group of
pyarrow's default 1,048,576 rows, which is what write_table on the whole table
would do, without holding all ten million rows in memory). The read is one
timed pq.read_table(use_threads=False); the checksum is computed afterwards.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

DEFAULT_ROWS = 10_000_000
ROW_GROUP_ROWS = 1024 * 1024  # pyarrow's default max_row_group_length
BASE_TIMESTAMP_MICROS = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z
NUM_DEVICES = 10_000
NUM_USERS = 100_000
NULL_USER_PERCENT = 30
EVENTS = ["login", "logout", "click", "view", "scroll", "search", "purchase",
          "add_to_cart", "remove_from_cart", "checkout", "share", "like", "comment", "signup",
          "error", "open", "close", "download", "upload", "refresh"]
NULL_MARK = 0x9E3779B97F4A7C15
WEIGHTS = [1, 3, 5, 7, 11, 13]
MASK64 = (1 << 64) - 1


def field(name, type_, field_id, nullable=False):
    return pa.field(name, type_, nullable=nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})


SCHEMA = pa.schema([
    field("id", pa.int64(), 1),
    field("ts", pa.timestamp("us", tz="UTC"), 2),
    field("device_id", pa.int32(), 3),
    field("value", pa.float64(), 4),
    field("event", pa.string(), 5),
    field("user", pa.string(), 6, nullable=True),
])

EVENT_STRINGS = pa.array(EVENTS, pa.string())
USER_STRINGS = pa.array([f"user-{u}" for u in range(NUM_USERS)], pa.string())


def splitmix64(x):
    """splitmix64 over a uint64 array; numpy array arithmetic wraps like C."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def generate(first, count):
    """Rows [first, first+count) as a pyarrow Table with SCHEMA."""
    row = np.arange(first, first + count, dtype=np.uint64)
    key = row * np.uint64(8)

    def h(column):
        return splitmix64(key + np.uint64(column))

    h5 = h(5)
    user_null = (h5 % np.uint64(100)) < np.uint64(NULL_USER_PERCENT)
    user_index = pa.array(((h5 >> np.uint64(32)) % np.uint64(NUM_USERS)).astype(np.int32), mask=user_null)
    columns = [
        pa.array(row.astype(np.int64)),
        pa.array((np.int64(BASE_TIMESTAMP_MICROS) +
                  (row * np.uint64(1000) + h(1) % np.uint64(1000)).astype(np.int64)), pa.timestamp("us", tz="UTC")),
        pa.array((h(2) % np.uint64(NUM_DEVICES)).astype(np.int32)),
        pa.array((h(3) % np.uint64(1_000_000)).astype(np.float64) / 100.0),
        EVENT_STRINGS.take(pa.array((h(4) % np.uint64(len(EVENTS))).astype(np.int32))),
        USER_STRINGS.take(user_index),
    ]
    return pa.Table.from_arrays(columns, schema=SCHEMA)


# ------------------------------------------------------------------ checksum

_fnv_cache = {}


def fnv1a(text):
    """FNV-1a of a string's UTF-8 bytes; memoised, as the columns repeat few values."""
    h = _fnv_cache.get(text)
    if h is None:
        h = 0xCBF29CE484222325
        for b in text.encode():
            h = ((h ^ b) * 0x100000001B3) & MASK64
        _fnv_cache[text] = h
    return h


def wrapping_sum(values):
    return int(np.sum(np.asarray(values, dtype=np.uint64), dtype=np.uint64))


def string_column_sum(column):
    """Sum of FNV-1a hashes of the values (nulls count NULL_MARK), via a dictionary."""
    total = 0
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        encoded = pc.dictionary_encode(chunk)
        hashes = np.array([fnv1a(v) for v in encoded.dictionary.to_pylist()] or [0], dtype=np.uint64)
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        valid = np.asarray(encoded.indices.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        total += wrapping_sum(hashes[indices[valid].astype(np.int64)])
        total += NULL_MARK * int((~valid).sum())
    return total & MASK64


def int_column_sum(column):
    values = pc.cast(column, pa.int64()) if not pa.types.is_integer(column.type) else column
    return wrapping_sum(values.to_numpy().astype(np.int64).view(np.uint64))


def table_column_sums(table):
    return [
        int_column_sum(table["id"]),
        int_column_sum(pc.cast(table["ts"], pa.int64())),
        int_column_sum(table["device_id"]),
        wrapping_sum(table["value"].to_numpy().view(np.uint64)),
        string_column_sum(table["event"]),
        string_column_sum(table["user"]),
    ]


def checksum_total(sums):
    return sum(w * s for w, s in zip(WEIGHTS, sums)) & MASK64


def add_sums(a, b):
    return [(x + y) & MASK64 for x, y in zip(a, b)]


# ------------------------------------------------------------------ phases

def single_threaded():
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes


class Stopwatch:
    """Accumulates wall-clock and process CPU time (every thread) over timed regions."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    def __enter__(self):
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu


def report_phase(phase, rows, sw, path, sums):
    print(json.dumps({
        "bench": "parquet", "impl": "pyarrow", "phase": phase, "rows": rows,
        "seconds": round(sw.wall, 4), "cpu_seconds": round(sw.cpu, 4),
        "rows_per_sec": round(rows / sw.wall) if sw.wall > 0 else 0,
        "file_bytes": os.path.getsize(path), "peak_rss_mb": round(peak_rss_mb(), 1),
        "checksum": f"{checksum_total(sums):016x}",
    }), flush=True)


def phase_write(path, rows):
    single_threaded()
    sums = [0] * 6
    sw = Stopwatch()
    with sw:
        writer = pq.ParquetWriter(path, SCHEMA, compression="zstd")
    for first in range(0, rows, ROW_GROUP_ROWS):
        table = generate(first, min(ROW_GROUP_ROWS, rows - first))
        sums = add_sums(sums, table_column_sums(table))
        with sw:
            writer.write_table(table)
        del table
    with sw:
        writer.close()
        fd = os.open(path, os.O_RDONLY)  # our side's output fsyncs on finish; so do we
        os.fsync(fd)
        os.close(fd)
    report_phase("write", rows, sw, path, sums)


def phase_read(path):
    single_threaded()
    sw = Stopwatch()
    with sw:
        table = pq.read_table(path, use_threads=False)
    report_phase("read", table.num_rows, sw, path, table_column_sums(table))


def phase_verify(ours, theirs, rows):
    """Both files hold exactly the benchmark rows, with the same Arrow types."""
    problems = []
    ours_file, theirs_file = pq.ParquetFile(ours), pq.ParquetFile(theirs)
    for name, f in (("ours", ours_file), ("pyarrow's", theirs_file)):
        if f.metadata.num_rows != rows:
            problems.append(f"{name} file has {f.metadata.num_rows} rows, expected {rows}")
        schema = f.schema_arrow.remove_metadata()
        expected = pa.schema([pa.field(x.name, x.type, x.nullable) for x in SCHEMA])
        got = pa.schema([pa.field(x.name, x.type, x.nullable) for x in schema])
        if not got.equals(expected):
            problems.append(f"{name} file's schema differs:\n{got}\nexpected:\n{expected}")
    # Compare values batch by batch against freshly generated rows.
    if not problems:
        for name, f in (("ours", ours_file), ("pyarrow's", theirs_file)):
            first = 0
            for batch in f.iter_batches(batch_size=ROW_GROUP_ROWS, use_threads=False):
                got = pa.Table.from_batches([batch])
                want = generate(first, batch.num_rows)
                if not got.equals(want):
                    for column in SCHEMA.names:
                        if not got[column].equals(want[column]):
                            problems.append(f"{name} file: column {column} differs in rows "
                                            f"{first}..{first + batch.num_rows - 1}")
                            break
                    break
                first += batch.num_rows
    sizes = {"ours": ours_file.metadata.num_row_groups, "pyarrow": theirs_file.metadata.num_row_groups}
    print(json.dumps({"bench": "parquet", "phase": "verify", "ok": not problems, "problems": problems,
                      "row_groups": sizes}), flush=True)
    return 0 if not problems else 1


# ------------------------------------------------------------------ report

def fmt_rate(x):
    return f"{x / 1e6:.2f} M/s"


def fmt_mb(x):
    return f"{x / 1e6:.1f} MB"


def load(directory, name):
    """
    The results of one phase, from DIRECTORY/NAME-*.json (one file per
    repetition): the best wall and CPU times, the highest peak RSS, and
    whether every repetition agreed on rows and checksum.
    """
    runs = []
    for entry in sorted(os.listdir(directory)):
        if entry.startswith(name + "-") and entry.endswith(".json") and entry[len(name) + 1:-5].isdigit():
            with open(os.path.join(directory, entry)) as f:
                runs += [json.loads(line) for line in f if line.startswith("{")]
    if not runs:
        return None
    best = dict(runs[0])
    best["seconds"] = min(r["seconds"] for r in runs)
    best["cpu_seconds"] = min(r["cpu_seconds"] for r in runs)
    best["rows_per_sec"] = best["rows"] / best["seconds"] if best["seconds"] > 0 else 0
    best["rows_per_cpu_sec"] = best["rows"] / best["cpu_seconds"] if best["cpu_seconds"] > 0 else 0
    best["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    best["consistent"] = all(r["rows"] == best["rows"] and r["checksum"] == best["checksum"] for r in runs)
    best["runs"] = len(runs)
    return best


def phase_report(directory):
    """
    The table of scripts/run-benchmarks.sh, from the JSON lines it saved in
    DIRECTORY: ours-write-N, ours-read-N, pyarrow-write-N, pyarrow-read-N (N
    counts repetitions), and the cross-checks ours-read-pyarrow-file-1 and verify-1.
    """
    ours_w, ours_r = load(directory, "ours-write"), load(directory, "ours-read")
    peer_w, peer_r = load(directory, "pyarrow-write"), load(directory, "pyarrow-read")
    cross = load(directory, "ours-read-pyarrow-file")
    if None in (ours_w, ours_r, peer_w, peer_r):
        print("parquet_peer: some benchmark phases produced no result", file=sys.stderr)
        return 1
    verify_path = os.path.join(directory, "verify-1.json")
    verify = None
    if os.path.exists(verify_path):
        with open(verify_path) as f:
            lines = [json.loads(line) for line in f if line.startswith("{")]
        verify = lines[-1] if lines else None

    def rate(ours, peer, key):
        return fmt_rate(ours[key]), fmt_rate(peer[key]), ours[key] / peer[key], "higher is better"

    lines = [
        ("write rows/s (wall clock)", *rate(ours_w, peer_w, "rows_per_sec")),
        ("write rows/s (CPU time)", *rate(ours_w, peer_w, "rows_per_cpu_sec")),
        ("read rows/s (wall clock)", *rate(ours_r, peer_r, "rows_per_sec")),
        ("read rows/s (CPU time)", *rate(ours_r, peer_r, "rows_per_cpu_sec")),
        ("file size", fmt_mb(ours_w["file_bytes"]), fmt_mb(peer_w["file_bytes"]),
         ours_w["file_bytes"] / peer_w["file_bytes"], "lower is better"),
        ("peak RSS, write", f"{ours_w['peak_rss_mb']:.0f} MB", f"{peer_w['peak_rss_mb']:.0f} MB",
         ours_w["peak_rss_mb"] / peer_w["peak_rss_mb"], "lower is better"),
        ("peak RSS, read", f"{ours_r['peak_rss_mb']:.0f} MB", f"{peer_r['peak_rss_mb']:.0f} MB",
         ours_r["peak_rss_mb"] / peer_r["peak_rss_mb"], "lower is better"),
    ]
    print(f"Parquet benchmark: {ours_w['rows']:,} event rows, ZSTD, one thread each, "
          f"best of {ours_w['runs']} run(s)")
    print(f"  {'':27}{'tierdb':>11}{'pyarrow':>11}{'tierdb/pyarrow':>16}")
    for label, ours, peer, ratio, note in lines:
        print(f"  {label:27}{ours:>11}{peer:>11}{ratio:>15.2f}x  ({note})")
    print(f"  seconds (wall / CPU): write {ours_w['seconds']:.2f} / {ours_w['cpu_seconds']:.2f} vs "
          f"{peer_w['seconds']:.2f} / {peer_w['cpu_seconds']:.2f}; read {ours_r['seconds']:.2f} / "
          f"{ours_r['cpu_seconds']:.2f} vs {peer_r['seconds']:.2f} / {peer_r['cpu_seconds']:.2f}")

    same = (ours_w["checksum"] == peer_w["checksum"] == ours_r["checksum"] == peer_r["checksum"]
            and ours_w["rows"] == peer_w["rows"] == ours_r["rows"] == peer_r["rows"]
            and all(r["consistent"] for r in (ours_w, ours_r, peer_w, peer_r)))
    checks = [(f"same data: generated, written and read back by both (checksum {ours_w['checksum']})", same)]
    if cross is not None:
        checks.append((f"our reader reads pyarrow's file to the same checksum "
                       f"({fmt_rate(cross['rows_per_sec'])})", cross["checksum"] == ours_w["checksum"]))
    if verify is not None:
        detail = "; ".join(verify["problems"]) or (
            f"row groups: tierdb {verify['row_groups']['ours']}, pyarrow {verify['row_groups']['pyarrow']}")
        checks.append((f"pyarrow reads both files as the generated rows ({detail})", verify["ok"]))
    for text, ok in checks:
        print(f"  [{'ok' if ok else 'MISMATCH'}] {text}")
    return 0 if all(ok for _, ok in checks) else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("file")
    w.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    r = sub.add_parser("read")
    r.add_argument("file")
    v = sub.add_parser("verify")
    v.add_argument("ours")
    v.add_argument("theirs")
    v.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    rep = sub.add_parser("report")
    rep.add_argument("directory")
    args = parser.parse_args()

    if args.command == "write":
        phase_write(args.file, args.rows)
    elif args.command == "read":
        phase_read(args.file)
    elif args.command == "verify":
        return phase_verify(args.ours, args.theirs, args.rows)
    elif args.command == "report":
        return phase_report(args.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
