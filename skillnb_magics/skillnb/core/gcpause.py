"""Pausing the cyclic garbage collector while many long-lived objects are built (core layer).

Replaying a journal builds hundreds of thousands of objects that all stay alive (events,
facts, steps). CPython's cyclic collector runs every few hundred allocations and, as the
heap grows, its full passes walk all of them again: about half of a long replay went there.
None of these objects form cycles that need collecting, so :func:`gc_paused` turns the
collector off for the duration of such a loop and back on afterwards (if it was on); after a
long one it moves what the loop built straight to the oldest generation, where only full
collections look.
"""

from __future__ import annotations

import gc

__all__ = ["PROMOTE_AFTER", "gc_paused"]

PROMOTE_AFTER = 50_000
"""Objects left by a pause (net of those freed) beyond which they skip the young generations.

Short pauses (a commit, catching up with a few events) never promote: young objects of the
process, cyclic garbage included, keep being collected young."""


class gc_paused:  # used as a function: ``with gc_paused():``
    """Run the body with the cyclic garbage collector off (reference counting goes on).

    Nesting and other threads are fine: the collector is turned back on only by the
    outermost pause that found it on; at worst it comes back on early. A class, not a
    generator: short pauses (a commit, catching up with a few events) are frequent.

    ``promote``: move what is young to the oldest generation at the end however few objects
    the body built (a read of a long journal may build few but large ones, such as its
    columns: lists of a hundred thousand items that the next young collection would walk).
    """

    __slots__ = ("_enabled", "_promote")

    def __init__(self, *, promote: bool = False) -> None:
        self._promote = promote

    def __enter__(self) -> None:
        self._enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
            if self._promote or gc.get_count()[0] > PROMOTE_AFTER:
                # A long load built this to stay: move it to the oldest generation at once
                # (freeze then unfreeze splice lists, O(1)) instead of letting the next young
                # collection walk all of it, and the one after that walk it again. Full
                # collections still examine it, as they do every long-lived object.
                gc.freeze()
                gc.unfreeze()
            gc.enable()
