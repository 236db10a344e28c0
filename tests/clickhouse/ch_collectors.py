"""Collectors for the ClickHouse tests: in-process (create_app over a store, real uvicorn on a
free loopback port) and as a subprocess (``python -m reach_collector --db clickhouse://...``), and
posting OTLP to them over real HTTP."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from collector_process import CollectorProcess as BaseCollectorProcess
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.base import TraceStore
from reach_collector.store.clickhouse import ClickHouseStore

PROTOBUF = "application/x-protobuf"
# The two engines a store-level test runs on: Debian's server, and current ClickHouse in process.
ENGINES = ["clickhouse-18.16", "chdb"]


def engine_store(request: pytest.FixtureRequest, directory: Path, database: str) -> ClickHouseStore:
    """A ClickHouseStore on the engine of ``request.param`` (one of ENGINES): a fresh database on
    the session's 18.16 server, or chdb in ``directory`` (skipped when chdb is missing)."""
    if request.param == "chdb":
        pytest.importorskip("chdb")
        return ClickHouseStore.in_process(directory / "chdb")
    return ClickHouseStore(request.getfixturevalue("clickhouse").url(database))


@dataclass
class InProcessCollector:
    url: str
    store: TraceStore
    app: Any
    server: ServerThread

    def close(self) -> None:
        self.server.stop()
        self.store.close()

    def post(self, body: bytes, timeout: float = 30) -> httpx.Response:
        return post(self.url, body, timeout)

    def get(self, path: str, **params: Any) -> httpx.Response:
        return httpx.get(self.url + path, params=params, timeout=30)


def start_in_process(store: TraceStore, db: str, **settings: Any) -> InProcessCollector:
    """create_app over ``store`` (retention off, no alert loop) served by uvicorn on loopback."""
    app = create_app(replace(Settings(db=db), retention_s=0, **settings), store=store, alert_loop=False)
    server = ServerThread(app).start()
    return InProcessCollector(server.url, store, app, server)


def post(url: str, body: bytes, timeout: float = 30) -> httpx.Response:
    return httpx.post(url + "/v1/traces", content=body, headers={"content-type": PROTOBUF}, timeout=timeout)


class CollectorProcess(BaseCollectorProcess):
    """``python -m reach_collector`` on ``db`` (a clickhouse:// URL), retention off."""

    def __init__(self, db: str, *extra: str, env: dict[str, str] | None = None) -> None:
        super().__init__(db, "--retention", "0s", *extra, env=env)
