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


RESOURCE = (
    ("service.name", "support-app"),
    ("service.version", "1.4.2"),
    ("telemetry.sdk.name", "opentelemetry"),
    ("telemetry.sdk.language", "python"),
    ("host.name", "worker-3"),
)

# A production-sized resource: what the SDK's detectors, a Kubernetes deployment and a cloud add.
HEAVY_RESOURCE = (
    ("service.name", "support-app"),
    ("service.namespace", "customer-care"),
    ("service.version", "1.4.2"),
    ("service.instance.id", "5f1c9e0a-7d2b-4c8e-9a31-0b6d2e4f8c17"),
    ("deployment.environment.name", "production"),
    ("telemetry.sdk.name", "opentelemetry"),
    ("telemetry.sdk.language", "python"),
    ("telemetry.sdk.version", "1.38.0"),
    ("host.name", "ip-10-42-7-19.eu-west-1.compute.internal"),
    ("host.arch", "amd64"),
    ("os.type", "linux"),
    ("process.runtime.name", "cpython"),
    ("process.runtime.version", "3.11.9"),
    ("process.pid", "4711"),
    ("k8s.namespace.name", "support"),
    ("k8s.pod.name", "support-app-7c9f6d5b8-x2k4q"),
    ("k8s.deployment.name", "support-app"),
    ("cloud.provider", "aws"),
    ("cloud.region", "eu-west-1"),
)


def _heavy_trace_spans(
    rng: random.Random,
) -> list[tuple[str, int, dict[str, Any], int, int, bool, list[tuple[str, dict[str, Any]]]]]:
    """A 19-span multi-agent turn: workflow, three agents (triage → billing → writer), two LLM
    calls and two tools per agent, two handoffs, a guardrail check; more attributes per span than
    ``_trace_spans`` and events (LLM choices, tool results, the handoff transition, exceptions).
    (name, parent index or -1, attrs, start offset ns, duration ns, error, events)."""
    session = f"sess-{rng.randrange(10**8):08d}"
    user = f"user-{rng.randrange(10**6):06d}"
    task = f"task-{rng.getrandbits(64):016x}"
    spans: list[tuple[str, int, dict[str, Any], int, int, bool, list[tuple[str, dict[str, Any]]]]] = []
    spans.append(
        (
            "invoke_workflow support_turn",
            -1,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW,
                sc.GEN_AI_WORKFLOW_NAME: "support_turn",
                sc.GEN_AI_CONVERSATION_ID: f"conv-{rng.randrange(10**9)}",
                sc.REACH_SESSION_ID: session,
                sc.USER_ID: user,
                sc.HTTP_REQUEST_METHOD: "POST",
                sc.URL_PATH: "/v1/support/turn",
            },
            0,
            2_400_000_000,
            False,
            [],
        )
    )
    spans.append(
        (
            "guardrail input_policy",
            0,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL,
                sc.GEN_AI_TOOL_NAME: "input_policy",
                sc.GEN_AI_TOOL_TYPE: "extension",
                sc.REACH_GATE_NAME: "input_policy",
                sc.REACH_SESSION_ID: session,
            },
            500_000,
            8_000_000,
            False,
            [(sc.EVENT_GATE_TRIGGERED, {sc.REACH_GATE_NAME: "input_policy", sc.REACH_GATE_OBSERVED: 0})],
        )
    )
    t = 10_000_000
    path = ["TriageAgent", rng.choice(AGENTS[1:4]), "WriterAgent"]
    for hop, agent in enumerate(path):
        agent_idx = len(spans)
        failed = rng.random() < 0.03
        failure = {sc.EXCEPTION_TYPE: "TimeoutError", sc.EXCEPTION_MESSAGE: "tool timed out"}
        spans.append(
            (
                f"invoke_agent {agent}",
                0,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
                    sc.GEN_AI_AGENT_NAME: agent,
                    sc.GEN_AI_AGENT_ID: f"{agent.lower()}-v3",
                    sc.GEN_AI_AGENT_DESCRIPTION: f"{agent} for the customer-care desk",
                    sc.REACH_AGENT_ROLE: "support",
                    sc.REACH_HOP_COUNT: hop,
                    sc.REACH_HOP_PATH: path[: hop + 1],
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 2 * 1400,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 2 * 180,
                    sc.REACH_AGENT_LLM_CALLS: 2,
                    sc.REACH_AGENT_TOOL_CALLS: 2,
                    sc.REACH_SESSION_ID: session,
                    sc.REACH_TASK_ID: task,
                },
                t,
                700_000_000,
                failed,
                [(sc.EXCEPTION_EVENT, failure)] if failed else [],
            )
        )
        for call in range(2):
            offset = t + 1_000_000 + call * 330_000_000
            tool = TOOLS[(hop + call) % len(TOOLS)]
            finish = "tool_calls" if call == 0 else "stop"
            spans.append(
                (
                    "chat gpt-4o-mini",
                    agent_idx,
                    {
                        sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                        sc.GEN_AI_PROVIDER_NAME: "openai",
                        sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                        sc.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18",
                        sc.GEN_AI_RESPONSE_ID: f"chatcmpl-{rng.getrandbits(96):024x}",
                        sc.GEN_AI_RESPONSE_FINISH_REASONS: [finish],
                        sc.GEN_AI_REQUEST_TEMPERATURE: 0.2,
                        sc.GEN_AI_REQUEST_MAX_TOKENS: 1024,
                        sc.GEN_AI_REQUEST_TOP_P: 0.95,
                        sc.GEN_AI_REQUEST_STREAM: False,
                        sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: 0.31,
                        sc.GEN_AI_USAGE_INPUT_TOKENS: 1400,
                        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 180,
                        sc.SERVER_ADDRESS: "api.openai.com",
                        sc.SERVER_PORT: 443,
                        sc.REACH_AGENT_NAME: agent,
                        sc.REACH_LLM_TOOL_CALLS_REQUESTED: 1 - call,
                        sc.REACH_TASK_ID: task,
                    },
                    offset,
                    250_000_000,
                    False,
                    [("gen_ai.choice", {sc.GEN_AI_RESPONSE_FINISH_REASONS: [finish]})],
                )
            )
            spans.append(
                (
                    f"execute_tool {tool}",
                    agent_idx,
                    {
                        sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL,
                        sc.GEN_AI_TOOL_NAME: tool,
                        sc.GEN_AI_TOOL_CALL_ID: f"call_{rng.getrandbits(72):018x}",
                        sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
                        sc.GEN_AI_TOOL_DESCRIPTION: f"{tool.replace('_', ' ')} in the billing system",
                        sc.GEN_AI_TOOL_CALL_ARGUMENTS: (
                            f'{{"account_id": "A-{rng.randrange(10**6):06d}", '
                            f'"invoice_id": "INV-{rng.randrange(10**7):07d}"}}'
                        ),
                        sc.REACH_AGENT_NAME: agent,
                        sc.REACH_TASK_ID: task,
                    },
                    offset + 260_000_000,
                    40_000_000,
                    False,
                    [("gen_ai.tool.result", {sc.GEN_AI_TOOL_CALL_RESULT: f"ok: {rng.randrange(4000)} rows"})],
                )
            )
        if hop + 1 < len(path):
            target = path[hop + 1]
            spans.append(
                (
                    f"handoff {target}",
                    agent_idx,
                    {
                        sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
                        sc.GEN_AI_AGENT_NAME: agent,
                        sc.REACH_HANDOFF_SOURCE: agent,
                        sc.REACH_HANDOFF_TARGET: target,
                        sc.REACH_HANDOFF_MODE: "delegate",
                        sc.REACH_HANDOFF_STATUS: "committed",
                        sc.REACH_HANDOFF_ID: f"h-{rng.getrandbits(64):016x}",
                        sc.REACH_HANDOFF_REASON: "intent routed",
                        sc.REACH_HOP_COUNT: hop + 1,
                        sc.REACH_LOOP_DETECTED: False,
                        sc.GEN_AI_TRANSFER_MODE: sc.TRANSFER_RETURN_TO_CALLER,
                    },
                    t + 680_000_000,
                    1_000_000,
                    False,
                    [
                        (
                            sc.EVENT_HANDOFF_TRANSITION,
                            {sc.REACH_HANDOFF_FROM_STATUS: "proposed", sc.REACH_HANDOFF_STATUS: "committed"},
                        )
                    ],
                )
            )
        t += 720_000_000
    return spans


def _fill(span: Any, trace_id: bytes, ids: list[bytes], i: int, spec: tuple[Any, ...], start_ns: int) -> None:
    name, parent, attrs, offset, duration, error = spec[:6]
    span.trace_id, span.span_id = trace_id, ids[i]
    if parent >= 0:
        span.parent_span_id = ids[parent]
    span.name = name
    span.kind = 3 if name.startswith("chat") else 1
    span.start_time_unix_nano = start_ns + offset
    span.end_time_unix_nano = start_ns + offset + duration
    _set(span, attrs)
    for event_name, event_attrs in spec[6] if len(spec) > 6 else ():
        event = span.events.add()
        event.name = event_name
        event.time_unix_nano = start_ns + offset + duration // 2
        _set(event, event_attrs)
    if error:
        span.status.code = 2
        span.status.message = "agent failed"


def make_request(
    rng: random.Random, n_spans: int, start_ns: int, heavy: bool = False
) -> ExportTraceServiceRequest:
    """One OTLP request of about ``n_spans`` spans (whole traces), as a BatchSpanProcessor sends.
    ``heavy``: the 19-span traces of ``_heavy_trace_spans`` and a production-sized resource."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    for key, value in HEAVY_RESOURCE if heavy else RESOURCE:
        kv = rs.resource.attributes.add()
        kv.key, kv.value.string_value = key, value
    ss = rs.scope_spans.add()
    ss.scope.name, ss.scope.version = "reach_otel", "0.1.0"
    count = 0
    while count < n_spans:
        trace_id = os.urandom(16)
        specs = _heavy_trace_spans(rng) if heavy else _trace_spans(rng, start_ns)
        ids = [os.urandom(8) for _ in specs]
        for i, spec in enumerate(specs):
            _fill(ss.spans.add(), trace_id, ids, i, spec, start_ns)
            count += 1
        start_ns += 2_000_000
    return req


def make_bodies(
    n_requests: int, spans_per_request: int = 512, seed: int = 1, heavy: bool = False
) -> list[bytes]:
    """``n_requests`` serialized requests; ``heavy`` selects the heavier multi-agent workload."""
    import time

    rng = random.Random(seed)
    start = time.time_ns() - 3600 * 10**9
    out = []
    for i in range(n_requests):
        out.append(make_request(rng, spans_per_request, start + i * 10**9, heavy).SerializeToString())
    return out


def decoded_table(bodies: list[bytes]) -> Any:
    """The requests' span rows as the collector's compiled decoder makes them, in one Arrow table;
    exits when that decoder is not built."""
    import pyarrow as pa

    from reach_collector.ingest import fast

    batches = [fast.flatten_protobuf(body) for body in bodies]
    if any(batch is None for batch in batches):
        raise SystemExit("the compiled decoder is not built: reinstall where a C compiler is")
    return pa.concat_tables([batch.table for batch in batches if batch is not None]).combine_chunks()
