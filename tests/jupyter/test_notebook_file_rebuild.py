"""Rebuilding a run from a saved .ipynb alone: outputs' events plus the metadata mirror."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skillnb.core.runstate.records import Event
from skillnb.core.workflow.model import Workflow
from skillnb.errors import SkillnbError
from skillnb.notebookfile.mirror import build_mirror
from skillnb.notebookfile.sync import BUNDLE_MIME, MirrorWarning, rebuild_run
from skillnb.run import Run, open_run, sidecar_exists
from skillnb.service.steps import formalize_step
from skillnb.store import sidecar_dir_for

WORKFLOW_YAML = (
    Path(__file__).parents[1] / "fixtures" / "workflows" / "publish_flow.yaml"
).read_text(encoding="utf-8")
WORKFLOW = Workflow.from_yaml(WORKFLOW_YAML)
BUDGET_HASH = "sha256:budgetbudget0001"


class Recorder:
    """A source run whose operations are recorded as the outputs of notebook cells."""

    def __init__(self, folder: Path, **options: Any) -> None:
        self.run = open_run(state_dir=folder, workflow=WORKFLOW, memory=False, **options)
        opened = list(self.run.store.history())  # run.created, workflow.bound: the %%workflow cell
        self.cells: list[dict[str, Any]] = [
            code_cell("c0", [bundle_output(opened, build_mirror(self.run))])
        ]

    def cell(self, action: Callable[[Run], object], *, into: int | None = None) -> list[Event]:
        """Run ``action`` as a cell; its output carries the events it committed."""
        before = self.run.version
        action(self.run)
        events = [e for e in self.run.store.history() if e.seq > before]
        output = bundle_output(events, build_mirror(self.run))
        if into is None:
            self.cells.append(code_cell(f"c{len(self.cells)}", [output]))
        else:  # re-running a cell replaces its outputs
            self.cells[into]["outputs"] = [output]
        return events

    def notebook(self, path: Path, *, mirror: Any = "current") -> Path:
        metadata: dict[str, Any] = {}
        if mirror == "current":
            metadata["skillnb"] = build_mirror(self.run)
        elif mirror is not None:
            metadata["skillnb"] = mirror
        return write_notebook(path, self.cells, metadata)


def bundle_output(
    events: list[Event], mirror: dict[str, Any] | None, *, legacy: bool = False
) -> dict[str, Any]:
    """A SKILL.nb output as saved: deterministic data, the events and mirror in metadata.

    ``legacy`` builds the shape saved before the split, with everything in the data.
    """
    dumps = [e.model_dump(mode="json") for e in events]
    payload: dict[str, Any] = {
        "v": 1,
        "kind": "formalize",
        "badge": "📌",
        "status": "ok",
        "key": None,
        "trigger": None,
    }
    volatile: dict[str, Any] = {"events": dumps, "mirror": {"notebook": mirror, "cell": None}}
    run_id = mirror["run_id"] if mirror is not None else None
    if legacy:
        payload |= {"event": dumps[-1] if dumps else None, **volatile}
        metadata = {BUNDLE_MIME: {"run_id": run_id, "at": "2024-01-01T00:00:00+00:00"}}
    else:
        metadata = {BUNDLE_MIME: {"v": 1, "run_id": run_id, "at": "2024-01-01T00:00:00+00:00"}}
        metadata[BUNDLE_MIME] |= volatile
    return {
        "output_type": "display_data",
        "data": {BUNDLE_MIME: payload, "text/plain": "📌"},
        "metadata": metadata,
    }


def code_cell(cell_id: str, outputs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": cell_id,
        "metadata": {},
        "source": "",
        "outputs": outputs,
        "execution_count": 1,
    }


def write_notebook(path: Path, cells: list[dict[str, Any]], metadata: dict[str, Any]) -> Path:
    nb = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb, indent=1))
    return path


def _budget(run: Run) -> None:
    formalize_step(run.steps, "budget", lambda: 1200, source_hash=BUDGET_HASH, kind="decision")


def _submit(run: Run) -> None:
    run.gates.run_gated("submit", key="gate:submit", subject=run)


def _publish(run: Run) -> None:
    run.gates.run_gated("publish", key="gate:publish", on_block="skip", subject=run)


def _published_run(tmp_path: Path) -> Recorder:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    source.cell(_submit)
    source.cell(_publish)  # blocked: records the approval request
    source.run.approve("publish_ok", by="editor")  # from the CLI: in no cell's output
    source.cell(_publish, into=3)  # the re-run replaces the blocked output
    return source


def _rebuilt_event(run: Run) -> Event:
    return next(e for e in reversed(run.history(5)) if e.type == "run.rebuilt")


def test_rebuild_restores_run_id_state_and_facts(tmp_path: Path) -> None:
    source = _published_run(tmp_path)
    nb = source.notebook(tmp_path / "report.ipynb")

    rebuilt = rebuild_run(nb, memory=False)

    assert sidecar_exists(nb)
    assert rebuilt.store.location == str(sidecar_dir_for(nb)) or sidecar_dir_for(nb).is_dir()
    assert rebuilt.id == source.run.id
    assert rebuilt.state == "published"
    assert rebuilt.snapshot.visited == ["draft", "review", "published"]
    budget = rebuilt.fact("budget")
    assert budget is not None
    assert (budget.value, budget.kind, budget.version, budget.restorable) == (
        1200,
        "decision",
        1,
        True,
    )
    assert rebuilt.workflow is not None
    assert rebuilt.workflow.hash == WORKFLOW.hash
    data = _rebuilt_event(rebuilt).data
    # the consumption of an approval whose request was never in an output cannot be replayed
    assert data["skipped"] == 1
    assert data["preview_only"] == []


def test_a_rebuilt_fact_is_restored_not_recomputed(tmp_path: Path) -> None:
    source = _published_run(tmp_path)
    rebuilt = rebuild_run(source.notebook(tmp_path / "report.ipynb"), memory=False)
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return 9

    outcome = formalize_step(rebuilt.steps, "budget", compute, source_hash=BUDGET_HASH)
    assert outcome.status == "restored"
    assert outcome.fact.value == 1200
    assert calls == []


def test_duplicated_and_out_of_order_outputs_replay_once_in_journal_order(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    source.cell(_submit)
    source.cells.reverse()  # the submit cell sits above the budget cell
    source.cells.append(json.loads(json.dumps(source.cells[0])))  # an output copied twice
    rebuilt = rebuild_run(source.notebook(tmp_path / "nb.ipynb"), memory=False)
    assert rebuilt.state == "review"
    assert _rebuilt_event(rebuilt).data["skipped"] == 0
    assert rebuilt.version == source.run.version + 1  # + run.rebuilt, nothing twice


def test_outputs_of_another_run_are_ignored(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    stranger = Recorder(tmp_path / "other")
    stranger.cell(lambda r: r.formalize("budget", -1))
    # one output names its run in its mirror, the other only by its run id
    last = stranger.cells[-1]["outputs"][0]
    last["metadata"][BUNDLE_MIME]["mirror"] = None
    source.cells += stranger.cells
    rebuilt = rebuild_run(source.notebook(tmp_path / "nb.ipynb"), memory=False)
    assert rebuilt.id == source.run.id
    budget = rebuilt.fact("budget")
    assert budget is not None
    assert budget.value == 1200
    foreign = sum(len(c["outputs"][0]["metadata"][BUNDLE_MIME]["events"]) for c in stranger.cells)
    assert _rebuilt_event(rebuilt).data["foreign"] == foreign


def test_facts_only_in_the_mirror_are_preview_only(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    source.run.formalize("budget", 1500, kind="decision")  # v2, output never saved
    source.run.formalize("notes", {"tone": "dry"}, kind="note")  # only in the mirror
    nb = source.notebook(tmp_path / "nb.ipynb")

    rebuilt = rebuild_run(nb, memory=False)

    budget, notes = rebuilt.fact("budget"), rebuilt.fact("notes")
    assert budget is not None
    assert notes is not None
    assert (budget.version, budget.restorable) == (2, False)
    assert budget.value == budget.preview == "1500"
    assert (notes.kind, notes.version, notes.restorable) == ("note", 1, False)
    assert "dry" in notes.preview
    assert sorted(_rebuilt_event(rebuilt).data["preview_only"]) == ["budget", "notes"]
    assert {f["key"] for f in rebuilt.describe()["facts"] if not f["restorable"]} == {
        "budget",
        "notes",
    }
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return 1500

    outcome = formalize_step(rebuilt.steps, "budget", compute, source_hash=BUDGET_HASH)
    assert outcome.status == "computed"  # a preview is never restored into Python
    assert calls == [1]


def test_values_kept_as_blobs_become_preview_only(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original", blob_threshold=64)
    source.cell(lambda r: r.formalize("big", list(range(200))))
    stored = source.run.snapshot.facts["big"]
    assert stored.encoding == "blob"
    rebuilt = rebuild_run(source.notebook(tmp_path / "nb.ipynb", mirror=None), memory=False)
    big = rebuilt.fact("big")
    assert big is not None
    assert big.restorable is False
    assert big.preview == stored.preview


def test_rebuild_never_overwrites_a_sidecar(tmp_path: Path) -> None:
    source = _published_run(tmp_path)
    nb = source.notebook(tmp_path / "report.ipynb")
    first = rebuild_run(nb, memory=False)
    journal = (sidecar_dir_for(nb) / "journal.jsonl").read_bytes()
    with pytest.raises(SkillnbError, match="already exists"):
        rebuild_run(nb, memory=False)
    assert (sidecar_dir_for(nb) / "journal.jsonl").read_bytes() == journal
    assert first.version == open_run(nb, memory=False).version


def test_rebuild_into_an_explicit_state_dir(tmp_path: Path) -> None:
    source = _published_run(tmp_path)
    nb = source.notebook(tmp_path / "report.ipynb")
    rebuilt = rebuild_run(nb, state_dir=tmp_path / "elsewhere", memory=False)
    assert rebuilt.state == "published"
    assert (tmp_path / "elsewhere" / "journal.jsonl").exists()
    assert not sidecar_exists(nb)


def test_nothing_to_rebuild_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "plain.ipynb", [code_cell("a", [])], {})
    with pytest.raises(SkillnbError, match="nothing to rebuild"):
        rebuild_run(nb, memory=False)
    assert not sidecar_dir_for(nb).exists()


def test_malformed_outputs_warn_and_the_rest_is_rebuilt(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    bad = bundle_output([], None)
    bad["metadata"][BUNDLE_MIME]["events"] = [{"seq": "one", "type": 3}, "<script>"]
    source.cells.append(code_cell("bad", [bad, {"output_type": "stream", "text": "x"}]))
    source.cells.append(
        code_cell("worse", [{"output_type": "display_data", "data": {BUNDLE_MIME: 7}}])
    )
    nb = source.notebook(tmp_path / "nb.ipynb")
    with pytest.warns(MirrorWarning, match="ignored 3 malformed"):
        rebuilt = rebuild_run(nb, memory=False)
    budget = rebuilt.fact("budget")
    assert budget is not None
    assert budget.value == 1200


def test_a_hostile_metadata_mirror_falls_back_to_the_outputs(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    hostile = {**build_mirror(source.run), "state": "<script>alert(1)</script>"}
    nb = source.notebook(tmp_path / "nb.ipynb", mirror=hostile)
    with pytest.warns(MirrorWarning, match="ignoring the SKILL.nb metadata mirror"):
        rebuilt = rebuild_run(nb, memory=False)
    assert rebuilt.id == source.run.id
    assert rebuilt.state == "draft"  # from the %%workflow cell's output, not the mirror


def _without_binding(source: Recorder) -> None:
    """A %%workflow cell re-run in a later session binds nothing new: its output has no event."""
    source.cells[0]["outputs"] = []


def test_workflow_given_to_rebuild_is_bound(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    _without_binding(source)
    rebuilt = rebuild_run(source.notebook(tmp_path / "nb.ipynb"), workflow=WORKFLOW, memory=False)
    assert rebuilt.workflow is not None
    assert rebuilt.workflow.name == "Publish_Flow"
    assert rebuilt.state == "draft"


def test_the_workflow_cell_supplies_a_lost_binding(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    source.cell(_submit)
    _without_binding(source)
    source.cells[0]["source"] = "%%workflow\n" + WORKFLOW_YAML
    rebuilt = rebuild_run(source.notebook(tmp_path / "nb.ipynb"), memory=False)
    assert rebuilt.workflow is not None
    assert rebuilt.workflow.hash == WORKFLOW.hash
    assert rebuilt.state == "review"
    assert [t["trigger"] for t in rebuilt.describe()["next"]] == ["publish"]


def test_a_broken_workflow_cell_is_not_fatal(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    _without_binding(source)
    source.cells[0]["source"] = "%%workflow\nworkflow: [unclosed"
    with pytest.warns(MirrorWarning, match="workflow cell"):
        rebuilt = rebuild_run(source.notebook(tmp_path / "nb.ipynb"), memory=False)
    assert rebuilt.workflow is None
    budget = rebuilt.fact("budget")
    assert budget is not None
    assert budget.value == 1200


def test_outputs_saved_before_the_split_are_still_read(tmp_path: Path) -> None:
    """Older notebooks carry the events and mirror in the bundle's data, not its metadata."""
    source = _published_run(tmp_path)
    for cell in source.cells:
        output = cell["outputs"][0]
        volatile = output["metadata"][BUNDLE_MIME]
        legacy = bundle_output(
            [Event.model_validate(e) for e in volatile["events"]],
            volatile["mirror"]["notebook"],
            legacy=True,
        )
        assert "events" not in legacy["metadata"][BUNDLE_MIME]
        cell["outputs"] = [legacy]
    rebuilt = rebuild_run(source.notebook(tmp_path / "old.ipynb", mirror=None), memory=False)
    assert rebuilt.id == source.run.id
    assert rebuilt.state == "published"
    budget = rebuilt.fact("budget")
    assert budget is not None
    assert (budget.value, budget.restorable) == (1200, True)
    assert _rebuilt_event(rebuilt).data["malformed"] == 0


def test_old_and_new_outputs_of_one_notebook_combine(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    source.cell(_submit)
    old = source.cells[1]["outputs"][0]["metadata"][BUNDLE_MIME]  # the budget cell, saved before
    source.cells[1]["outputs"] = [
        bundle_output(
            [Event.model_validate(e) for e in old["events"]],
            old["mirror"]["notebook"],
            legacy=True,
        )
    ]
    rebuilt = rebuild_run(source.notebook(tmp_path / "mixed.ipynb", mirror=None), memory=False)
    assert rebuilt.state == "review"
    assert rebuilt.version == source.run.version + 1  # everything replayed once, + run.rebuilt


def test_a_newer_metadata_format_is_ignored_as_malformed(tmp_path: Path) -> None:
    source = Recorder(tmp_path / "original")
    source.cell(_budget)
    source.cells[1]["outputs"][0]["metadata"][BUNDLE_MIME]["v"] = 2
    with pytest.warns(MirrorWarning, match="ignored 1 malformed"):
        rebuilt = rebuild_run(source.notebook(tmp_path / "nb.ipynb", mirror=None), memory=False)
    assert rebuilt.fact("budget") is None  # its events were only in the unreadable part
