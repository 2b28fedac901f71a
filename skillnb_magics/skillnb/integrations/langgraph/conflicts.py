"""Two writers on one LangGraph thread: a clear conflict instead of a lost update (integration).

Two processes that run the same thread both start from its latest checkpoint; without a
check, each stores a child of it and the thread's head becomes whichever came last, silently
dropping the other's step. :class:`HeadWatch` remembers, per thread and namespace, the latest
checkpoint this saver has seen (read as the thread's latest, or stored itself). A new
checkpoint is refused with :class:`ThreadChanged` when the namespace's latest has since moved
to one this saver never saw and the new checkpoint does not build on it. Forks made by this
saver (``update_state`` or ``invoke`` from an older checkpoint) still pass: the latest is the
one it saw.
"""

from __future__ import annotations

from skillnb.errors import ConflictError
from skillnb.integrations.langgraph.index import Namespace

__all__ = ["HeadWatch", "ThreadChanged"]

_EMPTY = ""
"""Seen as empty: the thread had no checkpoint in that namespace."""


class ThreadChanged(ConflictError):
    """Another writer stored a checkpoint on this thread after this saver read it.

    Attributes:
        thread: the thread id.
        ns: the checkpoint namespace (``""`` for the root graph).
        seen: the latest checkpoint id this saver had seen (``""``: none).
        latest: the thread's latest checkpoint id now.

    """

    def __init__(self, thread: str, ns: str, seen: str, latest: str, expected: int, actual: int):
        super().__init__(expected, actual)
        self.thread, self.ns, self.seen, self.latest = thread, ns, seen, latest
        where = f"thread {thread!r}" + (f" (namespace {ns!r})" if ns else "")
        self.args = (
            f"{where} changed underneath: another writer stored checkpoint {latest!r} after "
            f"this saver read {seen or 'no checkpoint'!r}; nothing was stored. Read the "
            "thread again (graph.get_state) and run the step again.",
        )


class HeadWatch:
    """The latest checkpoint seen per (thread, namespace); see the module docstring."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}

    def saw(self, thread: str, ns_name: str, ns: Namespace | None) -> None:
        """Record the namespace's latest checkpoint as seen (after a read of the latest)."""
        self._seen[(thread, ns_name)] = (ns.latest if ns is not None else None) or _EMPTY

    def stored(self, thread: str, ns_name: str, checkpoint_id: str) -> None:
        """Record a checkpoint this saver stored as seen."""
        self._seen[(thread, ns_name)] = checkpoint_id

    def forget(self, thread: str) -> None:
        """Drop what was seen of ``thread`` (this saver pruned, deleted or copied onto it)."""
        for key in [k for k in self._seen if k[0] == thread]:
            del self._seen[key]

    def check(self, thread: str, ns_name: str, ns: Namespace | None, parent: str | None) -> None:
        """Raise :class:`ThreadChanged` if another writer moved the namespace's head."""
        seen = self._seen.get((thread, ns_name))
        latest = ns.latest if ns is not None else None
        if seen is None or ns is None or latest is None or latest in (seen, parent):
            return
        old = ns.checkpoints.get(seen)
        raise ThreadChanged(
            thread,
            ns_name,
            seen,
            latest,
            old.seq if old is not None else 0,
            ns.checkpoints[latest].seq,
        )
