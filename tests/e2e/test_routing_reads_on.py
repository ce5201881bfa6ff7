"""Routed corrections with transparent reads on, the production default
(issue 16 item 1; extension/sql/0.1/30-routing.sql, tierdb.heap_scope).

With transparent reads on, a query of the user's table reads heap ∪ lake.
tierdb_upsert's own lookup "does the heap hold this pk" must still read the
heap only: else a cold row moved to another cold tier key is taken for a
heap row, a heap DELETE is issued (needing DELETE), no old_tier_key is
recorded, and the fold leaves the old lake copy beside the new one.
"""

from __future__ import annotations

import pytest

from test_routing import T_EVENTS, delta, events, rendered, scalar, upsert_both  # noqa: F401 (fixture)
from test_tiering import run_once, usec
from test_verify import verify

LAG = "2d"


def reads_on(db):
    """The cluster runs with the production default; the routed calls below use it."""
    assert scalar(db, "SHOW tierdb.transparent_reads", session="") == "on"


@pytest.mark.parametrize("role", [None, "tdb_siu"], ids=["owner", "select_insert_update"])
def test_moving_a_cold_row_within_the_lake_folds_exactly(events, tierdb, role):
    db = events
    reads_on(db)
    if role is not None:
        db.psql(f"DROP ROLE IF EXISTS {role};\nCREATE ROLE {role};\n"
                f"GRANT SELECT, INSERT, UPDATE ON events TO {role};\nGRANT SELECT ON expected TO {role};")
    try:
        ts20 = usec(db, scalar(db, "SELECT ts FROM expected WHERE id = 20"))
        ts40 = usec(db, scalar(db, "SELECT ts FROM expected WHERE id = 40"))
        for pk, day in ((20, "2024-01-05T12:00:00Z"), (40, "2024-01-02T06:00:00Z")):
            row = f"SELECT id, timestamptz '{day}' AS ts, 'moved'::text AS v, amount FROM expected WHERE id = {pk}"
            assert upsert_both(db, row, as_role=role) == "delta"
        d = delta(db, "events")
        # the lake copies stay where they were: the fold deletes them there
        assert d["20"][:3] == (0, usec(db, "2024-01-05 12:00:00+00"), ts20)
        assert d["40"][:3] == (0, usec(db, "2024-01-02 06:00:00+00"), ts40)
        # a plain read of the table (transparent) is the untiered copy, before and after the fold
        assert rendered(db, "events", session="") == rendered(db, "expected")
        proc = run_once(tierdb, LAG)
        assert "fold: operation" in proc.stderr, proc.stderr
        assert delta(db, "events") == {}
        assert rendered(db, "events", session="") == rendered(db, "expected")
        assert scalar(db, "SELECT count(*) FROM events WHERE id IN (20, 40)", session="") == "2"
        proc = verify(tierdb)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        if role is not None:
            db.psql(f"DROP OWNED BY {role};\nDROP ROLE {role};")


def test_a_hot_row_moved_cold_and_back_with_reads_on(events, tierdb):
    """The heap lookups of the other routes read the heap only too."""
    db = events
    reads_on(db)
    ts30 = usec(db, scalar(db, "SELECT ts FROM expected WHERE id = 30"))
    # hot 2900 goes cold (leaves the heap), cold 30 goes hot (a tombstone at its lake copy)
    for pk, ts, routed in ((2900, "2024-01-02 00:00:00+00", "delta"), (30, "2024-01-09 00:00:30+00", "heap")):
        row = f"SELECT id, timestamptz '{ts}' AS ts, 'moved'::text AS v, amount FROM expected WHERE id = {pk}"
        assert upsert_both(db, row) == routed
    d = delta(db, "events")
    assert d["2900"][:3] == (0, usec(db, "2024-01-02 00:00:00+00"), None)
    assert d["30"][:3] == (1, ts30, None)
    # a cold delete, and a hot one
    ts10 = scalar(db, "SELECT ts FROM expected WHERE id = 10")
    assert scalar(db, f"SELECT tierdb_delete('events', '10', timestamptz '{ts10}')", session="") == "delta"
    ts2600 = scalar(db, "SELECT ts FROM expected WHERE id = 2600")
    assert scalar(db, f"SELECT tierdb_delete('events', '2600', timestamptz '{ts2600}')", session="") == "heap"
    db.psql("DELETE FROM expected WHERE id IN (10, 2600)")
    assert rendered(db, "events", session="") == rendered(db, "expected")
    run_once(tierdb, LAG)
    assert delta(db, "events") == {}
    assert rendered(db, "events", session="") == rendered(db, "expected")
    proc = verify(tierdb)
    assert proc.returncode == 0, proc.stdout + proc.stderr
