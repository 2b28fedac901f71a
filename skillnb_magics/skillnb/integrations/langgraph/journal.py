"""The saver's side of the run's journal: its own Run, its index, its lock (integration layer).

:class:`GraphJournal` is what :class:`~.saver.SkillnbSaver` writes through. It holds a second
:class:`~skillnb.run.Run` over the user's run's store (see :func:`_sibling`), the in-memory
:class:`~.index.ThreadIndex` of the ``langgraph.*`` events, folded from the run's history
once and then forward, and the :class:`~.channels.ChannelCache`. :meth:`GraphJournal.locked`
takes the saver's thread lock and the store's writer lock, then catches up with what other
writers appended; :meth:`GraphJournal.commit` folds new events into the index, puts each
thread's new head in its event, and appends them in one all-or-nothing commit.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from skillnb.core.runstate.records import EventDraft
from skillnb.errors import StoreCorrupted
from skillnb.integrations.langgraph.channels import ChannelCache
from skillnb.integrations.langgraph.foreign import ForeignReader
from skillnb.integrations.langgraph.index import MalformedGraphData, ThreadIndex
from skillnb.integrations.langgraph.serde import SkillnbSerializer, decode_tree
from skillnb.integrations.langgraph.threads import head

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["GraphJournal", "Item"]

Item = tuple[str, dict[str, Any], str | None]
"""An event to commit: type, data, and the thread whose head it changes (or ``None``)."""


def _sibling(run: Run) -> Run:
    """A second Run over the same data, used only by the saver (under its own lock).

    LangGraph calls a checkpointer from worker threads while tools may use the user's run in
    others; a Run object is not meant to be shared by threads, so the saver commits through its
    own, and the user's run sees those commits as it sees another process's.
    """
    from skillnb.run import open_run
    from skillnb.store.memory import MemoryStore
    from skillnb.store.sidecar.store import SidecarStore

    store: Any = run.store
    if isinstance(store, SidecarStore):
        store = SidecarStore(store.path)
    elif isinstance(store, MemoryStore):
        store = MemoryStore(store.data)
    return open_run(store=store, memory=False)


class GraphJournal:
    """The saver's run, index, channel cache and lock (see the module docstring).

    Args:
        user_run: the run the saver was given.
        serde: the saver's serializer.

    """

    def __init__(self, user_run: Run, serde: SerializerProtocol) -> None:
        self.user_run = user_run
        self.run = _sibling(user_run)
        self.serde = serde
        self.mutex = threading.RLock()
        self.landed = threading.Condition(threading.Lock())
        """Notified after each commit of this saver (see :meth:`wait_for_more`)."""
        self.index = ThreadIndex()
        self.loaded = False
        self.cache = ChannelCache(self.encode)
        self.foreign = ForeignReader(serde)

    def close(self) -> None:
        """Release the saver's own store handle (the user's run stays open)."""
        if self.run.store is not self.user_run.store:
            self.run.store.close()

    # -- values --------------------------------------------------------------------------
    def encode(self, value: Any) -> Any:
        """JSON data for ``value`` (through the codec, or base64 of another serializer's bytes)."""
        if isinstance(self.serde, SkillnbSerializer):
            return self.serde.encode(value)
        type_, payload = self.serde.dumps_typed(value)
        if type_ == "pickle":
            raise TypeError("refusing to store a pickled value in a SKILL.nb run")
        try:
            self.foreign.check(type_)
        except ValueError as exc:
            raise TypeError(f"refusing to store a value it could not read back: {exc}") from None
        return {"$t": "serde", "type": type_, "b64": base64.b64encode(payload).decode("ascii")}

    def decode(self, data: Any) -> Any:
        """The value :meth:`encode` turned into ``data``."""
        if isinstance(self.serde, SkillnbSerializer):
            return self.serde.decode(data)
        return decode_tree(data, self.run.store, foreign=self._foreign)

    def _foreign(self, data: dict[str, Any]) -> Any:
        return self.foreign.loads(str(data["type"]), base64.b64decode(data["b64"]))

    # -- the journal ---------------------------------------------------------------------
    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the saver's lock and the store's writer lock, caught up with the journal."""
        with self.mutex, self.run.store.lock():
            try:
                self._sync()
            except MalformedGraphData as exc:
                self.reset()
                raise StoreCorrupted(self.run.store.location, str(exc)) from exc
            yield

    def _sync(self) -> None:
        state = self.run.journal.refresh()
        if not self.loaded:
            self.index = ThreadIndex()
            for event in self.run.store.history():
                self.index.fold(event.seq, event.type, event.data)
            self.loaded = True
            return
        if state.version <= self.index.seen:
            return
        events = self.run.store.read_since(self.index.seen)
        if events is None:
            events = [e for e in self.run.store.history() if e.seq > self.index.seen]
        for event in events:
            if event.type.startswith("langgraph."):
                for key in ("thread", "target"):
                    if key in event.data:
                        self.cache.forget(str(event.data[key]))
            self.index.fold(event.seq, event.type, event.data)

    def reset(self) -> None:
        """Forget the index and the cache: they are rebuilt from the journal on next use."""
        self.index = ThreadIndex()
        self.loaded = False
        self.cache = ChannelCache(self.encode)

    def commit(
        self, items: Sequence[Item], *, sync: bool, extra: Sequence[EventDraft] = ()
    ) -> None:
        """Fold ``items`` into the index, set their heads, append them (and ``extra``) at once."""
        at = datetime.now(UTC)
        drafts = []
        seq = self.index.seen
        try:
            for type_, data, head_of in items:
                seq += 1
                self.index.fold(seq, type_, data)
                if head_of is not None:
                    data["head"] = head(self.index.find(head_of, ""), self.decode)
                drafts.append(EventDraft(type=type_, at=at, data=data))
            drafts.extend(extra)
            events = self.run.journal.commit(lambda _state: list(drafts), sync=sync)
        except BaseException:
            self.reset()
            raise
        if not events or events[0].seq != self.index.seen - len(items) + 1:
            self.reset()  # someone appended in between (cannot happen under the lock)
            return
        self.index.seen = events[-1].seq
        with self.landed:
            self.landed.notify_all()

    def wait_for_more(self, seen: int, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a commit past ``seen`` (call it unlocked).

        Another process's commit wakes nobody: the wait is short, and the caller looks again.
        """
        with self.landed:
            self.landed.wait_for(lambda: self.index.seen > seen, timeout)
