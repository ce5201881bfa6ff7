"""Fixtures for the Parquet interop tests: where the programs under test are,
and helpers that run them.

`tierdb parquet cat` and `pqgen` are built by `make` (build/tierdb and
build/tools/pqgen); the tests never build anything themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from parquet_values import load_schema_json, parse_cat_line, schema_json_mismatches

REPO_ROOT = Path(__file__).resolve().parents[2]
# TIERDB_BUILD_DIR points the tests at another build (say, a sanitizer one).
BUILD_DIR = Path(os.environ.get("TIERDB_BUILD_DIR", REPO_ROOT / "build"))
CAT_TIMEOUT = 60  # seconds; a normal read of a test file takes milliseconds


def _program(relative: str) -> Path:
    path = BUILD_DIR / relative
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"{path} is missing: run `make` (or `make build/{relative}`) in {REPO_ROOT} first",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def tierdb_bin() -> Path:
    return _program("tierdb")


@pytest.fixture(scope="session")
def pqgen_bin() -> Path:
    return _program("tools/pqgen")


class CatError(AssertionError):
    pass


class Tierdb:
    """Runs `build/tierdb parquet ...`."""

    def __init__(self, binary: Path):
        self.binary = binary

    def run(self, *args, timeout=CAT_TIMEOUT, stdout=subprocess.PIPE):
        return subprocess.run(
            [str(self.binary), *map(str, args)],
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def cat(self, path, columns=None, limit=None) -> list:
        """Rows printed by `parquet cat`, each a list of (key, value) pairs
        with numbers kept as text (see parquet_values.parse_cat_line)."""
        args = ["parquet", "cat", path]
        if columns is not None:
            args += ["--columns", ",".join(columns)]
        if limit is not None:
            args += ["--limit", limit]
        proc = self.run(*args)
        if proc.returncode != 0:
            raise CatError(
                f"tierdb {' '.join(map(str, args))} exited {proc.returncode}: "
                f"{proc.stderr.decode(errors='replace').strip()}"
            )
        text = proc.stdout.decode("utf-8")
        assert text == "" or text.endswith("\n"), "cat output does not end with a newline"
        return [parse_cat_line(line) for line in text.splitlines()]

    def schema_json(self, path) -> dict:
        """`parquet schema --json`, numbers kept as Number tokens."""
        proc = self.run("parquet", "schema", path, "--json")
        if proc.returncode != 0:
            raise CatError(
                f"tierdb parquet schema {path} --json exited {proc.returncode}: "
                f"{proc.stderr.decode(errors='replace').strip()}"
            )
        return load_schema_json(proc.stdout.decode("utf-8"))

    def check_schema(self, path) -> None:
        """`parquet schema --json` agrees with pyarrow about the footer."""
        problems = schema_json_mismatches(self.schema_json(path), path)
        assert not problems, f"parquet schema --json {path.name}: " + "; ".join(problems[:10])

    def check_deferred_read(self, path) -> None:
        """Late materialisation (deferred columns, loaded for some batches)
        reads the same values as a plain read: build/tools/pqskip."""
        proc = subprocess.run([str(_program("tools/pqskip")), str(path)], capture_output=True, text=True,
                              timeout=CAT_TIMEOUT, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"pqskip {path.name}: {proc.stderr.strip()}"


@pytest.fixture(scope="session")
def tierdb(tierdb_bin) -> Tierdb:
    return Tierdb(tierdb_bin)


class Pqgen:
    """Writes a Parquet file through our writer (build/tools/pqgen)."""

    def __init__(self, binary: Path):
        self.binary = binary

    def write(self, directory: Path, schema: list, rows: list, name="out.parquet", options=()) -> Path:
        """schema: list of {"name", "type", "required"?, "field_id"?};
        rows: list of dicts of rendered values (missing key = null)."""
        directory = Path(directory)
        schema_path = directory / (name + ".schema.json")
        rows_path = directory / (name + ".rows.jsonl")
        out = directory / name
        schema_path.write_text(json.dumps(schema))
        with open(rows_path, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False, allow_nan=False))
                f.write("\n")
        args = [str(self.binary), "--schema", str(schema_path), "--rows", str(rows_path), "--out", str(out)]
        args += [str(o) for o in options]
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise AssertionError(
                f"pqgen {' '.join(args[1:])} exited {proc.returncode}: "
                f"{proc.stderr.decode(errors='replace').strip()}"
            )
        return out


@pytest.fixture(scope="session")
def pqgen(pqgen_bin) -> Pqgen:
    return Pqgen(pqgen_bin)


@pytest.fixture
def workdir(tmp_path) -> Path:
    return tmp_path
