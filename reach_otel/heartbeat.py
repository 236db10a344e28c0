"""``heartbeat(agent_id, every=30)``: tell the collector an agent is alive, from a daemon thread.

Beats are ``POST {collector}/api/heartbeats {agent_id, endpoint?, capabilities?}`` with the OTLP
headers (so an ingest token applies). A collector that is down or slow costs the app nothing:
the thread logs at DEBUG and tries again at the next beat.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY

from reach_otel._safety import logger
from reach_otel.config import DEFAULT_HTTP_ENDPOINT, TRACES_PATH
from reach_otel.handler import get_handler

HEARTBEATS_PATH = "/api/heartbeats"


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
    """A running heartbeat; ``stop()`` ends it. ``sent`` and ``failed`` count the beats."""

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
        self._request_headers = {"content-type": "application/json", **headers}
        self._body = json.dumps(body).encode("utf-8")
        self._timeout = timeout
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"reach-otel-heartbeat-{agent_id}", daemon=True
        )
        self._thread.start()

    def _beat(self) -> None:
        request = urllib.request.Request(self.url, self._body, self._request_headers, method="POST")
        token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                response.read()
            self.sent += 1
        except Exception as exc:  # the collector being away must never reach the app
            self.failed += 1
            logger.debug("reach_otel: heartbeat for %s to %s failed: %s", self.agent_id, self.url, exc)
        finally:
            otel_context.detach(token)

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._beat()
            self._stopped.wait(self.every)

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


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
