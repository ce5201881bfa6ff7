#!/usr/bin/env python3
"""The mirror benchmark: how fast and how far behind the pump of a mirrored
table (docs/mirrored.md) keeps its Iceberg copy, and its catch-up against a
scripted peer (a logical decoding reader in Python, pyarrow, pyiceberg upserts).

    mirror_pump.py [--rows N] [--rate R] [--seconds D] [--backlog M] [--writers W] [--flush-millis MS]
                   [--quick] [--dir DIR] [--bin build/tierdb]
        the whole benchmark: a private cluster, the three phases below, the report
    mirror_pump.py peer --dsn DSN --warehouse DIR [--init] [--batch B]
        the scripted peer alone (the benchmark runs it in its own process); prints one JSON line

In one run, on a private PostgreSQL 15 cluster with the read benchmark's
settings (scripts/pg-cluster.sh runs every cluster with wal_level=logical,
and with fsync and full_page_writes off) and synchronous_commit back on, so
that a commit's WAL is written when it returns and the walsender may send it
at once, as on a server with the default settings (the disk is still never
synced):

1. copy: `events_m (id bigint primary key, ts timestamptz not null,
   device_id int, value float8, note text)` with N rows over 10 days is
   registered --mode mirrored and `tierdb run --once` copies it into the lake
   (timed as the whole process). The lake at S must then equal the heap.
2. sustained: `tierdb run` (TIERDB_CYCLE_INTERVAL_SECONDS=10,
   TIERDB_MIRROR_FLUSH_MILLIS=MS) runs while W writer processes (psycopg 3)
   offer R changes/s for D seconds, open loop: transactions of 10 changes
   (4 inserts, one UPDATE of 4 live rows, one DELETE of 2), each transaction
   sent as one simple query with its COMMIT and a read of
   pg_current_wal_insert_lsn() behind it, on a fixed schedule (a writer that
   falls behind sends at once, and the achieved rate is printed). A poller
   reads F (tierdb.cutline.replicated_lsn) every 20 ms. A transaction's lag
   is the first poll that saw F at or past the WAL position read right after
   its COMMIT, minus the time its COMMIT returned: never less than the truth
   (F at that position means the commit is in the lake), at most a poll late.
   The same lag is also derived from the op_log (details.end_lsn of each
   mirror batch and the time it was published). Once the writers stop, the
   daemon must bring F past their last commit, is stopped (SIGTERM), and the
   lake at S must equal the heap (count and sum(hashtext(row::text)) over
   tierdb.lake_scan).
3. catch-up: with the daemon stopped, a second publication and pgoutput slot
   are made for the peer, which loads the heap as it then is into its own
   Iceberg table (pyiceberg SqlCatalog on sqlite in the work directory,
   partitioned by day(ts) like the mirror, not timed). Then M changes are
   written in transactions of 50,000 (60% UPDATEs of live rows, a tenth of
   them moving the row to the next day, 30% INSERTs, 10% DELETEs), and both
   catch up on the same backlog:
   - ours: `tierdb run --once` (the whole process, default TIERDB_MIRROR_*),
     which streams to the WAL position at its start; F must pass the backlog;
   - the peer (`peer`, its own process, timed from connecting to its last
     commit): `pg_logical_slot_get_binary_changes` of its slot read through a
     server-side cursor (psycopg 3 does not speak the replication protocol,
     and calling the function in chunks with upto_nchanges would decode the
     backlog again from the slot's restart point each call), pgoutput decoded
     in Python, the newest row per key gathered until a commit ends a batch of
     at least 100,000 changes (TIERDB_MIRROR_BATCH's default), then one
     pyiceberg transaction per batch: `delete(In("id", gone))` and
     `upsert(rows, join_cols=["id"])`. It consumes the slot before it writes
     (no crash safety: the cheap way round).
   The lake at S must equal the heap; the peer's table is compared with the
   heap too (count and a checksum of every row), reported, not judged.

This is a measurement, not a test: nothing asserts a timing. It exits 1 if
the mirror differs from the heap or the daemon fails.
"""

import argparse
import bisect
import json
import math
import multiprocessing
import os
import random
import re
import resource
import signal
import statistics
import struct
import subprocess
import sys
import time
import zlib
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiering_peer  # noqa: E402
from seam_reads import SETTINGS as READ_SETTINGS  # noqa: E402
from tiering_peer import TOP, clean_env, positive_int, tail  # noqa: E402

DEFAULTS = {"rows": 200_000, "rate": 10_000, "seconds": 30, "backlog": 500_000}
QUICK = {"rows": 20_000, "rate": 2_000, "seconds": 8, "backlog": 50_000}
SETTINGS = READ_SETTINGS + ["synchronous_commit=on"]
DAYS = 10
BASE = 1_704_067_200  # 2024-01-01 00:00:00 UTC
TX_MIX = (4, 4, 2)  # inserts, updated rows, deleted rows in a transaction of the offered load
BACKLOG_TX = 50_000
POLL_SECONDS = 0.02
PEER_BATCH = 100_000
TABLE = "events_m"


def say(message):
    print(f"mirror-bench: {message}", flush=True)


def fail(message):
    print(f"mirror-bench: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def percentile(sorted_values, p):
    if not sorted_values:
        return math.nan
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def row_digest(rows):
    """(count, sum of crc32) over rows (id, ts in us, device_id, value, note): order-independent."""
    n = s = 0
    for r in rows:
        n += 1
        s += zlib.crc32(repr(tuple(r)).encode())
    return [n, s]


def heap_digest(conn):
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, (extract(epoch FROM ts) * 1000000)::bigint, device_id, value, note FROM {TABLE}")
        return row_digest(cur)


def lake_equals_heap(conn):
    """(equal, heap (count, checksum), lake (count, checksum), S) at the published S."""
    s = conn.execute("SELECT c.lake_snapshot_id FROM tierdb.cutline c JOIN tierdb.tables t USING (table_id)"
                     " WHERE t.table_name = %s", (TABLE,)).fetchone()[0]
    heap = conn.execute(f"SELECT count(*), coalesce(sum(hashtext(t::text)), 0) FROM {TABLE} t").fetchone()
    lake = conn.execute(f"SELECT count(*), coalesce(sum(hashtext(t::text)), 0)"
                        f" FROM tierdb.lake_scan(NULL::{TABLE}, %s) t", (s,)).fetchone()
    return tuple(heap) == tuple(lake), tuple(heap), tuple(lake), s


def frontier(conn):
    f = conn.execute("SELECT c.replicated_lsn FROM tierdb.cutline c JOIN tierdb.tables t USING (table_id)"
                     " WHERE t.table_name = %s", (TABLE,)).fetchone()[0]
    return -1 if f is None else f


def insert_lsn(conn):
    return conn.execute("SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint").fetchone()[0]


def cpu_ticks_of(pid):
    """utime + stime of a process in seconds (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return math.nan


def cluster_cpu(work):
    """CPU seconds of the private cluster: its postmaster, its live children and the children it has reaped
    (walsenders come and go with the pump's connections)."""
    try:
        postmaster = int((work / "pg/data/postmaster.pid").read_text().split()[0])
        fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return math.nan
    ticks = sum(int(v) for v in fields[11:15])
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                f = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(f[1]) == postmaster:
                ticks += int(f[11]) + int(f[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy():
    """(busy, total) CPU seconds of the whole machine since boot (/proc/stat)."""
    vals = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = vals[3] + vals[4]
    return (sum(vals) - idle) / hz, sum(vals) / hz


# ------------------------------------------------------------------ the table


def create_and_fill(conn, rows):
    span = DAYS * 86_400
    with conn.cursor() as cur:
        cur.execute("SET TimeZone = 'UTC'")
        cur.execute("CREATE EXTENSION IF NOT EXISTS tierdb")
        cur.execute(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, ts timestamptz NOT NULL, device_id int,"
                    " value float8, note text)")
        cur.execute(f"INSERT INTO {TABLE} SELECT g, to_timestamp({BASE} + (g - 1) * {span}::float8 / %s),"
                    " ((hashint8extended(g, 2) & 9223372036854775807) %% 10000)::int,"
                    " ((hashint8extended(g, 3) & 9223372036854775807) %% 1000000) / 100.0,"
                    " 'note ' || md5(g::text) FROM generate_series(1, %s::bigint) g", (rows, rows))
        cur.execute(f"VACUUM (FREEZE, ANALYZE) {TABLE}")
        cur.execute("CHECKPOINT")


def tierdb_env(dsn, work, **extra):
    return clean_env(TIERDB_PG_URL=dsn, TIERDB_WAREHOUSE=str(work / "lake"), **extra)


# ------------------------------------------------------------------ the offered load


def writer(dsn, k, w, rows, rate, seconds, start_at, out):
    """Writer k of w: its own live ids (those = k+1 mod w), transactions of TX_MIX on a fixed schedule."""
    import psycopg

    rng = random.Random(1000 + k)
    live = list(range(1 + k, rows + 1, w))
    next_id = rows + 1 + k + w * 10  # beyond any id the initial rows have, in this writer's class
    n_ins, n_upd, n_del = TX_MIX
    interval = sum(TX_MIX) * w / rate
    hot = BASE + DAYS * 86_400
    times, lsns = array("d"), array("q")
    late = 0.0
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.cursor()
        i = 0
        while True:
            due = start_at + i * interval
            if due >= start_at + seconds:
                break
            now = time.time()
            if due > now:
                time.sleep(due - now)
            else:
                late = max(late, now - due)
            values = []
            for _ in range(n_ins):
                values.append(f"({next_id}, to_timestamp({hot + (now - start_at):.6f}), {rng.randrange(10000)},"
                              f" {rng.randrange(1000000) / 100}, 'insert {k}.{i}')")
                live.append(next_id)
                next_id += w
            picks = sorted(rng.sample(range(len(live)), n_upd + n_del))
            upd = [live[p] for p in picks[:n_upd]]
            dels = [live[p] for p in picks[n_upd:]]
            for p in reversed(picks[n_upd:]):  # swap-remove, highest position first
                live[p] = live[-1]
                live.pop()
            cur.execute(f"BEGIN; INSERT INTO {TABLE} VALUES {', '.join(values)};"
                        f" UPDATE {TABLE} SET value = value + 1, note = 'update {k}.{i}'"
                        f" WHERE id IN ({', '.join(map(str, upd))});"
                        f" DELETE FROM {TABLE} WHERE id IN ({', '.join(map(str, dels))}); COMMIT;"
                        " SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint")
            done = time.time()
            while cur.description is None and cur.nextset():
                pass
            lsns.append(cur.fetchone()[0])
            times.append(done)
            i += 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.put({"k": k, "times": times.tobytes(), "lsns": lsns.tobytes(), "changes": i * sum(TX_MIX),
             "late": late, "cpu": usage.ru_utime + usage.ru_stime})


def sustained(args, work, dsn, conn):
    """Phase 2: the daemon, the writers, the poller; returns the figures and the problems found."""
    problems = []
    env = tierdb_env(dsn, work, TIERDB_CYCLE_INTERVAL_SECONDS="10",
                     TIERDB_MIRROR_FLUSH_MILLIS=str(args.flush_millis))
    log = work / "daemon.err"
    with open(work / "daemon.out", "wb") as out, open(log, "wb") as err:
        daemon = subprocess.Popen([args.bin, "run"], env=env, stdout=out, stderr=err)
    time.sleep(2)  # its first cycle
    if daemon.poll() is not None:
        fail(f"tierdb run exited ({daemon.returncode}); its log:\n{tail(log)}")
    start_lsn = insert_lsn(conn)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    start_at = time.time() + 1.0
    procs = [ctx.Process(target=writer, args=(dsn, k, args.writers, args.rows, args.rate, args.seconds, start_at,
                                               queue)) for k in range(args.writers)]
    for p in procs:
        p.start()
    busy0, total0 = machine_busy()
    daemon_cpu0, pg_cpu0, wall0 = cpu_ticks_of(daemon.pid), cluster_cpu(work), time.time()
    polls_t, polls_f = [], []
    results = []
    held = []  # WAL between the slot's restart point and the insert position, every 25th poll
    deadline = start_at + args.seconds + 60
    while len(results) < len(procs):
        polls_f.append(frontier(conn))
        polls_t.append(time.time())
        if len(polls_t) % 25 == 0:
            held.append(conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), s.restart_lsn)::bigint"
                                     " FROM pg_replication_slots s JOIN tierdb.tables t ON s.slot_name = t.slot_name"
                                     " WHERE t.table_name = %s", (TABLE,)).fetchone()[0])
        while True:
            try:
                results.append(queue.get_nowait())
            except Exception:  # queue.Empty
                break
        if time.time() > deadline:
            fail("the writers did not finish")
        time.sleep(POLL_SECONDS)
    for p in procs:
        p.join()
        if p.exitcode != 0:
            fail(f"writer process {p.pid} failed ({p.exitcode})")
    busy1, total1 = machine_busy()
    daemon_cpu1, pg_cpu1, wall1 = cpu_ticks_of(daemon.pid), cluster_cpu(work), time.time()
    times, lsns = array("d"), array("q")
    for r in results:
        times.frombytes(r["times"])
        lsns.frombytes(r["lsns"])
    last = max(lsns)
    writers_end = max(times)
    # the daemon brings F past the writers' last commit
    wait_until = time.time() + 120
    while polls_f[-1] < last and time.time() < wait_until and daemon.poll() is None:
        time.sleep(POLL_SECONDS)
        polls_f.append(frontier(conn))
        polls_t.append(time.time())
    caught_up = polls_f[-1] >= last
    if not caught_up:
        problems.append(f"F ({polls_f[-1]}) did not pass the writers' last commit ({last}) within 120 s")
    daemon.send_signal(signal.SIGTERM)
    try:
        code = daemon.wait(timeout=120)
    except subprocess.TimeoutExpired:
        daemon.kill()
        code = daemon.wait()
        problems.append("the daemon did not stop within 120 s of SIGTERM")
    if code != 0:
        problems.append(f"the daemon exited {code}")
    text = Path(log).read_text(errors="replace")
    # "mirror: N changes up to WAL X/Y committed to the lake": the count and the LSN as a number
    batches = [(int(m.group(1)), (int(m.group(2), 16) << 32) + int(m.group(3), 16)) for m in
               re.finditer(r"mirror: (\d+) changes? up to WAL ([0-9A-F]+)/([0-9A-F]+) committed to the lake", text)]
    errors = [line for line in text.splitlines() if re.search(r"error|failed|WARNING", line, re.I)]

    # lag by the poller: F is non-decreasing; the first poll with F >= lsn
    running = []
    top = -1
    for f in polls_f:
        top = max(top, f)
        running.append(top)
    lags = []
    for t, lsn in zip(times, lsns):
        j = bisect.bisect_left(running, lsn)
        if j < len(running):
            lags.append(max(0.0, polls_t[j] - t))
    lags.sort()
    # lag by the op_log: the publish time of the first mirror batch whose end_lsn reaches the commit
    ops = conn.execute("SELECT (o.details->>'end_lsn')::bigint, extract(epoch FROM o.updated_at)::float8"
                       " FROM tierdb.op_log o JOIN tierdb.tables t USING (table_id) WHERE t.table_name = %s"
                       " AND o.details->>'kind' = 'mirror' AND o.phase <> 'aborted'"
                       " AND (o.details->>'end_lsn')::bigint >= %s ORDER BY 1", (TABLE, start_lsn)).fetchall()
    op_lsn = [o[0] for o in ops]
    op_lags = []
    for t, lsn in zip(times, lsns):
        j = bisect.bisect_left(op_lsn, lsn)
        if j < len(op_lsn):
            op_lags.append(max(0.0, ops[j][1] - t))
    op_lags.sort()

    equal, heap, lake, s = lake_equals_heap(conn)
    if not equal:
        problems.append(f"after the sustained load the lake at S={s} holds (count, checksum) {lake},"
                        f" the heap {heap}")
    changes = sum(r["changes"] for r in results)
    first_commit = min(times)
    span = writers_end - start_at
    j = bisect.bisect_left(running, last)
    applied_until = polls_t[j] if j < len(running) else math.nan
    wall = wall1 - wall0
    ncpu = os.cpu_count() or 1
    return {
        "offered_target": args.rate, "changes": changes, "transactions": len(times),
        "offered_rate": changes / span, "late_max": max(r["late"] for r in results),
        "applied_rate": changes / (applied_until - first_commit),
        "lag_p50": percentile(lags, 50), "lag_p99": percentile(lags, 99), "lag_max": lags[-1] if lags else math.nan,
        "lag_mean": statistics.fmean(lags) if lags else math.nan,
        "oplog_lag_p50": percentile(op_lags, 50), "oplog_lag_p99": percentile(op_lags, 99),
        "oplog_lag_max": op_lags[-1] if op_lags else math.nan, "lagged": len(lags),
        "batches": len(batches), "batch_mean": statistics.fmean([b[0] for b in batches]) if batches else 0,
        "batch_max": max([b[0] for b in batches], default=0),
        "polls": len(polls_t), "poll_interval": (polls_t[-1] - polls_t[0]) / max(1, len(polls_t) - 1),
        "machine_busy_cores": (busy1 - busy0) / ((total1 - total0) or math.nan) * ncpu, "cores": ncpu,
        "daemon_cores": (daemon_cpu1 - daemon_cpu0) / wall, "postgres_cores": (pg_cpu1 - pg_cpu0) / wall,
        "writer_cores": sum(r["cpu"] for r in results) / wall,
        "wal_bytes": last - start_lsn, "slot_held_max": max(held, default=0),
        "slot_held_mean": statistics.fmean(held) if held else 0, "daemon_errors": errors[:20], "caught_up": caught_up,
    }, problems


# ------------------------------------------------------------------ the backlog


def backlog(conn, m, first_new_id):
    """M changes in transactions of BACKLOG_TX; returns (changes, seconds, WAL position inside the last
    transaction before its COMMIT, WAL bytes)."""
    start = time.perf_counter()
    lsn0 = insert_lsn(conn)
    upd_after, del_after = 0, (first_new_id // 2)
    next_id = first_new_id
    done = 0
    inside = None
    while done < m:
        size = min(BACKLOG_TX, m - done)
        n_upd, n_del = size * 6 // 10, size // 10
        n_ins = size - n_upd - n_del
        with conn.transaction():
            with conn.cursor() as cur:
                if n_upd:
                    cur.execute(f"SELECT max(id), count(*) FROM (SELECT id FROM {TABLE} WHERE id > %s ORDER BY id"
                                " LIMIT %s) s", (upd_after, n_upd))
                    hi, found = cur.fetchone()
                    if found < n_upd:  # wrap around
                        upd_after = 0
                        cur.execute(f"SELECT max(id) FROM (SELECT id FROM {TABLE} ORDER BY id LIMIT %s) s", (n_upd,))
                        hi = cur.fetchone()[0]
                    cur.execute(f"UPDATE {TABLE} SET value = value + 1, device_id = (device_id + 1) %% 10000,"
                                " note = 'backlog ' || id,"
                                " ts = CASE WHEN id %% 10 = 0 THEN ts + interval '1 day' ELSE ts END"
                                " WHERE id > %s AND id <= %s", (upd_after, hi))
                    done += cur.rowcount
                    upd_after = hi
                if n_del:
                    cur.execute(f"DELETE FROM {TABLE} WHERE id IN (SELECT id FROM {TABLE} WHERE id > %s"
                                " AND id %% 3 = 0 ORDER BY id LIMIT %s) RETURNING id", (del_after, n_del))
                    gone = [r[0] for r in cur.fetchall()]
                    done += len(gone)
                    del_after = max(gone) if len(gone) == n_del else 0
                cur.execute(f"INSERT INTO {TABLE} SELECT g, to_timestamp({BASE} + (g %% {DAYS * 86_400})::float8),"
                            " (g %% 10000)::int, g / 100.0, 'backlog insert ' || g"
                            " FROM generate_series(%s::bigint, %s::bigint) g", (next_id, next_id + n_ins - 1))
                done += cur.rowcount
                next_id += n_ins
                inside = insert_lsn(conn)
    end = insert_lsn(conn)
    return done, time.perf_counter() - start, inside, end - lsn0


def catch_up(args, work, dsn, conn):
    problems = []
    conn.execute(f"CREATE PUBLICATION peer_pub FOR TABLE {TABLE}")
    conn.execute("SELECT pg_create_logical_replication_slot('peer_slot', 'pgoutput')")
    say("the peer loads the heap into its own Iceberg table (not timed)")
    init = peer_process(args, work, dsn, "peer-init", ["--init"])
    first_new_id = conn.execute(f"SELECT max(id) + 1000 FROM {TABLE}").fetchone()[0]
    say(f"writing a backlog of {args.backlog:,} changes (transactions of {BACKLOG_TX:,})")
    changes, gen_seconds, inside_last, wal_bytes = backlog(conn, args.backlog, first_new_id)
    f0 = frontier(conn)
    say("catching up: tierdb run --once")
    env = tierdb_env(dsn, work)
    code, seconds, rss = tiering_peer.run_measured([args.bin, "run", "--once"], env, work / "catchup.out",
                                                   work / "catchup.err")
    if code != 0:
        problems.append(f"tierdb run --once (catch-up) failed ({code}); its log:\n{tail(work / 'catchup.err')}")
    f1 = frontier(conn)
    if f1 < inside_last:
        problems.append(f"after the catch-up F = {f1} has not passed the backlog's last commit (> {inside_last})")
    text = (work / "catchup.err").read_text(errors="replace")
    batches = [int(m.group(1)) for m in re.finditer(r"mirror: (\d+) changes? up to WAL [0-9A-F/]+ committed", text)]
    equal, heap, lake, s = lake_equals_heap(conn)
    if not equal:
        problems.append(f"after the catch-up the lake at S={s} holds (count, checksum) {lake}, the heap {heap}")
    say("catching up: the peer")
    peer = peer_process(args, work, dsn, "peer")
    want = heap_digest(conn)
    peer["equal"] = peer["digest"] == want
    peer["heap_digest"] = want
    return {"changes": changes, "generate_seconds": gen_seconds, "wal_bytes": wal_bytes, "seconds": seconds,
            "rss_mb": rss, "batches": len(batches), "batch_max": max(batches, default=0), "f_before": f0,
            "f_after": f1, "peer": peer, "peer_init": init}, problems


def peer_process(args, work, dsn, name, extra=()):
    cmd = [sys.executable, str(Path(__file__).resolve()), "peer", "--dsn", dsn, "--warehouse", str(work / "peer"),
           "--batch", str(PEER_BATCH), *extra]
    code, seconds, rss = tiering_peer.run_measured(cmd, clean_env(), work / f"{name}.out", work / f"{name}.err")
    if code != 0:
        fail(f"the peer ({name}) failed ({code}):\n{tail(work / f'{name}.err')}")
    result = json.loads((work / f"{name}.out").read_text().strip().splitlines()[-1])
    result["process_seconds"] = seconds
    result["rss_mb"] = rss
    return result


# ------------------------------------------------------------------ the scripted peer


def peer_catalog(warehouse):
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform
    from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType, TimestamptzType

    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestamptzType(), required=True),
        NestedField(3, "device_id", IntegerType(), required=False),
        NestedField(4, "value", DoubleType(), required=False),
        NestedField(5, "note", StringType(), required=False),
        identifier_field_ids=[1],
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))
    arrow_schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("device_id", pa.int32()),
        pa.field("value", pa.float64()),
        pa.field("note", pa.string()),
    ])
    return catalog, schema, spec, arrow_schema


def peer_digest(table):
    import pyarrow as pa

    t = table.scan().to_arrow()
    cols = [t.column("id").to_pylist(), t.column("ts").cast(pa.int64()).to_pylist(),
            t.column("device_id").to_pylist(), t.column("value").to_pylist(), t.column("note").to_pylist()]
    return row_digest(zip(*cols))


def peer_init(args):
    """The peer's table, loaded with the heap as it is (after its slot was made; nothing writes meanwhile)."""
    import psycopg
    import pyarrow as pa

    catalog, schema, spec, arrow_schema = peer_catalog(Path(args.warehouse))
    catalog.create_namespace("bench")
    table = catalog.create_table("bench.events_m", schema=schema, partition_spec=spec,
                                 properties={"write.parquet.compression-codec": "zstd"})
    start = time.perf_counter()
    with psycopg.connect(args.dsn) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        rows = []
        with conn.cursor() as cur:
            with cur.copy(f"COPY (SELECT id, ts, device_id, value, note FROM {TABLE}) TO STDOUT (FORMAT BINARY)") as c:
                c.set_types(["int8", "timestamptz", "int4", "float8", "text"])
                rows = list(c.rows())
    cols = list(zip(*rows)) if rows else [[]] * 5
    table.append(pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, arrow_schema)],
                                      schema=arrow_schema))
    print(json.dumps({"rows": len(rows), "seconds": time.perf_counter() - start}))


UNCHANGED = object()


def parse_tuple(buf, pos):
    """pgoutput TupleData at pos: (values as text or None or UNCHANGED, next position)."""
    (n,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    vals = []
    for _ in range(n):
        kind = buf[pos]
        pos += 1
        if kind == 0x74:  # 't'
            (ln,) = struct.unpack_from(">i", buf, pos)
            pos += 4
            vals.append(buf[pos:pos + ln].decode())
            pos += ln
        elif kind == 0x6E:  # 'n'
            vals.append(None)
        elif kind == 0x75:  # 'u': an unchanged TOASTed value, not sent
            vals.append(UNCHANGED)
        else:
            raise ValueError(f"unexpected tuple column kind {chr(kind)!r}")
    return vals, pos


def peer(args):
    """The timed peer: read the slot, decode pgoutput, the newest row per key, one pyiceberg transaction a batch."""
    import psycopg
    import pyarrow as pa
    from pyiceberg.expressions import In

    catalog, _, _, arrow_schema = peer_catalog(Path(args.warehouse))
    table = catalog.load_table("bench.events_m")
    start = time.perf_counter()
    write_seconds = 0.0
    state = {}  # id text -> newest row (texts) or None: deleted
    columns = None  # relation's column names
    changes = batch_changes = transactions = batches = 0

    def flush():
        nonlocal write_seconds, batches, table
        t0 = time.perf_counter()
        alive = [v for v in state.values() if v is not None]
        gone = [int(k) for k, v in state.items() if v is None]
        order = [columns.index(f.name) for f in arrow_schema]
        cols = list(zip(*alive)) if alive else [()] * len(columns)
        df = pa.Table.from_arrays([pa.array(cols[i], type=pa.string()).cast(f.type)
                                   for i, f in zip(order, arrow_schema)], schema=arrow_schema)
        with table.transaction() as tx:
            if gone:
                tx.delete(In("id", gone))
            if alive:
                tx.upsert(df, join_cols=["id"])
        table = catalog.load_table("bench.events_m")
        batches += 1
        state.clear()
        write_seconds += time.perf_counter() - t0

    with psycopg.connect(args.dsn) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        with conn.cursor(name="peer_changes", binary=True) as cur:
            cur.itersize = 10_000
            cur.execute("SELECT data FROM pg_logical_slot_get_binary_changes('peer_slot', NULL, NULL,"
                        " 'proto_version', '1', 'publication_names', 'peer_pub')")
            key = None
            for (data,) in cur:
                buf = bytes(data)
                kind = buf[0]
                if kind == 0x52:  # 'R' Relation: relid, namespace, name, replica identity, columns
                    pos = 5
                    for _ in range(2):
                        pos = buf.index(b"\0", pos) + 1
                    pos += 1
                    (n,) = struct.unpack_from(">h", buf, pos)
                    pos += 2
                    columns = []
                    for _ in range(n):
                        end = buf.index(b"\0", pos + 1)
                        columns.append(buf[pos + 1:end].decode())
                        pos = end + 1 + 8
                    key = columns.index("id")
                elif kind == 0x49:  # 'I' Insert: relid, 'N', new tuple
                    new, _ = parse_tuple(buf, 6)
                    state[new[key]] = new
                    changes += 1
                    batch_changes += 1
                elif kind == 0x55:  # 'U' Update: relid, optional 'K'/'O' old tuple, 'N' new tuple
                    pos = 5
                    old = None
                    if buf[pos] in (0x4B, 0x4F):
                        old, pos = parse_tuple(buf, pos + 1)
                    new, _ = parse_tuple(buf, pos + 1)
                    if UNCHANGED in new:
                        new = [o if v is UNCHANGED else v for v, o in zip(new, old)]
                    if old is not None and old[key] != new[key]:
                        state[old[key]] = None
                    state[new[key]] = new
                    changes += 1
                    batch_changes += 1
                elif kind == 0x44:  # 'D' Delete: relid, 'K'/'O', old tuple
                    old, _ = parse_tuple(buf, 6)
                    state[old[key]] = None
                    changes += 1
                    batch_changes += 1
                elif kind == 0x43:  # 'C' Commit: a batch ends at a commit
                    transactions += 1
                    if batch_changes >= args.batch:
                        flush()
                        batch_changes = 0
                elif kind == 0x54:  # 'T' Truncate
                    raise RuntimeError("the peer does not handle TRUNCATE")
        conn.commit()
    if state:
        flush()
    seconds = time.perf_counter() - start
    table = catalog.load_table("bench.events_m")
    print(json.dumps({"changes": changes, "transactions": transactions, "batches": batches, "seconds": seconds,
                      "write_seconds": write_seconds, "snapshots": len(table.metadata.snapshots),
                      "digest": peer_digest(table)}))


# ------------------------------------------------------------------ the benchmark


def measure(args, work, dsn):
    import psycopg

    problems = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        say(f"loading {args.rows:,} rows")
        create_and_fill(conn, args.rows)
        env = tierdb_env(dsn, work)
        reg = subprocess.run([args.bin, "register", "--table", f"public.{TABLE}", "--pk", "id", "--tier-key", "ts",
                              "--mode", "mirrored"], env=env, capture_output=True, text=True)
        if reg.returncode != 0:
            fail(f"tierdb register failed ({reg.returncode}):\n{reg.stdout}{reg.stderr}")
        say("the initial copy: tierdb run --once")
        code, copy_seconds, copy_rss = tiering_peer.run_measured([args.bin, "run", "--once"], env,
                                                                 work / "copy.out", work / "copy.err")
        if code != 0:
            fail(f"tierdb run --once (the copy) failed ({code}); its log:\n{tail(work / 'copy.err')}")
        equal, heap, lake, s = lake_equals_heap(conn)
        if not equal:
            problems.append(f"after the copy the lake at S={s} holds (count, checksum) {lake}, the heap {heap}")
        if frontier(conn) < 0:
            problems.append("after the copy F is not set")
        copy = {"rows": args.rows, "seconds": copy_seconds, "rss_mb": copy_rss}

        say(f"sustained load: {args.rate:,} changes/s for {args.seconds} s from {args.writers} writer(s),"
            f" TIERDB_MIRROR_FLUSH_MILLIS={args.flush_millis}")
        sus, more = sustained(args, work, dsn, conn)
        problems += more
        if sus["daemon_errors"]:
            say("the daemon logged:\n  " + "\n  ".join(sus["daemon_errors"]))

        cat, more = catch_up(args, work, dsn, conn)
        problems += more
    report(args, copy, sus, cat)
    for p in problems:
        print(f"mirror-bench: MISMATCH: {p}", file=sys.stderr)
    if not cat["peer"]["equal"]:
        print(f"mirror-bench: MISMATCH (the peer's table, not judged): (count, checksum)"
              f" {cat['peer']['digest']}, the heap {cat['peer']['heap_digest']}", file=sys.stderr)
    return 1 if problems else 0


def report(args, copy, sus, cat):
    ms = lambda s: f"{s * 1000:,.0f} ms"  # noqa: E731
    print()
    print(f"Mirror benchmark: {args.rows:,} rows, {sus['cores']} cores")
    print(f"  initial copy ({copy['rows']:,} rows, tierdb run --once): {copy['seconds']:.2f} s,"
          f" {copy['rows'] / copy['seconds']:,.0f} rows/s, peak RSS {copy['rss_mb']:.0f} MB")
    print()
    print(f"  sustained, offered {sus['offered_target']:,} changes/s for {args.seconds} s"
          f" ({args.writers} writers, transactions of {sum(TX_MIX)}: {TX_MIX[0]} inserts, {TX_MIX[1]} updates,"
          f" {TX_MIX[2]} deletes; TIERDB_MIRROR_FLUSH_MILLIS={args.flush_millis})")
    print(f"    offered (achieved)       {sus['offered_rate']:>12,.0f} changes/s  ({sus['changes']:,} changes,"
          f" {sus['transactions']:,} transactions; a writer fell behind its schedule by up to"
          f" {sus['late_max'] * 1000:,.0f} ms)")
    print(f"    applied                  {sus['applied_rate']:>12,.0f} changes/s  (first commit to F past the last)")
    print(f"    lag, commit to F (poll)  p50 {ms(sus['lag_p50'])}, p99 {ms(sus['lag_p99'])},"
          f" max {ms(sus['lag_max'])}  (polled every {sus['poll_interval'] * 1000:.0f} ms)")
    print(f"    lag, commit to publish   p50 {ms(sus['oplog_lag_p50'])}, p99 {ms(sus['oplog_lag_p99'])},"
          f" max {ms(sus['oplog_lag_max'])}  (op_log updated_at)")
    print(f"    pump batches             {sus['batches']:,}, {sus['batch_mean']:,.0f} changes each on average,"
          f" at most {sus['batch_max']:,}; WAL {sus['wal_bytes'] / 1e6:,.1f} MB")
    print(f"    slot's restart point     {sus['slot_held_mean'] / 1e6:,.1f} MB behind the WAL on average, at most"
          f" {sus['slot_held_max'] / 1e6:,.1f} MB (each pump run's walsender decodes from there again)")
    print(f"    CPU (cores busy)         daemon {sus['daemon_cores']:.2f}, Postgres {sus['postgres_cores']:.2f}"
          f" (backends, walsenders, ...), writers {sus['writer_cores']:.2f};"
          f" the whole machine {sus['machine_busy_cores']:.2f} of {sus['cores']} (whatever else runs on it too)")
    p = cat["peer"]
    ours = cat["changes"] / cat["seconds"]
    theirs = p["changes"] / p["seconds"]
    print()
    print(f"  catch-up on a backlog of {cat['changes']:,} changes ({cat['wal_bytes'] / 1e6:,.1f} MB of WAL,"
          f" written in {cat['generate_seconds']:.1f} s)")
    print(f"    {'':<28}{'tierdb run --once':>20}{'peer':>20}")
    for name, a, b in [
        ("seconds", f"{cat['seconds']:.2f}", f"{p['seconds']:.2f}"),
        ("changes/s", f"{ours:,.0f}", f"{theirs:,.0f}"),
        ("lake commits", f"{cat['batches']}", f"{p['batches']} ({p['snapshots'] - 1} snapshots)"),
        ("peak RSS", f"{cat['rss_mb']:.0f} MB", f"{p['rss_mb']:.0f} MB"),
    ]:
        print(f"    {name:<28}{a:>20}{b:>20}")
    print(f"    the peer's time: {p['seconds'] - p['write_seconds']:.2f} s reading and decoding the slot,"
          f" {p['write_seconds']:.2f} s in pyiceberg; it decoded {p['changes']:,} changes in"
          f" {p['transactions']:,} transactions; its table {'equals' if p['equal'] else 'DIFFERS FROM'} the heap")
    print(f"    ratio tierdb / peer: {ours / theirs:.1f}x   (goal: at least 5x)")
    print(f"  lag p99 at {sus['offered_rate']:,.0f} changes/s: {ms(sus['lag_p99'])}   (goal: under 2 s at 10,000)")
    print(json.dumps({"benchmark": "mirror", "rows": args.rows, "copy": copy,
                      "sustained": {k: v for k, v in sus.items() if k != "daemon_errors"},
                      "catch_up": {k: v for k, v in cat.items() if k != "peer"}, "peer": p,
                      "ratio": ours / theirs}))


def benchmark(args):
    for name in DEFAULTS:
        if getattr(args, name) is None:
            setattr(args, name, (QUICK if args.quick else DEFAULTS)[name])
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not built: run `make` first")
    work, cleanup = tiering_peer.work_directory(args.dir, "mirror")
    try:
        with tiering_peer.private_cluster(work, SETTINGS, say=say) as (dsn, port):
            say(f"cluster on port {port}, files in {work}")
            return measure(args, work, dsn)
    finally:
        if cleanup:
            cleanup.cleanup()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "peer":
        p = argparse.ArgumentParser(prog="mirror_pump.py peer")
        p.add_argument("peer")
        p.add_argument("--dsn", required=True)
        p.add_argument("--warehouse", required=True)
        p.add_argument("--batch", type=positive_int, default=PEER_BATCH)
        p.add_argument("--init", action="store_true", help="create the table and load the heap into it")
        a = p.parse_args()
        peer_init(a) if a.init else peer(a)
        return 0
    p = argparse.ArgumentParser(description="Mirror benchmark: the pump's sustained throughput and lag, and its "
                                            "catch-up against a logical decoding + pyiceberg peer.")
    p.add_argument("--rows", type=positive_int, default=None, help=f"initial rows ({DEFAULTS['rows']:,})")
    p.add_argument("--rate", type=positive_int, default=None, help=f"offered changes/s ({DEFAULTS['rate']:,})")
    p.add_argument("--seconds", type=positive_int, default=None, help=f"seconds of load ({DEFAULTS['seconds']})")
    p.add_argument("--backlog", type=positive_int, default=None, help=f"catch-up changes ({DEFAULTS['backlog']:,})")
    p.add_argument("--writers", type=positive_int, default=2, help="writer processes of the offered load (2)")
    p.add_argument("--flush-millis", type=positive_int, default=200,
                   help="TIERDB_MIRROR_FLUSH_MILLIS of the sustained phase's daemon (200)")
    p.add_argument("--quick", action="store_true",
                   help=f"a short run: defaults {', '.join(f'--{k} {v}' for k, v in QUICK.items())}")
    p.add_argument("--dir", default=os.environ.get("BENCH_DIR") or None,
                   help="keep the cluster, lakes and logs in DIR/mirror (default: a temporary directory)")
    p.add_argument("--bin", default=str(TOP / "build/tierdb"))
    return benchmark(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())
