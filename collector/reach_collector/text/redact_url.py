"""A URL as it may be shown (log lines, API answers, startup lines, error messages) with whatever
may be a credential replaced by ``***``: the user info, every query value, the fragment, and a path
segment that looks like a key.

``http://user:pass@host/hook/alice?token=abc`` is shown ``http://***@host/hook/alice?token=***``.
A path segment of 16 or more letters, digits, ``-`` and ``_`` with at least one digit is taken for a
key, since Grafana OnCall, Slack and PagerDuty put theirs in the path. Only what is shown changes:
the URL a request is sent to is never passed through here. Redacting twice changes nothing.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple
from urllib.parse import unquote

__all__ = ["MASK", "redact_url", "scrub"]

MASK: Final = "***"
_KEYLIKE: Final = re.compile(r"(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{16,}")
# Secrets shorter than this are hidden where the whole URL is quoted, not wherever they occur in a
# text: replacing "1" everywhere would garble an error message and hide nothing worth hiding.
_MIN_SCRUB: Final = 6


class _Shown(NamedTuple):
    url: str
    secrets: tuple[str, ...]


def _split(url: str) -> _Shown:
    secrets: list[str] = []
    head, sep, rest = url.partition("://")
    if not sep:
        head, rest = "", url
    rest, hashed, fragment = rest.partition("#")
    rest, asked, query = rest.partition("?")
    authority, slash, path = rest.partition("/") if sep else ("", "", rest)
    if "@" in authority:
        userinfo, authority = authority.rsplit("@", 1)
        secrets += [userinfo, *userinfo.split(":", 1)]
        authority = f"{MASK}@{authority}"
    elif not authority.startswith("[") and ":" in authority:
        host, port = authority.split(":", 1)
        if port and not port.isdigit() and port != MASK:  # not a port: a password lost its user
            secrets.append(port)
            authority = f"{host}:{MASK}"
    segments = []
    for segment in path.split("/"):
        if _KEYLIKE.fullmatch(segment):
            secrets.append(segment)
            segment = MASK
        segments.append(segment)
    path = "/".join(segments)
    if asked:
        parts = []
        for part in query.split("&"):
            name, eq, value = part.partition("=")
            if not eq:  # a bare value, no name
                name, value = "", name
            if value and value != MASK:
                secrets.append(value)
            parts.append(f"{name}{eq}{MASK}" if value else part)
        query = "&".join(parts)
    if fragment and fragment != MASK:
        secrets.append(fragment)
    shown = f"{head}{sep}{authority}{slash}{path}{asked}{query}{hashed}{MASK if fragment else ''}"
    return _Shown(shown, tuple(secrets))


def redact_url(url: str) -> str:
    """``url`` with its user info, query values, fragment and key-like path segments as ``***``."""
    return _split(url).url


def scrub(text: str, url: str) -> str:
    """``text`` (an error message, a receiver's answer) with ``url`` and its secrets hidden: the URL
    as ``redact_url`` shows it, and each secret of six characters or more, raw or decoded, as
    ``***`` wherever it occurs."""
    shown = _split(url)
    text = text.replace(url, shown.url)
    found = {s for secret in shown.secrets for s in (secret, unquote(secret)) if len(s) >= _MIN_SCRUB}
    for secret in sorted(found, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
