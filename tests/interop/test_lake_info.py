"""Tables written by pyiceberg, inspected by `tierdb lake info`.

pyiceberg (SqlCatalog on sqlite in a temporary directory) creates a table
partitioned by identity, appends twice and deletes rows (which rewrites and
drops files). `tierdb lake info --json` must agree with pyiceberg on the
snapshots, the current schema and spec, and, for the current and an older
snapshot, on the number of live data files and their records, which it
counts from the manifests itself.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import LessThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TIERDB_BUILD_DIR", REPO_ROOT / "build"))


def run_tierdb(*args: str) -> subprocess.CompletedProcess:
    tool = BUILD_DIR / "tierdb"
    if not os.access(tool, os.X_OK):
        pytest.fail(f"{tool} is missing: run `make build/tierdb` first", pytrace=False)
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, timeout=60, text=True)


def lake_info(*args: str) -> dict:
    proc = run_tierdb("lake", "info", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def make_table(tmp_path: Path, version: int):
    """Two appends of 6 rows over partitions a/b/c, then a delete of ids < 4."""
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"))
    table = catalog.create_table(
        "db.t", schema, partition_spec=spec, properties={"format-version": str(version), "owner": "tierdb"}
    )
    arrow_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    for start in (0, 100):
        rows = [{"id": start + i, "name": "abc"[i % 3]} for i in range(6)]
        table.append(pa.Table.from_pylist(rows, schema=arrow_schema))
    table.delete(LessThan("id", 4))
    return catalog.load_table("db.t")


def expected_files(table, snapshot_id: int) -> dict:
    """pyiceberg's live data files of a snapshot and their records."""
    tasks = list(table.scan(snapshot_id=snapshot_id).plan_files())
    assert all(not task.delete_files for task in tasks)
    return {
        "data_files": len(tasks),
        "data_records": sum(task.file.record_count for task in tasks),
        "rows": table.scan(snapshot_id=snapshot_id).to_arrow().num_rows,
    }


def check_files(info: dict, table, snapshot_id: int) -> None:
    want = expected_files(table, snapshot_id)
    got = info["files"]
    assert got["snapshot_id"] == snapshot_id
    assert got["data_files"] == want["data_files"]
    assert got["data_records"] == want["data_records"] == want["rows"]
    # pyiceberg deletes by rewriting files (copy-on-write): no delete files.
    assert got["position_delete_files"] == 0
    assert got["equality_delete_files"] == 0


@pytest.mark.parametrize("version", [1, 2])
def test_info_matches_pyiceberg(tmp_path, version):
    table = make_table(tmp_path, version)
    md = table.metadata
    location = table.location()
    assert location.startswith("file://")
    info = lake_info(location[len("file://") :])

    assert info["location"] == md.location
    assert info["table_uuid"] == str(md.table_uuid)
    assert info["format_version"] == version
    assert info["metadata_file"].endswith(Path(table.metadata_location).name)
    assert info["properties"]["owner"] == "tierdb"

    schema = md.schema()
    assert info["schema"]["schema_id"] == schema.schema_id
    assert [(f["id"], f["name"], f["type"], f["required"]) for f in info["schema"]["fields"]] == [
        (f.field_id, f.name, str(f.field_type), f.required) for f in schema.fields
    ]
    spec = md.spec()
    assert [(f["field_id"], f["name"], f["transform"], f["source"]) for f in info["partition_spec"]["fields"]] == [
        (f.field_id, f.name, str(f.transform), schema.find_field(f.source_id).name) for f in spec.fields
    ]

    assert info["current_snapshot_id"] == md.current_snapshot_id
    assert [s["snapshot_id"] for s in info["snapshots"]] == [s.snapshot_id for s in md.snapshots]
    for got, snap in zip(info["snapshots"], md.snapshots):
        assert got["parent_id"] == snap.parent_snapshot_id
        assert got["timestamp_ms"] == snap.timestamp_ms
        assert got["sequence_number"] == (snap.sequence_number if version == 2 else 0)
        assert got["operation"] == snap.summary.operation.value
        assert got["total_records"] == int(snap.summary["total-records"])
    # The delete must have done something for the comparisons to mean much.
    assert len(md.snapshots) >= 3
    assert info["snapshots"][-1]["total_records"] == 8

    check_files(info, table, md.current_snapshot_id)
    assert info["files"]["data_records"] == 8

    # The snapshot after the second append, before the delete.
    second = md.snapshots[1].snapshot_id
    older = lake_info(location[len("file://") :], "--snapshot", str(second))
    check_files(older, table, second)
    assert older["files"]["data_records"] == 12
    assert older["files"]["data_files"] == 6

    first = md.snapshots[0].snapshot_id
    check_files(lake_info(location[len("file://") :], "--snapshot", str(first)), table, first)


def test_metadata_file_location(tmp_path):
    table = make_table(tmp_path, 2)
    metadata_file = table.metadata_location[len("file://") :]
    info = lake_info(metadata_file)
    assert info["metadata_file"] == metadata_file
    assert info["current_snapshot_id"] == table.metadata.current_snapshot_id
    check_files(info, table, table.metadata.current_snapshot_id)


def test_newest_metadata_file_wins(tmp_path):
    """Without a version hint, the highest-numbered metadata file is read, not an older one."""
    table = make_table(tmp_path, 2)
    location = table.location()[len("file://") :]
    metadata = sorted(p.name for p in (Path(location) / "metadata").glob("*.metadata.json"))
    assert len(metadata) >= 4
    assert lake_info(location)["metadata_file"].endswith(Path(table.metadata_location).name)
    # A version hint, as Hadoop tables have, takes precedence.
    first = Path(location) / "metadata" / metadata[0]
    (Path(location) / "metadata" / "v1.metadata.json").write_bytes(first.read_bytes())
    (Path(location) / "metadata" / "version-hint.text").write_text("1\n")
    info = lake_info(location)
    assert info["metadata_file"].endswith("/metadata/v1.metadata.json")
    assert info["snapshots"] == []
    assert info["files"] is None


def test_text_output(tmp_path):
    table = make_table(tmp_path, 2)
    proc = run_tierdb("lake", "info", table.location()[len("file://") :])
    assert proc.returncode == 0, proc.stderr
    assert str(table.metadata.table_uuid) in proc.stdout
    assert f"Files of snapshot {table.metadata.current_snapshot_id}:" in proc.stdout
    assert "records in data files:  8\n" in proc.stdout


def test_errors(tmp_path):
    proc = run_tierdb("lake", "info", tmp_path / "missing")
    assert proc.returncode == 1
    assert proc.stderr.startswith("tierdb: ") and "missing" in proc.stderr

    (tmp_path / "empty").mkdir()
    proc = run_tierdb("lake", "info", tmp_path / "empty")
    assert proc.returncode == 1
    assert "not an Iceberg table" in proc.stderr

    table = make_table(tmp_path, 2)
    proc = run_tierdb("lake", "info", table.location()[len("file://") :], "--snapshot", "12345")
    assert proc.returncode == 1
    assert "no snapshot 12345" in proc.stderr

    bad = tmp_path / "bad.metadata.json"
    bad.write_text('{"format-version": 2}')
    proc = run_tierdb("lake", "info", bad)
    assert proc.returncode == 1
    assert proc.stderr.startswith("tierdb: ")

    proc = run_tierdb("lake", "info")
    assert proc.returncode == 2
    assert "table location is required" in proc.stderr

    proc = run_tierdb("lake", "info", "--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: tierdb lake info LOCATION [--snapshot ID] [--json]")


def test_damaged_table(tmp_path):
    """A truncated manifest or a missing manifest list fails with a message naming the file."""
    table = make_table(tmp_path, 2)
    location = table.location()[len("file://") :]
    snapshot = table.metadata.current_snapshot()
    manifest = snapshot.manifests(table.io)[0].manifest_path[len("file://") :]
    data = Path(manifest).read_bytes()
    Path(manifest).write_bytes(data[: len(data) // 2])
    proc = run_tierdb("lake", "info", location)
    assert proc.returncode == 1
    assert proc.stderr.startswith("tierdb: ") and Path(manifest).name in proc.stderr

    manifest_list = snapshot.manifest_list[len("file://") :]
    os.remove(manifest_list)
    proc = run_tierdb("lake", "info", location, "--json")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("tierdb: ") and Path(manifest_list).name in proc.stderr
