"""Run the collector: open the store, bind HTTP (and gRPC), print where it listens, serve."""

from __future__ import annotations

import contextlib
import gc
import logging
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from types import FrameType
from typing import TextIO

from reach_collector.config import Settings, auth_line, check_bind
from reach_collector.text.durations import format_duration_s


class StartupError(Exception):
    """The collector cannot start; the message says why and what to do."""


_GRPC_HINT = "choose another --grpc-port, or 0 to turn gRPC off"


def _bind(host: str, port: int, *, what: str = "", hint: str = "") -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on accepted sockets whose proto says TCP,
    # and without it keep-alive requests stall ~40 ms (Nagle + delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        where = f"for {what} " if what else ""
        tail = f"; {hint}" if hint else ""
        raise StartupError(f"cannot listen {where}on {host}:{port}: {exc.strerror or exc}{tail}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _collector_log(stream: TextIO) -> None:
    """The collector's own log lines (what alerting does, retention) at INFO on ``stream``;
    uvicorn configures only its own loggers. Every record is one line: names from spans can hold
    newlines, which would otherwise forge lines (uvicorn's error log too: its tracebacks)."""
    from reach_collector.text.printable import OneLineRecords

    for name in ("uvicorn.error", "uvicorn.access"):  # logger filters survive uvicorn's dictConfig
        other = logging.getLogger(name)
        if not any(isinstance(f, OneLineRecords) for f in other.filters):
            other.addFilter(OneLineRecords())
    logger = logging.getLogger("reach_collector")
    if logger.handlers:
        return
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(OneLineRecords())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def serve(settings: Settings, out: TextIO = sys.stdout) -> None:
    """Serve until interrupted. Imports the heavy dependencies here, not at CLI import time."""
    import duckdb
    import uvicorn

    from reach_collector.api.otlp_grpc import start_grpc
    from reach_collector.app import create_app
    from reach_collector.connections import uvicorn_config
    from reach_collector.ingest import fast
    from reach_collector.ingest.pool import default_workers, start_pool
    from reach_collector.store.clickhouse.driver import StoreError
    from reach_collector.store.open import describe_store, open_store
    from reach_collector.store.unavailable import StoreUnavailable
    from reach_collector.text.clickhouse_url import URLError

    reason = check_bind(settings)
    if reason:
        raise StartupError(reason)
    _collector_log(sys.stderr)
    sock = _bind(settings.host, settings.port)
    # Port 0 binds a free port: the settings (and so the alerts' externalURL) say which one.
    settings = replace(settings, port=int(sock.getsockname()[1]))
    try:
        store = open_store(settings)
    except duckdb.Error as exc:
        sock.close()
        raise StartupError(f"cannot open the trace store {settings.db}: {exc}") from None
    except (URLError, StoreUnavailable, StoreError) as exc:  # ClickHouse; messages carry no password
        sock.close()
        raise StartupError(f"cannot open the trace store: {exc}") from None
    workers = default_workers() if settings.decode_workers < 0 else settings.decode_workers
    pool = start_pool(workers) if workers > 0 else None
    app = create_app(settings, store=store, pool=pool)
    grpc_server = None
    grpc_port = 0
    try:
        if settings.grpc_port:
            # Probe the port first: gRPC's C core logs a raw line of its own before it fails.
            _bind(settings.host, settings.grpc_port, what="OTLP/gRPC", hint=_GRPC_HINT).close()
            try:
                grpc_server, grpc_port = start_grpc(
                    app.state.ingest,
                    settings.host,
                    settings.grpc_port,
                    ingest_token=settings.ingest_token,
                    query_token=settings.query_token,
                    limits=settings.limits,
                )
            except (OSError, RuntimeError) as exc:
                where = f"{settings.host}:{settings.grpc_port}"
                raise StartupError(f"cannot listen for OTLP/gRPC on {where} ({exc}); {_GRPC_HINT}") from None
        port = sock.getsockname()[1]
        print(f"reach-otel collector listening on http://{settings.host}:{port} (OTLP/HTTP, API)", file=out)
        if grpc_server is not None:
            print(f"reach-otel collector listening on {settings.host}:{grpc_port} (OTLP/gRPC)", file=out)
        else:
            print("reach-otel collector: OTLP/gRPC off", file=out)
        where = describe_store(settings, store)
        kept = (
            f"spans kept {format_duration_s(settings.retention_s)}"
            if settings.retention_s > 0
            else "retention off"
        )
        print(f"reach-otel collector data: {where}; {kept}", file=out)
        print(f"reach-otel collector auth: {auth_line(settings)}", file=out)
        processes = f"{workers} decoder process(es)" if pool is not None else "threads"
        off = fast.why_off()
        decoding = (
            f"in pure Python, in {processes} ({off})" if off else f"protobuf compiled, JSON in {processes}"
        )
        print(f"reach-otel collector decoding: {decoding}", file=out)
        alerting = app.state.alerts.setup.alerting
        if alerting.evaluate:
            from reach_collector.text.redact_url import redact_url

            am, registry = alerting.alertmanager_url, alerting.registry
            push = f", pushed to Alertmanager at {redact_url(am)}" if am else ""
            push += f"; P2 deregisters at {redact_url(registry)}" if registry else ""
            print(
                f"reach-otel collector alerting: evaluated here every {alerting.interval_s:g}s{push}",
                file=out,
            )
        else:
            print("reach-otel collector alerting: not evaluated here (alerting.evaluate: false)", file=out)
        out.flush()
        config = uvicorn_config(
            app, settings.limits, log_level="warning", lifespan="on", timeout_graceful_shutdown=10
        )
        with _startup_objects_frozen(), _signals_return():
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        if grpc_server is not None:
            grpc_server.stop(grace=5).wait(10)
        sock.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        store.close()
    print("reach-otel collector stopped; the store is closed", file=out)
    out.flush()


@contextlib.contextmanager
def _startup_objects_frozen() -> Iterator[None]:
    """While serving, what exists once the collector is set up (modules, the app, its routes and
    models: most of the objects it will ever hold) is left out of garbage collections. A full
    collection otherwise walks all of them while it holds the interpreter, stopping every request,
    a trace lookup too, for 20–200 ms on a loaded machine, a few times a minute under ingest."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def _signals_return() -> Iterator[None]:
    """uvicorn shuts down on SIGINT/SIGTERM, then raises the same signal again against the handlers
    it found. With the default SIGTERM handler that kills the process before the decoder pool, the
    gRPC server and the store are closed; handlers that just return let ``serve`` finish."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _ignore(signum: int, frame: FrameType | None) -> None:
    return None
