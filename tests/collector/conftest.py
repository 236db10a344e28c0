"""Fixtures for the collector tests: a real uvicorn server on a free loopback port over a real
DuckDB file in tmp_path (helpers in collector_helpers.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from collector_helpers import RunningCollector
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore


@pytest.fixture
def start_collector(tmp_path: Path) -> Iterator[Callable[..., RunningCollector]]:
    servers: list[ServerThread] = []
    stores: list[DuckDBStore] = []

    def start(settings: Settings | None = None, **app_kwargs: Any) -> RunningCollector:
        db = tmp_path / f"traces-{len(stores)}.duckdb"
        store = DuckDBStore(db)
        stores.append(store)
        # Retention off: many tests post fixed timestamps from 2023, which a 7-day window would drop.
        settings = replace(settings or Settings(db=str(db)), retention_s=0)
        app = create_app(settings, store=store, **app_kwargs)
        server = ServerThread(app)
        servers.append(server)
        server.start()
        return RunningCollector(f"http://127.0.0.1:{server.port}", store, app, db)

    yield start
    for server in servers:
        server.stop()
    for store in stores:
        store.close()


@pytest.fixture
def collector(start_collector: Callable[..., RunningCollector]) -> RunningCollector:
    return start_collector()
