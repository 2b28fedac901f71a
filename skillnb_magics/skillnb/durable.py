"""Durable formalized steps: compute once, restore after a restart (service layer).

:func:`formalize_step` is what a ``%%formalize`` cell (or a script) calls: when the fact
already exists for this run and was produced by the same normalised source, the value is
restored instead of recomputed; otherwise the computation runs as a durable step whose start
and commit are recorded separately, so a crash in between is visible as *uncertain*.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from skillnb.core.records import Fact, FactKind

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["FormalizeOutcome", "formalize_step", "step_key"]


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
) -> FormalizeOutcome:
    """Restore fact ``key`` when its producing source is unchanged, else compute and record it.

    ``compute`` runs the work and returns its result; ``extract`` (default: identity) picks the
    value to record from that result. A computation that raises records nothing (the step is
    marked failed). ``force`` recomputes and records a new version.

    Raises:
        UncertainStep: an earlier computation started and never committed.

    """
    run.refresh()
    existing = run.snapshot_ref().facts.get(key)
    unchanged = (
        existing is not None
        and source_hash is not None
        and existing.source_hash == source_hash
        and existing.restorable
    )
    if unchanged and not force:
        fact = run.fact(key)
        assert fact is not None  # noqa: S101  # it exists: read under the same state
        return FormalizeOutcome(status="restored", fact=fact)
    skey = step_key(key)
    run._start_step(skey, source_hash, cell_id, idempotent, True)
    try:
        result = compute()
        value = extract(result) if extract is not None else result
    except BaseException as exc:
        run._fail_step(skey, exc)
        raise
    fact = run._formalize(
        key,
        value,
        kind=kind,
        note=note,
        cell_id=cell_id,
        source_hash=source_hash,
        extra=[run._draft("step.committed", key=skey)],
    )
    return FormalizeOutcome(status="computed", fact=fact, result=result)
