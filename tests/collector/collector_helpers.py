"""Helpers for the collector tests: a uvicorn server thread on a free loopback port, a handle on a
running collector, and OTel SDK tracer providers wired to the real OTLP exporters."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from reach_collector.store.duckdb_store import DuckDBStore


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


class ServerThread:
    """uvicorn serving an app on an already-bound loopback socket, in a background thread."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True
        )

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("collector did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


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
