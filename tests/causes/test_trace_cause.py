"""`GET /api/traces/{id}/cause` on a real collector (SPEC §17): each origin kind found on a trace
built to have it; propagation told apart from absorption (a retried or fallen-back error is not
the origin); the path, the affected agents, upstream and the waste exact; bad ids answered 4xx."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from cause_helpers import App, Collector

from reach_otel import semconv as sc


def cause(collector: Collector, trace_id: str) -> dict[str, Any]:
    r = collector.get(f"/api/traces/{trace_id}/cause")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["trace_id"] == trace_id
    return body


@pytest.fixture
def app(module_collector: Collector, apps: Callable[..., App]) -> App:
    return apps(module_collector.url)


def test_tool_error_origin_path_upstream_never_ran_and_waste(module_collector: Collector, app: App) -> None:
    root = app.root(0, 2000)
    triage = root.agent("Triage", 10, 1900, error="AgentError")
    triage.llm("Triage", "small", 20, (100, 10))  # before the origin: not waste
    triage.handoff("Triage", "Billing", 100, 5, status="committed")
    billing = triage.agent("Billing", 110, 1700, error="ToolFailed")
    billing.llm("Billing", "small", 120, (200, 20))  # before the origin: not waste
    tool = billing.tool(
        "Billing", "query_invoice", 300, 50, error="TimeoutError", message="invoice db timed out"
    )
    billing.llm("Billing", "large", 400, (1000, 100))  # after the origin began: waste
    # a handoff after the origin whose target never ran: the blast radius
    billing.handoff("Billing", "TechSupport", 500, 30)
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["failed"] is True
    assert body["origin"] == {
        "span_id": tool.span_id,
        "agent": "Billing",
        "kind": "tool_error",
        "name": "query_invoice",
        "error_type": "TimeoutError",
        "message": "invoice db timed out",
    }
    assert body["path"] == [root.span_id, triage.span_id, billing.span_id, tool.span_id]
    assert body["path_names"][-1] == sc.tool_span_name("query_invoice")
    assert body["upstream"] == ["Triage"]
    assert body["never_ran"] == ["TechSupport"]
    assert body["affected_agents"] == ["Billing", "TechSupport", "Triage"]
    wasted = body["wasted"]
    assert (wasted["input_tokens"], wasted["output_tokens"]) == (1000, 100)
    assert wasted["cost_usd"] == pytest.approx((1000 * 10 + 100 * 30) / 1e6)
    # from the origin's start (300 ms) to the root's end (2000 ms)
    assert wasted["duration_ms"] == pytest.approx(1700.0)


def test_llm_error(module_collector: Collector, app: App) -> None:
    root = app.root()
    agent = root.agent("Support", 10, 900, error="AgentError")
    agent.tool("Support", "lookup", 20, 10)
    chat = agent.llm("Support", "large", 50, (50, 0), error="RateLimitError", message="429 slow down")
    app.flush()
    origin = cause(module_collector, root.trace_id)["origin"]
    assert (origin["span_id"], origin["kind"], origin["name"], origin["agent"]) == (
        chat.span_id,
        "llm_error",
        "large",
        "Support",
    )
    assert (origin["error_type"], origin["message"]) == ("RateLimitError", "429 slow down")


def test_agent_error_with_no_failing_child(module_collector: Collector, app: App) -> None:
    root = app.root()
    agent = root.agent("Planner", 10, 900, error="ValueError")
    agent.llm("Planner", "small", 20, (10, 10))
    agent.tool("Planner", "search", 100)
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["origin"]["kind"] == "agent_error"
    assert (body["origin"]["span_id"], body["origin"]["name"]) == (agent.span_id, "Planner")
    assert body["path"] == [root.span_id, agent.span_id]


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        ("rejected", "handoff_rejected"),
        ("failed", "handoff_failed"),
        ("expired", "handoff_expired"),
        (None, "handoff_expired"),  # no outcome recorded, the target never ran: unknown (§11)
    ],
)
def test_handoff_outcomes(module_collector: Collector, app: App, status: str | None, kind: str) -> None:
    root = app.root()
    triage = root.agent("Triage", 10, 900, error="HandoffError")
    triage.llm("Triage", "small", 20, (10, 10))
    handoff = triage.handoff("Triage", "Billing", 100, 50, status=status)
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["origin"]["span_id"] == handoff.span_id
    assert (body["origin"]["kind"], body["origin"]["agent"], body["origin"]["name"]) == (
        kind,
        "Triage",
        "Billing",
    )
    assert body["never_ran"] == ["Billing"]
    assert body["affected_agents"] == ["Billing", "Triage"]


def test_a_committed_handoff_is_not_a_failure(module_collector: Collector, app: App) -> None:
    """The same trace with the handoff committed: the agent itself is the origin."""
    root = app.root()
    triage = root.agent("Triage", 10, 900, error="HandoffError")
    triage.handoff("Triage", "Billing", 100, 50, status="committed")
    app.flush()
    assert cause(module_collector, root.trace_id)["origin"]["kind"] == "agent_error"


def test_a_handoff_beside_its_failed_target_run_carries_the_chain_on(
    module_collector: Collector, app: App
) -> None:
    """A framework that records the handoff as a short span beside the target's run: its outcome,
    inferred from that run (ERROR → failed), is no origin; the failure went on into the run."""
    root = app.root(0, 2000)
    triage = root.agent("Triage", 10, 1900, error="AgentError")
    handoff = triage.handoff("Triage", "Billing", 20, 5)  # no recorded outcome; ends first
    billing = root.agent("Billing", 40, 900, error="ToolFailed")  # beside Triage, under the root
    tool = billing.tool("Billing", "query_invoice", 50, 30, error="TimeoutError")
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["origin"]["span_id"] == tool.span_id
    assert body["path"] == [root.span_id, billing.span_id, tool.span_id]
    assert body["upstream"] == ["Triage"]  # its target's next run is the origin's run
    # and when the run is under no failing span, the chain reaches it through the handoff
    root = app.root(0, 2000)
    triage = root.agent("Triage", 10, 1900, error="AgentError")
    handoff = triage.handoff("Triage", "Billing", 20, 5)
    ok = root.child("queue", 30, 1000, {})  # a plain span that did not fail
    billing = ok.agent("Billing", 40, 900, error="ToolFailed")
    tool = billing.tool("Billing", "query_invoice", 50, 30, error="TimeoutError")
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["path"] == [root.span_id, triage.span_id, handoff.span_id, billing.span_id, tool.span_id]
    assert body["origin"]["kind"] == "tool_error"


def test_loop_is_the_origin_whatever_lies_below(module_collector: Collector, app: App) -> None:
    root = app.root(0, 3000)
    a = root.agent("Researcher", 10, 2900, error="AgentError")
    h1 = a.handoff("Researcher", "Writer", 20, 2800)  # outcome inferred: Writer's run below failed
    w = h1.agent("Writer", 30, 2700, error="AgentError")
    loop = w.handoff("Writer", "Researcher", 40, 2600, loop=True, error="HandoffError")
    r2 = loop.agent("Researcher", 50, 2500, error="AgentError")
    # fails earliest, below the loop: would be the origin without the loop's precedence
    r2.tool("Researcher", "web_search", 60, 10, error="TimeoutError")
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["origin"]["span_id"] == loop.span_id
    assert (body["origin"]["kind"], body["origin"]["agent"], body["origin"]["name"]) == (
        "loop",
        "Writer",
        "Researcher",
    )
    assert body["path"] == [root.span_id, a.span_id, h1.span_id, w.span_id, loop.span_id]
    assert body["upstream"] == ["Researcher"]


def test_hop_limit(module_collector: Collector, app: App) -> None:
    root = app.root()
    a = root.agent("Router", 10, 900, error="HopLimitExceeded")
    a.tool("Router", "classify", 15, 10, error="ValueError")  # fails earlier, but the hop limit wins
    hop = a.handoff(
        "Router", "Escalation", 100, 5, status="rejected", hop_limit=True, error="HopLimitExceeded"
    )
    app.flush()
    origin = cause(module_collector, root.trace_id)["origin"]
    assert (origin["span_id"], origin["kind"], origin["name"]) == (hop.span_id, "hop_limit", "Escalation")
    assert origin["error_type"] == "HopLimitExceeded"


def test_a_retried_error_is_absorbed_not_the_origin(module_collector: Collector, app: App) -> None:
    """Billing's tool failed, was retried and Billing succeeded: its error never propagated. The
    trace failed later, at Triage's LLM call, which is the origin though it ended after."""
    root = app.root(0, 2000)
    triage = root.agent("Triage", 10, 1900, error="AgentError")
    billing = triage.agent("Billing", 20, 500)  # OK: it absorbed its tool's error
    billing.tool("Billing", "query_invoice", 30, 50, error="TimeoutError")
    billing.tool("Billing", "query_invoice", 100, 50)  # the retry
    billing.llm("Billing", "small", 200, (300, 30))
    chat = triage.llm("Triage", "large", 800, (40, 4), error="ContextWindowExceeded")
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["origin"]["span_id"] == chat.span_id
    assert body["origin"]["kind"] == "llm_error"
    assert body["path"] == [root.span_id, triage.span_id, chat.span_id]
    # the failed attempt's branch is waste; Billing's successful work before the origin is not
    assert (body["wasted"]["input_tokens"], body["wasted"]["output_tokens"]) == (40, 4)


def test_a_failed_attempt_retried_beside_it_is_absorbed(module_collector: Collector, app: App) -> None:
    """The agent's tool failed, was retried at once and answered; the agent failed later at its
    LLM call. The first attempt (a failing child of a failing agent, ending first) is no origin:
    a later sibling, the same tool, did not fail."""
    root = app.root(0, 2000)
    agent = root.agent("Billing", 10, 1900, error="AgentError")
    agent.tool("Billing", "query_invoice", 20, 30, error="TimeoutError")
    agent.tool("Billing", "query_invoice", 60, 30)
    chat = agent.llm("Billing", "large", 200, (10, 1), error="RateLimitError")
    app.flush()
    assert cause(module_collector, root.trace_id)["origin"]["span_id"] == chat.span_id
    # when every attempt failed, the first is where it began
    root = app.root(0, 2000)
    agent = root.agent("Billing", 10, 1900, error="AgentError")
    first = agent.tool("Billing", "query_invoice", 20, 30, error="TimeoutError")
    agent.tool("Billing", "query_invoice", 60, 30, error="TimeoutError")
    agent.llm("Billing", "large", 200, (10, 1), error="RateLimitError")
    app.flush()
    assert cause(module_collector, root.trace_id)["origin"]["span_id"] == first.span_id


def test_a_fallback_hides_a_failure(module_collector: Collector, app: App) -> None:
    """The primary model failed twice and a fallback answered (the router span is OK): those
    errors are no origin; the ticket tool that failed afterwards is. The waste counts the failed
    attempts' tokens (a branch that failed) and everything from the origin on."""
    root = app.root(0, 2000)
    support = root.agent("Support", 10, 1900, error="AgentError")
    router = support.child("llm_router", 20, 300, {})  # no GenAI operation; OK
    router.llm("Support", "large", 30, (500, 0), error="ServiceUnavailable")
    router.llm("Support", "large", 100, (500, 0), error="ServiceUnavailable")
    router.llm("Support", "small", 200, (600, 60))
    tool = support.tool("Support", "create_ticket", 600, 40, error="PermissionError")
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["origin"]["span_id"] == tool.span_id
    assert (body["origin"]["kind"], body["origin"]["name"]) == ("tool_error", "create_ticket")
    assert (body["wasted"]["input_tokens"], body["wasted"]["output_tokens"]) == (1000, 0)
    assert body["wasted"]["cost_usd"] == pytest.approx(1000 * 10 / 1e6)


def test_an_error_under_a_plain_span_takes_its_tools_kind(module_collector: Collector, app: App) -> None:
    """An HTTP span (no GenAI operation) failing inside a tool: the origin is that span, named and
    kinded by the tool it ran in, owned by the tool's agent."""
    root = app.root()
    agent = root.agent("Billing", 10, 900, error="AgentError")
    tool = agent.tool(None, "query_invoice", 20, 100, error="HTTPError")
    http = tool.child("GET /invoices", 30, 50, {}, error="ConnectTimeout", message="connect timed out")
    app.flush()
    origin = cause(module_collector, root.trace_id)["origin"]
    assert origin == {
        "span_id": http.span_id,
        "agent": "Billing",
        "kind": "tool_error",
        "name": "query_invoice",
        "error_type": "ConnectTimeout",
        "message": "connect timed out",
    }


def test_a_trace_that_did_not_fail(module_collector: Collector, app: App) -> None:
    root = app.root(error=None)
    agent = root.agent("Billing", 10, 900)
    agent.tool("Billing", "query_invoice", 20, 10, error="TimeoutError")  # absorbed
    app.flush()
    body = cause(module_collector, root.trace_id)
    assert body["failed"] is False
    assert (body["origin"], body["path"], body["affected_agents"]) == (None, [], [])
    assert body["wasted"]["input_tokens"] == 0


def test_unknown_and_malformed_trace_ids(module_collector: Collector) -> None:
    r = module_collector.get(f"/api/traces/{'ab' * 16}/cause")
    assert r.status_code == 404
    assert "not found" in r.json()["detail"]
    for bad in ("xyz", "0" * 32, "a" * 33):
        r = module_collector.get(f"/api/traces/{bad}/cause")
        assert r.status_code == 400, bad
        assert "malformed trace id" in r.json()["detail"]
