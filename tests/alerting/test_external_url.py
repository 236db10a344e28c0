"""The alerts' externalURL names where the collector really listens (port 0, IPv6 literals)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from reach_collector import app as app_module
from reach_collector import server
from reach_collector.alerting.evaluation.engine import build_engine
from reach_collector.config import Settings


class _Seen(Exception):
    pass


def test_port_zero_becomes_the_bound_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def capture(settings: Settings, **_: Any) -> None:
        seen["settings"] = settings
        raise _Seen

    monkeypatch.setattr(app_module, "create_app", capture)
    settings = Settings(host="127.0.0.1", port=0, db=str(tmp_path / "t.duckdb"), decode_workers=0)
    with pytest.raises(_Seen):
        server.serve(settings, out=io.StringIO())
    assert seen["settings"].port > 0


def test_ipv6_hosts_are_bracketed() -> None:
    engine = build_engine(Settings(host="::1", port=4999), data=None)  # type: ignore[arg-type]
    assert engine.pipeline.external_url == "http://[::1]:4999"
    engine = build_engine(Settings(host="127.0.0.1", port=4999), data=None)  # type: ignore[arg-type]
    assert engine.pipeline.external_url == "http://127.0.0.1:4999"
