"""Writing facts: a value becomes the next version of a key (service layer).

:func:`write_fact` encodes the value (see :mod:`skillnb.store.codec.values`) outside the lock, then
commits one ``fact.formalized`` event, plus any events the caller adds to the same append
(a formalized step's ``step.committed``), so the fact and its step land together.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic_core import to_jsonable_python

from skillnb.core.limits import check_key, check_text
from skillnb.core.runstate.records import (
    FACT_KINDS,
    RECORD_VERSION,
    CheckedDraft,
    EventDraft,
    Fact,
    FactDraft,
    FactKind,
    RunState,
    json_time,
    replaced,
)
from skillnb.errors import SkillnbError
from skillnb.service.journal import RunJournal
from skillnb.store.codec import values as codec

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
    if_changed: bool = False,
) -> Fact:
    """Record ``value`` as the next version of fact ``key``; return it, value decoded.

    ``extra`` events are appended in the same commit, stamped with the fact's time. With
    ``if_changed``, a value (as stored), kind and note equal to the latest version's write
    nothing at all (``extra`` included) and the latest version is returned.

    Raises:
        SkillnbError: ``key`` is not a non-empty string; ``kind``, ``note``, ``cell_id`` or
            ``source_hash`` is not what a fact holds.
        ConflictError: ``expected_version`` is given and is not the latest version.

    """
    if not isinstance(key, str) or not key:
        raise SkillnbError(f"a fact key must be a non-empty string, not {key!r}")
    _check_fields(key, kind, note, cell_id, source_hash)
    encoded = codec.encode(value, journal.store, **journal.codec_options())
    stored_value = encoded.value if encoded.plain else to_jsonable_python(encoded.value)
    at = journal.clock()
    at_json = json_time(at)

    def make(state: RunState) -> list[EventDraft]:
        previous = state.facts.get(key)
        if if_changed and _same(previous, stored_value, encoded, kind, note):
            return []
        fact = {  # what Fact(...).model_dump(mode="json") gives, built directly
            "v": RECORD_VERSION,
            "key": key,
            "value": stored_value,
            "encoding": encoded.encoding,
            "restorable": encoded.restorable,
            "kind": kind,
            "version": previous.version + 1 if previous else 1,
            "seq": 0,
            "at": at_json,
            "cell_id": cell_id,
            "source_hash": source_hash,
            "note": note,
            "preview": encoded.preview,
        }
        # Strict JSON: a plain value, or what the codec's strict encoder wrote (made plain).
        drafted = (  # with the fact folding it builds, when it commits as the next event
            FactDraft.of_fact(at, fact, state.version + 1)
            if type(at) is datetime  # what validating would keep as it is
            else CheckedDraft(type="fact.formalized", at=at, data={"fact": fact})
        )
        if not extra:
            return [drafted]
        return [drafted, *(d.model_copy(update={"at": at}) for d in extra)]

    written = journal.commit(make, expected_version, speculative=True)  # make has no effects
    fact = journal.state.facts[key]
    if not written:  # unchanged (if_changed): the latest version stands
        return journal.decode(fact)
    decoded = value if encoded.restorable else encoded.value  # what decoding would give
    journal.remember_decoded(key, fact.version, decoded)
    return replaced(fact, value=decoded)


def _check_fields(
    key: str, kind: str, note: str | None, cell_id: str | None, source_hash: str | None
) -> None:
    """What ``check_event`` and the :class:`Fact` model check, before anything is encoded."""
    check_key(key, "fact key")
    if note is None and cell_id is None and source_hash is None and kind in FACT_KINDS:
        return  # the usual write: nothing more to look at
    check_text(note, "note")
    if kind not in FACT_KINDS:
        raise SkillnbError(f"a fact's kind is one of {', '.join(FACT_KINDS)}; not {kind!r}")
    for what, text in (("cell id", cell_id), ("source hash", source_hash)):
        if text is not None and not isinstance(text, str):
            raise SkillnbError(f"a fact's {what} must be a string, not {type(text).__name__}")


def _same(
    previous: Fact | None, stored: Any, encoded: codec.Encoded, kind: str, note: str | None
) -> bool:
    """Tell whether the latest version ``previous`` already holds this value, kind and note."""
    return (
        previous is not None
        and previous.restorable
        and encoded.restorable
        and previous.kind == kind
        and previous.note == note
        and previous.encoding == encoded.encoding
        and previous.value == stored
    )
