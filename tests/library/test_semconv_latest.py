"""The newest GenAI shape (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``) next to the
default v1.41.0 one, on the in-memory exporter: the variable's parsing, the workflow (the same in
both), the caller of a remote agent call, the transfer refinement on a tool that hands off
(explicit, declarative and raised handoffs) and the cache-token names of the OpenAI and Anthropic
instrumentations against the local fake LLM server reporting cached tokens."""

from __future__ import annotations

import contextlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from opentelemetry.trace import SpanKind

import reach_otel
from reach_otel import _shape
from reach_otel import semconv as sc
from reach_otel.instrumentation.anthropic import AnthropicInstrumentor
from reach_otel.instrumentation.declarative import DeclarativeInstrumentor, load_config
from reach_otel.instrumentation.openai import OpenAIInstrumentor
from reach_otel.testing.fake_llm import FakeLLMServer

CALLER = (sc.GEN_AI_CALLER_TYPE, sc.GEN_AI_CALLER_NAME)
TRANSFER = (sc.GEN_AI_TRANSFER_MODE, sc.GEN_AI_TRANSFER_TARGET_NAME, sc.GEN_AI_TRANSFER_TARGET_TYPE)
CACHE = (
    sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
)


@pytest.fixture(params=[False, True], ids=["v1.41", "latest"])
def latest(request: pytest.FixtureRequest) -> Iterator[bool]:
    previous = _shape.set_latest(request.param)
    yield request.param
    _shape.set_latest(previous)


def attrs_of(span: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: span.attributes[k] for k in keys if k in span.attributes}


# -- the variable ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("gen_ai_latest_experimental", True),
        ("http, gen_ai_latest_experimental ,database", True),
        ("http/dup,gen_ai_latest_experimental", True),
        ("http", False),
        ("gen_ai_latest", False),
        ("GEN_AI_LATEST_EXPERIMENTAL", False),  # the values are case-sensitive, as in contrib
        ("", False),
        (None, False),
    ],
)
def test_opt_in_is_a_comma_separated_list(value: str | None, expected: bool) -> None:
    assert _shape.opted_in(value) is expected


def test_the_variable_is_read_once() -> None:
    previous = _shape.set_latest(None)
    try:
        assert _shape.latest({_shape.OPT_IN_ENV: "http,gen_ai_latest_experimental"}) is True
        assert _shape.latest({}) is True  # decided: a later environment changes nothing
        assert _shape.cache_write_key() == sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS
        _shape.set_latest(None)
        assert _shape.latest({_shape.OPT_IN_ENV: "http"}) is False
        assert _shape.cache_write_key() == sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
    finally:
        _shape.set_latest(previous)


# -- workflow and remote agents ----------------------------------------------------------------------
def test_workflow_is_invoke_workflow_in_both_shapes(rec, latest) -> None:
    @reach_otel.workflow(name="support_turn")
    def turn() -> str:
        return triage()

    @reach_otel.agent(name="Triage")
    def triage() -> str:
        return "ok"

    assert turn() == "ok"
    wf = rec.one("invoke_workflow support_turn")
    assert wf.kind == SpanKind.INTERNAL
    assert dict(wf.attributes) == {
        sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW,
        sc.GEN_AI_WORKFLOW_NAME: "support_turn",
    }
    agent = rec.one("invoke_agent Triage")
    assert agent.kind == SpanKind.INTERNAL
    assert agent.attributes[sc.GEN_AI_OPERATION_NAME] == sc.OP_AGENT
    assert attrs_of(agent, CALLER) == {}  # only a remote call names its caller


def test_remote_agent_call_names_its_caller(rec, latest) -> None:
    @reach_otel.agent(name="Ledger", remote=True)
    def ledger() -> str:
        return "posted"

    @reach_otel.agent(name="Billing")
    def billing() -> str:
        return ledger()

    @reach_otel.workflow(name="month_end")
    def month_end() -> tuple[str, str]:
        return ledger(), billing()

    assert month_end() == ("posted", "posted")
    assert ledger() == "posted"  # from no agent or workflow at all
    calls = rec.named("invoke_agent Ledger")
    assert [c.kind for c in calls] == [SpanKind.CLIENT] * 3
    assert all(c.attributes[sc.GEN_AI_AGENT_NAME] == "Ledger" for c in calls)
    by_workflow, by_agent, alone = (attrs_of(c, CALLER) for c in calls)
    if latest:
        assert by_workflow == {sc.GEN_AI_CALLER_TYPE: "workflow", sc.GEN_AI_CALLER_NAME: "month_end"}
        assert by_agent == {sc.GEN_AI_CALLER_TYPE: "agent", sc.GEN_AI_CALLER_NAME: "Billing"}
    else:
        assert by_workflow == by_agent == {}
    assert alone == {}


def test_the_caller_is_the_agent_not_a_remote_call(rec) -> None:
    previous = _shape.set_latest(True)
    try:

        @reach_otel.agent(name="Inner", remote=True)
        def inner() -> None:
            return None

        @reach_otel.agent(name="Outer", remote=True)
        def outer() -> None:
            inner()  # a CLIENT span inside a CLIENT span: still Triage's call

        reach_otel.agent(name="Triage")(outer)()
    finally:
        _shape.set_latest(previous)
    assert rec.one("invoke_agent Inner").attributes[sc.GEN_AI_CALLER_NAME] == "Triage"


# -- transfers ---------------------------------------------------------------------------------------
def test_a_tool_that_hands_off_is_a_transfer(rec, latest) -> None:
    @reach_otel.tool(name="transfer_to_billing")
    def transfer() -> str:
        with reach_otel.handoff("Triage", "Billing", mode="takeover") as h:
            h.transition("accept")
        return "Billing"

    @reach_otel.tool(name="lookup")
    def lookup() -> str:
        return "INV-1"

    @reach_otel.agent(name="Triage")
    def triage() -> str:
        lookup()
        with reach_otel.handoff("Triage", "Support", mode="consult"):  # not through a tool
            pass
        return transfer()

    assert triage() == "Billing"
    tool = rec.one("execute_tool transfer_to_billing")
    handoff = rec.one("handoff Billing")
    assert handoff.parent.span_id == tool.context.span_id
    assert tool.attributes[sc.GEN_AI_OPERATION_NAME] == sc.OP_TOOL  # still a tool, named as one
    plain = rec.one("execute_tool lookup")
    assert attrs_of(plain, TRANSFER) == {}
    assert sc.GEN_AI_AGENT_NAME not in plain.attributes
    consult = rec.one("handoff Support")
    if latest:
        assert attrs_of(tool, (*TRANSFER, sc.GEN_AI_AGENT_NAME)) == {
            sc.GEN_AI_TRANSFER_MODE: "pass_control",
            sc.GEN_AI_TRANSFER_TARGET_NAME: "Billing",
            sc.GEN_AI_TRANSFER_TARGET_TYPE: "agent",
            sc.GEN_AI_AGENT_NAME: "Triage",
        }
        assert consult.attributes[sc.GEN_AI_TRANSFER_TARGET_TYPE] == "agent"
        assert consult.attributes[sc.GEN_AI_TRANSFER_MODE] == "return_to_caller"
    else:
        assert attrs_of(tool, (*TRANSFER, sc.GEN_AI_AGENT_NAME)) == {}
        assert sc.GEN_AI_TRANSFER_TARGET_TYPE not in consult.attributes
    # The handoff span itself keeps every §3 attribute, and the target type in the newest shape.
    assert handoff.attributes[sc.GEN_AI_TRANSFER_TARGET_NAME] == "Billing"
    assert handoff.attributes[sc.GEN_AI_TRANSFER_MODE] == "pass_control"
    assert handoff.attributes[sc.REACH_HANDOFF_SOURCE] == "Triage"
    assert (sc.GEN_AI_TRANSFER_TARGET_TYPE in handoff.attributes) is latest


def test_an_agent_run_as_a_tool_hands_off_itself(rec) -> None:
    """A handoff by an agent running inside a tool is that agent's, not a transfer by the tool."""
    previous = _shape.set_latest(True)
    try:

        @reach_otel.agent(name="Researcher")
        def researcher() -> None:
            with reach_otel.handoff(None, "Writer"):
                pass

        @reach_otel.tool(name="research")
        def research() -> None:
            researcher()

        reach_otel.agent(name="Planner")(research)()
    finally:
        _shape.set_latest(previous)
    assert attrs_of(rec.one("execute_tool research"), TRANSFER) == {}
    assert rec.one("handoff Writer").attributes[sc.REACH_HANDOFF_SOURCE] == "Researcher"


APP = {
    "__init__.py": "",
    "routing.py": """
        class Transfer(Exception):
            def __init__(self, to):
                super().__init__(to)
                self.target_agent_name = to

        def transfer_to_billing():
            return "Billing"
    """,
    "tools.py": """
        from latestapp import routing

        def route():
            return routing.transfer_to_billing()

        def escalate():
            raise routing.Transfer("Humans")
    """,
}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[DeclarativeInstrumentor]:
    pkg = tmp_path / "latestapp"
    pkg.mkdir()
    for name, body in APP.items():
        (pkg / name).write_text(textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    env = {
        "REACH_OTEL_TOOLS": "latestapp.tools:*",
        "REACH_OTEL_HANDOFFS": "latestapp.routing:transfer_to_*",
        "REACH_OTEL_HANDOFF_EXCEPTIONS": "latestapp.routing:Transfer@target_agent_name",
    }
    instrumentor = DeclarativeInstrumentor()
    instrumentor.instrument(config=load_config(env=env, path="/nonexistent"))
    yield instrumentor
    instrumentor.uninstrument()
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m == "latestapp" or m.startswith("latestapp.")]:
        del sys.modules[name]


def test_declarative_and_raised_handoffs_through_tools(rec, latest, app) -> None:
    from latestapp import routing, tools

    @reach_otel.agent(name="Triage")
    def triage() -> str:
        tools.route()  # a tool calling a declared transfer function
        with contextlib.suppress(routing.Transfer):
            tools.escalate()  # a tool raising the declared handoff exception
        return routing.transfer_to_billing()  # a transfer function called by the agent itself

    assert triage() == "Billing"
    route, escalate = rec.one("execute_tool route"), rec.one("execute_tool escalate")
    billing = rec.named("handoff Billing")
    humans = rec.one("handoff Humans")
    assert len(billing) == 2
    assert humans.attributes[sc.REACH_HANDOFF_MODE] == "takeover"
    assert escalate.status.is_ok  # a handoff signal is control flow, not a failure
    for handoff in (*billing, humans):
        assert (handoff.attributes.get(sc.GEN_AI_TRANSFER_TARGET_TYPE) == "agent") is latest
    if latest:
        assert attrs_of(route, TRANSFER) == {
            sc.GEN_AI_TRANSFER_MODE: "pass_control",
            sc.GEN_AI_TRANSFER_TARGET_NAME: "Billing",
            sc.GEN_AI_TRANSFER_TARGET_TYPE: "agent",
        }
        assert attrs_of(escalate, TRANSFER)[sc.GEN_AI_TRANSFER_TARGET_NAME] == "Humans"
        assert route.attributes[sc.GEN_AI_AGENT_NAME] == escalate.attributes[sc.GEN_AI_AGENT_NAME] == "Triage"
    else:
        assert attrs_of(route, TRANSFER) == attrs_of(escalate, TRANSFER) == {}


# -- cache tokens through the real SDKs ----------------------------------------------------------------
class CachingLLM(FakeLLMServer):
    """The fake LLM, reporting cached input tokens the way each API does."""

    READ, WRITE = 7, 3

    def answer(self, method: str, path: str, headers: Any, body: Any) -> Any:
        answer = super().answer(method, path, headers, body)
        payloads = [answer.body] if answer.body is not None else [p for _, p in answer.events or ()]
        for payload in payloads:
            if not isinstance(payload, dict):
                continue
            usage = (payload.get("message") or {}).get("usage") or payload.get("usage")
            if not isinstance(usage, dict):
                continue
            if "prompt_tokens_details" in usage:
                usage["prompt_tokens_details"]["cached_tokens"] = self.READ
            if "cache_read_input_tokens" in usage:
                usage.update(cache_read_input_tokens=self.READ, cache_creation_input_tokens=self.WRITE)
        return answer


@pytest.fixture(scope="module")
def llm() -> Iterator[CachingLLM]:
    with CachingLLM() as server:
        yield server


@pytest.fixture
def instrumented(rec) -> Iterator[None]:
    instrumentors = [OpenAIInstrumentor(), AnthropicInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument()
    yield
    for instrumentor in instrumentors:
        instrumentor.uninstrument()


MESSAGES = [{"role": "user", "content": "where is my invoice"}]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_openai_cached_tokens(rec, latest, instrumented, llm, stream) -> None:
    client = openai.OpenAI(base_url=llm.openai_base_url, api_key="test", max_retries=0)
    usage = {"stream_options": {"include_usage": True}} if stream else {}
    result = client.chat.completions.create(model="gpt-test", messages=MESSAGES, stream=stream, **usage)
    if stream:
        list(result)
    attrs = rec.one("chat gpt-test").attributes
    # The same key in both shapes; OpenAI's prompt_tokens already count the cached ones.
    assert attrs_of(rec.one("chat gpt-test"), CACHE) == {sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 7}
    assert attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] == 4


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_anthropic_cached_tokens(rec, latest, instrumented, llm, stream) -> None:
    client = anthropic.Anthropic(base_url=llm.anthropic_base_url, api_key="test", max_retries=0)

    @reach_otel.agent(name="Support")
    def support() -> None:
        result = client.messages.create(model="claude-test", max_tokens=64, messages=MESSAGES, stream=stream)
        if stream:
            list(result)

    support()
    span = rec.one("chat claude-test")
    write_key = (
        sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS if latest else sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
    )
    assert attrs_of(span, CACHE) == {sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 7, write_key: 3}
    # input_tokens counts the cached tokens too (4 words + 7 read + 3 written), and so does the agent.
    assert span.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 14
    assert rec.one("invoke_agent Support").attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 14


def test_no_cache_reported_no_cache_attributes(rec, instrumented) -> None:
    with FakeLLMServer() as plain:  # reports zero cached tokens, as an uncached call does
        openai.OpenAI(base_url=plain.openai_base_url, api_key="t", max_retries=0).chat.completions.create(
            model="gpt-test", messages=MESSAGES
        )
        anthropic.Anthropic(base_url=plain.anthropic_base_url, api_key="t", max_retries=0).messages.create(
            model="claude-test", max_tokens=64, messages=MESSAGES
        )
    assert attrs_of(rec.one("chat gpt-test"), CACHE) == attrs_of(rec.one("chat claude-test"), CACHE) == {}
    assert rec.one("chat claude-test").attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 4
