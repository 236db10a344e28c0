"""Fixtures for the metrics tests: a real collector (create_app over a DuckDB file in tmp_path)
served by uvicorn on a free loopback port, with the metrics routers and /metrics mounted."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from metrics_helpers import Served

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.exposition.registry import Exposition, metrics_endpoint
from reach_collector.store.duckdb_store import DuckDBStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collector"))
from servers import ServerThread

PRICES = {"fake-model": {"input": 1.0, "output": 2.0}}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    db = tmp_path / "traces.duckdb"
    store = DuckDBStore(db)
    exposition = Exposition(store, clock=time.time, window_s=300)
    app = create_app(replace(Settings(db=str(db), prices=PRICES), retention_s=0), store=store)
    app.include_router(metrics_endpoint(exposition))
    server = ServerThread(app)
    server.start()
    yield Served(f"http://127.0.0.1:{server.port}", store, exposition)
    server.stop()
    store.close()
