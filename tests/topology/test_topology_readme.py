"""The README's topology section stays true: its config example loads, with the three rule types
and the owner it shows."""

from __future__ import annotations

import re
from pathlib import Path

from reach_collector.alerting import from_settings
from reach_collector.alerting.evaluation.build import build_rules
from reach_collector.config import load

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_the_topology_config_example_is_valid(tmp_path: Path) -> None:
    section = README.split("## Topology, edge SLOs and budgets", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    path = tmp_path / "reach.yaml"
    path.write_text(block)
    setup = from_settings(load(str(path)))
    names = [r.name for r in build_rules(setup.alerting)]
    assert names[-4:] == ["EdgeCommitSLO", "AgentBudget", "AgentBudgetProjected", "ReachTopologyChanged"]
    assert setup.owners["BillingAgent"].notify is not None
    assert setup.owners["BillingAgent"].notify.schedule == "billing"
