"""Alerting with several collectors on one ClickHouse (SPEC §16): ``alerting.evaluate: false`` on
one, the default on the other. The evaluating collector fires on spans the other one ingested
(the store is shared); the other evaluates nothing, yet shows the firing alert from the shared
alert history; each collector's startup line says which it is."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import httpx
from ch_collectors import CollectorProcess, InProcessCollector
from ch_server import ClickHouseServer
from ch_spans import failing_runs
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.clickhouse import ClickHouseStore

RULES = {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3, "window": "1m"}}


def _collector(db: str, evaluate: bool) -> InProcessCollector:
    alerting: dict[str, Any] = {"interval": "1s", "rules": RULES}
    if not evaluate:
        alerting["evaluate"] = False
    settings = replace(Settings(db=db), retention_s=0, sections={"alerting": alerting})
    store = ClickHouseStore(db)
    app = create_app(settings, store=store)  # with its alert loop, as a served collector runs
    server = ServerThread(app).start()
    return InProcessCollector(server.url, store, app, server)


def _firing(c: InProcessCollector) -> list[dict[str, Any]]:
    return [a for a in c.get("/api/alerts").json()["alerts"] if a["state"] == "firing"]


def test_one_evaluates_the_other_shows_its_history(clickhouse: ClickHouseServer, ch_database: str) -> None:
    db = clickhouse.url(ch_database)
    evaluating = _collector(db, evaluate=True)
    quiet = _collector(db, evaluate=False)
    try:
        sent = httpx.post(quiet.url + "/v1/traces", json=failing_runs("Billing", 6, 0xAB00), timeout=30)
        assert sent.status_code == 200, sent.text
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _firing(evaluating):
            time.sleep(0.2)
        fired = _firing(evaluating)
        assert [(a["alertname"], a["labels"]["agent"]) for a in fired] == [("ReachSuccessRateLow", "Billing")]
        # the quiet collector evaluated nothing itself ...
        assert quiet.app.state.alerts.alerts()["alerts"] == []
        # ... and answers from the history the evaluating one wrote to the shared store
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not _firing(quiet):
            time.sleep(0.2)
        shown = _firing(quiet)
        assert [(a["fingerprint"], a["state"]) for a in shown] == [(fired[0]["fingerprint"], "firing")]
        assert (
            quiet.get("/api/alerts", state="firing").json()["alerts"][0]["fingerprint"]
            == fired[0]["fingerprint"]
        )
        assert quiet.get("/api/alerts", state="bogus").status_code == 400
    finally:
        evaluating.close()
        quiet.close()


def test_startup_line_says_whether_it_evaluates(
    clickhouse: ClickHouseServer, ch_database: str, tmp_path: Any
) -> None:
    config = tmp_path / "reach.yaml"
    config.write_text("alerting:\n  evaluate: false\n", encoding="utf-8")
    db = clickhouse.url(ch_database)
    for extra, line in (
        (("--config", str(config)), "alerting: not evaluated here (alerting.evaluate: false)"),
        ((), "alerting: evaluated here every 15s"),
    ):
        out = CollectorProcess(db, *extra).start().stop()
        assert line in out, out
