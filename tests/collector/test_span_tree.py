"""The trace's one tree builder (views.span_tree): the nested `roots` of `GET /api/traces/{id}` and
each span's place in that tree (`tree_order`, its line walked depth first, and `tree_depth`, what
the console draws from `?tree=false`) say the same tree — for orphans, a span naming itself as
parent, a parent cycle, siblings sent out of start order or starting together, and a chain deeper
than the 128 levels the tree nests — on the small-trace (dict) and the large-trace (column) path."""

from __future__ import annotations

import time
from typing import Any

import pytest
from collector_helpers import RunningCollector

from reach_collector.query.views import MAX_TREE_DEPTH, build_tree, span_tree
from reach_collector.store import span_rows

T0 = 1_800_000_000_000_000_000


def _span(trace: str, n: int, parent: int | None, start: int) -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": f"{n:016x}",
        "parentSpanId": f"{parent:016x}" if parent is not None else "",
        "name": f"span {n}",
        "kind": 1,
        "startTimeUnixNano": str(T0 + start),
        "endTimeUnixNano": str(T0 + start + 1_000),
    }


def crafted(trace: str, chain: int, fan: int = 0) -> list[dict[str, Any]]:
    spans = [
        _span(trace, 1, None, 0),
        _span(trace, 4, 1, 300),  # the root's children sent last-first, two starting together
        _span(trace, 3, 1, 200),
        _span(trace, 2, 1, 200),
        _span(trace, 5, 99, 50),  # its parent never sent
        _span(trace, 6, 6, 60),  # its own parent
        _span(trace, 7, 8, 70),  # a parent cycle: 7 → 8 → 7
        _span(trace, 8, 7, 80),
        _span(trace, 9, 7, 90),  # under the cycle
    ]
    parent = 2
    for k in range(chain):  # a chain under span 2, each link with a sibling
        spans.append(_span(trace, 1000 + k, parent, 500 + k))
        spans.append(_span(trace, 5000 + k, parent, 500 + k))
        parent = 1000 + k
    spans += [_span(trace, 20_000 + k, 3, 10_000 - k) for k in range(fan)]  # a wide fan under 3
    return spans


def _walk(roots: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """The nested roots depth first, iteratively: (span id, depth) per line."""
    out: list[tuple[str, int]] = []
    pending = [(node, 0) for node in reversed(roots)]
    while pending:
        node, depth = pending.pop()
        out.append((node["span_id"], depth))
        pending += [(child, depth + 1) for child in reversed(node["children"])]
    return out


@pytest.mark.parametrize("fan", [0, span_rows.COLUMNS_FROM], ids=["dict path", "column path"])
def test_each_spans_place_is_its_line_in_the_nested_roots(collector: RunningCollector, fan: int) -> None:
    trace = f"{fan + 1:04x}" + "5e" * 14
    spans = crafted(trace, chain=140, fan=fan)
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
    assert collector.post("/v1/traces", json=body).status_code == 200
    full = collector.get(f"/api/traces/{trace}").json()
    flat = collector.get(f"/api/traces/{trace}", params={"tree": "false"}).json()
    assert flat["spans"] == full["spans"]
    lines = _walk(full["roots"])
    assert len(lines) == len(full["spans"]) == len(spans)
    placed = {s["span_id"]: (s["tree_order"], s["tree_depth"]) for s in flat["spans"]}
    assert [placed[span_id] for span_id, _ in lines] == [(k, depth) for k, (_, depth) in enumerate(lines)]

    ids = [span_id for span_id, _ in lines]
    root, orphan, own, cycle_a = (f"{n:016x}" for n in (1, 5, 6, 7))
    # Orphans in start order, then the spans on the cycle (the first of them, 7, holds the rest).
    assert [s["span_id"] for s in full["roots"]] == [root, orphan, own, cycle_a]
    assert [(c["span_id"], [g["span_id"] for g in c["children"]]) for c in full["roots"][3]["children"]] == [
        (f"{8:016x}", []),
        (f"{9:016x}", []),
    ]
    # Children in start order, the span id deciding between two that start together.
    first = [c["span_id"] for c in full["roots"][0]["children"]]
    assert first[:3] == [f"{2:016x}", f"{3:016x}", f"{4:016x}"]
    # The chain nests 128 levels deep; its deeper links hang at that depth, though each names
    # the link before it as parent.
    depth = dict(lines)
    assert max(depth.values()) == MAX_TREE_DEPTH
    assert depth[f"{1000 + 126:016x}"] == MAX_TREE_DEPTH
    assert depth[f"{1000 + 127:016x}"] == depth[f"{1000 + 139:016x}"] == MAX_TREE_DEPTH
    assert ids.index(f"{1000 + 139:016x}") > ids.index(f"{1000 + 127:016x}")
    if fan:  # the fan's spans under span 3, in start order (sent latest first)
        under = full["roots"][0]["children"][1]
        assert [c["span_id"] for c in under["children"]] == [
            f"{20_000 + k:016x}" for k in reversed(range(fan))
        ]


def test_build_tree_nests_what_span_tree_places() -> None:
    spans = [
        {
            "span_id": s["spanId"],
            "parent_span_id": s["parentSpanId"] or None,
            "start_time_unix_nano": int(s["startTimeUnixNano"]),
        }
        for s in crafted("ab" * 16, chain=3)
    ]
    placed = span_tree(
        [s["span_id"] for s in spans],
        [s["parent_span_id"] for s in spans],
        [s["start_time_unix_nano"] for s in spans],
    )
    lines = _walk(build_tree(spans))
    assert [(spans[i]["span_id"], placed.depth[i]) for i in placed.preorder()] == lines
    assert sorted(placed.order) == list(range(len(spans)))


def test_a_deep_chain_of_10000_spans_is_placed_quickly_without_recursion() -> None:
    n = 10_000
    ids = [f"{k:016x}" for k in range(n)]
    parents: list[str | None] = [None, *ids[:-1]]
    started = time.perf_counter()
    placed = span_tree(ids, parents, list(range(n)))
    assert time.perf_counter() - started < 1.0
    assert placed.roots == [0]
    assert placed.depth[: MAX_TREE_DEPTH + 1] == list(range(MAX_TREE_DEPTH + 1))
    assert set(placed.depth[MAX_TREE_DEPTH:]) == {MAX_TREE_DEPTH}
    assert placed.order == list(range(n))
    # All of the chain past the cap hangs under the last span the tree nests, in start order.
    assert placed.children[MAX_TREE_DEPTH - 1] == list(range(MAX_TREE_DEPTH, n))


def _blocks(lines: list[tuple[str, int]]) -> dict[str, list[tuple[str, int]]]:
    """Each root's id → its lines (itself and all under it)."""
    out: dict[str, list[tuple[str, int]]] = {}
    for span_id, depth in lines:
        if depth == 0:
            root = span_id
        out.setdefault(root, []).append((span_id, depth))
    return out


@pytest.mark.parametrize("chain", [3, 140], ids=["under the cap", "past the cap"])
def test_the_tree_does_not_depend_on_the_order_spans_come_in(chain: int) -> None:
    cycle = {f"{n:016x}" for n in (7, 8, 9)}  # which cycle member leads depends on the order
    spans = [
        {
            "span_id": s["spanId"],
            "parent_span_id": s["parentSpanId"] or None,
            "start_time_unix_nano": int(s["startTimeUnixNano"]),
        }
        for s in crafted("ab" * 16, chain=chain, fan=20)
        if s["spanId"] not in cycle
    ]
    in_start_order = sorted(spans, key=lambda s: (s["start_time_unix_nano"], s["span_id"]))
    sent, ordered, backwards = (
        _blocks(_walk(build_tree(way))) for way in (spans, in_start_order, in_start_order[::-1])
    )
    assert sent == ordered == backwards
    assert len(sent) == 3  # the root, the orphan and the span naming itself
