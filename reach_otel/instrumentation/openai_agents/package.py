"""The Agents SDK versions this integration supports."""

_instruments = ("openai-agents >= 0.2",)
