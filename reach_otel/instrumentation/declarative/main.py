"""Targets in the program's main module: the script run as ``__main__`` and ``python -m pkg.mod``.

``python app.py`` runs ``app.py`` as ``__main__``, never as ``app``, and only after start-up, so a
post-import hook never sees it. Instead ``builtins.__build_class__`` is wrapped while targets name
the main module: each top-level class the main module defines is handed over the moment its
``class`` statement has built it, before any of the script's code can call it. ``__main__:X.run``,
``app:X.run`` (for ``app.py``) and ``pkg.mod:X.run`` (for ``python -m pkg.mod``) all name it.
"""

from __future__ import annotations

import builtins
import itertools
import os
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

from reach_otel._safety import safe

ClassListener = Callable[[type], None]

_listeners: list[ClassListener] = []
_original_build_class: Any = None


def expected_main() -> Mapping[str, Any]:
    """The main module's namespace, or what it will be: at start-up, the script or ``-m`` module to run."""
    main = sys.modules.get("__main__")
    namespace = vars(main) if main is not None else {}
    if namespace.get("__file__") or namespace.get("__spec__") is not None:
        return namespace
    first = sys.argv[0] if sys.argv else ""
    if first == "-m":  # the interpreter's own options come before the module name
        argv = list(getattr(sys, "orig_argv", None) or ())
        for option, value in itertools.pairwise(argv):
            if option.startswith("-m"):
                return {"__spec__": types.SimpleNamespace(name=option[2:] or value)}
        return {}
    return {"__file__": os.path.abspath(first)} if first not in ("", "-c") else {}


def label(namespace: Mapping[str, Any]) -> str:
    """How a message names the main module: its file (``app.py``) or module (``pkg.mod``)."""
    spec = namespace.get("__spec__")
    path = namespace.get("__file__")
    if spec is not None and getattr(spec, "name", None):
        return str(spec.name)
    return os.path.basename(path) if isinstance(path, str) else "__main__"


def names_main(module_name: str, namespace: Mapping[str, Any]) -> bool:
    """Whether a target's module names the main module whose globals are ``namespace``."""
    if module_name == "__main__":
        return True
    spec = namespace.get("__spec__")
    if spec is not None:
        return getattr(spec, "name", None) == module_name
    path = namespace.get("__file__")
    if not isinstance(path, str) or not path.endswith(".py"):
        return False
    # `app` for app.py; `pkg.mod` for pkg/mod.py run as a script.
    parts = os.path.normpath(path[: -len(".py")]).split(os.sep)
    wanted = module_name.split(".")
    return parts[-len(wanted) :] == wanted


def _build_class(func: Any, name: Any, /, *bases: Any, **kwds: Any) -> Any:
    cls = _original_build_class(func, name, *bases, **kwds)
    if _listeners and getattr(func, "__globals__", {}).get("__name__") == "__main__":
        _announce(cls, name)
    return cls


@safe
def _announce(cls: Any, name: Any) -> None:
    if isinstance(cls, type) and cls.__qualname__ == name:  # top level: nested ones come with their owner
        for listener in list(_listeners):
            safe(listener)(cls)


def listen(listener: ClassListener) -> None:
    """Call ``listener(cls)`` for each top-level class the main module defines from now on."""
    global _original_build_class
    if _original_build_class is None:
        _original_build_class = builtins.__build_class__
        builtins.__build_class__ = _build_class
    _listeners.append(listener)


def unlisten(listener: ClassListener) -> None:
    """Stop calling ``listener``; the last one gone puts the interpreter's own ``__build_class__`` back."""
    global _original_build_class
    if listener in _listeners:
        _listeners.remove(listener)
    if not _listeners and _original_build_class is not None and builtins.__build_class__ is _build_class:
        builtins.__build_class__ = _original_build_class
        _original_build_class = None
