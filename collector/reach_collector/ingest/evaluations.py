"""Evaluation rows (``store.schema.AUX_TABLES["evaluations"]``) from what OpenTelemetry sends (pure):
``gen_ai.evaluation.result`` log records of an OTLP logs request, and span events of that name in
a batch of span rows.

The rule for log records (SPEC §18): a record is an evaluation when its event name — the
LogRecord's ``event_name``, else its ``event.name`` attribute (SDKs before that field) — is
``gen_ai.evaluation.result``; it is stored when it names its evaluation
(``gen_ai.evaluation.name``, a non-empty string), and rejected through partial success when it
does not. Every other record is counted (``reach_log_records_total``) and dropped, never stored:
the collector keeps outcomes, not application logs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from reach_collector.ingest.wire import any_value
from reach_otel import semconv as sc

__all__ = [
    "MAX_EXPLANATION",
    "MAX_TEXT",
    "LogBatch",
    "from_logs",
    "from_span_events",
    "row",
]

# What one stored evaluation keeps of its texts (characters); longer values are cut there.
MAX_TEXT: Final = 256  # name, label, response id, error type, service
MAX_EXPLANATION: Final = 4096
LOG: Final = "log"
SPAN_EVENT: Final = "span_event"
FEEDBACK: Final = "feedback"
_ZERO_TRACE: Final = bytes(16)
_ZERO_SPAN: Final = bytes(8)
_UNNAMED: Final = f"a {sc.GEN_AI_EVALUATION_RESULT} record without {sc.GEN_AI_EVALUATION_NAME}"
_BAD_IDS: Final = "a record with an invalid trace_id or span_id (need 16 and 8 non-zero bytes)"


@dataclass
class LogBatch:
    """The evaluation rows of one logs request, and what became of its other records."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    records: int = 0  # every log record in the request
    dropped: int = 0  # not evaluations: counted, never stored
    rejected: int = 0  # evaluations that cannot be stored (partial success says why)
    reasons: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        return f"rejected {self.rejected} log record(s): " + "; ".join(self.reasons) if self.rejected else ""

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if reason not in self.reasons:
            self.reasons.append(reason)


def _text(value: Any, limit: int = MAX_TEXT) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def _score(value: Any) -> float | None:
    """A number (not a boolean), finite; anything else is no score."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    score = float(value)
    return score if math.isfinite(score) else None


def row(
    time_ns: int,
    trace_id: str | None,
    span_id: str | None,
    attributes: Mapping[str, Any],
    service: str | None,
    source: str,
) -> tuple[Any, ...] | None:
    """One stored row from an evaluation's attributes; None when it names no evaluation."""
    name = _text(attributes.get(sc.GEN_AI_EVALUATION_NAME))
    if name is None:
        return None
    return (
        time_ns,
        trace_id,
        span_id,
        _text(attributes.get(sc.GEN_AI_RESPONSE_ID)),
        name,
        _score(attributes.get(sc.GEN_AI_EVALUATION_SCORE_VALUE)),
        _text(attributes.get(sc.GEN_AI_EVALUATION_SCORE_LABEL)),
        _text(attributes.get(sc.GEN_AI_EVALUATION_EXPLANATION), MAX_EXPLANATION),
        _text(attributes.get(sc.ERROR_TYPE)),
        _text(service),
        source,
    )


def _id(raw: bytes, size: int, zero: bytes) -> str | bool | None:
    """A record's id as hex; None when absent; False when present but invalid."""
    if not raw:
        return None
    if len(raw) != size or raw == zero:
        return False
    return raw.hex()


def from_logs(request: Any, now_ns: int) -> LogBatch:
    """The evaluation rows of an official ``ExportLogsServiceRequest``; a record with no time
    (neither ``time_unix_nano`` nor ``observed_time_unix_nano``) is stamped ``now_ns``."""
    out = LogBatch()
    for rl in request.resource_logs:
        service: str | None = None
        for kv in rl.resource.attributes:
            if kv.key == sc.SERVICE_NAME and kv.value.WhichOneof("value") == "string_value":
                service = kv.value.string_value
        for sl in rl.scope_logs:
            for record in sl.log_records:
                out.records += 1
                event = record.event_name
                attrs = {kv.key: any_value(kv.value) for kv in record.attributes}
                if not event:
                    named = attrs.get(sc.EVENT_NAME)
                    event = named if isinstance(named, str) else ""
                if event != sc.GEN_AI_EVALUATION_RESULT:
                    out.dropped += 1
                    continue
                trace_id = _id(record.trace_id, 16, _ZERO_TRACE)
                span_id = _id(record.span_id, 8, _ZERO_SPAN)
                if trace_id is False or span_id is False:
                    out.reject(_BAD_IDS)
                    continue
                assert not isinstance(trace_id, bool) and not isinstance(span_id, bool)
                time_ns = record.time_unix_nano or record.observed_time_unix_nano or now_ns
                made = row(min(time_ns, 2**63 - 1), trace_id, span_id, attrs, service, LOG)
                if made is None:
                    out.reject(_UNNAMED)
                    continue
                out.rows.append(made)
    return out


def from_span_events(table: pa.Table) -> list[tuple[Any, ...]]:
    """The evaluation rows of span events named ``gen_ai.evaluation.result`` in a batch of span
    rows (``store.schema.SPAN_COLUMNS``), each joined to the span that carries it. Only the rows
    whose events text mentions the name are parsed; events without an evaluation name are left
    on the span as they are."""
    if table.num_rows == 0:
        return []
    events = table.column("events")
    hit = pc.fill_null(pc.match_substring(events, sc.GEN_AI_EVALUATION_RESULT), False)
    index = pc.indices_nonzero(hit)
    if len(index) == 0:
        return []
    picked = table.select(["trace_id", "span_id", "service", "events"]).take(index).to_pylist()
    out: list[tuple[Any, ...]] = []
    for span in picked:
        try:
            parsed = orjson.loads(span["events"])
        except orjson.JSONDecodeError:
            continue  # text orjson refuses (NaN): no evaluation of ours writes such
        for event in parsed if isinstance(parsed, list) else ():
            if not isinstance(event, dict) or event.get("name") != sc.GEN_AI_EVALUATION_RESULT:
                continue
            attrs = event.get("attributes")
            time_ns = event.get("time_unix_nano")
            if not isinstance(attrs, dict) or not isinstance(time_ns, int):
                continue
            made = row(time_ns, span["trace_id"], span["span_id"], attrs, span["service"], SPAN_EVENT)
            if made is not None:
                out.append(made)
    return out
