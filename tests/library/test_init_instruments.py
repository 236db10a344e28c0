"""init() applies the instrumentors of the installed libraries: decorators plus init() plus the real
openai client (against the local fake LLM) give an LLM span under the agent, with the agent's tokens.

Each case is a fresh interpreter exporting real OTLP/HTTP to a loopback sink: init() and the
instrumentors patch process-wide state by design.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from otlp_sink import OtlpSink

from reach_otel.testing.fake_llm import FakeLLMServer

APP = textwrap.dedent(
    """
    import os, sys
    import reach_otel

    def client():
        from openai import OpenAI
        return OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="test", max_retries=0)

    @reach_otel.agent(name="BillingAgent")
    def billing(question):
        reply = client().chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": question}]
        )
        return reply.choices[0].message.content
    """
)


@pytest.fixture
def llm() -> Any:
    with FakeLLMServer() as server:
        yield server


def run_app(
    body: str, sink: OtlpSink, llm: FakeLLMServer, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}
    full_env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=sink.url,
        OTEL_SERVICE_NAME="support-bot",
        OPENAI_BASE_URL=llm.openai_base_url,
        **env,
    )
    out = subprocess.run(
        [sys.executable, "-c", APP + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out


def named(spans: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"].startswith(prefix)]


def assert_llm_span_under_agent(spans: list[dict[str, Any]]) -> None:
    (agent,) = named(spans, "invoke_agent BillingAgent")
    (chat,) = named(spans, "chat fake-model")
    assert chat["parent_span_id"] == agent["span_id"]
    assert chat["trace_id"] == agent["trace_id"]
    assert chat["attributes"]["gen_ai.usage.input_tokens"] > 0
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert agent["attributes"][key] == chat["attributes"][key] > 0


@pytest.mark.parametrize("order", ["openai imported after init", "openai imported before init"])
def test_init_alone_gives_the_llm_span_under_the_agent(llm: FakeLLMServer, order: str) -> None:
    first = "import openai\n" if order == "openai imported before init" else ""
    with OtlpSink() as sink:
        out = run_app(first + 'reach_otel.init()\nprint(billing("where is my invoice"))\n', sink, llm)
        spans = sink.wait_for(2)
    assert out.stdout.strip() == "echo: where is my invoice"
    assert_llm_span_under_agent(spans)


@pytest.mark.parametrize(
    ("body", "env"),
    [
        ("reach_otel.init(instrument=False)\n", {}),
        ("reach_otel.init()\n", {"REACH_OTEL_INSTRUMENT": "false"}),
    ],
    ids=["init(instrument=False)", "REACH_OTEL_INSTRUMENT=false"],
)
def test_opting_out_leaves_the_libraries_alone(llm: FakeLLMServer, body: str, env: dict[str, str]) -> None:
    probe = (
        "import openai.resources.chat.completions.completions as c, httpx\n"
        "print(type(c.Completions.create).__name__, type(httpx.Client.send).__name__)\n"
        'billing("hi")\nreach_otel.shutdown()\n'
    )
    with OtlpSink() as sink:
        out = run_app(body + probe, sink, llm, **env)
        spans = sink.wait_for(1)
    assert out.stdout.split() == ["function", "function"]
    assert [s["name"] for s in spans] == ["invoke_agent BillingAgent"]
    assert spans[0]["attributes"]["gen_ai.usage.input_tokens"] == 0


def test_an_argument_wins_over_the_variable(llm: FakeLLMServer) -> None:
    with OtlpSink() as sink:
        run_app('reach_otel.init(instrument=True)\nbilling("hi")\n', sink, llm, REACH_OTEL_INSTRUMENT="false")
        assert_llm_span_under_agent(sink.wait_for(2))


def test_libraries_are_patched_when_imported_never_twice_and_reversibly(llm: FakeLLMServer) -> None:
    body = """
        reach_otel.init()
        # Installed but not imported yet: init() imports nothing on their behalf.
        print("not-imported", *[m for m in ("anthropic", "agents", "openai") if m not in sys.modules])
        import anthropic.resources.messages.messages as m
        print("anthropic", type(m.Messages.create).__name__)
        from agents.tracing import get_trace_provider
        from reach_otel.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        processors = get_trace_provider()._multi_processor._processors
        print("agents-processor", processors.count(OpenAIAgentsInstrumentor().processor))
        reach_otel.instrument()            # the user calls it too: nothing is applied a second time
        reach_otel.init(service_name="support-bot")
        billing("one")
        reach_otel.flush()
        print("removed", *sorted(reach_otel.uninstrument()))
        billing("two")                     # no LLM span any more
        print("anthropic", type(m.Messages.create).__name__)
    """
    with OtlpSink() as sink:
        out = run_app(body, sink, llm)
        spans = sink.wait_for(3)
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["not-imported", "anthropic", "agents", "openai"]
    assert lines[1] == "anthropic BoundFunctionWrapper"
    assert lines[2] == "agents-processor 1"
    removed = lines[3].split()[1:]
    assert {"openai", "anthropic", "httpx", "requests", "threading", "openai_agents"} <= set(removed)
    assert "declarative" not in removed  # no targets configured: init() leaves it out
    assert lines[4] == "anthropic function"
    assert len(named(spans, "chat ")) == 1  # the first call only, wrapped once
    assert len(named(spans, "invoke_agent BillingAgent")) == 2


def test_declarative_targets_are_applied_by_init_when_set(llm: FakeLLMServer, tmp_path: Path) -> None:
    (tmp_path / "desk_tools.py").write_text("def lookup_invoice(number):\n    return {'id': number}\n")
    body = """
        def refund(amount):
            return amount

        reach_otel.init()
        import desk_tools
        desk_tools.lookup_invoice("INV-1")
        refund(3)  # a function of this very script: init() runs after it is defined
    """
    with OtlpSink() as sink:
        out = run_app(
            body,
            sink,
            llm,
            cwd=tmp_path,
            REACH_OTEL_TOOLS="desk_tools:lookup_*,__main__:refund",
        )
        spans = sink.wait_for(2)
    assert sorted(s["name"] for s in spans) == ["execute_tool lookup_invoice", "execute_tool refund"]
    assert "warning" not in out.stderr.lower(), out.stderr


def test_init_under_reach_otel_run_applies_nothing_twice(llm: FakeLLMServer) -> None:
    """`reach-otel run` applied the instrumentors before the app's own init(): one LLM span per call."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_", "_REACH"))}
    env.update(OTEL_SERVICE_NAME="support-bot", OPENAI_BASE_URL=llm.openai_base_url)
    code = APP + 'reach_otel.init()\nreach_otel.instrument()\nbilling("one")\nbilling("two")\n'
    with OtlpSink() as sink:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink.url
        out = subprocess.run(
            [sys.executable, "-m", "reach_otel", "run", "--", sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        spans = sink.wait_for(4)
    assert sorted(s["name"] for s in spans) == ["chat fake-model"] * 2 + ["invoke_agent BillingAgent"] * 2
    for agent in named(spans, "invoke_agent"):
        (chat,) = [s for s in spans if s["parent_span_id"] == agent["span_id"]]
        assert (
            agent["attributes"]["gen_ai.usage.input_tokens"]
            == chat["attributes"]["gen_ai.usage.input_tokens"]
        )


def test_the_registry_takes_this_distributions_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """An instrumentor registered as a ``reach_*`` entry point (a framework's, say) is one init() applies;
    another distribution's instrumentors are left to their own users."""
    import importlib.metadata

    from reach_otel import instrumentation

    points = [
        importlib.metadata.EntryPoint("reach_fakeframework", "reach_otel.instrumentation.fake:F", "x"),
        importlib.metadata.EntryPoint("reach_threading", "reach_otel.instrumentation.threading:T", "x"),
        importlib.metadata.EntryPoint("httpx", "opentelemetry.instrumentation.httpx:HTTPXInstrumentor", "x"),
    ]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: points)
    instrumentation.registry.cache_clear()
    try:
        found = instrumentation.registry()
        assert found["fakeframework"] == "reach_otel.instrumentation.fake:F"
        assert found["threading"] == instrumentation.INSTRUMENTORS["threading"]  # the built-in one wins
        assert found["httpx"] == instrumentation.INSTRUMENTORS["httpx"]
        assert instrumentation.libraries("fakeframework") == ("fakeframework",)
        assert "fakeframework" not in instrumentation.available()  # its library is not installed
        assert {"openai", "threading", "declarative"} <= set(instrumentation.available())
    finally:
        instrumentation.registry.cache_clear()
