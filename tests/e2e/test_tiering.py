"""The daemon's cycle (`tierdb run`, cli/daemon.c, cli/premake.c,
cli/tiering.c): premake keeps empty partitions ahead of max(tier_key);
tiering moves whole partitions behind max(tier_key) - TIERDB_TIERING_LAG
into the lake as one snapshot stamped with the op id, advances (T, S,
lake_props) and drops the heap partitions; the sealed-partition guard
refuses writes; one daemon leads.

Rows are compared column by column: what `tierdb lake cat` prints for the
lake against what Postgres printed for the same rows before they moved,
rendered in SQL into the lake's JSON forms (timestamptz as
YYYY-MM-DDTHH:MM:SS.ffffffZ, decimals as exact strings).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

import lake_files
from pg_cluster import PG_BINDIR, clean_env

# These tests look at the heap and the lake separately.
pytestmark = pytest.mark.heap_and_lake_apart

SESSION = "SET TimeZone = 'UTC';\n"
DAY_USEC = 86400 * 1_000_000
EVENTS_ROWS = 3000


def lake_rows(tierdb, location, snapshot=None):
    args = ["lake", "cat", location]
    if snapshot is not None:
        args += ["--snapshot", str(snapshot)]
    proc = tierdb(args)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def canonical_rows(rows):
    """Order-independent form of a list of row dicts."""
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def cutline(db, table):
    (row,) = db.query(
        "SELECT c.tier_key_hi, c.lake_snapshot_id, c.lake_props::text, t.lake_table_ref, t.table_id"
        f" FROM tierdb.cutline c JOIN tierdb.tables t USING (table_id) WHERE t.table_name = '{table}'"
    )
    t, s, props, ref, table_id = row
    return {
        "T": int(t),
        "S": None if s is None else int(s),
        "props": json.loads(props),
        "ref": ref,
        "table_id": int(table_id),
    }


def heap_partitions(db, table):
    """{name: (lo, hi)} of the attached range partitions, bounds as text (not the
    spill partition of transparent writes, docs/writes.md)."""
    rows = db.query(
        f"{SESSION}SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i"
        f" JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '{table}'::regclass"
        f" AND c.oid IS DISTINCT FROM tierdb.spill_partition('{table}')"
    )
    return {name: bound for name, bound in rows}


def run_once(tierdb, lag, **env):
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": lag, **env})
    assert proc.returncode == 0, proc.stderr
    return proc


def metadata(path):
    return lake_files.read_json(path)


# ------------------------------------------------------------------ a timestamptz table


def make_events(db, days=10):
    """events with daily partitions events_YYYYMMDD from 2024-01-01, EVENTS_ROWS rows spread over them."""
    db.psql(
        SESSION
        + "CREATE TABLE events (id bigint NOT NULL, ts timestamptz NOT NULL, v text,"
        " amount numeric(12,2)) PARTITION BY RANGE (ts);\n"
        "DO $$ BEGIN FOR d IN 0.." + str(days - 1) + " LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',"
        "    'events_' || to_char(date '2024-01-01' + d, 'YYYYMMDD'),"
        "    (date '2024-01-01' + d)::timestamptz, (date '2024-01-01' + d + 1)::timestamptz);"
        " END LOOP; END $$;\n"
        f"INSERT INTO events SELECT g,"
        f"  timestamptz '2024-01-01 00:00:00+00' + (g - 1) * interval '{days * 86400 // EVENTS_ROWS} seconds'"
        "   + (g % 1000) * interval '1 microsecond',"
        "  CASE WHEN g % 17 = 0 THEN NULL ELSE 'v' || g || repeat('é', g % 4) END,"
        "  CASE WHEN g % 13 = 0 THEN NULL ELSE ((g * 7919) % 2000000 - 1000000) / 100.0 END"
        f" FROM generate_series(1, {EVENTS_ROWS}) g;\n"
    )


def events_rendered(db, where):
    """Rows of events as `lake cat` renders them."""
    rows = db.query(
        SESSION + "SELECT json_build_object('id', id,"
        " 'ts', to_char(ts, 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
        " 'v', v, 'amount', amount::text)::text FROM events WHERE " + where
    )
    return [json.loads(r[0]) for r in rows]


def usec(db, ts):
    (row,) = db.query(f"SELECT (extract(epoch FROM timestamptz '{ts}') * 1000000)::bigint")
    return int(row[0])


@pytest.fixture
def events(db, tierdb):
    make_events(db)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    return db


def test_tiering_moves_whole_partitions_behind_the_lag(events, tierdb):
    db = events
    (max_ts,) = db.query(SESSION + "SELECT max(ts)::text FROM events")[0]
    before = cutline(db, "events")
    assert before["S"] is None
    # max(ts) is on 2024-01-10; minus 2 days lands on 2024-01-08, so the
    # partitions ending by then (01 .. 07) move and T becomes 2024-01-08.
    new_t = usec(db, "2024-01-08 00:00:00+00")
    assert usec(db, max_ts) - 2 * DAY_USEC >= new_t
    moving = events_rendered(db, "ts < timestamptz '2024-01-08 00:00:00+00'")
    staying = db.query("SELECT count(*) FROM events WHERE ts >= timestamptz '2024-01-08 00:00:00+00'")[0][0]
    assert len(moving) > 1000 and int(staying) > 500

    proc = run_once(tierdb, "2d")
    assert "tiering: operation" in proc.stderr

    # The heap keeps only the partitions at or above T, plus the premade ones.
    parts = heap_partitions(db, "events")
    assert sorted(parts) == [f"events_202401{d:02d}" for d in range(8, 13)], parts
    assert db.query("SELECT count(*) FROM events")[0][0] == staying
    assert db.query("SELECT min(ts) >= timestamptz '2024-01-08 00:00:00+00' FROM events")[0][0] == "t"

    # (T, S, lake_props) advanced together and name the lake's current snapshot.
    after = cutline(db, "events")
    assert after["T"] == new_t
    md_location = after["props"]["metadata_location"]
    md = metadata(md_location)
    assert after["S"] == md["current-snapshot-id"] == after["props"]["snapshot_id"]
    assert lake_files.normalize(md_location).rsplit("/", 2)[0] == lake_files.normalize(after["ref"]).rstrip("/")

    # The lake holds exactly the rows that were below T.
    assert canonical_rows(lake_rows(tierdb, after["ref"], after["S"])) == canonical_rows(moving)

    # The snapshot carries the op id the journal recorded, and the journal finished.
    (snap,) = [s for s in md["snapshots"] if s["snapshot-id"] == after["S"]]
    ops = db.query("SELECT op_id, op_kind, phase, lake_snapshot_id, details::text FROM tierdb.op_log")
    assert len(ops) == 1
    op_id, kind, phase, op_snapshot, details = ops[0]
    assert (kind, phase, int(op_snapshot)) == ("tiering", "done", after["S"])
    assert snap["summary"]["tierdb.op-id"] == op_id
    assert snap["summary"]["operation"] == "append"
    assert int(snap["summary"]["added-records"]) == len(moving)
    assert len(json.loads(details)["partitions"]) == 7

    # The catalog's partition states follow the heap.
    states = dict(db.query("SELECT partition_id, state FROM tierdb.partitions WHERE table_id = "
                           f"{after['table_id']}"))
    for d in range(1, 8):
        assert states[f"public.events_202401{d:02d}"] == "dropped"
    for d in range(8, 13):
        assert states[f"public.events_202401{d:02d}"] == "hot"

    # Data files are ZSTD Parquet.
    files = sorted(lake_files.list_files(after["ref"], ".parquet"))
    assert files
    info = tierdb(["parquet", "schema", str(files[0])])
    assert info.returncode == 0, info.stderr
    assert "ZSTD" in info.stdout and "UNCOMPRESSED" not in info.stdout, info.stdout

    # A second cycle finds nothing to move and changes nothing.
    hint = lake_files.read_text(f"{after['ref']}/metadata/version-hint.text")
    proc = run_once(tierdb, "2d")
    assert "no whole partition" in proc.stderr
    assert cutline(db, "events") == after
    assert lake_files.read_text(f"{after['ref']}/metadata/version-hint.text") == hint
    assert len(db.query("SELECT 1 FROM tierdb.op_log")) == 1
    assert sorted(heap_partitions(db, "events")) == sorted(parts)


def test_premake_keeps_partitions_ahead_and_follows_the_names(events, tierdb):
    db = events
    run_once(tierdb, "100d", TIERDB_PREMAKE_PARTITIONS="3")
    parts = heap_partitions(db, "events")
    assert sorted(parts) == [f"events_202401{d:02d}" for d in range(1, 14)]
    assert parts["events_20240113"] == (
        "FOR VALUES FROM ('2024-01-13 00:00:00+00') TO ('2024-01-14 00:00:00+00')"
    )
    # Nothing moved with a lag longer than the data.
    assert cutline(db, "events")["S"] is None
    # Rows ahead make premake extend again; the count ahead stays 3.
    db.psql("INSERT INTO events VALUES (999999, '2024-01-12 10:00:00+00', 'late', 1.00)")
    run_once(tierdb, "100d", TIERDB_PREMAKE_PARTITIONS="3")
    assert sorted(heap_partitions(db, "events"))[-1] == "events_20240115"
    (state,) = db.query("SELECT state FROM tierdb.partitions WHERE partition_id = 'public.events_20240115'")[0]
    assert state == "hot"


def test_premake_on_an_empty_table_with_monthly_partitions(db, tierdb):
    """An empty table gets its partitions ahead once, not every cycle;
    monthly partitions continue by calendar month, named like the others."""
    db.psql(SESSION + "CREATE TABLE mon (id int NOT NULL, d date NOT NULL) PARTITION BY RANGE (d);\n"
            "CREATE TABLE mon_2024_01 PARTITION OF mon FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');\n"
            "CREATE TABLE mon_2024_02 PARTITION OF mon FOR VALUES FROM ('2024-02-01') TO ('2024-03-01');\n")
    proc = tierdb(["register", "--table", "mon", "--pk", "id", "--tier-key", "d"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "0")
    run_once(tierdb, "0")
    parts = heap_partitions(db, "mon")
    assert sorted(parts) == ["mon_2024_01", "mon_2024_02", "mon_2024_03"], parts
    assert parts["mon_2024_03"] == "FOR VALUES FROM ('2024-03-01') TO ('2024-04-01')"
    # A row in March: two whole months stay ahead of it.
    db.psql("INSERT INTO mon VALUES (1, '2024-03-15')")
    run_once(tierdb, "0")
    parts = heap_partitions(db, "mon")
    assert sorted(parts)[-2:] == ["mon_2024_04", "mon_2024_05"], parts
    assert parts["mon_2024_05"] == "FOR VALUES FROM ('2024-05-01') TO ('2024-06-01')"
    # Lag 0 on dates: January and February lie wholly behind 2024-03-15.
    assert cutline(db, "mon")["T"] == 19783  # 2024-03-01 in days since 1970-01-01
    assert "mon_2024_01" not in parts


def test_read_pin_below_the_new_cutline_delays_the_drop(events, tierdb):
    db = events
    table_id = cutline(db, "events")["table_id"]
    old_t = cutline(db, "events")["T"]
    db.psql(
        "INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi, expires_at)"
        f" VALUES ({table_id}, NULL, {old_t}, now() + interval '1 hour')"
    )
    proc = run_once(tierdb, "2d")
    assert "read pin" in proc.stderr
    # Published: T moved and the lake has the rows, but the heap keeps the partitions.
    after = cutline(db, "events")
    assert after["T"] == usec(db, "2024-01-08 00:00:00+00")
    assert "events_20240101" in heap_partitions(db, "events")
    states = db.query(f"SELECT DISTINCT state FROM tierdb.partitions WHERE table_id = {table_id}"
                      " AND tier_key_hi <= " + str(after["T"]))
    assert states == [("tiered",)]
    assert db.query("SELECT phase FROM tierdb.op_log") == [("published",)]
    # Once the pin has expired the next cycle drops them, finishes the
    # journal and sweeps the pin away.
    db.psql("UPDATE tierdb.read_pins SET expires_at = now() - interval '1 second'")
    proc = run_once(tierdb, "2d")
    assert "swept 1 expired read pin" in proc.stderr
    assert db.query("SELECT count(*) FROM tierdb.read_pins") == [("0",)]
    assert "events_20240101" not in heap_partitions(db, "events")
    assert db.query("SELECT phase FROM tierdb.op_log") == [("done",)]
    assert cutline(db, "events") == after


# ------------------------------------------------------------------ an int8 table


# Enough rows that the first run (two thirds of them) fills a decoded batch (65536 rows) and more.
M_ROWS = 105_000


def make_m(db, tierdb):
    db.psql(
        "CREATE TABLE m (id int8 NOT NULL, k int8 NOT NULL, payload text, ok boolean)"
        " PARTITION BY RANGE (k);\n"
        "CREATE TABLE m_p0 PARTITION OF m FOR VALUES FROM (0) TO (100);\n"
        "CREATE TABLE m_p100 PARTITION OF m FOR VALUES FROM (100) TO (200);\n"
        "CREATE TABLE m_p200 PARTITION OF m FOR VALUES FROM (200) TO (300);\n"
        "CREATE TABLE m_p300 PARTITION OF m FOR VALUES FROM (300) TO (400);\n"
        "CREATE TABLE m_p400 PARTITION OF m FOR VALUES FROM (400) TO (500);\n"
        f"INSERT INTO m SELECT g, g % 450, 'p' || g, g % 3 = 0 FROM generate_series(1, {M_ROWS}) g;\n"
    )
    proc = tierdb(["register", "--table", "m", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr


def m_rendered(db, where):
    """Rows of m as `lake cat` renders them."""
    rows = db.query("SELECT json_build_object('id', id, 'k', k, 'payload', payload, 'ok', ok)::text FROM m WHERE "
                    + where)
    return [json.loads(r[0]) for r in rows]


def test_int8_keyed_table(db, tierdb):
    make_m(db, tierdb)
    moving = m_rendered(db, "k < 300")
    # max(k) = 449, lag 120: cutoff 329, so [0, 300) moves.
    run_once(tierdb, "120")
    after = cutline(db, "m")
    assert after["T"] == 300
    assert sorted(heap_partitions(db, "m")) == ["m_p300", "m_p400", "m_p500", "m_p600"]
    assert heap_partitions(db, "m")["m_p600"] == "FOR VALUES FROM ('600') TO ('700')"
    assert canonical_rows(lake_rows(tierdb, after["ref"], after["S"])) == canonical_rows(moving)
    assert db.query("SELECT count(*), min(k) FROM m") == [(str(M_ROWS - len(moving)), "300")]

    # New rows land in the premade partitions; the next cycle moves the
    # partitions that fell behind, contiguous from T, as a second snapshot.
    db.psql("INSERT INTO m SELECT g, 500 + g % 200, 'q' || g, NULL FROM generate_series(1, 1000) g")
    first = moving
    moving = first + m_rendered(db, "k < 500")
    run_once(tierdb, "120")
    second = cutline(db, "m")
    assert second["T"] == 500
    md = metadata(second["props"]["metadata_location"])
    (snap,) = [s for s in md["snapshots"] if s["snapshot-id"] == second["S"]]
    assert snap["parent-snapshot-id"] == after["S"]
    assert canonical_rows(lake_rows(tierdb, second["ref"], second["S"])) == canonical_rows(moving)
    assert canonical_rows(lake_rows(tierdb, second["ref"], after["S"])) == canonical_rows(first)
    assert db.query("SELECT phase, count(*) FROM tierdb.op_log GROUP BY phase") == [("done", "2")]
    assert sorted(heap_partitions(db, "m")) == ["m_p500", "m_p600", "m_p700", "m_p800"]
    after = second

    # A duration is no lag for an integer key: the step fails and says why.
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d"})
    assert proc.returncode == 1
    assert "TIERDB_TIERING_LAG" in proc.stderr
    assert cutline(db, "m") == after


def test_failed_copy_is_undone(db, tierdb, lake):
    """A row the lake cannot hold stops the run before its lake commit:
    the files are deleted, the seal removed, the journal says 'aborted',
    and the next cycle after the fix moves everything."""
    db.psql("CREATE TABLE w (id int8 NOT NULL, k int8 NOT NULL, seen timestamptz) PARTITION BY RANGE (k);\n"
            "CREATE TABLE w_p0 PARTITION OF w FOR VALUES FROM (0) TO (10);\n"
            "CREATE TABLE w_p10 PARTITION OF w FOR VALUES FROM (10) TO (20);\n"
            "CREATE TABLE w_p20 PARTITION OF w FOR VALUES FROM (20) TO (30);\n"
            "INSERT INTO w SELECT g, g % 30, timestamptz '2024-01-01' + g * interval '1 minute'"
            " FROM generate_series(1, 3000) g;\n"
            "UPDATE w SET seen = 'infinity' WHERE id = 2015;\n")
    proc = tierdb(["register", "--table", "w", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    before = cutline(db, "w")

    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "5"})
    assert proc.returncode == 1
    assert "seen" in proc.stderr, proc.stderr
    assert cutline(db, "w") == before
    assert db.query("SELECT phase FROM tierdb.op_log") == [("aborted",)]
    assert db.query("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'tierdb_sealed%'") == [("0",)]
    states = db.query("SELECT DISTINCT state FROM tierdb.partitions WHERE partition_id IN ('public.w_p0', 'public.w_p10')")
    assert states == [("hot",)]
    assert lake_files.list_files(before["ref"], ".parquet") == set()
    db.psql("INSERT INTO w VALUES (-1, 5, NULL)")  # writable again

    db.psql("UPDATE w SET seen = '2030-01-01' WHERE id = 2015")
    run_once(tierdb, "5")
    after = cutline(db, "w")
    assert after["T"] == 20
    assert len(lake_rows(tierdb, after["ref"], after["S"])) == 2001
    assert db.query("SELECT phase FROM tierdb.op_log ORDER BY updated_at") == [("aborted",), ("done",)]


def test_lake_ahead_of_the_cutline_stops_tiering(events, tierdb):
    """A lake snapshot the cut-line does not publish (an interrupted
    operation's commit) must be recovered first: tiering on top of it
    would publish rows nobody accounted for."""
    db = events
    run_once(tierdb, "5d")
    first = cutline(db, "events")
    db.psql(f"UPDATE tierdb.cutline SET lake_snapshot_id = NULL WHERE table_id = {first['table_id']}")
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d"})
    assert proc.returncode == 1
    assert "must be recovered" in proc.stderr, proc.stderr
    assert cutline(db, "events")["T"] == first["T"]
    assert db.query("SELECT count(*) FROM tierdb.op_log") == [("1",)]
    assert db.query("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'tierdb_sealed%'") == [("0",)]


def test_bad_settings_are_refused(db, tierdb):
    proc = tierdb(["run", "--once"], env={"TIERDB_PREMAKE_PARTITIONS": "two"})
    assert proc.returncode == 1
    assert "TIERDB_PREMAKE_PARTITIONS" in proc.stderr
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "soon"})
    assert proc.returncode == 1
    assert "TIERDB_TIERING_LAG" in proc.stderr
    proc = tierdb(["run", "--once", "extra"])
    assert proc.returncode == 2
    # A database without the extension: the cycle says what to do.
    proc = tierdb(["run", "--once", "--dsn", db.cluster.dsn_for("postgres")])
    assert proc.returncode == 1
    assert "CREATE EXTENSION tierdb" in proc.stderr, proc.stderr


def wait_for(db, sql, what, timeout=60):
    deadline = time.monotonic() + timeout
    while db.query(sql) != [("t",)]:
        assert time.monotonic() < deadline, f"timed out waiting for {what}: " + repr(db.query(
            "SELECT pid, application_name, wait_event_type, wait_event, state, left(query, 80)"
            " FROM pg_stat_activity WHERE backend_type = 'client backend'"))
        time.sleep(0.05)


def run_blocked_once(db, tierdb_bin, lake, hold_sql, held_sql, waiting_sql, while_waiting=lambda: None,
                     env=None):
    """Runs `tierdb run --once` (lag 2d) while another session holds a lock:
    that session runs BEGIN and hold_sql, the daemon starts once held_sql
    is true, while_waiting() runs once waiting_sql shows the daemon
    blocked, then the session commits and the daemon must finish with 0
    (its lock waits are bounded, here far beyond the test's own pace)."""
    pg = db.cluster
    session = subprocess.Popen(
        [str(PG_BINDIR / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.host, "-p", str(pg.port),
         "-U", pg.user, "-d", db.name, "-f", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=clean_env(),
    )
    daemon = None
    try:
        session.stdin.write(f"BEGIN;\n{hold_sql};\n")
        session.stdin.flush()
        wait_for(db, held_sql, "the session's lock")
        env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), "TIERDB_TIERING_LAG": "2d",
               "TIERDB_LOCK_TIMEOUT_MS": "600000", **(env or {})}
        daemon = subprocess.Popen([str(tierdb_bin), "run", "--once"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
        wait_for(db, waiting_sql, "the daemon to wait for the session")
        while_waiting()
        session.stdin.write("COMMIT;\n")
        session.stdin.close()
        assert session.wait(timeout=60) == 0, session.stderr.read()
        _, err = daemon.communicate(timeout=120)
        assert daemon.returncode == 0, err
    finally:
        for proc in (session, daemon):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_seal_waits_out_an_in_flight_writer(events, tierdb_bin, lake):
    """A transaction that wrote into a partition before the seal commits
    first, and its row moves to the lake with the others: none is lost."""
    db = events
    run_blocked_once(
        db, tierdb_bin, lake,
        "INSERT INTO events VALUES (-5, '2024-01-03 08:00:00+00', 'in flight', 5.55)",
        "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'events_20240103'::regclass"
        " AND mode = 'RowExclusiveLock' AND granted)",
        "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'tierdb'"
        " AND wait_event_type = 'Lock' AND wait_event = 'relation')",
    )
    after = cutline(db, "events")
    assert after["T"] == usec(db, "2024-01-08 00:00:00+00")
    rows = lake_rows_at(tierdb_bin, after)
    assert {"id": -5, "ts": "2024-01-03T08:00:00.000000Z", "v": "in flight", "amount": "5.55"} in rows
    assert len(rows) == 2101


def test_drop_waits_out_in_database_readers(events, tierdb_bin, lake):
    """An in-database reader holds the table's reader lock shared while it
    reads with the old cut-line: the daemon publishes, then waits for it
    before dropping the partitions it may still scan."""
    db = events
    table_id = cutline(db, "events")["table_id"]

    def published_not_dropped():
        assert cutline(db, "events")["T"] == usec(db, "2024-01-08 00:00:00+00")
        assert "events_20240101" in heap_partitions(db, "events")

    run_blocked_once(
        db, tierdb_bin, lake,
        # A read below every heap partition: it locks no partition, only the reader lock.
        "SET LOCAL tierdb.transparent_reads = on; SELECT count(*) FROM events WHERE ts < '2023-01-01+00'",
        "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND granted"
        f" AND objsubid = 3 AND objid = {table_id})",
        "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'tierdb'"
        " AND wait_event = 'advisory')",
        published_not_dropped,
        # Creating a partition would wait for the reader's lock on the parent first.
        env={"TIERDB_PREMAKE_PARTITIONS": "0"},
    )
    assert "events_20240101" not in heap_partitions(db, "events")
    assert db.query("SELECT phase FROM tierdb.op_log") == [("done",)]


def test_concurrent_inserts_into_hot_partitions_are_kept(events, tierdb_bin, lake):
    """Writers keep inserting into hot partitions, one commit per row,
    while the daemon tiers the old ones: every row ends up in the heap or
    the lake, exactly once."""
    db = events
    db.psql("INSERT INTO events SELECT 10000 + g, timestamptz '2024-01-02 00:00:00+00' + g * interval '1 second',"
            " 'bulk', g FROM generate_series(1, 150000) g")
    expected = events_rendered(db, "ts < timestamptz '2024-01-08 00:00:00+00'")
    pg = db.cluster
    writer = subprocess.Popen(
        [str(PG_BINDIR / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.host, "-p", str(pg.port),
         "-U", pg.user, "-d", db.name, "-c",
         "DO $$ BEGIN FOR i IN 1..3000 LOOP"
         " INSERT INTO events VALUES (500000 + i, timestamptz '2024-01-09 00:00:00+00' + i * interval '1 second',"
         " 'live', i); COMMIT; END LOOP; END $$"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=clean_env(),
    )
    try:
        env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), "TIERDB_TIERING_LAG": "2d"}
        daemon = subprocess.run([str(tierdb_bin), "run", "--once"], capture_output=True, text=True,
                                timeout=300, env=env)
        assert daemon.returncode == 0, daemon.stderr
    finally:
        _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    after = cutline(db, "events")
    assert after["T"] == usec(db, "2024-01-08 00:00:00+00")
    assert canonical_rows(lake_rows_at(tierdb_bin, after)) == canonical_rows(expected)
    assert db.query("SELECT count(*) FROM events WHERE id > 500000") == [("3000",)]


def lake_rows_at(tierdb_bin, cut):
    proc = subprocess.run([str(tierdb_bin), "lake", "cat", cut["ref"], "--snapshot", str(cut["S"])],
                          capture_output=True, text=True, timeout=120, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


# ------------------------------------------------------------------ the guard


def test_sealed_partition_refuses_writes(events):
    db = events
    db.psql(
        "CREATE TRIGGER tierdb_sealed BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON events_20240105"
        " FOR EACH STATEMENT EXECUTE FUNCTION tierdb.sealed_partition_guard();\n"
        "CREATE TRIGGER tierdb_sealed_rows BEFORE INSERT OR UPDATE OR DELETE ON events_20240105"
        " FOR EACH ROW EXECUTE FUNCTION tierdb.sealed_partition_guard();\n"
    )
    count = db.query("SELECT count(*) FROM events_20240105")
    for sql in (
        "INSERT INTO events_20240105 VALUES (-1, '2024-01-05 12:00:00+00', 'x', 1)",
        # routed through the parent: only the row-level trigger sees it
        "INSERT INTO events VALUES (-1, '2024-01-05 12:00:00+00', 'x', 1)",
        "UPDATE events SET v = 'changed' WHERE ts >= '2024-01-05' AND ts < '2024-01-06'",
        "DELETE FROM events_20240105",
        "TRUNCATE events_20240105",
    ):
        message = db.error(sql)
        assert "55000" in message, message
        assert "partition public.events_20240105 of public.events is being moved to the lake" in message
        assert "tierdb_upsert" in message
    assert db.query("SELECT count(*) FROM events_20240105") == count
    # Other partitions still take writes.
    db.psql("INSERT INTO events VALUES (-2, '2024-01-06 12:00:00+00', 'y', 2)")


# ------------------------------------------------------------------ the leader


class RunningDaemon:
    """`tierdb run` in the background with its log in a file; stop() sends
    SIGTERM and returns the exit status."""

    def __init__(self, db, tierdb_bin, lake, log_path, **env):
        self.log_path = log_path
        full_env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), **env}
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen([str(tierdb_bin), "run"], stdout=subprocess.DEVNULL, stderr=log,
                                         stdin=subprocess.DEVNULL, env=full_env)

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_log(self, predicate, what, timeout=60):
        deadline = time.monotonic() + timeout
        while not predicate(self.log()):
            assert self.proc.poll() is None, self.log()
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{self.log()}"
            time.sleep(0.1)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


def test_one_daemon_leads(events, tierdb, tierdb_bin, lake, tmp_path):
    db = events
    daemon = RunningDaemon(db, tierdb_bin, lake, tmp_path / "daemon.log",
                           TIERDB_TIERING_LAG="100d", TIERDB_CYCLE_INTERVAL_SECONDS="3600")
    try:
        daemon.wait_log(lambda text: "leading" in text, "the daemon to lead")
        proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d"})
        assert proc.returncode == 0, proc.stderr
        assert "another tierdb daemon leads; waiting" in proc.stderr
        assert cutline(db, "events")["S"] is None  # the follower moved nothing
    finally:
        rc = daemon.stop()
    assert rc == 0, daemon.log()
    assert "stopping on request" in daemon.log()
    # With the leader gone, the next daemon leads and tiers.
    run_once(tierdb, "2d")
    assert cutline(db, "events")["S"] is not None


def test_daemon_survives_a_lost_connection(events, tierdb_bin, lake, tmp_path):
    """A daemon whose session dies logs it, reconnects, leads again and
    keeps working."""
    db = events
    daemon = RunningDaemon(db, tierdb_bin, lake, tmp_path / "daemon.log",
                           TIERDB_TIERING_LAG="100d", TIERDB_CYCLE_INTERVAL_SECONDS="1")
    try:
        daemon.wait_log(lambda text: "leading" in text, "the daemon to lead")
        db.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tierdb'")
        daemon.wait_log(lambda text: text.count("leading") >= 2, "the daemon to reconnect")
        # Still working: rows in a premade partition make the next cycle premake further.
        db.psql("INSERT INTO events VALUES (100000, '2024-01-12 10:00:00+00', 'late', NULL)")
        daemon.wait_log(lambda text: "created partition events_20240114" in text, "premake after new rows")
    finally:
        rc = daemon.stop()
    assert rc == 0, daemon.log()
