"""`GET /api/causes` on a real collector holding a known corpus (SPEC §17): the ranking, shares,
upstream, affected agents, never-ran counts, waste and examples exact; ``agent=`` keeps the failed
traces whose path has the agent; ``service=``; the cap says it sampled; bad input is a 400 naming
the parameter."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
from cause_helpers import PRICES, App, Collector
from corpus import send_corpus

from reach_collector.query.causes import window_causes
from reach_collector.query.pricing import PriceTable

_LARGE = (1000 * 10 + 100 * 30) / 1e6  # a Billing trace's waste: its LLM call after the tool failed


def test_ranking_and_shares_are_exact(
    start_collector: Callable[[], Collector], apps: Callable[..., App]
) -> None:
    collector = start_collector()
    corpus = send_corpus(collector, apps)
    r = collector.get("/api/causes", window="15m")
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["window_s"], body["failed_traces"], body["sampled"]) == (900, 6, False)
    causes = body["causes"]
    assert [(c["agent"], c["kind"], c["name"], c["error_type"], c["traces"]) for c in causes] == [
        ("Billing", "tool_error", "query_invoice", "TimeoutError", 3),
        ("Triage", "handoff_rejected", "Billing", None, 2),
        ("Support", "llm_error", "large", "RateLimitError", 1),
    ]
    assert [c["share"] for c in causes] == [3 / 6, 2 / 6, 1 / 6]
    billing, rejected, llm = causes
    assert billing["upstream"] == ["Triage"]
    assert billing["affected_agents"] == ["Billing", "TechSupport", "Triage"]
    assert billing["never_ran"] == [{"agent": "TechSupport", "traces": 2}]
    assert billing["wasted_cost_usd"] == pytest.approx(3 * _LARGE)
    assert billing["example_trace_ids"] == corpus.tool_errors
    assert rejected["affected_agents"] == ["Billing", "Triage"]
    assert rejected["never_ran"] == [{"agent": "Billing", "traces": 2}]
    assert rejected["example_trace_ids"] == corpus.rejected
    assert llm["example_trace_ids"] == corpus.llm_errors
    every = {t for c in causes for t in c["example_trace_ids"]}
    assert not every & set(corpus.ok + corpus.old)  # handled errors and old failures left out
    assert body["summary"] == (
        "50 % of failed traces start at tool query_invoice (TimeoutError) in Billing; "
        f"TechSupport never ran in 2 traces; ${3 * _LARGE:.2f} wasted"
    )
    # a longer window takes the older failure in
    older = collector.get("/api/causes", window="1h").json()
    assert older["failed_traces"] == 7
    assert ("Legacy", "agent_error", 1) in [(c["agent"], c["kind"], c["traces"]) for c in older["causes"]]


def test_agent_and_service_filters(
    start_collector: Callable[[], Collector], apps: Callable[..., App]
) -> None:
    collector = start_collector()
    corpus = send_corpus(collector, apps)
    billing = collector.get("/api/causes", window="15m", agent="Billing").json()
    # Billing is on the path of its own tool failures only (the rejected handoffs never reached it)
    assert (billing["agent"], billing["failed_traces"]) == ("Billing", 3)
    assert [(c["kind"], c["traces"], c["share"]) for c in billing["causes"]] == [("tool_error", 3, 1.0)]
    assert billing["summary"].startswith(
        "100 % of Billing's failures start at tool query_invoice (TimeoutError);"
    )
    triage = collector.get("/api/causes", window="15m", agent="Triage").json()
    assert triage["failed_traces"] == 5
    assert [c["traces"] for c in triage["causes"]] == [3, 2]
    chat = collector.get("/api/causes", window="15m", service="chat-app").json()
    assert [(c["agent"], c["example_trace_ids"]) for c in chat["causes"]] == [("Support", corpus.llm_errors)]
    nobody = collector.get("/api/causes", window="15m", agent="Nobody").json()
    assert (nobody["failed_traces"], nobody["causes"], nobody["summary"]) == (0, [], None)


def test_the_cap_samples_the_newest(
    start_collector: Callable[[], Collector], apps: Callable[..., App]
) -> None:
    collector = start_collector()
    corpus = send_corpus(collector, apps)
    body = window_causes(collector.store, time.time_ns(), 900, PriceTable(PRICES), max_traces=2)
    assert (body["sampled"], body["failed_traces"]) == (True, 2)
    newest = corpus.llm_errors + corpus.rejected[:1]
    assert sorted(t for c in body["causes"] for t in c["example_trace_ids"]) == sorted(newest)


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"window": "8d"}, "window must be at most 7d"),
        ({"window": "soon"}, "window must be a whole number"),
        ({"window": "0m"}, "window must be at least 1s"),
        ({"agent": ""}, "agent must be 1 to 256 characters"),
        ({"agent": "a" * 257}, "agent must be 1 to 256 characters"),
        ({"service": ""}, "service must be 1 to 256 characters"),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(
    module_collector: Collector, params: dict[str, str], says: str
) -> None:
    r = module_collector.get("/api/causes", **params)
    assert r.status_code == 400, r.text
    assert says in r.json()["detail"]


def test_the_query_token_guards_both_routes(start_collector: Callable[..., Collector]) -> None:
    """§11: every /api/* route but ingest's needs the query token; the ingest token is refused."""
    collector = start_collector(query_token="q-secret", ingest_token="i-secret")
    for path in ("/api/causes", f"/api/traces/{'ab' * 16}/cause"):
        assert httpx.get(collector.url + path, timeout=10).status_code == 401
        wrong = httpx.get(collector.url + path, headers={"authorization": "Bearer i-secret"}, timeout=10)
        assert wrong.status_code == 403
        right = httpx.get(collector.url + path, headers={"authorization": "Bearer q-secret"}, timeout=10)
        assert right.status_code == (200 if path == "/api/causes" else 404)
