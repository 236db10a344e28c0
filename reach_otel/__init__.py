"""reach_otel: OpenTelemetry spans for multi-agent LLM systems."""

__version__ = "0.1.0"
