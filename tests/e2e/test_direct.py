"""Direct mode (issue 18 §3; docs/direct.md, extension/src/direct.c,
cli/direct.c): `register --mode direct` registers a range-partitioned table
whose rows below the cut-line live in the lake alone. Every write path of a
tiered table works on it (plain INSERT/UPDATE/DELETE/MERGE/COPY through the
spill partition, tierdb_upsert and tierdb_delete); what a transaction wrote
below T is committed to the lake as one Iceberg snapshot when it commits,
and published with it, so no other session ever sees a delta row of the
table. A transaction that fails after its lake commit leaves a snapshot that
nobody reads, which the next writer, or the daemon, rolls back.

Each statement runs on `events` (direct) and on `plain`, an untiered copy,
and must give the same output and contents.

The Postgres server writes the lake of a direct table, so on a local
warehouse the daemon here runs as the server's OS user, as the embedded
worker does (docs/direct.md, "Permissions").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

import psycopg
import pytest

import lake_files
from conftest import clean_env
from test_alter_table import duckdb_lake_rows
from test_tiering import SESSION, make_events, run_once
from test_transparent_inserts import both, same_tables
from test_transparent_reads import QUERIES
from test_transparent_updates import same


@pytest.fixture
def as_server_user(tierdb_bin, db, lake):
    """`tierdb` as the OS user the server runs as, owning the (local) warehouse."""
    if not lake_files.ON_S3:
        shutil.chown(lake, "postgres", "postgres")

    def run(args, env=None, timeout=120, input=None):
        full_env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), **(env or {})}
        return subprocess.run(["runuser", "-u", "postgres", "--", str(tierdb_bin), *map(str, args)],
                              capture_output=True, text=True, timeout=timeout, env=full_env, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL)
    return run


@pytest.fixture
def direct(db, as_server_user):
    """events (10 daily partitions, 3000 rows) registered --mode direct, 2024-01-01..07 tiered; `plain`, a copy."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = as_server_user(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "direct"])
    assert proc.returncode == 0 and "registered public.events (direct)" in proc.stdout, proc.stdout + proc.stderr
    run_once(as_server_user, "2d")
    return db


def snapshot(db):
    return db.query("SELECT lake_snapshot_id FROM tierdb.cutline")[0][0]


def direct_ops(db):
    return int(db.query("SELECT count(*) FROM tierdb.op_log WHERE details->>'kind' = 'direct'")[0][0])


def lake_current(db):
    """The lake's current snapshot as its newest metadata says (what engines reading the lake directly see)."""
    ref = db.query("SELECT lake_table_ref FROM tierdb.tables")[0][0]
    metadata = sorted(lake_files.list_files(f"{ref}/metadata", ".metadata.json"),
                      key=lambda p: int(p.rsplit("/", 1)[-1][1:].split(".")[0]))[-1]
    current = lake_files.read_json(metadata)["current-snapshot-id"]
    return str(current) if current is not None and current != -1 else None


def check_consistent(db, as_server_user):
    same_tables(db)
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]
    assert lake_current(db) == snapshot(db)
    proc = as_server_user(["verify", "--table", "public.events"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_direct_tables_tier_and_read_both_tiers(direct, as_server_user):
    db = direct
    assert db.query("SELECT mode FROM tierdb.tables") == [("direct",)]
    assert int(db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM events")[0][0]) == 900
    for sql in QUERIES:
        same(db, sql)
    check_consistent(db, as_server_user)


def test_cold_writes_commit_to_the_lake_with_their_transaction(direct, as_server_user):
    db = direct
    for sql in [
        "UPDATE {t} SET v = 'direct-' || id WHERE id % 97 = 0 RETURNING id, ts, v",
        "DELETE FROM {t} WHERE id % 89 = 1 RETURNING id",
        "INSERT INTO {t} VALUES (9000, '2024-01-02 03:00', 'cold insert', 1.5), (9001, '2024-01-09', 'hot', 2)"
        " RETURNING id",
        # tier-key moves: cold -> cold, cold -> hot, hot -> cold
        "UPDATE {t} SET ts = ts + interval '2 days' WHERE id IN (7, 8) RETURNING id, ts",
        "UPDATE {t} SET ts = ts + interval '8 days' WHERE id = 9 RETURNING id, ts",
        "UPDATE {t} SET ts = ts - interval '8 days' WHERE id = 2905 RETURNING id, ts",
        "MERGE INTO {t} e USING (VALUES (10, 'm'), (2950, 'm'), (9100, 'new')) s(id, v) ON e.id = s.id"
        " WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, '2024-01-03', s.v, 0)",
    ]:
        before, ops = snapshot(db), direct_ops(db)
        same(db, sql)
        assert snapshot(db) != before and direct_ops(db) == ops + 1, sql
        check_consistent(db, as_server_user)
    # a transaction of several statements reads its own writes and commits one snapshot
    ops = direct_ops(db)
    same(db, "BEGIN; UPDATE {t} SET v = 'one' WHERE id = 20; DELETE FROM {t} WHERE id = 21;"
             " SELECT id, v FROM {t} WHERE id IN (20, 21, 22) ORDER BY id;"
             " UPDATE {t} SET v = v || ' two' WHERE id IN (20, 22); SELECT id, v FROM {t} WHERE id BETWEEN 19 AND 23;"
             " COMMIT")
    assert direct_ops(db) == ops + 1
    explained = db.query("SELECT * FROM tierdb_explain($$UPDATE events SET v = 'x' WHERE id = 3$$)")
    assert any("committed to the lake as one snapshot when it commits" in r[0] for r in explained), explained
    # COPY, and the routed functions
    for t in ("events", "plain"):
        db.psql(SESSION + f"COPY {t} FROM STDIN;\n9200\t2024-01-04 00:00:00+00\tcopied\t3\n\\.\n")
    db.psql("SELECT tierdb_upsert('events', '{\"id\": 30, \"ts\": \"2024-01-01T02:24:00+00:00\", \"v\": \"up\"}');"
            " SELECT tierdb_delete('events', '{\"id\": 31}'::jsonb, (SELECT ts FROM plain WHERE id = 31))")
    db.psql(SESSION + "UPDATE plain SET ts = '2024-01-01 02:24:00+00', v = 'up', amount = NULL WHERE id = 30;"
                      " DELETE FROM plain WHERE id = 31")
    check_consistent(db, as_server_user)
    # and the daemon goes on tiering the table
    run_once(as_server_user, "1d")
    check_consistent(db, as_server_user)


def test_a_rolled_back_transaction_commits_nothing(direct, as_server_user):
    db = direct
    before, current = snapshot(db), lake_current(db)
    db.psql(SESSION + "BEGIN; UPDATE events SET v = 'gone' WHERE id < 50; ROLLBACK;"
                      " BEGIN; UPDATE events SET v = 'gone too' WHERE id = 60; SAVEPOINT a;"
                      " DELETE FROM events WHERE id = 61; ROLLBACK TO a; COMMIT")
    db.psql(SESSION + "UPDATE plain SET v = 'gone too' WHERE id = 60")
    check_consistent(db, as_server_user)
    assert lake_current(db) != current and snapshot(db) != before  # the second transaction's


@pytest.mark.parametrize("fault", ["direct-after-lake-commit", "direct-after-lake-commit:fatal"])
def test_a_transaction_that_fails_after_its_lake_commit_is_rolled_back(direct, as_server_user, fault):
    """The lake holds the failed transaction's snapshot, which nobody reads; the next direct commit rolls it
    back before its own, and the daemon does on its next cycle."""
    db = direct
    for undo_by in ("the next commit", "the daemon"):
        before = snapshot(db)
        err = db.error(f"SET tierdb.test_fault = '{fault}'; UPDATE events SET v = 'lost' WHERE id = 40")
        assert "tierdb.test_fault" in err or "terminat" in err or "closed" in err, err
        assert snapshot(db) == before and lake_current(db) != before, "the lake holds an unpublished snapshot"
        same_tables(db)  # readers never see it
        if undo_by == "the next commit":
            same(db, "UPDATE {t} SET v = 'kept' WHERE id = 41 RETURNING id, v")
        else:
            run_once(as_server_user, "2d")
        check_consistent(db, as_server_user)


def test_concurrent_transactions_commit_one_after_the_other(direct, as_server_user):
    db = direct
    first = psycopg.connect(db.dsn)
    second = psycopg.connect(db.dsn)
    try:
        first.execute("UPDATE events SET v = 'first' WHERE id = 50")
        second.execute("UPDATE events SET v = 'second' WHERE id = 51")
        done = []
        first.commit()
        t = threading.Thread(target=lambda: (second.commit(), done.append(True)))
        t.start()
        t.join(30)
        assert done
        db.psql("UPDATE plain SET v = 'first' WHERE id = 50; UPDATE plain SET v = 'second' WHERE id = 51")
        check_consistent(db, as_server_user)
        # under REPEATABLE READ a transaction whose snapshot predates another's lake commit must retry
        second.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        second.execute("SELECT count(*) FROM events WHERE id = 1").fetchall()
        first.execute("UPDATE events SET v = 'first again' WHERE id = 52")
        first.commit()
        with pytest.raises(psycopg.errors.SerializationFailure):
            # refused when it reaches the cold row, or else when it commits
            second.execute("UPDATE events SET v = 'second again' WHERE id = 53")
            second.commit()
        second.rollback()
        db.psql("UPDATE plain SET v = 'first again' WHERE id = 52")
        check_consistent(db, as_server_user)
    finally:
        first.close()
        second.close()


def test_a_concurrent_update_of_a_cold_row_is_not_lost(direct, as_server_user):
    """The second writer of a cold row waits for the first; the first's change is committed to the lake and
    leaves no delta row to compare with, so the second, which read the row before, must retry."""
    db = direct
    first = psycopg.connect(db.dsn)
    second = psycopg.connect(db.dsn, autocommit=True)
    try:
        first.execute("UPDATE events SET amount = amount + 1 WHERE id = 33")
        errors = []

        def other():
            try:
                second.execute("UPDATE events SET amount = amount + 10 WHERE id = 33")
            except psycopg.errors.SerializationFailure as e:
                errors.append(e)
        t = threading.Thread(target=other)
        t.start()
        t.join(1.5)
        assert t.is_alive()  # waiting for the pk's lock
        first.commit()
        t.join(30)
        assert len(errors) == 1, "the second update must not overwrite the first"
        db.psql("UPDATE plain SET amount = amount + 1 WHERE id = 33")
        check_consistent(db, as_server_user)
        # and a cold INSERT of a key another transaction just committed is a duplicate, not a second copy
        first.execute("INSERT INTO events VALUES (7000, '2024-01-03', 'x', 1)")
        t = threading.Thread(target=lambda: errors.append(db.error(
            "INSERT INTO events VALUES (7000, '2024-01-04', 'y', 2)")))
        t.start()
        t.join(1.5)
        first.commit()
        t.join(30)
        assert "duplicate key" in errors[-1] or "could not serialize" in errors[-1], errors[-1]
        db.psql("INSERT INTO plain VALUES (7000, '2024-01-03', 'x', 1)")
        check_consistent(db, as_server_user)
    finally:
        first.close()
        second.close()


def test_prepared_transactions_are_refused(direct):
    db = direct
    err = db.error("BEGIN; UPDATE events SET v = 'x' WHERE id = 3; PREPARE TRANSACTION 'p'")
    assert "cannot PREPARE a transaction that wrote rows below the cut-line of direct table" in err, err
    # one that wrote only hot rows prepares and commits as usual
    db.psql("BEGIN; UPDATE events SET v = 'x' WHERE id = 2950; PREPARE TRANSACTION 'hot'; COMMIT PREPARED 'hot'")
    db.psql("UPDATE plain SET v = 'x' WHERE id = 2950")
    same_tables(db)


def test_other_engines_read_the_direct_commits(direct, as_server_user):
    """DuckDB's iceberg_scan reads the lake at S as Postgres does: the direct commits' equality deletes and
    data files applied."""
    db = direct
    same(db, "UPDATE {t} SET v = 'engines' WHERE id % 50 = 0 AND ts < '2024-01-08' RETURNING id")
    same(db, "DELETE FROM {t} WHERE id % 70 = 1 AND ts < '2024-01-08' RETURNING id")
    ref, s_id = db.query("SELECT t.lake_table_ref, c.lake_snapshot_id FROM tierdb.tables t JOIN tierdb.cutline c"
                         " USING (table_id)")[0]
    got = duckdb_lake_rows({"ref": ref, "S": int(s_id)}, "id, v")
    want = db.query("SELECT id, v FROM plain WHERE ts < '2024-01-08' ORDER BY id")
    assert got == [(i, v or None) for i, v in want]


def test_register_checks_the_mode(db, tierdb):
    make_events(db)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "direct",
                   "--keep-heap"])
    assert proc.returncode != 0 and "--keep-heap is not supported with --mode direct" in proc.stderr, proc.stderr
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "direct"])
    assert proc.returncode == 0, proc.stderr
    # registered again the same way: nothing to do; with another mode: refused, naming the difference
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "direct"])
    assert proc.returncode == 0, proc.stderr
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode != 0 and "--mode was direct, now tiered" in proc.stderr, proc.stderr
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "mirrored"])
    assert proc.returncode != 0 and "--mode was direct, now mirrored" in proc.stderr, proc.stderr
    assert db.query("SELECT count(*) FROM pg_replication_slots")[0][0] == "0", "nothing made for a refused mode"
