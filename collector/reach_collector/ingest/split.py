"""Split one OTLP protobuf trace request into smaller ones, so idle decoders share a big request.

A lone request is decoded by one worker while the others wait; its latency (and so a single
exporter's throughput) halves when two workers take half the spans each. The split walks only the
framing of the wire format — tags and lengths down to each span record — and rebuilds requests
from byte slices: no span is parsed here. Resources, scopes and every other field travel with
their spans unchanged. Anything unexpected returns None and the request is decoded whole, where
the decoder reports what is wrong with it.
"""

from __future__ import annotations

from typing import Final

from reach_collector.ingest.framing import LEN, Malformed, frame, records

_CHILD: Final = 2  # ResourceSpans.scope_spans and ScopeSpans.spans are both field 2
_TOP: Final = 1  # ExportTraceServiceRequest.resource_spans


def _records(buf: bytes, start: int, end: int, child: int) -> tuple[bytes, list[tuple[int, int, int]]]:
    """The message ``buf[start:end]`` → (every record but field ``child``, concatenated; and the
    ``child`` records as (record start, payload start, record end))."""
    header: list[bytes] = []
    children: list[tuple[int, int, int]] = []
    for record, field, wire, payload, after in records(buf, start, end):
        if field == child:
            if wire != LEN:
                raise Malformed
            children.append((record, payload, after))
        else:
            header.append(buf[record:after])
    return b"".join(header), children


def split_request(body: bytes, parts: int, min_spans: int = 64) -> list[bytes] | None:
    """``body`` as ``parts`` requests of about equal span counts (each at least ``min_spans``), or
    None when it is too small to be worth it or its framing is not what OTLP describes."""
    if parts < 2:
        return None
    try:
        top_header, resources = _records(body, 0, len(body), _TOP)
        # (resource header, [(scope header, [span record slices])])
        tree: list[tuple[bytes, list[tuple[bytes, list[tuple[int, int]]]]]] = []
        total = 0
        for _, r_start, r_end in resources:
            r_header, scopes = _records(body, r_start, r_end, _CHILD)
            scope_list = []
            for _, s_start, s_end in scopes:
                s_header, spans = _records(body, s_start, s_end, _CHILD)
                scope_list.append((s_header, [(rec, end) for rec, _, end in spans]))
                total += len(spans)
            tree.append((r_header, scope_list))
    except Malformed:
        return None
    parts = min(parts, total // max(1, min_spans))
    if parts < 2:
        return None
    bounds = [total * k // parts for k in range(parts + 1)]
    out: list[bytes] = []
    index = 0  # spans seen so far, across every resource and scope
    for k in range(parts):
        lo, hi = bounds[k], bounds[k + 1]
        chunks = [top_header] if k == 0 else []
        seen = 0
        for r_header, scope_list in tree:
            scope_frames = []
            for s_header, slices in scope_list:
                first, last = max(lo - seen, 0), min(hi - seen, len(slices))
                if first < last:
                    picked = b"".join(body[rec:end] for rec, end in slices[first:last])
                    scope_frames.append(frame(_CHILD, s_header + picked))
                seen += len(slices)
            if scope_frames:
                chunks.append(frame(_TOP, r_header + b"".join(scope_frames)))
        index = hi
        out.append(b"".join(chunks))
    assert index == total
    return out
