"""What keeping a suggested name did: the fact's latest version, and whether it was written (edge).

Shared by the suggestions under a cell (:mod:`skillnb.jupyter.suggest.cells`) and their
buttons (:mod:`skillnb.jupyter.suggest.buttons`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Fact

__all__ = ["Kept"]


@dataclass(frozen=True, slots=True)
class Kept:
    """What a keep did: the fact's latest version, and whether this keep wrote it."""

    fact: Fact
    written: bool
    """False when the fact already held this value and kind (no version was written)."""

    def said(self) -> str:
        """``deadline is already kept as v1 with this value`` (only when nothing was written)."""
        return f"{self.fact.key} is already kept as v{self.fact.version} with this value"
