"""Regenerates the encoding fixtures that test_encoding.c decodes.

pyarrow (parquet-cpp, an independent implementation) writes one-column
files with a single uncompressed DATA_PAGE_V2; this script walks the page
headers (Thrift compact protocol) and saves each data page's encoded bytes
beside the values pyarrow was given. Run from the repository root:

    .venv/bin/python lake/tests/data/encoding/generate.py

Outputs, per case NAME:
  NAME.page      the encoded values section (levels stripped), or for
                 *_levels the definition-level section
  NAME.expected  what decoding must yield: little-endian fixed-width values,
                 PLAIN byte arrays (u32 length + bytes), or one byte per level
"""
import io
import os
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


class Compact:
    """Just enough of the Thrift compact protocol to read page headers."""

    def __init__(self, data, pos):
        self.data, self.pos = data, pos

    def byte(self):
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self):
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result

    def zigzag(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, ftype):
        if ftype in (1, 2):
            return ftype == 1
        if ftype == 3:
            return self.byte()
        if ftype in (4, 5, 6):
            return self.zigzag()
        if ftype == 7:
            self.pos += 8
            return None
        if ftype == 8:
            n = self.varint()
            self.pos += n
            return None
        if ftype in (9, 10):
            head = self.byte()
            n, etype = head >> 4, head & 0x0F
            if n == 15:
                n = self.varint()
            return [self.value(etype) for _ in range(n)]
        if ftype == 12:
            return self.struct()
        raise ValueError("thrift type %d" % ftype)

    def struct(self):
        fields, last = {}, 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, ftype = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            fields[fid] = self.value(ftype)
            last = fid


def pages(path):
    raw = open(path, "rb").read()
    col = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start = col.dictionary_page_offset or col.data_page_offset
    end = start + col.total_compressed_size
    pos = start
    while pos < end:
        reader = Compact(raw, pos)
        header = reader.struct()
        body = raw[reader.pos:reader.pos + header[3]]
        yield header, body
        pos = reader.pos + header[3]


def data_page(table, **options):
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="NONE", data_page_version="2.0", write_statistics=False,
                   data_page_size=1 << 30, **options)
    path = os.path.join(HERE, "_tmp.parquet")
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    try:
        found = [(h, b) for h, b in pages(path) if h[1] == 3]
    finally:
        os.remove(path)
    assert len(found) == 1, "expected one data page, got %d" % len(found)
    header, body = found[0]
    v2 = header[8]
    levels = v2.get(5, 0) + v2.get(6, 0)
    return v2[4], body[:levels], body[levels:]


def save(name, page, expected):
    with open(os.path.join(HERE, name + ".page"), "wb") as f:
        f.write(page)
    with open(os.path.join(HERE, name + ".expected"), "wb") as f:
        f.write(expected)


def plain_bytes(values):
    return b"".join(struct.pack("<I", len(v)) + v for v in values)


ENCODING = {"DELTA_BINARY_PACKED": 5, "DELTA_LENGTH_BYTE_ARRAY": 6, "DELTA_BYTE_ARRAY": 7,
            "BYTE_STREAM_SPLIT": 9, "RLE_DICTIONARY": 8, "RLE": 3}


def case(name, array, encoding, **options):
    table = pa.table({"c": array})
    if encoding in ("RLE_DICTIONARY", "RLE"):
        enc, levels, values = data_page(table, use_dictionary=encoding == "RLE_DICTIONARY", **options)
    else:
        enc, levels, values = data_page(table, use_dictionary=False, column_encoding={"c": encoding}, **options)
    assert enc == ENCODING[encoding], (name, enc)
    return levels, values


def main():
    rng = np.random.default_rng(7)
    i64 = np.concatenate([
        np.cumsum(rng.integers(-1000, 1000, 700)),
        np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max] * 40),
        rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 300, dtype=np.int64),
        np.full(200, 42),
    ]).astype(np.int64)
    _, page = case("delta_i64", pa.array(i64, pa.int64()), "DELTA_BINARY_PACKED")
    save("delta_i64", page, i64.astype("<i8").tobytes())

    i32 = np.concatenate([
        np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max] * 33),
        rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, 500, dtype=np.int32),
        np.arange(300) * 3,
    ]).astype(np.int32)
    _, page = case("delta_i32", pa.array(i32, pa.int32()), "DELTA_BINARY_PACKED")
    save("delta_i32", page, i32.astype("<i4").tobytes())

    words = [("k%d-" % rng.integers(0, 50)).encode() * int(rng.integers(0, 4)) for _ in range(900)]
    _, page = case("dlba", pa.array(words, pa.binary()), "DELTA_LENGTH_BYTE_ARRAY")
    save("dlba", page, plain_bytes(words))

    urls = sorted(("https://example.org/%s/%d" % ("abc"[i % 3] * (i % 7), i * 37 % 1000)).encode()
                  for i in range(700))
    _, page = case("dba", pa.array(urls, pa.binary()), "DELTA_BYTE_ARRAY")
    save("dba", page, plain_bytes(urls))

    f64 = rng.normal(size=513)
    _, page = case("bss_f64", pa.array(f64, pa.float64()), "BYTE_STREAM_SPLIT")
    save("bss_f64", page, f64.astype("<f8").tobytes())

    f32 = rng.normal(size=333).astype(np.float32)
    _, page = case("bss_f32", pa.array(f32, pa.float32()), "BYTE_STREAM_SPLIT")
    save("bss_f32", page, f32.astype("<f4").tobytes())

    # Dictionary indices: 37 distinct values, in long runs and in noise;
    # pyarrow numbers dictionary entries in order of first appearance.
    choice = np.concatenate([np.repeat(rng.integers(0, 37, 40), rng.integers(1, 30, 40)),
                             rng.integers(0, 37, 2000)])
    labels = ["v%02d" % c for c in choice]
    order = {}
    for s in labels:
        order.setdefault(s, len(order))
    _, page = case("dict_indices", pa.array(labels, pa.string()), "RLE_DICTIONARY")
    save("dict_indices", page, np.array([order[s] for s in labels], "<u4").tobytes())

    # Definition levels of an optional column (bit width 1, no length prefix in v2).
    valid = np.concatenate([np.ones(100, bool), np.zeros(50, bool), rng.random(1000) < 0.7,
                            np.ones(3, bool)])
    ints = pa.array(np.arange(len(valid)), pa.int64(), mask=~valid)
    levels, _ = case("def_levels", ints, "DELTA_BINARY_PACKED")
    save("def_levels", levels, valid.astype(np.uint8).tobytes())

    # Booleans in a v2 page are RLE with a 4-byte length prefix.
    bools = np.concatenate([rng.random(500) < 0.5, np.ones(300, bool), rng.random(77) < 0.1])
    _, page = case("bool_rle", pa.array(bools, pa.bool_()), "RLE")
    save("bool_rle", page, bools.astype(np.uint8).tobytes())


if __name__ == "__main__":
    main()
