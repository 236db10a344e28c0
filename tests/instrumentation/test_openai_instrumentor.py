"""OpenAI instrumentation with the real openai client against the local fake server."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import openai
import pytest
from opentelemetry.trace import SpanKind, StatusCode

import reach_otel
from reach_otel.instrumentation.openai import OpenAIInstrumentor
from reach_otel.testing.fake_llm import FakeLLMServer

MESSAGES = [{"role": "user", "content": "where is my invoice"}]  # 4 words in, "echo: ..." 5 out


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def instrumented(rec) -> Iterator[OpenAIInstrumentor]:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument()
    yield instrumentor
    instrumentor.uninstrument()


def client(llm: FakeLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)


def aclient(llm: FakeLLMServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)


def test_chat_completion_span_nests_under_agent(rec, instrumented, llm) -> None:
    @reach_otel.agent(name="Billing")
    def billing() -> str:
        reply = client(llm).chat.completions.create(model="gpt-test", messages=MESSAGES, max_tokens=50)
        return reply.choices[0].message.content or ""

    assert billing() == "echo: where is my invoice"
    span = rec.one("chat gpt-test")
    agent = rec.one("invoke_agent Billing")
    assert span.kind == SpanKind.CLIENT
    assert span.parent.span_id == agent.context.span_id
    attrs = dict(span.attributes)
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-test"
    assert attrs["gen_ai.response.model"] == "gpt-test"
    assert attrs["gen_ai.response.id"].startswith("chatcmpl-")
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.usage.input_tokens"] == 4
    assert attrs["gen_ai.usage.output_tokens"] == 5
    assert attrs["gen_ai.request.max_tokens"] == 50
    assert attrs["gen_ai.request.stream"] is False
    assert attrs["server.address"] == "127.0.0.1"
    assert attrs["server.port"] == int(llm.url.rsplit(":", 1)[1])
    assert attrs["reach.agent.name"] == "Billing"
    assert agent.attributes["gen_ai.usage.input_tokens"] == 4
    assert agent.attributes["reach.agent.llm_calls"] == 1


def test_async_chat_completion(rec, instrumented, llm) -> None:
    async def run() -> str:
        reply = await aclient(llm).chat.completions.create(model="gpt-test", messages=MESSAGES)
        return reply.choices[0].message.content or ""

    assert asyncio.run(run()) == "echo: where is my invoice"
    assert rec.one("chat gpt-test").attributes["gen_ai.usage.output_tokens"] == 5


def test_stream_ends_once_with_usage_from_final_chunk(rec, instrumented, llm) -> None:
    stream = client(llm).chat.completions.create(
        model="gpt-test", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "echo: where is my invoice"
    span = rec.one("chat gpt-test")
    assert span.attributes["gen_ai.request.stream"] is True
    assert span.attributes["gen_ai.usage.input_tokens"] == 4
    assert span.attributes["gen_ai.usage.output_tokens"] == 5
    assert span.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert span.attributes["gen_ai.response.time_to_first_chunk"] > 0
    stream.close()  # closing after exhaustion must not end the span twice
    assert len(rec.named("chat gpt-test")) == 1


def test_stream_as_context_manager_and_closed_early(rec, instrumented, llm) -> None:
    with client(llm).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "[chunks:6] a b c d e f"}], stream=True
    ) as stream:
        next(iter(stream))
    span = rec.one("chat gpt-test")
    assert span.status.status_code == StatusCode.UNSET
    assert span.end_time is not None


def test_abandoned_stream_ends_its_span_when_collected(rec, instrumented, llm) -> None:
    stream = client(llm).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "[chunks:6] a b c d e f"}], stream=True
    )
    next(stream)
    assert rec.named("chat gpt-test") == []
    stream.response.close()
    del stream
    gc.collect()
    assert len(rec.named("chat gpt-test")) == 1


def test_async_stream(rec, instrumented, llm) -> None:
    async def run() -> str:
        stream = await aclient(llm).chat.completions.create(
            model="gpt-test", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        return "".join(parts)

    assert asyncio.run(run()) == "echo: where is my invoice"
    assert rec.one("chat gpt-test").attributes["gen_ai.usage.output_tokens"] == 5


def test_tool_calls_requested_are_recorded(rec, instrumented, llm) -> None:
    reply = client(llm).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "[tool:query_invoice] INV-1"}]
    )
    assert reply.choices[0].message.tool_calls[0].function.name == "query_invoice"
    span = rec.one("chat gpt-test")
    assert span.attributes["reach.llm.tool_calls_requested"] == ("query_invoice",)
    assert span.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_streamed_tool_calls_are_recorded(rec, instrumented, llm) -> None:
    stream = client(llm).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "[tool:refund] now"}], stream=True
    )
    list(stream)
    assert rec.one("chat gpt-test").attributes["reach.llm.tool_calls_requested"] == ("refund",)


def test_provider_error_code_becomes_error_type(rec, instrumented, llm) -> None:
    with pytest.raises(openai.RateLimitError) as info:
        client(llm).chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "[error:429]"}]
        )
    assert info.value.status_code == 429
    span = rec.one("chat gpt-test")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"] == "rate_limit_exceeded"


def test_server_error_without_code_uses_the_class_name(rec, instrumented, llm) -> None:
    with pytest.raises(openai.InternalServerError):
        client(llm).chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "[error:500]"}]
        )
    assert rec.one("chat gpt-test").attributes["error.type"].endswith("InternalServerError")


def test_responses_api_sync_and_stream(rec, instrumented, llm) -> None:
    c = client(llm)
    response = c.responses.create(model="gpt-resp", input="where is my invoice", instructions="be brief")
    assert response.output_text == "echo: where is my invoice"
    events = list(c.responses.create(model="gpt-resp", input="where is my invoice", stream=True))
    assert events[-1].type == "response.completed"
    first, second = rec.named("chat gpt-resp")
    for span in (first, second):
        assert span.attributes["gen_ai.response.model"] == "gpt-resp"
        assert span.attributes["gen_ai.usage.output_tokens"] == 5
    assert second.attributes["gen_ai.request.stream"] is True


def test_include_usage_is_added_only_when_opted_in(rec, llm) -> None:
    instrumentor = OpenAIInstrumentor()
    for opted_in in (False, True):
        instrumentor.instrument(include_usage=opted_in)
        try:
            list(client(llm).chat.completions.create(model="gpt-test", messages=MESSAGES, stream=True))
        finally:
            instrumentor.uninstrument()
        sent = llm.requests[-1].body
        assert ("stream_options" in sent) is opted_in
    without, with_usage = rec.named("chat gpt-test")
    assert "gen_ai.usage.input_tokens" not in without.attributes
    assert with_usage.attributes["gen_ai.usage.input_tokens"] == 4


def test_instrument_uninstrument_instrument(rec, llm) -> None:
    instrumentor = OpenAIInstrumentor()
    c = client(llm)
    instrumentor.instrument()
    instrumentor.instrument()  # idempotent: no second wrapper
    c.chat.completions.create(model="a", messages=MESSAGES)
    instrumentor.uninstrument()
    c.chat.completions.create(model="b", messages=MESSAGES)
    instrumentor.instrument()
    try:
        c.chat.completions.create(model="c", messages=MESSAGES)
    finally:
        instrumentor.uninstrument()
    assert [s.name for s in rec.spans] == ["chat a", "chat c"]


def test_no_double_span_inside_a_reach_llm_span(rec, instrumented, llm) -> None:
    @reach_otel.llm(model="gpt-test", provider="openai")
    def ask() -> object:
        return client(llm).chat.completions.create(model="gpt-test", messages=MESSAGES)

    ask()
    assert len(rec.named("chat gpt-test")) == 1
    assert rec.one("chat gpt-test").attributes["gen_ai.usage.input_tokens"] == 4


def test_content_capture_records_messages(make_recorder, llm) -> None:
    rec = make_recorder(capture_content=True)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument()
    try:
        client(llm).chat.completions.create(model="gpt-test", messages=MESSAGES)
    finally:
        instrumentor.uninstrument()
    span = rec.one("chat gpt-test")
    assert "where is my invoice" in span.attributes["gen_ai.input.messages"]
    assert "echo: where is my invoice" in span.attributes["gen_ai.output.messages"]


def test_explicit_tracer_provider_is_honoured(rec, llm) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    own = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(own))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client(llm).chat.completions.create(model="gpt-own", messages=MESSAGES)
    finally:
        instrumentor.uninstrument()
    assert [s.name for s in own.get_finished_spans()] == ["chat gpt-own"]
    assert rec.spans == []


def test_the_sdk_transport_carries_the_trace_to_the_server(rec, instrumented, llm) -> None:
    """httpx2 (the client's own transport) injects traceparent for the chat span, with no extra span."""
    from reach_otel.instrumentation.httpx import HTTPXInstrumentor

    http = HTTPXInstrumentor()
    http.instrument()
    try:
        client(llm).chat.completions.create(model="gpt-test", messages=MESSAGES)
    finally:
        http.uninstrument()
    span = rec.one("chat gpt-test")
    traceparent = llm.requests[-1].headers["traceparent"]
    assert traceparent.split("-")[1] == format(span.context.trace_id, "032x")
    assert traceparent.split("-")[2] == format(span.context.span_id, "016x")
    assert len(rec.spans) == 1  # no HTTP span under the LLM span
