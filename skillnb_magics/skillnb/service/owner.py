"""Which process owns a started step, and whether it is still alive (service layer).

A step recorded as *started* and never *committed* is uncertain only when the process that
started it is gone: while another kernel on this machine is still computing the same step, it
is in progress, not uncertain. An owner is ``host:pid:start-time`` (the start time, from
``/proc`` where there is one, guards against a recycled pid).
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path

from skillnb.core.records import Step

__all__ = ["current_owner", "is_uncertain", "owner_alive"]


def _start_time(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return ""
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


@cache
def current_owner() -> str:
    """This process as a step owner: ``host:pid:start-time``."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def owner_alive(owner: str | None) -> bool:
    """True when ``owner`` is a live process on this machine (unknown owners are not)."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user
    return not started or _start_time(pid) == started


def is_uncertain(step: Step) -> bool:
    """True when ``step`` started and never ended, and its process is gone."""
    return step.status == "started" and not owner_alive(step.owner)
