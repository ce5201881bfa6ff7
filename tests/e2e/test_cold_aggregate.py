"""Aggregates computed in the cold scan (issue 21, aggregate pushdown):
"TierDB Cold Aggregate" makes the partial states of the cold rows, a
partial aggregate those of the heap's, and a Finalize Aggregate combines
them. Every result must be the untiered copy's, with the cold aggregate on
and off, with corrections in the delta, under generic plans, row-level
security and privileges.

`m` is test_cold_pruning's table (ten days, seven in the lake): integers k
(with nulls) and sm, the group column ev, floats with a NaN and both zeros.
"""

from __future__ import annotations

import pytest

from test_cold_pruning import custom_node, m, plan_nodes  # noqa: F401 (m: the fixture)
from test_tiering import SESSION, run_once

NOT_HERE = "SELECT count(DISTINCT ev), max(k + 1) FROM {t}"  # the plain plan: no partial state, an expression
QUERIES = [
    "SELECT count(*) FROM {t}",
    "SELECT count(*), count(f8), count(k), sum(k), avg(k), sum(sm), avg(sm) FROM {t}",
    "SELECT min(f8), max(f8), min(f4), max(f4), min(ts), max(ts), min(tm), max(tm), min(k), max(k), min(id), max(id) FROM {t}",
    "SELECT sum(f8) FROM {t} WHERE f8 <> 'NaN'",
    "SELECT sum(f4), sum(f8) FROM {t} WHERE ts < '2024-01-02'",
    "SELECT ev, count(*), sum(k), avg(k), min(f8), max(ts) FROM {t} GROUP BY ev ORDER BY ev",
    "SELECT b, sm, count(*), max(k) FROM {t} GROUP BY b, sm ORDER BY b, sm",
    "SELECT ev, count(*) FROM {t} WHERE f8 > 1500 AND s LIKE 'a%' GROUP BY ev HAVING count(*) > 30 ORDER BY ev",
    "SELECT count(*), sum(k) FROM {t} WHERE f8 > 1e12",
    "SELECT ev, count(*) FROM {t} WHERE f8 > 1e12 GROUP BY ev",
    "SELECT count(*), max(k) FROM {t} WHERE ts >= '2024-01-09'",
    "SELECT sm, count(*) FROM {t} WHERE ts < '2024-01-04' GROUP BY sm ORDER BY sm",
    NOT_HERE,
    # FILTER: checked on each cold row, the rows one at a time
    "SELECT count(*) FILTER (WHERE k > 0), sum(k) FILTER (WHERE f8 > 1500), min(ts) FILTER (WHERE b),"
    " max(f8) FILTER (WHERE s LIKE 'a%'), count(*), sum(sm) FILTER (WHERE k IS NULL) FROM {t}",
    "SELECT ev, count(*) FILTER (WHERE k IS NULL), avg(k) FILTER (WHERE sm > 3), max(n) FILTER (WHERE f8 < 3000)"
    " FROM {t} GROUP BY ev ORDER BY ev",
    "SELECT count(*) FILTER (WHERE k > 0), min(id) FILTER (WHERE k < 0) FROM {t} WHERE f8 > 1500",
    "SELECT count(*) FILTER (WHERE x IS NOT NULL), max(tm) FILTER (WHERE x.b IS NOT TRUE) FROM {t} x",
    "SELECT count(*) + 1, max(k) * 2 FROM {t} WHERE k IS NOT NULL",
    # a condition the lake does not check: the cold rows one at a time
    "SELECT ev, count(*), sum(k), max(f8) FROM {t} WHERE length(s) > 5 GROUP BY ev ORDER BY ev",
    # correlated: the aggregate runs again for each outer row, with its value
    "SELECT o.x, (SELECT count(*) FROM {t} WHERE k = o.x), (SELECT max(f8) FROM {t} WHERE sm = o.x)"
    " FROM generate_series(-12, 12) o(x) ORDER BY 1",
    # the outer value in a FILTER: a new one rescans
    "SELECT o.x, (SELECT count(*) FILTER (WHERE k = o.x) FROM {t}) FROM generate_series(-12, 12, 4) o(x) ORDER BY 1",
]


def same(db, sql, session=SESSION):
    got = db.query(session + sql.format(t="m"))
    want = db.query(SESSION + "SET tierdb.transparent_reads = off;\n" + sql.format(t="plain"))
    assert got == want, f"{sql}\n  m:     {got[:8]}\n  plain: {want[:8]}"


def uses_cold_aggregate(db, sql, session=SESSION):
    out = db.query(session + "EXPLAIN (FORMAT JSON) " + sql.format(t="m"))
    return '"TierDB Cold Aggregate"' in out[0][0]


def test_aggregates_match_the_untiered_copy(m):
    db = m
    for sql in QUERIES:
        same(db, sql)
        same(db, sql, SESSION + "SET tierdb.enable_cold_aggregate = off;\n")
        same(db, sql, SESSION + "SET max_parallel_workers_per_gather = 0;\n")
    assert uses_cold_aggregate(db, QUERIES[0]) and uses_cold_aggregate(db, QUERIES[5])
    assert uses_cold_aggregate(db, QUERIES[-2]) and uses_cold_aggregate(db, QUERIES[-1])  # correlated subplans
    assert not uses_cold_aggregate(db, NOT_HERE)  # DISTINCT, an expression
    assert uses_cold_aggregate(db, QUERIES[QUERIES.index(NOT_HERE) + 1])  # FILTER
    assert not uses_cold_aggregate(db, "SELECT count(*) FILTER (WHERE random() < 2) FROM {t}")
    assert not uses_cold_aggregate(db, QUERIES[0], SESSION + "SET tierdb.enable_cold_aggregate = off;\n")


def test_the_cold_aggregate_reads_the_cold_rows_once(m):
    db = m
    nodes = plan_nodes(db, "SELECT count(*) FROM m WHERE f8 >= 5000")
    cold = [n for n in nodes if n.get("Custom Plan Provider") == "TierDB Cold Aggregate"]
    assert len(cold) == 1 and cold[0]["Cold Rows Aggregated"] == 199 and cold[0]["Actual Rows"] == 1, cold
    assert nodes[0]["Node Type"] == "Aggregate" and nodes[0]["Partial Mode"] == "Finalize", nodes[0]


def test_corrections_in_the_delta(m):
    db = m
    for t in ("m", "plain"):
        db.query(SESSION + f"UPDATE {t} SET k = 1000, ev = 'moved' WHERE id % 30 = 3 AND ts < '2024-01-08';"
                 f" DELETE FROM {t} WHERE id % 30 = 4 AND ts < '2024-01-08';"
                 f" INSERT INTO {t} (id, ts, k, sm, ev, f8) VALUES (5000, '2024-01-03 05:00+00', 7, 2, 'new', -0.0),"
                 "  (5001, '2024-01-05 05:00+00', NULL, 4, 'new', 'NaN');")
    assert int(db.query("SELECT count(*) FROM tierdb.delta")[0][0]) > 0
    for sql in QUERIES + ["SELECT ev, count(*), sum(k), min(f8), max(f8) FROM {t} GROUP BY ev ORDER BY ev"]:
        same(db, sql)


def test_generic_plans(m):
    db = m
    got = db.query(SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                   "PREPARE q(float8, timestamptz) AS SELECT ev, count(*), sum(k) FROM m"
                   " WHERE f8 > $1 AND ts < $2 GROUP BY ev ORDER BY ev;\n"
                   "EXECUTE q(1500, '2024-01-09');")
    want = db.query(SESSION + "SELECT ev, count(*), sum(k) FROM plain WHERE f8 > 1500 AND ts < '2024-01-09'"
                    " GROUP BY ev ORDER BY ev")
    assert got == want and want


def test_row_level_security_and_privileges(m):
    db = m
    db.psql("CREATE ROLE agg_reader; GRANT USAGE ON SCHEMA tierdb TO agg_reader;"
            " GRANT SELECT ON m TO agg_reader; GRANT SELECT ON plain TO agg_reader;"
            " ALTER TABLE m ENABLE ROW LEVEL SECURITY; CREATE POLICY only_b ON m USING (b);"
            " CREATE ROLE agg_nobody;")
    try:
        as_reader = SESSION + "SET ROLE agg_reader;\n"
        # (on 350 cold rows a grouped split is about as costly as the plain plan: only the first is asserted)
        assert uses_cold_aggregate(db, "SELECT count(*), sum(k) FROM {t}", as_reader)
        for sql in ["SELECT count(*), sum(k) FROM {t}", "SELECT ev, count(*) FROM {t} GROUP BY ev ORDER BY ev"]:
            got = db.query(as_reader + sql.format(t="m"))
            want = db.query(SESSION + sql.format(t="plain").replace(" FROM plain", " FROM plain WHERE b"))
            assert got == want, (sql, got, want)
        denied = db.run_psql(SESSION + "SET ROLE agg_nobody; SELECT count(*) FROM m")
        assert denied.returncode != 0 and "permission denied for table m" in denied.stderr, denied.stderr
    finally:
        db.psql("ALTER TABLE m DISABLE ROW LEVEL SECURITY")


def cold_aggregate_node(db, sql, session=SESSION):
    return custom_node(db, sql, "TierDB Cold Aggregate", session)


def test_count_of_every_row_from_the_lake_metadata(m):
    """count(*) with no condition reads no lake row while no delete file
    and no delta row applies; with corrections it reads the rows."""
    db = m
    node = cold_aggregate_node(db, "SELECT count(*) FROM m")
    assert node["Cold Rows Counted From Lake Metadata"] == 700 and node["Cold Rows Aggregated"] == 0, node
    same(db, "SELECT count(*), count(*) FROM {t}")
    node = cold_aggregate_node(db, "SELECT count(*) FROM m WHERE k > 0")
    assert "Cold Rows Counted From Lake Metadata" not in node
    for t in ("m", "plain"):
        db.query(SESSION + f"DELETE FROM {t} WHERE id = 5")
    node = cold_aggregate_node(db, "SELECT count(*) FROM m")
    assert "Cold Rows Counted From Lake Metadata" not in node and node["Cold Rows Aggregated"] == 699, node
    same(db, "SELECT count(*) FROM {t}")


def test_min_and_max_read_only_what_may_hold_them(m, tierdb):
    """min and max of columns over every cold row read only the files that
    may hold the extremes, by the files' bounds, while no delete file and
    no delta row applies; the answers are always the untiered copy's."""
    db = m
    extremes = "SELECT min(id), max(ts), min(tm), max(sm) FROM {t}"
    node = cold_aggregate_node(db, extremes.format(t="m"))
    # id's least, ts' greatest and sm's greatest lie in the first and last of the seven daily files;
    # tm (make_time(day, ...)) is least in the first as well
    assert node["Lake Narrowed to Extremes by Bounds"] and node["Lake Files Pruned"] == 5, node
    assert node["Cold Rows Aggregated"] == 200, node
    for sql in (extremes, QUERIES[2], "SELECT min(f4), max(z), min(k) FROM {t}"):
        same(db, sql)
    # a condition, a group, another aggregate: every file
    for sql in ("SELECT min(id) FROM m WHERE k > 0", "SELECT ev, min(id) FROM m GROUP BY ev",
                "SELECT min(id), count(*) FROM m"):
        assert "Lake Narrowed to Extremes by Bounds" not in cold_aggregate_node(db, sql), sql
    # every row of the first day deleted (the file the bounds point to), one of the last updated:
    # in the delta, then folded into the lake
    for t in ("m", "plain"):
        db.query(SESSION + f"DELETE FROM {t} WHERE ts < '2024-01-02'; UPDATE {t} SET sm = -1 WHERE id = 700")
    node = cold_aggregate_node(db, extremes.format(t="m"))
    same(db, extremes)
    assert "Lake Narrowed to Extremes by Bounds" not in node, node
    run_once(tierdb, "2d")
    assert int(db.query("SELECT count(*) FROM tierdb.delta")[0][0]) == 0
    node = cold_aggregate_node(db, extremes.format(t="m"))
    assert ("Lake Narrowed to Extremes by Bounds" in node) == (node["Lake Delete Files"] == 0), node
    same(db, extremes)


# ------------------------------------------------------------------ grouping on every type
#
# `g` has enough cold rows (14,000 in seven daily files, 6,000 in the heap) that the split
# aggregate is chosen for grouped queries, with group columns of every type the lake stores,
# each with nulls and, for the floats, -0 beside 0 (one group: every day has 0 first) and NaN.

G_DAYS, G_COLD_DAYS, G_PER_DAY = 10, 7, 2000

MAKE_G = SESSION + f"""
CREATE TABLE g (id bigint NOT NULL, ts timestamptz NOT NULL, f8 double precision, f4 real,
                n numeric(10,2), u uuid, s text, v varchar(12), tm time, b boolean, by bytea,
                k integer, sm smallint, big bigint, d date,
                PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts);
DO $$ BEGIN FOR d IN 0..{G_DAYS - 1} LOOP
  EXECUTE format('CREATE TABLE %I PARTITION OF g FOR VALUES FROM (%L) TO (%L)',
    'g_' || d, (date '2024-01-01' + d)::timestamptz, (date '2024-01-01' + d + 1)::timestamptz);
END LOOP; END $$;
INSERT INTO g
SELECT d * {G_PER_DAY} + i + 1, timestamptz '2024-01-01 00:00:00+00' + d * interval '1 day' + i * interval '40 seconds',
       CASE WHEN i % 97 = 0 THEN NULL WHEN i % 89 = 0 THEN '-0'::float8 WHEN i % 83 = 0 THEN 'NaN'
            ELSE (i % 40) * 0.5 END,
       CASE WHEN i % 97 = 1 THEN NULL WHEN i % 79 = 0 THEN '-0'::real WHEN i % 73 = 0 THEN 'NaN'
            ELSE (i % 30) / 4.0 END,
       CASE WHEN i % 61 = 0 THEN NULL ELSE (i % 25) * 1.25 END,
       CASE WHEN i % 59 = 0 THEN NULL ELSE ('00000000-0000-4000-8000-' || lpad(to_hex(i % 20), 12, '0'))::uuid END,
       CASE WHEN i % 101 = 0 THEN NULL WHEN i % 103 = 0 THEN 'é' || (i % 3) ELSE 'e' || (i % 17) END,
       'v' || (i % 13),
       CASE WHEN i % 53 = 0 THEN NULL ELSE make_time(i % 24, 0, 0) END,
       CASE WHEN i % 7 = 0 THEN NULL ELSE i % 2 = 0 END,
       CASE WHEN i % 47 = 0 THEN NULL ELSE decode(lpad(to_hex(i % 11), 4, '0'), 'hex') END,
       CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7 % 23) - 11 END,
       (i % 9)::smallint,
       CASE WHEN i % 43 = 0 THEN NULL ELSE (i % 6) * 10000000000 END,
       date '2020-01-01' + (i % 8)
FROM generate_series(0, {G_DAYS - 1}) d, generate_series(0, {G_PER_DAY - 1}) i;
CREATE TABLE gplain AS SELECT * FROM g;
ANALYZE g; ANALYZE gplain;
"""

GROUPED = [
    "SELECT f8, count(*), sum(k), min(f4), max(f8) FROM {t} GROUP BY f8 ORDER BY f8",
    "SELECT f4, count(*), sum(f8), avg(k) FROM {t} GROUP BY f4 ORDER BY f4",
    "SELECT n, count(*), max(ts) FROM {t} GROUP BY n ORDER BY n",
    "SELECT u, count(*), min(d) FROM {t} GROUP BY u ORDER BY u",
    "SELECT s, count(*), sum(sm), min(tm) FROM {t} GROUP BY s ORDER BY s",
    "SELECT v, count(*), max(big), min(id) FROM {t} GROUP BY v ORDER BY v",
    "SELECT tm, count(*), avg(sm) FROM {t} GROUP BY tm ORDER BY tm",
    "SELECT b, count(*), sum(f4) FROM {t} GROUP BY b ORDER BY b",
    "SELECT by, count(*), max(k) FROM {t} GROUP BY by ORDER BY by",
    "SELECT k, count(*), sum(f8) FROM {t} GROUP BY k ORDER BY k",
    "SELECT sm, count(*), min(f8) FROM {t} GROUP BY sm ORDER BY sm",
    "SELECT big, count(*) FROM {t} GROUP BY big ORDER BY big",
    "SELECT d, count(*), max(ts) FROM {t} GROUP BY d ORDER BY d",
    "SELECT b, sm, count(*), sum(k) FROM {t} GROUP BY b, sm ORDER BY b, sm",
    "SELECT u, by, v, count(*) FROM {t} WHERE ts < '2024-01-05' GROUP BY u, by, v ORDER BY u, by, v",
    "SELECT s, count(*), max(f8) FROM {t} WHERE f8 > 5 AND ts >= '2024-01-03' GROUP BY s ORDER BY s",
    # a condition the lake does not check: the cold rows one at a time
    "SELECT s, count(*), sum(k) FROM {t} WHERE length(v) > 2 GROUP BY s ORDER BY s",
]


@pytest.fixture
def g(db, tierdb):
    db.psql(MAKE_G)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    proc = tierdb(["register", "--table", "public.g", "--pk", "id,ts", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "2d")
    heap = db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM g")
    assert heap == [(str((G_DAYS - G_COLD_DAYS) * G_PER_DAY),)]
    return db


def same_g(db, sql, session=SESSION, zeros_equal=False):
    """With zeros_equal, -0 and 0 (equal in Postgres) compare equal: which of them a group key,
    min or max shows depends on the order of the rows, which corrections change differently
    in a heap and in the lake and delta."""
    def zeros(rows):
        return [tuple("0" if v == "-0" else v for v in r) for r in rows] if zeros_equal else rows
    got = zeros(db.query(session + sql.format(t="g")))
    want = zeros(db.query(SESSION + "SET tierdb.transparent_reads = off;\n" + sql.format(t="gplain")))
    assert got == want, f"{sql}\n  g:      {got[:8]}\n  gplain: {want[:8]}"


# Aggregates computed by their own transition functions (bigint and numeric sums and averages,
# min and max of by-reference types, variances, bool and bit aggregates): their states are
# Postgres-internal, serialized as a Partial Aggregate serializes them. Float statistics are
# rounded: their accumulation (Youngs-Cramer) rounds differently in another row order, in
# Postgres' own plans too.
TRANSITION = [
    "SELECT sum(big), avg(big), sum(id), avg(id), sum(n), avg(n), min(n), max(n), min(s), max(s) FROM {t}",
    "SELECT s, sum(big), avg(n), max(n), min(s), count(*) FROM {t} GROUP BY s ORDER BY s",
    "SELECT sm, variance(k), stddev(big), var_pop(n), stddev_samp(sm), sum(n) FROM {t} GROUP BY sm ORDER BY sm",
    "SELECT b, bool_and(b), bool_or(b), bit_or(k), bit_and(sm), every(b), max(s) FROM {t} GROUP BY b ORDER BY b",
    "SELECT k, round(avg(f8)::numeric, 9), round(stddev(f8)::numeric, 9), round(avg(f4)::numeric, 5)"
    " FROM {t} GROUP BY k ORDER BY k",
    "SELECT u, sum(n), min(n), avg(big) FROM {t} WHERE ts < '2024-01-05' AND n > 3 GROUP BY u ORDER BY u",
    "SELECT sum(big), max(s), avg(n) FROM {t} WHERE big IS NULL OR n IS NULL",
    "SELECT sum(big), max(s), avg(n), variance(n) FROM {t} WHERE k > 1000",  # no rows: the initial states
    # a condition the lake does not check: one row at a time
    "SELECT v, sum(big), avg(n), min(s) FROM {t} WHERE length(s) > 2 GROUP BY v ORDER BY v",
]


def split_and_plain_agree(db, sql):
    """sql on g uses the cold aggregate, and g gives gplain's result with it, in one process, and without it."""
    assert uses_cold_aggregate(db, sql.replace("{t}", "g")), sql
    same_g(db, sql)
    same_g(db, sql, SESSION + "SET max_parallel_workers_per_gather = 0;\n")
    same_g(db, sql, SESSION + "SET tierdb.enable_cold_aggregate = off;\n")


def test_aggregates_by_their_own_transition_functions(g):
    db = g
    for sql in TRANSITION:
        split_and_plain_agree(db, sql)
        same_g(db, sql, PARALLEL)
    node = cold_aggregate_node(db, "SELECT s, sum(big), avg(n), min(s) FROM g WHERE ts < '2024-01-05' GROUP BY s")
    assert node["Cold Rows Aggregated From Column Vectors"] == node["Cold Rows Aggregated"] == 8000, node
    # varchar's min is text's, of a relabelled column: not a plain column, the plain plan
    assert not uses_cold_aggregate(db, "SELECT min(v) FROM g")
    for t in ("g", "gplain"):
        db.query(SESSION + f"UPDATE {t} SET big = 7, n = 1.5, s = 'zz' WHERE id % 400 = 1 AND ts < '2024-01-05';"
                 f" DELETE FROM {t} WHERE id % 400 = 2 AND ts < '2024-01-05';"
                 f" INSERT INTO {t} (id, ts, big, n, s) VALUES (90001, '2024-01-02 05:00+00', NULL, 99.99, 'a');")
    for sql in TRANSITION:
        same_g(db, sql)
        same_g(db, sql, PARALLEL)


def test_grouping_on_every_type(g):
    db = g
    for sql in GROUPED:
        split_and_plain_agree(db, sql)


def test_vectors_or_rows(g):
    """Where the lake checks every condition the cold rows are aggregated
    from its column vectors; otherwise, or for the delta's row images,
    one row at a time with the conditions checked on each."""
    db = g
    sql = "SELECT s, count(*), sum(k), min(f8) FROM {t} WHERE ts < '2024-01-05' GROUP BY s"
    node = cold_aggregate_node(db, sql.format(t="g"))
    assert node["Cold Rows Aggregated From Column Vectors"] == node["Cold Rows Aggregated"] == 8000, node
    # ORs, IN lists and null tests are checked by the lake too
    sql_or = "SELECT count(*), sum(k), max(f8) FROM {t} WHERE (k = 1 OR k IN (3, 5) OR f8 IS NULL) AND ts < '2024-01-06'"
    node = cold_aggregate_node(db, sql_or.format(t="g"))
    want = db.query(SESSION + "SELECT count(*) FROM gplain WHERE (k = 1 OR k IN (3, 5) OR f8 IS NULL) AND ts < '2024-01-06'")
    assert node["Cold Rows Aggregated From Column Vectors"] == node["Cold Rows Aggregated"] == int(want[0][0]), node
    same_g(db, sql_or)
    node = cold_aggregate_node(db, "SELECT s, count(*) FROM g WHERE length(v) > 2 GROUP BY s")
    assert node["Cold Rows Aggregated From Column Vectors"] == 0, node
    want = db.query(SESSION + f"SELECT count(*) FROM gplain WHERE length(v) > 2 AND ts < '2024-01-0{G_COLD_DAYS + 1}'")
    assert node["Cold Rows Aggregated"] == int(want[0][0]), node
    for t in ("g", "gplain"):
        db.query(SESSION + f"UPDATE {t} SET k = 99, s = 'moved' WHERE id % 500 = 1 AND ts < '2024-01-05';"
                 f" DELETE FROM {t} WHERE id % 500 = 2 AND ts < '2024-01-05';"
                 f" INSERT INTO {t} (id, ts, k, s) VALUES (90001, '2024-01-02 05:00+00', 5, 'e1');")
    node = cold_aggregate_node(db, sql.format(t="g"))
    # the lake's rows less the 32 the delta replaces or removes, from the vectors; the 17 row images one by one
    assert node["Rows Replaced by Delta"] == 32, node
    assert node["Cold Rows Aggregated From Column Vectors"] == 7968 and node["Cold Rows Aggregated"] == 7985, node
    same_g(db, sql + " ORDER BY s")
    for q in GROUPED:
        same_g(db, q, zeros_equal=True)


def test_a_column_added_after_the_rows_went_to_the_lake(g):
    """Files written before the column existed read its default: the
    vectors have no such column, and the default stands for every row."""
    db = g
    for t in ("g", "gplain"):
        db.query(SESSION + f"ALTER TABLE {t} ADD COLUMN z integer DEFAULT 7, ADD COLUMN y text DEFAULT 'yy'")
        db.query(SESSION + f"UPDATE {t} SET z = 3, y = 'y3' WHERE id % 1000 = 2")
    for sql in ["SELECT z, y, count(*), sum(z), min(z), max(k) FROM {t} GROUP BY z, y ORDER BY z, y",
                "SELECT y, sum(z), avg(z) FROM {t} WHERE ts < '2024-01-06' GROUP BY y ORDER BY y"]:
        assert uses_cold_aggregate(db, sql.replace("{t}", "g")), sql
        same_g(db, sql)


# ------------------------------------------------------------------ in parallel

PARALLEL = SESSION + ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
                      " SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;\n")


def test_workers_aggregate_the_files_they_claim(g):
    """Under a Gather, each process aggregates the lake files it claims and
    one of them the delta's row images; the Finalize Aggregate combines
    every process's groups. The sessions make parallel plans cheap, as a
    large table would."""
    db = g
    nodes = plan_nodes(db, "SELECT s, count(*), sum(k), min(f8), max(ts) FROM g WHERE f8 > 3 GROUP BY s", PARALLEL)
    gather = [n for n in nodes if n["Node Type"] == "Gather"]
    cold = [n for n in nodes if n.get("Custom Plan Provider") == "TierDB Cold Aggregate"]
    assert gather and gather[0]["Workers Launched"] >= 1, nodes[0]
    assert len(cold) == 1 and cold[0]["Parallel Aware"], cold
    # EXPLAIN shows what every process did, the workers' figures collected by the leader
    want = db.query(SESSION + "SELECT count(*) FROM gplain WHERE f8 > 3 AND ts < '2024-01-08'")
    assert cold[0]["Cold Rows Aggregated"] == int(want[0][0]), cold
    serial = cold_aggregate_node(db, "SELECT s, count(*), sum(k), min(f8), max(ts) FROM g WHERE f8 > 3 GROUP BY s")
    for figure in ("Row Groups Read", "Pages Read", "Rows Skipped Before Conversion"):
        assert cold[0][figure] == serial[figure], (figure, cold, serial)
    # count(*) of every row stays in one process: the lake's metadata answers it
    node = cold_aggregate_node(db, "SELECT count(*) FROM g", PARALLEL)
    assert not node["Parallel Aware"] and node["Cold Rows Counted From Lake Metadata"] == 14000, node
    no_leader = PARALLEL + "SET parallel_leader_participation = off;\n"
    for sql in GROUPED:
        same_g(db, sql, PARALLEL)
        same_g(db, sql, no_leader)
    for t in ("g", "gplain"):
        db.query(SESSION + f"UPDATE {t} SET k = 99, s = 'moved' WHERE id % 500 = 1 AND ts < '2024-01-05';"
                 f" DELETE FROM {t} WHERE id % 500 = 2 AND ts < '2024-01-05';"
                 f" INSERT INTO {t} (id, ts, k, s) VALUES (90001, '2024-01-02 05:00+00', 5, 'e1');")
    for sql in GROUPED:
        same_g(db, sql, PARALLEL, zeros_equal=True)
        same_g(db, sql, no_leader, zeros_equal=True)
