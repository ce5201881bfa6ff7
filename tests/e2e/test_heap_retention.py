"""Mirrored tables with heap retention (issue 19 §3; docs/mirrored.md "Heap
retention", cli/tiering.c tdb_retire_heap_window): `register --mode mirrored
--heap-retention N` keeps only the partitions within N of the newest tier key
in the heap. Older ones are sealed, the pump brings the mirror past the seal,
T rises over them and they are dropped; reads and writes below T then work as
on a tiered table (the lake at S, the delta, the fold), while the pump goes
on mirroring the heap above T.

The differential: `w` and an untiered copy `w_copy` get the same rows and the
same statements (production defaults: transparent reads and writes on), and
every read of `w` must equal the same read of `w_copy`; once the daemon has
folded and pumped, the lake at S alone must hold exactly `w_copy`'s rows.
"""

from __future__ import annotations

import math

import pytest

from test_mirrored import COLUMNS, make_table
from test_tiering import run_once

QUERIES = [
    f"SELECT {COLUMNS} FROM {{t}} ORDER BY id, ts",
    "SELECT date_trunc('day', ts), count(*), sum(amount) FROM {t} GROUP BY 1 ORDER BY 1",
    "SELECT id, note FROM {t} WHERE ts < '2024-01-05' AND id % 3 = 0 ORDER BY id",
]


def comparable(rows):
    return [tuple("NaN" if v == "NaN" or (isinstance(v, float) and math.isnan(v)) else v for v in r) for r in rows]


def assert_same(db):
    for q in QUERIES:
        got, want = db.query(q.format(t="w")), db.query(q.format(t="w_copy"))
        assert comparable(got) == comparable(want), q


def lake_equals_copy(db):
    s = db.query("SELECT lake_snapshot_id FROM tierdb.cutline")[0][0]
    lake = db.query(f"SELECT {COLUMNS} FROM tierdb.lake_scan(NULL::w, {s}) ORDER BY id, ts")
    assert comparable(lake) == comparable(db.query(f"SELECT {COLUMNS} FROM w_copy ORDER BY id, ts"))


def both(db, sql):
    db.psql(sql.format(t="w") + ";" + sql.format(t="w_copy"))


@pytest.fixture
def window(db, tierdb):
    """`w`: 10 daily partitions from 2024-01-01, mirrored keeping 3 days; `w_copy` the same rows, untiered."""
    make_table(db, partitioned=True)
    db.psql("ALTER TABLE m RENAME TO w; CREATE TABLE w_copy AS SELECT * FROM w;"
            " ALTER TABLE w_copy ADD PRIMARY KEY (id, ts)")
    proc = tierdb(["register", "--table", "public.w", "--pk", "id", "--tier-key", "ts", "--mode", "mirrored",
                   "--heap-retention", "3d"])
    assert proc.returncode == 0 and "the heap keeps the partitions within 3d" in proc.stdout, proc.stdout + proc.stderr
    return db


def cut(db):
    return int(db.query("SELECT tier_key_hi FROM tierdb.cutline")[0][0])


def heap_partitions(db):
    """The table's own day partitions m_0 .. m_9 still in the heap (premake adds later ones)."""
    names = {r[0] for r in db.query("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                                    " WHERE i.inhparent = 'w'::regclass")}
    return [f"m_{d}" for d in range(10) if f"m_{d}" in names]


def test_old_partitions_leave_the_heap_and_reads_and_writes_stay_exact(window, tierdb):
    db = window
    t0 = cut(db)
    proc = run_once(tierdb, "0")
    assert "heap retention: operation" in proc.stderr, proc.stderr
    # rows run to 2024-01-10 00:50: the days wholly before 2024-01-07 00:50 leave the heap
    assert cut(db) > t0
    assert heap_partitions(db) == ["m_6", "m_7", "m_8", "m_9"], heap_partitions(db)
    assert_same(db)
    lake_equals_copy(db)

    # writes below T go to the delta, above it to the heap; the same on the copy
    both(db, "UPDATE {t} SET note = 'cold update' WHERE ts < '2024-01-04' AND id % 7 = 0")
    both(db, "DELETE FROM {t} WHERE ts < '2024-01-03' AND id % 11 = 0")
    both(db, "INSERT INTO {t} (id, ts, note) SELECT g, '2024-01-02 12:00+00', 'late history'"
             " FROM generate_series(900001, 900020) g")
    both(db, "UPDATE {t} SET ts = ts - interval '5 days', note = 'moved down' WHERE ts >= '2024-01-08' AND id % 13 = 0")
    both(db, "UPDATE {t} SET note = 'hot update' WHERE ts >= '2024-01-08' AND id % 5 = 0")
    # cold rows brought into the spill partition and left as they were: the pump must not take them for deletes
    both(db, "SELECT count(*) FROM (SELECT * FROM {t} WHERE ts < '2024-01-03' AND id % 17 = 0 FOR UPDATE) l")
    both(db, "UPDATE {t} SET note = note WHERE ts < '2024-01-04' AND id % 19 = 0")
    assert int(db.query("SELECT count(*) FROM tierdb.delta")[0][0]) > 0
    assert_same(db)

    # the fold takes the delta into the lake, the pump the heap's changes
    run_once(tierdb, "0")
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "0"
    assert_same(db)
    lake_equals_copy(db)


def test_verify_compares_the_window_with_the_lake_above_t(window, tierdb, tierdb_bin, lake):
    import subprocess
    from conftest import clean_env
    db = window
    run_once(tierdb, "0")
    db.psql("UPDATE w SET note = 'pending' WHERE id % 3 = 0 AND ts >= '2024-01-08'")
    env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake)}
    verify = subprocess.Popen([str(tierdb_bin), "verify", "--table", "public.w"], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # daemon cycles until the audit ends: a pump that ran before the audit read its position would not do
    while verify.poll() is None:
        run_once(tierdb, "0")
    out, errors = verify.communicate(timeout=120)
    heap_rows = db.query("SELECT count(*) FROM w_copy"
                         " WHERE tierdb.canonical_tier_key(ts) >= (SELECT tier_key_hi FROM tierdb.cutline)")[0][0]
    assert verify.returncode == 0 and f"the lake at S holds the heap's {heap_rows} rows at or above T" in out, \
        out + errors


@pytest.mark.parametrize("point", ["heap-retention-after-seal", "heap-retention-after-publish", "tiering-mid-drop"])
def test_a_kill_at_each_point_of_the_retirement_loses_nothing(window, tierdb, point):
    db = window
    proc = tierdb(["run", "--once"], env={"TIERDB_FAULT": point, "TIERDB_TIERING_LAG": "0"})
    assert proc.returncode != 0, proc.stderr
    assert_same(db)   # the heap and the lake serve every row wherever the run stopped
    # sealed partitions refuse writes until the run is settled, as during tiering: the hot days take them
    both(db, "UPDATE {t} SET note = 'after the kill' WHERE id % 10 = 0 AND ts >= '2024-01-08'")
    run_once(tierdb, "0")
    both(db, "UPDATE {t} SET note = 'once settled' WHERE id % 10 = 1")
    run_once(tierdb, "0")
    assert heap_partitions(db) == ["m_6", "m_7", "m_8", "m_9"]
    assert_same(db)
    lake_equals_copy(db)
    assert db.query("SELECT count(*) FROM tierdb.op_log WHERE phase NOT IN ('done', 'aborted')")[0][0] == "0"


def test_register_refusals(db, tierdb):
    make_table(db)   # not partitioned
    proc = tierdb(["register", "--table", "public.m", "--pk", "id", "--tier-key", "ts", "--mode", "mirrored",
                   "--heap-retention", "3d"])
    assert proc.returncode != 0 and "no range partitions" in proc.stderr, proc.stderr
    proc = tierdb(["register", "--table", "public.m", "--pk", "id", "--tier-key", "ts", "--heap-retention", "3d"])
    assert proc.returncode != 0 and "needs --mode mirrored" in proc.stderr, proc.stderr
