"""Wrap the application's own functions, methods and exceptions as the configuration says.

Modules already imported are wrapped now, the rest the moment they are imported (post-import
hooks). Each target that resolves to nothing gets one warning naming it.
"""

from __future__ import annotations

import atexit
import fnmatch
import functools
import importlib.util
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import wrapt

from reach_otel._safety import logger, safe
from reach_otel.decorators import agent_starter, instrument_function, tool_starter, workflow_starter
from reach_otel.errors import _name_of, register_handoff_exception, unregister_handoff_exception
from reach_otel.handler import get_handler
from reach_otel.instrumentation.declarative.config import DeclarativeConfig, Target

Wrap = Callable[[Callable[..., Any]], Any]
_TRANSFER_PREFIXES = ("transfer_to_", "handoff_to_", "transfer_", "handoff_")


@dataclass
class _Patch:
    owner: Any
    name: str
    original: Any


def _is_wrapped(raw: Any) -> bool:
    return isinstance(raw, wrapt.ObjectProxy) or isinstance(getattr(raw, "__func__", None), wrapt.ObjectProxy)


def _callables(owner: Any, pattern: str, *, leaf: bool) -> list[tuple[str, Any]]:
    """(name, raw attribute) pairs of ``owner`` matching ``pattern``: functions at the leaf, else classes."""
    namespace = vars(owner)
    if "*" not in pattern and "?" not in pattern:
        names = [pattern] if pattern in namespace else []
    else:
        # A wildcard leaves private names alone unless the pattern itself starts with "_".
        names = [
            n for n in fnmatch.filter(namespace, pattern) if pattern.startswith("_") or not n.startswith("_")
        ]
    found = []
    for name in names:
        raw = namespace[name]
        home = getattr(raw, "__module__", None)
        own = not isinstance(owner, types.ModuleType) or "*" not in pattern or home == owner.__name__
        function_like = inspect.isfunction(raw) or isinstance(raw, (staticmethod, classmethod))
        wanted = (own and function_like) if leaf else inspect.isclass(raw)
        if wanted:
            found.append((name, raw))
    return found


def resolve(module: types.ModuleType, qualname: str) -> list[tuple[Any, str, Any]]:
    """Every (owner, attribute name, raw attribute) the dotted, wildcarded qualname matches."""
    owners: list[Any] = [module]
    parts = qualname.split(".")
    for i, part in enumerate(parts):
        leaf = i == len(parts) - 1
        matches = [(owner, name, raw) for owner in owners for name, raw in _callables(owner, part, leaf=leaf)]
        if leaf:
            return matches
        owners = [raw for _, _, raw in matches]
    return []


def _rewrap(raw: Any, wrap: Wrap) -> Any:
    if isinstance(raw, staticmethod):
        return staticmethod(wrap(raw.__func__))
    if isinstance(raw, classmethod):
        return classmethod(wrap(raw.__func__))
    return wrap(raw)


def _transfer_target(fn: Callable[..., Any], result: Any, name_attr: str) -> str:
    target = _name_of(result) if isinstance(result, str) else _name_of(getattr(result, name_attr, None))
    if target:
        return target
    name = fn.__name__
    for prefix in _TRANSFER_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


@safe
def _record_transfer(fn: Callable[..., Any], result: Any, name_attr: str) -> None:
    inv = get_handler().start_handoff(
        None, _transfer_target(fn, result, name_attr), mode="takeover", reason=fn.__name__
    )
    if inv is not None:
        inv.stop()


def handoff_function(fn: Callable[..., Any], name_attr: str = "name") -> Any:
    """Wrap a transfer function: once it returns, record a takeover handoff to the agent it names."""
    if inspect.iscoroutinefunction(fn):

        async def call_async(
            wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            result = await wrapped(*args, **kwargs)
            _record_transfer(fn, result, name_attr)
            return result

        return wrapt.FunctionWrapper(fn, call_async)

    def call(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = wrapped(*args, **kwargs)
        _record_transfer(fn, result, name_attr)
        return result

    return wrapt.FunctionWrapper(fn, call)


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class Applier:
    """Applies one configuration; ``undo()`` restores every patched attribute."""

    def __init__(self, config: DeclarativeConfig) -> None:
        self.config = config
        self.patches: list[_Patch] = []
        self.exceptions: list[type[BaseException]] = []
        self.active = True
        attr = config.agent_name_attr
        # Order matters: handoff wrappers go on last (outermost), so a transfer that is also a tool
        # records its handoff after the tool span ends, as a child of the agent.
        self.kinds: list[tuple[str, tuple[Target, ...], Wrap]] = [
            ("WORKFLOWS", config.workflows, lambda f: instrument_function(f, workflow_starter(f))),
            ("AGENTS", config.agents, lambda f: instrument_function(f, agent_starter(f, name_attr=attr))),
            ("TOOLS", config.tools, lambda f: instrument_function(f, tool_starter(f))),
            ("HANDOFFS", config.handoffs, lambda f: handoff_function(f, attr)),
        ]

    def start(self) -> None:
        for problem in self.config.problems:
            logger.warning("reach_otel: %s", problem)
        for kind, targets, wrap in self.kinds:
            for target in targets:
                self._when_imported(
                    target, kind, functools.partial(self._wrap, target=target, wrap=wrap, kind=kind)
                )
        for target in self.config.handoff_exceptions:
            self._when_imported(
                target, "HANDOFF_EXCEPTIONS", functools.partial(self._exception, target=target)
            )

    def _when_imported(self, target: Target, kind: str, apply: Callable[[types.ModuleType], None]) -> None:
        # At start-up (``reach-otel run``) the script's own folder is not on sys.path yet, so a
        # module that cannot be found now may well be imported later: look again at exit.
        applied: list[bool] = []

        def hook(module: types.ModuleType) -> None:
            applied.append(True)
            if self.active:
                safe(apply)(module)

        def check_at_exit() -> None:
            if self.active and not applied and not _findable(target.module):
                logger.warning(
                    "reach_otel: REACH_OTEL_%s entry %s: module %r cannot be found",
                    kind,
                    target,
                    target.module,
                )

        wrapt.register_post_import_hook(hook, target.module)
        atexit.register(check_at_exit)

    def _wrap(self, module: types.ModuleType, target: Target, wrap: Wrap, kind: str) -> None:
        matches = resolve(module, target.qualname)
        if not matches:
            logger.warning(
                "reach_otel: REACH_OTEL_%s entry %s matched nothing in %s", kind, target, module.__name__
            )
        for owner, name, raw in matches:
            if _is_wrapped(raw) and kind != "HANDOFFS":
                continue
            setattr(owner, name, _rewrap(raw, wrap))
            self.patches.append(_Patch(owner, name, raw))

    def _exception(self, module: types.ModuleType, target: Target) -> None:
        cls: Any = module
        for part in target.qualname.split("."):
            cls = getattr(cls, part, None)
        if not (inspect.isclass(cls) and issubclass(cls, BaseException)):
            logger.warning(
                "reach_otel: REACH_OTEL_HANDOFF_EXCEPTIONS entry %s is not an exception class", target
            )
            return
        register_handoff_exception(cls, target.attr)
        self.exceptions.append(cls)

    def undo(self) -> None:
        self.active = False
        for patch in reversed(self.patches):
            setattr(patch.owner, patch.name, patch.original)
        self.patches.clear()
        for cls in self.exceptions:
            unregister_handoff_exception(cls)
        self.exceptions.clear()
