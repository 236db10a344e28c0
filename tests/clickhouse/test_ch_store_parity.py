"""ClickHouseStore answers what DuckDBStore answers for the same spans — trace by id, the search
with every filter, the last heartbeats — on Debian's 18.16 server and on current ClickHouse
(chdb, in process): one schema and one set of queries for both."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ch_collectors import ENGINES, engine_store
from ch_spans import make_request

from reach_collector.ingest.decode import PROTOBUF, parse
from reach_collector.ingest.rows import flatten
from reach_collector.query.heartbeats import last_posted
from reach_collector.store.base import TraceFilter
from reach_collector.store.clickhouse import ClickHouseStore
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

NOW_NS = time.time_ns()


@pytest.fixture(params=ENGINES)
def stores(
    request: pytest.FixtureRequest, tmp_path: Path, ch_database: str
) -> Iterator[tuple[DuckDBStore, ClickHouseStore, list[str]]]:
    ch = engine_store(request, tmp_path, ch_database)
    duck = DuckDBStore(tmp_path / "traces.duckdb")
    ids: list[str] = []
    for seed, exotic in ((1, False), (2, True), (3, False)):
        body, trace_ids = make_request(NOW_NS, traces=10, seed=seed, exotic=exotic)
        batch = flatten(parse(body, PROTOBUF))
        duck.write(batch.table, batch.parts)
        ch.write(batch.table, batch.parts)
        ids += trace_ids
    yield duck, ch, ids
    ch.close()
    duck.close()


def _same(got: Any, want: Any, where: str) -> None:
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), where
        for key in want:
            _same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]")
    else:
        assert got == want and type(got) is type(want), f"{where}: {got!r} != {want!r}"


def _summaries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "agents": sorted(r["agents"]), "services": sorted(r["services"])} for r in rows]


def test_trace_by_id(stores: tuple[DuckDBStore, ClickHouseStore, list[str]]) -> None:
    duck, ch, ids = stores
    for tid in ids:
        want = list(duck.trace_spans(tid) or [])
        assert want, tid
        _same(list(ch.trace_spans(tid) or []), want, tid)
    assert ch.trace_spans("ab" * 16) is None


FILTERS = [
    TraceFilter(),
    TraceFilter(limit=3),
    TraceFilter(limit=1000),
    TraceFilter(service="billing-svc"),
    TraceFilter(service="nobody"),
    TraceFilter(agent="BillingAgent"),
    TraceFilter(agent="RefundAgent", errors_only=True),
    TraceFilter(errors_only=True, limit=50),
    TraceFilter(since_ns=NOW_NS - 600 * 10**9),
    TraceFilter(until_ns=NOW_NS - 600 * 10**9, limit=50),
    TraceFilter(since_ns=NOW_NS - 900 * 10**9, until_ns=NOW_NS - 300 * 10**9, limit=50),
    TraceFilter(min_duration_ms=905.0, limit=50),
    TraceFilter(min_duration_ms=1e9),
    TraceFilter(attributes=(("app.tier", "gold"),), limit=50),
    TraceFilter(attributes=(("app.retries", "2"),), limit=50),
    TraceFilter(attributes=(("app.sampled", "true"),), limit=50),
    TraceFilter(attributes=(("gen_ai.request.temperature", "1e21"),), limit=50),
    TraceFilter(attributes=(("gen_ai.request.temperature", "1.5e-7"),), limit=50),
    TraceFilter(attributes=(("gen_ai.request.temperature", "0.30000000000000004"),), limit=50),
    TraceFilter(attributes=(("app.tags", '["a","q\\"uote","ctl\\u0001"]'),), limit=50),
    TraceFilter(attributes=(("app.mixed", '[1,2.5,true,"s"]'),), limit=50),
    TraceFilter(attributes=(("app.nested", '{"k":[1,2.5e-9,true],"s":"x"}'),), limit=50),
    TraceFilter(attributes=(("app.blob", "AAE="),), limit=50),
    TraceFilter(attributes=((sc.GEN_AI_CONVERSATION_ID, "conv-2"), ("app.tier", "silver")), limit=50),
    TraceFilter(
        service="support-app",
        agent="TriageAgent",
        since_ns=NOW_NS - 1100 * 10**9,
        min_duration_ms=900.0,
        attributes=((sc.GEN_AI_OPERATION_NAME, sc.OP_HANDOFF),),
        limit=5,
    ),
]


@pytest.mark.parametrize("f", FILTERS, ids=[str(i) for i in range(len(FILTERS))])
def test_search(stores: tuple[DuckDBStore, ClickHouseStore, list[str]], f: TraceFilter) -> None:
    duck, ch, _ = stores
    want = _summaries(duck.search(f))
    _same(_summaries(ch.search(f)), want, "search")
    if f.attributes and f.attributes[0][0].startswith(("app.", "gen_ai.request")):
        assert want, "the filter matches some trace (else it checks nothing)"


def test_heartbeats(stores: tuple[DuckDBStore, ClickHouseStore, list[str]]) -> None:
    duck, ch, _ = stores
    rows = [
        ("agent-a", NOW_NS - 30 * 10**9, "svc-a", "http://a", '["x"]', None),
        ("agent-a", NOW_NS - 10 * 10**9, "svc-a2", "http://a", '["x"]', "stopped"),
        ("agent-b", NOW_NS - 5 * 10**9, "svc-b", None, None, "live"),
        ("agent-c", NOW_NS - 500 * 10**9, "svc-c", None, None, None),
    ]
    for store in (duck, ch):
        store.append("heartbeats", rows)
    assert last_posted(ch, NOW_NS, 60) == last_posted(duck, NOW_NS, 60)
    assert set(last_posted(ch, NOW_NS, 60)) == {"agent-a", "agent-b"}


def test_query_binds_parameters(stores: tuple[DuckDBStore, ClickHouseStore, list[str]]) -> None:
    _, ch, ids = stores
    sql = "SELECT count(), min(name) FROM spans WHERE trace_id = ? AND name != '?' AND start_ns > ?"
    ((count, _),) = ch.query(sql, [ids[0], 0])
    assert count > 0
    assert ch.query("SELECT ?, ?, ?, ?", ["it's \\ a \n test", -5, 2.5, None]) == [
        ("it's \\ a \n test", -5, 2.5, None)
    ]


def test_a_batch_over_many_hours(stores: tuple[DuckDBStore, ClickHouseStore, list[str]]) -> None:
    """Current ClickHouse refuses an insert block over more than 100 partitions (a setting 18.16
    does not know): a batch whose spans start in 150 different hours still goes in, whole."""
    import pyarrow as pa

    duck, ch, _ = stores
    tables, ids = [], []
    for hour in range(150):
        body, trace_ids = make_request(NOW_NS - (hour + 2) * 3600 * 10**9, traces=1, seed=900 + hour)
        tables.append(flatten(parse(body, PROTOBUF)))
        ids += trace_ids
    table = pa.concat_tables([b.table for b in tables]).combine_chunks()
    parts = pa.concat_tables([b.parts for b in tables]).combine_chunks()
    ch.write(table, parts)
    duck.write(table, parts)
    for tid in ids[::10]:
        _same(list(ch.trace_spans(tid) or []), list(duck.trace_spans(tid) or []), tid)
    assert ch.count_spans() == duck.count_spans()
