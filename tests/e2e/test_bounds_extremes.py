"""Comparisons with infinities and the types' extremes on tiered tables
(issue 16 item 3: seam.c's canonical tier keys, cold_scan.c's lake
literals): every condition must give the untiered table's answer.

Differential: `x` (tier key ts timestamptz) and `y` (tier key dk date)
are tiered with their oldest days in the lake; `x_plain` and `y_plain` are
untiered copies of the same rows. Each condition below runs on both, with
constants and as a parameter of a prepared statement under
plan_cache_mode = force_generic_plan, and the ids it selects must match.

The lake rows hold the finite extremes an Iceberg column can hold (the
earliest and latest date, timestamps from 4714 BC to 294247-01-10
04:00:54.775807, the integer limits, NaN and the float infinities); the
heap rows hold the rest ('infinity', '-infinity', timestamps up to
294276-12-31, which no Iceberg timestamp holds: the daemon refuses to move
such rows, see cli/pgcopy.c).
"""

from __future__ import annotations

import itertools

import pytest

from pg_cluster import FIELD_SEP, RECORD_SEP
from test_tiering import SESSION, cutline, run_once

TS_MAX_LAKE = "294247-01-10 04:00:54.775807+00"  # INT64_MAX microseconds after 1970
TS_MAX = "294276-12-31 23:59:59.999999+00"
TS_MIN = "4714-11-24 00:00:00+00 BC"

# column -> (type, constants compared with it)
CONSTANTS = {
    "ts": ("timestamptz", ["infinity", "-infinity", TS_MAX, TS_MAX_LAKE, TS_MIN, "2024-01-03 00:00:00+00",
                           "2024-01-08 00:00:00+00", "2024-01-09 12:00:00+00"]),
    "d": ("date", ["infinity", "-infinity", "5874897-12-31", "4714-11-24 BC", "2024-01-04", "1970-01-01"]),
    "t": ("timestamp", ["infinity", "-infinity", TS_MAX[:-3], TS_MAX_LAKE[:-3], TS_MIN.replace("+00 ", " "),
                        "2024-01-05 00:00:00"]),
    "tz": ("timestamptz", ["infinity", "-infinity", TS_MAX, TS_MAX_LAKE, TS_MIN, "2000-01-01 00:00:00+00"]),
    "i2": ("smallint", ["-32768", "32767", "0"]),
    "i4": ("integer", ["-2147483648", "2147483647", "0"]),
    "i8": ("bigint", ["-9223372036854775808", "9223372036854775807", "0", "2147483648", "-2147483649"]),
    "n": ("numeric", ["NaN", "Infinity", "-Infinity", "1e100", "-1e100", "0"]),
    "f4": ("real", ["NaN", "Infinity", "-Infinity", "3.4028235e38", "0"]),
    "f8": ("double precision", ["NaN", "Infinity", "-Infinity", "1.7976931348623157e308", "0"]),
}
Y_CONSTANTS = {
    "dk": ("date", ["infinity", "-infinity", "5874897-12-31", "4714-11-24 BC", "2024-01-03", "2024-01-08",
                    "2024-01-09"]),
    "t": CONSTANTS["t"],
}
OPS = ["<", "<=", "=", ">=", ">", "<>"]

# Lake rows (days 2024-01-01..07 once tiered) and heap rows (01-08..10), beside the ordinary ones.
X_LAKE_EXTREMES = [
    f"('2024-01-02 01:00:00+00', '4714-11-24 BC', '{TS_MIN.replace('+00 ', ' ')}', '{TS_MAX_LAKE}', "
    "-32768, -2147483648, -9223372036854775808, 'NaN', 'NaN', 'NaN')",
    f"('2024-01-03 01:00:00+00', '5874897-12-31', '{TS_MAX_LAKE[:-3]}', '{TS_MIN}', "
    "32767, 2147483647, 9223372036854775807, 'Infinity', 'Infinity', 'Infinity')",
    "('2024-01-04 01:00:00+00', '1970-01-01', '2000-01-01 00:00:00', '1970-01-01 00:00:00+00', "
    "0, 0, 0, '-Infinity', '-Infinity', '-Infinity')",
    "('2024-01-05 01:00:00+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]
X_HEAP_EXTREMES = [
    "('2024-01-08 01:00:00+00', 'infinity', 'infinity', 'infinity', "
    "-32768, -2147483648, -9223372036854775808, 'NaN', 'NaN', 'NaN')",
    f"('2024-01-09 01:00:00+00', '-infinity', '-infinity', '-infinity', "
    "32767, 2147483647, 9223372036854775807, 'Infinity', '3.4028235e38', '1.7976931348623157e308')",
    f"('2024-01-10 01:00:00+00', '5874897-12-31', '{TS_MAX[:-3]}', '{TS_MAX}', "
    "0, 0, 0, '-1e100', '-Infinity', '-Infinity')",
    "('2024-01-10 02:00:00+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]
# Heap rows whose tier key the lake could not hold, added after the daemon's run.
X_HEAP_KEY_EXTREMES = [
    f"('{TS_MAX}', '2024-01-01', '2024-01-01', '2024-01-01', 1, 1, 1, 1, 1, 1)",
    f"('infinity', '2024-01-01', '2024-01-01', '2024-01-01', 2, 2, 2, 2, 2, 2)",
]


X_COLUMNS = "ts, d, t, tz, i2, i4, i8, n, f4, f8"


def make_x(db):
    db.psql(
        SESSION
        + "CREATE SEQUENCE x_ids;\n"
        "CREATE TABLE x (id bigint NOT NULL DEFAULT nextval('x_ids'), ts timestamptz NOT NULL, d date, t timestamp, tz timestamptz,"
        " i2 smallint, i4 integer, i8 bigint, n numeric, f4 real, f8 double precision) PARTITION BY RANGE (ts);\n"
        "DO $$ BEGIN FOR d IN 0..9 LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF x FOR VALUES FROM (%L) TO (%L)',"
        "    'x_' || to_char(date '2024-01-01' + d, 'YYYYMMDD'),"
        "    (date '2024-01-01' + d)::timestamptz, (date '2024-01-01' + d + 1)::timestamptz);"
        " END LOOP; END $$;\n"
        "INSERT INTO x SELECT nextval('x_ids'), timestamptz '2024-01-01' + g * interval '1 hour',"
        "  date '2024-01-01' + g % 50 - 25, timestamp '2024-01-01' + g * interval '7 hours',"
        "  timestamptz '2000-01-01' + g * interval '100 days', (g % 100 - 50), g * 1000 - 100000,"
        "  g::bigint * 100000000000 - 10000000000000, g / 7.0 - 10, g / 3.0 - 20, g / 9.0 - 15"
        "  FROM generate_series(0, 239) g;\n"
        + "".join(
            f"INSERT INTO x ({X_COLUMNS}) VALUES {row};\n"
            for row in X_LAKE_EXTREMES + X_HEAP_EXTREMES
        )
    )


def make_y(db):
    db.psql(
        SESSION
        + "CREATE TABLE y (id bigint NOT NULL, dk date NOT NULL, t timestamp) PARTITION BY RANGE (dk);\n"
        "DO $$ BEGIN FOR d IN 0..9 LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF y FOR VALUES FROM (%L) TO (%L)',"
        "    'y_' || to_char(date '2024-01-01' + d, 'YYYYMMDD'), date '2024-01-01' + d, date '2024-01-01' + d + 1);"
        " END LOOP; END $$;\n"
        "INSERT INTO y SELECT g, date '2024-01-01' + g % 10, timestamp '2024-01-01' + g * interval '5 hours'"
        "  FROM generate_series(1, 100) g;\n"
        f"INSERT INTO y VALUES (101, '2024-01-02', '{TS_MAX_LAKE[:-3]}'), (102, '2024-01-03', '{TS_MIN.replace('+00 ', ' ')}'),"
        "  (103, '2024-01-09', 'infinity'), (104, '2024-01-10', '-infinity'), (105, '2024-01-04', NULL);\n"
    )


@pytest.fixture
def extremes(db, tierdb):
    make_x(db)
    make_y(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    for table, key in (("x", "ts"), ("y", "dk")):
        proc = tierdb(["register", "--table", f"public.{table}", "--pk", "id", "--tier-key", key])
        assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "2d")
    # tier keys no lake holds, in the heap only, once the daemon has moved the rest
    # (registration refuses unbounded partitions; one attached later is not refused)
    db.psql(
        SESSION
        + "CREATE TABLE x_max PARTITION OF x FOR VALUES FROM ('2025-01-01') TO (MAXVALUE);\n"
        "CREATE TABLE y_max PARTITION OF y FOR VALUES FROM ('2025-01-01') TO (MAXVALUE);\n"
        + "".join(f"INSERT INTO x ({X_COLUMNS}) VALUES {row};\n" for row in X_HEAP_KEY_EXTREMES)
        + "INSERT INTO y VALUES (106, 'infinity', '2024-01-01'), (107, '5874897-12-31', NULL);\n"
        "CREATE TABLE x_plain AS SELECT * FROM x; CREATE TABLE y_plain AS SELECT * FROM y;\n"
    )
    assert cutline(db, "x")["S"] is not None and cutline(db, "y")["S"] is not None
    # the lake holds the lake-side extremes, the heap the rest
    lake = db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM x")[0][0]
    assert int(lake) < int(db.query("SELECT count(*) FROM x")[0][0])
    return db


def conditions(columns):
    """(column, type, SQL condition with {v} for the value, the value) for every comparison tested."""
    for col, (typ, values) in columns.items():
        for value, op in itertools.product(values, OPS):
            yield col, typ, f"{col} {op} {{v}}", value
        for lo, hi in itertools.combinations(values[:4], 2):
            yield col, typ, f"{col} BETWEEN {{v}} AND '{hi}'::{typ}", lo
            yield col, typ, f"{col} BETWEEN '{hi}'::{typ} AND {{v}}", lo
        yield col, typ, f"{col} IN ({{v}}, '{values[1]}'::{typ}, '{values[-1]}'::{typ})", values[0]
        yield col, typ, f"{col} IS NULL AND {{v}} IS NOT NULL", values[0]
        yield col, typ, f"{col} IS NOT NULL AND {col} <> {{v}}", values[0]


def run_batch(db, statements):
    """The first column of each statement's one row, in order (statements print exactly one row each)."""
    out = db.psql(SESSION + "".join(statements))
    return [r.split(FIELD_SEP)[0] for r in out.rstrip("\n").replace(RECORD_SEP, "\n").split("\n")]


def compare(db, table, plain, columns, generic):
    """Runs every condition on table and plain and returns the differing ones."""
    cases = list(conditions(columns))
    statements = {table: [], plain: []}
    for n, (col, typ, cond, value) in enumerate(cases):
        for t in (table, plain):
            if generic:
                statements[t].append(
                    f"PREPARE q{n}({typ}) AS SELECT 'r' || coalesce(string_agg(id::text, ',' ORDER BY id), '')"
                    f" FROM {t} WHERE {cond.format(v='$1')};\n"
                    f"EXECUTE q{n}('{value}'); DEALLOCATE q{n};\n")
            else:
                statements[t].append(
                    f"SELECT 'r' || coalesce(string_agg(id::text, ',' ORDER BY id), '')"
                    f" FROM {t} WHERE {cond.format(v=f'{chr(39)}{value}{chr(39)}::{typ}')};\n")
    prefix = "SET plan_cache_mode = force_generic_plan;\n" if generic else ""
    got = run_batch(db, [prefix] + statements[table])
    want = run_batch(db, [prefix] + statements[plain])
    assert len(got) == len(want) == len(cases)
    return [(cases[i][2].format(v=repr(cases[i][3])), got[i], want[i]) for i in range(len(cases)) if got[i] != want[i]]


@pytest.mark.parametrize("generic", [False, True], ids=["constants", "generic-plan-parameters"])
def test_extremes_compare_as_on_the_untiered_table(extremes, generic):
    db = extremes
    wrong = compare(db, "x", "x_plain", CONSTANTS, generic) + compare(db, "y", "y_plain", Y_CONSTANTS, generic)
    assert wrong == [], "\n".join(f"{c}\n  tiered: {g[:80]}\n  plain:  {w[:80]}" for c, g, w in wrong[:20])


def test_the_reported_cases(extremes):
    """The cases of the issue, by name: each reads the lake rows too."""
    db = extremes
    for sql in ["SELECT count(*) FROM {t} WHERE ts < 'infinity'",
                f"SELECT count(*) FROM {{t}} WHERE ts < '{TS_MAX}'",
                "SELECT count(*) FROM {t} WHERE d < 'infinity'",
                "SELECT count(*) FROM {t} WHERE ts > '-infinity' AND d > '-infinity'"]:
        got = db.query(SESSION + sql.format(t="x"))
        assert got == db.query(SESSION + sql.format(t="x_plain")), sql
    # the lake's rows: 7 days of hourly rows and 4 extremes
    assert db.query("SELECT count(*) FROM x WHERE ts < '2024-01-08'") == [("172",)]
    assert db.query("SELECT count(*) FROM y WHERE dk < 'infinity'") == db.query(
        "SELECT count(*) FROM y_plain WHERE dk < 'infinity'")

