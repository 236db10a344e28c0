"""``evaluate()`` and ``feedback()``: outcomes recorded as the GenAI conventions'
``gen_ai.evaluation.result`` event, emitted through the OpenTelemetry Logs API to the collector
``init()`` exports to (its ``LoggerProvider``; without ``init()``, the application's global one).

An evaluation is parented to a span: the one given, else the ids given, else the current span. It
never raises into the caller and never blocks it: records queue in the SDK's bounded batch
processor and are exported off the caller's thread (``flush()``/``shutdown()`` bound the wait).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Final

from opentelemetry import trace
from opentelemetry._logs import LogRecord, get_logger_provider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from reach_otel import semconv as sc
from reach_otel._safety import logger, safe

__all__ = ["evaluate", "feedback", "set_logger_provider"]

_SCOPE: Final = "reach_otel.evaluations"
_MAX_TEXT: Final = 256  # as the collector stores them: name, label, response id
_MAX_EXPLANATION: Final = 4096

_lock = threading.Lock()
_provider: Any = None  # init()'s LoggerProvider; None: the global one


def set_logger_provider(provider: Any) -> None:
    """The LoggerProvider evaluations go to (``init()`` sets its own; None: the global one)."""
    global _provider
    with _lock:
        _provider = provider


def _ids(span: Any, trace_id: str | int | None, span_id: str | int | None) -> tuple[int, int, int]:
    """(trace id, span id, trace flags) of the evaluated span: explicit ids, else ``span``'s, else
    the current span's; zeros when there is none."""
    if trace_id is not None:
        tid = int(trace_id, 16) if isinstance(trace_id, str) else int(trace_id)
        sid = (int(span_id, 16) if isinstance(span_id, str) else int(span_id)) if span_id is not None else 0
        if not 0 < tid < 1 << 128 or not 0 <= sid < 1 << 64:
            raise ValueError("trace_id must be 32 hex digits (not all zero), span_id 16")
        return tid, sid, int(TraceFlags.SAMPLED)
    context = (span if span is not None else trace.get_current_span()).get_span_context()
    if not context.is_valid:
        return 0, 0, 0
    return context.trace_id, context.span_id, int(context.trace_flags)


def _text(value: Any, what: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string")
    return value[:limit]


@safe(default=False)
def evaluate(
    name: str,
    *,
    score: float | None = None,
    label: str | None = None,
    explanation: str | None = None,
    span: Any = None,
    trace_id: str | int | None = None,
    span_id: str | int | None = None,
    response_id: str | None = None,
) -> bool:
    """Record an evaluation of a span (an LLM judge's verdict, a heuristic's score): ``name`` what
    was evaluated for, ``score`` a number and/or ``label`` a verdict, ``explanation`` why. The
    span evaluated: ``span``, else ``trace_id``/``span_id`` (hex or int), else the current span;
    ``response_id`` (``gen_ai.response.id``) correlates it with an LLM call when there is no span.
    Returns whether it was handed to a LoggerProvider; never raises (bad arguments are logged)."""
    attributes: dict[str, Any] = {sc.GEN_AI_EVALUATION_NAME: _text(name, "name", _MAX_TEXT)}
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise ValueError("score must be a finite number")
        attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] = float(score)
    for key, value, what, limit in (
        (sc.GEN_AI_EVALUATION_SCORE_LABEL, label, "label", _MAX_TEXT),
        (sc.GEN_AI_EVALUATION_EXPLANATION, explanation, "explanation", _MAX_EXPLANATION),
        (sc.GEN_AI_RESPONSE_ID, response_id, "response_id", _MAX_TEXT),
    ):
        text = _text(value, what, limit)
        if text is not None:
            attributes[key] = text
    tid, sid, flags = _ids(span, trace_id, span_id)
    provider = _provider if _provider is not None else get_logger_provider()
    provider.get_logger(_SCOPE).emit(
        LogRecord(
            timestamp=time.time_ns(),
            # the ids travel as a span in a context of their own (the SDK reads them from it)
            context=set_span_in_context(NonRecordingSpan(SpanContext(tid, sid, False, TraceFlags(flags)))),
            event_name=sc.GEN_AI_EVALUATION_RESULT,
            attributes=attributes,
        )
    )
    logger.debug("reach_otel: evaluation %r recorded", name)
    return True


def feedback(
    *,
    score: float | None = None,
    label: str | None = None,
    comment: str | None = None,
    span: Any = None,
    trace_id: str | int | None = None,
    span_id: str | int | None = None,
    name: str = sc.EVALUATION_USER_FEEDBACK,
) -> bool:
    """A user's verdict on a span or a trace (a thumbs up or down, a rating, a comment): an
    evaluation named ``user_feedback`` unless ``name`` says otherwise. With only ``trace_id``,
    the collector puts it on the trace's root span."""
    result: bool = evaluate(
        name, score=score, label=label, explanation=comment, span=span, trace_id=trace_id, span_id=span_id
    )
    return result
