"""The same OTLP spans posted over real HTTP to a DuckDB collector and to a ClickHouse collector
(18.16, and current ClickHouse through chdb) give the same JSON for trace by id and for the
search with every filter (floats to 1e-9)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from ch_collectors import InProcessCollector, start_in_process
from ch_server import ClickHouseServer
from ch_spans import make_request

from reach_collector.store.clickhouse import ClickHouseStore
from reach_collector.store.duckdb_store import DuckDBStore

NOW_NS = time.time_ns()


@pytest.fixture(scope="module", params=["clickhouse-18.16", "chdb"])
def pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[InProcessCollector, InProcessCollector, list[str]]]:
    tmp = tmp_path_factory.mktemp("parity")
    if request.param == "chdb":
        pytest.importorskip("chdb")
        ch_store = ClickHouseStore.in_process(tmp / "chdb")
        db = "clickhouse://localhost/reach"
    else:
        server: ClickHouseServer = request.getfixturevalue("clickhouse")
        db = server.url(f"reach_parity_{int(time.time())}")
        ch_store = ClickHouseStore(db)
    duck = start_in_process(DuckDBStore(tmp / "traces.duckdb"), str(tmp / "traces.duckdb"))
    ch = start_in_process(ch_store, db)
    ids: list[str] = []
    try:
        for seed, exotic in ((21, False), (22, True), (23, False)):
            body, trace_ids = make_request(NOW_NS, traces=10, seed=seed, exotic=exotic)
            for collector in (duck, ch):
                response = collector.post(body)
                assert response.status_code == 200, response.text
            ids += trace_ids
        yield duck, ch, ids
    finally:
        ch.close()
        duck.close()


def _same(got: Any, want: Any, where: str) -> None:
    if isinstance(want, float):
        assert isinstance(got, (int, float)) and got == pytest.approx(want, rel=1e-9, abs=1e-9), where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{where}: keys {set(got) ^ set(want)}"
        for key in want:
            _same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("tree", [None, "false"])
def test_trace_by_id(
    pair: tuple[InProcessCollector, InProcessCollector, list[str]], tree: str | None
) -> None:
    duck, ch, ids = pair
    params = {"tree": tree} if tree else {}
    for tid in ids:
        want = duck.get(f"/api/traces/{tid}", **params)
        got = ch.get(f"/api/traces/{tid}", **params)
        assert want.status_code == got.status_code == 200
        assert want.json()["span_count"] > 0
        _same(got.json(), want.json(), tid)
    missing = "0123456789abcdef" * 2
    assert (
        duck.get(f"/api/traces/{missing}").status_code == ch.get(f"/api/traces/{missing}").status_code == 404
    )


SEARCHES: list[dict[str, str]] = [
    {},
    {"limit": "3"},
    {"limit": "1000"},
    {"service": "billing-svc"},
    {"agent": "BillingAgent"},
    {"status": "error"},
    {"status": "error", "agent": "RefundAgent"},
    {"since": "10m"},
    {"since": str(NOW_NS - 900 * 10**9), "until": str(NOW_NS - 300 * 10**9), "limit": "100"},
    {"until": "10m", "limit": "100"},
    {"min_duration_ms": "905", "limit": "100"},
    {"attr.app.tier": "gold", "limit": "100"},
    {"attr.app.retries": "1", "limit": "100"},
    {"attr.app.sampled": "false", "limit": "100"},
    {"attr.gen_ai.request.temperature": "1e21", "limit": "100"},
    {"attr.app.tags": '["a","q\\"uote","ctl\\u0001"]', "limit": "100"},
    {"attr.gen_ai.conversation.id": "conv-3", "attr.app.tier": "silver", "limit": "100"},
    {"service": "support-app", "agent": "TriageAgent", "since": "19m", "min_duration_ms": "900"},
]


@pytest.mark.parametrize("params", SEARCHES, ids=[str(i) for i in range(len(SEARCHES))])
def test_search(
    pair: tuple[InProcessCollector, InProcessCollector, list[str]], params: dict[str, str]
) -> None:
    duck, ch, _ = pair
    want = duck.get("/api/traces", **params)
    got = ch.get("/api/traces", **params)
    assert want.status_code == got.status_code == 200
    assert want.json()["traces"], "the search finds some trace (else it checks nothing)"
    _same(got.json(), want.json(), str(params))


def test_health(pair: tuple[InProcessCollector, InProcessCollector, list[str]]) -> None:
    _, ch, _ = pair
    assert ch.get("/healthz").json() == {"status": "ok"}


# Query parameters that make each endpoint answer something (the rest take their defaults).
ENDPOINT_PARAMS: dict[str, dict[str, str]] = {
    "/api/metrics/golden": {"window": "1h"},
    "/api/metrics/timeseries": {"since": "30m", "step": "60", "metric": "p95"},
    "/api/metrics/agents": {"window": "1h"},
    "/api/topology": {"window": "1h"},
    "/api/search": {"limit": "5"},
}
_MOVING = {"until", "since", "time", "generated_at", "now", "at", "uptime_s", "t_ns"}  # the wall clock's


def _without_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_clock(v) for k, v in value.items() if k not in _MOVING}
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


def test_every_get_endpoint(pair: tuple[InProcessCollector, InProcessCollector, list[str]]) -> None:
    """Every GET route the collector serves (read from its OpenAPI document) answers on ClickHouse
    as on DuckDB: the same status, never a 5xx, and for the JSON API the same body."""
    duck, ch, ids = pair
    paths = sorted(p for p, ops in duck.get("/openapi.json").json()["paths"].items() if "get" in ops)
    assert len(paths) >= 15, paths
    checked = 0
    for path in paths:
        url = path.replace("{trace_id}", ids[0]).replace("{name}", "service.name")
        url = url.replace("{fingerprint}", "0" * 16).replace("{path}", "index.html")
        params = next((p for prefix, p in ENDPOINT_PARAMS.items() if url.endswith(prefix)), {})
        want, got = duck.get(url, **params), ch.get(url, **params)
        assert got.status_code < 500, (url, got.text[:300])
        assert got.status_code == want.status_code, (url, got.text[:300], want.text[:300])
        if url.startswith("/api/") and "json" in want.headers.get("content-type", ""):
            _same(_without_clock(got.json()), _without_clock(want.json()), url)
            checked += 1
    assert checked >= 10
