"""The ``alerting.rules`` section, typed: each rule's config (the fixed P0/P1/P2 rules by their names,
the others by ``type:``) with its defaults, and what they are made of (severities, burn windows).
The rule modules (``alerting.rules``) evaluate these; they read no config themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import Field, WrapValidator, model_validator
from pydantic.dataclasses import dataclass

from reach_collector.config_values import (
    SECTION,
    Invalid,
    Named,
    Section,
    as_mapping,
    between,
    count,
    did_you_mean,
    duration,
    flag,
    invalid_all,
    names,
    one_of,
    optional,
    positive_duration,
    read,
    read_each,
    validate_here,
)

__all__ = [
    "HEARTBEAT",
    "INFO",
    "LATENCY",
    "RULE_TYPES",
    "SEVERITIES",
    "SUCCESS_RATE",
    "WARNING",
    "WORKBOOK_WINDOWS",
    "BudgetRuleConfig",
    "BurnRateRuleConfig",
    "BurnWindow",
    "DriftRuleConfig",
    "EdgeSLORuleConfig",
    "HeartbeatRuleConfig",
    "LatencyRuleConfig",
    "QualityRuleConfig",
    "RuleConfig",
    "Rules",
    "SuccessRateRuleConfig",
]

SEVERITIES: Final = ("P0", "P1", "P2")
SUCCESS_RATE: Final = "ReachSuccessRateLow"
LATENCY: Final = "ReachP99LatencyHigh"
HEARTBEAT: Final = "ReachAgentHeartbeatLost"
WARNING: Final = "warning"  # a severity with no route: recorded and shown, never paged
INFO: Final = "info"  # a severity with no route: an event, recorded and shown, never paged

Duration = Annotated[float, read(duration)]
Positive = Annotated[float, read(positive_duration)]
Count = Annotated[int, read(count)]
Flag = Annotated[bool, read(flag)]
Objective = Annotated[float, read(between(0.0, 0.999999))]
Severity = Annotated[str, read(one_of(*SEVERITIES))]


def _for(default: float) -> Any:
    return Field(default=default, validation_alias="for")


def _keep_firing() -> Any:
    return Field(default=0.0, validation_alias="keep_firing_for")


@dataclass(frozen=True, config=SECTION)
class BurnWindow(Section):
    long_s: Annotated[float, read(positive_duration), Field(validation_alias="long")]
    short_s: Annotated[float, read(positive_duration), Field(validation_alias="short")]
    factor: Annotated[float, read(between(1e-9, 1e6))]


# SRE Workbook, table 5-8: 2% of a 30-day budget in 1h, 5% in 6h, 10% in 3d.
WORKBOOK_WINDOWS: Final = (
    BurnWindow(3600.0, 300.0, 14.4),
    BurnWindow(6 * 3600.0, 1800.0, 6.0),
    BurnWindow(3 * 86400.0, 6 * 3600.0, 1.0),
)


def _windows(value: Any) -> Any:
    """``windows: [{long, short, factor}, ...]`` of a burn-rate test (default: the workbook's)."""
    if not isinstance(value, (list, tuple)) or not value:
        raise Invalid("expected a non-empty list of {long, short, factor}")
    return value


Windows = Annotated[tuple[BurnWindow, ...], read(_windows)]


@dataclass(frozen=True, config=SECTION)
class SuccessRateRuleConfig(Section):
    for_s: Duration = _for(300.0)
    below: Annotated[float, read(between(0.0, 1.0))] = 0.5
    window_s: Positive = Field(default=60.0, validation_alias="window")
    min_calls: Count = 5
    keep_firing_for_s: Duration = _keep_firing()
    enabled: Flag = True


@dataclass(frozen=True, config=SECTION)
class LatencyRuleConfig(Section):
    for_s: Duration = _for(180.0)
    factor: Annotated[float, read(between(1e-9, 1e6))] = 1.5
    window_s: Positive = Field(default=60.0, validation_alias="window")
    default_threshold_ms: Annotated[float, read(between(1e-9, 1e12))] = 10000.0
    min_calls: Count = 5
    keep_firing_for_s: Duration = _keep_firing()
    enabled: Flag = True


@dataclass(frozen=True, config=SECTION)
class HeartbeatRuleConfig(Section):
    for_s: Duration = _for(0.0)
    after_s: Positive = Field(default=60.0, validation_alias="after")
    keep_firing_for_s: Duration = _keep_firing()
    enabled: Flag = True


class _Typed(Named):
    """A rule with a ``type:``; its name is its key under ``rules`` (``Rules`` hands it on)."""

    other_keys = frozenset({"type"})


@dataclass(frozen=True, config=SECTION)
class BurnRateRuleConfig(_Typed):
    """The optional multi-window multi-burn-rate rule on a success-rate SLO (``type: burn_rate``)."""

    name: str
    objective: Objective = 0.99
    severity: Severity = "P1"
    windows: Windows = WORKBOOK_WINDOWS
    min_calls: Count = 5
    for_s: Duration = _for(0.0)
    keep_firing_for_s: Duration = _keep_firing()
    enabled: Flag = True


@dataclass(frozen=True, config=SECTION)
class EdgeSLORuleConfig(_Typed):
    """``type: edge_slo`` (SPEC §15): an objective on each handoff edge's commit rate."""

    name: str
    objective: Objective = 0.99
    severity: Severity = "P1"
    windows: Windows = WORKBOOK_WINDOWS
    min_handoffs: Count = 5  # a window with fewer taken-on handoffs is no data
    for_s: Duration = _for(0.0)
    keep_firing_for_s: Duration = _keep_firing()
    enabled: Flag = True


def _tokens(value: Any) -> int:
    return int(between(1, 1e15)(value))


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(f"expected one of {', '.join((*SEVERITIES, WARNING))}, got {value!r}")
    return value


@dataclass(frozen=True, config=SECTION)
class BudgetRuleConfig(_Typed):
    """``type: budget`` (SPEC §15): exactly one of ``limit_usd`` and ``limit_tokens``."""

    name: str
    per: Annotated[str, read(one_of("agent", "user", "conversation"))] = "agent"
    limit_usd: Annotated[float | None, read(optional(between(1e-9, 1e12)))] = None
    limit_tokens: Annotated[int | None, read(optional(_tokens))] = None
    window_s: Positive = Field(default=86400.0, validation_alias="window")
    severity: Severity = "P1"
    warn: Flag = True
    # one of SEVERITIES or WARNING: checked with the name, which its message uses
    warn_severity: Annotated[str, read(_text)] = WARNING
    min_elapsed_s: Annotated[float | None, read(optional(positive_duration))] = Field(
        default=None, validation_alias="min_elapsed"
    )  # None: window / 24
    for_s: Duration = _for(0.0)
    keep_firing_for_s: Duration = _keep_firing()
    enabled: Flag = True

    @model_validator(mode="after")
    def _one_limit(self) -> BudgetRuleConfig:
        if (self.limit_usd is None) == (self.limit_tokens is None):
            raise Invalid("set exactly one of limit_usd and limit_tokens")
        if self.warn_severity not in (*SEVERITIES, WARNING):
            allowed = ", ".join((*SEVERITIES, WARNING))
            raise Invalid(
                f"expected one of {allowed}, got {self.warn_severity!r} (the severity of the warning "
                f"{self.name}Projected; {self.name}.severity: expected one of {', '.join(SEVERITIES)} "
                "is the spent alert's)",
                at="warn_severity",
            )
        return self


@dataclass(frozen=True, config=SECTION)
class DriftRuleConfig(_Typed):
    """``type: topology_drift`` (SPEC §15): a new handoff edge or cycle is an event."""

    name: str = "ReachTopologyChanged"
    baseline_s: Positive = Field(default=7 * 86400.0, validation_alias="baseline")
    window_s: Positive = Field(default=3600.0, validation_alias="window")
    severity: Annotated[str, read(one_of(*SEVERITIES, INFO))] = INFO
    enabled: Flag = True


def _evaluation(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected the evaluation's name, got {value!r}")
    return value


@dataclass(frozen=True, config=SECTION)
class QualityRuleConfig(_Typed):
    """``type: quality`` (SPEC §18): an objective on the share of an evaluation's verdicts judged
    good, by ``good_labels`` or by ``min_score`` (one of them)."""

    name: str
    evaluation: Annotated[str, read(_evaluation)]
    good_labels: Annotated[tuple[str, ...], read(names)] = ()
    min_score: Annotated[float | None, read(optional(between(-1e12, 1e12)))] = None
    objective: Objective = 0.95
    severity: Severity = "P1"
    windows: Windows = WORKBOOK_WINDOWS
    min_evaluations: Count = 5
    for_s: Duration = _for(0.0)
    keep_firing_for_s: Duration = _keep_firing()
    enabled: Flag = True

    @model_validator(mode="after")
    def _one_judge(self) -> QualityRuleConfig:
        if bool(self.good_labels) == (self.min_score is not None):
            raise Invalid("give good_labels (the labels judged good) or min_score, one of them")
        return self


_BUILT_IN: Final[Mapping[str, type[Section]]] = {
    SUCCESS_RATE: SuccessRateRuleConfig,
    LATENCY: LatencyRuleConfig,
    HEARTBEAT: HeartbeatRuleConfig,
}
RULE_TYPES: Final[Mapping[str, type[Named]]] = {
    "burn_rate": BurnRateRuleConfig,
    "edge_slo": EdgeSLORuleConfig,
    "budget": BudgetRuleConfig,
    "topology_drift": DriftRuleConfig,
    "quality": QualityRuleConfig,
}
RuleConfig = (
    SuccessRateRuleConfig
    | LatencyRuleConfig
    | HeartbeatRuleConfig
    | BurnRateRuleConfig
    | EdgeSLORuleConfig
    | BudgetRuleConfig
    | DriftRuleConfig
    | QualityRuleConfig
)


def _rule(name: str, value: Any) -> Any:
    """One rule, read into its config: a fixed rule by its name, any other by its ``type:``."""
    spec = as_mapping(value)
    if name in _BUILT_IN:
        return validate_here(_BUILT_IN[name], spec)
    kind = RULE_TYPES.get(spec.get("type"))  # type: ignore[arg-type]
    if kind is None:
        raise invalid_all([*_times(spec), _unknown(spec)], spec)
    return kind.under(name, spec)  # its name is its key


def _unknown(spec: Mapping[str, Any]) -> tuple[str, Invalid]:
    """Why a rule that is no fixed one has no config: its type is unknown (the near one named), or
    it has none."""
    if "type" in spec:
        given = str(spec["type"])[:40]
        hint = did_you_mean(given, RULE_TYPES)
        return "type", Invalid(f"unknown type {given!r} (expected one of {', '.join(RULE_TYPES)}){hint}")
    expected = f"{SUCCESS_RATE}, {LATENCY}, {HEARTBEAT}, or a rule with type: {', '.join(RULE_TYPES)}"
    return "", Invalid(f"unknown rule (expected {expected})")


def _times(spec: Mapping[str, Any]) -> list[tuple[str, Invalid]]:
    """The problems of the times every rule may have (``for``, ``window``, ...), reported even when
    the rule's kind is unknown: a misspelt type hides no misspelt time."""
    problems = []
    for key in ("for", "window", "keep_firing_for", "after"):
        try:
            if key in spec:
                duration(spec[key])
        except Invalid as exc:
            problems.append((key, exc))
    return problems


Rules = Annotated[dict[str, RuleConfig], WrapValidator(lambda value, _: read_each(value, _rule))]
