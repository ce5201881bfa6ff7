"""Interop tests for the Avro container file codec (lake/src/avro).

Checked against fastavro both ways, with every codec: files fastavro writes
read identically through `build/tools/avrocat`, and files avrocat writes
(through tl_avro_writer) read identically in fastavro. Then Iceberg: the
manifests and manifest lists pyiceberg writes read identically, and a table
whose manifests we rewrote still scans the same rows in pyiceberg.

avrocat prints records as JSON: bytes and fixed as hex, NaN and infinities
as strings (see tests/tools/avrocat.c); `normalize` maps fastavro's Python
values to the same form.
"""

from __future__ import annotations

import glob
import io
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TIERDB_BUILD_DIR", REPO_ROOT / "build"))
CODECS = ["null", "deflate", "snappy", "zstandard"]
TIMEOUT = 60

SCHEMA = {
    "type": "record",
    "name": "row",
    "namespace": "tierdb.test",
    "fields": [
        {"name": "i", "type": "int", "field-id": 1},
        {"name": "l", "type": "long", "field-id": 2},
        {"name": "f", "type": "float", "field-id": 3},
        {"name": "d", "type": "double", "field-id": 4},
        {"name": "b", "type": "boolean", "field-id": 5},
        {"name": "s", "type": "string", "field-id": 6},
        {"name": "by", "type": "bytes", "field-id": 7},
        {"name": "fx", "type": {"type": "fixed", "name": "uuid16", "size": 16, "logicalType": "uuid"}},
        {"name": "e", "type": {"type": "enum", "name": "op", "symbols": ["ADDED", "EXISTING", "DELETED"]}},
        {"name": "opt", "type": ["null", "long"], "default": None},
        {"name": "multi", "type": ["null", "string", "double"], "default": None},
        {"name": "arr", "type": {"type": "array", "items": ["null", "int"], "element-id": 20}},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
        {
            "name": "kv",
            "type": {
                "type": "array",
                "logicalType": "map",
                "items": {
                    "type": "record",
                    "name": "k21_v22",
                    "fields": [
                        {"name": "key", "type": "int", "field-id": 21},
                        {"name": "value", "type": "bytes", "field-id": 22},
                    ],
                },
            },
        },
        {
            "name": "nested",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "inner",
                    "fields": [
                        {"name": "x", "type": "long"},
                        {"name": "again", "type": ["null", "uuid16"]},
                    ],
                },
            ],
        },
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    ],
}

SPECIAL_DOUBLES = [0.0, -0.0, 1.5, -2.25, 1e308, 5e-324, math.inf, -math.inf, math.nan]


def make_rows(n: int, seed: int = 7):
    rnd = random.Random(seed)
    strings = ["", "plain", "naïve", "日本語", "emoji 🦆", "quote \" and \\ backslash", "nl\nline"]
    for k in range(n):
        yield {
            "i": rnd.choice([0, 1, -1, 2**31 - 1, -(2**31), rnd.randint(-1000, 1000)]),
            "l": rnd.choice([0, 2**63 - 1, -(2**63), rnd.randint(-(2**40), 2**40)]),
            "f": rnd.choice([0.0, 0.5, -3.25, 1e30, rnd.random()]),
            "d": SPECIAL_DOUBLES[k % len(SPECIAL_DOUBLES)] if k % 3 == 0 else rnd.uniform(-1e6, 1e6),
            "b": k % 2 == 0,
            "s": rnd.choice(strings) + str(k),
            "by": bytes(rnd.randrange(256) for _ in range(k % 11)),
            "fx": bytes(rnd.randrange(256) for _ in range(16)),
            "e": ["ADDED", "EXISTING", "DELETED"][k % 3],
            "opt": None if k % 4 == 0 else k * 7,
            "multi": [None, f"s{k}", k / 8][k % 3],
            "arr": [None if j % 3 == 2 else j - k for j in range(k % 9)],
            "m": {f"key{j}": [f"v{j}"] * j for j in range(k % 4)},
            "kv": [{"key": j, "value": bytes([j, k % 256])} for j in range(k % 3)],
            "nested": None if k % 5 == 0 else {"x": -k, "again": None if k % 2 else bytes(range(16))},
            "day": 19000 + k,
        }


def normalize(value):
    """fastavro's Python value in avrocat's JSON form."""
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    return value


def as_float32(rows):
    """What a float field holds after a round trip through 32 bits."""
    import struct

    for r in rows:
        r = dict(r)
        r["f"] = struct.unpack("<f", struct.pack("<f", r["f"]))[0]
        yield r


@pytest.fixture(scope="session")
def avrocat() -> Path:
    path = BUILD_DIR / "tools" / "avrocat"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is missing: run `make` in {REPO_ROOT} first", pytrace=False)
    return path


def run_avrocat(avrocat: Path, *args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(avrocat), *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode >= 0, f"avrocat died of signal {-proc.returncode}: {proc.stderr}"
    if check:
        assert proc.returncode == 0, f"avrocat {args} failed: {proc.stderr}"
    return proc


def cat(avrocat: Path, path: Path):
    out = run_avrocat(avrocat, path).stdout
    return [json.loads(line) for line in out.splitlines()]


def fastavro_records(path: Path):
    """The records as stored: fastavro's logical-type conversions (dates,
    decimals...) are switched off, as avrocat prints the underlying values."""
    from fastavro import _read

    saved = dict(_read.LOGICAL_READERS)
    _read.LOGICAL_READERS.clear()
    try:
        with open(path, "rb") as f:
            return [normalize(r) for r in fastavro.reader(f)]
    finally:
        _read.LOGICAL_READERS.update(saved)


@pytest.mark.parametrize("codec", CODECS)
def test_we_read_what_fastavro_writes(avrocat, tmp_path, codec):
    rows = list(make_rows(300))
    path = tmp_path / f"fastavro_{codec}.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(SCHEMA), rows, codec=codec, sync_interval=2000,
                        metadata={"iceberg.thing": "ünïcode value", "empty": ""})
    assert cat(avrocat, path) == fastavro_records(path)
    assert len(fastavro_records(path)) == 300
    header = json.loads(run_avrocat(avrocat, "--meta", path).stdout)
    assert header["codec"] == codec
    assert header["meta"]["iceberg.thing"] == "ünïcode value"
    assert header["meta"]["empty"] == ""


@pytest.mark.parametrize("codec", CODECS)
def test_fastavro_reads_what_we_write(avrocat, tmp_path, codec):
    rows = list(make_rows(300, seed=11))
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(json.dumps(SCHEMA))
    rows_path = tmp_path / "rows.jsonl"
    rows_path.write_text("".join(json.dumps(normalize(r)) + "\n" for r in rows))
    out = tmp_path / f"ours_{codec}.avro"
    run_avrocat(avrocat, "--write", schema_path, rows_path, out, "--codec", codec, "--meta", "format-version=2",
                "--meta", "partition-spec=[]", "--block-records", "37")
    with open(out, "rb") as f:
        reader = fastavro.reader(f)
        assert reader.codec == codec
        assert reader.metadata["format-version"] == "2"
        assert reader.metadata["partition-spec"] == "[]"
        # Field ids and logical types survive in the header's schema text.
        assert json.loads(reader.metadata["avro.schema"]) == SCHEMA
    got = fastavro_records(out)
    assert got == [normalize(r) for r in as_float32(rows)]
    # And our reader agrees with itself on our file.
    assert cat(avrocat, out) == got


def test_writer_refuses_rows_that_do_not_fit(avrocat, tmp_path):
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(json.dumps(SCHEMA))
    row = normalize(next(make_rows(1)))
    row["fx"] = "00"  # a fixed of 16 bytes given 1
    rows_path = tmp_path / "rows.jsonl"
    rows_path.write_text(json.dumps(row) + "\n")
    proc = run_avrocat(avrocat, "--write", schema_path, rows_path, tmp_path / "bad.avro", check=False)
    assert proc.returncode == 1
    assert "line 1 does not fit the schema" in proc.stderr


def test_hostile_files_fail_cleanly(avrocat, tmp_path):
    rows = list(make_rows(60))
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(SCHEMA), rows, codec="deflate", sync_interval=500)
    data = buf.getvalue()
    rnd = random.Random(3)
    path = tmp_path / "hostile.avro"
    failures = 0
    for trial in range(150):
        mutated = bytearray(data)
        if trial % 3 == 0:
            mutated = mutated[: rnd.randrange(len(mutated))]
        else:
            for _ in range(1 + trial % 5):
                mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
        path.write_bytes(bytes(mutated))
        proc = run_avrocat(avrocat, path, check=False)
        if proc.returncode != 0:
            assert proc.stderr.startswith("avrocat: "), proc.stderr
            failures += 1
    assert failures > 50


def make_pyiceberg_table(tmp_path: Path):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "city", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="city"))
    table = catalog.create_table("db.cities", schema=schema, partition_spec=spec)
    arrow_schema = pa.schema([pa.field("id", pa.int64()), pa.field("city", pa.string())])
    table.append(pa.table({"id": [1, 2, 3], "city": ["Oslo", "Lima", "Oslo"]}, schema=arrow_schema))
    table.append(pa.table({"id": [4, 5], "city": ["Pune", None]}, schema=arrow_schema))
    return catalog.load_table("db.cities")


def test_pyiceberg_manifests_read_identically(avrocat, tmp_path):
    table = make_pyiceberg_table(tmp_path)
    metadata_dir = Path(table.metadata_location.removeprefix("file://")).parent
    files = sorted(Path(p) for p in glob.glob(str(metadata_dir / "*.avro")))
    assert len(files) >= 4  # two manifest lists, two manifests at least
    for path in files:
        assert cat(avrocat, path) == fastavro_records(path), path
    # A few fields, as Iceberg code will read them.
    snapshot_list = Path(table.current_snapshot().manifest_list.removeprefix("file://"))
    manifests = cat(avrocat, snapshot_list)
    assert len(manifests) == 2
    total_rows = 0
    for m in manifests:
        manifest_path = Path(m["manifest_path"].removeprefix("file://"))
        assert manifest_path.is_file() and m["manifest_length"] == manifest_path.stat().st_size
        for entry in cat(avrocat, manifest_path):
            df = entry["data_file"]
            assert df["file_path"].endswith(".parquet")
            assert df["partition"]["city"] in ("Oslo", "Lima", "Pune", None)
            total_rows += df["record_count"]
    assert total_rows == 5
    header = json.loads(run_avrocat(avrocat, "--meta", manifest_path).stdout)
    assert header["meta"]["format-version"] == "2"
    assert json.loads(header["meta"]["partition-spec"])[0]["name"] == "city"


def test_pyiceberg_reads_manifests_we_rewrote(avrocat, tmp_path):
    """Each manifest and manifest list re-written by tl_avro_writer (same schema and
    metadata, new codec) still makes pyiceberg scan the same rows."""
    table = make_pyiceberg_table(tmp_path)
    before = table.scan().to_arrow().sort_by("id")
    metadata_dir = Path(table.metadata_location.removeprefix("file://")).parent
    for path in sorted(Path(p) for p in glob.glob(str(metadata_dir / "*.avro"))):
        header = json.loads(run_avrocat(avrocat, "--meta", path).stdout)
        schema_path = tmp_path / "schema.json"
        schema_path.write_text(header["meta"]["avro.schema"])
        rows_path = tmp_path / "rows.jsonl"
        rows_path.write_text(run_avrocat(avrocat, path).stdout)
        meta_args = []
        for key, value in header["meta"].items():
            if not key.startswith("avro."):
                meta_args += ["--meta", f"{key}={value}"]
        rewritten = tmp_path / "rewritten.avro"
        run_avrocat(avrocat, "--write", schema_path, rows_path, rewritten, "--codec", "zstandard", *meta_args)
        assert fastavro_records(rewritten) == fastavro_records(path)
        os.replace(rewritten, path)
    # A fresh process, so no manifest pyiceberg cached in this one is reused.
    script = (
        "import sys, json\n"
        "from pyiceberg.catalog.sql import SqlCatalog\n"
        f"c = SqlCatalog('t', uri='sqlite:///{tmp_path}/catalog.db', warehouse='file://{tmp_path}/wh')\n"
        "t = c.load_table('db.cities').scan().to_arrow().sort_by('id')\n"
        "print(json.dumps(t.to_pylist()))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == before.to_pylist()
    assert len(before) == 5
