"""How many connections the collector holds and how long it waits for a client: the ``server:``
keys that bound them (SECURITY.md, "Memory and connections"), parsed once into ``ServerLimits``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from reach_collector.config_values import ConfigError, integer, parse_duration

__all__ = ["LIMIT_KEYS", "ServerLimits", "parse_limits"]

LIMIT_KEYS: Final = frozenset(
    {
        "max_connections",
        "header_timeout",
        "body_timeout",
        "keep_alive_timeout",
        "max_header_bytes",
        "max_inflight_bytes",
        "grpc_max_concurrent_rpcs",
        "grpc_keepalive",
        "grpc_idle_timeout",
    }
)

_DURATION_KEYS: Final = (
    "header_timeout",
    "body_timeout",
    "keep_alive_timeout",
    "grpc_keepalive",
    "grpc_idle_timeout",
)


@dataclass(frozen=True)
class ServerLimits:
    # HTTP connections open at once; one more is answered 503 and closed as it is accepted.
    max_connections: int = 1024
    # From a connection's first byte (or a request's, on a kept-alive one) to its last header.
    header_timeout_s: float = 10.0
    # From a request's headers to the last byte of its body (for gRPC: of its request message).
    body_timeout_s: float = 30.0
    # An idle kept-alive HTTP connection is closed after this.
    keep_alive_timeout_s: float = 5.0
    # The request line and headers together; more is answered 431.
    max_header_bytes: int = 65_536
    # OTLP/HTTP request bytes being read or decoded at once; None: max(256 MiB, 4 × max_body_bytes).
    max_inflight_bytes: int | None = None
    # OTLP/gRPC calls in progress at once; one more gets RESOURCE_EXHAUSTED.
    grpc_max_concurrent_rpcs: int = 64
    # gRPC keepalive: a ping this often, the connection dropped when one goes unanswered 20 s.
    grpc_keepalive_s: float = 60.0
    # A gRPC connection with no call for this long is closed (the exporter reconnects).
    grpc_idle_timeout_s: float = 300.0


def parse_limits(server: Mapping[str, Any], max_body_bytes: int) -> ServerLimits:
    """The limit keys of a ``server:`` section (the others are the caller's); raises ConfigError
    naming ``server.<key>``."""
    values: dict[str, Any] = {}
    for key, low, high in (
        ("max_connections", 1, 1_000_000),
        ("max_header_bytes", 1024, 1 << 24),
        ("grpc_max_concurrent_rpcs", 1, 100_000),
    ):
        if key in server:
            values[key] = integer(server[key], f"server.{key}", low, high)
    for key in _DURATION_KEYS:
        if key in server:
            seconds = parse_duration(server[key], f"server.{key}")
            if not 0 < seconds <= 86_400:
                raise ConfigError(
                    f"server.{key}: expected a duration above 0s, at most 1d; got {server[key]!r}"
                )
            values[f"{key}_s"] = seconds
    if server.get("max_inflight_bytes") is not None:
        inflight = integer(server["max_inflight_bytes"], "server.max_inflight_bytes", 1024, 1 << 40)
        if inflight < max_body_bytes:  # else a body of the largest size could never be read
            raise ConfigError(
                f"server.max_inflight_bytes: must be at least server.max_body_bytes ({max_body_bytes}), "
                f"got {inflight}"
            )
        values["max_inflight_bytes"] = inflight
    return ServerLimits(**values)
