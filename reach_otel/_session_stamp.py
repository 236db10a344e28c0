"""Every span of a request carries its conversation, user and task ids, as the peers record them.

Our own spans take them when they start (``handler``); this processor gives them to the other spans
started in the same request too — an HTTP client call, a database query, another library's
instrumentation — from the session current where each span starts. An id a span already has stays.
"""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import Span, SpanProcessor

from reach_otel._safety import safe
from reach_otel.handler import session_attributes


class SessionAttributes(SpanProcessor):
    """On start, each span without them gets the current session's ids (nothing else, no export)."""

    @safe
    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        ctx = parent_context if parent_context is not None else otel_context.get_current()
        attrs = session_attributes(ctx)
        if not attrs:
            return
        have = span.attributes or {}
        missing = {k: v for k, v in attrs.items() if k not in have}
        if missing:
            span.set_attributes(missing)
