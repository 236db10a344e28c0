"""CrewAI integration: real crews in CrewAI's own environment, their traces read back from a collector.

CrewAI cannot share the dev environment (it pins openai<3, mcp<2, pydantic<2.13), so the crews in
``crewai_apps.py`` run in one built by ``tests/crewai_env.py`` — with openai 2.x there against 3.x
here — calling the fake LLM server of this process and exporting OTLP over HTTP to a real collector
started from this environment; every assertion reads ``/api/traces/{id}``. All scenarios run in one
app process (CrewAI takes seconds to import). Off CI, a missing package index skips the module with
the reason; on CI (``CI=true``) it fails. The pure extractors are tested here directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from collector_process import CollectorProcess
from crewai_env import EnvUnavailable, app_env, crewai_env

from reach_otel import semconv as sc
from reach_otel.instrumentation.crewai import extract
from reach_otel.testing.fake_llm import FakeLLMServer

APP = Path(__file__).with_name("crewai_apps.py")
SCENARIOS = (
    "billing",
    "hierarchical",
    "ping_pong",
    "misdirected",
    "failing",
    "async",
    "flow",
    "exploding",
    "uninstrumented",
)
ON_CI = os.environ.get("CI", "").lower() in ("true", "1")

Span = dict[str, Any]


# -- the environment, the servers and the one app run ----------------------------------------------------
@pytest.fixture(scope="module")
def crewai_python() -> Path:
    try:
        env = crewai_env()
    except EnvUnavailable as exc:
        if ON_CI:
            pytest.fail(f"cannot build the CrewAI test environment: {exc}", pytrace=False)
        pytest.skip(f"cannot build the CrewAI test environment: {exc}")
    if env.built_in_s is not None:
        print(f"\nbuilt the CrewAI test environment in {env.built_in_s:.0f} s", file=sys.stderr)
    return env.python


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CollectorProcess]:
    with CollectorProcess(tmp_path_factory.mktemp("crewai") / "crewai.duckdb") as process:
        yield process


def run_ok(command: list[str], variables: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run an app in the CrewAI environment to its end; it must succeed."""
    out = subprocess.run(command, env=variables, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    return out


def run_app(
    python: Path,
    collector: CollectorProcess,
    work: Path,
    *scenarios: str,
    run: tuple[str, ...] = (),
    **env: str,
) -> Any:
    """Run the scenarios in one app process (behind ``run``, a launcher's arguments, if given);
    their outcome lines by name (``"start"``: what the app saw before any)."""
    variables = app_env()
    variables.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
        OTEL_BSP_SCHEDULE_DELAY="200",
        CREWAI_STORAGE_DIR=str(work / "storage"),
        HOME=str(work),  # CrewAI keeps user data under the home folder
        **env,
    )
    with FakeLLMServer() as llm:
        out = run_ok([*run, str(python), str(APP), llm.openai_base_url, *scenarios], variables, work)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    found = {line.get("scenario", "start"): line for line in lines}
    assert set(found) == {"start", *scenarios}, out.stdout[-2000:]
    return found


@pytest.fixture(scope="module")
def outcomes(
    crewai_python: Path, collector: CollectorProcess, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The scenarios with reach_otel's defaults: content not captured, loops recorded only."""
    return dict(run_app(crewai_python, collector, tmp_path_factory.mktemp("crewai-app"), *SCENARIOS))


@pytest.fixture(scope="module")
def strict(
    crewai_python: Path, collector: CollectorProcess, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The billing crew with no line of ours, under ``reach-otel run`` (zero code), with content
    captured and at most one handoff, raising past it."""
    work = tmp_path_factory.mktemp("crewai-strict")
    settings = {
        "CREWAI_APP_ZERO_CODE": "1",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "REACH_OTEL_MAX_HOPS": "1",
        "REACH_OTEL_ON_LOOP": "raise",
    }
    launcher = (str(crewai_python), "-m", "reach_otel", "run", "--service-name", "crewai-zero-code", "--")
    return dict(run_app(crewai_python, collector, work, "billing", run=launcher, **settings))


def fetch(
    collector: CollectorProcess, trace_id: str, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        try:
            found = dict(collector.get(f"/api/traces/{trace_id}"))
            if done(found) or time.monotonic() > deadline:
                return found
        except Exception:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def one_trace(outcomes: dict[str, Any], collector: CollectorProcess, scenario: str, spans: int) -> list[Span]:
    """The single trace of a scenario's kickoff, once the collector holds at least ``spans`` spans."""
    (trace_id,) = outcomes[scenario]["traces"]
    found = fetch(collector, trace_id, lambda t: len(t["spans"]) >= spans)
    assert len(found["roots"]) == 1
    return list(found["spans"])


def named(spans: list[Span], name: str) -> list[Span]:
    return [s for s in spans if s["name"] == name]


def parent(spans: list[Span], span: Span) -> Span:
    (found,) = [s for s in spans if s["span_id"] == span["parent_span_id"]]
    return found


def attr(span: Span, key: str) -> Any:
    return span["attributes"].get(key)


@pytest.fixture(scope="module")
def billing(outcomes: dict[str, Any], collector: CollectorProcess) -> list[Span]:
    # workflow, 2 task agents, 2 coworker runs, 2 handoffs, 2 tools (+ their chats), 8 crew chats
    return one_trace(outcomes, collector, "billing", 19)


# -- the crew run -------------------------------------------------------------------------------------------
def test_the_app_runs_crewai_on_openai_2_with_our_hooks_in_place(outcomes: dict[str, Any]) -> None:
    start = outcomes["start"]
    assert start["hooks"] == 1  # init() applied the CrewAI instrumentation when crewai was imported
    assert start["openai"].startswith("2.")  # CrewAI's openai major; the dev environment has 3.x
    import openai

    assert int(openai.__version__.split(".")[0]) >= 3


def test_kickoff_is_the_workflow_root_and_each_task_execution_an_agent(billing: list[Span]) -> None:
    (root,) = [s for s in billing if s["parent_span_id"] is None]
    assert root["name"] == "invoke_workflow billing_crew"
    assert attr(root, sc.GEN_AI_OPERATION_NAME) == sc.OP_WORKFLOW
    assert attr(root, sc.GEN_AI_WORKFLOW_NAME) == "billing_crew"
    tasks = [s for s in billing if s["parent_span_id"] == root["span_id"]]
    assert [s["name"] for s in tasks] == ["invoke_agent Researcher", "invoke_agent Writer"]
    for agent in tasks:
        assert attr(agent, sc.GEN_AI_OPERATION_NAME) == sc.OP_AGENT
        assert attr(agent, sc.REACH_HOP_COUNT) == 0  # tasks in sequence are not handoffs
        assert attr(agent, sc.GEN_AI_AGENT_ID)
        assert agent["status"]["code"] != "ERROR"
    assert {s["trace_id"] for s in billing} == {root["trace_id"]}


def test_delegation_and_a_question_are_handoffs_with_mode_and_hop_count(billing: list[Span]) -> None:
    handoffs = named(billing, "handoff Researcher")
    assert [attr(h, sc.REACH_HANDOFF_MODE) for h in handoffs] == ["delegate", "consult"]
    assert [attr(h, sc.REACH_HOP_COUNT) for h in handoffs] == [1, 2]
    for handoff in handoffs:
        assert parent(billing, handoff)["name"] == "invoke_agent Writer"
        assert attr(handoff, sc.REACH_HANDOFF_SOURCE) == "Writer"
        assert attr(handoff, sc.REACH_HANDOFF_TARGET) == "Researcher"  # the model wrote "researcher"
        assert attr(handoff, sc.GEN_AI_TRANSFER_MODE) == sc.TRANSFER_RETURN_TO_CALLER
        assert attr(handoff, sc.REACH_HANDOFF_STATUS) == "committed"
        assert attr(handoff, sc.REACH_LOOP_DETECTED) is False
        (coworker,) = [s for s in billing if s["parent_span_id"] == handoff["span_id"]]
        assert coworker["name"] == "invoke_agent Researcher"
        assert attr(coworker, sc.REACH_HOP_COUNT) == attr(handoff, sc.REACH_HOP_COUNT)


def test_tools_are_execute_tool_and_an_openai_call_inside_one_nests_under_it(billing: list[Span]) -> None:
    tools = named(billing, "execute_tool lookup_invoice")
    assert len(tools) == 2  # the Researcher's own task, and the work delegated to it
    for tool in tools:
        assert attr(tool, sc.GEN_AI_OPERATION_NAME) == sc.OP_TOOL
        assert attr(tool, sc.GEN_AI_TOOL_NAME) == "lookup_invoice"
        assert attr(tool, sc.REACH_AGENT_NAME) == "Researcher"
        assert parent(billing, tool)["name"] == "invoke_agent Researcher"
        # The tool calls the openai client itself: our OpenAI instrumentation, on openai 2.x there.
        (chat,) = [s for s in billing if s["parent_span_id"] == tool["span_id"]]
        assert chat["name"] == "chat billing-model" and chat["kind"] == "CLIENT"
        assert attr(chat, sc.GEN_AI_RESPONSE_ID)  # only the SDK instrumentation reads the response id
        assert attr(chat, sc.GEN_AI_USAGE_INPUT_TOKENS) == 2  # "INV-7 paid"
        assert attr(chat, sc.GEN_AI_USAGE_OUTPUT_TOKENS) == 3  # "echo: INV-7 paid"


def test_crewai_llm_calls_are_chat_spans_under_their_agent_with_tokens(billing: list[Span]) -> None:
    chats = named(billing, "chat fake-model")
    assert len(chats) == 8  # two model calls for each tool-using run, three for the Writer
    for chat in chats:
        agent = parent(billing, chat)
        assert agent["name"].startswith("invoke_agent ")
        assert attr(chat, sc.REACH_AGENT_NAME) == attr(agent, sc.GEN_AI_AGENT_NAME)
        assert attr(chat, sc.GEN_AI_PROVIDER_NAME) == "openai"
        assert attr(chat, sc.GEN_AI_REQUEST_MODEL) == "fake-model"
        assert (attr(chat, sc.SERVER_ADDRESS), isinstance(attr(chat, sc.SERVER_PORT), int)) == (
            "127.0.0.1",
            True,
        )
        assert attr(chat, sc.GEN_AI_USAGE_INPUT_TOKENS) > 0 and attr(chat, sc.GEN_AI_USAGE_OUTPUT_TOKENS) > 0
    # One span per model call: the OpenAI instrumentation saw ours open and made none of its own.
    writer = named(billing, "invoke_agent Writer")[0]
    under_writer = [c for c in chats if c["parent_span_id"] == writer["span_id"]]
    assert len(under_writer) == 3
    assert [attr(c, sc.REACH_LLM_TOOL_CALLS_REQUESTED) for c in under_writer] == [
        ["delegate_work_to_coworker"],
        ["ask_question_to_coworker"],
        None,
    ]
    assert attr(writer, sc.REACH_AGENT_LLM_CALLS) == 3
    assert attr(writer, sc.GEN_AI_USAGE_INPUT_TOKENS) == sum(
        attr(c, sc.GEN_AI_USAGE_INPUT_TOKENS) for c in under_writer
    )


def test_a_hierarchical_crews_manager_delegates_and_consults(
    outcomes: dict[str, Any], collector: CollectorProcess
) -> None:
    spans = one_trace(outcomes, collector, "hierarchical", 10)
    (root,) = [s for s in spans if s["parent_span_id"] is None]
    assert root["name"] == "invoke_workflow managed_crew"
    (manager,) = named(spans, "invoke_agent Crew Manager")
    assert manager["parent_span_id"] == root["span_id"]
    handoffs = [s for s in spans if s["name"].startswith("handoff ")]
    assert [(s["name"], attr(s, sc.REACH_HANDOFF_MODE), attr(s, sc.REACH_HOP_COUNT)) for s in handoffs] == [
        ("handoff Researcher", "delegate", 1),
        ("handoff Writer", "consult", 2),
    ]
    for handoff in handoffs:
        assert handoff["parent_span_id"] == manager["span_id"]
        assert attr(handoff, sc.REACH_HANDOFF_SOURCE) == "Crew Manager"
        (worker,) = [s for s in spans if s["parent_span_id"] == handoff["span_id"]]
        assert worker["name"] == f"invoke_agent {attr(handoff, sc.REACH_HANDOFF_TARGET)}"
    (tool,) = named(spans, "execute_tool lookup_invoice")
    assert parent(spans, tool)["name"] == "invoke_agent Researcher"


def test_delegating_back_and_forth_across_tasks_is_a_detected_loop(
    outcomes: dict[str, Any], collector: CollectorProcess
) -> None:
    spans = one_trace(outcomes, collector, "ping_pong", 10)
    handoffs = [s for s in spans if s["name"].startswith("handoff ")]
    assert [(attr(h, sc.REACH_HANDOFF_SOURCE), attr(h, sc.REACH_HANDOFF_TARGET)) for h in handoffs] == [
        ("Writer", "Researcher"),
        ("Researcher", "Writer"),
        ("Writer", "Researcher"),
    ]
    assert [attr(h, sc.REACH_HOP_COUNT) for h in handoffs] == [1, 2, 3]
    assert [attr(h, sc.REACH_LOOP_DETECTED) for h in handoffs] == [False, False, True]
    (event,) = [e for e in handoffs[2]["events"] if e["name"] == sc.EVENT_LOOP_DETECTED]
    assert event["attributes"][sc.REACH_LOOP_CYCLE] == ["Writer", "Researcher"]


def test_a_handoff_to_no_such_coworker_is_rejected_and_to_a_failing_one_failed(
    outcomes: dict[str, Any], collector: CollectorProcess
) -> None:
    assert "error" not in outcomes["misdirected"]  # CrewAI tells the model; the crew goes on
    spans = one_trace(outcomes, collector, "misdirected", 7)
    (nobody,) = named(spans, "handoff Nobody")
    assert attr(nobody, sc.REACH_HANDOFF_STATUS) == "rejected"
    assert not [s for s in spans if s["parent_span_id"] == nobody["span_id"]]
    (failed,) = named(spans, "handoff Researcher")
    assert attr(failed, sc.REACH_HANDOFF_STATUS) == "failed"
    assert [attr(h, sc.REACH_HOP_COUNT) for h in (nobody, failed)] == [1, 2]
    tries = [s for s in spans if s["parent_span_id"] == failed["span_id"]]  # CrewAI retries a failed agent
    assert tries and {(s["name"], s["status"]["code"]) for s in tries} == {
        ("invoke_agent Researcher", "ERROR")
    }
    (root,) = [s for s in spans if s["parent_span_id"] is None]
    assert root["status"]["code"] != "ERROR"


def test_a_failing_model_call_fails_its_chat_agent_and_workflow_spans(
    outcomes: dict[str, Any], collector: CollectorProcess
) -> None:
    assert outcomes["failing"]["error"] == "BadRequestError"  # the crew's own exception, unchanged
    spans = one_trace(outcomes, collector, "failing", 3)
    by_name = {s["name"]: s for s in spans}
    for name in ("invoke_workflow failing_crew", "invoke_agent Researcher", "chat fake-model"):
        assert by_name[name]["status"]["code"] == "ERROR", name
        assert attr(by_name[name], sc.ERROR_TYPE) == "openai.BadRequestError", name
    assert parent(spans, by_name["chat fake-model"])["name"] == "invoke_agent Researcher"


def test_async_kickoffs_are_one_whole_trace_each(
    outcomes: dict[str, Any], collector: CollectorProcess
) -> None:
    done = outcomes["async"]
    assert done["results"] == [outcomes["billing"]["result"]] * 2
    assert len(done["traces"]) == 2
    for trace_id in done["traces"]:
        found = fetch(collector, trace_id, lambda t: len(t["spans"]) >= 19)
        assert [r["name"] for r in found["roots"]] == ["invoke_workflow billing_crew"]
        assert len(found["spans"]) == 19
        assert len(named(found["spans"], "handoff Researcher")) == 2


def test_a_flow_is_one_trace_with_its_crews_and_its_own_calls_under_it(
    outcomes: dict[str, Any], collector: CollectorProcess
) -> None:
    done = outcomes["flow"]
    assert "error" not in done
    draft, summary = done["result"].split(" | ")
    assert draft.startswith("echo: Draft a reply from echo: INV-7") and "Summarise the findings" in summary
    (trace_id,) = set(done["traces"])  # the flow's workflow and both crews': one trace
    assert len(done["traces"]) == 3

    def complete(found: dict[str, Any]) -> bool:
        names = {s["name"] for s in found["spans"]}
        wanted = {
            "invoke_workflow SupportFlow",
            "invoke_workflow lookup_crew",
            "invoke_workflow summary_crew",
        }
        return wanted | {"GET", "execute_tool lookup_invoice"} <= names

    found = fetch(collector, trace_id, complete)
    spans = found["spans"]
    (root,) = found["roots"]
    assert root["name"] == "invoke_workflow SupportFlow"
    for crew in ("lookup_crew", "summary_crew"):
        (workflow,) = named(spans, f"invoke_workflow {crew}")
        assert workflow["parent_span_id"] == root["span_id"]
    (call,) = named(spans, "GET")  # the flow method's own HTTP call
    assert call["parent_span_id"] == root["span_id"]
    (draft,) = [s for s in named(spans, "chat fake-model") if s["parent_span_id"] == root["span_id"]]
    assert attr(draft, "gen_ai.usage.output_tokens") > 0  # the model asked by the flow itself
    assert parent(spans, named(spans, "execute_tool lookup_invoice")[0])["name"] == "invoke_agent Researcher"


def test_an_exploding_extractor_does_not_change_the_crews_result(outcomes: dict[str, Any]) -> None:
    exploding, billing = outcomes["exploding"], outcomes["billing"]
    assert "error" not in exploding
    assert exploding["result"] == billing["result"]
    assert len(exploding["traces"]) == 1  # the workflow span still ended


def test_uninstrument_restores_crewai_and_instrument_brings_it_back(
    outcomes: dict[str, Any], collector: CollectorProcess
) -> None:
    off = outcomes["uninstrumented"]
    assert "crewai" in off["removed"] and off["hooks_left"] == 0
    assert off["traces"] == []  # no workflow span: CrewAI ran without us
    assert off["result"] == outcomes["billing"]["result"]
    assert off["applied"] == ["crewai", "openai"]
    again = off["again"]
    assert again["result"] == outcomes["billing"]["result"]
    (trace_id,) = again["traces"]
    found = fetch(collector, trace_id, lambda t: len(named(t["spans"], "handoff Researcher")) == 2)
    assert len(named(found["spans"], "handoff Researcher")) == 2


CONTENT = (
    sc.GEN_AI_INPUT_MESSAGES,
    sc.GEN_AI_OUTPUT_MESSAGES,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS,
    sc.GEN_AI_TOOL_CALL_RESULT,
)


def test_no_content_is_captured_by_default(billing: list[Span]) -> None:
    assert [(s["name"], k) for s in billing for k in CONTENT if k in s["attributes"]] == []


def test_under_reach_otel_run_an_app_without_init_is_traced_all_the_same(
    strict: dict[str, Any], collector: CollectorProcess
) -> None:
    assert strict["start"]["hooks"] == 1
    (trace_id,) = strict["billing"]["traces"]
    found = fetch(collector, trace_id, lambda t: bool(t["roots"]))
    assert [(r["name"], r["service"]) for r in found["roots"]] == [
        ("invoke_workflow billing_crew", "crewai-zero-code")
    ]


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "crewai_crew" / "app.py"


def test_the_crewai_example_is_one_trace_under_reach_otel_run(
    crewai_python: Path, collector: CollectorProcess, tmp_path: Path
) -> None:
    """examples/crewai_crew as its README runs it: no tracing code, started by ``reach-otel run``,
    its own fake LLM; the kickoff is one trace with the handoffs and the model calls under their
    agents."""
    variables = {k: v for k, v in app_env().items() if not k.startswith("CREWAI_")}  # the app sets its own
    variables.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_BSP_SCHEDULE_DELAY="200", HOME=str(tmp_path)
    )
    launcher = [str(crewai_python), "-m", "reach_otel", "run", "--service-name", "billing-crew", "--"]
    out = run_ok([*launcher, str(crewai_python), str(EXAMPLE)], variables, tmp_path)
    assert out.stdout.startswith("answer: echo: "), out.stdout[-2000:]
    (listed,) = collector.wait_traces(1, service="billing-crew")
    spans = fetch(collector, listed["trace_id"], lambda t: len(t["spans"]) >= 15)["spans"]
    (root,) = [s for s in spans if s["parent_span_id"] is None]
    assert root["name"] == "invoke_workflow billing_crew"
    flow = [s["name"] for s in spans if s["name"].startswith(("invoke_agent", "handoff"))]
    assert flow == [
        "invoke_agent Researcher",
        "invoke_agent Writer",
        "handoff Researcher",
        "invoke_agent Researcher",
        "handoff Researcher",
        "invoke_agent Researcher",
    ]
    handoffs = named(spans, "handoff Researcher")
    assert [(attr(h, sc.REACH_HANDOFF_MODE), attr(h, sc.REACH_HOP_COUNT)) for h in handoffs] == [
        ("delegate", 1),
        ("consult", 2),
    ]
    assert all(
        parent(spans, t)["name"] == "invoke_agent Researcher"
        for t in named(spans, "execute_tool lookup_invoice")
    )
    chats = named(spans, "chat fake-model")
    assert len(chats) == 8 and all(parent(spans, c)["name"].startswith("invoke_agent ") for c in chats)
    assert all(attr(c, sc.GEN_AI_USAGE_INPUT_TOKENS) > 0 for c in chats)


def test_with_capture_on_tools_agents_and_chats_carry_their_content(
    strict: dict[str, Any], collector: CollectorProcess
) -> None:
    (trace_id,) = strict["billing"]["traces"]
    spans = fetch(collector, trace_id, lambda t: any(s["name"].startswith("handoff") for s in t["spans"]))[
        "spans"
    ]
    tool = next(s for s in spans if s["name"] == "execute_tool lookup_invoice")
    arguments = json.loads(attr(tool, sc.GEN_AI_TOOL_CALL_ARGUMENTS))  # the fake model sends the prompt
    assert list(arguments) == ["query"] and "Find invoice INV-7" in arguments["query"]
    assert json.loads(attr(tool, sc.GEN_AI_TOOL_CALL_RESULT)) == "INV-7: 42 EUR, echo: INV-7 paid"
    agent = next(s for s in spans if s["name"] == "invoke_agent Researcher")
    (prompt,) = json.loads(attr(agent, sc.GEN_AI_INPUT_MESSAGES))
    assert "Find invoice INV-7" in prompt["parts"][0]["content"]
    (answer,) = json.loads(attr(agent, sc.GEN_AI_OUTPUT_MESSAGES))
    assert answer["parts"][0]["content"] == "echo: INV-7: 42 EUR, echo: INV-7 paid"
    chat = next(s for s in spans if s["name"] == "chat fake-model")
    assert [m["role"] for m in json.loads(attr(chat, sc.GEN_AI_INPUT_MESSAGES))] == ["system", "user"]


def test_past_max_hops_with_on_loop_raise_the_crew_stops_with_hop_limit_exceeded(
    strict: dict[str, Any], collector: CollectorProcess
) -> None:
    assert strict["billing"]["error"] == "HopLimitExceeded"
    (trace_id,) = strict["billing"]["traces"]
    spans = fetch(collector, trace_id, lambda t: len(named(t["spans"], "handoff Researcher")) >= 2)["spans"]
    first, *refused = named(spans, "handoff Researcher")
    assert (attr(first, sc.REACH_HOP_COUNT), attr(first, sc.REACH_HANDOFF_STATUS)) == (1, "committed")
    assert refused  # CrewAI retries the failed tool call before giving up: each is refused
    for handoff in refused:
        assert attr(handoff, sc.REACH_HOP_COUNT) > 1
        assert attr(handoff, sc.REACH_HANDOFF_STATUS) == "rejected"
        assert handoff["status"]["code"] == "ERROR"
        assert sc.EVENT_HOP_LIMIT_EXCEEDED in [e["name"] for e in handoff["events"]]
        assert not [s for s in spans if s["parent_span_id"] == handoff["span_id"]]  # no coworker ran
    (root,) = [s for s in spans if s["parent_span_id"] is None]
    assert root["status"]["code"] == "ERROR"
    assert attr(root, sc.ERROR_TYPE) == "reach_otel.HopLimitExceeded"


# -- pure extraction, in this environment -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tool_name", "tool_class", "mode"),
    [
        ("Delegate work to coworker", None, "delegate"),
        ("delegate_work_to_coworker", None, "delegate"),
        ("Ask question to coworker", None, "consult"),
        ("renamed", "AskQuestionTool", "consult"),
        ("lookup_invoice", "BaseTool", None),
        (None, None, None),
    ],
)
def test_delegation_mode(tool_name: Any, tool_class: Any, mode: str | None) -> None:
    assert extract.delegation_mode(tool_name, tool_class) == mode


def test_coworker_is_spelled_as_the_agent_it_matches() -> None:
    roles = ["Senior  Researcher", "Writer"]
    assert extract.coworker({"coworker": 'senior "researcher"'}, roles) == "Senior Researcher"
    assert extract.coworker({"co_worker": "[writer, researcher]"}, roles) == "Writer"
    assert extract.coworker({"coworker": "Nobody  Here"}, roles) == "Nobody Here"
    assert extract.coworker({"task": "x"}, roles) is None
    assert extract.coworker("not a mapping", roles) is None


def test_a_kickoff_is_its_crew_else_its_flow() -> None:
    crew, flow = types.SimpleNamespace(name="desk"), types.SimpleNamespace(name=None)
    assert extract.kickoff_of(types.SimpleNamespace(crew=crew, flow=flow)) == (crew, "desk")
    assert extract.kickoff_of(types.SimpleNamespace(crew=None, flow=flow)) == (flow, "SimpleNamespace")
    assert extract.kickoff_of(types.SimpleNamespace(crew=types.SimpleNamespace(), flow=None))[1] == "crew"
    assert extract.kickoff_of(types.SimpleNamespace(crew=None, flow=None)) is None


def test_usage_tokens_and_response_attributes() -> None:
    assert extract.usage_tokens({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}) == (3, 4)
    assert extract.usage_tokens({"input_tokens": 5, "output_tokens": 6}) == (5, 6)
    assert extract.usage_tokens({"total_tokens": 0}) == (None, None)
    assert extract.usage_tokens(None) == (None, None)

    completed = types.SimpleNamespace(
        response_id="chatcmpl-1",
        finish_reason="tool_calls",
        response=[{"function": {"name": "lookup_invoice", "arguments": "{}"}}],
    )
    assert dict(extract.response_attributes(completed)) == {
        sc.GEN_AI_RESPONSE_ID: "chatcmpl-1",
        sc.GEN_AI_RESPONSE_FINISH_REASONS: ["tool_calls"],
        sc.REACH_LLM_TOOL_CALLS_REQUESTED: ["lookup_invoice"],
    }


def test_reported_error_is_the_exception_being_handled_else_the_message() -> None:
    try:
        raise ValueError("bad input")
    except ValueError:
        exc, kind = extract.reported_error("bad input")
    assert isinstance(exc, ValueError) and kind == "ValueError"
    exc, kind = extract.reported_error("model unavailable")
    assert isinstance(exc, extract.CrewAIError) and str(exc) == "model unavailable"
    assert kind == "reach_otel.instrumentation.crewai.extract.CrewAIError"


def test_without_crewai_the_instrumentor_applies_nothing() -> None:
    import importlib.util

    from reach_otel.instrumentation import available, instrument

    if importlib.util.find_spec("crewai") is not None:
        pytest.skip("crewai is installed in this environment")
    assert "crewai" not in available()
    assert instrument("crewai") == []


def test_the_mcp_sdk_crewai_pins_is_one_warning_line(crewai_python: Path, tmp_path: Path) -> None:
    """CrewAI pins the MCP SDK below 2, which reach_otel's MCP instrumentation does not trace: an
    app in CrewAI's environment that imports it is told so in one line, never in silence."""
    code = (
        "import reach_otel, importlib.metadata\n"
        "reach_otel.init(service_name='crew', endpoint='http://127.0.0.1:9')\n"
        "import mcp\n"
        "print(importlib.metadata.version('mcp'))\n"
    )
    out = run_ok([str(crewai_python), "-c", code], app_env(), tmp_path)
    version = out.stdout.split()[-1]
    assert version.startswith("1."), version
    warned = [line for line in out.stderr.splitlines() if f"mcp {version} is installed" in line]
    assert len(warned) == 1 and "not traced" in warned[0], out.stderr[-2000:]
