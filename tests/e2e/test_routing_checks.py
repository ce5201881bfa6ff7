"""A routed row obeys every rule a plain INSERT of it would (issue 16 item 6;
tierdb.normalize_row / tierdb.checked_row, extension/src/routing.c).

NOT NULL, CHECK constraints (column and table level), domain constraints,
typmods and generated columns are checked in the backend before anything is
written, hot or cold, with Postgres' own errors; a row bound for the lake
must also hold only values the lake can store (no NaN in a decimal).
Nothing that could never fold enters the delta.
"""

from __future__ import annotations

import json

import pytest

from test_routing import delta, fingerprint, make_range_table, scalar
from test_tiering import run_once
from test_verify import verify

COLUMNS = ("id bigint NOT NULL, k bigint NOT NULL, qty posint, code varchar(3), price numeric(5,2),"
           " note text NOT NULL, total numeric GENERATED ALWAYS AS (price * 2) STORED,"
           " CHECK (price >= 0), CONSTRAINT note_short CHECK (length(note) < 20)")


@pytest.fixture
def items(db, tierdb):
    """items tiered at T = 300 (rows 0..479, k = id): cold below 300, hot from 300."""
    db.psql("CREATE DOMAIN posint AS int CHECK (VALUE > 0);")
    make_range_table(db, "items", COLUMNS, "k", [(p * 100, (p + 1) * 100) for p in range(5)],
                     "(id, k, qty, code, price, note) SELECT g, g, 1 + g % 7, 'c' || g % 10, (g % 500) / 10.0, 'n' || g"
                     " FROM generate_series(0, 479) g")
    proc = tierdb(["register", "--table", "public.items", "--pk", "id", "--tier-key", "k"])
    assert proc.returncode == 0, proc.stderr
    run_once(tierdb, "150")
    assert scalar(db, "SELECT tier_key_hi FROM tierdb.cutline") == "300"
    return db


def image(key, **changes):
    row = {"id": key, "k": key, "qty": 3, "code": "abc", "price": "1.50", "note": "fine"}
    row.update(changes)
    return json.dumps(row).replace("'", "''")


REFUSED = [
    ({"note": None}, "23502", 'null value in column "note" of relation "items" violates not-null constraint'),
    ({"price": "-1"}, "23514", 'new row for relation "items" violates check constraint "items_price_check"'),
    ({"note": "x" * 30}, "23514", 'new row for relation "items" violates check constraint "note_short"'),
    ({"qty": 0}, "23514", 'violates check constraint "posint_check"'),
    ({"code": "abcd"}, "22001", "value too long for type character varying(3)"),
    ({"price": "1000.00"}, "22003", "numeric field overflow"),
    ({"price": "Infinity"}, "22003", "numeric field overflow"),
    ({"total": "5"}, "428C9", 'cannot insert a non-DEFAULT value into column "total"'),
]


@pytest.mark.parametrize("key", [50, 450], ids=["cold", "hot"])
@pytest.mark.parametrize("changes,sqlstate,message", REFUSED, ids=[c[1] + "-" + next(iter(c[0])) for c in REFUSED])
def test_a_row_a_plain_insert_refuses_is_refused(items, key, changes, sqlstate, message):
    db = items
    before = fingerprint(db, "items")
    err = db.error(f"SELECT tierdb_upsert('items', '{image(key, **changes)}')")
    assert f"ERROR:  {sqlstate}: " in err and message in err, err
    assert fingerprint(db, "items") == before
    # the same row as a plain INSERT into an untiered copy is refused alike
    db.psql("CREATE TABLE IF NOT EXISTS plain_items (LIKE items INCLUDING ALL)")
    if "total" in changes:
        plain = "INSERT INTO plain_items (id, k, note, total) VALUES (1, 1, 'x', 5)"
    else:
        cols = "id, k, qty, code, price, note"
        plain = (f"INSERT INTO plain_items ({cols}) SELECT {cols}"
                 f" FROM jsonb_populate_record(NULL::plain_items, '{image(key, **changes)}')")
    err = db.error(plain)
    assert f"ERROR:  {sqlstate}: " in err, err


def test_nan_cannot_go_to_the_lake(items):
    db = items
    before = fingerprint(db, "items")
    err = db.error(f"SELECT tierdb_upsert('items', '{image(50, price='NaN')}')")
    assert "ERROR:  22003: column \"price\" of table items cannot take NaN below the cut-line" in err, err
    assert "the lake, whose decimal(5, 2) cannot hold NaN" in err, err
    assert fingerprint(db, "items") == before
    # above T the row is the heap's, where Postgres holds NaN as a plain INSERT would
    assert scalar(db, f"SELECT tierdb_upsert('items', '{image(450, price='NaN')}')") == "heap"
    assert scalar(db, "SELECT price FROM items WHERE id = 450") == "NaN"


def test_generated_columns_are_computed_and_fold(items, tierdb):
    db = items
    # left out: computed; given as the row holds it (to_jsonb of a row): accepted
    assert scalar(db, f"SELECT tierdb_upsert('items', '{image(60, price='2.25')}')") == "delta"
    assert delta(db, "items")["60"][3]["total"] == 4.50
    assert scalar(db, "SELECT tierdb_upsert('items', (SELECT jsonb_set(to_jsonb(e), '{note}', '\"again\"')"
                      " FROM expected e WHERE id = 61))") == "delta"
    assert scalar(db, f"SELECT tierdb_upsert('items', '{image(460, price='3.00')}')") == "heap"
    assert scalar(db, "SELECT total FROM items WHERE id = 460") == "6.00"
    run_once(tierdb, "150")
    assert delta(db, "items") == {}
    proc = verify(tierdb, "public.items")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = db.query("SET tierdb.transparent_reads = on;\nSELECT id, price, total, note FROM items WHERE id IN (60, 61)"
                    " ORDER BY id")
    assert rows == [("60", "2.25", "4.50", "fine"), ("61", scalar(db, "SELECT price FROM expected WHERE id = 61"),
                                                     scalar(db, "SELECT total FROM expected WHERE id = 61"), "again")]
