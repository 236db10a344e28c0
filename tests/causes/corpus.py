"""A known corpus for the window tests: failed traces of three causes in known numbers, a trace
whose error was absorbed, and a failed trace from before the window."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cause_helpers import App, Collector

S = 1_000_000_000


@dataclass
class Corpus:
    tool_errors: list[str] = field(default_factory=list)  # newest first
    rejected: list[str] = field(default_factory=list)
    llm_errors: list[str] = field(default_factory=list)
    ok: list[str] = field(default_factory=list)
    old: list[str] = field(default_factory=list)


def send_corpus(collector: Collector, apps: Callable[..., App]) -> Corpus:
    """In the last 15 minutes: 3 traces failing at Billing's tool query_invoice (TimeoutError), after
    Triage handed off to it (2 of them then hand off to TechSupport, which never runs); 2 failing at
    Triage's handoff to Billing, rejected; 1 failing at Support's LLM call (service chat-app); 1
    that did not fail. Half an hour ago: 1 failed trace of another cause."""
    now = time.time_ns()
    app = apps(collector.url, base_ns=now - 10 * 60 * S)
    chat = apps(collector.url, service="chat-app", base_ns=now - 10 * 60 * S)
    old = apps(collector.url, base_ns=now - 40 * 60 * S)
    c = Corpus()
    for i in range(3):
        at = 10_000 * i
        root = app.root(at, 2000)
        triage = root.agent("Triage", at + 10, 1900, error="AgentError")
        triage.handoff("Triage", "Billing", at + 20, 5, status="committed")
        billing = triage.agent("Billing", at + 30, 1800, error="ToolFailed")
        billing.tool("Billing", "query_invoice", at + 100, 50, error="TimeoutError")
        billing.llm("Billing", "large", at + 200, (1000, 100))
        if i < 2:
            billing.handoff("Billing", "TechSupport", at + 300, 10)
        c.tool_errors.insert(0, root.trace_id)
    for i in range(2):
        at = 40_000 + 10_000 * i
        root = app.root(at, 1000)
        triage = root.agent("Triage", at + 10, 900, error="HandoffRejected")
        triage.llm("Triage", "small", at + 20, (100, 10))
        triage.handoff("Triage", "Billing", at + 100, 20, status="rejected")
        c.rejected.insert(0, root.trace_id)
    root = chat.root(70_000, 1000)
    support = root.agent("Support", 70_010, 900, error="AgentError")
    support.llm("Support", "large", 70_020, (10, 0), error="RateLimitError")
    c.llm_errors.append(root.trace_id)
    root = app.root(80_000, 1000, error=None)
    fine = root.agent("Billing", 80_010, 900)
    fine.tool("Billing", "query_invoice", 80_020, 10, error="TimeoutError")  # retried: absorbed
    fine.tool("Billing", "query_invoice", 80_040, 10)
    c.ok.append(root.trace_id)
    root = old.root(0, 1000)
    root.agent("Legacy", 10, 900, error="AgentError")
    c.old.append(root.trace_id)
    for a in (app, chat, old):
        a.flush()
    return c
