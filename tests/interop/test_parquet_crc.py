"""Parquet page CRCs across implementations.

Our writer stamps every page with a CRC by default (pqgen without options
writes as the daemon does): pyarrow verifies them
(`page_checksum_verification=True`), DuckDB reads the files, and a bit
flipped inside a page of ours is refused by pyarrow as well as by us, so
both sides agree on which bytes a CRC covers. Files pyarrow writes with
`write_page_checksum=True` (v1 and v2 data pages, dictionary pages, every
codec) read in ours, and a bit flipped inside any of their pages makes
`tierdb parquet cat` fail with an error naming the file, the row group, the
column and the page.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_pages import column_chunk_pages

ROWS = 3000


def _expected(i):
    """Row i: a unique id, a string with few distinct values (a dictionary),
    a double with nulls."""
    return {"id": i * 7 - 1000, "s": f"event-{i % 13}", "x": None if i % 6 == 0 else i / 4}


def _our_file(pqgen, workdir, codec, extra=()):
    schema = [{"name": "id", "type": "int64", "required": True},
              {"name": "s", "type": "string"},
              {"name": "x", "type": "double"}]
    rows = [{k: (v if isinstance(v, str) or v is None else repr(v)) for k, v in _expected(i).items()}
            for i in range(ROWS)]
    rows = [{k: v for k, v in row.items() if v is not None} for row in rows]
    return pqgen.write(workdir, schema, rows, name=f"ours_{codec}.parquet",
                       options=["--codec", codec, "--page-rows", 500, "--row-group-rows", 2000, *extra])


def _flipped(path, at, bit=3):
    data = bytearray(path.read_bytes())
    data[at] ^= 1 << bit
    out = path.with_name("flipped_" + path.name)
    out.write_bytes(bytes(data))
    return out


def _crc_error(path, row_group, column, page, offset):
    return f'{path}: row group {row_group}, column "{column}", page {page} at byte {offset}: page CRC does not match'


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd"])
def test_our_files_carry_crcs_that_pyarrow_verifies_and_duckdb_reads(pqgen, tierdb, workdir, codec):
    path = _our_file(pqgen, workdir, codec)
    expected = [_expected(i) for i in range(ROWS)]
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 2
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            pages = column_chunk_pages(path, g, c)
            assert len(pages) >= 2
            assert all(p.crc is not None and p.crc_ok for p in pages), f"row group {g} column {c}: {pages}"
    assert any(p.type == "DICTIONARY_PAGE" for p in column_chunk_pages(path, 0, 1))

    assert pq.read_table(path, page_checksum_verification=True).to_pylist() == expected
    got = duckdb.sql(f"SELECT id, s, x FROM read_parquet('{path}') ORDER BY id").fetchall()
    assert got == [(r["id"], r["s"], r["x"]) for r in expected]
    assert len(tierdb.cat(path)) == ROWS


def test_a_flipped_bit_in_our_file_is_refused_by_pyarrow_and_by_us(pqgen, tierdb, workdir):
    path = _our_file(pqgen, workdir, "none", extra=["--no-dictionary"])
    # The second data page of `x` in row group 1: levels, then PLAIN doubles;
    # the flip lands in the low bits of a value near the page's end.
    page_number = 1
    page = column_chunk_pages(path, 1, 2)[page_number]
    assert page.type == "DATA_PAGE" and page.encoding == "PLAIN"
    bad = _flipped(path, page.body_offset + page.compressed_size - 3)

    with pytest.raises(OSError, match="CRC checksum verification failed"):
        pq.read_table(bad, page_checksum_verification=True)
    proc = tierdb.run("parquet", "cat", bad)
    assert proc.returncode == 1
    assert _crc_error(bad, 1, "x", page_number, page.offset) in proc.stderr.decode()
    # Without the CRC the flip is silent: pyarrow reads a different value.
    assert pq.read_table(bad).to_pylist() != [_expected(i) for i in range(ROWS)]


def _pyarrow_table():
    return pa.table({
        "id": pa.array(range(ROWS), pa.int64()),
        "word": pa.array([f"w{i % 11}" for i in range(ROWS)], pa.string()),
        "maybe": pa.array([None if i % 4 == 1 else i * 1.5 for i in range(ROWS)], pa.float64()),
    })


PYARROW_OPTIONS = {
    "v1_dictionary_snappy": dict(compression="snappy"),
    "v1_plain_none": dict(compression="none", use_dictionary=False),
    "v2_dictionary_zstd": dict(compression="zstd", data_page_version="2.0"),
    "v2_plain_snappy": dict(compression="snappy", data_page_version="2.0", use_dictionary=False),
}


@pytest.mark.parametrize("variant", sorted(PYARROW_OPTIONS))
def test_pyarrow_checksummed_files_read_in_ours_and_every_flipped_page_is_refused(tierdb, workdir, variant):
    path = workdir / f"pyarrow_{variant}.parquet"
    table = _pyarrow_table()
    pq.write_table(table, path, write_page_checksum=True, data_page_size=2048, write_batch_size=256, row_group_size=2000,
                   **PYARROW_OPTIONS[variant])
    rows = tierdb.cat(path)
    assert len(rows) == ROWS
    assert [dict(r)["id"] for r in rows] == [str(i) for i in range(ROWS)]

    meta = pq.ParquetFile(path).metadata
    checked = 0
    for g in range(meta.num_row_groups):
        for c, name in enumerate(table.column_names):
            for number, page in enumerate(column_chunk_pages(path, g, c)):
                assert page.crc is not None and page.crc_ok
                bad = _flipped(path, page.body_offset + page.compressed_size // 2, bit=number % 8)
                proc = tierdb.run("parquet", "cat", bad)
                assert proc.returncode == 1, f"{name} page {number} of row group {g}: the flip was not refused"
                assert _crc_error(bad, g, name, number, page.offset) in proc.stderr.decode()
                checked += 1
    assert checked >= 2 * 3 * 2
