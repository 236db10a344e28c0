"""Fakes shared by the alerting tests: scripted alert data, a fake clock, a recording sender."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from reach_collector.alerting.inputs.data import AgentWindowStats, Heartbeat
from reach_collector.alerting.notify.webhook import SendOutcome

MIN = 60.0
T0 = 1_767_600_000.0  # 2026-01-05T08:00:00Z, a whole minute

StatsFn = Callable[[float, float], Mapping[str, AgentWindowStats]]
BeatsFn = Callable[[float], Mapping[str, Heartbeat]]


class ScriptedData:
    """AlertData whose answers are functions of the (simulated) ``now``."""

    def __init__(self, stats: StatsFn | None = None, beats: BeatsFn | None = None) -> None:
        self._stats = stats or (lambda now, window: {})
        self._beats = beats or (lambda now: {})
        self.stat_calls: list[tuple[float, float]] = []
        self.fail = False

    def agent_stats(self, now: float, window_s: float) -> Mapping[str, AgentWindowStats]:
        self.stat_calls.append((now, window_s))
        if self.fail:
            raise RuntimeError("store unavailable")
        return self._stats(now, window_s)

    def heartbeats(self, now: float) -> Mapping[str, Heartbeat]:
        if self.fail:
            raise RuntimeError("store unavailable")
        return self._beats(now)


def failing_between(start: float, end: float, agent: str = "billing") -> ScriptedData:
    """``agent`` fails 8 of 10 calls in every window ending in ``[start, end)``, else all succeed."""

    def stats(now: float, window: float) -> Mapping[str, AgentWindowStats]:
        errors = 8 if start <= now < end else 0
        return {agent: AgentWindowStats(10, errors, 120.0, "billing-svc")}

    return ScriptedData(stats)


class FakeClock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
        self.t += seconds
        return self.t


class RecordingSender:
    """A sender that answers from a script (default: success) and records every call."""

    def __init__(self, outcomes: list[SendOutcome] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._outcomes = list(outcomes or [])

    def __call__(self, url: str, body: Mapping[str, Any]) -> SendOutcome:
        self.calls.append((url, dict(body)))
        return self._outcomes.pop(0) if self._outcomes else SendOutcome(False, None)

    def to(self, url_part: str) -> list[dict[str, Any]]:
        return [body for url, body in self.calls if url_part in url]


class Receiver:
    """A real HTTP receiver on a free 127.0.0.1 port: records JSON bodies (and each request's
    Authorization header), answers from a script of status codes (then 200), optionally after a
    delay; with ``echo``, an error answer quotes the request's path and query back, as some
    receivers do."""

    def __init__(self, statuses: list[int] | None = None, delay_s: float = 0.0, echo: bool = False) -> None:
        import http.server
        import json
        import threading

        self.statuses = list(statuses or [])
        self.delay_s = delay_s
        self.echo = echo
        self.received: list[tuple[str, Any]] = []
        self.authorization: list[str | None] = []
        self.answered: list[int] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                owner.received.append((self.path, body))
                owner.authorization.append(self.headers.get("authorization"))
                if owner.delay_s:
                    import time

                    time.sleep(owner.delay_s)
                status = owner.statuses.pop(0) if owner.statuses else 200
                owner.answered.append(status)
                echo = owner.echo and status >= 400
                answer = json.dumps({"error": f"no {self.path}"}).encode() if echo else b"{}"
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self, path: str | None = None) -> list[Any]:
        return [body for p, body in self.received if path is None or p == path]


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A port that refuses connections for as long as the block runs: bound and never listened on,
    so no other process (another test's server) can take it meanwhile, as it can a released one."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
