"""A seeded fault-injection corpus of multi-agent traces (store.schema span rows) for the diagnosis
benchmark, each failed trace with the truth of where its failure began.

A request runs a chain of one to four agents, each handing off to the next (the target's run
nested under the handoff, or — as frameworks that record the handoff as a short span do — beside
it); one agent of the chain has the fault: a tool or LLM call that fails, the agent itself, a
handoff rejected, failed or expired, a handoff loop (the looping agent then fails below it) or the
hop limit. The failure propagates up to the root. Red herrings on top: a tool call that fails and
is retried successfully, a model that fails twice behind a fallback that answers, a helper agent
consulted for a second opinion that fails (three ERROR spans of its own) and is not needed, and
slow calls that succeed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Final

from reach_collector.query import cause
from reach_collector.store import schema
from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

MS: Final = 1_000_000
# The kinds SPEC §17 names (every one the diagnosis knows but span_error, a span outside GenAI).
KINDS: Final = tuple(k for k in cause.KINDS if k != "span_error")
AGENTS: Final = tuple(f"Agent{c}" for c in "ABCDEFGH")
TOOLS: Final = ("query_invoice", "search_kb", "issue_refund", "lookup_account")
MODELS: Final = ("small", "large")
_STATUS: Final = {"handoff_rejected": hf.REJECTED, "handoff_failed": hf.FAILED, "handoff_expired": hf.EXPIRED}


@dataclass(frozen=True)
class Fault:
    agent: str
    kind: str
    name: str  # the tool, model or handoff target


@dataclass
class Trace:
    trace_id: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    fault: Fault | None = None
    origin: str | None = None  # the injected span


class _Builder:
    def __init__(self, rng: random.Random, trace_id: str, start_ns: int) -> None:
        self.rng, self.trace = rng, Trace(trace_id)
        self.start_ns = start_ns
        self.t = 0.0  # ms since start: spans are laid out one after another

    def span(
        self, parent: str | None, op: str | None, name: str, dur_ms: float, **cols: Any
    ) -> dict[str, Any]:
        row: dict[str, Any] = dict.fromkeys(schema.SPAN_NAMES)
        start = self.start_ns + int(self.t * MS)
        error = cols.pop("error", None)
        attrs = cols.pop("attrs", {})
        if op is not None:
            attrs[sc.GEN_AI_OPERATION_NAME] = op
        row.update(
            trace_id=self.trace.trace_id,
            span_id=f"{self.rng.getrandbits(64):016x}",
            parent_span_id=parent,
            name=name,
            kind=1,
            start_ns=start,
            end_ns=start + int(dur_ms * MS),
            duration_ms=dur_ms,
            status_code=2 if error else 0,
            status_message=f"{error} raised" if error else "",
            error_type=error,
            service="support-app",
            operation=op,
            flags=1,
            attributes=json.dumps(attrs),
            resource=json.dumps({sc.SERVICE_NAME: "support-app"}),
            **cols,
        )
        self.trace.rows.append(row)
        self.t += 1
        return row

    def close(self, row: dict[str, Any], error: str | None = None) -> None:
        """End ``row`` now (after its children), ERROR with ``error`` when given."""
        row["end_ns"] = self.start_ns + int(self.t * MS)
        row["duration_ms"] = (row["end_ns"] - row["start_ns"]) / MS
        if error:
            row.update(status_code=2, status_message=f"{error} raised", error_type=error)
        self.t += 1

    def llm(
        self, parent: str, agent: str, model: str, error: str | None = None, slow: bool = False
    ) -> dict[str, Any]:
        self.t += 5
        return self.span(parent, sc.OP_CHAT, f"chat {model}", 800 if slow else 40, agent=agent, model=model,
                         input_tokens=400, output_tokens=60, error=error)  # fmt: skip

    def tool(self, parent: str, agent: str, tool: str, error: str | None = None) -> dict[str, Any]:
        self.t += 5
        return self.span(parent, sc.OP_TOOL, f"execute_tool {tool}", 20, agent=agent, tool=tool, error=error)

    def handoff(
        self, parent: str, source: str, target: str, status: str | None, **cols: Any
    ) -> dict[str, Any]:
        attrs = cols.pop("attrs", {})
        if status is not None:
            attrs[sc.REACH_HANDOFF_TRANSITIONS] = 2
        return self.span(parent, sc.OP_HANDOFF, f"handoff {target}", 5, agent=source, handoff_source=source,
                         handoff_target=target, handoff_status=status, handoff_mode="delegate",
                         attrs=attrs, **cols)  # fmt: skip


def build(rng: random.Random, trace_id: str, start_ns: int, fault: Fault | None) -> Trace:
    """One request; ``fault`` (its agent must be the chain's ``AGENTS`` member at the fault) or none."""
    b = _Builder(rng, trace_id, start_ns)
    root = b.span(None, sc.OP_WORKFLOW, "invoke_workflow turn", 0)
    chain = [a for a in rng.sample(AGENTS, rng.randint(1, 4)) if fault is None or a != fault.agent]
    if fault is not None:
        chain.insert(rng.randrange(len(chain) + 1) if chain else 0, fault.agent)
        chain = chain[: chain.index(fault.agent) + 1]  # the fault's agent is the last to run
    failed = _run(b, root["span_id"], chain, 0, fault)
    b.close(root, "AgentError" if failed else None)
    b.trace.fault = fault
    return b.trace


def _run(b: _Builder, parent: str, chain: list[str], i: int, fault: Fault | None) -> bool:
    """Run ``chain[i]`` under ``parent``; whether it failed."""
    rng, agent = b.rng, chain[i]
    run = b.span(parent, sc.OP_AGENT, f"invoke_agent {agent}", 0, agent=agent)
    me = run["span_id"]
    b.llm(me, agent, rng.choice(MODELS), slow=rng.random() < 0.2)
    if rng.random() < 0.3:  # a tool call that fails, retried successfully
        tool = rng.choice(TOOLS)
        b.tool(me, agent, tool, error="TimeoutError")
        b.tool(me, agent, tool)
    if rng.random() < 0.3:  # a model failing behind a fallback that answers
        router = b.span(me, None, "llm_router", 0)
        b.llm(router["span_id"], agent, "large", error="ServiceUnavailable")
        b.llm(router["span_id"], agent, "large", error="ServiceUnavailable")
        b.llm(router["span_id"], agent, "small")
        b.close(router)
    if rng.random() < 0.25:  # a helper consulted for a second opinion, failing, its answer not needed
        helper = rng.choice([a for a in AGENTS if a not in chain])
        consult = b.span(me, None, "second_opinion", 0)
        side = b.span(consult["span_id"], sc.OP_AGENT, f"invoke_agent {helper}", 0, agent=helper)
        for _ in range(3):
            b.tool(side["span_id"], helper, rng.choice(TOOLS), error="KeyError")
        b.close(side, "KeyError")
        b.close(consult)
    failed = False
    if fault is not None and i == len(chain) - 1:
        failed = _inject(b, me, agent, fault)
    elif i + 1 < len(chain):
        target = chain[i + 1]
        if rng.random() < 0.5:  # the target's run nested under the handoff
            h = b.handoff(me, agent, target, None)
            failed = _run(b, h["span_id"], chain, i + 1, fault)
            b.close(h, "HandoffFailed" if failed else None)
            h["handoff_status"] = "failed" if failed else "committed"
            h["attributes"] = json.dumps(
                {sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF, sc.REACH_HANDOFF_TRANSITIONS: 3}
            )
        else:  # a short handoff span beside the run, its outcome left to the run (§11)
            h = b.handoff(me, agent, target, None)
            b.close(h)
            failed = _run(b, me, chain, i + 1, fault)
    if not failed:  # a failure ends the run: its exception goes up
        b.tool(me, agent, rng.choice(TOOLS))
    b.close(run, "AgentError" if failed else None)
    return failed


def _inject(b: _Builder, me: str, agent: str, fault: Fault) -> bool:
    """The fault, in ``agent``'s run ``me``; records the injected span."""
    kind, name = fault.kind, fault.name
    if kind == "tool_error":
        row = b.tool(me, agent, name, error="TimeoutError")
    elif kind == "llm_error":
        row = b.llm(me, agent, name, error="RateLimitError")
    elif kind == "agent_error":
        b.tool(me, agent, b.rng.choice(TOOLS))
        b.trace.origin = me
        return True
    elif kind in _STATUS:
        row = b.handoff(me, agent, name, _STATUS[kind])
        b.close(row)
    elif kind == "loop":
        row = b.handoff(me, agent, name, None, loop_detected=True)
        below = b.span(row["span_id"], sc.OP_AGENT, f"invoke_agent {name}", 0, agent=name)
        b.tool(below["span_id"], name, "search_kb", error="RecursionError")  # fails first, below the loop
        b.close(below, "RecursionError")
        b.close(row, "LoopDetected")
    else:  # hop_limit
        event = {
            "name": sc.EVENT_HOP_LIMIT_EXCEEDED,
            "time_unix_nano": 0,
            "attributes": {sc.REACH_HOP_COUNT: 9},
        }
        row = b.handoff(me, agent, name, hf.REJECTED, events=json.dumps([event]), error="HopLimitExceeded")
    b.trace.origin = row["span_id"]
    return True


def fault_name(rng: random.Random, kind: str, agent: str) -> str:
    """A name for a fault of ``kind``: a tool, a model, or a handoff target other than ``agent``."""
    if kind == "tool_error":
        return rng.choice(TOOLS)
    if kind == "llm_error":
        return rng.choice(MODELS)
    if kind == "agent_error":
        return agent
    return rng.choice([a for a in AGENTS if a != agent])


def random_fault(rng: random.Random) -> Fault:
    agent, kind = rng.choice(AGENTS), rng.choice(KINDS)
    return Fault(agent, kind, fault_name(rng, kind, agent))


def baseline(rows: list[dict[str, Any]], top: int = 3) -> list[str]:
    """The agents with the most ERROR spans (the span's agent; then the earliest error first)."""
    count: dict[str, list[int]] = {}
    for r in rows:
        if r["status_code"] == 2 and r["agent"]:
            c = count.setdefault(r["agent"], [0, r["end_ns"]])
            c[0] += 1
            c[1] = min(c[1], r["end_ns"])
    return [a for a, _ in sorted(count.items(), key=lambda kv: (-kv[1][0], kv[1][1]))][:top]
