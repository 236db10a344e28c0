"""Declarative wrapping: targets from variables or reach-otel.toml, wildcards, methods, post-import
hooks, transfer functions and handoff exceptions — on a small app package written per test."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from reach_otel.instrumentation.declarative import DeclarativeInstrumentor, load_config
from reach_otel.instrumentation.declarative.config import parse_targets

APP = {
    "__init__.py": "",
    "tools.py": """
        def lookup(query):
            return f"found {query}"

        def refund(amount):
            return amount

        def _private():
            return None
    """,
    "agents.py": """
        class Transfer(Exception):
            def __init__(self, to):
                super().__init__(to)
                self.target_agent_name = to

        class BaseAgent:
            def __init__(self, name=None):
                if name:
                    self.agent_name = name

            def run(self, query):
                from declapp import tools
                return tools.lookup(query)

        class Billing(BaseAgent):
            pass
    """,
    "routing.py": """
        class Target:
            def __init__(self, name):
                self.agent_name = name

        def transfer_to_billing():
            return Target("BillingAgent")

        async def transfer_to_support():
            return "SupportAgent"
    """,
    "orchestrator.py": """
        from declapp.agents import Transfer

        class Orchestrator:
            def execute_turn(self, agent, query):
                return agent.run(query)

            def raising_turn(self, agent):
                return agent.run_and_transfer()
    """,
}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Path]:
    pkg = tmp_path / "declapp"
    pkg.mkdir()
    for name, body in APP.items():
        (pkg / name).write_text(textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    yield pkg
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m == "declapp" or m.startswith("declapp.")]:
        del sys.modules[name]


def apply(env: dict[str, str]) -> DeclarativeInstrumentor:
    instrumentor = DeclarativeInstrumentor()
    instrumentor.instrument(config=load_config(env=env, path="/nonexistent"))
    return instrumentor


def test_parse_targets() -> None:
    targets, problems = parse_targets("a.b:C.run, x:*, bad, :nope, y:f@attr", with_attr=True)
    assert [str(t) for t in targets] == ["a.b:C.run", "x:*", "y:f@attr"]
    assert len(problems) == 2


def test_wraps_modules_imported_later_with_wildcards_and_methods(rec, app) -> None:
    instrumentor = apply(
        {
            "REACH_OTEL_WORKFLOWS": "declapp.orchestrator:Orchestrator.execute_turn",
            "REACH_OTEL_AGENTS": "declapp.agents:BaseAgent.run",
            "REACH_OTEL_AGENT_NAME_ATTR": "agent_name",
            "REACH_OTEL_TOOLS": "declapp.tools:*",
        }
    )
    try:
        from declapp import agents, orchestrator, tools  # imported after instrument(): post-import hooks

        result = orchestrator.Orchestrator().execute_turn(agents.BaseAgent("Triage"), "INV-1")
        orchestrator.Orchestrator().execute_turn(agents.Billing(), "INV-2")
        assert result == "found INV-1"
        assert tools.refund(5) == 5
        assert tools._private() is None
    finally:
        instrumentor.uninstrument()
    names = [s.name for s in rec.spans]
    assert names == [
        "execute_tool lookup",
        "invoke_agent Triage",
        "invoke_workflow execute_turn",
        "execute_tool lookup",
        "invoke_agent Billing",  # no agent_name attribute: the class name
        "invoke_workflow execute_turn",
        "execute_tool refund",
    ]
    rec.clear()
    tools.refund(1)  # uninstrumented again
    assert rec.spans == []


def test_transfer_functions_record_takeover_handoffs(rec, app) -> None:
    import asyncio

    from reach_otel import agent

    instrumentor = apply(
        {"REACH_OTEL_HANDOFFS": "declapp.routing:transfer_to_*", "REACH_OTEL_AGENT_NAME_ATTR": "agent_name"}
    )
    try:
        from declapp import routing

        @agent(name="Triage")
        def triage() -> None:
            assert routing.transfer_to_billing().agent_name == "BillingAgent"
            assert asyncio.run(routing.transfer_to_support()) == "SupportAgent"

        triage()
    finally:
        instrumentor.uninstrument()
    first, second = (s for s in rec.spans if s.name.startswith("handoff "))
    assert first.name == "handoff BillingAgent"
    assert second.name == "handoff SupportAgent"
    assert first.attributes["reach.handoff.mode"] == "takeover"
    assert first.attributes["reach.handoff.source"] == "Triage"
    assert second.attributes["reach.hop.count"] == 2


def test_handoff_exceptions_are_control_flow(rec, app) -> None:
    from reach_otel import agent, tool

    instrumentor = apply({"REACH_OTEL_HANDOFF_EXCEPTIONS": "declapp.agents:Transfer@target_agent_name"})
    try:
        from declapp.agents import Transfer

        @tool
        def transfer_to_billing() -> None:
            raise Transfer("BillingAgent")

        @agent(name="Triage")
        def triage() -> None:
            transfer_to_billing()

        with pytest.raises(Transfer):
            triage()
    finally:
        instrumentor.uninstrument()
    handoff = rec.one("handoff BillingAgent")
    assert handoff.parent.span_id == rec.one("invoke_agent Triage").context.span_id
    assert handoff.attributes["gen_ai.transfer.mode"] == "pass_control"
    for name in ("execute_tool transfer_to_billing", "invoke_agent Triage"):
        span = rec.one(name)
        assert "error.type" not in span.attributes
        assert span.status.is_ok


def test_unresolved_targets_warn_once_naming_them(rec, app, caplog) -> None:
    instrumentor = apply(
        {"REACH_OTEL_TOOLS": "declapp.tools:nothing_here,declapp.tools:bad@", "REACH_OTEL_AGENTS": "x"}
    )
    try:
        import declapp.tools  # noqa: F401
    finally:
        instrumentor.uninstrument()
    assert "declapp.tools:nothing_here matched nothing in declapp.tools" in caplog.text
    assert "REACH_OTEL_AGENTS: 'x' is not module:qualname" in caplog.text


def test_config_file_and_variables(tmp_path: Path) -> None:
    config = tmp_path / "reach-otel.toml"
    config.write_text('[reach_otel]\ntools = ["a:f", "b:*"]\nagents = "c:A.run"\nagent_name_attr = "title"\n')
    loaded = load_config(env={}, path=config)
    assert [str(t) for t in loaded.tools] == ["a:f", "b:*"]
    assert loaded.agent_name_attr == "title"
    overridden = load_config(env={"REACH_OTEL_TOOLS": "z:g"}, path=config)
    assert [str(t) for t in overridden.tools] == ["z:g"]
    assert [str(t) for t in overridden.agents] == ["c:A.run"]
