"""Fixtures for the dashboards tests: a collector with the Tempo-compatible router on a free
loopback port, and the Prometheus/Alertmanager tools (installed from Debian when missing)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The collector tests' helpers (a trace with every OTLP feature, the SDK-side comparison).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "collector"))

from dashboard_helpers import PromTools, ensure_prometheus_tools, start_test_collector


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
