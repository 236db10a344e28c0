"""The alert rules, one module each: the fixed P0/P1/P2 rules (``golden``), the burn-rate SLO
(``burn_rate``), and the topology rule types of SPEC §15 (``edge_slo``, ``budget``, ``drift``).
Each is a pure query ``samples(now, data)`` returning what breaches (``base.Rule``), and says where
its data shows: ``generator_path`` (over the rule's window) and ``trace_search`` (the failing
traces of one alert, linked from its pages). Their configuration is read with the rest of the
config file (``sections.rules``); ``evaluation.build.build_rules`` makes the enabled ones from it.
"""

from reach_collector.alerting.rules.base import Rule
from reach_collector.alerting.rules.burn_rate import BurnRateRule, burning
from reach_collector.alerting.rules.golden import (
    HeartbeatLostRule,
    LatencyRule,
    SuccessRateRule,
    agent_statuses,
)

__all__ = [
    "BurnRateRule",
    "HeartbeatLostRule",
    "LatencyRule",
    "Rule",
    "SuccessRateRule",
    "agent_statuses",
    "burning",
]
