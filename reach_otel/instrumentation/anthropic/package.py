"""The client library versions this instrumentation supports."""

_instruments = ("anthropic >= 0.30",)
