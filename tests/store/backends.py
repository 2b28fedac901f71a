"""Every store backend behind one interface, for the conformance suite.

A module of its own (not the conftest) so that test files import it by a name no other
folder's conftest shadows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from skillnb.store import Store


@dataclass
class Backend:
    """Opens store objects over one shared location (like separate processes would)."""

    name: str
    factory: Callable[[], Store]
    opened: list[Store] = field(default_factory=list)

    def open(self) -> Store:
        store = self.factory()
        self.opened.append(store)
        return store
