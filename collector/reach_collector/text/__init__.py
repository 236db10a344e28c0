"""Values read from requests and config, and text shown to people, each with one reader or writer:
durations (``durations``), instants (``times``), metric windows and steps (``windows``), untrusted
names made safe for one line (``printable``), URLs with their secrets redacted (``redact_url``) and
the ClickHouse storage URL (``clickhouse_url``).
Nothing here imports the rest of the collector.
"""
