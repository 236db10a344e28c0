"""Helpers for the alerting integration tests: a real collector (uvicorn on a loopback port) built
from a config document, OTLP JSON agent spans, and bounded polling."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import httpx
from alerting_fakes import free_port
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import from_mapping
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

NS = 1_000_000_000
T = TypeVar("T")


def attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def agent_span(
    end_s: float, agent: str, *, error: bool = False, duration_ms: float = 100.0
) -> dict[str, Any]:
    end = int(end_s * NS)
    return {
        "traceId": os.urandom(16).hex(),
        "spanId": os.urandom(8).hex(),
        "name": f"invoke_agent {agent}",
        "kind": 1,
        "startTimeUnixNano": str(end - int(duration_ms * 1e6)),
        "endTimeUnixNano": str(end),
        "attributes": [attr(sc.GEN_AI_OPERATION_NAME, sc.OP_AGENT), attr(sc.GEN_AI_AGENT_NAME, agent)],
        "status": {"code": 2 if error else 0},
    }


def otlp(spans: list[dict[str, Any]], service: str = "billing-svc") -> dict[str, Any]:
    resource = {"attributes": [attr("service.name", service)]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}


class Live:
    """A running collector: its URL, app (``app.state.alerts`` is the engine) and store."""

    def __init__(self, url: str, app: Any, store: DuckDBStore) -> None:
        self.url, self.app, self.store = url, app, store

    def get(self, path: str, **params: Any) -> Any:
        response = httpx.get(self.url + path, params=params, timeout=10)
        response.raise_for_status()
        return response.json()

    def post(self, path: str, body: Any, **kwargs: Any) -> httpx.Response:
        return httpx.post(self.url + path, json=body, timeout=10, **kwargs)


@contextmanager
def live_collector(db: Path, doc: dict[str, Any] | None = None, **app_kwargs: Any) -> Iterator[Live]:
    """A collector over ``db`` with the config document ``doc``; always stopped and closed. It
    listens on the port its settings name, so the links in its pages (externalURL) reach it."""
    port = free_port()
    settings = replace(from_mapping(doc or {}, "test.yaml"), db=str(db), retention_s=0, port=port)
    store = DuckDBStore(db)
    try:
        app = create_app(settings, store=store, **app_kwargs)
        server = ServerThread(app, port).start()
        try:
            yield Live(server.url, app, store)
        finally:
            server.stop()
    finally:
        store.close()


def wait_for(probe: Callable[[], T | None], timeout: float = 15.0, every: float = 0.05) -> T:
    """Poll ``probe`` until it returns something truthy (bounded); fail with the last value."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")
