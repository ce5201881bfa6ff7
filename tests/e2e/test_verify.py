"""`tierdb verify --table` (cli/cmd_verify.c): the audit of a tiered table.

Each check is driven both ways: a table the daemon tiered and folded
passes; then one thing is broken at a time (a sealed heap partition
edited behind the seal, a journaled digest altered, lake rows dropped by
an outside commit, a delta row above T, a stray heap row below T) and
verify must fail, naming the check, with exit status 1.
"""

from __future__ import annotations

import json

import lake_files
from test_tiering import SESSION, cutline, events, run_once, usec  # noqa: F401 (events is a fixture)


def verify(tierdb, table="public.events"):
    return tierdb(["verify", "--table", table])


def lines(proc, tag):
    return [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith(tag)]


def pin_below_t(db):
    """A read pin at the current T keeps the next tiered partitions attached (the drop waits for it)."""
    c = cutline(db, "events")
    db.psql(
        "INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi, expires_at)"
        f" VALUES ({c['table_id']}, NULL, {c['T']}, now() + interval '1 hour')"
    )


def test_a_tiered_table_passes_against_heap_and_journal(events, tierdb):
    db = events
    pin_below_t(db)
    run_once(tierdb, "2d")  # 7 partitions tiered, kept attached by the pin
    proc = verify(tierdb)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parts = [line for line in lines(proc, "ok") if "events_2024" in line]
    assert len(parts) == 7, proc.stdout
    # Each compares the lake with both the heap and the journaled digest.
    assert all("heap " in line and "journaled " in line for line in parts), proc.stdout
    assert "FAIL" not in proc.stdout
    assert proc.stdout.rstrip().endswith("undecided")

    # Once the partitions are dropped, the journal alone speaks for them.
    db.psql("DELETE FROM tierdb.read_pins")
    run_once(tierdb, "2d")
    assert db.query("SELECT count(*) FROM tierdb.partitions WHERE state = 'dropped'") == [("7",)]
    proc = verify(tierdb)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parts = [line for line in lines(proc, "ok") if "events_2024" in line]
    assert len(parts) == 7 and all("heap " not in line and "journaled " in line for line in parts), proc.stdout


def test_folds_do_not_disturb_the_audit(events, tierdb):
    """Corrections change the lake at S, not the rows a partition was tiered with."""
    db = events
    run_once(tierdb, "2d")
    c = cutline(db, "events")
    # Corrections of cold rows: rewrite three lake rows, delete one.
    rows = [json.loads(r) for r in tierdb(["lake", "cat", c["ref"], "--limit", "4"]).stdout.splitlines()]
    for i, row in enumerate(rows):
        ts = usec(db, row["ts"])
        if i < 3:
            payload = json.dumps({**row, "v": f"fixed {i}"})
            db.psql(
                "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version, payload)"
                f" VALUES ({c['table_id']}, '{row['id']}', 0, {ts}, nextval('tierdb.delta_version'), '{payload}')"
            )
        else:
            db.psql(
                "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version)"
                f" VALUES ({c['table_id']}, '{row['id']}', 1, {ts}, nextval('tierdb.delta_version'))"
            )
    proc = verify(tierdb)
    assert proc.returncode == 0, proc.stdout
    assert "delta: 4 rows, 0 at or above T" in proc.stdout
    run_once(tierdb, "2d")
    assert cutline(db, "events")["S"] != c["S"]
    proc = verify(tierdb)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "delta: 0 rows" in proc.stdout
    (lake_at_s,) = lines(proc, "ok    lake@S")
    assert "0 keys appearing more than once" in lake_at_s, proc.stdout


def test_a_heap_partition_edited_behind_the_seal_fails(events, tierdb):
    db = events
    pin_below_t(db)
    run_once(tierdb, "2d")
    db.psql(
        "ALTER TABLE events_20240103 DISABLE TRIGGER USER;\n"
        "UPDATE events_20240103 SET v = 'edited' WHERE id = (SELECT min(id) FROM events_20240103);\n"
        "ALTER TABLE events_20240103 ENABLE TRIGGER USER;\n"
    )
    proc = verify(tierdb)
    assert proc.returncode == 1, proc.stdout
    (failed,) = lines(proc, "FAIL")
    assert "events_20240103" in failed and "heap 300 rows" in failed, proc.stdout
    assert "1 check FAILED" in proc.stdout


def test_an_altered_journal_digest_fails(events, tierdb):
    db = events
    run_once(tierdb, "2d")
    db.psql(
        "UPDATE tierdb.op_log SET details = jsonb_set(details, '{digests,public.events_20240105,rows}', '299')"
    )
    proc = verify(tierdb)
    assert proc.returncode == 1, proc.stdout
    (failed,) = lines(proc, "FAIL")
    assert "events_20240105" in failed and "journaled 299 rows" in failed and "lake 300 rows" in failed


def test_a_lake_ahead_of_s_without_a_journaled_operation_fails(events, tierdb):
    """A snapshot the cut-line does not publish, and no interrupted operation to explain it."""
    db = events
    run_once(tierdb, "2d")
    c = cutline(db, "events")
    db.psql(f"UPDATE tierdb.cutline SET lake_snapshot_id = NULL WHERE table_id = {c['table_id']}")
    proc = verify(tierdb)
    assert proc.returncode == 1, proc.stdout
    (failed,) = lines(proc, "FAIL")
    assert failed.startswith(f"FAIL  lake: the current snapshot {c['S']} is not the published S"), proc.stdout


def test_a_missing_data_file_is_an_error_naming_it(events, tierdb):
    db = events
    run_once(tierdb, "2d")
    c = cutline(db, "events")
    victim = sorted(lake_files.list_files(f"{c['ref']}/data", ".parquet"))[0]
    lake_files.remove(victim)
    proc = verify(tierdb)
    assert proc.returncode == 1
    assert victim.rsplit("/", 1)[1] in proc.stderr, proc.stderr


def test_rows_in_the_wrong_place_fail(events, tierdb):
    db = events
    run_once(tierdb, "2d")
    c = cutline(db, "events")
    # A delta row must target a cold row.
    db.psql(
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, version)"
        f" VALUES ({c['table_id']}, '999999', 1, {c['T'] + 1}, nextval('tierdb.delta_version'))"
    )
    # A heap row below T outside any tiered partition is invisible to reads.
    db.psql(
        SESSION + "CREATE TABLE events_old PARTITION OF events FOR VALUES FROM ('2023-12-01') TO ('2024-01-01');\n"
        "SET tierdb.transparent_reads = off;  -- plain DML would refuse a row below T\n"
        "INSERT INTO events VALUES (0, '2023-12-15 00:00:00+00', 'stray', 1.00);\n"
    )
    proc = verify(tierdb)
    assert proc.returncode == 1, proc.stdout
    failed = lines(proc, "FAIL")
    assert any("delta: 1 row, 1 at or above T" in line for line in failed), proc.stdout
    assert any("heap: 1 rows below T" in line for line in failed), proc.stdout


def test_usage_and_unknown_tables(events, tierdb):
    proc = tierdb(["verify"])
    assert proc.returncode == 2 and "--table is required" in proc.stderr
    proc = verify(tierdb, "public.nope")
    assert proc.returncode == 1 and "public.nope is not registered" in proc.stderr
    proc = verify(tierdb)  # registered, nothing tiered yet
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "partitions: none tiered yet" in proc.stdout
