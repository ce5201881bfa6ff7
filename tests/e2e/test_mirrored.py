"""Mirrored mode (issue 19 §1-2; docs/mirrored.md, cli/mirror.c,
cli/mirror_setup.c): `register --mode mirrored` keeps the heap complete and
plain, and the daemon keeps a full Iceberg copy of the table: an initial copy
in resumable chunks, then a pump that reads the table's logical replication
stream and commits each batch of changes as one lake snapshot (equality
deletes plus the newest rows), publishing S and the frontier F together.

Every check compares the heap with the lake at the published S, read back by
the extension's own lake reader (tierdb.lake_scan, which applies Iceberg's
deletes), and counts DuckDB's read of the same snapshot where it can.
"""

from __future__ import annotations

import random

import psycopg
import pytest

import lake_files
import seam  # noqa: F401  (puts tests/interop on the path for spark_support)
from spark_support import spark  # noqa: F401  (the session-scoped Spark fixture)
from test_tiering import run_once

COLUMNS = "id, ts, note, amount, reading, ok, doc, blob"


def make_table(db, partitioned=False, rows=3000):
    """`m`: a merge key, a tier key, payload of many types and a TOASTed text column."""
    part = " PARTITION BY RANGE (ts)" if partitioned else ""
    db.psql(f"""
        CREATE TABLE m (id bigint NOT NULL, ts timestamptz NOT NULL, note text, amount numeric(12,2),
                        reading float8, ok boolean, doc jsonb, blob bytea, PRIMARY KEY (id{', ts' if partitioned else ''})){part};
    """)
    if partitioned:
        db.psql("""DO $$ BEGIN FOR d IN 0..9 LOOP
                     EXECUTE format('CREATE TABLE %I PARTITION OF m FOR VALUES FROM (%L) TO (%L)',
                                    'm_' || d, timestamptz '2024-01-01 00:00+00' + d * interval '1 day',
                                    timestamptz '2024-01-01 00:00+00' + (d + 1) * interval '1 day');
                   END LOOP; END $$""")
    db.psql(f"""INSERT INTO m SELECT g, timestamptz '2024-01-01 00:00+00' + (g % 10) * interval '1 day' + g * interval '1 s',
                       CASE WHEN g % 11 = 0 THEN NULL WHEN g % 97 = 0 THEN repeat('long é ' || g, 3000)
                            ELSE 'n' || g END,
                       (g * 7919 % 200000 - 100000) / 100.0, CASE WHEN g % 29 = 1 THEN 'NaN' ELSE g / 7.0 END,
                       g % 3 = 0, jsonb_build_object('g', g), decode(md5(g::text), 'hex')
                  FROM generate_series(1, {rows}) g""")


def register(tierdb, *extra):
    proc = tierdb(["register", "--table", "public.m", "--pk", "id", "--tier-key", "ts", "--mode", "mirrored",
                   "--lake-partition", "day", *extra])
    assert proc.returncode == 0 and "registered public.m (mirrored)" in proc.stdout, proc.stdout + proc.stderr
    return proc


def state(db):
    return db.query("SELECT lake_snapshot_id, replicated_lsn, (SELECT count(*) FROM tierdb.copy_progress)"
                    " FROM tierdb.cutline")[0]


def lake_rows(db):
    s = state(db)[0]
    if s is None:
        return []
    return db.query(f"SELECT {COLUMNS} FROM tierdb.lake_scan(NULL::m, {s}) ORDER BY id, ts")


def heap_rows(db):
    return db.query(f"SELECT {COLUMNS} FROM m ORDER BY id, ts")


def assert_mirrored(db):
    heap, lake = heap_rows(db), lake_rows(db)
    assert len(lake) == len(heap), (len(lake), len(heap))
    assert lake == heap


@pytest.fixture
def mirrored(db, tierdb):
    make_table(db)
    register(tierdb, "--chunk-rows", "700")
    return db


def test_register_copies_in_chunks_then_follows_changes(mirrored, tierdb):
    db = mirrored
    assert state(db)[2] == "1", "the initial copy is pending"
    pub, slot = db.query("SELECT publication_name, slot_name FROM tierdb.tables")[0]
    assert db.query(f"SELECT count(*) FROM pg_publication WHERE pubname = '{pub}'")[0][0] == "1"
    assert db.query(f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'")[0][0] == "1"
    assert db.query("SELECT relreplident FROM pg_class WHERE relname = 'm'")[0][0] == "f"

    proc = run_once(tierdb, "0")
    assert "copied chunk 5 of the initial copy; the copy is done" in proc.stderr, proc.stderr
    assert state(db)[2] == "0" and state(db)[1] is not None
    assert_mirrored(db)
    # plain DML on the heap, read back from the lake after one cycle
    db.psql("""
        UPDATE m SET note = 'updated ' || id WHERE id % 5 = 0;
        UPDATE m SET ts = ts + interval '3 days' WHERE id % 13 = 0;          -- another lake partition
        UPDATE m SET id = id + 100000 WHERE id % 17 = 0;                     -- another key
        DELETE FROM m WHERE id % 19 = 0;
        INSERT INTO m (id, ts, note) SELECT g, timestamptz '2024-01-02 00:00+00', 'new' FROM generate_series(5001, 5100) g;
        UPDATE m SET ok = NOT ok WHERE id % 97 = 0;                          -- TOASTed note unchanged, not resent
    """)
    before = state(db)
    proc = run_once(tierdb, "0")
    after = state(db)
    assert after[0] != before[0] and int(after[1]) > int(before[1]), (before, after)
    assert_mirrored(db)
    # a cycle with nothing to do changes nothing but may move F
    run_once(tierdb, "0")
    assert state(db)[0] == after[0]
    assert_mirrored(db)


def test_changes_during_the_copy_converge(db, tierdb):
    """Changes between the slot's consistent point and the chunks' snapshots are replayed over the copy."""
    make_table(db)
    register(tierdb, "--chunk-rows", "1000")
    db.psql("""
        UPDATE m SET ts = ts + interval '2 days', note = 'moved' WHERE id % 7 = 0;
        UPDATE m SET ts = ts + interval '1 day' WHERE id % 14 = 0;   -- moved twice, copy sees the last place
        DELETE FROM m WHERE id % 23 = 0;
        INSERT INTO m (id, ts, note) SELECT g, timestamptz '2024-01-05 00:00+00', 'during' FROM generate_series(9001, 9050) g;
    """)
    run_once(tierdb, "0")
    assert_mirrored(db)


def test_random_workload_with_large_transactions(mirrored, tierdb):
    db = mirrored
    run_once(tierdb, "0", TIERDB_MIRROR_BATCH="500")
    rng = random.Random(19)
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        for round_ in range(6):
            with conn.transaction():
                for _ in range(40):
                    k = rng.randrange(1, 4000)
                    op = rng.random()
                    if op < 0.35:
                        conn.execute("INSERT INTO m (id, ts, note, amount) VALUES (%s, %s::timestamptz, %s, %s)"
                                     " ON CONFLICT (id) DO UPDATE SET note = excluded.note",
                                     (k + 10000 * (round_ + 1), f"2024-01-0{rng.randrange(1, 9)} 12:00+00",
                                      f"r{round_}", rng.randrange(-99999, 99999) / 100))
                    elif op < 0.7:
                        conn.execute("UPDATE m SET note = %s, ts = ts + %s * interval '1 hour' WHERE id = %s",
                                     (f"u{round_}", rng.choice([0, 0, 30]), k))
                    elif op < 0.85:
                        conn.execute("UPDATE m SET id = id + 1000000 WHERE id = %s", (k,))
                    else:
                        conn.execute("DELETE FROM m WHERE id = %s", (k,))
            if round_ == 3:
                # one transaction larger than a batch: never split
                conn.execute("UPDATE m SET amount = coalesce(amount, 0) + 1 WHERE id % 3 = 0")
        run_once(tierdb, "0", TIERDB_MIRROR_BATCH="500")
    assert_mirrored(db)


@pytest.mark.parametrize("point", ["mirror-before-commit", "mirror-after-commit", "mirror-after-commit-recorded",
                                   "mirror-after-publish"])
def test_kill_at_each_fault_point_loses_and_duplicates_nothing(mirrored, tierdb, point):
    db = mirrored
    # a kill during the copy (a copy's chunk has no slot to tell: the last point is the pump's alone) ...
    proc = tierdb(["run", "--once"], env={"TIERDB_FAULT": point})
    assert (proc.returncode == 0) == (point == "mirror-after-publish"), proc.stderr
    run_once(tierdb, "0")
    assert_mirrored(db)
    # ... and during the pump
    db.psql("UPDATE m SET note = 'before the kill', ts = ts + interval '1 day' WHERE id % 9 = 0;"
            " DELETE FROM m WHERE id % 31 = 0")
    proc = tierdb(["run", "--once"], env={"TIERDB_FAULT": point})
    assert proc.returncode != 0, proc.stderr
    db.psql("UPDATE m SET note = 'after the kill' WHERE id % 10 = 0")
    run_once(tierdb, "0")
    assert_mirrored(db)
    assert db.query("SELECT count(*) FROM tierdb.op_log WHERE phase NOT IN ('done', 'aborted')")[0][0] == "0"


def test_partitioned_table_and_unregister(db, tierdb):
    make_table(db, partitioned=True)
    register(tierdb)
    db.psql("UPDATE m SET note = 'p' WHERE id % 4 = 0; DELETE FROM m WHERE id % 50 = 0")
    run_once(tierdb, "0")
    assert_mirrored(db)
    # a partition made after registration gets REPLICA IDENTITY FULL from the pump
    db.psql("CREATE TABLE m_new PARTITION OF m FOR VALUES FROM ('2024-02-01') TO ('2024-02-02')")
    run_once(tierdb, "0")
    db.psql("INSERT INTO m (id, ts, note) VALUES (777777, '2024-02-01 05:00+00', 'late');"
            " UPDATE m SET note = 'late too' WHERE id = 777777")
    run_once(tierdb, "0")
    assert_mirrored(db)

    pub, slot = db.query("SELECT publication_name, slot_name FROM tierdb.tables")[0]
    proc = tierdb(["unregister", "--table", "public.m"])
    assert proc.returncode == 0, proc.stderr
    assert db.query(f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'")[0][0] == "0"
    assert db.query(f"SELECT count(*) FROM pg_publication WHERE pubname = '{pub}'")[0][0] == "0"


def test_register_refusals(db, tierdb):
    make_table(db, rows=10)
    proc = tierdb(["register", "--table", "public.m", "--pk", "id", "--tier-key", "ts", "--mode", "mirrored",
                   "--keep-heap"])
    assert proc.returncode != 0 and "--keep-heap applies to tiered and direct tables" in proc.stderr
    proc = tierdb(["register", "--table", "public.m", "--pk", "id", "--tier-key", "ts", "--chunk-rows", "10"])
    assert proc.returncode != 0 and "--chunk-rows sizes a mirrored table's initial copy" in proc.stderr


def test_verify_waits_for_the_mirror_and_finds_a_divergence(mirrored, tierdb, tierdb_bin, lake):
    import subprocess
    from conftest import clean_env
    db = mirrored
    run_once(tierdb, "0")
    db.psql("UPDATE m SET note = 'pending' WHERE id % 3 = 0")

    def verify_during_a_cycle():
        env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake)}
        verify = subprocess.Popen([str(tierdb_bin), "verify", "--table", "public.m"], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # the audit holds writes off until the pump has caught up: daemon cycles until it ends (a cycle
        # that ran before the audit read its WAL position would not do)
        while verify.poll() is None:
            run_once(tierdb, "0")
        out, errors = verify.communicate(timeout=120)
        return verify.returncode, out + errors

    code, out = verify_during_a_cycle()
    assert code == 0 and "mirror: the lake at S holds the heap's" in out, out
    # changes the stream never carries: the heap and the lake diverge, and verify says so
    pub = db.query("SELECT publication_name FROM tierdb.tables")[0][0]
    db.psql(f'ALTER PUBLICATION "{pub}" DROP TABLE m; DELETE FROM m WHERE id = 7; ALTER PUBLICATION "{pub}" ADD TABLE m')
    code, out = verify_during_a_cycle()
    assert code == 1 and "FAIL  mirror: the heap holds 2999 rows, the lake at S 3000" in out, out


def test_a_running_daemon_pumps_between_cycles(mirrored, tierdb_bin, lake):
    """With cycles a minute apart, changes still reach the lake within seconds (TIERDB_MIRROR_FLUSH_MILLIS)."""
    import subprocess
    import time
    from conftest import clean_env
    db = mirrored
    env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), "TIERDB_CYCLE_INTERVAL_SECONDS": "60",
           "TIERDB_MIRROR_FLUSH_MILLIS": "200"}
    daemon = subprocess.Popen([str(tierdb_bin), "run"], env=env, text=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while state(db)[2] != "0" and time.monotonic() < deadline:   # the first cycle copies the table
            time.sleep(0.2)
        db.psql("INSERT INTO m (id, ts, note) VALUES (424242, '2024-01-03 00:00+00', 'between cycles')")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            s = state(db)[0]
            if s and db.query(f"SELECT count(*) FROM tierdb.lake_scan(NULL::m, {s}) WHERE id = 424242")[0][0] == "1":
                break
            time.sleep(0.2)
        assert_mirrored(db)
    finally:
        daemon.terminate()
        _, errors = daemon.communicate(timeout=30)
    assert "stopping on request" in errors, errors


def test_add_column_is_carried_into_the_lake(mirrored, tierdb):
    db = mirrored
    run_once(tierdb, "0")
    db.psql("UPDATE m SET note = 'before' WHERE id % 10 = 0;"
            " ALTER TABLE m ADD COLUMN region text NOT NULL DEFAULT 'eu';"
            " UPDATE m SET region = 'us' WHERE id % 20 = 0;"
            " INSERT INTO m (id, ts, note, region) VALUES (880001, '2024-01-04 00:00+00', 'after', 'apac')")
    run_once(tierdb, "0")
    s = state(db)[0]
    assert db.query(f"SELECT {COLUMNS}, region FROM tierdb.lake_scan(NULL::m, {s}) ORDER BY id") == \
        db.query(f"SELECT {COLUMNS}, region FROM m ORDER BY id")
    # dropped and renamed once the changes before them are in the lake
    db.psql("ALTER TABLE m DROP COLUMN blob")
    db.psql("ALTER TABLE m RENAME COLUMN note TO remark")
    db.psql("UPDATE m SET remark = 'renamed' WHERE id % 15 = 0")
    run_once(tierdb, "0")
    s = state(db)[0]
    columns = "id, ts, remark, amount, reading, ok, doc, region"
    assert db.query(f"SELECT {columns} FROM tierdb.lake_scan(NULL::m, {s}) ORDER BY id") == \
        db.query(f"SELECT {columns} FROM m ORDER BY id")


def test_duckdb_reads_the_mirror(mirrored, tierdb):
    """DuckDB's iceberg extension reads the mirror at S, equality deletes applied."""
    from test_alter_table import duckdb_lake_rows
    db = mirrored
    run_once(tierdb, "0")
    db.psql("UPDATE m SET note = 'changed', ts = ts + interval '2 days' WHERE id % 6 = 0; DELETE FROM m WHERE id % 25 = 0")
    run_once(tierdb, "0")
    ref, s = db.query("SELECT t.lake_table_ref, c.lake_snapshot_id FROM tierdb.tables t JOIN tierdb.cutline c USING (table_id)")[0]
    rows = duckdb_lake_rows({"ref": ref, "S": int(s)}, "id, note")
    assert rows == [tuple(r) for r in db.query("SELECT id, note FROM m ORDER BY 1")]


@pytest.mark.skipif(lake_files.ON_S3, reason="this Spark session reads local lakes; test_readers_s3 has Spark on S3")
def test_spark_reads_the_mirror(mirrored, tierdb, spark):  # noqa: F811
    """Spark's Iceberg runtime reads the mirror at S, equality deletes applied, as the heap holds it."""
    db = mirrored
    run_once(tierdb, "0")
    db.psql("UPDATE m SET note = 'changed', ts = ts + interval '2 days' WHERE id % 6 = 0; DELETE FROM m WHERE id % 25 = 0;"
            " UPDATE m SET id = id + 50000 WHERE id % 35 = 0")
    run_once(tierdb, "0")
    ref, s = db.query("SELECT t.lake_table_ref, c.lake_snapshot_id FROM tierdb.tables t JOIN tierdb.cutline c USING (table_id)")[0]
    df = spark.read.format("iceberg").option("snapshot-id", s).load(ref)
    got = sorted((r["id"], r["note"]) for r in df.select("id", "note").collect())
    assert got == [(int(i), n) for i, n in db.query("SELECT id, note FROM m ORDER BY id")]


def test_kill_at_random_instants_with_live_writers(db, tierdb, tierdb_bin, lake, tmp_path):
    """A continuous daemon is SIGKILLed at seeded random moments while writers change the table; after the
    writers stop and one cycle, the lake equals the heap. TIERDB_MIRROR_SOAK_KILLS sets the kills (5)."""
    import os
    import signal
    import threading
    import time
    from test_tiering import RunningDaemon
    seed = int(os.environ.get("TIERDB_SOAK_SEED", 1919))
    kills = int(os.environ.get("TIERDB_MIRROR_SOAK_KILLS", 5))
    rng = random.Random(seed)
    make_table(db, rows=20000)
    register(tierdb, "--chunk-rows", "3000")
    stop = threading.Event()
    errors = []

    def writer(n):
        wrng = random.Random(seed * 10 + n)
        try:
            with psycopg.connect(db.dsn, autocommit=True) as conn:
                while not stop.is_set():
                    k = wrng.randrange(1, 30000)
                    with conn.transaction():
                        conn.execute("UPDATE m SET note = %s, ts = ts + %s * interval '1 day' WHERE id = %s",
                                     (f"w{n}", wrng.choice([0, 1]), k))
                        conn.execute("INSERT INTO m (id, ts, note) VALUES (%s, '2024-01-05 00:00+00', 'new')"
                                     " ON CONFLICT (id) DO UPDATE SET note = 'again'", (k + 100000,))
                        if wrng.random() < 0.3:
                            conn.execute("DELETE FROM m WHERE id = %s", (wrng.randrange(1, 30000),))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(kills):
            daemon = RunningDaemon(db, tierdb_bin, lake, tmp_path / f"daemon{i}.log",
                                   TIERDB_CYCLE_INTERVAL_SECONDS="1", TIERDB_MIRROR_FLUSH_MILLIS="100",
                                   TIERDB_MIRROR_BATCH=str(rng.choice([50, 500, 5000])))
            time.sleep(rng.uniform(0.3, 2.5))
            daemon.proc.send_signal(signal.SIGKILL)
            daemon.proc.wait()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    run_once(tierdb, "0")
    assert state(db)[2] == "0", f"the copy finished (seed {seed})"
    assert_mirrored(db)
    assert db.query("SELECT count(*) FROM tierdb.op_log WHERE phase NOT IN ('done', 'aborted')")[0][0] == "0"


def test_a_slot_holding_too_much_wal_is_reported(mirrored, tierdb):
    db = mirrored
    run_once(tierdb, "0")
    db.psql("UPDATE m SET note = 'x'")   # a few hundred kB of WAL the slot holds until the pump confirms it
    status = tierdb(["status"], env={"TIERDB_SLOT_WARN_BYTES": "1"})
    assert "slot_wal_bytes" in status.stdout and "WARNING: its replication slot holds" in status.stdout, status.stdout
    proc = run_once(tierdb, "0", TIERDB_SLOT_WARN_BYTES="1")
    assert "WARNING: replication slot" in proc.stderr, proc.stderr
    proc = run_once(tierdb, "0")
    assert "WARNING" not in proc.stderr, proc.stderr


def test_truncate_empties_the_lake_in_one_snapshot(mirrored, tierdb):
    db = mirrored
    run_once(tierdb, "0")
    db.psql("UPDATE m SET note = 'before' WHERE id < 100")
    db.psql("BEGIN; INSERT INTO m (id, ts, note) VALUES (999001, '2024-01-02 00:00+00', 'gone with the truncate');"
            " TRUNCATE m; INSERT INTO m (id, ts, note) VALUES (1, '2024-01-03 00:00+00', 'after'); COMMIT;"
            " INSERT INTO m (id, ts, note) VALUES (2, '2024-01-04 00:00+00', 'later')")
    before = state(db)[0]
    run_once(tierdb, "0")
    assert_mirrored(db)
    assert len(lake_rows(db)) == 2
    ops = db.query("SELECT details->>'truncate' FROM tierdb.op_log WHERE details->>'kind' = 'mirror' ORDER BY updated_at")
    assert ("true",) in ops and state(db)[0] != before
    # a TRUNCATE alone, then the table filled again
    db.psql("TRUNCATE m")
    run_once(tierdb, "0")
    assert lake_rows(db) == []
    db.psql("INSERT INTO m (id, ts, note) SELECT g, '2024-01-05 00:00+00', 'refilled' FROM generate_series(1, 50) g")
    run_once(tierdb, "0")
    assert_mirrored(db)


def test_a_partition_cannot_leave_a_mirrored_table_with_its_rows(db, tierdb):
    """TRUNCATE, DETACH and DROP of a partition are published through no table: refused while it has rows."""
    make_table(db, partitioned=True)
    register(tierdb)
    run_once(tierdb, "0")
    for sql, message in [("TRUNCATE m_3", 'TRUNCATE of partition "m_3" of mirrored table'),
                         ("ALTER TABLE m DETACH PARTITION m_3", 'cannot detach partition "m_3" of mirrored table "m"'),
                         ("DROP TABLE m_3", 'cannot drop partition "m_3" of mirrored table "m"')]:
        assert message in db.error(sql), sql
    # emptied by DELETE (which the mirror follows), the partition may go
    db.psql("DELETE FROM m_3; ALTER TABLE m DETACH PARTITION m_3; DROP TABLE m_3")
    run_once(tierdb, "0")
    assert_mirrored(db)


def test_a_new_partition_gets_full_identity_at_once(db, tierdb):
    make_table(db, partitioned=True)
    register(tierdb)
    run_once(tierdb, "0")
    db.psql("CREATE TABLE m_feb PARTITION OF m FOR VALUES FROM ('2024-02-01') TO ('2024-03-01');"
            " CREATE TABLE m_mar (LIKE m); ALTER TABLE m ATTACH PARTITION m_mar FOR VALUES FROM ('2024-03-01') TO ('2024-04-01')")
    assert db.query("SELECT relname, relreplident FROM pg_class WHERE relname IN ('m_feb', 'm_mar') ORDER BY 1") == \
        [("m_feb", "f"), ("m_mar", "f")]
    # written before the pump ever ran again: the old rows are whole
    db.psql("INSERT INTO m (id, ts, note) VALUES (900001, '2024-02-02 00:00+00', 'feb'), (900002, '2024-03-02 00:00+00', 'mar');"
            " UPDATE m SET note = 'feb too', ts = '2024-03-05 00:00+00' WHERE id = 900001; DELETE FROM m WHERE id = 900002")
    run_once(tierdb, "0")
    assert_mirrored(db)


def test_unregister_while_the_daemon_streams(mirrored, tierdb, tierdb_bin, lake, tmp_path):
    """The running daemon keeps its stream open; unregister ends it, drops the slot, and the daemon goes on."""
    import time
    from test_tiering import RunningDaemon
    db = mirrored
    daemon = RunningDaemon(db, tierdb_bin, lake, tmp_path / "daemon.log", TIERDB_CYCLE_INTERVAL_SECONDS="60",
                           TIERDB_MIRROR_FLUSH_MILLIS="200")
    try:
        slot = db.query("SELECT slot_name FROM tierdb.tables")[0][0]
        deadline = time.monotonic() + 60
        while db.query(f"SELECT active FROM pg_replication_slots WHERE slot_name = '{slot}'")[0][0] != "t":
            assert time.monotonic() < deadline, daemon.log()
            time.sleep(0.2)
        db.psql("UPDATE m SET note = 'streamed' WHERE id < 10")
        proc = tierdb(["unregister", "--table", "public.m"])
        assert proc.returncode == 0, proc.stderr
        assert db.query(f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'")[0][0] == "0"
        time.sleep(1)
        assert daemon.proc.poll() is None, daemon.log()
    finally:
        assert daemon.stop() == 0, daemon.log()
    # one stream per table, started once: not a walsender start per pump run
    assert daemon.log().count("copied chunk") >= 1
