"""OTLP protobuf requests for the ClickHouse tests: multi-agent traces with every attribute value
type (strings, ints, doubles in plain and exponent form, booleans, arrays, key/value lists,
bytes), events, links, roots and orphans, errors, handoffs, several services and resources —
deterministic from a seed, times relative to ``now_ns``."""

from __future__ import annotations

import random
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from reach_otel import semconv as sc

AGENTS = ("TriageAgent", "BillingAgent", "RefundAgent")
SERVICES = ("support-app", "billing-svc")
EXOTIC = {"app.blob": b"\x00\x01", "app.nested": {"k": [1, 2.5e-9, True], "s": "x"}}
DOUBLES = (0.2, 1.0, 1e21, 1.5e-7, 123456.789, -0.0, 2.5e-5, 1e-6, 3.0e20, 0.1 + 0.2)


def _value(v: Any, out: AnyValue) -> None:
    if isinstance(v, bool):
        out.bool_value = v
    elif isinstance(v, int):
        out.int_value = v
    elif isinstance(v, float):
        out.double_value = v
    elif isinstance(v, bytes):
        out.bytes_value = v
    elif isinstance(v, list):
        out.array_value.SetInParent()
        for item in v:
            _value(item, out.array_value.values.add())
    elif isinstance(v, dict):
        out.kvlist_value.SetInParent()
        for key, item in v.items():
            kv = out.kvlist_value.values.add()
            kv.key = key
            _value(item, kv.value)
    else:
        out.string_value = str(v)


def _attrs(target: Any, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        kv: KeyValue = target.add()
        kv.key = key
        if value is not None:
            _value(value, kv.value)


def make_request(
    now_ns: int,
    traces: int = 12,
    seed: int = 7,
    services: tuple[str, ...] = SERVICES,
    *,
    exotic: bool = False,
) -> tuple[bytes, list[str]]:
    """One request of ``traces`` traces (spread over the last ~20 minutes); returns the body
    and the trace ids in it. ``exotic`` adds bytes and key/value-list attribute values, which the
    compiled decoder leaves to the Python one (so both decoders' JSON is covered)."""
    rng = random.Random(seed)
    req = ExportTraceServiceRequest()
    ids: list[str] = []
    by_service = {s: req.resource_spans.add() for s in services}
    for i, (service, rs) in enumerate(by_service.items()):
        _attrs(
            rs.resource.attributes,
            {
                sc.SERVICE_NAME: service,
                "service.version": f"1.{i}.0",
                "deployment.environment": "test",
                "host.cpu.count": 2 + i,
                "process.runtime.ratio": DOUBLES[i],
            },
        )
        scope = rs.scope_spans.add()
        scope.scope.name = "reach-otel-tests"
        scope.scope.version = "0.1"
    for t in range(traces):
        trace_id = rng.getrandbits(128).to_bytes(16, "big")
        ids.append(trace_id.hex())
        start = now_ns - rng.randrange(60, 1200) * 1_000_000_000 - t * 1_000_000
        service = services[t % len(services)]
        spans = by_service[service].scope_spans[0].spans
        root_id = rng.getrandbits(64).to_bytes(8, "big")
        error = t % 4 == 1
        path = [AGENTS[0], AGENTS[1 + t % 2]]
        _span(
            spans.add(), trace_id, root_id, b"", f"invoke_workflow turn-{t % 3}", start, 900 + t,
            {sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW, sc.GEN_AI_CONVERSATION_ID: f"conv-{t % 5}",
             "app.tier": ["gold", "silver"][t % 2], "app.retries": t % 3, "app.sampled": t % 2 == 0},
            kind=Span.SPAN_KIND_SERVER,
        )  # fmt: skip
        offset = 5
        for hop, agent in enumerate(path):
            agent_id = rng.getrandbits(64).to_bytes(8, "big")
            failing = error and hop == 1
            _span(
                spans.add(), trace_id, agent_id, root_id, f"invoke_agent {agent}", start + offset * 1_000_000,
                300 + 7 * t,
                {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: agent, sc.REACH_HOP_COUNT: hop,
                 "gen_ai.request.temperature": DOUBLES[(t + hop) % len(DOUBLES)],
                 "app.tags": ["a", 'q"uote', "ctl\x01"], "app.mixed": [1, 2.5, True, "s"], "app.none": None,
                 **(EXOTIC if exotic else {})},
                error=failing, events=[("gen_ai.choice", {"index": hop, "score": 1e-7 * (hop + 1)})],
            )  # fmt: skip
            _span(
                spans.add(), trace_id, rng.getrandbits(64).to_bytes(8, "big"), agent_id,
                "chat fake-model", start + (offset + 10) * 1_000_000, 120 + t,
                {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_REQUEST_MODEL: "fake-model",
                 sc.GEN_AI_PROVIDER_NAME: "openai", sc.GEN_AI_USAGE_INPUT_TOKENS: 100 + t,
                 sc.GEN_AI_USAGE_OUTPUT_TOKENS: 20 + hop, sc.GEN_AI_RESPONSE_FINISH_REASONS: ["stop"],
                 sc.REACH_AGENT_NAME: agent},
                kind=Span.SPAN_KIND_CLIENT,
            )  # fmt: skip
            if hop + 1 < len(path):
                target = path[hop + 1]
                _span(
                    spans.add(), trace_id, rng.getrandbits(64).to_bytes(8, "big"), agent_id,
                    f"handoff {target}", start + (offset + 200) * 1_000_000, 2,
                    {sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF, sc.REACH_HANDOFF_SOURCE: agent,
                     sc.REACH_HANDOFF_TARGET: target, sc.REACH_HANDOFF_MODE: "delegate",
                     sc.REACH_HANDOFF_STATUS: "committed", sc.REACH_HOP_COUNT: hop + 1,
                     sc.REACH_LOOP_DETECTED: t % 5 == 0},
                    links=[(trace_id, root_id)],
                )  # fmt: skip
            offset += 320
        if t % 6 == 5:  # an orphan: its parent never arrives
            _span(
                spans.add(), trace_id, rng.getrandbits(64).to_bytes(8, "big"), b"\x01" * 8,
                "late tool", start + 2_000_000, 3,
                {sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL, sc.GEN_AI_TOOL_NAME: "lookup"},
            )  # fmt: skip
    return req.SerializeToString(), ids


def _span(
    span: Span,
    trace_id: bytes,
    span_id: bytes,
    parent: bytes,
    name: str,
    start_ns: int,
    duration_ms: int,
    attrs: dict[str, Any],
    *,
    kind: int = Span.SPAN_KIND_INTERNAL,
    error: bool = False,
    events: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
    links: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
) -> None:
    span.trace_id, span.span_id, span.parent_span_id = trace_id, span_id, parent
    span.name = name
    span.kind = kind
    span.start_time_unix_nano = start_ns
    span.end_time_unix_nano = start_ns + duration_ms * 1_000_000 + 137
    _attrs(span.attributes, attrs)
    if error:
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = "card declined"
    for event_name, event_attrs in events:
        ev = span.events.add()
        ev.name = event_name
        ev.time_unix_nano = start_ns + 1000
        _attrs(ev.attributes, event_attrs)
    for link_trace, link_span in links:
        link = span.links.add()
        link.trace_id, link.span_id = link_trace, link_span


def failing_runs(agent: str, n: int, first_id: int, code: int = 2) -> dict[str, Any]:
    """An OTLP/JSON document: ``n`` failed (``code`` 2; 0: unset) ``invoke_agent`` runs of
    ``agent`` that ended just now (trace and span ids from ``first_id``), for the alerting tests."""
    import time

    now = time.time_ns()
    spans = [
        {
            "traceId": f"{first_id + i:032x}",
            "spanId": f"{first_id + i:016x}",
            "name": f"invoke_agent {agent}",
            "kind": 1,
            "startTimeUnixNano": str(now - 200_000_000),
            "endTimeUnixNano": str(now - 100_000_000),
            "status": {"code": code, "message": "boom" if code == 2 else ""},
            "attributes": [
                {"key": sc.GEN_AI_OPERATION_NAME, "value": {"stringValue": sc.OP_AGENT}},
                {"key": sc.GEN_AI_AGENT_NAME, "value": {"stringValue": agent}},
            ],
        }
        for i in range(n)
    ]
    resource = {"attributes": [{"key": sc.SERVICE_NAME, "value": {"stringValue": "desk"}}]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}


def decoded(body: bytes, decoder: str) -> Any:
    """``body`` decoded by the collector's ``decoder`` ("compiled" or "python") into its span
    batch; skips the test when the compiled decoder is not built here."""
    import pytest

    from reach_collector.ingest import fast
    from reach_collector.ingest.decode import PROTOBUF, parse
    from reach_collector.ingest.rows import flatten

    if decoder == "compiled":
        batch = fast.flatten_protobuf(body)
        if batch is None:
            pytest.skip("the compiled decoder is not built here")
        return batch
    return flatten(parse(body, PROTOBUF))
