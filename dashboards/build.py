"""Generate the Grafana dashboards (`python dashboards/build.py`): one source, two committed copies.

The panels live in `overview.py`, `multi_agent.py` and `collector_health.py` (PromQL pieces in
`promql.py`); this module owns the Grafana JSON model (panels,
variables, layout, data links) and writes every dashboard to `reach_otel/_dashboards/` (package
data that `reach-otel dashboards import|export` reads) and to `dashboards/grafana/` (for people who
import by hand or provision from a checkout). A test checks that both copies equal a fresh build.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
PACKAGE_DIR: Final = HERE.parent / "reach_otel" / "_dashboards"
GRAFANA_DIR: Final = HERE / "grafana"
SCHEMA_VERSION: Final = 39
DATASOURCE: Final = {"type": "prometheus", "uid": "${datasource}"}
# Where the traces live: the collector's web console (/ui/traces, each trace at /ui/trace/{id}) and
# its JSON search, through the `collector_url` variable so each site points at its own collector.
_TRACE_QUERY: Final = "agent=${__field.labels.agent}&since=${__from:date:iso}&until=${__to:date:iso}"
TRACE_CONSOLE: Final = "${collector_url}/ui/traces?" + _TRACE_QUERY
TRACE_SEARCH: Final = "${collector_url}/api/traces?" + _TRACE_QUERY + "&limit=100"
TEMPO_SEARCH: Final = "${collector_url}/tempo/api/search?tags=gen_ai.agent.name%3D${__field.labels.agent}"
WIDTH: Final = 24

Thresholds = Sequence[tuple[str, float | None]]


@dataclass(frozen=True)
class Panel:
    """One panel: a Grafana visualisation over one or more PromQL expressions."""

    kind: str  # timeseries | stat | bargauge | table | gauge
    title: str
    description: str
    exprs: Sequence[tuple[str, str]]  # (PromQL, legend)
    unit: str
    thresholds: Thresholds = (("green", None),)
    width: int = 12
    height: int = 8
    agent_links: bool = False  # data links to the collector's trace search, by agent label
    errors_link: bool = False  # … and a second link filtered to failed traces
    instant: bool = False
    min: float | None = None
    max: float | None = None
    stack: bool = False
    heatmap_format: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    description: str
    panels: Sequence[Panel]
    with_agent: bool = True
    extra_variables: Sequence[dict[str, Any]] = ()


def datasource_variable() -> dict[str, Any]:
    return {
        "name": "datasource",
        "label": "Prometheus",
        "type": "datasource",
        "query": "prometheus",
        "refresh": 1,
        "regex": "",
        "hide": 0,
        "current": {},
        "description": "The Prometheus that scrapes the reach-otel collector's /metrics.",
    }


def agent_variable() -> dict[str, Any]:
    query = 'label_values(reach_agent_calls_total{operation="invoke_agent"}, agent)'
    return {
        "name": "agent",
        "label": "Agent",
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": "reach-agent-values", "qryType": 1},
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "sort": 1,
        "hide": 0,
        "regex": "",
        "description": "gen_ai.agent.name of the agents to show (All = every agent).",
    }


def textbox(name: str, label: str, value: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "label": label,
        "type": "textbox",
        "query": value,
        "current": {"selected": False, "text": value, "value": value},
        "options": [{"selected": True, "text": value, "value": value}],
        "hide": 0,
        "description": description,
    }


COLLECTOR_URL_VARIABLE: Final = textbox(
    "collector_url",
    "Collector URL",
    "http://127.0.0.1:4318",
    "Base URL of the reach-otel collector, used by the data links to its web console and trace search.",
)


def _links(panel: Panel) -> list[dict[str, Any]]:
    links: list[dict[str, Any]] = []
    if panel.agent_links:
        links.append(
            {"title": "Traces of ${__field.labels.agent}", "url": TRACE_CONSOLE, "targetBlank": True}
        )
        links.append(
            {
                "title": "Trace search of ${__field.labels.agent} (JSON)",
                "url": TRACE_SEARCH,
                "targetBlank": True,
            }
        )
        links.append(
            {"title": "Tempo search for ${__field.labels.agent}", "url": TEMPO_SEARCH, "targetBlank": True}
        )
    if panel.errors_link:
        links.append(
            {
                "title": "Failed traces of ${__field.labels.agent}",
                "url": TRACE_CONSOLE + "&status=error",
                "targetBlank": True,
            }
        )
    return links


def _options(panel: Panel) -> dict[str, Any]:
    if panel.kind == "timeseries":
        return {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    if panel.kind in ("stat", "gauge", "bargauge"):
        options: dict[str, Any] = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "orientation": "horizontal" if panel.kind == "bargauge" else "auto",
            "textMode": "value_and_name",
            "colorMode": "background" if panel.kind == "stat" else "value",
            "graphMode": "none",
            "justifyMode": "auto",
        }
        if panel.kind == "bargauge":
            options["displayMode"] = "gradient"
            options["showUnfilled"] = True
        return options
    return {"showHeader": True, "cellHeight": "sm", "footer": {"show": False, "reducer": ["sum"]}}


def render_panel(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "unit": panel.unit,
        "color": {"mode": "thresholds" if panel.kind != "timeseries" else "palette-classic"},
        "thresholds": {"mode": "absolute", "steps": [{"color": c, "value": v} for c, v in panel.thresholds]},
        "links": _links(panel),
        "mappings": [],
    }
    if panel.min is not None:
        defaults["min"] = panel.min
    if panel.max is not None:
        defaults["max"] = panel.max
    if panel.kind == "timeseries":
        defaults["custom"] = {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 20 if panel.stack else 10,
            "showPoints": "never",
            "spanNulls": False,
            "stacking": {"mode": "normal" if panel.stack else "none", "group": "A"},
            "thresholdsStyle": {"mode": "line" if len(panel.thresholds) > 1 else "off"},
        }
    targets = []
    for index, (expr, legend) in enumerate(panel.exprs):
        targets.append(
            {
                "refId": chr(ord("A") + index),
                "datasource": DATASOURCE,
                "expr": expr,
                "legendFormat": legend,
                "range": not panel.instant,
                "instant": panel.instant,
                "format": "heatmap"
                if panel.heatmap_format
                else ("table" if panel.kind in ("table", "nodeGraph") else "time_series"),
                "editorMode": "code",
            }
        )
    return {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": panel.width, "h": panel.height},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": _options(panel),
        "targets": targets,
        **panel.extra,
    }


def render(dashboard: Dashboard) -> dict[str, Any]:
    """The Grafana dashboard model; panels flow left to right, wrapping at 24 columns."""
    panels = []
    x = y = row_height = 0
    for panel_id, panel in enumerate(dashboard.panels, start=1):
        if x + panel.width > WIDTH:
            x, y, row_height = 0, y + row_height, 0
        panels.append(render_panel(panel, panel_id, x, y))
        x += panel.width
        row_height = max(row_height, panel.height)
    variables = [datasource_variable()]
    if dashboard.with_agent:
        variables.append(agent_variable())
    variables.append(COLLECTOR_URL_VARIABLE)
    variables.extend(dashboard.extra_variables)
    return {
        "uid": dashboard.uid,
        "title": dashboard.title,
        "description": dashboard.description,
        "tags": ["reach-otel"],
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "liveNow": False,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "fiscalYearStartMonth": 0,
        "weekStart": "",
        "annotations": {
            "list": [
                {
                    "builtIn": 1,
                    "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                    "enable": True,
                    "hide": True,
                    "iconColor": "rgba(0, 211, 255, 1)",
                    "name": "Annotations & Alerts",
                    "type": "dashboard",
                }
            ]
        },
        "links": [
            {
                "title": "reach-otel",
                "type": "dashboards",
                "tags": ["reach-otel"],
                "asDropdown": True,
                "includeVars": True,
                "keepTime": True,
            },
            {
                "title": "Trace console",
                "type": "link",
                "url": "${collector_url}/ui/traces",
                "targetBlank": True,
                "tooltip": "The collector's web console: traces, agents, alerts",
            },
        ],
        "templating": {"list": variables},
        "panels": panels,
    }


def build_all() -> dict[str, dict[str, Any]]:
    """File name → dashboard model, for every dashboard."""
    sys.path.insert(0, str(HERE))
    try:
        import collector_health
        import multi_agent
        import overview
    finally:
        sys.path.remove(str(HERE))
    dashboards = (overview.OVERVIEW, multi_agent.MULTI_AGENT, collector_health.COLLECTOR)
    return {f"{d.uid}.json": render(d) for d in dashboards}


def dump(model: dict[str, Any]) -> str:
    return json.dumps(model, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    built = build_all()
    for target in (PACKAGE_DIR, GRAFANA_DIR):
        target.mkdir(parents=True, exist_ok=True)
        for stale in target.glob("*.json"):
            if stale.name not in built:
                stale.unlink()
        for name, model in built.items():
            (target / name).write_text(dump(model), encoding="utf-8")
    print(f"wrote {len(built)} dashboards to {GRAFANA_DIR.name}/ and reach_otel/_dashboards/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
