"""`POST /v1/traces` and `POST /v1/logs`: OTLP/HTTP ingest (protobuf or JSON, optionally gzip),
answered after commit."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Final, TypeVar

from fastapi import APIRouter, Request, Response
from google.rpc import status_pb2
from starlette.requests import ClientDisconnect

from reach_collector.ingest.decode import (
    JSON,
    PROTOBUF,
    BodyError,
    BodyTooLarge,
    encode_response,
    media_type,
)
from reach_collector.ingest.evaluations import LogBatch
from reach_collector.ingest.logs import LOGS_PATH, encode_logs_response
from reach_collector.ingest.row_budget import out_of_memory
from reach_collector.ingest.rows import SpanBatch
from reach_collector.ingest.service import DecoderUnavailable, IngestService
from reach_collector.ingest.writer import QueueFull, WriterClosed

log = logging.getLogger(__name__)

TRACES_PATH: Final = "/v1/traces"
_Batch = TypeVar("_Batch", SpanBatch, LogBatch)
# HTTP status → google.rpc code, for the Status body OTLP asks for on failures. OTLP exporters
# retry only 429, 502, 503 and 504 and "MUST NOT" retry any other 4xx or 5xx (nor a 413): OTLP
# specification, OTLP/HTTP "Retryable Response Codes". A request that can never be stored (too
# large, malformed) therefore gets a 4xx here, and only a passing condition a 429/503.
_RPC_CODES: Final = {400: 3, 413: 3, 415: 3, 429: 8, 503: 14}

router = APIRouter()


def error_response(status: int, media: str, message: str, retry_after: int | None = None) -> Response:
    code = _RPC_CODES.get(status, 2)
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    if media == PROTOBUF:
        body = status_pb2.Status(code=code, message=message).SerializeToString()
    else:
        body = json.dumps({"code": code, "message": message}).encode()
    return Response(body, status_code=status, media_type=media, headers=headers)


class _InFlightFull(Exception):
    """The bytes of the bodies being read or decoded are at their bound: 429, retry shortly."""


async def _read_body(request: Request, ingest: IngestService, held: list[int]) -> bytes:
    """The body, each chunk reserved against ``ingest``'s in-flight bound as it is read (a declared
    length that does not fit is refused before any of it is read). ``held[0]`` says how much is
    reserved, for the caller to release once the body is decoded."""
    limit = ingest.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit():
        if int(declared) > limit:
            raise BodyTooLarge(f"body of {declared} bytes exceeds the limit of {limit} bytes")
        if not ingest.fits(int(declared)):
            raise _InFlightFull
    chunks: list[bytes] = []
    async for chunk in request.stream():
        if held[0] + len(chunk) > limit:
            raise BodyTooLarge(f"body exceeds the limit of {limit} bytes")
        if not ingest.reserve(len(chunk)):
            raise _InFlightFull
        held[0] += len(chunk)
        chunks.append(chunk)
    return b"".join(chunks)


@router.post(TRACES_PATH)
async def export_traces(request: Request) -> Response:
    ingest: IngestService = request.app.state.ingest

    def answer(media: str, batch: SpanBatch) -> bytes:
        return encode_response(media, batch.rejected, batch.message)

    return await _export(request, ingest.decode_async, ingest.submit, answer, "spans")


@router.post(LOGS_PATH)
async def export_logs(request: Request) -> Response:
    """OTLP logs: the ``gen_ai.evaluation.result`` records are stored as evaluations, every other
    record counted and dropped (ingest.evaluations); answered after commit, as traces are."""
    ingest: IngestService = request.app.state.ingest

    def submit(batch: LogBatch) -> Future[None] | None:
        return ingest.submit_evaluations(batch.rows)

    return await _export(request, ingest.decode_logs_async, submit, encode_logs_response, "evaluations")


async def _export(
    request: Request,
    decode: Callable[[bytes, str, str | None], Awaitable[_Batch]],
    submit: Callable[[_Batch], Future[None] | None],
    answer: Callable[[str, _Batch], bytes],
    what: str,
) -> Response:
    """One OTLP/HTTP export: the body read within the in-flight bound, decoded off the event loop,
    its rows queued (or 429/503 under backpressure), answered once they are committed."""
    ingest: IngestService = request.app.state.ingest
    try:
        media = media_type(request.headers.get("content-type"))
    except BodyError as exc:
        return error_response(exc.status, JSON, str(exc))
    # Bodies being read or decoded are bounded too (the write queue only counts decoded rows):
    # a flood of large or slow uploads gets 429s instead of growing memory.
    held = [0]
    try:
        body = await _read_body(request, ingest, held)
        batch = await decode(body, media, request.headers.get("content-encoding"))
    except _InFlightFull:
        return error_response(429, media, "too many request bytes in flight; retry", retry_after=1)
    except ClientDisconnect:  # gone mid-body: nobody reads an answer, and it is no error of ours
        return error_response(400, media, "the client went away before its body ended")
    except BodyError as exc:
        ingest.stats.requests_rejected += 1
        return error_response(exc.status, media, str(exc))
    except DecoderUnavailable as exc:
        return error_response(503, media, str(exc), retry_after=5)
    finally:
        body = b""  # the bytes go before the reservation does
        ingest.release(held[0])
    try:
        future = submit(batch)
    except QueueFull as exc:
        return error_response(429, media, str(exc), retry_after=exc.retry_after)
    except WriterClosed as exc:
        return error_response(503, media, str(exc), retry_after=5)
    if future is not None:
        try:
            await asyncio.wrap_future(future)
        except MemoryError:
            # The store could not hold this request's rows (the exception names it): retrying the
            # same body would fail the same way, so it is a 413, not a 503.
            ingest.stats.requests_rejected += 1
            log.warning("ingest commit ran out of memory for a request of %s", what)
            return error_response(413, media, str(out_of_memory("storing")))
        except Exception as exc:
            log.warning("ingest commit failed: %s", exc)
            return error_response(503, media, f"could not store the {what}; retry", retry_after=2)
    return Response(answer(media, batch), media_type=media)
