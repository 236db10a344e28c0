"""Outgoing HTTP through httpx and httpx2 (the transport of current openai/anthropic clients).

A CLIENT span per call, W3C trace headers injected, and an /invoke JSON body's ``context.trace_id``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel.handler import suppressed
from reach_otel.instrumentation import _http
from reach_otel.instrumentation._base import HandlerRef, handler_ref
from reach_otel.instrumentation.httpx.package import _instruments

_LIBRARIES = ("httpx", "httpx2")


def _prepare(handler_ref_: HandlerRef, request: Any) -> tuple[Any, Any]:
    """Start the span and return (span, request with trace context)."""
    if suppressed():  # e.g. an exporter's own call: leave it completely alone
        return None, request
    inv = _http.start_client_span(handler_ref_(), str(request.method), str(request.url))
    headers = _http.trace_headers(inv) or {}
    for key, value in headers.items():
        request.headers[key] = value
    if request.method == "POST" and _http.is_json(request.headers):
        try:
            content = request.content
        except Exception:  # a streaming body is sent as it is
            content = None
        body = _http.rewrite_invoke_body(content, inv)
        if body is not None:
            headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
            request = type(request)(
                request.method, request.url, headers=headers, content=body, extensions=request.extensions
            )
    return inv, request


def _sync(ref: HandlerRef) -> Callable[..., Any]:
    def send(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not args:
            return wrapped(*args, **kwargs)
        inv, request = _prepare(ref, args[0])
        with _http.tracked(inv) as outcome:
            response = wrapped(request, *args[1:], **kwargs)
            outcome.status_code = response.status_code
        return response

    return send


def _async(ref: HandlerRef) -> Callable[..., Any]:
    async def send(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not args:
            return await wrapped(*args, **kwargs)
        inv, request = _prepare(ref, args[0])
        with _http.tracked(inv) as outcome:
            response = await wrapped(request, *args[1:], **kwargs)
            outcome.status_code = response.status_code
        return response

    return send


def _present() -> list[str]:
    return [name for name in _LIBRARIES if importlib.util.find_spec(name) is not None]


class HTTPXInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        ref = handler_ref(kwargs.get("tracer_provider"))
        for name in _present():
            wrap_function_wrapper(name, "Client.send", _sync(ref))
            wrap_function_wrapper(name, "AsyncClient.send", _async(ref))

    def _uninstrument(self, **kwargs: Any) -> None:
        for name in _present():
            module = importlib.import_module(name)
            unwrap(module.Client, "send")
            unwrap(module.AsyncClient, "send")


__all__ = ["HTTPXInstrumentor"]
