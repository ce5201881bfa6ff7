"""The Postgres -> lake type mapping (SPEC §6) and the binary COPY decoder the
daemon streams partitions through (cli/pgtypes.c, cli/pgcopy.c).

build/tools/copycat maps a table's columns, runs the daemon's binary COPY and
prints each decoded row as `tierdb lake cat` would print it from the lake.
Every value is checked against psql's text output of the same row, turned
into that rendering by a per-type normalizer written here independently of
the C code (timestamps to "YYYY-MM-DDTHH:MM:SS.ffffff[Z]" with ISO 8601
expanded years, bytea to base64, decimals as exact strings, floats by bits).
Values Iceberg cannot hold must fail naming the column, and damaged streams
(copycat --stream) must fail cleanly, never crash or print a wrong row.
"""

from __future__ import annotations

import base64
import json
import math
import random
import struct
import subprocess
import uuid

import pytest

from pg_cluster import BUILD_DIR, clean_env

COPYCAT = BUILD_DIR / "tools" / "copycat"

# The session settings the daemon pins (TDB_PG_SESSION_OPTIONS in
# cli/pgtypes.h); psql uses them too so that text forms agree.
SESSION = (
    "SET DateStyle = ISO; SET IntervalStyle = postgres; SET TimeZone = 'UTC';"
    " SET extra_float_digits = 3; SET bytea_output = hex;\n"
)


@pytest.fixture(scope="module")
def copycat_bin():
    if not COPYCAT.is_file():
        pytest.fail(f"{COPYCAT} is missing: run `make` first", pytrace=False)
    return COPYCAT


def run_copycat(db, table, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(COPYCAT), "--dsn", db.dsn, "--table", table, *map(str, args)],
        capture_output=True, timeout=120, env=clean_env(),
    )


def copycat_rows(db, table, *args):
    """(columns, rows) copycat prints for table: the mapped columns and one dict per row."""
    proc = run_copycat(db, table, *args)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    return json.loads(lines[0])["columns"], [json.loads(line) for line in lines[1:]]


def copycat_error(db, table, *args) -> str:
    """copycat's message for a run that must fail with exit status 1 and print no row."""
    proc = run_copycat(db, table, *args)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert len(proc.stdout.decode().splitlines()) <= 1  # the columns line, no row
    message = proc.stderr.decode()
    assert message.startswith("copycat: ") and message.count("\n") == 1, message
    return message


# ------------------------------------------------------------------ normalizers
# From Postgres' text output (ISO DateStyle, UTC) to render.h's JSON values.


def render_year(year: int) -> str:
    if 0 <= year <= 9999:
        return f"{year:04d}"
    return f"-{-year:04d}" if year < 0 else f"+{year}"


def split_era(text: str):
    """Postgres writes years before 1 AD as 'YYYY-MM-DD BC' (1 BC is year 0)."""
    if text.endswith(" BC"):
        return text[:-3], True
    return text, False


def norm_date(text: str) -> str:
    text, bc = split_era(text)
    year, month, day = text.rsplit("-", 2)
    year = 1 - int(year) if bc else int(year)
    return f"{render_year(year)}-{month}-{day}"


def norm_clock(text: str) -> str:
    hms, _, frac = text.partition(".")
    assert len(hms) == 8, text
    return f"{hms}.{frac:0<6}"


def norm_timestamp(text: str, utc: bool) -> str:
    text, bc = split_era(text)
    day, clock = text.split(" ")
    if utc:
        assert clock.endswith("+00"), text
        clock = clock[:-3]
    return f"{norm_date(day + (' BC' if bc else ''))}T{norm_clock(clock)}{'Z' if utc else ''}"


def norm_bytea(text: str) -> str:
    assert text.startswith("\\x"), text
    return base64.b64encode(bytes.fromhex(text[2:])).decode()


NORMALIZE = {
    "boolean": lambda t: {"t": True, "f": False}[t],
    "int": int,
    "long": int,
    "string": lambda t: t,
    "date": norm_date,
    "timestamp": lambda t: norm_timestamp(t, utc=False),
    "timestamptz": lambda t: norm_timestamp(t, utc=True),
    "time": norm_clock,
    "uuid": lambda t: t,
    "binary": norm_bytea,
}


def float_bits(value, kind: str) -> bytes:
    """The IEEE bits of a value as its column stores it (NaN payloads aside)."""
    if isinstance(value, str):
        value = float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(value, value))
    return struct.pack(">f" if kind == "float" else ">d", value)


def assert_value(column: str, ice_type: str, pg_text, rendered):
    where = f"column {column}: Postgres {pg_text!r}, copycat {rendered!r}"
    if pg_text is None:
        assert rendered is None, where
    elif ice_type in ("float", "double"):
        if pg_text == "NaN":
            assert rendered == "NaN", where
        else:
            assert float_bits(pg_text, ice_type) == float_bits(rendered, ice_type), where
    elif ice_type.startswith("decimal"):
        # numeric(p,s) prints exactly s digits after the point, as render does.
        assert rendered == pg_text, where
    else:
        assert rendered == NORMALIZE[ice_type](pg_text), where


def assert_same_rows(db, table, columns, rows, order_by):
    """Each copycat row equals psql's text output of the same row."""
    names = ", ".join('"' + c["name"].replace('"', '""') + '"' for c in columns)
    pg_rows = db.query(f"{SESSION}SELECT {names} FROM {table} ORDER BY {order_by}")
    rows = sorted(rows, key=lambda r: r[order_by])
    assert len(rows) == len(pg_rows)
    for pg_row, row in zip(pg_rows, rows):
        assert list(row) == [c["name"] for c in columns]
        for col, pg_text in zip(columns, pg_row):
            assert_value(col["name"], col["type"], pg_text, row[col["name"]])


# ------------------------------------------------------------------ every type

# (column, SQL type, Iceberg type, required)
ALL_TYPES = [
    ("id", "s.posint", "int", True),                       # domain with NOT NULL
    ("c_required", "text NOT NULL", "string", True),
    ("c_bool", "boolean", "boolean", False),
    ("c_int2", "smallint", "int", False),
    ("c_int4", "integer", "int", False),
    ("c_int8", "bigint", "long", False),
    ("c_float4", "real", "float", False),
    ("c_float8", "double precision", "double", False),
    ("c_dec9", "numeric(9,3)", "decimal(9, 3)", False),     # INT32 in Parquet
    ("c_dec18", "numeric(18,0)", "decimal(18, 0)", False),  # INT64
    ("c_dec19", "numeric(19,4)", "decimal(19, 4)", False),  # FIXED(9)
    ("c_dec38", "numeric(38,10)", "decimal(38, 10)", False),
    ("c_dec38_0", "numeric(38,0)", "decimal(38, 0)", False),
    ("c_dec38_38", "numeric(38,38)", "decimal(38, 38)", False),
    ("c_numeric", "numeric", "string", False),
    ("c_numeric39", "numeric(39,2)", "string", False),
    ("c_numeric_neg_scale", "numeric(5,-2)", "string", False),
    ("c_text", "text", "string", False),
    ("c_varchar", "varchar(10)", "string", False),
    ("c_char", "char(5)", "string", False),
    ("c_name", "name", "string", False),
    ("c_enum", "s.mood", "string", False),
    ("c_date", "date", "date", False),
    ("c_ts", "timestamp", "timestamp", False),
    ("c_ts3", "timestamp(3)", "timestamp", False),
    ("c_tstz", "timestamptz", "timestamptz", False),
    ("c_time", "time", "time", False),
    ("c_uuid", "uuid", "uuid", False),
    ("c_bytea", "bytea", "binary", False),
    ("c_json", "json", "string", False),
    ("c_jsonb", "jsonb", "string", False),
    ("c_price", "s.price", "decimal(12, 2)", False),        # domain over numeric(12,2)
    ("c_price_nn", "s.price_nn", "decimal(12, 2)", True),   # domain over that domain, NOT NULL
    ("c_int_array", "integer[]", "string", False),
    ("c_text_array", "text[]", "string", False),
    ("c_interval", "interval", "string", False),
    ("c_inet", "inet", "string", False),
    ("c_money", "money", "string", False),
    ("c_timetz", "timetz", "string", False),
    ("c_range", "int4range", "string", False),
    ("c_point", "point", "string", False),
    ("c_char1", '"char"', "string", False),
    ('Mixed "Quoted" Name', "text", "string", False),
    ("c_generated", "bigint GENERATED ALWAYS AS (c_int2 * 2) STORED", "long", False),
]

SCHEMA_SQL = """
CREATE SCHEMA s;
CREATE TYPE s.mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN s.posint AS integer NOT NULL CHECK (VALUE > 0);
CREATE DOMAIN s.price AS numeric(12,2);
CREATE DOMAIN s.price_nn AS s.price NOT NULL;
"""

# Rows as {column: SQL literal}; id, c_required and c_price_nn are filled in.
ROWS = [
    {   # largest values, unicode, padding, non-UTC input offsets
        "c_bool": "true", "c_int2": "32767", "c_int4": "2147483647",
        "c_int8": "9223372036854775807", "c_float4": "'3.4028235e38'",
        "c_float8": "'1.7976931348623157e308'", "c_dec9": "'999999.999'",
        "c_dec18": "'999999999999999999'", "c_dec19": "'999999999999999.9999'",
        "c_dec38": "'9999999999999999999999999999.9999999999'",
        "c_dec38_0": "'99999999999999999999999999999999999999'",
        "c_dec38_38": "'0.99999999999999999999999999999999999999'",
        "c_numeric": "'12345678901234567890123456789012345678901234567890.123456789'",
        "c_numeric39": "'1234567890123456789012345678901234567.12'",
        "c_numeric_neg_scale": "1234567",
        "c_text": "E'h\u00e9llo w\u00f6rld \u2713 \U0001d11e \"quoted\" \\\\ back\\tslash\\nnew line'",
        "c_varchar": "'abcdefghij'", "c_char": "'ab'", "c_name": "'a_name'", "c_enum": "'happy'",
        "c_date": "'9999-12-31'", "c_ts": "'9999-12-31 23:59:59.999999'",
        "c_ts3": "'2024-02-29 12:34:56.789'", "c_tstz": "'2024-03-10 02:30:00.5-08'",
        "c_time": "'23:59:59.999999'", "c_uuid": "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
        "c_bytea": "'\\x00ff00fe'",
        "c_json": "'{\"b\": 1,  \"a\": [1, 2.50], \"\u00e9\": \"\\u00e9\"}'",
        "c_jsonb": "'{\"b\": 1,  \"a\": [1, 2.50], \"\u00e9\": \"\\u00e9\"}'",
        "c_price": "'9999999999.99'",
        "c_int_array": "'{1,NULL,-3}'", "c_text_array": r"""'{"a b","c,d",NULL,"\"q\"","back\\slash"}'""",
        "c_interval": "'1 year 2 mons 3 days 04:05:06.789'", "c_inet": "'2001:db8::1/64'",
        "c_money": "'-12.34'", "c_timetz": "'12:34:56.789+05:30'", "c_range": "'[1,10)'",
        "c_point": "'(1.5,-2)'", "c_char1": "'x'", '"Mixed ""Quoted"" Name"': "'q'",
    },
    {   # smallest values, empty strings, years BC
        "c_bool": "false", "c_int2": "-32768", "c_int4": "-2147483648",
        "c_int8": "-9223372036854775808", "c_float4": "'1.17549435e-38'", "c_float8": "'5e-324'",
        "c_dec9": "'-0.001'", "c_dec18": "'-999999999999999999'", "c_dec19": "'-0.0001'",
        "c_dec38": "'-9999999999999999999999999999.9999999999'",
        "c_dec38_0": "'-99999999999999999999999999999999999999'",
        "c_dec38_38": "'-0.00000000000000000000000000000000000001'",
        "c_numeric": "'NaN'", "c_numeric39": "'-0.5'", "c_numeric_neg_scale": "-49",
        "c_text": "''", "c_varchar": "''", "c_char": "''", "c_name": "''", "c_enum": "'sad'",
        "c_date": "'4714-11-24 BC'", "c_ts": "'4713-01-01 00:00:00 BC'",
        "c_ts3": "'1969-12-31 23:59:59.999'", "c_tstz": "'0001-01-01 00:00:00+00'",
        "c_time": "'00:00:00'", "c_uuid": "'00000000-0000-0000-0000-000000000000'",
        "c_bytea": "'\\x'", "c_json": "'[]'", "c_jsonb": "'null'", "c_price": "'-0.01'",
        "c_int_array": "'{}'", "c_text_array": "'{}'", "c_interval": "'-1 days -00:00:01'",
        "c_inet": "'0.0.0.0/0'", "c_money": "'0'", "c_timetz": "'00:00:00-12'",
        "c_range": "'empty'", "c_point": "'(0,0)'", "c_char1": "''", '"Mixed ""Quoted"" Name"': "''",
    },
    {   # special floats, the epochs, the far future
        "c_float4": "'NaN'", "c_float8": "'Infinity'", "c_numeric": "'Infinity'",
        "c_date": "'5874897-12-31'", "c_ts": "'294246-12-31 23:59:59.999999'",
        "c_ts3": "'1970-01-01 00:00:00'", "c_tstz": "'1969-12-31 23:59:59.999999+00'",
        "c_time": "'12:00:00.5'", "c_dec9": "'0'", "c_dec38": "'0.0000000001'",
        "c_bytea": "'\\x000000'", "c_text": "E'\\u00a0 trailing space '",
    },
    {
        "c_float4": "'-Infinity'", "c_float8": "'NaN'", "c_numeric": "'-Infinity'",
        "c_date": "'2000-01-01'", "c_ts": "'2000-01-01 00:00:00'", "c_tstz": "'2000-01-01 00:00:00+14'",
        "c_dec19": "'123456789012345.5'",
    },
    {"c_float4": "'-0'", "c_float8": "'-0'", "c_numeric": "'-0.000'", "c_date": "'1970-01-01'"},
    {},  # every optional column NULL
]


@pytest.fixture
def all_types(db):
    columns = ", ".join(f'"{name.replace(chr(34), chr(34) * 2)}" {sql}' for name, sql, _, _ in ALL_TYPES)
    sql = SCHEMA_SQL + f"CREATE TABLE s.all_types ({columns});\n"
    # A dropped column must not show up (pg_attribute keeps it).
    sql += "ALTER TABLE s.all_types ADD COLUMN c_dropped int; ALTER TABLE s.all_types DROP COLUMN c_dropped;\n"
    for i, row in enumerate(ROWS, start=1):
        values = {"id": str(i), "c_required": f"'row {i}'", "c_price_nn": f"{i}.5", **row}
        sql += f"INSERT INTO s.all_types ({', '.join(values)}) VALUES ({', '.join(values.values())});\n"
    db.psql(sql)
    return "s.all_types"


def test_column_mapping(copycat_bin, db, all_types):
    columns, _ = copycat_rows(db, all_types)
    assert columns == [{"name": n, "type": t, "required": r} for n, _, t, r in ALL_TYPES]


def test_every_type_matches_postgres(copycat_bin, db, all_types):
    columns, rows = copycat_rows(db, all_types)
    assert len(rows) == len(ROWS)
    assert_same_rows(db, all_types, columns, rows, "id")
    # Spot checks of the normalizers themselves against hand-written values.
    first, second = rows[0], rows[1]
    assert first["c_tstz"] == "2024-03-10T10:30:00.500000Z"
    assert first["c_char"] == "ab   "            # bpchar keeps its padding
    assert first["c_bytea"] == "AP8A/g=="
    assert first["c_jsonb"] == '{"a": [1, 2.50], "b": 1, "\u00e9": "\u00e9"}'
    assert first["c_json"] == '{"b": 1,  "a": [1, 2.50], "\u00e9": "\\u00e9"}'
    assert first["c_numeric_neg_scale"] == "1234600"
    assert second["c_date"] == "-4713-11-24"
    assert second["c_ts"] == "-4712-01-01T00:00:00.000000"
    assert second["c_numeric"] == "NaN"
    assert second["c_dec38_38"] == "-0.00000000000000000000000000000000000001"
    assert rows[2]["c_date"] == "+5874897-12-31"
    assert rows[2]["c_float4"] == "NaN"
    assert rows[4]["c_float8"] == -0.0 and math.copysign(1, rows[4]["c_float8"]) < 0
    assert rows[5]["c_bool"] is None and rows[5]["c_price_nn"] == "6.50"


def test_batches_of_any_size(copycat_bin, db, all_types):
    """The rows do not depend on where batches are cut (the daemon flushes at capacity)."""
    _, whole = copycat_rows(db, all_types)
    for size in (1, 2, 5):
        assert copycat_rows(db, all_types, "--batch-rows", size)[1] == whole


def random_decimal(rng: random.Random, precision: int, scale: int) -> str:
    digits = rng.randint(0, precision)
    unscaled = rng.randint(0, 10**digits - 1) * rng.choice((1, -1))
    sign = "-" if unscaled < 0 else ""
    text = f"{abs(unscaled):0{scale + 1}d}"
    return sign + (text[:-scale] + "." + text[-scale:] if scale else text)


DECIMAL_TYPES = [(1, 0), (4, 4), (9, 2), (10, 0), (18, 9), (19, 0), (20, 5), (28, 14), (37, 1), (38, 19)]


def test_random_decimals(copycat_bin, db):
    """Decimals of every storage width (INT32, INT64, fixed bytes) and every
    alignment of the scale against Postgres' base-10000 digits."""
    rng = random.Random(4)
    names = [f"d{p}_{s}" for p, s in DECIMAL_TYPES]
    sql = "CREATE TABLE public.decimals (id int, " + ", ".join(
        f"{n} numeric({p},{s})" for n, (p, s) in zip(names, DECIMAL_TYPES)) + ");\n"
    rows = []
    for i in range(400):
        rows.append(f"({i}, " + ", ".join(
            f"'{random_decimal(rng, p, s)}'" for p, s in DECIMAL_TYPES) + ")")
    sql += "INSERT INTO public.decimals VALUES " + ",\n".join(rows) + ";"
    db.psql(sql)
    columns, got = copycat_rows(db, "public.decimals")
    assert [c["type"] for c in columns[1:]] == [f"decimal({p}, {s})" for p, s in DECIMAL_TYPES]
    assert_same_rows(db, "public.decimals", columns, got, "id")


def test_many_rows(copycat_bin, db):
    db.psql("""
        CREATE TABLE public.events (id bigint NOT NULL, at timestamptz, v double precision, tag text);
        INSERT INTO public.events
        SELECT g, timestamptz '2020-01-01 00:00:00+00' + g * interval '1.5 second', g / 7.0,
               CASE WHEN g % 5 = 0 THEN NULL ELSE 'tag-' || (g % 13) END
        FROM generate_series(1, 20000) g;
    """)
    columns, rows = copycat_rows(db, "public.events", "--batch-rows", 4096)
    assert len(rows) == 20000
    assert columns[0] == {"name": "id", "type": "long", "required": True}
    assert_same_rows(db, "public.events", columns, rows, "id")


# ------------------------------------------------------------------ values the lake cannot hold

UNHOLDABLE = [
    ("timestamp", "infinity", "infinity"),
    ("timestamp", "-infinity", "-infinity"),
    ("timestamptz", "infinity", "infinity"),
    ("date", "infinity", "infinity"),
    ("date", "-infinity", "-infinity"),
    ("time", "24:00:00", "24:00:00"),
    ("numeric(10,2)", "NaN", "NaN"),
    ("timestamp", "294247-01-11 00:00:00", "294247-01-10"),
]


@pytest.mark.parametrize("sql_type, value, says", UNHOLDABLE)
def test_values_iceberg_cannot_hold(copycat_bin, db, sql_type, value, says):
    db.psql(f"""
        CREATE TABLE public.bad (id int, "the value" {sql_type});
        INSERT INTO public.bad VALUES (1, NULL), (2, '{value}');
    """)
    message = copycat_error(db, "public.bad")
    assert 'column "the value", row 2 ' in message
    assert says in message


def test_client_encoding_must_be_utf8(copycat_bin, db):
    """A LATIN1 connection would hand the decoder LATIN1 bytes for strings."""
    db.psql("CREATE TABLE public.t (a text)")
    proc = run_copycat(db, "public.t", "--client-encoding", "LATIN1")
    message = proc.stderr.decode()
    assert proc.returncode == 1 and "client_encoding is LATIN1" in message, message


# ------------------------------------------------------------------ damaged streams

SIGNATURE = b"PGCOPY\n\xff\r\n\x00"

STREAM_TABLE = """
CREATE DOMAIN public.nn_int AS integer NOT NULL;
CREATE TABLE public.c (id public.nn_int, n numeric(20,5), j jsonb, b boolean, t text);
"""


def stream(rows, flags=0, extension=b"", trailer=True) -> bytes:
    out = SIGNATURE + struct.pack(">iI", flags, len(extension)) + extension
    for row in rows:
        out += struct.pack(">h", len(row))
        for field in row:
            out += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return out + (struct.pack(">h", -1) if trailer else b"")


def numeric(digits, weight, sign=0x0000, dscale=0) -> bytes:
    return struct.pack(">hhHH", len(digits), weight, sign, dscale) + b"".join(struct.pack(">H", d) for d in digits)


def int4(v: int) -> bytes:
    return struct.pack(">i", v)


def row(n=None, id=int4(1), j=b"\x01{}", b=b"\x01", t=b"x"):
    return [id, n, j, b, t]


@pytest.fixture
def stream_table(db, tmp_path):
    db.psql(STREAM_TABLE)

    def decode(data: bytes, *args):
        path = tmp_path / "stream.bin"
        path.write_bytes(data)
        return run_copycat(db, "public.c", "--stream", path, *args)

    return decode


def decoded(proc):
    assert proc.returncode == 0, proc.stderr.decode()
    return [json.loads(line) for line in proc.stdout.decode().splitlines()[1:]]


def failure(proc) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert len(proc.stdout.decode().splitlines()) == 1  # the columns line only
    return proc.stderr.decode()


def test_stream_numeric_alignment(copycat_bin, stream_table):
    """numeric values whose display scale is below the column's, digits that
    straddle the scale, and whole base-10000 groups of zeros dropped."""
    cases = [
        (numeric([5000], -1, dscale=1), "0.50000"),                  # 0.5: 5000 * 10^-4
        (numeric([123, 4500], 0, dscale=2), "123.45000"),
        (numeric([1], -1, dscale=4), "0.00010"),                     # 0.0001: 1 * 10000^-1
        (numeric([1, 2000], -1, 0x4000, dscale=5), "-0.00012"),      # the last digit straddles the scale
        (numeric([100], 3), "100000000000000.00000"),                # 10^14: 15 integer digits
        (numeric([], 0, dscale=3), "0.00000"),
        (numeric([999, 9999, 9999, 9999], 3, 0x4000), "-999999999999999.00000"),
    ]
    got = decoded(stream_table(stream([row(n) for n, _ in cases])))
    assert [r["n"] for r in got] == [want for _, want in cases]
    assert got[0] == {"id": 1, "n": "0.50000", "j": "{}", "b": True, "t": "x"}


@pytest.mark.parametrize("data, says", [
    (stream([row(numeric([1000], 3))]), 'column "n", row 1 of the COPY stream: the value has more digits than decimal(20, 5)'),
    (stream([row(numeric([1, 2345], -1, dscale=8))]), 'column "n", row 1 of the COPY stream: the value has more fractional digits'),
    (stream([row(numeric([10000], 0))]), "numeric digit 10000 is not base 10000"),
    (stream([row(numeric([1], 0)[:-2] + b"\x00")]), 'column "n", row 1 of the COPY stream: 9 bytes cannot be a binary decimal(20, 5)'),
    (stream([row(numeric([], 0, 0xC000))]), "the value is NaN"),
    (stream([row(numeric([], 0, 0x1234))]), "numeric sign word 0x1234 is not valid"),
    (stream([row(id=struct.pack(">q", 1))]), 'column "id", row 1 of the COPY stream: 8 bytes cannot be a binary integer'),
    (stream([row(), row(id=None)]), 'column "id", row 2 of the COPY stream: the value is NULL, but the lake column is required'),
    (stream([row(j=b"\x02{}")]), "jsonb binary format version 2 is not known"),
    (stream([row(b=b"\x02")]), 'column "b", row 1 of the COPY stream: boolean byte 2 is neither 0 nor 1'),
    (stream([row()[:4]]), "a tuple has 4 fields, expected 5"),
    (b"PGCOPY\n\xff\r\n\x01" + stream([])[11:], "does not start with the binary COPY signature"),
    (stream([row()], flags=1 << 16), "flags this decoder does not know"),
    (stream([row()]) + b"\x00", "data follows the trailer"),
    (stream([row()], trailer=False), "the stream ended without its trailer"),
    (stream([], extension=b"abcd")[:21], "the header extension is cut off"),
    (b"", "does not start with the binary COPY signature"),
])
def test_stream_damage(copycat_bin, stream_table, data, says):
    message = failure(stream_table(data))
    assert says in message, message


def test_stream_header_extension_is_skipped(copycat_bin, stream_table):
    got = decoded(stream_table(stream([row(t="é".encode())], extension=b"future")))
    assert got == [{"id": 1, "n": None, "j": "{}", "b": True, "t": "é"}]


def test_stream_every_truncation_fails_cleanly(copycat_bin, stream_table):
    """Every proper prefix of a valid stream is refused with a message, never a crash or a partial result."""
    data = stream([row(numeric([12, 3400], 0, dscale=2), t=b"tail"), row(id=int4(2), j=b"\x01[1]", b=b"\x00")])
    assert len(decoded(stream_table(data))) == 2
    for cut in range(len(data)):
        message = failure(stream_table(data[:cut]))
        assert message.startswith("copycat: ") and ("binary COPY stream" in message or "column" in message), (
            cut, message)


def test_stream_rows_beyond_the_batch(copycat_bin, stream_table):
    """Rows of one message that do not fit the batch are refused, not written past its end."""
    data = stream([row(id=int4(i)) for i in (1, 2, 3)])
    assert len(decoded(stream_table(data, "--batch-rows", 3))) == 3
    message = failure(stream_table(data, "--batch-rows", 2))
    assert "the batch is full (2 rows)" in message, message
