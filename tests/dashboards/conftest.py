"""Fixtures for the dashboards tests: a collector with the Tempo-compatible router on a free
loopback port, the Prometheus/Alertmanager tools (installed from Debian when missing), and a real
Prometheus scraping a target every second with the shipped rules loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The collector tests' helpers (a trace with every OTLP feature, the SDK-side comparison).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "collector"))

from collector_process import free_port
from dashboard_helpers import DASHBOARDS, PromTools, ensure_prometheus_tools, start_test_collector


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
        port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            json.dumps(  # JSON is YAML
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(DASHBOARDS / "prometheus" / "reach-rules.yml")],
                    "scrape_configs": [
                        {"job_name": "reach-collector", "static_configs": [{"targets": [target]}]}
                    ],
                }
            )
        )
        log = (tmp_path / "prometheus.log").open("wb")
        procs.append(
            subprocess.Popen(
                [
                    prom_tools.prometheus,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=log,
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
                    raise RuntimeError((tmp_path / "prometheus.log").read_text()[-2000:]) from None
                time.sleep(0.2)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
