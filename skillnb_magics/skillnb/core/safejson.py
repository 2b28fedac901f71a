"""Depth-limited JSON parsing for text we did not write ourselves (core layer: pure Python).

``json.loads`` on ``[[[[…`` a hundred thousand levels deep raises :class:`RecursionError` (or
exhausts the stack in code that walks the result). :func:`load_json` measures the nesting first,
without building anything, and refuses text nested deeper than ``max_depth`` with
:class:`JSONTooDeep`, a :class:`ValueError`, so callers that already turn ``ValueError`` into a
clear error (``StoreCorrupted``, ``CodecError``, a 400 answer) need nothing more.

The measurement strips string literals with one regular expression, maps opening brackets to
+1 and closing ones to -1 and takes the highest running sum, all in C loops, linear in the
size of the text; text with fewer brackets than ``max_depth`` skips it altogether.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "JSONTooDeep", "json_depth_exceeds", "load_json"]

MAX_DEPTH = 128
"""Default nesting limit: far beyond real data, far below the interpreter's recursion limit."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # as signed bytes: +1, +1, -1, -1


class JSONTooDeep(ValueError):
    """JSON text is nested deeper than the limit (a ``ValueError``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"JSON nested more than {limit} levels deep")


def json_depth_exceeds(data: bytes | str, limit: int = MAX_DEPTH) -> bool:
    """Tell whether the arrays and objects in JSON text ``data`` nest deeper than ``limit``.

    Text that is not well-formed is measured as far as it goes (an unterminated string counts
    the brackets after it), so the answer errs towards "too deep", never towards a parser's
    recursion limit.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    steps = _STRING.sub(b"", raw).translate(_STEP, _NOT_BRACKET)
    return max(accumulate(memoryview(steps).cast("b")), default=0) > limit


def load_json(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON text like :func:`json.loads`, refusing nesting deeper than ``max_depth``.

    ``NaN``, ``Infinity`` and ``-Infinity`` are refused too: they are not JSON.

    Raises:
        JSONTooDeep: the text nests deeper than ``max_depth`` (nothing was parsed).
        ValueError: the text is not JSON (``json.JSONDecodeError``), or bytes are not UTF-8
            (``UnicodeDecodeError``).

    """
    if json_depth_exceeds(data, max_depth):
        raise JSONTooDeep(max_depth)
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    return json.loads(text, parse_constant=_reject_constant)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
