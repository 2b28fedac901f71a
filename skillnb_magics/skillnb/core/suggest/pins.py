"""Pins: text the user asks to remember, and what an extractor reads out of it (core, pure).

``%formalize --note "remember these three risks: …"`` and ``run.pin(text)`` keep the text as
a note fact under :func:`pin_key` (or a key the user gives). An optional *extractor* (any
callable, for example a language-model call the user supplies) may turn the text into
structured values; :func:`extract` offers those as :class:`~skillnb.core.suggest.rank.Suggestion`
s with their values, to be accepted one by one. They never become facts on their own.

An extractor returns either a mapping ``{name: value}`` or a sequence of mappings with
``name``, ``value`` and optionally ``kind`` and ``reason``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from skillnb.core.suggest.rank import Suggestion, rank

__all__ = ["Extractor", "extract", "pin_key"]

Extractor = Callable[[str], Any]
"""Turns pinned text into ``{name: value}`` or ``[{"name", "value", "kind"?, "reason"?}]``."""

_KINDS = frozenset({"decision", "data", "constraint", "summary", "note"})
_WORDS = 6
_SCORE = 0.9


def pin_key(text: str) -> str:
    """A fact key for a pin: ``pin_`` and its first words, up to a colon near the start.

    ``"remember these three risks: …"`` gives ``pin_remember_these_three_risks``.
    """
    head, colon, _rest = text.partition(":")
    words = re.findall(r"\w+", (head if colon and len(head) <= 80 else text).lower())[:_WORDS]
    return "pin_" + "_".join(words)[:48] if words else "pin"


def _entries(result: Any) -> list[tuple[str, Any, str | None, str | None]]:
    if isinstance(result, Mapping):
        return [(str(k), v, None, None) for k, v in result.items()]
    entries = []
    for entry in result or ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise ValueError(f"an extractor entry needs a 'name' and a 'value', got {entry!r}")
        kind, reason = entry.get("kind"), entry.get("reason")
        entries.append((entry["name"], entry.get("value"), kind, reason))
    return entries


def extract(
    text: str, extractor: Extractor, facts: Mapping[str, Any] | None = None
) -> tuple[list[Suggestion], dict[str, Any]]:
    """Run ``extractor`` on ``text``; return suggestions (best first) and their values.

    Values already kept under the same name are not offered again.

    Raises:
        ValueError: the extractor returned something that is not a mapping or a list of
            ``{"name", "value"}`` mappings, or an unknown kind.

    """
    values: dict[str, Any] = {}
    found: list[Suggestion] = []
    for name, value, kind, reason in _entries(extractor(text)):
        if kind is not None and kind not in _KINDS:
            raise ValueError(f"extracted {name!r} has unknown kind {kind!r}")
        judged = rank("", {name: value}, facts)[0]
        if judged.reason == "already kept":
            continue
        found.append(
            Suggestion(name, kind or judged.kind, _SCORE, str(reason or "extracted from a pin"))
        )
        values[name] = value
    found.sort(key=lambda s: s.name)
    return found, values
