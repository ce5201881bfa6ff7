"""Conditions pushed into the cold scan on every column type (issue 21,
"pruning on every type"): they must prune lake files by their statistics,
and a tiered table must still answer exactly as an untiered copy.

`m` holds ten days of rows, the first seven in the lake (one data file per
day), with columns of each type the cold scan pushes comparisons on:
double precision, real, numeric(12,3), uuid, text, varchar, time, boolean,
bytea. Every value but the boolean rises with the day, so a condition on
one column selects whole days and the files of the others are pruned. The
float columns hold both zeros (+0 on day 0, -0 on day 1: equal in
Postgres, ordered apart by Iceberg) and a NaN (day 2: equal to itself and
above every number in Postgres); the text columns mix 'a...' days and
'B...' days, which bytes and linguistic collations order apart.

`plain` is an untiered copy; each condition runs on both, with the pushdown
on and off (tierdb.enable_cold_pushdown), and the rows must match.
"""

from __future__ import annotations

import json

import pytest

from test_tiering import SESSION, run_once

DAYS, COLD_DAYS, PER_DAY = 10, 7, 100

MAKE = SESSION + f"""
CREATE TABLE m (id bigint NOT NULL, ts timestamptz NOT NULL, f8 double precision, f4 real,
                n numeric(12,3), u uuid, s text, v varchar(20), tm time, b boolean, by bytea,
                k integer, sm smallint, ev text,
                PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts);
DO $$ BEGIN FOR d IN 0..{DAYS - 1} LOOP
  EXECUTE format('CREATE TABLE %I PARTITION OF m FOR VALUES FROM (%L) TO (%L)',
    'm_' || d, (date '2024-01-01' + d)::timestamptz, (date '2024-01-01' + d + 1)::timestamptz);
END LOOP; END $$;
INSERT INTO m
SELECT d * {PER_DAY} + i + 1, timestamptz '2024-01-01 00:00:00+00' + d * interval '1 day' + i * interval '1 minute',
       f, f::real,
       (d * 1000 + i * 0.125)::numeric(12,3),
       (lpad(to_hex(d), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid,
       t, t,
       make_time(d, i % 60, 0),
       d % 3 = 0,
       decode(lpad(to_hex(d * 256 + i), 8, '0'), 'hex'),
       CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7 % 23) - 11 END, d, 'e' || (i % 5)
FROM generate_series(0, {DAYS - 1}) d, generate_series(0, {PER_DAY - 1}) i,
     LATERAL (SELECT CASE WHEN d = 1 AND i = 0 THEN '-0'::float8
                          WHEN d = 2 AND i = 50 THEN 'NaN'::float8
                          WHEN i = 7 THEN NULL
                          ELSE d * 1000 + i * 0.25 END AS f,
                     CASE WHEN d = 3 AND i = 99 THEN 'é3' WHEN d = 4 AND i = 99 THEN 'É4'
                          ELSE CASE WHEN d % 2 = 0 THEN 'a' ELSE 'B' END || d || '-' || lpad(i::text, 3, '0') END AS t) x;
CREATE TABLE plain AS SELECT * FROM m;
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
"""

# column -> constants compared with it (as SQL literals)
CONSTANTS = {
    "f8": ["0", "-0", "'NaN'", "'Infinity'", "'-Infinity'", "3000", "3024.75", "5500.5", "1e9"],
    "f4": ["0::real", "'-0'::real", "'NaN'::real", "3000::real", "5500.5::real"],
    "n": ["3000", "3012.125", "3012.1251", "5500.5", "'NaN'", "'Infinity'", "-1e30"],
    "u": ["'00000003-0000-4000-8000-000000000000'", "'00000005-0000-4000-8000-000000000063'"],
    "s": ["'B3-050'", "'a4'", "'B'", "'a'"],
    "v": ["'B3-050'", "'a4'"],
    "tm": ["'03:00'", "'05:59:00'"],
    "b": ["true", "false"],
    "by": ["'\\x00000350'", "'\\x0000060a'"],
}
OPS = ["<", "<=", "=", ">=", ">", "<>"]


@pytest.fixture
def m(db, tierdb):
    db.psql(MAKE)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    proc = tierdb(["register", "--table", "public.m", "--pk", "id,ts", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "2d")
    heap = db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM m")
    assert heap == [(str((DAYS - COLD_DAYS) * PER_DAY),)]
    return db


def ids(db, table, where, pushdown=True):
    session = SESSION + ("" if pushdown else "SET tierdb.enable_cold_pushdown = off;\n")
    return db.query(session + f"SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM {table} WHERE {where}")


def plan_nodes(db, sql, session=SESSION):
    """Every node of EXPLAIN (ANALYZE, FORMAT JSON) of sql, the top one first."""
    out = db.query(session + "EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
    nodes = []

    def walk(node):
        nodes.append(node)
        for child in node.get("Plans", []):
            walk(child)

    walk(json.loads(out[0][0])[0]["Plan"])
    return nodes


def custom_node(db, sql, provider, session=SESSION):
    """The one node of a custom scan provider in EXPLAIN ANALYZE of sql."""
    nodes = plan_nodes(db, sql, session)
    found = [n for n in nodes if n.get("Custom Plan Provider") == provider]
    assert len(found) == 1, nodes
    return found[0]


def cold_scan(db, where):
    """The cold scan node of EXPLAIN ANALYZE of the rows `where` selects."""
    return custom_node(db, f"SELECT id FROM m WHERE {where}", "TierDB Cold Scan")


def test_every_type_answers_as_the_untiered_copy(m):
    db = m
    conditions = [f"{col} {op} {c}" for col, consts in CONSTANTS.items() for c in consts for op in OPS]
    conditions += ["f8 IS NULL", "f8 IS NOT NULL", "f8 BETWEEN 1000 AND 2000.5", "n BETWEEN 2000 AND 4000",
                   "s BETWEEN 'B3' AND 'a5'", "v > 'B5' AND v < 'a6'", "s > 'z'", "s < 'é'", "s > 'Éa'"]
    for where in conditions:
        want = ids(db, "plain", where)
        assert ids(db, "m", where) == want, where
        assert ids(db, "m", where, pushdown=False) == want, where + " (pushdown off)"


def test_linguistic_and_nondeterministic_collations_are_not_compared_as_bytes(m):
    """Bytes order 'B...' before 'a...'; "und-x-icu" the other way round, and
    ci makes 'A0-000' equal to 'a0-000': neither may prune by byte bounds."""
    db = m
    for where in ["s < 'B' COLLATE \"und-x-icu\"", "s >= 'b' COLLATE \"und-x-icu\"",
                  "v < 'B' COLLATE \"und-x-icu\"", "s > 'A9' COLLATE \"und-x-icu\"",
                  "s = 'A0-000' COLLATE ci", "s = 'b3-010' COLLATE ci", "v = 'A4-099' COLLATE ci",
                  "s < 'B' COLLATE \"C\"", "s = 'a0-000' COLLATE \"C\""]:
        want = ids(db, "plain", where)
        assert want != [("",)], where  # each condition selects some rows
        assert ids(db, "m", where) == want, where


@pytest.mark.parametrize("where, cold_days_kept", [
    ("f8 >= 5000", 3), ("f8 < 1000", 2),  # day 2's NaN is above every number; day 1's -0 below 1000
    ("f4 > 5000::real", 3), ("n >= 5000", 2), ("n < 1000.5", 2),
    ("u >= '00000005-0000-4000-8000-000000000000'", 2), ("s = 'B3-010'", 1), ("v >= 'a4' AND v < 'a5'", 2),  # day 3's 'é3' is above 'a4' too
    ("v >= 'a4' COLLATE \"C\" AND v < 'a5' COLLATE \"POSIX\"", 2), ("s < 'B3' COLLATE \"C.utf8\"", 1),
    ("s > 'a5' COLLATE \"C\"", 3), ("tm >= '05:00'", 2), ("by < '\\x00000200'", 2),
    ("f8 > 2100", 5),
    ("f8 = 0", 2),  # +0 on day 0, -0 on day 1
])
def test_conditions_prune_lake_files_on_every_type(m, where, cold_days_kept):
    db = m
    node = cold_scan(db, where)
    assert node["Lake Files"] == cold_days_kept, (where, {k: v for k, v in node.items() if k != "Plans"})
    assert node["Lake Files Pruned"] == COLD_DAYS - cold_days_kept, (where, node)
    assert ids(db, "m", where) == ids(db, "plain", where)


def test_pushdown_off_prunes_nothing_and_reads_every_row(m):
    db = m
    node = cold_scan(db, "f8 >= 5000")
    assert node["Conditions Pushed to the Lake"] == 1 and node["Lake Files Pruned"] == 4
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.enable_cold_pushdown = off')
    node = cold_scan(db, "f8 >= 5000")
    assert node["Conditions Pushed to the Lake"] == 0 and node["Lake Files Pruned"] == 0
    assert node["Rows Removed by Filter"] == (COLD_DAYS - 2) * PER_DAY - 1 + 2  # days 0-4 but the NaN; NULLs


def test_generic_plans_push_parameters_of_every_type(m):
    db = m
    for col, typ, value in [("f8", "float8", "3012.5"), ("n", "numeric", "3012.125"), ("u", "uuid",
                            "00000003-0000-4000-8000-00000000000a"), ("s", "text", "B3-010"), ("tm", "time", "03:10")]:
        got = db.query(SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                       f"PREPARE q({typ}) AS SELECT id FROM m WHERE {col} = $1;\n"
                       f"EXECUTE q('{value}');")
        want = db.query(SESSION + f"SELECT id FROM plain WHERE {col} = '{value}'")
        assert got == want and want, (col, got, want)
