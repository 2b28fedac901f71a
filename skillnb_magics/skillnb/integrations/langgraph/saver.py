"""SkillnbSaver: LangGraph checkpoints and pending writes kept in a SKILL.nb run (integration).

Every ``put``, ``put_writes``, deletion, prune and copy is one event in the run's journal
(the sidecar, or whatever store the run has), appended under the store's lock like any other
commit, so checkpoints get the journal's durability, checksums, compaction and sharing
between processes. The payloads are described in :mod:`.index`; the thread's head goes into
the run's state (:class:`~skillnb.core.runstate.records.GraphThread`), where ``describe()``, the
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

import builtins
import secrets
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

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

from skillnb.errors import StoreCorrupted
from skillnb.integrations.langgraph.asyncmethods import AsyncMethods
from skillnb.integrations.langgraph.conflicts import HeadWatch
from skillnb.integrations.langgraph.index import Entry, MalformedGraphData, Namespace
from skillnb.integrations.langgraph.journal import GraphJournal, Item
from skillnb.integrations.langgraph.serde import SkillnbSerializer
from skillnb.integrations.langgraph.settle import after_checkpoint, on_writes, unnamed_send
from skillnb.integrations.langgraph.threads import (
    INTERRUPT,
    RESUME,
)
from skillnb.store.codec.values import CodecError

if TYPE_CHECKING:
    from skillnb.run import Run

__all__ = ["SkillnbSaver"]

_SYNCED_CHANNELS = frozenset({INTERRUPT, RESUME, "__error__"})
_SEND_WAIT = 2.0
"""How long an interrupt in a ``Send``'s task waits for the writes that scheduled it.

LangGraph stores writes from a pool of threads, so they may arrive out of order; the node
that names the interrupt's gate is known once the scheduling writes are stored (at once, in
a pool of one thread, which stores in order). Past this, the gate is named without it.
"""
_SEND_POLL = 0.05
_ABSENT = object()
_DAMAGE = (ValueError, KeyError, TypeError, AttributeError, IndexError, CodecError)
"""What reading a damaged or hostile stored checkpoint raises (as ``StoreCorrupted``)."""


def _ids(config: RunnableConfig) -> tuple[str, str, str | None]:
    conf = config["configurable"]
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), conf.get("checkpoint_id")


def _config(thread: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    }


class SkillnbSaver(AsyncMethods, BaseCheckpointSaver[str]):
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
        self._journal = GraphJournal(run, self.serde)
        self._heads = HeadWatch()

    def close(self) -> None:
        """Release the saver's own handle on the run's store (the user's run stays open)."""
        self._journal.close()

    def __enter__(self) -> SkillnbSaver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def get_next_version(self, current: str | int | float | None, channel: None) -> str:
        """A version after ``current``, unique to this write: ``"<step, 32 digits>.<random>"``.

        Values are stored by (channel, version), so a branch forked from an older checkpoint
        must never reuse a version another branch holds: the random part (from the OS, not
        from anything user code may seed or mock) keeps forks apart, the zero-padded step
        keeps versions ordered. Integer and string versions written earlier are continued.
        """
        if current is None:
            step = 0
        elif isinstance(current, int | float):
            step = int(current)
        else:
            step = int(str(current).split(".", 1)[0])
        return f"{step + 1:032}.{secrets.token_hex(8)}"

    # -- reading -------------------------------------------------------------------------
    def _channel_value(
        self, thread: str, ns_name: str, ns: Namespace, channel: str, version: Any
    ) -> Any:
        cached = self._journal.cache.get(thread, ns_name, channel)
        if cached is not None and cached.version == version and not cached.mutable:
            return cached.value()
        present, enc = ns.materialize(channel, version)
        if not present:
            return _ABSENT
        value = self._journal.decode(enc)
        if cached is None and isinstance(self.serde, SkillnbSerializer):
            self._journal.cache.seed(
                thread, ns_name, channel, version, value, enc, ns.chain_length(channel, version)
            )
        return value

    def _tuple(self, thread: str, ns_name: str, ns: Namespace, entry: Entry) -> CheckpointTuple:
        try:
            return self._read(thread, ns_name, ns, entry)
        except _DAMAGE as exc:
            where = f"thread {thread!r}" + (f", namespace {ns_name!r}" if ns_name else "")
            raise StoreCorrupted(
                self._journal.run.store.location,
                f"LangGraph checkpoint {entry.id!r} of {where} cannot be read: {exc}",
            ) from exc

    def _read(self, thread: str, ns_name: str, ns: Namespace, entry: Entry) -> CheckpointTuple:
        checkpoint = self._journal.decode(entry.checkpoint)
        if not isinstance(checkpoint, dict) or not isinstance(
            checkpoint.get("channel_versions", {}), dict
        ):
            raise MalformedGraphData("the stored checkpoint is not a mapping of the saver's form")
        metadata = self._journal.decode(entry.metadata)
        if not isinstance(metadata, dict):
            raise MalformedGraphData("its metadata is not a mapping")
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
            checkpoint=cast(Checkpoint, checkpoint),
            metadata=cast(CheckpointMetadata, metadata),
            parent_config=_config(thread, ns_name, entry.parent) if entry.parent else None,
            pending_writes=[
                (task, channel, self._journal.decode(v))
                for task, channel, v, _ in (w for _, w in ordered)
            ],
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's latest)."""
        thread, ns_name, checkpoint_id = _ids(config)
        with self._journal.locked():
            ns = self._journal.index.find(thread, ns_name)
            if not checkpoint_id:
                self._heads.saw(thread, ns_name, ns)
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
        with self._journal.locked():
            keys = self._matching(config, filter, before)
        for n, (thread, ns_name, checkpoint_id) in enumerate(keys):
            if limit is not None and n >= limit:
                return
            with self._journal.locked():
                ns = self._journal.index.find(thread, ns_name)
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
            [str(config["configurable"]["thread_id"])]
            if config
            else list(self._journal.index.threads)
        )
        want_ns = config["configurable"].get("checkpoint_ns") if config else None
        want_id = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        out = []
        for thread in threads:
            for ns_name, ns in self._journal.index.threads.get(thread, {}).items():
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
        metadata = self._metadata(entry)
        return all(metadata.get(k) == v for k, v in filter_.items())

    def _metadata(self, entry: Entry) -> dict[str, Any]:
        try:
            metadata = self._journal.decode(entry.metadata)
            if not isinstance(metadata, dict):
                raise MalformedGraphData("its metadata is not a mapping")
        except _DAMAGE as exc:
            raise StoreCorrupted(
                self._journal.run.store.location,
                f"LangGraph checkpoint {entry.id!r} cannot be read: {exc}",
            ) from exc
        return metadata

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
        with self._journal.locked():
            self._heads.check(thread, ns_name, self._journal.index.find(thread, ns_name), parent)
            try:
                stored = {
                    channel: self._journal.cache.store(
                        thread, ns_name, channel, version, values[channel]
                    )
                    if channel in values
                    else {"e": 1}
                    for channel, version in new_versions.items()
                }
                data = {
                    "thread": thread,
                    "ns": ns_name,
                    "id": checkpoint["id"],
                    "parent": parent,
                    "checkpoint": self._journal.encode(rest),
                    "metadata": self._journal.encode(get_checkpoint_metadata(config, metadata)),
                    "values": stored,
                    "versions": dict(new_versions),
                }
            except BaseException:
                self._journal.cache.forget(thread)
                raise
            extra = (
                after_checkpoint(
                    self._journal.run.journal.state,
                    self._journal.run.journal.user,
                    self._journal.index.find(thread, ns_name),
                    parent,
                    metadata.get("source"),
                )
                if ns_name == ""
                else []
            )
            self._journal.commit(
                [("langgraph.checkpoint", data, thread if ns_name == "" else None)],
                sync=True,
                extra=extra,
            )
            found = self._journal.index.find(thread, ns_name)
            latest = found.latest if found is not None else None
            self._heads.stored(thread, ns_name, latest or checkpoint["id"])
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
        rows = [
            [WRITES_IDX_MAP.get(c, i), c, self._journal.encode(v)]
            for i, (c, v) in enumerate(writes)
        ]
        where = (thread, ns_name, checkpoint_id)
        deadline = time.monotonic() + _SEND_WAIT
        while True:
            with self._journal.locked():
                ns = self._journal.index.find(thread, ns_name)
                left = deadline - time.monotonic()
                task = (task_id, task_path)
                if left <= 0 or not unnamed_send(
                    ns, checkpoint_id, task, writes, self._journal.decode
                ):
                    self._store_writes(where, ns, task, writes, rows)
                    return
                seen = self._journal.index.seen
            self._journal.wait_for_more(seen, min(left, _SEND_POLL))

    def _store_writes(
        self,
        where: tuple[str, str, str | None],
        ns: Namespace | None,
        task: tuple[str, str],
        writes: Sequence[tuple[str, Any]],
        rows: builtins.list[builtins.list[Any]],
    ) -> None:
        thread, ns_name, checkpoint_id = where
        task_id, task_path = task
        interrupts, extra = on_writes(
            self._journal.run.journal.state,
            self._journal.run.journal.user,
            (thread, ns_name, ns, checkpoint_id),
            task,
            writes,
            self._journal.decode,
        )
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
        self._journal.commit(
            [("langgraph.writes", data, thread if changes_head else None)],
            sync=bool(channels & _SYNCED_CHANNELS),
            extra=extra,
        )

    # -- deleting and copying -----------------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        """Hide every checkpoint and write of ``thread_id`` (the journal keeps its history)."""
        with self._journal.locked():
            if str(thread_id) in self._journal.index.threads:
                self._journal.cache.forget(str(thread_id))
                self._heads.forget(str(thread_id))
                self._journal.commit(
                    [("langgraph.deleted", {"thread": str(thread_id)}, None)], sync=True
                )

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Hide the checkpoints (and their writes) whose ``metadata["run_id"]`` is listed."""
        wanted = {str(r) for r in run_ids}
        with self._journal.locked():
            items: list[Item] = []
            for thread, spaces in self._journal.index.threads.items():
                for ns_name, ns in spaces.items():
                    ids = [
                        cid
                        for cid, entry in ns.checkpoints.items()
                        if str(self._metadata(entry).get("run_id")) in wanted
                    ]
                    if ids:
                        data = {"thread": thread, "ns": ns_name, "ids": sorted(ids)}
                        self._heads.forget(thread)
                        items.append(("langgraph.pruned", data, thread if ns_name == "" else None))
            if items:
                self._journal.commit(items, sync=True)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's latest checkpoint; ``delete``: drop threads.

        Channel values that the kept checkpoints still read are never removed.
        """
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r} (keep_latest or delete)")
        with self._journal.locked():
            items: list[Item] = []
            for thread in (str(t) for t in thread_ids):
                spaces = self._journal.index.threads.get(thread)
                if spaces is None:
                    continue
                if strategy == "delete":
                    self._journal.cache.forget(thread)
                    self._heads.forget(thread)
                    items.append(("langgraph.deleted", {"thread": thread}, None))
                    continue
                for ns_name, ns in spaces.items():
                    ids = sorted(c for c in ns.checkpoints if c != ns.latest)
                    if ids:
                        data = {"thread": thread, "ns": ns_name, "ids": ids}
                        items.append(("langgraph.pruned", data, thread if ns_name == "" else None))
            if items:
                self._journal.commit(items, sync=True)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Give ``target_thread_id`` every checkpoint and write of ``source_thread_id``."""
        source, target = str(source_thread_id), str(target_thread_id)
        with self._journal.locked():
            if source not in self._journal.index.threads:
                return
            self._journal.cache.forget(target)
            self._heads.forget(target)
            data = {"source": source, "target": target}
            self._journal.commit([("langgraph.copied", data, target)], sync=True)
