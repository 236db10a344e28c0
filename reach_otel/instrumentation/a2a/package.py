"""The A2A SDK versions this instrumentation supports (1.x: protobuf types, transports, request handlers)."""

_instruments = ("a2a-sdk >= 1.0",)
