"""Auto-instrumentation: one BaseInstrumentor per library; ``instrument()`` applies them, ``init()`` too.

Each instrumentor is also registered under the ``opentelemetry_instrumentor`` entry-point group, so
``opentelemetry-instrument`` picks them up; the group's ``reach_*`` entries of this distribution are
read here as well, so an instrumentor added there is applied by ``init()`` and ``reach-otel run``.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata
import importlib.util
import os
import sys
import types
from typing import Any

import wrapt

from reach_otel._safety import logger, safe

#: name → "module:Class"; the name is what OTEL_PYTHON_DISABLED_INSTRUMENTATIONS lists.
INSTRUMENTORS: dict[str, str] = {
    "openai": "reach_otel.instrumentation.openai:OpenAIInstrumentor",
    "anthropic": "reach_otel.instrumentation.anthropic:AnthropicInstrumentor",
    "httpx": "reach_otel.instrumentation.httpx:HTTPXInstrumentor",
    "requests": "reach_otel.instrumentation.requests:RequestsInstrumentor",
    "starlette": "reach_otel.instrumentation.starlette:StarletteInstrumentor",
    "threading": "reach_otel.instrumentation.threading:ThreadingInstrumentor",
    "openai_agents": "reach_otel.instrumentation.openai_agents:OpenAIAgentsInstrumentor",
    "declarative": "reach_otel.instrumentation.declarative:DeclarativeInstrumentor",
    "mcp": "reach_otel.instrumentation.mcp:MCPInstrumentor",
    "crewai": "reach_otel.instrumentation.crewai:CrewAIInstrumentor",
    "a2a": "reach_otel.instrumentation.a2a:A2AInstrumentor",
}
#: The modules whose import arms an instrumentor; a name not listed is its library's module name.
_LIBRARY: dict[str, tuple[str, ...]] = {
    "httpx": ("httpx", "httpx2"),
    "openai_agents": ("agents",),
    "langgraph": ("langgraph.pregel",),  # langgraph is a namespace package: no import hook fires for it
    "threading": (),  # the standard library: always there
    "declarative": (),  # the application's own code
}
_ENTRY_POINT_GROUP = "opentelemetry_instrumentor"
_PREFIX = "reach_"

#: Names waiting for their library to be imported (``init()`` applies them then, once).
_armed: set[str] = set()


@functools.lru_cache(maxsize=1)
def registry() -> dict[str, str]:
    """Every reach_otel instrumentor: the built-in ones and this distribution's ``reach_*`` entry points."""
    found = dict(INSTRUMENTORS)
    try:
        points = importlib.metadata.entry_points(group=_ENTRY_POINT_GROUP)
    except Exception:  # broken metadata elsewhere must not stop the built-in instrumentors
        logger.debug("reach_otel: cannot read entry points", exc_info=True)
        return found
    for point in points:
        if point.name.startswith(_PREFIX) and point.value.startswith("reach_otel."):
            found.setdefault(point.name[len(_PREFIX) :], point.value)
    return found


def libraries(name: str) -> tuple[str, ...]:
    """The modules an instrumentor patches (empty: nothing to wait for)."""
    return _LIBRARY.get(name, (name,))


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _disabled() -> set[str]:
    raw = os.environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def _load(name: str) -> Any:
    module_name, _, cls_name = registry()[name].partition(":")
    return getattr(importlib.import_module(module_name), cls_name)()


def available() -> list[str]:
    """Instrumentors whose library is installed here."""
    return [n for n in registry() if not libraries(n) or any(_findable(lib) for lib in libraries(n))]


def instrument(*names: str, tracer_provider: Any = None, **kwargs: Any) -> list[str]:
    """Apply the named instrumentors now; returns those applied.

    By default every available one not disabled (the declarative one when targets are configured).
    """
    unknown = [n for n in names if n not in registry()]
    if unknown:
        raise ValueError(f"unknown instrumentation {unknown}; choose from {sorted(registry())}")
    chosen = list(names) or _chosen()
    applied = []
    for name in chosen:
        _armed.discard(name)
        try:
            instrumentor = _load(name)
            if not instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.instrument(tracer_provider=tracer_provider, **kwargs)
            if instrumentor.is_instrumented_by_opentelemetry:  # False when its library's version conflicts
                applied.append(name)
        except Exception:  # one library failing to patch must not stop the others, nor the app
            logger.warning("reach_otel: could not instrument %s", name, exc_info=True)
    return applied


def _declarative_configured() -> bool:
    from reach_otel.instrumentation.declarative.config import load_config

    config = load_config()
    return not config.empty() or bool(config.problems)


def _chosen() -> list[str]:
    """The default set: available, not disabled; the declarative one only when targets are set."""
    return [
        n for n in available() if n not in _disabled() and (n != "declarative" or _declarative_configured())
    ]


@functools.cache
def _declared(package: str) -> tuple[str, ...]:
    """``package.py``'s ``_instruments``, read without importing the instrumentor (whose own
    imports are the library's, which may be the very module in question)."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations
    path = os.path.join(next(iter(spec.submodule_search_locations)), "package.py")
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign):
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "_instruments":
            return tuple(ast.literal_eval(value))
    return ()


def _installed(name: str) -> list[tuple[importlib.metadata.Distribution, bool]]:
    """Each distribution the ``package`` of instrumentor ``name`` declares that is installed, and
    whether its version is one the instrumentor supports (read without importing the instrumentor)."""
    from packaging.requirements import Requirement

    found = []
    for spec in _declared(registry()[name].partition(":")[0]):
        requirement = Requirement(spec)
        try:
            dist = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found.append((dist, requirement.specifier.contains(dist.version, prereleases=True)))
    return found


def _belongs(name: str, module: types.ModuleType) -> bool:
    """Whether ``module`` is the library ``name`` instruments, not an app module of the same name
    (an app's own ``agents.py`` is not the Agents SDK): one of the distributions its ``package``
    declares is installed in a version it supports, and the module was loaded from there."""
    try:
        if not _declared(registry()[name].partition(":")[0]):
            return True
        installed = _installed(name)
    except Exception:  # cannot tell: let instrument() try, as it would without this check
        return True
    origin = getattr(module, "__file__", None)
    for dist, supported in installed:
        if not supported:
            continue
        if origin is None:
            return True
        root = os.path.realpath(str(dist.locate_file("")))
        if os.path.realpath(origin).startswith(root + os.sep):
            return True
    return False


def _unsupported(name: str) -> str | None:
    """``"mcp 1.26.0"`` when the library ``name`` instruments is installed, but only in versions
    its ``package`` does not support; None otherwise (also when it cannot tell)."""
    try:
        installed = _installed(name)
    except Exception:
        return None
    if not installed or any(supported for _, supported in installed):
        return None
    return ", ".join(f"{dist.metadata['Name']} {dist.version}" for dist, _ in installed)


def _left_alone(name: str, module: str) -> None:
    """Say why a library that was imported is not traced: a version the instrumentation does not
    support is one WARNING line (its calls would otherwise go dark in silence); a module that only
    shares the library's name (the app's own ``agents.py``) is a DEBUG line."""
    installed = _unsupported(name)
    if installed is None:
        logger.debug("reach_otel: %s is not the library %s instruments; left alone", module, name)
        return
    wanted = " or ".join(_declared(registry()[name].partition(":")[0]))
    logger.warning(
        "reach_otel: %s is installed, but reach_otel traces %s only: its calls are not traced and "
        "carry no trace context (upgrade it to trace them)",
        installed,
        wanted,
    )


@safe
def _on_import(name: str, module: types.ModuleType) -> None:
    try:
        _armed.remove(name)  # atomic: of two threads importing its libraries, one applies it
    except KeyError:
        return
    if not _belongs(name, module):
        _left_alone(name, module.__name__)
        return
    instrument(name)


def auto_instrument() -> list[str]:
    """What ``init()`` applies: each available instrumentor not disabled, once, when its library is imported.

    One already imported is applied now; the others the moment the application imports them, so an
    installed but unused SDK costs no start-up time. The declarative one only when targets are set.
    Returns the names applied or waiting for their library.
    """
    chosen = _chosen()
    for name in chosen:
        modules = libraries(name)
        loaded = [sys.modules[m] for m in modules if m in sys.modules]
        if not modules or any(_belongs(name, m) for m in loaded):
            instrument(name)
        elif loaded:
            _left_alone(name, ", ".join(m.__name__ for m in loaded))
        elif name not in _armed:
            _armed.add(name)
            for module in modules:
                wrapt.register_post_import_hook(functools.partial(_on_import, name), module)
    return chosen


def waiting() -> list[str]:
    """Instrumentors ``init()`` chose that wait for their library to be imported."""
    return sorted(_armed)


def uninstrument(*names: str) -> list[str]:
    """Remove the named instrumentors (default: all that are applied or waiting for their library)."""
    removed = []
    for name in names or tuple(registry()):
        _armed.discard(name)
        if registry().get(name, "").partition(":")[0] not in sys.modules:
            continue  # never imported, so never applied: importing it now would only cost time
        try:
            instrumentor = _load(name)
        except Exception:  # not importable here: nothing to remove
            continue
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
            removed.append(name)
    return removed


__all__ = [
    "INSTRUMENTORS",
    "auto_instrument",
    "available",
    "instrument",
    "registry",
    "uninstrument",
    "waiting",
]
