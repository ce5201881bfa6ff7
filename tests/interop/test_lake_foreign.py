"""Tables other engines write, read by `tierdb lake cat`.

Spark (the Iceberg Spark runtime, Hadoop catalog in a temporary warehouse)
writes format-v2 tables partitioned by days(ts), by truncate and bucket,
and by truncate of a string, through several INSERTs, DELETE and UPDATE in
merge-on-read mode (position-delete files) and in copy-on-write mode
(rewritten data files), and an ADD COLUMN followed by more INSERTs and an
UPDATE of the new column. At every snapshot `tierdb lake cat
--snapshot ID` must print exactly the rows and columns of Spark's
`VERSION AS OF ID`, and without --snapshot those of the current snapshot.

pyiceberg (SqlCatalog on sqlite) writes tables (format v2, and v1 once)
through appends, an overwrite with a filter, deletes by filter and a full
overwrite (pyiceberg 0.12 rewrites files: copy-on-write, no delete files;
an overwrite is two snapshots, a delete and an append). Its metadata files
are not named v<N>.metadata.json, so `lake cat` is given the metadata file
itself. At every snapshot cat must equal pyiceberg's own scan.

Timestamps are made inside Spark from integers (timestamp_micros), so the
Python process's time zone never matters.
"""

from __future__ import annotations

import decimal
import json
import random
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

from iceberg_tables import arrow_rows, assert_same_rows, cat_rows, lake_cat, latest_metadata, spark_rows
from spark_support import spark, spark_warehouse  # noqa: F401  (spark is the session-scoped fixture)

# ------------------------------------------------------------------ Spark

# Columns computed from `id` (a spark.range) so every run writes the same
# values: a few nulls, negative decimals, timestamps over several days on
# both sides of the epoch, NaN and -0.0 among the doubles.
SPARK_COLUMNS = """
    id,
    CASE WHEN id % 11 = 0 THEN NULL ELSE concat('c', CAST(id % 13 AS STRING), 'ß') END AS cat,
    CAST(id * 1.37 - 150 AS DECIMAL(10, 2)) AS amount,
    CAST(id % 70 - 20 AS INT) AS n,
    timestamp_micros(id * 5400000123 - 172800000000) AS ts,
    CAST(timestamp_micros(id * 86400000000 + 987654) AS TIMESTAMP_NTZ) AS tsn,
    date_add(DATE'1969-12-01', CAST(id * 3 AS INT)) AS d,
    CASE WHEN id % 17 = 0 THEN double('NaN') WHEN id % 19 = 0 THEN -0.0D ELSE id / 7.0D - 10 END AS score,
    CAST(id / 3.0 AS FLOAT) AS ratio,
    id % 3 = 0 AS flag,
    CASE WHEN id % 9 = 0 THEN NULL ELSE unhex(hex(id * 7919)) END AS payload
"""
SPARK_DDL = """
    id BIGINT NOT NULL, cat STRING, amount DECIMAL(10, 2), n INT, ts TIMESTAMP, tsn TIMESTAMP_NTZ,
    d DATE, score DOUBLE, ratio FLOAT, flag BOOLEAN, payload BINARY
"""
MOR = "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
COW = "'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write'"

# name -> (PARTITIONED BY clause, write-mode properties)
SPARK_TABLES = {
    "mor_days": ("PARTITIONED BY (days(ts))", MOR),
    "mor_trunc_bucket": ("PARTITIONED BY (truncate(10, n), bucket(4, id))", MOR),
    "cow_trunc_string": ("PARTITIONED BY (truncate(2, cat))", COW),
}


def _current_snapshot(location: Path) -> int:
    return json.loads(latest_metadata(location).read_text())["current-snapshot-id"]


def _insert(spark, table: str, start: int, end: int, extra: bool = False) -> None:  # noqa: F811
    columns = SPARK_COLUMNS + (", CASE WHEN id % 4 = 0 THEN NULL ELSE concat('x', id) END AS extra" if extra else "")
    spark.range(start, end).selectExpr(*_split_columns(columns)).writeTo(table).append()


def _split_columns(text: str) -> list:
    """The comma-separated expressions of SPARK_COLUMNS (commas inside parentheses stay)."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        depth += (ch == "(") - (ch == ")")
        current.append(ch)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def build_spark_table(spark, name: str) -> tuple:  # noqa: F811
    """Creates and changes lake.db.NAME; returns (location, [(step, snapshot id)])."""
    partitioning, modes = SPARK_TABLES[name]
    table = f"lake.db.{name}"
    location = spark_warehouse() / "db" / name
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} ({SPARK_DDL}) USING iceberg {partitioning} "
              f"TBLPROPERTIES ('format-version'='2', {modes})")
    steps = []

    def step(label: str) -> None:
        steps.append((label, _current_snapshot(location)))

    _insert(spark, table, 0, 120)
    step("insert 1")
    _insert(spark, table, 120, 220)
    step("insert 2")
    spark.sql(f"DELETE FROM {table} WHERE id % 7 = 0 OR cat IS NULL")
    step("delete")
    spark.sql(f"UPDATE {table} SET score = score * 2, cat = 'upd', amount = amount + 1 WHERE id % 5 = 1")
    step("update")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN extra STRING")
    _insert(spark, table, 220, 300, extra=True)
    step("insert after add column")
    spark.sql(f"UPDATE {table} SET extra = 'changed' WHERE id % 6 = 2")
    step("update new column")
    spark.sql(f"DELETE FROM {table} WHERE id BETWEEN 30 AND 60 OR id > 290")
    step("delete 2")
    return location, steps


@pytest.fixture(scope="module")
def spark_tables(spark) -> dict:  # noqa: F811
    return {name: build_spark_table(spark, name) for name in SPARK_TABLES}


@pytest.mark.parametrize("name", list(SPARK_TABLES))
def test_spark_table_every_snapshot(spark, spark_tables, name):  # noqa: F811
    location, steps = spark_tables[name]
    for label, snapshot_id in steps:
        fields, want = spark_rows(spark.sql(f"SELECT * FROM lake.db.{name} VERSION AS OF {snapshot_id}"))
        got = cat_rows(fields, lake_cat(location, snapshot_id), f"lake cat {location} --snapshot {snapshot_id}")
        assert_same_rows(want, got, f"{name} after {label} (snapshot {snapshot_id})")


@pytest.mark.parametrize("name", list(SPARK_TABLES))
def test_spark_table_current(spark, spark_tables, name):  # noqa: F811
    location, steps = spark_tables[name]
    fields, want = spark_rows(spark.table(f"lake.db.{name}"))
    assert [f for f, _ in fields][-1] == "extra"
    got = cat_rows(fields, lake_cat(location), f"lake cat {location}")
    assert_same_rows(want, got, f"{name}, current snapshot")


def test_spark_wrote_position_deletes(spark, spark_tables):  # noqa: F811
    """The merge-on-read tables really hold position deletes, and the
    copy-on-write one none, so the tests above cover both."""
    for name, (_, modes) in SPARK_TABLES.items():
        contents = {r.content for r in spark.sql(f"SELECT content FROM lake.db.{name}.all_delete_files").collect()}
        if modes == MOR:
            assert contents == {1}, f"{name}: delete file contents {contents}, want position deletes (1)"
        else:
            assert contents == set(), f"{name}: copy-on-write table has delete files {contents}"


# -------------------------------------------------------------- pyiceberg

PYICEBERG_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "cat", StringType(), required=False),
    NestedField(3, "amount", DecimalType(10, 2), required=False),
    NestedField(4, "d", DateType(), required=False),
    NestedField(5, "ts", TimestamptzType(), required=False),
    NestedField(6, "tsn", TimestampType(), required=False),
    NestedField(7, "score", DoubleType(), required=False),
    NestedField(8, "ratio", FloatType(), required=False),
    NestedField(9, "flag", BooleanType(), required=False),
    NestedField(10, "payload", BinaryType(), required=False),
    NestedField(11, "n", IntegerType(), required=False),
)
PYICEBERG_FIELDS = [(f.name, str(f.field_type)) for f in PYICEBERG_SCHEMA.fields]


def _pyiceberg_rows(rnd: random.Random, start: int, end: int, cats=("a", "b", "c")) -> pa.Table:
    import datetime

    rows = []
    for i in range(start, end):
        rows.append({
            "id": i,
            "cat": rnd.choice(cats) if i % 10 else None,
            "amount": decimal.Decimal(rnd.randint(-10**9, 10**9)).scaleb(-2),
            "d": datetime.date(1969, 6, 1) + datetime.timedelta(days=rnd.randint(0, 2000)),
            "ts": datetime.datetime(1969, 12, 25, tzinfo=datetime.timezone.utc)
            + datetime.timedelta(microseconds=rnd.randint(0, 20 * 86400 * 10**6)),
            "tsn": datetime.datetime(2001, 2, 3) + datetime.timedelta(microseconds=rnd.randint(0, 10**13)),
            "score": rnd.choice([float("nan"), -0.0, float("inf"), rnd.uniform(-1e9, 1e9)]) if i % 13 == 0
            else rnd.uniform(-10, 10),
            "ratio": rnd.uniform(-1, 1),
            "flag": rnd.random() < 0.5 if i % 7 else None,
            "payload": bytes(rnd.randint(0, 255) for _ in range(rnd.randint(0, 8))),
            "n": rnd.randint(-50, 50),
        })
    return pa.Table.from_pylist(rows, schema=PYICEBERG_SCHEMA.as_arrow())


def build_pyiceberg_table(tmp_path: Path, partitioned: bool, version: int):
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat")) if partitioned else PartitionSpec()
    table = catalog.create_table("db.t", PYICEBERG_SCHEMA, partition_spec=spec,
                                 properties={"format-version": str(version)})
    rnd = random.Random(7 if partitioned else 8)
    steps = []

    def step(label: str) -> None:
        table.refresh()
        steps.append((label, table.metadata.current_snapshot_id))

    table.append(_pyiceberg_rows(rnd, 0, 80))
    step("append 1")
    table.append(_pyiceberg_rows(rnd, 80, 160))
    step("append 2")
    table.overwrite(_pyiceberg_rows(rnd, 1000, 1030, cats=("b",)), overwrite_filter=EqualTo("cat", "b"))
    step("overwrite cat = b")
    table.delete(LessThan("id", 25))
    step("delete id < 25")
    table.delete(And(GreaterThanOrEqual("id", 100), LessThan("id", 120)))
    step("delete 100 <= id < 120")
    table.append(_pyiceberg_rows(rnd, 2000, 2040))
    step("append 3")
    table.overwrite(_pyiceberg_rows(rnd, 3000, 3050))
    step("full overwrite")
    table.refresh()
    return table, steps


@pytest.mark.parametrize("partitioned,version", [(False, 2), (True, 2), (True, 1)],
                         ids=["unpartitioned-v2", "identity-v2", "identity-v1"])
def test_pyiceberg_table_every_snapshot(tmp_path, partitioned, version):
    table, steps = build_pyiceberg_table(tmp_path, partitioned, version)
    metadata = table.metadata_location.removeprefix("file://")
    assert len({s for _, s in steps}) == len(steps), steps
    # An overwrite commits a delete snapshot and then an append: read those too.
    labels = dict((s, label) for label, s in steps)
    snapshots = [s.snapshot_id for s in table.metadata.snapshots]
    assert set(labels) <= set(snapshots)
    for snapshot_id in snapshots:
        label = labels.get(snapshot_id, "the delete half of an overwrite")
        want = arrow_rows(table.scan(snapshot_id=snapshot_id).to_arrow(), PYICEBERG_FIELDS)
        got = cat_rows(PYICEBERG_FIELDS, lake_cat(metadata, snapshot_id), f"lake cat {metadata}")
        assert_same_rows(want, got, f"pyiceberg table after {label} (snapshot {snapshot_id})")
    want = arrow_rows(table.scan().to_arrow(), PYICEBERG_FIELDS)
    assert_same_rows(want, cat_rows(PYICEBERG_FIELDS, lake_cat(metadata), "lake cat"), "pyiceberg table, current")
