"""Incoming HTTP for Starlette and FastAPI apps: continue the caller's trace, one trace per request.

The trace comes from the W3C headers, or — for an ``/invoke`` JSON body sent without them — from the
body's ``context`` (``traceparent``, else ``trace_id``), which is turned into headers before the
framework sees the request. When the framework makes its own server span (FastAPI does once a
tracer provider is set) that span is the one continued; otherwise reach_otel makes the SERVER span.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Collection
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.trace import SpanKind
from wrapt import wrap_function_wrapper

from reach_otel import semconv as sc
from reach_otel._safety import logger
from reach_otel.handler import suppressed
from reach_otel.instrumentation import _http
from reach_otel.instrumentation._base import HandlerRef, handler_ref
from reach_otel.instrumentation.starlette.package import _instruments
from reach_otel.propagation import extract, is_invoke_body

_SCOPE_KEY = "reach_otel"
Message = dict[str, Any]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _adopt_invoke_context(scope: dict[str, Any], receive: Callable[[], Any]) -> Callable[[], Any]:
    """Without trace headers, read an /invoke JSON body's context into headers; replay the body."""
    if scope.get("method") != "POST" or _header(scope, b"traceparent") is not None:
        return receive
    if "json" not in (_header(scope, b"content-type") or ""):
        return receive
    buffered: list[Message] = []
    size = 0
    while True:
        message = await receive()
        buffered.append(message)
        if message.get("type") != "http.request":
            break
        size += len(message.get("body", b""))
        if not message.get("more_body") or size > _http.MAX_BODY_REWRITE:
            break

    async def replay() -> Message:
        return buffered.pop(0) if buffered else await receive()

    try:
        if size <= _http.MAX_BODY_REWRITE and buffered[-1].get("type") == "http.request":
            body = json.loads(b"".join(m.get("body", b"") for m in buffered) or b"null")
            if isinstance(body, dict) and is_invoke_body(body):
                headers: dict[str, str] = {}
                propagate.inject(headers, context=extract(body))
                extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
                scope["headers"] = [*scope.get("headers", ()), *extra]
    except Exception:  # not JSON after all, or not ours to read: the request goes on untouched
        logger.debug("reach_otel: no trace context in the request body", exc_info=True)
    return replay


def _framework_span(scope: dict[str, Any]) -> bool:
    """True when the framework (FastAPI's own telemetry, or another middleware) made a server span."""
    native = scope.get("fastapi.telemetry")
    if native is not None and getattr(native, "span", None) is not None:
        return True
    current = trace.get_current_span()
    return bool(getattr(current, "kind", None) == SpanKind.SERVER and current.is_recording())


def _app_call(ref: HandlerRef, *, outer_only: bool = False) -> Callable[..., Any]:
    # A plain function returning the coroutine, so a call with the wrong arguments raises TypeError
    # at once, exactly like the original (servers probe apps that way to tell factories apart).
    def call(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if len(args) != 3 or kwargs or not isinstance(args[0], dict) or args[0].get("type") != "http":
            return wrapped(*args, **kwargs)
        return _handle(ref, wrapped, outer_only, *args)

    return call


async def _handle(
    ref: HandlerRef, wrapped: Callable[..., Any], outer_only: bool, scope: Any, receive: Any, send: Any
) -> Any:
    if suppressed():
        return await wrapped(scope, receive, send)
    if _SCOPE_KEY not in scope:  # the outermost app sees the request first
        scope[_SCOPE_KEY] = "seen"
        receive = await _adopt_invoke_context(scope, receive)
        if outer_only:  # FastAPI: its own telemetry may open the server span; decide inside
            return await wrapped(scope, receive, send)
    if scope[_SCOPE_KEY] == "span" or _framework_span(scope):
        return await wrapped(scope, receive, send)
    scope[_SCOPE_KEY] = "span"
    return await _serve(ref, wrapped, scope, receive, send)


async def _serve(
    ref: HandlerRef, app: Callable[..., Any], scope: dict[str, Any], receive: Any, send: Any
) -> Any:
    method = str(scope.get("method", "HTTP"))
    path = str(scope.get("path", ""))
    attrs: dict[str, Any] = {
        sc.HTTP_REQUEST_METHOD: method,
        sc.URL_PATH: path,
        sc.URL_SCHEME: scope.get("scheme", "http"),
    }
    client = scope.get("client")
    if client:
        attrs[sc.CLIENT_ADDRESS] = str(client[0])
    headers = {bytes(k).decode("latin-1"): bytes(v).decode("latin-1") for k, v in scope.get("headers") or ()}
    inv = ref().start_http(f"{method} {path}", SpanKind.SERVER, attrs, ctx=extract(headers))
    if inv is None:
        return await app(scope, receive, send)
    status: list[int] = []

    async def send_status(message: Message) -> None:
        if message.get("type") == "http.response.start":
            status.append(int(message.get("status", 0)))
        await send(message)

    token = inv.enter()
    try:
        result = await app(scope, receive, send_status)
    except BaseException as exc:
        inv.exit(token)
        _http.finish(inv, None, exc)
        raise
    inv.exit(token)
    _http.finish(inv, status[0] if status else None)
    return result


def _targets() -> list[tuple[str, str, bool]]:
    """(module, attribute, outer_only): FastAPI's __call__ wraps Starlette's, which decides on the span."""
    targets = [("starlette.applications", "Starlette.__call__", False)]
    if importlib.util.find_spec("fastapi") is not None:
        targets.append(("fastapi.applications", "FastAPI.__call__", True))
    return targets


class StarletteInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Instruments every Starlette and FastAPI application, including ones created before."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        ref = handler_ref(kwargs.get("tracer_provider"))
        for module, name, outer_only in _targets():
            wrap_function_wrapper(module, name, _app_call(ref, outer_only=outer_only))

    def _uninstrument(self, **kwargs: Any) -> None:
        for module, name, _ in _targets():
            owner = importlib.import_module(module)
            unwrap(getattr(owner, name.split(".")[0]), "__call__")


__all__ = ["StarletteInstrumentor"]
