"""``clickhouse://[user[:password]@]host[:port]/database[?cluster=NAME]``: parsing, and the one way
to show where the data lives — never with the password, which may also come from the environment
(``REACH_CLICKHOUSE_PASSWORD``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["PASSWORD_ENV", "ClickHouseURL", "URLError", "is_clickhouse_url", "parse_clickhouse_url"]

SCHEME: Final = "clickhouse"
DEFAULT_PORT: Final = 9000  # the native protocol
PASSWORD_ENV: Final = "REACH_CLICKHOUSE_PASSWORD"
# ClickHouse identifiers the schema is created under (quoted nowhere, so kept plain).
_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


class URLError(ValueError):
    """A ``--db clickhouse://`` URL that cannot be used; the message says which part (never the
    password)."""


@dataclass(frozen=True)
class ClickHouseURL:
    host: str
    port: int = DEFAULT_PORT
    database: str = "reach"
    user: str = "default"
    password: str = field(default="", repr=False)
    cluster: str | None = None

    def display(self) -> str:
        """Where the data lives, for messages and logs: the URL without the password."""
        who = f"{self.user}@" if self.user != "default" else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        tail = f"?cluster={self.cluster}" if self.cluster else ""
        return f"{SCHEME}://{who}{host}:{self.port}/{self.database}{tail}"

    def __str__(self) -> str:
        return self.display()


def is_clickhouse_url(db: str) -> bool:
    return db.strip().lower().startswith(SCHEME + "://")


def parse_clickhouse_url(url: str, env: Mapping[str, str] | None = None) -> ClickHouseURL:
    """Parse ``url``; the password comes from the URL, else from ``REACH_CLICKHOUSE_PASSWORD``
    in ``env`` (the process environment by default). Raises URLError."""
    env = os.environ if env is None else env
    # The message quotes the URL only with its credentials cut out.
    shown = _without_credentials(url)
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise URLError(f"{shown}: {_scrub(str(exc), url)}") from None
    if parts.scheme.lower() != SCHEME:
        raise URLError(f"{shown}: expected a {SCHEME}:// URL")
    if not parts.hostname:
        raise URLError(f"{shown}: no host (expected {SCHEME}://HOST:9000/DATABASE)")
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise URLError(f"{shown}: no database (expected {SCHEME}://HOST:9000/DATABASE)")
    if not _NAME.match(database):
        raise URLError(f"{shown}: database {database!r} must be letters, digits and _ (not first a digit)")
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"cluster"})
    if unknown:
        raise URLError(f"{shown}: unknown parameter {unknown[0]!r} (only cluster=NAME is taken)")
    cluster = query.get("cluster", [None])[-1]
    if cluster is not None and not _NAME.match(cluster):
        raise URLError(f"{shown}: cluster {cluster!r} must be letters, digits and _")
    password = unquote(parts.password) if parts.password is not None else env.get(PASSWORD_ENV, "")
    return ClickHouseURL(
        host=parts.hostname,
        port=port if port is not None else DEFAULT_PORT,
        database=database,
        user=unquote(parts.username) if parts.username else "default",
        password=password,
        cluster=cluster or None,
    )


def _without_credentials(url: str) -> str:
    """``url`` with anything between ``://`` and the last ``@`` of the authority replaced."""
    head, sep, rest = url.partition("://")
    if not sep:
        return "the --db URL"
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        credentials, host = authority.rsplit("@", 1)
        user = credentials.split(":", 1)[0]
        authority = f"{user}@{host}" if user else host
    return f"{head}{sep}{authority}{slash}{path}"


def _scrub(text: str, url: str) -> str:
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return text.replace(password, "***") if password else text
