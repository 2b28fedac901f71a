"""Which process owns a step or an item, and whether it is still alive (service layer).

An owner is a process: its host, pid, start time and, when known, its kernel or session id
(:class:`~skillnb.core.runstate.records.Owner`). It is alive when:

* **on this host**: the pid exists, its start time matches (a recycled pid does not) and it
  is not a zombie (a killed kernel its parent has not reaped yet is dead);
* **on another host**: we cannot see its processes, so only the claim's lease counts; a
  heartbeat renews it while the body runs.

The current process's identity is computed once and recomputed in a forked child
(:func:`os.register_at_fork`), so a child never speaks with its parent's pid.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import psutil

from skillnb.core.runstate.records import Claim, Owner, Step

__all__ = [
    "claim_held",
    "current_owner",
    "is_uncertain",
    "owner_alive",
    "process_owner",
]

_cached: Owner | None = None


def _forget_in_child() -> None:
    global _cached  # the one process-wide identity, reset after fork
    _cached = None


os.register_at_fork(after_in_child=_forget_in_child)


def _session_id(env: Mapping[str, str], argv: list[str]) -> str | None:
    """The kernel id (from ``-f .../kernel-<id>.json``), else the session's notebook name."""
    for i, arg in enumerate(argv):
        path = argv[i + 1] if arg == "-f" and i + 1 < len(argv) else None
        if arg.startswith("--f="):
            path = arg[4:]
        if path:
            name = Path(path).stem
            return "kernel " + (name[len("kernel-") :] if name.startswith("kernel-") else name)
    session = env.get("SKILLNB_SESSION") or env.get("JPY_SESSION_NAME")
    return session or None


def _start_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def process_owner() -> Owner:
    """This process as an owner (computed once per process, again after ``fork``)."""
    global _cached  # see _forget_in_child
    pid = os.getpid()
    if _cached is None or _cached.pid != pid:
        _cached = Owner(
            host=socket.gethostname(),
            pid=pid,
            started=_start_time(pid) or 0.0,
            session=_session_id(os.environ, sys.argv),
        )
    return _cached


def current_owner() -> str:
    """This process's owner id: ``host:pid:start-time`` (formatted once per owner)."""
    global _cached_id  # the id of _cached, see there
    owner = process_owner()
    if _cached_id is None or _cached_id[0] is not owner:
        _cached_id = (owner, owner.id)
    return _cached_id[1]


_cached_id: tuple[Owner, str] | None = None


def _pid_alive(pid: int, started: float | None) -> bool:
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        created = process.create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # it exists, owned by another user
    return started is None or abs(created - started) < 0.05  # 1/100 s ticks


def owner_alive(owner: str | None) -> bool:
    """True when the owner id ``owner`` is a live process on this machine (unknown: not).

    Ids from older runs end in the start time as ``/proc`` clock ticks; those are compared
    with ``/proc`` directly.
    """
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if not started or "." in started:
        return _pid_alive(pid, float(started) if started else None)
    return _pid_alive(pid, None) and _proc_ticks(pid) == started


def _proc_ticks(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()  # the command name may hold spaces and ')'
    return fields[19] if len(fields) > 19 else ""  # field 22 of proc(5)


def claim_held(claim: Claim, now: datetime) -> bool:
    """True while ``claim`` binds others: its owner lives (this host) or its lease runs."""
    owner = claim.owner
    if owner.host == socket.gethostname():
        return _pid_alive(owner.pid, owner.started)
    return claim.until > now


def is_uncertain(step: Step, claim: Claim | None = None, now: datetime | None = None) -> bool:
    """True when ``step`` started and never ended, and its process is gone.

    With its ``claim`` (and the time ``now``), an owner on another host counts as gone once
    the lease has expired.
    """
    if step.status != "started":
        return False
    if claim is not None and now is not None:
        return not claim_held(claim, now)
    return not owner_alive(step.owner)
