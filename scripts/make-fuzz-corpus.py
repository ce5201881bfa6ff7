#!/usr/bin/env python3
"""Regenerates the seed corpora of the Parquet fuzz targets.

    .venv/bin/python scripts/make-fuzz-corpus.py

lake/tests/corpus/fuzz_parquet_reader/ receives small Parquet files written by
pyarrow, one per writer feature the reader must handle (every codec,
dictionary on and off, data page v1 and v2, the delta and byte-stream-split
encodings, INT96, nulls, many row groups, page CRCs, decimals, timestamps,
strings, plus a few shapes the reader must reject cleanly). The fuzzer mutates
these, so starting from valid files lets it reach the page decoders instead of
spending its time on the magic bytes.

lake/tests/corpus/fuzz_parquet_footer/ receives the raw Thrift bytes the
footer target decodes: FileMetaData structures cut out of some of those files,
and single page headers (dictionary, v1, v2, with and without CRC).

The output is deterministic: the values come from fixed formulas, and pyarrow
writes the same bytes for the same table and options. The files are committed;
this script is only for regenerating them after a change.
"""

import io
import os
import shutil
import struct
import sys
import zlib
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READER_DIR = os.path.join(ROOT, "lake", "tests", "corpus", "fuzz_parquet_reader")
FOOTER_DIR = os.path.join(ROOT, "lake", "tests", "corpus", "fuzz_parquet_footer")

# Small pages and batches so that even a few hundred rows span several pages.
SMALL_PAGES = dict(data_page_size=512, write_batch_size=64, max_rows_per_page=64)


# --------------------------------------------------------------------------
# Deterministic values

def mix(i, k):
    """A cheap integer hash of (row, column), stable across Python versions."""
    x = (i * 0x9E3779B1 + k * 0x85EBCA77) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return x


WORDS = ["login", "logout", "click", "view", "purchase", "search", "scroll",
         "share", "comment", "like"]


def mixed_table(n=120):
    """Every common physical type, with nulls in some columns."""
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "i32": pa.array([None if mix(i, 1) % 7 == 0 else mix(i, 2) % 1000 - 500 for i in range(n)], pa.int32()),
        "f64": pa.array([(mix(i, 3) % 100000) / 100.0 for i in range(n)], pa.float64()),
        "f32": pa.array([(mix(i, 4) % 1000) / 8.0 for i in range(n)], pa.float32()),
        "flag": pa.array([mix(i, 5) % 3 == 0 for i in range(n)], pa.bool_()),
        "word": pa.array([None if mix(i, 6) % 5 == 0 else WORDS[mix(i, 7) % len(WORDS)] for i in range(n)], pa.string()),
        "blob": pa.array([bytes([mix(i, 8) % 256]) * (mix(i, 9) % 6) for i in range(n)], pa.binary()),
        "ts": pa.array([1_700_000_000_000_000 + i * 1_000_003 for i in range(n)], pa.timestamp("us", tz="UTC")),
        "day": pa.array([19000 + mix(i, 10) % 400 for i in range(n)], pa.date32()),
    })


def strings_table(n=200):
    """Strings whose prefixes repeat (what DELTA_BYTE_ARRAY exploits)."""
    return pa.table({
        "url": pa.array([f"https://example.com/item/{mix(i, 11) % 50}/{i}" for i in range(n)], pa.string()),
        "user": pa.array([None if mix(i, 12) % 4 == 0 else f"user-{mix(i, 13) % 97}" for i in range(n)], pa.string()),
        "code": pa.array([(b"%016d" % (mix(i, 14) % 30)) for i in range(n)], pa.binary(16)),
    })


def numeric_table(n=300):
    """Integers with small deltas and floats (DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT)."""
    return pa.table({
        "seq32": pa.array([i * 3 - 100 + mix(i, 15) % 5 for i in range(n)], pa.int32()),
        "seq64": pa.array([None if mix(i, 16) % 9 == 0 else (1 << 40) + i * 1000 - mix(i, 17) % 900 for i in range(n)], pa.int64()),
        "wide64": pa.array([(mix(i, 18) << 31) - (1 << 62) for i in range(n)], pa.int64()),
        "f32": pa.array([(mix(i, 19) % 10000) / 16.0 for i in range(n)], pa.float32()),
        "f64": pa.array([None if mix(i, 20) % 11 == 0 else (mix(i, 21) % 100000) / 7.0 for i in range(n)], pa.float64()),
    })


# --------------------------------------------------------------------------
# A generic Thrift compact-protocol codec, enough to cut footers and page
# headers out of files and to rewrite a file's pages (see lz4_hadoop below).
# A struct is a list of [field_id, type, value]; field order is kept.

T_TRUE, T_FALSE, T_I8, T_I16, T_I32, T_I64, T_DOUBLE, T_BINARY, T_LIST, T_SET, T_MAP, T_STRUCT = range(1, 13)


def read_varint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def read_value(buf, pos, t):
    if t in (T_TRUE, T_FALSE):
        return t == T_TRUE, pos
    if t == T_I8:
        return struct.unpack_from("b", buf, pos)[0], pos + 1
    if t in (T_I16, T_I32, T_I64):
        v, pos = read_varint(buf, pos)
        return unzigzag(v), pos
    if t == T_DOUBLE:
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if t == T_BINARY:
        n, pos = read_varint(buf, pos)
        return bytes(buf[pos:pos + n]), pos + n
    if t in (T_LIST, T_SET):
        head = buf[pos]
        pos += 1
        n, et = head >> 4, head & 0x0F
        if n == 15:
            n, pos = read_varint(buf, pos)
        items = []
        for _ in range(n):
            if et in (T_TRUE, T_FALSE):  # list booleans are one byte each
                items.append(buf[pos] == 1)
                pos += 1
            else:
                v, pos = read_value(buf, pos, et)
                items.append(v)
        return (et, items), pos
    if t == T_STRUCT:
        return read_struct(buf, pos)
    raise ValueError(f"unsupported compact type {t}")


def read_struct(buf, pos):
    fields = []
    last = 0
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:
            return fields, pos
        delta, t = head >> 4, head & 0x0F
        if delta:
            fid = last + delta
        else:
            v, pos = read_varint(buf, pos)
            fid = unzigzag(v)
        value, pos = read_value(buf, pos, t)
        fields.append([fid, t, value])
        last = fid


def write_varint(out, v):
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def zigzag(v):
    return (v << 1) ^ (v >> 63)


def write_value(out, t, v):
    if t in (T_TRUE, T_FALSE):
        return  # carried in the field header
    if t == T_I8:
        out += struct.pack("b", v)
    elif t in (T_I16, T_I32, T_I64):
        write_varint(out, zigzag(v) & 0xFFFFFFFFFFFFFFFF)
    elif t == T_DOUBLE:
        out += struct.pack("<d", v)
    elif t == T_BINARY:
        write_varint(out, len(v))
        out += v
    elif t in (T_LIST, T_SET):
        et, items = v
        if len(items) < 15:
            out.append((len(items) << 4) | et)
        else:
            out.append(0xF0 | et)
            write_varint(out, len(items))
        for item in items:
            if et in (T_TRUE, T_FALSE):
                out.append(1 if item else 2)
            else:
                write_value(out, et, item)
    elif t == T_STRUCT:
        write_struct(out, v)
    else:
        raise ValueError(f"unsupported compact type {t}")


def write_struct(out, fields):
    last = 0
    for fid, t, v in fields:
        if t in (T_TRUE, T_FALSE):
            t = T_TRUE if v else T_FALSE
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | t)
        else:
            out.append(t)
            write_varint(out, zigzag(fid))
        write_value(out, t, v)
        last = fid
    out.append(0)


def field(fields, fid):
    for f in fields:
        if f[0] == fid:
            return f
    return None


def encode(fields):
    out = bytearray()
    write_struct(out, fields)
    return bytes(out)


def split_file(data):
    """(footer bytes, footer start offset) of a Parquet file."""
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"
    n = struct.unpack_from("<I", data, len(data) - 8)[0]
    start = len(data) - 8 - n
    return data[start:len(data) - 8], start


def column_chunks(footer):
    """Yields (row group struct, ColumnChunk struct, ColumnMetaData struct)."""
    md, _ = read_struct(footer, 0)
    for rg in field(md, 4)[2][1]:
        for cc in field(rg, 1)[2][1]:
            yield rg, cc, field(cc, 3)[2]


def chunk_range(cmd):
    start = field(cmd, 9)[2]
    dict_off = field(cmd, 11)
    if dict_off is not None and dict_off[2] > 0:
        start = min(start, dict_off[2])
    return start, start + field(cmd, 7)[2]


def pages(data, cmd):
    """Yields (offset, header struct, header bytes, body bytes) for each page of a chunk."""
    pos, end = chunk_range(cmd)
    while pos < end:
        header, hend = read_struct(data, pos)
        body_len = field(header, 3)[2]
        yield pos, header, data[pos:hend], data[hend:hend + body_len]
        pos = hend + body_len


# --------------------------------------------------------------------------
# Writing

def write(table, **options):
    options.setdefault("store_schema", False)
    buf = io.BytesIO()
    pq.write_table(table, buf, **options)
    return buf.getvalue()


def lz4_hadoop(table):
    """
    pyarrow only writes LZ4_RAW, but older Hadoop writers used codec LZ4 (5)
    with each compressed block framed by two big-endian u32 lengths. Build
    such a file from an LZ4_RAW one by framing every (v1) page body and
    rewriting the offsets and sizes in the footer.
    """
    data = write(table, compression="lz4", use_dictionary=["word"], **SMALL_PAGES)
    footer, _ = split_file(data)
    md, _ = read_struct(footer, 0)
    out = bytearray(b"PAR1")
    for rg in field(md, 4)[2][1]:
        rg_start = len(out)
        for cc in field(rg, 1)[2][1]:
            cmd = field(cc, 3)[2]
            new_start = len(out)
            new_offsets = {}
            uncompressed_growth = 0
            for offset, header, header_bytes, body in pages(data, cmd):
                new_offsets[offset] = len(out)
                framed = struct.pack(">II", field(header, 2)[2], len(body)) + body
                field(header, 3)[2] = len(framed)
                crc = field(header, 4)
                if crc is not None:
                    crc[2] = struct.unpack("<i", struct.pack("<I", zlib.crc32(framed)))[0]
                new_header = encode(header)
                uncompressed_growth += len(new_header) - len(header_bytes)
                out += new_header + framed
            field(cmd, 4)[2] = 5  # LZ4 (Hadoop framing)
            field(cmd, 9)[2] = new_offsets[field(cmd, 9)[2]]
            dict_off = field(cmd, 11)
            if dict_off is not None and dict_off[2] > 0:
                dict_off[2] = new_offsets[dict_off[2]]
            field(cmd, 7)[2] = len(out) - new_start
            field(cmd, 6)[2] += uncompressed_growth
            field(cc, 2)[2] = new_start
        if field(rg, 5) is not None:
            field(rg, 5)[2] = rg_start
        if field(rg, 6) is not None:
            field(rg, 6)[2] = len(out) - rg_start
    new_footer = encode(md)
    out += new_footer + struct.pack("<I", len(new_footer)) + b"PAR1"
    return bytes(out)


def reader_seeds():
    mixed = mixed_table()
    strings = strings_table()
    numeric = numeric_table()
    seeds = {}

    for codec in ["none", "snappy", "gzip", "brotli", "lz4", "zstd"]:
        seeds[f"codec_{codec}"] = write(mixed, compression=codec, **SMALL_PAGES)
    seeds["codec_lz4_hadoop"] = lz4_hadoop(mixed)

    seeds["plain_no_dictionary"] = write(mixed, compression="none", use_dictionary=False, **SMALL_PAGES)
    seeds["dictionary_fallback"] = write(strings, compression="none", dictionary_pagesize_limit=256,
                                         **SMALL_PAGES)
    seeds["page_v2_dictionary"] = write(mixed, compression="snappy", data_page_version="2.0", **SMALL_PAGES)
    seeds["page_v2_plain"] = write(mixed, compression="none", data_page_version="2.0", use_dictionary=False,
                                   **SMALL_PAGES)

    seeds["delta_binary_packed"] = write(
        numeric.select(["seq32", "seq64", "wide64"]), compression="none", use_dictionary=False,
        column_encoding="DELTA_BINARY_PACKED", **SMALL_PAGES)
    seeds["delta_binary_packed_v2"] = write(
        numeric.select(["seq32", "seq64"]), compression="zstd", use_dictionary=False,
        column_encoding="DELTA_BINARY_PACKED", data_page_version="2.0", **SMALL_PAGES)
    seeds["delta_length_byte_array"] = write(
        strings.select(["url", "user"]), compression="none", use_dictionary=False,
        column_encoding="DELTA_LENGTH_BYTE_ARRAY", **SMALL_PAGES)
    seeds["delta_byte_array"] = write(strings, compression="none", use_dictionary=False,
                                      column_encoding="DELTA_BYTE_ARRAY", **SMALL_PAGES)
    seeds["byte_stream_split"] = write(
        numeric.append_column("code", pa.array([b"%016d" % (mix(i, 22) % 999) for i in range(numeric.num_rows)],
                                               pa.binary(16))),
        compression="none", use_dictionary=False, column_encoding="BYTE_STREAM_SPLIT", **SMALL_PAGES)

    seeds["int96_timestamps"] = write(
        pa.table({"ts": pa.array([1_600_000_000_000_000_000 + i * 86_400_000_000_123 for i in range(100)],
                                 pa.timestamp("ns")),
                  "old": pa.array([None if i % 6 == 0 else -2_000_000_000_000_000 + i * 7 for i in range(100)],
                                  pa.timestamp("ns"))}),
        compression="none", use_deprecated_int96_timestamps=True, **SMALL_PAGES)

    seeds["nulls"] = write(pa.table({
        "all_null": pa.array([None] * 150, pa.int32()),
        "mostly_null": pa.array([i if i % 37 == 0 else None for i in range(150)], pa.int64()),
        "no_nulls_optional": pa.array([f"v{i % 3}" for i in range(150)], pa.string()),
        "null_double": pa.array([None if i % 2 else i / 3 for i in range(150)], pa.float64()),
        "null_bool": pa.array([None if i % 3 == 0 else i % 2 == 0 for i in range(150)], pa.bool_()),
    }), compression="none", **SMALL_PAGES)

    seeds["many_row_groups"] = write(mixed.slice(0, 60), compression="snappy", row_group_size=6)
    seeds["page_checksums"] = write(mixed, compression="zstd", write_page_checksum=True, **SMALL_PAGES)
    seeds["page_checksums_v2"] = write(mixed, compression="none", write_page_checksum=True,
                                       data_page_version="2.0", use_dictionary=False, **SMALL_PAGES)

    decimals = pa.table({
        "d9": pa.array([Decimal(mix(i, 23) % 2000000 - 1000000) / 100 for i in range(120)], pa.decimal128(9, 2)),
        "d18": pa.array([None if i % 10 == 0 else Decimal(mix(i, 24) * 7919 - (1 << 33)) / 10000
                         for i in range(120)], pa.decimal128(18, 4)),
        "d30": pa.array([Decimal((mix(i, 25) - (1 << 31)) * 10**15 + i) / 10**6 for i in range(120)],
                        pa.decimal128(30, 6)),
    })
    seeds["decimals_integer"] = write(decimals, compression="none", store_decimal_as_integer=True, **SMALL_PAGES)
    seeds["decimals_fixed"] = write(decimals, compression="none", use_dictionary=False, **SMALL_PAGES)

    seeds["timestamps"] = write(pa.table({
        "ms": pa.array([1_600_000_000_000 + i * 999 for i in range(100)], pa.timestamp("ms")),
        "us_utc": pa.array([-86_400_000_000 + i * 123_456_789 for i in range(100)], pa.timestamp("us", tz="UTC")),
        "ns_utc": pa.array([1_700_000_000_000_000_000 + i * 17 for i in range(100)], pa.timestamp("ns", tz="UTC")),
        "day": pa.array([-719_000 + i * 7_000 for i in range(100)], pa.date32()),
        "t_ms": pa.array([i * 863_999 for i in range(100)], pa.time32("ms")),
        "t_us": pa.array([None if i % 4 == 0 else i * 863_999_999 for i in range(100)], pa.time64("us")),
        "t_ns": pa.array([i * 863_999_999_999 for i in range(100)], pa.time64("ns")),
    }), compression="none", **SMALL_PAGES)

    seeds["strings"] = write(pa.table({
        "unicode": pa.array(["", "é", "日本語", "🙂" * 3, None, "a" * 300] * 20, pa.string()),
        "large": pa.array([f"row {i} " * (i % 9) for i in range(120)], pa.large_string()),
        "bin": pa.array([bytes(range(i % 40)) for i in range(120)], pa.binary()),
        "uuid": pa.array([bytes((i * 37 + j) % 256 for j in range(16)) for i in range(120)], pa.uuid()),
    }), compression="none", **SMALL_PAGES)

    seeds["integer_widths"] = write(pa.table({
        "i8": pa.array([(i * 37) % 256 - 128 for i in range(150)], pa.int8()),
        "i16": pa.array([(i * 3001) % 65536 - 32768 for i in range(150)], pa.int16()),
        "u8": pa.array([(i * 7) % 256 for i in range(150)], pa.uint8()),
        "u16": pa.array([(i * 4099) % 65536 for i in range(150)], pa.uint16()),
        "u32": pa.array([(i * 2_654_435_761) % (1 << 32) for i in range(150)], pa.uint32()),
        "u64": pa.array([(i * 11_400_714_819_323_198_485) % (1 << 64) for i in range(150)], pa.uint64()),
    }), compression="none", **SMALL_PAGES)

    seeds["float_specials"] = write(pa.table({
        "f64": pa.array([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e308, 5e-324, None] * 15,
                        pa.float64()),
        "f32": pa.array([float("nan"), float("inf"), -0.0, 3.4e38, 1e-45, 1.5, None, 2.0] * 15, pa.float32()),
    }), compression="none", **SMALL_PAGES)

    seeds["statistics_off"] = write(mixed, compression="snappy", write_statistics=False, **SMALL_PAGES)
    seeds["key_value_metadata"] = write(mixed.replace_schema_metadata({"origin": "tierdb fuzz corpus", "n": "120"}),
                                        compression="zstd", store_schema=True)
    seeds["empty"] = write(mixed.slice(0, 0), compression="none")
    seeds["legacy_version_1_0"] = write(pa.table({
        "s": mixed["word"], "d": mixed["day"], "ts": pa.array(range(120), pa.timestamp("ms")),
        "i16": pa.array([i - 60 for i in range(120)], pa.int16()),
    }), compression="none", version="1.0", **SMALL_PAGES)
    seeds["long_runs"] = write(pa.table({
        "flag": pa.array([(i // 500) % 2 == 0 for i in range(3000)], pa.bool_()),
        "const": pa.array([42] * 3000, pa.int32()),
        "sparse": pa.array([None if (i // 250) % 2 else "x" for i in range(3000)], pa.string()),
    }), compression="snappy")

    # Shapes the reader must refuse with an error rather than misread.
    seeds["unsupported_nested_list"] = write(pa.table({
        "id": pa.array(range(30), pa.int32()),
        "tags": pa.array([[f"t{j}" for j in range(i % 4)] for i in range(30)], pa.list_(pa.string())),
    }), compression="none")
    seeds["unsupported_float16"] = write(pa.table({
        "h": pa.array([i / 4 for i in range(40)], pa.float16()),
        "id": pa.array(range(40), pa.int32()),
    }), compression="none")
    return seeds


def footer_seeds(reader):
    """FileMetaData bytes of some reader seeds, and single page headers."""
    seeds = {}
    for name in ["codec_zstd", "many_row_groups", "decimals_fixed", "timestamps", "strings",
                 "statistics_off", "key_value_metadata", "empty", "legacy_version_1_0",
                 "unsupported_nested_list", "integer_widths"]:
        seeds[f"footer_{name}"], _ = split_file(reader[name])

    wanted = {
        ("codec_none", 2): "page_dictionary",
        ("codec_none", 0): "page_v1",
        ("page_v2_plain", 3): "page_v2",
        ("page_checksums", 0): "page_v1_crc",
        ("page_checksums_v2", 3): "page_v2_crc",
    }
    for (name, page_type), out in wanted.items():
        data = reader[name]
        footer, _ = split_file(data)
        for _, _, cmd in column_chunks(footer):
            found = [hb for _, h, hb, _ in pages(data, cmd) if field(h, 1)[2] == page_type]
            if found:
                seeds[out] = found[0]
                break
        else:
            raise RuntimeError(f"no page of type {page_type} in {name}")
    return seeds


def replace_dir(path, seeds, suffix):
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    for name, data in sorted(seeds.items()):
        with open(os.path.join(path, name + suffix), "wb") as f:
            f.write(data)


def main():
    reader = reader_seeds()
    # Every seed but the deliberately unsupported ones must read back in pyarrow.
    for name, data in reader.items():
        if not name.startswith("unsupported_"):
            pq.read_table(io.BytesIO(data))
    footer = footer_seeds(reader)
    replace_dir(READER_DIR, reader, ".parquet")
    replace_dir(FOOTER_DIR, footer, ".bin")
    total = sum(map(len, reader.values())) + sum(map(len, footer.values()))
    print(f"make-fuzz-corpus: {len(reader)} Parquet files, {len(footer)} footer/page-header files, "
          f"{total} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
