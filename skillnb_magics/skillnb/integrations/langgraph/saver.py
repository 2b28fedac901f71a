"""SkillnbSaver: LangGraph checkpoints and pending writes kept in a SKILL.nb run (integration).

Every ``put``, ``put_writes``, deletion, prune and copy is one event in the run's journal
(the sidecar, or whatever store the run has), appended under the store's lock like any other
commit, so checkpoints get the journal's durability, checksums, compaction and sharing
between processes. The payloads are described in :mod:`.index`; the thread's head goes into
the run's state (:class:`~skillnb.core.records.GraphThread`), where ``describe()``, the
panel and ``run.summary()`` show it. An ``interrupt()`` in the root graph also opens an
approval request, so approving it from the panel, a widget or the CLI records the answer
(:mod:`.approvals` resumes the thread with it).

Cost: a checkpoint stores only the channels in ``new_versions``, and a dict or list channel
only what changed since its last stored version (:mod:`.channels`). Writes of ordinary task
results are appended without ``fsync`` (they reach the disk with the next checkpoint, which
is synced; a process killed in between keeps them, a machine that loses power recomputes
that task); interrupts, errors and resume answers are synced at once.

The saver keeps an index of the journal's LangGraph events in memory, built once from the
run's history and then folded forward; it reads what other processes appended before each
operation. Values go through :class:`~.serde.SkillnbSerializer` (SKILL.nb's codec, never
pickle) or, when one is passed, any LangGraph serializer except pickle.
"""

from __future__ import annotations

import base64
import builtins
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from skillnb.core.records import EventDraft
from skillnb.integrations.langgraph.asyncmethods import AsyncMethods
from skillnb.integrations.langgraph.channels import ChannelCache
from skillnb.integrations.langgraph.index import Entry, Namespace, ThreadIndex
from skillnb.integrations.langgraph.serde import SkillnbSerializer, decode_tree
from skillnb.integrations.langgraph.threads import (
    INTERRUPT,
    RESUME,
    approval_requests,
    head,
    interrupt_rows,
)

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["SkillnbSaver"]

_SYNCED_CHANNELS = frozenset({INTERRUPT, RESUME, "__error__"})
_ABSENT = object()

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
    from skillnb.store.sidecar import SidecarStore

    store: Any = run.store
    if isinstance(store, SidecarStore):
        store = SidecarStore(store.path)
    elif isinstance(store, MemoryStore):
        store = MemoryStore(store.data)
    return open_run(store=store, memory=False)


def _ids(config: RunnableConfig) -> tuple[str, str, str | None]:
    conf = config["configurable"]
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), conf.get("checkpoint_id")


def _config(thread: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    }


class SkillnbSaver(AsyncMethods, BaseCheckpointSaver[int]):
    """A LangGraph checkpointer that keeps its data in a SKILL.nb run.

    Args:
        run: the run whose store holds the checkpoints.
        serde: a LangGraph serializer to use instead of SKILL.nb's codec (pickle is refused).

    Example:
        >>> saver = SkillnbSaver(skillnb.open_run("agent.ipynb"))  # doctest: +SKIP
        >>> graph = builder.compile(checkpointer=saver)  # doctest: +SKIP

    """

    def __init__(self, run: Run, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde or SkillnbSerializer(run.store))
        self.run = run
        self._run = _sibling(run)
        self._mutex = threading.RLock()
        self._index = ThreadIndex()
        self._loaded = False
        self._cache = ChannelCache(self._encode)

    def close(self) -> None:
        """Release the saver's own handle on the run's store (the user's run stays open)."""
        if self._run.store is not self.run.store:
            self._run.store.close()

    # -- values --------------------------------------------------------------------------
    def _encode(self, value: Any) -> Any:
        if isinstance(self.serde, SkillnbSerializer):
            return self.serde.encode(value)
        type_, payload = self.serde.dumps_typed(value)
        if type_ == "pickle":
            raise TypeError("refusing to store a pickled value in a SKILL.nb run")
        return {"$t": "serde", "type": type_, "b64": base64.b64encode(payload).decode("ascii")}

    def _decode(self, data: Any) -> Any:
        if isinstance(self.serde, SkillnbSerializer):
            return self.serde.decode(data)
        return decode_tree(data, self._run.store, foreign=self._foreign)

    def _foreign(self, data: dict[str, Any]) -> Any:
        return self.serde.loads_typed((str(data["type"]), base64.b64decode(data["b64"])))

    # -- the journal ---------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex, self._run.store.lock():
            self._sync()
            yield

    def _sync(self) -> None:
        state = self._run.journal.refresh()
        if not self._loaded:
            self._index = ThreadIndex()
            for event in self._run.store.history():
                self._index.fold(event.seq, event.type, event.data)
            self._loaded = True
            return
        if state.version <= self._index.seen:
            return
        events = self._run.store.read_since(self._index.seen)
        if events is None:
            events = [e for e in self._run.store.history() if e.seq > self._index.seen]
        for event in events:
            if event.type.startswith("langgraph."):
                for key in ("thread", "target"):
                    if key in event.data:
                        self._cache.forget(str(event.data[key]))
            self._index.fold(event.seq, event.type, event.data)

    def _reset(self) -> None:
        self._index = ThreadIndex()
        self._loaded = False
        self._cache = ChannelCache(self._encode)

    def _commit(
        self, items: Sequence[Item], *, sync: bool, extra: Sequence[EventDraft] = ()
    ) -> None:
        """Fold ``items`` into the index, set their heads, append them (and ``extra``) at once."""
        at = datetime.now(UTC)
        drafts = []
        seq = self._index.seen
        try:
            for type_, data, head_of in items:
                seq += 1
                self._index.fold(seq, type_, data)
                if head_of is not None:
                    data["head"] = head(self._index.find(head_of, ""), self._decode)
                drafts.append(EventDraft(type=type_, at=at, data=data))
            drafts.extend(extra)
            events = self._run.journal.commit(lambda _state: list(drafts), sync=sync)
        except BaseException:
            self._reset()
            raise
        if not events or events[0].seq != self._index.seen - len(items) + 1:
            self._reset()  # someone appended in between (cannot happen under the lock)
            return
        self._index.seen = events[-1].seq

    # -- reading -------------------------------------------------------------------------
    def _channel_value(
        self, thread: str, ns_name: str, ns: Namespace, channel: str, version: Any
    ) -> Any:
        cached = self._cache.get(thread, ns_name, channel)
        if cached is not None and cached.version == version and not cached.mutable:
            return cached.value()
        present, enc = ns.materialize(channel, version)
        if not present:
            return _ABSENT
        value = self._decode(enc)
        if cached is None and isinstance(self.serde, SkillnbSerializer):
            self._cache.seed(
                thread, ns_name, channel, version, value, enc, ns.chain_length(channel, version)
            )
        return value

    def _tuple(self, thread: str, ns_name: str, ns: Namespace, entry: Entry) -> CheckpointTuple:
        checkpoint = self._decode(entry.checkpoint)
        values = {}
        for channel, version in checkpoint.get("channel_versions", {}).items():
            value = self._channel_value(thread, ns_name, ns, channel, version)
            if value is not _ABSENT:
                values[channel] = value
        checkpoint["channel_values"] = values
        writes = ns.writes.get(entry.id, {})
        ordered = sorted(
            writes.items(), key=lambda kv: writes_sort_key(kv[1][3], kv[0][0], kv[0][1])
        )
        return CheckpointTuple(
            config=_config(thread, ns_name, entry.id),
            checkpoint=checkpoint,
            metadata=self._decode(entry.metadata),
            parent_config=_config(thread, ns_name, entry.parent) if entry.parent else None,
            pending_writes=[
                (task, channel, self._decode(v)) for task, channel, v, _ in (w for _, w in ordered)
            ],
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's latest)."""
        thread, ns_name, checkpoint_id = _ids(config)
        with self._locked():
            ns = self._index.find(thread, ns_name)
            if ns is None:
                return None
            entry = ns.checkpoints.get(checkpoint_id or ns.latest or "")
            return self._tuple(thread, ns_name, ns, entry) if entry is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, by thread (``config``), namespace, metadata, ``before``."""
        with self._locked():
            keys = self._matching(config, filter, before)
        for n, (thread, ns_name, checkpoint_id) in enumerate(keys):
            if limit is not None and n >= limit:
                return
            with self._locked():
                ns = self._index.find(thread, ns_name)
                entry = ns.checkpoints.get(checkpoint_id) if ns is not None else None
                found = self._tuple(thread, ns_name, ns, entry) if ns and entry else None
            if found is not None:
                yield found

    def _matching(
        self,
        config: RunnableConfig | None,
        filter_: dict[str, Any] | None,
        before: RunnableConfig | None,
    ) -> builtins.list[tuple[str, str, str]]:
        threads = (
            [str(config["configurable"]["thread_id"])] if config else list(self._index.threads)
        )
        want_ns = config["configurable"].get("checkpoint_ns") if config else None
        want_id = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        out = []
        for thread in threads:
            for ns_name, ns in self._index.threads.get(thread, {}).items():
                if want_ns is not None and ns_name != want_ns:
                    continue
                for cid in sorted(ns.checkpoints, reverse=True):
                    if (want_id and cid != want_id) or (before_id and cid >= before_id):
                        continue
                    if filter_ and not self._metadata_matches(ns.checkpoints[cid], filter_):
                        continue
                    out.append((thread, ns_name, cid))
        return out

    def _metadata_matches(self, entry: Entry, filter_: dict[str, Any]) -> bool:
        metadata = self._decode(entry.metadata)
        return all(metadata.get(k) == v for k, v in filter_.items())

    # -- writing -------------------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint``: its channels in ``new_versions`` only, as deltas when smaller."""
        thread, ns_name, parent = _ids(config)
        values = checkpoint.get("channel_values", {})
        rest = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        with self._locked():
            try:
                stored = {
                    channel: self._cache.store(thread, ns_name, channel, version, values[channel])
                    if channel in values
                    else {"e": 1}
                    for channel, version in new_versions.items()
                }
                data = {
                    "thread": thread,
                    "ns": ns_name,
                    "id": checkpoint["id"],
                    "parent": parent,
                    "checkpoint": self._encode(rest),
                    "metadata": self._encode(get_checkpoint_metadata(config, metadata)),
                    "values": stored,
                    "versions": dict(new_versions),
                }
            except BaseException:
                self._cache.forget(thread)
                raise
            self._commit(
                [("langgraph.checkpoint", data, thread if ns_name == "" else None)], sync=True
            )
        return _config(thread, ns_name, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for the checkpoint ``config`` names (idempotent per index)."""
        thread, ns_name, checkpoint_id = _ids(config)
        rows = [[WRITES_IDX_MAP.get(c, i), c, self._encode(v)] for i, (c, v) in enumerate(writes)]
        interrupts = [r for c, v in writes if c == INTERRUPT for r in interrupt_rows(v, task_path)]
        with self._locked():
            ns = self._index.find(thread, ns_name)
            existing = ns.writes.get(str(checkpoint_id), {}) if ns is not None else {}
            rows = [r for r in rows if r[0] < 0 or (task_id, r[0]) not in existing]
            if not rows:
                return
            data: dict[str, Any] = {
                "thread": thread,
                "ns": ns_name,
                "checkpoint": checkpoint_id,
                "task": task_id,
                "path": task_path,
                "writes": rows,
            }
            if interrupts:
                data["interrupts"] = interrupts
            channels = {r[1] for r in rows}
            changes_head = ns_name == "" and bool(channels & {INTERRUPT, RESUME})
            extra = (
                approval_requests(self._run.journal.state, thread, interrupts)
                if ns_name == ""
                else []
            )
            self._commit(
                [("langgraph.writes", data, thread if changes_head else None)],
                sync=bool(channels & _SYNCED_CHANNELS),
                extra=extra,
            )

    # -- deleting and copying -----------------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        """Hide every checkpoint and write of ``thread_id`` (the journal keeps its history)."""
        with self._locked():
            if str(thread_id) in self._index.threads:
                self._cache.forget(str(thread_id))
                self._commit([("langgraph.deleted", {"thread": str(thread_id)}, None)], sync=True)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Hide the checkpoints (and their writes) whose ``metadata["run_id"]`` is listed."""
        wanted = {str(r) for r in run_ids}
        with self._locked():
            items: list[Item] = []
            for thread, spaces in self._index.threads.items():
                for ns_name, ns in spaces.items():
                    ids = [
                        cid
                        for cid, entry in ns.checkpoints.items()
                        if str(self._decode(entry.metadata).get("run_id")) in wanted
                    ]
                    if ids:
                        data = {"thread": thread, "ns": ns_name, "ids": sorted(ids)}
                        items.append(("langgraph.pruned", data, thread if ns_name == "" else None))
            if items:
                self._commit(items, sync=True)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's latest checkpoint; ``delete``: drop threads.

        Channel values that the kept checkpoints still read are never removed.
        """
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r} (keep_latest or delete)")
        with self._locked():
            items: list[Item] = []
            for thread in (str(t) for t in thread_ids):
                spaces = self._index.threads.get(thread)
                if spaces is None:
                    continue
                if strategy == "delete":
                    self._cache.forget(thread)
                    items.append(("langgraph.deleted", {"thread": thread}, None))
                    continue
                for ns_name, ns in spaces.items():
                    ids = sorted(c for c in ns.checkpoints if c != ns.latest)
                    if ids:
                        data = {"thread": thread, "ns": ns_name, "ids": ids}
                        items.append(("langgraph.pruned", data, thread if ns_name == "" else None))
            if items:
                self._commit(items, sync=True)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Give ``target_thread_id`` every checkpoint and write of ``source_thread_id``."""
        source, target = str(source_thread_id), str(target_thread_id)
        with self._locked():
            if source not in self._index.threads:
                return
            self._cache.forget(target)
            data = {"source": source, "target": target}
            self._commit([("langgraph.copied", data, target)], sync=True)
