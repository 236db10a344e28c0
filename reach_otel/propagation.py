"""inject / extract / attach: carry one trace (and its hop state) across HTTP hops.

A carrier is either a header dict (W3C ``traceparent``, ``tracestate``, ``baggage``) or an
``/invoke`` body, whose ``context`` gets ``trace_id`` (32 hex) plus the same W3C fields so the
parent span survives the hop. Our baggage is ``reach.hops`` and ``reach.path``, and the ids of the
session being served (``reach.session``, ``reach.user``, ``reach.task``, set by ``session()``): the
far side's spans carry them as ``gen_ai.conversation.id``, ``user.id`` and ``reach.task.id``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import baggage, propagate, trace
from opentelemetry import context as otel_context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, format_trace_id

from reach_otel import handoff_state as hf
from reach_otel import semconv as sc
from reach_otel._safety import logger, safe
from reach_otel.handler import adopt_session, get_handler

C = TypeVar("C", bound=MutableMapping[str, Any])

_W3C_FIELDS = (sc.INVOKE_TRACEPARENT, sc.INVOKE_TRACESTATE, sc.INVOKE_BAGGAGE)
_INVOKE_KEYS = ("request_id", "invoke_mode", "target", "params", "callback")


def is_invoke_body(carrier: Mapping[str, Any]) -> bool:
    """An ``/invoke`` body has a ``context`` object (or the protocol's other top-level keys)."""
    inner = carrier.get(sc.INVOKE_CONTEXT)
    if isinstance(inner, Mapping):
        return True
    return inner is None and any(key in carrier for key in _INVOKE_KEYS)


def _with_hop_baggage(ctx: otel_context.Context) -> otel_context.Context:
    span_context = trace.get_current_span(ctx).get_span_context()
    if not span_context.is_valid:
        return ctx
    state = get_handler().hops.peek(span_context.trace_id)
    if state is None or (state.hops == 0 and not state.path):
        return ctx
    ctx = baggage.set_baggage(sc.BAGGAGE_HOPS, str(state.hops), ctx)
    return baggage.set_baggage(sc.BAGGAGE_PATH, hf.encode_path(state.path), ctx)


@safe
def _inject(carrier: MutableMapping[str, Any], ctx: otel_context.Context | None) -> None:
    ctx = _with_hop_baggage(ctx if ctx is not None else otel_context.get_current())
    if not is_invoke_body(carrier):
        propagate.inject(carrier, context=ctx)
        return
    inner = carrier.get(sc.INVOKE_CONTEXT)
    if not isinstance(inner, MutableMapping):
        inner = carrier[sc.INVOKE_CONTEXT] = {}
    headers: dict[str, str] = {}
    propagate.inject(headers, context=ctx)
    span_context = trace.get_current_span(ctx).get_span_context()
    if span_context.is_valid:
        inner[sc.INVOKE_TRACE_ID] = format_trace_id(span_context.trace_id)
    for key in _W3C_FIELDS:
        if key in headers:
            inner[key] = headers[key]


def inject(carrier: C, context: otel_context.Context | None = None) -> C:
    """Write the current trace into ``carrier`` (headers or an /invoke body) and return it."""
    _inject(carrier, context)
    return carrier


def _lower_headers(carrier: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in carrier.items()}


def _context_from_trace_id(raw: Any, ctx: otel_context.Context) -> otel_context.Context:
    """Continue a trace known only by its id: a remote parent with that id and a fresh span id."""
    if not isinstance(raw, str) or len(raw) != 32:
        return ctx
    try:
        trace_id = int(raw, 16)
    except ValueError:
        return ctx
    if trace_id == 0:
        return ctx
    parent = SpanContext(
        trace_id, random.getrandbits(64) or 1, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    return trace.set_span_in_context(NonRecordingSpan(parent), ctx)


def extract(
    carrier: Mapping[str, Any] | None, context: otel_context.Context | None = None
) -> otel_context.Context:
    """The OpenTelemetry ``Context`` a carrier (headers or /invoke body) describes."""
    base = context if context is not None else otel_context.get_current()
    try:
        if not isinstance(carrier, Mapping):
            return base
        if not is_invoke_body(carrier):
            return adopt_session(propagate.extract(_lower_headers(carrier), context=base))
        inner = carrier.get(sc.INVOKE_CONTEXT)
        inner = inner if isinstance(inner, Mapping) else {}
        fields = {k: v for k, v in _lower_headers(inner).items() if k in _W3C_FIELDS and isinstance(v, str)}
        ctx = propagate.extract(fields, context=base)
        if not trace.get_current_span(ctx).get_span_context().is_valid:
            ctx = _context_from_trace_id(inner.get(sc.INVOKE_TRACE_ID), ctx)
        return adopt_session(ctx)
    except Exception:  # telemetry must never raise into user code
        logger.debug("reach_otel: extract failed", exc_info=True)
        return base


@contextmanager
def attach(carrier: Mapping[str, Any] | None) -> Iterator[otel_context.Context]:
    """Continue the carrier's trace inside the block."""
    ctx = extract(carrier)
    token = otel_context.attach(ctx)
    try:
        yield ctx
    finally:
        otel_context.detach(token)
