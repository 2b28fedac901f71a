"""Rebuilding a run from a saved ``.ipynb`` alone, when its sidecar is gone (edge layer).

:func:`rebuild_run` takes what :func:`~skillnb.notebookfile.recover.recover` finds in the
notebook (the run's events from the outputs, the metadata mirror, the ``%%workflow`` cell) and:

1. replays the events on a scratch state, in journal order; an event that no longer fits
   (say, the consumption of an approval whose request was only ever in the sidecar) is
   skipped, so what is rebuilt is always a consistent journal;
2. records a fact that only the metadata mirror knows (its cell's output was cleared, or the
   mirror shows a newer version than any output) from its *preview*, with
   ``restorable=False``: summaries and views show it, but a ``%%formalize`` cell recomputes it
   instead of restoring a clipped text into Python, and ``%resume`` does not put it in the
   namespace. A value that lived in the sidecar's blob folder is recorded the same way, since
   its bytes went with the sidecar;
3. binds the workflow: the one given, else the one the outputs recorded, else the
   ``%%workflow`` cell's;
4. records a ``run.rebuilt`` event (what was replayed, skipped and preview-only) and commits
   everything in one atomic append, under the store lock, to an empty sidecar.

Rebuilding never overwrites an existing sidecar. Nothing read from the notebook is evaluated,
and every name in it passes the validators a run writes with (:mod:`skillnb.core.limits`): an
event holding a name the run would refuse is skipped, and a run id that is not one (it names
files: ``../../x``) stops the rebuild before anything is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillnb.core.limits import event_problem, run_id_problem
from skillnb.core.runstate.records import Event, EventDraft, Fact, RunState
from skillnb.core.runstate.state import MalformedEvent, apply
from skillnb.errors import SkillnbError
from skillnb.notebookfile.ipynb import load_notebook
from skillnb.notebookfile.recover import BUNDLE_MIME, Recovered, recover, workflow_cell

if TYPE_CHECKING:
    from collections.abc import Callable

    from skillnb.core.workflow.model import Workflow
    from skillnb.run import Run

__all__ = ["BUNDLE_MIME", "PREVIEW_ENCODING", "Recovered", "rebuild_run", "recover"]

PREVIEW_ENCODING = "repr"
"""Encoding of a fact known only by its preview (the codec's encoding for ``repr`` values)."""

_BLOB_ENCODINGS = ("blob",)


class _Replay:
    """Replays recovered events on a scratch state, keeping only those that fit."""

    def __init__(self, run_id: str, at: datetime) -> None:
        self.state = RunState(run_id=run_id)
        self.drafts: list[EventDraft] = []
        self.replayed = 0
        self.skipped = 0
        self.add(EventDraft(type="run.created", at=at, data={"run_id": run_id}))

    def add(self, draft: EventDraft) -> bool:
        if event_problem(draft.type, draft.data) is not None:
            return False  # a name the run would refuse to write: never written here either
        candidate = Event(seq=self.state.version + 1, type=draft.type, at=draft.at, data=draft.data)
        trial = self.state.model_copy(deep=True)
        try:
            apply(trial, candidate)
        except MalformedEvent:
            return False
        self.state = trial
        self.drafts.append(draft)
        return True

    def replay(self, event: Event) -> None:
        if event.type == "run.created":
            return
        data = _without_lost_blobs(event) if event.type == "fact.formalized" else event.data
        if self.add(EventDraft(type=event.type, at=event.at, data=data)):
            self.replayed += 1
        else:
            self.skipped += 1


def _without_lost_blobs(event: Event) -> dict[str, Any]:
    """Make a fact whose value lived in the (lost) blob folder preview-only."""
    fact = event.data.get("fact")
    if not isinstance(fact, dict) or fact.get("encoding") not in _BLOB_ENCODINGS:
        return event.data
    preview = fact.get("preview", "")
    lost = {**fact, "value": preview, "encoding": PREVIEW_ENCODING, "restorable": False}
    return {**event.data, "fact": lost}


def _preview_facts(replay: _Replay, mirror: dict[str, Any] | None, at: datetime) -> list[str]:
    """Record the facts only the mirror knows (or knows newer); return their keys."""
    added: list[str] = []
    facts = mirror.get("facts", {}) if mirror is not None else {}
    for key, seen in facts.items():
        known = replay.state.facts.get(key)
        if known is not None and known.version >= seen["version"]:
            continue
        fact = Fact(
            key=key,
            value=seen["preview"],
            encoding=PREVIEW_ENCODING,
            restorable=False,
            kind=seen["kind"],
            version=seen["version"],
            at=at,
            cell_id=seen["cell_id"],
            note="rebuilt from the notebook's metadata mirror: only a preview was saved",
            preview=seen["preview"],
        )
        draft = EventDraft(
            type="fact.formalized", at=at, data={"fact": fact.model_dump(mode="json")}
        )
        if replay.add(draft):
            added.append(key)
    return added


def _refuse_copy(nb_path: Path) -> None:
    """Never rebuild a copy's outputs into a second sidecar of the run its original holds.

    Raises:
        NotebookCopied: the notebook is such a copy (see :mod:`skillnb.notebookfile.identity`).

    """
    from skillnb.notebookfile.identity import copy_of

    copied = copy_of(nb_path)
    if copied is not None:
        raise copied


def rebuild_run(
    notebook_path: str | Path,
    *,
    state_dir: str | Path | None = None,
    workflow: Workflow | Path | None = None,
    clock: Callable[[], datetime] | None = None,
    env: Mapping[str, str] | None = None,
    memory: Any = None,
) -> Run:
    """Rebuild the run of ``notebook_path`` from the notebook alone (see the module docstring).

    Args:
        notebook_path: the saved ``.ipynb``.
        state_dir: where to write the rebuilt run (default: the notebook's sidecar folder).
        workflow: a definition to bind after replaying (else the one the outputs recorded,
            else the notebook's ``%%workflow`` cell).
        clock: returns the current time, for the events the rebuild itself records.
        env: the environment the run reads settings from (default ``os.environ``).
        memory: passed to :func:`skillnb.run.open_run` (``False`` feeds no skill memory).

    Raises:
        SkillnbError: the notebook is unreadable, holds nothing to rebuild from, or a run
            already exists where the rebuilt one would go.
        NotebookCopied: the notebook is a copy of one whose sidecar holds the run it names
            (rebuilt into its own sidecar, the two would claim one run); give ``state_dir``
            to rebuild elsewhere anyway.

    """
    from skillnb.core.workflow.model import Workflow
    from skillnb.run import open_run
    from skillnb.store import sidecar_dir_for
    from skillnb.store.sidecar.store import SidecarStore

    if isinstance(workflow, Path):
        workflow = Workflow.from_yaml(workflow)  # a broken definition fails before any write
    nb_path = Path(notebook_path)
    folder = Path(state_dir) if state_dir is not None else sidecar_dir_for(nb_path)
    _refuse_existing(folder)
    if state_dir is None:
        _refuse_copy(nb_path)
    nb = load_notebook(nb_path)
    found = recover(nb, origin=str(nb_path))
    if not found.events and found.mirror is None:
        raise SkillnbError(
            f"{nb_path}: nothing to rebuild from: no SKILL.nb outputs or metadata mirror"
        )
    replay = _replayed(found, nb_path.name, (clock or _now)())
    if workflow is None and replay.state.workflow_definition is None:
        workflow = workflow_cell(nb, origin=str(nb_path))
    store = SidecarStore(folder)
    with store.lock():
        if store.exists():
            raise SkillnbError(f"{folder}: a run already exists here; move it aside to rebuild")
        store.append(replay.drafts, expected_version=0)
    return open_run(nb_path, store=store, workflow=workflow, clock=clock, env=env, memory=memory)


def _replayed(found: Recovered, notebook: str, now: datetime) -> _Replay:
    """Replay what was found, add the preview-only facts and the ``run.rebuilt`` record.

    Raises:
        SkillnbError: the notebook names a run id that is not one.

    """
    named = found.run_id
    problem = None if named is None else run_id_problem(named)
    if named is not None and problem is not None:
        raise SkillnbError(
            f"{notebook}: the notebook names the run id {named[:80]!r}, which {problem}; "
            "nothing was rebuilt"
        )
    replay = _Replay(
        found.run_id or uuid.uuid4().hex[:12], found.events[0].at if found.events else now
    )
    for event in found.events:
        replay.replay(event)
    preview_only = _preview_facts(replay, found.mirror, now)
    replay.add(
        EventDraft(
            type="run.rebuilt",
            at=now,
            data={
                "notebook": notebook,
                "replayed": replay.replayed,
                "skipped": replay.skipped,
                "malformed": found.malformed,
                "foreign": found.foreign,
                "preview_only": preview_only,
            },
        )
    )
    return replay


def _refuse_existing(folder: Path) -> None:
    if (folder / "journal.jsonl").exists() or (folder / "snapshot.json").exists():
        raise SkillnbError(
            f"{folder}: a run already exists here; rebuilding would overwrite it "
            "(open it with skillnb.open_run, or move the folder aside first)"
        )


def _now() -> datetime:
    return datetime.now(UTC).astimezone()
