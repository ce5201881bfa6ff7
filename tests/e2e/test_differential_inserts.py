"""Differential test of transparent INSERT and COPY (issue 18 part 1,
"Exactness is checked the same way as reads"): seeded random batches of
INSERT VALUES, INSERT ... SELECT, prepared INSERTs and COPY, mixing rows
above and below the cut-line (and now and then a key that already exists),
run on `events`, a tiered table with transparent writes, and on `plain`, an
untiered copy; both have the primary key (id, ts), which is the merge
key of `events` (--pk id,ts), so a duplicate is one on both; after every statement the two
must agree on the outcome (the SQLSTATE of an error), the row count and the
RETURNING rows, and, after every round, on their whole contents.  Between
rounds the daemon runs once (tiering as the rows allow, and the fold of
the delta the inserts filled).

  TIERDB_DIFF_SEED            the seed (default 18)
  TIERDB_DIFF_INSERT_ROUNDS   rounds (default 6), 12 statements each
"""

from __future__ import annotations

import datetime
import os
import random

import psycopg
import pytest

from test_differential import connect
from test_tiering import make_events, run_once

SEED = int(os.environ.get("TIERDB_DIFF_SEED", "18"))
ROUNDS = int(os.environ.get("TIERDB_DIFF_INSERT_ROUNDS", "6"))
START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
SPAN_SECONDS = 10 * 86400 - 1  # the fixture's partitions: 2024-01-01 .. 2024-01-10


class Batch:
    """One random statement, rendered for either table."""

    def __init__(self, rng: random.Random, next_id, existing):
        self.kind = rng.choice(["values", "values", "select", "prepared", "copy", "copy"])
        n = rng.randint(1, 40)
        self.rows = []
        for _ in range(n):
            ts = START + datetime.timedelta(seconds=rng.randint(0, SPAN_SECONDS), microseconds=rng.randint(0, 999999))
            # now and then a key that exists (a unique violation on both), or its id at another time, else a fresh one
            dice = rng.random()
            if existing and dice < 0.01:
                key, ts = rng.choice(existing)
            elif existing and dice < 0.03:
                key = rng.choice(existing)[0]
            else:
                key = next_id()
            v = None if rng.random() < 0.1 else rng.choice(["a", "é", "x'y", "tab\\t", "long" * 20])
            amount = None if rng.random() < 0.1 else f"{rng.randint(-99999999, 99999999) / 100:.2f}"
            self.rows.append((key, ts, v, amount))
        self.returning = rng.choice(["", " RETURNING *", " RETURNING id, ts", " RETURNING amount, v"])

    @staticmethod
    def literal(value):
        if value is None:
            return "NULL"
        if isinstance(value, datetime.datetime):
            return f"'{value.isoformat()}'::timestamptz"
        return "'" + str(value).replace("'", "''") + "'"

    def run(self, conn, table):
        """('ok', rowcount, returned rows) or ('error', SQLSTATE)."""
        try:
            with conn.cursor() as cur:
                if self.kind == "copy":
                    with cur.copy(f"COPY {table} (id, ts, v, amount) FROM STDIN") as copy:
                        for row in self.rows:
                            copy.write_row(row)
                    return "ok", cur.rowcount, []
                if self.kind == "prepared":
                    count, returned = 0, []
                    cur.execute("BEGIN")
                    cur.execute(f"PREPARE ins(bigint, timestamptz, text, numeric) AS"
                                f" INSERT INTO {table} VALUES ($1, $2, $3, $4){self.returning}")
                    try:
                        for row in self.rows:
                            cur.execute("EXECUTE ins(" + ", ".join(self.literal(x) for x in row) + ")")
                            count += cur.rowcount
                            if self.returning:
                                returned += cur.fetchall()
                        cur.execute("COMMIT")
                    except psycopg.Error:
                        cur.execute("ROLLBACK")
                        raise
                    finally:
                        cur.execute("DEALLOCATE ins")
                    return "ok", count, returned
                values = ", ".join("(" + ", ".join(self.literal(x) for x in row) + ")" for row in self.rows)
                if self.kind == "values":
                    sql = f"INSERT INTO {table} VALUES {values}{self.returning}"
                else:
                    sql = (f"INSERT INTO {table} (id, ts, v, amount) SELECT id, ts, upper(v), amount * 2"
                           f" FROM (VALUES {values}) s(id, ts, v, amount) WHERE id % 7 <> 3{self.returning}")
                cur.execute(sql)
                return "ok", cur.rowcount, cur.fetchall() if self.returning else []
        except psycopg.Error as e:
            return "error", e.sqlstate


def contents(conn, table):
    return conn.execute(f"SELECT md5(string_agg(t::text, ',' ORDER BY id, ts)), count(*) FROM {table} t").fetchall()


def tiered_with_copy(db, tierdb, mode="tiered"):
    """events with primary key and merge key (id, ts), tiered below 2024-01-08 (registered in `mode`); plain,
    an untiered copy."""
    make_events(db)
    db.psql("ALTER TABLE events ADD PRIMARY KEY (id, ts); CREATE TABLE plain AS SELECT * FROM events;"
            " ALTER TABLE plain ADD PRIMARY KEY (id, ts)")
    proc = tierdb(["register", "--table", "public.events", "--pk", "id,ts", "--tier-key", "ts", "--mode", mode])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "2d")


def test_random_inserts_match_an_untiered_copy(db, tierdb):
    tiered_with_copy(db, tierdb)
    rng = random.Random(SEED)
    counter = iter(range(1_000_000, 10_000_000))
    events = connect(db.dsn)
    existing = [(int(i), datetime.datetime.fromisoformat(ts)) for i, ts in events.execute(
        "SELECT id::text, ts::text FROM events WHERE id IN (5, 1500, 2999)").fetchall()]
    plain = connect(db.dsn)
    cold_seen = 0
    try:
        for round_ in range(ROUNDS):
            for n in range(12):
                batch = Batch(rng, lambda: next(counter), existing)
                got, want = batch.run(events, "events"), batch.run(plain, "plain")
                assert got == want, f"seed {SEED} round {round_} statement {n} ({batch.kind}): {got} != {want}"
                if got[0] == "ok":
                    existing += [(r[0], r[1]) for r in batch.rows[:3]]
                cold_seen += sum(1 for r in batch.rows if r[1] < START + datetime.timedelta(days=7))
            assert contents(events, "events") == contents(plain, "plain"), f"seed {SEED} round {round_}"
            assert events.execute("SELECT count(*) FROM ONLY events_tierdb_spill").fetchall() == [("0",)]
            run_once(tierdb, "2d")
            assert contents(events, "events") == contents(plain, "plain"), f"seed {SEED} after the run {round_}"
        assert cold_seen > 100
        # the fold took the routed rows: nothing left in the delta after the last run
        assert events.execute("SELECT count(*) FROM tierdb.delta").fetchall() == [("0",)]
        proc = tierdb(["verify", "--table", "public.events"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        events.close()
        plain.close()
