"""Differential test of transparent UPDATE and DELETE (issue 18 part 1,
"Exactness is checked the same way as reads"): seeded random UPDATEs
(values, tier-key moves between and within the tiers, UPDATE ... FROM),
DELETEs (plain and USING), MERGE (delete, update, tier-key move and insert
actions), INSERT ... ON CONFLICT DO NOTHING / DO UPDATE on existing and new
keys, INSERTs, prepared statements with generic plans and SELECT ... FOR
UPDATE/SHARE, run on `events`, a tiered table with transparent writes (and,
in a second run, a direct table: docs/direct.md), and on
`plain`, an untiered copy with the same primary key (id, ts), which is the
merge key of `events`.  After every statement both must agree on the outcome
(the SQLSTATE of an error), the row count and the RETURNING rows (as a
multiset), and after every round on their whole contents.  Between rounds
the daemon runs once (tiering as the rows allow, and the fold of the delta
the statements filled), so later rounds change rows that were corrected in
the delta and rows already folded into the lake; new and moved rows reach
further each round, so T advances too.

  TIERDB_DIFF_SEED          the seed (default 19)
  TIERDB_DIFF_DML_ROUNDS    rounds (default 6), 15 statements each
"""

from __future__ import annotations

import datetime
import os
import random

import psycopg
import pytest

from test_differential import connect
from test_direct import as_server_user  # noqa: F401 (fixture)
from test_differential_inserts import contents, tiered_with_copy
from test_tiering import run_once

SEED = int(os.environ.get("TIERDB_DIFF_SEED", "19"))
ROUNDS = int(os.environ.get("TIERDB_DIFF_DML_ROUNDS", "6"))
START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
# rows move and land within [2023-12-26, HIGH): HIGH grows by half a day a round, so the newest tier key grows
# and the daemon's runs advance T (the premake step keeps partitions two days ahead of the newest row)
LOW = START - datetime.timedelta(days=6)


def high(round_):
    return START + datetime.timedelta(days=10, hours=12 * round_)


def ts_literal(ts: datetime.datetime) -> str:
    return f"'{ts.isoformat()}'::timestamptz"


class Statement:
    """One random statement, rendered for either table."""

    def __init__(self, rng: random.Random, next_id, round_):
        self.rng = rng
        self.high = high(round_)
        self.kind = rng.choice(["update", "update", "move", "move", "delete", "update_from", "delete_using",
                                "insert", "prepared", "merge", "upsert", "lock"])
        self.returning = rng.choice(["", " RETURNING *", " RETURNING id, ts", " RETURNING v, amount"])
        self.where = self.predicate()
        self.sql = getattr(self, self.kind)(next_id)

    def predicate(self) -> str:
        rng = self.rng
        a = rng.randint(1, 3200)
        day = START + datetime.timedelta(days=rng.randint(-3, 10), hours=rng.randint(0, 23))
        choices = [
            f"id % {rng.randint(40, 400)} = {rng.randint(0, 39)}",
            f"id BETWEEN {a} AND {a + rng.randint(0, 30)}",
            f"ts >= {ts_literal(day)} AND ts < {ts_literal(day + datetime.timedelta(hours=rng.randint(1, 30)))}"
            f" AND id % {rng.randint(2, 9)} = 0",
            f"id = {a}",
            f"id IN ({a}, {rng.randint(1, 3200)}, {rng.randint(1, 3200)})",
            f"(v IS NULL OR v LIKE 'm%') AND id % {rng.randint(20, 90)} = 1",
            f"amount > {rng.randint(-100, 100) * 1000000} AND id % {rng.randint(30, 200)} = 2",
        ]
        return rng.choice(choices)

    def update(self, next_id):
        v = self.rng.choice(["'u'", "v || '+'", "upper(v)", "NULL", "'m' || id"])
        return f"UPDATE {{t}} SET v = {v}, amount = amount + {self.rng.randint(-5, 5)} WHERE {self.where}{self.returning}"

    def move(self, next_id):
        hours = self.rng.randint(-200, 200)
        micros = self.rng.randint(1, 999999)
        return (f"UPDATE {{t}} SET ts = ts + interval '{hours} hours {micros} microseconds', v = 'moved'"
                f" WHERE {self.where} AND ts + interval '{hours} hours' >= {ts_literal(LOW)}"
                f" AND ts + interval '{hours} hours' < {ts_literal(self.high)}{self.returning}")

    def delete(self, next_id):
        return f"DELETE FROM {{t}} WHERE {self.where}{self.returning}"

    def update_from(self, next_id):
        ids = ", ".join(f"({self.rng.randint(1, 3200)}, 'f{i}')" for i in range(self.rng.randint(1, 12)))
        returning = self.returning.replace("RETURNING *", "RETURNING e.*").replace("RETURNING id", "RETURNING e.id")
        returning = returning.replace(" v, amount", " e.v, e.amount").replace(", ts", ", e.ts")
        return f"UPDATE {{t}} e SET v = f.v FROM (VALUES {ids}) f(id, v) WHERE f.id = e.id{returning}"

    def delete_using(self, next_id):
        ids = ", ".join(f"({self.rng.randint(1, 3200)})" for _ in range(self.rng.randint(1, 8)))
        return f"DELETE FROM {{t}} e USING (VALUES {ids}) f(id) WHERE f.id = e.id RETURNING e.id"

    def merge(self, next_id):
        ids = sorted({self.rng.randint(1, 3200) for _ in range(self.rng.randint(1, 8))})
        ts = LOW + datetime.timedelta(seconds=self.rng.randint(0, int((self.high - LOW).total_seconds()) - 1))
        source = ", ".join([f"({i}, 'g{i}')" for i in ids] + [f"({next_id()}, 'gnew')"])
        return (f"MERGE INTO {{t}} e USING (VALUES {source}) s(id, v) ON e.id = s.id"
                f" WHEN MATCHED AND e.id % 3 = 0 THEN DELETE"
                f" WHEN MATCHED AND e.id % 3 = 1 THEN UPDATE SET ts = greatest(least(e.ts + interval"
                f" '{self.rng.randint(-90, 90)} hours', {ts_literal(self.high - datetime.timedelta(seconds=1))}),"
                f" {ts_literal(LOW)})"
                f" WHEN MATCHED THEN UPDATE SET v = s.v, amount = e.amount + 1"
                f" WHEN NOT MATCHED THEN INSERT VALUES (s.id, {ts_literal(ts)}, s.v, 0)")

    def upsert(self, next_id):
        """INSERT ... ON CONFLICT on the primary key: existing keys (read from plain, which holds what events
        does when the statement runs on either) and a new one."""
        ids = ", ".join(str(self.rng.randint(1, 3200)) for _ in range(self.rng.randint(1, 8)))
        ts = LOW + datetime.timedelta(seconds=self.rng.randint(0, int((self.high - LOW).total_seconds()) - 1))
        action = self.rng.choice(["DO NOTHING", "DO UPDATE SET v = EXCLUDED.v || {t}.v, amount = {t}.amount + 1",
                                  "DO UPDATE SET v = 'u' WHERE {t}.id % 2 = 0"])
        return (f"INSERT INTO {{t}} SELECT id, ts, 'x' || id, 1 FROM plain WHERE id IN ({ids})"
                f" UNION ALL SELECT {next_id()}, {ts_literal(ts)}, 'new', 2"
                f" ON CONFLICT (id, ts) {action}{self.returning}")

    def insert(self, next_id):
        rows = []
        for _ in range(self.rng.randint(1, 10)):
            ts = LOW + datetime.timedelta(seconds=self.rng.randint(0, int((self.high - LOW).total_seconds()) - 1))
            rows.append(f"({next_id()}, {ts_literal(ts)}, 'i', {self.rng.randint(-1000, 1000)}.5)")
        return f"INSERT INTO {{t}} VALUES {', '.join(rows)}{self.returning}"

    def prepared(self, next_id):
        a = self.rng.randint(1, 3200)
        return (f"PREPARE p(bigint, bigint) AS UPDATE {{t}} SET amount = amount * 2 WHERE id BETWEEN $1 AND $2"
                f"{self.returning.replace('*', 'id, amount')};"
                f" EXECUTE p({a}, {a + 3}); EXECUTE p({a + 100}, {a + 104}); EXECUTE p({a + 300}, {a + 300});"
                f" EXECUTE p({a + 1000}, {a + 1001}); EXECUTE p({a + 2000}, {a + 2010}); EXECUTE p({a - 50}, {a - 45})")

    def lock(self, next_id):
        clause = self.rng.choice(["FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"])
        return f"SELECT * FROM {{t}} WHERE {self.where} {clause}"

    def run(self, conn, table):
        """('ok', rowcount, sorted RETURNING rows) or ('error', SQLSTATE)."""
        try:
            with conn.cursor() as cur:
                if self.kind == "prepared":
                    count, returned = 0, []
                    cur.execute("BEGIN; SET LOCAL plan_cache_mode = force_generic_plan")
                    try:
                        prepare, *executes = self.sql.format(t=table).split("; ")
                        cur.execute(prepare)
                        for e in executes:
                            cur.execute(e)
                            count += cur.rowcount
                            if self.returning:
                                returned += cur.fetchall()
                        cur.execute("COMMIT")
                    except psycopg.Error:
                        cur.execute("ROLLBACK")
                        raise
                    finally:
                        cur.execute("DEALLOCATE p")
                    return "ok", count, sorted(map(repr, returned))
                cur.execute(self.sql.format(t=table))
                returned = cur.fetchall() if "RETURNING" in self.sql or self.kind == "lock" else []
                return "ok", cur.rowcount, sorted(map(repr, returned))
        except psycopg.Error as e:
            return "error", e.sqlstate


@pytest.mark.parametrize("mode", ["tiered", "direct"])
def test_random_dml_matches_an_untiered_copy(db, as_server_user, mode):
    """In both modes; a direct table's statements commit to the lake when each ends (autocommit), so no
    delta row is left between them. (The daemon runs as the server's OS user, who writes a direct lake.)"""
    tierdb = as_server_user
    tiered_with_copy(db, tierdb, mode)
    rng = random.Random(SEED)
    counter = iter(range(5_000_000, 10_000_000))
    events = connect(db.dsn)
    plain = connect(db.dsn)
    changed = 0
    first_t = events.execute("SELECT tier_key_hi FROM tierdb.cutline").fetchone()[0]
    try:
        for round_ in range(ROUNDS):
            for n in range(15):
                statement = Statement(rng, lambda: next(counter), round_)
                got, want = statement.run(events, "events"), statement.run(plain, "plain")
                assert got == want, f"seed {SEED} round {round_} statement {n}: {statement.sql}\n{got} != {want}"
                changed += got[1] if got[0] == "ok" else 0
            assert contents(events, "events") == contents(plain, "plain"), f"seed {SEED} round {round_}"
            assert events.execute("SELECT count(*) FROM ONLY events_tierdb_spill").fetchall() == [("0",)]
            if mode == "direct":
                assert events.execute("SELECT count(*) FROM tierdb.delta").fetchall() == [("0",)]
            run_once(tierdb, "2d")
            assert contents(events, "events") == contents(plain, "plain"), f"seed {SEED} after the run {round_}"
        assert changed > 200
        assert int(events.execute("SELECT tier_key_hi FROM tierdb.cutline").fetchone()[0]) > int(first_t), \
            "T never advanced"
        assert events.execute("SELECT count(*) FROM tierdb.delta").fetchall() == [("0",)]
        proc = tierdb(["verify", "--table", "public.events"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        events.close()
        plain.close()
