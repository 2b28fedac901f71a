"""What a run records besides facts: the workflow it follows, key ids, milestones (service).

Each function commits through the run's journal (:class:`~skillnb.service.journal.RunJournal`)
only when something changed: binding the same definition again, setting ids the run already
holds, write nothing, so running a notebook again adds no event. Key ids and milestones are in
the skill memory before the call returns (a later session needs them even after a kill).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from skillnb.errors import WorkflowError

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Event, EventDraft, JsonValue, RunState
    from skillnb.core.workflow.model import Workflow
    from skillnb.service.journal import RunJournal

__all__ = ["bind_workflow", "record_milestone", "set_key_ids"]


def bind_workflow(journal: RunJournal, workflow: Workflow, profile: str) -> None:
    """Bind ``workflow`` to the run (recorded when its definition changed).

    Raises:
        WorkflowError: the run's current state is not a state of ``workflow``, or the
            workflow does not declare ``profile``.

    """
    workflow.check_profile(profile)
    current = journal.refresh().state
    if current is not None and current not in workflow.states:
        raise WorkflowError(
            f"this run is in state {current!r}, which workflow {workflow.name!r} does not "
            "define; start a new run (%skillnb new-run) or add the state",
            source=workflow.source,
        )
    journal.workflow = workflow
    if journal.state.workflow_hash == workflow.hash:
        return

    def make(state: RunState) -> list[EventDraft]:
        if state.workflow_hash == workflow.hash:
            return []
        return [
            journal.draft(
                "workflow.bound",
                workflow=workflow.name,
                hash=workflow.hash,
                initial=workflow.initial,
                definition=workflow.to_dict(),
            )
        ]

    first = journal.state.workflow_hash is None
    journal.commit(make)
    journal.skill.forget()
    if first:
        started = f"run of {workflow.name} started in {journal.state.state}"
        journal.skill.remember("run_started", started)


def set_key_ids(journal: RunJournal, merged: Mapping[str, JsonValue]) -> None:
    """Record ``merged`` in the run's key ids and the skill memory, unless the run holds them."""

    def make(state: RunState) -> list[EventDraft]:
        if _same_ids(state.key_ids, merged):
            return []
        return [journal.draft("keyids.set", ids=merged)]

    if not journal.commit(make):
        return
    summary = "ids: " + ", ".join(f"{k}={v}" for k, v in merged.items())
    journal.skill.remember("key_ids", summary)
    journal.skill.flush()


def record_milestone(journal: RunJournal, name: str) -> Event:
    """Record milestone ``name``: the current version, state and fact versions."""

    def make(state: RunState) -> list[EventDraft]:
        versions = {k: f.version for k, f in state.facts.items()}
        return [journal.draft("milestone.recorded", name=name, state=state.state, facts=versions)]

    event = journal.commit(make)[0]
    journal.skill.remember("milestone", f"milestone {name!r} at version {event.seq}")
    journal.skill.flush()
    return event


def _same_ids(held: Mapping[str, JsonValue], ids: Mapping[str, Any]) -> bool:
    """Tell whether ``held`` already maps every id of ``ids`` to the same JSON value."""
    try:
        return all(k in held and _canonical(held[k]) == _canonical(v) for k, v in ids.items())
    except (TypeError, ValueError):  # not JSON: the draft says what is wrong with it
        return False


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)
