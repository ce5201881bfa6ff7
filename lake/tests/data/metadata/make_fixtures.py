#!/usr/bin/env python3
"""
make_fixtures.py: regenerates the Parquet fixtures test_metadata.c decodes.

Run from the repository root with the project's virtualenv:
    .venv/bin/python lake/tests/data/metadata/make_fixtures.py
The outputs are committed, so the C tests need no Python. What they hold:
  pyarrow_footer.bin     the FileMetaData (Thrift compact) of a pyarrow file:
                         10 columns of many types, each with PARQUET:field_id,
                         5 rows in two row groups (3 + 2), two key-value pairs.
  pyarrow_chunk_v1.bin   column "name" of that file's first row group: a
                         dictionary page then a v1 data page, headers included.
  pyarrow_chunk_v2.bin   the same column written with data page v2, ZSTD and
                         page checksums: a dictionary page and a v2 data page.
The expected values in test_metadata.c follow the table built below.
"""
import datetime
import decimal
import os
import struct
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def field(name, typ, field_id, nullable=True):
    return pa.field(name, typ, nullable=nullable,
                    metadata={b"PARQUET:field_id": str(field_id).encode()})


def table():
    utc = datetime.timezone.utc
    schema = pa.schema([
        field("id", pa.int64(), 1, nullable=False),
        field("name", pa.string(), 2),
        field("ts", pa.timestamp("us", tz="UTC"), 3),
        field("ts_local", pa.timestamp("us"), 4),
        field("amount", pa.decimal128(10, 2), 5),
        field("day", pa.date32(), 6),
        field("t", pa.time64("us"), 7),
        field("small", pa.int8(), 8),
        field("flag", pa.bool_(), 9),
        field("u", pa.uuid(), 10),
    ])
    ts = [datetime.datetime(2024, 1, 2, 3, 4, 5, 6 + i) for i in range(5)]
    return pa.table({
        "id": [10, 20, 30, 40, 50],
        "name": ["alpha", None, "gamma", "alpha", "epsilon"],
        "ts": [t.replace(tzinfo=utc) for t in ts],
        "ts_local": ts,
        "amount": [decimal.Decimal("1.25"), decimal.Decimal("-3.50"), None,
                   decimal.Decimal("99999999.99"), decimal.Decimal("0.01")],
        "day": [datetime.date(2024, 2, 29)] * 5,
        "t": [datetime.time(12, 0, i) for i in range(5)],
        "small": [-128, 0, 1, 127, None],
        "flag": [True, False, None, True, True],
        "u": [bytes(range(i, i + 16)) for i in range(5)],
    }, schema=schema)


def footer(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[-4:] == b"PAR1"
    (length,) = struct.unpack("<I", data[-8:-4])
    return data[-8 - length:-8]


def chunk(path, column):
    md = pq.ParquetFile(path).metadata
    col = md.row_group(0).column(column)
    start = col.dictionary_page_offset or col.data_page_offset
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(col.total_compressed_size)


def save(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        v1 = os.path.join(tmp, "v1.parquet")
        with pq.ParquetWriter(v1, table().schema, store_schema=False,
                              compression="snappy") as writer:
            writer.write_table(table(), row_group_size=3)
            writer.add_key_value_metadata({"tierdb.fixture": "footer",
                                           "tierdb.empty": ""})
        save("pyarrow_footer.bin", footer(v1))
        save("pyarrow_chunk_v1.bin", chunk(v1, 1))

        v2 = os.path.join(tmp, "v2.parquet")
        pq.write_table(table(), v2, row_group_size=3, store_schema=False,
                       compression="zstd", data_page_version="2.0",
                       write_page_checksum=True)
        save("pyarrow_chunk_v2.bin", chunk(v2, 1))


if __name__ == "__main__":
    main()
