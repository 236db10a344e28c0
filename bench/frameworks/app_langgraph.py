"""The LangGraph app measured: langgraph-supervisor's supervisor and a react worker, the tests' own.

One request is one invocation of ``langgraph_apps.supervisor`` (tests/instrumentation) whose model
the fake LLM scripts to transfer to ``research_expert``, which calls ``lookup`` and hands back; the
supervisor then answers. ChatOpenAI talks to the fake LLM in process (:mod:`fake_transport`). A
probe also runs the supervisor ↔ worker ping-pong app twice round, to see who records the loop.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import fake_transport

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "instrumentation"))
import langgraph_apps as apps

PROMPT = "[tool:transfer_to_research_expert][tool:lookup] find x"


class App:
    agents: ClassVar[list[str]] = ["research_expert", "supervisor", "worker"]
    marker = "find x"  # a word of the request: in a span, content was recorded

    def __init__(self, tracer: str) -> None:
        self.model = apps.chat_model(fake_transport.BASE_URL, http_client=fake_transport.client())
        self.graph = apps.supervisor(self.model)
        self._nodes: float | None = None

    def request(self) -> None:
        self.graph.invoke(apps.user_text(PROMPT))

    def run(self, runs: int) -> None:
        for _ in range(runs):
            self.request()

    def units(self) -> dict[str, float]:
        if self._nodes is None:  # every node run, the worker's inner agent and tools nodes included
            updates = self.graph.stream(apps.user_text(PROMPT), stream_mode="updates", subgraphs=True)
            self._nodes = float(sum(len(update) for _, update in updates))
        return {"node": self._nodes}

    def callers(self, system_prompts: list[str]) -> list[str] | None:
        return None  # the model is called inside its node: the node-named ancestor says who called

    def extra_cpu(self) -> float:
        return 0.0

    def probe_extra(self, capture: Any, flush: Callable[[], None]) -> dict[str, Any]:
        import shape

        if capture is None:
            return {}
        flush()
        capture.keep()
        apps.ping_pong(self.model).invoke(apps.user_text(apps.ping_pong_prompt(2)))
        flush()
        return {"ping_pong": shape.summarise(capture.take(), self.agents)}
