"""Ask the desk a question: ``python ask.py "why was I charged twice?"`` (Triage at ``TRIAGE_URL``).

Prints one JSON line: the task's id, its final state, its context id and the answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from a2a.client import ClientConfig, create_client
from a2a.helpers import get_message_text, new_text_message
from a2a.types.a2a_pb2 import Role, SendMessageRequest, TaskState


async def ask(question: str) -> dict[str, str]:
    client = await create_client(
        os.environ.get("TRIAGE_URL", "http://127.0.0.1:8201"), ClientConfig(streaming=False)
    )
    try:
        message = new_text_message(question, role=Role.ROLE_USER)
        async for event in client.send_message(SendMessageRequest(message=message)):
            task = event.task
            return {
                "task_id": task.id,
                "state": TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower(),
                "context_id": task.context_id,
                "answer": get_message_text(task.status.message),
            }
    finally:
        await client.close()
    return {}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(ask(" ".join(sys.argv[1:]) or "why was I charged twice?"))), flush=True)
