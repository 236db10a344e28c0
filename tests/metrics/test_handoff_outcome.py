"""One outcome per handoff (SPEC §11), everywhere: real OTLP traffic into a real collector, then the
trace view, the trace tree, ``/api/metrics/agents`` and ``/metrics`` (``reach_handoffs_total``)
give every handoff the same outcome, marked inferred where it was; plus the rule's SQL and Python
forms agreeing value by value, and the counter's bounds."""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pyarrow as pa
import pytest
from metrics_helpers import NOW_NS, new_trace_id, span, table
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode
from prometheus_client.parser import text_string_to_metric_families

import reach_otel
from reach_collector.app import create_app
from reach_collector.cli.render import span_label
from reach_collector.config import Settings
from reach_collector.exposition.handoff_counts import HandoffCounts
from reach_collector.query.handoff_outcome import is_recorded, recorded_sql
from reach_collector.store.duckdb_store import DuckDBStore
from reach_otel import semconv as sc
from reach_otel.config import load_settings
from reach_otel.handler import TelemetryHandler, set_handler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collector"))
from servers import ServerThread

MS = 1_000_000
TIMEOUT_S = 600.0  # Exposition's default handoff timeout


@dataclass
class Collector:
    url: str
    store: DuckDBStore
    offset: list[float]  # seconds added to the collector's clock

    def get(self, path: str, **params: str) -> httpx.Response:
        return httpx.get(self.url + path, params=params, timeout=10)


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    db = tmp_path / "traces.duckdb"
    store = DuckDBStore(db)
    offset = [0.0]
    app = create_app(
        replace(Settings(db=str(db)), retention_s=0),
        store=store,
        clock=lambda: time.time() + offset[0],
        alert_loop=False,
    )
    with ServerThread(app) as server:
        yield Collector(server.url, store, offset)
    store.close()


class App:
    """An instrumented app exporting over OTLP/HTTP; ``flush()`` sends what ended as one request."""

    def __init__(self, url: str) -> None:
        self.provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "outcome-app"}))
        exporter = OTLPSpanExporter(endpoint=url + "/v1/traces")
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
        self.tracer = self.provider.get_tracer("handoff-outcome-test")
        self.handler = TelemetryHandler(tracer_provider=self.provider, settings=load_settings(env={}))
        self.base = time.time_ns() - 60_000 * MS  # raw spans are placed on their own timeline
        self._previous: Any = None

    def __enter__(self) -> App:
        self._previous = set_handler(self.handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        set_handler(self._previous)
        self.provider.shutdown()

    def flush(self) -> None:
        assert self.provider.force_flush(10_000)

    def root(self, name: str) -> tuple[Any, str]:
        """A raw request root (ended at once; its children carry their own times)."""
        root = self.tracer.start_span(
            f"invoke_workflow {name}",
            start_time=self.base,
            attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_WORKFLOW},
        )
        root.end(end_time=self.base + 10_000 * MS)
        return trace.set_span_in_context(root), f"{root.get_span_context().trace_id:032x}"

    def raw(
        self, ctx: Any, name: str, start_ms: int, end_ms: int, attrs: dict[str, Any], error: bool = False
    ) -> None:
        s = self.tracer.start_span(name, context=ctx, start_time=self.base + start_ms * MS, attributes=attrs)
        if error:
            s.set_status(Status(StatusCode.ERROR, "target failed"))
        s.end(end_time=self.base + end_ms * MS)

    def agent_span(self, ctx: Any, name: str, start_ms: int, error: bool = False) -> None:
        attrs = {sc.GEN_AI_OPERATION_NAME: sc.OP_AGENT, sc.GEN_AI_AGENT_NAME: name}
        self.raw(ctx, sc.agent_span_name(name), start_ms, start_ms + 200, attrs, error)

    def zero_code_handoff(self, ctx: Any, source: str, target: str, start_ms: int) -> None:
        """A handoff as other tools record it (the Agents SDK mapping): names only, no status."""
        attrs = {sc.GEN_AI_HANDOFF_FROM_AGENT: source, sc.GEN_AI_HANDOFF_TO_AGENT: target}
        self.raw(ctx, f"handoff {target}", start_ms, start_ms + 50, attrs)


class TargetFailed(Exception):
    pass


@reach_otel.agent(name="Billing")
def billing(fail: bool) -> str:
    if fail:
        raise TargetFailed("ledger down")
    return "billed"


def library_trace(events: list[str], run: str | None) -> str:
    """The library's own handoff Triage → Billing driven through ``events``; ``run`` = "ok" or
    "fail" runs Billing inside it. Returns the trace id."""

    @reach_otel.workflow(name="turn")
    @reach_otel.agent(name="Triage")
    def turn() -> str:
        with reach_otel.handoff("Triage", "Billing", mode="delegate") as h:
            for event in events:
                if event == "run":
                    with contextlib.suppress(TargetFailed):
                        billing(run == "fail")
                else:
                    h.transition(event)
        return f"{trace.get_current_span().get_span_context().trace_id:032x}"

    return turn()


def _handoffs_metric(c: Collector) -> dict[tuple[str, str], float]:
    text = c.get("/metrics").text
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "reach_handoffs_total":
                key = (s.labels["status"], s.labels["inferred"])
                out[key] = out.get(key, 0.0) + s.value
    return out


def _handoffs_api(c: Collector) -> dict[tuple[str, str], float]:
    body = c.get("/api/metrics/agents", window="1h").json()["handoffs"]
    assert body["total"] == sum(o["handoffs"] for o in body["outcomes"])
    assert body["inferred"] == sum(o["handoffs"] for o in body["outcomes"] if o["inferred"])
    return {(o["status"], str(o["inferred"]).lower()): float(o["handoffs"]) for o in body["outcomes"]}


def _trace_handoffs(c: Collector, trace_id: str) -> list[tuple[str, bool]]:
    body = c.get(f"/api/traces/{trace_id}").json()
    spans = [s for s in body["spans"] if s["operation"] == sc.OP_HANDOFF]
    labels = [span_label(s).plain for s in spans]
    for s, label in zip(spans, labels, strict=True):
        h = s["handoff"]
        assert f"({h['status']}, inferred)" in label if h["inferred"] else f"({h['status']})" in label, label
    return [(s["handoff"]["status"], s["handoff"]["inferred"]) for s in spans]


def test_every_view_gives_each_handoff_the_same_outcome(collector: Collector) -> None:
    c = collector
    expected: dict[str, tuple[str, bool]] = {}
    with App(c.url) as app:
        # The library's own handoffs: the state machine's status is the answer.
        expected[library_trace(["accept", "start", "run", "commit"], "ok")] = ("committed", False)
        expected[library_trace(["reject"], None)] = ("rejected", False)
        expected[library_trace(["accept", "start", "run", "fail"], "fail")] = ("failed", False)
        # ... and without transitions (what the zero-code instrumentations record): inferred.
        expected[library_trace(["run"], "ok")] = ("committed", True)
        # A bare span recorded "rejected" (no transitions) stands, although the target then ran OK.
        ctx, tid = app.root("bare-rejected")
        attrs = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_HANDOFF,
            sc.REACH_HANDOFF_SOURCE: "Triage",
            sc.REACH_HANDOFF_TARGET: "Billing",
            sc.REACH_HANDOFF_STATUS: "rejected",
        }
        app.raw(ctx, "handoff Billing", 100, 150, attrs)
        app.agent_span(ctx, "Billing", 200)
        expected[tid] = ("rejected", False)
        # Zero-code handoffs with no status: the target's next agent span decides.
        ctx, tid = app.root("zero-ok")
        app.agent_span(ctx, "Billing", 10, error=True)  # before the handoff: not its outcome
        app.zero_code_handoff(ctx, "Triage", "Billing", 100)
        app.agent_span(ctx, "Billing", 200)
        expected[tid] = ("committed", True)
        ctx, tid = app.root("zero-error")
        app.zero_code_handoff(ctx, "Triage", "Billing", 100)
        app.agent_span(ctx, "Billing", 200, error=True)
        expected[tid] = ("failed", True)
        ctx, no_target = app.root("zero-none")
        app.zero_code_handoff(ctx, "Triage", "Ghost", 100)
        expected[no_target] = ("unknown", True)
        app.flush()
        # The target's span stored in an earlier request than the handoff (it ended first).
        ctx, tid = app.root("zero-target-first")
        app.agent_span(ctx, "Billing", 200)
        app.flush()
        app.zero_code_handoff(ctx, "Triage", "Billing", 100)
        app.flush()
        expected[tid] = ("committed", True)
        # The target's span in a later request than the handoff.
        ctx, late = app.root("zero-target-later")
        app.zero_code_handoff(ctx, "Triage", "Billing", 100)
        app.flush()
        # Pending: /metrics has not counted the two handoffs whose target has not been seen;
        # the API answers "unknown" for them now.
        counted = _handoffs_metric(c)
        api = _handoffs_api(c)
        assert sum(counted.values()) == len(expected) - 1
        assert api[("unknown", "true")] == 2
        assert _trace_handoffs(c, late) == [("unknown", True)]
        app.agent_span(ctx, "Billing", 200, error=True)
        app.flush()
        expected[late] = ("failed", True)

    for tid, outcome in expected.items():
        assert _trace_handoffs(c, tid) == [outcome], tid
    want: dict[tuple[str, str], float] = {}
    for status, inferred in expected.values():
        key = (status, str(inferred).lower())
        want[key] = want.get(key, 0.0) + 1
    assert want == {
        ("committed", "false"): 1,
        ("rejected", "false"): 2,
        ("failed", "false"): 1,
        ("committed", "true"): 3,
        ("failed", "true"): 2,
        ("unknown", "true"): 1,
    }
    assert _handoffs_api(c) == want
    # The handoff to Ghost waits for its target until the timeout, then counts as unknown.
    counted = _handoffs_metric(c)
    assert counted == {k: v for k, v in want.items() if k != ("unknown", "true")}
    c.offset[0] = TIMEOUT_S + 1
    assert _handoffs_metric(c) == want == _handoffs_api(c)
    assert _handoffs_metric(c) == want  # counted once: a second scrape adds nothing


# --- the rule's two forms, and the counter's bounds ---------------------------------------------
STATUSES = (None, "", "unknown", "created", "committed", "rejected", "failed", "accepted", "expired", "odd")
TRANSITIONS: tuple[Any, ...] = ("absent", None, 0, 1, 3, 2.0, 0.0, -1, "3", True, False)


def test_sql_and_python_forms_of_the_rule_agree() -> None:
    rows = []
    for status, transitions in itertools.product(STATUSES, TRANSITIONS):
        attrs = {} if transitions == "absent" else {sc.REACH_HANDOFF_TRANSITIONS: transitions}
        rows.append((status, json.dumps(attrs), is_recorded(status, attrs.get(sc.REACH_HANDOFF_TRANSITIONS))))
    sql, params = recorded_sql(status="status")
    con = duckdb.connect()
    con.execute("CREATE TABLE t (i INTEGER, status VARCHAR, attributes VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, s, a) for i, (s, a, _) in enumerate(rows)])
    got = dict(con.execute(f"SELECT i, {sql} FROM t", params).fetchall())
    assert [bool(got[i]) for i in range(len(rows))] == [want for *_, want in rows]
    # The cases SPEC §11 names.
    assert is_recorded("rejected", None) and is_recorded("committed", 0)
    assert not is_recorded(None, 3) and not is_recorded("unknown", 0) and not is_recorded("created", None)
    assert is_recorded("unknown", 2) and not is_recorded("unknown", True) and not is_recorded("unknown", "3")


def _handoff_row(trace_id: str, target: str, start_ns: int) -> dict[str, Any]:
    row = span(trace_id, operation=sc.OP_HANDOFF, end_ns=start_ns + MS, duration_ms=1.0)
    row.update(handoff_source="A", handoff_target=target, handoff_mode="delegate")
    return row


def _agent_row(trace_id: str, agent: str, start_ns: int, error: bool = False) -> dict[str, Any]:
    return span(
        trace_id, operation=sc.OP_AGENT, end_ns=start_ns + MS, duration_ms=1.0, agent=agent, error=error
    )


def _batch(rows: list[dict[str, Any]]) -> pa.Table:
    return table(rows)


def test_pending_handoffs_are_bounded_and_settle_once() -> None:
    now = [NOW_NS / 1e9]
    counts = HandoffCounts(None, lambda: now[0], timeout_s=60, max_pending=3)
    traces = [new_trace_id() for _ in range(5)]
    # Five handoffs wait for their targets; past max_pending the two oldest settle as unknown.
    settled = counts.observe(_batch([_handoff_row(t, "B", NOW_NS) for t in traces]))
    assert [(o[2], o[4]) for o in settled] == [("unknown", True)] * 2 and counts.pending == 3
    # A target that ran before its handoff started is not its outcome; the next run is.
    assert counts.observe(_batch([_agent_row(traces[2], "B", NOW_NS - MS)])) == []
    settled = counts.observe(
        _batch(
            [_agent_row(traces[2], "B", NOW_NS + 5 * MS, error=True), _agent_row(traces[2], "B", NOW_NS + MS)]
        )
    )
    assert [(o[2], o[4]) for o in settled] == [("committed", True)] and counts.pending == 2
    assert counts.observe(_batch([_agent_row(traces[2], "B", NOW_NS + 9 * MS, error=True)])) == []
    # The rest time out to unknown, once.
    assert counts.expire() == []
    now[0] += 61
    assert [(o[1], o[2]) for o in counts.expire()] == [("B", "unknown")] * 2
    assert counts.expire() == [] and counts.pending == 0
