"""Files written by our writer (build/tools/pqgen), read by pyarrow and DuckDB.

Every type, null pattern, codec and dictionary/plain path: the values pyarrow
and DuckDB read must equal the rows we wrote, the Parquet and Arrow types
must be the ones the schema asked for (field ids included), the column
statistics must be the exact min/max/null count of each row group, and the
writer options (page and row-group limits, dictionary budget, CRCs,
key-value metadata) must visibly take effect. Our own reader must read the
files back too.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_pages import column_chunk_pages
from parquet_values import (
    Kind,
    compare_rendered,
    compare_rows,
    expected_min_max,
    kinds_of_file,
    parse_rendered,
    raw_from_stat,
    render,
    render_table,
)
from sample_data import NULL_PATTERNS, Gen, null_mask, values


@dataclass(frozen=True)
class WType:
    pqgen: str  # the type in pqgen's schema
    gen: Gen
    kind: Kind  # how it renders
    arrow: object  # the Arrow type pyarrow should read
    physical: str
    logical: dict | None  # expected LogicalType (subset of its JSON), None = no logical type
    length: int = -1  # FIXED_LEN_BYTE_ARRAY width


def _int(bits, signed):
    phys = "INT64" if bits == 64 else "INT32"
    arrow = getattr(pa, f"{'' if signed else 'u'}int{bits}")()
    return WType(f"{'' if signed else 'u'}int{bits}", Gen("int", bits=bits, signed=signed),
                 Kind("int", signed=signed, bits=bits, physical=phys), arrow, phys,
                 {"Type": "Int", "bitWidth": bits, "isSigned": signed})


def _decimal(p, s, fixed=False):
    if fixed or p > 18:
        phys = "FIXED_LEN_BYTE_ARRAY"
        length = next(n for n in range(1, 17) if 10**p - 1 < 2 ** (8 * n - 1))  # minimal width
    else:
        phys, length = ("INT32" if p <= 9 else "INT64"), -1
    name = f"decimal({p},{s}{',fixed' if fixed else ''})"
    return WType(name, Gen("decimal", precision=p), Kind("decimal", scale=s, precision=p, physical=phys),
                 pa.decimal128(p, s), phys, {"Type": "Decimal", "precision": p, "scale": s}, length)


def _ts(pqgen, unit, utc):
    return WType(pqgen, Gen("timestamp", unit=unit), Kind("timestamp", unit=unit, utc=utc, physical="INT64"),
                 pa.timestamp(unit, tz="UTC" if utc else None), "INT64",
                 {"Type": "Timestamp", "isAdjustedToUTC": utc,
                  "timeUnit": {"ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}[unit]})


WTYPES = {
    "boolean": WType("boolean", Gen("bool"), Kind("bool"), pa.bool_(), "BOOLEAN", None),
    **{f"{'' if s else 'u'}int{b}": _int(b, s) for s in (True, False) for b in (8, 16, 32, 64)},
    "float": WType("float", Gen("float32"), Kind("float32"), pa.float32(), "FLOAT", None),
    "double": WType("double", Gen("float64"), Kind("float64"), pa.float64(), "DOUBLE", None),
    "string": WType("string", Gen("string"), Kind("string"), pa.string(), "BYTE_ARRAY", {"Type": "String"}),
    "json": WType("json", Gen("json"), Kind("json"), pa.json_(), "BYTE_ARRAY", {"Type": "JSON"}),
    "enum": WType("enum", Gen("string", distinct=6), Kind("string"), pa.binary(), "BYTE_ARRAY", {"Type": "Enum"}),
    "binary": WType("binary", Gen("binary"), Kind("binary"), pa.binary(), "BYTE_ARRAY", None),
    "fixed1": WType("fixed[1]", Gen("fixed", width=1), Kind("binary"), pa.binary(1), "FIXED_LEN_BYTE_ARRAY", None, 1),
    "fixed7": WType("fixed[7]", Gen("fixed", width=7), Kind("binary"), pa.binary(7), "FIXED_LEN_BYTE_ARRAY", None, 7),
    "date": WType("date", Gen("date"), Kind("date"), pa.date32(), "INT32", {"Type": "Date"}),
    "timestamp": _ts("timestamp", "us", False),
    "timestamptz": _ts("timestamptz", "us", True),
    "timestamp_ms": _ts("timestamp_ms", "ms", False),
    "timestamp_ns": _ts("timestamp_ns", "ns", False),
    "time": WType("time", Gen("time", unit="us"), Kind("time", unit="us"), pa.time64("us"), "INT64",
                  {"Type": "Time", "isAdjustedToUTC": False, "timeUnit": "microseconds"}),
    "time_ms": WType("time_ms", Gen("time", unit="ms"), Kind("time", unit="ms"), pa.time32("ms"), "INT32",
                     {"Type": "Time", "isAdjustedToUTC": False, "timeUnit": "milliseconds"}),
    "dec_1_0": _decimal(1, 0),
    "dec_4_4": _decimal(4, 4),
    "dec_9_2": _decimal(9, 2),
    "dec_10_0": _decimal(10, 0),
    "dec_18_4": _decimal(18, 4),
    "dec_19_19": _decimal(19, 19),
    "dec_20_0": _decimal(20, 0),
    "dec_38_10": _decimal(38, 10),
    "dec_9_2_fixed": _decimal(9, 2, fixed=True),
    "dec_18_18_fixed": _decimal(18, 18, fixed=True),
    "uuid": WType("uuid", Gen("uuid"), Kind("uuid"), pa.uuid(), "FIXED_LEN_BYTE_ARRAY", {"Type": "UUID"}, 16),
}
# Types that may carry a plain INT32/INT64 with no logical type as well.
_PLAIN_INT_OK = {"int32", "int64"}

CODECS = {"none": "UNCOMPRESSED", "snappy": "SNAPPY", "gzip": "GZIP", "zstd": "ZSTD", "lz4_raw": "LZ4_RAW"}


# ------------------------------------------------------------------ helpers


def make_schema(names, required=(), field_ids=True):
    schema = []
    for i, name in enumerate(names):
        col = {"name": name, "type": WTYPES[name].pqgen}
        if name in required:
            col["required"] = True
        if field_ids:
            col["field_id"] = 100 + i
        schema.append(col)
    return schema


def make_rows(names, n, pattern="random10", required=(), seed=0, distinct=0, explicit_nulls=False):
    """Rows as dicts of rendered values; a null is a missing key (or an
    explicit JSON null when explicit_nulls)."""
    cols = {}
    for name in names:
        wt = WTYPES[name]
        gen = dataclasses.replace(wt.gen, distinct=distinct) if distinct else wt.gen
        raws = values(gen, n, seed=(name, seed))
        mask = null_mask("none" if name in required else pattern, n, seed=(name, seed))
        cols[name] = [None if m else render(wt.kind, v) for v, m in zip(raws, mask)]
    rows = []
    for i in range(n):
        row = {}
        for name in names:
            v = cols[name][i]
            if v is not None or explicit_nulls:
                row[name] = v
        rows.append(row)
    return rows


def expected_rendered(names, rows):
    return [[(name, row.get(name)) for name in names] for row in rows]


def check_types(path, schema, wtypes=None):
    """Parquet physical/logical types, Arrow types and field ids as pyarrow
    sees them. wtypes maps column name -> WType (default: WTYPES by name)."""
    pfile = pq.ParquetFile(path)
    pschema = pfile.schema
    assert [pschema.column(i).name for i in range(len(pschema))] == [c["name"] for c in schema]
    arrow_schema = pq.read_schema(path)
    for i, col in enumerate(schema):
        wt = (wtypes or WTYPES)[col["name"]]
        pc = pschema.column(i)
        where = f"column {col['name']} ({col['type']})"
        assert pc.physical_type == wt.physical, where
        logical = json.loads(pc.logical_type.to_json())
        if wt.logical is None:
            assert logical.get("Type") == "None", f"{where}: unexpected logical type {logical}"
        elif not (col["name"] in _PLAIN_INT_OK and logical.get("Type") == "None"):
            assert {k: logical.get(k) for k in wt.logical} == wt.logical, f"{where}: logical type {logical}"
        if wt.physical == "FIXED_LEN_BYTE_ARRAY":
            assert pc.length == wt.length, f"{where}: width {pc.length}, expected {wt.length}"
        expect_max_def = 0 if col.get("required") else 1
        assert pc.max_definition_level == expect_max_def, f"{where}: max definition level"
        assert pc.max_repetition_level == 0, where
        field = arrow_schema.field(col["name"])
        assert field.type == wt.arrow, f"{where}: pyarrow reads {field.type}, expected {wt.arrow}"
        assert field.nullable == (not col.get("required")), where
        if "field_id" in col:
            assert (field.metadata or {}).get(b"PARQUET:field_id") == str(col["field_id"]).encode(), \
                f"{where}: field metadata {field.metadata}"


def check_pyarrow_values(path, names, rows):
    table = pq.read_table(path)
    assert table.num_rows == len(rows)
    compare_rendered(kinds_of_file(path), expected_rendered(names, rows), render_table(table, kinds_of_file(path)),
                     context=f"pyarrow reading {path.name}")


def duckdb_table(path):
    con = duckdb.connect()
    try:
        result = con.execute("select * from read_parquet(?)", [str(path)])
        return result.to_arrow_table() if hasattr(result, "to_arrow_table") else result.fetch_arrow_table()
    finally:
        con.close()


def check_duckdb_values(path, names, rows):
    table = duckdb_table(path)
    assert table.column_names == names
    compare_rendered(kinds_of_file(path), expected_rendered(names, rows), render_table(table, kinds_of_file(path)),
                     context=f"DuckDB reading {path.name}")


def check_statistics(path, names, rows):
    """Every column chunk's statistics: exact null count, and min/max equal to
    the chunk's own min/max (NaN excluded) in the type's sort order."""
    meta = pq.ParquetFile(path).metadata
    kinds = kinds_of_file(path)
    start = 0
    problems = []
    for rg in range(meta.num_row_groups):
        rg_meta = meta.row_group(rg)
        chunk_rows = rows[start:start + rg_meta.num_rows]
        start += rg_meta.num_rows
        for j, name in enumerate(names):
            kind = kinds[name]
            raws = [parse_rendered(kind, row.get(name)) for row in chunk_rows]
            stats = rg_meta.column(j).statistics
            where = f"row group {rg} column {name}"
            if stats is None:
                problems.append(f"{where}: no statistics")
                continue
            nulls = sum(v is None for v in raws)
            if not stats.has_null_count or stats.null_count != nulls:
                problems.append(f"{where}: null_count {stats.null_count if stats.has_null_count else 'absent'}, "
                                f"expected {nulls}")
            want = expected_min_max(kind, raws)
            if want is None:
                if stats.has_min_max:
                    problems.append(f"{where}: min/max {stats.min_raw!r}/{stats.max_raw!r} present for a chunk "
                                    f"with no non-null, non-NaN values")
                continue
            if not stats.has_min_max:
                problems.append(f"{where}: no min/max, expected {want}")
                continue
            got = (raw_from_stat(kind, stats.min_raw), raw_from_stat(kind, stats.max_raw))
            if got != want:
                problems.append(f"{where}: min/max {render(kind, got[0])!r}/{render(kind, got[1])!r}, expected "
                                f"{render(kind, want[0])!r}/{render(kind, want[1])!r}")
    assert start == len(rows), f"row groups hold {start} rows, wrote {len(rows)}"
    assert not problems, "; ".join(problems[:10])


def check_cat(tierdb, path, names, rows):
    compare_rows(kinds_of_file(path), expected_rendered(names, rows), tierdb.cat(path),
                 context=f"tierdb reading {path.name}")


def check_all(tierdb, path, schema, rows, stats=True, wtypes=None):
    names = [c["name"] for c in schema]
    check_types(path, schema, wtypes)
    check_pyarrow_values(path, names, rows)
    check_duckdb_values(path, names, rows)
    if stats:
        check_statistics(path, names, rows)
    check_cat(tierdb, path, names, rows)
    tierdb.check_schema(path)


ALL = list(WTYPES)


# -------------------------------------------------------------------- tests


@pytest.mark.parametrize("pattern", NULL_PATTERNS)
@pytest.mark.parametrize("name", ALL)
def test_type_and_nulls(pqgen, tierdb, workdir, name, pattern):
    schema = make_schema([name])
    rows = make_rows([name], 1000, pattern)
    path = pqgen.write(workdir, schema, rows)
    check_all(tierdb, path, schema, rows)


@pytest.mark.parametrize("name", ALL)
def test_required_column(pqgen, tierdb, workdir, name):
    schema = make_schema([name], required={name})
    rows = make_rows([name], 500, required={name}, distinct=0)
    path = pqgen.write(workdir, schema, rows)
    check_all(tierdb, path, schema, rows)


# One column of each physical type (and the wider decimals), for the big files.
SUBSET = ["boolean", "int32", "uint64", "float", "double", "string", "binary", "fixed7", "date", "timestamptz",
          "time_ms", "dec_9_2", "dec_18_4", "dec_38_10", "uuid", "int64"]


@pytest.mark.parametrize("n", [0, 1, 20000])
def test_all_types_row_counts(pqgen, tierdb, workdir, n):
    required = {"int64", "string", "timestamptz"}
    names = ALL if n < 20000 else SUBSET
    schema = make_schema(names, required=required)
    rows = make_rows(names, n, required=required)
    path = pqgen.write(workdir, schema, rows)
    check_all(tierdb, path, schema, rows)
    assert pq.ParquetFile(path).metadata.num_rows == n


def test_explicit_nulls_and_missing_keys(pqgen, tierdb, workdir):
    schema = make_schema(ALL)
    rows = make_rows(ALL, 300, "alternating", explicit_nulls=True)
    for i in range(0, 300, 3):  # some rows leave the null columns out instead
        rows[i] = {k: v for k, v in rows[i].items() if v is not None}
    path = pqgen.write(workdir, schema, rows)
    check_all(tierdb, path, schema, [{k: v for k, v in r.items() if v is not None} for r in rows])


@pytest.mark.parametrize("dictionary", [True, False], ids=["dict", "plain"])
@pytest.mark.parametrize("codec", list(CODECS))
def test_codecs(pqgen, tierdb, workdir, codec, dictionary):
    schema = make_schema(ALL, required={"int32"})
    rows = make_rows(ALL, 1000, required={"int32"}, distinct=0 if not dictionary else 25)
    options = ["--codec", codec] + ([] if dictionary else ["--no-dictionary"])
    path = pqgen.write(workdir, schema, rows, options=options)
    check_all(tierdb, path, schema, rows)
    meta = pq.ParquetFile(path).metadata
    con = duckdb.connect()
    codecs = {r[0] for r in con.execute("select compression from parquet_metadata(?)", [str(path)]).fetchall()}
    con.close()
    assert codecs == {CODECS[codec]}
    for j, name in enumerate(ALL):
        chunk = meta.row_group(0).column(j)
        pages = column_chunk_pages(path, 0, j)
        has_dict_page = any(p.type == "DICTIONARY_PAGE" for p in pages)
        if dictionary and name != "boolean":
            # 25 distinct values fit any dictionary budget: every data page is dictionary-encoded.
            assert has_dict_page, f"{name}: no dictionary page ({chunk.encodings})"
            assert all(p.encoding in ("RLE_DICTIONARY", "PLAIN_DICTIONARY") for p in pages if p.type != "DICTIONARY_PAGE"), \
                f"{name}: {[p.encoding for p in pages]}"
        if not dictionary:
            assert not has_dict_page, f"{name}: dictionary page with --no-dictionary"
            assert "RLE_DICTIONARY" not in chunk.encodings and "PLAIN_DICTIONARY" not in chunk.encodings, name


@pytest.mark.parametrize("codec,level", [("zstd", 1), ("zstd", 19), ("gzip", 1), ("gzip", 9)])
def test_compression_levels(pqgen, tierdb, workdir, codec, level):
    names = ["string", "int64", "double"]
    schema = make_schema(names)
    rows = make_rows(names, 5000)
    path = pqgen.write(workdir, schema, rows, options=["--codec", codec, "--level", level])
    check_all(tierdb, path, schema, rows)


FALLBACK_TYPES = ["string", "binary", "int64", "int32", "double", "float", "fixed7", "dec_38_10", "uuid", "timestamp"]


@pytest.mark.parametrize("name", FALLBACK_TYPES)
def test_dictionary_fallback_mid_chunk(pqgen, tierdb, workdir, name):
    """A small dictionary budget: the first rows repeat few values (dictionary
    pages), then distinct values outgrow the budget and the rest of the same
    column chunk is written PLAIN."""
    n_low, n_high = 2000, 4000
    low = make_rows([name], n_low, distinct=8, seed=1)
    high = make_rows([name], n_high, seed=2)
    rows = low + high
    schema = make_schema([name])
    path = pqgen.write(workdir, schema, rows, options=["--dictionary-bytes", 1024, "--page-rows", 500])
    check_all(tierdb, path, schema, rows)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1
    pages = column_chunk_pages(path, 0, 0)
    kinds = [p.type if p.type == "DICTIONARY_PAGE" else p.encoding for p in pages]
    assert kinds[0] == "DICTIONARY_PAGE", kinds
    dict_pages = [i for i, k in enumerate(kinds) if k in ("RLE_DICTIONARY", "PLAIN_DICTIONARY")]
    plain_pages = [i for i, k in enumerate(kinds) if k == "PLAIN"]
    assert dict_pages and plain_pages, f"expected dictionary-encoded then PLAIN data pages: {kinds}"
    assert max(dict_pages) < min(plain_pages), f"PLAIN pages must follow the dictionary ones: {kinds}"
    assert kinds.count("DICTIONARY_PAGE") == 1, kinds
    assert sum(p.num_values for p in pages if p.type != "DICTIONARY_PAGE") == n_low + n_high


@pytest.mark.parametrize("name", ["string", "int32", "double", "boolean", "dec_38_10", "uuid"])
def test_page_rows_limit(pqgen, tierdb, workdir, name):
    rows = make_rows([name], 1003)
    schema = make_schema([name])
    path = pqgen.write(workdir, schema, rows, options=["--page-rows", 10])
    check_all(tierdb, path, schema, rows)
    data_pages = [p for p in column_chunk_pages(path, 0, 0) if p.type != "DICTIONARY_PAGE"]
    assert all(p.num_values <= 10 for p in data_pages), [p.num_values for p in data_pages]
    assert len(data_pages) == 101, len(data_pages)


@pytest.mark.parametrize("dictionary", [True, False], ids=["dict", "plain"])
def test_tiny_pages(pqgen, tierdb, workdir, dictionary):
    schema = make_schema(ALL)
    rows = make_rows(ALL, 2000)
    options = ["--page-bytes", 64] + ([] if dictionary else ["--no-dictionary"])
    path = pqgen.write(workdir, schema, rows, options=options)
    check_all(tierdb, path, schema, rows)
    for j, name in enumerate(ALL):
        data_pages = [p for p in column_chunk_pages(path, 0, j) if p.type != "DICTIONARY_PAGE"]
        # Even a bit-packed boolean page of 2000 rows is over 64 bytes.
        assert len(data_pages) >= 4, f"{name}: {len(data_pages)} data pages with --page-bytes 64"


def test_many_row_groups_by_rows(pqgen, tierdb, workdir):
    schema = make_schema(ALL)
    rows = make_rows(ALL, 5000)
    path = pqgen.write(workdir, schema, rows, options=["--row-group-rows", 250])
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 20
    assert [meta.row_group(i).num_rows for i in range(20)] == [250] * 20
    check_all(tierdb, path, schema, rows)


def test_many_row_groups_by_bytes(pqgen, tierdb, workdir):
    names = ["int64", "string", "double", "uuid"]
    schema = make_schema(names)
    rows = make_rows(names, 10000)
    path = pqgen.write(workdir, schema, rows, options=["--row-group-bytes", 16384, "--no-dictionary"])
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups >= 5, meta.num_row_groups
    assert all(meta.row_group(i).num_rows > 0 for i in range(meta.num_row_groups))
    check_all(tierdb, path, schema, rows)


@pytest.mark.parametrize("batch_rows", [1, 7, 1000, 100000])
def test_batch_sizes(pqgen, tierdb, workdir, batch_rows):
    schema = make_schema(ALL)
    rows = make_rows(ALL, 1200)
    path = pqgen.write(workdir, schema, rows, options=["--batch-rows", batch_rows, "--row-group-rows", 499,
                                                     "--page-rows", 100])
    check_all(tierdb, path, schema, rows)


@pytest.mark.parametrize("codec", ["none", "zstd"])
@pytest.mark.parametrize("dictionary", [True, False], ids=["dict", "plain"])
def test_page_crc(pqgen, tierdb, workdir, codec, dictionary):
    schema = make_schema(ALL)
    rows = make_rows(ALL, 1500, distinct=20 if dictionary else 0)
    options = ["--codec", codec, "--page-rows", 400] + ([] if dictionary else ["--no-dictionary"])
    path = pqgen.write(workdir, schema, rows, options=options)
    check_all(tierdb, path, schema, rows)
    for j, name in enumerate(ALL):
        pages = column_chunk_pages(path, 0, j)
        assert pages and all(p.crc is not None for p in pages), f"{name}: a page without a CRC"
        assert all(p.crc_ok for p in pages), f"{name}: a page whose CRC does not match its bytes"
    # pyarrow verifies every CRC when asked to.
    pq.read_table(path, page_checksum_verification=True)


def test_crc_unless_turned_off(pqgen, workdir):
    schema = make_schema(["int64"])
    rows = make_rows(["int64"], 100)
    path = pqgen.write(workdir, schema, rows, name="default.parquet")
    assert all(p.crc is not None and p.crc_ok for p in column_chunk_pages(path, 0, 0))
    path = pqgen.write(workdir, schema, rows, name="off.parquet", options=["--no-crc"])
    assert all(p.crc is None for p in column_chunk_pages(path, 0, 0))


def test_key_value_metadata(pqgen, tierdb, workdir):
    names = ["int32", "string"]
    schema = make_schema(names)
    rows = make_rows(names, 10)
    kv = {"iceberg.schema": '{"type":"struct","fields":[]}', "with space": "a=b=c", "empty": "",
          "unicode": "ünïcødé ✓"}
    options = []
    for k, v in kv.items():
        options += ["--kv", f"{k}={v}"]
    path = pqgen.write(workdir, schema, rows, options=options)
    meta = pq.ParquetFile(path).metadata
    stored = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
    assert stored == kv
    assert meta.created_by.startswith("tierdb"), meta.created_by
    check_all(tierdb, path, schema, rows)


def test_field_ids_absent_and_present(pqgen, workdir):
    schema = [{"name": "a", "type": "int32", "field_id": 1}, {"name": "b", "type": "string", "field_id": 2147483647},
              {"name": "c", "type": "double", "field_id": 0}]
    path = pqgen.write(workdir, schema, [{"a": 1, "b": "x", "c": 1.5}])
    arrow_schema = pq.read_schema(path)
    assert [arrow_schema.field(n).metadata.get(b"PARQUET:field_id") for n in "abc"] == [b"1", b"2147483647", b"0"]
    pschema = pq.ParquetFile(path).schema
    assert "field_id=2147483647 b" in str(pschema)


def test_required_column_rejects_null(pqgen, workdir):
    schema = [{"name": "a", "type": "int32", "required": True}]
    with pytest.raises(AssertionError) as exc:
        pqgen.write(workdir, schema, [{"a": 1}, {"a": None}])
    assert "a" in str(exc.value)
    with pytest.raises(AssertionError):
        pqgen.write(workdir, schema, [{"a": 1}, {}])


def test_statistics_sort_orders(pqgen, tierdb, workdir):
    """Values whose min/max differ between signed, unsigned, byte-wise and
    numeric orders, one row group each, so a wrong comparator shows."""
    names = ["uint32", "uint64", "uint8", "int8", "string", "binary", "dec_38_10", "dec_9_2_fixed", "uuid",
             "float", "double", "timestamp", "date"]
    rows = [
        {"uint32": 1, "uint64": 1, "uint8": 1, "int8": -1, "string": "Z", "binary": "/w==", "dec_38_10": "-1.0000000000",
         "dec_9_2_fixed": "-0.01", "uuid": "ff000000-0000-0000-0000-000000000000", "float": -0.0, "double": "NaN",
         "timestamp": "1969-12-31T23:59:59.999999", "date": "1969-12-31"},
        {"uint32": 4294967295, "uint64": 18446744073709551615, "uint8": 255, "int8": 127, "string": "é",
         "binary": "AA==", "dec_38_10": "1.0000000000", "dec_9_2_fixed": "0.01",
         "uuid": "00000000-0000-0000-0000-0000000000ff", "float": 0.0, "double": -1e300,
         "timestamp": "1970-01-01T00:00:00.000000", "date": "1970-01-01"},
        {"uint32": 2147483648, "uint64": 9223372036854775808, "uint8": 128, "int8": -128, "string": "a",
         "binary": "gA==", "dec_38_10": "-99999999999999999999999999.9999999999", "dec_9_2_fixed": "9999999.99",
         "uuid": "80000000-0000-0000-0000-000000000000", "float": "-Infinity", "double": "Infinity",
         "timestamp": "2262-04-11T23:47:16.854775", "date": "9999-12-31"},
    ]
    schema = make_schema(names)
    path = pqgen.write(workdir, schema, rows)
    check_all(tierdb, path, schema, rows)


def test_unusual_column_names(pqgen, tierdb, workdir):
    names = {"naïve": "int32", "with space": "string", 'quote"q': "double", "back\\slash": "uuid",
             "日本語": "timestamptz", "tab\tname": "dec_38_10", "x" * 200: "boolean"}
    schema = [{"name": n, "type": WTYPES[t].pqgen, "field_id": i + 1} for i, (n, t) in enumerate(names.items())]
    cols = {n: make_rows([t], 200, seed=n) for n, t in names.items()}
    rows = [{n: cols[n][i][t] for n, t in names.items() if t in cols[n][i]} for i in range(200)]
    path = pqgen.write(workdir, schema, rows)
    check_all(tierdb, path, schema, rows, wtypes={n: WTYPES[t] for n, t in names.items()})


def test_many_columns(pqgen, tierdb, workdir):
    kinds = ["int64", "string", "double", "dec_18_4"]
    names = {f"c{i}": kinds[i % 4] for i in range(400)}
    schema = [{"name": n, "type": WTYPES[t].pqgen, "field_id": i} for i, (n, t) in enumerate(names.items())]
    cols = {n: make_rows([t], 30, seed=n) for n, t in names.items()}
    rows = [{n: cols[n][i][t] for n, t in names.items() if t in cols[n][i]} for i in range(30)]
    path = pqgen.write(workdir, schema, rows)
    check_all(tierdb, path, schema, rows, wtypes={n: WTYPES[t] for n, t in names.items()})


@pytest.mark.parametrize("dictionary", [True, False], ids=["dict", "plain"])
def test_large_values(pqgen, tierdb, workdir, dictionary):
    """Values larger than a page, and a row group of them."""
    sizes = [0, 1, 70_000, 1_500_000, 3, 2_100_000, 10, 1_500_000]
    text = ["".join(chr(0x41 + (i + j) % 26) for j in range(64)) * (n // 64) + "é" * (n % 64 // 2)
            for i, n in enumerate(sizes)]
    rows = [{"s": t, "b": __import__("base64").b64encode(t.encode()).decode(), "n": i} for i, t in enumerate(text)]
    schema = make_schema(["string", "binary", "int64"])
    for col, name in zip(schema, ["s", "b", "n"]):
        col["name"] = name
    options = [] if dictionary else ["--no-dictionary"]
    path = pqgen.write(workdir, schema, rows, options=options + ["--page-bytes", 65536])
    check_all(tierdb, path, schema, rows, wtypes={"s": WTYPES["string"], "b": WTYPES["binary"], "n": WTYPES["int64"]})


def test_plain_json_numbers_for_decimals_and_floats(pqgen, tierdb, workdir):
    """pqgen also takes plain JSON numbers for decimal and float columns."""
    schema = make_schema(["dec_9_2", "dec_38_10", "double", "float"])
    given = [{"dec_9_2": 1.5, "dec_38_10": -2, "double": 1, "float": 0.1},
             {"dec_9_2": -0.25, "dec_38_10": 12345.125, "double": -3, "float": 16777217}]
    path = pqgen.write(workdir, schema, given)
    want = [{"dec_9_2": "1.50", "dec_38_10": "-2.0000000000", "double": 1.0, "float": float(np.float32(0.1))},
            {"dec_9_2": "-0.25", "dec_38_10": "12345.1250000000", "double": -3.0, "float": 16777216.0}]
    check_all(tierdb, path, schema, want)


@pytest.mark.parametrize("values_", [["NaN", "NaN", None], ["NaN", 1.5, "NaN", -2.5], [-0.0, 0.0, None], [0.0, 0.0],
                                     [-0.0], ["Infinity", "NaN"], ["-Infinity", None, "Infinity"]],
                         ids=["nan_only", "nan_mixed", "signed_zeros", "positive_zeros", "negative_zero",
                              "inf_nan", "infinities"])
def test_float_statistics_special_values(pqgen, tierdb, workdir, values_):
    """NaN never becomes a min or max (a chunk of only NaN has none); zeros and
    infinities bound the chunk as numbers."""
    schema = make_schema(["double", "float"])
    rows = [{"double": v, "float": v} if v is not None else {} for v in values_]
    path = pqgen.write(workdir, schema, rows)
    check_all(tierdb, path, schema, rows)
    stats = pq.ParquetFile(path).metadata.row_group(0).column(0).statistics
    finite = [v for v in values_ if isinstance(v, float)]
    if 0.0 in finite and stats.has_min_max:
        # The spec asks writers for -0.0 as a zero min and +0.0 as a zero max.
        if min(finite) == 0.0:
            assert str(stats.min_raw) == "-0.0", stats.min_raw
        if max(finite) == 0.0:
            assert str(stats.max_raw) == "0.0", stats.max_raw


@pytest.mark.parametrize("options", [["--page-rows", 1], ["--row-group-rows", 1], ["--page-bytes", 1],
                                     ["--dictionary-bytes", 1], ["--dictionary-bytes", 0, "--page-rows", 3]],
                         ids=["page_rows_1", "row_group_rows_1", "page_bytes_1", "dictionary_bytes_1",
                              "dictionary_bytes_0"])
def test_extreme_limits(pqgen, tierdb, workdir, options):
    """The smallest limits: a page or row group per row, a dictionary that
    never fits."""
    schema = make_schema(ALL)
    rows = make_rows(ALL, 60, distinct=4)
    path = pqgen.write(workdir, schema, rows, options=options)
    check_all(tierdb, path, schema, rows)
    meta = pq.ParquetFile(path).metadata
    if options[0] == "--row-group-rows":
        assert meta.num_row_groups == 60, meta.num_row_groups
    for j in range(len(ALL) if options[0] in ("--page-rows", "--page-bytes") else 0):
        data_pages = [p for p in column_chunk_pages(path, 0, j) if p.type != "DICTIONARY_PAGE"]
        if options[0] == "--page-rows":
            assert len(data_pages) == 60, (ALL[j], len(data_pages))
        else:  # "near" one byte of values: a few rows per page at most
            assert len(data_pages) >= 4, (ALL[j], len(data_pages))


def test_row_group_bytes_tiny(pqgen, tierdb, workdir):
    """A 1-byte row-group budget still yields valid files; it cannot hold
    5000 rows in one row group."""
    names = ["int64", "string"]
    schema = make_schema(names)
    rows = make_rows(names, 5000)
    path = pqgen.write(workdir, schema, rows, options=["--row-group-bytes", 1])
    assert pq.ParquetFile(path).metadata.num_row_groups >= 2
    check_all(tierdb, path, schema, rows)
