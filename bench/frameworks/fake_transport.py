"""The fake LLM as an httpx transport: OpenAI-compatible answers computed in process, no socket.

It is reach_otel's fake LLM server (:class:`reach_otel.testing.fake_llm.FakeLLMServer`) without the
HTTP server: its ``answer()`` routes the request and scripts the reply from the same directives, so
the model's answers are those the tests see, and network noise is out of the measurement.
"""

from __future__ import annotations

import json

import httpx

from reach_otel.testing.fake_llm import FakeLLMServer

BASE_URL = "http://fake-llm.invalid/v1"


#: The system prompt of every chat request answered while a list is set here (a probe's ground truth).
SYSTEM_PROMPTS: list[list[str]] = []


def _handle(server: FakeLLMServer, request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content) if request.content else None
    for log in SYSTEM_PROMPTS:
        messages = body.get("messages", []) if isinstance(body, dict) else []
        log.append(next((str(m.get("content")) for m in messages if m.get("role") == "system"), ""))
    answer = server.answer(request.method, request.url.path, request.headers, body)
    if answer.events is not None:
        raise ValueError("the in-process fake LLM answers without streaming")
    return httpx.Response(answer.status, json=answer.body, headers={"x-request-id": server.next_request_id()})


def transport() -> httpx.MockTransport:
    server = FakeLLMServer()
    return httpx.MockTransport(lambda request: _handle(server, request))


def client() -> httpx.Client:
    return httpx.Client(transport=transport())
