"""Secrets in webhook, registry and Alertmanager URLs: shown redacted (``http://***@host/path?
token=***``) in every log line, in ``GET /api/alerts/deliveries``, in the startup line and in config
errors, while the receivers still get the URL as configured; the registry's ``/deregister`` goes
onto its path, before the query."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from alerting_fakes import Receiver, refusing_port
from alerting_live import agent_span, otlp, wait_for
from collector_process import CollectorProcess

from reach_collector.alerting.config import load_alerting
from reach_collector.alerting.notify.webhook import with_path
from reach_collector.config import ConfigError
from reach_collector.text.redact_url import redact_url, scrub

SECRET = "S3CRET"  # in every credential below: none may be shown anywhere


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:9095/hook/alice?token=abc", "http://127.0.0.1:9095/hook/alice?token=***"),
        ("http://user:pass@h:80/x", "http://***@h:80/x"),
        ("https://user@h/x", "https://***@h/x"),
        ("http://reg/api?key=1&flag&empty=", "http://reg/api?key=***&***&empty="),
        ("http://h/p#access_token=x", "http://h/p#***"),
        ("http://[::1]:4318/x?t=1", "http://[::1]:4318/x?t=***"),
        ("http://h:pass-word/x", "http://h:***/x"),  # a password whose user was lost
        (
            "http://h/integrations/v1/alertmanager/Ab3dEfGhIjKlMnOpQr/",
            "http://h/integrations/v1/alertmanager/***/",
        ),
        ("http://h/hook/payments-reconciliation-worker", "http://h/hook/payments-reconciliation-worker"),
        ("http://h/plain", "http://h/plain"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact_url(shown) == shown  # redacting twice changes nothing


def test_scrub_hides_the_url_and_its_secrets_in_a_text() -> None:
    url = "http://bob:hunter22@h/x?token=abcdef"
    text = f"bad URL '{url}': hunter22 refused, token abcdef; HTTP 401"
    assert scrub(text, url) == "bad URL 'http://***@h/x?token=***': *** refused, token ***; HTTP 401"


@pytest.mark.parametrize(
    ("registry", "called"),
    [
        ("http://reg/api?key=1", "http://reg/api/deregister?key=1"),
        ("http://reg/api/?key=1", "http://reg/api/deregister?key=1"),
        ("http://u:p@reg:8500", "http://u:p@reg:8500/deregister"),
        ("http://reg/mesh", "http://reg/mesh/deregister"),
    ],
)
def test_the_registry_path_is_joined_before_its_query(registry: str, called: str) -> None:
    assert with_path(registry, "deregister") == called


def test_config_errors_show_a_url_redacted() -> None:
    bad = {"users": {"x": {"webhook": f"ftp://u:PASS-{SECRET}@h/?token=T-{SECRET}"}}}
    with pytest.raises(ConfigError) as caught:
        load_alerting(bad)
    assert str(caught.value).startswith("users.x.webhook: expected an http")
    assert SECRET not in str(caught.value) and "ftp://***@h/?token=***" in str(caught.value)


def _config(alice: str, bob: str, carol: str, registry: str) -> str:
    return f"""
alerting:
  interval: 0.3
  registry: "{registry}"
  rules:
    ReachSuccessRateLow: {{for: 0s, min_calls: 3}}
    ReachP99LatencyHigh: {{enabled: false}}
    ReachAgentHeartbeatLost: {{for: 0s, after: 1s}}
users:
  alice: {{webhook: "{alice}"}}
  bob: {{webhook: "{bob}"}}
  carol: {{webhook: "{carol}"}}
routing:
  P0: {{notify: {{users: [alice, bob, carol]}}}}
"""


def test_no_log_line_or_delivery_record_shows_a_credential(tmp_path: Path) -> None:
    """A real collector pages three people — one delivered, one refused once with its request
    quoted back, one unreachable — and deregisters an agent: its output and its deliveries API
    hold none of the URLs' passwords, tokens or keys; the receivers got them all."""
    with (
        refusing_port() as dead,
        Receiver() as alice,
        Receiver([500], echo=True) as bob,
        Receiver() as registry,
    ):
        port = alice.url.rsplit(":", 1)[1]
        alice_url = f"http://hookuser:hookpass-{SECRET}@127.0.0.1:{port}/hook/alice?token=TOKEN-{SECRET}"
        bob_url = f"{bob.url}/hook/bob?token=BOBTOKEN-{SECRET}"
        carol_url = f"http://carol:CAROL-{SECRET}@127.0.0.1:{dead}/hook/carol?token=CAROLTOKEN-{SECRET}"
        reg_port = registry.url.rsplit(":", 1)[1]
        registry_url = f"http://reguser:regpass-{SECRET}@127.0.0.1:{reg_port}/api?key=REGKEY-{SECRET}"
        config = tmp_path / "reach.yaml"
        config.write_text(_config(alice_url, bob_url, carol_url, registry_url))
        collector = CollectorProcess(tmp_path / "t.duckdb", "--config", str(config))
        with collector:
            now = time.time()
            spans = [agent_span(now - 0.1 * i, "billing", error=True) for i in range(3)]
            assert httpx.post(collector.url + "/v1/traces", json=otlp(spans), timeout=10).status_code == 200
            beat = {"agent_id": "mesh-billing-1", "service": "mesh"}
            assert httpx.post(collector.url + "/api/heartbeats", json=beat, timeout=10).status_code == 202
            wait_for(lambda: alice.received and len(bob.received) >= 2 and registry.received)

            def carol_failed() -> list[dict[str, Any]]:
                rows = collector.get("/api/alerts/deliveries")["deliveries"]
                return [d for d in rows if d["recipient"] == "carol" and not d["ok"]]

            wait_for(carol_failed)
            served = httpx.get(collector.url + "/api/alerts/deliveries", timeout=10).text
        printed = collector.output()

    # Sent to as configured: the path and query, the user info as basic auth.
    assert [path for path, _ in alice.received] == [f"/hook/alice?token=TOKEN-{SECRET}"]
    basic = base64.b64encode(f"hookuser:hookpass-{SECRET}".encode()).decode()
    assert alice.authorization == [f"Basic {basic}"]
    assert [path for path, _ in bob.received] == [f"/hook/bob?token=BOBTOKEN-{SECRET}"] * 2
    assert registry.received == [(f"/api/deregister?key=REGKEY-{SECRET}", {"agent_id": "mesh-billing-1"})]

    assert SECRET not in served, served
    assert SECRET not in printed, printed
    shown = {d["recipient"]: d["url"] for d in httpx.Response(200, text=served).json()["deliveries"]}
    assert shown["alice"] == f"http://***@127.0.0.1:{port}/hook/alice?token=***"
    assert shown["registry"] == f"http://***@127.0.0.1:{reg_port}/api/deregister?key=***"
    # What was shown still says what happened, with the secrets cut out.
    assert f"at http://***@127.0.0.1:{port}/hook/alice?token=***, attempt 1" in printed  # the page line
    assert "HTTP 500" in printed and "/hook/bob?token=***" in printed  # bob's receiver quoted it back
    assert "connection error" in printed  # carol's
    assert f'"registry": "http://***@127.0.0.1:{reg_port}/api?key=***"' in printed  # P2's action line
    assert f"P2 deregisters at http://***@127.0.0.1:{reg_port}/api?key=***" in printed  # startup


def test_an_alertmanager_url_with_credentials_is_shown_redacted(tmp_path: Path) -> None:
    """A real collector pushes a firing P0 into an Alertmanager whose URL carries a user, a
    password and a token; the first push is refused with the request quoted back. Neither its
    output nor its deliveries API shows a credential; the Alertmanager got them all."""
    with Receiver([500], echo=True) as am:
        port = am.url.rsplit(":", 1)[1]
        am_url = f"http://amuser:ampass-{SECRET}@127.0.0.1:{port}/am?token=AMTOKEN-{SECRET}"
        config = tmp_path / "reach.yaml"
        config.write_text(
            "alerting:\n  interval: 0.3\n"
            f'  alertmanager_url: "{am_url}"\n'
            "  rules:\n    ReachSuccessRateLow: {for: 0s, min_calls: 3}\n"
            "    ReachP99LatencyHigh: {enabled: false}\n"
        )
        with CollectorProcess(tmp_path / "t.duckdb", "--config", str(config)) as collector:
            now = time.time()
            spans = [agent_span(now - 0.1 * i, "billing", error=True) for i in range(3)]
            assert httpx.post(collector.url + "/v1/traces", json=otlp(spans), timeout=10).status_code == 200
            wait_for(lambda: len(am.received) >= 2)  # refused once, then taken at the next evaluation
            wait_for(lambda: len(collector.get("/api/alerts/deliveries")["deliveries"]) >= 2)
            served = httpx.get(collector.url + "/api/alerts/deliveries", timeout=10).text
        printed = collector.output()

    assert {path for path, _ in am.received} == {f"/am/api/v2/alerts?token=AMTOKEN-{SECRET}"}
    basic = base64.b64encode(f"amuser:ampass-{SECRET}".encode()).decode()
    assert set(am.authorization) == {f"Basic {basic}"}
    assert SECRET not in served, served
    assert SECRET not in printed, printed
    shown = httpx.Response(200, text=served).json()["deliveries"]
    assert {d["url"] for d in shown} == {f"http://***@127.0.0.1:{port}/am/api/v2/alerts?token=***"}
    assert any(not d["ok"] and "HTTP 500" in (d["error"] or "") for d in shown)
