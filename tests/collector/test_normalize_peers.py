"""Other tools' spans, fully normalised (SPEC §4 "Ingesting other tools' spans", §11, §13).

The spans are built as the tools emit them (OpenInference's openai, openai-agents and decorator
tracers, OpenLLMetry's traceloop SDK and openai instrumentation, OTel contrib's openai-v2 under a
GenAI-semconv agent span). Checked three ways: the promotion rules on their own; the compiled
decoder giving the reference's rows for those shapes (and for ``llm.invocation_parameters`` of every
JSON shape); and real OTLP from the OTel SDK into a real collector on both decode paths, where
``/metrics`` must count each agent's tokens as ``/api/metrics/agents`` does (an LLM span without an
agent attribute under its nearest agent ancestor), search must find an OpenInference AGENT span
named only by its span name, a model only in ``llm.invocation_parameters`` must count (failed
calls included), and the Agents SDK's handoff must be a handoff, not a tool.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
from collector_process import CollectorProcess
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from prometheus_client.parser import text_string_to_metric_families

from reach_collector.api.tempo_otlp import set_any
from reach_collector.ingest import fast
from reach_collector.ingest.decode import PROTOBUF, parse_for_rows
from reach_collector.ingest.normalize import Promoted, invocation_model, promote
from reach_collector.ingest.rows import flatten
from reach_otel import semconv as sc

OI_KIND: Final = sc.OPENINFERENCE_SPAN_KIND
PARAMS: Final = sc.OPENINFERENCE_LLM_INVOCATION_PARAMETERS
INPUT: Final = sc.OPENINFERENCE_INPUT_VALUE
OUTPUT: Final = sc.OPENINFERENCE_OUTPUT_VALUE


def _p(attrs: dict[str, Any], name: str = "", status: int = 0) -> Promoted:
    return promote(attrs, status, (), None, name)


# ---------------------------------------------------------------- the promotion rules


def test_an_openinference_agent_named_only_by_its_span_name_is_that_agent() -> None:
    # @tracer.agent(name="planner"): the kind, input and output, and the name only as the span's.
    decorated = {OI_KIND: "AGENT", INPUT: "plan a trip", "input.mime_type": "text/plain"}
    assert (_p(decorated, "planner").operation, _p(decorated, "planner").agent) == ("invoke_agent", "planner")
    # agent.name, where the instrumentation records it, comes first; an empty span name is no name.
    named = {OI_KIND: "AGENT", sc.OPENINFERENCE_AGENT_NAME: "Weather", "graph.node.id": "Weather"}
    assert _p(named, "span name").agent == "Weather"
    assert _p({OI_KIND: "AGENT"}, "").agent is None
    # Only OpenInference's AGENT spans: a CHAIN is no agent, and an invoke_agent span of the GenAI
    # conventions without gen_ai.agent.name stays unnamed (its span name is ours to read, not a name).
    assert _p({OI_KIND: "CHAIN"}, "planner").agent is None
    assert _p({sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, OI_KIND: "AGENT"}, "invoke_agent").agent is None


def test_a_model_only_in_invocation_parameters_is_the_model() -> None:
    failed = {
        OI_KIND: "LLM",
        sc.OPENINFERENCE_LLM_SYSTEM: "openai",
        PARAMS: '{"model": "gpt-4o-mini", "temperature": 0}',
    }
    p = _p(failed, "ChatCompletion", status=2)
    assert (p.operation, p.model, p.provider) == ("chat", "gpt-4o-mini", "openai")
    # llm.model_name (the response's) wins where there is one; LangChain's key is model_name.
    assert _p({**failed, sc.OPENINFERENCE_LLM_MODEL_NAME: "gpt-4o-mini-2024-07-18"}).model == (
        "gpt-4o-mini-2024-07-18"
    )
    assert _p({OI_KIND: "LLM", PARAMS: '{"model_name": "gpt-4.1-nano", "_type": "openai-chat"}'}).model == (
        "gpt-4.1-nano"
    )
    # Only LLM spans: a tool's parameters name no model.
    assert _p({OI_KIND: "TOOL", sc.OPENINFERENCE_TOOL_NAME: "t", PARAMS: '{"model": "m"}'}).model is None
    assert _p({sc.GEN_AI_OPERATION_NAME: sc.OP_GENERATE_CONTENT, PARAMS: '{"model": "g"}'}).model == "g"


@pytest.mark.parametrize(
    ("name", "attrs", "source", "target"),
    [
        # OpenInference's openai-agents instrumentation, now: the agents as input and output values.
        ("handoff to Billing", {INPUT: "Triage", OUTPUT: "Billing"}, "Triage", "Billing"),
        # Before it recorded them: the target from the span name, no source.
        ("handoff to Billing", {sc.OPENINFERENCE_LLM_SYSTEM: "openai"}, None, "Billing"),
        # A handoff with no target agent is named "handoff"; a masked value is no name.
        ("handoff", {INPUT: "Triage"}, "Triage", None),
        ("handoff to ", {INPUT: sc.OPENINFERENCE_REDACTED, OUTPUT: "Billing"}, None, "Billing"),
    ],
)
def test_the_agents_sdk_handoff_is_a_handoff(
    name: str, attrs: dict[str, Any], source: str | None, target: str | None
) -> None:
    p = _p({OI_KIND: "TOOL", **attrs}, name)
    assert (p.operation, p.tool) == ("handoff", None)
    assert (p.agent, p.handoff_source, p.handoff_target) == (source, source, target)


@pytest.mark.parametrize(
    ("name", "attrs"),
    [
        ("handoff to Billing", {OI_KIND: "TOOL", sc.OPENINFERENCE_TOOL_NAME: "transfer"}),  # a real tool
        # Not OpenInference's: the operation is named.
        ("handoff to Billing", {OI_KIND: "TOOL", sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL}),
        ("handoffs to Billing", {OI_KIND: "TOOL"}),
        ("Handoff to Billing", {OI_KIND: "TOOL"}),
        ("handoff to Billing", {OI_KIND: "CHAIN"}),
    ],
)
def test_other_tool_spans_stay_what_they_were(name: str, attrs: dict[str, Any]) -> None:
    assert _p(attrs, name).operation != "handoff"


# (llm.invocation_parameters, the model json.loads reads from it, whether the compiled path reads it)
INVOCATION_CASES: Final = [
    ('{"model": "gpt-4o-mini", "temperature": 0.2}', "gpt-4o-mini", True),
    ('{"model_name": "claude-3-5"}', "claude-3-5", True),
    ('{"model": "", "model_name": "x"}', "x", True),
    ('{"model": 5, "model_name": "x"}', "x", True),
    ('{"model": "a", "model": "b"}', "b", True),
    ('{"model": "a", "model": null}', None, True),
    ('{"model": true}', None, True),
    ("{}", None, True),
    ('{"stop": ["\\n", "\\u00e9\\"\\\\/\\b\\f\\r\\t"], "model": "m"}', "m", True),
    (' \n{"model":"m"}\t\r ', "m", True),
    ('{"model":"m"} x', None, True),
    ('[{"model": "m"}]', None, True),
    ('"model"', None, True),
    ("", None, True),
    ("NaN", None, True),
    ('\ufeff{"model": "m"}', None, True),
    ('{"a": NaN, "b": -Infinity, "c": Infinity, "d": -0.5E-3, "e": 1e5, "f": 0, "model": "m"}', "m", True),
    ('{"a": [1, {"b": {"model": "inner"}}], "c": [], "d": {}, "model_name": "outer"}', "outer", True),
    ('{"model": "é模型 ✓"}', "é模型 ✓", True),
    ('{"a": "\x7f", "model": "m"}', "m", True),
    # Where only Python can say: the compiled path leaves the request to the reference.
    ('{"model": "g\\u0070t"}', "gpt", False),
    ('{"mod\\u0065l": "x"}', "x", False),
    ('{"model": "m"', None, False),
    ('{"a": 01, "model": "m"}', None, False),
    ('{"model": "m",}', None, False),
    ('{"a": "x\\q", "model": "m"}', None, False),
    ('{"a": "x\x01", "model": "m"}', None, False),
    ('{"a": tru, "model": "m"}', None, False),
    ('{"a": 1' + "0" * 200 + ', "model": "m"}', "m", False),
    ('{"a": ' + "[" * 40 + "]" * 40 + ', "model": "m"}', "m", False),
]


@pytest.mark.parametrize(("text", "model", "_taken"), INVOCATION_CASES)
def test_invocation_parameters_are_read_as_json_loads_reads_them(
    text: str, model: str | None, _taken: bool
) -> None:
    assert invocation_model(text) == model


# ---------------------------------------------------------------- the compiled decoder agrees


def _request(spans: list[tuple[str, dict[str, Any], int]]) -> bytes:
    """One trace of sibling spans (name, attributes, status code) under one root."""
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for i, (name, attrs, code) in enumerate(spans):
        span = ss.spans.add(trace_id=b"\x07" * 16, span_id=bytes([i + 1]) * 8, name=name)
        if i:
            span.parent_span_id = b"\x01" * 8
        span.start_time_unix_nano, span.end_time_unix_nano = 10 + i, 1000 + i
        span.status.code = code
        for key, value in attrs.items():
            set_any(span.attributes.add(key=key).value, value)
    return request.SerializeToString()


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[bytes], Any]]:
    if fast._fastflat is None:
        pytest.skip("the _fastflat extension is not built")
    monkeypatch.delenv("REACH_COLLECTOR_PURE_PYTHON", raising=False)
    from test_fast_path import check  # compares the compiled batch with the reference's, value by value

    yield check


PEER_SPANS: Final[list[tuple[str, dict[str, Any], int]]] = [
    ("planner", {OI_KIND: "AGENT", INPUT: "plan"}, 0),
    ("", {OI_KIND: "AGENT"}, 0),
    ("ChatCompletion", {OI_KIND: "LLM", PARAMS: '{"model": "gpt-4o-mini"}'}, 2),
    ("ChatOpenAI", {OI_KIND: "llm", PARAMS: '{"model_name": "gpt-4.1-nano"}', "llm.model_name": ""}, 0),
    ("x", {sc.GEN_AI_OPERATION_NAME: sc.OP_GENERATE_CONTENT, PARAMS: '{"model": "g"}'}, 0),
    ("x", {sc.GEN_AI_OPERATION_NAME: "other", PARAMS: '{"model": "g"}'}, 0),
    ("x", {OI_KIND: "LLM", PARAMS: 7}, 0),
    ("x", {OI_KIND: "LLM", PARAMS: math.nan}, 0),
    ("handoff to Billing", {OI_KIND: "TOOL", INPUT: "Triage", OUTPUT: "Billing"}, 0),
    ("handoff to ", {OI_KIND: "Tool", INPUT: sc.OPENINFERENCE_REDACTED, OUTPUT: "B"}, 0),
    ("handoff", {OI_KIND: "TOOL", OUTPUT: sc.OPENINFERENCE_REDACTED}, 0),
    ("handoff to B", {OI_KIND: "TOOL", sc.OPENINFERENCE_TOOL_NAME: "t"}, 0),
    ("handoff to B", {OI_KIND: "TOOL", sc.TRACELOOP_SPAN_KIND: "tool"}, 0),
    ("handoff to B", {OI_KIND: "TOOL", INPUT: 3, OUTPUT: True}, 0),
]


def test_the_compiled_path_reads_the_peers_shapes_as_the_reference(compiled: Callable[[bytes], Any]) -> None:
    batch = compiled(_request(PEER_SPANS))
    assert batch is not None, "the compiled path declined the peers' ordinary shapes"
    rows = batch.table.select(["name", "operation", "agent", "model", "handoff_source", "handoff_target"])
    got = rows.to_pylist()
    assert got[0]["agent"] == "planner" and got[1]["agent"] is None
    assert (got[2]["model"], got[3]["model"], got[4]["model"], got[5]["model"]) == (
        "gpt-4o-mini",
        "gpt-4.1-nano",
        "g",
        None,
    )
    assert (got[8]["operation"], got[8]["handoff_source"], got[8]["handoff_target"]) == (
        "handoff",
        "Triage",
        "Billing",
    )
    assert (got[9]["handoff_source"], got[9]["handoff_target"], got[10]["handoff_target"]) == (
        None,
        "B",
        None,
    )
    assert [r["operation"] for r in got[11:13]] == ["execute_tool", "execute_tool"]


@pytest.mark.parametrize(("text", "model", "taken"), INVOCATION_CASES)
def test_the_compiled_path_reads_invocation_parameters_as_the_reference(
    compiled: Callable[[bytes], Any], text: str, model: str | None, taken: bool
) -> None:
    body = _request([("root", {}, 0), ("ChatCompletion", {OI_KIND: "LLM", PARAMS: text}, 2)])
    batch = compiled(body)  # None: declined, the reference decodes it
    assert (batch is not None) is taken
    reference = flatten(parse_for_rows(body, PROTOBUF))
    assert reference.table.column("model").to_pylist() == [None, model]


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=True), st.text(max_size=6)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["model", "model_name", "a", "é", 'q"', ""]), inner, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    _json,
    st.booleans(),
    st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]),
    st.sampled_from(["", " ", "\n\t"]),
)
def test_generated_invocation_parameters_agree(
    value: Any, ascii_only: bool, separators: tuple[str, str], pad: str
) -> None:
    if fast._fastflat is None or not fast.enabled():
        pytest.skip("the compiled path is off")
    from test_fast_path import check

    text = pad + json.dumps(value, ensure_ascii=ascii_only, separators=separators) + pad
    body = _request([("root", {}, 0), ("llm", {OI_KIND: "LLM", PARAMS: text}, 0)])
    batch = check(body)
    if batch is not None:
        assert batch.table.column("model").to_pylist() == [None, invocation_model(text)]


# ---------------------------------------------------------------- real OTLP into a real collector

CHAT_INPUT: Final = json.dumps({"messages": [{"role": "user", "content": "Where is invoice 7?"}]})


def _openai_agents_trace(tracer: Tracer) -> None:
    """OpenInference's openai-agents instrumentation (a triage agent handing off to billing), with
    OpenInference's openai instrumentation under it for a call that fails (no response: the model
    is only in llm.invocation_parameters)."""
    with tracer.start_as_current_span("Agent workflow", attributes={OI_KIND: "AGENT"}):
        triage = {
            OI_KIND: "AGENT",
            sc.OPENINFERENCE_AGENT_NAME: "Triage Agent",
            "graph.node.id": "Triage Agent",
        }
        with tracer.start_as_current_span("Triage Agent", attributes=triage):
            with tracer.start_as_current_span("response", attributes=_response(120, 30)):
                pass
            handoff = {OI_KIND: "TOOL", INPUT: "Triage Agent", OUTPUT: "Billing Agent"}
            with tracer.start_as_current_span("handoff to Billing Agent", attributes=handoff):
                pass
        billing = {
            OI_KIND: "AGENT",
            sc.OPENINFERENCE_AGENT_NAME: "Billing Agent",
            "graph.node.id": "Billing Agent",
            "graph.node.parent_id": "Triage Agent",
        }
        with tracer.start_as_current_span("Billing Agent", attributes=billing):
            tool = {
                OI_KIND: "TOOL",
                sc.OPENINFERENCE_TOOL_NAME: "lookup_invoice",
                INPUT: '{"invoice_id": 7}',
                "input.mime_type": "application/json",
                OUTPUT: "invoice 7: paid",
            }
            with tracer.start_as_current_span("lookup_invoice", attributes=tool):
                pass
            with tracer.start_as_current_span("response", attributes=_response(200, 50)):
                pass
            failed = {
                OI_KIND: "LLM",
                sc.OPENINFERENCE_LLM_SYSTEM: "openai",
                sc.OPENINFERENCE_LLM_PROVIDER: "openai",
                PARAMS: json.dumps({"model": "gpt-4o-mini", "temperature": 0, "stop": ["\n"]}),
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "Where is invoice 7?",
                INPUT: CHAT_INPUT,
                "input.mime_type": "application/json",
            }
            with tracer.start_as_current_span("ChatCompletion", attributes=failed) as span:
                error = RuntimeError("Error code: 429 - rate limited")
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, str(error)))


def _response(prompt: int, completion: int) -> dict[str, Any]:
    """The Agents SDK's response span as OpenInference records it (model and tokens from the response)."""
    return {
        OI_KIND: "LLM",
        sc.OPENINFERENCE_LLM_SYSTEM: "openai",
        sc.OPENINFERENCE_LLM_MODEL_NAME: "gpt-4o-2024-08-06",
        PARAMS: json.dumps({"model": "gpt-4o", "temperature": 1.0, "tool_choice": "auto", "top_p": 1.0}),
        sc.OPENINFERENCE_TOKEN_PROMPT: prompt,
        sc.OPENINFERENCE_TOKEN_COMPLETION: completion,
        "llm.token_count.total": prompt + completion,
        "llm.output_messages.0.message.role": "assistant",
        OUTPUT: '{"id": "resp_1", "object": "response"}',
        "output.mime_type": "application/json",
    }


def _decorated_agent_trace(tracer: Tracer) -> None:
    """OpenInference's @tracer.agent(name="planner") around OpenInference's openai instrumentation
    and its langchain one (a chat model under a chain, its model only as invocation model_name)."""
    with tracer.start_as_current_span(
        "planner",
        attributes={OI_KIND: "AGENT", INPUT: "plan a trip to Lisbon", "input.mime_type": "text/plain"},
    ) as planner:
        chat: dict[str, Any] = {
            OI_KIND: "LLM",
            sc.OPENINFERENCE_LLM_SYSTEM: "openai",
            sc.OPENINFERENCE_LLM_PROVIDER: "openai",
            sc.OPENINFERENCE_LLM_MODEL_NAME: "gpt-4o-mini-2024-07-18",
            PARAMS: '{"model": "gpt-4o-mini"}',
            sc.OPENINFERENCE_TOKEN_PROMPT: 40,
            sc.OPENINFERENCE_TOKEN_COMPLETION: 8,
            "llm.token_count.total": 48,
        }
        with tracer.start_as_current_span("ChatCompletion", attributes=chat):
            pass
        search = {OI_KIND: "TOOL", sc.OPENINFERENCE_TOOL_NAME: "web_search", "tool.description": "Search"}
        with tracer.start_as_current_span("web_search", attributes=search):
            pass
        with tracer.start_as_current_span("RunnableSequence", attributes={OI_KIND: "CHAIN"}):
            langchain: dict[str, Any] = {
                OI_KIND: "LLM",
                PARAMS: json.dumps(
                    {"model_name": "gpt-4.1-nano", "temperature": 0.7, "_type": "openai-chat"}
                ),
                sc.OPENINFERENCE_TOKEN_PROMPT: 25,
                sc.OPENINFERENCE_TOKEN_COMPLETION: 5,
                "metadata": '{"ls_provider": "openai"}',
            }
            with tracer.start_as_current_span("ChatOpenAI", attributes=langchain):
                pass
        planner.set_attribute(OUTPUT, "day 1: Alfama")


def _openllmetry_trace(tracer: Tracer) -> None:
    """The traceloop SDK's @workflow and @agent around its openai instrumentation and a @tool."""
    workflow = {sc.TRACELOOP_SPAN_KIND: "workflow", sc.TRACELOOP_ENTITY_NAME: "support"}
    with tracer.start_as_current_span(
        "support.workflow", attributes={**workflow, "traceloop.workflow.name": "support"}
    ):
        agent = {
            sc.TRACELOOP_SPAN_KIND: "agent",
            sc.TRACELOOP_ENTITY_NAME: "researcher",
            "traceloop.workflow.name": "researcher",
        }
        with tracer.start_as_current_span("researcher.agent", attributes=agent):
            chat: dict[str, Any] = {
                sc.TRACELOOP_REQUEST_TYPE: "chat",
                sc.GEN_AI_SYSTEM: "openai",
                sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                sc.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18",
                sc.GEN_AI_USAGE_PROMPT_TOKENS: 30,
                sc.GEN_AI_USAGE_COMPLETION_TOKENS: 12,
                "llm.usage.total_tokens": 42,
                "llm.is_streaming": False,
                "gen_ai.openai.api_base": "https://api.openai.com/v1/",
                "traceloop.workflow.name": "researcher",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.completion.0.role": "assistant",
            }
            with tracer.start_as_current_span("openai.chat", kind=SpanKind.CLIENT, attributes=chat):
                pass
            tool = {
                sc.TRACELOOP_SPAN_KIND: "tool",
                sc.TRACELOOP_ENTITY_NAME: "search",
                "traceloop.entity.path": "",
                "traceloop.workflow.name": "researcher",
            }
            with tracer.start_as_current_span("search.tool", attributes=tool):
                pass


def _contrib_trace(tracer: Tracer) -> None:
    """OTel contrib's openai-v2 chat span (gen_ai.* only, no agent) under a GenAI-semconv agent span."""
    agent = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT,
        sc.GEN_AI_AGENT_NAME: "Writer",
        sc.GEN_AI_SYSTEM: "openai",
    }
    with tracer.start_as_current_span("invoke_agent Writer", attributes=agent):
        chat: dict[str, Any] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_SYSTEM: "openai",
            sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
            sc.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18",
            sc.GEN_AI_RESPONSE_ID: "chatcmpl-1",
            sc.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
            sc.GEN_AI_USAGE_INPUT_TOKENS: 55,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 21,
            sc.SERVER_ADDRESS: "api.openai.com",
            sc.SERVER_PORT: 443,
        }
        with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=chat):
            pass


TRACES: Final = (_openai_agents_trace, _decorated_agent_trace, _openllmetry_trace, _contrib_trace)
# Per emission of TRACES: each agent's (input, output) tokens, as the API must attribute them.
TOKENS: Final = {
    "Triage Agent": (120, 30),
    "Billing Agent": (200, 50),
    "planner": (65, 13),
    "researcher": (30, 12),
    "Writer": (55, 21),
}
EMISSIONS: Final = 2


def _emit(url: str) -> None:
    """TRACES twice: once a span per request (each LLM span before its agent's, the hardest order
    for /metrics), once in batches of three spans (chains inside a request and across requests)."""
    for processor in (
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=url + "/v1/traces")),
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=url + "/v1/traces"), max_export_batch_size=3, schedule_delay_millis=50
        ),
    ):
        provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "peers-app"}))
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("peers")
        for emit in TRACES:
            emit(tracer)
        provider.shutdown()


def _prometheus_tokens(url: str) -> dict[str, list[int]]:
    text = httpx.get(url + "/metrics", timeout=10).text
    out: dict[str, list[int]] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "reach_agent_tokens":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    entry = out.setdefault(sample.labels["agent"], [0, 0])
                    entry[sample.labels["type"] == "output"] += int(sample.value)
    return out


def _prometheus(url: str, family_name: str) -> list[Any]:
    text = httpx.get(url + "/metrics", timeout=10).text
    return [s for f in text_string_to_metric_families(text) if f.name == family_name for s in f.samples]


@pytest.fixture(params=["compiled", "pure"])
def peers_collector(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CollectorProcess]:
    if request.param == "compiled" and fast._fastflat is None:
        pytest.skip("the _fastflat extension is not built")
    env = {"REACH_COLLECTOR_PURE_PYTHON": "1"} if request.param == "pure" else {}
    with CollectorProcess(tmp_path / "peers.duckdb", env=env) as collector:
        yield collector


def test_peers_traces_get_the_same_metrics_as_ours(peers_collector: CollectorProcess) -> None:
    url = peers_collector.url
    _emit(url)
    expected = {agent: [n * EMISSIONS for n in pair] for agent, pair in TOKENS.items()}

    agents = peers_collector.get("/api/metrics/agents", window="15m")
    api = {a["agent"]: [a["input_tokens"], a["output_tokens"]] for a in agents["agents"] if a["input_tokens"]}
    assert api == expected, agents["agents"]
    assert agents["unattributed_tokens"] == {"input_tokens": 0, "output_tokens": 0}

    # /metrics folds at commit; the last commit may still be on its way when the last POST returns.
    deadline = time.monotonic() + 15
    while (prometheus := _prometheus_tokens(url)) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert prometheus == api, "reach_agent_tokens_total per agent differs from /api/metrics/agents"

    # Search by agent finds the agent named only by its span name.
    assert len(peers_collector.get("/api/traces", agent="planner")["traces"]) == EMISSIONS

    # The model only in llm.invocation_parameters counts, the failed call included.
    by_model = {
        g["key"]: g for g in peers_collector.get("/api/metrics/golden", by="model", window="15m")["groups"]
    }
    assert by_model["gpt-4.1-nano"]["calls"] == EMISSIONS
    # gpt-4o-mini: the failed OpenInference call, OpenLLMetry's and contrib's requests.
    assert (by_model["gpt-4o-mini"]["calls"], by_model["gpt-4o-mini"]["errors"]) == (3 * EMISSIONS, EMISSIONS)
    assert None not in by_model

    # The Agents SDK's handoff is a handoff (its outcome inferred from Billing Agent's run), not a tool.
    handoffs = agents["handoffs"]
    assert (handoffs["total"], handoffs["committed"], handoffs["inferred"]) == (
        EMISSIONS,
        EMISSIONS,
        EMISSIONS,
    )
    tools = {
        g["key"]: g["calls"]
        for g in peers_collector.get("/api/metrics/golden", by="tool", window="15m")["groups"]
    }
    assert tools == {"lookup_invoice": EMISSIONS, "web_search": EMISSIONS, "search": EMISSIONS}
    counted = {
        (s.labels["source"], s.labels["target"], s.labels["status"], s.labels["inferred"]): s.value
        for s in _prometheus(url, "reach_handoffs")
        if s.name.endswith("_total")
    }
    assert counted == {("Triage Agent", "Billing Agent", "committed", "true"): EMISSIONS}
    tool_calls = sum(
        s.value
        for s in _prometheus(url, "reach_agent_calls")
        if s.name.endswith("_total") and s.labels["operation"] == sc.OP_TOOL
    )
    assert tool_calls == 3 * EMISSIONS
    # Every LLM call is under its agent in /metrics too, none under "unknown".
    llm_agents = {
        s.labels["agent"]
        for s in _prometheus(url, "reach_agent_calls")
        if s.name.endswith("_total") and s.labels["operation"] == sc.OP_CHAT
    }
    assert llm_agents == set(TOKENS)


def test_a_traces_spans_carry_their_tokens_and_model_as_normalised(peers_collector: CollectorProcess) -> None:
    """The trace JSON gives each span the model and tokens its metrics count, whichever convention
    it was written in (OpenInference's llm.token_count.*, OpenLLMetry's, the GenAI conventions'),
    so the console shows an OpenInference call's tokens rather than none."""
    _emit(peers_collector.url)
    found = peers_collector.get("/api/traces", service="peers-app", since="15m", limit="100")["traces"]
    spans = [s for t in found for s in peers_collector.get(f"/api/traces/{t['trace_id']}")["spans"]]
    llm = [s for s in spans if s["operation"] in sc.LLM_OPERATIONS]
    totals = [sum(s["input_tokens"] or 0 for s in llm), sum(s["output_tokens"] or 0 for s in llm)]
    assert totals == [sum(t[i] for t in TOKENS.values()) * EMISSIONS for i in (0, 1)]
    openinference = [s for s in llm if sc.OPENINFERENCE_TOKEN_PROMPT in s["attributes"]]
    assert openinference and all(
        s["input_tokens"] == s["attributes"][sc.OPENINFERENCE_TOKEN_PROMPT] for s in openinference
    )
    assert sc.GEN_AI_USAGE_INPUT_TOKENS not in openinference[0]["attributes"]  # only the API has them
    assert {s["model"] for s in llm} >= {"gpt-4.1-nano", "gpt-4o-mini"}
    assert all(s["input_tokens"] is None for s in spans if s["operation"] == sc.OP_TOOL)
