"""Wrap the application's own functions, methods and exceptions as the configuration says.

Modules already imported are wrapped now, the rest the moment they are imported (post-import
hooks); the script run as the main module class by class as it defines them. Each target that
matches nothing gets one warning naming it.
"""

from __future__ import annotations

import atexit
import fnmatch
import importlib.util
import inspect
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import wrapt

from reach_otel._safety import logger, safe
from reach_otel.decorators import (
    agent_name_for,
    agent_starter,
    instrument_function,
    tool_starter,
    workflow_starter,
)
from reach_otel.errors import _name_of, register_handoff_exception, unregister_handoff_exception
from reach_otel.handler import current_agent, get_handler
from reach_otel.instrumentation.declarative import main as main_module
from reach_otel.instrumentation.declarative.config import DeclarativeConfig, Target
from reach_otel.invocations import Invocation

Wrap = Callable[[Callable[..., Any]], Any]
_TRANSFER_PREFIXES = ("transfer_to_", "handoff_to_", "transfer_", "handoff_")


_INHERITED = object()  # a patch's original when the attribute came from a base class


@dataclass
class _Patch:
    owner: Any
    name: str
    original: Any


def _is_wrapped(raw: Any) -> bool:
    return isinstance(raw, wrapt.ObjectProxy) or isinstance(getattr(raw, "__func__", None), wrapt.ObjectProxy)


def _names(namespace: Any, pattern: str) -> list[str]:
    """Names in ``namespace`` the pattern matches (a wildcard leaves private names alone unless the
    pattern itself starts with "_")."""
    if "*" not in pattern and "?" not in pattern:
        return [pattern] if pattern in namespace else []
    return [n for n in fnmatch.filter(namespace, pattern) if pattern.startswith("_") or not n.startswith("_")]


def _inherited(owner: Any, name: str) -> dict[str, Any]:
    """``{name: raw}`` from the nearest base class defining ``name`` (``Billing.run`` named outright
    where ``run`` is ``BaseAgent``'s: wrapped on ``Billing`` alone); empty when none does."""
    for base in owner.__mro__[1:]:
        if base is not object and name in vars(base):
            return {name: vars(base)[name]}
    return {}


def _callables(owner: Any, pattern: str, *, leaf: bool) -> list[tuple[str, Any]]:
    """(name, raw attribute) pairs of ``owner`` matching ``pattern``: functions at the leaf, else classes."""
    namespace: Any = vars(owner)
    if (
        leaf
        and inspect.isclass(owner)
        and pattern not in namespace
        and not ("*" in pattern or "?" in pattern)
    ):
        namespace = _inherited(owner, pattern)
    found = []
    for name in _names(namespace, pattern):
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
    return resolve_in([module], qualname.split("."))


def resolve_in(owners: list[Any], parts: list[str]) -> list[tuple[Any, str, Any]]:
    """Like :func:`resolve`, from the given owners down the given qualname parts."""
    for i, part in enumerate(parts):
        leaf = i == len(parts) - 1
        matches = [(owner, name, raw) for owner in owners for name, raw in _callables(owner, part, leaf=leaf)]
        if leaf:
            return matches
        owners = [raw for _, _, raw in matches]
    return []


def _exception_class(owner: Any, parts: list[str]) -> Any:
    for part in parts:
        owner = getattr(owner, part, None)
    return owner


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


def agent_method(fn: Callable[..., Any], name_attr: str = "name") -> Any:
    """Wrap an agent's method; an override calling ``super()`` stays in the one agent span.

    ``*Agent.run`` matches a base class and its subclasses alike: when the agent already running
    nearest is the one this call would name, the call is part of that run, not a new one.
    """
    start = agent_starter(fn, name_attr=name_attr)

    def starter(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Invocation | None:
        running = current_agent()
        if (
            instance is not None
            and running is not None
            and running.name == agent_name_for(fn, instance, name_attr)
        ):
            return None
        return start(instance, args, kwargs)

    return instrument_function(fn, starter)


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class Applier:
    """Applies one configuration; ``undo()`` restores every patched attribute.

    A target is looked for in its module when that is imported, and — when it names the main
    module — in each class the running script defines (see :mod:`.main`). One that matched nothing
    gets one warning: when its module was imported without it, else when the program exits.
    """

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
            ("AGENTS", config.agents, lambda f: agent_method(f, attr)),
            ("TOOLS", config.tools, lambda f: instrument_function(f, tool_starter(f))),
            ("HANDOFFS", config.handoffs, lambda f: handoff_function(f, attr)),
        ]
        self.entries = [(kind, t) for kind, targets, _ in self.kinds for t in targets]
        self.entries += [("HANDOFF_EXCEPTIONS", t) for t in config.handoff_exceptions]
        self.matched: set[tuple[str, Target]] = set()
        self.warned: set[tuple[str, Target]] = set()
        self.imported: set[str] = set()
        self.done: set[tuple[int, str, str]] = set()  # (owner, attribute, kind) already patched
        self.main_entries: list[tuple[str, Target]] = []
        self.main_label = "__main__"

    def start(self) -> None:
        for problem in self.config.problems:
            logger.warning("reach_otel: %s", problem)
        expected = main_module.expected_main()
        self.main_entries = [e for e in self.entries if main_module.names_main(e[1].module, expected)]
        self.main_label = main_module.label(expected)
        if self.main_entries:
            main_module.listen(self._main_class)
            current = sys.modules.get("__main__")
            if current is not None:  # init() called by the running script: its classes exist already
                for kind, target in self.main_entries:
                    self._apply(kind, target, current, warn=False)
        for module in dict.fromkeys(t.module for _, t in self.entries if t.module != "__main__"):
            wrapt.register_post_import_hook(self._imported, module)
        atexit.register(self._check_at_exit)

    def _wrap_of(self, kind: str) -> Wrap | None:
        return next((wrap for k, _, wrap in self.kinds if k == kind), None)

    @safe
    def _imported(self, module: types.ModuleType) -> None:
        if not self.active:
            return
        self.imported.add(module.__name__)
        for kind, target in self.entries:
            if target.module == module.__name__:
                safe(self._apply)(kind, target, module, warn=(kind, target) not in self.main_entries)

    def _apply(
        self, kind: str, target: Target, owner: Any, *, warn: bool, parts: list[str] | None = None
    ) -> None:
        """Patch what ``target`` names under ``owner`` (a module, or a class for ``parts``)."""
        parts = target.qualname.split(".") if parts is None else parts
        if kind == "HANDOFF_EXCEPTIONS":
            found = self._exception(target, _exception_class(owner, parts))
        else:
            found = self._patch(kind, resolve_in([owner], parts))
        if found:
            self.matched.add((kind, target))
        elif warn and (kind, target) not in self.matched | self.warned:
            self.warned.add((kind, target))
            logger.warning(
                "reach_otel: REACH_OTEL_%s entry %s matched nothing in %s", kind, target, owner.__name__
            )

    def _patch(self, kind: str, matches: list[tuple[Any, str, Any]]) -> bool:
        wrap = self._wrap_of(kind)
        for owner, name, raw in matches:
            key = (id(owner), name, kind)
            if wrap is None or key in self.done or (_is_wrapped(raw) and kind != "HANDOFFS"):
                continue
            inherited = inspect.isclass(owner) and name not in vars(owner)
            setattr(owner, name, _rewrap(raw, wrap))
            self.patches.append(_Patch(owner, name, _INHERITED if inherited else raw))
            self.done.add(key)
        return bool(matches)

    @safe
    def _main_class(self, cls: type) -> None:
        """A class the main module has just defined: patch the main-module targets it holds."""
        if not self.active:
            return
        for kind, target in self.main_entries:
            first, *rest = target.qualname.split(".")
            if _names({cls.__name__: cls}, first) and (rest or kind == "HANDOFF_EXCEPTIONS"):
                self._apply(kind, target, cls, warn=False, parts=rest)

    def _exception(self, target: Target, cls: Any) -> bool:
        if cls is None:
            return False
        if not (inspect.isclass(cls) and issubclass(cls, BaseException)):
            logger.warning(
                "reach_otel: REACH_OTEL_HANDOFF_EXCEPTIONS entry %s is not an exception class", target
            )
            return True  # found, and said why it is not used
        if cls not in self.exceptions:
            register_handoff_exception(cls, target.attr)
            self.exceptions.append(cls)
        return True

    @safe
    def _check_at_exit(self) -> None:
        if not self.active:
            return
        main = sys.modules.get("__main__")
        for kind, target in self.entries:
            if (kind, target) in self.matched | self.warned:
                continue
            self.warned.add((kind, target))
            if (kind, target) in self.main_entries and main is not None:
                single = kind != "HANDOFF_EXCEPTIONS" and "." not in target.qualname
                late = single and resolve(main, target.qualname)
                why = (
                    ": a function of the script being run cannot be wrapped before it runs;"
                    " target a method of one of its classes, or move the function into a module"
                    if late
                    else ""
                )
                logger.warning(
                    "reach_otel: REACH_OTEL_%s entry %s matched nothing in the main module (%s)%s",
                    kind,
                    target,
                    self.main_label,
                    why,
                )
            elif target.module in self.imported:
                continue  # said when it was imported
            else:
                state = "was never imported" if _findable(target.module) else "cannot be found"
                logger.warning(
                    "reach_otel: REACH_OTEL_%s entry %s matched nothing: module %r %s",
                    kind,
                    target,
                    target.module,
                    state,
                )

    def undo(self) -> None:
        self.active = False
        main_module.unlisten(self._main_class)
        for patch in reversed(self.patches):
            if patch.original is _INHERITED:
                delattr(patch.owner, patch.name)
            else:
                setattr(patch.owner, patch.name, patch.original)
        self.patches.clear()
        self.done.clear()
        for cls in self.exceptions:
            unregister_handoff_exception(cls)
        self.exceptions.clear()
