"""Fixtures for the dashboards tests: a collector with the Tempo-compatible router on a free
loopback port, the Prometheus/Alertmanager tools (installed from Debian when missing), and a real
Prometheus scraping a target every second with the shipped rules loaded."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The collector tests' helpers (a trace with every OTLP feature, the SDK-side comparison).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "collector"))

from collector_process import free_port
from dashboard_helpers import (
    PromTools,
    ensure_prometheus_tools,
    start_prometheus,
    start_test_collector,
    stop_processes,
)


@pytest.fixture(scope="session")
def prom_tools() -> PromTools:
    return ensure_prometheus_tools()


@pytest.fixture
def start_collector(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    running: list[Any] = []

    def start(**settings: Any) -> Any:
        collector = start_test_collector(tmp_path / f"traces-{len(running)}.duckdb", **settings)
        running.append(collector)
        return collector

    yield start
    for collector in running:
        collector.close()


@pytest.fixture
def prometheus(prom_tools: PromTools, tmp_path: Path) -> Iterator[Callable[[str], str]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(target: str) -> str:
        return start_prometheus(
            prom_tools.prometheus, tmp_path, free_port(), target, ("reach-rules.yml",), procs
        )

    yield start
    stop_processes(procs)
