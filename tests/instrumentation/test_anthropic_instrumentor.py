"""Anthropic instrumentation with the real anthropic client against the local fake server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anthropic
import pytest
from opentelemetry.trace import SpanKind, StatusCode

import reach_otel
from reach_otel.instrumentation.anthropic import AnthropicInstrumentor
from reach_otel.testing.fake_llm import FakeLLMServer

MESSAGES = [{"role": "user", "content": "where is my invoice"}]


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def instrumented(rec) -> Iterator[None]:
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument()
    yield
    instrumentor.uninstrument()


def client(llm: FakeLLMServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=llm.anthropic_base_url, api_key="test", max_retries=0)


def test_messages_create_under_an_agent(rec, instrumented, llm) -> None:
    @reach_otel.agent(name="Support")
    def support() -> str:
        message = client(llm).messages.create(
            model="claude-test", max_tokens=64, messages=MESSAGES, system="be brief"
        )
        return message.content[0].text

    assert support() == "echo: where is my invoice"
    span = rec.one("chat claude-test")
    assert span.kind == SpanKind.CLIENT
    assert span.parent.span_id == rec.one("invoke_agent Support").context.span_id
    attrs = dict(span.attributes)
    assert attrs["gen_ai.provider.name"] == "anthropic"
    assert attrs["gen_ai.response.model"] == "claude-test"
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert attrs["gen_ai.usage.input_tokens"] == 6  # "be brief" + 4 words
    assert attrs["gen_ai.usage.output_tokens"] == 5
    assert attrs["gen_ai.request.max_tokens"] == 64
    assert rec.one("invoke_agent Support").attributes["gen_ai.usage.output_tokens"] == 5


def test_stream_sync_and_async_with_usage(rec, instrumented, llm) -> None:
    stream = client(llm).messages.create(model="claude-test", max_tokens=64, messages=MESSAGES, stream=True)
    kinds = [event.type for event in stream]
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"

    async def run() -> None:
        aclient = anthropic.AsyncAnthropic(base_url=llm.anthropic_base_url, api_key="test", max_retries=0)
        stream = await aclient.messages.create(
            model="claude-test", max_tokens=64, messages=MESSAGES, stream=True
        )
        async for _ in stream:
            pass

    asyncio.run(run())
    for span in rec.named("chat claude-test"):
        assert span.attributes["gen_ai.request.stream"] is True
        assert span.attributes["gen_ai.usage.input_tokens"] == 4
        assert span.attributes["gen_ai.usage.output_tokens"] == 5
        assert span.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert len(rec.named("chat claude-test")) == 2


def test_tool_use_and_errors(rec, instrumented, llm) -> None:
    message = client(llm).messages.create(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "[tool:lookup] x"}]
    )
    assert message.stop_reason == "tool_use"
    with pytest.raises(anthropic.RateLimitError):
        client(llm).messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "[error:429]"}]
        )
    ok, failed = rec.named("chat claude-test")
    assert ok.attributes["reach.llm.tool_calls_requested"] == ("lookup",)
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["error.type"] == "rate_limit_error"
