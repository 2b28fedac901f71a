"""The panel's long poll of a team run's version (server layer).

:func:`wait_version` returns as soon as the run passes the version the panel has, or when the
wait ends; the store's own change notifications (LISTEN/NOTIFY) wake it, so nothing polls.
Kept apart from :mod:`skillnb.server.runs` and :mod:`skillnb.server.teamruns` so that neither
imports the other.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_WAIT", "wait_version"]

MAX_WAIT = 25.0
"""The longest a request is held, in seconds (below common proxy time-outs)."""


def wait_version(store: Any, after: int, wait: float) -> dict[str, Any]:
    """``{"exists", "version", "live"}`` once the run passes ``after`` or ``wait`` ends.

    ``store`` is a store object of this request alone (closed here), so the registry's
    worker and its cached runs stay free while it waits.
    """
    try:
        version = store.wait_for_change(after, min(max(wait, 0.0), MAX_WAIT))
    finally:
        store.close()
    return {"exists": True, "version": version, "live": True}
