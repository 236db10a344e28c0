"""A failed trace's cause (SPEC §17), from its span rows alone: where the failure began (the
*origin*), the path from the root down to it, the agents it affected and what the trace wasted.

- The trace **failed** when its root span (the earliest-starting span without a parent) is ERROR.
- A span **fails** when it is ERROR, or is a handoff whose §11 outcome (``handoff_outcome``, as the
  trace view reads it) is rejected, failed, expired or unknown. **Failing chains** run from the
  root down through failing children only, so an ERROR span under a parent that did not fail (a
  retry or a fallback absorbed it) is never on one; nor is a failed attempt that a retry absorbed:
  a failing span with a later sibling of the same operation and name (the same tool, model or
  handoff target) that did not fail.
- The **origin** is the failing span at the bottom of a chain (no failing child), the
  earliest-ending one (then earliest start, then span id). A handoff flagged
  ``reach.loop.detected``, or carrying ``reach.hop.limit_exceeded`` (attribute or event), ends its
  chain and takes precedence over every other bottom: kind ``loop`` (``hop_limit`` when only the
  hop limit is flagged).
- A handoff whose failure is *inferred* (no recorded outcome, its target's next agent span is
  ERROR) is no bottom: the failure went on into that run, which continues the chain (a framework
  that records the handoff as a short span beside the target's run, not around it).
- **Kind** comes from the origin, or, when the origin is a span of no GenAI operation (an HTTP or
  database span of another instrumentation), from its nearest such ancestor on the path: tool →
  ``tool_error``, LLM → ``llm_error``, agent → ``agent_error``, handoff → ``handoff_rejected``,
  ``handoff_expired`` (expired or unknown) or ``handoff_failed``. With none (a workflow root that
  failed by itself) the kind is ``span_error`` and the name the span's name — where §17 is silent.
- **agent**: the span's agent (a handoff's is its source), else the nearest agent span above it on
  the path (§11's owner). **name**: the tool, the request model, the handoff target, the agent.
- **affected_agents**: the agents of the path's spans, the origin's, and ``never_ran``: targets of
  the handoffs on a failing chain or started at or after the origin began that have no agent span
  at or after the handoff (the §11 rule's "no such span"). **upstream**: the sources of the
  handoffs into the origin's agent run (on the path, or whose target's next run is that run).
- **Waste**: the spans that started at or after the origin began, plus the whole subtree of every
  failing span that is not the origin or one of its ancestors (other failing chains, and attempts a
  retry or a fallback threw away), and the time the origin's ancestors kept running after it
  began. Tokens are those of its LLM spans (agent spans repeat their
  LLM calls' sums, so they are not counted again); ``cost_usd`` prices them with the price table,
  the models it does not price listed in ``unpriced_models`` (None when tokens were spent and none
  was priced); ``duration_ms`` is the length of the union of those time intervals (the trace's
  wall-clock time from the origin's start to its end, plus failed branches before it), so nested
  and overlapping spans count once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from reach_collector.query.handoff_outcome import next_run, next_run_index
from reach_collector.query.pricing import PriceTable
from reach_collector.query.views import agent_runs, handoff_json, load_json
from reach_collector.query.waste import waste
from reach_otel import handoff_state as hf
from reach_otel import semconv as sc

__all__ = ["CAUSE_COLUMNS", "KINDS", "Cause", "trace_cause"]

ERROR_CODE: Final = 2  # OTLP STATUS_CODE_ERROR
KINDS: Final = (
    "tool_error",
    "llm_error",
    "agent_error",
    "handoff_rejected",
    "handoff_failed",
    "handoff_expired",
    "loop",
    "hop_limit",
    "span_error",  # no GenAI span on the way up from the origin (§17 names none for it)
)
# The span row columns a cause reads (the bulk read of /api/causes selects these).
CAUSE_COLUMNS: Final = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "start_ns",
    "end_ns",
    "status_code",
    "status_message",
    "service",
    "operation",
    "agent",
    "tool",
    "model",
    "input_tokens",
    "output_tokens",
    "handoff_source",
    "handoff_target",
    "handoff_status",
    "handoff_mode",
    "loop_detected",
    "error_type",
    "attributes",  # read for handoffs only (transitions, hop limit)
    "events",  # read for ERROR spans and handoffs only (exception message, hop limit event)
)
_FAILED_OUTCOMES: Final = frozenset({hf.REJECTED, hf.FAILED, hf.EXPIRED, hf.UNKNOWN})
_LLM: Final = frozenset(sc.LLM_OPERATIONS)
MAX_MESSAGE: Final = 1000  # characters of the origin's message kept


@dataclass(frozen=True)
class Cause:
    """One trace's cause; ``json()`` is the §17 answer (with a few extra fields)."""

    trace_id: str
    failed: bool
    origin: dict[str, Any] | None = None
    path: tuple[str, ...] = ()
    path_names: tuple[str, ...] = ()  # the path's span names, for a reader
    path_agents: frozenset[str] = frozenset()
    path_services: frozenset[str] = frozenset()
    upstream: tuple[str, ...] = ()
    never_ran: tuple[str, ...] = ()
    wasted: dict[str, Any] = field(default_factory=dict)

    @property
    def affected_agents(self) -> list[str]:
        agents = set(self.path_agents) | set(self.never_ran)
        if self.origin is not None and self.origin["agent"] is not None:
            agents.add(self.origin["agent"])
        return sorted(agents)

    def json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "failed": self.failed,
            "origin": self.origin,
            "path": list(self.path),
            "path_names": list(self.path_names),
            "affected_agents": self.affected_agents,
            "upstream": list(self.upstream),
            "never_ran": list(self.never_ran),
            "wasted": self.wasted or waste([], PriceTable(None)),
        }


class _Trace:
    """A trace's spans indexed: first row of each span id, children by parent, handoff outcomes."""

    def __init__(self, rows: Iterable[Mapping[str, Any]]) -> None:
        self.by_id: dict[str, Mapping[str, Any]] = {}
        for row in rows:
            self.by_id.setdefault(row["span_id"], row)
        self.children: dict[str, list[str]] = {}
        for span_id, row in self.by_id.items():
            parent = row["parent_span_id"]
            if parent and parent != span_id and parent in self.by_id:
                self.children.setdefault(parent, []).append(span_id)
        self.runs = agent_runs(self.by_id.values())
        self.outcome: dict[str, str] = {}
        # A handoff whose failure is inferred from its target's next run (§11): that run carries
        # the failure on, so the chain goes on into it rather than ending at the handoff.
        self.carried: dict[str, str] = {}
        for span_id, row in self.by_id.items():
            if row["operation"] != sc.OP_HANDOFF:
                continue
            shown = handoff_json(row, self.runs)
            self.outcome[span_id] = shown["status"]
            if shown["inferred"] and shown["status"] == hf.FAILED:
                runs = self.runs.get(row["handoff_target"], [])
                i = next_run_index(row["start_ns"], runs)
                if i is not None:
                    self.carried[span_id] = runs[i][1]

    def root(self) -> Mapping[str, Any] | None:
        parentless = [r for r in self.by_id.values() if not r["parent_span_id"]]
        if not parentless:  # a partial trace: its orphans stand in for the root
            parentless = [r for r in self.by_id.values() if r["parent_span_id"] not in self.by_id]
        return min(parentless, key=lambda r: (r["start_ns"], r["span_id"]), default=None)

    def failing(self, span_id: str) -> bool:
        row = self.by_id[span_id]
        return row["status_code"] == ERROR_CODE or self.outcome.get(span_id) in _FAILED_OUTCOMES

    def retried(self, parent: str) -> set[str]:
        """The failing children of ``parent`` that a retry absorbed: a later sibling of the same
        operation and name (the same tool, model or target) that did not fail."""
        kids = [self.by_id[c] for c in self.children.get(parent, ())]
        ok: dict[tuple[Any, Any], int] = {}  # (operation, what) → the latest start of a success
        for r in kids:
            if not self.failing(r["span_id"]):
                key = (r["operation"], _what(r))
                ok[key] = max(ok.get(key, r["start_ns"]), r["start_ns"])
        return {
            r["span_id"]
            for r in kids
            if self.failing(r["span_id"]) and ok.get((r["operation"], _what(r)), -1) > r["start_ns"]
        }

    def subtree(self, span_id: str) -> Iterable[str]:
        stack, seen = [span_id], {span_id}
        while stack:
            at = stack.pop()
            yield at
            for child in self.children.get(at, ()):
                if child not in seen:
                    seen.add(child)
                    stack.append(child)


def _what(row: Mapping[str, Any]) -> Any:
    """What a span calls: its tool, model, handoff target or agent, else its name."""
    op = row["operation"]
    if op == sc.OP_TOOL:
        return row["tool"] or row["name"]
    if op in _LLM:
        return row["model"] or row["name"]
    if op == sc.OP_HANDOFF:
        return row["handoff_target"]
    return row["agent"] if op == sc.OP_AGENT else row["name"]


def _flags(row: Mapping[str, Any]) -> tuple[bool, bool]:
    """(loop, hop limit) of a handoff row."""
    loop = bool(row["loop_detected"])
    attributes = load_json(row["attributes"], {})
    hop = isinstance(attributes, dict) and attributes.get(sc.REACH_HOP_LIMIT_EXCEEDED) is True
    if not hop:
        events = load_json(row["events"], [])
        hop = isinstance(events, list) and any(
            isinstance(e, dict) and e.get("name") == sc.EVENT_HOP_LIMIT_EXCEEDED for e in events
        )
    return loop, hop


def trace_cause(trace_id: str, rows: Iterable[Mapping[str, Any]], prices: PriceTable) -> Cause:
    """The cause of one trace from its span rows (``CAUSE_COLUMNS`` at least), as the module
    docstring defines it."""
    t = _Trace(rows)
    root = t.root()
    if root is None or root["status_code"] != ERROR_CODE:
        return Cause(trace_id, failed=False)
    # Down the failing chains from the root; a loop or hop-limit handoff ends its chain.
    parent_of: dict[str, str] = {}
    bottoms: list[str] = []
    stops: list[str] = []
    stack, seen = [root["span_id"]], {root["span_id"]}
    carried: list[str] = []
    while stack:
        at = stack.pop()
        row = t.by_id[at]
        if row["operation"] == sc.OP_HANDOFF and any(_flags(row)):
            stops.append(at)
        else:
            retried = t.retried(at)
            below = [c for c in t.children.get(at, ()) if c not in seen and c not in retried and t.failing(c)]
            if not below:
                (carried if at in t.carried else bottoms).append(at)
            for child in below:
                seen.add(child)
                parent_of[child] = at
                stack.append(child)
        if not stack:  # the chains the tree holds are walked: follow the carried failures
            for handoff in carried:
                run = t.carried[handoff]
                if run not in seen:  # else the run is on a chain already, below its own parent
                    seen.add(run)
                    parent_of[run] = handoff
                    stack.append(run)
            carried = []

    def order(span_id: str) -> tuple[int, int, str]:
        r = t.by_id[span_id]
        return (r["end_ns"], r["start_ns"], span_id)

    origin_id = min(stops or bottoms, key=order)
    path = [origin_id]
    while path[-1] in parent_of:
        path.append(parent_of[path[-1]])
    path.reverse()
    origin = _origin(t, path, origin_id in stops)
    on_chain = set(seen)
    return Cause(
        trace_id,
        failed=True,
        origin=origin,
        path=tuple(path),
        path_names=tuple(t.by_id[s]["name"] for s in path),
        path_agents=frozenset(a for s in path if (a := t.by_id[s]["agent"]) is not None),
        path_services=frozenset(v for s in path if (v := t.by_id[s]["service"]) is not None),
        upstream=_upstream(t, path, origin["agent"]),
        never_ran=_never_ran(t, on_chain, t.by_id[origin_id]["start_ns"]),
        wasted=waste([t.by_id[s] for s in _wasted_ids(t, path)], prices, _after(t, path)),
    )


def _origin(t: _Trace, path: Sequence[str], stopped: bool) -> dict[str, Any]:
    row = t.by_id[path[-1]]
    # The span that names the kind: the origin, else its nearest ancestor with a GenAI operation.
    named = next(
        (t.by_id[s] for s in reversed(path) if t.by_id[s]["operation"] not in (None, sc.OP_WORKFLOW)),
        row,
    )
    op = named["operation"]
    if op == sc.OP_HANDOFF:
        if stopped:
            loop, _ = _flags(named)
            kind = "loop" if loop else "hop_limit"
        else:
            outcome = t.outcome.get(named["span_id"])
            if outcome == hf.REJECTED:
                kind = "handoff_rejected"
            elif outcome in (hf.EXPIRED, hf.UNKNOWN):
                kind = "handoff_expired"
            else:  # failed, or an ERROR handoff span whatever its outcome
                kind = "handoff_failed"
        name = named["handoff_target"]
        agent = named["handoff_source"] or named["agent"]
    elif op == sc.OP_TOOL:
        kind, name, agent = "tool_error", named["tool"] or named["name"], named["agent"]
    elif op in _LLM:
        kind, name, agent = "llm_error", named["model"] or named["name"], named["agent"]
    elif op == sc.OP_AGENT:
        kind, name, agent = "agent_error", named["agent"] or named["name"], named["agent"]
    else:
        kind, name, agent = "span_error", row["name"], row["agent"]
    if agent is None:  # §11's owner: the nearest agent span above, on the path
        agent = next(
            (
                t.by_id[s]["agent"]
                for s in reversed(path[:-1])
                if t.by_id[s]["operation"] == sc.OP_AGENT and t.by_id[s]["agent"] is not None
            ),
            None,
        )
    return {
        "span_id": row["span_id"],
        "agent": agent,
        "kind": kind,
        "name": name,
        "error_type": row["error_type"] or named["error_type"],
        "message": _message(row) or (_message(named) if named is not row else None),
    }


def _message(row: Mapping[str, Any]) -> str | None:
    """The span's status message, else its exception event's message."""
    text = row["status_message"]
    if not text:
        events = load_json(row["events"], [])
        for event in events if isinstance(events, list) else ():
            if isinstance(event, dict) and event.get("name") == sc.EXCEPTION_EVENT:
                attrs = event.get("attributes")
                text = attrs.get(sc.EXCEPTION_MESSAGE) if isinstance(attrs, dict) else None
                if text:
                    break
    return str(text)[:MAX_MESSAGE] if text else None


def _upstream(t: _Trace, path: Sequence[str], agent: str | None) -> tuple[str, ...]:
    """Sources of the handoffs into the origin agent's run: on the path, or whose target's next
    agent span (§11) is the run the origin happened in."""
    if agent is None:
        return ()
    found: set[str] = set()
    run = next(
        (
            s
            for s in reversed(path)
            if t.by_id[s]["operation"] == sc.OP_AGENT and t.by_id[s]["agent"] == agent
        ),
        None,
    )
    runs = t.runs.get(agent, [])
    for span_id in t.outcome:
        row = t.by_id[span_id]
        if row["handoff_target"] != agent or (row["handoff_source"] or row["agent"]) is None:
            continue
        source = row["handoff_source"] or row["agent"]
        if span_id in path[:-1]:
            found.add(source)
            continue
        i = next_run_index(row["start_ns"], runs)
        if run is not None and i is not None and runs[i][1] == run:
            found.add(source)
    found.discard(agent)
    return tuple(sorted(found))


def _never_ran(t: _Trace, on_chain: set[str], origin_start: int) -> tuple[str, ...]:
    """Targets of handoffs on a failing chain, or started at or after the origin began, with no
    agent span of the target at or after the handoff."""
    out: set[str] = set()
    for span_id in t.outcome:
        row = t.by_id[span_id]
        target = row["handoff_target"]
        if not target or (span_id not in on_chain and row["start_ns"] < origin_start):
            continue
        if next_run(row["start_ns"], t.runs.get(target, ())) is None:
            out.add(target)
    return tuple(sorted(out))


def _wasted_ids(t: _Trace, path: Sequence[str]) -> set[str]:
    origin_start = t.by_id[path[-1]]["start_ns"]
    ids = {s for s, r in t.by_id.items() if r["start_ns"] >= origin_start}
    trunk = set(path)
    for span_id in t.by_id:
        if span_id not in trunk and span_id not in ids and t.failing(span_id):
            ids.update(t.subtree(span_id))
    return ids


def _after(t: _Trace, path: Sequence[str]) -> list[tuple[int, int]]:
    """The origin's ancestors' time from the moment the origin began: the trace kept running."""
    begun = t.by_id[path[-1]]["start_ns"]
    return [(begun, t.by_id[s]["end_ns"]) for s in path[:-1] if t.by_id[s]["end_ns"] > begun]
