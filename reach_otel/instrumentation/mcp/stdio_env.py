"""A stdio MCP server started by an instrumented client is traced too.

The SDK starts a stdio server with a minimal environment (``PATH``, ``HOME``...), which would drop
what configures reach_otel. The variables a plain subprocess would inherit are passed on —
``OTEL_*``, ``REACH_OTEL_*`` and, under ``reach-otel run``, its start-up hook on ``PYTHONPATH`` —
so the server's spans reach the same place. The server is a service of its own: it is named after
its command (``tools_server`` for ``python tools_server.py``), not after the client, unless the app
set ``OTEL_SERVICE_NAME`` in the server's environment. Keys the app set for the server win.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reach_otel._export import STDIO_CHILD_ENV
from reach_otel._safety import safe
from reach_otel.auto import AUTO_ENV
from reach_otel.run import _DERIVED_ENV, BOOTSTRAP_DIR, derived_service_name

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
_PREFIXES = ("OTEL_", "REACH_OTEL_")
_SERVICE = "OTEL_SERVICE_NAME"


def child_env(
    env: Mapping[str, str] | None, command: Sequence[str], parent: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``env`` with the parent's reach_otel configuration added where the app set none."""
    parent = os.environ if parent is None else parent
    given = dict(env or {})
    out = dict(given)
    for key, value in parent.items():
        if key.startswith(_PREFIXES) and key not in out:
            out[key] = value
    hook = str(BOOTSTRAP_DIR)
    under_run = parent.get(AUTO_ENV) == "1" and hook in parent.get("PYTHONPATH", "").split(os.pathsep)
    if under_run and "PYTHONPATH" not in out:
        out["PYTHONPATH"] = hook
    out[STDIO_CHILD_ENV] = "1"  # its exporter's trouble is the parent's to tell (_export.RateLimitedWarning)
    if _SERVICE in out and _SERVICE not in given and command:
        # The parent's name (derived by ``reach-otel run``, given with --service-name or exported)
        # names the app, not the server it starts: the server is named after its own command.
        out[_SERVICE] = out[_DERIVED_ENV] = derived_service_name(list(command))
    return out


@safe
def _with_env(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    names = ("command", "args", "env")
    values = [args[i] if len(args) > i else kwargs.get(name) for i, name in enumerate(names)]
    command, arguments, env = values
    if not isinstance(command, str):
        return args, kwargs
    new_env = child_env(env, [command, *(arguments or [])])
    if len(args) > 2:
        return (*args[:2], new_env, *args[3:]), kwargs
    return args, {**kwargs, "env": new_env}


def process_wrapper() -> Wrapper:
    """The SDK's ``_create_platform_compatible_process(command, args, env, ...)``: with our variables."""

    def create(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        bound = _with_env(args, kwargs)
        if bound is not None:
            args, kwargs = bound
        return wrapped(*args, **kwargs)

    return create
