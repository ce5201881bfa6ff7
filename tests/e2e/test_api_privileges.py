"""The privilege matrix of TierDB's SQL surface (issue 16 items 10, 12, 14;
extension/src/routing.c, extension/sql/0.1/30-routing.sql).

Roles × entry points, each cell run in a transaction that is rolled back, on
one tiered table with transparent reads on.  An entry point must allow
exactly what the plain statement it stands for allows on an untiered table:

    tierdb_upsert          INSERT ... ON CONFLICT DO UPDATE: SELECT, INSERT, UPDATE
    tierdb_delete          DELETE ... WHERE pk = ...:         SELECT, DELETE
    tierdb_read_begin,
    tierdb_rewrite_scan    SELECT
    tierdb_read_end        only the pin's owner, or a superuser

with one documented difference: where row-level security applies to the
caller, rows below the cut-line cannot be written (0A000), as the policies
cannot check a delta row.  The internal functions (bridges, _impl, _body,
write_delta) refuse every non-superuser when called directly; the
read-only bridges need SELECT on the table.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from pg_cluster import TIERDB_TIMEOUT, Database, clean_env
from test_tiering import SESSION, make_events

SUFFIX = uuid.uuid4().hex[:6]
S, I, U, D = "SELECT", "INSERT", "UPDATE", "DELETE"
ROLES = {
    "none": set(),
    "select": {S},
    "insert": {I},
    "update": {U},
    "delete": {D},
    "select_insert_update": {S, I, U},
    "rls": {S, I, U, D},
    "superuser": {S, I, U, D},
}


def role_name(role):
    return f"tdb_m_{role}_{SUFFIX}"


@pytest.fixture(scope="module")
def matrix_db(pg, tierdb_bin, e2e_root):
    """events tiered at T = 2024-01-08 in a database of its own, with the roles of ROLES."""
    name = "t_matrix_" + SUFFIX
    pg.psql(f'CREATE DATABASE "{name}"')
    db = Database(pg, name)
    lake = Path(tempfile.mkdtemp(prefix="lake-", dir=e2e_root))
    lake.chmod(0o755)
    try:
        db.psql("CREATE EXTENSION tierdb")
        make_events(db)
        env = {**clean_env(), **db.env, "TIERDB_WAREHOUSE": str(lake), "TIERDB_TIERING_LAG": "2d"}
        for args in (["register", "--table", "public.events", "--pk", "id", "--tier-key", "ts"], ["run", "--once"]):
            proc = subprocess.run([str(tierdb_bin), *args], capture_output=True, text=True, env=env,
                                  timeout=TIERDB_TIMEOUT, stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, proc.stderr
        setup = [f'ALTER DATABASE "{name}" SET tierdb.transparent_reads = on;',
                 "SET tierdb.transparent_reads = off;  -- marks two heap rows (plain DML is for the heap alone)",
                 "UPDATE events SET v = 'mine' WHERE id IN (2500, 2600);",
                 "RESET tierdb.transparent_reads;",
                 "ALTER TABLE events ENABLE ROW LEVEL SECURITY;"]
        for role, privileges in ROLES.items():
            r = role_name(role)
            attrs = "SUPERUSER" if role == "superuser" else ("" if role == "rls" else "BYPASSRLS")
            setup.append(f"CREATE ROLE {r} {attrs};")
            if privileges:
                setup.append(f"GRANT {', '.join(sorted(privileges))} ON events TO {r};")
        setup.append(f"CREATE POLICY mine ON events TO {role_name('rls')} USING (v = 'mine') WITH CHECK (v = 'mine');")
        db.psql("\n".join(setup))
        yield db
    finally:
        pg.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        pg.psql("".join(f"DROP ROLE IF EXISTS {role_name(r)};\n" for r in ROLES))
        shutil.rmtree(lake, ignore_errors=True)


def ts_of(db, pk):
    ((ts,),) = db.query(SESSION + f"SET tierdb.transparent_reads = on; SELECT ts FROM events WHERE id = {pk}")
    return ts


def upsert(pk, ts):
    return "SELECT tierdb_upsert('events', '{\"id\": %s, \"ts\": \"%s\", \"v\": \"mine\"}')" % (pk, ts)


# entry point -> SQL run as the role ({ts<pk>} filled in, :pin is a pin the test's own user took)
ENTRY_POINTS = {
    "upsert_hot": upsert(2500, "{ts2500}"),
    # a new key: routing looks for a lake copy of it, which row-level security must not prevent
    "upsert_hot_new": upsert(9001, "{ts2500}"),
    "upsert_cold": upsert(5, "{ts5}"),
    "upsert_cold_move": upsert(20, "2024-01-05 12:00:00+00"),
    "delete_hot": "SELECT tierdb_delete('events', '2600', timestamptz '{ts2600}')",
    "delete_cold": "SELECT tierdb_delete('events', '10', timestamptz '{ts10}')",
    "read_begin": "SELECT pin_id FROM tierdb_read_begin('events')",
    "read_end_own": "SELECT tierdb_read_end(pin_id) FROM tierdb_read_begin('events')",
    "read_end_other": "SELECT tierdb_read_end(:pin)",
    "rewrite_scan": "SELECT tierdb_rewrite_scan('events')",
}

# internal function -> (SQL, privileges that let a role call it; None: nobody; "write": SELECT and any write)
INTERNALS = {
    "delta_put": ("SELECT tierdb.delta_put('events', '5', 1, NULL, '{}')", None),
    "delta_tombstone": ("SELECT tierdb.delta_tombstone('events', '5', 1, NULL)", None),
    # tierdb-spark's RoutedWrite locks the cut-line around a batch of routed calls
    "routing_state_locked": ("SELECT tierdb.routing_state('events', true)", "write"),
    "pin_insert": ("SELECT tierdb.pin_insert('events', '1 minute')", None),
    "pin_delete": ("SELECT tierdb.pin_delete(:pin)", None),
    "write_delta": ("SELECT tierdb.write_delta('events', '5', 0::smallint, 1, NULL, '{}')", None),
    "routing_state_impl": ("SELECT tierdb.routing_state_impl('events', true)", None),
    "delta_entry_impl": ("SELECT tierdb.delta_entry_impl('events', '5')", None),
    "delta_put_impl": ("SELECT tierdb.delta_put_impl('events', '5', 1, NULL, '{}')", None),
    "delta_tombstone_impl": ("SELECT tierdb.delta_tombstone_impl('events', '5', 1, NULL)", None),
    "pin_insert_impl": ("SELECT tierdb.pin_insert_impl('events', '1 minute', 10::oid)", None),
    "pin_delete_impl": ("SELECT tierdb.pin_delete_impl(:pin, 10::oid, true)", None),
    "scan_state_impl": ("SELECT tierdb.scan_state_impl('events', NULL)", None),
    "upsert_body": ("SELECT tierdb.tierdb_upsert_body('events', '{\"id\": 5, \"ts\": \"{ts5}\"}')", None),
    "delete_routed_body": ("SELECT tierdb.delete_routed_body('events', '10', 0, 'timestamptz')", None),
    "read_begin_body": ("SELECT tierdb.read_begin_body('events', '1 minute')", None),
    "read_end_body": ("SELECT tierdb.tierdb_read_end_body(:pin)", None),
    "routing_state": ("SELECT tierdb.routing_state('events', false)", {S}),
    "delta_entry": ("SELECT tierdb.delta_entry('events', '5')", {S}),
    "scan_state": ("SELECT tierdb.scan_state('events', NULL)", {S}),
}


def expected(role, entry):
    """'ok', or the SQLSTATE the plain statement's refusal (or the documented RLS rule) gives."""
    held = ROLES[role]
    needs = {"upsert": {S, I, U}, "delete": {S, D}, "read": {S}, "rewrite": {S}}[entry.split("_")[0]]
    if entry == "read_end_other":
        return "ok" if role == "superuser" else "42501"
    if not needs <= held:
        return "42501"
    if role == "rls" and entry.endswith(("_cold", "_cold_move")):
        return "0A000"
    return "ok"


def run_cell(db, role, sql):
    for pk in (5, 10, 2500, 2600):
        sql = sql.replace("{ts%d}" % pk, ts_of(db, pk))
    script = (SESSION + "BEGIN;\nSELECT pin_id AS pin FROM tierdb_read_begin('events') \\gset\n"
              f"SET ROLE {role_name(role)};\n" + sql + ";\nROLLBACK;\n")
    proc = db.run_psql(script)
    if proc.returncode == 0:
        return "ok"
    first = next(line for line in proc.stderr.splitlines() if "ERROR:" in line)
    return first.split("ERROR:", 1)[1].strip().split(":", 1)[0]


CELLS = [(r, e) for r in ROLES for e in ENTRY_POINTS]
INTERNAL_CELLS = [(r, f) for r in ROLES if r != "superuser" for f in INTERNALS]


@pytest.mark.parametrize("role,entry", CELLS, ids=[f"{r}-{e}" for r, e in CELLS])
def test_entry_point(matrix_db, role, entry):
    assert run_cell(matrix_db, role, ENTRY_POINTS[entry]) == expected(role, entry)


@pytest.mark.parametrize("role,function", INTERNAL_CELLS, ids=[f"{r}-{f}" for r, f in INTERNAL_CELLS])
def test_internal_function(matrix_db, role, function):
    sql, allowed = INTERNALS[function]
    held = ROLES[role]
    if allowed == "write":
        ok = S in held and bool(held & {I, U, D})
    else:
        ok = allowed is not None and allowed <= held
    want = "ok" if ok else "42501"
    assert run_cell(matrix_db, role, sql) == want


def test_matrix_size():
    """The notes quote it: entry points × roles plus internal functions × non-superuser roles."""
    assert (len(CELLS), len(INTERNAL_CELLS)) == (80, 140)
