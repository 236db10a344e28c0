"""Outcomes in the console (SPEC §18): evaluations as verdict badges on their spans, listed in the
span's details and totalled in the trace's header; the Agents page's Quality panel on a known set
of evaluations; the Conversations page and one conversation's turns in start order; evaluation
text planted with markup shown as text."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest
from cdp import Page
from console_helpers import Console, goto_ready
from test_console_security import PAYLOADS, assert_nothing_ran
from traffic import attributes, post, request

from reach_collector.config import Settings
from reach_otel import semconv as sc

MS = 1_000_000
CONV_A = "desk chat #7"  # a space and a '#': the id is escaped in the console's links
CONV_B = "S-99"
# Three turns of CONV_A, posted out of order; one turn of CONV_B.
T1, T2, T3, T4 = (f"{n:032x}" for n in (0xE1A1, 0xE1A2, 0xE1A3, 0xE1A4))
BILLING_1 = "b000000000000001"  # two evaluations: one good (label), one bad (score only)
BILLING_2 = "b000000000000002"  # one bad (label)
TRIAGE_3 = "b000000000000003"  # one good ("pass")
HOSTILE_TRACE = f"{0xE1AF:032x}"
HOSTILE_SPAN = "b00000000000000f"
HOSTILE_CONV = PAYLOADS[0]


def turn(
    trace_id: str, conversation: str, start_ns: int, agent: str, agent_span: str
) -> list[dict[str, Any]]:
    """One request of a conversation: a workflow root and one agent run under it."""
    root = f"{int(agent_span, 16) + 0x100:016x}"
    common = {sc.GEN_AI_CONVERSATION_ID: conversation}
    return [
        {
            "traceId": trace_id,
            "spanId": root,
            "name": "invoke_workflow support_turn",
            "kind": 1,
            "startTimeUnixNano": str(start_ns),
            "endTimeUnixNano": str(start_ns + 50 * MS),
            "attributes": attributes({sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW, **common}),
            "status": {"code": 1},
        },
        {
            "traceId": trace_id,
            "spanId": agent_span,
            "parentSpanId": root,
            "name": f"invoke_agent {agent}",
            "kind": 1,
            "startTimeUnixNano": str(start_ns + 5 * MS),
            "endTimeUnixNano": str(start_ns + 40 * MS),
            "attributes": attributes(
                {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: agent, **common}
            ),
            "status": {"code": 1},
        },
    ]


def feedback(url: str, **body: Any) -> None:
    response = httpx.post(url + "/api/feedback", json=body, timeout=30)
    assert response.status_code == 202, response.text


def wait_for_evaluations(console: Console, count: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        groups = console.api("/api/metrics/quality", window="1h", by="evaluation")["groups"]
        if sum(g["evaluations"] for g in groups) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"fewer than {count} evaluations stored")


@pytest.fixture(scope="module")
def judged(start_console: Any) -> Console:
    console = start_console()
    t0 = time.time_ns() - 120 * 1_000_000_000
    second = 1_000_000_000
    spans = [
        *turn(T3, CONV_A, t0 + 20 * second, "TriageAgent", TRIAGE_3),
        *turn(T1, CONV_A, t0, "BillingAgent", BILLING_1),
        *turn(T4, CONV_B, t0 + 5 * second, "TriageAgent", "b000000000000004"),
        *turn(T2, CONV_A, t0 + 10 * second, "BillingAgent", BILLING_2),
    ]
    post(console.url, request(spans))
    feedback(
        console.url,
        trace_id=T1,
        span_id=BILLING_1,
        name="correctness",
        score=1,
        label="correct",
        comment="matches the invoice",
    )
    feedback(console.url, trace_id=T1, span_id=BILLING_1, name="helpfulness", score=0.25)
    feedback(
        console.url,
        trace_id=T2,
        span_id=BILLING_2,
        name="correctness",
        score=0,
        label="incorrect",
        comment="the refund amount is wrong",
    )
    feedback(console.url, trace_id=T3, span_id=TRIAGE_3, name="correctness", score=0.8, label="pass")
    wait_for_evaluations(console, 4)
    return console


def open_span(page: Page, span_id: str) -> None:
    page.js(f"document.querySelector('.wf-row[data-span-id=\"{span_id}\"]').click()")
    page.wait_for(f"document.getElementById('details')?.dataset.spanId === '{span_id}'")


def badges(page: Page) -> dict[str, list[tuple[str, str]]]:
    """span id → the (verdict, text) of each evaluation badge on its row."""
    rows = page.each(
        ".wf-row",
        "[el.dataset.spanId,"
        " [...el.querySelectorAll('.badge.eval')].map(b => [b.dataset.verdict, b.textContent])]",
    )
    return {sid: [tuple(b) for b in found] for sid, found in rows}


def test_evaluated_spans_carry_verdict_badges_details_and_totals(judged: Console, page: Page) -> None:
    goto_ready(page, judged.url + f"/ui/trace/{T1}")
    page.wait_for("document.body.dataset.traceReady === '2'")
    shown = badges(page)
    # Two evaluations on one span: a count, bad because one is (a score of 0.25 with no label).
    assert shown[BILLING_1] == [("bad", "✓1 ✗1")]
    assert [b for sid, b in shown.items() if sid != BILLING_1] == [[]]
    total = page.js("Object.assign({}, document.getElementById('evaluations-total').dataset)")
    assert total == {"good": "1", "bad": "1", "total": "2"}
    assert page.text("#evaluations-total").startswith("✓ 1 ✗ 1")

    open_span(page, BILLING_1)
    items = page.each("#evaluations li", "[el.dataset.verdict, el.textContent]")
    assert [v for v, _ in items] == ["good", "bad"]
    correct, helpful = (text for _, text in items)
    for part in ("correctness", "correct", "score 1", "matches the invoice", "✓ good"):
        assert part in correct, part
    for part in ("helpfulness", "score 0.25", "✗ bad"):
        assert part in helpful, part
    stamp = page.text("#evaluations .evaluation-time")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", stamp), stamp
    # A span with no evaluation lists none.
    root = next(sid for sid in shown if sid != BILLING_1)
    open_span(page, root)
    assert page.js("document.getElementById('evaluations')") is None

    # One evaluation: its name, green for a good label ("pass"), red for a bad one.
    goto_ready(page, judged.url + f"/ui/trace/{T2}")
    page.wait_for("document.body.dataset.traceReady === '2'")
    assert badges(page)[BILLING_2] == [("bad", "✗ correctness")]
    assert page.js("document.getElementById('evaluations-total').dataset.bad") == "1"
    goto_ready(page, judged.url + f"/ui/trace/{T3}")
    page.wait_for("document.body.dataset.traceReady === '2'")
    assert badges(page)[TRIAGE_3] == [("good", "✓ correctness")]
    # The trace names its conversation, and the link opens it.
    assert page.js("document.getElementById('conversation-link').getAttribute('href')") == (
        "/ui/conversations/desk%20chat%20%237"
    )
    assert page.events.errors == []


def quality_rows(page: Page, table: str) -> list[list[str]]:
    return page.each(
        f"#{table} tbody tr",
        "[el.dataset.key, ...[...el.cells].slice(1).map(c => c.textContent.trim())]",
    )


def test_the_quality_panel_shows_counts_mean_scores_and_label_shares(judged: Console, page: Page) -> None:
    goto_ready(page, judged.url + "/ui/agents?window=1h")
    page.wait_for("!!document.getElementById('quality-agents')")
    # Billing: 1, 0.25 and 0 → mean 0.417; one label of each kind and one with none.
    assert quality_rows(page, "quality-agents") == [
        ["BillingAgent", "3", "0.417", "correct 1 · incorrect 1 · no label 1"],
        ["TriageAgent", "1", "0.8", "pass 1"],
    ]
    assert quality_rows(page, "quality-evaluations") == [
        ["correctness", "3", "0.6", "correct 1 · pass 1 · incorrect 1"],
        ["helpfulness", "1", "0.25", "no label 1"],
    ]
    # The stacked bar: a segment per label, sized by its share of the evaluations, good ones first.
    segments = page.each(
        "#quality-agents tr[data-key='BillingAgent'] .labelbar .seg",
        "[el.classList.contains('good') ? 'good' : 'bad', el.style.width, el.title]",
    )
    assert [(v, round(float(w.rstrip("%")), 1), t) for v, w, t in segments] == [
        ("good", 33.3, "correct: 1"),
        ("bad", 33.3, "incorrect: 1"),
    ]
    # Narrowed to one agent, the panel shows that agent only.
    goto_ready(page, judged.url + "/ui/agents?window=1h&agent=TriageAgent")
    page.wait_for("!!document.getElementById('quality-agents')")
    assert [r[0] for r in quality_rows(page, "quality-agents")] == ["TriageAgent"]
    assert page.events.errors == []


def test_conversations_list_and_one_conversations_turns_in_order(judged: Console, page: Page) -> None:
    # The collector serves the shell at both new addresses (a reload or a pasted link works).
    shell = httpx.get(judged.url + "/ui/").text
    for path in ("/ui/conversations", "/ui/conversations/desk%20chat%20%237", "/ui/conversations/S-99/"):
        response = httpx.get(judged.url + path)
        assert response.status_code == 200 and response.text == shell, path

    goto_ready(page, judged.url + "/ui/conversations")
    assert page.js("document.querySelector('#nav a.active').dataset.page") == "conversations"
    rows = page.each(
        "#conversations tbody tr",
        "[el.dataset.conversationId, ...[...el.cells].map(c => c.textContent.trim()),"
        " el.querySelector('a').getAttribute('href')]",
    )
    by_id = {r[0]: r for r in rows}
    assert set(by_id) == {CONV_A, CONV_B}
    a = by_id[CONV_A]
    # id, turns, agents, handoffs, tokens, cost, errors, evaluations, first, last, link
    assert a[1:5] == [CONV_A, "3", "BillingAgentTriageAgent", "0"]
    assert a[7:9] == ["0", "4"]
    assert a[9] < a[10] and a[9].endswith("Z") and a[9][4] == "-"  # ISO, UTC
    assert a[11] == "/ui/conversations/desk%20chat%20%237"
    assert by_id[CONV_B][2] == "1" and by_id[CONV_B][8] == "0"

    page.js(f"document.querySelector('tr[data-conversation-id=\"{CONV_A}\"] a').click(); 0")
    page.wait_for("document.body.dataset.ready === '/ui/conversations/desk%20chat%20%237'")
    assert page.text("#conversation-id") == CONV_A
    turns = page.each(
        "#conversation-traces tbody tr",
        "[el.dataset.traceId, el.cells[0].textContent, el.querySelector('td.name a').getAttribute('href')]",
    )
    assert turns == [
        [T1, "1", f"/ui/trace/{T1}"],
        [T2, "2", f"/ui/trace/{T2}"],
        [T3, "3", f"/ui/trace/{T3}"],
    ]
    assert page.text("#conversation-totals .tile:first-child .tile-value") == "3"
    # A turn opens its trace.
    page.js(f"document.querySelector('tr[data-trace-id=\"{T2}\"] td.name a').click(); 0")
    page.wait_for(f"document.body.dataset.ready === '/ui/trace/{T2}'")
    # An unknown conversation says so.
    goto_ready(page, judged.url + "/ui/conversations/no-such-conversation")
    assert "not found" in page.text(".notice.error")
    assert [e for e in page.events.errors if "/api/conversations/" not in e] == []


def test_planted_markup_in_evaluations_is_shown_as_text_and_never_runs(
    start_console: Any, page: Page
) -> None:
    console = start_console()
    post(
        console.url,
        request(
            turn(
                HOSTILE_TRACE, HOSTILE_CONV, time.time_ns() - 60 * 1_000_000_000, "BillingAgent", HOSTILE_SPAN
            )
        ),
    )
    feedback(
        console.url,
        trace_id=HOSTILE_TRACE,
        span_id=HOSTILE_SPAN,
        name=PAYLOADS[0],
        label=PAYLOADS[1],
        comment=PAYLOADS[2],
    )
    wait_for_evaluations(console, 1)

    goto_ready(page, console.url + f"/ui/trace/{HOSTILE_TRACE}?span={HOSTILE_SPAN}")
    page.wait_for(f"document.getElementById('details')?.dataset.spanId === '{HOSTILE_SPAN}'")
    assert_nothing_ran(page)
    assert badges(page)[HOSTILE_SPAN] == [("bad", f"✗ {PAYLOADS[0]}")]
    listed = page.text("#evaluations")
    for payload in PAYLOADS[:3]:
        assert payload in listed, payload

    goto_ready(page, console.url + "/ui/agents?window=1h")
    page.wait_for("!!document.getElementById('quality-evaluations')")
    assert_nothing_ran(page)
    assert PAYLOADS[0] in page.text("#quality-evaluations") and PAYLOADS[1] in page.text("#quality-agents")

    goto_ready(page, console.url + "/ui/conversations")
    assert_nothing_ran(page)
    assert HOSTILE_CONV in page.text("#conversations")
    page.js("document.querySelector('#conversations tbody a').click(); 0")
    page.wait_for("!!document.getElementById('conversation-traces')")
    assert_nothing_ran(page)
    assert page.text("#conversation-id") == HOSTILE_CONV
    assert page.events.errors == []


def test_with_a_query_token_the_new_pages_show_nothing_before_sign_in(start_console: Any, page: Page) -> None:
    console = start_console(Settings(query_token="q-token-Ev31", ingest_token="i-token-Ev32"))
    for path in ("/ui/conversations", f"/ui/conversations/{CONV_B}"):
        goto_ready(page, console.url + path)
        assert page.js("!!document.getElementById('signin')"), path
        assert page.js("document.querySelectorAll('table, #quality, #conversation-id').length") == 0, path


def test_the_topology_table_shows_the_handoffs_resolved_per_edge(start_console: Any, page: Page) -> None:
    from fastapi import APIRouter

    edge = {
        "source": "TriageAgent",
        "target": "BillingAgent",
        "handoffs": 5,
        "committed": 4,
        "failed": 1,
        "rejected": 0,
        "unknown": 0,
        "resolved": 3,
        "inferred": 0,
        "loops": 0,
        "p95_ms": 12.0,
        "statuses": {"committed": 4, "failed": 1},
    }
    nodes = [{"agent": a, "calls": 5, "errors": 0, "p95_ms": 10.0} for a in ("TriageAgent", "BillingAgent")]
    console = start_console()
    stand_in = APIRouter()
    stand_in.add_api_route("/api/topology", lambda window: {"nodes": nodes, "edges": [edge]}, methods=["GET"])
    console.app.router.routes[:0] = stand_in.routes
    goto_ready(page, console.url + "/ui/topology")
    assert page.each("#edges thead th", "el.textContent")[7] == "Resolved"
    assert page.each("#edges tbody tr", "el.querySelector('[data-col=resolved]').textContent") == ["3"]
