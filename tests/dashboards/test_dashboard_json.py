"""Lint of the committed dashboard JSON: valid, stable unique uids, datasource only through the
`${datasource}` variable, every panel explained and typed, every variable defined; the committed
copies equal a fresh build."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from typing import Any

import pytest
import yaml
from dashboard_helpers import DASHBOARDS, GRAFANA_DIR, load_dashboards, panels

from reach_otel.dashboards_cli import load_dashboards as packaged_dashboards

UIDS = {"reach-overview.json": "reach-overview", "reach-multi-agent.json": "reach-multi-agent"}
UIDS["reach-collector.json"] = "reach-collector"
VARIABLE = re.compile(r"\$\{([A-Za-z_]\w*)(?:[:.][^}]*)?\}|\$([A-Za-z_]\w*)|\[\[([A-Za-z_]\w*)\]\]")
BUILTIN_DATASOURCES = {"-- Grafana --", "grafana"}

DASHBOARD_FILES = load_dashboards()


def _datasources(node: Any) -> list[Any]:
    """Every value of a "datasource" key anywhere in the model."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource":
                found.append(value)
            found.extend(_datasources(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_datasources(item))
    return found


def test_uids_are_stable_and_unique() -> None:
    assert {name: d["uid"] for name, d in DASHBOARD_FILES.items()} == UIDS
    assert len({d["uid"] for d in DASHBOARD_FILES.values()}) == len(DASHBOARD_FILES)


@pytest.mark.parametrize("name", sorted(DASHBOARD_FILES))
def test_dashboard_model(name: str) -> None:
    dashboard = DASHBOARD_FILES[name]
    json.loads((GRAFANA_DIR / name).read_text(encoding="utf-8"))  # valid JSON
    assert dashboard["schemaVersion"] >= 39
    assert dashboard["title"] and dashboard["description"]
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels(dashboard):
        where = f"{name}: {panel.get('title')!r}"
        assert panel.get("title"), where
        assert len(panel.get("description", "")) > 40, f"{where}: say what it means and when to worry"
        defaults = panel["fieldConfig"]["defaults"]
        assert defaults.get("unit"), f"{where}: no unit"
        assert defaults["thresholds"]["steps"], f"{where}: no thresholds"
        assert panel.get("targets"), f"{where}: no target"
        for target in panel["targets"]:
            assert target["expr"].strip() and target["refId"], where


@pytest.mark.parametrize("name", sorted(DASHBOARD_FILES))
def test_no_hard_coded_datasource(name: str) -> None:
    dashboard = DASHBOARD_FILES[name]
    (variable,) = [v for v in dashboard["templating"]["list"] if v["name"] == "datasource"]
    assert (variable["type"], variable["query"]) == ("datasource", "prometheus")
    for ds in _datasources(dashboard):
        uid = ds.get("uid") if isinstance(ds, dict) else ds
        if isinstance(ds, dict) and ds.get("type") == "grafana":
            assert uid in BUILTIN_DATASOURCES
            continue
        assert uid == "${datasource}", f"{name}: hard-coded datasource {ds!r}"


@pytest.mark.parametrize("name", sorted(DASHBOARD_FILES))
def test_every_variable_used_is_defined(name: str) -> None:
    dashboard = DASHBOARD_FILES[name]
    defined = {v["name"] for v in dashboard["templating"]["list"]}
    used = set()
    for match in VARIABLE.finditer(json.dumps(dashboard)):
        used.add(next(g for g in match.groups() if g))
    used = {u for u in used if not u.startswith("__")}  # Grafana's built-ins ($__rate_interval, ...)
    assert used <= defined, f"undefined: {sorted(used - defined)}"
    if name != "reach-collector.json":
        assert "agent" in used and "agent" in defined


def test_agent_panels_link_to_the_trace_search() -> None:
    linked = 0
    for dashboard in DASHBOARD_FILES.values():
        for panel in panels(dashboard):
            by_agent = any("{{agent}}" in t.get("legendFormat", "") for t in panel["targets"])
            links = panel["fieldConfig"]["defaults"].get("links", [])
            if by_agent:
                urls = [link["url"] for link in links]
                # The collector's web console and its JSON search, at the `collector_url` variable.
                assert "${collector_url}/ui/traces?agent=${__field.labels.agent}" in " ".join(urls), panel
                assert any("/api/traces?agent=${__field.labels.agent}" in u for u in urls), panel["title"]
                linked += 1
    assert linked >= 8


@pytest.mark.parametrize("name", sorted(DASHBOARD_FILES))
def test_collector_url_is_a_variable_of_every_dashboard(name: str) -> None:
    variables = {v["name"]: v for v in DASHBOARD_FILES[name]["templating"]["list"]}
    assert variables["collector_url"]["type"] == "textbox"
    links = {link.get("title"): link for link in DASHBOARD_FILES[name]["links"]}
    assert links["Trace console"]["url"] == "${collector_url}/ui/traces"


def test_cost_comes_from_the_collector_price_table() -> None:
    """No price text boxes: cost panels read reach_agent_cost_usd_total (priced at ingest)."""
    cost_panels = 0
    for dashboard in DASHBOARD_FILES.values():
        names = {v["name"] for v in dashboard["templating"]["list"]}
        assert not names & {"input_price", "output_price"}
        for panel in panels(dashboard):
            if panel["fieldConfig"]["defaults"]["unit"] == "currencyUSD":
                cost_panels += 1
                for target in panel["targets"]:
                    assert "reach_agent_cost_usd_total" in target["expr"]
                    assert "reach_agent_tokens_total" not in target["expr"]
    assert cost_panels == 2


def test_store_gauges_are_never_summed_over_collectors() -> None:
    """Counters add up over N collectors (sum); the window gauges repeat the shared store's value."""
    gauges = ("reach_agent_success_ratio", "reach_agent_latency_p99_seconds", "reach_agent_last_heartbeat")
    doc = yaml.safe_load((DASHBOARDS / "prometheus" / "reach-rules.yml").read_text())
    exprs = [rule["expr"] for group in doc["groups"] for rule in group["rules"]]
    exprs += [t["expr"] for d in DASHBOARD_FILES.values() for p in panels(d) for t in p["targets"]]
    for expr in exprs:
        for gauge in gauges:
            for match in re.finditer(gauge, expr):
                before = expr[: match.start()]
                assert re.search(r"(max|min) by \([^)]*\) \($|max\($", before), expr
                assert not before.rstrip().endswith("sum("), expr


def test_committed_copies_equal_a_fresh_build() -> None:
    spec = importlib.util.spec_from_file_location("reach_dashboards_build", DASHBOARDS / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = build
    try:
        spec.loader.exec_module(build)
        fresh = build.build_all()
        texts = {name: build.dump(model) for name, model in fresh.items()}
    finally:  # the generator's modules have generic names: do not leave them importable
        for module in (spec.name, "build", "promql", "overview", "multi_agent", "collector_health"):
            sys.modules.pop(module, None)
    assert DASHBOARD_FILES == packaged_dashboards() == fresh, "run: python dashboards/build.py"
    for name, text in texts.items():
        assert (GRAFANA_DIR / name).read_text(encoding="utf-8") == text
