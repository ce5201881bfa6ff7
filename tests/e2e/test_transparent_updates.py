"""Transparent UPDATE and DELETE (SPEC §7, issue 18 part 1; extension/src/
cold_dml.c, spill.c): a plain UPDATE or DELETE of a tiered table changes its
rows below the cut-line too, with RETURNING, row counts, triggers, RLS,
constraints and privileges as on a plain table, and an UPDATE of the tier key
moves a row between the tiers leaving exactly one copy.

`events` holds 2024-01-01..10 with the days before T = 2024-01-08 in the
lake (test_transparent_reads.py's fixture); `plain` is an untiered copy, and
every statement runs on both and must give the same output and contents.
"""

from __future__ import annotations

import threading

import psycopg
import pytest

from test_differential_inserts import tiered_with_copy
from test_tiering import SESSION, run_once
from test_transparent_inserts import both, delta_rows, rows, same_tables, spill_rows
from test_transparent_reads import tiered  # noqa: F401 (fixture)


def values(output):
    """Every value a psql run printed, sorted: the order of rows a statement returns is not defined, and psql
    joins the last row of one statement to the first of the next with a newline."""
    return sorted(v for row in output for field in row for v in (field or "").split("\n"))


def same(db, sql):
    got, want = both(db, sql)
    assert values(got) == values(want), sql
    return got


def tag(db, sql):
    out = db.run_psql(SESSION + "\\set QUIET off\n" + sql)
    assert out.returncode == 0, out.stderr
    return [line for line in out.stdout.splitlines() if line.split(" ")[0] in ("UPDATE", "DELETE")]


def test_update_and_delete_reach_cold_rows(tiered):
    db = tiered
    for sql in [
        "UPDATE {t} SET v = 'upd-' || id WHERE id % 97 = 0 RETURNING id, ts, v",
        "UPDATE {t} SET amount = amount * 2 WHERE ts < '2024-01-03' AND id % 5 = 0 RETURNING *",
        "DELETE FROM {t} WHERE id % 89 = 1 RETURNING id, ts",
        "DELETE FROM {t} WHERE ts >= '2024-01-05' AND ts < '2024-01-05 06:00' RETURNING *",
        "UPDATE {t} SET v = NULL WHERE id = 17 RETURNING v",
        "UPDATE {t} SET v = 'none' WHERE id = -1 RETURNING v",
    ]:
        assert same(db, sql) or "id = -1" in sql, sql
        same_tables(db)
    assert spill_rows(db) == [("0",)]
    # the command tags count every row changed, in either tier
    for sql in ["UPDATE {t} SET v = 'again' WHERE id % 300 = 3", "DELETE FROM {t} WHERE id % 300 = 4"]:
        got, want = tag(db, sql.format(t="events")), tag(db, sql.format(t="plain"))
        assert got == want and got[0].split(" ")[-1] not in ("0", "1"), (got, want)
    same_tables(db)


def test_tier_key_moves_leave_one_copy(tiered, tierdb):
    db = tiered
    for sql in [
        # cold -> hot, hot -> cold, cold -> cold (another lake partition), hot -> hot
        "UPDATE {t} SET ts = ts + interval '8 days' WHERE id IN (5, 6) RETURNING id, ts",
        "UPDATE {t} SET ts = ts - interval '8 days' WHERE id IN (2905, 2906) RETURNING id, ts",
        "UPDATE {t} SET ts = ts + interval '2 days', v = 'moved' WHERE id IN (7, 8) RETURNING *",
        "UPDATE {t} SET ts = ts + interval '1 hour' WHERE id = 2907 RETURNING *",
    ]:
        same(db, sql)
    same_tables(db)
    assert rows(db, "SELECT id, count(*) FROM events WHERE id IN (5, 6, 7, 8, 2905, 2906, 2907) GROUP BY id"
                    " HAVING count(*) <> 1") == []
    # and after the daemon folds the delta into the lake
    run_once(tierdb, "2d")
    same_tables(db)
    assert delta_rows(db) == 0


def test_update_from_join_and_subqueries(tiered):
    db = tiered
    db.psql("CREATE TABLE fixes (id int, v text); INSERT INTO fixes SELECT g, 'fix' || g FROM generate_series(1, 3000, 37) g")
    for sql in [
        "UPDATE {t} e SET v = f.v FROM fixes f WHERE f.id = e.id RETURNING e.id, e.v",
        "UPDATE {t} SET amount = (SELECT max(amount) FROM {t}) WHERE id IN (SELECT id FROM fixes WHERE id < 400)"
        " RETURNING id, amount",
        "DELETE FROM {t} e USING fixes f WHERE f.id + 1 = e.id RETURNING e.id",
        "WITH d AS (DELETE FROM {t} WHERE id BETWEEN 40 AND 45 RETURNING id) SELECT count(*) FROM d",
    ]:
        same(db, sql)
        same_tables(db)
    # a nested loop that rescans the cold rows must not bring them in twice
    got, want = both(db, "SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;"
                         " UPDATE {t} e SET v = 'nl' FROM fixes f WHERE f.id = e.id AND e.id < 600 RETURNING e.id")
    assert sorted(got) == sorted(want)
    same_tables(db)


def test_merge_reaches_cold_rows(tiered):
    db = tiered
    for sql in [
        "MERGE INTO {t} e USING (VALUES (5, 'm5'), (6, 'm6'), (2950, 'm2950'), (99001, 'new')) s(id, v) ON e.id = s.id"
        " WHEN MATCHED AND e.id = 6 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v"
        " WHEN NOT MATCHED THEN INSERT VALUES (s.id, '2024-01-02', s.v, 1)",
        # tier-key moves both ways, and an insert-only MERGE of a cold and a hot row
        "MERGE INTO {t} e USING (VALUES (7), (2951)) s(id) ON e.id = s.id"
        " WHEN MATCHED AND e.id = 7 THEN UPDATE SET ts = e.ts + interval '8 days'"
        " WHEN MATCHED THEN UPDATE SET ts = e.ts - interval '8 days'",
        "MERGE INTO {t} e USING (VALUES (99002, '2024-01-03'::timestamptz), (99003, '2024-01-09')) s(id, ts)"
        " ON e.id = s.id WHEN NOT MATCHED THEN INSERT (id, ts, v) VALUES (s.id, s.ts, 'ins')",
    ]:
        same(db, sql)
        same_tables(db)
    got = rows(db, "SELECT * FROM tierdb_explain($$MERGE INTO events e USING (VALUES (5)) s(id) ON e.id = s.id"
                   " WHEN MATCHED THEN UPDATE SET v = 'x'$$)")
    assert any("MERGE routes to the heap and the delta" in r[0] for r in got), got
    # a new row whose key lives cold but that ON does not match is a duplicate, as on a table with that key
    err = db.error(SESSION + "MERGE INTO events e USING (SELECT id, ts FROM plain WHERE id = 8) s ON false"
                             " WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.ts, 'dup', 1)")
    assert "duplicate key" in err and "23505" in err, err
    assert spill_rows(db) == [("0",)]


def test_insert_on_conflict_reaches_cold_rows(db, tierdb):
    """ON CONFLICT (the merge key (id, ts) is the primary key of both tables): a new row whose key lives below T
    conflicts with it as with a heap row."""
    tiered_with_copy(db, tierdb)
    for sql in [
        "INSERT INTO {t} SELECT id, ts, 'nothing', 0 FROM plain WHERE id IN (5, 2950)"
        " UNION ALL SELECT 99001, '2024-01-03', 'new', 1 ON CONFLICT (id, ts) DO NOTHING RETURNING *",
        "INSERT INTO {t} SELECT id, ts, 'upd', 0 FROM plain WHERE id IN (5, 6, 2950)"
        " UNION ALL SELECT 99002, '2024-01-04', 'new2', 2"
        " ON CONFLICT (id, ts) DO UPDATE SET v = EXCLUDED.v || {t}.v, amount = {t}.amount + 1 RETURNING *",
        "INSERT INTO {t} SELECT id, ts, 'w', 0 FROM plain WHERE id IN (7, 8)"
        " ON CONFLICT (id, ts) DO UPDATE SET v = 'where' WHERE {t}.id = 7 RETURNING id, v",
        # the same key twice in one statement: DO NOTHING keeps the first conflict's outcome
        "INSERT INTO {t} SELECT id, ts, 'twice', 0 FROM plain WHERE id IN (9, 9, 10) ON CONFLICT DO NOTHING",
        # a cold key already corrected in the delta, and one tombstoned there
        "UPDATE {t} SET v = 'corrected' WHERE id = 11",
        "DELETE FROM {t} WHERE id = 12",
        "INSERT INTO {t} SELECT id, ts, 'again', 0 FROM (SELECT id, ts FROM plain WHERE id = 11"
        " UNION ALL SELECT 12, ts FROM (SELECT ts FROM events_tierdb_spill LIMIT 0) x"
        " UNION ALL SELECT 12, '2024-01-01 00:57:36.000012+00'::timestamptz) k"
        " ON CONFLICT (id, ts) DO UPDATE SET v = EXCLUDED.v || '/' || {t}.v RETURNING *",
    ]:
        same(db, sql)
        same_tables(db)
    assert spill_rows(db) == [("0",)]
    run_once(tierdb, "2d")
    same_tables(db)
    proc = tierdb(["verify", "--table", "public.events"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_joins_bring_in_only_the_keys_they_join(db, tierdb):
    """With an index on the join key in the heap (the primary key (id, ts)), a nested loop runs the cold side
    parameterized by the outer row's key: each key's cold rows are looked up in the lake, not all of them brought
    in; a key joined twice is changed once, as on a plain table."""
    tiered_with_copy(db, tierdb)
    db.psql("CREATE TABLE fixes (id bigint, v text);"
            " INSERT INTO fixes VALUES (5, 'a'), (7, 'b'), (8, 'c'), (2950, 'd'), (5, 'again'); ANALYZE fixes")
    nested = ("SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_seqscan = off;"
              " SET enable_material = off; ")
    plan = "\n".join(r[0] for r in rows(db, nested + "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)"
                                       " UPDATE events e SET amount = e.amount + 1 FROM fixes f WHERE f.id = e.id"))
    assert "Conditions Pushed to the Lake: 1" in plan and "Rows Brought In: 3" in plan, plan
    db.psql("UPDATE plain e SET amount = e.amount + 1 FROM fixes f WHERE f.id = e.id")
    same_tables(db)
    for sql in ["UPDATE {t} e SET amount = e.amount * 2 FROM fixes f WHERE f.id = e.id RETURNING e.id, e.amount",
                "DELETE FROM {t} e USING fixes f WHERE f.id = e.id RETURNING e.id"]:
        same(db, nested + sql)
        same_tables(db)
    assert spill_rows(db) == [("0",)]


def test_prepared_and_generic_plans(tiered):
    db = tiered
    sql = ("SET plan_cache_mode = force_generic_plan;"
           " PREPARE u(int, text) AS UPDATE {t} SET v = $2 WHERE id = $1 RETURNING id, v;"
           " EXECUTE u(3, 'a'); EXECUTE u(2950, 'b'); EXECUTE u(4, 'c');"
           " PREPARE d(timestamptz) AS DELETE FROM {t} WHERE ts < $1 AND id % 11 = 0 RETURNING id;"
           " EXECUTE d('2024-01-02'); EXECUTE d('2024-01-09');")
    same(db, sql)
    same_tables(db)
    # a PL/pgSQL function's statements (SPI, cached plans) run the same way
    for t in ("events", "plain"):
        db.psql(f"CREATE FUNCTION bump_{t}(lo bigint, hi bigint) RETURNS bigint LANGUAGE plpgsql AS $$"
                f" DECLARE n bigint; BEGIN UPDATE {t} SET amount = amount + 1 WHERE id BETWEEN lo AND hi;"
                f" GET DIAGNOSTICS n = ROW_COUNT; DELETE FROM {t} WHERE id = hi; RETURN n; END $$")
    same(db, "SELECT bump_{t}(100, 110), bump_{t}(2900, 2905), bump_{t}(100, 110)")
    same_tables(db)


def test_triggers_fire_with_old_and_new(tiered):
    db = tiered
    db.psql("""
        CREATE TABLE audit (tbl text, op text, old_id int, old_v text, new_id int, new_v text);
        CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO audit VALUES (TG_TABLE_NAME, TG_OP, OLD.id, OLD.v,
                                      CASE WHEN TG_OP = 'UPDATE' THEN NEW.id END, CASE WHEN TG_OP = 'UPDATE' THEN NEW.v END);
            RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
        END $$;
        CREATE FUNCTION shout() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.v := upper(NEW.v); RETURN NEW; END $$;
        CREATE TRIGGER a AFTER UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION audit_row();
        CREATE TRIGGER a AFTER UPDATE OR DELETE ON plain FOR EACH ROW EXECUTE FUNCTION audit_row();
        CREATE TRIGGER b BEFORE UPDATE ON events FOR EACH ROW EXECUTE FUNCTION shout();
        CREATE TRIGGER b BEFORE UPDATE ON plain FOR EACH ROW EXECUTE FUNCTION shout();
    """)
    same(db, "UPDATE {t} SET v = 'quiet' || id WHERE id IN (10, 11, 2950) RETURNING id, v")
    same(db, "DELETE FROM {t} WHERE id IN (12, 2951) RETURNING id")
    same_tables(db)
    got = rows(db, "SELECT op, old_id, old_v, new_id, new_v FROM audit WHERE tbl LIKE 'events%' ORDER BY 1, 2")
    want = rows(db, "SELECT op, old_id, old_v, new_id, new_v FROM audit WHERE tbl = 'plain' ORDER BY 1, 2")
    assert got == want and len(got) == 5


def test_rls_and_privileges(tiered):
    db = tiered
    db.psql("""
        DROP ROLE IF EXISTS clerk; CREATE ROLE clerk;
        GRANT SELECT, UPDATE (v), DELETE ON events, plain TO clerk;
        ALTER TABLE events ENABLE ROW LEVEL SECURITY; ALTER TABLE plain ENABLE ROW LEVEL SECURITY;
        CREATE POLICY p ON events USING (id % 2 = 0) WITH CHECK (v <> 'forbidden');
        CREATE POLICY p ON plain USING (id % 2 = 0) WITH CHECK (v <> 'forbidden');
    """)
    try:
        same(db, "SET ROLE clerk; UPDATE {t} SET v = 'rls' WHERE id < 30 RETURNING id")
        same(db, "SET ROLE clerk; DELETE FROM {t} WHERE id BETWEEN 30 AND 40 RETURNING id")
        for t in ("events", "plain"):
            err = db.error(SESSION + f"SET ROLE clerk; UPDATE {t} SET v = 'forbidden' WHERE id = 50")
            assert "row-level security" in err, err
            err = db.error(SESSION + f"SET ROLE clerk; UPDATE {t} SET amount = 1 WHERE id = 50")
            assert "permission denied" in err, err
        db.psql("ALTER TABLE events DISABLE ROW LEVEL SECURITY; ALTER TABLE plain DISABLE ROW LEVEL SECURITY")
        same_tables(db)
    finally:
        db.psql("ALTER TABLE events DISABLE ROW LEVEL SECURITY; ALTER TABLE plain DISABLE ROW LEVEL SECURITY;"
                " DROP POLICY IF EXISTS p ON events; DROP POLICY IF EXISTS p ON plain;"
                " REVOKE ALL ON events, plain FROM clerk; DROP ROLE clerk")


def test_constraints_and_duplicate_keys(tiered):
    db = tiered
    db.psql("ALTER TABLE events ADD CONSTRAINT amount_small CHECK (amount < 1000000);"
            " ALTER TABLE plain ADD CONSTRAINT amount_small CHECK (amount < 1000000)")
    err = db.error(SESSION + "UPDATE events SET amount = 2000000 WHERE id = 20")
    assert "amount_small" in err, err
    # a new key that already lives (cold, or hot) is a unique violation; nothing changes
    err = db.error(SESSION + "UPDATE events SET id = 21 WHERE id = 22")
    assert "duplicate key" in err, err
    err = db.error(SESSION + "UPDATE events SET id = 2990 WHERE id = 23")
    assert "duplicate key" in err, err
    same(db, "UPDATE {t} SET id = id + 100000 WHERE id IN (24, 25) RETURNING id")
    same_tables(db)
    assert spill_rows(db) == [("0",)]


def test_transparent_writes_off_and_current_of(tiered):
    db = tiered
    err = db.error(SESSION + "SET tierdb.transparent_writes = off; UPDATE events SET v = 'x' WHERE id = 30")
    assert "tierdb.transparent_writes is off" in err and "tierdb_upsert" in err, err
    # hot rows only: fine with the setting off
    same(db, "SET tierdb.transparent_writes = off; UPDATE {t} SET v = 'hot' WHERE id = 2960 RETURNING id")
    err = db.error(SESSION + "BEGIN; DECLARE c CURSOR FOR SELECT * FROM events WHERE id = 2961 FOR UPDATE;"
                             " FETCH c; UPDATE events SET v = 'cur' WHERE CURRENT OF c; COMMIT")
    assert "tierdb_upsert" in err, err
    same_tables(db)


def test_explain_names_the_route(tiered):
    db = tiered
    got = rows(db, "SELECT * FROM tierdb_explain($$UPDATE events SET v = 'x' WHERE id = 3$$)")
    assert any("UPDATE routes to the heap and the delta" in r[0] for r in got), got
    got = rows(db, "SELECT * FROM tierdb_explain($$DELETE FROM events WHERE ts < '2024-01-02'$$)")
    assert any("DELETE routes to the heap and the delta" in r[0] for r in got), got
    got = rows(db, "SELECT * FROM tierdb_explain($$DELETE FROM events WHERE ts >= '2024-01-09'$$)")
    assert any("heap only" in r[0] for r in got), got
    plan = "\n".join(r[0] for r in rows(db, "EXPLAIN UPDATE events SET v = 'x' WHERE id = 3"))
    assert "TierDB Cold Rows" in plan, plan


def test_concurrent_update_of_a_cold_row_is_not_lost(tiered):
    """Two sessions update the same cold row: the second to reach it either sees the first's write or fails
    with a serialization error to retry, never silently overwriting it."""
    db = tiered
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
        t.join(1.0)
        first.commit()
        t.join(30)
        (amount,), = rows(db, "SELECT amount FROM events WHERE id = 33")
        (base,), = rows(db, "SELECT amount FROM plain WHERE id = 33")
        if errors:
            assert float(amount) == float(base) + 1
        else:
            assert float(amount) == float(base) + 11
    finally:
        first.close()
        second.close()
