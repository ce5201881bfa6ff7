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


def _start(s3: dict | None = None):
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
        .config("spark.jars", ",".join(str(j) for j in [_runtime_jar(), *(_s3a_jars() if s3 else [])]))
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
    for key, value in (s3 or {}).items():
        builder = builder.config(key, value)
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


def spark_session(s3: dict | None = None):
    """The shared session, started on first use; a test failure saying why if it cannot start.
    With `s3` (s3a_settings()), it is started able to reach that S3 store; one
    JVM has one session, so a process asks for S3 before its first Spark use."""
    if "error" in _state:
        pytest.fail(_state["error"], pytrace=False)
    if "session" not in _state:
        try:
            _state["session"], _state["root"] = _start(s3)
            _state["s3"] = s3
        except Exception as exc:  # Py4J, missing Java or jar: all mean the same to a test
            _state["error"] = f"cannot start Spark with the Iceberg runtime: {type(exc).__name__}: {exc}"
            pytest.fail(_state["error"], pytrace=False)
        atexit.register(_stop)
    elif s3 is not None and _state.get("s3") != s3:
        pytest.fail("the Spark session was started without this S3 store's settings (S3A jars and "
                    "credentials are fixed when the JVM starts): run the S3 tests in their own pytest run",
                    pytrace=False)
    return _state["session"]


# S3 through Hadoop's S3A filesystem (hadoop-aws, the version of the Hadoop
# that pyspark 3.5 bundles, with the AWS SDK it was built against; both
# fetched by scripts/install-deps.sh). Iceberg's path-based loads
# (spark.read.format("iceberg").load("s3://...")) go through HadoopTables
# and so through Hadoop's FileSystem for the location's scheme: our lakes say
# s3://, which Hadoop maps to no filesystem by default, hence fs.s3.impl.
# docs/s3.md ("Reading the lake from Spark, DuckDB and pyiceberg").
S3A_JARS = ("hadoop-aws-3.3.4.jar", "aws-java-sdk-bundle-1.12.262.jar")


def _s3a_jars() -> list:
    missing = [j for j in S3A_JARS if not (JARS_DIR / j).is_file()]
    if missing:
        raise RuntimeError(f"no {', '.join(missing)} in {JARS_DIR}: run scripts/install-deps.sh")
    return [JARS_DIR / j for j in S3A_JARS]


def s3a_settings(endpoint: str, access_key: str, secret_key: str, region: str = "us-east-1") -> dict:
    """The session settings that point S3A, for both s3:// and s3a:// paths, at
    one S3-compatible store with path-style addressing (S3Proxy, MinIO)."""
    scheme, _, host = endpoint.partition("://")
    return {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint": host,
        "spark.hadoop.fs.s3a.endpoint.region": region,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "true" if scheme == "https" else "false",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "spark.hadoop.fs.s3a.access.key": access_key,
        "spark.hadoop.fs.s3a.secret.key": secret_key,
    }


def s3a_settings_from_env(env=None) -> dict:
    """s3a_settings for the store TIERDB_S3_* (in `env`, default os.environ) name."""
    env = os.environ if env is None else env
    return s3a_settings(env["TIERDB_S3_ENDPOINT"], env["TIERDB_S3_ACCESS_KEY"], env["TIERDB_S3_SECRET_KEY"],
                        env.get("TIERDB_S3_REGION", "us-east-1"))


def spark_warehouse() -> Path:
    """The `lake` catalog's warehouse directory (tables are WAREHOUSE/db/NAME)."""
    spark_session()
    return _state["root"] / "warehouse"


@pytest.fixture(scope="session")
def spark():
    return spark_session()
