"""Skill-memory records written off the caller's path.

A run tells its skill memory what it did (a transition fired, an approval given, ...). A
memory record rewrites the skill's JSON file under a lock and fsyncs it and its folder: three
fsyncs, more than the durable append of the step that caused it. So :func:`submit` only
queues the record, and one daemon thread per process writes the queue in order, a fifth of a
second after the first record, with the records of the same skill queued meanwhile in one
write (a burst of gated cells costs one file write, not one each). The journal
stays the durable truth; the memory is what a later session reads to know where this one
stopped.

:func:`flush` waits until every record queued so far is written: readers of the memory in this
process call it first (:attr:`skillnb.run.Run.memory`, every read of a
:class:`~skillnb.skillmemory.SkillMemory`), a closing run calls it, and so does the interpreter
at exit, so a process that ends normally loses nothing. A process killed before the thread
wrote its last records leaves the memory those records behind
(:meth:`skillnb.run.Run.set_key_ids` and ``milestone`` flush before they return).
A record that cannot be written (a full disk, a bad value) is reported as a
:class:`MemoryWriteWarning`.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import warnings
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from skillnb.errors import SkillnbWarning


class SkillMemory(Protocol):
    """What the writer needs of a :class:`skillnb.skillmemory.SkillMemory`."""

    @property
    def path(self) -> Path:
        """The memory's file."""

    @property
    def skill_name(self) -> str:
        """The skill's name."""

    def record_many(self, records: Sequence[Mapping[str, Any]]) -> object:
        """Write several records in one go (all or none)."""


__all__ = ["GATHER", "MemoryWriteWarning", "flush", "submit"]

GATHER = 0.2
"""Seconds the thread waits after a first record for the ones that follow (unless flushed)."""


class MemoryWriteWarning(SkillnbWarning):
    """A skill-memory record could not be written (the run itself is unaffected)."""


class _Writer:
    """The queue of one process and the thread that writes it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[tuple[SkillMemory, dict[str, Any]]] = deque()
        self._busy = False
        self._hurry = 0
        self._thread: threading.Thread | None = None

    def submit(self, memory: SkillMemory, record: dict[str, Any]) -> None:
        with self._cond:
            idle = not self._queue
            self._queue.append((memory, record))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="skillnb-memory", daemon=True
                )
                self._thread.start()
            if idle:  # waiting for more, the thread needs no wake-up per record
                self._cond.notify_all()

    def flush(self) -> None:
        with self._cond:
            if threading.current_thread() is self._thread:
                return
            self._hurry += 1
            self._cond.notify_all()
            try:
                while self._queue or self._busy:
                    self._cond.wait()
            finally:
                self._hurry -= 1

    def _run(self) -> None:
        with self._cond:
            while True:
                while not self._queue:
                    self._cond.wait()
                deadline = time.monotonic() + GATHER
                while not self._hurry and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)  # gather what follows: one write for a burst
                memory, record = self._queue.popleft()
                batch = [record]
                while self._queue and self._queue[0][0].path == memory.path:
                    batch.append(self._queue.popleft()[1])
                self._busy = True
                self._cond.release()
                try:
                    _write(memory, batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()


def _write(memory: SkillMemory, batch: list[dict[str, Any]]) -> None:
    """Write ``batch`` in one go; when that fails, each record alone (a bad one is reported)."""
    try:
        memory.record_many(batch)
        return
    except Exception as exc:  # noqa: BLE001  # reported below; the run goes on
        if len(batch) == 1:
            _report(memory, exc)
            return
    for record in batch:
        try:
            memory.record_many([record])
        except Exception as exc:  # noqa: BLE001  # reported; the run goes on
            _report(memory, exc)


def _report(memory: SkillMemory, exc: Exception) -> None:
    warnings.warn(
        f"skill memory {memory.skill_name!r} not updated: {exc}", MemoryWriteWarning, stacklevel=1
    )


_writer: _Writer | None = None
_guard = threading.Lock()


def _current() -> _Writer:
    global _writer  # one per process; a forked child starts empty (see below)
    with _guard:
        if _writer is None:
            _writer = _Writer()
        return _writer


def submit(memory: SkillMemory, **record: Any) -> None:
    """Queue ``memory.record_many([record])``; it is written soon, in order, by another thread."""
    _current().submit(memory, record)


def flush() -> None:
    """Wait until every record queued so far in this process is written (or reported)."""
    if _writer is not None:
        _writer.flush()


def _forget_in_child() -> None:
    global _writer, _guard  # the parent's queue and thread are the parent's to finish
    _writer = None
    _guard = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(flush)
