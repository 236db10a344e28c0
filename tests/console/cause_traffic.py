"""Failed multi-agent traces of known causes as OTLP/JSON, for the console's cause tests and
screenshots: where each failure began, which agents never ran and what was wasted are known.

The corpus (``cause_corpus``), ending in the minute before ``now_ns``:
- 3 traces failing at BillingAgent's tool ``query_invoice`` (TimeoutError) after TriageAgent handed
  off to it (a handoff span beside BillingAgent's run, as frameworks record it); BillingAgent then
  asks the model (tokens wasted) and, in 2 of them, hands off to TechSupportAgent, which never runs;
- 2 traces failing at TriageAgent's handoff to BillingAgent, rejected (BillingAgent never runs);
- 1 trace that did not fail: BillingAgent's first ``query_invoice`` failed, a retry succeeded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from traffic import _Builder, request

from reach_otel import semconv as sc

MS = 1_000_000
S = 1_000_000_000
TRIAGE, BILLING, SUPPORT = "TriageAgent", "BillingAgent", "TechSupportAgent"
MODEL = "support-model"
PRICES = {MODEL: {"input": 3.0, "output": 15.0}}  # USD per 1M tokens, for the collector's config
TIMEOUT_MESSAGE = "invoice service timed out after 30 s"


@dataclass
class Corpus:
    tool_errors: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    ok: list[str] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)  # trace id → origin span id
    paths: dict[str, list[str]] = field(default_factory=dict)  # trace id → path span ids, root first


class _Trace:
    """One trace's spans: ``span`` adds one under a parent, times in ms from the trace's start."""

    def __init__(self, rng: random.Random, start_ns: int) -> None:
        self.b = _Builder(rng, f"{rng.getrandbits(128) | 1:032x}")
        self.t0 = start_ns

    @property
    def trace_id(self) -> str:
        return self.b.trace_id

    def span(
        self,
        name: str,
        parent: str | None,
        at_ms: float,
        dur_ms: float,
        attrs: dict[str, Any],
        error: str | None = None,
        message: str = "failed",
    ) -> str:
        if error:
            attrs = {**attrs, sc.ERROR_TYPE: error}
        start = self.t0 + int(at_ms * MS)
        return self.b.add(
            name, parent, start, start + int(dur_ms * MS), attrs, error=message if error else None
        )

    def agent(self, name: str, parent: str, at: float, dur: float, error: str | None = None) -> str:
        attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: name}
        return self.span(sc.agent_span_name(name), parent, at, dur, attrs, error, f"{name} failed")

    def tool(
        self, agent: str, tool: str, parent: str, at: float, dur: float, error: str | None = None
    ) -> str:
        attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL, sc.GEN_AI_TOOL_NAME: tool, sc.REACH_AGENT_NAME: agent}
        return self.span(sc.tool_span_name(tool), parent, at, dur, attrs, error, TIMEOUT_MESSAGE)

    def llm(self, agent: str, parent: str, at: float, dur: float, tokens: tuple[int, int]) -> str:
        attrs = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_REQUEST_MODEL: MODEL,
            sc.REACH_AGENT_NAME: agent,
            sc.GEN_AI_USAGE_INPUT_TOKENS: tokens[0],
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: tokens[1],
        }
        return self.span(sc.llm_span_name(MODEL), parent, at, dur, attrs)

    def handoff(
        self, source: str, target: str, parent: str, at: float, dur: float, status: str | None = None
    ) -> str:
        attrs: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.REACH_HANDOFF_SOURCE: source,
            sc.REACH_HANDOFF_TARGET: target,
            sc.REACH_HANDOFF_MODE: "delegate",
            sc.REACH_HOP_COUNT: 1,
        }
        if status is not None:
            attrs[sc.REACH_HANDOFF_STATUS] = status
            attrs[sc.REACH_HANDOFF_TRANSITIONS] = 2
        error = "HandoffRejected" if status == "rejected" else None
        return self.span(sc.handoff_span_name(target), parent, at, dur, attrs, error, f"{target} refused")

    def root(self, dur: float, failed: bool) -> str:
        attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW, sc.GEN_AI_WORKFLOW_NAME: "support_turn"}
        return self.span(
            "invoke_workflow support_turn", None, 0, dur, attrs, "AgentError" if failed else None
        )


def cause_corpus(now_ns: int, seed: int = 27) -> tuple[dict[str, Any], Corpus]:
    """The corpus above as one OTLP/JSON request, and what it holds."""
    rng = random.Random(seed)
    spans: list[dict[str, Any]] = []
    c = Corpus()
    for i in range(3):
        t = _Trace(rng, now_ns - (50 - 5 * i) * S)
        root = t.root(2400, failed=True)
        triage = t.agent(TRIAGE, root, 5, 2390, error="AgentError")
        t.llm(TRIAGE, triage, 10, 300, (420, 60))
        t.handoff(TRIAGE, BILLING, triage, 320, 10, status="committed")
        billing = t.agent(BILLING, triage, 335, 1975, error="ToolFailed")
        t.tool(BILLING, "lookup_account", billing, 340, 40)
        origin = t.tool(BILLING, "query_invoice", billing, 400, 900, error="TimeoutError")
        t.llm(BILLING, billing, 1320, 600, (1800, 240))
        if i < 2:
            t.handoff(BILLING, SUPPORT, billing, 1950, 300)
        c.tool_errors.append(t.trace_id)
        c.origins[t.trace_id] = origin
        c.paths[t.trace_id] = [root, triage, billing, origin]
        spans += t.b.spans
    for i in range(2):
        t = _Trace(rng, now_ns - (30 - 5 * i) * S)
        root = t.root(900, failed=True)
        triage = t.agent(TRIAGE, root, 5, 890, error="HandoffRejected")
        t.llm(TRIAGE, triage, 10, 300, (400, 50))
        origin = t.handoff(TRIAGE, BILLING, triage, 320, 60, status="rejected")
        c.rejected.append(t.trace_id)
        c.origins[t.trace_id] = origin
        c.paths[t.trace_id] = [root, triage, origin]
        spans += t.b.spans
    t = _Trace(rng, now_ns - 15 * S)
    root = t.root(1500, failed=False)
    triage = t.agent(TRIAGE, root, 5, 1490)
    t.handoff(TRIAGE, BILLING, triage, 20, 8, status="committed")
    billing = t.agent(BILLING, triage, 30, 1380)
    t.tool(BILLING, "query_invoice", billing, 40, 500, error="TimeoutError")  # absorbed by the retry
    t.tool(BILLING, "query_invoice", billing, 600, 200)
    t.llm(BILLING, billing, 820, 500, (900, 120))
    c.ok.append(t.trace_id)
    spans += t.b.spans
    return request(spans, service="support-desk"), c
