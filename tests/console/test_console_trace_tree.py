"""The trace page draws the collector's tree (it asks for `?tree=false`: each span carries its place
in the tree the collector nests as `roots`): its rows, in order and depth, are the collector's nested
`roots` walked depth first — for a trace with orphans, a parent cycle, a span naming itself as
parent, a retried span, siblings sent out of start order, siblings starting together, and a chain
deeper than the 128 levels the collector nests; and where the JSON's tree is not what the parent ids
alone would give, the page draws the JSON's tree (it builds none of its own)."""

from __future__ import annotations

import json
from typing import Any

from cdp import Page
from console_helpers import goto_ready
from traffic import attributes, post, request

from reach_otel import semconv as sc

T0 = 1_800_000_000_000_000_000
TRACE = "7ee0" + "ab" * 14


def _span(n: int, parent: int | None, start: int, name: str | None = None) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": f"{n:016x}",
        "name": name or f"span {n}",
        "kind": 1,
        "startTimeUnixNano": str(T0 + start),
        "endTimeUnixNano": str(T0 + start + 1_000),
        "attributes": attributes({sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL}),
        "status": {"code": 1},
    }
    if parent is not None:
        span["parentSpanId"] = f"{parent:016x}"
    return span


def crafted_spans() -> list[dict[str, Any]]:
    spans = [
        _span(1, None, 0, "root"),
        # Children of the root sent last-first; two start together (span id decides).
        _span(4, 1, 300),
        _span(3, 1, 200),
        _span(2, 1, 200),
        _span(5, 99, 50, "orphan: parent never sent"),
        _span(6, 6, 60, "its own parent"),
        _span(7, 8, 70, "cycle a"),
        _span(8, 7, 80, "cycle b"),
        _span(9, 7, 90, "under the cycle"),
        _span(10, 1, 400, "retried"),
        _span(10, 1, 400, "retried"),
    ]
    # A chain of 140 under span 2: past the 128 levels, deeper spans hang at the last level.
    parent = 2
    for k in range(140):
        n = 1000 + k
        spans.append(_span(n, parent, 500 + k))
        spans.append(_span(5000 + k, parent, 500 + k, "sibling in the chain"))
        parent = n
    return spans


def _walk(nodes: list[dict[str, Any]], depth: int, out: list[list[Any]]) -> None:
    for node in nodes:
        out.append([node["span_id"], depth])
        _walk(node["children"], depth + 1, out)


def test_page_rows_are_the_collectors_nested_roots(start_console, page: Page) -> None:
    console = start_console()
    post(console.url, request(crafted_spans()))
    expected: list[list[Any]] = []
    _walk(console.api(f"/api/traces/{TRACE}")["roots"], 0, expected)
    assert len(expected) == 290  # the retried span once
    assert max(depth for _, depth in expected) == 128

    goto_ready(page, f"{console.url}/ui/trace/{TRACE}")
    assert page.events.errors == []
    rows = page.js(
        "(async () => {"
        " const { buildModel } = await import('/ui/js/trace/model.js');"
        f" const trace = await (await fetch('/api/traces/{TRACE}?tree=false')).json();"
        " return buildModel(trace).rows.map((r) => [r.span.span_id, r.depth]);"
        "})()"
    )
    assert rows == expected
    # The default response (with the nested roots) draws the same tree; spans that carry no place
    # in it (and no roots) are drawn as they come, flat: the page builds no tree of its own.
    rows_full, flat = page.js(
        "(async () => {"
        " const { buildModel } = await import('/ui/js/trace/model.js');"
        f" const trace = await (await fetch('/api/traces/{TRACE}')).json();"
        " const placeless = trace.spans.map(({tree_order, tree_depth, ...s}) => s);"
        " const bare = {trace_id: trace.trace_id, spans: placeless};"
        " return [buildModel(trace).rows.map((r) => [r.span.span_id, r.depth]),"
        "  buildModel(bare).rows.map((r) => [r.span.span_id, r.depth])];"
        "})()"
    )
    assert rows_full == expected
    spans = console.api(f"/api/traces/{TRACE}", tree="false")["spans"]
    assert flat == [[s["span_id"], 0] for s in spans]
    # The page shows that tree: one row element per span line, named as the span.
    assert page.js("document.querySelector('.wf-count').textContent") == "290 of 290"


# The rows on screen, top to bottom: (span id, aria-level), for the rows not hidden.
SHOWN = """[...document.querySelectorAll('.wf-row:not([hidden])')]
  .map((el) => [new DOMMatrix(getComputedStyle(el).transform).m42, el.dataset.spanId,
    Number(el.getAttribute('aria-level'))])
  .sort((a, b) => a[0] - b[0]).map(([, id, level]) => [id, level])"""


def test_the_page_draws_the_tree_the_trace_json_gives(start_console, page: Page) -> None:
    """The trace JSON's tree, not the spans' parent ids, decides the rows: here the JSON (rewritten
    on its way to the page) places the root's children otherwise than their parent ids say."""
    console = start_console()
    trace = "7ee1" + "cd" * 14
    spans = [_span(1, None, 0, "root"), _span(2, 1, 100, "a"), _span(3, 1, 200, "b"), _span(4, 1, 300, "c")]
    for span in spans:
        span["traceId"] = trace
    post(console.url, request(spans))
    ids = [f"{k:016x}" for k in (1, 2, 3, 4)]
    by_parents = [
        [s["span_id"], s["tree_depth"]]
        for s in sorted(console.api(f"/api/traces/{trace}")["spans"], key=lambda s: s["tree_order"])
    ]
    assert by_parents == [[ids[0], 0], [ids[1], 1], [ids[2], 1], [ids[3], 1]]
    # The JSON's tree: root, c under it, a under c; b a root of its own.
    places = {ids[0]: [0, 0], ids[3]: [1, 1], ids[1]: [2, 2], ids[2]: [3, 0]}
    page.before_each_load(
        "const realFetch = window.fetch;"
        " window.fetch = async (...args) => {"
        "  const response = await realFetch(...args);"
        f"  if (!String(args[0]).startsWith('/api/traces/{trace}?')) return response;"
        "  const body = await response.json();"
        f"  const places = {json.dumps(places)};"
        "  for (const s of body.spans) [s.tree_order, s.tree_depth] = places[s.span_id];"
        "  return new Response(JSON.stringify(body), {status: response.status, headers: response.headers});"
        " };"
    )
    goto_ready(page, f"{console.url}/ui/trace/{trace}")
    assert page.events.errors == []
    assert page.js(SHOWN) == [[ids[0], 1], [ids[3], 2], [ids[1], 3], [ids[2], 1]]
    assert page.js("document.querySelector('.wf-count').textContent") == "4 of 4"
    # Collapsing c hides a, its child in the JSON's tree; b (a root there) stays; expanding shows a.
    page.js(f"document.querySelector('.wf-row[data-span-id=\"{ids[3]}\"] .tw').click()")
    assert page.js(SHOWN) == [[ids[0], 1], [ids[3], 2], [ids[2], 1]]
    assert page.js("document.querySelector('.wf-count').textContent") == "3 of 4"
    page.js(f"document.querySelector('.wf-row[data-span-id=\"{ids[3]}\"] .tw').click()")
    assert page.js(SHOWN) == [[ids[0], 1], [ids[3], 2], [ids[1], 3], [ids[2], 1]]
    # Collapsing the root hides c and a, not b.
    page.js(f"document.querySelector('.wf-row[data-span-id=\"{ids[0]}\"] .tw').click()")
    assert page.js(SHOWN) == [[ids[0], 1], [ids[2], 1]]


AXIS = """(() => {
  const axis = document.querySelector('.wf-axis').getBoundingClientRect();
  const ticks = [...document.querySelectorAll('.wf-axis .tick')].map((el) => {
    const b = el.getBoundingClientRect();
    return {left: b.left, right: b.right, text: el.textContent};
  });
  const found = [];
  ticks.forEach((a, i) => {
    const b = ticks[i + 1];
    if (b && a.right > b.left) found.push(`${a.text} on ${b.text}`);
    // (the first label sits 2 px before its gridline, at the lane's start)
    if (a.left < axis.left - 3 || a.right > axis.right) found.push(`${a.text} outside the axis`);
  });
  return {found, ticks: ticks.map((t) => t.text)};
})()"""


def test_the_time_axis_labels_keep_apart_and_inside(start_console, page: Page) -> None:
    """Whatever the trace's length, the axis labels neither overlap nor leave the axis: a tick at
    the very end (203 ms: one at 200 ms) has its gridline but no label."""
    console = start_console()
    for k, duration_ms in enumerate((203, 237, 1000, 95.5, 2)):
        trace = f"a715{k:04x}" + "cd" * 12
        end = T0 + int(duration_ms * 1e6)
        spans = [
            {
                "traceId": trace,
                "spanId": f"{k + 1:016x}",
                "name": "root",
                "kind": 1,
                "startTimeUnixNano": str(T0),
                "endTimeUnixNano": str(end),
                "attributes": attributes({sc.GEN_AI_OPERATION_NAME: sc.OP_TOOL}),
                "status": {"code": 1},
            }
        ]
        post(console.url, request(spans))
        goto_ready(page, f"{console.url}/ui/trace/{trace}")
        result = page.js(AXIS)
        assert result["found"] == [], (duration_ms, result)
        assert result["ticks"][0] == "0 ms" and len(result["ticks"]) >= 3, (duration_ms, result)
