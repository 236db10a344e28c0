"""Conversations (SPEC §18): ``GET /api/conversations`` sums each conversation's traces over a
window — turns, agents, handoffs, LLM tokens and their price, errors, evaluations, first and last —
``GET /api/conversations/{id}`` lists its traces in start order, and ``reach-otel conversations``
prints both readable at 80 columns."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from eval_helpers import Served, tracer
from opentelemetry.trace import Status, StatusCode

from reach_collector.config import Settings
from reach_otel import semconv as sc

PRICES = {"conv-model": {"input": 1.0, "output": 2.0}}  # USD per 1M tokens
LONG = "conversation-with-a-rather-long-identifier-0001"


def _turn(source: Any, conversation: str, *, agents: tuple[str, ...], fail: bool = False) -> str:
    """One request of a conversation: a workflow, its agents in turn with a handoff between each
    two, an LLM call of 100 in / 50 out tokens in each; returns its trace id."""
    conv = {sc.GEN_AI_CONVERSATION_ID: conversation}
    with source.start_as_current_span(
        "invoke_workflow support", attributes={**conv, sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW}
    ) as root:
        for i, agent in enumerate(agents):
            if i:
                with source.start_as_current_span(
                    f"handoff {agent}",
                    attributes={
                        **conv,
                        sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
                        sc.REACH_HANDOFF_SOURCE: agents[i - 1],
                        sc.REACH_HANDOFF_TARGET: agent,
                    },
                ):
                    pass
            with source.start_as_current_span(
                f"invoke_agent {agent}",
                attributes={**conv, sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: agent},
            ) as run:
                llm = {
                    **conv,
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_REQUEST_MODEL: "conv-model",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 100,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 50,
                }
                with source.start_as_current_span("chat conv-model", attributes=llm):
                    pass
                if fail and i == len(agents) - 1:
                    run.set_status(Status(StatusCode.ERROR, "no answer"))
    return format(root.get_span_context().trace_id, "032x")


def _populate(served: Served) -> dict[str, list[str]]:
    provider, source = tracer(served)
    first = [
        _turn(source, LONG, agents=("triage", "billing")),
        _turn(source, LONG, agents=("billing",), fail=True),
    ]
    second = [_turn(source, "c-2", agents=("triage",))]
    _turn(tracer(served)[1], "", agents=("triage",))  # an empty id is no conversation
    with source.start_as_current_span("invoke_agent lone", attributes={sc.GEN_AI_AGENT_NAME: "lone"}):
        pass  # no conversation at all
    provider.shutdown()
    assert served.post("/api/feedback", json={"trace_id": first[0], "label": "good"}).status_code == 202
    assert served.post("/api/feedback", json={"trace_id": first[1], "label": "bad"}).status_code == 202
    return {LONG: first, "c-2": second}


def test_conversations_are_summed_exactly(start_served: Callable[..., Served]) -> None:
    served = start_served(replace(Settings(), prices=PRICES))
    traces = _populate(served)
    body = served.get("/api/conversations", params={"window": "1h"}).json()
    assert body["window_s"] == 3600
    by_id = {c["conversation_id"]: c for c in body["conversations"]}
    assert set(by_id) == {LONG, "c-2"}
    long = by_id[LONG]
    assert {k: v for k, v in long.items() if k not in ("first", "last")} == {
        "conversation_id": LONG,
        "traces": 2,
        "agents": ["billing", "triage"],
        "handoffs": 1,
        "input_tokens": 300,
        "output_tokens": 150,
        "cost_usd": (300 * 1.0 + 150 * 2.0) / 1e6,
        "errors": 1,
        "evaluations": 2,
    }
    assert long["first"] < long["last"]
    assert by_id["c-2"]["traces"] == 1 and by_id["c-2"]["evaluations"] == 0 and by_id["c-2"]["errors"] == 0
    assert [c["conversation_id"] for c in body["conversations"]] == ["c-2", LONG]  # last active first
    assert [
        c["conversation_id"]
        for c in served.get("/api/conversations", params={"limit": "1"}).json()["conversations"]
    ] == ["c-2"]

    one = served.get(f"/api/conversations/{LONG}").json()
    assert one["conversation_id"] == LONG and one["trace_count"] == 2
    assert [t["trace_id"] for t in one["traces"]] == traces[LONG]  # in start order
    assert [t["error_count"] for t in one["traces"]] == [0, 1]


def test_conversation_parameters_are_checked(served: Served) -> None:
    assert served.get("/api/conversations/nobody").status_code == 404
    assert served.get("/api/conversations/" + "x" * 300).status_code == 400
    for params in ({"window": "soon"}, {"window": "0m"}, {"limit": "many"}, {"limit": "9" * 40}):
        answer = served.get("/api/conversations", params=params)
        assert answer.status_code == 400, (params, answer.text)
        assert next(iter(params)) in answer.json()["detail"]


def _cli(url: str, *argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    env.update({"COLUMNS": "80", "LINES": "50", "TZ": "UTC"})
    done = subprocess.run(
        [sys.executable, "-m", "reach_otel.cli", *argv, "--url", url],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        assert len(line) <= 80, line
    return done.stdout


def test_the_cli_reads_at_80_columns(start_served: Callable[..., Served]) -> None:
    served = start_served(replace(Settings(), prices=PRICES))
    traces = _populate(served)
    listing = _cli(served.url, "conversations", "--window", "1h")
    assert "2 conversation(s)" in listing
    first_column = "".join(re.split(r"\s{2,}", line.strip())[0] for line in listing.splitlines())
    assert LONG in first_column  # folded, never cut
    assert "300/150" in listing and "c-2" in listing
    detail = _cli(served.url, "conversations", "c-2")
    assert traces["c-2"][0] in detail  # the trace id whole, on one line
    empty = _cli(start_served().url, "conversations")  # a collector with none
    assert "no conversations" in empty
