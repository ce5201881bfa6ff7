"""`tierdb ingest` (SPEC §9; cli/ingest.h, cli/ingest.c, cli/cmd_ingest.c):
rows from JSONL lines and Parquet files, checked as an INSERT into the table
would check them plus the lake's range rules, committed as one lake snapshot
with upsert semantics, or not at all.

The main check is differential: the same rows are ingested into the tiered
table and written with plain SQL into `plain`, an untiered copy, and every
read of the tiered table (production defaults: transparent reads on) must
equal the same read of the copy. The rows to ingest are made in SQL and
exported with row_to_json, so the JSONL is what any client of Postgres would
produce, and `plain` gets the very same rows by INSERT.

Failures must leave everything as it was: the cut-line row, the delta, the
table's rows as a reader sees them, the lake's current snapshot and the files
under the lake's data/ directory.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import signal
from pathlib import Path

import pytest

import lake_files
from test_direct import as_server_user  # noqa: F401  (fixture)
from test_tiering import cutline, make_events, run_once

# What every read below runs with: fixed text forms for timestamps and floats.
READ = "SET TimeZone = 'UTC';\nSET DateStyle = 'ISO, YMD';\nSET extra_float_digits = 3;\n"
LAG = "2d"  # events: 2024-01-01 .. 07 tiered, T = 2024-01-08 00:00 UTC
T_TEXT = "2024-01-08 00:00:00+00"
EVENTS_COLUMNS = ["id", "ts", "v", "amount", "src"]


# ------------------------------------------------------------------ helpers


def ingest(tierdb, *args, input=None, env=None, json_out=True):
    """Runs `tierdb ingest --table public.events ARGS [--json]`."""
    argv = ["ingest", *args] + (["--json"] if json_out else [])
    if "--table" not in args:
        argv[1:1] = ["--table", "public.events"]
    return tierdb(argv, input=input, env=env)


def ingested(proc):
    """The --json result of a successful ingest."""
    assert proc.returncode == 0, f"rc {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    result = json.loads(lines[0])
    print(proc.stderr)  # what it logged (why a file was rewritten), shown when a test fails
    for key in ("op_id", "rows", "replaced", "files_adopted", "files_written", "bytes", "committed", "snapshot_id"):
        assert key in result, (key, result)
    return result


def jsonl_of(db, select_sql):
    """The rows of select_sql as JSONL, as row_to_json renders them (in UTC)."""
    rows = db.query(READ + f"SELECT row_to_json(r)::text FROM ({select_sql}) r")
    return "".join(r[0] + "\n" for r in rows)


def stage(db, name, select_sql, table="events"):
    """Makes table `name` of `table`'s shape holding the rows of select_sql (the rows to ingest)."""
    db.psql(READ + f"CREATE TABLE {name} (LIKE {table}); INSERT INTO {name} {select_sql}")


def upsert_plain(db, name, plain="plain", key="id"):
    """What an ingest of table `name`'s rows does, done to the untiered copy."""
    db.psql(READ + f"DELETE FROM {plain} WHERE {key} IN (SELECT {key} FROM {name});"
                   f" INSERT INTO {plain} SELECT * FROM {name}")


def rows_of(db, table, order="id", where="true"):
    return db.query(READ + f"SELECT * FROM {table} WHERE {where} ORDER BY {order}")


# Narrower queries assert_same runs on both sides ({t}), besides the whole table.
ID_TS_QUERIES = ("SELECT count(*), sum(id) FROM {t} WHERE ts < '" + T_TEXT + "'",
                 "SELECT date_trunc('day', ts), count(*) FROM {t} GROUP BY 1 ORDER BY 1")


def assert_same(db, table="events", plain="plain", order="id", queries=ID_TS_QUERIES):
    """The tiered table reads exactly as its untiered copy, whole and through a few narrower queries."""
    got, want = rows_of(db, table, order), rows_of(db, plain, order)
    assert len(got) == len(want), (len(got), len(want))
    diff = [(g, w) for g, w in zip(got, want) if g != w]
    assert not diff, f"{len(diff)} rows differ, first: {diff[:3]}"
    for sql in queries:
        assert db.query(READ + sql.format(t=table)) == db.query(READ + sql.format(t=plain)), sql


def lake_metadata(db, table="events"):
    return lake_files.read_json(cutline(db, table)["props"]["metadata_location"])


def lake_current_snapshot(db, table="events"):
    """The current snapshot of the lake's newest metadata file (what engines reading the lake directly see)."""
    ref = cutline(db, table)["ref"]
    newest = max(lake_files.list_files(f"{ref}/metadata", ".metadata.json"),
                 key=lambda p: int(p.rsplit("/", 1)[-1].split("-", 1)[0].lstrip("v").split(".")[0]))
    current = lake_files.read_json(newest).get("current-snapshot-id")
    return None if current in (None, -1) else int(current)


def lake_fields(db, table="events"):
    """{name: field} of the lake table's current schema."""
    md = lake_metadata(db, table)
    (schema,) = [s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"]]
    return {f["name"]: f for f in schema["fields"]}


def data_files(db, table="events"):
    return lake_files.list_files(f"{cutline(db, table)['ref']}/data")


def state(db, table="events", plain_order="id"):
    """Everything a failed ingest must leave as it was."""
    c = cutline(db, table)
    return {
        "cutline": c,
        "lake_current": lake_current_snapshot(db, table),
        "delta": db.query(f"SELECT pk, op, version, payload::text FROM tierdb.delta WHERE table_id = {c['table_id']}"
                          " ORDER BY pk"),
        "rows": rows_of(db, table, plain_order),
        "data_files": data_files(db, table),
    }


def ingest_ops(db):
    return db.query("SELECT op_id, phase, lake_snapshot_id FROM tierdb.op_log WHERE op_kind = 'ingest'"
                    " ORDER BY updated_at")


def snapshot_summary(db, snapshot_id, table="events"):
    (snap,) = [s for s in lake_metadata(db, table)["snapshots"] if s["snapshot-id"] == snapshot_id]
    return snap["summary"]


def check_committed(db, result, table="events"):
    """The result's snapshot is published as S, is the lake's current one and carries the journaled op id."""
    c = cutline(db, table)
    assert result["committed"] is True
    assert c["S"] == int(result["snapshot_id"]) == lake_current_snapshot(db, table)
    assert snapshot_summary(db, c["S"], table).get("tierdb.op-id") == result["op_id"]
    (op,) = [o for o in ingest_ops(db) if o[0] == result["op_id"]]
    assert op[1] == "done" and int(op[2]) == c["S"], op


# ------------------------------------------------------------------ Parquet files


ARROW_OF_ICEBERG = {
    "long": "int64", "int": "int32", "string": "string", "boolean": "bool_", "double": "float64",
    "float": "float32", "date": "date32", "binary": "binary",
}


def arrow_type(iceberg_type):
    import pyarrow as pa

    if iceberg_type in ARROW_OF_ICEBERG:
        return getattr(pa, ARROW_OF_ICEBERG[iceberg_type])()
    if iceberg_type == "timestamptz":
        return pa.timestamp("us", tz="UTC")
    if iceberg_type == "timestamp":
        return pa.timestamp("us")
    if iceberg_type == "time":
        return pa.time64("us")
    if iceberg_type == "uuid":
        return pa.uuid()
    if iceberg_type.startswith("decimal("):
        p, s = iceberg_type[len("decimal("):-1].split(",")
        return pa.decimal128(int(p), int(s))
    raise AssertionError(f"no Arrow type for Iceberg {iceberg_type}")


def events_arrow(db, select_sql, fields=None, ts_unit="us"):
    """The rows of select_sql (events' columns) as an Arrow table; with `fields` (lake_fields), the
    columns carry the lake's field ids, types and required flags."""
    import pyarrow as pa

    rows = db.query(READ + "SELECT id, (extract(epoch FROM ts) * 1000000)::bigint, v, amount::text, src"
                           f" FROM ({select_sql}) r ORDER BY id")
    ids = [int(r[0]) for r in rows]
    micros = [int(r[1]) for r in rows]
    stamps = [datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=m)
              for m in micros]
    columns = {
        "id": ids,
        "ts": stamps,
        "v": [r[2] for r in rows],
        "amount": [None if r[3] is None else decimal.Decimal(r[3]) for r in rows],
        "src": [r[4] for r in rows],
    }
    types = {"id": pa.int64(), "ts": pa.timestamp(ts_unit, tz="UTC"), "v": pa.string(),
             "amount": pa.decimal128(12, 2), "src": pa.string()}
    arrow_fields = []
    for name in EVENTS_COLUMNS:
        if fields is None:
            arrow_fields.append(pa.field(name, types[name]))
        else:
            f = fields[name]
            arrow_fields.append(pa.field(name, arrow_type(f["type"]), nullable=not f["required"],
                                         metadata={b"PARQUET:field_id": str(f["id"]).encode()}))
    return pa.table({n: pa.array(columns[n], type=af.type) for n, af in zip(EVENTS_COLUMNS, arrow_fields)},
                    schema=pa.schema(arrow_fields))


def write_parquet(table, path, **kwargs):
    """pyarrow's write_table, with decimals stored as integers (INT32/INT64 by precision) as the lake stores them,
    unless told otherwise: pyarrow's default FIXED_LEN_BYTE_ARRAY decimals are valid Iceberg but not the
    lake's Parquet type, so a file with them is rewritten (test_pyarrow_default_decimals_are_rewritten)."""
    import pyarrow.parquet as pq

    kwargs.setdefault("store_decimal_as_integer", True)
    pq.write_table(table, str(path), **kwargs)
    return Path(path)


# ------------------------------------------------------------------ fixtures


def make_tiered_events(db, tierdb):
    """events (make_events) with a NOT NULL column `src` and a CHECK on amount, tiered up to T = 2024-01-08;
    `plain`, an untiered copy with the same constraints and a primary key."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql("ALTER TABLE events ADD COLUMN src text NOT NULL DEFAULT 'seed';"
            " ALTER TABLE events ALTER COLUMN src DROP DEFAULT;"
            " ALTER TABLE events ADD CONSTRAINT amount_in_range CHECK (amount > -50000);"
            " CREATE TABLE plain (LIKE events INCLUDING CONSTRAINTS); ALTER TABLE plain ADD PRIMARY KEY (id);"
            " INSERT INTO plain SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    c = cutline(db, "events")
    assert c["S"] is not None
    assert c["T"] == int(db.query(f"SELECT (extract(epoch FROM timestamptz '{T_TEXT}') * 1000000)::bigint")[0][0])
    return db


@pytest.fixture
def events(db, tierdb):
    return make_tiered_events(db, tierdb)


# New rows of events' shape: keys 100000 + g, g = first .. first + count - 1, two an hour from `day` on (48 fit
# in one day; T is 2024-01-08).
def new_rows(first, count, src="ingest", day="2024-01-02"):
    return (f"SELECT 100000 + g, timestamptz '{day} 00:00:00+00'"
            f" + (g - {first}) * interval '29 minutes 59.000001 second',"
            f" CASE WHEN g % 7 = 0 THEN NULL ELSE '{src} ' || g || repeat('é', g % 3) END,"
            " CASE WHEN g % 5 = 0 THEN NULL ELSE (g * 37 % 20000 - 10000) / 100.0 END, "
            f"'{src}' FROM generate_series({first}, {first + count - 1}) g")


# ------------------------------------------------------------------ JSONL and the differential check


def test_jsonl_rows_read_back_as_inserted_rows(events, tierdb):
    db = events
    before = cutline(db, "events")
    stage(db, "incoming", new_rows(1, 150))
    proc = ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM incoming"))
    result = ingested(proc)
    upsert_plain(db, "incoming")
    assert (result["rows"], result["replaced"], result["files_adopted"]) == (150, 0, 0)
    assert result["files_written"] >= 1 and result["bytes"] > 0
    check_committed(db, result)
    after = cutline(db, "events")
    assert after["T"] == before["T"] and after["S"] != before["S"]
    summary = snapshot_summary(db, after["S"])
    assert int(summary["added-records"]) == 150
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {after['table_id']}") == [("0",)]
    assert_same(db)
    # The rows live in the lake, not the heap, and the heap is untouched.
    assert db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM events WHERE id > 100000") == [("0",)]


def test_several_sources_are_one_batch_and_one_snapshot(events, tierdb, tmp_path):
    db = events
    snapshots_before = len(lake_metadata(db)["snapshots"])
    stage(db, "a", new_rows(1, 40, "a"))
    stage(db, "b", new_rows(41, 40, "b", day="2024-01-04"))
    stage(db, "c", new_rows(81, 40, "c", day="2024-01-06"))
    (tmp_path / "a.jsonl").write_text(jsonl_of(db, "SELECT * FROM a"))
    # blank lines are skipped
    (tmp_path / "b.jsonl").write_text("\n" + jsonl_of(db, "SELECT * FROM b").replace("\n", "\n\n"))
    parquet = write_parquet(events_arrow(db, "SELECT * FROM c"), tmp_path / "c.parquet")
    result = ingested(ingest(tierdb, "--jsonl", tmp_path / "a.jsonl", "--file", parquet,
                             "--jsonl", tmp_path / "b.jsonl", "--progress"))
    for name in "abc":
        upsert_plain(db, name)
    assert result["rows"] == 120
    check_committed(db, result)
    assert len(lake_metadata(db)["snapshots"]) == snapshots_before + 1
    assert len(ingest_ops(db)) == 1
    assert_same(db)


def test_human_output_is_one_line(events, tierdb):
    db = events
    stage(db, "incoming", new_rows(1, 3))
    proc = ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM incoming"), json_out=False)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 1 and "3" in proc.stdout, proc.stdout
    upsert_plain(db, "incoming")
    assert_same(db)


@pytest.mark.parametrize("args", [
    ["ingest", "--jsonl", "-"],                          # no --table
    ["ingest", "--table", "public.events", "--jsonl"],  # --jsonl without its file
    ["ingest", "--table", "public.events", "--jsonl", "-", "--no-such-option"],
])
def test_usage_errors_exit_2(events, tierdb, args):
    db = events
    before = state(db)
    proc = tierdb(args, input="")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip(), "a usage error says what is wrong"
    assert state(db) == before


TYPES_DDL = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'très content');
CREATE TABLE kinds (
    id bigint NOT NULL, ts timestamptz NOT NULL,
    i2 int2, i4 int4, i8 int8, n numeric(14,4), f float8, t text, vc varchar(12), b bool, d date,
    tsl timestamp, tstz timestamptz, tm time, u uuid, by bytea, j jsonb, m mood, big numeric(38,6)
) PARTITION BY RANGE (ts);
DO $$ BEGIN FOR d IN 0..9 LOOP
  EXECUTE format('CREATE TABLE %I PARTITION OF kinds FOR VALUES FROM (%L) TO (%L)',
    'kinds_' || d, timestamptz '2024-01-01 00:00:00+00' + d * interval '1 day',
    timestamptz '2024-01-01 00:00:00+00' + (d + 1) * interval '1 day');
END LOOP; END $$;
"""

# Values of every column for row number g: NULLs, extremes, NaN and the
# infinities, non-ASCII and quoting characters, empty binaries, dates on
# both sides of 1970, nested JSON.
KINDS_VALUES = """
  CASE g % 6 WHEN 0 THEN NULL WHEN 1 THEN -32768 WHEN 2 THEN 32767 ELSE g END,
  CASE g % 6 WHEN 0 THEN NULL WHEN 1 THEN -2147483648 WHEN 2 THEN 2147483647 ELSE -g END,
  CASE g % 6 WHEN 0 THEN NULL WHEN 1 THEN -9223372036854775808 WHEN 2 THEN 9223372036854775807 ELSE g * 1000003 END,
  CASE g % 7 WHEN 0 THEN NULL WHEN 1 THEN -9999999999.9999 WHEN 2 THEN 0.0001 ELSE g * 1.2345 - 500 END,
  CASE g % 9 WHEN 0 THEN NULL WHEN 1 THEN 'NaN'::float8 WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'
    WHEN 4 THEN -0.0::float8 WHEN 5 THEN 1.7976931348623157e308 ELSE g / 7.0 END,
  CASE g % 8 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN E'tab\\there "quoted" \\\\ back' WHEN 3 THEN 'ünïcødé ✓ 😀'
    ELSE 'text ' || g END,
  CASE WHEN g % 5 = 0 THEN NULL ELSE left('vc ' || g || 'xxxxxxxxxx', 12) END,
  CASE WHEN g % 3 = 0 THEN NULL ELSE g % 2 = 0 END,
  CASE WHEN g % 10 = 0 THEN NULL ELSE date '1969-12-31' + (g * 97 % 40000 - 20000) END,
  CASE WHEN g % 11 = 0 THEN NULL ELSE timestamp '1969-07-20 20:17:40.123456' + g * interval '17 days 1.000003 s' END,
  CASE WHEN g % 12 = 0 THEN NULL ELSE timestamptz '1999-12-31 23:59:59.999999+00' + g * interval '3 days 7 s' END,
  CASE WHEN g % 13 = 0 THEN NULL ELSE time '00:00:00' + g * interval '13 minutes 0.000007 s' END,
  CASE WHEN g % 14 = 0 THEN NULL ELSE md5(g::text)::uuid END,
  CASE WHEN g % 15 = 0 THEN NULL WHEN g % 15 = 1 THEN ''::bytea
    ELSE decode(md5(g::text) || md5((g + 1)::text), 'hex') END,
  CASE WHEN g % 16 = 0 THEN NULL ELSE jsonb_build_object('g', g, 'nested', jsonb_build_array(g, 'x', NULL, true),
    'é', 'ü') END,
  CASE WHEN g % 4 = 0 THEN NULL ELSE (enum_range(NULL::mood))[1 + g % 4] END,
  CASE WHEN g % 9 = 0 THEN NULL ELSE (g - 900) * 1000.123456 END
"""


@pytest.fixture
def kinds(db, tierdb):
    """kinds: every common type, 2024-01-01 .. 07 tiered (T = 2024-01-08); plain_kinds, an untiered copy."""
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql(TYPES_DDL)
    db.psql(READ + "INSERT INTO kinds SELECT g, timestamptz '2024-01-01 00:00:00+00' + g * interval '7 minutes 3 s',"
            f" {KINDS_VALUES} FROM generate_series(1, 2000) g;"
            " CREATE TABLE plain_kinds (LIKE kinds); INSERT INTO plain_kinds SELECT * FROM kinds")
    proc = tierdb(["register", "--table", "public.kinds", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    assert cutline(db, "kinds")["S"] is not None
    return db


def test_jsonl_of_every_common_type(kinds, tierdb):
    db = kinds
    # New keys on cold days, and keys already in the lake (upserts), with every value shape.
    stage(db, "incoming", f"SELECT id, ts, {KINDS_VALUES} FROM ("
          " SELECT s.g + 3 AS g, s.g AS id, timestamptz '2024-01-02 00:00:00+00' + s.g * interval '11 minutes' AS ts"
          " FROM generate_series(1, 300) s(g) UNION ALL"
          " SELECT s.g, 50000 + s.g, timestamptz '2024-01-05 00:00:00+00' + s.g * interval '13 minutes'"
          " FROM generate_series(1, 200) s(g)) r", table="kinds")
    assert db.query("SELECT count(*) FROM incoming WHERE ts >= '" + T_TEXT + "'") == [("0",)]
    # row_to_json writes float8 -0 as the JSON number -0, which a JSON parser may read as the integer 0:
    # test_json_numbers_as_postgres_parses_them checks -0 on its own.
    db.psql("UPDATE incoming SET f = 0 WHERE f = 0")
    result = ingested(ingest(tierdb, "--table", "public.kinds", "--jsonl", "-",
                             input=jsonl_of(db, "SELECT * FROM incoming")))
    upsert_plain(db, "incoming", plain="plain_kinds")
    assert (result["rows"], result["replaced"]) == (500, int(db.query(
        "SELECT count(*) FROM incoming WHERE id <= 2000 AND ts < '" + T_TEXT + "'")[0][0]))
    check_committed(db, result, table="kinds")
    assert_same(db, table="kinds", plain="plain_kinds")


def test_jsonl_value_spellings(kinds, tierdb):
    """Values as Postgres input syntax where JSON has none: numbers as strings or numbers, timestamps in any
    offset, bytea as \\x hex or base64, jsonb from any JSON value, a missing key as NULL."""
    db = kinds
    lines = [
        {"id": 90001, "ts": "2024-01-03T10:00:00+02:00", "i2": "12", "i4": 7, "i8": "-9223372036854775808",
         "n": "123.45678", "f": "NaN", "t": "x", "vc": "short", "b": "t", "d": "2000-02-29",
         "tsl": "2024-01-03 04:05:06.7", "tstz": "2024-01-03 04:05:06.123456-08", "tm": "23:59:59.999999",
         "u": "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "by": "\\x00ff10", "j": [1, "two", {"3": None}], "m": "ok"},
        {"id": 90002, "ts": "2024-01-04 00:00:00+00", "i2": -1, "n": 1e3, "f": "-Infinity", "b": False,
         "by": base64.b64encode(b"\x00\x01binary\xff").decode(), "j": {"k": ["v", 1.5]}, "m": "très content",
         "t": "a\tb\\c"},
        {"id": 90003, "ts": "2024-01-07 23:59:59.999999+00", "f": 2.5e-308, "t": "nul\u0001l"},
    ]
    expected = [
        "(90001, '2024-01-03T10:00:00+02:00', 12, 7, -9223372036854775808, 123.45678, 'NaN', 'x', 'short', true,"
        " '2000-02-29', '2024-01-03 04:05:06.7', '2024-01-03 04:05:06.123456-08', '23:59:59.999999',"
        " 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x00ff10', '[1, \"two\", {\"3\": null}]', 'ok')",
        "(90002, '2024-01-04 00:00:00+00', -1, NULL, NULL, 1000, '-Infinity', 'a' || chr(9) || 'b' || chr(92) || 'c',"
        " NULL, false, NULL, NULL, NULL,"
        " NULL, NULL, decode('" + base64.b64encode(b"\x00\x01binary\xff").decode() + "', 'base64'), '{\"k\": [\"v\", 1.5]}',"
        " 'très content')",
        "(90003, '2024-01-07 23:59:59.999999+00', NULL, NULL, NULL, NULL, 2.5e-308, 'nul' || chr(1) || 'l', NULL, NULL, NULL,"
        " NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    result = ingested(ingest(tierdb, "--table", "public.kinds", "--jsonl", "-", input=body))
    assert (result["rows"], result["replaced"]) == (3, 0)
    db.psql(READ + f"INSERT INTO plain_kinds ({KINDS_COLUMNS}) VALUES " + ", ".join(expected))
    assert_same(db, table="kinds", plain="plain_kinds")


KINDS_COLUMNS = "id, ts, i2, i4, i8, n, f, t, vc, b, d, tsl, tstz, tm, u, by, j, m"


def test_json_numbers_as_postgres_parses_them(kinds, tierdb):
    """A JSON number is the text Postgres parses: the sign of -0 in a float8, however it is spelled."""
    db = kinds
    body = (
        '{"id": 91001, "ts": "2024-01-03T00:00:00Z", "f": -0.0, "big": 1234.5}\n'
        '{"id": 91002, "ts": "2024-01-03T00:00:01Z", "f": "-0", "big": "-99999999999999999999999999999999.999999"}\n'
        '{"id": 91003, "ts": "2024-01-03T00:00:02Z", "f": -0, "big": 1e-6, "i8": 9223372036854775807}\n'
        '{"id": 91004, "ts": "2024-01-03T00:00:03Z", "f": 0.1, "big": "12345678901234567890123456789012.123456"}\n'
    )
    result = ingested(ingest(tierdb, "--table", "public.kinds", "--jsonl", "-", input=body))
    assert result["rows"] == 4
    db.psql("INSERT INTO plain_kinds (id, ts, f, big, i8) VALUES"
            " (91001, '2024-01-03 00:00:00+00', '-0', 1234.5, NULL),"
            " (91002, '2024-01-03 00:00:01+00', '-0', -99999999999999999999999999999999.999999, NULL),"
            " (91003, '2024-01-03 00:00:02+00', '-0', 0.000001, 9223372036854775807),"
            " (91004, '2024-01-03 00:00:03+00', 0.1, 12345678901234567890123456789012.123456, NULL)")
    got = db.query(READ + "SELECT id, f::text, big::text, i8 FROM kinds WHERE id > 91000 ORDER BY id")
    want = db.query(READ + "SELECT id, f::text, big::text, i8 FROM plain_kinds WHERE id > 91000 ORDER BY id")
    assert got == want
    assert_same(db, table="kinds", plain="plain_kinds")


@pytest.mark.parametrize("number", ["12345678901234567890123456789012.123456", "123456789012345678901234",
                                    "1234567890123456789.5"])
def test_a_json_number_is_kept_exactly_or_refused(kinds, tierdb, number):
    """A JSON number with more digits than a double holds, for a numeric(38,6) column: Postgres would take
    every digit. docs/ingest.md says to give such numbers as strings; a number given anyway must then be
    refused, naming the row and column, never committed rounded."""
    db = kinds
    body = ('{"id": 91101, "ts": "2024-01-03T00:00:00Z", "big": 1}\n'
            f'{{"id": 91102, "ts": "2024-01-03T00:00:01Z", "big": {number}}}\n')
    before = state(db, "kinds")
    proc = ingest(tierdb, "--table", "public.kinds", "--jsonl", "-", input=body)
    if proc.returncode != 0:
        assert proc.returncode == 1, proc.stderr
        assert "row 2:" in proc.stderr and "big" in proc.stderr, proc.stderr
        assert state(db, "kinds") == before
        return
    want = db.query(f"SELECT {number}::numeric(38,6)::text")
    assert db.query("SELECT big::text FROM kinds WHERE id = 91102") == want, "the number was rounded"


def test_jsonb_takes_any_json_value(kinds, tierdb):
    """json/jsonb columns take any JSON value; a JSON string is the JSON text itself (docs/ingest.md: so that
    `tierdb parquet cat` output ingests back), and one that is not JSON is refused with its row and column."""
    db = kinds
    values = ['{"a": [1, {"b": null}]}', "[1, 2]", "\"quoted\"", 42, 1.5, True, [], {}, {"a": [1, {"b": None}]}]
    body = "".join(json.dumps({"id": 92000 + i, "ts": f"2024-01-03T01:00:0{i}Z", "j": j}) + "\n"
                   for i, j in enumerate(values))
    ingested(ingest(tierdb, "--table", "public.kinds", "--jsonl", "-", input=body))
    db.psql("INSERT INTO plain_kinds (id, ts, j) VALUES"
            " (92000, '2024-01-03 01:00:00+00', '{\"a\": [1, {\"b\": null}]}'),"
            " (92001, '2024-01-03 01:00:01+00', '[1, 2]'), (92002, '2024-01-03 01:00:02+00', '\"quoted\"'),"
            " (92003, '2024-01-03 01:00:03+00', '42'), (92004, '2024-01-03 01:00:04+00', '1.5'),"
            " (92005, '2024-01-03 01:00:05+00', 'true'), (92006, '2024-01-03 01:00:06+00', '[]'),"
            " (92007, '2024-01-03 01:00:07+00', '{}'),"
            " (92008, '2024-01-03 01:00:08+00', '{\"a\": [1, {\"b\": null}]}')")
    assert_same(db, table="kinds", plain="plain_kinds")
    before = state(db, "kinds")
    proc = ingest(tierdb, "--table", "public.kinds", "--jsonl", "-",
                  input=json.dumps({"id": 92100, "ts": "2024-01-03T02:00:00Z", "j": {"ok": 1}}) + "\n"
                  + json.dumps({"id": 92101, "ts": "2024-01-03T02:00:01Z", "j": "not json"}) + "\n")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # (row 2: the JSON value's own "line 1" in Postgres' error context is not the row)
    assert ": row 2:" in proc.stderr and "column j" in proc.stderr, proc.stderr
    assert state(db, "kinds") == before


def test_parquet_of_every_common_type(kinds, tierdb, tmp_path):
    """The lake's rows of every type, read by pyiceberg into Arrow and written by pyarrow under new keys (without
    field ids: rewritten), read back as the same values."""
    db = kinds
    if lake_files.ON_S3:
        pytest.skip("pyiceberg reads the local lake here")
    pyiceberg_table = pytest.importorskip("pyiceberg.table")
    import pyarrow as pa
    import pyarrow.compute as pc

    cut = cutline(db, "kinds")
    arrow = pyiceberg_table.StaticTable.from_metadata(cut["props"]["metadata_location"]).scan(
        snapshot_id=cut["S"]).to_arrow()
    assert arrow.num_rows == int(db.query(f"SELECT count(*) FROM plain_kinds WHERE ts < '{T_TEXT}'")[0][0])
    arrow = arrow.set_column(arrow.schema.get_field_index("id"), "id", pc.add(arrow["id"], 1_000_000))
    schema = pa.schema([pa.field(f.name, f.type, nullable=f.nullable) for f in arrow.schema])  # no field ids
    source = write_parquet(pa.Table.from_arrays(arrow.columns, schema=schema), tmp_path / "kinds.parquet")
    result = ingested(ingest(tierdb, "--table", "public.kinds", "--file", source))
    assert (result["rows"], result["replaced"], result["files_adopted"]) == (arrow.num_rows, 0, 0)
    db.psql(READ + "INSERT INTO plain_kinds SELECT id + 1000000, ts, i2, i4, i8, n, f, t, vc, b, d, tsl, tstz, tm, u,"
                   f" by, j, m, big FROM plain_kinds WHERE ts < '{T_TEXT}'")
    assert_same(db, table="kinds", plain="plain_kinds")


# ------------------------------------------------------------------ upserts


def test_upsert_replaces_lake_rows_before_and_after_the_fold(events, tierdb):
    db = events
    # Keys 5 .. 500 step 5 live in the lake; some move to another day (still cold), one to the day before.
    stage(db, "incoming", "SELECT id, CASE WHEN id % 3 = 0 THEN ts + interval '2 days' ELSE ts END,"
                          " 'replaced ' || id, amount, 'ingest' FROM plain WHERE id % 5 = 0 AND id <= 500"
                          " UNION ALL " + new_rows(1, 20))
    assert db.query("SELECT count(*) FROM incoming WHERE ts >= '" + T_TEXT + "'") == [("0",)]
    result = ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM incoming")))
    upsert_plain(db, "incoming")
    assert (result["rows"], result["replaced"]) == (120, 100)
    check_committed(db, result)
    assert_same(db)
    # The replaced rows are gone from the lake too: one row per key (`lake cat` applies the deletes).
    c = cutline(db, "events")
    cat = tierdb(["lake", "cat", c["ref"], "--snapshot", str(c["S"])])
    assert cat.returncode == 0, cat.stderr
    ids = [json.loads(line)["id"] for line in cat.stdout.splitlines()]
    assert len(ids) == len(set(ids))
    assert {json.loads(line)["v"] for line in cat.stdout.splitlines() if json.loads(line)["id"] == 15} == \
        {"replaced 15"}
    # A second ingest of the same keys replaces the replacements.
    db.psql("UPDATE incoming SET v = 'again ' || id")
    result = ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM incoming")))
    upsert_plain(db, "incoming")
    assert (result["rows"], result["replaced"]) == (120, 120)
    assert_same(db)
    # the daemon's next cycles change nothing a reader sees
    run_once(tierdb, LAG)
    assert_same(db)


def test_upsert_over_delta_rows_before_and_after_the_fold(events, tierdb):
    db = events
    tid = cutline(db, "events")["table_id"]
    # Corrections through transparent writes: cold rows now in the delta (an update, a delete, an insert).
    for table in ("events", "plain"):
        db.psql(READ + f"UPDATE {table} SET v = 'delta ' || id WHERE id IN (20, 25, 30);"
                       f" DELETE FROM {table} WHERE id = 35;"
                       f" INSERT INTO {table} VALUES (100001, '2024-01-03 01:00+00', 'delta insert', 1, 'sql')")
    assert int(db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {tid}")[0][0]) == 5
    assert_same(db)
    # The ingest replaces 20 and 25 (delta upserts over lake rows), 35 (a delta tombstone), 100001 (a delta-only
    # row); 30's correction stays in the delta.
    stage(db, "incoming", "SELECT id, ts, 'ingested ' || id, amount, 'ingest' FROM plain WHERE id IN (20, 25, 100001)"
                          " UNION ALL SELECT 35, timestamptz '2024-01-01 05:00+00', 'back again', 3.5, 'ingest'")
    result = ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM incoming")))
    upsert_plain(db, "incoming")
    assert result["rows"] == 4
    check_committed(db, result)
    assert_same(db)
    # The replaced keys' delta rows were cleared with the publish; 30's stays.
    assert db.query(f"SELECT pk FROM tierdb.delta WHERE table_id = {tid} ORDER BY pk") == [("30",)]
    proc = run_once(tierdb, LAG)
    assert "fold: operation" in proc.stderr, proc.stderr
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {tid}") == [("0",)]
    assert_same(db)
    # and a new correction of an ingested row after the fold
    for table in ("events", "plain"):
        db.psql(READ + f"UPDATE {table} SET amount = 99 WHERE id = 100001")
    assert_same(db)
    run_once(tierdb, LAG)
    assert_same(db)
    # ingest.h: `replaced` counts "keys that were already in the lake or the delta": 20, 25, 35 (in the lake,
    # 35 deleted by a delta tombstone) and 100001 (only in the delta).
    assert result["replaced"] == 4, result


def test_an_empty_batch_commits_nothing(events, tierdb, tmp_path):
    db = events
    before = state(db)
    (tmp_path / "empty.jsonl").write_text("\n\n")
    result = ingested(ingest(tierdb, "--jsonl", tmp_path / "empty.jsonl", "--jsonl", "-", input=""))
    assert (result["rows"], result["committed"], result["files_written"], result["files_adopted"]) == (0, False, 0, 0)
    assert state(db) == before


def test_a_read_pin_stops_an_ingest_that_would_clear_delta_rows(events, tierdb):
    """A pinned reader still merges the delta's corrections of S: an ingest replacing keys that have some stops
    without committing; one that clears none commits under the pin."""
    db = events
    c = cutline(db, "events")
    for table in ("events", "plain"):
        db.psql(READ + f"UPDATE {table} SET v = 'corrected' WHERE id = 20")
    db.psql("INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi, expires_at)"
            f" VALUES ({c['table_id']}, {c['S']}, {c['T']}, now() + interval '1 hour')")
    stage(db, "clean", new_rows(1, 10))
    result = ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM clean")))
    upsert_plain(db, "clean")
    check_committed(db, result)
    assert_same(db)

    before = state(db)
    stage(db, "over_delta", "SELECT id, ts, 'ingested', amount, src FROM plain WHERE id IN (20, 21)")
    proc = ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM over_delta"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pin" in proc.stderr, proc.stderr
    assert state(db) == before
    assert_same(db)

    db.psql("DELETE FROM tierdb.read_pins")
    result = ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM over_delta")))
    upsert_plain(db, "over_delta")
    check_committed(db, result)
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {c['table_id']}") == [("0",)]
    assert_same(db)


METER_DDL = (
    "CREATE TABLE meter (site int NOT NULL, seq int NOT NULL, k bigint NOT NULL, note text, reading float8)"
    " PARTITION BY RANGE (k);\n"
    "DO $$ BEGIN FOR p IN 0..9 LOOP"
    "  EXECUTE format('CREATE TABLE %I PARTITION OF meter FOR VALUES FROM (%s) TO (%s)',"
    "    'meter_' || p, p * 1000, (p + 1) * 1000);"
    " END LOOP; END $$;\n"
    # (site, seq) is unique (g = 7 * seq + site); k scatters the rows over 0 .. 7999.
    "INSERT INTO meter SELECT g % 7, g / 7, (g * 7919) % 8000, 'n' || g, g / 3.0 FROM generate_series(1, 4000) g;\n"
    "CREATE TABLE plain_meter (LIKE meter); ALTER TABLE plain_meter ADD PRIMARY KEY (site, seq);"
    " INSERT INTO plain_meter SELECT * FROM meter;\n"
)


METER_QUERIES = ("SELECT count(*), sum(seq), sum(k) FROM {t} WHERE k < 4000",
                 "SELECT site, count(*), max(note) FROM {t} GROUP BY 1 ORDER BY 1",
                 "SELECT * FROM {t} WHERE site = 3 AND seq BETWEEN 100 AND 120 ORDER BY seq")


def test_a_composite_key_and_an_integer_tier_key(db, tierdb):
    """pk (site, seq), tier key k bigint, T = 4000: upserts match on both key columns, a key moved to another
    k is deleted where it was, and the rules name the composite key."""
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql(METER_DDL)
    proc = tierdb(["register", "--table", "public.meter", "--pk", "site,seq", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "3500")
    assert cutline(db, "meter")["T"] == 4000
    # Existing cold keys (some moved to another k below T), keys sharing a site or a seq with them, new keys.
    stage(db, "incoming", "SELECT site, seq, CASE WHEN seq % 2 = 0 THEN (k + 1500) % 4000 ELSE k END, 'ingested', -1"
                          " FROM plain_meter WHERE k < 4000 AND seq % 5 = 0"
                          " UNION ALL SELECT 7 + g % 3, g, g * 3, 'new', g FROM generate_series(1, 300) g",
          table="meter")
    result = ingested(ingest(tierdb, "--table", "public.meter", "--jsonl", "-",
                             input=jsonl_of(db, "SELECT * FROM incoming")))
    db.psql("DELETE FROM plain_meter WHERE (site, seq) IN (SELECT site, seq FROM incoming);"
            " INSERT INTO plain_meter SELECT * FROM incoming")
    replaced = int(db.query("SELECT count(*) FROM incoming WHERE site < 7")[0][0])
    assert (result["rows"], result["replaced"]) == (int(db.query("SELECT count(*) FROM incoming")[0][0]), replaced)
    check_committed(db, result, table="meter")
    assert_same(db, table="meter", plain="plain_meter", order="site, seq", queries=METER_QUERIES)

    before = state(db, "meter", plain_order="site, seq")
    (hot_site, hot_seq) = db.query("SELECT site, seq FROM plain_meter WHERE k >= 4000 ORDER BY 1, 2 LIMIT 1")[0]
    for lines, row, words in [
        ([{"site": 20, "seq": 1, "k": 5}, {"site": 20, "seq": 2, "k": 6}, {"site": 20, "seq": 1, "k": 7}], 3,
         ["repeats"]),
        ([{"site": 20, "seq": 1, "k": 5}, {"site": int(hot_site), "seq": int(hot_seq), "k": 6}], 2, ["heap"]),
        ([{"site": 20, "seq": 1, "k": 3999}, {"site": 20, "seq": 2, "k": 4000}], 2, ["cut-line"]),
        ([{"site": 20, "seq": 1, "k": 5}, {"site": None, "seq": 2, "k": 6}], 2, ["site"]),
    ]:
        proc = ingest(tierdb, "--table", "public.meter", "--jsonl", "-",
                      input="".join(json.dumps(line) + "\n" for line in lines))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f": row {row}:" in proc.stderr and any(w in proc.stderr for w in words), proc.stderr
        assert state(db, "meter", plain_order="site, seq") == before
    run_once(tierdb, "3500")
    assert_same(db, table="meter", plain="plain_meter", order="site, seq", queries=METER_QUERIES)


def test_generated_columns_are_computed_never_taken(db, tierdb, tmp_path):
    """docs/ingest.md: a generated column is computed as the table computes it; a JSONL key naming one is an
    error, a Parquet column for one is not taken (and the file is rewritten)."""
    import pyarrow as pa

    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql("ALTER TABLE events ADD COLUMN doubled numeric GENERATED ALWAYS AS (amount * 2) STORED;"
            " CREATE TABLE plain (LIKE events INCLUDING GENERATED); INSERT INTO plain (id, ts, v, amount)"
            " SELECT id, ts, v, amount FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    stage(db, "incoming", "SELECT 100000 + g, timestamptz '2024-01-03 00:00+00' + g * interval '1 minute',"
                          " 'gen ' || g, g * 1.25 FROM generate_series(1, 40) g")
    body = jsonl_of(db, "SELECT id, ts, v, amount FROM incoming WHERE id <= 100020")
    source = tmp_path / "with-doubled.parquet"
    rows = db.query(READ + "SELECT id, (extract(epoch FROM ts) * 1000000)::bigint, v, amount::text FROM incoming"
                           " WHERE id > 100020 ORDER BY id")
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    write_parquet(pa.table({
        "id": pa.array([int(r[0]) for r in rows], pa.int64()),
        "ts": pa.array([epoch + datetime.timedelta(microseconds=int(r[1])) for r in rows], pa.timestamp("us", tz="UTC")),
        "v": [r[2] for r in rows],
        "amount": pa.array([decimal.Decimal(r[3]) for r in rows], pa.decimal128(12, 2)),
        "doubled": pa.array([decimal.Decimal(-1)] * len(rows), pa.decimal128(12, 2)),  # wrong on purpose
    }), source)
    result = ingested(ingest(tierdb, "--jsonl", "-", "--file", source, input=body))
    assert (result["rows"], result["files_adopted"]) == (40, 0)
    db.psql("INSERT INTO plain (id, ts, v, amount) SELECT id, ts, v, amount FROM incoming")
    assert_same(db)
    assert db.query("SELECT count(*) FROM events WHERE id > 100000 AND doubled = amount * 2") == [("40",)]

    before = state(db)
    proc = ingest(tierdb, "--jsonl", "-", input=json.dumps(
        {"id": 100100, "ts": "2024-01-03T05:00:00Z", "amount": 1}) + "\n" + json.dumps(
        {"id": 100101, "ts": "2024-01-03T05:00:01Z", "amount": 1, "doubled": 2}) + "\n")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ": row 2:" in proc.stderr and "doubled" in proc.stderr, proc.stderr
    assert state(db) == before


def test_jsonl_with_crlf_line_ends_and_a_long_value(events, tierdb, tmp_path):
    """A JSONL file written on Windows (CRLF), and a line of several megabytes."""
    db = events
    stage(db, "incoming", new_rows(1, 20))
    db.psql("UPDATE incoming SET v = repeat('long é ' || id, 400000) WHERE id = 100007")  # ~4.4 MB
    (tmp_path / "crlf.jsonl").write_bytes(jsonl_of(db, "SELECT * FROM incoming").replace("\n", "\r\n").encode())
    result = ingested(ingest(tierdb, "--jsonl", tmp_path / "crlf.jsonl"))
    upsert_plain(db, "incoming")
    assert result["rows"] == 20
    assert_same(db)


def test_names_that_need_quoting(db, tierdb):
    """A schema, a table and columns whose names need quotes in SQL (mixed case, spaces, a quote)."""
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql('CREATE SCHEMA "Sales Data";'
            ' CREATE TABLE "Sales Data"."My ""Events""" ("Id" bigint NOT NULL, "Happened At" timestamptz NOT NULL,'
            ' "Note\'s" text) PARTITION BY RANGE ("Happened At");'
            " DO $$ BEGIN FOR d IN 0..9 LOOP"
            "  EXECUTE format('CREATE TABLE %I.%I PARTITION OF \"Sales Data\".\"My \"\"Events\"\"\" FOR VALUES"
            " FROM (%L) TO (%L)', 'Sales Data', 'part ' || d, timestamptz '2024-01-01 00:00+00' + d * interval '1 day',"
            "    timestamptz '2024-01-01 00:00+00' + (d + 1) * interval '1 day');"
            " END LOOP; END $$;"
            ' INSERT INTO "Sales Data"."My ""Events""" SELECT g, timestamptz \'2024-01-01 00:00+00\''
            " + g * interval '5 minutes', 'n' || g FROM generate_series(1, 2800) g;"
            ' CREATE TABLE quoted_plain (LIKE "Sales Data"."My ""Events"""); INSERT INTO quoted_plain'
            ' SELECT * FROM "Sales Data"."My ""Events"""')
    proc = tierdb(["register", "--table", 'Sales Data.My "Events"', "--pk", "Id", "--tier-key", "Happened At"])
    if proc.returncode != 0:
        pytest.skip(f"register does not take these names: {proc.stderr.strip()}")
    run_once(tierdb, LAG)
    lines = [{"Id": 90000 + i, "Happened At": f"2024-01-0{2 + i % 4}T10:00:00Z", "Note's": f"quoted {i}"}
             for i in range(10)] + [{"Id": 3, "Happened At": "2024-01-01T00:15:00Z", "Note's": "replaced"}]
    result = ingested(ingest(tierdb, "--table", 'Sales Data.My "Events"', "--jsonl", "-",
                             input="".join(json.dumps(line) + "\n" for line in lines)))
    assert (result["rows"], result["replaced"]) == (11, 1)
    db.psql("DELETE FROM quoted_plain WHERE \"Id\" = 3; INSERT INTO quoted_plain VALUES (3, '2024-01-01 00:15+00',"
            " 'replaced')" + "".join(f", ({90000 + i}, '2024-01-0{2 + i % 4} 10:00+00', 'quoted {i}')" for i in range(10)))
    assert_same(db, table='"Sales Data"."My ""Events"""', plain="quoted_plain", order='"Id"', queries=())


def test_history_before_the_first_tiering(db, tierdb):
    """A table registered but never tiered (T is its lowest partition bound, the lake has no snapshot) takes
    history below T as the lake's first snapshot; tiering then appends to it."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql("ALTER TABLE events ADD COLUMN src text; CREATE TABLE plain (LIKE events); INSERT INTO plain"
            " SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    assert cutline(db, "events")["S"] is None
    stage(db, "incoming", "SELECT 500000 + g, timestamptz '2023-01-01 00:00+00' + g * interval '7 hours',"
                          " 'history ' || g, g / 4.0, 'ingest' FROM generate_series(1, 1200) g")
    result = ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM incoming")))
    upsert_plain(db, "incoming")
    assert (result["rows"], result["replaced"]) == (1200, 0)
    check_committed(db, result)
    assert_same(db)
    run_once(tierdb, LAG)
    assert cutline(db, "events")["S"] != int(result["snapshot_id"])
    assert_same(db)


# ------------------------------------------------------------------ Parquet sources


def new_files(before, after):
    return sorted(set(after) - set(before))


def test_parquet_with_the_lake_field_ids_is_adopted_byte_for_byte(events, tierdb, tmp_path):
    db = events
    fields = lake_fields(db)
    stage(db, "incoming", new_rows(1, 45))  # 2024-01-02 only: one lake partition
    source = write_parquet(events_arrow(db, "SELECT * FROM incoming", fields), tmp_path / "adopt.parquet")
    files_before = data_files(db)
    result = ingested(ingest(tierdb, "--file", source))
    upsert_plain(db, "incoming")
    assert (result["rows"], result["files_adopted"], result["files_written"]) == (45, 1, 0)
    assert result["bytes"] == source.stat().st_size
    check_committed(db, result)
    (added,) = new_files(files_before, data_files(db))
    assert lake_files.read_bytes(added) == source.read_bytes()
    assert source.exists(), "the source is copied, not moved"
    assert_same(db)


def test_parquet_under_the_table_location_is_referenced_in_place(events, tierdb):
    db = events
    if lake_files.ON_S3:
        pytest.skip("--file takes a local path; a file under an S3 table location is not one")
    fields = lake_fields(db)
    stage(db, "incoming", new_rows(1, 30, day="2024-01-05"))
    staged = Path(lake_files.local(cutline(db, "events")["ref"])) / "data" / "staged"
    staged.mkdir(parents=True)
    source = write_parquet(events_arrow(db, "SELECT * FROM incoming", fields), staged / "in-place.parquet")
    content = source.read_bytes()
    files_before = data_files(db)
    result = ingested(ingest(tierdb, "--file", source))
    upsert_plain(db, "incoming")
    assert (result["files_adopted"], result["files_written"]) == (1, 0)
    check_committed(db, result)
    assert data_files(db) == files_before, "no copy is made"
    assert source.read_bytes() == content
    pyiceberg_table = pytest.importorskip("pyiceberg.table")
    table = pyiceberg_table.StaticTable.from_metadata(cutline(db, "events")["props"]["metadata_location"])
    paths = {lake_files.normalize(f["file_path"]) for f in table.inspect.data_files().to_pylist()}
    assert str(source) in paths
    assert_same(db)


def rewritten_cases():
    """(name, make(db, fields, path) -> path) of Parquet files that must be rewritten."""
    import pyarrow as pa

    def no_field_ids(db, fields, path):
        return write_parquet(events_arrow(db, "SELECT * FROM incoming"), path)

    def two_partitions(db, fields, path):
        db.psql(READ + "UPDATE incoming SET ts = ts + interval '1 day' WHERE id % 2 = 0")
        return write_parquet(events_arrow(db, "SELECT * FROM incoming", fields), path)

    def nanoseconds(db, fields, path):
        return write_parquet(events_arrow(db, "SELECT * FROM incoming", fields, ts_unit="ns"), path)

    def int96(db, fields, path):
        return write_parquet(events_arrow(db, "SELECT * FROM incoming", fields), path,
                             use_deprecated_int96_timestamps=True)

    def other_types(db, fields, path):
        # field ids, but amount as a string: not the lake's type
        table = events_arrow(db, "SELECT * FROM incoming", fields)
        schema = table.schema
        table = table.set_column(3, schema.field(3).with_type(pa.string()), table.column(3).cast(pa.string()))
        return write_parquet(table, path)

    def columns_shuffled_and_missing(db, fields, path):
        # columns in another order, v missing (NULL)
        db.psql("UPDATE incoming SET v = NULL")
        table = events_arrow(db, "SELECT * FROM incoming").select(["src", "amount", "ts", "id"])
        return write_parquet(table, path)

    def default_decimals(db, fields, path):
        # field ids and the lake's types, but amount as pyarrow writes decimals by default (FIXED_LEN_BYTE_ARRAY
        # where the lake writes INT64): valid Iceberg, not the lake's Parquet type
        return write_parquet(events_arrow(db, "SELECT * FROM incoming", fields), path, store_decimal_as_integer=False)

    return [no_field_ids, two_partitions, nanoseconds, int96, other_types, columns_shuffled_and_missing,
            default_decimals]


@pytest.mark.parametrize("make", rewritten_cases(), ids=lambda f: f.__name__)
def test_other_parquet_files_are_rewritten(events, tierdb, tmp_path, make):
    db = events
    stage(db, "incoming", new_rows(1, 60, day="2024-01-03"))
    source = make(db, lake_fields(db), tmp_path / "source.parquet")
    content = source.read_bytes()
    files_before = data_files(db)
    result = ingested(ingest(tierdb, "--file", source))
    upsert_plain(db, "incoming")
    assert (result["rows"], result["files_adopted"]) == (60, 0)
    assert result["files_written"] >= 1
    check_committed(db, result)
    for added in new_files(files_before, data_files(db)):
        assert lake_files.read_bytes(added) != content
    assert_same(db)


def test_parquet_written_by_spark(events, tierdb, tmp_path):
    db = events
    try:
        import seam  # noqa: F401  (puts tests/interop on the path)
        from spark_support import spark_session
        spark = spark_session()
    except (Exception, pytest.fail.Exception) as e:  # noqa: BLE001  (spark_support fails when it cannot start)
        pytest.skip(f"Spark cannot start here (TIERDB_SPARK_JARS, JAVA_HOME?): {e}")
    from pyspark.sql import types as T

    stage(db, "incoming", new_rows(1, 100, "spark") + " UNION ALL " + new_rows(101, 100, "spark", day="2024-01-05"))
    rows = db.query(READ + "SELECT id, (extract(epoch FROM ts) * 1000000)::bigint, v, amount::text, src"
                           " FROM incoming ORDER BY id")
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    data = [(int(r[0]), epoch + datetime.timedelta(microseconds=int(r[1])), r[2],
             None if r[3] is None else decimal.Decimal(r[3]), r[4]) for r in rows]
    schema = T.StructType([
        T.StructField("id", T.LongType(), False), T.StructField("ts", T.TimestampType(), False),
        T.StructField("v", T.StringType(), True), T.StructField("amount", T.DecimalType(12, 2), True),
        T.StructField("src", T.StringType(), False)])
    out = tmp_path / "spark-out"
    spark.createDataFrame(data, schema).repartition(3).write.parquet(str(out))
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) >= 2
    args = [a for p in parts for a in ("--file", p)]
    result = ingested(ingest(tierdb, *args))
    upsert_plain(db, "incoming")
    assert result["rows"] == 200 and result["files_written"] >= 1 and result["files_adopted"] == 0
    check_committed(db, result)
    assert_same(db)


def test_a_data_file_of_another_tierdb_lake(events, tierdb, tmp_path):
    """A data file copied out of another tiered table's lake (same columns, same field ids) ingests as it is."""
    db = events
    db.psql("CREATE TABLE other (LIKE events INCLUDING CONSTRAINTS) PARTITION BY RANGE (ts);"
            " CREATE TABLE other_a PARTITION OF other FOR VALUES FROM ('2024-01-02 00:00+00') TO ('2024-01-03 00:00+00');"
            " CREATE TABLE other_b PARTITION OF other FOR VALUES FROM ('2024-01-03 00:00+00') TO ('2024-01-10 00:00+00');"
            " INSERT INTO other " + new_rows(1, 40, "other") + ";"
            " INSERT INTO other SELECT 200000 + g, timestamptz '2024-01-09 00:00+00' + g * interval '1 minute',"
            " 'hot', 1, 'other' FROM generate_series(1, 10) g")
    proc = tierdb(["register", "--table", "public.other", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)  # max(ts) 2024-01-09 00:10 - 2d: other_a moves, events stays as it is
    assert int(db.query("SET tierdb.transparent_reads = off; SELECT count(*) FROM other")[0][0]) == 10
    theirs = sorted(f for f in data_files(db, "other") if f.endswith(".parquet"))
    assert theirs
    assert lake_fields(db, "other") == lake_fields(db, "events")
    copies = []
    for i, f in enumerate(theirs):
        copies.append(tmp_path / f"copied-{i}.parquet")
        copies[-1].write_bytes(lake_files.read_bytes(f))
    stage(db, "incoming", "SELECT * FROM other WHERE ts < '2024-01-03 00:00+00'")
    result = ingested(ingest(tierdb, *[a for c in copies for a in ("--file", c)]))
    upsert_plain(db, "incoming")
    assert (result["rows"], result["files_adopted"], result["files_written"]) == (40, len(copies), 0)
    check_committed(db, result)
    assert_same(db)


# ------------------------------------------------------------------ independent readers


def test_pyiceberg_and_duckdb_read_the_ingested_lake(events, tierdb, tmp_path):
    db = events
    if lake_files.ON_S3:
        pytest.skip("pyiceberg and DuckDB read the local lake here")
    pyiceberg_table = pytest.importorskip("pyiceberg.table")
    duckdb = pytest.importorskip("duckdb")
    # appends only (new keys): no equality deletes, which pyiceberg cannot apply
    stage(db, "a", new_rows(1, 80, "jsonl"))
    stage(db, "b", new_rows(81, 40, "adopted", day="2024-01-06"))
    source = write_parquet(events_arrow(db, "SELECT * FROM b", lake_fields(db)), tmp_path / "b.parquet")
    result = ingested(ingest(tierdb, "--jsonl", "-", "--file", source, input=jsonl_of(db, "SELECT * FROM a")))
    upsert_plain(db, "a")
    upsert_plain(db, "b")
    assert result["files_adopted"] == 1
    cut = cutline(db, "events")
    want = [(int(i), int(us), v, a) for i, us, v, a in db.query(
        READ + "SELECT id, (extract(epoch FROM ts) * 1000000)::bigint, v, amount::text FROM plain"
               f" WHERE ts < '{T_TEXT}' ORDER BY id")]

    def canonical(ids, stamps, vs, amounts):
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return sorted((i, (s - epoch) // datetime.timedelta(microseconds=1), v, None if a is None else str(a))
                      for i, s, v, a in zip(ids, stamps, vs, amounts))

    table = pyiceberg_table.StaticTable.from_metadata(cut["props"]["metadata_location"])
    arrow = table.scan(snapshot_id=cut["S"]).to_arrow()
    got = canonical(*(arrow.column(n).to_pylist() for n in ("id", "ts", "v", "amount")))
    assert got == want

    from test_alter_table import duckdb_lake_rows
    rows = duckdb_lake_rows({"ref": cut["ref"], "S": cut["S"]},
                            "id, epoch_us(ts), v, amount")
    assert [(int(i), int(us), v, a) for i, us, v, a in rows] == want


# ------------------------------------------------------------------ validation failures


def bad_jsonl(db, lines):
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)


def good(i, day="2024-01-02", **over):
    row = {"id": 700000 + i, "ts": f"{day}T01:00:{i % 60:02d}Z", "v": f"good {i}", "amount": "1.25", "src": "bad"}
    row.update(over)
    return row


# name -> (sources: [(kind, file name, lines)], the (source, row) pairs one of which the message must name (row None:
# any row, or none, for an error about a whole file), words one of which the message holds). Rows are 1-based
# lines of a JSONL file, rows of a Parquet file. Where two rows break a rule together, either may be named.
FAILURES = {
    "at-or-above-T": ([("jsonl", "a.jsonl", [good(1), good(2), good(3, ts="2024-01-08T00:00:00Z")])],
                      [("a.jsonl", 3)], ["cut-line", "cutline", "cut line", "heap"]),
    "far-above-T": ([("jsonl", "a.jsonl", [good(1, ts="2024-01-09T12:00:00Z")])],
                    [("a.jsonl", 1)], ["cut-line", "cutline", "cut line", "heap"]),
    "below-R": ([("jsonl", "a.jsonl", [good(1, day="2024-01-05"), good(2, day="2024-01-02")])],
                [("a.jsonl", 2)], ["retention"]),
    "duplicate-in-a-file": ([("jsonl", "a.jsonl", [good(1), good(2), good(3), good(2, v="again")])],
                            [("a.jsonl", 4), ("a.jsonl", 2)], ["repeats", "twice", "duplicate", "more than once"]),
    "duplicate-across-files": ([("jsonl", "a.jsonl", [good(1), good(2)]),
                                ("jsonl", "b.jsonl", [good(3), good(4), good(1, v="again")])],
                               [("b.jsonl", 3), ("a.jsonl", 1)], ["repeats", "twice", "duplicate", "more than once"]),
    "heap-key": ([("jsonl", "a.jsonl", [good(1), {**good(2), "id": 2990}])],
                 [("a.jsonl", 2)], ["heap"]),
    "bad-type": ([("jsonl", "a.jsonl", [good(1), good(2, amount="12.x")])],
                 [("a.jsonl", 2)], ["amount", "numeric"]),
    "bad-timestamp": ([("jsonl", "a.jsonl", [good(1, ts="yesterday-ish")])],
                      [("a.jsonl", 1)], ["ts", "timestamp"]),
    "not-null": ([("jsonl", "a.jsonl", [good(1), good(2), {k: v for k, v in good(3).items() if k != "src"}])],
                 [("a.jsonl", 3)], ["src", "null"]),
    "explicit-null-key": ([("jsonl", "a.jsonl", [good(1, id=None)])], [("a.jsonl", 1)], ["id", "null"]),
    "check": ([("jsonl", "a.jsonl", [good(1), good(2, amount="-60000")])],
              [("a.jsonl", 2)], ["amount_in_range", "check"]),
    "unknown-key": ([("jsonl", "a.jsonl", [good(1), good(2, colour="red")])],
                    [("a.jsonl", 2)], ["colour"]),
    "malformed-json": ([("jsonl", "a.jsonl", [good(1), good(2), '{"id": 700003, "ts": ', good(4)])],
                       [("a.jsonl", 3)], ["json", "JSON"]),
    "not-an-object": ([("jsonl", "a.jsonl", [good(1), "[1, 2]"])], [("a.jsonl", 2)], ["object"]),
    # blank lines are skipped but counted
    "after-blank-lines": ([("jsonl", "a.jsonl", [good(1), "", "   ", good(2), good(3, amount="x")])],
                          [("a.jsonl", 5)], ["amount"]),
    # a row of the second row group of a Parquet file (10 rows a group) is numbered in the whole file
    "parquet-check-in-a-later-row-group": ([("parquet-groups-check", "p.parquet", None)], [("p.parquet", 25)],
                                           ["amount_in_range"]),
    "parquet-above-T-in-a-later-row-group": ([("parquet-groups-hot", "p.parquet", None)], [("p.parquet", 27)],
                                             ["cut-line", "cutline", "cut line", "heap"]),
    "parquet-unknown-column": ([("jsonl", "a.jsonl", [good(1)]), ("parquet-extra", "p.parquet", None)],
                               [("p.parquet", None)], ["colour"]),
    "parquet-duplicate-of-jsonl": ([("jsonl", "a.jsonl", [good(1), good(2)]), ("parquet", "p.parquet", None)],
                                   [("p.parquet", 1), ("p.parquet", 2), ("a.jsonl", 1), ("a.jsonl", 2)],
                                   ["repeats", "twice", "duplicate", "more than once"]),
    "parquet-above-T": ([("parquet-hot", "p.parquet", None)], [("p.parquet", 3)], ["cut-line", "cutline", "cut line", "heap"]),
}


def parquet_source(kind):
    """A three-row Parquet file of events' columns (keys 700001..3), or worse; "-groups-" ones have 30 rows."""
    import pyarrow as pa

    rows = [good(1), good(2), good(3)]
    if kind == "parquet-hot":
        rows[2]["ts"] = "2024-01-08T00:00:00.000001Z"
    if "-groups-" in kind:
        rows = [good(i) for i in range(1, 31)]
        if kind.endswith("check"):
            rows[24]["amount"] = "-50000.01"
        else:
            rows[26]["ts"] = "2024-01-09T00:00:00Z"
    table = pa.table({
        "id": pa.array([r["id"] for r in rows], pa.int64()),
        "ts": pa.array([datetime.datetime.fromisoformat(r["ts"].replace("Z", "+00:00")) for r in rows],
                       pa.timestamp("us", tz="UTC")),
        "v": pa.array([r["v"] for r in rows]),
        "amount": pa.array([decimal.Decimal(r["amount"]) for r in rows], pa.decimal128(12, 2)),
        "src": pa.array([r["src"] for r in rows]),
    })
    if kind == "parquet-extra":
        table = table.append_column("colour", pa.array(["red", "green", "blue"]))
    return table


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_a_failed_validation_changes_nothing(events, tierdb, tmp_path, case):
    db = events
    sources, named, words = FAILURES[case]
    # Something in the delta too, which a failed ingest must not clear.
    db.psql(READ + "UPDATE events SET v = 'in the delta' WHERE id IN (700, 1500)")
    if case == "below-R":
        db.psql("UPDATE tierdb.cutline SET retention_line ="
                " (extract(epoch FROM timestamptz '2024-01-03 00:00:00+00') * 1000000)::bigint")
    before = state(db)
    ops_before = ingest_ops(db)
    args = []
    for kind, name, content in sources:
        path = tmp_path / name
        if kind == "jsonl":
            path.write_text(bad_jsonl(db, content))
            args += ["--jsonl", path]
        else:
            write_parquet(parquet_source(kind), path, row_group_size=10)
            args += ["--file", path]
    proc = ingest(tierdb, *args)
    assert proc.returncode == 1, f"rc {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert proc.stdout == ""
    message = proc.stderr
    assert any(f"tierdb: {tmp_path / src}: " + ("" if row is None else f"row {row}:") in message
               for src, row in named), f"expected one of {named} named in:\n{message}"
    assert any(w.lower() in message.lower() for w in words), f"expected one of {words} in:\n{message}"
    assert state(db) == before
    assert all(phase in ("aborted", "done") for _, phase, _ in ingest_ops(db)), ingest_ops(db)
    assert len([o for o in ingest_ops(db) if o[1] == "done"]) == len([o for o in ops_before if o[1] == "done"])
    # and the table still takes a good ingest afterwards
    stage(db, "incoming", new_rows(1, 5, day="2024-01-06"))
    ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM incoming")))


def test_a_failed_ingest_over_an_earlier_one_changes_nothing(events, tierdb):
    """After a successful ingest (so the lake's current snapshot is an ingest's), a bad batch that also holds
    upserts of lake rows leaves the earlier ingest's rows as they were."""
    db = events
    stage(db, "first", new_rows(1, 30))
    ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM first")))
    upsert_plain(db, "first")
    before = state(db)
    body = jsonl_of(db, "SELECT id, ts, 'changed' AS v, amount, src FROM first") + json.dumps(good(1, amount="x")) + "\n"
    proc = ingest(tierdb, "--jsonl", "-", input=body)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ": row 31:" in proc.stderr and "amount" in proc.stderr, proc.stderr
    assert state(db) == before
    assert_same(db)


# ------------------------------------------------------------------ modes


def test_direct_mode_table(db, as_server_user):
    """A direct table (its lake written by the server: tierdb runs as the server's OS user, as in test_direct)."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    db.psql("ALTER TABLE events ADD COLUMN src text; CREATE TABLE plain (LIKE events); INSERT INTO plain"
            " SELECT * FROM events")
    proc = as_server_user(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--mode",
                           "direct"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_once(as_server_user, LAG)
    stage(db, "incoming", new_rows(1, 50) + " UNION ALL SELECT id, ts, 'replaced', amount, 'ingest' FROM plain"
                                            " WHERE id IN (3, 6, 9)")
    proc = as_server_user(["ingest", "--table", "public.events", "--jsonl", "-", "--json"],
                          input=jsonl_of(db, "SELECT * FROM incoming"))
    result = ingested(proc)
    upsert_plain(db, "incoming")
    assert (result["rows"], result["replaced"]) == (53, 3)
    check_committed(db, result)
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]
    assert_same(db)
    proc = as_server_user(["verify", "--table", "public.events"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mirrored_tables_are_refused(db, tierdb):
    from test_mirrored import make_table, register

    make_table(db, rows=50)
    register(tierdb)
    run_once(tierdb, "0")
    before = db.query("SELECT lake_snapshot_id FROM tierdb.cutline")
    proc = tierdb(["ingest", "--table", "public.m", "--jsonl", "-"],
                  input=json.dumps({"id": 999999, "ts": "2024-01-02T00:00:00Z"}) + "\n")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "mirrored" in proc.stderr, proc.stderr
    assert db.query("SELECT lake_snapshot_id FROM tierdb.cutline") == before
    assert db.query("SELECT count(*) FROM m WHERE id = 999999") == [("0",)]


def test_keep_heap_tables_are_refused(db, tierdb):
    make_events(db)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts", "--keep-heap"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    before = cutline(db, "events")
    proc = tierdb(["ingest", "--table", "public.events", "--jsonl", "-"],
                  input=json.dumps({"id": 999999, "ts": "2024-01-02T00:00:00Z"}) + "\n")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "keep-heap" in proc.stderr, proc.stderr
    assert cutline(db, "events") == before
    assert db.query("SELECT count(*) FROM events WHERE id = 999999") == [("0",)]


@pytest.mark.parametrize("setup, words", [
    ("GRANT INSERT ON events TO {role}", ["UPDATE", "privilege"]),
    ("GRANT SELECT, UPDATE ON events TO {role}", ["INSERT", "privilege"]),
    ("GRANT INSERT, UPDATE, SELECT ON events TO {role}; ALTER TABLE events ENABLE ROW LEVEL SECURITY;"
     " CREATE POLICY only_some ON events USING (id % 2 = 0)", ["row-level security", "policy"]),
])
def test_a_caller_without_the_rights_of_an_insert_and_update_is_refused(events, tierdb, setup, words):
    db = events
    role = f"loader_{db.name}"
    db.psql(f'CREATE ROLE "{role}" LOGIN; GRANT USAGE ON SCHEMA tierdb TO "{role}";'
            f' GRANT SELECT ON ALL TABLES IN SCHEMA tierdb TO "{role}";' + setup.format(role=f'"{role}"'))
    try:
        before = state(db)
        proc = ingest(tierdb, "--jsonl", "-", env={"PGUSER": role},
                      input=json.dumps(good(1)) + "\n")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert any(w in proc.stderr for w in words), proc.stderr
        assert state(db) == before
    finally:
        db.psql(f'DROP OWNED BY "{role}"; DROP ROLE "{role}"')


# The small ingest's start is swept over the daemon's first few hundred milliseconds: on this machine its
# commit lands inside the daemon's tiering or between tiering and fold at some of these delays.
@pytest.mark.parametrize("ingest_rows, ingest_delay", [(60000, 0.0)] + [(10, d / 100) for d in range(0, 40, 4)])
def test_an_ingest_beside_the_daemon_moving_t_and_folding(events, tierdb, ingest_rows, ingest_delay):
    """An ingest and a daemon cycle that tiers another day (T moves from 2024-01-08 to 01-09; the day holds
    100,000 rows, so tiering holds the table's lake lock a while) and folds delta rows, one of them for a key the
    ingest replaces, run at the same time: a large ingest started first, or a small one that arrives while
    tiering holds the lock and commits as soon as it is released. Whichever goes first, both succeed, the
    ingested rows are read back, the ingested row wins over the older correction, nothing else changes."""
    import threading
    import time

    db = events
    for table in ("events", "plain"):
        db.psql(READ + f"INSERT INTO {table} SELECT 400000 + g, timestamptz '2024-01-08 00:00+00'"
                       " + g * interval '800 milliseconds', 'day 8', 1, 'seed' FROM generate_series(1, 100000) g")
        db.psql(READ + f"UPDATE {table} SET v = 'corrected' WHERE id IN (20, 21)")
    stage(db, "incoming", "SELECT 300000 + g, timestamptz '2024-01-01 00:00+00' + g * interval '3 seconds',"
                          f" 'bulk ' || g, g % 1000, 'ingest' FROM generate_series(1, {ingest_rows}) g"
                          " UNION ALL SELECT id, ts, 'ingested', amount, 'ingest' FROM plain WHERE id = 20")
    body = jsonl_of(db, "SELECT * FROM incoming")
    results = {}

    def run_ingest():
        time.sleep(ingest_delay)
        results["ingest"] = ingest(tierdb, "--jsonl", "-", input=body)

    def run_daemon():
        results["run"] = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": "1d"})

    threads = [threading.Thread(target=run_ingest), threading.Thread(target=run_daemon)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = ingested(results["ingest"])
    upsert_plain(db, "incoming")
    assert result["rows"] == ingest_rows + 1
    assert_same(db)
    # the next cycle finishes whatever the first left (nothing, when it waited for the ingest as it should)
    run_once(tierdb, "1d")
    assert cutline(db, "events")["T"] == int(db.query(
        "SELECT (extract(epoch FROM timestamptz '2024-01-09 00:00+00') * 1000000)::bigint")[0][0])
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]
    assert_same(db)
    # docs/ingest.md: the daemon's tiering, fold and retention of the table wait for the ingest's lake lock;
    # they must not fail because an ingest committed while the cycle ran.
    assert results["run"].returncode == 0, results["run"].stderr


# ------------------------------------------------------------------ crashes


@pytest.mark.parametrize("settle_by", ["run", "ingest"])
@pytest.mark.parametrize("point, lands", [("ingest-before-commit", False), ("ingest-after-commit", True),
                                          ("ingest-after-commit-recorded", True)])
def test_kill_at_a_fault_point_then_recovery(events, tierdb, tmp_path, point, lands, settle_by):
    db = events
    # 11 has a correction in the delta, older than the ingest: the ingest's row must win if it lands (its
    # journal names the delta rows it clears), the correction must stay if it does not.
    for table in ("events", "plain"):
        db.psql(READ + f"UPDATE {table} SET v = 'corrected' WHERE id = 11")
    before = state(db)
    fields = lake_fields(db)
    stage(db, "incoming", new_rows(1, 60) + " UNION ALL SELECT id, ts, 'replaced', amount, 'ingest' FROM plain"
                                            " WHERE id IN (10, 11, 12)")
    stage(db, "adopted", new_rows(61, 20, day="2024-01-06"))
    source = write_parquet(events_arrow(db, "SELECT * FROM adopted", fields), tmp_path / "adopt.parquet")
    proc = ingest(tierdb, "--jsonl", "-", "--file", source, input=jsonl_of(db, "SELECT * FROM incoming"),
                  env={"TIERDB_FAULT": point})
    assert proc.returncode == -signal.SIGKILL, f"rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert f"fault point {point} reached" in proc.stderr, proc.stderr
    # Whatever the lake holds now, readers see the table as it was: S is not published.
    assert cutline(db, "events") == before["cutline"]
    assert rows_of(db, "events") == before["rows"]
    (op,) = ingest_ops(db)
    assert op[1] not in ("done", "aborted"), op
    interrupted_files = set(data_files(db)) - set(before["data_files"])  # what the killed ingest wrote or copied
    if lands:
        assert lake_current_snapshot(db) != before["lake_current"]
    else:
        assert lake_current_snapshot(db) == before["lake_current"]
        assert data_files(db) != before["data_files"], "the point is after the files were written"

    if settle_by == "run":
        run_once(tierdb, LAG)
    else:
        stage(db, "later", new_rows(500, 10, "later", day="2024-01-07"))
        ingested(ingest(tierdb, "--jsonl", "-", input=jsonl_of(db, "SELECT * FROM later")))
        upsert_plain(db, "later")
    ops = dict((o[0], o[1]) for o in ingest_ops(db))
    assert ops[op[0]] == ("done" if lands else "aborted"), ops
    if lands:
        upsert_plain(db, "incoming")
        upsert_plain(db, "adopted")
        assert cutline(db, "events")["S"] == lake_current_snapshot(db)
    else:
        # the files the interrupted ingest wrote or copied are gone
        assert interrupted_files
        assert not interrupted_files & set(data_files(db)), interrupted_files & set(data_files(db))
        if settle_by == "ingest":
            (later,) = [o for o in ingest_ops(db) if o[0] != op[0]]
            assert cutline(db, "events")["S"] == int(later[2])
    if lands:
        assert db.query("SELECT count(*) FROM tierdb.delta WHERE pk = '11'") == [("0",)]
    assert_same(db)
    run_once(tierdb, LAG)
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]
    assert_same(db)
