"""Helpers for the lake interop tests: the tools under test, and one
canonical form of a table's rows that every reader's output is turned into.

Canonical form: a row is a tuple of column values in schema order, each value
rendered the way `tierdb lake cat` prints it (the rules of render.h, shared
with `parquet cat`): decimals as strings with exactly `scale` digits, dates
"YYYY-MM-DD", timestamps "YYYY-MM-DDTHH:MM:SS.ffffff" (+ "Z" for timestamptz),
binary as base64, uuids lowercase, doubles as Python floats ("NaN" and
"Infinity" as strings), float columns as the float32 value. A table's rows
are compared as multisets, since no reader promises an order.

Column types are named as in Iceberg schema JSON ("long", "decimal(12, 2)",
"timestamptz", ...). `lakegen` (build/tools/lakegen) writes tables from rows
in exactly this rendering, so the expected rows of a table we write are the
rendered rows we fed it, minus the keys we deleted.
"""

from __future__ import annotations

import base64
import collections
import datetime
import decimal
import json
import math
import os
import random
import re
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TIERDB_BUILD_DIR", REPO_ROOT / "build"))
TOOL_TIMEOUT = 120  # seconds; our test tables take milliseconds

EPOCH_DATE = datetime.date(1970, 1, 1)
EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

# ------------------------------------------------------------ the tools


def program(relative: str) -> Path:
    path = BUILD_DIR / relative
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is missing: run `make` in {REPO_ROOT} first", pytrace=False)
    return path


def run_tool(binary: Path, *args) -> str:
    """Runs a tool; its stdout, or a test failure quoting the command and stderr."""
    argv = [str(binary), *map(str, args)]
    proc = subprocess.run(argv, capture_output=True, timeout=TOOL_TIMEOUT, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        pytest.fail(
            f"`{' '.join(argv)}` exited {proc.returncode}:\n{proc.stderr.decode(errors='replace').strip()}",
            pytrace=False,
        )
    return proc.stdout.decode("utf-8")


def _snapshot_id(out: str, command: str) -> int:
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if not lines or not re.fullmatch(r"-?\d+", lines[-1]):
        pytest.fail(f"lakegen {command} printed no snapshot id: {out!r}", pytrace=False)
    return int(lines[-1])


def write_jsonl(path: Path, rows: list) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, allow_nan=False))
            f.write("\n")
    return path


class Lakegen:
    """build/tools/lakegen: writes Iceberg tables through our commit path."""

    def __init__(self, scratch: Path):
        self.binary = program("tools/lakegen")
        self.scratch = scratch
        self.counter = 0

    def _file(self, stem: str, rows: list) -> Path:
        self.counter += 1
        return write_jsonl(self.scratch / f"{stem}-{self.counter}.jsonl", rows)

    def create(self, table_dir: Path, schema: dict, spec: dict) -> None:
        run_tool(self.binary, "create", table_dir, "--schema", json.dumps(schema), "--partition", json.dumps(spec))

    def append(self, table_dir: Path, rows: list, op_id: str | None = None, options=()) -> int:
        """options: more arguments, such as ("--row-group-rows", 16)."""
        args = ["append", table_dir, self._file("append", rows)]
        if op_id is not None:
            args += ["--op-id", op_id]
        args += list(options)
        return _snapshot_id(run_tool(self.binary, *args), "append")

    def delta(self, table_dir: Path, deletes: list, equality_ids, data: list | None = None,
              op_id: str | None = None) -> int:
        args = ["delta", table_dir]
        if data is not None:
            args += ["--data", self._file("data", data)]
        args += ["--deletes", self._file("deletes", deletes), "--equality-ids", ",".join(map(str, equality_ids))]
        if op_id is not None:
            args += ["--op-id", op_id]
        return _snapshot_id(run_tool(self.binary, *args), "delta")

    def replace(self, table_dir: Path, op_id: str | None = None) -> int:
        """Compaction: the current rows rewritten, deletes applied and dropped."""
        args = ["replace", table_dir] + (["--op-id", op_id] if op_id is not None else [])
        return _snapshot_id(run_tool(self.binary, *args), "replace")

    def delete_files(self, table_dir: Path, paths: list) -> int:
        return _snapshot_id(run_tool(self.binary, "delete", table_dir, *paths), "delete")

    def evolve(self, table_dir: Path, fields: list) -> str:
        """Schema evolution to `fields` ({"id", "name", "required", "type"}; id 0: new); "changed" or not."""
        return run_tool(self.binary, "evolve", table_dir, json.dumps(fields)).strip()


def lake_cat(location, snapshot_id: int | None = None, columns=None, limit: int | None = None) -> list:
    """`tierdb lake cat` rows as dicts (key order kept), numbers parsed by json."""
    args = ["lake", "cat", location]
    if snapshot_id is not None:
        args += ["--snapshot", snapshot_id]
    if columns is not None:
        args += ["--columns", ",".join(columns)]
    if limit is not None:
        args += ["--limit", limit]
    out = run_tool(program("tierdb"), *args)
    assert out == "" or out.endswith("\n"), "lake cat output does not end with a newline"
    return [json.loads(line, object_pairs_hook=collections.OrderedDict) for line in out.splitlines()]


def latest_metadata(table_dir: Path) -> Path:
    """The metadata/v<N>.metadata.json with the largest N."""
    found = []
    for p in (Path(table_dir) / "metadata").glob("v*.metadata.json"):
        m = re.fullmatch(r"v(\d+)\.metadata\.json", p.name)
        if m:
            found.append((int(m.group(1)), p))
    assert found, f"no metadata/v<N>.metadata.json in {table_dir}"
    return max(found)[1]


# ------------------------------------------------------------ rendering


def _decimal_scale(type_name: str) -> int:
    m = re.fullmatch(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)", type_name)
    assert m, type_name
    return int(m.group(2))


def _date_text(days: int) -> str:
    d = EPOCH_DATE + datetime.timedelta(days=days)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def micros_text(micros: int, utc: bool) -> str:
    secs, frac = divmod(int(micros), 10**6)
    days, sod = divmod(secs, 86400)
    h, rem = divmod(sod, 3600)
    m, s = divmod(rem, 60)
    text = f"{_date_text(days)}T{h:02d}:{m:02d}:{s:02d}.{frac:06d}"
    return text + "Z" if utc else text


def datetime_micros(value: datetime.datetime) -> int:
    """Microseconds since the epoch; a naive datetime is taken as UTC."""
    base = EPOCH_UTC if value.tzinfo is not None else EPOCH
    delta = value - base
    return (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds


def _double(value) -> object:
    x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def render(type_name: str, value):
    """A Python value of the column type (or its rendered text) in canonical form."""
    if value is None:
        return None
    t = type_name
    if t in ("long", "int"):
        return int(value)
    if t == "boolean":
        return bool(value)
    if t == "double":
        return value if isinstance(value, str) else _double(value)
    if t == "float":
        return value if isinstance(value, str) else _double(np.float32(value))
    if t == "string":
        return str(value)
    if t.startswith("decimal"):
        scale = _decimal_scale(t)
        d = decimal.Decimal(value) if isinstance(value, str) else value
        return f"{d.quantize(decimal.Decimal(1).scaleb(-scale)):f}"
    if t == "date":
        if isinstance(value, str):
            return value
        if isinstance(value, int):
            return _date_text(value)
        return _date_text((value - EPOCH_DATE).days)
    if t in ("timestamp", "timestamptz"):
        if isinstance(value, str):
            return value
        micros = value if isinstance(value, int) else datetime_micros(value)
        return micros_text(micros, t == "timestamptz")
    if t in ("binary",) or t.startswith("fixed"):
        if isinstance(value, str):
            return value
        return base64.b64encode(bytes(value)).decode("ascii")
    if t == "uuid":
        if isinstance(value, (bytes, bytearray)):
            return str(uuid.UUID(bytes=bytes(value)))
        return str(value).lower()
    raise ValueError(f"no rendering for type {t}")


def canonical_rows(fields: list, rows, context: str = "") -> list:
    """Rows (dicts keyed by column name, or sequences in `fields` order) as
    canonical tuples. fields: [(name, iceberg type name)]."""
    out = []
    for row in rows:
        if isinstance(row, dict):
            extra = set(row) - {name for name, _ in fields}
            assert not extra, f"{context}: row has columns {sorted(extra)} the table does not"
            values = [row.get(name) for name, _ in fields]
        else:
            values = list(row)
        out.append(tuple(render(t, v) for (_, t), v in zip(fields, values)))
    return out


def cat_rows(fields: list, rows: list, context: str) -> list:
    """`lake cat` rows as canonical tuples, after checking each row prints
    exactly the table's columns in schema order. Only float columns are
    converted (cat prints float32 digits, which json reads as a double)."""
    names = [name for name, _ in fields]
    out = []
    for row in rows:
        assert list(row.keys()) == names, f"{context}: lake cat printed columns {list(row.keys())}, want {names}"
        values = []
        for name, t in fields:
            v = row[name]
            if t == "float" and isinstance(v, (int, float)):
                v = _double(np.float32(v))
            elif t == "double" and isinstance(v, int):
                v = float(v)
            values.append(v)
        out.append(tuple(values))
    return out


def _key(row: tuple) -> str:
    return json.dumps(row, default=str)


def assert_same_rows(expected: list, actual: list, context: str) -> None:
    """The two lists of canonical rows are equal as multisets; the message
    shows a few missing and unexpected rows."""
    want = collections.Counter(_key(r) for r in expected)
    got = collections.Counter(_key(r) for r in actual)
    if want == got:
        return
    missing = list((want - got).elements())
    extra = list((got - want).elements())
    lines = [f"{context}: {len(expected)} rows expected, {len(actual)} read; "
             f"{len(missing)} missing, {len(extra)} unexpected"]
    lines += ["  missing:    " + r for r in missing[:5]]
    lines += ["  unexpected: " + r for r in extra[:5]]
    pytest.fail("\n".join(lines), pytrace=False)


# ------------------------------------------------------------ other readers


def spark_type_name(data_type) -> str:
    """The Iceberg type name of a Spark SQL column type."""
    from pyspark.sql import types as T

    simple = {
        T.LongType: "long", T.IntegerType: "int", T.StringType: "string", T.DateType: "date",
        T.TimestampType: "timestamptz", T.TimestampNTZType: "timestamp", T.DoubleType: "double",
        T.FloatType: "float", T.BooleanType: "boolean", T.BinaryType: "binary",
    }
    for cls, name in simple.items():
        if isinstance(data_type, cls):
            return name
    if isinstance(data_type, T.DecimalType):
        return f"decimal({data_type.precision}, {data_type.scale})"
    raise ValueError(f"no Iceberg type for Spark type {data_type}")


def spark_rows(df) -> tuple:
    """(fields, canonical rows) of a Spark DataFrame. Timestamps leave Spark
    as epoch microseconds, so no time zone of this process is involved."""
    from pyspark.sql import functions as F

    fields = [(f.name, spark_type_name(f.dataType)) for f in df.schema.fields]
    columns = []
    for name, t in fields:
        col = F.col(f"`{name}`")
        if t in ("timestamp", "timestamptz"):
            col = F.unix_micros(col.cast("timestamp"))
        columns.append(col.alias(name))
    return fields, canonical_rows(fields, df.select(*columns).collect())


def arrow_rows(table, fields: list) -> list:
    """Canonical rows of a pyarrow Table (pyiceberg's or DuckDB's result)."""
    import pyarrow as pa

    columns = []
    for name, t in fields:
        col = table.column(name)
        if t in ("timestamp", "timestamptz"):
            col = col.cast(pa.timestamp("us", tz=col.type.tz)).cast(pa.int64())
        columns.append(col.to_pylist())
    return canonical_rows(fields, zip(*columns)) if columns and table.num_rows else []


# ------------------------------------------------------------ our tables
#
# The tables lakegen writes for test_lake_spark.py and test_lake_duckdb.py:
# one schema of many types; unpartitioned, partitioned by truncate(10) of an
# int, and by day of a timestamptz; each through the eight snapshots of
# STEPS. models[i] holds the rendered rows the table must have at
# snapshots[i]: the rows appended minus the keys deleted, where an equality
# delete removes only rows of earlier sequence numbers (so new versions
# committed with it, and keys re-inserted later, survive).

# (id, name, Iceberg type, required). id and grp are the composite key.
COLUMNS = [
    (1, "id", "long", True),
    (2, "grp", "int", True),
    (3, "name", "string", False),
    (4, "amount", "decimal(12, 2)", False),
    (5, "d", "date", False),
    (6, "ts", "timestamp", False),
    (7, "tstz", "timestamptz", True),
    (8, "score", "double", False),
    (9, "ratio", "float", False),
    (10, "flag", "boolean", False),
    (11, "payload", "binary", False),
    (12, "uid", "uuid", False),
]
FIELDS = [(name, t) for _, name, t, _ in COLUMNS]
SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": i, "name": n, "required": r, "type": t} for i, n, t, r in COLUMNS],
}

# name -> (partition spec JSON, equality field ids: the key plus the partition source)
LAYOUTS = {
    "unpartitioned": ({"spec-id": 0, "fields": []}, (1, 2)),
    "truncate": (
        {"spec-id": 0,
         "fields": [{"source-id": 2, "field-id": 1000, "name": "grp_trunc", "transform": "truncate[10]"}]},
        (1, 2),
    ),
    "day": (
        {"spec-id": 0, "fields": [{"source-id": 7, "field-id": 1000, "name": "tstz_day", "transform": "day"}]},
        (1, 2, 7),
    ),
}
STEPS = ["append A", "append B", "delete file", "delta", "append D", "deletes only", "compact",
         "deletes after compact"]
# The snapshots with live equality-delete files (the compaction drops them).
EQUALITY_DELETE_STEPS = {"delta", "append D", "deletes only", "deletes after compact"}

NAMES = ["", "a", "ä", "Grüße", "日本語", 'q"uote', "back\\slash", "tab\tnl\n", "plain text"]
BASE_TSTZ = datetime.datetime(1969, 12, 30, 22, 0, tzinfo=datetime.timezone.utc)


def make_row(rnd: random.Random, ident: int, grp: int | None = None) -> dict:
    """One row of Python values; optional columns are null now and then."""

    def maybe(value):
        return None if rnd.random() < 0.1 else value

    score_pick = rnd.random()
    if score_pick < 0.03:
        score = float("nan")
    elif score_pick < 0.05:
        score = float("-inf")
    elif score_pick < 0.07:
        score = -0.0
    else:
        score = rnd.uniform(-1e6, 1e6)
    return {
        "id": ident,
        "grp": grp if grp is not None else rnd.randint(-35, 45),
        "name": maybe(rnd.choice(NAMES) + str(rnd.randint(0, 99))),
        "amount": maybe(decimal.Decimal(rnd.randint(-10**11, 10**11)).scaleb(-2)),
        "d": maybe(datetime.date(1965, 1, 1) + datetime.timedelta(days=rnd.randint(0, 30000))),
        "ts": maybe(datetime.datetime(1960, 1, 1) + datetime.timedelta(microseconds=rnd.randint(0, 3 * 10**15))),
        # Five days around the epoch, so day partitions include negative ones.
        "tstz": BASE_TSTZ + datetime.timedelta(microseconds=rnd.randint(0, 5 * 86400 * 10**6)),
        "score": maybe(score),
        "ratio": maybe(rnd.uniform(-100, 100)),
        "flag": maybe(rnd.random() < 0.5),
        "payload": maybe(bytes(rnd.randint(0, 255) for _ in range(rnd.randint(0, 12)))),
        "uid": maybe(uuid.UUID(int=rnd.getrandbits(128))),
    }


def rendered(row: dict) -> dict:
    """The row as lakegen reads it: every value in `lake cat`'s rendering."""
    return {name: render(t, row[name]) for name, t in FIELDS}


@dataclass
class OurTable:
    location: Path
    equality_ids: tuple
    snapshots: list = field(default_factory=list)  # snapshot id per step
    models: list = field(default_factory=list)  # rendered rows per step


def key_names(equality_ids) -> list:
    return [COLUMNS[i - 1][1] for i in equality_ids]


def key_of(row: dict, equality_ids) -> dict:
    """The rendered equality-delete row (the key columns only) of a row."""
    return {n: render(dict(FIELDS)[n], row[n]) for n in key_names(equality_ids)}


def _frozen(key: dict) -> tuple:
    return tuple(sorted(key.items()))


def _remove_keys(rows: list, keys: list, equality_ids) -> list:
    doomed = {_frozen(k) for k in keys}
    return [r for r in rows if _frozen(key_of(r, equality_ids)) not in doomed]


def _data_files_of(location: Path, snapshot_id: int) -> list:
    """Paths of the live data files of a snapshot, read by pyiceberg."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(str(latest_metadata(location)))
    return sorted(task.file.file_path for task in table.scan(snapshot_id=snapshot_id).plan_files())


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def _new_version(rnd: random.Random, old: dict) -> dict:
    """Other values under the same key (and so in the same partition)."""
    return dict(make_row(rnd, old["id"]), grp=old["grp"], tstz=old["tstz"])


def build_table(lakegen: Lakegen, location: Path, layout: str, seed: int) -> OurTable:
    spec, equality_ids = LAYOUTS[layout]
    rnd = random.Random(seed)
    lakegen.create(location, SCHEMA, spec)
    t = OurTable(location, equality_ids)
    rows: list = []

    def record(snapshot_id: int) -> None:
        t.snapshots.append(snapshot_id)
        t.models.append([rendered(r) for r in rows])

    batch_a = [make_row(rnd, i) for i in range(0, 120)]
    rows += batch_a
    record(lakegen.append(location, [rendered(r) for r in batch_a], op_id=f"{layout}-a"))

    batch_b = [make_row(rnd, i) for i in range(120, 240)]
    rows += batch_b
    # Small row groups, so readers cross row-group boundaries.
    record(lakegen.append(location, [rendered(r) for r in batch_b], op_id=f"{layout}-b",
                          options=("--row-group-rows", 16)))

    # Drop one whole data file of snapshot 1: its rows leave the table.
    victim = _data_files_of(location, t.snapshots[0])[0]
    gone = set(pq.read_table(_local(victim), columns=["id"]).column("id").to_pylist())
    assert gone, f"data file {victim} has no rows"
    rows = [r for r in rows if r["id"] not in gone]
    record(lakegen.delete_files(location, [victim]))

    # Row delta: delete 40 live keys (and one that never existed); 15 of
    # them come back as new versions in the same commit, with 60 new rows.
    doomed = rnd.sample(rows, 40)
    updated = [_new_version(rnd, r) for r in doomed[:15]]
    fresh = [make_row(rnd, i) for i in range(240, 300)]
    keys = [key_of(r, equality_ids) for r in doomed]
    keys.append(key_of(make_row(rnd, 999999), equality_ids))
    rows = _remove_keys(rows, keys, equality_ids) + updated + fresh
    record(lakegen.delta(location, keys, equality_ids, data=[rendered(r) for r in updated + fresh],
                         op_id=f"{layout}-delta"))

    # Append D, re-inserting five keys deleted above: a later sequence
    # number, so the earlier equality deletes must not touch them.
    reinserted = [_new_version(rnd, r) for r in doomed[15:20]]
    batch_d = [make_row(rnd, i) for i in range(300, 360)] + reinserted
    rows += batch_d
    # Small target files: several files per partition.
    record(lakegen.append(location, [rendered(r) for r in batch_d], op_id=f"{layout}-d",
                          options=("--row-group-rows", 8)))

    # Equality deletes only, on rows of every age: two updated versions,
    # one re-inserted row and 30 others.
    victims = updated[:2] + reinserted[:1] + rnd.sample(rows, 30)
    keys = [key_of(r, equality_ids) for r in victims]
    rows = _remove_keys(rows, keys, equality_ids)
    record(lakegen.delta(location, keys, equality_ids, op_id=f"{layout}-deletes"))

    # Compaction: the same rows in new data files, the deletes gone.
    record(lakegen.replace(location, op_id=f"{layout}-compact"))

    # Equality deletes after the compaction must reach the rewritten rows.
    victims = rnd.sample(rows, 20)
    keys = [key_of(r, equality_ids) for r in victims]
    rows = _remove_keys(rows, keys, equality_ids)
    record(lakegen.delta(location, keys, equality_ids, op_id=f"{layout}-after-compact"))
    assert len(set(t.snapshots)) == len(STEPS), f"lakegen returned repeated snapshot ids {t.snapshots}"
    return t


def build_our_tables(root: Path) -> dict:
    """The three tables under root, by layout name."""
    lakegen = Lakegen(root)
    return {layout: build_table(lakegen, root / layout, layout, seed) for seed, layout in enumerate(LAYOUTS)}


CASES = [(layout, step) for layout in LAYOUTS for step in range(len(STEPS))]
CASE_IDS = [f"{layout}-{step + 1}-{STEPS[step].replace(' ', '_')}" for layout, step in CASES]


# ------------------------------------------------------------ an evolved table
#
# A table whose schema evolves between its snapshots the way ALTER TABLE
# carries into the lake (lakegen evolve): `gone` dropped, `name` renamed to
# `label`, `grp` promoted from int to long, `ratio` from float to double,
# `amount` from decimal(5, 2) to decimal(12, 2), and `extra` added with an
# initial-default. Two appends are written before (files storing INT32,
# FLOAT and a 4-byte decimal), one after, with values only the wider types
# hold. Every reader must see snapshots 1 and 2 in schema 0 and snapshot 3
# (current) in schema 1, older files' values widened and `extra` holding
# its initial-default in their rows.

EVOLVED_BEFORE = [
    (1, "id", "long", True),
    (2, "grp", "int", False),
    (3, "ratio", "float", False),
    (4, "amount", "decimal(5, 2)", False),
    (5, "name", "string", False),
    (6, "gone", "string", False),
]
EVOLVED_AFTER = [
    (1, "id", "long", True),
    (2, "grp", "long", False),
    (3, "ratio", "double", False),
    (4, "amount", "decimal(12, 2)", False),
    (5, "label", "string", False),
    (7, "extra", "int", False),
]
# `extra` is added with this initial-default, which the older files' rows read.
EVOLVED_EXTRA_DEFAULT = 42
EVOLVED_FIELDS_BEFORE = [(name, t) for _, name, t, _ in EVOLVED_BEFORE]
EVOLVED_FIELDS_AFTER = [(name, t) for _, name, t, _ in EVOLVED_AFTER]
# name -> partition spec JSON; bucket[4] of id, a field the evolution keeps.
EVOLVED_LAYOUTS = {
    "unpartitioned": {"spec-id": 0, "fields": []},
    "bucket": {"spec-id": 0, "fields": [{"source-id": 1, "field-id": 1000, "name": "id_bucket",
                                          "transform": "bucket[4]"}]},
}


@dataclass
class EvolvedTable:
    location: Path
    snapshots: list = field(default_factory=list)
    fields: list = field(default_factory=list)  # [(name, type)] each snapshot reads with
    models: list = field(default_factory=list)  # rendered rows per snapshot


def _sometimes_null(rnd: random.Random):
    """A function that passes its value through, or null now and then."""
    return lambda value: None if rnd.random() < 0.15 else value


def _evolved_row_before(rnd: random.Random, ident: int) -> dict:
    maybe = _sometimes_null(rnd)
    return {
        "id": ident,
        "grp": maybe(rnd.choice([-2**31, 2**31 - 1, 0, rnd.randint(-2**31, 2**31 - 1)])),
        "ratio": maybe(rnd.choice([0.1, -0.0, rnd.uniform(-1e6, 1e6), 3.4e38])),
        "amount": maybe(decimal.Decimal(rnd.randint(-99999, 99999)).scaleb(-2)),
        "name": maybe(rnd.choice(NAMES) + str(ident)),
        "gone": maybe(f"dropped {ident}"),
    }


def _evolved_row_after(rnd: random.Random, ident: int) -> dict:
    maybe = _sometimes_null(rnd)
    return {
        "id": ident,
        "grp": maybe(rnd.choice([-2**63, 2**63 - 1, rnd.randint(-2**40, 2**40)])),
        "ratio": maybe(rnd.choice([0.1, 1e300, rnd.uniform(-1e6, 1e6)])),
        "amount": maybe(decimal.Decimal(rnd.randint(-10**12 + 1, 10**12 - 1)).scaleb(-2)),
        "label": maybe(rnd.choice(NAMES) + str(ident)),
        "extra": maybe(rnd.randint(-2**31, 2**31 - 1)),
    }


def _widened(row: dict) -> dict:
    """A row written before the evolution as the evolved schema reads it (rendered)."""
    out = {"id": row["id"], "grp": row["grp"], "label": row["name"], "extra": EVOLVED_EXTRA_DEFAULT,
           "amount": render("decimal(12, 2)", row["amount"])}
    # The float stored widens to its float32 value, not to the double first written.
    out["ratio"] = None if row["ratio"] is None else render("double", float(np.float32(row["ratio"])))
    return out


def build_evolved_table(lakegen: Lakegen, location: Path, layout: str, seed: int) -> EvolvedTable:
    rnd = random.Random(seed)
    schema = {"type": "struct", "schema-id": 0, "identifier-field-ids": [1],
              "fields": [{"id": i, "name": n, "required": r, "type": ty} for i, n, ty, r in EVOLVED_BEFORE]}
    lakegen.create(location, schema, EVOLVED_LAYOUTS[layout])
    t = EvolvedTable(location)
    before = []
    for first, count in ((0, 40), (40, 30)):
        batch = [_evolved_row_before(rnd, i) for i in range(first, first + count)]
        before += batch
        rendered_batch = canonical_rows(EVOLVED_FIELDS_BEFORE, batch)
        as_dicts = [dict(zip((n for n, _ in EVOLVED_FIELDS_BEFORE), r)) for r in rendered_batch]
        t.snapshots.append(lakegen.append(location, as_dicts, op_id=f"{layout}-before-{first}"))
        t.fields.append(EVOLVED_FIELDS_BEFORE)
        t.models.append([dict(zip((n for n, _ in EVOLVED_FIELDS_BEFORE), r))
                         for r in canonical_rows(EVOLVED_FIELDS_BEFORE, before)])

    evolved = [{"id": i if i != 7 else 0, "name": n, "required": r, "type": ty} for i, n, ty, r in EVOLVED_AFTER]
    evolved[5]["initial-default"] = EVOLVED_EXTRA_DEFAULT
    assert lakegen.evolve(location, evolved) == "changed"
    assert lakegen.evolve(location, evolved[:5] + [dict(evolved[5], id=7)]) == "unchanged"

    after = [_evolved_row_after(rnd, i) for i in range(70, 100)]
    rendered_after = [dict(zip((n for n, _ in EVOLVED_FIELDS_AFTER), r))
                      for r in canonical_rows(EVOLVED_FIELDS_AFTER, after)]
    t.snapshots.append(lakegen.append(location, rendered_after, op_id=f"{layout}-after"))
    t.fields.append(EVOLVED_FIELDS_AFTER)
    t.models.append([_widened(r) for r in before] + rendered_after)
    return t


def build_evolved_tables(root: Path) -> dict:
    """The evolved tables under root, by layout name."""
    lakegen = Lakegen(root)
    return {layout: build_evolved_table(lakegen, root / layout, layout, 100 + seed)
            for seed, layout in enumerate(EVOLVED_LAYOUTS)}


EVOLVED_CASES = [(layout, step) for layout in EVOLVED_LAYOUTS for step in range(3)]
EVOLVED_CASE_IDS = [f"{layout}-{step + 1}" for layout, step in EVOLVED_CASES]
