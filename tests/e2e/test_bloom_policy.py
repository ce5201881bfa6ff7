"""Parquet bloom filters on the columns a table's policy names (issue 21;
`tierdb policy --set bloom_columns=...`, cli/lakestep.c
tdb_lake_writer_options, docs/maintenance.md, docs/parquet.md).

A tiered table names two non-key columns in its policy. Every data file
written from then on, by tiering, by a fold and by compaction, carries
bloom filters on exactly those columns and the primary key (read from the
Parquet footer by pyarrow, probed by DuckDB), and a cold `=` or `IN` on a
value that lies inside every row group's min and max but is absent skips
the row groups by bloom filter (EXPLAIN's "Row Groups Pruned by Bloom
Filters"), while every answer equals an untiered copy of the same rows.
Bad policy values are refused with the column and the reason, and change
nothing. A mirror's copy and batches carry them as well, and so do the
files a direct table's transactions write in the backend.
"""

from __future__ import annotations

import json

import duckdb
import pyarrow.parquet as pq
import pytest

import lake_files
from test_cold_pruning import custom_node
from test_direct import as_server_user, direct  # noqa: F401 (fixtures)
from test_maintenance import run_maintain
import test_mirrored
from test_tiering import SESSION, cutline, run_once

LAG = "2d"
DAYS = 10
ROWS = 20000
NAMED = {"customer", "region"}
# Inside every row group's min and max (customers are even numbers spread over
# each day, regions 'r0'..'r999'), but absent: only a bloom filter rules them out.
ABSENT_CUSTOMERS = (12345, 54321)
ABSENT_REGION = "r123x"


def make_table(db, name):
    db.psql(
        SESSION
        + f"CREATE TABLE {name} (id bigint NOT NULL, ts timestamptz NOT NULL, customer int, region text,"
        " note text, flag boolean, payload jsonb, amount numeric) PARTITION BY RANGE (ts);\n"
        f"DO $$ BEGIN FOR d IN 0..{DAYS - 1} LOOP"
        f"  EXECUTE format('CREATE TABLE %I PARTITION OF {name} FOR VALUES FROM (%L) TO (%L)',"
        f"    '{name}_' || to_char(date '2024-01-01' + d, 'YYYYMMDD'),"
        "    (date '2024-01-01' + d)::timestamptz, (date '2024-01-01' + d + 1)::timestamptz);"
        " END LOOP; END $$;\n"
        f"INSERT INTO {name} SELECT g,"
        f"  timestamptz '2024-01-01 00:00:00+00' + (g - 1) * interval '{DAYS * 86400 // ROWS} seconds',"
        "  CASE WHEN g % 19 = 0 THEN NULL ELSE ((g * 7919) % 50000) * 2 END,"
        "  'r' || ((g * 31) % 1000), 'n' || (g % 977), g % 3 = 0, jsonb_build_object('g', g), g / 7.0"
        f" FROM generate_series(1, {ROWS}) g;\n"
    )


@pytest.fixture
def events(db, tierdb):
    make_table(db, "events")
    db.psql("CREATE TABLE plain AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    return db


def policy(tierdb, *args):
    proc = tierdb(["policy", "--table", "public.events", *args])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def live_data_files(db, table="events"):
    """The data files of the current snapshot, local paths."""
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.table import StaticTable

    ((snapshot, location),) = db.query(
        "SELECT c.lake_snapshot_id, c.lake_props->>'metadata_location' FROM tierdb.cutline c"
        f" JOIN tierdb.tables t USING (table_id) WHERE t.table_name = '{table}'")
    lake = StaticTable.from_metadata(location)
    snap, io = lake.metadata.snapshot_by_id(int(snapshot)), lake.io
    return sorted(str(lake_files.local(e.data_file.file_path)) for m in snap.manifests(io)
                  for e in m.fetch_manifest_entry(io, discard_deleted=True)
                  if e.data_file.content == DataFileContent.DATA)


def bloom_columns_of(path):
    """{column: [has a bloom filter, per row group]} from the Parquet footer, as pyarrow reads it."""
    md = pq.ParquetFile(path).metadata
    out = {}
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            out.setdefault(col.path_in_schema, []).append(
                col.bloom_filter_offset is not None and col.bloom_filter_offset > 0)
    return out


def assert_files_carry_blooms(db, named=NAMED, table="events"):
    files = live_data_files(db, table)
    assert files
    for path in files:
        blooms = bloom_columns_of(path)
        with_bloom = {c for c, gs in blooms.items() if all(gs)}
        without = {c for c, gs in blooms.items() if not any(gs)}
        assert with_bloom == named | {"id"} and without == set(blooms) - with_bloom, (path, blooms)
        # pyarrow reads the file whole
        assert pq.read_table(path).num_rows == pq.ParquetFile(path).metadata.num_rows
    return files


def ids(db, table, where):
    return db.query(f"{SESSION}SELECT id FROM {table} WHERE {where} ORDER BY id")


def cold(db, where):
    return custom_node(db, f"SELECT id FROM events WHERE {where}", "TierDB Cold Scan")


def cold_row_groups(db):
    node = cold(db, "true")
    return node["Row Groups Read"]


def assert_answers_equal_plain(db):
    present = db.query("SELECT customer, region FROM plain WHERE ts < '2024-01-05' AND customer IS NOT NULL"
                       " ORDER BY id LIMIT 3")
    conditions = [f"customer = {c}" for c in ABSENT_CUSTOMERS] + [f"region = '{ABSENT_REGION}'"]
    conditions += [f"customer IN ({ABSENT_CUSTOMERS[0]}, {ABSENT_CUSTOMERS[1]})"]
    conditions += [f"customer = {c}" for c, _ in present] + [f"region = '{r}'" for _, r in present]
    conditions += [f"customer IN ({present[0][0]}, {ABSENT_CUSTOMERS[0]})",
                   f"region IN ('{present[1][1]}', '{ABSENT_REGION}')", "customer IS NULL",
                   f"customer = {ABSENT_CUSTOMERS[0]} OR region = '{present[2][1]}'"]
    for where in conditions:
        assert ids(db, "events", where) == ids(db, "plain", where), where


def assert_absent_values_skip_by_bloom(db):
    total = cold_row_groups(db)
    assert total > 0
    for where in [f"customer = {ABSENT_CUSTOMERS[0]}", f"customer IN ({ABSENT_CUSTOMERS[0]}, {ABSENT_CUSTOMERS[1]})",
                  f"region = '{ABSENT_REGION}'"]:
        node = cold(db, where)
        figures = {k: v for k, v in node.items() if k.startswith(("Row Groups", "Lake Files"))}
        # every row group is ruled out: by its bloom filter unless the file's or its own bounds already did
        assert node["Row Groups Read"] == 0 and node["Row Groups Pruned by Bloom Filters"] > 0, (where, figures)
    # min/max alone cannot do it: without a bloom filter (note) row groups are read
    node = cold(db, "note = 'n12x'")
    assert node["Row Groups Pruned by Bloom Filters"] == 0 and node["Row Groups Read"] > 0, node


def test_policy_bloom_columns_reach_every_file_and_prune(events, tierdb):
    db = events
    out = policy(tierdb)
    assert "bloom_columns          none (default)" in out and "bloom_fpp              0.01 (default)" in out, out
    out = policy(tierdb, "--set", "bloom_columns=customer, region", "--set", "bloom_fpp=0.001",
                 "--set", "compaction=off")
    assert "bloom_columns          customer, region\n" in out and "bloom_fpp              0.001\n" in out, out

    run_once(tierdb, LAG)
    assert cutline(db, "events")["S"] is not None
    files = assert_files_carry_blooms(db)
    # DuckDB reads our bloom filters as we do: a present customer may be there, an absent one is not
    (present,) = db.query("SELECT customer FROM plain WHERE ts < '2024-01-02' AND customer IS NOT NULL LIMIT 1")[0]
    day1 = [f for f in files if pq.read_table(f, columns=["customer"]).column(0).to_pylist().count(int(present))]
    assert day1
    con = duckdb.connect()
    probe = "SELECT bool_and(bloom_filter_excludes) FROM parquet_bloom_probe(?, 'customer', ?)"
    assert con.execute(probe, [day1[0], int(present)]).fetchone() == (False,)
    assert con.execute(probe, [day1[0], ABSENT_CUSTOMERS[0]]).fetchone() == (True,)
    assert_absent_values_skip_by_bloom(db)
    assert_answers_equal_plain(db)

    # A fold (corrections of cold rows routed to the delta) writes its data file with the blooms too.
    for t in ("events", "plain"):
        db.psql(f"UPDATE {t} SET customer = customer + 2, region = 'r7' WHERE id % 97 = 1 AND ts < '2024-01-05';"
                f" DELETE FROM {t} WHERE id % 89 = 3 AND ts < '2024-01-05';")
    run_once(tierdb, LAG)
    assert db.query("SELECT count(*) FROM tierdb.delta") == [("0",)]
    folded = assert_files_carry_blooms(db)
    assert set(folded) - set(files), "the fold added no data file"
    assert_absent_values_skip_by_bloom(db)
    assert_answers_equal_plain(db)

    # Compaction rewrites the folded partitions' files: the rewritten files keep the blooms.
    policy(tierdb, "--set", "compaction=on")
    before = set(folded)
    maintain, daemon = run_maintain(db, tierdb)
    assert daemon.returncode == 0, daemon.stderr
    assert maintain is not None and maintain.returncode == 0, (maintain and maintain.stderr, daemon.stderr)
    assert "compaction: operation" in daemon.stderr, daemon.stderr
    compacted = assert_files_carry_blooms(db)
    assert set(compacted) - before, "compaction rewrote nothing"
    assert_absent_values_skip_by_bloom(db)
    assert_answers_equal_plain(db)

    # Unset: files written from now on carry the key's bloom filter only.
    policy(tierdb, "--unset", "bloom_columns")
    for t in ("events", "plain"):
        db.psql(f"UPDATE {t} SET note = 'changed' WHERE id % 101 = 2 AND ts < '2024-01-05'")
    run_once(tierdb, LAG)
    newest = set(live_data_files(db)) - set(compacted)
    assert newest
    for path in newest:
        blooms = bloom_columns_of(path)
        assert {c for c, gs in blooms.items() if any(gs)} == {"id"}, (path, blooms)
    assert_answers_equal_plain(db)


def test_bad_bloom_policy_values_are_refused_and_change_nothing(events, tierdb):
    db = events
    policy(tierdb, "--set", "bloom_columns=customer")
    stored = db.query("SELECT maintenance_policy::text FROM tierdb.tables")[0][0]
    refused = [
        ("bloom_columns=nosuch", 1, ['"nosuch" is not a column of public.events']),
        ("bloom_columns=Customer", 1, ['"Customer" is not a column of public.events', "matched exactly"]),
        ("bloom_columns=flag", 1, ['column "flag" (boolean) cannot use a bloom filter', "two values"]),
        ("bloom_columns=payload", 1, ['column "payload" (jsonb) cannot use a bloom filter', "not compared in the lake"]),
        ("bloom_columns=amount", 1, ['column "amount" (numeric) cannot use a bloom filter', "numeric(p,s)"]),
        ("bloom_columns=region,customer,region", 2, ["bloom_columns = 'region,customer,region' is not", "each once"]),
        ("bloom_columns=region,,customer", 2, ["is not 'none' or column names separated by commas"]),
        ("bloom_fpp=0.9", 2, ["bloom_fpp = '0.9' is not a probability from 0.0001 to 0.5"]),
        ("bloom_fpp=0", 2, ["is not a probability"]),
        ("bloom_fpp=often", 2, ["is not a probability"]),
    ]
    for bad, code, messages in refused:
        proc = tierdb(["policy", "--table", "public.events", "--set", "bloom_fpp=0.05", "--set", bad])
        assert proc.returncode == code, (bad, proc.returncode, proc.stdout, proc.stderr)
        for message in messages:
            assert message in proc.stderr, (bad, proc.stderr)
        # a refused change changes nothing, not even its valid part
        assert json.loads(db.query("SELECT maintenance_policy::text FROM tierdb.tables")[0][0]) == json.loads(stored)
    out = policy(tierdb, "--set", "bloom_columns=none")
    assert "bloom_columns          none\n" in out, out
    # the key's own column, named again, is accepted (it has its filter anyway)
    policy(tierdb, "--set", "bloom_columns=id,note,ts")


def test_a_policy_column_the_lake_lacks_is_left_out_with_a_warning(events, tierdb):
    """A named column dropped from the table later never stops tiering: its files go without that filter."""
    db = events
    policy(tierdb, "--set", "bloom_columns=customer,note")
    for t in ("events", "plain"):
        db.psql(f"ALTER TABLE {t} DROP COLUMN note")
    proc = run_once(tierdb, LAG)
    assert 'bloom_columns names "note", which the lake\'s schema does not have' in proc.stderr, proc.stderr
    for path in live_data_files(db):
        blooms = bloom_columns_of(path)
        assert {c for c, gs in blooms.items() if all(gs)} == {"id", "customer"}, (path, blooms)
    assert ids(db, "events", "customer = 2") == ids(db, "plain", "customer = 2")


def test_a_mirror_writes_the_policy_blooms_in_its_copy_and_its_batches(db, tierdb):
    test_mirrored.make_table(db)
    test_mirrored.register(tierdb, "--chunk-rows", "1000")
    proc = tierdb(["policy", "--table", "public.m", "--set", "bloom_columns=amount,blob"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "0")
    copied = assert_files_carry_blooms(db, {"amount", "blob"}, "m")
    db.psql("UPDATE m SET amount = amount + 1 WHERE id % 7 = 0;"
            " INSERT INTO m (id, ts, amount, blob) SELECT g, timestamptz '2024-01-02 00:00+00', g, '\\x01'"
            " FROM generate_series(5001, 5100) g;")
    run_once(tierdb, "0")
    batched = assert_files_carry_blooms(db, {"amount", "blob"}, "m")
    assert set(batched) - set(copied), "the batch wrote no data file"
    test_mirrored.assert_mirrored(db)


def test_a_direct_tables_transactions_write_the_policy_blooms(direct, as_server_user):
    """Direct mode writes its files in the backend (extension/src/direct.c): the key's bloom filter and the
    policy's, as the daemon's writers do."""
    db = direct
    proc = as_server_user(["policy", "--table", "public.events", "--set", "bloom_columns=v", "--set", "bloom_fpp=0.001"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    before = set(live_data_files(db))
    for t in ("events", "plain"):
        db.psql(SESSION + f"UPDATE {t} SET v = 'direct ' || id WHERE id % 40 = 0 AND ts < '2024-01-06'")
    written = set(live_data_files(db)) - before
    assert written, "the direct commit wrote no data file"
    for path in written:
        blooms = bloom_columns_of(path)
        assert {c for c, gs in blooms.items() if all(gs)} == {"id", "v"}, (path, blooms)
    for where in ("v = 'direct 40'", "v = 'absent'", "v IN ('direct 80', 'v7')"):
        assert ids(db, "events", where) == ids(db, "plain", where), where
