"""Lake maintenance that honours pins (issue 20; cli/maintenance.c,
cli/compaction.c, cli/expiry.c, docs/maintenance.md).

A tiered table is put through many folds (corrections by plain UPDATE and
DELETE, routed to the delta) and advances; every fold adds a snapshot, a
data file and an equality-delete file. Then `tierdb maintain` runs
compaction (bin-pack and delete debt), manifest rewrite, snapshot expiry
and the orphan sweep. Throughout, what a client reads equals an untiered
copy of the same rows (`plain`), with serial and parallel plans; a read
pinned before maintenance still reads its snapshot; DuckDB and pyiceberg
read the maintained lake; and a kill -9 at every fault point of every pass
loses nothing and deletes no file a kept snapshot needs.
"""

from __future__ import annotations

import json
import os
import random
import threading

import psycopg
import pytest

import lake_files
import seam  # noqa: F401  (puts tests/interop on the path for spark_support)
import spark_support
from test_alter_table import duckdb_lake_rows
from test_tiering import cutline, lake_rows, make_events, run_once

LAG = "2d"
# Folds before maintenance in the main test: `make check-maintenance-long` runs 300.
ROUNDS = int(os.environ.get("TIERDB_MAINTENANCE_ROUNDS", "40"))
PARALLEL = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
            " SET max_parallel_workers_per_gather = 2;\n")
SELECT = "SET TimeZone = 'UTC';\nSELECT id, ts, v, amount FROM {t} ORDER BY id"
BUILDUP_POLICY = ["--set", "compaction=off", "--set", "expiry=off", "--set", "manifest_rewrite=off"]
MAINTAIN_POLICY = ["--reset", "--set", "snapshot_max_age=0s", "--set", "min_snapshots=1",
                   "--set", "orphan_sweep=on", "--set", "orphan_min_age=0s"]


def policy(tierdb, *args):
    proc = tierdb(["policy", "--table", "public.events", *args])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def assert_reads_exact(db, where=""):
    """events reads as plain does, with a serial and with a parallel plan."""
    want = db.query(SELECT.format(t="plain"))
    assert db.query(SELECT.format(t="events")) == want, where
    assert db.query(PARALLEL + SELECT.format(t="events")) == want, where + " (parallel plan)"
    agg = "SELECT count(*), sum(amount), count(DISTINCT v) FROM {t}"
    assert db.query(PARALLEL + agg.format(t="events")) == db.query(agg.format(t="plain")), where


def correct(db, rng, cold_ids, n_updates=3, n_deletes=1):
    """A few corrections of cold rows, applied alike to events (routed to the delta) and plain."""
    sql = []
    for _ in range(n_updates):
        i = rng.choice(cold_ids)
        sql.append(f"UPDATE {{t}} SET v = 'c{rng.randrange(10**6)}', amount = amount + 1 WHERE id = {i};")
    for _ in range(n_deletes):
        i = cold_ids.pop(rng.randrange(len(cold_ids)))
        sql.append(f"DELETE FROM {{t}} WHERE id = {i};")
    for t in ("events", "plain"):
        db.psql("\n".join(s.format(t=t) for s in sql))


def add_day(db, day):
    """A new day of rows (partition premade by the daemon), so the next cycle's tiering advances."""
    for t in ("events", "plain"):
        db.psql(f"INSERT INTO {t} SELECT 100000 * {day} + g, timestamptz '2024-01-01 00:00:00+00'"
                f" + {day - 1} * interval '1 day' + g * interval '1 minute', 'day{day}-' || g, g FROM"
                " generate_series(1, 50) g")


def stats(db):
    (row,) = db.query("SELECT stats::text, warnings::text FROM tierdb.lake_stats")
    return json.loads(row[0]), json.loads(row[1])


def snapshot_ids(cut):
    return {s["snapshot-id"] for s in lake_files.read_json(cut["props"]["metadata_location"])["snapshots"]}


def unsettled_ops(db):
    return db.query("SELECT op_kind, phase, details->>'kind' FROM tierdb.op_log"
                    " WHERE phase NOT IN ('published', 'done', 'aborted')")


def build_debt(db, tierdb, rounds, seed=20):
    """events and plain with `rounds` folds of corrections and an advance every 10 rounds."""
    make_events(db)
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    policy(tierdb, *BUILDUP_POLICY)
    run_once(tierdb, LAG)
    rng = random.Random(seed)
    cold_ids = [int(i) for (i,) in db.query(
        "SELECT id FROM plain WHERE ts < '2024-01-08 00:00:00+00' ORDER BY id")]
    day = 11
    for r in range(rounds):
        correct(db, rng, cold_ids)
        if r % 10 == 9:
            add_day(db, day)
            day += 1
        run_once(tierdb, LAG)
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]
    return cold_ids


def independent_readers_agree(tierdb, cut):
    """DuckDB (iceberg_scan) and, once no delete file is left, pyiceberg read what `lake cat` reads at S."""
    ours = sorted(r["id"] for r in lake_rows(tierdb, cut["ref"], cut["S"]))
    assert sorted(int(i) for (i,) in duckdb_lake_rows(cut, "id")) == ours
    if lake_files.ON_S3:
        return
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(cut["props"]["metadata_location"])
    if not table.inspect.delete_files().num_rows:
        assert sorted(table.scan(snapshot_id=cut["S"]).to_arrow().column("id").to_pylist()) == ours


@pytest.fixture(scope="module")
def spark():
    """The shared Spark session with the Iceberg runtime, able to reach the S3 store when the lake is there."""
    return spark_support.spark_session(spark_support.s3a_settings_from_env() if lake_files.ON_S3 else None)


def spark_ids(spark, cut, snapshot):
    """The ids Spark (the Iceberg runtime) reads from the lake at `snapshot`."""
    df = spark.read.format("iceberg").option("snapshot-id", snapshot).load(cut["ref"])
    return sorted(r["id"] for r in df.select("id").collect())


def every_kept_snapshot_reads(tierdb, cut):
    """No file a kept snapshot needs was deleted: `lake cat` reads each snapshot of the metadata whole."""
    for sid in snapshot_ids(cut):
        proc = tierdb(["lake", "cat", cut["props"]["metadata_location"], "--snapshot", str(sid)])
        assert proc.returncode == 0, f"snapshot {sid}: {proc.stderr}"


def referenced_by_metadata(cut):
    """Every file the current metadata references: its log, manifest lists, manifests and their entries."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(cut["props"]["metadata_location"])
    files = {str(lake_files.local(cut["props"]["metadata_location"]))}
    files |= {str(lake_files.local(e.metadata_file)) for e in table.metadata.metadata_log}
    for snap in table.metadata.snapshots:
        files.add(str(lake_files.local(snap.manifest_list)))
        for m in snap.manifests(table.io):
            files.add(str(lake_files.local(m.manifest_path)))
            for entry in m.fetch_manifest_entry(table.io, discard_deleted=True):
                files.add(str(lake_files.local(entry.data_file.file_path)))
    return files


def run_maintain(db, tierdb, env=None):
    """`tierdb maintain` waiting in a thread while one daemon cycle runs; returns (maintain, daemon)."""
    out = {}
    waiter = threading.Thread(target=lambda: out.setdefault("maintain", tierdb(["maintain", "--table", "public.events"])))
    waiter.start()
    for _ in range(200):  # the request is recorded before the cycle looks for it
        if db.query("SELECT count(*) FROM tierdb.maintenance_requests") == [("1",)]:
            break
        waiter.join(0.05)
    daemon = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG, **(env or {})})
    waiter.join(60)
    return out.get("maintain"), daemon


def test_maintenance_pays_off_the_debt_and_every_read_stays_exact(db, tierdb, spark):
    build_debt(db, tierdb, rounds=ROUNDS)
    assert_reads_exact(db, "before maintenance")
    before = cutline(db, "events")
    s, _ = stats(db)
    assert s["equality_delete_files"] >= ROUNDS and s["snapshots"] >= ROUNDS + ROUNDS // 10 and s["small_files"] > s["data_files"] // 2, s
    files_before = set(lake_files.list_files(before["ref"], ".parquet"))

    # A reader pinned now (as tierdb-spark pins) keeps its snapshot through maintenance.
    (pin_id, pinned_s) = db.query("SELECT pin_id, lake_snapshot_id FROM tierdb_read_begin('events')")[0]
    assert int(pinned_s) == before["S"]
    pinned_rows = lake_rows(tierdb, before["ref"], before["S"])

    policy(tierdb, *MAINTAIN_POLICY)
    # A stray file such as an interrupted commit leaves: the orphan sweep removes it.
    stray = lake_files.local(before["ref"]) / "data" / "stray-00000.parquet"
    if not lake_files.ON_S3:
        stray.write_bytes(b"PAR1 not really")
    maintain, daemon = run_maintain(db, tierdb)
    assert daemon.returncode == 0, daemon.stderr
    assert maintain is not None and maintain.returncode == 0, (maintain and maintain.stderr, daemon.stderr)
    assert "compaction: operation" in daemon.stderr and "expiry: operation" in daemon.stderr, daemon.stderr
    assert db.query("SELECT count(*) FROM tierdb.maintenance_requests") == [("0",)]
    assert unsettled_ops(db) == []
    assert_reads_exact(db, "after maintenance, pin held")

    after = cutline(db, "events")
    assert after["S"] != before["S"] and after["T"] == before["T"]
    s, warnings = stats(db)
    assert s["equality_delete_files"] == 0 and s["position_delete_files"] == 0, s
    assert s["data_files"] < len(files_before) // 4, s
    # the pinned snapshot and every later one stay; everything older went
    kept = snapshot_ids(after)
    assert before["S"] in kept and after["S"] in kept
    assert len(kept) < 10, kept
    assert sorted(map(json.dumps, lake_rows(tierdb, before["ref"], before["S"]))) == \
        sorted(map(json.dumps, pinned_rows))
    every_kept_snapshot_reads(tierdb, after)
    independent_readers_agree(tierdb, after)
    # Spark reads the maintained snapshot and the pinned one as `lake cat` does.
    assert spark_ids(spark, after, after["S"]) == sorted(r["id"] for r in lake_rows(tierdb, after["ref"], after["S"]))
    assert spark_ids(spark, after, before["S"]) == sorted(r["id"] for r in pinned_rows)
    if not lake_files.ON_S3:
        assert not stray.exists()
    assert "maintained public.events" in maintain.stdout, maintain.stdout

    # The pin ends: the next run expires what it held, down to min_snapshots.
    assert db.query(f"SELECT tierdb_read_end({pin_id})") == [("t",)]
    maintain, daemon = run_maintain(db, tierdb)
    assert maintain.returncode == 0, (maintain.stderr, daemon.stderr)
    final = cutline(db, "events")
    assert snapshot_ids(final) == {final["S"]}
    assert_reads_exact(db, "after the pin ended")
    every_kept_snapshot_reads(tierdb, final)
    independent_readers_agree(tierdb, final)
    assert spark_ids(spark, final, final["S"]) == sorted(r["id"] for r in lake_rows(tierdb, final["ref"], final["S"]))
    if not lake_files.ON_S3:
        on_disk = {str(p) for p in lake_files.list_files(final["ref"], "")}
        referenced = referenced_by_metadata(final)
        hint = str(lake_files.local(final["ref"]) / "metadata" / "version-hint.text")
        assert on_disk - referenced - {hint} == set(), "unreferenced files remain"
        assert referenced - on_disk == set(), "referenced files are missing"

    # More corrections fold on top of the maintained lake and read exactly.
    rng = random.Random(7)
    cold = [int(i) for (i,) in db.query("SELECT id FROM plain WHERE ts < '2024-01-08' ORDER BY id")]
    correct(db, rng, cold)
    run_once(tierdb, LAG)
    assert_reads_exact(db, "a fold after maintenance")


def test_an_in_backend_reader_keeps_its_view_until_it_ends(db, tierdb):
    """A transaction that read the table before maintenance holds its snapshot in memory (no pin row):
    the expiry commits, but deletes nothing until the reader has ended; the reader reads the same rows
    throughout; after it ends, the next cycle finishes the deletion."""
    build_debt(db, tierdb, rounds=6)
    policy(tierdb, *MAINTAIN_POLICY, "--set", "orphan_sweep=off")
    before = cutline(db, "events")
    reader = psycopg.connect(db.dsn)
    try:
        reader.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        query = "SELECT id, ts::text, v, amount::text FROM events ORDER BY id"
        first = reader.execute(query).fetchall()
        proc = tierdb(["maintain", "--table", "public.events", "--no-wait"])
        assert proc.returncode == 0, proc.stderr
        daemon = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG, "TIERDB_LOCK_TIMEOUT_MS": "500"})
        assert "maintenance: snapshot expiry failed" in daemon.stderr, daemon.stderr
        assert cutline(db, "events")["S"] != before["S"]
        # The reader's snapshot still reads whole, and the reader reads what it read before.
        proc = tierdb(["lake", "cat", before["props"]["metadata_location"], "--snapshot", str(before["S"])])
        assert proc.returncode == 0, proc.stderr
        assert reader.execute(query).fetchall() == first
        for setting in PARALLEL.strip().rstrip(";").split(";"):
            reader.execute(setting)
        assert reader.execute(query).fetchall() == first
    finally:
        reader.rollback()
        reader.close()
    run_once(tierdb, LAG)
    assert unsettled_ops(db) == []
    assert_reads_exact(db, "after the reader ended")
    cut = cutline(db, "events")
    assert before["S"] not in snapshot_ids(cut)
    if not lake_files.ON_S3:
        on_disk = {str(p) for p in lake_files.list_files(cut["ref"], ".parquet")}
        assert on_disk - referenced_by_metadata(cut) == set()


FAULTS = [
    "compaction-after-write",
    "compaction-before-lock",
    "compaction-before-commit",
    "compaction-after-commit",
    "compaction-after-commit-recorded",
    "compaction-before-publish-commit",
    "manifests-before-commit",
    "manifests-after-commit",
    "manifests-after-commit-recorded",
    "expiry-before-commit",
    "expiry-after-commit",
    "expiry-before-delete",
    "expiry-during-delete",
    "orphans-during-delete",
]


# On S3 (make test-e2e-s3) one point of each lake-writing kind: the storage differs, the journal does not.
FAULTS_ON_S3 = ["compaction-after-commit", "manifests-after-commit", "expiry-during-delete"]


@pytest.mark.parametrize("point", FAULTS_ON_S3 if lake_files.ON_S3 else FAULTS)
def test_maintenance_killed_at_each_fault_point_loses_nothing(db, tierdb, point):
    build_debt(db, tierdb, rounds=6)
    sweep = point.startswith("orphans")
    policy(tierdb, *MAINTAIN_POLICY, "--set", f"orphan_sweep={'on' if sweep else 'off'}", "--set", "max_manifests=1")
    strays = []
    if sweep and not lake_files.ON_S3:
        data = lake_files.local(cutline(db, "events")["ref"]) / "data"
        strays = [data / f"stray-{i}.parquet" for i in range(3)]
        for stray in strays:
            stray.write_bytes(b"PAR1 not really")
    proc = tierdb(["maintain", "--table", "public.events", "--no-wait"])
    assert proc.returncode == 0, proc.stderr
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG, "TIERDB_FAULT": point})
    assert proc.returncode == -9, (point, proc.stderr)
    # Readers are exact at every instant, whatever the lake's newest state is.
    assert_reads_exact(db, f"killed at {point}")
    every_kept_snapshot_reads(tierdb, cutline(db, "events"))

    # The next cycles settle the interrupted operation and finish the request.
    for _ in range(3):
        run_once(tierdb, LAG)
    assert unsettled_ops(db) == []
    assert db.query("SELECT count(*) FROM tierdb.maintenance_requests") == [("0",)]
    assert_reads_exact(db, f"recovered from {point}")
    cut = cutline(db, "events")
    every_kept_snapshot_reads(tierdb, cut)
    s, _ = stats(db)
    assert s["equality_delete_files"] == 0, (point, s)
    if not lake_files.ON_S3:
        # nothing the killed operation wrote, nor anything expiry made unreferenced, is left behind
        on_disk = {str(p) for p in lake_files.list_files(cut["ref"], ".parquet")}
        assert on_disk - referenced_by_metadata(cut) - {str(p) for p in strays} == set(), point
    if sweep:
        # a request after the crash runs the sweep again, which finishes the job
        proc = tierdb(["maintain", "--table", "public.events", "--no-wait"])
        assert proc.returncode == 0, proc.stderr
        run_once(tierdb, LAG)
        assert not any(stray.exists() for stray in strays)


def test_each_pass_alone_leaves_a_lake_every_reader_reads(db, tierdb, spark):
    """Compaction, then the manifest rewrite, then expiry, each run alone: after each, Postgres reads
    exactly, and Spark, DuckDB and `lake cat` read the same rows at the published snapshot."""
    build_debt(db, tierdb, rounds=12)
    passes = [("compaction", ["--set", "compaction=on"]),
              ("manifest rewrite", ["--set", "manifest_rewrite=on", "--set", "max_manifests=1"]),
              ("expiry", ["--set", "expiry=on", "--set", "snapshot_max_age=0s"])]
    for name, settings in passes:
        before = cutline(db, "events")
        policy(tierdb, *settings)
        maintain, daemon = run_maintain(db, tierdb)
        assert maintain.returncode == 0, (name, maintain.stderr, daemon.stderr)
        assert_reads_exact(db, f"after {name}")
        cut = cutline(db, "events")
        assert (cut["S"] != before["S"]) == (name != "expiry"), name
        every_kept_snapshot_reads(tierdb, cut)
        independent_readers_agree(tierdb, cut)
        assert spark_ids(spark, cut, cut["S"]) == sorted(r["id"] for r in lake_rows(tierdb, cut["ref"], cut["S"]))
    assert snapshot_ids(cutline(db, "events")) == {cutline(db, "events")["S"]}


def test_policy_is_checked_set_unset_and_reset(db, tierdb):
    make_events(db)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    out = policy(tierdb)
    assert "snapshot_max_age       5d (default)" in out, out
    out = policy(tierdb, "--set", "snapshot_max_age=12h", "--set", "target_file_bytes=256MB")
    assert "snapshot_max_age       12h\n" in out and "target_file_bytes      256MB\n" in out, out
    stored = db.query("SELECT maintenance_policy::text FROM tierdb.tables")[0][0]
    assert json.loads(stored) == {"snapshot_max_age": "12h", "target_file_bytes": "256MB"}
    for bad, message in [("snapshot_max_age=soon", "is not a duration"), ("nonsense=1", "unknown policy key 'nonsense'"),
                         ("delete_ratio=2", "is not a fraction between 0 and 1"), ("orphan_sweep", "is not key=value")]:
        proc = tierdb(["policy", "--table", "public.events", "--set", "compaction=off", "--set", bad])
        assert proc.returncode == 2, proc.stdout
        assert message in proc.stderr, proc.stderr
    # a refused change changes nothing, not even its valid part
    assert json.loads(db.query("SELECT maintenance_policy::text FROM tierdb.tables")[0][0]) == json.loads(stored)
    out = policy(tierdb, "--unset", "snapshot_max_age")
    assert "snapshot_max_age       5d (default)" in out and "target_file_bytes      256MB\n" in out, out
    out = policy(tierdb, "--reset")
    assert "target_file_bytes      512MB (default)" in out, out
    assert db.query("SELECT maintenance_policy::text FROM tierdb.tables") == [("{}",)]


def test_status_warns_about_lake_debt(db, tierdb):
    build_debt(db, tierdb, rounds=3)
    policy(tierdb, "--set", "warn_small_files=1", "--set", "warn_snapshots=2", "--set", "interval=0s")
    run_once(tierdb, LAG)
    _, warnings = stats(db)
    assert {w["kind"] for w in warnings} >= {"small_files", "snapshots"}, warnings
    proc = tierdb(["status"])
    assert proc.returncode == 0, proc.stderr
    assert "public.events: WARNING: lake small data files" in proc.stdout, proc.stdout
    assert "public.events: WARNING: lake snapshots" in proc.stdout, proc.stdout


def test_maintain_refuses_what_it_cannot_do(db, tierdb):
    proc = tierdb(["maintain", "--table", "public.nothing"])
    assert proc.returncode == 1 and "public.nothing is not registered" in proc.stderr, proc.stderr
    proc = tierdb(["maintain"])
    assert proc.returncode == 2 and "--table is required" in proc.stderr, proc.stderr


def test_a_mirror_expires_its_pump_snapshots_and_hybrid_reads_stay_exact(db, tierdb, tierdb_bin, lake, tmp_path):
    """A mirrored table makes a snapshot at every pump batch: expiry takes them down to what the
    batches of tierdb.mirror_batches (hybrid reads choose among them) and the pins keep, while a
    daemon keeps pumping and hybrid reads compare with heap reads."""
    from test_hybrid_reads import both_ways, QUERIES
    from test_mirrored import make_table, register
    from test_tiering import RunningDaemon

    def mirror_cut():
        (s, props, ref), = db.query("SELECT c.lake_snapshot_id, c.lake_props::text, t.lake_table_ref"
                                    " FROM tierdb.cutline c JOIN tierdb.tables t USING (table_id)")
        return {"S": int(s), "props": json.loads(props), "ref": ref}

    make_table(db, rows=2000)
    register(tierdb)
    run_once(tierdb, "0")
    for i in range(15):
        db.psql(f"UPDATE m SET note = 'round {i}' WHERE id % 15 = {i}")
        run_once(tierdb, "0")
    cut = mirror_cut()
    before = snapshot_ids(cut)
    assert len(before) >= 15
    # As if these batches were published an hour ago: the pump's next batch prunes them from the history
    # hybrid reads choose from (cli/mirror.c keeps 120 s), and expiry may take their snapshots.
    db.psql("UPDATE tierdb.mirror_batches SET published_at = published_at - interval '1 hour'")
    proc = tierdb(["policy", "--table", "public.m", "--set", "snapshot_max_age=0s", "--set", "orphan_sweep=on",
                   "--set", "orphan_min_age=0s"])
    assert proc.returncode == 0, proc.stderr
    daemon = RunningDaemon(db, tierdb_bin, lake, tmp_path / "daemon.log", TIERDB_CYCLE_INTERVAL_SECONDS="1",
                           TIERDB_MIRROR_FLUSH_MILLIS="100")
    try:
        with psycopg.connect(db.dsn, autocommit=True) as conn:
            for round_ in range(3):
                conn.execute(f"UPDATE m SET amount = amount + 1 WHERE id % 5 = {round_}")
                proc = tierdb(["maintain", "--table", "public.m"], timeout=120)
                assert proc.returncode == 0, proc.stdout + proc.stderr + daemon.log()
                for sql in QUERIES[:3]:
                    hybrid, heap, _ = both_ways(conn, sql)
                    assert hybrid == heap, (round_, sql)
        proc = tierdb(["verify", "--table", "public.m"])  # it waits for the running daemon's frontier
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        assert daemon.stop() == 0, daemon.log()
    cut = mirror_cut()
    kept = snapshot_ids(cut)
    batches = {int(s) for (s,) in db.query("SELECT lake_snapshot_id FROM tierdb.mirror_batches")}
    assert batches <= kept, (batches, kept)
    assert len(kept) < len(before) // 2, (len(kept), len(before))
    assert "expiry: operation" in daemon.log()
    every_kept_snapshot_reads(tierdb, cut)
    if not lake_files.ON_S3:
        on_disk = {str(p) for p in lake_files.list_files(cut["ref"], "")}
        hint = str(lake_files.local(cut["ref"]) / "metadata" / "version-hint.text")
        assert on_disk - referenced_by_metadata(cut) - {hint} == set()


def test_a_direct_table_expires_its_write_snapshots(db, tierdb_bin, lake):
    """Every direct write is a lake snapshot: expiry takes them down to the current one and deletes
    their files; reads stay exact, and direct writes go on. The Postgres server writes a direct
    table's lake, so the daemon runs as the server's OS user (test_direct.py's as_server_user)."""
    import shutil
    import subprocess

    from conftest import clean_env

    if not lake_files.ON_S3:
        shutil.chown(lake, "postgres", "postgres")

    def as_server_user(args):
        env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake)}
        return subprocess.run(["runuser", "-u", "postgres", "--", str(tierdb_bin), *map(str, args)],
                              capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)

    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = as_server_user(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts",
                           "--mode", "direct"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert as_server_user(["run", "--once"]).returncode == 0
    for i in range(8):  # each a lake commit published with its transaction
        for t in ("events", "plain"):
            db.psql(f"UPDATE {t} SET v = 'direct {i}' WHERE id % 50 = {i} AND ts < '2024-01-05';"
                    f" DELETE FROM {t} WHERE id = {100 + i}")
    (s,), = db.query("SELECT lake_snapshot_id FROM tierdb.cutline")
    (props,), = db.query("SELECT lake_props::text FROM tierdb.cutline")
    (ref,), = db.query("SELECT lake_table_ref FROM tierdb.tables")
    cut = {"S": int(s), "props": json.loads(props), "ref": ref}
    before = snapshot_ids(cut)
    assert len(before) >= 9
    proc = as_server_user(["policy", "--table", "public.events", "--set", "snapshot_max_age=0s"])
    assert proc.returncode == 0, proc.stderr
    proc = as_server_user(["maintain", "--table", "public.events", "--no-wait"])
    assert proc.returncode == 0, proc.stderr
    proc = as_server_user(["run", "--once"])
    assert proc.returncode == 0 and "expiry: operation" in proc.stderr, proc.stderr
    (props,), = db.query("SELECT lake_props::text FROM tierdb.cutline")
    cut = {"S": int(s), "props": json.loads(props), "ref": ref}
    assert snapshot_ids(cut) == {int(s)}
    assert_reads_exact(db, "a direct table after expiry")
    every_kept_snapshot_reads(as_server_user, cut)
    # a direct write after expiry builds on the maintained lake
    for t in ("events", "plain"):
        db.psql(f"UPDATE {t} SET v = 'after' WHERE id = 7")
    assert_reads_exact(db, "a direct write after expiry")


def test_an_unpartitioned_lake_under_retention_keeps_its_file_ranges(db, tierdb):
    """With --lake-partition none and a lake retention, compaction never merges files (retention
    removes whole files below R, and a merged file would straddle R): files with deletes are
    rewritten one by one, and retention still drops the old ones afterwards."""
    make_events(db)
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts",
                   "--lake-partition", "none", "--lake-retention", "30d"])
    assert proc.returncode == 0, proc.stderr
    policy(tierdb, *BUILDUP_POLICY)
    run_once(tierdb, "6d")  # one file for 01-01 .. 01-04
    run_once(tierdb, LAG)   # one for 01-05 .. 01-07
    for day in ("2024-01-02", "2024-01-06"):
        for t in ("events", "plain"):
            db.psql(f"UPDATE {t} SET v = 'fixed' WHERE ts >= '{day}' AND ts < date '{day}' + 1 AND id % 3 = 0")
        run_once(tierdb, LAG)
    s, _ = stats(db)
    files_before = s["data_files"]
    policy(tierdb, "--reset", "--set", "snapshot_max_age=0s")
    proc = tierdb(["maintain", "--table", "public.events", "--no-wait"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    s, _ = stats(db)
    assert s["equality_delete_files"] == 0 and s["data_files"] == files_before, s
    assert_reads_exact(db, "an unpartitioned lake after maintenance")
    # Retention at max - 5d (on 01-05) still drops the file of 01-01 .. 01-04 whole.
    proc = tierdb(["policy", "--table", "public.events", "--lake-retention", "5d"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    (line,) = db.query("SELECT retention_line FROM tierdb.cutline")[0]
    (first,) = db.query("SET TimeZone = 'UTC';\nSELECT (extract(epoch FROM min(ts)) * 1000000)::bigint FROM plain"
                        " WHERE ts >= '2024-01-05'")[0]
    assert int(line) <= int(first) and int(line) > 0
    (count,) = db.query("SELECT count(*) FROM events WHERE ts < '2024-01-05'")[0]
    assert count == "0"
