"""Plain DML on a tiered table without transparent writes (extension/src/
dml_guard.c, issue 16 item 7; tables with them route such statements,
test_transparent_updates.py): with transparent reads on, a statement that
may reach rows below the cut-line T is refused with an error naming tierdb_upsert/tierdb_delete,
never applied to the heap's rows alone; statements whose conditions keep
the tier key at or above T run as before.

`events` holds 2024-01-01..10 with the days before T = 2024-01-08 in the
lake (test_transparent_reads.py's fixture); `plain` is an untiered copy.
"""

from __future__ import annotations

import pytest

from test_tiering import SESSION
from test_transparent_reads import tiered  # noqa: F401 (fixture)

REFUSED = "may reach rows below its cut-line"


def rows(db, sql):
    return db.query(SESSION + sql)


def refused(db, sql, what=REFUSED):
    err = db.error(SESSION + sql)
    assert "0A000" in err and what in err, err
    return err


@pytest.fixture
def guarded(tiered):
    """events without its spill partition: plain DML reaching cold rows is refused, not routed."""
    tiered.psql("SELECT tierdb_disable_transparent_writes('events')")
    return tiered


def snapshot(db):
    return rows(db, "SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM events e")


def test_bounded_update_and_delete_of_hot_rows_run(guarded):
    db = guarded
    db.psql(SESSION + "UPDATE events SET v = 'hot' WHERE id = 2800 AND ts >= '2024-01-08';\n"
            "UPDATE plain SET v = 'hot' WHERE id = 2800;\n"
            "DELETE FROM events WHERE ts > '2024-01-10' AND id = 3000;\n"
            "DELETE FROM plain WHERE id = 3000;\n"
            # the bound found after folding, and in a data-modifying CTE
            "UPDATE events SET amount = 1 WHERE NOT (ts < '2024-01-09') AND id % 100 = 0;\n"
            "UPDATE plain SET amount = 1 WHERE NOT (ts < '2024-01-09') AND id % 100 = 0;\n")
    assert rows(db, "WITH d AS (DELETE FROM events WHERE ts >= '2024-01-09' AND id = 2999 RETURNING id)"
                " SELECT count(*) FROM d") == [("1",)]
    db.psql("DELETE FROM plain WHERE id = 2999")
    assert rows(db, "SELECT count(*) FROM events e JOIN plain p USING (id)"
                " WHERE e::text IS NOT DISTINCT FROM p::text") == [("2998",)]
    # MERGE whose ON condition keeps the target at or above T
    db.psql(SESSION + "MERGE INTO events e USING (VALUES (2801)) s(id) ON e.id = s.id AND e.ts >= '2024-01-08'"
            " WHEN MATCHED THEN UPDATE SET v = 'merged';")
    assert rows(db, "SELECT v FROM events WHERE id = 2801") == [("merged",)]


@pytest.mark.parametrize("sql", [
    "UPDATE events SET v = 'x' WHERE id = 5",
    "UPDATE events SET v = 'x' WHERE id IN (5, 2800)",
    "UPDATE events SET v = 'x' WHERE ts >= '2024-01-05' AND id = 2800",
    "UPDATE events SET v = 'x' WHERE ts < '2024-01-09'",
    "UPDATE events SET v = 'x' WHERE ts >= '2024-01-08' OR id = 5",
    "DELETE FROM events WHERE id = 5",
    "DELETE FROM events",
    "UPDATE events e SET v = 'x' FROM plain p WHERE e.id = p.id AND p.ts >= '2024-01-08'",
    "DELETE FROM events e USING plain p WHERE e.id = p.id AND p.id = 5",
    "WITH d AS (DELETE FROM events WHERE id = 5 RETURNING *) SELECT count(*) FROM d",
    "WITH u AS (UPDATE events SET v = 'x' WHERE id > 2990 RETURNING *) SELECT count(*) FROM u",
    "MERGE INTO events e USING (VALUES (5)) s(id) ON e.id = s.id WHEN MATCHED THEN DELETE",
    "MERGE INTO events e USING (VALUES (5)) s(id) ON e.id = s.id WHEN MATCHED THEN UPDATE SET v = 'x'"
    " WHEN NOT MATCHED THEN INSERT VALUES (5, '2024-01-09', 'x', 1)",
    "UPDATE events SET v = 'x' WHERE ts >= now() - interval '1000 years' AND id = 5",
])
def test_dml_that_may_reach_cold_rows_is_refused(guarded, sql):
    db = guarded
    before = snapshot(db)
    err = refused(db, sql)
    assert "tierdb_upsert" in err and "tierdb_delete" in err and "2024-01-08 00:00:00+00" in err, err
    assert snapshot(db) == before


def disable_transparent_writes(db):
    """The refusals below are those of a table without transparent writes
    (test_transparent_inserts.py tests the routing that replaces them)."""
    db.psql("SELECT tierdb_disable_transparent_writes('events')")


def test_new_rows_below_the_cutline_are_refused(guarded):
    db = guarded
    disable_transparent_writes(db)
    before = snapshot(db)
    what = "below its cut-line with plain INSERT, UPDATE or MERGE"
    for sql in [
        "INSERT INTO events VALUES (10001, '2024-01-03', 'cold', 1)",
        # one cold row among hot ones: nothing is inserted
        "INSERT INTO events SELECT 10000 + g, timestamptz '2024-01-10' - g * interval '1 day', 'x', 1"
        " FROM generate_series(1, 4) g",
        "INSERT INTO events VALUES (10001, '2024-01-03', 'cold', 1) ON CONFLICT DO NOTHING",
        # an UPDATE bounded to hot rows that moves one below T
        "UPDATE events SET ts = '2024-01-02' WHERE id = 2800 AND ts >= '2024-01-08'",
        "MERGE INTO events e USING (VALUES (10002)) s(id) ON e.id = s.id AND e.ts >= '2024-01-08'"
        " WHEN NOT MATCHED THEN INSERT VALUES (s.id, '2024-01-04', 'x', 1)",
    ]:
        err = refused(db, sql, what)
        assert "tierdb_upsert" in err and "no partition" not in err, err
    assert snapshot(db) == before
    # hot rows go in as before
    db.psql(SESSION + "INSERT INTO events VALUES (10003, '2024-01-09 10:00', 'hot', 1), (10004, '2024-01-10', 'hot', 2);\n"
            "UPDATE events SET ts = '2024-01-10 05:00' WHERE id = 2800 AND ts >= '2024-01-08';\n")
    assert rows(db, "SELECT id, ts, v FROM events WHERE id IN (2800, 10003, 10004) ORDER BY id") == [
        ("2800", "2024-01-10 05:00:00+00", "v2800"), ("10003", "2024-01-09 10:00:00+00", "hot"),
        ("10004", "2024-01-10 00:00:00+00", "hot")]


def test_copy_of_a_cold_row_names_the_routed_write(guarded):
    db = guarded
    disable_transparent_writes(db)
    err = db.error(SESSION + "COPY events FROM STDIN;\n10005\t2024-01-03 00:00:00+00\tcold\t1\n\\.\n")
    assert "no partition" in err and "tierdb_upsert" in err and "2024-01-08 00:00:00+00" in err, err
    db.psql(SESSION + "COPY events FROM STDIN;\n10006\t2024-01-09 00:00:00+00\thot\t1\n\\.\n")
    assert rows(db, "SELECT v FROM events WHERE id = 10006") == [("hot",)]


def test_truncate_of_the_table_is_refused_and_of_a_hot_partition_runs(guarded):
    """TRUNCATE of the registered table would empty the heap alone while the
    lake's rows stay readable: refused, nothing changed, also in a list of
    tables and through a function; truncating a partition at or above T
    empties it, as on any table."""
    db = guarded
    before = snapshot(db)
    for sql in ("TRUNCATE events", "TRUNCATE TABLE plain, events CASCADE",
                "DO $$ BEGIN EXECUTE 'TRUNCATE public.events'; END $$"):
        err = refused(db, sql, 'TRUNCATE of table "public.events" would empty its heap only')
        assert "tierdb unregister --table public.events --drop-lake" in err, err
    assert snapshot(db) == before
    assert rows(db, "SELECT count(*) FROM plain")[0][0] != "0"
    hot = rows(db, "SELECT count(*) FROM events WHERE ts >= '2024-01-10'")[0][0]
    assert hot != "0"
    db.psql(SESSION + "TRUNCATE events_20240110")
    assert rows(db, "SELECT count(*) FROM events WHERE ts >= '2024-01-10'") == [("0",)]
    assert rows(db, "SELECT count(*) FROM events WHERE ts < '2024-01-08'")[0][0] != "0"
    # with transparent reads off the table is its heap, for TRUNCATE as for DELETE
    db.psql(SESSION + "SET tierdb.transparent_reads = off; TRUNCATE events")


def test_generic_plans_check_their_parameters_when_they_start(guarded):
    db = guarded
    disable_transparent_writes(db)
    db.psql("UPDATE plain SET v = 'g' WHERE id IN (2800, 2900)")
    out = db.run_psql(
        SESSION + "SET plan_cache_mode = force_generic_plan;\n"
        "PREPARE u(timestamptz, bigint) AS UPDATE events SET v = 'g' WHERE ts >= $1 AND id = $2;\n"
        "EXECUTE u('2024-01-09', 2800);\n"
        "EXECUTE u('2024-01-08', 2900);\n"
        "PREPARE i(bigint, timestamptz) AS INSERT INTO events VALUES ($1, $2, 'p', 1);\n"
        "EXECUTE i(10007, '2024-01-09');\n"
        "EXECUTE u('2024-01-02', 5);\n")
    assert out.returncode != 0 and REFUSED in out.stderr and "tierdb_upsert" in out.stderr, out.stderr
    assert rows(db, "SELECT id, v FROM events WHERE id IN (5, 2800, 2900, 10007) ORDER BY id") == [
        ("5", "v5é"), ("2800", "g"), ("2900", "g"), ("10007", "p")]
    err = db.error(SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                   "PREPARE i(bigint, timestamptz) AS INSERT INTO events VALUES ($1, $2, 'p', 1);\n"
                   "EXECUTE i(10008, '2024-01-09'); EXECUTE i(10009, '2024-01-02');\n")
    assert "below its cut-line" in err and "tierdb_upsert" in err, err
    assert rows(db, "SELECT id FROM events WHERE id IN (10008, 10009)") == [("10008",)]


def test_untiered_tables_and_reads_off_are_unaffected(guarded):
    db = guarded
    db.psql(SESSION + "UPDATE plain SET v = 'x' WHERE id = 5;\nDELETE FROM plain WHERE id = 6;\n"
            "INSERT INTO plain VALUES (10010, '2024-01-02', 'cold', 1);\n"
            "CREATE TABLE other (id int, ts timestamptz) PARTITION BY RANGE (ts);\n"
            "CREATE TABLE other_1 PARTITION OF other FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');\n"
            "INSERT INTO other VALUES (1, '2024-01-02'); UPDATE other SET id = 2; DELETE FROM other;\n")
    assert rows(db, "SELECT v FROM plain WHERE id = 5") == [("x",)]
    # transparent reads off: the table is its heap for reads and writes alike
    assert rows(db, "SET tierdb.transparent_reads = off;"
                " WITH u AS (UPDATE events SET v = 'x' WHERE id = 5 RETURNING 1) SELECT count(*) FROM u") == [("0",)]


def test_routed_writes_still_work_with_transparent_reads_on(guarded):
    db = guarded
    assert rows(db, "SELECT tierdb_upsert('events', '{\"id\": 2800, \"ts\": \"2024-01-09 00:00:00+00\","
                " \"v\": \"routed\", \"amount\": 3}')") == [("heap",)]
    assert rows(db, "SELECT tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-01 00:00:00+00\","
                " \"v\": \"routed\", \"amount\": 3}')") == [("delta",)]
    assert rows(db, "SELECT tierdb_delete('events', '2801'::jsonb, (SELECT ts FROM events WHERE id = 2801))") == [
        ("heap",)]
    assert rows(db, "SELECT id, v FROM events WHERE id IN (5, 2800, 2801) ORDER BY id") == [
        ("5", "routed"), ("2800", "routed")]


def test_the_bound_is_checked_against_the_cutline_the_statement_runs_with(guarded):
    """A plan made while T was lower is not trusted once T has passed its
    bound: the cut-line's advance invalidates it (a constant bound is then
    refused when planned again) and a parameter is checked when it starts."""
    db = guarded
    t_new = 1704758400000000  # 2024-01-09 00:00:00+00, as the daemon's next run would publish it
    err = db.error(
        SESSION + "SET plan_cache_mode = force_generic_plan;\n"
        "PREPARE c AS UPDATE events SET v = 'c' WHERE ts >= '2024-01-08 12:00' AND id = 2800;\n"
        "PREPARE p(timestamptz) AS UPDATE events SET v = 'p' WHERE ts >= $1 AND id = 2801;\n"
        "EXECUTE c; EXECUTE p('2024-01-08 12:00');\n"
        f"UPDATE tierdb.cutline SET tier_key_hi = {t_new} WHERE table_id = 'events'::regclass::oid::bigint;\n"
        "EXECUTE p('2024-01-09 06:00');\n"
        "EXECUTE c;\n")
    assert REFUSED in err and "2024-01-09 00:00:00+00" in err, err
    err = db.error(
        SESSION + "SET plan_cache_mode = force_generic_plan;\n"
        "PREPARE p(timestamptz) AS UPDATE events SET v = 'q' WHERE ts >= $1 AND id = 2801;\n"
        "EXECUTE p('2024-01-08 12:00');\n")
    assert REFUSED in err and "2024-01-09 00:00:00+00" in err, err
    assert rows(db, "SELECT id, v FROM events WHERE id IN (2800, 2801) ORDER BY id") == [("2800", "c"), ("2801", "p")]


def test_plpgsql_statements_are_guarded_with_custom_and_generic_plans(guarded):
    db = guarded
    db.psql("CREATE FUNCTION touch(since timestamptz, which bigint) RETURNS bigint LANGUAGE plpgsql AS $$"
            " DECLARE n bigint; BEGIN UPDATE events SET v = 'f' WHERE ts >= since AND id = which;"
            " GET DIAGNOSTICS n = ROW_COUNT; RETURN n; END $$")
    # past the custom plans PL/pgSQL tries first, to its generic plan
    out = db.query(SESSION + "".join(f"SELECT touch('2024-01-08', {2800 + i});\n" for i in range(8)))
    assert [x for r in out for x in r[0].split("\n")] == ["1"] * 8
    err = db.error(SESSION + "".join(f"SELECT touch('2024-01-08', {2900 + i});\n" for i in range(8))
                   + "SELECT touch('2024-01-02', 5);\n")
    assert REFUSED in err, err
    assert rows(db, "SELECT count(*) FROM events WHERE v = 'f'") == [("16",)]


def test_a_role_with_only_table_privileges_writes_hot_rows(guarded):
    """The per-row check the guard adds to a user's statement (tierdb.tier_key_check) is the
    user's to run: a role with INSERT and UPDATE on the table alone writes hot rows, and is
    refused cold ones as the owner is."""
    db = guarded
    disable_transparent_writes(db)
    db.psql("DROP ROLE IF EXISTS dml_writer; CREATE ROLE dml_writer;"
            " GRANT SELECT, INSERT, UPDATE ON events TO dml_writer")
    try:
        assert rows(db, "SET ROLE dml_writer; INSERT INTO events VALUES (20001, '2024-01-09 01:00:00+00', 'mine', 1)"
                    " RETURNING id") == [("20001",)]
        assert rows(db, "SET ROLE dml_writer; UPDATE events SET v = 'ours' WHERE id = 20001"
                    " AND ts >= '2024-01-08' RETURNING v") == [("ours",)]
        refused(db, "SET ROLE dml_writer; INSERT INTO events VALUES (20002, '2024-01-02 01:00:00+00', 'old', 1)",
                "below its cut-line")
    finally:
        db.psql("DROP OWNED BY dml_writer; DROP ROLE dml_writer")
