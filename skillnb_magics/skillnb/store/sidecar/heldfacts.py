"""Fact lines checked in bulk without building their values, built when read (store layer).

Most lines of a long journal are ``fact.formalized`` events, and most of those are versions
that a later line writes over: a replay folds each key's latest version only. Building the
objects of every fact's value, then dropping most of them, is most of a load's cost (and of
its memory). :func:`held_columns` reads a chunk of lines as
:func:`~skillnb.store.sidecar.structlines.struct_columns` does, except that each fact line
(found by its bytes where this writer puts the type, confirmed by its decoded type) is
decoded into a :data:`FactLine`, whose ``data`` keeps only the fact's ``key`` and ``note``:
the names the rules of :mod:`skillnb.core.limits` judge. The rest of the line is checked as
msgspec skips a value: its JSON syntax, escapes and surrogate pairs, everything the full
decoder checks but two things, both settled here:

* the text must be valid UTF-8: a chunk that is not ASCII is decoded as UTF-8 first (one
  C-level pass), and one that is not UTF-8 is read as before (and refused as before);
* a number beyond the range of a float (``1e400``), which msgspec refuses when it builds
  it: :func:`held_builder` then builds that line's data as the line-by-line reader does
  (as ``inf``, with the standard library), which is what a load gives for such a line.

:func:`held_builder` builds a held line's data when it is first read
(:class:`~skillnb.core.runstate.eventrecords.HeldData`), from the journal's bytes, which the
column keeps: the same decoder, the same bytes, so the same objects as a full decode.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, repeat
from operator import attrgetter, call
from pathlib import Path
from sys import intern
from typing import Any

from skillnb.errors import StoreCorrupted
from skillnb.store.sidecar import structlines

__all__ = ["FACT", "Held", "fact_key", "held_builder", "held_columns"]

FACT = "fact.formalized"
_FACT_TYPE = b'"type":"fact.formalized"'
_START = b'{"v":%d,"seq":'  # the format, then the sequence number, a comma, and the type

if structlines.HAVE_MSGSPEC:
    import msgspec

    _FactNames: Any = msgspec.defstruct(
        "FactNames",
        [("key", str), ("note", str | None, None)],
        gc=False,  # the other members of the fact are checked and skipped
    )
    _FactData: Any = msgspec.defstruct("FactData", [("fact", _FactNames)], gc=False)
    FactLine: Any = structlines.line_struct("FactLine", _FactData)
    """A fact line's members, as :data:`~skillnb.store.sidecar.structlines.JournalLine`'s, with
    only the fact's key and note kept of its data."""
    _decode_fact: Callable[[bytes], Any] | None = msgspec.json.Decoder(FactLine).decode
else:  # pragma: no cover - exercised by the tests that hide msgspec
    _decode_fact = None

_NOTE = attrgetter("fact.note")

Held = tuple[list[str], list[str], list[Any], list[bool], list[str], list[Any]]
"""The types, times (text) and data of a chunk's events (a held fact's: what
:data:`fact_key` reads, not a ``dict``), whether each is held, then the keys and notes of
the held facts."""

fact_key: Callable[[Any], str] = attrgetter("fact.key")
"""The key of a held fact, read from what :func:`held_columns` holds of its data."""


def held_columns(
    chunk: bytes, lines: Sequence[bytes], mores: Sequence[int], seq: int, version: int
) -> Held | None:
    """The columns of ``lines`` (``chunk`` split), the facts among them held, or ``None``.

    ``None``: no line is a fact, the chunk is not UTF-8, or a line is not a plain event of
    ``version`` numbered ``seq``, ``seq + 1``, ... (or is refused): read the chunk with
    :func:`~skillnb.store.sidecar.structlines.struct_columns` then.
    """
    decode, decode_fact = structlines.decode_line, _decode_fact
    if decode is None or decode_fact is None or not _utf8(chunk):
        return None
    type_at = _type_at(len(_START % version), seq, len(lines))
    facts = list(map(bytes.startswith, lines, repeat(_FACT_TYPE), type_at))
    if not any(facts):
        return None
    records = map(call, map((decode, decode_fact).__getitem__, facts), lines)  # each its own
    found = structlines.checked_columns(records, mores, seq, version)
    if found is None:
        return None
    types, ats, data = found
    if set(compress(types, facts)) != {FACT}:
        return None
    held = list(compress(data, facts))
    return (
        list(map(intern, types)),
        list(ats),
        list(data),
        facts,
        list(map(fact_key, held)),
        list(map(_NOTE, held)),
    )


def _utf8(chunk: bytes) -> bool:
    """Whether ``chunk`` is UTF-8 (msgspec checks the strings it builds, not those it skips)."""
    if chunk.isascii():
        return True
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _type_at(start: int, seq: int, n: int) -> Iterable[int]:
    """Where the type of each of ``n`` lines numbered from ``seq`` starts, as this writer writes.

    ``start``: the length of what comes before the sequence number.
    """
    digits = len(str(seq))
    if digits == len(str(seq + n - 1)):
        return repeat(start + digits + 1)
    return map((start + 1).__add__, map(len, map(str, range(seq, seq + n))))


def held_builder(
    source: bytes, start: int, starts: Sequence[int], lengths: Sequence[int], path: Path
) -> Callable[[int], dict[str, Any]]:
    """How to build the data of line ``i`` of ``source``, a held fact line checked already.

    Args:
        source: the journal bytes the lines were read from (kept while data are held).
        start: the absolute offset of ``source[0]`` in the journal.
        starts: the absolute offset of each line (copied: the caller hands it on).
        lengths: the length of each line, newline excluded (kept: no one else has it).
        path: the journal (named if a line cannot be built, which checking rules out).

    """
    decode = structlines.decode_line
    starts = tuple(starts)

    def build(i: int) -> dict[str, Any]:
        at = starts[i] - start
        raw = source[at : at + lengths[i]]
        if decode is not None:
            try:
                return decode(raw).data  # type: ignore[no-any-return]  # a dict, as decoded
            except ValueError:  # a number beyond a float's range: as the careful reader reads
                pass
        try:
            data = json.loads(raw)["data"]
        except (ValueError, KeyError, TypeError) as exc:  # ruled out by the checks made
            detail = f"the data of the event at byte {starts[i]} cannot be read: {exc}"
            raise StoreCorrupted(path, detail) from None
        return data  # type: ignore[no-any-return]  # an object, as checked

    return build
