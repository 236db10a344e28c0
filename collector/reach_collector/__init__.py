"""reach-otel collector: OTLP ingest into DuckDB, trace queries, metrics and alerting."""

__version__ = "0.1.0"
