"""Random kill -9 during a long tiering run with live writers (issue 4).

One table of SOAK_ROWS rows over twelve daily partitions is tiered by a
continuous daemon (`tierdb run`, one-second cycles) while a writer thread
keeps inserting hot rows at an advancing frontier (so more partitions fall
behind the lag as the test goes) and writes delta corrections of cold rows:
upserts in place, upserts that move the tier key, tombstones and new cold
rows. The daemon is killed with SIGKILL at seeded random moments, some
aimed inside a copy (after its "sealed" log line), and restarted each time.
Then the writer stops, `tierdb run --once` runs until nothing is left to
do, and

    heap >= T  ∪  (lake@S read by `tierdb lake cat` ⊕ delta)

must be exactly the rows written (the truth table every write also changed,
seam.py), with every hot insert the writer committed and nothing twice;
every op_log row must be done or aborted. Parquet files under data/ that no
snapshot references (what a kill inside a copy could leave) are reported,
not asserted.

The seed is printed in every assertion message; TIERDB_SOAK_SEED=N repeats
a run's choices (the kill instants still depend on timing).
"""

from __future__ import annotations

import io
import os
import random
import re
import threading
import time

import fastavro
import pytest

import lake_files
from seam import SESSION, Seam, assert_same_rows, cat_rows, lake_cat
from test_recovery import files_on_disk, referenced_files, wait_daemon_gone
from test_tiering import RunningDaemon

# These tests look at the heap and the lake separately.
pytestmark = pytest.mark.heap_and_lake_apart

SOAK_ROWS = 1_500_000
DAYS = 12                  # days of initial rows, from 2024-01-01
PARTITIONS = 24            # daily partitions created up front: the frontier never outruns them
LAG = "9d"                 # the first cycle moves 2024-01-01 and 02; each day the frontier advances, one more
KILLS = 10
HOT_ID = 100_000_000       # ids of hot inserts start above this
NEW_COLD_ID = 200_000_000  # ids of rows added below T through the delta start above this
HOT_BATCH = 40             # hot rows per writer transaction
CORRECTIONS = 3            # corrections per writer transaction


def make_soak(db):
    db.psql(
        SESSION
        + "CREATE TABLE soak (id bigint NOT NULL, ts timestamptz NOT NULL, site int, v text, amount numeric(12,2))"
        " PARTITION BY RANGE (ts);\n"
        f"DO $$ BEGIN FOR d IN 0..{PARTITIONS - 1} LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF soak FOR VALUES FROM (%L) TO (%L)',"
        "    'soak_' || to_char(date '2024-01-01' + d, 'YYYYMMDD'),"
        "    (date '2024-01-01' + d)::timestamptz, (date '2024-01-01' + d + 1)::timestamptz);"
        " END LOOP; END $$;\n"
        "CREATE TABLE truth (LIKE soak);\n"
        f"INSERT INTO truth SELECT g, timestamptz '2024-01-01 00:00:00+00'"
        f"  + (g - 1) * (interval '{DAYS} days' / {SOAK_ROWS}) + (g % 997) * interval '1 microsecond',"
        "  g % 100, CASE WHEN g % 17 = 0 THEN NULL ELSE 'v' || g END,"
        "  CASE WHEN g % 13 = 0 THEN NULL ELSE ((g * 7919) % 2000000 - 1000000) / 100.0 END"
        f" FROM generate_series(1::bigint, {SOAK_ROWS}) g;\n"
        "ALTER TABLE truth ADD PRIMARY KEY (id);\n"
        "INSERT INTO soak SELECT * FROM truth;\n"
        "ANALYZE soak, truth;\n"
    )


class Writer(threading.Thread):
    """Inserts hot rows at the frontier (a day the main thread advances) and
    corrects random cold rows, each batch in one transaction that also
    changes truth. A failed transaction stops it with the error kept."""

    def __init__(self, db, seam: Seam, seed: int):
        super().__init__(daemon=True)
        self.db = db
        self.seam = seam
        self.rng = random.Random(f"writer {seed}")
        self.frontier_day = DAYS
        self.stop_event = threading.Event()
        self.hot_rows = 0
        self.corrections = 0
        self.batches = 0
        self.error = None
        self._next_hot = HOT_ID
        self._next_cold = NEW_COLD_ID

    def run(self):
        while not self.stop_event.is_set():
            sql, hot = self.batch()
            proc = self.db.run_psql(SESSION + "BEGIN;\n" + sql + "COMMIT;\n")
            if proc.returncode != 0:
                self.error = f"writer transaction failed:\n{proc.stderr}"
                return
            self.hot_rows += hot
            self.corrections += proc.stdout.count("1")
            self.batches += 1
            time.sleep(0.05)

    def batch(self) -> tuple:
        first = self._next_hot + 1
        self._next_hot += HOT_BATCH
        # Anywhere in the frontier day: the partition of max(tier_key), never eligible.
        offsets = ",".join(str(self.rng.randrange(86400 * 1_000_000)) for _ in range(HOT_BATCH))
        sql = (
            f"WITH r AS (SELECT {first - 1} + n AS id, timestamptz '2024-01-01 00:00:00+00'"
            f" + interval '{self.frontier_day} days' + us * interval '1 microsecond' AS ts, (n % 100)::int AS site,"
            " 'hot' || n AS v, (n / 4.0)::numeric(12,2) AS amount"
            f" FROM unnest(ARRAY[{offsets}]::bigint[]) WITH ORDINALITY AS o(us, n)),"
            " heap AS (INSERT INTO soak SELECT * FROM r)"
            " INSERT INTO truth SELECT * FROM r;\n"
        )
        for _ in range(CORRECTIONS):
            sql += self.correction() + ";\n"
        return sql, HOT_BATCH

    def correction(self) -> str:
        """One correction of a random initial row (a no-op unless it is below T)."""
        key = {"id": self.rng.randint(1, SOAK_ROWS)}
        kind = self.rng.random()
        if kind < 0.4:
            return self.seam.upsert_sql(key, f"v = 'fix{self.rng.randrange(10**6)}', amount = old.amount + 1")
        if kind < 0.65:
            # A move within the cold range (to the day before, never before the first partition).
            return self.seam.upsert_sql(key, "ts = greatest(old.ts - interval '1 day', timestamptz '2024-01-01')")
        if kind < 0.9:
            return self.seam.tombstone_sql(key)
        self._next_cold += 1
        return self.seam.insert_cold_sql(
            f"SELECT {self._next_cold}::bigint, timestamptz '2024-01-01 00:00:00+00'"
            f" + {self.rng.randrange(3 * 86400 * 1_000_000)} * interval '1 microsecond', 7, 'new cold', 1.25"
        )

    def finish(self):
        self.stop_event.set()
        self.join(timeout=120)
        assert not self.is_alive(), "the writer did not stop"


def wait_for_line(daemon: RunningDaemon, writer: "Writer", pattern: str, after: int, what: str, timeout=90) -> None:
    """Waits until the daemon's log matches `pattern` more than `after` times."""
    deadline = time.monotonic() + timeout
    while len(re.findall(pattern, daemon.log())) <= after:
        assert writer.error is None, writer.error
        assert daemon.proc.poll() is None, f"the daemon exited while waiting for {what}:\n{daemon.log()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{daemon.log()}"
        time.sleep(0.01)


TIERING_STEP_DONE = r"tiering: (operation \S+ moved|no whole partition)"
SEALED = r"tiering: operation \S+ sealed"


def kill_round(db, daemon: RunningDaemon, writer: "Writer", rng: random.Random, progress: bool) -> str:
    """One life of the daemon: with `progress` it first finishes a tiering
    step (so the run moves on), then the frontier advances a day (one more
    partition falls behind the lag) and the daemon is killed: either a
    moment after it seals the next run's partitions (inside the copy), or
    at a random instant. Returns where the kill left the journal."""
    if progress:
        wait_for_line(daemon, writer, TIERING_STEP_DONE, 0, "a tiering step to finish")
        time.sleep(rng.uniform(0.0, 1.5))
    sealed = len(re.findall(SEALED, daemon.log()))
    writer.frontier_day += 1
    if rng.random() < 0.5:
        # within a few hundredths of a second of the seal the run is still copying; a day's partition copies
        # fast, so a longer wait often found it done (a seed with few such rounds then landed no kill inside)
        wait_for_line(daemon, writer, SEALED, sealed, "the next tiering run")
        time.sleep(rng.uniform(0.0, 0.03))
    else:
        time.sleep(rng.uniform(0.0, 2.5))
    daemon.proc.kill()
    daemon.proc.wait()
    open_ops = db.query("SELECT op_kind, phase, details ? 'files' FROM tierdb.op_log"
                        " WHERE phase NOT IN ('done', 'aborted')")
    if not open_ops:
        return "between operations"
    in_copy = ("tiering", "writing", "f")  # sealed, files not yet journaled
    return ", ".join("tiering/writing, inside the copy" if op == in_copy else f"{op[0]}/{op[1]}" for op in open_ops)


def settled(db, seam: Seam) -> bool:
    """Nothing left to do: every operation finished and no delta row behind T."""
    ((open_ops, behind),) = db.query(
        "SELECT (SELECT count(*) FROM tierdb.op_log WHERE phase NOT IN ('done', 'aborted')),"
        f" (SELECT count(*) FROM tierdb.delta d JOIN tierdb.cutline c USING (table_id)"
        f"  WHERE d.table_id = {seam.table_id} AND d.tier_key < c.tier_key_hi)"
    )
    return open_ops == "0" and behind == "0"


def expected_t(db) -> int:
    """The cut-line once every whole partition behind max(ts) - LAG moved."""
    ((t,),) = db.query(
        SESSION + "SELECT (extract(epoch FROM date_trunc('day', max(ts) - interval '"
        + LAG.replace("d", " days") + "') ) * 1000000)::bigint FROM truth"
    )
    return int(t)


def unreferenced_metadata_files(ref: str, metadata: dict) -> list:
    """Avro files under metadata/ that are neither a snapshot's manifest list nor a manifest one lists."""
    lists = {lake_files.normalize(snap["manifest-list"]) for snap in metadata.get("snapshots", [])}
    manifests = set()
    for path in lists:
        listed = fastavro.reader(io.BytesIO(lake_files.read_bytes(path)))
        manifests.update(lake_files.normalize(m["manifest_path"]) for m in listed)
    return sorted(lake_files.list_files(f"{ref}/metadata", ".avro") - lists - manifests)


def test_random_kill_9_during_a_long_run_with_writers(db, tierdb, tierdb_bin, lake, tmp_path):
    seed = int(os.environ.get("TIERDB_SOAK_SEED", random.SystemRandom().randrange(10**9)))
    rng = random.Random(seed)
    tag = f"(TIERDB_SOAK_SEED={seed}; daemon logs in {tmp_path})"
    print(f"\nsoak seed {seed}")
    make_soak(db)
    proc = tierdb(["register", "--table", "public.soak", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    seam = Seam(db, "soak")

    writer = Writer(db, seam, seed)
    writer.start()
    kills = []
    try:
        for round_ in range(KILLS):
            daemon = RunningDaemon(db, tierdb_bin, lake, tmp_path / f"daemon-{round_}.log",
                                   TIERDB_TIERING_LAG=LAG, TIERDB_CYCLE_INTERVAL_SECONDS="1")
            try:
                # The first life always makes progress, so the writer soon has cold rows to correct.
                kills.append(kill_round(db, daemon, writer, rng, progress=round_ == 0 or rng.random() < 0.6))
            except AssertionError as e:
                raise AssertionError(f"{tag} round {round_}: {e}") from e
            finally:
                if daemon.proc.poll() is None:
                    daemon.proc.kill()
                    daemon.proc.wait()
            assert writer.error is None, f"{tag} {writer.error}"
            wait_daemon_gone(db)
    finally:
        writer.finish()
    assert writer.error is None, f"{tag} {writer.error}"
    assert writer.hot_rows > 0 and writer.corrections > 0, f"{tag} the writer did nothing"
    assert any(k != "between operations" for k in kills), f"{tag} no kill landed inside an operation: {kills}"

    # Run cycles until nothing is left to do.
    for cycle in range(10):
        proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG})
        (tmp_path / f"once-{cycle}.log").write_text(proc.stderr)
        assert proc.returncode == 0, f"{tag}\n{proc.stderr}"
        if settled(db, seam) and "tiering: operation" not in proc.stderr and "fold: operation" not in proc.stderr:
            break
    else:
        raise AssertionError(f"{tag} still not settled after 10 cycles:\n{proc.stderr}")

    phases = db.query("SELECT op_kind, phase, count(*) FROM tierdb.op_log GROUP BY 1, 2 ORDER BY 1, 2")
    assert {phase for _, phase, _ in phases} <= {"done", "aborted"}, f"{tag} op_log: {phases}"
    cut = seam.pin()
    try:
        assert cut.T == expected_t(db), f"{tag} T {cut.T}, expected {expected_t(db)}"
        # The moved partitions left the heap, and no seal is left behind.
        assert db.query(f"SELECT count(*) FROM soak WHERE {seam.canon('ts')} < {cut.T}") == [("0",)], tag
        assert db.query("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'tierdb_sealed%'") == [("0",)], tag
        fields = seam.fields(cut.metadata_location)
        cold = cat_rows(fields, lake_cat(seam.ref, cut.S), "lake cat")
        delta = seam.delta(fields)
        rows = seam.merge(fields, cut.T, cold, delta, seam.hot_rows(fields, cut.T), f"{tag} soak")
        assert_same_rows(seam.truth_rows(fields), rows,
                         f"{tag} heap >= T ∪ lake@S ⊕ delta against the rows written")
    finally:
        seam.unpin(cut)
    # Every hot insert the writer committed is there, once (truth holds it, and the seam equals truth).
    ((hot,),) = db.query(f"SELECT count(*) FROM truth WHERE id > {HOT_ID} AND id <= {NEW_COLD_ID}")
    assert int(hot) == writer.hot_rows, f"{tag} {hot} hot rows in truth, the writer committed {writer.hot_rows}"

    metadata = lake_files.read_json(cut.metadata_location)
    orphans = sorted(files_on_disk(seam.ref) - referenced_files(metadata))
    stray_metadata = unreferenced_metadata_files(seam.ref, metadata)
    print(f"soak seed {seed}: {len(cold)} lake rows at S, {len(delta)} delta rows left, T {cut.T};"
          f" writer: {writer.batches} transactions, {writer.hot_rows} hot rows, {writer.corrections} corrections;"
          f" op_log {phases}")
    print("kills:", kills)
    print(f"orphans: {len(orphans)} Parquet files under data/ that no snapshot references"
          f" ({sum(os.path.getsize(f) for f in orphans) / 1e6:.1f} MB)")
    for f in orphans:
        print("  orphan", f)
    print(f"metadata/: {len(stray_metadata)} Avro files no snapshot reaches")
    for f in stray_metadata:
        print("  unreferenced", f)
