"""Fitting a summary's lines into its budget: sections, their keeping order, the kept lines.

What :func:`~skillnb.core.views.summary.render_summary` builds its Markdown with (core layer,
pure). Each :class:`Group` is a section; a :class:`Plan` keeps lines, most important first,
while they fit in the budget, and says what it left out. A long section (a run's history)
costs what the budget reads of it: its lines are formatted, and their keeping order worked
out, only as far as the budget goes.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

__all__ = ["MIN_FENCE", "NAMED", "Group", "Lazy", "Order", "Plan", "count", "ticks"]

_TICKS = re.compile("`+")
MIN_FENCE = 3
"""The shortest fence of the data block."""
NAMED = 5
"""Kinds of omitted lines named in the omitted line; the rest are counted together."""


def count(n: int, noun: tuple[str, str]) -> str:
    """``n`` and the noun ``(singular, plural)`` that fits it: ``1 fact``, ``2,000 facts``."""
    return f"{n:,} {noun[0] if n == 1 else noun[1]}"


class Lazy(Sequence[str]):
    """Lines formatted from rows on first use: a budget reads only the lines it considers."""

    def __init__(self, rows: Sequence[Any], render: Callable[[Any], str]) -> None:
        self._rows, self._render = rows, render
        self._done: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        line = self._done.get(i)
        if line is None:
            line = self._done[i] = self._render(self._rows[i])
        return line


@dataclass
class Group:
    """Lines of one section in display order, and the order in which to keep them."""

    rank: int
    header: str | None
    noun: tuple[str, str]
    lines: Sequence[str] = field(default_factory=list)
    priority: Sequence[int] | None = None
    """Indices into ``lines``, most important first (``None``: display order)."""
    hidden: int = 0
    """Lines of this section the view left out (``fact_counts``): counted, never shown."""


def ticks(line: str) -> int:
    """The longest run of backticks in ``line`` (the fence must be longer)."""
    return max((len(run) for run in _TICKS.findall(line)), default=0)


class Order(Sequence[tuple[int, int]]):
    """(group index, line index) of every line, most important first, worked out on demand.

    The sections by rank, each section's lines in its priority order (display order without
    one): a budget reads the first few lines of a long history, never a list of all of them.
    """

    def __init__(self, groups: list[Group]) -> None:
        self.ranked = sorted(range(len(groups)), key=lambda g: groups[g].rank)
        self.lines = [groups[g].priority or range(len(groups[g].lines)) for g in self.ranked]
        self.starts = list(itertools.accumulate(map(len, self.lines), initial=0))
        """Where each ranked section's lines begin; the last entry is the total."""

    def __len__(self) -> int:
        return self.starts[-1]

    @overload
    def __getitem__(self, n: int) -> tuple[int, int]: ...
    @overload
    def __getitem__(self, n: slice) -> list[tuple[int, int]]: ...
    def __getitem__(self, n: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(n, slice):
            return [self[j] for j in range(*n.indices(len(self)))]
        if not 0 <= n < len(self):
            raise IndexError(n)
        k = bisect.bisect_right(self.starts, n) - 1
        return self.ranked[k], self.lines[k][n - self.starts[k]]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for g, lines in zip(self.ranked, self.lines, strict=True):
            for i in lines:
                yield g, i

    def left(self, kept: int) -> dict[int, int]:
        """How many lines of each section come at or after position ``kept``."""
        ends = itertools.islice(self.starts, 1, None)
        found = zip(self.ranked, self.starts, ends, strict=False)
        return {g: end - max(start, kept) for g, start, end in found if end > kept}


@dataclass
class Plan:
    """The lines in keeping order, with what each costs."""

    groups: list[Group]
    order: Order
    """(group index, line index), most important first."""
    ticks: list[int]
    """Longest backtick run of the lines of ``order`` measured so far (in order)."""
    walls: set[int]
    """Positions in ``order`` after which a section's left-out lines would come next."""

    @classmethod
    def of(cls, groups: list[Group]) -> Plan:
        """The plan of keeping ``groups``' lines (none kept or measured yet)."""
        order = Order(groups)
        ends = itertools.islice(order.starts, 1, None)
        walls = {end - 1 for g, end in zip(order.ranked, ends, strict=False) if groups[g].hidden}
        return cls(groups, order, [], walls)

    def _tick(self, n: int) -> int:
        while len(self.ticks) <= n:
            g, i = self.order[len(self.ticks)]
            self.ticks.append(ticks(self.groups[g].lines[i]))
        return self.ticks[n]

    def keep(self, room: int) -> int:
        """How many lines of ``order`` fit in ``room`` characters of block (body and fences)."""
        used, fence, opened = 2 * MIN_FENCE, MIN_FENCE, set()
        for n, (g, i) in enumerate(self.order):
            group = self.groups[g]
            cost = len(group.lines[i]) + 1
            if g not in opened and group.header is not None:
                cost += len(group.header) + 2  # a blank line, then the header
            wider = max(fence, self._tick(n) + 1)
            cost += 2 * (wider - fence)
            if used + cost > room:
                return n
            used, fence = used + cost, wider
            opened.add(g)
            if n in self.walls:
                return n + 1  # the next line is one the view left out: keeping stops here
        return len(self.order)

    def omitted(self, kept: int, max_chars: int, named: int = NAMED) -> str:
        """Say what was left out, most important first (empty when nothing was)."""
        left = self.order.left(kept)
        counts: dict[tuple[str, str], int] = {}
        for g in sorted(range(len(self.groups)), key=lambda g: self.groups[g].rank):
            n = left.get(g, 0) + self.groups[g].hidden
            if n:
                counts[self.groups[g].noun] = counts.get(self.groups[g].noun, 0) + n
        if not counts:
            return ""
        parts = [count(n, noun) for noun, n in list(counts.items())[:named]]
        rest = sum(list(counts.values())[named:])
        if rest:
            parts.append(count(rest, ("more line", "more lines") if parts else ("line", "lines")))
        listed = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
        return f"… {listed} omitted to fit {max_chars:,} chars."

    def render(self, kept: int) -> str:
        """Render the fenced block of the first ``kept`` lines, in display order."""
        chosen: dict[int, list[int]] = {}
        for g, i in itertools.islice(self.order, kept):
            chosen.setdefault(g, []).append(i)
        body: list[str] = []
        for g, group in enumerate(self.groups):
            if g not in chosen:
                continue
            if group.header is not None:
                body += ["", group.header]
            body += [group.lines[i] for i in sorted(chosen[g])]
        fence = "`" * max([MIN_FENCE, *(self._tick(n) + 1 for n in range(kept))])
        return f"{fence}text\n" + "\n".join(body) + f"\n{fence}\n"
