"""Writes the table-metadata fixtures of test_iceberg_metadata.c with pyiceberg.

Run from the repository root:  .venv/bin/python lake/tests/data/iceberg/make-fixtures.py

Each fixture is the final metadata JSON of a table pyiceberg created in a
temporary SqlCatalog (sqlite), partitioned by identity(name), with two
appends; then the spec evolves to day(ts) and truncate[1000](id) (spec 1,
the default) and the schema gains an optional column (schema 1). Appends go
before the evolution because pyiceberg needs pyiceberg-core to compute
other transforms. v1.metadata.json uses format-version 1, v2.metadata.json
format-version 2. The hand-written fixtures (java_v1.metadata.json, nested
types, errors) are not touched.
"""

import datetime
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform, TruncateTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType

HERE = Path(__file__).resolve().parent


def make(version: int) -> None:
    tmp = tempfile.mkdtemp()
    try:
        catalog = SqlCatalog("fx", uri=f"sqlite:///{tmp}/cat.db", warehouse=f"file://{tmp}")
        catalog.create_namespace("db")
        schema = Schema(
            NestedField(1, "id", LongType(), required=True),
            NestedField(2, "ts", TimestampType(), required=False),
            NestedField(3, "name", StringType(), required=False),
        )
        spec = PartitionSpec(
            PartitionField(3, 1000, IdentityTransform(), "name"),
        )
        table = catalog.create_table(
            "db.t", schema, partition_spec=spec, properties={"format-version": str(version), "tierdb.test": "yes"}
        )
        arrow_schema = pa.schema(
            [pa.field("id", pa.int64(), nullable=False), pa.field("ts", pa.timestamp("us")), pa.field("name", pa.string())]
        )
        for start in (1, 2500):
            rows = pa.Table.from_pylist(
                [
                    {"id": start + i, "ts": datetime.datetime(2024, 1, 1 + i), "name": f"n{start + i}"}
                    for i in range(3)
                ],
                schema=arrow_schema,
            )
            table.append(rows)
        with table.update_spec() as update:
            update.remove_field("name")
            update.add_field("ts", DayTransform(), "ts_day")
            update.add_field("id", TruncateTransform(1000), "id_trunc")
        with table.update_schema() as update:
            update.add_column("score", DoubleType())
        src = Path(table.metadata_location.removeprefix("file://"))
        shutil.copy(src, HERE / f"v{version}.metadata.json")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    make(1)
    make(2)
