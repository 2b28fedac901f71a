"""Durable formalized steps: compute once, restore after a restart (service layer).

:func:`formalize_step` is what a ``%%formalize`` cell (or a script) calls: when the fact
already exists for this run and was produced by the same normalised source, the value is
restored instead of recomputed; otherwise the computation runs as a durable step whose start
and commit are recorded separately, so a crash in between is visible as *uncertain*.

A cell's identity is its normalised source plus, when it reads any, a digest of its inputs
(parameters and other facts): ``"<source hash>+<inputs digest>"``. A changed input makes the
cell compute again, and the outcome says which input changed (the inputs' previews travel in
the ``step.committed`` event). Several cells may record the same key: each restores the
version it produced, as long as it did not produce a later one since.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from skillnb.core.records import Fact, FactKind

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["FormalizeOutcome", "formalize_step", "step_key"]


@dataclass(frozen=True)
class FormalizeOutcome:
    """The result of :func:`formalize_step`."""

    status: Literal["computed", "restored", "unchanged"]
    """``restored``: the recorded value was reused and nothing ran; ``unchanged``: ``--force``
    computed a value equal to the latest version, so no version was written."""
    fact: Fact
    """The fact (value decoded)."""
    result: Any = None
    """What the computation returned (``None`` when restored)."""
    reason: str | None = None
    """Why a recorded value was not restored, e.g. ``budget changed 5500 → 20000``."""
    value: Any = None
    """The computed value (kept for this session even when it cannot be stored as a value)."""


def cell_part(identity: str | None) -> str | None:
    """The source part of a cell identity (``"<source hash>+<inputs digest>"``)."""
    return identity.split("+", 1)[0] if identity else None


@dataclass
class _Past:
    """What the journal says about earlier versions of one key."""

    facts: list[Fact]
    inputs: dict[int, dict[str, str]]
    """Fact version -> the inputs' previews recorded with it."""


def _past(run: Run, key: str) -> _Past:
    skey = step_key(key)
    facts: list[Fact] = []
    inputs: dict[int, dict[str, str]] = {}
    for event in run.store.history():
        if event.type == "fact.formalized" and event.data["fact"].get("key") == key:
            facts.append(Fact.model_validate(event.data["fact"]))
        elif event.type == "step.committed" and event.data.get("key") == skey and facts:
            recorded = event.data.get("inputs")
            if isinstance(recorded, dict):
                inputs[facts[-1].version] = {str(k): str(v) for k, v in recorded.items()}
    return _Past(facts, inputs)


def _own_version(past: _Past, identity: str) -> Fact | None:
    """The version this cell produced with these inputs.

    ``None`` when this cell produced a later version since, or when a later version was
    written outside any cell (a script, a rollback): that was a deliberate change.
    """
    part = cell_part(identity)
    for fact in reversed(past.facts):
        if fact.source_hash == identity:
            return fact if fact.restorable else None
        if fact.source_hash is None or cell_part(fact.source_hash) == part:
            return None  # written later by this cell with other inputs, or outside any cell
    return None


def _why(past: _Past, identity: str, inputs: Mapping[str, str]) -> str | None:
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
    added = [name for name in inputs if name not in before]
    if not changed and added and last.source_hash != identity:
        changed = [f"{name} is a new input" for name in added]
    return "; ".join(changed) or None


def step_key(key: str) -> str:
    """The step key of the formalized cell for fact ``key``."""
    return f"formalize:{key}"


def formalize_step(
    run: Run,
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
    inputs: Mapping[str, str] | None = None,
) -> FormalizeOutcome:
    """Restore fact ``key`` when its producing cell and inputs are unchanged, else compute it.

    ``compute`` runs the work and returns its result; ``extract`` (default: identity) picks the
    value to record from that result. A computation that raises records nothing (the step is
    marked failed). ``force`` recomputes; a forced value equal to the latest version records
    no new version (status ``unchanged``). ``source_hash`` is the cell's identity (see the
    module docs); ``inputs`` maps each tracked input to its preview, recorded with the step.

    Raises:
        UncertainStep: an earlier computation started and never committed.

    """
    run.refresh()
    existing = run.snapshot_ref().facts.get(key)
    reason = None
    if not force and source_hash is not None and existing is not None:
        if existing.source_hash == source_hash and existing.restorable:
            fact = run.fact(key)
            assert fact is not None  # noqa: S101  # it exists: read under the same state
            return FormalizeOutcome(status="restored", fact=fact)
        past = _past(run, key)
        own = _own_version(past, source_hash)
        if own is not None:
            return FormalizeOutcome(status="restored", fact=run._decode(own))
        reason = _why(past, source_hash, inputs or {})
    skey = step_key(key)
    run._start_step(skey, source_hash, cell_id, idempotent, True)
    try:
        result = compute()
        value = extract(result) if extract is not None else result
    except BaseException as exc:
        run._fail_step(skey, exc)
        raise
    committed = run._draft("step.committed", key=skey, inputs=dict(inputs or {}))
    if force and existing is not None and _same_value(run, existing, value):
        run._commit(lambda _s: [committed])
        fact = run.fact(key)
        assert fact is not None  # noqa: S101  # it exists: read under the same state
        return FormalizeOutcome(status="unchanged", fact=fact, result=result, value=value)
    fact = run._formalize(
        key,
        value,
        kind=kind,
        note=note,
        cell_id=cell_id,
        source_hash=source_hash,
        extra=[committed],
    )
    return FormalizeOutcome(status="computed", fact=fact, result=result, reason=reason, value=value)


def _same_value(run: Run, existing: Fact, value: Any) -> bool:
    """Tell whether ``value`` encodes to what the latest version stores."""
    from skillnb.store import codec

    encoded = codec.encode(value, run.store, **run._codec_options())
    return bool(
        encoded.restorable
        and existing.restorable
        and encoded.encoding == existing.encoding
        and encoded.value == existing.value
    )
