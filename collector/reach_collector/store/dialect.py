"""The few SQL spellings the two stores disagree on, so each query is written once (SPEC §16).

A query module writes its SQL in the subset DuckDB and ClickHouse (18.16 to current) share —
subqueries rather than CTEs, ``argMax``/``argMin``, ``max`` of a flag rather than ``bool_or``,
columns named rather than numbered in ``GROUP BY``/``ORDER BY``, equality joins (any inequality
after the join) whose right side is a bounded subquery, ``?`` placeholders — and asks its store's
dialect for the rest:

- percentiles as numpy's and DuckDB's linear interpolation (``quantile_cont``; ClickHouse has no
  interpolated quantile before 20.x, so it is computed from the group's sorted values);
- conditional counts that are 0, never NULL; integer division; a string read as a number;
- an attribute's string value, its JSON text and the keys of an attribute column (JSON text on
  DuckDB, key/value arrays beside it on ClickHouse);
- a group-by with a total row; named subqueries (``compose``: a ``WITH`` on DuckDB, inlined on
  ClickHouse, where 18.16 has no table CTEs).

Chosen over a transpiler (one that rewrites DuckDB SQL for ClickHouse) because what it writes
targets current ClickHouse — CTEs, window functions, ``GROUPING SETS`` — which 18.16 rejects, and
its percentiles are not the interpolated ones; the constructs here are few, and one test matrix
(tests/clickhouse) runs every query on DuckDB, 18.16 and current ClickHouse.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final, Protocol

__all__ = ["CLICKHOUSE", "DUCKDB", "Dialect", "dialect_of"]

# ClickHouse keeps each JSON attribute column's keys and string values in parallel arrays.
_CH_ARRAYS: Final = {"attributes": ("attr_keys", "attr_values"), "resource": ("res_keys", "res_values")}
_JSON_COLUMNS: Final = {"attributes": "attributes", "resource": "resource"}  # never user input in SQL


def _levels(levels: Sequence[float]) -> str:
    return "[" + ", ".join(repr(float(q)) for q in levels) + "]"


def json_path(key: str) -> str:
    """A DuckDB JSON path selecting one top-level key verbatim (attribute keys contain dots)."""
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


# A named subquery: (name, SQL that may name earlier ones as {name}, its own parameters in order).
Named = tuple[str, str, Sequence[Any]]
_REF: Final = re.compile(r"\{(\w+)\}")


def _segments(sql: str, params: Sequence[Any]) -> list[tuple[str, list[Any]]]:
    """``sql`` split at each ``{name}``: (literal text, the parameters its ``?`` take) and names."""
    out: list[tuple[str, list[Any]]] = []
    at = 0
    for i, piece in enumerate(_REF.split(sql)):
        if i % 2:
            out.append(("{" + piece + "}", []))
            continue
        n = piece.count("?")
        out.append((piece, list(params[at : at + n])))
        at += n
    if at != len(params):
        raise ValueError(f"{len(params)} parameters for {at} placeholders")
    return out


def _compose(defs: Sequence[Named], body: str, params: Sequence[Any], ctes: bool) -> tuple[str, list[Any]]:
    known: dict[str, tuple[str, list[Any]]] = {}

    def expand(sql: str, own: Sequence[Any]) -> tuple[str, list[Any]]:
        text, out = [], []
        for piece, piece_params in _segments(sql, own):
            if piece.startswith("{") and piece[1:-1] in known:
                ref_sql, ref_params = known[piece[1:-1]]
                text.append(piece[1:-1] if ctes else f"({ref_sql})")
                out += [] if ctes else ref_params
            else:
                text.append(piece)
                out += piece_params
        return "".join(text), out

    prefix, prefix_params = [], []
    for name, sql, own in defs:
        known[name] = expand(sql, own)
        if ctes:
            prefix.append(f"{name} AS ({known[name][0]})")
            prefix_params += known[name][1]
    main, main_params = expand(body, params)
    if ctes and prefix:
        return f"WITH {', '.join(prefix)} {main}", [*prefix_params, *main_params]
    return main, main_params


class Dialect(Protocol):
    name: str

    def compose(self, defs: Sequence[Named], body: str, params: Sequence[Any]) -> tuple[str, list[Any]]:
        """One query from named subqueries and a body that name them as ``{name}``: a ``WITH``
        (each computed once) where the store has CTEs, else each inlined where it is named."""
        ...

    def quantiles(self, expr: str, levels: Sequence[float]) -> str:
        """An array of ``expr``'s percentiles over the group (NULLs when the group is empty)."""
        ...

    def quantile(self, expr: str, level: float) -> str: ...

    def count_if(self, cond: str) -> str:
        """How many rows of the group ``cond`` holds for: 0, never NULL, when none does."""
        ...

    def int_div(self, a: str, b: str) -> str: ...

    def list_has(self, column: str) -> str:
        """Whether a list of strings holds the bound parameter (one ``?``)."""
        ...

    def attr(self, column: str, key: str) -> tuple[str, list[Any]]:
        """SQL for the string value of one top-level key of ``attributes`` or ``resource`` (NULL
        when absent; numbers and booleans as their JSON text), and its parameters."""
        ...

    def attr_json(self, column: str, key: str) -> tuple[str, list[Any]]:
        """SQL for one top-level key's value of ``attributes`` or ``resource`` as JSON text (a
        string with its quotes), NULL when absent, and its parameters."""
        ...

    def attr_keys(self, column: str) -> tuple[str, str]:
        """A set-returning expression giving one row per key of ``attributes`` or ``resource``,
        and the stored column it reads (for an inner SELECT)."""
        ...

    def float_or_zero(self, expr: str) -> str:
        """A string read as a float; 0 when it is not a number (or NULL)."""
        ...

    def grouped_with_total(self, column: str, aggregates: str, source: str) -> tuple[str, int]:
        """``SELECT column, is_total, aggregates FROM source`` per group of ``column`` plus one
        total row (is_total 1, column NULL); returns the SQL and how often ``source``'s
        parameters repeat in it."""
        ...


class _DuckDB:
    name = "duckdb"

    def compose(self, defs: Sequence[Named], body: str, params: Sequence[Any]) -> tuple[str, list[Any]]:
        return _compose(defs, body, params, ctes=True)

    def quantiles(self, expr: str, levels: Sequence[float]) -> str:
        return f"quantile_cont({expr}, {_levels(levels)})"

    def quantile(self, expr: str, level: float) -> str:
        return f"quantile_cont({expr}, {float(level)!r})"

    def count_if(self, cond: str) -> str:
        return f"count(*) FILTER (WHERE {cond})"  # count_if gives NULL when every cond is NULL

    def int_div(self, a: str, b: str) -> str:
        return f"(({a}) // ({b}))"

    def list_has(self, column: str) -> str:
        return f"list_contains({column}, ?)"

    def attr(self, column: str, key: str) -> tuple[str, list[Any]]:
        return f"json_extract_string({_JSON_COLUMNS[column]}, ?)", [json_path(key)]

    def attr_json(self, column: str, key: str) -> tuple[str, list[Any]]:
        # a JSON null is no value, as on ClickHouse (whose key/value arrays leave such keys out)
        sql, params = self.attr(column, key)
        text = sql.replace("json_extract_string(", "CAST(json_extract(", 1) + " AS VARCHAR)"
        return f"nullif({text}, 'null')", params

    def attr_keys(self, column: str) -> tuple[str, str]:
        return f"unnest(json_keys({_JSON_COLUMNS[column]}))", _JSON_COLUMNS[column]

    def float_or_zero(self, expr: str) -> str:
        return f"coalesce(TRY_CAST({expr} AS DOUBLE), 0)"

    def grouped_with_total(self, column: str, aggregates: str, source: str) -> tuple[str, int]:
        sql = (
            f"SELECT {column}, GROUPING({column}) AS is_total, {aggregates} FROM {source} "
            f"GROUP BY GROUPING SETS (({column}), ())"
        )
        return sql, 1


class _ClickHouse:
    name = "clickhouse"

    def compose(self, defs: Sequence[Named], body: str, params: Sequence[Any]) -> tuple[str, list[Any]]:
        return _compose(defs, body, params, ctes=False)  # 18.16 has no table CTEs

    def quantiles(self, expr: str, levels: Sequence[float]) -> str:
        # numpy's linear interpolation over the group's sorted values, written out per level (18.16
        # cannot take an aggregate inside a lambda); the server computes the repeated sort once
        s = f"arraySort(groupArray(toFloat64({expr})))"
        n = f"length({s})"
        out = []
        for q in levels:
            h = f"({n} - 1) * {float(q)!r}"
            lo = f"toUInt64(floor({h}))"
            at = f"{s}[{lo} + 1]"
            nxt = f"{s}[least({lo} + 2, {n})]"
            out.append(f"if({n} = 0, NULL, {at} + ({h} - floor({h})) * ({nxt} - {at}))")
        return "[" + ", ".join(out) + "]"

    def quantile(self, expr: str, level: float) -> str:
        return f"({self.quantiles(expr, [level])})[1]"

    def count_if(self, cond: str) -> str:
        return f"countIf(ifNull({cond}, 0))"  # 18.16's countIf over a Nullable condition can be NULL

    def int_div(self, a: str, b: str) -> str:
        return f"intDiv({a}, {b})"

    def list_has(self, column: str) -> str:
        return f"has({column}, ?)"

    def attr(self, column: str, key: str) -> tuple[str, list[Any]]:
        keys, values = _CH_ARRAYS[column]
        return f"if(has({keys}, ?), {values}[indexOf({keys}, ?)], NULL)", [key, key]

    def attr_json(self, column: str, key: str) -> tuple[str, list[Any]]:
        # the stored JSON text's value, found by key name (visitParam reads the first "key": in
        # the text; attribute objects are flat, so that is the top-level key unless an earlier
        # value nests an object with the same key)
        keys, _ = _CH_ARRAYS[column]
        raw = f"replaceRegexpOne(visitParamExtractRaw({_JSON_COLUMNS[column]}, ?), '^[[:space:]]+', '')"
        return f"if(has({keys}, ?), {raw}, NULL)", [key, key]

    def attr_keys(self, column: str) -> tuple[str, str]:
        keys = _CH_ARRAYS[column][0]
        return f"arrayJoin({keys})", keys

    def float_or_zero(self, expr: str) -> str:
        return f"toFloat64OrZero(ifNull({expr}, ''))"

    def grouped_with_total(self, column: str, aggregates: str, source: str) -> tuple[str, int]:
        sql = (
            f"SELECT {column}, 0 AS is_total, {aggregates} FROM {source} GROUP BY {column} "
            f"UNION ALL SELECT CAST(NULL AS Nullable(String)), 1 AS is_total, {aggregates} FROM {source}"
        )
        return sql, 2


DUCKDB: Final[Dialect] = _DuckDB()
CLICKHOUSE: Final[Dialect] = _ClickHouse()
_BY_NAME: Final = {d.name: d for d in (DUCKDB, CLICKHOUSE)}


def dialect_of(store: object) -> Dialect:
    """The dialect a store's ``query`` takes (its ``dialect`` attribute; DuckDB when it has none)."""
    return _BY_NAME[getattr(store, "dialect", "duckdb")]
