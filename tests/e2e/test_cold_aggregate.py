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

from test_cold_pruning import custom_node, m, plan_nodes  # noqa: F401 (m: the fixture)
from test_tiering import SESSION

NOT_HERE = "SELECT count(*) FILTER (WHERE k > 0), sum(n), count(DISTINCT ev) FROM {t}"  # the plain plan
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
    "SELECT count(*) + 1, max(k) * 2 FROM {t} WHERE k IS NOT NULL",
    # correlated: the aggregate runs again for each outer row, with its value
    "SELECT o.x, (SELECT count(*) FROM {t} WHERE k = o.x), (SELECT max(f8) FROM {t} WHERE sm = o.x)"
    " FROM generate_series(-12, 12) o(x) ORDER BY 1",
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
    assert uses_cold_aggregate(db, QUERIES[-1])  # in each correlated subplan
    assert not uses_cold_aggregate(db, NOT_HERE)  # FILTER, numeric sum, DISTINCT
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


def cold_aggregate_node(db, sql):
    return custom_node(db, sql, "TierDB Cold Aggregate")


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
