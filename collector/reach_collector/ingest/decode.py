"""Pure decoding of an OTLP/HTTP trace request body into an ``ExportTraceServiceRequest``.

Handles gzip (bounded after decompression), protobuf, and OTLP JSON (hex ids, integer enums,
64-bit integers as strings or numbers). Errors are typed so the router can map them to 4xx.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError as _ProtoDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from reach_collector.ingest import wire

PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
_PROTOBUF_TYPES: Final = frozenset({"application/x-protobuf", "application/protobuf"})
_JSON_TYPES: Final = frozenset({"application/json"})

# An id that is never valid (one byte): an unparseable hex id becomes this, so the span is
# rejected through partial success instead of failing the whole request.
_BAD_ID: Final = base64.b64encode(b"\xff").decode()


class BodyError(Exception):
    """A request body the collector cannot take; ``status`` is the HTTP status to answer."""

    status = 400


class UndecodableBody(BodyError):
    status = 400


class BodyTooLarge(BodyError):
    status = 413


class UnsupportedMedia(BodyError):
    status = 415


def media_type(content_type: str | None) -> str:
    """``application/json; charset=utf-8`` → ``application/json``; raises for unsupported types."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base in _PROTOBUF_TYPES:
        return PROTOBUF
    if base in _JSON_TYPES:
        return JSON
    raise UnsupportedMedia(f"unsupported content type {base or '(none)'!r}: send {PROTOBUF} or {JSON}")


def decompress(body: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """Undo ``Content-Encoding`` (identity or gzip), never producing more than ``max_bytes``."""
    enc = (encoding or "identity").strip().lower()
    if enc in ("", "identity"):
        if len(body) > max_bytes:
            raise BodyTooLarge(f"body of {len(body)} bytes exceeds the limit of {max_bytes} bytes")
        return body
    if enc != "gzip":
        raise UnsupportedMedia(f"unsupported content encoding {enc!r}: send gzip or identity")
    out = bytearray()
    data = body
    try:
        # Loop over concatenated gzip members; each step is bounded so a bomb stops at the limit.
        while data:
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            out += inflater.decompress(data, max_bytes + 1 - len(out))
            if len(out) > max_bytes or inflater.unconsumed_tail:
                raise BodyTooLarge(f"decompressed body exceeds the limit of {max_bytes} bytes")
            if not inflater.eof:
                raise UndecodableBody("truncated gzip body")
            data = inflater.unused_data
    except zlib.error as exc:
        raise UndecodableBody(f"invalid gzip body: {exc}") from exc
    return bytes(out)


def parse(body: bytes, media: str) -> ExportTraceServiceRequest:
    """Decode a (decompressed) body of the given media type into a request message."""
    if media == PROTOBUF:
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except (_ProtoDecodeError, ValueError, RecursionError) as exc:
            raise UndecodableBody(f"invalid OTLP protobuf: {exc or type(exc).__name__}") from exc
        return request
    return parse_json(body)


def parse_for_rows(body: bytes, media: str) -> Any:
    """Like ``parse``, but protobuf bodies become ``wire.WireRequest`` (the faster read that
    ``rows.flatten`` prefers); JSON bodies stay official messages."""
    if media == PROTOBUF:
        try:
            return wire.from_bytes(body)
        except (_ProtoDecodeError, ValueError, RecursionError) as exc:
            raise UndecodableBody(f"invalid OTLP protobuf: {exc or type(exc).__name__}") from exc
    return parse_json(body)


def parse_json(body: bytes) -> ExportTraceServiceRequest:
    return json_request(load_json(body))


def load_json(body: bytes) -> dict[str, Any]:
    """An OTLP JSON body's document (a JSON object, not yet a message); raises ``UndecodableBody``."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise UndecodableBody(f"invalid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise UndecodableBody("invalid OTLP JSON: the body must be a JSON object")
    return document


def json_request(document: dict[str, Any]) -> ExportTraceServiceRequest:
    """The request message of a ``load_json`` document (its hex ids are rewritten in place)."""
    _hex_ids_to_base64(document)
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise UndecodableBody(f"invalid OTLP JSON: {exc}") from exc
    return request


def _list(parent: dict[str, Any], *names: str) -> list[Any]:
    for name in names:
        value = parent.get(name)
        if isinstance(value, list):
            return value
    return []


def _convert_ids(obj: dict[str, Any], *names: str) -> None:
    """OTLP JSON carries ids as hex; protobuf's JSON mapping expects base64 for bytes."""
    for name in names:
        value = obj.get(name)
        if not isinstance(value, str):
            continue
        try:
            obj[name] = base64.b64encode(bytes.fromhex(value)).decode() if value else ""
        except (ValueError, binascii.Error):
            obj[name] = _BAD_ID


def _hex_ids_to_base64(document: dict[str, Any]) -> None:
    for rs in _list(document, "resourceSpans", "resource_spans"):
        if not isinstance(rs, dict):
            continue
        for ss in _list(rs, "scopeSpans", "scope_spans"):
            if not isinstance(ss, dict):
                continue
            for span in _list(ss, "spans"):
                if not isinstance(span, dict):
                    continue
                _convert_ids(
                    span, "traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id"
                )
                for link in _list(span, "links"):
                    if isinstance(link, dict):
                        _convert_ids(link, "traceId", "trace_id", "spanId", "span_id")


def encode_response(media: str, rejected: int, message: str) -> bytes:
    """An ``ExportTraceServiceResponse`` in the request's media type."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if media == PROTOBUF:
        return bytes(response.SerializeToString())
    return json.dumps(json_format.MessageToDict(response)).encode()
