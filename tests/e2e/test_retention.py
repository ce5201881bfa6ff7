"""Lake retention (cli/retention.c, cli/cmd_policy.c; SPEC §2 "Retention
line R"; issue 18 §4): the daemon expires the lake's whole partitions below
R = max(tier_key) - N aligned down to a lake partition boundary, by one
Iceberg DELETE snapshot (no file rewritten); R advances in tierdb.cutline
with S; delta rows below R leave with it; read pins postpone it; every write
path refuses rows below R naming it; a kill at each fault point followed by
a restart leaves exactly the committed rows; `verify` stays ok.

The table: events (tests/e2e/test_tiering.py), ten daily partitions
2024-01-01 .. 10, max(ts) on 2024-01-10. Tiered with lag 2d, T is
2024-01-08; a retention of 5d puts R at 2024-01-05 00:00 (max - 5d lies on
2024-01-05, aligned down to the lake's day partitions).
"""

from __future__ import annotations

import json

import pytest

import lake_files
from test_tiering import SESSION, cutline, lake_rows, make_events, metadata, run_once, usec

LAG = "2d"
R_TEXT = "2024-01-05 00:00:00+00"
T_TEXT = "2024-01-08 00:00:00+00"
UTC = "SET TimeZone = 'UTC';\n"
HEAP_ONLY = "SET tierdb.transparent_reads = off;\n"

# The corrections made before retention, applied alike to `plain`, an untiered copy:
#   5:   a cold row below R, corrected in place (its delta row goes with R)
#   1500: a cold row at or above R, corrected in place (stays)
#   1600: a row at or above R moved below R (its old lake row must stay deleted)
#   1300: a row at or above R deleted (stays deleted)
CORRECTIONS = [
    ("upsert", "SELECT id, ts, 'fixed'::text AS v, amount FROM plain WHERE id = 5",
     "UPDATE plain SET v = 'fixed' WHERE id = 5"),
    ("upsert", "SELECT id, ts, 'fixed'::text AS v, amount FROM plain WHERE id = 1500",
     "UPDATE plain SET v = 'fixed' WHERE id = 1500"),
    ("upsert", "SELECT id, timestamptz '2024-01-03 12:00:00+00' AS ts, v, amount FROM plain WHERE id = 1600",
     "UPDATE plain SET ts = '2024-01-03 12:00:00+00' WHERE id = 1600"),
    ("delete", "1300", "DELETE FROM plain WHERE id = 1300"),
]


def retention_line(db, table="events"):
    (row,) = db.query(
        "SELECT c.retention_line FROM tierdb.cutline c JOIN tierdb.tables t USING (table_id)"
        f" WHERE t.table_name = '{table}'"
    )
    return None if row[0] is None else int(row[0])


def retention_ops(db):
    return [
        {"op_id": r[0], "phase": r[1], "snapshot": None if r[2] is None else int(r[2]), "details": json.loads(r[3])}
        for r in db.query(
            "SELECT op_id, phase, lake_snapshot_id, details::text FROM tierdb.op_log"
            " WHERE op_kind = 'retention' ORDER BY updated_at, op_id"
        )
    ]


def table_rows(db, table, where="true", heap_only=False):
    """The rows of `table` as text, ordered: what a client's SELECT returns."""
    return db.query(
        UTC + (HEAP_ONLY if heap_only else "")
        + f"SELECT id, ts, v, amount FROM {table} WHERE {where} ORDER BY id"
    )


def verify_ok(tierdb):
    proc = tierdb(["verify", "--table", "public.events"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verify public.events: ok" in proc.stdout, proc.stdout
    return proc.stdout


def setup_tiered(db, tierdb, retention="30d"):
    """events and an untiered copy `plain`, registered with a retention that
    expires nothing yet, tiered (T = 2024-01-08), and corrected."""
    make_events(db)
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts",
                   "--lake-retention", retention])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    assert cutline(db, "events")["T"] == usec(db, T_TEXT)
    for kind, row, plain_sql in CORRECTIONS:
        if kind == "upsert":
            db.psql(f"SELECT tierdb_upsert('events', (SELECT to_jsonb(r) FROM ({row}) r))")
        else:
            db.psql(f"SELECT tierdb_delete('events', '{row}', (SELECT ts FROM plain WHERE id = {row}))")
        db.psql(plain_sql)
    return db


def expire(db, tierdb, **env):
    """Sets the retention to 5d and runs one cycle; returns the daemon's stderr."""
    proc = tierdb(["policy", "--table", "public.events", "--lake-retention", "5d"])
    assert proc.returncode == 0, proc.stderr
    return run_once(tierdb, LAG, **env).stderr


def check_expired(db, tierdb):
    """After retention at R: the lake at S holds no row below R and every
    row at or above it; reads equal the untiered copy minus its rows below R."""
    r_line = usec(db, R_TEXT)
    assert retention_line(db) == r_line
    cut = cutline(db, "events")
    lake = lake_rows(tierdb, cut["ref"], cut["S"])
    lake_ids = {row["id"] for row in lake}
    assert lake and min(row["ts"] for row in lake) >= "2024-01-05"
    expected_lake = {int(i) for (i,) in db.query(
        f"SELECT id FROM plain WHERE ts >= '{R_TEXT}' AND ts < '{T_TEXT}'")}
    assert lake_ids == expected_lake
    # The delta holds nothing below R, and what a client reads is the copy minus its rows below R.
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE tier_key < {r_line}") == [("0",)]
    assert table_rows(db, "events", f"ts < '{R_TEXT}'") == []
    assert table_rows(db, "events") == table_rows(db, "plain", f"ts >= '{R_TEXT}'")
    out = verify_ok(tierdb)
    assert "retention: 0 rows of lake@S below R '2024-01-05 00:00:00+00'" in out, out


@pytest.fixture
def events(db, tierdb):
    make_events(db)
    # What the lake holds when tiered (before the corrections).
    db.psql("CREATE TABLE plain_at_tiering AS SELECT * FROM events")
    db.psql("DROP TABLE events")
    setup_tiered(db, tierdb)
    return db


# ------------------------------------------------------------ expiry


def test_retention_expires_whole_lake_partitions_below_r(events, tierdb):
    db = events
    before = cutline(db, "events")
    # The 30d retention put R below every row: nothing was removed.
    assert retention_line(db) is not None and retention_line(db) < usec(db, "2024-01-01 00:00:00+00")
    verify_ok(tierdb)
    delta_before = db.query("SELECT pk, op, tier_key, old_tier_key FROM tierdb.delta ORDER BY pk")
    assert len(delta_before) == 4

    log = expire(db, tierdb)
    assert "retention: operation" in log and "expired" in log, log

    r_line = usec(db, R_TEXT)
    # R is max(ts) - 5d aligned down to the lake's day partitions, below T.
    assert r_line % 86_400_000_000 == 0 and r_line < cutline(db, "events")["T"]
    after = cutline(db, "events")
    assert after["T"] == before["T"] and after["S"] != before["S"]
    assert after["S"] == after["props"]["snapshot_id"]

    # One DELETE snapshot stamped with the op id, removing data files only; the fold of the same
    # cycle committed on top of it.
    md = metadata(after["props"]["metadata_location"])
    assert md["current-snapshot-id"] == after["S"]
    (op,) = [o for o in retention_ops(db) if o["details"]["files"]]
    (snap,) = [s for s in md["snapshots"] if s["summary"].get("tierdb.op-id") == op["op_id"]]
    assert snap["parent-snapshot-id"] == before["S"]
    (current,) = [s for s in md["snapshots"] if s["snapshot-id"] == after["S"]]
    assert current["parent-snapshot-id"] == snap["snapshot-id"]
    summary = snap["summary"]
    assert summary["operation"] == "delete"
    assert int(summary["deleted-data-files"]) == 4  # 2024-01-01 .. 04, one file each
    assert summary.get("added-data-files", "0") == "0"
    assert (op["phase"], op["snapshot"]) == ("done", snap["snapshot-id"])
    assert op["details"]["retention_line"] == r_line
    assert all("ts_day=2024-01-0" in f and f.split("ts_day=")[1][:10] < "2024-01-05"
               for f in op["details"]["files"]), op["details"]["files"]

    # Retention ran before the fold of the same cycle: the delta row of 5 (below R) left with R and
    # was not folded; 1600's move below R was folded as a tombstone at its old place (>= R).
    ((details,),) = db.query("SELECT details::text FROM tierdb.op_log WHERE op_kind = 'compaction'")
    details = json.loads(details)
    assert (details["rows"], details["deletes"], details["upserts"]) == (3, 3, 1), details
    assert details["pks"] == "{1500,1600,1300}" or sorted(details["pks"].strip("{}").split(",")) == [
        "1300", "1500", "1600"], details
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]

    check_expired(db, tierdb)

    # The snapshot before still reads every tiered row: nothing was rewritten or deleted from storage.
    assert len(lake_rows(tierdb, after["ref"], before["S"])) == int(
        db.query(f"SELECT count(*) FROM plain_at_tiering WHERE ts < '{T_TEXT}'")[0][0])

    # status and the status view show R.
    assert db.query("SELECT retention_line FROM tierdb.status") == [(str(r_line),)]
    proc = tierdb(["status", "--json"])
    assert proc.returncode == 0 and str(r_line) in proc.stdout, proc.stdout

    # A second cycle moves nothing.
    run_once(tierdb, LAG)
    assert cutline(db, "events")["S"] == after["S"] and retention_line(db) == r_line


def test_independent_readers_see_no_partition_below_r(events, tierdb):
    """pyiceberg and DuckDB, reading the lake's own metadata and files, find no partition below R."""
    db = events
    expire(db, tierdb)
    if lake_files.ON_S3:
        pytest.skip("pyiceberg and DuckDB read the local lake here")
    pyiceberg_table = pytest.importorskip("pyiceberg.table")
    duckdb = pytest.importorskip("duckdb")
    cut = cutline(db, "events")
    table = pyiceberg_table.StaticTable.from_metadata(cut["props"]["metadata_location"])
    (op,) = [o for o in retention_ops(db) if o["details"]["files"]]
    expected = {int(i) for (i,) in db.query(
        f"SELECT id FROM plain_at_tiering WHERE ts >= '{R_TEXT}' AND ts < '{T_TEXT}'")}
    # The retention snapshot itself (the fold's snapshot on top adds equality deletes, which
    # pyiceberg cannot apply yet) holds exactly the tiered rows at or above R.
    arrow = table.scan(snapshot_id=op["snapshot"]).to_arrow()
    assert set(arrow.column("id").to_pylist()) == expected
    # The live data files at the current snapshot: partitions from 2024-01-05 (day 19727) on.
    files = table.inspect.data_files().to_pylist()
    days = {f["partition"]["ts_day"] for f in files}
    assert days and min(days) >= __import__("datetime").date(2024, 1, 5), days
    con = duckdb.connect()
    (lowest, count) = con.execute(
        "SELECT min(ts AT TIME ZONE 'UTC'), count(*) FROM read_parquet($1)",
        [[str(lake_files.local(f["file_path"])) for f in files]],
    ).fetchone()
    assert str(lowest) >= "2024-01-05"
    assert count == len(expected) + 1  # and the fold's data file with 1500's correction


def test_read_pin_postpones_expiry(events, tierdb):
    db = events
    before = retention_line(db)
    tid = cutline(db, "events")["table_id"]
    db.psql(
        "INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi, expires_at)"
        f" SELECT table_id, lake_snapshot_id, tier_key_hi, now() + interval '10 minutes' FROM tierdb.cutline"
        f" WHERE table_id = {tid}"
    )
    log = expire(db, tierdb)
    assert "retention: advancing the retention line waits for 1 unexpired read pin" in log, log
    assert retention_line(db) == before
    assert db.query("SELECT count(*) FROM tierdb.delta WHERE pk = '5'") == [("1",)]
    assert len(table_rows(db, "events", f"ts < '{R_TEXT}'")) > 0
    verify_ok(tierdb)

    db.psql(f"DELETE FROM tierdb.read_pins WHERE table_id = {tid}")
    run_once(tierdb, LAG)
    check_expired(db, tierdb)


# ------------------------------------------------------------ writes below R


def test_every_write_path_refuses_rows_below_r(events, tierdb):
    db = events
    expire(db, tierdb)
    before = (table_rows(db, "events"), db.query("SELECT * FROM tierdb.delta ORDER BY pk"))
    message = f"is below the retention line {R_TEXT}"

    err = db.error(UTC + "SELECT tierdb_upsert('events', '{\"id\": 9001, \"ts\": \"2024-01-02T00:00:00Z\", \"v\": \"x\"}')")
    assert "23514" in err and message in err, err
    err = db.error(UTC + "SELECT tierdb_delete('events', '7', timestamptz '2024-01-01 01:00:00+00')")
    assert message in err, err
    err = db.error(UTC + "INSERT INTO events (id, ts, v) VALUES (9002, '2024-01-02 00:00:00+00', 'x')")
    assert "23514" in err and "tier key 2024-01-02 00:00:00+00 of" in err and message in err, err
    # COPY's cold rows reach the spill partition, whose routing checks R as tierdb_upsert does.
    err = db.error(UTC + "COPY events (id, ts, v) FROM PROGRAM 'echo 9003,2024-01-02 00:00:00+00,x' (FORMAT csv)")
    assert "23514" in err and "tier key 2024-01-02 00:00:00+00 of" in err and message in err, err
    assert (table_rows(db, "events"), db.query("SELECT * FROM tierdb.delta ORDER BY pk")) == before

    # Without transparent writes, the planner's check refuses the INSERT, and COPY's
    # "no partition" error (partition routing sees it first) has a hint naming R.
    db.psql("SELECT tierdb_disable_transparent_writes('events')")
    err = db.error(UTC + "INSERT INTO events (id, ts, v) VALUES (9002, '2024-01-02 00:00:00+00', 'x')")
    assert "23514" in err and "tier key 2024-01-02 00:00:00+00 of" in err and message in err, err
    err = db.error(UTC + "COPY events (id, ts, v) FROM PROGRAM 'echo 9003,2024-01-02 00:00:00+00,x' (FORMAT csv)")
    assert f"except rows below the retention line {R_TEXT}" in err, err
    db.psql("SELECT tierdb_enable_transparent_writes('events')")
    assert (table_rows(db, "events"), db.query("SELECT * FROM tierdb.delta ORDER BY pk")) == before

    # At the line a cold write is fine; above T plain INSERT is too.
    assert db.query(UTC + "SELECT tierdb_upsert('events', "
                    "'{\"id\": 9004, \"ts\": \"2024-01-05T00:00:00Z\", \"v\": \"ok\"}')") == [("delta",)]
    db.psql(UTC + "INSERT INTO events (id, ts, v) VALUES (9005, '2024-01-09 00:00:00+00', 'ok')")
    db.psql("INSERT INTO plain (id, ts, v) VALUES (9004, '2024-01-05 00:00:00+00', 'ok'),"
            " (9005, '2024-01-09 00:00:00+00', 'ok')")
    run_once(tierdb, LAG)  # folds 9004 into the lake
    check_expired(db, tierdb)


# ------------------------------------------------------------ policy


def test_policy_changes_and_stops_retention(events, tierdb):
    db = events
    proc = tierdb(["policy", "public.events"])
    assert proc.returncode == 0, proc.stderr
    assert "lake retention 30 days (canonical 2592000000000)" in proc.stdout, proc.stdout

    proc = tierdb(["policy", "--table", "public.events", "--lake-retention", "0"])
    assert proc.returncode == 2 and "must be positive" in proc.stderr, proc.stderr
    proc = tierdb(["policy", "--table", "public.events", "--lake-retention", "5 parsecs"])
    assert proc.returncode == 2, proc.stderr
    proc = tierdb(["policy", "--table", "public.nothing", "--lake-retention", "5d"])
    assert proc.returncode == 1 and "is not registered" in proc.stderr, proc.stderr

    expire(db, tierdb)
    r_line = retention_line(db)
    proc = tierdb(["policy", "--table", "public.events", "--lake-retention", "off"])
    assert proc.returncode == 0, proc.stderr
    assert "lake retention off; retention line 2024-01-05 00:00:00+00" in proc.stdout, proc.stdout
    assert db.query("SELECT lake_retention_lag FROM tierdb.tables") == [(None,)]
    # Off keeps what was expired expired (R stays, writes below it stay refused) and expires nothing more.
    db.psql(UTC + "INSERT INTO events (id, ts, v) SELECT 20000 + g, '2024-01-10 12:00'::timestamptz, 'n'"
            " FROM generate_series(1, 3) g")
    run_once(tierdb, LAG)
    assert retention_line(db) == r_line
    assert "below the retention line" in db.error(
        UTC + "SELECT tierdb_upsert('events', '{\"id\": 1, \"ts\": \"2024-01-01T00:00:00Z\"}')")

    # A larger lag never moves R back.
    proc = tierdb(["policy", "--table", "public.events", "--lake-retention", "9d"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    assert retention_line(db) == r_line


def test_register_refuses_lake_retention_with_keep_heap(db, tierdb):
    make_events(db)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts",
                   "--lake-retention", "5d", "--keep-heap"])
    assert proc.returncode == 1
    assert "--lake-retention cannot be combined with --keep-heap" in proc.stderr, proc.stderr
    assert db.query("SELECT count(*) FROM tierdb.tables") == [("0",)]


def test_integer_keys_align_to_the_truncate_width(db, tierdb):
    """An int8 key with width-100 lake partitions: R = max - N aligned down to a multiple of 100."""
    db.psql(
        "CREATE TABLE m (id bigint NOT NULL, k bigint NOT NULL, v text) PARTITION BY RANGE (k);\n"
        "DO $$ BEGIN FOR i IN 0..9 LOOP EXECUTE format('CREATE TABLE m_%s PARTITION OF m FOR VALUES FROM (%s) TO (%s)',"
        " i, i * 100, i * 100 + 100); END LOOP; END $$;\n"
        "INSERT INTO m SELECT g, g, 'v' || g FROM generate_series(0, 999) g;\n"
        "CREATE TABLE m_plain AS SELECT * FROM m;"
    )
    proc = tierdb(["register", "--table", "public.m", "--pk", "id", "--tier-key", "k", "--lake-retention", "651"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "250")  # T = 700
    assert retention_line(db, "m") == 300  # 999 - 651 = 348, aligned down to 300
    cut = cutline(db, "m")
    assert cut["T"] == 700
    assert sorted(r["k"] for r in lake_rows(tierdb, cut["ref"], cut["S"])) == list(range(300, 700))
    assert db.query("SELECT count(*), min(k) FROM m") == [("700", "300")]
    err = db.error("SELECT tierdb_upsert('m', '{\"id\": 5000, \"k\": 299, \"v\": \"x\"}')")
    assert "is below the retention line 300" in err, err
    proc = tierdb(["verify", "--table", "public.m"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_unpartitioned_lake_moves_r_down_to_a_file_boundary(db, tierdb):
    """With --lake-partition none no partition boundary exists: R moves down to
    the lower bound of the file that straddles max - N, so that no row below R
    stays readable, and only the files wholly below it go."""
    make_events(db)
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts",
                   "--lake-partition", "none", "--lake-retention", "30d"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "6d")  # one file for 01-01 .. 01-04
    run_once(tierdb, LAG)   # one for 01-05 .. 01-07
    assert cutline(db, "events")["T"] == usec(db, T_TEXT)
    expire(db, tierdb)      # max - 5d lies on 01-05, inside the second file
    (first,) = db.query(UTC + "SELECT (extract(epoch FROM min(ts)) * 1000000)::bigint FROM plain"
                              " WHERE ts >= '2024-01-05'")[0]
    assert retention_line(db) == int(first)
    cut = cutline(db, "events")
    assert sorted(r["id"] for r in lake_rows(tierdb, cut["ref"], cut["S"])) == [
        int(i) for (i,) in db.query(f"SELECT id FROM plain WHERE ts >= '{R_TEXT}' AND ts < '{T_TEXT}' ORDER BY id")]
    assert table_rows(db, "events") == table_rows(db, "plain", f"ts >= '{R_TEXT}'")
    verify_ok(tierdb)


def test_date_keys_align_to_month_partitions(db, tierdb):
    """A date key with monthly lake partitions: R = max - N days aligned down to the first of a month."""
    db.psql(
        "CREATE TABLE d (id int NOT NULL, day date NOT NULL, v text) PARTITION BY RANGE (day);\n"
        "DO $$ BEGIN FOR m IN 1..6 LOOP EXECUTE format('CREATE TABLE d_%s PARTITION OF d FOR VALUES FROM (%L) TO (%L)',"
        " m, make_date(2024, m, 1), make_date(2024, m, 1) + interval '1 month'); END LOOP; END $$;\n"
        "INSERT INTO d SELECT g, date '2024-01-01' + g, 'v' || g FROM generate_series(0, 181) g;\n"
        "CREATE TABLE d_plain AS SELECT * FROM d;"
    )
    proc = tierdb(["register", "--table", "public.d", "--pk", "id", "--tier-key", "day",
                   "--lake-partition", "month", "--lake-retention", "100"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "30")  # max 2024-06-30: January .. April move, T = 2024-05-01
    cut = cutline(db, "d")
    assert db.query(f"SELECT date 'epoch' + {cut['T']}") == [("2024-05-01",)]
    # 2024-06-30 - 100 days = 2024-03-22, aligned down to March.
    assert db.query(f"SELECT date 'epoch' + {retention_line(db, 'd')}") == [("2024-03-01",)]
    assert min(r["day"] for r in lake_rows(tierdb, cut["ref"], cut["S"])) == "2024-03-01"
    assert db.query("SELECT id, day, v FROM d ORDER BY id") == db.query(
        "SELECT id, day, v FROM d_plain WHERE day >= '2024-03-01' ORDER BY id")
    err = db.error("SELECT tierdb_upsert('d', '{\"id\": 1000, \"day\": \"2024-02-29\", \"v\": \"x\"}')")
    assert "is below the retention line 2024-03-01" in err, err
    err = db.error("INSERT INTO d VALUES (1001, '2024-02-29', 'x')")
    assert "tier key 2024-02-29 of" in err and "is below the retention line 2024-03-01" in err, err
    proc = tierdb(["verify", "--table", "public.d"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ------------------------------------------------------------ crash recovery

# point, phase the journal shows after the kill
FAULT_POINTS = [
    ("retention-before-commit", "committing"),
    ("retention-after-commit", "committing"),
    ("retention-after-commit-recorded", "committed"),
    ("retention-before-publish-commit", "committed"),
]


@pytest.mark.parametrize("point,phase", FAULT_POINTS, ids=[p[0] for p in FAULT_POINTS])
def test_kill_at_fault_point_then_restart(events, tierdb, point, phase):
    db = events
    before = cutline(db, "events")
    r_before = retention_line(db)
    tierdb(["policy", "--table", "public.events", "--lake-retention", "5d"])
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG, "TIERDB_FAULT": point})
    assert proc.returncode == -9, proc.stderr
    assert f"fault point {point} reached" in proc.stderr
    (op,) = [o for o in retention_ops(db) if o["phase"] not in ("done", "aborted")]
    assert op["phase"] == phase
    # Nothing is published: S, R and the delta are as they were, and reads see every row.
    assert cutline(db, "events")["S"] == before["S"] and retention_line(db) == r_before
    assert db.query("SELECT count(*) FROM tierdb.delta WHERE pk = '5'") == [("1",)]
    assert table_rows(db, "events") == table_rows(db, "plain")

    proc = run_once(tierdb, LAG)
    if point == "retention-before-commit":
        assert "never reached the lake; rolled back" in proc.stderr, proc.stderr
    else:
        assert f"adopted interrupted operation {op['op_id']}" in proc.stderr, proc.stderr
    run_once(tierdb, LAG)  # a rolled-back run is redone by the next cycle
    check_expired(db, tierdb)
    ops = retention_ops(db)
    assert {o["phase"] for o in ops} <= {"done", "aborted"}, ops
    settled = {o["op_id"]: o["phase"] for o in ops}
    assert settled[op["op_id"]] == ("aborted" if point == "retention-before-commit" else "done")
    # Exactly one snapshot removed the files.
    md = metadata(cutline(db, "events")["props"]["metadata_location"])
    deletes = [s for s in md["snapshots"] if s["summary"]["operation"] == "delete"]
    assert len(deletes) == 1, deletes
