"""The ``users``, ``schedules``, ``escalation_policies``, ``routing`` and ``owners`` sections (§4,
§10), typed. What one entry says is checked here; whether the schedules, policies and users it
names exist is checked where the sections meet (``alerting.oncall.config``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final

from pydantic import Field, WrapValidator, model_validator
from pydantic.dataclasses import dataclass

from reach_collector.config_values import (
    SECTION,
    Invalid,
    Named,
    Section,
    as_mapping,
    flag,
    listed,
    name,
    names,
    optional,
    positive_duration,
    read,
    read_each,
    stamp,
    url,
    zone,
)

__all__ = [
    "DEFAULT_ROUTING",
    "EscalationPolicy",
    "EscalationStep",
    "LayerSpec",
    "OverrideSpec",
    "Owner",
    "Route",
    "ScheduleSpec",
    "Targets",
    "User",
    "named",
]

Stamp = Annotated[datetime, read(stamp)]
Name = Annotated[str, read(name)]


def _name_of(what: str) -> Any:
    """The reader of the name of a ``what`` defined elsewhere in the config, or null."""

    def reader(value: Any) -> str | None:
        if value is not None and not isinstance(value, str):
            raise Invalid(f"expected {what}'s name, got {value!r}")
        return value

    return read(reader)


ScheduleName = Annotated[str | None, _name_of("a schedule")]
PolicyName = Annotated[str | None, _name_of("an escalation policy")]


@dataclass(frozen=True, config=SECTION)
class Targets(Section):
    """Who a step or route notifies: the on-call person of a schedule and/or named users."""

    schedule: ScheduleName = None
    users: Annotated[tuple[str, ...], read(names)] = ()

    @model_validator(mode="after")
    def _someone(self) -> Targets:
        if self.schedule is None and not self.users:
            raise Invalid("expected a schedule or users to notify")
        return self


@dataclass(frozen=True, config=SECTION)
class User(Named):
    name: str
    webhook: Annotated[str | None, read(url)] = None


@dataclass(frozen=True, config=SECTION)
class EscalationStep(Section):
    notify: Targets
    escalate_after_s: Annotated[float | None, read(optional(positive_duration))] = Field(
        default=None, validation_alias="escalate_after"
    )  # None on the last step


def _steps(value: Any) -> Any:
    steps = listed(value)
    if not steps:
        raise Invalid("expected at least one step")
    return steps


@dataclass(frozen=True, config=SECTION)
class EscalationPolicy(Named):
    name: str
    steps: Annotated[tuple[EscalationStep, ...], read(_steps)]

    @model_validator(mode="after")
    def _each_step_escalates(self) -> EscalationPolicy:
        for i, step in enumerate(self.steps[:-1]):
            if step.escalate_after_s is None:
                raise Invalid("required on every step but the last", at=f"steps[{i}].escalate_after")
        return self


def _action(value: Any) -> str | None:
    if value not in (None, "deregister", "none"):
        raise Invalid(f"expected deregister or none, got {value!r}")
    return None if value == "none" else value


@dataclass(frozen=True, config=SECTION)
class Route(Section):
    """What an alert of a severity does: page through a policy or notify targets, and/or an action;
    ``page`` defaults to whether it names anyone."""

    escalation_policy: PolicyName = None
    notify: Targets | None = None
    action: Annotated[str | None, read(_action)] = None  # "deregister" or None
    page: Annotated[bool | None, read(optional(flag))] = None  # None: whether it names anyone

    @model_validator(mode="after")
    def _one_way(self) -> Route:
        if self.escalation_policy is not None and self.notify is not None:
            raise Invalid("use either escalation_policy or notify, not both")
        if self.page is None:
            object.__setattr__(self, "page", self.escalation_policy is not None or self.notify is not None)
        return self


DEFAULT_ROUTING: Final = {"P2": Route(action="deregister", page=False)}


@dataclass(frozen=True, config=SECTION)
class Owner(Section):
    """An agent's owner (``owners.<agent>``): a schedule and/or users, or an escalation policy —
    the route its owner-routed alerts take instead of their severity's."""

    schedule: ScheduleName = None
    users: Annotated[tuple[str, ...], read(names)] = ()
    escalation_policy: PolicyName = None

    @model_validator(mode="after")
    def _one_way(self) -> Owner:
        if self.escalation_policy is not None and (self.schedule is not None or self.users):
            raise Invalid("use either escalation_policy or schedule/users, not both")
        if self.escalation_policy is None and self.schedule is None and not self.users:
            raise Invalid("expected a schedule or users to notify")
        return self

    @property
    def route(self) -> Route:
        if self.escalation_policy is not None:
            return Route(escalation_policy=self.escalation_policy)
        return Route(notify=Targets(self.schedule, self.users) if self.users else Targets(self.schedule))


@dataclass(frozen=True, config=SECTION)
class LayerSpec(Section):
    """A rotation as written: start and end are wall-clock times in the schedule's zone, or carry
    an offset (``alerting.oncall.config`` places them in the zone)."""

    members: Annotated[tuple[str, ...], read(names)]
    start: Stamp | None = None
    name: Annotated[str | None, read(str)] = None  # None: layer<index>
    length_s: Annotated[float, read(positive_duration)] = Field(
        default=7 * 86400.0, validation_alias="length"
    )
    end: Annotated[datetime | None, read(optional(stamp))] = None

    @model_validator(mode="after")
    def _starts(self) -> LayerSpec:
        if self.start is None:
            raise Invalid("required (a date-time like 2026-01-05T09:00:00)", at="start")
        return self


@dataclass(frozen=True, config=SECTION)
class OverrideSpec(Section):
    user: Name
    start: Stamp
    end: Stamp


@dataclass(frozen=True, config=SECTION)
class ScheduleSpec(Section):
    layers: Annotated[tuple[LayerSpec, ...], read(listed)] = ()
    overrides: Annotated[tuple[OverrideSpec, ...], read(listed)] = ()
    time_zone: Annotated[str | None, read(zone)] = None  # None: the config's time_zone


def named(cls: type[Named]) -> WrapValidator:
    """A mapping of entries named by their keys (users, policies): each is ``cls`` given its key as
    its ``name`` (``Named.under``)."""

    def entry(key: str, value: Any) -> Any:
        return cls.under(key, as_mapping(value))

    return WrapValidator(lambda value, _: read_each(value, entry))
