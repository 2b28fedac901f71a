"""Follow-ups that warning gates leave: list and resolve them (service layer).

A ``warn`` gate with ``follow_up: TEXT`` opens a follow-up when it warns in a step that
runs (:func:`skillnb.core.gates.bending.step_drafts`, committed with the step by
:class:`~skillnb.service.gates.Gates`). It stays open, in :meth:`FollowUps.open`, the view
and the summary, until a person resolves it; the resolution records who, when and a note.
"""

from __future__ import annotations

from skillnb.core.gates.bending import open_follow_ups, resolve_draft
from skillnb.core.runstate.records import FollowUp
from skillnb.service.journal import RunJournal

__all__ = ["FollowUps"]


class FollowUps:
    """List and resolve the follow-ups of one run."""

    def __init__(self, journal: RunJournal) -> None:
        self.journal = journal

    def open(self) -> list[FollowUp]:
        """The follow-ups not resolved yet, oldest first (copies)."""
        return open_follow_ups(self.journal.refresh())

    def resolve(self, ref: str, by: str | None = None, note: str | None = None) -> FollowUp:
        """Resolve follow-up ``ref`` (its id, or the gate of its only open follow-up).

        Raises:
            SkillnbError: no such follow-up, it is resolved already, or the gate has several.

        """
        journal = self.journal
        who = by or journal.user
        events = journal.commit(lambda s: [resolve_draft(s, ref, who, note, journal.clock())])
        resolved = str(events[0].data["id"])
        journal.skill.remember("follow_up_resolved", f"follow-up {resolved} resolved by {who}")
        return journal.state.follow_ups[resolved].model_copy()
