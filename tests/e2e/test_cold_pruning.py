"""Conditions pushed into the cold scan on every column type (issue 21,
"pruning on every type"): they must prune lake files by their statistics,
and a tiered table must still answer exactly as an untiered copy.

`m` holds ten days of rows, the first seven in the lake (one data file per
day), with columns of each type the cold scan pushes comparisons on:
double precision, real, numeric(12,3), uuid, text, varchar, time, boolean,
bytea. Every value but the boolean rises with the day, so a condition on
one column selects whole days and the files of the others are pruned
(sm is the day itself; k, with nulls, repeats every day; z is null on even
days, so null counts prune). The
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
                k integer, sm smallint, ev text, z integer,
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
       CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 7 % 23) - 11 END, d, 'e' || (i % 5),
       CASE WHEN d % 2 = 1 THEN i END
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
    # IN lists, null tests (null counts prune) and ORs
    ("sm IN (1, 3)", 2), ("f8 IN (0)", 2), ("f8 IN ('-0')", 2),  # +0 on day 0, -0 on day 1
    ("f8 = ANY ('{NaN}'::float8[])", 1), ("f8 IN (3000, 5024.5)", 2), ("s IN ('B3-010', 'a4-020')", 2),
    ("ts IN ('2024-01-02 00:05:00+00', '2024-01-05 01:00:00+00')", 2), ("z IS NULL", 4), ("z IS NOT NULL", 3),
    ("sm = 1 OR s = 'a4-010'", 3),  # day 3's 'é3' is above 'a4-010' too
    ("f8 < 1000 OR f8 >= 6000", 4),  # day 2's NaN is above 6000
    ("(sm = 2 AND k = 0) OR (sm = 5 AND z IS NULL)", 1), ("sm IN (1, 2) OR z IS NULL", 5),
    ("(sm = 3 AND n = 3012.1251) OR sm = 5", 2),  # the AND prunes by sm alone
    ("k IN (0, 1)", 7), ("k IS NULL", 7),
    # negations: NOT pushed down to its comparisons, <> and NOT IN prune a file of one value
    ("NOT (f8 < 5000)", 3),  # f8 >= 5000: day 2's NaN is above every number
    ("NOT (sm <= 4 OR sm > 6)", 2), ("NOT (sm = 1) AND NOT (n < 4000)", 3), ("sm <> 3", 6),
    ("sm NOT IN (1, 2, 3)", 4), ("sm <> ALL ('{0,6}'::int[])", 5), ("NOT (sm IN (1, 2) OR z IS NULL)", 2),
    # LIKE 'prefix%': the bounds' first bytes; NOT LIKE where both bounds have the prefix
    ("s LIKE 'a4%'", 2),  # day 3 ('B3-000' to 'é3') spans 'a4' too
    ("s LIKE 'B3-01%'", 1), ("v LIKE 'a6-0%%'", 3), ("s LIKE 'a6-050'", 3),  # days 3 and 4 span 'a6' too
    ("s NOT LIKE 'a%'", 4),  # days 0, 2 and 6 hold 'a...' only
    ("s LIKE 'a4%' OR s LIKE 'B5%'", 3), ("NOT (s LIKE 'B%')", 5),  # days 1 and 5 hold 'B...' only
    # boolean columns (b is d % 3 = 0: days 0, 3 and 6)
    ("b", 3), ("NOT b", 4), ("b IS TRUE", 3), ("b IS NOT TRUE", 4), ("b IS FALSE", 4), ("b IS NOT FALSE", 3),
    ("(sm < 3) IS FALSE", 4), ("b IS UNKNOWN", 0),
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


# IN lists (`= ANY`), null tests and ORs: each pushed where the lake can
# answer exactly, and the answers always the untiered copy's.

# column -> IN lists (the SQL after "IN" or "= ANY"): nulls among them, duplicates, empty arrays
IN_LISTS = {
    "f8": ["(0, 3000, 'NaN')", "('-0')", "(3000, 3000, 1e9)", "(NULL, 3024.75)", "('Infinity', '-Infinity', 6000)",
           "ANY ('{}'::float8[])", "ANY ('{NULL}'::float8[])", "ANY (NULL::float8[])", "ANY ('{NaN,-0}'::float8[])"],
    "f4": ["(0::real, 'NaN'::real)", "('-0'::real, 3000::real)", "(5500.5::real, NULL::real)"],
    "n": ["(3000, 3012.125, 5500.5)", "(3012.1251, 3000)", "('NaN', 3000)", "(1000.125, NULL)", "('Infinity', -1e30)"],
    "u": ["('00000003-0000-4000-8000-000000000000', '00000005-0000-4000-8000-000000000063', NULL)"],
    "s": ["('B3-050', 'a4-000', 'é3', 'zz')", "('É4', 'é3')", "ANY ('{é3,É4,e3}'::text[])", "('a0-000', NULL)",
          "ANY ('{}'::text[])"],
    "v": ["('B3-050', 'a4-000', 'É4')", "ANY ('{b1-001,B1-001}'::varchar[])", "ANY ('{a2-002}'::text[])"],
    "tm": ["('03:00', '05:59:00', '23:00')"],
    "b": ["(true)", "(true, false)", "(false, NULL)"],
    "by": ["('\\x00000350', '\\x0000060a', '\\x00')"],
    "k": ["(-11, 0, 11, NULL)", "(5000000000)", "(5000000000, 3)", "ANY ('{0,0,0}'::int8[])",
          "ANY ('{{1,2},{3,NULL}}'::int[])"],
    "sm": ["(1, 3, 5)", "(0, 70000)", "ANY ('{6,2}'::smallint[])"],
    "id": ["(1, 150, 999, 12345678901)"],
    "ts": ["('2024-01-02 00:05:00+00', '2024-01-09 01:00:00+00')", "('2024-01-09 01:00:00+00', '2024-01-10 01:00:00+00')",
           "('2024-01-01 00:00:00+00', 'infinity')"],
    "ev": ["('e1', 'e3')"],
    "z": ["(1, 2, NULL)"],
}
NULL_TESTED = ["f8", "f4", "n", "u", "s", "v", "tm", "b", "by", "k", "sm", "ev", "z", "id", "ts"]
ORS = [
    "f8 < 1000 OR f8 >= 6000", "f8 = 'NaN' OR f8 = '-0'", "s = 'é3' OR s = 'É4' OR sm = 6",
    "(sm = 2 AND k = 0) OR (sm = 5 AND z IS NULL)", "sm IN (1, 2) OR z IS NULL", "k IS NULL OR k > 10",
    "f8 = NULL::float8 OR sm = 4", "n = 3012.1251 OR sm = 3", "(sm = 3 AND n = 3012.1251) OR sm = 5",
    "s = 'a0-000' COLLATE ci OR sm = 3", "s < 'B' COLLATE \"und-x-icu\" OR sm = 6", "b OR sm = 1",
    "u = '00000003-0000-4000-8000-000000000000' OR by = '\\x0000060a'", "tm >= '05:00' OR tm < '01:00'",
    "(f4 = 0::real OR f4 = 'NaN'::real) AND sm < 3", "NOT (sm = 1 OR sm = 2)", "ts < '2024-01-02' OR ts >= '2024-01-09'",
    "sm = 1 OR (sm = 2 AND (k = 1 OR k IS NULL))", "z IS NOT NULL OR s LIKE 'a%'", "sm = ANY ('{}'::int[]) OR sm = 2",
]


def in_condition(col, in_list):
    return f"{col} = {in_list}" if in_list.startswith("ANY") else f"{col} IN {in_list}"


def same_answers(db, conditions):
    for where in conditions:
        want = ids(db, "plain", where)
        assert ids(db, "m", where) == want, where
        assert ids(db, "m", where, pushdown=False) == want, where + " (pushdown off)"


def test_in_lists_answer_as_the_untiered_copy(m):
    same_answers(m, [in_condition(col, in_list) for col, lists in IN_LISTS.items() for in_list in lists])


def test_null_tests_and_ors_answer_as_the_untiered_copy(m):
    same_answers(m, [f"{col} IS {neg}NULL" for col in NULL_TESTED for neg in ("", "NOT ")] + ORS)


# NOT, <>, NOT IN, [NOT] LIKE and boolean columns: pushed where the lake
# decides them exactly (LIKE as a prefix or as equality), the rest left to
# the executor, and the answers always the untiered copy's.
NEGATIONS = [
    "NOT (f8 < 3000)", "NOT (f8 >= 'NaN')", "NOT (f8 = 0)", "f8 <> '-0'", "f8 <> 'NaN'", "f4 <> 'NaN'::real",
    "NOT (f4 > 0::real)", "n <> 3012.125", "n <> 3012.1251", "NOT (n = 'NaN')", "u <> '00000003-0000-4000-8000-000000000000'",
    "s <> 'é3'", "NOT (s < 'B')", "v <> 'a4-099'", "tm <> '03:00'", "b <> true", "by <> '\\x00000350'",
    "k <> 0", "k <> 5000000000", "NOT (k > 3 AND sm < 5)", "NOT (k IS NULL OR sm = 2)", "NOT NOT (sm = 2)",
    "NOT (k = 1 OR NOT (sm = 2))", "ts <> '2024-01-02 00:05:00+00'", "id <> 150",
    "k NOT IN (0, 1)", "k NOT IN (0, NULL)", "k <> ALL ('{}'::int[])", "k <> ALL (NULL::int[])",
    "f8 NOT IN (0, 'NaN')", "f8 <> ALL ('{-0,NaN}'::float8[])", "s NOT IN ('é3', 'a0-000')", "b NOT IN (true)",
    "k <> 5000000000 AND k NOT IN (5000000000, 1)", "NOT (k = ANY ('{1,NULL}'::int[]))",
    "NOT (k <> ALL ('{1,2}'::int[]))", "NOT (k <> ALL ('{}'::int[]))",
    "s <> 'é3' COLLATE ci", "s COLLATE ci NOT IN ('É3')", "NOT (s < 'B' COLLATE \"und-x-icu\")",
]
LIKES = [
    "s LIKE 'a4%'", "s LIKE 'a4-0%%'", "s LIKE 'B3-010'", "s LIKE ''", "s LIKE '%'", "s LIKE 'é%'", "s LIKE 'É4'",
    "s LIKE 'a4-0_0'", "s LIKE '%4-01%'", "s LIKE 'a4\\%'", "s LIKE 'a4-01\\0%'", "s LIKE 'zz\\'",
    "s LIKE 'a4!-0%' ESCAPE '!'", "s LIKE 'a4-01%' ESCAPE ''", "s LIKE 'a4-01#%' ESCAPE '#'",
    "s NOT LIKE 'a%'", "s NOT LIKE 'a4-010'", "s NOT LIKE '%'", "NOT (s LIKE 'B%')", "NOT (s NOT LIKE 'B3%')",
    "v LIKE 'a6-0%'", "v NOT LIKE 'B%'", "s ILIKE 'a4%'", "s NOT ILIKE 'b%'", "s LIKE 'A4%' COLLATE \"und-x-icu\"",
    "s LIKE 'a4%' OR sm = 1", "s LIKE 'a4%' AND k IS NULL", "(s LIKE 'a%' OR s LIKE 'é%') AND NOT (sm = 0)",
    "ev LIKE 'e1%'", "ev NOT LIKE 'e%'", "s LIKE NULL", "s NOT LIKE NULL",
]
BOOLEANS = [
    "b", "NOT b", "b IS TRUE", "b IS NOT TRUE", "b IS FALSE", "b IS NOT FALSE", "b IS UNKNOWN", "b IS NOT UNKNOWN",
    "NOT (b IS TRUE)", "NOT (b IS NOT FALSE)", "b OR sm = 1", "NOT b AND sm > 4", "NOT (b OR sm = 1)",
    "(k > 0) IS TRUE", "(k > 0) IS FALSE", "(k > 0) IS NOT TRUE", "(k > 0 OR sm = 1) IS FALSE", "(k IN (1, 2)) IS FALSE",
]


def test_negations_likes_and_booleans_answer_as_the_untiered_copy(m):
    same_answers(m, NEGATIONS + LIKES + BOOLEANS)
    for t in ("m", "plain"):  # nulls in the boolean, and in the text
        m.query(SESSION + f"UPDATE {t} SET b = NULL, s = NULL WHERE id % 7 = 0")
    same_answers(m, NEGATIONS + LIKES + BOOLEANS)


@pytest.mark.parametrize("where, pushed", [
    ("s LIKE 'a4%'", 1), ("s LIKE 'a4-010'", 1), ("s NOT LIKE 'a%'", 1), ("v LIKE 'a6%'", 1),
    ("s LIKE 'a4!-0%' ESCAPE '!'", 1), ("s LIKE 'a4-0_0'", 0), ("s LIKE '%4'", 0), ("s ILIKE 'a4%'", 0),
    ("s LIKE 'a4%' COLLATE \"und-x-icu\"", 1),  # LIKE compares bytes under every deterministic collation
    ("sm <> 3", 1), ("s <> 'é3' COLLATE ci", 0), ("k NOT IN (0, 1)", 1), ("k <> ALL ('{}'::int[])", 0),
    ("b", 1), ("b IS NOT FALSE", 1), ("(k > 0) IS NOT TRUE", 0),
    ("NOT (sm = 1 OR k IS NULL)", 2),  # the planner makes it two quals, sm <> 1 and k IS NOT NULL
])
def test_what_is_pushed(m, where, pushed):
    assert cold_scan(m, where)["Conditions Pushed to the Lake"] == pushed, where


def test_generic_plans_push_like_patterns_and_not_in_parameters(m):
    """A LIKE pattern or a NOT IN array given as a parameter becomes its
    lake condition when the scan starts: a prefix, an equality, or nothing
    (the executor checks it) as the value demands."""
    db = m
    for pattern in ["a4%", "B3-010", "a4-0_0", "%", "", "a4\\%", "zz\\", "é%", None]:
        arg = "NULL" if pattern is None else "'" + pattern + "'"
        for op in ("LIKE", "NOT LIKE"):
            got = db.query(SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                           f"PREPARE q(text) AS SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM m"
                           f" WHERE s {op} $1;\nEXECUTE q({arg});")
            assert got == ids(db, "plain", f"s {op} {arg}::text"), (op, pattern)
    for array in ["{0,1}", "{}", "{0,NULL}", None]:
        arg = "NULL" if array is None else f"'{array}'"
        got = db.query(SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                       "PREPARE q(int[]) AS SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM m"
                       f" WHERE k <> ALL ($1);\nEXECUTE q({arg});")
        assert got == ids(db, "plain", f"k <> ALL ({arg}::int[])"), array
    node = custom_node(db, "EXECUTE q('a4%')", "TierDB Cold Scan",
                       SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                       "PREPARE q(text) AS SELECT id FROM m WHERE s LIKE $1;\n")
    assert node["Lake Files Pruned"] == COLD_DAYS - 2 and node["Rows Removed by Filter"] == 0, node


def test_in_lists_of_text_follow_the_collation(m):
    """Equality under a deterministic collation is equality of bytes ('é3'
    and 'É4' are other strings than 'e3' and 'e4'), so an IN list is pushed
    there; under ci, where 'É3' equals 'é3', it is not."""
    db = m
    for where, pushed in [("s IN ('é3', 'É4')", 1), ("s COLLATE \"und-x-icu\" IN ('é3', 'É4', 'e3')", 1),
                          ("s COLLATE \"C\" IN ('é3', 'a0-000')", 1), ("s COLLATE ci IN ('É3', 'A0-000')", 0),
                          ("v COLLATE ci IN ('b1-001', 'é4')", 0), ("v IN ('É4', 'B1-001')", 1),
                          ("s = ANY ('{É3,a0-000}'::text[] COLLATE ci)", 0)]:
        want = ids(db, "plain", where)
        assert want != [("",)], where  # each condition selects some rows
        assert ids(db, "m", where) == want, where
        assert cold_scan(db, where)["Conditions Pushed to the Lake"] == pushed, where


def cold_rows(db, where):
    return int(db.query(SESSION + f"SELECT count(*) FROM plain WHERE ts < '2024-01-0{COLD_DAYS + 1}' AND ({where})")[0][0])


@pytest.mark.parametrize("where, exact", [
    ("k IN (0, 1)", True), ("k = ANY ('{0,NULL,1,1}'::int[])", True), ("k IS NULL", True), ("k IS NOT NULL", True),
    ("f8 IN (0, 'NaN', 2024.5)", True), ("s IN ('a0-001', 'é3')", True), ("k IS NULL OR k > 10", True),
    ("sm = 1 OR (sm = 2 AND (k = 1 OR k IS NULL))", True), ("b = ANY ('{false}'::boolean[])", True),
    ("(sm = 3 AND n = 3012.125) OR sm = 5", False),  # numeric is not checked on the lake's values
    ("n IN (3000, 3012.125)", False), ("s COLLATE ci IN ('A0-001')", False),
    ("sm <> 3", True), ("k NOT IN (0, 1)", True), ("f8 <> 'NaN'", True), ("NOT (k IS NULL OR k < 0)", True),
    ("s LIKE 'a4%'", True), ("s NOT LIKE 'a%'", True), ("s LIKE 'a4-010'", True), ("b", True), ("NOT b", True),
    ("b IS NOT FALSE OR k = 1", True), ("s LIKE 'a4-0_0'", False), ("s ILIKE 'a4%'", False),
])
def test_rows_are_skipped_before_conversion(m, where, exact):
    """An IN list, a null test, an OR, a negation, a LIKE prefix or a
    boolean column the lake checks exactly skips the
    rows it rules out before they become tuples, and the executor does not
    check it again (nothing left for its filter to remove)."""
    db = m
    node = cold_scan(db, where)
    passing = cold_rows(db, where)
    read = COLD_DAYS * PER_DAY - node["Lake Files Pruned"] * PER_DAY
    if exact:
        assert node["Rows Skipped Before Conversion"] == read - passing, (where, node)
        assert node["Rows Removed by Filter"] == 0 and node["Actual Rows"] == passing, (where, node)
    else:
        assert node["Rows Skipped Before Conversion"] == 0 and node["Rows Removed by Filter"] > 0, (where, node)
    assert ids(db, "m", where) == ids(db, "plain", where)


def test_empty_in_lists_and_all_null_ones_read_nothing(m):
    """Where the planner has not already proven that no row passes, the cold scan reads nothing."""
    db = m
    for where in ["sm = ANY ('{}'::int[])", "k IN (NULL)", "f8 = ANY (NULL::float8[])", "k = ANY ('{NULL,NULL}'::int[])",
                  "ts IN ('2024-01-09 01:00:00+00', '2024-01-10 01:00:00+00')"]:  # at or above T
        for node in plan_nodes(db, f"SELECT id FROM m WHERE {where}"):
            if node.get("Custom Plan Provider") == "TierDB Cold Scan":
                assert node["Lake"] == "not read: no row below T meets the conditions", (where, node)
        assert ids(db, "m", where) == ids(db, "plain", where)
    for array in ["{}", "{NULL}"]:
        node = custom_node(db, f"EXECUTE q('{array}')", "TierDB Cold Scan",
                           SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                           "PREPARE q(int[]) AS SELECT id FROM m WHERE k = ANY ($1);\n")
        assert node["Lake"] == "not read: no row below T meets the conditions", (array, node)


GENERIC = [  # column, array type, values
    ("f8", "float8[]", ["{0,NaN,3000}", "{-0}", "{}", "{NULL}", "{NULL,1000.25}"]),
    ("f4", "real[]", ["{0,NaN}", "{-0,3000}"]),
    ("n", "numeric[]", ["{3000,3012.125}", "{3012.1251}", "{3012.1251,3000}", "{NaN}"]),
    ("u", "uuid[]", ["{00000003-0000-4000-8000-00000000000a,00000009-0000-4000-8000-000000000001}"]),
    ("s", "text[]", ["{B3-010,é3,É4,e3}", "{}"]),
    ("v", "varchar[]", ["{B3-010,a4-099}"]),
    ("tm", "time[]", ["{03:10,05:00}"]),
    ("b", "boolean[]", ["{true}", "{false,NULL}"]),
    ("by", "bytea[]", ["{\\\\x00000350,\\\\x0000060a}"]),
    ("k", "int[]", ["{0,NULL,5}"]),
    ("k", "bigint[]", ["{5000000000,1}", "{-11}"]),
    ("sm", "int[]", ["{1,3}", "{70000,2}"]),
    ("ts", "timestamptz[]", ["{2024-01-02 00:05:00+00,2024-01-09 00:05:00+00}", "{2024-01-09 00:05:00+00}"]),
]


def test_generic_plans_push_in_lists_of_parameters(m):
    """`= ANY ($1)` under force_generic_plan: the array is a parameter the
    scan computes when it starts; as IN ($1, $2) too, and again at each
    rescan of a correlated subquery."""
    db = m
    for col, typ, arrays in GENERIC:
        for array in arrays + [None]:
            arg = "NULL" if array is None else "'" + array.replace("'", "''") + "'"
            got = db.query(SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                           f"PREPARE q({typ}) AS SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM m"
                           f" WHERE {col} = ANY ($1);\nEXECUTE q({arg});")
            want = ids(db, "plain", f"{col} = ANY ({arg}::{typ})")
            assert got == want, (col, array, got, want)
    got = db.query(SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                   "PREPARE q(int, int, float8) AS SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM m"
                   " WHERE sm IN ($1, $2) AND (f8 IN ($3, 'NaN') OR z IS NULL);\nEXECUTE q(2, 5, 5012.5);")
    assert got == ids(db, "plain", "sm IN (2, 5) AND (f8 IN (5012.5, 'NaN') OR z IS NULL)") != [("",)]
    node = custom_node(db, "EXECUTE q('{1,3}')", "TierDB Cold Scan",
                       SESSION + "SET plan_cache_mode = force_generic_plan;\n"
                       "PREPARE q(int[]) AS SELECT id FROM m WHERE sm = ANY ($1);\n")
    assert node["Lake Files Pruned"] == COLD_DAYS - 2 and node["Rows Removed by Filter"] == 0, node
    for sql in ["SELECT o.x, (SELECT string_agg(id::text, ',' ORDER BY id) FROM {t}"
                " WHERE k = ANY (ARRAY[o.x, o.x + 1, NULL]) AND (sm = o.x + 5 OR z IS NULL)) FROM generate_series(-6, 6) o(x)",
                "SELECT o.x, (SELECT count(*) FROM {t} WHERE sm = ANY (ARRAY[o.x, 6]) AND k IS NOT NULL)"
                " FROM generate_series(-1, 8) o(x)"]:
        for session in ["", "SET tierdb.enable_cold_aggregate = off;\n"]:
            got = db.query(SESSION + session + sql.format(t="m") + " ORDER BY 1")
            assert got == db.query(SESSION + sql.format(t="plain") + " ORDER BY 1"), (sql, session)


def test_the_cold_aggregate_takes_in_lists_and_null_tests(m):
    """Through the cold rows reader: pruned, and checked on the lake's
    vectors, so the aggregate reads them a batch at a time (an OR too,
    unless an arm is one the lake cannot check)."""
    db = m
    for sql, vectors in [("SELECT count(*), sum(k) FROM {t} WHERE sm IN (1, 2, 5)", True),
                         ("SELECT count(*), min(f8), max(k) FROM {t} WHERE z IS NULL", True),
                         ("SELECT count(*), max(k) FROM {t} WHERE k = ANY ('{{0,NULL,3}}') AND f8 IS NOT NULL", True),
                         ("SELECT count(*) FROM {t} WHERE sm = 1 OR z IS NULL", True),
                         ("SELECT count(*) FROM {t} WHERE sm = 1 OR length(s) > 6", False)]:
        got = db.query(SESSION + sql.format(t="m"))
        assert got == db.query(SESSION + sql.format(t="plain")), sql
        node = custom_node(db, sql.format(t="m"), "TierDB Cold Aggregate")
        if vectors:
            assert node["Cold Rows Aggregated From Column Vectors"] == node["Cold Rows Aggregated"] > 0, (sql, node)
        else:
            assert node["Cold Rows Aggregated From Column Vectors"] == 0, (sql, node)
    prepare = SESSION + "SET plan_cache_mode = force_generic_plan;\nPREPARE q(int[]) AS SELECT count(*) FROM m WHERE sm = ANY ($1);\n"
    for array, count in [("{}", "0"), ("{NULL}", "0"), ("{2,3,NULL}", "200")]:
        assert db.query(prepare + f"EXECUTE q('{array}')") == [(count,)]
        node = custom_node(db, f"EXECUTE q('{array}')", "TierDB Cold Aggregate", prepare)
        if count == "0":
            assert node["Lake"] == "not read: no row below T meets the conditions", node
        else:
            assert node["Lake Files Pruned"] == COLD_DAYS - 2, node


def test_writes_and_corrections_meet_in_lists_and_null_tests(m):
    """DML on cold rows selected by IN lists and null tests, then reads of
    rows the delta corrected: its row images meet every condition."""
    db = m
    for t in ("m", "plain"):
        db.query(SESSION + f"UPDATE {t} SET ev = 'upd', k = NULL WHERE sm IN (1, 3) AND z IS NOT NULL AND k IN (0, 5, NULL);"
                 f" UPDATE {t} SET z = 7 WHERE sm = ANY ('{{2,4}}') AND k IS NULL;"
                 f" DELETE FROM {t} WHERE (sm = 5 AND k IS NULL) OR id IN (1, 2, 3);")
    assert db.query(SESSION + "SELECT id, ev, k, z FROM m ORDER BY id") == \
        db.query(SESSION + "SELECT id, ev, k, z FROM plain ORDER BY id")
    same_answers(db, ["ev IN ('upd')", "k IS NULL", "z IN (7)", "z IS NULL", "sm IN (1, 3) AND k IS NULL",
                      "z = 7 OR ev = 'upd'", "id IN (1, 2, 3, 4)"])


def test_columns_added_after_the_rows_went_to_the_lake(m):
    """Files written before a column existed read it as null, or as its
    default: null tests and IN lists give the untiered copy's answer."""
    db = m
    for t in ("m", "plain"):
        db.query(SESSION + f"ALTER TABLE {t} ADD COLUMN w integer, ADD COLUMN w2 integer DEFAULT 5")
        db.query(SESSION + f"UPDATE {t} SET w = 1, w2 = NULL WHERE id % 50 = 3")
    same_answers(db, ["w IS NULL", "w IS NOT NULL", "w IN (1, 2)", "w2 IS NULL", "w2 IS NOT NULL", "w2 IN (5)",
                      "w2 IN (4, NULL)", "w IS NULL OR w2 IS NULL", "w = 1 OR sm = 2"])


def test_parallel_workers_match_the_conditions_themselves(m):
    """Each process of a parallel cold scan finds the pushable conditions
    among the plan's quals and computes their values (parameters too)."""
    db = m
    parallel = SESSION + ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;"
                          " SET max_parallel_workers_per_gather = 2;\n")
    for where in ["k IN (0, 1, NULL)", "sm = 1 OR z IS NULL", "f8 = ANY ('{0,NaN}'::float8[]) OR s IN ('é3', 'É4')"]:
        sql = "SELECT id, f8, s FROM {t} WHERE " + where + " ORDER BY id"
        assert db.query(parallel + sql.replace("{t}", "m")) == db.query(SESSION + sql.replace("{t}", "plain")), where
        nodes = plan_nodes(db, sql.replace("{t}", "m"), parallel)
        cold = [n for n in nodes if n.get("Custom Plan Provider") == "TierDB Cold Scan"]
        assert len(cold) == 1 and cold[0]["Parallel Aware"] and cold[0]["Rows Removed by Filter"] == 0, (where, cold)
    got = db.query(parallel + "SET plan_cache_mode = force_generic_plan;\n"
                   "PREPARE q(int[]) AS SELECT id FROM m WHERE sm = ANY ($1) ORDER BY id;\nEXECUTE q('{2,4}');")
    assert got == db.query(SESSION + "SELECT id FROM plain WHERE sm IN (2, 4) ORDER BY id")
