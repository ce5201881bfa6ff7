"""The cold scan inside the backend (extension/src/lake_scan.c,
lake_values.c): tierdb.lake_scan(NULL::t, S) returns the lake rows of a
registered table at snapshot S, Iceberg deletes applied, as tuples of the
table's row type.

Rows are compared as psql prints them: the heap rows are captured before
the daemon moves them, and the lake rows read back through the function
must print identically, column by column. Errors must name what is wrong
(the damaged file, the missing snapshot, the missing privilege) and leave
the session working; cancelled scans must leave no file descriptor or
memory context behind.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from pg_cluster import BUILD_DIR
from test_fold import tombstone, upsert
from test_pg_types import ALL_TYPES, DECIMAL_TYPES, ROWS, SCHEMA_SQL, random_decimal
from test_tiering import SESSION as UTC_SESSION
from test_tiering import cutline, make_events, run_once

# These tests look at the heap and the lake separately.
pytestmark = pytest.mark.heap_and_lake_apart

# The settings every comparison runs under, so that text forms agree.
SESSION = (
    "SET DateStyle = ISO; SET IntervalStyle = postgres; SET TimeZone = 'UTC';"
    " SET extra_float_digits = 3; SET bytea_output = hex;\n"
)


def scan_sql(table: str, snapshot) -> str:
    snap = "NULL" if snapshot is None else str(snapshot)
    return f"SELECT * FROM tierdb.lake_scan(NULL::{table}, {snap})"


def scan(db, table, snapshot, order_by="id"):
    return db.query(f"{SESSION}{scan_sql(table, snapshot)} ORDER BY {order_by}")


def in_one_session(db, sql: str):
    """Runs statements in one session, going on after errors: (the one-value
    results of the statements that succeeded, in order; psql's stderr)."""
    proc = db.run_psql("\\set ON_ERROR_STOP off\n" + sql)
    values = [v for v in re.split("[\x1e\n]", proc.stdout) if v != ""]
    return values, proc.stderr


def open_fds_sql() -> str:
    return "SELECT count(*) FROM pg_ls_dir('/proc/self/fd');\n"


# ------------------------------------------------------------------ (a) every type


@pytest.fixture
def all_types_tiered(db, tierdb):
    """s.all_types of test_pg_types, range-partitioned on an added bigint
    tier key: rows in [0, 100) move to the lake, one row at 150 stays."""
    columns = ", ".join(f'"{name.replace(chr(34), chr(34) * 2)}" {sql}' for name, sql, _, _ in ALL_TYPES)
    sql = SCHEMA_SQL + f"CREATE TABLE s.all_types ({columns}, tk bigint NOT NULL) PARTITION BY RANGE (tk);\n"
    sql += "CREATE TABLE s.all_types_p0 PARTITION OF s.all_types FOR VALUES FROM (0) TO (100);\n"
    sql += "CREATE TABLE s.all_types_p100 PARTITION OF s.all_types FOR VALUES FROM (100) TO (200);\n"
    # A column dropped before registration must not show up.
    sql += "ALTER TABLE s.all_types ADD COLUMN c_dropped int; ALTER TABLE s.all_types DROP COLUMN c_dropped;\n"
    for i, row in enumerate(ROWS, start=1):
        values = {"id": str(i), "c_required": f"'row {i}'", "c_price_nn": f"{i}.5", "tk": str(i), **row}
        sql += f"INSERT INTO s.all_types ({', '.join(values)}) VALUES ({', '.join(values.values())});\n"
    sql += ("INSERT INTO s.all_types (id, c_required, c_price_nn, tk)"
            " VALUES (1000, 'hot', 1.5, 150);\n")
    db.psql(sql)
    before = db.query(f"{SESSION}SELECT * FROM s.all_types WHERE tk < 100 ORDER BY id")
    assert len(before) == len(ROWS)
    proc = tierdb(["register", "--table", "s.all_types", "--pk", "id", "--tier-key", "tk"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "0")
    c = cutline(db, "all_types")
    assert c["T"] == 100 and c["S"] is not None
    # The rows are gone from the heap: what the function returns is the lake's.
    assert db.query("SELECT count(*) FROM s.all_types") == [("1",)]
    return db, before, c["S"]


def test_every_type_reads_back_exactly(all_types_tiered):
    db, before, snapshot = all_types_tiered
    got = scan(db, "s.all_types", snapshot)
    assert len(got) == len(before)
    names = [name for name, _, _, _ in ALL_TYPES] + ["tk"]
    for heap_row, lake_row in zip(before, got):
        for name, heap_value, lake_value in zip(names, heap_row, lake_row):
            assert lake_value == heap_value, f"row {heap_row[0]}, column {name}"
        assert lake_row == heap_row
    # Spot checks that the comparison compares what it should.
    first = dict(zip(names, got[0]))
    assert first["c_bytea"] == "\\x00ff00fe"
    assert first["c_char"] == "ab   "
    assert first["c_dec38"] == "9999999999999999999999999999.9999999999"
    assert dict(zip(names, got[4]))["c_float8"] == "-0"
    assert dict(zip(names, got[2]))["c_float4"] == "NaN"


def test_values_are_typed_not_text(all_types_tiered):
    """The tuples carry the column types: operators and casts work on them."""
    db, _, snapshot = all_types_tiered
    rows = db.query(
        f"{SESSION}SELECT id, c_int8 + 0, c_dec19 * 2, c_jsonb -> 'b', c_enum > 'sad',"
        f" c_tstz + interval '1 day', length(c_bytea), c_int_array[3], pg_typeof(c_price)"
        f" FROM tierdb.lake_scan(NULL::s.all_types, {snapshot}) WHERE id IN (1, 2) ORDER BY id"
    )
    assert rows[0] == ("1", "9223372036854775807", "1999999999999999.9998", "1", "t",
                       "2024-03-11 10:30:00.5+00", "4", "-3", "s.price")
    assert rows[1][4] == "f" and rows[1][6] == "0"


# The extension refuses column changes of a registered table (src/ddl.c);
# these tests build a lake whose schema differs from its table's, as a
# foreign writer could, with the guard switched off (in their own database).
BYPASS_DDL_GUARD = "ALTER EVENT TRIGGER tierdb_ddl_guard DISABLE;\n"


def test_columns_added_or_dropped_after_tiering(all_types_tiered):
    """A column the lake lacks reads its default, which tierdb_ddl_follow
    recorded even with the guard off (NULL without one); a dropped one is
    not returned."""
    db, before, snapshot = all_types_tiered
    db.psql(BYPASS_DDL_GUARD + "ALTER TABLE s.all_types ADD COLUMN c_added int DEFAULT 7;"
            " ALTER TABLE s.all_types DROP COLUMN c_text; ALTER TABLE s.all_types ADD COLUMN c_null int;")
    got = db.query(f"{SESSION}SELECT id, c_int4, c_added, c_null"
                   f" FROM tierdb.lake_scan(NULL::s.all_types, {snapshot}) ORDER BY id")
    assert [r[0] for r in got] == [r[0] for r in before]
    assert all(r[2] == "7" and r[3] is None for r in got)
    assert got[0][1] == "2147483647"
    (row,) = db.query(f"SELECT * FROM tierdb.lake_scan(NULL::s.all_types, {snapshot}) LIMIT 1")
    assert len(row) == len(ALL_TYPES) + 2  # c_text gone, tk, c_added and c_null there


def test_type_changed_after_tiering_is_an_error(all_types_tiered):
    db, _, snapshot = all_types_tiered
    db.psql(BYPASS_DDL_GUARD + "ALTER TABLE s.all_types ALTER COLUMN c_bool TYPE int USING c_bool::int")
    message = db.error(scan_sql("s.all_types", snapshot))
    assert "42804" in message  # datatype_mismatch
    assert 'column "c_bool" of type integer cannot be read from lake field "c_bool" of type boolean' in message


def test_random_decimals_of_every_width_read_back(db, tierdb):
    """Decimals stored as int32, int64 and fixed bytes (both signs, every
    alignment of the scale) come back with their value and display scale."""
    rng = random.Random(5)
    names = [f"d{p}_{s}" for p, s in DECIMAL_TYPES]
    sql = ("CREATE TABLE decimals (id int NOT NULL, k int NOT NULL, "
           + ", ".join(f"{n} numeric({p},{s})" for n, (p, s) in zip(names, DECIMAL_TYPES))
           + ") PARTITION BY RANGE (k);\n"
           "CREATE TABLE decimals_p0 PARTITION OF decimals FOR VALUES FROM (0) TO (10);\n"
           "CREATE TABLE decimals_p10 PARTITION OF decimals FOR VALUES FROM (10) TO (20);\n"
           "INSERT INTO decimals (id, k) VALUES (0, 15);\n")
    rows = [f"({i}, {i % 10}, " + ", ".join(f"'{random_decimal(rng, p, s)}'" for p, s in DECIMAL_TYPES) + ")"
            for i in range(1, 401)]
    db.psql(sql + "INSERT INTO decimals VALUES " + ",\n".join(rows) + ";")
    before = db.query("SELECT * FROM decimals WHERE k < 10 ORDER BY id")
    proc = tierdb(["register", "--table", "public.decimals", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "0")
    assert db.query("SELECT count(*) FROM decimals") == [("1",)]
    assert scan(db, "decimals", cutline(db, "decimals")["S"]) == before


# ------------------------------------------------------------------ (b), (c) snapshots and deletes


@pytest.fixture
def events_tiered_twice(db, tierdb):
    """events (test_tiering) tiered with lag 5d, then 2d: two snapshots."""
    make_events(db)
    db.psql("CREATE TABLE originals AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    assert scan(db, "events", None) == []  # no snapshot yet: no rows
    run_once(tierdb, "5d")
    first = cutline(db, "events")
    run_once(tierdb, "2d")
    second = cutline(db, "events")
    assert first["S"] != second["S"] and first["T"] < second["T"]
    return db, first, second


def originals_below(db, t, extra=""):
    return db.query(
        f"{SESSION}SELECT * FROM ("
        f"SELECT * FROM originals WHERE (extract(epoch FROM ts) * 1000000)::bigint < {t} {extra}"
        ") r ORDER BY id"
    )


def test_each_snapshot_reads_its_own_rows(events_tiered_twice):
    db, first, second = events_tiered_twice
    older = scan(db, "events", first["S"])
    newer = scan(db, "events", second["S"])
    assert older == originals_below(db, first["T"])
    assert newer == originals_below(db, second["T"])
    assert 0 < len(older) < len(newer)


def test_fold_equality_deletes_are_applied(events_tiered_twice, tierdb):
    db, _, second = events_tiered_twice
    tid = second["table_id"]
    upsert(db, tid, "SELECT id, ts, 'corrected'::text AS v, amount FROM originals WHERE id = 5")
    tombstone(db, tid, 10)
    upsert(db, tid, "SELECT 100000::bigint AS id, timestamptz '2024-01-03 01:02:03.456789+00' AS ts,"
                    " 'new'::text AS v, 1.50::numeric(12,2) AS amount")
    proc = run_once(tierdb, "2d")
    assert "fold: operation" in proc.stderr, proc.stderr
    folded = cutline(db, "events")
    assert folded["S"] != second["S"]

    expected = db.query(
        f"{SESSION}SELECT * FROM ("
        f" SELECT id, ts, CASE WHEN id = 5 THEN 'corrected' ELSE v END AS v, amount FROM originals"
        f" WHERE (extract(epoch FROM ts) * 1000000)::bigint < {folded['T']} AND id <> 10"
        " UNION ALL SELECT 100000, '2024-01-03 01:02:03.456789+00', 'new', 1.50"
        ") r ORDER BY id"
    )
    got = scan(db, "events", folded["S"])
    assert got == expected
    # What the scan did, at DEBUG1: every planned data file read, the old
    # copies of 5 and 10 dropped by the fold's equality deletes.
    proc = db.run_psql(f"SET client_min_messages = debug1;\n{scan_sql('events', folded['S'])};")
    (stats,) = [line for line in proc.stderr.splitlines() if "tierdb lake scan of" in line]
    match = re.search(r"data files (\d+) \(0 skipped, (\d+) read\), delete files (\d+), "
                      r"row groups (\d+) read \(0 skipped\), rows (\d+) returned \((\d+) deleted\)", stats)
    assert match, stats
    files, read, deletes, row_groups, returned, deleted = map(int, match.groups())
    assert files == read > 0 and deletes >= 1 and row_groups >= read
    assert (returned, deleted) == (len(expected), 2)
    # The snapshot before the fold still has the rows as they were.
    assert scan(db, "events", second["S"]) == originals_below(db, second["T"])


# ------------------------------------------------------------------ (d) damaged files


def data_files(ref: str):
    return sorted(Path(ref).rglob("*.parquet"), key=lambda p: p.stat().st_size)


def damage(path: Path, where: str):
    data = bytearray(path.read_bytes())
    footer_len = int.from_bytes(data[-8:-4], "little")
    if where == "middle":
        start = len(data) // 2
        data[start:start + 64] = b"\xa5" * 64
    else:
        # Inside the footer, which lies just before its length and the magic.
        start = len(data) - 8 - footer_len // 2
        data[start:start + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["middle", "footer"])
def test_damaged_data_file_is_an_error_naming_it(events_tiered_twice, pg, where):
    db, _, second = events_tiered_twice
    victim = data_files(second["ref"])[-1]
    damage(victim, where)
    failing = f"SELECT count(*) FROM tierdb.lake_scan(NULL::events, {second['S']});\n"
    # The first failure opens the relations Postgres keeps open after it;
    # the lake's files must not add to them with each failure.
    out, err = in_one_session(
        db,
        "SELECT pg_backend_pid();\n" + failing + open_fds_sql() + failing * 5
        + "SELECT pg_backend_pid();\n" + open_fds_sql() + "SELECT count(*) FROM originals;\n",
    )
    first_error = err.split("ERROR:")[1]
    assert first_error.startswith("  XX001:"), err  # data_corrupted
    assert str(victim) in first_error.splitlines()[0], err
    assert "HINT:  The file is damaged" in first_error
    assert err.count("ERROR:  XX001:") == 6, err
    pid_before, fds_before, pid_after, fds_after, count = out
    assert pid_before == pid_after  # the same backend: nothing crashed
    assert fds_after == fds_before
    assert count == "3000"
    log = pg.log.read_text(errors="replace")
    assert "terminated by signal" not in log
    assert "server process" not in log or "was terminated" not in log


def test_missing_data_file_is_an_error_naming_it(events_tiered_twice):
    db, _, second = events_tiered_twice
    victim = data_files(second["ref"])[0]
    victim.unlink()
    message = db.error(scan_sql("events", second["S"]))
    assert "ERROR:  58P01:" in message  # undefined_file
    assert str(victim) in message


# ------------------------------------------------------------------ (e) cancel


@pytest.fixture
def big_tiered(db, tierdb):
    """A table whose scan takes a while: 200,000 rows in the lake."""
    db.psql(
        UTC_SESSION
        + "CREATE TABLE big (id bigint NOT NULL, k bigint NOT NULL, payload text, x double precision)"
        " PARTITION BY RANGE (k);\n"
        "CREATE TABLE big_p0 PARTITION OF big FOR VALUES FROM (0) TO (1000);\n"
        "CREATE TABLE big_p1000 PARTITION OF big FOR VALUES FROM (1000) TO (2000);\n"
        "INSERT INTO big SELECT g, g % 1000, md5(g::text) || repeat('x', g % 50), g / 3.0"
        " FROM generate_series(1, 200000) g;\n"
        "INSERT INTO big VALUES (0, 1500, 'hot', 0);\n"
    )
    proc = tierdb(["register", "--table", "public.big", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "0")
    c = cutline(db, "big")
    assert c["T"] == 1000
    return db, c["S"]


def test_cancelled_scans_release_everything(big_tiered):
    db, snapshot = big_tiered
    # Each of the many scans of one statement reopens the lake (the
    # argument depends on g), so the timeout lands inside a scan.
    cancelled_statement = (
        "SELECT count(*) FROM generate_series(1, 1000) g,"
        f" LATERAL tierdb.lake_scan(NULL::big, {snapshot} + 0 * g) r;\n"
    )
    contexts = "SELECT count(*) FROM pg_backend_memory_contexts WHERE name LIKE 'tierdb lake scan%';\n"
    sql = (
        f"SELECT count(*) FROM tierdb.lake_scan(NULL::big, {snapshot});\n"
        "SET statement_timeout = '300ms';\n"
        + cancelled_statement
        + "RESET statement_timeout;\n"
        + open_fds_sql()
        + "SET statement_timeout = '300ms';\n"
        + cancelled_statement * 20
        + "RESET statement_timeout;\n"
        + open_fds_sql()
        + contexts
        + f"SELECT count(*) FROM tierdb.lake_scan(NULL::big, {snapshot});\n"
    )
    out, err = in_one_session(db, sql)
    assert err.count("canceling statement due to statement timeout") == 21, err
    assert "FATAL" not in err and "server closed" not in err, err
    first_count, fds_after_one, fds_after_many, open_contexts, last_count = out
    assert first_count == last_count == "200000"
    assert fds_after_many == fds_after_one
    assert open_contexts == "0"


# ------------------------------------------------------------------ (f) privileges and bad arguments


@pytest.fixture
def reader_role(pg):
    name = "reader_" + uuid.uuid4().hex[:8]
    pg.psql(f'CREATE ROLE "{name}"')
    yield name
    pg.psql(f'DROP ROLE IF EXISTS "{name}"')


def test_select_privilege_on_the_table_is_required(events_tiered_twice, reader_role):
    db, _, second = events_tiered_twice
    db.psql(f'GRANT USAGE ON SCHEMA tierdb TO "{reader_role}"')
    try:
        message = db.error(f'SET ROLE "{reader_role}";\n' + scan_sql("events", second["S"]))
        assert "ERROR:  42501: permission denied for table events" in message
        # SELECT on the table is enough: the catalog needs no privilege.
        db.psql(f'GRANT SELECT ON events TO "{reader_role}"')
        got = db.query(f'SET ROLE "{reader_role}";\n'
                       f"SELECT count(*) FROM tierdb.lake_scan(NULL::events, {second['S']})")
        assert got == [(str(len(originals_below(db, second["T"]))),)]
        assert "permission denied for table tables" in db.error(
            f'SET ROLE "{reader_role}";\nSELECT * FROM tierdb.tables')
    finally:
        db.psql(f'REVOKE ALL ON events FROM "{reader_role}"; REVOKE ALL ON SCHEMA tierdb FROM "{reader_role}"')


def test_unregistered_table_and_wrong_types_are_refused(events_tiered_twice):
    db, _, second = events_tiered_twice
    db.psql("CREATE TABLE plain (id int); CREATE TYPE pair AS (a int, b int); CREATE VIEW v AS SELECT 1 AS id")
    message = db.error(scan_sql("plain", second["S"]))
    assert "table public.plain is not registered with TierDB" in message
    assert "tierdb register --table public.plain" in message
    for arg, shown in (("int", "integer"), ("pair", "pair"), ("v", "v")):
        message = db.error(scan_sql(arg, 1))
        assert f"{shown} is not the row type of a table" in message, message


def test_unknown_snapshot_says_which_exist(events_tiered_twice):
    db, first, second = events_tiered_twice
    message = db.error(scan_sql("events", 12345))
    assert "ERROR:  22023: snapshot 12345 does not exist in the lake table at " + second["ref"] in message
    assert f"{first['S']}, {second['S']}; the current one is {second['S']}" in message
    assert "snapshot id -1 is not valid" in db.error(scan_sql("events", -1))


# ------------------------------------------------------------------ lakes written elsewhere

LAKEGEN = BUILD_DIR / "tools" / "lakegen"

FOREIGN_SCHEMA = {
    "type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "small", "required": False, "type": "int"},
        {"id": 3, "name": "d", "required": False, "type": "date"},
        {"id": 4, "name": "ts", "required": False, "type": "timestamp"},
        {"id": 5, "name": "widened", "required": False, "type": "int"},
        {"id": 6, "name": "as_text", "required": False, "type": "string"},
        {"id": 7, "name": "lake_only", "required": False, "type": "string"},
    ],
}

GOOD_ROW = {"id": 1, "small": -32768, "d": "2024-02-29", "ts": "1999-12-31T23:59:59.999999",
            "widened": 2147483647, "as_text": "{1,2}", "lake_only": "never read"}


def lakegen(*args):
    proc = subprocess.run([str(LAKEGEN), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture
def foreign_lake(db, lake, tmp_path):
    """A table registered by hand over a lake that lakegen wrote from rows:
    write(rows) makes a new lake snapshot holding them and returns its id."""
    if not LAKEGEN.is_file():
        pytest.fail(f"{LAKEGEN} is missing: run `make` first", pytrace=False)
    table_dir = lake / "foreign"
    lakegen("create", table_dir, "--schema", json.dumps(FOREIGN_SCHEMA), "--partition", "[]")
    db.psql(
        "CREATE TABLE f (id bigint, small smallint, d date, ts timestamp, widened bigint,"
        " as_text int[], not_in_lake text);\n"
        "INSERT INTO tierdb.tables (table_id, schema_name, table_name, primary_key_cols, tier_key_col,"
        f" tier_key_type, lake_table_ref) VALUES ('f'::regclass::oid, 'public', 'f', '{{id}}', 'id', 'bigint',"
        f" '{table_dir}')"
    )
    counter = iter(range(1000))

    def write(rows):
        path = tmp_path / f"rows-{next(counter)}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return int(lakegen("append", table_dir, path).splitlines()[-1])

    write.dir = table_dir
    return write


def test_foreign_lake_maps_by_name(db, foreign_lake):
    """Fields map to columns by name; a column the lake lacks reads as NULL;
    int widens to bigint; a string field feeds the column type's input."""
    snapshot = foreign_lake([GOOD_ROW, {"id": 2}])
    assert scan(db, "f", snapshot) == [
        ("1", "-32768", "2024-02-29", "1999-12-31 23:59:59.999999", "2147483647", "{1,2}", None),
        ("2", None, None, None, None, None, None),
    ]


@pytest.mark.parametrize("column, value, says", [
    ("small", 32768, "is outside the range of type smallint"),
    ("d", "+5874898-01-01", "is outside the range of type date"),
    ("ts", "-4714-01-01T00:00:00.000000", "is outside the range of type timestamp"),
])
def test_values_postgres_cannot_hold_are_errors(db, foreign_lake, column, value, says):
    snapshot = foreign_lake([GOOD_ROW, {**GOOD_ROW, "id": 2, column: value}])
    message = db.error(scan_sql("f", snapshot))
    first = message.splitlines()[0]
    assert f'lake data file {foreign_lake.dir}/data/' in first, message
    assert f'holds a value of column "{column}" that {says}' in first, message
    assert f'CONTEXT:  reading column "{column}" from lake data file {foreign_lake.dir}/data/' in message


def test_text_the_type_rejects_is_an_error_in_context(db, foreign_lake):
    snapshot = foreign_lake([{**GOOD_ROW, "as_text": "not an array"}])
    message = db.error(scan_sql("f", snapshot))
    assert 'malformed array literal: "not an array"' in message
    assert f'CONTEXT:  reading column "as_text" from lake data file {foreign_lake.dir}/data/' in message
