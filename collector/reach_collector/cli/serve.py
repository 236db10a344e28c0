"""`reach-otel collector` (and `python -m reach_collector`): the arguments that start the service and
the function that runs it. The service itself (FastAPI, DuckDB) is imported only when it starts, so
`reach-otel --help` works without the collector extra."""

from __future__ import annotations

import argparse
import sys


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None, help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="OTLP/HTTP and API port (default 4318)")
    parser.add_argument("--grpc-port", type=int, default=None, help="OTLP/gRPC port (default 4317; 0 = off)")
    parser.add_argument(
        "--db",
        default=None,
        help="DuckDB file (default ./reach-data/traces.duckdb), :memory:, or "
        "clickhouse://[USER@]HOST:9000/DATABASE[?cluster=NAME] (password: REACH_CLICKHOUSE_PASSWORD)",
    )
    parser.add_argument("--config", default=None, help="YAML config file (see the configuration reference)")
    parser.add_argument("--retention", default=None, help="drop spans older than this (e.g. 7d, 12h)")
    parser.add_argument(
        "--insecure-bind",
        action="store_true",
        help="allow a non-loopback host without auth tokens",
    )


def run_serve(args: argparse.Namespace) -> int:
    from reach_collector.alerting.config import from_settings
    from reach_collector.config import ConfigError, load, parse_duration
    from reach_collector.server import StartupError, serve

    try:
        settings = load(args.config)
        settings = settings.with_overrides(
            host=args.host,
            port=args.port,
            grpc_port=args.grpc_port,
            db=args.db,
            retention_s=parse_duration(args.retention, "--retention") if args.retention else None,
            insecure_bind=True if args.insecure_bind else None,
        )
        from_settings(settings)  # a bad alerting/users/schedules/routing section fails here, before binding
        serve(settings)
    except (ConfigError, StartupError) as exc:
        print(f"reach-otel collector: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `collector` to the `reach-otel` command line."""
    serve = sub.add_parser("collector", help="run the trace-store collector (OTLP ingest, query API)")
    add_serve_arguments(serve)
    serve.set_defaults(func=run_serve)
