"""The config sections the alerting package reads (``alerting``, ``users``, ``schedules``,
``escalation_policies``, ``routing``, ``owners``, ``quality``), read once into a typed tree: the
rules (``rules``), on-call (``oncall``) and the ``alerting`` section itself (``alerting``).
``config.load`` reads them with the collector's own keys; ``alerting.config`` puts them together.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import Field
from pydantic.dataclasses import dataclass

from reach_collector.config_values import SECTION, Invalid, Section, as_mapping, read, section_keys, zone
from reach_collector.sections.alerting import AlertingConfig, Quality
from reach_collector.sections.oncall import EscalationPolicy, Owner, Route, ScheduleSpec, User, named
from reach_collector.sections.rules import SEVERITIES

__all__ = ["NAMES", "Sections"]


def _severities(value: Any) -> Any:
    doc = as_mapping(value)
    for sev in doc:
        if sev not in SEVERITIES:
            raise Invalid(f"unknown severity (expected one of {', '.join(SEVERITIES)})", at=sev)
    return doc


@dataclass(frozen=True, config=SECTION)
class Sections(Section):
    """The alerting package's sections of a config; ``time_zone`` (the config's, or null) is the
    zone of schedules that name none."""

    alerting: AlertingConfig = Field(default_factory=AlertingConfig)
    users: Annotated[dict[str, User], named(User)] = Field(default_factory=dict)
    schedules: Annotated[dict[str, ScheduleSpec], read(as_mapping)] = Field(default_factory=dict)
    escalation_policies: Annotated[dict[str, EscalationPolicy], named(EscalationPolicy)] = Field(
        default_factory=dict
    )
    routing: Annotated[dict[str, Route], read(_severities)] = Field(default_factory=dict)
    owners: Annotated[dict[str, Owner], read(as_mapping)] = Field(default_factory=dict)
    quality: Quality = Field(default_factory=Quality)
    time_zone: Annotated[str | None, read(zone)] = None


# The config's top-level keys these are (``time_zone`` is the collector's own, lent to them).
NAMES: Final = section_keys(Sections) - {"time_zone"}
