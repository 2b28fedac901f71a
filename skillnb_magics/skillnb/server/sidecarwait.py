"""The panel's long poll of a sidecar run's version (server layer).

A sidecar has no change notifications that reach another process, but every commit changes
its journal file (an append, or a new file after a compaction). :func:`wait_sidecar` holds a
version check until the run passes the version the panel has: it looks at the journal's
``lstat`` a few times a second on the server's event loop (no thread is held, no file is
opened, nothing is parsed) and asks the run's version only when the file changed. So a
decision made anywhere (the CLI, another kernel, another panel) reaches every open panel
within about 0.1 s plus one version read, not after the next poll interval.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

__all__ = ["LOOK_EVERY_S", "wait_sidecar"]

LOOK_EVERY_S = 0.1
"""How often a held check looks at the journal file."""

_FILES = ("journal.jsonl", "snapshot.json")


def _stamp(sidecar: Path) -> tuple[tuple[int, int, int] | None, ...]:
    """What changes when anything is committed: size, time and inode of the journal files."""
    stamps: list[tuple[int, int, int] | None] = []
    for name in _FILES:
        try:
            info = os.lstat(sidecar / name)
        except OSError:
            stamps.append(None)
            continue
        stamps.append((info.st_size, info.st_mtime_ns, info.st_ino))
    return tuple(stamps)


async def wait_sidecar(
    version: Callable[[], Awaitable[dict[str, Any]]],
    sidecar: Path,
    after: int,
    wait: float,
    *,
    every: float = LOOK_EVERY_S,
) -> dict[str, Any]:
    """``{"exists", "version", "live": True}`` once the run passes ``after`` or ``wait`` ends.

    Args:
        version: reads the run's ``{"exists", "version"}`` (on the registry's worker).
        sidecar: the run's sidecar folder, whose journal files are watched.
        after: the version the panel has.
        wait: how long to hold the check at most, in seconds (already bounded).
        every: how often to look at the files.

    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    seen = _stamp(sidecar)
    while True:
        now = await version()
        if not now.get("exists") or now.get("version") != after:
            return {**now, "live": True}
        changed = False
        while not changed and loop.time() < deadline:
            await asyncio.sleep(min(every, max(deadline - loop.time(), 0.0)))
            stamp = _stamp(sidecar)
            changed = stamp != seen
            seen = stamp
        if not changed:
            return {**now, "live": True}
