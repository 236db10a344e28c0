"""Several collectors under one Prometheus (SPEC §16): two collectors on one ClickHouse, each
ingesting part of the traffic, scraped by a real Prometheus as one job. The counters are what each
collector ingested, so ``sum by`` over the collectors gives the totals; the window gauges are read
from the shared store, so every collector reports the same value and the shipped rules take
``max by`` of them — and the P0 rule's expression finds the failing agent as it would with one."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from ch_collectors import InProcessCollector
from ch_server import ClickHouseServer
from ch_spans import failing_runs
from collector_process import free_port
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.clickhouse import ClickHouseStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dashboards"))
from dashboard_helpers import ensure_prometheus_tools, query, start_prometheus, stop_processes

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus" / "reach-rules.yml"


def _collector(db: str) -> InProcessCollector:
    settings = replace(Settings(db=db), retention_s=0)
    store = ClickHouseStore(db)
    app = create_app(settings, store=store, alert_loop=False)
    server = ServerThread(app).start()
    return InProcessCollector(server.url, store, app, server)


def _by(prom: str, expr: str, label: str = "agent") -> dict[str, float]:
    result = query(prom, expr)
    assert result.get("status") == "success", (expr, result)
    return {s["metric"].get(label, ""): float(s["value"][1]) for s in result["data"]["result"]}


def _p0_expression() -> str:
    import yaml

    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    return next(r["expr"] for r in rules if r.get("alert") == "ReachSuccessRateLow")


def test_two_collectors_one_prometheus(
    clickhouse: ClickHouseServer, ch_database: str, tmp_path: Path
) -> None:
    tools = ensure_prometheus_tools()
    db = clickhouse.url(ch_database)
    a, b = _collector(db), _collector(db)
    procs: list[Any] = []
    try:
        for target, doc in (
            (a, failing_runs("Billing", 5, 0xA000)),  # Billing fails 5 of its 8 runs: P0
            (b, failing_runs("Billing", 3, 0xB000, code=0)),
            (b, failing_runs("Triage", 4, 0xC000, code=0)),
        ):
            sent = httpx.post(target.url + "/v1/traces", json=doc, timeout=30)
            assert sent.status_code == 200, sent.text
        hosts = [c.url.removeprefix("http://") for c in (a, b)]
        prom = start_prometheus(tools.prometheus, tmp_path, free_port(), hosts, (), procs)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if len(_by(prom, 'up{job="reach-collector"} == 1', "instance")) == 2 and _by(
                prom, "count by (agent) (reach_agent_window_calls)"
            ) == {"Billing": 2.0, "Triage": 2.0}:
                break
            time.sleep(0.5)
        # counters: what each ingested, summed over the collectors
        calls = 'sum by (agent) (reach_agent_calls_total{operation="invoke_agent"})'
        assert _by(prom, calls) == {"Billing": 8.0, "Triage": 4.0}
        assert _by(
            prom, 'sum by (agent) (reach_agent_calls_total{operation="invoke_agent", status="error"})'
        ) == {"Billing": 5.0}
        # window gauges: the shared store's, the same on both collectors (so max, never sum)
        assert _by(prom, "max by (agent) (reach_agent_window_calls)") == {"Billing": 8.0, "Triage": 4.0}
        assert _by(prom, "min by (agent) (reach_agent_window_calls)") == {"Billing": 8.0, "Triage": 4.0}
        assert _by(prom, "max by (agent) (reach_agent_success_ratio)") == {"Billing": 3 / 8, "Triage": 1.0}
        # the shipped P0 rule's expression finds Billing, once
        assert _by(prom, _p0_expression()) == {"Billing": 3 / 8}
    finally:
        stop_processes(procs)
        a.close()
        b.close()
