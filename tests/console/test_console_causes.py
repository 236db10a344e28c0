"""The console carries the cause (SPEC §17) on a real collector fed a corpus of known causes: a
failed trace's header names where its failure began and the waterfall marks that span and the path
to it; a trace that did not fail shows none; the Agents page's Causes panel ranks the known causes
with their exact shares (for the window, and for one agent); the Alerts page shows a firing alert's
cause sentence with its example traces as links, and that agent's causes; a cause built of hostile
names is shown as text."""

from __future__ import annotations

import time
from typing import Any

import pytest
from cause_traffic import BILLING, PRICES, SUPPORT, TIMEOUT_MESSAGE, TRIAGE, Corpus, cause_corpus
from cdp import Page
from console_helpers import Console, goto_ready
from test_console_security import PAYLOADS, assert_nothing_ran
from traffic import attributes, post, request

from reach_collector.config import from_mapping
from reach_otel import semconv as sc

RULES = {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3, "window": "10m"}}


@pytest.fixture(scope="module")
def fed(start_console: Any) -> tuple[Console, Corpus]:
    console = start_console(from_mapping({"prices": PRICES, "alerting": {"rules": RULES}}), alert_loop=False)
    body, corpus = cause_corpus(time.time_ns())
    post(console.url, body)
    return console, corpus


def cause_rows(page: Page, scope: str) -> list[dict[str, Any]]:
    return page.each(
        f"{scope} tr.cause-row",
        "({agent: el.dataset.agent, kind: el.dataset.kind, name: el.dataset.name,"
        " share: el.cells[0].innerText.trim(), traces: el.cells[1].innerText.trim(),"
        " error: el.cells[4].innerText.trim(), upstream: el.cells[5].innerText.trim(),"
        " affected: el.cells[6].innerText, wasted: el.cells[7].innerText,"
        " examples: [...el.querySelectorAll('a.trace-link')].map(a => a.dataset.traceId)})",
    )


def test_a_failed_traces_header_names_its_origin_and_marks_its_path(fed, page: Page) -> None:
    console, corpus = fed
    trace = corpus.tool_errors[0]
    cause = console.api(f"/api/traces/{trace}/cause")
    assert cause["origin"]["span_id"] == corpus.origins[trace] and cause["path"] == corpus.paths[trace]

    goto_ready(page, f"{console.url}/ui/trace/{trace}")
    line = page.text("#cause")
    for shown in ("tool error", "query_invoice", BILLING, "TimeoutError", TIMEOUT_MESSAGE):
        assert shown in line, (shown, line)
    assert f"{SUPPORT} never ran" in line
    wasted = cause["wasted"]
    assert (wasted["input_tokens"], wasted["output_tokens"]) == (1800, 240)  # Billing's call after it
    assert "wasted 2,040 tokens · $0.00900 · " in line  # 1,800 → 240 at 3 and 15 USD per 1M tokens
    assert page.js("document.getElementById('cause').dataset.origin") == corpus.origins[trace]

    # The origin is badged and, with no span asked for, selected; the path is marked, root first.
    assert page.each(".wf-row.origin", "el.dataset.spanId") == [corpus.origins[trace]]
    assert page.text(".wf-row.origin .badge.origin") == "✗ origin"
    assert page.each(".wf-row.on-path", "el.dataset.spanId") == corpus.paths[trace]
    assert page.js("document.getElementById('details').dataset.spanId") == corpus.origins[trace]
    assert "failure began at this span" in page.text("#details-card")
    assert "failure path" in page.text("#legend")

    # Another span chosen, a click on the cause line selects the origin again.
    root = corpus.paths[trace][0]
    page.js(f"document.querySelector('.wf-row[data-span-id=\"{root}\"]').click()")
    page.wait_for(f"document.getElementById('details')?.dataset.spanId === '{root}'")
    assert "failure began" not in page.text("#details-card")
    page.click("#cause")
    page.wait_for(f"document.getElementById('details')?.dataset.spanId === '{corpus.origins[trace]}'")
    assert page.js("new URLSearchParams(location.search).get('span')") == corpus.origins[trace]

    # A rejected handoff: its target, and the agent that never ran.
    rejected = corpus.rejected[0]
    goto_ready(page, f"{console.url}/ui/trace/{rejected}")
    line = page.text("#cause")
    assert "handoff rejected" in line and f"→ {BILLING}" in line and TRIAGE in line
    assert "HandoffRejected" in line and f"{BILLING} never ran" in line
    assert page.each(".wf-row.origin", "el.dataset.spanId") == [corpus.origins[rejected]]
    assert page.each(".wf-row.on-path", "el.dataset.spanId") == corpus.paths[rejected]
    assert page.events.errors == []


def test_a_trace_that_did_not_fail_shows_no_cause(fed, page: Page) -> None:
    console, corpus = fed
    (ok,) = corpus.ok
    assert console.api(f"/api/traces/{ok}/cause")["failed"] is False
    goto_ready(page, f"{console.url}/ui/trace/{ok}")
    # The page asked for the cause, and the answer (no failure) shows nothing.
    assert any(u.endswith(f"/api/traces/{ok}/cause") for u in page.events.requests)
    assert page.js("document.querySelectorAll('.wf-row').length") == 7
    assert page.js("document.querySelectorAll('.wf-row.error').length") == 1  # the retried call
    assert (
        page.js("document.querySelectorAll('#cause, .cause-line, .wf-row.on-path, .wf-row.origin').length")
        == 0
    )
    assert "failure path" not in page.text("#legend") and "failure began" not in page.text("main")
    # With no failure, the root is the span shown first.
    assert page.js("document.querySelector('.wf-row.selected').dataset.spanId") == page.js(
        "document.querySelector('.wf-row').dataset.spanId"
    )
    assert page.events.errors == []


def test_agents_page_ranks_the_known_causes_with_their_shares(fed, page: Page) -> None:
    console, corpus = fed
    goto_ready(page, f"{console.url}/ui/agents?window=15m")
    assert page.text("#causes h2") == "Causes of failed traces — last 15m"
    assert page.text("#causes .causes-summary").startswith("5 failed traces")
    rows = cause_rows(page, "#causes")
    assert [(r["agent"], r["kind"], r["name"], r["share"], r["traces"], r["error"]) for r in rows] == [
        (BILLING, "tool_error", "query_invoice", "60%", "3", "TimeoutError"),
        (TRIAGE, "handoff_rejected", BILLING, "40%", "2", "HandoffRejected"),
    ]
    first, second = rows
    assert first["upstream"] == TRIAGE and second["upstream"] == "–"
    assert f"{SUPPORT} never ran in 2\u00a0traces" in first["affected"]
    assert f"{BILLING} never ran in 2\u00a0traces" in second["affected"]
    assert first["wasted"].startswith("$0.03")  # 3 × (1,800 → 240 tokens)
    assert set(first["examples"]) == set(corpus.tool_errors)
    assert set(second["examples"]) == set(corpus.rejected)
    api = console.api("/api/causes", window="15m")["causes"]
    assert [c["share"] for c in api] == [0.6, 0.4]

    # An example trace opens on its cause.
    page.click(f"#causes a.trace-link[data-trace-id='{corpus.tool_errors[0]}']")
    page.wait_for(f"document.body.dataset.ready === '/ui/trace/{corpus.tool_errors[0]}'")
    assert page.js("document.getElementById('cause').dataset.origin") == corpus.origins[corpus.tool_errors[0]]

    # Narrowed to one agent (picked from the list): the causes of the traces that failed through it.
    goto_ready(page, f"{console.url}/ui/agents?window=15m")
    assert page.each("#agent option", "el.value") == ["", BILLING, TRIAGE]
    page.js(
        f"const s = document.getElementById('agent'); s.value = '{BILLING}';"
        " s.dispatchEvent(new Event('change')); 0"
    )
    page.wait_for(
        f"document.body.dataset.ready === '/ui/agents' && location.search.includes('agent={BILLING}')"
    )
    assert page.text("#causes h2") == f"Causes of {BILLING}'s failed traces — last 15m"
    rows = cause_rows(page, "#causes")
    assert [(r["agent"], r["kind"], r["share"], r["traces"]) for r in rows] == [
        (BILLING, "tool_error", "100%", "3")
    ]
    assert page.each("#golden tbody tr", "el.dataset.agent") == [BILLING]
    assert page.events.errors == []


def test_alerts_page_shows_a_firing_alerts_cause_and_its_traces(fed, page: Page) -> None:
    console, corpus = fed
    console.app.state.alerts.tick(time.time())
    firing = {a["labels"]["agent"]: a for a in console.api("/api/alerts", state="firing")["alerts"]}
    alert = firing[BILLING]
    sentence = alert["annotations"]["cause"]
    assert sentence.startswith(f"100 % of {BILLING}'s failures start at tool query_invoice (TimeoutError)")
    assert f"{SUPPORT} never ran in 2 traces" in sentence
    traces = alert["annotations"]["cause_traces"].split(",")
    assert set(traces) == set(corpus.tool_errors)

    goto_ready(page, f"{console.url}/ui/alerts")
    row = f"#alerts tr[data-fingerprint='{alert['fingerprint']}']"
    assert page.text(f"{row} .alert-cause .cause-text") == f"Cause: {sentence}"
    assert page.each(f"{row} .alert-cause a.trace-link", "el.dataset.traceId") == traces
    assert page.each(f"{row} .alert-cause a.trace-link", "el.getAttribute('href')") == [
        f"/ui/trace/{t}" for t in traces
    ]
    # Each firing alert's agent has its causes over the page's window (15 minutes by default).
    assert set(page.each("#alert-causes .causes-card", "el.dataset.agent")) == {BILLING, TRIAGE}
    panel = f"#alert-causes .causes-card[data-agent='{BILLING}']"
    assert page.text(f"{panel} h2") == f"Causes of {BILLING}'s failed traces — last 15m"
    rows = cause_rows(page, panel)
    assert [(r["agent"], r["kind"], r["name"], r["share"]) for r in rows] == [
        (BILLING, "tool_error", "query_invoice", "100%")
    ]
    triage = cause_rows(page, f"#alert-causes .causes-card[data-agent='{TRIAGE}']")
    assert [(r["kind"], r["share"]) for r in triage] == [("tool_error", "60%"), ("handoff_rejected", "40%")]

    # The window is the page's: an hour asks the API for an hour.
    page.js(
        "const s = document.getElementById('window'); s.value = '1h'; s.dispatchEvent(new Event('change')); 0"
    )
    page.wait_for("document.body.dataset.ready === '/ui/alerts' && location.search.includes('window=1h')")
    assert page.text(f"{panel} h2").endswith("— last 1h")
    assert any("/api/causes?window=1h&agent=" in u for u in page.events.requests)

    # A link opens the trace on its cause.
    page.click(f"{row} .alert-cause a.trace-link")
    page.wait_for(f"document.body.dataset.ready === '/ui/trace/{traces[0]}'")
    assert "query_invoice" in page.text("#cause")
    assert page.events.errors == []


def hostile_failure(now_ns: int) -> tuple[dict[str, Any], str]:
    """A failed trace whose agent, tool, error type and message are markup."""
    trace = "c0ffee" + "ab" * 13
    ms = 1_000_000

    def span(
        n: int, parent: int | None, name: str, attrs: dict[str, Any], error: str | None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "traceId": trace,
            "spanId": f"{n:016x}",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(now_ns + n * ms),
            "endTimeUnixNano": str(now_ns + (40 - n) * ms),
            "attributes": attributes({**attrs, **({sc.ERROR_TYPE: PAYLOADS[3]} if error else {})}),
            "status": {"code": 2, "message": error} if error else {"code": 1},
        }
        if parent is not None:
            out["parentSpanId"] = f"{parent:016x}"
        return out

    agent = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: PAYLOADS[2]}
    tool = {sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL, sc.GEN_AI_TOOL_NAME: PAYLOADS[0]}
    spans = [
        span(1, None, "root", {}, "failed"),
        span(2, 1, f"invoke_agent {PAYLOADS[2]}", agent, "failed"),
        span(3, 2, f"execute_tool {PAYLOADS[0]}", {**tool, sc.REACH_AGENT_NAME: PAYLOADS[2]}, PAYLOADS[1]),
    ]
    return request(spans, service="hostile"), trace


def test_a_cause_of_hostile_names_is_text(start_console: Any, page: Page) -> None:
    console = start_console()
    body, trace = hostile_failure(time.time_ns() - 30 * 1_000_000_000)
    post(console.url, body)
    assert console.api(f"/api/traces/{trace}/cause")["origin"]["name"] == PAYLOADS[0]
    goto_ready(page, f"{console.url}/ui/trace/{trace}")
    assert_nothing_ran(page)
    line = page.text("#cause")
    for shown in (PAYLOADS[0], PAYLOADS[2], PAYLOADS[3]):
        assert shown in line, shown
    assert PAYLOADS[1] in page.js("document.querySelector('#cause .cause-message').textContent")
    goto_ready(page, f"{console.url}/ui/agents?window=15m")
    assert_nothing_ran(page)
    assert PAYLOADS[0] in page.text("#causes")
    assert PAYLOADS[3] in page.text("#causes")
    assert page.events.errors == []
