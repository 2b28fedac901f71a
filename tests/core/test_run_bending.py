"""Gates that bend, through the Run: profiles and audited bypasses, escalation and fallback on
timeout, follow-ups and corrective actions of warning gates, over the sidecar store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.gates.registry import Registry
from skillnb.core.workflow.model import Workflow
from skillnb.errors import GateBlocked, SkillnbError, WorkflowError
from skillnb.run import Run, open_run

BEND = """
workflow:
  name: Bend
  states: [init, collecting, manual, analyzing, done]
  profiles: [demo, test]
  transitions:
    - {from: init, to: collecting, trigger: start, gates: [may_publish]}
    - {from: collecting, to: analyzing, trigger: analyze, gates: [quota]}
    - {from: collecting, to: analyzing, trigger: fetch, gates: [feed]}
    - {from: collecting, to: manual, trigger: by_hand, action: note_manual}
    - {from: analyzing, to: done, trigger: finish, gates: [enough_sources, budget_ok]}
  gates:
    may_publish: {python: permission, bypass_in: [demo, test]}
    quota:
      resource: quota
      timeout: 0.05
      retries: 1
      backoff: 0
      on_timeout: {escalate: "Quota service silent: go on?"}
    feed: {resource: feed, timeout: 0.05, on_timeout: {fallback: by_hand}}
    enough_sources:
      check: "len(sources) >= 3"
      severity: warn
      follow_up: "Add sources before publishing"
    budget_ok: {check: "budget > 100", severity: warn, action: top_up}
"""

_release = threading.Event()


class Resources:
    """Callables behind the gates, with what they were asked."""

    def __init__(self) -> None:
        self.mode = "hang"
        self.calls: list[str] = []
        self.actions: list[str] = []

    def resource(self, name: str) -> Any:
        def call(_facts: Any) -> bool:
            self.calls.append(name)
            if self.mode == "hang":
                _release.wait(5)
            if self.mode == "raise":
                raise ConnectionError("refused")
            return self.mode == "ok"

        return call


@pytest.fixture
def resources() -> Iterator[Resources]:
    yield Resources()
    _release.set()
    _release.clear()


@pytest.fixture
def registry(resources: Resources) -> Registry:
    registry = Registry()
    registry.register_gate("permission", lambda _f: (False, "needs the publisher role"))
    registry.register_gate("quota", resources.resource("quota"))
    registry.register_gate("feed", resources.resource("feed"))
    registry.register_action("note_manual", lambda run: resources.actions.append("note_manual"))
    registry.register_action("top_up", lambda run: resources.actions.append(f"top_up@{run.state}"))
    return registry


def _open(tmp_path: Path, registry: Registry, **kwargs: Any) -> Run:
    run = open_run(
        state_dir=tmp_path / "run", workflow=Workflow.from_yaml(BEND), memory=False, **kwargs
    )
    run.gates.registry = registry
    return run


def _to(run: Run, state: str) -> None:
    """Move the run to ``state`` through the journal, as a rebuilt run would."""
    from skillnb.core.runstate.records import EventDraft

    now = run.journal.clock()
    run.journal.append_drafts(
        [EventDraft(type="transition.fired", at=now, data={"trigger": "t", "to": state})]
    )


# -- profiles ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("how", "profile", "passes"),
    [
        ({}, "default", False),
        ({"profile": "demo"}, "demo", True),
        ({"profile": "test"}, "test", True),
        ({"env": {"SKILLNB_PROFILE": "demo"}}, "demo", True),
        ({"profile": "default", "env": {"SKILLNB_PROFILE": "demo"}}, "default", False),
    ],
)
def test_a_permission_gate_is_bypassed_only_in_its_profiles(
    tmp_path: Path, registry: Registry, how: dict[str, Any], profile: str, passes: bool
) -> None:
    run = _open(tmp_path, registry, **how)
    assert run.profile == profile
    assert run.describe()["profile"] == profile
    if not passes:
        with pytest.raises(GateBlocked, match="needs the publisher role"):
            run.fire("start")
        assert not [e for e in run.history(50) if e.type == "gate.bypassed"]
        return
    fired = run.fire("start")
    assert fired.data["profile"] == profile
    result = run.snapshot.reports["transition:start"].results[0]
    assert result.bypassed
    assert result.message == f"bypassed (profile {profile})"
    audit = [e for e in run.history(50) if e.type == "gate.bypassed"]
    assert [(e.data["gate"], e.data["profile"], e.data["key"]) for e in audit] == [
        ("may_publish", profile, "transition:start")
    ]


def test_an_undeclared_profile_is_refused_at_open(tmp_path: Path, registry: Registry) -> None:
    with pytest.raises(WorkflowError, match="profile 'prod' is not declared"):
        _open(tmp_path, registry, profile="prod")
    _open(tmp_path, registry)  # the stored definition is checked on reopen, too
    with pytest.raises(WorkflowError, match="'staging' is not declared"):
        open_run(state_dir=tmp_path / "run", profile="staging", memory=False)


def test_a_bypass_is_shown_in_the_dry_run_and_the_view(tmp_path: Path, registry: Registry) -> None:
    run = _open(tmp_path, registry, profile="demo")
    assert run.check("start").results[0].message == "bypassed (profile demo)"
    gates = run.describe()["next"][0]["gates"]
    assert gates[0]["passed"] is True
    assert gates[0]["message"] == "bypassed (profile demo)"
    assert "profile: demo" in run.summary()


# -- escalation ----------------------------------------------------------------------------
def test_a_timed_out_resource_escalates_to_an_approval(
    tmp_path: Path, registry: Registry, resources: Resources
) -> None:
    run = _open(tmp_path, registry)
    _to(run, "collecting")
    with pytest.raises(GateBlocked, match="escalated to a person") as blocked:
        run.fire("analyze")
    assert blocked.value.report.results[0].attempts == 2
    (request,) = run.pending()
    assert (request.gate, request.message) == ("quota", "Quota service silent: go on?")
    assert resources.calls == ["quota", "quota"]
    with pytest.raises(GateBlocked, match="waiting for approval"):
        run.fire("analyze")
    assert len(run.pending()) == 1  # asked once, not once per try
    run.approve("quota", by="ana", note="the feed is fine")
    resources.calls.clear()
    fired = run.fire("analyze")
    assert fired.data["to"] == "analyzing"
    assert resources.calls == []  # a person decided: the resource is not asked again
    assert run.snapshot.approvals[request.id].status == "consumed"


def test_a_rejected_escalation_blocks_and_asks_anew(tmp_path: Path, registry: Registry) -> None:
    run = _open(tmp_path, registry)
    _to(run, "collecting")
    with pytest.raises(GateBlocked):
        run.fire("analyze")
    run.reject("quota", by="ana", note="wait for the service")
    with pytest.raises(GateBlocked, match="rejected by ana: wait for the service"):
        run.fire("analyze")
    assert [a.status for a in run.snapshot.approvals.values()] == ["rejected", "pending"]


def test_an_escalated_gate_whose_resource_recovers_passes_on_its_own(
    tmp_path: Path, registry: Registry, resources: Resources
) -> None:
    run = _open(tmp_path, registry)
    _to(run, "collecting")
    with pytest.raises(GateBlocked):
        run.fire("analyze")
    resources.mode = "ok"
    assert run.fire("analyze").data["to"] == "analyzing"
    assert run.pending() == []
    assert [a.status for a in run.snapshot.approvals.values()] == ["expired"]


# -- fallback ------------------------------------------------------------------------------
def test_a_timed_out_gate_fires_its_fallback_and_says_why(
    tmp_path: Path, registry: Registry, resources: Resources
) -> None:
    run = _open(tmp_path, registry)
    _to(run, "collecting")
    fired = run.fire("fetch")
    assert (fired.data["trigger"], fired.data["to"]) == ("by_hand", "manual")
    assert fired.data["fallback"]["for"] == "fetch"
    assert fired.data["fallback"]["gate"] == "feed"
    assert run.state == "manual"
    assert resources.actions == ["note_manual"]  # the fallback's own action ran
    report = run.snapshot.reports["transition:fetch"]
    assert "timed out after 0.05s; falling back to 'by_hand'" in report.results[0].message
    assert "fallback: gate feed of fetch timed out" in run.describe()["history"][-1]["summary"]


def test_a_gated_cell_that_falls_back_is_marked_done_in_the_fallbacks_append(
    tmp_path: Path, registry: Registry, resources: Resources
) -> None:
    run = _open(tmp_path, registry)
    _to(run, "collecting")
    store = run.journal.store
    appends: list[tuple[list[str], bool]] = []
    append, append_current = store.append, run.journal._append_current
    assert append_current is not None  # the sidecar's: the journal appends through it first

    def counted(drafts: Any, **kwargs: Any) -> Any:
        appends.append(([d.type for d in drafts], kwargs.get("sync", True)))
        return append(drafts, **kwargs)

    def counted_current(drafts: Any, *args: Any, **kwargs: Any) -> Any:
        events = append_current(drafts, *args, **kwargs)
        if events is not None:  # else nothing was written, and append is called
            appends.append(([d.type for d in drafts], kwargs.get("sync", True)))
        return events

    store.append = counted  # type: ignore[method-assign]
    run.journal._append_current = counted_current
    outcome = run.gates.run_gated(
        "fetch", lambda: None, key="gate:fetch", source_hash="sha256:cell", skip_done=True
    )
    assert outcome.status == "fallback"
    assert run.state == "manual"
    assert resources.actions == ["note_manual"]
    # The block report; the fallback's start marker; then, in one durable append, the
    # fallback's transition with its step and the cell that fell back, done.
    assert appends[-1] == (
        [
            "transition.fired",
            "step.committed",
            "step.started",
            "step.committed",
        ],
        True,
    )
    last = run.journal.state.steps["gate:fetch"]
    assert (last.status, last.source_hash) == ("committed", "sha256:cell")
    assert [e.data["key"] for e in outcome.events if e.type.startswith("step.")] == [
        "transition:by_hand",
        "gate:fetch",
        "gate:fetch",
    ]
    again = run.gates.run_gated(
        "fetch", lambda: None, key="gate:fetch", source_hash="sha256:cell", skip_done=True
    )
    assert again.status == "done"  # the cell fell back once: not run, nor fired, again
    assert run.state == "manual"


@pytest.mark.parametrize(
    ("mode", "fragment"), [("raise", "ConnectionError: refused"), ("no", "returned False")]
)
def test_failures_that_are_not_timeouts_keep_failing_the_gate(
    tmp_path: Path, registry: Registry, resources: Resources, mode: str, fragment: str
) -> None:
    run = _open(tmp_path, registry)
    _to(run, "collecting")
    resources.mode = mode
    for trigger in ("fetch", "analyze"):
        with pytest.raises(GateBlocked, match=fragment):
            run.fire(trigger)
    assert run.state == "collecting"
    assert run.pending() == []


# -- follow-ups and corrective actions -----------------------------------------------------
def test_a_warning_leaves_a_follow_up_until_it_is_resolved(
    tmp_path: Path, registry: Registry
) -> None:
    run = _open(tmp_path, registry)
    run.formalize("sources", ["a"])
    run.formalize("budget", 500)
    _to(run, "analyzing")
    run.fire("finish")
    (follow_up,) = run.follow_ups()
    assert (follow_up.gate, follow_up.state, follow_up.trigger) == (
        "enough_sources",
        "analyzing",
        "finish",
    )
    assert follow_up.text == "Add sources before publishing"
    assert "len(sources) >= 3 is false" in follow_up.reason
    assert [f["id"] for f in run.describe()["follow_ups"]] == [follow_up.id]
    assert "Add sources before publishing" in run.summary()
    reopened = open_run(state_dir=tmp_path / "run", memory=False)
    assert [f.id for f in reopened.follow_ups()] == [follow_up.id]
    resolved = reopened.resolve_follow_up(follow_up.id, by="ana", note="added two")
    assert (resolved.status, resolved.resolved_by, resolved.note) == (
        "resolved",
        "ana",
        "added two",
    )
    assert run.follow_ups() == []
    assert run.describe()["follow_ups"] == []
    assert "Open follow-ups" not in run.summary()
    with pytest.raises(SkillnbError, match="already resolved by ana"):
        run.resolve_follow_up(follow_up.id, by="bo")
    with pytest.raises(SkillnbError, match="no follow-up 'nope'"):
        run.resolve_follow_up("nope", by="bo")


def test_a_follow_up_is_opened_once_per_gate_and_state(tmp_path: Path) -> None:
    workflow = (
        Workflow.build("loop")
        .states("a")
        .transition("a", "a", trigger="again", gates=["thin"])
        .gate("thin", check="n > 1", severity="warn", follow_up="more n")
        .done()
    )
    run = open_run(state_dir=tmp_path / "r", workflow=workflow, memory=False)
    run.formalize("n", 0)
    run.fire("again")
    run.fire("again")
    assert len(run.follow_ups()) == 1


def test_a_passing_warning_gate_opens_nothing(tmp_path: Path, registry: Registry) -> None:
    run = _open(tmp_path, registry)
    run.formalize("sources", ["a", "b", "c"])
    run.formalize("budget", 500)
    _to(run, "analyzing")
    run.fire("finish")
    assert run.follow_ups() == []


def test_a_corrective_action_runs_after_the_transition_as_a_step(
    tmp_path: Path, registry: Registry, resources: Resources
) -> None:
    run = _open(tmp_path, registry)
    run.formalize("sources", ["a", "b", "c"])
    run.formalize("budget", 10)
    _to(run, "analyzing")
    run.fire("finish")
    assert resources.actions == ["top_up@done"]
    step = run.snapshot.steps["corrective:budget_ok"]
    assert step.status == "committed"
    fired = next(
        e.seq
        for e in run.history(50)
        if e.type == "transition.fired" and e.data["trigger"] == "finish"
    )
    assert step.started_seq > fired


def test_a_failing_corrective_action_is_recorded_and_raised(
    tmp_path: Path, registry: Registry
) -> None:
    def broken(_run: Run) -> None:
        raise RuntimeError("no budget api")

    registry.register_action("top_up", broken)
    run = _open(tmp_path, registry)
    run.formalize("sources", ["a", "b", "c"])
    run.formalize("budget", 10)
    _to(run, "analyzing")
    with pytest.raises(RuntimeError, match="no budget api"):
        run.fire("finish")
    assert run.state == "done"  # a warning does not stop the flow
    step = run.snapshot.steps["corrective:budget_ok"]
    assert (step.status, step.error) == ("failed", "RuntimeError: no budget api")
