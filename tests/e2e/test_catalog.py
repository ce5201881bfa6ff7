"""The catalog CREATE EXTENSION tierdb makes: the names, types, keys and
checks of SPEC §4 (they are protocol: the daemon, the extension and Spark
all read and write them), the status view, the sealed-partition guard, and
that the extension leaves nothing behind when dropped.
"""

from __future__ import annotations

import subprocess
import uuid

import pytest

from pg_cluster import PG_BINDIR, Database

TS = "timestamp with time zone"

# SPEC §4, column by column, in order: (column, information_schema data_type).
EXPECTED_COLUMNS = {
    "storage_profiles": [
        ("profile_name", "text"), ("lake_format", "text"), ("warehouse", "text"),
        ("lake_config", "jsonb"), ("credential_ref", "text"), ("is_default", "boolean"),
        ("created_at", TS),
    ],
    "tables": [
        ("table_id", "bigint"), ("schema_name", "text"), ("table_name", "text"),
        ("primary_key_cols", "text[]"), ("tier_key_col", "text"), ("tier_key_type", "text"),
        ("partition_scheme", "jsonb"), ("lake_format", "text"), ("lake_table_ref", "text"),
        ("storage_profile", "text"), ("mode", "text"), ("publication_name", "text"),
        ("slot_name", "text"), ("heap_retention_lag", "bigint"),
        ("lake_retention_lag", "bigint"), ("keep_heap", "boolean"),
        ("maintenance_policy", "jsonb"), ("created_at", TS),
    ],
    "cutline": [
        ("table_id", "bigint"), ("tier_key_hi", "bigint"), ("lake_snapshot_id", "bigint"),
        ("replicated_lsn", "bigint"), ("retention_line", "bigint"), ("lake_props", "jsonb"),
        ("updated_at", TS),
    ],
    "partitions": [
        ("table_id", "bigint"), ("partition_id", "text"), ("tier_key_lo", "bigint"),
        ("tier_key_hi", "bigint"), ("state", "text"), ("updated_at", TS),
    ],
    "delta": [
        ("table_id", "bigint"), ("pk", "text"), ("op", "smallint"), ("tier_key", "bigint"),
        ("old_tier_key", "bigint"), ("version", "bigint"), ("payload", "jsonb"),
        ("updated_at", TS),
    ],
    "read_pins": [
        ("pin_id", "bigint"), ("table_id", "bigint"), ("pinned_lake_snapshot_id", "bigint"),
        ("pinned_tier_key_hi", "bigint"), ("started_at", TS), ("expires_at", TS),
        ("owner_role", "oid"),  # beyond SPEC §4: who may end the pin (30-routing.sql)
    ],
    "op_log": [
        ("op_id", "uuid"), ("table_id", "bigint"), ("op_kind", "text"), ("phase", "text"),
        ("lake_snapshot_id", "bigint"), ("details", "jsonb"), ("updated_at", TS),
    ],
    "load_labels": [
        ("table_id", "bigint"), ("label", "text"), ("state", "text"),
        ("staged_files", "jsonb"), ("result", "jsonb"), ("created_at", TS), ("updated_at", TS),
    ],
    "copy_progress": [
        ("table_id", "bigint"), ("consistent_point", "bigint"), ("last_pk", "jsonb"),
        ("chunks_done", "bigint"), ("updated_at", TS),
    ],
    "lake_stats": [
        ("table_id", "bigint"), ("stats", "jsonb"), ("warnings", "jsonb"), ("policy", "jsonb"),
        ("collected_at", TS),
    ],
    "maintenance_requests": [
        ("table_id", "bigint"), ("requested_at", TS), ("requested_by", "text"),
    ],
    "schema_meta": [("version", "integer"), ("applied_at", TS)],
    # beyond SPEC §4: which lake field a renamed column is (docs/schema-changes.md)
    "columns": [("table_id", "bigint"), ("field_id", "integer"), ("column_name", "text")],
    "column_defaults": [("table_id", "bigint"), ("column_name", "text"), ("default_value", "text"),
                        ("lake_sequence_number", "bigint")],
    # beyond SPEC §4: the mirror's published batches and their keys, for hybrid reads (docs/mirrored.md)
    "mirror_batches": [
        ("table_id", "bigint"), ("seq", "bigint"), ("op_id", "uuid"), ("lake_snapshot_id", "bigint"),
        ("replicated_lsn", "bigint"), ("xid_lo", "bigint"), ("xid_hi", "bigint"), ("xid_hi_running", "bigint"),
        ("tier_key_max", "bigint"), ("exact", "boolean"), ("truncated", "boolean"), ("published_at", TS),
    ],
    "mirror_keys": [("table_id", "bigint"), ("op_id", "uuid"), ("key", "jsonb")],
}

EXPECTED_PRIMARY_KEYS = {
    "storage_profiles": ["profile_name"],
    "tables": ["table_id"],
    "cutline": ["table_id"],
    "partitions": ["table_id", "partition_id"],
    "delta": ["table_id", "pk"],
    "read_pins": ["pin_id"],
    "op_log": ["op_id"],
    "load_labels": ["table_id", "label"],
    "copy_progress": ["table_id"],
    "lake_stats": ["table_id"],
    "maintenance_requests": ["table_id"],
    "columns": ["table_id", "field_id"],
    "column_defaults": ["table_id", "column_name"],
    "mirror_batches": ["table_id", "seq"],
}

STATUS_COLUMNS = [
    "table_id", "schema_name", "table_name", "mode", "cutline_t", "cutline_s",
    "mirror_frontier", "retention_line", "cutline_updated_at", "delta_backlog",
    "read_pins", "staged_loads", "copying", "partition_states", "unfoldable_rows", "lake_warnings",
    "slot_wal_bytes",
]

TABLE_ID = 16385


def register_row(db: Database, table_id=TABLE_ID, name="events", **overrides) -> None:
    """Inserts a tierdb.tables row for a tiered table, with `overrides`
    given as SQL expressions."""
    values = {
        "table_id": str(table_id),
        "schema_name": "'public'",
        "table_name": f"'{name}'",
        "primary_key_cols": "'{id}'",
        "tier_key_col": "'ts'",
        "tier_key_type": "'timestamptz'",
        "lake_table_ref": f"'/lake/public/{name}'",
        "mode": "'tiered'",
    }
    values.update(overrides)
    db.psql(
        f"INSERT INTO tierdb.tables ({', '.join(values)}) VALUES ({', '.join(values.values())})"
    )


def first_error_line(stderr: str) -> str:
    """The ERROR line of psql's stderr, without psql's "psql:<stdin>:1: " prefix."""
    for line in stderr.splitlines():
        at = line.find("ERROR:")
        if at >= 0:
            return line[at:]
    return stderr


def test_create_extension_makes_the_tierdb_schema(db):
    assert db.query(
        "SELECT extversion, extrelocatable FROM pg_extension WHERE extname = 'tierdb'"
    ) == [("0.1", "f")]
    # the schema belongs to the extension, so DROP EXTENSION takes it along
    assert db.query(
        "SELECT n.nspname FROM pg_depend d JOIN pg_namespace n ON n.oid = d.objid"
        " WHERE d.classid = 'pg_namespace'::regclass AND d.deptype = 'e'"
        "   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'tierdb')"
    ) == [("tierdb",)]
    # the catalog's place is protocol: it cannot be installed elsewhere ...
    err = db.error("DROP EXTENSION tierdb; CREATE EXTENSION tierdb SCHEMA public")
    assert 'extension "tierdb" must be installed in schema "pg_catalog"' in err, err
    # ... nor take over a schema tierdb that someone else made
    err = db.error("CREATE SCHEMA tierdb; CREATE EXTENSION tierdb")
    assert first_error_line(err) == 'ERROR:  42P06: schema "tierdb" already exists', err


def test_every_table_and_column_of_the_spec(db):
    rows = db.query(
        "SELECT c.table_name, c.column_name,"
        "       CASE WHEN c.data_type = 'ARRAY' THEN format_type(a.atttypid, NULL)"
        "            ELSE c.data_type END"
        "  FROM information_schema.columns c"
        "  JOIN information_schema.tables t USING (table_schema, table_name)"
        "  JOIN pg_attribute a ON a.attrelid = format('%I.%I', c.table_schema, c.table_name)::regclass"
        "                     AND a.attname = c.column_name"
        " WHERE c.table_schema = 'tierdb' AND t.table_type = 'BASE TABLE'"
        " ORDER BY c.table_name, c.ordinal_position"
    )
    actual = {}
    for table, column, data_type in rows:
        actual.setdefault(table, []).append((column, data_type))
    assert actual == EXPECTED_COLUMNS


def test_primary_keys(db):
    rows = db.query(
        "SELECT c.conrelid::regclass::text,"
        "       array_to_string(array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i)"
        "                             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n"
        "                             ORDER BY k.i), ',')"
        "  FROM pg_constraint c WHERE c.contype = 'p'"
        "   AND c.connamespace = 'tierdb'::regnamespace"
    )
    actual = {rel.removeprefix("tierdb."): cols.split(",") for rel, cols in rows}
    assert actual == EXPECTED_PRIMARY_KEYS


def test_timestamps_default_to_now_and_pins_must_expire(db):
    rows = db.query(
        "SELECT table_name, column_name, column_default, is_nullable"
        "  FROM information_schema.columns"
        " WHERE table_schema = 'tierdb' AND data_type = 'timestamp with time zone'"
        "   AND table_name <> 'status'"
    )
    for table, column, default, nullable in rows:
        if (table, column) == ("read_pins", "expires_at"):
            assert default is None and nullable == "NO"
        else:
            assert default == "now()", (table, column)


def test_unique_name_and_delta_index_and_version_sequence(db):
    register_row(db)
    err = db.error(
        "INSERT INTO tierdb.tables (table_id, schema_name, table_name, primary_key_cols,"
        " tier_key_col, tier_key_type, lake_table_ref) VALUES"
        " (16386, 'public', 'events', '{id}', 'ts', 'bigint', '/lake/x')"
    )
    assert "23505" in first_error_line(err)
    assert "tables_schema_name_table_name_key" in err

    index = db.query(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index"
        " WHERE indrelid = 'tierdb.delta'::regclass AND NOT indisprimary"
    )
    assert index == [("CREATE INDEX delta_table_id_tier_key_idx ON tierdb.delta USING btree (table_id, tier_key)",)]

    versions = db.query(
        f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key, payload) VALUES"
        f" ({TABLE_ID}, '1', 0, 10, '{{\"id\": 1}}'), ({TABLE_ID}, '2', 1, 20, NULL);"
        f"SELECT version FROM tierdb.delta ORDER BY pk"
    )
    last = db.query("SELECT last_value FROM tierdb.delta_version")
    v1, v2 = int(versions[0][0]), int(versions[1][0])
    assert v1 < v2 == int(last[0][0])


def test_seeded_default_profile_and_at_most_one_default(db):
    assert db.query(
        "SELECT profile_name, lake_format, warehouse, is_default FROM tierdb.storage_profiles"
    ) == [("default", "iceberg", "", "t")]

    db.psql("INSERT INTO tierdb.storage_profiles (profile_name, warehouse) VALUES ('s3', 's3://b/w')")
    err = db.error("UPDATE tierdb.storage_profiles SET is_default = true WHERE profile_name = 's3'")
    assert "23505" in first_error_line(err) and "storage_profiles_one_default" in err

    # moving the default in one statement works
    db.psql("UPDATE tierdb.storage_profiles SET is_default = (profile_name = 's3')")
    assert db.query("SELECT profile_name FROM tierdb.storage_profiles WHERE is_default") == [("s3",)]

    err = db.error("INSERT INTO tierdb.storage_profiles (profile_name) VALUES ('nowhere')")
    assert "23502" in first_error_line(err)  # warehouse is not null


def test_tables_reference_a_known_profile(db):
    err = db.error(
        f"INSERT INTO tierdb.tables (table_id, schema_name, table_name, primary_key_cols,"
        f" tier_key_col, tier_key_type, lake_table_ref, storage_profile) VALUES"
        f" ({TABLE_ID}, 'public', 'e', '{{id}}', 'ts', 'date', '/l', 'missing')"
    )
    assert "23503" in first_error_line(err)
    register_row(db)
    assert db.query("SELECT storage_profile, mode, keep_heap FROM tierdb.tables") == [("default", "tiered", "f")]


def test_schema_meta_is_version_1_and_one_row(db):
    assert db.query("SELECT version FROM tierdb.schema_meta") == [("1",)]
    err = db.error("INSERT INTO tierdb.schema_meta (version) VALUES (2)")
    assert "23505" in first_error_line(err)


# (what, SQL run after a tiered `events` row exists, constraint that refuses it)
REJECTED = [
    ("mode foo", "UPDATE tierdb.tables SET mode = 'foo'", "tables_mode_check"),
    ("tier key type int", "UPDATE tierdb.tables SET tier_key_type = 'int'", "tables_tier_key_type_check"),
    ("empty primary key", "UPDATE tierdb.tables SET primary_key_cols = '{}'", "tables_primary_key_cols_check"),
    ("slot on tiered", "UPDATE tierdb.tables SET slot_name = 's'", "tables_mirrored_only_check"),
    ("publication on direct", "UPDATE tierdb.tables SET mode = 'direct', publication_name = 'p'",
     "tables_mirrored_only_check"),
    ("heap retention on tiered", "UPDATE tierdb.tables SET heap_retention_lag = 10",
     "tables_mirrored_only_check"),
    ("lake retention on mirrored", "UPDATE tierdb.tables SET mode = 'mirrored', lake_retention_lag = 10",
     "tables_tiered_only_check"),
    ("keep heap on mirrored", "UPDATE tierdb.tables SET mode = 'mirrored', keep_heap = true",
     "tables_tiered_only_check"),
    ("keep heap with lake retention", "UPDATE tierdb.tables SET keep_heap = true, lake_retention_lag = 10",
     "tables_keep_heap_retention_check"),
    ("negative lake retention", "UPDATE tierdb.tables SET lake_retention_lag = -1",
     "tables_lake_retention_lag_check"),
    ("partition state bar",
     f"INSERT INTO tierdb.partitions VALUES ({TABLE_ID}, 'p0', 0, 10, 'bar')", "partitions_state_check"),
    ("empty partition range",
     f"INSERT INTO tierdb.partitions VALUES ({TABLE_ID}, 'p0', 10, 10, 'hot')", "partitions_range_check"),
    ("delta op 2",
     f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key, payload) VALUES ({TABLE_ID}, '1', 2, 0, '{{}}')",
     "delta_op_check"),
    ("upsert without a row",
     f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key) VALUES ({TABLE_ID}, '1', 0, 0)",
     "delta_upsert_payload_check"),
    ("op kind vacuum",
     f"INSERT INTO tierdb.op_log (table_id, op_kind, phase) VALUES ({TABLE_ID}, 'vacuum', 'start')",
     "op_log_op_kind_check"),
    ("load label state done",
     f"INSERT INTO tierdb.load_labels (table_id, label, state) VALUES ({TABLE_ID}, 'l', 'done')",
     "load_labels_state_check"),
    ("lake format delta", "INSERT INTO tierdb.storage_profiles (profile_name, lake_format, warehouse)"
     " VALUES ('d', 'delta', '/w')", "storage_profiles_lake_format_check"),
]


@pytest.mark.parametrize("sql,constraint", [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED])
def test_checks_reject_bad_values(db, sql, constraint):
    register_row(db)
    err = db.error(sql)
    assert "23514" in first_error_line(err), err
    assert constraint in err, err


# Rows each mode must accept (SPEC §3).
ACCEPTED = [
    ("tiered with lake retention", {"lake_retention_lag": "86400000000"}),
    ("tiered keep heap", {"keep_heap": "true"}),
    ("direct with lake retention", {"mode": "'direct'", "lake_retention_lag": "100"}),
    ("mirrored with plumbing and heap retention",
     {"mode": "'mirrored'", "publication_name": "'tierdb_pub'", "slot_name": "'tierdb_slot'",
      "heap_retention_lag": "1000"}),
]


@pytest.mark.parametrize("overrides", [a[1] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_checks_accept_every_mode(db, overrides):
    register_row(db, **overrides)
    assert db.query("SELECT count(*) FROM tierdb.tables") == [("1",)]


def test_status_view(db):
    columns = db.query(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = 'tierdb' AND table_name = 'status' ORDER BY ordinal_position"
    )
    assert [c for (c,) in columns] == STATUS_COLUMNS

    register_row(db, table_id=1, name="quiet")
    register_row(db, table_id=2, name="busy")
    db.psql(
        "INSERT INTO tierdb.cutline (table_id, tier_key_hi, lake_snapshot_id, replicated_lsn, retention_line)"
        "  VALUES (2, 1000, 77, NULL, 5);"
        "INSERT INTO tierdb.delta (table_id, pk, op, tier_key, payload) VALUES"
        "  (2, 'a', 0, 1, '{}'), (2, 'b', 1, 2, NULL), (1, 'c', 1, 3, NULL);"
        "INSERT INTO tierdb.read_pins (table_id, expires_at) VALUES"
        "  (2, now() + interval '15 minutes'), (2, now() - interval '1 second');"
        "INSERT INTO tierdb.load_labels (table_id, label, state) VALUES"
        "  (2, 'l1', 'staged'), (2, 'l2', 'staged'), (2, 'l3', 'committed');"
        "INSERT INTO tierdb.copy_progress (table_id) VALUES (2);"
        "INSERT INTO tierdb.partitions (table_id, partition_id, tier_key_lo, tier_key_hi, state) VALUES"
        "  (2, 'p0', 0, 10, 'tiered'), (2, 'p1', 10, 20, 'tiered'), (2, 'p2', 20, 30, 'hot');"
    )
    rows = db.query(
        "SELECT table_id, schema_name, table_name, mode, cutline_t, cutline_s, mirror_frontier,"
        " retention_line, cutline_updated_at IS NOT NULL, delta_backlog, read_pins, staged_loads,"
        " copying, partition_states FROM tierdb.status ORDER BY table_id"
    )
    assert rows == [
        ("1", "public", "quiet", "tiered", None, None, None, None, "f", "1", "0", "0", "f", "{}"),
        ("2", "public", "busy", "tiered", "1000", "77", None, "5", "t", "2", "1", "2", "t",
         '{"hot": 1, "tiered": 2}'),
    ]


def test_unregister_cascades_but_keeps_the_journal(db):
    register_row(db)
    db.psql(
        f"INSERT INTO tierdb.cutline (table_id, tier_key_hi) VALUES ({TABLE_ID}, 0);"
        f"INSERT INTO tierdb.partitions VALUES ({TABLE_ID}, 'p0', 0, 10, 'hot');"
        f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key) VALUES ({TABLE_ID}, '1', 1, 0);"
        f"INSERT INTO tierdb.read_pins (table_id, expires_at) VALUES ({TABLE_ID}, now());"
        f"INSERT INTO tierdb.load_labels (table_id, label) VALUES ({TABLE_ID}, 'l');"
        f"INSERT INTO tierdb.copy_progress (table_id) VALUES ({TABLE_ID});"
        f"INSERT INTO tierdb.lake_stats (table_id) VALUES ({TABLE_ID});"
        f"INSERT INTO tierdb.maintenance_requests (table_id) VALUES ({TABLE_ID});"
        f"INSERT INTO tierdb.columns VALUES ({TABLE_ID}, 3, 'renamed');"
        f"INSERT INTO tierdb.op_log (table_id, op_kind, phase) VALUES ({TABLE_ID}, 'tiering', 'committed');"
        f"DELETE FROM tierdb.tables WHERE table_id = {TABLE_ID};"
    )
    counts = db.query(
        "SELECT (SELECT count(*) FROM tierdb.cutline) + (SELECT count(*) FROM tierdb.partitions)"
        " + (SELECT count(*) FROM tierdb.delta) + (SELECT count(*) FROM tierdb.read_pins)"
        " + (SELECT count(*) FROM tierdb.load_labels) + (SELECT count(*) FROM tierdb.copy_progress)"
        " + (SELECT count(*) FROM tierdb.lake_stats) + (SELECT count(*) FROM tierdb.maintenance_requests)"
        " + (SELECT count(*) FROM tierdb.columns),"
        " (SELECT count(*) FROM tierdb.op_log)"
    )
    assert counts == [("0", "1")]


def test_drop_extension_removes_everything(db):
    register_row(db)
    db.psql("DROP EXTENSION tierdb")
    assert db.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'tierdb'") == [("0",)]
    assert db.query("SELECT count(*) FROM pg_proc WHERE proname = 'sealed_partition_guard'") == [("0",)]
    assert db.query("SELECT count(*) FROM pg_class WHERE relname IN ('delta_version', 'status')") == [("0",)]
    # and it comes back clean
    db.psql("CREATE EXTENSION tierdb")
    assert db.query("SELECT count(*) FROM tierdb.tables") == [("0",)]
    assert db.query("SELECT version FROM tierdb.schema_meta") == [("1",)]


def test_roles_and_their_grants(db):
    """SPEC §10: tierdb_worker has what the daemon needs on every catalog
    table and the coordination functions; tierdb_admin reads the catalog and
    writes registrations; PUBLIC may not take the coordination locks."""
    tables = [t for (t,) in db.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'tierdb'"
        " AND table_type = 'BASE TABLE'")]
    assert len(tables) >= 12
    for table in tables:
        assert db.query(
            f"SELECT has_table_privilege('tierdb_worker', 'tierdb.{table}', 'SELECT, INSERT, UPDATE, DELETE'),"
            f" has_table_privilege('tierdb_admin', 'tierdb.{table}', 'SELECT'),"
            f" has_table_privilege('public', 'tierdb.{table}', 'SELECT')") == [("t", "t", "f")], table
    assert db.query("SELECT has_table_privilege('tierdb_admin', 'tierdb.tables', 'INSERT, DELETE'),"
                    " has_sequence_privilege('tierdb_worker', 'tierdb.delta_version', 'USAGE')") == [("t", "t")]
    for fn in ("tierdb.wait_for_readers(bigint)", "tierdb.try_become_leader()"):
        assert db.query(f"SELECT has_function_privilege('tierdb_worker', '{fn}', 'EXECUTE'),"
                        f" has_function_privilege('public', '{fn}', 'EXECUTE')") == [("t", "f")], fn


SEALED_SETUP = """
CREATE TABLE public.events (id bigint, ts bigint) PARTITION BY RANGE (ts);
CREATE TABLE public.events_p0 PARTITION OF public.events FOR VALUES FROM (0) TO (100);
CREATE TABLE public.events_p1 PARTITION OF public.events FOR VALUES FROM (100) TO (200);
INSERT INTO public.events VALUES (1, 10), (2, 150);
"""


@pytest.mark.parametrize("sql", [
    "INSERT INTO public.events_p0 VALUES (3, 20)",
    "UPDATE public.events_p0 SET id = 4",
    "DELETE FROM public.events_p0",
    "TRUNCATE public.events_p0",
    "COPY public.events_p0 FROM STDIN",
    "TRUNCATE public.events",
], ids=["insert", "update", "delete", "truncate", "copy", "truncate-parent"])
def test_sealed_guard_refuses_writes_to_the_partition(db, sql):
    db.psql(
        SEALED_SETUP
        + "CREATE TRIGGER tierdb_sealed BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE"
        " ON public.events_p0 FOR EACH STATEMENT EXECUTE FUNCTION tierdb.sealed_partition_guard();"
    )
    err = db.error(sql)
    assert first_error_line(err) == (
        "ERROR:  55000: partition public.events_p0 of public.events is being moved to the lake"
    )
    assert "HINT:  Write rows of this range with tierdb_upsert()" in err
    # the other partition and the rows are untouched
    db.psql("INSERT INTO public.events_p1 VALUES (5, 160)")
    assert db.query("SELECT id FROM public.events ORDER BY id") == [("1",), ("2",), ("5",)]


def test_sealed_guard_as_row_trigger_catches_writes_through_the_parent(db):
    db.psql(
        SEALED_SETUP
        + "CREATE TRIGGER tierdb_sealed_rows BEFORE INSERT OR UPDATE OR DELETE"
        " ON public.events_p0 FOR EACH ROW EXECUTE FUNCTION tierdb.sealed_partition_guard();"
    )
    for sql in (
        "INSERT INTO public.events VALUES (3, 20)",
        "UPDATE public.events SET id = 4 WHERE ts = 10",
        "DELETE FROM public.events WHERE ts < 100",
    ):
        err = db.error(sql)
        assert "55000: partition public.events_p0 of public.events is being moved to the lake" in err, sql
    db.psql("INSERT INTO public.events VALUES (5, 160)")
    assert db.query("SELECT id FROM public.events ORDER BY id") == [("1",), ("2",), ("5",)]


def test_pg_dump_keeps_the_catalog_rows(pg, db):
    register_row(db)
    db.psql(
        "INSERT INTO tierdb.storage_profiles (profile_name, warehouse) VALUES ('s3', 's3://b/w');"
        f"INSERT INTO tierdb.cutline (table_id, tier_key_hi) VALUES ({TABLE_ID}, 42);"
        f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key) VALUES ({TABLE_ID}, '1', 1, 0);"
        f"INSERT INTO tierdb.read_pins (table_id, expires_at) VALUES ({TABLE_ID}, now() + interval '1 hour');"
    )
    dump = subprocess.run(
        [str(PG_BINDIR / "pg_dump"), "--no-owner", "-d", db.name],
        capture_output=True, text=True, timeout=120, env={**db.env},
    )
    assert dump.returncode == 0, dump.stderr
    copy = Database(pg, "t_" + uuid.uuid4().hex[:12])
    pg.psql(f'CREATE DATABASE "{copy.name}"')
    try:
        copy.psql(dump.stdout)
        assert copy.query("SELECT profile_name, is_default FROM tierdb.storage_profiles ORDER BY 1") == [
            ("default", "t"), ("s3", "f")]
        assert copy.query("SELECT table_name FROM tierdb.tables") == [("events",)]
        assert copy.query("SELECT tier_key_hi FROM tierdb.cutline") == [("42",)]
        assert copy.query("SELECT version FROM tierdb.schema_meta") == [("1",)]
        assert copy.query("SELECT count(*) FROM tierdb.read_pins") == [("0",)]
        # the delta version sequence continues past the restored rows
        versions = copy.query(
            f"INSERT INTO tierdb.delta (table_id, pk, op, tier_key) VALUES ({TABLE_ID}, '2', 1, 0);"
            "SELECT version FROM tierdb.delta ORDER BY pk"
        )
        assert int(versions[1][0]) > int(versions[0][0])
    finally:
        pg.psql(f'DROP DATABASE IF EXISTS "{copy.name}" WITH (FORCE)')
