"""Fixtures for the web console tests: one headless Chromium per test module (Debian's package,
installed when missing), a fresh tab per test, and real collectors on loopback over DuckDB files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from cdp import Browser, Page, ensure_chromium
from console_helpers import Console
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser(ensure_chromium()) as b:
        yield b


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    tab = browser.page()
    yield tab
    tab.close()


@pytest.fixture(scope="module")
def start_console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Console]]:
    running: list[tuple[ServerThread, DuckDBStore]] = []

    def start(settings: Settings | None = None, **app_kwargs: Any) -> Console:
        db = tmp_path_factory.mktemp("console") / "traces.duckdb"
        store = DuckDBStore(db)
        app = create_app(
            replace(settings or Settings(), db=str(db), retention_s=0), store=store, **app_kwargs
        )
        server = ServerThread(app).start()
        running.append((server, store))
        return Console(server.url, app, store)

    yield start
    for server, store in running:
        server.stop()
        store.close()
