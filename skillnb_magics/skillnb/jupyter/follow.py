"""The watcher thread behind live views: it notices, the event loop handles (edge layer).

A run can change in another process at any moment. :class:`ChangeFollower` waits on a
:class:`Watchable` in a daemon thread, with a store object of its own: a team store's
``LISTEN``/``NOTIFY`` channel (:meth:`PostgresStore.wait_for_change`, woken by the database),
or a ``stat`` poll of a sidecar's files (:class:`skillnb.jupyter.live.JournalStat`). It hands
each change to ``schedule``, which runs the callback where the run may be touched: the
kernel's event loop, between cells. :mod:`skillnb.jupyter.live` shares one follower among
every view of a run.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Protocol

from skillnb.errors import SkillnbError

__all__ = ["ChangeFollower", "Watchable", "loop_scheduler"]

_WAIT = 10.0  # seconds per wait: how soon a stop is noticed (a change wakes it at once)
_AFTER_ERROR = 5.0  # seconds before listening again when the server is unreachable


class Watchable(Protocol):
    """What the follower needs from a store."""

    def head(self) -> int:
        """The latest committed version."""
        ...

    def wait_for_change(self, version: int, timeout: float) -> int:
        """Block until the head passes ``version`` or ``timeout`` ends; return the head."""
        ...

    def close(self) -> None:
        """Release the connections."""
        ...


def loop_scheduler() -> Callable[[Callable[[], None]], None] | None:
    """A scheduler onto the running event loop of this thread (the kernel's), or ``None``.

    ``asyncio`` is not imported for it: where nothing imported it, no loop runs (a bare
    IPython shell), and importing it would cost a shell's start a few tens of milliseconds.
    """
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None

    def schedule(callback: Callable[[], None]) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(callback)

    return schedule


class ChangeFollower:
    """Call ``on_change`` (through ``schedule``) each time the run moves.

    Args:
        store: a store object for the follower alone (it is closed on :meth:`stop`).
        on_change: what to do after a change (e.g. refresh a view).
        schedule: runs a callback in the right thread.
        wait: seconds per wait: how soon a stop is noticed (a change wakes it at once).

    """

    def __init__(
        self,
        store: Watchable,
        on_change: Callable[[], None],
        schedule: Callable[[Callable[[], None]], None],
        wait: float = _WAIT,
    ) -> None:
        self._store = store
        self._wait = wait
        self._on_change = on_change
        self._schedule = schedule
        self._stopped = threading.Event()
        self.changes = 0
        """How many changes were handed on (for tests and diagnostics)."""
        self._thread = threading.Thread(target=self._follow, name="skillnb-follow", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            self._loop()
        finally:
            self._store.close()

    def _loop(self) -> None:
        seen: int | None = None
        while not self._stopped.is_set():
            try:
                if seen is None:
                    seen = self._store.head()
                head = self._store.wait_for_change(seen, self._wait)
            except SkillnbError:
                seen = None  # read the head again once the server is back
                self._stopped.wait(_AFTER_ERROR)
                continue
            if head > seen and not self._stopped.is_set():
                seen = head
                self.changes += 1
                self._schedule(self._handle)

    def _handle(self) -> None:
        if not self._stopped.is_set():
            self._on_change()

    def stop(self) -> None:
        """Stop following: no callback is handed on after this returns.

        The thread notices within one wait (``wait`` seconds, at once on a change) and then
        closes its store; nothing waits for it.
        """
        self._stopped.set()

    @property
    def alive(self) -> bool:
        """True until the thread has ended."""
        return self._thread.is_alive()
