"""Tables other engines write on S3, read by `tierdb lake cat` through the
lake library's S3 storage (issue 17 §2): the S3 twin of
tests/interop/test_lake_foreign.py, against the session's S3Proxy.

Spark (the Iceberg runtime with Hadoop's S3A, tests/interop/spark_support.py)
writes format-v2 tables in a Hadoop catalog whose warehouse is
s3://BUCKET/spark-wh: several INSERTs, DELETE and UPDATE in merge-on-read
mode (position-delete files) and in copy-on-write mode, an ADD COLUMN and
more writes. At every snapshot `tierdb lake cat LOCATION --snapshot ID`
prints exactly Spark's `VERSION AS OF ID`; without --snapshot, given the
table location or its latest s3://.../metadata/vN.metadata.json, the
current snapshot's rows.

pyiceberg (a SqlCatalog on sqlite in a temporary directory, warehouse
s3://BUCKET/pyiceberg-wh, pyarrow's S3 FileIO) writes tables through
appends, overwrites and deletes; at every snapshot `lake cat` of its
metadata object equals pyiceberg's own scan.
"""

from __future__ import annotations

import os
import random
import sys
import uuid
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[1] / "interop"))

from iceberg_tables import arrow_rows, assert_same_rows, cat_rows, lake_cat, spark_rows  # noqa: E402
import spark_support  # noqa: E402
import test_lake_foreign as local  # noqa: E402  (the tables' columns, steps and rows)

pafs = pytest.importorskip("pyarrow.fs")


@pytest.fixture(scope="module")
def s3_env(s3_server):
    """The server's TIERDB_S3_* in this process, so `tierdb lake cat` (run by lake_cat) reaches it."""
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith(("AWS_", "TIERDB_S3_"))]:
            mp.delenv(name)
        for name, value in s3_server.env.items():
            mp.setenv(name, value)
        yield s3_server


@pytest.fixture(scope="module")
def spark_s3(s3_env):
    """Spark with S3A pointed at the server and a Hadoop catalog `s3lake` whose warehouse is in its bucket."""
    session = spark_support.spark_session(spark_support.s3a_settings_from_env(s3_env.env))
    warehouse = f"s3://{s3_env.bucket}/spark-wh-{uuid.uuid4().hex[:8]}"
    session.conf.set("spark.sql.catalog.s3lake", "org.apache.iceberg.spark.SparkCatalog")
    session.conf.set("spark.sql.catalog.s3lake.type", "hadoop")
    session.conf.set("spark.sql.catalog.s3lake.warehouse", warehouse)
    session.conf.set("spark.sql.catalog.s3lake.cache-enabled", "false")
    session.sql("CREATE NAMESPACE IF NOT EXISTS s3lake.db")
    session.warehouse_s3 = warehouse
    return session


def _current_snapshot(spark, table: str) -> int:
    ((snapshot_id,),) = spark.sql(f"SELECT snapshot_id FROM {table}.history WHERE is_current_ancestor"
                                  " ORDER BY made_current_at DESC LIMIT 1").collect()
    return snapshot_id


def build_spark_table(spark, name: str) -> tuple:
    """Creates and changes s3lake.db.NAME as test_lake_foreign.py does locally; (location, [(step, snapshot)])."""
    partitioning, modes = local.SPARK_TABLES[name]
    table = f"s3lake.db.{name}"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} ({local.SPARK_DDL}) USING iceberg {partitioning} "
              f"TBLPROPERTIES ('format-version'='2', {modes})")
    steps = []

    def step(label: str) -> None:
        steps.append((label, _current_snapshot(spark, table)))

    local._insert(spark, table, 0, 120)
    step("insert 1")
    local._insert(spark, table, 120, 220)
    step("insert 2")
    spark.sql(f"DELETE FROM {table} WHERE id % 7 = 0 OR cat IS NULL")
    step("delete")
    spark.sql(f"UPDATE {table} SET score = score * 2, cat = 'upd', amount = amount + 1 WHERE id % 5 = 1")
    step("update")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN extra STRING")
    local._insert(spark, table, 220, 300, extra=True)
    step("insert after add column")
    spark.sql(f"UPDATE {table} SET extra = 'changed' WHERE id % 6 = 2")
    step("update new column")
    spark.sql(f"DELETE FROM {table} WHERE id BETWEEN 30 AND 60 OR id > 290")
    step("delete 2")
    return f"{spark.warehouse_s3}/db/{name}", steps


@pytest.fixture(scope="module")
def spark_tables(spark_s3) -> dict:
    return {name: build_spark_table(spark_s3, name) for name in local.SPARK_TABLES}


def _s3fs(server):
    return pafs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key, region=server.region,
                             endpoint_override=server.endpoint, scheme="http", allow_bucket_creation=False)


@pytest.mark.parametrize("name", list(local.SPARK_TABLES))
def test_lake_cat_reads_spark_s3_table_every_snapshot(spark_s3, spark_tables, name):
    location, steps = spark_tables[name]
    assert location.startswith("s3://")
    for label, snapshot_id in steps:
        fields, want = spark_rows(spark_s3.sql(f"SELECT * FROM s3lake.db.{name} VERSION AS OF {snapshot_id}"))
        got = cat_rows(fields, lake_cat(location, snapshot_id), f"lake cat {location} --snapshot {snapshot_id}")
        assert_same_rows(want, got, f"{name} on S3 after {label} (snapshot {snapshot_id})")


@pytest.mark.parametrize("name", list(local.SPARK_TABLES))
def test_lake_cat_reads_spark_s3_table_current(s3_env, spark_s3, spark_tables, name):
    """Given the table location, and given its newest metadata object by name."""
    location, steps = spark_tables[name]
    fields, want = spark_rows(spark_s3.table(f"s3lake.db.{name}"))
    assert [f for f, _ in fields][-1] == "extra"
    assert_same_rows(want, cat_rows(fields, lake_cat(location), f"lake cat {location}"), f"{name}, current")
    metadata = _s3fs(s3_env).get_file_info(pafs.FileSelector(location.removeprefix("s3://") + "/metadata"))
    versions = sorted((int(i.base_name[1:-len(".metadata.json")]), i.path) for i in metadata
                      if i.base_name.startswith("v") and i.base_name.endswith(".metadata.json"))
    assert len(versions) >= len(steps), versions
    newest = f"s3://{versions[-1][1]}"
    assert_same_rows(want, cat_rows(fields, lake_cat(newest), f"lake cat {newest}"), f"{name}, {newest}")


def test_spark_wrote_position_deletes_on_s3(spark_s3, spark_tables):
    """The merge-on-read tables hold position-delete objects and the copy-on-write one none."""
    for name, (_, modes) in local.SPARK_TABLES.items():
        rows = spark_s3.sql(f"SELECT content, file_path FROM s3lake.db.{name}.all_delete_files").collect()
        if modes == local.MOR:
            assert {r.content for r in rows} == {1}, f"{name}: want position deletes, have {rows[:3]}"
            assert all(r.file_path.startswith("s3://") for r in rows), rows[:3]
        else:
            assert rows == [], f"{name}: copy-on-write table has delete files {rows[:3]}"


# -------------------------------------------------------------- pyiceberg

def pyiceberg_s3_properties(server) -> dict:
    """pyiceberg's FileIO properties for an S3-compatible store (pyarrow's S3FileSystem; an
    endpoint means path-style requests unless s3.force-virtual-addressing is set)."""
    return {
        "s3.endpoint": server.endpoint,
        "s3.access-key-id": server.access_key,
        "s3.secret-access-key": server.secret_key,
        "s3.region": server.region,
    }


def build_pyiceberg_s3_table(tmp_path: Path, server, partitioned: bool, version: int):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    warehouse = f"s3://{server.bucket}/pyiceberg-wh-{uuid.uuid4().hex[:8]}"
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=warehouse,
                         **pyiceberg_s3_properties(server))
    catalog.create_namespace("db")
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat")) if partitioned else PartitionSpec()
    table = catalog.create_table("db.t", local.PYICEBERG_SCHEMA, partition_spec=spec,
                                 properties={"format-version": str(version)})
    rnd = random.Random(7 if partitioned else 8)
    steps = []

    def step(label: str) -> None:
        table.refresh()
        steps.append((label, table.metadata.current_snapshot_id))

    table.append(local._pyiceberg_rows(rnd, 0, 80))
    step("append 1")
    table.append(local._pyiceberg_rows(rnd, 80, 160))
    step("append 2")
    table.overwrite(local._pyiceberg_rows(rnd, 1000, 1030, cats=("b",)), overwrite_filter=EqualTo("cat", "b"))
    step("overwrite cat = b")
    table.delete(LessThan("id", 25))
    step("delete id < 25")
    table.delete(And(GreaterThanOrEqual("id", 100), LessThan("id", 120)))
    step("delete 100 <= id < 120")
    table.append(local._pyiceberg_rows(rnd, 2000, 2040))
    step("append 3")
    table.refresh()
    return table, steps


@pytest.mark.parametrize("partitioned,version", [(False, 2), (True, 2)], ids=["unpartitioned-v2", "identity-v2"])
def test_lake_cat_reads_pyiceberg_s3_table(s3_env, tmp_path, partitioned, version):
    table, steps = build_pyiceberg_s3_table(tmp_path, s3_env, partitioned, version)
    metadata = table.metadata_location
    assert metadata.startswith(f"s3://{s3_env.bucket}/"), metadata
    fields = local.PYICEBERG_FIELDS
    labels = dict((s, label) for label, s in steps)
    snapshots = [s.snapshot_id for s in table.metadata.snapshots]
    assert set(labels) <= set(snapshots) and len(snapshots) >= len(steps)
    for snapshot_id in snapshots:
        label = labels.get(snapshot_id, "the delete half of an overwrite")
        want = arrow_rows(table.scan(snapshot_id=snapshot_id).to_arrow(), fields)
        got = cat_rows(fields, lake_cat(metadata, snapshot_id), f"lake cat {metadata}")
        assert_same_rows(want, got, f"pyiceberg S3 table after {label} (snapshot {snapshot_id})")
    want = arrow_rows(table.scan().to_arrow(), fields)
    assert_same_rows(want, cat_rows(fields, lake_cat(metadata), "lake cat"), "pyiceberg S3 table, current")
