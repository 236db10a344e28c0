"""The collector serves no page that loads from another host: FastAPI's /docs and /redoc (Swagger
UI and ReDoc from a CDN) are off, and the OpenAPI document stays at /openapi.json behind the query
token. Checked on a real collector on loopback, with every HTML page it serves scanned."""

from __future__ import annotations

import re
from collections.abc import Callable

from collector_helpers import RunningCollector

from reach_collector.config import Settings

TOKEN = {"authorization": "Bearer q-docs-secret"}
_EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|cdn""", re.I)


def test_no_page_loads_from_another_host(start_collector: Callable[..., RunningCollector]) -> None:
    collector = start_collector(Settings(query_token="q-docs-secret"))
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        answer = collector.get(path, headers=TOKEN)
        assert answer.status_code == 404, path
        assert not _EXTERNAL.search(answer.text), path

    refused = collector.get("/openapi.json")
    assert refused.status_code == 401
    spec = collector.get("/openapi.json", headers=TOKEN)
    assert spec.status_code == 200
    paths = spec.json()["paths"]
    assert "/api/traces" in paths and "/docs" not in paths

    pages = [
        "/",
        "/ui/traces",
        "/ui/alerts",
        *(p for p, ops in paths.items() if "get" in ops and "{" not in p),
    ]
    html = 0
    for path in pages:
        answer = collector.get(path, headers=TOKEN, follow_redirects=True)
        if "html" in answer.headers.get("content-type", ""):
            html += 1
            assert not _EXTERNAL.search(answer.text), path
    assert html >= 3  # the console's pages, which are offline by design (SPEC §14)
