"""``reach_otel.evaluate()`` and ``feedback()`` in an application (a subprocess that calls
``init()``), over OTLP/HTTP and gRPC: the records land as the same stored evaluations as the
SDK's own log exporter and ``POST /api/feedback`` give, on the spans they name. With the collector
gone, they neither raise nor hold the application's exit past its shutdown timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from collector_process import free_port
from eval_helpers import Served

from reach_otel import semconv as sc

APP = """
import json, sys, time
import reach_otel
from opentelemetry import trace
from reach_otel import semconv as sc

endpoint, protocol = sys.argv[1], sys.argv[2]
reach_otel.init("support-app", endpoint=endpoint, protocol=protocol, shutdown_timeout=float(sys.argv[3]))
tracer = trace.get_tracer("app")
ids = {}
with tracer.start_as_current_span("invoke_workflow support") as root:
    agent = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: "billing"}
    with tracer.start_as_current_span("invoke_agent billing", attributes=agent) as billing:
        # the current span: billing
        ids["current"] = reach_otel.evaluate(
            "relevance", score=0.4, label="partial", explanation="one of two questions answered"
        )
    ids["span"] = reach_otel.evaluate("politeness", label="polite", span=billing)
    ids["bad"] = reach_otel.evaluate("", score=float("nan"))  # logged, never raised
ids["trace"] = format(root.get_span_context().trace_id, "032x")
ids["root"] = format(root.get_span_context().span_id, "016x")
ids["billing"] = format(billing.get_span_context().span_id, "016x")
ids["feedback"] = reach_otel.feedback(score=1, label="thumbs_up", comment="fixed it", trace_id=ids["trace"])
started = time.monotonic()
ids["shutdown"] = reach_otel.shutdown()
ids["shutdown_s"] = time.monotonic() - started
print(json.dumps(ids))
"""


def _run(endpoint: str, protocol: str, timeout_s: float = 5.0) -> tuple[dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_"))}
    env["REACH_OTEL_INSTRUMENT"] = "false"
    done = subprocess.run(
        [sys.executable, "-c", APP, endpoint, protocol, str(timeout_s)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_evaluate_and_feedback_land_on_their_spans(served: Served, protocol: str) -> None:
    endpoint = served.url if protocol == "http/protobuf" else f"http://{served.grpc}"
    ids, _ = _run(endpoint, protocol)
    assert ids["current"] is True and ids["span"] is True and ids["feedback"] is True
    assert ids["bad"] is False and ids["shutdown"] is True
    trace_id = str(ids["trace"])
    by_span = served.evaluations_by_span(trace_id)
    assert [(e["name"], e["score"], e["label"], e["explanation"]) for e in by_span[str(ids["billing"])]] == [
        ("relevance", 0.4, "partial", "one of two questions answered"),
        ("politeness", None, "polite", None),
    ]
    assert [(e["name"], e["score"], e["label"], e["explanation"]) for e in by_span[str(ids["root"])]] == [
        (sc.EVALUATION_USER_FEEDBACK, 1.0, "thumbs_up", "fixed it")
    ]
    rows = served.rows()
    assert {r[9] for r in rows} == {"support-app"} and {r[10] for r in rows} == {"log"}
    # the same row POST /api/feedback stores (but for how it came, when and from which service)
    answer = served.post(
        "/api/feedback", json={"trace_id": trace_id, "score": 1, "label": "thumbs_up", "comment": "fixed it"}
    )
    assert answer.status_code == 202
    feedback = [r for r in served.rows() if r[4] == sc.EVALUATION_USER_FEEDBACK]
    assert len(feedback) == 2 and feedback[0][1:9] == feedback[1][1:9]
    quality = served.get("/api/metrics/quality", params={"by": "evaluation", "window": "5m"}).json()
    assert {g["key"]: g["evaluations"] for g in quality["groups"]} == {
        "politeness": 1,
        "relevance": 1,
        sc.EVALUATION_USER_FEEDBACK: 2,
    }


def test_a_collector_that_is_gone_costs_the_app_nothing() -> None:
    ids, stderr = _run(f"http://127.0.0.1:{free_port()}", "http/protobuf", timeout_s=3.0)
    assert ids["current"] is True and ids["feedback"] is True  # handed over, never raised
    # nothing listens: the exit gives the evaluations up at once, as it does the spans, and says
    # so in reach_otel's one line, not in the exporter's retry noise
    assert ids["shutdown_s"] < 1.5
    assert "Transient error" not in stderr and "Traceback" not in stderr, stderr
