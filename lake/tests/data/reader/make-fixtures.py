"""Regenerates the reader's unit-test fixtures with pyarrow (an independent writer).

Run from the repository root: .venv/bin/python lake/tests/data/reader/make-fixtures.py
The files are committed; the C tests only read them.
"""
import os

import pyarrow as pa
import pyarrow.parquet as pq

here = os.path.dirname(os.path.abspath(__file__))

# Ten row groups of 1,000 rows: id is 0..9999 in order, so each row group
# covers one thousand ids and statistics can prune all but the right one.
n = 10_000
ids = pa.array(range(n), pa.int64())
names = pa.array([f"name-{i:05d}" for i in range(n)], pa.string())
# `sparse` is null everywhere except in row group 3 (ids 3000..3999).
sparse = pa.array([i if 3000 <= i < 4000 else None for i in range(n)], pa.int32())
# `score` has a NaN in row group 0 only.
score = pa.array([float("nan") if i == 5 else i / 10 for i in range(n)], pa.float64())
table = pa.table({"id": ids, "name": names, "sparse": sparse, "score": score})
pq.write_table(table, os.path.join(here, "row_groups.parquet"), row_group_size=1000,
               compression="zstd", data_page_size=4096)

# Required columns only, many small pages, v2 data pages, and page CRCs.
small = pa.table({
    "k": pa.array(range(3000), pa.int32()),
    "v": pa.array([f"v{i % 7}" for i in range(3000)], pa.string()),
}, schema=pa.schema([pa.field("k", pa.int32(), nullable=False),
                     pa.field("v", pa.string(), nullable=False)]))
pq.write_table(small, os.path.join(here, "required_v2.parquet"), data_page_version="2.0",
               data_page_size=512, compression="snappy", write_page_checksum=True)

# An optional column in v2 data pages with page CRCs: its definition levels
# stay uncompressed before the snappy-compressed values, and the CRC covers
# both (test_page_crc.c flips bits in each part).
sparse_v2 = pa.table({
    "k": pa.array([None if i % 5 == 0 else i * 3 for i in range(2000)], pa.int64()),
})
pq.write_table(sparse_v2, os.path.join(here, "optional_v2_crc.parquet"), data_page_version="2.0",
               data_page_size=1024, compression="snappy", use_dictionary=False, write_page_checksum=True)
