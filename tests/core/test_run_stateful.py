"""A Hypothesis state machine over the Run: the invariants hold whatever the sequence.

- no state is entered while a blocking gate of its transition fails;
- the version strictly increases with every committed write;
- fact history is append-only (every earlier version stays, unchanged).
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import skillnb
from skillnb.errors import ApprovalError, GateBlocked, TransitionNotAllowed
from skillnb.run import Run, open_run
from skillnb.store import MemoryStore

WORKFLOW = {
    "workflow": {
        "name": "stateful",
        "states": ["a", "b", "c"],
        "transitions": [
            {"from": "a", "to": "b", "trigger": "go", "gates": ["has_n"]},
            {"from": "b", "to": "c", "trigger": "finish", "gates": ["big_n", "ok"]},
            {"from": "b", "to": "a", "trigger": "back"},
            {"from": "c", "to": "a", "trigger": "reset", "gates": ["small_n"]},
        ],
        "gates": {
            "has_n": {"requires": ["n"]},
            "big_n": {"check": "n >= 3"},
            "small_n": {"check": "n < 10", "severity": "warn"},
            "ok": {"approval": "finish?"},
        },
    }
}

KEYS = st.sampled_from(["n", "m"])
VALUES = st.integers(min_value=-5, max_value=20)
TRIGGERS = st.sampled_from(["go", "finish", "back", "reset"])


class RunMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.run: Run = open_run(
            store=MemoryStore(), workflow=skillnb.Workflow.from_dict(WORKFLOW), memory=False
        )
        self.last_version = self.run.version
        self.history: dict[str, list[Any]] = {}

    def _advanced(self) -> None:
        version = self.run.version
        assert version > self.last_version
        self.last_version = version

    @rule(key=KEYS, value=VALUES)
    def formalize(self, key: str, value: int) -> None:
        fact = self.run.formalize(key, value)
        self.history.setdefault(key, []).append(value)
        assert fact.version == len(self.history[key])
        self._advanced()

    @rule(trigger=TRIGGERS)
    def fire(self, trigger: str) -> None:
        before = self.run.state
        values = dict(self.run.journal.values())
        try:
            self.run.fire(trigger)
        except TransitionNotAllowed:
            assert self.run.state == before
            return
        except GateBlocked as blocked:
            report = blocked.report
            assert self.run.state == before
            assert report.blocking
            return
        # entered: every blocking gate passed on the values seen before the fire
        if trigger == "go":
            assert "n" in values
        if trigger == "finish":
            assert values["n"] >= 3
        self._advanced()

    @precondition(lambda self: bool(self.run.pending()))
    @rule(approve=st.booleans())
    def decide(self, approve: bool) -> None:
        gate = self.run.pending()[0].gate
        if approve:
            self.run.approve(gate, by="tester")
        else:
            self.run.reject(gate, by="tester")
        self._advanced()

    @rule()
    def early_or_repeated_approval_is_refused(self) -> None:
        if self.run.pending():
            return
        version = self.run.version
        try:
            self.run.approve("ok", by="tester")
        except ApprovalError:
            assert self.run.version == version
        else:
            raise AssertionError("an approval with no open request was accepted")

    @rule()
    def compact(self) -> None:
        self.run.compact()

    @invariant()
    def fact_history_is_append_only(self) -> None:
        for key, values in self.history.items():
            assert [f.value for f in self.run.fact_history(key)] == values

    @invariant()
    def state_is_a_workflow_state(self) -> None:
        assert self.run.state in ("a", "b", "c")


RunMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
TestRunMachine = RunMachine.TestCase
