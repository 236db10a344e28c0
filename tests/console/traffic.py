"""Multi-agent traces as OTLP/JSON requests for the console tests and ``bench/console.py``: a
planner agent handing off to workers (each run with LLM calls carrying captured prompts and
completions, tools, a gate now and then, a failing tool, a loop back), any number of spans.

Attribute names come from reach_otel.semconv; the JSON is the OTLP/HTTP JSON encoding."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from reach_otel import semconv as sc

WORKERS = ("BillingAgent", "TechSupportAgent", "RefundAgent", "WriterAgent")
PLANNER = "TriageAgent"
TOOLS = ("query_invoice", "search_kb", "issue_refund", "lookup_account")
MODEL = "support-model"


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


def attributes(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in attrs.items()]


@dataclass
class TraceInfo:
    trace_id: str
    agents: set[str] = field(default_factory=set)
    handoffs: list[tuple[str, str]] = field(default_factory=list)
    span_count: int = 0


class _Builder:
    def __init__(self, rng: random.Random, trace_id: str) -> None:
        self.rng = rng
        self.trace_id = trace_id
        self.spans: list[dict[str, Any]] = []

    def span_id(self) -> str:
        return f"{self.rng.getrandbits(64) | 1:016x}"

    def add(
        self,
        name: str,
        parent: str | None,
        start: int,
        end: int,
        attrs: dict[str, Any],
        *,
        error: str | None = None,
        events: list[dict[str, Any]] | None = None,
        kind: int = 1,
    ) -> str:
        sid = self.span_id()
        span: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": sid,
            "name": name,
            "kind": kind,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end),
            "attributes": attributes(attrs),
            "status": {"code": 2, "message": error} if error else {"code": 1},
        }
        if parent:
            span["parentSpanId"] = parent
        if events:
            span["events"] = events
        self.spans.append(span)
        return sid


def _messages(question: str, answer: str) -> tuple[str, str]:
    inp = [
        {"role": "system", "parts": [{"type": "text", "content": "You are a support agent. Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": question}]},
    ]
    out = [{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]
    return json.dumps(inp), json.dumps(out)


def agent_trace(
    spans: int = 40, *, seed: int = 1, start_ns: int | None = None
) -> tuple[dict[str, Any], TraceInfo]:
    """One request of about ``spans`` spans: workflow → planner → handoffs to workers, each
    handoff parenting the worker's agent span. Returns (OTLP/JSON request, what it holds)."""
    rng = random.Random(seed)
    trace_id = f"{rng.getrandbits(128) | 1:032x}"
    b = _Builder(rng, trace_id)
    info = TraceInfo(trace_id)
    t = start_ns if start_ns is not None else time.time_ns() - 120 * 1_000_000_000
    ms = 1_000_000
    steps = max(1, (spans - 3) // 7)
    workflow_end = t + (steps * 40 + 30) * ms
    root = b.add(
        "invoke_workflow support_turn",
        None,
        t,
        workflow_end,
        {
            sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW,
            sc.GEN_AI_WORKFLOW_NAME: "support_turn",
            sc.GEN_AI_CONVERSATION_ID: "S-42",
        },
    )
    planner_attrs = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
        sc.GEN_AI_AGENT_NAME: PLANNER,
        sc.REACH_AGENT_ROLE: "triage",
    }
    planner = b.add(f"invoke_agent {PLANNER}", root, t + ms, workflow_end - ms, planner_attrs)
    info.agents.add(PLANNER)
    q, a = _messages("Where is my refund for INV-2?", "Routing you to billing.")
    b.add(
        f"chat {MODEL}",
        planner,
        t + 2 * ms,
        t + 20 * ms,
        {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_REQUEST_MODEL: MODEL,
            sc.REACH_AGENT_NAME: PLANNER,
            sc.GEN_AI_USAGE_INPUT_TOKENS: 120,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 18,
            sc.GEN_AI_INPUT_MESSAGES: q,
            sc.GEN_AI_OUTPUT_MESSAGES: a,
        },
    )
    cursor = t + 25 * ms
    previous = PLANNER
    for step in range(steps):
        hop = step + 1
        worker = WORKERS[step % len(WORKERS)]
        back = step % 9 == 5  # now and then the worker is asked to hand back: a loop
        source = previous if back else PLANNER
        fails = step % 11 == 3
        inferred = step % 5 == 2
        h_start, h_end = cursor, cursor + 36 * ms
        handoff_attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.REACH_HANDOFF_SOURCE: source,
            sc.REACH_HANDOFF_TARGET: worker,
            sc.REACH_HANDOFF_MODE: "delegate",
            sc.REACH_HOP_COUNT: hop,
            sc.GEN_AI_AGENT_NAME: source,
            sc.GEN_AI_TRANSFER_TARGET_NAME: worker,
            sc.REACH_HANDOFF_REASON: "route",
        }
        if not inferred:
            handoff_attrs[sc.REACH_HANDOFF_STATUS] = "failed" if fails else "committed"
            handoff_attrs[sc.REACH_HANDOFF_TRANSITIONS] = 3
        events = None
        if back:
            handoff_attrs[sc.REACH_LOOP_DETECTED] = True
            events = [
                {
                    "timeUnixNano": str(h_start + ms),
                    "name": sc.EVENT_LOOP_DETECTED,
                    "attributes": attributes({sc.REACH_LOOP_CYCLE: [source, worker, source]}),
                }
            ]
        handoff = b.add(
            f"handoff {worker}",
            planner,
            h_start,
            h_end,
            handoff_attrs,
            error="target failed" if fails else None,
            events=events,
        )
        info.handoffs.append((source, worker))
        info.agents.add(worker)
        run = b.add(
            f"invoke_agent {worker}",
            handoff,
            h_start + ms,
            h_end - ms,
            {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: worker},
            error="InvoiceError" if fails else None,
        )
        for k in range(3):
            q, a = _messages(
                f"step {step}.{k}: what does the customer need?", f"Answer {step}.{k}: look up the invoice."
            )
            s0 = h_start + (2 + 8 * k) * ms
            b.add(
                f"chat {MODEL}",
                run,
                s0,
                s0 + 6 * ms,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_REQUEST_MODEL: MODEL,
                    sc.REACH_AGENT_NAME: worker,
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 200 + rng.randrange(100),
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 40 + rng.randrange(40),
                    sc.GEN_AI_INPUT_MESSAGES: q,
                    sc.GEN_AI_OUTPUT_MESSAGES: a,
                },
            )
        for k in range(2):
            tool = TOOLS[(step + k) % len(TOOLS)]
            s0 = h_start + (27 + 3 * k) * ms
            tool_error = "RefundServiceError" if fails and k == 1 else None
            tool_events = None
            if step % 7 == 4 and k == 0:
                tool_events = [
                    {
                        "timeUnixNano": str(s0 + ms),
                        "name": sc.EVENT_GATE_TRIGGERED,
                        "attributes": attributes(
                            {
                                sc.REACH_GATE_NAME: "max_tool_calls",
                                sc.REACH_GATE_LIMIT: 8,
                                sc.REACH_GATE_OBSERVED: 8,
                            }
                        ),
                    }
                ]
            if tool_error:
                tool_events = [
                    {
                        "timeUnixNano": str(s0 + ms),
                        "name": sc.EXCEPTION_EVENT,
                        "attributes": attributes(
                            {
                                sc.EXCEPTION_TYPE: tool_error,
                                sc.EXCEPTION_MESSAGE: "refund backend rejected INV-2",
                            }
                        ),
                    }
                ]
            b.add(
                f"execute_tool {tool}",
                run,
                s0,
                s0 + 2 * ms,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL,
                    sc.GEN_AI_TOOL_NAME: tool,
                    sc.REACH_AGENT_NAME: worker,
                },
                error=tool_error,
                events=tool_events,
            )
        previous = worker
        cursor += 40 * ms
    for k in range(max(0, spans - len(b.spans))):  # to the exact count asked for
        s0 = cursor + k * ms // 4
        b.add(
            "execute_tool lookup_account",
            planner,
            s0,
            s0 + ms // 4,
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL,
                sc.GEN_AI_TOOL_NAME: "lookup_account",
                sc.REACH_AGENT_NAME: PLANNER,
            },
        )
    info.span_count = len(b.spans)
    return request(b.spans), info


def request(spans: list[dict[str, Any]], service: str = "support-desk") -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": attributes({sc.SERVICE_NAME: service, "deployment.environment": "test"})
                },
                "scopeSpans": [{"scope": {"name": "reach-console-traffic", "version": "1"}, "spans": spans}],
            }
        ]
    }


def failing_runs(
    now_ns: int, agents: tuple[str, ...] = ("BillingAgent",), count: int = 5, *, first_id: int = 0xA1E7
) -> dict[str, Any]:
    """``count`` failed runs of each agent, one a second before ``now_ns``: what fires a P0."""
    spans = []
    for a, agent in enumerate(agents):
        for i in range(count):
            n = first_id + a * count + i
            end = now_ns - (i + 1) * 1_000_000_000
            spans.append(
                {
                    "traceId": f"{n:032x}",
                    "spanId": f"{n:016x}",
                    "name": f"invoke_agent {agent}",
                    "kind": 1,
                    "startTimeUnixNano": str(end - 80_000_000),
                    "endTimeUnixNano": str(end),
                    "attributes": attributes(
                        {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: agent}
                    ),
                    "status": {"code": 2, "message": "invoice service down"},
                }
            )
    return request(spans, service="billing-svc")


def post(url: str, body: dict[str, Any], token: str | None = None) -> None:
    """POST one OTLP/JSON request; raises unless the collector stored it (200, no rejected spans)."""
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    response = httpx.post(url + "/v1/traces", content=json.dumps(body), headers=headers, timeout=120)
    response.raise_for_status()
    rejected = (response.json().get("partialSuccess") or {}).get("rejectedSpans")
    if rejected and int(rejected):
        raise RuntimeError(f"collector rejected {rejected} spans: {response.text[:300]}")


# --- the library's own spans -----------------------------------------------------------------------
@dataclass
class _Usage:
    input_tokens: int
    output_tokens: int


@dataclass
class _Reply:
    model: str
    usage: _Usage
    content: str

    def __str__(self) -> str:
        return self.content


def library_trace(collector_url: str, headers: dict[str, str] | None = None) -> TraceInfo:
    """One request made with reach_otel's decorators (content capture on) and exported over
    OTLP/HTTP protobuf: triage asks the model, hands off to billing, which asks the model and
    runs a tool. Uses its own provider and handler; the previous handler is restored."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import reach_otel
    from reach_otel.config import load_settings
    from reach_otel.handler import TelemetryHandler, set_handler

    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "library-app"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector_url + "/v1/traces", headers=headers or {}))
    )
    handler = TelemetryHandler(tracer_provider=provider, settings=load_settings(env={}, capture_content=True))

    @reach_otel.llm(model=MODEL, provider="local")
    def ask(messages: list[dict[str, str]]) -> Any:
        return {"role": "assistant", "content": f"(answer to: {messages[-1]['content']})"}

    @reach_otel.tool(name="query_invoice")
    def query_invoice(invoice: str) -> dict[str, Any]:
        return {"invoice": invoice, "amount": 99.5}

    @reach_otel.agent(name="BillingAgent", role="billing")
    def billing() -> str:
        ask([{"role": "user", "content": "Explain invoice INV-2"}])
        return str(query_invoice("INV-2"))

    @reach_otel.agent(name="TriageAgent", role="triage")
    def triage() -> str:
        ask([{"role": "user", "content": "Where is my invoice INV-2?"}])
        with reach_otel.handoff("TriageAgent", "BillingAgent", reason="invoice", mode="delegate") as h:
            h.transition("accept")
            h.transition("start")
            result = billing()
            h.transition("commit")
        return result

    previous = set_handler(handler)
    try:
        with provider.get_tracer("console-test").start_as_current_span("support request") as root:
            triage()
            trace_id = f"{root.get_span_context().trace_id:032x}"
    finally:
        set_handler(previous)
        provider.shutdown()
    info = TraceInfo(trace_id, {"TriageAgent", "BillingAgent"}, [("TriageAgent", "BillingAgent")], 7)
    return info
