"""``heartbeat(agent_id, every=30)``: tell the collector an agent is alive, from a daemon thread.

Beats are ``POST {collector}/api/heartbeats {agent_id, endpoint?, capabilities?}`` with the OTLP
headers (so an ingest token applies). A collector that is down or slow costs the app nothing:
the thread logs at DEBUG and tries again at the next beat.

A clean end deregisters: ``stop()``, and the interpreter's exit (also on ``sys.exit`` and Ctrl-C),
send one last ``{agent_id, status: "stopped"}`` so a normal shutdown never fires P2. A crash does
not: a process killed (``kill -9``, or a signal it has no handler for) or ended by an uncaught
exception sends nothing, and its heartbeat is reported lost.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
import urllib.request
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY

from reach_otel._safety import logger
from reach_otel.config import DEFAULT_HTTP_ENDPOINT, TRACES_PATH
from reach_otel.handler import get_handler

HEARTBEATS_PATH = "/api/heartbeats"
STATUS_STOPPED = "stopped"
EXIT_TIMEOUT_S = 2.0  # the most the deregistering beats add to the app's exit

_running: set[Heartbeat] = set()
_running_lock = threading.Lock()
_exit_hook_registered = False


def collector_url(explicit: str | None = None) -> str:
    """The collector base URL: explicit, ``REACH_OTEL_URL``, the OTLP/HTTP endpoint base, or the default."""
    if explicit:
        return explicit.rstrip("/")
    if os.environ.get("REACH_OTEL_URL"):
        return os.environ["REACH_OTEL_URL"].rstrip("/")
    settings = get_handler().settings
    if settings.protocol == "http/protobuf" and settings.endpoint.endswith(TRACES_PATH):
        return settings.endpoint[: -len(TRACES_PATH)]
    return DEFAULT_HTTP_ENDPOINT


class Heartbeat:
    """A running heartbeat; ``stop()`` ends it (and deregisters). ``sent`` and ``failed`` count the beats."""

    def __init__(
        self,
        agent_id: str,
        every: float,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
        timeout: float,
    ) -> None:
        self.agent_id = agent_id
        self.every = every
        self.url = url
        self.sent = 0
        self.failed = 0
        self.deregistered = False
        self._request_headers = {"content-type": "application/json", **headers}
        self._body = json.dumps(body).encode("utf-8")
        self._timeout = timeout
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"reach-otel-heartbeat-{agent_id}", daemon=True
        )
        with _running_lock:
            _running.add(self)
        _register_exit_hook()
        self._thread.start()

    def _beat(self, body: bytes, timeout: float) -> bool:
        request = urllib.request.Request(self.url, body, self._request_headers, method="POST")
        token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read()
            self.sent += 1
            return True
        except Exception as exc:  # the collector being away must never reach the app
            self.failed += 1
            logger.debug("reach_otel: heartbeat for %s to %s failed: %s", self.agent_id, self.url, exc)
            return False
        finally:
            otel_context.detach(token)

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._beat(self._body, self._timeout)
            self._stopped.wait(self.every)

    def stop(self, timeout: float = 5.0, *, deregister: bool = True) -> None:
        """Stop beating; with ``deregister`` (the default) tell the collector the agent stopped."""
        deadline = time.monotonic() + timeout
        with _running_lock:
            first = self in _running
            _running.discard(self)
        self._stopped.set()
        self._thread.join(timeout)
        if first and deregister:
            body = json.dumps({"agent_id": self.agent_id, "status": STATUS_STOPPED}).encode("utf-8")
            remaining = max(deadline - time.monotonic(), 0.05)
            self.deregistered = self._beat(body, min(self._timeout, remaining))

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


def _crashed() -> bool:
    """At exit: did an uncaught exception (other than Ctrl-C) end the program?"""
    last = getattr(sys, "last_type", None)  # set by the interpreter before atexit runs
    return last is not None and not issubclass(last, KeyboardInterrupt)


def _stop_all_at_exit() -> None:
    with _running_lock:
        beats = list(_running)
    if not beats:
        return
    deregister = not _crashed()
    deadline = time.monotonic() + EXIT_TIMEOUT_S
    for beat in beats:
        try:
            beat.stop(max(deadline - time.monotonic(), 0.05), deregister=deregister)
        except Exception:  # exit must go on
            logger.debug("reach_otel: stopping the heartbeat of %s failed", beat.agent_id, exc_info=True)


def _register_exit_hook() -> None:
    global _exit_hook_registered
    with _running_lock:
        if _exit_hook_registered:
            return
        _exit_hook_registered = True
    atexit.register(_stop_all_at_exit)


def heartbeat(
    agent_id: str,
    every: float = 30.0,
    *,
    collector: str | None = None,
    endpoint: str | None = None,
    capabilities: list[str] | None = None,
    timeout: float = 5.0,
) -> Heartbeat | None:
    """Start beating for ``agent_id`` every ``every`` seconds (the first beat goes now)."""
    try:
        body: dict[str, Any] = {"agent_id": str(agent_id)}
        if endpoint:
            body["endpoint"] = endpoint
        if capabilities:
            body["capabilities"] = list(capabilities)
        headers = dict(get_handler().settings.headers)
        url = collector_url(collector) + HEARTBEATS_PATH
        return Heartbeat(str(agent_id), max(float(every), 0.01), url, headers, body, timeout)
    except Exception:  # telemetry must never raise into user code
        logger.debug("reach_otel: heartbeat(%r) could not start", agent_id, exc_info=True)
        return None
