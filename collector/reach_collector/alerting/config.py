"""Validation of the ``alerting``, ``users``, ``schedules``, ``escalation_policies`` and ``routing``
sections (§4, §10) into frozen dataclasses carrying every default.

A bad value raises ``ConfigError`` naming the key path and the reason, e.g.
``alerting.rules.ReachSuccessRateLow.for: expected a duration like 30s, 5m, 1h, 7d; got 'soon'``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from reach_collector.alerting._checks import count, duration, flag, mapping, names, number, only, url
from reach_collector.alerting.oncall.config import (
    DEFAULT_ROUTING,
    EscalationPolicy,
    EscalationStep,
    Route,
    Targets,
    User,
    parse_owner,
    parse_policy,
    parse_route,
    parse_schedule,
    parse_user,
)
from reach_collector.alerting.oncall.rotation import Schedule
from reach_collector.alerting.rules.budget import BudgetRuleConfig, parse_budget
from reach_collector.alerting.rules.drift import DriftRuleConfig, parse_drift
from reach_collector.alerting.rules.edge_slo import EdgeSLORuleConfig, parse_edge_slo
from reach_collector.alerting.rules.quality import QualityRuleConfig, parse_quality
from reach_collector.alerting.rules.spec import (
    HEARTBEAT,
    LATENCY,
    SEVERITIES,
    SUCCESS_RATE,
    WORKBOOK_WINDOWS,
    BurnWindow,
    parse_windows,
    severity,
)
from reach_collector.config import ConfigError, Settings, parse_zone
from reach_collector.query.judged import DEFAULT_GOOD_LABELS, DEFAULT_MIN_SCORE, Judgement

__all__ = [
    "SEVERITIES",
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
    "parse_windows",
]

_LABEL: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a Prometheus label name


@dataclass(frozen=True)
class SuccessRateRuleConfig:
    for_s: float = 300.0
    below: float = 0.5
    window_s: float = 60.0
    min_calls: int = 5
    keep_firing_for_s: float = 0.0
    enabled: bool = True


@dataclass(frozen=True)
class LatencyRuleConfig:
    for_s: float = 180.0
    factor: float = 1.5
    window_s: float = 60.0
    default_threshold_ms: float = 10000.0
    min_calls: int = 5
    keep_firing_for_s: float = 0.0
    enabled: bool = True


@dataclass(frozen=True)
class HeartbeatRuleConfig:
    for_s: float = 0.0
    after_s: float = 60.0
    keep_firing_for_s: float = 0.0
    enabled: bool = True


@dataclass(frozen=True)
class BurnRateRuleConfig:
    """The optional multi-window multi-burn-rate rule on a success-rate SLO (``type: burn_rate``)."""

    name: str
    objective: float = 0.99
    severity: str = "P1"
    windows: tuple[BurnWindow, ...] = WORKBOOK_WINDOWS
    min_calls: int = 5
    for_s: float = 0.0
    keep_firing_for_s: float = 0.0
    enabled: bool = True


# Rule evaluations one replay request may cost (steps × rules): a long range wants a larger step.
REPLAY_MAX_EVALUATIONS: Final = 20_000


@dataclass(frozen=True)
class AlertingConfig:
    interval_s: float = 15.0
    registry: str | None = None
    thresholds: Mapping[str, float] = field(default_factory=dict)
    success_rate: SuccessRateRuleConfig = SuccessRateRuleConfig()
    latency: LatencyRuleConfig = LatencyRuleConfig()
    heartbeat: HeartbeatRuleConfig = HeartbeatRuleConfig()
    burn_rates: tuple[BurnRateRuleConfig, ...] = ()
    edge_slos: tuple[EdgeSLORuleConfig, ...] = ()
    budgets: tuple[BudgetRuleConfig, ...] = ()
    drifts: tuple[DriftRuleConfig, ...] = ()
    qualities: tuple[QualityRuleConfig, ...] = ()
    repeat_s: float = 1800.0
    alertmanager_url: str | None = None
    # Pages grouped as Alertmanager groups them (grouping.py). group_wait 0: the alerts one evaluation
    # fires go in one message at once (P0 pages at once); group_interval bounds a group's later news.
    group_by: tuple[str, ...] = ("alertname",)
    group_wait_s: float = 0.0
    group_interval_s: float = 60.0
    registry_per_minute: int = 30  # deregistration calls at most; the rest wait their turn
    # False: this collector evaluates no rules (another one does, or two push to an Alertmanager
    # cluster that deduplicates: SPEC §16); it still serves the shared alert history.
    evaluate: bool = True
    replay_max_evaluations: int = REPLAY_MAX_EVALUATIONS  # per POST /api/alerts/replay
    replay_concurrency: int = 2  # replays computing at once; one more is answered 429


@dataclass(frozen=True)
class AlertingSetup:
    """Everything the alerting package needs from the config file."""

    alerting: AlertingConfig = AlertingConfig()
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
    """Validate the sections the collector's loader kept for us; errors name the file too."""
    given = settings.source != Settings.source  # the class default: started with no config at all
    return load_alerting(settings.sections, settings.time_zone, source=settings.source if given else None)


def load_alerting(
    sections: Mapping[str, Any], time_zone: str = "UTC", *, source: str | None = None
) -> AlertingSetup:
    """Validate the sections; ``source`` names the config they came from (None: there was none,
    so a P0 or P1 without a route is the default, not worth a warning)."""
    try:
        return _load(sections, parse_zone(sections.get("time_zone", time_zone)), source is not None)
    except ConfigError as exc:
        if source is None:
            raise
        raise ConfigError(f"{source}: {exc}") from None


def _load(doc: Mapping[str, Any], time_zone: str, configured: bool) -> AlertingSetup:
    warnings: list[str] = []
    alerting = _alerting(mapping(doc.get("alerting"), "alerting"))
    users = {
        name: parse_user(name, mapping(spec, f"users.{name}"))
        for name, spec in mapping(doc.get("users"), "users").items()
    }
    schedules = {
        name: parse_schedule(name, mapping(spec, f"schedules.{name}"), time_zone)
        for name, spec in mapping(doc.get("schedules"), "schedules").items()
    }
    policies = {
        name: parse_policy(name, mapping(spec, f"escalation_policies.{name}"), schedules)
        for name, spec in mapping(doc.get("escalation_policies"), "escalation_policies").items()
    }
    routing = dict(DEFAULT_ROUTING)
    for sev, spec in mapping(doc.get("routing"), "routing").items():
        if sev not in SEVERITIES:
            raise ConfigError(f"routing.{sev}: unknown severity (expected one of {', '.join(SEVERITIES)})")
        routing[sev] = parse_route(f"routing.{sev}", mapping(spec, f"routing.{sev}"), schedules, policies)
    owners = {
        agent: parse_owner(f"owners.{agent}", mapping(spec, f"owners.{agent}"), schedules, policies)
        for agent, spec in mapping(doc.get("owners"), "owners").items()
    }
    # A route, an owner or an escalation step that names someone who is not a user is a typo.
    for where, targets in (
        *((f"routing.{sev}", r.notify) for sev, r in routing.items()),
        *((f"owners.{agent}", r.notify) for agent, r in owners.items()),
        *(
            (f"escalation_policies.{name}.steps[{i}]", step.notify)
            for name, p in policies.items()
            for i, step in enumerate(p.steps)
        ),
    ):
        for user in targets.users if targets else ():
            if user not in users:
                close = difflib.get_close_matches(user, list(users), n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                known = ", ".join(sorted(users)) or "none"
                raise ConfigError(f"{where}.notify.users: {user!r} is not in users (defined: {known}){hint}")
    # Members without a contact are legal (they may be reached another way) but cannot be paged.
    named = {m for s in schedules.values() for layer in s.layers for m in layer.members}
    named |= {o.user for s in schedules.values() for o in s.overrides}
    named |= {u for p in policies.values() for step in p.steps for u in step.notify.users}
    named |= {u for r in (*routing.values(), *owners.values()) if r.notify for u in r.notify.users}
    for name in sorted(named):
        if name not in users or users[name].webhook is None:
            warnings.append(f"users.{name}: no webhook configured; pages for {name} cannot be delivered")
    for sev in ("P0", "P1") if configured else ():
        if sev not in routing:
            warnings.append(f"routing.{sev}: no route; {sev} alerts page nobody")
    judgement = _judgement(mapping(doc.get("quality"), "quality"), alerting.qualities)
    return AlertingSetup(
        alerting, time_zone, users, schedules, policies, routing, tuple(warnings), owners, judgement
    )


def _judgement(spec: Mapping[str, Any], rules: tuple[QualityRuleConfig, ...]) -> Judgement:
    """``quality: {default: {good_labels, min_score}}``: when an evaluation no quality rule watches
    is judged good; the rules judge their own (SPEC §18)."""
    only(spec, "quality", {"default"})
    default = mapping(spec.get("default"), "quality.default")
    only(default, "quality.default", {"good_labels", "min_score"})
    labels: tuple[str, ...] = DEFAULT_GOOD_LABELS
    if "good_labels" in default:
        labels = names(default["good_labels"], "quality.default.good_labels")
    return Judgement(
        good_labels=labels,
        min_score=number(default, "min_score", "quality.default", DEFAULT_MIN_SCORE, -1e12, 1e12),
        rules=tuple((r.evaluation, r.good_labels, r.min_score) for r in rules),
    )


def _alerting(spec: Mapping[str, Any]) -> AlertingConfig:
    key = "alerting"
    only(
        spec,
        key,
        {
            "interval", "registry", "thresholds", "rules", "repeat", "alertmanager_url", "evaluate",
            "replay_max_evaluations", "replay_concurrency", "group_by", "group_wait", "group_interval",
            "registry_per_minute",
        },
    )  # fmt: skip
    thresholds = {}
    for agent, ms in mapping(spec.get("thresholds"), f"{key}.thresholds").items():
        thresholds[agent] = number({agent: ms}, agent, f"{key}.thresholds", 0, 1e-9, 1e12)
    rules = mapping(spec.get("rules"), f"{key}.rules")
    typed: dict[str, list[Any]] = {}
    types = _rule_types()
    for name, rule in rules.items():
        rule = mapping(rule, f"{key}.rules.{name}")
        if name not in (SUCCESS_RATE, LATENCY, HEARTBEAT):
            parse = types.get(rule.get("type"))  # type: ignore[arg-type]
            if parse is None and "type" in rule:
                given = str(rule["type"])[:40]
                close = difflib.get_close_matches(given, list(types), n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                raise ConfigError(
                    f"{key}.rules.{name}.type: unknown type {given!r} (expected one of "
                    f"{', '.join(types)}){hint}"
                )
            if parse is None:
                raise ConfigError(
                    f"{key}.rules.{name}: unknown rule (expected {SUCCESS_RATE}, {LATENCY}, "
                    f"{HEARTBEAT}, or a rule with type: {', '.join(types)})"
                )
            typed.setdefault(rule["type"], []).append(parse(name, rule, f"{key}.rules.{name}"))
    return AlertingConfig(
        interval_s=duration(spec, "interval", key, 15.0, positive=True),
        registry=url(spec.get("registry"), f"{key}.registry"),
        thresholds=thresholds,
        success_rate=_success_rate(mapping(rules.get(SUCCESS_RATE), f"{key}.rules.{SUCCESS_RATE}")),
        latency=_latency(mapping(rules.get(LATENCY), f"{key}.rules.{LATENCY}")),
        heartbeat=_heartbeat(mapping(rules.get(HEARTBEAT), f"{key}.rules.{HEARTBEAT}")),
        burn_rates=tuple(typed.get("burn_rate", ())),
        edge_slos=tuple(typed.get("edge_slo", ())),
        budgets=tuple(typed.get("budget", ())),
        drifts=tuple(typed.get("topology_drift", ())),
        qualities=tuple(typed.get("quality", ())),
        repeat_s=duration(spec, "repeat", key, 1800.0),
        alertmanager_url=url(spec.get("alertmanager_url"), f"{key}.alertmanager_url"),
        evaluate=flag(spec, "evaluate", key, True),
        replay_max_evaluations=_whole(
            spec, "replay_max_evaluations", key, REPLAY_MAX_EVALUATIONS, "rule evaluations per replay", 10**9
        ),
        replay_concurrency=_whole(spec, "replay_concurrency", key, 2, "replays at once", 64),
        group_by=_group_by(spec.get("group_by", ["alertname"]), f"{key}.group_by"),
        group_wait_s=duration(spec, "group_wait", key, 0.0),
        group_interval_s=duration(spec, "group_interval", key, 60.0),
        registry_per_minute=_whole(spec, "registry_per_minute", key, 30, "calls a minute", 100_000),
    )


def _group_by(value: Any, key: str) -> tuple[str, ...]:
    """Label names (``[]``: one group per receiver and severity) or ``["..."]``: every label."""
    if value == ["..."]:
        return ("...",)
    if not isinstance(value, list) or not all(isinstance(v, str) and _LABEL.match(v) for v in value):
        raise ConfigError(
            f'{key}: expected a list of label names like [alertname, agent] or ["..."], got {value!r}'
        )
    return tuple(dict.fromkeys(value))


def _whole(spec: Mapping[str, Any], name: str, key: str, default: int, what: str, top: int) -> int:
    """``spec[name]``, a whole number from 1 to ``top`` (of ``what``), else ConfigError naming it."""
    value = spec.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise ConfigError(f"{key}.{name}: expected a whole number of {what}, 1 to {top}, got {value!r:.60}")
    return value


def _success_rate(spec: Mapping[str, Any]) -> SuccessRateRuleConfig:
    key, d = f"alerting.rules.{SUCCESS_RATE}", SuccessRateRuleConfig()
    only(spec, key, {"for", "below", "window", "min_calls", "keep_firing_for", "enabled"})
    return SuccessRateRuleConfig(
        for_s=duration(spec, "for", key, d.for_s),
        below=number(spec, "below", key, d.below, 0.0, 1.0),
        window_s=duration(spec, "window", key, d.window_s, positive=True),
        min_calls=count(spec, "min_calls", key, d.min_calls),
        keep_firing_for_s=duration(spec, "keep_firing_for", key, d.keep_firing_for_s),
        enabled=flag(spec, "enabled", key, d.enabled),
    )


def _latency(spec: Mapping[str, Any]) -> LatencyRuleConfig:
    key, d = f"alerting.rules.{LATENCY}", LatencyRuleConfig()
    only(
        spec,
        key,
        {"for", "factor", "window", "default_threshold_ms", "min_calls", "keep_firing_for", "enabled"},
    )
    return LatencyRuleConfig(
        for_s=duration(spec, "for", key, d.for_s),
        factor=number(spec, "factor", key, d.factor, 1e-9, 1e6),
        window_s=duration(spec, "window", key, d.window_s, positive=True),
        default_threshold_ms=number(spec, "default_threshold_ms", key, d.default_threshold_ms, 1e-9, 1e12),
        min_calls=count(spec, "min_calls", key, d.min_calls),
        keep_firing_for_s=duration(spec, "keep_firing_for", key, d.keep_firing_for_s),
        enabled=flag(spec, "enabled", key, d.enabled),
    )


def _heartbeat(spec: Mapping[str, Any]) -> HeartbeatRuleConfig:
    key, d = f"alerting.rules.{HEARTBEAT}", HeartbeatRuleConfig()
    only(spec, key, {"for", "after", "keep_firing_for", "enabled"})
    return HeartbeatRuleConfig(
        for_s=duration(spec, "for", key, d.for_s),
        after_s=duration(spec, "after", key, d.after_s, positive=True),
        keep_firing_for_s=duration(spec, "keep_firing_for", key, d.keep_firing_for_s),
        enabled=flag(spec, "enabled", key, d.enabled),
    )


def _burn_rate(name: str, spec: Mapping[str, Any], key: str) -> BurnRateRuleConfig:
    only(
        spec,
        key,
        {"type", "objective", "severity", "windows", "min_calls", "for", "keep_firing_for", "enabled"},
    )
    d = BurnRateRuleConfig(name)
    return BurnRateRuleConfig(
        name=name,
        objective=number(spec, "objective", key, d.objective, 0.0, 0.999999),
        severity=severity(spec, key, d.severity),
        windows=parse_windows(spec, key, d.windows),
        min_calls=count(spec, "min_calls", key, d.min_calls),
        for_s=duration(spec, "for", key, d.for_s),
        keep_firing_for_s=duration(spec, "keep_firing_for", key, d.keep_firing_for_s),
        enabled=flag(spec, "enabled", key, d.enabled),
    )


def _rule_types() -> dict[str, Callable[[str, Mapping[str, Any], str], Any]]:
    """``type:`` → the parser of that rule's config (each rule module owns its own)."""
    return {
        "burn_rate": _burn_rate,
        "edge_slo": parse_edge_slo,
        "budget": parse_budget,
        "topology_drift": parse_drift,
        "quality": parse_quality,
    }
