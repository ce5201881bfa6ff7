"""Routed corrections and the explicit read protocol (SPEC §5, §7;
extension/sql/0.1/30-routing.sql, extension/src/routing.c).

tierdb_upsert / tierdb_delete route a row by its tier key: at or above T into
the heap, below it into tierdb.delta (pk canonical, payload the normalised
row image, version from tierdb.delta_version, old_tier_key where the lake
copy lives when the write moves it). The scenarios keep an `expected` table
holding what the one logical table must contain, apply every routed write to
it with plain SQL too, and check three views against it: the SQL
tierdb_rewrite_scan returns, run as it is; and after `tierdb run --once`
folds the delta, the heap at or above T plus `tierdb lake cat` of the lake
at S.
"""

from __future__ import annotations

import json

import pytest

from test_tiering import SESSION, canonical_rows, cutline, lake_rows, make_events, run_once, usec

# The routed calls run with the production defaults; the helpers that look
# at the heap (rendered, scalar, fingerprint) read it alone.
HEAP_ONLY = "SET tierdb.transparent_reads = off;\n"

LAG = "2d"  # events: partitions 2024-01-01 .. 07 tier, T = 2024-01-08
T_EVENTS = "2024-01-08 00:00:00+00"

EVENTS_JSON = (
    "json_build_object('id', id, 'ts', to_char(ts, 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
    " 'v', v, 'amount', amount::text)::text"
)


def rendered(db, from_sql, render=EVENTS_JSON, session=HEAP_ONLY):
    """The rows of `from_sql` (a FROM item) as `lake cat` prints them, order-independent; the heap
    alone unless `session` says otherwise ("" reads as the user's sessions do)."""
    rows = db.query(SESSION + session + f"SELECT {render} FROM {from_sql}")
    return canonical_rows(json.loads(r[0]) for r in rows)


def scalar(db, sql, session=HEAP_ONLY):
    ((value,),) = db.query(SESSION + session + sql)
    return value


def scalar_int(db, expr):
    return int(scalar(db, f"SELECT {expr}"))


def text_value(db, expr):
    """The text `expr` gives, which may hold chr(31), psql's field separator here."""
    return bytes.fromhex(scalar(db, f"SELECT encode(convert_to({expr}, 'UTF8'), 'hex')")).decode()


def delta(db, table):
    """{pk: (op, tier_key, old_tier_key, payload)} of the table's delta rows."""
    rows = db.query(
        "SELECT encode(convert_to(d.pk, 'UTF8'), 'hex'), d.op, d.tier_key, d.old_tier_key, d.payload::text FROM tierdb.delta d"
        f" WHERE d.table_id = '{table}'::regclass::oid::bigint"
    )
    return {
        bytes.fromhex(pk).decode(): (int(op), int(tk), None if old is None else int(old), None if p is None else json.loads(p))
        for pk, op, tk, old, p in rows
    }


def rewrite_rows(db, table, render=EVENTS_JSON, pin=None):
    sql = scalar(db, f"SELECT tierdb_rewrite_scan('{table}'" + ("" if pin is None else f", {pin}") + ")")
    return rendered(db, f"({sql}) AS seam", render)


def lake_view(db, tierdb, table):
    c = cutline(db, table)
    return canonical_rows(lake_rows(tierdb, c["ref"], c["S"]))


def route(db, sql):
    """Runs one routed call in a UTC session with the server's settings and returns its result."""
    return scalar(db, f"SELECT {sql}", session="")


def fingerprint(db, table):
    """Everything a failed call must leave unchanged: the heap rows, the delta rows, the cut-line."""
    return (
        db.query(HEAP_ONLY + f"SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM {table} t"),
        db.query("SELECT pk, op, tier_key, old_tier_key, version, payload::text FROM tierdb.delta ORDER BY 1"),
        db.query("SELECT * FROM tierdb.cutline ORDER BY table_id"),
    )


def make_range_table(db, table, columns, key, bounds, rows_sql):
    """A table partitioned by range on `key` with one partition per (lo, hi)
    of `bounds` (SQL literals), filled by `rows_sql`, and its copy `expected`."""
    db.psql(
        f"CREATE TABLE {table} ({columns}) PARTITION BY RANGE ({key});\n"
        + "".join(f"CREATE TABLE {table}_{i} PARTITION OF {table} FOR VALUES FROM ({lo}) TO ({hi});\n"
                  for i, (lo, hi) in enumerate(bounds))
        + f"INSERT INTO {table} {rows_sql};\nCREATE TABLE expected AS SELECT * FROM {table};"
    )


@pytest.fixture
def events(db, tierdb):
    """events tiered with lag 2d (T = 2024-01-08); `expected` holds every row of the one logical table."""
    make_events(db)
    db.psql("CREATE TABLE expected AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    assert cutline(db, "events")["T"] == usec(db, T_EVENTS)
    assert scalar(db, "SELECT count(*) FROM events WHERE ts < '2024-01-08 00:00:00+00'") == "0"
    return db


def upsert_both(db, row_sql, as_role=None):
    """tierdb_upsert of the row `row_sql` (a SELECT of events' columns), as `as_role` if given, and the
    same change to `expected`."""
    prefix = "" if as_role is None else f"SET ROLE {as_role};\n"
    result = scalar(db, prefix + f"SELECT tierdb_upsert('events', (SELECT to_jsonb(r) FROM ({row_sql}) r))")
    db.psql(
        SESSION + f"CREATE TEMP TABLE new_row AS {row_sql};\n"
        "DELETE FROM expected WHERE id = (SELECT id FROM new_row);\n"
        "INSERT INTO expected SELECT * FROM new_row;"
    )
    return result


def check_seam(db, tierdb, T):
    """rewrite_scan's SQL gives `expected`; after a fold the heap and the lake do too, and the delta is empty."""
    assert rewrite_rows(db, "events") == rendered(db, "expected")
    proc = run_once(tierdb, LAG)
    assert "fold: operation" in proc.stderr, proc.stderr
    assert delta(db, "events") == {}
    assert lake_view(db, tierdb, "events") == rendered(db, f"expected WHERE ts < '{T}'")
    assert rendered(db, "events") == rendered(db, f"expected WHERE ts >= '{T}'")
    assert rewrite_rows(db, "events") == rendered(db, "expected")


def test_version(db):
    assert route(db, "tierdb_version()") == "tierdb 0.1 (catalog 1)"


def test_canonical_pk_agrees_with_the_fold(db):
    assert text_value(db, "tierdb.canonical_pk('a' || chr(31) || 'b\\c')") == "a\x1fb\\c"  # one part: as it is
    got = text_value(db, "tierdb.canonical_pk('1', 'a\\b', 'x' || chr(31) || 'y', '\\' || chr(31))")
    assert got == "1\x1fa\\\\b\x1fx\\\x1fy\x1f\\\\\\\x1f"
    # cli/fold.c's parser (append_pk_parts) gives the parts back.
    parts = text_value(db,
        "(SELECT array_agg(regexp_replace(p.m[1], '\\\\(.)', '\\1', 'g') ORDER BY p.n)::text"
        " FROM regexp_matches(tierdb.canonical_pk('1', 'a\\b', 'x' || chr(31) || 'y', '\\' || chr(31)),"
        " '((?:[^\\\\' || chr(31) || ']|\\\\.)*)(' || chr(31) || '|$)', 'g') WITH ORDINALITY AS p(m, n)"
        " WHERE p.n <= 4)"
    )
    assert parts == '{1,"a\\\\b",x\x1fy,"\\\\\x1f"}'
    err = db.error("SELECT tierdb.canonical_pk('1', NULL)")
    assert "a primary-key part is NULL" in err


def test_upsert_and_delete_route_a_timestamptz_table(events, tierdb):
    db = events
    T = T_EVENTS
    # hot: an update in place and a new row
    assert upsert_both(db, "SELECT id, ts, 'hot fix'::text AS v, amount FROM expected WHERE id = 2500") == "heap"
    assert upsert_both(db, "SELECT 5000::bigint AS id, timestamptz '2024-01-09 10:00:00+00' AS ts,"
                           " 'new hot'::text AS v, 2.50::numeric(12,2) AS amount") == "heap"
    assert scalar(db, "SELECT v FROM events WHERE id = 2500") == "hot fix"
    assert delta(db, "events") == {}

    # cold: a correction in place, a new row, a move within the lake
    assert upsert_both(db, "SELECT id, ts, 'cold fix'::text AS v, amount FROM expected WHERE id = 5") == "delta"
    assert upsert_both(db, "SELECT 6000::bigint AS id, timestamptz '2024-01-03 01:02:03.456789+00' AS ts,"
                           " 'new cold'::text AS v, 1.50::numeric(12,2) AS amount") == "delta"
    ts20 = usec(db, scalar(db, "SELECT ts FROM expected WHERE id = 20"))
    assert upsert_both(db, "SELECT id, timestamptz '2024-01-05 12:00:00+00' AS ts, v, amount FROM expected"
                           " WHERE id = 20") == "delta"
    d = delta(db, "events")
    op, tk, old, payload = d["5"]
    assert (op, tk, old) == (0, usec(db, scalar(db, "SELECT ts FROM expected WHERE id = 5")), None)
    assert payload == json.loads(scalar(db, "SELECT to_jsonb(e)::text FROM expected e WHERE id = 5"))
    assert d["6000"][:3] == (0, usec(db, "2024-01-03 01:02:03.456789+00"), None)
    # the lake copy of 20 is on its old day: the fold deletes it there
    assert d["20"][:3] == (0, usec(db, "2024-01-05 12:00:00+00"), ts20)

    # moves across T: cold 30 goes hot, hot 2900 goes cold
    ts30 = usec(db, scalar(db, "SELECT ts FROM expected WHERE id = 30"))
    assert upsert_both(db, "SELECT id, timestamptz '2024-01-09 00:00:30+00' AS ts, v, amount FROM expected"
                           " WHERE id = 30") == "heap"
    assert delta(db, "events")["30"][:3] == (1, ts30, None)
    assert scalar(db, "SELECT count(*) FROM events WHERE id = 30") == "1"
    assert upsert_both(db, "SELECT id, timestamptz '2024-01-02 00:00:00+00' AS ts, 'moved down'::text AS v,"
                           " amount FROM expected WHERE id = 2900") == "delta"
    assert scalar(db, "SELECT count(*) FROM events WHERE id = 2900") == "0"
    assert delta(db, "events")["2900"][:3] == (0, usec(db, "2024-01-02 00:00:00+00"), None)
    # ... and a row corrected twice keeps its lake copy's location
    assert upsert_both(db, "SELECT id, timestamptz '2024-01-06 00:00:00+00' AS ts, 'again'::text AS v, amount"
                           " FROM expected WHERE id = 20") == "delta"
    assert delta(db, "events")["20"][:3] == (0, usec(db, "2024-01-06 00:00:00+00"), ts20)

    # deletes: cold, hot, and rows that do not exist
    ts10 = scalar(db, "SELECT ts FROM expected WHERE id = 10")
    assert route(db, f"tierdb_delete('events', '10', timestamptz '{ts10}')") == "delta"
    assert delta(db, "events")["10"][:3] == (1, usec(db, ts10), None)
    ts2600 = scalar(db, "SELECT ts FROM expected WHERE id = 2600")
    assert route(db, f"tierdb_delete('events', '2600', timestamptz '{ts2600}')") == "heap"
    assert route(db, "tierdb_delete('events', '777777', timestamptz '2024-01-04')") == "none"
    assert route(db, "tierdb_delete('events', '777777', timestamptz '2024-01-09')") == "none"
    assert "777777" not in delta(db, "events")
    db.psql("DELETE FROM expected WHERE id IN (10, 2600)")

    check_seam(db, tierdb, T)


def test_a_cold_row_moved_hot_and_back(events, tierdb):
    db = events
    assert upsert_both(db, "SELECT id, timestamptz '2024-01-09 00:00:00+00' AS ts, v, amount FROM expected"
                           " WHERE id = 40") == "heap"
    ts = usec(db, "2024-01-03 00:00:00+00")
    lake_at = delta(db, "events")["40"][1]
    assert upsert_both(db, "SELECT id, timestamptz '2024-01-03 00:00:00+00' AS ts, 'back'::text AS v, amount"
                           " FROM expected WHERE id = 40") == "delta"
    # the lake copy is still where the tombstone pointed, the heap copy is gone
    assert delta(db, "events")["40"][:3] == (0, ts, lake_at)
    assert scalar(db, "SELECT count(*) FROM events WHERE id = 40") == "0"
    check_seam(db, tierdb, T_EVENTS)


READINGS_JSON = "json_build_object('site', site, 'tag', tag, 'seq', seq, 'val', val)::text"
TAGS_SQL = "(ARRAY['plain', 'a\\b', 'x' || chr(31) || 'y', '\\' || chr(31)])[g % 4 + 1]"


def test_a_bigint_table_with_a_composite_key(db, tierdb):
    """(site, tag) with tags needing the canonical escaping; seq is the tier key, not part of the key."""
    make_range_table(db, "readings", "site int NOT NULL, tag text NOT NULL, seq bigint NOT NULL, val float8", "seq",
                     [(p * 100, (p + 1) * 100) for p in range(5)],
                     f"SELECT g, {TAGS_SQL}, g, g / 4.0 FROM generate_series(0, 479) g")
    proc = tierdb(["register", "--table", "public.readings", "--pk", "site,tag", "--tier-key", "seq"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "150")
    assert cutline(db, "readings")["T"] == 300

    def upsert(row_sql, where):
        result = route(db, f"tierdb_upsert('readings', (SELECT to_jsonb(r) FROM ({row_sql}) r))")
        db.psql(f"CREATE TEMP TABLE new_row AS {row_sql};\nDELETE FROM expected WHERE {where};\n"
                "INSERT INTO expected SELECT * FROM new_row;")
        return result

    # 7 (tag '\' chr(31)) corrected in place; 14 moved to seq 250; 101 moved hot; 350 moved cold
    assert upsert("SELECT site, tag, seq, -1.5::float8 AS val FROM expected WHERE seq = 7", "seq = 7") == "delta"
    assert upsert("SELECT site, tag, 250::bigint AS seq, val FROM expected WHERE seq = 14", "seq = 14") == "delta"
    assert upsert("SELECT site, tag, 420::bigint AS seq, val FROM expected WHERE seq = 101", "seq = 101") == "heap"
    assert upsert("SELECT site, tag, 120::bigint AS seq, val FROM expected WHERE seq = 350", "seq = 350") == "delta"
    d = delta(db, "readings")
    pk7 = text_value(db, "(SELECT tierdb.canonical_pk(site::text, tag) FROM expected WHERE site = 7)")
    assert pk7 == "7\x1f\\\\\\\x1f"
    assert d[pk7][:3] == (0, 7, None)
    pk14 = text_value(db, "(SELECT tierdb.canonical_pk(site::text, tag) FROM expected WHERE site = 14)")
    assert d[pk14][:3] == (0, 250, 14)
    pk101 = text_value(db, "(SELECT tierdb.canonical_pk(site::text, tag) FROM expected WHERE site = 101)")
    assert d[pk101][:3] == (1, 101, None)

    # deletes take the key as an object; a bare value is refused for a composite key
    assert route(db, "tierdb_delete('readings', (SELECT jsonb_build_object('site', site, 'tag', tag)"
                     " FROM expected WHERE seq = 21), 21)") == "delta"
    assert route(db, "tierdb_delete('readings', (SELECT jsonb_build_object('site', site, 'tag', tag)"
                     " FROM expected WHERE seq = 450), 450)") == "heap"
    db.psql("DELETE FROM expected WHERE seq IN (21, 450)")
    err = db.error("SELECT tierdb_delete('readings', '22', 22)")
    assert "the primary key of public.readings has 2 columns: pass the key as an object" in err

    # plain DML bounded by an integer literal (seq >= 300 compares bigint with integer) keeps to the heap
    db.psql("UPDATE readings SET val = val + 1 WHERE seq >= 300 AND seq < 310;\n"
            "UPDATE expected SET val = val + 1 WHERE seq >= 300 AND seq < 310")
    # and reaching below T (seq 299 is cold) it routes the cold half into the delta (test_transparent_updates.py)
    db.psql("UPDATE readings SET val = val + 1 WHERE seq >= 299 AND seq < 301;\n"
            "UPDATE expected SET val = val + 1 WHERE seq >= 299 AND seq < 301")

    assert rewrite_rows(db, "readings", READINGS_JSON) == rendered(db, "expected", READINGS_JSON)
    proc = run_once(tierdb, "150")
    assert "fold: operation" in proc.stderr, proc.stderr
    c = cutline(db, "readings")
    assert canonical_rows(lake_rows(tierdb, c["ref"], c["S"])) == rendered(db, "expected WHERE seq < 300",
                                                                          READINGS_JSON)
    assert rendered(db, "readings", READINGS_JSON) == rendered(db, "expected WHERE seq >= 300", READINGS_JSON)
    assert delta(db, "readings") == {}


DAILY_JSON = "json_build_object('id', id, 'd', d, 'note', note)::text"


def test_a_date_table_whose_key_includes_the_tier_key(db, tierdb):
    make_range_table(db, "daily", "id int NOT NULL, d date NOT NULL, note text", "d",
                     [(f"'2024-01-0{p + 1}'", f"'2024-01-0{p + 2}'") for p in range(6)],
                     "SELECT g, date '2024-01-01' + g % 6, 'n' || g FROM generate_series(1, 60) g")
    proc = tierdb(["register", "--table", "public.daily", "--pk", "id,d", "--tier-key", "d"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "3")
    # max(d) 2024-01-06 minus 3 days: 2024-01-01 and 02 tier
    assert cutline(db, "daily")["T"] == scalar_int(db, "date '2024-01-03' - date '1970-01-01'")

    assert route(db, "tierdb_upsert('daily', '{\"id\": 6, \"d\": \"2024-01-01\", \"note\": \"fixed\"}')") == "delta"
    assert route(db, "tierdb_upsert('daily', '{\"id\": 9, \"d\": \"2024-01-05\", \"note\": \"hot\"}')") == "heap"
    # a new key (6, 2024-01-02): the tier key is part of the pk, so no lake lookup and no old_tier_key
    assert route(db, "tierdb_upsert('daily', '{\"id\": 6, \"d\": \"2024-01-02\", \"note\": \"other\"}')") == "delta"
    assert route(db, "tierdb_delete('daily', '{\"id\": 7, \"d\": \"2024-01-02\"}', date '2024-01-02')") == "delta"
    d = delta(db, "daily")
    day = scalar_int(db, "date '2024-01-01' - date '1970-01-01'")
    assert d["6\x1f2024-01-01"][:3] == (0, day, None)
    assert d["6\x1f2024-01-02"][:3] == (0, day + 1, None)
    assert d["7\x1f2024-01-02"][:3] == (1, day + 1, None)
    db.psql(
        "UPDATE expected SET note = 'fixed' WHERE id = 6 AND d = '2024-01-01';\n"
        "INSERT INTO expected VALUES (6, '2024-01-02', 'other');\n"
        "INSERT INTO expected VALUES (9, '2024-01-05', 'hot');\n"
        "DELETE FROM expected WHERE id = 7;"
    )
    err = db.error("SELECT tierdb_delete('daily', '{\"id\": 8, \"d\": \"2024-01-03\"}', 19725::bigint)")
    assert "the tier key d of public.daily is a date, not a bigint" in err

    assert rewrite_rows(db, "daily", DAILY_JSON) == rendered(db, "expected", DAILY_JSON)
    run_once(tierdb, "3")
    assert delta(db, "daily") == {}
    c = cutline(db, "daily")
    assert canonical_rows(lake_rows(tierdb, c["ref"], c["S"])) == rendered(
        db, "expected WHERE d < '2024-01-03'", DAILY_JSON)
    assert rendered(db, "daily", DAILY_JSON) == rendered(db, "expected WHERE d >= '2024-01-03'", DAILY_JSON)


TICKS_JSON = "json_build_object('id', id, 'at', to_char(at, 'YYYY-MM-DD\"T\"HH24:MI:SS.US'), 'note', note)::text"


def test_a_timestamp_table(db, tierdb):
    """timestamp (without time zone) keys read as UTC, and the timestamp overload of tierdb_delete."""
    make_range_table(db, "ticks", "id bigint NOT NULL, at timestamp NOT NULL, note text", "at",
                     [(f"'2024-01-0{p + 1}'", f"'2024-01-0{p + 2}'") for p in range(6)],
                     "SELECT g, timestamp '2024-01-01' + g * interval '1 hour', 'n' || g FROM generate_series(0, 143) g")
    proc = tierdb(["register", "--table", "public.ticks", "--pk", "id", "--tier-key", "at"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "2d")
    t = cutline(db, "ticks")["T"]
    assert t == scalar_int(db, "(extract(epoch FROM timestamp '2024-01-04') * 1000000)::bigint")

    assert route(db, "tierdb_upsert('ticks', '{\"id\": 5, \"at\": \"2024-01-02T07:00:00.5\", \"note\": \"moved\"}')") == "delta"
    assert delta(db, "ticks")["5"][:3] == (
        0, scalar_int(db, "(extract(epoch FROM timestamp '2024-01-02 07:00:00.5') * 1000000)::bigint"),
        scalar_int(db, "(extract(epoch FROM timestamp '2024-01-01 05:00:00') * 1000000)::bigint"))
    assert route(db, "tierdb_delete('ticks', '6', timestamp '2024-01-01 06:00')") == "delta"
    assert route(db, "tierdb_delete('ticks', '100', timestamp '2024-01-05 04:00')") == "heap"
    err = db.error("SELECT tierdb_delete('ticks', '7', timestamptz '2024-01-01 07:00+00')")
    assert "the tier key at of public.ticks is a timestamp, not a timestamptz" in err, err
    db.psql("UPDATE expected SET at = '2024-01-02 07:00:00.5', note = 'moved' WHERE id = 5;\n"
            "DELETE FROM expected WHERE id IN (6, 100);")

    assert rewrite_rows(db, "ticks", TICKS_JSON) == rendered(db, "expected", TICKS_JSON)
    run_once(tierdb, "2d")
    assert delta(db, "ticks") == {}
    c = cutline(db, "ticks")
    assert canonical_rows(lake_rows(tierdb, c["ref"], c["S"])) == rendered(
        db, "expected WHERE at < '2024-01-04'", TICKS_JSON)


# ------------------------------------------------------------ bad input changes nothing

def test_rows_below_the_retention_line_are_refused(events, tierdb):
    db = events
    r_line = usec(db, "2024-01-03 00:00:00+00")
    db.psql(f"UPDATE tierdb.cutline SET retention_line = {r_line}")
    before = fingerprint(db, "events")
    err = db.error("SELECT tierdb_upsert('events', (SELECT to_jsonb(e) FROM expected e WHERE id = 5))")
    assert "23514" in err and "is below the retention line 2024-01-03 00:00:00+00" in err, err
    ts10 = scalar(db, "SELECT ts FROM expected WHERE id = 10")
    err = db.error(f"SELECT tierdb_delete('events', '10', timestamptz '{ts10}')")
    assert "is below the retention line" in err, err
    # a row moved from above the line to below it is refused too, and stays where it was
    err = db.error("SELECT tierdb_upsert('events', (SELECT jsonb_set(to_jsonb(e), '{ts}', '\"2024-01-02T00:00:00Z\"')"
                   " FROM expected e WHERE id = 2500))")
    assert "is below the retention line" in err, err
    assert fingerprint(db, "events") == before
    # at the line itself a write is fine
    assert route(db, "tierdb_upsert('events', '{\"id\": 9000, \"ts\": \"2024-01-03T00:00:00Z\", \"v\": \"ok\"}')") == "delta"


@pytest.mark.parametrize("call,sqlstate,message", [
    ("tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-02T00:00:00Z\", \"bogus\": 1, \"Amount\": 2}')",
     "42703", "table public.events has no column \"Amount\", bogus"),
    ("tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-02T00:00:00Z\", \"amount\": \"lots\"}')",
     "22P02", "column amount of public.events cannot take the value \"lots\""),
    ("tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-02T00:00:00Z\", \"amount\": 123456789012.5}')",
     "22003", "column amount of public.events cannot take the value 123456789012.5"),
    ("tierdb_upsert('events', '{\"id\": \"five\", \"ts\": \"2024-01-02T00:00:00Z\"}')",
     "22P02", "column id of public.events cannot take the value \"five\""),
    ("tierdb_upsert('events', '{\"id\": 5, \"ts\": \"yesterday-ish\"}')",
     "22007", "column ts of public.events cannot take the value \"yesterday-ish\""),
    ("tierdb_upsert('events', '{\"ts\": \"2024-01-02T00:00:00Z\", \"v\": \"x\"}')",
     "23502", "the row image of public.events lacks its primary-key column id"),
    ("tierdb_upsert('events', '{\"id\": null, \"ts\": \"2024-01-02T00:00:00Z\"}')",
     "23502", "the row image of public.events lacks its primary-key column id"),
    ("tierdb_upsert('events', '{\"id\": 5, \"v\": \"x\"}')",
     "23502", "the row image of public.events lacks its tier key ts"),
    ("tierdb_upsert('events', '[5]')", "22023", "a row image of public.events must be a JSON object, not array"),
    ("tierdb_upsert('events', NULL)", "22004", "tierdb_upsert needs a table and a row image"),
    ("tierdb_upsert('plain', '{\"id\": 1}')", "55000", "table public.plain is not registered with TierDB"),
    ("tierdb_delete('plain', '1', 1)", "55000", "table public.plain is not registered with TierDB"),
    ("tierdb_delete('events', '5', 5)", "42804", "the tier key ts of public.events is a timestamptz, not a bigint"),
    ("tierdb_delete('events', '\"five\"', timestamptz '2024-01-02')", "22P02",
     "column id of public.events cannot take the value \"five\""),
    ("tierdb_delete('events', '{\"id\": 5, \"v\": \"x\"}', timestamptz '2024-01-02')", "22023",
     "does not name exactly the primary-key columns of public.events"),
    ("tierdb_read_begin('events', interval '0')", "22023", "a read pin needs a positive ttl"),
    ("tierdb_read_begin('plain')", "55000", "table public.plain is not registered with TierDB"),
    ("tierdb_rewrite_scan('events', 123456)", "42704", "read pin 123456 of table public.events does not exist"),
])
def test_bad_input_is_refused_and_changes_nothing(events, call, sqlstate, message):
    db = events
    db.psql("CREATE TABLE plain (id int, ts timestamptz)")
    before = fingerprint(db, "events")
    err = db.error(f"SELECT * FROM {call}")
    assert f"ERROR:  {sqlstate}: " in err and message in err, err
    assert fingerprint(db, "events") == before
    assert db.query("SELECT count(*) FROM tierdb.read_pins") == [("0",)]


def test_unregistered_table_error_says_how_to_register(events):
    db = events
    db.psql("CREATE TABLE plain (id int, ts timestamptz)")
    err = db.error("SELECT tierdb_upsert('plain', '{\"id\": 1}')")
    assert "HINT:  Register it first: tierdb register --table public.plain" in err, err


def test_a_sealed_partition_asks_the_caller_to_retry(events):
    """Between tiering's seal and its T advance the heap partition refuses
    writes; a routed write there fails with a retryable error and writes nothing."""
    db = events
    db.psql(
        "CREATE TRIGGER tierdb_sealed BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON events_20240109"
        " FOR EACH STATEMENT EXECUTE FUNCTION tierdb.sealed_partition_guard();\n"
        "CREATE TRIGGER tierdb_sealed_rows BEFORE INSERT OR UPDATE OR DELETE ON events_20240109"
        " FOR EACH ROW EXECUTE FUNCTION tierdb.sealed_partition_guard();"
    )
    before = fingerprint(db, "events")
    (row_id, ts) = db.query(SESSION + "SELECT id, ts FROM events WHERE ts >= '2024-01-09' ORDER BY id LIMIT 1")[0]
    for call in (
        "tierdb_upsert('events', '{\"id\": 9001, \"ts\": \"2024-01-09T10:00:00Z\"}')",
        f"tierdb_upsert('events', (SELECT jsonb_set(to_jsonb(e), '{{v}}', '\"x\"') FROM events e WHERE id = {row_id}))",
        f"tierdb_delete('events', '{row_id}', timestamptz '{ts}')",
    ):
        err = db.error(f"SELECT {call}")
        assert "ERROR:  40001: cannot write this row of public.events now: its heap partition is being moved" in err, err
        assert "HINT:  Retry the call once the tiering run has finished" in err, err
    assert fingerprint(db, "events") == before


def test_keep_heap_routes_to_the_heap(db, tierdb):
    """(Routed writes of direct tables: test_direct.py.)"""
    make_events(db, days=6)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    db.psql(f"UPDATE tierdb.cutline SET tier_key_hi = {usec(db, '2024-01-05 00:00:00+00')}")
    row = "'{\"id\": 7, \"ts\": \"2024-01-02T00:00:00Z\", \"v\": \"kept\"}'"
    # --keep-heap: the heap holds every row, so every write is plain DML (its trigger feeds the delta)
    db.psql("UPDATE tierdb.tables SET mode = 'tiered', keep_heap = true")
    assert route(db, f"tierdb_upsert('events', {row})") == "heap"
    assert scalar(db, "SELECT v FROM events WHERE id = 7") == "kept"
    assert route(db, "tierdb_delete('events', '7', timestamptz '2024-01-02')") == "heap"
    assert scalar(db, "SELECT count(*) FROM events WHERE id = 7") == "0"
    assert delta(db, "events") == {}


# ------------------------------------------------------------ privileges

def test_privileges_on_the_table_govern_routed_writes(events):
    db = events
    roles = ["tdb_nobody", "tdb_reader", "tdb_writer", "tdb_deleter"]
    db.psql(
        "".join(f"DROP ROLE IF EXISTS {r};\nCREATE ROLE {r};\n" for r in roles)
        + "GRANT SELECT ON events TO tdb_reader;\n"
        "GRANT SELECT, INSERT, UPDATE ON events TO tdb_writer;\n"
        "GRANT SELECT, DELETE ON events TO tdb_deleter;\n"
    )
    try:
        cold = "tierdb_upsert('events', (SELECT jsonb_set(to_jsonb(e), '{v}', '\"by %s\"') FROM expected e WHERE id = %d))"
        before = fingerprint(db, "events")
        for role in ("tdb_nobody", "tdb_reader", "tdb_deleter"):
            db.psql(f"GRANT SELECT ON expected TO {role}")
            err = db.error(f"SET ROLE {role};\nSELECT {cold % (role, 5)}")
            assert "ERROR:  42501: permission denied for table events" in err, err
        # the catalog itself stays closed: the bridges write only inside an entry point, the _impls refuse everyone
        err = db.error("SET ROLE tdb_nobody;\nSELECT tierdb.delta_put('events', '5', 1, NULL, '{}')")
        assert "is internal to TierDB and cannot be called directly" in err, err
        err = db.error("SET ROLE tdb_nobody;\nSELECT tierdb.delta_tombstone('events', '5', 1, NULL)")
        assert "is internal to TierDB and cannot be called directly" in err, err
        err = db.error("SET ROLE tdb_writer;\nSELECT tierdb.delta_put_impl('events', '5', 1, NULL, '{}')")
        assert "permission denied for function delta_put_impl" in err, err
        err = db.error("SET ROLE tdb_writer;\nSELECT count(*) FROM tierdb.delta")
        assert "permission denied for table delta" in err, err
        err = db.error("SET ROLE tdb_writer;\nSELECT tierdb_delete('events', '10', now())")
        assert "permission denied for table events" in err, err
        assert fingerprint(db, "events") == before

        # a writer routes cold and hot rows, moves included (the lake lookup reads as the writer)
        db.psql("GRANT SELECT ON expected TO tdb_writer")
        assert scalar(db, session="", sql=f"SET ROLE tdb_writer;\nSELECT {cold % ('writer', 5)}") == "delta"
        assert scalar(db, session="", sql="SET ROLE tdb_writer;\nSELECT tierdb_upsert('events', (SELECT jsonb_set(to_jsonb(e), '{ts}',"
                          " '\"2024-01-04T00:00:00Z\"') FROM expected e WHERE id = 20))") == "delta"
        assert scalar(db, session="", sql=f"SET ROLE tdb_writer;\nSELECT {cold % ('writer', 2500)}") == "heap"
        # moving a heap row below T deletes it from the heap: that takes DELETE
        err = db.error("SET ROLE tdb_writer;\nSELECT tierdb_upsert('events', (SELECT jsonb_set(to_jsonb(e), '{ts}',"
                       " '\"2024-01-04T00:00:00Z\"') FROM expected e WHERE id = 2600))")
        assert "permission denied for table events" in err, err
        assert scalar(db, "SELECT count(*) FROM events WHERE id = 2600") == "1"
        d = delta(db, "events")
        assert "2600" not in d
        assert d["5"][3]["v"] == "by writer"
        assert d["20"][2] == usec(db, scalar(db, "SELECT ts FROM expected WHERE id = 20"))
        # a deleter deletes; a reader reads through the protocol
        ts10 = scalar(db, "SELECT ts FROM expected WHERE id = 10")
        assert scalar(db, session="", sql=f"SET ROLE tdb_deleter;\nSELECT tierdb_delete('events', '10', timestamptz '{ts10}')") == "delta"
        pin = scalar(db, session="", sql="SET ROLE tdb_reader;\nSELECT pin_id FROM tierdb_read_begin('events')")
        err = db.error(f"SET ROLE tdb_nobody;\nSELECT tierdb_read_end({pin})")
        assert f"read pin {pin} belongs to another role" in err, err
        assert scalar(db, session="", sql=f"SET ROLE tdb_reader;\nSELECT tierdb_read_end({pin})") == "t"
        err = db.error("SET ROLE tdb_nobody;\nSELECT tierdb_rewrite_scan('events')")
        assert "permission denied for table events" in err, err
    finally:
        db.psql("".join(f"DROP OWNED BY {r};\nDROP ROLE {r};\n" for r in roles))


def test_row_security_keeps_a_role_to_the_heap(events):
    """Policies filter the heap half of a routed write; a delta row is out of
    their reach, so a role under row security cannot route cold rows."""
    db = events
    db.psql(
        "DROP ROLE IF EXISTS tdb_limited;\nCREATE ROLE tdb_limited;\n"
        "GRANT SELECT, INSERT, UPDATE, DELETE ON events TO tdb_limited;\n"
        "ALTER TABLE events ENABLE ROW LEVEL SECURITY;\n"
        "CREATE POLICY only_mine ON events USING (v = 'mine') WITH CHECK (v = 'mine');"
    )
    try:
        before = fingerprint(db, "events")
        err = db.error("SET ROLE tdb_limited;\n"
                       "SELECT tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-01T00:00:00Z\", \"v\": \"mine\"}')")
        assert "0A000: cannot route rows of table events below its cut-line: row-level security applies to role" \
               " tdb_limited" in err, err
        # hot rows go through the policies as plain DML would
        err = db.error("SET ROLE tdb_limited;\n"
                       "SELECT tierdb_upsert('events', '{\"id\": 9100, \"ts\": \"2024-01-09T00:00:00Z\", \"v\": \"theirs\"}')")
        assert "new row violates row-level security policy" in err, err
        assert fingerprint(db, "events") == before
        assert scalar(db, session="", sql="SET ROLE tdb_limited;\nSELECT tierdb_upsert('events', '{\"id\": 9100,"
                          " \"ts\": \"2024-01-09T00:00:00Z\", \"v\": \"mine\"}')") == "heap"
        # the table's owner is not under its policies
        assert route(db, "tierdb_upsert('events', '{\"id\": 5, \"ts\": \"2024-01-01T00:00:00Z\", \"v\": \"x\"}')") == "delta"
    finally:
        db.psql("DROP OWNED BY tdb_limited;\nDROP ROLE tdb_limited;")


# ------------------------------------------------------------ the explicit read protocol

def test_read_begin_pins_and_read_end_unpins(events, tierdb):
    db = events
    c = cutline(db, "events")
    rows = db.query("SELECT pin_id, tier_key_hi, lake_snapshot_id, metadata_location, expires_at - now()"
                    " FROM tierdb_read_begin('events')")
    ((pin, t, s, location, ttl),) = rows
    assert (int(t), int(s), location) == (c["T"], c["S"], c["props"]["metadata_location"])
    assert ttl == "00:15:00"
    assert db.query(f"SELECT table_id, pinned_tier_key_hi, pinned_lake_snapshot_id, expires_at - started_at"
                    f" FROM tierdb.read_pins WHERE pin_id = {pin}") == [(str(c["table_id"]), t, s, "00:15:00")]
    pin2 = scalar(db, "SELECT pin_id FROM tierdb_read_begin('events', interval '1 hour')")
    assert db.query(f"SELECT expires_at - started_at FROM tierdb.read_pins WHERE pin_id = {pin2}") == [("01:00:00",)]

    # the pinned view stays exact while corrections arrive and T advances
    assert upsert_both(db, "SELECT id, ts, 'fixed'::text AS v, amount FROM expected WHERE id = 5") == "delta"
    db.psql(SESSION + "INSERT INTO events SELECT 10000 + g, timestamptz '2024-01-12 00:00:00+00' + g * interval '1 minute',"
            " 'later', 1 FROM generate_series(1, 100) g;\n"
            "INSERT INTO expected SELECT * FROM events WHERE id > 10000;")
    proc = run_once(tierdb, LAG)
    assert "tiering: operation" in proc.stderr, proc.stderr
    after = cutline(db, "events")
    assert after["T"] > c["T"]
    assert "events_20240108" in db.query("SELECT string_agg(relname, ',') FROM pg_class WHERE relname LIKE 'events_2024%'")[0][0]
    assert rewrite_rows(db, "events", pin=pin) == rendered(db, "expected")
    assert rewrite_rows(db, "events") == rendered(db, "expected")
    pinned_sql = scalar(db, f"SELECT tierdb_rewrite_scan('events', {pin})")
    assert f"cold_rows(NULL::public.events, {c['S']}, {c['T']})" in pinned_sql
    assert "ts >= '2024-01-08 00:00:00+00'::timestamptz" in pinned_sql

    assert scalar(db, f"SELECT tierdb_read_end({pin})") == "t"
    assert scalar(db, f"SELECT tierdb_read_end({pin})") == "f"
    assert db.query(f"SELECT count(*) FROM tierdb.read_pins WHERE pin_id = {pin}") == [("0",)]
    err = db.error(f"SELECT tierdb_rewrite_scan('events', {pin})")
    assert f"read pin {pin} of table public.events does not exist" in err, err
    db.psql(f"UPDATE tierdb.read_pins SET expires_at = now() - interval '1 second' WHERE pin_id = {pin2}")
    err = db.error(f"SELECT tierdb_rewrite_scan('events', {pin2})")
    assert f"read pin {pin2} of table public.events expired" in err, err
    assert scalar(db, f"SELECT tierdb_read_end({pin2})") == "t"


def test_rewrite_scan_of_a_table_never_tiered(db, tierdb):
    make_events(db, days=3)
    proc = tierdb(["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    sql = scalar(db, "SELECT tierdb_rewrite_scan('events')")
    assert "cold_rows(NULL::public.events, NULL, " in sql
    assert rendered(db, f"({sql}) AS seam") == rendered(db, "events")
    # as it is, in psql, it gives the table's rows with its columns
    assert sorted(db.query(sql)) == sorted(db.query("TABLE events"))


# ------------------------------------------------------------ explain, concurrency

def test_explain_narrates_the_route(events):
    db = events
    proc = db.run_psql(SESSION + "SET tierdb.explain = on;\n"
                       "SELECT tierdb_upsert('events', (SELECT to_jsonb(e) FROM expected e WHERE id = 5));\n"
                       "SELECT tierdb_upsert('events', (SELECT to_jsonb(e) FROM expected e WHERE id = 2500));\n"
                       "SELECT tierdb_delete('events', '2501', timestamptz '2024-01-01');")
    assert proc.returncode == 0, proc.stderr
    version = scalar(db, "SELECT version FROM tierdb.delta WHERE pk = '5'")
    assert (f"tierdb: tier key 2024-01-01 00:19:12.000005+00 is below T 2024-01-08 00:00:00+00: cold, pk 5 written"
            f" to tierdb.delta as version {version}") in proc.stderr, proc.stderr
    assert "is at or above T 2024-01-08 00:00:00+00: hot, updated the row of pk 2500 in public.events" in proc.stderr
    assert "cold, but the lake and the delta hold no row of pk 2501: nothing deleted" in proc.stderr
    quiet = db.run_psql("SELECT tierdb_upsert('events', (SELECT to_jsonb(e) FROM expected e WHERE id = 6));\n"
                        "SHOW tierdb.explain;")
    assert quiet.returncode == 0 and "NOTICE" not in quiet.stderr and quiet.stdout.split() == ["delta", "off"], quiet


def test_a_fold_publication_waits_for_a_routed_write(events, tierdb, tierdb_bin, lake):
    """The routed write holds the cut-line row FOR SHARE until it commits, so
    the fold's S advance waits for it and never slips between its location
    lookup and its delta write."""
    from test_tiering import run_blocked_once

    db = events
    assert upsert_both(db, "SELECT id, ts, 'first'::text AS v, amount FROM expected WHERE id = 10") == "delta"
    before = cutline(db, "events")
    run_blocked_once(
        db, tierdb_bin, lake,
        "SELECT tierdb_upsert('events', (SELECT jsonb_set(to_jsonb(e), '{v}', '\"in flight\"')"
        " FROM expected e WHERE id = 5))",
        "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE state = 'idle in transaction'"
        " AND query LIKE '%tierdb_upsert%')",
        "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'tierdb'"
        " AND wait_event_type = 'Lock' AND query LIKE '%UPDATE tierdb.cutline%')",
    )
    db.psql("UPDATE expected SET v = 'in flight' WHERE id = 5")
    after = cutline(db, "events")
    assert after["S"] != before["S"]
    assert set(delta(db, "events")) == {"5"}
    check_seam(db, tierdb, T_EVENTS)


def test_routed_writes_of_one_pk_take_turns(events):
    """Two sessions route the same new pk, one into the heap, one into the
    delta: the second waits for the first, then moves the row, so the pk
    lives once."""
    import subprocess

    from pg_cluster import PG_BINDIR, clean_env
    from test_tiering import wait_for

    db = events
    pg = db.cluster

    def session():
        return subprocess.Popen(
            [str(PG_BINDIR / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.host, "-p", str(pg.port),
             "-U", pg.user, "-d", db.name, "-f", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=clean_env())

    first, second = session(), session()
    try:
        first.stdin.write("BEGIN;\nSELECT tierdb_upsert('events', '{\"id\": 7000, \"ts\": \"2024-01-09T00:00:00Z\","
                          " \"v\": \"hot\"}');\n")
        first.stdin.flush()
        wait_for(db, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE state = 'idle in transaction'"
                     " AND query LIKE '%tierdb_upsert%')", "the first session's write")
        second.stdin.write("SELECT tierdb_upsert('events', '{\"id\": 7000, \"ts\": \"2024-01-02T00:00:00Z\","
                           " \"v\": \"cold\"}');\n")
        second.stdin.close()
        wait_for(db, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                     " AND wait_event = 'advisory' AND query LIKE '%tierdb_upsert%')", "the second session to wait")
        first.stdin.write("COMMIT;\n")
        first.stdin.close()
        assert first.wait(timeout=60) == 0, first.stderr.read()
        assert second.wait(timeout=60) == 0, second.stderr.read()
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert scalar(db, "SELECT count(*) FROM events WHERE id = 7000") == "0"
    assert delta(db, "events")["7000"][0] == 0
    assert delta(db, "events")["7000"][3]["v"] == "cold"


def test_a_row_moved_again_during_a_fold_lives_once(events, tierdb):
    """The fold repoints a newer delta row of a pk it moved (cli/fold.c publish)."""
    db = events
    assert upsert_both(db, "SELECT id, timestamptz '2024-01-05 12:00:00+00' AS ts, v, amount FROM expected"
                           " WHERE id = 20") == "delta"
    # The second move lands after the fold captured the first (when it journals itself, as in test_fold.py).
    db.psql(
        "CREATE FUNCTION move_again() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        "  PERFORM tierdb_upsert('events', (SELECT jsonb_set(to_jsonb(e), '{ts}', '\"2024-01-06T12:00:00Z\"')"
        "   FROM expected e WHERE id = 20));"
        "  RETURN NULL; END $$;\n"
        "CREATE TRIGGER move_again AFTER INSERT ON tierdb.op_log FOR EACH ROW"
        " WHEN (NEW.op_kind = 'compaction') EXECUTE FUNCTION move_again();\n"
        "UPDATE expected SET ts = '2024-01-06 12:00:00+00' WHERE id = 20;"
    )
    proc = run_once(tierdb, LAG)
    assert "fold: operation" in proc.stderr, proc.stderr
    db.psql("DROP TRIGGER move_again ON tierdb.op_log")
    assert delta(db, "events")["20"][1] == usec(db, "2024-01-06 12:00:00+00")
    check_seam(db, tierdb, T_EVENTS)


SESSIONS = ["SET TimeZone = 'America/New_York'; SET DateStyle = 'SQL, DMY';\n",
            "SET TimeZone = 'Asia/Kolkata'; SET DateStyle = 'German';\n", SESSION]


def test_pk_text_does_not_depend_on_the_session(db, tierdb):
    """A key holding a timestamptz gets the daemon's text (ISO, UTC) from
    every session, so one row keeps one delta row and readers in any time
    zone match it to its lake row."""
    make_events(db)
    db.psql("CREATE TABLE expected AS SELECT * FROM events")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, LAG)
    daemon_pk = text_value(db, "(SELECT id || chr(31) || ts::text FROM expected WHERE id = 7)")
    assert daemon_pk == "7\x1f2024-01-01 00:28:48.000007+00"
    for n, settings in enumerate(SESSIONS):
        proc = db.run_psql(settings + "SELECT tierdb_upsert('events', (SELECT jsonb_set(to_jsonb(e), '{v}',"
                           f" '\"fixed {n}\"') FROM expected e WHERE id = 7))")
        assert proc.returncode == 0 and proc.stdout.strip() == "delta", proc
        assert set(delta(db, "events")) == {daemon_pk}
    db.psql(f"UPDATE expected SET v = 'fixed {len(SESSIONS) - 1}' WHERE id = 7")
    ts8 = scalar(db, "SELECT ts FROM expected WHERE id = 8")
    proc = db.run_psql(SESSIONS[0] + f"SELECT tierdb_delete('events', '{{\"id\": 8, \"ts\": \"{ts8}\"}}',"
                       f" timestamptz '{ts8}')")
    assert proc.returncode == 0 and proc.stdout.strip() == "delta", proc
    assert set(delta(db, "events")) == {daemon_pk, "8\x1f" + ts8}
    db.psql("DELETE FROM expected WHERE id = 8")

    sql = scalar(db, "SELECT tierdb_rewrite_scan('events')")
    for settings in SESSIONS:
        # rendered in UTC (the rows, not their rendering, come from this session)
        render = EVENTS_JSON.replace("to_char(ts,", "to_char(ts AT TIME ZONE 'UTC',")
        rows = db.query(settings + f"SELECT {render} FROM ({sql}) AS seam")
        assert canonical_rows(json.loads(r[0]) for r in rows) == rendered(db, "expected"), settings
    check_seam(db, tierdb, T_EVENTS)
