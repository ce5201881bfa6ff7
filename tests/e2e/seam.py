"""The seam read of SPEC §5 done by hand, for the end-to-end tests that check
what a reader of a tiered table sees against the rows that were written.

A test keeps a plain, unregistered `truth` table beside its tiered table
and applies every write to both in one transaction: truth is then exactly
the rows written, computed by Postgres without TierDB. The seam is

    heap >= T  ∪  (lake@S ⊕ delta)

where the lake rows come from whichever reader the test checks (Spark,
`tierdb lake cat`), and the delta is merged here: for each pk the delta row
wins, op 0 replaces or adds the row (its payload is to_jsonb of the row),
op 1 removes it. Every row, from any source, is brought into the canonical
form of tests/interop/iceberg_tables.py (the rendering of `lake cat`) and
compared as a multiset, value by value.

Corrections are written as a client of the protocol would, with plain SQL
(upsert_sql, tombstone_sql, insert_cold_sql): the delta row and the truth
change commit together, only rows already below T are corrected, and
old_tier_key names where the lake holds the row (an unfolded correction
that moved it keeps the lake's location).
"""

from __future__ import annotations

import datetime
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "interop"))

# The readers' canonical rows, re-exported for the tests (tests/interop is not on their path).
import lake_files  # noqa: E402
from iceberg_tables import (  # noqa: E402
    assert_same_rows, canonical_rows, cat_rows, datetime_micros, lake_cat, spark_rows,
)

__all__ = ["SESSION", "Cut", "Seam", "assert_same_rows", "cat_rows", "lake_cat", "spark_rows"]

# Every rendering below assumes these settings.
SESSION = "SET TimeZone = 'UTC';\nSET DateStyle = 'ISO, YMD';\nSET extra_float_digits = 1;\n"

# Postgres column type -> SQL giving the value in `lake cat`'s JSON form
# ({} is the column reference). Numbers and booleans go as JSON values.
_RENDER = {
    "numeric": "{}::text",
    "timestamptz": "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
    "timestamp": "to_char({}, 'YYYY-MM-DD\"T\"HH24:MI:SS.US')",
    "date": "to_char({}, 'YYYY-MM-DD')",
    "uuid": "{}::text",
    "bytea": "translate(encode({}, 'base64'), E'\\n', '')",
}
_AS_JSON = {"int2", "int4", "int8", "float4", "float8", "bool", "text", "varchar", "bpchar"}

# Tier key type (tierdb.tables.tier_key_type) -> SQL of the canonical bigint (SPEC §2).
_CANON = {
    "bigint": "({})::bigint",
    "timestamptz": "(extract(epoch FROM {}) * 1000000)::bigint",
    "timestamp": "(extract(epoch FROM {}) * 1000000)::bigint",
    "date": "({} - date '1970-01-01')",
}


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def pk_text(parts) -> str:
    """The canonical text of a key (SPEC §4): one part as itself; several
    joined with chr(31) after escaping backslash and chr(31) with a backslash."""
    texts = [str(p) for p in parts]
    if len(texts) == 1:
        return texts[0]
    return "\x1f".join(t.replace("\\", "\\\\").replace("\x1f", "\\\x1f") for t in texts)


def tier_value(tier_key_type: str, rendered) -> int:
    """The canonical bigint of a tier key value in canonical (rendered) form."""
    if tier_key_type == "bigint":
        return int(rendered)
    if tier_key_type == "date":
        return (datetime.date.fromisoformat(rendered) - datetime.date(1970, 1, 1)).days
    text = rendered[:-1] + "+00:00" if rendered.endswith("Z") else rendered
    return datetime_micros(datetime.datetime.fromisoformat(text))


@dataclass
class Cut:
    """A reader's view: the pinned (T, S) and the metadata file naming S."""
    pin_id: int
    T: int
    S: int | None
    metadata_location: str


class Seam:
    """A registered table `name` (in schema public) and its truth table."""

    def __init__(self, db, name: str, truth: str = "truth"):
        self.db = db
        self.name = name
        self.truth = truth
        ((table_id, pk, tier_key, tier_key_type, ref),) = db.query(
            "SELECT table_id, array_to_json(primary_key_cols)::text, tier_key_col, tier_key_type, lake_table_ref"
            f" FROM tierdb.tables WHERE schema_name = 'public' AND table_name = {quote_literal(name)}"
        )
        self.table_id = int(table_id)
        self.pk = json.loads(pk)
        self.tier_key = tier_key
        self.tier_key_type = tier_key_type
        self.ref = ref
        # (name, pg_type.typname) in column order
        self.columns = db.query(
            "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
            f" WHERE a.attrelid = 'public.{quote_ident(name)}'::regclass AND a.attnum > 0 AND NOT a.attisdropped"
            " ORDER BY a.attnum"
        )
        types = dict(self.columns)
        for n in self.pk:
            assert types[n] in ("int2", "int4", "int8", "text"), (
                f"seam.py renders pk texts of integer and text columns only, not {n} {types[n]}")
        self.qualified = f"public.{quote_ident(name)}"

    # ------------------------------------------------------------ SQL pieces

    def canon(self, expr: str) -> str:
        """SQL of the canonical bigint of the tier key expression `expr`."""
        return _CANON[self.tier_key_type].format(expr)

    def pk_sql(self, alias: str) -> str:
        """SQL of the canonical pk text of row `alias`."""
        parts = [f"{alias}.{quote_ident(c)}::text" for c in self.pk]
        if len(parts) == 1:
            return parts[0]
        escaped = [f"replace(replace({p}, '\\', '\\\\'), chr(31), '\\' || chr(31))" for p in parts]
        return " || chr(31) || ".join(escaped)

    def rendered_json(self, alias: str) -> str:
        """SQL of a json value holding row `alias` as `lake cat` prints it."""
        items = []
        for name, pg_type in self.columns:
            ref = f"({alias}).{quote_ident(name)}"
            expr = ref if pg_type in _AS_JSON else _RENDER.get(pg_type, "{}::text").format(ref)
            items.append(f"{quote_literal(name)}, {expr}")
        return f"json_build_object({', '.join(items)})"

    def rendered_sql(self, alias: str) -> str:
        return self.rendered_json(alias) + "::text"

    def _rows(self, sql: str) -> list:
        return [json.loads(r[0]) for r in self.db.query(SESSION + sql)]

    # ------------------------------------------------------------ reading

    def fields(self, metadata_location: str) -> list:
        """[(name, Iceberg type)] of the lake table's current schema."""
        md = lake_files.read_json(metadata_location)  # a local path or an s3:// object
        (schema,) = [s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"]]
        return [(f["name"], f["type"]) for f in schema["fields"]]

    def pin(self) -> Cut:
        """Step 1 of the seam read: a read pin, and the (T, S) it holds."""
        ((pin_id, t, s, location),) = self.db.query(
            "WITH p AS (INSERT INTO tierdb.read_pins (table_id, pinned_lake_snapshot_id, pinned_tier_key_hi,"
            " expires_at) SELECT table_id, lake_snapshot_id, tier_key_hi, now() + interval '15 minutes'"
            f" FROM tierdb.cutline WHERE table_id = {self.table_id}"
            " RETURNING pin_id, pinned_tier_key_hi, pinned_lake_snapshot_id)"
            " SELECT p.pin_id, p.pinned_tier_key_hi, p.pinned_lake_snapshot_id, c.lake_props->>'metadata_location'"
            f" FROM p, tierdb.cutline c WHERE c.table_id = {self.table_id}"
        )
        return Cut(int(pin_id), int(t), None if s is None else int(s), location)

    def unpin(self, cut: Cut) -> None:
        self.db.psql(f"DELETE FROM tierdb.read_pins WHERE pin_id = {cut.pin_id}")

    def hot_rows(self, fields, T: int) -> list:
        """Step 2: the heap at or above T, canonical."""
        rows = self._rows(f"SELECT {self.rendered_sql('h')} FROM {self.qualified} h"
                          f" WHERE {self.canon('h.' + quote_ident(self.tier_key))} >= {T}")
        return canonical_rows(fields, rows, f"heap of {self.name}")

    def delta(self, fields) -> list:
        """The table's delta rows as (pk, op, version, canonical row or None)."""
        # One JSON array per row: a composite pk holds chr(31), psql's field separator here.
        rows = self._rows(
            f"SELECT json_build_array(d.pk, d.op, d.version, CASE WHEN d.op = 0 THEN"
            f" {self.rendered_json(f'jsonb_populate_record(NULL::{self.qualified}, d.payload)')} END)::text"
            f" FROM tierdb.delta d WHERE d.table_id = {self.table_id} ORDER BY d.pk"
        )
        return [
            (pk, op, version, None if payload is None else canonical_rows(fields, [payload], "delta payload")[0])
            for pk, op, version, payload in rows
        ]

    def truth_rows(self, fields) -> list:
        """Exactly the rows written, canonical."""
        return canonical_rows(fields, self._rows(f"SELECT {self.rendered_sql('r')} FROM {self.truth} r"), "truth")

    def merge(self, fields, T: int, cold: list, delta: list, hot: list, context: str) -> list:
        """Steps 3-5: the cold rows (lake at S, canonical tuples in `fields`
        order) with the delta merged over them, plus the hot rows. Fails on a
        pk the cold branch holds twice, a cold or delta row at or above T, or
        a pk in both branches."""
        names = [n for n, _ in fields]
        key_at = [names.index(c) for c in self.pk]
        tk_at = names.index(self.tier_key)
        merged = {}
        for row in cold:
            key = pk_text(row[i] for i in key_at)
            assert key not in merged, f"{context}: the lake at S holds pk {key!r} twice"
            assert tier_value(self.tier_key_type, row[tk_at]) < T, f"{context}: lake row {row} is not below T {T}"
            merged[key] = row
        for key, op, _version, payload in delta:
            merged.pop(key, None)
            if op == 0:
                assert pk_text(payload[i] for i in key_at) == key, (
                    f"{context}: delta payload {payload} under pk {key!r}")
                # Every delta row targets a cold row (SPEC §5).
                assert tier_value(self.tier_key_type, payload[tk_at]) < T, f"{context}: delta row {payload} not below T"
                merged[key] = payload
        for row in hot:
            key = pk_text(row[i] for i in key_at)
            assert key not in merged, f"{context}: pk {key!r} is both in the heap above T and in lake@S ⊕ delta"
            merged[key] = row
        return list(merged.values())

    # ------------------------------------------------------------ writing corrections

    def _cold(self, alias: str) -> str:
        return (f"{self.canon(alias + '.' + quote_ident(self.tier_key))}"
                f" < (SELECT tier_key_hi FROM tierdb.cutline WHERE table_id = {self.table_id})")

    def _pk_match(self, a: str, b: str) -> str:
        return " AND ".join(f"{a}.{quote_ident(c)} = {b}.{quote_ident(c)}" for c in self.pk)

    def _key_where(self, alias: str, key: dict) -> str:
        return " AND ".join(f"{alias}.{quote_ident(c)} = {quote_literal(str(v))}" for c, v in key.items())

    _ON_CONFLICT = (
        " ON CONFLICT (table_id, pk) DO UPDATE SET op = EXCLUDED.op, tier_key = EXCLUDED.tier_key,"
        # The lake still holds the row where the unfolded correction found it.
        " old_tier_key = coalesce(tierdb.delta.old_tier_key, tierdb.delta.tier_key),"
        " version = EXCLUDED.version, payload = EXCLUDED.payload, updated_at = now()"
    )

    def upsert_sql(self, key: dict, assignments: str) -> str:
        """SQL correcting the cold row `key` ({pk column: value}) with the SET
        list `assignments` (which may move the tier key: the caller keeps it
        below T; its right-hand sides name the row's current values as
        old.<column>): truth changes and an op 0 delta row is written, both or
        neither; nothing happens unless the row exists and is below T.
        Prints one row when it corrected one."""
        return (
            f"WITH old AS (SELECT * FROM {self.truth} o WHERE {self._key_where('o', key)} AND {self._cold('o')}"
            f" FOR UPDATE), new AS (UPDATE {self.truth} x SET {assignments} FROM old WHERE {self._pk_match('x', 'old')}"
            f" RETURNING x.*, {self.canon('old.' + quote_ident(self.tier_key))} AS tierdb_old_loc)"
            " INSERT INTO tierdb.delta (table_id, pk, op, tier_key, old_tier_key, version, payload)"
            f" SELECT {self.table_id}, {self.pk_sql('n')}, 0, {self.canon('n.' + quote_ident(self.tier_key))},"
            f" n.tierdb_old_loc, nextval('tierdb.delta_version'), to_jsonb(n) - 'tierdb_old_loc' FROM new n"
            + self._ON_CONFLICT + " RETURNING 1"
        )

    def tombstone_sql(self, key: dict) -> str:
        """SQL deleting the cold row `key`: from truth, and an op 1 delta row."""
        return (
            f"WITH gone AS (DELETE FROM {self.truth} g WHERE {self._key_where('g', key)} AND {self._cold('g')}"
            " RETURNING g.*)"
            " INSERT INTO tierdb.delta (table_id, pk, op, tier_key, old_tier_key, version, payload)"
            f" SELECT {self.table_id}, {self.pk_sql('g')}, 1, {self.canon('g.' + quote_ident(self.tier_key))}, NULL,"
            " nextval('tierdb.delta_version'), NULL FROM gone g"
            + self._ON_CONFLICT + " RETURNING 1"
        )

    def insert_cold_sql(self, values_sql: str) -> str:
        """SQL adding a new row (`values_sql`: a SELECT of the table's
        columns, in order) below T: into truth, and an op 0 delta row."""
        names = ", ".join(quote_ident(n) for n, _ in self.columns)
        return (
            f"WITH new AS (INSERT INTO {self.truth} SELECT * FROM ({values_sql}) v({names}) WHERE {self._cold('v')}"
            " RETURNING *)"
            " INSERT INTO tierdb.delta (table_id, pk, op, tier_key, old_tier_key, version, payload)"
            f" SELECT {self.table_id}, {self.pk_sql('n')}, 0, {self.canon('n.' + quote_ident(self.tier_key))}, NULL,"
            " nextval('tierdb.delta_version'), to_jsonb(n) FROM new n RETURNING 1"
        )


def reads_cold(plan: str) -> bool:
    """Whether a plan (EXPLAIN's text) reads the cold rows: a cold scan, or a
    cold aggregate (an aggregate's cold part, extension/src/cold_agg.c)."""
    return "TierDB Cold Scan" in plan or "TierDB Cold Aggregate" in plan
