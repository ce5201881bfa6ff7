"""Coordination between readers, writers and the daemon that no other role
can stall (issue 16 item 12): the reader and leader locks are ones no SQL
session can take, the daemon's lock waits are bounded (a blocked table is
logged with its blocker and retried next cycle while the others move on),
and the daemon runs as an ordinary login role that is a member of
tierdb_worker and of the tables' owner."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest

from pg_cluster import PG_BINDIR, clean_env
from test_tiering import EVENTS_ROWS, cutline, heap_partitions, make_events, usec


def make_daily(db, name, days=6):
    """A timestamptz table `name` with daily partitions from 2024-01-01, one row per hour."""
    db.psql(
        f"CREATE TABLE {name} (id bigint NOT NULL, ts timestamptz NOT NULL, v text) PARTITION BY RANGE (ts);\n"
        f"DO $$ BEGIN FOR d IN 0..{days - 1} LOOP"
        f"  EXECUTE format('CREATE TABLE %I PARTITION OF {name} FOR VALUES FROM (%L) TO (%L)',"
        f"    '{name}_' || to_char(date '2024-01-01' + d, 'YYYYMMDD'),"
        "    (date '2024-01-01' + d)::timestamptz, (date '2024-01-01' + d + 1)::timestamptz);"
        " END LOOP; END $$;\n"
        f"INSERT INTO {name} SELECT g, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 hour', 'v' || g"
        f" FROM generate_series(0, {days * 24 - 1}) g;\n"
    )


class Session:
    """A psql session kept open on stdin, as `user`."""

    def __init__(self, db, user=None):
        pg = db.cluster
        self.proc = subprocess.Popen(
            [str(PG_BINDIR / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.host, "-p", str(pg.port),
             "-U", user or pg.user, "-d", db.name, "-f", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=clean_env(),
        )

    def send(self, sql):
        self.proc.stdin.write(sql + "\n")
        self.proc.stdin.flush()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_for(db, sql, what, timeout=60):
    deadline = time.monotonic() + timeout
    while db.query(sql) != [("t",)]:
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def role(pg):
    """A fresh login role name without privileges, dropped afterwards."""
    names = []

    def make(options="LOGIN"):
        name = "r_" + uuid.uuid4().hex[:10]
        pg.psql(f"CREATE ROLE {name} {options}")
        names.append(name)
        return name

    yield make
    for name in names:
        for dbname in [r[0] for r in pg.query("SELECT datname FROM pg_database WHERE datallowconn")]:
            pg.run_psql(f"DROP OWNED BY {name}", db=dbname)
        pg.run_psql(f"DROP ROLE {name}")


def test_no_role_can_stall_readers_or_the_daemon_with_advisory_keys(db, tierdb, role):
    """A role without privileges holds the advisory keys readers and the
    daemon used to meet on: cold reads and the daemon go on regardless, and
    the functions behind the new locks are not that role's to call."""
    make_events(db)
    assert tierdb("register --table public.events --pk id --tier-key ts").returncode == 0
    table_id = cutline(db, "events")["table_id"]
    nobody = role()
    holder = Session(db, nobody)
    try:
        holder.send(f"SELECT pg_advisory_lock(hashtextextended('tierdb_reader_' || {table_id}::text, 0));"
                    "SELECT pg_advisory_lock(hashtextextended('tierdb_leader', 0));")
        wait_for(db, "SELECT count(*) = 2 FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                 f" WHERE l.locktype = 'advisory' AND l.granted AND a.usename = '{nobody}'", "the advisory keys")
        proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d", "TIERDB_LOCK_TIMEOUT_MS": "60000"},
                      timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "leading" in proc.stderr
        assert cutline(db, "events")["T"] == usec(db, "2024-01-08 00:00:00+00")
        assert "events_20240101" not in heap_partitions(db, "events")  # waited out no one
        # Cold reads pin without waiting for the holder.
        rows = db.query("SET statement_timeout = '30s'; SET tierdb.transparent_reads = on;"
                        " SELECT count(*) FROM events")
        assert rows == [(str(EVENTS_ROWS),)]
        for call in (f"tierdb.wait_for_readers({table_id})", "tierdb.try_become_leader()"):
            err = db.cluster.error(f"SET ROLE {nobody}; SELECT {call}", db=db.name)
            assert "permission denied for function" in err, err
    finally:
        holder.close()


def test_a_blocked_table_is_logged_and_the_others_move_on(db, tierdb):
    """An idle transaction after tierdb_upsert holds table a's cut-line:
    one cycle tiers b, logs who blocks a and exits; once the blocker ends,
    the next cycle finishes a with nothing lost."""
    make_daily(db, "a")
    make_daily(db, "b")
    for name in ("a", "b"):
        assert tierdb(["register", "--table", name, "--pk", "id", "--tier-key", "ts"]).returncode == 0
    blocker = Session(db)
    try:
        blocker.send("BEGIN; SELECT tierdb_upsert('a', '{\"id\": 100000, \"ts\": \"2024-01-05 12:00:00+00\","
                     " \"v\": \"corrected\"}');")
        wait_for(db, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE state = 'idle in transaction')",
                 "the idle transaction")
        (pid,) = db.query("SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction'")[0]
        proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d", "TIERDB_LOCK_TIMEOUT_MS": "500"},
                      timeout=120)
        assert proc.returncode == 1, proc.stderr  # a step failed: a's
        assert "lock timeout" in proc.stderr, proc.stderr
        assert f"public.a: blocked by pid {pid}" in proc.stderr, proc.stderr
        assert "idle in transaction" in proc.stderr and "retrying this table next cycle" in proc.stderr
        assert cutline(db, "b")["T"] == usec(db, "2024-01-04 00:00:00+00")
        assert "b_20240101" not in heap_partitions(db, "b")
        assert cutline(db, "a")["T"] == usec(db, "2024-01-01 00:00:00+00")
        blocker.send("COMMIT;")
    finally:
        blocker.close()
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert cutline(db, "a")["T"] == usec(db, "2024-01-04 00:00:00+00")
    for name in ("a", "b"):
        proc = tierdb(["verify", "--table", name])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = db.query("SET tierdb.transparent_reads = on; SELECT count(*), count(*) FILTER (WHERE v = 'corrected')"
                    " FROM a")
    assert rows == [(str(6 * 24 + 1), "1")]


def test_the_daemon_runs_as_a_member_of_tierdb_worker(db, tierdb, role):
    """No hand-written grants on the catalog: a login role in tierdb_worker
    and in the role that owns the table (which may create in its schema)
    premakes, tiers, folds and drops."""
    owner = role("NOLOGIN")
    make_daily(db, "a")
    # Premake creates partitions in the table's schema: its owner may create there.
    db.psql(f"GRANT CREATE ON SCHEMA public TO {owner}; ALTER TABLE a OWNER TO {owner};"
            f" DO $$ DECLARE p regclass; BEGIN FOR p IN SELECT inhrelid FROM pg_inherits"
            f"  WHERE inhparent = 'a'::regclass LOOP EXECUTE format('ALTER TABLE %s OWNER TO {owner}', p);"
            " END LOOP; END $$;")
    assert tierdb(["register", "--table", "a", "--pk", "id", "--tier-key", "ts"]).returncode == 0
    worker = role(f"LOGIN IN ROLE tierdb_worker, {owner}")
    assert db.query(f"SELECT rolsuper FROM pg_roles WHERE rolname = '{worker}'") == [("f",)]
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d", "PGUSER": worker})
    assert proc.returncode == 0, proc.stderr
    assert cutline(db, "a")["T"] == usec(db, "2024-01-04 00:00:00+00")
    assert "a_20240101" not in heap_partitions(db, "a")
    assert "a_20240108" in heap_partitions(db, "a")  # premade
    db.psql("SELECT tierdb_upsert('a', '{\"id\": 1, \"ts\": \"2024-01-01 01:00:00+00\", \"v\": \"fixed\"}')")
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "2d", "PGUSER": worker})
    assert proc.returncode == 0, proc.stderr
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]  # folded
    proc = tierdb(["verify", "--table", "a"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_roles_are_created_once_per_cluster(pg, db):
    """A second database's CREATE EXTENSION finds the roles the first made."""
    name = "t_" + uuid.uuid4().hex[:12]
    pg.psql(f'CREATE DATABASE "{name}"')
    try:
        pg.psql("CREATE EXTENSION tierdb", db=name)
        assert pg.query("SELECT count(*) FROM pg_roles WHERE rolname IN ('tierdb_admin', 'tierdb_worker')") == [
            ("2",)]
    finally:
        pg.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
