"""Differential query testing (issue 16, "How to keep it fixed"): seeded
random SQL (querygen.py) runs on `tiered`, a registered table whose older
days live in the lake, and on `copy`, a plain table holding the same rows,
and both must return the same result: as lists when ORDER BY fixes the
order of every row, else as multisets; every value compared as its text
(floats included).

The cluster runs with production defaults; each query runs in one of the
execution modes (MODES): plain, parallel query off, prepared with custom
and with generic plans (parameters), through a cursor, or with the cold
scan's pushdown off (tierdb.enable_cold_pushdown), or with the cold
aggregate off (tierdb.enable_cold_aggregate). Three phases:
after tiering, with corrections in the delta (tierdb_upsert/tierdb_delete
on `tiered`, the same change as plain DML on `copy`), after the fold.

  TIERDB_DIFF_SEED      the seed (default 16); printed with every mismatch
  TIERDB_DIFF_QUERIES   queries over the three phases (default 2400)
  TIERDB_DIFF_FAMILIES  comma-separated query families (default: all)
  TIERDB_DIFF_MODES     comma-separated modes (default: all)

A mismatch is shrunk to the smallest predicate that still differs and
printed with the seed and both results.
"""

from __future__ import annotations

import datetime
import os
import random
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.adapt import Loader

import querygen as qg
from pg_cluster import TIERDB_TIMEOUT, clean_env

SEED = int(os.environ.get("TIERDB_DIFF_SEED", "16"))
TOTAL = int(os.environ.get("TIERDB_DIFF_QUERIES", "2400"))
ROWS = 2000
LAG = "2d"  # behind the newest row: whole days before 2024-01-08 go, qg.HOT_DAYS stay

ALL_MODES = ["plain", "serial", "custom", "generic", "cursor", "parallel", "nopush", "noagg"]


def _listed(name, default, known):
    raw = os.environ.get(name)
    picked = default if not raw else [x.strip() for x in raw.split(",") if x.strip()]
    unknown = set(picked) - set(known)
    assert not unknown, f"{name}: unknown {sorted(unknown)} (known: {', '.join(known)})"
    return picked


FAMILIES = _listed("TIERDB_DIFF_FAMILIES", qg.FAMILIES, qg.FAMILIES)
MODES = _listed("TIERDB_DIFF_MODES", ALL_MODES, ALL_MODES)

MODE_SETTINGS = {
    "serial": "SET max_parallel_workers_per_gather = 0",
    "parallel": "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;"
                " SET min_parallel_table_scan_size = 0; SET min_parallel_index_scan_size = 0",
    "custom": "SET plan_cache_mode = force_custom_plan",
    "generic": "SET plan_cache_mode = force_generic_plan",
    "nopush": "SET tierdb.enable_cold_pushdown = off",
    "noagg": "SET tierdb.enable_cold_aggregate = off",
}


class _Text(Loader):
    """Every value as Postgres prints it: exact comparison, floats included."""

    def load(self, data):
        return bytes(data).decode()


def connect(dsn):
    conn = psycopg.connect(dsn, autocommit=True)
    for name in ("bool", "int2", "int4", "int8", "numeric", "float4", "float8", "text", "varchar", "date",
                 "timestamp", "timestamptz", "uuid", "jsonb", "json", "bytea", "oid", "name", "interval"):
        conn.adapters.register_loader(name, _Text)
    conn.execute("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET statement_timeout = '120s'")
    return conn


# ------------------------------------------------------------ running a query


def _fetch(conn, mode, query, table):
    """('ok', rows) or ('error', 'SQLSTATE message') of `query` on `table` in `mode`."""
    try:
        for setting in MODE_SETTINGS.get(mode, "").split(";"):
            if setting.strip():
                conn.execute(setting)
        if mode in ("custom", "generic"):
            sql, params = query.sql(table, params=True)
            types = f"({', '.join(t for _, t in params)})" if params else ""
            args = f"({', '.join('NULL' if lit is None else lit for lit, _ in params)})" if params else ""
            conn.execute(f"PREPARE qd{types} AS {sql}")
            try:
                # twice: the second run of a generic plan is the cached one
                first = conn.execute(f"EXECUTE qd{args}").fetchall()
                second = conn.execute(f"EXECUTE qd{args}").fetchall()
            finally:
                conn.execute("DEALLOCATE qd")
            if sorted(first, key=repr) != sorted(second, key=repr):
                return "error", f"two executions differ: {first[:5]} / {second[:5]}"
            return "ok", first
        sql, _ = query.sql(table)
        if mode == "cursor":
            rows = []
            with conn.transaction():
                conn.execute(f"DECLARE cd NO SCROLL CURSOR FOR {sql}")
                size = 1
                while True:
                    got = conn.execute(f"FETCH {size} FROM cd").fetchall()
                    rows += got
                    if len(got) < size:
                        return "ok", rows
                    size = size * 3 + 1
        return "ok", conn.execute(sql).fetchall()
    except psycopg.Error as e:
        state = getattr(e, "sqlstate", None)
        return "error", f"{state} {str(e).splitlines()[0]}"
    finally:
        conn.execute("RESET ALL; SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET statement_timeout = '120s'")


def _same(a, b, ordered):
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a[1].split(" ")[0] == b[1].split(" ")[0]  # the same SQLSTATE
    return a[1] == b[1] if ordered else sorted(a[1], key=repr) == sorted(b[1], key=repr)


def _differs(conn, mode, query):
    got = _fetch(conn, mode, query, "tiered")
    want = _fetch(conn, mode, query, "copy")
    return (None if _same(got, want, query.ordered) else (got, want))


def _shrink(conn, mode, query, diff):
    """The smallest variant of `query` (predicates cut to one leaf) that still differs."""
    improved = True
    while improved:
        improved = False
        for smaller in query.shrunk():
            d = _differs(conn, mode, smaller)
            if d:
                query, diff, improved = smaller, d, True
                break
    return query, diff


def _show(result):
    kind, value = result
    if kind == "error":
        return f"ERROR {value}"
    return f"{len(value)} rows: {value[:3]}{' ...' if len(value) > 3 else ''}"


def _explain(got, want):
    """Both results, and for two row sets the rows only one side has."""
    text = f"  tiered: {_show(got)}\n  copy:   {_show(want)}"
    if got[0] == want[0] == "ok":
        from collections import Counter
        a, b = Counter(map(repr, got[1])), Counter(map(repr, want[1]))
        only_t, only_c = list((a - b).elements()), list((b - a).elements())
        if only_t or only_c:
            text += f"\n  only in tiered ({len(only_t)}): {only_t[:5]}\n  only in copy ({len(only_c)}): {only_c[:5]}"
        else:
            text += "\n  (the same rows in another order)"
    return text


def run_queries(conn, phase, seed, n, families, modes, max_reports=3):
    """Runs n generated queries on both tables; fails with the shrunk mismatches."""
    gen = qg.QueryGen(seed)
    reports = []
    for i, query in enumerate(gen.queries(n, families)):
        mode = modes[i % len(modes)]
        diff = _differs(conn, mode, query)
        if not diff:
            continue
        small, small_diff = _shrink(conn, mode, query, diff)
        sql, params = small.sql("tiered", params=mode in ("custom", "generic"))
        reports.append(
            f"[{phase}] seed {seed} query {i} ({small.family}, mode {mode}):\n  {sql}\n"
            + (f"  params: {[lit for lit, _ in params]}\n" if params else "")
            + _explain(*small_diff))
        if len(reports) >= max_reports:
            break
    assert not reports, f"{len(reports)} mismatch(es) (TIERDB_DIFF_SEED={seed}):\n" + "\n".join(reports)


# ------------------------------------------------------------ the tables


class Dataset:
    """The database, its `tiered` and `copy` tables, and the tierdb command."""

    def __init__(self, pg, name, lake, tierdb_bin):
        self.pg, self.name, self.lake, self.tierdb_bin = pg, name, lake, tierdb_bin
        self.conn = connect(pg.dsn_for(name))
        self.rng = random.Random(SEED * 7919 + 1)
        self.values = qg.Values(self.rng)
        self.next_id = ROWS + 1

    def tierdb(self, *args, lag=LAG):
        env = {**clean_env(), **self.pg.env_for(self.name), "TIERDB_WAREHOUSE": str(self.lake),
               "TIERDB_TIERING_LAG": lag}
        proc = subprocess.run([str(self.tierdb_bin), *args], capture_output=True, text=True,
                              timeout=TIERDB_TIMEOUT, env=env, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"tierdb {' '.join(args)}:\n{proc.stderr}"
        return proc

    def build(self):
        rows = [self.values.row(i, (i - 1) * qg.DAYS // ROWS) for i in range(1, ROWS + 1)]
        sql = (qg.table_ddl("tiered", True) + qg.table_ddl("copy", False) + qg.DIM_SQL
               + qg.insert_sql("tiered", rows) + "INSERT INTO copy SELECT * FROM tiered;\n")
        self.conn.execute(sql)
        self.tierdb("register", "--table", "public.tiered", "--pk", "id", "--tier-key", "ts")
        self.tierdb("run", "--once")
        self.T = self.conn.execute(
            "SELECT tier_key_hi FROM tierdb.cutline c JOIN tierdb.tables t USING (table_id)"
            " WHERE t.table_name = 'tiered'").fetchone()[0]
        assert int(self.T) == _day_micros(qg.DAYS - qg.HOT_DAYS), f"T is {self.T}"
        self.conn.execute("SET tierdb.transparent_reads = off")
        heap = self.conn.execute("SELECT count(*) FROM tiered").fetchone()
        self.conn.execute("RESET tierdb.transparent_reads")
        assert 0 < int(heap[0]) < ROWS, f"the heap holds {heap[0]} of {ROWS} rows: nothing was tiered"

    # ---------------------------------------------- corrections, both tables alike

    def _rows(self, where):
        return [(r[0], r[1]) for r in self.conn.execute(
            f"SELECT id::text, ts::text FROM copy WHERE {where} ORDER BY id").fetchall()]

    def upsert(self, rid, day):
        hot = day >= qg.DAYS - qg.HOT_DAYS
        row = [qg.q(str(rid)), self.values.ts(day)] + [
            self.values.value(c, hot, json_null=False) for c, _, k in qg.COLUMNS if k not in ("pk", "tierkey")]
        image = "ROW" + qg.row_sql(row)
        self.conn.execute(f"SELECT tierdb_upsert('tiered', to_jsonb({image}::tiered))")
        self.conn.execute(f"DELETE FROM copy WHERE id = {rid}; INSERT INTO copy SELECT ({image}::copy).*")

    def delete(self, rid, ts):
        self.conn.execute(f"SELECT tierdb_delete('tiered', to_jsonb({rid}::bigint), {qg.q(ts)}::timestamptz)")
        self.conn.execute(f"DELETE FROM copy WHERE id = {rid}")

    def corrections(self, n, move_between_cold_days=False):
        """n routed writes of every kind; a cold row moved to another cold
        day only with move_between_cold_days (issue 16 item 1)."""
        cold_days = qg.DAYS - qg.HOT_DAYS
        r = self.rng
        kinds = ["update_cold", "delete_cold", "insert_cold", "update_hot", "cold_to_hot", "hot_to_cold",
                 "delete_hot", "insert_hot"]
        if move_between_cold_days:
            kinds = ["move_cold"]
        for _ in range(n):
            kind = r.choice(kinds)
            cold = self._rows(f"ts < '{qg.FIRST_DAY + datetime.timedelta(cold_days)}'")
            hot = self._rows(f"ts >= '{qg.FIRST_DAY + datetime.timedelta(cold_days)}'")
            rid, ts = r.choice(hot if kind in ("update_hot", "hot_to_cold", "delete_hot") else cold)
            day = (datetime.date.fromisoformat(ts[:10]) - qg.FIRST_DAY).days
            if kind.startswith("delete"):
                self.delete(rid, ts)
            elif kind.startswith("insert"):
                self.upsert(self.next_id, r.randrange(cold_days) if kind == "insert_cold"
                            else r.randrange(cold_days, qg.DAYS))
                self.next_id += 1
            elif kind.startswith("update"):
                self.upsert(rid, day)
            elif kind == "cold_to_hot":
                self.upsert(rid, r.randrange(cold_days, qg.DAYS))
            elif kind == "hot_to_cold":
                self.upsert(rid, r.randrange(cold_days))
            else:
                self.upsert(rid, r.choice([d for d in range(cold_days) if d != day]))

    def delta_rows(self):
        return int(self.conn.execute("SELECT count(*) FROM tierdb.delta").fetchone()[0])

    def all_rows_same(self):
        """The whole table, as a query: cheap and exhaustive."""
        whole = qg.Query("all", "SELECT * FROM {t} ORDER BY id", [], [], ordered=True)
        diff = _differs(self.conn, "plain", whole)
        assert not diff, "SELECT * differs:\n" + _explain(*diff)


def _day_micros(day):
    return ((qg.FIRST_DAY + datetime.timedelta(day)) - datetime.date(1970, 1, 1)).days * 86400 * 10**6


@pytest.fixture(scope="module")
def data(pg, tierdb_bin, e2e_root):
    name = "diff_" + uuid.uuid4().hex[:8]
    pg.psql(f'CREATE DATABASE "{name}"')
    pg.psql("CREATE EXTENSION tierdb", db=name)
    lakes = e2e_root / "lakes"
    lakes.mkdir(mode=0o755, exist_ok=True)
    lake = Path(tempfile.mkdtemp(prefix="lake-", dir=lakes))
    lake.chmod(0o755)
    dataset = Dataset(pg, name, lake, tierdb_bin)
    try:
        dataset.build()
        yield dataset
    finally:
        dataset.conn.close()
        pg.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _slice(phase):
    return TOTAL // 3 + (TOTAL % 3 if phase == 0 else 0)


# The three phases run in this order on one dataset.

def test_after_tiering(data):
    data.all_rows_same()
    run_queries(data.conn, "tiered", SEED, _slice(0), FAMILIES, MODES)


def test_the_aggregates_reach_the_cold_aggregate(data):
    """The aggregate family is written to exercise the cold aggregate (its
    states, FILTERs, metadata answers): most of its queries must plan it."""
    gen = qg.QueryGen(SEED + 6)
    queries = [q for q in gen.queries(60, ["aggregate"]) if "ORDER BY id" not in q.template]
    planned = 0
    for query in queries:
        sql, _ = query.sql("tiered")
        plan = data.conn.execute("EXPLAIN (FORMAT JSON) " + sql).fetchone()[0]
        planned += '"TierDB Cold Aggregate"' in str(plan)
    assert queries and planned >= len(queries) // 2, (planned, len(queries))


def test_with_corrections_in_the_delta(data):
    data.corrections(80)
    assert data.delta_rows() > 0
    data.all_rows_same()
    run_queries(data.conn, "delta", SEED + 1, _slice(1), FAMILIES, MODES)


def test_a_reader_across_the_fold_sees_one_state(data):
    """Read vs fold publish: a REPEATABLE READ reader keeps the rows of its
    snapshot while the fold publishes (T, S) and empties the delta, and sees
    the folded state, the same rows, after; a READ COMMITTED reader sees the
    same rows before and after. Corrections are in the delta first."""
    data.corrections(20)
    whole = "SELECT * FROM tiered ORDER BY id"
    want = data.conn.execute("SELECT * FROM copy ORDER BY id").fetchall()
    reader = connect(data.pg.dsn_for(data.name))
    try:
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        assert reader.execute(whole).fetchall() == want
        failed = []

        def fold():
            try:
                data.tierdb("run", "--once")
            except AssertionError as e:
                failed.append(e)
        folding = threading.Thread(target=fold)
        folding.start()
        # the fold may wait for this reader's transaction: read while it runs, then end it
        assert reader.execute(whole).fetchall() == want
        reader.execute("COMMIT")
        folding.join(timeout=TIERDB_TIMEOUT)
        assert not folding.is_alive() and not failed, failed
        assert data.delta_rows() == 0, "the fold left delta rows"
        assert reader.execute(whole).fetchall() == want
    finally:
        reader.close()


def test_after_the_fold(data):
    data.tierdb("run", "--once")
    assert data.delta_rows() == 0, "the fold left delta rows"
    data.all_rows_same()
    run_queries(data.conn, "folded", SEED + 2, _slice(2), FAMILIES, MODES)


# ------------------------------------------------------------ focused runs (issue 16 items 1-3)


def test_parallel_plans(data):
    run_queries(data.conn, "parallel", SEED + 3, 60, qg.FAMILIES, ["parallel"])


def test_infinity_and_extremes(data):
    run_queries(data.conn, "infinity", SEED + 4, 120, [qg.INFINITY_FAMILY], ALL_MODES)


def test_row_level_security(data):
    """A role under the same policy on both tables sees the same rows (the
    table owner, a superuser here, is not under them)."""
    policy = "USING (i2 > 0 OR ts >= '2024-01-08')"
    data.conn.execute(
        "DROP ROLE IF EXISTS diff_reader; CREATE ROLE diff_reader LOGIN;"
        " GRANT SELECT ON tiered, copy, dim TO diff_reader;"
        " ALTER TABLE tiered ENABLE ROW LEVEL SECURITY; ALTER TABLE copy ENABLE ROW LEVEL SECURITY;"
        f" CREATE POLICY positive ON tiered FOR SELECT TO diff_reader {policy};"
        f" CREATE POLICY positive ON copy FOR SELECT TO diff_reader {policy}")
    conn = connect(f"postgres://diff_reader@{data.pg.host}:{data.pg.port}/{data.name}")
    try:
        whole = qg.Query("all", "SELECT * FROM {t} ORDER BY id", [], [], ordered=True)
        diff = _differs(conn, "plain", whole)
        assert not diff, "SELECT * as diff_reader differs:\n" + _explain(*diff)
        run_queries(conn, "rls", SEED + 5, 90, qg.FAMILIES, ALL_MODES)
    finally:
        conn.close()
        data.conn.execute("DROP OWNED BY diff_reader; DROP ROLE diff_reader")


def test_moving_cold_rows_between_cold_days(data):
    """Runs last: the bug leaves both copies of a moved row behind."""
    data.corrections(10, move_between_cold_days=True)
    data.all_rows_same()
    data.tierdb("run", "--once")
    data.all_rows_same()


def test_after_schema_changes(data):
    """ALTER TABLE carried into the lake (issue 16 item 4), on both tables
    alike, with corrections waiting in the delta: widened types (smallint to
    integer, integer to bigint, real to double precision, numeric precision
    up) and added columns with defaults read the same as on the untiered
    copy, before the daemon follows (the lake still narrower, without the
    fields) and after (promoted, added with their initial-default). Runs
    after the others: it changes the table's columns."""
    data.corrections(20)
    assert data.delta_rows() > 0
    change = ("ALTER TABLE {t} ALTER COLUMN i2 TYPE integer, ALTER COLUMN i4 TYPE bigint,"
              " ALTER COLUMN f4 TYPE double precision, ALTER COLUMN n TYPE numeric(16,3),"
              " ADD COLUMN extra integer DEFAULT 7, ADD COLUMN note text NOT NULL DEFAULT 'older';")
    data.conn.execute(change.format(t="tiered") + change.format(t="copy"))
    data.all_rows_same()
    run_queries(data.conn, "altered", SEED + 7, 120, FAMILIES, MODES)
    data.tierdb("run", "--once")
    assert data.delta_rows() == 0, "the fold left delta rows"
    data.all_rows_same()
    run_queries(data.conn, "altered-followed", SEED + 8, 120, FAMILIES, MODES)
    data.tierdb("verify", "--table", "public.tiered")
