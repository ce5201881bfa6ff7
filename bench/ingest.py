#!/usr/bin/env python3
"""The ingest benchmark: `tierdb ingest` of N new history rows as JSONL, as
Parquet files it adopts as they are, and as Parquet files it rewrites,
against pyiceberg writing the same rows into a plain Iceberg table: its
`append` of an Arrow table, and its `add_files` of the same Parquet files.

    ingest.py [--rows N] [--days D] [--seed-rows S] [--dir DIR] [--bin build/tierdb]

In one run: a private PostgreSQL 15 cluster, three copies of the tiering
benchmark's `events` table (tiering_peer.create_and_fill: six columns, id,
ts, device_id, value, event, user; S rows over D daily partitions plus a hot
day), each registered (--pk id,ts) and tiered by `tierdb run --once`, so
that the cut-line T sits at the hot day. N new rows with new keys, spread
over the D cold days, are made once in Arrow and written out as

  rows.jsonl                      one JSON object a line (timestamps ISO 8601)
  adopt/day-K.parquet             one file a day, columns with the lake's
                                  Iceberg field ids and types (adopted)
  plain/day-K.parquet             one file a day as pyarrow writes it, no
                                  field ids (rewritten by tierdb; what
                                  pyiceberg's add_files requires)

and each side's time is the wall time of one call: `tierdb ingest --table
... --json` for ours (reading, checking, writing and committing); on a
pyiceberg SqlCatalog (sqlite in the work directory) table with the same
schema, partitioned by day(ts): `table.append` of the Arrow table already
in memory, `append` after reading rows.jsonl with pyarrow.json (what a
script loading JSONL would do), `append` after reading plain/*.parquet with
pyarrow.parquet, and `table.add_files` of plain/*.parquet (which reads only
their footers). Every side's rows are counted back afterwards (ours
through transparent reads); a wrong count exits 1.

The peers do less: they check no key, no range and no constraint and replace
nothing, and append's Arrow table is already in memory. The ratio says what
tierdb's checks and its upsert cost on top of a plain lake write.

This is a measurement, not a test: nothing asserts a timing.
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
import tiering_peer  # noqa: E402
from seam_reads import rename_table  # noqa: E402
from tiering_peer import BASE_DAY, EVENTS, TOP, clean_env, fail, positive_int, run_measured, tail  # noqa: E402

DEFAULT_ROWS = 1_000_000
DEFAULT_SEED_ROWS = 100_000
DEFAULT_DAYS = 7
SETTINGS = ["shared_preload_libraries=tierdb", "shared_buffers=1GB", "max_wal_size=32GB", "checkpoint_timeout=1h",
            "maintenance_work_mem=512MB", "work_mem=64MB", "autovacuum=off", "jit=off"]
SIDES = ["jsonl", "adopted", "rewritten"]
DAY_US = 86_400_000_000


def say(message):
    print(f"ingest-bench: {message}", flush=True)


# ------------------------------------------------------------------ the rows


def make_rows(n, days, first_id):
    """N new rows of events' columns as an Arrow table: ids from FIRST_ID, timestamps spread evenly over the
    DAYS cold days (to the microsecond), values drawn from the id as the tiering benchmark draws them."""
    import pyarrow as pa

    base = dt.datetime.fromisoformat(BASE_DAY).replace(tzinfo=dt.timezone.utc)
    span = days * DAY_US
    ids, stamps, devices, values, events, users = [], [], [], [], [], []
    for i in range(n):
        h = (i * 2654435761) & 0xFFFFFFFF
        ids.append(first_id + i)
        stamps.append(base + dt.timedelta(microseconds=(i * span) // n + h % 1000))
        devices.append(h % 10000)
        values.append((h % 1000000) / 100.0)
        events.append(EVENTS[h % len(EVENTS)])
        users.append(None if h % 100 < 30 else f"user-{(h >> 8) % 100000}")
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "ts": pa.array(stamps, pa.timestamp("us", tz="UTC")),
        "device_id": pa.array(devices, pa.int32()),
        "value": pa.array(values, pa.float64()),
        "event": pa.array(events, pa.string()),
        "user": pa.array(users, pa.string()),
    })


def write_jsonl(table, path):
    with open(path, "w") as out:
        for batch in table.to_batches(max_chunksize=65536):
            cols = batch.to_pydict()
            for id_, ts, device, value, event, user in zip(cols["id"], cols["ts"], cols["device_id"], cols["value"],
                                                           cols["event"], cols["user"]):
                out.write(json.dumps({"id": id_, "ts": ts.isoformat(), "device_id": device, "value": value,
                                      "event": event, "user": user}, separators=(",", ":")))
                out.write("\n")


def per_day(table, days):
    """[(day number, the rows of that day)] of an Arrow table of events' columns."""
    import pyarrow.compute as pc

    base = dt.datetime.fromisoformat(BASE_DAY).replace(tzinfo=dt.timezone.utc)
    out = []
    for d in range(days):
        lo, hi = base + dt.timedelta(days=d), base + dt.timedelta(days=d + 1)
        mask = pc.and_(pc.greater_equal(table["ts"], lo), pc.less(table["ts"], hi))
        out.append((d, table.filter(mask)))
    return out


def with_field_ids(table, fields):
    """TABLE with the lake's field ids (and required flags) on its columns."""
    import pyarrow as pa

    schema = pa.schema([pa.field(f.name, f.type, nullable=not fields[f.name]["required"],
                                 metadata={b"PARQUET:field_id": str(fields[f.name]["id"]).encode()})
                        for f in table.schema])
    return pa.Table.from_arrays(table.columns, schema=schema)


def write_files(table, days, directory, fields=None):
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for d, rows in per_day(table, days):
        if rows.num_rows == 0:
            continue
        path = directory / f"day-{d}.parquet"
        pq.write_table(with_field_ids(rows, fields) if fields else rows, str(path), compression="zstd")
        paths.append(path)
    return paths


# ------------------------------------------------------------------ our side


def lake_fields(conn, table):
    (location,) = conn.execute("SELECT c.lake_props->>'metadata_location' FROM tierdb.cutline c JOIN tierdb.tables t"
                               " USING (table_id) WHERE t.table_name = %s", (table,)).fetchone()
    md = json.loads(Path(location.removeprefix("file://")).read_text())
    (schema,) = [s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"]]
    return {f["name"]: f for f in schema["fields"]}


def prepare_tables(args, work, dsn, conn):
    """ev_jsonl, ev_adopted, ev_rewritten: the tiering benchmark's events, registered and tiered."""
    env = clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"), TIERDB_TIERING_LAG="1h")
    with conn.cursor() as cur:
        for side in SIDES:
            tiering_peer.create_and_fill(conn, args.seed_rows, args.days)
            rename_table(cur, "events", f"ev_{side}")
            reg = subprocess.run([args.bin, "register", "--table", f"public.ev_{side}", "--pk", "id,ts",
                                  "--tier-key", "ts"], env=env, capture_output=True, text=True)
            if reg.returncode != 0:
                fail(f"tierdb register ev_{side} failed ({reg.returncode}):\n{reg.stderr}")
    code, seconds, _ = run_measured([args.bin, "run", "--once"], env, work / "tier.out", work / "tier.err")
    if code != 0:
        fail(f"tierdb run --once failed ({code}); its log:\n{tail(work / 'tier.err')}")
    say(f"three tables tiered in {seconds:.1f} s")
    return env


def ours(args, work, env, side, sources):
    argv = [args.bin, "ingest", "--table", f"public.ev_{side}", "--json"]
    for kind, path in sources:
        argv += [kind, str(path)]
    code, seconds, rss = run_measured(argv, env, work / f"ingest-{side}.out", work / f"ingest-{side}.err")
    if code != 0:
        fail(f"tierdb ingest into ev_{side} failed ({code}):\n{tail(work / f'ingest-{side}.err')}")
    result = json.loads((work / f"ingest-{side}.out").read_text())
    return seconds, rss, result


# ------------------------------------------------------------------ pyiceberg's side


def peer_catalog(work):
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = work / "peer"
    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    catalog.create_namespace("bench")
    return catalog


def peer_table(catalog, name):
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform
    from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType, TimestamptzType

    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "ts", TimestamptzType(), required=False),
        NestedField(3, "device_id", IntegerType(), required=False),
        NestedField(4, "value", DoubleType(), required=False),
        NestedField(5, "event", StringType(), required=False),
        NestedField(6, "user", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))
    return catalog.create_table(f"bench.{name}", schema=schema, partition_spec=spec,
                                properties={"write.parquet.compression-codec": "zstd"})


def pa_concat(tables):
    import pyarrow as pa

    return pa.concat_tables(tables)


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def records(table):
    snapshot = table.refresh().current_snapshot()
    return int(snapshot.summary["total-records"]) if snapshot else 0


# ------------------------------------------------------------------ the benchmark


def measure(args, work, dsn):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        env = prepare_tables(args, work, dsn, conn)
        first_id = 10 * (args.seed_rows + tiering_peer.HOT_ROWS)
        say(f"making {args.rows:,} new rows and their files")
        rows = make_rows(args.rows, args.days, first_id)
        inputs = work / "in"
        inputs.mkdir()
        write_jsonl(rows, inputs / "rows.jsonl")
        adopt = write_files(rows, args.days, inputs / "adopt", lake_fields(conn, "ev_adopted"))
        plain = write_files(rows, args.days, inputs / "plain")
        say(f"JSONL {(inputs / 'rows.jsonl').stat().st_size / 1e6:.0f} MB, Parquet {len(adopt)} files a side")

        timings, problems = {}, []
        for side, sources in [("jsonl", [("--jsonl", inputs / "rows.jsonl")]),
                              ("adopted", [("--file", p) for p in adopt]),
                              ("rewritten", [("--file", p) for p in plain])]:
            say(f"tierdb ingest: {side}")
            seconds, rss, result = ours(args, work, env, side, sources)
            timings[side] = seconds
            say(f"  {seconds:.2f} s, peak RSS {rss:.0f} MB: {json.dumps(result)}")
            got = conn.execute(f"SELECT count(*) FROM ev_{side} WHERE id >= %s", (first_id,)).fetchone()[0]
            if got != args.rows or result.get("rows") != args.rows:
                problems.append(f"{side}: ev_{side} reads {got} new rows, ingest said {result.get('rows')}, "
                                f"expected {args.rows}")
            expected_adopted = len(adopt) if side == "adopted" else 0
            if result.get("files_adopted") != expected_adopted:
                problems.append(f"{side}: {result.get('files_adopted')} files adopted, expected {expected_adopted}")

        import pyarrow.json as pj
        import pyarrow.parquet as pq

        catalog = peer_catalog(work)
        peers = {name: peer_table(catalog, name) for name in ("append", "append_jsonl", "append_parquet", "add_files")}
        say("pyiceberg append")
        timings["append"] = timed(lambda: peers["append"].append(rows))
        say("pyarrow.json + pyiceberg append")
        timings["append_jsonl"] = timed(lambda: peers["append_jsonl"].append(pj.read_json(
            inputs / "rows.jsonl", parse_options=pj.ParseOptions(explicit_schema=rows.schema))))
        say("pyarrow.parquet + pyiceberg append")
        timings["append_parquet"] = timed(lambda: peers["append_parquet"].append(
            pa_concat([pq.read_table(p) for p in plain])))
        say("pyiceberg add_files")
        timings["add_files"] = timed(lambda: peers["add_files"].add_files([f"file://{p}" for p in plain]))
        for name, table in peers.items():
            if records(table) != args.rows:
                problems.append(f"pyiceberg {name}: {records(table)} records, expected {args.rows}")
    report(args, timings)
    for p in problems:
        print(f"ingest-bench: MISMATCH: {p}", file=sys.stderr)
    return 1 if problems else 0


def report(args, t):
    n = args.rows
    print()
    print(f"Ingest benchmark: {n:,} new rows over {args.days} cold days into a table of {args.seed_rows:,} rows")
    # each of ours against the peer doing the nearest thing
    lines = [("tierdb ingest --jsonl (one file)", "jsonl", "append_jsonl"),
             ("tierdb ingest --file, adopted (field ids, a file a day)", "adopted", "add_files"),
             ("tierdb ingest --file, rewritten (no field ids)", "rewritten", "append_parquet"),
             ("pyiceberg append (Arrow table in memory)", "append", None),
             ("pyarrow.json read + pyiceberg append", "append_jsonl", None),
             ("pyarrow.parquet read + pyiceberg append", "append_parquet", None),
             ("pyiceberg add_files (footers only)", "add_files", None)]
    print(f"  {'side':<58}{'seconds':>9}{'rows/s':>12}{'vs append':>11}{'vs its peer':>13}")
    for label, side, peer in lines:
        s = t[side]
        against = f"{s / t[peer]:>12.2f}x" if peer else ""
        print(f"  {label:<58}{s:>9.2f}{n / s:>12,.0f}{s / t['append']:>10.2f}x{against}")
    print("  (peers: --jsonl against pyarrow.json + append, adopted against add_files, rewritten against "
          "pyarrow.parquet + append)")


def main():
    p = argparse.ArgumentParser(description="Ingest benchmark: tierdb ingest (JSONL, adopted and rewritten Parquet) "
                                            "against pyiceberg append and add_files.")
    p.add_argument("--rows", type=positive_int, default=int(os.environ.get("BENCH_ROWS", DEFAULT_ROWS)))
    p.add_argument("--days", type=positive_int, default=DEFAULT_DAYS, help="cold days the new rows spread over")
    p.add_argument("--seed-rows", type=positive_int, default=DEFAULT_SEED_ROWS,
                   help="rows each table holds (in the lake) before the ingest")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lake and logs in DIR/ingest (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    args = p.parse_args()
    return tiering_peer.run_in_private_cluster(args, "ingest", SETTINGS,
                                               lambda work, dsn, port: measure(args, work, dsn), say=say)


if __name__ == "__main__":
    sys.exit(main())
