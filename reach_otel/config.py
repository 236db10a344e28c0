"""Settings: keyword arguments and the standard ``OTEL_*`` / ``REACH_OTEL_*`` variables → one frozen value.

Bad values never raise: they are logged and the default is used, because configuration
mistakes must not take the user's application down.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

logger = logging.getLogger("reach_otel")

DEFAULT_HTTP_ENDPOINT = "http://127.0.0.1:4318"
DEFAULT_GRPC_ENDPOINT = "http://127.0.0.1:4317"
TRACES_PATH = "/v1/traces"
DEFAULT_CONTENT_MAX_CHARS = 4096
DEFAULT_MAX_HOPS = 5
DEFAULT_SHUTDOWN_TIMEOUT_S = 5.0

Protocol = Literal["http/protobuf", "grpc"]
OnLoop = Literal["record", "raise"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Settings:
    """Everything reach_otel's behaviour depends on; build it with :func:`load_settings`."""

    service_name: str | None = None
    endpoint: str = DEFAULT_HTTP_ENDPOINT + TRACES_PATH
    protocol: Protocol = "http/protobuf"
    headers: Mapping[str, str] = field(default_factory=dict)
    disabled: bool = False
    capture_content: bool = False
    content_max_chars: int = DEFAULT_CONTENT_MAX_CHARS
    max_hops: int = DEFAULT_MAX_HOPS
    on_loop: OnLoop = "record"
    shutdown_timeout_s: float = DEFAULT_SHUTDOWN_TIMEOUT_S
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    redact_patterns: tuple[str, ...] = ()

    def comparable(self) -> tuple[Any, ...]:
        """A hashable view used to tell whether a second ``init()`` asked for something else."""
        return (
            self.service_name,
            self.endpoint,
            self.protocol,
            tuple(sorted(self.headers.items())),
            self.disabled,
            self.capture_content,
            self.content_max_chars,
            self.max_hops,
            self.on_loop,
            self.shutdown_timeout_s,
            tuple(sorted((k, repr(v)) for k, v in self.resource_attributes.items())),
            self.redact_patterns,
        )


def env_bool(name: str, default: bool, env: Mapping[str, str] | None = None) -> bool:
    raw = (env if env is not None else os.environ).get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    logger.warning("reach_otel: %s=%r is not a boolean; using %s", name, raw, default)
    return default


def env_number(
    name: str, default: float, env: Mapping[str, str] | None = None, *, minimum: float = 0
) -> float:
    raw = (env if env is not None else os.environ).get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value >= minimum:  # also catches NaN
        logger.warning("reach_otel: %s=%r is not a number >= %s; using %s", name, raw, minimum, default)
        return default
    return value


class _Dropped(logging.Filter):
    """Counts, and keeps out of the log, the records of the logger it is added to."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        self.count += 1
        return False


def parse_headers(raw: str) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_HEADERS`` format, ``k1=v1,k2=v2`` with URL-encoded values, read by the
    SDK's own parser (liberal, as the other languages' SDKs: an unencoded space is taken). Its
    warning about a malformed entry quotes the entry, which may hold a token, so that warning is
    held back and ours, which counts the entries and never echoes one, is logged instead."""
    from opentelemetry.util.re import parse_env_headers

    sdk_log = logging.getLogger(parse_env_headers.__module__)
    dropped = _Dropped()
    sdk_log.addFilter(dropped)
    try:
        headers = dict(parse_env_headers(raw, liberal=True))
    finally:
        sdk_log.removeFilter(dropped)
    if dropped.count:
        logger.warning("reach_otel: ignoring %d OTLP header entries that are not key=value", dropped.count)
    return headers


def _traces_endpoint(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def is_http_url(value: str) -> bool:
    """Whether ``value`` is an http:// or https:// URL with a host (and a numeric port, if any)."""
    try:
        parts = urlsplit(value.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _valid_endpoint(value: str, source: str, default: str) -> str:
    """``value`` if it is an http(s):// URL with a host; else one log line and ``default``."""
    if is_http_url(value):
        return value.strip()
    logger.warning(
        "reach_otel: %s=%r is not an http:// or https:// URL with a host; using the default %s",
        source,
        value.rsplit("@", 1)[-1],  # never echo credentials written into the URL
        default,
    )
    return default


def _resolve_endpoint(explicit: str | None, protocol: Protocol, env: Mapping[str, str]) -> str:
    """The first of: the keyword, the traces variable (used as-is), the generic variable (+ /v1/traces)."""
    http = protocol == "http/protobuf"
    default = DEFAULT_HTTP_ENDPOINT + TRACES_PATH if http else DEFAULT_GRPC_ENDPOINT
    for source, value, as_is in (
        ("endpoint", explicit, False),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), True),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", env.get("OTEL_EXPORTER_OTLP_ENDPOINT"), False),
    ):
        if value:
            endpoint = _valid_endpoint(value, source, default)
            return _traces_endpoint(endpoint) if http and not as_is else endpoint
    return default


def _resolve_protocol(explicit: str | None, env: Mapping[str, str]) -> Protocol:
    raw = explicit or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if not raw or raw == "http/protobuf":
        return "http/protobuf"
    if raw == "grpc":
        return "grpc"
    logger.warning("reach_otel: OTLP protocol %r is not supported; using http/protobuf", raw)
    return "http/protobuf"


def load_settings(env: Mapping[str, str] | None = None, **kwargs: Any) -> Settings:
    """Merge keyword arguments (which win) over environment variables over defaults."""
    env = os.environ if env is None else env
    protocol = _resolve_protocol(kwargs.get("protocol"), env)
    headers_raw = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    headers = parse_headers(headers_raw)
    headers.update({k.lower(): v for k, v in (kwargs.get("headers") or {}).items()})

    capture = kwargs.get("capture_content")
    if capture is None:
        capture = env_bool("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", False, env)

    on_loop_raw = kwargs.get("on_loop") or env.get("REACH_OTEL_ON_LOOP") or "record"
    on_loop: OnLoop = "raise" if on_loop_raw == "raise" else "record"
    if on_loop_raw not in ("record", "raise"):
        logger.warning("reach_otel: on_loop=%r must be 'record' or 'raise'; using 'record'", on_loop_raw)

    max_hops = kwargs.get("max_hops")
    if not isinstance(max_hops, int) or isinstance(max_hops, bool) or max_hops < 0:
        if max_hops is not None:
            logger.warning("reach_otel: max_hops=%r must be an int >= 0; using the default", max_hops)
        max_hops = int(env_number("REACH_OTEL_MAX_HOPS", DEFAULT_MAX_HOPS, env))

    max_chars = kwargs.get("content_max_chars")
    if not isinstance(max_chars, int) or max_chars < 1:
        max_chars = int(env_number("REACH_OTEL_CONTENT_MAX_CHARS", DEFAULT_CONTENT_MAX_CHARS, env, minimum=1))

    timeout = kwargs.get("shutdown_timeout")
    if not isinstance(timeout, (int, float)) or timeout < 0:
        timeout = env_number("REACH_OTEL_SHUTDOWN_TIMEOUT", DEFAULT_SHUTDOWN_TIMEOUT_S, env)

    return Settings(
        service_name=kwargs.get("service_name") or env.get("OTEL_SERVICE_NAME") or None,
        endpoint=_resolve_endpoint(kwargs.get("endpoint"), protocol, env),
        protocol=protocol,
        headers=headers,
        disabled=env_bool("OTEL_SDK_DISABLED", False, env),
        capture_content=bool(capture),
        content_max_chars=max_chars,
        max_hops=max_hops,
        on_loop=on_loop,
        shutdown_timeout_s=float(timeout),
        resource_attributes=dict(kwargs.get("resource_attributes") or {}),
        redact_patterns=tuple(kwargs.get("redact_patterns") or ()),
    )
