"""The application's own code: nothing to install."""

_instruments: tuple[str, ...] = ()
