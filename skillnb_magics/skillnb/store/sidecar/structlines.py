"""Decoding plain journal lines straight into typed records, with msgspec (store layer).

When the optional ``msgspec`` is installed (the ``speed`` extra), :func:`struct_columns`
decodes each line of a chunk into a :class:`msgspec.Struct` with the fields of a journal
line, which checks in C, as it parses, what :mod:`~skillnb.store.sidecar.bulklines` checks of
each parsed object: that it has the five fields of an event (``v``, ``seq``, ``type``, ``at``,
``data``) and ``crc``, no other member but ``more``, and that each is of its type (integers,
not ``true`` or ``1.0``; text; a JSON object). Each record's fields are then taken as one
tuple, and the tuples turned into columns, and what is left is checked over the columns:
``more`` is there exactly when the line's bytes say so, ``v`` is the format read, the
sequence numbers follow one another. It is one pass over the lines instead of two (parse,
then look at each object's members and types), and no dictionary is made for the line
itself.

The values inside ``data`` are decoded as ``orjson`` and the standard library decode them:
the same numbers (correctly rounded floats), text and objects (the last of duplicated keys
wins), in their order. What msgspec refuses (``NaN``, a lone surrogate, ``1e400``) the caller
reads line by line, as it does a line ``orjson`` refuses. Integers of any size are read
exactly, as the standard library reads them (so no chunk is scanned for runs of 19 digits).

Without msgspec, :data:`decode_line` is ``None`` and the caller parses with ``orjson`` or the
standard library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from sys import intern
from typing import Any

__all__ = ["HAVE_MSGSPEC", "checked_columns", "decode_line", "struct_columns"]

try:
    import msgspec
except ImportError:  # pragma: no cover - exercised by the tests that hide msgspec
    msgspec = None  # type: ignore[assignment,unused-ignore]  # (unused: without msgspec)


if msgspec is not None:

    def line_struct(name: str, data: Any) -> Any:
        """The struct of a journal line whose ``data`` member is of type ``data``."""
        return msgspec.defstruct(
            name,
            [
                ("v", int),
                ("seq", int),
                ("type", str),
                ("at", str),  # parsed by the caller, as the careful reader parses it
                ("data", data),
                ("crc", str),  # checked over the line's bytes by the caller
                ("more", bool | msgspec.UnsetType, msgspec.UNSET),  # absent: the append ends
            ],
            forbid_unknown_fields=True,
            gc=False,  # it holds no cycles, and lives only while its chunk is read
        )

    JournalLine: Any = line_struct("JournalLine", dict[str, Any])
    """The members of a journal line, each of its type (in any order, ``more`` optional)."""
    _UNSET: object = msgspec.UNSET
    _astuple: Callable[[Any], tuple[Any, ...]] = msgspec.structs.astuple
    decode_line: Callable[[bytes], Any] | None = msgspec.json.Decoder(JournalLine).decode
    """Decode one line into a :data:`JournalLine`; ``None`` without msgspec."""
else:  # pragma: no cover - exercised by the tests that hide msgspec
    _UNSET = object()
    decode_line = None
    _astuple = tuple

HAVE_MSGSPEC = msgspec is not None
"""Whether the optional ``msgspec`` decoder is installed (``pip install skillnb[speed]``)."""

_MORE_OF = (_UNSET, True)
"""What a line's ``more`` member is, indexed by whether its bytes say it goes on."""


def struct_columns(
    lines: Sequence[bytes], mores: Sequence[int], seq: int, version: int
) -> tuple[list[str], list[str], list[dict[str, Any]]] | None:
    """The types, times (as text) and data of the events in ``lines``, or ``None``.

    Args:
        lines: journal lines without their newlines, checksums already verified.
        mores: for each line, 1 when its bytes end with ``,"more":true`` before the checksum.
        seq: the sequence number the first line must have.
        version: the only format version read here.

    Returns:
        The columns, or ``None`` when a line is not a plain event of ``version`` numbered
        ``seq``, ``seq + 1``, ... (or is JSON msgspec refuses, or msgspec is not installed):
        read line by line then.

    """
    decode = decode_line
    if decode is None or not lines:
        return None
    found = checked_columns(map(decode, lines), mores, seq, version)
    if found is None:
        return None
    types, ats, data = found
    return list(map(intern, types)), list(ats), list(data)  # one object per type


def checked_columns(
    records: Iterable[Any], mores: Sequence[int], seq: int, version: int
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Any, ...]] | None:
    """The types, times and data of ``records`` (lines being decoded), or ``None``.

    ``None`` when a line does not decode, or when the records are not of ``version``,
    numbered ``seq``, ``seq + 1``, ..., with ``more`` as ``mores`` says.
    """
    try:  # each record's fields as one tuple, then each field's column (C-level passes)
        vs, seqs, types, ats, data, _, more = zip(*map(_astuple, records), strict=True)
    except ValueError:  # msgspec's DecodeError and ValidationError are ValueErrors
        return None
    if (
        more != tuple(map(_MORE_OF.__getitem__, mores))
        or set(vs) != {version}
        or seqs != tuple(range(seq, seq + len(seqs)))
    ):
        return None
    return types, ats, data
