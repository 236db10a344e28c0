"""Another website open in the same browser cannot make a tokenless collector act: its page's
requests to acknowledge a firing P0, mark an agent stopped or start a replay — with the JSON sent
as text/plain, as a typeless Blob or with no body, all of which a browser sends without a
preflight — change nothing, while the console, from the collector's own origin, still acks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cdp import Page
from console_helpers import Console, goto_ready
from servers import ServerThread
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from traffic import failing_runs, post

from reach_collector.config import from_mapping

AGENT = "BillingAgent"
VICTIM = "victim-agent"

ATTACK = """<!doctype html><title>cat pictures</title><script>
(async () => {
  const c = %(collector)s, fp = %(fp)s;
  const ack = JSON.stringify({by: "attacker"});
  const stop = JSON.stringify({agent_id: %(victim)s, status: "stopped"});
  const replay = JSON.stringify({since: "10m", until: "0m"});
  const simple = (path, body, type) => fetch(c + path, {
    method: "POST", mode: "no-cors", credentials: "include",
    headers: type ? {"Content-Type": type} : {}, body,
  }).then(() => "sent", (e) => String(e));
  window.__results = await Promise.all([
    simple("/api/alerts/" + fp + "/ack", ack, "text/plain"),
    simple("/api/alerts/" + fp + "/ack", new Blob([ack]), null),
    simple("/api/alerts/" + fp + "/ack", undefined, null),
    simple("/api/heartbeats", stop, "text/plain"),
    simple("/api/heartbeats", new Blob([stop]), null),
    simple("/api/alerts/replay", replay, "text/plain"),
  ]);
  window.__done = true;
})();
</script>"""


@pytest.fixture
def firing(start_console: Any) -> Iterator[tuple[Console, str]]:
    doc = {"alerting": {"rules": {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3}}}}
    console = start_console(from_mapping(doc), alert_loop=False)
    post(console.url, failing_runs(time.time_ns(), first_id=0xC5F0))
    console.app.state.alerts.tick(time.time())
    (alert,) = console.api("/api/alerts", state="firing")["alerts"]
    beat = httpx.post(console.url + "/api/heartbeats", json={"agent_id": VICTIM}, timeout=10)
    assert beat.status_code == 202
    yield console, alert["fingerprint"]


def test_another_site_cannot_ack_stop_or_replay(firing: tuple[Console, str], page: Page) -> None:
    console, fp = firing
    page_html = ATTACK % {
        "collector": json.dumps(console.url),
        "fp": json.dumps(fp),
        "victim": json.dumps(VICTIM),
    }
    attacker = Starlette(routes=[Route("/", lambda request: HTMLResponse(page_html))])
    with ServerThread(attacker) as site:  # another origin: same address, another port
        page.goto(site.url + "/")
        page.wait_for("window.__done === true", timeout=20)
        results = page.js("window.__results")
    assert results == ["sent"] * 6, results  # the browser did send every request
    (alert,) = console.api("/api/alerts", state="firing")["alerts"]
    assert alert["acknowledged_by"] is None
    agents = {a["agent_id"]: a["status"] for a in console.api("/api/agents")["agents"]}
    assert agents[VICTIM] == "live"

    # The console, from the collector's own origin, still acknowledges.
    goto_ready(page, console.url + "/ui/alerts")
    page.click(f"button.ack[data-fingerprint='{fp}']")
    page.wait_for(
        f"document.querySelector(\"#alerts tr[data-fingerprint='{fp}']\")?.innerText.includes('acked by')"
    )
    assert console.api("/api/alerts", state="firing")["alerts"][0]["acknowledged_by"] == "anonymous"
