"""init(): OTEL_* variables, OTLP/HTTP to a real receiver, existing providers, idempotence, bounded exit.

Each case runs in a fresh interpreter: init() configures process-wide state by design.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from otlp_sink import OtlpSink

from reach_otel.config import load_settings

APP = textwrap.dedent(
    """
    import logging, reach_otel
    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")

    @reach_otel.tool(name="query_invoice")
    def query_invoice(i):
        return i

    @reach_otel.agent(name="BillingAgent")
    def billing():
        return query_invoice(7)
    """
)


def run_app(
    body: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_OTEL_"))}
    full_env.update(env or {})
    code = APP + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout
    )


def test_defaults_are_local_collector_over_http_protobuf() -> None:
    settings = load_settings(env={})
    assert settings.endpoint == "http://127.0.0.1:4318/v1/traces"
    assert settings.protocol == "http/protobuf"
    assert settings.shutdown_timeout_s == 5.0
    assert (
        load_settings(env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1/"}).endpoint == "http://h:1/v1/traces"
    )
    assert (
        load_settings(env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h:1/x"}).endpoint == "http://h:1/x"
    )
    assert load_settings(env={}, endpoint="http://h:2").endpoint == "http://h:2/v1/traces"


def test_init_without_provider_exports_to_the_endpoint_and_flushes_at_exit() -> None:
    with OtlpSink() as sink:
        out = run_app(
            f"""
            provider = reach_otel.init(service_name="billing-agent", endpoint="{sink.url}")
            from opentelemetry import trace
            assert trace.get_tracer_provider() is provider
            print(billing())
            """
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "7"
        spans = sink.wait_for(2)
    assert sorted(s["name"] for s in spans) == ["execute_tool query_invoice", "invoke_agent BillingAgent"]
    assert all(s["resource"]["service.name"] == "billing-agent" for s in spans)
    assert sink.requests[0]["path"] == "/v1/traces"
    assert sink.requests[0]["headers"]["content-type"] == "application/x-protobuf"
    assert "via a new TracerProvider" in out.stderr


def test_standard_otel_variables_are_honoured() -> None:
    with OtlpSink() as sink:
        out = run_app(
            "reach_otel.init()\nbilling()\n",
            env={
                "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url,
                "OTEL_SERVICE_NAME": "svc-from-env",
                "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test,team=payments",
                "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=abc%20def",
            },
        )
        assert out.returncode == 0, out.stderr
        spans = sink.wait_for(2)
    resource = spans[0]["resource"]
    assert resource["service.name"] == "svc-from-env"
    assert resource["deployment.environment"] == "test"
    assert resource["team"] == "payments"
    assert sink.requests[0]["headers"]["x-api-key"] == "abc def"


def test_signal_specific_endpoint_is_used_as_is() -> None:
    with OtlpSink() as sink:
        out = run_app(
            "reach_otel.init()\nbilling()\n",
            env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": sink.url + "/custom/traces"},
        )
        assert out.returncode == 0, out.stderr
        sink.wait_for(2)
    assert sink.requests[0]["path"] == "/custom/traces"


def test_sampler_variable_is_honoured() -> None:
    with OtlpSink() as sink:
        out = run_app(
            f'reach_otel.init(endpoint="{sink.url}")\nbilling()\nreach_otel.shutdown()\n',
            env={"OTEL_TRACES_SAMPLER": "always_off"},
        )
        assert out.returncode == 0, out.stderr
    assert sink.spans() == []


def test_existing_provider_is_kept_and_gets_our_exporter() -> None:
    with OtlpSink() as sink:
        out = run_app(
            f"""
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
            mine = InMemorySpanExporter()
            app_provider = TracerProvider()
            app_provider.add_span_processor(SimpleSpanProcessor(mine))
            trace.set_tracer_provider(app_provider)
            assert reach_otel.init(service_name="x", endpoint="{sink.url}") is app_provider
            assert trace.get_tracer_provider() is app_provider
            billing()
            print(len(mine.get_finished_spans()))
            """
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "2"
        assert len(sink.wait_for(2)) == 2
    assert "the application's existing TracerProvider" in out.stderr


def test_an_exporter_of_the_apps_own_is_never_gated_on_the_default_endpoint() -> None:
    """init(exporter=...) sends to that exporter alone: the OTLP endpoint settings are not its, so
    nothing refusing there holds its spans back at flush() or counts them lost at exit."""
    with socket.socket() as refusing:  # bound, never listened on: connections to it are refused
        refusing.bind(("127.0.0.1", 0))
        port = refusing.getsockname()[1]
        out = run_app(
            """
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
            mine = InMemorySpanExporter()
            reach_otel.init(service_name="x", exporter=mine)
            for _ in range(5):
                billing()
            print(reach_otel.flush(timeout=5), len(mine.get_finished_spans()))
            """,
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"},
        )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "10"]
    assert "not exported" not in out.stderr and "refuses connections" not in out.stderr
    assert "exporting spans to the application's InMemorySpanExporter" in out.stderr


def test_foreign_provider_without_processors_is_left_alone() -> None:
    out = run_app(
        """
        from opentelemetry import trace
        class Foreign(trace.NoOpTracerProvider):
            pass
        trace.set_tracer_provider(Foreign())
        reach_otel.init(endpoint="http://127.0.0.1:9")
        print(billing())
        """
    )
    assert out.returncode == 0, out.stderr
    assert "left it alone" in out.stderr


def test_sdk_disabled_configures_nothing() -> None:
    with OtlpSink() as sink:
        out = run_app(
            f"""
            from opentelemetry import trace
            assert reach_otel.init(endpoint="{sink.url}") is None
            assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
            print(billing())
            """,
            env={"OTEL_SDK_DISABLED": "true"},
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "7"
    assert sink.spans() == []
    assert "OTEL_SDK_DISABLED" in out.stderr


def test_second_init_is_harmless_and_warns_only_when_settings_differ() -> None:
    out = run_app(
        """
        a = reach_otel.init(service_name="one", endpoint="http://127.0.0.1:9")
        b = reach_otel.init(service_name="one", endpoint="http://127.0.0.1:9")
        print("same-ok", a is b)
        c = reach_otel.init(service_name="two")
        print("diff", a is c)
        reach_otel.shutdown(timeout=0.5)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["same-ok", "True", "diff", "True"]
    assert out.stderr.count("already called") == 1


def test_exit_is_bounded_when_the_collector_hangs() -> None:
    with OtlpSink(mode="hang") as sink:
        started = time.monotonic()
        out = run_app(
            f'reach_otel.init(endpoint="{sink.url}")\nfor _ in range(50): billing()\nprint("done")\n',
            env={"REACH_OTEL_SHUTDOWN_TIMEOUT": "1"},
        )
        elapsed = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
    assert elapsed < 8, f"exit took {elapsed:.1f}s"


def test_collector_down_never_raises_into_the_app() -> None:
    out = run_app(
        """
        reach_otel.init(endpoint="http://127.0.0.1:9", shutdown_timeout=1)
        total = sum(billing() for _ in range(200))
        print(total)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1400"


def test_a_malformed_header_entry_is_dropped_without_being_echoed(caplog: pytest.LogCaptureFixture) -> None:
    """The SDK's parser reads the headers; its warning would quote a bad entry (which may hold a
    token), so ours, which never does, is logged in its place."""
    from reach_otel.config import parse_headers

    with caplog.at_level(logging.DEBUG):
        headers = parse_headers("x-api-key=abc%20def, Authorization Bearer s3cr3t-token ,x-team = pay ments")
    assert headers == {"x-api-key": "abc def", "x-team": "pay ments"}
    assert "s3cr3t" not in caplog.text
    assert "ignoring 1 OTLP header entries that are not key=value" in caplog.text
