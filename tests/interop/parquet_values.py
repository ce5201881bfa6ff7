"""The rendering rules of `tierdb parquet cat`, written once in Python.

Every interop test compares values through this module. A column's Parquet
type (physical + logical, read from the footer by pyarrow) decides how its
values render; the values themselves come from an independent reader
(pyarrow or DuckDB) as Arrow arrays, or from the rendered rows we fed pqgen.

Values pass through one intermediate form, the *raw* value, so that Arrow
arrays, Parquet statistics and rendered text all meet in the same place:

    BOOLEAN                      -> bool
    integers, DATE, TIME,
    TIMESTAMP (incl. INT96)      -> int (logical value: unsigned is unsigned;
                                   times and timestamps in the column's unit,
                                   INT96 in nanoseconds; DATE in days)
    FLOAT, DOUBLE                -> float (float32 values held exactly)
    DECIMAL                      -> int, the unscaled value
    BYTE_ARRAY, FIXED, UUID      -> bytes

Rendering (the contract of `parquet cat`):
    null; true/false; integers as JSON integers; floats with the shortest
    digits that round-trip, "NaN"/"Infinity"/"-Infinity" as strings;
    decimals as strings with exactly `scale` digits after the point; strings
    as strings; binary and fixed as base64; date YYYY-MM-DD; timestamp
    YYYY-MM-DDTHH:MM:SS.ffffff (9 digits for nanos and INT96) + "Z" when
    UTC-adjusted; time HH:MM:SS.ffffff (9 digits for nanos); uuid lowercase
    8-4-4-4-12; JSON as a string.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import uuid
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

UNIT_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
PARQUET_UNIT = {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}
EPOCH = datetime.datetime(1970, 1, 1)


@dataclass(frozen=True)
class Kind:
    """How one Parquet column renders. `name` is one of: bool, int, float32,
    float64, string, json, binary, date, timestamp, time, decimal, uuid."""

    name: str
    signed: bool = True
    bits: int = 64
    unit: str = "us"  # timestamp/time: "ms", "us" or "ns"
    utc: bool = False  # timestamp
    int96: bool = False  # timestamp stored as INT96
    scale: int = 0  # decimal
    precision: int = 0  # decimal
    physical: str = ""

    @property
    def frac_digits(self) -> int:
        return 9 if (self.unit == "ns" or self.int96) else 6


def kind_of(col) -> Kind:
    """The Kind of a pyarrow.parquet.ColumnSchema (ParquetFile.schema.column(i))."""
    phys = col.physical_type
    lt = json.loads(col.logical_type.to_json()) if col.logical_type is not None else {}
    ltype = lt.get("Type", "None")
    conv = col.converted_type
    if phys == "INT96":
        return Kind("timestamp", unit="ns", int96=True, physical=phys)
    if ltype == "Timestamp":
        return Kind("timestamp", unit=PARQUET_UNIT[lt["timeUnit"]], utc=lt["isAdjustedToUTC"], physical=phys)
    if ltype == "Time":
        return Kind("time", unit=PARQUET_UNIT[lt["timeUnit"]], physical=phys)
    if ltype == "Date" or conv == "DATE":
        return Kind("date", physical=phys)
    if ltype == "Decimal" or conv == "DECIMAL":
        return Kind("decimal", scale=col.scale, precision=col.precision, physical=phys)
    if ltype == "UUID":
        return Kind("uuid", physical=phys)
    if ltype == "Int":
        return Kind("int", signed=lt["isSigned"], bits=lt["bitWidth"], physical=phys)
    if conv in ("TIMESTAMP_MILLIS", "TIMESTAMP_MICROS"):
        return Kind("timestamp", unit="ms" if conv == "TIMESTAMP_MILLIS" else "us", utc=True, physical=phys)
    if conv in ("TIME_MILLIS", "TIME_MICROS"):
        return Kind("time", unit="ms" if conv == "TIME_MILLIS" else "us", physical=phys)
    if conv in ("UINT_8", "UINT_16", "UINT_32", "UINT_64", "INT_8", "INT_16", "INT_32", "INT_64"):
        return Kind("int", signed=not conv.startswith("U"), bits=int(conv.split("_")[1]), physical=phys)
    if phys == "BOOLEAN":
        return Kind("bool", physical=phys)
    if phys in ("INT32", "INT64"):
        return Kind("int", bits=32 if phys == "INT32" else 64, physical=phys)
    if phys == "FLOAT":
        return Kind("float32", physical=phys)
    if phys == "DOUBLE":
        return Kind("float64", physical=phys)
    if phys == "BYTE_ARRAY":
        if ltype == "JSON" or conv == "JSON":
            return Kind("json", physical=phys)
        if ltype in ("String", "Enum") or conv in ("UTF8", "ENUM"):
            return Kind("string", physical=phys)
        return Kind("binary", physical=phys)
    if phys == "FIXED_LEN_BYTE_ARRAY":
        return Kind("binary", physical=phys)
    raise ValueError(f"no rendering rule for {col}")


def kinds_of_file(path) -> dict:
    """Column name -> Kind for every column of a Parquet file."""
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(path).schema
    return {schema.column(i).name: kind_of(schema.column(i)) for i in range(len(schema))}


# --------------------------------------------------------------- rendering


def _decimal_text(unscaled: int, scale: int) -> str:
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if scale == 0:
        return sign + digits
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def _clock_text(seconds_of_day: int, frac_nanos: int, digits: int) -> str:
    h, rem = divmod(seconds_of_day, 3600)
    m, s = divmod(rem, 60)
    frac = frac_nanos if digits == 9 else frac_nanos // 1000
    return f"{h:02d}:{m:02d}:{s:02d}.{frac:0{digits}d}"


def _date_text(days: int) -> str:
    d = datetime.date(1970, 1, 1) + datetime.timedelta(days=days)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def render(kind: Kind, raw):
    """The JSON value `parquet cat` prints for one raw value."""
    if raw is None:
        return None
    n = kind.name
    if n == "bool":
        return bool(raw)
    if n == "int":
        return int(raw)
    if n in ("float32", "float64"):
        x = float(raw)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x
    if n in ("string", "json"):
        return raw.decode("utf-8")
    if n == "binary":
        return base64.b64encode(raw).decode("ascii")
    if n == "uuid":
        return str(uuid.UUID(bytes=bytes(raw)))
    if n == "decimal":
        return _decimal_text(int(raw), kind.scale)
    if n == "date":
        return _date_text(int(raw))
    if n == "timestamp":
        nanos = int(raw) * UNIT_NANOS[kind.unit]
        secs, frac = divmod(nanos, 10**9)
        days, sod = divmod(secs, 86400)
        text = _date_text(days) + "T" + _clock_text(sod, frac, kind.frac_digits)
        return text + "Z" if kind.utc else text
    if n == "time":
        nanos = int(raw) * UNIT_NANOS[kind.unit]
        secs, frac = divmod(nanos, 10**9)
        return _clock_text(secs, frac, kind.frac_digits)
    raise ValueError(kind)


# ------------------------------------------------------ from rendered text


def parse_rendered(kind: Kind, value):
    """The raw value of a rendered value (the inverse of render)."""
    if value is None:
        return None
    n = kind.name
    if n == "bool":
        return bool(value)
    if n == "int":
        return int(value)
    if n in ("float32", "float64"):
        x = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(value, value)
        x = float(x)
        return float(np.float32(x)) if n == "float32" else x
    if n in ("string", "json"):
        return value.encode("utf-8")
    if n == "binary":
        return base64.b64decode(value, validate=True)
    if n == "uuid":
        return uuid.UUID(value).bytes
    if n == "decimal":
        d = decimal.Decimal(value)
        sign, digits, exp = d.as_tuple()
        assert exp == -kind.scale, (value, kind)
        unscaled = int("".join(map(str, digits)) or "0")
        return -unscaled if sign else unscaled
    if n == "date":
        return (datetime.date.fromisoformat(value) - datetime.date(1970, 1, 1)).days
    if n in ("timestamp", "time"):
        text = value[:-1] if value.endswith("Z") else value
        main, frac = text.split(".")
        frac_nanos = int(frac.ljust(9, "0"))
        if n == "timestamp":
            date_part, clock = main.split("T")
            days = _date_days(date_part)
        else:
            days, clock = 0, main
        h, m, s = (int(x) for x in clock.split(":"))
        nanos = ((days * 86400 + h * 3600 + m * 60 + s) * 10**9) + frac_nanos
        unit = UNIT_NANOS[kind.unit]
        assert nanos % unit == 0, (value, kind)
        return nanos // unit
    raise ValueError(kind)


def _date_days(text: str) -> int:
    return (datetime.date.fromisoformat(text) - datetime.date(1970, 1, 1)).days


# --------------------------------------------------------- from Arrow data


def _decimal_unscaled(d: decimal.Decimal, scale: int) -> int:
    sign, digits, exp = d.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    shift = exp + scale  # d = unscaled * 10**exp; we want * 10**-scale
    if shift >= 0:
        unscaled *= 10**shift
    else:
        q, r = divmod(unscaled, 10 ** (-shift))
        assert r == 0, (d, scale)
        unscaled = q
    return -unscaled if sign else unscaled


def _unit_convert(value: int, from_unit: str, to_unit: str) -> int:
    nanos = value * UNIT_NANOS[from_unit]
    q, r = divmod(nanos, UNIT_NANOS[to_unit])
    assert r == 0, f"{value} {from_unit} is not a whole number of {to_unit}"
    return q


def raw_from_arrow(kind: Kind, arr) -> list:
    """Raw values of an Arrow array (or chunked array) read from a column of this kind."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    t = arr.type
    n = kind.name
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        ints = arr.cast(pa.int32() if pa.types.is_time32(t) else pa.int64()).to_pylist()
        return [None if v is None else _unit_convert(v, t.unit, kind.unit) for v in ints]
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_date64(t):
        return [None if v is None else v // 86_400_000 for v in arr.cast(pa.int64()).to_pylist()]
    if pa.types.is_decimal(t):
        return [None if v is None else _decimal_unscaled(v, kind.scale) for v in arr.to_pylist()]
    if pa.types.is_floating(t):
        vals = arr.to_pylist()
        if n == "float32":
            return [None if v is None else float(np.float32(v)) for v in vals]
        return vals
    values = arr.to_pylist()
    if n in ("string", "json", "binary", "uuid"):
        out = []
        for v in values:
            if v is None:
                out.append(None)
            elif isinstance(v, str):
                out.append(uuid.UUID(v).bytes if n == "uuid" else v.encode("utf-8"))
            elif isinstance(v, uuid.UUID):
                out.append(v.bytes)
            else:
                out.append(bytes(v))
        return out
    if n == "int" and pa.types.is_integer(t):
        return values
    if n == "bool" and pa.types.is_boolean(t):
        return values
    raise TypeError(f"Arrow type {t} does not match Parquet kind {kind}")


def render_arrow(kind: Kind, arr) -> list:
    return [render(kind, v) for v in raw_from_arrow(kind, arr)]


def render_table(table, kinds: dict, columns=None) -> list:
    """Rows (lists of (name, value) pairs) rendered from an Arrow table."""
    names = list(columns) if columns is not None else table.column_names
    cols = [render_arrow(kinds[name], table.column(name)) for name in names]
    return [list(zip(names, vals)) for vals in zip(*cols)] if names else [[] for _ in range(table.num_rows)]


# ------------------------------------------------------------- statistics


def raw_from_stat(kind: Kind, value):
    """Raw value of a statistics min_raw / max_raw (physical) value."""
    if value is None:
        return None
    n = kind.name
    if n == "int" and not kind.signed:
        return int(value) & ((1 << (32 if kind.physical == "INT32" else 64)) - 1)
    if n == "decimal" and isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big", signed=True)
    if n == "float32":
        return float(np.float32(value))
    if n in ("string", "json", "binary", "uuid") and isinstance(value, str):
        return value.encode("utf-8")
    return value


def stat_key(kind: Kind, raw):
    """Ordering of raw values used for Parquet min/max: numeric for numbers,
    unsigned byte-wise for byte arrays, numeric for decimals."""
    if kind.name in ("float32", "float64"):
        return float(raw)
    return raw


def expected_min_max(kind: Kind, raws):
    """(min, max) over the non-null, non-NaN raw values, or None when there are none."""
    vals = [v for v in raws if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return None
    return min(vals, key=lambda v: stat_key(kind, v)), max(vals, key=lambda v: stat_key(kind, v))


# ------------------------------------------------- comparing cat's output


class Number(str):
    """A JSON number token kept as its text, so that -0, digit counts and
    integer-vs-float syntax can be checked."""


def parse_cat_line(line: str) -> list:
    """One line of `parquet cat` output as a list of (key, value) pairs in
    order; numbers stay Number tokens. Duplicate keys are an error."""
    obj = json.loads(
        line,
        parse_int=Number,
        parse_float=Number,
        parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"non-JSON constant {c}")),
        object_pairs_hook=lambda pairs: pairs,
    )
    if not isinstance(obj, list):
        raise ValueError(f"not a JSON object: {line!r}")
    names = [k for k, _ in obj]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate keys in {line!r}")
    return obj


def _significant_digits(text: str) -> str:
    mantissa = text.lower().lstrip("-").split("e")[0].replace(".", "")
    return mantissa.strip("0") or "0"


def shortest_repr(x: float, float32: bool) -> str:
    if float32:
        return np.format_float_scientific(np.float32(x), unique=True)
    return repr(x)


def value_mismatch(kind: Kind, expected, actual):
    """None when cat's `actual` (from parse_cat_line) is exactly the rendering
    `expected` (from render); otherwise a short description of the difference."""
    if expected is None or isinstance(expected, (str, bool)):
        if type(actual) is not type(expected) or actual != expected:
            return f"expected {expected!r}, got {actual!r}"
        return None
    if not isinstance(actual, Number):
        return f"expected number {expected!r}, got {actual!r}"
    if kind.name == "int" or isinstance(expected, int):
        if any(c in actual for c in ".eE") or int(actual) != expected:
            return f"expected integer {expected}, got {actual}"
        return None
    # a finite float
    got = float(actual)
    is32 = kind.name == "float32"
    if is32:
        got = float(np.float32(got))
    if got != expected or math.copysign(1.0, got) != math.copysign(1.0, expected):
        return f"expected {shortest_repr(expected, is32)}, got {actual}"
    want_digits = _significant_digits(shortest_repr(expected, is32))
    if len(_significant_digits(actual)) != len(want_digits):
        return f"{actual} is not the shortest round-trip form of {shortest_repr(expected, is32)}"
    return None


def compare_rows(kinds: dict, expected_rows: list, actual_rows: list, context: str = "") -> None:
    """Asserts cat's rows equal the expected rendered rows: same count, same
    keys in the same order, every value exactly as rendered. Reports the
    first few differences."""
    problems = []
    if len(actual_rows) != len(expected_rows):
        problems.append(f"row count: expected {len(expected_rows)}, got {len(actual_rows)}")
    for i, (exp, act) in enumerate(zip(expected_rows, actual_rows)):
        exp_names = [k for k, _ in exp]
        act_names = [k for k, _ in act]
        if exp_names != act_names:
            problems.append(f"row {i}: keys {act_names}, expected {exp_names}")
        else:
            for (name, e), (_, a) in zip(exp, act):
                if a == e and type(a) is type(e):  # strings, null, booleans: the common case, decided here
                    continue
                why = value_mismatch(kinds[name], e, a)
                if why:
                    problems.append(f"row {i} column {name!r}: {why}")
        if len(problems) >= 8:
            break
    assert not problems, (context + ": " if context else "") + "; ".join(problems)


def rendered_equal(kind: Kind, a, b) -> bool:
    """Equality of two rendered values (floats: NaN is rendered as a string,
    -0.0 and 0.0 differ)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return type(a) is type(b) and a == b


def compare_rendered(kinds: dict, expected_rows: list, actual_rows: list, context: str = "") -> None:
    """Like compare_rows, for two lists of rendered rows (no Number tokens)."""
    problems = []
    if len(actual_rows) != len(expected_rows):
        problems.append(f"row count: expected {len(expected_rows)}, got {len(actual_rows)}")
    for i, (exp, act) in enumerate(zip(expected_rows, actual_rows)):
        if [k for k, _ in exp] != [k for k, _ in act]:
            problems.append(f"row {i}: keys {[k for k, _ in act]}, expected {[k for k, _ in exp]}")
            continue
        for (name, e), (_, a) in zip(exp, act):
            if not rendered_equal(kinds[name], e, a):
                problems.append(f"row {i} column {name!r}: expected {e!r}, got {a!r}")
        if len(problems) >= 8:
            break
    assert not problems, (context + ": " if context else "") + "; ".join(problems)


# ------------------------------------------------- `parquet schema --json`

_LOGICAL_NAMES = {"String": "STRING", "Enum": "ENUM", "JSON": "JSON", "Date": "DATE", "Timestamp": "TIMESTAMP",
                  "Time": "TIME", "Decimal": "DECIMAL", "UUID": "UUID", "Int": "INT"}
_UNIT_NAMES = {"milliseconds": "MILLIS", "microseconds": "MICROS", "nanoseconds": "NANOS"}


def _codec_name(pyarrow_name: str) -> str:
    # pyarrow calls LZ4_RAW "LZ4"; it cannot write the old Hadoop-framed LZ4.
    return "LZ4_RAW" if pyarrow_name == "LZ4" else pyarrow_name


def schema_json_mismatches(doc, path) -> list:
    """Differences between `tierdb parquet schema --json` output (parsed with
    Number tokens, see load_schema_json) and the file's footer as pyarrow
    reads it."""
    import pyarrow.parquet as pq

    pfile = pq.ParquetFile(path)
    meta = pfile.metadata
    pschema = pfile.schema
    arrow_schema = pq.read_schema(path)
    problems = []

    def same(what, got, want):
        if got != want:
            problems.append(f"{what}: {got!r}, expected {want!r}")

    same("num_rows", int(doc["num_rows"]), meta.num_rows)
    same("num_row_groups", int(doc["num_row_groups"]), meta.num_row_groups)
    same("created_by", doc.get("created_by"), meta.created_by)
    same("metadata", doc.get("metadata") or {},
         {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()})
    same("column names", [c["name"] for c in doc["columns"]], [pschema.column(i).name for i in range(len(pschema))])
    kinds = []
    for i, col in enumerate(doc["columns"][: len(pschema)]):
        pc = pschema.column(i)
        kinds.append(kind_of(pc))
        where = f"column {pc.name}"
        same(f"{where} physical_type", col["physical_type"], pc.physical_type)
        same(f"{where} required", col["required"], pc.max_definition_level == 0)
        fid = (arrow_schema.field(pc.name).metadata or {}).get(b"PARQUET:field_id")
        same(f"{where} field_id", None if col.get("field_id") is None else int(col["field_id"]),
             None if fid is None else int(fid))
        if pc.physical_type == "FIXED_LEN_BYTE_ARRAY":
            same(f"{where} type_length", int(col["type_length"]), pc.length)
        if pc.physical_type == "INT96":
            continue
        lt = json.loads(pc.logical_type.to_json())
        want_logical = _LOGICAL_NAMES.get(lt["Type"])
        if lt["Type"] != "Float16":
            same(f"{where} logical_type", col.get("logical_type"), want_logical)
        if want_logical == "DECIMAL":
            same(f"{where} precision/scale", (int(col["precision"]), int(col["scale"])), (pc.precision, pc.scale))
        if want_logical in ("TIMESTAMP", "TIME"):
            same(f"{where} unit", col.get("unit"), _UNIT_NAMES[lt["timeUnit"]])
        if want_logical == "TIMESTAMP":
            same(f"{where} utc_adjusted", col.get("utc_adjusted"), lt["isAdjustedToUTC"])
        if want_logical == "INT":
            same(f"{where} bit_width/signed", (int(col["bit_width"]), col["signed"]), (lt["bitWidth"], lt["isSigned"]))
    for rg in range(min(meta.num_row_groups, len(doc["row_groups"]))):
        rg_doc, rg_meta = doc["row_groups"][rg], meta.row_group(rg)
        same(f"row group {rg} num_rows", int(rg_doc["num_rows"]), rg_meta.num_rows)
        for j, chunk in enumerate(rg_doc["columns"][: rg_meta.num_columns]):
            cm = rg_meta.column(j)
            where = f"row group {rg} column {cm.path_in_schema}"
            same(f"{where} codec", chunk["codec"], _codec_name(cm.compression))
            same(f"{where} encodings", sorted(chunk["encodings"]), sorted(cm.encodings))
            same(f"{where} num_values", int(chunk["num_values"]), cm.num_values)
            same(f"{where} compressed_size", int(chunk["compressed_size"]), cm.total_compressed_size)
            same(f"{where} uncompressed_size", int(chunk["uncompressed_size"]), cm.total_uncompressed_size)
            st = cm.statistics
            got_nulls = chunk.get("null_count")
            want_nulls = st.null_count if st is not None and st.has_null_count else None
            same(f"{where} null_count", None if got_nulls is None else int(got_nulls), want_nulls)
            kind = kinds[j]
            if kind.int96:  # INT96 statistics have no defined order; writers leave them out
                continue
            if st is not None and st.has_min_max:
                for side, raw in (("min", st.min_raw), ("max", st.max_raw)):
                    want = render(kind, raw_from_stat(kind, raw))
                    got = chunk.get(side)
                    why = None if (got == want and type(got) is type(want)) else value_mismatch(kind, want, got)
                    if why:
                        problems.append(f"{where} {side}: {why}")
            else:
                for side in ("min", "max"):
                    if chunk.get(side) is not None:
                        problems.append(f"{where} {side}: {chunk.get(side)!r} where pyarrow sees no min/max")
    same("row group count in the JSON", len(doc["row_groups"]), meta.num_row_groups)
    return problems


def load_schema_json(text: str):
    return json.loads(text, parse_int=Number, parse_float=Number)
