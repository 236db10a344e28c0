"""Writes the seed corpus ``fuzz/corpus/*.pb``: realistic OTLP trace requests, from the same builders
as ``tests/collector/test_fast_path.py``, plus a few wire shapes protobuf allows but encoders rarely
send (a message field repeated, so that protobuf merges it; unknown fields of every wire type;
non-minimal varints). Deterministic; rerun after changing it, and commit the files.

    python fuzz/seeds.py
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Final

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

ROOT: Final = Path(__file__).resolve().parent.parent
CORPUS: Final = ROOT / "fuzz" / "corpus"
sys.path.insert(0, str(ROOT / "tests" / "collector"))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from opentelemetry.proto.resource.v1.resource_pb2 import Resource  # noqa: E402
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span  # noqa: E402
from test_fast_path import REQUESTS, SEEDS, _add, _realistic_request  # noqa: E402

from reach_otel import semconv as sc  # noqa: E402

GENERATED: Final = 80  # bodies drawn from the tests' request strategies
MAX_BYTES: Final = 3000


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _request_of_spans(*spans: bytes) -> bytes:
    """A request with one resource and one scope holding the given encoded spans."""
    resource = Resource()
    _add(resource.attributes, {sc.SERVICE_NAME: "svc"})
    scope_spans = b"".join(_field(2, s) for s in spans)
    return _field(1, _field(1, resource.SerializeToString()) + _field(2, scope_spans))


def _odd_wire_shapes() -> dict[str, bytes]:
    span = Span(trace_id=b"\x11" * 16, span_id=b"\x22" * 8, name="chat gpt-4o", kind=3)
    span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000 * 10**9, 1_700_000_001 * 10**9
    _add(span.attributes, {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_USAGE_INPUT_TOKENS: 7})
    base = span.SerializeToString()
    later = Span(name="execute_tool x", status={"code": 2, "message": "boom"})
    _add(later.attributes, {sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL, sc.GEN_AI_TOOL_NAME: "x"})
    unknown = (
        _varint(99 << 3 | 0)
        + _varint(2**63)  # varint
        + _varint(98 << 3 | 1)
        + b"\x01" * 8  # fixed64
        + _varint(97 << 3 | 5)
        + b"\x02" * 4  # fixed32
        + _field(96, b"\x08\x01")  # length-delimited
    )
    # name (field 5) with its tag and length as non-minimal varints: 0x2a spelled 0xaa 0x00.
    padded = base + b"\xaa\x00\x85\x80\x00" + b"hello"
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    ss.scope.name, ss.scope.version = "reach_otel", "0.1.0"
    _add(ss.scope.attributes, {"scope.attr": "v", "n": 2})
    ss.spans.add().CopyFrom(span)
    two_scopes = request.SerializeToString() + _field(
        1, _field(2, ScopeSpans(spans=[span]).SerializeToString())
    )
    return {
        "merged-span": _request_of_spans(base + later.SerializeToString()),
        "unknown-fields": _request_of_spans(base + unknown),
        "non-minimal-varints": _request_of_spans(padded),
        "scope-attributes-two-resources": two_scopes,
    }


def _many_traces(count: int = 80) -> bytes:
    """Short spans of ``count`` traces in one request: past the trace-part table's first size."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for n in range(count):
        span = scope.spans.add(trace_id=n.to_bytes(2, "big") * 8, span_id=b"\x01" * 8, name="t")
        span.start_time_unix_nano, span.end_time_unix_nano = n, n + 1
    return request.SerializeToString()


def _other_instrumentations() -> bytes:
    """One span per kind the other instrumentations name: OpenLLMetry's request types, OpenInference's
    kinds in other cases and with non-ASCII letters (which the compiled path leaves to the reference)."""
    kinds = [(sc.TRACELOOP_REQUEST_TYPE, kind) for kind in ("chat", "completion", "embedding")]
    kinds += [(sc.OPENINFERENCE_SPAN_KIND, kind) for kind in ("llm", "Agent", "TOOL", "embedding", "ＬＬＭ")]
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for n, (key, kind) in enumerate(kinds):
        span = scope.spans.add(trace_id=b"\x05" * 16, span_id=bytes([n + 1]) * 8, name=kind)
        span.start_time_unix_nano, span.end_time_unix_nano = 10, 20
        _add(span.attributes, {key: kind})
    return request.SerializeToString()


def _generated() -> list[bytes]:
    drawn: list[bytes] = []

    @seed(20240601)
    @settings(
        max_examples=GENERATED,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.one_of(REQUESTS[False], REQUESTS[True]))
    def draw(body: bytes) -> None:
        if len(body) <= MAX_BYTES:
            drawn.append(body)

    draw()
    return drawn


def main() -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    for old in CORPUS.glob("*.pb"):
        old.unlink()
    bodies = {
        "compact": SEEDS[0],
        "realistic-1-trace": SEEDS[1],
        "realistic-2-traces": _realistic_request(traces=2).SerializeToString(),
        "many-traces": _many_traces(),
        "other-instrumentations": _other_instrumentations(),
        **_odd_wire_shapes(),
    }
    for body in _generated():
        bodies[f"generated-{hashlib.sha1(body).hexdigest()[:12]}"] = body
    for name, body in bodies.items():
        (CORPUS / f"{name}.pb").write_bytes(body)
    total = sum(len(b) for b in bodies.values())
    print(f"wrote {len(bodies)} seeds, {total} bytes, to {CORPUS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
