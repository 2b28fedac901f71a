"""The panel's long poll of a team run's version (server layer).

:func:`wait_version` returns as soon as the run passes the version the panel has, or when the
wait ends; the store's own change notifications (LISTEN/NOTIFY) wake it, so nothing polls.
Kept apart from :mod:`skillnb.server.runs` and :mod:`skillnb.server.teamruns` so that neither
imports the other.

A wait is bounded whatever the request says: :func:`clamp_wait` turns ``nan`` and negative
values into 0 and ``inf`` or anything longer into :data:`MAX_WAIT`. Waits run on threads of
their own (:class:`LongPolls`), at most :data:`MAX_WAITS` at once: past that, a request is
answered at once without ``live``, so the panel falls back to polling and no number of held
requests can keep another panel's from being answered.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["MAX_WAIT", "MAX_WAITS", "LongPolls", "clamp_wait", "wait_version"]

MAX_WAIT = 25.0
"""The longest a request is held, in seconds (below common proxy time-outs)."""

MAX_WAITS = 32
"""How many long polls a server holds at once; more are answered at once, not held."""


def clamp_wait(seconds: float, cap: float = MAX_WAIT) -> float:
    """``seconds`` bounded to ``[0, cap]``: ``nan`` and negatives give 0, ``inf`` gives ``cap``."""
    if math.isnan(seconds) or seconds <= 0:
        return 0.0
    return min(seconds, cap)


def wait_version(store: Any, after: int, wait: float) -> dict[str, Any]:
    """``{"exists", "version", "live"}`` once the run passes ``after`` or ``wait`` ends.

    ``store`` is a store object of this request alone (closed here), so the registry's
    worker and its cached runs stay free while it waits. ``wait`` is clamped first.
    """
    try:
        version = store.wait_for_change(after, clamp_wait(wait))
    finally:
        store.close()
    return {"exists": True, "version": version, "live": True}


class LongPolls:
    """The threads long polls wait on: their own, never the loop's default executor.

    Args:
        limit: how many waits may be held at once.

    """

    def __init__(self, limit: int = MAX_WAITS) -> None:
        self._executor = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="skillnb-poll")
        self._free = threading.BoundedSemaphore(limit)

    def submit(self, wait: Callable[[], dict[str, Any]]) -> Future[dict[str, Any]] | None:
        """Run ``wait`` on a thread of its own, or return ``None`` when all are taken."""
        if not self._free.acquire(blocking=False):
            return None
        future = self._executor.submit(wait)
        future.add_done_callback(lambda _: self._free.release())
        return future

    def close(self) -> None:
        """Stop the threads (each wait ends by its clamped limit)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
