"""One durable-step lifecycle, shared by ``%%gate`` and ``%%formalize`` (service layer).

A step is a unit of durable work: *started* is recorded before its body runs and
*committed* (or *failed*) after, so a crash in between is visible as *uncertain* (the
process that started it is gone). :class:`Steps` owns that lifecycle; :func:`formalize_step`
is the formalized cell on top of it: when the fact already exists for this run and was
produced by the same normalised source, the value is restored instead of recomputed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from skillnb.core.records import EventDraft, Fact, FactKind, RunState
from skillnb.errors import SkillnbError, UncertainStep
from skillnb.service.facts import write_fact
from skillnb.service.journal import RunJournal
from skillnb.service.owner import current_owner, is_uncertain

__all__ = ["FormalizeOutcome", "Steps", "formalize_step", "step_key"]


class Steps:
    """Start, fail, list and clear the durable steps of one run."""

    def __init__(self, journal: RunJournal) -> None:
        self.journal = journal

    def start(
        self, key: str, source_hash: str | None, cell_id: str | None, idempotent: bool
    ) -> None:
        """Refuse an uncertain step ``key``, then record that it starts.

        Raises:
            UncertainStep: the step started earlier, never ended, and its process is gone.

        """
        self.refuse_uncertain(key, idempotent)
        # Not fsynced: the marker survives a crash of this process (the case it is for), and
        # the step's commit, which is fsynced, makes it durable with the result.
        self.journal.commit(
            lambda _s: [self.started_draft(key, source_hash, cell_id, idempotent)], sync=False
        )

    def refuse_uncertain(self, key: str, idempotent: bool) -> None:
        """Raise :class:`UncertainStep` when ``key`` is uncertain and may not simply re-run."""
        step = self.journal.state.steps.get(key)
        if step is not None and is_uncertain(step) and not (idempotent or step.idempotent):
            raise UncertainStep(key)

    def started_draft(
        self, key: str, source_hash: str | None, cell_id: str | None, idempotent: bool
    ) -> EventDraft:
        """The ``step.started`` event of ``key``, owned by this process."""
        return self.journal.draft(
            "step.started",
            key=key,
            source_hash=source_hash,
            cell_id=cell_id,
            idempotent=idempotent,
            owner=current_owner(),
        )

    def committed_draft(self, key: str) -> EventDraft:
        """The ``step.committed`` event of ``key`` (appended with the step's results)."""
        return self.journal.draft("step.committed", key=key)

    def fail(self, key: str, exc: BaseException) -> None:
        """Record that step ``key`` raised ``exc`` (it may run again)."""
        message = f"{type(exc).__name__}: {exc}"
        self.journal.commit(lambda _s: [self.journal.draft("step.failed", key=key, error=message)])

    def uncertain(self) -> list[str]:
        """Keys of steps that started, never ended, and whose process is gone (a crash)."""
        state = self.journal.refresh()
        return [k for k, s in state.steps.items() if is_uncertain(s)]

    def clear(self, key: str, by: str | None = None) -> None:
        """Declare an uncertain step resolved, so that it may run again.

        Raises:
            SkillnbError: step ``key`` is not uncertain.

        """
        journal = self.journal

        def make(state: RunState) -> list[EventDraft]:
            step = state.steps.get(key)
            if step is None or not is_uncertain(step):
                raise SkillnbError(f"step {key!r} is not uncertain (nothing to clear)")
            return [journal.draft("step.cleared", key=key, by=by or journal.user)]

        journal.commit(make)


@dataclass(frozen=True)
class FormalizeOutcome:
    """The result of :func:`formalize_step`."""

    status: Literal["computed", "restored"]
    """``restored``: the recorded value was reused and nothing ran."""
    fact: Fact
    """The fact (value decoded)."""
    result: Any = None
    """What the computation returned (``None`` when restored)."""


def step_key(key: str) -> str:
    """The step key of the formalized cell for fact ``key``."""
    return f"formalize:{key}"


def formalize_step(
    steps: Steps,
    key: str,
    compute: Callable[[], Any],
    *,
    source_hash: str | None = None,
    cell_id: str | None = None,
    kind: FactKind = "data",
    note: str | None = None,
    force: bool = False,
    idempotent: bool = False,
    extract: Callable[[Any], Any] | None = None,
) -> FormalizeOutcome:
    """Restore fact ``key`` when its producing source is unchanged, else compute and record it.

    ``compute`` runs the work and returns its result; ``extract`` (default: identity) picks the
    value to record from that result. A computation that raises records nothing (the step is
    marked failed). ``force`` recomputes and records a new version.

    Raises:
        UncertainStep: an earlier computation started and never committed.

    """
    journal = steps.journal
    existing = journal.refresh().facts.get(key)
    unchanged = (
        existing is not None
        and source_hash is not None
        and existing.source_hash == source_hash
        and existing.restorable
    )
    if unchanged and not force:
        assert existing is not None  # noqa: S101  # checked just above
        return FormalizeOutcome(status="restored", fact=journal.decode(existing))
    skey = step_key(key)
    steps.start(skey, source_hash, cell_id, idempotent)
    try:
        result = compute()
        value = extract(result) if extract is not None else result
    except BaseException as exc:
        steps.fail(skey, exc)
        raise
    fact = write_fact(
        journal,
        key,
        value,
        kind=kind,
        note=note,
        cell_id=cell_id,
        source_hash=source_hash,
        extra=[steps.committed_draft(skey)],
    )
    return FormalizeOutcome(status="computed", fact=fact, result=result)
