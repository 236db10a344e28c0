"""Fixtures for the collector tests: a real uvicorn server on a free loopback port over a real
DuckDB file in tmp_path, and OTel SDK tracer providers wired to the real OTLP exporters."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore


@dataclass
class RunningCollector:
    url: str
    store: DuckDBStore
    app: Any
    db: Path

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.post(self.url + path, timeout=10, **kwargs)


class ServerThread:
    """uvicorn serving an app on an already-bound loopback socket, in a background thread."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True
        )

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("collector did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


@pytest.fixture
def start_collector(tmp_path: Path) -> Iterator[Callable[..., RunningCollector]]:
    servers: list[ServerThread] = []
    stores: list[DuckDBStore] = []

    def start(settings: Settings | None = None, **app_kwargs: Any) -> RunningCollector:
        db = tmp_path / f"traces-{len(stores)}.duckdb"
        store = DuckDBStore(db)
        stores.append(store)
        app = create_app(settings or Settings(db=str(db)), store=store, **app_kwargs)
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
