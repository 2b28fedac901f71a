"""The facts and pending approvals of a run's notebook mirror, rebuilt where they changed.

Edge layer, beside :mod:`skillnb.notebookfile.mirror` (which puts them in the mirror).
Every magic's output carries the mirror; rebuilding its facts from every fact each cell
would cost a run of many facts more than the cell. So the parts of the last mirror of each
run are kept with the version they are of, and the events folded since (the journal keeps
the last few hundred in memory) say what changed: only ``fact.formalized`` changes
:attr:`~skillnb.core.runstate.records.RunState.facts` (see :mod:`skillnb.core.runstate.state`), and
only the events outside :data:`_KEEPS_PENDING` can change which approvals are pending. Anything else
(another state object after a reload, events no longer in memory) rebuilds them whole.
:func:`inert_text` (re-exported by :mod:`skillnb.notebookfile.mirror`) makes the
previews and messages safe to read back.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from skillnb.core.contract.mirror import ACTIVE_MARKUP, CONTROL_CHARS
from skillnb.core.limits import MAX_KEY, name_problem
from skillnb.core.runstate.records import Event, Fact, RunState

__all__ = ["inert_text", "mirror_parts"]


def inert_text(value: str, limit: int = 4000) -> str:
    """Return ``value`` as text that :func:`check_mirror` accepts.

    It is clipped to ``limit``, control characters become U+FFFD, and active markup is
    defused (the ``<`` of ``<script`` becomes U+2039, the colon of ``javascript:`` U+2236).
    Previews are display-only, so a fact holding, say, a scraped web page still gets a mirror
    that reads back; keys and states are never altered.
    """
    text = CONTROL_CHARS.sub("\ufffd", value)
    text = ACTIVE_MARKUP.sub(
        lambda m: m.group(0).replace("<", "\u2039").replace(":", "\u2236"), text
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"


_Entry = dict[str, Any] | None
_entries: weakref.WeakKeyDictionary[Any, dict[tuple[str, int], _Entry]] = (
    weakref.WeakKeyDictionary()
)
"""Per journal: each fact version's mirror entry (``None``: a key written before keys were
checked), so a magic's output does not check and escape every fact again."""


def _fact_entries(journal: Any, facts: Mapping[str, Fact]) -> dict[str, Any]:
    """The mirror's ``facts``; the entries are shared between mirrors (read-only)."""
    cache = _entry_cache(journal, len(facts))
    found: dict[str, Any] = {}
    for f in facts.values():
        _fact_entry(cache, found, f)
    return found


def _entry_cache(journal: Any, facts: int) -> dict[tuple[str, int], _Entry]:
    """The entries cached for ``journal``, emptied when mostly of versions since replaced."""
    cache = _entries.setdefault(journal, {})
    if len(cache) > 2 * facts + 64:
        cache.clear()
    return cache


def _fact_entry(cache: dict[tuple[str, int], _Entry], found: dict[str, Any], f: Fact) -> None:
    """Put fact ``f``'s mirror entry into ``found`` (none for a key that breaks the rules)."""
    at = (f.key, f.version)
    if at in cache:
        entry = cache[at]
    else:
        entry = None
        if name_problem(f.key, MAX_KEY) is None:
            entry = {
                "version": f.version,
                "kind": f.kind,
                "cell_id": f.cell_id,
                "preview": inert_text(f.preview),
            }
        cache[at] = entry
    if entry is not None:
        found[f.key] = entry
    else:
        found.pop(f.key, None)


class _Parts:
    """The facts and pending approvals of the last mirror of one run, at one version."""

    __slots__ = ("facts", "pending", "state", "version")

    def __init__(
        self, state: RunState, facts: dict[str, Any], pending: list[dict[str, Any]]
    ) -> None:
        self.state = state
        self.version = state.version
        self.facts = facts
        self.pending = pending


_parts_of: weakref.WeakKeyDictionary[Any, _Parts] = weakref.WeakKeyDictionary()

_KEEPS_PENDING = frozenset(
    {
        "fact.formalized",
        "gate.reported",
        "gate.bypassed",
        "step.started",
        "step.committed",
        "step.failed",
        "step.cleared",
        "claim.taken",
        "claim.renewed",
        "claim.released",
        "batch.declared",
        "batch.item_done",
        "keyids.set",
        "milestone.recorded",
        "followup.opened",
        "followup.resolved",
    }
)
"""Events that change no approval and no state entered (the pending list stays as it was)."""


def mirror_parts(journal: Any, state: RunState) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The mirror's ``facts`` and ``pending``: rebuilt where the events since the last changed.

    Only ``fact.formalized`` changes :attr:`RunState.facts` (see
    :mod:`skillnb.core.runstate.state`).
    """
    last = _parts_of.get(journal)
    events = None
    if last is not None and last.state is state and last.version <= state.version:
        events = journal.folded_after(last.version)
    facts = (
        _changed_facts(journal, state, last.facts, events) if last and events is not None else None
    )
    if last is None or events is None or facts is None:
        parts = _Parts(state, _fact_entries(journal, state.facts), _pending(state))
    else:
        keep = all(e.type in _KEEPS_PENDING for e in events)
        parts = _Parts(state, facts, last.pending if keep else _pending(state))
    _parts_of[journal] = parts
    return parts.facts, parts.pending


def _changed_facts(
    journal: Any, state: RunState, facts: dict[str, Any], events: list[Event]
) -> dict[str, Any] | None:
    """``facts`` with the entries ``events`` changed (a new dict), or ``None``: rebuild."""
    keys = []
    for event in events:
        if event.type == "fact.formalized":
            stored = event.data.get("fact")
            key = stored.get("key") if isinstance(stored, dict) else None
            if not isinstance(key, str) or key not in state.facts:
                return None
            keys.append(key)
    if not keys:
        return facts
    changed = dict(facts)
    cache = _entry_cache(journal, len(state.facts))
    for key in keys:
        _fact_entry(cache, changed, state.facts[key])
    return changed


def _pending(state: RunState) -> list[dict[str, Any]]:
    from skillnb.service.approvals import pending_in

    return [
        {
            "id": a.id,
            "gate": a.gate,
            "trigger": a.trigger,
            "message": inert_text(a.message),
            "state": a.state,
            "requested_seq": a.requested_seq,
            "requested_at": a.requested_at.isoformat(),
        }
        for a in pending_in(state)
    ]
