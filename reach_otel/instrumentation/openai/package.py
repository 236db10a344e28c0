"""The client library versions this instrumentation supports."""

_instruments = ("openai >= 1.0",)
