"""With the Anthropic SDK's own tracing on by default, an instrumented call is still one span: ours."""

from __future__ import annotations

import os
import subprocess
import sys

from otlp_sink import OtlpSink

from reach_otel.testing.fake_llm import FakeLLMServer

APP = """
import sys
import anthropic
import reach_otel

reach_otel.init(service_name="claude-desk", endpoint=sys.argv[1])
if len(sys.argv) > 3:
    reach_otel.uninstrument("anthropic")
client = anthropic.Anthropic(base_url=sys.argv[2], api_key="test", max_retries=0)

@reach_otel.agent(name="WriterAgent")
def write() -> None:
    client.messages.create(model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}])

write()
reach_otel.shutdown()
"""


def _names(*extra: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "REACH_", "ANTHROPIC_"))}
    with FakeLLMServer() as llm, OtlpSink() as sink:
        result = subprocess.run(
            [sys.executable, "-c", APP, sink.url, llm.anthropic_base_url, *extra],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return sorted(s["name"] for s in sink.wait_for(2))


def test_one_span_per_call_while_instrumented() -> None:
    assert _names() == ["chat claude-test", "invoke_agent WriterAgent"]


def test_the_sdk_traces_again_once_uninstrumented() -> None:
    names = _names("uninstrument")
    assert "chat claude-test" not in names and "invoke_agent WriterAgent" in names
    assert "anthropic.messages.create" in names  # the SDK's own span is back in place of ours
