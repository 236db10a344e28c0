"""The decorator matrix: sync / async / generator / async generator × ok / exception × kind."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

import reach_otel


class InvoiceError(Exception):
    """A user exception with a module-qualified name."""


SHAPES = ["sync", "async", "gen", "agen"]
DECORATORS = {
    "tool": (lambda: reach_otel.tool(name="lookup"), "execute_tool lookup"),
    "agent": (lambda: reach_otel.agent(name="Billing", role="billing"), "invoke_agent Billing"),
    "llm": (lambda: reach_otel.llm(model="m1", provider="local"), "chat m1"),
    "workflow": (lambda: reach_otel.workflow(name="turn"), "invoke_workflow turn"),
}


def make(shape: str, fail: bool) -> Any:
    """A user function of the given shape that doubles its argument or raises InvoiceError."""
    error = InvoiceError("no invoice")

    if shape == "sync":

        def fn(x: int, *, scale: int = 2) -> int:
            """Double x."""
            if fail:
                raise error
            return x * scale

    elif shape == "async":

        async def fn(x: int, *, scale: int = 2) -> int:  # type: ignore[misc]
            """Double x."""
            await asyncio.sleep(0)
            if fail:
                raise error
            return x * scale

    elif shape == "gen":

        def fn(x: int, *, scale: int = 2):  # type: ignore[no-untyped-def,misc]
            """Double x."""
            yield x
            if fail:
                raise error
            yield x * scale

    else:

        async def fn(x: int, *, scale: int = 2):  # type: ignore[no-untyped-def,misc]
            """Double x."""
            yield x
            await asyncio.sleep(0)
            if fail:
                raise error
            yield x * scale

    fn.error = error  # type: ignore[attr-defined]
    return fn


def call(fn: Any, shape: str) -> Any:
    if shape == "sync":
        return fn(3)
    if shape == "async":
        return asyncio.run(fn(3))
    if shape == "gen":
        return list(fn(3))

    async def drain() -> list[int]:
        return [item async for item in fn(3)]

    return asyncio.run(drain())


@pytest.mark.parametrize("kind", sorted(DECORATORS))
@pytest.mark.parametrize("shape", SHAPES)
def test_ok_call_keeps_result_signature_and_metadata(rec, kind: str, shape: str) -> None:
    raw = make(shape, fail=False)
    decorator, span_name = DECORATORS[kind]
    wrapped = decorator()(raw)

    assert wrapped.__name__ == raw.__name__
    assert wrapped.__doc__ == "Double x."
    assert inspect.signature(wrapped) == inspect.signature(raw)
    assert inspect.iscoroutinefunction(wrapped) == inspect.iscoroutinefunction(raw)
    assert inspect.isasyncgenfunction(wrapped) == inspect.isasyncgenfunction(raw)
    assert inspect.isgeneratorfunction(wrapped) == inspect.isgeneratorfunction(raw)

    expected = 6 if shape in ("sync", "async") else [3, 6]
    assert call(wrapped, shape) == expected
    span = rec.one(span_name)
    assert span.status.status_code == StatusCode.UNSET
    assert "error.type" not in span.attributes


@pytest.mark.parametrize("kind", sorted(DECORATORS))
@pytest.mark.parametrize("shape", SHAPES)
def test_exception_propagates_unchanged_and_marks_span(rec, kind: str, shape: str) -> None:
    raw = make(shape, fail=True)
    decorator, span_name = DECORATORS[kind]
    wrapped = decorator()(raw)

    with pytest.raises(InvoiceError) as info:
        call(wrapped, shape)
    assert info.value is raw.error

    span = rec.one(span_name)
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "no invoice"
    assert span.attributes["error.type"] == f"{__name__}.InvoiceError"
    assert [e.name for e in span.events] == ["exception"]


def test_builtin_exception_type_is_bare(rec) -> None:
    @reach_otel.tool
    def broken() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError):
        broken()
    assert rec.one("execute_tool broken").attributes["error.type"] == "ValueError"


def test_bare_decorators_and_default_names(rec) -> None:
    @reach_otel.tool
    def query_invoice(invoice_id: str) -> str:
        return invoice_id

    @reach_otel.agent
    def billing_agent(q: str) -> str:
        return query_invoice(q)

    @reach_otel.workflow
    def support_turn(q: str) -> str:
        return billing_agent(q)

    assert support_turn("INV-1") == "INV-1"
    names = [s.name for s in rec.spans]
    assert names == [
        "execute_tool query_invoice",
        "invoke_agent billing_agent",
        "invoke_workflow support_turn",
    ]


def test_methods_take_agent_name_from_instance(rec) -> None:
    class BaseAgent:
        def __init__(self, name: str | None) -> None:
            if name:
                self.name = name

        @reach_otel.agent
        def run(self, q: str) -> str:
            return f"{q}!"

        @reach_otel.tool(name="lookup")
        async def lookup(self, key: str) -> str:
            return key

    class SupportAgent(BaseAgent):
        pass

    assert BaseAgent("Billing").run("a") == "a!"
    assert SupportAgent(None).run("b") == "b!"
    assert asyncio.run(BaseAgent("X").lookup("k")) == "k"
    assert [s.name for s in rec.spans] == [
        "invoke_agent Billing",
        "invoke_agent SupportAgent",
        "execute_tool lookup",
    ]


def test_generator_closed_early_ends_span_once_without_error(rec) -> None:
    @reach_otel.llm(model="m1", provider="local")
    def stream():  # type: ignore[no-untyped-def]
        yield "a"
        yield "b"
        yield "c"

    gen = stream()
    assert next(gen) == "a"
    gen.close()
    span = rec.one("chat m1")
    assert span.status.status_code == StatusCode.UNSET
    assert span.attributes["gen_ai.request.stream"] is True
    assert span.attributes["gen_ai.response.time_to_first_chunk"] >= 0


def test_generator_send_and_throw_are_forwarded(rec) -> None:
    @reach_otel.tool
    def echo():  # type: ignore[no-untyped-def]
        received = []
        try:
            while True:
                received.append((yield len(received)))
        except KeyError:
            yield f"caught {received}"

    gen = echo()
    assert next(gen) == 0
    assert gen.send("x") == 1
    assert gen.throw(KeyError("k")) == "caught ['x']"
    gen.close()
    assert rec.one("execute_tool echo").status.status_code == StatusCode.UNSET


def test_async_generator_asend_athrow_forwarded(rec) -> None:
    @reach_otel.tool
    async def counter():  # type: ignore[no-untyped-def]
        total = 0
        try:
            while True:
                total += (yield total) or 0
        except KeyError:
            yield -1

    async def drive() -> list[int]:
        agen = counter()
        out = [await agen.asend(None), await agen.asend(2), await agen.asend(3)]
        out.append(await agen.athrow(KeyError("stop")))
        await agen.aclose()
        return out

    assert asyncio.run(drive()) == [0, 2, 5, -1]
    assert rec.one("execute_tool counter").status.status_code == StatusCode.UNSET


def test_span_is_current_only_while_generator_body_runs(rec) -> None:
    from opentelemetry import trace

    seen: list[str] = []

    @reach_otel.tool
    def gen():  # type: ignore[no-untyped-def]
        seen.append(trace.get_current_span().name)  # type: ignore[attr-defined]
        yield 1

    for _ in gen():
        assert not trace.get_current_span().get_span_context().is_valid
    assert seen == ["execute_tool gen"]


def test_works_without_init_on_the_global_noop_provider() -> None:
    import subprocess
    import sys

    code = (
        "import reach_otel\n"
        "@reach_otel.tool\n"
        "def f(x): return x + 1\n"
        "with reach_otel.handoff('A', 'B') as h:\n"
        "    inside = h.transition('accept')\n"
        "print(f(1), inside, h.status)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "accepted", "unknown"]
