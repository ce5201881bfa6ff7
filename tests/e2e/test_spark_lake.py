"""Spark reads the lake the daemon writes (issue 4): after tiering and
folding, heap >= T ∪ (lake@S read by Spark with the Iceberg runtime ⊕ delta)
is exactly the rows written, value by value, for an integer tier key with a
composite pk and a timestamptz tier key with a one-column pk; so is the same
read at the older snapshot the fold replaced, with the delta as it was
then; and Spark's rows equal `tierdb lake cat`'s at every snapshot read.

Each table has a plain `truth` copy that every write also changes (seam.py),
so the expected rows come from Postgres, not from TierDB. Corrections are
delta rows written with plain SQL: upserts in place, upserts that move the
tier key (old_tier_key), a row moved twice before its fold, a row corrected
again after its fold, tombstones, and a row the lake never had. Spark runs
once for the whole test run (tests/interop/spark_support.py), in local mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from seam import SESSION, Seam, assert_same_rows, cat_rows, lake_cat, spark_rows
from spark_support import spark  # noqa: F401  (the session-scoped fixture; seam put tests/interop on the path)
from test_tiering import run_once

# These tests look at the heap and the lake separately.
pytestmark = pytest.mark.heap_and_lake_apart

# Columns of many types after each table's key columns, and their values
# for row number g: NULLs, non-ASCII and quoting characters, negative
# decimals, NaN and infinities, empty and NULL binaries, dates and
# timestamps on both sides of 1970.
PAYLOAD_COLUMNS = (
    "note text, amount numeric(12,2), reading float8, ok boolean, uid uuid, blob bytea, day date, seen timestamptz"
)
PAYLOAD_VALUES = (
    "CASE WHEN g % 11 = 0 THEN NULL ELSE 'n' || g || repeat('é', g % 3)"
    " || CASE WHEN g % 5 = 0 THEN E'\\t\"q\"\\\\' ELSE '' END END,"
    " CASE WHEN g % 13 = 0 THEN NULL ELSE ((g * 7919) % 2000000 - 1000000) / 100.0 END,"
    " CASE g % 29 WHEN 0 THEN NULL WHEN 1 THEN 'NaN'::float8 WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'"
    "  ELSE (g - 1500) / 7.0::float8 END,"
    " CASE WHEN g % 7 = 0 THEN NULL ELSE g % 2 = 0 END,"
    " CASE WHEN g % 19 = 0 THEN NULL ELSE md5(g::text)::uuid END,"
    " CASE WHEN g % 23 = 0 THEN NULL ELSE substr(decode(md5(g::text) || md5((g + 1)::text), 'hex'), 1, g % 20) END,"
    " CASE WHEN g % 17 = 0 THEN NULL ELSE date '1999-12-31' + ((g * 37) % 20000 - 10000) END,"
    " CASE WHEN g % 31 = 0 THEN NULL"
    "  ELSE timestamptz '1970-01-01 00:00:00+00' + (g - 2000) * interval '1 day 1 hour 1 minute 1.000001 second' END"
)


@dataclass
class Case:
    table: str
    ddl: str            # the partitioned table, its partitions, its rows (g = 1..ROWS)
    pk: str             # --pk
    tier_key: str
    lag: str
    expected_t: str     # SQL of the canonical T after the first cycle
    move_to: tuple      # two SET-list values of the tier key, both below T, in other partitions
    new_row: str        # a SELECT of one new row below T, under a pk not yet used


ROWS = 4000

CASES = [
    Case(
        table="meter",
        ddl=(
            f"CREATE TABLE meter (site int NOT NULL, seq int NOT NULL, k bigint NOT NULL, {PAYLOAD_COLUMNS})"
            " PARTITION BY RANGE (k);\n"
            "DO $$ BEGIN FOR p IN 0..9 LOOP"
            "  EXECUTE format('CREATE TABLE %I PARTITION OF meter FOR VALUES FROM (%s) TO (%s)',"
            "    'meter_' || p, p * 1000, (p + 1) * 1000);"
            " END LOOP; END $$;\n"
            # (site, seq) is unique (g = 7 * seq + site); k scatters the rows over 0 .. 7999.
            f"INSERT INTO meter SELECT g % 7, g / 7, (g * 7919) % 8000, {PAYLOAD_VALUES}"
            f" FROM generate_series(1, {ROWS}) g;\n"
        ),
        pk="site,seq",
        tier_key="k",
        lag="3500",  # max(k) = 7999: [0, 4000) moves
        expected_t="4000",
        move_to=("k = 3999", "k = 12"),
        new_row=f"SELECT 99, 99999, 1234::bigint, {PAYLOAD_VALUES} FROM (SELECT 4242 AS g) s",
    ),
    Case(
        table="ev",
        ddl=(
            f"CREATE TABLE ev (id bigint NOT NULL, ts timestamptz NOT NULL, {PAYLOAD_COLUMNS})"
            " PARTITION BY RANGE (ts);\n"
            "DO $$ BEGIN FOR d IN 0..9 LOOP"
            "  EXECUTE format('CREATE TABLE %I PARTITION OF ev FOR VALUES FROM (%L) TO (%L)',"
            "    'ev_' || to_char(date '2024-03-01' + d, 'YYYYMMDD'),"
            "    (date '2024-03-01' + d)::timestamptz, (date '2024-03-01' + d + 1)::timestamptz);"
            " END LOOP; END $$;\n"
            # Eight days of rows, to the microsecond; max(ts) is on 2024-03-08.
            f"INSERT INTO ev SELECT g, timestamptz '2024-03-01 00:00:00+00'"
            f" + (g - 1) * interval '{8 * 86400 // ROWS} seconds' + (g % 1000) * interval '1 microsecond',"
            f" {PAYLOAD_VALUES}"
            f" FROM generate_series(1, {ROWS}) g;\n"
        ),
        pk="id",
        tier_key="ts",
        lag="3d",  # max(ts) - 3d is on 2024-03-05: 03-01 .. 03-04 move
        expected_t="(extract(epoch FROM timestamptz '2024-03-05 00:00:00+00') * 1000000)::bigint",
        move_to=("ts = timestamptz '2024-03-04 23:59:59.999999+00'", "ts = timestamptz '2024-03-03 00:00:00+00'"),
        new_row=f"SELECT 424242::bigint, timestamptz '2024-03-02 02:02:02.020202+00', {PAYLOAD_VALUES}"
                " FROM (SELECT 4242 AS g) s",
    ),
]


def spark_read(spark, seam, fields, snapshot, vectorized="true"):  # noqa: F811
    """Spark's rows of the lake at `snapshot`, canonical; its columns must be the lake schema's."""
    df = (spark.read.format("iceberg").option("snapshot-id", snapshot)
          .option("vectorization-enabled", vectorized).load(seam.ref))
    got_fields, rows = spark_rows(df)
    # Spark has no uuid type: the Iceberg runtime reads uuids as strings.
    assert got_fields == [(n, "string" if t == "uuid" else t) for n, t in fields], f"Spark sees {got_fields}"
    return rows


def check_seam(spark, seam, fields, T, snapshot, delta, context):  # noqa: F811
    """heap >= T ∪ (lake@snapshot by Spark ⊕ delta) is truth; lake cat reads the same lake rows as Spark."""
    cold = spark_read(spark, seam, fields, snapshot)
    assert_same_rows(cat_rows(fields, lake_cat(seam.ref, snapshot), "lake cat"), cold,
                     f"{context}: Spark against lake cat at snapshot {snapshot}")
    rows = seam.merge(fields, T, cold, delta, seam.hot_rows(fields, T), context)
    assert_same_rows(seam.truth_rows(fields), rows, f"{context}: heap >= T ∪ Spark's lake@{snapshot} ⊕ delta")
    return cold


def cold_keys(db, seam, count, offset):
    """`count` keys ({column: text}) of rows of truth below T, in pk order from `offset`."""
    cols = ", ".join(seam.pk)
    rows = db.query(f"SELECT {cols} FROM truth t WHERE {seam.canon('t.' + seam.tier_key)}"
                    f" < (SELECT tier_key_hi FROM tierdb.cutline WHERE table_id = {seam.table_id})"
                    f" ORDER BY {cols} LIMIT {count} OFFSET {offset}")
    assert len(rows) == count, rows
    return [dict(zip(seam.pk, r)) for r in rows]


def apply(db, sql):
    """Runs one correction, which must change exactly one row."""
    assert len(db.query(SESSION + sql)) == 1, sql


def fold(db, tierdb, case, seam, before):
    """One cycle that folds the whole delta: S advances, T stays, the delta is empty."""
    proc = run_once(tierdb, case.lag)
    assert "fold: operation" in proc.stderr, proc.stderr
    after = seam.pin()
    seam.unpin(after)
    assert after.T == before.T and after.S != before.S
    assert db.query(f"SELECT count(*) FROM tierdb.delta WHERE table_id = {seam.table_id}") == [("0",)]
    return after


@pytest.mark.parametrize("case", CASES, ids=[c.table for c in CASES])
def test_spark_reads_the_tiered_and_folded_lake(spark, db, tierdb, case):  # noqa: F811
    db.psql(SESSION + case.ddl + f"CREATE TABLE truth AS SELECT * FROM {case.table};\n")
    proc = tierdb(["register", "--table", f"public.{case.table}", "--pk", case.pk, "--tier-key", case.tier_key])
    assert proc.returncode == 0, proc.stderr
    proc = run_once(tierdb, case.lag)
    assert "tiering: operation" in proc.stderr, proc.stderr
    seam = Seam(db, case.table)
    first = seam.pin()
    ((expected_t,),) = db.query(f"SELECT {case.expected_t}")
    assert first.T == int(expected_t) and first.S is not None
    fields = seam.fields(first.metadata_location)
    # Several partitions moved, and left the heap.
    below_t = f"{seam.canon(case.tier_key)} < {first.T}"
    assert db.query(f"SELECT count(*) > {ROWS // 3} FROM truth WHERE {below_t}") == [("t",)]
    assert db.query(f"SELECT count(*) FROM {case.table} WHERE {below_t}") == [("0",)]
    # Tiered only: the lake at S is the rows below T.
    check_seam(spark, seam, fields, first.T, first.S, [], "after tiering")
    seam.unpin(first)

    # Round 1: corrections of rows only the lake holds.
    a, b, c, d, e = cold_keys(db, seam, 5, 0)
    apply(db, seam.upsert_sql(a, "note = 'corrected ✓', amount = -0.01, reading = 'NaN', blob = '\\x'"))
    apply(db, seam.upsert_sql(b, f"{case.move_to[0]}, ok = NULL"))            # moves to another partition
    apply(db, seam.upsert_sql(c, case.move_to[0]))
    apply(db, seam.upsert_sql(c, f"{case.move_to[1]}, note = 'moved twice'"))  # the lake still has it where it was
    apply(db, seam.tombstone_sql(d))
    apply(db, seam.upsert_sql(e, "uid = '00000000-0000-0000-0000-000000000000', day = date '0001-01-01' + 730000"))
    apply(db, seam.tombstone_sql(e))                                            # corrected, then deleted
    apply(db, seam.insert_cold_sql(case.new_row))                               # a row the lake never had
    round1 = seam.pin()
    delta1 = seam.delta(fields)
    assert len(delta1) == 6 and round1.S == first.S
    check_seam(spark, seam, fields, round1.T, round1.S, delta1, "round 1, before the fold")
    seam.unpin(round1)

    folded1 = fold(db, tierdb, case, seam, round1)
    check_seam(spark, seam, fields, folded1.T, folded1.S, [], "round 1, folded")
    # The snapshot the fold replaced, with the delta as it was then, reads the same.
    check_seam(spark, seam, fields, round1.T, round1.S, delta1, "round 1, the older snapshot")

    # Round 2: rows the first fold wrote are corrected again (moved back, deleted).
    apply(db, seam.upsert_sql(c, f"{case.move_to[0]}, note = 'moved back'"))
    apply(db, seam.tombstone_sql(b))
    apply(db, seam.upsert_sql(a, "note = NULL, amount = NULL, reading = '-Infinity', blob = NULL"))
    round2 = seam.pin()
    delta2 = seam.delta(fields)
    assert len(delta2) == 3
    check_seam(spark, seam, fields, round2.T, round2.S, delta2, "round 2, before the fold")
    seam.unpin(round2)
    folded2 = fold(db, tierdb, case, seam, round2)
    cold = check_seam(spark, seam, fields, folded2.T, folded2.S, [], "round 2, folded")
    check_seam(spark, seam, fields, round2.T, round2.S, delta2, "round 2, the older snapshot")

    # Spark's row-based Parquet reader agrees with the vectorized one.
    assert_same_rows(cold, spark_read(spark, seam, fields, folded2.S, vectorized="false"),
                     "Spark's row reader against its vectorized reader")
