"""The collector reads the newest GenAI shape to the same columns and metrics as v1.41.0's.

The same multi-agent app — a workflow, agents, LLM calls reporting cached tokens, a tool that hands
off, a handoff signal raised in a tool, a remote agent call — runs with and without
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``: in process, its spans decode to the
same promoted columns, trace parts and stats on both decode paths; as a subprocess sending OTLP to
a real collector (compiled and pure-Python decoding), it gets the same ``/api/metrics/golden
?by=agent``, ``/api/metrics/agents`` and ``/api/traces`` answers. A workflow span shaped as SPEC §13
reads the newest conventions (named ``invoke_agent``, operation ``invoke_workflow``, with
``gen_ai.agent.name``) is a workflow there, never an agent call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from collector_process import CollectorProcess
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import reach_otel
from reach_collector.api.tempo_otlp import set_any
from reach_collector.ingest import fast
from reach_collector.ingest.decode import PROTOBUF, parse_for_rows
from reach_collector.ingest.normalize import promote
from reach_collector.ingest.rows import SpanBatch, flatten
from reach_otel import _shape
from reach_otel import semconv as sc
from reach_otel.config import load_settings
from reach_otel.handler import TelemetryHandler, set_handler
from reach_otel.testing.fake_llm import FakeLLMServer

# The columns ingest promotes from attributes, and the ones it copies from the span itself.
PROMOTED: Final = (
    "name",
    "kind",
    "status_code",
    "service",
    "operation",
    "agent",
    "tool",
    "model",
    "provider",
    "input_tokens",
    "output_tokens",
    "handoff_source",
    "handoff_target",
    "handoff_status",
    "handoff_mode",
    "hop_count",
    "loop_detected",
    "error_type",
    "conversation_id",
)
PART_COLUMNS: Final = ("root_name", "first_name", "span_count", "error_count", "agents", "services", "hops")


# ---------------------------------------------------------------- the app, in process


def _run_app(latest: bool) -> list[Any]:
    """The multi-agent app's spans in one shape (our own provider and handler, restored after)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "support-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous_shape = _shape.set_latest(latest)
    previous = set_handler(TelemetryHandler(tracer_provider=provider, settings=load_settings(env={})))
    try:

        @reach_otel.agent(name="Ledger", remote=True)
        def ledger() -> str:
            return "posted"

        @reach_otel.tool(name="transfer_to_billing")
        def transfer() -> None:
            with reach_otel.handoff(None, "Billing", mode="takeover") as h:
                for event in ("accept", "start", "commit"):
                    h.transition(event)

        @reach_otel.agent(name="Triage")
        def triage() -> None:
            llm = reach_otel.handler.get_handler().start_llm("gpt-test", "openai")
            assert llm is not None
            llm.span.set_attributes(
                {
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 40,
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 6,
                    sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 30,
                    _shape.cache_write_key(): 10,
                }
            )
            llm.input_tokens, llm.output_tokens = 40, 6
            llm.stop()
            transfer()

        @reach_otel.agent(name="Billing")
        def billing() -> str:
            return ledger()

        @reach_otel.workflow(name="support_turn")
        def turn() -> None:
            triage()
            billing()

        for _ in range(2):
            turn()
        with reach_otel.session(session_id="S1"):
            turn()
    finally:
        set_handler(previous)
        _shape.set_latest(previous_shape)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _body(spans: list[Any]) -> bytes:
    return encode_spans(spans).SerializeToString()


def _reference(body: bytes) -> SpanBatch:
    return flatten(parse_for_rows(body, PROTOBUF))


@pytest.fixture(params=["compiled", "pure"])
def decode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Callable[[bytes], SpanBatch]:
    if request.param == "pure":
        return _reference
    if fast._fastflat is None:
        pytest.skip("the _fastflat extension is not built")
    monkeypatch.delenv("REACH_COLLECTOR_PURE_PYTHON", raising=False)
    from test_fast_path import check  # the compiled batch, checked value by value against the reference

    def compiled(body: bytes) -> SpanBatch:
        batch = check(body)
        assert batch is not None, "the compiled path declined our own spans"
        return batch

    return compiled


def _columns(batch: SpanBatch) -> list[dict[str, Any]]:
    return batch.table.select(list(PROMOTED)).to_pylist()


def _parts(batch: SpanBatch) -> list[tuple[Any, ...]]:
    rows = batch.parts.select(list(PART_COLUMNS)).to_pylist()
    return sorted(tuple(json.dumps(r[c]) for c in PART_COLUMNS) for r in rows)


def _stats(batch: SpanBatch) -> tuple[Any, ...]:
    calls: dict[tuple[Any, ...], float] = {}
    for (agent, op, error, _bucket), (count, _seconds) in batch.stats.calls.items():
        calls[(agent, op, error)] = calls.get((agent, op, error), 0) + count
    return (
        sorted(calls.items(), key=repr),
        sorted(batch.stats.tokens.items(), key=repr),
        sorted(batch.stats.handoffs.items(), key=repr),
        sorted(tuple(v) for v in batch.stats.traces.values()),
    )


def test_the_shapes_differ_in_attributes_only() -> None:
    """The premise: the newest shape adds attributes to the same spans, and nothing else."""
    old, new = _run_app(False), _run_app(True)
    assert [(s.name, s.kind) for s in old] == [(s.name, s.kind) for s in new]
    assert len(old) == 3 * 7  # workflow, Triage, chat, tool, handoff, Billing, Ledger
    added: dict[str, set[str]] = {}
    for a, b in zip(old, new, strict=True):
        assert set(a.attributes) - {sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS} <= set(b.attributes), a.name
        extra = set(b.attributes) - set(a.attributes)
        if extra:
            added.setdefault(b.name, set()).update(extra)
    assert added == {
        "invoke_agent Ledger": {sc.GEN_AI_CALLER_TYPE, sc.GEN_AI_CALLER_NAME},
        "execute_tool transfer_to_billing": {
            sc.GEN_AI_AGENT_NAME,
            sc.GEN_AI_TRANSFER_MODE,
            sc.GEN_AI_TRANSFER_TARGET_NAME,
            sc.GEN_AI_TRANSFER_TARGET_TYPE,
        },
        "handoff Billing": {sc.GEN_AI_TRANSFER_TARGET_TYPE},
        "chat gpt-test": {sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS},
    }


def test_both_shapes_decode_to_the_same_columns(decode: Callable[[bytes], SpanBatch]) -> None:
    old, new = decode(_body(_run_app(False))), decode(_body(_run_app(True)))
    assert _columns(old) == _columns(new)
    assert _parts(old) == _parts(new)
    assert _stats(old) == _stats(new)
    rows = _columns(new)
    tool = next(r for r in rows if r["name"] == "execute_tool transfer_to_billing")
    assert (tool["operation"], tool["agent"], tool["tool"], tool["handoff_target"]) == (
        sc.OP_TOOL,
        "Triage",
        "transfer_to_billing",
        None,  # a tool that hands off is still a tool; its handoff span is the handoff
    )
    workflow = next(r for r in rows if r["name"] == "invoke_workflow support_turn")
    assert (workflow["operation"], workflow["agent"]) == (sc.OP_WORKFLOW, None)
    parts = new.parts.to_pylist()
    assert [p["agents"] for p in parts] == [["Billing", "Ledger", "Triage"]] * 3
    assert [p["hops"] for p in parts] == [1, 1, 1]


# ---------------------------------------------------------------- a workflow named as an agent


def _request(spans: list[tuple[str, dict[str, Any]]]) -> bytes:
    """One trace: the first span the root, the others its children."""
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    set_any(rs.resource.attributes.add(key=sc.SERVICE_NAME).value, "support-app")
    ss = rs.scope_spans.add()
    for i, (name, attrs) in enumerate(spans):
        span = ss.spans.add(trace_id=b"\x05" * 16, span_id=bytes([i + 1]) * 8, name=name)
        if i:
            span.parent_span_id = b"\x01" * 8
        span.start_time_unix_nano, span.end_time_unix_nano = 10 + i, 1000 + i
        for key, value in attrs.items():
            set_any(span.attributes.add(key=key).value, value)
    return request.SerializeToString()


WORKFLOW_AS_AGENT: Final = {
    sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW,
    sc.GEN_AI_AGENT_NAME: "support_turn",
}
AGENT: Final = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "Triage"}


@pytest.mark.parametrize(
    "attrs",
    [
        WORKFLOW_AS_AGENT,
        {**WORKFLOW_AS_AGENT, sc.REACH_AGENT_NAME: "support_turn"},
        {sc.TRACELOOP_SPAN_KIND: "workflow", sc.GEN_AI_AGENT_NAME: "support_turn"},
        {sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW, sc.OPENINFERENCE_AGENT_NAME: "support_turn"},
    ],
    ids=["gen_ai.agent.name", "reach.agent.name", "traceloop", "agent.name"],
)
def test_a_workflow_is_never_an_agent(attrs: dict[str, Any]) -> None:
    promoted = promote(attrs, 0, name="invoke_agent support_turn")
    assert (promoted.operation, promoted.agent) == (sc.OP_WORKFLOW, None)


def test_a_workflow_named_as_an_agent_decodes_as_a_workflow(decode: Callable[[bytes], SpanBatch]) -> None:
    batch = decode(
        _request([("invoke_agent support_turn", WORKFLOW_AS_AGENT), ("invoke_agent Triage", AGENT)])
    )
    rows = _columns(batch)
    assert [(r["operation"], r["agent"]) for r in rows] == [(sc.OP_WORKFLOW, None), (sc.OP_AGENT, "Triage")]
    assert batch.parts.to_pylist()[0]["agents"] == ["Triage"]
    assert {key[:2] for key in batch.stats.calls} == {(None, sc.OP_WORKFLOW), ("Triage", sc.OP_AGENT)}


# ---------------------------------------------------------------- the app as a subprocess

LIB: Final = '''
    """The app's transfer tool and handoff signal, imported after init() (declarative targets)."""
    import reach_otel


    class Transfer(Exception):
        def __init__(self, to):
            super().__init__(to)
            self.target_agent_name = to


    @reach_otel.tool(name="escalate")
    def escalate():
        raise Transfer("Humans")


    @reach_otel.tool(name="transfer_to_billing")
    def transfer_to_billing():
        with reach_otel.handoff(None, "Billing", mode="takeover") as h:
            for event in ("accept", "start", "commit"):
                h.transition(event)
        return "Billing"
'''
APP: Final = '''
    """A support turn: Triage (OpenAI) hands off to Billing (Anthropic), which calls Ledger remotely."""
    import sys

    import anthropic
    import openai

    import reach_otel

    reach_otel.init(service_name="support-app")
    import supportlib

    URL = sys.argv[1]
    oa = openai.OpenAI(base_url=URL + "/v1", api_key="test", max_retries=0)
    an = anthropic.Anthropic(base_url=URL, api_key="test", max_retries=0)
    ASK = [{"role": "user", "content": "where is my invoice"}]
    FAIL = [{"role": "user", "content": "[error:500]"}]  # the fake LLM answers 500


    @reach_otel.agent(name="Ledger", remote=True)
    def ledger():
        return "posted"


    @reach_otel.agent(name="Triage")
    def triage(fail):
        oa.chat.completions.create(model="gpt-test", messages=ASK)
        stream = oa.chat.completions.create(
            model="gpt-test", messages=ASK, stream=True, stream_options={"include_usage": True}
        )
        list(stream)
        try:
            supportlib.escalate()  # a tool raising the declared handoff signal
        except supportlib.Transfer:
            pass
        supportlib.transfer_to_billing()  # a tool handing off
        if fail:
            oa.chat.completions.create(model="gpt-test", messages=FAIL)


    @reach_otel.agent(name="Billing")
    def billing():
        an.messages.create(model="claude-test", max_tokens=64, messages=ASK)
        list(an.messages.create(model="claude-test", max_tokens=64, messages=ASK, stream=True))
        return ledger()


    @reach_otel.workflow(name="support_turn")
    def turn(fail):
        try:
            triage(fail)
        except openai.InternalServerError:
            pass
        billing()


    for i in range(4):
        with reach_otel.session(session_id=f"S{i}"):
            turn(fail=i == 3)
    assert reach_otel.shutdown(), "spans were dropped"
'''


class CachingLLM(FakeLLMServer):
    """The fake LLM, reporting cached input tokens as OpenAI and Anthropic do."""

    def answer(self, method: str, path: str, headers: Any, body: Any) -> Any:
        answer = super().answer(method, path, headers, body)
        for payload in [answer.body] if answer.body is not None else [p for _, p in answer.events or ()]:
            usage = (
                (payload.get("message") or {}).get("usage") or payload.get("usage")
                if isinstance(payload, dict)
                else None
            )
            if isinstance(usage, dict) and "prompt_tokens_details" in usage:
                usage["prompt_tokens_details"]["cached_tokens"] = 2
            elif isinstance(usage, dict) and "cache_read_input_tokens" in usage:
                usage.update(cache_read_input_tokens=20, cache_creation_input_tokens=5)
        return answer


@pytest.fixture(scope="module")
def llm() -> Iterator[CachingLLM]:
    with CachingLLM() as server:
        yield server


def _run(tmp_path: Path, collector: CollectorProcess, llm: FakeLLMServer, latest: bool) -> None:
    app = tmp_path / "app"
    app.mkdir(exist_ok=True)
    (app / "supportlib.py").write_text(textwrap.dedent(LIB))
    (app / "support_app.py").write_text(textwrap.dedent(APP))
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(app),
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "REACH_OTEL_HANDOFF_EXCEPTIONS": "supportlib:Transfer@target_agent_name",
        # The anthropic SDK traces its own calls too (a second CLIENT span per call, counted again
        # under the agent): only ours here, the shapes being what this test compares.
        "ANTHROPIC_OPEN_TELEMETRY": "false",
    }
    if latest:
        env[_shape.OPT_IN_ENV] = "http," + _shape.GEN_AI_LATEST_EXPERIMENTAL
    done = subprocess.run(
        [sys.executable, str(app / "support_app.py"), llm.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


_VOLATILE: Final = {
    "until",
    "trace_id",
    "start_time",
    "start_time_unix_nano",
    "duration_ms",
    "throughput_per_min",
}


def _stable(value: Any) -> Any:
    """An API answer without what depends on the clock: times, ids, latencies, rates per minute."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE and not k.endswith("_ms")}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _answers(collector: CollectorProcess) -> dict[str, Any]:
    traces = collector.wait_traces(4)
    golden = collector.get("/api/metrics/golden", by="agent", window="1h")
    agents = collector.get("/api/metrics/agents", window="1h")
    by_agent = {
        agent: len(collector.get("/api/traces", agent=agent, limit=100)["traces"])
        for agent in ("Triage", "Billing", "Ledger", "support_turn")
    }
    return {
        "golden": _stable(golden),
        "agents": _stable(agents),
        "traces": sorted(json.dumps(t, sort_keys=True) for t in _stable(traces)),
        "by_agent": by_agent,
        "errors": len(collector.get("/api/traces", status="error", limit=100)["traces"]),
    }


@pytest.mark.parametrize("path", ["compiled", "pure"])
def test_the_same_app_in_both_shapes_gets_the_same_answers(
    tmp_path: Path, llm: CachingLLM, path: str
) -> None:
    if path == "compiled" and fast._fastflat is None:
        pytest.skip("the _fastflat extension is not built")
    env = {"REACH_COLLECTOR_PURE_PYTHON": "1"} if path == "pure" else {}
    answers = []
    for latest in (False, True):
        with CollectorProcess(tmp_path / f"latest-{latest}.duckdb", env=env) as collector:
            _run(tmp_path, collector, llm, latest)
            answers.append(_answers(collector))
            if latest:  # the newest shape did arrive: its attributes are in the stored spans
                tid = collector.wait_traces(4)[0]["trace_id"]
                spans = collector.get(f"/api/traces/{tid}")["spans"]
                names = {s["name"]: s for s in spans}
                assert names["invoke_agent Ledger"]["attributes"][sc.GEN_AI_CALLER_NAME] == "Billing"
                assert names["invoke_agent Ledger"]["kind"] == SpanKind.CLIENT.name
                for tool in ("execute_tool transfer_to_billing", "execute_tool escalate"):
                    assert names[tool]["attributes"][sc.GEN_AI_TRANSFER_TARGET_TYPE] == "agent"
                assert names["chat claude-test"]["attributes"][sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS] == 5
    old, new = answers
    assert old == new
    # What both say, so the equality is not of two empty answers.
    groups = {g["key"]: (g["calls"], g["errors"]) for g in new["golden"]["groups"]}
    assert groups == {"Triage": (4, 1), "Billing": (4, 0), "Ledger": (4, 0)}
    tokens = {a["agent"]: (a["input_tokens"], a["output_tokens"]) for a in new["agents"]["agents"]}
    # Triage: 2 OpenAI calls of 4 prompt tokens (cached ones included) a turn, and the failed one;
    # Billing: 2 Anthropic calls of 4 + 20 read + 5 written.
    assert tokens["Billing"] == (4 * 2 * 29, 4 * 2 * 5)
    assert tokens["Triage"][0] == 4 * 2 * 4
    assert new["agents"]["handoffs"]["total"] == 4 * 2  # Billing (the tool) and Humans (the signal)
    assert new["by_agent"] == {"Triage": 4, "Billing": 4, "Ledger": 4, "support_turn": 0}
    assert new["errors"] == 1
    assert {json.loads(t)["root_name"] for t in new["traces"]} == {"invoke_workflow support_turn"}
