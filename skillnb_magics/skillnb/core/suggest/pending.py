"""The suggestions still on offer, and when one is withdrawn (pure core).

A cell's suggestions (:func:`skillnb.suggest`) stay on offer, under the cell, in the
JupyterLab panel and for ``%formalize NAME``, only while keeping them would keep what was
offered. :class:`PendingSuggestions` holds them with the value each was made for, the cell
that made it and the version its fact had then, and withdraws one when:

* it is **kept**: taken by a Keep button, the panel or ``%formalize NAME``
  (:meth:`~PendingSuggestions.take`), or its fact got a new version by any other path
  (``%%formalize NAME``, ``run.formalize``, another process) since it was offered;
* it is **superseded**: the cell that made it runs again (its new suggestions, if any,
  replace it), or the name no longer holds the value it was made for (a later cell
  reassigned or deleted it; a later cell that changes it in place is seen by the cell watcher
  and offers the new value instead). What a pin's extractor read is no variable: only its
  cell running again or a keep withdraws it.

Names are compared by identity (``is``), never by value: nothing large is compared or copied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillnb.core.runstate.records import Fact
    from skillnb.core.suggest.rank import Suggestion

__all__ = ["Offer", "PendingSuggestions"]

LIMIT = 50
"""How many suggestions stay on offer at most (the newest)."""


@dataclass(frozen=True, slots=True, eq=False)
class Offer:
    """One suggestion on offer, with what keeping it would keep."""

    suggestion: Suggestion
    value: Any
    """The value the name held when the suggestion was made."""
    cell_id: str | None
    """The cell that made it (``None`` when the frontend gives no cell ids)."""
    seen: int
    """The version its fact had when it was offered (0: not kept yet)."""
    order: int
    """Which offer it came with (larger: newer)."""
    bound: bool = True
    """The value is a variable's (a cell made it); False: read elsewhere (a pin's extractor)."""

    @property
    def name(self) -> str:
        """The suggested name (the fact key it would be kept as)."""
        return self.suggestion.name

    def holds(self, namespace: Mapping[str, Any]) -> bool:
        """Tell whether ``namespace`` still holds, under this name, the value offered.

        An offer not bound to a variable (read by a pin's extractor) always holds.
        """
        if not self.bound:
            return True
        return self.name in namespace and namespace[self.name] is self.value


class PendingSuggestions:
    """The suggestions on offer in one kernel, newest last, at most :data:`LIMIT`."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._offers: dict[str, Offer] = {}
        self._order = 0

    def __len__(self) -> int:
        return len(self._offers)

    def get(self, name: str) -> Offer | None:
        """The offer of ``name``, if it is on offer."""
        return self._offers.get(name)

    def offer(
        self,
        found: list[Suggestion],
        values: Mapping[str, Any],
        cell_id: str | None,
        facts: Mapping[str, Fact] | None,
        *,
        bound: bool = True,
    ) -> list[Offer]:
        """Put ``found`` on offer (best first), made by ``cell_id`` with ``values``.

        ``bound``: the values are the namespace's (see :attr:`Offer.bound`).
        """
        self._order += 1
        made = []
        for s in found:
            fact = facts.get(s.name) if facts is not None else None
            seen = fact.version if fact else 0
            made.append(Offer(s, values[s.name], cell_id, seen, self._order, bound))
            self._offers.pop(s.name, None)  # re-inserted last: the newest stay when trimming
            self._offers[s.name] = made[-1]
        for name in list(self._offers)[: max(len(self._offers) - self.limit, 0)]:
            del self._offers[name]
        return made

    def take(self, name: str) -> Offer | None:
        """Withdraw ``name`` because it is being kept; return its offer, if it had one."""
        return self._offers.pop(name, None)

    def supersede(self, cell_id: str | None) -> None:
        """Withdraw what ``cell_id`` offered: the cell runs again (nothing for ``None``)."""
        if cell_id is None:
            return
        for name in [n for n, o in self._offers.items() if o.cell_id == cell_id]:
            del self._offers[name]

    def expire(self, namespace: Mapping[str, Any], facts: Mapping[str, Fact] | None) -> None:
        """Withdraw what no longer holds its value, or whose fact changed since it was offered."""
        for name, offer in list(self._offers.items()):
            fact = facts.get(name) if facts is not None else None
            version = fact.version if fact is not None else 0
            if version != offer.seen or not offer.holds(namespace):
                del self._offers[name]

    def live(self) -> list[Suggestion]:
        """What is on offer: the newest offer's suggestions first, each best first."""
        offers = sorted(self._offers.values(), key=lambda o: -o.order)  # stable: rank kept
        return [o.suggestion for o in offers]
