"""Rich rendering for the query commands: a trace tree, trace summaries, and plain titled tables.

A handoff shows the outcome the API computed for it (SPEC §11), marked ``inferred`` where it was.
"""

from __future__ import annotations

from typing import Any

from reach_collector.ingest.normalize import EXCEPTION_EVENT, EXCEPTION_MESSAGE, EXCEPTION_TYPE
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from reach_otel import semconv as sc


def _duration(ms: float) -> str:
    return f"{ms / 1000:.2f}s" if ms >= 1000 else f"{ms:.1f}ms"


def span_label(span: dict[str, Any]) -> Text:
    attrs: dict[str, Any] = span.get("attributes") or {}
    error = span["status"]["code"] == "ERROR"
    label = Text()
    label.append(span["name"], style="bold red" if error else "bold")
    # The collector's normalised view first (other tools' handoffs carry other attributes).
    shown = span.get("handoff") or {}
    is_handoff = bool(shown) or span.get("operation") == sc.OP_HANDOFF
    is_handoff = is_handoff or attrs.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_HANDOFF
    agent = attrs.get(sc.GEN_AI_AGENT_NAME) or attrs.get(sc.REACH_AGENT_NAME) or span.get("agent")
    if agent and not is_handoff:
        label.append(f"  [{agent}]", style="cyan")
    label.append(f"  {_duration(float(span['duration_ms']))}", style="dim")
    if error:
        err = attrs.get(sc.ERROR_TYPE) or span["status"].get("message") or "error"
        label.append(f"  ERROR {err}", style="red")
    elif span["status"]["code"] == "OK":
        label.append("  OK", style="green")
    tokens_in = attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS)
    tokens_out = attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)
    if tokens_in is not None or tokens_out is not None:
        label.append(f"  tokens {tokens_in or 0}→{tokens_out or 0}", style="magenta")
    if is_handoff or attrs.get(sc.REACH_HANDOFF_TARGET):
        source = (
            shown.get("source")
            or attrs.get(sc.REACH_HANDOFF_SOURCE)
            or attrs.get(sc.GEN_AI_AGENT_NAME)
            or "?"
        )
        target = (
            shown.get("target")
            or attrs.get(sc.REACH_HANDOFF_TARGET)
            or attrs.get(sc.GEN_AI_TRANSFER_TARGET_NAME)
            or "?"
        )
        # The one outcome the API and /metrics count (views.handoff_json); a span without it (an
        # older collector's answer) shows its recorded status.
        status = shown.get("status") or attrs.get(sc.REACH_HANDOFF_STATUS, "")
        hop = attrs.get(sc.REACH_HOP_COUNT)
        label.append(f"  ⇢ handoff {source} → {target}", style="yellow")
        if status:
            label.append(
                f" ({status}, inferred)" if shown.get("inferred") else f" ({status})", style="yellow"
            )
        if hop is not None:
            label.append(f" hop {hop}", style="yellow")
    if attrs.get(sc.REACH_LOOP_DETECTED) is True:
        label.append("  ⟳ LOOP", style="bold white on red")
    return label


def _event_line(event: dict[str, Any]) -> Text | None:
    name = event.get("name")
    attrs = event.get("attributes") or {}
    if name == sc.EVENT_LOOP_DETECTED:
        cycle = attrs.get(sc.REACH_LOOP_CYCLE)
        shown = " → ".join(cycle) if isinstance(cycle, list) else str(cycle or "")
        return Text(f"⟳ loop detected {shown}".rstrip(), style="bold white on red")
    if name == sc.EVENT_HOP_LIMIT_EXCEEDED:
        return Text(f"⚠ hop limit exceeded {attrs.get(sc.REACH_HOP_COUNT, '')}".rstrip(), style="bold red")
    if name == sc.EVENT_GATE_TRIGGERED:
        return Text(f"⚠ gate {attrs.get(sc.REACH_GATE_NAME, '')}", style="red")
    if name == EXCEPTION_EVENT:
        return Text(f"✗ {attrs.get(EXCEPTION_TYPE, '')}: {attrs.get(EXCEPTION_MESSAGE, '')}", style="red")
    return None


def trace_tree(trace: dict[str, Any]) -> Tree:
    tree = Tree(Text(f"trace {trace['trace_id']}  ({trace['span_count']} spans)", style="bold"))
    stack: list[tuple[Tree, dict[str, Any]]] = [(tree, root) for root in reversed(trace["roots"])]
    # Iterative, so a deep trace cannot hit the recursion limit; reversed keeps start order.
    pending: list[tuple[Tree, dict[str, Any]]] = stack
    while pending:
        parent, span = pending.pop()
        node = parent.add(span_label(span))
        for event in span.get("events") or []:
            line = _event_line(event)
            if line is not None:
                node.add(line)
        for child in reversed(span.get("children") or []):
            pending.append((node, child))
    return tree


def traces_table(traces: list[dict[str, Any]]) -> Table:
    table = Table(title=f"{len(traces)} trace(s)")
    for column in ("trace_id", "start", "root", "duration", "spans", "errors", "hops", "agents"):
        table.add_column(column, overflow="fold")
    for t in traces:
        table.add_row(
            t["trace_id"],
            t.get("start_time", ""),
            t.get("root_name") or "",
            _duration(float(t["duration_ms"])),
            str(t["span_count"]),
            Text(str(t["error_count"]), style="red" if t["error_count"] else ""),
            str(t["hops"]),
            ", ".join(t.get("agents") or []),
        )
    return table


def print_table(title: str, columns: list[str], rows: list[list[str]], empty: str) -> None:
    """A titled table of plain cells, or ``empty`` when there are no rows."""
    console = Console()
    if not rows:
        console.print(empty)
        return
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def print_tree(trace: dict[str, Any], console: Console | None = None) -> None:
    (console or Console()).print(trace_tree(trace))


def print_traces(traces: list[dict[str, Any]], console: Console | None = None) -> None:
    (console or Console()).print(traces_table(traces))
