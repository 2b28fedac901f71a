"""Archiving finished runs into the skill's long-term memory, and recalling from it."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import skillnb
from skillnb.errors import GateBlocked, SkillnbError
from skillnb.run import Run, open_run

MARKET = Path(__file__).resolve().parents[1] / "fixtures" / "workflows" / "market_research.yaml"
TOPICS = ("EU retail analytics", "UK grocery delivery", "Nordic e-bike rentals")


class Clock:
    """A clock that starts on a given day and ticks one minute per call."""

    def __init__(self, day: int) -> None:
        self.now = datetime(2026, 11, day, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def _open(folder: Path, day: int = 20) -> Run:
    workflow = skillnb.Workflow.from_yaml(MARKET)
    return open_run(state_dir=folder, workflow=workflow, clock=Clock(day), memory=False)


def _to_analyzing(run: Run, topic: str) -> None:
    run.formalize("topic", topic, kind="decision")
    run.fire("user_request")
    run.formalize("sources", [f"https://example.org/{topic[:2]}/{i}" for i in range(6)])
    run.fire("data_sufficient")


def _finished_run(folder: Path, n: int) -> Run:
    topic = TOPICS[n]
    run = _open(folder, day=2 + 7 * n)
    _to_analyzing(run, topic)
    run.formalize(
        "analysis",
        f"Analysis of {topic}: the market grows {8 + n}% a year; pricing pressure comes from "
        "new entrants, and the top three vendors hold most of the share.",
        kind="summary",
    )
    run.fire("analysis_done")
    run.formalize(
        "report",
        {
            "score": 0.9,
            "text": f"Weekly report on {topic}: market growth of {8 + n}% and pricing "
            "pressure; recommendation: watch the entrants.",
        },
        kind="summary",
    )
    with pytest.raises(GateBlocked):
        run.fire("publish")
    run.approve("editor_approved", by="editor", note=f"report {n} approved")
    run.fire("publish")
    assert run.state == "done"
    return run


@pytest.fixture
def archived(tmp_path: Path) -> list[str]:
    ids = []
    for n in range(3):
        run = _finished_run(tmp_path / f"run{n}", n)
        report = run.archive()
        assert report.items >= 8
        ids.append(run.id)
        run.close() if hasattr(run, "close") else run.store.close()
    return ids


@pytest.mark.parametrize(("state", "key"), [("analyzing", "analysis"), ("reporting", "report")])
def test_recall_prefers_items_from_the_current_state(
    tmp_path: Path, archived: list[str], state: str, key: str
) -> None:
    run = _open(tmp_path / "now")
    _to_analyzing(run, "Benelux pet food")
    if state == "reporting":
        run.fire("analysis_done")
    assert run.state == state

    found = run.recall("market growth pricing pressure", k=5)

    top = found[:3]
    assert [r.key for r in top] == [key] * 3
    assert {r.run_id for r in top} == set(archived)
    assert all(r.state == state for r in top)
    assert all(0 < r.score <= 1 for r in found)
    assert [r.score for r in found] == sorted((r.score for r in found), reverse=True)
    assert top[0].at.startswith("2026-11-")
    assert top[0].line().startswith(f"[run {top[0].run_id}, {state}, 2026-11-")


def test_recall_without_a_query_asks_with_the_runs_state_and_decisions(
    tmp_path: Path, archived: list[str]
) -> None:
    run = _open(tmp_path / "now")
    _to_analyzing(run, "EU retail analytics")
    found = run.recall(k=3)
    assert found
    assert found[0].run_id == archived[0]  # the run about the same topic


def test_summary_with_recall_stays_within_budget(tmp_path: Path, archived: list[str]) -> None:
    run = _open(tmp_path / "now")
    _to_analyzing(run, "EU retail analytics")
    full = run.summary(recall=True)
    assert "## Recalled from earlier runs" in full
    assert f"[run {archived[0]}, " in full
    assert full.index("```text") < full.index("## Recalled") < full.rindex("```")
    for budget in (120, 400, 900, 1600, 2500, 4000):
        text = run.summary(max_chars=budget, recall="market growth")
        assert len(text) <= budget
    stable = run.summary(recall=True, stable=True)
    assert not any(run_id in stable for run_id in archived)
    assert "[earlier run, analyzing]" in stable
    assert "Recalled" not in run.summary()  # recall is asked for, never implied


def test_archive_leaves_a_small_sidecar_and_full_history(tmp_path: Path) -> None:
    run = _finished_run(tmp_path / "run", 0)
    for n in range(60):  # a long-lived run: many versions of its working notes
        run.formalize("notes", f"note {n}: " + "observation " * 30)
    run.compact()
    run.formalize("closing", "all done", kind="note")
    events = len(list(run.store.history()))

    report = run.archive()

    before, after = report.sidecar_bytes
    assert after < before / 2
    segments = sorted(p.name for p in (tmp_path / "run" / "segments").iterdir())
    assert len(segments) == 1
    assert segments[0].endswith(".jsonl.gz")
    assert len(list(run.store.history())) == events + 1  # and the archived milestone
    assert [f.version for f in run.fact_history("notes")] == list(range(1, 61))
    assert run.snapshot.milestones[-1].name == "archived"
    record = json.loads(report.record.read_text(encoding="utf-8"))
    assert record["run_id"] == run.id
    assert record["state"] == "done"
    assert record["facts"]["topic"]["value"] == TOPICS[0]
    assert "approval approved by editor: report 0 approved" in record["events"]
    assert stat.S_IMODE(report.record.stat().st_mode) == 0o600
    reopened = _open(tmp_path / "run")
    assert reopened.fact("notes").version == 60  # type: ignore[union-attr]
    assert len(list(reopened.store.history())) == events + 1


def test_archiving_again_replaces_the_filed_items(tmp_path: Path) -> None:
    run = _finished_run(tmp_path / "run", 1)
    first = run.archive()
    second = run.archive()
    index = skillnb.Workflow.from_yaml(MARKET).skill
    from skillnb.memory.recall import RecallIndex

    (filed,) = RecallIndex(index).runs()
    assert filed["run_id"] == run.id
    assert filed["items"] == second.items >= first.items


def test_an_unfinished_run_is_archived_only_when_forced(tmp_path: Path) -> None:
    run = _open(tmp_path / "run")
    _to_analyzing(run, "x market")
    with pytest.raises(SkillnbError, match="still has triggers"):
        run.archive()
    assert run.archive(force=True).items > 0


def test_a_run_without_workflow_cannot_be_archived(tmp_path: Path) -> None:
    run = open_run(state_dir=tmp_path / "bare", memory=False)
    with pytest.raises(SkillnbError, match="no workflow"):
        run.archive()
    with pytest.raises(SkillnbError, match="no workflow"):
        run.recall("x")
