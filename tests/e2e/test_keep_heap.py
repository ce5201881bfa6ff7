"""Tiered --keep-heap (SPEC §3, §7; issue 18 part 2): the heap keeps every
row; partitions below T are copied to the lake and kept, their seal replaced
by the trigger tierdb_mirror (cli/tiering.c, extension/src/spill.c,
sql/0.1/48-keep-heap.sql), which carries plain DML on them into the delta;
reads split at T like tiered; `tierdb verify` compares each kept partition
with the lake and the delta row by row.

`events` holds 2024-01-01..10 (test_tiering.make_events), registered with
--keep-heap and tiered below 2024-01-08 (lag 2d); `plain` is an untiered copy.
"""

from __future__ import annotations

import pytest

from test_recovery import wait_daemon_gone
from test_tiering import SESSION, make_events, run_once
from test_transparent_inserts import both, rows, same_tables
from seam import reads_cold

T = "2024-01-08 00:00:00+00"


@pytest.fixture
def kept(db, tierdb):
    make_events(db)
    db.psql("ALTER TABLE events ADD PRIMARY KEY (id, ts); CREATE TABLE plain AS SELECT * FROM events;"
            " ALTER TABLE plain ADD PRIMARY KEY (id, ts)")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts", "--keep-heap"])
    assert proc.returncode == 0, proc.stderr
    proc = run_once(tierdb, "2d")
    assert "keep: tiered partition events_20240101" in proc.stderr, proc.stderr
    return db


def heap_rows(db, where="true"):
    return rows(db, f"SET tierdb.transparent_reads = off; SELECT count(*) FROM events WHERE {where}")


def verify(tierdb):
    proc = tierdb(["verify", "--table", "public.events"])
    return proc.returncode, proc.stdout + proc.stderr


def test_register_keeps_the_heap_and_reads_split_at_t(kept, tierdb):
    db = kept
    assert rows(db, "SELECT keep_heap FROM tierdb.tables") == [("t",)]
    assert rows(db, "SELECT tierdb.tier_key_text(tier_key_hi, 'timestamptz') FROM tierdb.cutline") == [(T,)]
    # every partition stays, none sealed, the tiered ones carry the mirror trigger; no spill partition
    assert heap_rows(db) == [("3000",)]
    assert rows(db, "SELECT tierdb.spill_partition('events')") == [(None,)]
    assert rows(db, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'tierdb_sealed%'") == [("0",)]
    assert rows(db, "SELECT string_agg(tgrelid::regclass::text, ',' ORDER BY tgrelid::regclass::text) FROM pg_trigger"
                    " WHERE tgname = 'tierdb_mirror'") == [(",".join(f"events_2024010{d}" for d in range(1, 8)),)]
    assert rows(db, "SELECT DISTINCT state FROM tierdb.partitions WHERE tier_key_hi <= tier_key_lo + 86400000000"
                    " AND partition_id LIKE '%2024010_' AND partition_id < 'public.events_20240108'") == [("tiered",)]
    # reads below T come from the lake: the plan has the cold scan, and the answers are the heap's
    plan = "\n".join(r[0] for r in rows(db, "EXPLAIN SELECT count(*) FROM events WHERE ts < '2024-01-05'"))
    assert reads_cold(plan), plan
    same_tables(db)
    code, out = verify(tierdb)
    assert code == 0 and "lake and delta" in out, out
    # the daemon's next runs change nothing more
    proc = run_once(tierdb, "2d")
    assert "keep:" not in proc.stderr, proc.stderr


def test_plain_dml_on_kept_partitions_is_mirrored(kept, tierdb):
    db = kept
    for sql in [
        "UPDATE {t} SET v = 'upd' WHERE id % 50 = 0 RETURNING id, v",
        "DELETE FROM {t} WHERE id % 70 = 1 RETURNING id",
        "INSERT INTO {t} VALUES (90001, '2024-01-03 05:00+00', 'old', 1.5), (90002, '2024-01-09', 'new', 2) RETURNING *",
        # tier-key moves within the kept range, out of it, and into it
        "UPDATE {t} SET ts = ts + interval '1 day' WHERE id IN (100, 101) RETURNING id, ts",
        "UPDATE {t} SET ts = ts + interval '6 days' WHERE id IN (150, 151) RETURNING id, ts",
        "UPDATE {t} SET ts = ts - interval '5 days' WHERE id IN (2800, 2801) RETURNING id, ts",
        # a key change
        "UPDATE {t} SET id = id + 500000 WHERE id IN (200, 201) RETURNING id",
        "MERGE INTO {t} e USING (VALUES (10), (2810), (11)) s(id) ON e.id = s.id"
        " WHEN MATCHED AND e.id = 11 THEN DELETE WHEN MATCHED THEN UPDATE SET v = 'merged'",
        "INSERT INTO {t} SELECT id, ts, 'dup', 1 FROM plain WHERE id IN (5, 2805)"
        " ON CONFLICT (id, ts) DO UPDATE SET v = 'conflict' RETURNING *",
    ]:
        got, want = both(db, sql)
        assert sorted(got) == sorted(want), sql
        same_tables(db)
    assert int(rows(db, "SELECT count(*) FROM tierdb.delta")[0][0]) > 0
    code, out = verify(tierdb)
    assert code == 0, out
    # the fold takes the delta into the lake; the heap still holds every row
    run_once(tierdb, "2d")
    assert rows(db, "SELECT count(*) FROM tierdb.delta") == [("0",)]
    same_tables(db)
    assert heap_rows(db) == rows(db, "SELECT count(*) FROM plain")
    code, out = verify(tierdb)
    assert code == 0, out
    # changed again after the fold: read back from lake and delta together
    got, want = both(db, "UPDATE {t} SET amount = 7 WHERE id BETWEEN 95 AND 105 RETURNING id, amount")
    assert sorted(got) == sorted(want)
    same_tables(db)
    assert verify(tierdb)[0] == 0


def test_routed_functions_write_the_heap(kept, tierdb):
    db = kept
    (ts,) = rows(db, "SELECT ts FROM plain WHERE id = 7")[0]
    assert rows(db, f"""SELECT tierdb_upsert('events', '{{"id": 7, "ts": "{ts}", "v": "routed", "amount": 3}}')""") \
        == [("heap",)]
    db.psql(f"UPDATE plain SET v = 'routed', amount = 3 WHERE id = 7")
    (ts,) = rows(db, "SELECT ts FROM plain WHERE id = 8")[0]
    assert rows(db, f"SELECT tierdb_delete('events', '{{\"id\": 8, \"ts\": \"{ts}\"}}', '{ts}'::timestamptz)") == [("heap",)]
    db.psql("DELETE FROM plain WHERE id = 8")
    same_tables(db)
    assert verify(tierdb)[0] == 0


def test_explain_names_the_route(kept):
    for sql, command in [("UPDATE events SET v = 'x' WHERE id = 3", "UPDATE"), ("DELETE FROM events", "DELETE"),
                         ("INSERT INTO events VALUES (1, '2024-01-02', 'x', 1)", "INSERT")]:
        got = [r[0] for r in rows(kept, f"SELECT * FROM tierdb_explain($${sql}$$)")]
        assert got == [f"public.events: {command} runs on the heap, which keeps every row (--keep-heap); its changes"
                       " to rows below T are mirrored into the delta by the trigger tierdb_mirror"], got


def test_verify_finds_an_unmirrored_change(kept, tierdb):
    db = kept
    # with triggers off (session_replication_role = replica) the mirror does not run
    db.psql("SET session_replication_role = replica; UPDATE events SET v = 'unmirrored' WHERE id = 42;"
            " SET session_replication_role = origin")
    code, out = verify(tierdb)
    assert code != 0 and "was not mirrored" in out and "events_20240101" in out, out


def test_register_refuses_keep_heap_with_lake_retention_and_keeps_its_settings(kept, tierdb):
    proc = tierdb(["register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts"])
    assert proc.returncode != 0 and "--keep-heap was given, now not given" in proc.stderr, proc.stderr
    proc = tierdb(["register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts", "--keep-heap"])
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("point", ["tiering-after-seal", "tiering-before-commit", "tiering-after-commit",
                                   "tiering-after-publish", "tiering-mid-keep"])
def test_kill_at_fault_point_then_restart(db, tierdb, point):
    """A keep-heap table's tiering killed at its points: the next run settles it, every tiered partition ends
    kept (unsealed, mirrored) and the table reads as the untiered copy, verify ok."""
    make_events(db)
    db.psql("ALTER TABLE events ADD PRIMARY KEY (id, ts); CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts", "--keep-heap"])
    assert proc.returncode == 0, proc.stderr
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d", "TIERDB_FAULT": point})
    assert proc.returncode == -9 and f"fault point {point} reached" in proc.stderr, proc.stderr
    if point == "tiering-mid-keep":
        assert rows(db, "SELECT count(*) FROM pg_trigger WHERE tgname = 'tierdb_mirror'") == [("1",)]
    wait_daemon_gone(db)
    run_once(tierdb, "2d")
    assert rows(db, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'tierdb_sealed%'") == [("0",)]
    assert rows(db, "SELECT count(*) FROM pg_trigger WHERE tgname = 'tierdb_mirror'") == [("7",)]
    assert rows(db, "SELECT DISTINCT phase FROM tierdb.op_log WHERE op_kind = 'tiering' AND phase <> 'aborted'") \
        == [("done",)]
    same_tables(db)
    got, want = both(db, "UPDATE {t} SET v = 'after' WHERE id % 100 = 0 RETURNING id")
    assert sorted(got) == sorted(want)
    same_tables(db)
    code, out = verify(tierdb)
    assert code == 0, out
