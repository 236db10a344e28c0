"""The client library versions this instrumentation supports."""

_instruments = ("requests >= 2.0",)
