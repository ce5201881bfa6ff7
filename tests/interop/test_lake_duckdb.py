"""Tables we write, read by DuckDB's iceberg extension.

The tables are those of test_lake_spark.py (iceberg_tables.build_our_tables):
three layouts through eight snapshots with appends, a dropped data file,
row deltas with equality deletes and a compaction, and the tables whose
schema evolves between snapshots (build_evolved_tables). DuckDB reads each
snapshot by id with iceberg_scan(DIR, snapshot_from_id => ID) and must
return the model's rows.

DuckDB cannot download extensions on this machine, so the extension comes
from PyPI: the duckdb-extension-iceberg and duckdb-extension-avro packages
(scripts/requirements.txt) ship DuckDB's signed builds of the `iceberg`
extension and the `avro` extension it needs, for the pinned DuckDB version.
They are loaded from those files, with automatic installing and loading
switched off so a missing file fails here rather than reaching for the
network.
"""

from __future__ import annotations

import glob
import importlib
from pathlib import Path

import duckdb
import pytest

from iceberg_tables import (
    CASE_IDS,
    CASES,
    EVOLVED_CASE_IDS,
    EVOLVED_CASES,
    FIELDS,
    STEPS,
    arrow_rows,
    assert_same_rows,
    build_evolved_tables,
    build_our_tables,
    canonical_rows,
)


def _extension_file(package: str) -> str:
    module = importlib.import_module(package)
    pattern = str(Path(module.__path__[0]) / "extensions" / f"v{duckdb.__version__}" / "*.duckdb_extension")
    found = glob.glob(pattern)
    assert found, f"no extension file {pattern}: is {package} the build for duckdb {duckdb.__version__}?"
    return found[0]


@pytest.fixture(scope="module")
def con():
    connection = duckdb.connect()
    connection.execute("SET autoinstall_known_extensions = false")
    connection.execute("SET autoload_known_extensions = false")
    for package in ("duckdb_extension_avro", "duckdb_extension_iceberg"):
        connection.execute(f"LOAD '{_extension_file(package)}'")
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def our_tables(tmp_path_factory) -> dict:
    return build_our_tables(tmp_path_factory.mktemp("ours"))


@pytest.mark.parametrize("layout,step", CASES, ids=CASE_IDS)
def test_duckdb_reads_our_snapshot(con, our_tables, layout, step):
    t = our_tables[layout]
    arrow = con.execute(
        "SELECT * FROM iceberg_scan(?, snapshot_from_id => ?)", [str(t.location), t.snapshots[step]]
    ).to_arrow_table()
    assert arrow.column_names == [name for name, _ in FIELDS]
    got = arrow_rows(arrow, FIELDS)
    assert_same_rows(canonical_rows(FIELDS, t.models[step]), got,
                     f"DuckDB, {layout} table at snapshot {step + 1} ({STEPS[step]})")


def test_duckdb_reads_current(con, our_tables):
    """Without a snapshot id DuckDB finds the newest metadata through version-hint.text."""
    for layout, t in our_tables.items():
        arrow = con.execute("SELECT * FROM iceberg_scan(?)", [str(t.location)]).to_arrow_table()
        assert_same_rows(canonical_rows(FIELDS, t.models[-1]), arrow_rows(arrow, FIELDS),
                         f"DuckDB, {layout} table, current snapshot")


@pytest.fixture(scope="module")
def evolved_tables(tmp_path_factory) -> dict:
    return build_evolved_tables(tmp_path_factory.mktemp("evolved"))


@pytest.mark.parametrize("layout,step", EVOLVED_CASES, ids=EVOLVED_CASE_IDS)
def test_duckdb_reads_evolved_snapshot(con, evolved_tables, layout, step):
    """A field dropped, one renamed, int, float and decimal promoted, one added:
    each snapshot in its own schema, older files widened."""
    t = evolved_tables[layout]
    fields = t.fields[step]
    arrow = con.execute(
        "SELECT * FROM iceberg_scan(?, snapshot_from_id => ?)", [str(t.location), t.snapshots[step]]
    ).to_arrow_table()
    assert arrow.column_names == [name for name, _ in fields]
    assert_same_rows(canonical_rows(fields, t.models[step]), arrow_rows(arrow, fields),
                     f"DuckDB, evolved {layout} table at snapshot {step + 1}")
