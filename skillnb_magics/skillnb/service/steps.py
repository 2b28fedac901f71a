"""One durable-step lifecycle, shared by ``%%gate`` and ``%%formalize`` (service layer).

A step is a unit of durable work: *started* is recorded before its body runs and
*committed* (or *failed*) after, so a crash in between is visible as *uncertain* (the
process that started it is gone). :class:`Steps` owns that lifecycle; :func:`formalize_step`
is the formalized cell on top of it: when the fact already exists for this run and was
produced by the same normalised source, the value is restored instead of recomputed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from skillnb.core.limits import check_event
from skillnb.core.runstate.claims import step_claim_key
from skillnb.core.runstate.records import (
    CheckedDraft,
    EventDraft,
    Fact,
    FactKind,
    JsonValue,
    RunState,
)
from skillnb.errors import SkillnbError, StepInProgress, UncertainStep
from skillnb.service.cellversions import own_version, read_past, why_recomputed
from skillnb.service.claims import Claims
from skillnb.service.facts import write_fact
from skillnb.service.journal import RunJournal
from skillnb.service.owner import current_owner, is_uncertain, owner_alive

__all__ = ["FormalizeOutcome", "Steps", "formalize_step", "step_key"]

T = TypeVar("T")
Also = Callable[[RunState], "list[EventDraft] | None"]
"""Called under the lock when a step is claimed: the events to append with the claim, or
``None`` when the step is no longer needed (another process completed it meanwhile)."""

_POLL = 0.1


def _nothing_more(_state: RunState) -> list[EventDraft]:
    return []


def _plain_text(*values: object) -> bool:
    """Every value is a ``str`` or ``None`` (plain JSON as it is)."""
    return all(v is None or type(v) is str for v in values)


class Steps:
    """Claim, run, fail, list and clear the durable steps of one run."""

    def __init__(self, journal: RunJournal, claims: Claims) -> None:
        self.journal = journal
        self.claims = claims

    def check_free(self, state: RunState, key: str) -> None:
        """Raise :class:`StepInProgress` when another live process is running step ``key``."""
        claim = self.claims.holder(state, step_claim_key(key))
        if claim is not None:
            raise StepInProgress(key, claim.owner.describe(), claim.since.isoformat())
        step = state.steps.get(key)
        if (
            step_claim_key(key) not in state.claims
            and step is not None
            and step.status == "started"
            and step.owner != current_owner()
            and owner_alive(step.owner)
        ):  # a step started by a live process of an older version, without a claim
            raise StepInProgress(key, str(step.owner))

    def is_uncertain(self, state: RunState, key: str) -> bool:
        """True when step ``key`` started, never ended, and its owner is gone."""
        step = state.steps.get(key)
        if step is None or step.status != "started":
            return False  # ended (or never began): nothing uncertain, no need to ask the clock
        claim = state.claims.get(step_claim_key(key))
        return is_uncertain(step, claim, self.journal.clock())

    def refuse_uncertain(self, state: RunState, key: str, idempotent: bool) -> None:
        """Raise :class:`UncertainStep` when ``key`` is uncertain and may not simply re-run."""
        step = state.steps.get(key)
        may_rerun = step is None or idempotent or step.idempotent
        if not may_rerun and self.is_uncertain(state, key):
            raise UncertainStep(key)

    def claim(
        self,
        key: str,
        source_hash: str | None,
        cell_id: str | None,
        idempotent: bool,
        also: Also = _nothing_more,
    ) -> bool:
        """Claim step ``key`` for this process and record that it starts, in one append.

        Returns:
            False when ``also`` found the step no longer needed (nothing was written).

        Raises:
            StepInProgress: another live process holds the step.
            UncertainStep: the step started earlier, never ended, and its process is gone.

        """

        def make(state: RunState) -> list[EventDraft]:
            self.check_free(state, key)
            self.refuse_uncertain(state, key, idempotent)
            more = also(state)
            if more is None:
                return []
            claim = self.claims.new_dump(step_claim_key(key))
            return [self.started_draft(key, source_hash, cell_id, idempotent, claim), *more]

        # Not fsynced: the marker survives a crash of this process (the case it is for), and
        # the step's commit, which is fsynced, makes it durable with the result. Another
        # process sees it at once: the page cache is shared. ``make`` has no effects.
        return bool(self.journal.commit(make, sync=False, speculative=True))

    def run_body(self, key: str, body: Callable[[], T]) -> T:
        """Run ``body`` of claimed step ``key``, renewing the claim; record a failure."""
        claim_key = step_claim_key(key)
        with self.claims.heartbeat(lambda: [claim_key]):
            try:
                return body()
            except BaseException as exc:
                self.fail(key, exc)
                raise

    def waiting(self, wait: float, attempt: Callable[[], T]) -> T:
        """Call ``attempt``; while it raises :class:`StepInProgress`, retry for ``wait`` s.

        Raises:
            StepInProgress: the step is still held by another process after ``wait`` seconds.

        """
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            try:
                return attempt()
            except StepInProgress:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                time.sleep(min(_POLL, left))

    def started_draft(
        self,
        key: str,
        source_hash: str | None,
        cell_id: str | None,
        idempotent: bool,
        claim: JsonValue = None,
    ) -> EventDraft:
        """The ``step.started`` event of ``key``, owned by this process (with its claim).

        ``claim`` is :meth:`Claims.new_dump`'s (plain JSON) or ``None``.
        """
        data: dict[str, JsonValue] = {
            "key": key,
            "source_hash": source_hash,
            "cell_id": cell_id,
            "idempotent": idempotent,
            "owner": current_owner(),
        }
        if claim is not None:
            data["claim"] = claim
        plain = type(key) is str and type(idempotent) is bool
        if not plain or not _plain_text(source_hash, cell_id):
            return self.journal.draft("step.started", **data)
        check_event("step.started", data)  # every draft's checks, without validating again
        return CheckedDraft.of("step.started", self.journal.clock(), data)

    def committed_draft(self, key: str, inputs: Mapping[str, str] | None = None) -> EventDraft:
        """The ``step.committed`` event of ``key`` (appended with the step's results).

        ``inputs`` maps each tracked input to its preview (recorded when given).
        """
        data: dict[str, JsonValue] = {"key": key}
        plain = type(key) is str
        if inputs is not None:
            previews = dict(inputs)
            plain = plain and all(type(k) is str and type(v) is str for k, v in previews.items())
            data["inputs"] = previews
        if not plain:
            return self.journal.draft("step.committed", **data)
        check_event("step.committed", data)
        return CheckedDraft.of("step.committed", self.journal.clock(), data)

    def fail(self, key: str, exc: BaseException) -> None:
        """Record that step ``key`` raised ``exc`` (it may run again); releases its claim."""
        message = f"{type(exc).__name__}: {exc}"
        self.journal.commit(lambda _s: [self.journal.draft("step.failed", key=key, error=message)])

    def uncertain(self) -> list[str]:
        """Keys of steps that started, never ended, and whose process is gone (a crash)."""
        state = self.journal.refresh()
        return [k for k in state.steps if self.is_uncertain(state, k)]

    def clear(self, key: str, by: str | None = None) -> None:
        """Declare an uncertain step resolved, so that it may run again.

        Raises:
            SkillnbError: step ``key`` is not uncertain.

        """
        journal = self.journal

        def make(state: RunState) -> list[EventDraft]:
            if not self.is_uncertain(state, key):
                raise SkillnbError(f"step {key!r} is not uncertain (nothing to clear)")
            return [journal.draft("step.cleared", key=key, by=by or journal.user)]

        journal.commit(make)


@dataclass(frozen=True)
class FormalizeOutcome:
    """The result of :func:`formalize_step`."""

    status: Literal["computed", "restored", "unchanged"]
    """``restored``: the recorded value was reused and nothing ran; ``unchanged``: ``force``
    computed a value equal to the latest version, so no version was written."""
    fact: Fact
    """The fact (value decoded)."""
    result: Any = None
    """What the computation returned (``None`` when restored)."""
    reason: str | None = None
    """Why a recorded value was not restored, e.g. ``budget changed 5500 → 20000``."""
    value: Any = None
    """The computed value (kept for this session even when it cannot be stored as a value)."""


def step_key(key: str) -> str:
    """The step key of the formalized cell for fact ``key``."""
    return f"formalize:{key}"


def _unchanged(fact: Fact | None, source_hash: str | None) -> bool:
    return (
        fact is not None
        and source_hash is not None
        and fact.source_hash == source_hash
        and fact.restorable
    )


def formalize_step(  # the options of a formalized cell, all keywords
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
    wait: float = 0.0,
    inputs: Mapping[str, str] | None = None,
) -> FormalizeOutcome:
    """Restore fact ``key`` when its producing cell and inputs are unchanged, else compute it.

    ``compute`` runs the work and returns its result; ``extract`` (default: identity) picks the
    value to record from that result. A computation that raises records nothing (the step is
    marked failed). ``force`` recomputes; a forced value equal to the latest version records
    no new version (status ``unchanged``). ``source_hash`` is the cell's identity (see
    :mod:`skillnb.service.cellversions`); ``inputs`` maps each tracked input to its preview,
    recorded with the step. The computation is claimed first: while another live process
    computes the same fact, this one waits up to ``wait`` seconds, then restores what it
    recorded.

    Raises:
        StepInProgress: another process is computing it (after ``wait`` seconds).
        UncertainStep: an earlier computation started and never committed.

    """
    journal = steps.journal
    skey = step_key(key)
    reason: list[str | None] = [None]

    def attempt() -> FormalizeOutcome | None:
        if not force:  # forced, nothing is restored: the claim catches up under the lock
            restored = _restorable(journal, key, skey, source_hash, inputs or {}, reason)
            if restored is not None:
                return restored

        def also(now: RunState) -> list[EventDraft] | None:
            return None if not force and _unchanged(now.facts.get(key), source_hash) else []

        if not steps.claim(skey, source_hash, cell_id, idempotent, also):
            return FormalizeOutcome("restored", journal.decode(journal.state.facts[key]))
        return None

    restored = steps.waiting(wait, attempt)
    if restored is not None:
        return restored
    existing = journal.state.facts.get(key)

    def run() -> tuple[Any, Any]:
        result = compute()
        return result, extract(result) if extract is not None else result

    result, value = steps.run_body(skey, run)
    committed = steps.committed_draft(skey, inputs or {})
    if force and existing is not None and _same_value(journal, existing, value):
        journal.commit(lambda _s: [committed], speculative=True)
        return FormalizeOutcome(
            status="unchanged", fact=journal.decode(existing), result=result, value=value
        )
    fact = write_fact(
        journal,
        key,
        value,
        kind=kind,
        note=note,
        cell_id=cell_id,
        source_hash=source_hash,
        extra=[committed],
    )
    return FormalizeOutcome(
        status="computed", fact=fact, result=result, reason=reason[0], value=value
    )


def _restorable(
    journal: RunJournal,
    key: str,
    skey: str,
    source_hash: str | None,
    inputs: Mapping[str, str],
    reason: list[str | None],
) -> FormalizeOutcome | None:
    """The recorded value of ``key`` when this cell produced it, else why it recomputes."""
    state = journal.refresh()
    existing = state.facts.get(key)
    if _unchanged(existing, source_hash):
        return FormalizeOutcome("restored", journal.decode(state.facts[key]))
    if source_hash is not None and existing is not None:
        past = read_past(journal, key, skey)
        own = own_version(past, source_hash)
        if own is not None:
            return FormalizeOutcome("restored", journal.decode(own))
        reason[0] = why_recomputed(past, source_hash, inputs)
    return None


def _same_value(journal: RunJournal, existing: Fact, value: Any) -> bool:
    """Tell whether ``value`` encodes to what the latest version stores."""
    from skillnb.store.codec import values as codec

    encoded = codec.encode(value, journal.store, **journal.codec_options())
    return bool(
        encoded.restorable
        and existing.restorable
        and encoded.encoding == existing.encoding
        and encoded.value == existing.value
    )
