"""Other engines read the lake the daemon writes on S3 (issue 17 §2): the
tables are tiered and folded by `tierdb` into an s3:// warehouse on S3Proxy,
then

- Spark (the Iceberg runtime, path-based loads through Hadoop's S3A, the
  way tierdb-spark loads the lake) runs test_spark_lake.py's whole seam
  check: heap >= T ∪ (lake@S read by Spark ⊕ delta) is the truth table, at
  every snapshot, after folds that wrote equality deletes, and Spark's rows
  equal `tierdb lake cat`'s;
- pyiceberg (StaticTable on the metadata object, pyarrow's S3 FileIO) reads
  the same rows as `tierdb lake cat` at the tiered snapshot.

Only under TIERDB_E2E_LAKE=s3 (`make test-e2e-s3`): the cluster and the
daemon reach S3 through the TIERDB_S3_* variables that conftest.py sets at
the start of the session, which a local run does not have; the local lake
is read by Spark in test_spark_lake.py.
"""

from __future__ import annotations

import os

import pytest

import lake_files
from seam import SESSION, Seam, assert_same_rows, cat_rows, lake_cat  # puts tests/interop on the path
import spark_support  # noqa: E402
import test_spark_lake as local_case  # noqa: E402
from iceberg_tables import arrow_rows  # noqa: E402
from test_tiering import run_once  # noqa: E402

pytestmark = [
    pytest.mark.heap_and_lake_apart,
    pytest.mark.skipif(not lake_files.ON_S3, reason="the lakes are local: `make test-e2e-s3` runs this module"),
]


@pytest.fixture(scope="session")
def spark_s3(s3_store):
    """The shared Spark session, started with S3A pointed at the session's S3Proxy."""
    return spark_support.spark_session(spark_support.s3a_settings_from_env())


@pytest.mark.parametrize("case", local_case.CASES, ids=[c.table for c in local_case.CASES])
def test_spark_reads_the_tiered_and_folded_s3_lake(spark_s3, db, tierdb, lake, case):
    assert str(lake).startswith("s3://"), lake
    local_case.test_spark_reads_the_tiered_and_folded_lake(spark_s3, db, tierdb, case)
    # The lake really is in the bucket: every data file the table has is an s3:// object.
    seam = Seam(db, case.table)
    cut = seam.pin()
    seam.unpin(cut)
    assert cut.metadata_location.startswith(str(lake) + "/"), cut.metadata_location
    assert lake_files.list_files(lake, ".parquet"), f"no Parquet objects under {lake}"


def pyiceberg_s3_properties() -> dict:
    """pyiceberg's FileIO properties for the store TIERDB_S3_* name (pyarrow's S3FileSystem)."""
    return {
        "s3.endpoint": os.environ["TIERDB_S3_ENDPOINT"],
        "s3.access-key-id": os.environ["TIERDB_S3_ACCESS_KEY"],
        "s3.secret-access-key": os.environ["TIERDB_S3_SECRET_KEY"],
        "s3.region": os.environ.get("TIERDB_S3_REGION", "us-east-1"),
    }


def test_pyiceberg_reads_the_tiered_s3_lake(db, tierdb, lake):
    from pyiceberg.table import StaticTable

    case = local_case.CASES[0]
    db.psql(SESSION + case.ddl + f"CREATE TABLE truth AS SELECT * FROM {case.table};\n")
    proc = tierdb(["register", "--table", f"public.{case.table}", "--pk", case.pk, "--tier-key", case.tier_key])
    assert proc.returncode == 0, proc.stderr
    proc = run_once(tierdb, case.lag)
    assert "tiering: operation" in proc.stderr, proc.stderr
    seam = Seam(db, case.table)
    cut = seam.pin()
    seam.unpin(cut)
    assert cut.metadata_location.startswith("s3://"), cut.metadata_location
    fields = seam.fields(cut.metadata_location)

    table = StaticTable.from_metadata(cut.metadata_location, properties=pyiceberg_s3_properties())
    assert table.metadata.current_snapshot_id == cut.S
    got = arrow_rows(table.scan(snapshot_id=cut.S).to_arrow(), fields)
    want = cat_rows(fields, lake_cat(cut.metadata_location, cut.S), "lake cat")
    assert len(want) > local_case.ROWS // 3
    assert_same_rows(want, got, "pyiceberg against lake cat on S3")

    # After a fold the snapshot has equality deletes, which pyiceberg 0.12
    # refuses (docs/s3.md says so). When a pyiceberg reads them this fails,
    # and the comparison above should then cover the folded snapshot too.
    for key in local_case.cold_keys(db, seam, 2, 0):
        local_case.apply(db, seam.tombstone_sql(key))
    folded = local_case.fold(db, tierdb, case, seam, cut)
    table = StaticTable.from_metadata(folded.metadata_location, properties=pyiceberg_s3_properties())
    with pytest.raises(ValueError, match="equality deletes"):
        table.scan(snapshot_id=folded.S).to_arrow()
    assert len(lake_cat(folded.metadata_location, folded.S)) == len(want) - 2
