"""Which of the application's own functions to wrap: ``REACH_OTEL_*`` variables or ``reach-otel.toml``.

Pure parsing: a target is ``module:qualname`` where any dotted part of the qualname may hold ``*``
wildcards (``app.tools:*``, ``app.routing:transfer_to_*``, ``app.agents:BaseAgent.run``); handoff
exceptions are ``module:Class@attr``. Variables win over the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reach_otel._safety import logger

KINDS = ("workflows", "agents", "tools", "handoffs", "handoff_exceptions")
ENV_PREFIX = "REACH_OTEL_"
CONFIG_FILE = "reach-otel.toml"


@dataclass(frozen=True)
class Target:
    module: str
    qualname: str  # dotted; parts may contain * wildcards
    attr: str | None = None  # handoff exceptions only: the attribute naming the target agent

    def __str__(self) -> str:
        return f"{self.module}:{self.qualname}" + (f"@{self.attr}" if self.attr else "")


@dataclass(frozen=True)
class DeclarativeConfig:
    workflows: tuple[Target, ...] = ()
    agents: tuple[Target, ...] = ()
    tools: tuple[Target, ...] = ()
    handoffs: tuple[Target, ...] = ()
    handoff_exceptions: tuple[Target, ...] = ()
    agent_name_attr: str = "name"
    problems: tuple[str, ...] = field(default=(), compare=False)

    def empty(self) -> bool:
        return not any(getattr(self, kind) for kind in KINDS)


def parse_targets(raw: Any, *, with_attr: bool = False) -> tuple[list[Target], list[str]]:
    """Targets from a comma-separated string or a list; malformed entries are reported, not raised."""
    items = raw if isinstance(raw, (list, tuple)) else str(raw or "").split(",")
    targets: list[Target] = []
    problems: list[str] = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        spec, _, attr = item.partition("@") if with_attr else (item, "", "")
        module, sep, qualname = spec.partition(":")
        if not sep or not module.strip() or not qualname.strip():
            problems.append(f"{item!r} is not module:qualname")
            continue
        targets.append(Target(module.strip(), qualname.strip(), attr.strip() or None))
    return targets, problems


def _file_values(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python 3.10: the file needs tomllib; variables still work
        logger.warning("reach_otel: %s is ignored on Python < 3.11; use REACH_OTEL_* variables", path)
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        logger.warning("reach_otel: cannot read %s: %s", path, exc)
        return {}
    table = data.get("reach_otel") or data.get("reach-otel") or data
    return {str(k).lower().removeprefix("reach_otel_"): v for k, v in table.items()}


def load_config(env: Mapping[str, str] | None = None, path: str | Path | None = None) -> DeclarativeConfig:
    env = os.environ if env is None else env
    file_path = Path(path or env.get("REACH_OTEL_CONFIG") or CONFIG_FILE)
    values = _file_values(file_path) if file_path.is_file() else {}
    for kind in (*KINDS, "agent_name_attr"):
        raw = env.get(ENV_PREFIX + kind.upper())
        if raw is not None:
            values[kind] = raw
    parsed: dict[str, tuple[Target, ...]] = {}
    problems: list[str] = []
    for kind in KINDS:
        targets, bad = parse_targets(values.get(kind), with_attr=kind == "handoff_exceptions")
        parsed[kind] = tuple(targets)
        problems.extend(f"{ENV_PREFIX}{kind.upper()}: {p}" for p in bad)
    name_attr = str(values.get("agent_name_attr") or "name").strip() or "name"
    return DeclarativeConfig(**parsed, agent_name_attr=name_attr, problems=tuple(problems))
