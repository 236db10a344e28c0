"""The alerting package's setup from its config sections (§4, §10): the typed tree the collector's
loader read (``Settings.tree``, ``sections.Sections``), with on-call put together (schedules in their
zones, every name a route gives found), warnings for what is usable but suspicious, and the
judgement of evaluations.

A bad value raises ``ConfigError`` naming the key path and the reason, e.g.
``alerting.rules.ReachSuccessRateLow.for: expected a duration like 30s, 5m, 1h, 7d; got 'soon'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reach_collector.alerting.oncall.config import (
    DEFAULT_ROUTING,
    EscalationPolicy,
    EscalationStep,
    Route,
    Targets,
    User,
    check_references,
    schedule,
)
from reach_collector.alerting.oncall.rotation import Schedule
from reach_collector.config import ConfigError, Settings
from reach_collector.config_values import validate
from reach_collector.query.judged import DEFAULT_GOOD_LABELS, DEFAULT_MIN_SCORE, Judgement
from reach_collector.sections import Sections
from reach_collector.sections.alerting import REPLAY_MAX_EVALUATIONS, AlertingConfig, Quality
from reach_collector.sections.rules import (
    SEVERITIES,
    WORKBOOK_WINDOWS,
    BurnRateRuleConfig,
    BurnWindow,
    HeartbeatRuleConfig,
    LatencyRuleConfig,
    QualityRuleConfig,
    SuccessRateRuleConfig,
)

__all__ = [
    "REPLAY_MAX_EVALUATIONS",
    "SEVERITIES",
    "WORKBOOK_WINDOWS",
    "AlertingConfig",
    "AlertingSetup",
    "BurnRateRuleConfig",
    "BurnWindow",
    "EscalationPolicy",
    "EscalationStep",
    "HeartbeatRuleConfig",
    "LatencyRuleConfig",
    "Route",
    "SuccessRateRuleConfig",
    "Targets",
    "User",
    "from_settings",
    "load_alerting",
    "setup",
]


@dataclass(frozen=True)
class AlertingSetup:
    """Everything the alerting package needs from the config file."""

    alerting: AlertingConfig = field(default_factory=AlertingConfig)
    time_zone: str = "UTC"
    users: Mapping[str, User] = field(default_factory=dict)
    schedules: Mapping[str, Schedule] = field(default_factory=dict)
    escalation_policies: Mapping[str, EscalationPolicy] = field(default_factory=dict)
    routing: Mapping[str, Route] = field(default_factory=lambda: dict(DEFAULT_ROUTING))
    warnings: tuple[str, ...] = ()  # usable but suspicious (e.g. a member with no contact)
    # agent → who is paged for the alerts about it that rules route to owners (edge SLOs, budgets)
    owners: Mapping[str, Route] = field(default_factory=dict)
    # When an evaluation is judged good (``quality.default`` and the quality rules): edges' resolved
    judgement: Judgement = field(default_factory=Judgement)


def from_settings(settings: Settings) -> AlertingSetup:
    """The setup of the sections the collector's loader read; errors name the file too."""
    given = settings.source != Settings.source  # the class default: started with no config at all
    return _setup_of(settings.tree, settings.time_zone, settings.source if given else None)


def load_alerting(
    sections: Mapping[str, Any], time_zone: str = "UTC", *, source: str | None = None
) -> AlertingSetup:
    """Read the sections (a parsed config document's) and set them up; ``source`` names the config
    they came from (None: there was none, so a P0 or P1 without a route is the default, not worth a
    warning)."""
    return _setup_of(validate(Sections, sections, source), time_zone, source)


def _setup_of(tree: Sections, time_zone: str, source: str | None) -> AlertingSetup:
    """``setup``, configured when there is a ``source``, its errors naming that config."""
    try:
        return setup(tree, time_zone, configured=source is not None)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}" if source else str(exc)) from None


def setup(tree: Sections, time_zone: str = "UTC", *, configured: bool = True) -> AlertingSetup:
    """The alerting package's setup from its typed sections (``tree.time_zone`` over ``time_zone``)."""
    zone = tree.time_zone or time_zone
    schedules = {name: schedule(name, spec, zone) for name, spec in tree.schedules.items()}
    policies = tree.escalation_policies
    routing = {**DEFAULT_ROUTING, **tree.routing}
    owners = {agent: owner.route for agent, owner in tree.owners.items()}
    check_references(tree.users, schedules, policies, tree.routing, owners)
    # Members without a contact are legal (they may be reached another way) but cannot be paged.
    named = {m for s in schedules.values() for layer in s.layers for m in layer.members}
    named |= {o.user for s in schedules.values() for o in s.overrides}
    named |= {u for p in policies.values() for step in p.steps for u in step.notify.users}
    named |= {u for r in (*routing.values(), *owners.values()) if r.notify for u in r.notify.users}
    warnings = [
        f"users.{name}: no webhook configured; pages for {name} cannot be delivered"
        for name in sorted(named)
        if name not in tree.users or tree.users[name].webhook is None
    ]
    for sev in ("P0", "P1") if configured else ():
        if sev not in routing:
            warnings.append(f"routing.{sev}: no route; {sev} alerts page nobody")
    judgement = _judgement(tree.quality, tree.alerting.qualities)
    return AlertingSetup(
        tree.alerting, zone, tree.users, schedules, policies, routing, tuple(warnings), owners, judgement
    )


def _judgement(quality: Quality, rules: tuple[QualityRuleConfig, ...]) -> Judgement:
    """``quality: {default: {good_labels, min_score}}``: when an evaluation no quality rule watches
    is judged good; the rules judge their own (SPEC §18)."""
    default = quality.default
    return Judgement(
        good_labels=DEFAULT_GOOD_LABELS if default.good_labels is None else default.good_labels,
        min_score=DEFAULT_MIN_SCORE if default.min_score is None else default.min_score,
        rules=tuple((r.evaluation, r.good_labels, r.min_score) for r in rules),
    )
