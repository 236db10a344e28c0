"""Test utilities shipped with reach_otel: a local fake LLM server speaking the OpenAI and Anthropic APIs."""
