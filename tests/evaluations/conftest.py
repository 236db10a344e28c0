"""Fixtures for the evaluation tests: a real collector (create_app over a DuckDB file in tmp_path)
on a free loopback port, with its OTLP/gRPC server on another, and helpers that send real OTLP
through the OpenTelemetry SDK's own exporters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import Served
from servers import ServerThread

from reach_collector.api.otlp_grpc import start_grpc
from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore


@pytest.fixture
def start_served(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    running: list[tuple[ServerThread, Any, DuckDBStore]] = []

    def start(settings: Settings | None = None, **app_kwargs: Any) -> Served:
        db = tmp_path / f"traces-{len(running)}.duckdb"
        store = DuckDBStore(db)
        settings = replace(settings or Settings(db=str(db)), retention_s=0)
        app = create_app(settings, store=store, **app_kwargs)
        server = ServerThread(app)
        server.start()
        grpc_server, grpc_port = start_grpc(
            app.state.ingest,
            "127.0.0.1",
            0,
            ingest_token=settings.ingest_token,
            query_token=settings.query_token,
        )
        running.append((server, grpc_server, store))
        return Served(f"http://127.0.0.1:{server.port}", f"127.0.0.1:{grpc_port}", store, app)

    yield start
    for server, grpc_server, store in running:
        grpc_server.stop(0)
        server.stop()
        store.close()


@pytest.fixture
def served(start_served: Callable[..., Served]) -> Served:
    return start_served()
