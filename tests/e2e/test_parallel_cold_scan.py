"""Parallel cold scans (issue 21): a parallel query over a tiered table
reads the lake's files in its workers, each file once, at the leader's
pin, and returns exactly the rows of an untiered copy: lake rows, the
delta's corrections (returned by one process only) and the heap's.

`m` is test_cold_pruning's table (ten days, seven in the lake, one file
per day); `plain` is an untiered copy. The sessions here make parallel
plans cheap, as a large table would.
"""

from __future__ import annotations

import test_cold_pruning as cold_pruning
from test_cold_pruning import m  # noqa: F401 (the fixture)
from test_tiering import SESSION

PARALLEL = SESSION + ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
                      " SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;\n")
# The plans inspected here are of the cold scan itself, under the Gather; an
# aggregate the cold aggregate answers would hide it (test_cold_aggregate
# covers that node, parallel plans included). Results are compared both ways.
SCAN_ONLY = "SET tierdb.enable_cold_aggregate = off;\n"

QUERIES = [
    "SELECT count(*), sum(id), min(ts), max(ts) FROM {t}",
    "SELECT count(*), sum(n), count(DISTINCT s) FROM {t} WHERE f8 > 1500",
    "SELECT id, f8, s FROM {t} WHERE tm >= '02:30' AND b ORDER BY id",
    "SELECT date_trunc('day', ts) d, count(*), sum(i) FROM (SELECT ts, id % 7 i FROM {t}) x GROUP BY 1 ORDER BY 1",
    "SELECT o.x, (SELECT count(*) FROM {t} WHERE id > o.x) FROM (VALUES (1), (350), (999)) o(x) ORDER BY 1",
]


def plan_nodes(db, sql, session=PARALLEL):
    return cold_pruning.plan_nodes(db, sql, session)


def same(db, sql, session=PARALLEL):
    got = db.query(session + sql.format(t="m"))
    want = db.query(SESSION + sql.format(t="plain"))
    assert got == want, f"{sql}\n  m:     {got[:5]}\n  plain: {want[:5]}"


def test_workers_share_the_lake_files(m):
    db = m
    nodes = plan_nodes(db, "SELECT count(*), sum(id) FROM m", PARALLEL + SCAN_ONLY)
    gather = [n for n in nodes if n["Node Type"] in ("Gather", "Gather Merge")]
    cold = [n for n in nodes if n.get("Custom Plan Provider") == "TierDB Cold Scan"]
    assert gather and gather[0]["Workers Launched"] >= 1, nodes[0]
    assert len(cold) == 1 and cold[0]["Parallel Aware"], cold
    for sql in QUERIES:
        same(db, sql)
        same(db, sql, PARALLEL + SCAN_ONLY)


def test_delta_corrections_come_out_once(m):
    db = m
    # corrections of cold rows: updates, deletes and inserts into the delta, the same as plain DML on the copy
    for t in ("m", "plain"):
        db.query(SESSION + f"UPDATE {t} SET f8 = -1, s = 'changed' WHERE id % 50 = 3 AND ts < '2024-01-08';"
                 f" DELETE FROM {t} WHERE id % 50 = 4 AND ts < '2024-01-08';"
                 f" INSERT INTO {t} (id, ts, f8, s) VALUES (5000, '2024-01-03 05:00+00', 1, 'new'),"
                 "  (5001, '2024-01-05 05:00+00', 2, 'new');")
    delta = db.query("SELECT count(*) FROM tierdb.delta")
    assert int(delta[0][0]) > 0
    for sql in QUERIES + ["SELECT id, f8, s FROM {t} WHERE s IN ('changed', 'new') ORDER BY id"]:
        same(db, sql)


def test_workers_alone_read_each_file_once(m):
    """Without the leader's help the workers read everything: a file read
    twice, or by no one, would show in every result."""
    db = m
    session = PARALLEL + "SET parallel_leader_participation = off;\n"
    for t in ("m", "plain"):
        db.query(SESSION + f"UPDATE {t} SET s = 'changed' WHERE id % 40 = 5 AND ts < '2024-01-08'")
    nodes = plan_nodes(db, "SELECT count(*), sum(id) FROM m WHERE f8 > 10", session + SCAN_ONLY)
    gather = [n for n in nodes if n["Node Type"] == "Gather" and any(
        c.get("Custom Plan Provider") == "TierDB Cold Scan" for c in n.get("Plans", []))]
    assert gather and gather[0]["Workers Launched"] >= 1 and gather[0]["Plans"][0]["Parallel Aware"], nodes
    # the workers' lake figures, collected by the leader, are the serial scan's
    serial = cold_pruning.custom_node(db, "SELECT count(*), sum(id) FROM m WHERE f8 > 10", "TierDB Cold Scan",
                                      cold_pruning.SESSION + SCAN_ONLY)
    for figure in ("Row Groups Read", "Pages Read", "Rows Skipped Before Conversion", "Rows Replaced by Delta"):
        assert gather[0]["Plans"][0][figure] == serial[figure], (figure, gather[0]["Plans"][0], serial)
    for sql in QUERIES + ["SELECT count(*), sum(id) FROM {t} WHERE f8 > 10", "SELECT count(*) FROM {t} WHERE f8 > 10",
                          "SELECT id FROM {t} WHERE s = 'changed' ORDER BY id"]:
        same(db, sql, session)


def test_parallel_cold_scan_off(m):
    db = m
    session = PARALLEL + "SET tierdb.enable_parallel_cold_scan = off;\n"
    nodes = plan_nodes(db, "SELECT count(*), sum(id) FROM m", session + SCAN_ONLY)
    cold = [n for n in nodes if n.get("Custom Plan Provider") == "TierDB Cold Scan"]
    assert len(cold) == 1 and not cold[0]["Parallel Aware"], cold
    for sql in QUERIES:
        same(db, sql, session)


def test_whole_row_references_stay_in_the_leader(m):
    """A whole-row reference plans cold_rows as a function scan, which must
    not run in a worker (it would take its own pin)."""
    db = m
    same(db, "SELECT count(*), sum(length(x::text)) FROM {t} x WHERE x IS NOT NULL")
    got = db.query(PARALLEL + "SELECT count(*) FROM tierdb.cold_rows(NULL::m) c WHERE c IS DISTINCT FROM NULL")
    assert got == [("700",)]
