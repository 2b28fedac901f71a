"""How new a value is next to the facts already kept: sampled text and bottom-k MinHash.

Core layer: pure, no Jupyter. :func:`sample_text` turns any value into a short canonical
text (large containers are sampled: their first, middle and last items, never walked whole),
:func:`sketch` turns that text into a bottom-k MinHash of its character shingles, and
:func:`similarity` estimates the Jaccard similarity of two sketches. Hashes are CRC-32 (not
Python's ``hash``, which changes between processes), so scores are the same in every kernel.

Cost: ``sample_text`` reads at most a few dozen items; ``sketch`` hashes at most
``TEXT_LIMIT`` shingles and is cached by text, so a run's facts are sketched once.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

__all__ = ["SKETCH_SIZE", "TEXT_LIMIT", "most_similar", "sample_text", "similarity", "sketch"]

TEXT_LIMIT = 480
"""Characters of sampled text a sketch is built from."""

SKETCH_SIZE = 48
"""Hashes kept per sketch (bottom-k)."""

_SHINGLE = 5
_ITEMS = 6


def _pick(items: list[Any]) -> list[Any]:
    """First, middle and last items of a long list (a fixed sample, not a walk)."""
    if len(items) <= _ITEMS:
        return items
    mid = len(items) // 2
    return [*items[:2], *items[mid - 1 : mid + 1], *items[-2:]]


def _text(value: Any, room: int) -> str:
    if room <= 0:
        return ""
    if isinstance(value, str):
        return value[:room]
    if isinstance(value, bool | int | float) or value is None:
        return repr(value)
    if isinstance(value, Mapping):
        keys = list(value)
        parts = [f"{k}:{_text(value[k], room // 4)}" for k in _pick(keys)]
        return ("{" + ",".join(parts) + "}")[:room]
    if isinstance(value, list | tuple):
        parts = [_text(v, room // 4) for v in _pick(list(value))]
        return ("[" + ",".join(parts) + "]")[:room]
    if isinstance(value, set | frozenset):
        return _text(sorted(map(repr, value))[:_ITEMS], room)
    head = getattr(value, "head", None)
    if callable(head) and hasattr(value, "shape"):  # a pandas frame: its first rows only
        return f"{type(value).__name__}{value.shape}:{str(head(3))[:room]}"
    return repr(value)[:room]


def sample_text(value: Any, limit: int = TEXT_LIMIT) -> str:
    """A short canonical text of ``value``: enough to tell values apart, cheap to build.

    Strings are clipped, mappings and sequences sampled (first, middle and last items),
    anything else is its clipped ``repr``.
    """
    return _text(value, limit)[:limit]


@lru_cache(maxsize=1024)
def sketch(text: str) -> tuple[int, ...]:
    """The ``SKETCH_SIZE`` smallest CRC-32 hashes of ``text``'s 5-character shingles, sorted."""
    data = text.lower().encode("utf-8", "replace")
    if len(data) < _SHINGLE:
        return (zlib.crc32(data),)
    hashes = {zlib.crc32(data[i : i + _SHINGLE]) for i in range(len(data) - _SHINGLE + 1)}
    return tuple(heapq.nsmallest(SKETCH_SIZE, hashes))


def similarity(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """Estimated Jaccard similarity (0..1) of the texts behind sketches ``a`` and ``b``."""
    if not a or not b:
        return 0.0
    union = heapq.nsmallest(SKETCH_SIZE, set(a) | set(b))
    both = set(a) & set(b)
    return sum(1 for h in union if h in both) / len(union)


def most_similar(value: Any, others: Iterable[tuple[str, Any]]) -> tuple[str | None, float]:
    """The name in ``others`` (name, value pairs) most like ``value``, and how similar."""
    mine = sketch(sample_text(value))
    best: tuple[str | None, float] = (None, 0.0)
    for name, other in others:
        score = similarity(mine, sketch(sample_text(other)))
        if score > best[1]:
            best = (name, score)
    return best
