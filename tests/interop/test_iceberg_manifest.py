"""Manifests and manifest lists between pyiceberg, fastavro and us.

pyiceberg (SqlCatalog on sqlite in a temporary directory) writes a table
partitioned by identity with two appends. `icebergtool rewrite-manifests`
reads its current snapshot's manifest list and manifests with our readers and
writes them again with our writers, plus metadata pointing at the new list.
pyiceberg must plan and scan the rewritten table exactly as the original, and
fastavro must find the header metadata and field ids the Iceberg spec asks of
a v2 manifest and manifest list.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TIERDB_BUILD_DIR", REPO_ROOT / "build"))


def icebergtool(*args) -> str:
    tool = BUILD_DIR / "tools" / "icebergtool"
    if not os.access(tool, os.X_OK):
        pytest.fail(f"{tool} is missing: run `make` first", pytrace=False)
    proc = subprocess.run([str(tool), *map(str, args)], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode("utf-8")


def local(location: str) -> Path:
    return Path(location.removeprefix("file://"))


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def table(request, tmp_path):
    """Two appends to a table partitioned by identity(name), in format 1 or 2."""
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "score", DoubleType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"))
    t = catalog.create_table("db.t", schema, partition_spec=spec, properties={"format-version": str(request.param)})
    arrow_schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), pa.field("score", pa.float64())]
    )
    names = ["a", "b", None, "é"]
    for start in (1, 100):
        rows = [{"id": start + i, "name": names[i % 4], "score": start * 0.5 + i} for i in range(7)]
        t.append(pa.Table.from_pylist(rows, schema=arrow_schema))
    return catalog.load_table("db.t")


@pytest.fixture
def rewritten(table, tmp_path):
    out = tmp_path / "ours"
    out.mkdir()
    lines = icebergtool("rewrite-manifests", local(table.metadata_location), out).splitlines()
    assert len(lines) == 2, lines
    list_location, metadata_path = lines
    assert local(list_location).parent == out
    return list_location, Path(metadata_path)


def sorted_rows(arrow_table) -> list:
    return sorted(arrow_table.to_pylist(), key=lambda r: r["id"])


def planned(tbl) -> list:
    return sorted(
        (t.file.file_path, t.file.record_count, t.file.file_size_in_bytes, tuple(t.file.partition), t.file.content)
        for t in tbl.scan().plan_files()
    )


def test_pyiceberg_scans_rewritten_table_like_original(table, rewritten):
    list_location, metadata_path = rewritten
    ours = StaticTable.from_metadata(str(metadata_path))
    assert ours.current_snapshot().manifest_list == list_location
    assert ours.current_snapshot().snapshot_id == table.current_snapshot().snapshot_id

    expected = sorted_rows(table.scan().to_arrow())
    assert len(expected) == 14
    assert sorted_rows(ours.scan().to_arrow()) == expected

    # Planning and partition pruning go through our manifests' partition
    # tuples and our list's partition summaries.
    assert planned(ours) == planned(table)
    assert len(planned(table)) == 8
    for name, count in (("a", 4), ("é", 2)):
        got = sorted_rows(ours.scan(row_filter=f"name == '{name}'").to_arrow())
        assert got == [r for r in expected if r["name"] == name]
        assert len(got) == count
    got = sorted_rows(ours.scan(row_filter="name is null").to_arrow())
    assert got == [r for r in expected if r["name"] is None]
    assert len(got) == 4


def entries(tbl) -> list:
    """Manifest entries with inherited values resolved, as pyiceberg sees them."""
    snap = tbl.current_snapshot()
    out = []
    for mf in snap.manifests(tbl.io):
        for e in mf.fetch_manifest_entry(tbl.io, discard_deleted=False):
            out.append((e.status.value, e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file.file_path))
    return sorted(out)


def test_manifest_entries_and_list_entries_agree(table, rewritten):
    _, metadata_path = rewritten
    ours = StaticTable.from_metadata(str(metadata_path))
    assert entries(ours) == entries(table)

    def list_entries(tbl):
        return sorted(
            (
                m.added_snapshot_id,
                m.sequence_number,
                m.min_sequence_number,
                int(m.content),
                m.partition_spec_id,
                m.added_files_count,
                m.existing_files_count,
                m.deleted_files_count,
                m.added_rows_count,
                m.existing_rows_count,
                m.deleted_rows_count,
                tuple((p.contains_null, p.contains_nan, p.lower_bound, p.upper_bound) for p in m.partitions or ()),
            )
            for m in tbl.current_snapshot().manifests(tbl.io)
        )

    theirs = list_entries(table)
    if table.format_version == 1:
        # v1 lists carry no sequence numbers (they read as 0) and no content;
        # ours are v2, and keep the 0s they read.
        assert all(e[1] == 0 and e[2] == 0 for e in theirs)
    assert list_entries(ours) == theirs


def field_ids(schema: dict) -> dict:
    """{dotted name: field-id} over an Avro record schema, through unions,
    arrays and maps (fastavro keeps unknown attributes like field-id)."""
    found = {}

    def walk(t, prefix):
        if isinstance(t, list):
            for branch in t:
                walk(branch, prefix)
        elif isinstance(t, dict):
            if t.get("type") == "record":
                for f in t["fields"]:
                    name = prefix + f["name"]
                    if "field-id" in f:
                        found[name] = f["field-id"]
                    walk(f["type"], name + ".")
            elif t.get("type") == "array":
                if "element-id" in t:
                    found[prefix + "element"] = t["element-id"]
                walk(t["items"], prefix + "element.")
            elif t.get("type") == "map":
                walk(t["values"], prefix + "value.")

    walk(schema, "")
    return found


def read_avro(path: Path):
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        meta = {k: v.decode() if isinstance(v, bytes) else v for k, v in reader.metadata.items()}
        return meta, reader.writer_schema, list(reader)


def test_fastavro_reads_our_manifest_list_and_manifests(table, rewritten):
    list_location, _ = rewritten
    snap = table.current_snapshot()
    meta, schema, records = read_avro(local(list_location))
    assert meta["format-version"] == "2"
    assert meta["snapshot-id"] == str(snap.snapshot_id)
    assert meta["parent-snapshot-id"] == str(snap.parent_snapshot_id)
    assert meta["sequence-number"] == str(snap.sequence_number or 0)
    ids = field_ids(schema)
    expected_list_ids = {
        "manifest_path": 500, "manifest_length": 501, "partition_spec_id": 502, "content": 517,
        "sequence_number": 515, "min_sequence_number": 516, "added_snapshot_id": 503,
        "added_files_count": 504, "existing_files_count": 505, "deleted_files_count": 506,
        "added_rows_count": 512, "existing_rows_count": 513, "deleted_rows_count": 514,
        "partitions": 507, "partitions.element": 508, "partitions.element.contains_null": 509,
        "partitions.element.contains_nan": 518, "partitions.element.lower_bound": 510,
        "partitions.element.upper_bound": 511,
    }  # fmt: skip
    assert {k: ids.get(k) for k in expected_list_ids} == expected_list_ids
    assert len(records) == 2
    for rec in records:
        path = local(rec["manifest_path"])
        assert path.parent == local(list_location).parent
        assert rec["manifest_length"] == path.stat().st_size
        check_manifest(table, path, rec)


def check_manifest(table, path: Path, list_entry: dict):
    meta, schema, records = read_avro(path)
    assert meta["format-version"] == "2"
    assert meta["content"] == "data"
    assert meta["partition-spec-id"] == "0"
    assert json.loads(meta["partition-spec"]) == [
        {"name": "name", "transform": "identity", "source-id": 2, "field-id": 1000}
    ]
    ours_schema = json.loads(meta["schema"])
    assert [(f["id"], f["name"], f["type"], f["required"]) for f in ours_schema["fields"]] == [
        (1, "id", "long", True),
        (2, "name", "string", False),
        (3, "score", "double", False),
    ]
    ids = field_ids(schema)
    expected_ids = {
        "status": 0, "snapshot_id": 1, "sequence_number": 3, "file_sequence_number": 4, "data_file": 2,
        "data_file.content": 134, "data_file.file_path": 100, "data_file.file_format": 101,
        "data_file.partition": 102, "data_file.partition.name": 1000, "data_file.record_count": 103,
        "data_file.file_size_in_bytes": 104, "data_file.column_sizes": 108,
        "data_file.value_counts": 109, "data_file.null_value_counts": 110,
        "data_file.lower_bounds": 125, "data_file.upper_bounds": 128,
    }  # fmt: skip
    assert {k: ids.get(k) for k in expected_ids} == expected_ids

    # Every entry the original manifest had, same status, file and partition.
    original = {
        e.data_file.file_path: e
        for mf in table.current_snapshot().manifests(table.io)
        if mf.added_snapshot_id == list_entry["added_snapshot_id"]
        for e in mf.fetch_manifest_entry(table.io, discard_deleted=False)
    }
    assert sorted(r["data_file"]["file_path"] for r in records) == sorted(original)
    for r in records:
        e = original[r["data_file"]["file_path"]]
        df = r["data_file"]
        assert r["status"] == e.status.value == 1
        assert df["content"] == 0
        assert df["file_format"] == "PARQUET"
        assert df["partition"] == {"name": e.data_file.partition[0]}
        assert df["record_count"] == e.data_file.record_count
        assert df["file_size_in_bytes"] == e.data_file.file_size_in_bytes
        for name in ("column_sizes", "value_counts", "null_value_counts", "lower_bounds", "upper_bounds"):
            ours = {kv["key"]: kv["value"] for kv in df[name] or ()}
            assert ours == dict(getattr(e.data_file, name) or {}), name
        assert len(df["value_counts"]) == 3, "statistics for all three columns"
        assert (df["split_offsets"] or None) == (list(e.data_file.split_offsets or ()) or None)
    assert list_entry["added_files_count"] == len(records)
    assert list_entry["added_rows_count"] == sum(r["data_file"]["record_count"] for r in records)
