"""Where a page points, under the collector's external URL: ``generatorURL`` (the rule's data over
the rule's window), the alert's failing traces (in the web console and in the search API) and the
URL that acknowledges it. They travel as annotations, where Alertmanager receivers look for links.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final
from urllib.parse import urlencode

from reach_collector.alerting.evaluation.state import Alert
from reach_collector.alerting.rules import Rule

__all__ = ["ACK_URL", "TRACES_API_URL", "TRACES_URL", "AlertLinks"]

# Annotation names (Alertmanager templates read them as .Annotations.ack_url and so on).
TRACES_URL: Final = "traces_url"
TRACES_API_URL: Final = "traces_api_url"
ACK_URL: Final = "ack_url"

_CONSOLE_TRACES: Final = "/ui/traces"
_API_TRACES: Final = "/api/traces"
_FALLBACK: Final = "/api/alerts"


class AlertLinks:
    def __init__(self, external_url: str, rules: Iterable[Rule] = ()) -> None:
        self.external_url = external_url.rstrip("/")
        self._rules = {r.name: r for r in rules}

    def generator(self, alert: Alert) -> str:
        rule = self._rules.get(alert.alertname)
        return self.external_url + (rule.generator_path if rule is not None else _FALLBACK)

    def annotations(self, alert: Alert) -> dict[str, str]:
        """The links a page carries: the ack URL always; the failing traces when the rule has them."""
        out = {ACK_URL: f"{self.external_url}/api/alerts/{alert.fingerprint}/ack"}
        rule = self._rules.get(alert.alertname)
        search = rule.trace_search(alert.labels, alert.active_at) if rule is not None else None
        if search:
            query = urlencode(search, safe=":")
            out[TRACES_URL] = f"{self.external_url}{_CONSOLE_TRACES}?{query}"
            out[TRACES_API_URL] = f"{self.external_url}{_API_TRACES}?{query}"
        return out
