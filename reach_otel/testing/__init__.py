"""Test utilities shipped with reach_otel: a local fake LLM server speaking the OpenAI and Anthropic APIs."""

from reach_otel.testing.fake_llm import FakeLLMServer, RecordedRequest

__all__ = ["FakeLLMServer", "RecordedRequest"]
