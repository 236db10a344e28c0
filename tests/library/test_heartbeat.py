"""reach_otel.heartbeat(): periodic POSTs to the collector from a daemon thread, harmless when it is down."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import reach_otel
from reach_otel.heartbeat import collector_url


class Receiver:
    def __init__(self) -> None:
        self.beats: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.beats.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("authorization")}
                )
                self.send_response(202)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_beats_arrive_periodically_with_the_ingest_headers(make_recorder) -> None:
    make_recorder(headers={"Authorization": "Bearer ingest-secret"})
    receiver = Receiver()
    try:
        beat = reach_otel.heartbeat(
            "billing-1",
            every=0.05,
            collector=receiver.url,
            endpoint="http://billing:8000",
            capabilities=["refund"],
        )
        deadline = time.monotonic() + 5
        while len(receiver.beats) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        beat.stop()
        assert not beat.running
        count = len(receiver.beats)
        time.sleep(0.2)
        assert len(receiver.beats) == count  # stopped means stopped
    finally:
        receiver.close()
    assert count >= 3
    first = receiver.beats[0]
    assert first["path"] == "/api/heartbeats"
    assert first["body"] == {
        "agent_id": "billing-1",
        "endpoint": "http://billing:8000",
        "capabilities": ["refund"],
    }
    assert first["auth"] == "Bearer ingest-secret"
    assert beat.sent == count


def test_collector_down_costs_nothing() -> None:
    started = time.monotonic()
    beat = reach_otel.heartbeat("lonely", every=0.05, collector="http://127.0.0.1:9", timeout=0.2)
    assert time.monotonic() - started < 0.1  # starting never waits for the collector
    time.sleep(0.3)
    beat.stop()
    assert beat.failed >= 1
    assert beat.sent == 0


def test_collector_url_follows_the_otlp_endpoint(make_recorder, monkeypatch) -> None:
    monkeypatch.delenv("REACH_OTEL_URL", raising=False)
    make_recorder(endpoint="http://collector.internal:4318")
    assert collector_url() == "http://collector.internal:4318"
    monkeypatch.setenv("REACH_OTEL_URL", "http://other:1/")
    assert collector_url() == "http://other:1"
    assert collector_url("http://explicit:2") == "http://explicit:2"
