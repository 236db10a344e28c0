"""The row budget of one ingest request (``server.max_row_bytes``), checked before any row is built.

Every stored span row carries its resource and its scope whole, so a small body whose many spans
share one large resource expands into rows thousands of times its size (a 24 KB gzip body of
tiny spans under a 600 KB resource is 4 GB of rows). The cost of a request is defined as

    cost = len(decompressed body) + Σ over ResourceSpans Σ over its ScopeSpans
           (number of spans) × (R + S)

with R the encoded (protobuf) size of that ResourceSpans' ``resource`` and S that of the
ScopeSpans' ``scope``. It is counted per group, not per span, from the wire framing (the compiled
pre-pass ``fast.request_cost``, or ``framing_cost`` here) or from a parsed message
(``message_cost``, which takes ``ByteSize()``). An OTLP JSON body is measured on its JSON
document, before the spans become a message (``json_cost``): the length of its JSON text, plus R
and S as that resource and scope are encoded in protobuf, the same as ``message_cost`` of the
parsed request. Over the limit the request is refused whole with a 413 (gRPC: INVALID_ARGUMENT), which
OTLP exporters do not retry.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from reach_collector.config import DEFAULT_MAX_ROW_BYTES
from reach_collector.ingest import fast
from reach_collector.ingest.decode import JSON, BodyTooLarge, _list, json_request, load_json, parse_for_rows
from reach_collector.ingest.framing import LEN, Malformed, records
from reach_collector.ingest.rows import SpanBatch, flatten

__all__ = [
    "DEFAULT_MAX_ROW_BYTES",
    "Cost",
    "RowBudgetExceeded",
    "check",
    "flatten_within",
    "framing_cost",
    "json_cost",
    "message_cost",
    "out_of_memory",
    "wire_cost",
]

_RESOURCE_SPANS: Final = 1  # ExportTraceServiceRequest.resource_spans
_HEADER: Final = 1  # ResourceSpans.resource and ScopeSpans.scope
_CHILD: Final = 2  # ResourceSpans.scope_spans and ScopeSpans.spans


class RowBudgetExceeded(BodyTooLarge):
    """The request's span rows would exceed ``server.max_row_bytes`` (413, never retried).

    Built from its message alone, so it pickles back from a decoder process like the others."""


class Cost(NamedTuple):
    bytes: int
    spans: int | None  # None when the compiled pre-pass measured it (it counts bytes only)


def message_cost(request: Any, body_bytes: int) -> Cost:
    """The cost of a parsed request (an official ``ExportTraceServiceRequest`` or a
    ``wire.WireRequest``) whose decompressed body is ``body_bytes`` long."""
    total, spans = body_bytes, 0
    for rs in request.resource_spans:
        resource = rs.resource.ByteSize()
        for ss in rs.scope_spans:
            n = len(ss.spans)
            spans += n
            total += n * (resource + ss.scope.ByteSize())
    return Cost(total, spans)


def json_cost(document: dict[str, Any], body_bytes: int) -> Cost:
    """The cost of an OTLP JSON document (``decode.load_json``), equal to ``message_cost`` of the
    request it parses to; only resources and scopes become messages here, one per group, so a
    request over the limit is refused before its spans are parsed."""
    total, spans = body_bytes, 0
    for rs in _list(document, "resourceSpans", "resource_spans"):
        if not isinstance(rs, dict):
            continue  # not a message: the parse says so
        resource = _encoded_size(rs.get("resource"), Resource)
        for ss in _list(rs, "scopeSpans", "scope_spans"):
            if not isinstance(ss, dict):
                continue
            n = len(_list(ss, "spans"))
            spans += n
            total += n * (resource + _encoded_size(ss.get("scope"), InstrumentationScope))
    return Cost(total, spans)


def _encoded_size(value: Any, kind: type[Message]) -> int:
    if not isinstance(value, dict):
        return 0
    message = kind()
    try:
        json_format.ParseDict(value, message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError):
        return 0  # invalid: the whole request's parse fails and says why, with no row built
    return int(message.ByteSize())


def _walk(buf: bytes, start: int, end: int, keep: bool) -> tuple[int, int, list[tuple[int, int]]]:
    """The message ``buf[start:end]`` → (payload bytes of its field 1, how many field-2 records it
    has, and when ``keep`` their payloads' (start, end)): a resource or scope header and its child
    records, from the framing alone."""
    header = count = 0
    children: list[tuple[int, int]] = []
    for _, field, wire, payload, after in records(buf, start, end):
        if wire != LEN:
            continue
        if field == _HEADER:
            header += after - payload
        elif field == _CHILD:
            count += 1
            if keep:
                children.append((payload, after))
    return header, count, children


def framing_cost(raw: bytes) -> Cost | None:
    """The cost of a protobuf body read from its framing alone (no span is parsed); None when the
    framing is not what OTLP describes (the decoder then says what is wrong)."""
    total, spans = len(raw), 0
    try:
        resources: list[tuple[int, int]] = []
        for _, field, wire, payload, after in records(raw, 0, len(raw)):  # only resource_spans is one
            if wire != LEN:
                raise Malformed
            if field == _RESOURCE_SPANS:
                resources.append((payload, after))
        for r_start, r_end in resources:
            resource, _, scopes = _walk(raw, r_start, r_end, keep=True)
            for s_start, s_end in scopes:
                scope, count, _ = _walk(raw, s_start, s_end, keep=False)
                spans += count
                total += count * (resource + scope)
    except Malformed:
        return None
    return Cost(total, spans)


def wire_cost(raw: bytes) -> Cost | None:
    """The cost of a protobuf body without parsing it: the compiled pre-pass when it is on and
    takes the body, else the same walk in Python. None for a body whose framing is malformed."""
    compiled = getattr(fast, "request_cost", None)
    if compiled is not None and fast.enabled():
        measured = compiled(raw)
        if measured is not None:
            return Cost(int(measured), None)
    return framing_cost(raw)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" or value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def check(cost: Cost, limit: int) -> None:
    """Raise ``RowBudgetExceeded`` when ``cost`` is over ``limit`` bytes."""
    if cost.bytes <= limit:
        return
    spans = f"each of its {cost.spans:,} spans" if cost.spans is not None else "each of its spans"
    raise RowBudgetExceeded(
        f"the request would store {_size(cost.bytes)} of span rows ({cost.bytes} bytes: its resource "
        f"and scope are copied into {spans}), over server.max_row_bytes = {_size(limit)}; "
        "send fewer spans per request or a smaller resource"
    )


def out_of_memory(stage: str) -> BodyTooLarge:
    """The 413 for a request the collector could not hold in memory while ``stage`` (decoding,
    storing): it is this request that is too large, so exporters must not retry it."""
    return BodyTooLarge(
        f"the collector ran out of memory {stage} this request's span rows; "
        "send fewer spans per request or a smaller resource (see server.max_row_bytes)"
    )


def flatten_within(raw: bytes, media: str, limit: int, parts: bool = True) -> SpanBatch:
    """A decompressed body → its rows through the reference decoder (parsed once, for the cost and
    the rows), refused before any row is built when its cost is over ``limit``. Raises
    ``BodyError`` subclasses like ``fast.flatten_body``; ``parts`` as ``rows.flatten`` takes it.
    (The compiled path runs before this, in ``IngestService``; a body that reaches here is one it
    declined or that it is off for.)"""
    if media == JSON:
        document = load_json(raw)
        check(json_cost(document, len(raw)), limit)
        return flatten(json_request(document), parts)
    request = parse_for_rows(raw, media)
    check(message_cost(request, len(raw)), limit)
    return flatten(request, parts)
