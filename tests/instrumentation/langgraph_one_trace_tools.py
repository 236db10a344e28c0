"""The desk's tools as an MCP server on stdio (the SDK's ``MCPServer``, formerly FastMCP), started by
the workers of langgraph_one_trace_app.py. Nothing here knows about tracing: started by a client
under ``reach-otel run``, it inherits the configuration and continues each request's trace.

    python langgraph_one_trace_tools.py      # serves on stdin/stdout
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

FORECASTS = {"Lisbon": "sunny, 24 C", "Oslo": "snow, -3 C"}
BUDGETS = {"travel": "1200 EUR left of 5000", "hardware": "300 EUR left of 2000"}

server = MCPServer("desk-tools")


@server.tool()
def get_forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    return FORECASTS.get(city, f"no forecast for {city!r}")


@server.tool()
def get_budget(team: str) -> str:
    """What is left of a team's budget."""
    return BUDGETS.get(team, f"no budget for {team!r}")


if __name__ == "__main__":
    server.run("stdio")
