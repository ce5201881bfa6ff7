"""Fixtures for the end-to-end tests: a private PostgreSQL 15 cluster with the
installed tierdb extension, fresh databases, lake directories, and the
`tierdb` command pointed at them.

  pg      (session)  the cluster: host, port, user, dsn, env, psql(), query(), error()
  db      (function) a fresh database with CREATE EXTENSION tierdb, dropped after;
                     name, dsn, env, psql(), query(), error() bound to it.
                     A test (or module, pytestmark) marked `heap_and_lake_apart`
                     gets tierdb.transparent_reads = off in the sessions of
                     these helpers: it looks at the heap and the lake separately
  lake    (function) a fresh warehouse directory, readable by the server's backends;
                     with TIERDB_E2E_LAKE=s3, a fresh prefix in an S3 bucket
                     (an S3Location; lake_files.py reads either)
  tierdb  (function) tierdb(args, env=None) runs build/tierdb against `db` with
                     TIERDB_WAREHOUSE=<lake> and returns the CompletedProcess

The cluster is started by scripts/pg-cluster.sh (as the `postgres` OS user
when the tests run as root), on a free port of 127.0.0.1 with trust
authentication, and stopped at the end of the session whatever the outcome.
The extension must be installed first (`make install-extension`); build/tierdb
must be built (`make`). TIERDB_BUILD_DIR points the tests at another build;
TIERDB_E2E_KEEP=1 keeps the cluster directory and lakes for a post-mortem.

The cluster and database helpers live in pg_cluster.py.

TIERDB_E2E_LAKE=s3 (`make test-e2e-s3`) runs the suite with its lakes on S3:
the session starts S3Proxy (scripts/s3-server.sh) and puts its TIERDB_S3_*
variables into this process's environment before the cluster starts, so the
server's backends, every daemon and lake_files.py reach the same store.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

import lake_files
from pg_cluster import (
    BUILD_DIR, PG_BINDIR, PG_CLUSTER, REPO_ROOT, TIERDB_TIMEOUT, Cluster, Database,
    clean_env, free_port,
)


def _run_cluster_script(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(PG_CLUSTER), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**clean_env(), "PG_BINDIR": str(PG_BINDIR)},
    )


@pytest.fixture(scope="session")
def e2e_root():
    """A session directory, world-readable (mode 0755) so the server running
    as `postgres` can reach the lakes below it; removed at the end unless
    TIERDB_E2E_KEEP is set."""
    root = Path(tempfile.mkdtemp(prefix="tierdb-e2e-"))
    root.chmod(0o755)
    yield root
    if os.environ.get("TIERDB_E2E_KEEP"):
        print(f"\ntests/e2e: kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def s3_store(e2e_root):
    """With TIERDB_E2E_LAKE=s3: a private S3Proxy whose TIERDB_S3_* variables
    are set in this process (and so in the cluster's and every daemon's
    environment) for the session. Nothing otherwise."""
    if not lake_files.ON_S3:
        yield None
        return
    directory = e2e_root / "s3"
    script = REPO_ROOT / "scripts" / "s3-server.sh"
    subprocess.run([str(script), "start", str(directory)], check=True, stdout=subprocess.DEVNULL,
                   stdin=subprocess.DEVNULL, timeout=120)
    saved = dict(os.environ)
    for line in (directory / "env").read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        os.environ[name] = value
    try:
        yield directory
    finally:
        os.environ.clear()
        os.environ.update(saved)
        subprocess.run([str(script), "stop", str(directory)], check=False, timeout=60)


@pytest.fixture(scope="session")
def pg(e2e_root, s3_store):
    if not (PG_BINDIR / "pg_ctl").exists():
        pytest.fail(f"{PG_BINDIR}/pg_ctl is missing: run scripts/install-deps.sh (postgresql-15)", pytrace=False)
    directory = e2e_root / "cluster"
    # Another process may take the free port before the server binds it:
    # retry with a new one.
    failures = []
    for _ in range(3):
        port = free_port()
        # The library is preloaded, as in production, and every other setting
        # is the default a user gets (transparent reads on, parallel query
        # on): a test that needs something else sets it for itself.
        # prepared transactions: test_direct checks that one with a direct table's cold writes is refused
        proc = _run_cluster_script("start", directory, port, "-c", "shared_preload_libraries=tierdb",
                                   "-c", "max_prepared_transactions=4")
        if proc.returncode == 0:
            break
        failures.append(f"port {port}:\n{proc.stderr}")
    else:
        pytest.fail("could not start the test cluster:\n" + "\n".join(failures), pytrace=False)
    cluster = Cluster(directory, port)
    try:
        yield cluster
    finally:
        proc = _run_cluster_script("stop", directory)
        if proc.returncode != 0:
            print(f"\ntests/e2e: stopping the cluster failed:\n{proc.stderr}")


def _extension_installed() -> bool:
    proc = subprocess.run(
        [str(PG_BINDIR / "pg_config"), "--sharedir"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        return True  # let CREATE EXTENSION say what is wrong
    return (Path(proc.stdout.strip()) / "extension" / "tierdb.control").exists()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "heap_and_lake_apart: the test's psql sessions run with tierdb.transparent_reads = off")


# What a test marked heap_and_lake_apart sets in its sessions.
HEAP_AND_LAKE_APART = {"tierdb.transparent_reads": "off"}


@pytest.fixture
def db(pg, request):
    if not _extension_installed():
        pytest.fail("the tierdb extension is not installed: run `make install-extension` first", pytrace=False)
    name = "t_" + uuid.uuid4().hex[:12]
    pg.psql(f'CREATE DATABASE "{name}"')
    apart = request.node.get_closest_marker("heap_and_lake_apart") is not None
    database = Database(pg, name, HEAP_AND_LAKE_APART if apart else None)
    try:
        database.psql("CREATE EXTENSION tierdb")
        yield database
    finally:
        # FORCE: a daemon a test left behind must not keep the database alive
        pg.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def lake(e2e_root, s3_store):
    """A fresh, empty warehouse directory (mode 0755 on the whole path), or
    a fresh S3 prefix with TIERDB_E2E_LAKE=s3."""
    if lake_files.ON_S3:
        return lake_files.new_warehouse()
    lakes = e2e_root / "lakes"
    lakes.mkdir(mode=0o755, exist_ok=True)
    lakes.chmod(0o755)
    path = Path(tempfile.mkdtemp(prefix="lake-", dir=lakes))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="session")
def tierdb_bin() -> Path:
    path = BUILD_DIR / "tierdb"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is missing: run `make` in {REPO_ROOT} first", pytrace=False)
    return path


@pytest.fixture
def tierdb(tierdb_bin, db, lake):
    """tierdb(args, env=None, timeout=...) runs build/tierdb with libpq's PG*
    variables pointing at `db` and TIERDB_WAREHOUSE=<lake>; `env` adds or
    overrides variables. args is a list (or a shell-quoted string)."""

    def run(args, env=None, timeout=TIERDB_TIMEOUT, input=None) -> subprocess.CompletedProcess:
        if isinstance(args, str):
            args = shlex.split(args)
        full_env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), **(env or {})}
        return subprocess.run(
            [str(tierdb_bin), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
        )

    return run


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failing test, append the tail of the server log to its report:
    the server's side of the failure is usually there."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and "pg" in item.fixturenames:
        cluster = item.funcargs.get("pg")
        if isinstance(cluster, Cluster):
            report.sections.append(("postgres.log (tail)", cluster.log_tail()))
