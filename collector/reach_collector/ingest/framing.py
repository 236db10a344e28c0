"""The protobuf wire format's framing, read without parsing: varints and the records of a message
(each record's field number, wire type and where its payload lies). The request splitter and the
row-budget pre-pass both walk OTLP requests with it; anything unexpected raises ``Malformed`` and
the decoder, which parses for real, says what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

__all__ = ["I32", "I64", "LEN", "VARINT", "Malformed", "frame", "records", "varint"]

VARINT: Final = 0
I64: Final = 1
LEN: Final = 2  # length-delimited: messages, strings, bytes
I32: Final = 5


class Malformed(Exception):
    """The framing of a request is broken."""


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``buf[pos]`` and the position after it; raises ``Malformed``."""
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise Malformed
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def records(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """The records of the message ``buf[start:end]``, in order, each as (record start, field,
    wire type, payload start — after the length, for LEN —, record end); raises ``Malformed`` on a
    bad tag, a wire type OTLP does not use (groups), field 0, or a record that runs past ``end``.
    One-byte tags and lengths, nearly all of them, are read inline: this runs once per span."""
    pos = start
    while pos < end:
        record = pos
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == LEN:
            size = buf[pos] if pos < end else 0x80
            if size < 0x80:
                payload = pos + 1
            else:
                size, payload = varint(buf, pos)
            pos = payload + size
        elif wire == VARINT:
            payload = pos
            _, pos = varint(buf, pos)
        elif wire == I64:
            payload, pos = pos, pos + 8
        elif wire == I32:
            payload, pos = pos, pos + 4
        else:
            raise Malformed
        if pos > end or field == 0:
            raise Malformed
        yield record, field, wire, payload, pos


def frame(field: int, payload: bytes) -> bytes:
    """A length-delimited record of ``field`` holding ``payload`` (a message, a string)."""
    size = len(payload)
    out = bytearray([field << 3 | LEN])
    while size >= 0x80:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    out.append(size)
    return bytes(out) + payload
