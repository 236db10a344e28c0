"""The client library versions this instrumentation supports (httpx, and httpx2 when present)."""

_instruments = ("httpx >= 0.23",)
