"""Files written by pyarrow, read by `tierdb parquet cat`.

For every flat type pyarrow writes and TierDB claims, every null pattern and
pyarrow's writer options (dictionary, page v1/v2, the delta and
byte-stream-split encodings, every codec, many row groups and pages,
statistics, checksums, INT96, no stored Arrow schema), cat must print exactly
what pyarrow itself reads back from the same file, rendered by the rules in
parquet_values, `parquet schema --json` must agree with pyarrow about the
footer, and a read with late materialisation (build/tools/pqskip) must
decode the same values as a plain one. Files DuckDB writes (its own encoding choices) are read the same way.
"""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_values import compare_rows, kinds_of_file, render_table
from sample_data import NULL_PATTERNS, arrow_column

# name -> Arrow type. Names avoid commas: --columns splits on them.
TYPES = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "large_string": pa.large_string(),
    "dict_string": pa.dictionary(pa.int32(), pa.string()),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
    "fixed3": pa.binary(3),
    "fixed16": pa.binary(16),
    "date32": pa.date32(),
    "date64": pa.date64(),
    "ts_s": pa.timestamp("s"),
    "ts_ms": pa.timestamp("ms"),
    "ts_us": pa.timestamp("us"),
    "ts_ns": pa.timestamp("ns"),
    "ts_s_utc": pa.timestamp("s", tz="UTC"),
    "ts_ms_tz": pa.timestamp("ms", tz="America/New_York"),
    "ts_us_utc": pa.timestamp("us", tz="UTC"),
    "ts_ns_tz": pa.timestamp("ns", tz="+05:30"),
    "time32_s": pa.time32("s"),
    "time32_ms": pa.time32("ms"),
    "time64_us": pa.time64("us"),
    "time64_ns": pa.time64("ns"),
    "dec_1_0": pa.decimal128(1, 0),
    "dec_5_2": pa.decimal128(5, 2),
    "dec_9_9": pa.decimal128(9, 9),
    "dec_10_3": pa.decimal128(10, 3),
    "dec_18_6": pa.decimal128(18, 6),
    "dec_19_0": pa.decimal128(19, 0),
    "dec_28_10": pa.decimal128(28, 10),
    "dec_38_0": pa.decimal128(38, 0),
    "dec_38_38": pa.decimal128(38, 38),
    "dec256_40_2": pa.decimal256(40, 2),
    "dec256_76_10": pa.decimal256(76, 10),
    "uuid": pa.uuid(),
    "json": pa.json_(),
}

CODECS = ["none", "snappy", "gzip", "brotli", "lz4", "zstd"]


def make_table(n, pattern="random10", types=TYPES, seed=0, required=(), distinct=0):
    fields, arrays = [], []
    for name, t in types.items():
        col_pattern = "none" if name in required else pattern
        arrays.append(arrow_column(t, n, col_pattern, seed=(name, seed), distinct=distinct))
        fields.append(pa.field(name, t, nullable=name not in required))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


_expected_cache = {}


def expected_rows(path, columns=None, limit=None):
    """What pyarrow reads back from the file, rendered (cached per file)."""
    key = (str(path), path.stat().st_mtime_ns, tuple(columns) if columns is not None else None)
    if key not in _expected_cache:
        _expected_cache.clear()
        _expected_cache[key] = render_table(pq.read_table(path, columns=columns), kinds_of_file(path), columns)
    rows = _expected_cache[key]
    return rows if limit is None else rows[:limit]


def check_file(tierdb, path, columns=None, limit=None):
    if columns is None and limit is None:
        tierdb.check_schema(path)
        tierdb.check_deferred_read(path)
    rows = tierdb.cat(path, columns=columns, limit=limit)
    compare_rows(kinds_of_file(path), expected_rows(path, columns, limit), rows, context=str(path.name))
    return rows


@pytest.mark.parametrize("pattern", NULL_PATTERNS)
@pytest.mark.parametrize("type_name", list(TYPES))
def test_type_and_nulls(tierdb, workdir, type_name, pattern):
    table = make_table(1000, pattern, {type_name: TYPES[type_name]})
    path = workdir / f"{type_name}.parquet"
    pq.write_table(table, path)
    check_file(tierdb, path)


@pytest.mark.parametrize("type_name", list(TYPES))
def test_required_column(tierdb, workdir, type_name):
    table = make_table(300, "none", {type_name: TYPES[type_name]}, required={type_name})
    path = workdir / f"{type_name}.parquet"
    pq.write_table(table, path)
    assert pq.ParquetFile(path).schema.column(0).max_definition_level == 0
    check_file(tierdb, path)


# One column of each physical type (and the wider decimals), for the big files.
SUBSET = ["bool", "int32", "uint64", "float", "double", "string", "dict_string", "binary", "fixed3", "date32",
          "ts_ns_tz", "time32_ms", "dec_9_9", "dec_18_6", "dec_38_0", "uuid"]


@pytest.mark.parametrize("n", [0, 1, 20000])
def test_all_types_row_counts(tierdb, workdir, n):
    required = {"int32", "string", "double"}
    types = TYPES if n < 20000 else {name: TYPES[name] for name in SUBSET}
    table = make_table(n, "random10", types, required=required)
    path = workdir / "wide.parquet"
    pq.write_table(table, path)
    check_file(tierdb, path)


# Each entry: pyarrow.parquet.write_table keyword arguments.
WRITER_OPTIONS = {
    "dict_off": dict(use_dictionary=False),
    "page_v2": dict(data_page_version="2.0"),
    "page_v2_dict_off": dict(data_page_version="2.0", use_dictionary=False),
    "page_v2_zstd": dict(data_page_version="2.0", compression="zstd"),
    "page_v2_uncompressed": dict(data_page_version="2.0", compression="none"),
    "stats_off": dict(write_statistics=False),
    "page_checksum": dict(write_page_checksum=True),
    "page_checksum_v2": dict(write_page_checksum=True, data_page_version="2.0", use_dictionary=False),
    "no_arrow_schema": dict(store_schema=False),
    "many_row_groups": dict(row_group_size=97),
    "many_pages": dict(data_page_size=256, write_batch_size=16),
    "many_pages_v2_dict_off": dict(data_page_size=256, write_batch_size=16, data_page_version="2.0",
                                   use_dictionary=False),
    "rows_per_page": dict(max_rows_per_page=7, use_dictionary=False),
    "small_dictionary_pages": dict(dictionary_pagesize_limit=64, write_batch_size=8),
    "byte_stream_split_floats": dict(use_dictionary=False, use_byte_stream_split=["float", "double"]),
    "decimal_as_integer": dict(store_decimal_as_integer=True),
    "time_utc_adjusted": dict(write_time_adjusted_to_utc=True),
    "page_index": dict(write_page_index=True),
    "bloom_filters": dict(bloom_filter_options={"int64": {"ndv": 1000, "fpp": 0.01}, "string": True,
                                                "uuid": True}),
    "sorting_columns": dict(sorting_columns=[pq.SortingColumn(4), pq.SortingColumn(11, descending=True)]),
    "some_statistics": dict(write_statistics=["int32", "string", "dec_28_10"]),
    "content_defined_chunking": dict(use_content_defined_chunking=True),
    # Older format versions store uint32 as INT64 and nanoseconds as micros
    # (legacy converted types only for 1.0); cat renders the stored type.
    "format_1_0": dict(version="1.0", coerce_timestamps="us", allow_truncated_timestamps=True),
    "format_2_4": dict(version="2.4", coerce_timestamps="us", allow_truncated_timestamps=True),
    **{f"codec_{c}": dict(compression=c) for c in CODECS},
    "gzip_level_9": dict(compression="gzip", compression_level=9),
    "zstd_level_19": dict(compression="zstd", compression_level=19),
    "brotli_dict_off_v2": dict(compression="brotli", use_dictionary=False, data_page_version="2.0"),
}

@pytest.mark.parametrize("option_name", list(WRITER_OPTIONS))
def test_writer_options(tierdb, workdir, option_name):
    options = WRITER_OPTIONS[option_name]
    table = make_table(1000, "random10", required={"int64", "string"})
    path = workdir / f"{option_name}.parquet"
    pq.write_table(table, path, **options)
    check_file(tierdb, path)


@pytest.mark.parametrize("option_name", ["dict_on", "dict_off_v2", "many_row_groups"])
def test_low_cardinality(tierdb, workdir, option_name):
    """Few distinct values: long RLE runs in dictionary indices and levels."""
    options = {"dict_on": {}, "dict_off_v2": dict(use_dictionary=False, data_page_version="2.0"),
               "many_row_groups": dict(row_group_size=1000)}[option_name]
    table = make_table(20000, "random10", {name: TYPES[name] for name in SUBSET}, distinct=3)
    path = workdir / "low.parquet"
    pq.write_table(table, path, **options)
    check_file(tierdb, path)


# (encoding, column names) pyarrow accepts; each combination written with
# dictionary off, as column_encoding requires.
ENCODINGS = {
    "DELTA_BINARY_PACKED": ["int8", "int16", "int32", "int64", "uint32", "uint64", "date32", "ts_us", "ts_ns",
                            "time32_ms", "time64_us"],
    "DELTA_LENGTH_BYTE_ARRAY": ["string", "large_string", "binary", "json"],
    "DELTA_BYTE_ARRAY": ["string", "binary", "fixed3", "fixed16", "dec_28_10", "uuid"],
    "BYTE_STREAM_SPLIT": ["float", "double", "int32", "int64", "uint64", "fixed3", "dec_19_0", "ts_us", "date32"],
}


@pytest.mark.parametrize("distinct", [0, 5])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_column_encoding(tierdb, workdir, encoding, page_version, distinct):
    names = ENCODINGS[encoding]
    table = make_table(5000, "random10", {n: TYPES[n] for n in names}, distinct=distinct)
    path = workdir / f"{encoding}.parquet"
    pq.write_table(table, path, use_dictionary=False, column_encoding={n: encoding for n in names},
                   data_page_version=page_version, data_page_size=4096, compression="none")
    meta = pq.ParquetFile(path).metadata
    for i in range(meta.num_columns):
        assert encoding in meta.row_group(0).column(i).encodings
    check_file(tierdb, path)


def test_delta_binary_packed_extremes(tierdb, workdir):
    """Deltas that overflow 64 bits (min and max alternating) and long
    constant runs (zero bit width miniblocks)."""
    lo, hi = -(1 << 63), (1 << 63) - 1
    vals64 = [lo, hi] * 50 + [7] * 500 + list(range(-300, 300, 3)) + [hi, lo, 0]
    lo32, hi32 = -(1 << 31), (1 << 31) - 1
    vals32 = [lo32, hi32] * 50 + [7] * 500 + list(range(-300, 300, 3)) + [hi32, lo32, 0]
    table = pa.table({"i64": pa.array(vals64, pa.int64()), "i32": pa.array(vals32, pa.int32()),
                      "u64": pa.array([v & ((1 << 64) - 1) for v in vals64], pa.uint64())})
    for version in ("1.0", "2.0"):
        path = workdir / f"dbp_{version}.parquet"
        pq.write_table(table, path, use_dictionary=False, compression="none", data_page_version=version,
                       column_encoding={"i64": "DELTA_BINARY_PACKED", "i32": "DELTA_BINARY_PACKED",
                                        "u64": "DELTA_BINARY_PACKED"})
        check_file(tierdb, path)


def test_delta_byte_array_shared_prefixes(tierdb, workdir):
    words = sorted({f"prefix/{i // 10:04d}/{'x' * (i % 7)}{i}" for i in range(3000)})
    words += ["", "", "a", "ab", "abc", "ab", ""]
    table = pa.table({"s": pa.array(words), "b": pa.array([w.encode() for w in words], pa.binary())})
    path = workdir / "dba.parquet"
    pq.write_table(table, path, use_dictionary=False, compression="none",
                   column_encoding={"s": "DELTA_BYTE_ARRAY", "b": "DELTA_LENGTH_BYTE_ARRAY"})
    check_file(tierdb, path)


INT96_TYPES = {
    "ts_s": pa.timestamp("s"),
    "ts_ms": pa.timestamp("ms"),
    "ts_us": pa.timestamp("us"),
    "ts_ns": pa.timestamp("ns"),
    "ts_us_utc": pa.timestamp("us", tz="UTC"),
    "ts_ns_tz": pa.timestamp("ns", tz="Europe/Paris"),
}


@pytest.mark.parametrize("store_schema", [True, False])
def test_int96_timestamps(tierdb, workdir, store_schema):
    n = 3000
    arrays = {}
    for i, (name, t) in enumerate(INT96_TYPES.items()):
        per_sec = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[t.unit]
        rnd = random.Random(i)
        # pyarrow converts to nanoseconds for INT96: stay within int64 nanoseconds (1677..2262).
        vals = [0, -1, 1, 1_577_836_800 * per_sec, -2_000_000_000 * per_sec]
        vals += [rnd.randint(-9_000_000_000, 9_000_000_000) * per_sec + rnd.randint(0, per_sec - 1)
                 for _ in range(n - len(vals))]
        vals = [None if rnd.random() < 0.1 else v for v in vals]
        arrays[name] = pa.array(vals, pa.int64()).cast(t)
    table = pa.table(arrays)
    path = workdir / "int96.parquet"
    pq.write_table(table, path, use_deprecated_int96_timestamps=True, store_schema=store_schema)
    schema = pq.ParquetFile(path).schema
    assert all(schema.column(i).physical_type == "INT96" for i in range(len(schema)))
    check_file(tierdb, path)


def test_int96_dictionary_off_v2(tierdb, workdir):
    vals = [None if i % 5 == 0 else 1_600_000_000_000_000_000 + i * 1_000_000_007 for i in range(2000)]
    table = pa.table({"t": pa.array(vals, pa.timestamp("ns"))})
    path = workdir / "int96b.parquet"
    pq.write_table(table, path, use_deprecated_int96_timestamps=True, use_dictionary=False,
                   data_page_version="2.0", compression="zstd")
    check_file(tierdb, path)


# ------------------------------------------------------ projection and limit


@pytest.fixture(scope="module")
def multi_row_group_file(tmp_path_factory):
    table = make_table(5000, "random10", seed=1)
    path = tmp_path_factory.mktemp("proj") / "proj.parquet"
    pq.write_table(table, path, row_group_size=1000, data_page_size=1024)
    return path


@pytest.mark.parametrize(
    "columns",
    [
        ["int64"],
        ["string", "int8"],
        ["json", "uuid", "bool", "dec_38_38"],
        ["ts_ns_tz", "double", "fixed3"],
        list(reversed(list(TYPES))),
    ],
    ids=["one", "two_reordered", "four", "three", "all_reversed"],
)
def test_columns_projection(tierdb, multi_row_group_file, columns):
    rows = check_file(tierdb, multi_row_group_file, columns=columns)
    assert len(rows) == 5000
    assert [k for k, _ in rows[0]] == columns


@pytest.mark.parametrize("limit", [0, 1, 999, 1000, 1001, 4999, 5000, 6000])
def test_limit(tierdb, multi_row_group_file, limit):
    rows = check_file(tierdb, multi_row_group_file, limit=limit)
    assert len(rows) == min(limit, 5000)


def test_columns_and_limit(tierdb, multi_row_group_file):
    rows = check_file(tierdb, multi_row_group_file, columns=["uint64", "string"], limit=2500)
    assert len(rows) == 2500


def test_unknown_column_is_an_error(tierdb, multi_row_group_file):
    proc = tierdb.run("parquet", "cat", multi_row_group_file, "--columns", "int64,no_such_column")
    assert proc.returncode in (1, 2), proc
    assert proc.stderr.decode().startswith("tierdb:"), proc.stderr
    assert b"no_such_column" in proc.stderr
    assert proc.stdout == b""


# ------------------------------------------------- other writers and shapes


@pytest.mark.parametrize("version,codec", [("V1", "uncompressed"), ("V1", "snappy"), ("V1", "brotli"),
                                           ("V2", "zstd"), ("V2", "gzip"), ("V2", "lz4_raw")])
def test_duckdb_written_files(tierdb, workdir, version, codec):
    """DuckDB's writer: with PARQUET_VERSION V2 it picks DELTA_* and
    BYTE_STREAM_SPLIT itself, and its dictionary and page choices differ from
    pyarrow's."""
    import duckdb

    # DuckDB takes in neither Arrow's uuid/json extension types nor decimal256.
    types = {k: v for k, v in TYPES.items() if k not in ("uuid", "json", "dict_string", "dec256_40_2", "dec256_76_10")}
    if version == "V2":
        # DuckDB 1.5's V2 writer gives INT32 columns whose deltas overflow 32
        # bits a 33-bit DELTA_BINARY_PACKED miniblock, which pyarrow (and
        # we) reject as corrupt; keep INT32 values narrow here instead.
        del types["int32"], types["uint32"]
        types["int32_narrow"] = pa.int16()
    table = make_table(3000, "random10", types, seed=2)
    if version == "V2":
        table = table.set_column(table.schema.get_field_index("int32_narrow"), "int32_narrow",
                                 table.column("int32_narrow").cast(pa.int32()))
    low = make_table(3000, "random10", {"low_int": pa.int64(), "low_str": pa.string()}, seed=3, distinct=4)
    for name in low.column_names:
        table = table.append_column(name, low.column(name))
    path = workdir / f"duckdb_{version}_{codec}.parquet"
    con = duckdb.connect()
    try:
        con.register("t", table)
        con.execute(f"COPY (SELECT * FROM t) TO '{path}' (FORMAT parquet, COMPRESSION {codec}, "
                    f"PARQUET_VERSION {version}, ROW_GROUP_SIZE 2048)")
    finally:
        con.close()
    check_file(tierdb, path)


def test_unusual_column_names(tierdb, workdir):
    names = ["naïve", "with space", 'quote"q', "back\\slash", "日本語", "tab\tname", "", "x" * 200]
    table = pa.table({name: pa.array([i, None, -i]) for i, name in enumerate(names)})
    path = workdir / "names.parquet"
    pq.write_table(table, path)
    rows = check_file(tierdb, path)
    assert [k for k, _ in rows[0]] == names
    check_file(tierdb, path, columns=["日本語", "naïve"])


def test_many_columns(tierdb, workdir):
    table = pa.table({f"c{i}": arrow_column([pa.int64(), pa.string(), pa.float64()][i % 3], 50, seed=i)
                      for i in range(600)})
    path = workdir / "wide.parquet"
    pq.write_table(table, path)
    check_file(tierdb, path)
    check_file(tierdb, path, columns=["c599", "c0", "c300"])


def test_large_values(tierdb, workdir):
    """Values larger than pyarrow's pages, in both dictionary and plain chunks."""
    sizes = [0, 1, 70_000, 1_500_000, 3, 2_100_000, 10]
    big = ["".join(chr(0x41 + (i + j) % 26) for j in range(64)) * (n // 64) + "é" * (n % 64 // 2)
           for i, n in enumerate(sizes)]
    table = pa.table({"s": pa.array(big), "b": pa.array([s.encode() for s in big], pa.binary()),
                      "n": pa.array(range(len(big)))})
    for options in (dict(), dict(use_dictionary=False, data_page_version="2.0", compression="zstd")):
        path = workdir / "big.parquet"
        pq.write_table(table, path, **options)
        check_file(tierdb, path)


def test_float_shortest_digits(tierdb, workdir):
    """Shortest round-trip digits where they are hardest: every power of two
    (whose rounding interval is lopsided, so the nearest n-digit decimal can
    fail to read back while another n-digit one does), its neighbours,
    subnormals, and random bit patterns."""
    doubles = [math.ldexp(1.0, e) for e in range(-1074, 1024)]
    doubles += [math.nextafter(x, math.inf) for x in doubles] + [math.nextafter(x, 0.0) for x in doubles]
    floats = [math.ldexp(1.0, e) for e in range(-149, 128)]
    floats += [float(np.nextafter(np.float32(x), np.float32(np.inf))) for x in floats]
    floats += [float(np.nextafter(np.float32(x), np.float32(0))) for x in floats]
    rnd = random.Random(11)
    while len(doubles) < 10000:
        x = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
        if math.isfinite(x):
            doubles.append(x)
    floats = [x for x in floats if math.isfinite(x)]
    while len(floats) < 10000:
        x = struct.unpack("<f", struct.pack("<I", rnd.getrandbits(32)))[0]
        if math.isfinite(x):
            floats.append(x)
    doubles = [-x if i % 2 else x for i, x in enumerate(doubles)]
    table = pa.table({"d": pa.array(doubles[:10000], pa.float64()),
                      "f": pa.array(np.array(floats[:10000], dtype=np.float32))})
    path = workdir / "floats.parquet"
    pq.write_table(table, path, use_dictionary=False)
    check_file(tierdb, path)


def test_invalid_utf8_in_string_column(tierdb, workdir):
    """Bytes that are not UTF-8 in a STRING column (pyarrow does not check
    what it writes): cat still prints valid JSON, with U+FFFD in their place."""
    raw = [b"ok", b"\xff", b"a\xc3", b"\xed\xa0\x80", b"caf\xc3\xa9", b"\x80abc", None, b""]
    offsets, data = [0], b""
    for v in raw:
        data += v or b""
        offsets.append(len(data))
    validity = pa.array([v is not None for v in raw]).buffers()[1]
    strings = pa.Array.from_buffers(pa.string(), len(raw), [validity, pa.py_buffer(struct.pack(f"<{len(offsets)}i", *offsets)),
                                                            pa.py_buffer(data)])
    path = workdir / "bad_utf8.parquet"
    pq.write_table(pa.table({"s": strings}), path)
    rows = tierdb.cat(path)
    got = [dict(r)["s"] for r in rows]
    assert len(got) == len(raw)
    for value, text in zip(raw, got):
        if value is None:
            assert text is None
            continue
        try:
            assert text == value.decode("utf-8")
        except UnicodeDecodeError:
            assert isinstance(text, str) and "\ufffd" in text, (value, text)
            assert text.replace("\ufffd", "").encode() in value, (value, text)
