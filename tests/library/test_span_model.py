"""§3 span model: names, kinds, attributes, nesting and one trace id across asyncio and threads."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from opentelemetry.trace import SpanKind

import reach_otel


def completion(model: str = "m1-2025", inp: int = 11, out: int = 7) -> dict:
    """An OpenAI-shaped chat completion as a plain dict."""
    return {
        "id": "chatcmpl-1",
        "model": model,
        "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
        "usage": {"prompt_tokens": inp, "completion_tokens": out},
    }


@reach_otel.llm(model="m1", provider="local", server_address="127.0.0.1", server_port=8080)
def ask(prompt: str, inp: int = 11, out: int = 7) -> dict:
    return completion(inp=inp, out=out)


@reach_otel.tool(name="query_invoice")
def query_invoice(invoice_id: str) -> dict:
    return {"id": invoice_id, "amount": 42}


def test_workflow_agent_llm_tool_attributes(rec) -> None:
    @reach_otel.agent(name="BillingAgent", role="billing", agent_id="billing-1")
    def billing(q: str) -> str:
        ask(q)
        ask(q, inp=5, out=3)
        query_invoice("INV-1")
        return "done"

    @reach_otel.workflow(name="support_turn")
    def turn(q: str) -> str:
        return billing(q)

    with reach_otel.session(session_id="SESS_1", user_id="U1", task_id="T1"):
        assert turn("why") == "done"

    wf = rec.one("invoke_workflow support_turn")
    assert wf.kind == SpanKind.INTERNAL
    assert wf.parent is None
    assert wf.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert wf.attributes["gen_ai.workflow.name"] == "support_turn"
    assert wf.attributes["gen_ai.conversation.id"] == "SESS_1"

    ag = rec.one("invoke_agent BillingAgent")
    assert ag.kind == SpanKind.INTERNAL
    assert ag.parent.span_id == wf.context.span_id
    assert dict(ag.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "BillingAgent",
        "gen_ai.agent.id": "billing-1",
        "reach.agent.role": "billing",
        "gen_ai.conversation.id": "SESS_1",
        "user.id": "U1",
        "reach.task.id": "T1",
        "reach.hop.count": 0,
        "gen_ai.usage.input_tokens": 16,
        "gen_ai.usage.output_tokens": 10,
        "reach.agent.llm_calls": 2,
        "reach.agent.tool_calls": 1,
    }

    llm_spans = rec.named("chat m1")
    assert len(llm_spans) == 2
    llm = llm_spans[0]
    assert llm.kind == SpanKind.CLIENT
    assert llm.parent.span_id == ag.context.span_id
    attrs = dict(llm.attributes)
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "local"
    assert attrs["gen_ai.request.model"] == "m1"
    assert attrs["gen_ai.response.model"] == "m1-2025"
    assert attrs["gen_ai.response.id"] == "chatcmpl-1"
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.usage.input_tokens"] == 11
    assert attrs["gen_ai.usage.output_tokens"] == 7
    assert attrs["gen_ai.request.stream"] is False
    assert attrs["server.address"] == "127.0.0.1"
    assert attrs["server.port"] == 8080
    assert attrs["reach.agent.name"] == "BillingAgent"
    assert "gen_ai.input.messages" not in attrs  # content is off by default

    tool = rec.one("execute_tool query_invoice")
    assert tool.kind == SpanKind.INTERNAL
    assert tool.parent.span_id == ag.context.span_id
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "query_invoice"
    assert tool.attributes["gen_ai.tool.type"] == "function"
    assert tool.attributes["gen_ai.tool.call.id"].startswith("call_")
    assert tool.attributes["reach.agent.name"] == "BillingAgent"
    assert "gen_ai.tool.call.arguments" not in tool.attributes

    assert len({s.context.trace_id for s in rec.spans}) == 1


def test_nested_agent_tokens_belong_to_the_nearest_agent(rec) -> None:
    @reach_otel.agent(name="Inner")
    def inner() -> None:
        ask("x", inp=100, out=50)

    @reach_otel.agent(name="Outer")
    def outer() -> None:
        ask("y", inp=1, out=2)
        inner()

    outer()
    assert rec.one("invoke_agent Outer").attributes["gen_ai.usage.input_tokens"] == 1
    assert rec.one("invoke_agent Inner").attributes["gen_ai.usage.input_tokens"] == 100
    llm_agents = sorted(s.attributes["reach.agent.name"] for s in rec.named("chat m1"))
    assert llm_agents == ["Inner", "Outer"]


def test_asyncio_gather_children_share_the_trace_and_parent(rec) -> None:
    @reach_otel.tool
    async def fetch(i: int) -> int:
        await asyncio.sleep(0.001 * (3 - i))
        return i

    @reach_otel.llm(model="m1", provider="local")
    async def think(i: int) -> dict:
        await asyncio.sleep(0)
        return completion(inp=i, out=1)

    @reach_otel.agent(name="DataAgent")
    async def data_agent() -> list[int]:
        results = await asyncio.gather(*(fetch(i) for i in range(3)), *(think(i) for i in range(1, 4)))
        return list(results)

    assert asyncio.run(data_agent()) == [0, 1, 2, *(completion(inp=i, out=1) for i in (1, 2, 3))]
    agent_span = rec.one("invoke_agent DataAgent")
    children = [s for s in rec.spans if s is not agent_span]
    assert len(children) == 6
    assert {s.context.trace_id for s in rec.spans} == {agent_span.context.trace_id}
    assert all(s.parent.span_id == agent_span.context.span_id for s in children)
    assert agent_span.attributes["gen_ai.usage.input_tokens"] == 6
    assert agent_span.attributes["reach.agent.llm_calls"] == 3
    assert agent_span.attributes["reach.agent.tool_calls"] == 3


def test_threads_keep_the_context_with_wrap(rec) -> None:
    @reach_otel.agent(name="Fanout")
    def fanout() -> list[dict]:
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(reach_otel.context.wrap(query_invoice), f"INV-{i}") for i in range(4)]
            results = [f.result() for f in futures]
        t = threading.Thread(target=reach_otel.context.wrap(query_invoice), args=("INV-T",))
        t.start()
        t.join()
        return results

    assert [r["id"] for r in fanout()] == ["INV-0", "INV-1", "INV-2", "INV-3"]
    agent_span = rec.one("invoke_agent Fanout")
    tools = rec.named("execute_tool query_invoice")
    assert len(tools) == 5
    assert all(t.parent.span_id == agent_span.context.span_id for t in tools)
    assert all(t.attributes["reach.agent.name"] == "Fanout" for t in tools)
    assert agent_span.attributes["reach.agent.tool_calls"] == 5


def test_remote_agent_is_a_client_span(rec) -> None:
    @reach_otel.agent(name="DataAgent", remote=True)
    def call_remote() -> str:
        return "ok"

    call_remote()
    assert rec.one("invoke_agent DataAgent").kind == SpanKind.CLIENT


def test_record_usage_inside_llm_function(rec) -> None:
    @reach_otel.agent(name="A")
    def a() -> str:
        return plain()

    @reach_otel.llm(model="local-7b", provider="local")
    def plain() -> str:
        reach_otel.record_usage(input_tokens=9, output_tokens=4)
        return "text"

    assert a() == "text"
    assert rec.one("chat local-7b").attributes["gen_ai.usage.output_tokens"] == 4
    assert rec.one("invoke_agent A").attributes["gen_ai.usage.input_tokens"] == 9


def test_streaming_llm_usage_from_final_chunk(rec) -> None:
    @reach_otel.agent(name="Streamer")
    def streamer() -> str:
        return "".join(c.get("delta", "") for c in stream())

    @reach_otel.llm(model="m2", provider="local")
    def stream():  # type: ignore[no-untyped-def]
        yield {"id": "s1", "model": "m2-x", "delta": "he"}
        yield {"id": "s1", "model": "m2-x", "delta": "llo", "choices": [{"finish_reason": "stop"}]}
        yield {"id": "s1", "usage": {"prompt_tokens": 4, "completion_tokens": 2}}

    assert streamer() == "hello"
    span = rec.one("chat m2")
    assert span.attributes["gen_ai.request.stream"] is True
    assert span.attributes["gen_ai.response.model"] == "m2-x"
    assert span.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert span.attributes["gen_ai.usage.input_tokens"] == 4
    assert span.attributes["gen_ai.response.time_to_first_chunk"] >= 0
    assert rec.one("invoke_agent Streamer").attributes["gen_ai.usage.output_tokens"] == 2


def test_unsampled_trace_records_nothing_but_calls_work(rec) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    from reach_otel.handler import TelemetryHandler, set_handler

    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(rec.exporter))
    set_handler(TelemetryHandler(tracer_provider=provider))

    @reach_otel.agent(name="Quiet")
    def quiet() -> int:
        with reach_otel.handoff("Quiet", "Other") as h:
            assert h.transition("accept") == "accepted"
        return ask("x")["usage"]["prompt_tokens"]

    assert quiet() == 11
    assert rec.spans == []
