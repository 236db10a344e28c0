"""Helpers for the collector tests: a uvicorn server thread on a free loopback port, a handle on a
running collector, and OTel SDK tracer providers wired to the real OTLP exporters."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc


@dataclass
class RunningCollector:
    url: str
    store: DuckDBStore
    app: Any
    db: Path

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.post(self.url + path, timeout=10, **kwargs)


def tracer_provider(exporter: Any, service: str = "billing-agent", **resource: Any) -> tuple[Any, Any]:
    """A TracerProvider of our own (never the global one) that sends to `exporter` synchronously
    and also keeps every span in memory, so tests compare the collector's answer with the source."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service, **resource}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, memory


def multi_agent_trace(exporter: Any, *, fail_billing: bool = False, loop: bool = False) -> str:
    """One realistic request: workflow → triage → handoff → billing (chat + tool); returns trace id."""
    from opentelemetry.trace import SpanKind, Status, StatusCode

    from reach_otel import semconv as sc

    provider, _ = tracer_provider(exporter, service="support-app")
    tracer = provider.get_tracer("multi-agent-test")

    def agent_attrs(name: str, hop: int) -> dict[str, Any]:
        return {
            sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
            sc.GEN_AI_AGENT_NAME: name,
            sc.REACH_HOP_COUNT: hop,
            sc.GEN_AI_USAGE_INPUT_TOKENS: 100,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
        }

    with tracer.start_as_current_span(
        sc.workflow_span_name("support_turn"),
        attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW, sc.GEN_AI_WORKFLOW_NAME: "support_turn"},
    ) as root:
        with (
            tracer.start_as_current_span(
                sc.agent_span_name("TriageAgent"), attributes=agent_attrs("TriageAgent", 0)
            ),
            tracer.start_as_current_span(
                sc.handoff_span_name("BillingAgent"),
                attributes={
                    sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
                    sc.GEN_AI_AGENT_NAME: "TriageAgent",
                    sc.REACH_HANDOFF_SOURCE: "TriageAgent",
                    sc.REACH_HANDOFF_TARGET: "BillingAgent",
                    sc.REACH_HANDOFF_MODE: "delegate",
                    sc.REACH_HANDOFF_STATUS: "committed",
                    sc.REACH_HOP_COUNT: 1,
                    sc.REACH_LOOP_DETECTED: loop,
                },
            ) as handoff,
        ):
            if loop:
                handoff.add_event(
                    sc.EVENT_LOOP_DETECTED, {sc.REACH_LOOP_CYCLE: ["TriageAgent", "BillingAgent"]}
                )
        with tracer.start_as_current_span(
            sc.agent_span_name("BillingAgent"), attributes=agent_attrs("BillingAgent", 1)
        ) as billing:
            with tracer.start_as_current_span(
                sc.llm_span_name("fake-model"),
                kind=SpanKind.CLIENT,
                attributes={
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_REQUEST_MODEL: "fake-model",
                    sc.GEN_AI_PROVIDER_NAME: "local",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 100,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
                    sc.REACH_AGENT_NAME: "BillingAgent",
                },
            ):
                pass
            with tracer.start_as_current_span(
                sc.tool_span_name("query_invoice"),
                attributes={
                    sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL,
                    sc.GEN_AI_TOOL_NAME: "query_invoice",
                    sc.REACH_AGENT_NAME: "BillingAgent",
                },
            ):
                pass
            if fail_billing:
                billing.set_status(Status(StatusCode.ERROR, "invoice service down"))
                billing.set_attribute(sc.ERROR_TYPE, "billing.InvoiceError")
    provider.shutdown()
    return format(root.get_span_context().trace_id, "032x")


def request_with(spans: list[dict[str, Any]]) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    scope = req.resource_spans.add().scope_spans.add()
    for fields in spans:
        s = scope.spans.add()
        s.trace_id = fields.get("trace_id", bytes(range(1, 17)))
        s.span_id = fields.get("span_id", bytes(range(1, 9)))
        s.name = fields.get("name", "s")
        s.start_time_unix_nano = fields.get("start", 1_700_000_000_000_000_000)
        s.end_time_unix_nano = fields.get("end", 1_700_000_000_100_000_000)
    return req


class BlockingStore:
    """A store whose writes wait for a gate, so the write queue fills deterministically."""

    def __init__(self, inner: DuckDBStore) -> None:
        self.inner = inner
        self.write_profile = inner.write_profile
        self.gate = threading.Event()
        self.entered = threading.Event()

    def write(self, table: pa.Table, parts: pa.Table) -> None:
        self.entered.set()
        self.gate.wait(10)
        self.inner.write(table, parts)

    def maintain(self, idle: bool) -> None:
        pass


RICH_ATTRIBUTES: dict[str, Any] = {
    "str": "héllo ✓",
    "empty": "",
    "int": 42,
    "negative": -7,
    "big": 2**62 + 11,
    "float": 1.0,
    "pi": 3.141592653589793,
    "bool_t": True,
    "bool_f": False,
    "strs": ("a", "b", ""),
    "ints": (1, -2, 2**40),
    "floats": (0.5, 2.0),
    "bools": (True, False),
    sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
    sc.GEN_AI_AGENT_NAME: "BillingAgent",
}


def produce_rich_trace(exporter: Any) -> tuple[int, list[Any]]:
    provider, memory = tracer_provider(exporter, deployment="test", replicas=3, ratio=0.25)
    tracer = provider.get_tracer("roundtrip", "1.2.3")
    with tracer.start_as_current_span("invoke_workflow support", kind=SpanKind.SERVER) as root:
        with tracer.start_as_current_span("invoke_agent BillingAgent", attributes=RICH_ATTRIBUTES) as agent:
            agent.add_event("checkpoint", {"step": 3, "ok": True, "why": "because", "w": 0.5})
            agent.add_event("bare")
            with tracer.start_as_current_span(
                "chat my-model",
                kind=SpanKind.CLIENT,
                links=[Link(root.get_span_context(), {"link.kind": "root", "n": 1})],
                attributes={
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_REQUEST_MODEL: "my-model",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 120,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 30,
                },
            ):
                pass
            try:
                with tracer.start_as_current_span("execute_tool query_invoice") as tool:
                    tool.set_attribute(sc.GEN_AI_TOOL_NAME, "query_invoice")
                    raise ValueError("no such invoice")
            except ValueError:
                pass
        with tracer.start_as_current_span("ok-span", kind=SpanKind.PRODUCER) as ok:
            ok.set_status(Status(StatusCode.OK))
        with tracer.start_as_current_span("consumer", kind=SpanKind.CONSUMER):
            pass
    provider.shutdown()
    return root.get_span_context().trace_id, list(memory.get_finished_spans())


def _expected_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _assert_same_value(got: Any, want: Any, where: str) -> None:
    want = _expected_value(want)
    assert got == want, where
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, list):
        for g, w in zip(got, want, strict=True):
            assert type(g) is type(w), where


def _assert_attributes(got: dict[str, Any], want: Any, where: str) -> None:
    want = dict(want or {})
    assert set(got) == set(want), where
    for key, value in want.items():
        _assert_same_value(got[key], value, f"{where}.{key}")


def assert_trace_matches(body: dict[str, Any], trace_id: int, sdk_spans: list[Any]) -> None:
    assert body["trace_id"] == format(trace_id, "032x")
    assert body["span_count"] == len(sdk_spans)
    by_id = {s["span_id"]: s for s in body["spans"]}
    starts = [s["start_time_unix_nano"] for s in body["spans"]]
    assert starts == sorted(starts)
    for sdk in sdk_spans:
        ctx = sdk.get_span_context()
        got = by_id[format(ctx.span_id, "016x")]
        where = sdk.name
        assert got["trace_id"] == format(ctx.trace_id, "032x")
        assert got["parent_span_id"] == (format(sdk.parent.span_id, "016x") if sdk.parent else None)
        assert got["name"] == sdk.name
        assert got["kind"] == sdk.kind.name
        assert got["start_time_unix_nano"] == sdk.start_time
        assert got["end_time_unix_nano"] == sdk.end_time
        assert got["duration_ms"] == pytest.approx((sdk.end_time - sdk.start_time) / 1e6)
        assert got["status"]["code"] == sdk.status.status_code.name
        assert got["status"]["message"] == (sdk.status.description or "")
        assert got["service"] == "billing-agent"
        _assert_attributes(got["attributes"], sdk.attributes, where)
        _assert_attributes(got["resource"], sdk.resource.attributes, where + ".resource")
        assert len(got["events"]) == len(sdk.events)
        for ev_got, ev in zip(got["events"], sdk.events, strict=True):
            assert ev_got["name"] == ev.name
            assert ev_got["time_unix_nano"] == ev.timestamp
            _assert_attributes(ev_got["attributes"], ev.attributes, f"{where}.event")
        assert len(got["links"]) == len(sdk.links)
        for ln_got, ln in zip(got["links"], sdk.links, strict=True):
            assert ln_got["trace_id"] == format(ln.context.trace_id, "032x")
            assert ln_got["span_id"] == format(ln.context.span_id, "016x")
            _assert_attributes(ln_got["attributes"], ln.attributes, f"{where}.link")
    # The tree: one root with the agent and two siblings, ordered by start.
    (root,) = body["roots"]
    assert [c["name"] for c in root["children"]] == ["invoke_agent BillingAgent", "ok-span", "consumer"]
    agent = root["children"][0]
    assert [c["name"] for c in agent["children"]] == ["chat my-model", "execute_tool query_invoice"]
