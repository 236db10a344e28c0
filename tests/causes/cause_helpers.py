"""Helpers for the causes tests: traces built span by span (times, status, attributes and parents
chosen by the test) and sent over real OTLP/HTTP to a collector on a loopback port."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc

MS = 1_000_000
S = 1_000_000_000
PRICES = {"small": {"input": 1.0, "output": 2.0}, "large": {"input": 10.0, "output": 30.0}}


@dataclass
class Collector:
    url: str
    store: DuckDBStore
    app: Any

    def get(self, path: str, **params: str) -> httpx.Response:
        return httpx.get(self.url + path, params=params, timeout=30)


class Span:
    """A sent span: its id and its context (for children)."""

    def __init__(self, app: App, span: Any, start_ms: float) -> None:
        self.app = app
        self.ctx = trace.set_span_in_context(span)
        context = span.get_span_context()
        self.span_id = f"{context.span_id:016x}"
        self.trace_id = f"{context.trace_id:032x}"
        self.start_ms = start_ms

    def child(
        self,
        name: str,
        start_ms: float,
        dur_ms: float,
        attrs: dict[str, Any],
        *,
        error: str | None = None,
        message: str = "failed",
        events: tuple[tuple[str, dict[str, Any]], ...] = (),
    ) -> Span:
        """A child span; ``error``: ERROR with this ``error.type`` and status message."""
        return self.app.span(self.ctx, name, start_ms, dur_ms, attrs, error, message, events)

    def agent(self, name: str, start_ms: float, dur_ms: float, *, error: str | None = None) -> Span:
        attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: name}
        return self.child(sc.agent_span_name(name), start_ms, dur_ms, attrs, error=error)

    def tool(self, agent: str | None, tool: str, start_ms: float, dur_ms: float = 20, **kw: Any) -> Span:
        attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL, sc.GEN_AI_TOOL_NAME: tool}
        if agent is not None:
            attrs[sc.REACH_AGENT_NAME] = agent
        return self.child(sc.tool_span_name(tool), start_ms, dur_ms, attrs, **kw)

    def llm(
        self,
        agent: str,
        model: str,
        start_ms: float,
        tokens: tuple[int, int] = (0, 0),
        dur_ms: float = 20,
        **kw: Any,
    ) -> Span:
        attrs = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.REACH_AGENT_NAME: agent,
            sc.GEN_AI_REQUEST_MODEL: model,
            sc.GEN_AI_USAGE_INPUT_TOKENS: tokens[0],
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: tokens[1],
        }
        return self.child(sc.llm_span_name(model), start_ms, dur_ms, attrs, **kw)

    def handoff(
        self,
        source: str,
        target: str,
        start_ms: float,
        dur_ms: float = 10,
        *,
        status: str | None = None,
        loop: bool = False,
        hop_limit: bool = False,
        **kw: Any,
    ) -> Span:
        """A handoff; a ``status`` is recorded with state-machine transitions (so it stands), none
        leaves the outcome to the target's next agent span (§11)."""
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.REACH_HANDOFF_SOURCE: source,
            sc.REACH_HANDOFF_TARGET: target,
            sc.REACH_HANDOFF_MODE: "delegate",
        }
        if status is not None:
            attrs[sc.REACH_HANDOFF_STATUS] = status
            attrs[sc.REACH_HANDOFF_TRANSITIONS] = 2
        if loop:
            attrs[sc.REACH_LOOP_DETECTED] = True
        events = kw.pop("events", ())
        if hop_limit:
            events = (*events, (sc.EVENT_HOP_LIMIT_EXCEEDED, {sc.REACH_HOP_COUNT: 9, sc.REACH_HOP_LIMIT: 8}))
        return self.child(sc.handoff_span_name(target), start_ms, dur_ms, attrs, events=events, **kw)


class App:
    """An app whose spans sit on a timeline from ``base_ns`` (default: 5 minutes ago)."""

    def __init__(self, url: str, service: str = "support-app", base_ns: int | None = None) -> None:
        self.provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: service}))
        exporter = OTLPSpanExporter(endpoint=url + "/v1/traces")
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
        self.tracer = self.provider.get_tracer("causes-test")
        self.base = base_ns if base_ns is not None else time.time_ns() - 5 * 60 * S

    def close(self) -> None:
        self.provider.shutdown()

    def flush(self) -> None:
        assert self.provider.force_flush(10_000)

    def root(self, at_ms: float = 0, dur_ms: float = 1000, *, error: str | None = "AgentError") -> Span:
        """A request root (a workflow span) at ``at_ms``; ERROR unless ``error`` is None."""
        attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW, sc.GEN_AI_WORKFLOW_NAME: "turn"}
        return self.span(None, "invoke_workflow turn", at_ms, dur_ms, attrs, error, "request failed", ())

    def span(
        self,
        ctx: Any,
        name: str,
        start_ms: float,
        dur_ms: float,
        attrs: dict[str, Any],
        error: str | None,
        message: str,
        events: tuple[tuple[str, dict[str, Any]], ...],
    ) -> Span:
        start = self.base + int(start_ms * MS)
        s = self.tracer.start_span(name, context=ctx, start_time=start, attributes=dict(attrs))
        if error is not None:
            s.set_attribute(sc.ERROR_TYPE, error)
            s.set_status(Status(StatusCode.ERROR, message))
        for event, event_attrs in events:
            s.add_event(event, event_attrs, timestamp=start)
        s.end(end_time=start + int(dur_ms * MS))
        return Span(self, s, start_ms)
