"""`create_app(settings, store=..., clock=...)`: wiring only — store, writer, exposition, alerting,
routers, auth."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import asynccontextmanager
from functools import partial

import pyarrow as pa
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from reach_collector import __version__
from reach_collector.alert_loop import AlertLoop
from reach_collector.alerting.evaluation.engine import build_engine
from reach_collector.alerting.evaluation.state import Transition
from reach_collector.alerting.evaluation.store_history import StoreHistory
from reach_collector.alerting.inputs.store_data import StoreAlertData
from reach_collector.alerting.notify.webhook import HttpSender, Sender
from reach_collector.api import health, otlp, traces, ui
from reach_collector.api.alerts import alerts_router
from reach_collector.api.auth import AuthMiddleware
from reach_collector.api.body_deadline import BodyDeadline
from reach_collector.api.causes import causes_router
from reach_collector.api.conversations import conversations_router
from reach_collector.api.evaluations import evaluations_router
from reach_collector.api.fence import SiteFence
from reach_collector.api.heartbeats import heartbeats_router
from reach_collector.api.limits import UrlLimitMiddleware
from reach_collector.api.metrics import metrics_router
from reach_collector.api.oncall import oncall_router
from reach_collector.api.tempo import tempo_router
from reach_collector.api.topology import topology_router
from reach_collector.config import Settings
from reach_collector.exposition.registry import Exposition, metrics_endpoint
from reach_collector.ingest.batch_stats import BatchStats
from reach_collector.ingest.pool import workers_rss_bytes
from reach_collector.ingest.service import IngestService
from reach_collector.ingest.writer import Writer
from reach_collector.query.heartbeats import last_posted
from reach_collector.retention import RetentionJob
from reach_collector.store.base import TraceStore
from reach_collector.store.clickhouse.driver import StoreError
from reach_collector.store.open import open_store
from reach_collector.store.unavailable import StoreUnavailable

log = logging.getLogger("reach_collector")


def create_app(
    settings: Settings | None = None,
    *,
    store: TraceStore | None = None,
    clock: Callable[[], float] = time.time,
    writer: Writer | None = None,
    max_pending_spans: int = 262_144,
    pool: ProcessPoolExecutor | None = None,
    alert_loop: bool = True,
    sender: Sender | None = None,
) -> FastAPI:
    """Build the collector's ASGI app. A store passed in is left open on shutdown (the caller owns
    it); one the app opens itself is closed. ``pool`` (owned by the caller) decodes off-process.
    ``alert_loop=False`` leaves evaluation to the caller (``app.state.alerts.tick(now)``);
    ``sender`` replaces the HTTP notifier. Raises ConfigError for a bad alerting section."""
    settings = settings or Settings()
    owns_store = store is None
    store = store if store is not None else open_store(settings)
    exposition = Exposition(
        store, clock, thresholds_ms=settings.tree.alerting.thresholds, prices=settings.prices
    )

    def observe(table: pa.Table, seconds: float, stats: list[BatchStats | None]) -> None:
        exposition.observe_write(seconds)
        exposition.observe_commit(table, stats)  # rows without stats (a writer caller's) are read

    writer = writer or Writer(store, max_pending_spans=max_pending_spans, on_commit=observe)
    exposition.set_queue_depth(lambda: writer.pending_spans)
    exposition.set_stored_source(lambda: writer.stats.spans_written)
    if pool is not None:
        exposition.set_decoder_memory_source(lambda: workers_rss_bytes(pool))
    retention = RetentionJob(writer, settings.retention_s, clock)

    # Alerting: history in DuckDB (written on the writer thread), state picked up after a restart.
    history = StoreHistory(store, run=writer.call)
    http_sender = HttpSender() if sender is None else None

    def gauge(t: Transition) -> None:
        exposition.set_alert_state(t.alertname, t.severity, t.labels, t.to_state.value)

    try:
        engine = build_engine(
            settings,
            StoreAlertData(
                store,
                api_heartbeats=partial(last_posted, store),
                prices=settings.prices,
                retention_s=settings.retention_s,  # what retention may delete is never read from cache
            ),
            history=history,
            sender=sender or http_sender,
            clock=clock,
            on_transition=[gauge],
        )
    except BaseException:
        writer.close()
        exposition.close()
        if http_sender is not None:
            http_sender.close()
        raise
    restored, acks = history.active()
    engine.restore(restored, acks)
    for alert in restored:
        exposition.set_alert_state(alert.alertname, alert.severity, alert.labels, alert.state.value)
    loop = AlertLoop(engine, clock)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        retention.start()
        if alert_loop and engine.setup.alerting.evaluate:  # alerting.evaluate: false → another one does
            loop.start()
        try:
            yield
        finally:
            loop.stop()
            if http_sender is not None:
                http_sender.close()
            retention.stop()
            writer.close()
            exposition.close()  # its lookup worker, once no commit can queue another lookup
            if owns_store:
                store.close()

    # No /docs or /redoc: FastAPI's pages load Swagger UI and ReDoc from a CDN (nothing offline, and
    # no way to send the query token); /openapi.json, behind the query token, describes every route.
    app = FastAPI(
        title="reach-otel collector", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None
    )
    app.state.settings = settings
    app.state.store = store
    app.state.writer = writer
    app.state.clock = clock
    app.state.ingest = IngestService(
        writer,
        settings.max_body_bytes,
        pool,
        on_received=exposition.spans_received,
        max_row_bytes=settings.max_row_bytes,
        max_inflight_bytes=settings.limits.max_inflight_bytes,
        on_logs=exposition.evaluations.observe_logs,
        on_evaluations=exposition.evaluations.observe,
        clock=clock,
    )
    app.state.retention = retention
    app.state.exposition = exposition
    app.state.alerts = engine
    app.state.alert_history = history
    app.state.alert_loop = loop
    for module in (health, otlp, traces):
        app.include_router(module.router)
    app.include_router(tempo_router(store, clock))
    judgement = engine.setup.judgement  # when an evaluation is judged good: edges' resolved (§18)
    app.include_router(metrics_router(store, clock, settings.prices, judgement))
    app.include_router(topology_router(store, clock, settings.prices, judgement))
    app.include_router(causes_router(store, clock, settings.prices))
    app.include_router(metrics_endpoint(exposition))
    app.include_router(heartbeats_router(store, writer, engine, exposition, clock))
    app.include_router(evaluations_router(store, app.state.ingest, clock))
    app.include_router(conversations_router(store, clock, settings.prices))
    app.include_router(alerts_router(engine, history))
    app.include_router(oncall_router(engine))
    app.include_router(ui.ui_router())
    app.add_exception_handler(StoreUnavailable, _store_unavailable)
    app.add_exception_handler(StoreError, _store_refused)
    app.add_middleware(AuthMiddleware, ingest_token=settings.ingest_token, query_token=settings.query_token)
    app.add_middleware(UrlLimitMiddleware)  # before auth and every route: a long request line costs nothing
    app.add_middleware(
        SiteFence,
        ingest_token=settings.ingest_token,
        query_token=settings.query_token,
        bind_host=settings.host,
        allowed_hosts=settings.allowed_hosts,
    )  # outermost: another site's request is refused before anything reads it
    # Around everything that may read a body: one that trickles in is cut off at its deadline.
    app.add_middleware(BodyDeadline, timeout_s=settings.limits.body_timeout_s)
    return app


async def _store_refused(request: Request, exc: Exception) -> JSONResponse:
    """A read the store refused for a reason retrying will not change — a query it rejects, which
    is a bug of ours, not of the request (bad input is answered 4xx before any query): 500 with what
    the store said (never a password, see driver), logged once without a traceback."""
    log.error("the trace store refused the query of %s %s: %s", request.method, request.url.path, exc)
    detail = f"the trace store refused the query (a bug in reach-otel; please report it): {exc}"
    return JSONResponse({"detail": detail[:2000]}, status_code=500)


async def _store_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """A read while the store cannot be reached (a ClickHouse outage): 503, retry shortly."""
    retry_after = getattr(exc, "retry_after", 2)
    return JSONResponse(
        {"detail": f"the trace store is unavailable, retry: {exc}"},
        status_code=503,
        headers={"Retry-After": str(retry_after)},
    )
