"""On call as the alerting package runs it, from the typed ``users``, ``schedules``,
``escalation_policies``, ``routing`` and ``owners`` sections (``sections.oncall``): schedules placed
in their zones, and every schedule, policy and user a route, an owner or a step names, found."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from reach_collector.alerting.oncall.rotation import Layer, Override, Schedule
from reach_collector.config_values import ConfigError, did_you_mean
from reach_collector.sections.oncall import (
    DEFAULT_ROUTING,
    EscalationPolicy,
    EscalationStep,
    Route,
    ScheduleSpec,
    Targets,
    User,
)

__all__ = [
    "DEFAULT_ROUTING",
    "EscalationPolicy",
    "EscalationStep",
    "Route",
    "Targets",
    "User",
    "check_references",
    "schedule",
]


def wall_time(stamp: datetime, zone: str) -> datetime:
    """A start/end as the schedule's wall clock: naive is already; with an offset it is converted."""
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(timezone.utc).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    return stamp


def schedule(name: str, spec: ScheduleSpec, default_zone: str) -> Schedule:
    """``schedules.<name>`` in its zone (its own ``time_zone``, else the config's)."""
    key = f"schedules.{name}"
    zone = spec.time_zone or default_zone
    layers = []
    for i, layer in enumerate(spec.layers):
        assert layer.start is not None  # LayerSpec requires it
        start = wall_time(layer.start, zone)
        end = wall_time(layer.end, zone) if layer.end is not None else None
        if end is not None and end <= start:
            raise ConfigError(f"{key}.layers[{i}].end: must be after start")
        layers.append(Layer(layer.name or f"layer{i}", start, layer.length_s, layer.members, end))
    overrides = []
    for i, override in enumerate(spec.overrides):
        start, end = wall_time(override.start, zone), wall_time(override.end, zone)
        if end <= start:
            raise ConfigError(f"{key}.overrides[{i}].end: must be after start")
        overrides.append(Override(override.user, start, end))
    return Schedule(name, tuple(layers), tuple(overrides), zone)


def check_references(
    users: Mapping[str, User],
    schedules: Mapping[str, Schedule],
    policies: Mapping[str, EscalationPolicy],
    routing: Mapping[str, Route],
    owners: Mapping[str, Route],
) -> None:
    """Every schedule, policy and user named where alerts go exists (a name that does not is a
    typo): a ConfigError naming the key otherwise. An owner's targets are its own keys."""
    steps = [
        (f"escalation_policies.{name}.steps[{i}].notify", step.notify)
        for name, policy in policies.items()
        for i, step in enumerate(policy.steps)
    ]
    routes = [(f"routing.{sev}", f"routing.{sev}.notify", r) for sev, r in routing.items()]
    routes += [(f"owners.{agent}", f"owners.{agent}", r) for agent, r in owners.items()]
    for key, notify in steps:
        _schedule_exists(f"{key}.schedule", notify, schedules)
    for key, at, route in routes:
        if route.escalation_policy is not None and route.escalation_policy not in policies:
            raise ConfigError(
                f"{key}.escalation_policy: no policy named {route.escalation_policy!r} under "
                "escalation_policies"
            )
        _schedule_exists(f"{at}.schedule", route.notify, schedules)
    notified = [(f"{key}.notify", r.notify) for key, _at, r in routes if r.notify is not None]
    for key, notify in (*notified, *steps):
        for user in notify.users:
            if user not in users:
                known = ", ".join(sorted(users)) or "none"
                hint = did_you_mean(user, users)
                raise ConfigError(f"{key}.users: {user!r} is not in users (defined: {known}){hint}")


def _schedule_exists(key: str, notify: Targets | None, schedules: Mapping[str, Schedule]) -> None:
    if notify is not None and notify.schedule is not None and notify.schedule not in schedules:
        raise ConfigError(f"{key}: no schedule named {notify.schedule!r} under schedules")
