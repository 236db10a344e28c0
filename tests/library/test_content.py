"""Content capture: off by default; opt-in with truncation and a redactor."""

from __future__ import annotations

import json

import pytest

import reach_otel
from reach_otel.config import load_settings
from reach_otel.redact import Redactor, truncate

SECRETS = {
    "api_key": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx123456",
    "bearer": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
    "email": "jane.doe@example.com",
    "card": "4111 1111 1111 1111",
    "assignment": "db_password=hunter2",
}


@reach_otel.tool(name="charge")
def charge(customer: str, note: str) -> dict:
    return {"ok": True, "echo": note}


@reach_otel.agent(name="Billing")
def billing(question: str) -> str:
    charge("c1", note=question)
    return f"answered: {question}"


@reach_otel.llm(model="m1", provider="local")
def ask(messages: list[dict], system: str | None = None) -> dict:
    return {
        "model": "m1",
        "choices": [{"message": {"role": "assistant", "content": "sure"}, "finish_reason": "stop"}],
    }


def test_nothing_captured_by_default(rec) -> None:
    billing("hello")
    ask([{"role": "user", "content": "hi"}])
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.system_instructions",
    }
    for span in rec.spans:
        assert not content_keys & set(span.attributes), span.name


def test_capture_on_records_arguments_results_and_messages(make_recorder) -> None:
    rec = make_recorder(capture_content=True)
    billing("where is my invoice?")
    ask([{"role": "user", "content": "hi"}], system="be brief")

    tool = rec.one("execute_tool charge")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {
        "customer": "c1",
        "note": "where is my invoice?",
    }
    assert json.loads(tool.attributes["gen_ai.tool.call.result"]) == {
        "ok": True,
        "echo": "where is my invoice?",
    }

    agent = rec.one("invoke_agent Billing")
    assert json.loads(agent.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "where is my invoice?"}]}
    ]
    assert json.loads(agent.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == (
        "answered: where is my invoice?"
    )

    llm = rec.one("chat m1")
    assert json.loads(llm.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    # The conventions' shape (#26): the system prompt as a list of parts, as messages hold them.
    assert json.loads(llm.attributes["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "be brief"}
    ]
    assert json.loads(llm.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "sure"}], "finish_reason": "stop"}
    ]


def test_env_variable_turns_capture_on() -> None:
    assert load_settings(env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}).capture_content
    assert not load_settings(env={}).capture_content
    assert not load_settings(
        env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, capture_content=False
    ).capture_content


def test_values_are_truncated_per_value(make_recorder) -> None:
    rec = make_recorder(capture_content=True, content_max_chars=10)
    charge("c1", note="x" * 25)
    args = json.loads(rec.one("execute_tool charge").attributes["gen_ai.tool.call.arguments"])
    assert args == {"customer": "c1", "note": "x" * 10 + "…[truncated 15 chars]"}
    assert truncate("abc", 4096) == "abc"


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_default_redactor_scrubs_secrets_from_captured_content(make_recorder, kind: str) -> None:
    rec = make_recorder(capture_content=True)
    secret = SECRETS[kind]
    billing(f"please use {secret} now")
    for span in rec.spans:
        for value in span.attributes.values():
            if isinstance(value, str):
                for fragment in ("AbCdEfGhIjKl", "eyJhbGciOiJIUzI1NiJ9", "jane.doe@", "4111 1111", "hunter2"):
                    assert fragment not in value, (span.name, value)
    assert "please use" in rec.one("execute_tool charge").attributes["gen_ai.tool.call.arguments"]


def test_redactor_patterns() -> None:
    r = Redactor()
    assert r("key sk-abcdefghijklmnop1234 end") == "key [REDACTED_API_KEY] end"
    assert r("Authorization: Bearer abc.def.ghi") == "Authorization: Bearer [REDACTED]"
    assert r('{"api_key": "xyz123"}') == '{"api_key": "[REDACTED]"}'
    assert r("mail bob@corp.io") == "mail [REDACTED_EMAIL]"
    assert r("card 4111-1111-1111-1111.") == "card [REDACTED_CARD]."
    assert r("order 4111111111111112") == "order 4111111111111112"  # fails Luhn: not a card
    assert r("phone 12345") == "phone 12345"


def test_user_patterns_extend_the_redactor(make_recorder) -> None:
    rec = make_recorder(capture_content=True, redact_patterns=[r"ACCT-\d{6}"])
    charge("c1", note="account ACCT-123456 please")
    args = rec.one("execute_tool charge").attributes["gen_ai.tool.call.arguments"]
    assert "ACCT-123456" not in args
    assert "[REDACTED]" in args
    custom = Redactor()
    custom.add(r"secret-word", "***")
    assert custom("a secret-word b") == "a *** b"
