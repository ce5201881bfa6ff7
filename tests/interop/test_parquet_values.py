"""The Python rendering rules themselves (parquet_values), checked against
hand-written examples and against pyarrow's own Python conversions, so that
a bug in the test oracle cannot hide a bug in the code under test. Needs no
build."""

from __future__ import annotations

import datetime
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_values import (
    Kind,
    Number,
    kinds_of_file,
    parse_cat_line,
    parse_rendered,
    raw_from_arrow,
    render,
    value_mismatch,
)
from sample_data import MAX_DAY, MIN_DAY, Gen, arrow_array, values

TS_US_UTC = Kind("timestamp", unit="us", utc=True)


@pytest.mark.parametrize(
    "kind,raw,text",
    [
        (Kind("decimal", scale=2), -5, "-0.05"),
        (Kind("decimal", scale=2), 5, "0.05"),
        (Kind("decimal", scale=0), -123, "-123"),
        (Kind("decimal", scale=3), -123456, "-123.456"),
        (Kind("decimal", scale=3), 0, "0.000"),
        (Kind("decimal", scale=38), 10**38 - 1, "0." + "9" * 38),
        (Kind("date"), 0, "1970-01-01"),
        (Kind("date"), -1, "1969-12-31"),
        (Kind("date"), MIN_DAY, "0001-01-01"),
        (Kind("date"), MAX_DAY, "9999-12-31"),
        (TS_US_UTC, -1, "1969-12-31T23:59:59.999999Z"),
        (Kind("timestamp", unit="ms"), 1500, "1970-01-01T00:00:01.500000"),
        (Kind("timestamp", unit="ns"), -1, "1969-12-31T23:59:59.999999999"),
        (Kind("timestamp", unit="ns", int96=True), 10**9, "1970-01-01T00:00:01.000000000"),
        (Kind("timestamp", unit="us"), -62135596800 * 10**6, "0001-01-01T00:00:00.000000"),
        (Kind("time", unit="ms"), 86399999, "23:59:59.999000"),
        (Kind("time", unit="ns"), 1, "00:00:00.000000001"),
        (Kind("uuid"), bytes.fromhex("123E4567E89B12D3A456426614174000"), "123e4567-e89b-12d3-a456-426614174000"),
        (Kind("binary"), b"\x00\xff", "AP8="),
        (Kind("string"), "é\x00".encode(), "é\x00"),
        (Kind("float64"), math.nan, "NaN"),
        (Kind("float32"), -math.inf, "-Infinity"),
        (Kind("int", signed=False), 2**64 - 1, 2**64 - 1),
    ],
)
def test_render_examples(kind, raw, text):
    assert render(kind, raw) == text
    back = parse_rendered(kind, text)
    assert back == raw or (isinstance(raw, float) and math.isnan(raw) and math.isnan(back))


def test_value_mismatch_rules():
    f32, f64, i = Kind("float32"), Kind("float64"), Kind("int")
    assert value_mismatch(f32, float(__import__("numpy").float32(0.1)), Number("0.1")) is None
    assert value_mismatch(f32, float(__import__("numpy").float32(0.1)), Number("0.10000000149011612")) is not None
    assert value_mismatch(f64, 0.1, Number("0.1")) is None
    assert value_mismatch(f64, 0.1, Number("0.10000000000000001")) is not None
    assert value_mismatch(f64, 1e300, Number("1e+300")) is None
    assert value_mismatch(f64, 100.0, Number("100")) is None
    assert value_mismatch(f64, 100.0, Number("100.0")) is None
    assert value_mismatch(f64, -0.0, Number("-0.0")) is None
    assert value_mismatch(f64, -0.0, Number("0.0")) is not None
    assert value_mismatch(f64, 0.0, Number("-0")) is not None
    assert value_mismatch(i, 5, Number("5")) is None
    assert value_mismatch(i, 5, Number("5.0")) is not None
    assert value_mismatch(i, 5, "5") is not None
    assert value_mismatch(Kind("bool"), True, Number("1")) is not None
    assert value_mismatch(Kind("string"), None, "null") is not None
    assert value_mismatch(f64, "NaN", "NaN") is None
    assert value_mismatch(f64, "NaN", None) is not None


def test_parse_cat_line_keeps_order_and_tokens():
    row = parse_cat_line('{"b": -0.0, "a": 1, "c": null, "d": "x"}')
    assert [k for k, _ in row] == ["b", "a", "c", "d"]
    assert row[0][1] == "-0.0" and isinstance(row[0][1], Number)
    with pytest.raises(ValueError):
        parse_cat_line('{"a": 1, "a": 2}')
    with pytest.raises(ValueError):
        parse_cat_line('{"a": NaN}')


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
@pytest.mark.parametrize("tz", [None, "UTC", "Asia/Tokyo"])
def test_timestamps_agree_with_pyarrow_datetimes(tmp_path, unit, tz):
    t = pa.timestamp(unit, tz=tz)
    raws = values(Gen("timestamp", unit=unit), 500, seed="ts")
    if tz not in (None, "UTC"):  # Python datetimes cannot shift year 9999 into Tokyo time
        per_sec = {"s": 1, "ms": 10**3, "us": 10**6}[unit]
        raws = [r for r in raws if abs(r) < 200_000_000_000 * per_sec]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"t": arrow_array(t, raws)}), path)
    kind = kinds_of_file(path)["t"]
    assert kind.utc == (tz is not None)
    col = pq.read_table(path).column("t")
    for raw, dt in zip(raw_from_arrow(kind, col), col.to_pylist()):
        if tz is not None:
            dt = dt.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        text = render(kind, raw)
        want = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt:%H:%M:%S}.{dt.microsecond:06d}"
        assert text == want + ("Z" if tz else "")


def test_dates_times_decimals_agree_with_pyarrow(tmp_path):
    n = 500
    table = pa.table({
        "d": arrow_array(pa.date32(), values(Gen("date"), n)),
        "t": arrow_array(pa.time64("us"), values(Gen("time", unit="us"), n)),
        "m": arrow_array(pa.decimal128(38, 7), values(Gen("decimal", precision=38), n)),
        "u": arrow_array(pa.uint64(), values(Gen("int", bits=64, signed=False), n)),
    })
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    kinds = kinds_of_file(path)
    back = pq.read_table(path)
    for name, fmt in [("d", lambda v: v.isoformat()), ("t", lambda v: v.isoformat(timespec="microseconds")),
                      ("m", lambda v: str(v) if "E" not in str(v) else format(v, "f")), ("u", lambda v: v)]:
        col = back.column(name)
        got = [render(kinds[name], r) for r in raw_from_arrow(kinds[name], col)]
        want = [fmt(v) for v in col.to_pylist()]
        assert got == want, name


@pytest.mark.parametrize("what", ["int", "float32", "float64", "string", "binary", "fixed", "date", "timestamp",
                                  "time", "decimal", "uuid", "json"])
def test_parse_rendered_inverts_render(what):
    g = Gen(what, width=5, precision=20, unit="ns" if what == "time" else "us")
    kind = {"fixed": Kind("binary"), "json": Kind("json")}.get(what) or Kind(
        what if what not in ("fixed",) else "binary", scale=4, unit=g.unit)
    for raw in values(g, 300):
        back = parse_rendered(kind, render(kind, raw))
        assert back == raw or (isinstance(raw, float) and math.isnan(raw) and math.isnan(back)), raw
