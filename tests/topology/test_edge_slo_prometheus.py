"""The edge SLO's Prometheus equivalent (dashboards/prometheus/reach-edge-slo-rules.yml), checked
by the real tools: `promtool check rules` and its unit tests, which pin the first firing minute
(the same minute the collector's own edge_slo rule fires on that history), the labels and value,
the 0 ratio of a healthy edge and the no-data guard of a sparse one; the example config loads it."""

from __future__ import annotations

import subprocess

from dashboard_helpers import DASHBOARDS, ensure_prometheus_tools

RULES = DASHBOARDS / "prometheus"


def _run(*argv: str) -> str:
    done = subprocess.run(argv, cwd=RULES, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_promtool_checks_and_unit_tests_the_edge_slo_rules() -> None:
    tools = ensure_prometheus_tools()
    assert "SUCCESS: 6 rules found" in _run(tools.promtool, "check", "rules", "reach-edge-slo-rules.yml")
    assert "SUCCESS" in _run(tools.promtool, "test", "rules", "reach-edge-slo-rules.test.yml")
    assert "reach-edge-slo-rules.yml" in _run(tools.promtool, "check", "config", "prometheus.yml")
