"""Writing facts: a value becomes the next version of a key (service layer).

:func:`write_fact` encodes the value (see :mod:`skillnb.store.codec`) outside the lock, then
commits one ``fact.formalized`` event, plus any events the caller adds to the same append
(a formalized step's ``step.committed``), so the fact and its step land together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skillnb.core.records import EventDraft, Fact, FactKind, RunState
from skillnb.errors import SkillnbError
from skillnb.service.journal import RunJournal
from skillnb.store import codec

__all__ = ["write_fact"]


def write_fact(
    journal: RunJournal,
    key: str,
    value: Any,
    *,
    kind: FactKind = "data",
    note: str | None = None,
    expected_version: int | None = None,
    cell_id: str | None = None,
    source_hash: str | None = None,
    extra: Sequence[EventDraft] = (),
) -> Fact:
    """Record ``value`` as the next version of fact ``key``; return it, value decoded.

    ``extra`` events are appended in the same commit, stamped with the fact's time.

    Raises:
        SkillnbError: ``key`` is not a non-empty string.
        ConflictError: ``expected_version`` is given and is not the latest version.

    """
    if not isinstance(key, str) or not key:
        raise SkillnbError(f"a fact key must be a non-empty string, not {key!r}")
    encoded = codec.encode(value, journal.store, **journal.codec_options())
    at = journal.clock()

    def make(state: RunState) -> list[EventDraft]:
        previous = state.facts.get(key)
        fact = Fact(
            key=key,
            value=encoded.value,
            encoding=encoded.encoding,
            restorable=encoded.restorable,
            kind=kind,
            version=previous.version + 1 if previous else 1,
            at=at,
            cell_id=cell_id,
            source_hash=source_hash,
            note=note,
            preview=encoded.preview,
        )
        drafted = journal.draft("fact.formalized", fact=fact.model_dump(mode="json"))
        return [drafted, *(d.model_copy(update={"at": drafted.at}) for d in extra)]

    journal.commit(make, expected_version, speculative=True)  # make has no side effects
    fact = journal.state.facts[key]
    journal.remember_decoded(key, fact.version, value if encoded.restorable else encoded.value)
    return journal.decode(fact)
