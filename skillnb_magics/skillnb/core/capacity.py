"""How much a run may keep before it archives and warns (core layer, pure).

A run never refuses work for being large. Past :attr:`Limits.max_bytes` of live journal, the
run compacts: superseded fact versions and old events move to archived segments (history
still lists them) and the live journal starts small again. Past :attr:`Limits.max_facts`
distinct facts, or when the current facts alone approach the byte cap, it warns: that is
for the user to settle (archive the run, roll facts up, start a new run). A warning comes
once per limit as the run crosses :attr:`Limits.warn_at` of it, so a growing run is told
before it gets there, not on every cell.

Limits come from ``open_run(limits=...)`` or the environment: ``SKILLNB_MAX_FACTS`` and
``SKILLNB_MAX_BYTES``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cached_property

from skillnb.errors import SkillnbWarning

__all__ = ["CapacityWarning", "Limits", "Usage", "assess", "due", "well_within"]


class CapacityWarning(SkillnbWarning):
    """A run is approaching (or past) one of its limits; it keeps working."""


@dataclass(frozen=True)
class Limits:
    """Per-run limits."""

    max_facts: int = 1000
    """Distinct fact keys a run is expected to keep (past it: a warning)."""
    max_bytes: int = 16 * 1024 * 1024
    """Live journal bytes before superseded versions are archived to segments."""
    warn_at: float = 0.8
    """The fraction of a limit at which the run warns."""

    def __post_init__(self) -> None:
        if self.max_facts < 1 or self.max_bytes < 1 or not 0 < self.warn_at <= 1:
            raise ValueError(f"limits must be positive and warn_at in (0, 1]: {self}")

    @cached_property
    def calm(self) -> tuple[float, float, int]:
        """What :func:`well_within` compares usage with, worked out once (every commit asks).

        Facts and snapshot bytes below the first two, live bytes at most the third.
        """
        return self.warn_at * self.max_facts, self.warn_at * self.max_bytes, self.max_bytes

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Limits:
        """Limits from ``SKILLNB_MAX_FACTS`` / ``SKILLNB_MAX_BYTES`` (defaults otherwise).

        Raises:
            ValueError: a variable is set but not a positive integer (the message names it).

        """
        values: dict[str, int] = {}
        names = (("max_facts", "SKILLNB_MAX_FACTS"), ("max_bytes", "SKILLNB_MAX_BYTES"))
        for field, name in names:
            text = env.get(name, "").strip()
            if text:
                if not text.isdigit() or int(text) < 1:
                    raise ValueError(f"{name}={text!r}: expected a positive whole number")
                values[field] = int(text)
        return cls(**values)


@dataclass(frozen=True)
class Usage:
    """What a run holds now."""

    facts: int
    """Distinct fact keys."""
    live_bytes: int | None
    """Bytes in the live journal (``None`` when the store cannot tell)."""
    snapshot_bytes: int = 0
    """Bytes of the last snapshot: the state as of the last compaction, which compaction
    itself cannot shrink."""


def assess(
    usage: Usage, limits: Limits, given: Collection[str] = ()
) -> tuple[bool, dict[str, str]]:
    """Whether to compact now, and the warnings due (by limit name).

    ``given``: the limits whose warning the caller has already shown; none is due again.

    Returns:
        ``(compact, warnings)``: ``compact`` when the live journal is past ``max_bytes``;
        ``warnings`` maps ``"facts"`` / ``"bytes"`` to a message when that use has reached
        ``warn_at`` of its limit (the caller shows each once).

    """
    warnings: dict[str, str] = {}
    if usage.facts >= limits.warn_at * limits.max_facts and "facts" not in given:
        warnings["facts"] = (
            f"this run keeps {usage.facts} facts (limit {limits.max_facts}): archive it "
            "(run.archive() or `skillnb archive`) or start a new run before it grows further"
        )
    if usage.snapshot_bytes >= limits.warn_at * limits.max_bytes and "bytes" not in given:
        warnings["bytes"] = (
            f"this run's current state takes {usage.snapshot_bytes} bytes (limit "
            f"{limits.max_bytes}): older versions are archived, but the latest values alone "
            "are near the cap; keep large data in files and formalize their paths"
        )
    compact = usage.live_bytes is not None and usage.live_bytes > limits.max_bytes
    return compact, warnings


def well_within(limits: Limits, facts: int, live_bytes: int | None, snapshot_bytes: int) -> bool:
    """True when :func:`assess` of this usage finds nothing to do: ``(False, {})``.

    What a commit asks first, without building a :class:`Usage` (the usual answer).
    """
    facts_below, bytes_below, live_at_most = limits.calm
    return (
        facts < facts_below
        and snapshot_bytes < bytes_below
        and (live_bytes is None or live_bytes <= live_at_most)
    )


def due(
    limits: Limits,
    facts: int,
    live_bytes: int | None,
    snapshot_bytes: int,
    given: Collection[str] = (),
) -> tuple[bool, dict[str, str]]:
    """:func:`assess` of this usage with the warnings in ``given`` left out, as a commit asks.

    Without building a :class:`Usage` or a message when nothing new is to be said: a run
    within its limits, or past them and already told (each commit of a large run asks).
    """
    if well_within(limits, facts, live_bytes, snapshot_bytes):
        return False, {}
    told_facts = "facts" in given or facts < limits.warn_at * limits.max_facts
    told_bytes = "bytes" in given or snapshot_bytes < limits.warn_at * limits.max_bytes
    if told_facts and told_bytes:
        return live_bytes is not None and live_bytes > limits.max_bytes, {}
    return assess(Usage(facts, live_bytes, snapshot_bytes), limits, given)
