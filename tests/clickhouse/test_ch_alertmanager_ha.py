"""The Prometheus HA pattern with collectors (SPEC §16): two collectors on one ClickHouse both
evaluate and each pushes to its own Alertmanager; the two Alertmanagers form a cluster on
loopback and deduplicate, so the on-call receiver gets one notification for the alert both
collectors fired. (Without the cluster, each Alertmanager notifies: the test's last step shows it.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from ch_collectors import InProcessCollector
from ch_server import ClickHouseServer
from ch_spans import failing_runs
from collector_process import free_port
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.clickhouse import ClickHouseStore

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "dashboards"))
sys.path.insert(0, str(TESTS / "alerting"))
from alerting_fakes import Receiver  # noqa: E402
from dashboard_helpers import PromTools, ensure_prometheus_tools  # noqa: E402

RULES = {"ReachSuccessRateLow": {"for": "0s", "min_calls": 3, "window": "1m"}}


def _am_config(directory: Path, receiver: str) -> Path:
    config = directory / "alertmanager.yml"
    config.write_text(
        "route:\n"
        "  receiver: oncall\n"
        "  group_by: [alertname, agent]\n"
        "  group_wait: 2s\n"
        "  group_interval: 5m\n"
        "  repeat_interval: 4h\n"
        "receivers:\n"
        "  - name: oncall\n"
        "    webhook_configs:\n"
        f"      - url: {receiver}/page\n"
        "        send_resolved: false\n",
        encoding="utf-8",
    )
    return config


class Alertmanager:
    def __init__(self, tools: PromTools, config: Path, directory: Path, peers: list[int], listen: int | None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [
            tools.alertmanager,
            f"--config.file={config}",
            f"--storage.path={directory}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            f"--cluster.listen-address={'' if listen is None else f'127.0.0.1:{listen}'}",
        ]
        if listen is not None:
            args += [f"--cluster.peer=127.0.0.1:{p}" for p in peers]
            args += [
                "--cluster.peer-timeout=3s",
                "--cluster.gossip-interval=100ms",
                "--cluster.pushpull-interval=2s",
            ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=2) as r:
            return json.loads(r.read() or b"null")

    def wait_ready(self, peers: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                status = self.get("/api/v2/status")
                if peers == 0 or len((status.get("cluster") or {}).get("peers") or []) >= peers:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("alertmanager exited")
            time.sleep(0.2)
        raise RuntimeError("alertmanager did not become ready")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def tools() -> PromTools:
    return ensure_prometheus_tools()


def _collector(db: str, alertmanager: str) -> InProcessCollector:
    alerting = {"interval": "1s", "rules": RULES, "alertmanager_url": alertmanager}
    settings = replace(Settings(db=db), retention_s=0, sections={"alerting": alerting})
    store = ClickHouseStore(db)
    app = create_app(settings, store=store)
    server = ServerThread(app).start()
    return InProcessCollector(server.url, store, app, server)


def _held(am: Alertmanager, agent: str) -> list[Any]:
    return [a for a in am.get("/api/v2/alerts") if a["labels"].get("agent") == agent]


def _pages_after(
    tools: PromTools, tmp: Path, db: str, clustered: bool, agent: str
) -> tuple[list[Any], list[Any], list[Any]]:
    """Run two collectors → two Alertmanagers (a cluster or not); the receiver's pages, and what
    each Alertmanager holds."""
    tmp.mkdir(parents=True, exist_ok=True)
    with Receiver() as oncall:
        config = _am_config(tmp, oncall.url)
        gossip = [free_port(), free_port()]
        ams = [
            Alertmanager(tools, config, tmp / f"am{i}", [gossip[1 - i]], gossip[i] if clustered else None)
            for i in range(2)
        ]
        collectors: list[InProcessCollector] = []
        try:
            for am in ams:
                am.wait_ready(2 if clustered else 0)
            collectors = [_collector(db, am.url) for am in ams]
            sent = httpx.post(
                collectors[0].url + "/v1/traces", json=failing_runs(agent, 6, 0xEE00 + len(agent)), timeout=30
            )
            assert sent.status_code == 200, sent.text
            deadline = time.monotonic() + 40
            held: list[list[Any]] = [[], []]
            while time.monotonic() < deadline:
                held = [
                    [a for a in am.get("/api/v2/alerts") if a["labels"].get("agent") == agent] for am in ams
                ]
                if all(held) and oncall.bodies("/page"):
                    break
                time.sleep(0.3)
            time.sleep(8)  # past group_wait and both peers' timeouts: a duplicate would have come
            pages = [b for b in oncall.bodies("/page") if b["groupLabels"].get("agent") == agent]
            return pages, held[0], held[1]
        finally:
            for c in collectors:
                c.close()
            for am in ams:
                am.stop()


def test_two_collectors_two_alertmanagers_one_page(
    tools: PromTools, clickhouse: ClickHouseServer, ch_database: str, tmp_path: Path
) -> None:
    db = clickhouse.url(ch_database)
    pages, first, second = _pages_after(tools, tmp_path / "cluster", db, clustered=True, agent="Billing")
    assert first and second, "each Alertmanager received the alert from its collector"
    assert first[0]["fingerprint"] == second[0]["fingerprint"]  # the same labels from both collectors
    assert len(pages) == 1, pages
    assert [a["labels"]["alertname"] for a in pages[0]["alerts"]] == ["ReachSuccessRateLow"]
    # The same two collectors without the cluster: each Alertmanager pages on its own.
    pages, _, _ = _pages_after(tools, tmp_path / "apart", db, clustered=False, agent="Refund")
    assert len(pages) == 2, pages
