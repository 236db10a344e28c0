"""The ``alerting`` section (§4, §10) and ``quality.default`` (SPEC §18), typed, with every default."""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

from pydantic import Field
from pydantic.dataclasses import dataclass

from reach_collector.config_values import (
    SECTION,
    Invalid,
    Section,
    as_mapping,
    between,
    duration,
    flag,
    names,
    optional,
    positive_duration,
    read,
    url,
)
from reach_collector.sections.rules import (
    HEARTBEAT,
    LATENCY,
    SUCCESS_RATE,
    BudgetRuleConfig,
    BurnRateRuleConfig,
    DriftRuleConfig,
    EdgeSLORuleConfig,
    HeartbeatRuleConfig,
    LatencyRuleConfig,
    QualityRuleConfig,
    Rules,
    SuccessRateRuleConfig,
)

__all__ = ["REPLAY_MAX_EVALUATIONS", "AlertingConfig", "Quality", "QualityDefault"]

# Rule evaluations one replay request may cost (steps × rules): a long range wants a larger step.
REPLAY_MAX_EVALUATIONS: Final = 20_000
_LABEL: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a Prometheus label name


def _group_by(value: Any) -> tuple[str, ...]:
    """Label names (``[]``: one group per receiver and severity) or ``["..."]``: every label."""
    if value in (["..."], ("...",)):
        return ("...",)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and _LABEL.match(v) for v in value):
        raise Invalid(f'expected a list of label names like [alertname, agent] or ["..."], got {value!r}')
    return tuple(dict.fromkeys(value))


def _up_to(top: int, what: str) -> Any:
    """The reader of a whole number from 1 to ``top`` (of ``what``)."""

    def reader(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise Invalid(f"expected a whole number of {what}, 1 to {top}, got {value!r:.60}")
        return value

    return read(reader)


Threshold = Annotated[float, read(between(1e-9, 1e12))]
Duration = Annotated[float, read(duration)]


@dataclass(frozen=True, config=SECTION)
class AlertingConfig(Section):
    interval_s: Annotated[float, read(positive_duration)] = Field(default=15.0, validation_alias="interval")
    registry: Annotated[str | None, read(url)] = None
    thresholds: Annotated[dict[str, Threshold], read(as_mapping)] = Field(default_factory=dict)
    rules: Rules = Field(default_factory=dict)
    repeat_s: Duration = Field(default=1800.0, validation_alias="repeat")
    alertmanager_url: Annotated[str | None, read(url)] = None
    # Pages grouped as Alertmanager groups them (grouping.py). group_wait 0: the alerts one evaluation
    # fires go in one message at once (P0 pages at once); group_interval bounds a group's later news.
    group_by: Annotated[tuple[str, ...], read(_group_by)] = ("alertname",)
    group_wait_s: Annotated[float, read(duration)] = Field(default=0.0, validation_alias="group_wait")
    group_interval_s: Annotated[float, read(duration)] = Field(
        default=60.0, validation_alias="group_interval"
    )
    # deregistration calls a minute at most; the rest wait their turn
    registry_per_minute: Annotated[int, _up_to(100_000, "calls a minute")] = 30
    # False: this collector evaluates no rules (another one does, or two push to an Alertmanager
    # cluster that deduplicates: SPEC §16); it still serves the shared alert history.
    evaluate: Annotated[bool, read(flag)] = True
    # per POST /api/alerts/replay
    replay_max_evaluations: Annotated[int, _up_to(10**9, "rule evaluations per replay")] = (
        REPLAY_MAX_EVALUATIONS
    )
    replay_concurrency: Annotated[int, _up_to(64, "replays at once")] = 2  # one more is answered 429

    @property
    def success_rate(self) -> SuccessRateRuleConfig:
        rule = self.rules.get(SUCCESS_RATE)
        return rule if isinstance(rule, SuccessRateRuleConfig) else SuccessRateRuleConfig()

    @property
    def latency(self) -> LatencyRuleConfig:
        rule = self.rules.get(LATENCY)
        return rule if isinstance(rule, LatencyRuleConfig) else LatencyRuleConfig()

    @property
    def heartbeat(self) -> HeartbeatRuleConfig:
        rule = self.rules.get(HEARTBEAT)
        return rule if isinstance(rule, HeartbeatRuleConfig) else HeartbeatRuleConfig()

    @property
    def burn_rates(self) -> tuple[BurnRateRuleConfig, ...]:
        return tuple(r for r in self.rules.values() if isinstance(r, BurnRateRuleConfig))

    @property
    def edge_slos(self) -> tuple[EdgeSLORuleConfig, ...]:
        return tuple(r for r in self.rules.values() if isinstance(r, EdgeSLORuleConfig))

    @property
    def budgets(self) -> tuple[BudgetRuleConfig, ...]:
        return tuple(r for r in self.rules.values() if isinstance(r, BudgetRuleConfig))

    @property
    def drifts(self) -> tuple[DriftRuleConfig, ...]:
        return tuple(r for r in self.rules.values() if isinstance(r, DriftRuleConfig))

    @property
    def qualities(self) -> tuple[QualityRuleConfig, ...]:
        return tuple(r for r in self.rules.values() if isinstance(r, QualityRuleConfig))


@dataclass(frozen=True, config=SECTION)
class QualityDefault(Section):
    """When an evaluation no quality rule watches is judged good (None: ``query.judged``'s default)."""

    good_labels: Annotated[tuple[str, ...] | None, read(optional(names))] = None
    min_score: Annotated[float | None, read(optional(between(-1e12, 1e12)))] = None


@dataclass(frozen=True, config=SECTION)
class Quality(Section):
    default: QualityDefault = Field(default_factory=QualityDefault)
