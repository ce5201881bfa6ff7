"""Writes the Avro fixtures the C tests read (run from the repo root with
.venv/bin/python lake/tests/data/avro/generate.py).

- fastavro_<codec>.avro: the records of SAMPLE_SCHEMA below, written by
  fastavro with each codec and small blocks (test_avro_file.c checks them).
- iceberg_manifest.avro, iceberg_manifest_list.avro: what pyiceberg writes
  for a table (SqlCatalog on sqlite) after one append of three rows.

All of them also seed the fuzz_avro corpus (lake/tests/corpus/fuzz_avro),
together with uncompressed copies of the Iceberg files, which let the fuzzer
mutate records rather than compressed bytes.
"""

from __future__ import annotations

import glob
import json
import shutil
import sys
import tempfile
from pathlib import Path

import fastavro
import pyarrow as pa

HERE = Path(__file__).resolve().parent

SAMPLE_SCHEMA = {
    "type": "record",
    "name": "sample",
    "fields": [
        {"name": "id", "type": "long", "field-id": 1},
        {"name": "name", "type": ["null", "string"], "field-id": 2},
        {"name": "score", "type": "double", "field-id": 3},
        {"name": "tags", "type": {"type": "array", "items": "string", "element-id": 5}, "field-id": 4},
        {"name": "counts", "type": {"type": "map", "values": "int", "key-id": 7, "value-id": 8}, "field-id": 6},
        {"name": "digest", "type": {"type": "fixed", "name": "md5", "size": 4}, "field-id": 9},
        {"name": "color", "type": {"type": "enum", "name": "color", "symbols": ["RED", "GREEN"]}, "field-id": 10},
        {"name": "flag", "type": "boolean", "field-id": 11},
        {"name": "ratio", "type": "float", "field-id": 12},
        {"name": "blob", "type": "bytes", "field-id": 13},
        {"name": "small", "type": "int", "field-id": 14},
    ],
}


def sample_records(n: int = 50):
    for i in range(n):
        yield {
            "id": i * 1000003 - 7,
            "name": None if i % 3 == 0 else f"name-{i}",
            "score": i / 4.0,
            "tags": [f"t{j}" for j in range(i % 4)],
            "counts": {f"k{j}": j * i for j in range(i % 3)},
            "digest": bytes([i, i + 1, i + 2, i + 3]),
            "color": "RED" if i % 2 == 0 else "GREEN",
            "flag": i % 5 == 0,
            "ratio": 0.5 * i,
            "blob": bytes(range(i % 7)),
            "small": -i,
        }


def write_fastavro_files() -> None:
    schema = fastavro.parse_schema(SAMPLE_SCHEMA)
    for codec in ("null", "deflate", "snappy", "zstandard"):
        with open(HERE / f"fastavro_{codec}.avro", "wb") as f:
            fastavro.writer(f, schema, sample_records(), codec=codec, sync_interval=400,
                            metadata={"tierdb.test": "yes"})


def write_iceberg_files() -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    with tempfile.TemporaryDirectory() as tmp:
        catalog = SqlCatalog("t", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}")
        catalog.create_namespace("db")
        data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["Oslo", "Lima", None]})
        table = catalog.create_table("db.cities", schema=data.schema)
        table.append(data)
        meta = Path(table.metadata_location.removeprefix("file://")).parent
        lists = glob.glob(str(meta / "snap-*.avro"))
        manifests = [p for p in glob.glob(str(meta / "*.avro")) if p not in lists]
        assert len(lists) == 1 and len(manifests) == 1, (lists, manifests)
        shutil.copy(lists[0], HERE / "iceberg_manifest_list.avro")
        shutil.copy(manifests[0], HERE / "iceberg_manifest.avro")


def write_fuzz_seeds() -> None:
    from fastavro import _read

    corpus = HERE.parents[1] / "corpus" / "fuzz_avro"
    corpus.mkdir(exist_ok=True)
    for path in HERE.glob("*.avro"):
        shutil.copy(path, corpus / path.name)
    _read.LOGICAL_READERS.clear()  # keep the stored values, not Python conversions
    for name in ("iceberg_manifest", "iceberg_manifest_list"):
        with open(HERE / f"{name}.avro", "rb") as f:
            reader = fastavro.reader(f)
            meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
            schema = json.loads(reader.metadata["avro.schema"])
            records = list(reader)
        with open(corpus / f"{name}_uncompressed.avro", "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(schema), records, codec="null", metadata=meta)


if __name__ == "__main__":
    write_fastavro_files()
    if "--no-iceberg" not in sys.argv:
        write_iceberg_files()
    write_fuzz_seeds()
