"""Token sums that pass the int64 range are held at its end by the compiled decoder and the Python
reference alike (the compiled fold wrapped round to a negative count: -9223372036854775800)."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_collector.ingest import fast
from reach_collector.ingest.batch_stats import add_sat
from reach_collector.ingest.decode import PROTOBUF, parse_for_rows
from reach_collector.ingest.rows import flatten
from reach_otel import semconv as sc

BIG = 2**63 - 8  # each fits in an int64; two of them do not


def _request(counts: list[int]) -> bytes:
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for i, count in enumerate(counts):
        span = spans.add(trace_id=b"\x01" * 16, span_id=bytes([1, i + 1]) * 4, name="chat m")
        span.start_time_unix_nano, span.end_time_unix_nano = 10**18, 10**18 + 10**6
        for key, value in (
            (sc.GEN_AI_OPERATION_NAME, sc.OP_CHAT),
            (sc.GEN_AI_REQUEST_MODEL, "m"),
            (sc.REACH_AGENT_NAME, "BillingAgent"),
        ):
            span.attributes.add(key=key).value.string_value = value
        for key in (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS):
            span.attributes.add(key=key).value.int_value = count
    return request.SerializeToString()


def test_sums_past_the_int64_range_saturate_on_both_paths() -> None:
    for counts, want in (([BIG, BIG], 2**63 - 1), ([-BIG, -BIG], -(2**63)), ([BIG, 7], 2**63 - 1)):
        body = _request(counts)
        reference = flatten(parse_for_rows(body, PROTOBUF)).stats.tokens
        assert reference == {("BillingAgent", "m"): [want, want]}
        compiled = fast.flatten_protobuf(body)
        if compiled is not None:  # built (the tests' install builds it where a compiler is)
            assert compiled.stats.tokens == reference


def test_add_sat() -> None:
    assert add_sat(1, 2) == 3
    assert add_sat(2**63 - 1, 1) == 2**63 - 1
    assert add_sat(-(2**63), -1) == -(2**63)
