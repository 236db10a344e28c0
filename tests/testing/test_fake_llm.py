"""The fake LLM server, driven by the real openai and anthropic clients (no instrumentation)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from reach_otel.testing import FakeLLMServer
from reach_otel.testing._fake_script import anthropic_items, chat_items, plan_reply, responses_items

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def oai(llm: FakeLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)


@pytest.fixture
def claude(llm: FakeLLMServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=llm.anthropic_base_url, api_key="test", max_retries=0)


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


# -- the script, without HTTP ---------------------------------------------------------------------
def test_plan_counts_words_and_echoes_without_directives() -> None:
    reply = plan_reply(
        chat_items({"messages": [{"role": "system", "content": "be brief"}, *user("a b [chunks:2] c")]})
    )
    assert reply.text == "echo: a b c"
    assert (reply.input_tokens, reply.output_tokens) == (6, 4)  # the directive is one word
    assert reply.text_chunks() == ["echo: ", "a b c"]


def test_plan_requests_tools_in_order_then_echoes_the_last_result() -> None:
    asked = [{"role": "user", "content": "[tool:a][tool:b] find x"}]
    first = plan_reply(chat_items({"messages": asked}))
    assert (first.tool_name, json.loads(first.tool_arguments)) == ("a", {"query": "find x"})
    after_a = [*asked, {"role": "assistant", "tool_calls": []}, {"role": "tool", "content": "A done"}]
    assert plan_reply(chat_items({"messages": after_a})).tool_name == "b"
    after_b = [*after_a, {"role": "tool", "content": "B done"}]
    assert plan_reply(chat_items({"messages": after_b})).text == "echo: B done"


def test_plan_gives_a_tool_call_the_arguments_its_arg_directives_name() -> None:
    text = "[tool:ask][arg:who=Senior%20Researcher][arg:q=why%20%5Btool:x%5D%3F] [tool:b] do it"
    asked = [{"role": "user", "content": text}]
    first = plan_reply(chat_items({"messages": asked}))
    assert (first.tool_name, json.loads(first.tool_arguments)) == (
        "ask",
        {"who": "Senior Researcher", "q": "why [tool:x]?"},
    )
    after = [*asked, {"role": "tool", "content": "done"}]
    second = plan_reply(chat_items({"messages": after}))
    assert (second.tool_name, json.loads(second.tool_arguments)) == ("b", {"query": "do it"})


def test_items_of_each_api_shape() -> None:
    responses = {
        "instructions": "sys",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "q [tool:t]"}]},
            {"type": "function_call", "call_id": "c", "name": "t", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "42"},
        ],
    }
    assert list(responses_items(responses)) == [
        ("system", "sys"),
        ("user", "q [tool:t]"),
        ("assistant", "{}"),
        ("tool", "42"),
    ]
    messages = {
        "system": [{"type": "text", "text": "sys"}],
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {"a": 1}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
        ],
    }
    assert list(anthropic_items(messages))[-1] == ("tool", "ok")
    assert plan_reply(anthropic_items(messages)).text == "echo: ok"


# -- OpenAI chat completions --------------------------------------------------------------------
def test_chat_completion(oai: openai.OpenAI, llm: FakeLLMServer) -> None:
    result = oai.chat.completions.create(model="gpt-test", messages=user("hello there"), temperature=0.2)
    assert result.choices[0].message.content == "echo: hello there"
    assert result.choices[0].finish_reason == "stop"
    assert result.model == "gpt-test" and result.id.startswith("chatcmpl-fake-")
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (2, 3)
    seen = llm.requests[-1]
    assert (seen.method, seen.path, seen.body["temperature"]) == ("POST", "/v1/chat/completions", 0.2)
    assert seen.headers["authorization"] == "Bearer test"


def test_chat_stream_with_and_without_usage(oai: openai.OpenAI) -> None:
    chunks = list(oai.chat.completions.create(model="m", messages=user("one two [chunks:4]"), stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "echo: one two"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 4
    assert chunks[-1].choices[0].finish_reason == "stop" and all(c.usage is None for c in chunks)

    with_usage = list(
        oai.chat.completions.create(
            model="m", messages=user("one two"), stream=True, stream_options={"include_usage": True}
        )
    )
    assert with_usage[-1].choices == []
    assert (with_usage[-1].usage.prompt_tokens, with_usage[-1].usage.completion_tokens) == (2, 3)


def test_chat_tool_call_sync_and_stream(oai: openai.OpenAI) -> None:
    result = oai.chat.completions.create(model="m", messages=user("weather in Paris [tool:get_weather]"))
    call = result.choices[0].message.tool_calls[0]
    assert result.choices[0].finish_reason == "tool_calls"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"query": "weather in Paris"},
    )

    chunks = list(oai.chat.completions.create(model="m", messages=user("x [tool:lookup]"), stream=True))
    args = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments for c in chunks if c.choices[0].delta.tool_calls
    )
    assert chunks[0].choices[0].delta.tool_calls[0].function.name == "lookup"
    assert json.loads(args) == {"query": "x"} and chunks[-1].choices[0].finish_reason == "tool_calls"


def test_chat_async_and_async_stream(llm: FakeLLMServer) -> None:
    async def run() -> tuple[str | None, str]:
        client = openai.AsyncOpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)
        result = await client.chat.completions.create(model="m", messages=user("async hi"))
        stream = await client.chat.completions.create(model="m", messages=user("async stream"), stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream])
        await client.close()
        return result.choices[0].message.content, text

    assert asyncio.run(run()) == ("echo: async hi", "echo: async stream")


@pytest.mark.parametrize(
    ("directive", "error", "code"),
    [
        ("[error:429]", openai.RateLimitError, "rate_limit_exceeded"),
        ("[error:500]", openai.InternalServerError, None),
    ],
)
def test_openai_errors(
    oai: openai.OpenAI, directive: str, error: type[openai.APIStatusError], code: str | None
) -> None:
    with pytest.raises(error) as raised:
        oai.chat.completions.create(model="m", messages=user(f"boom {directive}"))
    assert raised.value.code == code
    with pytest.raises(error):
        oai.responses.create(model="m", input=f"boom {directive}")
    with pytest.raises(error):
        list(oai.chat.completions.create(model="m", messages=user(directive), stream=True))


def test_slow_directive_delays_the_answer(oai: openai.OpenAI) -> None:
    started = time.monotonic()
    oai.chat.completions.create(model="m", messages=user("wait [slow:150]"))
    assert time.monotonic() - started >= 0.15


def test_models_for_both_sdks(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    assert [m.id for m in oai.models.list().data] == ["fake-model"]
    assert [m.id for m in claude.models.list().data] == ["fake-model"]


# -- OpenAI responses -----------------------------------------------------------------------------
def test_responses_text_and_tool_call(oai: openai.OpenAI) -> None:
    result = oai.responses.create(model="gpt-r", instructions="be kind", input="good morning")
    assert result.output_text == "echo: good morning" and result.model == "gpt-r"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (4, 3)
    called = oai.responses.create(model="gpt-r", input=[{"role": "user", "content": "q [tool:search]"}])
    item = called.output[0]
    assert (item.type, item.name, json.loads(item.arguments)) == ("function_call", "search", {"query": "q"})


def test_responses_stream(oai: openai.OpenAI) -> None:
    events = list(oai.responses.create(model="gpt-r", input="a b c [chunks:2]", stream=True))
    types = [e.type for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "echo: a b c"
    assert events[-1].response.usage.output_tokens == 4
    with oai.responses.stream(model="gpt-r", input="x [tool:t]") as stream:
        final = stream.get_final_response()
    assert final.output[0].name == "t"


# -- Anthropic --------------------------------------------------------------------------------------
def test_anthropic_message_and_tool_use(claude: anthropic.Anthropic) -> None:
    message = claude.messages.create(model="claude-x", max_tokens=50, system="sys", messages=user("hi you"))
    assert message.content[0].text == "echo: hi you" and message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens, message.model) == (3, 3, "claude-x")
    tool = claude.messages.create(model="claude-x", max_tokens=50, messages=user("plan [tool:calc]"))
    assert tool.stop_reason == "tool_use"
    assert (tool.content[0].name, tool.content[0].input) == ("calc", {"query": "plan"})


def test_anthropic_stream_events_and_usage(claude: anthropic.Anthropic) -> None:
    events = list(
        claude.messages.create(model="c", max_tokens=50, messages=user("one two three"), stream=True)
    )
    types = [e.type for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert events[0].message.usage.input_tokens == 3
    assert events[-2].usage.output_tokens == 4
    with claude.messages.stream(model="c", max_tokens=50, messages=user("q [tool:calc]")) as stream:
        final = stream.get_final_message()
    assert final.content[0].input == {"query": "q"} and final.stop_reason == "tool_use"


def test_anthropic_async_stream(llm: FakeLLMServer) -> None:
    async def run() -> str:
        client = anthropic.AsyncAnthropic(base_url=llm.anthropic_base_url, api_key="test", max_retries=0)
        async with client.messages.stream(
            model="c", max_tokens=9, messages=user("async [chunks:3]")
        ) as stream:
            text = "".join([t async for t in stream.text_stream])
        await client.close()
        return text

    assert asyncio.run(run()) == "echo: async"


@pytest.mark.parametrize(
    ("directive", "error", "kind"),
    [
        ("[error:429]", anthropic.RateLimitError, "rate_limit_error"),
        ("[error:500]", anthropic.InternalServerError, "api_error"),
    ],
)
def test_anthropic_errors(
    claude: anthropic.Anthropic, directive: str, error: type[anthropic.APIStatusError], kind: str
) -> None:
    with pytest.raises(error) as raised:
        claude.messages.create(model="c", max_tokens=5, messages=user(directive))
    assert raised.value.status_code == int(directive[7:10])
    assert raised.value.body["error"]["type"] == kind


# -- the runnable wrapper ---------------------------------------------------------------------------
def test_example_server_prints_where_it_listens() -> None:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "fake_llm_server.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("fake LLM listening on http://127.0.0.1:")
        url = line.split()[-1]
        client = openai.OpenAI(base_url=url + "/v1", api_key="test", max_retries=0)
        assert (
            client.chat.completions.create(model="m", messages=user("ping")).choices[0].message.content
            == "echo: ping"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
