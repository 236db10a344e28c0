"""How many connections the collector holds and how long it waits for a client: the ``server:``
keys that bound them (SECURITY.md, "Memory and connections"), read into ``ServerLimits``."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from pydantic.dataclasses import dataclass

from reach_collector.config_values import SECTION, Invalid, Section, duration, optional, read, whole

__all__ = ["ServerLimits"]


def _timeout(value: Any) -> float:
    seconds = duration(value)
    if not 0 < seconds <= 86_400:
        raise Invalid(f"expected a duration above 0s, at most 1d; got {value!r}")
    return seconds


Timeout = Annotated[float, read(_timeout)]


@dataclass(frozen=True, config=SECTION)
class ServerLimits(Section):
    """The limit keys of ``server:`` (``max_inflight_bytes`` is checked against the body limit by
    the section that holds both, ``config.ServerSection``)."""

    # HTTP connections open at once; one more is answered 503 and closed as it is accepted.
    max_connections: Annotated[int, read(whole(1, 1_000_000))] = 1024
    # From a connection's first byte (or a request's, on a kept-alive one) to its last header.
    header_timeout_s: Timeout = Field(default=10.0, validation_alias="header_timeout")
    # From a request's headers to the last byte of its body (for gRPC: of its request message).
    body_timeout_s: Timeout = Field(default=30.0, validation_alias="body_timeout")
    # An idle kept-alive HTTP connection is closed after this.
    keep_alive_timeout_s: Timeout = Field(default=5.0, validation_alias="keep_alive_timeout")
    # The request line and headers together; more is answered 431.
    max_header_bytes: Annotated[int, read(whole(1024, 1 << 24))] = 65_536
    # OTLP/HTTP request bytes being read or decoded at once; None: max(256 MiB, 4 × max_body_bytes).
    max_inflight_bytes: Annotated[int | None, read(optional(whole(1024, 1 << 40)))] = None
    # OTLP/gRPC calls in progress at once; one more gets RESOURCE_EXHAUSTED.
    grpc_max_concurrent_rpcs: Annotated[int, read(whole(1, 100_000))] = 64
    # gRPC keepalive: a ping this often, the connection dropped when one goes unanswered 20 s.
    grpc_keepalive_s: Timeout = Field(default=60.0, validation_alias="grpc_keepalive")
    # A gRPC connection with no call for this long is closed (the exporter reconnects).
    grpc_idle_timeout_s: Timeout = Field(default=300.0, validation_alias="grpc_idle_timeout")
