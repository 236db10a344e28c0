"""Values read from requests and config, and text shown to people, each with one reader or writer:
durations (``durations``), instants (``times``), metric windows and steps (``windows``), untrusted
names made safe for one line (``printable``) and URLs with their secrets redacted (``redact_url``).
Nothing here imports the rest of the collector.
"""
