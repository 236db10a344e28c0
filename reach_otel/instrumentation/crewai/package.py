"""The CrewAI versions this integration supports: those with interception hooks and stream sinks."""

_instruments = ("crewai >= 1.15.10",)
