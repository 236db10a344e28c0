"""OTLP ingest: pure decoding of request bodies into span rows (with what ``/metrics`` needs of
each batch, summed up as the rows are made: ``batch_stats``), and the single durable writer."""
