"""The parity suite's query half (SPEC §16): the same spans written to DuckDB and to ClickHouse —
a real 18.16 server, and current ClickHouse in process (chdb) — give the same answer from every
query module: golden metrics by every ``by``, timeseries of every metric, the multi-agent metrics
(handoff outcomes, hops, loops, tokens with the ancestor walk), the alert rules' window stats and
heartbeats. Floats compare to 1e-9.

The spans: the multi-agent metrics tests' scenario (every handoff outcome, a ping-pong loop, LLM
spans without an agent name, a long request) and realistic OTLP traffic decoded by the
collector's own decoder."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from ch_server import ClickHouseServer
from fastapi import FastAPI

from reach_collector.alerting.evaluation.engine import build_engine
from reach_collector.alerting.inputs.store_data import StoreAlertData
from reach_collector.api.tempo import tempo_router
from reach_collector.config import Settings
from reach_collector.ingest.decode import PROTOBUF
from reach_collector.ingest.fast import flatten_body
from reach_collector.query import heartbeats, metrics, topology
from reach_collector.query.heartbeats import last_posted
from reach_collector.store.base import TraceFilter, TraceStore
from reach_collector.store.clickhouse.store import ClickHouseStore
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "metrics"))
sys.path.insert(0, str(ROOT / "bench"))
from _spans import make_request  # noqa: E402
from metrics_helpers import NOW_NS, new_span_id, new_trace_id, span, table, write  # noqa: E402
from test_agent_metrics import PRICES, _scenario  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "collector"))
from servers import ServerThread  # noqa: E402

S = 1_000_000_000


def _heartbeats() -> list[dict[str, Any]]:
    rows = []
    for i, agent in enumerate(("triage", "billing", "billing")):
        rows.append(
            span(
                new_trace_id(),
                operation=None,
                name=sc.HEARTBEAT_SPAN_NAME,
                end_ns=NOW_NS - (30 + 20 * i) * S,
                attributes={sc.GEN_AI_AGENT_ID: agent},
                service="desk",
            )
        )
    return rows


def _spenders() -> list[dict[str, Any]]:
    """LLM spans with a user and a conversation (budgets per user and per conversation), and a
    handoff from a new release (drift names its service.version)."""
    rows = []
    for i in range(12):
        rows.append(
            span(
                new_trace_id(),
                operation=sc.OP_CHAT,
                end_ns=NOW_NS - (20 + 40 * i) * S,
                attributes={sc.USER_ID: f"user-{i % 3}"},
                agent="Spender",
                model="gpt-4o-mini" if i % 4 else "unpriced-model",
                input_tokens=4000 + 100 * i,
                output_tokens=900,
                conversation_id=f"conv-{i % 2}",
                service="desk",
            )
        )
    handoff = span(
        new_trace_id(),
        operation=sc.OP_HANDOFF,
        end_ns=NOW_NS - 45 * S,
        agent="Spender",
        handoff_source="Spender",
        handoff_target="Auditor",
        handoff_status="committed",
        service="desk",
    )
    handoff["resource"] = '{"service.name":"desk","service.version":"2.4.0"}'
    return [*rows, handoff]


def _batches() -> list[pa.Table]:
    traces, _ = _scenario()
    rows = [r for t in traces for r in t.finish()] + _heartbeats() + _spenders()
    rows.sort(key=lambda r: r["end_ns"])
    out = [table(rows[: len(rows) // 2]), table(rows[len(rows) // 2 :])]
    import random

    rng = random.Random(7)
    for i in range(3):  # realistic traffic ending in the last ten minutes
        body = make_request(rng, 400, NOW_NS - (600 - 150 * i) * S).SerializeToString()
        out.append(flatten_body(body, PROTOBUF).table)
    return out


@pytest.fixture(scope="module")
def batches() -> list[pa.Table]:
    return _batches()


def _fill(store: TraceStore, batches: list[pa.Table]) -> TraceStore:
    for batch in batches:
        write(store, batch)  # type: ignore[arg-type]
    return store


@pytest.fixture(scope="module")
def duck(batches: list[pa.Table], tmp_path_factory: pytest.TempPathFactory) -> Iterator[TraceStore]:
    store = DuckDBStore(tmp_path_factory.mktemp("parity") / "traces.duckdb")
    yield _fill(store, batches)
    store.close()


@pytest.fixture(scope="module")
def server_store(clickhouse: ClickHouseServer, batches: list[pa.Table]) -> Iterator[TraceStore]:
    store = ClickHouseStore(clickhouse.url("reach_parity"))
    yield _fill(store, batches)
    store.close()


@pytest.fixture(scope="module")
def chdb_store(batches: list[pa.Table], tmp_path_factory: pytest.TempPathFactory) -> Iterator[TraceStore]:
    store = ClickHouseStore.in_process(tmp_path_factory.mktemp("parity-chdb"))
    yield _fill(store, batches)
    store.close()


@pytest.fixture(params=["clickhouse-18.16", "chdb"])
def other(request: pytest.FixtureRequest) -> TraceStore:
    return request.getfixturevalue("server_store" if request.param == "clickhouse-18.16" else "chdb_store")


def same(a: Any, b: Any, path: str = "$") -> None:
    """Equal JSON values, floats to 1e-9 (relative or absolute)."""
    if isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None, f"{path}: {a!r} != {b!r}"
        assert math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


Call = Callable[[TraceStore], Any]
CALLS: dict[str, Call] = {}
for _by in metrics.BY_VALUES:
    for _window in (300, 3600):
        CALLS[f"golden by={_by} window={_window}"] = lambda s, by=_by, w=_window: metrics.golden(
            s, NOW_NS, w, by
        )
for _metric in metrics.SERIES_METRICS:
    CALLS[f"timeseries {_metric} by=agent"] = lambda s, m=_metric: metrics.timeseries(
        s, NOW_NS, NOW_NS - 900 * S, 60, m, "agent"
    )
for _by in metrics.BY_VALUES:
    CALLS[f"timeseries p95 by={_by}"] = lambda s, by=_by: metrics.timeseries(
        s, NOW_NS, NOW_NS - 3600 * S, 300, "p95", by
    )
CALLS["agents 300s"] = lambda s: metrics.agents(s, NOW_NS, 300, PRICES)
CALLS["agents 1h"] = lambda s: metrics.agents(s, NOW_NS, 3600, PRICES)
CALLS["agents empty window"] = lambda s: metrics.agents(s, NOW_NS - 30 * 86400 * S, 300, PRICES)
CALLS["agent_window_stats"] = lambda s: metrics.agent_window_stats(s, NOW_NS, 300)
CALLS["last_heartbeats"] = lambda s: heartbeats.last_heartbeats(s, NOW_NS)
CALLS["trace_lookback"] = lambda s: metrics.trace_lookback(s, NOW_NS - 300 * S, NOW_NS)
for _window in (300, 3600):
    CALLS[f"topology {_window}s"] = lambda s, w=_window: topology.topology(s, NOW_NS, w, PRICES)
CALLS["topology service=desk"] = lambda s: topology.topology(s, NOW_NS, 3600, PRICES, service="desk")
CALLS["edge_window_stats"] = lambda s: topology.edge_window_stats(s, NOW_NS, (60.0, 300.0, 3600.0))
CALLS["edge_counts by minute"] = lambda s: sorted(
    topology.edge_counts(s, NOW_NS - 3600 * S, NOW_NS, by_minute=True, cuts=[NOW_NS - 300 * S]), key=repr
)
CALLS["edge_handoffs"] = lambda s: sorted(topology.edge_handoffs(s, NOW_NS - 3600 * S, NOW_NS), key=repr)
for _per in topology.PER:
    CALLS[f"spend_rows per {_per}"] = lambda s, p=_per: sorted(
        topology.spend_rows(s, NOW_NS - 3600 * S, NOW_NS, p, by_minute=True), key=repr
    )
    CALLS[f"spend per {_per}"] = lambda s, p=_per: topology.spend(s, NOW_NS - 3600 * S, NOW_NS, p, PRICES)
CALLS["edges_seen first"] = lambda s: topology.edges_seen(s, NOW_NS - 3600 * S, NOW_NS, first=True)
CALLS["edges_seen"] = lambda s: topology.edges_seen(s, NOW_NS - 3600 * S, NOW_NS)


@pytest.mark.parametrize("name", list(CALLS))
def test_same_answer_on_both_stores(name: str, duck: TraceStore, other: TraceStore) -> None:
    expected = CALLS[name](duck)
    same(CALLS[name](other), expected)


# --- the Tempo API over real HTTP, and alert replay ------------------------------------------------
def _tempo(store: TraceStore) -> ServerThread:
    app = FastAPI()
    app.include_router(tempo_router(store, clock=lambda: NOW_NS / S))
    return ServerThread(app).start()


def _tempo_paths(duck: TraceStore) -> list[str]:
    traces = [t["trace_id"] for t in duck.search(TraceFilter(limit=5, since_ns=NOW_NS - 3600 * S))]
    window = f"start={NOW_NS // S - 3600}&end={NOW_NS // S}"
    paths = [
        f"/tempo/api/search?{window}&limit=20",
        f"/tempo/api/search?{window}&tags=service.name%3Dsupport-app&limit=20",
        f"/tempo/api/search?{window}&minDuration=300ms&limit=20",
        f"/tempo/api/search?{window}&q=%7B%20.gen_ai.agent.name%20%3D%20%22TriageAgent%22%20%7D&limit=20",
        f"/tempo/api/search/tags?{window}",
        f"/tempo/api/v2/search/tags?{window}",
        f"/tempo/api/search/tag/service.name/values?{window}",
        f"/tempo/api/v2/search/tag/span.gen_ai.agent.name/values?{window}",
        f"/tempo/api/v2/search/tag/span.gen_ai.usage.input_tokens/values?{window}",
        f"/tempo/api/v2/search/tag/resource.service.name/values?{window}",
    ]
    return paths + [f"/tempo/api/traces/{t}" for t in traces] + [f"/tempo/api/v2/traces/{t}" for t in traces]


def test_tempo_api_same_json(duck: TraceStore, other: TraceStore) -> None:
    a, b = _tempo(duck), _tempo(other)
    try:
        paths = _tempo_paths(duck)
        assert len(paths) > 12
        for path in paths:
            want, got = httpx.get(a.url + path, timeout=30), httpx.get(b.url + path, timeout=30)
            assert (got.status_code, path) == (want.status_code, path)
            assert want.status_code == 200, (path, want.text)
            same(got.json(), want.json(), path)
    finally:
        a.stop()
        b.stop()


REPLAY_RULES: dict[str, Any] = {
    "ReachSuccessRateLow": {"for": "0s", "min_calls": 2},
    "EdgeCommitSLO": {
        "type": "edge_slo",
        "objective": 0.99,
        "windows": [{"long": "10m", "short": "1m", "factor": 1}],
        "min_handoffs": 1,
    },
    "AgentBudget": {
        "type": "budget",
        "per": "agent",
        "limit_usd": 0.002,
        "window": "1h",
        "min_elapsed": "1m",
    },
    "UserBudget": {"type": "budget", "per": "user", "limit_usd": 0.001, "window": "1h", "warn": False},
    "ConversationTokens": {"type": "budget", "per": "conversation", "limit_tokens": 20_000, "window": "1h"},
    "ReachTopologyChanged": {"type": "topology_drift", "baseline": "1h", "window": "10m"},
}


def _replay(store: TraceStore) -> dict[str, Any]:
    alerting = {"interval": "15s", "rules": REPLAY_RULES}
    settings = Settings(sections={"alerting": alerting}, prices=PRICES)
    data = StoreAlertData(store, api_heartbeats=partial(last_posted, store), prices=PRICES)
    engine = build_engine(settings, data, clock=lambda: NOW_NS / S)
    return engine.replay(NOW_NS / S - 900, NOW_NS / S, 15).to_dict()


def test_alert_replay_same_transitions(duck: TraceStore, other: TraceStore) -> None:
    want = _replay(duck)
    fired = {t["alertname"] for t in want["transitions"]}
    assert fired >= {"EdgeCommitSLO", "AgentBudget", "UserBudget", "ReachTopologyChanged"}, fired
    assert not want["errors"], want["errors"]
    same(_replay(other), want)


def test_the_scenario_is_not_empty(duck: TraceStore) -> None:
    """The comparisons above compare something: calls, handoffs, loops and walked tokens."""
    golden = metrics.golden(duck, NOW_NS, 300, "agent")
    assert golden["total"]["calls"] > 100
    agents = metrics.agents(duck, NOW_NS, 300, PRICES)
    assert agents["handoffs"]["total"] >= 13 and agents["loops"]["traces_with_loop"] >= 1
    assert any(a["agent"] == "C" and a["input_tokens"] >= 300 for a in agents["agents"])  # walked
    assert heartbeats.last_heartbeats(duck, NOW_NS)
    _ = new_span_id  # the helpers' ids keep counting across modules
