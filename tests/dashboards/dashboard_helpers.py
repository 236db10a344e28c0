"""Helpers for the dashboards tests: the Prometheus tools (Debian packages, installed when
missing), a collector with the Tempo router on loopback, and dashboard JSON walking."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from debian_packages import ensure_installed
from servers import ServerThread

from reach_collector.app import create_app
from reach_collector.config import Settings
from reach_collector.store.duckdb_store import DuckDBStore

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "dashboards"
GRAFANA_DIR = DASHBOARDS / "grafana"
PACKAGES = ("prometheus", "prometheus-alertmanager")


@dataclass(frozen=True)
class PromTools:
    promtool: str
    amtool: str
    prometheus: str
    alertmanager: str


def _find() -> PromTools | None:
    found = {
        "promtool": shutil.which("promtool"),
        "amtool": shutil.which("amtool"),
        "prometheus": shutil.which("prometheus"),
        # Debian names the Alertmanager binary after its package.
        "alertmanager": shutil.which("alertmanager") or shutil.which("prometheus-alertmanager"),
    }
    if all(found.values()):
        return PromTools(**{k: str(v) for k, v in found.items()})
    return None


def ensure_prometheus_tools() -> PromTools:
    """The tools, installing Debian's packages first when they are missing and we are root."""
    return ensure_installed("promtool/amtool/prometheus/alertmanager", _find, PACKAGES, timeout=900)


@dataclass
class TestCollector:
    url: str
    store: DuckDBStore
    app: Any
    server: ServerThread
    closers: list[Any] = field(default_factory=list)

    def close(self) -> None:
        self.server.stop()
        self.store.close()


def start_test_collector(db: Path, **settings: Any) -> TestCollector:
    """create_app over a DuckDB file in tmp: it serves /metrics and the Tempo API itself."""
    store = DuckDBStore(db)
    app = create_app(replace(Settings(db=str(db)), retention_s=0, **settings), store=store)
    server = ServerThread(app).start()
    return TestCollector(server.url, store, app, server)


# --- dashboard JSON ------------------------------------------------------------------------------
def load_dashboards(directory: Path = GRAFANA_DIR) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))}


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def substitute(expr: str, variables: dict[str, str]) -> str:
    """Grafana's variables → concrete values, longest names first ($__rate_interval before $__range)."""
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    return expr


# --- Prometheus's HTTP API -------------------------------------------------------------------------
def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def query(prometheus: str, expr: str) -> dict[str, Any]:
    """An instant query at now through Prometheus's HTTP API (a parse error comes back as JSON)."""
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode(
        {"query": expr, "time": f"{time.time():.3f}"}
    )
    try:
        return dict(get_json(url))
    except urllib.error.HTTPError as exc:  # 400 bad_data: the expression does not parse
        return dict(json.loads(exc.read() or b"{}") or {"status": "error", "error": str(exc)})


def numbers(result: dict[str, Any]) -> list[float]:
    """The values of an instant query's answer."""
    data = result["data"]
    if data["resultType"] == "scalar":
        return [float(data["result"][1])]
    return [float(sample["value"][1]) for sample in data["result"]]


def start_prometheus(
    binary: str,
    tmp_path: Path,
    port: int,
    target: str | Sequence[str],
    rule_files: tuple[str, ...],
    procs: list[Any],
) -> str:
    """Start Prometheus on ``port`` scraping ``target`` (one collector or several, one job) and
    evaluating ``rule_files`` (names under dashboards/prometheus/) every second; the process is
    appended to ``procs``. Returns its URL once ready."""
    targets = [target] if isinstance(target, str) else list(target)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(  # JSON is YAML
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(DASHBOARDS / "prometheus" / name) for name in rule_files],
                "scrape_configs": [{"job_name": "reach-collector", "static_configs": [{"targets": targets}]}],
            }
        )
    )
    log = tmp_path / "prometheus.log"
    procs.append(
        subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/-/ready", timeout=1).read()
            return url
        except OSError:
            if time.monotonic() > deadline or procs[-1].poll() is not None:
                raise RuntimeError(log.read_text()[-2000:]) from None
            time.sleep(0.2)


def stop_processes(procs: list[Any]) -> None:
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
