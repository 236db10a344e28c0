"""The dialect layer's constructs give the same answers on DuckDB, on Debian's ClickHouse 18.16 (a
real server) and on current ClickHouse (chdb, in process): percentiles as numpy's linear
interpolation, a group-by with its total, integer division, and attribute lookups."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import duckdb
import numpy as np
import pytest
from ch_server import ClickHouseServer

from reach_collector.store.dialect import CLICKHOUSE, DUCKDB, Dialect

Query = Callable[[str, list[Any]], list[tuple[Any, ...]]]

# (group, duration, attributes): groups of 1, 2, 7 and 40 values, one NULL group
ROWS = [("a", 5.0, {"k": "x", "n": 3})]
ROWS += [("b", v, {"k": "y", "flag": True}) for v in (1.0, 9.0)]
ROWS += [("c", float(v * v % 17), {"n": 1.5, "k": "x"}) for v in range(7)]
ROWS += [(None, float(v % 13) / 3, {}) for v in range(40)]
LEVELS = (0.5, 0.95, 0.99)


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


def _bind(sql: str, params: list[Any]) -> str:
    parts = sql.split("?")
    assert len(parts) == len(params) + 1
    return "".join(
        p + (_literal(v) if i < len(params) else "")
        for i, (p, v) in enumerate(zip(parts, [*params, None], strict=True))
    )


def _ch_rows() -> str:
    def kv(attrs: dict[str, Any]) -> tuple[str, str]:
        keys = [k for k in attrs]
        values = [v if isinstance(v, str) else json.dumps(v) for v in attrs.values()]
        return _literal(json.dumps(attrs, separators=(",", ":"))), (
            "[" + ", ".join(map(_literal, keys)) + "], [" + ", ".join(map(_literal, values)) + "]"
        )

    out = []
    for g, x, attrs in ROWS:
        text, arrays = kv(attrs)
        out.append(f"({_literal(g) if g is not None else 'NULL'}, {x!r}, {text}, {arrays})")
    return ", ".join(out)


def _ch_tuples() -> list[tuple[Any, ...]]:
    """The rows for clickhouse-driver (which sends INSERT data apart from the statement)."""
    return [
        (
            g,
            x,
            json.dumps(a, separators=(",", ":")),
            list(a),
            [v if isinstance(v, str) else json.dumps(v) for v in a.values()],
        )
        for g, x, a in ROWS
    ]


_CH_DDL = (
    "CREATE TABLE spans (agent Nullable(String), duration_ms Float64, attributes String, "
    "attr_keys Array(String), attr_values Array(String)) ENGINE = {engine}"
)


@pytest.fixture(scope="module")
def duck() -> Iterator[Query]:
    con = duckdb.connect()
    con.execute("CREATE TABLE spans (agent VARCHAR, duration_ms DOUBLE, attributes VARCHAR)")
    con.executemany("INSERT INTO spans VALUES (?, ?, ?)", [(g, x, json.dumps(a)) for g, x, a in ROWS])
    yield lambda sql, params: con.execute(sql, params).fetchall()
    con.close()


@pytest.fixture(scope="module")
def server_1816(clickhouse: ClickHouseServer) -> Query:
    db = "reach_dialect"
    clickhouse.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    clickhouse.execute(f"DROP TABLE IF EXISTS {db}.spans")
    clickhouse.execute(_CH_DDL.format(engine="MergeTree ORDER BY duration_ms"), database=db)
    clickhouse.execute("INSERT INTO spans VALUES", _ch_tuples(), database=db)
    return lambda sql, params: [tuple(r) for r in clickhouse.execute(_bind(sql, params), database=db)]


@pytest.fixture(scope="module")
def chdb_current() -> Iterator[Query]:
    from chdb import session

    s = session.Session()
    s.query("CREATE DATABASE IF NOT EXISTS d")
    s.query(_CH_DDL.format(engine="MergeTree ORDER BY duration_ms").replace("TABLE spans", "TABLE d.spans"))
    s.query(f"INSERT INTO d.spans VALUES {_ch_rows()}")

    def run(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        text = s.query(_bind(sql, params).replace("FROM spans", "FROM d.spans"), "JSONCompact").data()
        return [tuple(r) for r in json.loads(text)["data"]] if text.strip() else []

    yield run
    s.close()


@pytest.fixture(params=["duckdb", "clickhouse-18.16", "chdb"])
def engine(request: pytest.FixtureRequest) -> tuple[Dialect, Query]:
    if request.param == "duckdb":
        return DUCKDB, request.getfixturevalue("duck")
    if request.param == "chdb":
        return CLICKHOUSE, request.getfixturevalue("chdb_current")
    return CLICKHOUSE, request.getfixturevalue("server_1816")


def _expected_quantiles() -> dict[Any, list[float]]:
    groups: dict[Any, list[float]] = {}
    for g, x, _ in ROWS:
        groups.setdefault(g, []).append(x)
    return {g: [float(np.percentile(v, q * 100)) for q in LEVELS] for g, v in groups.items()}


def _close(a: Any, b: Any) -> bool:
    return all(
        math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-9) for x, y in zip(a, b, strict=True)
    )


def test_percentiles_per_group_and_total_match_numpy(engine: tuple[Dialect, Query]) -> None:
    d, run = engine
    sql, repeat = d.grouped_with_total(
        "agent", f"count(*), {d.quantiles('duration_ms', LEVELS)}", "spans WHERE duration_ms >= ?"
    )
    rows = run(sql, [0.0] * repeat)
    expected = _expected_quantiles()
    by_group = {(r[0], int(r[1])): r for r in rows}
    assert len(rows) == len(expected) + 1
    for g, qs in expected.items():
        row = by_group[(g, 0)]
        assert int(row[2]) == sum(1 for r in ROWS if r[0] == g)
        assert _close(row[3], qs), (g, row[3], qs)
    total = by_group[(None, 1)]
    everything = [x for _, x, _ in ROWS]
    assert int(total[2]) == len(ROWS)
    assert _close(total[3], [float(np.percentile(everything, q * 100)) for q in LEVELS])


def test_empty_total_has_null_percentiles(engine: tuple[Dialect, Query]) -> None:
    d, run = engine
    sql, repeat = d.grouped_with_total(
        "agent", f"count(*), {d.quantiles('duration_ms', LEVELS)}", "spans WHERE duration_ms < ?"
    )
    rows = run(sql, [-1.0] * repeat)
    assert [(r[0], int(r[1]), int(r[2])) for r in rows] == [(None, 1, 0)]
    assert rows[0][3] is None or list(rows[0][3]) == [None, None, None]


def test_one_quantile_and_integer_division(engine: tuple[Dialect, Query]) -> None:
    d, run = engine
    rows = run(
        f"SELECT {d.quantile('duration_ms', 0.99)}, {d.int_div('count(*) * 7 - ?', '?')} FROM spans "
        "WHERE agent = ?",
        [1, 2, "c"],
    )
    c = [x for g, x, _ in ROWS if g == "c"]
    assert _close([rows[0][0]], [np.percentile(c, 99)])
    assert int(rows[0][1]) == (len(c) * 7 - 1) // 2


def test_attribute_lookups(engine: tuple[Dialect, Query]) -> None:
    d, run = engine
    value, params = d.attr("attributes", "k")
    got = run(f"SELECT v, count(*) FROM (SELECT {value} AS v FROM spans) GROUP BY v ORDER BY v", params)
    assert sorted(got, key=lambda r: (r[0] is None, r[0] or "")) == [("x", 8), ("y", 2), (None, 40)]
    number, params = d.attr("attributes", "n")
    got = run(f"SELECT DISTINCT v FROM (SELECT {number} AS v FROM spans) WHERE v IS NOT NULL", params)
    assert sorted(r[0] for r in got) == ["1.5", "3"]
    raw, params = d.attr_json("attributes", "k")
    got = run(f"SELECT DISTINCT v FROM (SELECT {raw} AS v FROM spans) WHERE v IS NOT NULL", params)
    assert sorted(r[0] for r in got) == ['"x"', '"y"']
    raw, params = d.attr_json("attributes", "flag")
    got = run(f"SELECT DISTINCT v FROM (SELECT {raw} AS v FROM spans) WHERE v IS NOT NULL", params)
    assert [r[0] for r in got] == ["true"]
    each, stored = d.attr_keys("attributes")
    got = run(f"SELECT DISTINCT k FROM (SELECT {each} AS k FROM (SELECT {stored} FROM spans))", [])
    assert sorted(r[0] for r in got) == ["flag", "k", "n"]


def test_count_if_is_zero_never_null(engine: tuple[Dialect, Query]) -> None:
    """A condition NULL on every row (a Nullable column) counts 0 on both stores, as a plain
    ``countIf``/``count_if`` would not (NULL on DuckDB, and on 18.16 over Nullable)."""
    d, run = engine
    rows = run(
        f"SELECT {d.count_if('agent = ?')}, {d.count_if('agent IS NULL')}, count(*) FROM spans"
        " WHERE agent IS NULL",
        ["a"],
    )
    assert [tuple(int(v) for v in r) for r in rows] == [(0, 40, 40)]
