"""Telemetry never hurts the app: a failing internal step changes no result and raises nothing."""

from __future__ import annotations

import asyncio

import pytest

import reach_otel
from reach_otel import invocations


def boom(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise RuntimeError("telemetry bug")


@reach_otel.llm(model="m1", provider="local")
def ask() -> dict:
    return {"model": "m1", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}


@reach_otel.agent(name="A")
async def agent_call() -> dict:
    return ask()


def test_exploding_extractor_leaves_the_result_alone(rec, monkeypatch) -> None:
    monkeypatch.setattr(invocations, "llm_response_attributes", boom)
    assert asyncio.run(agent_call()) == {"model": "m1", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
    assert rec.one("chat m1").end_time is not None  # the span still ended


def test_exploding_span_start_calls_through(rec, monkeypatch) -> None:
    monkeypatch.setattr(rec.handler.tracer, "start_span", boom)

    @reach_otel.tool
    def add(a: int, b: int) -> int:
        return a + b

    assert add(1, 2) == 3
    assert asyncio.run(agent_call())["model"] == "m1"
    with reach_otel.handoff("A", "B") as h:
        assert h.transition("accept") == "accepted"
    reach_otel.gate("max_steps", limit=1, observed=1)
    assert rec.spans == []


def test_exploding_span_end_keeps_user_exception(rec, monkeypatch) -> None:
    class Mine(Exception):
        pass

    monkeypatch.setattr(invocations.Invocation, "_finish", boom)

    @reach_otel.tool
    def bad() -> None:
        raise Mine("user error")

    with pytest.raises(Mine, match="user error"):
        bad()


def test_exploding_context_attach_is_swallowed(rec, monkeypatch) -> None:
    monkeypatch.setattr(invocations.otel_context, "attach", boom)

    @reach_otel.tool
    def square(x: int) -> int:
        return x * x

    assert square(4) == 16


def test_content_capture_of_unserialisable_values_is_harmless(make_recorder) -> None:
    rec = make_recorder(capture_content=True)

    class Weird:
        def __repr__(self) -> str:
            raise RuntimeError("cannot repr")

    @reach_otel.tool
    def takes(obj: object) -> object:
        return obj

    w = Weird()
    assert takes(w) is w
    assert rec.one("execute_tool takes").end_time is not None


def test_bad_configuration_values_fall_back_to_defaults(caplog) -> None:
    from reach_otel.config import load_settings

    settings = load_settings(
        env={
            "REACH_OTEL_SHUTDOWN_TIMEOUT": "soon",
            "REACH_OTEL_MAX_HOPS": "-3",
            "OTEL_SDK_DISABLED": "maybe",
        },
        on_loop="explode",
    )
    assert settings.shutdown_timeout_s == 5.0
    assert settings.max_hops == 5
    assert settings.on_loop == "record"
    assert settings.disabled is False
    assert "REACH_OTEL_SHUTDOWN_TIMEOUT" in caplog.text
