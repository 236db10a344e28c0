"""The console's static files, without a browser: the names it reads are reach_otel.semconv's, the
assets the shell loads exist and are packaged, and no module writes markup from a string."""

from __future__ import annotations

import re
from pathlib import Path

import reach_collector
from reach_collector.api.ui import ASSETS_DIR, PAGES
from reach_otel import semconv as sc

UI = Path(reach_collector.__file__).resolve().parent / "ui"
CONSTANT = re.compile(r'^export const ([A-Z0-9_]+) = "([^"]*)";$', re.M)


def test_names_js_mirrors_semconv() -> None:
    names = CONSTANT.findall((UI / "js" / "names.js").read_text())
    assert len(names) > 30
    for name, value in names:
        assert getattr(sc, name) == value, name
    lists = dict(
        re.findall(r"^export const ([A-Z_]+) = \[([^\]]*)\];$", (UI / "js" / "names.js").read_text(), re.M)
    )
    assert [getattr(sc, n.strip()) for n in lists["LLM_OPERATIONS"].split(",")] == list(sc.LLM_OPERATIONS)


def test_the_shell_loads_only_files_that_exist() -> None:
    assert ASSETS_DIR == UI
    shell = (UI / "index.html").read_text()
    for ref in re.findall(r'(?:src|href)="(/ui/[^"]+)"', shell):
        if PAGES.match(ref.removeprefix("/ui/")):
            continue  # a nav link to a page
        assert (UI / ref.removeprefix("/ui/")).is_file(), ref
    for module in UI.rglob("*.js"):
        for ref in re.findall(r'from "(\.{1,2}/[^"]+)"', module.read_text()):
            assert (module.parent / ref).resolve().is_file(), (module.name, ref)


def test_no_module_parses_a_string_as_markup() -> None:
    sinks = re.compile(
        r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\("
    )
    for module in UI.rglob("*.js"):
        assert not sinks.search(module.read_text()), module.name


def test_every_asset_is_package_data() -> None:
    """pip installs the console: each file the router serves matches a package-data pattern."""
    import fnmatch

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    data = pyproject.split("[tool.setuptools.package-data]", 1)[1]
    line = re.search(r"^reach_collector = \[(.*)\]$", data, re.M)
    assert line is not None
    globs = re.findall(r'"([^"]+)"', line.group(1))
    served = [p.relative_to(UI.parent).as_posix() for p in UI.rglob("*") if p.is_file()]
    assert served
    for name in served:
        assert any(fnmatch.fnmatchcase(name, g) and name.count("/") == g.count("/") for g in globs), name


def test_the_vendored_layout_library_keeps_its_license() -> None:
    """dagre (MIT) lays the agent graphs out: shipped as a file of the package, its notice kept."""
    dagre = (UI / "js" / "vendor" / "dagre.js").read_text()
    head = dagre[:2000]
    assert head.startswith("/*! @license @dagrejs/dagre")
    assert "Copyright (c) 2012-2014 Chris Pettitt" in head and "Permission is hereby granted" in head
    graph = (UI / "js" / "trace" / "graph.js").read_text()
    assert 'import dagre from "../vendor/dagre.js";' in graph
    assert '<link rel="modulepreload" href="/ui/js/vendor/dagre.js">' in (UI / "index.html").read_text()
