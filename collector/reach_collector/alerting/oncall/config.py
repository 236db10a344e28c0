"""Validation of ``users``, ``schedules``, ``escalation_policies`` and ``routing`` (§4, §10)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from reach_collector.alerting._checks import (
    duration,
    flag,
    list_of,
    mapping,
    names,
    only,
    required,
    url,
    wall_time,
)
from reach_collector.alerting.oncall.rotation import Layer, Override, Schedule
from reach_collector.config import ConfigError, parse_zone

__all__ = [
    "DEFAULT_ROUTING",
    "EscalationPolicy",
    "EscalationStep",
    "Route",
    "Targets",
    "User",
    "parse_owner",
    "parse_policy",
    "parse_route",
    "parse_schedule",
    "parse_user",
]


@dataclass(frozen=True)
class User:
    name: str
    webhook: str | None = None


@dataclass(frozen=True)
class Targets:
    """Who a step or route notifies: the on-call person of a schedule and/or named users."""

    schedule: str | None = None
    users: tuple[str, ...] = ()


@dataclass(frozen=True)
class EscalationStep:
    notify: Targets
    escalate_after_s: float | None = None  # None on the last step


@dataclass(frozen=True)
class EscalationPolicy:
    name: str
    steps: tuple[EscalationStep, ...]


@dataclass(frozen=True)
class Route:
    escalation_policy: str | None = None
    notify: Targets | None = None
    action: str | None = None  # "deregister" or None
    page: bool = True


DEFAULT_ROUTING: Final[Mapping[str, Route]] = {"P2": Route(action="deregister", page=False)}


def parse_user(name: str, spec: Mapping[str, Any]) -> User:
    only(spec, f"users.{name}", {"webhook"})
    return User(name, url(spec.get("webhook"), f"users.{name}.webhook"))


def parse_schedule(name: str, spec: Mapping[str, Any], default_zone: str) -> Schedule:
    key = f"schedules.{name}"
    only(spec, key, {"layers", "overrides", "time_zone"})
    zone = parse_zone(spec["time_zone"], f"{key}.time_zone") if "time_zone" in spec else default_zone
    layers = []
    for i, layer in enumerate(list_of(spec.get("layers"), f"{key}.layers")):
        lkey = f"{key}.layers[{i}]"
        layer = mapping(layer, lkey)
        only(layer, lkey, {"name", "start", "length", "members", "end"})
        if "start" not in layer:
            raise ConfigError(f"{lkey}.start: required (a date-time like 2026-01-05T09:00:00)")
        start = wall_time(layer["start"], f"{lkey}.start", zone)
        end = wall_time(layer["end"], f"{lkey}.end", zone) if layer.get("end") is not None else None
        if end is not None and end <= start:
            raise ConfigError(f"{lkey}.end: must be after start")
        layers.append(
            Layer(
                name=str(layer.get("name", f"layer{i}")),
                start=start,
                length_s=duration(layer, "length", lkey, 7 * 86400.0, positive=True),
                members=names(layer.get("members"), f"{lkey}.members"),
                end=end,
            )
        )
    overrides = []
    for i, override in enumerate(list_of(spec.get("overrides"), f"{key}.overrides")):
        okey = f"{key}.overrides[{i}]"
        override = mapping(override, okey)
        only(override, okey, {"user", "start", "end"})
        required(override, okey, ("user", "start", "end"))
        user = names([override["user"]] if isinstance(override["user"], str) else None, f"{okey}.user")[0]
        start = wall_time(override["start"], f"{okey}.start", zone)
        end = wall_time(override["end"], f"{okey}.end", zone)
        if end <= start:
            raise ConfigError(f"{okey}.end: must be after start")
        overrides.append(Override(user, start, end))
    return Schedule(name, tuple(layers), tuple(overrides), zone)


def _targets(spec: Any, key: str, schedules: Mapping[str, Schedule]) -> Targets:
    spec = mapping(spec, key)
    only(spec, key, {"schedule", "users"})
    schedule = spec.get("schedule")
    if schedule is not None and (not isinstance(schedule, str) or schedule not in schedules):
        raise ConfigError(f"{key}.schedule: no schedule named {schedule!r} under schedules")
    users = names(spec["users"], f"{key}.users") if "users" in spec else ()
    if schedule is None and not users:
        raise ConfigError(f"{key}: expected a schedule or users to notify")
    return Targets(schedule, users)


def parse_policy(name: str, spec: Mapping[str, Any], schedules: Mapping[str, Schedule]) -> EscalationPolicy:
    key = f"escalation_policies.{name}"
    only(spec, key, {"steps"})
    raw = list_of(spec.get("steps"), f"{key}.steps")
    if not raw:
        raise ConfigError(f"{key}.steps: expected at least one step")
    steps = []
    for i, step in enumerate(raw):
        skey = f"{key}.steps[{i}]"
        step = mapping(step, skey)
        only(step, skey, {"notify", "escalate_after"})
        required(step, skey, ("notify",))
        after = duration(step, "escalate_after", skey, -1.0, positive=True)
        if after < 0 and i < len(raw) - 1:
            raise ConfigError(f"{skey}.escalate_after: required on every step but the last")
        steps.append(
            EscalationStep(
                _targets(step["notify"], f"{skey}.notify", schedules), after if after >= 0 else None
            )
        )
    return EscalationPolicy(name, tuple(steps))


def parse_route(
    key: str,
    spec: Mapping[str, Any],
    schedules: Mapping[str, Schedule],
    policies: Mapping[str, EscalationPolicy],
) -> Route:
    only(spec, key, {"escalation_policy", "notify", "action", "page"})
    policy = spec.get("escalation_policy")
    if policy is not None and (not isinstance(policy, str) or policy not in policies):
        raise ConfigError(f"{key}.escalation_policy: no policy named {policy!r} under escalation_policies")
    notify = _targets(spec["notify"], f"{key}.notify", schedules) if spec.get("notify") is not None else None
    if policy is not None and notify is not None:
        raise ConfigError(f"{key}: use either escalation_policy or notify, not both")
    action = spec.get("action")
    if action not in (None, "deregister", "none"):
        raise ConfigError(f"{key}.action: expected deregister or none, got {action!r}")
    return Route(
        escalation_policy=policy,
        notify=notify,
        action=None if action == "none" else action,
        page=flag(spec, "page", key, policy is not None or notify is not None),
    )


def parse_owner(
    key: str,
    spec: Mapping[str, Any],
    schedules: Mapping[str, Schedule],
    policies: Mapping[str, EscalationPolicy],
) -> Route:
    """An agent's owner (``owners.<agent>``): a schedule and/or users, or an escalation policy —
    the route its owner-routed alerts take instead of their severity's."""
    only(spec, key, {"schedule", "users", "escalation_policy"})
    policy = spec.get("escalation_policy")
    if policy is None:
        return Route(notify=_targets(spec, key, schedules))
    if not isinstance(policy, str) or policy not in policies:
        raise ConfigError(f"{key}.escalation_policy: no policy named {policy!r} under escalation_policies")
    if "schedule" in spec or "users" in spec:
        raise ConfigError(f"{key}: use either escalation_policy or schedule/users, not both")
    return Route(escalation_policy=policy)
