"""Untrusted span data is shown as text and never runs; with a query token the console shows no
data until the token is entered, and the token is never part of a requested URL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cdp import Page
from console_helpers import Console, goto_ready
from traffic import attributes, post, request

from reach_collector.config import Settings
from reach_otel import semconv as sc

# Each would set window.__pwned or add an element if it were ever parsed as markup or run.
PAYLOADS = (
    '<img src=x onerror="window.__pwned=1">',
    "<script>window.__pwned=2</script>",
    '<svg onload="window.__pwned=3"><circle r=5></circle></svg>',
    '"><iframe src="javascript:window.__pwned=4"></iframe>',
    "javascript:window.__pwned=5",
)
TRACE = "5f0c0ffee0ddf00d5f0c0ffee0ddf00d"
HOSTILE_AGENT = '<b onmouseover="window.__pwned=6">Evil</b>Agent'


def hostile_request(now_ns: int) -> dict[str, Any]:
    ms = 1_000_000
    chat = json.dumps([{"role": "user", "parts": [{"type": "text", "content": PAYLOADS[0]}]}])
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": PAYLOADS[1]}]}])
    spans = [
        {
            "traceId": TRACE,
            "spanId": "a000000000000001",
            "name": PAYLOADS[0],
            "kind": 1,
            "startTimeUnixNano": str(now_ns),
            "endTimeUnixNano": str(now_ns + 50 * ms),
            "attributes": attributes({"note": PAYLOADS[1], PAYLOADS[2]: PAYLOADS[3]}),
            "status": {"code": 1},
        },
        {
            "traceId": TRACE,
            "spanId": "a000000000000002",
            "parentSpanId": "a000000000000001",
            "name": f"invoke_agent {PAYLOADS[2]}",
            "kind": 1,
            "startTimeUnixNano": str(now_ns + ms),
            "endTimeUnixNano": str(now_ns + 40 * ms),
            "attributes": attributes(
                {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: HOSTILE_AGENT}
            ),
            "events": [
                {
                    "timeUnixNano": str(now_ns + 2 * ms),
                    "name": PAYLOADS[4],
                    "attributes": attributes({"x": PAYLOADS[0]}),
                }
            ],
            "status": {"code": 2, "message": PAYLOADS[1]},
        },
        {
            "traceId": TRACE,
            "spanId": "a000000000000003",
            "parentSpanId": "a000000000000002",
            "name": "chat model",
            "kind": 3,
            "startTimeUnixNano": str(now_ns + 3 * ms),
            "endTimeUnixNano": str(now_ns + 20 * ms),
            "attributes": attributes(
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_REQUEST_MODEL: PAYLOADS[3],
                    sc.GEN_AI_INPUT_MESSAGES: chat,
                    sc.GEN_AI_OUTPUT_MESSAGES: answer,
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 5,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 3,
                }
            ),
            "status": {"code": 1},
        },
        {
            "traceId": TRACE,
            "spanId": "a000000000000004",
            "parentSpanId": "a000000000000002",
            "name": f"handoff {PAYLOADS[4]}",
            "kind": 1,
            "startTimeUnixNano": str(now_ns + 21 * ms),
            "endTimeUnixNano": str(now_ns + 30 * ms),
            "attributes": attributes(
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
                    sc.REACH_HANDOFF_SOURCE: HOSTILE_AGENT,
                    sc.REACH_HANDOFF_TARGET: PAYLOADS[0],
                    sc.REACH_HANDOFF_STATUS: PAYLOADS[1],
                    sc.REACH_HOP_COUNT: 1,
                }
            ),
            "status": {"code": 1},
        },
    ]
    body = request(spans, service=PAYLOADS[2])
    body["resourceSpans"][0]["resource"]["attributes"] += attributes({"host.name": PAYLOADS[3]})
    return body


def assert_nothing_ran(page: Page) -> None:
    assert page.js("window.__pwned") is None
    assert page.js("document.querySelectorAll('img, iframe, script:not([src]), circle, b').length") == 0
    handlers = page.each("*", "[...el.attributes].filter(a => /^on/i.test(a.name)).map(a => a.name)")
    assert [h for h in handlers if h] == []
    assert page.events.dialogs == []


@pytest.fixture(scope="module")
def hostile(start_console: Any) -> Console:
    import time

    console = start_console()
    post(console.url, hostile_request(time.time_ns() - 60 * 1_000_000_000))
    return console


def test_planted_markup_in_spans_is_shown_as_text_and_never_runs(hostile: Console, page: Page) -> None:
    goto_ready(page, hostile.url + "/ui/traces?since=1d")
    assert_nothing_ran(page)
    row = page.text(f"tr[data-trace-id='{TRACE}']")
    assert PAYLOADS[0] in row and HOSTILE_AGENT in row

    goto_ready(page, hostile.url + f"/ui/trace/{TRACE}")
    assert_nothing_ran(page)
    text = page.text("main")
    for shown in (PAYLOADS[0], f"invoke_agent {PAYLOADS[2]}", HOSTILE_AGENT):
        assert shown in text, shown
    graph = page.js("document.getElementById('agent-graph').textContent")
    assert "<b onmouseover" in graph  # an SVG text node, clipped, but text
    for span_id in ("a000000000000001", "a000000000000002", "a000000000000003", "a000000000000004"):
        page.js(f"document.querySelector('.wf-row[data-span-id=\"{span_id}\"]').click()")
        page.wait_for(f"document.getElementById('details')?.dataset.spanId === '{span_id}'")
        page.js("document.querySelectorAll('#details details').forEach(d => d.open = true); 0")
        assert_nothing_ran(page)
    details = page.text("#details")
    assert PAYLOADS[4] in details or PAYLOADS[0] in details
    page.js("document.querySelector('.wf-row[data-span-id=\"a000000000000003\"]').click()")
    page.wait_for("document.getElementById('details')?.dataset.spanId === 'a000000000000003'")
    chat = page.text("#chat")
    assert PAYLOADS[0] in chat and PAYLOADS[1] in chat
    page.js("document.querySelector('.wf-row[data-span-id=\"a000000000000001\"]').click()")
    page.wait_for("document.getElementById('details')?.dataset.spanId === 'a000000000000001'")
    page.js("document.querySelectorAll('#details details').forEach(d => d.open = true); 0")
    details = page.text("#details")
    assert (
        PAYLOADS[1] in details and PAYLOADS[2] in details and PAYLOADS[3] in details
    )  # attributes, resource

    for path in ("/ui/agents?window=1h", "/ui/topology?window=1h"):
        goto_ready(page, hostile.url + path)
        assert_nothing_ran(page)
        assert HOSTILE_AGENT in page.text("main"), path
    errors = [e for e in page.events.errors if "/api/topology" not in e]
    assert errors == []


def test_a_query_token_guards_every_datum_and_never_enters_a_url(start_console: Any, page: Page) -> None:
    token = "q-token-Zx81"
    console = start_console(Settings(query_token=token, ingest_token="i-token-Yw22"))
    body = hostile_request(__import__("time").time_ns() - 30 * 1_000_000_000)
    post(console.url, body, token="i-token-Yw22")
    assert console.api("/api/traces", token=token, since="1d")["traces"]

    # The shell and its assets load without a token; every page then asks for it and shows no data.
    for path in (
        "/ui/traces?since=1d",
        f"/ui/trace/{TRACE}",
        "/ui/agents",
        "/ui/topology",
        "/ui/alerts",
        "/ui/oncall",
    ):
        goto_ready(page, console.url + path)
        assert page.js("!!document.getElementById('signin')"), path
        shown = page.text("main")
        assert TRACE not in shown and "Agent" not in shown.replace("Agents", ""), (path, shown)
        assert (
            page.js("document.querySelectorAll('#traces-body tr, .wf-row, #agent-graph, table').length") == 0
        )

    # A wrong token is refused and dropped; still nothing is shown.
    goto_ready(page, console.url + "/ui/traces?since=1d")
    page.fill("token", "wrong-token")
    page.click("#signin button")
    page.wait_for("document.querySelector('#signin .notice.error')?.textContent.includes('refused')")
    assert TRACE not in page.text("main")
    assert page.js("sessionStorage.length") == 0

    # The right one: the data appears, and stays across a reload (this tab's session).
    page.fill("token", token)
    page.click("#signin button")
    page.wait_for(f"!!document.querySelector('tr[data-trace-id=\"{TRACE}\"]')")
    goto_ready(page, console.url + f"/ui/trace/{TRACE}")
    assert page.js("document.querySelectorAll('.wf-row').length") == 4

    # The token went only in the Authorization header: never in a URL, a cookie or the page.
    urls = page.events.requests
    assert any("/api/traces" in u for u in urls)
    assert not [u for u in urls if token in u or "wrong-token" in u]
    api_headers = [h for u, h in zip(urls, page.events.request_headers, strict=True) if "/api/" in u]
    assert api_headers and all(
        h.get("Authorization") in (f"Bearer {token}", "Bearer wrong-token") for h in api_headers[-3:]
    )
    assert token not in page.js("document.cookie + document.documentElement.outerHTML + localStorage.length")

    # Signing out forgets it: the next page asks again.
    page.js(
        "[...document.querySelectorAll('#session button')].find(b => b.textContent === 'sign out').click(); 0"
    )
    page.wait_for("!!document.getElementById('signin')")
    assert page.js("sessionStorage.length") == 0
