"""The shell names every module of the console for preloading, so the browser fetches them at once
rather than one import level at a time (the trace page's boot, SPEC §7's time to a usable view)."""

from __future__ import annotations

import re
from pathlib import Path

import reach_collector

UI = Path(reach_collector.__file__).resolve().parent / "ui"


def test_every_module_is_preloaded() -> None:
    shell = (UI / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="/ui/([^"]+)">', shell))
    modules = {p.relative_to(UI).as_posix() for p in (UI / "js").rglob("*.js")}
    assert preloaded == modules - {"js/app.js"}
    assert '<script type="module" src="/ui/js/app.js"></script>' in shell
