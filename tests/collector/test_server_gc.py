"""While the collector serves, the objects made while it was set up are frozen out of garbage
collections (a full collection would otherwise walk them all, holding up every request, a trace
lookup too); they are handed back once it stops."""

from __future__ import annotations

import gc
import io
from dataclasses import replace
from pathlib import Path

import pytest
import uvicorn

from reach_collector import server
from reach_collector.config import Settings


def test_startup_objects_are_frozen_while_serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[int] = []

    def run(self: uvicorn.Server, sockets: object = None) -> None:  # serving: how much is frozen
        frozen.append(gc.get_freeze_count())

    monkeypatch.setattr(uvicorn.Server, "run", run)
    before = gc.get_freeze_count()
    server.serve(
        replace(Settings(), db=str(tmp_path / "spans.duckdb"), port=0, grpc_port=0), out=io.StringIO()
    )
    assert len(frozen) == 1
    assert frozen[0] > before + 10_000  # the modules, the app, its routes and models
    assert gc.get_freeze_count() == before  # handed back once the collector stopped
