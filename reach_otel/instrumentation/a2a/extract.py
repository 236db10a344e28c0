"""What an A2A request and its answers say, as span attributes: pure functions over the SDK's messages.

Requests, answers and stream events are the SDK's protobuf messages; they are told apart by their
descriptor's name, so nothing here depends on how a transport produced them. Method names are the
protocol's (``message/send``, ``tasks/get``...), whichever binding (JSON-RPC, REST, gRPC) carried them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from a2a.types import a2a_pb2

from reach_otel import semconv as sc

#: ClientTransport method → A2A method name.
CLIENT_METHODS: dict[str, str] = {
    "send_message": sc.A2A_MESSAGE_SEND,
    "send_message_streaming": sc.A2A_MESSAGE_STREAM,
    "get_task": "tasks/get",
    "list_tasks": "tasks/list",
    "cancel_task": "tasks/cancel",
    "subscribe": "tasks/resubscribe",
    "create_task_push_notification_config": "tasks/pushNotificationConfig/set",
    "get_task_push_notification_config": "tasks/pushNotificationConfig/get",
    "list_task_push_notification_configs": "tasks/pushNotificationConfig/list",
    "delete_task_push_notification_config": "tasks/pushNotificationConfig/delete",
    "get_extended_agent_card": "agent/getAuthenticatedExtendedCard",
}
#: RequestHandler method → A2A method name.
SERVER_METHODS: dict[str, str] = {
    "on_message_send": sc.A2A_MESSAGE_SEND,
    "on_message_send_stream": sc.A2A_MESSAGE_STREAM,
    "on_get_task": "tasks/get",
    "on_list_tasks": "tasks/list",
    "on_cancel_task": "tasks/cancel",
    "on_subscribe_to_task": "tasks/resubscribe",
    "on_create_task_push_notification_config": "tasks/pushNotificationConfig/set",
    "on_get_task_push_notification_config": "tasks/pushNotificationConfig/get",
    "on_list_task_push_notification_configs": "tasks/pushNotificationConfig/list",
    "on_delete_task_push_notification_config": "tasks/pushNotificationConfig/delete",
    "on_get_extended_agent_card": "agent/getAuthenticatedExtendedCard",
}
#: The methods whose answer is a stream of events.
STREAMS: frozenset[str] = frozenset({sc.A2A_MESSAGE_STREAM, "tasks/resubscribe"})
#: The methods that send a message to the agent: a handoff on the client.
SENDS: frozenset[str] = frozenset({sc.A2A_MESSAGE_SEND, sc.A2A_MESSAGE_STREAM})

_PAYLOADS = frozenset({"StreamResponse", "SendMessageResponse"})
_TASK_ID_IN_ID = frozenset({"GetTaskRequest", "CancelTaskRequest", "SubscribeToTaskRequest"})
_TASK_ID_IN_TASK_ID = frozenset(
    {
        "TaskPushNotificationConfig",
        "GetTaskPushNotificationConfigRequest",
        "DeleteTaskPushNotificationConfigRequest",
        "ListTaskPushNotificationConfigsRequest",
    }
)


def _kind(obj: Any) -> str | None:
    descriptor = getattr(obj, "DESCRIPTOR", None)
    name = getattr(descriptor, "name", None)
    return name if isinstance(name, str) else None


def task_state_name(value: Any) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` (or its number) → ``input-required``; unspecified → ``unknown``."""
    try:
        name = a2a_pb2.TaskState.Name(value) if isinstance(value, int) else str(value)
    except ValueError:
        return "unknown"
    short = name.removeprefix("TASK_STATE_").lower().replace("_", "-")
    return "unknown" if short in ("", "unspecified") else short


@dataclass(frozen=True)
class Facts:
    """What one answer or stream event tells: the task, its state, and whether it is a direct reply."""

    task_id: str | None = None
    context_id: str | None = None
    state: str | None = None
    message_id: str | None = None
    is_message: bool = False


def payload(obj: Any) -> Any:
    """The Task, Message or update inside a ``StreamResponse`` / ``SendMessageResponse``."""
    if _kind(obj) in _PAYLOADS:
        field = obj.WhichOneof("payload")
        return getattr(obj, field) if field else None
    return obj


def facts(obj: Any) -> Facts:
    """The facts of a Task, Message, TaskStatusUpdateEvent or TaskArtifactUpdateEvent (wrapped or not)."""
    obj = payload(obj)
    kind = _kind(obj)
    if kind == "Task":
        return Facts(obj.id or None, obj.context_id or None, task_state_name(obj.status.state))
    if kind == "TaskStatusUpdateEvent":
        return Facts(obj.task_id or None, obj.context_id or None, task_state_name(obj.status.state))
    if kind == "TaskArtifactUpdateEvent":
        return Facts(obj.task_id or None, obj.context_id or None)
    if kind == "Message":
        return Facts(obj.task_id or None, obj.context_id or None, None, obj.message_id or None, True)
    return Facts()


def request_attributes(method: str, request: Any) -> Iterator[tuple[str, Any]]:
    """The method, and the ids a request names: message, task, conversation (the contextId)."""
    yield sc.A2A_METHOD_NAME, method
    kind = _kind(request)
    if kind == "SendMessageRequest":
        message = request.message
        if message.message_id:
            yield sc.A2A_MESSAGE_ID, message.message_id
        if message.task_id:
            yield sc.A2A_TASK_ID, message.task_id
        if message.context_id:
            yield sc.GEN_AI_CONVERSATION_ID, message.context_id
    elif kind in _TASK_ID_IN_ID and request.id:
        yield sc.A2A_TASK_ID, request.id
    elif kind in _TASK_ID_IN_TASK_ID and request.task_id:
        yield sc.A2A_TASK_ID, request.task_id
    elif kind == "ListTasksRequest" and request.context_id:
        yield sc.GEN_AI_CONVERSATION_ID, request.context_id


def result_attributes(found: Facts) -> Iterator[tuple[str, Any]]:
    """The task and conversation an answer (or the latest stream event) is about, and the task's state."""
    if found.task_id:
        yield sc.A2A_TASK_ID, found.task_id
    if found.context_id:
        yield sc.GEN_AI_CONVERSATION_ID, found.context_id
    if found.state:
        yield sc.A2A_TASK_STATE, found.state


def wire_attributes(call_context: Any) -> Iterator[tuple[str, Any]]:
    """``rpc.system`` / ``rpc.method`` of a server request that came over JSON-RPC (the method as
    sent); ``rpc.system`` ``grpc`` for one over the gRPC binding."""
    state = getattr(call_context, "state", None)
    if not isinstance(state, Mapping):
        return
    method = state.get("method")
    if isinstance(method, str) and method:
        yield sc.RPC_SYSTEM, "jsonrpc"
        yield sc.RPC_METHOD, method
    elif state.get("grpc_context") is not None:
        yield sc.RPC_SYSTEM, "grpc"


def card_name(card: Any) -> str | None:
    name = getattr(card, "name", None)
    return name if isinstance(name, str) and name else None


def target_name(transport: Any) -> str:
    """The agent a client transport talks to: its AgentCard's name, else the host it calls."""
    name = card_name(getattr(transport, "agent_card", None))
    if name:
        return name
    url = getattr(transport, "url", None)
    host = urlsplit(url).hostname if isinstance(url, str) else None
    return host or "a2a-agent"


def server_attributes(transport: Any) -> Iterator[tuple[str, Any]]:
    """``server.address`` / ``server.port`` of an HTTP transport (JSON-RPC or REST)."""
    url = getattr(transport, "url", None)
    if not isinstance(url, str):
        return
    parts = urlsplit(url)
    if parts.hostname:
        yield sc.SERVER_ADDRESS, parts.hostname
        yield sc.SERVER_PORT, parts.port or (443 if parts.scheme == "https" else 80)
