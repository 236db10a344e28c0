"""Whose span it is: from a span up through its parents to the nearest agent span with a name
(SPEC §11: an LLM span without an agent attribute belongs to its nearest agent ancestor). One walk,
in Arrow a step for many spans at once, for ``/api/metrics/agents`` and for ``/metrics``
(``exposition.llm_owners``), over whichever store the spans came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reach_otel import semconv as sc

__all__ = ["MAX_DEPTH", "WALK_COLUMNS", "Key", "SpanBatch", "np_bool", "np_index", "spans_table", "walk_up"]

MAX_DEPTH: Final = 64  # as the API's walk
_AGENT_OP: Final = pa.scalar(sc.OP_AGENT, pa.string())  # built once: a str argument costs ~0.1 ms a call
Key = tuple[str, str]  # (trace id, span id) of the span a walk needs


class SpanBatch:
    """The committed batch's spans as walk steps: each row's parent row (-1: not in the batch)
    and whether it is an agent span with a name (an owner)."""

    def __init__(self, table: pa.Table) -> None:
        self.trace = table.column("trace_id")
        self.span = table.column("span_id")
        self.parent = table.column("parent_span_id")
        self.agent = table.column("agent")
        self.up = np_index(pc.index_in(self.parent, value_set=self.span))
        child = np.flatnonzero(self.up >= 0)
        if len(child):
            # Span ids are looked up alone (cheap); a parent of another trace is no parent.
            same = pc.equal(
                pc.take(self.trace, pa.array(child)), pc.take(self.trace, pa.array(self.up[child]))
            )
            if not pc.all(same).as_py():
                self.up = _exact_parents(self.trace, self.span, self.parent)
        is_agent = pc.fill_null(pc.equal(table.column("operation"), _AGENT_OP), False)
        self.is_owner = np_bool(pc.and_(is_agent, pc.is_valid(self.agent)))

    def walk(self, rows: np.ndarray[Any, Any]) -> tuple[list[str | None], list[Key | None]]:
        """From each row up (the row itself first): its owner (or None), and the span the walk
        needs next and the batch does not have (None: it reached an owner, or a root)."""
        n = len(rows)
        owner_row = np.full(n, -1)
        last_row = np.full(n, -1)  # the row whose parent is not in the batch
        active, cur = np.arange(n), rows
        for _ in range(MAX_DEPTH):
            owned = self.is_owner[cur]
            owner_row[active[owned]] = cur[owned]
            active, cur = active[~owned], cur[~owned]
            nxt = self.up[cur]
            gone = nxt < 0
            last_row[active[gone]] = cur[gone]
            active, cur = active[~gone], nxt[~gone]
            if not len(active):
                break
        owners: list[str | None] = [None] * n
        missing: list[Key | None] = [None] * n
        if (found := owner_row >= 0).any():
            names = pc.take(self.agent, pa.array(owner_row[found])).to_pylist()
            for i, name in zip(np.flatnonzero(found).tolist(), names, strict=True):
                owners[i] = name
        if (left := last_row >= 0).any():
            at = pa.array(last_row[left])
            traces, parents = pc.take(self.trace, at).to_pylist(), pc.take(self.parent, at).to_pylist()
            for i, trace, parent in zip(np.flatnonzero(left).tolist(), traces, parents, strict=True):
                if parent is not None:  # else past a root
                    missing[i] = (trace, parent)
        return owners, missing


WALK_COLUMNS: Final = ("trace_id", "span_id", "parent_span_id", "operation", "agent")


def spans_table(rows: Sequence[Sequence[Any]]) -> pa.Table:
    """The walk's columns (``WALK_COLUMNS``, first in each row) of stored span rows, as Arrow."""
    columns = list(zip(*rows, strict=False)) if rows else [()] * len(WALK_COLUMNS)
    return pa.table({name: pa.array(columns[i], pa.string()) for i, name in enumerate(WALK_COLUMNS)})


def walk_up(table: pa.Table, starts: Sequence[Key]) -> list[tuple[str | None, Key | None]]:
    """From each (trace, span id) up through ``table``'s spans, the span itself first: its owner
    (or None), and the key of the span the walk needs next and the table lacks (None: it reached
    an owner, a root or the depth limit). A start the table lacks is that key itself. One walk
    for ``/metrics`` and the API, over whichever store the spans came from."""
    out: list[tuple[str | None, Key | None]] = [(None, key) for key in starts]
    if not starts or not table.num_rows:
        return out
    batch = SpanBatch(table)
    keys = pc.binary_join_element_wise(batch.trace, batch.span, "/")
    rows = np_index(pc.index_in(pa.array([f"{t}/{s}" for t, s in starts], pa.string()), value_set=keys))
    found = np.flatnonzero(rows >= 0)
    if len(found):
        owners, missing = batch.walk(rows[found])
        for i, owner, key in zip(found.tolist(), owners, missing, strict=True):
            out[i] = (owner, key)
    return out


def _exact_parents(trace: Any, span: Any, parent: Any) -> np.ndarray[Any, Any]:
    """Parent rows by (trace, span id): for a batch where span ids repeat across traces."""
    keys = pc.binary_join_element_wise(trace, span, "/")
    return np_index(pc.index_in(pc.binary_join_element_wise(trace, parent, "/"), value_set=keys))


def np_index(indices: Any) -> np.ndarray[Any, Any]:
    return np.asarray(pc.fill_null(indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def np_bool(mask: Any) -> np.ndarray[Any, Any]:
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
