"""Request body → ``SpanBatch``, through the compiled fast path when it is built and can take the
request, else through the pure-Python reference (``wire`` + ``rows.flatten``).

``_fastflat`` (a C extension, built at install when a compiler is there; optional) walks an OTLP
protobuf request once, without the GIL, and writes the span table's Arrow buffers directly, with
the same promotion rules as ``normalize.promote``; it folds the lookup parts and the exposition
stats as it goes (the rules of ``store.summary.fold`` and ``BatchStats.add``). For any shape it does
not handle it answers None and the reference decodes the request, so the rows are the same either
way; the tests check that value by value. It reads the wire as strictly as protobuf's own parser:
a body that parser rejects is never taken.
It also computes ``request_cost``, a cheap bound the service checks before decoding.
``REACH_COLLECTOR_PURE_PYTHON=1`` turns the fast path off.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Final

import pyarrow as pa

from reach_collector.ingest.batch_stats import DURATION_BUCKETS, BatchStats
from reach_collector.ingest.decode import PROTOBUF, parse_for_rows
from reach_collector.ingest.normalize import (
    _OPENINFERENCE_KINDS,
    _TRACELOOP_KINDS,
    _TRACELOOP_REQUEST_TYPES,
    INVOCATION_MODEL_KEYS,
    PROMOTED_KEYS,
)
from reach_collector.ingest.rows import PROBLEMS, SpanBatch, flatten
from reach_collector.store import summary
from reach_collector.store.schema import ARROW_SCHEMA
from reach_collector.store.summary import parts_table
from reach_otel import semconv as sc

log = logging.getLogger(__name__)

try:
    from reach_collector.ingest import _fastflat  # type: ignore[attr-defined]
except ImportError:  # no compiler at install: the reference path serves every request
    _fastflat = None

# The attribute keys the compiled promotion reads, in the order of its K_* enum.
KEYS: Final = (
    sc.GEN_AI_OPERATION_NAME,
    sc.TRACELOOP_SPAN_KIND,
    sc.TRACELOOP_ENTITY_NAME,
    sc.TRACELOOP_REQUEST_TYPE,
    sc.OPENINFERENCE_SPAN_KIND,
    sc.REACH_HOP_COUNT,
    sc.REACH_LOOP_DETECTED,
    sc.REACH_HANDOFF_STATUS,
    sc.ERROR_TYPE,
    sc.GEN_AI_AGENT_NAME,
    sc.OPENINFERENCE_AGENT_NAME,
    sc.REACH_HANDOFF_SOURCE,
    sc.GEN_AI_HANDOFF_FROM_AGENT,
    sc.REACH_AGENT_NAME,
    sc.REACH_HANDOFF_TARGET,
    sc.GEN_AI_TRANSFER_TARGET_NAME,
    sc.GEN_AI_HANDOFF_TO_AGENT,
    sc.REACH_HANDOFF_MODE,
    sc.GEN_AI_TRANSFER_MODE,
    sc.GEN_AI_TOOL_NAME,
    sc.OPENINFERENCE_TOOL_NAME,
    sc.GEN_AI_REQUEST_MODEL,
    sc.GEN_AI_RESPONSE_MODEL,
    sc.OPENINFERENCE_LLM_MODEL_NAME,
    sc.GEN_AI_PROVIDER_NAME,
    sc.GEN_AI_SYSTEM,
    sc.OPENINFERENCE_LLM_PROVIDER,
    sc.OPENINFERENCE_LLM_SYSTEM,
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_PROMPT_TOKENS,
    sc.OPENINFERENCE_TOKEN_PROMPT,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.GEN_AI_USAGE_COMPLETION_TOKENS,
    sc.OPENINFERENCE_TOKEN_COMPLETION,
    sc.GEN_AI_CONVERSATION_ID,
    sc.OPENINFERENCE_SESSION_ID,
    sc.OPENINFERENCE_LLM_INVOCATION_PARAMETERS,
    sc.OPENINFERENCE_INPUT_VALUE,
    sc.OPENINFERENCE_OUTPUT_VALUE,
    sc.SERVICE_NAME,  # the resource's service column
    sc.EXCEPTION_TYPE,  # an exception event's error type
)
# The operations it names (its OP_* enum), and the other instrumentations' kinds, in the order of
# its *K_* enum: the keys of normalize's mappings, whose values it follows.
OPS: Final = (
    sc.OP_WORKFLOW,
    sc.OP_AGENT,
    sc.OP_TOOL,
    sc.OP_CHAT,
    sc.OP_TEXT_COMPLETION,
    sc.OP_EMBEDDINGS,
    sc.OP_HANDOFF,
)
KINDS: Final = (*_TRACELOOP_KINDS, *_TRACELOOP_REQUEST_TYPES, *_OPENINFERENCE_KINDS)
# Names it matches, in the order of its T_* enum (OpenInference's, and normalize's JSON keys, last).
TEXTS: Final = (
    sc.EXCEPTION_EVENT,
    sc.EVENT_LOOP_DETECTED,
    sc.HEARTBEAT_SPAN_NAME,
    sc.OPENINFERENCE_REDACTED,
    sc.OPENINFERENCE_HANDOFF_SPAN,
    sc.OPENINFERENCE_HANDOFF_TO,
    *INVOCATION_MODEL_KEYS,
)

if set(KEYS[:-2]) != PROMOTED_KEYS:  # pragma: no cover - a new promoted key needs the C side too
    raise ImportError("fast.KEYS and normalize.PROMOTED_KEYS differ")
# What the compiled decoder matches against, set once per process (a second call with the same
# values is a no-op: decodes read them without the GIL, so they never change once set).
CONFIGURATION: Final = (KEYS, OPS, KINDS, TEXTS, tuple(sc.LLM_OPERATIONS), DURATION_BUCKETS)
# The trace summary it folds parts by (store.summary), given with the rest, fixed the same way.
SUMMARY: Final = summary.compiled()
if _fastflat is not None:
    try:
        _fastflat.configure(*CONFIGURATION, SUMMARY)
        if not hasattr(_fastflat, "cost"):
            raise TypeError("no cost()")
    except (TypeError, ValueError):  # built from an older source: decode in Python until rebuilt
        log.warning("the compiled decoder is out of date (reinstall to rebuild it); decoding in Python")
        _fastflat = None
    except RuntimeError:  # configured with other values in this process: not ours to use
        log.warning("the compiled decoder is configured differently in this process; decoding in Python")
        _fastflat = None


def enabled() -> bool:
    return _fastflat is not None and os.environ.get("REACH_COLLECTOR_PURE_PYTHON", "") in ("", "0")


def why_off() -> str | None:
    """Why protobuf requests are decoded in pure Python (None when the compiled path is on)."""
    if _fastflat is None:
        return "the compiled decoder is not built, or is out of date: reinstall where a C compiler is"
    if not enabled():
        return "REACH_COLLECTOR_PURE_PYTHON is set"
    return None


def _array(field: pa.Field, rows: int, buffers: tuple[bytes | None, bytes | None, bytes]) -> pa.Array:
    validity, offsets, values = buffers
    bufs = [None if validity is None else pa.py_buffer(validity)]
    if offsets is not None:
        bufs.append(pa.py_buffer(offsets))
    bufs.append(pa.py_buffer(values))
    return pa.Array.from_buffers(field.type, rows, bufs)


def flatten_protobuf(body: bytes, parts: bool = True) -> SpanBatch | None:
    """The compiled path: None when it is off, not built, or the request is not a shape it takes.
    Without ``parts`` the batch's parts are empty (for a store that computes them itself)."""
    if not enabled():
        return None
    try:
        out: Any = _fastflat.flatten(body, parts)
        return None if out is None else _batch(*out)
    except Exception:  # a bug here must not cost the request: the reference decodes it
        log.warning("the compiled decoder failed; decoding this request in Python", exc_info=True)
        return None


def request_cost(raw: bytes) -> int | None:
    """A decompressed protobuf request's cost: ``len(raw)`` plus, for every span, the wire lengths
    of its ResourceSpans' ``resource`` and its ScopeSpans' ``scope`` — about what flattening copies,
    since every row carries its resource and scope. Read from tags and lengths alone (span bodies
    are skipped), without the GIL for large bodies. None when the compiled path is off or not
    built, or the body is malformed at those levels: the caller estimates it in Python then."""
    if not enabled():
        return None
    try:
        cost: int | None = _fastflat.cost(raw)
    except Exception:  # a bug here must not cost the request: the caller estimates it in Python
        log.warning("the compiled cost pass failed; estimating in Python", exc_info=True)
        return None
    return cost


def _batch(rows: int, columns: list[Any], folds: tuple[Any, ...], rejected: int, codes: Any) -> SpanBatch:
    arrays = [_array(field, rows, bufs) for field, bufs in zip(ARROW_SCHEMA, columns, strict=True)]
    calls, tokens, handoffs, traces, beats, parts = folds
    return SpanBatch(
        pa.Table.from_arrays(arrays, schema=ARROW_SCHEMA),
        parts_table(parts),
        rejected,
        tuple(PROBLEMS[code - 1] for code in codes),
        BatchStats(calls, tokens, handoffs, traces, beats),
    )


def flatten_body(raw: bytes, media: str, parts: bool = True) -> SpanBatch:
    """A decompressed request body → its batch; raises ``UndecodableBody`` like ``parse_for_rows``."""
    if media == PROTOBUF:
        batch = flatten_protobuf(raw, parts)
        if batch is not None:
            return batch
    return flatten(parse_for_rows(raw, media), parts)
