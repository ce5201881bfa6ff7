"""Transparent INSERT and COPY (SPEC §7, issue 18 part 1; extension/src/
spill.c, sql/0.1/47-transparent-writes.sql): rows below the cut-line that a
plain INSERT or COPY writes into a tiered table land in the delta through the
table's spill partition, with RETURNING, row counts, triggers, constraints,
RLS WITH CHECK and privileges as on a plain table.

`events` holds 2024-01-01..10 with the days before T = 2024-01-08 in the
lake (test_transparent_reads.py's fixture); `plain` is an untiered copy.
"""

from __future__ import annotations

import psycopg
import pytest

from test_tiering import SESSION, run_once
from test_transparent_reads import tiered  # noqa: F401 (fixture)

T = "2024-01-08 00:00:00+00"


def rows(db, sql):
    return db.query(SESSION + sql)


def both(db, sql):
    """Runs sql (with {t}) on events and on plain; returns both outputs."""
    return rows(db, sql.format(t="events")), rows(db, sql.format(t="plain"))


def same_tables(db):
    got, want = both(db, "SELECT md5(string_agg(e::text, ',' ORDER BY id)), count(*) FROM {t} e")
    assert got == want


def delta_rows(db):
    return int(rows(db, "SELECT count(*) FROM tierdb.delta")[0][0])


def spill_rows(db):
    return rows(db, "SET tierdb.transparent_reads = off; SELECT count(*) FROM ONLY events_tierdb_spill")


def test_register_creates_the_spill_partition(tiered):
    db = tiered
    assert rows(db, "SELECT tierdb.spill_partition('events')::text") == [("events_tierdb_spill",)]
    assert spill_rows(db) == [("0",)]


def test_insert_values_returning_and_counts(tiered):
    db = tiered
    before = delta_rows(db)
    for sql in [
        "INSERT INTO {t} VALUES (10001, '2024-01-03 01:02:03.5', 'cold', 1.25) RETURNING *",
        "INSERT INTO {t} VALUES (10002, '2024-01-02', 'c2', 2), (10003, '2024-01-09 12:00', 'h3', 3),"
        " (10004, '2024-01-07 23:59:59.999999', NULL, NULL) RETURNING id, ts, v, amount",
        "INSERT INTO {t} (id, ts) SELECT 20000 + g, timestamptz '2024-01-10' - g * interval '17 hours'"
        " FROM generate_series(1, 12) g RETURNING id, ts",
        "WITH i AS (INSERT INTO {t} VALUES (10005, '2024-01-01', 'x', 5) RETURNING 1) SELECT count(*) FROM i",
    ]:
        got, want = both(db, sql)
        assert got == want and got, sql
    assert delta_rows(db) == before + 1 + 2 + 10 + 1  # (20001..20012: 10 of 12 are below T)
    assert spill_rows(db) == [("0",)]
    same_tables(db)
    # the command tag counts every row
    out = db.run_psql(SESSION + "\\set QUIET off\nINSERT INTO events VALUES (10006, '2024-01-02', 'a', 1), "
                      "(10007, '2024-01-09', 'b', 1)")
    assert "INSERT 0 2" in out.stdout, out


def test_copy_counts_and_lands_in_the_delta(tiered):
    db = tiered
    data = "".join(f"{30000 + i}\t2024-01-0{1 + i % 9} 03:00:00+00\tcopy{i}\t{i}.5\n" for i in range(50))
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        for table in ("events", "plain"):
            with conn.cursor() as cur:
                with cur.copy(f"COPY {table} FROM STDIN") as copy:
                    copy.write(data)
                assert cur.rowcount == 50
    same_tables(db)
    assert spill_rows(db) == [("0",)]


def test_cold_rows_fold_and_verify(tiered, tierdb):
    db = tiered
    for t in ("events", "plain"):
        db.psql(SESSION + f"INSERT INTO {t} SELECT 40000 + g, timestamptz '2024-01-01' + g * interval '1 hour',"
                " 'f' || g, g FROM generate_series(1, 200) g")
    assert delta_rows(db) > 100
    run_once(tierdb, "2d")
    assert delta_rows(db) == 0
    same_tables(db)
    proc = tierdb(["verify", "--table", "public.events"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_duplicate_keys_are_unique_violations(tiered, tierdb):
    db = tiered
    # in the lake, in the heap, in the delta, and twice in one statement
    for sql in [
        "INSERT INTO events VALUES (5, '2024-01-02', 'dup', 1)",
        "INSERT INTO events VALUES (2999, '2024-01-02', 'dup', 1)",
    ]:
        err = db.error(SESSION + sql)
        assert "23505" in err and "duplicate key" in err and "tierdb_upsert" in err, err
    db.psql(SESSION + "INSERT INTO events VALUES (50001, '2024-01-02', 'once', 1)")
    err = db.error(SESSION + "INSERT INTO events VALUES (50001, '2024-01-03', 'twice', 1)")
    assert "23505" in err and "Key (id)=(50001)" in err, err
    err = db.error(SESSION + "INSERT INTO events VALUES (50002, '2024-01-02', 'a', 1), (50002, '2024-01-03', 'b', 1)")
    assert "23505" in err, err
    assert rows(db, "SELECT id, v FROM events WHERE id IN (5, 50001, 50002) ORDER BY id") == [
        ("5", "v5é"), ("50001", "once")]
    # a deleted cold row's key is free again
    assert rows(db, "SELECT tierdb_delete('events', '6', (SELECT ts FROM events WHERE id = 6))") == [("delta",)]
    db.psql(SESSION + "INSERT INTO events VALUES (6, '2024-01-05', 'again', 1)")
    run_once(tierdb, "2d")
    assert rows(db, "SELECT id, ts, v FROM events WHERE id = 6") == [("6", "2024-01-05 00:00:00+00", "again")]
