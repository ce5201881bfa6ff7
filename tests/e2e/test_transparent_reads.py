"""Transparent reads (extension/src/transparent.c, cold_scan.c, seam.c):
with the library preloaded, plain SQL on a registered tiered table reads
heap >= T unioned with lake@S merged with the delta.

The main check is differential: every query runs on the tiered table and
on `plain`, an untiered copy holding the same rows, and must return the
same result; the copy is corrected alongside whenever a test writes a
delta row.
"""

from __future__ import annotations

import json
import threading

import pytest

import lake_files
from test_tiering import SESSION, cutline, make_events, run_once
from seam import reads_cold

# Queries over `{t}`: each runs on events and on plain.
QUERIES = [
    "SELECT count(*), sum(id), sum(amount), count(v), min(ts), max(ts) FROM {t}",
    "SELECT date_trunc('day', ts) AS d, count(*), sum(amount) FROM {t} GROUP BY 1 ORDER BY 1",
    "SELECT * FROM {t} WHERE id IN (1, 2, 1500, 2999, 3000) ORDER BY id",
    "SELECT id, v FROM {t} WHERE ts < '2024-01-03' AND id % 7 = 0 ORDER BY id",
    "SELECT id FROM {t} WHERE ts >= '2024-01-05' AND ts < '2024-01-09' AND amount > 20 ORDER BY id",
    "SELECT count(*) FROM {t} WHERE v IS NULL",
    "SELECT count(*) FROM {t} WHERE v = 'v1234'",
    "SELECT count(*) FROM {t} a JOIN {t} b ON a.id = b.id + 1 WHERE a.ts < '2024-01-04'",
    "WITH w AS (SELECT id, ts FROM {t} WHERE id < 100) SELECT count(*), max(ts) FROM w",
    "SELECT count(*) FROM generate_series(1, 3000) g WHERE EXISTS (SELECT 1 FROM {t} WHERE id = g)",
    "SELECT (SELECT max(amount) FROM {t} WHERE ts < '2024-01-02'), (SELECT min(amount) FROM {t})",
    "SELECT id FROM {t} ORDER BY ts DESC, id LIMIT 5",
    "SELECT row_to_json(x)::text FROM {t} x WHERE id = 42",
    "SELECT count(*) FROM (SELECT * FROM {t} UNION ALL SELECT * FROM {t}) u",
    # conditions the cold scan checks on lake values before converting rows (and at the boundaries)
    "SELECT count(*), sum(id) FROM {t} WHERE id <= 150 AND id > 3",
    "SELECT id FROM {t} WHERE id = 1700",
    "SELECT count(*) FROM {t} WHERE v = 'v17' OR v = 'v18'",
    "SELECT count(*) FROM {t} WHERE v = 'v1234' AND id >= 1234",
    "SELECT count(*) FROM {t} WHERE ts <= '2024-01-02 00:00:00.000001+00' AND ts >= '2024-01-01 23:50:00+00'",
    "SELECT count(*) FROM {t} WHERE id < 2::smallint OR id > 2999::int",
    # every column, decoded late: only for the batches where a row passes
    "SELECT * FROM {t} WHERE v = 'v1236'",
    "SELECT * FROM {t} WHERE id % 500 = 7 AND id > 400 ORDER BY id",
]


def same(db, sql, **fmt):
    got = db.query(SESSION + sql.format(t="events", **fmt))
    want = db.query(SESSION + sql.format(t="plain", **fmt))
    assert got == want, f"{sql}\n  events: {got[:5]}\n  plain:  {want[:5]}"
    return got


@pytest.fixture
def tiered(db, tierdb):
    """events (10 daily partitions, 3000 rows) with 2024-01-01..07 tiered, and `plain`, a copy."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "2d")
    return db


def heap_count(db):
    return int(db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM events")[0][0])


def test_queries_read_both_tiers(tiered):
    db = tiered
    assert heap_count(db) == 900  # 3 hot days of 300 rows
    for sql in QUERIES:
        same(db, sql)
    assert same(db, "SELECT count(*) FROM {t}") == [("3000",)]


def test_prepared_statements_and_cursors(tiered):
    db = tiered
    # Six executions: the last ones run a cached generic plan, whose T comes from the pin at run time.
    rows = db.query(
        SESSION + "PREPARE q(timestamptz) AS SELECT count(*), sum(id) FROM events WHERE ts < $1;\n"
        + "".join(f"EXECUTE q('2024-01-0{d}');\n" for d in range(2, 8))
    )
    want = db.query(SESSION + "".join(
        f"SELECT count(*), sum(id) FROM plain WHERE ts < '2024-01-0{d}';\n" for d in range(2, 8)))
    assert rows == want
    got = db.query(
        "BEGIN; DECLARE c CURSOR FOR SELECT id FROM events ORDER BY id;"
        " FETCH 2 FROM c; FETCH 2 FROM c; MOVE 2990 IN c; FETCH 10 FROM c; COMMIT;"
    )
    # (psql separates the rows of consecutive statements by a newline, not the record separator)
    ids = [int(x) for r in got for x in r[0].split("\n")]
    assert ids == [1, 2, 3, 4] + [2995, 2996, 2997, 2998, 2999, 3000]


def test_corrections_in_the_delta_are_read_at_once_and_after_the_fold(tiered, tierdb):
    db = tiered
    tid = cutline(db, "events")["table_id"]
    db.psql(
        SESSION
        # 5: corrected; 10: deleted; 20: moved to another cold day; 100000: new cold row
        + "UPDATE plain SET v = 'corrected' WHERE id = 5;\n"
        "DELETE FROM plain WHERE id = 10;\n"
        "UPDATE plain SET ts = '2024-01-05 12:00:00+00' WHERE id = 20;\n"
        "INSERT INTO plain VALUES (100000, '2024-01-03 01:02:03.456789+00', 'new', 1.50);\n"
        f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key, old_tier_key, version, payload)"
        f" SELECT {tid}, id::text, 0, (extract(epoch FROM ts) * 1000000)::bigint,"
        "  CASE WHEN id = 20 THEN (SELECT (extract(epoch FROM ts) * 1000000)::bigint FROM events WHERE id = 20) END,"
        "  nextval('tierdb.delta_version'), to_jsonb(p) FROM plain p WHERE id IN (5, 20, 100000);\n"
        f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version)"
        f" VALUES ({tid}, '10', 1, 1704067200000000 + 2880000000, nextval('tierdb.delta_version'));\n"
    )
    for sql in QUERIES:
        same(db, sql)
    plan = "\n".join(r[0] for r in db.query("EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM events"))
    assert "Delta Rows: 4" in plan and "Rows Replaced by Delta: 3" in plan, plan
    proc = run_once(tierdb, "2d")
    assert "fold: operation" in proc.stderr
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {tid}") == [("0",)]
    for sql in QUERIES:
        same(db, sql)


def test_a_query_at_or_above_t_never_opens_the_lake(tiered):
    db = tiered
    c = cutline(db, "events")
    # Known at planning: a plain partitioned table, no cold scan at all.
    plan = "\n".join(r[0] for r in db.query(
        "EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM events WHERE ts >= '2024-01-08'"))
    assert not reads_cold(plan) and "TierDB Heap-Only Guard" in plan, plan
    # Known at run time only (a join's condition): the cold scan is there and does not read.
    plan = "\n".join(r[0] for r in db.query(
        "EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM events e JOIN plain p USING (id) WHERE e.ts >= '2024-01-08'"))
    assert "Lake: not read" in plan, plan
    # Take the lake away: reads that stay above T still work; others say which file is missing.
    data = f"{c['ref']}/data"
    lake_files.move_tree(data, data + ".away")
    try:
        same(db, "SELECT count(*), sum(amount) FROM {t} WHERE ts >= '2024-01-08 00:00:00+00'")
        same(db, "SELECT count(*) FROM {t} WHERE ts > '2024-01-09' AND id > 5")
        error = db.error(SESSION + "SELECT count(*) FROM events WHERE ts >= '2024-01-07'")
        assert ".parquet" in error, error
    finally:
        lake_files.move_tree(data + ".away", data)


def test_reads_open_the_published_metadata_file(tiered):
    """Planning and reading go to the metadata file the cut-line published
    with S, not to the table's newest one: a newer file that is not
    published (another engine's commit, a REST catalog's failed commit) or a
    hint pointing at it changes nothing, and planning reads no lake file
    to find it."""
    db = tiered
    c = cutline(db, "events")
    published = c["props"]["metadata_location"]
    version = int(published.rsplit("/v", 1)[1].split(".")[0])
    hint = f"{c['ref']}/metadata/version-hint.text"
    stray = f"{c['ref']}/metadata/v{version + 1}.metadata.json"
    saved_hint = lake_files.read_bytes(hint)
    lake_files.write_bytes(stray, b"{not metadata")
    lake_files.write_bytes(hint, str(version + 1).encode())
    try:
        same(db, "SELECT count(*), sum(amount) FROM {t}")
        same(db, "SELECT id, v FROM {t} WHERE ts < '2024-01-03' ORDER BY id")
        plan = "\n".join(r[0] for r in db.query(
            "EXPLAIN (ANALYZE, COSTS OFF) SELECT count(*) FROM events WHERE ts < '2024-01-05'"))
        assert reads_cold(plan), plan
    finally:
        lake_files.remove(stray)
        lake_files.write_bytes(hint, saved_hint)


def test_a_query_kept_at_or_above_t_plans_as_a_plain_table(tiered, tierdb_bin, lake):
    """A query whose own conditions keep the tier key at or above T when it
    is planned reads the heap only, planned as a plain partitioned table
    under a one-time guard (the cost of a point lookup is then the plain
    table's). A plan cached with a T is planned again once T advances past
    its bound (a trigger on tierdb.cutline), and the guard refuses a plan
    whose T is gone rather than return rows the lake may have corrected."""
    db = tiered
    sql = "SELECT count(*), sum(id) FROM {t} WHERE ts >= '2024-01-08 12:00:00+00' AND id % 3 = 0"
    for query in (sql, "SELECT * FROM {t} WHERE id = 2400 AND ts = (SELECT ts FROM plain WHERE id = 2400)",
                  "SELECT * FROM {t} WHERE ts > '2024-01-09 00:00:00+00'::timestamptz + interval '1 hour' ORDER BY id"):
        same(db, query)
    plan = "\n".join(r[0] for r in db.query("EXPLAIN (COSTS OFF) " + sql.format(t="events")))
    assert not reads_cold(plan) and "TierDB Heap-Only Guard" in plan, plan
    # A prepared statement's custom plans count its parameters as constants.
    plan = "\n".join(r[0] for r in db.query(
        "SET plan_cache_mode = force_custom_plan; PREPARE p(timestamptz) AS SELECT count(*) FROM events WHERE ts >= $1;"
        " EXPLAIN (COSTS OFF) EXECUTE p('2024-01-09');"))
    assert not reads_cold(plan) and "TierDB Heap-Only Guard" in plan, plan
    want = db.query(SESSION + sql.format(t="plain"))
    env = " ".join(f"{k}={v}" for k, v in {**db.env, "TIERDB_WAREHOUSE": lake, "TIERDB_TIERING_LAG": "1h"}.items())
    out = db.query(
        "PREPARE q AS " + sql.format(t="events") + ";\n"
        "EXECUTE q;\n"  # without parameters the plan is generic, cached with T = 2024-01-08
        f"\\! {env} {tierdb_bin} run --once 2>/dev/null\n"
        "SELECT tier_key_hi FROM tierdb.cutline;\n"
        "EXECUTE q;\n"
    )
    rows = [x for r in out for x in "|".join(r).split("\n")]
    assert rows[1] == "1704844800000000", rows  # T advanced to 2024-01-10, past the bound
    assert [rows[0], rows[2]] == ["|".join(want[0])] * 2, rows


def test_bounds_found_folded_read_heap_only_and_follow_their_functions(tiered):
    """Bounds the planner finds only by folding (a NOT turned around, an
    SQL function computed) read heap-only too; a plan whose bound inlined a
    function is made again when that function changes, as the plain
    table's is, even a function the statement does not name."""
    db = tiered
    db.psql("CREATE FUNCTION hot_start() RETURNS timestamptz LANGUAGE sql IMMUTABLE"
            " AS $$ SELECT timestamptz '2024-01-09 00:00:00+00' $$")
    for sql in ("SELECT count(*), sum(id) FROM {t} WHERE NOT (ts < '2024-01-09 00:00:00+00')",
                "SELECT count(*), sum(id) FROM {t} WHERE ts >= hot_start()",
                "SELECT count(*), sum(id) FROM {t} WHERE id > 10 AND ts >= hot_start() + interval '1 hour'"):
        same(db, sql)
        plan = "\n".join(r[0] for r in db.query("EXPLAIN (COSTS OFF) " + sql.format(t="events")))
        assert not reads_cold(plan) and "TierDB Heap-Only Guard" in plan, plan

    def counts(table):
        out = db.query(
            "CREATE FUNCTION shifted(t timestamptz) RETURNS timestamptz LANGUAGE sql STABLE"
            " AS $$ SELECT t + interval '7 days' $$;\n"
            "CREATE FUNCTION week_after(t timestamptz) RETURNS timestamptz LANGUAGE sql STABLE"
            " AS $$ SELECT shifted(t) $$;\n"
            "SET plan_cache_mode = force_generic_plan;\n"
            f"PREPARE q(timestamptz) AS SELECT count(*) FROM {table} WHERE ts >= week_after($1);\n"
            "EXECUTE q('2024-01-02 00:00:00+00');\n"
            "CREATE OR REPLACE FUNCTION shifted(t timestamptz) RETURNS timestamptz LANGUAGE sql STABLE"
            " AS $$ SELECT t $$;\n"
            "EXECUTE q('2024-01-02 00:00:00+00');\n"
            "DROP FUNCTION week_after(timestamptz), shifted(timestamptz);\n")
        return [x for r in out for x in "|".join(r).split("\n")]

    got, want = counts("events"), counts("plain")
    assert got == want and want[0] != want[1], (got, want)


def test_the_guard_stops_a_heap_only_read_planned_for_a_t_that_moved(tiered):
    """Only a statement planned just before an advance and started after it
    can find T moved (the advance invalidates plans made for the old T);
    the guard on top of its plan then stops it before it reads a row. Here
    the advance is made without its invalidation (session_replication_role
    = replica skips the trigger), so the session plans with the T it last
    read, and the race is deterministic."""
    db = tiered
    env = " ".join(f"{k}={v}" for k, v in db.env.items())
    quietly = "SET session_replication_role = replica; UPDATE tierdb.cutline SET tier_key_hi = {}"
    heap_only = "SELECT count(*) FROM events WHERE ts >= '2024-01-09';\n"
    try:
        error = db.error(
            heap_only  # plans with T = 2024-01-08, which the session keeps
            + f"\\! {env} psql -X -q -c '{quietly.format(1704844800000000)}' >/dev/null\n"  # T = 2024-01-10
            + heap_only
        )
    finally:
        db.psql(quietly.format(1704672000000000))
    assert "ERROR:  40001: the cut-line of table public.events advanced between planning and running" in error, error
    assert "Run the statement again" in error, error
    same(db, "SELECT count(*) FROM {t} WHERE ts >= '2024-01-09'")


def test_the_guard_reads_the_catalog_when_writes_to_it_are_not_counted(tiered):
    """Without the trigger that counts writes to tierdb.cutline (a database
    whose extension predates it, or the trigger disabled), the guard reads
    the cut-line from the catalog at every statement, and still stops a
    read planned for a T that moved."""
    tiered.psql("ALTER TABLE tierdb.cutline DISABLE TRIGGER cutline_writing")
    test_the_guard_stops_a_heap_only_read_planned_for_a_t_that_moved(tiered)


def test_the_guard_reads_the_catalog_again_once_the_cut_line_was_written(tiered):
    """The guard trusts the cut-line its session read last only while
    tierdb.cutline is unchanged since: a write counts as begun when its
    statement starts and as done when its transaction ends, after its
    commit is visible. While one is in flight the guard reads the catalog
    (and caches nothing); once it is done, the new T is read, even in
    replica mode, which skips the invalidation of plans."""
    import psycopg

    db = tiered
    hot = "SELECT count(*) FROM events WHERE ts >= '2024-01-09'"
    want = db.query(SESSION + "SELECT count(*) FROM plain WHERE ts >= '2024-01-09'")[0][0]
    with psycopg.connect(db.dsn, autocommit=True) as reader, psycopg.connect(db.dsn, autocommit=True) as writer:
        assert str(reader.execute(hot).fetchone()[0]) == want  # plans and caches T = 2024-01-08
        writer.execute("BEGIN")
        writer.execute("SET LOCAL session_replication_role = replica")
        writer.execute("UPDATE tierdb.cutline SET tier_key_hi = 1704844800000000")  # 2024-01-10, in flight
        assert str(reader.execute(hot).fetchone()[0]) == want  # still T = 2024-01-08 for its snapshot
        writer.execute("COMMIT")
        try:
            with pytest.raises(psycopg.errors.SerializationFailure, match="advanced between planning and running"):
                reader.execute(hot)
        finally:
            writer.execute("SET session_replication_role = replica;"
                           " UPDATE tierdb.cutline SET tier_key_hi = 1704672000000000")


def test_heap_only_plans_read_as_the_plain_table_does(tiered):
    """Heap-only plans with their guard: ordered, with columns the query
    sorts by but does not return left out, through a scrollable cursor
    read backwards, and in EXPLAIN VERBOSE, also of a grouping set."""
    db = tiered
    hot = "ts >= '2024-01-09 06:00:00+00'"
    for sql in ("SELECT id, v FROM {t} WHERE " + hot + " ORDER BY amount DESC, id LIMIT 7",
                "SELECT v, count(*), grouping(v) FROM {t} WHERE " + hot + " GROUP BY ROLLUP (v) ORDER BY 1 LIMIT 5",
                "SELECT * FROM {t} WHERE " + hot + " AND id IN (SELECT id FROM plain WHERE id % 7 = 0) ORDER BY id"):
        same(db, sql)
    # In parallel workers too (the guard is checked by the leader, which starts the plan).
    parallel = ("SET force_parallel_mode = on; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
                " SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;")
    same(db, parallel + " SELECT count(*), sum(amount) FROM {t} WHERE " + hot)
    plan = "\n".join(r[0] for r in db.query(parallel + " EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE " + hot))
    assert "Gather" in plan and "TierDB Heap-Only Guard" in plan, plan
    cursor = ("BEGIN; DECLARE c SCROLL CURSOR FOR SELECT id FROM {t} WHERE " + hot + " ORDER BY id;"
              " FETCH FORWARD 3 FROM c; FETCH BACKWARD 2 FROM c; FETCH ABSOLUTE 10 FROM c; COMMIT;")
    assert db.query(SESSION + cursor.format(t="events")) == db.query(SESSION + cursor.format(t="plain"))
    plan = "\n".join(r[0] for r in db.query(
        SESSION + "EXPLAIN (VERBOSE, COSTS OFF) SELECT v, count(*), grouping(v) FROM events WHERE " + hot + " GROUP BY ROLLUP (v)"))
    assert plan.startswith("MixedAggregate\n  Output: events.v, count(*), GROUPING(events.v)"), plan
    assert "InitPlan 1 (checked when the statement starts)\n    ->  Custom Scan (TierDB Heap-Only Guard)\n" in plan
    assert "Heap Only: public.events at or above T 2024-01-08 00:00:00+00" in plan, plan


def test_a_statement_that_writes_reads_heap_only_too(tiered):
    """The guard is an initplan of the plan's top node, whatever it is: a
    statement that writes what it reads above T reads the heap only too."""
    db = tiered
    plan = "\n".join(r[0] for r in db.query(
        "EXPLAIN (COSTS OFF) INSERT INTO plain SELECT * FROM events WHERE ts >= '2024-01-09' AND id < 0"))
    assert plan.startswith("Insert on plain") and "TierDB Heap-Only Guard" in plan, plan
    assert not reads_cold(plan), plan
    rows = db.query("BEGIN; CREATE TEMP TABLE copied AS SELECT * FROM events WHERE false;"
                    " WITH moved AS (INSERT INTO copied SELECT * FROM events WHERE ts >= '2024-01-09' RETURNING id)"
                    " SELECT count(*), sum(id) FROM moved; ROLLBACK;")
    assert rows == db.query(SESSION + "SELECT count(*), sum(id) FROM plain WHERE ts >= '2024-01-09'"), rows

def test_a_generic_plan_reads_heap_only_when_its_parameters_keep_it_above_t(tiered):
    """A generic plan's bound on the tier key is a parameter: the plan is
    heap-only, and each execution checks the bound against T when it
    starts. Below T, that execution runs the statement planned again with
    the seam union and the parameters' values. One cached plan serves both."""
    db = tiered
    generic = SESSION + "SET plan_cache_mode = force_generic_plan;\n"
    prepare = ("PREPARE since(timestamptz) AS SELECT count(*), sum(id) FROM {t} WHERE ts >= $1;\n"
               "PREPARE lookup(bigint, timestamptz) AS SELECT * FROM {t} WHERE id = $1 AND ts = $2;\n"
               "PREPARE recent(timestamptz) AS SELECT count(*), max(id) FROM {t} WHERE ts > $1 - interval '6 hours';\n")
    days = [f"2024-01-{d:02} 06:00:00+00" for d in (9, 2, 10, 7, 8, 1, 9)]
    keys = db.query(SESSION + "SELECT id, ts FROM plain WHERE id IN (2400, 5, 2999, 1800, 2100, 1, 3000)")
    run = "".join(f"EXECUTE since('{d}');\nEXECUTE recent('{d}');\n" for d in days) + "".join(
        f"EXECUTE lookup({i}, '{ts}');\n" for i, ts in keys)
    assert db.query(generic + prepare.format(t="events") + run) == db.query(generic + prepare.format(t="plain") + run)
    out = db.query(generic + prepare.format(t="events") + run
                   + "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name;\n")
    rows = [x for r in out for x in "|".join(r).split("\n")]
    assert rows[-3:] == ["lookup|7|0", "recent|7|0", "since|7|0"], rows
    # EXPLAIN EXECUTE starts the plan as an execution does: it shows the plan that execution would run.
    explain = generic + prepare.format(t="events") + "EXPLAIN (COSTS OFF) EXECUTE since('{}');"
    hot = "\n".join(r[0] for r in db.query(explain.format("2024-01-09")))
    assert not reads_cold(hot) and "TierDB Heap-Only Guard" in hot, hot
    assert "Heap Only: public.events if $1 is at or above T when the statement starts" in hot, hot
    cold = "\n".join(r[0] for r in db.query(explain.format("2024-01-02")))
    assert reads_cold(cold) and "Heap-Only Guard" not in cold, cold
    assert "Lake Files Pruned" in cold, cold


def test_a_bound_known_when_the_statement_starts_checks_then(tiered):
    """Stable functions (now()), and PL/pgSQL's variables, in a bound
    computed only when the statement starts: heap-only when it is at or
    above T, both tiers otherwise, with PL/pgSQL's cached plans and a
    scrollable cursor read backwards."""
    db = tiered
    for sql in ("SELECT count(*) FROM {t} WHERE ts >= now() - interval '1 day'",  # the data is from 2024
                "SELECT count(*), sum(id) FROM {t} WHERE ts >= now() - interval '10 years'",
                "SELECT count(*) FROM {t} WHERE ts > statement_timestamp() - interval '10 years' AND id % 3 = 0"):
        same(db, sql)
    plan = "\n".join(r[0] for r in db.query(
        "EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE ts >= now() - interval '1 day'"))
    assert "Heap Only: public.events if (now() - '1 day'::interval) is at or above T" in plan, plan
    plan = "\n".join(r[0] for r in db.query(
        "EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE ts >= now() - interval '10 years'"))
    assert reads_cold(plan), plan
    line = db.query("SELECT tierdb_explain('SELECT count(*) FROM events WHERE ts >= now() - interval ''1 day''')")
    assert "reads the heap at or above T 2024-01-08 00:00:00+00" in line[0][0], line
    assert "(checked when the statement starts)" in line[0][0], line
    function = """
        CREATE FUNCTION {t}_since(since timestamptz) RETURNS text LANGUAGE plpgsql AS $$
        DECLARE
            c SCROLL CURSOR FOR SELECT id FROM {t} WHERE ts >= since + interval '1 hour' ORDER BY id;
            last_ids text := '';
            r record;
        BEGIN
            OPEN c;
            FETCH LAST FROM c INTO r;
            last_ids := last_ids || coalesce(r.id::text, '-');
            FETCH PRIOR FROM c INTO r;
            last_ids := last_ids || ',' || coalesce(r.id::text, '-');
            CLOSE c;
            RETURN (SELECT count(*) FROM {t} WHERE ts >= since) || ':' || last_ids;
        END $$;
    """
    db.psql(function.format(t="events") + function.format(t="plain"))
    calls = "".join(f"SELECT {{t}}_since('2024-01-{d:02}');\n" for d in (9, 3, 10, 8, 7, 9, 1, 9, 11))
    for mode in ("auto", "force_generic_plan"):
        same(db, f"SET plan_cache_mode = {mode};\n" + calls)
    # A bound whose function reads the table with a bound of its own, checked while the first is computed.
    db.psql("CREATE FUNCTION first_ts(tbl regclass) RETURNS timestamptz STABLE LANGUAGE plpgsql AS $$"
            " DECLARE r timestamptz; BEGIN"
            " EXECUTE format('SELECT min(ts) FROM %s WHERE ts >= now() - interval ''10 years''', tbl) INTO r;"
            " RETURN r; END $$")
    for days in (0, 9):
        same(db, f"SELECT count(*), sum(id) FROM {{t}} WHERE ts >= first_ts('{{t}}') + interval '{days} days'")
    # A cursor declared without SCROLL scrolls when its plan can: the plan run instead scrolls too.
    cursor = ("BEGIN; DECLARE c CURSOR FOR SELECT id FROM {t} WHERE ts >= now() - interval '10 years';"
              " MOVE FORWARD ALL IN c; FETCH BACKWARD ALL FROM c; COMMIT;")
    got = sorted(int(x) for r in db.query(SESSION + cursor.format(t="events")) for x in r[0].split("\n"))
    assert got == list(range(1, 3001)), got[:10]


def test_a_heap_only_read_takes_no_reader_key(tiered):
    """A heap-only read does not pin: its guard compares T with the
    cut-line its snapshot sees, and takes no advisory lock; a read of the
    lake in the same transaction still takes the reader key."""
    db = tiered
    advisory = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();\n"
    out = db.query(
        "BEGIN;\n"
        "SELECT count(*) FROM events WHERE ts >= '2024-01-09';\n" + advisory
        + "SELECT count(*) FROM events;\n" + advisory
        + "COMMIT;\n"
    )
    rows = [x for r in out for x in "|".join(r).split("\n")]
    assert rows == ["600", "0", "3000", "1"], rows


def test_a_cut_line_advance_invalidates_plans_made_for_the_old_t(tiered):
    """The trigger on tierdb.cutline, alone: a cached heap-only plan is
    planned again when T moves (here by hand, and back), with nothing else
    about the table changing."""
    db = tiered
    out = db.query(
        "PREPARE q AS SELECT count(*) FROM events WHERE ts >= '2024-01-09';\n"
        "EXPLAIN (COSTS OFF) EXECUTE q;\n"
        "UPDATE tierdb.cutline SET tier_key_hi = 1704844800000000; SELECT '--';\n"  # 2024-01-10
        "EXPLAIN (COSTS OFF) EXECUTE q;\n"
        "UPDATE tierdb.cutline SET tier_key_hi = 1704672000000000; SELECT '--';\n"  # back to 2024-01-08
        "EXPLAIN (COSTS OFF) EXECUTE q;\n"
    )
    plans = "\n".join(r[0] for r in out).split("--")
    assert len(plans) == 3, plans
    assert [reads_cold(p) for p in plans] == [False, True, False], plans
    assert ["TierDB Heap-Only Guard" in p for p in plans] == [True, False, True], plans


def test_repeatable_read_plans_with_its_transaction_pin(tiered):
    """Under REPEATABLE READ a statement is planned with the transaction's
    pin, not the cut-line of the moment: T moving meanwhile (here by hand,
    in another session) neither trips the guard nor changes the answer."""
    db = tiered
    want = db.query(SESSION + "SELECT count(*), sum(id) FROM plain WHERE ts >= '2024-01-10 06:00:00+00'")
    env = " ".join(f"{k}={v}" for k, v in db.env.items())
    move = "psql -X -q -c 'UPDATE tierdb.cutline SET tier_key_hi = {}' >/dev/null"
    out = db.query(
        "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
        "SELECT count(*) FROM events;\n"  # pins T = 2024-01-08 for the transaction
        f"\\! {env} {move.format(1704844800000000)}\n"  # T = 2024-01-10 for everyone else
        "SELECT count(*), sum(id) FROM events WHERE ts >= '2024-01-10 06:00:00+00';\n"
        "COMMIT;\n"
        f"\\! {env} {move.format(1704672000000000)}\n"
    )
    rows = [x for r in out for x in "|".join(r).split("\n")]
    assert rows == ["3000", "|".join(want[0])], rows


def test_conditions_prune_lake_files(tiered):
    db = tiered
    plan = "\n".join(r[0] for r in db.query(
        "EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM events WHERE ts < '2024-01-02' AND id < 10"))
    assert "Lake Files: 1" in plan and "Lake Files Pruned: 6" in plan, plan
    same(db, "SELECT * FROM {t} WHERE ts < '2024-01-02' AND id < 10 ORDER BY id")
    # The same conditions are checked on lake values before rows become tuples.
    assert "Rows Skipped Before Conversion: 291" in plan, plan
    # Late materialisation: of the 3 lake files (one batch each) whose string bounds admit 'v1236',
    # the 2 without it decode v only.
    plan = "\n".join(r[0] for r in db.query("EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM events WHERE v = 'v1236'"))
    assert "Lake Files: 3" in plan and "Batches Skipped Before Decoding: 2" in plan, plan
    # The executor's filter is compiled only when the cold scan reads, and EXPLAIN shows it as a plan's own.
    plan = "\n".join(r[0] for r in db.query(
        SESSION + "EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM events WHERE ts < '2024-01-03' AND id % 7 = 0"))
    (removed,) = db.query(SESSION + "SELECT count(*) FROM plain WHERE ts < '2024-01-03' AND id % 7 <> 0")[0]
    cold = plan[plan.index("TierDB Cold Scan"):]
    assert "Filter: ((ts < '2024-01-03 00:00:00+00'::timestamp with time zone) AND ((id % '7'::bigint) = 0))" in cold, plan
    assert f"Rows Removed by Filter: {removed}\n" in cold, plan
    # The row estimate comes from the lake's record count (2100 rows in 7 days).
    (line,) = [r[0] for r in db.query("EXPLAIN SELECT * FROM events") if "TierDB Cold Scan" in r[0]]
    assert "rows=2100 " in line, line


def test_heap_semantics_where_rows_are_written_or_locked(tiered):
    db = tiered
    # FOR UPDATE returns (and locks) the rows of both tiers (test_locking_reads.py).
    rows = db.query("BEGIN; SELECT count(*) FROM (SELECT id FROM events FOR UPDATE) x; COMMIT;")
    assert rows == [("3000",)]
    # DML reaches both tiers (test_transparent_updates.py; without transparent writes it is refused,
    # test_dml_guard.py).
    db.psql("DELETE FROM events WHERE id < 3")
    assert db.query("SELECT count(*) FROM events WHERE id < 3") == [("0",)]
    db.psql("DELETE FROM events WHERE id = 3000 AND ts >= '2024-01-08'")
    assert db.query("SELECT count(*) FROM events") == [("2997",)]
    # ONLY a partitioned parent holds no rows.
    assert db.query("SELECT count(*) FROM ONLY events") == [("0",)]


def test_transparent_reads_off_reads_the_heap(tiered):
    db = tiered
    assert db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM events") == [("900",)]
    plan = "\n".join(r[0] for r in db.query("EXPLAIN SELECT count(*) FROM events"))
    assert reads_cold(plan)
    # Plans cached with one setting are planned again under the other: prepared statements and PL/pgSQL's.
    db.psql("CREATE FUNCTION counted() RETURNS bigint LANGUAGE plpgsql AS $$"
            " BEGIN RETURN (SELECT count(*) FROM events); END $$")
    out = db.query(
        "SET plan_cache_mode = force_generic_plan; PREPARE q AS SELECT count(*) FROM events;\n"
        "EXECUTE q; SELECT counted();\n"
        "SET tierdb.transparent_reads = off; EXECUTE q; SELECT counted();\n"
        "SET tierdb.transparent_reads = on; EXECUTE q; SELECT counted();\n"
    )
    rows = [x for r in out for x in "|".join(r).split("\n")]
    assert rows == ["3000", "3000", "900", "900", "3000", "3000"], rows


@pytest.mark.parametrize("sql", [
    "SELECT tableoid::regclass, count(*) FROM events GROUP BY 1",
    "SELECT count(*) FROM events WHERE ctid <> '(0,0)'",
    # a system column read from a sublink, of the sublink's table and of the outer one
    "SELECT (SELECT max(e.xmin::text) FROM events e)",
    "SELECT count(*) FROM events e WHERE EXISTS (SELECT 1 WHERE e.ctid IS NOT NULL)",
])
def test_system_columns_are_refused_with_a_hint(tiered, sql):
    error = tiered.error(sql)
    assert "cannot read system columns" in error and "transparent_reads = off" in error, error


def test_privileges_still_apply(tiered):
    db = tiered
    db.psql("CREATE ROLE reader LOGIN; CREATE ROLE outsider LOGIN; GRANT SELECT ON events TO reader;")
    try:
        got = db.query("SET ROLE reader; SELECT count(*) FROM events")
        assert got == [("3000",)]
        error = db.error("SET ROLE outsider; SELECT count(*) FROM events")
        assert "permission denied for table events" in error, error
        error = db.error("SET ROLE outsider; SELECT count(*) FROM tierdb.cold_rows(NULL::events)")
        assert "permission denied for table events" in error, error
    finally:
        db.psql("DROP OWNED BY reader, outsider; DROP ROLE reader; DROP ROLE outsider;")


def test_row_level_security_filters_both_tiers(tiered):
    db = tiered
    db.psql("CREATE ROLE evens LOGIN; GRANT SELECT ON events, plain TO evens;"
            " ALTER TABLE events ENABLE ROW LEVEL SECURITY; ALTER TABLE plain ENABLE ROW LEVEL SECURITY;"
            " CREATE POLICY p ON events FOR SELECT TO evens USING (id % 2 = 0);"
            " CREATE POLICY p ON plain FOR SELECT TO evens USING (id % 2 = 0);")
    try:
        got = db.query("SET ROLE evens; SELECT count(*), sum(id) FROM events")
        want = db.query("SET ROLE evens; SELECT count(*), sum(id) FROM plain")
        assert got == want == [("1500", str(sum(range(2, 3001, 2))))]
    finally:
        db.psql("DROP OWNED BY evens; DROP ROLE evens;")


def test_a_timestamptz_key_matches_whatever_the_session_time_zone(db, tierdb):
    """The delta's key text is the daemon's rendering (ISO, UTC); a reader in
    another time zone and date style must still match it to the lake row."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    assert tierdb(["register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts"]).returncode == 0
    run_once(tierdb, "2d")
    tid = cutline(db, "events")["table_id"]
    # The daemon's rendering of row 7's key: "7<US>2024-01-01 00:28:48.000007+00".
    db.psql(
        SESSION + "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version)"
        f" SELECT {tid}, id || chr(31) || ts::text, 1, (extract(epoch FROM ts) * 1000000)::bigint,"
        "  nextval('tierdb.delta_version') FROM tierdb.cold_rows(NULL::events) WHERE id = 7"
    )
    assert db.query(f"SELECT replace(pk, chr(31), '|') FROM tierdb.delta WHERE table_id = {tid}") == [("7|2024-01-01 00:28:48.000007+00",)]
    for settings in ["SET TimeZone = 'America/New_York'; SET DateStyle = 'SQL, DMY';",
                     "SET TimeZone = 'Asia/Kolkata'; SET DateStyle = 'German';", SESSION]:
        assert db.query(settings + "SELECT count(*) FROM events WHERE id IN (7, 8)") == [("1",)], settings


def test_cold_rows_called_directly_returns_the_same_rows(tiered):
    db = tiered
    got = db.query(SESSION + "SELECT count(*), sum(id), sum(amount) FROM tierdb.cold_rows(NULL::events)")
    want = db.query(SESSION + "SELECT count(*), sum(id), sum(amount) FROM plain WHERE ts < '2024-01-08'")
    assert got == want


def test_an_integer_key_with_a_composite_pk(db, tierdb):
    db.psql(
        f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on;\n'
        "CREATE TABLE m (site int NOT NULL, seq int NOT NULL, tag text, PRIMARY KEY (site, seq))"
        " PARTITION BY RANGE (seq);\n"
        "DO $$ BEGIN FOR i IN 0..9 LOOP EXECUTE format("
        "'CREATE TABLE m_%s PARTITION OF m FOR VALUES FROM (%s) TO (%s)', i, i * 1000, (i + 1) * 1000);"
        " END LOOP; END $$;\n"
        "INSERT INTO m SELECT s, g, 'x' || g FROM generate_series(0, 9999) g, generate_series(1, 2) s;\n"
        "CREATE TABLE m_plain AS SELECT * FROM m;\n"
    )
    assert tierdb(["register", "--table", "public.m", "--pk", "site,seq", "--tier-key", "seq"]).returncode == 0
    run_once(tierdb, "3000")
    tid = cutline(db, "m")["table_id"]
    assert int(db.query("SET tierdb.transparent_reads = off; SELECT min(seq) FROM m")[0][0]) >= 6000
    # A correction of one site's row only: the composite key must match exactly.
    db.psql(
        "UPDATE m_plain SET tag = 'fixed' WHERE site = 2 AND seq = 17;\n"
        f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version, payload)"
        f" SELECT {tid}, '2' || chr(31) || '17', 0, 17, nextval('tierdb.delta_version'), to_jsonb(p)"
        " FROM m_plain p WHERE site = 2 AND seq = 17;\n"
    )
    for sql in ["SELECT count(*), sum(seq), count(DISTINCT tag) FROM {t}",
                "SELECT * FROM {t} WHERE seq BETWEEN 15 AND 19 ORDER BY site, seq",
                "SELECT site, count(*) FROM {t} WHERE seq < 2500 GROUP BY site ORDER BY site"]:
        got = db.query(sql.format(t="m"))
        want = db.query(sql.format(t="m_plain"))
        assert got == want, sql


def test_reads_stay_exact_while_the_daemon_tiers_and_folds(tiered, tierdb_bin, lake):
    """A reader loop checks the whole table, per statement and inside
    REPEATABLE READ transactions, while the daemon moves the remaining
    partitions and folds no-op corrections (same row images) meanwhile.
    A second reader keeps one session: generic plans whose parameter
    crosses T as it advances (checked when each execution starts), and a
    query kept above T when planned (whose guard may ask for a retry)."""
    import psycopg

    db = tiered
    summary = "SELECT count(*) || ' ' || sum(id) || ' ' || sum(amount) FROM {t}"
    (want,) = db.query(summary.format(t="plain"))[0]
    tid = cutline(db, "events")["table_id"]
    failures, stop = [], threading.Event()
    since = "SELECT count(*), sum(id) FROM {t} WHERE ts >= %s::timestamptz"
    bounds = [f"2024-01-{d:02} {h:02}:00:00+00" for d in (8, 9, 10) for h in (0, 12)]
    want_since = {b: db.query(SESSION + since.format(t="plain").replace("%s", f"'{b}'"))[0] for b in bounds}
    above = "SELECT count(*), sum(id) FROM {t} WHERE ts >= '2024-01-10 18:00:00+00'"
    want_above = db.query(SESSION + above.format(t="plain"))[0]
    retries, rounds = [], []

    def session_loop():
        with psycopg.connect(db.dsn, autocommit=True) as conn:
            conn.execute("SET plan_cache_mode = force_generic_plan")
            while not stop.is_set():
                rounds.append(1)
                for b in bounds:
                    got = tuple(str(v) for v in conn.execute(since.format(t="events"), (b,), prepare=True).fetchone())
                    if got != want_since[b]:
                        failures.append(("generic plan", b, got))
                try:
                    got = tuple(str(v) for v in conn.execute(above.format(t="events")).fetchone())
                    if got != want_above:
                        failures.append(("kept above T", got))
                except psycopg.errors.SerializationFailure:
                    retries.append(1)

    def read_loop():
        while not stop.is_set():
            (got,) = db.query(summary.format(t="events"))[0]
            if got != want:
                failures.append(("statement", got))
            out = db.psql(
                "BEGIN ISOLATION LEVEL REPEATABLE READ;\n" + summary.format(t="events") + ";\n"
                "SELECT pg_sleep(0.05)::text || 'slept';\n" + summary.format(t="events") + ";\nCOMMIT;")
            lines = [line for line in out.splitlines() if line.strip() and "slept" not in line]
            if [line for line in lines if line[0].isdigit()] != [want, want]:
                failures.append(("repeatable read", out))

    def reporting(loop):
        def run():
            try:
                loop()
            except Exception as e:  # a reader that dies must fail the test, not end quietly
                failures.append((loop.__name__, repr(e)))
        return run

    readers = [threading.Thread(target=reporting(read_loop)), threading.Thread(target=reporting(session_loop))]
    for reader in readers:
        reader.start()
    try:
        import subprocess
        from pg_cluster import clean_env
        env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake)}
        for lag in ["36h", "24h", "12h", "1h"]:
            # No-op corrections of a few cold rows, folded in the same cycle.
            db.psql(
                f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version, payload)"
                f" SELECT {tid}, id::text, 0, (extract(epoch FROM ts) * 1000000)::bigint,"
                "  nextval('tierdb.delta_version'), to_jsonb(p) FROM plain p"
                f" WHERE ts < (SELECT to_timestamp(tier_key_hi / 1e6) FROM tierdb.cutline WHERE table_id = {tid})"
                "  AND id % 97 = 0"
                " ON CONFLICT (table_id, pk) DO UPDATE SET version = EXCLUDED.version"
            )
            proc = subprocess.run([str(tierdb_bin), "run", "--once"], env={**env, "TIERDB_TIERING_LAG": lag},
                                  capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert failures == [], failures[:3]
    assert len(rounds) > 1, rounds
    assert heap_count(db) < 900
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {tid}") == [("0",)]


def test_cached_plans_follow_registration_changes(db, tierdb_bin, lake):
    """Registering or unregistering a table invalidates the plans that read it
    in every session (a trigger on tierdb.tables): a prepared statement keeps
    working across both, reading the lake exactly while the table is tiered."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    env = " ".join(f"{k}={v}" for k, v in {**db.env, "TIERDB_WAREHOUSE": lake, "TIERDB_TIERING_LAG": "2d"}.items())
    out = db.query(
        "PREPARE q AS SELECT count(*) FROM events;\n"
        + "EXECUTE q;\n" * 6  # the generic plan is cached by now
        + f"\\! {env} {tierdb_bin} register --table public.events --pk id --tier-key ts >/dev/null\n"
        f"\\! {env} {tierdb_bin} run --once 2>/dev/null\n"
        + "EXECUTE q;\n" * 2
        + f"\\! {env} {tierdb_bin} unregister --table public.events >/dev/null\n"
        "EXECUTE q;\n"
    )
    counts = [x for r in out for x in r[0].split("\n")]
    # Unregistered, the table is a plain partitioned table again: its heap holds the last 3 days.
    assert counts == ["3000"] * 8 + ["900"], counts


def test_a_column_added_later_reads_null_from_the_lake(tiered):
    """The seam union is cached per table and rebuilt when the table changes:
    within one session, a column added after tiering shows up at once, null
    for the lake rows (which never had it) as for the heap rows."""
    db = tiered
    out = db.query(
        "SELECT count(*) FROM events;\n"
        # (column changes of a registered table are refused, src/ddl.c: this
        # builds one with the guard off, for the cache's sake)
        "ALTER EVENT TRIGGER tierdb_ddl_guard DISABLE;\n"
        "ALTER TABLE events ADD COLUMN extra int;\n"
        "ALTER EVENT TRIGGER tierdb_ddl_guard ENABLE ALWAYS;\n"
        "SELECT count(*), count(extra) FROM events;\n"
        "UPDATE events SET extra = 1 WHERE id = 3000 AND ts >= '2024-01-08';\n"
        "SELECT count(*), count(extra), sum(extra) FROM events;\n"
    )
    # (psql separates consecutive statements' rows by a newline, not the record separator)
    lines = "\t".join(field for row in out for field in row).split("\n")
    assert lines == ["3000", "3000\t0", "3000\t1\t1"], out


def test_cold_rows_as_whole_rows(tiered):
    """tierdb.cold_rows referred to as whole rows (the set-returning function serves those; the cold scan
    produces columns)."""
    db = tiered
    assert db.query("SELECT count(c), count(*) FILTER (WHERE c IS NOT NULL) FROM tierdb.cold_rows(NULL::events) c") \
        == db.query("SELECT count(p), count(*) FILTER (WHERE p IS NOT NULL) FROM plain p WHERE ts < '2024-01-08'") \
        == [("2100", "1825")]
    got = db.query("SELECT to_jsonb(c) = to_jsonb(p) FROM tierdb.cold_rows(NULL::events) c"
                   " JOIN plain p USING (id) WHERE id = 5")
    assert got == [("t",)]
