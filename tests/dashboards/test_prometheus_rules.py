"""The Prometheus rules and the Alertmanager example, checked by the real tools: `promtool check
rules|config`, `promtool test rules` (timing), `amtool check-config`, routing per severity and of
edge SLOs to their target's owner, and a live Alertmanager showing that a P0 inhibits the same
agent's P1."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from collector_process import free_port
from dashboard_helpers import DASHBOARDS, PromTools

RULES = DASHBOARDS / "prometheus"
ALERTMANAGER = DASHBOARDS / "alertmanager" / "alertmanager.yml"


def _run(*argv: str, cwd: Path | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_promtool_checks_the_rules_and_the_example_config(prom_tools: PromTools) -> None:
    assert "SUCCESS: 3 rules found" in _run(
        prom_tools.promtool, "check", "rules", "reach-rules.yml", cwd=RULES
    )
    _run(prom_tools.promtool, "check", "config", "prometheus.yml", cwd=RULES)


def test_promtool_unit_tests_pin_the_alert_timing(prom_tools: PromTools) -> None:
    assert "SUCCESS" in _run(prom_tools.promtool, "test", "rules", "reach-rules.test.yml", cwd=RULES)


def test_amtool_checks_the_alertmanager_example(prom_tools: PromTools) -> None:
    out = _run(prom_tools.amtool, "check-config", str(ALERTMANAGER))
    assert "SUCCESS" in out and "1 inhibit rules" in out and "5 receivers" in out


@pytest.mark.parametrize(
    ("severity", "receiver"), [("P0", "on-call"), ("P1", "front-line"), ("P2", "deregister")]
)
def test_routing_by_severity(prom_tools: PromTools, severity: str, receiver: str) -> None:
    out = _run(
        prom_tools.amtool, "config", "routes", "test", f"--config.file={ALERTMANAGER}",
        f"severity={severity}", "agent=billing", "alertname=X",
    )  # fmt: skip
    assert out.splitlines()[0].strip() == receiver


_EDGE = ["source=TriageAgent", "target=BillingAgent", "agent=BillingAgent"]


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        # An edge SLO pages the owner of its target agent (SPEC §15), whatever its severity, from
        # Prometheus (ReachEdgeCommitSLO) or from a collector's rule of any name.
        (["alertname=ReachEdgeCommitSLO", "severity=P1", *_EDGE], "billing-owner"),
        (["alertname=EdgeCommitSLO", "severity=P0", *_EDGE], "billing-owner"),
        # A target with no owner takes its severity's route.
        (["alertname=EdgeCommitSLO", "severity=P1", "source=TriageAgent", "target=TechAgent"], "front-line"),
        # Topology drift names a target too, but goes by its severity, as the collector routes it;
        # other alerts of the owned agent as well.
        (
            ["alertname=ReachTopologyChanged", "severity=P1", "source=TriageAgent", "target=BillingAgent"],
            "front-line",
        ),
        (["alertname=ReachSuccessRateLow", "severity=P0", "agent=BillingAgent"], "on-call"),
        # An agent's budget, spent, pages its owner; unowned, its severity's route; the projection
        # (severity warning) and drift events (info) page nobody, as in the collector.
        (["alertname=AgentBudget", "severity=P1", "agent=BillingAgent"], "billing-owner"),
        (["alertname=AgentBudget", "severity=P1", "agent=TechAgent"], "front-line"),
        (["alertname=AgentBudgetProjected", "severity=warning", "agent=BillingAgent"], "nobody"),
        (
            ["alertname=ReachTopologyChanged", "severity=info", "source=TriageAgent", "target=BillingAgent"],
            "nobody",
        ),
    ],
)
def test_edge_slo_routes_to_the_owner_of_its_target(
    prom_tools: PromTools, labels: list[str], receiver: str
) -> None:
    out = _run(prom_tools.amtool, "config", "routes", "test", f"--config.file={ALERTMANAGER}", *labels)
    assert out.splitlines()[0].strip() == receiver


@pytest.fixture
def alertmanager(prom_tools: PromTools, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            prom_tools.alertmanager,
            f"--config.file={ALERTMANAGER}",
            f"--storage.path={tmp_path / 'am'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("alertmanager did not become ready") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _post(url: str, body: Any) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    urllib.request.urlopen(request, timeout=5).read()


def test_p0_inhibits_p1_of_the_same_agent(alertmanager: str) -> None:
    def alert(name: str, severity: str, agent: str) -> dict[str, Any]:
        return {"labels": {"alertname": name, "severity": severity, "agent": agent, "service": "svc"}}

    _post(
        alertmanager + "/api/v2/alerts",
        [
            alert("ReachSuccessRateLow", "P0", "billing"),
            alert("ReachP99LatencyHigh", "P1", "billing"),
            alert("ReachP99LatencyHigh", "P1", "tech"),
        ],
    )
    deadline = time.monotonic() + 20
    while True:
        alerts = json.loads(urllib.request.urlopen(alertmanager + "/api/v2/alerts", timeout=5).read())
        states = {(a["labels"]["severity"], a["labels"]["agent"]): a["status"] for a in alerts}
        if len(states) == 3 and states[("P1", "billing")]["state"] == "suppressed":
            break
        assert time.monotonic() < deadline, states
        time.sleep(0.2)
    assert states[("P1", "billing")]["inhibitedBy"]
    assert states[("P1", "tech")]["state"] == "active"
    assert states[("P0", "billing")]["state"] == "active"
