"""Realistic multi-agent OTLP trace batches for the collector benchmarks (protobuf requests)."""

from __future__ import annotations

import os
import random
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from reach_otel import semconv as sc

AGENTS = ["TriageAgent", "BillingAgent", "TechSupportAgent", "RefundAgent", "WriterAgent"]
TOOLS = ["query_invoice", "search_kb", "issue_refund", "lookup_account"]


def _set(span: Any, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        kv = span.attributes.add()
        kv.key = key
        if isinstance(value, bool):
            kv.value.bool_value = value
        elif isinstance(value, int):
            kv.value.int_value = value
        elif isinstance(value, float):
            kv.value.double_value = value
        elif isinstance(value, list):
            for item in value:
                kv.value.array_value.values.add().string_value = item
        else:
            kv.value.string_value = value


def _trace_spans(rng: random.Random, start_ns: int) -> list[tuple[str, int, dict[str, Any], int, int, bool]]:
    """(name, parent index or -1, attrs, start offset ns, duration ns, error) for one request."""
    spans: list[tuple[str, int, dict[str, Any], int, int, bool]] = []
    spans.append(
        (
            "invoke_workflow support_turn",
            -1,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW,
                sc.GEN_AI_WORKFLOW_NAME: "support_turn",
                sc.GEN_AI_CONVERSATION_ID: f"S{rng.randrange(10**6)}",
            },
            0,
            900_000_000,
            False,
        )
    )
    t = 1_000_000
    path = ["TriageAgent", rng.choice(AGENTS[1:])]
    for hop, agent in enumerate(path):
        agent_idx = len(spans)
        spans.append(
            (
                f"invoke_agent {agent}",
                0,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
                    sc.GEN_AI_AGENT_NAME: agent,
                    sc.GEN_AI_AGENT_ID: agent.lower(),
                    sc.REACH_AGENT_ROLE: "support",
                    sc.REACH_HOP_COUNT: hop,
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 900,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 120,
                    sc.REACH_AGENT_LLM_CALLS: 1,
                    sc.REACH_AGENT_TOOL_CALLS: 1,
                },
                t,
                400_000_000,
                rng.random() < 0.05,
            )
        )
        spans.append(
            (
                "chat fake-model",
                agent_idx,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_PROVIDER_NAME: "local",
                    sc.GEN_AI_REQUEST_MODEL: "fake-model",
                    sc.GEN_AI_RESPONSE_MODEL: "fake-model",
                    sc.GEN_AI_RESPONSE_ID: f"chatcmpl-{rng.randrange(10**9)}",
                    sc.GEN_AI_RESPONSE_FINISH_REASONS: ["stop"],
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 900,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 120,
                    sc.SERVER_ADDRESS: "127.0.0.1",
                    sc.SERVER_PORT: 8000,
                    sc.REACH_AGENT_NAME: agent,
                },
                t + 1_000_000,
                250_000_000,
                False,
            )
        )
        spans.append(
            (
                f"execute_tool {TOOLS[hop % len(TOOLS)]}",
                agent_idx,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL,
                    sc.GEN_AI_TOOL_NAME: TOOLS[hop % len(TOOLS)],
                    sc.GEN_AI_TOOL_CALL_ID: f"call_{rng.randrange(10**9)}",
                    sc.GEN_AI_TOOL_TYPE: "function",
                    sc.REACH_AGENT_NAME: agent,
                },
                t + 260_000_000,
                30_000_000,
                False,
            )
        )
        if hop + 1 < len(path):
            spans.append(
                (
                    f"handoff {path[hop + 1]}",
                    agent_idx,
                    {
                        sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
                        sc.GEN_AI_AGENT_NAME: agent,
                        sc.REACH_HANDOFF_SOURCE: agent,
                        sc.REACH_HANDOFF_TARGET: path[hop + 1],
                        sc.REACH_HANDOFF_MODE: "delegate",
                        sc.REACH_HANDOFF_STATUS: "committed",
                        sc.REACH_HOP_COUNT: hop + 1,
                        sc.REACH_LOOP_DETECTED: False,
                        sc.GEN_AI_TRANSFER_MODE: "return_to_caller",
                    },
                    t + 300_000_000,
                    1_000_000,
                    False,
                )
            )
        t += 420_000_000
    return spans


def make_request(rng: random.Random, n_spans: int, start_ns: int) -> ExportTraceServiceRequest:
    """One OTLP request of about ``n_spans`` spans (whole traces), as a BatchSpanProcessor sends."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    for key, value in (
        ("service.name", "support-app"),
        ("service.version", "1.4.2"),
        ("telemetry.sdk.name", "opentelemetry"),
        ("telemetry.sdk.language", "python"),
        ("host.name", "worker-3"),
    ):
        kv = rs.resource.attributes.add()
        kv.key, kv.value.string_value = key, value
    ss = rs.scope_spans.add()
    ss.scope.name, ss.scope.version = "reach_otel", "0.1.0"
    count = 0
    while count < n_spans:
        trace_id = os.urandom(16)
        ids = [os.urandom(8) for _ in range(12)]
        for i, (name, parent, attrs, offset, duration, error) in enumerate(_trace_spans(rng, start_ns)):
            span = ss.spans.add()
            span.trace_id, span.span_id = trace_id, ids[i]
            if parent >= 0:
                span.parent_span_id = ids[parent]
            span.name = name
            span.kind = 3 if name.startswith("chat") else 1
            span.start_time_unix_nano = start_ns + offset
            span.end_time_unix_nano = start_ns + offset + duration
            _set(span, attrs)
            if error:
                span.status.code = 2
                span.status.message = "agent failed"
            count += 1
        start_ns += 2_000_000
    return req


def make_bodies(n_requests: int, spans_per_request: int = 512, seed: int = 1) -> list[bytes]:
    import time

    rng = random.Random(seed)
    start = time.time_ns() - 3600 * 10**9
    out = []
    for i in range(n_requests):
        out.append(make_request(rng, spans_per_request, start + i * 10**9).SerializeToString())
    return out
