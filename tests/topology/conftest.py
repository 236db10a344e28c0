"""Fixtures for the topology tests: a real collector (create_app over a DuckDB file in tmp_path,
uvicorn on a free loopback port), apps exporting to it over OTLP/HTTP, and a real Prometheus
scraping it every second (Debian's package, as the dashboards tests use it)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dashboards"))
from collector_process import free_port
from dashboard_helpers import DASHBOARDS, ensure_prometheus_tools
from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore
from servers import ServerThread
from topology_helpers import App, Collector

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
        port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            json.dumps(  # JSON is YAML
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(DASHBOARDS / "prometheus" / name) for name in rule_files],
                    "scrape_configs": [
                        {"job_name": "reach-collector", "static_configs": [{"targets": [target]}]}
                    ],
                }
            )
        )
        log = tmp_path / "prometheus.log"
        procs.append(
            subprocess.Popen(
                [
                    tools.prometheus,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
            )
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=1).read()
                return url
            except OSError:
                if time.monotonic() > deadline or procs[-1].poll() is not None:
                    raise RuntimeError(log.read_text()[-2000:]) from None
                time.sleep(0.2)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
