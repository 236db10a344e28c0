"""Captured content keeps tool calls as the GenAI conventions shape them: an assistant answer that
is a tool call is a ``tool_call`` part (never ``null``), earlier assistant tool calls stay in the
input messages, a tool message is the ``tool_call_response`` to its call id, Anthropic's
``tool_use`` / ``tool_result`` blocks read the same, a separate system prompt is parts, and the
tool definitions offered to the model are recorded — for OpenAI's and Anthropic's shapes, as dicts
and as SDK objects."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import openai
import pytest

from reach_otel.extractors import output_messages, system_instructions, to_messages
from reach_otel.instrumentation.openai import OpenAIInstrumentor
from reach_otel.testing.fake_llm import FakeLLMServer

CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "query_invoice", "arguments": '{"id": "INV-1"}'},
}
TOOL_PART = {"type": "tool_call", "id": "call_1", "name": "query_invoice", "arguments": {"id": "INV-1"}}


def test_an_answer_that_is_a_tool_call_is_a_tool_call_part() -> None:
    as_dict = {
        "choices": [{"message": {"content": None, "tool_calls": [CALL]}, "finish_reason": "tool_calls"}]
    }
    expected = [{"role": "assistant", "parts": [TOOL_PART], "finish_reason": "tool_calls"}]
    assert output_messages(as_dict) == expected
    function = NS(name="query_invoice", arguments='{"id": "INV-1"}')
    message = NS(content=None, tool_calls=[NS(id="call_1", function=function)])
    assert output_messages(NS(choices=[NS(message=message, finish_reason="tool_calls")])) == expected
    # Arguments that are not JSON are kept as the model wrote them.
    broken = {**CALL, "function": {"name": "f", "arguments": "{not json"}}
    reply = {"choices": [{"message": {"content": "one moment", "tool_calls": [broken]}}]}
    (parts,) = [m["parts"] for m in output_messages(reply) or []]
    assert parts == [
        {"type": "text", "content": "one moment"},
        {**TOOL_PART, "name": "f", "arguments": "{not json"},
    ]


def test_earlier_tool_calls_and_tool_messages_keep_their_ids() -> None:
    history = [
        {"role": "system", "content": "You are billing."},
        {"role": "user", "content": [{"type": "text", "text": "where is INV-1?"}]},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "paid"}'},
    ]
    assert to_messages(history, "user") == [
        {"role": "system", "parts": [{"type": "text", "content": "You are billing."}]},
        {"role": "user", "parts": [{"type": "text", "content": "where is INV-1?"}]},
        {"role": "assistant", "parts": [TOOL_PART]},
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_1", "response": '{"status": "paid"}'}],
        },
    ]


def test_anthropic_tool_use_and_tool_result_blocks() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "query_invoice", "input": {"id": "INV-1"}}
    result = NS(content=[NS(type="text", text="Let me look."), NS(**use)], stop_reason="tool_use")
    assert output_messages(result) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Let me look."},
                {"type": "tool_call", "id": "toolu_1", "name": "query_invoice", "arguments": {"id": "INV-1"}},
            ],
            "finish_reason": "tool_use",
        }
    ]
    answer = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "paid"}],
    }
    assert to_messages([answer], "user") == [
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "toolu_1", "response": "paid"}]}
    ]
    assert system_instructions("Be brief.") == [{"type": "text", "content": "Be brief."}]
    assert system_instructions([{"type": "text", "text": "Be brief."}]) == [
        {"type": "text", "content": "Be brief."}
    ]
    assert system_instructions(None) is None


@pytest.fixture(scope="module")
def llm() -> Any:
    with FakeLLMServer() as server:
        yield server


def test_a_real_openai_call_records_its_tool_call_tools_and_history(make_recorder: Any, llm: Any) -> None:
    rec = make_recorder(capture_content=True)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument()
    try:
        client = openai.OpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)
        tools = [
            {"type": "function", "function": {"name": "query_invoice", "parameters": {"type": "object"}}}
        ]
        history = [
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "paid"},
            {"role": "user", "content": "[tool:query_invoice] and INV-2?"},
        ]
        client.chat.completions.create(model="gpt-test", messages=history, tools=tools)  # type: ignore[arg-type]
    finally:
        instrumentor.uninstrument()
    attributes = rec.one("chat gpt-test").attributes
    (answer,) = json.loads(attributes["gen_ai.output.messages"])
    assert answer["finish_reason"] == "tool_calls"
    assert [(p["type"], p["name"]) for p in answer["parts"]] == [("tool_call", "query_invoice")]
    sent = json.loads(attributes["gen_ai.input.messages"])
    assert sent[0]["parts"] == [TOOL_PART]
    assert sent[1]["parts"] == [{"type": "tool_call_response", "id": "call_1", "response": "paid"}]
    assert json.loads(attributes["gen_ai.tool.definitions"]) == tools


def _streamed_call(attributes: Any) -> list[Any]:
    (answer,) = json.loads(attributes["gen_ai.output.messages"])
    assert answer["role"] == "assistant"
    return [(p["type"], p["name"], p["arguments"]) for p in answer["parts"]]


def test_a_streamed_answer_that_is_a_tool_call_keeps_the_call_whole(make_recorder: Any, llm: Any) -> None:
    """Streamed tool calls arrive in pieces (the id and name once, the arguments in fragments):
    folded into one ``tool_call`` part with its arguments read as JSON, for OpenAI's chat
    completions and responses streams and Anthropic's message stream."""
    import anthropic

    from reach_otel.instrumentation.anthropic import AnthropicInstrumentor

    rec = make_recorder(capture_content=True)
    instrumentors = [OpenAIInstrumentor(), AnthropicInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument()
    question = "[tool:query_invoice] [arg:id=INV-7] which invoice?"
    try:
        client = openai.OpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)
        for _ in client.chat.completions.create(
            model="gpt-chat", messages=[{"role": "user", "content": question}], stream=True
        ):
            pass
        for _ in client.responses.create(model="gpt-responses", input=question, stream=True):
            pass
        claude = anthropic.Anthropic(base_url=llm.anthropic_base_url, api_key="test", max_retries=0)
        for _ in claude.messages.create(
            model="claude-test", max_tokens=50, messages=[{"role": "user", "content": question}], stream=True
        ):
            pass
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    for model in ("gpt-chat", "gpt-responses", "claude-test"):
        assert _streamed_call(rec.one(f"chat {model}").attributes) == [
            ("tool_call", "query_invoice", {"id": "INV-7"})
        ], model
