"""Flatten a decoded ``ExportTraceServiceRequest`` into one Arrow table of span rows (pure).

Invalid spans (bad ids, out-of-range times) are counted and described for ``partial_success``
instead of failing the request. Attributes, events, links and resource stay whole as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_collector.ingest.batch_stats import BatchStats
from reach_collector.ingest.normalize import EXCEPTION_EVENT, EXCEPTION_TYPE, promote
from reach_collector.ingest.wire import attributes, from_message
from reach_collector.store.schema import ARROW_SCHEMA, SPAN_NAMES
from reach_collector.store.summary import fold, parts_table
from reach_otel import semconv as sc

_MAX_NS: Final = 2**63 - 1
_ZERO_TRACE: Final = bytes(16)
_ZERO_SPAN: Final = bytes(8)
_MAX_REASONS: Final = 5

try:  # orjson is several times faster at the one step that dominates flattening
    import orjson

    def _dumps(value: Any) -> str:
        return orjson.dumps(value).decode()

except ImportError:  # pragma: no cover - the stdlib encoder gives the same text
    _encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode

    def _dumps(value: Any) -> str:
        return _encode(value)


@dataclass(frozen=True)
class SpanBatch:
    """The rows of one request, plus what partial success must report."""

    table: pa.Table
    parts: pa.Table  # one lookup row per trace in this batch (see store.schema)
    rejected: int
    reasons: tuple[str, ...] = ()  # why spans were rejected, each once (at most _MAX_REASONS)
    stats: BatchStats = field(default_factory=BatchStats)  # what /metrics folds in at commit

    @property
    def accepted(self) -> int:
        return int(self.table.num_rows)

    @property
    def message(self) -> str:
        return f"rejected {self.rejected} span(s): " + "; ".join(self.reasons) if self.rejected else ""


def merge_batches(batches: list[SpanBatch]) -> SpanBatch:
    """One batch from the batches of one request's pieces, in order (see ``ingest.split``)."""
    if len(batches) == 1:
        return batches[0]
    stats = BatchStats()
    reasons: list[str] = []
    for batch in batches:
        stats.merge(batch.stats)
        reasons.extend(r for r in batch.reasons if r not in reasons)
    return SpanBatch(
        pa.concat_tables([b.table for b in batches]).combine_chunks(),
        pa.concat_tables([b.parts for b in batches]).combine_chunks(),
        sum(b.rejected for b in batches),
        tuple(reasons[:_MAX_REASONS]),
        stats,
    )


# Why a span is rejected, in the order the checks run (the compiled path reports 1-based codes).
PROBLEMS: Final = (
    "invalid trace_id (need 16 non-zero bytes, 32 hex digits in JSON)",
    "invalid span_id (need 8 non-zero bytes, 16 hex digits in JSON)",
    "invalid parent_span_id (need 8 bytes or empty)",
    "timestamp out of range",
    "end_time_unix_nano is before start_time_unix_nano",
)


def _problem(tid: bytes, sid: bytes, pid: bytes, start: int, end: int) -> str | None:
    if len(tid) != 16 or tid == _ZERO_TRACE:
        return PROBLEMS[0]
    if len(sid) != 8 or sid == _ZERO_SPAN:
        return PROBLEMS[1]
    if pid and len(pid) != 8:
        return PROBLEMS[2]
    if start > _MAX_NS or end > _MAX_NS:
        return PROBLEMS[3]
    if end < start:
        return PROBLEMS[4]
    return None


def flatten(request: ExportTraceServiceRequest | Any, parts: bool = True) -> SpanBatch:
    """Rows of an official request or a ``wire.WireRequest`` (the faster read of the same bytes).
    Without ``parts`` the batch's trace parts are empty: for a store that computes the summary
    itself (``WriteProfile.computes_summary``)."""
    request = from_message(request)
    rows: list[tuple[Any, ...]] = []
    summaries: dict[str, list[Any]] = {}
    rejected = 0
    reasons: list[str] = []
    stats = BatchStats()
    for rs in request.resource_spans:
        res_attrs = attributes(rs.resource.attributes)
        service = res_attrs.get(sc.SERVICE_NAME)
        if service.__class__ is not str:
            service = None
        resource_json = _dumps(res_attrs)
        for ss in rs.scope_spans:
            scope = ss.scope
            scope_json = (
                _dumps({"name": scope.name, "version": scope.version})
                if scope.name or scope.version
                else None
            )
            for span in ss.spans:
                # Each upb field read builds a Python object: read every field once.
                ids = span.trace_id, span.span_id, span.parent_span_id
                times = span.start_time_unix_nano, span.end_time_unix_nano
                problem = _problem(*ids, *times)
                if problem is not None:
                    _parse_unused(span)
                    rejected += 1
                    if problem not in reasons and len(reasons) < _MAX_REASONS:
                        reasons.append(problem)
                    continue
                row = _row(span, ids, times, service, resource_json, scope_json)
                rows.append(row)
                if parts:  # in the decoding worker: the writer only appends
                    fold(summaries, row)
                stats.add(row)
    return SpanBatch(_table(rows), parts_table(summaries), rejected, tuple(reasons), stats)


def _parse_unused(span: Any) -> None:
    """Parse the attributes of a span that is rejected, and of its events and links, as protobuf's
    parser does: ``WireRequest`` keeps them as bytes, and a body with an invalid ``KeyValue`` there
    must be refused (400) like any body protobuf rejects, not taken with the span counted as
    rejected. Raises like ``wire.attributes``; costs nothing for the spans that become rows."""
    attributes(span.attributes)
    for event in span.events:
        attributes(event.attributes)
    for link in span.links:
        attributes(link.attributes)


def _table(rows: list[tuple[Any, ...]]) -> pa.Table:
    # Transposing row tuples with zip runs in C; far cheaper than appending to 33 lists per span.
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(SPAN_NAMES)
    arrays = [pa.array(col, type=field.type) for col, field in zip(columns, ARROW_SCHEMA, strict=True)]
    return pa.Table.from_arrays(arrays, schema=ARROW_SCHEMA)


def _row(
    span: Any,
    ids: tuple[bytes, bytes, bytes],
    times: tuple[int, int],
    service: str | None,
    resource: str,
    scope: str | None,
) -> tuple[Any, ...]:
    attrs = attributes(span.attributes)
    event_names: tuple[str, ...] = ()
    exception_type = None
    events_json = None
    if span.events:
        events = []
        for ev in span.events:
            ev_attrs = attributes(ev.attributes)
            if ev.name == EXCEPTION_EVENT and exception_type is None:
                et = ev_attrs.get(EXCEPTION_TYPE)
                exception_type = et if isinstance(et, str) else None
            events.append({"name": ev.name, "time_unix_nano": ev.time_unix_nano, "attributes": ev_attrs})
        event_names = tuple(e["name"] for e in events)
        events_json = _dumps(events)
    links_json = None
    if span.links:
        links_json = _dumps(
            [
                {
                    "trace_id": ln.trace_id.hex(),
                    "span_id": ln.span_id.hex(),
                    "trace_state": ln.trace_state,
                    "attributes": attributes(ln.attributes),
                }
                for ln in span.links
            ]
        )
    status = span.status
    status_code = status.code
    if not 0 <= status_code <= 2:
        status_code = 0
    kind = span.kind
    if not 0 <= kind <= 5:
        kind = 0
    tid, sid, pid = ids
    start, end = times
    name = span.name
    return (
        tid.hex(),
        sid.hex(),
        pid.hex() if pid else None,
        name,
        kind,
        start,
        end,
        (end - start) / 1e6,
        status_code,
        status.message,
        service,
        *promote(attrs, status_code, event_names, exception_type, name),
        span.trace_state or None,
        span.flags,
        _dumps(attrs),
        events_json,
        links_json,
        resource,
        scope,
    )
