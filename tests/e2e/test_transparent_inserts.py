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

import lake_files
from test_tiering import SESSION, cutline, run_once
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
    # owned by the table's owner, like its other partitions, whoever made it
    db.psql("DROP ROLE IF EXISTS events_owner; CREATE ROLE events_owner; ALTER TABLE events OWNER TO events_owner;"
            " SELECT tierdb_disable_transparent_writes('events'); SELECT tierdb_enable_transparent_writes('events')")
    try:
        assert rows(db, "SELECT relowner::regrole::text FROM pg_class WHERE relname = 'events_tierdb_spill'") == [
            ("events_owner",)]
    finally:
        db.psql("REASSIGN OWNED BY events_owner TO CURRENT_USER; DROP ROLE events_owner")


def test_the_key_probe_reads_only_the_lake_files_that_may_hold_the_key(tiered):
    """The duplicate probe of a cold row goes through the cold scan, which prunes by the key: with a lake
    partition's files taken away, rows whose key no remaining file's bounds exclude still insert (a probe
    that scanned the whole lake, as tierdb.lake_scan does, would fail on the missing files), while a key
    that only those files could hold still needs them, and says which file is missing."""
    db = tiered
    files = {f for f in lake_files.list_files(f"{cutline(db, 'events')['ref']}/data", ".parquet") if "2024-01-02" in f}
    assert files
    moved = {f: lake_files.read_bytes(f) for f in files}
    for f in files:
        lake_files.remove(f)
    try:
        # ids above every lake file's upper bound: no file can hold them
        got, want = both(db, "INSERT INTO {t} VALUES (95001, '2024-01-05', 'far', 1), (95002, '2024-01-02', 'far', 2)"
                             " RETURNING id")
        assert got == want == [("95001",), ("95002",)]
        # the id of a row in the missing files: they are the only ones that hold it, so they must be read
        (gone,), = rows(db, "SELECT min(id) FROM plain WHERE ts >= '2024-01-02 00:00:00+00'"
                            " AND ts < '2024-01-03 00:00:00+00'")
        err = db.error(SESSION + f"INSERT INTO events VALUES ({gone}, '2024-01-03', 'dup', 1)")
        assert ".parquet" in err, err
    finally:
        for f, data in moved.items():
            lake_files.write_bytes(f, data)
    same_tables(db)


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


def test_off_or_disabled_keeps_the_refusal(tiered):
    db = tiered
    before = delta_rows(db)
    # the setting off: the spill trigger refuses, for INSERT and COPY alike
    for sql in ["INSERT INTO events VALUES (60001, '2024-01-02', 'x', 1)",
                "COPY events FROM STDIN;\n60002\t2024-01-03 00:00:00+00\tcold\t1\n\\.\n"]:
        err = db.error(SESSION + "SET tierdb.transparent_writes = off;\n" + sql)
        assert "0A000" in err and "tierdb.transparent_writes is off" in err and "tierdb_upsert" in err, err
    # hot rows still go in with the setting off
    db.psql(SESSION + "SET tierdb.transparent_writes = off; INSERT INTO events VALUES (60003, '2024-01-09', 'h', 1)")
    # disabled: the partition is gone and the planner's refusal is back
    db.psql("SELECT tierdb_disable_transparent_writes('events')")
    assert rows(db, "SELECT tierdb.spill_partition('events')") == [(None,)]
    err = db.error(SESSION + "INSERT INTO events VALUES (60004, '2024-01-02', 'x', 1)")
    assert "below its cut-line with plain INSERT, UPDATE or MERGE" in err and "tierdb_upsert" in err, err
    err = db.error(SESSION + "COPY events FROM STDIN;\n60005\t2024-01-03 00:00:00+00\tcold\t1\n\\.\n")
    assert "no partition" in err and "tierdb_upsert" in err, err
    assert delta_rows(db) == before
    # enabled again (twice: the second is a no-op)
    db.psql("SELECT tierdb_enable_transparent_writes('events'); SELECT tierdb_enable_transparent_writes('events')")
    db.psql(SESSION + "INSERT INTO events VALUES (60006, '2024-01-02', 'back', 1)")
    assert rows(db, "SELECT v FROM events WHERE id = 60006") == [("back",)]


def test_the_setting_is_any_roles(db):
    assert db.query("SHOW tierdb.transparent_writes") == [("on",)]
    row = db.query("SELECT vartype, context, boot_val FROM pg_settings WHERE name = 'tierdb.transparent_writes'")
    assert row == [("bool", "user", "on")]
    db.psql("DROP ROLE IF EXISTS tw_user; CREATE ROLE tw_user")
    try:
        assert db.query("SET ROLE tw_user; SET tierdb.transparent_writes = off; SHOW tierdb.transparent_writes") == [
            ("off",)]
    finally:
        db.psql("DROP ROLE tw_user")
    err = db.error("SET tierdb.transparent_writes = 'maybe'")
    assert "22023" in err, err


def test_on_conflict_reaching_cold_rows_is_refused(tiered):
    db = tiered
    before = delta_rows(db)
    for sql in ["INSERT INTO events VALUES (70001, '2024-01-02', 'x', 1) ON CONFLICT DO NOTHING",
                "INSERT INTO events VALUES (5, '2024-01-02', 'x', 1), (70002, '2024-01-09', 'y', 1)"
                " ON CONFLICT DO NOTHING"]:
        err = db.error(SESSION + sql)
        assert "0A000" in err and "below its cut-line" in err and "tierdb_upsert" in err, err
    assert delta_rows(db) == before
    # hot rows with ON CONFLICT run as before
    db.psql(SESSION + "INSERT INTO events VALUES (70003, '2024-01-09', 'h', 1) ON CONFLICT DO NOTHING")
    assert rows(db, "SELECT v FROM events WHERE id = 70003") == [("h",)]


def test_an_unpartitioned_hot_row_is_refused(tiered):
    """A row past the newest partition reaches the spill partition too: refused as Postgres refuses it."""
    db = tiered
    err = db.error(SESSION + "INSERT INTO events VALUES (70004, '2030-01-01', 'future', 1)")
    assert "23514" in err and "no partition of relation" in err, err
    assert spill_rows(db) == [("0",)]


def test_triggers_and_constraints_apply_to_cold_rows(tiered):
    db = tiered
    for t in ("events", "plain"):
        db.psql(SESSION + f"CREATE TABLE {t}_log (op text, id bigint, v text);\n"
                f"CREATE FUNCTION {t}_before() RETURNS trigger LANGUAGE plpgsql AS $$"
                " BEGIN NEW.v := upper(NEW.v); RETURN NEW; END $$;\n"
                f"CREATE FUNCTION {t}_after() RETURNS trigger LANGUAGE plpgsql AS $$"
                f" BEGIN INSERT INTO {t}_log VALUES (TG_OP || ' ' || TG_WHEN || ' ' || TG_LEVEL, NEW.id, NEW.v);"
                " RETURN NULL; END $$;\n"
                f"CREATE FUNCTION {t}_stmt() RETURNS trigger LANGUAGE plpgsql AS $$"
                f" BEGIN INSERT INTO {t}_log VALUES (TG_OP || ' ' || TG_WHEN || ' ' || TG_LEVEL, NULL, NULL);"
                " RETURN NULL; END $$;\n"
                f"CREATE TRIGGER b BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION {t}_before();\n"
                f"CREATE TRIGGER a AFTER INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION {t}_after();\n"
                f"CREATE TRIGGER z AFTER INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION {t}_after();\n"
                f"CREATE TRIGGER s AFTER INSERT ON {t} FOR EACH STATEMENT EXECUTE FUNCTION {t}_stmt();\n"
                f"ALTER TABLE {t} ADD CONSTRAINT positive CHECK (v IS DISTINCT FROM 'NEG');\n")
    got, want = both(db, "INSERT INTO {t} VALUES (80001, '2024-01-02', 'low', 1), (80002, '2024-01-09', 'hot', 2)"
                     " RETURNING *")
    assert got == want and got[0][2] == "LOW"
    got, want = both(db, "SELECT * FROM {t}_log ORDER BY op, id")
    assert got == want and len(got) == 5
    same_tables(db)
    for t in ("events", "plain"):
        err = db.error(SESSION + f"INSERT INTO {t} VALUES (80003, '2024-01-02', 'neg', -1)")  # upper() makes NEG
        assert "23514" in err and "positive" in err, err
    # NOT NULL (plain, made by CREATE TABLE AS, has none): a NULL tier key reaches the DEFAULT partition
    err = db.error(SESSION + "INSERT INTO events VALUES (80004, NULL, 'null', 1)")
    assert "23502" in err and "ts" in err, err
    same_tables(db)
    # the delete out of the spill partition fires no delete trigger
    db.psql(SESSION + "CREATE TRIGGER d AFTER DELETE ON events FOR EACH ROW EXECUTE FUNCTION events_after();"
            " INSERT INTO events VALUES (80005, '2024-01-03', 'nodel', 1)")
    assert rows(db, "SELECT count(*) FROM events_log WHERE op LIKE 'DELETE%'") == [("0",)]


def test_foreign_keys_apply_to_cold_rows(tiered):
    db = tiered
    db.psql(SESSION + "CREATE TABLE kinds (v text PRIMARY KEY); INSERT INTO kinds VALUES ('ok');\n"
            "INSERT INTO kinds SELECT DISTINCT v FROM events WHERE v IS NOT NULL ON CONFLICT DO NOTHING;\n"
            "ALTER TABLE events ADD CONSTRAINT kind_fk FOREIGN KEY (v) REFERENCES kinds (v);")
    err = db.error(SESSION + "INSERT INTO events VALUES (81001, '2024-01-02', 'missing', 1)")
    assert "23503" in err and "kind_fk" in err, err
    db.psql(SESSION + "INSERT INTO events VALUES (81002, '2024-01-02', 'ok', 1)")
    assert rows(db, "SELECT v FROM events WHERE id = 81002") == [("ok",)]


def test_privileges_and_row_security(tiered):
    db = tiered
    db.psql("DROP ROLE IF EXISTS ins_only, no_ins; CREATE ROLE ins_only; CREATE ROLE no_ins;"
            " GRANT INSERT ON events TO ins_only; GRANT SELECT ON events TO no_ins")
    try:
        # INSERT alone suffices, as on a plain table; nothing of the catalog is granted
        assert rows(db, "SET ROLE ins_only; SELECT has_table_privilege('tierdb.delta', 'INSERT'),"
                    " has_table_privilege('tierdb.delta', 'SELECT'), has_table_privilege('events', 'SELECT')") == [
            ("f", "f", "f")]
        db.psql(SESSION + "SET ROLE ins_only; INSERT INTO events VALUES (90001, '2024-01-02', 'mine', 1)")
        data = "90002\t2024-01-04 00:00:00+00\tcopied\t1\n"
        db.psql(SESSION + f"SET ROLE ins_only; COPY events FROM STDIN;\n{data}\\.\n")
        assert rows(db, "SELECT id, v FROM events WHERE id > 90000 ORDER BY id") == [
            ("90001", "mine"), ("90002", "copied")]
        # a duplicate's detail shows the key only to a role that may read the table
        err = db.error(SESSION + "SET ROLE ins_only; INSERT INTO events VALUES (90001, '2024-01-02', 'again', 1)")
        assert "23505" in err and "A row of the same key" in err and "90001" not in err.split("DETAIL")[1], err
        err = db.error(SESSION + "SET ROLE no_ins; INSERT INTO events VALUES (90003, '2024-01-02', 'no', 1)")
        assert "42501" in err and "permission denied for table events" in err, err
        # row-level security: WITH CHECK applies to cold rows as to hot ones
        db.psql("GRANT SELECT ON events TO ins_only; ALTER TABLE events ENABLE ROW LEVEL SECURITY;"
                " CREATE POLICY sel ON events FOR SELECT USING (true);"
                " CREATE POLICY ins ON events FOR INSERT WITH CHECK (v LIKE 'ok%')")
        db.psql(SESSION + "SET ROLE ins_only; INSERT INTO events VALUES (90004, '2024-01-02', 'ok cold', 1),"
                " (90005, '2024-01-09', 'ok hot', 1)")
        for ts in ("2024-01-02", "2024-01-09"):
            err = db.error(SESSION + f"SET ROLE ins_only; INSERT INTO events VALUES (90006, '{ts}', 'bad', 1)")
            assert "42501" in err and "row-level security" in err, err
        assert rows(db, "SELECT id FROM events WHERE id IN (90004, 90005, 90006) ORDER BY id") == [
            ("90004",), ("90005",)]
    finally:
        db.psql("DROP OWNED BY ins_only; DROP OWNED BY no_ins;"
                " DROP ROLE ins_only; DROP ROLE no_ins")


def test_generic_plans_route_per_execution(tiered):
    """Six and more executions of a prepared INSERT (a cached generic plan), and forced generic plans."""
    db = tiered
    for offset, mode in ((100000, "auto"), (100100, "force_generic_plan")):
        script = "".join(f"EXECUTE i({offset + k}, '2024-01-0{2 + k % 8} 05:00', 'p{k}');\n" for k in range(8))
        out = rows(db, f"SET plan_cache_mode = {mode};\n"
                   "PREPARE i(bigint, timestamptz, text) AS INSERT INTO events VALUES ($1, $2, $3, 1) RETURNING id;\n"
                   + script)
        assert [int(x) for r in out for x in r[0].split("\n")] == [offset + k for k in range(8)], (mode, out)
    assert rows(db, "SELECT count(*), count(*) FILTER (WHERE ts < '2024-01-08') FROM events"
                " WHERE id BETWEEN 100000 AND 100200") == [("16", "12")]
    assert spill_rows(db) == [("0",)]


def test_explain_reports_the_route(tiered):
    db = tiered

    def explain(sql):
        return [r[0] for r in rows(db, f"SELECT tierdb_explain($q${sql}$q$)")]

    assert any("INSERT routes to the delta" in line and "1 row(s) are below T" in line
               for line in explain("INSERT INTO events VALUES (1, '2024-01-02', 'x', 1)"))
    assert any("INSERT routes to the heap:" in line
               for line in explain("INSERT INTO events VALUES (1, '2024-01-09', 'x', 1)"))
    assert any("INSERT routes to the heap and the delta" in line and "1 row(s) at or above" in line
               and "2 below" in line
               for line in explain("INSERT INTO events VALUES (1, '2024-01-09', 'x', 1), (2, '2024-01-02', 'y', 1),"
                                   " (3, '2024-01-03', 'z', 1)"))
    assert any("INSERT routes each row by its tier key" in line
               for line in explain("INSERT INTO events SELECT * FROM plain"))
    assert any("heap only (target of INSERT" in line
               for line in explain("INSERT INTO events VALUES (1, '2024-01-02', 'x', 1) ON CONFLICT DO NOTHING"))


def test_status_and_premake_ignore_the_spill_partition(tiered, tierdb):
    db = tiered
    db.psql(SESSION + "INSERT INTO events VALUES (110001, '2024-01-02', 'c', 1), (110002, '2024-01-12 06:00', 'h', 1)")
    run_once(tierdb, "2d")
    proc = tierdb(["status", "--table", "public.events"])
    assert proc.returncode == 0 and "spill" not in proc.stdout, proc.stdout + proc.stderr
    proc = tierdb(["verify", "--table", "public.events"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows(db, "SELECT tierdb.spill_partition('events')::text") == [("events_tierdb_spill",)]
    # re-registering with the same settings passes over the spill partition
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0 and "nothing to do" in proc.stdout, proc.stdout + proc.stderr
    # unregistering drops it
    proc = tierdb(["unregister", "--table", "public.events"])
    assert proc.returncode == 0, proc.stderr
    assert rows(db, "SELECT count(*) FROM pg_class WHERE relname = 'events_tierdb_spill'") == [("0",)]


def test_one_session_writes_cold_rows_of_two_tables(tiered, tierdb):
    """The routing of one session serves every tiered table it writes: the rows of each are checked with
    that table's row type (a function compiled for the first table's must not refuse the second's)."""
    db = tiered
    db.psql("CREATE TABLE other (LIKE events) PARTITION BY RANGE (ts);"
            " CREATE TABLE other_1 PARTITION OF other FOR VALUES FROM ('2024-01-01') TO ('2024-01-05');"
            " CREATE TABLE other_2 PARTITION OF other FOR VALUES FROM ('2024-01-05') TO ('2024-01-12');"
            " INSERT INTO other SELECT * FROM plain")
    proc = tierdb(["register", "--table", "public.other", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "5d")
    out = rows(db, "INSERT INTO events VALUES (70001, '2024-01-02', 'a', 1) RETURNING id;"
                   " INSERT INTO other VALUES (70002, '2024-01-02', 'b', 2) RETURNING id;"
                   " UPDATE events SET v = 'c' WHERE id = 3 RETURNING id;"
                   " UPDATE other SET v = 'd' WHERE id = 3 RETURNING id")
    assert "\n".join(r[0] for r in out).split("\n") == ["70001", "70002", "3", "3"], out
    assert rows(db, "SELECT v FROM other WHERE id IN (3, 70002) ORDER BY id") == [("d",), ("b",)]
