"""Writing a run a process still holds back into an empty sidecar folder (store layer).

When a run's folder is deleted (or replaced) under a live kernel, the kernel still holds the
run's folded state and its last events. When those events are the whole run (from version 1,
the usual case for an interactive run), :func:`write_back` writes them as the journal again,
so the run opens with the same id, version, facts, approvals and history. A kernel that holds
only the tail of a longer run cannot give the history back: it is refused, and the notebook's
outputs are the way back (``%resume`` rebuilds from them). Values a fact kept by reference
(``blobs/``) went with the folder: :func:`lost_values` names those facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from skillnb.core.runstate.records import Event, RunState
from skillnb.errors import SkillnbError
from skillnb.store.durable import FileLock, atomic_write, ensure_dir
from skillnb.store.sidecar.journal import encode_events, encode_header
from skillnb.store.sidecar.layout import SidecarLayout

__all__ = ["lost_values", "write_back"]


def lost_values(state: RunState, folder: Path) -> list[str]:
    """The facts of ``state`` whose value lived in a blob that ``folder`` no longer holds."""
    blobs = SidecarLayout(folder).blobs
    lost = []
    for key, fact in state.facts.items():
        ref = fact.value.get("$blob") if isinstance(fact.value, dict) else None
        name = ref.rpartition(":")[2] if isinstance(ref, str) else ""
        if fact.encoding == "blob" and not (name and (blobs / name).is_file()):
            lost.append(key)
    return lost


def write_back(folder: Path, state: RunState, events: Sequence[Event]) -> None:
    """Record run ``state``'s ``events`` (all of them, from version 1) in sidecar ``folder``.

    ``folder`` must hold no run.

    Raises:
        SkillnbError: ``folder`` holds a run (set it aside first), ``state`` names none, or
            ``events`` are not the run's whole history.
        UnsafePath: a symbolic link stands where the folder or its files go.

    """
    if not state.run_id:
        raise SkillnbError("the run has no id: nothing to write back")
    seqs = [e.seq for e in events]
    if seqs != list(range(1, state.version + 1)):
        first = seqs[0] if seqs else state.version + 1
        raise SkillnbError(
            f"this kernel holds only events {first}..{state.version} of run {state.run_id}, "
            "not its whole history: rebuild it from the saved notebook with %resume instead"
        )
    layout = SidecarLayout(folder)
    if layout.check_root() and (layout.journal.exists() or layout.snapshot.exists()):
        raise SkillnbError(f"{folder} holds a run; set it aside before writing this one back")
    ensure_dir(folder, guarded=layout.guarded)
    lock = FileLock(layout.lock)
    try:
        with lock.hold():
            lines = encode_header(0, state.run_id) + encode_events(events)
            atomic_write(layout.journal, lines, phase="writeback.journal")
    finally:
        lock.close()
