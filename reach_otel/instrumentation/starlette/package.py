"""The framework versions this instrumentation supports (FastAPI is built on Starlette)."""

_instruments = ("starlette >= 0.20",)
