"""Helpers for the topology tests: an app that sends hand-placed spans over real OTLP/HTTP (each
span's times, status and attributes chosen by the test), and a collector on a loopback port."""

from __future__ import annotations

import time
from collections.abc import Mapping
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


@dataclass
class Collector:
    url: str
    store: DuckDBStore
    app: Any

    def get(self, path: str, **params: str) -> httpx.Response:
        return httpx.get(self.url + path, params=params, timeout=30)


class App:
    """Spans placed on a timeline starting at ``base_ns`` (default: 30 minutes ago)."""

    def __init__(
        self, url: str, service: str = "support-app", version: str | None = None, base_ns: int | None = None
    ) -> None:
        resource: dict[str, Any] = {sc.SERVICE_NAME: service}
        if version is not None:
            resource[sc.SERVICE_VERSION] = version
        self.provider = TracerProvider(resource=Resource.create(resource))
        exporter = OTLPSpanExporter(endpoint=url + "/v1/traces")
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
        self.tracer = self.provider.get_tracer("topology-test")
        self.base = base_ns if base_ns is not None else time.time_ns() - 30 * 60 * S

    def close(self) -> None:
        self.provider.shutdown()

    def flush(self) -> None:
        assert self.provider.force_flush(10_000)

    def trace(self, at_ms: int = 0) -> Any:
        """A request root at ``at_ms`` (1 s long); its children carry their own times."""
        root = self.tracer.start_span(
            "invoke_workflow turn",
            start_time=self.base + at_ms * MS,
            attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW},
        )
        root.end(end_time=self.base + (at_ms + 1000) * MS)
        return trace.set_span_in_context(root)

    def span(
        self,
        ctx: Any,
        name: str,
        start_ms: float,
        dur_ms: float,
        attrs: Mapping[str, Any],
        error: bool = False,
    ) -> None:
        start = self.base + int(start_ms * MS)
        s = self.tracer.start_span(name, context=ctx, start_time=start, attributes=dict(attrs))
        if error:
            s.set_status(Status(StatusCode.ERROR, "failed"))
        s.end(end_time=start + int(dur_ms * MS))

    def agent(self, ctx: Any, name: str, start_ms: float, dur_ms: float = 200, error: bool = False) -> None:
        attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: name}
        self.span(ctx, sc.agent_span_name(name), start_ms, dur_ms, attrs, error)

    def handoff(
        self,
        ctx: Any,
        source: str,
        target: str,
        start_ms: float,
        dur_ms: float,
        status: str | None = None,
        mode: str | None = "delegate",
        loop: bool = False,
    ) -> None:
        """A handoff span; a given ``status`` is recorded with the state machine's transitions (so
        it stands), none leaves the outcome to the target's next agent span."""
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.REACH_HANDOFF_SOURCE: source,
            sc.REACH_HANDOFF_TARGET: target,
        }
        if mode is not None:
            attrs[sc.REACH_HANDOFF_MODE] = mode
        if status is not None:
            attrs[sc.REACH_HANDOFF_STATUS] = status
            attrs[sc.REACH_HANDOFF_TRANSITIONS] = 2
        if loop:
            attrs[sc.REACH_LOOP_DETECTED] = True
        self.span(ctx, sc.handoff_span_name(target), start_ms, dur_ms, attrs)

    def llm(
        self,
        ctx: Any,
        agent: str,
        start_ms: float,
        model: str,
        tokens_in: int,
        tokens_out: int,
        **extra: Any,
    ) -> None:
        attrs = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.REACH_AGENT_NAME: agent,
            sc.GEN_AI_REQUEST_MODEL: model,
            sc.GEN_AI_USAGE_INPUT_TOKENS: tokens_in,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: tokens_out,
            **extra,
        }
        self.span(ctx, f"chat {model}", start_ms, 50, attrs)
