"""Transparent reads under parallel query, row-level security, views and
column grants (issue 16, items 2, 9, 11, 14): differential tests against
`plain`, an untiered copy of the tiered table `big` with the same rows, the
same grants and the same policies.

The cluster runs with parallel query on; the tests turn transparent reads
on for their databases (production's default) and force parallel plans
where a small table would not get one.
"""

from __future__ import annotations

import uuid

import pytest

from test_tiering import cutline, run_once

ROWS = 300_000
WIDTH = 50_000
FORCE_PARALLEL = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
                  " SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;\n")


def same(db, sql, prefix="", **fmt):
    """Runs sql over big and over plain; the rows must be equal (sorted)."""
    got = sorted(db.query(prefix + sql.format(t="big", **fmt)))
    want = sorted(db.query(prefix + sql.format(t="plain", **fmt)))
    assert got == want, f"{sql}\n  big:   {got[:5]}\n  plain: {want[:5]}"
    return got


@pytest.fixture
def tiered(db, tierdb):
    """big: 6 partitions of 50,000 ids, 300,000 rows, the first three in the
    lake (T = 150000); plain: an untiered copy."""
    db.psql(
        "CREATE TABLE big (id bigint NOT NULL, k bigint NOT NULL, g int, v text, amount numeric(12,2))"
        " PARTITION BY RANGE (k);\n"
        "DO $$ BEGIN FOR p IN 0..5 LOOP"
        f"  EXECUTE format('CREATE TABLE %I PARTITION OF big FOR VALUES FROM (%s) TO (%s)',"
        f"    'big_' || p, p * {WIDTH}, (p + 1) * {WIDTH});"
        " END LOOP; END $$;\n"
        f"INSERT INTO big SELECT i, i, i % 97, CASE WHEN i % 11 = 0 THEN NULL ELSE 'v' || (i % 1000) END,"
        f" CASE WHEN i % 13 = 0 THEN NULL ELSE (i % 100000) / 100.0 END FROM generate_series(0, {ROWS - 1}) i;\n"
        "CREATE TABLE plain AS SELECT * FROM big;\n"
        "ANALYZE big; ANALYZE plain;\n"
    )
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    proc = tierdb(["register", "--table", "public.big", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, str(2 * WIDTH))
    assert cutline(db, "big")["T"] == 3 * WIDTH
    return db


def test_parallel_plans_read_both_tiers_once(tiered):
    db = tiered
    for sql in ["SELECT count(*), sum(id), sum(amount), count(v) FROM {t}",
                "SELECT g, count(*), sum(amount) FROM {t} GROUP BY g"]:
        same(db, sql, FORCE_PARALLEL)
        same(db, sql)
