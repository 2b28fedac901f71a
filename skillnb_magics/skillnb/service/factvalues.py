"""A run's fact values as a mapping, decoded when read (service layer)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from skillnb.core.runstate.records import Fact, RunState

__all__ = ["FactValues"]


class FactValues(Mapping[str, Any]):
    """A read-only mapping of fact values, decoded on first access.

    ``decode`` gives a fact with its value decoded (``RunJournal.decode``, which keeps it).
    """

    def __init__(self, decode: Callable[[Fact], Fact], state: RunState) -> None:
        self._decode = decode
        self._facts = state.facts

    def __getitem__(self, key: str) -> Any:
        return self._decode(self._facts[key]).value

    def __iter__(self) -> Iterator[str]:
        return iter(self._facts)

    def __len__(self) -> int:
        return len(self._facts)
