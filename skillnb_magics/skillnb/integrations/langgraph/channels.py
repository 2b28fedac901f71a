"""Storing a channel's new value as what changed since its last stored version (integration).

LangGraph tells a checkpointer which channels changed (``new_versions``) and hands it their
whole new values. A reducer channel such as ``Annotated[dict, operator.or_]`` grows every
step, so storing the whole value each time makes a step cost, and the journal grow, with the
thread's length. :class:`ChannelCache` remembers, per thread, namespace and channel, the last
stored version: the objects LangGraph gave (compared by identity) and their encoded forms.
The next value of a dict is stored as the keys set and removed, of a list as the items
appended, when that is smaller than the whole; identity proves an entry unchanged only for
immutable objects (strings, numbers, tuples of them), other entries are encoded again and
compared. A whole value is written when no earlier version is known in this process, after
:data:`~.index.FULL_EVERY` deltas, or when the change is half the value or more.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from skillnb.integrations.langgraph.index import FULL_EVERY
from skillnb.integrations.langgraph.serde import is_immutable

__all__ = ["Cached", "ChannelCache"]

Encode = Callable[[Any], Any]


@dataclass
class Cached:
    """The last stored version of one channel, as this process stored or read it."""

    version: Any
    kind: str
    """``dict``, ``list`` or ``other``."""
    keys: list[Any] = field(default_factory=list)
    """A dict's keys in order (empty for other kinds)."""
    vals: list[Any] = field(default_factory=list)
    """A dict's values or a list's items, the very objects LangGraph gave."""
    enc: Any = None
    """The encoded entries: key -> encoded for a dict, a list of encoded items, or the value."""
    mutable: set[Any] = field(default_factory=set)
    """Keys (or indexes) whose objects could change in place: never trusted by identity."""
    chain: int = 0
    """Deltas stored since the last whole value."""
    obj: dict[Any, Any] = field(default_factory=dict)
    """A dict's entries as a private dict (copied cheaply for readers)."""

    def value(self) -> Any:
        """A fresh container holding the cached objects (only when none is mutable)."""
        if self.kind == "dict":
            return dict(self.obj)
        return list(self.vals)


def _mutable_keys(keys: list[Any], vals: list[Any]) -> set[Any]:
    return {k for k, v in zip(keys, vals, strict=True) if not is_immutable(v)}


def _dict_diff(cached: Cached, value: dict[Any, Any]) -> tuple[bool, dict[Any, Any], list[Any]]:
    """``(appended, changed entries, removed keys)`` of ``value`` against the cached dict."""
    n = len(cached.keys)
    # Keys are strings, so equal means the same key; values must be the very same objects.
    appended = (
        len(value) >= n
        and list(islice(value, n)) == cached.keys
        and all(map(operator.is_, islice(value.values(), n), cached.vals))
    )
    if appended:  # the common case (a merge that adds keys): O(n) checks, in C
        return True, dict(islice(value.items(), n, None)), []
    missing = object()
    changed = {k: v for k, v in value.items() if cached.obj.get(k, missing) is not v}
    return False, changed, [k for k in cached.obj if k not in value]


class ChannelCache:
    """Computes stored forms for new channel values; see the module docstring."""

    def __init__(self, encode: Encode) -> None:
        self._encode = encode
        self._cache: dict[tuple[str, str, str], Cached] = {}

    def get(self, thread: str, ns: str, channel: str) -> Cached | None:
        """The cached last version, if any."""
        return self._cache.get((thread, ns, channel))

    def forget(self, thread: str) -> None:
        """Drop everything cached for ``thread`` (deleted, or changed by another writer)."""
        for key in [k for k in self._cache if k[0] == thread]:
            del self._cache[key]

    def seed(
        self, thread: str, ns: str, channel: str, version: Any, value: Any, enc: Any, chain: int
    ) -> None:
        """Remember ``value`` (just decoded from ``enc``) as the last version of ``channel``."""
        if type(value) is dict and type(enc) is dict and "$t" not in enc:
            keys, vals = list(value), list(value.values())
            cached = Cached(version, "dict", keys, vals, dict(enc), _mutable_keys(keys, vals))
            cached.obj = dict(value)
        elif type(value) is list and type(enc) is list:
            vals = list(value)
            mutable = _mutable_keys(list(range(len(vals))), vals)
            cached = Cached(version, "list", [], vals, list(enc), mutable)
        else:
            return
        cached.chain = chain
        self._cache[(thread, ns, channel)] = cached

    def store(self, thread: str, ns: str, channel: str, version: Any, value: Any) -> Any:
        """Return the stored form of ``value`` as the new ``version`` of ``channel``."""
        key = (thread, ns, channel)
        cached = self._cache.get(key)
        if cached is not None and cached.chain < FULL_EVERY:
            stored = None
            if type(value) is dict and cached.kind == "dict":
                stored = self._dict_delta(cached, value)
            elif type(value) is list and cached.kind == "list":
                stored = self._list_delta(cached, value)
            if stored is not None:
                cached.version = version
                cached.chain += 1
                return stored
        fresh = self._whole(version, value)
        self._cache[key] = fresh
        enc = fresh.enc
        return {
            "f": dict(enc) if fresh.kind == "dict" else list(enc) if fresh.kind == "list" else enc
        }

    def _whole(self, version: Any, value: Any) -> Cached:
        if type(value) is dict and all(type(k) is str for k in value) and "$t" not in value:
            keys, vals = list(value), list(value.values())
            enc = {k: self._encode(v) for k, v in zip(keys, vals, strict=True)}
            cached = Cached(version, "dict", keys, vals, enc, _mutable_keys(keys, vals))
            cached.obj = dict(value)
            return cached
        if type(value) is list:
            vals = list(value)
            enc_list = [self._encode(v) for v in vals]
            return Cached(
                version, "list", [], vals, enc_list, _mutable_keys(list(range(len(vals))), vals)
            )
        return Cached(version, "other", enc=self._encode(value), mutable={None})

    def _dict_delta(self, cached: Cached, value: dict[Any, Any]) -> Any:
        appended, changed, removed = _dict_diff(cached, value)
        if not all(type(k) is str for k in changed) or "$t" in changed:
            return None
        enc_set = {k: self._encode(v) for k, v in changed.items()}
        for k in cached.mutable:
            if k in value and k not in changed:
                again = self._encode(value[k])
                if again != cached.enc.get(k):
                    enc_set[k] = again
        if (len(enc_set) + len(removed)) * 2 > max(len(value), 1):
            return None
        for k in removed:
            cached.enc.pop(k, None)
            cached.mutable.discard(k)
            del cached.obj[k]
        cached.enc.update(enc_set)
        for k in enc_set:
            if is_immutable(value[k]):
                cached.mutable.discard(k)
            else:
                cached.mutable.add(k)
        if appended:
            cached.keys.extend(changed)
            cached.vals.extend(changed.values())
        else:
            cached.keys, cached.vals = list(value), list(value.values())
        cached.obj.update(changed)
        return {"d": cached.version, "set": enc_set, "del": removed}

    def _list_delta(self, cached: Cached, value: list[Any]) -> Any:
        n = len(cached.vals)
        if len(value) < n or not all(map(operator.is_, islice(value, n), cached.vals)):
            return None
        for i in cached.mutable:
            if self._encode(value[i]) != cached.enc[i]:
                return None
        added = value[n:]
        if len(added) * 2 > max(len(value), 1):
            return None
        enc_add = [self._encode(v) for v in added]
        base = cached.version
        cached.enc.extend(enc_add)
        cached.mutable.update(n + i for i, v in enumerate(added) if not is_immutable(v))
        cached.vals.extend(added)
        return {"a": base, "add": enc_add}
