"""Session, user and task ids cross HTTP hops in bounded W3C baggage (SPEC §12), so a remote agent's
spans carry ``gen_ai.conversation.id``, ``user.id`` and ``reach.task.id`` too.

Two real processes over loopback HTTP: a caller (httpx instrumented, or a bare /invoke body with
``inject``) and a FastAPI agent; both export OTLP/HTTP to one sink.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import baggage
from otlp_sink import OtlpSink

import reach_otel
from reach_otel import semconv as sc
from reach_otel.handoff_state import MAX_ID

REMOTE = textwrap.dedent(
    """
    import socket, sys
    import uvicorn
    from fastapi import FastAPI, Request
    import reach_otel

    reach_otel.init(service_name="billing-agent", endpoint=sys.argv[1])
    reach_otel.instrument("starlette")

    @reach_otel.tool(name="query_invoice")
    def query_invoice(n):
        return {"invoice": n}

    @reach_otel.agent(name="BillingAgent", role="billing")
    def billing(params):
        return query_invoice(params.get("n", 0))

    app = FastAPI()

    @app.post("/invoke")
    async def invoke(request: Request):
        body = await request.json()
        output = billing(body.get("params", {}))
        return {"request_id": body.get("request_id"), "status": "ok", "output": output}

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # before the port is told: a request sent while uvicorn starts waits, not refused
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    """
)

CALLER = textwrap.dedent(
    """
    import json, sys, urllib.request
    import httpx
    import reach_otel

    endpoint, remote, how = sys.argv[1], sys.argv[2], sys.argv[3]
    reach_otel.init(service_name="gateway", endpoint=endpoint)
    reach_otel.instrument("httpx")

    @reach_otel.agent(name="Gateway")
    def gateway():
        body = {"request_id": "r1", "params": {"n": 7}, "context": {}}
        if how == "httpx":
            return httpx.post(remote + "/invoke", json=body, timeout=10).json()
        reach_otel.inject(body)  # the ids travel in the body's context.baggage, no trace headers
        request = urllib.request.Request(
            remote + "/invoke", json.dumps(body).encode(), {"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    @reach_otel.workflow(name="support_turn")
    def turn():
        return gateway()

    with reach_otel.session(session_id="SESS_1", user_id="U1", task_id="T1"):
        print(json.dumps(turn()), flush=True)
    reach_otel.shutdown()
    """
)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}


@pytest.fixture
def remote_agent() -> Iterator[tuple[str, OtlpSink]]:
    with OtlpSink() as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", REMOTE, sink.url], stdout=subprocess.PIPE, text=True, env=_env()
        )
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline())
            yield f"http://127.0.0.1:{port}", sink
        finally:
            proc.terminate()
            proc.wait(timeout=15)


def spans_by_service(sink: OtlpSink) -> dict[str, list[dict[str, Any]]]:
    """Every received span with its trace id, grouped by service.name."""
    out: dict[str, list[dict[str, Any]]] = {}
    for req in sink.requests:
        for rs in req["request"].resource_spans:
            service = next(kv.value.string_value for kv in rs.resource.attributes if kv.key == "service.name")
            for ss in rs.scope_spans:
                for span in ss.spans:
                    attrs = {kv.key: kv.value.string_value or kv.value.int_value for kv in span.attributes}
                    out.setdefault(service, []).append(
                        {"name": span.name, "trace_id": span.trace_id.hex(), "attributes": attrs}
                    )
    return out


def wait_remote(sink: OtlpSink, names: set[str]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 20  # the remote exports on its batch schedule (5 s)
    while time.monotonic() < deadline:
        remote = spans_by_service(sink).get("billing-agent", [])
        if names <= {s["name"] for s in remote}:
            return remote
        time.sleep(0.1)
    raise AssertionError(f"remote spans did not arrive: {spans_by_service(sink)}")


@pytest.mark.parametrize("how", ["httpx", "invoke-body"])
def test_remote_agent_spans_carry_the_session(remote_agent: tuple[str, OtlpSink], how: str) -> None:
    url, sink = remote_agent
    out = subprocess.run(
        [sys.executable, "-c", CALLER, sink.url, url, how],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["output"] == {"invoice": 7}
    remote = wait_remote(sink, {"invoke_agent BillingAgent", "execute_tool query_invoice"})
    local = spans_by_service(sink)["gateway"]
    (trace_id,) = {s["trace_id"] for s in local}
    for span in [
        s for s in remote if s["name"] in ("invoke_agent BillingAgent", "execute_tool query_invoice")
    ]:
        assert span["trace_id"] == trace_id  # one trace across the hop
        attrs = span["attributes"]
        assert attrs[sc.GEN_AI_CONVERSATION_ID] == "SESS_1", span
        assert attrs[sc.USER_ID] == "U1", span
        assert attrs[sc.REACH_TASK_ID] == "T1", span
    gateway = next(s for s in local if s["name"] == "invoke_agent Gateway")
    assert gateway["attributes"][sc.GEN_AI_CONVERSATION_ID] == "SESS_1"


def test_hostile_session_baggage_is_bounded(remote_agent: tuple[str, OtlpSink]) -> None:
    url, sink = remote_agent
    hostile = "%07%1B[31m" + "S" * 3000  # escape codes, then far more than an id may hold
    headers = {
        "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "baggage": f"reach.session={hostile},reach.user=%0Aevil%0D,reach.task=T9",
    }
    reply = httpx.post(
        url + "/invoke", json={"request_id": "r2", "params": {"n": 1}}, headers=headers, timeout=10
    )
    assert reply.status_code == 200
    remote = wait_remote(sink, {"invoke_agent BillingAgent"})
    attrs = next(s for s in remote if s["name"] == "invoke_agent BillingAgent")["attributes"]
    assert attrs[sc.GEN_AI_CONVERSATION_ID] == "[31m" + "S" * (MAX_ID - 4)
    assert attrs[sc.USER_ID] == "evil"  # control characters are dropped
    assert attrs[sc.REACH_TASK_ID] == "T9"


def test_session_ids_go_in_baggage_bounded(rec) -> None:
    long_id = "u" * (MAX_ID + 50)
    with reach_otel.session(session_id="SESS_9", user_id=long_id):
        headers = reach_otel.inject({})
        assert baggage.get_baggage(sc.BAGGAGE_SESSION_ID) == "SESS_9"
        assert baggage.get_baggage(sc.BAGGAGE_TASK_ID) is None
    assert "reach.session=SESS_9" in headers["baggage"]
    assert f"reach.user={'u' * MAX_ID}" in headers["baggage"]
    assert "u" * (MAX_ID + 1) not in headers["baggage"]

    # The far side: spans started under the extracted context carry the ids, bounded.
    @reach_otel.agent(name="Remote")
    def remote() -> None:
        reach_otel.tool(name="t")(lambda: None)()

    with reach_otel.attach(
        {**headers, "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    ):
        remote()
    for name in ("invoke_agent Remote", "execute_tool t"):
        attrs = rec.one(name).attributes
        assert attrs[sc.GEN_AI_CONVERSATION_ID] == "SESS_9"
        assert attrs[sc.USER_ID] == "u" * MAX_ID
        assert sc.REACH_TASK_ID not in attrs


def test_a_session_in_this_process_wins_over_baggage(rec) -> None:
    headers = {"baggage": "reach.session=FROM_CALLER,reach.user=U_CALLER"}
    with reach_otel.attach(headers), reach_otel.session(session_id="LOCAL"):
        reach_otel.tool(name="t")(lambda: None)()
    attrs = rec.one("execute_tool t").attributes
    assert attrs[sc.GEN_AI_CONVERSATION_ID] == "LOCAL"
    assert sc.USER_ID not in attrs  # the session entered here says who, not the caller's baggage
