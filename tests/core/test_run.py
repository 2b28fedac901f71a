"""The Run over the in-memory and sidecar stores: facts, transitions, gates, approvals, steps."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import skillnb
from skillnb.core.gates.evaluate import inline_gates
from skillnb.core.gates.registry import Registry
from skillnb.core.runstate.records import Event
from skillnb.errors import (
    ApprovalError,
    ConflictError,
    GateBlocked,
    SkillnbError,
    TransitionNotAllowed,
    UncertainStep,
)
from skillnb.run import Run, open_run
from skillnb.service.owner import current_owner
from skillnb.store import MemoryStore
from skillnb.store.memory import MemoryData

MARKET = """
workflow:
  name: Market_Research
  states: [init, collecting, analyzing, reporting, done]
  transitions:
    - from: init
      to: collecting
      trigger: user_request
      gates: [has_valid_topic]
      action: start_data_collection
    - from: collecting
      to: analyzing
      trigger: data_sufficient
      gates: [min_data_threshold_met, enough_budget]
      action: perform_analysis
    - from: analyzing
      to: reporting
      trigger: write_report
    - from: reporting
      to: done
      trigger: publish
      gates: [publish_ok]
    - from: reporting
      to: collecting
      trigger: need_more_data
  gates:
    has_valid_topic: {requires: [topic]}
    min_data_threshold_met: {check: "len(sources) >= 5", severity: block}
    enough_budget: {check: "budget > 100", severity: warn}
    publish_ok: {approval: "Publish the market report?"}
"""


class Clock:
    """A deterministic clock that ticks one second per call."""

    def __init__(self) -> None:
        self.now = datetime(2026, 2, 25, 11, 29, 9, tzinfo=timezone(timedelta(hours=8)))

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def workflow() -> skillnb.Workflow:
    return skillnb.Workflow.from_yaml(MARKET)


@pytest.fixture(params=["memory", "sidecar"])
def make_run(
    request: pytest.FixtureRequest, tmp_path: Path, workflow: skillnb.Workflow
) -> Callable[..., Run]:
    data = MemoryData()

    def make(**kwargs: object) -> Run:
        kwargs.setdefault("workflow", workflow)
        kwargs.setdefault("memory", False)
        kwargs.setdefault("clock", Clock())
        if request.param == "memory":
            return open_run(store=MemoryStore(data), **kwargs)  # type: ignore[arg-type]
        return open_run(state_dir=tmp_path / "state", **kwargs)  # type: ignore[arg-type]

    return make


def test_new_run_starts_in_the_initial_state(make_run: Callable[..., Run]) -> None:
    run = make_run()
    assert run.state == "init"
    assert run.id
    assert run.version == 2  # run.created, workflow.bound
    assert [e.type for e in run.history()] == ["run.created", "workflow.bound"]


def test_formalize_versions_and_history(make_run: Callable[..., Run]) -> None:
    run = make_run()
    first = run.formalize("budget", 5000, kind="decision", note="from the brief")
    second = run.formalize("budget", 7000, kind="decision")
    assert (first.version, second.version) == (1, 2)
    assert run.fact("budget").value == 7000  # type: ignore[union-attr]
    assert [f.value for f in run.fact_history("budget")] == [5000, 7000]
    assert run.fact_history("budget")[0].note == "from the brief"
    rolled = run.rollback("budget", 1)
    assert (rolled.version, rolled.value) == (3, 5000)
    assert rolled.note == "rollback to v1"
    assert run.fact("missing") is None
    with pytest.raises(SkillnbError, match="no version 9"):
        run.rollback("budget", 9)


def test_expected_version_is_a_compare_and_swap(make_run: Callable[..., Run]) -> None:
    run = make_run()
    other = make_run()
    seen = run.version
    other.formalize("x", 1)
    with pytest.raises(ConflictError) as info:
        run.formalize("x", 2, expected_version=seen)
    assert info.value.expected == seen
    assert info.value.actual == seen + 1
    assert run.fact("x").value == 1  # type: ignore[union-attr]
    run.formalize("x", 2, expected_version=run.version)
    assert other.fact("x").value == 2  # type: ignore[union-attr]


# (trigger, facts before, expected state or error)
TRANSITIONS: list[tuple[list[str], dict[str, object], str | type[Exception]]] = [
    (["user_request"], {"topic": "EV batteries"}, "collecting"),
    (["user_request"], {}, GateBlocked),
    (["data_sufficient"], {"topic": "t"}, TransitionNotAllowed),
    (
        ["user_request", "data_sufficient"],
        {"topic": "t", "sources": [1, 2, 3, 4, 5], "budget": 500},
        "analyzing",
    ),
    (["user_request", "data_sufficient"], {"topic": "t", "sources": [1, 2]}, GateBlocked),
    (
        ["user_request", "data_sufficient"],
        {"topic": "t", "sources": [1, 2, 3, 4, 5], "budget": 1},
        "analyzing",
    ),
    (
        ["user_request", "data_sufficient", "write_report"],
        {"topic": "t", "sources": list(range(6)), "budget": 200},
        "reporting",
    ),
    (
        ["user_request", "data_sufficient", "write_report", "publish"],
        {"topic": "t", "sources": list(range(6)), "budget": 200},
        GateBlocked,
    ),
    (
        ["user_request", "data_sufficient", "write_report", "need_more_data"],
        {"topic": "t", "sources": list(range(6)), "budget": 200},
        "collecting",
    ),
]


@pytest.mark.parametrize(("triggers", "facts", "expected"), TRANSITIONS)
def test_transition_table(
    make_run: Callable[..., Run],
    triggers: list[str],
    facts: dict[str, object],
    expected: str | type[Exception],
) -> None:
    run = make_run()
    for key, value in facts.items():
        run.formalize(key, value)
    if isinstance(expected, str):
        for trigger in triggers:
            run.fire(trigger)
        assert run.state == expected
    else:
        for trigger in triggers[:-1]:
            run.fire(trigger)
        before = run.state
        with pytest.raises(expected):
            run.fire(triggers[-1])
        assert run.state == before


def test_blocked_fire_records_the_report_and_names_the_gate(make_run: Callable[..., Run]) -> None:
    run = make_run()
    with pytest.raises(GateBlocked) as info:
        run.fire("user_request")
    assert info.value.state == "init"
    assert info.value.trigger == "user_request"
    [result] = info.value.report.results
    assert (result.gate, result.kind, result.passed) == ("has_valid_topic", "requires", False)
    assert "topic" in result.message
    assert run.snapshot.reports["transition:user_request"].passed is False
    assert "has_valid_topic" in str(info.value)


def test_check_is_a_dry_run(make_run: Callable[..., Run]) -> None:
    run = make_run()
    before = run.version
    report = run.check("user_request")
    assert not report.passed
    assert run.version == before
    run.formalize("topic", "x")
    assert run.check("user_request").passed


def test_warning_gate_passes_with_a_warning(make_run: Callable[..., Run]) -> None:
    run = make_run()
    for key, value in {"topic": "t", "sources": list(range(5)), "budget": 10}.items():
        run.formalize(key, value)
    run.fire("user_request")
    report = run.check("data_sufficient")
    assert report.passed
    assert [w.gate for w in report.warnings] == ["enough_budget"]
    run.fire("data_sufficient")
    assert run.snapshot.reports["transition:data_sufficient"].warnings


def _to_reporting(run: Run) -> None:
    for key, value in {"topic": "t", "sources": list(range(5)), "budget": 500}.items():
        run.formalize(key, value)
    for trigger in ("user_request", "data_sufficient", "write_report"):
        run.fire(trigger)


def test_approval_flow(make_run: Callable[..., Run]) -> None:
    run = make_run()
    _to_reporting(run)
    with pytest.raises(ApprovalError, match="early approval"):
        run.approve("publish_ok", by="ana")
    with pytest.raises(GateBlocked) as info:
        run.fire("publish")
    assert "waiting for approval" not in info.value.report.results[0].message  # first ask
    [request] = run.pending()
    assert (request.gate, request.state, request.message) == (
        "publish_ok",
        "reporting",
        "Publish the market report?",
    )
    with pytest.raises(GateBlocked, match="waiting for approval"):
        run.fire("publish")
    assert len(run.pending()) == 1  # asking again does not duplicate the request
    approval = run.approve("publish_ok", by="ana", note="numbers checked")
    assert (approval.status, approval.decided_by) == ("approved", "ana")
    with pytest.raises(ApprovalError, match="already approved"):
        run.approve("publish_ok", by="bob")
    assert run.check("publish").passed
    run.fire("publish")
    assert run.state == "done"
    assert run.snapshot.approvals[request.id].status == "consumed"
    assert run.pending() == []


def test_rejection_then_a_new_request(make_run: Callable[..., Run]) -> None:
    run = make_run()
    _to_reporting(run)
    with pytest.raises(GateBlocked):
        run.fire("publish")
    run.reject("publish_ok", by="ana", note="too early")
    with pytest.raises(GateBlocked, match="rejected by ana: too early"):
        run.fire("publish")
    [again] = run.pending()
    run.approve("publish_ok", by="ana", request=again.id)
    run.fire("publish")
    assert run.state == "done"


def test_a_rejected_request_asked_again_says_so_in_the_cell_and_the_view(
    make_run: Callable[..., Run],
) -> None:
    run = make_run()
    _to_reporting(run)
    with pytest.raises(GateBlocked):
        run.fire("publish")
    run.reject("publish_ok", by="ana", note="too early; numbers missing")
    with pytest.raises(GateBlocked) as info:
        run.fire("publish")
    [again] = run.pending()
    said = info.value.report.results[0].message
    assert said.startswith("rejected by ana: too early; numbers missing; asked again: ")
    assert "waiting for approval (Publish the market report?)" in said
    assert "run the step again" not in said
    # the view's last report and its next transition agree with the pending request
    view = run.describe()
    [result] = view["last_report"]["results"]
    [publish] = [n for n in view["next"] if n["trigger"] == "publish"]
    assert result["passed"] is False
    assert result["message"] == publish["gates"][0]["message"]
    assert result["message"].startswith("waiting for approval (Publish the market report?)")
    assert [p["id"] for p in view["pending"]] == [again.id]


def test_an_approval_decided_after_the_check_shows_in_the_last_report(
    make_run: Callable[..., Run],
) -> None:
    run = make_run()
    _to_reporting(run)
    with pytest.raises(GateBlocked):
        run.fire("publish")
    before = run.describe()["last_report"]
    assert before["passed"] is False
    assert before["results"][0]["message"].startswith("waiting for approval")  # it asked
    run.approve("publish_ok", by="ana")
    view = run.describe()
    report = view["last_report"]
    [publish] = [n for n in view["next"] if n["trigger"] == "publish"]
    assert publish["status"] == "passing"
    assert (report["passed"], report["results"][0]["passed"]) == (True, True)
    assert report["results"][0]["message"] == "approved by ana"
    assert report["version"] == before["version"]  # the check itself is the same one
    run.fire("publish")
    # in a later state the report is history again, as it was recorded
    assert run.describe()["last_report"]["state"] == "reporting"


def test_stale_approval_is_refused(make_run: Callable[..., Run]) -> None:
    run = make_run()
    _to_reporting(run)
    with pytest.raises(GateBlocked):
        run.fire("publish")
    [old] = run.pending()
    run.fire("need_more_data")  # the run leaves the state the request was asked in
    assert run.pending() == []
    with pytest.raises(ApprovalError, match="stale"):
        run.approve("publish_ok", by="ana", request=old.id)
    run.fire("data_sufficient")
    run.fire("write_report")
    with pytest.raises(ApprovalError, match="stale"):
        run.approve("publish_ok", by="ana")  # the only request is from the earlier visit


def test_approval_is_consumed_once_per_visit(make_run: Callable[..., Run]) -> None:
    wf = skillnb.Workflow.from_dict(
        {
            "workflow": {
                "name": "loop",
                "states": ["a", "b"],
                "transitions": [
                    {"from": "a", "to": "b", "trigger": "go", "gates": ["ok"]},
                    {"from": "b", "to": "a", "trigger": "back"},
                ],
                "gates": {"ok": {"approval": "go on?"}},
            }
        }
    )
    run = make_run(workflow=wf)
    with pytest.raises(GateBlocked):
        run.fire("go")
    run.approve("ok", by="ana")
    run.fire("go")
    run.fire("back")
    with pytest.raises(GateBlocked):
        run.fire("go")  # the earlier approval was used up


def test_actions_run_as_durable_steps(
    make_run: Callable[..., Run], workflow: skillnb.Workflow
) -> None:
    registry = Registry()
    calls: list[str] = []

    @registry.action("start_data_collection")
    def start(run: Run) -> None:
        calls.append(run.state or "")

    run = make_run()
    run.gates.registry = registry
    run.formalize("topic", "t")
    run.fire("user_request")
    assert calls == ["init"]
    step = run.snapshot.steps["transition:user_request"]
    assert step.status == "committed"


def test_failed_action_records_nothing_but_the_failure(make_run: Callable[..., Run]) -> None:
    registry = Registry()

    @registry.action("start_data_collection")
    def start(run: Run) -> None:
        raise RuntimeError("quota exceeded")

    run = make_run()
    run.gates.registry = registry
    run.formalize("topic", "t")
    with pytest.raises(RuntimeError, match="quota"):
        run.fire("user_request")
    assert run.state == "init"
    assert run.snapshot.steps["transition:user_request"].status == "failed"
    assert run.steps.uncertain() == []


def test_uncertain_step_is_not_rerun_until_cleared(make_run: Callable[..., Run]) -> None:
    run = make_run()
    run.journal.commit(
        lambda _s: [run.journal.draft("step.started", key="gate:send", source_hash="h")]
    )
    assert run.steps.uncertain() == ["gate:send"]
    with pytest.raises(UncertainStep) as info:
        run.gates.run_gated(None, lambda: 1, key="gate:send", source_hash="h", subject=run)
    assert info.value.step == "gate:send"
    run.steps.clear("gate:send", by="ana")
    assert run.steps.uncertain() == []
    outcome = run.gates.run_gated(None, lambda: 42, key="gate:send", source_hash="h", subject=run)
    assert (outcome.status, outcome.result) == ("ran", 42)
    with pytest.raises(SkillnbError, match="not uncertain"):
        run.steps.clear("gate:send")


def test_idempotent_step_may_rerun(make_run: Callable[..., Run]) -> None:
    run = make_run()
    run.journal.commit(lambda _s: [run.journal.draft("step.started", key="s", idempotent=True)])
    assert run.gates.run_gated(None, lambda: "again", key="s", subject=run).result == "again"


def test_gated_cell_fast_forwards_when_done(make_run: Callable[..., Run]) -> None:
    run = make_run()
    run.formalize("topic", "t")
    ran: list[int] = []
    first = run.gates.run_gated(
        "user_request", lambda: ran.append(1), source_hash="h1", skip_done=True, subject=run
    )
    again = run.gates.run_gated(
        "user_request", lambda: ran.append(2), source_hash="h1", skip_done=True, subject=run
    )
    assert (first.status, again.status, ran) == ("ran", "done", [1])
    assert run.state == "collecting"


def test_inline_gates_and_skip(make_run: Callable[..., Run]) -> None:
    run = make_run()
    gates = inline_gates(requires=["sources"], check="len(sources) > 2", name_prefix="cell")
    outcome = run.gates.run_gated(
        None, lambda: 1, gates=gates, key="cell", on_block="skip", subject=run
    )
    assert outcome.status == "blocked"
    assert outcome.report is not None
    assert not outcome.report.passed
    run.formalize("sources", [1, 2, 3])
    assert run.gates.run_gated(None, lambda: 2, gates=gates, key="cell", subject=run).result == 2


def test_batches_resume_where_they_stopped(make_run: Callable[..., Run]) -> None:
    run = make_run()
    docs = [f"doc{i:02}.txt" for i in range(10)]
    seen: list[str] = []
    for doc in run.items("docs", docs):
        seen.append(doc)
        if doc == "doc03.txt":
            break  # doc03 was left by break: not done
    assert seen == docs[:4]
    again = make_run()
    rest = list(again.items("docs", docs))
    assert rest == docs[3:]
    batch = again.snapshot.batches["docs"]
    assert (len(batch.done), batch.total, batch.remaining()) == (10, 10, [])
    assert list(again.items("docs", docs)) == []


def test_a_failing_item_stays_not_done(make_run: Callable[..., Run]) -> None:
    run = make_run()

    def work() -> None:
        for item in run.items("b", ["a", "b", "c"]):
            if item == "b":
                raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        work()
    assert run.snapshot.batches["b"].remaining() == ["b", "c"]


def test_key_ids_milestones_and_describe(make_run: Callable[..., Run]) -> None:
    run = make_run()
    run.set_key_ids(last_session_id=246, last_batch_id=374)
    run.formalize("topic", "<script>alert(1)</script>")
    event = run.milestone("kickoff")
    assert event.data["facts"] == {"topic": 1}
    view = run.describe()
    assert view["state"] == "init"
    assert view["key_ids"] == {"last_session_id": 246, "last_batch_id": 374}
    assert view["milestones"][0]["name"] == "kickoff"
    [nxt] = view["next"]
    assert (nxt["trigger"], nxt["to"], nxt["status"]) == ("user_request", "collecting", "passing")
    assert view["facts"][0]["preview"]
    assert "stateDiagram" in view["mermaid"]


def test_compaction_keeps_state_and_history(make_run: Callable[..., Run]) -> None:
    run = make_run()
    for i in range(5):
        run.formalize("n", i)
    run.compact()
    run.formalize("n", 99)
    fresh = make_run()
    assert fresh.fact("n").value == 99  # type: ignore[union-attr]
    assert [f.value for f in fresh.fact_history("n")] == [0, 1, 2, 3, 4, 99]
    assert fresh.version == run.version


def test_run_without_workflow_keeps_facts(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path, memory=False)
    assert run.state is None
    run.formalize("x", {"a": [1, 2]})
    with pytest.raises(TransitionNotAllowed):
        run.fire("anything")
    again = open_run(state_dir=tmp_path, memory=False)
    assert again.fact("x").value == {"a": [1, 2]}  # type: ignore[union-attr]


def test_stored_definition_restores_the_workflow(
    tmp_path: Path, workflow: skillnb.Workflow
) -> None:
    open_run(state_dir=tmp_path, workflow=workflow, memory=False).formalize("topic", "t")
    again = open_run(state_dir=tmp_path, memory=False)
    assert again.workflow is not None
    assert again.workflow.hash == workflow.hash
    again.fire("user_request")
    assert again.state == "collecting"


def test_open_run_needs_a_location() -> None:
    with pytest.raises(SkillnbError, match="needs a notebook"):
        open_run()


def test_listeners_see_commits(make_run: Callable[..., Run]) -> None:
    run = make_run()
    seen: list[str] = []
    unsubscribe = run.journal.subscribe(lambda events: seen.extend(e.type for e in events))
    run.formalize("x", 1)
    unsubscribe()
    run.formalize("x", 2)
    assert seen == ["fact.formalized"]


def test_a_step_in_flight_in_a_live_process_is_not_uncertain(make_run: Callable[..., Run]) -> None:
    run = make_run()
    alive = current_owner()
    run.journal.commit(lambda _s: [run.journal.draft("step.started", key="live", owner=alive)])
    assert run.steps.uncertain() == []
    assert run.gates.run_gated(None, lambda: "ran", key="live", subject=run).result == "ran"

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = f"{socket.gethostname()}:{gone.stdout.strip()}:0"
    run.journal.commit(lambda _s: [run.journal.draft("step.started", key="crashed", owner=dead)])
    assert run.steps.uncertain() == ["crashed"]
    assert run.describe()["uncertain"][0]["key"] == "crashed"


def test_stable_summary_leaves_out_what_differs_between_executions(
    make_run: Callable[..., Run],
) -> None:
    run = make_run(memory=None)
    run.formalize("topic", "EV batteries", kind="decision")
    run.milestone("kickoff")
    full, stable = run.summary(), run.summary(stable=True)
    assert run.id in full
    assert "2026-02-25T" in full
    assert run.id not in stable
    assert "2026-02-25T" not in stable
    assert "- topic (v1) = EV batteries" in stable
    assert "- kickoff at v" in stable


def test_history_after_reopening_a_compacted_run_reads_the_archive_once(
    make_run: Callable[..., Run],
) -> None:
    run = make_run()
    for i in range(6):
        run.formalize("n", i)
    run.compact()
    run.formalize("n", 6)
    fresh = make_run()
    reads: list[int] = []
    original = fresh.store.history

    def counting() -> Iterator[Event]:
        reads.append(1)
        return original()

    fresh.store.history = counting  # type: ignore[method-assign]
    first = fresh.history(5)
    second = fresh.history(5)
    assert [e.seq for e in first] == [e.seq for e in second] == list(range(5, 10))
    assert reads == [1]
    assert [e.type for e in fresh.history(2)] == ["fact.formalized", "fact.formalized"]


def test_describe_history_leaves_out_step_bookkeeping(make_run: Callable[..., Run]) -> None:
    run = make_run()
    run.formalize("topic", "t")
    run.gates.run_gated("user_request", lambda: None, source_hash="h", subject=run)
    types = [h["type"] for h in run.describe()["history"]]
    assert "step.started" not in types
    assert "step.committed" not in types
    assert "transition.fired" in types


def test_an_unknown_trigger_gets_a_suggestion(tmp_path: Path, workflow: skillnb.Workflow) -> None:
    run = open_run(state_dir=tmp_path, workflow=workflow, memory=False)
    known = sorted({t.trigger for t in workflow.transitions})
    typo = known[0][:-1] + known[0][-1] * 2
    with pytest.raises(TransitionNotAllowed, match=rf"unknown trigger '{typo}' \(did you mean"):
        run.fire(typo)
    with pytest.raises(TransitionNotAllowed, match=r"unknown trigger 'qqqqqq' \(known: "):
        run.fire("qqqqqq")
