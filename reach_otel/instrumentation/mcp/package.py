"""The MCP SDK versions this instrumentation supports (2.x: its dispatcher and server middleware)."""

_instruments = ("mcp >= 2.0",)
