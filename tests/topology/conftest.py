"""Fixtures for the topology tests: a real collector (create_app over a DuckDB file in tmp_path,
uvicorn on a free loopback port), apps exporting to it over OTLP/HTTP, and a real Prometheus
scraping it every second (Debian's package, as the dashboards tests use it)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dashboards"))
from collector_process import free_port
from dashboard_helpers import ensure_prometheus_tools, start_prometheus, stop_processes
from servers import ServerThread
from topology_helpers import App, Collector

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore

PRICES = {"small": {"input": 1.0, "output": 2.0}, "large": {"input": 10.0, "output": 30.0}}


@pytest.fixture
def start_collector(tmp_path: Path) -> Iterator[Callable[..., Collector]]:
    """``start(settings=None, clock=time.time, **create_app kwargs)``; stopped after the test."""
    running: list[tuple[ServerThread, DuckDBStore]] = []

    def start(
        settings: Settings | None = None, clock: Callable[[], float] = time.time, **kw: Any
    ) -> Collector:
        db = tmp_path / f"traces-{len(running)}.duckdb"
        base = settings or Settings(prices=PRICES)
        store = DuckDBStore(db)
        app = create_app(replace(base, db=str(db), retention_s=0), store=store, clock=clock, **kw)
        server = ServerThread(app).start()
        running.append((server, store))
        return Collector(server.url, store, app)

    yield start
    for server, store in running:
        server.stop()
        store.close()


@pytest.fixture
def collector(start_collector: Callable[..., Collector]) -> Collector:
    return start_collector(alert_loop=False)


@pytest.fixture
def apps() -> Iterator[Callable[..., App]]:
    made: list[App] = []

    def make(url: str, **kw: Any) -> App:
        made.append(App(url, **kw))
        return made[-1]

    yield make
    for app in made:
        app.close()


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """``start(target, rule_files=())`` → the URL of a Prometheus scraping ``host:port`` every second
    and evaluating ``rule_files`` (names under dashboards/prometheus/) every second."""
    tools = ensure_prometheus_tools()
    procs: list[subprocess.Popen[bytes]] = []

    def start(target: str, rule_files: tuple[str, ...] = ()) -> str:
        return start_prometheus(tools.prometheus, tmp_path, free_port(), target, rule_files, procs)

    yield start
    stop_processes(procs)
