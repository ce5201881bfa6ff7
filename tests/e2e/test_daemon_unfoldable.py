"""Delta rows the lake cannot hold (issue 16 item 6, the fold's side): a
NULL where the lake requires a value, NaN in a numeric(p,s), a payload that
does not fit the table's types. Such rows come from another engine or from
before tierdb_upsert checked them; the fold must fold the others, leave
these in the delta exactly as they are, and say so in `tierdb status` and
`tierdb verify`."""

from __future__ import annotations

import json

import pytest

from test_fold import CANON, LAG, delta_rows, lake_events, tiered_events, upsert  # noqa: F401 (fixture)
from test_tiering import cutline, run_once

# the fold's fixtures look at the heap and the lake apart (test_fold.py)
pytestmark = pytest.mark.heap_and_lake_apart


def raw_delta(db, table_id, pk, tier_ts, payload_sql):
    """An op 0 delta row written by hand, as another engine might."""
    db.psql(
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version, payload)"
        f" VALUES ({table_id}, '{pk}', 0, {CANON.format(tier_ts)}, nextval('tierdb.delta_version'), {payload_sql})"
    )


def reads_of(db, where):
    """What a transparent read of the rows returns (or the error it raises)."""
    proc = db.run_psql("SET tierdb.transparent_reads = on; SET TimeZone = 'UTC';"
                       f" SELECT id, ts, v, amount::text FROM events WHERE {where} ORDER BY id")
    return proc.returncode, proc.stdout, proc.stderr


def test_the_fold_sets_aside_rows_the_lake_cannot_hold(tiered_events, tierdb):
    db = tiered_events
    tid = cutline(db, "events")["table_id"]
    ts = "timestamptz '2024-01-03 10:00:00+00'"
    raw_delta(db, tid, "5", ts,
              f"jsonb_build_object('id', NULL, 'ts', {ts}, 'v', 'null key', 'amount', 1)")
    raw_delta(db, tid, "20", ts, f"jsonb_build_object('id', 20, 'ts', {ts}, 'v', 'nan', 'amount', 'NaN')")
    raw_delta(db, tid, "30", ts, "jsonb_build_object('id', 30, 'ts', 'not a time', 'v', 'bad', 'amount', 2)")
    upsert(db, tid, "SELECT id, ts, 'corrected'::text AS v, amount FROM originals WHERE id = 10")
    upsert(db, tid, "SELECT 100000::bigint AS id, timestamptz '2024-01-03 01:02:03+00' AS ts,"
                    " 'new'::text AS v, 1.50::numeric(12,2) AS amount")
    bad_before = [r for r in delta_rows(db, tid) if r[0] in ("5", "20", "30")]
    reads_before = reads_of(db, "id IN (5, 20, 30)")

    proc = run_once(tierdb, LAG)
    assert "fold: operation" in proc.stderr, proc.stderr
    for pk in ("5", "20", "30"):
        assert f"delta row pk {pk} (version" in proc.stderr, proc.stderr
    lake = lake_events(db, tierdb)
    assert lake[10]["v"] == "corrected" and lake[100000]["v"] == "new"  # the others folded
    assert lake[20]["v"] != "nan" and 30 in lake  # the bad images did not reach the lake
    assert delta_rows(db, tid) == bad_before  # left exactly as they were
    assert reads_of(db, "id IN (5, 20, 30)") == reads_before

    status = json.loads(tierdb(["status", "--json", "--table", "events"]).stdout)[0]
    reasons = {w["pk"]: w["reason"] for w in status["unfoldable_rows"]}
    assert set(reasons) == {"5", "20", "30"}, status
    assert 'column "id" is NULL' in reasons["5"]
    assert 'column "amount" holds a value an Iceberg decimal cannot hold (NaN)' in reasons["20"]
    assert "does not fit the table" in reasons["30"] and "not a time" in reasons["30"]
    text = tierdb(["status", "--table", "events"]).stdout
    assert "public.events: delta row pk 20 (version" in text and "cannot fold into the lake" in text, text

    proc = tierdb(["verify", "--table", "events"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "row pk 5 (version" in proc.stdout and "row pk 30 (version" in proc.stdout, proc.stdout

    # The next cycle skips them without failing or writing a snapshot.
    s = cutline(db, "events")["S"]
    proc = run_once(tierdb, LAG)
    assert cutline(db, "events")["S"] == s
    assert delta_rows(db, tid) == bad_before

    # A correction of one of them is a new version: it folds, and its warning goes.
    upsert(db, tid, "SELECT id, ts, 'fixed'::text AS v, 3.00::numeric(12,2) AS amount FROM originals WHERE id = 20")
    run_once(tierdb, LAG)
    assert lake_events(db, tierdb)[20]["v"] == "fixed"
    status = json.loads(tierdb(["status", "--json", "--table", "events"]).stdout)[0]
    assert sorted(w["pk"] for w in status["unfoldable_rows"]) == ["30", "5"]
    # Removing the others (tierdb_delete, or by hand) leaves nothing to report.
    db.psql(f"DELETE FROM tierdb.delta WHERE table_id = {tid} AND pk IN ('5', '30')")
    assert json.loads(tierdb(["status", "--json", "--table", "events"]).stdout)[0]["unfoldable_rows"] == []
    proc = tierdb(["verify", "--table", "events"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_columns_named_like_the_checks_aliases(db, tierdb):
    """Columns called k, p, r (the names the fold's check gives its records)
    cannot shadow them: the check still runs and names the bad row."""
    db.psql("CREATE TABLE kp (k bigint NOT NULL, p timestamptz NOT NULL, r numeric(5,2)) PARTITION BY RANGE (p);"
            "CREATE TABLE kp_1 PARTITION OF kp FOR VALUES FROM ('2024-01-01+00') TO ('2024-01-02+00');"
            "CREATE TABLE kp_2 PARTITION OF kp FOR VALUES FROM ('2024-01-02+00') TO ('2024-01-03+00');"
            "CREATE TABLE kp_3 PARTITION OF kp FOR VALUES FROM ('2024-01-03+00') TO ('2024-01-04+00');"
            "INSERT INTO kp SELECT g, timestamptz '2024-01-01+00' + g * interval '1 hour', g FROM generate_series(0, 71) g")
    assert tierdb("register --table kp --pk k --tier-key p").returncode == 0
    run_once(tierdb, "1d")
    tid = cutline(db, "kp")["table_id"]
    ts = "timestamptz '2024-01-01 05:00:00+00'"
    raw_delta(db, tid, "5", ts, f"jsonb_build_object('k', 5, 'p', {ts}, 'r', 'NaN')")
    raw_delta(db, tid, "6", ts, f"jsonb_build_object('k', 6, 'p', {ts}, 'r', 66)")
    proc = run_once(tierdb, "1d")
    assert "delta row pk 5 (version" in proc.stderr, proc.stderr
    assert [r[0] for r in delta_rows(db, tid)] == ["5"]
    status = json.loads(tierdb(["status", "--json", "--table", "kp"]).stdout)[0]
    assert [(w["pk"], 'column "r"' in w["reason"]) for w in status["unfoldable_rows"]] == [("5", True)]
