"""The cost budget of one check evaluation (core layer).

Validation (:mod:`skillnb.core.expr.syntax`) bounds what a check may *say*; this module
bounds what it may *cost*. Python's own operations on lists and strings run in C, hold the
GIL and ignore ``KeyboardInterrupt``: ``[[0]*999999]*999999 == [[0]*999999]*999999`` would
freeze the process. So before the evaluator builds, compares, searches or reduces a value it
charges the work to a :class:`Budget`: every node visited costs one unit, building a value
costs its length, and comparing or scanning values costs their :func:`weight` (elements
counted deeply, strings by 64-character blocks, shared references counted each time they
appear, because that is what a comparison walks). A budget that runs out, or a deadline
that passes, raises :class:`BudgetExceeded`, which the gate reports as a failure.

One evaluation of many gates (a ``check()``, a gated cell, every transition of a
``describe()``) shares a :class:`TotalBudget`: each check's own budget is cut to what the
total has left, and once it is spent the remaining checks fail at once, so 100 checks of half
a second each cost :data:`TOTAL_SECONDS`, not 50 s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from skillnb.errors import SkillnbError

__all__ = [
    "MAX_NESTING",
    "MAX_SECONDS",
    "MAX_UNITS",
    "TOTAL_SECONDS",
    "TOTAL_UNITS",
    "Budget",
    "BudgetExceeded",
    "TotalBudget",
    "weight",
]

MAX_UNITS = 5_000_000
"""Work units one evaluation may spend (a fraction of a second of work)."""
MAX_SECONDS = 0.5
"""Wall-clock seconds one evaluation may take, whatever the units say."""
TOTAL_UNITS = 20_000_000
"""Work units all the checks of one evaluation may spend together."""
TOTAL_SECONDS = 2.0
"""Wall-clock seconds all the checks of one evaluation may take together."""
MAX_NESTING = 100
"""Deepest value a check may compare or scan."""
_CHARS_PER_UNIT = 64
_SCALARS = frozenset({int, float, bool, type(None)})
_FLAT = _SCALARS | {str}
_TICK_EVERY = 256
_CLOCK_EVERY = 1024


class BudgetExceeded(SkillnbError):
    """A check needed more work than its budget allows.

    Attributes:
        message: what ran out, e.g. ``check exceeded its budget of 2000000 units``.

    """

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class Budget:
    """Work units and a deadline for one evaluation.

    Args:
        units: the units available.
        seconds: the wall-clock time available.
        clock: seconds, for the deadline (injectable).

    """

    __slots__ = ("_clock", "_deadline", "_ticks", "remaining", "units")

    def __init__(
        self,
        units: int = MAX_UNITS,
        seconds: float = MAX_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.units = units
        self.remaining = units
        self._clock = clock
        self._deadline = clock() + seconds
        self._ticks = 0

    def charge(self, cost: int, what: str = "") -> None:
        """Spend ``cost`` units.

        Raises:
            BudgetExceeded: the units are spent or the deadline has passed.

        """
        self.remaining -= max(cost, 0)
        if self.remaining < 0:
            doing = f" ({what})" if what else ""
            raise BudgetExceeded(f"check exceeded its budget of {self.units} units{doing}")
        self._ticks += 1
        if self._ticks % _CLOCK_EVERY == 0:
            self._check_clock()

    def weigh(self, value: Any, what: str) -> int:
        """Charge the :func:`weight` of ``value`` and return it.

        Raises:
            BudgetExceeded: the value is heavier than what is left, or nested too deeply.

        """
        cost = weight(value, self.remaining + 1, self._check_clock)
        self.charge(cost, what)
        return cost

    def _check_clock(self) -> None:
        if self._clock() > self._deadline:
            raise BudgetExceeded("check exceeded its time budget")


class TotalBudget:
    """The units and the deadline that all the checks of one evaluation share.

    Args:
        units: the units available to all of them.
        seconds: the wall-clock time available to all of them.
        clock: seconds, for the deadline (injectable).

    """

    __slots__ = ("_clock", "_deadline", "remaining", "seconds", "units")

    def __init__(
        self,
        units: int = TOTAL_UNITS,
        seconds: float = TOTAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.units = units
        self.seconds = seconds
        self.remaining = units
        self._clock = clock
        self._deadline = clock() + seconds

    def next(self) -> Budget:
        """The budget of the next check: its own limits, cut to what the total has left.

        Raises:
            BudgetExceeded: the total is spent (the check is then not evaluated at all).

        """
        left = self._deadline - self._clock()
        if left <= 0 or self.remaining <= 0:
            raise BudgetExceeded(
                f"not evaluated: the checks of this evaluation spent their total budget "
                f"({self.seconds:g} s, {self.units} units)"
            )
        return Budget(min(MAX_UNITS, self.remaining), min(MAX_SECONDS, left), self._clock)

    def spend(self, budget: Budget) -> None:
        """Take what ``budget`` (from :meth:`next`) used off the total."""
        self.remaining -= max(budget.units - budget.remaining, 0)


def weight(value: Any, cap: int, tick: Callable[[], None] | None = None) -> int:
    """Return the deep size of ``value`` in work units, counting at most ``cap + 1``.

    Containers count one per element, recursively (a list holding one list a million times
    weighs a million times that list, as a comparison walks it); strings one more per 64
    characters. The walk itself stays cheap: a container of numbers or strings is measured
    by C-level passes, a container already measured (the same object again) is looked up,
    and the walk stops as soon as the count passes ``cap``. ``tick`` is called every few
    hundred containers (the budget's deadline check).

    Raises:
        BudgetExceeded: the value is nested more than :data:`MAX_NESTING` levels deep, or
            ``tick`` raised it.

    """
    return _Walk(cap, tick).weigh(value, 0)


class _Walk:
    """One :func:`weight` walk: the cap, the containers seen, the deadline tick."""

    def __init__(self, cap: int, tick: Callable[[], None] | None) -> None:
        self.cap = cap
        self.tick = tick
        self.seen: dict[int, int] = {}

    def weigh(self, item: Any, depth: int) -> int:
        if isinstance(item, str):
            return 1 + len(item) // _CHARS_PER_UNIT
        if not isinstance(item, Mapping | list | tuple | set | frozenset):
            return 1
        known = self.seen.get(id(item))
        if known is not None:
            return known
        if depth >= MAX_NESTING:
            raise BudgetExceeded(f"a value is nested more than {MAX_NESTING} levels deep")
        if self.tick is not None and len(self.seen) % _TICK_EVERY == 0:
            self.tick()
        total, children = self.parts(item)
        if len(children) > self.cap:
            return self.cap + 1
        flat = self.flat(children)
        if flat is not None:
            total += len(children) + flat
        else:
            for child in children:
                total += self.weigh(child, depth + 1)
                if total > self.cap:
                    return self.cap + 1
        self.seen[id(item)] = total
        return total

    def parts(self, item: Any) -> tuple[int, Any]:
        """The units of the container itself (and a mapping's keys), and what to walk."""
        if isinstance(item, Mapping):
            keys = list(item.keys())
            return 1 + len(keys) + (self.flat(keys) or 0), list(item.values())
        return 1, item

    @staticmethod
    def flat(children: Any) -> int | None:
        """Extra units of a container holding only numbers or strings (None otherwise)."""
        kinds = set(map(type, children))
        if kinds <= _SCALARS:
            return 0
        if kinds <= _FLAT:
            return sum(len(c) for c in children if type(c) is str) // _CHARS_PER_UNIT
        return None
