"""Outgoing HTTP through requests: a CLIENT span per call, trace headers and /invoke bodies."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from reach_otel.handler import suppressed
from reach_otel.instrumentation import _http
from reach_otel.instrumentation._base import HandlerRef, handler_ref
from reach_otel.instrumentation.requests.package import _instruments


def _send(ref: HandlerRef) -> Callable[..., Any]:
    def send(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not args or suppressed():
            return wrapped(*args, **kwargs)
        request = args[0]  # a PreparedRequest
        inv = _http.start_client_span(ref(), str(request.method), str(request.url))
        request.headers.update(_http.trace_headers(inv) or {})
        if request.method == "POST" and _http.is_json(request.headers):
            body = _http.rewrite_invoke_body(request.body, inv)
            if body is not None:
                request.body = body
                request.headers["Content-Length"] = str(len(body))
        with _http.tracked(inv) as outcome:
            response = wrapped(*args, **kwargs)
            outcome.status_code = response.status_code
        return response

    return send


class RequestsInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        wrap_function_wrapper(
            "requests.sessions", "Session.send", _send(handler_ref(kwargs.get("tracer_provider")))
        )

    def _uninstrument(self, **kwargs: Any) -> None:
        import requests.sessions

        unwrap(requests.sessions.Session, "send")


__all__ = ["RequestsInstrumentor"]
