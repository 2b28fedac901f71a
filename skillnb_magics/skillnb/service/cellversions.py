"""Which recorded version of a fact a formalized cell produced, and why it must recompute.

Service layer. A cell's identity is its normalised source hash plus, when it reads any, a
digest of its inputs (parameters and other facts): ``"<source hash>+<inputs digest>"``,
stored as the fact's ``source_hash``. The inputs' previews travel in the ``step.committed``
event of the version they produced, so a recomputation can say which input changed. Several
cells may record the same key: each finds the version it produced, as long as it did not
produce a later one since and nothing outside a cell wrote the key after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from skillnb.core.runstate.records import Fact
from skillnb.service.journal import RunJournal

__all__ = ["Past", "cell_part", "own_version", "read_past", "why_recomputed"]


def cell_part(identity: str | None) -> str | None:
    """The source part of a cell identity (``"<source hash>+<inputs digest>"``)."""
    return identity.split("+", 1)[0] if identity else None


@dataclass
class Past:
    """What the journal says about earlier versions of one key."""

    facts: list[Fact]
    """Every version, oldest first (values as stored)."""
    inputs: dict[int, dict[str, str]]
    """Fact version -> the inputs' previews recorded with it."""


def read_past(journal: RunJournal, key: str, step: str) -> Past:
    """Read every version of fact ``key`` and the inputs step ``step`` recorded with each."""
    facts: list[Fact] = []
    inputs: dict[int, dict[str, str]] = {}
    for event in journal.store.history():
        if event.type == "fact.formalized" and event.data["fact"].get("key") == key:
            facts.append(Fact.model_validate(event.data["fact"]))
        elif event.type == "step.committed" and event.data.get("key") == step and facts:
            recorded = event.data.get("inputs")
            if isinstance(recorded, dict):
                inputs[facts[-1].version] = {str(k): str(v) for k, v in recorded.items()}
    return Past(facts, inputs)


def own_version(past: Past, identity: str) -> Fact | None:
    """The version this cell produced with these inputs.

    ``None`` when this cell produced a later version since, or when a later version was
    written outside any cell (a script, a rollback): that was a deliberate change.
    """
    part = cell_part(identity)
    for fact in reversed(past.facts):
        if fact.source_hash == identity:
            return fact if fact.restorable else None
        if fact.source_hash is None or cell_part(fact.source_hash) == part:
            return None
    return None


def why_recomputed(past: Past, identity: str, inputs: Mapping[str, str]) -> str | None:
    """Say which input changed since this cell's last version (``None``: not an input)."""
    part = cell_part(identity)
    last = next((f for f in reversed(past.facts) if cell_part(f.source_hash) == part), None)
    if last is None:
        return None
    before = past.inputs.get(last.version, {})
    changed = [
        f"{name} changed {before[name]} → {value}"
        for name, value in inputs.items()
        if name in before and before[name] != value
    ]
    if not changed and last.source_hash != identity:
        changed = [f"{name} is a new input" for name in inputs if name not in before]
    return "; ".join(changed) or None
