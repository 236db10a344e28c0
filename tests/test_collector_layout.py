"""The collector's rooms keep their arrows (SPEC §1; the README's layout section): the import graph
of ``collector/reach_collector`` — every import, a function's lazy ones included — has no cycle;
``store/`` imports nothing from the rooms built on it; and SQL is written only where the stores
and the queries live, never in a router, a CLI command or the Prometheus exposition."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "collector"
PACKAGE = ROOT / "reach_collector"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """Every absolute import of a file, a function's lazy ones included: (the module named, the
    names that may be modules too: ``from a import b`` may import ``a.b``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [f"{node.module}.{a.name}" for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for module, submodules in _imports(path):
            edges[name].update(t for t in (module, *submodules) if t in modules and t != name)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in list(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_collector_has_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_store_imports_none_of_the_rooms_built_on_it() -> None:
    above = ("alerting", "query", "api", "cli", "exposition", "ingest", "demo")
    up = [
        (name, target)
        for name, targets in _graph().items()
        if name.startswith("reach_collector.store")
        for target in targets
        if target.split(".")[1] in above
    ]
    assert up == []


def test_no_router_command_or_exposition_writes_sql() -> None:
    sql = re.compile(r"\b(SELECT|INSERT INTO|DELETE FROM|CREATE TABLE)\b")
    rooms = ("api", "cli", "exposition")
    writers = [
        str(path.relative_to(ROOT))
        for room in rooms
        for path in (PACKAGE / room).rglob("*.py")
        if sql.search(path.read_text())
    ]
    assert writers == []


# -- the rooms and their arrows (the README's "Repository layout" lists them) ---------------------
SETTINGS = {"config", "config_values", "limits", "sections"}
WIRING = {"app", "server", "connections", "retention", "alert_loop"}
README = Path(__file__).resolve().parents[1] / "README.md"


def _room(module: str) -> str:
    """The room of a module: its folder under the package, ``settings`` for the configuration's
    modules, ``wiring`` for the ones that start and connect the rest (``__main__`` is the CLI's)."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "wiring"
    if top in SETTINGS:
        return "settings"
    if top in WIRING or top == "reach_collector":
        return "wiring"
    return "cli" if top == "__main__" else top


def _arrows() -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {_room(m): set() for m in _modules()}
    for name, targets in _graph().items():
        rooms[_room(name)].update(_room(t) for t in targets if _room(t) != _room(name))
    return rooms


def _documented() -> dict[str, set[str]]:
    """The README's block of arrows: one line a room, ``room → what it imports`` (``—``: nothing)."""
    text = README.read_text()
    block = text[text.index("<!-- rooms -->") : text.index("<!-- /rooms -->")]
    found = {}
    for line in block.splitlines():
        if "→" in line:
            room, _, targets = line.strip().partition("→")
            found[room.strip()] = {t.strip() for t in targets.split(",") if t.strip() not in ("", "—")}
    return found


def test_every_import_of_the_collector_leads_to_a_module() -> None:
    """An import graph of the collector is whole: every ``reach_collector`` import names a module
    (or a name in one) that exists, so no room looks as if it imported nothing."""
    modules = _modules()
    missing = [
        (name, module)
        for name, path in modules.items()
        for module, _ in _imports(path)
        if module.startswith("reach_collector") and module not in modules
    ]
    assert missing == []


def test_the_rooms_arrows_go_one_way_and_are_the_readme_s() -> None:
    arrows = _arrows()
    assert _cycles(arrows) == [], arrows
    assert _documented() == arrows
