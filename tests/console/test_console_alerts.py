"""The Alerts and On-call pages on a real collector with a firing P0: the alert is listed with its
labels and an Ack button that acknowledges it through the API, the delivery attempts (a 500, then
a 200 from a real receiver) are shown, and the on-call page says who is on call now, why, who is
next, and previews a chosen instant — all equal to what the API answers."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cdp import Page
from console_helpers import Console, goto_ready
from traffic import failing_runs, post

from reach_collector.config import from_mapping

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "alerting"))
from alerting_fakes import Receiver

AGENT = "BillingAgent"
SCHEDULES: dict[str, Any] = {
    "primary": {
        "layers": [
            {
                "name": "weekly",
                "start": "2026-01-05T09:00:00",
                "length": "1w",
                "members": ["alice", "bob", "carol"],
            }
        ],
        "overrides": [{"user": "dave", "start": "2026-02-01T00:00:00", "end": "2026-02-03T00:00:00"}],
    }
}


@pytest.fixture(scope="module")
def firing(start_console: Any) -> Iterator[tuple[Console, str]]:
    with Receiver([500]) as pager:
        doc = {
            "alerting": {"rules": {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3}}},
            "users": {"alice": {"webhook": pager.url + "/alice"}, "bob": {"webhook": pager.url + "/bob"}},
            "schedules": SCHEDULES,
            "routing": {"P0": {"notify": {"users": ["alice"]}}},
        }
        console = start_console(from_mapping(doc), alert_loop=False)
        post(console.url, failing_runs(time.time_ns()))
        now = time.time()
        engine = console.app.state.alerts
        engine.tick(now)  # fires; the page to alice answers 500
        engine.flush(now + 1.5)  # the retry is delivered
        deadline = time.monotonic() + 20
        while len(console.api("/api/alerts/deliveries")["deliveries"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        (alert,) = console.api("/api/alerts", state="firing")["alerts"]
        yield console, alert["fingerprint"]


def test_alerts_page_lists_the_alert_acks_it_and_shows_deliveries(firing, page: Page) -> None:
    console, fp = firing
    goto_ready(page, console.url + "/ui/alerts")
    row = page.text(f"#alerts tr[data-fingerprint='{fp}']")
    assert "ReachSuccessRateLow" in row and "P0" in row and "firing" in row and f"agent={AGENT}" in row
    deliveries = page.each("#deliveries tbody tr", "el.innerText")
    assert len(deliveries) == 2
    assert "delivered" in deliveries[0] and "alice" in deliveries[0]  # newest first
    assert "failed, will retry" in deliveries[1] and "HTTP 500" in deliveries[1]

    # The alert links to the agent's failing traces, which the traces page then lists.
    page.click(f"#alerts tr[data-fingerprint='{fp}'] a.failing-traces")
    page.wait_for("document.body.dataset.ready === '/ui/traces'")
    query = page.js("Object.fromEntries(new URLSearchParams(location.search))")
    assert query["agent"] == AGENT and query["status"] == "error"
    listed = set(page.each("#traces-body tr", "el.dataset.traceId"))
    assert listed and listed == {t["trace_id"] for t in console.api("/api/traces", **query)["traces"]}
    goto_ready(page, console.url + "/ui/alerts")

    page.click(f"button.ack[data-fingerprint='{fp}']")
    page.wait_for(
        f"document.querySelector(\"#alerts tr[data-fingerprint='{fp}']\")?.innerText.includes('acked by')"
    )
    assert console.api("/api/alerts", state="firing")["alerts"][0]["acknowledged_by"] == "anonymous"
    assert not page.js(f"!!document.querySelector(\"button.ack[data-fingerprint='{fp}']\")")
    assert page.events.errors == []

    goto_ready(page, console.url + "/ui/alerts?state=resolved")
    assert "No resolved alerts." in page.text("#alerts-body")
    assert page.text(".tabs a.active") == "resolved"


def test_oncall_page_shows_now_next_and_a_preview(firing, page: Page) -> None:
    console, _ = firing
    now = console.api("/api/oncall")["schedules"][0]
    goto_ready(page, console.url + "/ui/oncall")
    card = page.text("section[data-schedule='primary']")
    assert now["now"] in card and f"because: {now['reason']}" in card and now["next"] in card

    # Preview an instant inside the override: dave, because of the override; the next hand-offs
    # are the API's answers asked one after another.
    at = "2026-02-02T12:00:00Z"
    page.fill("at", "2026-02-02T12:00")
    page.click("#preview button[type=submit]")
    page.wait_for("document.body.dataset.ready === '/ui/oncall' && location.search.includes('at=')")
    assert page.js("new URLSearchParams(location.search).get('at')") == "2026-02-02T12:00:00Z"
    preview = console.api("/api/oncall", at=at)["schedules"][0]
    assert (preview["now"], preview["reason"]) == ("dave", "override")
    card = page.text("section[data-schedule='primary']")
    assert "dave" in card and "because: override" in card and page.text("#oncall-at").startswith("Preview at")
    expected = []
    when = preview["next_handoff"]
    for _ in range(3):
        step = console.api("/api/oncall", at=when)["schedules"][0]
        expected.append([when.replace("T", " "), step["now"], step["reason"]])
        when = step["next_handoff"]
    rows = page.each("section[data-schedule='primary'] tbody tr", "[...el.cells].map(c => c.textContent)")
    assert rows[:3] == expected
    assert page.events.errors == []
