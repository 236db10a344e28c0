"""Collector settings: defaults ← YAML file (§10) ← environment ← command-line flags.

A bad file fails at start with the file, the key and the reason (``ConfigError``).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final

from pydantic import Field, model_validator
from pydantic.dataclasses import dataclass

from reach_collector.config_values import (
    SECTION,
    Invalid,
    Section,
    as_mapping,
    duration,
    keyed,
    non_negative,
    optional,
    read,
    text_or_none,
    validate,
    whole,
    zone,
)
from reach_collector.config_values import ConfigError as ConfigError  # re-exported: raised by load()
from reach_collector.config_values import parse_duration as parse_duration  # re-exported
from reach_collector.limits import ServerLimits
from reach_collector.sections import NAMES as SECTION_NAMES
from reach_collector.sections import Sections
from reach_collector.text.clickhouse_url import URLError, is_clickhouse_url, parse_clickhouse_url

DEFAULT_DB: Final = "./reach-data/traces.duckdb"
DEFAULT_MAX_BODY: Final = 16 * 1024 * 1024
# What one request may cost in span rows (ingest.row_budget); every row carries its resource and scope.
DEFAULT_MAX_ROW_BYTES: Final = 64 * 1024 * 1024
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|[KMGT]B|[KMGT]iB)?\s*$", re.I)
_UNIT_BYTES: Final = {
    "b": 1, **{u.lower() + "b": 1000**i for i, u in enumerate("KMGT", 1)},
    **{u.lower() + "ib": 1024**i for i, u in enumerate("KMGT", 1)},
}  # fmt: skip
_CANONICAL_UNIT: Final = {u.lower(): u for u in ("B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB")}
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
DEFAULT_MEMORY_LIMIT: Final = "512MB"
_MIN_MEMORY_BYTES: Final = 64 * 1000**2


@dataclasses.dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 4318
    grpc_port: int = 4317
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_row_bytes: int = DEFAULT_MAX_ROW_BYTES
    decode_workers: int = -1  # worker processes for decoding; -1 = one per CPU, 0 = in-process
    db: str = DEFAULT_DB
    retention_s: float = 7 * 86400.0
    memory_limit: str = DEFAULT_MEMORY_LIMIT  # DuckDB's buffer pool cap: a size or a % of RAM
    # DuckDB worker threads. 1 by default: ingest commits many small statements, where handing work
    # to other threads costs more CPU than it saves (≈ 8% more spans/s here); None = one per core.
    threads: int | None = 1
    ingest_token: str | None = None
    query_token: str | None = None
    insecure_bind: bool = False
    # Host names served besides loopback's when no token guards a scope (DNS rebinding, §11).
    allowed_hosts: tuple[str, ...] = ()
    # Connections, timeouts and bytes in flight (``limits``): what a slow or flooding client may hold.
    limits: ServerLimits = field(default_factory=ServerLimits)
    time_zone: str = "UTC"
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # The sections the alerting package reads (alerting, users, schedules, ...) as written: the
    # mapping a Settings is built from; ``tree`` is what they say, read once (``sections.Sections``).
    sections: Mapping[str, Any] = field(default_factory=dict)
    source: str = "(defaults)"
    # ``sections`` already read (``from_mapping`` reads them with the rest of the file); None: read here.
    parsed: dataclasses.InitVar[Sections | None] = None
    tree: Sections = field(init=False, repr=False, compare=False)

    def __post_init__(self, parsed: Sections | None) -> None:
        object.__setattr__(self, "tree", parsed if parsed is not None else validate(Sections, self.sections))

    @property
    def auth_enabled(self) -> bool:
        return bool(self.ingest_token or self.query_token)

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def memory_size(value: Any) -> str:
    """``512MB`` / ``2GiB`` / ``1.5GB`` / ``25%`` (of RAM) or a number of bytes → the size string
    DuckDB takes (``SET memory_limit``); at least 64 MB, a percentage in (0, 100]."""
    expected = f"expected a size like 512MB, 2GiB or 25% (of RAM), at least 64MB; got {value!r}"
    if isinstance(value, bool):
        raise Invalid(expected)
    if isinstance(value, (int, float)):
        value = f"{value}B"
    if isinstance(value, str):
        percent = _PERCENT.match(value)
        if percent:
            if 0 < float(percent.group(1)) <= 100:
                return f"{percent.group(1)}%"
            raise Invalid(f"a percentage of RAM must be above 0 and at most 100; got {value!r}")
        match = _SIZE.match(value)
        if match:
            unit = (match.group(2) or "B").lower()
            if float(match.group(1)) * _UNIT_BYTES[unit] >= _MIN_MEMORY_BYTES:
                return f"{match.group(1)}{_CANONICAL_UNIT[unit]}"
    raise Invalid(expected)


def parse_memory_limit(value: Any, key: str = "memory_limit") -> str:
    return keyed(memory_size, value, key)


def database(value: Any) -> str:
    """``storage.db``: a DuckDB path, or a ``clickhouse://`` URL that can be used (an error never
    shows the password); null is the default path."""
    db = text_or_none(value) or DEFAULT_DB
    if is_clickhouse_url(db):
        try:
            parse_clickhouse_url(db, env={})
        except URLError as exc:
            raise Invalid(str(exc)) from None
    return db


def check_db(db: str, key: str) -> str:
    return keyed(database, db, key)


_HOST_NAME = re.compile(r"^[A-Za-z0-9.\-:\[\]]{1,253}$")


def host_names(value: Any) -> tuple[str, ...]:
    """A list of host names (``collector.internal``, ``10.0.0.5``), lower-cased, no ports."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and _HOST_NAME.match(v) for v in value):
        raise Invalid(f"expected a list of host names like [collector.internal], got {value!r}")
    return tuple(v.lower() for v in value)


@dataclass(frozen=True, config=SECTION)
class ServerSection(ServerLimits):
    """``server:``: where the collector listens and what one request may hold, with its limits."""

    host: Annotated[str, read(lambda v: text_or_none(v) or "127.0.0.1")] = "127.0.0.1"
    port: Annotated[int, read(whole(0, 65535))] = 4318
    grpc_port: Annotated[int, read(whole(0, 65535))] = 4317
    max_body_bytes: Annotated[int, read(whole(1024, 2**31))] = DEFAULT_MAX_BODY
    max_row_bytes: Annotated[int, read(whole(1024, 2**40))] = DEFAULT_MAX_ROW_BYTES
    decode_workers: Annotated[int, read(whole(-1, 64))] = -1
    allowed_hosts: Annotated[tuple[str, ...], read(host_names)] = ()

    @model_validator(mode="after")
    def _inflight_holds_a_body(self) -> ServerSection:
        inflight = self.max_inflight_bytes
        if inflight is not None and inflight < self.max_body_bytes:  # else the largest body never fits
            raise Invalid(
                f"must be at least server.max_body_bytes ({self.max_body_bytes}), got {inflight}",
                at="max_inflight_bytes",
            )
        return self


@dataclass(frozen=True, config=SECTION)
class StorageSection(Section):
    db: Annotated[str, read(database)] = DEFAULT_DB
    retention_s: Annotated[float, read(duration)] = Field(default=7 * 86400.0, validation_alias="retention")
    memory_limit: Annotated[str, read(memory_size)] = DEFAULT_MEMORY_LIMIT
    threads: Annotated[int | None, read(optional(whole(1, 64)))] = 1


@dataclass(frozen=True, config=SECTION)
class AuthSection(Section):
    ingest_token: Annotated[str | None, read(text_or_none)] = None
    query_token: Annotated[str | None, read(text_or_none)] = None


@dataclass(frozen=True, config=SECTION)
class Price(Section):
    """USD per million tokens of one model; a side not given is not priced."""

    input: Annotated[float | None, read(non_negative)] = None
    output: Annotated[float | None, read(non_negative)] = None

    def given(self) -> dict[str, float]:
        """The sides priced (null is refused, so None is a side not given)."""
        return {
            side: usd for side, usd in (("input", self.input), ("output", self.output)) if usd is not None
        }


@dataclass(frozen=True, config=SECTION)
class CollectorFile(Section):
    """The collector's own keys of a config file (§10), typed; the other top-level sections are
    the alerting package's (``sections.Sections``)."""

    other_keys: ClassVar[frozenset[str]] = SECTION_NAMES
    server: ServerSection = Field(default_factory=ServerSection)
    storage: StorageSection = Field(default_factory=StorageSection)
    auth: AuthSection = Field(default_factory=AuthSection)
    prices: Annotated[dict[str, Price], read(as_mapping)] = Field(default_factory=dict)
    time_zone: Annotated[str, read(zone)] = "UTC"


def from_mapping(doc: Mapping[str, Any], source: str = "(mapping)") -> Settings:
    """Validate a parsed config document (§10) into Settings, its sections into their tree; a
    ConfigError names every problem of both."""
    problems, tree, parsed = [], None, None
    try:
        tree = validate(CollectorFile, doc, source)
        sections = {name: value for name, value in doc.items() if name in SECTION_NAMES}
    except ConfigError as exc:
        problems.append(str(exc))
        sections = {}
    if tree is not None:
        try:
            parsed = validate(Sections, sections, source)
        except ConfigError as exc:
            problems.append(str(exc))
    if problems or tree is None or parsed is None:
        raise ConfigError("\n".join(problems))
    server, storage = tree.server, tree.storage
    return Settings(
        host=server.host,
        port=server.port,
        grpc_port=server.grpc_port,
        max_body_bytes=server.max_body_bytes,
        max_row_bytes=server.max_row_bytes,
        decode_workers=server.decode_workers,
        db=storage.db,
        retention_s=storage.retention_s,
        memory_limit=storage.memory_limit,
        threads=storage.threads,
        ingest_token=tree.auth.ingest_token,
        query_token=tree.auth.query_token,
        allowed_hosts=server.allowed_hosts,
        limits=server,
        time_zone=tree.time_zone,
        prices={name: price.given() for name, price in tree.prices.items()},
        sections=sections,
        source=source,
        parsed=parsed,
    )


def load_file(path: str | os.PathLike[str]) -> Settings:
    import yaml  # optional dependency of the collector extra; imported where needed

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the config file: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {_yaml_problem(exc)}") from None
    return from_mapping(doc or {}, str(p))


def _yaml_problem(exc: Exception) -> str:
    """A YAML error as ``line L, column C: problem``, without the parser's ``in "<unicode
    string>"`` (the file is named already)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    what = f"{problem} ({context})" if context else str(problem)
    return f"line {mark.line + 1}, column {mark.column + 1}: {what}" if mark is not None else what


def apply_env(settings: Settings, env: Mapping[str, str]) -> Settings:
    """§10 environment overrides (plus ``REACH_COLLECTOR_MEMORY_LIMIT``)."""
    changes: dict[str, Any] = {}
    if env.get("REACH_COLLECTOR_DB"):
        changes["db"] = check_db(env["REACH_COLLECTOR_DB"], "REACH_COLLECTOR_DB")
    if env.get("REACH_COLLECTOR_PORT"):
        try:
            changes["port"] = keyed(whole(0, 65535), int(env["REACH_COLLECTOR_PORT"]), "REACH_COLLECTOR_PORT")
        except ValueError:
            raise ConfigError(
                f"REACH_COLLECTOR_PORT: expected a port number, got {env['REACH_COLLECTOR_PORT']!r}"
            ) from None
    if env.get("REACH_INGEST_TOKEN"):
        changes["ingest_token"] = env["REACH_INGEST_TOKEN"]
    if env.get("REACH_QUERY_TOKEN"):
        changes["query_token"] = env["REACH_QUERY_TOKEN"]
    if env.get("REACH_COLLECTOR_MEMORY_LIMIT"):  # containers size memory from outside
        changes["memory_limit"] = parse_memory_limit(
            env["REACH_COLLECTOR_MEMORY_LIMIT"], "REACH_COLLECTOR_MEMORY_LIMIT"
        )
    return replace(settings, **changes)


def load(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    settings = load_file(path) if path else Settings()
    return apply_env(settings, os.environ if env is None else env)


def open_scopes(settings: Settings) -> list[str]:
    """The auth scopes no token guards (§11): ``ingest`` and/or ``query``."""
    scopes = (("ingest", settings.ingest_token), ("query", settings.query_token))
    return [name for name, token in scopes if not token]


def auth_line(settings: Settings) -> str:
    """What the startup line says of auth: which scopes a token guards, which are open, and what
    an open scope still refuses (other sites' requests, foreign Host names)."""
    open_ = open_scopes(settings)
    if not open_:
        return "on (ingest and query tokens)"
    guarded = [s for s in ("ingest", "query") if s not in open_]
    hosts = ", ".join(("loopback", *settings.allowed_hosts))
    fence = f"served to Host {hosts} only, same-origin requests only"
    if len(open_) == 2:
        return f"off (no tokens; bound to {settings.host}; {fence})"
    return f"on ({guarded[0]} token; {open_[0]} scope open: {fence})"


def check_bind(settings: Settings) -> str | None:
    """Why the collector must refuse to start with these settings, or None: a non-loopback bind
    needs both scopes guarded, since one open scope serves (or takes) everything it covers."""
    open_ = open_scopes(settings)
    if not open_ or settings.insecure_bind or settings.host in LOOPBACK_HOSTS:
        return None
    if len(open_) == 2:
        what = "without auth"
    else:
        key = f"auth.{open_[0]}_token"
        what = f"with the {open_[0]} scope open (no {key})"
    return (
        f"refusing to listen on {settings.host} {what}: set auth.ingest_token and "
        "auth.query_token (or REACH_INGEST_TOKEN / REACH_QUERY_TOKEN), bind to 127.0.0.1, "
        "or pass --insecure-bind"
    )
