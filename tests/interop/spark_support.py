"""One local SparkSession with the Iceberg runtime for the whole test run.

Spark is the reference reader and writer of Iceberg tables (pyspark 3.5
from scripts/requirements.txt; iceberg-spark-runtime-3.5_2.12, which
scripts/install-deps.sh copies from Maven Central into .venv/jars/). The
session runs in local[2] mode without the UI, with two shuffle partitions
(our tables have a few hundred rows) and UTC as its time zone. It has one
Hadoop catalog, `lake`, whose warehouse is a temporary directory: tables
created as lake.db.NAME live in WAREHOUSE/db/NAME with metadata/v<N>.metadata.json
and version-hint.text, our layout. Path-based tables (ours) are read with
spark.read.format("iceberg").load(PATH), at an older snapshot with
.option("snapshot-id", ID).

Starting the JVM takes seconds, so it happens once per pytest session:
test modules import the `spark` fixture from here; every import shares the
one session below, stopped at exit. If Spark cannot start, the tests that
need it fail with the reason; nothing is skipped.

Java: Spark 3.5 runs on Java 8, 11 and 17. On 17 it needs a list of
--add-opens options, which pyspark 3.5's launcher (spark-submit) passes to
the driver JVM by itself (JavaModuleOptions, seen in the JVM's command
line), so nothing is added here. JAVA_HOME, when unset, is pointed at a
Java 17 if one is installed, since a newer default java (21+) breaks Spark 3.5.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
JARS_DIR = Path(os.environ.get("TIERDB_SPARK_JARS", REPO_ROOT / ".venv" / "jars"))
# The version scripts/install-deps.sh fetches. Not 1.7.x: its vectorized
# Parquet reader corrupts memory on files with more than one row group (the
# JVM dies with SIGSEGV; seen with pyarrow's files as well as ours).
ICEBERG_RUNTIME = "iceberg-spark-runtime-3.5_2.12-1.8.1.jar"

_state: dict = {}


def _runtime_jar() -> Path:
    jar = JARS_DIR / ICEBERG_RUNTIME
    if not jar.is_file():
        raise RuntimeError(f"no {jar}: run scripts/install-deps.sh (it fetches it with Maven)")
    return jar


def _java_home() -> None:
    if os.environ.get("JAVA_HOME"):
        return
    for candidate in sorted(glob.glob("/usr/lib/jvm/java-17-openjdk*")) + sorted(glob.glob("/usr/lib/jvm/*17*")):
        if os.access(os.path.join(candidate, "bin", "java"), os.X_OK):
            os.environ["JAVA_HOME"] = candidate
            return


def _start():
    from pyspark.sql import SparkSession

    _java_home()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # stay on the loopback interface
    # Spark's scratch space (spark.local.dir) goes beside the warehouse, so
    # one rmtree at exit leaves nothing behind in /tmp.
    root = Path(tempfile.mkdtemp(prefix="tierdb-spark-"))
    warehouse = root / "warehouse"
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("tierdb-interop")
        .config("spark.jars", str(_runtime_jar()))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.local.dir", str(root / "local"))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.lake.type", "hadoop")
        .config("spark.sql.catalog.lake.warehouse", str(warehouse))
        .config("spark.sql.catalog.lake.cache-enabled", "false")
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    session.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
    return session, root


def _stop() -> None:
    session = _state.get("session")
    if session is not None:
        session.stop()
    root = _state.get("root")
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
    _state.clear()


def spark_session():
    """The shared session, started on first use; a test failure saying why if it cannot start."""
    if "error" in _state:
        pytest.fail(_state["error"], pytrace=False)
    if "session" not in _state:
        try:
            _state["session"], _state["root"] = _start()
        except Exception as exc:  # Py4J, missing Java or jar: all mean the same to a test
            _state["error"] = f"cannot start Spark with the Iceberg runtime: {type(exc).__name__}: {exc}"
            pytest.fail(_state["error"], pytrace=False)
        atexit.register(_stop)
    return _state["session"]


def spark_warehouse() -> Path:
    """The `lake` catalog's warehouse directory (tables are WAREHOUSE/db/NAME)."""
    spark_session()
    return _state["root"] / "warehouse"


@pytest.fixture(scope="session")
def spark():
    return spark_session()
