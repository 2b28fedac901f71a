"""One lane per notebook: a notebook's operations in order, other notebooks' beside them.

The registry runs file and database work off the event loop. With one worker thread for every
notebook, one notebook's slow view (gates checked against big facts, a slow disk) held back
every other panel's poll. :class:`Lanes` keeps the order per notebook (operations on one run
object never overlap: the next waits on the loop, holding no thread) and runs different
notebooks side by side on :data:`WORKERS` threads, so a slow notebook costs its own panel
time, not the others'. :meth:`Lanes.busy` tells the registry which runs are in use, so its
cache never closes one under an operation.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WORKERS", "Lanes"]

T = TypeVar("T")

WORKERS = 4
"""Threads the operations of different notebooks share."""


class Lanes:
    """Per-key order on a shared pool of threads (see the module docstring)."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="skillnb-runs")
        self._locks: dict[Hashable, tuple[asyncio.Lock, int]] = {}
        self._busy: set[Hashable] = set()
        self._guard = threading.Lock()

    async def run(self, key: Hashable, operation: Callable[[], T]) -> T:
        """Run ``operation`` on a thread once every earlier operation of ``key`` ended."""
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(self._executor, self._marked, key, operation)
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def busy(self, key: Hashable) -> bool:
        """True while an operation of ``key`` runs (from any thread)."""
        with self._guard:
            return key in self._busy

    def _marked(self, key: Hashable, operation: Callable[[], T]) -> T:
        with self._guard:
            self._busy.add(key)
        try:
            return operation()
        finally:
            with self._guard:
                self._busy.discard(key)

    def close(self) -> None:
        """Wait for the operations under way, drop the queued ones, stop the threads."""
        self._executor.shutdown(wait=True, cancel_futures=True)
