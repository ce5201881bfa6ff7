"""The daemon's Prometheus endpoint (`tierdb run` with TIERDB_METRICS_PORT,
cli/metrics.c, cli/metrics_http.c, docs/metrics.md): scraped over HTTP and
parsed by prometheus_client's own text parser, every number checked against
what the catalog, the heap, a plain copy of the rows and the lake's metadata
(read here with pyiceberg) say, while the daemon tiers, waits for a pin with
a delta backlog, and folds."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pg_cluster import clean_env, free_port
from test_tiering import make_events

TABLE = "public.events"
LAG = "2d"
# The lake keeps every file and snapshot, so the counts below follow from what tiering and the fold wrote.
POLICY = ["--set", "compaction=off", "--set", "expiry=off", "--set", "manifest_rewrite=off"]


class Daemon:
    """`tierdb run` with /metrics on a free port of 127.0.0.1."""

    def __init__(self, tierdb_bin, db, lake, **env):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), "TIERDB_TIERING_LAG": LAG,
                    "TIERDB_CYCLE_INTERVAL_SECONDS": "1", "TIERDB_METRICS_PORT": str(self.port), **env}
        self.proc = subprocess.Popen([str(tierdb_bin), "run"], env=full_env, text=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.request("/metrics")
                return
            except (urllib.error.URLError, ConnectionError):
                assert self.proc.poll() is None, self.stop()
                assert time.monotonic() < deadline, "the /metrics endpoint did not come up"
                time.sleep(0.1)

    def request(self, path, method="GET"):
        """(status, headers, body) of one request."""
        req = urllib.request.Request(self.url + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.headers, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()

    def scrape(self):
        """{sample name: [(labels, value)]}, checking every family's type and name conventions on the way."""
        status, headers, body = self.request("/metrics")
        assert status == 200, body
        assert headers["Content-Type"].startswith("text/plain; version=0.0.4"), headers["Content-Type"]
        samples = {}
        for family in text_string_to_metric_families(body):
            assert family.name.startswith("tierdb_"), family.name
            assert family.documentation, f"{family.name} has no HELP"
            assert family.type in ("counter", "gauge", "histogram"), (family.name, family.type)
            for s in family.samples:
                if family.type == "counter":
                    assert s.name.endswith("_total"), s.name
                samples.setdefault(s.name, []).append((s.labels, s.value))
        return samples

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        _, errors = self.proc.communicate(timeout=60)
        return errors


def value(samples, name, **labels):
    """The one sample of `name` with exactly these labels (KeyError-like failure when absent)."""
    found = [v for l, v in samples.get(name, []) if l == labels]
    assert len(found) == 1, f"{name}{labels}: {found} in {samples.get(name)}"
    return found[0]


def cycles(samples):
    return sum(v for _, v in samples["tierdb_daemon_cycles_total"])


def settled(daemon, more_cycles=2, timeout=120):
    """A scrape taken once `more_cycles` further cycles ended and the catalog snapshot was read after the last."""
    start = cycles(daemon.scrape())
    deadline = time.monotonic() + timeout
    while True:
        s = daemon.scrape()
        if (cycles(s) >= start + more_cycles and "tierdb_metrics_snapshot_timestamp_seconds" in s
                and "tierdb_daemon_last_cycle_timestamp_seconds" in s
                and value(s, "tierdb_metrics_snapshot_timestamp_seconds")
                >= value(s, "tierdb_daemon_last_cycle_timestamp_seconds")):
            return s
        assert time.monotonic() < deadline, "the daemon's cycles did not go on"
        time.sleep(0.2)


def first_snapshot(daemon, timeout=60):
    """A scrape once the daemon has read the catalog for the first time."""
    deadline = time.monotonic() + timeout
    while "tierdb_metrics_snapshot_timestamp_seconds" not in (s := daemon.scrape()):
        assert time.monotonic() < deadline, "the daemon did not read the catalog"
        time.sleep(0.2)
    return s


def wait_for(db, sql, what, timeout=120):
    deadline = time.monotonic() + timeout
    while db.query(sql) != [("t",)]:
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def lake_files_at_s(db):
    """[(content, size, records)] of the live files of the lake's current snapshot, and its snapshot count."""
    from pyiceberg.table import StaticTable

    (location,) = db.query("SELECT lake_props->>'metadata_location' FROM tierdb.cutline")[0]
    table = StaticTable.from_metadata(location)
    snap = table.metadata.current_snapshot()
    files = []
    for m in snap.manifests(table.io):
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True):
            files.append((int(e.data_file.content), e.data_file.file_size_in_bytes, e.data_file.record_count))
    return files, len(table.metadata.snapshots)


def scalar(db, sql):
    return db.query(sql)[0][0]


@pytest.fixture
def events(db, tierdb):
    make_events(db)
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", TABLE, "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    proc = tierdb(["policy", "--table", TABLE, *POLICY])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return db


def test_metrics_follow_tiering_a_pinned_backlog_and_the_fold(events, tierdb, tierdb_bin, lake):
    db = events
    table_id = scalar(db, "SELECT table_id FROM tierdb.tables")
    started = time.time()
    daemon = Daemon(tierdb_bin, db, lake)
    try:
        # 1. Tiering: the partitions behind max(ts) - 2d move, and are dropped.
        wait_for(db, "SELECT count(*) > 0 AND bool_and(state IN ('hot', 'dropped'))"
                     " AND count(*) FILTER (WHERE state = 'dropped') > 0 FROM tierdb.partitions", "tiering")
        s = settled(daemon)
        t_usec = int(scalar(db, "SELECT tier_key_hi FROM tierdb.cutline"))
        labels = {"table": TABLE}
        assert value(s, "tierdb_daemon_leader") == 1
        assert value(s, "tierdb_daemon_connected") == 1
        assert value(s, "tierdb_table_info", table=TABLE, mode="tiered", tier_key_type="timestamptz") == 1
        assert value(s, "tierdb_cutline_timestamp_seconds", **labels) == t_usec / 1e6
        newest = float(scalar(db, "SELECT extract(epoch FROM max(ts)) FROM plain"))
        assert value(s, "tierdb_cutline_lag_seconds", **labels) == pytest.approx(newest - t_usec / 1e6, abs=1e-6)
        assert "tierdb_cutline_key" not in s or not s["tierdb_cutline_key"]
        tiered_rows = int(scalar(db, f"SELECT count(*) FROM plain WHERE ts < to_timestamp({t_usec} / 1e6)"))
        assert tiered_rows > 0
        assert value(s, "tierdb_moved_rows_total", operation="tiering", **labels) == tiered_rows
        files, snapshots = lake_files_at_s(db)
        tiered_bytes = sum(size for content, size, _ in files if content == 0)
        assert value(s, "tierdb_moved_bytes_total", operation="tiering", **labels) == tiered_bytes
        runs = int(scalar(db, "SELECT count(*) FROM tierdb.op_log WHERE op_kind = 'tiering'"
                              " AND phase IN ('published', 'done')"))
        assert value(s, "tierdb_operations_total", operation="tiering", **labels) == runs
        assert value(s, "tierdb_operations_total", operation="fold", **labels) == 0
        assert started <= value(s, "tierdb_last_operation_timestamp_seconds", operation="tiering", **labels) <= time.time()
        assert value(s, "tierdb_last_operation_duration_seconds", operation="tiering", **labels) > 0
        for state in ("hot", "sealing", "tiering", "tiered", "dropped"):
            assert value(s, "tierdb_partitions", state=state, **labels) == int(scalar(
                db, f"SELECT count(*) FROM tierdb.partitions WHERE state = '{state}'")), state
        assert value(s, "tierdb_delta_backlog_rows", **labels) == 0
        assert value(s, "tierdb_read_pins", **labels) == 0
        assert value(s, "tierdb_lake_data_files", **labels) == len(files)
        assert value(s, "tierdb_lake_snapshots", **labels) == snapshots
        assert value(s, "tierdb_lake_records", **labels) == tiered_rows
        assert value(s, "tierdb_daemon_steps_total", step="tiering", outcome="ok", **labels) >= 1
        assert value(s, "tierdb_daemon_steps_total", step="tiering", outcome="failed", **labels) == 0
        for state in ("staged", "committed", "failed"):
            assert value(s, "tierdb_load_labels", state=state, **labels) == 0
        # the cycle histogram: cumulative buckets, +Inf equal to the count, the count equal to the cycles
        buckets = sorted((float(l["le"]), v) for l, v in s["tierdb_daemon_cycle_duration_seconds_bucket"])
        assert [v for _, v in buckets] == sorted(v for _, v in buckets)
        assert buckets[-1] == (float("inf"), value(s, "tierdb_daemon_cycle_duration_seconds_count"))
        assert value(s, "tierdb_daemon_cycle_duration_seconds_count") == cycles(s)

        # 2. A pin holds the fold back: corrections wait in the delta, and the backlog says how many.
        (s_id,) = db.query("SELECT lake_snapshot_id FROM tierdb.cutline")[0]
        db.psql("INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi, expires_at)"
                f" VALUES ({table_id}, {s_id}, {t_usec}, now() + interval '1 hour')")
        # a quarter of the tiered files count as small from the next collection on
        small_threshold = sorted(size for content, size, _ in files if content == 0)[len(files) // 4]
        proc = tierdb(["policy", "--table", TABLE, "--set", f"small_file_bytes={small_threshold}B"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        cold = f"ts < to_timestamp({t_usec} / 1e6)"
        for t in ("events", "plain"):
            db.psql(f"UPDATE {t} SET v = 'corrected', amount = 1 WHERE {cold} AND id % 97 = 0;"
                    f" DELETE FROM {t} WHERE {cold} AND id % 101 = 0")
        backlog = int(scalar(db, "SELECT count(*) FROM tierdb.delta"))
        assert backlog > 0
        before = cycles(s)
        s = settled(daemon)
        assert cycles(s) > before
        assert value(s, "tierdb_delta_backlog_rows", **labels) == backlog
        assert value(s, "tierdb_read_pins", **labels) == 1
        assert value(s, "tierdb_operations_total", operation="fold", **labels) == 0

        # 3. The pin goes: the fold takes the whole backlog into the lake as equality deletes and upserts.
        db.psql("DELETE FROM tierdb.read_pins")
        wait_for(db, "SELECT NOT EXISTS (SELECT FROM tierdb.delta)", "the fold")
        s = settled(daemon)
        assert value(s, "tierdb_delta_backlog_rows", **labels) == 0
        assert value(s, "tierdb_read_pins", **labels) == 0
        assert value(s, "tierdb_moved_rows_total", operation="fold", **labels) == backlog
        folds = int(scalar(db, "SELECT count(*) FROM tierdb.op_log WHERE op_kind = 'compaction' AND phase = 'done'"))
        assert folds >= 1
        assert value(s, "tierdb_operations_total", operation="fold", **labels) == folds
        files, snapshots = lake_files_at_s(db)
        assert value(s, "tierdb_moved_bytes_total", operation="fold", **labels) == \
            sum(size for _, size, _ in files) - tiered_bytes
        data = [f for f in files if f[0] == 0]
        assert value(s, "tierdb_lake_data_files", **labels) == len(data)
        assert value(s, "tierdb_lake_small_data_files", **labels) == \
            sum(1 for _, size, _ in data if size < small_threshold) > 0
        assert value(s, "tierdb_lake_delete_files", kind="position", **labels) == sum(1 for f in files if f[0] == 1)
        assert value(s, "tierdb_lake_delete_files", kind="equality", **labels) == sum(1 for f in files if f[0] == 2)
        assert value(s, "tierdb_lake_delete_files", kind="equality", **labels) > 0
        assert value(s, "tierdb_lake_delete_records", **labels) == sum(r for c, _, r in files if c != 0)
        assert value(s, "tierdb_lake_data_bytes", **labels) == sum(size for _, size, _ in data)
        assert value(s, "tierdb_lake_snapshots", **labels) == snapshots
        assert value(s, "tierdb_daemon_steps_total", step="fold", outcome="failed", **labels) == 0
        # the rows the metrics describe are the plain copy's
        select = "SELECT id, ts, v, amount FROM {} ORDER BY id"
        assert db.query(select.format("events")) == \
            db.query(select.format("plain"))

        # 4. A second daemon waits (another leads) and still serves the catalog's view.
        follower = Daemon(tierdb_bin, db, lake)
        try:
            f = first_snapshot(follower)
            assert value(f, "tierdb_daemon_leader") == 0
            assert cycles(f) == 0
            assert value(f, "tierdb_delta_backlog_rows", **labels) == 0
            assert value(f, "tierdb_lake_data_files", **labels) == len(data)
        finally:
            assert "another tierdb daemon leads" in follower.stop()
    finally:
        errors = daemon.stop()
    assert "stopping on request" in errors, errors


def test_paths_methods_and_label_escaping(db, tierdb, tierdb_bin, lake):
    """Only GET and HEAD /metrics; a table whose name needs escaping parses back to its name."""
    db.psql('CREATE TABLE "odd""na\\me" (id bigint NOT NULL, k bigint NOT NULL) PARTITION BY RANGE (k);'
            ' CREATE TABLE odd_p1 PARTITION OF "odd""na\\me" FOR VALUES FROM (0) TO (100);'
            ' INSERT INTO "odd""na\\me" SELECT g, g FROM generate_series(0, 9) g')
    proc = tierdb(["register", "--table", 'public."odd""na\\me"', "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    daemon = Daemon(tierdb_bin, db, lake, TIERDB_TIERING_LAG="1000")
    try:
        s = settled(daemon, more_cycles=1)
        name = 'public.odd"na\\me'
        assert value(s, "tierdb_table_info", table=name, mode="tiered", tier_key_type="bigint") == 1
        assert value(s, "tierdb_cutline_key", table=name) == 0
        assert value(s, "tierdb_cutline_lag_keys", table=name) == 9
        status, _, body = daemon.request("/")
        assert status == 404, body
        status, _, body = daemon.request("/metrics/x")
        assert status == 404, body
        for method in ("POST", "PUT", "DELETE"):
            status, headers, body = daemon.request("/metrics", method)
            assert status == 405, (method, body)
            assert headers["Allow"] == "GET, HEAD"
        status, headers, body = daemon.request("/metrics", "HEAD")
        assert status == 200 and body == ""
        # unregistered, the table leaves every family, the process's counters included
        assert any(l["table"] == name for l, _ in s["tierdb_daemon_steps_total"])
        proc = tierdb(["unregister", "--table", 'public."odd""na\\me"'])
        assert proc.returncode == 0, proc.stderr
        s = settled(daemon, more_cycles=1)
        assert not any(l.get("table") == name for samples in s.values() for l, _ in samples), s
    finally:
        daemon.stop()


@pytest.mark.parametrize("env, named", [
    ({"TIERDB_METRICS_PORT": "nine"}, "TIERDB_METRICS_PORT='nine'"),
    ({"TIERDB_METRICS_PORT": "70000"}, "TIERDB_METRICS_PORT='70000'"),
    ({"TIERDB_METRICS_PORT": "0"}, "TIERDB_METRICS_PORT='0'"),
    ({"TIERDB_METRICS_PORT": "PORT", "TIERDB_METRICS_ADDRESS": "256.0.0.1"}, "TIERDB_METRICS_ADDRESS='256.0.0.1'"),
    ({"TIERDB_METRICS_PORT": "PORT", "TIERDB_METRICS_ADDRESS": "192.0.2.1"}, "TIERDB_METRICS_ADDRESS"),
    ({"TIERDB_METRICS_PORT": "BUSY"}, "TIERDB_METRICS_PORT"),
])
def test_a_bad_port_or_address_is_refused_at_start(db, tierdb, env, named):
    """The daemon does not start (no cycle runs) and says which variable to fix."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        env = {k: v.replace("BUSY", str(busy.getsockname()[1])).replace("PORT", str(free_port()))
               for k, v in env.items()}
        proc = tierdb(["run", "--once"], env=env)
    assert proc.returncode != 0
    assert named in proc.stderr, proc.stderr
    assert "leading" not in proc.stderr, proc.stderr



def test_a_mirror_s_frontier_lag_and_slot_wal(db, tierdb, tierdb_bin, lake):
    """A mirrored table's frontier lag and the WAL its slot keeps, served by a daemon that waits while a
    session holds the leader lock (so nothing moves F or the slot): each lies between what the server says
    just before that daemon starts and just after the scrape."""
    from test_daemon_coordination import Session
    from test_mirrored import make_table, register

    make_table(db)
    register(tierdb)
    leader = Daemon(tierdb_bin, db, lake)
    try:
        wait_for(db, "SELECT NOT EXISTS (SELECT FROM tierdb.copy_progress)"
                     " AND (SELECT replicated_lsn IS NOT NULL FROM tierdb.cutline)", "the initial copy")
        s = settled(leader)
        assert value(s, "tierdb_mirror_copying", table="public.m") == 0
        assert value(s, "tierdb_table_info", table="public.m", mode="mirrored", tier_key_type="timestamptz") == 1
        assert "tierdb_cutline_lag_seconds" not in s  # a mirror without a heap window has no T to trail
    finally:
        leader.stop()
    db.psql("INSERT INTO m (id, ts, note) VALUES (990001, '2024-01-03 00:00+00', 'after the daemon')")
    holder = Session(db)
    holder.send("SELECT tierdb.try_become_leader();")
    frontier = "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'::pg_lsn + (SELECT replicated_lsn FROM tierdb.cutline))"
    retained = ("pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (SELECT restart_lsn FROM pg_replication_slots"
                " WHERE slot_name = (SELECT slot_name FROM tierdb.tables)))")
    measure = f"SELECT {frontier}::bigint, {retained}::bigint"
    try:
        time.sleep(0.5)  # the session has taken the lock (a daemon below says so if not)
        before = [int(x) for x in db.query(measure)[0]]
        follower = Daemon(tierdb_bin, db, lake)
        try:
            s = first_snapshot(follower)
            after = [int(x) for x in db.query(measure)[0]]
        finally:
            assert "another tierdb daemon leads" in follower.stop()
    finally:
        holder.close()
    assert value(s, "tierdb_daemon_leader") == 0
    lag = value(s, "tierdb_mirror_frontier_lag_bytes", table="public.m")
    kept = value(s, "tierdb_mirror_slot_retained_wal_bytes", table="public.m")
    assert 0 < before[0] <= lag <= after[0]
    assert 0 < before[1] <= kept <= after[1]
