"""The saver's in-memory index of LangGraph threads, folded from journal events (integration).

The journal is the source of truth; this index is what :class:`ThreadIndex.fold` makes of the
``langgraph.*`` events, in order, so that two processes reading one journal agree. Payloads:

=======================  ======================================================================
type                     data
=======================  ======================================================================
``langgraph.checkpoint`` ``thread``, ``ns``, ``id``, ``parent``, ``checkpoint`` (the checkpoint
                         without ``channel_values``, encoded), ``metadata`` (encoded),
                         ``values`` (channel -> stored value, for the channels in ``new_versions``
                         only), ``versions`` (channel -> the version those values have),
                         ``head`` (the thread's summary for the run, see :mod:`.threads`)
``langgraph.writes``     ``thread``, ``ns``, ``checkpoint``, ``task``, ``path``,
                         ``writes`` (``[idx, channel, encoded value]`` rows), optional ``head``
``langgraph.pruned``     ``thread``, ``ns``, ``ids`` (checkpoints hidden with their writes),
                         ``head``
``langgraph.deleted``    ``thread`` (everything of the thread hidden)
``langgraph.copied``     ``source``, ``target``, ``head`` (the target gets the source's data)
=======================  ======================================================================

A stored channel value is one of ``{"f": value}`` (the whole value), ``{"d": base, "set":
{key: value}, "del": [key]}`` (a dict: the value at version ``base`` of the same channel, with
keys set and removed), ``{"a": base, "add": [value]}`` (a list: the value at ``base`` with
items appended) or ``{"e": 1}`` (the channel is empty). Values inside are
:func:`~skillnb.integrations.langgraph.serde.encode_tree` data. Deltas make a step's cost
and the journal grow with what changed, not with the size of the channel; a whole value is
written again every :data:`FULL_EVERY` deltas so that rebuilding an old version stays short.
Nothing is removed from the journal: pruning and deleting hide checkpoints from the saver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FULL_EVERY", "MAX_CHAIN", "Entry", "MalformedGraphData", "Namespace", "ThreadIndex"]

_RESUME = "__resume__"

FULL_EVERY = 256
"""A channel's whole value is stored again after this many deltas."""

MAX_CHAIN = 4 * FULL_EVERY
"""Longest delta chain read back: longer ones are damaged (or hostile) data."""


class MalformedGraphData(ValueError):
    """Stored LangGraph data is not in a form the saver writes (the saver names where)."""


@dataclass
class Entry:
    """One stored checkpoint (its values live in :attr:`Namespace.blobs`)."""

    id: str
    parent: str | None
    checkpoint: Any
    """The encoded checkpoint without ``channel_values``."""
    metadata: Any
    """The encoded metadata."""
    seq: int
    """The journal event that stored it."""


@dataclass
class Namespace:
    """One ``checkpoint_ns`` of a thread: checkpoints, their pending writes, channel values."""

    checkpoints: dict[str, Entry] = field(default_factory=dict)
    writes: dict[str, dict[tuple[str, int], tuple[str, str, Any, str]]] = field(
        default_factory=dict
    )
    """checkpoint id -> (task id, idx) -> (task id, channel, encoded value, task path)."""
    blobs: dict[tuple[str, Any], Any] = field(default_factory=dict)
    """(channel, version) -> the stored form (see the module docstring)."""
    interrupts: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    """(checkpoint id, task id) -> the interrupts that task raised, as summary rows."""
    latest: str | None = None

    def add(self, entry: Entry) -> None:
        """Add (or replace) a checkpoint."""
        self.checkpoints[entry.id] = entry
        if self.latest is None or entry.id > self.latest:
            self.latest = entry.id

    def hide(self, ids: Iterable[str]) -> None:
        """Forget checkpoints and their writes (channel values stay: others may build on them)."""
        ids = set(ids)
        for cid in ids:
            self.checkpoints.pop(cid, None)
            self.writes.pop(cid, None)
        for key in [k for k in self.interrupts if k[0] in ids]:
            del self.interrupts[key]
        self.latest = max(self.checkpoints, default=None)

    def copy(self) -> Namespace:
        """A copy sharing the (never mutated) stored data."""
        return Namespace(
            checkpoints=dict(self.checkpoints),
            writes={k: dict(v) for k, v in self.writes.items()},
            blobs=dict(self.blobs),
            interrupts=dict(self.interrupts),
            latest=self.latest,
        )

    def chain_length(self, channel: str, version: Any) -> int:
        """How many deltas separate the stored ``version`` of ``channel`` from a whole value."""
        stored = self.blobs.get((channel, version))
        return len(self._chain(channel, version, stored)) - 1 if stored is not None else 0

    def _chain(self, channel: str, version: Any, stored: Any) -> list[Any]:
        """The stored forms from ``version`` back to a whole value (checked, bounded).

        Raises:
            MalformedGraphData: a stored form is not one of the four, a delta's base is
                missing, the chain loops back on itself or is longer than :data:`MAX_CHAIN`.

        """
        chain = [stored]
        seen = {version}
        while True:
            if not isinstance(stored, dict) or not stored.keys() & {"f", "d", "a", "e"}:
                raise MalformedGraphData(
                    f"channel {channel!r} at version {version!r}: unknown stored form"
                )
            if "d" not in stored and "a" not in stored:
                return chain
            base = _version(stored["d"] if "d" in stored else stored["a"])
            if base in seen:
                raise MalformedGraphData(
                    f"channel {channel!r} at version {version!r}: its deltas loop back to "
                    f"version {base!r}"
                )
            if len(chain) > MAX_CHAIN:
                raise MalformedGraphData(
                    f"channel {channel!r} at version {version!r}: more than {MAX_CHAIN} deltas"
                )
            seen.add(base)
            stored = self.blobs.get((channel, base))
            if stored is None:
                raise MalformedGraphData(
                    f"channel {channel!r} at version {version!r}: the base version {base!r} "
                    "of a delta is missing"
                )
            chain.append(stored)

    def materialize(self, channel: str, version: Any) -> tuple[bool, Any]:
        """``(present, encoded value)`` of ``channel`` at ``version`` (deltas applied).

        Raises:
            MalformedGraphData: the stored forms are damaged (see :meth:`_chain`).

        """
        stored = self.blobs.get((channel, version))
        if stored is None or (isinstance(stored, dict) and "e" in stored):
            return False, None
        *deltas, whole = self._chain(channel, version, stored)
        if "f" not in whole:
            raise MalformedGraphData(
                f"channel {channel!r} at version {version!r}: a delta applies to an empty value"
            )
        value = whole["f"]
        if deltas:
            value = dict(value) if isinstance(value, dict) else list(value)
        for delta in reversed(deltas):
            if "d" in delta and isinstance(value, dict):
                value.update(delta["set"])
                for key in delta["del"]:
                    value.pop(key, None)
            elif "a" in delta and isinstance(value, list):
                value.extend(delta["add"])
            else:
                raise MalformedGraphData(
                    f"channel {channel!r} at version {version!r}: a delta does not fit its base"
                )
        return True, value


def _version(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class ThreadIndex:
    """Every thread the journal holds: thread id -> checkpoint ns -> :class:`Namespace`."""

    def __init__(self) -> None:
        self.threads: dict[str, dict[str, Namespace]] = {}
        self.seen = 0
        """The last journal version folded."""

    def ns(self, thread: str, ns: str) -> Namespace:
        """The namespace, created empty when new."""
        return self.threads.setdefault(thread, {}).setdefault(ns, Namespace())

    def find(self, thread: str, ns: str) -> Namespace | None:
        """The namespace, or ``None``."""
        return self.threads.get(thread, {}).get(ns)

    def fold(self, seq: int, type_: str, data: Mapping[str, Any]) -> None:
        """Apply one event (any type; those not ``langgraph.*`` only advance :attr:`seen`).

        Raises:
            MalformedGraphData: a ``langgraph.*`` event's data is not in the saver's form.

        """
        self.seen = max(self.seen, seq)
        if not type_.startswith("langgraph."):
            return
        try:
            self._apply(seq, type_, data)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            name = data.get("id", data.get("checkpoint")) if isinstance(data, Mapping) else None
            what = f"checkpoint {name!r}" if name is not None else "data"
            raise MalformedGraphData(
                f"journal event {seq} ({type_}): malformed LangGraph {what}: {exc!r}"
            ) from exc

    def _apply(self, seq: int, type_: str, data: Mapping[str, Any]) -> None:
        if type_ == "langgraph.checkpoint":
            self._checkpoint(seq, data)
        elif type_ == "langgraph.writes":
            self._writes(data)
        elif type_ == "langgraph.pruned":
            found = self.find(str(data["thread"]), str(data["ns"]))
            if found is not None:
                found.hide(str(i) for i in data["ids"])
        elif type_ == "langgraph.deleted":
            self.threads.pop(str(data["thread"]), None)
        elif type_ == "langgraph.copied":
            source = self.threads.get(str(data["source"]), {})
            self.threads[str(data["target"])] = {k: v.copy() for k, v in source.items()}

    def _checkpoint(self, seq: int, data: Mapping[str, Any]) -> None:
        ns = self.ns(str(data["thread"]), str(data["ns"]))
        for channel, stored in data["values"].items():
            # First write wins: a stored version is never replaced, so what an earlier
            # checkpoint reads stays as it was whatever a later (or colliding) event holds.
            ns.blobs.setdefault((channel, _version(data["versions"][channel])), stored)
        parent = data.get("parent")
        entry = Entry(
            id=str(data["id"]),
            parent=str(parent) if parent is not None else None,
            checkpoint=data["checkpoint"],
            metadata=data["metadata"],
            seq=seq,
        )
        ns.add(entry)

    def _writes(self, data: Mapping[str, Any]) -> None:
        ns = self.ns(str(data["thread"]), str(data["ns"]))
        task, path = str(data["task"]), str(data.get("path", ""))
        stored = ns.writes.setdefault(str(data["checkpoint"]), {})
        for idx, channel, value in data["writes"]:
            key = (task, int(idx))
            if key[1] >= 0 and key in stored:
                continue
            stored[key] = (task, str(channel), value, path)
        # A task's latest interrupts stay open until it writes a resume value without
        # interrupting again (a node may call interrupt() once more after a resume).
        key_ = (str(data["checkpoint"]), task)
        if data.get("interrupts"):
            ns.interrupts[key_] = list(data["interrupts"])
        elif any(row[1] == _RESUME for row in data["writes"]):
            ns.interrupts.pop(key_, None)
