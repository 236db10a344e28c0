"""A small stdlib HTTP client for the query commands (no third-party HTTP dependency): the shared
``--url``/``--token``/``--token-file``/``--tz``/``--json`` arguments, GET/POST of JSON, the time
zone tables print in, and the one way a command fails: ``reach-otel <command>: <what went wrong>``
on stderr, in words a user can act on (never an HTTP status code), exit 1 (2 for a bad argument).
The query token goes only to the collector's origin: a redirect elsewhere is followed without it."""

from __future__ import annotations

import argparse
import functools
import json
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import tzinfo
from typing import Any, Final

from reach_collector.cli.formats import LOCAL, parse_zone
from reach_collector.text.printable import escape_all

DEFAULT_URL: Final = "http://127.0.0.1:4318"
ZONE_ENV: Final = "REACH_OTEL_TZ"
TOKEN_ENV: Final = "REACH_QUERY_TOKEN"
_MAX_TOKEN_FILE: Final = 64 * 1024


class QueryError(Exception):
    """A query that failed; the message is what the user should read."""

    code = 1


class UsageError(QueryError):
    """A bad argument (exit 2)."""

    code = 2


def default_url() -> str:
    return os.environ.get("REACH_OTEL_URL") or DEFAULT_URL


def add_query_arguments(parser: argparse.ArgumentParser, rendering: str = "a table") -> None:
    """``--url``, ``--token``, ``--token-file``, ``--tz`` and ``--json``: what every command that
    queries a collector takes."""
    parser.add_argument(
        "--url", default=None, help=f"collector URL (default $REACH_OTEL_URL or {DEFAULT_URL})"
    )
    parser.add_argument(
        "--token",
        default=None,
        help=f"query token (default ${TOKEN_ENV}; other local users can see a command line, so "
        "prefer the variable or --token-file)",
    )
    parser.add_argument("--token-file", default=None, metavar="PATH", help="read the query token from PATH")
    parser.add_argument(
        "--tz",
        default=None,
        metavar="ZONE",
        help=f"print times in this zone: an IANA name (Europe/Berlin), UTC or {LOCAL} (default "
        f"${ZONE_ENV}, else the collector's configured time_zone, else this machine's zone)",
    )
    parser.add_argument("--json", action="store_true", help=f"print the raw JSON instead of {rendering}")


def command_name(args: argparse.Namespace) -> str:
    """The command as typed (``traces``, ``alerts replay``), for the error prefix."""
    return str(getattr(args, "cli_name", None) or getattr(args, "command", None) or "").strip()


def fail(args: argparse.Namespace, message: str, code: int = 1) -> int:
    """Say what went wrong on stderr, prefixed ``reach-otel <command>:``; the exit code to return."""
    name = command_name(args)
    print(f"reach-otel {name}: {message}" if name else f"reach-otel: {message}", file=sys.stderr)
    return code


def query_command(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Wrap a command so that a QueryError becomes one prefixed line on stderr and its exit code."""

    @functools.wraps(run)
    def guarded(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except QueryError as exc:
            return fail(args, str(exc), exc.code)

    return guarded


def read_token_file(path: str, option: str = "--token-file") -> str:
    """The token kept in the file at ``path`` (surrounding whitespace dropped); UsageError naming
    ``option`` when it cannot be read or holds nothing."""
    try:
        with open(path, encoding="utf-8") as file:
            token = file.read(_MAX_TOKEN_FILE + 1).strip()
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise UsageError(f"{option} {path}: cannot read it ({why})") from None
    if not token or len(token) > _MAX_TOKEN_FILE or any(ch.isspace() for ch in token):
        raise UsageError(f"{option} {path}: expected one token on one line")
    return token


def query_token(args: argparse.Namespace) -> str | None:
    """The query token a command sends: ``--token-file``, else ``--token`` (None: the requests
    fall back to ``$REACH_QUERY_TOKEN``)."""
    path = getattr(args, "token_file", None)
    if path:
        return read_token_file(path)
    token = getattr(args, "token", None)
    return str(token) if token else None


def call(
    args: argparse.Namespace, path: str, body: Any = None, params: Any = None, post_timeout: float = 30.0
) -> Any:
    """GET ``path`` (or POST ``body`` to it, waiting ``post_timeout`` seconds for the answer) on
    the collector named by ``args.url``. Unless the command prints ``--json`` (whose encoding
    escapes them), control characters in the answer's strings come back escaped: a span name must
    not move the terminal's cursor or forge a line."""
    url = args.url or default_url()
    token = query_token(args)
    if body is None:
        answer = get_json(url, path, params, token=token)
    else:
        answer = post_json(url, path, body, token=token, timeout=post_timeout)
    return answer if getattr(args, "json", False) else escape_all(answer)


def print_json(args: argparse.Namespace, body: Any) -> bool:
    """With ``--json``, print ``body`` and say so (the caller then prints no table)."""
    if args.json:
        print(json.dumps(body, indent=2))
    return bool(args.json)


def requested_zone(args: argparse.Namespace) -> tzinfo | None:
    """The zone ``--tz`` or ``$REACH_OTEL_TZ`` asks for (None: ask the collector); UsageError for a
    name that is not a zone."""
    name = getattr(args, "tz", None) or os.environ.get(ZONE_ENV)
    if not name:
        return None
    try:
        return parse_zone(name)
    except ValueError as exc:
        where = "--tz" if getattr(args, "tz", None) else f"${ZONE_ENV}"
        raise UsageError(f"{where}: {exc}") from None


def display_zone(args: argparse.Namespace, configured: str | None = None) -> tzinfo:
    """The zone tables print times in: ``--tz``, else ``$REACH_OTEL_TZ``, else the collector's
    configured ``time_zone`` (``configured`` when the caller already has it, else read from
    ``GET /api/oncall``), else this machine's zone."""
    zone = requested_zone(args)
    if zone is not None:
        return zone
    if configured is None:
        try:
            body = call(args, "/api/oncall")
        except QueryError:
            body = None
        found = body.get("time_zone") if isinstance(body, dict) else None
        configured = found if isinstance(found, str) else None
    if configured:
        try:
            return parse_zone(configured)
        except ValueError:
            pass
    return parse_zone(LOCAL)


def _checked_base(base_url: str) -> str:
    """The collector's base URL, or a UsageError saying what a URL must look like."""
    try:
        parts = urllib.parse.urlsplit(base_url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"{base_url!r} is not a collector URL (from --url or $REACH_OTEL_URL): "
            f"expected http://HOST:PORT, e.g. {DEFAULT_URL}"
        )
    return base_url.strip().rstrip("/")


def get_json(
    base_url: str,
    path: str,
    params: list[tuple[str, str]] | None = None,
    token: str | None = None,
    timeout: float = 10.0,
) -> Any:
    base = _checked_base(base_url)
    url = base + path
    if params:
        url += "?" + urllib.parse.urlencode(params)
    request = urllib.request.Request(url, headers={"accept": "application/json"})
    return _send(request, base, token, timeout)


def post_json(base_url: str, path: str, body: Any, token: str | None = None, timeout: float = 30.0) -> Any:
    """POST a JSON body and return the JSON answer; QueryError says what went wrong."""
    base = _checked_base(base_url)
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"accept": "application/json", "content-type": "application/json"},
        method="POST",
    )
    return _send(request, base, token, timeout)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


class _TokenStaysHome(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but sends ``Authorization`` on only while the redirect
    stays on the origin (scheme, host, port) of the request that carried it: a collector behind a
    proxy that redirects to another host must not hand that host the query token."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(new.full_url) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


_OPENER: Final = urllib.request.build_opener(_TokenStaysHome())


def _send(request: urllib.request.Request, base_url: str, token: str | None, timeout: float) -> Any:
    token = token or os.environ.get(TOKEN_ENV)
    if token:
        request.add_header("authorization", f"Bearer {token}")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise QueryError(_refusal(exc, base_url, bool(token))) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, (TimeoutError, socket.timeout)):  # it may be up and merely slow
            raise QueryError(
                f"the collector at {base_url} gave no answer within {timeout:g}s: it may be busy with a "
                "long query (a shorter range or a larger step costs less), or not running"
            ) from None
        why = _unreachable(reason)
        raise QueryError(
            f"cannot reach the collector at {base_url} ({why}): is it running? "
            "(--url or $REACH_OTEL_URL names it)"
        ) from None
    except ValueError:
        raise QueryError(f"the server at {base_url} did not answer like a reach-otel collector") from None


def _unreachable(reason: Any) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "unknown host"
    if isinstance(reason, OSError) and reason.strerror:
        return str(reason.strerror).lower()
    return str(reason)


def _refusal(exc: urllib.error.HTTPError, base_url: str, sent_token: bool) -> str:
    """What an error answer means, in words (the status code stays out of the message)."""
    status, detail = exc.code, _detail(exc)
    if status == 401:
        if sent_token:
            return f"the collector refused the query token (${TOKEN_ENV}, --token-file or --token)"
        return f"the collector wants a query token: set ${TOKEN_ENV} or pass --token-file"
    if status == 403:
        return f"this token may not query the collector: use its query token (${TOKEN_ENV} or --token-file)"
    if status in (429, 503):
        wait = exc.headers.get("Retry-After") if exc.headers else None
        again = f"try again in {wait}s" if wait and wait.isdigit() else "try again shortly"
        return f"the collector is busy ({detail or 'its write queue is full'}); {again}"
    if status >= 500:
        return f"the collector failed while answering; its log says why ({base_url})"
    if status in (404, 405) and (detail is None or detail in ("Not Found", "Method Not Allowed")):
        return f"the server at {base_url} has no such query: is it a reach-otel collector, and up to date?"
    return detail or "the collector refused the request"


def _detail(exc: urllib.error.HTTPError) -> str | None:
    try:
        body = json.loads(exc.read())
    except (ValueError, OSError):
        return None
    detail = body.get("detail") or body.get("message") if isinstance(body, dict) else None
    if isinstance(detail, list):  # request validation: [{"loc": [...], "msg": ...}]
        items = [d for d in detail if isinstance(d, dict)]
        return "; ".join(f"{'.'.join(str(p) for p in d.get('loc', [])[1:])}: {d.get('msg')}" for d in items)
    return str(detail) if detail else None


def limit_arg(text: str) -> int:
    """``--limit``: 1 to 1000, as the listing answers (a larger one would be cut silently)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 1000, got {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(
            f"expected 1 to 1000 (the collector returns at most 1000), got {value}"
        )
    return value
