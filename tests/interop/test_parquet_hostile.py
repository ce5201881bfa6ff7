"""Broken and hostile files given to `tierdb parquet cat` (and `schema`).

Valid files written by pyarrow and by pqgen are truncated at many offsets and
mutated at a few hundred seeded random places. Each run must end on its own
within a few seconds with exit 0 or 1 (never a signal, a hang or a usage
error), and an exit 1 must explain itself on stderr with a message that
starts with "tierdb:". Failing inputs are kept under the test's tmp dir and
named in the assertion message so they can be replayed by hand.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_pages import column_chunk_pages, footer_int_fields, replace_footer_int
from parquet_values import Kind, render
from sample_data import Gen, arrow_column, values

RUN_TIMEOUT = 5  # seconds for one run; a valid read of these files takes milliseconds
MUTATIONS_PER_FILE = 60
FOOTER_LIES_PER_FILE = 40
# Address space for one run: a reader that sizes an allocation by a lying
# field fails (and is caught) instead of quietly succeeding on this machine.
MEMORY_LIMIT = 2 << 30


def _pyarrow_table(n=600):
    types = {
        "i32": pa.int32(), "i64": pa.int64(), "u64": pa.uint64(), "f": pa.float32(), "d": pa.float64(),
        "b": pa.bool_(), "s": pa.string(), "bin": pa.binary(), "fx": pa.binary(5), "dec": pa.decimal128(20, 3),
        "dec9": pa.decimal128(9, 2), "ts": pa.timestamp("us", tz="UTC"), "dt": pa.date32(), "tm": pa.time64("ns"),
        "u": pa.uuid(),
    }
    return pa.table({name: arrow_column(t, n, "random10", seed=name, distinct=0 if i % 2 else 12)
                     for i, (name, t) in enumerate(types.items())})


# name -> write_table options; together they reach every decoder.
PYARROW_VARIANTS = {
    "dict_snappy_v1": dict(compression="snappy"),
    "plain_none_v2": dict(compression="none", use_dictionary=False, data_page_version="2.0"),
    "delta_none": dict(compression="none", use_dictionary=False,
                       column_encoding={"i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED",
                                        "u64": "DELTA_BINARY_PACKED", "s": "DELTA_BYTE_ARRAY",
                                        "bin": "DELTA_LENGTH_BYTE_ARRAY", "f": "BYTE_STREAM_SPLIT",
                                        "d": "BYTE_STREAM_SPLIT", "fx": "BYTE_STREAM_SPLIT",
                                        "dec": "DELTA_BYTE_ARRAY", "ts": "DELTA_BINARY_PACKED"}),
    "dict_none_v2_pages": dict(compression="none", data_page_version="2.0", data_page_size=512, write_batch_size=32),
    "gzip_int96": dict(compression="gzip", use_deprecated_int96_timestamps=True, row_group_size=200),
    "zstd_crc": dict(compression="zstd", write_page_checksum=True),
    "lz4_brotli": dict(compression={"i32": "lz4", "s": "brotli"}, use_dictionary=["s"]),
}

PQGEN_SCHEMA = [
    {"name": "i", "type": "int64", "required": True, "field_id": 1},
    {"name": "s", "type": "string", "field_id": 2},
    {"name": "d", "type": "double", "field_id": 3},
    {"name": "m", "type": "decimal(30,4)", "field_id": 4},
    {"name": "t", "type": "timestamptz", "field_id": 5},
    {"name": "b", "type": "boolean", "field_id": 6},
    {"name": "u", "type": "uuid", "field_id": 7},
]

# name -> pqgen options.
PQGEN_VARIANTS = {
    "pqgen_zstd_dict": ["--codec", "zstd"],
    "pqgen_none_plain_crc": ["--codec", "none", "--no-dictionary", "--crc", "--page-rows", 100],
    "pqgen_snappy_groups": ["--codec", "snappy", "--row-group-rows", 150, "--dictionary-bytes", 200],
}


def _pqgen_rows(n=600):
    gens = {"i": (Gen("int"), Kind("int")), "s": (Gen("string", distinct=30), Kind("string")),
            "d": (Gen("float64"), Kind("float64")), "m": (Gen("decimal", precision=30), Kind("decimal", scale=4)),
            "t": (Gen("timestamp"), Kind("timestamp", utc=True)), "b": (Gen("bool"), Kind("bool")),
            "u": (Gen("uuid"), Kind("uuid"))}
    cols = {k: values(g, n, seed=k) for k, (g, _) in gens.items()}
    rnd = random.Random(7)
    rows = []
    for r in range(n):
        row = {}
        for k, (_, kind) in gens.items():
            if k == "i" or rnd.random() > 0.1:
                row[k] = render(kind, cols[k][r])
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def valid_files(tmp_path_factory):
    """name -> bytes of every valid source file."""
    directory = tmp_path_factory.mktemp("hostile_src")
    table = _pyarrow_table()
    files = {}
    for name, options in PYARROW_VARIANTS.items():
        path = directory / f"{name}.parquet"
        pq.write_table(table, path, **options)
        files[name] = path.read_bytes()
    return files


def _classify(proc) -> str | None:
    """None if the run behaved; otherwise what went wrong."""
    if proc.returncode < 0:
        return f"killed by signal {-proc.returncode}"
    if proc.returncode not in (0, 1):
        return f"exit {proc.returncode}"
    if proc.returncode == 1:
        err = proc.stderr.decode(errors="replace")
        if not err.startswith("tierdb:"):
            return f"exit 1 without a 'tierdb:' message (stderr: {err[:200]!r})"
        if len(err.strip()) <= len("tierdb:"):
            return "exit 1 with an empty message"
        if "out of memory" in err.lower() or "cannot allocate" in err.lower():
            return f"ran out of memory: an allocation sized by an untrusted field? ({err[:200]!r})"
    return None


def _memory_limited(argv: list) -> list:
    # prlimit (util-linux) rather than a preexec_fn, which would make every
    # spawn fork the whole test process. Sanitizer builds reserve terabytes
    # of address space, so they run unlimited.
    if os.environ.get("ASAN_OPTIONS") or not shutil.which("prlimit"):
        return argv
    return ["prlimit", f"--as={MEMORY_LIMIT}", "--", *argv]


def _run(tierdb_bin, *args):
    try:
        proc = subprocess.run(_memory_limited([str(tierdb_bin), *map(str, args)]), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"no exit within {RUN_TIMEOUT} s", None
    return _classify(proc), proc


def _check_inputs(tierdb_bin, directory, label, inputs, commands=(("cat",),)):
    """inputs: list of (description, bytes). Runs every command on each and
    collects every misbehaviour."""
    failures = []
    exit_codes = {0: 0, 1: 0}
    for i, (desc, data) in enumerate(inputs):
        path = directory / f"{label}_{i}.parquet"
        path.write_bytes(data)
        for cmd in commands:
            problem, proc = _run(tierdb_bin, "parquet", cmd[0], path, *cmd[1:])
            if problem:
                failures.append(f"{' '.join(cmd)} on {path} ({desc}): {problem}")
            else:
                exit_codes[proc.returncode] += 1
        if not any(str(path) in f for f in failures):
            path.unlink()
    assert not failures, f"{len(failures)} bad runs, first ones:\n" + "\n".join(failures[:15])
    return exit_codes


def _truncations(data: bytes) -> list:
    size = len(data)
    footer_len = struct.unpack("<I", data[-8:-4])[0]
    footer_start = size - 8 - footer_len
    offsets = set(range(0, 16)) | set(range(size - 48, size))  # the magic, the footer length, the footer's end
    offsets |= {footer_start - 8 + footer_len * k // 100 for k in range(100)}  # across the footer
    offsets |= {size * k // 40 for k in range(40)}  # across the pages
    return [(f"truncated to {o} of {size} bytes", data[:o]) for o in sorted(offsets) if o < size]


def _mutations(data: bytes, seed: str, count: int) -> list:
    rnd = random.Random(seed)
    size = len(data)
    footer_len = struct.unpack("<I", data[-8:-4])[0]
    footer_start = size - 8 - footer_len
    out = []
    for k in range(count):
        buf = bytearray(data)
        edits = []
        for _ in range(rnd.choice([1, 1, 2, 4])):
            if k % 2 == 0:
                pos = rnd.randrange(footer_start, size - 8)  # inside the footer's Thrift
            else:
                pos = rnd.randrange(4, footer_start)  # page headers and page data
            val = rnd.choice([0x00, 0xFF, 0x7F, 0x80, rnd.randrange(256), buf[pos] ^ (1 << rnd.randrange(8))])
            buf[pos] = val
            edits.append(f"[{pos}]={val:#04x}")
        out.append((f"seed {seed!r} mutation {k}: " + " ".join(edits), bytes(buf)))
    return out


def _footer_length_lies(data: bytes) -> list:
    size = len(data)
    out = []
    for lie in (0, 1, 7, size - 8, size - 7, size, size + 1, 0x7FFFFFFF, 0xFFFFFFFF):
        buf = bytearray(data)
        buf[-8:-4] = struct.pack("<I", lie & 0xFFFFFFFF)
        out.append((f"footer length {lie}", bytes(buf)))
    return out


HOSTILE_INTS = (0, -1, 1, 0x7FFFFFFF, -0x80000000, 1 << 40, (1 << 63) - 1, -(1 << 63))


def _footer_int_lies(data: bytes, seed: str, count: int) -> list:
    """Footer integers (row counts, offsets, sizes, widths, ids, ...) replaced
    by hostile values, re-encoded so the footer still parses."""
    fields = footer_int_fields(data)
    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        field = rnd.choice(fields)
        value = rnd.choice(HOSTILE_INTS)
        out.append((f"footer integer at {field[0]} set to {value}", replace_footer_int(data, field, value)))
    return out


@pytest.mark.parametrize("variant", list(PYARROW_VARIANTS))
def test_truncated_pyarrow_files(tierdb_bin, workdir, valid_files, variant):
    codes = _check_inputs(tierdb_bin, workdir, variant, _truncations(valid_files[variant]),
                          commands=(("cat",), ("schema",)))
    assert codes[1] > 0


@pytest.mark.parametrize("variant", list(PYARROW_VARIANTS))
def test_mutated_pyarrow_files(tierdb_bin, workdir, valid_files, variant):
    data = valid_files[variant]
    inputs = _mutations(data, variant, MUTATIONS_PER_FILE) + _footer_length_lies(data)
    inputs += _footer_int_lies(data, variant, FOOTER_LIES_PER_FILE)
    _check_inputs(tierdb_bin, workdir, variant, inputs)


@pytest.fixture(scope="module")
def pqgen_files(pqgen, tmp_path_factory):
    directory = tmp_path_factory.mktemp("hostile_pqgen")
    rows = _pqgen_rows()
    return {name: pqgen.write(directory, PQGEN_SCHEMA, rows, name=f"{name}.parquet", options=opts).read_bytes()
            for name, opts in PQGEN_VARIANTS.items()}


@pytest.mark.parametrize("variant", list(PQGEN_VARIANTS))
def test_truncated_pqgen_files(tierdb_bin, workdir, pqgen_files, variant):
    codes = _check_inputs(tierdb_bin, workdir, variant, _truncations(pqgen_files[variant]),
                          commands=(("cat",), ("schema",)))
    assert codes[1] > 0


@pytest.mark.parametrize("variant", list(PQGEN_VARIANTS))
def test_mutated_pqgen_files(tierdb_bin, workdir, pqgen_files, variant):
    data = pqgen_files[variant]
    inputs = _mutations(data, variant, MUTATIONS_PER_FILE) + _footer_length_lies(data)
    inputs += _footer_int_lies(data, variant, FOOTER_LIES_PER_FILE)
    _check_inputs(tierdb_bin, workdir, variant, inputs, commands=(("cat",), ("cat", "--columns", "s,u")))


def test_every_truncation_of_the_footer_fails(tierdb_bin, workdir, valid_files):
    """Cutting any byte off the end removes the magic: that is never a valid file."""
    data = valid_files["dict_snappy_v1"]
    for cut in range(1, 9):
        path = workdir / f"cut{cut}.parquet"
        path.write_bytes(data[:-cut])
        problem, proc = _run(tierdb_bin, "parquet", "cat", path)
        assert problem is None, problem
        assert proc.returncode == 1, f"truncating {cut} bytes: exit {proc.returncode}"


def test_crc_mismatch_is_detected(tierdb_bin, workdir):
    """A flipped bit inside an uncompressed page whose header carries a CRC."""
    table = pa.table({"x": pa.array(range(1000), pa.int64())})
    path = workdir / "crc.parquet"
    pq.write_table(table, path, compression="none", use_dictionary=False, write_page_checksum=True)
    pages = column_chunk_pages(path, 0, 0)
    assert pages[0].crc is not None
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    # the last value of the page: the low byte of 999, well inside the page body
    pos = meta.data_page_offset + meta.total_compressed_size - 8
    assert data[pos] == 999 & 0xFF
    data[pos] ^= 0x01
    bad = workdir / "crc_bad.parquet"
    bad.write_bytes(bytes(data))
    with pytest.raises(Exception):
        pq.read_table(bad, page_checksum_verification=True)  # pyarrow sees it
    problem, proc = _run(tierdb_bin, "parquet", "cat", bad)
    assert problem is None, problem
    assert proc.returncode == 1, "a page whose CRC does not match was read without error"
    assert b"crc" in proc.stderr.lower() or b"checksum" in proc.stderr.lower(), proc.stderr


# ------------------------------------------------------------ not Parquet


def _expect_failure(tierdb_bin, path, *extra):
    proc = subprocess.run([str(tierdb_bin), "parquet", "cat", str(path), *extra], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 1, f"exit {proc.returncode}, stderr {err!r}"
    assert err.startswith("tierdb:"), err
    assert proc.stdout == b"", proc.stdout[:200]
    return err


def test_empty_file(tierdb_bin, workdir):
    path = workdir / "empty.parquet"
    path.write_bytes(b"")
    err = _expect_failure(tierdb_bin, path)
    assert str(path) in err or "empty" in err.lower() or "small" in err.lower() or "short" in err.lower(), err


def test_not_parquet(tierdb_bin, workdir):
    path = workdir / "text.parquet"
    path.write_bytes(b"id,name\n1,alice\n2,bob\n" * 20)
    err = _expect_failure(tierdb_bin, path)
    assert "parquet" in err.lower() or "magic" in err.lower() or "PAR1" in err, err


@pytest.mark.parametrize("data", [b"PAR1", b"PAR1PAR1", b"PAR1\x00\x00\x00\x00PAR1", b"PAR1" + b"\xff" * 100 + b"PAR1",
                                  b"PAR1\x01\x00\x00\x00\x00\x00\x00\x00PAR1", b"\x00" * 4096],
                         ids=["magic_only", "two_magics", "zero_footer", "garbage_footer", "tiny_footer", "zeros"])
def test_degenerate_files(tierdb_bin, workdir, data):
    path = workdir / "bad.parquet"
    path.write_bytes(data)
    _expect_failure(tierdb_bin, path)
    proc = subprocess.run([str(tierdb_bin), "parquet", "schema", str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=RUN_TIMEOUT)
    assert proc.returncode == 1 and proc.stderr.startswith(b"tierdb:"), proc


def test_missing_file(tierdb_bin, workdir):
    path = workdir / "does_not_exist.parquet"
    err = _expect_failure(tierdb_bin, path)
    assert str(path) in err, err
    proc = subprocess.run([str(tierdb_bin), "parquet", "schema", str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=RUN_TIMEOUT)
    assert proc.returncode == 1 and proc.stderr.startswith(b"tierdb:") and str(path).encode() in proc.stderr, proc


def test_directory_instead_of_file(tierdb_bin, workdir):
    _expect_failure(tierdb_bin, workdir)


def test_usage_errors_exit_2(tierdb_bin, workdir):
    for args in (["parquet"], ["parquet", "cat"], ["parquet", "cat", "x.parquet", "--limit"],
                 ["parquet", "cat", "x.parquet", "--limit", "abc"], ["parquet", "nosuchcommand", "x"]):
        proc = subprocess.run([str(tierdb_bin), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=RUN_TIMEOUT)
        assert proc.returncode == 2, f"{args}: exit {proc.returncode}"
        assert proc.stderr, args
