"""A seeded generator of rows and SQL for differential testing
(test_differential.py): every query runs on a tiered table and on an
untiered copy of the same rows, and must return the same result.

The table has a column of every type the lake maps (SPEC §6), the tier key
`ts` (timestamptz, daily range partitions) and the pk `id`. Rows hold NULLs
and each type's extremes; values Iceberg cannot hold (±infinity dates and
timestamps, numeric NaN) go only into rows of the hot days, which stay in
the heap.

A query is a template over `{t}` (the table under test), predicate slots
and typed constants. Constants render inline (`'x'::text`) or, for the
prepared modes, as `$n` parameters of a PREPARE with the literals passed to
EXECUTE. Predicates are trees, so a failing query can be shrunk to the
smallest leaf that still fails (Query.shrunk).

Families (query shapes, switchable by name) and the kinds of constants they
use are listed in FAMILIES; INFINITY_FAMILY holds the comparisons with
±infinity and the extremes of dates and timestamps (issue 16 item 3).
"""

from __future__ import annotations

import datetime
import random
import re
import uuid
from dataclasses import dataclass, field

# ------------------------------------------------------------ the table

DAYS = 10            # daily partitions from FIRST_DAY
HOT_DAYS = 3         # the newest days stay in the heap (tiering lag 3d)
FIRST_DAY = datetime.date(2024, 1, 1)

# (name, SQL type, kind) in column order; kind picks the value pool and the predicates.
COLUMNS = [
    ("id", "bigint", "pk"),
    ("ts", "timestamptz", "tierkey"),
    ("i2", "smallint", "int"),
    ("i4", "integer", "int"),
    ("i8", "bigint", "int"),
    ("n", "numeric(12,3)", "numeric"),
    ("f4", "real", "float"),
    ("f8", "double precision", "float"),
    ("s", "text", "text"),
    ("b", "boolean", "bool"),
    ("d", "date", "date"),
    ("tsn", "timestamp", "timestamp"),
    ("tz", "timestamptz", "timestamptz"),
    ("u", "uuid", "uuid"),
    ("j", "jsonb", "jsonb"),
    ("by", "bytea", "bytea"),
]
TYPE = {name: typ for name, typ, _ in COLUMNS}
KIND = {name: kind for name, _, kind in COLUMNS}
# Parameter types of PREPARE (numeric(12,3) is a typmod, not a parameter type).
PARAM_TYPE = {**TYPE, "n": "numeric"}

INT_RANGE = {"i2": (-32768, 32767), "i4": (-2147483648, 2147483647), "i8": (-9223372036854775808, 9223372036854775807)}


def q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def table_ddl(name: str, tiered: bool) -> str:
    cols = ", ".join(f"{n} {t}" + (" NOT NULL" if n in ("id", "ts") else "") for n, t, _ in COLUMNS)
    if not tiered:
        return f"CREATE TABLE {name} ({cols}, PRIMARY KEY (id));\n"
    parts = "".join(
        f"CREATE TABLE {name}_{(FIRST_DAY + datetime.timedelta(d)).strftime('%Y%m%d')} PARTITION OF {name}"
        f" FOR VALUES FROM ('{FIRST_DAY + datetime.timedelta(d)} 00:00:00+00')"
        f" TO ('{FIRST_DAY + datetime.timedelta(d + 1)} 00:00:00+00');\n"
        for d in range(DAYS))
    return f"CREATE TABLE {name} ({cols}) PARTITION BY RANGE (ts);\n" + parts


DIM_SQL = ("CREATE TABLE dim (k smallint PRIMARY KEY, label text, weight numeric);\n"
           "INSERT INTO dim SELECT k, 'label' || (k % 7), k * 1.5 FROM generate_series(-20, 20) k;\n")


class Values:
    """Seeded SQL literals of each column (None is NULL)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def _extreme(self, pool, p=0.08):
        return self.rng.choice(pool) if self.rng.random() < p else None

    def value(self, col: str, hot: bool, null_p: float = 0.08, json_null: bool = True):
        """A literal for `col` in a row of a hot (heap-only) or cold day.
        json_null=False leaves out the JSON value null: a row image
        (tierdb_upsert) cannot tell it from SQL NULL."""
        r = self.rng
        kind = KIND[col]
        if r.random() < null_p:
            return None
        if kind == "int":
            lo, hi = INT_RANGE[col]
            v = self._extreme([lo, hi, 0, lo + 1, hi - 1])
            if v is None:
                # i2 repeats (it joins dim and groups); i4 joins itself; i8 spreads wide
                v = {"i2": r.randint(-30, 30), "i4": r.randint(-1500, 1500)}.get(col, r.randint(-10**6, 10**6) * 10**9 + 7)
            return q(str(v))  # quoted: -32768::smallint would cast before negating
        if kind == "numeric":
            special = ["999999999.999", "-999999999.999", "0.001", "0"] + (["NaN"] if hot else [])
            v = self._extreme(special)
            return q(v) if v else q(f"{r.randint(-10**7, 10**7) / 1000:.3f}")
        if kind == "float":
            special = (["NaN", "Infinity", "-Infinity", "1.4e-45", "3.4028235e38", "-3.4028235e38"] if col == "f4"
                       else ["NaN", "Infinity", "-Infinity", "5e-324", "1.7976931348623157e308", "-2.2250738585072014e-308"])
            v = self._extreme(special)
            return q(v) if v else q(repr(round(r.uniform(-1e4, 1e4), r.randint(0, 6))))
        if kind == "text":
            return q(r.choice(["", "a%b", "a_b", "Éé", "x" * 300, "it's", "alpha", "beta", "gamma", "Alpha",
                               f"w{r.randint(0, 99)}", f"w{r.randint(0, 99)}z"]))
        if kind == "bool":
            return r.choice(["true", "false"])
        if kind == "date":
            special = ["0001-01-01", "9999-12-31", "1970-01-01"] + (["infinity", "-infinity"] if hot else [])
            v = self._extreme(special)
            return q(v or str(datetime.date(2000, 1, 1) + datetime.timedelta(r.randint(0, 12000))))
        if kind in ("timestamp", "timestamptz"):
            special = ["0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "1970-01-01 00:00:00"] + (
                ["infinity", "-infinity"] if hot else [])
            v = self._extreme(special)
            if v is None:
                base = datetime.datetime(2000, 1, 1) + datetime.timedelta(seconds=r.randint(0, 10**9),
                                                                         microseconds=r.randint(0, 999999))
                v = base.isoformat(sep=" ")
            return q(v + ("+00" if kind == "timestamptz" and "infinity" not in v else ""))
        if kind == "uuid":
            v = self._extreme(["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"])
            return q(v or str(uuid.UUID(int=r.getrandbits(128))))
        if kind == "jsonb":
            return q(r.choice(['{"a": 1}', '{"a": 2, "k": "v"}', "[1, 2]", '"x"', "{}",
                               '{"k": "w", "n": 1.5}', '{"a": {"b": [true, null]}}'] + (["null"] if json_null else [])))
        if kind == "bytea":
            return q(r.choice(["\\x", "\\x00", "\\xdeadbeef", "\\xff00ff", "\\x" + r.randbytes(4).hex()]))
        raise AssertionError(col)

    def ts(self, day: int) -> str:
        t = datetime.datetime.combine(FIRST_DAY + datetime.timedelta(day), datetime.time()) + datetime.timedelta(
            seconds=self.rng.randint(0, 86399), microseconds=self.rng.randint(0, 999999))
        return q(t.isoformat(sep=" ") + "+00")

    def row(self, rid: int, day: int) -> list:
        hot = day >= DAYS - HOT_DAYS
        return [str(rid), self.ts(day)] + [self.value(c, hot) for c, _, k in COLUMNS if k not in ("pk", "tierkey")]


def row_sql(values: list) -> str:
    return "(" + ", ".join("NULL" if v is None else f"{v}::{t}" for v, (_, t, _) in zip(values, COLUMNS)) + ")"


def insert_sql(table: str, rows: list) -> str:
    return f"INSERT INTO {table} VALUES\n" + ",\n".join(row_sql(r) for r in rows) + ";\n"


# ------------------------------------------------------------ queries

_MARK = re.compile("\x00(\\d+)\x00")


@dataclass
class Pred:
    """A predicate: a leaf (sql) or a combination (op over children)."""
    sql: str = ""
    op: str = ""
    children: list = field(default_factory=list)

    def render(self) -> str:
        if not self.op:
            return self.sql
        if self.op == "NOT":
            return f"NOT ({self.children[0].render()})"
        return "(" + f" {self.op} ".join(c.render() for c in self.children) + ")"

    def leaves(self) -> list:
        return [self] if not self.op else [leaf for c in self.children for leaf in c.leaves()]


@dataclass
class Query:
    """`template` holds {t} for the table and {p0}, {p1}... for predicates."""
    family: str
    template: str
    preds: list
    consts: list            # [(literal or None, type)]
    ordered: bool = False   # ORDER BY determines the order of every row

    def sql(self, table: str, params: bool = False):
        """(sql, [(literal, type)] of its $n parameters); params=False inlines them."""
        text = self.template.format(t=table, **{f"p{i}": p.render() for i, p in enumerate(self.preds)})
        used = []

        def sub(m):
            lit, typ = self.consts[int(m.group(1))]
            if not params:
                return f"{'NULL' if lit is None else lit}::{typ}"
            used.append((lit, typ))
            return f"${len(used)}"
        return _MARK.sub(sub, text), used

    def shrunk(self):
        """Simpler variants: each predicate slot replaced by one of its leaves or TRUE."""
        for i, p in enumerate(self.preds):
            if not p.op:
                continue
            for leaf in p.leaves() + [Pred("true")]:
                preds = list(self.preds)
                preds[i] = leaf
                yield Query(self.family, self.template, preds, self.consts, self.ordered)


INFINITY_FAMILY = "infinity"
FAMILIES = ["filter", "aggregate", "window", "join", "cte", "subquery", "distinct", "union", "limit",
            INFINITY_FAMILY]

FILTER_COLS = [c for c, _, k in COLUMNS if k != "pk"]
# Columns whose equal values print the same, so grouping and DISTINCT are deterministic
# (floats: 0 and -0 group together; which one prints would depend on row order).
GROUP_COLS = ["i2", "b", "s", "d", "u", "j", "by", "n"]
AGG_NUMERIC = ["i2", "i4", "i8", "n"]
MINMAX_COLS = ["ts", "i2", "i4", "i8", "n", "f4", "f8", "s", "d", "tsn", "tz"]


class QueryGen:
    def __init__(self, seed: int, values: Values | None = None):
        self.rng = random.Random(seed)
        self.values = values or Values(random.Random(seed ^ 0x5EED))

    # ---------------------------------------------- constants and predicates

    def _const(self, consts, col, infinite=False):
        kind = KIND[col]
        if kind == "tierkey":
            day = self.rng.randint(-1, DAYS)
            lit = self.values.ts(day) if self.rng.random() < 0.6 else q(
                f"{FIRST_DAY + datetime.timedelta(day)} 00:00:00+00")
        elif kind == "pk":
            lit = q(str(self.rng.randint(-5, 2100)))
        else:
            lit = self.values.value(col, hot=False, null_p=0.05)
        if infinite:
            lit = q(self.rng.choice(["infinity", "-infinity"] + (
                ["294276-12-31 23:59:59.999999", "4713-01-01 00:00:00 BC"] if kind != "date"
                else ["5874897-12-31", "4713-01-01 BC"])))
        consts.append((lit, PARAM_TYPE[col]))
        return f"\x00{len(consts) - 1}\x00"

    def leaf(self, consts, alias="", infinite=False) -> Pred:
        r = self.rng
        if infinite:
            col = r.choice(["ts", "d", "tsn", "tz"])
        else:
            col = r.choice(FILTER_COLS + ["id"])
        ref = f"{alias}{col}"
        kind = KIND[col]
        c = lambda: self._const(consts, col, infinite)  # noqa: E731
        choice = r.random()
        if choice < 0.08:
            return Pred(f"{ref} IS {'NOT ' if r.random() < 0.5 else ''}NULL")
        if kind == "bool":
            return Pred(r.choice([ref, f"NOT {ref}", f"{ref} IS TRUE", f"{ref} IS NOT FALSE", f"{ref} = {c()}",
                                  f"{ref} IS NOT TRUE", f"{ref} IS FALSE", f"{ref} IS UNKNOWN", f"{ref} IS NOT UNKNOWN",
                                  f"{ref} <> {c()}", f"NOT ({ref} IS TRUE)", f"NOT ({ref} IS NOT FALSE)"]))
        if kind == "jsonb":
            return Pred(r.choice([f"{ref} @> '{{\"a\": 1}}'", f"{ref} ? 'k'", f"{ref} ->> 'k' = 'v'",
                                  f"{ref} = {c()}", f"jsonb_typeof({ref}) = 'object'"]))
        if kind == "text" and choice < 0.3:
            return self._like(consts, ref)
        if choice < 0.2:
            return Pred(f"{ref} {'NOT ' if r.random() < 0.3 else ''}IN ({c()}, {c()}, {c()})")
        if choice < 0.23:  # NOT IN's other forms: a null in the list, an empty array, NOT of IN
            return Pred(r.choice([f"{ref} NOT IN ({c()}, NULL)", f"{ref} <> ALL (ARRAY[]::{PARAM_TYPE[col]}[])",
                                  f"NOT ({ref} IN ({c()}, {c()}))", f"{ref} <> ALL (ARRAY[{c()}, {c()}])"]))
        if choice < 0.26:
            return Pred(f"NOT ({ref} {r.choice(['=', '<>', '<', '<=', '>', '>='])} {c()})")
        if choice < 0.3 and kind not in ("uuid", "bytea"):
            return Pred(f"{ref} {'NOT ' if r.random() < 0.2 else ''}BETWEEN {c()} AND {c()}")
        return Pred(f"{ref} {r.choice(['=', '<>', '<', '<=', '>', '>='])} {c()}")

    # LIKE patterns: prefixes ('w1%', with escapes), wildcard-free ones (equality), and others the
    # lake cannot take ('_', an inner '%'); values hold '%' and '_' too ('a%b', 'a_b').
    LIKE_PATTERNS = ["a%", "%a_b%", "w1%", "_", "%é%", "alpha", "alpha%", "Al%", "w%z", "x%%", "", "%", "Éé%",
                     "it''s%", "a\\%b", "a\\_b%", "a\\%%", "w1_", "gamma", "be%", "w\\1%", "zz\\"]

    def _like(self, consts, ref) -> Pred:
        r = self.rng
        op = r.choice(["LIKE", "NOT LIKE", "LIKE", "NOT LIKE", "ILIKE"])
        pattern = r.choice(self.LIKE_PATTERNS)
        if r.random() < 0.15:  # another escape character, or none
            esc = r.choice(["#", ""])
            pattern = pattern.replace("\\", esc)
            return Pred(f"{ref} {op} '{pattern}' ESCAPE '{esc}'")
        if r.random() < 0.4:  # a constant of its own: a parameter in the prepared modes
            consts.append((f"'{pattern}'", "text"))
            return Pred(f"{ref} {op} \x00{len(consts) - 1}\x00")
        return Pred(f"{ref} {op} '{pattern}'")

    def pred(self, consts, alias="", depth=0, infinite=False) -> Pred:
        r = self.rng
        x = r.random()
        if depth >= 2 or x < 0.45:
            return self.leaf(consts, alias, infinite)
        if x < 0.55:
            return Pred(op="NOT", children=[self.pred(consts, alias, depth + 1, infinite)])
        kids = [self.pred(consts, alias, depth + 1, infinite) for _ in range(r.randint(2, 3))]
        if infinite:  # keep an infinity leaf at the top so the family tests them
            kids[0] = self.leaf(consts, alias, True)
        return Pred(op=r.choice(["AND", "OR"]), children=kids)

    # ---------------------------------------------- shapes

    def cols(self, n=3, alias=""):
        picked = self.rng.sample([c for c, _, _ in COLUMNS if c != "id"], n)
        return ", ".join(f"{alias}{c}" for c in ["id"] + picked)

    def query(self, family: str) -> Query:
        consts = []
        r = self.rng
        p = lambda alias="": self.pred(consts, alias)  # noqa: E731
        if family == "filter":
            return Query(family, f"SELECT {self.cols(r.randint(1, 15))} FROM {{t}} WHERE {{p0}}", [p()], consts)
        if family == INFINITY_FAMILY:
            return Query(family, "SELECT id, ts, d, tsn, tz FROM {t} WHERE {p0}",
                         [self.pred(consts, infinite=True)], consts)
        if family == "limit":
            desc = r.choice(["", " DESC"])
            return Query(family, f"SELECT {self.cols(4)} FROM {{t}} WHERE {{p0}} ORDER BY id{desc}"
                         f" LIMIT {r.randint(0, 40)} OFFSET {r.randint(0, 30)}", [p()], consts, ordered=True)
        if family == "aggregate":
            g = r.choice(GROUP_COLS)
            a = r.choice(AGG_NUMERIC)
            m = r.choice(MINMAX_COLS)
            having = f" HAVING count(*) > {r.randint(0, 3)}" if r.random() < 0.5 else ""
            shape = r.random()
            if shape < 0.35:  # an ordered aggregate: the plain plan over the seam union
                return Query(family, f"SELECT {g}, count(*), count({m}), min({m}), max({m}), sum({a}), avg({a}),"
                             f" bool_and(b), string_agg(s, ',' ORDER BY id)"
                             f" FROM {{t}} WHERE {{p0}} GROUP BY {g}{having}", [p()], consts)
            if shape < 0.8:  # the cold aggregate's partial states, FILTERs checked on each cold row
                return Query(family, f"SELECT {g}, count(*), count({m}), min({m}), max({m}), sum({a}), avg({a}),"
                             f" bool_and(b), count(*) FILTER (WHERE {{p1}}), sum({a}) FILTER (WHERE {{p2}})"
                             f" FROM {{t}} WHERE {{p0}} GROUP BY {g}{having}", [p(), p(), p()], consts)
            # every row: count(*) from the lake's metadata, min and max read only where the bounds point
            m2 = r.choice(MINMAX_COLS)
            target = f"min({m}), max({m2}), max({m}), min({m2})" if r.random() < 0.7 else f"count(*), min({m}), sum({a})"
            return Query(family, f"SELECT {target} FROM {{t}}", [], consts)
        if family == "window":
            g = r.choice(GROUP_COLS)
            a = r.choice(AGG_NUMERIC)
            return Query(family, f"SELECT id, row_number() OVER w, sum({a}) OVER w, lag(s) OVER (ORDER BY id),"
                         f" count(*) OVER (PARTITION BY {g}), rank() OVER (PARTITION BY {g} ORDER BY {a}, id)"
                         f" FROM {{t}} WHERE {{p0}} WINDOW w AS (PARTITION BY {g} ORDER BY id)", [p()], consts)
        if family == "join":
            kind = r.random()
            if kind < 0.4:
                return Query(family, f"SELECT a.id, b.id, a.s, b.f8 FROM {{t}} a JOIN {{t}} b ON a.i4 = b.i4"
                             f" WHERE {{p0}} AND {{p1}}", [p("a."), p("b.")], consts)
            if kind < 0.7:
                return Query(family, f"SELECT a.id, b.id, b.n FROM {{t}} a LEFT JOIN {{t}} b ON b.id = a.id + 1"
                             f" AND {{p1}} WHERE {{p0}}", [p("a."), p("b.")], consts)
            return Query(family, "SELECT d.label, count(*), sum(t.i4), min(t.tz) FROM {t} t JOIN dim d ON d.k = t.i2"
                         " WHERE {p0} GROUP BY d.label", [p("t.")], consts)
        if family == "cte":
            return Query(family, f"WITH w AS (SELECT * FROM {{t}} WHERE {{p0}}), v AS (SELECT i2, count(*) c FROM w"
                         f" GROUP BY i2) SELECT count(*), min(w.id), max(w.ts), sum(v.c) FROM w JOIN v USING (i2)"
                         f" WHERE {{p1}}", [p(), p("w.")], consts)
        if family == "subquery":
            kind = r.random()
            if kind < 0.35:
                return Query(family, "SELECT id, s FROM {t} WHERE id IN (SELECT id + 1 FROM {t} WHERE {p0}) AND {p1}",
                             [p(), p()], consts)
            if kind < 0.7:
                return Query(family, "SELECT id, i2 FROM {t} x WHERE {p0} AND EXISTS (SELECT 1 FROM dim WHERE"
                             " dim.k = x.i2) AND NOT EXISTS (SELECT 1 FROM {t} y WHERE y.id = x.id - 1 AND {p1})",
                             [p("x."), p("y.")], consts)
            return Query(family, "SELECT (SELECT max(i8) FROM {t} WHERE {p0}), (SELECT count(*) FROM {t} WHERE {p1}),"
                         " (SELECT min(u::text) FROM {t} WHERE {p0})", [p(), p()], consts)
        if family == "distinct":
            g = r.sample(GROUP_COLS, r.randint(1, 2))
            return Query(family, f"SELECT DISTINCT {', '.join(g)} FROM {{t}} WHERE {{p0}}", [p()], consts)
        if family == "union":
            cols = self.cols(2)
            op = r.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT"])
            return Query(family, f"SELECT {cols} FROM {{t}} WHERE {{p0}} {op} SELECT {cols} FROM {{t}} WHERE {{p1}}",
                         [p(), p()], consts)
        raise ValueError(f"unknown query family {family!r} (known: {', '.join(FAMILIES)})")

    def queries(self, n: int, families: list) -> list:
        return [self.query(families[i % len(families)]) for i in range(n)]
