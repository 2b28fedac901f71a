"""Which runs may write this user's skill memory: those created or adopted here (service layer).

The skill memory (``$SKILLNB_HOME/memory/<skill>.json``) is what the next session of a skill
trusts to know where the last one stopped (``last_batch_id``, ...). A run opened from someone
else's files (a cloned notebook, a copied sidecar, a colleague's run in a team store) must not
write its key ids there. So a run **belongs** to this user on this machine when:

* it was created by a process of this user with this ``SKILLNB_HOME`` (the process that wrote
  its ``run.created`` event records its id here, in ``$SKILLNB_HOME/owned-runs.json``), or
* the user adopted it: :meth:`skillnb.run.Run.adopt` records its id the same way, and
  ``open_run(..., memory=True)`` (or a :class:`~skillnb.skillmemory.SkillMemory` given
  explicitly) lets that one run write for as long as it is open.

Nothing in the run's own files decides it: a journal, a snapshot or a notebook can be copied or
forged, the file in the user's 0700 home cannot be from there. A run that does not belong
still reads the memory (the banner and the summary show it); it only does not write.

The file is ``{"v": 1, "runs": [ID, ...]}``, newest last, at most :data:`MAX_RUNS` ids; it is
written like the skill memory (under a lock, atomically, fsynced), through the same background
writer (:mod:`skillnb.memory.writer`). A damaged file reads as empty (no run belongs until it is
written again) and is replaced on the next write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skillnb.store import durable

__all__ = ["MAX_RUNS", "OWNED_FILE", "OwnedRuns"]

OWNED_FILE = "owned-runs.json"
"""The file, directly in ``$SKILLNB_HOME`` (beside ``memory/``, never a skill's name)."""

MAX_RUNS = 10_000
"""How many run ids the file keeps (the oldest are dropped first)."""

_MAX_ID = 200


def _ids(raw: bytes | None) -> list[str]:
    """The run ids in the file's bytes (none when missing or damaged)."""
    if raw is None or len(raw) > MAX_RUNS * (_MAX_ID + 8) + 100:
        return []
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    runs = data.get("runs") if isinstance(data, dict) and data.get("v") == 1 else None
    if not isinstance(runs, list):
        return []
    return [r for r in runs if isinstance(r, str) and 0 < len(r) <= _MAX_ID]


class OwnedRuns:
    """The ids of the runs that belong to this user here (see the module docstring).

    Args:
        home: the SKILL.nb home (``$SKILLNB_HOME``).

    """

    def __init__(self, home: Path) -> None:
        self._home = home
        self._path = home / OWNED_FILE
        self._lock_path = home / f".{OWNED_FILE}.lock"

    @property
    def path(self) -> Path:
        """The file."""
        return self._path

    @property
    def skill_name(self) -> str:
        """How the writer names this file in a warning."""
        return "owned runs"

    def holds(self, run_id: str) -> bool:
        """True when run ``run_id`` was created or adopted here."""
        if not run_id:
            return False
        try:
            raw = durable.read_or_none(self._path)
        except OSError:
            return False
        return run_id in _ids(raw)

    def add(self, run_id: str) -> None:
        """Record that run ``run_id`` belongs here (written now, not queued)."""
        self.record_many([{"run_id": run_id}])

    def record_many(self, records: Sequence[Mapping[str, Any]]) -> list[str]:
        """Add the ``run_id`` of each record, in one locked rewrite; return the ids added."""
        new = [str(r["run_id"]) for r in records if 0 < len(str(r.get("run_id", ""))) <= _MAX_ID]
        if not new:
            return []
        durable.ensure_private_dir(self._home)
        with durable.exclusive_lock(self._lock_path):
            runs = _ids(durable.read_or_none(self._path))
            added = [r for r in dict.fromkeys(new) if r not in runs]
            if not added:
                return []
            runs = [*runs, *added][-MAX_RUNS:]
            text = json.dumps({"v": 1, "runs": runs}, separators=(",", ":"))
            durable.atomic_write(self._path, text.encode())
        return added
