"""The pure-Python reference decoder (``wire`` + ``rows.flatten``) refuses every body protobuf's own
parser refuses — the attributes of a span it rejects for bad ids, and of that span's events and
links, included (``WireRequest`` keeps attributes as bytes, so they are parsed on purpose).

Regression for the fuzzer's ``fuzz/crashes/reference-took-invalid-link-attribute.pb``: the
reference answered 200 (the span counted as rejected) for a body protobuf rejects.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import pytest
from collector_helpers import RunningCollector
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_collector.ingest import fast
from reach_collector.ingest.decode import PROTOBUF, UndecodableBody, parse_for_rows
from reach_collector.ingest.rows import SpanBatch, flatten

REPO: Final = Path(__file__).resolve().parents[2]
REPRODUCER: Final = REPO / "fuzz" / "crashes" / "reference-took-invalid-link-attribute.pb"
# What rows.flatten raises for an invalid attribute (the service answers 400 for any of them).
REFERENCE_ERRORS: Final = (UndecodableBody, ValueError, DecodeError, RecursionError)


@pytest.fixture(autouse=True)
def _reference_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACH_COLLECTOR_PURE_PYTHON", "1")


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])


def ld(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def fixed64(number: int, value: int) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<Q", value)


def kv(key: bytes, value: bytes) -> bytes:
    return ld(1, key) + ld(2, value)


def span(trace_id: bytes, *, attrs: bytes = b"", event: bytes = b"", link: bytes = b"") -> bytes:
    """A span with these ids; ``attrs`` an encoded KeyValue, ``event``/``link`` one's attribute."""
    out = ld(1, trace_id) + ld(2, b"\x02" * 8) + ld(5, b"s") + fixed64(7, 10) + fixed64(8, 20)
    if attrs:
        out += ld(9, attrs)
    if event:
        out += ld(11, fixed64(1, 15) + ld(2, b"ev") + ld(3, event))
    if link:
        out += ld(13, ld(1, b"\x03" * 16) + ld(2, b"\x04" * 8) + ld(4, link))
    return out


def request(*spans: bytes) -> bytes:
    return ld(1, ld(2, b"".join(ld(2, s) for s in spans)))


def protobuf_accepts(raw: bytes) -> bool:
    try:
        ExportTraceServiceRequest.FromString(raw)
    except (DecodeError, ValueError, RecursionError):
        return False
    return True


def reference(raw: bytes) -> SpanBatch | Exception:
    try:
        return flatten(parse_for_rows(raw, PROTOBUF))
    except REFERENCE_ERRORS as exc:
        return exc


BAD_TRACE: Final = bytes(16)  # all zero: the span is rejected (partial success)
GOOD_TRACE: Final = b"\x01" * 16
VALID: Final = kv(b"k", ld(1, b"v"))
# Encoded KeyValues protobuf refuses, each in its own way.
INVALID: Final = {
    "field number 0": b"\x00",
    "key invalid UTF-8": kv(b"\xff", ld(1, b"v")),
    "string value invalid UTF-8": kv(b"k", ld(1, b"\xc3")),
    "value truncated": b"\x0a\x01k\x12\x05\x0a\x03ab",
    "kvlist key invalid UTF-8": kv(b"k", ld(6, ld(1, ld(1, b"\xed\xa0\x80")))),
    "end-group with no group": b"\x0a\x01k\x0c",
}
PLACES: Final = ("attrs", "event", "link")


def test_the_fuzzers_reproducer_is_refused() -> None:
    raw = REPRODUCER.read_bytes()
    assert not protobuf_accepts(raw)
    assert isinstance(reference(raw), REFERENCE_ERRORS)
    with pytest.raises(REFERENCE_ERRORS):
        fast.flatten_body(raw, PROTOBUF)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("what", INVALID, ids=INVALID.keys())
def test_an_invalid_attribute_of_a_rejected_span_refuses_the_body(place: str, what: str) -> None:
    raw = request(span(GOOD_TRACE), span(BAD_TRACE, **{place: INVALID[what]}))
    assert not protobuf_accepts(raw), "the case is not one protobuf refuses: fix it"
    assert isinstance(reference(raw), REFERENCE_ERRORS)


@pytest.mark.parametrize("place", PLACES)
def test_a_rejected_span_with_valid_attributes_is_still_only_rejected(place: str) -> None:
    raw = request(span(GOOD_TRACE), span(BAD_TRACE, **{place: VALID}))
    assert protobuf_accepts(raw)
    batch = reference(raw)
    assert isinstance(batch, SpanBatch)
    assert (batch.accepted, batch.rejected) == (1, 1)


def _mutations(seeds: list[bytes], count: int) -> Iterator[bytes]:
    rng = random.Random(15)
    for _ in range(count):
        body = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(body))
            if rng.random() < 0.7:
                body[i] = rng.randrange(256)
            else:
                del body[i]
        yield bytes(body)


def test_the_reference_and_protobuf_agree_on_mutated_bodies_with_rejected_spans() -> None:
    # Bodies whose rejected spans carry attributes, events and links: the part the reference used
    # to leave unread. Mutations land there often; the reference must refuse exactly what protobuf
    # refuses.
    rich = kv(b"gen_ai.operation.name", ld(1, b"chat")) + kv(b"n", _varint(3 << 3) + b"\x05")
    seeds = [
        request(span(GOOD_TRACE, attrs=VALID), span(BAD_TRACE, attrs=rich, event=VALID, link=VALID)),
        request(span(BAD_TRACE, attrs=VALID, event=rich, link=rich)),
        REPRODUCER.read_bytes(),
    ]
    disagree = []
    for raw in _mutations(seeds, 4000):
        if protobuf_accepts(raw) == isinstance(reference(raw), Exception):
            disagree.append(raw.hex())
    assert not disagree, f"{len(disagree)} bodies, e.g. {disagree[:3]}"


def test_a_pure_python_collector_answers_400_for_it(
    start_collector: Callable[..., RunningCollector],
) -> None:
    collector = start_collector()
    headers = {"content-type": PROTOBUF}
    response = collector.post("/v1/traces", content=REPRODUCER.read_bytes(), headers=headers)
    assert response.status_code == 400, response.text
    valid = request(span(GOOD_TRACE), span(BAD_TRACE, link=VALID))
    response = collector.post("/v1/traces", content=valid, headers=headers)
    assert response.status_code == 200
    assert collector.store.count_spans() == 1
