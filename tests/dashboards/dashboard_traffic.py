"""Multi-agent traffic for the end-to-end test, made with reach_otel's decorators and exported
over OTLP/HTTP to a collector: a triage agent hands off to billing (which fails one call in three)
or tech support, one request in four ping-pongs, a judge's verdict rides on billing's span, and
agents send heartbeat spans."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import reach_otel
from reach_otel import semconv as sc
from reach_otel.config import load_settings
from reach_otel.handler import TelemetryHandler, set_handler

AGENTS = ("TriageAgent", "BillingAgent", "TechAgent")
# The collector's price table for this traffic's models (config `prices`, USD per 1M tokens).
PRICES = {"fake-small": {"input": 0.15, "output": 0.60}, "fake-large": {"input": 2.5, "output": 10.0}}


class InvoiceError(Exception):
    pass


@reach_otel.llm(model="fake-small", provider="local")
def complete(prompt: str, tokens: int) -> Any:
    return SimpleNamespace(
        model="fake-small", usage=SimpleNamespace(input_tokens=tokens, output_tokens=tokens // 5)
    )


@reach_otel.llm(model="fake-large", provider="local")
def reason(prompt: str) -> Any:
    return SimpleNamespace(model="fake-large", usage=SimpleNamespace(input_tokens=400, output_tokens=120))


@reach_otel.tool(name="query_invoice")
def query_invoice(n: int) -> dict[str, int]:
    return {"invoice": n}


@reach_otel.agent(name="BillingAgent", role="billing")
def billing(n: int, bounce: int) -> str:
    complete("bill", 150)
    query_invoice(n)
    # a judge's verdict on the answer, as a span event (the collector stores it: SPEC §18)
    verdict = {sc.GEN_AI_EVALUATION_NAME: "correctness", sc.GEN_AI_EVALUATION_SCORE_LABEL: "correct"}
    if n % 5 == 0:
        verdict[sc.GEN_AI_EVALUATION_SCORE_LABEL] = "incorrect"
    trace.get_current_span().add_event(sc.GEN_AI_EVALUATION_RESULT, verdict)
    if bounce:
        with reach_otel.handoff("BillingAgent", "TriageAgent", reason="not mine", mode="delegate") as h:
            h.transition("accept")
            h.transition("start")
            triage(n, bounce - 1)
            h.transition("commit")
    if n % 3 == 0:
        raise InvoiceError("invoice service down")
    return "billed"


@reach_otel.agent(name="TechAgent", role="support")
def tech(n: int) -> str:
    reason("diagnose")
    return "fixed"


@reach_otel.agent(name="TriageAgent", role="triage")
def triage(n: int, bounce: int = 0) -> str:
    complete("route", 80)
    target = "BillingAgent" if n % 2 or bounce else "TechAgent"
    with reach_otel.handoff("TriageAgent", target, reason="route", mode="delegate") as h:
        h.transition("accept")
        h.transition("start")
        try:
            result = billing(n, bounce) if target == "BillingAgent" else tech(n)
        except InvoiceError:
            h.transition("fail")
            return "failed"
        h.transition("commit")
        return result


@reach_otel.workflow(name="support_turn")
def turn(n: int) -> str:
    return triage(n, bounce=2 if n % 4 == 3 else 0)


class Traffic:
    """Runs turns (and heartbeats) in a thread until stopped; its own provider and handler."""

    def __init__(self, collector_url: str, interval: float = 0.2) -> None:
        self.provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "support-app"}))
        exporter = OTLPSpanExporter(endpoint=collector_url + "/v1/traces")
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=200))
        self.handler = TelemetryHandler(tracer_provider=self.provider, settings=load_settings(env={}))
        self.tracer = self.provider.get_tracer("dashboard-traffic")
        self.interval = interval
        self.turns = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dashboard-traffic", daemon=True)
        self._previous: Any = None

    def _run(self) -> None:
        while not self._stop.is_set():
            turn(self.turns)
            self.turns += 1
            for agent in AGENTS:
                with self.tracer.start_as_current_span(
                    sc.HEARTBEAT_SPAN_NAME, attributes={sc.GEN_AI_AGENT_ID: agent}
                ):
                    pass
            self._stop.wait(self.interval)

    def start(self) -> Traffic:
        self._previous = set_handler(self.handler)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        set_handler(self._previous)
        self.provider.shutdown()
