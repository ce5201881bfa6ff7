"""SELECT ... FOR UPDATE/SHARE of a tiered table (extension/src/cold_dml.c,
spill.c): it returns the rows of both tiers, as a plain table would, and
locks the cold ones by key, as every writer of a cold row locks it, so a
concurrent UPDATE, DELETE or lock of a locked cold row waits (or, with
NOWAIT and SKIP LOCKED, does not) until the locker ends.

`events` holds 2024-01-01..10 with the days before T = 2024-01-08 in the
lake (test_transparent_reads.py's fixture); `plain` is an untiered copy.
"""

from __future__ import annotations

import threading

import psycopg
import pytest

from test_tiering import SESSION
from test_transparent_inserts import rows, same_tables, spill_rows
from test_transparent_reads import tiered  # noqa: F401 (fixture)
from test_transparent_updates import same


def test_locking_reads_return_both_tiers(tiered):
    db = tiered
    for clause in ("FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"):
        same(db, f"BEGIN; SELECT id, ts, v FROM {{t}} WHERE id % 97 = 0 {clause}; COMMIT")
        assert same(db, f"BEGIN; SELECT count(*) FROM (SELECT id FROM {{t}} {clause}) x; COMMIT") == [("3000",)]
    for sql in [
        # a join locking one side, with the cold side brought in by key (a parameterized scan)
        "BEGIN; SELECT e.id, e.v FROM {t} e JOIN (VALUES (5), (6), (2905)) k(id) USING (id) FOR UPDATE OF e; COMMIT",
        # ordered and limited; a condition on the tier key alone
        "BEGIN; SELECT id FROM {t} ORDER BY id LIMIT 7 FOR UPDATE; COMMIT",
        "BEGIN; SELECT id, amount FROM {t} WHERE ts < '2024-01-02' AND id % 10 = 3 FOR SHARE; COMMIT",
        # a prepared statement on a generic plan, and a cursor
        "SET plan_cache_mode = force_generic_plan; PREPARE l(bigint) AS SELECT * FROM {t} WHERE id = $1 FOR UPDATE;"
        " BEGIN; EXECUTE l(3); EXECUTE l(2950); EXECUTE l(4); COMMIT",
        "BEGIN; DECLARE c CURSOR FOR SELECT id FROM {t} WHERE id % 50 = 0 ORDER BY id FOR UPDATE;"
        " FETCH 10 FROM c; FETCH 3 FROM c; CLOSE c; COMMIT",
    ]:
        same(db, sql)
    # the rows brought in to be locked are gone again, nothing changed
    assert spill_rows(db) == [("0",)]
    assert rows(db, "SELECT count(*) FROM tierdb.delta") == [("0",)]
    same_tables(db)


def test_locked_then_changed_in_the_same_transaction(tiered):
    db = tiered
    same(db, "BEGIN; SELECT id FROM {t} WHERE id IN (7, 8) FOR UPDATE;"
             " UPDATE {t} SET v = 'locked' WHERE id = 7; DELETE FROM {t} WHERE id = 8;"
             " SELECT id, v FROM {t} WHERE id IN (7, 8) FOR UPDATE; COMMIT")
    same_tables(db)
    assert spill_rows(db) == [("0",)]


def test_rls_filters_locked_rows(tiered):
    db = tiered
    db.psql("""
        DROP ROLE IF EXISTS clerk; CREATE ROLE clerk;
        GRANT SELECT, UPDATE ON events, plain TO clerk;
        ALTER TABLE events ENABLE ROW LEVEL SECURITY; ALTER TABLE plain ENABLE ROW LEVEL SECURITY;
        CREATE POLICY r ON events FOR SELECT USING (id % 2 = 0);
        CREATE POLICY r ON plain FOR SELECT USING (id % 2 = 0);
        CREATE POLICY u ON events FOR UPDATE USING (id % 3 = 0);
        CREATE POLICY u ON plain FOR UPDATE USING (id % 3 = 0);
    """)
    try:
        # FOR UPDATE sees the rows both the SELECT and the UPDATE policies let through
        got = same(db, "SET ROLE clerk; BEGIN; SELECT id FROM {t} WHERE id < 100 FOR UPDATE; COMMIT")
        assert got and all(int(r[0]) % 6 == 0 for r in got), got
        # and needs the UPDATE privilege
        db.psql("REVOKE UPDATE ON events, plain FROM clerk")
        for t in ("events", "plain"):
            err = db.error(SESSION + f"SET ROLE clerk; SELECT id FROM {t} WHERE id < 10 FOR UPDATE")
            assert "permission denied" in err, err
        same(db, "SET ROLE clerk; BEGIN; SELECT id FROM {t} WHERE id < 100; COMMIT")
    finally:
        db.psql("ALTER TABLE events DISABLE ROW LEVEL SECURITY; ALTER TABLE plain DISABLE ROW LEVEL SECURITY;"
                " DROP POLICY r ON events; DROP POLICY r ON plain; DROP POLICY u ON events; DROP POLICY u ON plain;"
                " REVOKE ALL ON events, plain FROM clerk; DROP ROLE clerk")


def in_thread(fn):
    """Runs fn in a thread; returns the thread and a list that receives its result or exception."""
    out = []

    def run():
        try:
            out.append(fn())
        except Exception as e:  # noqa: BLE001 (handed to the test)
            out.append(e)
    t = threading.Thread(target=run)
    t.start()
    return t, out


@pytest.mark.parametrize("writer", [
    "UPDATE events SET amount = amount + 10 WHERE id = 33",
    "DELETE FROM events WHERE id = 33",
    "SELECT id FROM events WHERE id = 33 FOR UPDATE",
])
def test_a_locked_cold_row_blocks_its_writers(tiered, writer):
    db = tiered
    locker = psycopg.connect(db.dsn)
    other = psycopg.connect(db.dsn, autocommit=True)
    try:
        assert locker.execute("SELECT id FROM events WHERE id = 33 FOR UPDATE").fetchall() == [(33,)]
        t, out = in_thread(lambda: other.execute(writer).rowcount)
        t.join(1.5)
        assert t.is_alive(), out  # waiting for the lock
        locker.rollback()
        t.join(30)
        assert out == [1], out
    finally:
        locker.close()
        other.close()


def test_a_writer_after_the_lock_sees_the_lockers_change_or_retries(tiered):
    """The locker changes the row and commits: the waiting writer read the row before that, so it must not
    overwrite the change: it fails with a serialization error to retry."""
    db = tiered
    locker = psycopg.connect(db.dsn)
    other = psycopg.connect(db.dsn, autocommit=True)
    try:
        locker.execute("SELECT id FROM events WHERE id = 33 FOR UPDATE")
        t, out = in_thread(lambda: other.execute("UPDATE events SET amount = amount + 10 WHERE id = 33").rowcount)
        t.join(1.5)
        assert t.is_alive()
        locker.execute("UPDATE events SET amount = amount + 1 WHERE id = 33")
        locker.commit()
        t.join(30)
        assert len(out) == 1 and isinstance(out[0], psycopg.errors.SerializationFailure), out
        (amount,), = rows(db, "SELECT amount FROM events WHERE id = 33")
        (base,), = rows(db, "SELECT amount FROM plain WHERE id = 33")
        assert float(amount) == float(base) + 1
    finally:
        locker.close()
        other.close()


def test_share_locks_share_and_nowait_and_skip_locked_do_not_wait(tiered):
    db = tiered
    locker = psycopg.connect(db.dsn)
    other = psycopg.connect(db.dsn)
    try:
        locker.execute("SELECT id FROM events WHERE id = 33 FOR SHARE")
        # another share lock is granted at once; NOWAIT for an exclusive one fails at once
        assert other.execute("SELECT id FROM events WHERE id = 33 FOR KEY SHARE NOWAIT").fetchall() == [(33,)]
        other.rollback()
        with pytest.raises(psycopg.errors.LockNotAvailable):
            other.execute("SELECT id FROM events WHERE id = 33 FOR UPDATE NOWAIT")
        other.rollback()
        # SKIP LOCKED leaves the locked row out, cold and hot alike
        locker.execute("SELECT id FROM events WHERE id = 2950 FOR UPDATE")
        got = other.execute("SELECT id FROM events WHERE id IN (33, 34, 2950, 2951) ORDER BY id"
                            " FOR UPDATE SKIP LOCKED").fetchall()
        assert got == [(34,), (2951,)], got
        other.rollback()
        locker.rollback()
        got = other.execute("SELECT id FROM events WHERE id IN (33, 34) ORDER BY id FOR UPDATE SKIP LOCKED").fetchall()
        assert got == [(33,), (34,)], got
    finally:
        locker.close()
        other.close()


def test_explain_and_tables_without_transparent_writes(tiered):
    db = tiered
    plan = "\n".join(r[0] for r in rows(db, "EXPLAIN SELECT * FROM events WHERE id = 3 FOR UPDATE"))
    assert "TierDB Cold Rows" in plan and "Locks Rows: FOR UPDATE" in plan, plan
    # without the spill partition the cold rows cannot be locked: refused, unless the heap's rows are all it reads
    db.psql("SELECT tierdb_disable_transparent_writes('events')")
    err = db.error(SESSION + "BEGIN; SELECT * FROM events WHERE id = 3 FOR UPDATE")
    assert 'SELECT ... FOR UPDATE of table "public.events" may reach rows below its cut-line' in err, err
    assert "tierdb_enable_transparent_writes('public.events')" in err, err
    assert rows(db, "BEGIN; SELECT count(*) FROM (SELECT * FROM events WHERE ts >= '2024-01-08' FOR UPDATE) x;"
                    " COMMIT") == [("900",)]
    db.psql("SELECT tierdb_enable_transparent_writes('events')")
    assert rows(db, "BEGIN; SELECT count(*) FROM (SELECT * FROM events FOR UPDATE) x; COMMIT") == [("3000",)]
