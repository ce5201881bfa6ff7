"""The private PostgreSQL cluster of the end-to-end tests, and psql-based
helpers to reach it (conftest.py's `pg` and `db` fixtures are instances of
Cluster and Database). SQL goes through the `psql` binary, so the tests need
no Python driver.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TIERDB_BUILD_DIR", REPO_ROOT / "build"))
PG_CLUSTER = REPO_ROOT / "scripts" / "pg-cluster.sh"
PG_BINDIR = Path(os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin"))
PG_USER = "postgres"
PSQL_TIMEOUT = 120  # seconds; every statement of these tests takes far less
TIERDB_TIMEOUT = 300

# psql's unaligned output with separators that never occur in test values, so
# rows and fields split unambiguously and NULL differs from ''.
FIELD_SEP = "\x1f"
RECORD_SEP = "\x1e"
NULL_MARK = "\x1a"

# Variables that would point psql or tierdb at another server than ours.
_FOREIGN_ENV = (
    "TIERDB_PG_URL", "PGSERVICE", "PGSERVICEFILE", "PGHOSTADDR", "PGPASSWORD",
    "PGPASSFILE", "PGOPTIONS", "PGSSLMODE", "PGCONNECT_TIMEOUT",
)


class PsqlError(AssertionError):
    """A statement failed; the message holds psql's stderr."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env() -> dict:
    """This process's environment without what would redirect a client."""
    return {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}


def session_options(settings) -> dict:
    """libpq's PGOPTIONS setting `settings` ({name: value}) for a session."""
    if not settings:
        return {}
    return {"PGOPTIONS": " ".join(f"-c {name}={value}" for name, value in settings.items())}


class Cluster:
    """A running private cluster, and psql helpers that reach it."""

    def __init__(self, directory: Path, port: int):
        self.directory = directory
        self.host = "127.0.0.1"
        self.port = port
        self.user = PG_USER
        self.dsn = f"postgres://{self.user}@{self.host}:{self.port}/postgres"
        self.env = {
            "PGHOST": self.host,
            "PGPORT": str(self.port),
            "PGUSER": self.user,
            "PGDATABASE": "postgres",
        }
        self.log = directory / "postgres.log"

    def dsn_for(self, db) -> str:
        return f"postgres://{self.user}@{self.host}:{self.port}/{db}"

    def env_for(self, db) -> dict:
        return {**self.env, "PGDATABASE": str(db)}

    def run_psql(self, sql: str, db="postgres", settings=None) -> subprocess.CompletedProcess:
        """Runs `sql` (any number of statements, stopping at the first error)
        and returns psql's CompletedProcess with unaligned, tuples-only
        output. Errors are printed verbose: they carry the SQLSTATE.
        `settings` ({name: value}) are set for the session (PGOPTIONS)."""
        return subprocess.run(
            [
                str(PG_BINDIR / "psql"), "-X", "-q", "-A", "-t",
                "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
                "-F", FIELD_SEP, "-R", RECORD_SEP, "-P", f"null={NULL_MARK}",
                "-h", self.host, "-p", str(self.port), "-U", self.user,
                "-d", str(db), "-f", "-",
            ],
            input=sql,
            capture_output=True,
            text=True,
            timeout=PSQL_TIMEOUT,
            env={**clean_env(), **self.env, **session_options(settings)},
        )

    def psql(self, sql: str, db="postgres", settings=None) -> str:
        """Runs `sql` and returns its raw output; raises PsqlError on failure."""
        proc = self.run_psql(sql, db, settings)
        if proc.returncode != 0:
            raise PsqlError(f"psql on {db} failed ({proc.returncode}):\n{sql}\n{proc.stderr}")
        return proc.stdout

    def query(self, sql: str, db="postgres", settings=None) -> list:
        """The rows `sql` prints (normally one SELECT, possibly after
        statements that print nothing), as tuples of str: values in their
        Postgres text form, None for NULL."""
        out = self.psql(sql, db, settings).rstrip("\n")
        if out == "":
            return []
        return [
            tuple(None if f == NULL_MARK else f for f in record.split(FIELD_SEP))
            for record in out.split(RECORD_SEP)
        ]

    def error(self, sql: str, db="postgres", settings=None) -> str:
        """psql's stderr for `sql`, which must fail (verbose: the first
        line holds the SQLSTATE, e.g. 'ERROR:  23514: new row ...')."""
        proc = self.run_psql(sql, db, settings)
        if proc.returncode == 0:
            raise AssertionError(f"expected an error from:\n{sql}\nbut it succeeded:\n{proc.stdout}")
        return proc.stderr

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError as e:
            return f"(no server log: {e})"


class Database:
    """One database of the cluster, with the cluster's helpers bound to it.
    str(db) is its name, so `pg.psql(sql, db=db)` works too. `settings`
    ({name: value}) hold for every session of these helpers (not for the
    tierdb command, which runs with the server's settings)."""

    def __init__(self, cluster: Cluster, name: str, settings=None):
        self.cluster = cluster
        self.name = name
        self.settings = dict(settings or {})
        self.dsn = cluster.dsn_for(name)
        self.env = cluster.env_for(name)

    def __str__(self) -> str:
        return self.name

    def run_psql(self, sql: str) -> subprocess.CompletedProcess:
        return self.cluster.run_psql(sql, self.name, self.settings)

    def psql(self, sql: str) -> str:
        return self.cluster.psql(sql, self.name, self.settings)

    def query(self, sql: str) -> list:
        return self.cluster.query(sql, self.name, self.settings)

    def error(self, sql: str) -> str:
        return self.cluster.error(sql, self.name, self.settings)
