"""A tiny webhook receiver that records pages: Alertmanager webhook v4 bodies, one per notification.

The demo points its on-call users' webhooks here, so it can show who was paged for what; the
``examples/oncall`` receiver prints them as they arrive.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Page:
    recipient: str  # the path the webhook was posted to: /<user>
    body: dict[str, Any]

    @property
    def summary(self) -> list[str]:
        lines = []
        for alert in self.body.get("alerts", []):
            labels = alert.get("labels", {})
            lines.append(
                f"{alert.get('status', '?'):<8} {labels.get('severity', '?')} {labels.get('alertname', '?')}"
                f" agent={labels.get('agent', '-')} → {self.recipient}"
            )
        return lines


class Pager:
    """Collects webhook posts on ``http://127.0.0.1:PORT/<recipient>``; ``on_page`` sees each one."""

    def __init__(self, port: int = 0, on_page: Callable[[Page], None] | None = None) -> None:
        self.pages: list[Page] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                except ValueError:
                    self.send_response(400)
                    self.end_headers()
                    return
                page = Page(self.path.strip("/") or "unknown", body if isinstance(body, dict) else {})
                with outer._lock:
                    outer.pages.append(page)
                if on_page is not None:
                    on_page(page)
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="reach-otel-pager", daemon=True
        )

    def webhook(self, recipient: str) -> str:
        return f"{self.url}/{recipient}"

    def __enter__(self) -> Pager:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
