"""The enabled rules of a validated ``alerting`` section, in evaluation order."""

from __future__ import annotations

from reach_collector.alerting.config import AlertingConfig, BurnRateRuleConfig
from reach_collector.alerting.rules.base import Rule
from reach_collector.alerting.rules.budget import budget_rules
from reach_collector.alerting.rules.burn_rate import BurnRateRule
from reach_collector.alerting.rules.drift import DriftRule
from reach_collector.alerting.rules.edge_slo import EdgeSLORule
from reach_collector.alerting.rules.golden import HeartbeatLostRule, LatencyRule, SuccessRateRule
from reach_collector.alerting.rules.quality import QualityRule

__all__ = ["build_rules"]


def build_rules(config: AlertingConfig) -> list[Rule]:
    """The enabled rules of a validated ``alerting`` section, in evaluation order."""
    rules: list[Rule] = []
    sr, lat, hb = config.success_rate, config.latency, config.heartbeat
    if sr.enabled:
        rules.append(SuccessRateRule(sr.below, sr.window_s, sr.min_calls, sr.for_s, sr.keep_firing_for_s))
    if lat.enabled:
        rules.append(
            LatencyRule(
                lat.factor,
                lat.window_s,
                lat.min_calls,
                lat.default_threshold_ms,
                dict(config.thresholds),
                lat.for_s,
                lat.keep_firing_for_s,
            )
        )
    if hb.enabled:
        rules.append(HeartbeatLostRule(hb.after_s, hb.for_s, hb.keep_firing_for_s))
    rules.extend(_burn(c) for c in config.burn_rates if c.enabled)
    rules.extend(EdgeSLORule(c) for c in config.edge_slos if c.enabled)
    rules.extend(r for c in config.budgets if c.enabled for r in budget_rules(c))
    rules.extend(DriftRule(c) for c in config.drifts if c.enabled)
    rules.extend(QualityRule(c) for c in config.qualities if c.enabled)
    return rules


def _burn(c: BurnRateRuleConfig) -> BurnRateRule:
    return BurnRateRule(c.name, c.objective, c.windows, c.min_calls, c.severity, c.for_s, c.keep_firing_for_s)
