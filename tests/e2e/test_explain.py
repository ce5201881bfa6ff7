"""tierdb_explain(text) (extension/src/explain.c, sql/0.1/50-explain.sql):
where a statement's rows come from or go to, one line per fact, without
running the statement or writing anything.

The table is the `tiered` fixture's events: ten daily partitions from
2024-01-01, the first seven in the lake (one data file per day), so T is
2024-01-08, and the heap holds events_20240108 .. events_20240112 (the
daemon makes partitions ahead).
"""

from __future__ import annotations

import re

from test_tiering import SESSION, cutline
from test_transparent_reads import tiered  # noqa: F401 (the fixture)

T = "2024-01-08 00:00:00+00"
HEAP = "(partitions events_20240108 .. events_20240112)"  # the daemon premakes two days
DAY_USEC = 86400 * 1_000_000
JAN_1 = 1704067200 * 1_000_000  # 2024-01-01 00:00:00+00, canonical


def explain(db, statement, session=""):
    """The lines of tierdb_explain(statement), in order."""
    literal = "$stmt$" + statement + "$stmt$"
    return [r[0] for r in db.query(SESSION + session + f"SELECT * FROM tierdb_explain({literal})")]


def state(db):
    """What a write would change: delta rows, heap rows, read pins, the cut-line."""
    return db.query(
        "SET tierdb.transparent_reads = off;"
        " SELECT (SELECT count(*) FROM tierdb.delta), (SELECT count(*) FROM events),"
        " (SELECT count(*) FROM tierdb.read_pins),"
        " (SELECT string_agg(row(c.*)::text, ';') FROM tierdb.cutline c)")


def files(line):
    """(kept, total) data files of a transparent-read line."""
    m = re.search(r"\((\d+) of (\d+) data files after pruning\)", line)
    assert m, line
    return int(m.group(1)), int(m.group(2))


def test_a_full_scan_reads_the_heap_above_t_and_the_lake(tiered):
    db = tiered
    s = cutline(db, "events")["S"]
    (line,) = explain(db, "SELECT count(*) FROM events")
    assert line.startswith(f"public.events: reads the heap at or above T {T} {HEAP}"
                           f" and the lake at snapshot {s} ("), line
    assert line.endswith("merged with 0 delta rows"), line
    assert files(line) == (7, 7), line


def test_a_query_at_or_above_t_does_not_read_the_lake(tiered):
    (line,) = explain(tiered, "SELECT * FROM events WHERE ts >= '2024-01-09' AND id > 5")
    assert line == (f"public.events: reads the heap at or above T {T} (partitions events_20240109 .. events_20240112)"
                    " and the lake is not read: the conditions keep the query at or above T"), line


def test_conditions_prune_lake_files_and_heap_partitions(tiered):
    (line,) = explain(tiered, "SELECT * FROM events WHERE ts < '2024-01-02' AND id < 10")
    assert f"at or above T {T} (no partition)" in line, line
    assert files(line) == (1, 7), line
    # Partitions still in the heap but below T are skipped at run time, and not listed.
    (line,) = explain(tiered, "SELECT * FROM events WHERE ts >= '2024-01-06' AND ts < '2024-01-09'")
    assert f"(partition events_20240108)" in line and files(line) == (2, 7), line


def heap_partitions_run(db, sql):
    """The heap partitions a run of `sql` really scans, by EXPLAIN ANALYZE."""
    plan = [r[0] for r in db.query(SESSION + "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql)]
    names = {m.group(1) for line in plan if "never executed" not in line
             for m in [re.search(r" on (events_\d{8})\b", line)] if m}
    return sorted(names)


def test_listed_heap_partitions_are_the_ones_a_run_scans(tiered):
    db = tiered
    # T moved a day up: events_20240108 is still in the heap, but below T.
    db.psql("UPDATE tierdb.cutline SET tier_key_hi = tier_key_hi + 86400000000")
    for sql in [
        "SELECT * FROM events",
        "SELECT * FROM events WHERE ts < '2024-01-02'",
        "SELECT * FROM events WHERE ts >= '2024-01-06' AND ts < '2024-01-11'",
        "SELECT * FROM events WHERE ts > '2024-01-10 12:00' AND id > 5",
        "SELECT count(*) FROM events WHERE ts = '2024-01-09 06:00:00+00'",
    ]:
        (line,) = explain(db, sql)
        run = heap_partitions_run(db, sql)
        m = re.search(r"T 2024-01-09 00:00:00\+00 \((.*?)\) and", line)
        assert m, line
        want = ("no partition" if not run else f"partition {run[0]}" if len(run) == 1
                else f"partitions {run[0]} .. {run[-1]}")
        assert m.group(1) == want, (sql, line, run)


def test_each_reference_is_explained(tiered):
    lines = explain(tiered, "SELECT count(*) FROM events a JOIN events b ON a.id = b.id + 1"
                            " WHERE a.ts >= '2024-01-10'")
    assert len(lines) == 2, lines
    assert sum("the lake is not read" in x for x in lines) == 1, lines
    assert sum("the lake at snapshot" in x for x in lines) == 1, lines
    # Subqueries and CTEs too.
    lines = explain(tiered, "WITH w AS (SELECT id FROM events WHERE id < 100)"
                            " SELECT (SELECT max(id) FROM events WHERE ts > '2024-01-09'), count(*) FROM w")
    assert len(lines) == 2 and all(x.startswith("public.events: reads the heap") for x in lines), lines
    # Two references the planner puts under one Append keep their own partitions.
    lines = explain(tiered, "SELECT * FROM events UNION ALL SELECT * FROM events WHERE ts < '2024-01-02'")
    assert [HEAP in lines[0], "(no partition)" in lines[1]] == [True, True], lines
    # Through a view; and a reference the planner proves empty.
    tiered.psql("CREATE VIEW early AS SELECT id, ts FROM events WHERE ts < '2024-01-03'")
    (line,) = explain(tiered, "SELECT * FROM early")
    assert "(no partition)" in line and files(line) == (2, 7), line
    assert explain(tiered, "SELECT * FROM events WHERE false") == [
        "public.events: read from neither tier: the planner removed the read (its conditions select no rows,"
        " or nothing uses its rows)"]
    # tierdb.cold_rows() written out reads the cold rows only.
    (line,) = explain(tiered, "SELECT * FROM tierdb.cold_rows(NULL::events)")
    assert line.startswith(f"public.events: tierdb.cold_rows reads the rows below T {T} only: the lake at"), line


def test_delta_rows_are_counted(tiered):
    db = tiered
    db.query("SELECT tierdb_upsert('events', '{\"id\": 7, \"ts\": \"2024-01-02T00:00:00+00:00\", \"v\": \"c\"}')")
    (line,) = explain(db, "SELECT * FROM events")
    assert line.endswith("merged with 1 delta row"), line


def test_locked_and_written_tables_keep_heap_semantics(tiered):
    db = tiered
    (line,) = explain(db, "SELECT * FROM events WHERE id = 1 FOR UPDATE")
    assert line.startswith("public.events: SELECT ... FOR UPDATE locks rows in the heap and below the cut-line"), line
    (line,) = explain(db, "SELECT * FROM events FOR KEY SHARE")
    assert line.startswith("public.events: SELECT ... FOR KEY SHARE locks rows in the heap and below"), line
    assert explain(db, "UPDATE events SET v = 'x' WHERE id = 1 AND ts >= '2024-01-09'") == [
        f"public.events: heap only (its conditions keep the tier key at or above T {T})"]
    # plain DML that may reach the lake's rows routes them (transparent writes, cold_dml.h) ...
    (line,) = explain(db, "DELETE FROM events")
    assert line.startswith("public.events: DELETE routes to the heap and the delta (transparent writes)"), line
    # ... and without transparent writes it is refused when it runs (dml_guard.h): said, not raised
    db.psql("SELECT tierdb_disable_transparent_writes('events')")
    (line, *rest) = explain(db, "UPDATE events SET v = 'x' WHERE id = 1 AND ts >= '2024-01-09'")
    # its bound, checked when it starts (dml_guard.h), as a heap-only read's
    assert rest == [f"public.events: reads the heap at or above T {T} (partitions events_20240109 .. events_20240112)"
                    " and the lake is not read: the conditions keep the query at or above T"], rest
    assert line.startswith("public.events: heap only (target of UPDATE: rows in the lake are not changed"), line
    (line, refusal) = explain(db, "DELETE FROM events")
    assert line.startswith("public.events: heap only (target of DELETE"), line
    assert refusal.startswith('public.events: refused: DELETE of table "public.events" may reach rows below its'
                              " cut-line. Add \"AND ts >= '2024-01-08 00:00:00+00'\""), refusal
    # a lock on cold rows needs the spill partition too
    (line, refusal) = explain(db, "SELECT * FROM events FOR SHARE")
    assert line.startswith("public.events: heap only (FOR SHARE locks the heap's rows"), line
    assert refusal.startswith('public.events: refused: SELECT ... FOR SHARE of table "public.events" may reach rows'
                              " below its cut-line. Enable transparent writes"), refusal
    assert explain(db, "INSERT INTO events VALUES (1, '2024-01-09', 'x', 1) ON CONFLICT DO NOTHING") == [
        "public.events: heap only (target of INSERT: rows go into the heap's partitions;"
        " tierdb_upsert routes rows below T to the delta)"]
    assert explain(db, "SELECT count(*) FROM ONLY events") == [
        "public.events: heap only (ONLY reads the partitioned table's own rows, which are none)"]
    # A tiered table read by a DML statement on another table is read transparently.
    lines = explain(db, "INSERT INTO plain SELECT * FROM events WHERE ts < '2024-01-02'")
    assert lines[0] == "public.plain: not registered with TierDB in tiered mode: plain heap", lines
    assert lines[1].startswith(f"public.events: reads the heap at or above T {T} (no partition)"), lines
    assert len(lines) == 2, lines


def test_transparent_reads_off(tiered):
    assert explain(tiered, "SELECT * FROM events", session="SET tierdb.transparent_reads = off;") == [
        "public.events: heap only (tierdb.transparent_reads is off)"]


def test_unregistered_tables_and_statements_tierdb_does_not_touch(tiered):
    assert explain(tiered, "SELECT * FROM plain p JOIN plain q USING (id)") == [
        "public.plain: not registered with TierDB in tiered mode: plain heap",
        "TierDB does not touch this statement: it reads and writes no table registered with TierDB"
        " in tiered mode and routes no row"]
    assert explain(tiered, "SELECT 1") == [
        "TierDB does not touch this statement: it reads and writes no table registered with TierDB"
        " in tiered mode and routes no row"]


def test_routed_writes(tiered):
    db = tiered
    assert explain(db, "SELECT tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-09 10:00:00+00\"}')") == [
        "public.events: tierdb_upsert of pk 5 routes to the heap:"
        f" tier key 2024-01-09 10:00:00+00 is at or above T {T}"]
    assert explain(db, "SELECT tierdb_upsert('public.events', '{\"id\": 5, \"ts\": \"2024-01-03\"}'::jsonb)") == [
        "public.events: tierdb_upsert of pk 5 routes to the delta (tierdb.delta):"
        f" tier key 2024-01-03 00:00:00+00 is below T {T}"]
    assert explain(db, "SELECT tierdb_delete('events', '5', '2024-01-03 01:00:00+00'::timestamptz)") == [
        "public.events: tierdb_delete of key 5 routes to the delta (a tombstone in tierdb.delta):"
        f" tier key 2024-01-03 01:00:00+00 is below T {T}"]
    assert explain(db, "SELECT tierdb_delete('events', '{\"id\": 5}', '2024-01-10'::timestamptz)") == [
        "public.events: tierdb_delete of key {\"id\": 5} routes to the heap:"
        f" tier key 2024-01-10 00:00:00+00 is at or above T {T}"]
    # Below the retention line R: refused.
    db.psql(f"UPDATE tierdb.cutline SET retention_line = {JAN_1 + 2 * DAY_USEC}")
    assert explain(db, "SELECT tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-01 12:00:00+00\"}')") == [
        "public.events: tierdb_upsert of pk 5 is refused: tier key 2024-01-01 12:00:00+00"
        " is below the retention line 2024-01-03 00:00:00+00; nothing would be written"]
    assert explain(db, "SELECT tierdb_delete('events', '5', '2024-01-04'::timestamptz)") == [
        "public.events: tierdb_delete of key 5 routes to the delta (a tombstone in tierdb.delta):"
        f" tier key 2024-01-04 00:00:00+00 is below T {T}"
        " and at or above the retention line 2024-01-03 00:00:00+00"]
    # Arguments known only when the call runs.
    assert explain(db, "SELECT tierdb_upsert('events', to_jsonb(p)) FROM plain p WHERE id = 1") == [
        "public.plain: not registered with TierDB in tiered mode: plain heap",
        "tierdb_upsert: its arguments are not constants, so its route is decided when it runs"]
    # The same checks as the call itself.
    error = db.error(SESSION + "SELECT tierdb_explain($$SELECT tierdb_upsert('events', '{\"id\": 5, \"nope\": 1}')$$)")
    assert "has no column nope" in error, error
    error = db.error(SESSION + "SELECT tierdb_explain($$SELECT tierdb_delete('events', '5', 5)$$)")
    assert "tier key ts is a timestamptz, and the call passes a bigint" in error, error
    error = db.error(SESSION + "SELECT tierdb_explain($$SELECT tierdb_upsert('plain', '{\"id\": 5}')$$)")
    assert "is not registered with TierDB" in error, error


def test_nothing_is_run_or_written(tiered):
    db = tiered
    before = state(db)
    statements = [
        "SELECT id / (id - id) FROM events",  # fails when it runs
        "UPDATE events SET v = 'gone'",
        "DELETE FROM events",
        "SELECT tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-03\", \"v\": \"new\"}')",
        "SELECT tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-09\", \"v\": \"new\"}')",
        "SELECT tierdb_delete('events', '5', '2024-01-03'::timestamptz)",
        "SELECT tierdb_delete('events', '2900', '2024-01-10 16:00:00+00'::timestamptz)",
        "SELECT * FROM events",
    ]
    for sql in statements:
        literal = "$stmt$" + sql + "$stmt$"
        # Read-only, and no transaction id assigned: not a single row (or pin) was written.
        rows = db.query(f"BEGIN READ ONLY; SELECT count(*) FROM tierdb_explain({literal});"
                        " SELECT pg_current_xact_id_if_assigned() IS NULL; COMMIT;")
        # (psql joins the rows of consecutive statements with a newline)
        assert rows[-1][0].split("\n")[-1] == "t", (sql, rows)
    assert "division by zero" in db.error("SELECT id / (id - id) FROM events")
    assert state(db) == before
    assert db.query("SELECT v FROM events WHERE id = 5") != [("new",)]


def test_refused_statements(tiered):
    db = tiered
    for sql, message in [
        ("SET work_mem = '1MB'", "explains SELECT, INSERT, UPDATE, DELETE and MERGE, not SET"),
        ("EXPLAIN SELECT * FROM events", "not EXPLAIN"),
        ("SELECT 1; SELECT 2", "exactly one statement, and it was given 2"),
        ("SELECT * FROM events WHERE id = $1", "cannot explain a statement with parameters ($1)"),
        ("SELECT * INTO copy FROM events", "cannot explain SELECT INTO"),
    ]:
        error = db.error(f"SELECT tierdb_explain($stmt${sql}$stmt$)")
        assert message in error, (sql, error)


def test_privileges_apply_as_to_the_statement(tiered):
    db = tiered
    db.psql("CREATE ROLE reader LOGIN; CREATE ROLE outsider LOGIN; GRANT SELECT ON events TO reader;")
    try:
        (line,) = explain(db, "SELECT count(*) FROM events", session="SET ROLE reader;")
        assert line.startswith(f"public.events: reads the heap at or above T {T} {HEAP}"), line
        error = db.error("SET ROLE outsider; SELECT tierdb_explain('SELECT count(*) FROM events')")
        assert "permission denied for table events" in error, error
    finally:
        db.psql("DROP OWNED BY reader, outsider; DROP ROLE reader; DROP ROLE outsider;")
