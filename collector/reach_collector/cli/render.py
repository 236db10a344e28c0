"""Rich rendering for the query commands: a trace tree, trace summaries, and every other table.

Tables fit the terminal (SPEC §12): a column of ids, times or numbers is never wrapped or cut;
text columns fold; at narrow widths the lower-value columns are dropped, and the `traces` table
stacks each trace's start under its id, so a 32-hex id and a time each stay whole on one line at
80 columns. Durations and times come from ``formats``. A handoff shows the outcome the API
computed for it (SPEC §11), marked ``inferred`` where it was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any, Final, Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from reach_collector.cli.formats import LOCAL, duration, parse_zone, when, zone_label
from reach_collector.ingest.normalize import EXCEPTION_EVENT, EXCEPTION_MESSAGE, EXCEPTION_TYPE
from reach_otel import semconv as sc


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
    label.append(f"  {duration(float(span['duration_ms']))}", style="dim")
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


def event_line(event: dict[str, Any]) -> Text | None:
    """A span event the tree shows under its span (loop, hop limit, gate, exception), else None."""
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


def evaluation_line(evaluation: dict[str, Any]) -> Text:
    """An evaluation of the span (SPEC §18), under it: its name, label, score and explanation."""
    verdict = [str(v) for v in (evaluation.get("label"), evaluation.get("score")) if v is not None]
    line = f"◇ {evaluation.get('name', '?')}: {', '.join(verdict) or 'no verdict'}"
    if evaluation.get("explanation"):
        line += f" — {evaluation['explanation']}"
    return Text(line, style="blue")


def _trace_bounds(trace: dict[str, Any]) -> tuple[int, int] | None:
    spans = trace.get("spans") or []
    starts = [s["start_time_unix_nano"] for s in spans if isinstance(s.get("start_time_unix_nano"), int)]
    ends = [s["end_time_unix_nano"] for s in spans if isinstance(s.get("end_time_unix_nano"), int)]
    if not starts or not ends:
        return None
    return min(starts), max(ends)


def trace_tree(trace: dict[str, Any], zone: tzinfo) -> Tree:
    """The span tree under a two-line heading: the trace id, then its span count, start and length."""
    heading = Text(f"trace {trace['trace_id']}", style="bold")
    about = f"{trace['span_count']} spans"
    bounds = _trace_bounds(trace)
    if bounds is not None:
        about += f" · started {when(bounds[0], zone)} · took {duration((bounds[1] - bounds[0]) / 1e6)}"
    heading.append("\n" + about, style="dim")
    tree = Tree(heading)
    # Iterative, so a deep trace cannot hit the recursion limit; reversed keeps start order.
    pending: list[tuple[Tree, dict[str, Any]]] = [(tree, root) for root in reversed(trace["roots"])]
    while pending:
        parent, span = pending.pop()
        node = parent.add(span_label(span))
        for event in span.get("events") or []:
            line = event_line(event)
            if line is not None:
                node.add(line)
        for evaluation in span.get("evaluations") or []:
            node.add(evaluation_line(evaluation))
        for child in reversed(span.get("children") or []):
            pending.append((node, child))
    return tree


# --- tables that fit ---------------------------------------------------------------------------

GAP: Final = 2  # spaces between two columns (rich's collapsed padding)


@dataclass(frozen=True)
class Col:
    """A table column. ``whole``: ids, times, numbers — never wrapped or cut. Others fold, down to
    ``floor`` characters. ``drop`` > 0: left out when the terminal is too narrow, highest first."""

    header: str
    whole: bool = False
    drop: int = 0
    floor: int = 8
    justify: Literal["left", "right"] = "left"
    style: str | None = None


Cell = str | Text


def _lines_width(value: Cell) -> int:
    text = value.plain if isinstance(value, Text) else value
    return max((cell_len(line) for line in text.split("\n")), default=0)


def _share(wanted: list[int], floors: list[int], room: int) -> list[int]:
    """Widths for the folding columns: each its natural width if all fit, else ``room`` shared so
    that no column gets more than it wants or less than its floor (narrow ones are served first)."""
    if sum(wanted) <= room:
        return wanted
    widths = list(floors)
    left = room - sum(floors)
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    for n, i in enumerate(order):
        give = min(wanted[i] - widths[i], left // (len(order) - n))
        widths[i] += max(give, 0)
        left -= max(give, 0)
    return widths


def fits(columns: Sequence[Col], rows: Sequence[Sequence[Cell]], width: int) -> bool:
    """Whether every column fits side by side at its natural width (nothing folded or dropped)."""
    natural = [
        max([_lines_width(c.header), *(_lines_width(r[i]) for r in rows)]) for i, c in enumerate(columns)
    ]
    return sum(natural) + GAP * (len(columns) - 1) <= width


def stacked(top: Cell, below: Cell) -> Text:
    """Two values in one cell, the second dimmed on the line below (an id over a time, say)."""
    cell = top.copy() if isinstance(top, Text) else Text(top)
    cell.append("\n")
    cell.append(below if isinstance(below, Text) else Text(below, style="dim"))
    return cell


def fit_table(
    columns: Sequence[Col],
    rows: Sequence[Sequence[Cell]],
    width: int,
    *,
    row_styles: Sequence[str | None] | None = None,
    section_before: int | None = None,
) -> Table:
    """A table of ``rows`` no wider than ``width``: whole columns at their full width, folding ones
    sharing the rest, lower-value columns dropped until the floors fit. ``section_before``: a rule
    above that row (a total)."""
    natural = [
        max([_lines_width(c.header), *(_lines_width(r[i]) for r in rows)]) for i, c in enumerate(columns)
    ]
    floors = [n if c.whole else min(c.floor, n) for c, n in zip(columns, natural, strict=True)]
    kept = list(range(len(columns)))

    def needed() -> int:
        return sum(floors[i] for i in kept) + GAP * (len(kept) - 1)

    while needed() > width and any(columns[i].drop for i in kept):
        kept.remove(max((i for i in kept if columns[i].drop), key=lambda i: (columns[i].drop, i)))
    folding = [i for i in kept if not columns[i].whole]
    room = width - sum(natural[i] for i in kept if columns[i].whole) - GAP * (len(kept) - 1)
    shared = _share([natural[i] for i in folding], [floors[i] for i in folding], max(room, 0))
    widths = {i: natural[i] for i in kept} | dict(zip(folding, shared, strict=True))

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for i in kept:
        c = columns[i]
        table.add_column(
            c.header,
            width=max(widths[i], 1),
            no_wrap=c.whole,
            overflow="ignore" if c.whole else "fold",
            justify=c.justify,
            style=c.style,
        )
    for n, row in enumerate(rows):
        if n == section_before:
            table.add_section()
        table.add_row(*(row[i] for i in kept), style=row_styles[n] if row_styles else None)
    return table


_TRAILING: Final = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


class _Out(Console):
    """A console whose lines carry no trailing padding (tables pad every cell), so a copied line
    or a piped table holds only what is shown."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        with self.capture() as captured:
            super().print(*objects, **kwargs)
        self.file.write(_TRAILING.sub(r"\1", captured.get()))
        self.file.flush()


def console() -> Console:
    """Where the commands print: the terminal's width, or ``$COLUMNS``, else 80 when piped."""
    return _Out(highlight=False)


def print_table(
    heading: str | Text | None,
    columns: Sequence[Col],
    rows: Sequence[Sequence[Cell]],
    empty: str,
    out: Console | None = None,
) -> None:
    """A heading line, then the table fitted to the terminal; ``empty`` when there are no rows."""
    out = out or console()
    if not rows:
        out.print(empty)
        return
    if heading:
        out.print(heading if isinstance(heading, Text) else Text(heading, style="bold"))
    out.print(fit_table(columns, rows, out.width))


def zone_heading(text: str, zone: tzinfo, until: Any = None) -> Text:
    """``text`` in bold over a dim line ``until <time> · times in Asia/Shanghai (+08:00)``."""
    heading = Text(text, style="bold")
    about = f"until {when(until, zone)} · " if until else ""
    heading.append(f"\n{about}times in {zone_label(zone)}", style="dim")
    return heading


# The traces table: side by side when everything fits unfolded; else each trace's start and
# duration on the line under its id (both fit in the id's 32 columns), so root names and agents
# keep room at 80 columns.
_TRACE_COLUMNS: Final = (
    Col("trace", whole=True),
    Col("start", whole=True),
    Col("root", floor=16),
    Col("duration", whole=True, justify="right"),
    Col("spans", whole=True, justify="right", drop=2),
    Col("errors", whole=True, justify="right"),
    Col("hops", whole=True, justify="right", drop=1),
    Col("agents", floor=12),
)
_STACKED_TRACE_COLUMNS: Final = (
    Col("trace / start, duration", whole=True),
    *_TRACE_COLUMNS[2:3],
    *_TRACE_COLUMNS[4:],
)


def _trace_cells(t: dict[str, Any], zone: tzinfo) -> list[Cell]:
    errors = int(t["error_count"])
    return [
        t["trace_id"],
        when(t.get("start_time") or t.get("start_time_unix_nano"), zone),
        t.get("root_name") or "",
        duration(float(t["duration_ms"])),
        str(t["span_count"]),
        Text(str(errors), style="red" if errors else ""),
        str(t["hops"]),
        ", ".join(t.get("agents") or []),
    ]


def _agent_lines(agents: list[str], most: int = 4) -> str:
    """One agent a line (the row is two lines tall anyway); past ``most`` lines, ``+N more``."""
    if len(agents) <= most:
        return "\n".join(agents)
    return "\n".join([*agents[: most - 1], f"+{len(agents) - most + 1} more"])


def traces_table(traces: list[dict[str, Any]], zone: tzinfo, width: int) -> Table:
    rows = [_trace_cells(t, zone) for t in traces]
    if fits(_TRACE_COLUMNS, rows, width):
        return fit_table(_TRACE_COLUMNS, rows, width)
    cells = [
        [
            stacked(str(r[0]), f"{r[1]}{r[3]:>{max(32 - len(str(r[1])), 1 + len(str(r[3])))}}"),
            r[2],
            *r[4:7],
            _agent_lines(t.get("agents") or []),
        ]
        for r, t in zip(rows, traces, strict=True)
    ]
    return two_line_table(_STACKED_TRACE_COLUMNS, cells, width)


def two_line_table(columns: Sequence[Col], rows: Sequence[Sequence[Cell]], width: int) -> Table:
    """A fitted table whose rows hold stacked cells, with a rule between rows so they read apart."""
    table = fit_table(columns, rows, width)
    table.show_lines = True
    return table


def print_tree(trace: dict[str, Any], out: Console | None = None, zone: tzinfo | None = None) -> None:
    """The span tree, times in ``zone`` (default this machine's)."""
    (out or console()).print(trace_tree(trace, zone or parse_zone(LOCAL)))


def print_traces(traces: list[dict[str, Any]], zone: tzinfo, out: Console | None = None) -> None:
    """The search result as a table, under a heading naming the zone its times are in."""
    out = out or console()
    if not traces:
        out.print("no traces match")
        return
    out.print(zone_heading(f"{len(traces)} trace(s)", zone))
    out.print(traces_table(traces, zone, out.width))
