"""End to end: a collector with multi-agent traffic, a real Prometheus scraping its /metrics every
second, and every PromQL expression of every dashboard panel run through Prometheus's HTTP API —
all parse; the overview and multi-agent panels return numbers."""

from __future__ import annotations

import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from dashboard_helpers import get_json, load_dashboards, numbers, panels, query, substitute
from dashboard_traffic import PRICES, Traffic

RATE_INTERVAL = "10s"  # ≥ 4 × the 1 s scrape interval, as Grafana's $__rate_interval would be
RANGE = "1m"
# Panels allowed to be empty in a fresh collector: no alert is pending or firing yet.
MAY_BE_EMPTY = {("reach-overview", "Active alerts")}


def _variables(dashboard: dict[str, Any]) -> dict[str, str]:
    """Concrete values for every variable: All for query variables, defaults for text boxes."""
    values = {"__rate_interval": RATE_INTERVAL, "__interval": "1s", "__range": RANGE}
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            values[variable["name"]] = variable.get("allValue") or ".*"
        elif variable["type"] in ("textbox", "constant", "custom"):
            values[variable["name"]] = str(variable["query"])
    return values


def _wait_for_scrapes(prometheus: str, count: int, timeout: float = 60) -> None:
    series = 'reach_agent_calls_total{operation="invoke_agent", agent="TriageAgent", status="ok"}'
    expr = f"count_over_time({series}[1m])"
    deadline = time.monotonic() + timeout
    seen: list[float] = []
    while time.monotonic() < deadline:
        result = query(prometheus, expr)
        seen = numbers(result) if result.get("status") == "success" else []
        if seen and seen[0] >= count:
            return
        time.sleep(0.5)
    up = query(prometheus, "up")
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
                    result = query(prom, expr)
                    checked += 1
                    if result.get("status") != "success":
                        failures.append(f"{name} / {panel['title']}: {result.get('error')} in {expr}")
                        continue
                    found = [n for n in numbers(result) if not math.isnan(n)]
                    if must_have_data and not found and key not in MAY_BE_EMPTY:
                        failures.append(f"{name} / {panel['title']} [{target['refId']}]: no data for {expr}")
        assert not failures, "\n".join(failures)
        assert checked >= 30
        # The agent variable's query lists the agents that made calls.
        match = urllib.parse.urlencode({"match[]": 'reach_agent_calls_total{operation="invoke_agent"}'})
        agents = get_json(f"{prom}/api/v1/label/agent/values?{match}")["data"]
        assert set(agents) == {"TriageAgent", "BillingAgent", "TechAgent"}
        # Prometheus loaded the alert rules (their evaluation errors would show here).
        groups = get_json(f"{prom}/api/v1/rules")["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        assert {r["name"] for r in rules} == {
            "ReachSuccessRateLow",
            "ReachP99LatencyHigh",
            "ReachAgentHeartbeatLost",
        }
        assert all(not r.get("lastError") for r in rules), rules
    finally:
        traffic.stop()
