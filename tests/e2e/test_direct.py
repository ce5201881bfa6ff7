"""Direct mode, the parts that exist (issue 18 §3; docs/direct.md):
`register --mode direct` registers a range-partitioned table whose rows below
the cut-line live in the lake alone, with no delta; the daemon tiers it as a
tiered table; reads split at T like a tiered table's, and `verify` audits it.
Its cold rows change only by a lake commit, which neither SQL nor Spark can
make yet: every write path that would reach them refuses, naming the reason,
and changes nothing.
"""

from __future__ import annotations

import pytest

from test_tiering import SESSION, make_events, run_once
from test_transparent_inserts import both, same_tables
from test_transparent_reads import QUERIES
from test_transparent_updates import same


@pytest.fixture
def direct(db, tierdb):
    """events (10 daily partitions, 3000 rows) registered --mode direct, 2024-01-01..07 tiered; `plain`, a copy."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "direct"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "2d")
    return db


def heap_count(db):
    return int(db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM events")[0][0])


def test_direct_tables_tier_and_read_both_tiers(direct, tierdb):
    db = direct
    assert db.query("SELECT mode, tierdb.spill_partition('events') IS NULL FROM tierdb.tables") == [("direct", "t")]
    assert heap_count(db) == 900
    for sql in QUERIES:
        same(db, sql)
    same_tables(db)
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]
    proc = tierdb(["verify", "--table", "public.events"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = tierdb(["status"])
    assert proc.returncode == 0 and "direct" in proc.stdout, proc.stdout
    # hot rows are written as on a plain table
    same(db, "UPDATE {t} SET v = 'hot' WHERE id % 100 = 0 AND ts >= '2024-01-08' RETURNING id")
    same(db, "INSERT INTO {t} VALUES (5000, '2024-01-09 12:00', 'new', 1) RETURNING id")
    same_tables(db)


def test_cold_writes_are_refused_naming_the_reason(direct, tierdb):
    db = direct
    for sql in ["UPDATE events SET v = 'x' WHERE id = 3",
                "DELETE FROM events WHERE ts < '2024-01-02'",
                "INSERT INTO events VALUES (9000, '2024-01-02', 'cold', 1)",
                "BEGIN; SELECT * FROM events WHERE id = 3 FOR UPDATE"]:
        err = db.error(SESSION + sql)
        assert '"public.events" is a direct table' in err and "lake commit" in err, (sql, err)
    err = db.error("SELECT tierdb_upsert('events', '{\"id\": 3, \"ts\": \"2024-01-01T00:14:24+00:00\"}')")
    assert "direct" in err, err
    err = db.error("SELECT tierdb_enable_transparent_writes('events')")
    assert "direct" in err, err
    err = db.error(SESSION + "COPY events FROM STDIN;\n9001\t2024-01-02 00:00:00+00\tcold\t1\n\\.\n")
    assert "is a direct table" in err, err
    # bounded to the heap, a locking read works
    got, want = both(db, "BEGIN; SELECT count(*) FROM (SELECT * FROM {t} WHERE ts >= '2024-01-08' FOR UPDATE) x;"
                         " COMMIT")
    assert got == want
    same_tables(db)


def test_register_checks_the_mode(db, tierdb):
    make_events(db)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "direct",
                   "--keep-heap"])
    assert proc.returncode != 0 and "--keep-heap is not supported with --mode direct" in proc.stderr, proc.stderr
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "mirrored"])
    assert proc.returncode != 0 and "mirrored is not supported yet" in proc.stderr, proc.stderr
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "direct"])
    assert proc.returncode == 0 and "registered public.events (direct)" in proc.stdout, proc.stdout + proc.stderr
    # registered again the same way: nothing to do; with another mode: refused, naming the difference
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode", "direct"])
    assert proc.returncode == 0, proc.stderr
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode != 0 and "--mode was direct, now tiered" in proc.stderr, proc.stderr
