"""Shared by the outgoing-HTTP instrumentations: the CLIENT span, header and /invoke-body injection.

Inside an LLM span reach_otel opened, no extra HTTP span is made (the LLM span is the call), but the
trace headers are still injected so the far side continues the same trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.trace import SpanKind, Status, StatusCode

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.handler import TelemetryHandler, current_llm, suppressed
from reach_otel.invocations import Invocation
from reach_otel.propagation import inject, is_invoke_body

MAX_BODY_REWRITE = 1 << 20  # /invoke bodies larger than this are sent untouched


def _strip_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


@safe
def start_client_span(handler: TelemetryHandler, method: str, url: str) -> Invocation | None:
    """A CLIENT span for one outgoing call, or None when suppressed or inside an LLM span."""
    if suppressed() or current_llm() is not None:
        return None
    parts = urlsplit(url)
    attrs: dict[str, Any] = {
        sc.HTTP_REQUEST_METHOD: method,
        sc.URL_FULL: _strip_userinfo(url),
    }
    if parts.hostname:
        attrs[sc.SERVER_ADDRESS] = parts.hostname
        attrs[sc.SERVER_PORT] = parts.port or (443 if parts.scheme == "https" else 80)
    return handler.start_http(method, SpanKind.CLIENT, attrs)


@safe
def trace_headers(inv: Invocation | None) -> dict[str, str]:
    """traceparent / tracestate / baggage for the call (of its CLIENT span, else the current span)."""
    return inject({}, inv.ctx if inv is not None else None)


@safe
def rewrite_invoke_body(body: bytes | str | None, inv: Invocation | None) -> bytes | None:
    """The body with ``context.trace_id`` (and traceparent) set, when it is an /invoke JSON body."""
    if not body or len(body) > MAX_BODY_REWRITE:
        return None
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    if '"context"' not in text:
        return None
    data = json.loads(text)
    if not isinstance(data, MutableMapping) or not is_invoke_body(data):
        return None
    inject(data, inv.ctx if inv is not None else None)
    return json.dumps(data).encode("utf-8")


def is_json(headers: Mapping[str, str]) -> bool:
    for key, value in headers.items():
        if key.lower() == "content-type":
            return "json" in value.lower()
    return False


@dataclass
class Outcome:
    status_code: int | None = None


@contextmanager
def tracked(inv: Invocation | None) -> Iterator[Outcome]:
    """End the call's span with its status code, or with the exception it raised (re-raised)."""
    outcome = Outcome()
    try:
        yield outcome
    except BaseException as exc:
        finish(inv, None, exc)
        raise
    finish(inv, outcome.status_code)


@safe
def finish(inv: Invocation | None, status_code: int | None, exc: BaseException | None = None) -> None:
    if inv is None:
        return
    if exc is not None:
        inv.fail(exc)
        return
    if status_code is not None:
        inv.span.set_attribute(sc.HTTP_RESPONSE_STATUS_CODE, status_code)
        if status_code >= 500 or (status_code >= 400 and inv.span.kind == SpanKind.CLIENT):  # type: ignore[attr-defined]
            inv.span.set_status(Status(StatusCode.ERROR))
            inv.span.set_attribute(sc.ERROR_TYPE, str(status_code))
    inv.stop()
