"""``reach-otel dashboards import|export``: put the Grafana dashboards into a Grafana (HTTP API) or
a directory (file provisioning). Standard library only, so it works without the collector extra.

The dashboards are package data (``reach_otel/_dashboards/*.json``, written by
``dashboards/build.py``). Errors are one line on stderr with a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

__all__ = ["GrafanaError", "export_dashboards", "import_dashboards", "load_dashboards", "register", "run"]

PACKAGE: Final = "reach_otel._dashboards"
DEFAULT_FOLDER: Final = "reach-otel"
DASHBOARDS_DB: Final = "/api/dashboards/db"
FOLDERS: Final = "/api/folders"


class GrafanaError(Exception):
    """A failure the user can act on; the message is the one line we print."""


def load_dashboards() -> dict[str, dict[str, Any]]:
    """File name → dashboard model, from the package data."""
    found: dict[str, dict[str, Any]] = {}
    for entry in sorted(resources.files(PACKAGE).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            found[entry.name] = json.loads(entry.read_text(encoding="utf-8"))
    if not found:
        raise GrafanaError(f"no dashboards found in the {PACKAGE} package data (reinstall reach-otel)")
    return found


def with_datasource(model: dict[str, Any], datasource: str | None) -> dict[str, Any]:
    """The model with its ``datasource`` variable preselecting the data source named ``datasource``."""
    if not datasource:
        return model
    out: dict[str, Any] = json.loads(json.dumps(model))
    for variable in out.get("templating", {}).get("list", []):
        if variable.get("type") == "datasource":
            variable["current"] = {"selected": True, "text": datasource, "value": datasource}
    return out


def export_dashboards(directory: Path, datasource: str | None = None) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in load_dashboards().items():
        path = directory / name
        path.write_text(json.dumps(with_datasource(model, datasource), indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return written


class Grafana:
    """The few Grafana HTTP API calls we need; every failure becomes a GrafanaError."""

    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise GrafanaError(f"--grafana-url must be an http(s) URL, got {url!r}")
        self.headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        elif parts.username is not None:  # http://user:password@host for basic auth
            pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self.headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self.base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            raise GrafanaError(self._explain(exc.code, method, path, _message(exc))) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GrafanaError(f"cannot reach Grafana at {self.base}: {reason}") from None
        try:
            return json.loads(text) if text else None
        except ValueError:
            raise GrafanaError(f"{method} {self.base}{path} did not answer JSON: is this Grafana?") from None

    def _explain(self, status: int, method: str, path: str, message: str) -> str:
        if status == 401:
            return (
                f"Grafana at {self.base} rejected the credentials (401 Unauthorized): pass --token with "
                "a service account token (or user:password@ in the URL)"
            )
        if status == 403:
            return (
                f"Grafana at {self.base} refused {method} {path} (403 Forbidden): the token needs the "
                "Editor role to create folders and dashboards"
            )
        if status == 404:
            return (
                f"Grafana API not found: {method} {self.base}{path} answered 404; check --grafana-url "
                "(the Grafana root URL, e.g. http://127.0.0.1:3000)"
            )
        detail = f": {message}" if message else ""
        return f"Grafana answered {status} to {method} {self.base}{path}{detail}"

    def folder_uid(self, folder: str) -> str:
        """The uid of the folder titled (or with uid) ``folder``, created when missing."""
        for found in self.call("GET", f"{FOLDERS}?limit=1000") or []:
            if folder in (found.get("title"), found.get("uid")):
                return str(found["uid"])
        uid = _slug(folder)
        created = self.call("POST", FOLDERS, {"uid": uid, "title": folder})
        return str((created or {}).get("uid") or uid)

    def put_dashboard(self, model: dict[str, Any], folder_uid: str) -> dict[str, Any]:
        body = {
            "dashboard": {**model, "id": None},
            "folderUid": folder_uid,
            "overwrite": True,
            "message": "reach-otel dashboards import",
        }
        return dict(self.call("POST", DASHBOARDS_DB, body) or {})


def import_dashboards(
    url: str,
    token: str | None = None,
    folder: str = DEFAULT_FOLDER,
    datasource: str | None = None,
    timeout: float = 10.0,
) -> list[str]:
    """Create the folder if needed and import every dashboard (overwrite); their Grafana URLs."""
    grafana = Grafana(url, token, timeout)
    folder_uid = grafana.folder_uid(folder)
    urls = []
    for model in load_dashboards().values():
        answer = grafana.put_dashboard(with_datasource(model, datasource), folder_uid)
        urls.append(grafana.base + str(answer.get("url") or f"/d/{model['uid']}"))
    return urls


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read().decode("utf-8", "replace") or "{}")
    except (ValueError, OSError):
        return ""
    text = body.get("message", "") if isinstance(body, dict) else ""
    return " ".join(str(text).split())[:200]


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", title.lower()).strip("-")[:40] or DEFAULT_FOLDER


def _fail(message: str) -> int:
    print(f"reach-otel dashboards: {message}", file=sys.stderr)
    return 1


def _import(args: argparse.Namespace) -> int:
    if not args.grafana_url:
        return _fail("--grafana-url is required (or set GRAFANA_URL)")
    try:
        urls = import_dashboards(args.grafana_url, args.token, args.folder, args.datasource, args.timeout)
    except GrafanaError as exc:
        return _fail(str(exc))
    for url in urls:
        print(f"imported {url}")
    return 0


def _export(args: argparse.Namespace) -> int:
    try:
        written = export_dashboards(Path(args.dir), args.datasource)
    except (GrafanaError, OSError) as exc:
        return _fail(f"cannot export to {args.dir}: {exc}")
    for path in written:
        print(f"wrote {path}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``dashboards import|export`` to the ``reach-otel`` command line."""
    group = sub.add_parser("dashboards", help="import the Grafana dashboards, or export them to a directory")
    actions = group.add_subparsers(dest="dashboards_action", metavar="ACTION")

    def usage(_args: argparse.Namespace) -> int:
        group.print_help()
        return 2

    group.set_defaults(func=usage)
    imp = actions.add_parser("import", help="import into Grafana through its HTTP API (overwrites)")
    imp.add_argument(
        "--grafana-url", default=os.environ.get("GRAFANA_URL"), help="e.g. http://127.0.0.1:3000"
    )
    imp.add_argument("--token", default=os.environ.get("GRAFANA_TOKEN"), help="service account token")
    imp.add_argument("--folder", default=DEFAULT_FOLDER, help="folder title (created when missing)")
    imp.add_argument("--datasource", help="name of the Prometheus data source to preselect")
    imp.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    imp.set_defaults(func=_import)
    exp = actions.add_parser("export", help="write the dashboard JSON files to DIR (for file provisioning)")
    exp.add_argument("dir", metavar="DIR")
    exp.add_argument("--datasource", help="name of the Prometheus data source to preselect")
    exp.set_defaults(func=_export)


def run(argv: Sequence[str]) -> int:
    """``reach-otel dashboards ARGV`` on its own parser (tests; ``python -m`` style use)."""
    parser = argparse.ArgumentParser(prog="reach-otel")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["dashboards", *argv])
    return int(args.func(args))
