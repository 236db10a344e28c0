"""A small stdlib HTTP client for the query commands (no third-party HTTP dependency): the shared
``--url``/``--token``/``--json`` arguments, GET/POST of JSON, and the one way a command fails."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Final

DEFAULT_URL: Final = "http://127.0.0.1:4318"


class QueryError(Exception):
    """A query that failed; the message is what the user should read."""


def default_url() -> str:
    return os.environ.get("REACH_OTEL_URL") or DEFAULT_URL


def add_query_arguments(parser: argparse.ArgumentParser, rendering: str = "a table") -> None:
    """``--url``, ``--token`` and ``--json``: what every command that queries a collector takes."""
    parser.add_argument(
        "--url", default=None, help=f"collector URL (default $REACH_OTEL_URL or {DEFAULT_URL})"
    )
    parser.add_argument("--token", default=None, help="query token (default $REACH_QUERY_TOKEN)")
    parser.add_argument("--json", action="store_true", help=f"print the raw JSON instead of {rendering}")


def fail(message: str, code: int = 1) -> int:
    """Say what went wrong on stderr; the exit code to return."""
    print(f"reach-otel: {message}", file=sys.stderr)
    return code


def call(args: argparse.Namespace, path: str, body: Any = None, params: Any = None) -> Any:
    """GET ``path`` (or POST ``body`` to it) on the collector named by ``args.url``."""
    url = args.url or default_url()
    if body is None:
        return get_json(url, path, params, token=args.token)
    return post_json(url, path, body, token=args.token)


def print_json(args: argparse.Namespace, body: Any) -> bool:
    """With ``--json``, print ``body`` and say so (the caller then prints no table)."""
    if args.json:
        print(json.dumps(body, indent=2))
    return bool(args.json)


def get_json(
    base_url: str,
    path: str,
    params: list[tuple[str, str]] | None = None,
    token: str | None = None,
    timeout: float = 10.0,
) -> Any:
    url = base_url.rstrip("/") + path
    if params:
        url += "?" + urllib.parse.urlencode(params)
    request = urllib.request.Request(url, headers={"accept": "application/json"})
    return _send(request, base_url, token, timeout)


def post_json(base_url: str, path: str, body: Any, token: str | None = None, timeout: float = 30.0) -> Any:
    """POST a JSON body and return the JSON answer; QueryError says what went wrong."""
    request = urllib.request.Request(
        base_url.rstrip("/") + path,
        data=json.dumps(body).encode(),
        headers={"accept": "application/json", "content-type": "application/json"},
        method="POST",
    )
    return _send(request, base_url, token, timeout)


def _send(request: urllib.request.Request, base_url: str, token: str | None, timeout: float) -> Any:
    token = token or os.environ.get("REACH_QUERY_TOKEN")
    if token:
        request.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise QueryError(f"{exc.code}: {_detail(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise QueryError(f"cannot reach the collector at {base_url}: {reason}") from None
    except ValueError as exc:
        raise QueryError(f"the collector at {base_url} sent a reply that is not JSON: {exc}") from None


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read())
    except (ValueError, OSError):
        return str(exc.reason)
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("message") or exc.reason)
    return str(exc.reason)
