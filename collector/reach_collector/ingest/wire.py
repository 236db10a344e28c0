"""A faster read of OTLP trace requests: the same wire format, with attributes left as raw bytes.

Reading an attribute through the official classes builds three Python objects (the ``KeyValue``,
its ``AnyValue`` and the value) and makes two method calls, ≈ 1 µs each — the largest single cost
of ingest. A message field reads just as well as ``bytes`` (both are length-delimited), so this
module builds, once, copies of the OTLP message types whose ``attributes`` fields are ``repeated
bytes``. The common shape — a short key, then a short string, small int, bool or double — is
decoded from its few bytes here, in the sender's order; anything else goes through the official
parser, so the result is the same as reading the official message. (A ``map<string, bytes>`` —
also wire-compatible — reads ≈ 0.5 µs per span faster but loses the attributes' order.)
"""

from __future__ import annotations

import base64
import math
import struct
from typing import Any, Final

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

_PREFIX: Final = "reach.wire"
_FILES: Final = (common_pb2, resource_pb2, trace_pb2, trace_service_pb2)
_REQUEST: Final = "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest"
_SCOPE: Final = "InstrumentationScope"

# AnyValue field tags (field number << 3 | wire type).
_STRING: Final = 0x0A  # 1, length-delimited (also KeyValue.key)
_VALUE: Final = 0x12  # KeyValue.value: field 2, length-delimited
_BOOL: Final = 0x10  # 2, varint
_INT: Final = 0x18  # 3, varint
_DOUBLE: Final = 0x21  # 4, 64-bit
_BYTES: Final = 0x3A  # 7, length-delimited
_unpack_double: Final = struct.Struct("<d").unpack_from


def _as_bytes(msg: descriptor_pb2.DescriptorProto) -> None:
    """Turn every ``repeated KeyValue attributes`` of ``msg`` (and nested types) into
    ``repeated bytes``: each element one encoded ``KeyValue``, in the sender's order. The scope's
    stay messages: the rows never read them, so only the parser checks them, as the official does."""
    for field in msg.field:
        if field.name == "attributes" and field.type_name.endswith(".KeyValue") and msg.name != _SCOPE:
            field.type = field.TYPE_BYTES
            field.ClearField("type_name")
        elif field.type_name.startswith(".opentelemetry."):
            field.type_name = f".{_PREFIX}{field.type_name}"
    for nested in msg.nested_type:
        _as_bytes(nested)


def _build() -> type[Message]:
    pool = descriptor_pool.DescriptorPool()
    for module in _FILES:
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        proto.name = f"{_PREFIX}/{proto.name}"
        proto.package = f"{_PREFIX}.{proto.package}"
        deps = [f"{_PREFIX}/{d}" for d in proto.dependency]
        del proto.dependency[:]
        proto.dependency.extend(deps)
        proto.ClearField("service")
        for msg in proto.message_type:
            _as_bytes(msg)
        pool.Add(proto)
    request = pool.FindMessageTypeByName(f"{_PREFIX}.{_REQUEST}")
    built: type[Message] = message_factory.GetMessageClass(request)
    return built


WireRequest: Final = _build()


def from_bytes(body: bytes) -> Any:
    """Parse a protobuf ``ExportTraceServiceRequest`` body; raises ``DecodeError`` like the official."""
    return WireRequest.FromString(body)


def from_message(request: Message) -> Any:
    """The same request as a ``WireRequest`` (a no-op when it already is one)."""
    if isinstance(request, WireRequest):
        return request
    return WireRequest.FromString(request.SerializeToString())


def _non_finite(value: float) -> str:
    # JSON has no NaN/Infinity; keep them as the strings OTLP JSON itself uses.
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def any_value(value: Any) -> Any:
    """An official ``AnyValue`` as a plain JSON-able Python value (bytes → base64 text)."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        d = value.double_value
        return d if math.isfinite(d) else _non_finite(d)
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


def _official(raw: bytes) -> Any:
    return any_value(common_pb2.AnyValue.FromString(raw))


def decode_value(raw: bytes) -> Any:
    """An encoded ``AnyValue`` → the same value ``any_value`` gives for the parsed message.

    Raises ``DecodeError`` (or ``UnicodeDecodeError``, a ``ValueError``) for an invalid value."""
    size = len(raw)
    if size < 2:
        if size == 0:
            return None
        return _official(raw)
    tag = raw[0]
    if tag == _STRING:
        if raw[1] == size - 2 and size < 0x82:  # one-byte length: strings under 128 bytes, nothing after them
            return raw[2:].decode()
    elif tag == _INT:
        if size == 2 and raw[1] < 0x80:
            return raw[1]
    elif tag == _BOOL:
        if size == 2 and raw[1] < 0x80:
            return raw[1] != 0
    elif tag == _DOUBLE:
        if size == 9:
            d = _unpack_double(raw, 1)[0]
            return d if math.isfinite(d) else _non_finite(d)
    elif tag == _BYTES and raw[1] == size - 2 and size < 0x82:
        return base64.b64encode(raw[2:]).decode()
    return _official(raw)


def _key_value(raw: bytes) -> tuple[str, Any]:
    kv = common_pb2.KeyValue.FromString(raw)
    return kv.key, any_value(kv.value)


def attributes(entries: Any) -> dict[str, Any]:
    """``WireRequest`` attributes (encoded ``KeyValue``s) → ``{key: value}`` in the sender's order
    (later duplicates win, as in a dict); raises ``DecodeError``/``ValueError`` for an invalid one."""
    out: dict[str, Any] = {}
    for raw in entries:
        # The common shape, read from the bytes: the key (field 1), then the value (field 2), each
        # shorter than 128 bytes so its length is one byte; a string value likewise.
        try:
            e = raw[1] + 2  # where the key ends
            size = raw[e + 1]
            if raw[0] == _STRING and raw[e] == _VALUE and size + e + 2 == len(raw) and raw[1] | size < 0x80:
                if raw[e + 2] == _STRING and raw[e + 3] + e + 4 == len(raw):
                    out[raw[2:e].decode()] = raw[e + 4 :].decode()
                else:
                    out[raw[2:e].decode()] = decode_value(raw[e + 2 :])
                continue
        except IndexError:  # shorter than the common shape (an empty value, a bare key)
            pass
        key, value = _key_value(raw)
        out[key] = value
    return out


__all__ = [
    "DecodeError",
    "WireRequest",
    "any_value",
    "attributes",
    "decode_value",
    "from_bytes",
    "from_message",
]
