"""OTLP ingest: pure decoding of request bodies into span rows, and the single durable writer."""
