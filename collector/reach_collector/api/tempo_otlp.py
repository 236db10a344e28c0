"""Stored span rows → OTLP ``TracesData`` (what Tempo answers for a trace id). Pure, no I/O.

Tempo serves a trace as protobuf (``tempopb.Trace``, wire-identical to ``TracesData``: field 1 is
the repeated ``ResourceSpans``) or as its JSON mapping, where ids are base64 like every protobuf
``bytes`` field. The v2 endpoint wraps it in ``TraceByIDResponse { Trace trace = 1; ... }``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from google.protobuf import json_format
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, TracesData

from reach_collector.ingest.framing import frame

if TYPE_CHECKING:
    from opentelemetry.proto.trace.v1.trace_pb2 import Status

__all__ = ["to_traces_data", "trace_by_id_response", "traces_json"]

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def set_any(out: AnyValue, value: Any) -> None:
    """A stored (JSON-decoded) attribute value into an OTLP ``AnyValue``; bool before int."""
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            out.int_value = value
        else:
            out.string_value = str(value)
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, list):
        out.array_value.SetInParent()
        for item in value:
            set_any(out.array_value.values.add(), item)
    elif isinstance(value, dict):
        out.kvlist_value.SetInParent()
        add_attributes(out.kvlist_value.values, value)
    # None: an empty AnyValue, as OTLP sends for an unset value


def add_attributes(target: Any, attributes: Mapping[str, Any]) -> None:
    for key, value in attributes.items():
        kv: KeyValue = target.add()
        kv.key = key
        set_any(kv.value, value)


def _load(text: str | None, empty: Any) -> Any:
    return json.loads(text) if text else empty


def _fill_span(span: Span, row: Mapping[str, Any]) -> None:
    span.trace_id = bytes.fromhex(row["trace_id"])
    span.span_id = bytes.fromhex(row["span_id"])
    if row["parent_span_id"]:
        span.parent_span_id = bytes.fromhex(row["parent_span_id"])
    span.name = row["name"] or ""
    span.kind = cast("Span.SpanKind.ValueType", int(row["kind"] or 0))  # stored as the OTLP enum value
    span.start_time_unix_nano = int(row["start_ns"])
    span.end_time_unix_nano = int(row["end_ns"])
    if row.get("trace_state"):
        span.trace_state = row["trace_state"]
    if row.get("flags"):
        span.flags = int(row["flags"])
    add_attributes(span.attributes, _load(row["attributes"], {}))
    for event in _load(row["events"], []):
        ev = span.events.add()
        ev.name = event.get("name") or ""
        ev.time_unix_nano = int(event.get("time_unix_nano") or 0)
        add_attributes(ev.attributes, event.get("attributes") or {})
    for link in _load(row["links"], []):
        ln = span.links.add()
        ln.trace_id = bytes.fromhex(link["trace_id"])
        ln.span_id = bytes.fromhex(link["span_id"])
        if link.get("trace_state"):
            ln.trace_state = link["trace_state"]
        add_attributes(ln.attributes, link.get("attributes") or {})
    code = int(row["status_code"])
    span.status.code = cast("Status.StatusCode.ValueType", code if 0 <= code <= 2 else 0)
    if row["status_message"]:
        span.status.message = row["status_message"]


def to_traces_data(rows: Iterable[Mapping[str, Any]]) -> TracesData:
    """One trace's rows (store.schema columns) grouped by resource and scope, first-seen order;
    duplicate span ids (exporter retries) are dropped, as in the collector's own trace view."""
    data = TracesData()
    resources: dict[str | None, ResourceSpans] = {}
    scopes: dict[tuple[str | None, str | None], ScopeSpans] = {}
    seen: set[str] = set()
    for row in rows:
        if row["span_id"] in seen:
            continue
        seen.add(row["span_id"])
        resource_key, scope_key = row["resource"], row["scope"]
        resource_spans = resources.get(resource_key)
        if resource_spans is None:
            resource_spans = resources[resource_key] = data.resource_spans.add()
            add_attributes(resource_spans.resource.attributes, _load(resource_key, {}))
        scope_spans = scopes.get((resource_key, scope_key))
        if scope_spans is None:
            scope_spans = scopes[(resource_key, scope_key)] = resource_spans.scope_spans.add()
            scope = _load(scope_key, None)
            if scope:
                scope_spans.scope.name = scope.get("name") or ""
                scope_spans.scope.version = scope.get("version") or ""
        _fill_span(scope_spans.spans.add(), row)
    return data


def traces_json(data: TracesData) -> dict[str, Any]:
    """The protobuf JSON mapping (camelCase, base64 ids, int64 as strings, enum names)."""
    out: dict[str, Any] = json_format.MessageToDict(data)
    out.setdefault("resourceSpans", [])
    return out


def trace_by_id_response(data: TracesData) -> bytes:
    """``tempopb.TraceByIDResponse`` bytes: field 1 (length-delimited) holding the trace."""
    trace: bytes = data.SerializeToString()
    return frame(1, trace)
