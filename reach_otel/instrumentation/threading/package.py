"""Standard library: always available."""

_instruments: tuple[str, ...] = ()
