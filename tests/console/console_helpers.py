"""Helpers for the web console tests: a handle on a running collector and page waits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from cdp import Page

from reach_collector.store.duckdb_store import DuckDBStore


@dataclass
class Console:
    """A running collector: its URL and app (``app.state.alerts`` for a manual tick)."""

    url: str
    app: Any
    store: DuckDBStore

    def api(self, path: str, token: str | None = None, **params: Any) -> Any:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        response = httpx.get(self.url + path, params=params, headers=headers, timeout=30)
        response.raise_for_status()
        return response.json()


def goto_ready(page: Page, url: str, timeout: float = 20) -> None:
    """Open a console URL and wait until its page has rendered (or the sign-in shows)."""
    page.goto(url)
    page.wait_for(
        "document.body.dataset.ready === location.pathname || !!document.getElementById('signin')", timeout
    )
