"""``@workflow``, ``@agent``, ``@tool`` and ``@llm``: thin wrapt wrappers over the handler.

Each decorator only says how to *start* its span (a ``Starter``); one body per call shape (plain,
coroutine, generator, async generator) activates it, calls the user's function and ends it. The
user's return value and exception always pass through untouched.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any, TypeVar, overload

import wrapt
from opentelemetry.trace import SpanKind

from reach_otel._safety import safe
from reach_otel.handler import get_handler
from reach_otel.invocations import AgentInvocation, Invocation, LLMInvocation, ToolInvocation

F = TypeVar("F", bound=Callable[..., Any])
Starter = Callable[[Any, tuple[Any, ...], dict[str, Any]], Invocation | None]


# -- the four call shapes ---------------------------------------------------------------------------
def _plain(start: Starter) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        inv = start(instance, args, kwargs)
        if inv is None:
            return wrapped(*args, **kwargs)
        token = inv.enter()
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            inv.exit(token)
            inv.fail(exc)
            raise
        inv.exit(token)
        inv.stop(result)
        return result

    return wrapper


def _coroutine(start: Starter) -> Callable[..., Any]:
    async def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        inv = start(instance, args, kwargs)
        if inv is None:
            return await wrapped(*args, **kwargs)
        token = inv.enter()
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            inv.exit(token)
            inv.fail(exc)
            raise
        inv.exit(token)
        inv.stop(result)
        return result

    return wrapper


def _chunk_hook(inv: Invocation) -> Callable[[Any], None] | None:
    return inv.on_chunk if isinstance(inv, LLMInvocation) else None


def _generator(start: Starter) -> Callable[..., Any]:
    """The span covers the whole iteration; it is current only while the generator's body runs."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Generator[Any, Any, Any]:
        inv = start(instance, args, kwargs)
        if inv is None:
            return (yield from wrapped(*args, **kwargs))
        on_chunk = _chunk_hook(inv)
        step: Callable[[Any], Any] | None = None
        arg: Any = None
        try:
            token = inv.enter()
            try:
                gen = wrapped(*args, **kwargs)
            finally:
                inv.exit(token)
            step = gen.send
            while True:
                token = inv.enter()
                try:
                    item = step(arg)
                except StopIteration as stop:
                    inv.exit(token)
                    inv.stop(stop.value)
                    return stop.value
                except BaseException:
                    inv.exit(token)
                    raise
                inv.exit(token)
                if on_chunk is not None:
                    on_chunk(item)
                try:
                    arg = yield item
                    step = gen.send
                except GeneratorExit:
                    gen.close()
                    inv.stop()
                    raise
                except BaseException as thrown:  # forwarded into the user's generator
                    step, arg = gen.throw, thrown
        except GeneratorExit:
            raise
        except BaseException as exc:
            inv.fail(exc)
            raise

    return wrapper


def _async_generator(start: Starter) -> Callable[..., Any]:
    async def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncGenerator[Any, Any]:
        inv = start(instance, args, kwargs)
        agen = wrapped(*args, **kwargs)
        if inv is None:
            async for item in agen:
                yield item
            return
        on_chunk = _chunk_hook(inv)
        step: Callable[[Any], Any] = agen.asend
        arg: Any = None
        try:
            while True:
                token = inv.enter()
                try:
                    item = await step(arg)
                except StopAsyncIteration:
                    inv.exit(token)
                    inv.stop()
                    return
                except BaseException:
                    inv.exit(token)
                    raise
                inv.exit(token)
                if on_chunk is not None:
                    on_chunk(item)
                try:
                    arg = yield item
                    step = agen.asend
                except GeneratorExit:
                    await agen.aclose()
                    inv.stop()
                    raise
                except BaseException as thrown:  # forwarded into the user's generator
                    step, arg = agen.athrow, thrown
        except GeneratorExit:
            raise
        except BaseException as exc:
            inv.fail(exc)
            raise

    return wrapper


def instrument_function(fn: F, start: Starter) -> F:
    """Wrap ``fn`` so each call runs inside the span ``start`` opens; keeps name, doc and signature."""
    if inspect.isasyncgenfunction(fn):
        shape = _async_generator
    elif inspect.iscoroutinefunction(fn):
        shape = _coroutine
    elif inspect.isgeneratorfunction(fn):
        shape = _generator
    else:
        shape = _plain
    return wrapt.FunctionWrapper(fn, shape(safe(start)))  # type: ignore[return-value]


# -- helpers shared by the starters -------------------------------------------------------------
def _first_doc_line(fn: Callable[..., Any]) -> str | None:
    doc = inspect.getdoc(fn)
    return doc.strip().splitlines()[0] if doc and doc.strip() else None


def bound_arguments(
    fn: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by parameter name (``self``/``cls`` left out), for content capture."""
    try:
        sig = inspect.signature(fn)
        params = list(sig.parameters)
        if instance is not None and params and params[0] in ("self", "cls") and len(args) < len(params):
            bound = sig.bind_partial(instance, *args, **kwargs)
        else:
            bound = sig.bind_partial(*args, **kwargs)
        out = dict(bound.arguments)
        for name in ("self", "cls"):
            out.pop(name, None)
        return out
    except (TypeError, ValueError):
        return {"args": list(args), "kwargs": kwargs}


def agent_name_for(fn: Callable[..., Any], instance: Any, attr: str = "name") -> str:
    """An agent's name: the instance's ``name`` attribute, else its class name, else the function's."""
    if instance is not None and not inspect.isclass(instance):
        value = getattr(instance, attr, None)
        if isinstance(value, str) and value:
            return value
        return type(instance).__name__
    if inspect.isclass(instance):
        return instance.__name__
    return fn.__name__


def _decorate(fn: F | None, make_starter: Callable[[Callable[..., Any]], Starter]) -> Any:
    def decorate(f: F) -> F:
        return instrument_function(f, make_starter(f))

    return decorate(fn) if fn is not None else decorate


# -- starters: how each kind of span begins (shared with declarative wrapping) -------------------
def workflow_starter(f: Callable[..., Any], name: str | None = None) -> Starter:
    wf_name = name or f.__name__
    return lambda instance, args, kwargs: get_handler().start_workflow(wf_name)


def agent_starter(
    f: Callable[..., Any],
    name: str | None = None,
    *,
    role: str | None = None,
    agent_id: str | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    name_attr: str = "name",
) -> Starter:
    description = _first_doc_line(f)

    def start(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> AgentInvocation | None:
        handler = get_handler()
        inv = handler.start_agent(
            name or agent_name_for(f, instance, name_attr),
            role=role,
            agent_id=agent_id,
            description=description,
            kind=kind,
        )
        if inv is not None and handler.settings.capture_content:
            inv.set_input(bound_arguments(f, instance, args, kwargs))
        return inv

    return start


def tool_starter(f: Callable[..., Any], name: str | None = None, description: str | None = None) -> Starter:
    tool_name = name or f.__name__
    desc = description or _first_doc_line(f)

    def start(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolInvocation | None:
        handler = get_handler()
        inv = handler.start_tool(tool_name, description=desc)
        if inv is not None and handler.settings.capture_content:
            inv.set_arguments(bound_arguments(f, instance, args, kwargs))
        return inv

    return start


def llm_starter(
    f: Callable[..., Any],
    model: str | None = None,
    provider: str | None = None,
    operation: str = "chat",
    server_address: str | None = None,
    server_port: int | None = None,
) -> Starter:
    streaming = inspect.isgeneratorfunction(f) or inspect.isasyncgenfunction(f)

    def start(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> LLMInvocation | None:
        handler = get_handler()
        call_model = model or kwargs.get("model")
        inv = handler.start_llm(
            call_model if isinstance(call_model, str) else None,
            provider or "unknown",
            operation=operation,
            stream=streaming or bool(kwargs.get("stream")),
            server_address=server_address,
            server_port=server_port,
        )
        if inv is not None and handler.settings.capture_content:
            bound = bound_arguments(f, instance, args, kwargs)
            inv.set_request_messages(bound.get("messages", bound.get("prompt")), bound.get("system"))
        return inv

    return start


# -- the public decorators ------------------------------------------------------------------------
@overload
def workflow(fn: F) -> F: ...
@overload
def workflow(fn: None = None, *, name: str | None = None) -> Callable[[F], F]: ...
def workflow(fn: F | None = None, *, name: str | None = None) -> Any:
    """The root of one request: an ``invoke_workflow {name}`` span."""
    return _decorate(fn, lambda f: workflow_starter(f, name))


@overload
def agent(fn: F) -> F: ...
@overload
def agent(
    fn: None = None,
    *,
    name: str | None = None,
    role: str | None = None,
    agent_id: str | None = None,
    remote: bool = False,
) -> Callable[[F], F]: ...
def agent(
    fn: F | None = None,
    *,
    name: str | None = None,
    role: str | None = None,
    agent_id: str | None = None,
    remote: bool = False,
) -> Any:
    """An agent run: ``invoke_agent {name}``; ``remote=True`` marks a call to a remote agent (CLIENT)."""
    kind = SpanKind.CLIENT if remote else SpanKind.INTERNAL
    return _decorate(fn, lambda f: agent_starter(f, name, role=role, agent_id=agent_id, kind=kind))


@overload
def tool(fn: F) -> F: ...
@overload
def tool(fn: None = None, *, name: str | None = None, description: str | None = None) -> Callable[[F], F]: ...
def tool(fn: F | None = None, *, name: str | None = None, description: str | None = None) -> Any:
    """A tool call: ``execute_tool {name}`` (name defaults to the function's name)."""
    return _decorate(fn, lambda f: tool_starter(f, name, description))


@overload
def llm(fn: F) -> F: ...
@overload
def llm(
    fn: None = None,
    *,
    model: str | None = None,
    provider: str | None = None,
    operation: str = "chat",
    server_address: str | None = None,
    server_port: int | None = None,
) -> Callable[[F], F]: ...
def llm(
    fn: F | None = None,
    *,
    model: str | None = None,
    provider: str | None = None,
    operation: str = "chat",
    server_address: str | None = None,
    server_port: int | None = None,
) -> Any:
    """An LLM call made by a client reach_otel does not patch: ``chat {model}`` (CLIENT).

    Usage and response fields are read from the return value (or from stream chunks for
    generators); ``reach_otel.record_usage()`` sets them from inside the function.
    """
    return _decorate(fn, lambda f: llm_starter(f, model, provider, operation, server_address, server_port))
