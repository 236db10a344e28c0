"""§2.1: the aa-handoff/v1 state machine, hop counts, ping-pong detection, hop limit and gates."""

from __future__ import annotations

import itertools

import pytest

import reach_otel
from reach_otel import handoff_state as hf


def events(span) -> list[str]:
    return [e.name for e in span.events]


@pytest.mark.parametrize(
    ("script", "final"),
    [
        (["accept", "start", "commit"], "committed"),
        (["accept", "start", "fail"], "failed"),
        (["reject"], "rejected"),
        (["timeout"], "unknown"),
        (["accept", "start", "timeout"], "unknown"),
        (["accept"], "unknown"),  # left unfinished at span end
        (["accept", "start"], "unknown"),
        ([], "unknown"),
    ],
)
def test_declared_transitions(rec, script: list[str], final: str) -> None:
    with reach_otel.handoff("Triage", "Billing", mode="delegate") as h:
        for event in script:
            h.transition(event)
    span = rec.one("handoff Billing")
    assert span.attributes["reach.handoff.status"] == final
    assert span.attributes["reach.handoff.transitions"] == len(script)
    assert events(span) == ["reach.handoff.transition"] * len(script)


@pytest.mark.parametrize(
    "script",
    [
        ["start"],
        ["commit"],
        ["accept", "commit"],
        ["accept", "reject"],
        ["accept", "start", "commit", "commit"],
        ["fly"],
    ],
)
def test_undeclared_transition_is_recorded_and_fails(rec, script: list[str]) -> None:
    with reach_otel.handoff("Triage", "Billing") as h:
        for event in script:
            h.transition(event)
        assert h.status == "failed"
    span = rec.one("handoff Billing")
    assert span.attributes["reach.handoff.status"] == "failed"
    illegal = [e for e in span.events if e.name == "reach.handoff.illegal_transition"]
    assert len(illegal) == 1
    assert illegal[0].attributes["reach.handoff.event"] == script[-1]


def test_every_declared_transition_and_nothing_else() -> None:
    legal = {(s, e) for s in hf.STATES for e in hf.EVENTS if hf.next_state(s, e) is not None}
    assert legal == {
        ("created", "accept"),
        ("accepted", "start"),
        ("running", "commit"),
        ("running", "fail"),
        ("created", "reject"),
        ("created", "timeout"),
        ("running", "timeout"),
    }


def test_handoff_span_attributes_and_parent(rec) -> None:
    @reach_otel.agent(name="TriageAgent")
    def triage() -> None:
        with (
            reach_otel.session(session_id="S1", task_id="T9"),
            reach_otel.handoff(
                "TriageAgent", "BillingAgent", reason="invoice", mode="escalate", handoff_id="H1"
            ) as h,
        ):
            h.transition("accept")
            assert h.id == "H1"

    triage()
    span = rec.one("handoff BillingAgent")
    agent_span = rec.one("invoke_agent TriageAgent")
    assert span.parent.span_id == agent_span.context.span_id
    attrs = dict(span.attributes)
    assert attrs == {
        "gen_ai.operation.name": "handoff",
        "reach.handoff.source": "TriageAgent",
        "reach.handoff.target": "BillingAgent",
        "reach.handoff.mode": "escalate",
        "reach.handoff.id": "H1",
        "reach.handoff.reason": "invoice",
        "reach.handoff.status": "unknown",
        "reach.handoff.transitions": 1,
        "reach.task.id": "T9",
        "gen_ai.conversation.id": "S1",
        "reach.hop.count": 1,
        "reach.loop.detected": False,
        "gen_ai.agent.name": "TriageAgent",
        "gen_ai.transfer.target.name": "BillingAgent",
        "gen_ai.transfer.mode": "pass_control",
        "gen_ai.handoff.from_agent": "TriageAgent",
        "gen_ai.handoff.to_agent": "BillingAgent",
    }


@pytest.mark.parametrize(
    ("mode", "transfer"),
    [
        ("takeover", "pass_control"),
        ("escalate", "pass_control"),
        ("delegate", "return_to_caller"),
        ("consult", "return_to_caller"),
    ],
)
def test_mode_maps_to_transfer_mode(rec, mode: str, transfer: str) -> None:
    with reach_otel.handoff("A", "B", mode=mode):
        pass
    assert rec.one("handoff B").attributes["gen_ai.transfer.mode"] == transfer


def test_source_defaults_to_the_current_agent(rec) -> None:
    @reach_otel.agent(name="Triage")
    def triage() -> None:
        with reach_otel.handoff(None, "Billing"):
            pass

    triage()
    assert rec.one("handoff Billing").attributes["reach.handoff.source"] == "Triage"


def test_exception_inside_handoff_fails_it(rec) -> None:
    with pytest.raises(KeyError), reach_otel.handoff("A", "B") as h:
        h.transition("accept")
        h.transition("start")
        raise KeyError("boom")
    span = rec.one("handoff B")
    assert span.attributes["reach.handoff.status"] == "failed"
    assert span.attributes["error.type"] == "KeyError"


def test_nested_handoffs_count_hops_and_target_agents_carry_them(rec) -> None:
    @reach_otel.agent(name="Tech")
    def tech() -> None:
        pass

    @reach_otel.agent(name="Billing")
    def billing() -> None:
        with reach_otel.handoff("Billing", "Tech"):
            tech()

    @reach_otel.agent(name="Triage")
    def triage() -> None:
        with reach_otel.handoff("Triage", "Billing"):
            billing()

    triage()
    assert rec.one("invoke_agent Triage").attributes["reach.hop.count"] == 0
    assert rec.one("handoff Billing").attributes["reach.hop.count"] == 1
    assert rec.one("invoke_agent Billing").attributes["reach.hop.count"] == 1
    assert rec.one("handoff Tech").attributes["reach.hop.count"] == 2
    assert rec.one("invoke_agent Tech").attributes["reach.hop.count"] == 2


def test_sequential_agents_inside_a_workflow_still_count(rec) -> None:
    @reach_otel.agent(name="Triage")
    def triage() -> str:
        with reach_otel.handoff("Triage", "Billing", mode="takeover"):
            pass
        return "Billing"

    @reach_otel.agent(name="Billing")
    def billing() -> str:
        with reach_otel.handoff("Billing", "Tech", mode="takeover"):
            pass
        return "Tech"

    @reach_otel.agent(name="Tech")
    def tech() -> str:
        return "done"

    @reach_otel.workflow(name="turn")
    def turn() -> None:
        triage()
        billing()
        tech()

    turn()
    turn()  # a second request starts again from zero
    techs = rec.named("invoke_agent Tech")
    assert [s.attributes["reach.hop.count"] for s in techs] == [2, 2]
    assert [s.attributes["reach.hop.count"] for s in rec.named("invoke_agent Billing")] == [1, 1]
    assert len(rec.handler.hops) == 0  # request state is dropped when the root ends


def _ping_pong(path: list[str]) -> None:
    """Run handoffs along ``path`` inside one workflow, each agent handing to the next."""

    @reach_otel.workflow(name="loop")
    def run() -> None:
        for source, target in itertools.pairwise(path):
            with reach_otel.handoff(source, target, mode="takeover"):
                pass

    run()


@pytest.mark.parametrize(
    ("path", "flags", "cycle"),
    [
        (["A", "B", "A", "B"], [False, False, True], ("A", "B")),
        (["A", "B", "C", "A", "B", "C"], [False, False, False, False, True], ("A", "B", "C")),
        (["A", "B", "C", "D"], [False, False, False], None),
        (["A", "B", "C", "B", "D"], [False, False, False, False], None),
    ],
)
def test_loop_detection(rec, path: list[str], flags: list[bool], cycle: tuple[str, ...] | None) -> None:
    _ping_pong(path)
    spans = [s for s in rec.spans if s.name.startswith("handoff ")]
    assert [s.attributes["reach.loop.detected"] for s in spans] == flags
    detected = [e for s in spans for e in s.events if e.name == "reach.loop.detected"]
    if cycle is None:
        assert detected == []
    else:
        assert tuple(detected[0].attributes["reach.loop.cycle"]) == cycle
        assert list(detected[0].attributes["reach.hop.path"]) == path


def test_find_cycle_pure() -> None:
    assert hf.find_cycle(["T", "A", "B", "A", "B"]) == ("A", "B")
    assert hf.find_cycle(["A", "A"]) is None
    assert hf.find_cycle(["A", "B", "C", "D", "A"]) is None
    assert hf.find_cycle([]) is None


def test_hop_limit_is_record_only_by_default(make_recorder) -> None:
    rec = make_recorder(max_hops=5)
    agents = ["A", "B", "C", "D", "E", "F", "G"]
    _ping_pong(agents)  # six handoffs
    spans = [s for s in rec.spans if s.name.startswith("handoff ")]
    assert [s.attributes["reach.hop.count"] for s in spans] == [1, 2, 3, 4, 5, 6]
    flagged = [s for s in spans if "reach.hop.limit_exceeded" in events(s)]
    assert [s.attributes["reach.hop.count"] for s in flagged] == [6]
    assert flagged[0].attributes["reach.hop.limit_exceeded"] is True
    event = next(e for e in flagged[0].events if e.name == "reach.hop.limit_exceeded")
    assert event.attributes["reach.hop.limit"] == 5


def test_hop_limit_raises_when_asked(make_recorder) -> None:
    rec = make_recorder(max_hops=2, on_loop="raise")

    @reach_otel.agent(name="A")
    def a() -> None:
        for target in ["B", "A", "B"]:
            with reach_otel.handoff(None, target, mode="takeover"):
                pass

    with pytest.raises(reach_otel.HopLimitExceeded) as info:
        a()
    assert info.value.hops == 3
    assert info.value.limit == 2
    third = [s for s in rec.spans if s.name.startswith("handoff ")][-1]
    assert third.attributes["reach.hop.count"] == 3
    assert third.attributes["reach.handoff.status"] == "rejected"
    assert third.attributes["error.type"] == "reach_otel.HopLimitExceeded"
    assert rec.one("invoke_agent A").attributes["error.type"] == "reach_otel.HopLimitExceeded"


def test_gate_event_on_the_agent_span(rec) -> None:
    @reach_otel.tool
    def step() -> None:
        reach_otel.gate("max_steps", limit=8, observed=8)

    @reach_otel.agent(name="Worker")
    def worker() -> str:
        step()
        reach_otel.gate("token_budget", limit=1000, observed=1200)
        return "stopped"

    assert worker() == "stopped"
    span = rec.one("invoke_agent Worker")
    gates = [e for e in span.events if e.name == "reach.gate.triggered"]
    assert [dict(e.attributes) for e in gates] == [
        {"reach.gate.name": "max_steps", "reach.gate.limit": 8, "reach.gate.observed": 8},
        {"reach.gate.name": "token_budget", "reach.gate.limit": 1000, "reach.gate.observed": 1200},
    ]
    assert span.attributes["reach.gate"] == "token_budget"
    assert events(rec.one("execute_tool step")) == []
