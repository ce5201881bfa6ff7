"""A table whose lake is kept in an Iceberg REST catalog (docs/rest-catalog.md,
cli/lake_catalog.c, lake/src/iceberg/rest_*.c), against Apache Iceberg's own
REST catalog server (scripts/rest-catalog.sh), started by this module.

`tierdb register` with TIERDB_CATALOG_URI set creates the lake table through
the catalog; tiering and folds commit through its updateTable; the Postgres
catalog still pins (T, S, metadata_location), so Postgres reads the table as
a path-based one; pyiceberg's REST catalog client loads the same table from
the catalog and reads the same rows, Spark's the folded table; `verify` agrees.

With TIERDB_E2E_LAKE=s3 (`make test-e2e-s3`) the lakes are on S3Proxy: the
catalog server is started with its TIERDB_S3_* variables and writes the
metadata to s3:// with S3FileIO, pyiceberg reads through the same store, and
Spark, whose shared session has no S3 client, is left out.
"""

from __future__ import annotations

import subprocess
import uuid

import pytest

import lake_files
from pg_cluster import REPO_ROOT
from seam import SESSION  # noqa: F401  (also puts tests/interop on the path)
from spark_support import spark  # noqa: F401  (the session-scoped fixture)
from test_tiering import cutline, make_events, run_once

LAG = "2d"
# Every row as Postgres reads it (heap, lake and delta together).
ROWS = SESSION + "SELECT md5(string_agg(e::text, ',' ORDER BY id)), count(*) FROM events e"


@pytest.fixture(scope="module")
def rest_catalog(e2e_root, pg):
    """The REST catalog server for this module: its environment (TIERDB_CATALOG_URI, ...).
    After `pg`, so that on S3 it starts with the store's TIERDB_S3_* variables."""
    script = REPO_ROOT / "scripts" / "rest-catalog.sh"
    directory = e2e_root / "rest-catalog"
    proc = subprocess.run([str(script), "start", str(directory)], capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        pytest.fail(f"could not start the REST catalog server:\n{proc.stderr}", pytrace=False)
    env = {}
    for line in (directory / "env").read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value
    try:
        yield env
    finally:
        subprocess.run([str(script), "stop", str(directory)], capture_output=True, timeout=60)


def catalog_env(rest_catalog, **extra):
    return {"TIERDB_CATALOG_URI": rest_catalog["TIERDB_CATALOG_URI"], **extra}


def pyiceberg_catalog(rest_catalog):
    import os

    from pyiceberg.catalog.rest import RestCatalog

    props = {"uri": rest_catalog["TIERDB_CATALOG_URI"]}
    if lake_files.ON_S3:
        props.update({"s3.endpoint": os.environ["TIERDB_S3_ENDPOINT"],
                      "s3.access-key-id": os.environ["TIERDB_S3_ACCESS_KEY"],
                      "s3.secret-access-key": os.environ["TIERDB_S3_SECRET_KEY"],
                      "s3.region": os.environ.get("TIERDB_S3_REGION", "us-east-1")})
    return RestCatalog("tierdb", **props)


def pyiceberg_table(rest_catalog, namespace, name):
    return pyiceberg_catalog(rest_catalog).load_table((namespace, name))


def our_metadata_files(location):
    """Metadata files named as a path-based commit names them (v<N>.metadata.json), and the hint."""
    return {f for f in lake_files.list_files(str(location) + "/metadata")
            if f.rsplit("/", 1)[-1].startswith("v") or f.endswith("version-hint.text")}


def verify_ok(tierdb, env):
    proc = tierdb(["verify", "--table", "public.events"], env=env)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"


@pytest.fixture
def registered(db, tierdb, lake, rest_catalog):
    """events registered through the REST catalog (a namespace of its own: the
    catalog outlives each test's database), read transparently: (db, env, namespace)."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    ns = "tierdb_" + uuid.uuid4().hex[:8]
    env = catalog_env(rest_catalog, TIERDB_CATALOG_NAMESPACE=ns,
                      TIERDB_CATALOG_CREDENTIAL="tierdb-daemon:not-a-real-secret")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "in the REST catalog" in proc.stdout, proc.stdout
    assert "not-a-real-secret" not in proc.stdout + proc.stderr
    return db, env, ns


def test_register_tier_and_fold_through_the_rest_catalog(registered, tierdb, lake, rest_catalog, spark):  # noqa: F811
    db, env, ns = registered
    before = db.query(ROWS)
    c = cutline(db, "events")
    assert c["props"]["rest_catalog"] == {
        "uri": rest_catalog["TIERDB_CATALOG_URI"], "namespace": ns, "table": "events"}
    # The lake table is where a path-based one would be, but the catalog wrote its metadata.
    assert lake_files.normalize(c["ref"]) == lake_files.normalize(lake / "public" / "events")
    assert lake_files.list_files(c["ref"], ".metadata.json")
    assert not our_metadata_files(c["ref"])
    table = pyiceberg_table(rest_catalog, ns, "events")
    assert table.metadata_location == c["props"]["metadata_location"]
    assert [f.name for f in table.schema().fields] == ["id", "ts", "v", "amount"]

    # Tiering commits through the catalog; S and metadata_location are pinned as for any lake.
    run_once(tierdb, LAG, **env)
    c = cutline(db, "events")
    assert c["S"] is not None
    table = pyiceberg_table(rest_catalog, ns, "events")
    assert table.current_snapshot().snapshot_id == c["S"]
    assert table.metadata_location == c["props"]["metadata_location"]
    assert table.current_snapshot().summary["tierdb.op-id"]
    assert not our_metadata_files(c["ref"])
    assert db.query(ROWS) == before
    verify_ok(tierdb, env)

    # pyiceberg reads through the catalog exactly the rows that left the heap.
    lake_ids = sorted(table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist())
    (count,) = db.query(SESSION + "SELECT count(*) FROM events WHERE ts < timestamptz '2024-01-08 00:00:00+00'")[0]
    assert len(lake_ids) == int(count) > 0
    (lake_sum,) = db.query(SESSION + "SELECT sum(id) FROM events WHERE ts < timestamptz '2024-01-08 00:00:00+00'")[0]
    assert sum(lake_ids) == int(lake_sum)

    # A correction of a cold row folds through the catalog too.
    db.psql(SESSION + "SELECT tierdb_upsert('events', jsonb_build_object("
            "'id', 10, 'ts', '2024-01-01 02:00:00+00', 'v', 'corrected', 'amount', 1.25))")
    proc = run_once(tierdb, LAG, **env)
    assert "fold: operation" in proc.stderr, proc.stderr
    after = cutline(db, "events")
    assert after["S"] != c["S"]
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "0"
    table = pyiceberg_table(rest_catalog, ns, "events")
    assert table.current_snapshot().snapshot_id == after["S"]
    assert table.current_snapshot().parent_snapshot_id == c["S"]
    assert db.query("SELECT v FROM events WHERE id = 10") == [("corrected",)]
    # pyiceberg does not apply equality deletes yet: Spark, through the same REST catalog, reads the folded table.
    assert table.current_snapshot().summary["added-equality-delete-files"] == "1"
    verify_ok(tierdb, env)
    if lake_files.ON_S3:
        return
    catalog = "rest_" + ns
    spark.conf.set(f"spark.sql.catalog.{catalog}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{catalog}.type", "rest")
    spark.conf.set(f"spark.sql.catalog.{catalog}.uri", rest_catalog["TIERDB_CATALOG_URI"])
    spark.conf.set(f"spark.sql.catalog.{catalog}.cache-enabled", "false")
    spark_rows = {r["id"]: r["v"] for r in spark.sql(f"SELECT id, v FROM {catalog}.{ns}.events").collect()}
    (pg_count, pg_sum) = db.query(SESSION + "SELECT count(*), sum(id) FROM events"
                                  " WHERE ts < timestamptz '2024-01-08 00:00:00+00'")[0]
    assert len(spark_rows) == int(pg_count)
    assert sum(spark_rows) == int(pg_sum)
    assert spark_rows[10] == "corrected"
    snapshot = spark.sql(f"SELECT snapshot_id FROM {catalog}.{ns}.events.snapshots"
                         " ORDER BY committed_at DESC LIMIT 1").collect()[0][0]
    assert snapshot == after["S"]
    verify_ok(tierdb, env)


def test_the_daemon_needs_the_catalog(registered, tierdb, rest_catalog):
    db, env, ns = registered
    # Without TIERDB_CATALOG_URI the daemon does not write to the lake behind the catalog's back.
    proc = tierdb(["run", "--once"], env={"TIERDB_TIERING_LAG": LAG})
    assert f"{ns}.events in the REST catalog" in proc.stderr, proc.stderr
    assert "TIERDB_CATALOG_URI" in proc.stderr
    assert cutline(db, "events")["S"] is None
    table = pyiceberg_table(rest_catalog, ns, "events")
    assert table.current_snapshot() is None
    # With it, the same run tiers.
    run_once(tierdb, LAG, **env)
    c = cutline(db, "events")
    assert c["S"] == pyiceberg_table(rest_catalog, ns, "events").current_snapshot().snapshot_id

    # Unregistering with --drop-lake takes the table out of the catalog too.
    proc = tierdb(["unregister", "--table", "public.events", "--drop-lake"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert not pyiceberg_catalog(rest_catalog).table_exists((ns, "events"))
    assert not lake_files.list_files(c["ref"])


def test_registering_a_table_the_catalog_has_is_refused(db, tierdb, lake, rest_catalog):
    make_events(db)
    env = catalog_env(rest_catalog, TIERDB_CATALOG_NAMESPACE="tierdb_taken")
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    catalog = pyiceberg_catalog(rest_catalog)
    catalog.create_namespace_if_not_exists("tierdb_taken")
    if not catalog.table_exists(("tierdb_taken", "events")):
        catalog.create_table(("tierdb_taken", "events"), Schema(NestedField(1, "x", LongType(), required=False)))
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"], env=env)
    assert proc.returncode != 0
    assert "already exists in the REST catalog" in proc.stderr, proc.stderr
    assert db.query("SELECT count(*) FROM tierdb.tables")[0][0] == "0"
    # The lake directory the failed registration made is gone again.
    assert not lake_files.list_files(lake / "public" / "events")


def test_maintenance_through_the_rest_catalog(registered, tierdb, rest_catalog):
    """Compaction and the manifest rewrite commit through the catalog's updateTable, expiry sends
    remove-snapshots; the catalog's table then has one snapshot, no delete file, and every row."""
    db, env, ns = registered
    policy = ["policy", "--table", "public.events"]
    assert tierdb([*policy, "--set", "compaction=off", "--set", "expiry=off"], env=env).returncode == 0
    run_once(tierdb, LAG, **env)
    for i in range(4):
        db.psql(SESSION + f"UPDATE events SET v = 'fix {i}' WHERE id % 40 = {i} AND ts < '2024-01-08'")
        run_once(tierdb, LAG, **env)
    before = db.query(ROWS)
    assert len(pyiceberg_table(rest_catalog, ns, "events").metadata.snapshots) >= 5
    proc = tierdb([*policy, "--reset", "--set", "snapshot_max_age=0s"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert tierdb(["maintain", "--table", "public.events", "--no-wait"], env=env).returncode == 0
    proc = run_once(tierdb, LAG, **env)
    assert "compaction: operation" in proc.stderr and "expiry: operation" in proc.stderr, proc.stderr
    c = cutline(db, "events")
    table = pyiceberg_table(rest_catalog, ns, "events")
    assert [s.snapshot_id for s in table.metadata.snapshots] == [c["S"]]
    assert table.metadata_location == c["props"]["metadata_location"]
    assert table.inspect.delete_files().num_rows == 0
    assert db.query(ROWS) == before
    # with no delete file left, pyiceberg reads the compacted lake whole
    (count,) = db.query(SESSION + "SELECT count(*) FROM events WHERE ts < timestamptz '2024-01-08 00:00:00+00'")[0]
    assert table.scan().to_arrow().num_rows == int(count)
    verify_ok(tierdb, env)
