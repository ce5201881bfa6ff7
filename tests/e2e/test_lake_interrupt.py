"""Cancelling cold scans (issue 17 §1, the lake library's interrupt check).

The lake library calls the backend's interrupt check in its long loops
(extension/src/lake_env.c); a pending cancel makes the library call return
TL_ERR_INTERRUPTED, and the extension then runs CHECK_FOR_INTERRUPTS() so
Postgres reports the real cause. Whichever way a cancel lands (inside the
library or between rows), the statement must fail with SQLSTATE 57014 and
Postgres' own message, and the backend must go on working. No assertion is
about time: only about the error and the session afterwards.
"""

from __future__ import annotations

import subprocess
import time

from pg_cluster import PG_BINDIR, clean_env
from test_lake_scan import big_tiered  # noqa: F401 (a fixture)



def long_scan(snapshot) -> str:
    # Many scans in one statement, each reopening the lake (the argument
    # depends on g): plans and reads manifests and Parquet over and over.
    return (
        "SELECT count(*) FROM generate_series(1, 100000) g,"
        f" LATERAL tierdb.lake_scan(NULL::big, {snapshot} + 0 * g) r"
    )


def psql_session(db, sql: str) -> subprocess.Popen:
    """A psql session running `sql`, going on after errors, verbose errors (SQLSTATE)."""
    cluster = db.cluster
    session = subprocess.Popen(
        [
            str(PG_BINDIR / "psql"), "-X", "-q", "-A", "-t",
            "-v", "ON_ERROR_STOP=0", "-v", "VERBOSITY=verbose",
            "-h", cluster.host, "-p", str(cluster.port), "-U", cluster.user, "-d", str(db), "-f", "-",
        ],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**clean_env(), **cluster.env_for(db)},
    )
    session.stdin.write(sql)
    session.stdin.close()
    return session


def test_statement_timeout_cancels_a_cold_scan(big_tiered):  # noqa: F811
    db, snapshot = big_tiered
    sql = (
        "\\set ON_ERROR_STOP off\n"
        "SET statement_timeout = '50ms';\n"
        # Scans long enough on any machine (a single 200000-row scan could beat 50 ms on a fast one).
        + f"{long_scan(snapshot)};\n" * 6
        + "RESET statement_timeout;\n"
        f"SELECT count(*) FROM tierdb.lake_scan(NULL::big, {snapshot});\n"
    )
    proc = db.run_psql(sql)
    # Six statements, all cancelled with Postgres' own error and SQLSTATE.
    assert proc.stderr.count("57014: canceling statement due to statement timeout") == 6, proc.stderr
    assert "FATAL" not in proc.stderr and "server closed" not in proc.stderr, proc.stderr
    assert "interrupted" not in proc.stderr, proc.stderr  # never the library's own word
    # The same backend goes on: the last scan reads every row.
    assert proc.stdout.split() == ["200000"], proc.stdout


def test_pg_cancel_backend_cancels_a_cold_scan(big_tiered):  # noqa: F811
    db, snapshot = big_tiered
    marker = "tierdb_interrupt_probe"
    session = psql_session(
        db,
        f"SELECT '{marker}', count(*) FROM ({long_scan(snapshot)}) q;\n"
        f"SELECT count(*) FROM tierdb.lake_scan(NULL::big, {snapshot});\n",
    )
    try:
        # Wait until the scan is running, then cancel it.
        pid = None
        for _ in range(600):
            rows = db.query(
                "SELECT pid FROM pg_stat_activity WHERE state = 'active'"
                f" AND query LIKE '%{marker}%' AND pid <> pg_backend_pid()"
            )
            if rows:
                pid = rows[0][0]
                break
            if session.poll() is not None:
                break
            time.sleep(0.1)
        assert pid is not None, "the scan never showed up in pg_stat_activity"
        assert db.query(f"SELECT pg_cancel_backend({pid})") == [("t",)]
        out = session.stdout.read()
        err = session.stderr.read()
        session.wait(timeout=120)
    finally:
        if session.poll() is None:
            session.kill()
            session.communicate()
    assert "57014: canceling statement due to user request" in err, err
    assert "FATAL" not in err and "server closed" not in err, err
    # The cancelled statement printed nothing; the session's next scan reads every row.
    assert out.split() == ["200000"], out
