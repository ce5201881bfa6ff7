"""Stream Load (`tierdb run` with TIERDB_LOAD_TOKEN; cli/load.c,
cli/load_http.c, docs/stream-load.md): JSONL bodies POSTed over HTTP to a
real daemon, every answer checked against what the heap, the delta, the
lake (tierdb verify) and tierdb.load_labels hold afterwards.

The table is test_tiering's `events` (daily partitions 2024-01-01 to
2024-01-10) with the partitions behind max(ts) - 2d tiered, so T is
2024-01-08: rows from the 8th on are hot, earlier ones cold."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pg_cluster import clean_env, free_port
from test_direct import as_server_user, direct  # noqa: F401  (fixtures)
from test_tiering import SESSION, make_events

TABLE = "public.events"
TOKEN = "s3cret-token-for-the-tests-0123456789"
LAG = "2d"
HOT_TS = "2024-01-09T12:00:00Z"
COLD_TS = "2024-01-03T12:00:00Z"


class LoadDaemon:
    """`tierdb run` serving Stream Load (and /metrics) on free ports of 127.0.0.1.
    Its cycles are an hour apart: the only cycle during a test is the first,
    which finds nothing to do (the table was tiered with the same lag)."""

    def __init__(self, tierdb_bin, db, lake, as_user=None, **env):
        self.port = free_port()
        self.metrics_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), "TIERDB_TIERING_LAG": LAG,
                    "TIERDB_CYCLE_INTERVAL_SECONDS": "3600", "TIERDB_LOAD_TOKEN": TOKEN,
                    "TIERDB_LOAD_PORT": str(self.port), "TIERDB_METRICS_PORT": str(self.metrics_port), **env}
        command = [str(tierdb_bin), "run"]
        if as_user is not None:
            command = ["runuser", "-u", as_user, "--", *command]
        self.proc = subprocess.Popen(command, env=self.env, text=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read()
                self.request("GET", "/api/load/x.y")
                return
            except (urllib.error.URLError, ConnectionError):
                assert self.proc.poll() is None, self.stop()
                assert time.monotonic() < deadline, "the Stream Load endpoint did not come up"
                time.sleep(0.1)

    def request(self, method, path, body=None, headers=None, token=TOKEN):
        """(status, headers, parsed JSON body) of one request."""
        all_headers = {**({"Authorization": f"Bearer {token}"} if token is not None else {}), **(headers or {})}
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.status, resp.headers, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, e.headers, json.loads(e.read())

    def load(self, rows, label=None, table=TABLE, raw=None):
        """POSTs rows (dicts) as JSON lines (or `raw` bytes) under `label`."""
        body = raw if raw is not None else "".join(json.dumps(r) + "\n" for r in rows).encode()
        headers = {"X-TierDB-Label": label} if label is not None else {}
        return self.request("POST", f"/api/load/{table}", body, headers)

    def metrics(self):
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=30).read().decode()
        return [s for f in text_string_to_metric_families(text) for s in f.samples]

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=60)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        _, errors = self.proc.communicate(timeout=60)
        return errors


@pytest.fixture
def events(db, tierdb):
    make_events(db)
    proc = tierdb(["register", "--table", TABLE, "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG})
    assert proc.returncode == 0, proc.stderr
    assert scalar(db, SESSION + "SELECT to_timestamp(tier_key_hi / 1e6)::date FROM tierdb.cutline") == "2024-01-08"
    return db


@pytest.fixture
def daemon(events, tierdb_bin, lake):
    d = LoadDaemon(tierdb_bin, events, lake)
    d.db = events
    yield d
    d.stop()


def scalar(db, sql):
    return db.query(sql)[0][0]


def count(db, where="true"):
    return int(scalar(db, f"SELECT count(*) FROM events WHERE {where}"))


def label_row(db, label):
    rows = db.query(f"SELECT state, result::text FROM tierdb.load_labels WHERE label = '{label}'")
    return (rows[0][0], json.loads(rows[0][1]) if rows[0][1] else None) if rows else None


def rows(first_id, n, ts, v="loaded"):
    return [{"id": first_id + i, "ts": ts, "v": f"{v}{i}", "amount": f"{i}.25"} for i in range(n)]


def assert_failed(status, body, code, *words):
    assert status == code, body
    assert body["status"] == "failed", body
    for w in words:
        assert w in body["error"], body


# ------------------------------------------------------------ the HTTP surface


def test_refusals_are_json_and_counted(daemon):
    status, headers, body = daemon.request("POST", f"/api/load/{TABLE}", b"{}\n", token=None)
    assert_failed(status, body, 401, "Authorization: Bearer")
    assert headers["WWW-Authenticate"].startswith("Bearer")
    status, headers, body = daemon.request("POST", f"/api/load/{TABLE}", b"{}\n", token=TOKEN[:-1] + "x")
    assert_failed(status, body, 401)
    status, headers, body = daemon.request("POST", f"/api/load/{TABLE}", b"{}\n", token=TOKEN + "x")
    assert_failed(status, body, 401)
    status, headers, body = daemon.request("GET", f"/api/load/{TABLE}")
    assert_failed(status, body, 405, "POST")
    assert headers["Allow"] == "POST"
    status, _, body = daemon.request("PUT", f"/api/load/{TABLE}", b"{}\n")
    assert_failed(status, body, 405)
    status, _, body = daemon.load(rows(100000, 1, HOT_TS), table="public.nosuch")
    assert_failed(status, body, 404, "public.nosuch", "not registered")
    status, _, body = daemon.request("POST", "/api/other", b"{}\n")
    assert_failed(status, body, 404, "/api/load/")
    status, _, body = daemon.load(rows(100000, 1, HOT_TS), label="x" * 129)
    assert_failed(status, body, 400, "X-TierDB-Label")
    req = urllib.request.Request(daemon.url + f"/api/load/{TABLE}", data=b"{}\n", method="POST",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    req.add_unredirected_header("X-TierDB-Label", "caf\xe9")  # latin-1 bytes on the wire: not UTF-8
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=60)
    assert e.value.code == 400 and "UTF-8" in json.loads(e.value.read())["error"]
    # nothing was applied, and no label was recorded
    assert count(daemon.db, "id >= 100000") == 0
    assert daemon.db.query("SELECT count(*) FROM tierdb.load_labels") == [("0",)]

    samples = {(s.labels["table"], s.labels["status"]): s.value
               for s in daemon.metrics() if s.name == "tierdb_load_requests_total"}
    # GET of x.y at startup, GET and PUT above: 405 three times; no table resolved for any of these
    assert samples == {("", "401"): 3, ("", "405"): 3, ("", "404"): 2, ("", "400"): 2}, samples


def test_body_over_the_limit_is_413(events, tierdb_bin, lake):
    d = LoadDaemon(tierdb_bin, events, lake, TIERDB_LOAD_MAX_BYTES="1000")
    try:
        body = "".join(json.dumps(r) + "\n" for r in rows(100000, 50, HOT_TS)).encode()
        assert len(body) > 1000
        status, _, answer = d.request("POST", f"/api/load/{TABLE}", body, {"X-TierDB-Label": "big"})
        assert_failed(status, answer, 413, "TIERDB_LOAD_MAX_BYTES")
        assert count(events, "id >= 100000") == 0
    finally:
        d.stop()


def test_mirrored_tables_are_refused(db, tierdb, tierdb_bin, lake):
    db.psql("CREATE TABLE m (id bigint PRIMARY KEY, ts timestamptz NOT NULL, v text)")
    proc = tierdb(["register", "--table", "public.m", "--pk", "id", "--tier-key", "ts", "--mode", "mirrored"])
    assert proc.returncode == 0, proc.stderr
    d = LoadDaemon(tierdb_bin, db, lake)
    try:
        status, _, body = d.load([{"id": 1, "ts": HOT_TS, "v": "a"}], table="public.m")
        assert_failed(status, body, 400, "public.m", "mirrored")
        assert db.query("SELECT count(*) FROM m") == [("0",)]
    finally:
        d.stop()


# ------------------------------------------------------------ labels


def test_a_label_in_progress_elsewhere_is_409(daemon, events):
    """A session holding the label's lock is a load in progress: the duplicate gets 409 and applies nothing."""
    table_id = scalar(events, "SELECT table_id FROM tierdb.tables")
    with psycopg.connect(events.dsn, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(hashtextextended('tierdb_load_' || %s || ':' || 'busy', 0))",
                       (table_id,))
        holder.execute("INSERT INTO tierdb.load_labels (table_id, label) VALUES (%s, 'busy')", (table_id,))
        status, headers, body = daemon.load(rows(100000, 3, HOT_TS), label="busy")
        assert_failed(status, body, 409, "in progress")
        assert headers["X-TierDB-Label"] == "busy"
        assert label_row(events, "busy")[0] == "staged"
    assert count(events, "id >= 100000") == 0


def test_a_concurrent_duplicate_of_a_real_load_is_409(daemon, events):
    """Two requests under one label: the second arrives while the first's body is still coming."""
    load = rows(100000, 8, HOT_TS)
    body = "".join(json.dumps(r) + "\n" for r in load).encode()
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=60) as first:
        first.sendall(f"POST /api/load/{TABLE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                      f"X-TierDB-Label: twice\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                      + body[:50])
        deadline = time.monotonic() + 30
        while label_row(events, "twice") is None:  # the first holds the label
            assert time.monotonic() < deadline
            time.sleep(0.05)
        status, _, answer = daemon.load(load, label="twice")
        assert_failed(status, answer, 409, "in progress")
        first.sendall(body[50:])
        reply = b""
        while chunk := first.recv(65536):
            reply += chunk
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), reply
    assert json.loads(payload)["rows"] == 8
    status, _, again = daemon.load(load, label="twice")
    assert status == 200 and again["replayed"] is True
    assert count(events, "id >= 100000") == 8


def test_an_orphaned_label_is_failed_and_says_so(daemon, events):
    """'staged' with its lock free: the load that staged it is gone, and nothing of it applied."""
    table_id = scalar(events, "SELECT table_id FROM tierdb.tables")
    events.psql(f"INSERT INTO tierdb.load_labels (table_id, label) VALUES ({table_id}, 'orphan')")
    status, headers, body = daemon.load(rows(100000, 3, HOT_TS), label="orphan")
    assert_failed(status, body, 500, "interrupted", "nothing of it was applied", "new label")
    assert body["replayed"] is True and headers["X-TierDB-Replayed"] == "true"
    assert label_row(events, "orphan")[0] == "failed"
    assert count(events, "id >= 100000") == 0
    # and so it stays
    status, _, again = daemon.load(rows(100000, 3, HOT_TS), label="orphan")
    assert status == 500 and again["error"] == body["error"]
    assert count(events, "id >= 100000") == 0


# ------------------------------------------------------------ loads


def test_hot_only_load_goes_to_the_heap(daemon, events):
    before = count(events)
    status, headers, body = daemon.load(rows(100000, 20, HOT_TS) + [{"id": 5, "ts": HOT_TS, "v": "moved"}])
    assert status == 200, body
    label = headers["X-TierDB-Label"]
    assert len(label) == 36 and body["label"] == label
    assert body["status"] == "committed"
    assert (body["rows"], body["heap_rows"], body["delta_rows"], body["lake_rows"]) == (21, 21, 0, 0)
    assert body["snapshot_id"] is None
    assert count(events) == before + 20  # id 5 moved from the lake to the heap: replaced, not added
    assert count(events, f"id >= 100000 AND ts = '{HOT_TS}' AND v LIKE 'loaded%'") == 20
    assert events.query("SELECT v FROM events WHERE id = 5") == [("moved",)]
    assert int(scalar(events, "SELECT count(*) FROM tierdb.delta")) == 1  # the tombstone of id 5's lake row
    state, result = label_row(events, label)
    assert state == "committed" and result["rows"] == 21
    # a body without rows is refused
    status, _, body = daemon.load(None, label="empty", raw=b"\n\n")
    assert_failed(status, body, 400, "no rows")


def test_trickle_load_goes_to_the_heap_and_the_delta(daemon, events):
    before = count(events)
    load = rows(100000, 5, HOT_TS) + rows(200000, 7, COLD_TS, "cold")
    status, _, body = daemon.load(load, label="trickle-1")
    assert status == 200, body
    assert (body["rows"], body["heap_rows"], body["delta_rows"], body["lake_rows"]) == (12, 5, 7, 0)
    assert count(events) == before + 12
    assert int(scalar(events, "SELECT count(*) FROM tierdb.delta WHERE op = 0")) == 7
    # reads of the table show the cold rows, with their values
    got = events.query(SESSION + "SELECT id, ts, v, amount FROM events WHERE id >= 200000 ORDER BY id")
    assert got == [(str(200000 + i), "2024-01-03 12:00:00+00", f"cold{i}", f"{i}.25") for i in range(7)]


def test_a_retried_label_answers_its_first_result_and_applies_once(daemon, events):
    before = count(events)
    load = rows(100000, 4, HOT_TS) + rows(200000, 3, COLD_TS)
    status, headers, first = daemon.load(load, label="retry-me")
    assert status == 200, first
    assert "X-TierDB-Replayed" not in headers
    for _ in range(2):
        status, headers, again = daemon.load(load, label="retry-me")
        assert status == 200, again
        assert again.pop("replayed") is True and headers["X-TierDB-Replayed"] == "true"
        assert again == first
    # a different body under the same label is not applied either: the label is spent
    status, _, again = daemon.load(rows(300000, 2, HOT_TS), label="retry-me")
    assert status == 200 and again["rows"] == 7
    assert count(events) == before + 7
    assert count(events, "id >= 300000") == 0
    assert int(scalar(events, "SELECT count(*) FROM tierdb.delta WHERE op = 0")) == 3


def test_volume_load_commits_one_lake_snapshot(events, tierdb, tierdb_bin, lake):
    d = LoadDaemon(tierdb_bin, events, lake, TIERDB_LOAD_DELTA_ROWS="10")
    try:
        snapshots = scalar(events, "SELECT lake_snapshot_id FROM tierdb.cutline")
        before = count(events)
        load = rows(100000, 6, HOT_TS) + rows(200000, 40, COLD_TS, "vol") + [{"id": 7, "ts": COLD_TS, "v": "new7"}]
        status, _, body = d.load(load, label="volume-1")
        assert status == 200, body
        assert (body["rows"], body["heap_rows"], body["delta_rows"], body["lake_rows"]) == (47, 6, 0, 41)
        assert body["replaced"] >= 1  # id 7 was in the lake
        assert body["snapshot_id"] is not None and body["op_id"]
        assert scalar(events, "SELECT lake_snapshot_id FROM tierdb.cutline") == str(body["snapshot_id"])
        assert scalar(events, "SELECT lake_snapshot_id FROM tierdb.cutline") != snapshots
        assert int(scalar(events, "SELECT count(*) FROM tierdb.delta")) == 0  # nothing went through the delta
        assert count(events) == before + 46
        assert events.query("SELECT v, ts = '2024-01-03 12:00:00+00' FROM events WHERE id = 7") == [("new7", "t")]
        assert count(events, "v LIKE 'vol%'") == 40
        proc = tierdb(["verify", "--table", TABLE])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        # and the label replays it
        status, _, again = d.load(load, label="volume-1")
        assert status == 200 and again["snapshot_id"] == body["snapshot_id"]
        assert count(events) == before + 46
    finally:
        d.stop()


def test_keys_move_between_the_tiers_in_a_volume_load(events, tierdb, tierdb_bin, lake):
    """A hot row whose key lives in the lake and a cold row whose key lives in the heap, in a load that writes
    the lake: each key ends in its new tier only, once, before and after the fold (the moves go through the
    delta, which readers holding an older pin merge too)."""
    d = LoadDaemon(tierdb_bin, events, lake, TIERDB_LOAD_DELTA_ROWS="10")
    try:
        hot_in_heap = int(scalar(events, f"SELECT max(id) FROM events WHERE ts >= '{HOT_TS}'"))
        before = count(events)
        load = (rows(200000, 30, COLD_TS, "vol") + [{"id": 5, "ts": HOT_TS, "v": "to the heap"}]
                + [{"id": hot_in_heap, "ts": COLD_TS, "v": "to the lake"}])
        status, _, body = d.load(load, label="moves")
        assert status == 200, body
        # the two keys that move are routed (heap and delta), the rest of the cold rows written to the lake
        assert (body["lake_rows"], body["heap_rows"], body["delta_rows"]) == (30, 1, 1), body
        assert count(events) == before + 30
        got = events.query(SESSION + f"SELECT id, ts, v FROM events WHERE id IN (5, {hot_in_heap}) ORDER BY id")
        assert got == [("5", "2024-01-09 12:00:00+00", "to the heap"),
                       (str(hot_in_heap), "2024-01-03 12:00:00+00", "to the lake")], got
        proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG})  # fold the moves
        assert proc.returncode == 0, proc.stderr
        assert events.query(SESSION + f"SELECT id, ts, v FROM events WHERE id IN (5, {hot_in_heap}) ORDER BY id") == got
        proc = tierdb(["verify", "--table", TABLE])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        d.stop()


def test_a_direct_table_takes_its_cold_rows_into_the_lake(direct, tierdb_bin, lake, as_server_user):
    """Direct tables have no delta: even a few cold rows are committed to the lake, in one snapshot."""
    db = direct
    snapshot = scalar(db, "SELECT lake_snapshot_id FROM tierdb.cutline")
    before = count(db)
    d = LoadDaemon(tierdb_bin, db, lake, as_user="postgres")
    try:
        status, _, body = d.load(rows(100000, 3, HOT_TS) + rows(200000, 2, COLD_TS), label="direct-1")
        assert status == 200, body
        assert (body["rows"], body["heap_rows"], body["delta_rows"], body["lake_rows"]) == (5, 3, 0, 2)
        assert body["snapshot_id"] is not None
        assert scalar(db, "SELECT lake_snapshot_id FROM tierdb.cutline") != snapshot
        assert count(db) == before + 5
        assert count(db, "id >= 200000 AND v LIKE 'loaded%'") == 2
        assert int(scalar(db, "SELECT count(*) FROM tierdb.delta")) == 0
        proc = as_server_user(["verify", "--table", TABLE])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        d.stop()


@pytest.mark.parametrize("delta_rows", ["1000", "0"], ids=["trickle", "volume"])
@pytest.mark.parametrize("case", ["malformed", "unknown_column", "bad_value", "below_retention", "repeated_key",
                                  "not_null"])
def test_bad_bodies_are_400_and_apply_nothing(events, tierdb_bin, lake, case, delta_rows):
    # R at 2024-01-02: rows of the 1st may no longer be written
    events.psql(SESSION + "UPDATE tierdb.cutline SET retention_line ="
                " (extract(epoch FROM timestamptz '2024-01-02 00:00:00+00') * 1000000)::bigint")
    good = rows(100000, 3, HOT_TS) + rows(200000, 3, COLD_TS)
    lines = [json.dumps(r) for r in good]
    bad_line, words = {
        "malformed": ('{"id": 300000, "ts": "2024-01-09T00:00:00Z", ', ["row 4"]),
        "unknown_column": (json.dumps({"id": 300000, "ts": HOT_TS, "colour": "red"}), ["row 4", "colour"]),
        "bad_value": (json.dumps({"id": 300000, "ts": HOT_TS, "amount": "lots"}), ["row 4", "lots"]),
        "below_retention": (json.dumps({"id": 300000, "ts": "2024-01-01T06:00:00Z"}), ["row 4", "retention"]),
        "repeated_key": (json.dumps({"id": 100001, "ts": COLD_TS}), ["row 4", "row 2"]),
        "not_null": (json.dumps({"id": 300000, "v": "no ts"}), ["row 4", "ts"]),
    }[case]
    lines.insert(3, bad_line)
    body = ("\n".join(lines) + "\n").encode()
    d = LoadDaemon(tierdb_bin, events, lake, TIERDB_LOAD_DELTA_ROWS=delta_rows)
    try:
        before = count(events)
        snapshot = scalar(events, "SELECT lake_snapshot_id FROM tierdb.cutline")
        status, _, answer = d.load(None, label=f"bad-{case}", raw=body)
        assert_failed(status, answer, 400, *words)
        assert count(events) == before
        assert count(events, "id >= 100000") == 0
        assert int(scalar(events, "SELECT count(*) FROM tierdb.delta")) == 0
        assert scalar(events, "SELECT lake_snapshot_id FROM tierdb.cutline") == snapshot
        state, result = label_row(events, f"bad-{case}")
        assert state == "failed" and result["http_status"] == 400
        # the label stays failed, with its first answer
        status, _, again = d.load(good, label=f"bad-{case}")
        assert status == 400 and again["error"] == answer["error"] and again["replayed"] is True
        assert count(events, "id >= 100000") == 0
    finally:
        d.stop()


def test_a_chunked_body_with_lines_split_across_chunks(daemon, events):
    """Transfer-Encoding: chunked, each line cut in three pieces that arrive as separate chunks,
    CRLF line ends and a last line without one: every row arrives whole."""
    load = rows(100000, 30, HOT_TS) + rows(200000, 4, COLD_TS)
    text = "\r\n".join(json.dumps(r) for r in load).encode()
    pieces = [text[i:i + 37] for i in range(0, len(text), 37)]
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=120)
    conn.request("POST", f"/api/load/{TABLE}", body=iter(pieces), encode_chunked=True,
                 headers={"Authorization": f"Bearer {TOKEN}", "X-TierDB-Label": "chunked"})
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 200, body
    assert (body["rows"], body["heap_rows"], body["delta_rows"]) == (34, 30, 4)
    got = events.query(SESSION + "SELECT id, v, amount FROM events WHERE id >= 100000 ORDER BY id")
    assert got == [(str(r["id"]), r["v"], r["amount"]) for r in load]


def test_a_client_gone_mid_body_fails_its_label_and_applies_nothing(daemon, events):
    body = "".join(json.dumps(r) + "\n" for r in rows(100000, 10, HOT_TS)).encode()
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as s:
        s.sendall(f"POST /api/load/{TABLE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                  f"X-TierDB-Label: gone\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:len(body) // 2])
        deadline = time.monotonic() + 30
        while label_row(events, "gone") is None:  # the label is taken before the body is read
            assert time.monotonic() < deadline
            time.sleep(0.05)
    deadline = time.monotonic() + 30
    while label_row(events, "gone")[0] == "staged":
        assert time.monotonic() < deadline, "the label of the cut-off load stayed staged"
        time.sleep(0.1)
    state, result = label_row(events, "gone")
    assert state == "failed" and "closed before the body ended" in result["error"], result
    assert count(events, "id >= 100000") == 0
    status, _, answer = daemon.load(rows(100000, 10, HOT_TS), label="gone")
    assert status == 400 and answer["replayed"] is True
    assert count(events, "id >= 100000") == 0


# ------------------------------------------------------------ crashes


def _load_in_thread(daemon, load, label):
    out = {}

    def run():
        try:
            out["answer"] = daemon.load(load, label=label)
        except Exception as e:  # the daemon dies under the request
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    return t, out


@pytest.mark.parametrize("fault,delta_rows", [
    ("load-trickle-before-commit", "1000"),
    ("load-trickle-after-commit", "1000"),
    ("load-before-commit", "0"),
    ("load-after-commit", "0"),
    ("load-after-commit-recorded", "0"),
])
def test_a_daemon_killed_mid_load_applies_the_label_once_or_not_at_all(events, tierdb, tierdb_bin, lake, fault,
                                                                       delta_rows):
    before = count(events)
    load = rows(100000, 5, HOT_TS) + rows(200000, 5, COLD_TS)
    d = LoadDaemon(tierdb_bin, events, lake, TIERDB_FAULT=fault, TIERDB_LOAD_DELTA_ROWS=delta_rows)
    t, out = _load_in_thread(d, load, "crash-1")
    t.join(timeout=120)
    d.proc.wait(timeout=60)
    assert d.proc.returncode == -9, d.stop()
    assert "error" in out, out  # no answer came
    assert label_row(events, "crash-1")[0] in ("staged", "committed")

    # a restarted daemon settles the label when it is sent again: committed once, or failed with nothing applied
    d2 = LoadDaemon(tierdb_bin, events, lake, TIERDB_LOAD_DELTA_ROWS=delta_rows)
    try:
        if fault.startswith("load-") and not fault.startswith("load-trickle"):
            # a lake load is journaled: the restarted daemon's recovery step settles it without being asked
            deadline = time.monotonic() + 60
            while label_row(events, "crash-1")[0] == "staged":
                assert time.monotonic() < deadline, "the daemon's recovery did not settle the interrupted load"
                time.sleep(0.2)
        # the killed daemon's sessions may outlive it for a moment, its label's lock with them: 409 until they go
        deadline = time.monotonic() + 60
        while (answer := d2.load(load, label="crash-1"))[0] == 409:
            assert time.monotonic() < deadline, answer
            time.sleep(0.2)
        status, _, body = answer
        assert body["replayed"] is True
        state, _ = label_row(events, "crash-1")
        if status == 200:
            assert state == "committed" and body["rows"] == 10
            assert count(events) == before + 10
        else:
            assert_failed(status, body, 500, "nothing of it was applied")
            assert state == "failed"
            assert count(events) == before
            assert count(events, "id >= 100000") == 0
        if fault == "load-trickle-after-commit":
            assert status == 200
        if fault == "load-trickle-before-commit":
            assert status == 500
        # once settled, it stays so
        status2, _, body2 = d2.load(load, label="crash-1")
        assert status2 == status and body2 == body
        assert count(events) == before + (10 if status == 200 else 0)
        proc = tierdb(["verify", "--table", TABLE])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        d2.stop()


def test_metrics_count_loads_by_table_and_status(daemon, events):
    assert daemon.load(rows(100000, 2, HOT_TS), label="m1")[0] == 200
    assert daemon.load(rows(100000, 2, HOT_TS), label="m1")[0] == 200
    assert daemon.load(None, label="m2", raw=b"{not json\n")[0] == 400
    samples = {(s.labels["table"], s.labels["status"]): s.value
               for s in daemon.metrics() if s.name == "tierdb_load_requests_total"}
    assert samples[(TABLE, "200")] == 2
    assert samples[(TABLE, "400")] == 1
