"""A local fake LLM HTTP server speaking the OpenAI and Anthropic wire formats (stdlib only).

``FakeLLMServer`` runs a threading HTTP/1.1 server in a daemon thread. Endpoints:
``POST /v1/chat/completions``, ``POST /v1/responses``, ``POST /v1/messages`` (JSON or SSE when
``stream`` is true) and ``GET /v1/models``. Replies are deterministic, driven by directives in the
last user message (see :mod:`reach_otel.testing._fake_script`)::

    with FakeLLMServer() as llm:
        client = openai.OpenAI(base_url=llm.openai_base_url, api_key="test")
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        llm.requests[-1].body["model"]   # == "m"
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from reach_otel.testing import _fake_anthropic as anthropic_wire
from reach_otel.testing import _fake_openai as openai_wire
from reach_otel.testing._fake_openai import SSE
from reach_otel.testing._fake_script import (
    DEFAULT_MODEL,
    Reply,
    anthropic_items,
    chat_items,
    plan_reply,
    responses_items,
)

__all__ = ["FakeLLMServer", "RecordedRequest"]

_STREAM_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-stream (an abandoned stream) is normal here, not an error to print."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (*_STREAM_ERRORS, TimeoutError)):
            super().handle_error(request, client_address)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: method, path, headers (lower-case keys), JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class _Answer:
    status: int
    body: Any = None
    events: SSE | None = None


class FakeLLMServer:
    """The fake LLM: ``start()``/``stop()`` or a context manager; ``url`` once started."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        chunk_delay_s: float = 0.0,
        models: tuple[str, ...] = (DEFAULT_MODEL,),
    ) -> None:
        self.host = host
        self.port = port
        self.chunk_delay_s = chunk_delay_s
        self.models = list(models)
        self.requests: list[RecordedRequest] = []
        # itertools.count is atomic under the GIL: handler threads can draw ids without a lock.
        self._ids = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        if self._server is not None:
            return self
        server = _QuietServer((self.host, self.port), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def clear(self) -> None:
        self.requests.clear()

    # -- answering -----------------------------------------------------------------------------
    def next_id(self) -> int:
        return next(self._ids)

    def next_request_id(self) -> str:
        return f"req_fake_{next(self._request_ids)}"

    def answer(self, method: str, path: str, headers: Mapping[str, str], body: Any) -> _Answer:
        """Route one request to its answer (pure apart from the id counter and ``[slow:MS]``)."""
        anthropic = "anthropic-version" in headers
        if method == "GET":
            if path == "/v1/models":
                wire = anthropic_wire if anthropic else openai_wire
                return _Answer(200, wire.models_body(self.models))
            return _Answer(404, openai_wire.error_body(404))
        routes: dict[str, Callable[[Mapping[str, Any]], _Answer]] = {
            "/v1/chat/completions": self._chat,
            "/v1/responses": self._responses,
            "/v1/messages": self._messages,
        }
        route = routes.get(path)
        if route is None:
            wire = anthropic_wire if anthropic else openai_wire
            return _Answer(404, wire.error_body(404))
        if not isinstance(body, Mapping):
            wire = anthropic_wire if path == "/v1/messages" else openai_wire
            return _Answer(400, wire.error_body(400))
        return route(body)

    def _planned(self, reply: Reply) -> None:
        if reply.slow_ms:
            time.sleep(reply.slow_ms / 1000)

    def _chat(self, body: Mapping[str, Any]) -> _Answer:
        reply = plan_reply(chat_items(body))
        self._planned(reply)
        if reply.error_status is not None:
            return _Answer(reply.error_status, openai_wire.error_body(reply.error_status))
        model, n = str(body.get("model") or DEFAULT_MODEL), self.next_id()
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return _Answer(200, events=openai_wire.chat_chunks(reply, model, n, include_usage))
        return _Answer(200, openai_wire.chat_completion(reply, model, n))

    def _responses(self, body: Mapping[str, Any]) -> _Answer:
        reply = plan_reply(responses_items(body))
        self._planned(reply)
        if reply.error_status is not None:
            return _Answer(reply.error_status, openai_wire.error_body(reply.error_status))
        model, n = str(body.get("model") or DEFAULT_MODEL), self.next_id()
        if body.get("stream"):
            return _Answer(200, events=openai_wire.response_events(reply, body, model, n))
        return _Answer(200, openai_wire.response_object(reply, body, model, n))

    def _messages(self, body: Mapping[str, Any]) -> _Answer:
        reply = plan_reply(anthropic_items(body))
        self._planned(reply)
        if reply.error_status is not None:
            return _Answer(reply.error_status, anthropic_wire.error_body(reply.error_status))
        model, n = str(body.get("model") or DEFAULT_MODEL), self.next_id()
        if body.get("stream"):
            return _Answer(200, events=anthropic_wire.message_events(reply, model, n))
        return _Answer(200, anthropic_wire.message(reply, model, n))


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: JSON has content-length, SSE is chunked
        timeout = 60  # an idle keep-alive connection is dropped after this many seconds
        server_version = "fake-llm/1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet by default
            pass

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            path = urlsplit(self.path).path
            server.requests.append(RecordedRequest(self.command, path, headers, body))
            answer = server.answer(self.command, path, headers, body)
            request_id = server.next_request_id()
            if answer.events is None:
                self._send_json(answer.status, answer.body, request_id)
            else:
                self._send_sse(answer.events, request_id)

        def _send_json(self, status: int, body: Any, request_id: str) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("x-request-id", request_id)
            self.send_header("request-id", request_id)
            self.end_headers()
            self.wfile.write(data)

        def _send_sse(self, events: SSE, request_id: str) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("x-request-id", request_id)
            self.send_header("request-id", request_id)
            self.end_headers()
            try:
                for i, (event, payload) in enumerate(events):
                    if i and server.chunk_delay_s:
                        time.sleep(server.chunk_delay_s)
                    data = payload if isinstance(payload, str) else json.dumps(payload)
                    text = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
                    self._chunk(text.encode())
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except _STREAM_ERRORS:  # the client abandoned the stream: drop the connection
                self.close_connection = True

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    return Handler
