"""Smaller things a new user reads on the console's pages, in a real Chromium on a real collector:
the trace list names each trace's service, a p95 sparkline whose data all fell in one minute still
shows that minute (a dot, the level and the value), and the on-call preview time is an ISO date
with a 24-hour UTC time whatever the browser's locale."""

from __future__ import annotations

import re
import time
from typing import Any

from cdp import Page
from console_helpers import goto_ready
from traffic import agent_trace, post

from reach_collector.config import from_mapping

# The marks a sparkline draws: what is visible of each (a path of no length is not).
SPARK_MARKS = """((row) => {
  const svg = document.querySelector(`#golden tr[data-agent="${row}"] td:last-child svg.spark`);
  return [...svg.querySelectorAll('path, circle')].map((el) => {
    const b = el.getBBox();
    return {tag: el.tagName, w: b.width, h: b.height};
  }).concat([...svg.querySelectorAll('text')].map((el) => ({tag: 'text', text: el.textContent})));
})"""


def test_the_trace_list_has_a_service_column(start_console: Any, page: Page) -> None:
    console = start_console()
    body, info = agent_trace(20, seed=7)
    post(console.url, body)
    (listed,) = console.api("/api/traces")["traces"]
    assert listed["services"] == ["support-desk"]
    goto_ready(page, console.url + "/ui/traces")
    page.wait_for("document.querySelectorAll('#traces-table tbody tr').length === 1")
    heads = page.each("#traces-table thead th", "el.textContent")
    cells = page.each("#traces-table tbody tr td", "el.textContent")
    assert "Service" in heads
    assert cells[heads.index("Service")] == "support-desk"
    assert info.trace_id in cells[heads.index("Trace id")]
    assert page.events.errors == []


def test_a_p95_sparkline_of_one_minute_is_not_blank(start_console: Any, page: Page) -> None:
    console = start_console()
    # Every span in one step of the series: the steps end at now, now - 1 min, ... (the series runs
    # from an hour before now), so spans ending 2.5 min ago are half a minute from either edge.
    start = time.time_ns() - 150_000_000_000
    for seed in (1, 2, 3):
        body, _ = agent_trace(20, seed=seed, start_ns=start + seed * 100_000_000)
        post(console.url, body)
    series = console.api("/api/metrics/timeseries", metric="p95", by="agent", step="1m", since="1h")
    triage = next(s for s in series["series"] if s["key"] == "TriageAgent")
    assert len([p for p in triage["points"] if p["value"] is not None]) == 1
    goto_ready(page, console.url + "/ui/agents")
    page.wait_for("!!document.querySelector('#golden tr[data-agent=\"TriageAgent\"] svg.spark')")
    marks = page.js(f"{SPARK_MARKS}('TriageAgent')")
    drawn = [m for m in marks if m["tag"] != "text" and max(m["w"], m["h"]) >= 4]
    assert drawn, marks  # a dot, a level line: something a person sees
    values = [m["text"] for m in marks if m["tag"] == "text"]
    assert len(values) == 1 and re.fullmatch(r"[\d.,]+ (µs|ms|s)", values[0]), values
    assert page.events.errors == []


SCHEDULES = {
    "primary": {
        "layers": [
            {"name": "daily", "start": "2026-01-05T09:00:00", "length": "1d", "members": ["alice", "bob"]}
        ]
    }
}


def test_the_on_call_preview_time_is_iso_and_24_hour(start_console: Any, page: Page) -> None:
    console = start_console(from_mapping({"schedules": SCHEDULES}))
    goto_ready(page, console.url + "/ui/oncall")
    field = page.js(
        "(() => { const f = document.getElementById('at'); return {type: f.type, value: f.value}; })()"
    )
    assert field["type"] == "text"  # not datetime-local, which follows the browser's 12-hour locale
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", field["value"]), field
    # An afternoon time in 24-hour form is taken as UTC.
    page.fill("at", "2026-02-02 17:45")
    page.click("#preview button[type=submit]")
    page.wait_for("location.search.includes('at=') && document.body.dataset.ready === '/ui/oncall'")
    assert page.js("new URLSearchParams(location.search).get('at')") == "2026-02-02T17:45:00Z"
    assert page.js("document.getElementById('at').value") == "2026-02-02 17:45"
    # A day that does not exist, or a 12-hour time, is refused in place: the page stays where it was.
    for wrong in ("2026-02-30 10:00", "2026-02-02 5:45 PM", "02/02/2026 17:45"):
        page.fill("at", wrong)
        page.click("#preview button[type=submit]")
        time.sleep(0.3)
        assert page.js("new URLSearchParams(location.search).get('at')") == "2026-02-02T17:45:00Z", wrong
        assert not page.js("document.getElementById('at').validity.valid"), wrong
    assert page.events.errors == []
