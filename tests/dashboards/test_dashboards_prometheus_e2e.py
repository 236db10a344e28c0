"""End to end: a collector with multi-agent traffic, a real Prometheus scraping its /metrics every
second, and every PromQL expression of every dashboard panel run through Prometheus's HTTP API —
all parse; the overview and multi-agent panels return numbers."""

from __future__ import annotations

import json
import math
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from collector_process import free_port
from dashboard_helpers import DASHBOARDS, PromTools, load_dashboards, panels, substitute
from dashboard_traffic import PRICES, Traffic

RATE_INTERVAL = "10s"  # ≥ 4 × the 1 s scrape interval, as Grafana's $__rate_interval would be
RANGE = "1m"
# Panels allowed to be empty in a fresh collector: no alert is pending or firing yet.
MAY_BE_EMPTY = {("reach-overview", "Active alerts")}


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _query(prometheus: str, expr: str) -> dict[str, Any]:
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode(
        {"query": expr, "time": f"{time.time():.3f}"}
    )
    try:
        return dict(_get(url))
    except urllib.error.HTTPError as exc:  # 400 bad_data: the expression does not parse
        return dict(json.loads(exc.read() or b"{}") or {"status": "error", "error": str(exc)})


def _numbers(result: dict[str, Any]) -> list[float]:
    data = result["data"]
    if data["resultType"] == "scalar":
        return [float(data["result"][1])]
    return [float(sample["value"][1]) for sample in data["result"]]


def _variables(dashboard: dict[str, Any]) -> dict[str, str]:
    """Concrete values for every variable: All for query variables, defaults for text boxes."""
    values = {"__rate_interval": RATE_INTERVAL, "__interval": "1s", "__range": RANGE}
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            values[variable["name"]] = variable.get("allValue") or ".*"
        elif variable["type"] in ("textbox", "constant", "custom"):
            values[variable["name"]] = str(variable["query"])
    return values


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


def _wait_for_scrapes(prometheus: str, count: int, timeout: float = 60) -> None:
    series = 'reach_agent_calls_total{operation="invoke_agent", agent="TriageAgent", status="ok"}'
    expr = f"count_over_time({series}[1m])"
    deadline = time.monotonic() + timeout
    seen: list[float] = []
    while time.monotonic() < deadline:
        result = _query(prometheus, expr)
        seen = _numbers(result) if result.get("status") == "success" else []
        if seen and seen[0] >= count:
            return
        time.sleep(0.5)
    up = _query(prometheus, "up")
    raise AssertionError(f"Prometheus did not scrape the collector {count} times: {seen} {up}")


def test_every_dashboard_query_runs_on_real_prometheus(
    start_collector: Callable[..., Any], prometheus: Callable[[str], str]
) -> None:
    collector = start_collector(prices=PRICES)  # the cost panels read the collector's priced tokens
    traffic = Traffic(collector.url).start()
    try:
        prom = prometheus(collector.url.removeprefix("http://"))
        _wait_for_scrapes(prom, 8)
        failures: list[str] = []
        checked = 0
        for name, dashboard in load_dashboards().items():
            values = _variables(dashboard)
            must_have_data = dashboard["uid"] in ("reach-overview", "reach-multi-agent")
            for panel in panels(dashboard):
                key = (dashboard["uid"], panel["title"])
                for target in panel["targets"]:
                    expr = substitute(target["expr"], values)
                    assert "$" not in expr, f"{key}: unsubstituted variable in {expr}"
                    result = _query(prom, expr)
                    checked += 1
                    if result.get("status") != "success":
                        failures.append(f"{name} / {panel['title']}: {result.get('error')} in {expr}")
                        continue
                    numbers = [n for n in _numbers(result) if not math.isnan(n)]
                    if must_have_data and not numbers and key not in MAY_BE_EMPTY:
                        failures.append(f"{name} / {panel['title']} [{target['refId']}]: no data for {expr}")
        assert not failures, "\n".join(failures)
        assert checked >= 30
        # The agent variable's query lists the agents that made calls.
        query = urllib.parse.urlencode({"match[]": 'reach_agent_calls_total{operation="invoke_agent"}'})
        agents = _get(f"{prom}/api/v1/label/agent/values?{query}")["data"]
        assert set(agents) == {"TriageAgent", "BillingAgent", "TechAgent"}
        # Prometheus loaded the alert rules (their evaluation errors would show here).
        groups = _get(f"{prom}/api/v1/rules")["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        assert {r["name"] for r in rules} == {
            "ReachSuccessRateLow",
            "ReachP99LatencyHigh",
            "ReachAgentHeartbeatLost",
        }
        assert all(not r.get("lastError") for r in rules), rules
    finally:
        traffic.stop()
