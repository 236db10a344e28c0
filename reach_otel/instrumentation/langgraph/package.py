"""The LangGraph versions this integration supports (it rides langchain-core's callbacks)."""

_instruments = ("langgraph >= 1.0",)
