"""Deterministic test data for the Parquet interop tests.

Values are generated as raw values (see parquet_values: ints in the column's
unit, unscaled decimals, bytes), edge cases first, then seeded random ones,
so the same generator feeds both pyarrow (as Arrow arrays) and pqgen (as
rendered JSON rows).
"""

from __future__ import annotations

import decimal
import functools
import math
import random
import struct
import uuid
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from parquet_values import UNIT_NANOS

NULL_PATTERNS = ("none", "all", "alternating", "random10")

# Characters chosen to exercise JSON escaping and multi-byte UTF-8.
_CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
    '"\\/\n\t\r\x01\x1f\x7f'
    "éüßøÅ€£¥"
    "漢字カタカナ한국어"
    "😀🚀𝄞"
)
STRING_EDGES = ["", "a", "ä", "Hello, world", 'quote " backslash \\ slash /', "tab\tnewline\ncr\r",
                "\x01\x1f\x7f", "a\x00b", "日本語テキスト", "emoji 😀🎉", "x" * 300]
BINARY_EDGES = [b"", b"\x00", b"\xff" * 7, bytes(range(256)), b"abc"]
# Valid JSON documents for the JSON logical type.
JSON_EDGES = ['{"a":1}', "[1,2,3]", '"text"', "null", "3.5", '{"nested":{"k":["v",true,null]}}', "{}"]

# Days from the epoch of 0001-01-01 and 9999-12-31.
MIN_DAY = -719162
MAX_DAY = 2932896
MIN_SECOND = MIN_DAY * 86400
MAX_SECOND = MAX_DAY * 86400 + 86399


@dataclass(frozen=True)
class Gen:
    """What to generate: `what` is one of bool, int, float32, float64, string,
    json, binary, fixed, date, timestamp, time, decimal, uuid."""

    what: str
    bits: int = 64
    signed: bool = True
    unit: str = "us"
    width: int = 0  # fixed
    precision: int = 0  # decimal
    distinct: int = 0  # >0: draw from this many distinct values


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def _float_from_bits(bits: int, float32: bool) -> float:
    if float32:
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def edges(g: Gen) -> list:
    w = g.what
    if w == "bool":
        return [True, False]
    if w == "int":
        if g.signed:
            lo, hi = -(1 << (g.bits - 1)), (1 << (g.bits - 1)) - 1
            return [0, lo, hi, -1, 1, lo + 1, hi - 1]
        hi = (1 << g.bits) - 1
        return [0, hi, 1 << (g.bits - 1), (1 << (g.bits - 1)) - 1, 1, hi - 1]
    if w in ("float32", "float64"):
        f32 = w == "float32"
        vals = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.5, 0.1, 1 / 3, 100.0, 1e-7, 123456.789]
        if f32:
            vals += [_float_from_bits(1, True), _float_from_bits(0x7F7FFFFF, True), _float_from_bits(0x00800000, True),
                     16777216.0, 3.4e38]
        else:
            vals += [5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 1e300, 9007199254740993.0, 1e21, 1e22]
        return [float(np.float32(v)) if f32 else v for v in vals]
    if w == "string":
        return [s.encode() for s in STRING_EDGES]
    if w == "json":
        return [s.encode() for s in JSON_EDGES]
    if w == "binary":
        return list(BINARY_EDGES)
    if w == "fixed":
        return [b"\x00" * g.width, b"\xff" * g.width, bytes((i * 37) & 0xFF for i in range(g.width))]
    if w == "uuid":
        return [b"\x00" * 16, b"\xff" * 16, uuid.UUID("123e4567-e89b-12d3-a456-426614174000").bytes,
                uuid.UUID("ABCDEF01-2345-6789-ABCD-EF0123456789").bytes]
    if w == "date":
        return [0, -1, 1, MIN_DAY, MAX_DAY, 18262, 11016]  # 2020-01-01, 2000-02-29
    if w == "timestamp":
        per_sec = 10**9 // UNIT_NANOS[g.unit]
        if g.unit == "ns":
            lo, hi = -(1 << 63) + 1, (1 << 63) - 1
            return [0, -1, 1, lo, hi, 1_577_836_800 * per_sec + 123456789, 951_782_400 * per_sec]
        return [0, -1, 1, MIN_SECOND * per_sec, (MAX_SECOND + 1) * per_sec - 1,
                1_577_836_800 * per_sec + per_sec // 3, 951_782_400 * per_sec]  # 2020-01-01, 2000-02-29
    if w == "time":
        per_day = 86400 * (10**9 // UNIT_NANOS[g.unit])
        return [0, 1, per_day - 1, per_day // 2, 12345 * (10**9 // UNIT_NANOS[g.unit]) + 7]
    if w == "decimal":
        big = 10**g.precision - 1
        return [0, big, -big, 1, -1, big // 7, -(big // 3)]
    raise ValueError(g)


def _random_value(g: Gen, rnd: random.Random):
    w = g.what
    if w == "bool":
        return rnd.random() < 0.5
    if w == "int":
        if g.signed:
            bits = rnd.choice([g.bits, g.bits, max(g.bits // 2, 4), 4])
            return rnd.randint(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        bits = rnd.choice([g.bits, max(g.bits // 2, 4)])
        return rnd.randint(0, (1 << bits) - 1)
    if w in ("float32", "float64"):
        f32 = w == "float32"
        if rnd.random() < 0.5:
            v = round(rnd.uniform(-1000, 1000), rnd.randint(0, 4))
            return float(np.float32(v)) if f32 else v
        while True:
            v = _float_from_bits(rnd.getrandbits(32 if f32 else 64), f32)
            if not math.isnan(v):
                return v
    if w == "string":
        return "".join(rnd.choice(_CHARS) for _ in range(rnd.randint(0, 24))).encode()
    if w == "json":
        return ('{"k":%d,"s":"%s"}' % (rnd.randint(-10**6, 10**6), "".join(rnd.choice("abc") for _ in range(rnd.randint(0, 5))))).encode()
    if w == "binary":
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 40)))
    if w in ("fixed", "uuid"):
        return bytes(rnd.getrandbits(8) for _ in range(16 if w == "uuid" else g.width))
    if w == "date":
        return rnd.randint(-40000, 40000)
    if w == "timestamp":
        per_sec = 10**9 // UNIT_NANOS[g.unit]
        return rnd.randint(-2_000_000_000, 4_000_000_000) * per_sec + rnd.randint(0, per_sec - 1)
    if w == "time":
        return rnd.randint(0, 86400 * (10**9 // UNIT_NANOS[g.unit]) - 1)
    if w == "decimal":
        digits = rnd.randint(1, g.precision)
        return rnd.randint(-(10**digits - 1), 10**digits - 1)
    raise ValueError(g)


@functools.lru_cache(maxsize=256)
def _values_cached(g: Gen, n: int, seed: int) -> tuple:
    rnd = random.Random(seed)
    base = edges(g)
    if g.distinct:
        pool = base[: g.distinct]
        while len(pool) < g.distinct:
            pool.append(_random_value(g, rnd))
        return tuple(pool[i] if i < len(pool) else rnd.choice(pool) for i in range(n))
    return tuple(base[i] if i < len(base) else _random_value(g, rnd) for i in range(n))


def values(g: Gen, n: int, seed=0) -> list:
    """n raw values, edge cases first."""
    return list(_values_cached(g, n, _seed(g, seed)))


def null_mask(pattern: str, n: int, seed=0) -> list:
    """True where the row is null."""
    if pattern == "none":
        return [False] * n
    if pattern == "all":
        return [True] * n
    if pattern == "alternating":
        return [i % 2 == 1 for i in range(n)]
    if pattern == "random10":
        rnd = random.Random(_seed("nulls", n, seed))
        return [rnd.random() < 0.1 for _ in range(n)]
    raise ValueError(pattern)


def with_nulls(vals: list, pattern: str, seed=0) -> list:
    mask = null_mask(pattern, len(vals), seed)
    return [None if m else v for v, m in zip(vals, mask)]


# ------------------------------------------------------------ Arrow arrays


def _decimal(unscaled: int, scale: int) -> decimal.Decimal:
    sign = 1 if unscaled < 0 else 0
    return decimal.Decimal((sign, tuple(int(c) for c in str(abs(unscaled))), -scale))


def arrow_array(t: pa.DataType, raws: list) -> pa.Array:
    """An Arrow array of type t from raw values (None = null). Temporal raw
    values are in t's own unit."""
    mask = np.array([v is None for v in raws], dtype=bool)
    if isinstance(t, pa.BaseExtensionType):
        storage = arrow_array(t.storage_type, raws)
        return pa.ExtensionArray.from_storage(t, storage)
    if pa.types.is_dictionary(t):
        return arrow_array(t.value_type, raws).dictionary_encode().cast(t)
    if pa.types.is_floating(t):
        dtype = np.float32 if t == pa.float32() else np.float64
        data = np.array([0.0 if v is None else v for v in raws], dtype=dtype)
        return pa.array(data, type=t, mask=mask)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([None if v is None else v.decode() for v in raws], type=t)
    if pa.types.is_decimal(t):
        return pa.array([None if v is None else _decimal(v, t.scale) for v in raws], type=t)
    if pa.types.is_date64(t):
        return pa.array([None if v is None else v * 86_400_000 for v in raws], type=t)
    if pa.types.is_temporal(t):
        storage = pa.int32() if (pa.types.is_date32(t) or pa.types.is_time32(t)) else pa.int64()
        return pa.array(raws, type=storage).cast(t)
    return pa.array(raws, type=t)


# What each Arrow type is generated from (units follow the Arrow type).
def gen_for_arrow(t: pa.DataType, distinct=0) -> Gen:
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return Gen("uuid", distinct=distinct)
        if t.extension_name == "arrow.json":
            return Gen("json", distinct=distinct)
    if pa.types.is_dictionary(t):
        return gen_for_arrow(t.value_type, distinct=distinct or 20)
    if pa.types.is_boolean(t):
        return Gen("bool")
    if pa.types.is_integer(t):
        return Gen("int", bits=t.bit_width, signed=pa.types.is_signed_integer(t), distinct=distinct)
    if t == pa.float32():
        return Gen("float32", distinct=distinct)
    if t == pa.float64():
        return Gen("float64", distinct=distinct)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return Gen("string", distinct=distinct)
    if pa.types.is_fixed_size_binary(t):
        return Gen("fixed", width=t.byte_width, distinct=distinct)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return Gen("binary", distinct=distinct)
    if pa.types.is_date(t):
        return Gen("date", distinct=distinct)
    if pa.types.is_timestamp(t):
        return Gen("timestamp", unit=t.unit, distinct=distinct)
    if pa.types.is_time(t):
        return Gen("time", unit=t.unit, distinct=distinct)
    if pa.types.is_decimal(t):
        return Gen("decimal", precision=t.precision, distinct=distinct)
    raise ValueError(t)


def arrow_column(t: pa.DataType, n: int, pattern="random10", seed=0, distinct=0) -> pa.Array:
    g = gen_for_arrow(t, distinct)
    return arrow_array(t, with_nulls(values(g, n, seed), pattern, seed))
