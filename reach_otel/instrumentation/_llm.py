"""The one body of logic behind every patched LLM client call (sync and async, streamed or not).

A provider describes itself with an :class:`LLMSpec` (pure request/response extractors and a
stream accumulator); the wrappers here start the span through the handler, call the SDK, and end
the span exactly once — for streams on exhaustion, ``close()``, context exit, error or garbage
collection of an abandoned stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import wrapt

from reach_otel import semconv as sc
from reach_otel._safety import safe
from reach_otel.extractors import assistant_message, tool_call_part
from reach_otel.handler import TelemetryHandler
from reach_otel.instrumentation._extract import request_params, server_of
from reach_otel.invocations import LLMInvocation

HandlerRef = Callable[[], TelemetryHandler]


@dataclass
class Request:
    """What a provider's extractor read off one call's arguments."""

    model: str | None
    stream: bool
    server_address: str | None = None
    server_port: int | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    messages: Any = None
    system: Any = None
    tools: Any = None  # the tool definitions offered to the model

    @classmethod
    def read(
        cls, instance: Any, kwargs: dict[str, Any], messages: str = "messages", system: str | None = None
    ) -> Request:
        """The common request fields of an SDK call: model, stream, the client's server, the
        request parameters, and the messages and system prompt under the SDK's own names."""
        address, port = server_of(instance)
        model = kwargs.get("model")
        return cls(
            model=model if isinstance(model, str) else None,
            stream=bool(kwargs.get("stream")),
            server_address=address,
            server_port=port,
            attributes=request_params(kwargs),
            messages=kwargs.get(messages),
            system=kwargs.get(system) if system else None,
            tools=kwargs.get("tools"),
        )


class StreamAccumulator:
    """What every provider's stream accumulator keeps, and the attributes it ends with."""

    def __init__(self, keep_text: bool = False) -> None:
        self.keep_text = keep_text
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.text: list[str] = []
        self.model: str | None = None
        self.response_id: str | None = None
        self.reasons: list[str] = []
        self.tools: list[str] = []
        # Streamed tool calls by their index in the answer: id, name, argument fragments (content
        # capture only).
        self.calls: dict[Any, tuple[list[Any], list[str]]] = {}

    def add(self, chunk: Any) -> None:
        raise NotImplementedError

    def call_piece(self, key: Any, call_id: Any = None, name: Any = None, arguments: Any = None) -> None:
        """A piece of a streamed tool call: its id and name come once, its arguments in fragments."""
        if not self.keep_text:
            return
        ids, fragments = self.calls.setdefault(key, ([None, None], []))
        if call_id:
            ids[0] = call_id
        if name:
            ids[1] = name
        if isinstance(arguments, str):
            fragments.append(arguments)

    def output_messages(self) -> list[dict[str, Any]] | None:
        """The streamed answer as output messages: its text, then its tool calls."""
        calls = [
            tool_call_part(call_id, name, "".join(fragments))
            for (call_id, name), fragments in self.calls.values()
            if isinstance(name, str)
        ]
        return assistant_message("".join(self.text), calls)

    def attributes(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        if isinstance(self.model, str):
            attrs[sc.GEN_AI_RESPONSE_MODEL] = self.model
        if isinstance(self.response_id, str):
            attrs[sc.GEN_AI_RESPONSE_ID] = self.response_id
        if self.reasons:
            attrs[sc.GEN_AI_RESPONSE_FINISH_REASONS] = self.reasons
        tools = [t for t in self.tools if isinstance(t, str)]
        if tools:
            attrs[sc.REACH_LLM_TOOL_CALLS_REQUESTED] = tools
        return attrs


@dataclass(frozen=True)
class LLMSpec:
    provider: str
    request: Callable[[Any, dict[str, Any]], Request]
    response: Callable[[Any], Iterator[tuple[str, Any]]]  # extra attributes of a whole response
    output_messages: Callable[[Any], Any]
    error_code: Callable[[BaseException], str | None]
    accumulator: Callable[[bool], StreamAccumulator]  # argument: keep the text (content capture is on)
    operation: str = sc.OP_CHAT
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # may adjust the call's kwargs


@safe
def _begin(
    handler: TelemetryHandler, spec: LLMSpec, instance: Any, kwargs: dict[str, Any]
) -> LLMInvocation | None:
    req = spec.request(instance, kwargs)
    inv = handler.start_llm(
        req.model,
        spec.provider,
        operation=spec.operation,
        stream=req.stream,
        server_address=req.server_address,
        server_port=req.server_port,
        request_attributes=req.attributes,
        unless_nested=True,  # never wrap a call already inside an LLM span
    )
    if inv is not None and handler.settings.capture_content:
        inv.set_request_messages(req.messages, req.system, req.tools)
    return inv


@safe
def _record(inv: LLMInvocation, spec: LLMSpec, result: Any) -> None:
    """Every response attribute in one ``set_attributes`` call; usage also goes to the agent."""
    attrs = dict(spec.response(result))
    inv.input_tokens = attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS)
    inv.output_tokens = attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)
    if inv.capture and (messages := spec.output_messages(result)) is not None:
        attrs[sc.GEN_AI_OUTPUT_MESSAGES] = inv.handler.content_json(messages)
    if attrs:
        inv.span.set_attributes(attrs)


def _prepared(spec: LLMSpec, kwargs: dict[str, Any]) -> dict[str, Any]:
    if spec.prepare is None:
        return kwargs
    try:
        return spec.prepare(kwargs)
    except Exception:  # an adjustment we cannot make is simply not made
        return kwargs


def _failed(inv: LLMInvocation, token: Any, spec: LLMSpec, exc: BaseException) -> None:
    inv.exit(token)
    inv.fail(exc, spec.error_code(exc))


def _settled(
    inv: LLMInvocation, spec: LLMSpec, kwargs: dict[str, Any], result: Any, stream: type, next_name: str
) -> Any:
    """After the SDK call returned: a stream comes back wrapped (the span ends with it), anything
    else is recorded and ends the span. The sync and async wrappers differ only in the await."""
    if kwargs.get("stream") and hasattr(result, next_name):
        return stream(result, inv, spec)
    _record(inv, spec, result)
    inv.stop()
    return result


def sync_wrapper(spec: LLMSpec, handler_ref: HandlerRef) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        inv = _begin(handler_ref(), spec, instance, kwargs)
        if inv is None:
            return wrapped(*args, **kwargs)
        kwargs = _prepared(spec, kwargs)
        token = inv.enter()
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            _failed(inv, token, spec, exc)
            raise
        inv.exit(token)
        return _settled(inv, spec, kwargs, result, SyncStream, "__next__")

    return wrapper


def async_wrapper(spec: LLMSpec, handler_ref: HandlerRef) -> Callable[..., Any]:
    async def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        inv = _begin(handler_ref(), spec, instance, kwargs)
        if inv is None:
            return await wrapped(*args, **kwargs)
        kwargs = _prepared(spec, kwargs)
        token = inv.enter()
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _failed(inv, token, spec, exc)
            raise
        inv.exit(token)
        return _settled(inv, spec, kwargs, result, AsyncStream, "__anext__")

    return wrapper


class _StreamState:
    """The span side of a stream proxy: fold chunks in, end the span exactly once."""

    __slots__ = ("acc", "done", "inv", "spec")

    def __init__(self, inv: LLMInvocation, spec: LLMSpec) -> None:
        self.inv = inv
        self.spec = spec
        self.acc = spec.accumulator(inv.capture)
        self.done = False

    @safe
    def chunk(self, chunk: Any) -> None:
        self.inv.mark_first_chunk()
        self.acc.add(chunk)

    @safe
    def finish(self, exc: BaseException | None = None) -> None:
        if self.done:
            return
        self.done = True
        inv, acc = self.inv, self.acc
        attrs = acc.attributes()
        inv.input_tokens, inv.output_tokens = acc.input_tokens, acc.output_tokens
        if acc.input_tokens is not None:
            attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] = acc.input_tokens
        if acc.output_tokens is not None:
            attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = acc.output_tokens
        if inv.capture and (messages := acc.output_messages()) is not None:
            attrs[sc.GEN_AI_OUTPUT_MESSAGES] = inv.handler.content_json(messages)
        if attrs:
            inv.span.set_attributes(attrs)
        if exc is not None:
            inv.fail(exc, self.spec.error_code(exc))
        else:
            inv.stop()


class _StreamProxy(wrapt.ObjectProxy):  # type: ignore[type-arg]
    """What the sync and async stream proxies share: the span state, and ending the span when an
    abandoned stream is collected."""

    def __init__(self, stream: Any, inv: LLMInvocation, spec: LLMSpec) -> None:
        super().__init__(stream)
        self._self_state = _StreamState(inv, spec)

    def __del__(self) -> None:  # an abandoned stream still ends its span
        self._self_state.finish()


class SyncStream(_StreamProxy):
    """Proxy for an SDK ``Stream``: the user iterates it as before; the span ends once."""

    def __iter__(self) -> SyncStream:
        return self

    def __next__(self) -> Any:
        try:
            chunk = self.__wrapped__.__next__()
        except StopIteration:
            self._self_state.finish()
            raise
        except BaseException as exc:
            self._self_state.finish(exc)
            raise
        self._self_state.chunk(chunk)
        return chunk

    def __enter__(self) -> SyncStream:
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc_info)
        finally:
            self._self_state.finish(exc_info[1])

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_state.finish()


class AsyncStream(_StreamProxy):
    """Proxy for an SDK ``AsyncStream``."""

    def __aiter__(self) -> AsyncStream:
        return self

    async def __anext__(self) -> Any:
        try:
            chunk = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            self._self_state.finish()
            raise
        except BaseException as exc:
            self._self_state.finish(exc)
            raise
        self._self_state.chunk(chunk)
        return chunk

    async def __aenter__(self) -> AsyncStream:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        finally:
            self._self_state.finish(exc_info[1])

    async def close(self) -> None:
        try:
            await self.__wrapped__.close()
        finally:
            self._self_state.finish()
