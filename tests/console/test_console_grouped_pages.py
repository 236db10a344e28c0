"""The Alerts page's deliveries table on a grouped page: three agents' P0s reach the on-call
person as one message, and its row says how many alerts it carried where one agent's would say
that agent."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from cdp import Page
from console_helpers import goto_ready
from traffic import failing_runs, post

from reach_collector.config import from_mapping

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "alerting"))
from alerting_fakes import Receiver

AGENTS = ("BillingAgent", "RefundAgent", "TechSupportAgent")


def test_a_grouped_page_row_counts_its_alerts(start_console: Any, page: Page) -> None:
    with Receiver() as pager:
        doc = {
            "alerting": {"rules": {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3}}},
            "users": {"alice": {"webhook": pager.url + "/alice"}},
            "routing": {"P0": {"notify": {"users": ["alice"]}}},
        }
        console = start_console(from_mapping(doc), alert_loop=False)
        post(console.url, failing_runs(time.time_ns(), AGENTS, 4, first_id=0xE000))
        console.app.state.alerts.tick(time.time())
        deadline = time.monotonic() + 20
        while not console.api("/api/alerts/deliveries")["deliveries"] and time.monotonic() < deadline:
            time.sleep(0.1)
        (delivery,) = console.api("/api/alerts/deliveries")["deliveries"]
        assert len(delivery["fingerprints"]) == 3 and delivery["agent"] is None
        goto_ready(page, console.url + "/ui/alerts")
        page.wait_for("document.querySelectorAll('#deliveries tbody tr').length === 1")
        cells = page.each("#deliveries tbody tr td", "el.textContent")
    assert cells[3] == "3 alerts", cells
    assert cells[4] == "alice"
