"""`reach-otel run` wraps targets in the script it runs (`desk:` and `__main__:` for `python desk.py`,
`pkg.mod:` for `python -m pkg.mod`), warns once at exit for a target that matched nothing, prints one
start-up line, and instruments the program of a `reach-otel run` started by an instrumented program.

Real subprocess apps, the real openai client against the local fake LLM, OTLP/HTTP to a loopback sink.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from otlp_sink import OtlpSink

from reach_otel.testing.fake_llm import FakeLLMServer

AGENTS = """
    import os, sys
    from openai import OpenAI

    class Agent:
        def __init__(self, name):
            self.name = name

        def run(self, question):
            client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="test", max_retries=0)
            reply = client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": question}]
            )
            return reply.choices[0].message.content

    class TriageAgent(Agent):
        def run(self, question):          # an override calling super(): still one agent run
            return "triage " + super().run(question)

    class BillingAgent(Agent):
        pass

    def lookup_invoice(number):           # a function of the script itself
        return number
"""

DESK = (
    AGENTS
    + """
    if __name__ == "__main__":
        print(TriageAgent("TriageAgent").run("hello"))
        print("halfway", file=sys.stderr, flush=True)
        import desk                       # the script imported again, as a module
        print(desk.BillingAgent("BillingAgent").run("invoice"))
"""
)


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def sink() -> Iterator[OtlpSink]:
    with OtlpSink() as receiver:
        yield receiver


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, body in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body))
    return folder


def reach_run(
    command: list[str], cwd: Path, sink: OtlpSink, llm: FakeLLMServer, **env: str
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_", "_REACH"))}
    full_env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=sink.url,
        OPENAI_BASE_URL=llm.openai_base_url,
        OPENAI_API_KEY="test",
        **env,
    )
    out = subprocess.run(
        [sys.executable, "-m", "reach_otel", "run", "--", *command],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    return out


def agents_with_their_llm_calls(spans: list[dict[str, Any]]) -> dict[str, int]:
    """Agent name → input tokens, checking each agent span holds exactly its one chat span."""
    found = {}
    for agent in (s for s in spans if s["name"].startswith("invoke_agent ")):
        (chat,) = [s for s in spans if s["parent_span_id"] == agent["span_id"]]
        assert chat["name"] == "chat fake-model"
        assert (
            agent["attributes"]["gen_ai.usage.input_tokens"]
            == chat["attributes"]["gen_ai.usage.input_tokens"]
        )
        found[agent["attributes"]["gen_ai.agent.name"]] = agent["attributes"]["gen_ai.usage.input_tokens"]
    return found


def reach_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("reach_otel:")]


@pytest.mark.parametrize("targets", ["desk:*Agent.run", "__main__:*Agent.run,desk:BillingAgent.run"])
def test_targets_in_the_script_itself(
    tmp_path: Path, sink: OtlpSink, llm: FakeLLMServer, targets: str
) -> None:
    app = write(tmp_path, {"desk.py": DESK})
    out = reach_run([sys.executable, "desk.py"], app, sink, llm, REACH_OTEL_AGENTS=targets)
    assert out.stdout.splitlines() == ["triage echo: hello", "echo: invoice"]
    spans = sink.wait_for(4)
    assert len(spans) == 4, [s["name"] for s in spans]
    tokens = agents_with_their_llm_calls(spans)
    assert set(tokens) == {"TriageAgent", "BillingAgent"}  # BillingAgent: from `import desk`
    assert all(t > 0 for t in tokens.values())
    assert reach_warnings(out.stderr) == [], out.stderr


def test_python_dash_m_module(tmp_path: Path, sink: OtlpSink, llm: FakeLLMServer) -> None:
    main = AGENTS + '\n    print(BillingAgent("BillingAgent").run("m"))\n'
    files = {"pkg/__init__.py": "", "pkg/mod.py": main}
    app = write(tmp_path, files)
    out = reach_run(
        [sys.executable, "-m", "pkg.mod"], app, sink, llm, REACH_OTEL_AGENTS="pkg.mod:BillingAgent.run"
    )
    assert out.stdout.strip() == "echo: m"
    assert agents_with_their_llm_calls(sink.wait_for(2)) == {"BillingAgent": 1}
    assert "as pkg.mod;" in out.stderr  # the service is named after the module
    assert reach_warnings(out.stderr) == [], out.stderr


def test_unmatched_targets_are_warned_once_at_exit(
    tmp_path: Path, sink: OtlpSink, llm: FakeLLMServer
) -> None:
    app = write(tmp_path, {"desk.py": DESK, "never_imported.py": "X = 1\n"})
    out = reach_run(
        [sys.executable, "desk.py"],
        app,
        sink,
        llm,
        REACH_OTEL_AGENTS="desk:*Agent.run,__main__:NoSuchAgent.run,no_such_module:A.run,never_imported:A.run",
        REACH_OTEL_TOOLS="__main__:lookup_invoice",
    )
    warnings = reach_warnings(out.stderr)
    assert len(warnings) == 4, out.stderr
    expected = {
        "__main__:NoSuchAgent.run": "matched nothing in the main module (desk.py)",
        "no_such_module:A.run": "module 'no_such_module' cannot be found",
        "never_imported:A.run": "module 'never_imported' was never imported",
        "__main__:lookup_invoice": "a function of the script being run cannot be wrapped before it runs",
    }
    for target, why in expected.items():
        (line,) = [w for w in warnings if f" {target} " in w]
        assert why in line, line
    lines = out.stderr.splitlines()
    assert all(lines.index(w) > lines.index("halfway") for w in warnings)  # said when the program ends
    assert set(agents_with_their_llm_calls(sink.wait_for(4))) == {"TriageAgent", "BillingAgent"}


def test_one_start_up_line_says_what_run_applied(tmp_path: Path, sink: OtlpSink, llm: FakeLLMServer) -> None:
    script = "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'print(1)'], check=True)\n"
    app = write(tmp_path, {"plain.py": script})
    out = reach_run([sys.executable, "plain.py"], app, sink, llm, REACH_OTEL_TOOLS="plain_tools:*,other:f")
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("reach-otel run:")]  # not one per child
    assert line.startswith(f"reach-otel run: spans to {sink.url}/v1/traces as plain; instrumented: ")
    now, later = line.split("; instrumented: ")[1].split("; targets: ")[0].split("; on import: ")
    assert {"threading", "declarative"} <= set(now.split(", "))
    assert {"openai", "anthropic", "httpx"} <= set(later.split(", "))  # applied once the app imports them
    assert line.endswith("; targets: tools plain_tools:*, other:f")
    assert out.stdout.strip() == "1"


def test_run_started_by_an_instrumented_program_instruments_its_child(
    tmp_path: Path, sink: OtlpSink, llm: FakeLLMServer
) -> None:
    console_script = Path(sys.executable).with_name("reach-otel")
    files = {
        "desk_agents.py": AGENTS,
        "child.py": "import sys, desk_agents\nprint(desk_agents.BillingAgent(sys.argv[1]).run('child'))\n",
        # An MCP client spawning its stdio server, a supervisor spawning workers: both spellings.
        "parent.py": f"""
            import subprocess, sys, desk_agents
            print(desk_agents.BillingAgent("ParentAgent").run("parent"))
            for command in ([sys.executable, "-m", "reach_otel"], [{str(console_script)!r}]):
                agent = "ModuleChild" if len(command) > 1 else "ScriptChild"
                subprocess.run([*command, "run", "--", sys.executable, "child.py", agent], check=True)
        """,
    }
    app = write(tmp_path, files)
    out = reach_run([sys.executable, "parent.py"], app, sink, llm, REACH_OTEL_AGENTS="desk_agents:*Agent.run")
    assert out.stdout.splitlines() == ["echo: parent", "echo: child", "echo: child"]
    spans = sink.wait_for(6)
    assert set(agents_with_their_llm_calls(spans)) == {"ParentAgent", "ModuleChild", "ScriptChild"}
    services = {
        s["attributes"]["gen_ai.agent.name"]: s["resource"]["service.name"]
        for s in spans
        if "gen_ai.agent.name" in s["attributes"]
    }
    assert services == {"ParentAgent": "parent", "ModuleChild": "child", "ScriptChild": "child"}
    starts = [x for x in out.stderr.splitlines() if x.startswith("reach-otel run:")]
    assert [x.split(" as ")[1].split(";")[0] for x in starts] == ["parent", "child", "child"]
