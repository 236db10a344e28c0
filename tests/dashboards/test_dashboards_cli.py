"""`reach-otel dashboards import|export` against a local HTTP server standing in for Grafana: the
requests it receives (method, path, auth, body shape) and one-line errors for 401/404/unreachable."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from dashboard_helpers import load_dashboards

from reach_otel.dashboards_cli import load_dashboards as packaged_dashboards
from reach_otel.dashboards_cli import run


class FakeGrafana:
    """Answers the folder and dashboard API; ``status`` forces every answer (401, 404, ...)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.folders: list[dict[str, Any]] = []
        self.status: int | None = None
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "auth": self.headers.get("Authorization"),
                        "content_type": self.headers.get("Content-Type"),
                        "body": json.loads(raw) if raw else None,
                    }
                )
                if fake.status is not None:
                    self._answer(fake.status, {"message": "forced"})
                elif self.command == "GET" and self.path.startswith("/api/folders"):
                    self._answer(200, fake.folders)
                elif self.command == "POST" and self.path == "/api/folders":
                    body = json.loads(raw)
                    fake.folders.append({"id": 7, "uid": body["uid"], "title": body["title"]})
                    self._answer(200, fake.folders[-1])
                elif self.command == "POST" and self.path == "/api/dashboards/db":
                    uid = json.loads(raw)["dashboard"]["uid"]
                    self._answer(200, {"status": "success", "uid": uid, "url": f"/d/{uid}/x", "version": 1})
                else:
                    self._answer(404, {"message": "Not found"})

            do_GET = do_POST = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def grafana() -> Iterator[FakeGrafana]:
    fake = FakeGrafana()
    yield fake
    fake.close()


def test_import_creates_the_folder_and_posts_every_dashboard(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(["import", "--grafana-url", grafana.url + "/", "--token", "glsa_T", "--folder", "Agents"])
    assert code == 0, capsys.readouterr().err
    requests = grafana.requests
    assert all(r["auth"] == "Bearer glsa_T" for r in requests)
    assert (requests[0]["method"], requests[0]["path"]) == ("GET", "/api/folders?limit=1000")
    assert (requests[1]["method"], requests[1]["path"]) == ("POST", "/api/folders")
    assert requests[1]["body"] == {"uid": "agents", "title": "Agents"}
    posts = requests[2:]
    expected = packaged_dashboards()
    assert len(posts) == len(expected) == 3
    for post, model in zip(posts, expected.values(), strict=True):
        assert (post["method"], post["path"], post["content_type"]) == (
            "POST",
            "/api/dashboards/db",
            "application/json",
        )
        body = post["body"]
        assert body["overwrite"] is True and body["folderUid"] == "agents"
        assert body["dashboard"]["uid"] == model["uid"] and body["dashboard"]["id"] is None
        assert body["dashboard"]["panels"] == model["panels"]
    out = capsys.readouterr().out.splitlines()
    assert out == [f"imported {grafana.url}/d/{m['uid']}/x" for m in expected.values()]


def test_import_reuses_an_existing_folder_and_sets_the_datasource(grafana: FakeGrafana) -> None:
    grafana.folders = [{"id": 3, "uid": "obs", "title": "reach-otel"}]
    assert run(["import", "--grafana-url", grafana.url, "--datasource", "Prom EU"]) == 0
    assert [r["method"] for r in grafana.requests] == ["GET", "POST", "POST", "POST"]
    assert grafana.requests[0]["auth"] is None
    for post in grafana.requests[1:]:
        assert post["body"]["folderUid"] == "obs"
        (ds,) = [v for v in post["body"]["dashboard"]["templating"]["list"] if v["type"] == "datasource"]
        assert ds["current"]["text"] == ds["current"]["value"] == "Prom EU"


def test_basic_auth_from_the_url(grafana: FakeGrafana) -> None:
    url = grafana.url.replace("http://", "http://admin:s3cret@")
    assert run(["import", "--grafana-url", url]) == 0
    assert grafana.requests[0]["auth"] == "Basic YWRtaW46czNjcmV0"


@pytest.mark.parametrize(
    ("status", "needle"),
    [
        (401, "rejected the credentials (401"),
        (403, "(403 Forbidden)"),
        (404, "answered 404"),
        (500, "answered 500"),
    ],
)
def test_http_errors_are_one_line(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str], status: int, needle: str
) -> None:
    grafana.status = status
    assert run(["import", "--grafana-url", grafana.url, "--token", "bad"]) == 1
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unreachable_grafana_is_one_line_without_traceback(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = "import sys; from reach_otel.dashboards_cli import run; sys.exit(run(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "import", "--grafana-url", f"http://127.0.0.1:{port}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().startswith(
        f"reach-otel dashboards: cannot reach Grafana at http://127.0.0.1:{port}"
    )
    assert len(done.stderr.strip().splitlines()) == 1


def test_export_writes_the_packaged_dashboards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["export", str(tmp_path / "out")]) == 0
    assert load_dashboards(tmp_path / "out") == packaged_dashboards()
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_works_without_the_collector_extra() -> None:
    code = (
        "import sys\n"
        "for name in ('fastapi', 'duckdb', 'pyarrow', 'prometheus_client', 'reach_collector', 'yaml'):\n"
        "    sys.modules[name] = None\n"
        "from reach_otel.dashboards_cli import load_dashboards\n"
        "print(len(load_dashboards()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"


def test_the_reach_otel_command_has_the_dashboards_group(tmp_path: Path) -> None:
    from reach_otel.cli import main

    assert main(["dashboards", "export", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(packaged_dashboards())
