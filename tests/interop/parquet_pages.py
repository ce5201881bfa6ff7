"""An independent look at the pages of a column chunk.

pyarrow does not expose page headers, so this reads them with a small
Thrift compact-protocol decoder (written from the Thrift spec, separately
from the C code under test). Tests use it to prove that writer options took
effect: the number of pages, dictionary pages, and CRCs.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import pyarrow.parquet as pq

PAGE_TYPES = {0: "DATA_PAGE", 1: "INDEX_PAGE", 2: "DICTIONARY_PAGE", 3: "DATA_PAGE_V2"}
ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
             6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}


class _Compact:
    def __init__(self, data: bytes, pos: int):
        self.data = data
        self.pos = pos
        self.int_fields = []  # (start, end) of every integer value read, in order

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, ttype: int):
        if ttype in (1, 2):  # bool inside a struct field header
            return ttype == 1
        if ttype == 3:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ttype in (4, 5, 6):
            start = self.pos
            v = self.zigzag()
            self.int_fields.append((start, self.pos))
            return v
        if ttype == 7:
            self.pos += 8
            return None
        if ttype == 8:
            n = self.varint()
            v = self.data[self.pos:self.pos + n]
            self.pos += n
            return v
        if ttype in (9, 10):
            head = self.byte()
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            out = []
            for _ in range(size):
                out.append(self.byte() == 1 if etype in (1, 2) else self.value(etype))
            return out
        if ttype == 11:
            size = self.varint()
            if size:
                kv = self.byte()
                for _ in range(size):
                    self.value(kv >> 4)
                    self.value(kv & 0x0F)
            return None
        if ttype == 12:
            return self.struct()
        raise ValueError(f"bad thrift type {ttype} at {self.pos}")

    def struct(self) -> dict:
        fields, last = {}, 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, ttype = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            fields[fid] = self.value(ttype)
            last = fid


@dataclass
class Page:
    type: str
    num_values: int
    encoding: str
    compressed_size: int
    crc: int | None  # as stored (signed 32-bit), None when absent
    crc_ok: bool | None  # whether crc matches the page's bytes
    offset: int  # where the page (its header) starts in the file
    body_offset: int  # where its bytes after the header start


def column_chunk_pages(path, row_group: int, column: int) -> list:
    """The pages of one column chunk, in file order."""
    meta = pq.ParquetFile(path).metadata.row_group(row_group).column(column)
    start = meta.data_page_offset
    if meta.has_dictionary_page and meta.dictionary_page_offset is not None and meta.dictionary_page_offset > 0:
        start = min(start, meta.dictionary_page_offset)
    end = start + meta.total_compressed_size
    data = open(path, "rb").read()
    pages, pos = [], start
    while pos < end:
        reader = _Compact(data, pos)
        header = reader.struct()
        body_start = reader.pos
        ptype = PAGE_TYPES.get(header[1], str(header[1]))
        size = header[3]
        sub = header.get(5) or header.get(7) or header.get(8) or {}
        if ptype == "DATA_PAGE_V2":
            encoding = ENCODINGS.get(sub.get(4), sub.get(4))
        else:
            encoding = ENCODINGS.get(sub.get(2), sub.get(2))
        crc = header.get(4)
        crc_ok = None
        if crc is not None:
            crc_ok = (zlib.crc32(data[body_start:body_start + size]) & 0xFFFFFFFF) == (crc & 0xFFFFFFFF)
        pages.append(Page(ptype, sub.get(1, 0), encoding, size, crc, crc_ok, pos, body_start))
        pos = body_start + size
    assert pos == end, f"pages of column {column} in row group {row_group} end at {pos}, chunk ends at {end}"
    return pages


def zigzag_varint(value: int) -> bytes:
    """The Thrift compact encoding of a signed integer (up to 64 bits)."""
    z = ((value << 1) ^ (value >> 63)) & ((1 << 64) - 1)
    out = bytearray()
    while True:
        if z < 0x80:
            out.append(z)
            return bytes(out)
        out.append((z & 0x7F) | 0x80)
        z >>= 7


def footer_int_fields(data: bytes) -> list:
    """(start, end) byte ranges of every integer in a Parquet file's footer."""
    footer_len = int.from_bytes(data[-8:-4], "little")
    reader = _Compact(data, len(data) - 8 - footer_len)
    reader.struct()
    return reader.int_fields


def replace_footer_int(data: bytes, field: tuple, value: int) -> bytes:
    """The file with one footer integer re-encoded as `value` and the footer
    length fixed up, so the footer still parses as Thrift."""
    start, end = field
    footer_len = int.from_bytes(data[-8:-4], "little")
    new = zigzag_varint(value)
    body = data[:start] + new + data[end:-8]
    return body + (footer_len + len(new) - (end - start)).to_bytes(4, "little") + b"PAR1"
