"""Pure decoding of an OTLP logs request (``POST /v1/logs``, gRPC ``LogsService/Export``) into its
evaluation rows, and the response it is answered with: the trace path's body rules (gzip bounded
after decompression, protobuf or OTLP JSON with hex ids, typed errors for the 4xx) applied to
``ExportLogsServiceRequest``."""

from __future__ import annotations

import json
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from reach_collector.ingest.decode import (
    PROTOBUF,
    UndecodableBody,
    _convert_ids,
    _list,
    decompress,
    load_json,
)
from reach_collector.ingest.evaluations import LogBatch, from_logs
from reach_collector.ingest.row_budget import RowBudgetExceeded

__all__ = ["LOGS_PATH", "decode_logs", "encode_logs_response", "parse_logs", "rows_within"]

LOGS_PATH: Final = "/v1/logs"


def parse_logs(body: bytes, media: str) -> ExportLogsServiceRequest:
    """A decompressed body of ``media`` → the request message; raises ``UndecodableBody``."""
    request = ExportLogsServiceRequest()
    if media == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, ValueError, RecursionError) as exc:
            raise UndecodableBody(f"invalid OTLP protobuf: {exc or type(exc).__name__}") from exc
        return request
    document = load_json(body)
    for rl in _list(document, "resourceLogs", "resource_logs"):
        for sl in _list(rl, "scopeLogs", "scope_logs") if isinstance(rl, dict) else ():
            for record in _list(sl, "logRecords", "log_records") if isinstance(sl, dict) else ():
                if isinstance(record, dict):  # OTLP JSON ids are hex; the JSON mapping wants base64
                    _convert_ids(record, "traceId", "trace_id", "spanId", "span_id")
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise UndecodableBody(f"invalid OTLP JSON: {exc}") from exc
    return request


def rows_within(
    request: ExportLogsServiceRequest, body_bytes: int, max_row_bytes: int, now_ns: int
) -> LogBatch:
    """The request's evaluation rows, refused whole (``RowBudgetExceeded``, a 413) when the body
    and the rows it stores together pass ``max_row_bytes``, as a trace request is."""
    batch = from_logs(request, now_ns)
    total = (
        body_bytes + sum(len(v) for r in batch.rows for v in r if isinstance(v, str)) + 64 * len(batch.rows)
    )
    if total > max_row_bytes:
        raise RowBudgetExceeded(
            f"the request would store {total} bytes of evaluation rows, over server.max_row_bytes = "
            f"{max_row_bytes}; send fewer log records per request"
        )
    return batch


def decode_logs(
    body: bytes, media: str, encoding: str | None, max_body_bytes: int, max_row_bytes: int, now_ns: int
) -> LogBatch:
    """An HTTP body → its evaluation rows; raises a ``BodyError`` subclass for a 4xx."""
    raw = decompress(body, encoding, max_body_bytes)
    return rows_within(parse_logs(raw, media), len(raw), max_row_bytes, now_ns)


def encode_logs_response(media: str, batch: LogBatch) -> bytes:
    """An ``ExportLogsServiceResponse`` in the request's media type (partial success for the
    evaluations that could not be stored)."""
    response = logs_response(batch)
    if media == PROTOBUF:
        return bytes(response.SerializeToString())
    return json.dumps(json_format.MessageToDict(response)).encode()


def logs_response(batch: LogBatch) -> Any:
    response = ExportLogsServiceResponse()
    if batch.rejected:
        response.partial_success.rejected_log_records = batch.rejected
        response.partial_success.error_message = batch.message
    return response
