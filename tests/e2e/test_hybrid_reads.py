"""Hybrid reads of mirrored tables (issue 19 §4; docs/mirrored.md "Hybrid
reads", extension/src/hybrid.c): with tierdb.mirrored_reads = 'hybrid' a
read takes the rows below a split from the mirror in the lake and the rest
from the heap, and must return exactly what a heap read returns.

The differential: each check runs the same statement twice in one
REPEATABLE READ transaction, once hybrid and once from the heap alone
(tierdb.mirrored_reads = 'heap'): both see the same snapshot, so they must
agree row for row, while writers change the table and the daemon's pump
follows them. tierdb.cold_rows(NULL::m) in the same transaction counts the
rows the lake served, to show that the hybrid read did read the lake.
"""

from __future__ import annotations

import math
import random
import threading
import time

import psycopg
import pytest

from test_mirrored import make_table, register
from test_tiering import RunningDaemon, run_once
from seam import reads_cold

QUERIES = [
    "SELECT id, ts, note, amount, reading, ok, doc, blob FROM m ORDER BY id",
    "SELECT count(*), sum(amount), count(DISTINCT note) FROM m",
    "SELECT date_trunc('day', ts) d, count(*), max(id) FROM m GROUP BY 1 ORDER BY 1",
    "SELECT id, note FROM m WHERE ts < '2024-01-04' AND id % 3 = 0 ORDER BY id",
    "SELECT m.id, o.id FROM m JOIN m o ON o.id = m.id + 1 WHERE m.id < 500 ORDER BY 1",
]


def comparable(rows):
    """Rows with NaN spelt out: Python's NaN equals no NaN, Postgres' does."""
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows]


def cold_scan_property(conn, name):
    """A property of the cold scan in EXPLAIN ANALYZE of a read of m (the transaction's pin)."""
    plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM m").fetchone()[0]

    def find(node):
        if node.get("Custom Plan Provider") == "TierDB Cold Scan":
            return node.get(name)
        for child in node.get("Plans", []):
            found = find(child)
            if found is not None:
                return found
        return None
    return find(plan[0]["Plan"])


def both_ways(conn, sql, params=None, stats=None, count_served=True, wait_ms=60000):
    """(hybrid rows, heap rows, rows the lake served) in one snapshot; `stats` collects the
    batches newer than the snapshot that the heap answered for. The wait for the mirror is long
    by default: on a loaded machine the pump may take seconds, and a read that gave up would
    read the heap (exact, but not what the test is after)."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conn.execute("SET LOCAL tierdb.mirrored_reads = 'hybrid'")
        conn.execute(f"SET LOCAL tierdb.mirror_wait_ms = {wait_ms}")
        hybrid = comparable(conn.execute(sql, params).fetchall())
        served = conn.execute("SELECT count(*) FROM tierdb.cold_rows(NULL::m)").fetchone()[0] if count_served else None
        if stats is not None:
            stats.append(cold_scan_property(conn, "Batches Newer Than the Snapshot"))
        conn.execute("SET LOCAL tierdb.mirrored_reads = 'heap'")
        heap = comparable(conn.execute(sql, params).fetchall())
    return hybrid, heap, served


@pytest.fixture(params=[False], ids=["plain"])
def pumped(request, db, tierdb, tierdb_bin, lake, tmp_path):
    """A mirrored `m`, copied, with a daemon pumping its changes every 100 ms."""
    make_table(db, partitioned=request.param, rows=4000)
    register(tierdb)
    run_once(tierdb, "0")
    daemon = RunningDaemon(db, tierdb_bin, lake, tmp_path / "daemon.log", TIERDB_CYCLE_INTERVAL_SECONDS="60",
                           TIERDB_MIRROR_FLUSH_MILLIS="100")
    yield db, daemon
    assert daemon.stop() == 0, daemon.log()


def test_a_hybrid_read_serves_the_lake_and_equals_the_heap(pumped):
    db, daemon = pumped
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        conn.execute("SET tierdb.mirror_wait_ms = 60000")   # see both_ways
        conn.execute("UPDATE m SET note = 'changed' WHERE id % 7 = 0")
        conn.execute("DELETE FROM m WHERE id % 11 = 0")
        for sql in QUERIES:
            hybrid, heap, served = both_ways(conn, sql)
            assert hybrid == heap, sql
            assert served > 3000, f"the lake served {served} rows"
        conn.execute("SET tierdb.mirrored_reads = 'hybrid'")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT count(*) FROM m").fetchall())
        assert reads_cold(plan), plan
        # Spark's capture: the newest mirror snapshot once F has passed it, split at the newest key less the lag
        split, snapshot = conn.execute("SELECT split, lake_snapshot_id FROM tierdb.hybrid_read_begin('m', 3600, 60000)"
                                       ).fetchone()
        assert snapshot == int(conn.execute("SELECT lake_snapshot_id FROM tierdb.cutline").fetchone()[0])
        assert split == conn.execute("SELECT tierdb.canonical_tier_key(max(ts) - interval '1 hour') FROM m"
                                     ).fetchone()[0]
        # the split: rows at or above max(ts) - lag stay on the heap side
        conn.execute("SET tierdb.hybrid_lag = 86400")
        hybrid, heap, served = both_ways(conn, QUERIES[0])
        assert hybrid == heap
        newest = conn.execute("SELECT count(*) FROM m WHERE ts >= (SELECT max(ts) FROM m) - interval '1 day'"
                              ).fetchone()[0]
        assert served == len(heap) - newest, (served, len(heap), newest)


def test_concurrent_writers_never_make_a_hybrid_read_differ(pumped):
    """Writers change keys, tier keys and rows in small and large transactions while readers compare."""
    db, daemon = pumped
    stop = threading.Event()
    errors = []

    def writer(n):
        rng = random.Random(1900 + n)
        try:
            with psycopg.connect(db.dsn, autocommit=True) as conn:
                while not stop.is_set():
                    with conn.transaction():
                        for _ in range(rng.choice([1, 1, 1, 50])):
                            k = 2 * rng.randrange(1, 3000) + n   # each writer its own keys: no deadlocks
                            op = rng.random()
                            if op < 0.4:
                                conn.execute("UPDATE m SET note = %s, amount = amount + 1 WHERE id = %s",
                                             (f"w{n}", k))
                            elif op < 0.6:
                                conn.execute("UPDATE m SET ts = ts + interval '1 day' WHERE id = %s", (k,))
                            elif op < 0.8:
                                conn.execute("DELETE FROM m WHERE id = %s", (k,))
                            else:
                                conn.execute("INSERT INTO m (id, ts, note) VALUES (%s, '2024-01-03', 'new')"
                                             " ON CONFLICT (id) DO UPDATE SET note = 'again'", (k,))
                    time.sleep(rng.uniform(0, 0.02))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    served_reads = 0
    newer = []
    try:
        with psycopg.connect(db.dsn, autocommit=True) as conn:
            deadline = time.monotonic() + 20
            rounds = 0
            while time.monotonic() < deadline or rounds < 10:
                sql = QUERIES[rounds % len(QUERIES)]
                # every other round in parallel plans: the heap's answers are then read in parallel mode
                parallel = rounds % 2 == 1
                conn.execute(f"SET max_parallel_workers_per_gather = {2 if parallel else 0}")
                conn.execute(f"SET parallel_setup_cost = {0 if parallel else 1000}")
                conn.execute(f"SET parallel_tuple_cost = {0 if parallel else 0.1}")
                conn.execute(f"SET min_parallel_table_scan_size = {0 if parallel else 1024}")
                hybrid, heap, served = both_ways(conn, sql, stats=newer)
                assert hybrid == heap, f"round {rounds}: {sql}"
                served_reads += served > 0
                rounds += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert served_reads >= rounds // 2, f"only {served_reads} of {rounds} reads used the lake:\n{daemon.log()}"
    # the case that needs the heap's answers: batches holding transactions the reader does not see
    assert sum(1 for n in newer if n) >= 3, newer


def test_a_late_mirror_or_an_own_write_reads_the_heap(db, tierdb):
    make_table(db, rows=500)
    register(tierdb)
    run_once(tierdb, "0")
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        conn.execute("UPDATE m SET note = 'late' WHERE id < 100")   # no daemon: F never passes it
        started = time.monotonic()
        hybrid, heap, served = both_ways(conn, QUERIES[0], wait_ms=200)
        assert hybrid == heap and served == 0
        assert time.monotonic() - started < 5
        run_once(tierdb, "0")
        with conn.transaction():
            conn.execute("SET LOCAL tierdb.mirrored_reads = 'hybrid'")
            conn.execute("UPDATE m SET note = 'mine' WHERE id = 5")   # in no batch: the heap answers
            assert conn.execute("SELECT note FROM m WHERE id = 5").fetchone()[0] == "mine"
            assert conn.execute("SELECT count(*) FROM tierdb.cold_rows(NULL::m)").fetchone()[0] == 0


@pytest.mark.parametrize("pumped", [True], ids=["partitioned"], indirect=True)
def test_parallel_and_generic_plans_row_security_and_views(pumped):
    """Production settings users run: parallel plans, cached generic plans, RLS policies, views."""
    db, daemon = pumped
    db.psql("""
        CREATE ROLE hybrid_reader;
        GRANT SELECT ON m TO hybrid_reader;
        GRANT USAGE ON SCHEMA tierdb TO hybrid_reader;
        ALTER TABLE m ENABLE ROW LEVEL SECURITY;
        CREATE POLICY even ON m FOR SELECT TO hybrid_reader USING (id % 2 = 0);
        CREATE VIEW recent_notes AS SELECT id, note FROM m WHERE ts >= '2024-01-03';
        CREATE VIEW my_recent_notes WITH (security_invoker) AS SELECT id, note FROM m WHERE ts >= '2024-01-03';
        GRANT SELECT ON recent_notes, my_recent_notes TO hybrid_reader;
    """)
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        conn.execute("SET tierdb.mirror_wait_ms = 60000")   # see both_ways
        conn.execute("UPDATE m SET note = 'p' || id WHERE id % 9 = 0")
        conn.execute("SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;"
                     " SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0")
        conn.execute("SET tierdb.mirrored_reads = 'hybrid'")
        # (the cold aggregate would plan count(*) without a Gather: cold_agg.c)
        conn.execute("SET tierdb.enable_cold_aggregate = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT count(*) FROM m").fetchall())
        conn.execute("RESET tierdb.enable_cold_aggregate")
        assert "Gather" in plan and reads_cold(plan), plan
        conn.execute("RESET tierdb.mirrored_reads")
        for sql in QUERIES:
            hybrid, heap, served = both_ways(conn, sql)
            assert hybrid == heap and served > 0, sql
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute("PREPARE lookup(bigint) AS SELECT id, note, ts FROM m WHERE id > $1 ORDER BY id")
        for bound in (10, 2000):
            hybrid, heap, served = both_ways(conn, f"EXECUTE lookup({bound})")
            assert hybrid == heap and served > 0, bound
        conn.execute("SET ROLE hybrid_reader")
        for sql in (QUERIES[0], "SELECT * FROM my_recent_notes ORDER BY id"):
            hybrid, heap, _ = both_ways(conn, sql, count_served=False)   # cold_rows would bypass the policy
            assert hybrid == heap and heap and all(row[0] % 2 == 0 for row in heap), sql
        with conn.transaction():
            conn.execute("SET LOCAL tierdb.mirrored_reads = 'hybrid'")
            assert cold_scan_property(conn, "Actual Rows") > 1000, "the reader's rows came from the lake"
        # Spark's capture would hand it lake files its policy cannot filter
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("SELECT * FROM tierdb.hybrid_read_begin('m', 0, 0)")
        # a view reads as its owner, whom the policy does not bind
        hybrid, heap, _ = both_ways(conn, "SELECT * FROM recent_notes ORDER BY id", count_served=False)
        assert hybrid == heap and any(row[0] % 2 for row in heap)
        conn.execute("RESET ROLE")
