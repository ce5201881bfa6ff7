"""`tierdb register`, `tierdb unregister` and `tierdb status` against a real
cluster and lake: the catalog rows registration writes (SPEC §4), the Iceberg
table it creates (SPEC §6), idempotence, every validation error leaving
nothing behind, and the connection sources of SPEC §8."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# 2024-01-01 00:00:00+00 and the next two midnights, in canonical microseconds.
JAN1_US = 1704067200_000000
DAY_US = 86400_000000

EVENTS_DDL = """
CREATE TABLE public.events (
    id bigint NOT NULL, seq int NOT NULL, amount numeric(10,2), payload jsonb, note text
) PARTITION BY RANGE (id);
CREATE TABLE public.events_p0 PARTITION OF public.events FOR VALUES FROM (0) TO (1000);
CREATE TABLE public.events_p1 PARTITION OF public.events FOR VALUES FROM (1000) TO (2000);
CREATE TABLE public.events_m1 PARTITION OF public.events FOR VALUES FROM (-1000) TO (0);
"""

# No declared primary key (SPEC §8: --pk need not be a constraint), a schema
# other than public.
READINGS_DDL = """
CREATE SCHEMA iot;
CREATE TABLE iot.readings (
    tenant int, sensor bigint, at timestamptz NOT NULL, value double precision, tag text
) PARTITION BY RANGE (at);
CREATE TABLE iot.readings_0102 PARTITION OF iot.readings
    FOR VALUES FROM ('2024-01-02 00:00:00+00') TO ('2024-01-03 00:00:00+00');
CREATE TABLE iot.readings_0101 PARTITION OF iot.readings
    FOR VALUES FROM ('2024-01-01 00:00:00+00') TO ('2024-01-02 00:00:00+00');
"""


def ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    return proc.stdout


def fails(proc, *phrases, code=1):
    assert proc.returncode == code, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    for phrase in phrases:
        assert phrase in proc.stderr, f"{phrase!r} not in stderr:\n{proc.stderr}"
    return proc.stderr


def catalog_counts(db):
    return db.query(
        "SELECT (SELECT count(*) FROM tierdb.tables), (SELECT count(*) FROM tierdb.cutline),"
        " (SELECT count(*) FROM tierdb.partitions)"
    )[0]


def lake_info(tierdb, location):
    return json.loads(ok(tierdb(["lake", "info", location, "--json"])))


def oid_of(db, name):
    return db.query(f"SELECT '{name}'::regclass::oid")[0][0]


def assert_nothing_written(db, lake):
    assert catalog_counts(db) == ("0", "0", "0")
    assert list(Path(lake).iterdir()) == [], "the failed registration left files in the lake"


# ---------------------------------------------------------------- register


def test_register_int8_key(db, lake, tierdb):
    db.psql(EVENTS_DDL)
    out = ok(tierdb("register --table public.events --pk id,seq --tier-key id"))
    assert "registered public.events" in out
    location = str(lake / "public" / "events")
    oid = oid_of(db, "public.events")

    row = db.query(
        "SELECT table_id, schema_name, table_name, primary_key_cols, tier_key_col, tier_key_type,"
        " partition_scheme, lake_format, lake_table_ref, storage_profile, mode, lake_retention_lag, keep_heap"
        " FROM tierdb.tables"
    )
    assert len(row) == 1
    (table_id, schema, table, pk, tk, tkt, scheme, fmt, ref, profile, mode, retention, keep_heap) = row[0]
    assert (table_id, schema, table, pk, tk, tkt) == (oid, "public", "events", "{id,seq}", "id", "bigint")
    assert json.loads(scheme) == {
        "lake_transform": "truncate[1000]", "lake_partition_width": 1000, "heap_partition_width": 1000}
    assert (fmt, ref, profile, mode, retention, keep_heap) == ("iceberg", location, "default", "tiered", None, "f")

    cut = db.query("SELECT table_id, tier_key_hi, lake_snapshot_id, replicated_lsn, retention_line,"
                   " lake_props FROM tierdb.cutline")
    assert len(cut) == 1
    assert cut[0][:5] == (oid, "-1000", None, None, None)  # T = the oldest partition's floor
    props = json.loads(cut[0][5])
    assert props == {"metadata_location": f"{location}/metadata/v1.metadata.json", "snapshot_id": None}
    assert Path(props["metadata_location"]).is_file()

    parts = db.query("SELECT table_id, partition_id, tier_key_lo, tier_key_hi, state FROM tierdb.partitions"
                     " ORDER BY tier_key_lo")
    assert parts == [
        (oid, "public.events_m1", "-1000", "0", "hot"),
        (oid, "public.events_p0", "0", "1000", "hot"),
        (oid, "public.events_p1", "1000", "2000", "hot"),
    ]

    info = lake_info(tierdb, location)
    assert [(f["id"], f["name"], f["type"], f["required"]) for f in info["schema"]["fields"]] == [
        (1, "id", "long", True),
        (2, "seq", "int", True),
        (3, "amount", "decimal(10, 2)", False),
        (4, "payload", "string", False),
        (5, "note", "string", False),
    ]
    spec = info["partition_spec"]["fields"]
    assert [(f["source"], f["transform"], f["field_id"]) for f in spec] == [("id", "truncate[1000]", 1000)]
    assert info["snapshots"] == [] and info["current_snapshot_id"] is None
    assert info["properties"]["tierdb.table-id"] == oid
    metadata = json.loads(Path(props["metadata_location"]).read_text())
    assert metadata["schemas"][0]["identifier-field-ids"] == [1, 2]


def test_register_timestamptz_key_composite_pk(db, lake, tierdb):
    db.psql(READINGS_DDL)
    ok(tierdb("register --table iot.readings --pk tenant,sensor --tier-key at --lake-retention 30d"))
    location = str(lake / "iot" / "readings")
    oid = oid_of(db, "iot.readings")
    row = db.query("SELECT table_id, primary_key_cols, tier_key_type, partition_scheme, lake_table_ref,"
                   " lake_retention_lag FROM tierdb.tables")[0]
    assert row[:3] == (oid, "{tenant,sensor}", "timestamptz")
    assert json.loads(row[3]) == {"lake_transform": "day", "heap_partition_width": DAY_US}
    assert row[4] == location
    assert row[5] == str(30 * DAY_US)
    cut = db.query("SELECT tier_key_hi, lake_snapshot_id, lake_props FROM tierdb.cutline")[0]
    assert cut[:2] == (str(JAN1_US), None)
    assert json.loads(cut[2])["metadata_location"] == f"{location}/metadata/v1.metadata.json"
    assert db.query("SELECT partition_id, tier_key_lo, tier_key_hi, state FROM tierdb.partitions"
                    " ORDER BY tier_key_lo") == [
        ("iot.readings_0101", str(JAN1_US), str(JAN1_US + DAY_US), "hot"),
        ("iot.readings_0102", str(JAN1_US + DAY_US), str(JAN1_US + 2 * DAY_US), "hot"),
    ]
    info = lake_info(tierdb, location)
    assert [(f["name"], f["type"], f["required"]) for f in info["schema"]["fields"]] == [
        ("tenant", "int", True),         # pk columns are required even without NOT NULL
        ("sensor", "long", True),
        ("at", "timestamptz", True),
        ("value", "double", False),
        ("tag", "string", False),
    ]
    assert [(f["source"], f["transform"]) for f in info["partition_spec"]["fields"]] == [("at", "day")]


@pytest.mark.parametrize("lake_partition,transform", [("hour", "hour"), ("month", "month"), ("none", None)])
def test_register_lake_partition_option(db, lake, tierdb, lake_partition, transform):
    db.psql(READINGS_DDL)
    ok(tierdb(["register", "--table", "iot.readings", "--pk", "sensor", "--tier-key", "at",
               "--lake-partition", lake_partition]))
    spec = lake_info(tierdb, str(lake / "iot" / "readings"))["partition_spec"]["fields"]
    assert [f["transform"] for f in spec] == ([transform] if transform else [])


def test_register_partition_width_and_other_key_types(db, lake, tierdb):
    db.psql("""
        CREATE TABLE public.small (k int2 NOT NULL, v text) PARTITION BY RANGE (k);
        CREATE TABLE public.small_a PARTITION OF public.small FOR VALUES FROM (-50) TO (50);
        CREATE TABLE public.days (id int, d date) PARTITION BY RANGE (d);
        CREATE TABLE public.days_a PARTITION OF public.days FOR VALUES FROM ('1970-01-11') TO ('1970-02-01');
        CREATE TABLE public.local (id int, t timestamp) PARTITION BY RANGE (t);
        CREATE TABLE public.local_a PARTITION OF public.local
            FOR VALUES FROM ('1970-01-01 00:01:00') TO ('1970-01-01 00:02:00');
    """)
    ok(tierdb("register --table small --pk k --tier-key k --partition-width 10"))
    ok(tierdb("register --table days --pk id --tier-key d --lake-partition month"))
    ok(tierdb("register --table local --pk id --tier-key t"))
    rows = db.query("SELECT t.table_name, t.tier_key_type, c.tier_key_hi, t.partition_scheme"
                    " FROM tierdb.tables t JOIN tierdb.cutline c USING (table_id) ORDER BY 1")
    assert [(r[0], r[1], r[2], json.loads(r[3])) for r in rows] == [
        ("days", "date", "10", {"lake_transform": "month", "heap_partition_width": 21}),
        ("local", "timestamp", "60000000", {"lake_transform": "day", "heap_partition_width": 60000000}),
        ("small", "bigint", "-50",
         {"lake_transform": "truncate[10]", "lake_partition_width": 10, "heap_partition_width": 100}),
    ]
    spec = lake_info(tierdb, str(lake / "public" / "small"))["partition_spec"]["fields"]
    assert [(f["source"], f["transform"]) for f in spec] == [("k", "truncate[10]")]
    ok(tierdb("register --table small --pk k --tier-key k --partition-width 10"))
    fails(tierdb("register --table small --pk k --tier-key k --partition-width 20"),
          "already registered with other settings", "truncate[10], now truncate[20]")


def test_register_again_is_a_noop_and_changes_are_named(db, lake, tierdb):
    db.psql(READINGS_DDL)
    args = "register --table iot.readings --pk tenant,sensor --tier-key at"
    ok(tierdb(args))
    before = db.query("SELECT t.*, c.* FROM tierdb.tables t JOIN tierdb.cutline c USING (table_id)")
    out = ok(tierdb(args))
    assert "already registered" in out and "nothing to do" in out
    assert db.query("SELECT t.*, c.* FROM tierdb.tables t JOIN tierdb.cutline c USING (table_id)") == before
    assert sorted(p.name for p in (lake / "iot" / "readings" / "metadata").iterdir()) == [
        "v1.metadata.json", "version-hint.text"]

    err = fails(tierdb("register --table iot.readings --pk sensor --tier-key at --lake-retention 7d"),
                "already registered with other settings")
    assert '--pk was ["tenant","sensor"], now ["sensor"]' in err
    assert "--lake-retention was none" in err
    assert "tierdb unregister --table iot.readings" in err
    assert db.query("SELECT t.*, c.* FROM tierdb.tables t JOIN tierdb.cutline c USING (table_id)") == before


VALIDATION_CASES = [
    # (setup SQL, arguments, exit code, phrases the error must contain)
    ("", "--table public.nosuch --pk id --tier-key id", 1, ["public.nosuch does not exist"]),
    ("CREATE TABLE public.plain (id int);", "--table plain --pk id --tier-key id", 1,
     ["public.plain is not partitioned", "PARTITION BY RANGE (id)"]),
    ("CREATE TABLE public.l (id int) PARTITION BY LIST (id);"
     "CREATE TABLE public.l1 PARTITION OF public.l FOR VALUES IN (1);",
     "--table l --pk id --tier-key id", 1, ["partitioned by LIST (id)", "BY RANGE"]),
    ("CREATE TABLE public.two (a int, b int) PARTITION BY RANGE (a, b);",
     "--table two --pk a --tier-key a", 1, ["RANGE (a, b)", "exactly the tier key"]),
    (EVENTS_DDL, "--table events --pk id --tier-key seq", 1, ["RANGE (id) but --tier-key is seq"]),
    (EVENTS_DDL, "--table public.events_p0 --pk id --tier-key id", 1, ["is a partition", "parent"]),
    ("CREATE TABLE public.f (x float8, id int) PARTITION BY RANGE (x);"
     "CREATE TABLE public.f1 PARTITION OF public.f FOR VALUES FROM (0) TO (1);",
     "--table f --pk id --tier-key x", 1, ["tier key x", "unsupported type"]),
    ("CREATE TABLE public.e (id int) PARTITION BY RANGE (id);",
     "--table e --pk id --tier-key id", 1, ["has no range partitions"]),
    ("CREATE TABLE public.u (id int) PARTITION BY RANGE (id);"
     "CREATE TABLE public.u1 PARTITION OF public.u FOR VALUES FROM (MINVALUE) TO (10);",
     "--table u --pk id --tier-key id", 1, ["public.u1", "unbounded"]),
    ("CREATE TABLE public.i (id int, t timestamptz) PARTITION BY RANGE (t);"
     "CREATE TABLE public.i1 PARTITION OF public.i FOR VALUES FROM ('2024-01-01+00') TO ('infinity');",
     "--table i --pk id --tier-key t", 1, ["public.i1", "unbounded"]),
    ("CREATE TABLE public.s (id int) PARTITION BY RANGE (id);"
     "CREATE TABLE public.s1 PARTITION OF public.s FOR VALUES FROM (0) TO (10) PARTITION BY RANGE (id);",
     "--table s --pk id --tier-key id", 1, ["public.s1", "itself partitioned"]),
    # A DEFAULT partition would swallow rows of the cold range (issue 16 item 5).
    (READINGS_DDL + "CREATE TABLE iot.readings_other PARTITION OF iot.readings DEFAULT;",
     "--table iot.readings --pk sensor --tier-key at", 1,
     ["has a DEFAULT partition (iot.readings_other)", "DETACH PARTITION iot.readings_other"]),
    # Ranges with a hole between them (item 13).
    ("CREATE TABLE public.g (id int NOT NULL) PARTITION BY RANGE (id);"
     "CREATE TABLE public.g1 PARTITION OF public.g FOR VALUES FROM (0) TO (10);"
     "CREATE TABLE public.g2 PARTITION OF public.g FOR VALUES FROM (20) TO (30);",
     "--table g --pk id --tier-key id", 1, ["a gap between partitions public.g1 and public.g2"]),
    # A nullable key column that holds NULLs cannot identify rows (item 13).
    ("CREATE TABLE public.n (id int NOT NULL, k int) PARTITION BY RANGE (id);"
     "CREATE TABLE public.n1 PARTITION OF public.n FOR VALUES FROM (0) TO (10);"
     "INSERT INTO public.n VALUES (1, 1), (2, NULL);",
     "--table n --pk k --tier-key id", 1, ["--pk column k of public.n holds NULLs", "SET NOT NULL"]),
    (EVENTS_DDL, "--table events --pk id,nope --tier-key id", 1, ["--pk names nope", "no such column"]),
    (READINGS_DDL, "--table iot.readings --pk tenant,value --tier-key at", 1,
     ["--pk column value is floating point"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --profile cold", 1,
     ["storage profile 'cold' does not exist"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --mode direct --keep-heap", 1,
     ["--keep-heap is not supported with --mode direct"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --mode mirrored --keep-heap", 1,
     ["--keep-heap applies to tiered and direct tables"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --chunk-rows 10", 1,
     ["--chunk-rows sizes a mirrored table's initial copy"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --keep-heap --lake-retention 10", 1,
     ["--lake-retention cannot be combined with --keep-heap"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --heap-retention 10", 1, ["needs --mode mirrored"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --lake-partition day", 1,
     ["--lake-partition applies to timestamp and date"]),
    (READINGS_DDL, "--table iot.readings --pk sensor --tier-key at --partition-width 10", 1,
     ["--partition-width applies to integer"]),
    (READINGS_DDL, "--table iot.readings --pk sensor --tier-key at --lake-retention 7w", 1,
     ["--lake-retention '7w'", "90s, 15m, 12h or 7d"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --lake-retention 0", 1, ["must be positive"]),
    (EVENTS_DDL, "--table events --pk id,id --tier-key id", 2, ["--pk names column id twice"]),
    (EVENTS_DDL, "--table events --pk id --tier-key id --lake-partition week", 2, ["hour, day, month, year"]),
    (EVENTS_DDL, "--table events --tier-key id", 2, ["--pk"]),
]


@pytest.mark.parametrize("setup,args,code,phrases", VALIDATION_CASES,
                         ids=[c[1].split()[1] + ":" + c[3][0][:30] for c in VALIDATION_CASES])
def test_register_validation_errors_write_nothing(db, lake, tierdb, setup, args, code, phrases):
    if setup:
        db.psql(setup)
    fails(tierdb("register " + args), *phrases, code=code)
    assert_nothing_written(db, lake)


def test_register_failing_catalog_transaction_removes_the_lake_table(db, lake, tierdb):
    db.psql(EVENTS_DDL + """
        CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
        CREATE TRIGGER refuse BEFORE INSERT ON tierdb.partitions FOR EACH ROW EXECUTE FUNCTION public.refuse();
    """)
    fails(tierdb("register --table events --pk id --tier-key id"), "refused by the test", "tierdb.partitions")
    assert catalog_counts(db) == ("0", "0", "0")
    assert not (lake / "public" / "events").exists()


def test_a_failing_mirrored_registration_leaves_no_slot_publication_or_lake(db, lake, tierdb):
    db.psql(EVENTS_DDL + """
        CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
        CREATE TRIGGER refuse BEFORE INSERT ON tierdb.copy_progress FOR EACH ROW EXECUTE FUNCTION public.refuse();
    """)
    fails(tierdb("register --table events --pk id --tier-key id --mode mirrored"), "refused by the test")
    assert catalog_counts(db) == ("0", "0", "0")
    assert db.query("SELECT (SELECT count(*) FROM pg_replication_slots), (SELECT count(*) FROM pg_publication)")[0] \
        == ("0", "0")
    assert not (lake / "public" / "events").exists()


def test_register_refuses_a_location_that_holds_files(db, lake, tierdb):
    db.psql(EVENTS_DDL)
    (lake / "public" / "events").mkdir(parents=True)
    (lake / "public" / "events" / "keep.txt").write_text("not ours")
    fails(tierdb("register --table events --pk id --tier-key id"), "is not empty")
    assert catalog_counts(db) == ("0", "0", "0")
    assert (lake / "public" / "events" / "keep.txt").read_text() == "not ours"


def test_profile_warehouse_wins_over_the_environment(db, lake, tierdb):
    db.psql(EVENTS_DDL)
    own = lake / "profile-warehouse"
    db.psql(f"INSERT INTO tierdb.storage_profiles (profile_name, warehouse) VALUES ('mine', '{own}')")
    ok(tierdb("register --table events --pk id --tier-key id --profile mine"))
    assert db.query("SELECT storage_profile, lake_table_ref FROM tierdb.tables") == [
        ("mine", str(own / "public" / "events"))]
    assert (own / "public" / "events" / "metadata" / "v1.metadata.json").is_file()


# ---------------------------------------------------------------- catalog checks


def test_catalog_newer_than_the_binary_is_refused(db, tierdb):
    db.psql("UPDATE tierdb.schema_meta SET version = 2")
    fails(tierdb("status"), "the tierdb catalog is version 2 but this tierdb understands up to 1; upgrade tierdb")
    db.psql(EVENTS_DDL)
    fails(tierdb("register --table events --pk id --tier-key id"), "upgrade tierdb")
    assert catalog_counts(db) == ("0", "0", "0")


def test_missing_extension_is_named(pg, db, tierdb):
    fails(tierdb("status", env={"PGDATABASE": "postgres"}),
          "run CREATE EXTENSION tierdb in database postgres first")


# ---------------------------------------------------------------- unregister


def test_unregister_keeps_or_drops_the_lake(db, lake, tierdb):
    db.psql(EVENTS_DDL + READINGS_DDL)
    ok(tierdb("register --table events --pk id --tier-key id"))
    ok(tierdb("register --table iot.readings --pk sensor --tier-key at"))
    db.psql("INSERT INTO tierdb.delta (table_id, pk, op, tier_key) SELECT table_id, '1', 1, -5 FROM tierdb.tables"
            " WHERE table_name = 'events'")
    events_lake = lake / "public" / "events"

    out = ok(tierdb("unregister --table events"))
    assert str(events_lake) in out and "stays" in out
    assert (events_lake / "metadata" / "v1.metadata.json").is_file()
    assert db.query("SELECT table_name FROM tierdb.tables") == [("readings",)]
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "0"
    assert db.query("SELECT count(*) FROM tierdb.partitions")[0][0] == "2"
    assert db.query("SELECT count(*) FROM public.events") == [("0",)]  # the table itself is untouched

    out = ok(tierdb("unregister --table iot.readings --drop-lake"))
    assert "removed" in out
    assert not (lake / "iot" / "readings").exists()
    assert catalog_counts(db) == ("0", "0", "0")

    # Not registered (any more): success, so reset scripts run on any database.
    out = ok(tierdb("unregister --table iot.readings"))
    assert "iot.readings is not registered; nothing to unregister" in out
    out = ok(tierdb("unregister --table public.never_created --drop-lake"))
    assert "public.never_created is not registered" in out


def test_nullable_key_without_nulls_registers(db, lake, tierdb):
    db.psql("CREATE TABLE public.n (id int NOT NULL, k int) PARTITION BY RANGE (id);"
            "CREATE TABLE public.n1 PARTITION OF public.n FOR VALUES FROM (0) TO (10);"
            "INSERT INTO public.n VALUES (1, 1), (2, 2);")
    ok(tierdb("register --table n --pk k --tier-key id"))


def test_unregister_of_an_unregistered_table_removes_leftovers(db, lake, tierdb):
    """Journal rows have no foreign key: those of the named table (not
    registered) and of tables that no longer exist go; others stay."""
    db.psql(EVENTS_DDL + READINGS_DDL)
    ok(tierdb("register --table iot.readings --pk sensor --tier-key at"))
    events, readings = oid_of(db, "public.events"), oid_of(db, "iot.readings")
    db.psql(f"INSERT INTO tierdb.op_log (table_id, op_kind, phase) VALUES"
            f" ({events}, 'tiering', 'sealing'), ({readings}, 'tiering', 'sealing'),"
            f" (4000000000, 'compaction', 'writing')")
    out = ok(tierdb("unregister --table public.events"))
    assert "public.events is not registered" in out and "removed 2 leftover" in out
    assert db.query("SELECT table_id FROM tierdb.op_log") == [(readings,)]


@pytest.mark.parametrize("name", ["..", "a/../../escape", ".hidden", "50%/x"])
def test_table_names_cannot_escape_the_warehouse(db, lake, tierdb, name):
    quoted = name.replace('"', '""')
    db.psql(f'CREATE TABLE public."{quoted}" (id int NOT NULL) PARTITION BY RANGE (id);'
            f'CREATE TABLE public."{quoted}_p" PARTITION OF public."{quoted}" FOR VALUES FROM (0) TO (10);')
    ok(tierdb(["register", "--table", f'public."{quoted}"', "--pk", "id", "--tier-key", "id"]))
    location = Path(db.query("SELECT lake_table_ref FROM tierdb.tables")[0][0])
    assert location.parent == lake / "public", location
    assert location.name not in (".", "..") and "/" not in location.name and not location.name.startswith(".")
    assert (location / "metadata" / "v1.metadata.json").is_file()
    assert sorted(p.name for p in lake.iterdir()) == ["public"]
    ok(tierdb(["unregister", "--table", f'public."{quoted}"', "--drop-lake"]))
    assert not location.exists() and (lake / "public").is_dir()


def test_ordinary_names_keep_their_location(db, lake, tierdb):
    db.psql('CREATE SCHEMA "My_Schema-1";'
            'CREATE TABLE "My_Schema-1"."Ev.ents_2" (id int NOT NULL) PARTITION BY RANGE (id);'
            'CREATE TABLE "My_Schema-1".p PARTITION OF "My_Schema-1"."Ev.ents_2" FOR VALUES FROM (0) TO (10);')
    ok(tierdb(["register", "--table", '"My_Schema-1"."Ev.ents_2"', "--pk", "id", "--tier-key", "id"]))
    assert db.query("SELECT lake_table_ref FROM tierdb.tables") == [(str(lake / "My_Schema-1" / "Ev.ents_2"),)]


def test_drop_lake_never_deletes_outside_the_tables_directory(db, lake, tierdb, tmp_path):
    db.psql(EVENTS_DDL)
    ok(tierdb("register --table events --pk id --tier-key id"))
    victim = tmp_path / "precious"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    # A catalog row pointing elsewhere (edited by hand, or another profile's path).
    db.psql(f"UPDATE tierdb.tables SET lake_table_ref = '{victim}'")
    fails(tierdb("unregister --table events --drop-lake"), "is not the table's own directory", "by hand")
    assert (victim / "keep.txt").read_text() == "mine"
    assert db.query("SELECT count(*) FROM tierdb.tables") == [("1",)]  # nothing half-applied
    # The right path, but a symbolic link out of the warehouse.
    own = lake / "public" / "events"
    db.psql(f"UPDATE tierdb.tables SET lake_table_ref = '{own}'")
    moved = tmp_path / "moved"
    own.rename(moved)
    own.symlink_to(moved)
    fails(tierdb("unregister --table events --drop-lake"), "outside the warehouse")
    assert (moved / "metadata" / "v1.metadata.json").is_file()


# ---------------------------------------------------------------- status


def test_status_text_and_json(db, lake, tierdb):
    db.psql(EVENTS_DDL + READINGS_DDL)
    assert "no tables are registered" in ok(tierdb("status"))
    assert json.loads(ok(tierdb("status --json"))) == []
    ok(tierdb("register --table events --pk id --tier-key id"))
    ok(tierdb("register --table iot.readings --pk sensor --tier-key at"))

    rows = json.loads(ok(tierdb("status --json")))
    assert [(r["schema_name"], r["table_name"], r["mode"], r["cutline_t"], r["cutline_s"],
             r["delta_backlog"], r["partition_states"]) for r in rows] == [
        ("iot", "readings", "tiered", JAN1_US, None, 0, {"hot": 2}),
        ("public", "events", "tiered", -1000, None, 0, {"hot": 3}),
    ]
    view = db.query("SELECT count(*) FROM tierdb.status")[0][0]
    assert view == "2"

    one = json.loads(ok(tierdb("status --json --table public.events")))
    assert len(one) == 1 and one[0]["table_id"] == int(oid_of(db, "public.events"))

    lines = ok(tierdb("status")).splitlines()
    assert lines[0].split()[:4] == ["table", "mode", "cutline_t", "cutline_s"]
    assert lines[1].startswith("iot.readings") and str(JAN1_US) in lines[1]
    assert lines[2].startswith("public.events") and " -1000 " in lines[2]
    # aligned: each column starts at the same offset on every line
    assert lines[0].index("mode") == lines[1].index("tiered") == lines[2].index("tiered")

    fails(tierdb("status --table public.nope"), "public.nope is not registered")


# ---------------------------------------------------------------- connections


def test_jdbc_url_and_dsn(pg, db, lake, tierdb):
    db.psql(EVENTS_DDL)
    no_pg_env = {"PGHOST": "", "PGPORT": "", "PGUSER": "", "PGDATABASE": "postgres"}
    jdbc = (f"jdbc:postgresql://{pg.host}:{pg.port}/{db.name}?user={pg.user}"
            "&ssl=false&sslmode=disable&ApplicationName=spark&loggerLevel=OFF")
    ok(tierdb("register --table events --pk id --tier-key id", env={**no_pg_env, "TIERDB_PG_URL": jdbc}))
    assert db.query("SELECT table_name FROM tierdb.tables") == [("events",)]
    rows = json.loads(ok(tierdb("status --json", env={**no_pg_env, "TIERDB_PG_URL": jdbc})))
    assert [r["table_name"] for r in rows] == ["events"]

    # --dsn wins over TIERDB_PG_URL, which wins over PG*
    rows = json.loads(ok(tierdb(["status", "--json", "--dsn", db.dsn],
                                env={"TIERDB_PG_URL": "postgres://nobody@127.0.0.1:1/none"})))
    assert [r["table_name"] for r in rows] == ["events"]
    rows = json.loads(ok(tierdb(["status", "--json", "--dsn", jdbc], env=no_pg_env)))
    assert [r["table_name"] for r in rows] == ["events"]
    err = fails(tierdb("status", env={"TIERDB_PG_URL": f"jdbc:postgresql://127.0.0.1:1/{db.name}?user=x"}),
                "cannot connect to Postgres using TIERDB_PG_URL")
    assert "port 1" in err
    fails(tierdb(["status", "--dsn", "postgres://127.0.0.1:1/x"]), "using --dsn")
    fails(tierdb("status", env={"PGPORT": "1"}), "the PG* environment")


def test_user_and_password_beside_a_jdbc_url(pg, db, lake, tierdb):
    """TIERDB_PG_USER / TIERDB_PG_PASSWORD go with a JDBC URL that names no
    user (as Spark passes them as properties); a user= in the URL wins."""
    hba = Path(pg.query("SHOW hba_file")[0][0])
    saved = hba.read_text()
    pg.psql("DROP ROLE IF EXISTS tierdb_pw_user; CREATE ROLE tierdb_pw_user LOGIN SUPERUSER PASSWORD 'sekret'")
    hba.write_text("host all tierdb_pw_user 127.0.0.1/32 scram-sha-256\n" + saved)
    pg.psql("SELECT pg_reload_conf()")
    try:
        db.psql(EVENTS_DDL)
        base = {"PGHOST": "", "PGPORT": "", "PGUSER": "", "PGPASSWORD": "", "PGDATABASE": "postgres",
                "TIERDB_PG_URL": f"jdbc:postgresql://{pg.host}:{pg.port}/{db.name}"}
        ok(tierdb("register --table events --pk id --tier-key id",
                  env={**base, "TIERDB_PG_USER": "tierdb_pw_user", "TIERDB_PG_PASSWORD": "sekret"}))
        assert db.query("SELECT table_name FROM tierdb.tables") == [("events",)]
        fails(tierdb("status", env={**base, "TIERDB_PG_USER": "tierdb_pw_user", "TIERDB_PG_PASSWORD": "wrong"}),
              "password authentication failed for user \"tierdb_pw_user\"")
        fails(tierdb("status", env={**base, "TIERDB_PG_USER": "tierdb_no_such_user"}),
              "tierdb_no_such_user")
        url_user = {**base, "TIERDB_PG_URL": base["TIERDB_PG_URL"] + f"?user={pg.user}",
                    "TIERDB_PG_USER": "tierdb_no_such_user"}
        assert [r["table_name"] for r in json.loads(ok(tierdb("status --json", env=url_user)))] == ["events"]
    finally:
        hba.write_text(saved)
        pg.psql("SELECT pg_reload_conf()")

