"""The fold (cli/fold.c): delta rows written per the protocol (SPEC §2, §4)
become one lake snapshot of equality deletes plus data files, stamped with
the op id; the folded rows leave the delta in the transaction that advances
S, under a version guard; an unexpired read pin blocks the fold; rows below
the retention line are never written.

Delta rows are written with plain SQL, as any client would: pk is the
canonical text of the key, payload the full row image (to_jsonb of the
corrected row), version from tierdb.delta_version, tier keys canonical.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lake_files
from test_tiering import SESSION, canonical_rows, cutline, lake_rows, make_events, metadata, run_once

# These tests look at the heap and the lake separately.
pytestmark = pytest.mark.heap_and_lake_apart

# The events table tiered with lag 2d: partitions 2024-01-01 .. 07 are in
# the lake, T is 2024-01-08.
LAG = "2d"
CANON = "(extract(epoch FROM {}) * 1000000)::bigint"


def rendered_ts(db, ts_sql):
    (row,) = db.query(SESSION + f"SELECT to_char({ts_sql}, 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
    return row[0]


def lake_events(db, tierdb):
    c = cutline(db, "events")
    return {r["id"]: r for r in lake_rows(tierdb, c["ref"], c["S"])}


def delta_rows(db, table_id):
    return db.query(f"SELECT pk, op, version FROM tierdb.delta WHERE table_id = {table_id} ORDER BY pk")


def fold_ops(db):
    return db.query(
        "SELECT op_id, phase, lake_snapshot_id, details::text FROM tierdb.op_log"
        " WHERE op_kind = 'compaction' ORDER BY updated_at"
    )


@pytest.fixture
def tiered_events(db, tierdb):
    """events registered and tiered, with a copy of a few rows to correct (the heap partitions are gone)."""
    make_events(db)
    db.psql("CREATE TABLE originals AS SELECT * FROM events WHERE id IN (5, 10, 20, 30, 2000)")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    c = cutline(db, "events")
    assert c["S"] is not None
    assert db.query("SELECT count(*) FROM events WHERE id IN (5, 10, 20, 30)")[0][0] == "0"
    return db


def upsert(db, table_id, select_row, old_ts=None):
    """An op 0 delta row for the corrected row `select_row` (an SQL SELECT giving events' columns)."""
    old = "NULL" if old_ts is None else CANON.format(old_ts)
    db.psql(
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, old_tier_key, version, payload)"
        f" SELECT {table_id}, r.id::text, 0, {CANON.format('r.ts')}, {old}, nextval('tierdb.delta_version'),"
        f" to_jsonb(r) FROM ({select_row}) r"
        " ON CONFLICT (table_id, pk) DO UPDATE SET op = 0, tier_key = EXCLUDED.tier_key,"
        " old_tier_key = EXCLUDED.old_tier_key, version = EXCLUDED.version, payload = EXCLUDED.payload"
    )


def tombstone(db, table_id, row_id):
    db.psql(
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version)"
        f" SELECT {table_id}, id::text, 1, {CANON.format('ts')}, nextval('tierdb.delta_version')"
        f" FROM originals WHERE id = {row_id}"
    )


def test_fold_applies_corrections_in_one_snapshot(tiered_events, tierdb):
    db = tiered_events
    before = cutline(db, "events")
    tid = before["table_id"]
    lake_before = lake_events(db, tierdb)
    assert {5, 10, 20, 30} <= set(lake_before)

    # 5: a new value in place; 10: deleted; 20: moved to another day (still
    # cold); 100000: a cold row the lake never had.
    upsert(db, tid, "SELECT id, ts, 'corrected'::text AS v, amount FROM originals WHERE id = 5")
    tombstone(db, tid, 10)
    upsert(db, tid, "SELECT id, timestamptz '2024-01-05 12:00:00+00' AS ts, v, amount FROM originals WHERE id = 20",
           old_ts="(SELECT ts FROM originals WHERE id = 20)")
    upsert(db, tid, "SELECT 100000::bigint AS id, timestamptz '2024-01-03 01:02:03.456789+00' AS ts,"
                    " 'new'::text AS v, 1.50::numeric(12,2) AS amount")
    (max_version,) = db.query(f"SELECT max(version) FROM tierdb.delta WHERE table_id = {tid}")[0]
    assert db.query("SELECT ts < '2024-01-02' FROM originals WHERE id = 20")[0][0] == "t"

    proc = run_once(tierdb, LAG)
    assert "fold: operation" in proc.stderr, proc.stderr

    expected = dict(lake_before)
    expected[5] = {**lake_before[5], "v": "corrected"}
    del expected[10]
    expected[20] = {**lake_before[20], "ts": "2024-01-05T12:00:00.000000Z"}
    expected[100000] = {"id": 100000, "ts": "2024-01-03T01:02:03.456789Z", "v": "new", "amount": "1.50"}
    after = cutline(db, "events")
    got = lake_rows(tierdb, after["ref"], after["S"])
    assert len(got) == len({r["id"] for r in got})  # the moved row lives once: its old copy is deleted
    assert canonical_rows(got) == canonical_rows(expected.values())

    # The delta is empty; T stays; (S, lake_props) advanced together.
    assert delta_rows(db, tid) == []
    assert after["T"] == before["T"]
    assert after["S"] != before["S"]
    md = metadata(after["props"]["metadata_location"])
    assert after["S"] == md["current-snapshot-id"] == after["props"]["snapshot_id"]

    # One snapshot, stamped with the op id, holding equality deletes on the pk field id.
    (op_id, phase, op_snapshot, details) = fold_ops(db)[0]
    assert (phase, int(op_snapshot)) == ("done", after["S"])
    details = json.loads(details)
    assert (details["kind"], details["rows"], details["max_version"]) == ("fold", 4, int(max_version))
    (snap,) = [s for s in md["snapshots"] if s["snapshot-id"] == after["S"]]
    assert snap["parent-snapshot-id"] == before["S"]
    summary = snap["summary"]
    assert summary["tierdb.op-id"] == op_id
    assert summary["operation"] == "overwrite"
    assert int(summary["added-equality-delete-files"]) >= 2  # the old rows' days: 01-01 (5, 20), 10's day
    assert int(summary["added-equality-deletes"]) == 4
    assert int(summary["added-records"]) == 3

    # The previous snapshot still reads the lake as it was.
    assert canonical_rows(lake_rows(tierdb, after["ref"], before["S"])) == canonical_rows(lake_before.values())

    # Nothing left: the next cycle changes nothing.
    proc = run_once(tierdb, LAG)
    assert "fold: operation" not in proc.stderr
    assert cutline(db, "events") == after


def test_a_row_corrected_again_during_the_fold_survives(tiered_events, tierdb):
    db = tiered_events
    tid = cutline(db, "events")["table_id"]
    upsert(db, tid, "SELECT id, ts, 'first'::text AS v, amount FROM originals WHERE id = 5")
    upsert(db, tid, "SELECT id, ts, 'kept'::text AS v, amount FROM originals WHERE id = 30")
    # A concurrent writer corrects 5 again after the fold read the delta and
    # before it publishes: the fold journals itself in between, so a trigger
    # on that journal row writes the second correction at exactly that point.
    db.psql(
        "CREATE FUNCTION correct_again() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        "  UPDATE tierdb.delta SET version = nextval('tierdb.delta_version'),"
        "    payload = jsonb_set(payload, '{v}', '\"second\"') WHERE pk = '5';"
        "  RETURN NULL; END $$;\n"
        "CREATE TRIGGER correct_again AFTER INSERT ON tierdb.op_log FOR EACH ROW"
        " WHEN (NEW.op_kind = 'compaction') EXECUTE FUNCTION correct_again();"
    )
    proc = run_once(tierdb, LAG)
    assert "fold: operation" in proc.stderr, proc.stderr
    lake = lake_events(db, tierdb)
    assert lake[5]["v"] == "first" and lake[30]["v"] == "kept"
    # The newer correction is still in the delta, for readers and the next fold.
    rows = db.query(f"SELECT pk, payload->>'v' FROM tierdb.delta WHERE table_id = {tid}")
    assert rows == [("5", "second")]

    db.psql("DROP TRIGGER correct_again ON tierdb.op_log")
    run_once(tierdb, LAG)
    assert lake_events(db, tierdb)[5]["v"] == "second"
    assert delta_rows(db, tid) == []
    assert [phase for _, phase, _, _ in fold_ops(db)] == ["done", "done"]


def test_an_unexpired_pin_blocks_the_fold(tiered_events, tierdb):
    db = tiered_events
    before = cutline(db, "events")
    tid = before["table_id"]
    tombstone(db, tid, 10)
    # An expired pin does not count; an unexpired one at S does.
    db.psql(
        "INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi, expires_at)"
        f" VALUES ({tid}, {before['S']}, {before['T']}, now() + interval '1 hour')"
    )
    proc = run_once(tierdb, LAG)
    assert "1 delta row wait for 1 unexpired read pin" in proc.stderr, proc.stderr
    assert cutline(db, "events") == before
    assert len(delta_rows(db, tid)) == 1
    assert fold_ops(db) == []
    assert 10 in lake_events(db, tierdb)

    # A pin taken while the fold writes its files (here: when it journals
    # them) stops it before its lake commit; it is undone and retried.
    db.psql("UPDATE tierdb.read_pins SET expires_at = now() - interval '1 second'")
    files_before = sorted(lake_files.list_files(before["ref"], ".parquet"))
    db.psql(
        "CREATE FUNCTION pin_now() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        "  INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi, expires_at)"
        "  SELECT table_id, lake_snapshot_id, tier_key_hi, now() + interval '1 hour' FROM tierdb.cutline;"
        "  RETURN NEW; END $$;\n"
        "CREATE TRIGGER pin_now AFTER UPDATE ON tierdb.op_log FOR EACH ROW"
        " WHEN (NEW.op_kind = 'compaction' AND NEW.details ? 'files' AND NOT OLD.details ? 'files')"
        " EXECUTE FUNCTION pin_now();"
    )
    proc = run_once(tierdb, LAG)
    assert "read pin arrived during the fold; retrying next cycle" in proc.stderr, proc.stderr
    assert cutline(db, "events") == before
    assert [phase for _, phase, _, _ in fold_ops(db)] == ["aborted"]
    assert sorted(lake_files.list_files(before["ref"], ".parquet")) == files_before
    assert len(delta_rows(db, tid)) == 1

    db.psql("DROP TRIGGER pin_now ON tierdb.op_log; DELETE FROM tierdb.read_pins")
    proc = run_once(tierdb, LAG)
    assert "fold: operation" in proc.stderr, proc.stderr
    assert 10 not in lake_events(db, tierdb)
    assert delta_rows(db, tid) == []


def test_rows_below_the_retention_line_are_never_written(tiered_events, tierdb):
    db = tiered_events
    before = cutline(db, "events")
    tid = before["table_id"]
    r_line = CANON.format("timestamptz '2024-01-03 00:00:00+00'")
    db.psql(f"UPDATE tierdb.cutline SET retention_line = {r_line} WHERE table_id = {tid}")
    before = cutline(db, "events")
    # Only rows below R: nothing reaches the lake, the delta is cleared.
    upsert(db, tid, "SELECT id, ts, 'expired'::text AS v, amount FROM originals WHERE id = 5")
    proc = run_once(tierdb, LAG)
    assert "below the retention line" in proc.stderr, proc.stderr
    assert cutline(db, "events") == before
    assert delta_rows(db, tid) == []
    assert lake_events(db, tierdb)[5]["v"] != "expired"

    # Mixed: the row below R is skipped, the one above is folded.
    upsert(db, tid, "SELECT id, ts, 'expired'::text AS v, amount FROM originals WHERE id = 20")
    upsert(db, tid, "SELECT id, ts, 'folded'::text AS v, amount FROM originals WHERE id = 2000")
    assert db.query("SELECT ts >= '2024-01-03' FROM originals WHERE id = 2000")[0][0] == "t"
    run_once(tierdb, LAG)
    after = cutline(db, "events")
    assert after["S"] != before["S"]
    lake = lake_events(db, tierdb)
    assert lake[2000]["v"] == "folded" and lake[20]["v"] != "expired"
    assert sum(1 for r in lake_rows(tierdb, after["ref"], after["S"]) if r["v"] == "expired") == 0
    assert delta_rows(db, tid) == []


TAGS = ["plain", "a\\b", "x\x1fy", "\\\x1f"]


def test_fold_with_a_composite_key(db, tierdb):
    # An integer tier key, partitions of 100, and a key (site, tag) whose tags
    # need the canonical escaping: a backslash, chr(31), both (TAGS[seq % 4]).
    db.psql(
        "CREATE TABLE readings (site int NOT NULL, tag text NOT NULL, seq bigint NOT NULL, val float8)"
        " PARTITION BY RANGE (seq);\n"
        "DO $$ BEGIN FOR p IN 0..4 LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF readings FOR VALUES FROM (%s) TO (%s)',"
        "    'readings_' || p, p * 100, (p + 1) * 100);"
        " END LOOP; END $$;\n"
        "INSERT INTO readings SELECT g, (ARRAY['plain', 'a\\b', 'x' || chr(31) || 'y', '\\' || chr(31)])[g % 4 + 1],"
        " g, g / 4.0 FROM generate_series(0, 479) g;\n"
        "CREATE TABLE originals AS SELECT * FROM readings WHERE seq IN (7, 14, 21, 101);\n"
        "CREATE FUNCTION canon_pk(site int, tag text) RETURNS text LANGUAGE sql AS $$"
        "  SELECT site::text || chr(31) || replace(replace(tag, '\\', '\\\\'), chr(31), '\\' || chr(31)) $$;"
    )
    proc = tierdb(["register", "--table", "public.readings", "--pk", "site,tag", "--tier-key", "seq"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "150")
    c = cutline(db, "readings")
    assert c["T"] == 300
    lake_before = {(r["site"], r["tag"]): r for r in lake_rows(tierdb, c["ref"], c["S"])}
    assert len(lake_before) == 300
    assert lake_before[(7, TAGS[3])]["seq"] == 7 and lake_before[(14, TAGS[2])]["seq"] == 14

    # 7 and 101 get a new value, 14 moves to seq 250, 21 is deleted.
    tid = c["table_id"]
    db.psql(
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, old_tier_key, version, payload)"
        f" SELECT {tid}, canon_pk(r.site, r.tag), 0, r.seq, NULL, nextval('tierdb.delta_version'), to_jsonb(r)"
        " FROM (SELECT site, tag, seq, -1.5::float8 AS val FROM originals WHERE seq IN (7, 101)) r;\n"
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, old_tier_key, version, payload)"
        f" SELECT {tid}, canon_pk(r.site, r.tag), 0, 250, 14, nextval('tierdb.delta_version'), to_jsonb(r)"
        " FROM (SELECT site, tag, 250::bigint AS seq, val FROM originals WHERE seq = 14) r;\n"
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version)"
        f" SELECT {tid}, canon_pk(site, tag), 1, seq, nextval('tierdb.delta_version') FROM originals WHERE seq = 21"
    )
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {tid}") == [("4",)]
    proc = run_once(tierdb, "150")
    assert "fold: operation" in proc.stderr, proc.stderr
    after = cutline(db, "readings")
    assert after["S"] != c["S"]
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {tid}") == [("0",)]
    expected = dict(lake_before)
    for seq in (7, 101):
        expected[(seq, TAGS[seq % 4])] = {**lake_before[(seq, TAGS[seq % 4])], "val": -1.5}
    expected[(14, TAGS[2])] = {**lake_before[(14, TAGS[2])], "seq": 250}
    del expected[(21, TAGS[1])]
    got = lake_rows(tierdb, after["ref"], after["S"])
    assert canonical_rows(got) == canonical_rows(expected.values())


def test_duckdb_reads_the_folded_lake(tiered_events, tierdb):
    """DuckDB's iceberg_scan applies the fold's equality deletes as `lake cat` does."""
    duckdb = pytest.importorskip("duckdb")
    import glob
    import importlib

    db = tiered_events
    tid = cutline(db, "events")["table_id"]
    upsert(db, tid, "SELECT id, ts, 'corrected'::text AS v, amount FROM originals WHERE id = 5")
    tombstone(db, tid, 10)
    upsert(db, tid, "SELECT id, timestamptz '2024-01-05 12:00:00+00' AS ts, v, amount FROM originals WHERE id = 20",
           old_ts="(SELECT ts FROM originals WHERE id = 20)")
    run_once(tierdb, LAG)
    after = cutline(db, "events")
    ours = {r["id"]: r for r in lake_rows(tierdb, after["ref"], after["S"])}

    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    for package in ("duckdb_extension_avro", "duckdb_extension_iceberg"):
        try:
            module = importlib.import_module(package)
        except ImportError:
            pytest.skip(f"{package} is not installed")
        found = glob.glob(str(Path(module.__path__[0]) / "extensions" / f"v{duckdb.__version__}" / "*.duckdb_extension"))
        if not found:
            pytest.skip(f"{package} has no build for duckdb {duckdb.__version__}")
        con.execute(f"LOAD '{found[0]}'")
    lake_files.duckdb_reach_s3(con)
    rows = con.execute(
        "SELECT id, v, strftime(ts AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ') FROM iceberg_scan(?, snapshot_from_id => ?)",
        [after["ref"], after["S"]],
    ).fetchall()
    con.close()
    assert len(rows) == len(ours) == len({r[0] for r in rows})
    got = {r[0]: r for r in rows}
    assert 10 not in got and got[5][1] == "corrected"
    assert got[20][2] == "2024-01-05T12:00:00.000000Z"
    assert {i: (r["v"], r["ts"]) for i, r in ours.items()} == {i: (v, ts) for i, v, ts in rows}


def test_an_interrupted_fold_is_adopted_or_rolled_back(tiered_events, tierdb):
    """A fold stopped after its lake commit is adopted by the next cycle; one
    stopped before it is rolled back. The failures are made by triggers that
    refuse the fold's next catalog write, which leaves the journal exactly as
    a crash at that point would."""
    db = tiered_events
    before = cutline(db, "events")
    tid = before["table_id"]
    upsert(db, tid, "SELECT id, ts, 'corrected'::text AS v, amount FROM originals WHERE id = 5")
    lake_before = lake_events(db, tierdb)
    files_before = sorted(lake_files.list_files(before["ref"], ".parquet"))

    # Before the commit: every journal update of the fold fails (recording its
    # files, then marking it aborted), so it stays in phase 'writing'.
    db.psql(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        "  RAISE EXCEPTION 'refused for the test'; END $$;\n"
        "CREATE TRIGGER refuse_journal BEFORE UPDATE ON tierdb.op_log FOR EACH ROW"
        " WHEN (OLD.op_kind = 'compaction') EXECUTE FUNCTION refuse();"
    )
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG})
    assert "refused for the test" in proc.stderr, proc.stderr
    assert [phase for _, phase, _, _ in fold_ops(db)] == ["writing"]
    assert cutline(db, "events") == before
    assert lake_events(db, tierdb) == lake_before
    db.psql("DROP TRIGGER refuse_journal ON tierdb.op_log")
    proc = run_once(tierdb, LAG)
    assert "never reached the lake; rolled back" in proc.stderr, proc.stderr
    assert [phase for _, phase, _, _ in fold_ops(db)] == ["aborted"]
    assert len(delta_rows(db, tid)) == 1
    # The files the fold wrote are gone.
    assert sorted(lake_files.list_files(before["ref"], ".parquet")) == files_before

    # After the commit: clearing the delta fails, so the snapshot landed but S
    # was not published.
    db.psql("CREATE TRIGGER refuse_clear BEFORE DELETE ON tierdb.delta FOR EACH ROW EXECUTE FUNCTION refuse()")
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG})
    assert "refused for the test" in proc.stderr, proc.stderr
    (op_id, phase, op_snapshot, _) = fold_ops(db)[-1]
    assert phase == "committed"
    assert cutline(db, "events") == before
    md = metadata(max(lake_files.list_files(f"{before['ref']}/metadata", ".metadata.json"),
                      key=lambda p: int(p.rsplit("/v", 1)[1].split(".")[0])))
    assert md["current-snapshot-id"] == int(op_snapshot) != before["S"]
    db.psql("DROP TRIGGER refuse_clear ON tierdb.delta")
    proc = run_once(tierdb, LAG)
    assert f"adopted interrupted operation {op_id}" in proc.stderr, proc.stderr
    after = cutline(db, "events")
    assert after["S"] == int(op_snapshot)
    assert delta_rows(db, tid) == []
    assert lake_events(db, tierdb)[5]["v"] == "corrected"
    assert [phase for _, phase, _, _ in fold_ops(db)] == ["aborted", "done"]


def test_fold_with_a_date_key_that_is_part_of_the_pk(db, tierdb):
    # The key (id, d) includes the tier key: the deletes then carry only the
    # key columns, which already name the partition.
    db.psql(
        "CREATE TABLE daily (id int NOT NULL, d date NOT NULL, note text) PARTITION BY RANGE (d);\n"
        "DO $$ BEGIN FOR p IN 0..5 LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF daily FOR VALUES FROM (%L) TO (%L)',"
        "    'daily_' || p, date '2024-01-01' + p, date '2024-01-02' + p);"
        " END LOOP; END $$;\n"
        "INSERT INTO daily SELECT g, date '2024-01-01' + g % 6, 'n' || g FROM generate_series(1, 60) g;"
    )
    proc = tierdb(["register", "--table", "public.daily", "--pk", "id,d", "--tier-key", "d"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "3")
    c = cutline(db, "daily")
    lake_before = {r["id"]: r for r in lake_rows(tierdb, c["ref"], c["S"])}
    assert len(lake_before) == 20 and lake_before[6]["d"] == "2024-01-01" and lake_before[7]["d"] == "2024-01-02"
    tid = c["table_id"]
    db.psql(
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version, payload) VALUES"
        f" ({tid}, '6' || chr(31) || '2024-01-01', 0, date '2024-01-01' - date 'epoch', nextval('tierdb.delta_version'),"
        "  '{\"id\": 6, \"d\": \"2024-01-01\", \"note\": \"fixed\"}'),"
        f" ({tid}, '7' || chr(31) || '2024-01-02', 1, date '2024-01-02' - date 'epoch', nextval('tierdb.delta_version'), NULL)"
    )
    proc = run_once(tierdb, "3")
    assert "fold: operation" in proc.stderr, proc.stderr
    after = cutline(db, "daily")
    got = {r["id"]: r for r in lake_rows(tierdb, after["ref"], after["S"])}
    expected = dict(lake_before)
    expected[6] = {**lake_before[6], "note": "fixed"}
    del expected[7]
    assert got == expected
    assert delta_rows(db, tid) == []


@pytest.mark.parametrize("point,phase,outcome", [
    ("fold-before-commit", "writing", "rolled back"),
    ("fold-after-commit", "writing", "adopted"),
    ("fold-after-commit-recorded", "committed", "adopted"),
])
def test_a_fold_killed_at_each_fault_point_recovers(tiered_events, tierdb, point, phase, outcome):
    db = tiered_events
    before = cutline(db, "events")
    tid = before["table_id"]
    lake_before = lake_events(db, tierdb)
    files_before = sorted(lake_files.list_files(before["ref"], ".parquet"))
    upsert(db, tid, "SELECT id, ts, 'corrected'::text AS v, amount FROM originals WHERE id = 5")
    tombstone(db, tid, 10)
    upsert(db, tid, "SELECT id, timestamptz '2024-01-05 12:00:00+00' AS ts, v, amount FROM originals WHERE id = 20",
           old_ts="(SELECT ts FROM originals WHERE id = 20)")

    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG, "TIERDB_FAULT": point})
    assert proc.returncode == -9, proc.stderr
    ((op_id, got_phase, _, _),) = fold_ops(db)
    assert got_phase == phase
    assert cutline(db, "events") == before
    assert len(delta_rows(db, tid)) == 3
    # Readers at S see the lake as it was whatever the lake's newest snapshot is.
    assert canonical_rows(lake_rows(tierdb, before["ref"], before["S"])) == canonical_rows(lake_before.values())

    proc = run_once(tierdb, LAG)
    if outcome == "rolled back":
        assert f"interrupted operation {op_id} never reached the lake; rolled back" in proc.stderr, proc.stderr
        assert sorted(lake_files.list_files(before["ref"], ".parquet")) == files_before
        assert cutline(db, "events") == before
        proc = run_once(tierdb, LAG)
        assert [p for _, p, _, _ in fold_ops(db)] == ["aborted", "done"]
    else:
        assert f"adopted interrupted operation {op_id}" in proc.stderr, proc.stderr
        assert [p for _, p, _, _ in fold_ops(db)] == ["done"]
    after = cutline(db, "events")
    assert after["S"] != before["S"]
    assert delta_rows(db, tid) == []
    expected = dict(lake_before)
    expected[5] = {**lake_before[5], "v": "corrected"}
    del expected[10]
    expected[20] = {**lake_before[20], "ts": "2024-01-05T12:00:00.000000Z"}
    assert canonical_rows(lake_rows(tierdb, after["ref"], after["S"])) == canonical_rows(expected.values())


def test_a_large_backlog_folds_in_batches(tiered_events, tierdb):
    """TIERDB_COMPACTION_BATCH bounds each fold: 7 corrections with a batch
    of 3 become three snapshots in one cycle, oldest versions first, and
    the lake ends as if folded at once."""
    db = tiered_events
    before = cutline(db, "events")
    tid = before["table_id"]
    lake_before = lake_events(db, tierdb)
    ids = sorted(lake_before)[:7]
    for i in ids:
        upsert(db, tid, f"SELECT {i}::bigint AS id, timestamptz '{lake_before[i]['ts']}' AS ts,"
                        " 'batched'::text AS v, NULL::numeric(12,2) AS amount")
    proc = run_once(tierdb, LAG, TIERDB_COMPACTION_BATCH="3")
    folds = [line for line in proc.stderr.splitlines() if "fold: operation" in line]
    assert len(folds) == 3, proc.stderr
    assert [f.split(" folded ")[1].split(" delta")[0] for f in folds] == ["3", "3", "1"], proc.stderr
    assert delta_rows(db, tid) == []
    ops = fold_ops(db)
    assert [phase for _, phase, _, _ in ops] == ["done"] * 3
    # Oldest versions first: each fold's versions are all below the next fold's.
    versions = [json.loads(d)["max_version"] for _, _, _, d in ops]
    assert versions == sorted(versions)
    got = {r["id"]: r for r in lake_rows(tierdb, before["ref"], cutline(db, "events")["S"])}
    assert {i for i in ids if got[i]["v"] == "batched"} == set(ids)
    assert set(got) == set(lake_before)


def test_a_bad_compaction_batch_is_refused(tiered_events, tierdb):
    proc = tierdb(["run", "--once"], env={"TIERDB_COMPACTION_BATCH": "0"})
    assert proc.returncode != 0
    assert "TIERDB_COMPACTION_BATCH='0'" in proc.stderr
