"""``with_raw_response``: the same span as a plain ``create``, with usage read from the parsed body.

The SDK's raw-response wrappers (what langchain-openai calls) run our patched ``create`` with the
``X-Stainless-Raw-Response`` header, and ``create`` then returns a ``LegacyAPIResponse`` rather
than the completion. Here the call is handed to the ordinary wrapper with the response already
parsed — ``parse()`` caches, so the caller's own ``parse()`` gets that very object — and a stream
comes back as our stream proxy through the raw response's ``parse()``. One span per call, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import wrapt

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]

_RAW_HEADER = "X-Stainless-Raw-Response"


def is_raw(kwargs: dict[str, Any]) -> bool:
    """True for a call made through ``with_raw_response`` (not ``with_streaming_response``)."""
    headers = kwargs.get("extra_headers")
    return isinstance(headers, dict) and headers.get(_RAW_HEADER) == "true"


def _parsed(raw: Any) -> Any:
    """The completion (or SDK stream) of a raw response; the raw response itself if it won't parse.

    The body of a ``with_raw_response`` call is already read, so this is no I/O; a failure is left
    for the caller's own ``parse()`` to meet, where it would have met it anyway.
    """
    parse = getattr(raw, "parse", None)
    if not callable(parse) or not hasattr(raw, "http_response"):
        return raw
    try:
        return parse()
    except Exception:  # the caller's parse() raises it where the caller expects it
        return raw


class RawResponse(wrapt.ObjectProxy):  # type: ignore[type-arg]
    """A raw response whose default ``parse()`` returns our stream proxy (the span ends with it)."""

    def __init__(self, raw: Any, stream: Any) -> None:
        super().__init__(raw)
        self._self_stream = stream

    def parse(self, *, to: Any = None) -> Any:
        if to is None:
            return self._self_stream
        return self.__wrapped__.parse(to=to)


def _returned(raw: list[Any], result: Any) -> Any:
    """What the caller gets: the raw response, wrapped when ``result`` is our stream proxy."""
    if not raw:
        return result
    original = raw[0]
    if result is original or not isinstance(result, wrapt.ObjectProxy):
        return original
    return RawResponse(original, result)


def sync_raw_aware(inner: Wrapper) -> Wrapper:
    """``inner`` (the ordinary sync wrapper), handed the parsed response on raw-response calls."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not is_raw(kwargs):
            return inner(wrapped, instance, args, kwargs)
        raw: list[Any] = []

        def call(*a: Any, **k: Any) -> Any:
            response = wrapped(*a, **k)
            raw.append(response)
            return _parsed(response)

        return _returned(raw, inner(call, instance, args, kwargs))

    return wrapper


def async_raw_aware(inner: Wrapper) -> Wrapper:
    """The async twin of :func:`sync_raw_aware` (the raw response's ``parse()`` is sync there too)."""

    async def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not is_raw(kwargs):
            return await inner(wrapped, instance, args, kwargs)
        raw: list[Any] = []

        async def call(*a: Any, **k: Any) -> Any:
            response = await wrapped(*a, **k)
            raw.append(response)
            return _parsed(response)

        return _returned(raw, await inner(call, instance, args, kwargs))

    return wrapper
