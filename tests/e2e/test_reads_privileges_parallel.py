"""Transparent reads under parallel query, row-level security, views and
column grants (issue 16, items 2, 9, 11 and the read side of 14).

Differential: `big` is a tiered table and `plain` an untiered copy with
the same rows, the same grants and the same policies; every query runs on
both and the sorted rows must be equal. The cluster runs with parallel
query on; the tests turn transparent reads on for their databases (the
production default) and force parallel plans where a table this small
would not get one.
"""

from __future__ import annotations

import uuid

import pytest

from test_tiering import cutline, run_once
from seam import reads_cold

ROWS = 300_000
WIDTH = 50_000
LAG = str(2 * WIDTH)
FORCE_PARALLEL = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
                  " SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;\n")

# Queries over `{t}`, run on big and on plain.
QUERIES = [
    "SELECT count(*), sum(id), sum(amount), count(v), min(k), max(k) FROM {t}",
    "SELECT g, count(*), sum(amount), max(v) FROM {t} GROUP BY g",
    "SELECT count(*), sum(a.amount) FROM {t} a JOIN {t} b ON a.id = b.id WHERE b.g < 10",
    "SELECT count(DISTINCT v), sum(k) FROM {t} WHERE k % 3 = 0",
    "SELECT count(*), sum(amount) FROM {t} WHERE k >= 100000 AND k < 200000",
    "SELECT count(*), sum(id) FROM (SELECT * FROM {t} UNION ALL SELECT * FROM {t}) u",
    "SELECT id, k, g, v, amount FROM {t} WHERE id % 5000 = 17",
]


def same(db, sql, prefix="", **fmt):
    """Runs sql over big and over plain (as `prefix` sets up); the sorted rows must be equal."""
    got = sorted(db.query(prefix + sql.format(t="big", **fmt)))
    want = sorted(db.query(prefix + sql.format(t="plain", **fmt)))
    assert got == want, f"{prefix}{sql}\n  big:   {got[:5]}\n  plain: {want[:5]}"
    return got


def same_error(db, sql, prefix=""):
    """sql fails on big as on plain, with the same message (the table's name aside)."""
    got = first_line(db.error(prefix + sql.format(t="big")))
    want = first_line(db.error(prefix + sql.format(t="plain")))
    assert got.replace("big", "plain") == want, f"{sql}\n  big:   {got}\n  plain: {want}"
    return got


def first_line(error: str) -> str:
    return next(line for line in error.splitlines() if "ERROR:" in line)


@pytest.fixture
def tiered(db, tierdb):
    """big: 6 partitions of 50,000 keys, 300,000 rows, the first three in the
    lake (T = 150000); plain: an untiered copy."""
    db.psql(
        "CREATE TABLE big (id bigint NOT NULL, k bigint NOT NULL, g int, v text, amount numeric(12,2))"
        " PARTITION BY RANGE (k);\n"
        "DO $$ BEGIN FOR p IN 0..5 LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF big FOR VALUES FROM (%s) TO (%s)',"
        f"    'big_' || p, p * {WIDTH}, (p + 1) * {WIDTH});"
        " END LOOP; END $$;\n"
        "INSERT INTO big SELECT i, i, i % 97, CASE WHEN i % 11 = 0 THEN NULL ELSE 'v' || (i % 1000) END,"
        f" CASE WHEN i % 13 = 0 THEN NULL ELSE (i % 100000) / 100.0 END FROM generate_series(0, {ROWS - 1}) i;\n"
        "CREATE TABLE plain AS SELECT * FROM big;\n"
        "ANALYZE big; ANALYZE plain;\n"
    )
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    proc = tierdb(["register", "--table", "public.big", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    assert cutline(db, "big")["T"] == 3 * WIDTH
    return db


@pytest.fixture
def roles(db):
    """roles(*names) creates login roles with unique names (roles are the
    cluster's) and returns them; they are dropped after the test."""
    made = []

    def make(*names, options=""):
        out = []
        for name in names:
            role = f"{name}_{uuid.uuid4().hex[:8]}"
            db.psql(f"CREATE ROLE {role} LOGIN {options}")
            made.append(role)
            out.append(role)
        return out if len(out) > 1 else out[0]

    yield make
    for role in made:
        db.psql(f"DROP OWNED BY {role} CASCADE; DROP ROLE {role};")


def correct(db, pairs):
    """Corrections through the routed-write API (as the superuser), and the same to plain."""
    for upsert_id, amount in pairs:
        db.psql(f"SELECT tierdb_upsert('big', to_jsonb(r)) FROM (SELECT id, k, g, 'corrected' AS v,"
                f" {amount}::numeric(12,2) AS amount FROM plain WHERE id = {upsert_id}) r;\n"
                f"UPDATE plain SET v = 'corrected', amount = {amount} WHERE id = {upsert_id};")


def corrections(db):
    """Cold rows corrected, deleted and added, and a hot row corrected: in big through the API, in plain directly."""
    correct(db, [(5, 1.25), (77777, -3.5), (149999, 0), (200001, 9.99)])
    for gone in (6, 120000):
        assert db.query(f"SELECT tierdb_delete('big', '{gone}', {gone}::bigint)") == [("delta",)]
        db.psql(f"DELETE FROM plain WHERE id = {gone}")
    db.psql("SELECT tierdb_upsert('big', '{\"id\": 1000000, \"k\": 1234, \"g\": 3, \"v\": \"new\", \"amount\": 7}');\n"
            "INSERT INTO plain VALUES (1000000, 1234, 3, 'new', 7);")
    delta = int(db.query("SELECT count(*) FROM tierdb.delta")[0][0])
    assert delta == 6, delta


def plan(db, sql, prefix=FORCE_PARALLEL):
    return "\n".join(r[0] for r in db.query(prefix + "EXPLAIN (COSTS OFF) " + sql))


# ------------------------------------------------------------------ item 2: parallel plans


def test_parallel_plans_read_the_lake_once(tiered, tierdb):
    """A Gather over the heap arm (Parallel Append of its partitions) beside
    the cold scan, which only the leader runs: exact counts and sums, with
    forced parallel plans and with the defaults, before and after
    corrections and a fold, under READ COMMITTED and REPEATABLE READ."""
    db = tiered
    shape = plan(db, QUERIES[0].format(t="big"))
    assert "Gather" in shape and "Parallel Append" in shape and reads_cold(shape), shape
    rr = "SET default_transaction_isolation = 'repeatable read';\n"
    for stage in ("tiered", "corrected", "folded"):
        if stage == "corrected":
            corrections(db)
        if stage == "folded":
            run_once(tierdb, LAG)
            assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]
        for sql in QUERIES:
            same(db, sql, FORCE_PARALLEL)
            same(db, sql, rr + FORCE_PARALLEL)
            same(db, sql)
        assert same(db, "SELECT count(*) FROM {t}") == [(str(ROWS - 1 if stage != "tiered" else ROWS),)]


def test_create_table_as_with_a_parallel_plan(tiered):
    db = tiered
    corrections(db)
    assert "Gather" in plan(db, "CREATE TABLE copy AS SELECT * FROM big")
    for prefix in (FORCE_PARALLEL, "SET default_transaction_isolation = 'repeatable read';\n" + FORCE_PARALLEL, ""):
        db.psql(prefix + "CREATE TABLE copy AS SELECT * FROM big")
        diff = db.query("SELECT count(*) FROM ((TABLE copy EXCEPT ALL TABLE plain)"
                        " UNION ALL (TABLE plain EXCEPT ALL TABLE copy)) d")
        assert diff == [("0",)] and db.query("SELECT count(*) FROM copy") == [(str(ROWS - 1),)]
        db.psql("DROP TABLE copy")


def test_repeatable_read_keeps_its_pin_across_parallel_statements(tiered):
    """A REPEATABLE READ transaction's parallel statements all read its one
    pin and snapshot, while a correction commits in between."""
    import psycopg

    db = tiered
    summary = "SELECT count(*), sum(amount), sum(id) FROM big"
    with psycopg.connect(db.dsn, autocommit=True) as reader, psycopg.connect(db.dsn, autocommit=True) as writer:
        for setting in FORCE_PARALLEL.split(";")[:-1]:
            reader.execute(setting)
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        first = reader.execute(summary).fetchone()
        writer.execute("SELECT tierdb_upsert('big', '{\"id\": 10, \"k\": 10, \"g\": 10, \"amount\": 123456}')")
        assert reader.execute(summary).fetchone() == first
        reader.execute("COMMIT")
        db.psql("UPDATE plain SET v = NULL, amount = 123456 WHERE id = 10")
        assert reader.execute(summary).fetchone() != first
    same(db, "SELECT count(*), sum(amount), sum(id) FROM {t}", FORCE_PARALLEL)


# ------------------------------------------------------------------ item 9: row-level security

POLICY = ("ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;"
          " CREATE POLICY few ON {t} FOR SELECT TO {roles} USING (g < 40 AND (v IS NULL OR v <> 'v7'));"
          " CREATE POLICY listed ON {t} AS RESTRICTIVE FOR SELECT TO {roles}"
          " USING (EXISTS (SELECT 1 FROM allowed a WHERE a.g = {t}.g));")


def with_policies(db, roles, force=False):
    db.psql("CREATE TABLE allowed AS SELECT g FROM generate_series(0, 96, 3) g; GRANT SELECT ON allowed TO PUBLIC;")
    for t in ("big", "plain"):
        db.psql(POLICY.format(t=t, roles=", ".join(roles)) + (f" ALTER TABLE {t} FORCE ROW LEVEL SECURITY;" if force
                                                              else ""))


def test_policies_govern_cold_rows_read_transparently(tiered, roles):
    db = tiered
    reader, bypass, owner = roles("rls_reader", "rls_bypass", "rls_owner")
    db.psql(f"ALTER ROLE {bypass} BYPASSRLS; GRANT SELECT ON big, plain TO {reader}, {bypass};"
            f" ALTER TABLE big OWNER TO {owner}; ALTER TABLE plain OWNER TO {owner};")
    with_policies(db, [reader, owner], force=True)
    corrections(db)
    visible = None
    for role in (reader, owner, bypass):
        for prefix in ("", FORCE_PARALLEL):
            for sql in QUERIES:
                same(db, sql, f"SET ROLE {role};\n" + prefix)
        count = same(db, "SELECT count(*) FROM {t}", f"SET ROLE {role};\n")
        if role == reader:
            visible = count
    assert visible != [(str(ROWS - 1),)]
    assert same(db, "SELECT count(*) FROM {t}", f"SET ROLE {bypass};\n") == [(str(ROWS - 1),)]
    # no row the policies hide, from either tier
    assert db.query(f"SET ROLE {reader}; SELECT count(*) FROM big WHERE g >= 40 OR g % 3 <> 0 OR v = 'v7'") == [("0",)]


def explicit_reads(db):
    c = cutline(db, "big")
    return [
        "SELECT count(*) FROM tierdb.cold_rows(NULL::big)",
        "SELECT count(*) FROM (SELECT tierdb.cold_rows(NULL::big)) x",
        f"SELECT count(*) FROM tierdb.cold_rows(NULL::big, {c['S']}, {c['T']})",
        f"SELECT count(*) FROM tierdb.lake_scan(NULL::big, {c['S']})",
        "SELECT count(*) FROM cold_of_big()",
    ]


def test_explicit_reads_are_refused_where_policies_apply(tiered, roles):
    """cold_rows, lake_scan and the SQL tierdb_rewrite_scan returns cannot
    apply the table's policies: refused wherever they apply (FORCE for the
    owner too), allowed where they do not (a BYPASSRLS role)."""
    db = tiered
    reader, bypass, owner = roles("rls_reader", "rls_bypass", "rls_owner")
    db.psql(f"ALTER ROLE {bypass} BYPASSRLS; GRANT SELECT ON big, plain TO {reader}, {bypass};"
            f" ALTER TABLE big OWNER TO {owner}; ALTER TABLE plain OWNER TO {owner};"
            # an SQL function the planner inlines: its cold_rows is planned without the caller's query
            " CREATE FUNCTION cold_of_big() RETURNS SETOF big LANGUAGE sql STABLE"
            " AS 'SELECT * FROM tierdb.cold_rows(NULL::big)';")
    with_policies(db, [reader, owner], force=True)
    explicit = explicit_reads(db)
    for role in (reader, owner):
        for sql in explicit:
            error = db.error(f"SET ROLE {role};\n{sql}")
            assert "42501" in error and "cannot apply the row-level security policies of table public.big" in error \
                and "plain SELECT" in error, f"{role}: {sql}\n{error}"
        union = db.query(f"SET ROLE {role}; SELECT tierdb_rewrite_scan('big')")[0][0]
        error = db.error(f"SET ROLE {role};\n{union}")
        assert "cannot apply the row-level security policies" in error, error
    cold = str(3 * WIDTH)
    for sql in explicit:
        assert db.query(f"SET ROLE {bypass};\n{sql}") == [(cold,)], sql
        assert db.query(sql) == [(cold,)], sql  # the superuser
    # without row-level security on the table, the reader may use them
    db.psql("ALTER TABLE big DISABLE ROW LEVEL SECURITY")
    for sql in explicit:
        assert db.query(f"SET ROLE {reader};\n{sql}") == [(cold,)], sql


# ------------------------------------------------------------------ item 11: views and column grants


def test_views_read_cold_rows_as_their_owner(tiered, roles):
    db = tiered
    owner, reader = roles("view_owner", "view_reader")
    db.psql(f"GRANT SELECT ON big, plain TO {owner}; GRANT CREATE ON SCHEMA public TO {owner};")
    for t in ("big", "plain"):
        db.psql(f"SET ROLE {owner};"
                f" CREATE VIEW v_{t} AS SELECT id, k, g, amount FROM {t};"
                f" CREATE VIEW sb_{t} WITH (security_barrier) AS SELECT id, k, v FROM {t} WHERE g % 2 = 0;"
                f" CREATE FUNCTION count_{t}() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER"
                f"  SET search_path = public AS 'SELECT count(*) || '' '' || sum(amount) FROM {t}';"
                f" GRANT SELECT ON v_{t}, sb_{t} TO {reader};")
    corrections(db)
    as_reader = f"SET ROLE {reader};\n"
    for prefix in (as_reader, as_reader + FORCE_PARALLEL):
        assert same(db, "SELECT count(*), sum(amount) FROM v_{t}", prefix) != [("0", None)]
        same(db, "SELECT g, count(*), sum(k) FROM v_{t} WHERE k < 160000 GROUP BY g", prefix)
        same(db, "SELECT count(*), max(v) FROM sb_{t} WHERE id % 3 = 0", prefix)
        same(db, "SELECT count_{t}()", prefix)
    assert same(db, "SELECT count(*) FROM v_{t} WHERE k < 150000", as_reader) == [(str(3 * WIDTH - 2 + 1),)]
    # the reader itself may not read the table
    error = same_error(db, "SELECT count(*) FROM {t}", as_reader)
    assert "permission denied for table big" in error, error


def test_column_grants(tiered, roles):
    db = tiered
    reader = roles("column_reader")
    db.psql(f"GRANT SELECT (id, k, amount) ON big, plain TO {reader}")
    corrections(db)
    as_reader = f"SET ROLE {reader};\n"
    for prefix in (as_reader, as_reader + FORCE_PARALLEL):
        same(db, "SELECT count(*), sum(amount), sum(id) FROM {t}", prefix)
        same(db, "SELECT id, k, amount FROM {t} WHERE id % 7000 = 1", prefix)
        same(db, "SELECT count(*) FROM {t} WHERE k < 150000", prefix)
    for sql in ("SELECT v FROM {t} WHERE id = 5", "SELECT * FROM {t} WHERE id = 5",
                "SELECT count(*) FROM {t} WHERE g = 3", "SELECT {t} FROM {t} WHERE id = 1"):
        error = same_error(db, sql, as_reader)
        assert "42501" in error and "permission denied for table big" in error, error


# ------------------------------------------------------------------ item 14: the read side


def test_the_heap_bound_is_for_those_who_may_read_the_table(tiered, roles):
    db = tiered
    nobody, columns = roles("nobody", "one_column")
    db.psql(f"GRANT SELECT (k) ON big TO {columns}")
    call = "SELECT tierdb.seam_t_bigint('big'::regclass::oid)"
    error = db.error(f"SET ROLE {nobody};\n{call}")
    assert "42501" in error and "permission denied for table big" in error, error
    assert db.query(f"SET ROLE {columns};\n{call}") == [(str(3 * WIDTH),)]
    error = db.error("SELECT tierdb.seam_t_bigint(4000000000)")
    assert "(null)" not in error and "4000000000" in error, error
    error = db.error("SELECT tierdb.seam_t_bigint('plain'::regclass::oid)")
    assert "table public.plain is not registered" in error, error


def test_cold_rows_refuses_a_negative_snapshot(tiered):
    # -1 is the lake library's "current snapshot": it must not read the lake's newest state
    for snapshot in (-1, -5):
        error = tiered.error(f"SELECT count(*) FROM tierdb.cold_rows(NULL::big, {snapshot}, 150000)")
        assert "22023" in error and f"snapshot id {snapshot} is not valid" in error, error


# ------------------------------------------------------------------ item 2 with the server's defaults


def test_default_settings_choose_a_parallel_plan(db, tierdb):
    """No setting forced: a hot partition large enough for Postgres to read
    in parallel by itself (wide), beside 100,000 cold rows; CTAS and
    aggregates give plain's answers."""
    db.psql(
        "CREATE TABLE wide (id bigint NOT NULL, k bigint NOT NULL, g int, pad text) PARTITION BY RANGE (k);\n"
        "CREATE TABLE wide_0 PARTITION OF wide FOR VALUES FROM (0) TO (100000);\n"
        "CREATE TABLE wide_1 PARTITION OF wide FOR VALUES FROM (100000) TO (1000000);\n"
        "INSERT INTO wide SELECT i, i, i % 89, repeat(chr(97 + i % 26), 60) FROM generate_series(0, 349999) i;\n"
        "CREATE TABLE plain AS SELECT * FROM wide;\n"
        "ANALYZE wide; ANALYZE plain;\n"
    )
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    proc = tierdb(["register", "--table", "public.wide", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "200000")
    assert cutline(db, "wide")["T"] == 100000
    # selective: gathering every heap row would cost more than the workers save
    sql = "SELECT g, count(*), sum(k), max(pad) FROM {t} WHERE g IN (5, 6) GROUP BY g"
    shape = plan(db, sql.format(t="wide"), prefix="")
    assert "Gather" in shape and reads_cold(shape), shape
    for query in (sql, "SELECT count(*), sum(id), count(DISTINCT pad) FROM {t}"):
        for prefix in ("", "SET default_transaction_isolation = 'repeatable read';\n"):
            got = sorted(db.query(prefix + query.format(t="wide")))
            assert got == sorted(db.query(prefix + query.format(t="plain"))), query
    assert "Gather" in plan(db, "CREATE TABLE copy AS SELECT * FROM wide WHERE g = 7", prefix="")
    db.psql("CREATE TABLE copy AS SELECT * FROM wide WHERE g = 7;"
            " DELETE FROM plain WHERE g <> 7;")
    assert db.query("SELECT count(*) FROM ((TABLE copy EXCEPT ALL TABLE plain)"
                    " UNION ALL (TABLE plain EXCEPT ALL TABLE copy)) d") == [("0",)]
    assert db.query("SELECT count(*) FROM copy") == [(str(len(range(7, 350000, 89))),)]
