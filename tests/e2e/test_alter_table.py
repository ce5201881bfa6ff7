"""Schema changes of a registered table (SPEC §6; extension/src/ddl.c,
extension/src/columns.c, cli/schema_evolution.c, docs/schema-changes.md).

The rows below the cut-line live in the lake with the columns they had
when they moved.  The changes the lake can follow by Iceberg schema
evolution are carried: reads are exact at once (columns are matched by
lake field id, tierdb.columns and tierdb.column_defaults say what the lake
cannot), pending corrections follow, and the daemon evolves the lake at its
next step, keeping every field id:
  - RENAME COLUMN of a column that is not a key;
  - ADD COLUMN, nullable or NOT NULL, with no default or a non-volatile one
    (the lake's older rows read it);
  - DROP COLUMN of a column that is not a key;
  - widening a column's type (smallint/integer to a wider integer, real to
    double precision, numeric precision up at the same scale, varchar longer
    or to text).
Every other change of a registered table's columns (a volatile default,
identity or generated columns, other type changes, any change of a key
column), renaming or moving the table, and a DEFAULT partition of it are
refused before they happen, with an error that says why; nothing is
changed, reads stay exact and `tierdb verify` still passes.  Changes that
leave the columns alone (defaults, constraints, indexes, a range partition)
pass.

The database reads with production defaults (transparent reads on).
"""

from __future__ import annotations

import pytest

import lake_files

from test_tiering import SESSION, cutline, make_events, run_once

LAG = "2d"

# What a registered table's shape is made of: the columns with their types
# and defaults, its name and schema, its partitions.
SHAPE = (
    "SELECT string_agg(format('%s %s %s', a.attname, format_type(a.atttypid, a.atttypmod),"
    " coalesce(pg_get_expr(d.adbin, d.adrelid), '-')), ', ' ORDER BY a.attnum)"
    " || ' | ' || (SELECT string_agg(c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid), ', '"
    "   ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    "   WHERE i.inhparent = 'public.events'::regclass)"
    " FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
    " WHERE a.attrelid = 'public.events'::regclass AND a.attnum > 0 AND NOT a.attisdropped"
)
# Every row as the table reads (heap and lake), in one value.
ROWS = SESSION + "SELECT md5(string_agg(e::text, ',' ORDER BY id)), count(*) FROM events e"


def verify_ok(tierdb):
    proc = tierdb(["verify", "--table", "public.events"])
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"


@pytest.fixture
def tiered(db, tierdb):
    """events registered and tiered (7 of 10 daily partitions in the lake),
    with a correction of a cold row in the delta, read transparently."""
    make_events(db)
    db.psql(f'ALTER DATABASE "{db.name}" SET tierdb.transparent_reads = on')
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    db.psql(SESSION + "SELECT tierdb_upsert('events', jsonb_build_object("
            "'id', 10, 'ts', '2024-01-01 02:00:00+00', 'v', 'corrected', 'amount', 1.25))")
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "1"
    assert db.query("SELECT v FROM events WHERE id = 10") == [("corrected",)]
    verify_ok(tierdb)
    return db


# (statement, SQLSTATE, what the message must say)
REFUSED = [
    ("ALTER TABLE events ADD COLUMN extra int NOT NULL", "0A000",
     'cannot add column "extra" to table public.events: it is registered with TierDB'),
    ("ALTER TABLE events ADD COLUMN extra bigint GENERATED ALWAYS AS (id * 2) STORED", "0A000",
     'cannot add column "extra" to table public.events'),
    ("ALTER TABLE events ADD COLUMN extra int GENERATED ALWAYS AS IDENTITY", "0A000",
     'cannot add column "extra" to table public.events'),
    ("ALTER TABLE events ADD COLUMN ok int, ADD COLUMN extra int GENERATED ALWAYS AS IDENTITY", "0A000",
     'cannot add column "extra" to table public.events'),
    ("ALTER TABLE events ADD COLUMN extra int UNIQUE", "0A000",
     'cannot add column "extra" to table public.events'),
    # volatile: each heap row would get its own value (refused after the ALTER ran, which rolls it back)
    ("ALTER TABLE events ADD COLUMN extra timestamptz DEFAULT clock_timestamp()", "0A000",
     'cannot add column "extra" with a volatile default to table public.events'),
    ("ALTER TABLE events ADD COLUMN extra float8 DEFAULT random()", "0A000",
     'cannot add column "extra" with a volatile default to table public.events'),
    ("ALTER TABLE events ADD COLUMN extra serial", "0A000",
     'cannot add column "extra" with a volatile default to table public.events'),
    ("ALTER TABLE events DROP COLUMN ts", "0A000",
     'cannot drop column "ts" of table public.events'),
    ("ALTER TABLE events DROP COLUMN id CASCADE", "0A000",
     'cannot drop column "id" of table public.events'),
    ("ALTER TABLE events RENAME ts TO at", "0A000",
     'cannot rename column "ts" of table public.events'),
    ("ALTER TABLE events RENAME COLUMN id TO event_id", "0A000",
     'cannot rename column "id" of table public.events'),
    ("ALTER TABLE events ALTER COLUMN amount TYPE numeric(14,3)", "0A000",
     'cannot change the type of column "amount" of table public.events'),
    ("ALTER TABLE events ALTER COLUMN amount TYPE numeric(10,2)", "0A000",
     'cannot change the type of column "amount" of table public.events'),
    ("ALTER TABLE events ALTER COLUMN amount TYPE numeric", "0A000",
     'cannot change the type of column "amount" of table public.events'),
    ("ALTER TABLE events ALTER COLUMN amount TYPE float8", "0A000",
     'cannot change the type of column "amount" of table public.events'),
    ("ALTER TABLE events ALTER COLUMN v TYPE varchar(5)", "0A000",
     'cannot change the type of column "v" of table public.events'),
    ("ALTER TABLE events ALTER COLUMN v TYPE text COLLATE \"C\"", "0A000",
     'cannot change the type of column "v" of table public.events'),
    ("ALTER TABLE events ALTER COLUMN v TYPE int USING length(v)", "0A000",
     'cannot change the type of column "v" of table public.events'),
    ("ALTER TABLE events ALTER COLUMN id TYPE numeric", "0A000",
     'cannot change the type of column "id" of table public.events'),
    # nothing half-applied: the allowed first subcommand is not kept
    ("ALTER TABLE events ALTER COLUMN v SET DEFAULT 'x', DROP COLUMN amount,"
     " ALTER COLUMN ts TYPE timestamp", "0A000",
     'cannot change the type of column "ts" of table public.events'),
    ("ALTER TABLE events RENAME TO events_renamed", "0A000",
     "cannot rename table public.events: it is registered with TierDB"),
    ("CREATE SCHEMA other; ALTER TABLE events SET SCHEMA other", "0A000",
     "cannot change the schema of table public.events: it is registered with TierDB"),
    ("CREATE TABLE events_rest (LIKE events);"
     " ALTER TABLE events ATTACH PARTITION events_rest DEFAULT", "42P16",
     "cannot add a DEFAULT partition to table public.events: it is registered with TierDB"),
    ("CREATE TABLE events_rest PARTITION OF events DEFAULT", "42P16",
     "cannot add a DEFAULT partition to table public.events: it is registered with TierDB"),
]


@pytest.mark.parametrize("statement,sqlstate,message", REFUSED, ids=[s for s, _, _ in REFUSED])
def test_a_change_the_lake_does_not_follow_is_refused_and_changes_nothing(tiered, tierdb, statement,
                                                                            sqlstate, message):
    db = tiered
    shape, rows = db.query(SHAPE), db.query(ROWS)
    err = db.error("\\set ON_ERROR_STOP on\n" + statement)
    assert f"ERROR:  {sqlstate}: {message}" in err, err
    assert "docs/schema-changes.md" in err, err
    assert db.query(SHAPE) == shape
    assert db.query(ROWS) == rows
    verify_ok(tierdb)
    # ... and the next cycle still tiers and folds.
    run_once(tierdb, LAG)
    assert db.query(ROWS) == rows
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "0"
    verify_ok(tierdb)


def test_the_owner_is_refused_without_rights_on_the_catalog(tiered, tierdb):
    """The guard reads the catalog itself: an owner without any privilege on
    tierdb.tables gets the refusal (not "permission denied"), and may still
    make the changes that are allowed."""
    db = tiered
    db.psql("CREATE ROLE ddl_owner; ALTER TABLE events OWNER TO ddl_owner;\n"
            "DO $$ DECLARE p regclass; BEGIN FOR p IN SELECT inhrelid FROM pg_inherits"
            " WHERE inhparent = 'events'::regclass LOOP"
            " EXECUTE format('ALTER TABLE %s OWNER TO ddl_owner', p); END LOOP; END $$;")
    err = db.error("SET ROLE ddl_owner; ALTER TABLE events ADD COLUMN extra int GENERATED ALWAYS AS IDENTITY")
    assert 'cannot add column "extra" to table public.events' in err, err
    db.psql("SET ROLE ddl_owner; ALTER TABLE events ALTER COLUMN v SET DEFAULT 'fresh'")
    assert "'fresh'::text" in db.query(SHAPE)[0][0]
    # a carried rename writes TierDB's catalog as its owner, not as the table's
    db.psql("SET ROLE ddl_owner; ALTER TABLE events RENAME COLUMN v TO w")
    assert db.query(SESSION + "SELECT w FROM events WHERE id = 10") == [("corrected",)]
    # ... and so do a carried default, drop and widening
    db.psql("SET ROLE ddl_owner; ALTER TABLE events ADD COLUMN extra int DEFAULT 7;"
            " ALTER TABLE events DROP COLUMN w; ALTER TABLE events ALTER COLUMN amount TYPE numeric(14,2)")
    assert db.query(SESSION + "SELECT id, extra FROM events WHERE id IN (1, 10) ORDER BY id") \
        == [("1", "7"), ("10", "7")]


def test_a_replica_session_is_refused_too(tiered):
    """The guard is enabled ALWAYS: DDL replayed with
    session_replication_role = replica would leave the lake behind as well."""
    db = tiered
    shape = db.query(SHAPE)
    err = db.error("SET session_replication_role = replica; ALTER TABLE events DROP COLUMN id")
    assert 'cannot drop column "id" of table public.events' in err, err
    assert db.query(SHAPE) == shape


def test_changes_that_keep_the_columns_pass(tiered, tierdb):
    """Defaults, constraints, indexes, comments, a new range partition and
    other tables' column changes are untouched by the guard."""
    db = tiered
    rows = db.query(ROWS)
    db.psql(
        "ALTER TABLE events ALTER COLUMN v SET DEFAULT 'fresh';\n"
        "ALTER TABLE events ADD CONSTRAINT amount_small CHECK (amount < 1e9) NOT VALID;\n"
        "ALTER TABLE events ALTER COLUMN amount SET STATISTICS 500;\n"
        "CREATE INDEX events_v ON events (v);\n"
        "COMMENT ON COLUMN events.v IS 'a value';\n"
        "CREATE TABLE events_20240301 PARTITION OF events"
        " FOR VALUES FROM ('2024-03-01 00:00:00+00') TO ('2024-03-02 00:00:00+00');\n"
        "CREATE TABLE plain (a int); ALTER TABLE plain ADD COLUMN b int; ALTER TABLE plain RENAME a TO c;\n"
        "ALTER TABLE plain ALTER COLUMN b TYPE bigint; ALTER TABLE plain DROP COLUMN c;\n"
        "ALTER TABLE IF EXISTS no_such_table ADD COLUMN x int;\n"
        "CREATE TABLE parted (k int) PARTITION BY RANGE (k);"
        " CREATE TABLE parted_rest PARTITION OF parted DEFAULT;\n"
    )
    assert db.query(ROWS) == rows
    db.psql(SESSION + "INSERT INTO events (id, ts) VALUES (5001, '2024-03-01 01:00:00+00')")
    assert db.query("SELECT v FROM events WHERE id = 5001") == [("fresh",)]
    verify_ok(tierdb)
    run_once(tierdb, LAG)
    verify_ok(tierdb)


def test_an_unregistered_table_may_change_again(tiered, tierdb):
    db = tiered
    proc = tierdb(["unregister", "--table", "public.events"])
    assert proc.returncode == 0, proc.stderr
    db.psql("ALTER TABLE events ADD COLUMN extra int DEFAULT 42")
    assert db.query("SELECT DISTINCT extra FROM events") == [("42",)]


def test_changing_an_enum_or_composite_a_registered_table_holds_is_refused(db, tierdb):
    """The lake holds enum values as their labels: renaming one would leave
    the rows there unreadable.  The enum may be held directly, in an array,
    through a domain or in a composite; adding a value, and renaming one of
    an enum no registered table holds, pass."""
    db.psql(
        "CREATE TYPE direct AS ENUM ('a', 'b'); CREATE TYPE in_array AS ENUM ('a', 'b');"
        " CREATE TYPE in_domain AS ENUM ('a', 'b'); CREATE TYPE in_row AS ENUM ('a', 'b');"
        " CREATE TYPE unused AS ENUM ('a', 'b');\n"
        "CREATE DOMAIN over_enum AS in_domain; CREATE TYPE pair AS (x int, y in_row);\n"
        "CREATE TABLE moods (id int NOT NULL, k int NOT NULL, d direct, arr in_array[], dom over_enum, p pair)"
        " PARTITION BY RANGE (k);\n"
        "CREATE TABLE moods_0 PARTITION OF moods FOR VALUES FROM (0) TO (100);\n"
        "INSERT INTO moods VALUES (1, 1, 'a', '{a,b}', 'a', '(1,a)');"
    )
    proc = tierdb(["register", "--table", "public.moods", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    labels = "SELECT enumtypid::regtype::text, string_agg(enumlabel, ',' ORDER BY enumsortorder) FROM pg_enum GROUP BY 1 ORDER BY 1"
    before = db.query(labels)
    for enum in ("direct", "in_array", "in_domain", "in_row"):
        err = db.error(f"ALTER TYPE {enum} RENAME VALUE 'a' TO 'z'")
        assert (f'ERROR:  0A000: cannot rename value "a" of type {enum}: registered table public.moods uses the type'
                in err), err
    assert db.query(labels) == before
    db.psql("ALTER TYPE direct ADD VALUE 'c'; ALTER TYPE unused RENAME VALUE 'a' TO 'z'")
    assert dict(db.query(labels)) == {**dict(before), "direct": "a,b,c", "unused": "z,b"}

    # A composite's text form changes with its attributes (not with their names).
    attributes = "SELECT string_agg(attname || ' ' || atttypid::regtype, ', ' ORDER BY attnum) FROM pg_attribute" \
        " WHERE attrelid = 'pair'::regclass AND attnum > 0 AND NOT attisdropped"
    before = db.query(attributes)
    for change in ("ADD ATTRIBUTE z int", "DROP ATTRIBUTE x", "ALTER ATTRIBUTE x TYPE bigint"):
        err = db.error(f"ALTER TYPE pair {change}")
        assert ("ERROR:  0A000: cannot change the attributes of type pair: registered table public.moods"
                " uses the type" in err), err
    assert db.query(attributes) == before
    db.psql("ALTER TYPE pair RENAME ATTRIBUTE x TO w; CREATE TYPE loose AS (x int); ALTER TYPE loose ADD ATTRIBUTE y int")
    assert db.query(attributes) == [("w integer, y in_row",)]
    assert db.query("SELECT p FROM moods") == [("(1,a)",)]


# ------------------------------------------------------------ RENAME COLUMN

def same_rows(db, columns):
    """events (heap, lake and delta) reads as its untiered copy, whole and filtered."""
    for where in ("true", f"{columns[2]} LIKE 'v1%'", f"{columns[2]} IS NULL", "id = 10",
                  "ts < '2024-01-03 00:00:00+00'", f"{columns[-1]} IS NOT NULL"):
        sql = f"SELECT {', '.join(columns)} FROM {{table}} WHERE {where} ORDER BY id"
        assert db.query(SESSION + sql.format(table="events")) == db.query(sql.format(table="copy")), where


def lake_field_names(db):
    """The field names of the lake's current schema, as pyiceberg reads its metadata."""
    pyiceberg_table = pytest.importorskip("pyiceberg.table")
    from pathlib import Path
    ref = cutline(db, "events")["ref"]
    newest = max(Path(ref, "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    table = pyiceberg_table.StaticTable.from_metadata(str(newest))
    return [f.name for f in table.schema().fields], table


def duckdb_lake_rows(cut, columns):
    """The lake's rows at the published snapshot as DuckDB's iceberg_scan reads them, as text."""
    duckdb = pytest.importorskip("duckdb")
    import glob
    import importlib
    from pathlib import Path
    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    for package in ("duckdb_extension_avro", "duckdb_extension_iceberg"):
        module = pytest.importorskip(package)
        found = glob.glob(str(Path(module.__path__[0]) / "extensions" / f"v{duckdb.__version__}" / "*.duckdb_extension"))
        if not found:
            pytest.skip(f"{package} has no build for duckdb {duckdb.__version__}")
        con.execute(f"LOAD '{found[0]}'")
    lake_files.duckdb_reach_s3(con)
    rows = con.execute(f"SELECT {columns} FROM iceberg_scan(?, snapshot_from_id => ?) ORDER BY 1",
                       [cut["ref"], cut["S"]]).fetchall()
    con.close()
    return [tuple(None if v is None else str(v) for v in r) for r in rows]


def copy_below_t(db, columns):
    """The copy's rows below the cut-line T: what the lake holds."""
    return [tuple(r) for r in db.query(f"SELECT {columns} FROM copy WHERE ts <"
                                       " (SELECT to_timestamp(tier_key_hi / 1e6) FROM tierdb.cutline) ORDER BY id")]


def upsert_both(db, row_sql):
    """The same correction of a cold row to events (routed to the delta) and to copy."""
    db.psql(SESSION + f"SELECT tierdb_upsert('events', to_jsonb(r)) FROM ({row_sql}) r;\n"
            f"DELETE FROM copy WHERE id = (SELECT id FROM ({row_sql}) r);\n"
            f"INSERT INTO copy SELECT * FROM ({row_sql}) r;")


def same_before_and_after_the_cycle(db, tierdb, columns):
    """Reads as the copy and verifies, before and after a daemon cycle, which names the lake's fields so."""
    same_rows(db, columns)
    verify_ok(tierdb)
    run_once(tierdb, LAG)
    same_rows(db, columns)
    verify_ok(tierdb)
    assert lake_field_names(db)[0] == columns


def test_rename_column_is_carried_into_reads_the_delta_and_the_lake(tiered, tierdb):
    """A renamed column reads its lake values at once (by field id), pending
    corrections made before and after the rename read under the new name,
    the next cycle folds them and renames the lake's field (the ids stay),
    and other engines then see the new name; `verify` passes at each step."""
    db = tiered
    db.psql(SESSION + "CREATE TABLE copy AS SELECT * FROM events")
    same_rows(db, ["id", "ts", "v", "amount"])
    names_before, _ = lake_field_names(db)
    assert names_before == ["id", "ts", "v", "amount"]

    db.psql("ALTER TABLE events RENAME COLUMN v TO label; ALTER TABLE copy RENAME COLUMN v TO label")
    assert db.query(SESSION + "SELECT label FROM events WHERE id = 10") == [("corrected",)]
    # the lake's rows (the first 7 days) read their values, not NULL
    assert db.query(SESSION + "SELECT count(label) > 300 FROM events WHERE ts < '2024-01-03 00:00:00+00'") \
        == [("t",)]
    same_rows(db, ["id", "ts", "label", "amount"])
    # tierdb.lake_scan() matches by field id too
    snapshot = cutline(db, "events")["S"]
    assert db.query(f"SELECT count(label) = count(*) - count(*) FILTER (WHERE id % 17 = 0)"
                    f" FROM tierdb.lake_scan(NULL::events, {snapshot})") == [("t",)]
    assert db.query("SELECT payload ? 'label', payload ? 'v' FROM tierdb.delta") == [("t", "f")]
    verify_ok(tierdb)

    # a correction after the rename, by the new name
    upsert_both(db, "SELECT 11::bigint AS id, timestamptz '2024-01-01 02:10:00+00' AS ts,"
                    " 'after'::text AS label, 2.50::numeric(12,2) AS amount")
    same_rows(db, ["id", "ts", "label", "amount"])
    verify_ok(tierdb)

    run_once(tierdb, LAG)
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "0"
    same_rows(db, ["id", "ts", "label", "amount"])
    verify_ok(tierdb)
    names, table = lake_field_names(db)
    assert names == ["id", "ts", "label", "amount"]
    assert [f.field_id for f in table.schema().fields] == [1, 2, 3, 4]
    # DuckDB reads the lake under the new name, the files written before the rename by field id
    assert duckdb_lake_rows(cutline(db, "events"), "id, label") == copy_below_t(db, "id, label")

    # a second rename, now that the lake's field has the first new name
    db.psql("ALTER TABLE events RENAME label TO note; ALTER TABLE copy RENAME label TO note")
    same_before_and_after_the_cycle(db, tierdb, ["id", "ts", "note", "amount"])


def test_swapping_two_columns_names_reads_each_by_its_field(tiered, tierdb):
    """Names are not identities: after v and a third column swap names
    through a temporary one, each reads its own lake values, before and
    after the daemon follows."""
    db = tiered
    db.psql(SESSION + "CREATE TABLE copy AS SELECT * FROM events")
    swap = ("ALTER TABLE {t} RENAME v TO tmp; ALTER TABLE {t} RENAME amount TO v;"
            " ALTER TABLE {t} RENAME tmp TO amount;")
    db.psql(swap.format(t="events") + swap.format(t="copy"))
    assert db.query("SELECT column_name FROM tierdb.columns ORDER BY field_id") == [("amount",), ("v",)]
    same_before_and_after_the_cycle(db, tierdb, ["id", "ts", "amount", "v"])


def test_a_rename_that_fails_later_changes_nothing(tiered, tierdb):
    """The catalog and the delta are rewritten in the statement's own
    transaction: a rename Postgres then refuses (the name is taken) or a
    transaction rolled back leaves them as they were."""
    db = tiered
    before = db.query("SELECT payload::text FROM tierdb.delta")
    err = db.error("ALTER TABLE events RENAME COLUMN v TO amount")
    assert 'column "amount" of relation' in err and 'already exists' in err, err
    db.psql("BEGIN; ALTER TABLE events RENAME COLUMN v TO w; ROLLBACK;")
    assert db.query("SELECT payload::text FROM tierdb.delta") == before
    assert db.query("SELECT count(*) FROM tierdb.columns") == [("0",)]
    assert db.query(SESSION + "SELECT v FROM events WHERE id = 10") == [("corrected",)]
    verify_ok(tierdb)


# ------------------------------------------------------------ ADD COLUMN

def test_add_nullable_column_is_carried_into_reads_the_delta_and_the_lake(tiered, tierdb):
    """A nullable column without a default reads NULL for the lake's rows and
    for corrections written before it existed, its value for corrections
    written after; the next cycle folds them and adds the field to the lake
    (a new field id), which other engines then read; `verify` passes at each
    step.  A later rename of the added column is carried as well."""
    db = tiered
    db.psql(SESSION + "CREATE TABLE copy AS SELECT * FROM events")
    both = "ALTER TABLE {t} ADD COLUMN extra int CHECK (extra > 0), ADD COLUMN note text;"
    db.psql(both.format(t="events") + both.format(t="copy"))
    columns = ["id", "ts", "v", "amount", "note", "extra"]
    same_rows(db, columns)
    assert db.query(SESSION + "SELECT count(*), count(extra) FROM events WHERE ts < '2024-01-03 00:00:00+00'") \
        == [("600", "0")]
    verify_ok(tierdb)

    upsert_both(db, "SELECT 11::bigint AS id, timestamptz '2024-01-01 02:10:00+00' AS ts, 'after'::text AS v,"
                    " 2.50::numeric(12,2) AS amount, 5 AS extra, 'n'::text AS note")
    same_rows(db, columns)
    assert db.query(SESSION + "SELECT id, extra, note FROM events WHERE extra IS NOT NULL") == [("11", "5", "n")]
    verify_ok(tierdb)

    run_once(tierdb, LAG)
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "0"
    same_rows(db, columns)
    verify_ok(tierdb)
    names, table = lake_field_names(db)
    assert names == ["id", "ts", "v", "amount", "extra", "note"]
    assert [f.field_id for f in table.schema().fields] == [1, 2, 3, 4, 5, 6]
    assert not any(f.required for f in table.schema().fields[4:])
    lake = duckdb_lake_rows(cutline(db, "events"), "id, extra, note")
    assert [r for r in lake if r[1] is not None or r[2] is not None] == [("11", "5", "n")]
    assert len(lake) == int(db.query("SELECT count(*) FROM copy WHERE ts < "
                                     "(SELECT to_timestamp(tier_key_hi / 1e6) FROM tierdb.cutline)")[0][0])

    db.psql("ALTER TABLE events RENAME extra TO bonus; ALTER TABLE copy RENAME extra TO bonus")
    same_before_and_after_the_cycle(db, tierdb, ["id", "ts", "v", "amount", "bonus", "note"])


def test_add_column_with_a_default_reads_it_in_the_rows_already_in_the_lake(tiered, tierdb):
    """ADD COLUMN ... DEFAULT (nullable or NOT NULL, a constant or a stable
    expression evaluated once, a domain's default) reads the default in the
    lake's rows and in corrections made before the column existed, as
    Postgres gives it to the heap's rows; rows tiered and folded after it
    read their own values, NULL included.  Conditions on the column are
    answered exactly before and after the daemon adds the field (the lake's
    statistics do not know the default, so they are not used for it)."""
    db = tiered
    db.psql(SESSION + "CREATE TABLE copy AS SELECT * FROM events")
    both = ("ALTER TABLE {t} ADD COLUMN score int DEFAULT 42,"
            " ADD COLUMN tag text NOT NULL DEFAULT 'old',"
            " ADD COLUMN since date DEFAULT (date '2024-01-01' + 3),"
            " ADD COLUMN plain int, ADD COLUMN price numeric(8,2) DEFAULT 1.5, ADD COLUMN flag boolean DEFAULT true,"
            " ADD COLUMN at timestamptz DEFAULT '2024-01-05 10:00:00+02', ADD COLUMN gone float8 DEFAULT 'NaN';")
    db.psql("CREATE DOMAIN positive AS int DEFAULT 5 CHECK (VALUE > 0);" + both.format(t="events")
            + both.format(t="copy") + "ALTER TABLE events ADD COLUMN d positive; ALTER TABLE copy ADD COLUMN d positive;")
    columns = ["id", "ts", "v", "amount", "score", "tag", "since", "plain", "price", "flag", "at", "gone", "d"]
    # in a form any session reads back the same (ISO dates, whatever DateStyle the ALTER ran with)
    assert db.query("SELECT column_name, default_value, lake_sequence_number FROM tierdb.column_defaults"
                    " ORDER BY 1") == [("at", "2024-01-05 08:00:00+00", None), ("d", "5", None),
                                       ("flag", "t", None), ("gone", "NaN", None), ("price", "1.50", None),
                                       ("score", "42", None), ("since", "2024-01-04", None), ("tag", "old", None)]
    # the correction made before the ALTER reads the defaults too
    assert db.query(SESSION + "SELECT v, score, tag, since, d FROM events WHERE id = 10") \
        == [("corrected", "42", "old", "2024-01-04", "5")]

    def same():
        same_rows(db, columns)
        for where in ("score = 42", "score <> 42", "score IS NULL", "tag = 'old'", "tag > 'n'",
                      "since = '2024-01-04'", "d = 5", "score BETWEEN 40 AND 50 AND ts < '2024-01-05'"):
            sql = f"SELECT id, score, tag FROM {{t}} WHERE {where} ORDER BY id"
            assert db.query(SESSION + sql.format(t="events")) == db.query(sql.format(t="copy")), where

    same()
    verify_ok(tierdb)
    # rows made after the ALTER, hot and cold, with other values and NULL
    db.psql(SESSION + "UPDATE events SET score = NULL, tag = 'hot' WHERE id % 3 = 0 AND ts >= '2024-01-08';"
            " UPDATE copy SET score = NULL, tag = 'hot' WHERE id % 3 = 0 AND ts >= '2024-01-08';")
    upsert_both(db, "SELECT 11::bigint AS id, timestamptz '2024-01-01 02:10:00+00' AS ts, 'after'::text AS v,"
                    " 2.50::numeric(12,2) AS amount, NULL::int AS score, 'new'::text AS tag,"
                    " NULL::date AS since, 1 AS plain, 2.25::numeric(8,2) AS price, false AS flag,"
                    " timestamptz '2024-01-01 00:00:00+00' AS at, 1.5::float8 AS gone, 9::positive AS d")
    same()

    run_once(tierdb, LAG)  # folds the correction, adds the fields
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "0"
    assert db.query("SELECT count(*) FROM tierdb.column_defaults WHERE lake_sequence_number IS NULL") == [("0",)]
    same()
    verify_ok(tierdb)
    names, table = lake_field_names(db)
    assert names == columns
    # the defaults are the new fields' initial-default, which other engines give the older files' rows
    assert {f.name: f.initial_default for f in table.schema().fields if f.field_id > 4} == {
        "score": 42, "tag": "old", "since": __import__("datetime").date(2024, 1, 4), "plain": None,
        "price": __import__("decimal").Decimal("1.50"), "flag": True,
        "at": __import__("datetime").datetime(2024, 1, 5, 8, 0, tzinfo=__import__("datetime").timezone.utc),
        "gone": None, "d": 5}
    columns_read = "id, score, tag, since, price"
    assert duckdb_lake_rows(cutline(db, "events"), columns_read) == copy_below_t(db, columns_read)
    # the day tiered now holds values written after the ALTER (NULLs among them)
    run_once(tierdb, "1d")
    same()
    verify_ok(tierdb)
    assert db.query(SESSION + "SELECT count(*) FILTER (WHERE score IS NULL), count(*) FILTER (WHERE tag = 'hot')"
                    " FROM events WHERE ts < (SELECT to_timestamp(tier_key_hi / 1e6) FROM tierdb.cutline)") \
        == db.query("SELECT count(*) FILTER (WHERE score IS NULL), count(*) FILTER (WHERE tag = 'hot')"
                    " FROM copy WHERE ts < (SELECT to_timestamp(tier_key_hi / 1e6) FROM tierdb.cutline)")
    assert db.query(SESSION + "SELECT count(*) FROM events WHERE tag = 'hot'")[0][0] != "0"


def test_a_default_added_in_a_rolled_back_transaction_leaves_nothing(tiered, tierdb):
    db = tiered
    before = db.query("SELECT payload::text FROM tierdb.delta")
    db.psql("BEGIN; ALTER TABLE events ADD COLUMN score int DEFAULT 42; ROLLBACK;")
    assert db.query("SELECT count(*) FROM tierdb.column_defaults") == [("0",)]
    assert db.query("SELECT payload::text FROM tierdb.delta") == before
    err = db.error("ALTER TABLE events ADD COLUMN score float8 DEFAULT random()")
    assert "volatile default" in err, err
    assert db.query("SELECT count(*) FROM tierdb.column_defaults") == [("0",)]
    assert db.query("SELECT payload::text FROM tierdb.delta") == before


# ------------------------------------------------------------ DROP COLUMN

def test_drop_column_is_carried_and_a_new_column_of_the_name_reads_its_own_values(tiered, tierdb):
    """A dropped column leaves the reads and the pending corrections at
    once; the daemon drops its field (the other fields keep their ids, a
    field id is never reused).  A column added later under the same name
    is a new field: the lake's rows read its default or NULL, never the
    dropped column's values, before and after the daemon follows."""
    db = tiered
    db.psql(SESSION + "CREATE TABLE copy AS SELECT * FROM events")
    db.psql("ALTER TABLE events DROP COLUMN v; ALTER TABLE copy DROP COLUMN v;")
    assert db.query("SELECT payload ? 'v' FROM tierdb.delta") == [("f",)]
    same = ["id", "ts", "amount"]
    assert db.query(SESSION + "SELECT * FROM events WHERE id = 10") == db.query("SELECT * FROM copy WHERE id = 10")
    db.psql("ALTER TABLE events ADD COLUMN v text DEFAULT 'fresh'; ALTER TABLE copy ADD COLUMN v text DEFAULT 'fresh';")
    for columns in (same + ["v"],):
        assert db.query(SESSION + "SELECT DISTINCT v FROM events") == [("fresh",)]
        sql = f"SELECT {', '.join(columns)} FROM {{t}} ORDER BY id"
        assert db.query(SESSION + sql.format(t="events")) == db.query(sql.format(t="copy"))
    verify_ok(tierdb)
    run_once(tierdb, LAG)
    assert db.query(SESSION + "SELECT DISTINCT v FROM events") == [("fresh",)]
    sql = "SELECT id, ts, amount, v FROM {t} ORDER BY id"
    assert db.query(SESSION + sql.format(t="events")) == db.query(sql.format(t="copy"))
    verify_ok(tierdb)
    names, table = lake_field_names(db)
    assert names == ["id", "ts", "amount", "v"]
    assert [f.field_id for f in table.schema().fields] == [1, 2, 4, 5]
    # other engines read the evolved lake (the old files keep the dropped column's data, unread)
    assert duckdb_lake_rows(cutline(db, "events"), "id, amount") == copy_below_t(db, "id, amount")
    db.psql("ALTER TABLE events DROP COLUMN amount; ALTER TABLE copy DROP COLUMN amount;")
    run_once(tierdb, "1d")
    sql = "SELECT * FROM {t} ORDER BY id"
    assert db.query(SESSION + sql.format(t="events")) == db.query(sql.format(t="copy"))
    verify_ok(tierdb)


# ------------------------------------------------------------ type widening

@pytest.fixture
def widened(db, tierdb):
    """measures(id, day, i2, i4, r, n, s): registered, tiered, with a
    correction in the delta, and its untiered copy."""
    db.psql(
        "CREATE TABLE measures (id int NOT NULL, day date NOT NULL, i2 smallint, i4 int, r real,"
        " n numeric(6,2), s varchar(8)) PARTITION BY RANGE (day);\n"
        "DO $$ BEGIN FOR d IN 0..9 LOOP"
        "  EXECUTE format('CREATE TABLE %I PARTITION OF measures FOR VALUES FROM (%L) TO (%L)',"
        "    'measures_' || d, date '2024-01-01' + d, date '2024-01-01' + d + 1);"
        " END LOOP; END $$;\n"
        "INSERT INTO measures SELECT g, date '2024-01-01' + g % 10,"
        "  CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 30000 - 15000) END,"
        "  CASE WHEN g % 7 = 0 THEN NULL ELSE g * 99991 - 2000000000 END,"
        "  CASE WHEN g % 5 = 0 THEN NULL WHEN g % 9 = 0 THEN 'NaN' ELSE g / 7.0 + 0.1 END,"
        "  (g % 100000 - 50000) / 13.0, 's' || g"
        " FROM generate_series(1, 4000) g;\n"
    )
    proc = tierdb(["register", "--table", "public.measures", "--pk", "id", "--tier-key", "day"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "4d")
    db.psql(SESSION + "SELECT tierdb_upsert('measures', to_jsonb(m) || '{\"r\": 0.1, \"i4\": -7}')"
            " FROM measures m WHERE id = 20;\n"
            "CREATE TABLE copy AS SELECT * FROM measures;")
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "1"
    return db


def measures_same(db, columns="*"):
    for where in ("true", "i2 > 100", "i4 < 0", "r > 100", "r = 0.1", "n > 0", "s LIKE 's1%'", "id = 20",
                  "i4 IS NULL"):
        sql = f"SELECT {columns} FROM {{t}} WHERE {where} ORDER BY id"
        assert db.query(SESSION + sql.format(t="measures")) == db.query(sql.format(t="copy")), where


def test_widening_a_column_type_is_carried(widened, tierdb):
    """smallint->integer->bigint, real->double precision, numeric(6,2)->
    numeric(12,2), varchar(8)->varchar(20)->text: the lake's narrower
    fields read as the wider type (a real's double is the exact same value,
    as Postgres' cast gives it), the pending correction is converted, the
    daemon promotes the fields (int to long, float to double, decimal
    precision up; strings stay), and new rows use the full range."""
    db = widened
    verify = ["verify", "--table", "public.measures"]
    change = ("ALTER TABLE {t} ALTER COLUMN i2 TYPE int, ALTER COLUMN i4 TYPE bigint,"
              " ALTER COLUMN r TYPE double precision, ALTER COLUMN n TYPE numeric(12,2),"
              " ALTER COLUMN s TYPE varchar(20);")
    db.psql(change.format(t="measures") + change.format(t="copy"))
    measures_same(db)
    assert db.query(SESSION + "SELECT r FROM measures WHERE id = 20") == [("0.10000000149011612",)]
    assert tierdb(verify).returncode == 0
    db.psql("ALTER TABLE measures ALTER COLUMN i2 TYPE bigint, ALTER COLUMN s TYPE text;"
            " ALTER TABLE copy ALTER COLUMN i2 TYPE bigint, ALTER COLUMN s TYPE text;")
    measures_same(db)
    run_once(tierdb, "2d")
    assert db.query("SELECT count(*) FROM tierdb.delta")[0][0] == "0"
    measures_same(db)
    proc = tierdb(verify)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pyiceberg_table = pytest.importorskip("pyiceberg.table")
    from pathlib import Path
    ref = cutline(db, "measures")["ref"]
    newest = max(Path(ref, "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    schema = pyiceberg_table.StaticTable.from_metadata(str(newest)).schema()
    assert [(f.field_id, f.name, str(f.field_type)) for f in schema.fields] == [
        (1, "id", "int"), (2, "day", "date"), (3, "i2", "long"), (4, "i4", "long"), (5, "r", "double"),
        (6, "n", "decimal(12, 2)"), (7, "s", "string")]
    # values only the wider types hold, hot and cold
    db.psql(SESSION + "UPDATE measures SET i4 = 9000000000, n = 1234567890.12 WHERE id IN (29, 9999) AND day >= '2024-01-08';"
            "UPDATE copy SET i4 = 9000000000, n = 1234567890.12 WHERE id IN (29, 9999);"
            "INSERT INTO measures VALUES (9999, '2024-01-10', 1, 9000000000, 1e300, 1234567890.12, repeat('x', 50));"
            "INSERT INTO copy VALUES (9999, '2024-01-10', 1, 9000000000, 1e300, 1234567890.12, repeat('x', 50));")
    upsert_both_measures = ("SELECT tierdb_upsert('measures', to_jsonb(m) || '{\"i4\": 8000000000, \"r\": 1e300}')"
                            " FROM measures m WHERE id = 21;"
                            " UPDATE copy SET i4 = 8000000000, r = 1e300 WHERE id = 21;")
    db.psql(SESSION + upsert_both_measures)
    measures_same(db)
    run_once(tierdb, "1d")
    measures_same(db)
    assert tierdb(verify).returncode == 0


def test_defaults_iceberg_json_cannot_hold_are_read_from_the_catalog(tiered, tierdb):
    """A default the lake's initial-default cannot express (a five-digit or
    BC year, an infinity) leaves the new field without one: the daemon
    still follows, and Postgres reads the default from tierdb.column_defaults."""
    db = tiered
    db.psql("ALTER TABLE events ADD COLUMN far date DEFAULT '12000-01-01',"
            " ADD COLUMN ides date DEFAULT '0044-03-15 BC', ADD COLUMN top float8 DEFAULT 'Infinity'")
    want = [("12000-01-01", "0044-03-15 BC", "Infinity")]
    cold = SESSION + "SELECT DISTINCT far, ides, top FROM events WHERE ts < '2024-01-03'"
    assert db.query(cold) == want
    run_once(tierdb, LAG)
    assert db.query(cold) == want
    names, table = lake_field_names(db)
    assert names[-3:] == ["far", "ides", "top"]
    assert [f.initial_default for f in table.schema().fields[-3:]] == [None, None, None]
    verify_ok(tierdb)
