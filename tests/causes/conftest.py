"""Fixtures for the causes tests: a real collector (create_app over a DuckDB file, uvicorn on a free
loopback port, prices configured) and apps that send it hand-built traces over OTLP/HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cause_helpers import PRICES, App, Collector
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore


def _start(db: Path, running: list[tuple[ServerThread, DuckDBStore]], **settings_kw: Any) -> Collector:
    store = DuckDBStore(db)
    settings = replace(Settings(prices=PRICES, **settings_kw), db=str(db), retention_s=0)
    app = create_app(settings, store=store, alert_loop=False)
    server = ServerThread(app).start()
    running.append((server, store))
    return Collector(server.url, store, app)


@pytest.fixture(scope="module")
def module_collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    """One collector for a test file whose tests each read their own traces."""
    running: list[tuple[ServerThread, DuckDBStore]] = []
    yield _start(tmp_path_factory.mktemp("causes") / "traces.duckdb", running)
    for server, store in running:
        server.stop()
        store.close()


@pytest.fixture
def start_collector(tmp_path: Path) -> Iterator[Callable[..., Collector]]:
    """A collector of the test's own (its window holds only the test's traces); keyword arguments
    are Settings fields (``query_token=...``)."""
    running: list[tuple[ServerThread, DuckDBStore]] = []

    def start(**settings: Any) -> Collector:
        return _start(tmp_path / f"traces-{len(running)}.duckdb", running, **settings)

    yield start
    for server, store in running:
        server.stop()
        store.close()


@pytest.fixture
def apps() -> Iterator[Callable[..., App]]:
    made: list[App] = []

    def make(url: str, **kw: Any) -> App:
        made.append(App(url, **kw))
        return made[-1]

    yield make
    for app in made:
        app.close()
