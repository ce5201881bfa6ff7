"""Embedded mode (issue 4): with shared_preload_libraries = 'tierdb' and
tierdb.embedded_worker = on, the server runs `<tierdb.worker_command> run`
and supervises it.

These tests run their own private cluster (the session `pg` cluster has no
preloaded libraries), restarted with other settings per test. The daemon is
replaced by a small script that records its PID, arguments and environment,
then waits for SIGTERM, so what is checked is the supervision alone: the
child's command line and environment, restarts after a crash, the stop at
server shutdown (SIGTERM, then SIGKILL after the grace period), reloads, and
that nothing starts when the worker is off.
"""

from __future__ import annotations

import json
import re
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from pg_cluster import PG_BINDIR, PG_CLUSTER, Cluster, clean_env, free_port

# The fake daemon. It runs as the server's OS user (postgres), so it uses
# the system Python and writes into a world-writable directory.
FAKE_DAEMON = """#!/usr/bin/python3
import json, os, signal, sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "events.jsonl")
KEYS = ("PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "TIERDB_PG_URL",
        "TIERDB_TEST_EXTRA", "TIERDB_CYCLE_INTERVAL_SECONDS", "TIERDB_CREDENTIALS_FILE")


def open_fds():
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            pass  # the directory listing's own descriptor, closed by now
    return fds


def record(event):
    fds = open_fds()
    with open(OUT, "a") as f:
        f.write(json.dumps({
            "event": event, "pid": os.getpid(), "ppid": os.getppid(),
            "argv": sys.argv[1:], "env": {k: os.environ.get(k) for k in KEYS},
            "fds": fds,
        }) + "\\n")


def on_term(signum, frame):
    record("term")
    if os.environ.get("TIERDB_TEST_IGNORE_TERM") != "1":
        sys.exit(0)


signal.signal(signal.SIGTERM, on_term)
record("start")
while True:
    signal.pause()
"""

WORKER_TYPE = "tierdb embedded worker"


def wait_for(what, predicate, timeout=15.0, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def alive(pid: int) -> bool:
    """True while the process exists, zombies included: a child the
    supervisor did not reap, or an orphan nobody reaps, counts as left."""
    return Path(f"/proc/{pid}").exists()


def processes_running(path: Path) -> list:
    """PIDs of the processes whose command line mentions `path`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(path).encode() in cmdline:
            pids.append(int(entry.name))
    return pids


class Embedded:
    """The test's cluster directory, fake daemon and its event log."""

    def __init__(self, root: Path):
        self.root = root
        self.directory = root / "cluster"
        self.script = root / "fake-tierdb"
        self.events_path = root / "out" / "events.jsonl"
        self.cluster: Cluster | None = None
        # The server log is appended to by every test of the module: each
        # test reads only what was written after it began.
        self.log_offset = self._log_path().stat().st_size if self._log_path().exists() else 0

    def _log_path(self) -> Path:
        return self.directory / "postgres.log"

    def events(self, kind=None) -> list:
        try:
            lines = self.events_path.read_text().splitlines()
        except FileNotFoundError:
            return []
        events = [json.loads(line) for line in lines if line.strip()]
        return [e for e in events if kind is None or e["event"] == kind]

    def start(self, *settings, env=None, expect_failure=False) -> subprocess.CompletedProcess:
        """Starts the server with these `name=value` settings (values with
        spaces or ';' quoted for the shell: name='value')."""
        args = []
        for s in settings:
            args += ["-c", s]
        failures = []
        for _ in range(3):
            port = free_port()
            proc = subprocess.run(
                [str(PG_CLUSTER), "start", str(self.directory), str(port), *args],
                capture_output=True, text=True, timeout=180,
                env={**clean_env(), "PG_BINDIR": str(PG_BINDIR), **(env or {})},
            )
            if expect_failure:
                return proc
            if proc.returncode == 0:
                self.cluster = Cluster(self.directory, port)
                return proc
            failures.append(f"port {port}:\n{proc.stderr}")
        pytest.fail("could not start the embedded-mode cluster:\n" + "\n".join(failures), pytrace=False)

    def start_worker(self, *settings, env=None):
        self.start(
            "shared_preload_libraries=tierdb",
            "tierdb.embedded_worker=on",
            f"tierdb.worker_command={self.script}",
            *settings,
            env=env,
        )

    def stop(self):
        proc = subprocess.run(
            [str(PG_CLUSTER), "stop", str(self.directory)],
            capture_output=True, text=True, timeout=180,
            env={**clean_env(), "PG_BINDIR": str(PG_BINDIR)},
        )
        assert proc.returncode == 0, f"stopping the server failed:\n{proc.stderr}"

    def log(self) -> str:
        try:
            with open(self._log_path(), "rb") as f:
                f.seek(self.log_offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def worker_pids(self) -> list:
        rows = self.cluster.query(
            f"SELECT pid FROM pg_stat_activity WHERE backend_type = '{WORKER_TYPE}'"
        )
        return [int(r[0]) for r in rows]

    def first_start(self, timeout=15.0) -> dict:
        return wait_for("the fake daemon to start", lambda: (self.events("start") or [None])[0], timeout)


@pytest.fixture(scope="module")
def embedded_root():
    root = Path(tempfile.mkdtemp(prefix="tierdb-embedded-"))
    root.chmod(0o755)
    yield root
    if os.environ.get("TIERDB_E2E_KEEP"):
        print(f"\ntests/e2e: kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def embedded(embedded_root):
    e = Embedded(embedded_root)
    e.script.write_text(FAKE_DAEMON)
    e.script.chmod(0o755)
    out = e.events_path.parent
    out.mkdir(exist_ok=True)
    out.chmod(0o777)
    e.events_path.unlink(missing_ok=True)
    try:
        yield e
    finally:
        try:
            e.stop()
        finally:
            # A test that failed half-way must not leave fake daemons behind.
            for ev in e.events("start"):
                if alive(ev["pid"]):
                    os.kill(ev["pid"], signal.SIGKILL)
            # Shown by pytest when the test failed.
            print("postgres.log of this test:\n" + e.log()[-6000:])


def test_worker_runs_the_daemon_pointed_at_this_server(embedded):
    # Variables that would point a client elsewhere, in the server's own
    # environment: the child must not see them.
    embedded.start_worker(
        "tierdb.worker_database=tierdb_db",
        "tierdb.worker_env='TIERDB_TEST_EXTRA=hello;  TIERDB_CYCLE_INTERVAL_SECONDS=1 ;'",
        env={"TIERDB_PG_URL": "postgres://elsewhere:1/x", "PGHOST": "/nonexistent", "PGPORT": "1"},
    )
    start = embedded.first_start()
    assert start["argv"] == ["run"]
    assert start["env"] == {
        "PGHOST": str(embedded.directory.resolve()),  # the server's Unix socket directory
        "PGPORT": str(embedded.cluster.port),
        "PGDATABASE": "tierdb_db",
        "PGUSER": "postgres",
        "TIERDB_PG_URL": None,
        "TIERDB_TEST_EXTRA": "hello",
        "TIERDB_CYCLE_INTERVAL_SECONDS": "1",
        # The server's credentials file, for storage profiles' references (docs/profiles.md).
        "TIERDB_CREDENTIALS_FILE": start["env"]["TIERDB_CREDENTIALS_FILE"],
    }
    assert start["env"]["TIERDB_CREDENTIALS_FILE"].endswith("/data/tierdb_credentials")
    # Nothing of the server's is left open in the daemon: stdin is
    # /dev/null, stdout and stderr are the server's log.
    assert sorted(start["fds"]) == ["0", "1", "2"], start["fds"]
    assert start["fds"]["0"] == "/dev/null"
    # The supervisor is the background worker, visible in pg_stat_activity.
    assert embedded.worker_pids() == [start["ppid"]]
    log = embedded.log()
    assert f'started "{embedded.script} run" with PID {start["pid"]}' in log
    assert 'database "tierdb_db" as user "postgres"' in log
    # One child only.
    time.sleep(1)
    assert len(embedded.events("start")) == 1


def test_killed_daemon_is_started_again(embedded):
    embedded.start_worker()
    first = embedded.first_start()
    os.kill(first["pid"], signal.SIGKILL)
    second = wait_for(
        "a second daemon",
        lambda: next((e for e in embedded.events("start") if e["pid"] != first["pid"]), None),
        timeout=10,
    )
    assert second["argv"] == ["run"]
    assert second["ppid"] == first["ppid"]
    assert not alive(first["pid"])
    log = embedded.log()
    assert f"tierdb daemon with PID {first['pid']} ended: child process was terminated by signal 9" in log
    assert "starts it again in 1 s" in log
    # And again: the delay doubles while the daemon keeps dying young.
    os.kill(second["pid"], signal.SIGKILL)
    wait_for("a third daemon", lambda: len(embedded.events("start")) == 3, timeout=10)
    assert "starts it again in 2 s" in embedded.log()


def test_server_stop_ends_the_daemon(embedded):
    embedded.start_worker()
    start = embedded.first_start()
    supervisor = start["ppid"]
    embedded.stop()  # pg_ctl stop -m fast
    assert [e["pid"] for e in embedded.events("term")] == [start["pid"]]
    assert not alive(start["pid"])
    assert not alive(supervisor)
    assert processes_running(embedded.script) == []
    assert f"tierdb daemon with PID {start['pid']} ended: child process exited with exit code 0" in embedded.log()


def test_daemon_ignoring_sigterm_is_killed_at_stop(embedded):
    embedded.start_worker("tierdb.worker_env='TIERDB_TEST_IGNORE_TERM=1'")
    start = embedded.first_start()
    began = time.monotonic()
    embedded.stop()
    took = time.monotonic() - began
    assert not alive(start["pid"])
    assert 9 <= took < 40, took  # the 10 s grace period, then SIGKILL
    log = embedded.log()
    assert f"tierdb daemon with PID {start['pid']} did not exit within 10 s of SIGTERM; killing it" in log
    assert f"tierdb daemon with PID {start['pid']} ended: child process was terminated by signal 9" in log


def test_supervisor_killed_takes_the_daemon_with_it(embedded):
    embedded.start_worker()
    start = embedded.first_start()
    # SIGKILL gives the supervisor no chance to stop its child: the kernel
    # does (PR_SET_PDEATHSIG), and the postmaster starts a new supervisor
    # (after a crash restart of the server, since a backend died uncleanly).
    os.kill(start["ppid"], signal.SIGKILL)
    wait_for("the orphaned daemon to end", lambda: not alive(start["pid"]), timeout=10)
    assert start["pid"] in [e["pid"] for e in embedded.events("term")]
    wait_for(
        "a new supervisor's daemon",
        lambda: any(e["ppid"] != start["ppid"] for e in embedded.events("start")),
        timeout=30,
    )


def test_immediate_shutdown_ends_the_daemon(embedded):
    embedded.start_worker()
    start = embedded.first_start()
    # -m immediate: the supervisor gets SIGQUIT and exits at once, without
    # stopping its child; the kernel's parent-death signal does.
    proc = subprocess.run(
        ["runuser", "-u", "postgres", "--", str(PG_BINDIR / "pg_ctl"), "stop",
         "-D", str(embedded.directory / "data"), "-m", "immediate", "-w"]
        if os.geteuid() == 0 else
        [str(PG_BINDIR / "pg_ctl"), "stop", "-D", str(embedded.directory / "data"), "-m", "immediate", "-w"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    wait_for("the daemon to end", lambda: not alive(start["pid"]), timeout=10)
    assert [e["pid"] for e in embedded.events("term")] == [start["pid"]]
    assert processes_running(embedded.script) == []


def test_terminated_worker_stops_the_daemon_and_comes_back(embedded):
    embedded.start_worker()
    start = embedded.first_start()
    assert embedded.cluster.query(f"SELECT pg_terminate_backend({start['ppid']})") == [("t",)]
    wait_for("the daemon to end", lambda: not alive(start["pid"]), timeout=15)
    assert [e["pid"] for e in embedded.events("term")] == [start["pid"]]
    # Exit code 1, so the postmaster starts the worker again (after 5 s).
    restarted = wait_for(
        "a new worker's daemon",
        lambda: next((e for e in embedded.events("start") if e["ppid"] != start["ppid"]), None),
        timeout=20,
    )
    assert embedded.worker_pids() == [restarted["ppid"]]


def test_reload_with_changed_settings_restarts_the_daemon(embedded):
    embedded.start_worker()
    first = embedded.first_start()
    assert first["env"]["TIERDB_TEST_EXTRA"] is None
    try:
        embedded.cluster.psql(
            "ALTER SYSTEM SET tierdb.worker_env = 'TIERDB_TEST_EXTRA=reloaded'; SELECT pg_reload_conf();"
        )
        second = wait_for(
            "the daemon started with the new environment",
            lambda: next((e for e in embedded.events("start") if e["pid"] != first["pid"]), None),
        )
        assert second["env"]["TIERDB_TEST_EXTRA"] == "reloaded"
        assert first["pid"] in [e["pid"] for e in embedded.events("term")]
        assert not alive(first["pid"])
        # A reload that changes nothing the daemon depends on leaves it alone.
        embedded.cluster.psql("SELECT pg_reload_conf()")
        time.sleep(2)
        assert len(embedded.events("start")) == 2
        assert alive(second["pid"])
    finally:
        embedded.cluster.psql("ALTER SYSTEM RESET ALL; SELECT pg_reload_conf();")


def test_worker_off_starts_nothing(embedded):
    embedded.start(
        "shared_preload_libraries=tierdb",
        "tierdb.embedded_worker=off",
        f"tierdb.worker_command={embedded.script}",
    )
    time.sleep(3)
    assert embedded.events() == []
    assert embedded.worker_pids() == []
    assert embedded.cluster.query("SHOW tierdb.embedded_worker") == [("off",)]


def test_unknown_settings_are_reported_reserved_ones_kept(embedded):
    # SPEC §7's settings of features still to come are defined (test_settings.py);
    # any other tierdb.* name is reported, not silently kept.
    embedded.start("shared_preload_libraries=tierdb", "tierdb.mirrored_reads=hybrid", "tierdb.no_such_setting=1")
    log = embedded.log()
    assert 'invalid configuration parameter name "tierdb.no_such_setting", removing it' in log
    assert "tierdb.mirrored_reads" not in log
    assert embedded.cluster.query("SELECT current_setting('tierdb.no_such_setting', true) IS NULL") == [("t",)]
    assert embedded.cluster.query("SHOW tierdb.mirrored_reads") == [("hybrid",)]


def test_unrunnable_command_is_reported(embedded):
    embedded.start(
        "shared_preload_libraries=tierdb",
        "tierdb.embedded_worker=on",
        "tierdb.worker_command=/nonexistent/tierdb",
    )
    wait_for(
        "the exec failure in the server log",
        lambda: 'could not run "/nonexistent/tierdb": No such file or directory' in embedded.log(),
    )
    assert "Set tierdb.worker_command to the absolute path of the tierdb program" in embedded.log()
    # The supervisor stays up and retries.
    assert len(embedded.worker_pids()) == 1


@pytest.mark.parametrize("name,value,detail", [
    ("tierdb.worker_env", "TIERDB_WAREHOUSE=/x;no_equals_sign", 'Entry "no_equals_sign" is not NAME=VALUE.'),
    ("tierdb.worker_env", "1BAD=x", 'Entry "1BAD=x" is not NAME=VALUE.'),
    ("tierdb.worker_command", "bin/tierdb", "must be an absolute path or a program name"),
    ("tierdb.worker_database", "", "must name the database"),
])
def test_malformed_setting_refuses_to_start(embedded, name, value, detail):
    proc = embedded.start(
        "shared_preload_libraries=tierdb",
        "tierdb.embedded_worker=on",
        f"{name}='{value}'",
        expect_failure=True,
    )
    assert proc.returncode != 0
    log = embedded.log()
    assert f'invalid value for parameter "{name}"' in log
    assert detail in log
    # PostgreSQL alone would only warn and run the daemon with the default
    # (say, without TIERDB_WAREHOUSE: the wrong lake): the library refuses.
    assert f'FATAL:  invalid value for parameter "{name}" with tierdb.embedded_worker on' in log


def test_malformed_worker_env_only_warns_with_the_worker_off(embedded):
    embedded.start(
        "shared_preload_libraries=tierdb",
        "tierdb.embedded_worker=off",
        "tierdb.worker_env='no_equals_sign'",
    )
    assert 'invalid value for parameter "tierdb.worker_env"' in embedded.log()
    assert embedded.cluster.query("SELECT current_setting('tierdb.worker_env') = ''") == [("t",)]


def test_worker_runs_the_real_daemon(embedded, tierdb_bin):
    # The catalog the daemon needs, in a database of its own.
    embedded.start()
    embedded.cluster.psql("DROP DATABASE IF EXISTS tierdb_embedded")
    embedded.cluster.psql("CREATE DATABASE tierdb_embedded")
    embedded.cluster.psql("CREATE EXTENSION tierdb", db="tierdb_embedded")
    embedded.stop()
    lake = embedded.root / "lake"
    lake.mkdir(exist_ok=True)
    lake.chmod(0o777)

    embedded.start(
        "shared_preload_libraries=tierdb",
        "tierdb.embedded_worker=on",
        f"tierdb.worker_command={tierdb_bin}",
        "tierdb.worker_database=tierdb_embedded",
        f"tierdb.worker_env='TIERDB_WAREHOUSE={lake};TIERDB_CYCLE_INTERVAL_SECONDS=1'",
    )
    started = wait_for(
        "the daemon's start in the server log",
        lambda: re.search(rf'started "{re.escape(str(tierdb_bin))} run" with PID (\d+)', embedded.log()),
    )
    pid = int(started.group(1))
    # It reached its database over the socket the worker gave it.
    wait_for(
        "the daemon's session",
        lambda: embedded.cluster.query(
            "SELECT count(*) FROM pg_stat_activity"
            f" WHERE pid <> pg_backend_pid() AND datname = 'tierdb_embedded'"
            f" AND client_addr IS NULL"  # a Unix socket
        ) >= [("1",)],
    )
    time.sleep(3)  # a few cycles
    assert alive(pid)
    assert f"tierdb daemon with PID {pid} ended" not in embedded.log()
    embedded.stop()
    assert not alive(pid)
    # Not killed: it stopped on SIGTERM. (Its exit code is its own business:
    # the fast shutdown also ends its sessions, which it may report as a
    # failure if one was mid-query.)
    assert f"tierdb daemon with PID {pid} ended: child process exited with exit code" in embedded.log()
