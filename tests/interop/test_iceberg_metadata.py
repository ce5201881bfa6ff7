"""Table metadata JSON between pyiceberg and us.

pyiceberg (SqlCatalog on sqlite in a temporary directory) writes tables in
format v1 and v2: partitioned, two appends, then a spec and a schema
evolution. `icebergtool metadata FILE` reads each metadata file and writes it
back as v2; pyiceberg must parse our output to the same schemas, specs,
snapshots, refs and properties, and scan the table through it. Metadata made
by `icebergtool create` must parse in pyiceberg too.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TIERDB_BUILD_DIR", REPO_ROOT / "build"))


def icebergtool(*args: str) -> str:
    tool = BUILD_DIR / "tools" / "icebergtool"
    if not os.access(tool, os.X_OK):
        pytest.fail(f"{tool} is missing: run `make` first", pytrace=False)
    proc = subprocess.run([str(tool), *map(str, args)], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode("utf-8")


def make_table(tmp_path: Path, version: int):
    """A pyiceberg table with two appends and an evolved spec and schema."""
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestampType(), required=False),
        NestedField(3, "name", StringType(), required=False),
    )
    # Appends with transforms other than identity need pyiceberg-core, so
    # the table starts partitioned by identity and evolves afterwards.
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "name"))
    table = catalog.create_table(
        "db.t", schema, partition_spec=spec, properties={"format-version": str(version), "owner": "tierdb"}
    )
    arrow_schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("ts", pa.timestamp("us")), pa.field("name", pa.string())]
    )
    for start in (1, 100):
        rows = [{"id": start + i, "ts": datetime.datetime(2024, 1, 1 + i), "name": f"n{i % 2}"} for i in range(4)]
        table.append(pa.Table.from_pylist(rows, schema=arrow_schema))
    with table.update_spec() as update:
        update.add_field("ts", DayTransform(), "ts_day")
        update.add_field("id", TruncateTransform(1000), "id_trunc")
        update.add_field("id", BucketTransform(16), "id_bucket")
    with table.update_schema() as update:
        update.add_column("score", DoubleType())
    return catalog.load_table("db.t")


def summary(md) -> dict:
    """What both sides must agree on, in comparable Python values."""
    return {
        "table_uuid": str(md.table_uuid),
        "location": md.location,
        "last_updated_ms": md.last_updated_ms,
        "last_column_id": md.last_column_id,
        "last_sequence_number": getattr(md, "last_sequence_number", 0),
        "current_schema_id": md.current_schema_id,
        "schemas": [s.model_dump_json() for s in md.schemas],
        "default_spec_id": md.default_spec_id,
        "specs": [s.model_dump_json() for s in md.partition_specs],
        "last_partition_id": md.last_partition_id,
        "properties": dict(md.properties),
        "current_snapshot_id": md.current_snapshot_id,
        "snapshots": [
            (
                s.snapshot_id,
                s.parent_snapshot_id,
                s.sequence_number or 0,
                s.timestamp_ms,
                s.manifest_list,
                s.summary.model_dump_json() if s.summary else None,
                s.schema_id,
            )
            for s in md.snapshots
        ],
        "snapshot_log": [(e.snapshot_id, e.timestamp_ms) for e in md.snapshot_log],
        "metadata_log": [(e.metadata_file, e.timestamp_ms) for e in md.metadata_log],
        "refs": {name: (r.snapshot_id, r.snapshot_ref_type.value) for name, r in md.refs.items()},
        "sort_orders": [o.model_dump_json() for o in md.sort_orders],
        "default_sort_order_id": md.default_sort_order_id,
    }


@pytest.mark.parametrize("version", [1, 2])
def test_pyiceberg_metadata_round_trips_through_us(tmp_path, version):
    table = make_table(tmp_path, version)
    src = Path(table.metadata_location.removeprefix("file://"))
    theirs = TableMetadataUtil.parse_raw(src.read_text())
    assert theirs.format_version == version
    ours_text = icebergtool("metadata", src)
    ours = TableMetadataUtil.parse_raw(ours_text)
    assert ours.format_version == 2

    expected = summary(theirs)
    got = summary(ours)
    if version == 1:
        # The v1-to-v2 upgrade: sequence numbers are 0 and the schema id of each
        # snapshot is kept; everything else must match.
        expected["last_sequence_number"] = 0
    for key in expected:
        assert got[key] == expected[key], key

    # pyiceberg reads the table through our metadata file.
    ours_path = src.parent / "v999-ours.metadata.json"
    ours_path.write_text(ours_text)
    rows = StaticTable.from_metadata(f"file://{ours_path}").scan().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == [1, 2, 3, 4, 100, 101, 102, 103]
    # ... and at the first snapshot.
    first = ours.snapshots[0].snapshot_id
    old = StaticTable.from_metadata(f"file://{ours_path}").scan(snapshot_id=first).to_arrow()
    assert sorted(old.column("id").to_pylist()) == [1, 2, 3, 4]


def test_pyiceberg_reads_metadata_we_create(tmp_path):
    text = icebergtool(
        "create", tmp_path / "t", "ts:day:ts_day", "id:truncate[1000]:id_trunc", "name:bucket[8]:name_bucket",
        "at:hour:at_hour", "amount:identity:amount",
    )
    md = TableMetadataUtil.parse_raw(text)
    assert md.format_version == 2
    assert uuid.UUID(str(md.table_uuid)).version == 4
    assert md.location == str(tmp_path / "t")
    assert md.current_snapshot_id is None and md.snapshots == []
    schema = md.schema()
    assert [(f.field_id, f.name, str(f.field_type), f.required) for f in schema.fields] == [
        (1, "id", "long", True),
        (2, "ts", "timestamp", False),
        (3, "at", "timestamptz", False),
        (4, "name", "string", False),
        (5, "amount", "decimal(12, 2)", False),
    ]
    spec = md.spec()
    assert [(f.source_id, f.field_id, f.name, str(f.transform)) for f in spec.fields] == [
        (2, 1000, "ts_day", "day"),
        (1, 1001, "id_trunc", "truncate[1000]"),
        (4, 1002, "name_bucket", "bucket[8]"),
        (3, 1003, "at_hour", "hour"),
        (5, 1004, "amount", "identity"),
    ]
    assert md.last_partition_id == 1004
    assert md.last_column_id == 5
    # Through our reader again: stable.
    path = tmp_path / "v1.metadata.json"
    path.write_text(text)
    assert icebergtool("metadata", path) == text


def test_broken_metadata_is_an_error(tmp_path):
    path = tmp_path / "bad.metadata.json"
    path.write_text('{"format-version": 2, "location": "x"}')
    proc = subprocess.run([str(BUILD_DIR / "tools" / "icebergtool"), "metadata", str(path)], capture_output=True)
    assert proc.returncode == 1
    assert b'missing required field "table-uuid"' in proc.stderr
