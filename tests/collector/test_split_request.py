"""A large request split between idle decoders stores exactly what it would have stored whole."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from collector_helpers import RunningCollector
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from reach_collector.ingest.decode import PROTOBUF, parse_for_rows
from reach_collector.ingest.pool import start_pool
from reach_collector.ingest.rows import flatten, merge_batches
from reach_collector.ingest.split import split_request
from reach_otel import semconv as sc

# (resources, scopes per resource, spans per scope); a span is (trace, valid, operation)
shapes = st.lists(
    st.lists(
        st.lists(
            st.tuples(st.integers(0, 5), st.booleans(), st.sampled_from(["a", "h", "c", ""])), max_size=40
        ),
        min_size=1,
        max_size=3,
    ),
    min_size=1,
    max_size=3,
)
_OPS = {"a": sc.OP_AGENT, "h": sc.OP_HANDOFF, "c": sc.OP_CHAT, "": None}


def _request(shape: list[list[list[tuple[int, bool, str]]]]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    n = 0
    for r, scopes in enumerate(shape):
        rs = request.resource_spans.add(schema_url=f"r{r}")
        rs.resource.attributes.add(key=sc.SERVICE_NAME).value.string_value = f"svc{r}"
        for s, spans in enumerate(scopes):
            ss = rs.scope_spans.add()
            ss.scope.name = f"scope{s}"
            for trace, valid, op in spans:
                n += 1
                span = ss.spans.add(
                    trace_id=bytes([trace + 1]) * 16,
                    span_id=n.to_bytes(8, "big") if valid else b"",
                    name=f"span{n}",
                    start_time_unix_nano=n,
                    end_time_unix_nano=n + 10,
                )
                if n % 3 == 0:
                    span.parent_span_id = (n - 1).to_bytes(8, "big")
                if _OPS[op]:
                    span.attributes.add(key=sc.GEN_AI_OPERATION_NAME).value.string_value = _OPS[op]
                    span.attributes.add(key=sc.GEN_AI_AGENT_NAME).value.string_value = f"A{trace}"
    return request


def _lookup(parts: Any) -> dict[str, tuple[Any, ...]]:
    """Trace parts folded per trace, as the store's compaction folds them."""
    out: dict[str, list[Any]] = {}
    for row in parts.to_pylist():
        cur = out.setdefault(row["trace_id"], [row["first_start_ns"], row["last_end_ns"], 0, 0, set(), 0])
        cur[0], cur[1] = min(cur[0], row["first_start_ns"]), max(cur[1], row["last_end_ns"])
        cur[2] += row["span_count"]
        cur[3] += row["error_count"]
        cur[4] |= set(row["agents"])
        cur[5] += row["hops"]
    return {k: tuple(v) for k, v in out.items()}


@given(shapes, st.integers(2, 4))
@settings(max_examples=120, deadline=None)
def test_pieces_hold_the_same_spans_rows_lookup_and_stats(shape: Any, parts: int) -> None:
    body = _request(shape).SerializeToString()
    whole = flatten(parse_for_rows(body, PROTOBUF))
    pieces = split_request(body, parts, min_spans=1)
    if pieces is None:
        assert whole.accepted + whole.rejected < 2
        return
    assert 2 <= len(pieces) <= parts
    merged = merge_batches([flatten(parse_for_rows(p, PROTOBUF)) for p in pieces])
    assert merged.table.to_pylist() == whole.table.to_pylist()  # same rows, same order
    assert _lookup(merged.parts) == _lookup(whole.parts)
    assert (merged.rejected, merged.message) == (whole.rejected, whole.message)
    # Sums of seconds are added in another order: equal to the last bits.
    calls = {k: (n, pytest.approx(total)) for k, (n, total) in whole.stats.calls.items()}
    assert {k: tuple(v) for k, v in merged.stats.calls.items()} == calls
    assert replace(merged.stats, calls={}) == replace(whole.stats, calls={})


def test_small_or_malformed_bodies_are_not_split() -> None:
    body = _request([[[(1, True, "a")] * 10]]).SerializeToString()
    assert split_request(body, 2) is None  # fewer than 64 spans a piece
    assert split_request(body, 1, min_spans=1) is None
    assert split_request(os.urandom(4096), 2, min_spans=1) is None
    assert split_request(body[:-3], 2, min_spans=1) is None  # truncated
    assert split_request(b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 2, min_spans=1) is None


@pytest.fixture
def pooled(
    start_collector: Callable[..., RunningCollector], monkeypatch: pytest.MonkeyPatch
) -> Iterator[RunningCollector]:
    """A collector decoding in a pool of two workers, in pure Python (the compiled path decodes
    in threads and does not split)."""
    monkeypatch.setenv("REACH_COLLECTOR_PURE_PYTHON", "1")
    pool = start_pool(2)
    try:
        yield start_collector(pool=pool)
    finally:
        pool.shutdown()


def test_a_lone_large_request_is_decoded_by_both_workers(pooled: RunningCollector) -> None:
    collector = pooled
    body = _request([[[(t % 6, True, "a") for t in range(600)]]]).SerializeToString()
    response = httpx.post(
        collector.url + "/v1/traces", content=body, headers={"content-type": PROTOBUF}, timeout=30
    )
    assert response.status_code == 200
    ingest = collector.app.state.ingest
    assert ingest.stats.requests_split == 1
    assert ingest.stats.spans_received == 600
    stored = collector.store.query("SELECT count(*), count(DISTINCT span_id) FROM spans")
    assert stored == [(600, 600)]
    trace = collector.get("/api/traces/" + (bytes([1]) * 16).hex()).json()
    assert trace["span_count"] == 100
    # The decoder workers' memory is on /metrics beside the main process's.
    text = collector.get("/metrics").text
    line = next(x for x in text.splitlines() if x.startswith("reach_collector_decoder_resident"))
    assert float(line.split()[-1]) > 10e6


def test_hostile_large_requests_get_the_same_answers_split(pooled: RunningCollector) -> None:
    collector = pooled

    def post(body: bytes) -> httpx.Response:
        headers = {"content-type": PROTOBUF}
        return httpx.post(collector.url + "/v1/traces", content=body, headers=headers, timeout=30)

    spans = [(t % 6, t % 10 != 0, "a") for t in range(300)]  # every tenth span has no span id
    request = _request([[spans]])
    partial = post(request.SerializeToString())
    assert partial.status_code == 200
    rejected = ExportTraceServiceResponse.FromString(partial.content).partial_success
    assert rejected.rejected_spans == 30 and "invalid span_id" in rejected.error_message
    # Invalid UTF-8 in one attribute value of the last piece: the whole request is a 400.
    bad = _request([[spans]])
    last = bad.resource_spans[0].scope_spans[0].spans[-1]
    last.attributes.add(key="k").value.bytes_value = b"\xff\xfe"
    body = bad.SerializeToString().replace(b"\x3a\x02\xff\xfe", b"\x0a\x02\xff\xfe")
    assert post(body).status_code == 400
    assert post(request.SerializeToString()[:-7]).status_code == 400  # truncated: not split
    assert collector.app.state.ingest.stats.requests_split == 2
    assert collector.get("/healthz").status_code == 200
    assert collector.store.query("SELECT count(*) FROM spans") == [(270,)]
