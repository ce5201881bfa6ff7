"""Parquet page indexes and bloom filters across writers.

Our writer's page indexes must be ones pyarrow finds (has_column_index,
has_offset_index) next to data it reads back unchanged, and our bloom
filters ones DuckDB's parquet_bloom_probe finds values in. The other way
round, our reader must skip pages of files pyarrow writes with
write_page_index=True and still return every row in range, each at its
position with its values (build/tools/pqindex rows), and must answer bloom
probes on DuckDB's files as DuckDB does (pqindex probe).
"""

from __future__ import annotations

import random
import subprocess

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import _program

ROWS = 6000


def pqindex(*args) -> str:
    proc = subprocess.run([str(_program("tools/pqindex")), *map(str, args)], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"pqindex {' '.join(map(str, args))}: {proc.stderr.strip()}"
    return proc.stdout


def our_rows(n=ROWS, seed=7):
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        row = {"id": i, "k": rnd.randrange(100), "s": f"key-{rnd.randrange(1000):04d}"}
        if i % 9:
            row["x"] = i / 8 - 100
        rows.append(row)
    return rows


OUR_SCHEMA = [{"name": "id", "type": "int64", "required": True}, {"name": "k", "type": "int32"},
              {"name": "x", "type": "double"}, {"name": "s", "type": "string"}]


def test_pyarrow_finds_our_page_index_and_reads_every_row(pqgen, workdir):
    rows = our_rows()
    path = pqgen.write(workdir, OUR_SCHEMA, rows, options=["--page-rows", "100", "--row-group-rows", "2500"])
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 3
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(g).column(c)
            assert col.has_column_index and col.has_offset_index, (g, c)
    table = pq.read_table(path)
    assert table.column("id").to_pylist() == [r["id"] for r in rows]
    assert table.column("x").to_pylist() == [r.get("x") for r in rows]
    assert table.column("s").to_pylist() == [r["s"] for r in rows]
    # Our own reader finds the same pages: 25 per chunk, 10 in the last row group.
    for line in pqindex("pages", path).splitlines():
        assert f" pages {10 if line.startswith('rg 2 ') else 25} " in line, line


def test_page_index_can_be_left_out(pqgen, workdir):
    path = pqgen.write(workdir, OUR_SCHEMA, our_rows(500), options=["--no-page-index"])
    col = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert not col.has_column_index and not col.has_offset_index
    assert all(" pages 0 " in line for line in pqindex("pages", path).splitlines())


def test_duckdb_probes_our_bloom_filters(pqgen, workdir):
    rows = our_rows()
    path = pqgen.write(workdir, OUR_SCHEMA, rows,
                       options=["--row-group-rows", "2000", "--bloom", "id", "--bloom", "s", "--bloom", "k"])
    con = duckdb.connect()

    def excludes(column, value):
        got = con.execute("SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(?, ?, ?) "
                          "ORDER BY row_group_id", [str(path), column, value]).fetchall()
        assert len(got) == 3
        return [e for _, e in got]

    # Every present value probes as possibly there, in its own row group.
    for i in range(0, ROWS, 97):
        g = i // 2000
        assert excludes("id", i)[g] is False
        assert excludes("s", rows[i]["s"])[g] is False
        assert excludes("k", rows[i]["k"])[g] is False
    # Absent values are (nearly always) excluded everywhere.
    absent = [excludes("id", v) for v in range(10**9, 10**9 + 50)]
    assert sum(e.count(True) for e in absent) > 0.9 * 150
    assert sum(e.count(True) for e in [excludes("s", f"nope-{i}") for i in range(50)]) > 0.9 * 150
    # And our probe says the same as DuckDB's for each.
    for column, value in [("id", 17), ("id", 10**9), ("s", rows[3000]["s"]), ("s", "nope-1"), ("k", 12), ("k", 5000)]:
        ours = [line.split()[-1] == "true" for line in pqindex("probe", path, column, value).splitlines()]
        assert ours == excludes(column, value), (column, value)


def pyarrow_table(n=ROWS, seed=11):
    rnd = random.Random(seed)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "k": pa.array([None if i % 13 == 0 else rnd.randrange(1000) for i in range(n)], pa.int32()),
        "x": pa.array([float("nan") if i % 50 == 0 else i * 0.25 for i in range(n)], pa.float64()),
        "s": pa.array([f"value-{i // 10:05d}" for i in range(n)], pa.string()),
    })


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("lo,hi", [(4321, 4321), (100, 350), (-5, 3), (5990, 7000), (2500, 2499)])
def test_our_reader_skips_pages_of_pyarrow_files(workdir, version, lo, hi):
    table = pyarrow_table()
    path = workdir / "pyarrow.parquet"
    pq.write_table(table, path, write_page_index=True, data_page_size=256, write_batch_size=64, row_group_size=2500,
                   data_page_version=version)
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).has_column_index
    pages = {tuple(line.split()[1:4:2]): int(line.split()[5]) for line in pqindex("pages", path).splitlines()}
    assert pages[("0", "id")] > 5 and all(n > 0 for n in pages.values()), pages

    out = pqindex("rows", path, "id", lo, hi).splitlines()
    *lines, counts = out
    _, _, read, _, skipped = counts.split()
    got = {}
    for line in lines:
        pos, *values = line.split("\t")
        got[int(pos)] = values
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    want = [i for i in range(ROWS) if lo <= i <= hi]
    assert all(i in got for i in want), "a row in range was not read"
    for pos, values in got.items():
        assert values[0] == str(columns["id"][pos])
        assert values[1] == ("NULL" if columns["k"][pos] is None else str(columns["k"][pos]))
        x = columns["x"][pos]
        assert values[2] == ("nan" if x != x else repr(x) if "e" in repr(x) else f"{x:.17g}"), (pos, values)
        assert values[3] == columns["s"][pos]
    # Only the pages that may hold the range were read (none for an empty range: no chunk is even opened).
    if want:
        assert int(skipped) > 0 and int(read) > 0
    else:
        assert not got and int(read) == 0
    assert len(got) < ROWS / 2


def test_our_probe_agrees_with_duckdb_on_its_bloom_filters(workdir):
    path = workdir / "duckdb.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT (i % 700)::BIGINT AS m, (i % 300)::INTEGER AS k, 'key-' || (i % 500) AS s, "
                f"(i % 250) / 4.0 AS d FROM range(10000) t(i)) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 2500)")
    found = 0
    probes = [("m", v) for v in (0, 5, 699, 700, 5000, -1)] + [("k", v) for v in (1, 299, 300, 12345)] + \
             [("s", v) for v in ("key-0", "key-499", "key-500", "nope")] + [("d", v) for v in (1.25, 62.25, 0.3, 1e9)]
    for column, value in probes:
        theirs = [e for _, e in con.execute("SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(?, ?, ?) "
                                            "ORDER BY row_group_id", [str(path), column, value]).fetchall()]
        lines = pqindex("probe", path, column, value).splitlines()
        found += sum(not line.endswith(" none") for line in lines)
        # A row group without a filter excludes nothing, as DuckDB answers too.
        ours = [line.endswith(" excludes true") for line in lines]
        assert ours == theirs, (column, value, lines, theirs)
    assert found > 0, "DuckDB wrote no bloom filter to compare with"
