"""What a node's code refers to, read before it runs: whether it reaches a chat model or a graph.

Read the way LangGraph itself finds a node's subgraphs at compile time (``find_subgraph_pregel``,
through langchain-core's ``get_function_nonlocals``): the closure and global names the function's
source uses, following attribute chains (``self.model``, ``agent.invoke``) — and those its code
object names, for a function whose source is not at hand — plus a partial's arguments, a bound
method's object and the helpers it calls, a few levels deep. No spans here; the answer for a
node's function is computed once and kept with it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from langchain_core.language_models import BaseLanguageModel
from langchain_core.runnables.base import RunnableBindingBase, RunnableSequence
from langchain_core.runnables.utils import get_function_nonlocals
from langgraph.pregel.protocol import PregelProtocol

from reach_otel._safety import safe

_DEPTH = 3  # a helper of a helper of the node's function; deeper code is found at its first model call
_known: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _is_agentic(value: Any, depth: int) -> bool:
    """A chat model or LLM (bound, configured or piped), or a graph of its own."""
    if isinstance(value, (BaseLanguageModel, PregelProtocol)):
        return True
    if depth <= 0:
        return False
    if isinstance(value, RunnableBindingBase):  # model.bind_tools(...), .with_config(...), .with_retry()
        return _is_agentic(value.bound, depth - 1)
    if isinstance(value, RunnableSequence):  # prompt | model
        return any(_is_agentic(step, depth - 1) for step in value.steps)
    return False


def _referenced(func: Callable[..., Any]) -> Iterator[Any]:
    """The values a function refers to: its partial's arguments, its object's attributes, and the
    closure and global names its source uses (a bound method found there stands for its object)."""
    if isinstance(func, functools.partial):
        yield from func.args
        yield from func.keywords.values()
        yield func.func
        return
    owner = getattr(func, "__self__", None)
    if owner is not None and not inspect.ismodule(owner):
        yield from (vars(owner).values() if hasattr(owner, "__dict__") else ())
    with contextlib.suppress(TypeError):  # the names its code uses, even where its source is not at hand
        names = inspect.getclosurevars(func)
        yield from names.nonlocals.values()
        yield from names.globals.values()
    for value in get_function_nonlocals(func):
        yield getattr(value, "__self__", value) if inspect.ismethod(value) else value


def _reaches(func: Callable[..., Any], depth: int, seen: set[int]) -> bool:
    if id(func) in seen:
        return False
    seen.add(id(func))
    for value in _referenced(func):
        if _is_agentic(value, _DEPTH):
            return True
        helper = inspect.isfunction(value) or isinstance(value, functools.partial)
        if helper and depth > 0 and _reaches(value, depth - 1, seen):
            return True
    return False


@safe(default=False)
def reaches_a_model(runnable: Any) -> bool:
    """Whether a node's function (a LangGraph ``RunnableCallable``) refers to a chat model or a graph."""
    try:
        return _known[runnable]
    except (KeyError, TypeError):
        pass
    funcs = [f for f in (getattr(runnable, "func", None), getattr(runnable, "afunc", None)) if callable(f)]
    seen: set[int] = set()
    found = any(_reaches(func, _DEPTH - 1, seen) for func in funcs)
    with contextlib.suppress(TypeError):  # not weakly referenceable: read again next time
        _known[runnable] = found
    return found
